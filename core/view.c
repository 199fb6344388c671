/* SPDX-License-Identifier: MIT */
/*
 * Strided n-d views: making and checking them, taking a region of one,
 * copying one into another of any dtype by bytes, and filling one.
 *
 * DESIGN: sl_view_check is the one place that proves a view addressable:
 * once it passes, every element's byte offset fits in ptrdiff_t, so kernels
 * compute offsets without further checks.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/view.h>

#include "core_internal.h"

sl_status
sl_view_init(struct sl_view *v, sl_dtype dtype, uint32_t rank, const uint64_t *shape, void *data,
             struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (v == NULL || (shape == NULL && rank > 0))
        return sl_error_set(err, SL_EINVAL, NULL, "view: NULL %s", v == NULL ? "view" : "shape");
    if (rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "view: rank %" PRIu32 " exceeds %d", rank,
                            SL_MAX_RANK);
    const size_t es = sl_dtype_size(dtype);
    if (es == 0)
        return sl_error_set(err, SL_EINVAL, NULL, "view: invalid dtype %d", (int)dtype);
    size_t bytes;
    SL_TRY(sl_shape_bytes(rank, shape, es, &bytes, err));
    if (bytes > (size_t)PTRDIFF_MAX)
        return sl_error_set(err, SL_EOVERFLOW, NULL, "view: %zu bytes exceed PTRDIFF_MAX", bytes);
    if (data == NULL && bytes > 0)
        return sl_error_set(err, SL_EINVAL, NULL, "view: NULL data for %zu bytes", bytes);
    /* Views are made once per chunk on the hot path: only the first `rank`
     * entries are written. */
    v->dtype = dtype;
    v->rank = rank;
    v->data = data;
    int64_t stride = 1;
    for (uint32_t d = rank; d-- > 0;) {
        v->shape[d] = shape[d];
        /* An empty view addresses nothing: its strides stay 0, as the
         * product of the other extents need not fit. */
        v->stride[d] = bytes > 0 ? stride : 0;
        /* Fits when non-empty: the byte size fits in ptrdiff_t (above). */
        if (bytes > 0)
            stride *= (int64_t)shape[d];
    }
    return SL_OK;
}

bool
sl__view_is_empty(const struct sl_view *v)
{
    for (uint32_t d = 0; d < v->rank; d++)
        if (v->shape[d] == 0)
            return true;
    return false;
}

/* |stride| * elem_size * (extent - 1) for one dimension, or false on overflow. */
static bool
view_dim_span(const struct sl_view *v, uint32_t d, size_t es, uint64_t *span)
{
    const uint64_t mag = v->stride[d] < 0 ? 0 - (uint64_t)v->stride[d] : (uint64_t)v->stride[d];
    uint64_t step;
    return sl_u64_mul_fits(mag, es, &step) && sl_u64_mul_fits(step, v->shape[d] - 1, span);
}

sl_status
sl_view_check(const struct sl_view *v, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (v == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "view: NULL");
    if (v->rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "view: rank %" PRIu32 " exceeds %d",
                            v->rank, SL_MAX_RANK);
    const size_t es = sl_dtype_size(v->dtype);
    if (es == 0)
        return sl_error_set(err, SL_EINVAL, NULL, "view: invalid dtype %d", (int)v->dtype);
    uint64_t count;
    SL_TRY(sl_shape_count(v->rank, v->shape, &count, err));
    if (count == 0)
        return SL_OK;
    if (v->data == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "view: NULL data for %" PRIu64 " elements",
                            count);
    /* Positive and negative offsets are bounded separately. */
    uint64_t pos = 0, neg = 0;
    for (uint32_t d = 0; d < v->rank; d++) {
        uint64_t span;
        uint64_t *side = v->stride[d] < 0 ? &neg : &pos;
        if (!view_dim_span(v, d, es, &span) || !sl_u64_add_fits(*side, span, side) ||
            *side > (uint64_t)PTRDIFF_MAX)
            return sl_error_set(err, SL_EOVERFLOW, NULL,
                                "view: dimension %" PRIu32 " (extent %" PRIu64 ", stride %" PRId64
                                ") reaches past PTRDIFF_MAX bytes",
                                d, v->shape[d], v->stride[d]);
    }
    return SL_OK;
}

bool
sl_view_is_contiguous(const struct sl_view *v)
{
    if (sl__view_is_empty(v))
        return true;
    uint64_t expect = 1;
    for (uint32_t d = v->rank; d-- > 0;) {
        if (v->shape[d] != 1 && (v->stride[d] < 0 || (uint64_t)v->stride[d] != expect))
            return false;
        if (d > 0 && !sl_u64_mul_fits(expect, v->shape[d], &expect))
            return false; /* more elements than a view can hold */
    }
    return true;
}

sl_status
sl_view_slice(const struct sl_view *v, const struct sl_region *region, struct sl_view *out,
              struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (v == NULL || region == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "view slice: NULL argument");
    if (region->rank != v->rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "view slice: region of rank %" PRIu32 " for a view of rank %" PRIu32,
                            region->rank, v->rank);
    SL_TRY(sl_region_check_within(region, v->rank, v->shape, err));
    struct sl_view w = *v;
    unsigned char *data = v->data;
    const size_t es = sl_dtype_size(v->dtype);
    bool empty = sl_region_is_empty(region);
    for (uint32_t d = 0; d < v->rank; d++) {
        w.shape[d] = region->stop[d] - region->start[d];
        /* In bounds of a checked view, so the offset fits in ptrdiff_t. */
        if (!empty && data != NULL)
            data += (ptrdiff_t)region->start[d] * (ptrdiff_t)v->stride[d] * (ptrdiff_t)es;
    }
    w.data = data;
    *out = w;
    return SL_OK;
}

void
sl__view_byte_range(const struct sl_view *v, ptrdiff_t *lo, ptrdiff_t *hi)
{
    const ptrdiff_t es = (ptrdiff_t)sl_dtype_size(v->dtype);
    ptrdiff_t a = 0, b = 0;
    for (uint32_t d = 0; d < v->rank; d++) {
        ptrdiff_t span = (ptrdiff_t)v->stride[d] * (ptrdiff_t)(v->shape[d] - 1) * es;
        if (span < 0)
            a += span;
        else
            b += span;
    }
    *lo = a;
    *hi = b + es - 1;
}

bool
sl__view_overlap(const struct sl_view *a, const struct sl_view *b)
{
    ptrdiff_t alo, ahi, blo, bhi;
    sl__view_byte_range(a, &alo, &ahi);
    sl__view_byte_range(b, &blo, &bhi);
    const uintptr_t pa = (uintptr_t)a->data, pb = (uintptr_t)b->data;
    /* Compare as integers: the buffers may be unrelated objects. */
    const uintptr_t a0 = pa + (uintptr_t)alo, a1 = pa + (uintptr_t)ahi;
    const uintptr_t b0 = pb + (uintptr_t)blo, b1 = pb + (uintptr_t)bhi;
    return a0 <= b1 && b0 <= a1;
}

sl_status
sl__view_check_same_shape(const char *what, const struct sl_view *a, const struct sl_view *b,
                          struct sl_error *err)
{
    bool same = a->rank == b->rank;
    for (uint32_t d = 0; same && d < a->rank; d++)
        same = a->shape[d] == b->shape[d];
    if (same)
        return SL_OK;
    char sa[96], sb[96];
    sl_shape_format(a->rank, a->shape, sa, sizeof sa);
    sl_shape_format(b->rank, b->shape, sb, sizeof sb);
    return sl_error_set(err, SL_EINVAL, NULL, "%s: output shape %s differs from input shape %s",
                        what, sb, sa);
}

sl_status
sl_view_copy(const struct sl_view *dst, const struct sl_view *src, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl_view_check(src, err));
    SL_TRY(sl_view_check(dst, err));
    if (dst->dtype != src->dtype)
        return sl_error_set(err, SL_EINVAL, NULL, "view copy: output dtype %s differs from %s",
                            sl_dtype_name(dst->dtype), sl_dtype_name(src->dtype));
    SL_TRY(sl__view_check_same_shape("view copy", src, dst, err));
    if (sl__view_is_empty(src))
        return SL_OK;
    if (sl__view_overlap(dst, src))
        return sl_error_set(err, SL_EINVAL, NULL, "view copy: output overlaps input");
    sl__view_copy_unchecked(dst, src);
    return SL_OK;
}

uint64_t
sl_view_count(const struct sl_view *v)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < v->rank; d++)
        n *= v->shape[d];
    return n;
}

sl_status
sl_view_fill(const struct sl_view *v, const void *value, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl_view_check(v, err));
    if (sl__view_is_empty(v))
        return SL_OK;
    sl__view_fill_unchecked(v, value);
    return SL_OK;
}
