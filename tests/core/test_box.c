/* SPDX-License-Identifier: MIT */
/*
 * The N-d copy and fill engine (core/box.c): boxes of C-order arrays and
 * strided views, checked element by element against a plain reference,
 * including the cases its folding of contiguous dimensions must get right
 * (whole trailing rows, partial rows, extent-1 dimensions, rank 0).
 */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

#include "core_internal.h"

TestSuite(core_box, .timeout = 10.0);

/* Linear C-order index of `idx` in an array of `dims`. */
static uint64_t
linear(const uint64_t *idx, const uint64_t *dims, uint32_t rank)
{
    uint64_t k = 0;
    for (uint32_t d = 0; d < rank; d++)
        k = k * dims[d] + idx[d];
    return k;
}

/* The reference copy: element by element, no folding. */
static void
copy_reference(uint32_t *dst, const uint64_t *dd, const uint64_t *dorg, const uint32_t *src,
               const uint64_t *sd, const uint64_t *sorg, const uint64_t *shape, uint32_t rank)
{
    uint64_t idx[SL_MAX_RANK] = {0}, a[SL_MAX_RANK], b[SL_MAX_RANK];
    for (uint32_t d = 0; d < rank; d++)
        if (shape[d] == 0)
            return;
    do {
        for (uint32_t d = 0; d < rank; d++) {
            a[d] = dorg[d] + idx[d];
            b[d] = sorg[d] + idx[d];
        }
        dst[linear(a, dd, rank)] = src[linear(b, sd, rank)];
    } while (sl__index_next(idx, shape, rank));
}

/* Deterministic pseudo-random numbers for the case generator. */
static uint64_t
next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

Test(core_box, copies_match_the_reference_on_random_boxes)
{
    uint64_t seed = 7;
    enum { CAP = 4096 };
    static uint32_t src[CAP], dst[CAP], ref[CAP];
    for (int round = 0; round < 2000; round++) {
        uint32_t rank = 1 + (uint32_t)(next(&seed) % 4);
        uint64_t sd[SL_MAX_RANK], dd[SL_MAX_RANK], so[SL_MAX_RANK], dor[SL_MAX_RANK],
            shape[SL_MAX_RANK];
        for (uint32_t d = 0; d < rank; d++) {
            sd[d] = 1 + next(&seed) % 7;
            dd[d] = 1 + next(&seed) % 7;
            uint64_t lim = sd[d] < dd[d] ? sd[d] : dd[d];
            /* Often the whole extent, so trailing dimensions fold. */
            shape[d] = next(&seed) % 3 == 0 ? lim : next(&seed) % (lim + 1);
            if (next(&seed) % 2 == 0)
                sd[d] = dd[d] = shape[d] > 0 ? shape[d] : 1;
            so[d] = next(&seed) % (sd[d] - (shape[d] < sd[d] ? shape[d] : sd[d]) + 1);
            dor[d] = next(&seed) % (dd[d] - (shape[d] < dd[d] ? shape[d] : dd[d]) + 1);
        }
        for (size_t i = 0; i < CAP; i++) {
            src[i] = (uint32_t)next(&seed);
            dst[i] = ref[i] = 0xdeadbeefu;
        }
        const struct sl__box db = {.base = dst, .dims = dd, .origin = dor};
        const struct sl__box sb = {.base = src, .dims = sd, .origin = so};
        sl__box_copy(&db, &sb, shape, rank, sizeof(uint32_t));
        copy_reference(ref, dd, dor, src, sd, so, shape, rank);
        cr_assert_arr_eq(dst, ref, sizeof(dst), "round %d, rank %u", round, rank);
    }
}

Test(core_box, fill_sets_the_box_and_nothing_else)
{
    uint16_t buf[4 * 5 * 6];
    for (size_t i = 0; i < 120; i++)
        buf[i] = 1;
    const uint64_t dims[3] = {4, 5, 6}, origin[3] = {1, 0, 2}, shape[3] = {2, 5, 3};
    const uint16_t seven = 7;
    const struct sl__box b = {.base = buf, .dims = dims, .origin = origin};
    sl__box_fill(&b, shape, 3, &seven, sizeof(seven));
    for (uint64_t z = 0; z < 4; z++)
        for (uint64_t y = 0; y < 5; y++)
            for (uint64_t x = 0; x < 6; x++) {
                bool in = z >= 1 && z < 3 && x >= 2 && x < 5;
                cr_assert_eq(buf[(z * 5 + y) * 6 + x], in ? 7 : 1, "(%lu, %lu, %lu)",
                             (unsigned long)z, (unsigned long)y, (unsigned long)x);
            }
}

Test(core_box, fill_outside_pads_an_edge_chunk)
{
    uint8_t buf[3 * 4];
    memset(buf, 5, sizeof(buf));
    const uint64_t dims[2] = {3, 4}, extent[2] = {2, 3};
    const uint8_t fill = 9;
    sl__fill_outside(buf, 2, dims, extent, &fill, 1);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++)
            cr_assert_eq(buf[y * 4 + x], y < 2 && x < 3 ? 5 : 9, "(%d, %d)", y, x);
    cr_assert(sl__is_fill(buf + 8, 4, &fill, 1));
    cr_assert_not(sl__is_fill(buf, 4, &fill, 1));
}

Test(core_box, view_copy_walks_negative_and_broadcast_strides)
{
    int32_t src[3 * 4], dst[3 * 4];
    for (int i = 0; i < 12; i++)
        src[i] = i;
    const uint64_t shape[2] = {3, 4};
    struct sl_view s, d;
    cr_assert_eq(sl_view_init(&s, SL_DTYPE_I32, 2, shape, src, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&d, SL_DTYPE_I32, 2, shape, dst, NULL), SL_OK);
    /* Rows reversed: the last row first. */
    s.data = src + 8;
    s.stride[0] = -4;
    cr_assert_eq(sl_view_copy(&d, &s, NULL), SL_OK);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++)
            cr_assert_eq(dst[y * 4 + x], (2 - y) * 4 + x);
    /* One row broadcast to all three (stride 0 must not fold into a run). */
    s.data = src + 4;
    s.stride[0] = 0;
    cr_assert_eq(sl_view_copy(&d, &s, NULL), SL_OK);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++)
            cr_assert_eq(dst[y * 4 + x], 4 + x);
    /* Fill through a strided view: every other column. */
    memset(dst, 0, sizeof(dst));
    const uint64_t half[2] = {3, 2};
    cr_assert_eq(sl_view_init(&d, SL_DTYPE_I32, 2, half, dst, NULL), SL_OK);
    d.stride[0] = 4;
    d.stride[1] = 2;
    const int32_t v = -3;
    cr_assert_eq(sl_view_fill(&d, &v, NULL), SL_OK);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(dst[i], i % 2 == 0 ? -3 : 0, "element %d", i);
}
