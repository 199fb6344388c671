/* SPDX-License-Identifier: MIT */
/*
 * The registry of built-in operations: lookup and listing, argument
 * setters, binding (output dtypes, defaults, every validation error naming
 * the operation, parameter and value), and applying bound operations.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

TestSuite(ops_registry, .timeout = 5.0);

#define KNOWN_OPS                                                                             \
    "cast, clip, downsample, gaussian, gradient_magnitude, laplace, maximum_filter, median, " \
    "minimum_filter, scale, threshold, uniform"

/* The built-in operation called `name`, which must exist. */
static const struct sl_op_desc *
op_named(const char *name)
{
    const struct sl_op_desc *d = NULL;
    cr_assert_eq(sl_op_lookup(name, &d, NULL), SL_OK, "no op \"%s\"", name);
    return d;
}

Test(ops_registry, lists_operations_in_name_order)
{
    char names[256];
    const size_t len = sl_op_names(names, sizeof names);
    cr_assert_str_eq(names, KNOWN_OPS);
    cr_assert_eq(len, strlen(names));
    cr_assert_eq(sl_op_count(), 12);
    for (uint32_t i = 0; i + 1 < sl_op_count(); i++)
        cr_assert_lt(strcmp(sl_op_at(i)->name, sl_op_at(i + 1)->name), 0);
    cr_assert_null(sl_op_at(12));
    cr_assert_eq(op_named("median")->kind, SL_OP_KIND_HALO);
    cr_assert_eq(op_named("downsample")->kind, SL_OP_KIND_REGRID);
    cr_assert_eq(op_named("clip")->kind, SL_OP_KIND_MAP);
    const struct sl_op_desc *d = NULL;
    cr_assert_eq(sl_op_lookup("Downsample", &d, NULL), SL_ENOTFOUND);
    cr_assert_eq(sl_op_lookup(NULL, &d, NULL), SL_ENOTFOUND);
    cr_assert_null(d, "a failed lookup leaves `out` untouched");
    char tiny[8];
    cr_assert_eq(sl_op_names(tiny, sizeof tiny), len, "reports the length it needs");
    cr_assert_eq(strlen(tiny), 7);
}

Test(ops_registry, unknown_names_list_the_known_ones)
{
    const struct sl_op_desc *d;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_lookup("dwnsample", &d, &err), SL_ENOTFOUND);
    cr_assert_str_eq(err.text, "unknown op \"dwnsample\"; known: " KNOWN_OPS);
    cr_assert_eq(sl_op_lookup("cast", &d, NULL), SL_OK);
    cr_assert_str_eq(d->name, "cast");
}

Test(ops_registry, parameters_are_described)
{
    const struct sl_op_desc *d = op_named("downsample");
    cr_assert_eq(d->n_params, 2);
    cr_assert_eq(sl_op_param_index(d, "factors"), 0);
    cr_assert_eq(d->params[0].type, SL_OP_PARAM_FACTORS);
    cr_assert(d->params[0].required);
    cr_assert_eq(d->params[1].type, SL_OP_PARAM_METHOD);
    cr_assert_not(d->params[1].required);
    cr_assert_eq(sl_op_param_index(d, "factor"), -1);
    for (uint32_t i = 0; i < sl_op_count(); i++) {
        const struct sl_op_desc *o = sl_op_at(i);
        cr_assert_leq(o->n_params, SL_OP_MAX_PARAMS);
        cr_assert_not_null(o->summary);
        for (uint32_t k = 0; k < o->n_params; k++)
            cr_assert_not_null(o->params[k].doc);
    }
}

Test(ops_registry, setters_name_the_operation_and_parameter)
{
    const struct sl_op_desc *cast = op_named("cast"), *ds = op_named("downsample");
    struct sl_op_args args;
    memset(&args, 0, sizeof args);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_args_set_string(&args, cast, "dtyp", "uint8", &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "op \"cast\" has no parameter \"dtyp\"; parameters: dtype");
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_args_set_number(&args, cast, "dtype", 3, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "cast: parameter \"dtype\" takes a dtype name, not a number");
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_args_set_string(&args, cast, "dtype", "uint17", &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "cast: parameter \"dtype\" \"uint17\" is not a dtype "
                                        "(bool, int8,"),
                       "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_args_set_string(&args, ds, "method", "avg", &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "downsample: parameter \"method\" \"avg\" is not a method "
                               "(stride, mean, min, max, median, mode)");
    const uint64_t f[3] = {1, 0, 2};
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_args_set_factors(&args, ds, "factors", 3, f, &err), SL_EINVAL);
    cr_assert_str_eq(err.text,
                     "downsample: parameter \"factors\" entry 1 is 0 (factors must be at least 1)");
    uint64_t many[17];
    for (int i = 0; i < 17; i++)
        many[i] = 2;
    cr_assert_eq(sl_op_args_set_factors(&args, ds, "factors", 17, many, NULL), SL_EUNSUPPORTED);
    cr_assert_eq(sl_op_args_set_factors(&args, ds, "method", 1, many, &err), SL_EINVAL);
    for (int i = 0; i < SL_OP_MAX_PARAMS; i++)
        cr_assert_not(args.value[i].set, "failed setters set nothing");
}

/* Bind `name` with the arguments built by the caller. */
static sl_status
bind(struct sl_op *op, const char *name, const struct sl_op_args *args, sl_dtype dt, uint32_t rank,
     struct sl_error *err)
{
    return sl_op_bind(op, op_named(name), args, dt, rank, err);
}

Test(ops_registry, bind_checks_parameters_against_the_input)
{
    const struct sl_op_desc *ds = op_named("downsample");
    struct sl_op_args args;
    struct sl_op op;
    memset(&args, 0, sizeof args);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(bind(&op, "downsample", &args, SL_DTYPE_U16, 3, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "downsample: parameter \"factors\" is required (block extent per "
                               "dimension, each >= 1)");
    const uint64_t f[2] = {2, 2};
    cr_assert_eq(sl_op_args_set_factors(&args, ds, "factors", 2, f, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(bind(&op, "downsample", &args, SL_DTYPE_U16, 3, &err), SL_EINVAL);
    cr_assert_str_eq(err.text,
                     "downsample: parameter \"factors\" has 2 entries for input of rank 3");
    cr_assert_eq(sl_op_args_set_string(&args, ds, "method", "median", NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(bind(&op, "downsample", &args, SL_DTYPE_C64, 2, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "\"median\" does not support dtype complex64"), "%s",
                       err.text);
    cr_assert_eq(bind(&op, "downsample", &args, SL_DTYPE_I8, 2, NULL), SL_OK);
    cr_assert_eq(op.out_dtype, SL_DTYPE_I8);
    cr_assert_eq(op.u.downsample.method, SL_DOWNSAMPLE_MEDIAN);

    memset(&args, 0, sizeof args);
    cr_assert_eq(sl_op_args_set_string(&args, op_named("cast"), "dtype", "float16", NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(bind(&op, "cast", &args, SL_DTYPE_U8, 1, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "cast: parameter \"dtype\" float16 is not supported"), "%s",
                       err.text);

    memset(&args, 0, sizeof args);
    cr_assert_eq(sl_op_args_set_number(&args, op_named("scale"), "scale", INFINITY, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(bind(&op, "scale", &args, SL_DTYPE_U8, 1, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "scale: parameter \"scale\" is inf (it must be finite)");

    memset(&args, 0, sizeof args);
    cr_assert_eq(sl_op_args_set_number(&args, op_named("clip"), "min", 0.25, NULL), SL_OK);
    cr_assert_eq(sl_op_args_set_number(&args, op_named("clip"), "max", 0.75, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(bind(&op, "clip", &args, SL_DTYPE_U16, 1, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "clip: no uint16 value lies in [min, max] = [0.25, 0.75]");
    cr_assert_eq(bind(&op, "clip", &args, SL_DTYPE_F32, 1, NULL), SL_OK);

    memset(&args, 0, sizeof args);
    err = SL_ERROR_INIT;
    cr_assert_eq(bind(&op, "threshold", &args, SL_DTYPE_F32, 1, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "threshold: parameter \"threshold\" is required"), "%s",
                       err.text);
    cr_assert_eq(sl_op_bind(&op, op_named("cast"), &args, (sl_dtype)77, 1, NULL), SL_EINVAL);
}

Test(ops_registry, bind_fills_defaults_and_output_dtypes)
{
    struct sl_op_args args;
    struct sl_op op;
    memset(&args, 0, sizeof args);
    cr_assert_eq(bind(&op, "scale", &args, SL_DTYPE_I16, 2, NULL), SL_OK);
    cr_assert(op.u.scale.scale == 1 && op.u.scale.offset == 0 && op.out_dtype == SL_DTYPE_I16);
    cr_assert_eq(bind(&op, "clip", &args, SL_DTYPE_I16, 2, NULL), SL_OK);
    cr_assert(isinf(op.u.clip.lo) && op.u.clip.lo < 0 && isinf(op.u.clip.hi));
    cr_assert_eq(sl_op_args_set_number(&args, op_named("threshold"), "threshold", 2, NULL), SL_OK);
    cr_assert_eq(sl_op_args_set_string(&args, op_named("threshold"), "dtype", "bool", NULL), SL_OK);
    cr_assert_eq(bind(&op, "threshold", &args, SL_DTYPE_F64, 2, NULL), SL_OK);
    cr_assert(op.u.threshold.value == 1 && op.out_dtype == SL_DTYPE_BOOL);
    char text[128];
    sl_op_format(&op, text, sizeof text);
    cr_assert_str_eq(text, "threshold(threshold=2, dtype=bool) float64 -> bool");
}

Test(ops_registry, bound_downsample_applies_like_the_kernel)
{
    const struct sl_op_desc *ds = op_named("downsample");
    struct sl_op_args args;
    memset(&args, 0, sizeof args);
    const uint64_t f[2] = {2, 3};
    cr_assert_eq(sl_op_args_set_factors(&args, ds, "factors", 2, f, NULL), SL_OK);
    cr_assert_eq(sl_op_args_set_string(&args, ds, "method", "mode", NULL), SL_OK);
    struct sl_op op;
    cr_assert_eq(sl_op_bind(&op, ds, &args, SL_DTYPE_U16, 2, NULL), SL_OK);

    char text[128];
    sl_op_format(&op, text, sizeof text);
    cr_assert_str_eq(text, "downsample(factors=[2, 3], method=mode) uint16 -> uint16");
    const uint64_t in_shape[2] = {5, 7};
    uint64_t out_shape[2];
    sl_op_out_shape(&op, in_shape, out_shape);
    cr_assert(out_shape[0] == 3 && out_shape[1] == 3);
    struct sl_region out_r = {.rank = 2, .start = {2, 1}, .stop = {3, 3}}, in_r;
    cr_assert_eq(sl_op_input_region(&op, in_shape, &out_r, &in_r, NULL), SL_OK);
    cr_assert(in_r.start[0] == 4 && in_r.stop[0] == 5 && in_r.start[1] == 3 && in_r.stop[1] == 7);
    size_t nb;
    cr_assert_eq(sl_op_scratch_bytes(&op, NULL, &nb, NULL), SL_OK);
    cr_assert_eq(nb, 6 * 2 + 1);

    uint16_t in[35], out[9], direct[9];
    for (int i = 0; i < 35; i++)
        in[i] = (uint16_t)(i % 4);
    struct sl_view vi, vo, vd;
    cr_assert_eq(sl_view_init(&vi, SL_DTYPE_U16, 2, in_shape, in, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, SL_DTYPE_U16, 2, out_shape, out, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vd, SL_DTYPE_U16, 2, out_shape, direct, NULL), SL_OK);
    unsigned char scratch[64];
    cr_assert_eq(sl_op_apply(&op, &vi, &vo, scratch, nb, NULL), SL_OK);
    cr_assert_eq(sl_downsample(&op.u.downsample, &vi, &vd, scratch, nb, NULL), SL_OK);
    cr_assert_arr_eq(out, direct, sizeof out);

    vi.dtype = SL_DTYPE_I16;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_apply(&op, &vi, &vo, scratch, nb, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "downsample: bound to uint16 -> uint16 of rank 2; given int16 "
                               "(rank 2) -> uint16 (rank 2)");
}

Test(ops_registry, bound_map_ops_apply_like_their_kernels)
{
    const char *names[] = {"cast", "scale", "clip", "threshold"};
    for (size_t i = 0; i < 4; i++) {
        const struct sl_op_desc *d = op_named(names[i]);
        struct sl_op_args args;
        memset(&args, 0, sizeof args);
        cr_assert_eq(sl_op_args_set_string(&args, d, "dtype", "float32", NULL), SL_OK);
        if (i == 1)
            cr_assert_eq(sl_op_args_set_number(&args, d, "scale", 0.5, NULL), SL_OK);
        if (i == 2)
            cr_assert_eq(sl_op_args_set_number(&args, d, "max", 2, NULL), SL_OK);
        if (i == 3)
            cr_assert_eq(sl_op_args_set_number(&args, d, "threshold", 1, NULL), SL_OK);
        struct sl_op op;
        cr_assert_eq(sl_op_bind(&op, d, &args, SL_DTYPE_U8, 1, NULL), SL_OK);
        cr_assert_eq(op.out_dtype, SL_DTYPE_F32);
        uint8_t in[4] = {0, 1, 2, 3};
        float out[4];
        const uint64_t shape[1] = {4};
        struct sl_view vi, vo;
        cr_assert_eq(sl_view_init(&vi, SL_DTYPE_U8, 1, shape, in, NULL), SL_OK);
        cr_assert_eq(sl_view_init(&vo, SL_DTYPE_F32, 1, shape, out, NULL), SL_OK);
        cr_assert_eq(sl_op_apply(&op, &vi, &vo, NULL, 0, NULL), SL_OK);
        const float want[4][4] = {{0, 1, 2, 3}, {0, 0.5f, 1, 1.5f}, {0, 1, 2, 2}, {0, 0, 1, 1}};
        for (int k = 0; k < 4; k++)
            cr_assert_eq(out[k], want[i][k], "%s element %d: %g", names[i], k, out[k]);
        size_t nb = 1;
        cr_assert_eq(sl_op_scratch_bytes(&op, NULL, &nb, NULL), SL_OK);
        cr_assert_eq(nb, 0);
        struct sl_region r = {.rank = 1, .start = {1}, .stop = {3}}, ir;
        cr_assert_eq(sl_op_input_region(&op, shape, &r, &ir, NULL), SL_OK);
        cr_assert(sl_region_equal(&r, &ir));
    }
}

/* A bound filter row `name` for input of `dt` and `rank`, from `args`. */
static sl_status
bind_filter(struct sl_op *op, const char *name, const struct sl_op_args *args, sl_dtype dt,
            uint32_t rank, struct sl_error *err)
{
    return sl_op_bind(op, op_named(name), args, dt, rank, err);
}

Test(ops_registry, filters_bind_their_halo_and_boundary)
{
    const struct sl_op_desc *g = op_named("gaussian"), *m = op_named("median");
    struct sl_op_args args;
    memset(&args, 0, sizeof args);
    struct sl_error err = SL_ERROR_INIT;
    const double sigma[] = {0, 2, 0.5};
    cr_assert_eq(sl_op_args_set_numbers(&args, g, "sigma", 3, sigma, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_op_args_set_string(&args, g, "mode", "wrap", &err), SL_OK, "%s", err.text);
    struct sl_op op;
    cr_assert_eq(bind_filter(&op, "gaussian", &args, SL_DTYPE_F32, 3, &err), SL_OK, "%s", err.text);
    /* scipy's radius int(4 * sigma + 0.5): 0, 8, 2. */
    cr_assert_eq(op.halo_lo[0], 0);
    cr_assert_eq(op.halo_lo[1], 8);
    cr_assert_eq(op.halo_hi[1], 8);
    cr_assert_eq(op.halo_lo[2], 2);
    cr_assert_eq(op.boundary, SL_BOUNDARY_WRAP);
    cr_assert_eq(op.out_dtype, SL_DTYPE_F32);
    char text[160];
    sl_op_format(&op, text, sizeof text);
    cr_assert_str_eq(text, "gaussian(sigma=[0, 2, 0.5], mode=wrap) float32 -> float32");
    /* A sigma list of the wrong length, a bad mode, a size of 0. */
    err = SL_ERROR_INIT;
    cr_assert_eq(bind_filter(&op, "gaussian", &args, SL_DTYPE_F32, 2, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "gaussian: parameter \"sigma\" has 3 entries for input of rank 2 "
                               "(give 1 or 2)");
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_args_set_string(&args, g, "mode", "reflct", &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "gaussian: parameter \"mode\" \"reflct\" is not a boundary mode "
                               "(reflect, nearest, mirror, constant, wrap)");
    memset(&args, 0, sizeof args);
    const uint64_t size[] = {3};
    cr_assert_eq(sl_op_args_set_factors(&args, m, "size", 1, size, NULL), SL_OK);
    cr_assert_eq(bind_filter(&op, "median", &args, SL_DTYPE_U16, 2, &err), SL_OK, "%s", err.text);
    cr_assert_eq(op.halo_lo[0], 1);
    cr_assert_eq(op.halo_hi[1], 1);
    cr_assert_eq(op.boundary, SL_BOUNDARY_REFLECT, "reflect is the default");
    memset(&args, 0, sizeof args);
    err = SL_ERROR_INIT;
    cr_assert_eq(bind_filter(&op, "median", &args, SL_DTYPE_U16, 2, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "median: parameter \"size\" is required"), "%s", err.text);
}

Test(ops_registry, halo_ops_apply_where_blocks_lie)
{
    const struct sl_op_desc *d = op_named("maximum_filter");
    struct sl_op_args args;
    memset(&args, 0, sizeof args);
    const uint64_t size[] = {3};
    cr_assert_eq(sl_op_args_set_factors(&args, d, "size", 1, size, NULL), SL_OK);
    cr_assert_eq(sl_op_args_set_string(&args, d, "mode", "wrap", NULL), SL_OK);
    struct sl_op op;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_bind(&op, d, &args, SL_DTYPE_I32, 1, &err), SL_OK, "%s", err.text);
    /* Output [4, 8) of 12 needs [3, 9); [0, 4) wraps to the whole extent. */
    const uint64_t shape[] = {12};
    struct sl_region out = {.rank = 1, .start = {4}, .stop = {8}}, in;
    cr_assert_eq(sl_op_input_region(&op, shape, &out, &in, NULL), SL_OK);
    cr_assert_eq(in.start[0], 3);
    cr_assert_eq(in.stop[0], 9);
    out.start[0] = 0;
    out.stop[0] = 4;
    cr_assert_eq(sl_op_input_region(&op, shape, &out, &in, NULL), SL_OK);
    cr_assert_eq(in.start[0], 0);
    cr_assert_eq(in.stop[0], 12);
    int32_t x[12] = {5, 1, 2, 3, 4, 0, 6, 7, 8, 9, 10, 11}, y[4] = {0};
    struct sl_view vin, vout;
    cr_assert_eq(sl_view_init(&vin, SL_DTYPE_I32, 1, shape, x, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vout, SL_DTYPE_I32, 1, (const uint64_t[]){4}, y, NULL), SL_OK);
    size_t bytes = 0;
    cr_assert_eq(sl_op_scratch_bytes(&op, (const uint64_t[]){4}, &bytes, NULL), SL_OK);
    void *scratch = bytes > 0 ? malloc(bytes) : NULL;
    const uint64_t zero[] = {0};
    cr_assert_eq(sl_op_apply_at(&op, shape, &vin, zero, &vout, zero, scratch, bytes, &err), SL_OK,
                 "%s", err.text);
    /* Element 0's box wraps to element 11. */
    cr_assert_eq(y[0], 11);
    cr_assert_eq(y[1], 5);
    cr_assert_eq(y[2], 3);
    cr_assert_eq(y[3], 4);
    /* An input that misses part of the margin, and sl_op_apply, are refused. */
    struct sl_view part;
    cr_assert_eq(sl_view_init(&part, SL_DTYPE_I32, 1, (const uint64_t[]){6}, x, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_apply_at(&op, shape, &part, zero, &vout, zero, scratch, bytes, &err),
                 SL_EINVAL);
    cr_assert_str_eq(err.text, "maximum_filter: input block [0, 6) of dimension 0 lacks part of "
                               "[0, 12), which the output block needs");
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_apply(&op, &vin, &vout, scratch, bytes, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "sl_op_apply_at"), "%s", err.text);
    free(scratch);
}
