/* SPDX-License-Identifier: MIT */
/* Tests of chunk grids and their iterators. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "testutil.h"

TestSuite(core_grid, .timeout = 10.0);

Test(core_grid, regular_grid_clips_edge_chunks)
{
    const uint64_t shape[] = {10, 7}, chunk[] = {4, 7};
    struct sl_grid g;
    cr_assert_eq(sl_grid_init_regular(&g, 2, shape, chunk, NULL), SL_OK);
    cr_assert_eq(g.n_chunks[0], 3);
    cr_assert_eq(g.n_chunks[1], 1);
    cr_assert_eq(g.n_total, 3);
    struct sl_region r;
    sl_grid_chunk_region(&g, (const uint64_t[]){2, 0}, &r);
    cr_assert_eq(r.start[0], 8);
    cr_assert_eq(r.stop[0], 10, "edge chunk must stop at the array edge");
    cr_assert_eq(r.stop[1], 7);
    cr_assert_eq(sl_grid_chunk_at(&g, 0, 9), 2);
    cr_assert_eq(sl_grid_chunk_at(&g, 0, 3), 0);
    cr_assert(sl_grid_is_regular(&g));
    cr_assert_eq(sl_grid_max_chunk(&g, 0), 4);
    cr_assert_eq(sl_grid_max_chunk(&g, 1), 7);
    sl_grid_fini(&g);
    /* A chunk larger than the array is clipped to it. */
    cr_assert_eq(sl_grid_init_regular(&g, 1, (const uint64_t[]){3}, (const uint64_t[]){8}, NULL),
                 SL_OK);
    cr_assert_eq(sl_grid_max_chunk(&g, 0), 3);
    sl_grid_fini(&g);
}

Test(core_grid, iterates_whole_grid_in_c_order)
{
    const uint64_t shape[] = {5, 6}, chunk[] = {2, 4};
    struct sl_grid g;
    cr_assert_eq(sl_grid_init_regular(&g, 2, shape, chunk, NULL), SL_OK);
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, &g, NULL);
    cr_assert_eq(it.n_total, 6);
    uint64_t expect[][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}};
    size_t n = 0;
    while (sl_grid_iter_next(&it)) {
        cr_assert_lt(n, 6);
        cr_assert_eq(it.coords[0], expect[n][0]);
        cr_assert_eq(it.coords[1], expect[n][1]);
        cr_assert_eq(sl_grid_linear_index(&g, it.coords), n);
        cr_assert(sl_region_equal(&it.chunk, &it.part), "whole selection covers each chunk");
        cr_assert_eq(it.n_done, n + 1);
        n++;
    }
    cr_assert_eq(n, 6);
    cr_assert_not(sl_grid_iter_next(&it), "iterator stays done");
}

Test(core_grid, zero_dimensional_array_has_one_chunk)
{
    struct sl_grid g;
    cr_assert_eq(sl_grid_init_regular(&g, 0, NULL, NULL, NULL), SL_OK);
    cr_assert_eq(g.n_total, 1);
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, &g, NULL);
    cr_assert(sl_grid_iter_next(&it));
    cr_assert_eq(it.chunk.rank, 0);
    cr_assert_not(sl_grid_iter_next(&it));
}

Test(core_grid, zero_extent_array_has_no_chunks)
{
    const uint64_t shape[] = {0, 10}, chunk[] = {4, 4};
    struct sl_grid g;
    cr_assert_eq(sl_grid_init_regular(&g, 2, shape, chunk, NULL), SL_OK);
    cr_assert_eq(g.n_total, 0);
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, &g, NULL);
    cr_assert_not(sl_grid_iter_next(&it));
}

Test(core_grid, origin_and_selection_shape_clip_parts)
{
    const uint64_t shape[] = {100}, chunk[] = {10};
    struct sl_grid g;
    cr_assert_eq(sl_grid_init_regular(&g, 1, shape, chunk, NULL), SL_OK);
    struct sl_grid_iter it;
    cr_assert_eq(
        sl_grid_iter_init_at(&it, &g, (const uint64_t[]){15}, (const uint64_t[]){20}, NULL), SL_OK);
    cr_assert_eq(it.n_total, 3);
    uint64_t want[][4] = {{1, 10, 15, 20}, {2, 20, 20, 30}, {3, 30, 30, 35}};
    size_t n = 0;
    while (sl_grid_iter_next(&it)) {
        cr_assert_eq(it.coords[0], want[n][0]);
        cr_assert_eq(it.chunk.start[0], want[n][1]);
        cr_assert_eq(it.part.start[0], want[n][2]);
        cr_assert_eq(it.part.stop[0], want[n][3]);
        n++;
    }
    cr_assert_eq(n, 3);
}

Test(core_grid, empty_selection_visits_nothing)
{
    const uint64_t shape[] = {100, 100}, chunk[] = {10, 10};
    struct sl_grid g;
    cr_assert_eq(sl_grid_init_regular(&g, 2, shape, chunk, NULL), SL_OK);
    struct sl_grid_iter it;
    cr_assert_eq(
        sl_grid_iter_init_at(&it, &g, (const uint64_t[]){50, 50}, (const uint64_t[]){0, 10}, NULL),
        SL_OK);
    cr_assert_eq(it.n_total, 0);
    cr_assert_not(sl_grid_iter_next(&it));
}

Test(core_grid, selection_past_the_edge_is_refused)
{
    const uint64_t shape[] = {100, 100}, chunk[] = {10, 10};
    struct sl_grid g;
    cr_assert_eq(sl_grid_init_regular(&g, 2, shape, chunk, NULL), SL_OK);
    struct sl_grid_iter it;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(
        sl_grid_iter_init_at(&it, &g, (const uint64_t[]){95, 0}, (const uint64_t[]){10, 5}, &err),
        SL_EBOUNDS);
    cr_assert_not_null(strstr(err.text, "[95:105, 0:5]"), "%s", err.text);
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_grid_iter_init_at(&it, &g, (const uint64_t[]){UINT64_MAX, 0},
                                      (const uint64_t[]){2, 5}, &e2),
                 SL_EOVERFLOW);
}

Test(core_grid, irregular_grid_lookup_and_regions)
{
    const uint64_t b0[] = {0, 3, 4, 10}, b1[] = {0, 5, 10, 12};
    const uint64_t *bounds[] = {b0, b1};
    const uint64_t n[] = {3, 3};
    struct sl_grid g;
    cr_assert_eq(sl_grid_init_bounds(&g, NULL, 2, n, bounds, NULL), SL_OK);
    cr_assert_not(sl_grid_is_regular(&g));
    cr_assert_eq(g.shape[0], 10);
    cr_assert_eq(g.shape[1], 12);
    cr_assert_eq(g.chunk[1], 5, "evenly spaced dimension is stored as regular");
    cr_assert_null(g.bounds[1]);
    cr_assert_eq(sl_grid_chunk_at(&g, 0, 0), 0);
    cr_assert_eq(sl_grid_chunk_at(&g, 0, 3), 1);
    cr_assert_eq(sl_grid_chunk_at(&g, 0, 9), 2);
    struct sl_region r;
    sl_grid_chunk_region(&g, (const uint64_t[]){1, 2}, &r);
    cr_assert_eq(r.start[0], 3);
    cr_assert_eq(r.stop[0], 4);
    cr_assert_eq(r.start[1], 10);
    cr_assert_eq(r.stop[1], 12);
    cr_assert_eq(sl_grid_max_chunk(&g, 0), 6, "the largest of 3, 1 and 6");
    cr_assert_eq(sl_grid_max_chunk(&g, 1), 5);
    sl_grid_fini(&g);
}

Test(core_grid, bad_bounds_are_refused_with_numbers)
{
    const uint64_t b0[] = {0, 3, 3, 10};
    const uint64_t *bounds[] = {b0};
    const uint64_t n[] = {3};
    struct sl_grid g;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_grid_init_bounds(&g, NULL, 1, n, bounds, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "boundary 2 (3)"), "%s", err.text);
    const uint64_t b1[] = {1, 3};
    const uint64_t *bounds1[] = {b1};
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_grid_init_bounds(&g, NULL, 1, (const uint64_t[]){1}, bounds1, &e2), SL_EINVAL);
    cr_assert_not_null(strstr(e2.text, "start at 0"), "%s", e2.text);
}

Test(core_grid, zero_chunk_extent_and_high_rank_are_refused)
{
    struct sl_grid g;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(
        sl_grid_init_regular(&g, 2, (const uint64_t[]){4, 4}, (const uint64_t[]){2, 0}, &err),
        SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "dimension 1"), "%s", err.text);
    uint64_t many[SL_MAX_RANK + 1];
    for (int i = 0; i <= SL_MAX_RANK; i++)
        many[i] = 1;
    cr_assert_eq(sl_grid_init_regular(&g, SL_MAX_RANK + 1, many, many, NULL), SL_EUNSUPPORTED);
}

Test(core_grid, chunk_count_overflow_is_refused)
{
    const uint64_t shape[] = {1ull << 40, 1ull << 40}, chunk[] = {1, 1};
    struct sl_grid g;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_grid_init_regular(&g, 2, shape, chunk, &err), SL_EOVERFLOW);
    cr_assert_not_null(strstr(err.text, "[1099511627776, 1099511627776]"), "%s", err.text);
    const uint64_t big_chunk[] = {1ull << 40, 1ull << 40};
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_grid_init_regular(&g, 2, shape, big_chunk, &e2), SL_EOVERFLOW);
}

Test(core_grid, shard_grid_and_inner_chunks)
{
    /* 100 x 100 array, 10 x 10 chunks in 40 x 40 shards. */
    const uint64_t shape[] = {100, 100}, chunk[] = {10, 10}, shard[] = {40, 40};
    struct sl_grid cg, sg;
    cr_assert_eq(sl_grid_init_regular(&cg, 2, shape, chunk, NULL), SL_OK);
    cr_assert_eq(sl_grid_init_regular(&sg, 2, shape, shard, NULL), SL_OK);
    cr_assert_eq(sg.n_total, 9);
    struct sl_grid_iter shards;
    sl_grid_iter_init(&shards, &sg, NULL);
    uint64_t inner_total = 0;
    while (sl_grid_iter_next(&shards)) {
        struct sl_grid_iter inner;
        sl_grid_iter_init(&inner, &cg, &shards.chunk);
        uint64_t expect =
            (sl_region_extent(&shards.chunk, 0) / 10) * (sl_region_extent(&shards.chunk, 1) / 10);
        cr_assert_eq(inner.n_total, expect);
        while (sl_grid_iter_next(&inner)) {
            cr_assert(sl_region_contains(&shards.chunk, &inner.chunk));
            inner_total++;
        }
    }
    cr_assert_eq(inner_total, cg.n_total, "every chunk in exactly one shard");
}

Test(core_grid, linear_index_round_trips)
{
    const uint64_t shape[] = {7, 5, 3}, chunk[] = {2, 2, 2};
    struct sl_grid g;
    cr_assert_eq(sl_grid_init_regular(&g, 3, shape, chunk, NULL), SL_OK);
    for (uint64_t i = 0; i < g.n_total; i++) {
        uint64_t c[3];
        sl_grid_coords_of(&g, i, c);
        cr_assert_eq(sl_grid_linear_index(&g, c), i);
    }
}

Test(core_grid, copying_a_huge_regular_grid_allocates_nothing)
{
    /* Found by the array fuzz target: copies expanded regular dimensions
     * into one boundary per chunk, 4 TB for this (valid) array's grid. */
    struct sl_test_alloc counts = {0};
    struct sl_allocator alloc = sl_test_alloc_make(&counts);
    const uint64_t shape[] = {19, (uint64_t)1 << 50}, chunk[] = {32, 26};
    struct sl_grid g, copy;
    cr_assert_eq(sl_grid_init_regular(&g, 2, shape, chunk, NULL), SL_OK);
    cr_assert_eq(sl_grid_copy(&copy, &g, &alloc, NULL), SL_OK);
    cr_assert_eq(counts.n_calls, 0);
    cr_assert(sl_grid_equal(&g, &copy));
    cr_assert(sl_grid_is_regular(&copy));
    sl_grid_fini(&copy);
    sl_grid_fini(&g);
}

Test(core_grid, copy_and_equal)
{
    const uint64_t b0[] = {0, 1, 5, 6};
    const uint64_t *bounds[] = {b0};
    struct sl_grid a, b;
    cr_assert_eq(sl_grid_init_bounds(&a, NULL, 1, (const uint64_t[]){3}, bounds, NULL), SL_OK);
    cr_assert_eq(sl_grid_copy(&b, &a, NULL, NULL), SL_OK);
    cr_assert(sl_grid_equal(&a, &b));
    cr_assert_neq(a.bounds[0], b.bounds[0], "deep copy");
    struct sl_grid r;
    cr_assert_eq(sl_grid_init_regular(&r, 1, (const uint64_t[]){6}, (const uint64_t[]){2}, NULL),
                 SL_OK);
    cr_assert_not(sl_grid_equal(&a, &r));
    const uint64_t even[] = {0, 2, 4, 6};
    const uint64_t *eb[] = {even};
    struct sl_grid e;
    cr_assert_eq(sl_grid_init_bounds(&e, NULL, 1, (const uint64_t[]){3}, eb, NULL), SL_OK);
    cr_assert(sl_grid_equal(&e, &r), "even boundaries equal the regular grid");
    sl_grid_fini(&a);
    sl_grid_fini(&b);
    sl_grid_fini(&e);
}

/* Naive reference: every chunk whose region meets the selection, C order. */
Test(core_grid, random_grids_match_brute_force)
{
    srand(12345);
    for (int trial = 0; trial < 300; trial++) {
        uint32_t rank = 1 + (uint32_t)(rand() % 3);
        uint64_t shape[3], chunk[3], origin[3], sel[3];
        for (uint32_t d = 0; d < rank; d++) {
            shape[d] = (uint64_t)(rand() % 20);
            chunk[d] = 1 + (uint64_t)(rand() % 7);
            origin[d] = shape[d] ? (uint64_t)(rand() % (int)(shape[d] + 1)) : 0;
            sel[d] = (uint64_t)(rand() % (int)(shape[d] - origin[d] + 1));
        }
        struct sl_grid g;
        cr_assert_eq(sl_grid_init_regular(&g, rank, shape, chunk, NULL), SL_OK);
        struct sl_grid_iter it;
        cr_assert_eq(sl_grid_iter_init_at(&it, &g, origin, sel, NULL), SL_OK);
        uint64_t visited = 0;
        uint64_t prev = 0;
        while (sl_grid_iter_next(&it)) {
            uint64_t lin = sl_grid_linear_index(&g, it.coords);
            cr_assert(visited == 0 || lin > prev, "C order");
            prev = lin;
            visited++;
            for (uint32_t d = 0; d < rank; d++) {
                cr_assert_lt(it.part.start[d], it.part.stop[d]);
                cr_assert_geq(it.part.start[d], origin[d]);
                cr_assert_leq(it.part.stop[d], origin[d] + sel[d]);
            }
        }
        /* Count chunks meeting the selection directly. */
        uint64_t expect = 1;
        for (uint32_t d = 0; d < rank; d++) {
            uint64_t n = 0;
            for (uint64_t c = 0; c < g.n_chunks[d]; c++) {
                uint64_t lo = c * chunk[d],
                         hi = lo + chunk[d] < shape[d] ? lo + chunk[d] : shape[d];
                if (sel[d] > 0 && lo < origin[d] + sel[d] && hi > origin[d])
                    n++;
            }
            expect *= n;
        }
        cr_assert_eq(visited, expect, "trial %d", trial);
        cr_assert_eq(it.n_total, expect, "trial %d", trial);
    }
}
