/* SPDX-License-Identifier: MIT */
/*
 * Halo ops in graphs: the neighbourhood filters of the op registry, run
 * chunk by chunk by the planner and executor over chunks smaller than their
 * margins, equal the same kernel (sl_filter) applied once to the whole
 * array, bit for bit, in every boundary mode, dtype and rank 1-3; their
 * input edge is never fused; the budget counts the grown input region and
 * refuses one too small for it; a smoothed pyramid's levels are the
 * whole-array Gaussian sampled; and a corrupt input chunk fails exactly
 * the output chunks whose input region overlaps it.  Only <sluice.h>.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

TestSuite(graph_halo, .timeout = 60.0);

#define HALO_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The value beyond the edges in mode constant: nonzero, not an integer. */
#define HALO_CVAL 7.25

/* An array shape and its chunking for the equivalence runs. */
struct halo_case {
    uint32_t rank;
    uint64_t shape[3];
    uint64_t chunk[3];     /* the input's and the put's */
    uint64_t out_chunk[3]; /* the op's output chunks; all 0: the input's */
};

/* Chunks of 2 or 3 against margins up to 8; irregular last chunks; axes
 * of 4 and 5, shorter than the margins. */
static const struct halo_case halo_cases[] = {
    {1, {23}, {2}, {0}},
    {1, {5}, {2}, {0}},
    {2, {13, 5}, {2, 3}, {0}},
    {3, {7, 5, 4}, {2, 2, 3}, {0}},
};

static const sl_boundary halo_modes[] = {SL_BOUNDARY_REFLECT, SL_BOUNDARY_NEAREST,
                                         SL_BOUNDARY_MIRROR, SL_BOUNDARY_CONSTANT,
                                         SL_BOUNDARY_WRAP};

static const sl_dtype halo_dtypes[] = {SL_DTYPE_F32, SL_DTYPE_F64, SL_DTYPE_U16};

/* A filter as the registry names it and as sl_filter takes it. */
struct filter_spec {
    const char *op;      /* registry name */
    sl_filter_kind kind; /* the same filter for sl_filter */
    uint32_t n_values;   /* sigma or size entries: 1 for every axis, or one per axis */
    double sigma[3];     /* gaussian, gradient_magnitude; all 0: no sigma */
    uint64_t size[3];    /* box filters; all 0: no size */
};

static uint64_t
count_of(uint32_t rank, const uint64_t *shape)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < rank; d++)
        n *= shape[d];
    return n;
}

static sl_pool *
pool_new(void)
{
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    o.n_workers = 2;
    o.pin = SL_PIN_NONE;
    struct sl_error err = SL_ERROR_INIT;
    sl_pool *p = sl_pool_create(&o, &err);
    cr_assert_not_null(p, "%s", err.text);
    return p;
}

static sl_store *
mem_store(void)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_create_memory(NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    return s;
}

/* `n` pseudo-random elements of `dt` from `seed`: signed reals for floats,
 * most of the range for uint16. */
static void *
data_new(sl_dtype dt, uint64_t n, uint64_t seed)
{
    void *v = malloc(n * sl_dtype_size(dt) + 1);
    cr_assert_not_null(v);
    uint64_t x = 0x9e3779b97f4a7c15u ^ seed;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double r = (double)(int64_t)(x % 20001) / 16.0 - 625.0;
        if (dt == SL_DTYPE_F32)
            ((float *)v)[i] = (float)(r + 1.0 / 3.0);
        else if (dt == SL_DTYPE_F64)
            ((double *)v)[i] = r + 1.0 / 3.0;
        else
            ((uint16_t *)v)[i] = (uint16_t)(x % 60000);
    }
    return v;
}

static double
elem_at(sl_dtype dt, const void *v, uint64_t i)
{
    if (dt == SL_DTYPE_F32)
        return ((const float *)v)[i];
    if (dt == SL_DTYPE_F64)
        return ((const double *)v)[i];
    return ((const uint16_t *)v)[i];
}

/* A checksummed array at `path` of `store`, written from `data` when not NULL. */
static sl_array *
array_new(sl_store *store, const char *path, sl_dtype dt, uint32_t rank, const uint64_t *shape,
          const uint64_t *chunk, const void *data)
{
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = rank;
    spec.dtype = dt;
    memcpy(spec.shape, shape, rank * sizeof(uint64_t));
    memcpy(spec.chunk_shape, chunk, rank * sizeof(uint64_t));
    spec.checksum = true;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(store, path, &spec, NULL, &err);
    cr_assert_not_null(a, "%s: %s", path, err.text);
    if (data != NULL) {
        struct sl_region all = sl_region_whole(rank, shape);
        size_t bytes = (size_t)count_of(rank, shape) * sl_dtype_size(dt);
        cr_assert_eq(sl_array_write_region(a, &all, data, bytes, NULL, NULL, &err), SL_OK, "%s",
                     err.text);
    }
    return a;
}

/* The whole of `a`, malloc'ed. */
static void *
array_read_whole(const sl_array *a)
{
    uint32_t rank = sl_array_rank(a);
    const uint64_t *shape = sl_array_shape(a);
    size_t bytes = (size_t)count_of(rank, shape) * sl_dtype_size(sl_array_dtype(a));
    void *v = malloc(bytes + 1);
    cr_assert_not_null(v);
    struct sl_region all = sl_region_whole(rank, shape);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_region(a, &all, v, bytes, NULL, NULL, &err), SL_OK, "%s", err.text);
    return v;
}

/* Bind registry op `f` for `dt` and `rank` in `mode` (cval HALO_CVAL for constant). */
static void
filter_bind(struct sl_op *op, const struct filter_spec *f, sl_boundary mode, sl_dtype dt,
            uint32_t rank)
{
    const struct sl_op_desc *d;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_lookup(f->op, &d, &err), SL_OK, "%s", err.text);
    cr_assert_eq(d->kind, SL_OP_KIND_HALO, "%s is not a halo op", f->op);
    struct sl_op_args args;
    memset(&args, 0, sizeof(args));
    cr_assert(f->n_values == 1 || f->n_values == rank || f->kind == SL_FILTER_LAPLACE);
    if (f->sigma[0] > 0)
        cr_assert_eq(sl_op_args_set_numbers(&args, d, "sigma", f->n_values, f->sigma, &err), SL_OK,
                     "%s", err.text);
    if (f->size[0] > 0)
        cr_assert_eq(sl_op_args_set_factors(&args, d, "size", f->n_values, f->size, &err), SL_OK,
                     "%s", err.text);
    cr_assert_eq(sl_op_args_set_string(&args, d, "mode", sl_boundary_name(mode), &err), SL_OK, "%s",
                 err.text);
    if (mode == SL_BOUNDARY_CONSTANT)
        cr_assert_eq(sl_op_args_set_number(&args, d, "cval", HALO_CVAL, &err), SL_OK, "%s",
                     err.text);
    cr_assert_eq(sl_op_bind(op, d, &args, dt, rank, &err), SL_OK, "%s", err.text);
}

/* The same filter as sl_filter takes it, built from the spec (not from the bound op). */
static struct sl_filter_params
filter_params(const struct filter_spec *f, sl_boundary mode, uint32_t rank)
{
    struct sl_filter_params p;
    memset(&p, 0, sizeof(p));
    p.kind = f->kind;
    p.rank = rank;
    p.truncate = 4.0;
    p.mode = mode;
    p.cval = mode == SL_BOUNDARY_CONSTANT ? HALO_CVAL : 0.0;
    for (uint32_t d = 0; d < rank; d++) {
        uint32_t k = f->n_values == 1 ? 0 : d;
        p.sigma[d] = f->sigma[k];
        p.size[d] = f->size[k] > 0 ? f->size[k] : 1;
    }
    return p;
}

/* The library's kernel applied once to the whole C-order array `in`. */
static void *
filter_whole(const struct sl_filter_params *p, sl_dtype dt, uint32_t rank, const uint64_t *shape,
             const void *in)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(p, dt, rank, &err), SL_OK, "%s", err.text);
    size_t bytes = (size_t)count_of(rank, shape) * sl_dtype_size(dt);
    void *out = malloc(bytes + 1);
    cr_assert_not_null(out);
    struct sl_view vi, vo;
    cr_assert_eq(sl_view_init(&vi, dt, rank, shape, (void *)in, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_view_init(&vo, dt, rank, shape, out, &err), SL_OK, "%s", err.text);
    size_t scratch_bytes = 0;
    cr_assert_eq(sl_filter_scratch_bytes(p, dt, shape, &scratch_bytes, &err), SL_OK, "%s",
                 err.text);
    void *scratch = malloc(scratch_bytes + 1);
    const uint64_t origin[SL_MAX_RANK] = {0};
    cr_assert_eq(sl_filter(p, shape, &vi, origin, &vo, origin, scratch, scratch_bytes, &err), SL_OK,
                 "%s", err.text);
    free(scratch);
    return out;
}

/* get(src) -> op "smooth" (chunks `out_chunk`, NULL: the input's) -> put(dst),
 * sealed and planned with `po`. */
static sl_plan *
halo_plan(sl_array *src, const struct sl_op *op, const uint64_t *out_chunk, sl_array *dst,
          const struct sl_plan_opts *po, struct sl_error *err)
{
    sl_graph *g = sl_graph_create(NULL, err);
    cr_assert_not_null(g, "%s", err->text);
    uint32_t get, smooth;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, err), SL_OK, "%s", err->text);
    cr_assert_eq(sl_graph_add_op(g, "smooth", get, op, out_chunk, &smooth, err), SL_OK, "%s",
                 err->text);
    cr_assert_eq(sl_graph_add_put(g, "out", smooth, dst, NULL, err), SL_OK, "%s", err->text);
    cr_assert_eq(sl_graph_seal(g, err), SL_OK, "%s", err->text);
    sl_plan *plan = sl_plan_create(g, po, err);
    sl_graph_unref(g);
    return plan;
}

/* Describe a case for failure messages. */
static void
case_text(const struct filter_spec *f, sl_boundary mode, sl_dtype dt, const struct halo_case *c,
          char *buf, size_t size)
{
    char shape[64], chunk[64], out[64] = "";
    sl_shape_format(c->rank, c->shape, shape, sizeof(shape));
    sl_shape_format(c->rank, c->chunk, chunk, sizeof(chunk));
    if (c->out_chunk[0] != 0) {
        memcpy(out, " out ", 5);
        sl_shape_format(c->rank, c->out_chunk, out + 5, sizeof(out) - 5);
    }
    snprintf(buf, size, "%s mode %s %s shape %s chunks %s%s", f->op, sl_boundary_name(mode),
             sl_dtype_name(dt), shape, chunk, out);
}

/* One filter, one mode, one dtype, one shape: chunk by chunk equals whole. */
static void
check_one(sl_pool *pool, const struct filter_spec *f, sl_boundary mode, sl_dtype dt,
          const struct halo_case *c, uint64_t seed)
{
    char what[192];
    case_text(f, mode, dt, c, what, sizeof(what));
    uint64_t n = count_of(c->rank, c->shape);
    void *in = data_new(dt, n, seed);
    struct sl_filter_params p = filter_params(f, mode, c->rank);
    void *want = filter_whole(&p, dt, c->rank, c->shape, in);

    sl_store *s = mem_store();
    sl_array *src = array_new(s, "src", dt, c->rank, c->shape, c->chunk, in);
    sl_array *dst = array_new(s, "dst", dt, c->rank, c->shape, c->chunk, NULL);
    struct sl_op op;
    filter_bind(&op, f, mode, dt, c->rank);
    /* The premise: some chunk is smaller than the margin. */
    bool smaller = false;
    for (uint32_t d = 0; d < c->rank; d++)
        smaller |= c->chunk[d] < op.halo_lo[d] || c->chunk[d] < op.halo_hi[d];
    cr_assert(smaller || f->kind == SL_FILTER_LAPLACE, "%s: no chunk smaller than the halo", what);

    struct sl_error err = SL_ERROR_INIT;
    const uint64_t *out_chunk = c->out_chunk[0] != 0 ? c->out_chunk : NULL;
    sl_plan *plan = halo_plan(src, &op, out_chunk, dst, NULL, &err);
    cr_assert_not_null(plan, "%s: %s", what, err.text);
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s: %s", what, err.text);
    void *got = array_read_whole(dst);
    /* Every case runs; each that differs is reported with its first element. */
    size_t esz = sl_dtype_size(dt);
    uint64_t n_diff = 0, first = 0;
    for (uint64_t i = n; i-- > 0;)
        if (memcmp((char *)got + i * esz, (char *)want + i * esz, esz) != 0)
            n_diff++, first = i;
    if (n_diff > 0)
        cr_expect_fail("%s: %llu of %llu elements differ; element %llu is %.17g, the "
                       "whole-array filter gives %.17g",
                       what, (unsigned long long)n_diff, (unsigned long long)n,
                       (unsigned long long)first, elem_at(dt, got, first),
                       elem_at(dt, want, first));
    free(got);
    sl_plan_destroy(plan);
    sl_array_unref(dst);
    sl_array_unref(src);
    sl_store_unref(s);
    free(want);
    free(in);
}

/* Every mode and shape of the tables for filter `f`, in `n_dtypes` dtypes. */
static void
check_filter_dtypes(const struct filter_spec *f, size_t n_dtypes, const sl_dtype *dtypes)
{
    sl_pool *pool = pool_new();
    uint64_t seed = 1;
    for (size_t m = 0; m < HALO_LEN(halo_modes); m++)
        for (size_t t = 0; t < n_dtypes; t++)
            for (size_t k = 0; k < HALO_LEN(halo_cases); k++)
                check_one(pool, f, halo_modes[m], dtypes[t], &halo_cases[k], seed++);
    sl_pool_destroy(pool);
}

static void
check_filter(const struct filter_spec *f)
{
    check_filter_dtypes(f, HALO_LEN(halo_dtypes), halo_dtypes);
}

Test(graph_halo, gaussian_by_chunks_equals_whole_array)
{
    /* sigma 2, truncate 4: radius 8 against chunks of 2 and 3. */
    check_filter(&(struct filter_spec){
        .op = "gaussian", .kind = SL_FILTER_GAUSSIAN, .n_values = 1, .sigma = {2.0}});
}

/* An even box: mirror reaches one element further at the low edge. */
static const struct filter_spec uniform6 = {
    .op = "uniform", .kind = SL_FILTER_UNIFORM, .n_values = 1, .size = {6}};

Test(graph_halo, uniform_by_chunks_equals_whole_array)
{
    /* float64 has a test of its own below. */
    const sl_dtype dtypes[] = {SL_DTYPE_F32, SL_DTYPE_U16};
    check_filter_dtypes(&uniform6, HALO_LEN(dtypes), dtypes);
}

/*
 * float64 shows rounding most: a running sum (scipy's, + entering -
 * leaving) that started at each block's first element would make a
 * chunked array filtered chunk by chunk differ from the whole array in
 * the last bits, against <sluice/filter.h>'s promise that they are equal.
 * The next test checks the same with sl_filter alone, without a graph.
 */
Test(graph_halo, uniform_float64_by_chunks_equals_whole_array)
{
    const sl_dtype dtypes[] = {SL_DTYPE_F64};
    check_filter_dtypes(&uniform6, HALO_LEN(dtypes), dtypes);
}

/* Two blocks of sl_filter equal one (see above). */
Test(graph_halo, uniform_float64_two_blocks_equal_one_block)
{
    const uint64_t shape[] = {8};
    const double in[8] = {0.1, 0.7, 0.3, 0.9, 0.2, 0.6, 0.4, 0.8};
    struct sl_filter_params p =
        filter_params(&(struct filter_spec){.kind = SL_FILTER_UNIFORM, .n_values = 1, .size = {3}},
                      SL_BOUNDARY_REFLECT, 1);
    double *whole = filter_whole(&p, SL_DTYPE_F64, 1, shape, in);
    double parts[8];
    char scratch[4096];
    size_t need = 0;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_scratch_bytes(&p, SL_DTYPE_F64, (const uint64_t[]){4}, &need, &err),
                 SL_OK, "%s", err.text);
    cr_assert_leq(need, sizeof(scratch));
    struct sl_view vin, vout;
    cr_assert_eq(sl_view_init(&vin, SL_DTYPE_F64, 1, shape, (void *)in, &err), SL_OK);
    for (uint64_t b = 0; b < 8; b += 4) {
        cr_assert_eq(sl_view_init(&vout, SL_DTYPE_F64, 1, (const uint64_t[]){4}, parts + b, &err),
                     SL_OK);
        cr_assert_eq(sl_filter(&p, shape, &vin, (const uint64_t[]){0}, &vout, (const uint64_t[]){b},
                               scratch, sizeof(scratch), &err),
                     SL_OK, "%s", err.text);
    }
    for (int i = 0; i < 8; i++)
        cr_expect_eq(memcmp(&parts[i], &whole[i], sizeof(double)), 0,
                     "element %d: blocks [0:4) and [4:8) give %.17g, one block %.17g", i, parts[i],
                     whole[i]);
    free(whole);
}

Test(graph_halo, median_by_chunks_equals_whole_array)
{
    check_filter(&(struct filter_spec){
        .op = "median", .kind = SL_FILTER_MEDIAN, .n_values = 1, .size = {7}});
}

Test(graph_halo, minimum_filter_by_chunks_equals_whole_array)
{
    check_filter(&(struct filter_spec){
        .op = "minimum_filter", .kind = SL_FILTER_MINIMUM, .n_values = 1, .size = {9}});
}

Test(graph_halo, maximum_filter_by_chunks_equals_whole_array)
{
    check_filter(&(struct filter_spec){
        .op = "maximum_filter", .kind = SL_FILTER_MAXIMUM, .n_values = 1, .size = {6}});
}

Test(graph_halo, gradient_magnitude_by_chunks_equals_whole_array)
{
    check_filter(&(struct filter_spec){.op = "gradient_magnitude",
                                       .kind = SL_FILTER_GRADIENT_MAGNITUDE,
                                       .n_values = 1,
                                       .sigma = {1.5}});
}

Test(graph_halo, laplace_by_chunks_equals_whole_array)
{
    /* A margin of 1: chunks of 2 are not smaller, but the 1-element edge
     * chunks and axes of 4 and 5 still cross edges in every mode. */
    check_filter(&(struct filter_spec){.op = "laplace", .kind = SL_FILTER_LAPLACE});
}

/* Per-axis parameters over the rank-3 case: an axis left alone (sigma 0,
 * size 1) has no margin while its neighbours' reach past several chunks. */
static void
check_filter_rank3(const struct filter_spec *f)
{
    sl_pool *pool = pool_new();
    const struct halo_case *c = &halo_cases[HALO_LEN(halo_cases) - 1];
    cr_assert_eq(c->rank, 3);
    uint64_t seed = 100;
    for (size_t m = 0; m < HALO_LEN(halo_modes); m++)
        for (size_t t = 0; t < HALO_LEN(halo_dtypes); t++)
            check_one(pool, f, halo_modes[m], halo_dtypes[t], c, seed++);
    sl_pool_destroy(pool);
}

Test(graph_halo, gaussian_per_axis_sigma_by_chunks_equals_whole_array)
{
    check_filter_rank3(&(struct filter_spec){
        .op = "gaussian", .kind = SL_FILTER_GAUSSIAN, .n_values = 3, .sigma = {2.0, 0.0, 0.8}});
}

Test(graph_halo, median_per_axis_size_by_chunks_equals_whole_array)
{
    check_filter_rank3(&(struct filter_spec){
        .op = "median", .kind = SL_FILTER_MEDIAN, .n_values = 3, .size = {7, 1, 4}});
}

/* Output chunks other than the input's: larger, and not aligned with it
 * (the put then rechunks back to the input's grid). */
Test(graph_halo, gaussian_with_other_output_chunks_equals_whole_array)
{
    static const struct halo_case cases[] = {
        {1, {23}, {2}, {5}},
        {2, {13, 5}, {2, 3}, {3, 2}},
        {3, {7, 5, 4}, {2, 2, 3}, {4, 5, 1}},
    };
    const struct filter_spec gauss = {
        .op = "gaussian", .kind = SL_FILTER_GAUSSIAN, .n_values = 1, .sigma = {2.0}};
    sl_pool *pool = pool_new();
    uint64_t seed = 200;
    for (size_t m = 0; m < HALO_LEN(halo_modes); m++)
        for (size_t t = 0; t < HALO_LEN(halo_dtypes); t++)
            for (size_t k = 0; k < HALO_LEN(cases); k++)
                check_one(pool, &gauss, halo_modes[m], halo_dtypes[t], &cases[k], seed++);
    sl_pool_destroy(pool);
}

/* The plan's explanation, malloc'ed. */
static char *
plan_explain_text(const sl_plan *plan)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    cr_assert_not_null(out);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_explain(plan, out, &err), SL_OK, "%s", err.text);
    fclose(out);
    return text;
}

/* get -> cast -> gaussian: the cast fuses with its get, the halo edge does
 * not (its chunk needs its neighbours'), and the run still equals the
 * whole array cast and filtered. */
Test(graph_halo, explain_fuses_cast_with_get_but_not_the_halo_edge)
{
    const uint64_t shape[] = {40}, chunk[] = {4};
    sl_store *s = mem_store();
    uint16_t *in = data_new(SL_DTYPE_U16, 40, 7);
    sl_array *src = array_new(s, "src", SL_DTYPE_U16, 1, shape, chunk, in);
    sl_array *dst = array_new(s, "dst", SL_DTYPE_F32, 1, shape, chunk, NULL);
    struct sl_error err = SL_ERROR_INIT;
    const struct sl_op_desc *cd;
    cr_assert_eq(sl_op_lookup("cast", &cd, &err), SL_OK, "%s", err.text);
    struct sl_op_args args;
    memset(&args, 0, sizeof(args));
    cr_assert_eq(sl_op_args_set_string(&args, cd, "dtype", "float32", &err), SL_OK, "%s", err.text);
    struct sl_op cast, smooth;
    cr_assert_eq(sl_op_bind(&cast, cd, &args, SL_DTYPE_U16, 1, &err), SL_OK, "%s", err.text);
    const struct filter_spec gauss = {
        .op = "gaussian", .kind = SL_FILTER_GAUSSIAN, .n_values = 1, .sigma = {2.0}};
    filter_bind(&smooth, &gauss, SL_BOUNDARY_REFLECT, SL_DTYPE_F32, 1);

    sl_graph *g = sl_graph_create(NULL, &err);
    uint32_t get, c, f;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_add_op(g, "cast", get, &cast, NULL, &c, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_add_op(g, "smooth", c, &smooth, NULL, &f, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_add_put(g, "out", f, dst, NULL, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_seal(g, &err), SL_OK, "%s", err.text);
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    cr_assert_not_null(plan, "%s", err.text);
    char *text = plan_explain_text(plan);
    cr_assert_not_null(strstr(text, "plan: 4 nodes, 3 edges (2 fused), 2 stages\n"), "%s", text);
    cr_assert_not_null(strstr(text, "stage 0: src + cast -> 10 tasks"), "%s", text);
    cr_assert_not_null(strstr(text, "  src -> cast: fused\n"), "%s", text);
    cr_assert_not_null(strstr(text, "  smooth -> out: fused\n"), "%s", text);
    /* Sigma 2, truncate 4: 8 before and after; chunk 0 under reflect
     * reads [0:8) mirrored and [4:12) beyond it. */
    cr_assert_not_null(strstr(text, "  cast -> smooth: not fused (halo: an output chunk needs a "
                                    "margin of its neighbours: output chunk 0 of \"smooth\" needs "
                                    "[0:12) of \"cast\" (halo 8 before, 8 after), chunks 0..2 in "
                                    "dimension 0)\n"),
                       "%s", text);
    free(text);

    sl_pool *pool = pool_new();
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    float as_f32[40];
    for (int i = 0; i < 40; i++)
        as_f32[i] = (float)in[i];
    struct sl_filter_params p = filter_params(&gauss, SL_BOUNDARY_REFLECT, 1);
    float *want = filter_whole(&p, SL_DTYPE_F32, 1, shape, as_f32);
    float *got = array_read_whole(dst);
    cr_assert_arr_eq(got, want, sizeof(as_f32), "cast then gaussian, chunk by chunk");
    free(got);
    free(want);
    sl_pool_destroy(pool);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_array_unref(dst);
    sl_array_unref(src);
    sl_store_unref(s);
    free(in);
}

/* The numbers of an SL_EBUDGET refusal: the need, then its two parts. */
static void
budget_numbers(const char *text, size_t *need, size_t *own, size_t *inputs)
{
    const char *at = strstr(text, "is below the ");
    cr_assert_not_null(at, "%s", text);
    cr_assert_eq(sscanf(at, "is below the %zu bytes", need), 1, "%s", text);
    at = strstr(text, "needs: ");
    cr_assert_not_null(at, "%s", text);
    cr_assert_eq(
        sscanf(at, "needs: %zu for its own chunks and %zu for the input chunks", own, inputs), 2,
        "%s", text);
}

/*
 * float64 chunks of 4 (32 bytes) under a Gaussian of radius 8: an interior
 * output chunk [a, a + 4) needs [a - 8, a + 12), 20 elements (160 bytes)
 * assembled from 5 input chunks.  The smallest budget counts them all; one
 * byte less is refused naming the numbers; at that budget the run's peak
 * holds the output chunk and its grown input region.
 */
Test(graph_halo, budget_counts_the_grown_input_region_and_refuses_less)
{
    const uint64_t shape[] = {40}, chunk[] = {4};
    const size_t chunk_bytes = 4 * 8, region_bytes = 20 * 8, n_inputs = 5;
    sl_store *s = mem_store();
    double *in = data_new(SL_DTYPE_F64, 40, 11);
    sl_array *src = array_new(s, "src", SL_DTYPE_F64, 1, shape, chunk, in);
    sl_array *dst = array_new(s, "dst", SL_DTYPE_F64, 1, shape, chunk, NULL);
    const struct filter_spec gauss = {
        .op = "gaussian", .kind = SL_FILTER_GAUSSIAN, .n_values = 1, .sigma = {2.0}};
    struct sl_op op;
    filter_bind(&op, &gauss, SL_BOUNDARY_REFLECT, SL_DTYPE_F64, 1);
    cr_assert_eq(op.halo_lo[0], 8);
    cr_assert_eq(op.halo_hi[0], 8);

    struct sl_plan_opts po = SL_PLAN_OPTS_DEFAULT;
    po.memory_budget = 1;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(halo_plan(src, &op, NULL, dst, &po, &err));
    cr_assert_eq(err.code, SL_EBUDGET, "%s", err.text);
    size_t need, own, inputs;
    budget_numbers(err.text, &need, &own, &inputs);
    cr_assert_eq(need, own + inputs, "%s", err.text);
    cr_assert_geq(own, chunk_bytes + region_bytes,
                  "a task's own bytes leave out its grown input region: %s", err.text);
    cr_assert_geq(inputs, n_inputs * chunk_bytes, "%s", err.text);
    cr_assert_not_null(strstr(err.text, "(ending at \"out\")"), "%s", err.text);

    po.memory_budget = need - 1;
    err = SL_ERROR_INIT;
    cr_assert_null(halo_plan(src, &op, NULL, dst, &po, &err));
    cr_assert_eq(err.code, SL_EBUDGET, "%s", err.text);
    char want[96];
    snprintf(want, sizeof(want), "memory budget of %zu bytes is below the %zu bytes", need - 1,
             need);
    cr_assert_not_null(strstr(err.text, want), "%s", err.text);

    po.memory_budget = need;
    err = SL_ERROR_INIT;
    sl_plan *plan = halo_plan(src, &op, NULL, dst, &po, &err);
    cr_assert_not_null(plan, "%s", err.text);
    sl_pool *pool = pool_new();
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_eq(sum.budget_bytes, need);
    cr_assert_leq(sum.peak_bytes, need, "peak %zu over the budget %zu", sum.peak_bytes, need);
    cr_assert_geq(sum.peak_bytes, chunk_bytes + region_bytes, "peak %zu leaves out the halo region",
                  sum.peak_bytes);
    struct sl_filter_params p = filter_params(&gauss, SL_BOUNDARY_REFLECT, 1);
    double *ref = filter_whole(&p, SL_DTYPE_F64, 1, shape, in);
    double *got = array_read_whole(dst);
    cr_assert_arr_eq(got, ref, 40 * sizeof(double));
    free(got);
    free(ref);
    sl_pool_destroy(pool);
    sl_plan_destroy(plan);
    sl_array_unref(dst);
    sl_array_unref(src);
    sl_store_unref(s);
    free(in);
}

/* Level `k` of the pyramid in the root of `s`, whole. */
static uint16_t *
level_read(sl_store *s, uint32_t k, const uint64_t *shape)
{
    char path[16];
    snprintf(path, sizeof(path), "%u", k);
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(s, path, NULL, &err);
    cr_assert_not_null(a, "level %u: %s", k, err.text);
    cr_assert_arr_eq(sl_array_shape(a), shape, 2 * sizeof(uint64_t), "shape of level %u", k);
    uint16_t *v = array_read_whole(a);
    sl_array_unref(a);
    return v;
}

/*
 * A smoothed pyramid: level k + 1 is level k filtered by sl_filter's
 * Gaussian in one block (sigma sqrt((f² − 1) / (8 ln 2)) per axis, mode
 * nearest, truncate 4), sampled every f-th element.  Factors 2 and 3 give
 * radii 3 and 5 against chunks of 4; level 2's axis 1 (3) is shorter than
 * its radius.
 */
Test(graph_halo, smoothed_pyramid_levels_are_the_whole_gaussian_sampled)
{
    const uint64_t shape[] = {21, 19}, chunk[] = {4, 4}, f[] = {2, 3};
    sl_store *s = mem_store();
    uint16_t *level = data_new(SL_DTYPE_U16, 21 * 19, 5);
    sl_array *src = array_new(s, "src", SL_DTYPE_U16, 2, shape, chunk, level);
    struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
    o.n_levels = 3;
    o.factor[0] = f[0];
    o.factor[1] = f[1];
    o.method = SL_DOWNSAMPLE_STRIDE;
    o.smooth = SL_PYRAMID_SMOOTH_GAUSSIAN;
    sl_store *out = mem_store();
    struct sl_error err = SL_ERROR_INIT;
    sl_graph *g = sl_graph_create(NULL, &err);
    uint32_t get, puts[3], node;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_add_pyramid(g, "pyr", get, out, "", &o, puts, &err), SL_OK, "%s",
                 err.text);
    cr_assert_eq(sl_graph_find(g, "pyr.1.smooth", &node, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_seal(g, &err), SL_OK, "%s", err.text);
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    cr_assert_not_null(plan, "%s", err.text);
    sl_pool *pool = pool_new();
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);

    struct sl_filter_params p = {
        .kind = SL_FILTER_GAUSSIAN, .rank = 2, .truncate = 4.0, .mode = SL_BOUNDARY_NEAREST};
    for (uint32_t d = 0; d < 2; d++)
        p.sigma[d] = sqrt(((double)(f[d] * f[d]) - 1.0) / (8.0 * log(2.0)));
    uint64_t cur[2] = {shape[0], shape[1]};
    for (uint32_t k = 1; k < 3; k++) {
        uint16_t *smoothed = filter_whole(&p, SL_DTYPE_U16, 2, cur, level);
        const uint64_t next[2] = {(cur[0] + f[0] - 1) / f[0], (cur[1] + f[1] - 1) / f[1]};
        uint16_t *want = malloc(next[0] * next[1] * sizeof(uint16_t));
        for (uint64_t i = 0; i < next[0]; i++)
            for (uint64_t j = 0; j < next[1]; j++)
                want[i * next[1] + j] = smoothed[i * f[0] * cur[1] + j * f[1]];
        uint16_t *got = level_read(out, k, next);
        for (uint64_t i = 0; i < next[0] * next[1]; i++)
            cr_assert_eq(got[i], want[i], "level %u element (%llu, %llu): %u, want %u", k,
                         (unsigned long long)(i / next[1]), (unsigned long long)(i % next[1]),
                         got[i], want[i]);
        free(got);
        free(smoothed);
        free(level);
        level = want;
        cur[0] = next[0];
        cur[1] = next[1];
    }
    free(level);
    sl_pool_destroy(pool);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_array_unref(src);
    sl_store_unref(out);
    sl_store_unref(s);
}

Test(graph_halo, pyramid_refuses_unknown_smoothing)
{
    const uint64_t shape[] = {16, 16}, chunk[] = {4, 4};
    sl_store *s = mem_store();
    sl_array *src = array_new(s, "src", SL_DTYPE_U16, 2, shape, chunk, NULL);
    struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
    o.n_levels = 2;
    o.factor[0] = o.factor[1] = 2;
    o.smooth = (sl_pyramid_smooth)7;
    sl_store *out = mem_store();
    struct sl_error err = SL_ERROR_INIT;
    sl_graph *g = sl_graph_create(NULL, &err);
    uint32_t get;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, &err), SL_OK, "%s", err.text);
    uint32_t before = sl_graph_node_count(g);
    cr_assert_eq(sl_graph_add_pyramid(g, "pyr", get, out, "", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "smoothing 7"), "%s", err.text);
    cr_assert_eq(sl_graph_node_count(g), before, "the graph changed");
    sl_graph_unref(g);
    sl_array_unref(src);
    sl_store_unref(out);
    sl_store_unref(s);
}

/* Whether regions `a` and `b` share an element. */
static bool
regions_overlap(const struct sl_region *a, const struct sl_region *b)
{
    struct sl_region both;
    return sl_region_intersect(a, b, &both) && !sl_region_is_empty(&both);
}

/* One mode of the test below; `bad` is the corrupt input chunk.  Returns
 * how many of the 30 output chunks must fail. */
static uint64_t
check_corrupt_chunk(sl_pool *pool, sl_boundary mode, const uint64_t *bad)
{
    const uint64_t shape[] = {20, 18}, chunk[] = {4, 3}, grid[] = {5, 6};
    const char *mname = sl_boundary_name(mode);
    sl_store *s = mem_store();
    uint16_t *in = data_new(SL_DTYPE_U16, 20 * 18, 3);
    sl_array *src = array_new(s, "src", SL_DTYPE_U16, 2, shape, chunk, in);
    sl_array *dst = array_new(s, "dst", SL_DTYPE_U16, 2, shape, chunk, NULL);
    char key[64];
    sl_array_chunk_key(src, bad, key, sizeof(key));
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, key, "garbage", 7, &err), SL_OK, "%s", err.text);
    /* Sigma 1: a margin of 4 against chunks of 4 and 3. */
    const struct filter_spec gauss = {
        .op = "gaussian", .kind = SL_FILTER_GAUSSIAN, .n_values = 1, .sigma = {1.0}};
    struct sl_op op;
    filter_bind(&op, &gauss, mode, SL_DTYPE_U16, 2);
    struct sl_region bad_region;
    cr_assert_eq(sl_region_init(
                     &bad_region, 2, (const uint64_t[]){bad[0] * chunk[0], bad[1] * chunk[1]},
                     (const uint64_t[]){bad[0] * chunk[0] + chunk[0], bad[1] * chunk[1] + chunk[1]},
                     &err),
                 SL_OK, "%s", err.text);

    sl_plan *plan = halo_plan(src, &op, NULL, dst, NULL, &err);
    cr_assert_not_null(plan, "%s: %s", mname, err.text);
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_ECORRUPT, "%s: %s", mname, err.text);
    cr_assert_not_null(strstr(err.text, key), "%s: %s", mname, err.text);
    const sl_graph *g = sl_plan_graph(plan);
    uint32_t put;
    cr_assert_eq(sl_graph_find(g, "out", &put, &err), SL_OK);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, put, &ps, &err), SL_OK, "%s", err.text);
    uint64_t n_want = 0;
    bool failing[30];
    for (uint64_t i = 0; i < grid[0]; i++) {
        for (uint64_t j = 0; j < grid[1]; j++) {
            struct sl_region r, rin;
            cr_assert_eq(sl_region_init(&r, 2, (const uint64_t[]){i * chunk[0], j * chunk[1]},
                                        (const uint64_t[]){(i + 1) * chunk[0], (j + 1) * chunk[1]},
                                        &err),
                         SL_OK);
            cr_assert_eq(sl_op_input_region(&op, shape, &r, &rin, &err), SL_OK, "%s", err.text);
            bool fails = regions_overlap(&rin, &bad_region);
            failing[i * grid[1] + j] = fails;
            n_want += fails;
            sl_status code = (sl_status)ps.codes[i * grid[1] + j];
            cr_expect_eq(code, fails ? SL_EUPSTREAM : SL_OK,
                         "%s: output chunk (%llu, %llu) is %s, want %s", mname,
                         (unsigned long long)i, (unsigned long long)j, sl_status_name(code),
                         fails ? "EUPSTREAM" : "OK");
        }
    }
    cr_assert_gt(n_want, 1, "%s: the margin reaches no neighbour", mname);
    cr_assert_eq(ps.n_failed, n_want, "%s", mname);
    cr_assert_eq(ps.n_ok, grid[0] * grid[1] - n_want, "%s", mname);
    size_t n_errors;
    const struct sl_chunk_error *e = sl_plan_errors(plan, &n_errors);
    cr_assert_eq(n_errors, n_want, "%s", mname);
    for (size_t k = 0; k < n_errors; k++) {
        cr_assert_eq(e[k].node, put);
        cr_assert(failing[e[k].key.idx[0] * grid[1] + e[k].key.idx[1]],
                  "%s: a record for chunk (%llu, %llu)", mname, (unsigned long long)e[k].key.idx[0],
                  (unsigned long long)e[k].key.idx[1]);
        cr_assert_eq(e[k].code, SL_EUPSTREAM);
        cr_assert_not_null(strstr(e[k].text, "upstream ECORRUPT"), "%s: %s", mname, e[k].text);
        cr_assert_not_null(strstr(e[k].text, key), "%s: %s", mname, e[k].text);
    }
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_eq(sum.n_upstream, n_want, "%s", mname);
    cr_assert_eq(sum.first_error, SL_ECORRUPT, "%s", mname);
    sl_plan_destroy(plan);
    sl_array_unref(dst);
    sl_array_unref(src);
    sl_store_unref(s);
    free(in);
    return n_want;
}

/* A corrupt chunk in the middle, and one in a corner (where wrap reads it
 * from the opposite edges).  Under wrap every output chunk at an edge
 * reads its whole axis, so the middle one fails all 30. */
Test(graph_halo, corrupt_input_chunk_fails_exactly_the_chunks_whose_region_overlaps_it)
{
    sl_pool *pool = pool_new();
    for (size_t m = 0; m < HALO_LEN(halo_modes); m++) {
        uint64_t middle = check_corrupt_chunk(pool, halo_modes[m], (const uint64_t[]){2, 3});
        uint64_t corner = check_corrupt_chunk(pool, halo_modes[m], (const uint64_t[]){0, 5});
        const bool wrap = halo_modes[m] == SL_BOUNDARY_WRAP;
        cr_assert_eq(middle, wrap ? 30 : 15, "%s", sl_boundary_name(halo_modes[m]));
        cr_assert_lt(corner, 30, "%s", sl_boundary_name(halo_modes[m]));
    }
    sl_pool_destroy(pool);
}
