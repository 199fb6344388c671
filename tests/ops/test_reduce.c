/* SPDX-License-Identifier: MIT */
/*
 * Reductions: method names and numpy's default dtypes, parameter and view
 * errors with their messages, every method on small hand-checked values,
 * the NaN rules, empty extents, strided and reversed inputs, and the state
 * path split several ways against the direct form.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include <sluice.h>
#include <sluice/reduce.h>

TestSuite(ops_reduce, .timeout = 20.0);

/* Params for a reduction of `rank` dimensions along the axes in `mask`. */
static struct sl_reduce_params
params(sl_reduce_method m, sl_dtype in, sl_dtype out, uint32_t rank, unsigned mask)
{
    struct sl_reduce_params p = {.method = m, .in_dtype = in, .out_dtype = out, .rank = rank};
    for (uint32_t d = 0; d < rank; d++)
        p.reduced[d] = (mask >> d) & 1;
    return p;
}

/* Reduce the n doubles `x` (as one float64 axis) by `m` into one double. */
static sl_status
reduce1(sl_reduce_method m, const double *x, uint64_t n, double ddof, double *out,
        struct sl_error *err)
{
    struct sl_reduce_params p = params(m, SL_DTYPE_F64, SL_DTYPE_F64, 1, 1);
    p.ddof = ddof;
    struct sl_view in, o;
    const uint64_t one = 1;
    cr_assert_eq(sl_view_init(&in, SL_DTYPE_F64, 1, &n, (void *)x, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_F64, 1, &one, out, NULL), SL_OK);
    return sl_reduce_block(&p, &in, &o, err);
}

static double
r1(sl_reduce_method m, const double *x, uint64_t n)
{
    double v = -12345;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(reduce1(m, x, n, 0, &v, &err), SL_OK, "%s", err.text);
    return v;
}

Test(ops_reduce, names_round_trip_and_unknown_lists_known)
{
    for (unsigned m = 0; m < SL_REDUCE_METHOD_COUNT_; m++) {
        sl_reduce_method got;
        cr_assert_eq(sl_reduce_method_from_name(sl_reduce_method_name(m), &got, NULL), SL_OK);
        cr_assert_eq(got, m);
    }
    cr_assert_str_eq(sl_reduce_method_name(SL_REDUCE_METHOD_COUNT_), "invalid");
    struct sl_error err = SL_ERROR_INIT;
    sl_reduce_method got = SL_REDUCE_SUM;
    cr_assert_eq(sl_reduce_method_from_name("mx", &got, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "unknown reduce method \"mx\"; known: sum, prod, mean"),
                       "%s", err.text);
    cr_assert_not_null(strstr(err.text, "nanmax"), "%s", err.text);
}

Test(ops_reduce, default_dtypes_are_numpys)
{
    static const struct {
        sl_reduce_method m;
        sl_dtype in, out;
    } cases[] = {
        {SL_REDUCE_SUM, SL_DTYPE_BOOL, SL_DTYPE_I64},
        {SL_REDUCE_SUM, SL_DTYPE_I8, SL_DTYPE_I64},
        {SL_REDUCE_SUM, SL_DTYPE_U8, SL_DTYPE_U64},
        {SL_REDUCE_SUM, SL_DTYPE_F32, SL_DTYPE_F32},
        {SL_REDUCE_PROD, SL_DTYPE_U32, SL_DTYPE_U64},
        {SL_REDUCE_NANSUM, SL_DTYPE_I16, SL_DTYPE_I64},
        {SL_REDUCE_MEAN, SL_DTYPE_U16, SL_DTYPE_F64},
        {SL_REDUCE_MEAN, SL_DTYPE_F32, SL_DTYPE_F32},
        {SL_REDUCE_STD, SL_DTYPE_BOOL, SL_DTYPE_F64},
        {SL_REDUCE_VAR, SL_DTYPE_F64, SL_DTYPE_F64},
        {SL_REDUCE_NANMEAN, SL_DTYPE_I32, SL_DTYPE_F64},
        {SL_REDUCE_MIN, SL_DTYPE_U16, SL_DTYPE_U16},
        {SL_REDUCE_NANMAX, SL_DTYPE_I8, SL_DTYPE_I8},
        {SL_REDUCE_ANY, SL_DTYPE_F32, SL_DTYPE_BOOL},
        {SL_REDUCE_ALL, SL_DTYPE_U64, SL_DTYPE_BOOL},
        {SL_REDUCE_COUNT_NONZERO, SL_DTYPE_F64, SL_DTYPE_I64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_dtype got;
        cr_assert_eq(sl_reduce_default_dtype(cases[i].m, cases[i].in, &got, NULL), SL_OK);
        cr_assert_eq(got, cases[i].out, "%s of %s", sl_reduce_method_name(cases[i].m),
                     sl_dtype_name(cases[i].in));
    }
    struct sl_error err = SL_ERROR_INIT;
    sl_dtype got;
    cr_assert_eq(sl_reduce_default_dtype(SL_REDUCE_SUM, SL_DTYPE_F16, &got, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "reduce sum does not support input dtype float16"), "%s",
                       err.text);
}

Test(ops_reduce, check_names_bad_ddof_rank_and_dtype)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_reduce_params p = params(SL_REDUCE_VAR, SL_DTYPE_F64, SL_DTYPE_F64, 2, 1);
    cr_assert_eq(sl_reduce_check(&p, NULL), SL_OK);
    p.ddof = -1;
    cr_assert_eq(sl_reduce_check(&p, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "reduce var: ddof -1 must be finite"), "%s", err.text);
    p.ddof = NAN;
    cr_assert_eq(sl_reduce_check(&p, NULL), SL_EINVAL);
    p.ddof = 0;
    p.rank = SL_MAX_RANK + 1;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_reduce_check(&p, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "rank 17 exceeds 16"), "%s", err.text);
    p.rank = 2;
    p.out_dtype = SL_DTYPE_C64;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_reduce_check(&p, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "output dtype complex64"), "%s", err.text);
    p.out_dtype = SL_DTYPE_F64;
    p.method = SL_REDUCE_METHOD_COUNT_;
    cr_assert_eq(sl_reduce_check(&p, NULL), SL_EINVAL);
    p.method = SL_REDUCE_NANMIN; /* nan methods on ints are allowed */
    p.in_dtype = SL_DTYPE_I32;
    cr_assert_eq(sl_reduce_check(&p, NULL), SL_OK);
}

Test(ops_reduce, every_method_on_hand_checked_values)
{
    const double x[] = {3, -1, 4, 1, -5, 9};
    cr_assert_eq(r1(SL_REDUCE_SUM, x, 6), 11);
    cr_assert_eq(r1(SL_REDUCE_PROD, x, 6), 540);
    cr_assert_float_eq(r1(SL_REDUCE_MEAN, x, 6), 11.0 / 6, 1e-15);
    cr_assert_eq(r1(SL_REDUCE_MIN, x, 6), -5);
    cr_assert_eq(r1(SL_REDUCE_MAX, x, 6), 9);
    /* mean 11/6; squares 133; var = 133/6 - (11/6)^2 = 677/36 */
    cr_assert_float_eq(r1(SL_REDUCE_VAR, x, 6), 677.0 / 36, 1e-13);
    cr_assert_float_eq(r1(SL_REDUCE_STD, x, 6), sqrt(677.0 / 36), 1e-13);
    double v;
    cr_assert_eq(reduce1(SL_REDUCE_VAR, x, 6, 1, &v, NULL), SL_OK);
    cr_assert_float_eq(v, 677.0 / 30, 1e-13);
    cr_assert_eq(r1(SL_REDUCE_ANY, x, 6), 1);
    cr_assert_eq(r1(SL_REDUCE_ALL, x, 6), 1);
    cr_assert_eq(r1(SL_REDUCE_COUNT_NONZERO, x, 6), 6);
    const double z[] = {0, 0, 2};
    cr_assert_eq(r1(SL_REDUCE_ALL, z, 3), 0);
    cr_assert_eq(r1(SL_REDUCE_ANY, z, 2), 0);
    cr_assert_eq(r1(SL_REDUCE_COUNT_NONZERO, z, 3), 1);
}

Test(ops_reduce, nan_rules_follow_numpy)
{
    const double x[] = {1, NAN, -2, 4};
    cr_assert(isnan(r1(SL_REDUCE_SUM, x, 4)));
    cr_assert(isnan(r1(SL_REDUCE_MIN, x, 4)));
    cr_assert(isnan(r1(SL_REDUCE_MAX, x, 4)));
    cr_assert(isnan(r1(SL_REDUCE_MEAN, x, 4)));
    cr_assert(isnan(r1(SL_REDUCE_STD, x, 4)));
    cr_assert_eq(r1(SL_REDUCE_NANSUM, x, 4), 3);
    cr_assert_eq(r1(SL_REDUCE_NANMEAN, x, 4), 1);
    cr_assert_eq(r1(SL_REDUCE_NANMIN, x, 4), -2);
    cr_assert_eq(r1(SL_REDUCE_NANMAX, x, 4), 4);
    const double nan2[] = {NAN, 0, NAN};
    cr_assert(isnan(r1(SL_REDUCE_NANMIN, nan2, 1)));
    cr_assert(isnan(r1(SL_REDUCE_NANMEAN, nan2, 1)));
    cr_assert_eq(r1(SL_REDUCE_NANSUM, nan2, 1), 0);
    cr_assert_eq(r1(SL_REDUCE_ANY, nan2, 1), 1); /* NaN is true */
    cr_assert_eq(r1(SL_REDUCE_COUNT_NONZERO, nan2, 3), 2);
    const double inf[] = {INFINITY, 1, -INFINITY};
    cr_assert_eq(r1(SL_REDUCE_SUM, inf, 2), INFINITY);
    cr_assert(isnan(r1(SL_REDUCE_SUM, inf, 3)));
    /* -0.0 counts below +0.0 whatever the order. */
    const double zeros[] = {0.0, -0.0, 0.0};
    cr_assert(signbit(r1(SL_REDUCE_MIN, zeros, 3)));
    cr_assert(!signbit(r1(SL_REDUCE_MAX, zeros + 1, 2)));
    cr_assert(signbit(r1(SL_REDUCE_NANMIN, zeros, 2)));
}

Test(ops_reduce, compensated_sum_keeps_small_terms)
{
    const double x[] = {1e16, 1, -1e16, 1};
    cr_assert_eq(r1(SL_REDUCE_SUM, x, 4), 2);
    cr_assert_eq(r1(SL_REDUCE_MEAN, x, 4), 0.5);
}

Test(ops_reduce, empty_extents_give_identities_and_min_fails)
{
    const double none[1] = {0};
    cr_assert_eq(r1(SL_REDUCE_SUM, none, 0), 0);
    cr_assert_eq(r1(SL_REDUCE_PROD, none, 0), 1);
    cr_assert_eq(r1(SL_REDUCE_ANY, none, 0), 0);
    cr_assert_eq(r1(SL_REDUCE_ALL, none, 0), 1);
    cr_assert_eq(r1(SL_REDUCE_COUNT_NONZERO, none, 0), 0);
    cr_assert(isnan(r1(SL_REDUCE_MEAN, none, 0)));
    cr_assert(isnan(r1(SL_REDUCE_VAR, none, 0)));
    struct sl_error err = SL_ERROR_INIT;
    double v = 7;
    cr_assert_eq(reduce1(SL_REDUCE_MIN, none, 0, 0, &v, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "reduce min of an empty extent: dimension 0 has extent 0"),
                       "%s", err.text);
    cr_assert_eq(v, 7, "the output is untouched");
}

Test(ops_reduce, ddof_at_count_gives_inf_or_nan_as_numpy)
{
    const double x[] = {1, 2};
    double v;
    cr_assert_eq(reduce1(SL_REDUCE_VAR, x, 2, 2, &v, NULL), SL_OK);
    cr_assert_eq(v, INFINITY); /* np.var([1, 2], ddof=2) */
    cr_assert_eq(reduce1(SL_REDUCE_VAR, x, 1, 1, &v, NULL), SL_OK);
    cr_assert(isnan(v)); /* 0 / 0 */
}

Test(ops_reduce, integer_sums_wrap_and_results_cast)
{
    const int64_t x[] = {INT64_MAX, 1};
    const uint64_t n = 2, one = 1;
    struct sl_view in, o;
    int64_t s;
    struct sl_reduce_params p = params(SL_REDUCE_SUM, SL_DTYPE_I64, SL_DTYPE_I64, 1, 1);
    cr_assert_eq(sl_view_init(&in, SL_DTYPE_I64, 1, &n, (void *)x, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_I64, 1, &one, &s, NULL), SL_OK);
    cr_assert_eq(sl_reduce_block(&p, &in, &o, NULL), SL_OK);
    cr_assert_eq(s, INT64_MIN);
    /* A mean of uint8 into uint8: 2.5 rounds half to even. */
    const uint8_t b[] = {2, 3};
    uint8_t m;
    p = params(SL_REDUCE_MEAN, SL_DTYPE_U8, SL_DTYPE_U8, 1, 1);
    cr_assert_eq(sl_view_init(&in, SL_DTYPE_U8, 1, &n, (void *)b, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_U8, 1, &one, &m, NULL), SL_OK);
    cr_assert_eq(sl_reduce_block(&p, &in, &o, NULL), SL_OK);
    cr_assert_eq(m, 2);
}

/* in[z][y][x] = z * 100 + y * 10 + x, for a [3, 4, 5] int32 block. */
static void
fill_zyx(int32_t *a)
{
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 5; x++)
                a[(z * 4 + y) * 5 + x] = z * 100 + y * 10 + x;
}

Test(ops_reduce, reversed_and_strided_views_reduce_the_same)
{
    int32_t a[60];
    fill_zyx(a);
    const uint64_t shape[3] = {3, 4, 5};
    struct sl_view in, o, rev;
    cr_assert_eq(sl_view_init(&in, SL_DTYPE_I32, 3, shape, a, NULL), SL_OK);
    /* Reversed in y and x. */
    rev = in;
    rev.stride[1] = -5;
    rev.stride[2] = -1;
    rev.data = a + 3 * 5 + 4;
    struct sl_reduce_params p = params(SL_REDUCE_MAX, SL_DTYPE_I32, SL_DTYPE_I64, 3, 4);
    int64_t want[12], got[12];
    const uint64_t oshape[3] = {3, 4, 1};
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_I64, 3, oshape, want, NULL), SL_OK);
    cr_assert_eq(sl_reduce_block(&p, &in, &o, NULL), SL_OK);
    cr_assert_eq(want[0], 4);
    cr_assert_eq(want[11], 234);
    o.data = got;
    cr_assert_eq(sl_reduce_block(&p, &rev, &o, NULL), SL_OK);
    for (int i = 0; i < 12; i++) /* row i of rev is row (z, 3 - y) */
        cr_assert_eq(got[i], want[(i / 4) * 4 + 3 - i % 4]);
    /* Sum along z into a transposed (strided) output of shape [1, 4, 5]. */
    p = params(SL_REDUCE_SUM, SL_DTYPE_I32, SL_DTYPE_I64, 3, 1);
    int64_t t[20];
    o.shape[0] = 1;
    o.shape[1] = 4;
    o.shape[2] = 5;
    o.stride[0] = 0;
    o.stride[1] = 1;
    o.stride[2] = 4;
    o.data = t;
    cr_assert_eq(sl_reduce_block(&p, &in, &o, NULL), SL_OK);
    cr_assert_eq(t[2 * 4 + 3], 300 + 3 * 30 + 3 * 2); /* y 3, x 2 */
}

Test(ops_reduce, view_errors_name_dimension_and_extents)
{
    int32_t a[60];
    fill_zyx(a);
    const uint64_t shape[3] = {3, 4, 5}, bad[3] = {1, 4, 4};
    int64_t out[20];
    struct sl_view in, o;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_view_init(&in, SL_DTYPE_I32, 3, shape, a, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_I64, 3, bad, out, NULL), SL_OK);
    struct sl_reduce_params p = params(SL_REDUCE_SUM, SL_DTYPE_I32, SL_DTYPE_I64, 3, 1);
    cr_assert_eq(sl_reduce_block(&p, &in, &o, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "output extent 4 in dimension 2 should be 5, the input's"),
                       "%s", err.text);
    p.in_dtype = SL_DTYPE_I16;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_reduce_block(&p, &in, &o, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "input is int32 of rank 3, expected int16 of rank 3"), "%s",
                       err.text);
}

/*
 * Reduce a [6, 7, 9] float64 block along `mask` directly and through
 * states: the z and x axes cut at (cz, cx), each piece into its own
 * partial, merged, then finished.
 */
static void
check_state_split(sl_reduce_method m, unsigned mask, uint64_t cz, uint64_t cx)
{
    static double a[6 * 7 * 9];
    for (int i = 0; i < 6 * 7 * 9; i++)
        a[i] = (double)((i * 7919) % 101) - 50 + (i % 13 == 0 ? 0.25 : 0);
    const uint64_t shape[3] = {6, 7, 9};
    struct sl_reduce_params p = params(m, SL_DTYPE_F64, SL_DTYPE_F64, 3, mask);
    const uint32_t w = sl_reduce_state_words(&p);
    struct sl_view in, o, parts, merged;
    double direct[63], fin[63];
    uint64_t oshape[3], pshape[4], mshape[4];
    for (int d = 0; d < 3; d++) {
        oshape[d] = p.reduced[d] ? 1 : shape[d];
        pshape[d] = p.reduced[d] ? 2 : shape[d];
        mshape[d] = oshape[d];
    }
    pshape[3] = mshape[3] = w;
    static uint64_t pw[2 * 7 * 2 * 3 * 9], mw[63 * 3];
    cr_assert_eq(sl_view_init(&in, SL_DTYPE_F64, 3, shape, a, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_F64, 3, oshape, direct, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&parts, SL_DTYPE_U64, 4, pshape, pw, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&merged, SL_DTYPE_U64, 4, mshape, mw, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_reduce_block(&p, &in, &o, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_reduce_state_init(&p, &parts, &err), SL_OK, "%s", err.text);
    const uint64_t cut[3] = {cz, 7, cx};
    for (unsigned piece = 0; piece < 8; piece++) {
        struct sl_region r = {.rank = 3};
        struct sl_view v, part = parts;
        for (int d = 0; d < 3; d++) {
            const unsigned k = p.reduced[d] ? (piece >> d) & 1 : 0;
            if (!p.reduced[d] && (piece >> d) & 1)
                goto next_piece;
            r.start[d] = k ? cut[d] : 0;
            r.stop[d] = k || !p.reduced[d] ? shape[d] : cut[d];
            if (p.reduced[d]) {
                part.shape[d] = 1;
                part.data = (uint64_t *)part.data + (int64_t)k * part.stride[d];
            }
        }
        cr_assert_eq(sl_view_slice(&in, &r, &v, &err), SL_OK, "%s", err.text);
        cr_assert_eq(sl_reduce_state_add(&p, &v, &part, &err), SL_OK, "%s", err.text);
    next_piece:;
    }
    cr_assert_eq(sl_reduce_state_merge(&p, &parts, &merged, &err), SL_OK, "%s", err.text);
    o.data = fin;
    cr_assert_eq(sl_reduce_state_finish(&p, &merged, &o, &err), SL_OK, "%s", err.text);
    for (uint64_t i = 0; i < oshape[0] * oshape[1] * oshape[2]; i++)
        cr_assert_float_eq(fin[i], direct[i], 1e-12 * (fabs(direct[i]) + 1), "%s at %d: %g, %g",
                           sl_reduce_method_name(m), (int)i, fin[i], direct[i]);
}

Test(ops_reduce, states_split_several_ways_equal_direct)
{
    const unsigned masks[] = {1, 4, 5, 7};
    for (unsigned m = 0; m < SL_REDUCE_METHOD_COUNT_; m++)
        for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
            check_state_split(m, masks[k], 2, 4);
            check_state_split(m, masks[k], 0, 9); /* empty pieces */
            check_state_split(m, masks[k], 5, 1);
        }
}

Test(ops_reduce, finish_of_unseen_min_fails_and_state_views_are_checked)
{
    struct sl_reduce_params p = params(SL_REDUCE_MIN, SL_DTYPE_U16, SL_DTYPE_U16, 1, 1);
    cr_assert_eq(sl_reduce_state_words(&p), 2);
    uint64_t w[2];
    const uint64_t sshape[2] = {1, 2}, one = 1;
    uint16_t out = 77;
    struct sl_view st, o;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_view_init(&st, SL_DTYPE_U64, 2, sshape, w, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_U16, 1, &one, &out, NULL), SL_OK);
    cr_assert_eq(sl_reduce_state_init(&p, &st, NULL), SL_OK);
    cr_assert_eq(sl_reduce_state_finish(&p, &st, &o, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "reduce min of an empty extent"), "%s", err.text);
    cr_assert_eq(out, 77);
    st.shape[1] = 1;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_reduce_state_init(&p, &st, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "a state needs 2 words of stride 1"), "%s", err.text);
}
