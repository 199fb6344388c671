/* SPDX-License-Identifier: MIT */
/*
 * Reading an accumulator: the moments, histogram and percentiles of
 * everything it holds, computed from its counters (dtypes of at most 16
 * bits) or from its running sums and quantile summary (wider dtypes).
 *
 * DESIGN: percentiles follow numpy's default method exactly: virtual index
 * r = (m - 1) * (p / 100) over the m sorted non-NaN values, the order
 * statistics at floor(r) and floor(r) + 1 (both m - 1 when r >= m - 1),
 * and numpy's _lerp, `a + (b - a) * t`, or `b - (b - a) * (1 - t)` when
 * t >= 0.5, in float64.  Counters give the order statistics exactly; the
 * summary gives keys whose true ranks are within its error of the asked
 * ones (stats_summary.c), so its interpolation is clamped to [a, b] and an
 * infinity that makes it NaN gives the nearer end.
 */
#include <math.h>
#include <string.h>

#include <sluice/stats.h>

#include "ops_internal.h"
#include "stats_internal.h"

double
sl__stats_i128_to_double(struct sl__stats_i128 a)
{
    const bool neg = a.hi >> 63;
    if (neg) { /* negate: ~a + 1 */
        a.lo = ~a.lo + 1;
        a.hi = ~a.hi + (a.lo == 0);
    }
    double d;
    if (a.hi == 0) {
        d = (double)a.lo;
    } else {
        /* Keep the top 64 bits with a sticky bit for the rest, so the
         * conversion rounds once. */
        unsigned sh = 0;
        while (sh < 64 && (a.hi >> sh) != 0)
            sh++;
        const uint64_t top = sh == 64 ? a.hi : (a.hi << (64 - sh)) | (a.lo >> sh);
        const uint64_t rest = sh == 64 ? a.lo : a.lo << (64 - sh);
        d = ldexp((double)(top | (rest != 0)), (int)sh);
    }
    return neg ? -d : d;
}

/* c * v added to `a` exactly (|v| < 2^32). */
static void
stats_i128_add_mul(struct sl__stats_i128 *a, uint64_t c, int64_t v)
{
    const uint64_t av = v < 0 ? (uint64_t)-v : (uint64_t)v;
    const uint64_t p0 = (c & 0xffffffffu) * av, p1 = (c >> 32) * av;
    struct sl__stats_i128 t = {p0, 0};
    sl__stats_i128_add(&t, (struct sl__stats_i128){p1 << 32, p1 >> 32});
    if (v < 0) {
        t.lo = ~t.lo + 1;
        t.hi = ~t.hi + (t.lo == 0);
    }
    sl__stats_i128_add(a, t);
}

/* numpy's _lerp in float64. */
static double
stats_lerp(double a, double b, double t)
{
    const double d = b - a;
    double r = a + d * t;
    if (t >= 0.5)
        r = b - d * (1 - t);
    return r;
}

/* Where numpy's linear method reads m sorted values for percentile p. */
struct stats_pos {
    uint64_t i0, i1; /* the two order statistics */
    double t;        /* weight of the second */
};

static struct stats_pos
stats_pos_of(uint64_t m, double p)
{
    const double q = p / 100;
    const double r = (double)(m - 1) * q;
    struct stats_pos pos = {m - 1, m - 1, 0};
    if (r >= (double)(m - 1))
        return pos;
    const double f = floor(r);
    pos.i0 = (uint64_t)f;
    pos.i1 = pos.i0 + 1;
    pos.t = r - f;
    return pos;
}

/* The value at 0-based position `pos` of the counted values. */
static double
stats_exact_at(const sl_stats *s, uint64_t pos)
{
    uint64_t cum = 0;
    for (uint32_t i = 0; i < s->n_values; i++) {
        cum += s->counts[i];
        if (cum > pos)
            return (double)((int64_t)i + s->value_min);
    }
    return NAN; /* pos beyond the count: not reached */
}

static void
stats_result_exact(const sl_stats *s, struct sl_stats_result *out)
{
    const uint64_t n = s->count;
    if (n == 0)
        return;
    struct sl__stats_i128 sum = {0, 0};
    uint32_t first = s->n_values, last = 0;
    for (uint32_t i = 0; i < s->n_values; i++) {
        if (s->counts[i] == 0)
            continue;
        first = i < first ? i : first;
        last = i;
        stats_i128_add_mul(&sum, s->counts[i], (int64_t)i + s->value_min);
    }
    out->min = (double)((int64_t)first + s->value_min);
    out->max = (double)((int64_t)last + s->value_min);
    out->sum = sl__stats_i128_to_double(sum);
    out->mean = out->sum / (double)n;
    double m2 = 0, comp = 0;
    for (uint32_t i = first; i <= last; i++) {
        const double d = (double)((int64_t)i + s->value_min) - out->mean;
        const double x = (double)s->counts[i] * d * d, t = m2 + x;
        comp += fabs(m2) >= fabs(x) ? (m2 - t) + x : (x - t) + m2;
        m2 = t;
    }
    out->std = sqrt((m2 + comp) / (double)n);
    for (size_t j = 0; j < s->opts.n_percentiles; j++) {
        const struct stats_pos p = stats_pos_of(n, s->opts.percentiles[j]);
        out->percentile[j] = stats_lerp(stats_exact_at(s, p.i0), stats_exact_at(s, p.i1), p.t);
    }
}

/* The summary's value near 0-based position `pos`, and the next one. */
static double
stats_summary_percentile(const sl_stats *s, uint64_t m, double p)
{
    const struct stats_pos pos = stats_pos_of(m, p);
    const uint64_t w = sl__summary_weight(&s->q);
    const uint64_t i0 = pos.i0 < w ? pos.i0 : w - 1, i1 = pos.i1 < w ? pos.i1 : w - 1;
    const uint64_t k0 = sl__summary_select(&s->q, i0, s->min_key, s->max_key);
    const uint64_t k1 = i1 == i0 ? k0 : sl__summary_select(&s->q, i1, k0, s->max_key);
    const double a = sl__stats_key_value(s, k0), b = sl__stats_key_value(s, k1);
    if (a == b)
        return a;
    const double r = stats_lerp(a, b, pos.t);
    if (isnan(r))
        return pos.t < 0.5 ? a : b; /* -inf and inf */
    return r < a ? a : r > b ? b : r;
}

static void
stats_result_wide(const sl_stats *s, struct sl_stats_result *out)
{
    const uint64_t m = s->count - s->nan_count;
    if (m == 0)
        return;
    out->min = sl__stats_key_value(s, s->min_key);
    out->max = sl__stats_key_value(s, s->max_key);
    if (sl_dtype_is_float(s->dtype)) {
        double sum = isinf(s->fsum) ? s->fsum : s->fsum + s->fcomp;
        if (s->n_pinf > 0)
            sum += INFINITY;
        if (s->n_ninf > 0)
            sum += -INFINITY;
        out->sum = sum;
    } else {
        out->sum = sl__stats_i128_to_double(s->isum);
    }
    out->mean = out->sum / (double)m;
    out->std = s->n_fin < m ? NAN : sqrt(s->m2 / (double)m);
    for (size_t j = 0; j < s->opts.n_percentiles; j++)
        out->percentile[j] = stats_summary_percentile(s, m, s->opts.percentiles[j]);
    if (s->has_summary && s->q.err > 0)
        out->rank_error = ((double)s->q.err + 1) / (double)m;
}

/* Fill the histogram of an exact accumulator from its counters: its slots
 * are the accumulator's cache, so a const accumulator can still give it
 * (not concurrently: sl_stats.h says results are asked for by one thread). */
static void
stats_exact_hist(const sl_stats *s)
{
    memset(s->hist, 0, ((size_t)s->bins + 2) * sizeof *s->hist);
    for (uint32_t i = 0; i < s->n_values; i++)
        if (s->counts[i] != 0)
            s->hist[sl__stats_slot(s, (double)((int64_t)i + s->value_min))] += s->counts[i];
}

sl_status
sl_stats_result(const sl_stats *s, struct sl_stats_result *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (s == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "stats: NULL %s",
                            s == NULL ? "accumulator" : "result");
    memset(out, 0, sizeof *out);
    out->count = s->count;
    out->nan_count = s->nan_count;
    out->min = out->max = out->mean = out->std = NAN;
    out->bins = s->bins;
    out->lo = s->lo;
    out->hi = s->hi;
    if (s->bins > 0) {
        if (s->exact) /* the histogram is the counters' sums per slot */
            stats_exact_hist(s);
        out->histogram = s->hist;
        out->below = s->hist[s->bins];
        out->above = s->hist[s->bins + 1];
    }
    out->n_percentiles = s->opts.n_percentiles;
    for (size_t j = 0; j < out->n_percentiles; j++)
        out->percentile[j] = NAN;
    out->percentiles_exact = s->exact;
    if (s->exact)
        stats_result_exact(s, out);
    else
        stats_result_wide(s, out);
    return SL_OK;
}
