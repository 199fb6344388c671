/* SPDX-License-Identifier: MIT */
/*
 * A katdal-style chunk store in a few lines: a getter keyed by (array name,
 * stored chunk region), a selection of some time dumps, and a putter that
 * "writes" each chunk and reports per-chunk success or failure — what dask
 * users built with map_blocks/blockwise, without ~100 µs per task or
 * hashing of functions.
 *
 *   katdal_getter [N_DUMPS] [N_CHANNELS]
 *
 * The virtual array is visibilities[dumps, channels] in chunks of 16 x 64;
 * the selection takes dumps 5..40 and 70..100.  The putter fails one chunk
 * on purpose to show the status array; the program exits 0 when exactly
 * that chunk failed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <sluice.h>

/* The getter: the stored chunk of `array_name` covering `region`.  sluice
 * only ever asks for whole stored chunks, never for the selection's slices. */
static sl_status
get_chunk(void *ctx, const char *array_name, const struct sl_region *region, struct sl_block *out,
          struct sl_error *err)
{
    (void)ctx;
    (void)err;
    float *v = out->view.data;
    uint64_t k = 0;
    for (uint64_t t = region->start[0]; t < region->stop[0]; t++)
        for (uint64_t c = region->start[1]; c < region->stop[1]; c++)
            v[k++] = (float)t + (float)c / 1000.0f;
    printf("get  %s [%" PRIu64 ":%" PRIu64 ", %" PRIu64 ":%" PRIu64 "]\n", array_name,
           region->start[0], region->stop[0], region->start[1], region->stop[1]);
    return SL_OK;
}

/* The putter: a real one would write block->view at block->region of its
 * store; returning an error marks that chunk failed in the status array. */
static sl_status
put_chunk(void *ctx, const char *name, const struct sl_block *block, struct sl_error *err)
{
    (void)ctx;
    if (block->chunk.idx[0] == 2 && block->chunk.idx[1] == 1)
        return sl_error_set(err, SL_EIO, &block->chunk, "%s: pretend the disk is full", name);
    return SL_OK;
}

/* Build get -> select -> put; store the put's id in `*put`. */
static sl_status
build(sl_graph *g, const uint64_t *shape, uint32_t *put, struct sl_error *err)
{
    const uint64_t chunks[2] = {16, 64};
    const struct sl_getter_desc vis = {.array_name = "vis",
                                       .dtype = SL_DTYPE_F32,
                                       .rank = 2,
                                       .shape = shape,
                                       .chunk_shape = chunks,
                                       .fn = get_chunk};
    struct sl_region dumps[2];
    sl_status st;
    uint32_t get, sel;
    if ((st = sl_graph_add_getter(g, "vis", &vis, &get, err)) != SL_OK ||
        (st = sl_region_init(&dumps[0], 2, (const uint64_t[]){5, 0},
                             (const uint64_t[]){40, shape[1]}, err)) != SL_OK ||
        (st = sl_region_init(&dumps[1], 2, (const uint64_t[]){70, 0},
                             (const uint64_t[]){100, shape[1]}, err)) != SL_OK)
        return st;
    const struct sl_select_desc sd = {.n_slices = 2, .slices = dumps, .axis = 0};
    const struct sl_putter_desc pd = {.fn = put_chunk};
    if ((st = sl_graph_add_select(g, "dumps", get, &sd, &sel, err)) != SL_OK ||
        (st = sl_graph_add_putter(g, "store", sel, &pd, put, err)) != SL_OK)
        return st;
    return sl_graph_seal(g, err);
}

/* Print the put's status array, one code per output chunk. */
static void
print_status(const sl_plan *plan, uint32_t put)
{
    struct sl_put_status ps;
    if (sl_plan_put_status(plan, put, &ps, NULL) != SL_OK)
        return;
    for (uint64_t i = 0; i < ps.grid->n_total; i++) {
        uint64_t c[2];
        sl_grid_coords_of(ps.grid, i, c);
        printf("chunk (%" PRIu64 ", %" PRIu64 "): %s\n", c[0], c[1],
               sl_status_name((sl_status)ps.codes[i]));
    }
    size_t n;
    const struct sl_chunk_error *e = sl_plan_errors(plan, &n);
    for (size_t i = 0; i < n; i++)
        printf("failed: %s\n", e[i].text);
}

int
main(int argc, char **argv)
{
    const uint64_t shape[2] = {argc > 1 ? strtoull(argv[1], NULL, 10) : 128,
                               argc > 2 ? strtoull(argv[2], NULL, 10) : 256};
    if (shape[0] < 100 || shape[1] < 65) {
        fprintf(stderr, "usage: katdal_getter [N_DUMPS >= 100] [N_CHANNELS >= 65]\n");
        return 2;
    }
    int rc = 1;
    struct sl_error err = SL_ERROR_INIT;
    sl_plan *plan = NULL;
    sl_pool *pool = NULL;
    uint32_t put;
    sl_graph *g = sl_graph_create(NULL, &err);
    if (g == NULL || build(g, shape, &put, &err) != SL_OK)
        goto out;
    plan = sl_plan_create(g, NULL, &err);
    pool = plan != NULL ? sl_pool_create(NULL, &err) : NULL;
    if (pool == NULL || sl_plan_explain(plan, stdout, NULL) != SL_OK)
        goto out;
    struct sl_error run_err = SL_ERROR_INIT;
    sl_status st = sl_plan_run(plan, pool, &run_err);
    printf("run: %s\n", sl_status_name(st));
    print_status(plan, put);
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    rc = st == SL_EIO && sum.n_failed == 1 && sum.n_ok + 1 == sum.n_chunks ? 0 : 1;
out:
    if (err.code != SL_OK)
        fprintf(stderr, "katdal_getter: %s\n", err.text);
    sl_pool_destroy(pool);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    return rc;
}
