/* SPDX-License-Identifier: MIT */
/*
 * The gzip codec (v3 "gzip", v2 "gzip": RFC 1952 streams) and the v2 "zlib"
 * compressor (RFC 1950 streams), through zlib when the build has it.
 * Decoding accepts either wrapper, inflates into the bounded output buffer,
 * and requires the stream to end exactly at the end of the input.
 */
#include "codec_internal.h"

#ifdef SL_HAVE_ZLIB
#include <limits.h>
#include <string.h>
#include <zlib.h>

size_t
sl__gzip_bound(size_t n)
{
    /* compressBound plus the gzip header and trailer, with room for the
     * optional header fields other writers add. */
    size_t b = n + (n >> 12) + (n >> 14) + (n >> 25) + 13;
    return b < n ? SIZE_MAX : b + 18 + 256;
}

static z_stream *
zlib_stream_new(sl_codec_ctx *ctx)
{
    z_stream *z = sl_alloc(&ctx->alloc, sizeof(*z), 0);
    if (z != NULL)
        memset(z, 0, sizeof(*z));
    return z;
}

void
sl__codec_ctx_free_zlib(sl_codec_ctx *ctx)
{
    if (ctx->deflate_gzip != NULL)
        deflateEnd(ctx->deflate_gzip);
    if (ctx->deflate_zlib != NULL)
        deflateEnd(ctx->deflate_zlib);
    if (ctx->inflate != NULL)
        inflateEnd(ctx->inflate);
    sl_free(&ctx->alloc, ctx->deflate_gzip, sizeof(z_stream));
    sl_free(&ctx->alloc, ctx->deflate_zlib, sizeof(z_stream));
    sl_free(&ctx->alloc, ctx->inflate, sizeof(z_stream));
    ctx->deflate_gzip = ctx->deflate_zlib = ctx->inflate = NULL;
}

/* The deflate stream for `gzip` (else zlib) wrapping, made on first use. */
static sl_status
zlib_deflater(sl_codec_ctx *ctx, bool gzip, int level, z_stream **out, struct sl_error *err)
{
    void **slot = gzip ? &ctx->deflate_gzip : &ctx->deflate_zlib;
    z_stream *z = *slot;
    if (z == NULL) {
        z = zlib_stream_new(ctx);
        if (z == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "out of memory creating a zlib stream");
        if (deflateInit2(z, level, Z_DEFLATED, gzip ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY) !=
            Z_OK) {
            sl_free(&ctx->alloc, z, sizeof(*z));
            return sl_error_set(err, SL_ENOMEM, NULL, "zlib deflateInit2 failed");
        }
        *slot = z;
    } else if (deflateReset(z) != Z_OK || deflateParams(z, level, Z_DEFAULT_STRATEGY) != Z_OK) {
        return sl_error_set(err, SL_EIO, NULL, "zlib cannot reset its stream");
    }
    *out = z;
    return SL_OK;
}

sl_status
sl__gzip_encode(const struct sl__codec *c, sl_codec_ctx *ctx, const uint8_t *in, size_t n,
                struct sl_buf *out, struct sl_error *err)
{
    if (n > UINT_MAX)
        return sl_error_set(err, SL_EOVERFLOW, NULL, "gzip takes at most 4 GiB, not %zu", n);
    z_stream *z = NULL;
    SL_TRY(zlib_deflater(ctx, c->id == SL__CODEC_GZIP, c->u.gzip.level, &z, err));
    size_t bound = sl__gzip_bound(n);
    SL_TRY(sl_buf_reserve(out, bound, err));
    z->next_in = (Bytef *)(uintptr_t)in;
    z->avail_in = (uInt)n;
    z->next_out = out->data;
    z->avail_out = bound > UINT_MAX ? UINT_MAX : (uInt)bound;
    int rc = deflate(z, Z_FINISH);
    if (rc != Z_STREAM_END)
        return sl_error_set(err, SL_EIO, NULL, "zlib deflate failed (%d)", rc);
    out->size = (size_t)z->total_out;
    return SL_OK;
}

sl_status
sl__gzip_decode(sl_codec_ctx *ctx, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
                bool exact, size_t *produced, struct sl_error *err)
{
    if (n > UINT_MAX || cap > UINT_MAX)
        return sl_error_set(err, SL_EOVERFLOW, NULL, "gzip takes at most 4 GiB");
    z_stream *z = ctx->inflate;
    if (z == NULL) {
        z = zlib_stream_new(ctx);
        if (z == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "out of memory creating a zlib stream");
        /* 15 + 32: detect a gzip or a zlib header. */
        if (inflateInit2(z, 15 + 32) != Z_OK) {
            sl_free(&ctx->alloc, z, sizeof(*z));
            return sl_error_set(err, SL_ENOMEM, NULL, "zlib inflateInit2 failed");
        }
        ctx->inflate = z;
    } else if (inflateReset(z) != Z_OK) {
        return sl_error_set(err, SL_EIO, NULL, "zlib cannot reset its stream");
    }
    z->next_in = (Bytef *)(uintptr_t)in;
    z->avail_in = (uInt)n;
    z->next_out = out;
    z->avail_out = (uInt)cap;
    int rc = inflate(z, Z_FINISH);
    if (rc == Z_BUF_ERROR && z->avail_out == 0)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "gzip data decodes to more than the %zu bytes expected", cap);
    if (rc != Z_STREAM_END)
        return sl_error_set(err, SL_ECORRUPT, NULL, "gzip data corrupt or truncated: %s",
                            z->msg != NULL ? z->msg : "stream ended early");
    if (z->avail_in != 0)
        return sl_error_set(err, SL_ECORRUPT, NULL, "%u bytes of garbage after the gzip stream",
                            z->avail_in);
    size_t got = (size_t)z->total_out;
    if (exact && got != cap)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "gzip data decodes to %zu bytes, the chunk needs %zu", got, cap);
    *produced = got;
    return SL_OK;
}

#else /* !SL_HAVE_ZLIB */

size_t
sl__gzip_bound(size_t n)
{
    return n;
}

void
sl__codec_ctx_free_zlib(sl_codec_ctx *ctx)
{
    (void)ctx;
}

sl_status
sl__gzip_encode(const struct sl__codec *c, sl_codec_ctx *ctx, const uint8_t *in, size_t n,
                struct sl_buf *out, struct sl_error *err)
{
    (void)c, (void)ctx, (void)in, (void)n, (void)out;
    return sl_error_set(err, SL_EUNSUPPORTED, NULL, "this build has no zlib (gzip codec)");
}

sl_status
sl__gzip_decode(sl_codec_ctx *ctx, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
                bool exact, size_t *produced, struct sl_error *err)
{
    (void)ctx, (void)in, (void)n, (void)out, (void)cap, (void)exact, (void)produced;
    return sl_error_set(err, SL_EUNSUPPORTED, NULL, "this build has no zlib (gzip codec)");
}

#endif
