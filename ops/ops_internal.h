/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the ops module, open to its tests: the helpers
 * that turn core's dtype list into per-dtype kernels, the n-d iteration
 * shared by every kernel, the downsample plan and the per-method kernel
 * tables and the elementwise conversion tables; 128-bit arithmetic has
 * its own header (u128_internal.h), included here.
 *
 * Per-dtype code is generated from SL_DTYPE_MAP.  Its class column is
 * pasted onto a prefix to pick what a class needs: SL__OPS_IF_REAL_##cls
 * keeps the classes kernels compute on (bool, integers, float32/64), and
 * the SL__OPS_*_##cls traits below give loads, ranges and biases by class,
 * so no table lists the dtypes a second time.
 */
#ifndef SL_OPS_INTERNAL_H
#define SL_OPS_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/ops.h>

#include "core_internal.h"
#include "u128_internal.h"

/* A driver that takes its typed steps as function pointers and must be
 * inlined into each typed caller, so the steps become direct, inlined
 * calls (C's stand-in for a template). */
#if defined(__GNUC__)
#define SL__OPS_TEMPLATE static inline __attribute__((always_inline))
#else
#define SL__OPS_TEMPLATE static inline
#endif

/* Output elements per tile of the last dimension: accumulators for one
 * tile live on the stack (at most 16 bytes each). */
#define SL__OPS_TILE 256

/* ---- dtype-list helpers ------------------------------------------------- */

/* Expand M(...) only for the classes kernels compute on. */
#define SL__OPS_IF_REAL_SL_DTYPE_CLASS_BOOL(M, ...) M(__VA_ARGS__)
#define SL__OPS_IF_REAL_SL_DTYPE_CLASS_SINT(M, ...) M(__VA_ARGS__)
#define SL__OPS_IF_REAL_SL_DTYPE_CLASS_UINT(M, ...) M(__VA_ARGS__)
#define SL__OPS_IF_REAL_SL_DTYPE_CLASS_FLOAT(M, ...) M(__VA_ARGS__)
#define SL__OPS_IF_REAL_SL_DTYPE_CLASS_FLOAT16(M, ...)
#define SL__OPS_IF_REAL_SL_DTYPE_CLASS_COMPLEX(M, ...)

/* Expand M(...) only for bool and integers (or only for floats). */
#define SL__OPS_IF_INT_SL_DTYPE_CLASS_BOOL(M, ...) M(__VA_ARGS__)
#define SL__OPS_IF_INT_SL_DTYPE_CLASS_SINT(M, ...) M(__VA_ARGS__)
#define SL__OPS_IF_INT_SL_DTYPE_CLASS_UINT(M, ...) M(__VA_ARGS__)
#define SL__OPS_IF_INT_SL_DTYPE_CLASS_FLOAT(M, ...)
#define SL__OPS_IF_INT_SL_DTYPE_CLASS_FLOAT16(M, ...)
#define SL__OPS_IF_INT_SL_DTYPE_CLASS_COMPLEX(M, ...)
#define SL__OPS_IF_FLOAT_SL_DTYPE_CLASS_BOOL(M, ...)
#define SL__OPS_IF_FLOAT_SL_DTYPE_CLASS_SINT(M, ...)
#define SL__OPS_IF_FLOAT_SL_DTYPE_CLASS_UINT(M, ...)
#define SL__OPS_IF_FLOAT_SL_DTYPE_CLASS_FLOAT(M, ...) M(__VA_ARGS__)
#define SL__OPS_IF_FLOAT_SL_DTYPE_CLASS_FLOAT16(M, ...)
#define SL__OPS_IF_FLOAT_SL_DTYPE_CLASS_COMPLEX(M, ...)

/* An element's value: bool bytes other than 0 read as true. */
#define SL__OPS_LOAD_SL_DTYPE_CLASS_BOOL(x) ((uint8_t)((x) != 0))
#define SL__OPS_LOAD_SL_DTYPE_CLASS_SINT(x) (x)
#define SL__OPS_LOAD_SL_DTYPE_CLASS_UINT(x) (x)
#define SL__OPS_LOAD_SL_DTYPE_CLASS_FLOAT(x) (x)

/* What integer means add to each element so sums are unsigned: 2^(bits-1)
 * for signed types, 0 otherwise.  `size` is the element size in bytes. */
#define SL__OPS_BIAS_SL_DTYPE_CLASS_BOOL(size) ((uint64_t)0)
#define SL__OPS_BIAS_SL_DTYPE_CLASS_SINT(size) ((uint64_t)1 << (8 * (size)-1))
#define SL__OPS_BIAS_SL_DTYPE_CLASS_UINT(size) ((uint64_t)0)

/* The element from a biased value u in [0, 2^bits). */
#define SL__OPS_UNBIAS_SL_DTYPE_CLASS_BOOL(T, size, u) ((T)((u) != 0))
#define SL__OPS_UNBIAS_SL_DTYPE_CLASS_SINT(T, size, u) ((T)sl__ops_unbias((u), 8 * (size)))
#define SL__OPS_UNBIAS_SL_DTYPE_CLASS_UINT(T, size, u) ((T)(u))

/* Smallest and largest values of integer and bool types, as T. */
#define SL__OPS_MAXV_SL_DTYPE_CLASS_BOOL(T, size) ((T)1)
#define SL__OPS_MAXV_SL_DTYPE_CLASS_SINT(T, size) ((T)(((uint64_t)1 << (8 * (size)-1)) - 1))
#define SL__OPS_MAXV_SL_DTYPE_CLASS_UINT(T, size) ((T)-1)
#define SL__OPS_MINV_SL_DTYPE_CLASS_BOOL(T, size) ((T)0)
#define SL__OPS_MINV_SL_DTYPE_CLASS_SINT(T, size) \
    ((T)(-SL__OPS_MAXV_SL_DTYPE_CLASS_SINT(T, size) - 1))
#define SL__OPS_MINV_SL_DTYPE_CLASS_UINT(T, size) ((T)0)

/* Unsigned integer of `size` bytes (the sort keys of floats). */
#define SL__OPS_UINT_4 uint32_t
#define SL__OPS_UINT_8 uint64_t

/* 2^(bits-1) subtracted from u in [0, 2^bits) without overflow (bits <= 64). */
static inline int64_t
sl__ops_unbias(uint64_t u, unsigned bits)
{
    const uint64_t bias = (uint64_t)1 << (bits - 1);
    if (bits < 64)
        return (int64_t)u - (int64_t)bias; /* u < 2^63: no overflow */
    return u >= bias ? (int64_t)(u - bias) : -(int64_t)(bias - 1 - u) - 1;
}

/* True when x is a power of two (x > 0). */
static inline bool
sl__ops_is_pow2(uint64_t x)
{
    return x != 0 && (x & (x - 1)) == 0;
}

/* Number of trailing zero bits of x > 0. */
static inline unsigned
sl__ops_ctz(uint64_t x)
{
    unsigned n = 0;
    while ((x & 1) == 0) {
        x >>= 1;
        n++;
    }
    return n;
}

/*
 * Round q + r / n (0 <= r < n) to the nearest integer, ties to even:
 * up when 2r > n, or 2r == n and q is odd.  Written without 2r, which could
 * overflow.
 */
#define SL__OPS_ROUND_HALF_EVEN(q, r, n) ((q) + ((r) > (n) - (r) - ((q)&1)))

/*
 * Stack room for one tile of accumulators, elements or wide values.  A
 * union, so every kernel reaches the storage through a member of its own
 * type rather than through a char array.
 */
union sl__ops_tile {
    uint32_t acc32[SL__OPS_TILE];         /* integer mean sums, tier 32 */
    uint64_t acc64[SL__OPS_TILE];         /* integer mean sums, tier 64; uint64 values */
    struct sl__u128 acc128[SL__OPS_TILE]; /* integer mean sums, tier 128 */
    int64_t wide_i64[SL__OPS_TILE];       /* elementwise values */
    double wide_f64[SL__OPS_TILE];        /* float sums; elementwise values */
#define SL__OPS_TILE_MEMBER_(NAME, sfx, T, size, v3, kind, cls) T elem_##sfx[SL__OPS_TILE];
    SL_DTYPE_MAP(SL__OPS_TILE_MEMBER_) /* min and max accumulators */
#undef SL__OPS_TILE_MEMBER_
};

/* ---- n-d iteration ------------------------------------------------------- */

/*
 * A box of elements walked row by row: `rank` dimensions of extent `ext`,
 * `step` bytes apart; the last dimension is the row.
 */
struct sl__ops_box {
    uint32_t rank;               /* >= 1 */
    uint64_t ext[SL_MAX_RANK];   /* extent per dimension */
    ptrdiff_t step[SL_MAX_RANK]; /* bytes between neighbours */
};

/* Byte offset of the next row of `box` after the row at index `idx` (the
 * last entry unused), updating `idx` and `*off`; false when done. */
static inline bool
sl__ops_box_next_row(const struct sl__ops_box *box, uint64_t *idx, ptrdiff_t *off)
{
    for (uint32_t d = box->rank - 1; d-- > 0;) {
        *off += box->step[d];
        if (++idx[d] < box->ext[d])
            return true;
        *off -= (ptrdiff_t)box->ext[d] * box->step[d];
        idx[d] = 0;
    }
    return false;
}

/* True when outer == inner * n, computed without overflow (n > 1): two
 * dimensions that chain like this can be walked as one. */
static inline bool
sl__ops_steps_chain(ptrdiff_t outer, ptrdiff_t inner, uint64_t n)
{
    if (inner == 0)
        return outer == 0;
    return outer % inner == 0 && (uint64_t)(outer / inner) == n && outer / inner > 0;
}

/* ---- downsample -------------------------------------------------------------- */

/*
 * A downsample call after validation and normalization: dimensions of
 * extent 1 are dropped (rank 0 becomes one dimension of extent 1), strides
 * are in bytes, and every extent is non-zero.
 */
struct sl__ds_plan {
    uint32_t rank;                   /* >= 1 */
    size_t elem_size;                /* bytes per element */
    uint64_t in_shape[SL_MAX_RANK];  /* input extent per dimension */
    ptrdiff_t in_step[SL_MAX_RANK];  /* input bytes between neighbours */
    uint64_t out_shape[SL_MAX_RANK]; /* ceil(in_shape / factor) */
    ptrdiff_t out_step[SL_MAX_RANK]; /* output bytes between neighbours */
    uint64_t factor[SL_MAX_RANK];    /* block extent per dimension */
    uint64_t block_max;              /* elements in the largest block */
    const unsigned char *in;         /* input element (0, ..., 0) */
    unsigned char *out;              /* output element (0, ..., 0) */
    void *scratch;                   /* median and mode: room for block_max keys */
};

/* Kernel for one method and dtype. */
typedef void sl__ds_kernel(const struct sl__ds_plan *p);

/* Integer mean accumulators, narrowest first; floats use double. */
enum sl__ds_tier {
    SL__DS_TIER_32,  /* uint32: elements of <= 16 bits, blocks of <= 65536 */
    SL__DS_TIER_64,  /* uint64: elements of <= 32 bits, blocks of <= 2^32 */
    SL__DS_TIER_128, /* struct sl__u128: everything else */
    SL__DS_TIER_COUNT_
};

/* Mean, min and max kernels by dtype (NULL: unsupported). */
extern sl__ds_kernel *const sl__ds_mean_kernels[SL_DTYPE_COUNT_][SL__DS_TIER_COUNT_];
extern sl__ds_kernel *const sl__ds_min_kernels[SL_DTYPE_COUNT_];
extern sl__ds_kernel *const sl__ds_max_kernels[SL_DTYPE_COUNT_];
/* Median and mode kernels by dtype (NULL: unsupported). */
extern sl__ds_kernel *const sl__ds_median_kernels[SL_DTYPE_COUNT_];
extern sl__ds_kernel *const sl__ds_mode_kernels[SL_DTYPE_COUNT_];

/* The accumulator tier a mean of `elem_size`-byte integers over blocks of
 * `block_max` elements needs. */
enum sl__ds_tier sl__ds_mean_tier(size_t elem_size, uint64_t block_max);

/* ---- elementwise --------------------------------------------------------------- */

/* The wide type a tile of values is held in between load and store. */
enum sl__ew_kind {
    SL__EW_I64, /* int64_t: bool, signed integers, uint8..uint32 */
    SL__EW_U64, /* uint64_t: uint64 */
    SL__EW_F64, /* double: float32, float64 (and every type for scale) */
    SL__EW_F32, /* float: the float32 working type of expressions (expr_eval.c);
                   loads round once from the exact value, as numpy's astype */
    SL__EW_KIND_COUNT_
};

/* Read n elements `step` bytes apart into a tile of the wide type. */
typedef void sl__ew_load_fn(void *tile, const unsigned char *src, ptrdiff_t step, size_t n);
/* Write n elements `step` bytes apart from a tile of the wide type,
 * converting by the cast rules. */
typedef void sl__ew_store_fn(unsigned char *dst, ptrdiff_t step, const void *tile, size_t n);
/* Write `*value` (one element of the dtype) where mask is 1, else 0. */
typedef void sl__ew_select_fn(unsigned char *dst, ptrdiff_t step, const uint8_t *mask, size_t n,
                              const void *value);

/* How one dtype enters and leaves the wide types. */
struct sl__ew_conv {
    enum sl__ew_kind kind;                      /* the exact wide type for its values */
    sl__ew_load_fn *load[SL__EW_KIND_COUNT_];   /* into each wide type */
    sl__ew_store_fn *store[SL__EW_KIND_COUNT_]; /* from each wide type */
    sl__ew_select_fn *select;                   /* threshold output */
};

/* Conversions by dtype; entries of unsupported dtypes have NULL loads. */
extern const struct sl__ew_conv sl__ew_conv_table[SL_DTYPE_COUNT_];

/* Parameter checks shared by the kernels and the registry; EINVAL naming
 * the parameter and its value. */
sl_status sl__scale_check(double scale, double offset, struct sl_error *err);
sl_status sl__clip_check(sl_dtype in_dtype, double lo, double hi, struct sl_error *err);
sl_status sl__threshold_check(double threshold, struct sl_error *err);

/* True for the dtypes the elementwise kernels and the non-stride
 * downsample methods compute on. */
bool sl__ops_dtype_is_kernel(sl_dtype dt);

/* EUNSUPPORTED naming `what` and dtype `dt` when it is not a kernel dtype. */
sl_status sl__ops_check_kernel_dtype(const char *what, sl_dtype dt, struct sl_error *err);

/* The built-in operations (registry.c), `*n` of them in name order;
 * op_catalog.c adds those registered at run time. */
struct sl_op_desc;
const struct sl_op_desc *sl__op_builtins(uint32_t *n);

#endif /* SL_OPS_INTERNAL_H */
