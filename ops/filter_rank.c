/* SPDX-License-Identifier: MIT */
/*
 * The median filter: each output element is the element of rank
 * size / 2 (the upper median for even boxes, as scipy.ndimage) of the box
 * of `size` elements around it.
 *
 * DESIGN: each box is gathered in C order into doubles, as scipy gathers
 * its footprint, with cval stored into the dtype and read back beyond the
 * edges under `constant`.  A box without NaN has one answer whatever the
 * selection; it takes a quickselect with a median-of-three pivot that
 * finishes small ranges by insertion.  A box with NaN has no order, and
 * scipy's answer then depends on how its selection (Hoare's partition
 * around the range's first element, recursing into the side that holds
 * the rank) meets the NaNs in that gathering order; such boxes run that
 * very selection on the same order, so NaN results match scipy's.
 */
#include <math.h>

#include "filter_internal.h"

/* Ranges up to this size are finished by insertion sort. */
#define SL__MEDIAN_SMALL 16

/* Hoare's partition of a[lo..hi] around x = a[lo]: returns j with
 * a[lo..j] holding no element above x and a[j+1..hi] none below it, in
 * the sense of `>` and `<` (NaN stops both scans).  lo <= j < hi when
 * lo < hi. */
static size_t
hoare(double *a, size_t lo, size_t hi)
{
    const double x = a[lo];
    size_t i = lo, j = hi + 1;
    bool first = true;
    for (;;) {
        do
            j--;
        while (a[j] > x);
        if (first)
            first = false; /* i starts at lo, which stops the scan: a[lo] < x is false */
        else
            do
                i++;
            while (a[i] < x);
        if (i >= j)
            return j;
        const double t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* The element of rank k of a[0..n) by scipy's selection (any values). */
static double
select_hoare(double *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        const size_t j = hoare(a, lo, hi);
        if (k <= j)
            hi = j;
        else
            lo = j + 1;
    }
    return a[lo];
}

static void
swap(double *a, size_t i, size_t j)
{
    const double t = a[i];
    a[i] = a[j];
    a[j] = t;
}

/* The element of rank k of a[0..n) (no NaN). */
static double
select_fast(double *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (hi - lo >= SL__MEDIAN_SMALL) {
        /* The median of a[lo], a[mid], a[hi] becomes the pivot at lo. */
        const size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < a[lo])
            swap(a, mid, lo);
        if (a[hi] < a[lo])
            swap(a, hi, lo);
        if (a[hi] < a[mid])
            swap(a, hi, mid);
        swap(a, lo, mid);
        const size_t j = hoare(a, lo, hi);
        if (k <= j)
            hi = j;
        else
            lo = j + 1;
    }
    for (size_t i = lo + 1; i <= hi; i++) {
        const double v = a[i];
        size_t j = i;
        for (; j > lo && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
    return a[k];
}

/* True when array position p of an axis of extent n lies beyond an edge. */
static inline bool
beyond(int64_t p, uint64_t n)
{
    return p < 0 || p >= (int64_t)n;
}

void
sl__filt_median(const struct sl__filt_ctx *ctx, const uint64_t *size,
                const struct sl__filt_box *pad, const struct sl__filt_box *out, double *window)
{
    const uint32_t rank = ctx->rank, last = rank - 1;
    sl__filt_load_fn *load = sl__filt_load[ctx->dtype];
    sl__filt_store_fn *store = sl__filt_store[ctx->dtype];
    const bool has_nan = ctx->dtype == SL_DTYPE_F32 || ctx->dtype == SL_DTYPE_F64;
    const double cv = ctx->constant ? sl__filt_cval_as_element(ctx->dtype, ctx->cval) : 0.0;
    size_t count = 1;
    for (uint32_t d = 0; d < rank; d++)
        count *= (size_t)size[d]; /* fits: the window's scratch was sized */
    const size_t k = count / 2, run = (size_t)size[last];
    uint64_t o[SL_MAX_RANK] = {0};
    do {
        ptrdiff_t base = 0, oo = 0;
        bool inside = true; /* the whole box lies inside the array */
        for (uint32_t d = 0; d < rank; d++) {
            base += (ptrdiff_t)o[d] * pad->step[d];
            oo += (ptrdiff_t)o[d] * out->step[d];
            const int64_t p0 = pad->start[d] + (int64_t)o[d];
            inside = inside && !beyond(p0, ctx->shape[d]) &&
                     !beyond(p0 + (int64_t)size[d] - 1, ctx->shape[d]);
        }
        /* Gather the box row by row along the last axis, in C order. */
        uint64_t b[SL_MAX_RANK] = {0};
        size_t filled = 0;
        do {
            ptrdiff_t row = base;
            bool row_out = false;
            for (uint32_t d = 0; d < last; d++) {
                row += (ptrdiff_t)b[d] * pad->step[d];
                row_out = row_out || beyond(pad->start[d] + (int64_t)(o[d] + b[d]), ctx->shape[d]);
            }
            double *w = window + filled;
            if (!ctx->constant || inside) {
                load(w, pad->data + row, pad->step[last], run);
            } else if (row_out) {
                for (size_t i = 0; i < run; i++)
                    w[i] = cv;
            } else {
                load(w, pad->data + row, pad->step[last], run);
                const int64_t p0 = pad->start[last] + (int64_t)o[last];
                for (size_t i = 0; i < run; i++)
                    if (beyond(p0 + (int64_t)i, ctx->shape[last]))
                        w[i] = cv;
            }
            filled += run;
        } while (sl__index_next(b, size, last));
        bool nan = false;
        if (has_nan)
            for (size_t i = 0; i < count; i++)
                nan = nan || window[i] != window[i];
        const double v = nan ? select_hoare(window, count, k) : select_fast(window, count, k);
        store(out->data + oo, 0, &v, 1);
    } while (sl__index_next(o, out->ext, rank));
}
