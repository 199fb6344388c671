/* SPDX-License-Identifier: MIT */
/*
 * Statistics accumulators: creation, option checks, adding blocks and
 * merging accumulators.  Results are read in stats_result.c; the quantile
 * summary of wide dtypes is stats_summary.c.
 *
 * DESIGN: dtypes of at most 16 bits (bool, int8, uint8, int16, uint16)
 * keep one counter per possible value and nothing else per element (plus
 * the histogram slot of the value, looked up in a table made at creation):
 * every statistic, exact percentiles included, is computed from the
 * counters when read.  Wider dtypes keep the extreme keys, an exact
 * 128-bit integer sum or a Neumaier sum of finite floats, Chan et al.'s
 * mean and sum of squared deviations (each tile of 256 values in two
 * passes, then merged in) of the values less the first one seen, so the
 * running mean stays near 0 and does not drift with rounding, the
 * histogram, and the percentile summary.
 * Everything lives in one allocation made by sl_stats_create; adding and
 * merging only write into it.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <sluice/stats.h>

#include "ops_internal.h"
#include "stats_internal.h"

/* Adds a row of n elements `step` bytes apart. */
typedef void stats_row_fn(sl_stats *s, const unsigned char *p, ptrdiff_t step, uint64_t n);

struct sl__stats_dtype {
    stats_row_fn *add_row;             /* folds a row into the accumulator */
    double (*key_value)(uint64_t key); /* wide dtypes: the value of a key */
};

/* ---- per-element steps ---------------------------------------------------- */

static inline void
stats_neumaier(double *sum, double *comp, double x)
{
    const double t = *sum + x;
    if (fabs(*sum) >= fabs(x))
        *comp += (*sum - t) + x;
    else
        *comp += (x - t) + *sum;
    *sum = t;
}

/* Merge (nb, mean_b, m2_b) into (*n, *mean, *m2) (Chan, Golub, LeVeque). */
static void
stats_chan(uint64_t *n, double *mean, double *m2, uint64_t nb, double mean_b, double m2_b)
{
    if (nb == 0)
        return;
    if (*n == 0) {
        *n = nb;
        *mean = mean_b;
        *m2 = m2_b;
        return;
    }
    const double na = (double)*n, nbd = (double)nb, nt = na + nbd;
    const double d = mean_b - *mean;
    *mean += d * (nbd / nt);
    *m2 += m2_b + d * d * (na * nbd / nt);
    *n += nb;
}

/* Moments of the non-NaN values v[0..m) of a tile. */
static void
stats_tile_moments(sl_stats *s, const double *v, size_t m)
{
    double fin[SL__OPS_TILE];
    const double *x = v;
    size_t nf = m;
    if (sl_dtype_is_float(s->dtype)) {
        nf = 0;
        for (size_t j = 0; j < m; j++) {
            if (isinf(v[j])) {
                s->n_pinf += v[j] > 0;
                s->n_ninf += v[j] < 0;
                continue;
            }
            fin[nf++] = v[j];
            stats_neumaier(&s->fsum, &s->fcomp, v[j]);
        }
        x = fin;
    }
    if (nf == 0)
        return;
    if (s->n_fin == 0)
        s->shift = x[0];
    double ts = 0, t2 = 0;
    for (size_t j = 0; j < nf; j++)
        ts += x[j] - s->shift;
    const double tm = ts / (double)nf;
    for (size_t j = 0; j < nf; j++)
        t2 += (x[j] - s->shift - tm) * (x[j] - s->shift - tm);
    stats_chan(&s->n_fin, &s->mean, &s->m2, nf, tm, t2);
}

/* Fold a tile of m non-NaN values (as double and as keys) of a wide dtype. */
static void
stats_tile(sl_stats *s, const double *v, const uint64_t *key, size_t m)
{
    uint64_t kmin = s->min_key, kmax = s->max_key;
    for (size_t j = 0; j < m; j++) {
        kmin = key[j] < kmin ? key[j] : kmin;
        kmax = key[j] > kmax ? key[j] : kmax;
    }
    s->min_key = kmin;
    s->max_key = kmax;
    if (s->bins > 0)
        for (size_t j = 0; j < m; j++)
            s->hist[sl__stats_slot(s, v[j])]++;
    if (s->has_summary)
        sl__summary_add(&s->q, key, m);
    stats_tile_moments(s, v, m);
}

/* ---- per-dtype rows -------------------------------------------------------- */

/* Counter index of an element of a dtype of at most 16 bits. */
typedef uint32_t stats_index_fn(const unsigned char *p);

/* Only the counters: the histogram of an exact accumulator is derived from
 * them when its result is asked for (sl_stats_result), which halves the
 * memory traffic per element. */
SL__OPS_TEMPLATE void
stats_exact_row(sl_stats *s, const unsigned char *p, ptrdiff_t step, uint64_t n,
                stats_index_fn *index)
{
    uint64_t *restrict counts = s->counts;
    for (uint64_t j = 0; j < n; j++)
        counts[index(p + (ptrdiff_t)j * step)]++;
}

/* Load one element of a wide dtype: false for NaN; else its value, key and
 * (integers) its share of the exact sum. */
typedef bool stats_load_fn(const unsigned char *p, struct sl__stats_i128 *isum, double *v,
                           uint64_t *key);

SL__OPS_TEMPLATE void
stats_wide_row(sl_stats *s, const unsigned char *p, ptrdiff_t step, uint64_t n, stats_load_fn *load)
{
    double v[SL__OPS_TILE];
    uint64_t key[SL__OPS_TILE];
    struct sl__stats_i128 isum = s->isum;
    for (uint64_t j0 = 0; j0 < n; j0 += SL__OPS_TILE) {
        const size_t t = n - j0 < SL__OPS_TILE ? (size_t)(n - j0) : SL__OPS_TILE;
        const unsigned char *row = p + (ptrdiff_t)j0 * step;
        size_t m = 0;
        for (size_t j = 0; j < t; j++)
            m += load(row + (ptrdiff_t)j * step, &isum, &v[m], &key[m]);
        s->nan_count += t - m;
        stats_tile(s, v, key, m);
    }
    s->isum = isum;
}

/* Counter index by class: bool bytes other than 0 are true; signed values
 * are biased to start at 0. */
#define STATS_INDEX_SL_DTYPE_CLASS_BOOL(x, size) ((uint32_t)((x) != 0))
#define STATS_INDEX_SL_DTYPE_CLASS_UINT(x, size) ((uint32_t)(x))
#define STATS_INDEX_SL_DTYPE_CLASS_SINT(x, size) ((uint32_t)((int32_t)(x) + (1 << (8 * (size)-1))))

#define STATS_SIGN_(UT, size) ((UT)((UT)1 << (8 * (size)-1)))

/* Load by class: keys order like values (IEEE totalOrder for floats). */
#define STATS_LOAD_SL_DTYPE_CLASS_UINT(x, UT, size, isum, v, key) \
    sl__stats_i128_add_u64(isum, (uint64_t)(x));                  \
    *(v) = (double)(x);                                           \
    *(key) = (uint64_t)(x);                                       \
    return true;
#define STATS_LOAD_SL_DTYPE_CLASS_SINT(x, UT, size, isum, v, key) \
    sl__stats_i128_add_i64(isum, (int64_t)(x));                   \
    *(v) = (double)(x);                                           \
    *(key) = (uint64_t)(UT)((UT)(x) ^ STATS_SIGN_(UT, size));     \
    return true;
#define STATS_LOAD_SL_DTYPE_CLASS_FLOAT(x, UT, size, isum, v, key)                          \
    (void)(isum);                                                                           \
    if ((x) != (x))                                                                         \
        return false;                                                                       \
    UT u_;                                                                                  \
    memcpy(&u_, &(x), sizeof u_);                                                           \
    *(key) = (uint64_t)(UT)(u_ & STATS_SIGN_(UT, size) ? ~u_ : u_ | STATS_SIGN_(UT, size)); \
    *(v) = (double)(x);                                                                     \
    return true;

/* The value of a key, by class. */
#define STATS_VALUE_SL_DTYPE_CLASS_UINT(T, UT, size, key) return (double)(T)(key);
#define STATS_VALUE_SL_DTYPE_CLASS_SINT(T, UT, size, key) \
    return (double)(T)(UT)((UT)(key) ^ STATS_SIGN_(UT, size));
#define STATS_VALUE_SL_DTYPE_CLASS_FLOAT(T, UT, size, key)                        \
    UT u_ = (UT)(key);                                                            \
    u_ = u_ & STATS_SIGN_(UT, size) ? (UT)(u_ ^ STATS_SIGN_(UT, size)) : (UT)~u_; \
    T x_;                                                                         \
    memcpy(&x_, &u_, sizeof x_);                                                  \
    return (double)x_;

/* Contiguous rows get a constant step, so their loops are specialized. */
#define STATS_ROW_(sfx, T, driver, step_fn)                                                      \
    static void stats_row_##sfx(sl_stats *s, const unsigned char *p, ptrdiff_t step, uint64_t n) \
    {                                                                                            \
        if (step == (ptrdiff_t)sizeof(T))                                                        \
            driver(s, p, (ptrdiff_t)sizeof(T), n, step_fn);                                      \
        else                                                                                     \
            driver(s, p, step, n, step_fn);                                                      \
    }

#define STATS_DEF_EXACT_(sfx, T, size, cls)                          \
    static inline uint32_t stats_index_##sfx(const unsigned char *p) \
    {                                                                \
        T x;                                                         \
        memcpy(&x, p, sizeof x);                                     \
        return STATS_INDEX_##cls(x, size);                           \
    }                                                                \
    STATS_ROW_(sfx, T, stats_exact_row, stats_index_##sfx)           \
    static const struct sl__stats_dtype stats_dtype_##sfx = {stats_row_##sfx, NULL};

#define STATS_DEF_WIDE_(sfx, T, size, cls)                                                         \
    static inline bool stats_load_##sfx(const unsigned char *p, struct sl__stats_i128 *isum,       \
                                        double *v, uint64_t *key)                                  \
    {                                                                                              \
        T x;                                                                                       \
        memcpy(&x, p, sizeof x);                                                                   \
        STATS_LOAD_##cls(x, SL__OPS_UINT_##size, size, isum, v, key)                               \
    }                                                                                              \
    static double stats_value_##sfx(uint64_t key){STATS_VALUE_##cls(                               \
        T, SL__OPS_UINT_##size, size,                                                              \
        key)} STATS_ROW_(sfx, T, stats_wide_row,                                                   \
                         stats_load_##sfx) static const struct sl__stats_dtype stats_dtype_##sfx = \
        {stats_row_##sfx, stats_value_##sfx};

/* Dtypes of 1 and 2 bytes count values; 4 and 8 bytes are wide. */
#define STATS_DEF_SIZE_1 STATS_DEF_EXACT_
#define STATS_DEF_SIZE_2 STATS_DEF_EXACT_
#define STATS_DEF_SIZE_4 STATS_DEF_WIDE_
#define STATS_DEF_SIZE_8 STATS_DEF_WIDE_
#define STATS_DEF_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(STATS_DEF_SIZE_##size, sfx, T, size, cls)
SL_DTYPE_MAP(STATS_DEF_)
#undef STATS_DEF_

static const struct sl__stats_dtype *const stats_dtypes[SL_DTYPE_COUNT_] = {
#define STATS_ENTRY_(NAME, sfx, T, size, v3, kind, cls) [SL_DTYPE_##NAME] = &stats_dtype_##sfx,
#define STATS_IF_ENTRY_(NAME, sfx, T, size, v3, kind, cls) \
    SL__OPS_IF_REAL_##cls(STATS_ENTRY_, NAME, sfx, T, size, v3, kind, cls)
    SL_DTYPE_MAP(STATS_IF_ENTRY_) /* the real dtypes */
#undef STATS_IF_ENTRY_
#undef STATS_ENTRY_
};

double
sl__stats_key_value(const sl_stats *s, uint64_t key)
{
    return s->ops->key_value(key);
}

/* ---- creation ---------------------------------------------------------------- */

/* Where each array lies in the accumulator's one allocation. */
struct stats_layout {
    size_t hist;    /* offset of bins + 2 slots, or 0 */
    size_t counts;  /* offset of n_values counters, or 0 */
    size_t summary; /* offset of the summary's keys, or 0 */
    size_t total;   /* bytes */
};

static bool
stats_dtype_is_exact(sl_dtype dt)
{
    return sl_dtype_is_real(dt) && sl_dtype_size(dt) <= 2;
}

static uint32_t
stats_n_values(sl_dtype dt)
{
    return dt == SL_DTYPE_BOOL ? 2 : (uint32_t)1 << (8 * sl_dtype_size(dt));
}

static size_t
stats_align(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static void
stats_layout_of(sl_dtype dt, const struct sl_stats_opts *o, uint32_t k, uint32_t n_levels,
                struct stats_layout *l)
{
    const bool exact = stats_dtype_is_exact(dt);
    const size_t nv = exact ? stats_n_values(dt) : 0;
    size_t at = stats_align(sizeof(struct sl_stats));
    memset(l, 0, sizeof *l);
    if (o->bins > 0) {
        l->hist = at;
        at = stats_align(at + ((size_t)o->bins + 2) * sizeof(uint64_t));
    }
    if (exact) {
        l->counts = at;
        at = stats_align(at + nv * sizeof(uint64_t));
    } else if (o->n_percentiles > 0) {
        l->summary = at;
        at = stats_align(at + sl__summary_bytes(k, n_levels));
    }
    l->total = at;
}

static sl_status
stats_check_opts(sl_dtype dt, const struct sl_stats_opts *o, struct sl_error *err)
{
    if (o->bins > SL_STATS_MAX_BINS)
        return sl_error_set(err, SL_EINVAL, NULL, "stats: %" PRIu32 " histogram bins (at most %u)",
                            o->bins, SL_STATS_MAX_BINS);
    if (o->bins > 0 && !o->has_range && !stats_dtype_is_exact(dt))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "stats: give a histogram range for %s (%" PRIu32 " bins); only dtypes "
                            "of at most 16 bits default to their whole range",
                            sl_dtype_name(dt), o->bins);
    if (o->has_range && !(isfinite(o->lo) && isfinite(o->hi) && o->lo < o->hi))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "stats: histogram range [%g, %g] must be finite with lo < hi", o->lo,
                            o->hi);
    if (o->n_percentiles > SL_STATS_MAX_PERCENTILES)
        return sl_error_set(err, SL_EINVAL, NULL, "stats: %zu percentiles (at most %d)",
                            o->n_percentiles, SL_STATS_MAX_PERCENTILES);
    for (size_t i = 0; i < o->n_percentiles; i++)
        if (!(o->percentiles[i] >= 0 && o->percentiles[i] <= 100))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "stats: percentile %zu is %g (each must lie in [0, 100])", i,
                                o->percentiles[i]);
    return SL_OK;
}

static sl_status
stats_check_dtype(sl_dtype dt, struct sl_error *err)
{
    if ((unsigned)dt >= SL_DTYPE_COUNT_)
        return sl_error_set(err, SL_EINVAL, NULL, "stats: invalid dtype %d", (int)dt);
    if (!sl_dtype_is_real(dt))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "stats: dtype %s is not supported (bool, integers, float32, float64)",
                            sl_dtype_name(dt));
    return SL_OK;
}

sl_status
sl_stats_check(sl_dtype dtype, const struct sl_stats_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    const struct sl_stats_opts o = opts != NULL ? *opts : SL_STATS_OPTS_DEFAULT;
    SL_TRY(stats_check_dtype(dtype, err));
    return stats_check_opts(dtype, &o, err);
}

size_t
sl_stats_bytes(sl_dtype dtype, const struct sl_stats_opts *opts)
{
    const struct sl_stats_opts o = opts != NULL ? *opts : SL_STATS_OPTS_DEFAULT;
    if (stats_check_dtype(dtype, NULL) != SL_OK || stats_check_opts(dtype, &o, NULL) != SL_OK)
        return 0;
    struct stats_layout l;
    stats_layout_of(dtype, &o, SL__SUMMARY_K, SL__SUMMARY_LEVELS, &l);
    return l.total;
}

/* The histogram's range and steps. */
static void
stats_init_histogram(sl_stats *s)
{
    const struct sl_stats_opts *o = &s->opts;
    s->bins = o->bins;
    s->lo = s->hi = NAN;
    if (s->bins == 0)
        return;
    s->lo = o->has_range ? o->lo : (double)s->value_min;
    s->hi = o->has_range ? o->hi : (double)s->value_min + (double)s->n_values;
    s->step = (s->hi - s->lo) / (double)s->bins;
    s->norm = (double)s->bins / (s->hi - s->lo);
}

sl_stats *
sl__stats_create_sized(sl_dtype dtype, const struct sl_stats_opts *opts,
                       const struct sl_allocator *alloc, uint32_t k, uint32_t n_levels,
                       struct sl_error *err)
{
    const struct sl_stats_opts o = opts != NULL ? *opts : SL_STATS_OPTS_DEFAULT;
    if (stats_check_dtype(dtype, err) != SL_OK || stats_check_opts(dtype, &o, err) != SL_OK)
        return NULL;
    assert(k >= 4 && k % 2 == 0 && n_levels >= 2 && n_levels <= SL__SUMMARY_MAX_LEVELS);
    struct stats_layout l;
    stats_layout_of(dtype, &o, k, n_levels, &l);
    const struct sl_allocator a = alloc != NULL ? *alloc : sl_allocator_default();
    unsigned char *mem = sl_alloc(&a, l.total, 64);
    if (mem == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "stats: out of memory allocating %zu bytes for %s",
                     l.total, sl_dtype_name(dtype));
        return NULL;
    }
    sl_stats *s = (sl_stats *)mem;
    memset(s, 0, sizeof *s);
    s->alloc = a;
    s->bytes = l.total;
    s->dtype = dtype;
    s->opts = o;
    s->ops = stats_dtypes[dtype];
    s->exact = stats_dtype_is_exact(dtype);
    if (s->exact) {
        s->n_values = stats_n_values(dtype);
        s->value_min = sl_dtype_is_signed(dtype) ? -(int32_t)(s->n_values / 2) : 0;
    }
    s->hist = l.hist != 0 ? (uint64_t *)(mem + l.hist) : NULL;
    s->counts = l.counts != 0 ? (uint64_t *)(mem + l.counts) : NULL;
    s->has_summary = l.summary != 0;
    if (s->has_summary)
        sl__summary_init(&s->q, k, n_levels, (uint64_t *)(mem + l.summary));
    stats_init_histogram(s);
    sl_stats_reset(s);
    return s;
}

sl_stats *
sl_stats_create(sl_dtype dtype, const struct sl_stats_opts *opts, const struct sl_allocator *alloc,
                struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    return sl__stats_create_sized(dtype, opts, alloc, SL__SUMMARY_K, SL__SUMMARY_LEVELS, err);
}

void
sl_stats_free(sl_stats *s)
{
    if (s == NULL)
        return;
    const struct sl_allocator a = s->alloc;
    sl_free(&a, s, s->bytes);
}

void
sl_stats_reset(sl_stats *s)
{
    if (s->hist != NULL)
        memset(s->hist, 0, ((size_t)s->bins + 2) * sizeof *s->hist);
    if (s->counts != NULL)
        memset(s->counts, 0, (size_t)s->n_values * sizeof *s->counts);
    if (s->has_summary)
        sl__summary_reset(&s->q);
    s->count = s->nan_count = 0;
    s->min_key = UINT64_MAX;
    s->max_key = 0;
    s->isum = (struct sl__stats_i128){0, 0};
    s->fsum = s->fcomp = 0;
    s->n_pinf = s->n_ninf = s->n_fin = 0;
    s->mean = s->m2 = s->shift = 0;
}

/* ---- adding and merging -------------------------------------------------------- */

/* Walk `v` row by row (extent-1 dimensions dropped, contiguous ones merged). */
static void
stats_add_view(sl_stats *s, const struct sl_view *v)
{
    const ptrdiff_t es = (ptrdiff_t)sl_dtype_size(v->dtype);
    struct sl__ops_box box = {.rank = 0};
    for (uint32_t d = 0; d < v->rank; d++) {
        if (v->shape[d] == 1)
            continue;
        const ptrdiff_t st = (ptrdiff_t)v->stride[d] * es;
        const uint32_t k = box.rank;
        if (k > 0 && sl__ops_steps_chain(box.step[k - 1], st, v->shape[d])) {
            box.ext[k - 1] *= v->shape[d];
            box.step[k - 1] = st;
            continue;
        }
        box.ext[k] = v->shape[d];
        box.step[k] = st;
        box.rank++;
    }
    if (box.rank == 0) {
        box.rank = 1;
        box.ext[0] = 1;
        box.step[0] = es;
    }
    const uint32_t last = box.rank - 1;
    uint64_t idx[SL_MAX_RANK] = {0};
    ptrdiff_t off = 0;
    do
        s->ops->add_row(s, (const unsigned char *)v->data + off, box.step[last], box.ext[last]);
    while (sl__ops_box_next_row(&box, idx, &off));
}

sl_status
sl_stats_add(sl_stats *s, const struct sl_view *block, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (s == NULL || block == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "stats: NULL %s",
                            s == NULL ? "accumulator" : "block");
    SL_TRY(sl_view_check(block, err));
    if (block->dtype != s->dtype)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "stats: block of dtype %s given to an accumulator of %s",
                            sl_dtype_name(block->dtype), sl_dtype_name(s->dtype));
    const uint64_t n = sl_view_count(block);
    if (n > UINT64_MAX - s->count)
        return sl_error_set(err, SL_EOVERFLOW, NULL,
                            "stats: %" PRIu64 " more elements would pass 2^64 - 1 (holds %" PRIu64
                            ")",
                            n, s->count);
    if (n == 0)
        return SL_OK;
    stats_add_view(s, block);
    s->count += n;
    return SL_OK;
}

/* SL_EINVAL unless `a` and `b` were made with the same dtype and options. */
static sl_status
stats_check_same(const sl_stats *a, const sl_stats *b, struct sl_error *err)
{
    if (a->dtype != b->dtype)
        return sl_error_set(err, SL_EINVAL, NULL, "stats: cannot merge %s statistics into %s ones",
                            sl_dtype_name(b->dtype), sl_dtype_name(a->dtype));
    if (a->bins != b->bins || (a->bins > 0 && (a->lo != b->lo || a->hi != b->hi)))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "stats: cannot merge a histogram of %" PRIu32
                            " bins over [%g, %g] into one of %" PRIu32 " bins over [%g, %g]",
                            b->bins, b->lo, b->hi, a->bins, a->lo, a->hi);
    if (a->opts.n_percentiles != b->opts.n_percentiles)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "stats: cannot merge %zu percentiles into %zu percentiles",
                            b->opts.n_percentiles, a->opts.n_percentiles);
    for (size_t i = 0; i < a->opts.n_percentiles; i++)
        if (a->opts.percentiles[i] != b->opts.percentiles[i])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "stats: percentile %zu differs: %g merged into %g", i,
                                b->opts.percentiles[i], a->opts.percentiles[i]);
    if (a->has_summary && (a->q.k != b->q.k || a->q.n_levels != b->q.n_levels))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "stats: summary of %" PRIu32 " x %" PRIu32 " keys merged into %" PRIu32
                            " x %" PRIu32,
                            b->q.n_levels, b->q.k, a->q.n_levels, a->q.k);
    return SL_OK;
}

sl_status
sl_stats_merge(sl_stats *into, const sl_stats *from, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (into == NULL || from == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "stats: NULL accumulator");
    if (into == from)
        return sl_error_set(err, SL_EINVAL, NULL, "stats: cannot merge an accumulator into itself");
    SL_TRY(stats_check_same(into, from, err));
    if (from->count > UINT64_MAX - into->count)
        return sl_error_set(err, SL_EOVERFLOW, NULL,
                            "stats: merging %" PRIu64 " elements into %" PRIu64
                            " would pass 2^64 - 1",
                            from->count, into->count);
    into->count += from->count;
    into->nan_count += from->nan_count;
    if (into->hist != NULL && !into->exact) /* exact: derived from the counters */
        for (size_t i = 0; i < (size_t)into->bins + 2; i++)
            into->hist[i] += from->hist[i];
    if (into->exact) {
        for (uint32_t i = 0; i < into->n_values; i++)
            into->counts[i] += from->counts[i];
        return SL_OK;
    }
    into->min_key = from->min_key < into->min_key ? from->min_key : into->min_key;
    into->max_key = from->max_key > into->max_key ? from->max_key : into->max_key;
    sl__stats_i128_add(&into->isum, from->isum);
    stats_neumaier(&into->fsum, &into->fcomp, from->fsum);
    into->fcomp += from->fcomp;
    into->n_pinf += from->n_pinf;
    into->n_ninf += from->n_ninf;
    if (into->n_fin == 0)
        into->shift = from->shift;
    stats_chan(&into->n_fin, &into->mean, &into->m2, from->n_fin,
               from->mean + (from->shift - into->shift), from->m2);
    if (into->has_summary)
        sl__summary_merge(&into->q, &from->q);
    return SL_OK;
}
