/* SPDX-License-Identifier: MIT */
/*
 * scale, clip and threshold: every input dtype into several output dtypes
 * against the reference on random strided views, chosen values at the
 * edges of exactness, in-place use, and parameter errors naming the
 * parameter and its value.
 */
#include <criterion/criterion.h>
#include <math.h>

#include <sluice.h>

#include "ops_reference.h"

TestSuite(ops_elementwise, .timeout = 20.0);

enum which { SCALE, CLIP, THRESHOLD };

/* The reference result for element x of dtype `from`. */
static long double
expect(enum which w, sl_dtype from, long double x, sl_dtype to, double a, double b)
{
    switch (w) {
    case SCALE:
        return ref_cast_value((long double)((double)x * a + b), to);
    case CLIP:
        if (!ref_is_float(from)) { /* bounds rounded inward */
            a = ceil(a);
            b = floor(b);
        }
        return ref_cast_value(isnan(x) ? x : x < a ? a : x > b ? b : x, to);
    default:
        return x > (long double)a ? ref_cast_value(b, to) : 0;
    }
}

static sl_status
apply(enum which w, const struct sl_view *in, const struct sl_view *out, double a, double b,
      struct sl_error *err)
{
    switch (w) {
    case SCALE:
        return sl_scale(in, out, a, b, err);
    case CLIP:
        return sl_clip(in, out, a, b, err);
    default:
        return sl_threshold(in, out, a, b, err);
    }
}

/* Every input dtype into every output dtype, with parameters p[k]. */
static void
check_all(enum which w, const double (*p)[2], size_t n_params)
{
    uint64_t s = 77 + w;
    for (unsigned from = 0; from < SL_DTYPE_COUNT_; from++) {
        for (unsigned to = 0; to < SL_DTYPE_COUNT_; to++) {
            if (!sl_dtype_is_real((sl_dtype)from) || !sl_dtype_is_real((sl_dtype)to))
                continue;
            for (size_t k = 0; k < n_params; k++) {
                const double a = p[k][0], b = p[k][1];
                if (w == CLIP && !ref_is_float((sl_dtype)from) && ceil(a) > floor(b))
                    continue;
                const uint64_t shape[2] = {4, 67};
                struct ref_buf in, out;
                ref_buf_make(&in, (sl_dtype)from, 2, shape, k % 2 == 0, &s);
                ref_buf_make(&out, (sl_dtype)to, 2, shape, false, &s);
                ref_fill(&in.view, &s, k % 3 == 2);
                if (ref_is_float((sl_dtype)from)) { /* some NaN and infinities */
                    ref_put((sl_dtype)from, in.view.data, 0, NAN);
                    ref_put((sl_dtype)from, in.view.data, in.view.stride[1], INFINITY);
                    ref_put((sl_dtype)from, in.view.data, 2 * in.view.stride[1], -INFINITY);
                }
                struct sl_error err = SL_ERROR_INIT;
                cr_assert_eq(apply(w, &in.view, &out.view, a, b, &err), SL_OK, "%s", err.text);
                uint64_t idx[2] = {0, 0};
                do {
                    const long double x =
                        ref_get((sl_dtype)from, in.view.data, ref_offset(&in.view, idx));
                    const long double want = expect(w, (sl_dtype)from, x, (sl_dtype)to, a, b);
                    const long double got =
                        ref_get((sl_dtype)to, out.view.data, ref_offset(&out.view, idx));
                    cr_assert(isnan(want) ? isnan(got) : got == want,
                              "%d %s %.21Lg -> %s (%g, %g): got %.21Lg want %.21Lg", w,
                              sl_dtype_name(from), x, sl_dtype_name(to), a, b, got, want);
                } while (ref_next(idx, shape, 2));
                ref_buf_free(&in);
                ref_buf_free(&out);
            }
        }
    }
}

Test(ops_elementwise, scale_matches_the_reference)
{
    const double p[][2] = {{1, 0}, {0.5, 0.25}, {-3, 100.5}, {1e-3, -7}, {1e6, 0}};
    check_all(SCALE, p, sizeof p / sizeof p[0]);
}

Test(ops_elementwise, clip_matches_the_reference)
{
    const double p[][2] = {{-INFINITY, INFINITY}, {10.5, 20.5}, {-3, 3},    {0, 1},
                           {-1e30, 1e30},         {1e10, 1e12}, {-0.5, 0.5}};
    check_all(CLIP, p, sizeof p / sizeof p[0]);
}

Test(ops_elementwise, threshold_matches_the_reference)
{
    const double p[][2] = {{0, 1}, {1.5, 300}, {-0.5, 7}, {1e30, 1}, {-1e30, -2.5}, {100, 1}};
    check_all(THRESHOLD, p, sizeof p / sizeof p[0]);
}

Test(ops_elementwise, threshold_compares_integers_exactly)
{
    const int64_t a[4] = {INT64_MAX, INT64_MAX - 1, INT64_MIN, 0};
    uint8_t o[4];
    const uint64_t shape[1] = {4};
    struct sl_view vi, vo;
    cr_assert_eq(sl_view_init(&vi, SL_DTYPE_I64, 1, shape, (void *)a, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, SL_DTYPE_U8, 1, shape, o, NULL), SL_OK);
    /* 2^63 - 1024 is a double; INT64_MAX - 1 lies above it. */
    cr_assert_eq(sl_threshold(&vi, &vo, 9223372036854774784.0, 9, NULL), SL_OK);
    cr_assert(o[0] == 9 && o[1] == 9 && o[2] == 0 && o[3] == 0);
    cr_assert_eq(sl_threshold(&vi, &vo, 0x1p63, 1, NULL), SL_OK);
    cr_assert(o[0] == 0 && o[1] == 0, "nothing exceeds 2^63");
    cr_assert_eq(sl_threshold(&vi, &vo, -0x1p64, 1, NULL), SL_OK);
    cr_assert(o[0] == 1 && o[1] == 1 && o[2] == 1 && o[3] == 1);
    cr_assert_eq(sl_threshold(&vi, &vo, -0x1p63, 1, NULL), SL_OK);
    cr_assert(o[2] == 0, "INT64_MIN is not above -2^63");
}

Test(ops_elementwise, clip_in_place_keeps_integers_within_the_bounds)
{
    uint8_t buf[6] = {0, 10, 11, 15, 20, 255};
    const uint64_t shape[1] = {6};
    struct sl_view v;
    cr_assert_eq(sl_view_init(&v, SL_DTYPE_U8, 1, shape, buf, NULL), SL_OK);
    cr_assert_eq(sl_clip(&v, &v, 10.5, 19.9, NULL), SL_OK);
    const uint8_t want[6] = {11, 11, 11, 15, 19, 19};
    cr_assert_arr_eq(buf, want, 6);
}

Test(ops_elementwise, bad_parameters_are_named_with_their_values)
{
    float a[3] = {1, 2, 3}, o[3];
    const uint64_t shape[1] = {3};
    struct sl_view vi, vo;
    cr_assert_eq(sl_view_init(&vi, SL_DTYPE_F32, 1, shape, a, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, SL_DTYPE_F32, 1, shape, o, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_scale(&vi, &vo, NAN, 0, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "scale: parameter \"scale\" is nan (it must be finite)");
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_scale(&vi, &vo, 1, INFINITY, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "scale: parameter \"offset\" is inf (it must be finite)");
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_clip(&vi, &vo, 5, 3, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "clip: parameter \"min\" 5 is above \"max\" 3");
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_clip(&vi, &vo, 0, NAN, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "clip: parameter \"max\" is NaN");
    cr_assert_eq(sl_clip(&vi, &vo, 0.2, 0.8, NULL), SL_OK, "floats hold values in [0.2, 0.8]");
    vi.dtype = vo.dtype = SL_DTYPE_I32;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_clip(&vi, &vo, 0.2, 0.8, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "clip: no int32 value lies in [min, max] = [0.2, 0.8]");
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_threshold(&vi, &vo, NAN, 1, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "threshold: parameter \"threshold\" is NaN");
    vo.dtype = SL_DTYPE_C64;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_threshold(&vi, &vo, 1, 1, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "complex64"), "%s", err.text);
}
