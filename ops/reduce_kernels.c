/* SPDX-License-Identifier: MIT */
/*
 * The typed steps of every reduction method on every kernel dtype,
 * generated from SL_DTYPE_MAP, and the table sl__rd_kernel_for() reads.
 *
 * DESIGN: a method on a dtype class is a family (integer sums, Neumaier
 * float sums, Welford moments, min and max, ...).  A family gives, per
 * dtype, the accumulator A a tile holds while a block is read (the element
 * type itself for min and max, so their row loops are acc[j] = max(acc[j],
 * x[j]) and vectorize), its empty value, how an element is added, and how
 * an accumulator becomes a state record S; per state family it gives how
 * two records merge and what a record's result is, in the wide type W of
 * the elementwise stores (int64, uint64 or double).  SL__RD_KERNEL_ turns
 * those into the steps struct sl__rd_kernel lists, so the loops over tiles
 * and records are written once.  Records are structs of 8-byte fields, read
 * and written with memcpy, so they are the uint64 words of a state view.
 *
 * Accuracy: float sums and means keep Neumaier's compensated sum (Neumaier
 * 1974: the error of s + c is at most about 2 eps |sum| + O(n eps^2)
 * sum|x|); var and std keep (count, mean, M2), updated by Welford's
 * recurrence per element and merged by Chan, Golub and LeVeque's formula.
 */
#include <math.h>
#include <string.h>

#include "reduce_internal.h"

/* ---- arithmetic shared by the families ------------------------------------- */

/* A word (integer sums and products, any, all, counts). */
struct rd_word {
    uint64_t v; /* the value, int64 results as two's complement */
};

/* A double (float products). */
struct rd_f64 {
    double v; /* the product */
};

/* Neumaier's compensated sum: the sum is s + c. */
struct rd_ksum {
    double s; /* the running sum */
    double c; /* what rounding lost from it */
};

/* A compensated sum and how many elements it holds (means). */
struct rd_msum {
    double s;   /* the running sum */
    double c;   /* what rounding lost from it */
    uint64_t n; /* elements added */
};

/* Moments for var and std. */
struct rd_moments {
    uint64_t n;  /* elements added */
    double mean; /* their mean */
    double m2;   /* the sum of squared deviations from it */
};

/* The smallest (largest) element so far and how many were seen. */
#define SL__RD_MM_STRUCT_(w, W)                                                 \
    struct rd_mm_##w {                                                          \
        W v;        /* the pick so far; the family's empty value when n is 0 */ \
        uint64_t n; /* elements seen */                                         \
    };
SL__RD_MM_STRUCT_(i64, int64_t)
SL__RD_MM_STRUCT_(u64, uint64_t)
SL__RD_MM_STRUCT_(f64, double)
#undef SL__RD_MM_STRUCT_

_Static_assert(sizeof(struct rd_msum) == 24 && sizeof(struct rd_moments) == 24 &&
                   sizeof(struct rd_ksum) == 16 && sizeof(struct rd_mm_f64) == 16,
               "state records are packed uint64 words");
_Static_assert(sizeof(struct rd_msum) <= SL__RD_ACC_MAX, "SL__RD_ACC_MAX is too small");

static inline struct rd_ksum
ksum_add(struct rd_ksum a, double x)
{
    const double t = a.s + x;
    a.c += fabs(a.s) >= fabs(x) ? (a.s - t) + x : (x - t) + a.s;
    a.s = t;
    return a;
}

/* Once s is inf or NaN it stays so, and c may be NaN: s is the sum. */
static inline double
ksum_value(double s, double c)
{
    return isfinite(s) ? s + c : s;
}

static inline struct rd_ksum
ksum_merge(struct rd_ksum a, struct rd_ksum b)
{
    a = ksum_add(a, b.s);
    a.c += b.c;
    return a;
}

static inline struct rd_msum
msum_add(struct rd_msum a, double x)
{
    const struct rd_ksum k = ksum_add((struct rd_ksum){a.s, a.c}, x);
    return (struct rd_msum){k.s, k.c, a.n + 1};
}

static inline struct rd_moments
moments_add(struct rd_moments a, double x)
{
    a.n++;
    const double d = x - a.mean;
    a.mean += d / (double)a.n;
    a.m2 += d * (x - a.mean);
    return a;
}

/* Chan, Golub and LeVeque (1979): the moments of the union of two sets. */
static inline struct rd_moments
moments_merge(struct rd_moments a, struct rd_moments b)
{
    if (b.n == 0)
        return a;
    if (a.n == 0)
        return b;
    const double n = (double)a.n + (double)b.n, d = b.mean - a.mean;
    a.mean += d * ((double)b.n / n);
    a.m2 += b.m2 + d * d * ((double)a.n * ((double)b.n / n));
    a.n += b.n;
    return a;
}

/* ---- element conversions and picks by dtype class ---------------------------- */

/* An element as a uint64 word (two's complement for signed). */
#define SL__RD_U64_SL_DTYPE_CLASS_BOOL(x) ((uint64_t)((x) != 0))
#define SL__RD_U64_SL_DTYPE_CLASS_SINT(x) ((uint64_t)(int64_t)(x))
#define SL__RD_U64_SL_DTYPE_CLASS_UINT(x) ((uint64_t)(x))

/* An element as a double, one rounding from its exact value. */
#define SL__RD_F64_(cls, x) ((double)SL__OPS_LOAD_##cls(x))

/*
 * Min and max: integers compare; floats of min and max propagate NaN, of
 * nanmin and nanmax ignore it unless everything is NaN, and all of them
 * order -0.0 below +0.0, so the result never depends on the order of the
 * elements (numpy's sign of a zero result does: it depends on positions
 * and on its SIMD paths).  `a` is the pick so far, `b` the newcomer.
 */
#define SL__RD_PICK_MIN_INT(a, b) ((b) < (a) ? (b) : (a))
#define SL__RD_PICK_MAX_INT(a, b) ((b) > (a) ? (b) : (a))
#define SL__RD_PICK_MIN_FLT(a, b) \
    ((b) < (a) || (b) != (b) || ((b) == (a) && signbit(b)) ? (b) : (a))
#define SL__RD_PICK_MAX_FLT(a, b) \
    ((b) > (a) || (b) != (b) || ((b) == (a) && !signbit(b)) ? (b) : (a))
#define SL__RD_PICK_NANMIN_FLT(a, b) \
    ((b) < (a) || (a) != (a) || ((b) == (a) && signbit(b)) ? (b) : (a))
#define SL__RD_PICK_NANMAX_FLT(a, b) \
    ((b) > (a) || (a) != (a) || ((b) == (a) && !signbit(b)) ? (b) : (a))

/* Pick class, state-record width and results' wide kind per dtype class. */
#define SL__RD_PC_SL_DTYPE_CLASS_BOOL INT
#define SL__RD_PC_SL_DTYPE_CLASS_SINT INT
#define SL__RD_PC_SL_DTYPE_CLASS_UINT INT
#define SL__RD_PC_SL_DTYPE_CLASS_FLOAT FLT
#define SL__RD_W_SL_DTYPE_CLASS_BOOL i64
#define SL__RD_W_SL_DTYPE_CLASS_SINT i64
#define SL__RD_W_SL_DTYPE_CLASS_UINT u64
#define SL__RD_W_SL_DTYPE_CLASS_FLOAT f64

/* The empty pick: the type's far end; +-inf for floats (NaN propagates
 * through it); NaN for nanmin and nanmax (any number replaces it). */
#define SL__RD_EMPTY_MIN_INT(T, cls, size) SL__OPS_MAXV_##cls(T, size)
#define SL__RD_EMPTY_MAX_INT(T, cls, size) SL__OPS_MINV_##cls(T, size)
#define SL__RD_EMPTY_MIN_FLT(T, cls, size) ((T)INFINITY)
#define SL__RD_EMPTY_MAX_FLT(T, cls, size) ((T)-INFINITY)
#define SL__RD_EMPTY_NANMIN_FLT(T, cls, size) ((T)NAN)
#define SL__RD_EMPTY_NANMAX_FLT(T, cls, size) ((T)NAN)

#define SL__RD_CAT2_(a, b) a##b
#define SL__RD_XCAT2_(a, b) SL__RD_CAT2_(a, b)
#define SL__RD_CAT3_(a, b, c) a##b##c
#define SL__RD_XCAT3_(a, b, c) SL__RD_CAT3_(a, b, c)

/* ---- state families: S, W, merge and result ----------------------------------- */

/* For state family sf: the record type sf_s, the result type sf_w, and
 * inline sf_merge(S, S) and sf_result(S, ctx) defined before this. */
#define SL__RD_SFAMILY_(sf)                                                                  \
    static void merge_##sf(void *tile_, const unsigned char *from, ptrdiff_t step, size_t n) \
    {                                                                                        \
        sf##_s *restrict tile = tile_;                                                       \
        for (size_t j = 0; j < n; j++) {                                                     \
            sf##_s s;                                                                        \
            memcpy(&s, from + (ptrdiff_t)j * step, sizeof s);                                \
            tile[j] = sf##_merge(tile[j], s);                                                \
        }                                                                                    \
    }                                                                                        \
    static void result_##sf(void *wide_, const void *tile_, size_t n,                        \
                            const struct sl__rd_ctx *ctx)                                    \
    {                                                                                        \
        sf##_w *restrict wide = wide_;                                                       \
        const sf##_s *restrict tile = tile_;                                                 \
        for (size_t j = 0; j < n; j++)                                                       \
            wide[j] = sf##_result(tile[j], ctx);                                             \
    }

/* Integer sums and products, any, all, counts: one word. */
#define SL__RD_WORD_SF_(sf, W, MERGE_OP)                                                       \
    typedef struct rd_word sf##_s;                                                             \
    typedef W sf##_w;                                                                          \
    static inline sf##_s sf##_merge(sf##_s a, sf##_s b) { return (sf##_s){a.v MERGE_OP b.v}; } \
    static inline W sf##_result(sf##_s a, const struct sl__rd_ctx *ctx)                        \
    {                                                                                          \
        (void)ctx;                                                                             \
        return (W)a.v;                                                                         \
    }                                                                                          \
    SL__RD_SFAMILY_(sf)
SL__RD_WORD_SF_(isum_i64, int64_t, +)
SL__RD_WORD_SF_(isum_u64, uint64_t, +)
SL__RD_WORD_SF_(iprod_i64, int64_t, *)
SL__RD_WORD_SF_(iprod_u64, uint64_t, *)
SL__RD_WORD_SF_(any, int64_t, |)
SL__RD_WORD_SF_(all, int64_t, &)
SL__RD_WORD_SF_(count, int64_t, +)
#undef SL__RD_WORD_SF_

typedef struct rd_f64 fprod_s;
typedef double fprod_w;
static inline fprod_s
fprod_merge(fprod_s a, fprod_s b)
{
    return (fprod_s){a.v * b.v};
}
static inline double
fprod_result(fprod_s a, const struct sl__rd_ctx *ctx)
{
    (void)ctx;
    return a.v;
}
SL__RD_SFAMILY_(fprod)

typedef struct rd_ksum fsum_s;
typedef double fsum_w;
#define fsum_merge ksum_merge
static inline double
fsum_result(fsum_s a, const struct sl__rd_ctx *ctx)
{
    (void)ctx;
    return ksum_value(a.s, a.c);
}
SL__RD_SFAMILY_(fsum)

typedef struct rd_msum mean_s;
typedef double mean_w;
static inline mean_s
mean_merge(mean_s a, mean_s b)
{
    const struct rd_ksum k = ksum_merge((struct rd_ksum){a.s, a.c}, (struct rd_ksum){b.s, b.c});
    return (mean_s){k.s, k.c, a.n + b.n};
}
/* numpy divides the sum by the count: the empty mean is 0 / 0, NaN. */
static inline double
mean_result(mean_s a, const struct sl__rd_ctx *ctx)
{
    (void)ctx;
    return ksum_value(a.s, a.c) / (double)a.n;
}
SL__RD_SFAMILY_(mean)

typedef struct rd_moments var_s;
typedef double var_w;
#define var_merge moments_merge
/* numpy divides M2 by max(n - ddof, 0): 0 / 0 is NaN, M2 > 0 over 0 inf. */
static inline double
var_result(var_s a, const struct sl__rd_ctx *ctx)
{
    double div = (double)a.n - ctx->ddof;
    if (!(div > 0))
        div = 0;
    const double v = a.m2 / div;
    return ctx->sqrt ? sqrt(v) : v;
}
SL__RD_SFAMILY_(var)

/* Min and max records of width w (W), picking with class pc. */
#define SL__RD_MM_SF_(op, OP, w, W, pc)                                             \
    typedef struct rd_mm_##w op##_##w##_s;                                          \
    typedef W op##_##w##_w;                                                         \
    static inline op##_##w##_s op##_##w##_merge(op##_##w##_s a, op##_##w##_s b)     \
    {                                                                               \
        return (op##_##w##_s){SL__RD_PICK_##OP##_##pc(a.v, b.v), a.n + b.n};        \
    }                                                                               \
    static inline W op##_##w##_result(op##_##w##_s a, const struct sl__rd_ctx *ctx) \
    {                                                                               \
        (void)ctx;                                                                  \
        return a.v;                                                                 \
    }                                                                               \
    static size_t unseen_##op##_##w(const void *tile_, size_t n)                    \
    {                                                                               \
        const op##_##w##_s *tile = tile_;                                           \
        for (size_t j = 0; j < n; j++)                                              \
            if (tile[j].n == 0)                                                     \
                return j;                                                           \
        return n;                                                                   \
    }                                                                               \
    SL__RD_SFAMILY_(op##_##w)
SL__RD_MM_SF_(min, MIN, i64, int64_t, INT)
SL__RD_MM_SF_(min, MIN, u64, uint64_t, INT)
SL__RD_MM_SF_(min, MIN, f64, double, FLT)
SL__RD_MM_SF_(max, MAX, i64, int64_t, INT)
SL__RD_MM_SF_(max, MAX, u64, uint64_t, INT)
SL__RD_MM_SF_(max, MAX, f64, double, FLT)
SL__RD_MM_SF_(nanmin, NANMIN, f64, double, FLT)
SL__RD_MM_SF_(nanmax, NANMAX, f64, double, FLT)
#undef SL__RD_MM_SF_

/* ---- kernels: one family on one dtype -------------------------------------------- */

/*
 * The steps of family `fam` on dtype `sfx` (element T, accumulator A,
 * state family sf, wide kind KIND, `unseen` step or NULL), from the inline
 * fam_empty_sfx(), fam_add_sfx(A, T) and fam_state_sfx(A, count) defined
 * before it.  The row step's first loop (a contiguous row added to a tile)
 * is the one that must vectorize.
 */
#define SL__RD_KERNEL_(fam, sfx, T, A, sf, KIND, UNSEEN) \
    SL__RD_KERNEL2_(fam, sfx, T, A, sf, KIND, UNSEEN)
#define SL__RD_KERNEL2_(fam, sfx, T, A, sf, KIND, UNSEEN)                                         \
    static void init_##fam##_##sfx(void *acc_, size_t n)                                          \
    {                                                                                             \
        A *acc = acc_;                                                                            \
        for (size_t j = 0; j < n; j++)                                                            \
            acc[j] = fam##_empty_##sfx();                                                         \
    }                                                                                             \
    static void row_##fam##_##sfx(void *acc_, const unsigned char *x_, ptrdiff_t js, size_t n_j,  \
                                  ptrdiff_t is, uint64_t n_i)                                     \
    {                                                                                             \
        A *restrict acc = acc_;                                                                   \
        const T *restrict x = (const T *)(const void *)x_;                                        \
        const ptrdiff_t sj = js / (ptrdiff_t)sizeof(T), si = is / (ptrdiff_t)sizeof(T);           \
        if (n_i == 1 && sj == 1) {                                                                \
            for (size_t j = 0; j < n_j; j++)                                                      \
                acc[j] = fam##_add_##sfx(acc[j], x[j]);                                           \
        } else if (n_i == 1) {                                                                    \
            for (size_t j = 0; j < n_j; j++)                                                      \
                acc[j] = fam##_add_##sfx(acc[j], x[(ptrdiff_t)j * sj]);                           \
        } else {                                                                                  \
            for (size_t j = 0; j < n_j; j++)                                                      \
                acc[j] = fam##_fold_##sfx(acc[j], x + (ptrdiff_t)j * sj, si, n_i);                \
        }                                                                                         \
    }                                                                                             \
    static void final_##fam##_##sfx(void *wide_, const void *acc_, size_t n, uint64_t count,      \
                                    const struct sl__rd_ctx *ctx)                                 \
    {                                                                                             \
        sf##_w *restrict wide = wide_;                                                            \
        const A *restrict acc = acc_;                                                             \
        for (size_t j = 0; j < n; j++)                                                            \
            wide[j] = sf##_result(fam##_state_##sfx(acc[j], count), ctx);                         \
    }                                                                                             \
    static void fold_##fam##_##sfx(unsigned char *st, ptrdiff_t step, const void *acc_, size_t n, \
                                   uint64_t count)                                                \
    {                                                                                             \
        const A *restrict acc = acc_;                                                             \
        for (size_t j = 0; j < n; j++) {                                                          \
            sf##_s s;                                                                             \
            memcpy(&s, st + (ptrdiff_t)j * step, sizeof s);                                       \
            s = sf##_merge(s, fam##_state_##sfx(acc[j], count));                                  \
            memcpy(st + (ptrdiff_t)j * step, &s, sizeof s);                                       \
        }                                                                                         \
    }                                                                                             \
    static void save_##fam##_##sfx(unsigned char *st, ptrdiff_t step, const void *acc_, size_t n, \
                                   uint64_t count)                                                \
    {                                                                                             \
        const A *restrict acc = acc_;                                                             \
        for (size_t j = 0; j < n; j++) {                                                          \
            const sf##_s s = fam##_state_##sfx(acc[j], count);                                    \
            memcpy(st + (ptrdiff_t)j * step, &s, sizeof s);                                       \
        }                                                                                         \
    }                                                                                             \
    static const struct sl__rd_kernel kern_##fam##_##sfx = {                                      \
        .kind = KIND,                                                                             \
        .words = sizeof(sf##_s) / sizeof(uint64_t),                                               \
        .acc_bytes = sizeof(A),                                                                   \
        .init = init_##fam##_##sfx,                                                               \
        .row = row_##fam##_##sfx,                                                                 \
        .final = final_##fam##_##sfx,                                                             \
        .fold = fold_##fam##_##sfx,                                                               \
        .save = save_##fam##_##sfx,                                                               \
        .merge = merge_##sf,                                                                      \
        .result = result_##sf,                                                                    \
        .unseen = UNSEEN,                                                                         \
    };

/* A strided run of n elements added to one accumulator (the innermost
 * dimension reduced); a contiguous run is a plain loop. */
#define SL__RD_FOLD_(fam, sfx, T, A)                                                    \
    static inline A fam##_fold_##sfx(A a, const T *restrict r, ptrdiff_t s, uint64_t n) \
    {                                                                                   \
        if (s == 1) {                                                                   \
            for (uint64_t i = 0; i < n; i++)                                            \
                a = fam##_add_##sfx(a, r[i]);                                           \
        } else {                                                                        \
            for (uint64_t i = 0; i < n; i++)                                            \
                a = fam##_add_##sfx(a, r[(ptrdiff_t)i * s]);                            \
        }                                                                               \
        return a;                                                                       \
    }

/* A family whose accumulator is its state record. */
#define SL__RD_SAME_STATE_(fam, sfx, A)                    \
    static inline A fam##_state_##sfx(A a, uint64_t count) \
    {                                                      \
        (void)count;                                       \
        return a;                                          \
    }

/* Integer sums and products: wrapping uint64 arithmetic, as numpy's int64
 * and uint64 accumulators wrap. */
#define SL__RD_IARITH_(fam, OP, EMPTY, sfx, T, cls)                                          \
    static inline struct rd_word fam##_empty_##sfx(void) { return (struct rd_word){EMPTY}; } \
    static inline struct rd_word fam##_add_##sfx(struct rd_word a, T x)                      \
    {                                                                                        \
        return (struct rd_word){a.v OP SL__RD_U64_##cls(x)};                                 \
    }                                                                                        \
    SL__RD_SAME_STATE_(fam, sfx, struct rd_word)                                             \
    SL__RD_FOLD_(fam, sfx, T, struct rd_word)                                                \
    SL__RD_KERNEL_(fam, sfx, T, struct rd_word, SL__RD_XCAT3_(fam, _, SL__RD_W_##cls),       \
                   SL__RD_XCAT2_(SL__EW_, SL__RD_KW_##cls), NULL)
#define SL__RD_KW_SL_DTYPE_CLASS_BOOL I64
#define SL__RD_KW_SL_DTYPE_CLASS_SINT I64
#define SL__RD_KW_SL_DTYPE_CLASS_UINT U64
#define SL__RD_KW_SL_DTYPE_CLASS_FLOAT F64

/* any, all, count_nonzero: nonzero (NaN included) is true. */
#define SL__RD_TRUTH_(fam, A, EMPTY, EXPR, sfx, T, cls)                 \
    static inline A fam##_empty_##sfx(void) { return (A)(EMPTY); }      \
    static inline A fam##_add_##sfx(A a, T x) { return (A)(EXPR); }     \
    static inline struct rd_word fam##_state_##sfx(A a, uint64_t count) \
    {                                                                   \
        (void)count;                                                    \
        return (struct rd_word){(uint64_t)a};                           \
    }                                                                   \
    SL__RD_FOLD_(fam, sfx, T, A)                                        \
    SL__RD_KERNEL_(fam, sfx, T, A, fam, SL__EW_I64, NULL)

/* Float sums (NaN skipped for nansum) and products, in double. */
#define SL__RD_FSUM_(fam, SKIP, sfx, T, cls)                                                \
    static inline struct rd_ksum fam##_empty_##sfx(void) { return (struct rd_ksum){0, 0}; } \
    static inline struct rd_ksum fam##_add_##sfx(struct rd_ksum a, T x)                     \
    {                                                                                       \
        return SKIP && x != x ? a : ksum_add(a, (double)x);                                 \
    }                                                                                       \
    SL__RD_SAME_STATE_(fam, sfx, struct rd_ksum)                                            \
    SL__RD_FOLD_(fam, sfx, T, struct rd_ksum)                                               \
    SL__RD_KERNEL_(fam, sfx, T, struct rd_ksum, fsum, SL__EW_F64, NULL)
#define SL__RD_FPROD_(sfx, T, cls)                                                       \
    static inline struct rd_f64 fprod_empty_##sfx(void) { return (struct rd_f64){1.0}; } \
    static inline struct rd_f64 fprod_add_##sfx(struct rd_f64 a, T x)                    \
    {                                                                                    \
        return (struct rd_f64){a.v * (double)x};                                         \
    }                                                                                    \
    SL__RD_SAME_STATE_(fprod, sfx, struct rd_f64)                                        \
    SL__RD_FOLD_(fprod, sfx, T, struct rd_f64)                                           \
    SL__RD_KERNEL_(fprod, sfx, T, struct rd_f64, fprod, SL__EW_F64, NULL)

/* Means (NaN skipped for nanmean) and moments, of elements as doubles. */
#define SL__RD_MEAN_(fam, SKIP, sfx, T, cls)                                             \
    static inline struct rd_msum fam##_empty_##sfx(void) { return (struct rd_msum){0}; } \
    static inline struct rd_msum fam##_add_##sfx(struct rd_msum a, T x)                  \
    {                                                                                    \
        return SKIP && x != x ? a : msum_add(a, SL__RD_F64_(cls, x));                    \
    }                                                                                    \
    SL__RD_SAME_STATE_(fam, sfx, struct rd_msum)                                         \
    SL__RD_FOLD_(fam, sfx, T, struct rd_msum)                                            \
    SL__RD_KERNEL_(fam, sfx, T, struct rd_msum, mean, SL__EW_F64, NULL)
#define SL__RD_VAR_(sfx, T, cls)                                                             \
    static inline struct rd_moments var_empty_##sfx(void) { return (struct rd_moments){0}; } \
    static inline struct rd_moments var_add_##sfx(struct rd_moments a, T x)                  \
    {                                                                                        \
        return moments_add(a, SL__RD_F64_(cls, x));                                          \
    }                                                                                        \
    SL__RD_SAME_STATE_(var, sfx, struct rd_moments)                                          \
    SL__RD_FOLD_(var, sfx, T, struct rd_moments)                                             \
    SL__RD_KERNEL_(var, sfx, T, struct rd_moments, var, SL__EW_F64, NULL)

/* Min and max in the element type; the record widens it. */
#define SL__RD_MM_(op, OP, sfx, T, size, cls) \
    SL__RD_MM2_(op, OP, sfx, T, size, cls, SL__RD_PC_##cls, SL__RD_W_##cls, SL__RD_KW_##cls)
#define SL__RD_MM2_(op, OP, sfx, T, size, cls, pc, w, KW) \
    SL__RD_MM3_(op, OP, sfx, T, size, cls, pc, w, KW)
#define SL__RD_MM3_(op, OP, sfx, T, size, cls, pc, w, KW)                                     \
    static inline T op##_empty_##sfx(void) { return SL__RD_EMPTY_##OP##_##pc(T, cls, size); } \
    static inline T op##_add_##sfx(T a, T x)                                                  \
    {                                                                                         \
        const T b = (T)SL__OPS_LOAD_##cls(x);                                                 \
        return SL__RD_PICK_##OP##_##pc(a, b);                                                 \
    }                                                                                         \
    static inline struct rd_mm_##w op##_state_##sfx(T a, uint64_t count)                      \
    {                                                                                         \
        return (struct rd_mm_##w){a, count};                                                  \
    }                                                                                         \
    SL__RD_FOLD_(op, sfx, T, T)                                                               \
    SL__RD_KERNEL_(op, sfx, T, T, op##_##w, SL__EW_##KW, unseen_##op##_##w)

/* Every family of a bool or integer dtype, and of a float dtype. */
#define SL__RD_INT_(NAME, sfx, T, size, cls)                  \
    SL__RD_IARITH_(isum, +, 0, sfx, T, cls)                   \
    SL__RD_IARITH_(iprod, *, 1, sfx, T, cls)                  \
    SL__RD_MEAN_(mean, false, sfx, T, cls)                    \
    SL__RD_VAR_(sfx, T, cls)                                  \
    SL__RD_MM_(min, MIN, sfx, T, size, cls)                   \
    SL__RD_MM_(max, MAX, sfx, T, size, cls)                   \
    SL__RD_TRUTH_(any, uint8_t, 0, a | (x != 0), sfx, T, cls) \
    SL__RD_TRUTH_(all, uint8_t, 1, a &(x != 0), sfx, T, cls)  \
    SL__RD_TRUTH_(count, uint64_t, 0, a + (x != 0), sfx, T, cls)
#define SL__RD_FLOAT_(NAME, sfx, T, size, cls)                \
    SL__RD_FSUM_(fsum, false, sfx, T, cls)                    \
    SL__RD_FSUM_(fnansum, true, sfx, T, cls)                  \
    SL__RD_FPROD_(sfx, T, cls)                                \
    SL__RD_MEAN_(mean, false, sfx, T, cls)                    \
    SL__RD_MEAN_(fnanmean, true, sfx, T, cls)                 \
    SL__RD_VAR_(sfx, T, cls)                                  \
    SL__RD_MM_(min, MIN, sfx, T, size, cls)                   \
    SL__RD_MM_(max, MAX, sfx, T, size, cls)                   \
    SL__RD_MM_(nanmin, NANMIN, sfx, T, size, cls)             \
    SL__RD_MM_(nanmax, NANMAX, sfx, T, size, cls)             \
    SL__RD_TRUTH_(any, uint8_t, 0, a | (x != 0), sfx, T, cls) \
    SL__RD_TRUTH_(all, uint8_t, 1, a &(x != 0), sfx, T, cls)  \
    SL__RD_TRUTH_(count, uint64_t, 0, a + (x != 0), sfx, T, cls)
#define SL__RD_DEF_(NAME, sfx, T, size, v3, kind, cls)         \
    SL__OPS_IF_INT_##cls(SL__RD_INT_, NAME, sfx, T, size, cls) \
        SL__OPS_IF_FLOAT_##cls(SL__RD_FLOAT_, NAME, sfx, T, size, cls)
SL_DTYPE_MAP(SL__RD_DEF_)
#undef SL__RD_DEF_

/* ---- the table ------------------------------------------------------------------- */

/* Each method's family on bool and integers (where nan methods are the
 * plain ones), and on floats. */
#define SL__RD_ROW_INT_(NAME, sfx, T, size, cls)                                              \
    [SL_DTYPE_##NAME] = {                                                                     \
        [SL_REDUCE_SUM] = &kern_isum_##sfx,    [SL_REDUCE_PROD] = &kern_iprod_##sfx,          \
        [SL_REDUCE_MEAN] = &kern_mean_##sfx,   [SL_REDUCE_MIN] = &kern_min_##sfx,             \
        [SL_REDUCE_MAX] = &kern_max_##sfx,     [SL_REDUCE_STD] = &kern_var_##sfx,             \
        [SL_REDUCE_VAR] = &kern_var_##sfx,     [SL_REDUCE_ANY] = &kern_any_##sfx,             \
        [SL_REDUCE_ALL] = &kern_all_##sfx,     [SL_REDUCE_COUNT_NONZERO] = &kern_count_##sfx, \
        [SL_REDUCE_NANSUM] = &kern_isum_##sfx, [SL_REDUCE_NANMEAN] = &kern_mean_##sfx,        \
        [SL_REDUCE_NANMIN] = &kern_min_##sfx,  [SL_REDUCE_NANMAX] = &kern_max_##sfx,          \
    },
#define SL__RD_ROW_FLOAT_(NAME, sfx, T, size, cls)                                               \
    [SL_DTYPE_##NAME] = {                                                                        \
        [SL_REDUCE_SUM] = &kern_fsum_##sfx,       [SL_REDUCE_PROD] = &kern_fprod_##sfx,          \
        [SL_REDUCE_MEAN] = &kern_mean_##sfx,      [SL_REDUCE_MIN] = &kern_min_##sfx,             \
        [SL_REDUCE_MAX] = &kern_max_##sfx,        [SL_REDUCE_STD] = &kern_var_##sfx,             \
        [SL_REDUCE_VAR] = &kern_var_##sfx,        [SL_REDUCE_ANY] = &kern_any_##sfx,             \
        [SL_REDUCE_ALL] = &kern_all_##sfx,        [SL_REDUCE_COUNT_NONZERO] = &kern_count_##sfx, \
        [SL_REDUCE_NANSUM] = &kern_fnansum_##sfx, [SL_REDUCE_NANMEAN] = &kern_fnanmean_##sfx,    \
        [SL_REDUCE_NANMIN] = &kern_nanmin_##sfx,  [SL_REDUCE_NANMAX] = &kern_nanmax_##sfx,       \
    },
#define SL__RD_ROW_(NAME, sfx, T, size, v3, kind, cls)             \
    SL__OPS_IF_INT_##cls(SL__RD_ROW_INT_, NAME, sfx, T, size, cls) \
        SL__OPS_IF_FLOAT_##cls(SL__RD_ROW_FLOAT_, NAME, sfx, T, size, cls)
static const struct sl__rd_kernel *const kernels[SL_DTYPE_COUNT_][SL_REDUCE_METHOD_COUNT_] = {
    SL_DTYPE_MAP(SL__RD_ROW_) /* [SL_DTYPE_BOOL] = {[SL_REDUCE_SUM] = &kern_isum_b8, ...}, ... */
};
#undef SL__RD_ROW_
#undef SL__RD_ROW_FLOAT_
#undef SL__RD_ROW_INT_

const struct sl__rd_kernel *
sl__rd_kernel_for(sl_reduce_method m, sl_dtype dt)
{
    if ((unsigned)m >= SL_REDUCE_METHOD_COUNT_ || (unsigned)dt >= SL_DTYPE_COUNT_)
        return NULL;
    return kernels[dt][m];
}
