/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: an array end to end, through the public API on a memory
 * store.  The input is a flags byte, a metadata document (zarr.json, or
 * .zarray with the v2 flag) up to the first NUL byte, then the stored object
 * of chunk (or shard) 0.  When the array opens, chunk 0 is read; a chunk
 * that reads is written back and must read back the same; a region around
 * chunk 0 is read; small arrays are checksummed; accessors and descriptions
 * run.  Every failure must carry a status and a message.
 *
 * Decoded chunks and regions are the caller's buffers: this harness, as a
 * careful caller would, skips arrays whose chunks exceed 16 MiB (sluice's own
 * cap is SL_CHUNK_MAX_BYTES), so no buffer nears the 256 MiB limit.
 */
#include <sluice/array.h>
#include <sluice/array_io.h>
#include <sluice/sha256.h>

#include "fuzz.h"
#include "zarr_internal.h"

#define F_V2 0x01    /* the document is a .zarray */
#define F_WRITE 0x02 /* write chunk 0 back */

#define HARNESS_MAX_BYTES ((size_t)16 << 20)

/* Read a region of up to two chunks per dimension from the origin. */
static void
read_region(const sl_array *a, sl_codec_ctx *ctx)
{
    uint32_t rank = sl_array_rank(a);
    const uint64_t *shape = sl_array_shape(a), *chunk = sl_array_chunk_shape(a);
    struct sl_region r = {.rank = rank};
    uint64_t n = 1;
    for (uint32_t d = 0; d < rank; d++) {
        r.start[d] = shape[d] > 1 ? 1 : 0;
        r.stop[d] = chunk[d] < shape[d] / 2 ? r.start[d] + 2 * chunk[d] - 1 : shape[d];
        if (!sl_u64_mul_fits(n, r.stop[d] - r.start[d], &n))
            return;
    }
    size_t es = sl_dtype_size(sl_array_dtype(a));
    if (n > HARNESS_MAX_BYTES / es)
        return;
    void *buf = malloc(n * es > 0 ? n * es : 1);
    FUZZ_CHECK(buf != NULL, "out of memory");
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl_array_read_region(a, &r, buf, n * es, ctx, NULL, &err);
    fuzz_check_error(st, &err, "sl_array_read_region");
    free(buf);
}

/* Chunk 0's elements inside the array are equal in `x` and `y` (writes
 * store the padding of edge chunks as the fill value, whatever it was). */
static bool
same_inside(const sl_array *a, const uint8_t *x, const uint8_t *y)
{
    uint32_t rank = sl_array_rank(a);
    const uint64_t *shape = sl_array_shape(a), *chunk = sl_array_chunk_shape(a);
    size_t es = sl_dtype_size(sl_array_dtype(a)), n = sl_array_chunk_bytes(a) / es;
    for (size_t i = 0; i < n; i++) {
        bool inside = true;
        size_t rest = i;
        for (uint32_t d = rank; d-- > 0 && inside;) {
            inside = rest % chunk[d] < shape[d];
            rest /= chunk[d];
        }
        if (inside && memcmp(x + i * es, y + i * es, es) != 0)
            return false;
    }
    return true;
}

/* Chunk 0 that reads is written back and reads back the same. */
static void
write_back(sl_array *a, const uint64_t *zero, const uint8_t *chunk, size_t n, sl_codec_ctx *ctx)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl_array_write_chunk(a, zero, chunk, n, ctx, &err);
    fuzz_check_error(st, &err, "sl_array_write_chunk");
    if (st != SL_OK)
        return; /* a corrupt neighbour in the shard may refuse the rewrite */
    void *back = malloc(n);
    FUZZ_CHECK(back != NULL, "out of memory");
    err = SL_ERROR_INIT;
    st = sl_array_read_chunk(a, zero, back, n, ctx, NULL, &err);
    FUZZ_CHECK(st == SL_OK, "a chunk just written does not read: %s", err.text);
    FUZZ_CHECK(same_inside(a, chunk, back), "a chunk read back differs from what was written");
    free(back);
}

/* A shard rewrite visits every inner chunk: keep writes to small shards. */
static bool
few_inner_chunks(const sl_array *a)
{
    const uint64_t *shard = sl_array_shard_shape(a), *chunk = sl_array_chunk_shape(a);
    uint64_t n = 1;
    for (uint32_t d = 0; shard != NULL && d < sl_array_rank(a) && n <= 4096; d++)
        n *= shard[d] / chunk[d] > 4096 ? 4097 : shard[d] / chunk[d];
    return n <= 4096;
}

static void
exercise(sl_array *a, uint8_t flags, sl_codec_ctx *ctx)
{
    char text[2048];
    sl_array_codecs_describe(a, text, sizeof(text));
    sl_array_fill_describe(a, text, sizeof(text));
    struct sl_array_stored stored;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl_array_stored(a, &stored, &err);
    fuzz_check_error(st, &err, "sl_array_stored");
    size_t n = sl_array_chunk_bytes(a);
    if (n > HARNESS_MAX_BYTES)
        return;
    const uint64_t zero[SL_MAX_RANK] = {0};
    void *chunk = malloc(n > 0 ? n : 1);
    FUZZ_CHECK(chunk != NULL, "out of memory");
    err = SL_ERROR_INIT;
    bool missing = false;
    st = sl_array_read_chunk(a, zero, chunk, n, ctx, &missing, &err);
    fuzz_check_error(st, &err, "sl_array_read_chunk");
    if (st == SL_OK && (flags & F_WRITE) && n > 0 && few_inner_chunks(a))
        write_back(a, zero, chunk, n, ctx);
    free(chunk);
    read_region(a, ctx);
    struct sl_grid g;
    FUZZ_CHECK(sl_array_shard_grid(a, &g, NULL) == SL_OK, "grid copy failed");
    uint64_t total;
    bool small =
        sl_u64_mul_fits(g.n_total, n, &total) && total <= HARNESS_MAX_BYTES && g.n_total <= 64;
    sl_grid_fini(&g);
    if (small) {
        uint8_t digest[SL_SHA256_BYTES];
        err = SL_ERROR_INIT;
        st = sl_array_checksum(a, digest, NULL, &err);
        fuzz_check_error(st, &err, "sl_array_checksum");
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    uint8_t flags = fuzz_u8(&in);
    const uint8_t *nul = memchr(in.p, '\0', in.n);
    size_t n_doc = nul != NULL ? (size_t)(nul - in.p) : in.n;
    sl_store *s = sl_store_create_memory(NULL, NULL);
    FUZZ_CHECK(s != NULL, "no memory store");
    const char *doc_key = flags & F_V2 ? "a/.zarray" : "a/zarr.json";
    FUZZ_CHECK(sl_store_set(s, doc_key, in.p, n_doc, NULL) == SL_OK, "store set failed");
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(s, "a", NULL, &err);
    fuzz_check_error(a != NULL ? SL_OK : err.code, &err, "sl_array_open");
    FUZZ_CHECK(a != NULL || err.code != SL_OK, "open failed without a status");
    if (a != NULL) {
        if (nul != NULL) {
            const uint64_t zero[SL_MAX_RANK] = {0};
            char key[SL_STORE_KEY_MAX + 1];
            FUZZ_CHECK(sl_array_chunk_key(a, zero, key, sizeof(key)) < sizeof(key), "key");
            FUZZ_CHECK(sl_store_set(s, key, nul + 1, in.n - n_doc - 1, NULL) == SL_OK,
                       "store set of %s failed", key);
        }
        sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
        FUZZ_CHECK(ctx != NULL, "out of memory");
        exercise(a, flags, ctx);
        sl_codec_ctx_destroy(ctx);
        sl_array_unref(a);
    }
    sl_store_unref(s);
    return 0;
}
