/* SPDX-License-Identifier: MIT */
/*
 * Downsample semantics on chosen values: rounding half to even, integer
 * extremes, accumulator tiers, bool majorities, NaN and signed zeros,
 * median and mode ties, edges, rank 0, empty views, and every error a
 * caller can cause.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <sluice.h>

#include "ops_internal.h"
#include "ops_reference.h"

TestSuite(ops_downsample_values, .timeout = 20.0);

/* Downsample a 1-d array of n elements of dt by factor f with `method`
 * into `out` (ceil(n / f) elements). */
static sl_status
ds1(sl_downsample_method method, sl_dtype dt, const void *in, uint64_t n, uint64_t f, void *out,
    struct sl_error *err)
{
    struct sl_view vi, vo;
    const uint64_t on = n / f + (n % f != 0);
    cr_assert_eq(sl_view_init(&vi, dt, 1, &n, (void *)(uintptr_t)in, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, dt, 1, &on, out, NULL), SL_OK);
    struct sl_downsample_params p = {.method = method, .rank = 1, .factor = {f}};
    unsigned char scratch[4096];
    return sl_downsample(&p, &vi, &vo, scratch, sizeof scratch, err);
}

Test(ops_downsample_values, integer_mean_rounds_half_to_even)
{
    const uint8_t a[] = {1, 2, 2, 3, 3, 4, 0, 1};
    uint8_t o[4];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_U8, a, 8, 2, o, NULL), SL_OK);
    const uint8_t want[] = {2, 2, 4, 0}; /* 1.5, 2.5, 3.5, 0.5 */
    cr_assert_arr_eq(o, want, sizeof want);

    const int8_t b[] = {-1, -2, -2, -3, -3, -4, 0, -1};
    int8_t ob[4];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_I8, b, 8, 2, ob, NULL), SL_OK);
    const int8_t wantb[] = {-2, -2, -4, 0}; /* -1.5, -2.5, -3.5, -0.5 */
    cr_assert_arr_eq(ob, wantb, sizeof wantb);

    const int16_t c[] = {0, 0, 0, 2, 1, 1, 1, 2, 1, 2, 2, 2};
    int16_t oc[3];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_I16, c, 12, 4, oc, NULL), SL_OK);
    cr_assert(oc[0] == 0 && oc[1] == 1 && oc[2] == 2, "%d %d %d", oc[0], oc[1], oc[2]);
}

Test(ops_downsample_values, partial_edge_block_averages_only_in_bounds_elements)
{
    const uint8_t a[] = {1, 2, 3, 4, 5};
    uint8_t o[3];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_U8, a, 5, 2, o, NULL), SL_OK);
    cr_assert(o[0] == 2 && o[1] == 4 && o[2] == 5, "%d %d %d", o[0], o[1], o[2]);
    /* A factor beyond the extent: one block of everything. */
    uint8_t one;
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_U8, a, 5, 100, &one, NULL), SL_OK);
    cr_assert_eq(one, 3);
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEDIAN, SL_DTYPE_U8, a, 5, 100, &one, NULL), SL_OK);
    cr_assert_eq(one, 3);
    cr_assert_eq(ds1(SL_DOWNSAMPLE_STRIDE, SL_DTYPE_U8, a, 5, 3, o, NULL), SL_OK);
    cr_assert(o[0] == 1 && o[1] == 4);
}

Test(ops_downsample_values, int64_means_are_exact_at_the_extremes)
{
    const int64_t a[] = {INT64_MAX, INT64_MAX, INT64_MIN, INT64_MIN,
                         INT64_MAX, INT64_MIN, INT64_MIN, INT64_MIN + 1};
    int64_t o[4];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_I64, a, 8, 2, o, NULL), SL_OK);
    cr_assert_eq(o[0], INT64_MAX);
    cr_assert_eq(o[1], INT64_MIN);
    cr_assert_eq(o[2], 0, "-0.5 rounds to 0");
    cr_assert_eq(o[3], INT64_MIN, "-2^63 + 0.5 rounds to the even -2^63");

    const uint64_t b[] = {UINT64_MAX, UINT64_MAX - 1, UINT64_MAX, UINT64_MAX, UINT64_MAX};
    uint64_t ob[2];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_U64, b, 5, 3, ob, NULL), SL_OK);
    cr_assert_eq(ob[0], UINT64_MAX, "2^64 - 1 - 1/3 rounds up");
    cr_assert_eq(ob[1], UINT64_MAX);
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_U64, b, 2, 2, ob, NULL), SL_OK);
    cr_assert_eq(ob[0], UINT64_MAX - 1, "2^64 - 1.5 rounds to the even 2^64 - 2");

    /* A thousand INT64_MAX: the sum needs 73 bits. */
    int64_t big[1000];
    for (int i = 0; i < 1000; i++)
        big[i] = i == 999 ? INT64_MAX - 999 : INT64_MAX;
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_I64, big, 1000, 1000, o, NULL), SL_OK);
    cr_assert_eq(o[0], INT64_MAX - 1, "mean is INT64_MAX - 0.999");
}

Test(ops_downsample_values, uint16_means_past_the_narrow_accumulator)
{
    /* 70000 elements of 65535 sum past 2^32: the 64-bit tier. */
    const uint64_t n = 70000;
    uint16_t *a = malloc(n * sizeof *a);
    for (uint64_t i = 0; i < n; i++)
        a[i] = 65535;
    uint16_t o[2];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_U16, a, n, n, o, NULL), SL_OK);
    cr_assert_eq(o[0], 65535);
    /* Exactly 65536 elements: the 32-bit tier at its limit. */
    a[0] = 65534;
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_U16, a, 65536, 65536, o, NULL), SL_OK);
    cr_assert_eq(o[0], 65535);
    const int16_t *b = (const int16_t *)a; /* all -1, but one -2 */
    int16_t ob[1];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_I16, b, n, n, ob, NULL), SL_OK);
    cr_assert_eq(ob[0], -1);
    free(a);
}

Test(ops_downsample_values, mean_tier_follows_element_size_and_block_size)
{
    cr_assert_eq(sl__ds_mean_tier(1, 65536), SL__DS_TIER_32);
    cr_assert_eq(sl__ds_mean_tier(2, 65536), SL__DS_TIER_32);
    cr_assert_eq(sl__ds_mean_tier(2, 65537), SL__DS_TIER_64);
    cr_assert_eq(sl__ds_mean_tier(4, 2), SL__DS_TIER_64);
    cr_assert_eq(sl__ds_mean_tier(4, (uint64_t)1 << 32), SL__DS_TIER_64);
    cr_assert_eq(sl__ds_mean_tier(4, ((uint64_t)1 << 32) + 1), SL__DS_TIER_128);
    cr_assert_eq(sl__ds_mean_tier(8, 1), SL__DS_TIER_128);
}

Test(ops_downsample_values, u128_division_matches_the_compiler)
{
    uint64_t s = 99;
    for (int i = 0; i < 20000; i++) {
        uint64_t d = ref_rand(&s) >> ref_below(&s, 64);
        if (d == 0)
            d = 1;
        const uint64_t hi = ref_rand(&s) % d, lo = ref_rand(&s);
        const ref_u128 n = ((ref_u128)hi << 64) | lo;
        uint64_t r1, r2;
        const uint64_t q1 = sl__u128_divmod_portable(hi, lo, d, &r1);
        const uint64_t q2 = sl__u128_divmod((struct sl__u128){.lo = lo, .hi = hi}, d, &r2);
        cr_assert(q1 == (uint64_t)(n / d) && r1 == (uint64_t)(n % d), "hi %" PRIx64 " d %" PRIx64,
                  hi, d);
        cr_assert(q2 == q1 && r2 == r1);
    }
    uint64_t r;
    cr_assert_eq(sl__u128_divmod_portable(UINT64_MAX - 1, UINT64_MAX, UINT64_MAX, &r), UINT64_MAX);
    cr_assert_eq(r, UINT64_MAX - 1);
}

Test(ops_downsample_values, bool_mean_median_and_mode_are_the_majority_ties_false)
{
    /* Blocks of 2: {1,0} a tie, {1,1}, {7,7} (byte 7 reads as true), {0,0};
     * blocks of 3: {1,0,1} and {1,7,7}. */
    const uint8_t a[] = {1, 0, 1, 1, 7, 7, 0, 0};
    uint8_t o[4];
    for (int m = SL_DOWNSAMPLE_MEAN; m <= SL_DOWNSAMPLE_MODE; m++) {
        if (m == SL_DOWNSAMPLE_MIN || m == SL_DOWNSAMPLE_MAX)
            continue;
        cr_assert_eq(ds1((sl_downsample_method)m, SL_DTYPE_BOOL, a, 8, 2, o, NULL), SL_OK);
        cr_assert(o[0] == 0 && o[1] == 1 && o[2] == 1 && o[3] == 0, "%s: %d %d %d %d",
                  sl_downsample_method_name((sl_downsample_method)m), o[0], o[1], o[2], o[3]);
        cr_assert_eq(ds1((sl_downsample_method)m, SL_DTYPE_BOOL, a, 6, 3, o, NULL), SL_OK);
        cr_assert(o[0] == 1 && o[1] == 1, "%s", sl_downsample_method_name((sl_downsample_method)m));
    }
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MAX, SL_DTYPE_BOOL, a, 8, 4, o, NULL), SL_OK);
    cr_assert(o[0] == 1 && o[1] == 1, "max of bools is 0 or 1, never 7");
}

Test(ops_downsample_values, float_mean_propagates_nan)
{
    const float a[] = {NAN, 1, INFINITY, 1, INFINITY, -INFINITY, 0.5f, 0.25f};
    float o[4];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_F32, a, 8, 2, o, NULL), SL_OK);
    cr_assert(isnan(o[0]));
    cr_assert(isinf(o[1]) && o[1] > 0);
    cr_assert(isnan(o[2]), "inf + -inf is NaN");
    cr_assert_eq(o[3], 0.375f);
    /* float32 means are summed in double: no loss with large and small. */
    const float b[] = {16777216.0f, 1.0f, 1.0f, 0.0f};
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_F32, b, 4, 4, o, NULL), SL_OK);
    cr_assert_eq(o[0], 4194304.5f);
}

Test(ops_downsample_values, min_max_median_mode_ignore_nan_unless_all_nan)
{
    const double a[] = {NAN, 3, 1, NAN, NAN, NAN, 4, NAN, 2, NAN, 5, 1};
    double o[3];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MIN, SL_DTYPE_F64, a, 12, 4, o, NULL), SL_OK);
    cr_assert(o[0] == 1 && isnan(o[1]) == 0 && o[1] == 4 && o[2] == 1);
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MAX, SL_DTYPE_F64, a, 12, 4, o, NULL), SL_OK);
    cr_assert(o[0] == 3 && o[1] == 4 && o[2] == 5);
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEDIAN, SL_DTYPE_F64, a, 12, 4, o, NULL), SL_OK);
    cr_assert(o[0] == 1 && o[1] == 4 && o[2] == 2, "%g %g %g", o[0], o[1], o[2]);
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MODE, SL_DTYPE_F64, a, 12, 4, o, NULL), SL_OK);
    cr_assert(o[0] == 1 && o[1] == 4 && o[2] == 1, "%g %g %g", o[0], o[1], o[2]);

    const float n[] = {NAN, NAN, NAN, NAN};
    float on[1];
    for (int m = SL_DOWNSAMPLE_MEAN; m <= SL_DOWNSAMPLE_MODE; m++) {
        cr_assert_eq(ds1((sl_downsample_method)m, SL_DTYPE_F32, n, 4, 4, on, NULL), SL_OK);
        cr_assert(isnan(on[0]), "%s of all NaN",
                  sl_downsample_method_name((sl_downsample_method)m));
    }
}

Test(ops_downsample_values, negative_zero_orders_below_positive_zero)
{
    const float a[] = {0.0f, -0.0f, -0.0f, 0.0f};
    float o[2];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MIN, SL_DTYPE_F32, a, 4, 2, o, NULL), SL_OK);
    cr_assert(signbit(o[0]) && signbit(o[1]), "min of {+0, -0} is -0 either way");
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MAX, SL_DTYPE_F32, a, 4, 2, o, NULL), SL_OK);
    cr_assert(!signbit(o[0]) && !signbit(o[1]), "max of {+0, -0} is +0 either way");
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEDIAN, SL_DTYPE_F32, a, 4, 2, o, NULL), SL_OK);
    cr_assert(signbit(o[0]) && signbit(o[1]), "lower median of {-0, +0} is -0");
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MODE, SL_DTYPE_F32, a, 2, 2, o, NULL), SL_OK);
    cr_assert(signbit(o[0]), "a tie of -0 and +0 goes to -0");
    const double b[] = {0.0, -0.0, 0.0};
    double ob[1];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MODE, SL_DTYPE_F64, b, 3, 3, ob, NULL), SL_OK);
    cr_assert(!signbit(ob[0]), "+0 twice beats -0 once");
}

Test(ops_downsample_values, median_is_the_lower_median)
{
    const int32_t a[] = {4, 3, 1, 2, 9, -7, 5, 5, 5, -7};
    int32_t o[3];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEDIAN, SL_DTYPE_I32, a, 10, 4, o, NULL), SL_OK);
    cr_assert_eq(o[0], 2, "TensorStore's example: median of [4, 3, 1, 2] is 2");
    cr_assert_eq(o[1], 5, "[9, -7, 5, 5] sorted is [-7, 5, 5, 9]");
    cr_assert_eq(o[2], -7, "the edge block [5, -7]");
}

Test(ops_downsample_values, mode_breaks_ties_toward_the_lowest_value)
{
    const int16_t a[] = {3, 3, 1, 1, 2, 5, 5, 2, 9, 9, 2, -4};
    int16_t o[2];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MODE, SL_DTYPE_I16, a, 12, 6, o, NULL), SL_OK);
    cr_assert_eq(o[0], 1, "3, 1 twice each: the lower wins");
    cr_assert_eq(o[1], 2, "2 and 9 twice each");
    const uint64_t b[] = {UINT64_MAX, UINT64_MAX, 0, 7, 7, 7};
    uint64_t ob[1];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MODE, SL_DTYPE_U64, b, 6, 6, ob, NULL), SL_OK);
    cr_assert_eq(ob[0], 7);
}

Test(ops_downsample_values, rank_zero_and_empty_views)
{
    struct sl_downsample_params p = {.method = SL_DOWNSAMPLE_MEAN, .rank = 0};
    int32_t x = -5, y = 0;
    struct sl_view vi, vo;
    cr_assert_eq(sl_view_init(&vi, SL_DTYPE_I32, 0, NULL, &x, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, SL_DTYPE_I32, 0, NULL, &y, NULL), SL_OK);
    cr_assert_eq(sl_downsample(&p, &vi, &vo, NULL, 0, NULL), SL_OK);
    cr_assert_eq(y, -5);

    const uint64_t shape[2] = {0, 5}, oshape[2] = {0, 3};
    struct sl_downsample_params q = {.method = SL_DOWNSAMPLE_MEDIAN, .rank = 2, .factor = {2, 2}};
    cr_assert_eq(sl_view_init(&vi, SL_DTYPE_U8, 2, shape, NULL, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, SL_DTYPE_U8, 2, oshape, NULL, NULL), SL_OK);
    unsigned char scratch[8];
    cr_assert_eq(sl_downsample(&q, &vi, &vo, scratch, sizeof scratch, NULL), SL_OK);
}

Test(ops_downsample_values, float16_and_complex_stride_but_refuse_arithmetic)
{
    const uint16_t h[] = {0x3c00, 0x4000, 0x4200};
    uint16_t oh[2] = {0, 0};
    cr_assert_eq(ds1(SL_DOWNSAMPLE_STRIDE, SL_DTYPE_F16, h, 3, 2, oh, NULL), SL_OK);
    cr_assert(oh[0] == 0x3c00 && oh[1] == 0x4200);
    const double c[] = {1, 2, 3, 4};
    double oc[2];
    cr_assert_eq(ds1(SL_DOWNSAMPLE_STRIDE, SL_DTYPE_C128, c, 2, 2, oc, NULL), SL_OK);
    cr_assert(oc[0] == 1 && oc[1] == 2);

    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MEAN, SL_DTYPE_F16, h, 3, 2, oh, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "\"mean\" does not support dtype float16"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(ds1(SL_DOWNSAMPLE_MODE, SL_DTYPE_C64, c, 2, 2, oc, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "complex64"), "%s", err.text);
    cr_assert(sl_downsample_supports(SL_DOWNSAMPLE_STRIDE, SL_DTYPE_C64));
    cr_assert_not(sl_downsample_supports(SL_DOWNSAMPLE_MIN, SL_DTYPE_F16));
    cr_assert_not(sl_downsample_supports((sl_downsample_method)99, SL_DTYPE_U8));
}

Test(ops_downsample_values, bad_calls_name_what_is_wrong_and_leave_output_alone)
{
    uint16_t in[15] = {0}, out[8];
    memset(out, 0xAB, sizeof out);
    const uint64_t shape[2] = {3, 5}, oshape[2] = {2, 3}, bad[2] = {2, 2};
    struct sl_view vi, vo, vb;
    cr_assert_eq(sl_view_init(&vi, SL_DTYPE_U16, 2, shape, in, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, SL_DTYPE_U16, 2, oshape, out, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vb, SL_DTYPE_U16, 2, bad, out, NULL), SL_OK);
    struct sl_downsample_params p = {.method = SL_DOWNSAMPLE_MEDIAN, .rank = 2, .factor = {2, 2}};
    struct sl_error err = SL_ERROR_INIT;

    cr_assert_eq(sl_downsample(&p, &vi, &vb, NULL, 0, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "extent 2 in dimension 1 should be 3 = ceil(5 / 2)"), "%s",
                       err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_downsample(&p, &vi, &vo, NULL, 0, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "scratch of 0 bytes"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "need 9"), "%s", err.text);
    err = SL_ERROR_INIT;
    p.factor[1] = 0;
    cr_assert_eq(sl_downsample(&p, &vi, &vo, NULL, 0, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "factor 0 in dimension 1"), "%s", err.text);
    err = SL_ERROR_INIT;
    p.factor[1] = 2;
    p.rank = 3;
    cr_assert_eq(sl_downsample(&p, &vi, &vo, NULL, 0, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "3 factors for input of rank 2"), "%s", err.text);
    err = SL_ERROR_INIT;
    p.rank = 2;
    p.method = SL_DOWNSAMPLE_MEAN;
    struct sl_view alias = vi;
    alias.shape[0] = 2;
    alias.shape[1] = 3;
    cr_assert_eq(sl_downsample(&p, &vi, &alias, NULL, 0, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "overlaps"), "%s", err.text);
    err = SL_ERROR_INIT;
    vb.dtype = SL_DTYPE_I16;
    vb.shape[1] = 3;
    cr_assert_eq(sl_downsample(&p, &vi, &vb, NULL, 0, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "output int16 of rank 2 for input uint16"), "%s", err.text);
    for (size_t i = 0; i < 8; i++)
        cr_assert_eq(out[i], 0xABAB, "output touched by a failed call");
    cr_assert_eq(sl_downsample(NULL, &vi, &vo, NULL, 0, NULL), SL_EINVAL);
    cr_assert_eq(sl_downsample(&p, NULL, &vo, NULL, 0, NULL), SL_EINVAL);
}

Test(ops_downsample_values, scratch_size_covers_one_block)
{
    struct sl_downsample_params p = {
        .method = SL_DOWNSAMPLE_MEDIAN, .rank = 3, .factor = {2, 2, 2}};
    size_t n;
    cr_assert_eq(sl_downsample_scratch_bytes(&p, SL_DTYPE_U16, NULL, &n, NULL), SL_OK);
    cr_assert_eq(n, 8 * 2 + 1);
    const uint64_t small[3] = {1, 5, 5};
    cr_assert_eq(sl_downsample_scratch_bytes(&p, SL_DTYPE_F64, small, &n, NULL), SL_OK);
    cr_assert_eq(n, 4 * 8 + 7, "blocks are capped by the extent");
    p.method = SL_DOWNSAMPLE_MEAN;
    cr_assert_eq(sl_downsample_scratch_bytes(&p, SL_DTYPE_U16, NULL, &n, NULL), SL_OK);
    cr_assert_eq(n, 0);
    struct sl_downsample_params q = {
        .method = SL_DOWNSAMPLE_MODE, .rank = 2, .factor = {(uint64_t)1 << 40, (uint64_t)1 << 30}};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_downsample_scratch_bytes(&q, SL_DTYPE_U8, NULL, &n, &err), SL_EOVERFLOW);
}

Test(ops_downsample_values, method_names_round_trip)
{
    for (int m = 0; m < SL_DOWNSAMPLE_METHOD_COUNT_; m++) {
        sl_downsample_method back;
        cr_assert_eq(sl_downsample_method_from_name(
                         sl_downsample_method_name((sl_downsample_method)m), &back, NULL),
                     SL_OK);
        cr_assert_eq(back, m);
    }
    struct sl_error err = SL_ERROR_INIT;
    sl_downsample_method m;
    cr_assert_eq(sl_downsample_method_from_name("avg", &m, &err), SL_EINVAL);
    cr_assert_str_eq(err.text,
                     "unknown downsample method \"avg\"; known: stride, mean, min, max, median, "
                     "mode");
    cr_assert_str_eq(sl_downsample_method_name((sl_downsample_method)42), "invalid");
}

Test(ops_downsample_values, input_region_scales_and_clips)
{
    struct sl_downsample_params p = {.method = SL_DOWNSAMPLE_MEAN, .rank = 2, .factor = {2, 3}};
    const uint64_t in_shape[2] = {9, 10}; /* output 5 x 4 */
    struct sl_region out = {.rank = 2, .start = {1, 2}, .stop = {5, 4}}, in;
    cr_assert_eq(sl_downsample_input_region(&p, in_shape, &out, &in, NULL), SL_OK);
    cr_assert(in.start[0] == 2 && in.stop[0] == 9 && in.start[1] == 6 && in.stop[1] == 10);
    struct sl_region edge = {.rank = 2, .start = {5, 0}, .stop = {5, 4}};
    cr_assert_eq(sl_downsample_input_region(&p, in_shape, &edge, &in, NULL), SL_OK);
    cr_assert(in.start[0] == 9 && in.stop[0] == 9, "an empty region at the edge stays inside");
    struct sl_region outside = {.rank = 2, .start = {0, 0}, .stop = {6, 1}};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_downsample_input_region(&p, in_shape, &outside, &in, &err), SL_EBOUNDS);
}
