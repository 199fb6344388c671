/* SPDX-License-Identifier: MIT */
/*
 * The plugins the plugin tests load, one source built once per variant
 * (tests/graph/meson.build defines TEST_PLUGIN_<VARIANT>):
 *
 * - GOOD: one op of each kind, and one whose kernel fails: "add_const"
 *   (map: x + value in float64), "fail_above" (map: x in float64; a block
 *   holding an element above "limit" fails, naming it), "sum3" (halo: the
 *   sum of each element and its two neighbours along the last axis, edges
 *   "nearest", in float64), "pick" (regrid: the first element of each
 *   block of "factors", as a stride downsample);
 * - ABI: built for another ABI version;
 * - NO_ABI, NO_REGISTER: each lacks one of the two symbols;
 * - DUP_BUILTIN: adds "cast"; DUP_OTHER: adds GOOD's "add_const";
 *   DUP_SELF: adds "twice" twice;
 * - BAD_DESC: adds a good op, then a halo op without apply_at;
 * - FAILS: sl_plugin_register adds "add_const", then refuses, saying why.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice.h>

/* ---- elements as float64 ------------------------------------------------ */

static double
load(const struct sl_view *v, int64_t off)
{
    switch (v->dtype) {
#define LOAD_(NAME, sfx, T, ACC) \
    case SL_DTYPE_##NAME:        \
        return (double)((const T *)v->data)[off];
        SL_DTYPE_REAL_MAP(LOAD_)
#undef LOAD_
    default:
        return 0;
    }
}

/* Offset of `idx` in `v`, in elements. */
static int64_t
offset(const struct sl_view *v, const uint64_t *idx)
{
    int64_t off = 0;
    for (uint32_t d = 0; d < v->rank; d++)
        off += (int64_t)idx[d] * v->stride[d];
    return off;
}

/* The next index of `shape` in C order; false after the last. */
static bool
next_index(uint32_t rank, const uint64_t *shape, uint64_t *idx)
{
    for (uint32_t d = rank; d-- > 0;) {
        if (++idx[d] < shape[d])
            return true;
        idx[d] = 0;
    }
    return false;
}

static bool
is_empty(const struct sl_view *v)
{
    for (uint32_t d = 0; d < v->rank; d++)
        if (v->shape[d] == 0)
            return true;
    return false;
}

static sl_status
bind_to_f64(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
            struct sl_error *err)
{
    (void)args, (void)rank;
    if (!sl_dtype_is_real(in_dtype) || in_dtype == SL_DTYPE_F16)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "%s: %s input is not supported",
                            op->desc->name, sl_dtype_name(in_dtype));
    op->out_dtype = SL_DTYPE_F64;
    return SL_OK;
}

/* ---- add_const, fail_above: maps ----------------------------------------- */

static const struct sl_op_param add_const_params[] = {
    {"value", SL_OP_PARAM_NUMBER, true, "added to every element"},
};
static const struct sl_op_param fail_above_params[] = {
    {"limit", SL_OP_PARAM_NUMBER, true, "a block holding an element above it fails"},
};

static sl_status
add_const_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
                void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)scratch, (void)scratch_bytes, (void)err;
    const double value = op->args.value[0].number;
    uint64_t idx[SL_MAX_RANK] = {0};
    if (is_empty(in))
        return SL_OK;
    do
        ((double *)out->data)[offset(out, idx)] = load(in, offset(in, idx)) + value;
    while (next_index(in->rank, in->shape, idx));
    return SL_OK;
}

static sl_status
fail_above_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
                 void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)scratch, (void)scratch_bytes;
    const double limit = op->args.value[0].number;
    uint64_t idx[SL_MAX_RANK] = {0};
    if (is_empty(in))
        return SL_OK;
    do {
        const double x = load(in, offset(in, idx));
        if (x > limit)
            return sl_error_set(err, SL_EINVAL, NULL, "fail_above: element %.17g above limit %.17g",
                                x, limit);
        ((double *)out->data)[offset(out, idx)] = x;
    } while (next_index(in->rank, in->shape, idx));
    return SL_OK;
}

/* ---- sum3: a halo op -------------------------------------------------------- */

static sl_status
sum3_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
          struct sl_error *err)
{
    if (rank == 0)
        return sl_error_set(err, SL_EINVAL, NULL, "sum3: needs an axis");
    sl_status st = bind_to_f64(op, args, in_dtype, rank, err);
    if (st != SL_OK)
        return st;
    op->halo_lo[rank - 1] = 1;
    op->halo_hi[rank - 1] = 1;
    op->boundary = SL_BOUNDARY_NEAREST;
    return SL_OK;
}

static sl_status
sum3_apply_at(const struct sl_op *op, const uint64_t *shape, const struct sl_view *in,
              const uint64_t *in_start, const struct sl_view *out, const uint64_t *out_start,
              void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)op, (void)scratch, (void)scratch_bytes, (void)err;
    const uint32_t last = out->rank - 1;
    uint64_t idx[SL_MAX_RANK] = {0}, at[SL_MAX_RANK];
    if (is_empty(out))
        return SL_OK;
    do {
        double sum = 0;
        for (uint32_t d = 0; d < out->rank; d++)
            at[d] = out_start[d] + idx[d] - in_start[d];
        const uint64_t j = out_start[last] + idx[last];
        for (int k = -1; k <= 1; k++) {
            /* "nearest": beyond an edge, the edge's element. */
            uint64_t g = k < 0   ? (j > 0 ? j - 1 : 0)
                         : k > 0 ? (j + 1 < shape[last] ? j + 1 : j)
                                 : j;
            at[last] = g - in_start[last];
            sum += load(in, offset(in, at));
        }
        ((double *)out->data)[offset(out, idx)] = sum;
    } while (next_index(out->rank, out->shape, idx));
    return SL_OK;
}

/* ---- pick: a regrid op -------------------------------------------------------- */

static const struct sl_op_param pick_params[] = {
    {"factors", SL_OP_PARAM_FACTORS, true, "block extent per dimension; the first element stays"},
};

static sl_status
pick_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
          struct sl_error *err)
{
    const struct sl_op_value *f = &args->value[0];
    if (f->n_factors != rank)
        return sl_error_set(err, SL_EINVAL, NULL, "pick: %" PRIu32 " factors for rank %" PRIu32,
                            f->n_factors, rank);
    op->u.downsample.rank = rank;
    memcpy(op->u.downsample.factor, f->factors, rank * sizeof f->factors[0]);
    op->out_dtype = in_dtype;
    return SL_OK;
}

static sl_status
pick_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
           void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)scratch, (void)scratch_bytes, (void)err;
    const size_t es = sl_dtype_size(in->dtype);
    uint64_t idx[SL_MAX_RANK] = {0}, src[SL_MAX_RANK];
    if (is_empty(out))
        return SL_OK;
    do {
        for (uint32_t d = 0; d < out->rank; d++)
            src[d] = idx[d] * op->u.downsample.factor[d];
        memcpy((char *)out->data + offset(out, idx) * (int64_t)es,
               (const char *)in->data + offset(in, src) * (int64_t)es, es);
    } while (next_index(out->rank, out->shape, idx));
    return SL_OK;
}

/* ---- the variants ------------------------------------------------------------- */

static const struct sl_op_desc good_ops[] = {
    {.name = "add_const",
     .kind = SL_OP_KIND_MAP,
     .summary = "x + value, in float64",
     .n_params = 1,
     .params = add_const_params,
     .bind = bind_to_f64,
     .apply = add_const_apply},
    {.name = "fail_above",
     .kind = SL_OP_KIND_MAP,
     .summary = "x in float64; fails blocks with an element above limit",
     .n_params = 1,
     .params = fail_above_params,
     .bind = bind_to_f64,
     .apply = fail_above_apply},
    {.name = "sum3",
     .kind = SL_OP_KIND_HALO,
     .summary = "x[i-1] + x[i] + x[i+1] along the last axis, edges nearest",
     .bind = sum3_bind,
     .apply_at = sum3_apply_at},
    {.name = "pick",
     .kind = SL_OP_KIND_REGRID,
     .summary = "the first element of each block",
     .n_params = 1,
     .params = pick_params,
     .bind = pick_bind,
     .apply = pick_apply},
};

#if defined(TEST_PLUGIN_ABI)
SL_PLUGIN_EXPORT const uint32_t sl_plugin_abi_version = SL_PLUGIN_ABI_VERSION + 41;
#elif !defined(TEST_PLUGIN_NO_ABI)
SL_PLUGIN_DEFINE_ABI_VERSION;
#endif

#if defined(TEST_PLUGIN_NO_REGISTER)
/* A typo in the entry's name: the loader finds no sl_plugin_register. */
#define ENTRY_ sl_plugin_registr
SL_PLUGIN_EXPORT sl_status sl_plugin_registr(struct sl_plugin_host *host);
#else
#define ENTRY_ sl_plugin_register
#endif

SL_PLUGIN_EXPORT sl_status
ENTRY_(struct sl_plugin_host *host)
{
#if defined(TEST_PLUGIN_DUP_BUILTIN) || defined(TEST_PLUGIN_DUP_OTHER) || \
    defined(TEST_PLUGIN_DUP_SELF) || defined(TEST_PLUGIN_BAD_DESC)
    struct sl_op_desc d = good_ops[0];
#endif
#if defined(TEST_PLUGIN_DUP_BUILTIN)
    d.name = "cast";
    return host->add_op(host, &d);
#elif defined(TEST_PLUGIN_DUP_OTHER)
    return host->add_op(host, &d);
#elif defined(TEST_PLUGIN_DUP_SELF)
    d.name = "twice";
    if (host->add_op(host, &d) != SL_OK)
        return SL_EINVAL;
    return host->add_op(host, &d);
#elif defined(TEST_PLUGIN_BAD_DESC)
    d.name = "fine";
    if (host->add_op(host, &d) != SL_OK)
        return SL_EINVAL;
    struct sl_op_desc bad = good_ops[2];
    bad.name = "halo_without_apply_at";
    bad.apply_at = NULL;
    /* The status is ignored on purpose: the load fails all the same. */
    (void)host->add_op(host, &bad);
    return SL_OK;
#elif defined(TEST_PLUGIN_FAILS)
    (void)host->add_op(host, &good_ops[0]);
    return sl_error_set(host->err, SL_EINVAL, NULL, "no licence for %s", host->library);
#else
    for (size_t i = 0; i < sizeof good_ops / sizeof good_ops[0]; i++) {
        sl_status st = host->add_op(host, &good_ops[i]);
        if (st != SL_OK)
            return st;
    }
    return SL_OK;
#endif
}
#undef ENTRY_
