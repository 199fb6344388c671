/* SPDX-License-Identifier: MIT */
/*
 * Batched reads: random selections over random grids (sharded and not, v2
 * and v3, several dtypes and codecs, with absent chunks) against a
 * reference that reads each selection alone, into separate buffers and
 * concatenated; overlapping selections; each chunk decoded and each shard
 * index read once; coalescing options; decoding straight into outputs;
 * per-selection errors (out of bounds, rank, buffers, corrupt chunks);
 * fill values for absent chunks, shards and inner chunks; waves of shards.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "batch_internal.h"
#include "testkit.h"
#include "testutil.h"

TestSuite(io_batch, .timeout = 60.0);

static sl_status stopping_run(void *ctx, size_t n, sl_parallel_body *body, void *arg);

/* ---- helpers ----------------------------------------------------------------------- */

/* xorshift64*: the tests' own deterministic random numbers. */
static uint64_t
rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* Uniform in [lo, hi]. */
static uint64_t
rnd_in(uint64_t *s, uint64_t lo, uint64_t hi)
{
    return lo + rnd(s) % (hi - lo + 1);
}

static size_t
region_bytes(const sl_array *a, const struct sl_region *r)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < r->rank; d++)
        n *= r->stop[d] - r->start[d];
    return (size_t)n * sl_dtype_size(sl_array_dtype(a));
}

/* Counts store gets per key (memory store hook), to see what was read. */
#define HOOK_KEYS 512
struct get_log {
    pthread_mutex_t lock;
    char keys[HOOK_KEYS][48];
    unsigned counts[HOOK_KEYS];
    unsigned n_keys;
    unsigned n_gets;
};

static int
log_get(void *ctx, sl_store_op op, const char *key, size_t bytes)
{
    (void)bytes;
    struct get_log *log = ctx;
    if (op != SL_STORE_OP_GET || strstr(key, "zarr.json") != NULL || strstr(key, ".zarray"))
        return 0;
    pthread_mutex_lock(&log->lock);
    log->n_gets++;
    unsigned i = 0;
    while (i < log->n_keys && strcmp(log->keys[i], key) != 0)
        i++;
    if (i == log->n_keys && i < HOOK_KEYS) {
        snprintf(log->keys[i], sizeof(log->keys[i]), "%s", key);
        log->n_keys++;
    }
    if (i < HOOK_KEYS)
        log->counts[i]++;
    pthread_mutex_unlock(&log->lock);
    return 0;
}

static void
log_reset(struct get_log *log)
{
    pthread_mutex_lock(&log->lock);
    log->n_keys = 0;
    log->n_gets = 0;
    memset(log->counts, 0, sizeof(log->counts));
    pthread_mutex_unlock(&log->lock);
}

static unsigned
log_max_count(struct get_log *log)
{
    unsigned m = 0;
    for (unsigned i = 0; i < log->n_keys; i++)
        m = log->counts[i] > m ? log->counts[i] : m;
    return m;
}

static sl_store *
logged_store(struct get_log *log)
{
    memset(log, 0, sizeof(*log));
    pthread_mutex_init(&log->lock, NULL);
    struct sl_mem_store_opts o = SL_MEM_STORE_OPTS_DEFAULT;
    o.hook = log_get;
    o.hook_ctx = log;
    return sl_store_create_memory(&o, NULL);
}

/* A 1-d float64 array of `n` elements in chunks of `chunk` (shards of
 * `shard` when not 0), every chunk written with value = its index + 1
 * except those in `absent` (a bit set over chunk indices). */
static sl_array *
make_1d(sl_store *s, uint64_t n, uint64_t chunk, uint64_t shard, uint64_t absent)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 1;
    sp.dtype = SL_DTYPE_F64;
    sp.shape[0] = n;
    sp.chunk_shape[0] = chunk;
    sp.shard_shape[0] = shard;
    const double fill = -1;
    sp.fill_value = &fill;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, "a", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    double *data = malloc(n * sizeof(double));
    for (uint64_t i = 0; i < n; i++)
        data[i] = (double)(i / chunk + 1) * 1000 + (double)(i % chunk);
    uint64_t n_chunks = (n + chunk - 1) / chunk;
    for (uint64_t c = 0; c < n_chunks; c++) {
        if (c < 64 && (absent >> c & 1))
            continue;
        struct sl_region r = {.rank = 1, .start = {c * chunk}, .stop = {c * chunk + chunk}};
        if (r.stop[0] > n)
            r.stop[0] = n;
        cr_assert_eq(sl_array_write_region(a, &r, data + c * chunk,
                                           (r.stop[0] - r.start[0]) * sizeof(double), NULL, NULL,
                                           &err),
                     SL_OK, "%s", err.text);
    }
    free(data);
    return a;
}

/* ---- random selections over random grids ------------------------------------------- */

/* One random array: its description in `sp`. */
static sl_array *
random_array(sl_store *s, const char *name, uint64_t *rs, struct sl_array_spec *sp)
{
    static const sl_dtype dtypes[] = {SL_DTYPE_U8, SL_DTYPE_I16, SL_DTYPE_U32, SL_DTYPE_F64,
                                      SL_DTYPE_C64};
    static const char *const codecs[] = {"none", "zstd:1", "zstd:3"};
    *sp = SL_ARRAY_SPEC_DEFAULT;
    sp->rank = (uint32_t)rnd_in(rs, 1, 3);
    bool sharded = rnd(rs) % 2 == 0;
    sp->zarr_format = !sharded && rnd(rs) % 3 == 0 ? 2 : 3;
    sp->dtype = dtypes[rnd(rs) % 5];
    for (uint32_t d = 0; d < sp->rank; d++) {
        sp->shape[d] = rnd_in(rs, 1, sp->rank == 3 ? 9 : 24);
        sp->chunk_shape[d] = rnd_in(rs, 1, sp->shape[d] + 2);
        sp->shard_shape[d] = sharded ? sp->chunk_shape[d] * rnd_in(rs, 1, 3) : 0;
    }
    cr_assert_eq(sl_codec_spec_parse(codecs[rnd(rs) % 3], &sp->codec, NULL), SL_OK);
    sp->order_f = rnd(rs) % 4 == 0;
    sp->checksum = sp->zarr_format == 3 && rnd(rs) % 4 == 0;
    sp->index_at_start = sharded && rnd(rs) % 2 == 0;
    static const uint8_t seven[16] = {7};
    sp->fill_value = rnd(rs) % 2 ? seven : NULL;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, name, sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    return a;
}

/* A random box inside `shape` (maybe empty when `allow_empty`). */
static struct sl_region
random_box(uint64_t *rs, uint32_t rank, const uint64_t *shape, bool allow_empty)
{
    struct sl_region r = {.rank = rank};
    for (uint32_t d = 0; d < rank; d++) {
        r.start[d] = rnd_in(rs, 0, shape[d] - 1);
        r.stop[d] = rnd_in(rs, r.start[d] + (allow_empty && rnd(rs) % 8 == 0 ? 0 : 1), shape[d]);
    }
    return r;
}

/* Write a few random boxes of data; the rest stays absent. */
static void
random_contents(sl_array *a, const struct sl_array_spec *sp, uint64_t *rs)
{
    size_t es = sl_dtype_size(sp->dtype);
    unsigned n_boxes = (unsigned)rnd_in(rs, 1, 4);
    for (unsigned b = 0; b < n_boxes; b++) {
        struct sl_region r = random_box(rs, sp->rank, sp->shape, false);
        size_t bytes = region_bytes(a, &r);
        void *data = malloc(bytes);
        sl_test_fill_data(data, bytes / es, sp->dtype, (unsigned)rnd(rs), false);
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_array_write_region(a, &r, data, bytes, NULL, NULL, &err), SL_OK, "%s",
                     err.text);
        free(data);
    }
}

/* Random options: coalescing from "each chunk alone" to "everything". */
static struct sl_batch_opts
random_opts(uint64_t *rs, const struct sl_parallel *par, struct sl_batch_stats *stats)
{
    static const uint64_t gaps[] = {0, 16, 1 << 20};
    static const uint64_t caps[] = {0, 40, 16 << 20};
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.coalesce_gap_bytes = gaps[rnd(rs) % 3];
    o.coalesce_max_bytes = caps[rnd(rs) % 3];
    o.par = rnd(rs) % 2 ? par : NULL;
    o.stats = stats;
    return o;
}

/* Separate buffers: each equals the selection read alone. */
static void
check_separate(sl_array *a, const struct sl_array_spec *sp, uint64_t *rs,
               const struct sl_parallel *par, unsigned trial)
{
    enum { MAXN = 10 };
    size_t n = (size_t)rnd_in(rs, 1, MAXN);
    struct sl_region regions[MAXN];
    void *bufs[MAXN], *refs[MAXN];
    size_t sizes[MAXN];
    for (size_t i = 0; i < n; i++) {
        /* Sometimes repeat an earlier selection exactly: a shared chunk. */
        regions[i] = i > 0 && rnd(rs) % 5 == 0 ? regions[rnd(rs) % i]
                                               : random_box(rs, sp->rank, sp->shape, true);
        sizes[i] = region_bytes(a, &regions[i]);
        bufs[i] = malloc(sizes[i] + 1);
        refs[i] = malloc(sizes[i] + 1);
        memset(bufs[i], 0xa5, sizes[i]);
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_array_read_region(a, &regions[i], refs[i], sizes[i], NULL, NULL, &err),
                     SL_OK, "%s", err.text);
    }
    struct sl_batch_stats stats;
    struct sl_batch_opts o = random_opts(rs, par, &stats);
    sl_status status[MAXN];
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_batch(a, n, regions, bufs, sizes, &o, status, NULL, &err), SL_OK,
                 "trial %u: %s", trial, err.text);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(status[i], SL_OK);
        cr_assert(memcmp(bufs[i], refs[i], sizes[i]) == 0,
                  "trial %u: selection %zu differs from reading it alone", trial, i);
        free(bufs[i]);
        free(refs[i]);
    }
    cr_assert_eq(stats.n_decoded + stats.n_missing, stats.n_chunks, "trial %u", trial);
    cr_assert_eq(stats.n_selections_failed, 0);
    cr_assert(stats.n_index_reads <= stats.n_objects);
}

/* Concatenated along a random axis: each slab equals the selection read alone. */
static void
check_concat(sl_array *a, const struct sl_array_spec *sp, uint64_t *rs,
             const struct sl_parallel *par, unsigned trial)
{
    enum { MAXN = 6 };
    size_t n = (size_t)rnd_in(rs, 1, MAXN);
    uint32_t axis = (uint32_t)(rnd(rs) % sp->rank);
    struct sl_region base = random_box(rs, sp->rank, sp->shape, false), regions[MAXN];
    for (size_t i = 0; i < n; i++) {
        regions[i] = base;
        regions[i].start[axis] = rnd_in(rs, 0, sp->shape[axis] - 1);
        regions[i].stop[axis] = rnd_in(rs, regions[i].start[axis], sp->shape[axis]);
    }
    uint64_t shape[SL_MAX_RANK];
    size_t bytes;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_batch_concat_shape(a, n, regions, axis, shape, &bytes, &err), SL_OK, "%s",
                 err.text);
    uint8_t *out = malloc(bytes + 1), *expect = malloc(bytes + 1);
    uint64_t at = 0, zero[SL_MAX_RANK] = {0};
    size_t es = sl_dtype_size(sp->dtype);
    for (size_t i = 0; i < n; i++) {
        size_t sz = region_bytes(a, &regions[i]);
        void *ref = malloc(sz + 1);
        cr_assert_eq(sl_array_read_region(a, &regions[i], ref, sz, NULL, NULL, &err), SL_OK);
        uint64_t dims[SL_MAX_RANK], origin[SL_MAX_RANK] = {0};
        sl_region_shape(&regions[i], dims);
        origin[axis] = at;
        sl__box_copy(&(struct sl__box){.base = expect, .dims = shape, .origin = origin},
                     &(struct sl__box){.base = (void *)ref, .dims = dims, .origin = zero}, dims,
                     sp->rank, es);
        at += dims[axis];
        free(ref);
    }
    struct sl_batch_stats stats;
    struct sl_batch_opts o = random_opts(rs, par, &stats);
    cr_assert_eq(sl_array_read_batch_concat(a, n, regions, axis, out, bytes, &o, NULL, NULL, &err),
                 SL_OK, "trial %u: %s", trial, err.text);
    cr_assert(memcmp(out, expect, bytes) == 0, "trial %u: concatenation along %u differs", trial,
              axis);
    free(out);
    free(expect);
}

Test(io_batch, random_selections_match_reading_each_alone)
{
    uint64_t rs = 0x5eed1234abcdull;
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 3);
    for (unsigned trial = 0; trial < 120; trial++) {
        sl_store *s = sl_store_create_memory(NULL, NULL);
        struct sl_array_spec sp;
        sl_array *a = random_array(s, "r", &rs, &sp);
        random_contents(a, &sp, &rs);
        check_separate(a, &sp, &rs, &pool.par, trial);
        check_concat(a, &sp, &rs, &pool.par, trial);
        sl_array_unref(a);
        sl_store_unref(s);
    }
}

Test(io_batch, filesystem_store_matches_too)
{
    const char *dir = sl_test_tmpdir("batch_fs");
    sl_store *s = sl_store_open_fs(dir, NULL, NULL);
    cr_assert_not_null(s);
    uint64_t rs = 99;
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 2);
    for (unsigned trial = 0; trial < 10; trial++) {
        struct sl_array_spec sp;
        char name[16];
        snprintf(name, sizeof(name), "r%u", trial);
        sl_array *a = random_array(s, name, &rs, &sp);
        random_contents(a, &sp, &rs);
        check_separate(a, &sp, &rs, &pool.par, trial);
        sl_array_unref(a);
    }
    sl_store_unref(s);
    sl_test_rmtree(dir);
}

/* ---- sharing, indexes, coalescing ---------------------------------------------------- */

Test(io_batch, overlapping_selections_share_each_chunk_once)
{
    struct get_log log;
    sl_store *s = logged_store(&log);
    sl_array *a = make_1d(s, 100, 10, 0, 0);
    /* Identical, nested and partly overlapping selections. */
    struct sl_region r[4] = {{.rank = 1, .start = {5}, .stop = {45}},
                             {.rank = 1, .start = {5}, .stop = {45}},
                             {.rank = 1, .start = {20}, .stop = {30}},
                             {.rank = 1, .start = {38}, .stop = {71}}};
    double out[4][40], ref[40];
    void *bufs[4] = {out[0], out[1], out[2], out[3]};
    size_t sizes[4] = {sizeof(out[0]), sizeof(out[1]), sizeof(out[2]), sizeof(out[3])};
    struct sl_batch_stats st;
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.stats = &st;
    log_reset(&log);
    cr_assert_eq(sl_array_read_batch(a, 4, r, bufs, sizes, &o, NULL, NULL, NULL), SL_OK);
    cr_assert_eq(st.n_chunks, 8, "chunks 0..7 met: %" PRIu64, st.n_chunks);
    cr_assert_eq(st.n_decoded, 8);
    cr_assert_eq(st.n_parts, 5 + 5 + 1 + 5);
    cr_assert_eq(log.n_keys, 8);
    cr_assert_eq(log_max_count(&log), 1, "a chunk was read twice");
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(sl_array_read_region(a, &r[i], ref, sizeof(ref), NULL, NULL, NULL), SL_OK);
        cr_assert(memcmp(out[i], ref, (r[i].stop[0] - r[i].start[0]) * 8) == 0);
    }
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_batch, each_shard_index_is_read_once)
{
    struct get_log log;
    sl_store *s = logged_store(&log);
    /* 4 shards of 4 inner chunks of 5. */
    sl_array *a = make_1d(s, 80, 5, 20, 0);
    struct sl_region r[6];
    double out[6][5];
    void *bufs[6];
    size_t sizes[6];
    for (int i = 0; i < 6; i++) {
        /* Every other inner chunk of the first three shards. */
        r[i] = (struct sl_region){.rank = 1, .start = {(uint64_t)i * 10}, .stop = {i * 10u + 5}};
        bufs[i] = out[i];
        sizes[i] = sizeof(out[i]);
    }
    struct sl_batch_stats st;
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.stats = &st;
    struct sl_store_stats before, after;
    sl_store_get_stats(s, &before);
    log_reset(&log);
    cr_assert_eq(sl_array_read_batch(a, 6, r, bufs, sizes, &o, NULL, NULL, NULL), SL_OK);
    sl_store_get_stats(s, &after);
    cr_assert_eq(st.n_objects, 3);
    cr_assert_eq(st.n_index_reads, 3);
    cr_assert_eq(log.n_keys, 3, "three shards opened");
    cr_assert_eq(log_max_count(&log), 1, "a shard was opened twice");
    /* With a 1 MiB gap each shard's two chunks come in one request. */
    cr_assert_eq(st.n_requests, 3);
    cr_assert_eq(after.n_get - before.n_get, 3 + 3, "3 index reads + 3 requests");
    for (int i = 0; i < 6; i++)
        for (int e = 0; e < 5; e++)
            cr_assert_eq(out[i][e], (double)(2 * i + 1) * 1000 + e);

    /* No gap allowed: each inner chunk alone. */
    o.coalesce_gap_bytes = 0;
    cr_assert_eq(sl_array_read_batch(a, 6, r, bufs, sizes, &o, NULL, NULL, NULL), SL_OK);
    cr_assert_eq(st.n_requests, 6);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_batch, coalescing_respects_gap_and_cap)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    /* One shard of 10 uncompressed inner chunks of 4 float64 (32 bytes). */
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 1;
    sp.dtype = SL_DTYPE_F64;
    sp.shape[0] = 40;
    sp.chunk_shape[0] = 4;
    sp.shard_shape[0] = 40;
    sp.codec.compressor = SL_COMPRESSOR_NONE;
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    cr_assert_not_null(a);
    double data[40];
    for (int i = 0; i < 40; i++)
        data[i] = i + 1;
    struct sl_region whole = sl_region_whole(1, sp.shape);
    cr_assert_eq(sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, NULL), SL_OK);
    /* Chunks 0, 1, 3 and 9: 0-1 adjacent, 3 after a 32-byte gap, 9 far. */
    struct sl_region r[3] = {{.rank = 1, .start = {0}, .stop = {8}},
                             {.rank = 1, .start = {13}, .stop = {15}},
                             {.rank = 1, .start = {37}, .stop = {38}}};
    double out[3][8];
    void *bufs[3] = {out[0], out[1], out[2]};
    size_t sizes[3] = {64, 16, 8};
    struct sl_batch_stats st;
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.stats = &st;
    struct {
        uint64_t gap, cap, requests, bytes;
    } cases[] = {
        {1 << 20, 16 << 20, 1, 320}, /* everything in one read, gaps included */
        {32, 16 << 20, 2, 128 + 32}, /* 0-3 together, 9 alone */
        {31, 16 << 20, 3, 128},      /* the 32-byte gap is too wide */
        {32, 96, 3, 128},            /* 0..3 would span 128 > 96: split after chunk 1 */
        {0, 0, 4, 128},              /* each alone */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        o.coalesce_gap_bytes = cases[i].gap;
        o.coalesce_max_bytes = cases[i].cap;
        cr_assert_eq(sl_array_read_batch(a, 3, r, bufs, sizes, &o, NULL, NULL, NULL), SL_OK);
        cr_assert_eq(st.n_requests, cases[i].requests, "case %zu: %" PRIu64, i, st.n_requests);
        cr_assert_eq(st.bytes_requested, cases[i].bytes, "case %zu: %" PRIu64, i,
                     st.bytes_requested);
        cr_assert_eq(out[0][7], 8);
        cr_assert_eq(out[1][0], 14);
        cr_assert_eq(out[2][0], 38);
    }
    sl_array_unref(a);
    sl_store_unref(s);
}

/* ---- straight into the output ------------------------------------------------------------ */

Test(io_batch, whole_chunks_decode_straight_into_outputs)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    struct sl_batch_stats st;
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.stats = &st;
    /* 1-d, 103 elements in chunks of 10: every other chunk, plus the edge. */
    sl_array *a = make_1d(s, 103, 10, 0, 0);
    struct sl_region r[3] = {{.rank = 1, .start = {0}, .stop = {10}},
                             {.rank = 1, .start = {20}, .stop = {35}},
                             {.rank = 1, .start = {95}, .stop = {103}}};
    double out[3][15];
    void *bufs[3] = {out[0], out[1], out[2]};
    size_t sizes[3] = {sizeof(out[0]), sizeof(out[1]), sizeof(out[2])};
    cr_assert_eq(sl_array_read_batch(a, 3, r, bufs, sizes, &o, NULL, NULL, NULL), SL_OK);
    /* Chunks 0 and 2 lie wholly inside; 3 is cut; 9 is cut, 10 is an edge chunk. */
    cr_assert_eq(st.n_chunks, 5);
    cr_assert_eq(st.n_direct, 2);
    cr_assert_eq(out[1][14], 4004);
    cr_assert_eq(out[2][7], 11002);

    /* Concatenated along axis 0, whole chunks are direct too. */
    double cat[25];
    cr_assert_eq(sl_array_read_batch_concat(a, 2, r, 0, cat, sizeof(cat), &o, NULL, NULL, NULL),
                 SL_OK);
    cr_assert_eq(st.n_direct, 2);
    cr_assert_eq(cat[10], 3000);
    sl_array_unref(a);

    /* 2-d [8, 12] in chunks [2, 12]: rows span the full width, so whole
     * chunks are direct; in chunks [2, 4] they are not (copies). */
    for (int wide = 1; wide >= 0; wide--) {
        struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
        sp.rank = 2;
        sp.dtype = SL_DTYPE_U16;
        sp.shape[0] = 8, sp.shape[1] = 12;
        sp.chunk_shape[0] = 2, sp.chunk_shape[1] = wide ? 12 : 4;
        sp.overwrite = true;
        a = sl_array_create(s, wide ? "w" : "n", &sp, NULL, NULL);
        uint16_t data[96], back[96];
        for (int i = 0; i < 96; i++)
            data[i] = (uint16_t)i;
        struct sl_region whole = sl_region_whole(2, sp.shape);
        cr_assert_eq(sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, NULL), SL_OK);
        struct sl_region rows = {.rank = 2, .start = {2, 0}, .stop = {6, 12}};
        void *b = back;
        size_t sz = sizeof(back);
        cr_assert_eq(sl_array_read_batch(a, 1, &rows, &b, &sz, &o, NULL, NULL, NULL), SL_OK);
        cr_assert_eq(st.n_direct, wide ? 2 : 0, "wide=%d: %" PRIu64, wide, st.n_direct);
        cr_assert(memcmp(back, data + 24, 48 * 2) == 0);
        sl_array_unref(a);
    }
    sl_store_unref(s);
}

/* ---- per-selection errors ------------------------------------------------------------------ */

Test(io_batch, out_of_bounds_selection_names_itself_and_the_bounds)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_1d(s, 50, 10, 0, 0);
    struct sl_region r[3] = {{.rank = 1, .start = {0}, .stop = {10}},
                             {.rank = 1, .start = {45}, .stop = {60}},
                             {.rank = 1, .start = {40}, .stop = {50}}};
    double out[3][15];
    void *bufs[3] = {out[0], out[1], out[2]};
    size_t sizes[3] = {sizeof(out[0]), sizeof(out[1]), sizeof(out[2])};
    sl_status status[3];
    struct sl_error errors[3], err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_batch(a, 3, r, bufs, sizes, NULL, status, errors, &err), SL_EBOUNDS);
    cr_assert_eq(status[0], SL_OK);
    cr_assert_eq(status[1], SL_EBOUNDS);
    cr_assert_eq(status[2], SL_OK);
    cr_assert_eq(errors[0].code, SL_OK);
    cr_assert_eq(errors[1].code, SL_EBOUNDS);
    cr_assert_not_null(strstr(err.text, "selection 1 [45:60] is outside the array's bounds [50]"),
                       "%s", err.text);
    cr_assert_not_null(strstr(errors[1].text, "stops at 60 > 50"), "%s", errors[1].text);
    cr_assert_eq(out[0][9], 1009);
    cr_assert_eq(out[2][9], 5009, "the other selections are read");

    /* Concatenated: the same selection fails, its neighbours are read. */
    double cat[35];
    cr_assert_eq(sl_array_read_batch_concat(a, 3, r, 0, cat, sizeof(cat), NULL, status, NULL, &err),
                 SL_EBOUNDS);
    cr_assert_eq(status[1], SL_EBOUNDS);
    cr_assert_eq(cat[0], 1000);
    cr_assert_eq(cat[34], 5009);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_batch, rank_buffer_and_layout_errors)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_1d(s, 50, 10, 0, 0);
    struct sl_region r[3] = {{.rank = 2, .start = {0, 0}, .stop = {1, 1}},
                             {.rank = 1, .start = {0}, .stop = {10}},
                             {.rank = 1, .start = {9}, .stop = {3}}};
    double out[10];
    void *bufs[3] = {out, out, out};
    size_t sizes[3] = {sizeof(out), 8 * 9, sizeof(out)};
    sl_status status[3];
    struct sl_error errors[3], err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_batch(a, 3, r, bufs, sizes, NULL, status, errors, &err), SL_EINVAL);
    cr_assert_eq(status[0], SL_EINVAL);
    cr_assert_not_null(strstr(errors[0].text, "selection 0 has rank 2, the array has rank 1"));
    cr_assert_eq(status[1], SL_EINVAL);
    cr_assert_not_null(strstr(errors[1].text, "selection 1 needs 80 bytes, its buffer has 72"),
                       "%s", errors[1].text);
    cr_assert_eq(status[2], SL_EINVAL);
    cr_assert_not_null(strstr(errors[2].text, "selection 2 starts at 9 after its stop 3"));
    cr_assert_eq(sl_array_read_batch(a, 2, NULL, bufs, sizes, NULL, NULL, NULL, NULL), SL_EINVAL);
    cr_assert_eq(sl_array_read_batch(a, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL), SL_OK);

    /* Concatenation: extents must agree outside the axis. */
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.shape[0] = sp.shape[1] = 6;
    sp.chunk_shape[0] = sp.chunk_shape[1] = 4;
    sl_array *b = sl_array_create(s, "b", &sp, NULL, NULL);
    struct sl_region q[2] = {{.rank = 2, .start = {0, 0}, .stop = {2, 3}},
                             {.rank = 2, .start = {3, 1}, .stop = {5, 5}}};
    uint64_t shape[2];
    size_t bytes;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_batch_concat_shape(b, 2, q, 0, shape, &bytes, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "selection 1 spans 4 in dimension 1, selection 0 spans 3"),
                       "%s", err.text);
    uint8_t cat[64];
    cr_assert_eq(sl_array_read_batch_concat(b, 2, q, 0, cat, sizeof(cat), NULL, status, NULL, NULL),
                 SL_EINVAL);
    cr_assert_eq(status[0], SL_ECANCELED);
    cr_assert_eq(status[1], SL_EINVAL);
    q[1].stop[1] = 4;
    cr_assert_eq(sl_array_batch_concat_shape(b, 2, q, 0, shape, &bytes, NULL), SL_OK);
    cr_assert_eq(shape[0], 4);
    cr_assert_eq(shape[1], 3);
    cr_assert_eq(bytes, 12);
    cr_assert_eq(sl_array_batch_concat_shape(b, 2, q, 2, shape, &bytes, NULL), SL_EINVAL);
    cr_assert_eq(sl_array_read_batch_concat(b, 2, q, 0, cat, 11, NULL, status, NULL, NULL),
                 SL_EINVAL, "buffer too small");
    cr_assert_eq(sl_array_read_batch_concat(b, 2, q, 1, cat, sizeof(cat), NULL, NULL, NULL, NULL),
                 SL_OK, "axis 1: extents along 0 agree (2 and 2)");
    sl_array_unref(b);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_batch, corrupt_chunk_fails_only_the_selections_that_need_it)
{
    for (int sharded = 0; sharded < 2; sharded++) {
        sl_store *s = sl_store_create_memory(NULL, NULL);
        sl_array *a = make_1d(s, 60, 10, sharded ? 30 : 0, 0);
        const char *key = sharded ? "a/c/1" : "a/c/4";
        struct sl_buf obj = SL_BUF_INIT;
        cr_assert_eq(sl_store_get(s, key, NULL, &obj, NULL, NULL), SL_OK);
        /* Break the magic number of chunk 4's zstd frame (in shard 1 it is
         * inner chunk 1, whose offset the index at the end gives). */
        size_t at = 0;
        if (sharded) {
            uint64_t off;
            memcpy(&off, obj.data + obj.size - a->meta.index_bytes + 16, 8);
            at = (size_t)off;
        }
        memset(obj.data + at, 0xff, 4);
        cr_assert_eq(sl_store_set(s, key, obj.data, obj.size, NULL), SL_OK);
        sl_buf_fini(&obj);
        struct sl_region r[3] = {{.rank = 1, .start = {0}, .stop = {20}},
                                 {.rank = 1, .start = {35}, .stop = {45}},
                                 {.rank = 1, .start = {42}, .stop = {60}}};
        double out[3][20];
        void *bufs[3] = {out[0], out[1], out[2]};
        size_t sizes[3] = {sizeof(out[0]), sizeof(out[1]), sizeof(out[2])};
        sl_status status[3];
        struct sl_error errors[3], err = SL_ERROR_INIT;
        struct sl_test_pool pool;
        sl_test_pool_init(&pool, 2);
        struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
        o.par = &pool.par;
        sl_status st = sl_array_read_batch(a, 3, r, bufs, sizes, &o, status, errors, &err);
        cr_assert(st == SL_ECORRUPT, "sharded=%d: %s", sharded, sl_status_name(st));
        cr_assert_eq(status[0], SL_OK);
        cr_assert_eq(status[1], SL_ECORRUPT);
        cr_assert_eq(status[2], SL_ECORRUPT);
        cr_assert_eq(err.chunk.rank, 1);
        cr_assert_eq(err.chunk.idx[0], 4, "the error names inner chunk 4");
        cr_assert_str_eq(err.source, key);
        cr_assert(strncmp(err.text, "selection 1: ", 13) == 0, "%s", err.text);
        cr_assert(strncmp(errors[2].text, "selection 2: ", 13) == 0, "%s", errors[2].text);
        cr_assert_eq(out[0][19], 2009, "selection 0 is read");
        sl_array_unref(a);
        sl_store_unref(s);
    }
}

Test(io_batch, corrupt_shard_index_fails_the_selections_of_that_shard)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_1d(s, 60, 10, 20, 0);
    struct sl_buf obj = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "a/c/1", NULL, &obj, NULL, NULL), SL_OK);
    obj.data[obj.size - 1] ^= 0x40; /* the index's crc32c */
    cr_assert_eq(sl_store_set(s, "a/c/1", obj.data, obj.size, NULL), SL_OK);
    sl_buf_fini(&obj);
    struct sl_region r[3] = {{.rank = 1, .start = {0}, .stop = {10}},
                             {.rank = 1, .start = {25}, .stop = {30}},
                             {.rank = 1, .start = {40}, .stop = {60}}};
    double out[3][20];
    void *bufs[3] = {out[0], out[1], out[2]};
    size_t sizes[3] = {sizeof(out[0]), sizeof(out[1]), sizeof(out[2])};
    sl_status status[3];
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_batch(a, 3, r, bufs, sizes, NULL, status, NULL, &err), SL_ECORRUPT);
    cr_assert_eq(status[0], SL_OK);
    cr_assert_eq(status[1], SL_ECORRUPT);
    cr_assert_eq(status[2], SL_OK);
    cr_assert_str_eq(err.source, "a/c/1");
    cr_assert_eq(err.chunk.idx[0], 1, "the error names shard 1");
    cr_assert_not_null(strstr(err.text, "selection 1: shard index"), "%s", err.text);
    cr_assert_eq(out[2][19], 6009);

    /* An executor with no workers is refused. */
    struct sl_parallel none = {.ctx = NULL, .n_workers = 0, .run = stopping_run};
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.par = &none;
    cr_assert_eq(sl_array_read_batch(a, 3, r, bufs, sizes, &o, NULL, NULL, NULL), SL_EINVAL);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* ---- fill values ----------------------------------------------------------------------------- */

Test(io_batch, absent_chunks_shards_and_inner_chunks_read_as_fill)
{
    for (int sharded = 0; sharded < 2; sharded++) {
        sl_store *s = sl_store_create_memory(NULL, NULL);
        /* Chunks 1, 2 and 3 absent: with shards of 2 chunks, shard 1 is
         * absent and shard 0 holds an empty inner chunk. */
        sl_array *a = make_1d(s, 60, 10, sharded ? 20 : 0, 0xe);
        struct sl_region r[2] = {{.rank = 1, .start = {5}, .stop = {45}},
                                 {.rank = 1, .start = {15}, .stop = {17}}};
        double out[2][40];
        void *bufs[2] = {out[0], out[1]};
        size_t sizes[2] = {sizeof(out[0]), sizeof(out[1])};
        struct sl_batch_stats st;
        struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
        o.stats = &st;
        cr_assert_eq(sl_array_read_batch(a, 2, r, bufs, sizes, &o, NULL, NULL, NULL), SL_OK);
        for (int e = 0; e < 40; e++) {
            uint64_t i = 5 + (uint64_t)e, c = i / 10;
            double want = c >= 1 && c <= 3 ? -1 : (double)(c + 1) * 1000 + (double)(i % 10);
            cr_assert_eq(out[0][e], want, "sharded=%d element %" PRIu64, sharded, i);
        }
        cr_assert_eq(out[1][0], -1);
        cr_assert_eq(out[1][1], -1);
        cr_assert_eq(st.n_missing, 3);
        cr_assert_eq(st.n_decoded, 2);
        cr_assert_eq(st.n_index_reads, sharded ? 2 : 0, "the absent shard has no index");
        sl_array_unref(a);
        sl_store_unref(s);
    }
}

Test(io_batch, zero_dimensional_array)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.dtype = SL_DTYPE_I32;
    sl_array *a = sl_array_create(s, "z", &sp, NULL, NULL);
    int32_t v = 42, o1 = 0, o2 = 0;
    struct sl_region r = {.rank = 0};
    cr_assert_eq(sl_array_write_region(a, &r, &v, 4, NULL, NULL, NULL), SL_OK);
    struct sl_region rr[2] = {r, r};
    void *bufs[2] = {&o1, &o2};
    size_t sizes[2] = {4, 4};
    cr_assert_eq(sl_array_read_batch(a, 2, rr, bufs, sizes, NULL, NULL, NULL, NULL), SL_OK);
    cr_assert_eq(o1, 42);
    cr_assert_eq(o2, 42);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* ---- waves ------------------------------------------------------------------------------------
 */

Test(io_batch, many_shards_go_in_waves)
{
    struct get_log log;
    sl_store *s = logged_store(&log);
    /* 300 shards (more than one wave of 256) of 2 inner chunks of 2. */
    sl_array *a = make_1d(s, 1200, 2, 4, 0);
    double *out = malloc(1200 * 8), *ref = malloc(1200 * 8);
    struct sl_region whole = {.rank = 1, .start = {1}, .stop = {1199}};
    cr_assert_eq(sl_array_read_region(a, &whole, ref, 1198 * 8, NULL, NULL, NULL), SL_OK);
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 3);
    struct sl_batch_stats st;
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.par = &pool.par;
    o.stats = &st;
    o.coalesce_max_bytes = 20;
    void *b = out;
    size_t sz = 1198 * 8;
    log_reset(&log);
    cr_assert_eq(sl_array_read_batch(a, 1, &whole, &b, &sz, &o, NULL, NULL, NULL), SL_OK);
    cr_assert(memcmp(out, ref, 1198 * 8) == 0);
    cr_assert_eq(st.n_objects, 300);
    cr_assert_eq(st.n_index_reads, 300);
    cr_assert_eq(st.n_requests, 600, "a 20-byte cap reads each 16-byte chunk alone");
    cr_assert_eq(log_max_count(&log), 1);
    free(out);
    free(ref);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* ---- contexts and executors ------------------------------------------------------------- */

Test(io_batch, callers_worker_contexts_are_used_and_kept)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_1d(s, 100, 10, 50, 0);
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 3);
    sl_codec_ctx *ctxs[3] = {sl_codec_ctx_create(NULL, NULL), NULL,
                             sl_codec_ctx_create(NULL, NULL)};
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.par = &pool.par;
    o.worker_ctxs = ctxs;
    struct sl_region r = {.rank = 1, .start = {3}, .stop = {97}};
    double out[94];
    void *b = out;
    size_t sz = sizeof(out);
    for (int round = 0; round < 3; round++) {
        memset(out, 0, sizeof(out));
        cr_assert_eq(sl_array_read_batch(a, 1, &r, &b, &sz, &o, NULL, NULL, NULL), SL_OK);
        cr_assert_eq(out[93], 10006);
    }
    /* Still the caller's: usable, and destroyed once, here. */
    bool missing;
    const uint64_t c[1] = {4};
    double chunk[10];
    cr_assert_eq(sl_array_read_chunk(a, c, chunk, sizeof(chunk), ctxs[2], &missing, NULL), SL_OK);
    sl_codec_ctx_destroy(ctxs[0]);
    sl_codec_ctx_destroy(ctxs[2]);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* An executor that runs only the first `limit` iterations, then says it
 * shut down. */
static sl_status
stopping_run(void *ctx, size_t n, sl_parallel_body *body, void *arg)
{
    size_t limit = *(const size_t *)ctx;
    for (size_t i = 0; i < n && i < limit; i++)
        body(arg, i, 0);
    return n <= limit ? SL_OK : SL_ECANCELED;
}

Test(io_batch, an_executor_that_stops_fails_the_unread_selections)
{
    for (int sharded = 0; sharded < 2; sharded++) {
        sl_store *s = sl_store_create_memory(NULL, NULL);
        sl_array *a = make_1d(s, 60, 10, sharded ? 20 : 0, 0);
        size_t limit = 2;
        struct sl_parallel stop = {.ctx = &limit, .n_workers = 1, .run = stopping_run};
        struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
        o.par = &stop;
        /* Unsharded: 3 chunk iterations; sharded: 3 index iterations. */
        struct sl_region r[3];
        double out[3][10];
        void *bufs[3];
        size_t sizes[3];
        for (int i = 0; i < 3; i++) {
            r[i] = (struct sl_region){.rank = 1, .start = {20u * i}, .stop = {20u * i + 10}};
            bufs[i] = out[i];
            sizes[i] = sizeof(out[i]);
        }
        sl_status status[3];
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_array_read_batch(a, 3, r, bufs, sizes, &o, status, NULL, &err),
                     SL_ECANCELED);
        if (!sharded) {
            cr_assert_eq(status[0], SL_OK);
            cr_assert_eq(status[1], SL_OK);
            cr_assert_eq(out[1][0], 3000);
        }
        cr_assert_eq(status[2], SL_ECANCELED, "sharded=%d", sharded);
        cr_assert_not_null(strstr(err.text, "stopped before this chunk was read"), "%s", err.text);
        sl_array_unref(a);
        sl_store_unref(s);
    }
}
