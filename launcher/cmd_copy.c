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
    sl_store *in = open_dir_store(paths[0], false, &err);
    sl_array *src = in != NULL ? sl_array_open(in, "", NULL, &err) : NULL;
    if (src == NULL) {
        sl_store_unref(in);
        return cmd_fail("copy", paths[0], &err);
    }
    struct sl_array_spec spec;
    int rc = array_opts_spec(&cmd_copy, &ao, src, sl_array_shape(src), &spec);
    sl_store *out = NULL;
    sl_array *dst = NULL;
    struct dest d = {0};
    if (rc == 0)
        rc = dest_begin(&cmd_copy, &d, paths[1], &ao);
    if (rc == 0) {
        out = dest_open_store(&d, &err);
        dst = out != NULL ? dist_create_array(out, "", &spec, &err) : NULL;
        if (dst == NULL)
            rc = cmd_fail("copy", paths[1], &err);
    }
    sl_graph *g = rc == 0 ? sl_graph_create(NULL, &err) : NULL;
    uint32_t get;
    if (rc == 0 && (g == NULL || sl_graph_add_get(g, "input", src, &get, &err) != SL_OK ||
                    sl_graph_add_put(g, "output", get, dst, NULL, &err) != SL_OK))
        rc = cmd_fail("copy", paths[1], &err);
    if (rc == 0)
        rc = run_graph(&cmd_copy, g, &ro, "copy");
    sl_graph_unref(g);
    sl_array_unref(src);
    sl_array_unref(dst);
    sl_store_unref(in);
    sl_store_unref(out);
    return dest_finish(&cmd_copy, &d, rc);
}
