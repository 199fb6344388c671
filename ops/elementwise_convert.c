/* SPDX-License-Identifier: MIT */
/*
 * How each dtype enters and leaves the wide types elementwise kernels
 * compute in (int64_t, uint64_t, double; float for expressions), generated from SL_DTYPE_MAP: one
 * load per wide type, one store per wide type applying the cast rules, and
 * the select store of threshold.
 *
 * DESIGN: a cast is a load into the source's exact wide type followed by a
 * store from it, so 11 x 11 dtype pairs need only 11 x 3 stores and each
 * conversion rounds once.  Every integer and bool value is exact in int64_t
 * except uint64's, which get uint64_t; float32 and float64 are exact in
 * double.  Stores into integers saturate at the type's range; from double
 * they first round half to even (rint() in the default rounding mode,
 * which sluice never changes) and send NaN to 0.  Stores into bool test
 * for nonzero (NaN is nonzero).  Stores into floats round to nearest, the
 * C conversion, so int64 -> float32 rounds once, from the exact integer.
 */
#include <math.h>

#include "ops_internal.h"

/* Largest value of an integer type, as uint64_t, and 2^(bits-1). */
#define SL__EW_MAXU_(cls, T, size) ((uint64_t)SL__OPS_MAXV_##cls(T, size))
#define SL__EW_HALF_(size) ((uint64_t)1 << (8 * (size)-1))

/*
 * Bodies of the converters from each wide type to T, by class; `x` is the
 * wide value.
 */
#define SL__EW_FROM_I64_SL_DTYPE_CLASS_BOOL(T, size, x) return (T)((x) != 0);
#define SL__EW_FROM_I64_SL_DTYPE_CLASS_SINT(T, size, x)           \
    if ((x) < (int64_t)SL__OPS_MINV_SL_DTYPE_CLASS_SINT(T, size)) \
        return SL__OPS_MINV_SL_DTYPE_CLASS_SINT(T, size);         \
    if ((x) > (int64_t)SL__OPS_MAXV_SL_DTYPE_CLASS_SINT(T, size)) \
        return SL__OPS_MAXV_SL_DTYPE_CLASS_SINT(T, size);         \
    return (T)(x);
#define SL__EW_FROM_I64_SL_DTYPE_CLASS_UINT(T, size, x)             \
    if ((x) < 0)                                                    \
        return (T)0;                                                \
    if ((uint64_t)(x) > SL__EW_MAXU_(SL_DTYPE_CLASS_UINT, T, size)) \
        return SL__OPS_MAXV_SL_DTYPE_CLASS_UINT(T, size);           \
    return (T)(x);
#define SL__EW_FROM_I64_SL_DTYPE_CLASS_FLOAT(T, size, x) return (T)(x);

#define SL__EW_FROM_U64_SL_DTYPE_CLASS_BOOL(T, size, x) return (T)((x) != 0);
#define SL__EW_FROM_U64_SL_DTYPE_CLASS_SINT(T, size, x)     \
    return (x) > SL__EW_MAXU_(SL_DTYPE_CLASS_SINT, T, size) \
               ? SL__OPS_MAXV_SL_DTYPE_CLASS_SINT(T, size)  \
               : (T)(x);
#define SL__EW_FROM_U64_SL_DTYPE_CLASS_UINT(T, size, x)     \
    return (x) > SL__EW_MAXU_(SL_DTYPE_CLASS_UINT, T, size) \
               ? SL__OPS_MAXV_SL_DTYPE_CLASS_UINT(T, size)  \
               : (T)(x);
#define SL__EW_FROM_U64_SL_DTYPE_CLASS_FLOAT(T, size, x) return (T)(x);

/* From double, integers round half to even, send NaN to 0 and saturate;
 * the limits -2^(bits-1), 2^(bits-1) and 2^bits are exact doubles. */
#define SL__EW_FROM_F64_SL_DTYPE_CLASS_BOOL(T, size, x) return (T)((x) != 0);
#define SL__EW_FROM_F64_SL_DTYPE_CLASS_SINT(T, size, x)   \
    const double r = rint(x);                             \
    if (r != r)                                           \
        return (T)0;                                      \
    if (r < -(double)SL__EW_HALF_(size))                  \
        return SL__OPS_MINV_SL_DTYPE_CLASS_SINT(T, size); \
    if (r >= (double)SL__EW_HALF_(size))                  \
        return SL__OPS_MAXV_SL_DTYPE_CLASS_SINT(T, size); \
    return (T)r;
#define SL__EW_FROM_F64_SL_DTYPE_CLASS_UINT(T, size, x)   \
    const double r = rint(x);                             \
    if (r != r || r < 0)                                  \
        return (T)0;                                      \
    if (r >= 2.0 * (double)SL__EW_HALF_(size))            \
        return SL__OPS_MAXV_SL_DTYPE_CLASS_UINT(T, size); \
    return (T)r;
#define SL__EW_FROM_F64_SL_DTYPE_CLASS_FLOAT(T, size, x) return (T)(x);

/* From float, as from the same value in double (exact). */
#define SL__EW_FROM_F32_SL_DTYPE_CLASS_BOOL(T, size, x) return (T)((x) != 0);
#define SL__EW_FROM_F32_SL_DTYPE_CLASS_SINT(T, size, x) \
    const double xd = (x);                              \
    SL__EW_FROM_F64_SL_DTYPE_CLASS_SINT(T, size, xd)
#define SL__EW_FROM_F32_SL_DTYPE_CLASS_UINT(T, size, x) \
    const double xd = (x);                              \
    SL__EW_FROM_F64_SL_DTYPE_CLASS_UINT(T, size, xd)
#define SL__EW_FROM_F32_SL_DTYPE_CLASS_FLOAT(T, size, x) return (T)(x);

/* The exact wide type of a dtype's values. */
#define SL__EW_KIND_SL_DTYPE_CLASS_BOOL(size) SL__EW_I64
#define SL__EW_KIND_SL_DTYPE_CLASS_SINT(size) SL__EW_I64
#define SL__EW_KIND_SL_DTYPE_CLASS_UINT(size) ((size) == 8 ? SL__EW_U64 : SL__EW_I64)
#define SL__EW_KIND_SL_DTYPE_CLASS_FLOAT(size) SL__EW_F64

/* A load of dtype `sfx` into wide type W (suffix w). */
#define SL__EW_LOAD_(sfx, T, cls, w, W)                                                           \
    static void load_##w##_##sfx(void *tile_, const unsigned char *src, ptrdiff_t step, size_t n) \
    {                                                                                             \
        W *restrict tile = tile_;                                                                 \
        const T *restrict p = (const T *)(const void *)src;                                       \
        const ptrdiff_t s = step / (ptrdiff_t)sizeof(T);                                          \
        if (s == 1) {                                                                             \
            for (size_t j = 0; j < n; j++)                                                        \
                tile[j] = (W)SL__OPS_LOAD_##cls(p[j]);                                            \
        } else {                                                                                  \
            for (size_t j = 0; j < n; j++)                                                        \
                tile[j] = (W)SL__OPS_LOAD_##cls(p[(ptrdiff_t)j * s]);                             \
        }                                                                                         \
    }

/* A store of dtype `sfx` from wide type W, converting with FROM. */
#define SL__EW_STORE_(sfx, T, size, cls, w, W, FROM)                                               \
    static inline T from_##w##_##sfx(W x) { FROM##cls(T, size, x) }                                \
    static void store_##w##_##sfx(unsigned char *dst, ptrdiff_t step, const void *tile_, size_t n) \
    {                                                                                              \
        const W *restrict tile = tile_;                                                            \
        T *restrict p = (T *)(void *)dst;                                                          \
        const ptrdiff_t s = step / (ptrdiff_t)sizeof(T);                                           \
        if (s == 1) {                                                                              \
            for (size_t j = 0; j < n; j++)                                                         \
                p[j] = from_##w##_##sfx(tile[j]);                                                  \
        } else {                                                                                   \
            for (size_t j = 0; j < n; j++)                                                         \
                p[(ptrdiff_t)j * s] = from_##w##_##sfx(tile[j]);                                   \
        }                                                                                          \
    }

#define SL__EW_CONV_(NAME, sfx, T, size, cls)                                                   \
    SL__EW_LOAD_(sfx, T, cls, i64, int64_t)                                                     \
    SL__EW_LOAD_(sfx, T, cls, u64, uint64_t)                                                    \
    SL__EW_LOAD_(sfx, T, cls, f64, double)                                                      \
    SL__EW_LOAD_(sfx, T, cls, f32, float)                                                       \
    SL__EW_STORE_(sfx, T, size, cls, i64, int64_t, SL__EW_FROM_I64_)                            \
    SL__EW_STORE_(sfx, T, size, cls, u64, uint64_t, SL__EW_FROM_U64_)                           \
    SL__EW_STORE_(sfx, T, size, cls, f64, double, SL__EW_FROM_F64_)                             \
    SL__EW_STORE_(sfx, T, size, cls, f32, float, SL__EW_FROM_F32_)                              \
    static void select_##sfx(unsigned char *dst, ptrdiff_t step, const uint8_t *mask, size_t n, \
                             const void *value)                                                 \
    {                                                                                           \
        T *restrict p = (T *)(void *)dst;                                                       \
        const ptrdiff_t s = step / (ptrdiff_t)sizeof(T);                                        \
        const T v = *(const T *)value, zero = 0;                                                \
        for (size_t j = 0; j < n; j++)                                                          \
            p[(ptrdiff_t)j * s] = mask[j] ? v : zero;                                           \
    }
#define SL__EW_CONV_DEF_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__EW_CONV_, NAME, sfx, T, size, cls)
SL_DTYPE_MAP(SL__EW_CONV_DEF_)
#undef SL__EW_CONV_DEF_

#define SL__EW_ROW_(NAME, sfx, size, cls)                                              \
    [SL_DTYPE_##NAME] = {                                                              \
        .kind = SL__EW_KIND_##cls(size),                                               \
        .load = {load_i64_##sfx, load_u64_##sfx, load_f64_##sfx, load_f32_##sfx},      \
        .store = {store_i64_##sfx, store_u64_##sfx, store_f64_##sfx, store_f32_##sfx}, \
        .select = select_##sfx,                                                        \
    },
#define SL__EW_ROW_DEF_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__EW_ROW_, NAME, sfx, size, cls)
const struct sl__ew_conv sl__ew_conv_table[SL_DTYPE_COUNT_] = {
    SL_DTYPE_MAP(SL__EW_ROW_DEF_) /* [SL_DTYPE_BOOL] = {...}, ... */
};
#undef SL__EW_ROW_DEF_
#undef SL__EW_ROW_
