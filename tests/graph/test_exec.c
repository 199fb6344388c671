/* SPDX-License-Identifier: MIT */
/*
 * The executor: values through fused and unfused stages, the getter
 * contract, per-chunk status arrays and error propagation, fail_fast,
 * the memory budget, re-running, progress, trace and report.
 */
#include <jansson.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph_test_util.h"
#include "testutil.h"

TestSuite(graph_exec, .timeout = 30.0);

/* A getter over a virtual float64 array whose element at C-order index i is
 * i; it counts calls per chunk and fails the test if asked for anything but
 * a whole stored chunk (katdal's contract), and can be told to fail chunks. */
struct strict_getter {
    uint32_t rank;
    uint64_t shape[4];
    uint64_t chunk[4];
    _Atomic unsigned calls[4096]; /* per chunk linear index */
    int64_t fail_linear;          /* chunk that fails with SL_ECORRUPT, or -1 */
    _Atomic unsigned bad_requests;
};

static uint64_t
strict_linear(const struct strict_getter *s, const struct sl_region *r)
{
    uint64_t lin = 0;
    for (uint32_t d = 0; d < s->rank; d++) {
        uint64_t n = (s->shape[d] + s->chunk[d] - 1) / s->chunk[d];
        lin = lin * n + r->start[d] / s->chunk[d];
    }
    return lin;
}

static sl_status
strict_get(void *ctx, const char *array_name, const struct sl_region *region, struct sl_block *out,
           struct sl_error *err)
{
    struct strict_getter *s = ctx;
    (void)array_name;
    for (uint32_t d = 0; d < s->rank; d++) {
        uint64_t want_stop = region->start[d] + s->chunk[d];
        if (want_stop > s->shape[d])
            want_stop = s->shape[d];
        if (region->start[d] % s->chunk[d] != 0 || region->stop[d] != want_stop)
            atomic_fetch_add(&s->bad_requests, 1);
    }
    uint64_t lin = strict_linear(s, region);
    atomic_fetch_add(&s->calls[lin], 1);
    if ((int64_t)lin == s->fail_linear)
        return sl_error_set(err, SL_ECORRUPT, NULL, "chunk %llu is corrupt",
                            (unsigned long long)lin);
    uint64_t n = sl_view_count(&out->view);
    double *p = out->view.data;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t rem = i, idx[4], g = 0;
        for (uint32_t d = s->rank; d-- > 0;) {
            idx[d] = region->start[d] + rem % out->view.shape[d];
            rem /= out->view.shape[d];
        }
        for (uint32_t d = 0; d < s->rank; d++)
            g = g * s->shape[d] + idx[d];
        p[i] = (double)g;
    }
    return SL_OK;
}

static uint32_t
add_strict(sl_graph *g, struct strict_getter *s, uint32_t rank, const uint64_t *shape,
           const uint64_t *chunk)
{
    memset(s, 0, sizeof(*s));
    s->rank = rank;
    memcpy(s->shape, shape, rank * sizeof(uint64_t));
    memcpy(s->chunk, chunk, rank * sizeof(uint64_t));
    s->fail_linear = -1;
    const struct sl_getter_desc d = {.array_name = "raw",
                                     .dtype = SL_DTYPE_F64,
                                     .rank = rank,
                                     .shape = shape,
                                     .chunk_shape = chunk,
                                     .fn = strict_get,
                                     .ctx = s};
    uint32_t id;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_getter(g, "raw", &d, &id, &err), SL_OK, "%s", err.text);
    return id;
}

/* A putter that assembles what it receives into a dense float64 array. */
struct collector {
    uint32_t rank;
    uint64_t shape[4];
    double *data;
    _Atomic unsigned calls;
    int64_t fail_at_start0; /* fail chunks whose region starts here in dim 0, or -1 */
    unsigned slow_us;       /* sleep this long per chunk that does not fail */
};

static sl_status
collect_put(void *ctx, const char *name, const struct sl_block *b, struct sl_error *err)
{
    struct collector *c = ctx;
    (void)name;
    atomic_fetch_add(&c->calls, 1);
    if (c->fail_at_start0 >= 0 && b->region.start[0] == (uint64_t)c->fail_at_start0)
        return sl_error_set(err, SL_EIO, NULL, "disk full at %llu",
                            (unsigned long long)b->region.start[0]);
    if (c->slow_us > 0)
        usleep(c->slow_us);
    cr_assert_eq(b->view.dtype, SL_DTYPE_F64);
    uint64_t n = sl_view_count(&b->view);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t rem = i, off_in = 0, off_out = 0;
        uint64_t idx[4];
        for (uint32_t d = b->view.rank; d-- > 0;) {
            idx[d] = rem % b->view.shape[d];
            rem /= b->view.shape[d];
        }
        for (uint32_t d = 0; d < b->view.rank; d++) {
            off_in += idx[d] * (uint64_t)b->view.stride[d];
            off_out = off_out * c->shape[d] + b->region.start[d] + idx[d];
        }
        c->data[off_out] = ((const double *)b->view.data)[off_in];
    }
    return SL_OK;
}

static uint32_t
add_collector(sl_graph *g, const char *name, uint32_t input, struct collector *c)
{
    struct sl_node_info info;
    cr_assert_eq(sl_graph_node_info(g, input, &info, NULL), SL_OK);
    memset(c, 0, sizeof(*c));
    c->rank = info.grid->rank;
    memcpy(c->shape, info.grid->shape, c->rank * sizeof(uint64_t));
    uint64_t n = 1;
    for (uint32_t d = 0; d < c->rank; d++)
        n *= c->shape[d];
    c->data = calloc(n ? n : 1, sizeof(double));
    for (uint64_t i = 0; i < n; i++)
        c->data[i] = NAN;
    c->fail_at_start0 = -1;
    const struct sl_putter_desc pd = {.fn = collect_put, .ctx = c};
    uint32_t id;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_putter(g, name, input, &pd, &id, &err), SL_OK, "%s", err.text);
    return id;
}

static sl_plan *
prepare(sl_graph *g, const struct sl_plan_opts *opts)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_seal(g, &err), SL_OK, "%s", err.text);
    sl_plan *plan = sl_plan_create(g, opts, &err);
    cr_assert_not_null(plan, "%s", err.text);
    return plan;
}

Test(graph_exec, getter_to_putter_moves_every_element)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    uint32_t raw = add_strict(g, s, 2, (const uint64_t[]){50, 37}, (const uint64_t[]){8, 10});
    struct collector c;
    uint32_t out = add_collector(g, "out", raw, &c);
    sl_plan *plan = prepare(g, NULL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    for (uint64_t i = 0; i < 50 * 37; i++)
        cr_assert_eq(c.data[i], (double)i, "element %llu", (unsigned long long)i);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, out, &ps, NULL), SL_OK);
    cr_assert_eq(ps.n_ok, 7 * 4);
    cr_assert_eq(ps.n_failed, 0);
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_eq(sum.n_chunks, 28);
    cr_assert_eq(sum.n_ok, 28);
    cr_assert_eq(sum.first_error, SL_OK);
    cr_assert_eq(s->bad_requests, 0);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c.data);
    free(s);
}

/* katdal: a select after a get never asks the getter for anything but stored chunks. */
Test(graph_exec, select_after_getter_reads_whole_chunks_only)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    const uint64_t shape[] = {100, 30};
    uint32_t raw = add_strict(g, s, 2, shape, (const uint64_t[]){10, 16});
    struct sl_region sl;
    cr_assert_eq(
        sl_region_init(&sl, 2, (const uint64_t[]){15, 3}, (const uint64_t[]){47, 29}, NULL), SL_OK);
    uint32_t sel;
    const struct sl_select_desc sd = {.n_slices = 1, .slices = &sl};
    cr_assert_eq(sl_graph_add_select(g, "sel", raw, &sd, &sel, NULL), SL_OK);
    struct collector c;
    add_collector(g, "out", sel, &c);
    sl_plan *plan = prepare(g, NULL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    cr_assert_eq(s->bad_requests, 0, "the getter was asked for a partial chunk");
    for (uint64_t r = 0; r < 32; r++)
        for (uint64_t k = 0; k < 26; k++)
            cr_assert_eq(c.data[r * 26 + k], (double)((r + 15) * 30 + k + 3));
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c.data);
    free(s);
}

/* Slices sharing stored chunks: each chunk is read once and shared. */
Test(graph_exec, shared_chunks_are_read_once)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    uint32_t raw = add_strict(g, s, 2, (const uint64_t[]){100, 8}, (const uint64_t[]){10, 8});
    struct sl_region sl[3];
    cr_assert_eq(
        sl_region_init(&sl[0], 2, (const uint64_t[]){52, 0}, (const uint64_t[]){55, 8}, NULL),
        SL_OK);
    cr_assert_eq(
        sl_region_init(&sl[1], 2, (const uint64_t[]){2, 0}, (const uint64_t[]){5, 8}, NULL), SL_OK);
    cr_assert_eq(
        sl_region_init(&sl[2], 2, (const uint64_t[]){6, 0}, (const uint64_t[]){25, 8}, NULL),
        SL_OK);
    uint32_t sel;
    const struct sl_select_desc sd = {.n_slices = 3, .slices = sl, .axis = 0};
    cr_assert_eq(sl_graph_add_select(g, "sel", raw, &sd, &sel, NULL), SL_OK);
    struct collector c;
    add_collector(g, "out", sel, &c);
    sl_plan *plan = prepare(g, NULL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    const uint64_t rows[] = {52, 53, 54, 2,  3,  4,  6,  7,  8,  9,  10, 11, 12,
                             13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
        for (uint64_t k = 0; k < 8; k++)
            cr_assert_eq(c.data[r * 8 + k], (double)(rows[r] * 8 + k), "row %zu", r);
    for (unsigned k = 0; k < 10; k++) {
        unsigned want = (k == 0 || k == 1 || k == 2 || k == 5) ? 1 : 0;
        cr_assert_eq(s->calls[k], want, "chunk %u read %u times", k, s->calls[k]);
    }
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_eq(sum.n_tasks, 4 + 5, "4 getter chunks and 5 output chunks");
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c.data);
    free(s);
}

static const struct sl_op *
bind_downsample(struct sl_op *op, const uint64_t *factors, uint32_t rank, const char *method)
{
    const struct sl_op_desc *d = NULL;
    cr_assert_eq(sl_op_lookup("downsample", &d, NULL), SL_OK);
    struct sl_op_args args;
    memset(&args, 0, sizeof(args));
    cr_assert_eq(sl_op_args_set_factors(&args, d, "factors", rank, factors, NULL), SL_OK);
    cr_assert_eq(sl_op_args_set_string(&args, d, "method", method, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_bind(op, d, &args, SL_DTYPE_F64, rank, &err), SL_OK, "%s", err.text);
    return op;
}

/* Downsample 64-chunks into 64-chunks: unfused, each output chunk assembled from 4. */
Test(graph_exec, unfused_downsample_matches_direct_means)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    const uint64_t shape[] = {61, 45};
    uint32_t raw = add_strict(g, s, 2, shape, (const uint64_t[]){8, 8});
    struct sl_op op;
    bind_downsample(&op, (const uint64_t[]){2, 3}, 2, "mean");
    uint32_t ds;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_op(g, "ds", raw, &op, (const uint64_t[]){8, 8}, &ds, &err), SL_OK,
                 "%s", err.text);
    struct collector c;
    add_collector(g, "out", ds, &c);
    sl_plan *plan = prepare(g, NULL);
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    for (uint64_t i = 0; i < 31; i++) {
        for (uint64_t j = 0; j < 15; j++) {
            double sum = 0;
            unsigned n = 0;
            for (uint64_t a = 2 * i; a < 2 * i + 2 && a < 61; a++)
                for (uint64_t b = 3 * j; b < 3 * j + 3 && b < 45; b++, n++)
                    sum += (double)(a * 45 + b);
            cr_assert_float_eq(c.data[i * 15 + j], sum / n, 1e-9, "(%llu, %llu)",
                               (unsigned long long)i, (unsigned long long)j);
        }
    }
    for (unsigned k = 0; k < 8 * 6; k++)
        cr_assert_eq(s->calls[k], 1, "stored chunk %u read %u times", k, s->calls[k]);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c.data);
    free(s);
}

/* A putter checking that each block is labelled with its own chunk of
 * `chunk`, then collecting it. */
struct labelled {
    struct collector c;
    uint64_t chunk[2];
    _Atomic unsigned mislabelled;
};

static sl_status
labelled_put(void *ctx, const char *name, const struct sl_block *b, struct sl_error *err)
{
    struct labelled *l = ctx;
    for (uint32_t d = 0; d < 2; d++)
        if (b->chunk.rank != 2 || b->chunk.idx[d] != b->region.start[d] / l->chunk[d])
            atomic_fetch_add(&l->mislabelled, 1);
    return collect_put(&l->c, name, b, err);
}

/* Rechunks pass their input through: an output chunk made of several
 * stored chunks is the one buffer that assembled them, an output chunk
 * inside one stored chunk is a view of it; no second copy either way, and
 * each block is labelled with the rechunk's own chunk. */
Test(graph_exec, rechunks_pass_their_input_through_relabelled)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    uint32_t raw = add_strict(g, s, 2, (const uint64_t[]){50, 37}, (const uint64_t[]){8, 10});
    static const uint64_t chunks[2][2] = {{16, 20}, {8, 5}};
    struct labelled *l = calloc(2, sizeof(*l));
    struct sl_error err = SL_ERROR_INIT;
    for (int k = 0; k < 2; k++) {
        uint32_t rc, put;
        char name[16];
        snprintf(name, sizeof(name), "rc%d", k);
        cr_assert_eq(sl_graph_add_rechunk(g, name, raw, chunks[k], &rc, &err), SL_OK, "%s",
                     err.text);
        l[k].c = (struct collector){.rank = 2, .shape = {50, 37}, .fail_at_start0 = -1};
        l[k].c.data = calloc(50 * 37, sizeof(double));
        memcpy(l[k].chunk, chunks[k], sizeof(l[k].chunk));
        const struct sl_putter_desc pd = {.fn = labelled_put, .ctx = &l[k]};
        snprintf(name, sizeof(name), "out%d", k);
        cr_assert_eq(sl_graph_add_putter(g, name, rc, &pd, &put, &err), SL_OK, "%s", err.text);
    }
    sl_plan *plan = prepare(g, NULL);
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    for (int k = 0; k < 2; k++) {
        for (uint64_t i = 0; i < 50 * 37; i++)
            cr_assert_eq(l[k].c.data[i], (double)i, "rechunk %d, element %llu", k,
                         (unsigned long long)i);
        cr_assert_eq(l[k].mislabelled, 0, "rechunk %d: blocks with another chunk's label", k);
    }
    struct sl_pool_buf_stats bs;
    sl_pool_buf_get_stats(pool, &bs);
    /* 28 stored chunks, and one assembled buffer for each of the 4 x 2
     * chunks of 16 x 20 (each meets 2 x 2 or 1 x 2 stored chunks); the
     * 7 x 8 chunks of 8 x 5 are views. */
    cr_assert_eq(bs.n_allocs, 28 + 8, "%llu chunk buffers", (unsigned long long)bs.n_allocs);
    cr_assert_eq(s->bad_requests, 0);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    for (int k = 0; k < 2; k++)
        free(l[k].c.data);
    free(l);
    free(s);
}

/* A failing stored chunk fails its output chunk, named, and the rest go on. */
Test(graph_exec, failing_chunk_is_recorded_and_others_go_on)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    uint32_t raw = add_strict(g, s, 2, (const uint64_t[]){40, 40}, (const uint64_t[]){10, 10});
    s->fail_linear = 5; /* chunk (1, 1) */
    struct collector c;
    uint32_t out = add_collector(g, "out", raw, &c);
    sl_plan *plan = prepare(g, NULL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, "chunk 5 is corrupt"), "%s", err.text);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, out, &ps, NULL), SL_OK);
    cr_assert_eq(ps.n_ok, 15);
    cr_assert_eq(ps.codes[5], SL_ECORRUPT);
    size_t n;
    const struct sl_chunk_error *e = sl_plan_errors(plan, &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(e[0].key.idx[0], 1);
    cr_assert_eq(e[0].key.idx[1], 1);
    cr_assert_not_null(strstr(e[0].text, "getter \"raw\" chunk (1, 1)"), "%s", e[0].text);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c.data);
    free(s);
}

/* A failed intermediate chunk marks its readers upstream-failed without running them. */
Test(graph_exec, failed_intermediate_marks_dependents_upstream)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    uint32_t raw = add_strict(g, s, 1, (const uint64_t[]){100}, (const uint64_t[]){10});
    s->fail_linear = 4; /* elements [40, 50) */
    struct sl_op op;
    bind_downsample(&op, (const uint64_t[]){2}, 1, "max");
    uint32_t ds;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_op(g, "ds", raw, &op, (const uint64_t[]){10}, &ds, &err), SL_OK);
    struct collector c1, c2;
    uint32_t a = add_collector(g, "a", ds, &c1);
    uint32_t b = add_collector(g, "b", raw, &c2);
    sl_plan *plan = prepare(g, NULL);
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_ECORRUPT);
    struct sl_put_status pa, pb;
    cr_assert_eq(sl_plan_put_status(plan, a, &pa, NULL), SL_OK);
    cr_assert_eq(sl_plan_put_status(plan, b, &pb, NULL), SL_OK);
    cr_assert_eq(pa.codes[2], SL_EUPSTREAM, "ds chunk 2 reads raw chunk 4");
    cr_assert_eq(pa.n_ok, 4);
    cr_assert_eq(pb.codes[4], SL_EUPSTREAM);
    cr_assert_eq(pb.n_ok, 9);
    size_t n;
    const struct sl_chunk_error *e = sl_plan_errors(plan, &n);
    cr_assert_eq(n, 2);
    for (size_t i = 0; i < n; i++)
        cr_assert_not_null(strstr(e[i].text, "upstream ECORRUPT: getter \"raw\" chunk (4)"), "%s",
                           e[i].text);
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_eq(sum.n_upstream, 2);
    cr_assert_eq(sum.first_error, SL_ECORRUPT);
    cr_assert_eq(sum.run_error, SL_OK, "chunks failed; the run itself went on");
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c1.data);
    free(c2.data);
    free(s);
}

Test(graph_exec, fail_fast_cancels_what_has_not_started)
{
    sl_pool *pool = sl_test_pool(1);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    uint32_t raw = add_strict(g, s, 1, (const uint64_t[]){2000}, (const uint64_t[]){1});
    struct collector c;
    uint32_t out = add_collector(g, "out", raw, &c);
    /* Chunk 0 fails at once; every other chunk takes 1 ms, so whatever
     * thread runs them sees the cancellation long before the end. */
    c.fail_at_start0 = 0;
    c.slow_us = 1000;
    struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
    o.policy = SL_POLICY_FAIL_FAST;
    sl_plan *plan = prepare(g, &o);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_EIO);
    cr_assert_not_null(strstr(err.text, "disk full at 0"), "%s", err.text);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, out, &ps, NULL), SL_OK);
    cr_assert_eq(ps.codes[0], SL_EIO);
    for (uint64_t k = 1; k < 2000; k++)
        cr_assert(ps.codes[k] == SL_OK || ps.codes[k] == SL_ECANCELED, "chunk %llu: %s",
                  (unsigned long long)k, sl_status_name((sl_status)ps.codes[k]));
    cr_assert_eq(ps.codes[1999], SL_ECANCELED, "the last chunk never ran");
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_gt(sum.n_canceled, 1000, "only %llu cancelled", (unsigned long long)sum.n_canceled);
    cr_assert_eq(sum.n_failed, 1);
    cr_assert_lt(c.calls, 2000);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c.data);
    free(s);
}

Test(graph_exec, budget_is_honoured_and_too_small_is_refused)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    uint32_t raw = add_strict(g, s, 2, (const uint64_t[]){64, 64}, (const uint64_t[]){8, 8});
    struct sl_op op;
    bind_downsample(&op, (const uint64_t[]){2, 2}, 2, "mean");
    uint32_t ds;
    cr_assert_eq(sl_graph_add_op(g, "ds", raw, &op, (const uint64_t[]){8, 8}, &ds, NULL), SL_OK);
    struct collector c;
    add_collector(g, "out", ds, &c);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    /* A ds task holds its output (512 B) and 4 input chunks (4 x 512 B);
     * the chunks are reduced one by one, never assembled. */
    struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
    o.memory_budget = 2000;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_plan_create(g, &o, &err));
    cr_assert_eq(err.code, SL_EBUDGET);
    cr_assert_not_null(strstr(err.text, "2000 bytes is below the 2560 bytes"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "512 for its own chunks and 2048 for the input"), "%s",
                       err.text);
    o.memory_budget = 3072;
    sl_plan *plan = sl_plan_create(g, &o, &err);
    cr_assert_not_null(plan, "%s", err.text);
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &e2), SL_OK, "%s", e2.text);
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_leq(sum.peak_bytes, 3072, "peak %zu", sum.peak_bytes);
    cr_assert_gt(sum.peak_bytes, 0);
    o.memory_budget = 1 << 20;
    sl_plan *roomy = sl_plan_create(g, &o, &err);
    cr_assert_eq(sl_plan_run(roomy, pool, &e2), SL_OK, "%s", e2.text);
    sl_plan_summary(roomy, &sum);
    cr_assert_leq(sum.peak_bytes, 1 << 20);
    for (uint64_t i = 0; i < 32 * 32; i++)
        cr_assert(!isnan(c.data[i]));
    sl_plan_destroy(plan);
    sl_plan_destroy(roomy);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c.data);
    free(s);
}

Test(graph_exec, sealed_graph_runs_again_with_fresh_status)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    uint32_t raw = add_strict(g, s, 1, (const uint64_t[]){100}, (const uint64_t[]){10});
    struct collector c;
    uint32_t out = add_collector(g, "out", raw, &c);
    sl_plan *plan = prepare(g, NULL);
    struct sl_error err = SL_ERROR_INIT;
    s->fail_linear = 3;
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_ECORRUPT);
    s->fail_linear = -1;
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &e2), SL_OK, "%s", e2.text);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, out, &ps, NULL), SL_OK);
    cr_assert_eq(ps.n_ok, 10);
    size_t n;
    sl_plan_errors(plan, &n);
    cr_assert_eq(n, 0);
    for (unsigned k = 0; k < 10; k++)
        cr_assert_eq(s->calls[k], 2);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c.data);
    free(s);
}

/* Two inputs on one grid: a blockwise sum sees the same chunk of each. */
static sl_status
add_blocks(void *ctx, struct sl_block *out, size_t n_inputs, const struct sl_block *in,
           struct sl_error *err)
{
    (void)ctx;
    (void)err;
    cr_assert_eq(n_inputs, 2);
    cr_assert(sl_region_equal(&in[0].region, &out->region));
    cr_assert(sl_region_equal(&in[1].region, &out->region));
    cr_assert(sl_chunk_key_equal(&in[0].chunk, &out->chunk));
    uint64_t n = sl_view_count(&out->view);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t rem = i, o0 = 0, o1 = 0;
        for (uint32_t d = out->view.rank; d-- > 0;) {
            uint64_t k = rem % out->view.shape[d];
            rem /= out->view.shape[d];
            o0 += k * (uint64_t)in[0].view.stride[d];
            o1 += k * (uint64_t)in[1].view.stride[d];
        }
        ((double *)out->view.data)[i] =
            ((const double *)in[0].view.data)[o0] + 2 * ((const double *)in[1].view.data)[o1];
    }
    return SL_OK;
}

Test(graph_exec, multi_input_map_sees_matching_chunks)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s1 = calloc(1, sizeof(*s1)), *s2 = calloc(1, sizeof(*s2));
    const uint64_t shape[] = {20, 30}, chunk[] = {7, 11};
    uint32_t in[2];
    in[0] = add_strict(g, s1, 2, shape, chunk);
    const struct sl_getter_desc d2 = {.array_name = "b",
                                      .dtype = SL_DTYPE_F64,
                                      .rank = 2,
                                      .shape = shape,
                                      .chunk_shape = chunk,
                                      .fn = strict_get,
                                      .ctx = s2};
    memcpy(s2, s1, sizeof(*s1));
    cr_assert_eq(sl_graph_add_getter(g, "b", &d2, &in[1], NULL), SL_OK);
    const struct sl_map_desc md = {.op_name = "axpy", .fn = add_blocks, .out_dtype = SL_DTYPE_F64};
    uint32_t m;
    cr_assert_eq(sl_graph_add_map(g, "m", 2, in, &md, &m, NULL), SL_OK);
    struct collector c;
    add_collector(g, "out", m, &c);
    sl_plan *plan = prepare(g, NULL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    for (uint64_t i = 0; i < 600; i++)
        cr_assert_eq(c.data[i], 3.0 * (double)i);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c.data);
    free(s1);
    free(s2);
}

struct progress_log {
    unsigned calls;
    bool saw_final;
    struct sl_progress last;
};

static void
on_progress(void *ctx, const struct sl_progress *p)
{
    struct progress_log *log = ctx;
    log->calls++;
    log->saw_final |= p->final;
    log->last = *p;
}

Test(graph_exec, progress_trace_and_report)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct strict_getter *s = calloc(1, sizeof(*s));
    uint32_t raw = add_strict(g, s, 1, (const uint64_t[]){1000}, (const uint64_t[]){10});
    s->fail_linear = 7;
    struct collector c;
    add_collector(g, "out", raw, &c);
    const char *dir = sl_test_tmpdir("exec");
    char trace[4096];
    snprintf(trace, sizeof(trace), "%s/trace.json", dir);
    struct progress_log log = {0};
    struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
    o.progress = on_progress;
    o.progress_ctx = &log;
    o.trace_path = trace;
    sl_plan *plan = prepare(g, &o);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_ECORRUPT);
    cr_assert(log.saw_final);
    cr_assert_eq(log.last.chunks_done, 100);
    cr_assert_eq(log.last.chunks_total, 100);
    cr_assert_eq(log.last.chunks_failed, 1);
    cr_assert_eq(log.last.bytes_total, 8000);
    cr_assert_eq(log.last.bytes_done, 8000);

    json_error_t jerr;
    json_t *t = json_load_file(trace, 0, &jerr);
    cr_assert_not_null(t, "trace is not JSON: %s at %d:%d", jerr.text, jerr.line, jerr.column);
    json_t *events = json_object_get(t, "traceEvents");
    size_t n_x = 0, chunks = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        if (strcmp(json_string_value(json_object_get(e, "ph")), "X") != 0)
            continue;
        n_x++;
        cr_assert_str_eq(json_string_value(json_object_get(e, "name")), "raw+out");
        chunks += (size_t)json_integer_value(json_object_get(json_object_get(e, "args"), "chunks"));
    }
    cr_assert_gt(n_x, 0);
    cr_assert_eq(chunks, 100, "every chunk appears in the trace once");
    json_decref(t);

    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    cr_assert_eq(sl_plan_write_report(plan, mem, NULL), SL_OK);
    fclose(mem);
    json_t *r = json_loads(text, 0, &jerr);
    cr_assert_not_null(r, "report is not JSON: %s\n%s", jerr.text, text);
    cr_assert(json_is_false(json_object_get(r, "ok")));
    json_t *put = json_array_get(json_object_get(r, "puts"), 0);
    cr_assert_eq(json_integer_value(json_object_get(put, "failed")), 1);
    json_t *f0 = json_array_get(json_object_get(put, "failures"), 0);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(f0, "chunk"), 0)), 7);
    cr_assert_str_eq(json_string_value(json_object_get(f0, "code")), "ECORRUPT");
    cr_assert_not_null(strstr(json_string_value(json_object_get(f0, "message")), "corrupt"));
    json_decref(r);
    free(text);
    sl_test_rmtree(dir);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    free(c.data);
    free(s);
}
