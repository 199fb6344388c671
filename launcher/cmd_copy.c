/* SPDX-License-Identifier: MIT */
/*
 * `sluice copy SRC DST`: convert, rechunk or recompress an array through a
 * get -> put graph (the put inserts a rechunk when the chunk grids differ),
 * with progress, the memory budget and a per-chunk report.
 */
#include <stdio.h>
#include <string.h>

#include <sluice.h>

#include "array_opts.h"
#include "commands.h"
#include "dest.h"
#include "dist.h"
#include "runner.h"

static int run_copy(int argc, char **argv);

const struct cmd cmd_copy = {
    .name = "copy",
    .summary = "convert, rechunk or recompress an array",
    .usage = "usage: sluice copy SRC DST [options]\n"
             "\n"
             "Copy the Zarr array in directory SRC into a new array in directory DST,\n"
             "converting format, chunks, shards and codec as asked.  Every chunk is\n"
             "read once; a failed chunk is reported and the others are copied.  Exit\n"
             "status: 0 when every chunk is copied, 1 when some failed, 2 for bad usage.\n"
             "\n"
             "Options:\n" ARRAY_OPTS_HELP RUN_OPTS_HELP "  --help               print this help\n",
    .run = run_copy,
};

/* What a copy's graph is built from. */
struct copy_job {
    const char *dst_path;      /* DST as given */
    sl_array *src;             /* the input */
    struct sl_array_spec spec; /* the output's layout */
};

/* get -> put into a new array at the root of `out` (graph_build_fn). */
static int
copy_build(void *ctx, sl_store *out, bool real, sl_graph **g)
{
    struct copy_job *j = ctx;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *dst = dest_create_array(out, &j->spec, real, &err);
    *g = dst != NULL ? sl_graph_create(NULL, &err) : NULL;
    uint32_t get;
    int rc = 0;
    if (*g == NULL || sl_graph_add_get(*g, "input", j->src, &get, &err) != SL_OK ||
        sl_graph_add_put(*g, "output", get, dst, NULL, &err) != SL_OK)
        rc = cmd_fail("copy", j->dst_path, &err);
    sl_array_unref(dst);
    return rc;
}

static int
run_copy(int argc, char **argv)
{
    struct array_opts ao = {0};
    struct run_opts ro = RUN_OPTS_DEFAULT;
    const char *paths[2] = {NULL, NULL};
    int n_paths = 0;
    for (int i = 1; i < argc; i++) {
        int r = array_opts_parse(&cmd_copy, &ao, argc, argv, &i);
        if (r == 0)
            r = run_opts_parse(&cmd_copy, &ro, argc, argv, &i);
        if (r == 2)
            return 2;
        if (r == 1)
            continue;
        if (cmd_take_path(&cmd_copy, argv[i], paths, &n_paths, 2) != 0)
            return 2;
    }
    if (n_paths != 2)
        return cmd_usage_error(&cmd_copy, "need SRC and DST");
    if (dest_check_alias(&cmd_copy, paths[0], paths[1]) != 0)
        return 2;

    struct sl_error err = SL_ERROR_INIT;
    sl_store *in = open_input_store(paths[0], &ro, &err);
    struct copy_job j = {.dst_path = paths[1]};
    j.src = in != NULL ? sl_array_open(in, "", NULL, &err) : NULL;
    if (j.src == NULL) {
        sl_store_unref(in);
        return cmd_fail("copy", paths[0], &err);
    }
    int rc = array_opts_spec(&cmd_copy, &ao, j.src, sl_array_shape(j.src), &j.spec);
    if (rc == 0)
        rc = dest_write(&cmd_copy, paths[0], paths[1], &ao, copy_build, &j, &ro, "copy");
    sl_array_unref(j.src);
    sl_store_unref(in);
    return rc;
}
