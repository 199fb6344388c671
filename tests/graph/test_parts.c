/* SPDX-License-Identifier: MIT */
/*
 * Runs split into parts (what runs across processes do): every put chunk
 * runs in exactly one part, no shard is written by two parts, parts are
 * balanced by chunk count, merging codes, errors and summaries gives the
 * whole picture, and the phase callback sees every phase.
 */
#include <stdlib.h>
#include <string.h>

#include "graph_test_util.h"
#include "testutil.h"

TestSuite(graph_parts, .timeout = 60.0);

static sl_array *
make_array(sl_store *s, const char *path, const uint64_t *shape, const uint64_t *chunk,
           const uint64_t *shard)
{
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = 2;
    spec.dtype = SL_DTYPE_F64;
    for (int d = 0; d < 2; d++) {
        spec.shape[d] = shape[d];
        spec.chunk_shape[d] = chunk[d];
        spec.shard_shape[d] = shard != NULL ? shard[d] : 0;
    }
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, path, &spec, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    return a;
}

Test(graph_parts, parts_cover_every_chunk_once_along_shards)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = sl_store_create_memory(NULL, NULL);
    const uint64_t shape[] = {70, 50}, chunk[] = {5, 5}, shard[] = {20, 25};
    sl_array *dst = make_array(s, "out", shape, chunk, shard);
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t src = sl_test_add_getter(g, "src", 2, shape, (const uint64_t[]){7, 50});
    uint32_t put;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_put(g, "put", src, dst, &put, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    const uint32_t n_parts = 3;
    sl_plan *plans[3];
    uint64_t owned[3] = {0};
    for (uint32_t p = 0; p < n_parts; p++) {
        struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
        o.n_parts = n_parts;
        o.part = p;
        plans[p] = sl_plan_create(g, &o, &err);
        cr_assert_not_null(plans[p], "%s", err.text);
        cr_assert_eq(sl_plan_run(plans[p], pool, &err), SL_OK, "part %u: %s", p, err.text);
        struct sl_run_summary sum;
        sl_plan_summary(plans[p], &sum);
        owned[p] = sum.n_ok;
        cr_assert_eq(sum.n_ok + sum.n_skipped, sum.n_chunks);
    }
    /* Every chunk in exactly one part; every shard (4 x 5 chunks) in one part. */
    struct sl_put_status ps[3];
    for (uint32_t p = 0; p < n_parts; p++)
        cr_assert_eq(sl_plan_put_status(plans[p], put, &ps[p], NULL), SL_OK);
    const struct sl_grid *grid = ps[0].grid;
    int shard_part[4][2];
    memset(shard_part, -1, sizeof(shard_part));
    for (uint64_t k = 0; k < grid->n_total; k++) {
        int runs = 0, who = -1;
        for (uint32_t p = 0; p < n_parts; p++) {
            if (ps[p].codes[k] == SL_OK) {
                runs++;
                who = (int)p;
            } else {
                cr_assert_eq(ps[p].codes[k], SL_ESKIPPED);
            }
        }
        cr_assert_eq(runs, 1, "chunk %llu ran in %d parts", (unsigned long long)k, runs);
        uint64_t c[2];
        sl_grid_coords_of(grid, k, c);
        int *sp = &shard_part[c[0] / 4][c[1] / 5];
        cr_assert(*sp == -1 || *sp == who, "shard (%llu, %llu) written by parts %d and %d",
                  (unsigned long long)(c[0] / 4), (unsigned long long)(c[1] / 5), *sp, who);
        *sp = who;
    }
    /* Balanced: 140 chunks in shards of 20 (the last row of shards holds 10 each). */
    for (uint32_t p = 0; p < n_parts; p++)
        cr_assert(owned[p] >= 30 && owned[p] <= 60, "part %u has %llu chunks", p,
                  (unsigned long long)owned[p]);
    /* Part 0 folds in the others. */
    for (uint32_t p = 1; p < n_parts; p++) {
        cr_assert_eq(sl_plan_merge_codes(plans[0], put, ps[p].codes, grid->n_total, &err), SL_OK,
                     "%s", err.text);
        struct sl_run_summary other;
        sl_plan_summary(plans[p], &other);
        sl_plan_merge_summary(plans[0], &other);
    }
    struct sl_run_summary all;
    sl_plan_summary(plans[0], &all);
    cr_assert_eq(all.n_ok, grid->n_total);
    cr_assert_eq(all.n_skipped, 0);
    cr_assert_eq(sl_plan_merge_codes(plans[0], put, ps[1].codes, grid->n_total, NULL), SL_OK,
                 "merging a part twice changes nothing");
    uint8_t *clash = malloc(grid->n_total);
    memcpy(clash, ps[1].codes, grid->n_total);
    uint64_t k = 0;
    while (clash[k] != SL_OK)
        k++;
    clash[k] = SL_EIO;
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_merge_codes(plans[0], put, clash, grid->n_total, &e2), SL_EINVAL,
                 "a chunk with two outcomes is refused");
    cr_assert_not_null(strstr(e2.text, "ran in two parts (OK and EIO)"), "%s", e2.text);
    free(clash);
    /* What the parts wrote together is the whole array. */
    double *data = malloc(70 * 50 * sizeof(double));
    struct sl_region whole = sl_region_whole(2, shape);
    cr_assert_eq(
        sl_array_read_region(dst, &whole, data, 70 * 50 * sizeof(double), NULL, NULL, &err), SL_OK);
    for (uint64_t i = 0; i < 70 * 50; i++)
        cr_assert_eq(data[i], (double)i);
    free(data);
    for (uint32_t p = 0; p < n_parts; p++)
        sl_plan_destroy(plans[p]);
    sl_graph_unref(g);
    sl_array_unref(dst);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

Test(graph_parts, a_single_shard_goes_whole_to_one_part)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = sl_store_create_memory(NULL, NULL);
    const uint64_t shape[] = {30, 20}, chunk[] = {5, 5}, shard[] = {40, 40};
    sl_array *dst = make_array(s, "out", shape, chunk, shard);
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t src = sl_test_add_getter(g, "src", 2, shape, chunk);
    uint32_t put;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_put(g, "put", src, dst, &put, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    uint64_t owned[3] = {0}, written[3] = {0};
    for (uint32_t p = 0; p < 3; p++) {
        struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
        o.n_parts = 3;
        o.part = p;
        sl_plan *plan = sl_plan_create(g, &o, &err);
        cr_assert_not_null(plan, "%s", err.text);
        cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "part %u: %s", p, err.text);
        struct sl_run_summary sum;
        sl_plan_summary(plan, &sum);
        owned[p] = sum.n_ok;
        written[p] = sum.objects_written;
        sl_plan_destroy(plan);
    }
    cr_assert_eq(owned[0], 6 * 4, "part 0 runs the shard's 24 chunks, ran %llu",
                 (unsigned long long)owned[0]);
    cr_assert(owned[1] == 0 && owned[2] == 0, "parts 1 and 2 ran %llu and %llu chunks",
              (unsigned long long)owned[1], (unsigned long long)owned[2]);
    cr_assert(written[0] == 1 && written[1] == 0 && written[2] == 0,
              "the shard is written once: %llu, %llu, %llu", (unsigned long long)written[0],
              (unsigned long long)written[1], (unsigned long long)written[2]);
    sl_graph_unref(g);
    sl_array_unref(dst);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

Test(graph_parts, failures_of_other_parts_merge_into_the_report)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t src = sl_test_add_getter(g, "src", 1, (const uint64_t[]){100}, (const uint64_t[]){10});
    uint32_t put = sl_test_add_putter(g, "out", src);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    sl_plan *plans[2];
    for (uint32_t p = 0; p < 2; p++) {
        struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
        o.n_parts = 2;
        o.part = p;
        plans[p] = sl_plan_create(g, &o, NULL);
        cr_assert_not_null(plans[p]);
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_plan_run(plans[p], pool, &err), SL_OK, "%s", err.text);
    }
    /* Pretend part 1 failed a chunk: its record and code travel to part 0. */
    struct sl_put_status p1;
    cr_assert_eq(sl_plan_put_status(plans[1], put, &p1, NULL), SL_OK);
    uint8_t codes[10];
    memcpy(codes, p1.codes, sizeof(codes));
    cr_assert_eq(codes[9], SL_OK);
    codes[9] = SL_EIO;
    struct sl_chunk_error rec = {
        .node = put, .key = sl_chunk_key_make(1, (const uint64_t[]){9}), .code = SL_EIO};
    strcpy(rec.text, "disk full on the other host");
    cr_assert_eq(sl_plan_merge_codes(plans[0], put, codes, 10, NULL), SL_OK);
    sl_plan_merge_errors(plans[0], &rec, 1);
    struct sl_run_summary other = {.first_error = SL_EIO};
    sl_plan_merge_summary(plans[0], &other);
    struct sl_run_summary all;
    sl_plan_summary(plans[0], &all);
    cr_assert_eq(all.n_failed, 1);
    cr_assert_eq(all.n_ok, 9);
    cr_assert_eq(all.first_error, SL_EIO);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    cr_assert_eq(sl_plan_write_report(plans[0], mem, NULL), SL_OK);
    fclose(mem);
    cr_assert_not_null(strstr(text, "disk full on the other host"), "%s", text);
    free(text);
    for (uint32_t p = 0; p < 2; p++)
        sl_plan_destroy(plans[p]);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
}

struct phase_log {
    uint32_t calls[4];
    uint32_t n_phases;
    sl_status answer;
};

static sl_status
on_phase(void *ctx, uint32_t phase, uint32_t n_phases)
{
    struct phase_log *log = ctx;
    log->calls[phase]++;
    log->n_phases = n_phases;
    return log->answer;
}

Test(graph_parts, phase_callback_sees_every_phase_and_can_stop_the_run)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = sl_store_create_memory(NULL, NULL);
    const uint64_t shape[] = {20, 20}, chunk[] = {10, 10};
    sl_array *mid = make_array(s, "mid", shape, chunk, NULL);
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t src = sl_test_add_getter(g, "src", 2, shape, chunk), back;
    cr_assert_eq(sl_graph_add_put(g, "w", src, mid, NULL, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_get(g, "r", mid, &back, NULL), SL_OK);
    sl_test_add_putter(g, "out", back);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    struct phase_log log = {.answer = SL_OK};
    struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
    o.phase_done = on_phase;
    o.phase_ctx = &log;
    sl_plan *plan = sl_plan_create(g, &o, NULL);
    cr_assert_not_null(plan);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    cr_assert_eq(log.n_phases, 2);
    cr_assert_eq(log.calls[0], 1);
    cr_assert_eq(log.calls[1], 1);
    sl_plan_destroy(plan);

    memset(&log, 0, sizeof(log));
    log.answer = SL_EREMOTE;
    plan = sl_plan_create(g, &o, NULL);
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &e2), SL_EREMOTE);
    cr_assert_eq(log.calls[1], 0, "the second phase never ran");
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_eq(sum.n_canceled, 4, "the second phase's chunks are cancelled");
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_array_unref(mid);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}
