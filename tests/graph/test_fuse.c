/* SPDX-License-Identifier: MIT */
/*
 * Fusion decisions, compared with golden dumps in tests/data/fuse/: each
 * case builds a graph, plans it, and checks the explained plan (nodes,
 * stages, every edge with its verdict and numbers).  Rewrite the dumps with
 * SL_UPDATE_GOLDEN=1 after an intended change and review the diff.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_test_util.h"

TestSuite(graph_fuse, .timeout = 10.0);

/* Seal, plan and explain `g`; compare with fuse/<name>.expected; return the plan. */
static struct sl__fusion
check_plan(sl_graph *g, const char *name)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_seal(g, &err), SL_OK, "%s", err.text);
    struct sl__fusion f;
    cr_assert_eq(sl__fusion_plan(g, NULL, &f, &err), SL_OK, "%s", err.text);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    sl__fusion_explain(g, &f, out);
    fclose(out);
    char rel[128];
    snprintf(rel, sizeof(rel), "fuse/%s.expected", name);
    sl_test_golden(rel, text);
    free(text);
    return f;
}

static uint32_t
n_fused(const struct sl__fusion *f)
{
    uint32_t n = 0;
    for (uint32_t e = 0; e < f->n_edges; e++)
        n += f->edges[e].reason == SL__FUSED;
    return n;
}

/* katdal: a select after a get fuses; the getter still reads whole chunks. */
Test(graph_fuse, select_after_getter_fuses)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 2, (const uint64_t[]){100, 64}, (const uint64_t[]){10, 64});
    struct sl_region sl;
    cr_assert_eq(
        sl_region_init(&sl, 2, (const uint64_t[]){15, 0}, (const uint64_t[]){47, 64}, NULL), SL_OK);
    uint32_t sel;
    const struct sl_select_desc sd = {.n_slices = 1, .slices = &sl};
    cr_assert_eq(sl_graph_add_select(g, "sel", raw, &sd, &sel, NULL), SL_OK);
    sl_test_add_putter(g, "out", sel);
    struct sl__fusion f = check_plan(g, "select_after_getter");
    cr_assert_eq(f.n_stages, 1);
    cr_assert_eq(n_fused(&f), 2);
    sl__fusion_fini(&f);
    sl_graph_unref(g);
}

/* Two slices inside one stored chunk: fusing would read it twice. */
Test(graph_fuse, slices_sharing_a_chunk_do_not_fuse)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 2, (const uint64_t[]){100, 64}, (const uint64_t[]){10, 64});
    struct sl_region s[2];
    cr_assert_eq(
        sl_region_init(&s[0], 2, (const uint64_t[]){0, 0}, (const uint64_t[]){5, 64}, NULL), SL_OK);
    cr_assert_eq(
        sl_region_init(&s[1], 2, (const uint64_t[]){8, 0}, (const uint64_t[]){12, 64}, NULL),
        SL_OK);
    uint32_t sel;
    const struct sl_select_desc sd = {.n_slices = 2, .slices = s, .axis = 0};
    cr_assert_eq(sl_graph_add_select(g, "sel", raw, &sd, &sel, NULL), SL_OK);
    sl_test_add_putter(g, "out", sel);
    struct sl__fusion f = check_plan(g, "slices_sharing_a_chunk");
    cr_assert_eq(f.edges[0].reason, SL__NOFUSE_SHARED);
    cr_assert_eq(f.n_stages, 2);
    sl__fusion_fini(&f);
    sl_graph_unref(g);
}

static uint32_t
add_downsample2(sl_graph *g, const char *name, uint32_t input, uint64_t out_chunk)
{
    const uint64_t num[] = {2, 2}, den[] = {1, 1}, chunk[] = {out_chunk, out_chunk};
    const struct sl_regrid_desc rd = {
        .op_name = "mean",
        .fn = sl_test_regrid_noop,
        .out_dtype = SL_DTYPE_F64,
        .chunk_shape = chunk,
        .scale_num = num,
        .scale_den = den,
    };
    uint32_t id;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_regrid(g, name, input, &rd, &id, &err), SL_OK, "%s", err.text);
    return id;
}

/* A 2x downsample from 128-chunks to 64-chunks needs one input chunk per output chunk. */
Test(graph_fuse, downsample_128_to_64_fuses)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 2, (const uint64_t[]){512, 300}, (const uint64_t[]){128, 128});
    uint32_t ds = add_downsample2(g, "ds", raw, 64);
    sl_test_add_putter(g, "out", ds);
    struct sl__fusion f = check_plan(g, "downsample_128_to_64");
    cr_assert_eq(f.n_stages, 1);
    sl__fusion_fini(&f);
    sl_graph_unref(g);
}

/* 64-chunks downsampled into 64-chunks: each output chunk needs 2 x 2 input chunks. */
Test(graph_fuse, downsample_64_to_64_does_not_fuse)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 2, (const uint64_t[]){512, 300}, (const uint64_t[]){64, 64});
    uint32_t ds = add_downsample2(g, "ds", raw, 64);
    sl_test_add_putter(g, "out", ds);
    struct sl__fusion f = check_plan(g, "downsample_64_to_64");
    cr_assert_eq(f.edges[0].reason, SL__NOFUSE_MANY);
    cr_assert_eq(f.edges[1].reason, SL__FUSED);
    cr_assert_eq(f.n_stages, 2);
    sl__fusion_fini(&f);
    sl_graph_unref(g);
}

/* A node read by two consumers is computed once and shared, never fused. */
Test(graph_fuse, node_with_two_consumers_is_a_stage_of_its_own)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 1, (const uint64_t[]){1000}, (const uint64_t[]){100});
    const struct sl_map_desc md = {
        .op_name = "scale", .fn = sl_test_map_noop, .out_dtype = SL_DTYPE_F32};
    uint32_t m;
    cr_assert_eq(sl_graph_add_map(g, "scaled", 1, &raw, &md, &m, NULL), SL_OK);
    sl_test_add_putter(g, "a", m);
    sl_test_add_putter(g, "b", m);
    struct sl__fusion f = check_plan(g, "two_consumers");
    cr_assert_eq(f.n_stages, 3);
    cr_assert_eq(f.stages[0].n_nodes, 2, "raw fuses into scaled");
    sl__fusion_fini(&f);
    sl_graph_unref(g);
}

Test(graph_fuse, unfusable_mark_is_honoured)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 1, (const uint64_t[]){1000}, (const uint64_t[]){100});
    const struct sl_map_desc md = {.fn = sl_test_map_noop, .out_dtype = SL_DTYPE_F64};
    uint32_t m;
    cr_assert_eq(sl_graph_add_map(g, "m", 1, &raw, &md, &m, NULL), SL_OK);
    cr_assert_eq(sl_graph_set_fusable(g, m, false, NULL), SL_OK);
    sl_test_add_putter(g, "out", m);
    struct sl__fusion f = check_plan(g, "unfusable");
    cr_assert_eq(f.n_stages, 3);
    cr_assert_eq(n_fused(&f), 0);
    sl__fusion_fini(&f);
    sl_graph_unref(g);
}

/* Two getters on one grid feed a map: one stage reads both. */
Test(graph_fuse, multi_input_map_fuses_both_inputs)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    const uint64_t shape[] = {64, 64}, chunk[] = {16, 32};
    uint32_t in[2] = {sl_test_add_getter(g, "a", 2, shape, chunk),
                      sl_test_add_getter(g, "b", 2, shape, chunk)};
    const struct sl_map_desc md = {
        .op_name = "add", .fn = sl_test_map_noop, .out_dtype = SL_DTYPE_F64};
    uint32_t m;
    cr_assert_eq(sl_graph_add_map(g, "sum", 2, in, &md, &m, NULL), SL_OK);
    sl_test_add_putter(g, "out", m);
    struct sl__fusion f = check_plan(g, "multi_input_map");
    cr_assert_eq(f.n_stages, 1);
    cr_assert_eq(f.stages[0].n_nodes, 4);
    sl__fusion_fini(&f);
    sl_graph_unref(g);
}

/* A putter asking for other chunks gets a rechunk in front; it does not fuse. */
Test(graph_fuse, putter_with_other_chunks_gets_a_rechunk)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 2, (const uint64_t[]){100, 100}, (const uint64_t[]){10, 100});
    const struct sl_putter_desc pd = {.fn = sl_test_putter_ok,
                                      .chunk_shape = (const uint64_t[]){50, 50}};
    uint32_t out;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_putter(g, "out", raw, &pd, &out, &err), SL_OK, "%s", err.text);
    cr_assert_eq(out, 2);
    struct sl__fusion f = check_plan(g, "putter_rechunk");
    cr_assert_eq(f.n_stages, 2);
    sl__fusion_fini(&f);
    sl_graph_unref(g);
}

/* A halo makes neighbouring output chunks share input chunks. */
Test(graph_fuse, halo_regrid_does_not_fuse)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw = sl_test_add_getter(g, "raw", 1, (const uint64_t[]){100}, (const uint64_t[]){10});
    const uint64_t lo[] = {1}, hi[] = {1}, chunk[] = {10};
    const struct sl_regrid_desc rd = {.op_name = "smooth",
                                      .fn = sl_test_regrid_noop,
                                      .out_dtype = SL_DTYPE_F64,
                                      .chunk_shape = chunk,
                                      .halo_lo = lo,
                                      .halo_hi = hi};
    uint32_t r;
    cr_assert_eq(sl_graph_add_regrid(g, "smooth", raw, &rd, &r, NULL), SL_OK);
    sl_test_add_putter(g, "out", r);
    struct sl__fusion f = check_plan(g, "halo");
    cr_assert_eq(f.edges[0].reason, SL__NOFUSE_HALO);
    cr_assert_str_eq(f.edges[0].detail,
                     "output chunk 0 of \"smooth\" needs [0:11) of \"raw\" (halo 1 before, 1 "
                     "after), chunks 0..1 in dimension 0");
    sl__fusion_fini(&f);
    sl_graph_unref(g);
}

Test(graph_fuse, dot_output_has_clusters_and_dashed_edges)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t raw =
        sl_test_add_getter(g, "raw", 2, (const uint64_t[]){512, 300}, (const uint64_t[]){64, 64});
    uint32_t ds = add_downsample2(g, "d\"s", raw, 64);
    sl_test_add_putter(g, "out", ds);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    struct sl__fusion f;
    cr_assert_eq(sl__fusion_plan(g, NULL, &f, NULL), SL_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    sl__fusion_write_dot(g, &f, out);
    fclose(out);
    cr_assert_not_null(strstr(text, "digraph sluice {"));
    cr_assert_not_null(strstr(text, "subgraph cluster_1"));
    cr_assert_not_null(strstr(text, "n0 -> n1 [style=dashed"));
    cr_assert_not_null(strstr(text, "n1 -> n2;"));
    cr_assert_not_null(strstr(text, "d\\\"s"), "quotes in names are escaped");
    free(text);
    sl__fusion_fini(&f);
    sl_graph_unref(g);
}
