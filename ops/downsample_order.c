/* SPDX-License-Identifier: MIT */
/*
 * Downsample kernels that need a block's elements all at once: median (the
 * lower median) and mode (the most frequent value, ties toward the lowest),
 * for every dtype in SL_DTYPE_MAP that kernels compute on.
 *
 * DESIGN: for each output element the driver gathers the block's non-NaN
 * elements into the caller's scratch as sort keys.  Blocks of up to 16
 * keys (2x2x2 is 8) are answered by counting, for each key, the keys below
 * and equal to it: O(n^2) but free of unpredictable branches, which beat
 * sorting there.  Larger blocks select (median: quickselect with a
 * three-way partition, falling back to heapsort after 2 log2(n) rounds, so
 * O(n) expected and O(n log n) worst) or sort (mode: heapsort) and scan
 * runs.
 * Integer and bool keys are the values themselves (bool read as 0 or 1).
 * Float keys are their bits mapped to unsigned integers that order like
 * IEEE 754 totalOrder (-0.0 before +0.0), so equal keys mean equal bits;
 * NaN never becomes a key, and a block with no other element gives NaN.
 */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

/* Blocks up to this size are sorted by insertion. */
#define SL__ORDER_SMALL 16

/* Gather the keys of the block `box` at `base` into `keys`; returns how many. */
typedef size_t order_gather_fn(void *keys, const unsigned char *base,
                               const struct sl__ops_box *box);
/* Write the result for `m` keys (sorted or not) to `out`. */
typedef void order_pick_fn(unsigned char *out, void *keys, size_t m);

SL__OPS_TEMPLATE void
order_drive(const struct sl__ds_plan *p, order_gather_fn *gather, order_pick_fn *pick)
{
    uint64_t o[SL_MAX_RANK] = {0};
    struct sl__ops_box box; /* steps fixed, extents per block */
    box.rank = p->rank;
    for (uint32_t d = 0; d < p->rank; d++)
        box.step[d] = p->in_step[d];
    do {
        ptrdiff_t in_off = 0, out_off = 0;
        for (uint32_t d = 0; d < p->rank; d++) {
            const uint64_t start = o[d] * p->factor[d];
            const uint64_t left = p->in_shape[d] - start;
            box.ext[d] = left < p->factor[d] ? left : p->factor[d];
            in_off += (ptrdiff_t)start * p->in_step[d];
            out_off += (ptrdiff_t)o[d] * p->out_step[d];
        }
        pick(p->out + out_off, p->scratch, gather(p->scratch, p->in + in_off, &box));
    } while (sl__index_next(o, p->out_shape, p->rank));
}

/* Key type, key of an element, element of a key, and the NaN test. */
#define SL__OPS_KEY_SL_DTYPE_CLASS_BOOL(T, size) T
#define SL__OPS_KEY_SL_DTYPE_CLASS_SINT(T, size) T
#define SL__OPS_KEY_SL_DTYPE_CLASS_UINT(T, size) T
#define SL__OPS_KEY_SL_DTYPE_CLASS_FLOAT(T, size) SL__OPS_UINT_##size
#define SL__OPS_ISNAN_SL_DTYPE_CLASS_BOOL(x) 0
#define SL__OPS_ISNAN_SL_DTYPE_CLASS_SINT(x) 0
#define SL__OPS_ISNAN_SL_DTYPE_CLASS_UINT(x) 0
#define SL__OPS_ISNAN_SL_DTYPE_CLASS_FLOAT(x) isnan(x)
/* What a block with no non-NaN element gives (only floats have one). */
#define SL__OPS_NONE_SL_DTYPE_CLASS_BOOL(T) ((T)0)
#define SL__OPS_NONE_SL_DTYPE_CLASS_SINT(T) ((T)0)
#define SL__OPS_NONE_SL_DTYPE_CLASS_UINT(T) ((T)0)
#define SL__OPS_NONE_SL_DTYPE_CLASS_FLOAT(T) ((T)NAN)

/* Key of x: the value (bool: 0 or 1). */
#define SL__OPS_TO_KEY_SL_DTYPE_CLASS_BOOL(K, T, x) ((K)SL__OPS_LOAD_SL_DTYPE_CLASS_BOOL(x))
#define SL__OPS_TO_KEY_SL_DTYPE_CLASS_SINT(K, T, x) ((K)(x))
#define SL__OPS_TO_KEY_SL_DTYPE_CLASS_UINT(K, T, x) ((K)(x))
#define SL__OPS_TO_KEY_SL_DTYPE_CLASS_FLOAT(K, T, x) sl__float_key_##K(x)
#define SL__OPS_FROM_KEY_SL_DTYPE_CLASS_BOOL(K, T, k) ((T)(k))
#define SL__OPS_FROM_KEY_SL_DTYPE_CLASS_SINT(K, T, k) ((T)(k))
#define SL__OPS_FROM_KEY_SL_DTYPE_CLASS_UINT(K, T, k) ((T)(k))
#define SL__OPS_FROM_KEY_SL_DTYPE_CLASS_FLOAT(K, T, k) sl__float_unkey_##K(k)

/*
 * Float keys: negative values (sign bit set) have all bits flipped, others
 * get the sign bit set, so unsigned order is totalOrder.
 */
static inline uint32_t
sl__float_key_uint32_t(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return (b >> 31) != 0 ? ~b : b | ((uint32_t)1 << 31);
}

static inline float
sl__float_unkey_uint32_t(uint32_t k)
{
    const uint32_t b = (k >> 31) != 0 ? k & ~((uint32_t)1 << 31) : ~k;
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static inline uint64_t
sl__float_key_uint64_t(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return (b >> 63) != 0 ? ~b : b | ((uint64_t)1 << 63);
}

static inline double
sl__float_unkey_uint64_t(uint64_t k)
{
    const uint64_t b = (k >> 63) != 0 ? k & ~((uint64_t)1 << 63) : ~k;
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* Sorting and selection on keys of type K, named for dtype `sfx`. */
#define SL__ORDER_SORT_(sfx, K)                                                     \
    static void insertion_sort_##sfx(K *a, size_t n)                                \
    {                                                                               \
        for (size_t i = 1; i < n; i++) {                                            \
            const K v = a[i];                                                       \
            size_t j = i;                                                           \
            for (; j > 0 && v < a[j - 1]; j--)                                      \
                a[j] = a[j - 1];                                                    \
            a[j] = v;                                                               \
        }                                                                           \
    }                                                                               \
    static void sift_down_##sfx(K *a, size_t i, size_t n)                           \
    {                                                                               \
        const K v = a[i];                                                           \
        for (size_t c; (c = 2 * i + 1) < n; i = c) {                                \
            if (c + 1 < n && a[c] < a[c + 1])                                       \
                c++;                                                                \
            if (!(v < a[c]))                                                        \
                break;                                                              \
            a[i] = a[c];                                                            \
        }                                                                           \
        a[i] = v;                                                                   \
    }                                                                               \
    static void sort_##sfx(K *a, size_t n)                                          \
    {                                                                               \
        if (n <= SL__ORDER_SMALL) {                                                 \
            insertion_sort_##sfx(a, n);                                             \
            return;                                                                 \
        }                                                                           \
        for (size_t i = n / 2; i-- > 0;)                                            \
            sift_down_##sfx(a, i, n);                                               \
        for (size_t end = n - 1; end > 0; end--) {                                  \
            const K t = a[0];                                                       \
            a[0] = a[end];                                                          \
            a[end] = t;                                                             \
            sift_down_##sfx(a, 0, end);                                             \
        }                                                                           \
    }                                                                               \
    static K median3_##sfx(K x, K y, K z)                                           \
    {                                                                               \
        if (y < x) {                                                                \
            const K t = x;                                                          \
            x = y;                                                                  \
            y = t;                                                                  \
        }                                                                           \
        return z < x ? x : z < y ? z : y;                                           \
    }                                                                               \
    static K small_select_##sfx(const K *a, size_t n, size_t k)                     \
    {                                                                               \
        for (size_t i = 0; i + 1 < n; i++) {                                        \
            size_t below = 0, same = 0;                                             \
            for (size_t j = 0; j < n; j++) {                                        \
                below += a[j] < a[i];                                               \
                same += a[j] == a[i];                                               \
            }                                                                       \
            if (below <= k && k < below + same)                                     \
                return a[i];                                                        \
        }                                                                           \
        return a[n - 1];                                                            \
    }                                                                               \
    static K small_mode_##sfx(const K *a, size_t n)                                 \
    {                                                                               \
        K best = a[0];                                                              \
        size_t best_n = 0;                                                          \
        for (size_t i = 0; i < n; i++) {                                            \
            size_t same = 0;                                                        \
            for (size_t j = 0; j < n; j++)                                          \
                same += a[j] == a[i];                                               \
            if (same > best_n || (same == best_n && a[i] < best)) {                 \
                best_n = same;                                                      \
                best = a[i];                                                        \
            }                                                                       \
        }                                                                           \
        return best;                                                                \
    }                                                                               \
    static K select_##sfx(K *a, size_t n, size_t k)                                 \
    {                                                                               \
        if (n <= SL__ORDER_SMALL)                                                   \
            return small_select_##sfx(a, n, k);                                     \
        size_t lo = 0, hi = n, rounds = 4;                                          \
        for (size_t m = n; m > 1; m >>= 1)                                          \
            rounds += 2;                                                            \
        while (hi - lo > SL__ORDER_SMALL) {                                         \
            if (rounds-- == 0) {                                                    \
                sort_##sfx(a + lo, hi - lo);                                        \
                return a[k];                                                        \
            }                                                                       \
            const K pivot = median3_##sfx(a[lo], a[lo + (hi - lo) / 2], a[hi - 1]); \
            size_t lt = lo, i = lo, gt = hi;                                        \
            while (i < gt) {                                                        \
                const K v = a[i];                                                   \
                if (v < pivot) {                                                    \
                    a[i++] = a[lt];                                                 \
                    a[lt++] = v;                                                    \
                } else if (pivot < v) {                                             \
                    a[i] = a[--gt];                                                 \
                    a[gt] = v;                                                      \
                } else {                                                            \
                    i++;                                                            \
                }                                                                   \
            }                                                                       \
            if (k < lt)                                                             \
                hi = lt;                                                            \
            else if (k >= gt)                                                       \
                lo = gt;                                                            \
            else                                                                    \
                return pivot;                                                       \
        }                                                                           \
        insertion_sort_##sfx(a + lo, hi - lo);                                      \
        return a[k];                                                                \
    }

/* Gathering keys, and the median and mode kernels of dtype `sfx`. */
#define SL__ORDER_KERNELS_(sfx, T, K, cls)                                                     \
    static size_t gather_##sfx(void *keys_, const unsigned char *base,                         \
                               const struct sl__ops_box *box)                                  \
    {                                                                                          \
        K *restrict keys = keys_;                                                              \
        const uint32_t last = box->rank - 1;                                                   \
        const uint64_t n = box->ext[last];                                                     \
        const ptrdiff_t s = box->step[last] / (ptrdiff_t)sizeof(T);                            \
        uint64_t idx[SL_MAX_RANK];                                                             \
        ptrdiff_t off = 0;                                                                     \
        for (uint32_t d = 0; d < last; d++)                                                    \
            idx[d] = 0;                                                                        \
        size_t m = 0;                                                                          \
        do {                                                                                   \
            const T *row = (const T *)(const void *)(base + off);                              \
            for (uint64_t i = 0; i < n; i++) {                                                 \
                const T x = row[(ptrdiff_t)i * s];                                             \
                if (!SL__OPS_ISNAN_##cls(x))                                                   \
                    keys[m++] = SL__OPS_TO_KEY_##cls(K, T, x);                                 \
            }                                                                                  \
        } while (sl__ops_box_next_row(box, idx, &off));                                        \
        return m;                                                                              \
    }                                                                                          \
    static void median_pick_##sfx(unsigned char *out, void *keys_, size_t m)                   \
    {                                                                                          \
        K *keys = keys_;                                                                       \
        const T v = m == 0 ? SL__OPS_NONE_##cls(T)                                             \
                           : SL__OPS_FROM_KEY_##cls(K, T, select_##sfx(keys, m, (m - 1) / 2)); \
        memcpy(out, &v, sizeof v);                                                             \
    }                                                                                          \
    static void mode_pick_##sfx(unsigned char *out, void *keys_, size_t m)                     \
    {                                                                                          \
        K *keys = keys_;                                                                       \
        T v = SL__OPS_NONE_##cls(T);                                                           \
        if (m > 0 && m <= SL__ORDER_SMALL) {                                                   \
            v = SL__OPS_FROM_KEY_##cls(K, T, small_mode_##sfx(keys, m));                       \
        } else if (m > 0) {                                                                    \
            sort_##sfx(keys, m);                                                               \
            size_t best = 0, best_n = 1, run = 1;                                              \
            for (size_t i = 1; i < m; i++) {                                                   \
                run = keys[i] == keys[i - 1] ? run + 1 : 1;                                    \
                if (run > best_n) {                                                            \
                    best_n = run;                                                              \
                    best = i;                                                                  \
                }                                                                              \
            }                                                                                  \
            v = SL__OPS_FROM_KEY_##cls(K, T, keys[best]);                                      \
        }                                                                                      \
        memcpy(out, &v, sizeof v);                                                             \
    }                                                                                          \
    static void median_##sfx(const struct sl__ds_plan *p)                                      \
    {                                                                                          \
        order_drive(p, gather_##sfx, median_pick_##sfx);                                       \
    }                                                                                          \
    static void mode_##sfx(const struct sl__ds_plan *p)                                        \
    {                                                                                          \
        order_drive(p, gather_##sfx, mode_pick_##sfx);                                         \
    }

#define SL__ORDER_(NAME, sfx, T, size, cls)          \
    SL__ORDER_SORT_(sfx, SL__OPS_KEY_##cls(T, size)) \
    SL__ORDER_KERNELS_(sfx, T, SL__OPS_KEY_##cls(T, size), cls)
#define SL__ORDER_DEF_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__ORDER_, NAME, sfx, T, size, cls)
SL_DTYPE_MAP(SL__ORDER_DEF_)
#undef SL__ORDER_DEF_

#define SL__MEDIAN_ROW_(NAME, sfx) [SL_DTYPE_##NAME] = median_##sfx,
#define SL__MODE_ROW_(NAME, sfx) [SL_DTYPE_##NAME] = mode_##sfx,
#define SL__ORDER_ROW_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__MEDIAN_ROW_, NAME, sfx)
sl__ds_kernel *const sl__ds_median_kernels[SL_DTYPE_COUNT_] = {
    SL_DTYPE_MAP(SL__ORDER_ROW_) /* [SL_DTYPE_BOOL] = median_b8, ... */
};
#undef SL__ORDER_ROW_
#define SL__ORDER_ROW_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__MODE_ROW_, NAME, sfx)
sl__ds_kernel *const sl__ds_mode_kernels[SL_DTYPE_COUNT_] = {
    SL_DTYPE_MAP(SL__ORDER_ROW_) /* [SL_DTYPE_BOOL] = mode_b8, ... */
};
#undef SL__ORDER_ROW_
#undef SL__MODE_ROW_
#undef SL__MEDIAN_ROW_
