/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the neighbourhood filters (ops/filter*.c), open
 * to their tests: boxes of elements placed in array coordinates, the
 * boundary mapping, scipy.ndimage's conversions from double into each
 * dtype, the 1-D passes separable filters are made of, and the kernels'
 * entry points.
 *
 * DESIGN: every kernel computes from a padded box P that covers the output
 * region grown by the halo, E = [out.start - lo, out.stop + hi) per axis,
 * in array coordinates that may lie beyond the edges.  Elements of P
 * beyond an edge hold the element the mode maps them to (for `constant`,
 * any element: every pass puts cval there instead, as scipy pads each 1-D
 * pass with cval).  A separable filter then runs one 1-D pass per axis,
 * in axis order, each from a box to a smaller one (the pass's axis shrinks
 * from E to the output's extent), storing each intermediate in the
 * element type, as scipy stores them in the output array.  Boxes never
 * depend on the array's shape, so scratch is bounded by the output block
 * and the halo alone, even for `wrap`.
 */
#ifndef SL_FILTER_INTERNAL_H
#define SL_FILTER_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/filter.h>

#include "ops_internal.h"

/* Sigmas at or below this leave an axis alone (scipy's `sigma > 1e-15`). */
#define SL__FILT_SIGMA_MIN 1e-15
/* Largest box size and Gaussian radius, so positions fit in int64 with room. */
#define SL__FILT_SIZE_MAX ((uint64_t)1 << 31)
/* Largest array extent handled: positions are int64. */
#define SL__FILT_EXTENT_MAX ((uint64_t)1 << 62)
/* Columns per tile of a pass along an outer axis. */
#define SL__FILT_TILE 64
/* Alignment of every scratch buffer. */
#define SL__FILT_ALIGN 64

/*
 * Elements in memory placed in array coordinates: element i (per axis) of
 * the box sits at array position start + i, `step` bytes from its
 * neighbour.  Positions may lie beyond the array's edges (padded boxes).
 */
struct sl__filt_box {
    unsigned char *data;         /* the element at `start` */
    int64_t start[SL_MAX_RANK];  /* array position of element 0 per axis */
    uint64_t ext[SL_MAX_RANK];   /* extent per axis */
    ptrdiff_t step[SL_MAX_RANK]; /* bytes between neighbours per axis */
};

/* What one 1-D pass computes at each element x0 from x[-lo .. hi]. */
enum sl__filt_line {
    SL__FILT_LINE_SYM,  /* w[0]·x0, then + (x[-j] + x[j])·w[j] for j = r .. 1 */
    SL__FILT_LINE_ANTI, /* w[0]·x0, then + (x[-j] − x[j])·w[j] for j = r .. 1 */
    SL__FILT_LINE_MEAN, /* running sum of lo + hi + 1 elements, divided by that size */
    SL__FILT_LINE_MIN,  /* smallest non-NaN element (NaN when all are) */
    SL__FILT_LINE_MAX   /* largest non-NaN element (NaN when all are) */
};

/* One 1-D pass along an axis. */
struct sl__filt_pass {
    uint32_t axis;           /* the axis filtered */
    enum sl__filt_line line; /* what is computed */
    uint64_t lo, hi;         /* elements needed before and after */
    const double *w;         /* SYM, ANTI: lo + 1 weights, w[j] for offset -j */
};

/* What every pass of one call shares. */
struct sl__filt_ctx {
    sl_dtype dtype;              /* element type of every box */
    uint32_t rank;               /* >= 1 */
    uint64_t shape[SL_MAX_RANK]; /* the array's shape */
    bool constant;               /* SL_BOUNDARY_CONSTANT: cval beyond edges */
    double cval;                 /* the value beyond the edges, as double */
    double *ext;                 /* tile of extended lines (scratch) */
    double *res;                 /* tile of results (scratch) */
    double *aux;                 /* MIN, MAX: two more extended tiles; MEAN: sums */
};

/* ---- boundary and conversions (filter_support.c) ------------------------------------------ */

/*
 * The array index that position p (any int64) of an axis of extent n >= 1
 * stands for under `mode`; -1 for a position beyond the edges under
 * SL_BOUNDARY_CONSTANT.  reflect repeats with period 2n, mirror with 2n - 2
 * (nearest for n = 1), wrap with n, as scipy's line extension does.
 */
int64_t sl__filt_map(sl_boundary mode, int64_t p, uint64_t n);

/*
 * The smallest interval [*lo, *hi) of indices of an axis of extent n >= 1
 * that holds every element positions [p0, p1) (p0 < p1) map to under
 * `mode`; without iterating, so any halo is fast.
 */
void sl__filt_needed(sl_boundary mode, int64_t p0, int64_t p1, uint64_t n, uint64_t *lo,
                     uint64_t *hi);

/*
 * Fill the C-order box `pad` (element size `es`) from `in`, whose box
 * holds every in-array element the positions of `pad` map to: each
 * position takes the element `mode` maps it to (under constant, the
 * nearest one; passes put cval there).
 */
void sl__filt_pad(const struct sl__filt_box *pad, const struct sl__filt_box *in, uint32_t rank,
                  const uint64_t *shape, sl_boundary mode, size_t es);

/* ---- separable passes (filter_separable.c) ---------------------------------- */

/*
 * Weights of scipy.ndimage's Gaussian of `sigma` (order 0 or 1) with
 * radius r, reversed for correlation: w[j], j = 0 .. r, the weight at
 * offset -j (order 1 is antisymmetric: the weight at +j is -w[j]).
 * Returns SYM or ANTI as scipy classifies the kernel.
 */
enum sl__filt_line sl__filt_gauss_weights(double sigma, unsigned order, uint64_t r, double *w);

/*
 * Run pass `p` from box `src` into box `dst`: dst covers src but along the
 * pass's axis, where src covers dst grown by p->lo and p->hi.  Elements of
 * src beyond the array's edges along that axis read as cval under
 * ctx->constant.
 */
void sl__filt_pass_run(const struct sl__filt_ctx *ctx, const struct sl__filt_pass *p,
                       const struct sl__filt_box *src, const struct sl__filt_box *dst);

/* How sl__filt_combine folds one derivative into the output. */
enum sl__filt_fold {
    SL__FILT_FOLD_SET,    /* out = t */
    SL__FILT_FOLD_ADD,    /* out = out + t */
    SL__FILT_FOLD_SQUARE, /* out = t · t */
    SL__FILT_FOLD_ADD_SQ, /* out = out + t · t */
    SL__FILT_FOLD_SQRT    /* out = sqrt(out) (t unused) */
};

/*
 * Fold box `t` into box `out` (same extents) with numpy's arithmetic in
 * the element type: integers wrap, bool adds as `or` and multiplies as
 * `and`, float32 stays float32; sqrt of an integer is taken in double and
 * stored by scipy's conversions.
 */
void sl__filt_combine(sl_dtype dt, uint32_t rank, enum sl__filt_fold fold,
                      const struct sl__filt_box *out, const struct sl__filt_box *t);

/* ---- median (filter_rank.c) -------------------------------------------------- */

/*
 * The median (the element of rank size / 2, as scipy) of each box of
 * `size` elements: out element i takes P's box starting at i.  `window`
 * holds the product of the sizes in doubles.  Under ctx->constant, box
 * elements beyond the array's edges are cval stored into the dtype.
 */
void sl__filt_median(const struct sl__filt_ctx *ctx, const uint64_t *size,
                     const struct sl__filt_box *pad, const struct sl__filt_box *out,
                     double *window);

/* ---- scipy's conversions ----------------------------------------------------------- */

/*
 * scipy.ndimage stores a double into an integer element with a C cast, and
 * the x86-64 code gcc emits for one defines what out-of-range values and
 * NaN give: types up to 16 bits and int32 go through a 32-bit conversion
 * (INT32_MIN when out of range, then the low bits), uint32 and int64
 * through a 64-bit one (INT64_MIN), uint64 through the 64-bit one after
 * subtracting 2^63 at or above 2^63.  Values in range truncate toward 0.
 */
static inline int32_t
sl__filt_cvt32(double x)
{
    return x > -2147483649.0 && x < 2147483648.0 ? (int32_t)x : INT32_MIN;
}

static inline int64_t
sl__filt_cvt64(double x)
{
    return x >= -9223372036854775808.0 && x < 9223372036854775808.0 ? (int64_t)x : INT64_MIN;
}

static inline uint64_t
sl__filt_cvt_u8(double x)
{
    if (x >= 9223372036854775808.0)
        return (uint64_t)sl__filt_cvt64(x - 9223372036854775808.0) ^ ((uint64_t)1 << 63);
    return (uint64_t)sl__filt_cvt64(x);
}

#define sl__filt_cvt_s1(x) sl__filt_cvt32(x)
#define sl__filt_cvt_s2(x) sl__filt_cvt32(x)
#define sl__filt_cvt_s4(x) sl__filt_cvt32(x)
#define sl__filt_cvt_s8(x) sl__filt_cvt64(x)
#define sl__filt_cvt_u1(x) ((uint32_t)sl__filt_cvt32(x))
#define sl__filt_cvt_u2(x) ((uint32_t)sl__filt_cvt32(x))
#define sl__filt_cvt_u4(x) ((uint64_t)sl__filt_cvt64(x))

/* Element of type T (of `size` bytes) from double x, as scipy stores it;
 * bool is stored as 0 or 1 (scipy keeps the low byte, any nonzero byte
 * being true). */
#define SL__FILT_FROM_D_SL_DTYPE_CLASS_BOOL(T, size, x) \
    ((T)(((uint32_t)sl__filt_cvt32(x) & 0xff) != 0))
#define SL__FILT_FROM_D_SL_DTYPE_CLASS_SINT(T, size, x) ((T)sl__filt_cvt_s##size(x))
#define SL__FILT_FROM_D_SL_DTYPE_CLASS_UINT(T, size, x) ((T)sl__filt_cvt_u##size(x))
#define SL__FILT_FROM_D_SL_DTYPE_CLASS_FLOAT(T, size, x) ((T)(x))

/* Read n elements `step` bytes apart into doubles (bool as 0 or 1). */
typedef void sl__filt_load_fn(double *dst, const unsigned char *src, ptrdiff_t step, size_t n);
/* Write n doubles as elements `step` bytes apart, by scipy's conversions. */
typedef void sl__filt_store_fn(unsigned char *dst, ptrdiff_t step, const double *src, size_t n);

/* Loads and stores by dtype (NULL for dtypes filters do not take). */
extern sl__filt_load_fn *const sl__filt_load[SL_DTYPE_COUNT_];
extern sl__filt_store_fn *const sl__filt_store[SL_DTYPE_COUNT_];

/* The double scipy's median puts beyond the edges under constant: cval
 * stored into dtype `dt`, read back. */
double sl__filt_cval_as_element(sl_dtype dt, double cval);

#endif /* SL_FILTER_INTERNAL_H */
