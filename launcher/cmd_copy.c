/* SPDX-License-Identifier: MIT */
/*
 * `sluice copy SRC DST`: convert, rechunk or recompress an array, or a
 * group with everything below it, through one get -> put graph (one pair
 * per array; the put inserts a rechunk when the chunk grids differ), with
 * progress, the memory budget and a per-chunk report.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
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
    .summary = "convert, rechunk or recompress an array or a whole group",
    .usage = "usage: sluice copy SRC DST [options]\n"
             "\n"
             "Copy the Zarr array in directory SRC into a new array in directory DST,\n"
             "converting format, chunks, shards and codec as asked.  When SRC is a group\n"
             "(a whole store too), every array and group below it is copied with its\n"
             "attributes, in one run: the array options apply to every array, and\n"
             "--chunks-for/--shards-for set one array's own.  The output's nodes all take\n"
             "--format, else the format of SRC's group, and consolidated metadata when\n"
             "SRC's group has some.  Every chunk is read once; a failed chunk is reported\n"
             "and the others are copied.  Exit status: 0 when every chunk is copied, 1 when\n"
             "some failed, 2 for bad usage.\n"
             "\n"
             "Options:\n" ARRAY_OPTS_HELP
             "  --chunks-for PATH=C  chunk shape of the group member array PATH (e.g.\n"
             "                       labels/0=1,64,64), over --chunks; repeatable\n"
             "  --shards-for PATH=S  shard shape of member array PATH, over --shards\n",
    .options = RUN_OPTS_HELP "  --help               print this help\n",
    .run = run_copy,
};

/* Most --chunks-for and --shards-for options together. */
#define COPY_MAX_FOR 64

/* One --chunks-for or --shards-for PATH=LIST. */
struct copy_for {
    const char *path;            /* PATH, pointing into argv (not NUL-terminated) */
    size_t path_len;             /* its length */
    bool shards;                 /* --shards-for */
    uint32_t n;                  /* entries in shape */
    uint64_t shape[SL_MAX_RANK]; /* LIST */
    bool used;                   /* some member array is PATH */
};

/* What a copy's graph is built from. */
struct copy_job {
    const char *dst_path;        /* DST as given */
    sl_array *src;               /* the input when SRC is an array */
    struct sl_array_spec spec;   /* its output's layout */
    bool group;                  /* SRC is a group */
    int format;                  /* the output nodes' Zarr format (a group) */
    struct sl_group_tree tree;   /* SRC's group and everything below it */
    struct sl_array_spec *specs; /* per node of `tree`: an array's output layout */
    struct copy_for fors[COPY_MAX_FOR];
    uint32_t n_fors;
};

/* Parse --chunks-for/--shards-for at argv[*i].  1, 0 (not one), 2 (usage). */
static int
copy_for_parse(struct copy_job *j, int argc, char **argv, int *i)
{
    bool shards = strcmp(argv[*i], "--shards-for") == 0;
    if (!shards && strcmp(argv[*i], "--chunks-for") != 0)
        return 0;
    if (*i + 1 >= argc)
        return cmd_usage_error(&cmd_copy, "%s needs a value", argv[*i]);
    const char *v = argv[++*i];
    const char *eq = strrchr(v, '=');
    if (j->n_fors == COPY_MAX_FOR)
        return cmd_usage_error(&cmd_copy, "at most %d --chunks-for and --shards-for options",
                               COPY_MAX_FOR);
    struct copy_for *f = &j->fors[j->n_fors];
    if (eq == NULL || eq == v || !parse_u64_list(eq + 1, f->shape, SL_MAX_RANK, &f->n))
        return cmd_usage_error(&cmd_copy,
                               "%s: \"%s\" is not PATH=LIST (a member array's path, then a "
                               "list of positive integers)",
                               argv[*i - 1], v);
    f->path = v;
    f->path_len = (size_t)(eq - v);
    f->shards = shards;
    j->n_fors++;
    return 1;
}

/* The options for member array `path`: `ao` with its --chunks-for and
 * --shards-for applied. */
static struct array_opts
copy_member_opts(struct copy_job *j, const struct array_opts *ao, const char *path)
{
    struct array_opts o = *ao;
    o.format = j->format;
    for (uint32_t k = 0; k < j->n_fors; k++) {
        struct copy_for *f = &j->fors[k];
        if (strlen(path) != f->path_len || strncmp(path, f->path, f->path_len) != 0)
            continue;
        f->used = true;
        memcpy(f->shards ? o.shards : o.chunks, f->shape, sizeof(f->shape));
        *(f->shards ? &o.n_shards : &o.n_chunks) = f->n;
    }
    return o;
}

/* The spec of member array `m` into `spec`; 0, or 2 after a message
 * naming it. */
static int
copy_member_spec(struct copy_job *j, const struct array_opts *ao, const struct sl_group_node *m,
                 struct sl_array_spec *spec)
{
    struct array_opts o = copy_member_opts(j, ao, m->path);
    uint32_t rank = sl_array_rank(m->array);
    const char *which = o.n_chunks != 0 && o.n_chunks != rank ? "chunks" : "shards";
    uint32_t n = o.n_chunks != 0 && o.n_chunks != rank ? o.n_chunks : o.n_shards;
    if (n != 0 && n != rank)
        return cmd_usage_error(&cmd_copy,
                               "--%s has %" PRIu32 " values but member array \"%s\" has %" PRIu32
                               " dimension%s (give it its own with --%s-for %s=...)",
                               which, n, m->path, rank, CMD_PLURAL(rank), which, m->path);
    return array_opts_spec(&cmd_copy, &o, m->array, sl_array_shape(m->array), spec);
}

/* Read SRC's group: its attributes, members and their specs.  0, 1 (a
 * message said why the input cannot be read) or 2 (usage). */
static int
copy_group_open(struct copy_job *j, sl_store *in, const char *src, const struct array_opts *ao)
{
    struct sl_error err = SL_ERROR_INIT;
    if (sl_group_tree_read(in, "", &j->tree, &err) != SL_OK)
        return cmd_fail("copy", src, &err);
    j->specs = calloc(j->tree.n_nodes + 1, sizeof(*j->specs));
    if (j->specs == NULL)
        return cmd_usage_error(&cmd_copy, "out of memory for %" PRIu32 " members", j->tree.n_nodes);
    for (uint32_t k = 0; k < j->tree.n_nodes; k++)
        if (j->tree.nodes[k].kind == SL_ZARR_ARRAY &&
            copy_member_spec(j, ao, &j->tree.nodes[k], &j->specs[k]) != 0)
            return 2;
    for (uint32_t k = 0; k < j->n_fors; k++)
        if (!j->fors[k].used)
            return cmd_usage_error(&cmd_copy, "%s: SRC's group has no member array \"%.*s\"",
                                   j->fors[k].shards ? "--shards-for" : "--chunks-for",
                                   (int)j->fors[k].path_len, j->fors[k].path);
    return 0;
}

/* A node name for member `k` at `path`: "<what>:<path>" when it fits the
 * graph's name limit beside a ".rechunk" suffix, else "<what>#<k>". */
static void
copy_node_name(char *buf, size_t size, const char *what, uint32_t k, const char *path)
{
    if (strlen(what) + 1 + strlen(path) + sizeof(".rechunk") <= 64)
        snprintf(buf, size, "%s:%s", what, path);
    else
        snprintf(buf, size, "%s#%" PRIu32, what, k);
}

/* One get -> put for array `src` into a new array at `path` of `out`. */
static sl_status
copy_add_array(sl_graph *g, sl_store *out, const char *path, const char *get_name,
               const char *put_name, sl_array *src, const struct sl_array_spec *spec, bool real,
               struct sl_error *err)
{
    sl_array *dst = dest_create_array(out, path, spec, real, err);
    uint32_t get;
    sl_status st = dst != NULL ? sl_graph_add_get(g, get_name, src, &get, err) : err->code;
    if (st == SL_OK)
        st = sl_graph_add_put(g, put_name, get, dst, NULL, err);
    sl_array_unref(dst);
    return st;
}

/* The groups of a copied hierarchy, made by rank 0 (every rank learns the
 * outcome before any array is made, which is collective). */
static sl_status
copy_add_groups(const struct copy_job *j, sl_store *out, bool real, struct sl_error *err)
{
    sl_status st = SL_OK;
    if (!real || dist_rank() == 0) {
        st = sl_group_create(out, "", j->format, j->tree.attributes, err);
        for (uint32_t k = 0; st == SL_OK && k < j->tree.n_nodes; k++)
            if (j->tree.nodes[k].kind == SL_ZARR_GROUP)
                st = sl_group_create(out, j->tree.nodes[k].path, j->format,
                                     j->tree.nodes[k].attributes, err);
    }
    return real ? dist_share(st, err) : st;
}

/* The groups of a copied hierarchy, then a get -> put per array, then the
 * consolidated metadata when SRC had some. */
static sl_status
copy_add_group(struct copy_job *j, sl_graph *g, sl_store *out, bool real, struct sl_error *err)
{
    sl_status st = copy_add_groups(j, out, real, err);
    for (uint32_t k = 0; st == SL_OK && k < j->tree.n_nodes; k++) {
        const struct sl_group_node *m = &j->tree.nodes[k];
        if (m->kind != SL_ZARR_ARRAY)
            continue;
        char get[64], put[64];
        copy_node_name(get, sizeof(get), "input", k, m->path);
        copy_node_name(put, sizeof(put), "output", k, m->path);
        st = copy_add_array(g, out, m->path, get, put, m->array, &j->specs[k], real, err);
        if (st != SL_OK && strstr(err->text, m->path) == NULL) {
            struct sl_error e = *err;
            sl_error_set(err, e.code, NULL, "member \"%s\": %s", m->path, e.text);
        }
    }
    /* Every node's metadata is written now: gather it. */
    if (st != SL_OK || !j->tree.consolidated)
        return st;
    if (!real || dist_rank() == 0)
        st = sl_group_consolidate(out, "", err);
    return real ? dist_share(st, err) : st;
}

/* The copy's graph over `out` (graph_build_fn). */
static int
copy_build(void *ctx, sl_store *out, bool real, sl_graph **g)
{
    struct copy_job *j = ctx;
    struct sl_error err = SL_ERROR_INIT;
    *g = sl_graph_create(NULL, &err);
    sl_status st =
        *g == NULL ? SL_ENOMEM
        : j->group ? copy_add_group(j, *g, out, real, &err)
                   : copy_add_array(*g, out, "", "input", "output", j->src, &j->spec, real, &err);
    return st == SL_OK ? 0 : cmd_fail("copy", j->dst_path, &err);
}

static void
copy_job_fini(struct copy_job *j)
{
    sl_group_tree_fini(&j->tree);
    free(j->specs);
    sl_array_unref(j->src);
}

/* Open SRC, an array or a group, into `j`.  0, or the exit status. */
static int
copy_open(struct copy_job *j, sl_store *in, const char *src, const struct array_opts *ao)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_zarr_kind kind = SL_ZARR_NONE;
    int format = 0;
    if (sl_zarr_probe(in, "", &kind, &format, &err) != SL_OK)
        return cmd_fail("copy", src, &err);
    int rc = 0;
    if (kind == SL_ZARR_GROUP) {
        j->group = true;
        j->format = ao->format != 0 ? ao->format : format;
        rc = copy_group_open(j, in, src, ao);
    } else if (j->n_fors != 0) {
        rc = cmd_usage_error(&cmd_copy, "--chunks-for and --shards-for name members of a "
                                        "group; SRC is an array (use --chunks, --shards)");
    } else {
        j->src = sl_array_open(in, "", NULL, &err);
        rc = j->src == NULL
                 ? cmd_fail("copy", src, &err)
                 : array_opts_spec(&cmd_copy, ao, j->src, sl_array_shape(j->src), &j->spec);
    }
    return rc;
}

static int
run_copy(int argc, char **argv)
{
    struct array_opts ao = {0};
    struct run_opts ro = RUN_OPTS_DEFAULT;
    const char *paths[2] = {NULL, NULL};
    int n_paths = 0;
    struct copy_job *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return cmd_usage_error(&cmd_copy, "out of memory");
    int rc = 0;
    for (int i = 1; rc == 0 && i < argc; i++) {
        int r = array_opts_parse(&cmd_copy, &ao, argc, argv, &i);
        if (r == 0)
            r = copy_for_parse(j, argc, argv, &i);
        if (r == 0)
            r = run_opts_parse(&cmd_copy, &ro, argc, argv, &i);
        if (r == 0 && cmd_take_path(&cmd_copy, argv[i], paths, &n_paths, 2) != 0)
            r = 2;
        rc = r == 2 ? 2 : 0;
    }
    if (rc == 0 && n_paths != 2)
        rc = cmd_usage_error(&cmd_copy, "need SRC and DST");
    if (rc == 0 && dest_check_alias(&cmd_copy, paths[0], paths[1]) != 0)
        rc = 2;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *in = rc == 0 ? open_input_store(paths[0], &ro, &err) : NULL;
    if (rc == 0 && in == NULL)
        rc = cmd_fail("copy", paths[0], &err);
    j->dst_path = paths[1];
    if (rc == 0)
        rc = copy_open(j, in, paths[0], &ao);
    if (rc == 0)
        rc = dest_write(&cmd_copy, paths[0], paths[1], &ao, copy_build, j, &ro, "copy");
    copy_job_fini(j);
    free(j);
    sl_store_unref(in);
    return rc;
}
