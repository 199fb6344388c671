/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: shard indexes (sharding_indexed).  The input is a header
 * choosing the shard geometry and index codecs, then a shard:
 *
 *   rank (1..3), per dimension inner chunks per shard (1..6) and inner
 *   extent (1..3), flags; the rest.
 *
 * Parse mode: the rest is a stored shard.  Locating and decoding its index
 * must refuse a shard smaller than its index, a bad crc32c and entries past
 * the end; an index that decodes has every entry empty or inside the shard,
 * reads back the same through a store reader, and the coalesced reads hand
 * each non-empty inner chunk its exact bytes.  Build mode: the rest is a
 * list of inner chunks (index, length modulo the largest encoding of an
 * inner chunk + 1, bytes) assembled with the shard builder; the shard it
 * makes must decode to the entries it reported.
 */
#include "fuzz.h"
#include "fuzz_layouts.h"
#include "zarr_internal.h"

/* What the coalesced reads must deliver. */
struct expect {
    const struct sl__meta *m;
    const uint8_t *shard;    /* the stored shard */
    const uint64_t *entries; /* its decoded index */
    uint64_t n_calls;        /* inner chunks delivered */
    uint64_t last_offset;    /* offsets arrive in ascending order */
    uint8_t *chunk;          /* a decoded inner chunk */
    sl_codec_ctx *ctx;
};

static sl_status
check_inner(void *arg, uint64_t k, const uint8_t *bytes, size_t n, struct sl_error *err)
{
    (void)err;
    struct expect *x = arg;
    FUZZ_CHECK(k < x->m->n_per_shard, "inner chunk %llu of %llu", (unsigned long long)k,
               (unsigned long long)x->m->n_per_shard);
    uint64_t off = x->entries[2 * k], len = x->entries[2 * k + 1];
    FUZZ_CHECK(off != SL__SHARD_EMPTY, "empty inner chunk %llu delivered", (unsigned long long)k);
    FUZZ_CHECK(n == len && memcmp(bytes, x->shard + off, n) == 0,
               "inner chunk %llu: wrong bytes delivered", (unsigned long long)k);
    FUZZ_CHECK(x->n_calls == 0 || off >= x->last_offset, "offsets out of order");
    x->last_offset = off;
    x->n_calls++;
    struct sl__chunk_layout lay;
    sl__meta_chunk_layout(x->m, &lay);
    struct sl_error local = SL_ERROR_INIT;
    sl_status st = sl__chain_decode(&x->m->chain, &lay, bytes, n, x->chunk, x->ctx, &local);
    fuzz_check_error(st, &local, "inner chunk decode");
    return SL_OK;
}

/* Read the shard through a memory store as a chunk read would. */
static void
read_through_store(const struct sl__meta *m, const uint8_t *shard, size_t size,
                   const uint64_t *entries, sl_codec_ctx *ctx)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    FUZZ_CHECK(s != NULL, "no memory store");
    FUZZ_CHECK(sl_store_set(s, "c/0", shard, size, NULL) == SL_OK, "store set failed");
    struct sl__reader rd;
    FUZZ_CHECK(sl__reader_open(s, "c/0", &rd, NULL) == SL_OK, "reader open failed");
    const uint64_t *again;
    struct sl_error err = SL_ERROR_INIT;
    FUZZ_CHECK(sl__shard_index_read(&rd, m, ctx, &again, &err) == SL_OK,
               "index decodes from bytes but not through a reader: %s", err.text);
    FUZZ_CHECK(memcmp(again, entries, 16 * m->n_per_shard) == 0, "index read differently");
    /* `again` lives in ctx scratch, which the reads below keep. */
    uint64_t n = m->n_per_shard, expected = 0;
    uint64_t *which = malloc(n * sizeof(*which));
    struct sl__chunk_layout lay;
    sl__meta_chunk_layout(m, &lay);
    struct expect x = {m, shard, entries, 0, 0, malloc(lay.n_bytes), ctx};
    FUZZ_CHECK(which != NULL && x.chunk != NULL, "out of memory");
    for (uint64_t k = 0; k < n; k++) {
        which[k] = n - 1 - k;
        expected += entries[2 * k] != SL__SHARD_EMPTY;
    }
    err = SL_ERROR_INIT;
    sl_status st = sl__shard_read_entries(&rd, entries, which, n, ctx, check_inner, &x, &err);
    FUZZ_CHECK(st == SL_OK, "reading inner chunks inside the shard failed: %s", err.text);
    FUZZ_CHECK(x.n_calls == expected, "%llu inner chunks delivered, %llu stored",
               (unsigned long long)x.n_calls, (unsigned long long)expected);
    free(x.chunk);
    free(which);
    sl__reader_close(&rd);
    sl_store_unref(s);
}

/* Locate and decode the index of `shard`; check and read what it says. */
static void
parse_shard(const struct sl__meta *m, const uint8_t *shard, size_t size, sl_codec_ctx *ctx)
{
    uint64_t off = 0;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl__shard_index_range(m, size, &off, &err);
    fuzz_check_error(st, &err, "sl__shard_index_range");
    FUZZ_CHECK((st == SL_OK) == (size >= m->index_bytes), "shard of %zu bytes, index %zu: %s", size,
               m->index_bytes, sl_status_name(st));
    if (st != SL_OK)
        return;
    FUZZ_CHECK(off + m->index_bytes <= size, "index placed past the end");
    uint64_t *entries = malloc(16 * m->n_per_shard);
    FUZZ_CHECK(entries != NULL, "out of memory");
    err = SL_ERROR_INIT;
    st = sl__shard_index_decode(m, shard + off, m->index_bytes, size, entries, ctx, &err);
    fuzz_check_error(st, &err, "sl__shard_index_decode");
    if (st == SL_OK) {
        for (uint64_t k = 0; k < m->n_per_shard; k++) {
            uint64_t o = entries[2 * k], n = entries[2 * k + 1];
            bool empty = o == SL__SHARD_EMPTY && n == SL__SHARD_EMPTY;
            FUZZ_CHECK(empty || (o <= size && n <= size - o), "entry %llu [%llu, +%llu) accepted",
                       (unsigned long long)k, (unsigned long long)o, (unsigned long long)n);
            FUZZ_CHECK(empty || n <= sl__meta_chunk_max_bytes(m),
                       "entry %llu of %llu bytes accepted", (unsigned long long)k,
                       (unsigned long long)n);
        }
        read_through_store(m, shard, size, entries, ctx);
    }
    free(entries);
}

/* Assemble a shard from the input's inner chunks; it must read back. */
static void
build_shard(const struct sl__meta *m, struct fuzz_input *in, sl_codec_ctx *ctx)
{
    struct sl_buf out = SL_BUF_INIT;
    uint64_t *entries = malloc(16 * m->n_per_shard);
    FUZZ_CHECK(entries != NULL, "out of memory");
    struct sl__shard_builder b;
    struct sl_error err = SL_ERROR_INIT;
    FUZZ_CHECK(sl__shard_builder_init(&b, m, &out, entries, &err) == SL_OK, "%s", err.text);
    /* Pieces no larger than an inner chunk's encoding can be: the index
     * decoder refuses larger entries (parse mode checks that). */
    size_t max = sl__meta_chunk_max_bytes(m);
    while (in->n > 0) {
        uint64_t k = fuzz_below(in, (uint32_t)m->n_per_shard);
        size_t len;
        const uint8_t *bytes = fuzz_take(in, fuzz_u8(in) % (max + 1), &len);
        if (entries[2 * k] != SL__SHARD_EMPTY)
            continue; /* each inner chunk once, as a rewrite adds them */
        FUZZ_CHECK(sl__shard_builder_add(&b, k, bytes, len, &err) == SL_OK, "%s", err.text);
    }
    bool empty;
    FUZZ_CHECK(sl__shard_builder_finish(&b, ctx, &empty, &err) == SL_OK, "%s", err.text);
    if (!empty) {
        uint64_t off = 0;
        uint64_t *back = malloc(16 * m->n_per_shard);
        FUZZ_CHECK(back != NULL, "out of memory");
        FUZZ_CHECK(sl__shard_index_range(m, out.size, &off, &err) == SL_OK, "%s", err.text);
        FUZZ_CHECK(sl__shard_index_decode(m, out.data + off, m->index_bytes, out.size, back, ctx,
                                          &err) == SL_OK,
                   "a built shard's index does not decode: %s", err.text);
        FUZZ_CHECK(memcmp(back, entries, 16 * m->n_per_shard) == 0, "index changed");
        free(back);
        parse_shard(m, out.data, out.size, ctx);
    }
    free(entries);
    sl_buf_fini(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    struct sl__meta m;
    uint8_t flags;
    fuzz_shard_meta(&in, &m, &flags);
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    FUZZ_CHECK(ctx != NULL, "out of memory");
    if (flags & SHARD_F_BUILD)
        build_shard(&m, &in, ctx);
    else
        parse_shard(&m, in.p, in.n, ctx);
    sl_codec_ctx_destroy(ctx);
    sl__meta_fini(&m);
    return 0;
}
