/* SPDX-License-Identifier: MIT */
/*
 * Plain reference implementations of the ops kernels for the tests, on a
 * different code path from ops/: elements are read one at a time through
 * an explicit switch on the dtype into long double (exact for every
 * integer up to 64 bits and every float32/float64 on the platforms we
 * test), integer sums are kept in __int128, blocks are walked index by
 * index, and medians and modes come from qsort.  Also: a seeded PRNG,
 * random data per dtype and views with random padding, strides, dimension
 * order and reversed dimensions.
 */
#ifndef SL_TEST_OPS_REFERENCE_H
#define SL_TEST_OPS_REFERENCE_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

_Static_assert(LDBL_MANT_DIG >= 64, "the reference needs a long double that holds int64 exactly");

__extension__ typedef __int128 ref_i128;
__extension__ typedef unsigned __int128 ref_u128;

/* ---- random numbers -------------------------------------------------------- */

/* xorshift64*: small, seeded, reproducible. */
static inline uint64_t
ref_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, n). */
static inline uint64_t
ref_below(uint64_t *s, uint64_t n)
{
    return n == 0 ? 0 : ref_rand(s) % n;
}

/* ---- elements ----------------------------------------------------------------- */

static inline bool
ref_is_float(sl_dtype dt)
{
    return dt == SL_DTYPE_F32 || dt == SL_DTYPE_F64;
}

/* Element i (in elements from p) as long double; bool bytes read as 0/1. */
static inline long double
ref_get(sl_dtype dt, const void *p, ptrdiff_t i)
{
    switch (dt) {
    case SL_DTYPE_BOOL:
        return ((const uint8_t *)p)[i] != 0;
    case SL_DTYPE_I8:
        return ((const int8_t *)p)[i];
    case SL_DTYPE_I16:
        return ((const int16_t *)p)[i];
    case SL_DTYPE_I32:
        return ((const int32_t *)p)[i];
    case SL_DTYPE_I64:
        return ((const int64_t *)p)[i];
    case SL_DTYPE_U8:
        return ((const uint8_t *)p)[i];
    case SL_DTYPE_U16:
        return ((const uint16_t *)p)[i];
    case SL_DTYPE_U32:
        return ((const uint32_t *)p)[i];
    case SL_DTYPE_U64:
        return ((const uint64_t *)p)[i];
    case SL_DTYPE_F32:
        return ((const float *)p)[i];
    case SL_DTYPE_F64:
        return ((const double *)p)[i];
    default:
        abort();
    }
}

/* Store v, which the caller made representable in dt, as element i. */
static inline void
ref_put(sl_dtype dt, void *p, ptrdiff_t i, long double v)
{
    switch (dt) {
    case SL_DTYPE_BOOL:
        ((uint8_t *)p)[i] = v != 0;
        break;
    case SL_DTYPE_I8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case SL_DTYPE_I16:
        ((int16_t *)p)[i] = (int16_t)v;
        break;
    case SL_DTYPE_I32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case SL_DTYPE_I64:
        ((int64_t *)p)[i] = (int64_t)v;
        break;
    case SL_DTYPE_U8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case SL_DTYPE_U16:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case SL_DTYPE_U32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    case SL_DTYPE_U64:
        ((uint64_t *)p)[i] = (uint64_t)v;
        break;
    case SL_DTYPE_F32:
        ((float *)p)[i] = (float)v;
        break;
    case SL_DTYPE_F64:
        ((double *)p)[i] = (double)v;
        break;
    default:
        abort();
    }
}

/* Range of an integer or bool dtype. */
static inline long double
ref_min(sl_dtype dt)
{
    switch (dt) {
    case SL_DTYPE_I8:
        return INT8_MIN;
    case SL_DTYPE_I16:
        return INT16_MIN;
    case SL_DTYPE_I32:
        return INT32_MIN;
    case SL_DTYPE_I64:
        return (long double)INT64_MIN;
    default:
        return 0;
    }
}

static inline long double
ref_max(sl_dtype dt)
{
    switch (dt) {
    case SL_DTYPE_BOOL:
        return 1;
    case SL_DTYPE_I8:
        return INT8_MAX;
    case SL_DTYPE_I16:
        return INT16_MAX;
    case SL_DTYPE_I32:
        return INT32_MAX;
    case SL_DTYPE_I64:
        return (long double)INT64_MAX;
    case SL_DTYPE_U8:
        return UINT8_MAX;
    case SL_DTYPE_U16:
        return UINT16_MAX;
    case SL_DTYPE_U32:
        return UINT32_MAX;
    case SL_DTYPE_U64:
        return (long double)UINT64_MAX;
    default:
        return INFINITY;
    }
}

/* A random element value for dt: integers over their whole range (or, when
 * `few`, from a handful of values so modes have ties and runs); floats
 * multiples of 1/8 in [-512, 512] (sums of them are exact in double). */
static inline long double
ref_random_value(sl_dtype dt, uint64_t *s, bool few)
{
    if (dt == SL_DTYPE_BOOL)
        return (long double)ref_below(s, 2);
    if (ref_is_float(dt))
        return few ? (long double)ref_below(s, 4) - 2
                   : ((long double)ref_below(s, 8193) - 4096) / 8;
    const long double lo = ref_min(dt), hi = ref_max(dt);
    if (few)
        return lo + (long double)ref_below(s, 4);
    /* 64 random bits mapped into [lo, hi]. */
    const uint64_t span_m1 = (uint64_t)(hi - lo);
    const uint64_t r = span_m1 == UINT64_MAX ? ref_rand(s) : ref_rand(s) % (span_m1 + 1);
    return lo + (long double)r;
}

/* ---- views ---------------------------------------------------------------------- */

/* A view over part of a buffer the test owns. */
struct ref_buf {
    struct sl_view view; /* the view under test */
    void *mem;           /* the whole buffer */
    size_t bytes;        /* its size */
};

/*
 * Make a view of `shape` inside a larger buffer: each dimension padded by
 * 0..2 elements, dimensions laid out in a random order, some reversed
 * (negative strides).  With `plain`, a C-contiguous view of exactly the
 * shape.  The whole buffer is filled with bytes from the PRNG.
 */
static inline void
ref_buf_make(struct ref_buf *b, sl_dtype dt, uint32_t rank, const uint64_t *shape, bool plain,
             uint64_t *s)
{
    const size_t es = sl_dtype_size(dt);
    uint64_t full[SL_MAX_RANK], off[SL_MAX_RANK];
    uint32_t order[SL_MAX_RANK];
    bool flip[SL_MAX_RANK];
    size_t n = 1;
    for (uint32_t d = 0; d < rank; d++) {
        const uint64_t pad = plain ? 0 : ref_below(s, 3);
        full[d] = shape[d] + pad;
        off[d] = ref_below(s, pad + 1);
        flip[d] = !plain && ref_below(s, 4) == 0;
        order[d] = d;
        n *= full[d];
    }
    for (uint32_t d = rank; !plain && d > 1; d--) {
        const uint32_t k = (uint32_t)ref_below(s, d), t = order[d - 1];
        order[d - 1] = order[k];
        order[k] = t;
    }
    b->bytes = (n == 0 ? 1 : n) * es;
    b->mem = malloc(b->bytes);
    for (size_t i = 0; i < b->bytes; i++)
        ((unsigned char *)b->mem)[i] = (unsigned char)ref_rand(s);
    memset(&b->view, 0, sizeof b->view);
    b->view.dtype = dt;
    b->view.rank = rank;
    int64_t stride = 1;
    ptrdiff_t start = 0;
    for (uint32_t k = rank; k-- > 0;) {
        const uint32_t d = order[k];
        b->view.shape[d] = shape[d];
        b->view.stride[d] = stride;
        start += (ptrdiff_t)off[d] * stride;
        if (flip[d] && shape[d] > 0) {
            start += (ptrdiff_t)(shape[d] - 1) * stride;
            b->view.stride[d] = -stride;
        }
        stride *= (int64_t)full[d];
    }
    b->view.data = (unsigned char *)b->mem + start * (ptrdiff_t)es;
}

static inline void
ref_buf_free(struct ref_buf *b)
{
    free(b->mem);
    b->mem = NULL;
}

/* Element offset (in elements) of index idx in view v. */
static inline ptrdiff_t
ref_offset(const struct sl_view *v, const uint64_t *idx)
{
    ptrdiff_t o = 0;
    for (uint32_t d = 0; d < v->rank; d++)
        o += (ptrdiff_t)idx[d] * (ptrdiff_t)v->stride[d];
    return o;
}

/* Advance idx over shape in C order; false after the last. */
static inline bool
ref_next(uint64_t *idx, const uint64_t *shape, uint32_t rank)
{
    for (uint32_t d = rank; d-- > 0;) {
        if (++idx[d] < shape[d])
            return true;
        idx[d] = 0;
    }
    return false;
}

static inline uint64_t
ref_count(uint32_t rank, const uint64_t *shape)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < rank; d++)
        n *= shape[d];
    return n;
}

/* Fill every element of v with random values of its dtype. */
static inline void
ref_fill(const struct sl_view *v, uint64_t *s, bool few)
{
    if (ref_count(v->rank, v->shape) == 0)
        return;
    uint64_t idx[SL_MAX_RANK] = {0};
    do
        ref_put(v->dtype, v->data, ref_offset(v, idx), ref_random_value(v->dtype, s, few));
    while (ref_next(idx, v->shape, v->rank));
}

/* ---- downsample reference --------------------------------------------------------- */

/* Total order on non-NaN values with -0.0 before +0.0. */
static inline int
ref_cmp_ld(const void *a_, const void *b_)
{
    const long double a = *(const long double *)a_, b = *(const long double *)b_;
    if (a < b)
        return -1;
    if (a > b)
        return 1;
    return (int)(signbit(b) != 0) - (int)(signbit(a) != 0);
}

/* Exact integer mean of vals (integers), rounded half to even. */
static inline long double
ref_int_mean(const long double *vals, size_t n)
{
    ref_i128 sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (ref_i128)vals[i];
    ref_i128 q = sum / (ref_i128)n, r = sum % (ref_i128)n;
    if (r < 0) { /* floor division */
        q -= 1;
        r += (ref_i128)n;
    }
    if (2 * r > (ref_i128)n || (2 * r == (ref_i128)n && (q & 1) != 0))
        q += 1;
    return (long double)q;
}

/* The reference result of `method` over n values (NaN included). */
static inline long double
ref_reduce(sl_downsample_method method, sl_dtype dt, long double *vals, size_t n)
{
    size_t m = 0;
    bool any_nan = false;
    for (size_t i = 0; i < n; i++) {
        if (isnan(vals[i]))
            any_nan = true;
        else
            vals[m++] = vals[i];
    }
    switch (method) {
    case SL_DOWNSAMPLE_MEAN:
        if (!ref_is_float(dt))
            return ref_int_mean(vals, m);
        if (any_nan)
            return NAN;
        {
            long double sum = 0;
            for (size_t i = 0; i < m; i++)
                sum += vals[i];
            return (long double)((double)sum / (double)m);
        }
    case SL_DOWNSAMPLE_MIN:
    case SL_DOWNSAMPLE_MAX:
    case SL_DOWNSAMPLE_MEDIAN:
        if (m == 0)
            return NAN;
        qsort(vals, m, sizeof vals[0], ref_cmp_ld);
        return method == SL_DOWNSAMPLE_MIN   ? vals[0]
               : method == SL_DOWNSAMPLE_MAX ? vals[m - 1]
                                             : vals[(m - 1) / 2];
    case SL_DOWNSAMPLE_MODE: {
        if (m == 0)
            return NAN;
        qsort(vals, m, sizeof vals[0], ref_cmp_ld);
        size_t best = 0, best_n = 0;
        for (size_t i = 0; i < m;) {
            size_t j = i;
            while (j < m && ref_cmp_ld(&vals[i], &vals[j]) == 0)
                j++;
            if (j - i > best_n) {
                best_n = j - i;
                best = i;
            }
            i = j;
        }
        return vals[best];
    }
    default:
        abort();
    }
}

/*
 * Reference downsample of view `in` into view `out` (shape already the
 * output shape).  `vals` has room for one block.  Stride copies bytes, so
 * it serves any dtype.
 */
static inline void
ref_downsample(const struct sl_downsample_params *p, const struct sl_view *in,
               const struct sl_view *out, long double *vals)
{
    const size_t es = sl_dtype_size(in->dtype);
    const uint32_t r = in->rank;
    if (ref_count(r, out->shape) == 0)
        return;
    uint64_t o[SL_MAX_RANK] = {0};
    do {
        uint64_t ext[SL_MAX_RANK], k[SL_MAX_RANK] = {0}, idx[SL_MAX_RANK];
        for (uint32_t d = 0; d < r; d++) {
            const uint64_t start = o[d] * p->factor[d];
            ext[d] = in->shape[d] - start < p->factor[d] ? in->shape[d] - start : p->factor[d];
            idx[d] = start;
        }
        const ptrdiff_t oo = ref_offset(out, o);
        if (p->method == SL_DOWNSAMPLE_STRIDE) {
            memcpy((unsigned char *)out->data + oo * (ptrdiff_t)es,
                   (const unsigned char *)in->data + ref_offset(in, idx) * (ptrdiff_t)es, es);
            continue;
        }
        size_t n = 0;
        do {
            for (uint32_t d = 0; d < r; d++)
                idx[d] = o[d] * p->factor[d] + k[d];
            vals[n++] = ref_get(in->dtype, in->data, ref_offset(in, idx));
        } while (ref_next(k, ext, r));
        ref_put(out->dtype, out->data, oo, ref_reduce(p->method, in->dtype, vals, n));
    } while (ref_next(o, out->shape, r));
}

/* ---- cast reference ------------------------------------------------------------------ */

/* v converted to dtype dt by the cast rules, as a long double dt holds. */
static inline long double
ref_cast_value(long double v, sl_dtype dt)
{
    if (dt == SL_DTYPE_BOOL)
        return v != 0; /* NaN != 0 */
    if (dt == SL_DTYPE_F32)
        return (float)v; /* one rounding from the exact value */
    if (dt == SL_DTYPE_F64)
        return (double)v;
    if (isnan(v))
        return 0;
    /* Round half to even by hand. */
    long double f = floorl(v), diff = v - f;
    if (diff > 0.5L || (diff == 0.5L && fmodl(f, 2) != 0))
        f += 1;
    if (f < ref_min(dt))
        return ref_min(dt);
    if (f > ref_max(dt))
        return ref_max(dt);
    return f;
}

/* True when the elements of a and b at the given offsets are equal, NaN
 * equal to NaN, -0.0 different from +0.0. */
static inline bool
ref_same(sl_dtype dt, const void *a, ptrdiff_t ia, const void *b, ptrdiff_t ib)
{
    const long double x = ref_get(dt, a, ia), y = ref_get(dt, b, ib);
    if (isnan(x) || isnan(y))
        return isnan(x) && isnan(y);
    return x == y && signbit(x) == signbit(y);
}

#endif /* SL_TEST_OPS_REFERENCE_H */
