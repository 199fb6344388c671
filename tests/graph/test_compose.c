/* SPDX-License-Identifier: MIT */
/*
 * Composition of elementwise chains (graph/compose.c): random chains of
 * expr, cast, scale, clip and threshold over inputs full of NaN, infinities,
 * signed zeros, halves and values past every range give byte-identical
 * results composed and evaluated node by node (the same graph with every
 * elementwise node marked unfusable, which the planner never composes);
 * explain names the programs and why chains stay apart; a failed input
 * chunk fails the same output chunks with the same messages either way.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_test_util.h"

/* One pool for every run of a test (each test is a process of its own). */
static sl_pool *test_pool;

static void
pool_fini(void)
{
    sl_pool_destroy(test_pool);
    test_pool = NULL;
}

TestSuite(graph_compose, .timeout = 60.0, .fini = pool_fini);

#define ROWS 37
#define COLS 53

/* The input: values of `dtype` from a seed; chunk (fail_row, *) fails. */
struct src {
    sl_dtype dtype;
    uint64_t seed;
    int64_t fail_row; /* chunk row whose read fails, or -1 */
};

/* A putter's collected array. */
struct sink {
    sl_dtype dtype;
    unsigned char *data; /* ROWS x COLS elements */
};

static uint64_t
mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* A value with a good chance of being a hard case for some cast or op. */
static double
tricky(uint64_t h)
{
    if ((h & 15) == 1)
        return (h >> 4) & 1 ? -0.0 : 0.0;
    static const double special[] = {
        0.0,          -0.0,          0.5,   -0.5,     1.5,      2.5,    -2.5,   255.5,
        256.0,        -129.0,        127.5, 32767.5,  65535.5,  1e10,   -1e10,  4294967295.5,
        2147483647.5, -2147483648.5, 1e300, -1e300,   1e-310,   3.4e38, 3.5e38, -3.5e38,
        0.1,          NAN,           -NAN,  INFINITY, -INFINITY};
    const size_t ns = sizeof(special) / sizeof(special[0]);
    if ((h & 3) == 0)
        return special[(h >> 2) % ns];
    /* Otherwise something in [-70000, 70000) with a fractional part. */
    return (double)((int64_t)((h >> 8) % 140000) - 70000) + (double)((h >> 40) % 8) / 8.0;
}

static sl_status
src_get(void *ctx, const char *array_name, const struct sl_region *region, struct sl_block *out,
        struct sl_error *err)
{
    (void)array_name;
    const struct src *s = ctx;
    if (s->fail_row >= 0 && region->start[0] / 16 == (uint64_t)s->fail_row)
        return sl_error_set(err, SL_EIO, NULL, "injected read failure");
    const uint64_t n0 = region->stop[0] - region->start[0], n1 = region->stop[1] - region->start[1];
    for (uint64_t i = 0; i < n0; i++) {
        for (uint64_t j = 0; j < n1; j++) {
            const uint64_t lin = (region->start[0] + i) * COLS + region->start[1] + j;
            double v = tricky(mix(lin ^ (s->seed << 20)));
            double elem[1] = {v};
            /* Store through the one-element cast of the kernels, so every
             * dtype gets its saturated, rounded value of v. */
            struct sl_view src_v, dst_v;
            cr_assert_eq(sl_view_init(&src_v, SL_DTYPE_F64, 1, (const uint64_t[]){1}, elem, NULL),
                         SL_OK);
            unsigned char *base = out->view.data;
            const ptrdiff_t off =
                (ptrdiff_t)(i * (uint64_t)out->view.stride[0] + j * (uint64_t)out->view.stride[1]) *
                (ptrdiff_t)sl_dtype_size(s->dtype);
            cr_assert_eq(sl_view_init(&dst_v, s->dtype, 1, (const uint64_t[]){1}, base + off, NULL),
                         SL_OK);
            if (s->dtype == SL_DTYPE_BOOL)
                base[off] = (unsigned char)((mix(lin) & 7) == 0 ? 0 : (mix(lin) & 7) == 1 ? 2 : 1);
            else
                cr_assert_eq(sl_cast(&src_v, &dst_v, NULL), SL_OK);
        }
    }
    return SL_OK;
}

static sl_status
sink_put(void *ctx, const char *name, const struct sl_block *block, struct sl_error *err)
{
    (void)name;
    struct sink *k = ctx;
    struct sl_view all, part;
    sl_status st = sl_view_init(&all, k->dtype, 2, (const uint64_t[]){ROWS, COLS}, k->data, err);
    if (st == SL_OK)
        st = sl_view_slice(&all, &block->region, &part, err);
    return st == SL_OK ? sl_view_copy(&part, &block->view, err) : st;
}

/* One node of a chain. */
struct step {
    const char *op; /* "expr", "cast", "scale", "clip", "threshold" */
    const char *text;
    double a, b;    /* scale/offset, min/max, threshold/value */
    sl_dtype dtype; /* output */
    sl_dtype compute;
};

/* How a chain is evaluated. */
enum mode {
    COMPOSED, /* as planned */
    SEPARATE, /* the same stages, the composition dropped: node by node over buffers */
    UNFUSABLE /* every elementwise node marked unfusable: a stage each */
};

/* The graph of src -> steps -> putter into `sink`; ids of the steps in `ids`. */
static sl_graph *
chain_graph(struct src *s, const struct step *steps, size_t n, bool fusable, struct sink *sink,
            uint32_t *ids, uint32_t *put)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    const struct sl_getter_desc gd = {.array_name = "in",
                                      .dtype = s->dtype,
                                      .rank = 2,
                                      .shape = (const uint64_t[]){ROWS, COLS},
                                      .chunk_shape = (const uint64_t[]){16, 32},
                                      .fn = src_get,
                                      .ctx = s};
    struct sl_error err = SL_ERROR_INIT;
    uint32_t cur;
    cr_assert_eq(sl_graph_add_getter(g, "in", &gd, &cur, &err), SL_OK, "%s", err.text);
    for (size_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%zu", i);
        const struct step *st = &steps[i];
        if (strcmp(st->op, "expr") == 0) {
            const char *names[] = {"x"};
            const struct sl_expr_desc ed = {
                .text = st->text, .names = names, .out_dtype = st->dtype, .compute = st->compute};
            cr_assert_eq(sl_graph_add_expr(g, name, 1, &cur, &ed, &cur, &err), SL_OK, "%s: %s",
                         st->text, err.text);
        } else {
            const struct sl_op_desc *d;
            cr_assert_eq(sl_op_lookup(st->op, &d, &err), SL_OK);
            struct sl_op_args args;
            memset(&args, 0, sizeof(args));
            const char *p0 = strcmp(st->op, "scale") == 0  ? "scale"
                             : strcmp(st->op, "clip") == 0 ? "min"
                                                           : "threshold";
            const char *p1 = strcmp(st->op, "scale") == 0  ? "offset"
                             : strcmp(st->op, "clip") == 0 ? "max"
                                                           : "value";
            if (strcmp(st->op, "cast") != 0) {
                cr_assert_eq(sl_op_args_set_number(&args, d, p0, st->a, &err), SL_OK);
                cr_assert_eq(sl_op_args_set_number(&args, d, p1, st->b, &err), SL_OK);
            }
            cr_assert_eq(sl_op_args_set_string(&args, d, "dtype", sl_dtype_name(st->dtype), &err),
                         SL_OK, "%s", err.text);
            struct sl_op op;
            const sl_dtype in = sl__graph_node(g, cur)->dtype;
            cr_assert_eq(sl_op_bind(&op, d, &args, in, 2, &err), SL_OK, "%s", err.text);
            cr_assert_eq(sl_graph_add_op(g, name, cur, &op, NULL, &cur, &err), SL_OK, "%s",
                         err.text);
        }
        ids[i] = cur;
        if (!fusable)
            cr_assert_eq(sl_graph_set_fusable(g, cur, false, &err), SL_OK);
    }
    const struct sl_putter_desc pd = {.fn = sink_put, .ctx = sink};
    cr_assert_eq(sl_graph_add_putter(g, "out", cur, &pd, put, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_seal(g, &err), SL_OK, "%s", err.text);
    return g;
}

/* Plan `g` (consumed) for `mode`. */
static sl_plan *
plan_for(sl_graph *g, enum mode mode)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    cr_assert_not_null(plan, "%s", err.text);
    sl_graph_unref(g);
    if (mode == SEPARATE)
        sl__compose_fini(&plan->fusion);
    return plan;
}

/* Run the chain, its output into a new sink buffer; the plan stays for inspection. */
static sl_plan *
chain_run(struct src *s, const struct step *steps, size_t n, enum mode mode, struct sink *sink,
          uint32_t *ids, uint32_t *put)
{
    sink->dtype = steps[n - 1].dtype;
    sink->data = calloc(ROWS * COLS, sl_dtype_size(sink->dtype));
    sl_graph *g = chain_graph(s, steps, n, mode != UNFUSABLE, sink, ids, put);
    sl_plan *plan = plan_for(g, mode);
    struct sl_error err = SL_ERROR_INIT;
    if (test_pool == NULL)
        test_pool = sl_test_pool(3);
    sl_status st = sl_plan_run(plan, test_pool, &err);
    (void)st;
    return plan;
}

static const sl_dtype dtypes[] = {SL_DTYPE_BOOL, SL_DTYPE_U8,  SL_DTYPE_I8,  SL_DTYPE_I16,
                                  SL_DTYPE_U16,  SL_DTYPE_I32, SL_DTYPE_U32, SL_DTYPE_F32,
                                  SL_DTYPE_F64,  SL_DTYPE_I64, SL_DTYPE_U64};
#define N_DTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

static double
pick(uint64_t *r, const double *v, size_t n)
{
    *r = mix(*r);
    return v[*r % n];
}

/* A random step after input dtype `in`. */
static struct step
random_step(uint64_t *r, sl_dtype in)
{
    static const char *const ops[] = {"expr", "cast", "scale", "clip", "threshold"};
    static const char *const texts[] = {"x * 1.5 - 3",
                                        "x / 7",
                                        "(x - 100) * 0.25",
                                        "sqrt(abs(x))",
                                        "x * x",
                                        "-x",
                                        "where(x > 3, x, -x)",
                                        "floor(x / 2) + 0.5",
                                        "min(x, 300)",
                                        "max(x, -0.0)",
                                        "x % 3",
                                        "round(x * 0.5)"};
    static const double scales[] = {1, -1, 0.5, 2.5, -0.001, 1e-3, 3.0e9, 0.1, 255.0 / 65535.0};
    static const double offsets[] = {0, -0.0, 0.5, -0.5, 128, -1e5, 1e-9, 2.5};
    /* Zeros of both signs and negative halves often: where min/max and a
     * ceil of -0.5 (-0.0) would differ from the kernel. */
    static const double bounds[] = {-INFINITY, INFINITY, 0,    -0.0, 0,       -0.0,
                                    0.5,       -0.5,     -0.5, -0.7, 10.2,    255,
                                    255.5,     -100,     1e6,  -1e6, 70000.5, 3};
    static const double thresholds[] = {0, -0.0, 0.5, -0.5, 2.5, 100, INFINITY, -INFINITY, 1e10};
    static const double values[] = {1, 255, 300, -7.5, 0.5, 2.5, -0.0, 1e6, INFINITY, 65535};
    struct step s = {.compute = SL_DTYPE_F64};
    *r = mix(*r);
    s.op = ops[*r % 5];
    *r = mix(*r);
    s.dtype = dtypes[*r % N_DTYPES];
    if (strcmp(s.op, "expr") == 0) {
        *r = mix(*r);
        s.text = texts[*r % (sizeof(texts) / sizeof(texts[0]))];
        *r = mix(*r);
        s.compute = *r % 8 == 0 ? SL_DTYPE_F32 : SL_DTYPE_F64;
    } else if (strcmp(s.op, "scale") == 0) {
        s.a = pick(r, scales, sizeof(scales) / sizeof(scales[0]));
        s.b = pick(r, offsets, sizeof(offsets) / sizeof(offsets[0]));
    } else if (strcmp(s.op, "clip") == 0) {
        for (;;) {
            s.a = pick(r, bounds, sizeof(bounds) / sizeof(bounds[0]));
            s.b = pick(r, bounds, sizeof(bounds) / sizeof(bounds[0]));
            if (s.a <= s.b && (sl_dtype_is_float(in) || ceil(s.a) <= floor(s.b)))
                break;
        }
    } else if (strcmp(s.op, "threshold") == 0) {
        s.a = pick(r, thresholds, sizeof(thresholds) / sizeof(thresholds[0]));
        s.b = pick(r, values, sizeof(values) / sizeof(values[0]));
    }
    return s;
}

static void
describe(const struct src *s, const struct step *steps, size_t n, char *buf, size_t size)
{
    int len = snprintf(buf, size, "%s", sl_dtype_name(s->dtype));
    for (size_t i = 0; i < n && len > 0 && (size_t)len < size; i++)
        len += snprintf(buf + len, size - (size_t)len, " -> %s(%s %g %g)->%s%s", steps[i].op,
                        steps[i].text ? steps[i].text : "", steps[i].a, steps[i].b,
                        sl_dtype_name(steps[i].dtype),
                        steps[i].compute == SL_DTYPE_F32 ? "[f32]" : "");
}

/* Bytes of the sink, compared element by element so a failure names one. */
static void
expect_same(const struct sink *a, const struct sink *b, const char *what)
{
    const size_t es = sl_dtype_size(a->dtype);
    for (size_t i = 0; i < (size_t)ROWS * COLS; i++)
        if (memcmp(a->data + i * es, b->data + i * es, es) != 0) {
            double va = 0, vb = 0;
            if (a->dtype == SL_DTYPE_F64) {
                memcpy(&va, a->data + i * es, 8);
                memcpy(&vb, b->data + i * es, 8);
            }
            cr_assert_fail("%s: element %zu differs (composed %.17g, unfused %.17g)", what, i, va,
                           vb);
        }
}

Test(graph_compose, random_chains_match_node_by_node_evaluation)
{
    uint64_t r = 12345;
    unsigned composed = 0, cases = 0;
    for (int c = 0; c < 1500; c++) {
        struct src s = {.fail_row = -1};
        r = mix(r);
        s.seed = r;
        s.dtype = dtypes[r % N_DTYPES];
        struct step steps[4];
        r = mix(r);
        const size_t n = 2 + r % 3;
        sl_dtype in = s.dtype;
        for (size_t i = 0; i < n; i++) {
            steps[i] = random_step(&r, in);
            in = steps[i].dtype;
        }
        char what[512];
        describe(&s, steps, n, what, sizeof(what));
        struct sink a, b;
        uint32_t ids_a[4], ids_b[4], put_a, put_b;
        /* Against the same stages uncomposed, and every third case against
         * one stage per node. */
        const enum mode other = c % 3 == 0 ? UNFUSABLE : SEPARATE;
        sl_plan *pa = chain_run(&s, steps, n, COMPOSED, &a, ids_a, &put_a);
        sl_plan *pb = chain_run(&s, steps, n, other, &b, ids_b, &put_b);
        struct sl_put_status sa, sb;
        cr_assert_eq(sl_plan_put_status(pa, put_a, &sa, NULL), SL_OK);
        cr_assert_eq(sl_plan_put_status(pb, put_b, &sb, NULL), SL_OK);
        cr_assert_eq(sa.n_ok, sa.grid->n_total, "%s: every chunk ok", what);
        cr_assert_eq(sb.n_ok, sb.grid->n_total, "%s: every chunk ok unfused", what);
        expect_same(&a, &b, what);
        cases++;
        composed += sl__compose_is_top(&pa->fusion, ids_a[n - 1]);
        cr_assert(!sl__compose_is_top(&pb->fusion, ids_b[n - 1]), "%s: unfusable composes", what);
        free(a.data);
        free(b.data);
        sl_plan_destroy(pa);
        sl_plan_destroy(pb);
    }
    /* Most random chains have an exact composable pair somewhere. */
    cr_assert_gt(composed, cases / 4, "only %u of %u chains composed", composed, cases);
}

/* Every op after every input dtype into every output dtype, with the
 * parameters most likely to tell a program from its kernel: the input is
 * float64 data cast to the op's input dtype (a composed cast) and the op's
 * result goes on through `x * 1` (an expr), so both edges compose. */
Test(graph_compose, every_op_and_dtype_pair_matches_its_kernel)
{
    static const double clips[][2] = {{0, 0},          {-0.0, 0},      {0, -0.0},
                                      {-0.5, 0.5},     {-0.7, 255.5},  {-INFINITY, -0.0},
                                      {0.1, INFINITY}, {-1e6, 70000.5}};
    static const double thresholds[][2] = {{0, 1},         {-0.0, -0.0},  {-0.5, 255.5},
                                           {2.5, 65535},   {INFINITY, 1}, {-INFINITY, 1e6},
                                           {0.5, INFINITY}};
    static const double scales[][2] = {{1, 0}, {-1, -0.0}, {0.5, 0.5}, {3.0e9, 0}, {1e-3, -2.5}};
    static const char *const ops[] = {"cast", "clip", "threshold", "scale"};
    unsigned runs = 0, composed = 0;
    for (size_t di = 0; di < N_DTYPES; di++) {
        for (size_t dout = 0; dout < N_DTYPES; dout++) {
            for (size_t o = 0; o < 4; o++) {
                const double(*params)[2] = o == 1 ? clips : o == 2 ? thresholds : scales;
                const size_t np = o == 0   ? 1
                                  : o == 1 ? sizeof(clips) / sizeof(clips[0])
                                  : o == 2 ? sizeof(thresholds) / sizeof(thresholds[0])
                                           : sizeof(scales) / sizeof(scales[0]);
                for (size_t k = 0; k < np; k++) {
                    const sl_dtype in = dtypes[di];
                    if (o == 1 && !sl_dtype_is_float(in) &&
                        ceil(params[k][0]) > floor(params[k][1]))
                        continue;
                    struct src s = {.dtype = SL_DTYPE_F64, .seed = runs, .fail_row = -1};
                    const struct step steps[] = {
                        {.op = "cast", .dtype = in},
                        {.op = ops[o], .a = params[k][0], .b = params[k][1], .dtype = dtypes[dout]},
                        {.op = "expr",
                         .text = "x * 1",
                         .dtype = dtypes[dout],
                         .compute = SL_DTYPE_F64},
                    };
                    char what[512];
                    describe(&s, steps, 3, what, sizeof(what));
                    struct sink a, b;
                    uint32_t ids[3], put;
                    sl_plan *pa = chain_run(&s, steps, 3, COMPOSED, &a, ids, &put);
                    sl_plan *pb = chain_run(&s, steps, 3, SEPARATE, &b, ids, &put);
                    expect_same(&a, &b, what);
                    composed += sl__compose_is_top(&pa->fusion, ids[2]);
                    runs++;
                    free(a.data);
                    free(b.data);
                    sl_plan_destroy(pa);
                    sl_plan_destroy(pb);
                }
            }
        }
    }
    cr_assert_gt(composed, runs / 2, "%u of %u composed", composed, runs);
}

/* Two chains meeting in a two-input expr: a tree, composed into one
 * program whose inputs are both getters. */
static sl_plan *
tree_run(struct src *s1, struct src *s2, enum mode mode, struct sink *sink, uint32_t *top)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct src *srcs[2] = {s1, s2};
    uint32_t mid[2];
    for (int i = 0; i < 2; i++) {
        const struct sl_getter_desc gd = {.array_name = i ? "b" : "a",
                                          .dtype = srcs[i]->dtype,
                                          .rank = 2,
                                          .shape = (const uint64_t[]){ROWS, COLS},
                                          .chunk_shape = (const uint64_t[]){16, 32},
                                          .fn = src_get,
                                          .ctx = srcs[i]};
        uint32_t in;
        cr_assert_eq(sl_graph_add_getter(g, i ? "b" : "a", &gd, &in, NULL), SL_OK);
        const struct sl_op_desc *d;
        cr_assert_eq(sl_op_lookup(i ? "clip" : "scale", &d, NULL), SL_OK);
        struct sl_op_args args;
        memset(&args, 0, sizeof(args));
        cr_assert_eq(sl_op_args_set_number(&args, d, i ? "min" : "scale", i ? -0.5 : 0.25, NULL),
                     SL_OK);
        cr_assert_eq(sl_op_args_set_number(&args, d, i ? "max" : "offset", i ? 1000 : -3, NULL),
                     SL_OK);
        cr_assert_eq(sl_op_args_set_string(&args, d, "dtype", "float32", NULL), SL_OK);
        struct sl_op op;
        cr_assert_eq(sl_op_bind(&op, d, &args, srcs[i]->dtype, 2, NULL), SL_OK);
        cr_assert_eq(sl_graph_add_op(g, i ? "clipped" : "scaled", in, &op, NULL, &mid[i], NULL),
                     SL_OK);
    }
    const char *names[] = {"a", "b"};
    const struct sl_expr_desc ed = {
        .text = "a - b * 2", .names = names, .out_dtype = SL_DTYPE_I16, .compute = SL_DTYPE_F64};
    uint32_t e, c;
    cr_assert_eq(sl_graph_add_expr(g, "diff", 2, mid, &ed, &e, NULL), SL_OK);
    const struct sl_op_desc *d;
    cr_assert_eq(sl_op_lookup("cast", &d, NULL), SL_OK);
    struct sl_op_args args;
    memset(&args, 0, sizeof(args));
    cr_assert_eq(sl_op_args_set_string(&args, d, "dtype", "uint8", NULL), SL_OK);
    struct sl_op op;
    cr_assert_eq(sl_op_bind(&op, d, &args, SL_DTYPE_I16, 2, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_op(g, "u8", e, &op, NULL, &c, NULL), SL_OK);
    sink->dtype = SL_DTYPE_U8;
    sink->data = calloc(ROWS * COLS, 1);
    const struct sl_putter_desc pd = {.fn = sink_put, .ctx = sink};
    cr_assert_eq(sl_graph_add_putter(g, "out", c, &pd, NULL, NULL), SL_OK);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    sl_plan *plan = plan_for(g, mode);
    if (test_pool == NULL)
        test_pool = sl_test_pool(3);
    cr_assert_eq(sl_plan_run(plan, test_pool, NULL), SL_OK);
    *top = c;
    return plan;
}

Test(graph_compose, two_chains_into_one_expr_compose_as_a_tree)
{
    for (size_t i = 0; i < N_DTYPES; i++) {
        struct src s1 = {.dtype = dtypes[i], .seed = 100 + i, .fail_row = -1};
        struct src s2 = {.dtype = dtypes[(i + 3) % N_DTYPES], .seed = 200 + i, .fail_row = -1};
        struct sink a, b;
        uint32_t top;
        sl_plan *pa = tree_run(&s1, &s2, COMPOSED, &a, &top);
        sl_plan *pb = tree_run(&s1, &s2, SEPARATE, &b, &top);
        expect_same(&a, &b, sl_dtype_name(dtypes[i]));
        const bool exact = s1.dtype != SL_DTYPE_I64 && s1.dtype != SL_DTYPE_U64 &&
                           s2.dtype != SL_DTYPE_I64 && s2.dtype != SL_DTYPE_U64;
        if (exact) {
            cr_assert(sl__compose_is_top(&pa->fusion, top));
            cr_assert_eq(pa->fusion.programs[top].n_members, 4);
            cr_assert_eq(pa->fusion.programs[top].n_inputs, 2);
        }
        free(a.data);
        free(b.data);
        sl_plan_destroy(pa);
        sl_plan_destroy(pb);
    }
}

/* explain text of a plan. */
static char *
explain_text(const sl_plan *plan)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(sl_plan_explain(plan, f, NULL), SL_OK);
    fclose(f);
    return text;
}

Test(graph_compose, flatfield_scale_clip_is_one_program)
{
    struct src s = {.dtype = SL_DTYPE_U16, .seed = 7, .fail_row = -1};
    const struct step steps[] = {
        {.op = "expr", .text = "x * 0.5 - 10", .dtype = SL_DTYPE_F32, .compute = SL_DTYPE_F64},
        {.op = "scale", .a = 2, .b = -0.5, .dtype = SL_DTYPE_F32},
        {.op = "clip", .a = 0, .b = 1000, .dtype = SL_DTYPE_U16},
    };
    struct sink a, b;
    uint32_t ids[3], put;
    sl_plan *pa = chain_run(&s, steps, 3, COMPOSED, &a, ids, &put);
    sl_plan *pb = chain_run(&s, steps, 3, UNFUSABLE, &b, ids, &put);
    expect_same(&a, &b, "u16 -> expr -> scale -> clip");
    cr_assert(sl__compose_is_top(&pa->fusion, ids[2]));
    cr_assert_eq(pa->fusion.programs[ids[2]].n_members, 3);
    char *text = explain_text(pa);
    cr_assert_not_null(strstr(text, "programs:\n  n0 + n1 + n2: one program: where((float32((("
                                    "float32(((x * 0.5) - 10)) * 2) + (-0.5))) < 0), 0, "),
                       "%s", text);
    free(text);
    text = explain_text(pb);
    cr_assert_not_null(strstr(text, "n0 into n1: not composed: not fused"), "%s", text);
    free(text);
    free(a.data);
    free(b.data);
    sl_plan_destroy(pa);
    sl_plan_destroy(pb);
}

Test(graph_compose, inexact_nodes_stay_apart_and_say_why)
{
    struct src s = {.dtype = SL_DTYPE_I64, .seed = 3, .fail_row = -1};
    const struct step steps[] = {
        {.op = "clip", .a = -5, .b = 5, .dtype = SL_DTYPE_I64},
        {.op = "cast", .dtype = SL_DTYPE_F64},
        {.op = "expr", .text = "x + 1", .dtype = SL_DTYPE_F64, .compute = SL_DTYPE_F32},
        {.op = "expr", .text = "x * 2", .dtype = SL_DTYPE_F64, .compute = SL_DTYPE_F64},
        {.op = "cast", .dtype = SL_DTYPE_F64},
    };
    struct sink a;
    uint32_t ids[5], put;
    sl_plan *pa = chain_run(&s, steps, 5, COMPOSED, &a, ids, &put);
    char *text = explain_text(pa);
    cr_assert_not_null(
        strstr(text, "n0 into n1: not composed: clip: int64 input not exact in float64"), "%s",
        text);
    cr_assert_not_null(
        strstr(text, "n1 into n2: not composed: cast: int64 input not exact in float64"), "%s",
        text);
    cr_assert_not_null(strstr(text, "n2 into n3: not composed: expr \"n2\" computes in float32"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "n3 into n4: not composed: a cast to the same float64 copies"),
                       "%s", text);
    cr_assert_eq(strstr(text, "one program"), NULL, "%s", text);
    free(text);
    free(a.data);
    sl_plan_destroy(pa);
}

/* A failed input chunk fails the output chunks that read it, with the same
 * code and message composed or not; the others are written. */
static void
check_failure(bool shared_input)
{
    struct src s = {.dtype = SL_DTYPE_F32, .seed = 9, .fail_row = 1};
    const struct step steps[] = {
        {.op = "scale", .a = 3, .b = 1, .dtype = SL_DTYPE_F32},
        {.op = "threshold", .a = 10, .b = 2, .dtype = SL_DTYPE_U8},
    };
    struct sink k[2];
    sl_plan *plans[2];
    uint32_t put[2];
    for (int v = 0; v < 2; v++) {
        k[v].dtype = SL_DTYPE_U8;
        k[v].data = calloc(ROWS * COLS, 1);
        sl_graph *g = chain_graph(&s, steps, 2, true, &k[v], (uint32_t[2]){0}, &put[v]);
        if (shared_input) {
            /* A second reader of the input puts it in a stage of its own,
             * so the chain reads it as an intermediate chunk. */
            sl_graph_unref(g);
            g = sl_graph_create(NULL, NULL);
            const struct sl_getter_desc gd = {.array_name = "in",
                                              .dtype = s.dtype,
                                              .rank = 2,
                                              .shape = (const uint64_t[]){ROWS, COLS},
                                              .chunk_shape = (const uint64_t[]){16, 32},
                                              .fn = src_get,
                                              .ctx = &s};
            uint32_t in, a, b;
            cr_assert_eq(sl_graph_add_getter(g, "in", &gd, &in, NULL), SL_OK);
            for (int i = 0; i < 2; i++) {
                const struct sl_op_desc *d;
                cr_assert_eq(sl_op_lookup(steps[i].op, &d, NULL), SL_OK);
                struct sl_op_args args;
                memset(&args, 0, sizeof(args));
                cr_assert_eq(
                    sl_op_args_set_number(&args, d, i ? "threshold" : "scale", steps[i].a, NULL),
                    SL_OK);
                cr_assert_eq(
                    sl_op_args_set_number(&args, d, i ? "value" : "offset", steps[i].b, NULL),
                    SL_OK);
                cr_assert_eq(
                    sl_op_args_set_string(&args, d, "dtype", sl_dtype_name(steps[i].dtype), NULL),
                    SL_OK);
                struct sl_op op;
                cr_assert_eq(sl_op_bind(&op, d, &args, SL_DTYPE_F32, 2, NULL), SL_OK);
                cr_assert_eq(
                    sl_graph_add_op(g, i ? "n1" : "n0", i ? a : in, &op, NULL, i ? &b : &a, NULL),
                    SL_OK);
            }
            const struct sl_putter_desc pd = {.fn = sink_put, .ctx = &k[v]};
            cr_assert_eq(sl_graph_add_putter(g, "out", b, &pd, &put[v], NULL), SL_OK);
            sl_test_add_putter(g, "other", in);
            cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
        }
        plans[v] = plan_for(g, v == 0 ? COMPOSED : SEPARATE);
        sl_pool *pool = sl_test_pool(2);
        sl_status run = sl_plan_run(plans[v], pool, NULL);
        sl_pool_destroy(pool);
        cr_assert_neq(run, SL_OK, "the run reports the failure");
    }
    cr_assert(
        sl__compose_is_top(&plans[0]->fusion, sl__graph_node(plans[0]->graph, put[0])->inputs[0]));
    struct sl_put_status st[2];
    for (int v = 0; v < 2; v++)
        cr_assert_eq(sl_plan_put_status(plans[v], put[v], &st[v], NULL), SL_OK);
    const uint64_t n = st[0].grid->n_total;
    cr_assert_eq(memcmp(st[0].codes, st[1].codes, n), 0, "same status arrays");
    for (uint64_t c = 0; c < n; c++) {
        const bool row1 = c / st[0].grid->n_chunks[1] == 1;
        cr_assert_eq(st[0].codes[c] != SL_OK, row1, "chunk %lu fails only in row 1",
                     (unsigned long)c);
        if (row1)
            cr_assert_eq(st[0].codes[c], shared_input ? SL_EUPSTREAM : SL_EIO);
    }
    size_t ne[2];
    const struct sl_chunk_error *e0 = sl_plan_errors(plans[0], &ne[0]);
    const struct sl_chunk_error *e1 = sl_plan_errors(plans[1], &ne[1]);
    size_t checked = 0;
    for (size_t i = 0; i < ne[0]; i++) {
        if (e0[i].node != put[0])
            continue;
        cr_assert_not_null(strstr(e0[i].text, "chunk (1, "), "names the input chunk: %s",
                           e0[i].text);
        for (size_t j = 0; j < ne[1]; j++)
            if (e1[j].node == put[1] && e1[j].key.idx[1] == e0[i].key.idx[1]) {
                cr_assert_str_eq(e0[i].text, e1[j].text);
                checked++;
            }
    }
    cr_assert_eq(checked, 2, "both failed chunks compared");
    expect_same(&k[0], &k[1], "scale -> threshold around a failed chunk");
    for (int v = 0; v < 2; v++) {
        free(k[v].data);
        sl_plan_destroy(plans[v]);
    }
}

Test(graph_compose, failed_fused_input_chunk_fails_the_same_chunks) { check_failure(false); }

Test(graph_compose, failed_upstream_chunk_fails_the_same_chunks) { check_failure(true); }
