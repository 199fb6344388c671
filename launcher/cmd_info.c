/* SPDX-License-Identifier: MIT */
/*
 * `sluice info PATH`: describe the Zarr array or group stored in directory
 * PATH: format, shape, dtype, chunk and shard grids, codecs, fill value,
 * dimension names, attributes, and how many chunk objects are stored and
 * their bytes; for a group, its attributes and the arrays and groups in it.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

#include "commands.h"
#include "runner.h"

static int run_info(int argc, char **argv);

const struct cmd cmd_info = {
    .name = "info",
    .summary = "describe a stored Zarr array or group",
    .usage = "usage: sluice info [--no-stored] PATH\n"
             "\n"
             "Describe the Zarr v2 or v3 array (or group) at PATH, a directory or a\n"
             "URL (http://, https://, s3://); a remote group's members come from its\n"
             "consolidated metadata.\n"
             "\n"
             "Options:\n"
             "  --no-stored          do not list the store to count stored chunks and "
             "bytes\n" REMOTE_OPTS_HELP "  --help               print this help\n",
    .run = run_info,
};

static void
print_dims(const char *label, uint32_t rank, const uint64_t *v)
{
    char text[512];
    sl_shape_format(rank, v, text, sizeof(text));
    printf("%-12s %s", label, text);
}

/* "[8, 8, 8], 512 chunks" for the grid of `shape` in pieces of `piece`. */
static void
print_grid(uint32_t rank, const uint64_t *shape, const uint64_t *piece, const char *noun)
{
    uint64_t n[SL_MAX_RANK], total = 1;
    for (uint32_t d = 0; d < rank; d++) {
        n[d] = (shape[d] + piece[d] - 1) / piece[d];
        total *= n[d];
    }
    char text[512];
    sl_shape_format(rank, n, text, sizeof(text));
    printf("  (grid %s, %" PRIu64 " %s)\n", text, total, noun);
}

static int
info_stored(const sl_array *a, const char *path)
{
    struct sl_array_stored st;
    struct sl_error err = SL_ERROR_INIT;
    sl_status s = sl_array_stored(a, &st, &err);
    if (s == SL_EUNSUPPORTED) { /* HTTP: no listing */
        printf("%-12s not counted: the store cannot list (%s)\n", "stored:", err.text);
        return 0;
    }
    if (s != SL_OK)
        return cmd_fail("info", path, &err);
    uint64_t n = 1;
    for (uint32_t d = 0; d < sl_array_rank(a); d++)
        n *= sl_array_shape(a)[d];
    double logical = (double)n * (double)sl_dtype_size(sl_array_dtype(a));
    printf("%-12s %" PRIu64 " %s, %" PRIu64 " bytes", "stored:", st.n_objects,
           sl_array_shard_shape(a) != NULL ? "shards" : "chunks", st.n_bytes);
    if (st.n_bytes > 0)
        printf(" (%.0f bytes decoded, ratio %.2f)", logical, logical / (double)st.n_bytes);
    printf("\n");
    return 0;
}

static int
info_array(const sl_array *a, const char *path, bool stored)
{
    uint32_t rank = sl_array_rank(a);
    char text[2048];
    printf("%-12s Zarr v%d array\n", "format:", sl_array_zarr_format(a));
    print_dims("shape:", rank, sl_array_shape(a));
    printf("\n%-12s %s\n", "dtype:", sl_dtype_name(sl_array_dtype(a)));
    print_dims("chunks:", rank, sl_array_chunk_shape(a));
    print_grid(rank, sl_array_shape(a), sl_array_chunk_shape(a), "chunks");
    if (sl_array_shard_shape(a) != NULL) {
        print_dims("shards:", rank, sl_array_shard_shape(a));
        print_grid(rank, sl_array_shape(a), sl_array_shard_shape(a), "shards");
    } else {
        printf("%-12s none\n", "shards:");
    }
    sl_array_codecs_describe(a, text, sizeof(text));
    printf("%-12s %s\n", "codecs:", text);
    sl_array_fill_describe(a, text, sizeof(text));
    printf("%-12s %s\n", "fill value:", text);
    bool named = false;
    for (uint32_t d = 0; d < rank; d++)
        named = named || sl_array_dimension_name(a, d) != NULL;
    if (named) {
        printf("%-12s", "dimensions:");
        for (uint32_t d = 0; d < rank; d++) {
            const char *n = sl_array_dimension_name(a, d);
            printf("%s%s", d ? ", " : " ", n != NULL ? n : "-");
        }
        printf("\n");
    }
    printf("%-12s %s\n", "attributes:", sl_array_attributes(a));
    return stored ? info_stored(a, path) : 0;
}

/* Lists a group's members (sl_group_members): from its consolidated
 * metadata when it has some, else by listing the store. */
struct members {
    int n;
    bool consolidated;
};

static sl_status
print_member(void *arg, const struct sl_group_member *m)
{
    struct members *ms = arg;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = m->kind == SL_ZARR_ARRAY ? sl_group_member_open(m, NULL, &err) : NULL;
    char what[700] = "";
    if (a != NULL) {
        char shape[256];
        sl_shape_format(sl_array_rank(a), sl_array_shape(a), shape, sizeof(shape));
        snprintf(what, sizeof(what), " %s %s", sl_dtype_name(sl_array_dtype(a)), shape);
    } else if (m->kind == SL_ZARR_ARRAY) {
        char line[600];
        sl_error_format(&err, line, sizeof(line));
        snprintf(what, sizeof(what), " (cannot open: %s)", line);
    }
    printf("  %-40s v%d %s%s\n", m->path, m->zarr_format,
           m->kind == SL_ZARR_GROUP   ? "group"
           : m->kind == SL_ZARR_ARRAY ? "array"
                                      : "unreadable",
           what);
    ms->n++;
    ms->consolidated = ms->consolidated || m->consolidated;
    sl_array_unref(a);
    return SL_OK;
}

static int
info_group(sl_store *store, const char *path, int format)
{
    printf("%-12s Zarr v%d group\n", "format:", format);
    struct members m = {0, false};
    printf("members:\n");
    struct sl_error err = SL_ERROR_INIT;
    sl_status s = sl_group_members(store, "", print_member, &m, &err);
    if (s == SL_EUNSUPPORTED && m.n == 0 && err.path[0] == '\0') {
        printf("  (not listed: the store cannot list and the group has no consolidated "
               "metadata; %s)\n",
               err.text);
        return 0;
    }
    if (s != SL_OK)
        return cmd_fail("info", path, &err);
    if (m.n == 0)
        printf("  (none)\n");
    else if (m.consolidated)
        printf("  (from consolidated metadata)\n");
    return 0;
}

static int
run_info(int argc, char **argv)
{
    const char *path = NULL;
    bool stored = true;
    struct run_opts ro = RUN_OPTS_DEFAULT;
    for (int i = 1; i < argc; i++) {
        int used = remote_opts_parse(&cmd_info, &ro, argc, argv, &i);
        if (used == 2)
            return 2;
        if (used == 1)
            continue;
        if (strcmp(argv[i], "--no-stored") == 0)
            stored = false;
        else if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0)
            return cmd_usage_error(&cmd_info, "unknown option \"%s\"", argv[i]);
        else if (path != NULL)
            return cmd_usage_error(&cmd_info, "more than one PATH");
        else
            path = argv[i];
    }
    if (path == NULL)
        return cmd_usage_error(&cmd_info, "PATH is missing");
    struct sl_error err = SL_ERROR_INIT;
    sl_store *store = open_input_store(path, &ro, &err);
    if (store == NULL)
        return cmd_fail("info", path, &err);
    sl_zarr_kind kind = SL_ZARR_NONE;
    int format = 0, rc;
    if (sl_zarr_probe(store, "", &kind, &format, &err) != SL_OK) {
        rc = cmd_fail("info", path, &err);
    } else if (kind == SL_ZARR_GROUP) {
        printf("%-12s %s\n", "path:", path);
        rc = info_group(store, path, format);
    } else {
        sl_array *a = sl_array_open(store, "", NULL, &err);
        if (a == NULL) {
            rc = cmd_fail("info", path, &err);
        } else {
            printf("%-12s %s\n", "path:", path);
            rc = info_array(a, path, stored);
        }
        sl_array_unref(a);
    }
    sl_store_unref(store);
    return rc;
}
