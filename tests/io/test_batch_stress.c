/* SPDX-License-Identifier: MIT */
/*
 * Batched reads under threads: several threads each running batches
 * through a parallel executor on one array, and batched readers racing a
 * writer that rewrites whole shards (each shard's chunks must come from one
 * version).  Runs under ThreadSanitizer in CI (plain_test.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "plain_test.h"
#include "testkit.h"

TestSuite(io_batch_stress, .timeout = 60.0);

/* [24, 24] uint32, chunks [4, 4], shards [8, 8] when sharded. */
static sl_array *
make_array(sl_store *s, bool sharded, const uint32_t *data)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U32;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = 24;
        sp.chunk_shape[d] = 4;
        sp.shard_shape[d] = sharded ? 8 : 0;
    }
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    cr_assert_not_null(a);
    struct sl_region whole = {.rank = 2, .start = {0, 0}, .stop = {24, 24}};
    cr_assert_eq(sl_array_write_region(a, &whole, data, 24 * 24 * 4, NULL, NULL, NULL), SL_OK);
    return a;
}

struct batcher {
    const sl_array *a;
    const uint32_t *data; /* the whole array, for checking */
    unsigned seed;
    int failures;
};

/* Batches of 6 random selections, each checked against the data. */
static void *
run_batches(void *arg)
{
    struct batcher *b = arg;
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 3);
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.par = &pool.par;
    o.coalesce_gap_bytes = b->seed % 2 ? 0 : 1 << 20;
    unsigned s = b->seed;
    uint32_t bufs[6][24 * 24], want[24 * 24];
    for (int iter = 0; iter < 40; iter++) {
        struct sl_region r[6];
        void *out[6];
        size_t sizes[6];
        for (int i = 0; i < 6; i++) {
            r[i].rank = 2;
            for (int d = 0; d < 2; d++) {
                s = s * 1103515245u + 12345u;
                r[i].start[d] = (s >> 8) % 24;
                s = s * 1103515245u + 12345u;
                r[i].stop[d] = r[i].start[d] + 1 + (s >> 8) % (24 - r[i].start[d]);
            }
            out[i] = bufs[i];
            sizes[i] = sizeof(bufs[i]);
        }
        if (sl_array_read_batch(b->a, 6, r, out, sizes, &o, NULL, NULL, NULL) != SL_OK) {
            b->failures++;
            continue;
        }
        for (int i = 0; i < 6; i++) {
            const uint64_t dims[2] = {24, 24};
            const uint64_t shape[2] = {r[i].stop[0] - r[i].start[0], r[i].stop[1] - r[i].start[1]};
            sl_test_box_extract(want, b->data, 2, dims, r[i].start, shape, 4);
            if (memcmp(want, bufs[i], shape[0] * shape[1] * 4) != 0)
                b->failures++;
        }
    }
    return NULL;
}

static void
check_threads_of_batches(bool sharded)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    uint32_t *data = malloc(24 * 24 * 4);
    sl_test_fill_data(data, 24 * 24, SL_DTYPE_U32, 3, false);
    sl_array *a = make_array(s, sharded, data);
    pthread_t t[4];
    struct batcher b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = (struct batcher){a, data, (unsigned)i * 7919u + 1u, 0};
        pthread_create(&t[i], NULL, run_batches, &b[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(b[i].failures, 0);
    }
    free(data);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_batch_stress, threads_of_parallel_batches) { check_threads_of_batches(false); }
Test(io_batch_stress, threads_of_parallel_sharded_batches) { check_threads_of_batches(true); }

struct racer {
    const sl_array *a;
    volatile int stop;
    int torn;   /* shards seen mixing two versions */
    int failed; /* batches that failed */
};

/* Every shard holds one value repeated; a batch must see one per shard. */
static void *
race_batches(void *arg)
{
    struct racer *r = arg;
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 2);
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.par = &pool.par;
    o.coalesce_max_bytes = 0; /* one request per inner chunk */
    /* The three shards of the top row, as two selections sharing one. */
    struct sl_region sel[2] = {{.rank = 2, .start = {0, 0}, .stop = {8, 16}},
                               {.rank = 2, .start = {0, 8}, .stop = {8, 24}}};
    uint32_t a0[8 * 16], a1[8 * 16];
    void *bufs[2] = {a0, a1};
    size_t sizes[2] = {sizeof(a0), sizeof(a1)};
    while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
        if (sl_array_read_batch(r->a, 2, sel, bufs, sizes, &o, NULL, NULL, NULL) != SL_OK) {
            __atomic_fetch_add(&r->failed, 1, __ATOMIC_RELAXED);
            continue;
        }
        for (int half = 0; half < 2; half++) {
            const uint32_t *b = bufs[half];
            /* Columns [0, 8) and [8, 16) of each buffer are one shard each. */
            for (int e = 0; e < 8 * 16; e++)
                if (b[e] != b[(e % 16) / 8 * 8])
                    __atomic_fetch_add(&r->torn, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

Test(io_batch_stress, batches_see_whole_shard_versions_while_shards_are_rewritten)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    uint32_t *data = calloc(24 * 24, 4);
    for (int i = 0; i < 24 * 24; i++)
        data[i] = 1;
    sl_array *a = make_array(s, true, data);
    struct racer r = {a, 0, 0, 0};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, race_batches, &r);
    uint32_t shard[64];
    for (uint32_t v = 2; v < 200; v++) {
        for (int e = 0; e < 64; e++)
            shard[e] = v;
        /* Rewrite each shard of the top row whole, one after another. */
        for (uint64_t c = 0; c < 3; c++) {
            struct sl_region r8 = {.rank = 2, .start = {0, 8 * c}, .stop = {8, 8 * c + 8}};
            cr_assert_eq(sl_array_write_region(a, &r8, shard, sizeof(shard), NULL, NULL, NULL),
                         SL_OK);
        }
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(r.failed, 0);
    cr_assert_eq(r.torn, 0);
    free(data);
    sl_array_unref(a);
    sl_store_unref(s);
}
