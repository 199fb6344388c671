/* SPDX-License-Identifier: MIT */
/*
 * The registry of built-in operations: one table row per operation names
 * it, says whether it is a map or a regrid, lists its parameters, and
 * points at the functions that bind it to an input dtype and apply it to a
 * block.  The graph layer looks operations up by name (op_catalog.c, which
 * adds the operations registered at run time), fills their arguments from
 * JSON with the typed setters, binds them, and applies them per chunk;
 * nothing here knows JSON.
 *
 * DESIGN: binding does every check that does not depend on block shapes
 * (parameter values, dtypes, rank), with the same messages the kernels
 * give, so a graph fails when it is loaded rather than at its first chunk.
 * Messages name the operation, the parameter and its value.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/op_registry.h>
#include <sluice/ops.h>

#include "filter_internal.h"
#include "ops_internal.h"
#include "registry_internal.h"

/* ---- parameters --------------------------------------------------------- */

static const struct sl_op_param cast_params[] = {
    {"dtype", SL_OP_PARAM_DTYPE, true, "output dtype"},
};
static const struct sl_op_param clip_params[] = {
    {"min", SL_OP_PARAM_NUMBER, false, "lower bound; default none"},
    {"max", SL_OP_PARAM_NUMBER, false, "upper bound; default none"},
    {"dtype", SL_OP_PARAM_DTYPE, false, "output dtype; default the input's"},
};
static const struct sl_op_param downsample_params[] = {
    {"factors", SL_OP_PARAM_FACTORS, true, "block extent per dimension, each >= 1"},
    {"method", SL_OP_PARAM_METHOD, false, "stride, mean, min, max, median or mode; default mean"},
};
static const struct sl_op_param scale_params[] = {
    {"scale", SL_OP_PARAM_NUMBER, false, "multiplier; default 1"},
    {"offset", SL_OP_PARAM_NUMBER, false, "added after multiplying; default 0"},
    {"dtype", SL_OP_PARAM_DTYPE, false, "output dtype; default the input's"},
};
static const struct sl_op_param threshold_params[] = {
    {"threshold", SL_OP_PARAM_NUMBER, true, "elements strictly above it give `value`, others 0"},
    {"value", SL_OP_PARAM_NUMBER, false, "output above the threshold; default 1"},
    {"dtype", SL_OP_PARAM_DTYPE, false, "output dtype; default the input's"},
};

/* The value of parameter `i`, or NULL when unset. */
static const struct sl_op_value *
arg(const struct sl_op_args *args, uint32_t i)
{
    return args->value[i].set ? &args->value[i] : NULL;
}

static double
arg_number(const struct sl_op_args *args, uint32_t i, double fallback)
{
    return arg(args, i) ? args->value[i].number : fallback;
}

static sl_dtype
arg_dtype(const struct sl_op_args *args, uint32_t i, sl_dtype fallback)
{
    return arg(args, i) ? args->value[i].dtype : fallback;
}

/* EUNSUPPORTED unless both dtypes are kernel dtypes. */
static sl_status
check_map_dtypes(const char *op, sl_dtype in, sl_dtype out, struct sl_error *err)
{
    if (!sl__ops_dtype_is_kernel(in))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "%s: input dtype %s is not supported (kernels compute on bool, "
                            "int8..int64, uint8..uint64, float32, float64)",
                            op, sl_dtype_name(in));
    if (!sl__ops_dtype_is_kernel(out))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "%s: parameter \"dtype\" %s is not supported (kernels compute on "
                            "bool, int8..int64, uint8..uint64, float32, float64)",
                            op, sl_dtype_name(out));
    return SL_OK;
}

/* ---- the operations ------------------------------------------------------ */

static sl_status
cast_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
          struct sl_error *err)
{
    (void)rank;
    op->out_dtype = arg_dtype(args, 0, in_dtype);
    return check_map_dtypes("cast", in_dtype, op->out_dtype, err);
}

static sl_status
cast_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
           void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)op, (void)scratch, (void)scratch_bytes;
    return sl_cast(in, out, err);
}

static sl_status
clip_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
          struct sl_error *err)
{
    (void)rank;
    op->out_dtype = arg_dtype(args, 2, in_dtype);
    op->u.clip.lo = arg_number(args, 0, -INFINITY);
    op->u.clip.hi = arg_number(args, 1, INFINITY);
    SL_TRY(check_map_dtypes("clip", in_dtype, op->out_dtype, err));
    return sl__clip_check(in_dtype, op->u.clip.lo, op->u.clip.hi, err);
}

static sl_status
clip_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
           void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)scratch, (void)scratch_bytes;
    return sl_clip(in, out, op->u.clip.lo, op->u.clip.hi, err);
}

static sl_status
downsample_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
                struct sl_error *err)
{
    const struct sl_op_value *f = &args->value[0];
    struct sl_downsample_params *p = &op->u.downsample;
    if (f->n_factors != rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "downsample: parameter \"factors\" has %" PRIu32
                            " entries for input of rank %" PRIu32,
                            f->n_factors, rank);
    for (uint32_t d = 0; d < rank; d++)
        if (f->factors[d] == 0)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "downsample: parameter \"factors\" entry %" PRIu32
                                " is 0 (factors must be at least 1)",
                                d);
    memset(p, 0, sizeof *p);
    p->method = arg(args, 1) ? args->value[1].method : SL_DOWNSAMPLE_MEAN;
    p->rank = rank;
    memcpy(p->factor, f->factors, rank * sizeof p->factor[0]);
    op->out_dtype = in_dtype;
    return sl_downsample_check(p, in_dtype, rank, err);
}

static sl_status
downsample_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
                 void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    return sl_downsample(&op->u.downsample, in, out, scratch, scratch_bytes, err);
}

static sl_status
scale_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
           struct sl_error *err)
{
    (void)rank;
    op->out_dtype = arg_dtype(args, 2, in_dtype);
    op->u.scale.scale = arg_number(args, 0, 1.0);
    op->u.scale.offset = arg_number(args, 1, 0.0);
    SL_TRY(check_map_dtypes("scale", in_dtype, op->out_dtype, err));
    return sl__scale_check(op->u.scale.scale, op->u.scale.offset, err);
}

static sl_status
scale_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
            void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)scratch, (void)scratch_bytes;
    return sl_scale(in, out, op->u.scale.scale, op->u.scale.offset, err);
}

static sl_status
threshold_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
               struct sl_error *err)
{
    (void)rank;
    op->out_dtype = arg_dtype(args, 2, in_dtype);
    op->u.threshold.threshold = arg_number(args, 0, 0.0);
    op->u.threshold.value = arg_number(args, 1, 1.0);
    SL_TRY(check_map_dtypes("threshold", in_dtype, op->out_dtype, err));
    return sl__threshold_check(op->u.threshold.threshold, err);
}

static sl_status
threshold_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
                void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)scratch, (void)scratch_bytes;
    return sl_threshold(in, out, op->u.threshold.threshold, op->u.threshold.value, err);
}

/* The registry, sorted by name. */
static const struct sl_op_desc op_table[] = {
    {"cast", SL_OP_KIND_MAP, "convert to another dtype (round half to even, saturate)",
     SL_ARRAY_LEN(cast_params), cast_params, cast_bind, cast_apply, NULL, NULL},
    {"clip", SL_OP_KIND_MAP, "limit values to [min, max]", SL_ARRAY_LEN(clip_params), clip_params,
     clip_bind, clip_apply, NULL, NULL},
    {"downsample", SL_OP_KIND_REGRID,
     "reduce blocks of factors[d] elements to one (stride, mean, min, max, median, mode)",
     SL_ARRAY_LEN(downsample_params), downsample_params, downsample_bind, downsample_apply, NULL,
     NULL},
#define FILTER_ROW(name, summary, params)                                                    \
    {                                                                                        \
        name, SL_OP_KIND_HALO, summary, SL_ARRAY_LEN(params), params, sl__filter_bind, NULL, \
            sl__filter_scratch_bytes, sl__filter_apply_at                                    \
    }
    FILTER_ROW("gaussian", "Gaussian smoothing, separable (scipy.ndimage.gaussian_filter)",
               sl__gaussian_params),
    FILTER_ROW("gradient_magnitude",
               "magnitude of the Gaussian gradient (scipy.ndimage.gaussian_gradient_magnitude)",
               sl__gaussian_params),
    FILTER_ROW("laplace", "discrete Laplacian, second differences summed over the axes",
               sl__laplace_params),
    FILTER_ROW("maximum_filter", "largest element in a box around each element", sl__box_params),
    FILTER_ROW("median", "median of a box around each element", sl__box_params),
    FILTER_ROW("minimum_filter", "smallest element in a box around each element", sl__box_params),
    {"scale", SL_OP_KIND_MAP, "x * scale + offset", SL_ARRAY_LEN(scale_params), scale_params,
     scale_bind, scale_apply, NULL, NULL},
    {"threshold", SL_OP_KIND_MAP, "value where x > threshold, else 0",
     SL_ARRAY_LEN(threshold_params), threshold_params, threshold_bind, threshold_apply, NULL, NULL},
    FILTER_ROW("uniform", "mean of a box around each element (scipy.ndimage.uniform_filter)",
               sl__box_params),
#undef FILTER_ROW
};

_Static_assert(SL_ARRAY_LEN(threshold_params) <= SL_OP_MAX_PARAMS, "raise SL_OP_MAX_PARAMS");
_Static_assert(SL_ARRAY_LEN(scale_params) <= SL_OP_MAX_PARAMS, "raise SL_OP_MAX_PARAMS");
_Static_assert(SL_ARRAY_LEN(clip_params) <= SL_OP_MAX_PARAMS, "raise SL_OP_MAX_PARAMS");

/* ---- the table ------------------------------------------------------------ */

const struct sl_op_desc *
sl__op_builtins(uint32_t *n)
{
    *n = (uint32_t)SL_ARRAY_LEN(op_table);
    return op_table;
}

int
sl_op_param_index(const struct sl_op_desc *d, const char *name)
{
    for (uint32_t i = 0; d != NULL && name != NULL && i < d->n_params; i++)
        if (strcmp(d->params[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* ---- arguments ------------------------------------------------------------ */

static const char *const type_words[] = {
    [SL_OP_PARAM_NUMBER] = "a number",
    [SL_OP_PARAM_DTYPE] = "a dtype name",
    [SL_OP_PARAM_METHOD] = "a method name",
    [SL_OP_PARAM_FACTORS] = "a list of factors",
    [SL_OP_PARAM_NUMBERS] = "a number or a list of numbers",
    [SL_OP_PARAM_MODE] = "a boundary mode name",
};

static const char *const mode_names[] = {
    [SL_BOUNDARY_REFLECT] = "reflect", [SL_BOUNDARY_NEAREST] = "nearest",
    [SL_BOUNDARY_MIRROR] = "mirror",   [SL_BOUNDARY_CONSTANT] = "constant",
    [SL_BOUNDARY_WRAP] = "wrap",
};

/* The slot for parameter `name` of `d`, checked to take `type`. */
static sl_status
arg_slot(struct sl_op_args *args, const struct sl_op_desc *d, const char *name,
         sl_op_param_type type, struct sl_op_value **slot, struct sl_error *err)
{
    if (args == NULL || d == NULL || name == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op arguments: NULL argument");
    const int i = sl_op_param_index(d, name);
    if (i < 0) {
        char known[96];
        size_t len = 0;
        known[0] = '\0';
        for (uint32_t k = 0; k < d->n_params; k++)
            sl__strbuf_append(known, sizeof known, &len, "%s%s", k ? ", " : "", d->params[k].name);
        return sl_error_set(err, SL_EINVAL, NULL,
                            "op \"%s\" has no parameter \"%.40s\"; "
                            "parameters: %s",
                            d->name, name, known);
    }
    if (d->params[i].type != type)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: parameter \"%s\" takes %s, not %s", d->name,
                            name, type_words[d->params[i].type], type_words[type]);
    *slot = &args->value[i];
    return SL_OK;
}

sl_status
sl_op_args_set_number(struct sl_op_args *args, const struct sl_op_desc *d, const char *name,
                      double value, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_op_value *v = NULL;
    SL_TRY(arg_slot(args, d, name, SL_OP_PARAM_NUMBER, &v, err));
    v->number = value;
    v->set = true;
    return SL_OK;
}

/* Parse a dtype name for parameter `name` of op `op`, listing the known. */
static sl_status
parse_dtype(const char *op, const char *name, const char *s, sl_dtype *out, struct sl_error *err)
{
    if (sl_dtype_from_name(s, out, NULL) == SL_OK)
        return SL_OK;
    char known[160];
    size_t len = 0;
    known[0] = '\0';
    for (unsigned i = 0; i < SL_DTYPE_COUNT_; i++)
        sl__strbuf_append(known, sizeof known, &len, "%s%s", i ? ", " : "",
                          sl_dtype_name((sl_dtype)i));
    return sl_error_set(err, SL_EINVAL, NULL, "%s: parameter \"%s\" \"%.30s\" is not a dtype (%s)",
                        op, name, s, known);
}

sl_status
sl_op_args_set_string(struct sl_op_args *args, const struct sl_op_desc *d, const char *name,
                      const char *value, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    const int i = sl_op_param_index(d, name);
    const sl_op_param_type type =
        i >= 0 && (d->params[i].type == SL_OP_PARAM_METHOD || d->params[i].type == SL_OP_PARAM_MODE)
            ? d->params[i].type
            : SL_OP_PARAM_DTYPE;
    struct sl_op_value *v = NULL;
    SL_TRY(arg_slot(args, d, name, type, &v, err));
    if (value == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: parameter \"%s\" is NULL", d->name, name);
    if (type == SL_OP_PARAM_DTYPE) {
        SL_TRY(parse_dtype(d->name, name, value, &v->dtype, err));
    } else if (type == SL_OP_PARAM_MODE) {
        uint32_t m = 0;
        while (m < SL_ARRAY_LEN(mode_names) && strcmp(mode_names[m], value) != 0)
            m++;
        if (m == SL_ARRAY_LEN(mode_names))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "%s: parameter \"%s\" \"%.30s\" is not a boundary mode (reflect, "
                                "nearest, mirror, constant, wrap)",
                                d->name, name, value);
        v->mode = (sl_boundary)m;
    } else if (sl_downsample_method_from_name(value, &v->method, NULL) != SL_OK) {
        return sl_error_set(err, SL_EINVAL, NULL,
                            "%s: parameter \"%s\" \"%.30s\" is not a method (stride, mean, min, "
                            "max, median, mode)",
                            d->name, name, value);
    }
    v->set = true;
    return SL_OK;
}

sl_status
sl_op_args_set_factors(struct sl_op_args *args, const struct sl_op_desc *d, const char *name,
                       uint32_t n, const uint64_t *factors, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_op_value *v = NULL;
    SL_TRY(arg_slot(args, d, name, SL_OP_PARAM_FACTORS, &v, err));
    if (n > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "%s: parameter \"%s\" has %" PRIu32 " entries (at most %d)", d->name,
                            name, n, SL_MAX_RANK);
    if (factors == NULL && n > 0)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: parameter \"%s\" is NULL", d->name, name);
    for (uint32_t k = 0; k < n; k++)
        if (factors[k] == 0)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "%s: parameter \"%s\" entry %" PRIu32
                                " is 0 (factors must be at least 1)",
                                d->name, name, k);
    v->n_factors = n;
    if (n > 0)
        memcpy(v->factors, factors, n * sizeof factors[0]);
    v->set = true;
    return SL_OK;
}

sl_status
sl_op_args_set_numbers(struct sl_op_args *args, const struct sl_op_desc *d, const char *name,
                       uint32_t n, const double *values, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_op_value *v = NULL;
    SL_TRY(arg_slot(args, d, name, SL_OP_PARAM_NUMBERS, &v, err));
    if (n == 0 || n > SL_MAX_RANK)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "%s: parameter \"%s\" has %" PRIu32 " entries (1 to %d)", d->name, name,
                            n, SL_MAX_RANK);
    if (values == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: parameter \"%s\" is NULL", d->name, name);
    v->n_numbers = n;
    memcpy(v->numbers, values, n * sizeof values[0]);
    v->set = true;
    return SL_OK;
}

/* ---- bound operations -------------------------------------------------- */

/* Check what a kind's bind must fill (see struct sl_op_desc), so an added
 * op's mistake is refused when a graph is built, not met by the planner. */
static sl_status
bind_check_result(const struct sl_op *o, struct sl_error *err)
{
    const char *name = o->desc->name;
    if (sl_dtype_size(o->out_dtype) == 0)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: bind left an invalid output dtype %d", name,
                            (int)o->out_dtype);
    if (o->desc->kind == SL_OP_KIND_REGRID) {
        if (o->u.downsample.rank != o->rank)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "%s: bind set u.downsample.rank %" PRIu32 " for rank %" PRIu32
                                " (a regrid op gives one factor per dimension)",
                                name, o->u.downsample.rank, o->rank);
        for (uint32_t d = 0; d < o->rank; d++)
            if (o->u.downsample.factor[d] == 0)
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "%s: bind set factor %" PRIu32 " to 0 (factors are >= 1)", name,
                                    d);
    }
    if (o->desc->kind == SL_OP_KIND_HALO && (unsigned)o->boundary >= SL_ARRAY_LEN(mode_names))
        return sl_error_set(err, SL_EINVAL, NULL, "%s: bind left an unknown boundary mode %d", name,
                            (int)o->boundary);
    return SL_OK;
}

sl_status
sl_op_bind(struct sl_op *op, const struct sl_op_desc *d, const struct sl_op_args *args,
           sl_dtype in_dtype, uint32_t rank, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (op == NULL || d == NULL || args == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op bind: NULL argument");
    if (sl_dtype_size(in_dtype) == 0)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: invalid input dtype %d", d->name,
                            (int)in_dtype);
    if (rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "%s: rank %" PRIu32 " exceeds %d", d->name,
                            rank, SL_MAX_RANK);
    for (uint32_t i = 0; i < d->n_params; i++)
        if (d->params[i].required && !args->value[i].set)
            return sl_error_set(err, SL_EINVAL, NULL, "%s: parameter \"%s\" is required (%s)",
                                d->name, d->params[i].name, d->params[i].doc);
    struct sl_op o;
    memset(&o, 0, sizeof o);
    o.desc = d;
    o.in_dtype = in_dtype;
    o.rank = rank;
    o.args = *args;
    SL_TRY(d->bind(&o, args, in_dtype, rank, err));
    SL_TRY(bind_check_result(&o, err));
    *op = o;
    return SL_OK;
}

void
sl_op_out_shape(const struct sl_op *op, const uint64_t *in_shape, uint64_t *out_shape)
{
    if (op->desc->kind == SL_OP_KIND_REGRID)
        sl_downsample_shape(&op->u.downsample, in_shape, out_shape);
    else if (op->rank > 0)
        memmove(out_shape, in_shape, op->rank * sizeof in_shape[0]);
}

void
sl_op_halo_interval(const struct sl_op *op, uint32_t d, uint64_t extent, uint64_t a, uint64_t b,
                    uint64_t *in_a, uint64_t *in_b)
{
    const uint64_t lo = op->halo_lo[d], hi = op->halo_hi[d];
    if (a < b && b <= extent && extent <= SL_OP_HALO_EXTENT_MAX && lo <= SL_OP_HALO_EXTENT_MAX &&
        hi <= SL_OP_HALO_EXTENT_MAX) {
        /* Every element the boundary maps the grown interval to: the
         * filters' own rule, so the planner reads what they need. */
        sl__filt_needed(op->boundary, (int64_t)a - (int64_t)lo, (int64_t)(b + hi), extent, in_a,
                        in_b);
        return;
    }
    /* An empty interval, or one too long for the boundary arithmetic. */
    *in_a = a > lo ? a - lo : 0;
    *in_b = b < extent && extent - b > hi ? b + hi : extent;
    if (*in_a > *in_b)
        *in_a = *in_b;
}

sl_status
sl_op_input_region(const struct sl_op *op, const uint64_t *in_shape,
                   const struct sl_region *out_region, struct sl_region *in_region,
                   struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (op == NULL || op->desc == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op input region: op not bound");
    if (op->desc->kind == SL_OP_KIND_REGRID)
        return sl_downsample_input_region(&op->u.downsample, in_shape, out_region, in_region, err);
    if (in_shape == NULL || out_region == NULL || in_region == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "%s input region: NULL argument", op->desc->name);
    SL_TRY(sl_region_check_within(out_region, op->rank, in_shape, err));
    *in_region = *out_region;
    if (op->desc->kind == SL_OP_KIND_HALO)
        for (uint32_t d = 0; d < op->rank; d++)
            sl_op_halo_interval(op, d, in_shape[d], out_region->start[d], out_region->stop[d],
                                &in_region->start[d], &in_region->stop[d]);
    return SL_OK;
}

sl_status
sl_op_scratch_bytes(const struct sl_op *op, const uint64_t *in_shape, size_t *bytes,
                    struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (op == NULL || op->desc == NULL || bytes == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op scratch: op not bound or NULL argument");
    if (op->desc->kind == SL_OP_KIND_HALO && op->desc->scratch_bytes != NULL) {
        if (in_shape == NULL)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "%s scratch: halo ops need the output block shape", op->desc->name);
        return op->desc->scratch_bytes(op, in_shape, bytes, err);
    }
    /* Only the built-in downsample's regrid takes scratch. */
    if (op->desc->kind != SL_OP_KIND_REGRID || op->desc->bind != downsample_bind) {
        *bytes = 0;
        return SL_OK;
    }
    return sl_downsample_scratch_bytes(&op->u.downsample, op->in_dtype, in_shape, bytes, err);
}

/* EINVAL unless the views have the dtypes and rank `op` was bound to. */
static sl_status
check_views(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
            struct sl_error *err)
{
    if (in->dtype == op->in_dtype && out->dtype == op->out_dtype && in->rank == op->rank &&
        out->rank == op->rank)
        return SL_OK;
    return sl_error_set(err, SL_EINVAL, NULL,
                        "%s: bound to %s -> %s of rank %" PRIu32 "; given %s (rank %" PRIu32
                        ") -> %s (rank %" PRIu32 ")",
                        op->desc->name, sl_dtype_name(op->in_dtype), sl_dtype_name(op->out_dtype),
                        op->rank, sl_dtype_name(in->dtype), in->rank, sl_dtype_name(out->dtype),
                        out->rank);
}

sl_status
sl_op_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
            void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (op == NULL || op->desc == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op apply: op not bound");
    if (in == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: NULL view", op->desc->name);
    SL_TRY(check_views(op, in, out, err));
    if (op->desc->apply == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "%s: a halo op; apply it with sl_op_apply_at, which says where the "
                            "blocks lie",
                            op->desc->name);
    return op->desc->apply(op, in, out, scratch, scratch_bytes, err);
}

sl_status
sl_op_apply_at(const struct sl_op *op, const uint64_t *shape, const struct sl_view *in,
               const uint64_t *in_start, const struct sl_view *out, const uint64_t *out_start,
               void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (op == NULL || op->desc == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "op apply: op not bound");
    if (op->desc->kind != SL_OP_KIND_HALO || op->desc->apply_at == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: not a halo op; apply it with sl_op_apply",
                            op->desc->name);
    if (shape == NULL || in == NULL || out == NULL || in_start == NULL || out_start == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: NULL argument", op->desc->name);
    SL_TRY(check_views(op, in, out, err));
    for (uint32_t d = 0; d < op->rank; d++) {
        uint64_t a = 0, b = 0;
        if (out_start[d] > shape[d] || out->shape[d] > shape[d] - out_start[d])
            return sl_error_set(err, SL_EBOUNDS, NULL,
                                "%s: output block [%" PRIu64 ", %" PRIu64 ") of dimension %" PRIu32
                                " leaves the extent %" PRIu64,
                                op->desc->name, out_start[d], out_start[d] + out->shape[d], d,
                                shape[d]);
        sl_op_halo_interval(op, d, shape[d], out_start[d], out_start[d] + out->shape[d], &a, &b);
        if (in_start[d] > a || in->shape[d] < b - in_start[d])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "%s: input block [%" PRIu64 ", %" PRIu64 ") of dimension %" PRIu32
                                " lacks part of [%" PRIu64 ", %" PRIu64
                                "), which the output block needs",
                                op->desc->name, in_start[d], in_start[d] + in->shape[d], d, a, b);
    }
    return op->desc->apply_at(op, shape, in, in_start, out, out_start, scratch, scratch_bytes, err);
}

size_t
sl_op_format(const struct sl_op *op, char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    if (op == NULL || op->desc == NULL) {
        sl__strbuf_append(buf, size, &len, "(unbound op)");
        return len;
    }
    const struct sl_op_desc *d = op->desc;
    sl__strbuf_append(buf, size, &len, "%s(", d->name);
    bool first = true;
    for (uint32_t i = 0; i < d->n_params; i++) {
        const struct sl_op_value *v = &op->args.value[i];
        if (!v->set)
            continue;
        sl__strbuf_append(buf, size, &len, "%s%s=", first ? "" : ", ", d->params[i].name);
        first = false;
        switch (d->params[i].type) {
        case SL_OP_PARAM_NUMBER:
            sl__strbuf_append(buf, size, &len, "%.15g", v->number);
            break;
        case SL_OP_PARAM_DTYPE:
            sl__strbuf_append(buf, size, &len, "%s", sl_dtype_name(v->dtype));
            break;
        case SL_OP_PARAM_METHOD:
            sl__strbuf_append(buf, size, &len, "%s", sl_downsample_method_name(v->method));
            break;
        case SL_OP_PARAM_FACTORS:
            for (uint32_t k = 0; k < v->n_factors; k++)
                sl__strbuf_append(buf, size, &len, "%s%" PRIu64, k ? ", " : "[", v->factors[k]);
            sl__strbuf_append(buf, size, &len, "%s", v->n_factors ? "]" : "[]");
            break;
        case SL_OP_PARAM_NUMBERS:
            for (uint32_t k = 0; k < v->n_numbers; k++)
                sl__strbuf_append(buf, size, &len, "%s%.15g",
                                  k                  ? ", "
                                  : v->n_numbers > 1 ? "["
                                                     : "",
                                  v->numbers[k]);
            sl__strbuf_append(buf, size, &len, "%s", v->n_numbers > 1 ? "]" : "");
            break;
        case SL_OP_PARAM_MODE:
            sl__strbuf_append(buf, size, &len, "%s",
                              (unsigned)v->mode < SL_ARRAY_LEN(mode_names) ? mode_names[v->mode]
                                                                           : "?");
            break;
        }
    }
    sl__strbuf_append(buf, size, &len, ") %s -> %s", sl_dtype_name(op->in_dtype),
                      sl_dtype_name(op->out_dtype));
    return len;
}
