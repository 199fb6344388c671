/* SPDX-License-Identifier: MIT */
/*
 * The blosc codec (v3 and v2 "blosc") through libblosc's context functions,
 * which are thread-safe and need no global initialization.  Decoding
 * validates the blosc header (sizes against the input and the expected
 * output) before decompressing into the bounded output buffer.
 */
#include "codec_internal.h"

#ifdef SL_HAVE_BLOSC
#include <blosc.h>
#include <string.h>

size_t
sl__blosc_bound(size_t n)
{
    return n > SIZE_MAX - BLOSC_MAX_OVERHEAD ? SIZE_MAX : n + BLOSC_MAX_OVERHEAD;
}

bool
sl__blosc_cname_known(const char *cname)
{
    return blosc_compname_to_compcode(cname) >= 0;
}

sl_status
sl__blosc_encode(const struct sl__codec *c, const uint8_t *in, size_t n, struct sl_buf *out,
                 struct sl_error *err)
{
    if (n > BLOSC_MAX_BUFFERSIZE)
        return sl_error_set(err, SL_EOVERFLOW, NULL, "blosc takes at most %d bytes, not %zu",
                            BLOSC_MAX_BUFFERSIZE, n);
    size_t cap = sl__blosc_bound(n);
    SL_TRY(sl_buf_reserve(out, cap, err));
    int rc = blosc_compress_ctx(c->u.blosc.clevel, c->u.blosc.shuffle, c->u.blosc.typesize, n, in,
                                out->data, cap, c->u.blosc.cname, c->u.blosc.blocksize, 1);
    if (rc <= 0)
        return sl_error_set(err, SL_EIO, NULL, "blosc compression with %s failed (%d)",
                            c->u.blosc.cname, rc);
    out->size = (size_t)rc;
    return SL_OK;
}

sl_status
sl__blosc_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap, bool exact,
                 size_t *produced, struct sl_error *err)
{
    size_t nbytes = 0, cbytes = 0, blocksize = 0;
    if (n < BLOSC_MIN_HEADER_LENGTH || blosc_cbuffer_validate(in, n, &nbytes) != 0)
        return sl_error_set(err, SL_ECORRUPT, NULL, "not a valid blosc buffer (%zu bytes)", n);
    blosc_cbuffer_sizes(in, &nbytes, &cbytes, &blocksize);
    if (cbytes != n)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "blosc header says %zu compressed bytes, the chunk has %zu", cbytes, n);
    if ((exact && nbytes != cap) || nbytes > cap)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "blosc header says %zu bytes, the chunk decodes to %s%zu", nbytes,
                            exact ? "" : "at most ", cap);
    if (nbytes == 0) {
        *produced = 0;
        return SL_OK;
    }
    int rc = blosc_decompress_ctx(in, out, cap, 1);
    if (rc <= 0 || (size_t)rc != nbytes)
        return sl_error_set(err, SL_ECORRUPT, NULL, "blosc data corrupt (%d)", rc);
    *produced = nbytes;
    return SL_OK;
}

#else /* !SL_HAVE_BLOSC */

size_t
sl__blosc_bound(size_t n)
{
    return n;
}

bool
sl__blosc_cname_known(const char *cname)
{
    (void)cname;
    return false;
}

sl_status
sl__blosc_encode(const struct sl__codec *c, const uint8_t *in, size_t n, struct sl_buf *out,
                 struct sl_error *err)
{
    (void)c, (void)in, (void)n, (void)out;
    return sl_error_set(err, SL_EUNSUPPORTED, NULL, "this build has no libblosc (blosc codec)");
}

sl_status
sl__blosc_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap, bool exact,
                 size_t *produced, struct sl_error *err)
{
    (void)in, (void)n, (void)out, (void)cap, (void)exact, (void)produced;
    return sl_error_set(err, SL_EUNSUPPORTED, NULL, "this build has no libblosc (blosc codec)");
}

#endif
