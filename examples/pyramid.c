/* SPDX-License-Identifier: MIT */
/*
 * A multiscale pyramid through the C API: a generated 5-D TCZYX uint16
 * image (a getter node fills each chunk on demand, so nothing is read) is
 * written as an OME-Zarr 0.5 image group with 4 levels, each a 2x mean
 * downsample of the one before along Z, Y and X, in chunks of
 * (1, 1, 32, 256, 256) inside shards of (1, 1, 32, 1024, 1024), within a
 * memory budget.
 *
 *   pyramid OUTDIR [T C Z Y X]    (default shape 2 2 64 2048 2048: 1 GiB)
 *
 * Exit status 0 when every chunk of every level was written, 1 otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <sluice.h>

#define N_LEVELS 4

/* Fill one chunk of the synthetic image: smooth stripes plus a little
 * hash noise, different per time point and channel. */
static sl_status
synthetic_chunk(void *ctx, const char *array_name, const struct sl_region *region,
                struct sl_block *out, struct sl_error *err)
{
    (void)ctx;
    (void)array_name;
    (void)err;
    uint16_t *v = out->view.data;
    const uint64_t *a = region->start, *b = region->stop;
    for (uint64_t t = a[0]; t < b[0]; t++)
        for (uint64_t c = a[1]; c < b[1]; c++)
            for (uint64_t z = a[2]; z < b[2]; z++)
                for (uint64_t y = a[3]; y < b[3]; y++)
                    for (uint64_t x = a[4]; x < b[4]; x++) {
                        uint64_t h = (x * 0x9e3779b1u) ^ (y * 0x85ebca77u) ^ (z * 0xc2b2ae3du);
                        *v++ = (uint16_t)(1000 + 700 * t + 300 * c + (x + 2 * y + 3 * z) % 512 +
                                          (h >> 7) % 64);
                    }
    return SL_OK;
}

/* Build the graph: the synthetic image and the pyramid written from it. */
static sl_status
build(sl_graph *g, sl_store *out, const uint64_t *shape, uint32_t *level_puts, struct sl_error *err)
{
    static const uint64_t chunk[5] = {1, 1, 32, 256, 256};
    const struct sl_getter_desc image = {.array_name = "synthetic",
                                         .dtype = SL_DTYPE_U16,
                                         .rank = 5,
                                         .shape = shape,
                                         .chunk_shape = chunk,
                                         .fn = synthetic_chunk};
    uint32_t in;
    sl_status st = sl_graph_add_getter(g, "synthetic", &image, &in, err);
    if (st != SL_OK)
        return st;
    struct sl_pyramid_opts o = SL_PYRAMID_OPTS_DEFAULT;
    o.n_levels = N_LEVELS;
    o.method = SL_DOWNSAMPLE_MEAN;
    const uint64_t factor[5] = {1, 1, 2, 2, 2}, shard[5] = {1, 1, 32, 1024, 1024};
    for (int d = 0; d < 5; d++) {
        o.factor[d] = factor[d];
        o.level.chunk_shape[d] = chunk[d];
        o.level.shard_shape[d] = shard[d];
    }
    o.level.zarr_format = 3; /* OME-Zarr 0.5 */
    o.name = "synthetic";
    o.axes[0].unit = "second";
    o.axes[2].unit = o.axes[3].unit = o.axes[4].unit = "micrometer";
    const double scale[5] = {60.0, 1.0, 2.0, 0.4, 0.4}; /* pixel size of level 0 */
    for (int d = 0; d < 5; d++)
        o.scale[d] = scale[d];
    return sl_graph_add_pyramid(g, "level", in, out, "", &o, level_puts, err);
}

/* Seal, plan within a 1 GiB budget, run, and report each level. */
static int
run(sl_graph *g, const uint32_t *level_puts, struct sl_error *err)
{
    struct sl_plan_opts po = SL_PLAN_OPTS_DEFAULT;
    po.memory_budget = (size_t)1 << 30;
    if (sl_graph_seal(g, err) != SL_OK)
        return 1;
    sl_plan *plan = sl_plan_create(g, &po, err);
    if (plan == NULL)
        return 1;
    struct sl_pool_opts pool_opts = SL_POOL_OPTS_DEFAULT;
    sl_pool *pool = sl_pool_create(&pool_opts, err);
    if (pool == NULL) {
        sl_plan_destroy(plan);
        return 1;
    }
    sl_status st = sl_plan_run(plan, pool, err);
    sl_pool_destroy(pool);
    for (uint32_t k = 0; k < N_LEVELS; k++) {
        struct sl_put_status ps;
        if (sl_plan_put_status(plan, level_puts[k], &ps, NULL) != SL_OK)
            continue;
        char text[128];
        sl_shape_format(ps.grid->rank, ps.grid->shape, text, sizeof(text));
        printf("level %" PRIu32 ": shape %s, %" PRIu64 " chunks ok, %" PRIu64 " failed\n", k, text,
               ps.n_ok, ps.n_failed);
    }
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    printf("%.2f s, %" PRIu64 " bytes written, peak %zu bytes of chunk buffers\n", sum.elapsed_s,
           sum.bytes_written, sum.peak_bytes);
    sl_plan_destroy(plan);
    return st == SL_OK ? 0 : 1;
}

int
main(int argc, char **argv)
{
    uint64_t shape[5] = {2, 2, 64, 2048, 2048};
    if (argc != 2 && argc != 7) {
        fprintf(stderr, "usage: %s OUTDIR [T C Z Y X]\n", argv[0]);
        return 2;
    }
    for (int d = 0; argc == 7 && d < 5; d++)
        shape[d] = strtoull(argv[2 + d], NULL, 10);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *out = sl_store_open_fs(argv[1], NULL, &err);
    sl_graph *g = out != NULL ? sl_graph_create(NULL, &err) : NULL;
    uint32_t level_puts[N_LEVELS];
    int rc = 1;
    if (g != NULL && build(g, out, shape, level_puts, &err) == SL_OK)
        rc = run(g, level_puts, &err);
    if (rc != 0) {
        char text[512];
        sl_error_format(&err, text, sizeof(text));
        fprintf(stderr, "pyramid: %s\n", text);
    }
    sl_graph_unref(g);
    sl_store_unref(out);
    return rc;
}
