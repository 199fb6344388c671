/* SPDX-License-Identifier: MIT */
/*
 * A blockwise function of two inputs, as dask's map_blocks with block_info:
 * each call gets the output block and the matching input blocks with their
 * chunk coordinates and regions in the array.  Here: a normalised
 * difference (a - b) / (a + b) of two bands of a virtual image, written to
 * a Zarr v3 array in memory and read back.
 *
 *   blockwise [HEIGHT WIDTH]
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <sluice.h>

/* Two smooth virtual bands; `ctx` selects which. */
static sl_status
band(void *ctx, const char *name, const struct sl_region *r, struct sl_block *out,
     struct sl_error *err)
{
    (void)name;
    (void)err;
    double phase = *(const double *)ctx;
    float *v = out->view.data;
    for (uint64_t y = r->start[0]; y < r->stop[0]; y++)
        for (uint64_t x = r->start[1]; x < r->stop[1]; x++)
            *v++ = 2.0f + (float)sin((double)x / 17.0 + phase) * (float)cos((double)y / 23.0);
    return SL_OK;
}

/* The blockwise function: element by element through the inputs' strides. */
static sl_status
ndiff(void *ctx, struct sl_block *out, size_t n_inputs, const struct sl_block *in,
      struct sl_error *err)
{
    (void)ctx;
    if (n_inputs != 2)
        return sl_error_set(err, SL_EINVAL, &out->chunk, "ndiff takes 2 inputs, got %zu", n_inputs);
    const struct sl_view *a = &in[0].view, *b = &in[1].view;
    float *o = out->view.data;
    for (uint64_t i = 0; i < out->view.shape[0]; i++) {
        for (uint64_t j = 0; j < out->view.shape[1]; j++) {
            float x =
                ((const float *)a->data)[(int64_t)i * a->stride[0] + (int64_t)j * a->stride[1]];
            float y =
                ((const float *)b->data)[(int64_t)i * b->stride[0] + (int64_t)j * b->stride[1]];
            *o++ = (x - y) / (x + y);
        }
    }
    if (out->chunk.idx[0] == 0 && out->chunk.idx[1] == 0)
        printf("block (0, 0) covers [%" PRIu64 ":%" PRIu64 ", %" PRIu64 ":%" PRIu64 "]\n",
               out->region.start[0], out->region.stop[0], out->region.start[1],
               out->region.stop[1]);
    return SL_OK;
}

/* Build bands -> ndiff -> put into `dst`. */
static sl_status
build(sl_graph *g, const uint64_t *shape, sl_array *dst, double *phases, struct sl_error *err)
{
    const uint64_t chunks[2] = {64, 64};
    uint32_t in[2], m;
    sl_status st = SL_OK;
    for (int k = 0; k < 2 && st == SL_OK; k++) {
        const struct sl_getter_desc d = {.array_name = k ? "b" : "a",
                                         .dtype = SL_DTYPE_F32,
                                         .rank = 2,
                                         .shape = shape,
                                         .chunk_shape = chunks,
                                         .fn = band,
                                         .ctx = &phases[k]};
        st = sl_graph_add_getter(g, k ? "b" : "a", &d, &in[k], err);
    }
    const struct sl_map_desc md = {.op_name = "ndiff", .fn = ndiff, .out_dtype = SL_DTYPE_F32};
    if (st == SL_OK)
        st = sl_graph_add_map(g, "ndiff", 2, in, &md, &m, err);
    if (st == SL_OK)
        st = sl_graph_add_put(g, "out", m, dst, NULL, err);
    return st == SL_OK ? sl_graph_seal(g, err) : st;
}

int
main(int argc, char **argv)
{
    const uint64_t shape[2] = {argc > 2 ? strtoull(argv[1], NULL, 10) : 300,
                               argc > 2 ? strtoull(argv[2], NULL, 10) : 500};
    double phases[2] = {0.0, 1.0};
    int rc = 1;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *mem = sl_store_create_memory(NULL, &err);
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = 2;
    spec.dtype = SL_DTYPE_F32;
    for (int d = 0; d < 2; d++) {
        spec.shape[d] = shape[d];
        spec.chunk_shape[d] = 100;
    }
    sl_array *dst = mem != NULL ? sl_array_create(mem, "ndiff", &spec, NULL, &err) : NULL;
    sl_graph *g = dst != NULL ? sl_graph_create(NULL, &err) : NULL;
    sl_plan *plan = NULL;
    sl_pool *pool = NULL;
    float *check = malloc(shape[0] * shape[1] * sizeof(float));
    if (g == NULL || check == NULL || build(g, shape, dst, phases, &err) != SL_OK)
        goto done;
    plan = sl_plan_create(g, NULL, &err);
    pool = plan != NULL ? sl_pool_create(NULL, &err) : NULL;
    if (pool == NULL || sl_plan_run(plan, pool, &err) != SL_OK)
        goto done;
    /* Read the whole result back and check one element. */
    struct sl_region all = sl_region_whole(2, shape);
    if (sl_array_read_region(dst, &all, check, shape[0] * shape[1] * sizeof(float), NULL, NULL,
                             &err) != SL_OK)
        goto done;
    float a = 2.0f + (float)sin(7.0 / 17.0) * (float)cos(5.0 / 23.0);
    float b = 2.0f + (float)sin(7.0 / 17.0 + 1.0) * (float)cos(5.0 / 23.0);
    float want = (a - b) / (a + b), got = check[5 * shape[1] + 7];
    printf("ndiff[5, 7] = %.6f (expected %.6f)\n", got, want);
    rc = fabsf(got - want) < 1e-5f ? 0 : 1;
done:
    if (err.code != SL_OK)
        fprintf(stderr, "blockwise: %s\n", err.text);
    free(check);
    sl_pool_destroy(pool);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_array_unref(dst);
    sl_store_unref(mem);
    return rc;
}
