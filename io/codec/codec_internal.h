/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the codec sub-library, shared by its files and
 * open to its tests: the codec context's layout, CRC-32C, and the
 * bytes-to-bytes steps of each compressor.
 */
#ifndef SL_CODEC_INTERNAL_H
#define SL_CODEC_INTERNAL_H

#include "io_codec.h"

/* CRC-32C (Castagnoli) of `n` bytes continuing from `crc` (0 to start), with
 * the usual pre- and post-inversion: crc32c("123456789") == 0xe3069283.
 * Uses the SSE4.2 instruction when the processor has it. */
uint32_t sl__crc32c(uint32_t crc, const void *data, size_t n);

/* The same, always in portable C (tests compare the two). */
uint32_t sl__crc32c_portable(uint32_t crc, const void *data, size_t n);

/* Opaque in codec.h: one thread's codec state and scratch. */
struct sl_codec_ctx {
    struct sl_allocator alloc;             /* for the context and its buffers */
    void *zstd_c;                          /* ZSTD_CCtx, made on first use */
    void *zstd_d;                          /* ZSTD_DCtx, made on first use */
    void *deflate_gzip;                    /* z_stream for gzip encoding, lazily */
    void *deflate_zlib;                    /* z_stream for zlib encoding, lazily */
    void *inflate;                         /* z_stream for both decodings, lazily */
    struct sl_buf scratch[SL__SCR_COUNT_]; /* reused buffers, by sl__scratch */
};

/* True when this build has the codec (gzip and zlib need zlib, blosc needs
 * libblosc). */
bool sl__codec_built(sl__codec_id id);

/* Permute the dimensions of an array: dst has shape[k] = src_shape[perm[k]]. */
void sl__transpose(void *dst, const void *src, uint32_t rank, const uint64_t *src_shape,
                   const uint32_t *perm, size_t elem_bytes);

/* One bytes-to-bytes codec step, encode and decode (codec_*.c). */
sl_status sl__zstd_encode(const struct sl__codec *c, sl_codec_ctx *ctx, const uint8_t *in, size_t n,
                          struct sl_buf *out, struct sl_error *err);
sl_status sl__zstd_decode(sl_codec_ctx *ctx, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
                          bool exact, size_t *produced, struct sl_error *err);
sl_status sl__gzip_encode(const struct sl__codec *c, sl_codec_ctx *ctx, const uint8_t *in, size_t n,
                          struct sl_buf *out, struct sl_error *err);
sl_status sl__gzip_decode(sl_codec_ctx *ctx, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
                          bool exact, size_t *produced, struct sl_error *err);
sl_status sl__blosc_encode(const struct sl__codec *c, const uint8_t *in, size_t n,
                           struct sl_buf *out, struct sl_error *err);
sl_status sl__blosc_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap, bool exact,
                           size_t *produced, struct sl_error *err);
size_t sl__gzip_bound(size_t n);
size_t sl__blosc_bound(size_t n);
bool sl__blosc_cname_known(const char *cname);
void sl__codec_ctx_free_zlib(sl_codec_ctx *ctx);

#endif /* SL_CODEC_INTERNAL_H */
