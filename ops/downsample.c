/* SPDX-License-Identifier: MIT */
/*
 * Downsampling: method names, parameter checks, output shapes and input
 * regions, scratch sizes, and sl_downsample(), which validates a call,
 * normalizes it into a `struct sl__ds_plan` and runs the kernel for the
 * method and dtype (downsample_reduce.c: mean, min, max; downsample_order.c:
 * median, mode).  The stride method needs no arithmetic: it is a copy of a
 * strided view of the input, so it serves every dtype.
 *
 * DESIGN: the semantics are TensorStore's downsample driver's.  Output
 * element o of a dimension with factor f covers input [o * f, o * f + f),
 * clipped at the input's edge, so every block but the last is whole and the
 * caller passes exactly the input region that matches its output region.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/ops.h>

#include "ops_internal.h"

static const char *const method_names[SL_DOWNSAMPLE_METHOD_COUNT_] = {
#define SL_METHOD_NAME_(NAME, str) [SL_DOWNSAMPLE_##NAME] = str,
    SL_DOWNSAMPLE_METHOD_MAP(SL_METHOD_NAME_)
#undef SL_METHOD_NAME_
};

const char *
sl_downsample_method_name(sl_downsample_method m)
{
    return (unsigned)m < SL_DOWNSAMPLE_METHOD_COUNT_ ? method_names[m] : "invalid";
}

sl_status
sl_downsample_method_from_name(const char *name, sl_downsample_method *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (name == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "downsample method: NULL argument");
    for (unsigned m = 0; m < SL_DOWNSAMPLE_METHOD_COUNT_; m++) {
        if (strcmp(name, method_names[m]) == 0) {
            *out = (sl_downsample_method)m;
            return SL_OK;
        }
    }
    char known[96];
    size_t len = 0;
    known[0] = '\0';
    for (unsigned m = 0; m < SL_DOWNSAMPLE_METHOD_COUNT_; m++)
        sl__strbuf_append(known, sizeof known, &len, "%s%s", m ? ", " : "", method_names[m]);
    return sl_error_set(err, SL_EINVAL, NULL, "unknown downsample method \"%.40s\"; known: %s",
                        name, known);
}

bool
sl__ops_dtype_is_kernel(sl_dtype dt)
{
    return sl_dtype_is_real(dt);
}

sl_status
sl__ops_check_kernel_dtype(const char *what, sl_dtype dt, struct sl_error *err)
{
    if (sl__ops_dtype_is_kernel(dt))
        return SL_OK;
    return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                        "%s does not support dtype %s (it supports bool, int8..int64, "
                        "uint8..uint64, float32, float64)",
                        what, sl_dtype_name(dt));
}

bool
sl_downsample_supports(sl_downsample_method m, sl_dtype dt)
{
    if ((unsigned)m >= SL_DOWNSAMPLE_METHOD_COUNT_ || sl_dtype_size(dt) == 0)
        return false;
    return m == SL_DOWNSAMPLE_STRIDE || sl__ops_dtype_is_kernel(dt);
}

sl_status
sl_downsample_check(const struct sl_downsample_params *p, sl_dtype dt, uint32_t rank,
                    struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (p == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "downsample: NULL params");
    if ((unsigned)p->method >= SL_DOWNSAMPLE_METHOD_COUNT_)
        return sl_error_set(err, SL_EINVAL, NULL, "downsample: invalid method %d", (int)p->method);
    if (p->rank != rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "downsample: %" PRIu32 " factors for input of rank %" PRIu32, p->rank,
                            rank);
    if (rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "downsample: rank %" PRIu32 " exceeds %d",
                            rank, SL_MAX_RANK);
    for (uint32_t d = 0; d < rank; d++)
        if (p->factor[d] == 0)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "downsample: factor 0 in dimension %" PRIu32 " (factors must be "
                                "at least 1)",
                                d);
    if (sl_dtype_size(dt) == 0)
        return sl_error_set(err, SL_EINVAL, NULL, "downsample: invalid dtype %d", (int)dt);
    if (!sl_downsample_supports(p->method, dt))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "downsample method \"%s\" does not support dtype %s (only \"stride\" "
                            "does; the others need bool, integers, float32 or float64)",
                            method_names[p->method], sl_dtype_name(dt));
    return SL_OK;
}

/* ceil(n / f) without overflow. */
static uint64_t
div_ceil(uint64_t n, uint64_t f)
{
    return n / f + (n % f != 0);
}

void
sl_downsample_shape(const struct sl_downsample_params *p, const uint64_t *in_shape,
                    uint64_t *out_shape)
{
    for (uint32_t d = 0; d < p->rank; d++)
        out_shape[d] = div_ceil(in_shape[d], p->factor[d]);
}

void
sl_downsample_chunks(const struct sl_downsample_params *p, const uint64_t *in_chunk,
                     const uint64_t *out_chunk, uint64_t *chunk)
{
    for (uint32_t d = 0; d < p->rank; d++) {
        const uint64_t f = p->factor[d], c = in_chunk[d];
        const bool per_input = f > 0 && c % f == 0 && c / f > 0 && out_chunk[d] % (c / f) == 0;
        chunk[d] = per_input ? c / f : out_chunk[d];
    }
}

sl_status
sl_downsample_input_region(const struct sl_downsample_params *p, const uint64_t *in_shape,
                           const struct sl_region *out_region, struct sl_region *in_region,
                           struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (p == NULL || in_shape == NULL || out_region == NULL || in_region == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "downsample input region: NULL argument");
    if (out_region->rank != p->rank || p->rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "downsample input region: region of rank %" PRIu32 " for %" PRIu32
                            " factors",
                            out_region->rank, p->rank);
    uint64_t out_shape[SL_MAX_RANK];
    sl_downsample_shape(p, in_shape, out_shape);
    SL_TRY(sl_region_check_within(out_region, p->rank, out_shape, err));
    struct sl_region r = {.rank = p->rank};
    for (uint32_t d = 0; d < p->rank; d++) {
        /* [start * f, stop * f) clipped to the input; products past 2^64
         * are past the input too. */
        uint64_t start, stop;
        if (!sl_u64_mul_fits(out_region->start[d], p->factor[d], &start) || start > in_shape[d])
            start = in_shape[d];
        if (!sl_u64_mul_fits(out_region->stop[d], p->factor[d], &stop) || stop > in_shape[d])
            stop = in_shape[d];
        r.start[d] = start;
        r.stop[d] = out_region->start[d] == out_region->stop[d] ? start : stop;
    }
    *in_region = r;
    return SL_OK;
}

/* Elements in the largest block: the product of min(factor, extent). */
static sl_status
block_max_of(const struct sl_downsample_params *p, const uint64_t *in_shape, uint64_t *n,
             struct sl_error *err)
{
    uint64_t ext[SL_MAX_RANK];
    for (uint32_t d = 0; d < p->rank; d++)
        ext[d] = in_shape != NULL && in_shape[d] < p->factor[d] ? in_shape[d] : p->factor[d];
    return sl_shape_count(p->rank, ext, n, err);
}

sl_status
sl_downsample_scratch_bytes(const struct sl_downsample_params *p, sl_dtype dt,
                            const uint64_t *in_shape, size_t *bytes, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (bytes == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "downsample scratch: NULL argument");
    SL_TRY(sl_downsample_check(p, dt, p == NULL ? 0 : p->rank, err));
    if (p->method != SL_DOWNSAMPLE_MEDIAN && p->method != SL_DOWNSAMPLE_MODE) {
        *bytes = 0;
        return SL_OK;
    }
    const size_t es = sl_dtype_size(dt);
    uint64_t n;
    size_t b;
    SL_TRY(block_max_of(p, in_shape, &n, err));
    /* One key (element-sized) per element, plus slack to align the start. */
    if (n > SIZE_MAX / es || !sl_size_add_fits((size_t)n * es, es - 1, &b))
        return sl_error_set(err, SL_EOVERFLOW, NULL,
                            "downsample %s: scratch for blocks of %" PRIu64
                            " %s elements exceeds SIZE_MAX",
                            method_names[p->method], n, sl_dtype_name(dt));
    *bytes = b;
    return SL_OK;
}

/* Check the views of a downsample call against each other and `p`. */
static sl_status
check_views(const struct sl_downsample_params *p, const struct sl_view *in,
            const struct sl_view *out, struct sl_error *err)
{
    if (in == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "downsample: NULL view");
    SL_TRY(sl_view_check(in, err));
    SL_TRY(sl_view_check(out, err));
    SL_TRY(sl_downsample_check(p, in->dtype, in->rank, err));
    if (out->dtype != in->dtype || out->rank != in->rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "downsample: output %s of rank %" PRIu32
                            " for input %s of rank %" PRIu32 " (they must match)",
                            sl_dtype_name(out->dtype), out->rank, sl_dtype_name(in->dtype),
                            in->rank);
    uint64_t want[SL_MAX_RANK];
    sl_downsample_shape(p, in->shape, want);
    for (uint32_t d = 0; d < in->rank; d++) {
        if (out->shape[d] != want[d])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "downsample: output extent %" PRIu64 " in dimension %" PRIu32
                                " should be %" PRIu64 " = ceil(%" PRIu64 " / %" PRIu64 ")",
                                out->shape[d], d, want[d], in->shape[d], p->factor[d]);
    }
    if (!sl__view_is_empty(in) && sl__view_overlap(in, out))
        return sl_error_set(err, SL_EINVAL, NULL, "downsample: output overlaps input");
    return SL_OK;
}

/*
 * Merge a dimension of factor 1 into the next one when both views are
 * contiguous across them and the next one's blocks are whole (its extent a
 * multiple of its factor), so no block straddles the seam: factors
 * (1, 1, 2) on a C-order block become one long row of pairs.
 */
static void
plan_merge(struct sl__ds_plan *pl)
{
    for (uint32_t d = pl->rank - 1; d-- > 0;) {
        const uint32_t e = d + 1;
        if (pl->factor[d] != 1 || pl->in_shape[e] % pl->factor[e] != 0 ||
            !sl__ops_steps_chain(pl->in_step[d], pl->in_step[e], pl->in_shape[e]) ||
            !sl__ops_steps_chain(pl->out_step[d], pl->out_step[e], pl->out_shape[e]))
            continue;
        pl->in_shape[d] *= pl->in_shape[e];
        pl->out_shape[d] *= pl->out_shape[e];
        pl->in_step[d] = pl->in_step[e];
        pl->out_step[d] = pl->out_step[e];
        pl->factor[d] = pl->factor[e];
        for (uint32_t k = e; k + 1 < pl->rank; k++) {
            pl->in_shape[k] = pl->in_shape[k + 1];
            pl->out_shape[k] = pl->out_shape[k + 1];
            pl->in_step[k] = pl->in_step[k + 1];
            pl->out_step[k] = pl->out_step[k + 1];
            pl->factor[k] = pl->factor[k + 1];
        }
        pl->rank--;
    }
}

/* Fill the plan: drop extent-1 dimensions, strides in bytes, merge what
 * can be merged. */
static void
plan_init(struct sl__ds_plan *pl, const struct sl_downsample_params *p, const struct sl_view *in,
          const struct sl_view *out)
{
    const size_t es = sl_dtype_size(in->dtype);
    memset(pl, 0, sizeof *pl);
    pl->elem_size = es;
    pl->in = in->data;
    pl->out = out->data;
    for (uint32_t d = 0; d < in->rank; d++) {
        if (in->shape[d] == 1)
            continue;
        const uint32_t k = pl->rank++;
        pl->in_shape[k] = in->shape[d];
        pl->in_step[k] = (ptrdiff_t)in->stride[d] * (ptrdiff_t)es;
        pl->out_shape[k] = out->shape[d];
        pl->out_step[k] = (ptrdiff_t)out->stride[d] * (ptrdiff_t)es;
        pl->factor[k] = p->factor[d] < in->shape[d] ? p->factor[d] : in->shape[d];
    }
    if (pl->rank == 0) {
        pl->rank = 1;
        pl->in_shape[0] = pl->out_shape[0] = pl->factor[0] = 1;
    }
    plan_merge(pl);
    pl->block_max = 1;
    for (uint32_t d = 0; d < pl->rank; d++)
        pl->block_max *= pl->factor[d]; /* <= the input's count, checked */
}

/* Stride: out = the view of `in` at multiples of the factors. */
static void
downsample_stride(const struct sl_downsample_params *p, const struct sl_view *in,
                  const struct sl_view *out)
{
    struct sl_view picked = *in;
    for (uint32_t d = 0; d < in->rank; d++) {
        picked.shape[d] = out->shape[d];
        /* factor < extent when there are two outputs or more, so the
         * product stays inside the checked view. */
        picked.stride[d] = out->shape[d] > 1 ? in->stride[d] * (int64_t)p->factor[d] : 0;
    }
    sl__view_copy_unchecked(out, &picked);
}

/* Align `p` up to a multiple of `a` (a power of two). */
static void *
align_up(void *p, size_t a)
{
    return (void *)(((uintptr_t)p + (a - 1)) & ~(uintptr_t)(a - 1));
}

static sl__ds_kernel *
kernel_for(const struct sl__ds_plan *pl, sl_downsample_method m, sl_dtype dt)
{
    switch (m) {
    case SL_DOWNSAMPLE_MEAN:
        return sl__ds_mean_kernels[dt][sl__ds_mean_tier(pl->elem_size, pl->block_max)];
    case SL_DOWNSAMPLE_MIN:
        return sl__ds_min_kernels[dt];
    case SL_DOWNSAMPLE_MAX:
        return sl__ds_max_kernels[dt];
    case SL_DOWNSAMPLE_MEDIAN:
        return sl__ds_median_kernels[dt];
    case SL_DOWNSAMPLE_MODE:
        return sl__ds_mode_kernels[dt];
    default:
        return NULL;
    }
}

sl_status
sl_downsample(const struct sl_downsample_params *p, const struct sl_view *in,
              const struct sl_view *out, void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(check_views(p, in, out, err));
    if (sl__view_is_empty(in))
        return SL_OK;
    if (p->method == SL_DOWNSAMPLE_STRIDE) {
        downsample_stride(p, in, out);
        return SL_OK;
    }
    struct sl__ds_plan pl;
    plan_init(&pl, p, in, out);
    if (p->method == SL_DOWNSAMPLE_MEDIAN || p->method == SL_DOWNSAMPLE_MODE) {
        size_t need;
        SL_TRY(sl_downsample_scratch_bytes(p, in->dtype, in->shape, &need, err));
        if (scratch == NULL || scratch_bytes < need)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "downsample %s: scratch of %zu bytes, blocks of %" PRIu64
                                " %s elements need %zu",
                                method_names[p->method], scratch == NULL ? 0 : scratch_bytes,
                                pl.block_max, sl_dtype_name(in->dtype), need);
        pl.scratch = align_up(scratch, pl.elem_size);
    }
    sl__ds_kernel *k = kernel_for(&pl, p->method, in->dtype);
    if (SL_NEVER(k == NULL))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "downsample %s: no kernel for %s",
                            method_names[p->method], sl_dtype_name(in->dtype));
    k(&pl);
    return SL_OK;
}
