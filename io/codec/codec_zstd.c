/* SPDX-License-Identifier: MIT */
/*
 * The zstd codec (zarr-extensions "zstd", v2 "zstd").  Every frame written
 * records its content size (older readers, numcodecs among them, reject
 * frames without it).  Decoding checks the size a frame declares against the
 * size the chain must produce before writing anything; a frame that declares
 * none is decoded into the bounded output buffer and fails if it overflows.
 */
#include <inttypes.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "codec_internal.h"

static sl_status
zstd_fail(struct sl_error *err, sl_status code, const char *what, size_t rc)
{
    return sl_error_set(err, code, NULL, "zstd %s: %s", what, ZSTD_getErrorName(rc));
}

sl_status
sl__zstd_encode(const struct sl__codec *c, sl_codec_ctx *ctx, const uint8_t *in, size_t n,
                struct sl_buf *out, struct sl_error *err)
{
    if (ctx->zstd_c == NULL && (ctx->zstd_c = ZSTD_createCCtx()) == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory creating a zstd context");
    ZSTD_CCtx *cc = ctx->zstd_c;
    size_t bound = ZSTD_compressBound(n);
    if (ZSTD_isError(bound))
        return zstd_fail(err, SL_EOVERFLOW, "bound", bound);
    SL_TRY(sl_buf_reserve_exact(out, bound, err)); /* the bound, not its doubling */
    size_t rc = ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
    if (!ZSTD_isError(rc))
        rc = ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, c->u.zstd.level);
    if (!ZSTD_isError(rc))
        rc = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, c->u.zstd.checksum ? 1 : 0);
    if (!ZSTD_isError(rc))
        rc = ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
    if (ZSTD_isError(rc))
        return zstd_fail(err, SL_EINVAL, "parameters", rc);
    rc = ZSTD_compress2(cc, out->data, out->capacity, in, n);
    if (ZSTD_isError(rc))
        return zstd_fail(err, SL_EIO, "compression", rc);
    out->size = rc;
    return SL_OK;
}

sl_status
sl__zstd_decode(sl_codec_ctx *ctx, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
                bool exact, size_t *produced, struct sl_error *err)
{
    unsigned long long declared = ZSTD_getFrameContentSize(in, n);
    if (declared == ZSTD_CONTENTSIZE_ERROR)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "not a zstd frame (%zu bytes, magic or header invalid)", n);
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN) {
        if (exact && declared != cap)
            return sl_error_set(err, SL_ECORRUPT, NULL,
                                "zstd frame declares %llu bytes, the chunk decodes to %zu",
                                declared, cap);
        if (declared > cap)
            return sl_error_set(err, SL_ECORRUPT, NULL,
                                "zstd frame declares %llu bytes, more than the %zu possible",
                                declared, cap);
    }
    if (ctx->zstd_d == NULL && (ctx->zstd_d = ZSTD_createDCtx()) == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory creating a zstd context");
    /* The output buffer bounds decoding whether or not a size was declared. */
    size_t rc = ZSTD_decompressDCtx(ctx->zstd_d, out, cap, in, n);
    if (ZSTD_isError(rc)) {
        if (ZSTD_getErrorCode(rc) == ZSTD_error_dstSize_tooSmall)
            return sl_error_set(err, SL_ECORRUPT, NULL,
                                "zstd data decodes to more than the %zu bytes expected", cap);
        return zstd_fail(err, SL_ECORRUPT, "data corrupt", rc);
    }
    if (exact && rc != cap)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "zstd data decodes to %zu bytes, the chunk needs %zu", rc, cap);
    *produced = rc;
    return SL_OK;
}
