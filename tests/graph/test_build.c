/* SPDX-License-Identifier: MIT */
/* Graph construction: node checks, select grids, mappings, sealing. */
#include <string.h>

#include "graph_test_util.h"
#include "testutil.h"

TestSuite(graph_build, .timeout = 10.0);

static struct sl_region
r2(uint64_t a0, uint64_t b0, uint64_t a1, uint64_t b1)
{
    struct sl_region r;
    cr_assert_eq(
        sl_region_init(&r, 2, (const uint64_t[]){a0, a1}, (const uint64_t[]){b0, b1}, NULL), SL_OK);
    return r;
}

Test(graph_build, names_must_be_unique_and_sane)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    sl_test_add_getter(g, "raw", 1, (const uint64_t[]){10}, (const uint64_t[]){5});
    const struct sl_getter_desc d = {.array_name = "x",
                                     .dtype = SL_DTYPE_U8,
                                     .rank = 1,
                                     .shape = (const uint64_t[]){4},
                                     .chunk_shape = (const uint64_t[]){2},
                                     .fn = sl_test_getter_iota};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_getter(g, "raw", &d, NULL, &err), SL_EEXIST);
    cr_assert_not_null(strstr(err.text, "\"raw\" already exists"), "%s", err.text);
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_getter(g, "", &d, NULL, &e2), SL_EINVAL);
    char long_name[100];
    memset(long_name, 'n', 99);
    long_name[99] = '\0';
    struct sl_error e3 = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_getter(g, long_name, &d, NULL, &e3), SL_EINVAL);
    cr_assert_not_null(strstr(e3.text, "99 characters"), "%s", e3.text);
    cr_assert_eq(sl_graph_node_count(g), 1);
    sl_graph_unref(g);
}

Test(graph_build, getter_with_zero_chunk_names_the_node)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    const struct sl_getter_desc d = {.array_name = "x",
                                     .dtype = SL_DTYPE_U8,
                                     .rank = 2,
                                     .shape = (const uint64_t[]){4, 4},
                                     .chunk_shape = (const uint64_t[]){2, 0},
                                     .fn = sl_test_getter_iota};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_getter(g, "bad", &d, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "node \"bad\": chunk extent is 0 in dimension 1"), "%s",
                       err.text);
    sl_graph_unref(g);
}

Test(graph_build, select_grid_is_intersection_with_input_chunks)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 2, (const uint64_t[]){100, 64}, (const uint64_t[]){10, 32});
    struct sl_region s = r2(15, 47, 3, 64);
    const struct sl_select_desc sd = {.n_slices = 1, .slices = &s};
    uint32_t sel;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_select(g, "sel", raw, &sd, &sel, &err), SL_OK, "%s", err.text);
    struct sl_node_info info;
    cr_assert_eq(sl_graph_node_info(g, sel, &info, NULL), SL_OK);
    cr_assert_eq(info.grid->shape[0], 32);
    cr_assert_eq(info.grid->shape[1], 61);
    cr_assert_eq(info.grid->n_chunks[0], 4, "[15,20) [20,30) [30,40) [40,47)");
    cr_assert_eq(sl_grid_chunk_start(info.grid, 0, 1), 5);
    cr_assert_eq(sl_grid_chunk_start(info.grid, 0, 3), 25);
    cr_assert_eq(info.grid->n_chunks[1], 2, "[3,32) [32,64)");
    cr_assert_eq(sl_grid_chunk_start(info.grid, 1, 1), 29);
    /* Each output chunk maps into exactly one stored chunk. */
    const struct sl__node *n = sl__graph_node(g, sel);
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, info.grid, NULL);
    while (sl_grid_iter_next(&it)) {
        struct sl_region in;
        sl__node_input_region(g, n, 0, &it.chunk, &in);
        cr_assert_eq(in.start[0], it.chunk.start[0] + 15);
        cr_assert_eq(in.start[1], it.chunk.start[1] + 3);
        cr_assert_eq(in.start[0] / 10, (in.stop[0] - 1) / 10);
        cr_assert_eq(in.start[1] / 32, (in.stop[1] - 1) / 32);
    }
    sl_graph_unref(g);
}

Test(graph_build, concatenated_slices_map_back_piecewise)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 2, (const uint64_t[]){100, 8}, (const uint64_t[]){10, 8});
    /* Listed out of order on purpose: output follows list order. */
    struct sl_region s[] = {r2(50, 55, 0, 8), r2(5, 25, 0, 8)};
    const struct sl_select_desc sd = {.n_slices = 2, .slices = s, .axis = 0};
    uint32_t sel;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_select(g, "sel", raw, &sd, &sel, &err), SL_OK, "%s", err.text);
    const struct sl__node *n = sl__graph_node(g, sel);
    cr_assert_eq(n->grid.shape[0], 25);
    /* Boundaries: 0 5 | 10 20 25 (50..55, then 5..10, 10..20, 20..25). */
    cr_assert_eq(n->grid.n_chunks[0], 4);
    uint64_t want[][2] = {{50, 55}, {5, 10}, {10, 20}, {20, 25}};
    for (uint64_t k = 0; k < 4; k++) {
        uint64_t a, b;
        sl__node_input_interval(g, n, 0, 0, sl_grid_chunk_start(&n->grid, 0, k),
                                sl_grid_chunk_start(&n->grid, 0, k + 1), &a, &b);
        cr_assert_eq(a, want[k][0], "chunk %lu", (unsigned long)k);
        cr_assert_eq(b, want[k][1], "chunk %lu", (unsigned long)k);
    }
    sl_graph_unref(g);
}

Test(graph_build, bad_selections_are_refused_with_numbers)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 2, (const uint64_t[]){100, 8}, (const uint64_t[]){10, 8});
    struct {
        struct sl_region s[2];
        size_t n;
        uint32_t axis;
        sl_status st;
        const char *text;
    } cases[] = {
        {{r2(90, 110, 0, 8)}, 1, 0, SL_EBOUNDS, "[90:110, 0:8] leaves array of shape [100, 8]"},
        {{r2(5, 5, 0, 8)}, 1, 0, SL_EINVAL, "slice 0 [5:5, 0:8] is empty"},
        {{r2(0, 10, 0, 8), r2(5, 15, 0, 8)}, 2, 0, SL_EINVAL, "overlap along axis 0"},
        {{r2(0, 10, 0, 8), r2(20, 30, 0, 4)},
         2,
         0,
         SL_EINVAL,
         "slice 1 covers [0:4) in dimension 1 but slice 0 covers [0:8)"},
        {{r2(0, 10, 0, 8), r2(20, 30, 0, 8)}, 2, 5, SL_EINVAL, "concatenation axis 5"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct sl_select_desc sd = {
            .n_slices = cases[i].n, .slices = cases[i].s, .axis = cases[i].axis};
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_graph_add_select(g, "sel", raw, &sd, NULL, &err), cases[i].st,
                     "case %zu: %s", i, err.text);
        cr_assert_not_null(strstr(err.text, cases[i].text), "case %zu: \"%s\"", i, err.text);
        cr_assert_not_null(strstr(err.text, "\"sel\""), "case %zu names the node: %s", i, err.text);
    }
    cr_assert_eq(sl_graph_node_count(g), 1, "failed adds leave the graph unchanged");
    sl_graph_unref(g);
}

Test(graph_build, map_inputs_must_share_a_grid)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t in[2] = {
        sl_test_add_getter(g, "a", 1, (const uint64_t[]){100}, (const uint64_t[]){10}),
        sl_test_add_getter(g, "b", 1, (const uint64_t[]){100}, (const uint64_t[]){20})};
    const struct sl_map_desc md = {.fn = sl_test_map_noop, .out_dtype = SL_DTYPE_F64};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_map(g, "m", 2, in, &md, NULL, &err), SL_EINVAL);
    /* The numbers are the ones the words name: chunk shapes, then counts. */
    cr_assert_not_null(strstr(err.text, "\"a\" (shape [100], chunk shape [10], [10] chunks) and "
                                        "\"b\" (shape [100], chunk shape [20], [5] chunks)"),
                       "%s", err.text);
    struct sl_error e2 = SL_ERROR_INIT;
    uint32_t bogus = 99;
    cr_assert_eq(sl_graph_add_map(g, "m", 1, &bogus, &md, NULL, &e2), SL_EINVAL);
    cr_assert_not_null(strstr(e2.text, "input 99 is not a node"), "%s", e2.text);
    sl_graph_unref(g);
}

/* The executor evaluates at most SL_MAP_MAX_INPUTS inputs per chunk: more
 * are refused when the node is added, not chunk by chunk at run time. */
Test(graph_build, map_inputs_are_at_most_the_limit)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t in = sl_test_add_getter(g, "a", 1, (const uint64_t[]){100}, (const uint64_t[]){10});
    uint32_t ins[SL_MAP_MAX_INPUTS + 1];
    for (size_t i = 0; i < (size_t)(SL_MAP_MAX_INPUTS + 1); i++)
        ins[i] = in;
    const struct sl_map_desc md = {.fn = sl_test_map_noop, .out_dtype = SL_DTYPE_F64};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_map(g, "wide", (size_t)(SL_MAP_MAX_INPUTS + 1), ins, &md, NULL, &err),
                 SL_EINVAL);
    cr_assert_eq(SL_MAP_MAX_INPUTS, 8);
    cr_assert_str_eq(err.text, "map \"wide\": 9 inputs, at most 8");
    uint32_t m;
    cr_assert_eq(sl_graph_add_map(g, "wide", SL_MAP_MAX_INPUTS, ins, &md, &m, &err), SL_OK, "%s",
                 err.text);
    cr_assert_eq(sl__graph_node(g, m)->n_inputs, SL_MAP_MAX_INPUTS);
    sl_graph_unref(g);
}

Test(graph_build, map_chunk_factors_scale_the_grid)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t in = sl_test_add_getter(g, "a", 1, (const uint64_t[]){127}, (const uint64_t[]){64});
    const uint64_t num[] = {1}, den[] = {2};
    const struct sl_map_desc md = {
        .fn = sl_test_map_noop, .out_dtype = SL_DTYPE_F64, .chunk_num = num, .chunk_den = den};
    uint32_t m;
    cr_assert_eq(sl_graph_add_map(g, "half", 1, &in, &md, &m, NULL), SL_OK);
    const struct sl__node *n = sl__graph_node(g, m);
    cr_assert_eq(n->grid.shape[0], 64, "ceil(127 / 2)");
    cr_assert_eq(sl_grid_chunk_start(&n->grid, 0, 1), 32);
    uint64_t a, b;
    sl__node_input_interval(g, n, 0, 0, 32, 64, &a, &b);
    cr_assert_eq(a, 64);
    cr_assert_eq(b, 127);
    const uint64_t bad_num[] = {2}, bad_den[] = {3};
    const struct sl_map_desc bad = {.fn = sl_test_map_noop,
                                    .out_dtype = SL_DTYPE_F64,
                                    .chunk_num = bad_num,
                                    .chunk_den = bad_den};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_map(g, "bad", 1, &in, &bad, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "2/3"), "%s", err.text);
    sl_graph_unref(g);
}

Test(graph_build, regrid_mapping_scales_and_clips)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t in = sl_test_add_getter(g, "a", 1, (const uint64_t[]){101}, (const uint64_t[]){10});
    const uint64_t num[] = {3}, lo[] = {2}, hi[] = {1}, chunk[] = {8};
    const struct sl_regrid_desc rd = {.fn = sl_test_regrid_noop,
                                      .out_dtype = SL_DTYPE_U8,
                                      .chunk_shape = chunk,
                                      .scale_num = num,
                                      .halo_lo = lo,
                                      .halo_hi = hi};
    uint32_t r;
    cr_assert_eq(sl_graph_add_regrid(g, "r", in, &rd, &r, NULL), SL_OK);
    const struct sl__node *n = sl__graph_node(g, r);
    cr_assert_eq(n->grid.shape[0], 34, "ceil(101 / 3)");
    uint64_t a, b;
    sl__node_input_interval(g, n, 0, 0, 0, 8, &a, &b);
    cr_assert_eq(a, 0, "halo clipped at 0");
    cr_assert_eq(b, 25);
    sl__node_input_interval(g, n, 0, 0, 32, 34, &a, &b);
    cr_assert_eq(a, 94);
    cr_assert_eq(b, 101, "clipped at the input's extent");
    sl_graph_unref(g);
}

Test(graph_build, seal_checks_completeness_and_freezes)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t a = sl_test_add_getter(g, "a", 1, (const uint64_t[]){10}, (const uint64_t[]){5});
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_seal(g, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "\"a\" is never used"), "%s", err.text);
    sl_test_add_putter(g, "out", a);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    cr_assert(sl_graph_is_sealed(g));
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK, "sealing twice is fine");
    struct sl_error e2 = SL_ERROR_INIT;
    const struct sl_putter_desc pd = {.fn = sl_test_putter_ok};
    cr_assert_eq(sl_graph_add_putter(g, "late", a, &pd, NULL, &e2), SL_ESTATE);
    struct sl_error e3 = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_set_fusable(g, a, false, &e3), SL_ESTATE);
    cr_assert_not_null(strstr(e3.text, "is sealed"), "%s", e3.text);
    e3 = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_node_info(g, 99, &(struct sl_node_info){0}, &e3), SL_EINVAL);
    cr_assert_not_null(strstr(e3.text, "no node 99 (the graph has 2)"), "%s", e3.text);
    uint32_t id;
    cr_assert_eq(sl_graph_find(g, "out", &id, NULL), SL_OK);
    cr_assert_eq(id, 1);
    cr_assert_eq(sl_graph_find(g, "nope", &id, NULL), SL_ENOTFOUND);
    sl_graph_unref(g);
}

Test(graph_build, graph_without_put_does_nothing_and_is_refused)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_seal(g, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "no put"), "%s", err.text);
    sl_graph_unref(g);
}

Test(graph_build, puts_cannot_be_inputs)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t a = sl_test_add_getter(g, "a", 1, (const uint64_t[]){10}, (const uint64_t[]){5});
    uint32_t p = sl_test_add_putter(g, "out", a);
    const struct sl_putter_desc pd = {.fn = sl_test_putter_ok};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_putter(g, "again", p, &pd, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "\"out\" is a putter"), "%s", err.text);
    sl_graph_unref(g);
}

Test(graph_build, failed_putter_removes_its_rechunk)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t a = sl_test_add_getter(g, "a", 1, (const uint64_t[]){10}, (const uint64_t[]){5});
    const struct sl_putter_desc pd = {.fn = NULL, .chunk_shape = (const uint64_t[]){2}};
    cr_assert_eq(sl_graph_add_putter(g, "out", a, &pd, NULL, NULL), SL_EINVAL);
    cr_assert_eq(sl_graph_node_count(g), 1);
    struct sl_node_info info;
    cr_assert_eq(sl_graph_node_info(g, a, &info, NULL), SL_OK);
    cr_assert_eq(info.n_consumers, 0);
    sl_graph_unref(g);
}

Test(graph_build, allocation_failures_leave_no_leak)
{
    for (size_t k = 1; k < 40; k++) {
        struct sl_test_alloc state = {.fail_at = k};
        struct sl_allocator alloc = sl_test_alloc_make(&state);
        sl_graph *g = sl_graph_create(&alloc, NULL);
        if (g != NULL) {
            const struct sl_getter_desc d = {.array_name = "a",
                                             .dtype = SL_DTYPE_F64,
                                             .rank = 1,
                                             .shape = (const uint64_t[]){100},
                                             .chunk_shape = (const uint64_t[]){10},
                                             .fn = sl_test_getter_iota};
            uint32_t a = 0, s = 0;
            sl_status st = sl_graph_add_getter(g, "a", &d, &a, NULL);
            struct sl_region r;
            cr_assert_eq(sl_region_init(&r, 1, (const uint64_t[]){5}, (const uint64_t[]){55}, NULL),
                         SL_OK);
            const struct sl_select_desc sd = {.n_slices = 1, .slices = &r};
            if (st == SL_OK)
                st = sl_graph_add_select(g, "s", a, &sd, &s, NULL);
            const struct sl_putter_desc pd = {.fn = sl_test_putter_ok,
                                              .chunk_shape = (const uint64_t[]){25}};
            if (st == SL_OK)
                st = sl_graph_add_putter(g, "out", s, &pd, NULL, NULL);
            cr_assert(st == SL_OK || st == SL_ENOMEM, "k=%zu: %s", k, sl_status_name(st));
            sl_graph_unref(g);
        }
        cr_assert_eq(state.n_live, 0, "k=%zu leaks %zu blocks", k, state.n_live);
    }
}
