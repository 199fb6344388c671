/* SPDX-License-Identifier: MIT */
/* Tests of regions. */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

TestSuite(core_region, .timeout = 5.0);

static struct sl_region
region2(uint64_t a0, uint64_t b0, uint64_t a1, uint64_t b1)
{
    const uint64_t start[] = {a0, a1}, stop[] = {b0, b1};
    struct sl_region r;
    cr_assert_eq(sl_region_init(&r, 2, start, stop, NULL), SL_OK);
    return r;
}

Test(core_region, init_refuses_reversed_ranges_and_high_rank)
{
    const uint64_t start[] = {5, 0}, stop[] = {3, 1};
    struct sl_region r;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_region_init(&r, 2, start, stop, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "start 5 is after stop 3"), "%s", err.text);
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_region_init(&r, SL_MAX_RANK + 1, start, stop, &e2), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(e2.text, "rank 17"), "%s", e2.text);
}

Test(core_region, intersect_contains_equal)
{
    struct sl_region a = region2(0, 10, 0, 10), b = region2(5, 15, 2, 4), out;
    cr_assert(sl_region_intersect(&a, &b, &out));
    cr_assert(sl_region_equal(&out, &(struct sl_region){0}) == false);
    struct sl_region want = region2(5, 10, 2, 4);
    cr_assert(sl_region_equal(&out, &want));
    cr_assert(sl_region_contains(&a, &want));
    cr_assert_not(sl_region_contains(&want, &a));
    struct sl_region c = region2(10, 12, 0, 1);
    cr_assert_not(sl_region_intersect(&a, &c, &out));
    cr_assert(sl_region_is_empty(&out));
}

Test(core_region, count_extent_and_shape)
{
    struct sl_region r = region2(2, 5, 10, 20);
    uint64_t n, shape[2];
    cr_assert_eq(sl_region_count(&r, &n, NULL), SL_OK);
    cr_assert_eq(n, 30);
    cr_assert_eq(sl_region_extent(&r, 1), 10);
    cr_assert_eq(sl_region_extent(&r, 7), 0);
    sl_region_shape(&r, shape);
    cr_assert_eq(shape[0], 3);
    struct sl_region zero = {.rank = 0};
    cr_assert_not(sl_region_is_empty(&zero));
    cr_assert_eq(sl_region_count(&zero, &n, NULL), SL_OK);
    cr_assert_eq(n, 1);
}

Test(core_region, out_of_bounds_names_selection_dimension_and_shape)
{
    const uint64_t shape[] = {100, 50};
    struct sl_region r = region2(10, 20, 40, 60);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_region_check_within(&r, 2, shape, &err), SL_EBOUNDS);
    cr_assert_not_null(strstr(err.text, "[10:20, 40:60]"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "[100, 50]"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "dimension 1"), "%s", err.text);
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_region_check_within(&r, 3, shape, &e2), SL_EBOUNDS);
    cr_assert_not_null(strstr(e2.text, "rank 2"), "%s", e2.text);
    struct sl_region fine = region2(0, 100, 0, 50);
    cr_assert_eq(sl_region_check_within(&fine, 2, shape, NULL), SL_OK);
}

Test(core_region, whole_and_format)
{
    const uint64_t shape[] = {4, 0, 9};
    struct sl_region r = sl_region_whole(3, shape);
    char buf[64];
    sl_region_format(&r, buf, sizeof(buf));
    cr_assert_str_eq(buf, "[0:4, 0:0, 0:9]");
    cr_assert(sl_region_is_empty(&r));
}
