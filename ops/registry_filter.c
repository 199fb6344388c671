/* SPDX-License-Identifier: MIT */
/*
 * The registry rows of the neighbourhood filters (<sluice/filter.h>):
 * their parameters as graph files write them, and the functions that bind
 * them to an input and apply them where a block lies.  registry.c puts the
 * rows in its table.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <sluice/filter.h>
#include <sluice/op_registry.h>

#include "ops_internal.h"
#include "registry_internal.h"

#define MODE_DOC "reflect, nearest, mirror, constant or wrap (scipy.ndimage's); default reflect"
#define CVAL_DOC "the value beyond the edges with mode constant; default 0"

const struct sl_op_param sl__gaussian_params[4] = {
    {"sigma", SL_OP_PARAM_NUMBERS, true,
     "standard deviation, one for every axis or one per axis; 0 leaves an axis alone"},
    {"truncate", SL_OP_PARAM_NUMBER, false,
     "radius in sigmas: int(truncate * sigma + 0.5); "
     "default 4"},
    {"mode", SL_OP_PARAM_MODE, false, MODE_DOC},
    {"cval", SL_OP_PARAM_NUMBER, false, CVAL_DOC},
};
const struct sl_op_param sl__box_params[3] = {
    {"size", SL_OP_PARAM_FACTORS, true, "box extent, one for every axis or one per axis, >= 1"},
    {"mode", SL_OP_PARAM_MODE, false, MODE_DOC},
    {"cval", SL_OP_PARAM_NUMBER, false, CVAL_DOC},
};
const struct sl_op_param sl__laplace_params[2] = {
    {"mode", SL_OP_PARAM_MODE, false, MODE_DOC},
    {"cval", SL_OP_PARAM_NUMBER, false, CVAL_DOC},
};

/* The filter each row computes, by name. */
static const struct {
    const char *name;
    sl_filter_kind kind;
} kinds[] = {
    {"gaussian", SL_FILTER_GAUSSIAN}, {"gradient_magnitude", SL_FILTER_GRADIENT_MAGNITUDE},
    {"laplace", SL_FILTER_LAPLACE},   {"maximum_filter", SL_FILTER_MAXIMUM},
    {"median", SL_FILTER_MEDIAN},     {"minimum_filter", SL_FILTER_MINIMUM},
    {"uniform", SL_FILTER_UNIFORM},
};

/* Index of parameter `name` of `d`, set in `args`, or -1. */
static int
given(const struct sl_op_desc *d, const struct sl_op_args *args, const char *name)
{
    for (uint32_t i = 0; i < d->n_params; i++)
        if (strcmp(d->params[i].name, name) == 0)
            return args->value[i].set ? (int)i : -1;
    return -1;
}

/* Parameter `name`'s per-axis list for `rank` axes: one entry stands for every axis. */
static sl_status
per_axis(const char *op, const char *name, uint32_t n, uint32_t rank, struct sl_error *err)
{
    if (n == 1 || n == rank)
        return SL_OK;
    return sl_error_set(err, SL_EINVAL, NULL,
                        "%s: parameter \"%s\" has %" PRIu32 " entries for input of rank %" PRIu32
                        " (give 1 or %" PRIu32 ")",
                        op, name, n, rank, rank);
}

sl_status
sl__filter_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
                struct sl_error *err)
{
    const struct sl_op_desc *d = op->desc;
    struct sl_filter_params *p = &op->u.filter;
    memset(p, 0, sizeof *p);
    size_t k = 0;
    while (k < SL_ARRAY_LEN(kinds) && strcmp(kinds[k].name, d->name) != 0)
        k++;
    if (SL_NEVER(k == SL_ARRAY_LEN(kinds)))
        return sl_error_set(err, SL_EINVAL, NULL, "%s: not a filter", d->name);
    p->kind = kinds[k].kind;
    p->rank = rank;
    p->truncate = 4.0;
    p->mode = SL_BOUNDARY_REFLECT;
    int i;
    if ((i = given(d, args, "sigma")) >= 0) {
        const struct sl_op_value *v = &args->value[i];
        SL_TRY(per_axis(d->name, "sigma", v->n_numbers, rank, err));
        for (uint32_t a = 0; a < rank; a++)
            p->sigma[a] = v->numbers[v->n_numbers == 1 ? 0 : a];
    }
    if ((i = given(d, args, "truncate")) >= 0)
        p->truncate = args->value[i].number;
    if ((i = given(d, args, "size")) >= 0) {
        const struct sl_op_value *v = &args->value[i];
        SL_TRY(per_axis(d->name, "size", v->n_factors, rank, err));
        for (uint32_t a = 0; a < rank; a++)
            p->size[a] = v->factors[v->n_factors == 1 ? 0 : a];
    }
    if ((i = given(d, args, "mode")) >= 0)
        p->mode = args->value[i].mode;
    if ((i = given(d, args, "cval")) >= 0)
        p->cval = args->value[i].number;
    SL_TRY(sl_filter_check(p, in_dtype, rank, err));
    op->out_dtype = sl_filter_out_dtype(p, in_dtype);
    op->boundary = p->mode;
    sl_filter_halo(p, op->halo_lo, op->halo_hi);
    return SL_OK;
}

sl_status
sl__filter_scratch_bytes(const struct sl_op *op, const uint64_t *out_shape, size_t *bytes,
                         struct sl_error *err)
{
    return sl_filter_scratch_bytes(&op->u.filter, op->in_dtype, out_shape, bytes, err);
}

sl_status
sl__filter_apply_at(const struct sl_op *op, const uint64_t *shape, const struct sl_view *in,
                    const uint64_t *in_start, const struct sl_view *out, const uint64_t *out_start,
                    void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    return sl_filter(&op->u.filter, shape, in, in_start, out, out_start, scratch, scratch_bytes,
                     err);
}
