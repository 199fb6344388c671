/* SPDX-License-Identifier: MIT */
/*
 * Arrays under threads: writers of different inner chunks of the same
 * shards, parallel region reads and writes through a sl_parallel pool, and
 * readers racing a writer.  Runs under ThreadSanitizer in CI (plain_test.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "plain_test.h"
#include "testkit.h"

TestSuite(io_array_stress, .timeout = 60.0);

/* [32, 32] uint32, chunks [4, 4], shards [16, 16] when sharded. */
static sl_array *
make_array(sl_store *s, bool sharded)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U32;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = 32;
        sp.chunk_shape[d] = 4;
        sp.shard_shape[d] = sharded ? 16 : 0;
    }
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    cr_assert_not_null(a);
    return a;
}

struct chunk_writer {
    sl_array *a;
    int id;       /* writes chunks whose linear index % 4 == id */
    int failures; /* calls that failed */
};

static void *
write_chunks(void *arg)
{
    struct chunk_writer *w = arg;
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    uint32_t chunk[16];
    for (uint64_t i = (uint64_t)w->id; i < 64; i += 4) {
        const uint64_t c[2] = {i / 8, i % 8};
        for (int e = 0; e < 16; e++)
            chunk[e] = (uint32_t)(i * 100 + (uint64_t)e + 1);
        if (sl_array_write_chunk(w->a, c, chunk, sizeof(chunk), ctx, NULL) != SL_OK)
            w->failures++;
    }
    sl_codec_ctx_destroy(ctx);
    return NULL;
}

static void
check_concurrent_chunk_writes(bool sharded)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, sharded);
    pthread_t t[4];
    struct chunk_writer w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct chunk_writer){a, i, 0};
        pthread_create(&t[i], NULL, write_chunks, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(w[i].failures, 0);
    }
    uint32_t chunk[16];
    for (uint64_t i = 0; i < 64; i++) {
        const uint64_t c[2] = {i / 8, i % 8};
        bool missing = true;
        cr_assert_eq(sl_array_read_chunk(a, c, chunk, sizeof(chunk), NULL, &missing, NULL), SL_OK);
        cr_assert_not(missing, "chunk %llu lost", (unsigned long long)i);
        cr_assert_eq(chunk[3], (uint32_t)(i * 100 + 4));
    }
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_array_stress, writers_of_different_chunks_lose_nothing)
{
    check_concurrent_chunk_writes(false);
}

Test(io_array_stress, writers_of_different_inner_chunks_of_one_shard_lose_nothing)
{
    check_concurrent_chunk_writes(true);
}

static void
check_parallel_regions(bool sharded)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, sharded);
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 4);
    uint32_t *data = malloc(32 * 32 * 4), *back = calloc(32 * 32, 4);
    sl_test_fill_data(data, 32 * 32, SL_DTYPE_U32, 9, false);
    struct sl_region whole = {.rank = 2, .start = {0, 0}, .stop = {32, 32}};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_write_region(a, &whole, data, 32 * 32 * 4, NULL, &pool.par, &err), SL_OK,
                 "%s", err.text);
    cr_assert_eq(sl_array_read_region(a, &whole, back, 32 * 32 * 4, NULL, &pool.par, &err), SL_OK,
                 "%s", err.text);
    cr_assert(memcmp(data, back, 32 * 32 * 4) == 0);
    /* A part, with the caller's context used by worker 0. */
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    struct sl_region part = {.rank = 2, .start = {3, 5}, .stop = {29, 30}};
    const uint64_t start[2] = {3, 5}, shape[2] = {26, 25}, dims[2] = {32, 32};
    uint32_t *want = malloc(26 * 25 * 4);
    sl_test_box_extract(want, data, 2, dims, start, shape, 4);
    cr_assert_eq(sl_array_read_region(a, &part, back, 26 * 25 * 4, ctx, &pool.par, NULL), SL_OK);
    cr_assert(memcmp(want, back, 26 * 25 * 4) == 0);
    sl_codec_ctx_destroy(ctx);
    free(want);
    free(data);
    free(back);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_array_stress, parallel_region_reads_and_writes) { check_parallel_regions(false); }
Test(io_array_stress, parallel_sharded_region_reads_and_writes) { check_parallel_regions(true); }

struct racer {
    sl_array *a;
    volatile int stop;
    int torn; /* chunks seen mixing two versions */
};

/* Every chunk holds one value repeated; a reader must never see two. */
static void *
read_race(void *arg)
{
    struct racer *r = arg;
    uint32_t chunk[16];
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
        const uint64_t c[2] = {1, 2};
        if (sl_array_read_chunk(r->a, c, chunk, sizeof(chunk), ctx, NULL, NULL) != SL_OK)
            __atomic_fetch_add(&r->torn, 1, __ATOMIC_RELAXED);
        for (int e = 1; e < 16; e++)
            if (chunk[e] != chunk[0])
                __atomic_fetch_add(&r->torn, 1, __ATOMIC_RELAXED);
    }
    sl_codec_ctx_destroy(ctx);
    return NULL;
}

Test(io_array_stress, readers_see_whole_versions_while_a_shard_is_rewritten)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, true);
    struct racer r = {a, 0, 0};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, read_race, &r);
    uint32_t chunk[16];
    for (uint32_t v = 1; v < 300; v++) {
        for (int e = 0; e < 16; e++)
            chunk[e] = v;
        /* Rewrite the chunk read, and a neighbour in the same shard. */
        const uint64_t c[2] = {1, 2}, n[2] = {1, 3};
        cr_assert_eq(sl_array_write_chunk(a, c, chunk, sizeof(chunk), NULL, NULL), SL_OK);
        cr_assert_eq(sl_array_write_chunk(a, n, chunk, sizeof(chunk), NULL, NULL), SL_OK);
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(r.torn, 0);
    sl_array_unref(a);
    sl_store_unref(s);
}
