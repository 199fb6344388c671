/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: chunk decoding through the codec chain (transposes, bytes,
 * crc32c, zstd, gzip, zlib, blosc, in any order the chain check allows).
 *
 * The input is a small header choosing the chunk layout and the chain, then
 * the payload:
 *
 *   dtype, rank (0..3), one byte per dimension (extent 1..24), flags,
 *   permutation, number of bytes-to-bytes codecs (0..3), two bytes per
 *   codec (which, parameter), blosc typesize; payload.
 *
 * In decode mode the payload is the stored chunk; a chunk that decodes must
 * encode and decode again to the same bytes.  In round-trip mode the
 * payload, repeated to the chunk's size, is the chunk: it must encode and
 * decode back unchanged.  Chunks stay under 256 KiB, so every buffer the
 * chain allocates (its size is the chunk's bound, never a size the input
 * declares) stays far below the 256 MiB limit.
 */
#include "fuzz.h"
#include "fuzz_layouts.h"
#include "zarr_internal.h"

/* Encode `chunk` and decode it again: the same bytes must come back. */
static void
check_round_trip(const struct sl__chain *ch, const struct sl__chunk_layout *lay,
                 const uint8_t *chunk, sl_codec_ctx *ctx)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl__view v;
    sl_status st = sl__chain_encode(ch, lay, chunk, ctx, &v, &err);
    fuzz_check_error(st, &err, "sl__chain_encode");
    FUZZ_CHECK(st == SL_OK, "a valid chunk does not encode: %s", err.text);
    size_t bound = sl__chain_encoded_bound(ch, lay->n_bytes);
    FUZZ_CHECK(bound == 0 || v.size <= bound, "encoded %zu bytes, bound %zu", v.size, bound);
    /* The encoding lives in the context's scratch: copy it out first. */
    uint8_t *enc = malloc(v.size > 0 ? v.size : 1);
    uint8_t *back = malloc(lay->n_bytes > 0 ? lay->n_bytes : 1);
    FUZZ_CHECK(enc != NULL && back != NULL, "out of memory");
    memcpy(enc, v.data, v.size);
    err = SL_ERROR_INIT;
    st = sl__chain_decode(ch, lay, enc, v.size, back, ctx, &err);
    FUZZ_CHECK(st == SL_OK, "an encoded chunk does not decode: %s", err.text);
    FUZZ_CHECK(memcmp(back, chunk, lay->n_bytes) == 0, "decoding changed the chunk");
    free(enc);
    free(back);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    struct sl__chunk_layout lay;
    struct sl__chain ch;
    uint8_t flags;
    if (!fuzz_chunk_header(&in, &lay, &ch, &flags))
        return 0;
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    uint8_t *chunk = malloc(lay.n_bytes > 0 ? lay.n_bytes : 1);
    FUZZ_CHECK(ctx != NULL && chunk != NULL, "out of memory");
    if (flags & CHUNK_F_ROUNDTRIP) {
        for (size_t i = 0; i < lay.n_bytes; i++)
            chunk[i] = in.n > 0 ? in.p[i % in.n] : (uint8_t)i;
        check_round_trip(&ch, &lay, chunk, ctx);
    } else {
        struct sl_error err = SL_ERROR_INIT;
        sl_status st = sl__chain_decode(&ch, &lay, in.p, in.n, chunk, ctx, &err);
        fuzz_check_error(st, &err, "sl__chain_decode");
        if (st == SL_OK)
            check_round_trip(&ch, &lay, chunk, ctx);
    }
    free(chunk);
    sl_codec_ctx_destroy(ctx);
    return 0;
}
