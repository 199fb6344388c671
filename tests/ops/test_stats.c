/* SPDX-License-Identifier: MIT */
/*
 * Statistics accumulators: refused options with their numbers, the
 * moments of hand-checked values (NaN, infinities, exact integer sums),
 * histogram edges, default ranges, merging equal to adding everything,
 * reset, exact percentiles of 8- and 16-bit dtypes, empty accumulators,
 * strided views, and the percentile summary's rank bound on sorted,
 * reversed, tied and random data merged in random orders, with the
 * default sizes and with small ones that reach the top level.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/stats.h>
#include <sluice/view.h>

#include "stats_internal.h"

TestSuite(ops_stats, .timeout = 60.0);

static sl_stats *
make(sl_dtype dt, const struct sl_stats_opts *o)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_stats *s = sl_stats_create(dt, o, NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    return s;
}

static void
add(sl_stats *s, sl_dtype dt, const void *data, uint64_t n)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_view v;
    cr_assert_eq(sl_view_init(&v, dt, 1, &n, (void *)data, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_stats_add(s, &v, &err), SL_OK, "%s", err.text);
}

static struct sl_stats_result
result(const sl_stats *s)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_stats_result r;
    cr_assert_eq(sl_stats_result(s, &r, &err), SL_OK, "%s", err.text);
    return r;
}

/* The create error for dtype `dt` and options `o`; the text must contain `want`. */
static void
expect_refused(sl_dtype dt, const struct sl_stats_opts *o, sl_status code, const char *want)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_stats_create(dt, o, NULL, &err));
    cr_assert_eq(err.code, code, "%s", err.text);
    cr_assert_not_null(strstr(err.text, want), "\"%s\" lacks \"%s\"", err.text, want);
    cr_assert_eq(sl_stats_bytes(dt, o), 0);
}

Test(ops_stats, create_refuses_options_naming_the_numbers)
{
    struct sl_stats_opts o = {.bins = 256};
    expect_refused(SL_DTYPE_F32, &o, SL_EINVAL, "give a histogram range for float32 (256 bins)");
    o = (struct sl_stats_opts){.bins = 2000000, .has_range = true, .lo = 0, .hi = 1};
    expect_refused(SL_DTYPE_F64, &o, SL_EINVAL, "2000000 histogram bins (at most 1048576)");
    o = (struct sl_stats_opts){.bins = 4, .has_range = true, .lo = 5, .hi = 1};
    expect_refused(SL_DTYPE_U8, &o, SL_EINVAL, "range [5, 1] must be finite with lo < hi");
    o = (struct sl_stats_opts){.bins = 4, .has_range = true, .lo = 0, .hi = INFINITY};
    expect_refused(SL_DTYPE_I32, &o, SL_EINVAL, "range [0, inf]");
    o = (struct sl_stats_opts){.n_percentiles = 2, .percentiles = {50, 101}};
    expect_refused(SL_DTYPE_U16, &o, SL_EINVAL, "percentile 1 is 101 (each must lie in [0, 100])");
    o = (struct sl_stats_opts){.n_percentiles = 1, .percentiles = {NAN}};
    expect_refused(SL_DTYPE_F64, &o, SL_EINVAL, "percentile 0 is nan");
    o = (struct sl_stats_opts){.n_percentiles = 17};
    expect_refused(SL_DTYPE_F64, &o, SL_EINVAL, "17 percentiles (at most 16)");
    expect_refused(SL_DTYPE_F16, NULL, SL_EUNSUPPORTED, "dtype float16 is not supported");
    expect_refused(SL_DTYPE_C64, NULL, SL_EUNSUPPORTED, "dtype complex64 is not supported");
    expect_refused((sl_dtype)99, NULL, SL_EINVAL, "invalid dtype 99");
}

static void *
alloc_fail(void *ctx, size_t n, size_t align)
{
    (void)ctx, (void)n, (void)align;
    return NULL;
}

static void
free_never(void *ctx, void *p, size_t n)
{
    (void)ctx, (void)p, (void)n;
}

Test(ops_stats, create_reports_out_of_memory_with_the_bytes)
{
    const struct sl_allocator a = {.alloc = alloc_fail, .free = free_never};
    const struct sl_stats_opts o = {.n_percentiles = 1, .percentiles = {50}};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_stats_create(SL_DTYPE_F64, &o, &a, &err));
    cr_assert_eq(err.code, SL_ENOMEM);
    char want[64];
    snprintf(want, sizeof want, "allocating %zu bytes", sl_stats_bytes(SL_DTYPE_F64, &o));
    cr_assert_not_null(strstr(err.text, want), "%s", err.text);
}

Test(ops_stats, bytes_cover_the_summary_only_with_percentiles)
{
    const struct sl_stats_opts p = {.n_percentiles = 1, .percentiles = {50}};
    cr_assert_lt(sl_stats_bytes(SL_DTYPE_F32, NULL), 4096);
    cr_assert_gt(sl_stats_bytes(SL_DTYPE_F32, &p), (size_t)SL__SUMMARY_LEVELS * SL__SUMMARY_K * 8);
    cr_assert_gt(sl_stats_bytes(SL_DTYPE_U16, NULL), 65536 * 8);
}

Test(ops_stats, moments_of_hand_values)
{
    sl_stats *s = make(SL_DTYPE_F64, NULL);
    const double x[] = {1, 2, NAN, 3, 6};
    add(s, SL_DTYPE_F64, x, 5);
    const struct sl_stats_result r = result(s);
    cr_assert_eq(r.count, 5);
    cr_assert_eq(r.nan_count, 1);
    cr_assert_eq(r.min, 1);
    cr_assert_eq(r.max, 6);
    cr_assert_eq(r.sum, 12);
    cr_assert_eq(r.mean, 3);
    cr_assert_float_eq(r.std, sqrt(3.5), 1e-15);
    cr_assert_null(r.histogram);
    cr_assert_eq(r.bins, 0);
    sl_stats_free(s);
}

Test(ops_stats, infinities_give_numpys_sum_mean_and_nan_std)
{
    sl_stats *s = make(SL_DTYPE_F32, NULL);
    const float x[] = {1, INFINITY, -2};
    add(s, SL_DTYPE_F32, x, 3);
    struct sl_stats_result r = result(s);
    cr_assert(isinf(r.sum) && r.sum > 0 && isinf(r.mean) && isnan(r.std));
    cr_assert_eq(r.min, -2);
    cr_assert(isinf(r.max));
    const float y = -INFINITY;
    add(s, SL_DTYPE_F32, &y, 1);
    r = result(s);
    cr_assert(isnan(r.sum) && isnan(r.mean) && isnan(r.std));
    cr_assert(isinf(r.min) && r.min < 0);
    sl_stats_free(s);
}

Test(ops_stats, integer_sums_are_exact)
{
    sl_stats *s = make(SL_DTYPE_I64, NULL);
    const int64_t x[] = {INT64_MAX, INT64_MAX, 5, -INT64_MAX, -INT64_MAX};
    add(s, SL_DTYPE_I64, x, 5);
    cr_assert_eq(result(s).sum, 5);
    sl_stats_free(s);
    s = make(SL_DTYPE_U64, NULL);
    const uint64_t y[] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
    add(s, SL_DTYPE_U64, y, 4);
    cr_assert_eq(result(s).sum, ldexp(1, 66)); /* 2^66 - 4, rounded once */
    cr_assert_eq(result(s).max, ldexp(1, 64));
    sl_stats_free(s);
    s = make(SL_DTYPE_I16, NULL);
    const int16_t z[] = {-32768, -32768, 32767, 1};
    add(s, SL_DTYPE_I16, z, 4);
    cr_assert_eq(result(s).sum, -32768);
    cr_assert_eq(result(s).mean, -8192);
    sl_stats_free(s);
}

Test(ops_stats, histogram_puts_hi_in_the_last_bin_and_counts_outside)
{
    const struct sl_stats_opts o = {.bins = 4, .has_range = true, .lo = 0, .hi = 4};
    sl_stats *s = make(SL_DTYPE_F64, &o);
    const double x[] = {-1, 0, 0.999, 1, 3.5, 4, 4.5, NAN, -INFINITY, INFINITY};
    add(s, SL_DTYPE_F64, x, 10);
    const struct sl_stats_result r = result(s);
    cr_assert_eq(r.bins, 4);
    cr_assert_eq(r.lo, 0);
    cr_assert_eq(r.hi, 4);
    const uint64_t want[] = {2, 1, 0, 2};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(r.histogram[i], want[i], "bin %d: %llu", i,
                     (unsigned long long)r.histogram[i]);
    cr_assert_eq(r.below, 2);
    cr_assert_eq(r.above, 2);
    sl_stats_free(s);
}

Test(ops_stats, histogram_edges_follow_numpys_corrections)
{
    /* numpy.linspace(0, 1, 11) has edge 3 at 0.30000000000000004 and edge 7
     * at 0.7000000000000001: 0.3 and 0.7 lie below them. */
    const struct sl_stats_opts o = {.bins = 10, .has_range = true, .lo = 0, .hi = 1};
    sl_stats *s = make(SL_DTYPE_F64, &o);
    const double x[] = {0.3, 0.30000000000000004, 0.7, 0.1};
    add(s, SL_DTYPE_F64, x, 4);
    const struct sl_stats_result r = result(s);
    cr_assert_eq(r.histogram[2], 1);
    cr_assert_eq(r.histogram[3], 1);
    cr_assert_eq(r.histogram[6], 1);
    cr_assert_eq(r.histogram[7], 0);
    cr_assert_eq(r.histogram[1], 1);
    sl_stats_free(s);
}

Test(ops_stats, small_integers_default_to_their_whole_range)
{
    const struct sl_stats_opts o = {.bins = 4};
    sl_stats *s = make(SL_DTYPE_U8, &o);
    const uint8_t x[] = {0, 63, 64, 255, 255};
    add(s, SL_DTYPE_U8, x, 5);
    struct sl_stats_result r = result(s);
    cr_assert_eq(r.lo, 0);
    cr_assert_eq(r.hi, 256);
    cr_assert_eq(r.histogram[0], 2);
    cr_assert_eq(r.histogram[1], 1);
    cr_assert_eq(r.histogram[3], 2);
    cr_assert_eq(r.below + r.above, 0);
    sl_stats_free(s);
    s = make(SL_DTYPE_I16, &o);
    const int16_t y[] = {-32768, -1, 0, 32767};
    add(s, SL_DTYPE_I16, y, 4);
    r = result(s);
    cr_assert_eq(r.lo, -32768);
    cr_assert_eq(r.hi, 32768);
    cr_assert_eq(r.histogram[0], 1);
    cr_assert_eq(r.histogram[1], 1);
    cr_assert_eq(r.histogram[2], 1);
    cr_assert_eq(r.histogram[3], 1);
    sl_stats_free(s);
    s = make(SL_DTYPE_BOOL, &o);
    const uint8_t b[] = {0, 1, 7, 0, 0};
    add(s, SL_DTYPE_BOOL, b, 5);
    r = result(s);
    cr_assert_eq(r.hi, 2);
    cr_assert_eq(r.histogram[0], 3);
    cr_assert_eq(r.histogram[2], 2);
    cr_assert_eq(r.max, 1);
    cr_assert_eq(r.sum, 2);
    sl_stats_free(s);
}

Test(ops_stats, exact_percentiles_of_uint8_and_uint16)
{
    const struct sl_stats_opts o = {.n_percentiles = 5, .percentiles = {0, 25, 50, 90, 100}};
    sl_stats *s = make(SL_DTYPE_U8, &o);
    const uint8_t x[] = {10, 5, 4, 3, 2, 1};
    add(s, SL_DTYPE_U8, x, 6);
    struct sl_stats_result r = result(s);
    cr_assert(r.percentiles_exact);
    cr_assert_eq(r.rank_error, 0);
    const double want[] = {1, 2.25, 3.5, 7.5, 10};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(r.percentile[i], want[i], "p%g: %.17g", o.percentiles[i], r.percentile[i]);
    sl_stats_free(s);
    const struct sl_stats_opts o2 = {.n_percentiles = 2, .percentiles = {50, 33}};
    s = make(SL_DTYPE_U16, &o2);
    const uint16_t y[] = {65535, 0};
    add(s, SL_DTYPE_U16, y, 2);
    r = result(s);
    cr_assert_eq(r.percentile[0], 32767.5);
    cr_assert_eq(r.percentile[1], 0 + 65535.0 * (1.0 * 0.33)); /* numpy: a + (b - a) * t */
    sl_stats_free(s);
}

Test(ops_stats, int8_percentiles_do_not_wrap)
{
    /* numpy 1.24 subtracts in int8 and gives 127.5 here; float64 gives -0.5. */
    const struct sl_stats_opts o = {.n_percentiles = 1, .percentiles = {50}};
    sl_stats *s = make(SL_DTYPE_I8, &o);
    const int8_t x[] = {-128, 127};
    add(s, SL_DTYPE_I8, x, 2);
    cr_assert_eq(result(s).percentile[0], -0.5);
    sl_stats_free(s);
}

Test(ops_stats, empty_accumulators_give_nan_and_zero_counts)
{
    const struct sl_stats_opts o = {
        .bins = 3, .has_range = true, .lo = 0, .hi = 1, .n_percentiles = 1, .percentiles = {50}};
    const sl_dtype dts[] = {SL_DTYPE_U16, SL_DTYPE_F32, SL_DTYPE_I64};
    for (int d = 0; d < 3; d++) {
        sl_stats *s = make(dts[d], &o);
        if (dts[d] == SL_DTYPE_F32) {
            const float nan = NAN;
            add(s, SL_DTYPE_F32, &nan, 1);
        }
        const struct sl_stats_result r = result(s);
        cr_assert_eq(r.count, dts[d] == SL_DTYPE_F32);
        cr_assert_eq(r.nan_count, r.count);
        cr_assert(isnan(r.min) && isnan(r.max) && isnan(r.mean) && isnan(r.std));
        cr_assert_eq(r.sum, 0);
        cr_assert(isnan(r.percentile[0]));
        cr_assert_eq(r.histogram[0] + r.histogram[1] + r.histogram[2] + r.below + r.above, 0);
        sl_stats_free(s);
    }
}

/* Results that must agree exactly (sums within 1e-12). */
static void
expect_same(const struct sl_stats_result *a, const struct sl_stats_result *b)
{
    cr_assert_eq(a->count, b->count);
    cr_assert_eq(a->nan_count, b->nan_count);
    cr_assert_eq(a->min, b->min);
    cr_assert_eq(a->max, b->max);
    cr_assert_float_eq(a->sum, b->sum, 1e-12 * fabs(b->sum));
    cr_assert_float_eq(a->std, b->std, 1e-12 * b->std);
    for (uint32_t i = 0; i < a->bins; i++)
        cr_assert_eq(a->histogram[i], b->histogram[i]);
    cr_assert_eq(a->below, b->below);
    cr_assert_eq(a->above, b->above);
    for (size_t i = 0; i < a->n_percentiles; i++)
        cr_assert_eq(a->percentile[i], b->percentile[i], "%zu: %g %g", i, a->percentile[i],
                     b->percentile[i]);
}

Test(ops_stats, merging_equals_adding_everything)
{
    const struct sl_stats_opts o = {.bins = 16,
                                    .has_range = true,
                                    .lo = -3,
                                    .hi = 3,
                                    .n_percentiles = 3,
                                    .percentiles = {1, 50, 99.9}};
    enum { N = 5000 };
    static float x[N];
    static uint16_t y[N];
    srand(7);
    for (int i = 0; i < N; i++) {
        x[i] = (float)(rand() % 7000 - 3500) / 1000.0f;
        y[i] = (uint16_t)(rand() * 31);
    }
    x[17] = NAN;
    sl_stats *all = make(SL_DTYPE_F32, &o), *a = make(SL_DTYPE_F32, &o);
    sl_stats *b = make(SL_DTYPE_F32, &o);
    add(all, SL_DTYPE_F32, x, N);
    add(a, SL_DTYPE_F32, x, 1234);
    add(b, SL_DTYPE_F32, x + 1234, N - 1234);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_stats_merge(b, a, &err), SL_OK, "%s", err.text);
    struct sl_stats_result ra = result(all), rb = result(b);
    expect_same(&rb, &ra);
    sl_stats_free(all), sl_stats_free(a), sl_stats_free(b);
    all = make(SL_DTYPE_U16, &o), a = make(SL_DTYPE_U16, &o), b = make(SL_DTYPE_U16, &o);
    add(all, SL_DTYPE_U16, y, N);
    add(a, SL_DTYPE_U16, y, 99);
    add(b, SL_DTYPE_U16, y + 99, N - 99);
    cr_assert_eq(sl_stats_merge(a, b, &err), SL_OK, "%s", err.text);
    ra = result(all), rb = result(a);
    expect_same(&rb, &ra);
    cr_assert_eq(rb.sum, ra.sum);
    sl_stats_free(all), sl_stats_free(a), sl_stats_free(b);
}

Test(ops_stats, merge_refuses_other_dtypes_options_and_itself)
{
    const struct sl_stats_opts o1 = {.n_percentiles = 1, .percentiles = {50}};
    const struct sl_stats_opts o2 = {.n_percentiles = 1, .percentiles = {90}};
    sl_stats *a = make(SL_DTYPE_F64, &o1), *b = make(SL_DTYPE_F64, &o2);
    sl_stats *c = make(SL_DTYPE_F32, &o1);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_stats_merge(a, b, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "percentile 0 differs: 90 merged into 50"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_stats_merge(a, c, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "float32 statistics into float64"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_stats_merge(a, a, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "into itself"), "%s", err.text);
    sl_stats_free(a), sl_stats_free(b), sl_stats_free(c);
}

Test(ops_stats, add_refuses_another_dtype)
{
    sl_stats *s = make(SL_DTYPE_U16, NULL);
    const int16_t x = 1;
    struct sl_view v;
    const uint64_t one = 1;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_view_init(&v, SL_DTYPE_I16, 1, &one, (void *)&x, &err), SL_OK);
    cr_assert_eq(sl_stats_add(s, &v, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "dtype int16 given to an accumulator of uint16"), "%s",
                       err.text);
    cr_assert_eq(result(s).count, 0);
    sl_stats_free(s);
}

Test(ops_stats, reset_empties_and_keeps_the_options)
{
    const struct sl_stats_opts o = {.bins = 2, .n_percentiles = 1, .percentiles = {50}};
    sl_stats *s = make(SL_DTYPE_I8, &o);
    const int8_t x[] = {-5, 7, 100};
    add(s, SL_DTYPE_I8, x, 3);
    cr_assert_eq(result(s).percentile[0], 7);
    sl_stats_reset(s);
    struct sl_stats_result r = result(s);
    cr_assert_eq(r.count, 0);
    cr_assert_eq(r.histogram[0] + r.histogram[1], 0);
    add(s, SL_DTYPE_I8, x, 1);
    r = result(s);
    cr_assert_eq(r.percentile[0], -5);
    cr_assert_eq(r.histogram[0], 1);
    sl_stats_free(s);
}

Test(ops_stats, strided_views_count_every_element_once)
{
    /* A 3 x 4 block read reversed in both dimensions, and broadcast rows. */
    int32_t data[12];
    for (int i = 0; i < 12; i++)
        data[i] = i * i - 20;
    struct sl_view v = {.dtype = SL_DTYPE_I32, .rank = 2, .shape = {3, 4}, .stride = {-4, -1}};
    v.data = data + 11;
    const struct sl_stats_opts o = {.n_percentiles = 1, .percentiles = {50}};
    sl_stats *s = make(SL_DTYPE_I32, &o), *ref = make(SL_DTYPE_I32, &o);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_stats_add(s, &v, &err), SL_OK, "%s", err.text);
    add(ref, SL_DTYPE_I32, data, 12);
    struct sl_stats_result a = result(s), b = result(ref);
    expect_same(&a, &b);
    struct sl_view w = {.dtype = SL_DTYPE_I32, .rank = 3, .shape = {2, 1, 3}, .stride = {0, 5, 1}};
    w.data = data;
    sl_stats_reset(s);
    cr_assert_eq(sl_stats_add(s, &w, &err), SL_OK, "%s", err.text);
    a = result(s);
    cr_assert_eq(a.count, 6);
    cr_assert_eq(a.sum, 2.0 * (-20 - 19 - 16));
    sl_stats_free(s), sl_stats_free(ref);
}

/* ---- the percentile summary's bound ----------------------------------------- */

static int
cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t
lcg(uint64_t *state)
{
    *state = *state * 6364136223846793005u + 1442695040888963407u;
    return *state >> 11;
}

/* Check every percentile of `r` against the sorted data within its bound. */
static void
expect_within_bound(const struct sl_stats_result *r, const double *sorted, uint64_t n,
                    const char *what)
{
    const double e = r->rank_error * (double)n;
    static const double ps[] = {0, 0.1, 1, 5, 25, 50, 75, 95, 99, 99.9, 100};
    for (size_t j = 0; j < r->n_percentiles; j++) {
        const double rank = (double)(n - 1) * (ps[j] / 100);
        const double lo_i = floor(rank - e), hi_i = ceil(rank + e);
        const double lo = sorted[lo_i < 0 ? 0 : (uint64_t)lo_i];
        const double hi = sorted[hi_i > (double)(n - 1) ? n - 1 : (uint64_t)hi_i];
        cr_assert(r->percentile[j] >= lo && r->percentile[j] <= hi,
                  "%s: p%g = %.17g outside [%.17g, %.17g] (rank %.1f, e %.1f)", what, ps[j],
                  r->percentile[j], lo, hi, rank, e);
    }
}

/* Add `x` to `n_acc` accumulators in random chunks, merge them in random
 * order, and check the bound against the sorted values. */
static double
summary_round(const double *x, uint64_t n, uint32_t k, uint32_t levels, unsigned n_acc,
              uint64_t seed, const char *what)
{
    const struct sl_stats_opts o = {.n_percentiles = 11,
                                    .percentiles = {0, 0.1, 1, 5, 25, 50, 75, 95, 99, 99.9, 100}};
    sl_stats *acc[16];
    struct sl_error err = SL_ERROR_INIT;
    for (unsigned i = 0; i < n_acc; i++) {
        acc[i] = sl__stats_create_sized(SL_DTYPE_F64, &o, NULL, k, levels, &err);
        cr_assert_not_null(acc[i], "%s", err.text);
    }
    for (uint64_t at = 0; at < n;) {
        uint64_t len = 1 + lcg(&seed) % 20000;
        len = len < n - at ? len : n - at;
        add(acc[lcg(&seed) % n_acc], SL_DTYPE_F64, x + at, len);
        at += len;
    }
    for (unsigned live = n_acc; live > 1; live--) {
        const unsigned i = (unsigned)(lcg(&seed) % live);
        unsigned j = (unsigned)(lcg(&seed) % (live - 1));
        j += j >= i;
        cr_assert_eq(sl_stats_merge(acc[i], acc[j], &err), SL_OK, "%s", err.text);
        sl_stats_free(acc[j]);
        acc[j] = acc[live - 1]; /* the merged one moves if it was last */
    }
    const struct sl_stats_result r = result(acc[0]);
    cr_assert_eq(r.count, n);
    double *sorted = malloc(n * sizeof *sorted);
    memcpy(sorted, x, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    expect_within_bound(&r, sorted, n, what);
    free(sorted);
    sl_stats_free(acc[0]);
    return r.rank_error;
}

/* Fill x with one of the test distributions. */
static void
fill(double *x, uint64_t n, int kind, uint64_t *seed)
{
    for (uint64_t i = 0; i < n; i++) {
        const double u = (double)lcg(seed) / 9007199254740992.0;
        switch (kind) {
        case 0:
            x[i] = u;
            break; /* uniform */
        case 1:
            x[i] = (double)(lcg(seed) % 5);
            break; /* heavy ties */
        case 2:
            x[i] = (double)i;
            break; /* sorted */
        case 3:
            x[i] = (double)(n - i);
            break; /* reverse sorted */
        case 4:
            x[i] = 42;
            break; /* constant */
        default:
            x[i] = sqrt(-2 * log(u + 1e-300)) *
                   cos(6.283185307179586 * (double)lcg(seed) / 9007199254740992.0); /* normal */
        }
    }
}

Test(ops_stats, summary_percentiles_are_within_the_reported_bound)
{
    const char *names[] = {"uniform", "ties", "sorted", "reversed", "constant", "normal"};
    const uint64_t n = 400000;
    double *x = malloc(n * sizeof *x);
    uint64_t seed = 12345;
    for (int kind = 0; kind < 6; kind++) {
        fill(x, n, kind, &seed);
        const double e =
            summary_round(x, n, SL__SUMMARY_K, SL__SUMMARY_LEVELS, 7, seed, names[kind]);
        cr_assert(e > 0 && e <= 1.0 / 1024, "%s: rank error %g", names[kind], e);
    }
    free(x);
}

Test(ops_stats, small_summaries_stay_within_their_bound_past_the_top_level)
{
    const char *names[] = {"uniform", "ties", "sorted", "reversed", "constant", "normal"};
    const uint64_t n = 200000;
    double *x = malloc(n * sizeof *x);
    uint64_t seed = 99;
    for (int kind = 0; kind < 6; kind++) {
        fill(x, n, kind, &seed);
        /* 256-key levels, 6 of them: the top level compacts into itself. */
        const double e = summary_round(x, n, 256, 6, 5, seed, names[kind]);
        cr_assert(e > 1.0 / 256 && e < 0.2, "%s: rank error %g", names[kind], e);
    }
    free(x);
}

Test(ops_stats, small_inputs_have_exact_summary_percentiles)
{
    const struct sl_stats_opts o = {.n_percentiles = 3, .percentiles = {0, 50, 75}};
    sl_stats *s = make(SL_DTYPE_F32, &o);
    const float x[] = {4, -0.0f, 1, NAN, 2.5f, 1e30f};
    add(s, SL_DTYPE_F32, x, 6);
    const struct sl_stats_result r = result(s);
    cr_assert_not(r.percentiles_exact);
    cr_assert_eq(r.rank_error, 0);
    cr_assert_eq(r.percentile[0], 0);
    cr_assert_eq(r.percentile[1], 2.5);
    cr_assert_eq(r.percentile[2], 4);
    sl_stats_free(s);
}
