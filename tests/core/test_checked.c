/* SPDX-License-Identifier: MIT */
/* Tests of overflow-checked size math. */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

TestSuite(core_checked, .timeout = 5.0);

Test(core_checked, products_that_fit_are_exact)
{
    uint64_t o;
    cr_assert(sl_u64_mul_fits(1ull << 31, 1ull << 32, &o));
    cr_assert_eq(o, 1ull << 63);
    cr_assert(sl_u64_mul_fits(0, UINT64_MAX, &o));
    cr_assert_eq(o, 0);
    cr_assert(sl_u64_add_fits(UINT64_MAX - 1, 1, &o));
    cr_assert_eq(o, UINT64_MAX);
    size_t s;
    cr_assert(sl_size_mul_fits(SIZE_MAX, 1, &s));
    cr_assert(sl_size_add_fits(1, 2, &s));
    cr_assert_eq(s, 3);
}

Test(core_checked, overflows_are_detected)
{
    uint64_t o = 7;
    cr_assert_not(sl_u64_mul_fits(1ull << 32, 1ull << 32, &o));
    cr_assert_eq(o, 7, "out must be untouched on overflow");
    cr_assert_not(sl_u64_add_fits(UINT64_MAX, 1, &o));
    size_t s;
    cr_assert_not(sl_size_mul_fits(SIZE_MAX / 2 + 1, 2, &s));
    cr_assert_not(sl_size_add_fits(SIZE_MAX, 1, &s));
}

Test(core_checked, shape_count_overflow_names_the_shape)
{
    const uint64_t shape[] = {1ull << 40, 1ull << 30, 3};
    uint64_t n;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_shape_count(3, shape, &n, &err), SL_EOVERFLOW);
    cr_assert_not_null(strstr(err.text, "[1099511627776, 1073741824, 3]"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "18446744073709551615"), "%s", err.text);
}

Test(core_checked, shape_count_with_a_zero_extent_is_zero)
{
    const uint64_t shape[] = {1ull << 40, 1ull << 40, 0};
    uint64_t n = 5;
    cr_assert_eq(sl_shape_count(3, shape, &n, NULL), SL_OK);
    cr_assert_eq(n, 0);
    cr_assert_eq(sl_shape_count(0, shape, &n, NULL), SL_OK);
    cr_assert_eq(n, 1, "a 0-d array has one element");
}

Test(core_checked, shape_bytes_overflow_names_shape_and_element_size)
{
    const uint64_t shape[] = {1ull << 62, 2};
    size_t bytes;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_shape_bytes(2, shape, 8, &bytes, &err), SL_EOVERFLOW);
    cr_assert_not_null(strstr(err.text, "[4611686018427387904, 2]"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "8-byte"), "%s", err.text);

    const uint64_t ok[] = {64, 64, 64};
    cr_assert_eq(sl_shape_bytes(3, ok, 2, &bytes, NULL), SL_OK);
    cr_assert_eq(bytes, 64 * 64 * 64 * 2);
}

Test(core_checked, shape_format)
{
    char buf[64];
    const uint64_t shape[] = {3, 4};
    cr_assert_eq(sl_shape_format(2, shape, buf, sizeof(buf)), 6);
    cr_assert_str_eq(buf, "[3, 4]");
    sl_shape_format(0, shape, buf, sizeof(buf));
    cr_assert_str_eq(buf, "[]");
}
