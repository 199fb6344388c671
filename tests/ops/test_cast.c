/* SPDX-License-Identifier: MIT */
/*
 * Casts between every pair of kernel dtypes: a table of rounding and
 * saturation cases with the expected results written out, and every pair
 * against the reference on random and special values through strided
 * views.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>

#include <sluice.h>

#include "ops_reference.h"

TestSuite(ops_cast, .timeout = 20.0);

/* Cast one value of `from` to `to` through 1-element views. */
static long double
cast1(sl_dtype from, long double v, sl_dtype to)
{
    unsigned char a[16] = {0}, b[16] = {0};
    ref_put(from, a, 0, v);
    struct sl_view vi, vo;
    cr_assert_eq(sl_view_init(&vi, from, 0, NULL, a, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, to, 0, NULL, b, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_cast(&vi, &vo, &err), SL_OK, "%s", err.text);
    if (to == SL_DTYPE_BOOL)
        cr_assert(b[0] <= 1, "bool outputs are 0 or 1");
    return ref_get(to, b, 0);
}

/* One row of the table: from, value, to, expected. */
struct cast_case {
    sl_dtype from;
    long double v;
    sl_dtype to;
    long double want;
};

#define P63 9223372036854775808.0L
#define P64 18446744073709551616.0L

static const struct cast_case cases[] = {
    /* float -> integer: round half to even */
    {SL_DTYPE_F64, 0.5, SL_DTYPE_U8, 0},
    {SL_DTYPE_F64, 1.5, SL_DTYPE_U8, 2},
    {SL_DTYPE_F64, 2.5, SL_DTYPE_U8, 2},
    {SL_DTYPE_F64, 2.5000001, SL_DTYPE_U8, 3},
    {SL_DTYPE_F64, 254.5, SL_DTYPE_U8, 254},
    {SL_DTYPE_F32, -1.5f, SL_DTYPE_I8, -2},
    {SL_DTYPE_F32, -2.5f, SL_DTYPE_I8, -2},
    {SL_DTYPE_F64, -0.5, SL_DTYPE_I32, 0},
    {SL_DTYPE_F64, -0.5, SL_DTYPE_U32, 0},
    /* float -> integer: saturate, NaN to 0 */
    {SL_DTYPE_F64, 255.5, SL_DTYPE_U8, 255},
    {SL_DTYPE_F64, 300, SL_DTYPE_U8, 255},
    {SL_DTYPE_F64, -1, SL_DTYPE_U8, 0},
    {SL_DTYPE_F64, 127.5, SL_DTYPE_I8, 127},
    {SL_DTYPE_F64, -128.5, SL_DTYPE_I8, -128},
    {SL_DTYPE_F64, -129, SL_DTYPE_I8, -128},
    {SL_DTYPE_F64, NAN, SL_DTYPE_I16, 0},
    {SL_DTYPE_F32, NAN, SL_DTYPE_U64, 0},
    {SL_DTYPE_F64, INFINITY, SL_DTYPE_U16, 65535},
    {SL_DTYPE_F64, -INFINITY, SL_DTYPE_I16, -32768},
    {SL_DTYPE_F64, P63, SL_DTYPE_I64, (long double)INT64_MAX},
    {SL_DTYPE_F64, -P63, SL_DTYPE_I64, (long double)INT64_MIN},
    {SL_DTYPE_F64, 1e30, SL_DTYPE_I64, (long double)INT64_MAX},
    {SL_DTYPE_F64, 4611686018427387904.0, SL_DTYPE_I64, 4611686018427387904.0L},
    {SL_DTYPE_F64, P64, SL_DTYPE_U64, (long double)UINT64_MAX},
    {SL_DTYPE_F64, 18000000000000000000.0, SL_DTYPE_U64, 18000000000000000000.0L},
    {SL_DTYPE_F32, 4294967296.0f, SL_DTYPE_U32, 4294967295.0L},
    /* integer -> narrower integer: saturate */
    {SL_DTYPE_I16, -5, SL_DTYPE_U8, 0},
    {SL_DTYPE_I16, 300, SL_DTYPE_U8, 255},
    {SL_DTYPE_I32, -40000, SL_DTYPE_I16, -32768},
    {SL_DTYPE_U64, (long double)UINT64_MAX, SL_DTYPE_I64, (long double)INT64_MAX},
    {SL_DTYPE_I64, -1, SL_DTYPE_U64, 0},
    {SL_DTYPE_I64, (long double)INT64_MIN, SL_DTYPE_U8, 0},
    {SL_DTYPE_U32, 4294967295.0L, SL_DTYPE_I32, 2147483647},
    {SL_DTYPE_I8, -128, SL_DTYPE_I64, -128},
    /* integer -> float: round to nearest, once */
    {SL_DTYPE_I64, 1152921573326323713.0L /* 2^60 + 2^36 + 1 */, SL_DTYPE_F32,
     1152921642045800448.0L /* 2^60 + 2^37 */},
    {SL_DTYPE_U64, (long double)UINT64_MAX, SL_DTYPE_F32, P64},
    {SL_DTYPE_U64, (long double)UINT64_MAX, SL_DTYPE_F64, P64},
    {SL_DTYPE_I32, 16777217, SL_DTYPE_F32, 16777216},
    {SL_DTYPE_I64, 9007199254740993.0L, SL_DTYPE_F64, 9007199254740992.0L},
    /* float -> float */
    {SL_DTYPE_F64, 1e300, SL_DTYPE_F32, INFINITY},
    {SL_DTYPE_F64, -1e300, SL_DTYPE_F32, -INFINITY},
    {SL_DTYPE_F64, 0.1, SL_DTYPE_F32, 0.1f},
    {SL_DTYPE_F32, 0.1f, SL_DTYPE_F64, (double)0.1f},
    /* bool */
    {SL_DTYPE_F64, 0.3, SL_DTYPE_BOOL, 1},
    {SL_DTYPE_F64, -0.0, SL_DTYPE_BOOL, 0},
    {SL_DTYPE_F32, NAN, SL_DTYPE_BOOL, 1},
    {SL_DTYPE_I64, 2, SL_DTYPE_BOOL, 1},
    {SL_DTYPE_U8, 0, SL_DTYPE_BOOL, 0},
    {SL_DTYPE_BOOL, 1, SL_DTYPE_F32, 1},
    {SL_DTYPE_BOOL, 1, SL_DTYPE_I8, 1},
};

Test(ops_cast, rounding_and_saturation_table)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct cast_case *c = &cases[i];
        const long double got = cast1(c->from, c->v, c->to);
        cr_assert(got == c->want || (isnan(got) && isnan(c->want)),
                  "row %zu: %s %.21Lg -> %s gave %.21Lg, want %.21Lg", i, sl_dtype_name(c->from),
                  c->v, sl_dtype_name(c->to), got, c->want);
    }
    cr_assert(isnan(cast1(SL_DTYPE_F64, NAN, SL_DTYPE_F32)));
    cr_assert(signbit(cast1(SL_DTYPE_F64, -0.0, SL_DTYPE_F32)));
}

/* Values worth trying for each source dtype, beyond random ones. */
static const long double specials[] = {
    0,        -0.0,          0.5,           -0.5,          1.5,
    -1.5,     2.5,           -2.5,          127.5,         128,
    -128.5,   -129,          255.5,         256,           32767.5,
    65535.5,  2147483647.5L, 4294967295.5L, 4294967296.0L, 9007199254740993.0L,
    P63,      -P63,          P64,           1e30,          -1e30,
    INFINITY, -INFINITY,     NAN,
};

Test(ops_cast, every_pair_matches_the_reference)
{
    const size_t n_special = sizeof specials / sizeof specials[0];
    const uint64_t n = 257; /* odd, past one tile */
    uint64_t s = 1234;
    for (unsigned from = 0; from < SL_DTYPE_COUNT_; from++) {
        if (!sl_dtype_is_real((sl_dtype)from))
            continue;
        for (unsigned to = 0; to < SL_DTYPE_COUNT_; to++) {
            if (!sl_dtype_is_real((sl_dtype)to))
                continue;
            const uint64_t shape[2] = {3, n};
            struct ref_buf in, out;
            ref_buf_make(&in, (sl_dtype)from, 2, shape, false, &s);
            ref_buf_make(&out, (sl_dtype)to, 2, shape, (to + from) % 2 == 0, &s);
            ref_fill(&in.view, &s, false);
            /* Row 0 holds the specials, as the source type holds them. */
            for (uint64_t j = 0; j < n_special; j++) {
                long double v = specials[j];
                if (!ref_is_float((sl_dtype)from))
                    v = ref_cast_value(v, (sl_dtype)from);
                ref_put((sl_dtype)from, in.view.data, (ptrdiff_t)j * in.view.stride[1], v);
            }
            struct sl_error err = SL_ERROR_INIT;
            cr_assert_eq(sl_cast(&in.view, &out.view, &err), SL_OK, "%s", err.text);
            uint64_t idx[2] = {0, 0};
            do {
                const ptrdiff_t io = ref_offset(&in.view, idx), oo = ref_offset(&out.view, idx);
                const long double x = ref_get((sl_dtype)from, in.view.data, io);
                const long double want = ref_cast_value(x, (sl_dtype)to);
                const long double got = ref_get((sl_dtype)to, out.view.data, oo);
                const bool same = isnan(want) ? isnan(got)
                                              : got == want && (!ref_is_float((sl_dtype)to) ||
                                                                signbit(got) == signbit(want));
                cr_assert(same, "%s %.21Lg -> %s: got %.21Lg want %.21Lg", sl_dtype_name(from), x,
                          sl_dtype_name(to), got, want);
            } while (ref_next(idx, shape, 2));
            ref_buf_free(&in);
            ref_buf_free(&out);
        }
    }
}

Test(ops_cast, in_place_on_the_same_view)
{
    int16_t buf[5] = {-3, 0, 7, -32768, 32767};
    const uint64_t shape[1] = {5};
    struct sl_view a, b;
    cr_assert_eq(sl_view_init(&a, SL_DTYPE_I16, 1, shape, buf, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&b, SL_DTYPE_U16, 1, shape, buf, NULL), SL_OK);
    cr_assert_eq(sl_cast(&a, &b, NULL), SL_OK);
    const uint16_t *u = (const uint16_t *)buf;
    cr_assert(u[0] == 0 && u[1] == 0 && u[2] == 7 && u[3] == 0 && u[4] == 32767);
    cr_assert_eq(sl_cast(&b, &b, NULL), SL_OK, "same dtype, same view: nothing to do");
}

Test(ops_cast, refuses_storage_only_dtypes_and_mismatches)
{
    uint16_t h[4] = {0}, o[8] = {0};
    const uint64_t shape[1] = {4}, other[1] = {3};
    struct sl_view vh, vo, vs;
    cr_assert_eq(sl_view_init(&vh, SL_DTYPE_F16, 1, shape, h, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, SL_DTYPE_F32, 1, shape, o, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_cast(&vh, &vo, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "cast does not support dtype float16"), "%s", err.text);
    vh.dtype = SL_DTYPE_U16;
    cr_assert_eq(sl_view_init(&vs, SL_DTYPE_F32, 1, other, o, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_cast(&vh, &vs, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "cast: output shape [3] differs from input shape [4]"),
                       "%s", err.text);
    /* Overlapping but not the same view. */
    struct sl_view shifted = vo;
    shifted.data = (unsigned char *)o + 2;
    shifted.dtype = SL_DTYPE_I32;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_cast(&vo, &shifted, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "overlaps"), "%s", err.text);
    cr_assert_eq(sl_cast(NULL, &vo, NULL), SL_EINVAL);
}
