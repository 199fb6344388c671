/* SPDX-License-Identifier: MIT */
/*
 * Separable neighbourhood filters: the 1-D passes of gaussian, uniform,
 * minimum, maximum, gradient_magnitude and laplace, scipy.ndimage's
 * Gaussian weights, and the elementwise folds that combine derivatives.
 *
 * DESIGN: a pass reads its source box line by line along its axis into
 * doubles (as scipy's line buffers do), extended lines holding cval beyond
 * the edges under `constant`, computes in double with scipy's order of
 * operations, and stores by scipy's conversions into the element type, so
 * integer intermediates round (truncate) exactly where scipy's do.  A pass
 * handles a tile of up to SL__FILT_TILE neighbouring lines at once, row by
 * row, so the arithmetic runs over columns: along an outer axis the lines
 * next along the last axis (contiguous), along the last axis the lines
 * next along an outer one (gathered), except for weighted sums along the
 * last axis, which take one line at a time and vectorize along it.  Each
 * result is one loop over k of `o[k] op= f(e[k + shift])` in which
 * neighbouring k are neighbouring lines or neighbouring elements, which
 * gcc vectorizes without changing any element's sequence of operations.
 * Minimum and maximum use van Herk/Gil-Werman (prefix and suffix extrema
 * of blocks of the window's size: three comparisons an element whatever
 * the size) and ignore NaN, which scipy does not do consistently (see
 * ops/README.md).
 */
#include <math.h>
#include <string.h>

#include "filter_internal.h"

/* ---- Gaussian weights ------------------------------------------------------------ */

/* numpy's pairwise sum of the 2r + 1 values phi[|i - r|], i = 0 .. 2r,
 * elements [lo, lo + n) of that sequence: blocks of up to 128 summed with
 * eight accumulators, larger ones split at a multiple of eight. */
static double
pairwise_sum(const double *phi, uint64_t r, uint64_t lo, uint64_t n)
{
#define SL__PHI_(i) phi[(i) >= r ? (i)-r : r - (i)]
    if (n < 8) {
        double s = 0.;
        for (uint64_t i = lo; i < lo + n; i++)
            s += SL__PHI_(i);
        return s;
    }
    if (n <= 128) {
        double acc[8];
        for (uint64_t j = 0; j < 8; j++)
            acc[j] = SL__PHI_(lo + j);
        uint64_t i = 8;
        for (; i < n - n % 8; i += 8)
            for (uint64_t j = 0; j < 8; j++)
                acc[j] += SL__PHI_(lo + i + j);
        double s =
            ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for (; i < n; i++)
            s += SL__PHI_(lo + i);
        return s;
    }
#undef SL__PHI_
    uint64_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(phi, r, lo, n2) + pairwise_sum(phi, r, lo + n2, n - n2);
}

enum sl__filt_line
sl__filt_gauss_weights(double sigma, unsigned order, uint64_t r, double *w)
{
    /* scipy's _gaussian_kernel1d: phi(x) = exp(-0.5 / sigma^2 * x^2) over
     * x = -r .. r, divided by its numpy sum; order 1 multiplies by
     * q(x) = x * (1 / -sigma^2), and correlation reverses the kernel, so
     * the weight at offset -j is the kernel at x = j. */
    const double s2 = sigma * sigma;
    const double e = -0.5 / s2;
    for (uint64_t j = 0; j <= r; j++)
        w[j] = exp(e * (double)(int64_t)(j * j));
    const double sum = pairwise_sum(w, r, 0, 2 * r + 1);
    for (uint64_t j = 0; j <= r; j++)
        w[j] = w[j] / sum;
    if (order == 0)
        return SL__FILT_LINE_SYM;
    const double c = 1.0 / -s2;
    bool sym = true;
    for (uint64_t j = 0; j <= r; j++) {
        w[j] = (0.0 + (double)j * c) * w[j];
        /* scipy calls a kernel symmetric when each pair differs by at
         * most DBL_EPSILON, before it tries antisymmetric. */
        if (j > 0 && fabs(-w[j] - w[j]) > 2.220446049250313e-16)
            sym = false;
    }
    return sym ? SL__FILT_LINE_SYM : SL__FILT_LINE_ANTI;
}

/* ---- line kernels ------------------------------------------------------------------ */

/*
 * SYM and ANTI: o[k] = c[k]·w0, then o[k] += (l_j[k] ± h_j[k])·w[j] for
 * j = r .. 1, where rows l_j and h_j lie j rows before and after c.  gcc
 * does not keep an array of accumulators in registers across the taps
 * (it stores and reloads them each tap), so with GNU C the block of
 * results is spelled as 128-bit vectors of two doubles: the same
 * operations on each element, in the same order, two at a time.
 */
#if defined(__GNUC__)
typedef double sl__v2d __attribute__((vector_size(16)));

static inline sl__v2d
v2_load(const double *p)
{
    sl__v2d v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void
v2_store(double *p, sl__v2d v)
{
    memcpy(p, &v, sizeof v);
}

/* Elements per block: 8 vectors of 2 in registers. */
#define SL__FILT_BLOCK 16
#define SL__FILT_CORR_BLOCK_(OP)                                          \
    for (; k + SL__FILT_BLOCK <= m; k += SL__FILT_BLOCK) {                \
        const double *ck = c + k;                                         \
        const sl__v2d vw0 = {w0, w0};                                     \
        sl__v2d a0 = v2_load(ck) * vw0, a1 = v2_load(ck + 2) * vw0;       \
        sl__v2d a2 = v2_load(ck + 4) * vw0, a3 = v2_load(ck + 6) * vw0;   \
        sl__v2d a4 = v2_load(ck + 8) * vw0, a5 = v2_load(ck + 10) * vw0;  \
        sl__v2d a6 = v2_load(ck + 12) * vw0, a7 = v2_load(ck + 14) * vw0; \
        for (uint64_t j = r; j >= 1; j--) {                               \
            const double *lft = ck - j * tw, *rgt = ck + j * tw;          \
            const sl__v2d vw = {w[j], w[j]};                              \
            a0 += (v2_load(lft) OP v2_load(rgt)) * vw;                    \
            a1 += (v2_load(lft + 2) OP v2_load(rgt + 2)) * vw;            \
            a2 += (v2_load(lft + 4) OP v2_load(rgt + 4)) * vw;            \
            a3 += (v2_load(lft + 6) OP v2_load(rgt + 6)) * vw;            \
            a4 += (v2_load(lft + 8) OP v2_load(rgt + 8)) * vw;            \
            a5 += (v2_load(lft + 10) OP v2_load(rgt + 10)) * vw;          \
            a6 += (v2_load(lft + 12) OP v2_load(rgt + 12)) * vw;          \
            a7 += (v2_load(lft + 14) OP v2_load(rgt + 14)) * vw;          \
        }                                                                 \
        v2_store(o + k, a0);                                              \
        v2_store(o + k + 2, a1);                                          \
        v2_store(o + k + 4, a2);                                          \
        v2_store(o + k + 6, a3);                                          \
        v2_store(o + k + 8, a4);                                          \
        v2_store(o + k + 10, a5);                                         \
        v2_store(o + k + 12, a6);                                         \
        v2_store(o + k + 14, a7);                                         \
    }
#else
#define SL__FILT_CORR_BLOCK_(OP)
#endif

#define SL__FILT_CORR_(name, OP)                                                        \
    static void name(const double *restrict e, double *restrict o, size_t m, size_t tw, \
                     const double *restrict w, uint64_t r)                              \
    {                                                                                   \
        const double *restrict c = e + r * tw;                                          \
        const double w0 = w[0];                                                         \
        size_t k = 0;                                                                   \
        SL__FILT_CORR_BLOCK_(OP)                                                        \
        for (; k < m; k++) {                                                            \
            double acc = c[k] * w0;                                                     \
            for (uint64_t j = r; j >= 1; j--)                                           \
                acc += (c[k - j * tw] OP c[k + j * tw]) * w[j];                         \
            o[k] = acc;                                                                 \
        }                                                                               \
    }
SL__FILT_CORR_(line_sym, +)
SL__FILT_CORR_(line_anti, -)
#undef SL__FILT_CORR_
#undef SL__FILT_CORR_BLOCK_

/* MEAN: each result the sum of its own window, added to 0.0 in order, then
 * divided by the size.  Not scipy's running sum (+ entering - leaving),
 * whose rounding depends on where the line starts: a block that starts
 * inside the array would round differently from the whole array, and
 * chunks must agree with it bit for bit.  Integer inputs sum exactly
 * either way, so they still equal scipy's; inf and NaN stay in the
 * windows that hold them. */
static void
line_mean(const double *restrict e, double *restrict o, size_t n, size_t tw, uint64_t size,
          double *restrict t)
{
    const double s = (double)size;
    for (size_t i = 0; i < n; i++) {
        for (size_t x = 0; x < tw; x++)
            t[x] = 0.0;
        for (uint64_t j = 0; j < size; j++) {
            const double *restrict ej = e + (i + j) * tw;
            for (size_t x = 0; x < tw; x++)
                t[x] += ej[x];
        }
        double *restrict oi = o + i * tw;
        for (size_t x = 0; x < tw; x++)
            oi[x] = t[x] / s;
    }
}

/* The smaller (larger) of a and b, NaN only when both are. */
#define SL__FILT_MIN_(a, b) ((b) < (a) || (a) != (a) ? (b) : (a))
#define SL__FILT_MAX_(a, b) ((b) > (a) || (a) != (a) ? (b) : (a))

/* MIN, MAX: van Herk/Gil-Werman over blocks of `size` rows: g holds
 * prefix extrema within each block, h suffix extrema, and the window at
 * row i is h[i] with g[i + size - 1]. */
#define SL__FILT_EXTREMUM_(name, PICK)                                                  \
    static void name(const double *restrict e, double *restrict o, size_t n, size_t tw, \
                     uint64_t size, double *restrict g, double *restrict h)             \
    {                                                                                   \
        const size_t len = n + size - 1;                                                \
        for (size_t i = 0; i < len; i++) {                                              \
            const double *restrict ei = e + i * tw;                                     \
            double *restrict gi = g + i * tw;                                           \
            if (i % size == 0) {                                                        \
                memcpy(gi, ei, tw * sizeof *gi);                                        \
                continue;                                                               \
            }                                                                           \
            const double *restrict gp = gi - tw;                                        \
            for (size_t x = 0; x < tw; x++)                                             \
                gi[x] = PICK(gp[x], ei[x]);                                             \
        }                                                                               \
        for (size_t i = len; i-- > 0;) {                                                \
            const double *restrict ei = e + i * tw;                                     \
            double *restrict hi = h + i * tw;                                           \
            if (i == len - 1 || (i + 1) % size == 0) {                                  \
                memcpy(hi, ei, tw * sizeof *hi);                                        \
                continue;                                                               \
            }                                                                           \
            const double *restrict hn = hi + tw;                                        \
            for (size_t x = 0; x < tw; x++)                                             \
                hi[x] = PICK(hn[x], ei[x]);                                             \
        }                                                                               \
        const double *restrict gs = g + (size - 1) * tw;                                \
        for (size_t k = 0; k < n * tw; k++)                                             \
            o[k] = PICK(h[k], gs[k]);                                                   \
    }
SL__FILT_EXTREMUM_(line_min, SL__FILT_MIN_)
SL__FILT_EXTREMUM_(line_max, SL__FILT_MAX_)
#undef SL__FILT_EXTREMUM_

/* Compute n results of `tw` columns from the extended tile ctx->ext. */
static void
line_run(const struct sl__filt_ctx *ctx, const struct sl__filt_pass *p, size_t n, size_t tw)
{
    const uint64_t size = p->lo + p->hi + 1;
    const size_t len = n + (size_t)size - 1;
    switch (p->line) {
    case SL__FILT_LINE_SYM:
        line_sym(ctx->ext, ctx->res, n * tw, tw, p->w, p->lo);
        break;
    case SL__FILT_LINE_ANTI:
        line_anti(ctx->ext, ctx->res, n * tw, tw, p->w, p->lo);
        break;
    case SL__FILT_LINE_MEAN:
        line_mean(ctx->ext, ctx->res, n, tw, size, ctx->aux);
        break;
    case SL__FILT_LINE_MIN:
        line_min(ctx->ext, ctx->res, n, tw, size, ctx->aux, ctx->aux + len * tw);
        break;
    case SL__FILT_LINE_MAX:
        line_max(ctx->ext, ctx->res, n, tw, size, ctx->aux, ctx->aux + len * tw);
        break;
    }
}

static void
fill(double *d, double v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = v;
}

void
sl__filt_pass_run(const struct sl__filt_ctx *ctx, const struct sl__filt_pass *p,
                  const struct sl__filt_box *src, const struct sl__filt_box *dst)
{
    const uint32_t rank = ctx->rank, a = p->axis;
    const size_t n = (size_t)dst->ext[a], len = (size_t)src->ext[a];
    sl__filt_load_fn *load = sl__filt_load[ctx->dtype];
    sl__filt_store_fn *store = sl__filt_store[ctx->dtype];
    /* Columns: the last axis after `a` with more than one element.  Along
     * the last axis the weights vectorize over one line at a time, but the
     * window sums and extrema are sequential along a line, so they take
     * the lines of the last axis before `a` as columns (gathered with its
     * stride) instead; with neither, one line at a time. */
    uint32_t w = rank;
    for (uint32_t d = rank; d-- > a + 1;) {
        if (dst->ext[d] > 1) {
            w = d;
            break;
        }
    }
    if (w == rank && p->line != SL__FILT_LINE_SYM && p->line != SL__FILT_LINE_ANTI) {
        for (uint32_t d = a; d-- > 0;) {
            if (dst->ext[d] > 1) {
                w = d;
                break;
            }
        }
    }
    /* Rows of the extended line beyond the edges, under constant. */
    size_t cut_lo = 0, cut_hi = 0;
    if (ctx->constant) {
        const int64_t s = src->start[a], e = s + (int64_t)len, edge = (int64_t)ctx->shape[a];
        if (s < 0)
            cut_lo = (uint64_t)-s < len ? (size_t)-s : len;
        if (e > edge)
            cut_hi = (uint64_t)(e - edge) < len - cut_lo ? (size_t)(e - edge) : len - cut_lo;
    }
    uint64_t outer[SL_MAX_RANK], idx[SL_MAX_RANK] = {0};
    for (uint32_t d = 0; d < rank; d++)
        outer[d] = d == a || d == w ? 1 : dst->ext[d];
    const ptrdiff_t ss = src->step[a], ds = dst->step[a];
    do {
        ptrdiff_t soff = 0, doff = 0;
        for (uint32_t d = 0; d < rank; d++) {
            soff += (ptrdiff_t)idx[d] * src->step[d];
            doff += (ptrdiff_t)idx[d] * dst->step[d];
        }
        const unsigned char *sline = src->data + soff;
        unsigned char *dline = dst->data + doff;
        if (w == rank) {
            double *e = ctx->ext;
            fill(e, ctx->cval, cut_lo);
            load(e + cut_lo, sline + (ptrdiff_t)cut_lo * ss, ss, len - cut_lo - cut_hi);
            fill(e + len - cut_hi, ctx->cval, cut_hi);
            line_run(ctx, p, n, 1);
            store(dline, ds, ctx->res, n);
            continue;
        }
        const size_t cols = (size_t)dst->ext[w];
        const ptrdiff_t sw = src->step[w], dw = dst->step[w];
        for (size_t x0 = 0; x0 < cols; x0 += SL__FILT_TILE) {
            const size_t tw = cols - x0 < SL__FILT_TILE ? cols - x0 : SL__FILT_TILE;
            for (size_t i = 0; i < len; i++) {
                double *row = ctx->ext + i * tw;
                if (i < cut_lo || i >= len - cut_hi)
                    fill(row, ctx->cval, tw);
                else
                    load(row, sline + (ptrdiff_t)i * ss + (ptrdiff_t)x0 * sw, sw, tw);
            }
            line_run(ctx, p, n, tw);
            for (size_t i = 0; i < n; i++)
                store(dline + (ptrdiff_t)i * ds + (ptrdiff_t)x0 * dw, dw, ctx->res + i * tw, tw);
        }
    } while (sl__index_next(idx, outer, rank));
}

/* ---- folds ------------------------------------------------------------------------- */

/* numpy's + and * in the element type: integers wrap (computed on
 * uint64_t, whose low bits are the element's), bool is `or` and `and`. */
#define SL__FILT_ADD_SL_DTYPE_CLASS_BOOL(T, a, b) ((T)((a) | (b)))
#define SL__FILT_ADD_SL_DTYPE_CLASS_SINT(T, a, b) ((T)((uint64_t)(a) + (uint64_t)(b)))
#define SL__FILT_ADD_SL_DTYPE_CLASS_UINT(T, a, b) ((T)((uint64_t)(a) + (uint64_t)(b)))
#define SL__FILT_ADD_SL_DTYPE_CLASS_FLOAT(T, a, b) ((T)((a) + (b)))
#define SL__FILT_MUL_SL_DTYPE_CLASS_BOOL(T, a, b) ((T)((a) & (b)))
#define SL__FILT_MUL_SL_DTYPE_CLASS_SINT(T, a, b) ((T)((uint64_t)(a) * (uint64_t)(b)))
#define SL__FILT_MUL_SL_DTYPE_CLASS_UINT(T, a, b) ((T)((uint64_t)(a) * (uint64_t)(b)))
#define SL__FILT_MUL_SL_DTYPE_CLASS_FLOAT(T, a, b) ((T)((a) * (b)))
/* numpy's sqrt with an unsafe cast back: floats in their own type, bool
 * unchanged, integers in double (exact enough that the float16 and
 * float32 loops numpy picks for 8- and 16-bit integers truncate alike),
 * stored by scipy's conversions. */
#define SL__FILT_SQRT_SL_DTYPE_CLASS_BOOL(T, size, a) (a)
#define SL__FILT_SQRT_SL_DTYPE_CLASS_SINT(T, size, a) \
    SL__FILT_FROM_D_SL_DTYPE_CLASS_SINT(T, size, sqrt((double)(a)))
#define SL__FILT_SQRT_SL_DTYPE_CLASS_UINT(T, size, a) \
    SL__FILT_FROM_D_SL_DTYPE_CLASS_UINT(T, size, sqrt((double)(a)))
#define SL__FILT_SQRT_SL_DTYPE_CLASS_FLOAT(T, size, a) SL__FILT_SQRT_FLOAT_##size(a)
#define SL__FILT_SQRT_FLOAT_4(a) sqrtf(a)
#define SL__FILT_SQRT_FLOAT_8(a) sqrt(a)

typedef void fold_row_fn(enum sl__filt_fold f, unsigned char *o, ptrdiff_t os,
                         const unsigned char *t, ptrdiff_t ts, size_t n);

#define SL__FILT_FOLD_(NAME, sfx, T, size, v3, kind, cls)                             \
    static void fold_##sfx(enum sl__filt_fold f, unsigned char *o, ptrdiff_t os,      \
                           const unsigned char *t, ptrdiff_t ts, size_t n)            \
    {                                                                                 \
        for (size_t i = 0; i < n; i++, o += os, t += ts) {                            \
            T *out = (T *)(void *)o;                                                  \
            const T v = f == SL__FILT_FOLD_SQRT ? (T)0 : *(const T *)(const void *)t; \
            switch (f) {                                                              \
            case SL__FILT_FOLD_SET:                                                   \
                *out = v;                                                             \
                break;                                                                \
            case SL__FILT_FOLD_ADD:                                                   \
                *out = SL__FILT_ADD_##cls(T, *out, v);                                \
                break;                                                                \
            case SL__FILT_FOLD_SQUARE:                                                \
                *out = SL__FILT_MUL_##cls(T, v, v);                                   \
                break;                                                                \
            case SL__FILT_FOLD_ADD_SQ:                                                \
                *out = SL__FILT_ADD_##cls(T, *out, SL__FILT_MUL_##cls(T, v, v));      \
                break;                                                                \
            case SL__FILT_FOLD_SQRT:                                                  \
                *out = SL__FILT_SQRT_##cls(T, size, *out);                            \
                break;                                                                \
            }                                                                         \
        }                                                                             \
    }
#define SL__FILT_FOLD(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__FILT_FOLD_, NAME, sfx, T, size, v3, kind, cls)
SL_DTYPE_MAP(SL__FILT_FOLD)
#undef SL__FILT_FOLD
#undef SL__FILT_FOLD_

#define SL__FILT_FOLD_ENTRY_(NAME, sfx, T, size, v3, kind, cls) [SL_DTYPE_##NAME] = fold_##sfx,
#define SL__FILT_FOLD_ENTRY(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(SL__FILT_FOLD_ENTRY_, NAME, sfx, T, size, v3, kind, cls)
static fold_row_fn *const fold_rows[SL_DTYPE_COUNT_] = {SL_DTYPE_MAP(SL__FILT_FOLD_ENTRY)};
#undef SL__FILT_FOLD_ENTRY
#undef SL__FILT_FOLD_ENTRY_

void
sl__filt_combine(sl_dtype dt, uint32_t rank, enum sl__filt_fold fold,
                 const struct sl__filt_box *out, const struct sl__filt_box *t)
{
    fold_row_fn *row = fold_rows[dt];
    if (SL_NEVER(row == NULL))
        return;
    const uint32_t last = rank - 1;
    uint64_t idx[SL_MAX_RANK] = {0};
    do {
        ptrdiff_t oo = 0, to = 0;
        for (uint32_t d = 0; d < last; d++) {
            oo += (ptrdiff_t)idx[d] * out->step[d];
            to += (ptrdiff_t)idx[d] * t->step[d];
        }
        row(fold, out->data + oo, out->step[last], t->data + to, t->step[last],
            (size_t)out->ext[last]);
    } while (sl__index_next(idx, out->ext, last));
}
