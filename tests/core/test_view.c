/* SPDX-License-Identifier: MIT */
/* Strided views: making, checking, slicing and copying them. */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

TestSuite(ops_view, .timeout = 5.0);

Test(ops_view, init_makes_c_order_strides)
{
    int16_t buf[2 * 3 * 4];
    const uint64_t shape[3] = {2, 3, 4};
    struct sl_view v;
    cr_assert_eq(sl_view_init(&v, SL_DTYPE_I16, 3, shape, buf, NULL), SL_OK);
    cr_assert(v.stride[0] == 12 && v.stride[1] == 4 && v.stride[2] == 1);
    cr_assert(sl_view_is_contiguous(&v));
    cr_assert_eq(sl_view_check(&v, NULL), SL_OK);
    v.stride[2] = 2;
    cr_assert_not(sl_view_is_contiguous(&v));
}

Test(ops_view, init_refuses_bad_arguments)
{
    const uint64_t shape[2] = {4, 4}, huge[2] = {(uint64_t)1 << 62, 4}, empty[2] = {0, 5};
    struct sl_view v;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_view_init(&v, SL_DTYPE_U8, 2, shape, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "NULL data for 16 bytes"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_view_init(&v, SL_DTYPE_U8, 17, shape, NULL, &err), SL_EUNSUPPORTED);
    cr_assert_eq(sl_view_init(&v, (sl_dtype)99, 2, shape, &v, NULL), SL_EINVAL);
    cr_assert_eq(sl_view_init(&v, SL_DTYPE_U16, 2, huge, &v, NULL), SL_EOVERFLOW);
    cr_assert_eq(sl_view_init(&v, SL_DTYPE_U16, 2, empty, NULL, NULL), SL_OK);
    cr_assert(v.stride[0] == 0 && v.stride[1] == 0, "an empty view addresses nothing");
}

Test(ops_view, check_bounds_every_offset)
{
    uint8_t b[4];
    struct sl_view v = {
        .dtype = SL_DTYPE_F64, .rank = 2, .shape = {3, 2}, .stride = {1, 0}, .data = b};
    cr_assert_eq(sl_view_check(&v, NULL), SL_OK);
    v.stride[0] = INT64_MIN / 4;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_view_check(&v, &err), SL_EOVERFLOW);
    cr_assert_not_null(strstr(err.text, "dimension 0 (extent 3"), "%s", err.text);
    v.stride[0] = 1;
    v.data = NULL;
    cr_assert_eq(sl_view_check(&v, NULL), SL_EINVAL);
    v.shape[1] = 0;
    cr_assert_eq(sl_view_check(&v, NULL), SL_OK, "empty views need no data");
    v.rank = 20;
    cr_assert_eq(sl_view_check(&v, NULL), SL_EUNSUPPORTED);
    cr_assert_eq(sl_view_check(NULL, NULL), SL_EINVAL);
}

Test(ops_view, slice_points_at_the_region)
{
    int32_t buf[5 * 6];
    for (int i = 0; i < 30; i++)
        buf[i] = i;
    const uint64_t shape[2] = {5, 6};
    struct sl_view v, s;
    cr_assert_eq(sl_view_init(&v, SL_DTYPE_I32, 2, shape, buf, NULL), SL_OK);
    struct sl_region r = {.rank = 2, .start = {1, 2}, .stop = {4, 5}};
    cr_assert_eq(sl_view_slice(&v, &r, &s, NULL), SL_OK);
    cr_assert(s.shape[0] == 3 && s.shape[1] == 3 && *(int32_t *)s.data == 8);
    r.stop[1] = 7;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_view_slice(&v, &r, &s, &err), SL_EBOUNDS);
    r.rank = 1;
    cr_assert_eq(sl_view_slice(&v, &r, &s, NULL), SL_EINVAL);
}

Test(ops_view, copy_moves_any_dtype_and_refuses_mismatches)
{
    double src[4] = {1, 2, 3, 4}, dst[4] = {0};
    const uint64_t shape[1] = {2};
    struct sl_view a, b;
    cr_assert_eq(sl_view_init(&a, SL_DTYPE_C128, 1, shape, src, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&b, SL_DTYPE_C128, 1, shape, dst, NULL), SL_OK);
    a.stride[0] = -1;
    a.data = src + 2; /* reversed */
    cr_assert_eq(sl_view_copy(&b, &a, NULL), SL_OK);
    cr_assert(dst[0] == 3 && dst[1] == 4 && dst[2] == 1 && dst[3] == 2);
    struct sl_error err = SL_ERROR_INIT;
    b.dtype = SL_DTYPE_C64;
    cr_assert_eq(sl_view_copy(&b, &a, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "complex64 differs from complex128"), "%s", err.text);
    b.dtype = SL_DTYPE_C128;
    b.shape[0] = 1;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_view_copy(&b, &a, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "output shape [1] differs from input shape [2]"), "%s",
                       err.text);
    cr_assert_eq(sl_view_copy(&a, &a, NULL), SL_EINVAL, "a view overlaps itself");
}
