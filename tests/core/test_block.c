/* SPDX-License-Identifier: MIT */
/* Tests of blocks: construction and slicing by array coordinates. */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

TestSuite(core_block, .timeout = 5.0);

static struct sl_region
r2(uint64_t a0, uint64_t b0, uint64_t a1, uint64_t b1)
{
    struct sl_region r;
    cr_assert_eq(
        sl_region_init(&r, 2, (const uint64_t[]){a0, a1}, (const uint64_t[]){b0, b1}, NULL), SL_OK);
    return r;
}

Test(core_block, init_gives_c_order_view_at_its_region)
{
    uint16_t data[2 * 3 * 4];
    struct sl_block b;
    cr_assert_eq(sl_block_init(&b, SL_DTYPE_U16, 3, (const uint64_t[]){2, 3, 4}, data, NULL, NULL),
                 SL_OK);
    cr_assert_eq(b.view.stride[2], 1);
    cr_assert_eq(b.view.stride[1], 4);
    cr_assert_eq(b.view.stride[0], 12);
    cr_assert_eq(sl_view_count(&b.view), 24);
    cr_assert(sl_view_is_contiguous(&b.view));
    cr_assert_eq(b.region.stop[2], 4);
    cr_assert_eq(b.chunk.rank, 0);
}

Test(core_block, region_must_match_shape)
{
    uint8_t data[6];
    struct sl_block b;
    struct sl_region where = r2(10, 12, 0, 4);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_block_init(&b, SL_DTYPE_U8, 2, (const uint64_t[]){2, 3}, data, &where, &err),
                 SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "dimension 1"), "%s", err.text);
}

Test(core_block, slice_takes_array_coordinates)
{
    int32_t data[6 * 8];
    for (int i = 0; i < 48; i++)
        data[i] = i;
    struct sl_region where = r2(10, 16, 20, 28);
    struct sl_block b, v;
    cr_assert_eq(sl_block_init(&b, SL_DTYPE_I32, 2, (const uint64_t[]){6, 8}, data, &where, NULL),
                 SL_OK);
    b.chunk = sl_chunk_key_make(2, (const uint64_t[]){1, 2});
    struct sl_region sub = r2(12, 14, 23, 26);
    cr_assert_eq(sl_block_slice(&b, &sub, &v, NULL), SL_OK);
    cr_assert_eq(v.view.shape[0], 2);
    cr_assert_eq(v.view.shape[1], 3);
    cr_assert_eq(*(int32_t *)v.view.data, 2 * 8 + 3);
    cr_assert(sl_region_equal(&v.region, &sub));
    cr_assert_eq(v.chunk.idx[1], 2, "chunk coordinates are kept");
    cr_assert_not(sl_view_is_contiguous(&v.view));

    struct sl_region bad = r2(0, 12, 20, 22);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_block_slice(&b, &bad, &v, &err), SL_EBOUNDS);
    cr_assert_not_null(strstr(err.text, "[0:12, 20:22]"), "%s", err.text);
}

Test(core_block, copy_into_slice_of_larger_block)
{
    uint8_t big[5 * 7] = {0}, small[2 * 3] = {1, 2, 3, 4, 5, 6};
    struct sl_block b, s, v;
    cr_assert_eq(sl_block_init(&b, SL_DTYPE_U8, 2, (const uint64_t[]){5, 7}, big, NULL, NULL),
                 SL_OK);
    struct sl_region at = r2(1, 3, 2, 5);
    cr_assert_eq(sl_block_init(&s, SL_DTYPE_U8, 2, (const uint64_t[]){2, 3}, small, &at, NULL),
                 SL_OK);
    cr_assert_eq(sl_block_slice(&b, &s.region, &v, NULL), SL_OK);
    cr_assert_eq(sl_view_copy(&v.view, &s.view, NULL), SL_OK);
    cr_assert_eq(big[1 * 7 + 2], 1);
    cr_assert_eq(big[2 * 7 + 4], 6);
    cr_assert_eq(big[0], 0);
    cr_assert_eq(big[1 * 7 + 5], 0);
}

Test(core_block, fill_sets_every_element_of_a_slice)
{
    uint32_t data[4 * 5];
    memset(data, 0, sizeof(data));
    struct sl_block b, v;
    cr_assert_eq(sl_block_init(&b, SL_DTYPE_U32, 2, (const uint64_t[]){4, 5}, data, NULL, NULL),
                 SL_OK);
    struct sl_region sub = r2(1, 3, 1, 4);
    cr_assert_eq(sl_block_slice(&b, &sub, &v, NULL), SL_OK);
    const uint32_t value = 0xdeadbeef;
    cr_assert_eq(sl_view_fill(&v.view, &value, NULL), SL_OK);
    int n = 0;
    for (int i = 0; i < 20; i++)
        n += data[i] == value;
    cr_assert_eq(n, 6);
    cr_assert_eq(data[1 * 5 + 1], value);
    cr_assert_eq(data[0], 0);
    cr_assert_eq(sl_view_fill(&b.view, &value, NULL), SL_OK);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(data[i], value);
    uint8_t scalar = 0;
    struct sl_view zero;
    cr_assert_eq(sl_view_init(&zero, SL_DTYPE_U8, 0, NULL, &scalar, NULL), SL_OK);
    const uint8_t seven = 7;
    cr_assert_eq(sl_view_fill(&zero, &seven, NULL), SL_OK);
    cr_assert_eq(scalar, 7, "0-d views hold one element");
}
