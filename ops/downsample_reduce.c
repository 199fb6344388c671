/* SPDX-License-Identifier: MIT */
/*
 * Downsample kernels that reduce a block as they read it: mean, min and
 * max, for every dtype in SL_DTYPE_MAP that kernels compute on.
 *
 * DESIGN: one driver, reduce_drive(), walks the output row by row and the
 * last dimension in tiles of SL__OPS_TILE outputs.  For each tile it
 * clears an accumulator tile on the stack, adds every input row of the
 * tile's blocks into it (a row step reduces runs of f elements into one
 * accumulator), then finalizes the tile into the output.  The typed steps
 * are generated per dtype from one body each and inlined into the driver,
 * so the hot loops (f == 2 or 1 on contiguous rows) are plain loops over
 * arrays that the compiler vectorizes; ops/README.md says how that was
 * checked.
 *
 * Integer means are exact.  Elements are biased to unsigned (signed types
 * add 2^(bits-1)), summed in the narrowest accumulator that cannot
 * overflow for the largest block (enum sl__ds_tier), divided with the
 * remainder kept, rounded half to even, and unbiased; bias and rounding
 * commute because the bias is an integer.  Float means sum in double,
 * divide once and round to the element type; NaN propagates.  Min and max
 * ignore NaN unless the whole block is NaN, and order -0.0 below +0.0.
 */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

/* Clear the first n accumulators of a tile. */
typedef void acc_init_fn(void *acc, size_t n);
/* Add one input row to a tile: n_full blocks of f elements `step` bytes
 * apart, then, when rem > 0, one partial block of rem elements. */
typedef void acc_row_fn(void *acc, const unsigned char *row, ptrdiff_t step, uint64_t f,
                        size_t n_full, uint64_t rem);
/* Write the tile's results `step` bytes apart: n_full outputs whose blocks
 * held `count` elements, then one of `count_part` when that is not 0. */
typedef void acc_final_fn(unsigned char *out, ptrdiff_t step, const void *acc, size_t n_full,
                          uint64_t count, uint64_t count_part);

/* The rows of the block of output row `o` (all but the last dimension):
 * the box of its outer dimensions, its input and output offsets and the
 * number of input rows. */
static inline uint64_t
block_rows(const struct sl__ds_plan *p, const uint64_t *o, struct sl__ops_box *box,
           ptrdiff_t *in_off, ptrdiff_t *out_off)
{
    const uint32_t last = p->rank - 1;
    uint64_t n_rows = 1;
    *in_off = 0;
    *out_off = 0;
    box->rank = p->rank;
    for (uint32_t d = 0; d < last; d++) {
        const uint64_t start = o[d] * p->factor[d];
        const uint64_t left = p->in_shape[d] - start;
        box->ext[d] = left < p->factor[d] ? left : p->factor[d];
        box->step[d] = p->in_step[d];
        *in_off += (ptrdiff_t)start * p->in_step[d];
        *out_off += (ptrdiff_t)o[d] * p->out_step[d];
        n_rows *= box->ext[d];
    }
    box->ext[last] = 1;
    box->step[last] = 0;
    return n_rows;
}

SL__OPS_TEMPLATE void
reduce_drive(const struct sl__ds_plan *p, acc_init_fn *init, acc_row_fn *row_fn,
             acc_final_fn *final)
{
    const uint32_t last = p->rank - 1;
    const uint64_t f = p->factor[last], n_out = p->out_shape[last], n_in = p->in_shape[last];
    const ptrdiff_t in_step = p->in_step[last], out_step = p->out_step[last];
    union sl__ops_tile acc;
    uint64_t o[SL_MAX_RANK] = {0};
    do {
        struct sl__ops_box box;
        ptrdiff_t in_off, out_off;
        const uint64_t n_rows = block_rows(p, o, &box, &in_off, &out_off);
        for (uint64_t j0 = 0; j0 < n_out; j0 += SL__OPS_TILE) {
            const size_t tn = n_out - j0 < SL__OPS_TILE ? (size_t)(n_out - j0) : SL__OPS_TILE;
            const uint64_t avail = n_in - j0 * f;
            const size_t n_full = avail / f < tn ? (size_t)(avail / f) : tn;
            const uint64_t rem = n_full < tn ? avail - n_full * f : 0;
            const unsigned char *row0 = p->in + in_off + (ptrdiff_t)(j0 * f) * in_step;
            uint64_t k[SL_MAX_RANK];
            ptrdiff_t off = 0;
            for (uint32_t d = 0; d < last; d++)
                k[d] = 0;
            init(&acc, tn);
            do
                row_fn(&acc, row0 + off, in_step, f, n_full, rem);
            while (sl__ops_box_next_row(&box, k, &off));
            final(p->out + out_off + (ptrdiff_t)j0 * out_step, out_step, &acc, n_full, n_rows * f,
                  n_rows * rem);
        }
    } while (sl__index_next(o, p->out_shape, last));
}

/*
 * The row step shared by every method, for element type T and accumulator
 * ACC_T: `acc[j] = ADD(acc[j], LOAD(x))` folds element x into accumulator
 * j, and `PAIR(LOAD(a), LOAD(b))` combines two elements of one block
 * first.  Contiguous rows with f == 2 or f == 1 get plain loops that the
 * compiler vectorizes.  LOAD, ADD and PAIR name inline functions.
 */
#define SL__REDUCE_ROW_(name, T, ACC_T, LOAD, ADD, PAIR)                                \
    static void name(void *acc_, const unsigned char *row_, ptrdiff_t step, uint64_t f, \
                     size_t n_full, uint64_t rem)                                       \
    {                                                                                   \
        ACC_T *restrict acc = acc_;                                                     \
        const T *restrict row = (const T *)(const void *)row_;                          \
        const ptrdiff_t s = step / (ptrdiff_t)sizeof(T);                                \
        if (s == 1 && f == 2) {                                                         \
            for (size_t j = 0; j < n_full; j++)                                         \
                acc[j] = ADD(acc[j], PAIR(LOAD(row[2 * j]), LOAD(row[2 * j + 1])));     \
        } else if (s == 1 && f == 1) {                                                  \
            for (size_t j = 0; j < n_full; j++)                                         \
                acc[j] = ADD(acc[j], LOAD(row[j]));                                     \
        } else {                                                                        \
            for (size_t j = 0; j < n_full; j++)                                         \
                for (uint64_t i = 0; i < f; i++)                                        \
                    acc[j] = ADD(acc[j], LOAD(row[(ptrdiff_t)(j * f + i) * s]));        \
        }                                                                               \
        for (uint64_t i = 0; i < rem; i++)                                              \
            acc[n_full] = ADD(acc[n_full], LOAD(row[(ptrdiff_t)(n_full * f + i) * s])); \
    }

/* Fill the first n accumulators of a tile of ACC_T with `v`. */
#define SL__REDUCE_INIT_(name, ACC_T, v)   \
    static void name(void *acc_, size_t n) \
    {                                      \
        ACC_T *acc = acc_;                 \
        for (size_t j = 0; j < n; j++)     \
            acc[j] = (v);                  \
    }

static inline uint32_t
add_u32(uint32_t a, uint32_t b)
{
    return a + b;
}

static inline uint64_t
add_u64(uint64_t a, uint64_t b)
{
    return a + b;
}

static inline double
add_f64(double a, double b)
{
    return a + b;
}

/* ---- integer and bool means ------------------------------------------------ */

/*
 * Mean of dtype `sfx` in native tier `bits` (accumulator ACC_T, uint32_t
 * or uint64_t).  Each element is loaded (bool: 0 or 1) and biased, which
 * fits ACC_T; block sums fit because the tier is chosen by block size
 * (sl__ds_mean_tier).
 */
#define SL__MEAN_NATIVE_(sfx, T, size, cls, bits, ACC_T)                                         \
    static inline ACC_T mean_v_##sfx##_##bits(T x)                                               \
    {                                                                                            \
        return (ACC_T)((uint64_t)SL__OPS_LOAD_##cls(x) + SL__OPS_BIAS_##cls(size));              \
    }                                                                                            \
    static inline T mean_out_##sfx##_##bits(ACC_T q, ACC_T r, ACC_T n)                           \
    {                                                                                            \
        return SL__OPS_UNBIAS_##cls(T, size, (uint64_t)SL__OPS_ROUND_HALF_EVEN(q, r, n));        \
    }                                                                                            \
    SL__REDUCE_INIT_(mean_init_##sfx##_##bits, ACC_T, 0)                                         \
    SL__REDUCE_ROW_(mean_row_##sfx##_##bits, T, ACC_T, mean_v_##sfx##_##bits, add_u##bits,       \
                    add_u##bits)                                                                 \
    static void mean_final_##sfx##_##bits(unsigned char *out_, ptrdiff_t step, const void *acc_, \
                                          size_t n_full, uint64_t count, uint64_t count_part)    \
    {                                                                                            \
        T *restrict out = (T *)(void *)out_;                                                     \
        const ACC_T *restrict acc = acc_;                                                        \
        const ptrdiff_t s = step / (ptrdiff_t)sizeof(T);                                         \
        const ACC_T n = (ACC_T)count;                                                            \
        if (sl__ops_is_pow2(count) && s == 1) {                                                  \
            const unsigned sh = sl__ops_ctz(count);                                              \
            for (size_t j = 0; j < n_full; j++)                                                  \
                out[j] = mean_out_##sfx##_##bits(acc[j] >> sh, acc[j] & (n - 1), n);             \
        } else {                                                                                 \
            for (size_t j = 0; j < n_full; j++)                                                  \
                out[(ptrdiff_t)j * s] = mean_out_##sfx##_##bits(acc[j] / n, acc[j] % n, n);      \
        }                                                                                        \
        if (count_part != 0) {                                                                   \
            const ACC_T c = (ACC_T)count_part, a = acc[n_full];                                  \
            out[(ptrdiff_t)n_full * s] = mean_out_##sfx##_##bits(a / c, a % c, c);               \
        }                                                                                        \
    }                                                                                            \
    static void mean_##sfx##_##bits(const struct sl__ds_plan *p)                                 \
    {                                                                                            \
        reduce_drive(p, mean_init_##sfx##_##bits, mean_row_##sfx##_##bits,                       \
                     mean_final_##sfx##_##bits);                                                 \
    }

/*
 * The 128-bit tier: sums in struct sl__u128, each element added alone (two
 * 64-bit elements may already overflow 64 bits), then a 128-by-64-bit
 * division.
 */
#define SL__MEAN_WIDE_(sfx, T, size, cls)                                                         \
    static inline uint64_t mean_v_##sfx##_128(T x)                                                \
    {                                                                                             \
        return (uint64_t)SL__OPS_LOAD_##cls(x) + SL__OPS_BIAS_##cls(size);                        \
    }                                                                                             \
    static inline T mean_out_##sfx##_128(struct sl__u128 a, uint64_t n)                           \
    {                                                                                             \
        uint64_t r;                                                                               \
        const uint64_t q = sl__u128_divmod(a, n, &r);                                             \
        return SL__OPS_UNBIAS_##cls(T, size, SL__OPS_ROUND_HALF_EVEN(q, r, n));                   \
    }                                                                                             \
    static void mean_init_##sfx##_128(void *acc_, size_t n)                                       \
    {                                                                                             \
        memset(acc_, 0, n * sizeof(struct sl__u128));                                             \
    }                                                                                             \
    static void mean_row_##sfx##_128(void *acc_, const unsigned char *row_, ptrdiff_t step,       \
                                     uint64_t f, size_t n_full, uint64_t rem)                     \
    {                                                                                             \
        struct sl__u128 *restrict acc = acc_;                                                     \
        const T *restrict row = (const T *)(const void *)row_;                                    \
        const ptrdiff_t s = step / (ptrdiff_t)sizeof(T);                                          \
        for (size_t j = 0; j < n_full; j++)                                                       \
            for (uint64_t i = 0; i < f; i++)                                                      \
                sl__u128_add(&acc[j], mean_v_##sfx##_128(row[(ptrdiff_t)(j * f + i) * s]));       \
        for (uint64_t i = 0; i < rem; i++)                                                        \
            sl__u128_add(&acc[n_full], mean_v_##sfx##_128(row[(ptrdiff_t)(n_full * f + i) * s])); \
    }                                                                                             \
    static void mean_final_##sfx##_128(unsigned char *out_, ptrdiff_t step, const void *acc_,     \
                                       size_t n_full, uint64_t count, uint64_t count_part)        \
    {                                                                                             \
        T *restrict out = (T *)(void *)out_;                                                      \
        const struct sl__u128 *restrict acc = acc_;                                               \
        const ptrdiff_t s = step / (ptrdiff_t)sizeof(T);                                          \
        for (size_t j = 0; j < n_full; j++)                                                       \
            out[(ptrdiff_t)j * s] = mean_out_##sfx##_128(acc[j], count);                          \
        if (count_part != 0)                                                                      \
            out[(ptrdiff_t)n_full * s] = mean_out_##sfx##_128(acc[n_full], count_part);           \
    }                                                                                             \
    static void mean_##sfx##_128(const struct sl__ds_plan *p)                                     \
    {                                                                                             \
        reduce_drive(p, mean_init_##sfx##_128, mean_row_##sfx##_128, mean_final_##sfx##_128);     \
    }

#define SL__MEAN_INT_(NAME, sfx, T, size, cls)        \
    SL__MEAN_NATIVE_(sfx, T, size, cls, 32, uint32_t) \
    SL__MEAN_NATIVE_(sfx, T, size, cls, 64, uint64_t) \
    SL__MEAN_WIDE_(sfx, T, size, cls)

/* ---- float means ------------------------------------------------------------- */

#define SL__MEAN_FLOAT_(NAME, sfx, T, size, cls)                                        \
    static inline double mean_v_##sfx(T x) { return (double)x; }                        \
    SL__REDUCE_INIT_(mean_init_##sfx, double, 0.0)                                      \
    SL__REDUCE_ROW_(mean_row_##sfx, T, double, mean_v_##sfx, add_f64, add_f64)          \
    static void mean_final_##sfx(unsigned char *out_, ptrdiff_t step, const void *acc_, \
                                 size_t n_full, uint64_t count, uint64_t count_part)    \
    {                                                                                   \
        T *restrict out = (T *)(void *)out_;                                            \
        const double *restrict acc = acc_;                                              \
        const ptrdiff_t s = step / (ptrdiff_t)sizeof(T);                                \
        const double n = (double)count;                                                 \
        for (size_t j = 0; j < n_full; j++)                                             \
            out[(ptrdiff_t)j * s] = (T)(acc[j] / n);                                    \
        if (count_part != 0)                                                            \
            out[(ptrdiff_t)n_full * s] = (T)(acc[n_full] / (double)count_part);         \
    }                                                                                   \
    static void mean_##sfx(const struct sl__ds_plan *p)                                 \
    {                                                                                   \
        reduce_drive(p, mean_init_##sfx, mean_row_##sfx, mean_final_##sfx);             \
    }

#define SL__MEAN_DEF_(NAME, sfx, T, size, v3, kind, cls)         \
    SL__OPS_IF_INT_##cls(SL__MEAN_INT_, NAME, sfx, T, size, cls) \
        SL__OPS_IF_FLOAT_##cls(SL__MEAN_FLOAT_, NAME, sfx, T, size, cls)
SL_DTYPE_MAP(SL__MEAN_DEF_)
#undef SL__MEAN_DEF_

/* ---- min and max ---------------------------------------------------------------- */

/*
 * Pick the smaller (larger) of the accumulator a and the element b.  Floats:
 * a NaN accumulator (the initial value) takes b, a NaN b is ignored, and
 * of equal values the one with the sign bit set is smaller, so -0.0 < +0.0
 * whatever the order.
 */
#define SL__OPS_PICK_MIN_SL_DTYPE_CLASS_BOOL(a, b) ((b) < (a) ? (b) : (a))
#define SL__OPS_PICK_MIN_SL_DTYPE_CLASS_SINT(a, b) ((b) < (a) ? (b) : (a))
#define SL__OPS_PICK_MIN_SL_DTYPE_CLASS_UINT(a, b) ((b) < (a) ? (b) : (a))
#define SL__OPS_PICK_MIN_SL_DTYPE_CLASS_FLOAT(a, b) \
    ((b) < (a) || (a) != (a) || ((b) == (a) && signbit(b)) ? (b) : (a))
#define SL__OPS_PICK_MAX_SL_DTYPE_CLASS_BOOL(a, b) ((b) > (a) ? (b) : (a))
#define SL__OPS_PICK_MAX_SL_DTYPE_CLASS_SINT(a, b) ((b) > (a) ? (b) : (a))
#define SL__OPS_PICK_MAX_SL_DTYPE_CLASS_UINT(a, b) ((b) > (a) ? (b) : (a))
#define SL__OPS_PICK_MAX_SL_DTYPE_CLASS_FLOAT(a, b) \
    ((b) > (a) || (a) != (a) || ((b) == (a) && !signbit(b)) ? (b) : (a))

/* The accumulator's start: the type's far end for integers, NaN for floats
 * (so an all-NaN block gives NaN). */
#define SL__OPS_START_MIN_SL_DTYPE_CLASS_BOOL(T, size) SL__OPS_MAXV_SL_DTYPE_CLASS_BOOL(T, size)
#define SL__OPS_START_MIN_SL_DTYPE_CLASS_SINT(T, size) SL__OPS_MAXV_SL_DTYPE_CLASS_SINT(T, size)
#define SL__OPS_START_MIN_SL_DTYPE_CLASS_UINT(T, size) SL__OPS_MAXV_SL_DTYPE_CLASS_UINT(T, size)
#define SL__OPS_START_MIN_SL_DTYPE_CLASS_FLOAT(T, size) ((T)NAN)
#define SL__OPS_START_MAX_SL_DTYPE_CLASS_BOOL(T, size) SL__OPS_MINV_SL_DTYPE_CLASS_BOOL(T, size)
#define SL__OPS_START_MAX_SL_DTYPE_CLASS_SINT(T, size) SL__OPS_MINV_SL_DTYPE_CLASS_SINT(T, size)
#define SL__OPS_START_MAX_SL_DTYPE_CLASS_UINT(T, size) SL__OPS_MINV_SL_DTYPE_CLASS_UINT(T, size)
#define SL__OPS_START_MAX_SL_DTYPE_CLASS_FLOAT(T, size) ((T)NAN)

/* Min or max (`op`, upper case `OP`) of dtype `sfx`: the accumulator is
 * the element type; finalizing copies it out. */
#define SL__PICK_(op, OP, sfx, T, size, cls)                                                 \
    static inline T op##_load_##sfx(T x) { return (T)SL__OPS_LOAD_##cls(x); }                \
    static inline T op##_pick_##sfx(T a, T b) { return SL__OPS_PICK_##OP##_##cls(a, b); }    \
    SL__REDUCE_INIT_(op##_init_##sfx, T, SL__OPS_START_##OP##_##cls(T, size))                \
    SL__REDUCE_ROW_(op##_row_##sfx, T, T, op##_load_##sfx, op##_pick_##sfx, op##_pick_##sfx) \
    static void op##_final_##sfx(unsigned char *out_, ptrdiff_t step, const void *acc_,      \
                                 size_t n_full, uint64_t count, uint64_t count_part)         \
    {                                                                                        \
        T *restrict out = (T *)(void *)out_;                                                 \
        const T *restrict acc = acc_;                                                        \
        const ptrdiff_t s = step / (ptrdiff_t)sizeof(T);                                     \
        const size_t n = n_full + (count_part != 0);                                         \
        (void)count;                                                                         \
        for (size_t j = 0; j < n; j++)                                                       \
            out[(ptrdiff_t)j * s] = acc[j];                                                  \
    }                                                                                        \
    static void op##_##sfx(const struct sl__ds_plan *p)                                      \
    {                                                                                        \
        reduce_drive(p, op##_init_##sfx, op##_row_##sfx, op##_final_##sfx);                  \
    }

#define SL__MINMAX_(NAME, sfx, T, size, cls) \
    SL__PICK_(min, MIN, sfx, T, size, cls)   \
    SL__PICK_(max, MAX, sfx, T, size, cls)
#define SL__MINMAX_DEF_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__MINMAX_, NAME, sfx, T, size, cls)
SL_DTYPE_MAP(SL__MINMAX_DEF_)
#undef SL__MINMAX_DEF_

/* ---- tables --------------------------------------------------------------------- */

#define SL__MEAN_INT_ROW_(NAME, sfx) \
    [SL_DTYPE_##NAME] = {mean_##sfx##_32, mean_##sfx##_64, mean_##sfx##_128},
#define SL__MEAN_FLOAT_ROW_(NAME, sfx) [SL_DTYPE_##NAME] = {mean_##sfx, mean_##sfx, mean_##sfx},
#define SL__MEAN_ROW_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_INT_##cls(SL__MEAN_INT_ROW_, NAME, sfx)   \
        SL__OPS_IF_FLOAT_##cls(SL__MEAN_FLOAT_ROW_, NAME, sfx)
sl__ds_kernel *const sl__ds_mean_kernels[SL_DTYPE_COUNT_][SL__DS_TIER_COUNT_] = {
    SL_DTYPE_MAP(SL__MEAN_ROW_) /* [SL_DTYPE_BOOL] = {mean_b8_32, ...}, ... */
};
#undef SL__MEAN_ROW_
#undef SL__MEAN_FLOAT_ROW_
#undef SL__MEAN_INT_ROW_

#define SL__MIN_ROW_(NAME, sfx) [SL_DTYPE_##NAME] = min_##sfx,
#define SL__MAX_ROW_(NAME, sfx) [SL_DTYPE_##NAME] = max_##sfx,
#define SL__MINMAX_ROW_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__MIN_ROW_, NAME, sfx)
sl__ds_kernel *const sl__ds_min_kernels[SL_DTYPE_COUNT_] = {
    SL_DTYPE_MAP(SL__MINMAX_ROW_) /* [SL_DTYPE_BOOL] = min_b8, ... */
};
#undef SL__MINMAX_ROW_
#define SL__MINMAX_ROW_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__MAX_ROW_, NAME, sfx)
sl__ds_kernel *const sl__ds_max_kernels[SL_DTYPE_COUNT_] = {
    SL_DTYPE_MAP(SL__MINMAX_ROW_) /* [SL_DTYPE_BOOL] = max_b8, ... */
};
#undef SL__MINMAX_ROW_
#undef SL__MAX_ROW_
#undef SL__MIN_ROW_

enum sl__ds_tier
sl__ds_mean_tier(size_t elem_size, uint64_t block_max)
{
    /* Biased elements are below 2^(8 * elem_size), so a block sum is below
     * block_max * 2^(8 * elem_size). */
    if (elem_size <= 2 && block_max <= ((uint64_t)1 << 16))
        return SL__DS_TIER_32;
    if (elem_size <= 4 && block_max <= ((uint64_t)1 << 32))
        return SL__DS_TIER_64;
    return SL__DS_TIER_128;
}
