/* SPDX-License-Identifier: MIT */
/*
 * The pyramid builder: level shapes, chunking and values against a naive
 * whole-array reference downsample, OME-Zarr 0.5 and 0.4 metadata (version,
 * axes, dataset paths, scales, translations), failures that propagate from
 * one level to the next, and the options it refuses without touching the
 * graph.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_test_util.h"
#include "pyramid_internal.h"
#include "testutil.h"

TestSuite(graph_pyramid, .timeout = 60.0);

static sl_store *
mem_store(void)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_create_memory(NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    return s;
}

static uint64_t
count_of(uint32_t rank, const uint64_t *shape)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < rank; d++)
        n *= shape[d];
    return n;
}

/* A uint16 array at `path` with pseudo-random contents, returned in *data. */
static sl_array *
make_input(sl_store *s, const char *path, uint32_t rank, const uint64_t *shape,
           const uint64_t *chunk, uint16_t **data)
{
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = rank;
    spec.dtype = SL_DTYPE_U16;
    memcpy(spec.shape, shape, rank * sizeof(uint64_t));
    memcpy(spec.chunk_shape, chunk, rank * sizeof(uint64_t));
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, path, &spec, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    uint64_t n = count_of(rank, shape);
    uint16_t *v = malloc(n * sizeof(uint16_t));
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v[i] = (uint16_t)(1000 + x % 4096);
    }
    struct sl_region all = sl_region_whole(rank, shape);
    cr_assert_eq(sl_array_write_region(a, &all, v, n * sizeof(uint16_t), NULL, NULL, &err), SL_OK,
                 "%s", err.text);
    *data = v;
    return a;
}

/* Naive reference: downsample a whole C-order uint16 array, one output
 * element at a time, by its definition in ops/README.md. */
static void
ref_downsample(sl_downsample_method m, uint32_t rank, const uint64_t *in_shape, const uint16_t *in,
               const uint64_t *f, uint64_t *out_shape, uint16_t **out)
{
    for (uint32_t d = 0; d < rank; d++)
        out_shape[d] = (in_shape[d] + f[d] - 1) / f[d];
    uint64_t n_out = count_of(rank, out_shape);
    uint16_t *o = malloc(n_out * sizeof(uint16_t));
    for (uint64_t i = 0; i < n_out; i++) {
        uint64_t oc[SL_MAX_RANK], lo[SL_MAX_RANK], hi[SL_MAX_RANK], c[SL_MAX_RANK];
        uint64_t rest = i;
        for (uint32_t d = rank; d-- > 0;) {
            oc[d] = rest % out_shape[d];
            rest /= out_shape[d];
            lo[d] = oc[d] * f[d];
            hi[d] = lo[d] + f[d] < in_shape[d] ? lo[d] + f[d] : in_shape[d];
            c[d] = lo[d];
        }
        uint64_t sum = 0, count = 0, best = 0, first = UINT64_MAX;
        for (;;) {
            uint64_t lin = 0;
            for (uint32_t d = 0; d < rank; d++)
                lin = lin * in_shape[d] + c[d];
            uint64_t v = in[lin];
            first = first == UINT64_MAX ? v : first;
            sum += v;
            best = v > best ? v : best;
            count++;
            uint32_t d = rank;
            while (d-- > 0 && ++c[d] == hi[d])
                c[d] = lo[d];
            if (d == UINT32_MAX)
                break;
        }
        uint64_t q = sum / count, r = sum % count;
        uint64_t mean = q + (2 * r > count || (2 * r == count && (q & 1)));
        o[i] = (uint16_t)(m == SL_DOWNSAMPLE_MEAN ? mean : m == SL_DOWNSAMPLE_MAX ? best : first);
    }
    *out = o;
}

/* Read the whole array at `path` as uint16; checks its shape. */
static uint16_t *
read_level(sl_store *s, const char *path, uint32_t rank, const uint64_t *shape)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(s, path, NULL, &err);
    cr_assert_not_null(a, "%s: %s", path, err.text);
    cr_assert_eq(sl_array_rank(a), rank);
    cr_assert_arr_eq(sl_array_shape(a), shape, rank * sizeof(uint64_t), "shape of %s", path);
    uint64_t n = count_of(rank, shape);
    uint16_t *v = malloc(n * sizeof(uint16_t));
    struct sl_region all = sl_region_whole(rank, shape);
    cr_assert_eq(sl_array_read_region(a, &all, v, n * sizeof(uint16_t), NULL, NULL, &err), SL_OK,
                 "%s", err.text);
    sl_array_unref(a);
    return v;
}

/* Build get(src) -> pyramid, run it; returns the run status, the plan and puts. */
static sl_status
run_pyramid(sl_pool *pool, sl_array *src, sl_store *out, const char *group,
            const struct sl_pyramid_opts *o, const struct sl_plan_opts *po, sl_plan **plan_out,
            uint32_t *puts, struct sl_error *err)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t get;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, err), SL_OK, "%s", err->text);
    cr_assert_eq(sl_graph_add_pyramid(g, "pyr", get, out, group, o, puts, err), SL_OK, "%s",
                 err->text);
    cr_assert_eq(sl_graph_seal(g, err), SL_OK, "%s", err->text);
    sl_plan *plan = sl_plan_create(g, po, err);
    cr_assert_not_null(plan, "%s", err->text);
    sl_graph_unref(g);
    sl_status st = sl_plan_run(plan, pool, err);
    if (plan_out != NULL)
        *plan_out = plan;
    else
        sl_plan_destroy(plan);
    return st;
}

/* Every level equals the naive reference applied to the level before it. */
static void
check_levels(sl_store *s, const char *group, uint32_t n_levels, sl_downsample_method m,
             uint32_t rank, const uint64_t *shape, const uint16_t *data, const uint64_t *f)
{
    uint64_t cur_shape[SL_MAX_RANK];
    memcpy(cur_shape, shape, rank * sizeof(uint64_t));
    uint16_t *cur = malloc(count_of(rank, shape) * sizeof(uint16_t));
    memcpy(cur, data, count_of(rank, shape) * sizeof(uint16_t));
    for (uint32_t k = 0; k < n_levels; k++) {
        if (k > 0) {
            uint64_t next_shape[SL_MAX_RANK];
            uint16_t *next;
            ref_downsample(m, rank, cur_shape, cur, f, next_shape, &next);
            free(cur);
            cur = next;
            memcpy(cur_shape, next_shape, sizeof(next_shape));
        }
        char path[64];
        snprintf(path, sizeof(path), "%s%s%u", group, group[0] ? "/" : "", k);
        uint16_t *got = read_level(s, path, rank, cur_shape);
        uint64_t n = count_of(rank, cur_shape);
        for (uint64_t i = 0; i < n; i++)
            cr_assert_eq(got[i], cur[i], "level %u element %llu: %u, want %u", k,
                         (unsigned long long)i, got[i], cur[i]);
        free(got);
    }
    free(cur);
}

/* The group's attributes, parsed. */
static json_t *
group_attrs(sl_store *s, const char *key, bool v3)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_get(s, key, NULL, &b, NULL, &err), SL_OK, "%s: %s", key, err.text);
    json_error_t je;
    json_t *doc = json_loadb((const char *)b.data, b.size, 0, &je);
    sl_buf_fini(&b);
    cr_assert_not_null(doc, "%s: %s", key, je.text);
    json_t *attrs = v3 ? json_incref(json_object_get(doc, "attributes")) : json_incref(doc);
    json_decref(doc);
    cr_assert_not_null(attrs);
    return attrs;
}

static void
assert_reals(const json_t *list, const double *want, uint32_t n, const char *what)
{
    cr_assert(json_is_array(list), "%s is not a list", what);
    cr_assert_eq(json_array_size(list), n, "%s has %zu entries", what, json_array_size(list));
    for (uint32_t i = 0; i < n; i++)
        cr_assert_float_eq(json_number_value(json_array_get(list, i)), want[i], 1e-12,
                           "%s[%u] = %g, want %g", what, i,
                           json_number_value(json_array_get(list, i)), want[i]);
}

/* One dataset's path, scale and translation. */
static void
assert_dataset(const json_t *ds, uint32_t k, uint32_t rank, const double *scale,
               const double *translation)
{
    char want[16], what[64];
    snprintf(want, sizeof(want), "%u", k);
    cr_assert_str_eq(json_string_value(json_object_get(ds, "path")), want);
    const json_t *ct = json_object_get(ds, "coordinateTransformations");
    cr_assert_eq(json_array_size(ct), 2, "level %u: scale and translation", k);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(ct, 0), "type")), "scale");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(ct, 1), "type")),
                     "translation");
    snprintf(what, sizeof(what), "level %u scale", k);
    assert_reals(json_object_get(json_array_get(ct, 0), "scale"), scale, rank, what);
    snprintf(what, sizeof(what), "level %u translation", k);
    assert_reals(json_object_get(json_array_get(ct, 1), "translation"), translation, rank, what);
}

/* The 5-D TCZYX case of the issue, small: 3 levels of 2x mean over Z, Y, X,
 * rechunked and sharded, in a Zarr v3 group: values and OME-Zarr 0.5. */
Test(graph_pyramid, tczyx_mean_levels_match_reference_and_ome_0_5)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = mem_store();
    const uint64_t shape[] = {2, 2, 9, 37, 29}, chunk[] = {1, 1, 4, 8, 8};
    uint16_t *data;
    sl_array *src = make_input(s, "src", 5, shape, chunk, &data);

    struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
    o.n_levels = 3;
    const uint64_t f[] = {1, 1, 2, 2, 2};
    memcpy(o.factor, f, sizeof(f));
    const uint64_t lchunk[] = {1, 1, 4, 16, 8}, lshard[] = {1, 1, 4, 32, 16};
    memcpy(o.level.chunk_shape, lchunk, sizeof(lchunk));
    memcpy(o.level.shard_shape, lshard, sizeof(lshard));
    o.name = "fish";
    o.axes[2].unit = o.axes[3].unit = o.axes[4].unit = "micrometer";
    o.axes[0].unit = "second";
    const double s0[] = {30.0, 1.0, 2.0, 0.5, 0.5};
    memcpy(o.scale, s0, sizeof(s0));
    o.translation[3] = 10.0;
    struct sl_error err = SL_ERROR_INIT;
    uint32_t puts[3];
    sl_plan *plan;
    cr_assert_eq(run_pyramid(pool, src, s, "img", &o, NULL, &plan, puts, &err), SL_OK, "%s",
                 err.text);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, puts[2], &ps, NULL), SL_OK);
    cr_assert_str_eq(ps.name, "pyr.2");
    const uint64_t top[] = {2, 2, 3, 10, 8};
    cr_assert_arr_eq(ps.grid->shape, top, sizeof(top), "ceil(ceil(n/2)/2)");
    sl_plan_destroy(plan);
    check_levels(s, "img", 3, SL_DOWNSAMPLE_MEAN, 5, shape, data, f);

    /* Chunks and shards clipped to each level; dimension names = axes. */
    sl_array *l2 = sl_array_open(s, "img/2", NULL, &err);
    cr_assert_not_null(l2, "%s", err.text);
    const uint64_t c2[] = {1, 1, 3, 10, 8}, sh2[] = {1, 1, 3, 10, 8};
    cr_assert_arr_eq(sl_array_chunk_shape(l2), c2, sizeof(c2));
    cr_assert_arr_eq(sl_array_shard_shape(l2), sh2, sizeof(sh2));
    cr_assert_str_eq(sl_array_dimension_name(l2, 0), "t");
    cr_assert_str_eq(sl_array_dimension_name(l2, 4), "x");
    sl_array_unref(l2);
    sl_array *l1 = sl_array_open(s, "img/1", NULL, &err);
    /* Level 1 is (2, 2, 5, 19, 15): whole shards still fit. */
    const uint64_t c1[] = {1, 1, 4, 16, 8}, sh1[] = {1, 1, 4, 32, 16};
    cr_assert_arr_eq(sl_array_chunk_shape(l1), c1, sizeof(c1));
    cr_assert_arr_eq(sl_array_shard_shape(l1), sh1, sizeof(sh1));
    sl_array_unref(l1);

    json_t *attrs = group_attrs(s, "img/zarr.json", true);
    const json_t *ome = json_object_get(attrs, "ome");
    cr_assert_str_eq(json_string_value(json_object_get(ome, "version")), "0.5");
    const json_t *ms = json_array_get(json_object_get(ome, "multiscales"), 0);
    cr_assert_not_null(ms);
    cr_assert_null(json_object_get(ms, "version"), "0.5 keeps the version outside multiscales");
    cr_assert_str_eq(json_string_value(json_object_get(ms, "name")), "fish");
    cr_assert_str_eq(json_string_value(json_object_get(ms, "type")), "mean");
    const json_t *axes = json_object_get(ms, "axes");
    const char *names[] = {"t", "c", "z", "y", "x"};
    const char *types[] = {"time", "channel", "space", "space", "space"};
    cr_assert_eq(json_array_size(axes), 5);
    for (size_t d = 0; d < 5; d++) {
        const json_t *a = json_array_get(axes, d);
        cr_assert_str_eq(json_string_value(json_object_get(a, "name")), names[d]);
        cr_assert_str_eq(json_string_value(json_object_get(a, "type")), types[d]);
    }
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(axes, 0), "unit")), "second");
    cr_assert_null(json_object_get(json_array_get(axes, 1), "unit"));
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(axes, 4), "unit")),
                     "micrometer");
    const json_t *datasets = json_object_get(ms, "datasets");
    cr_assert_eq(json_array_size(datasets), 3);
    /* scale_k = s0 * 2^k on z, y, x; translation grows by (2 - 1)/2 * scale_{k-1}. */
    const double sc[3][5] = {{30, 1, 2, 0.5, 0.5}, {30, 1, 4, 1, 1}, {30, 1, 8, 2, 2}};
    const double tr[3][5] = {{0, 0, 0, 10, 0}, {0, 0, 1, 10.25, 0.25}, {0, 0, 3, 10.75, 0.75}};
    for (uint32_t k = 0; k < 3; k++)
        assert_dataset(json_array_get(datasets, k), k, 5, sc[k], tr[k]);
    const json_t *meta = json_object_get(ms, "metadata");
    const json_t *kw = json_object_get(meta, "kwargs");
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(kw, "factors"), 4)), 2);
    cr_assert_str_eq(json_string_value(json_object_get(kw, "method")), "mean");
    json_decref(attrs);

    free(data);
    sl_array_unref(src);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

/* A Zarr v2 group: OME-Zarr 0.4 in .zattrs; max keeps extremes; stride keeps
 * translations (a block's first pixel, not its centre). */
Test(graph_pyramid, v2_group_has_ome_0_4_and_each_method_its_translation)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = mem_store();
    const uint64_t shape[] = {21, 30, 17}, chunk[] = {8, 8, 8};
    uint16_t *data;
    sl_array *src = make_input(s, "src", 3, shape, chunk, &data);
    const uint64_t f[] = {3, 2, 2};
    sl_downsample_method methods[] = {SL_DOWNSAMPLE_MAX, SL_DOWNSAMPLE_STRIDE};
    for (size_t i = 0; i < 2; i++) {
        struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
        o.n_levels = 3;
        o.method = methods[i];
        memcpy(o.factor, f, sizeof(f));
        o.level.zarr_format = 2;
        const char *group = i == 0 ? "max" : "stride";
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(run_pyramid(pool, src, s, group, &o, NULL, NULL, NULL, &err), SL_OK, "%s",
                     err.text);
        check_levels(s, group, 3, methods[i], 3, shape, data, f);

        char key[64];
        snprintf(key, sizeof(key), "%s/.zattrs", group);
        json_t *attrs = group_attrs(s, key, false);
        const json_t *ms = json_array_get(json_object_get(attrs, "multiscales"), 0);
        cr_assert_str_eq(json_string_value(json_object_get(ms, "version")), "0.4");
        cr_assert_null(json_object_get(ms, "name"));
        cr_assert_str_eq(json_string_value(json_object_get(ms, "type")),
                         sl_downsample_method_name(methods[i]));
        const json_t *axes = json_object_get(ms, "axes");
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(axes, 0), "name")), "z");
        const json_t *datasets = json_object_get(ms, "datasets");
        const double sc[3][3] = {{1, 1, 1}, {3, 2, 2}, {9, 4, 4}};
        const double centre[3][3] = {{0, 0, 0}, {1, 0.5, 0.5}, {4, 1.5, 1.5}};
        const double zero[3][3] = {{0}};
        for (uint32_t k = 0; k < 3; k++)
            assert_dataset(json_array_get(datasets, k), k, 3, sc[k],
                           methods[i] == SL_DOWNSAMPLE_STRIDE ? zero[0] : centre[k]);
        json_decref(attrs);
        /* .zgroup is exactly {"zarr_format": 2}, nothing after it. */
        snprintf(key, sizeof(key), "%s/.zgroup", group);
        json_t *zgroup = group_attrs(s, key, false);
        cr_assert_eq(json_integer_value(json_object_get(zgroup, "zarr_format")), 2);
        json_decref(zgroup);
    }
    free(data);
    sl_array_unref(src);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

/* A corrupt input chunk fails its level-0 chunk, and every chunk above it
 * that reads it fails as upstream; the rest of each level is written. */
Test(graph_pyramid, failed_chunk_propagates_up_the_levels)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = mem_store();
    const uint64_t shape[] = {32, 32}, chunk[] = {8, 8};
    uint16_t *data;
    sl_array *src = make_input(s, "src", 2, shape, chunk, &data);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, "src/c/3/1", "garbage", 7, &err), SL_OK, "%s", err.text);
    struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
    o.n_levels = 3;
    o.factor[0] = o.factor[1] = 2;
    uint32_t puts[3];
    sl_plan *plan;
    struct sl_plan_opts po = SL_PLAN_OPTS_DEFAULT;
    po.memory_budget = 64 << 10;
    cr_assert_eq(run_pyramid(pool, src, s, "", &o, &po, &plan, puts, &err), SL_ECORRUPT, "%s",
                 err.text);
    cr_assert_not_null(strstr(err.text, "src/c/3/1"), "%s", err.text);
    /* Level shapes 32, 16, 8 in chunks of 8: chunk (3, 1), then (1, 0), then (0, 0). */
    const uint64_t bad[3] = {3 * 4 + 1, 1 * 2 + 0, 0};
    const sl_status want[3] = {SL_ECORRUPT, SL_EUPSTREAM, SL_EUPSTREAM};
    const uint64_t total[3] = {16, 4, 1};
    for (uint32_t k = 0; k < 3; k++) {
        struct sl_put_status ps;
        cr_assert_eq(sl_plan_put_status(plan, puts[k], &ps, NULL), SL_OK);
        cr_assert_eq(ps.codes[bad[k]], want[k], "level %u: %s", k,
                     sl_status_name((sl_status)ps.codes[bad[k]]));
        cr_assert_eq(ps.n_failed, 1, "level %u", k);
        cr_assert_eq(ps.n_ok, total[k] - 1, "level %u", k);
    }
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_eq(sum.n_failed, 1);
    cr_assert_eq(sum.n_upstream, 2);
    cr_assert_leq(sum.peak_bytes, po.memory_budget);
    sl_plan_destroy(plan);
    free(data);
    sl_array_unref(src);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

/* Level shapes of the fish by the ceil rule, and where they stop. */
Test(graph_pyramid, layout_follows_ceil_and_refuses_levels_that_shrink_nothing)
{
    const uint64_t fish[] = {24, 2, 42, 3800, 13100}, chunk[] = {1, 1, 32, 256, 256};
    struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
    const uint64_t f[] = {1, 1, 2, 2, 2};
    memcpy(o.factor, f, sizeof(f));
    o.n_levels = 15;
    struct sl__pyramid_layout *l = malloc(sizeof(*l));
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_U16, 5, fish, chunk, &o, &err), SL_OK, "%s",
                 err.text);
    const uint64_t l4[] = {24, 2, 3, 238, 819}, l14[] = {24, 2, 1, 1, 1};
    cr_assert_arr_eq(l->shape[4], l4, sizeof(l4));
    cr_assert_arr_eq(l->shape[14], l14, sizeof(l14));
    const uint64_t c4[] = {1, 1, 3, 238, 256};
    cr_assert_arr_eq(l->chunk[4], c4, sizeof(c4), "chunks clipped to the level");
    /* 13100 reaches 1 at level 14; a 16th level would equal the 15th. */
    o.n_levels = 16;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_U16, 5, fish, chunk, &o, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "level 15 would equal level 14"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "at most 15 levels"), "%s", err.text);

    /* Factors of 1 everywhere allow one level only. */
    const uint64_t ones[] = {1, 1, 1, 1, 1};
    memcpy(o.factor, ones, sizeof(ones));
    o.n_levels = 1;
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_U16, 5, fish, chunk, &o, NULL), SL_OK);
    o.n_levels = 2;
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_U16, 5, fish, chunk, &o, NULL), SL_EINVAL);
    free(l);
}

/* Each refusal names what is wrong, and none writes anything or adds a node. */
Test(graph_pyramid, refusals_name_the_problem_and_leave_graph_and_store_alone)
{
    sl_store *s = mem_store();
    const uint64_t shape[] = {16, 16}, chunk[] = {8, 8};
    uint16_t *data;
    sl_array *src = make_input(s, "src", 2, shape, chunk, &data);
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t get;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, NULL), SL_OK);
    struct sl_store_stats before;
    sl_store_get_stats(s, &before);

    struct sl_pyramid_opts base = SL_PYRAMID_OPTS_DEFAULT;
    base.n_levels = 2;
    base.factor[0] = base.factor[1] = 2;

    struct sl_pyramid_opts o = base;
    struct sl_error err = SL_ERROR_INIT;
    o.factor[1] = 0;
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "out", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "factor"), "%s", err.text);

    o = base;
    err = SL_ERROR_INIT;
    o.n_levels = 0;
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "out", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "0 levels; 1 to 64 allowed"), "%s", err.text);

    o = base;
    err = SL_ERROR_INIT;
    o.axes[0].type = "space";
    o.axes[1].type = "time";
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "out", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "axis types [space, time] break OME-Zarr's order"), "%s",
                       err.text);

    /* Types longer than the message's list (found by fuzzing: the list
     * was written past its buffer): cut with "...", still refused. */
    char long_type[400];
    memset(long_type, 'q', sizeof(long_type) - 1);
    long_type[sizeof(long_type) - 1] = '\0';
    o = base;
    err = SL_ERROR_INIT;
    o.axes[0].type = "space";
    o.axes[1].type = long_type;
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "out", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "axis types [space, qqqq"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "qq...] break OME-Zarr's order"), "%s", err.text);

    o = base;
    err = SL_ERROR_INIT;
    o.axes[0].name = "x";
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "out", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "axes 0 and 1 are both named \"x\""), "%s", err.text);

    o = base;
    err = SL_ERROR_INIT;
    o.scale[0] = -1;
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "out", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "axis 0 (\"y\") has scale -1"), "%s", err.text);

    o = base;
    err = SL_ERROR_INIT;
    o.method = SL_DOWNSAMPLE_MEAN;
    o.level.shard_shape[0] = 12;
    o.level.shard_shape[1] = 16;
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "out", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "shard extent 12 of dimension 0 is not a multiple"), "%s",
                       err.text);

    o = base;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_pyramid(g, "a-name-far-too-long-for-the-prefix-of-its-level-nodes",
                                      get, s, "out", &o, NULL, &err),
                 SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "1 to 48 characters"), "%s", err.text);

    cr_assert_eq(sl_graph_node_count(g), 1, "no refusal added a node");
    struct sl_store_stats after;
    sl_store_get_stats(s, &after);
    cr_assert_eq(after.n_set, before.n_set, "no refusal wrote to the store");

    /* Something already at the group's path: refused unless overwriting. */
    cr_assert_eq(sl_group_create(s, "taken", 3, NULL, NULL), SL_OK);
    o = base;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "taken", &o, NULL, &err), SL_EEXIST);
    cr_assert_not_null(strstr(err.text, "\"taken\" already holds a Zarr v3 group"), "%s", err.text);
    o.level.overwrite = true;
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "taken", &o, NULL, &err), SL_OK, "%s",
                 err.text);
    /* Level 1 is reduced per chunk of level 0 (half its chunk shape), then
     * gathered into its own chunks by the put's rechunk. */
    cr_assert_eq(sl_graph_node_count(g), 1 + 1 + 4, "put 0, then get, downsample, rechunk, put");
    /* The same prefix again: its node names are taken; the store is untouched. */
    sl_store_get_stats(s, &before);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "other", &base, NULL, &err), SL_EEXIST);
    cr_assert_not_null(strstr(err.text, "a node named \"p.0\" already exists"), "%s", err.text);
    sl_store_get_stats(s, &after);
    cr_assert_eq(after.n_set, before.n_set);

    /* After sealing nothing can be added. */
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_pyramid(g, "q", get, s, "other", &base, NULL, &err), SL_ESTATE);
    sl_graph_unref(g);
    free(data);
    sl_array_unref(src);
    sl_store_unref(s);
}

/* Ranks outside OME-Zarr's 2..5 and methods the dtype lacks are refused. */
Test(graph_pyramid, refuses_ranks_and_methods_ome_or_the_dtype_lack)
{
    struct sl__pyramid_layout *l = malloc(sizeof(*l));
    struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
    const uint64_t shape[6] = {4, 4, 4, 4, 4, 4};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_U16, 6, shape, shape, &o, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "2 to 5 dimensions; the input has 6"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_U16, 1, shape, shape, &o, &err), SL_EINVAL);
    o.factor[0] = o.factor[1] = 2;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_F16, 2, shape, shape, &o, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "float16"), "%s", err.text);
    o.method = SL_DOWNSAMPLE_STRIDE;
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_F16, 2, shape, shape, &o, NULL), SL_OK);
    const uint64_t empty[] = {4, 0};
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_F16, 2, empty, shape, &o, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "empty dimension 1"), "%s", err.text);
    free(l);
}

/* Axis names from the options, types from well-known names, the rest by position. */
Test(graph_pyramid, axes_default_by_name_then_position)
{
    struct sl__pyramid_layout *l = malloc(sizeof(*l));
    struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
    const uint64_t shape[] = {3, 4, 8, 8}, chunk[] = {1, 4, 8, 8};
    for (int d = 0; d < 4; d++)
        o.factor[d] = d < 2 ? 1 : 2;
    o.axes[0].name = "t";
    o.axes[1].name = "depth";
    o.axes[1].type = "space";
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_U8, 4, shape, chunk, &o, NULL), SL_OK);
    cr_assert_str_eq(l->axes[0].type, "time");
    cr_assert_str_eq(l->axes[1].type, "space");
    cr_assert_str_eq(l->axes[2].name, "y");
    cr_assert_str_eq(l->axes[3].type, "space");
    o.axes[1].type = NULL; /* "depth" in position 1 of rank 4: a space axis */
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_U8, 4, shape, chunk, &o, NULL), SL_OK);
    cr_assert_str_eq(l->axes[1].type, "space");
    o.axes[0].name = "angle"; /* a custom axis first, then three space axes */
    o.axes[0].type = "angle";
    cr_assert_eq(sl__pyramid_layout(l, SL_DTYPE_U8, 4, shape, chunk, &o, NULL), SL_OK);
    free(l);
}

/* into_group: the levels go into an existing group, which keeps its
 * members and attributes (v3's other "ome" keys too); refusals touch
 * nothing; overwrite deletes the level paths only. */
Test(graph_pyramid, into_an_existing_group_keeps_its_members_and_attributes)
{
    sl_store *s = mem_store();
    const uint64_t shape[] = {16, 24}, chunk[] = {8, 8};
    uint16_t *data;
    sl_array *src = make_input(s, "img/raw", 2, shape, chunk, &data);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_group_create(s, "img", 3,
                                 "{\"owner\":\"lab\",\"ome\":{\"version\":\"0.5\",\"omero\":"
                                 "{\"id\":1},\"multiscales\":[{\"stale\":true}]}}",
                                 &err),
                 SL_OK, "%s", err.text);
    cr_assert_eq(sl_group_create(s, "img/labels", 3, "{\"labels\":[\"cells\"]}", &err), SL_OK);
    sl_graph *g = sl_graph_create(NULL, &err);
    uint32_t get;
    cr_assert_eq(sl_graph_add_get(g, "in", src, &get, &err), SL_OK, "%s", err.text);
    struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
    o.n_levels = 2;
    o.factor[0] = o.factor[1] = 2;
    o.into_group = true;
    o.group_attributes = "{\"owner\":\"source\",\"unit\":\"um\",\"multiscales\":[1]}";
    cr_assert_eq(sl_graph_add_pyramid(g, "p", get, s, "img", &o, NULL, &err), SL_OK, "%s",
                 err.text);
    json_t *a = group_attrs(s, "img/zarr.json", true);
    cr_assert_str_eq(json_string_value(json_object_get(a, "owner")), "lab", "the group's own");
    cr_assert_str_eq(json_string_value(json_object_get(a, "unit")), "um", "the source's, added");
    cr_assert_null(json_object_get(a, "multiscales"), "a v3 group's multiscales live in ome");
    json_t *ome = json_object_get(a, "ome");
    cr_assert_not_null(json_object_get(ome, "omero"), "omero stays");
    json_t *ds =
        json_object_get(json_array_get(json_object_get(ome, "multiscales"), 0), "datasets");
    cr_assert_eq(json_array_size(ds), 2, "the stale multiscales replaced");
    json_decref(a);
    a = group_attrs(s, "img/labels/zarr.json", true);
    cr_assert_not_null(json_object_get(a, "labels"), "labels untouched");
    json_decref(a);
    sl_zarr_kind kind;
    cr_assert_eq(sl_zarr_probe(s, "img/raw", &kind, NULL, &err), SL_OK);
    cr_assert_eq(kind, SL_ZARR_ARRAY, "the source member stays");

    /* Level paths taken: refused, nothing written; overwrite replaces them. */
    sl_graph *g2 = sl_graph_create(NULL, &err);
    cr_assert_eq(sl_graph_add_get(g2, "in", src, &get, &err), SL_OK);
    struct sl_store_stats before, after;
    sl_store_get_stats(s, &before);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_pyramid(g2, "p", get, s, "img", &o, NULL, &err), SL_EEXIST);
    cr_assert_not_null(strstr(err.text, "where level 0 goes"), "%s", err.text);
    sl_store_get_stats(s, &after);
    cr_assert_eq(after.n_set, before.n_set, "a refusal writes nothing");
    cr_assert_eq(after.n_delete, before.n_delete, "nor deletes");
    o.level.overwrite = true;
    o.n_levels = 1;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_pyramid(g2, "p", get, s, "img", &o, NULL, &err), SL_OK, "%s",
                 err.text);
    cr_assert_eq(sl_zarr_probe(s, "img/1", &kind, NULL, &err), SL_OK);
    cr_assert_eq(kind, SL_ZARR_ARRAY, "a level the new image does not take stays");
    cr_assert_eq(sl_zarr_probe(s, "img/labels", &kind, NULL, &err), SL_OK);
    cr_assert_eq(kind, SL_ZARR_GROUP, "overwrite deletes the level paths only");

    /* No group, an array, another format. */
    o.level.overwrite = false;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_pyramid(g2, "q", get, s, "none", &o, NULL, &err), SL_ENOTFOUND);
    cr_assert_not_null(strstr(err.text, "holds no Zarr group"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_pyramid(g2, "q", get, s, "img/raw", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "is a Zarr v3 array"), "%s", err.text);
    cr_assert_eq(sl_group_create(s, "v2", 2, NULL, &err), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_pyramid(g2, "q", get, s, "v2", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "only a v3 group holds"), "%s", err.text);
    sl_graph_unref(g);
    sl_graph_unref(g2);
    free(data);
    sl_array_unref(src);
    sl_store_unref(s);
}

/* numpy's linear percentile `p` of the `n` values at `v` (sorted in place). */
static double
ref_percentile(uint16_t *v, size_t n, double p)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint16_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    double r = (double)(n - 1) * p / 100, lo = floor(r);
    size_t i = (size_t)lo, k = i + 1 < n ? i + 1 : i;
    return v[i] + (r - lo) * ((double)v[k] - v[i]);
}

/* The omero windows after a run, one per channel, match the reference;
 * after a failed chunk there are none, and the plan says why. */
Test(graph_pyramid, omero_windows_per_channel_only_after_a_whole_run)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = mem_store();
    const uint64_t shape[] = {3, 20, 24}, chunk[] = {1, 8, 8};
    uint16_t *data;
    sl_array *src = make_input(s, "src", 3, shape, chunk, &data);
    struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
    o.n_levels = 2;
    o.factor[0] = 1;
    o.factor[1] = o.factor[2] = 2;
    o.axes[0].name = "c";
    o.omero = true;
    o.omero_percentiles[0] = 5;
    o.omero_percentiles[1] = 95;
    uint32_t puts[2], node;
    sl_plan *plan;
    struct sl_error err = SL_ERROR_INIT;
    struct sl_plan_opts po = SL_PLAN_OPTS_DEFAULT;
    cr_assert_eq(run_pyramid(pool, src, s, "img", &o, &po, &plan, puts, &err), SL_OK, "%s",
                 err.text);
    cr_assert_eq(sl_graph_find(sl_plan_graph(plan), "pyr.omero", &node, &err), SL_OK, "%s",
                 err.text);
    cr_assert_eq(sl_plan_pyramid_omero(plan, node, &err), SL_OK, "%s", err.text);
    json_t *attrs = group_attrs(s, "img/zarr.json", true);
    const json_t *ch =
        json_object_get(json_object_get(json_object_get(attrs, "ome"), "omero"), "channels");
    cr_assert_eq(json_array_size(ch), 3);
    const size_t n = 20 * 24;
    for (size_t c = 0; c < 3; c++) {
        uint16_t *v = data + c * n;
        const json_t *w = json_object_get(json_array_get(ch, c), "window");
        double got[4], want[4];
        const char *keys[] = {"min", "max", "start", "end"};
        for (int k = 0; k < 4; k++)
            got[k] = json_real_value(json_object_get(w, keys[k]));
        want[2] = ref_percentile(v, n, 5);
        want[3] = ref_percentile(v, n, 95);
        want[0] = v[0];
        want[1] = v[n - 1];
        for (int k = 0; k < 4; k++)
            cr_assert_float_eq(got[k], want[k], 1e-9, "channel %zu %s: %g, want %g", c, keys[k],
                               got[k], want[k]);
    }
    json_decref(attrs);
    sl_plan_destroy(plan);
    /* A corrupt chunk of channel 1: the run fails, the windows are not written. */
    cr_assert_eq(sl_store_set(s, "src/c/1/1/2", "garbage", 7, &err), SL_OK, "%s", err.text);
    o.level.overwrite = true;
    err = SL_ERROR_INIT;
    cr_assert_eq(run_pyramid(pool, src, s, "img", &o, &po, &plan, puts, &err), SL_ECORRUPT, "%s",
                 err.text);
    cr_assert_eq(sl_graph_find(sl_plan_graph(plan), "pyr.omero", &node, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_pyramid_omero(plan, node, &err), SL_EUPSTREAM, "%s", err.text);
    cr_assert_not_null(strstr(err.text, "chunk [1, 1, 2]"), "%s", err.text);
    attrs = group_attrs(s, "img/zarr.json", true);
    cr_assert_null(json_object_get(json_object_get(attrs, "ome"), "omero"));
    cr_assert_not_null(json_object_get(json_object_get(attrs, "ome"), "multiscales"));
    json_decref(attrs);
    sl_plan_destroy(plan);
    /* Percentiles out of order are refused before anything is built. */
    o.omero_percentiles[0] = 50;
    o.omero_percentiles[1] = 10;
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t get;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_pyramid(g, "pyr", get, s, "img2", &o, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "omero percentiles 50 and 10"), "%s", err.text);
    cr_assert_eq(sl_graph_node_count(g), 1);
    sl_graph_unref(g);
    free(data);
    sl_array_unref(src);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}
