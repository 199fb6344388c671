/* SPDX-License-Identifier: MIT */
/*
 * What every neighbourhood filter kernel shares: the boundary mapping of
 * positions beyond an array's edges to elements inside it, the padded box
 * the kernels compute from, and the loads and stores between elements and
 * the doubles scipy.ndimage computes in, with scipy's conversions.
 *
 * DESIGN: scipy extends each line by copying elements outward from the
 * edge, so when the line is shorter than the extension the copies go on
 * from what was just written: reflect repeats with period 2n, mirror with
 * 2n - 2 and wrap with n.  sl__filt_map gives the same index in closed
 * form, so a block far from an edge of a tiny array still finds its
 * elements.
 */
#include <string.h>

#include "filter_internal.h"

int64_t
sl__filt_map(sl_boundary mode, int64_t p, uint64_t n)
{
    const int64_t len = (int64_t)n; /* <= SL__FILT_EXTENT_MAX: 2 len fits */
    if (p >= 0 && p < len)
        return p;
    int64_t period, q;
    switch (mode) {
    case SL_BOUNDARY_NEAREST:
        return p < 0 ? 0 : len - 1;
    case SL_BOUNDARY_WRAP:
        q = p % len;
        return q < 0 ? q + len : q;
    case SL_BOUNDARY_REFLECT:
        period = 2 * len;
        q = p % period;
        if (q < 0)
            q += period;
        return q < len ? q : period - 1 - q;
    case SL_BOUNDARY_MIRROR:
        if (len == 1)
            return 0;
        period = 2 * len - 2;
        q = p % period;
        if (q < 0)
            q += period;
        return q < len ? q : period - q;
    case SL_BOUNDARY_CONSTANT:
    default:
        return -1;
    }
}

/* Widen [*lo, *hi) to hold [a, b) (a < b). */
static void
hull_add(uint64_t *lo, uint64_t *hi, uint64_t a, uint64_t b)
{
    if (*lo >= *hi) {
        *lo = a;
        *hi = b;
        return;
    }
    *lo = a < *lo ? a : *lo;
    *hi = b > *hi ? b : *hi;
}

void
sl__filt_needed(sl_boundary mode, int64_t p0, int64_t p1, uint64_t n, uint64_t *lo, uint64_t *hi)
{
    /* The positions beyond the edges are two runs next to them (the output
     * lies inside): c below 0 and c2 at n and above.  A run as long as the
     * axis (as n - 1 for mirror) is taken to need all of it. */
    const int64_t len = (int64_t)n;
    const uint64_t c = p0 < 0 ? (uint64_t)-p0 : 0;
    const uint64_t c2 = p1 > len ? (uint64_t)(p1 - len) : 0;
    const int64_t in0 = p0 > 0 ? p0 : 0, in1 = p1 < len ? p1 : len;
    *lo = *hi = 0;
    if (in0 < in1)
        hull_add(lo, hi, (uint64_t)in0, (uint64_t)in1);
    switch (mode) {
    case SL_BOUNDARY_NEAREST:
        if (c > 0)
            hull_add(lo, hi, 0, 1);
        if (c2 > 0)
            hull_add(lo, hi, n - 1, n);
        break;
    case SL_BOUNDARY_WRAP:
        if (c > 0)
            hull_add(lo, hi, c >= n ? 0 : n - c, n);
        if (c2 > 0)
            hull_add(lo, hi, 0, c2 >= n ? n : c2);
        break;
    case SL_BOUNDARY_REFLECT:
        if (c > 0)
            hull_add(lo, hi, 0, c >= n ? n : c);
        if (c2 > 0)
            hull_add(lo, hi, c2 >= n ? 0 : n - c2, n);
        break;
    case SL_BOUNDARY_MIRROR:
        if (n == 1 || c >= n - 1 || c2 >= n - 1) {
            if (c > 0 || c2 > 0)
                hull_add(lo, hi, 0, n);
            break;
        }
        if (c > 0)
            hull_add(lo, hi, 1, c + 1);
        if (c2 > 0)
            hull_add(lo, hi, n - 1 - c2, n - 1);
        break;
    case SL_BOUNDARY_CONSTANT:
    default:
        break;
    }
}

/* Copy one element of `es` bytes (1, 2, 4 or 8), with a constant size so
 * the copy inlines. */
static inline void
copy_elem(unsigned char *dst, const unsigned char *src, size_t es)
{
    switch (es) {
    case 1:
        *dst = *src;
        break;
    case 2:
        memcpy(dst, src, 2);
        break;
    case 4:
        memcpy(dst, src, 4);
        break;
    default:
        memcpy(dst, src, 8);
        break;
    }
}

void
sl__filt_pad(const struct sl__filt_box *pad, const struct sl__filt_box *in, uint32_t rank,
             const uint64_t *shape, sl_boundary mode, size_t es)
{
    /* Under constant the positions beyond the edges are never read. */
    const sl_boundary m = mode == SL_BOUNDARY_CONSTANT ? SL_BOUNDARY_NEAREST : mode;
    const uint32_t last = rank - 1;
    const int64_t p0 = pad->start[last];
    const int64_t end = p0 + (int64_t)pad->ext[last];
    const int64_t n_last = (int64_t)shape[last];
    const ptrdiff_t ss = in->step[last], ds = pad->step[last];
    uint64_t idx[SL_MAX_RANK] = {0};
    do {
        ptrdiff_t src_off = 0, dst_off = 0;
        for (uint32_t d = 0; d < last; d++) {
            const int64_t q = sl__filt_map(m, pad->start[d] + (int64_t)idx[d], shape[d]);
            src_off += (ptrdiff_t)(q - in->start[d]) * in->step[d];
            dst_off += (ptrdiff_t)idx[d] * pad->step[d];
        }
        const unsigned char *src = in->data + src_off;
        unsigned char *dst = pad->data + dst_off;
        const int64_t s0 = in->start[last];
        int64_t p = p0;
        for (; p < end && p < 0; p++)
            copy_elem(dst + (p - p0) * ds, src + (sl__filt_map(m, p, shape[last]) - s0) * ss, es);
        /* The positions inside the array: one run. */
        const int64_t run_end = end < n_last ? end : n_last;
        if (p < run_end) {
            if (ss == (ptrdiff_t)es && ds == (ptrdiff_t)es)
                memcpy(dst + (p - p0) * ds, src + (p - s0) * ss, (size_t)(run_end - p) * es);
            else
                for (int64_t q = p; q < run_end; q++)
                    copy_elem(dst + (q - p0) * ds, src + (q - s0) * ss, es);
            p = run_end;
        }
        for (; p < end; p++)
            copy_elem(dst + (p - p0) * ds, src + (sl__filt_map(m, p, shape[last]) - s0) * ss, es);
    } while (sl__index_next(idx, pad->ext, last));
}

/* ---- loads and stores ------------------------------------------------------------- */

/* Contiguous rows get a loop of their own, which gcc vectorizes. */
#define SL__FILT_LOAD_STORE_(NAME, sfx, T, size, v3, kind, cls)                              \
    static void load_##sfx(double *dst, const unsigned char *src, ptrdiff_t step, size_t n)  \
    {                                                                                        \
        if (step == (ptrdiff_t)sizeof(T)) {                                                  \
            const T *s = (const T *)(const void *)src;                                       \
            for (size_t i = 0; i < n; i++)                                                   \
                dst[i] = (double)SL__OPS_LOAD_##cls(s[i]);                                   \
            return;                                                                          \
        }                                                                                    \
        for (size_t i = 0; i < n; i++, src += step)                                          \
            dst[i] = (double)SL__OPS_LOAD_##cls(*(const T *)(const void *)src);              \
    }                                                                                        \
    static void store_##sfx(unsigned char *dst, ptrdiff_t step, const double *src, size_t n) \
    {                                                                                        \
        if (step == (ptrdiff_t)sizeof(T)) {                                                  \
            T *d = (T *)(void *)dst;                                                         \
            for (size_t i = 0; i < n; i++)                                                   \
                d[i] = SL__FILT_FROM_D_##cls(T, size, src[i]);                               \
            return;                                                                          \
        }                                                                                    \
        for (size_t i = 0; i < n; i++, dst += step)                                          \
            *(T *)(void *)dst = SL__FILT_FROM_D_##cls(T, size, src[i]);                      \
    }
#define SL__FILT_LOAD_STORE(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__FILT_LOAD_STORE_, NAME, sfx, T, size, v3, kind, cls)
SL_DTYPE_MAP(SL__FILT_LOAD_STORE)
#undef SL__FILT_LOAD_STORE
#undef SL__FILT_LOAD_STORE_

#define SL__FILT_LOAD_ENTRY_(NAME, sfx, T, size, v3, kind, cls) [SL_DTYPE_##NAME] = load_##sfx,
#define SL__FILT_LOAD_ENTRY(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__FILT_LOAD_ENTRY_, NAME, sfx, T, size, v3, kind, cls)
sl__filt_load_fn *const sl__filt_load[SL_DTYPE_COUNT_] = {SL_DTYPE_MAP(SL__FILT_LOAD_ENTRY)};
#undef SL__FILT_LOAD_ENTRY
#undef SL__FILT_LOAD_ENTRY_

#define SL__FILT_STORE_ENTRY_(NAME, sfx, T, size, v3, kind, cls) [SL_DTYPE_##NAME] = store_##sfx,
#define SL__FILT_STORE_ENTRY(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__FILT_STORE_ENTRY_, NAME, sfx, T, size, v3, kind, cls)
sl__filt_store_fn *const sl__filt_store[SL_DTYPE_COUNT_] = {SL_DTYPE_MAP(SL__FILT_STORE_ENTRY)};
#undef SL__FILT_STORE_ENTRY
#undef SL__FILT_STORE_ENTRY_

double
sl__filt_cval_as_element(sl_dtype dt, double cval)
{
    union {
        uint64_t u;
        double d;
    } cell = {0};
    double back = 0;
    if (SL_NEVER(sl__filt_store[dt] == NULL))
        return cval;
    sl__filt_store[dt]((unsigned char *)&cell, 0, &cval, 1);
    sl__filt_load[dt](&back, (const unsigned char *)&cell, 0, 1);
    return back;
}
