/* SPDX-License-Identifier: MIT */
/*
 * `sluice downsample SRC DST --factors F1,F2,...`: a get -> downsample ->
 * put graph writing a new array of shape ceil(n / f), with the method,
 * output layout, progress, memory budget and per-chunk report as asked.
 */
#include <stdio.h>
#include <string.h>

#include <sluice.h>

#include "array_opts.h"
#include "commands.h"
#include "dest.h"
#include "dist.h"
#include "downsample_opts.h"
#include "runner.h"

static int run_downsample(int argc, char **argv);

const struct cmd cmd_downsample = {
    .name = "downsample",
    .summary = "downsample an array by integer factors (mean, stride, min, max, median, mode)",
    .usage = "usage: sluice downsample SRC DST --factors F1,F2,... [options]\n"
             "\n"
             "Downsample the Zarr array in directory SRC into a new array in directory\n"
             "DST: each output element reduces a block of F1 x F2 x ... input elements;\n"
             "blocks at the far edges may be partial (TensorStore's rule), so the output\n"
             "extent is ceil(n / F).  Output chunks default to the input's, clipped to\n"
             "the output shape.  Exit status: 0 when every chunk is written, 1 when some\n"
             "failed (each is reported), 2 for bad usage.\n"
             "\n"
             "Options:\n" DOWNSAMPLE_OPTS_HELP ARRAY_OPTS_HELP,
    .options = RUN_OPTS_HELP "  --help               print this help\n",
    .run = run_downsample,
};

/* Clip the spec's chunk and shard shapes to its shape, keeping shards whole
 * multiples of chunks. */
static void
ds_clip_layout(struct sl_array_spec *spec)
{
    for (uint32_t d = 0; d < spec->rank; d++) {
        uint64_t n = spec->shape[d] > 0 ? spec->shape[d] : 1;
        uint64_t c = spec->chunk_shape[d] < n ? spec->chunk_shape[d] : n;
        uint64_t whole = (n + c - 1) / c * c;
        spec->chunk_shape[d] = c;
        if (spec->shard_shape[d] > whole)
            spec->shard_shape[d] = whole;
    }
}

/* Parse the command line into `paths`, `o`, `ao` and `ro`; 0, or 2 after a
 * usage error. */
static int
ds_parse_all(const char **paths, struct downsample_opts *o, struct array_opts *ao,
             struct run_opts *ro, int argc, char **argv)
{
    int n_paths = 0;
    for (int i = 1; i < argc; i++) {
        int r = downsample_opts_parse(&cmd_downsample, o, argc, argv, &i);
        if (r == 0)
            r = array_opts_parse(&cmd_downsample, ao, argc, argv, &i);
        if (r == 0)
            r = run_opts_parse(&cmd_downsample, ro, argc, argv, &i);
        if (r == 2)
            return 2;
        if (r == 1)
            continue;
        if (cmd_take_path(&cmd_downsample, argv[i], paths, &n_paths, 2) != 0)
            return 2;
    }
    if (n_paths != 2)
        return cmd_usage_error(&cmd_downsample, "need SRC and DST");
    if (o->n_factors == 0)
        return cmd_usage_error(&cmd_downsample, "need --factors");
    return dest_check_alias(&cmd_downsample, paths[0], paths[1]);
}

/* What a downsample's graph is built from. */
struct ds_job {
    const char *dst_path;      /* DST as given */
    sl_array *src;             /* the input */
    struct sl_op op;           /* the bound downsample */
    struct sl_array_spec spec; /* the output's layout */
};

/* get -> downsample -> put into a new array at the root of `out`
 * (graph_build_fn). */
static int
ds_build(void *ctx, sl_store *out, bool real, sl_graph **g)
{
    struct ds_job *j = ctx;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *dst = dest_create_array(out, "", &j->spec, real, &err);
    *g = dst != NULL ? sl_graph_create(NULL, &err) : NULL;
    uint32_t get, ds;
    int rc = 0;
    /* Reduced per input chunk where the blocks allow: fused with its read. */
    uint64_t chunks[SL_MAX_RANK];
    sl_downsample_chunks(&j->op.u.downsample, sl_array_chunk_shape(j->src), j->spec.chunk_shape,
                         chunks);
    if (*g == NULL || sl_graph_add_get(*g, "input", j->src, &get, &err) != SL_OK ||
        sl_graph_add_op(*g, "downsample", get, &j->op, chunks, &ds, &err) != SL_OK ||
        sl_graph_add_put(*g, "output", ds, dst, NULL, &err) != SL_OK)
        rc = cmd_fail("downsample", j->dst_path, &err);
    sl_array_unref(dst);
    return rc;
}

static int
run_downsample(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    struct downsample_opts dso = {.method = NULL};
    struct array_opts ao = {0};
    struct run_opts ro = RUN_OPTS_DEFAULT;
    int rc = ds_parse_all(paths, &dso, &ao, &ro, argc, argv);
    if (rc != 0)
        return rc;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *in = open_input_store(paths[0], &ro, &err);
    sl_array *src = in != NULL ? sl_array_open(in, "", NULL, &err) : NULL;
    if (src == NULL) {
        sl_store_unref(in);
        return cmd_fail("downsample", paths[0], &err);
    }
    struct ds_job j = {.dst_path = paths[1], .src = src};
    uint64_t shape[SL_MAX_RANK];
    rc = downsample_opts_bind(&cmd_downsample, &dso, src, &j.op);
    if (rc == 0) {
        sl_op_out_shape(&j.op, sl_array_shape(src), shape);
        rc = array_opts_spec(&cmd_downsample, &ao, src, shape, &j.spec);
    }
    if (rc == 0) {
        ds_clip_layout(&j.spec);
        rc = dest_write(&cmd_downsample, paths[0], paths[1], &ao, ds_build, &j, &ro, "downsample");
    }
    sl_array_unref(src);
    sl_store_unref(in);
    return rc;
}
