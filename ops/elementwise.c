/* SPDX-License-Identifier: MIT */
/*
 * Elementwise kernels: cast, scale, clip and threshold over strided n-d
 * views of any two kernel dtypes.
 *
 * DESIGN: one driver walks both views, merging dimensions that are
 * contiguous in both, and moves each row in tiles of SL__OPS_TILE
 * elements: load the input tile into its wide type (elementwise_convert.c),
 * transform the tile there, store it into the output type by the cast
 * rules.  A tile is read whole before any of it is written, so `in` and
 * `out` may be the same view.  Parameters are turned into the wide type's
 * terms once per call (clip bounds rounded inward for integers, threshold
 * comparisons made exact), so the per-element work is a compare or two.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <sluice/ops.h>

#include "ops_internal.h"

/* What happens to a tile between load and store. */
enum ew_op { EW_CAST, EW_SCALE, EW_CLIP, EW_THRESHOLD };

/* How threshold compares integers with a real threshold. */
enum ew_cmp {
    EW_CMP_NONE, /* the threshold is above every value */
    EW_CMP_ALL,  /* the threshold is below every value */
    EW_CMP_ABOVE /* x > the threshold's floor */
};

/* One element of any dtype. */
union ew_scalar {
#define SL__EW_SCALAR_MEMBER_(NAME, sfx, T, size, v3, kind, cls) T sfx;
    SL_DTYPE_MAP(SL__EW_SCALAR_MEMBER_) /* b8, i8, ... */
#undef SL__EW_SCALAR_MEMBER_
};

/* One elementwise call, its parameters in the wide type's terms. */
struct ew_job {
    enum ew_op op;
    enum sl__ew_kind kind;    /* wide type of the tile */
    sl__ew_load_fn *load;     /* input dtype into `kind` */
    sl__ew_store_fn *store;   /* `kind` into the output dtype */
    sl__ew_select_fn *select; /* threshold: output dtype from the mask */
    double scale, offset;     /* EW_SCALE */
    double lo_f, hi_f;        /* EW_CLIP, F64 */
    int64_t lo_i, hi_i;       /* EW_CLIP, I64 */
    uint64_t lo_u, hi_u;      /* EW_CLIP, U64 */
    enum ew_cmp cmp;          /* EW_THRESHOLD, integer kinds */
    double t_f;               /* EW_THRESHOLD, F64 */
    int64_t t_i;              /* EW_THRESHOLD, I64 with EW_CMP_ABOVE */
    uint64_t t_u;             /* EW_THRESHOLD, U64 with EW_CMP_ABOVE */
    union ew_scalar value;    /* EW_THRESHOLD: the output value */
};

/* Two views walked together: merged dimensions, byte steps. */
struct ew_walk {
    uint32_t rank;                   /* >= 1 */
    uint64_t shape[SL_MAX_RANK];     /* extents */
    ptrdiff_t in_step[SL_MAX_RANK];  /* input bytes between neighbours */
    ptrdiff_t out_step[SL_MAX_RANK]; /* output bytes between neighbours */
};

/* Drop extent-1 dimensions and merge neighbours contiguous in both views. */
static void
ew_walk_init(struct ew_walk *w, const struct sl_view *in, const struct sl_view *out)
{
    const ptrdiff_t ies = (ptrdiff_t)sl_dtype_size(in->dtype);
    const ptrdiff_t oes = (ptrdiff_t)sl_dtype_size(out->dtype);
    w->rank = 0;
    for (uint32_t d = 0; d < in->rank; d++) {
        if (in->shape[d] == 1)
            continue;
        const ptrdiff_t is = (ptrdiff_t)in->stride[d] * ies, os = (ptrdiff_t)out->stride[d] * oes;
        const uint32_t k = w->rank;
        if (k > 0 && sl__ops_steps_chain(w->in_step[k - 1], is, in->shape[d]) &&
            sl__ops_steps_chain(w->out_step[k - 1], os, in->shape[d])) {
            w->shape[k - 1] *= in->shape[d];
            w->in_step[k - 1] = is;
            w->out_step[k - 1] = os;
            continue;
        }
        w->shape[k] = in->shape[d];
        w->in_step[k] = is;
        w->out_step[k] = os;
        w->rank++;
    }
    if (w->rank == 0) {
        w->rank = 1;
        w->shape[0] = 1;
        w->in_step[0] = w->out_step[0] = 0;
    }
}

/* Transform a tile of n wide values; threshold writes `mask`. */
static void
ew_transform(const struct ew_job *job, void *tile, uint8_t *mask, size_t n)
{
    if (job->op == EW_SCALE) {
        double *t = tile;
        for (size_t j = 0; j < n; j++)
            t[j] = t[j] * job->scale + job->offset;
    } else if (job->op == EW_CLIP && job->kind == SL__EW_F64) {
        double *t = tile;
        for (size_t j = 0; j < n; j++)
            t[j] = t[j] < job->lo_f ? job->lo_f : t[j] > job->hi_f ? job->hi_f : t[j];
    } else if (job->op == EW_CLIP && job->kind == SL__EW_I64) {
        int64_t *t = tile;
        for (size_t j = 0; j < n; j++)
            t[j] = t[j] < job->lo_i ? job->lo_i : t[j] > job->hi_i ? job->hi_i : t[j];
    } else if (job->op == EW_CLIP) {
        uint64_t *t = tile;
        for (size_t j = 0; j < n; j++)
            t[j] = t[j] < job->lo_u ? job->lo_u : t[j] > job->hi_u ? job->hi_u : t[j];
    } else if (job->op == EW_THRESHOLD && job->kind == SL__EW_F64) {
        const double *t = tile;
        for (size_t j = 0; j < n; j++)
            mask[j] = t[j] > job->t_f; /* false for NaN */
    } else if (job->op == EW_THRESHOLD && job->cmp != EW_CMP_ABOVE) {
        memset(mask, job->cmp == EW_CMP_ALL, n);
    } else if (job->op == EW_THRESHOLD && job->kind == SL__EW_I64) {
        const int64_t *t = tile;
        for (size_t j = 0; j < n; j++)
            mask[j] = t[j] > job->t_i;
    } else if (job->op == EW_THRESHOLD) {
        const uint64_t *t = tile;
        for (size_t j = 0; j < n; j++)
            mask[j] = t[j] > job->t_u;
    }
}

static void
ew_run(const struct ew_job *job, const struct sl_view *in, const struct sl_view *out)
{
    struct ew_walk w;
    ew_walk_init(&w, in, out);
    const uint32_t last = w.rank - 1;
    const uint64_t n_row = w.shape[last];
    union sl__ops_tile tile;
    uint8_t mask[SL__OPS_TILE];
    uint64_t idx[SL_MAX_RANK] = {0};
    do {
        ptrdiff_t ioff = 0, ooff = 0;
        for (uint32_t d = 0; d < last; d++) {
            ioff += (ptrdiff_t)idx[d] * w.in_step[d];
            ooff += (ptrdiff_t)idx[d] * w.out_step[d];
        }
        for (uint64_t j0 = 0; j0 < n_row; j0 += SL__OPS_TILE) {
            const size_t n = n_row - j0 < SL__OPS_TILE ? (size_t)(n_row - j0) : SL__OPS_TILE;
            const unsigned char *src =
                (const unsigned char *)in->data + ioff + (ptrdiff_t)j0 * w.in_step[last];
            unsigned char *dst =
                (unsigned char *)out->data + ooff + (ptrdiff_t)j0 * w.out_step[last];
            job->load(&tile, src, w.in_step[last], n);
            ew_transform(job, &tile, mask, n);
            if (job->op == EW_THRESHOLD)
                job->select(dst, w.out_step[last], mask, n, &job->value);
            else
                job->store(dst, w.out_step[last], &tile, n);
        }
    } while (sl__index_next(idx, w.shape, last));
}

/* True when the views address the same elements in the same bytes. */
static bool
ew_same_view(const struct sl_view *in, const struct sl_view *out)
{
    if (in->data != out->data || sl_dtype_size(in->dtype) != sl_dtype_size(out->dtype))
        return false;
    for (uint32_t d = 0; d < in->rank; d++)
        if (in->shape[d] > 1 && in->stride[d] != out->stride[d])
            return false;
    return true;
}

/* The checks every elementwise kernel makes; fills the job's conversions
 * for wide type `kind`, or the input's own wide type when `as_double` is
 * false. */
static sl_status
ew_prepare(const char *what, const struct sl_view *in, const struct sl_view *out, bool as_double,
           struct ew_job *job, struct sl_error *err)
{
    if (in == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: NULL view", what);
    SL_TRY(sl_view_check(in, err));
    SL_TRY(sl_view_check(out, err));
    SL_TRY(sl__ops_check_kernel_dtype(what, in->dtype, err));
    SL_TRY(sl__ops_check_kernel_dtype(what, out->dtype, err));
    SL_TRY(sl__view_check_same_shape(what, in, out, err));
    if (!sl__view_is_empty(in) && !ew_same_view(in, out) && sl__view_overlap(in, out))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "%s: output overlaps input without being the same view", what);
    const enum sl__ew_kind kind = as_double ? SL__EW_F64 : sl__ew_conv_table[in->dtype].kind;
    job->kind = kind;
    job->load = sl__ew_conv_table[in->dtype].load[kind];
    job->store = sl__ew_conv_table[out->dtype].store[kind];
    job->select = sl__ew_conv_table[out->dtype].select;
    return SL_OK;
}

sl_status
sl_cast(const struct sl_view *in, const struct sl_view *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct ew_job job = {.op = EW_CAST};
    SL_TRY(ew_prepare("cast", in, out, false, &job, err));
    if (sl__view_is_empty(in))
        return SL_OK;
    if (in->dtype != out->dtype)
        ew_run(&job, in, out);
    else if (!ew_same_view(in, out))
        sl__view_copy_unchecked(out, in);
    return SL_OK;
}

sl_status
sl_scale(const struct sl_view *in, const struct sl_view *out, double scale, double offset,
         struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct ew_job job = {.op = EW_SCALE, .scale = scale, .offset = offset};
    SL_TRY(sl__scale_check(scale, offset, err));
    SL_TRY(ew_prepare("scale", in, out, true, &job, err));
    if (!sl__view_is_empty(in))
        ew_run(&job, in, out);
    return SL_OK;
}

/* v (an integer or ±inf) saturated into int64_t / uint64_t. */
static int64_t
sat_i64(double v)
{
    if (v < -0x1p63)
        return INT64_MIN;
    return v >= 0x1p63 ? INT64_MAX : (int64_t)v;
}

static uint64_t
sat_u64(double v)
{
    if (v <= 0)
        return 0;
    return v >= 0x1p64 ? UINT64_MAX : (uint64_t)v;
}

sl_status
sl__scale_check(double scale, double offset, struct sl_error *err)
{
    if (!isfinite(scale) || !isfinite(offset))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "scale: parameter \"%s\" is %g (it must be finite)",
                            isfinite(scale) ? "offset" : "scale", isfinite(scale) ? offset : scale);
    return SL_OK;
}

sl_status
sl__clip_check(sl_dtype in_dtype, double lo, double hi, struct sl_error *err)
{
    if (isnan(lo) || isnan(hi))
        return sl_error_set(err, SL_EINVAL, NULL, "clip: parameter \"%s\" is NaN",
                            isnan(lo) ? "min" : "max");
    if (lo > hi)
        return sl_error_set(err, SL_EINVAL, NULL, "clip: parameter \"min\" %g is above \"max\" %g",
                            lo, hi);
    /* Integers: the bounds are rounded inward, so an integer must lie between. */
    if (!sl_dtype_is_float(in_dtype) && ceil(lo) > floor(hi))
        return sl_error_set(err, SL_EINVAL, NULL, "clip: no %s value lies in [min, max] = [%g, %g]",
                            sl_dtype_name(in_dtype), lo, hi);
    return SL_OK;
}

sl_status
sl__threshold_check(double threshold, struct sl_error *err)
{
    if (isnan(threshold))
        return sl_error_set(err, SL_EINVAL, NULL, "threshold: parameter \"threshold\" is NaN");
    return SL_OK;
}

/* Clip bounds (checked) in the terms of the job's wide type; integers
 * round them inward. */
static void
ew_clip_setup(struct ew_job *job, double lo, double hi)
{
    job->lo_f = lo;
    job->hi_f = hi;
    job->lo_i = sat_i64(ceil(lo));
    job->hi_i = sat_i64(floor(hi));
    job->lo_u = sat_u64(ceil(lo));
    job->hi_u = sat_u64(floor(hi));
}

sl_status
sl_clip(const struct sl_view *in, const struct sl_view *out, double lo, double hi,
        struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct ew_job job = {.op = EW_CLIP};
    SL_TRY(ew_prepare("clip", in, out, false, &job, err));
    SL_TRY(sl__clip_check(in->dtype, lo, hi, err));
    ew_clip_setup(&job, lo, hi);
    if (!sl__view_is_empty(in))
        ew_run(&job, in, out);
    return SL_OK;
}

/* The threshold in the terms of the job's wide type: integers compare
 * with floor(t) (x > t exactly when x > floor(t)), or always/never when t
 * lies beyond the wide type. */
static void
ew_threshold_setup(struct ew_job *job, double t)
{
    job->t_f = t;
    job->cmp = EW_CMP_ABOVE;
    const double f = floor(t);
    if (job->kind == SL__EW_I64) {
        if (f >= 0x1p63)
            job->cmp = EW_CMP_NONE;
        else if (f < -0x1p63)
            job->cmp = EW_CMP_ALL;
        else
            job->t_i = (int64_t)f;
    } else if (job->kind == SL__EW_U64) {
        if (f >= 0x1p64)
            job->cmp = EW_CMP_NONE;
        else if (f < 0)
            job->cmp = EW_CMP_ALL;
        else
            job->t_u = (uint64_t)f;
    }
}

sl_status
sl_threshold(const struct sl_view *in, const struct sl_view *out, double threshold, double value,
             struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct ew_job job = {.op = EW_THRESHOLD};
    SL_TRY(sl__threshold_check(threshold, err));
    SL_TRY(ew_prepare("threshold", in, out, false, &job, err));
    ew_threshold_setup(&job, threshold);
    /* The output value, converted once by the cast rules. */
    sl__ew_conv_table[out->dtype].store[SL__EW_F64]((unsigned char *)&job.value, 0, &value, 1);
    if (!sl__view_is_empty(in))
        ew_run(&job, in, out);
    return SL_OK;
}
