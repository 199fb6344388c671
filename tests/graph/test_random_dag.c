/* SPDX-License-Identifier: MIT */
/*
 * Differential test of the executor: random graphs (selections, single and
 * concatenated slices, elementwise ops, user maps with two inputs,
 * downsampling with random factors and chunks, rechunks, halo regrids, one
 * or two putters) run on the pool with random budgets, and every output is
 * compared with a plain serial evaluation of the same graph on whole
 * arrays.  Random chunk shapes make edges fused and unfused at random, so
 * intermediates, shared chunks and assembled regions all get exercised.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "graph_test_util.h"

TestSuite(graph_random_dag, .timeout = 120.0);

#define MAX_NODES 12

/* A whole array in memory: float64, rank <= 3. */
struct dense {
    uint32_t rank;
    uint64_t shape[3];
    double *v;
};

static uint64_t
dense_count(const struct dense *a)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < a->rank; d++)
        n *= a->shape[d];
    return n;
}

static struct dense
dense_new(uint32_t rank, const uint64_t *shape)
{
    struct dense a = {.rank = rank};
    memcpy(a.shape, shape, rank * sizeof(uint64_t));
    a.v = calloc(dense_count(&a) ? dense_count(&a) : 1, sizeof(double));
    return a;
}

/* Linear index of `idx` in `a`. */
static uint64_t
dense_at(const struct dense *a, const uint64_t *idx)
{
    uint64_t lin = 0;
    for (uint32_t d = 0; d < a->rank; d++)
        lin = lin * a->shape[d] + idx[d];
    return lin;
}

/* Step `idx` through `shape` in C order; false after the last. */
static bool
idx_next(uint64_t *idx, const uint64_t *shape, uint32_t rank)
{
    for (uint32_t d = rank; d-- > 0;) {
        if (++idx[d] < shape[d])
            return true;
        idx[d] = 0;
    }
    return false;
}

static uint64_t
rnd(uint64_t lo, uint64_t hi) /* inclusive */
{
    return lo + (uint64_t)rand() % (hi - lo + 1);
}

/* What the reference evaluates for each node. */
enum ref_kind { REF_SOURCE, REF_SELECT, REF_SCALE, REF_ADD, REF_DOWN, REF_SAME };

struct ref_node {
    enum ref_kind kind;
    uint32_t in[2];
    struct sl_region slices[2];
    size_t n_slices;
    uint32_t axis;
    uint64_t factor[3];
    bool max;
    struct dense out;
};

/* The user map of REF_ADD nodes: a + 2b. */
static sl_status
map_axpy(void *ctx, struct sl_block *out, size_t n, const struct sl_block *in, struct sl_error *err)
{
    (void)ctx;
    (void)err;
    cr_assert_eq(n, 2);
    uint64_t idx[SL_MAX_RANK] = {0};
    uint64_t k = 0;
    double *o = out->view.data;
    do {
        int64_t a = 0, b = 0;
        for (uint32_t d = 0; d < out->view.rank; d++) {
            a += (int64_t)idx[d] * in[0].view.stride[d];
            b += (int64_t)idx[d] * in[1].view.stride[d];
        }
        o[k++] = ((const double *)in[0].view.data)[a] + 2 * ((const double *)in[1].view.data)[b];
    } while (out->view.rank > 0 && idx_next(idx, out->view.shape, out->view.rank));
    return SL_OK;
}

/* A halo regrid's function: the centre of its input region. */
static sl_status
regrid_centre(void *ctx, struct sl_block *out, const struct sl_block *in, struct sl_error *err)
{
    (void)ctx;
    struct sl_block part;
    sl_status st = sl_block_slice(in, &out->region, &part, err);
    return st != SL_OK ? st : sl_view_copy(&out->view, &part.view, err);
}

/* Serial reference for node `r` from its inputs' dense arrays. */
static void
ref_eval(struct ref_node *nodes, struct ref_node *r)
{
    const struct dense *a = &nodes[r->in[0]].out;
    uint64_t idx[3] = {0};
    switch (r->kind) {
    case REF_SOURCE:
        break;
    case REF_SAME:
        r->out = dense_new(a->rank, a->shape);
        memcpy(r->out.v, a->v, dense_count(a) * sizeof(double));
        break;
    case REF_SCALE:
        r->out = dense_new(a->rank, a->shape);
        for (uint64_t i = 0; i < dense_count(a); i++)
            r->out.v[i] = a->v[i] * 2 + 1;
        break;
    case REF_ADD: {
        const struct dense *b = &nodes[r->in[1]].out;
        r->out = dense_new(a->rank, a->shape);
        for (uint64_t i = 0; i < dense_count(a); i++)
            r->out.v[i] = a->v[i] + 2 * b->v[i];
        break;
    }
    case REF_SELECT: {
        uint64_t shape[3];
        for (uint32_t d = 0; d < a->rank; d++)
            shape[d] = r->slices[0].stop[d] - r->slices[0].start[d];
        if (r->n_slices == 2)
            shape[r->axis] += r->slices[1].stop[r->axis] - r->slices[1].start[r->axis];
        r->out = dense_new(a->rank, shape);
        do {
            uint64_t src[3];
            for (uint32_t d = 0; d < a->rank; d++)
                src[d] = idx[d] + r->slices[0].start[d];
            uint64_t first = r->slices[0].stop[r->axis] - r->slices[0].start[r->axis];
            if (r->n_slices == 2 && idx[r->axis] >= first)
                src[r->axis] = idx[r->axis] - first + r->slices[1].start[r->axis];
            r->out.v[dense_at(&r->out, idx)] = a->v[dense_at(a, src)];
        } while (idx_next(idx, shape, a->rank));
        break;
    }
    case REF_DOWN: {
        uint64_t shape[3];
        for (uint32_t d = 0; d < a->rank; d++)
            shape[d] = (a->shape[d] + r->factor[d] - 1) / r->factor[d];
        r->out = dense_new(a->rank, shape);
        do {
            double acc = r->max ? -INFINITY : 0;
            uint64_t n = 0, lo[3], hi[3], j[3];
            for (uint32_t d = 0; d < a->rank; d++) {
                lo[d] = idx[d] * r->factor[d];
                hi[d] = lo[d] + r->factor[d] < a->shape[d] ? lo[d] + r->factor[d] : a->shape[d];
                j[d] = lo[d];
            }
            for (;;) {
                double x = a->v[dense_at(a, j)];
                acc = r->max ? (x > acc ? x : acc) : acc + x;
                n++;
                uint32_t d = a->rank;
                while (d > 0 && ++j[d - 1] == hi[d - 1]) {
                    j[d - 1] = lo[d - 1];
                    d--;
                }
                if (d == 0)
                    break;
            }
            r->out.v[dense_at(&r->out, idx)] = r->max ? acc : acc / (double)n;
        } while (idx_next(idx, shape, a->rank));
        break;
    }
    }
}

/* Collects a putter's chunks into a dense array. */
struct sink {
    struct dense got;
    _Atomic unsigned calls;
};

static sl_status
sink_put(void *ctx, const char *name, const struct sl_block *b, struct sl_error *err)
{
    struct sink *s = ctx;
    (void)name;
    (void)err;
    atomic_fetch_add(&s->calls, 1);
    uint64_t idx[SL_MAX_RANK] = {0};
    do {
        int64_t off = 0;
        uint64_t g[3];
        for (uint32_t d = 0; d < b->view.rank; d++) {
            off += (int64_t)idx[d] * b->view.stride[d];
            g[d] = b->region.start[d] + idx[d];
        }
        s->got.v[dense_at(&s->got, g)] = ((const double *)b->view.data)[off];
    } while (b->view.rank > 0 && idx_next(idx, b->view.shape, b->view.rank));
    return SL_OK;
}

/* Random chunk shape for `shape`. */
static void
random_chunks(uint32_t rank, const uint64_t *shape, uint64_t *chunk)
{
    for (uint32_t d = 0; d < rank; d++)
        chunk[d] = rnd(1, shape[d] > 1 ? shape[d] : 1);
}

/* Add a random node reading earlier nodes; returns false if none fits. */
static bool
add_random_node(sl_graph *g, struct ref_node *refs, uint32_t n, uint32_t *ids)
{
    uint32_t src = (uint32_t)rnd(0, n - 1);
    struct sl_node_info info;
    cr_assert_eq(sl_graph_node_info(g, ids[src], &info, NULL), SL_OK);
    const struct sl_grid *grid = info.grid;
    struct ref_node *r = &refs[n];
    memset(r, 0, sizeof(*r));
    r->in[0] = src;
    char name[16];
    snprintf(name, sizeof(name), "n%u", n);
    struct sl_error err = SL_ERROR_INIT;
    uint64_t chunk[3];
    switch (rnd(0, 5)) {
    case 0: { /* select */
        r->kind = REF_SELECT;
        r->n_slices = rnd(1, 2);
        r->axis = (uint32_t)rnd(0, grid->rank - 1);
        for (uint32_t d = 0; d < grid->rank; d++) {
            if (grid->shape[d] < 2)
                return false;
            uint64_t a = rnd(0, grid->shape[d] / 2 - 1), b = rnd(a + 1, grid->shape[d] / 2);
            uint64_t c = rnd(grid->shape[d] / 2, grid->shape[d] - 1);
            uint64_t e = rnd(c + 1, grid->shape[d]);
            r->slices[0].rank = r->slices[1].rank = grid->rank;
            r->slices[0].start[d] = a;
            r->slices[0].stop[d] = b;
            bool along = d == r->axis;
            r->slices[1].start[d] = along ? c : a;
            r->slices[1].stop[d] = along ? e : b;
        }
        const struct sl_select_desc sd = {
            .n_slices = r->n_slices, .slices = r->slices, .axis = r->axis};
        cr_assert_eq(sl_graph_add_select(g, name, ids[src], &sd, &ids[n], &err), SL_OK, "%s",
                     err.text);
        return true;
    }
    case 1: { /* built-in scale */
        r->kind = REF_SCALE;
        const struct sl_op_desc *d = NULL;
        cr_assert_eq(sl_op_lookup("scale", &d, NULL), SL_OK);
        struct sl_op_args args;
        memset(&args, 0, sizeof(args));
        cr_assert_eq(sl_op_args_set_number(&args, d, "scale", 2, NULL), SL_OK);
        cr_assert_eq(sl_op_args_set_number(&args, d, "offset", 1, NULL), SL_OK);
        struct sl_op op;
        cr_assert_eq(sl_op_bind(&op, d, &args, SL_DTYPE_F64, grid->rank, &err), SL_OK, "%s",
                     err.text);
        cr_assert_eq(sl_graph_add_op(g, name, ids[src], &op, NULL, &ids[n], &err), SL_OK, "%s",
                     err.text);
        return true;
    }
    case 2: { /* user map of the source and a rechunked or selected sibling on its grid */
        r->kind = REF_ADD;
        r->in[1] = src;
        uint32_t in2[2] = {ids[src], ids[src]};
        const struct sl_map_desc md = {
            .op_name = "axpy", .fn = map_axpy, .out_dtype = SL_DTYPE_F64};
        cr_assert_eq(sl_graph_add_map(g, name, 2, in2, &md, &ids[n], &err), SL_OK, "%s", err.text);
        return true;
    }
    case 3: { /* downsample */
        r->kind = REF_DOWN;
        r->max = rnd(0, 1) == 1;
        for (uint32_t d = 0; d < grid->rank; d++)
            r->factor[d] = rnd(1, 3);
        const struct sl_op_desc *d = NULL;
        cr_assert_eq(sl_op_lookup("downsample", &d, NULL), SL_OK);
        struct sl_op_args args;
        memset(&args, 0, sizeof(args));
        cr_assert_eq(sl_op_args_set_factors(&args, d, "factors", grid->rank, r->factor, NULL),
                     SL_OK);
        cr_assert_eq(sl_op_args_set_string(&args, d, "method", r->max ? "max" : "mean", NULL),
                     SL_OK);
        struct sl_op op;
        cr_assert_eq(sl_op_bind(&op, d, &args, SL_DTYPE_F64, grid->rank, &err), SL_OK, "%s",
                     err.text);
        uint64_t shape[3];
        for (uint32_t k = 0; k < grid->rank; k++)
            shape[k] = (grid->shape[k] + r->factor[k] - 1) / r->factor[k];
        random_chunks(grid->rank, shape, chunk);
        cr_assert_eq(sl_graph_add_op(g, name, ids[src], &op, chunk, &ids[n], &err), SL_OK, "%s",
                     err.text);
        return true;
    }
    case 4: /* rechunk */
        r->kind = REF_SAME;
        random_chunks(grid->rank, grid->shape, chunk);
        cr_assert_eq(sl_graph_add_rechunk(g, name, ids[src], chunk, &ids[n], &err), SL_OK, "%s",
                     err.text);
        return true;
    default: { /* halo regrid returning its centre */
        r->kind = REF_SAME;
        uint64_t lo[3], hi[3];
        for (uint32_t d = 0; d < grid->rank; d++) {
            lo[d] = rnd(0, 2);
            hi[d] = rnd(0, 2);
        }
        random_chunks(grid->rank, grid->shape, chunk);
        const struct sl_regrid_desc rd = {.op_name = "centre",
                                          .fn = regrid_centre,
                                          .out_dtype = SL_DTYPE_F64,
                                          .chunk_shape = chunk,
                                          .halo_lo = lo,
                                          .halo_hi = hi};
        cr_assert_eq(sl_graph_add_regrid(g, name, ids[src], &rd, &ids[n], &err), SL_OK, "%s",
                     err.text);
        return true;
    }
    }
}

/* Build one random graph, run it, compare every output with the reference. */
static void
random_trial(sl_pool *pool, unsigned trial, unsigned *n_budget_stops)
{
    struct ref_node refs[MAX_NODES];
    uint32_t ids[MAX_NODES];
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t rank = (uint32_t)rnd(1, 3);
    uint64_t shape[3], chunk[3];
    for (uint32_t d = 0; d < rank; d++)
        shape[d] = rnd(rank == 1 ? 20 : 6, rank == 1 ? 200 : 24);
    random_chunks(rank, shape, chunk);
    ids[0] = sl_test_add_getter(g, "src", rank, shape, chunk);
    memset(&refs[0], 0, sizeof(refs[0]));
    refs[0].kind = REF_SOURCE;
    refs[0].out = dense_new(rank, shape);
    for (uint64_t i = 0; i < dense_count(&refs[0].out); i++)
        refs[0].out.v[i] = (double)i; /* what the iota getter writes */
    uint32_t n = 1, want = (uint32_t)rnd(2, MAX_NODES);
    for (unsigned tries = 0; n < want && tries < 100; tries++)
        if (add_random_node(g, refs, n, ids))
            ref_eval(refs, &refs[n++]);

    /* A putter on every node nobody reads, and on one random inner node. */
    struct sink sinks[MAX_NODES];
    uint32_t checks[MAX_NODES], n_sinks = 0, extra = (uint32_t)rnd(0, n - 1);
    for (uint32_t i = 0; i < n; i++) {
        struct sl_node_info info;
        cr_assert_eq(sl_graph_node_info(g, ids[i], &info, NULL), SL_OK);
        if (info.n_consumers > 0 && i != extra)
            continue;
        struct sink *s = &sinks[n_sinks];
        checks[n_sinks++] = i;
        atomic_init(&s->calls, 0);
        s->got = dense_new(refs[i].out.rank, refs[i].out.shape);
        for (uint64_t k = 0; k < dense_count(&s->got); k++)
            s->got.v[k] = NAN;
        char name[16];
        snprintf(name, sizeof(name), "out%u", i);
        const struct sl_putter_desc pd = {.fn = sink_put, .ctx = s};
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_graph_add_putter(g, name, ids[i], &pd, NULL, &err), SL_OK, "%s", err.text);
    }
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_seal(g, &err), SL_OK, "trial %u: %s", trial, err.text);
    struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
    sl_plan *probe = sl_plan_create(g, &o, &err);
    cr_assert_not_null(probe, "trial %u: %s", trial, err.text);
    /* No budget, or one a few times what the most demanding task needs.  A
     * tight budget may not hold the intermediate chunks a graph keeps for
     * later readers: the run must then stop with SL_EBUDGET, never exceed
     * it, and the graph is run again without a budget. */
    o.memory_budget = rnd(0, 2) == 0 ? 0 : probe->min_budget * (size_t)rnd(1, 6);
    sl_plan_destroy(probe);
    sl_plan *plan = sl_plan_create(g, &o, &err);
    cr_assert_not_null(plan, "trial %u: %s", trial, err.text);
    sl_status st = sl_plan_run(plan, pool, &err);
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    if (o.memory_budget != 0)
        cr_assert_leq(sum.peak_bytes, o.memory_budget, "trial %u: peak %zu over budget %zu", trial,
                      sum.peak_bytes, o.memory_budget);
    if (st == SL_EBUDGET && o.memory_budget != 0) {
        cr_assert_not_null(strstr(err.text, "held by intermediate chunks"), "%s", err.text);
        cr_assert_eq(sum.run_error, SL_EBUDGET, "trial %u: the run could not go on", trial);
        (*n_budget_stops)++;
        for (uint32_t k = 0; k < n_sinks; k++)
            for (uint64_t i = 0; i < dense_count(&sinks[k].got); i++)
                sinks[k].got.v[i] = NAN;
        sl_plan_destroy(plan);
        o.memory_budget = 0;
        plan = sl_plan_create(g, &o, &err);
        cr_assert_not_null(plan);
        err = SL_ERROR_INIT;
        st = sl_plan_run(plan, pool, &err);
    }
    if (st != SL_OK) {
        if (sl_plan_explain(plan, stderr, NULL) != SL_OK)
            fprintf(stderr, "(explain failed)\n");
        cr_assert_fail("trial %u: run failed: %s", trial, err.text);
    }
    for (uint32_t k = 0; k < n_sinks; k++) {
        const struct dense *want_arr = &refs[checks[k]].out, *got = &sinks[k].got;
        for (uint64_t i = 0; i < dense_count(want_arr); i++) {
            double w = want_arr->v[i], v = got->v[i];
            if (!(fabs(v - w) <= 1e-9 * (fabs(w) + 1))) {
                if (sl_plan_explain(plan, stderr, NULL) != SL_OK)
                    fprintf(stderr, "(explain failed)\n");
                cr_assert_fail("trial %u: node n%u element %llu is %g, want %g", trial, checks[k],
                               (unsigned long long)i, v, w);
            }
        }
        free(sinks[k].got.v);
    }
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    for (uint32_t i = 0; i < n; i++)
        free(refs[i].out.v);
}

Test(graph_random_dag, random_graphs_match_serial_reference)
{
    struct sl_pool_opts po = SL_POOL_OPTS_DEFAULT;
    po.n_workers = 2;
    po.pin = SL_PIN_NONE;
    sl_pool *pool = sl_pool_create(&po, NULL);
    cr_assert_not_null(pool);
    const char *seed_env = getenv("SL_TEST_SEED");
    unsigned seed = seed_env != NULL ? (unsigned)strtoul(seed_env, NULL, 10) : 20261129u;
    /* A soak raises the trials: SL_TEST_TRIALS=100000 SL_TEST_SEED=$RANDOM. */
    const char *trials_env = getenv("SL_TEST_TRIALS");
    unsigned trials = trials_env != NULL ? (unsigned)strtoul(trials_env, NULL, 10) : 150u;
    cr_log_info("seed %u (SL_TEST_SEED), %u trials (SL_TEST_TRIALS)", seed, trials);
    srand(seed);
    unsigned n_budget_stops = 0;
    for (unsigned trial = 0; trial < trials; trial++)
        random_trial(pool, trial, &n_budget_stops);
    sl_pool_destroy(pool);
    cr_log_info("%u of %u runs stopped at a tight budget and reran without one", n_budget_stops,
                trials);
}
