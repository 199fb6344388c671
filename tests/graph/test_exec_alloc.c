/* SPDX-License-Identifier: MIT */
/*
 * Graphs under allocation failure: the n-th allocation fails, for n = 1, 2,
 * 3, ... until a build + seal + prepare + run completes without reaching
 * it.  One allocator serves the graph (and so the plan and the run), the
 * memory store and the arrays, so failures land in the graph builder, the
 * planner, the executor's run state and intermediate chunks, the put's
 * transaction (staging, shard assembly) and the store.  Every attempt
 * must end in SL_OK or SL_ENOMEM (never a crash, never another code),
 * every chunk a put reports ok must read back its value, a run that
 * returns SL_OK wrote everything, and once the plan, graph, arrays and
 * store are gone the allocator has no live block.  (Chunk buffers come
 * from the pool's NUMA buffers, and zstd allocates on its own: neither is
 * this allocator's.)
 *
 * Two graphs: get → downsample → put into a sharded array; and an
 * intermediate stage with two consumers: get → {put "copy" (unsharded),
 * downsample → put "ds" (sharded)}.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "plain_test.h"
#include "testutil.h"

TestSuite(graph_exec_alloc, .timeout = 120.0);

#define SRC_N 32 /* source extent per dimension, [8, 8] chunks */
#define DS_N 16  /* its downsample: [4, 4] chunks in [8, 8] shards */

/* What one attempt builds, and what it must find. */
struct attempt {
    struct sl_allocator alloc; /* the failing allocator */
    bool two_consumers;        /* the second graph */
    sl_array *src, *copy, *ds; /* copy only in the second graph */
    uint32_t put_copy, put_ds; /* their put nodes */
};

static sl_array *
create_array(sl_store *s, const char *path, const struct sl_allocator *alloc, uint64_t n,
             uint64_t chunk, uint64_t shard)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = n;
        sp.chunk_shape[d] = chunk;
        sp.shard_shape[d] = shard;
    }
    struct sl_array_opts ao = SL_ARRAY_OPTS_DEFAULT;
    ao.alloc = alloc;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, path, &sp, &ao, &err);
    cr_assert_not_null(a, "%s: %s", path, err.text);
    return a;
}

static uint16_t
src_value(uint64_t y, uint64_t x)
{
    return (uint16_t)(1 + y * 97 + x * 5);
}

/* The stored source, and empty outputs, all through `alloc` (not failing yet). */
static sl_store *
setup(struct attempt *at)
{
    struct sl_mem_store_opts mo = SL_MEM_STORE_OPTS_DEFAULT;
    mo.alloc = &at->alloc;
    sl_store *s = sl_store_create_memory(&mo, NULL);
    cr_assert_not_null(s);
    at->src = create_array(s, "src", &at->alloc, SRC_N, 8, 0);
    static uint16_t img[SRC_N * SRC_N];
    for (uint64_t y = 0; y < SRC_N; y++)
        for (uint64_t x = 0; x < SRC_N; x++)
            img[y * SRC_N + x] = src_value(y, x);
    struct sl_region all = sl_region_whole(2, (const uint64_t[]){SRC_N, SRC_N});
    cr_assert_eq(sl_array_write_region(at->src, &all, img, sizeof(img), NULL, NULL, NULL), SL_OK);
    at->ds = create_array(s, "ds", &at->alloc, DS_N, 4, 8);
    at->copy = at->two_consumers ? create_array(s, "copy", &at->alloc, SRC_N, 8, 0) : NULL;
    return s;
}

/* Build, seal, prepare and run; the first failure's status. */
static sl_status
build_and_run(struct attempt *at, sl_pool *pool, sl_plan **plan_out)
{
    *plan_out = NULL;
    struct sl_error err = SL_ERROR_INIT;
    sl_graph *g = sl_graph_create(&at->alloc, &err);
    if (g == NULL)
        return err.code;
    uint32_t get, ds;
    sl_status st = sl_graph_add_get(g, "src", at->src, &get, &err);
    if (st == SL_OK && at->two_consumers)
        st = sl_graph_add_put(g, "copy", get, at->copy, &at->put_copy, &err);
    const struct sl_op_desc *d = NULL;
    cr_assert_eq(sl_op_lookup("downsample", &d, NULL), SL_OK);
    struct sl_op_args args;
    memset(&args, 0, sizeof(args));
    struct sl_op op;
    if (st == SL_OK)
        st = sl_op_args_set_factors(&args, d, "factors", 2, (const uint64_t[]){2, 2}, &err);
    if (st == SL_OK)
        st = sl_op_bind(&op, d, &args, SL_DTYPE_U16, 2, &err);
    if (st == SL_OK)
        st = sl_graph_add_op(g, "down", get, &op, (const uint64_t[]){4, 4}, &ds, &err);
    if (st == SL_OK)
        st = sl_graph_add_put(g, "ds", ds, at->ds, &at->put_ds, &err);
    if (st == SL_OK)
        st = sl_graph_seal(g, &err);
    sl_plan *plan = NULL;
    if (st == SL_OK) {
        plan = sl_plan_create(g, NULL, &err);
        st = plan != NULL ? SL_OK : err.code;
    }
    sl_graph_unref(g);
    if (st == SL_OK)
        st = sl_plan_run(plan, pool, &err);
    cr_assert(st != SL_OK || err.code == SL_OK, "a run returned SL_OK with an error: %s", err.text);
    *plan_out = plan;
    return st;
}

/* What the downsample writes: a clean run's output, checked against the
 * 2x2 means to within the kernel's integer rounding. */
static uint16_t ds_want[DS_N * DS_N];

static void
expected_downsample(sl_pool *pool)
{
    struct sl_test_alloc ta = {0};
    struct attempt at = {.alloc = sl_test_alloc_make(&ta)};
    sl_store *s = setup(&at);
    sl_plan *plan;
    cr_assert_eq(build_and_run(&at, pool, &plan), SL_OK);
    struct sl_region all = sl_region_whole(2, (const uint64_t[]){DS_N, DS_N});
    cr_assert_eq(sl_array_read_region(at.ds, &all, ds_want, sizeof(ds_want), NULL, NULL, NULL),
                 SL_OK);
    /* Independent of the kernel to within its rounding. */
    for (uint64_t y = 0; y < DS_N; y++)
        for (uint64_t x = 0; x < DS_N; x++) {
            double m = (src_value(2 * y, 2 * x) + src_value(2 * y, 2 * x + 1) +
                        src_value(2 * y + 1, 2 * x) + src_value(2 * y + 1, 2 * x + 1)) /
                       4.0;
            double got = ds_want[y * DS_N + x];
            cr_assert(got >= m - 1 && got <= m + 1, "downsample (%" PRIu64 ", %" PRIu64 ")", y, x);
        }
    sl_plan_destroy(plan);
    sl_array_unref(at.src);
    sl_array_unref(at.ds);
    sl_store_unref(s);
}

/* Chunk `c` of `a` (chunks of `chunk` elements) read back equals `want`. */
static bool
chunk_reads_back(sl_array *a, const uint64_t *c, uint64_t chunk, uint64_t n, const uint16_t *want)
{
    uint16_t buf[8 * 8];
    bool missing;
    if (sl_array_read_chunk(a, c, buf, chunk * chunk * 2, NULL, &missing, NULL) != SL_OK)
        return false;
    for (uint64_t y = 0; y < chunk; y++)
        for (uint64_t x = 0; x < chunk; x++)
            if (buf[y * chunk + x] != want[(c[0] * chunk + y) * n + c[1] * chunk + x])
                return false;
    return true;
}

/* Every chunk put `node` reports ok reads back; returns the ok count. */
static uint64_t
check_put(sl_plan *plan, uint32_t node, sl_array *a, uint64_t chunk, uint64_t n,
          const uint16_t *want, size_t fail)
{
    (void)fail; /* messages only: plain_test.h's stand-in drops them */
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, node, &ps, NULL), SL_OK);
    for (uint64_t k = 0; k < ps.grid->n_total; k++) {
        if (ps.codes[k] != SL_OK)
            continue;
        uint64_t c[2];
        sl_grid_coords_of(ps.grid, k, c);
        cr_assert(chunk_reads_back(a, c, chunk, n, want),
                  "allocation %zu failing: put %" PRIu32 " reports chunk (%" PRIu64 ", %" PRIu64
                  ") ok, but it does not read back",
                  fail, node, c[0], c[1]);
    }
    return ps.n_ok;
}

static void
sweep(bool two_consumers)
{
    struct sl_pool_opts po = SL_POOL_OPTS_DEFAULT;
    po.n_workers = 2;
    po.pin = SL_PIN_NONE;
    sl_pool *pool = sl_pool_create(&po, NULL);
    cr_assert_not_null(pool);
    expected_downsample(pool);
    static uint16_t src_img[SRC_N * SRC_N];
    for (uint64_t y = 0; y < SRC_N; y++)
        for (uint64_t x = 0; x < SRC_N; x++)
            src_img[y * SRC_N + x] = src_value(y, x);
    size_t n_enomem = 0;
    for (size_t fail = 1;; fail++) {
        cr_assert_lt(fail, 100000, "the sequence never completes");
        struct sl_test_alloc ta = {0};
        struct attempt at = {.alloc = sl_test_alloc_make(&ta), .two_consumers = two_consumers};
        sl_store *s = setup(&at);
        size_t setup_calls = ta.n_calls;
        ta.fail_at = setup_calls + fail;
        sl_plan *plan;
        sl_status st = build_and_run(&at, pool, &plan);
        bool reached = ta.n_failed > 0;
        ta.fail_at = 0; /* the checks below allocate freely */
        cr_assert(st == SL_OK || st == SL_ENOMEM, "allocation %zu failing gave %s", fail,
                  sl_status_name(st));
        cr_assert(reached || st == SL_OK, "no allocation failed, yet %s", sl_status_name(st));
        uint64_t ok = 0, total = 0;
        if (plan != NULL) {
            ok += check_put(plan, at.put_ds, at.ds, 4, DS_N, ds_want, fail);
            total += (DS_N / 4) * (DS_N / 4);
            if (two_consumers) {
                ok += check_put(plan, at.put_copy, at.copy, 8, SRC_N, src_img, fail);
                total += (SRC_N / 8) * (SRC_N / 8);
            }
            cr_assert(st != SL_OK || ok == total,
                      "allocation %zu: SL_OK with %" PRIu64 " of %" PRIu64 " chunks ok", fail, ok,
                      total);
        }
        sl_plan_destroy(plan);
        sl_array_unref(at.src);
        sl_array_unref(at.ds);
        sl_array_unref(at.copy);
        sl_store_unref(s);
        cr_assert_eq(ta.n_live, 0, "allocation %zu failing leaks %zu blocks (%zu bytes)", fail,
                     ta.n_live, ta.live_bytes);
        if (!reached) {
            cr_assert_gt(fail, 20, "the run allocates through the allocator");
            fprintf(stderr,
                    "graph_exec_alloc: %s: allocations 1..%zu failed in turn: %zu runs "
                    "SL_ENOMEM, %zu SL_OK\n",
                    two_consumers ? "two consumers" : "get-downsample-put", fail - 1, n_enomem,
                    fail - 1 - n_enomem);
            break;
        }
        n_enomem += st == SL_ENOMEM;
    }
    sl_pool_destroy(pool);
}

Test(graph_exec_alloc, every_allocation_failure_of_a_downsample_run_is_enomem_without_leaks)
{
    sweep(false);
}

Test(graph_exec_alloc, every_allocation_failure_with_an_intermediate_stage_is_enomem_without_leaks)
{
    sweep(true);
}
