/* SPDX-License-Identifier: MIT */
/* Tests of blocks: C-order layout, views, strided copy and fill. */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

TestSuite(core_block, .timeout = 5.0);

Test(core_block, init_gives_c_order_strides)
{
    uint16_t data[2 * 3 * 4];
    struct sl_block b;
    sl_block_init(&b, SL_DTYPE_U16, 3, (const uint64_t[]){2, 3, 4}, data, NULL);
    cr_assert_eq(b.strides[2], 2);
    cr_assert_eq(b.strides[1], 8);
    cr_assert_eq(b.strides[0], 24);
    cr_assert_eq(sl_block_count(&b), 24);
    cr_assert(sl_block_is_contiguous(&b));
    cr_assert_eq(b.region.stop[2], 4);
}

Test(core_block, view_selects_part_and_refuses_outside)
{
    int32_t data[6 * 8];
    for (int i = 0; i < 48; i++)
        data[i] = i;
    const uint64_t start[] = {10, 20}, stop[] = {16, 28};
    struct sl_region where;
    cr_assert_eq(sl_region_init(&where, 2, start, stop, NULL), SL_OK);
    struct sl_block b, v;
    sl_block_init(&b, SL_DTYPE_I32, 2, (const uint64_t[]){6, 8}, data, &where);
    struct sl_region sub;
    cr_assert_eq(
        sl_region_init(&sub, 2, (const uint64_t[]){12, 23}, (const uint64_t[]){14, 26}, NULL),
        SL_OK);
    cr_assert_eq(sl_block_view(&b, &sub, &v, NULL), SL_OK);
    cr_assert_eq(v.shape[0], 2);
    cr_assert_eq(v.shape[1], 3);
    cr_assert_eq(*(int32_t *)v.data, 2 * 8 + 3);
    cr_assert_not(sl_block_is_contiguous(&v));

    struct sl_region bad;
    cr_assert_eq(
        sl_region_init(&bad, 2, (const uint64_t[]){0, 20}, (const uint64_t[]){12, 22}, NULL),
        SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_block_view(&b, &bad, &v, &err), SL_EBOUNDS);
    cr_assert_not_null(strstr(err.text, "[0:12, 20:22]"), "%s", err.text);
}

Test(core_block, strided_copy_transposes)
{
    /* Copy a 3 x 4 C-order matrix into a 3 x 4 view of a 4 x 3 buffer with
     * swapped strides: the buffer then holds the transpose. */
    double src_data[12], dst_data[12];
    for (int i = 0; i < 12; i++)
        src_data[i] = i;
    struct sl_block src, dst;
    sl_block_init(&src, SL_DTYPE_F64, 2, (const uint64_t[]){3, 4}, src_data, NULL);
    sl_block_init(&dst, SL_DTYPE_F64, 2, (const uint64_t[]){3, 4}, dst_data, NULL);
    dst.strides[0] = 8;
    dst.strides[1] = 24;
    cr_assert_eq(sl_block_copy(&dst, &src, NULL), SL_OK);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++)
            cr_assert_eq(dst_data[c * 3 + r], src_data[r * 4 + c]);
}

Test(core_block, copy_into_view_of_larger_block)
{
    uint8_t big[5 * 7] = {0}, small[2 * 3] = {1, 2, 3, 4, 5, 6};
    struct sl_block b, s, v;
    sl_block_init(&b, SL_DTYPE_U8, 2, (const uint64_t[]){5, 7}, big, NULL);
    sl_block_init(&s, SL_DTYPE_U8, 2, (const uint64_t[]){2, 3}, small, NULL);
    struct sl_region sub;
    cr_assert_eq(sl_region_init(&sub, 2, (const uint64_t[]){1, 2}, (const uint64_t[]){3, 5}, NULL),
                 SL_OK);
    cr_assert_eq(sl_block_view(&b, &sub, &v, NULL), SL_OK);
    cr_assert_eq(sl_block_copy(&v, &s, NULL), SL_OK);
    cr_assert_eq(big[1 * 7 + 2], 1);
    cr_assert_eq(big[2 * 7 + 4], 6);
    cr_assert_eq(big[0], 0);
    cr_assert_eq(big[1 * 7 + 5], 0);
}

Test(core_block, copy_refuses_mismatch_with_numbers)
{
    uint8_t a[4], c[6];
    struct sl_block x, y;
    sl_block_init(&x, SL_DTYPE_U8, 1, (const uint64_t[]){4}, a, NULL);
    sl_block_init(&y, SL_DTYPE_U8, 1, (const uint64_t[]){6}, c, NULL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_block_copy(&x, &y, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "6 into 4"), "%s", err.text);
    y.dtype = SL_DTYPE_I8;
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_block_copy(&x, &y, &e2), SL_EINVAL);
    cr_assert_not_null(strstr(e2.text, "int8"), "%s", e2.text);
}

Test(core_block, fill_sets_every_element_of_a_view)
{
    uint32_t data[4 * 5];
    memset(data, 0, sizeof(data));
    struct sl_block b, v;
    sl_block_init(&b, SL_DTYPE_U32, 2, (const uint64_t[]){4, 5}, data, NULL);
    struct sl_region sub;
    cr_assert_eq(sl_region_init(&sub, 2, (const uint64_t[]){1, 1}, (const uint64_t[]){3, 4}, NULL),
                 SL_OK);
    cr_assert_eq(sl_block_view(&b, &sub, &v, NULL), SL_OK);
    const uint32_t value = 0xdeadbeef;
    sl_block_fill(&v, &value);
    int n = 0;
    for (int i = 0; i < 20; i++)
        n += data[i] == value;
    cr_assert_eq(n, 6);
    cr_assert_eq(data[1 * 5 + 1], value);
    cr_assert_eq(data[0], 0);
    sl_block_fill(&b, &value);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(data[i], value);
}
