/* SPDX-License-Identifier: MIT */
/*
 * Codec contexts: one thread's zstd and zlib state and scratch buffers.
 * Compression state is made on first use and then reused for every chunk,
 * as zstd.h advises; buffers grow to the largest chunk seen and stay.
 */
#include <string.h>
#include <zstd.h>

#include "codec_internal.h"

sl_codec_ctx *
sl_codec_ctx_create(const struct sl_allocator *alloc, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_allocator a = alloc != NULL ? *alloc : sl_allocator_default();
    sl_codec_ctx *ctx = sl_alloc(&a, sizeof(*ctx), 0);
    if (ctx == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory creating a codec context");
        return NULL;
    }
    memset(ctx, 0, sizeof(*ctx));
    ctx->alloc = a;
    for (int i = 0; i < SL__SCR_COUNT_; i++)
        ctx->scratch[i].alloc = a;
    return ctx;
}

void
sl_codec_ctx_destroy(sl_codec_ctx *ctx)
{
    if (ctx == NULL)
        return;
    ZSTD_freeCCtx(ctx->zstd_c);
    ZSTD_freeDCtx(ctx->zstd_d);
    sl__codec_ctx_free_zlib(ctx);
    for (int i = 0; i < SL__SCR_COUNT_; i++)
        sl_buf_fini(&ctx->scratch[i]);
    struct sl_allocator a = ctx->alloc;
    sl_free(&a, ctx, sizeof(*ctx));
}

sl_status
sl__ctx_scratch(sl_codec_ctx *ctx, sl__scratch which, size_t n, struct sl_buf **out,
                struct sl_error *err)
{
    struct sl_buf *b = &ctx->scratch[which];
    b->size = 0;
    /* At least one byte, so even an empty buffer has an address to offset. */
    SL_TRY(sl_buf_reserve(b, n > 0 ? n : 1, err));
    *out = b;
    return SL_OK;
}

struct sl_buf *
sl__ctx_scratch_holding(sl_codec_ctx *ctx, const uint8_t *data)
{
    static const sl__scratch chain[] = {SL__SCR_STAGE, SL__SCR_A, SL__SCR_B};
    for (size_t i = 0; i < SL_ARRAY_LEN(chain); i++)
        if (ctx->scratch[chain[i]].data == data)
            return &ctx->scratch[chain[i]];
    return NULL;
}
