/* SPDX-License-Identifier: MIT */
/*
 * `sluice pyramid SRC DSTGROUP --levels N --factors F1,F2,...`: a multiscale
 * pyramid of the array SRC as an OME-Zarr image group (0.5 in Zarr v3, 0.4
 * in v2) with arrays "0" (SRC as laid out by the options) to "N-1", each
 * level downsampled from the one before, through sl_graph_add_pyramid.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "array_opts.h"
#include "commands.h"
#include "dest.h"
#include "dist.h"
#include "downsample_opts.h"
#include "runner.h"

static int run_pyramid(int argc, char **argv);

const struct cmd cmd_pyramid = {
    .name = "pyramid",
    .summary = "write a multiscale OME-Zarr pyramid of an array",
    .usage = "usage: sluice pyramid SRC DSTGROUP --levels N --factors F1,F2,... [options]\n"
             "\n"
             "Write the Zarr array in directory SRC as a multiscale image: a Zarr group in\n"
             "directory DSTGROUP with arrays 0 .. N-1 and OME-Zarr \"multiscales\" metadata\n"
             "(version 0.5 in a Zarr v3 group, 0.4 in v2).  Level 0 is SRC laid out as the\n"
             "options say; level k+1 is level k, read back, downsampled by the factors\n"
             "(extent ceil(n / F)).  Chunk and shard shapes apply to every level, clipped to\n"
             "its shape.  SRC's attributes go to the group beside the OME metadata, less\n"
             "the keys it owns (\"ome\", \"multiscales\", \"_ARRAY_DIMENSIONS\").  Exit\n"
             "status: 0 when every chunk of every level is written, 1 when some failed\n"
             "(each is reported; the levels above a failed chunk fail with it), 2 for bad\n"
             "usage.\n"
             "\n"
             "Options:\n"
             "  --levels N           number of levels, 1 or more (required)\n" DOWNSAMPLE_OPTS_HELP
             "  --name NAME          the multiscale image's name (default: DSTGROUP's base name)\n"
             "  --axes A1,A2,...     axis names (default: SRC's dimension names, else t,c,z,y,x\n"
             "                       for 5 dimensions, c,z,y,x for 4, z,y,x for 3, y,x for 2)\n"
             "  --axis-types T1,...  OME axis types: time, channel, space or custom (default:\n"
             "                       by name for t, c, z, y, x, else by position)\n"
             "  --units U1,...       axis units, e.g. ,,micrometer,micrometer,micrometer (an\n"
             "                       empty entry writes none)\n"
             "  --scale S1,...       level 0's pixel size per axis (default 1)\n"
             "  --translation T1,... level 0's offset per axis (default 0)\n"
             "  --member NAME        add the image as member NAME of the existing group\n"
             "                       DSTGROUP (DSTGROUP/NAME), keeping its other members and\n"
             "                       attributes; the image takes DSTGROUP's Zarr format, and\n"
             "                       DSTGROUP's consolidated metadata, if any, is rewritten\n"
             "                       to list it\n"
             "  --into               write the levels 0 .. N-1 straight into the existing\n"
             "                       group DSTGROUP (an OME container beside its labels,\n"
             "                       say), in place: its other members stay, its attributes\n"
             "                       are kept and get the multiscales (SRC's attributes only\n"
             "                       where DSTGROUP lacks the key); a level already there is\n"
             "                       refused unless --overwrite; the levels take DSTGROUP's\n"
             "                       Zarr format; consolidated metadata is rewritten\n"
             "  --omero              write OME \"omero\" metadata too: per channel (index of\n"
             "                       the channel axis; without one, one channel) a window of\n"
             "                       its min, max and 0.1 and 99.9 percentiles, taken in the\n"
             "                       read of SRC that writes level 0; only if no chunk fails\n"
             "  --omero-percentiles LO,HI\n"
             "                       --omero, the window from percentile LO to HI\n"
             "  --smooth gaussian    smooth each level with a Gaussian before reducing it, so\n"
             "                       the next does not alias: sigma sqrt((f^2-1)/(8 ln 2)) per\n"
             "                       factor f, boundary nearest; the levels are then sampled\n"
             "                       (--method stride) unless --method is given (default none)\n",
    .options = ARRAY_OPTS_HELP RUN_OPTS_HELP "  --help               print this help\n",
    .run = run_pyramid,
};

/* Comma-separated words, split in place in a copy of the text. */
struct word_list {
    char text[1024];            /* the copy, NULs at the commas */
    uint32_t n;                 /* words */
    const char *w[SL_MAX_RANK]; /* each word; "" for an empty entry */
};

/* The pyramid-only options. */
struct pyramid_args {
    const char *paths[2];            /* SRC, DSTGROUP */
    const char *member;              /* --member NAME; NULL: none */
    bool into;                       /* --into: the levels go straight into DSTGROUP */
    bool consolidated;               /* --member's or --into's group has consolidated metadata */
    const char *dst;                 /* where the image goes: DSTGROUP, or DSTGROUP/NAME */
    char dst_buf[4096];              /* DSTGROUP/NAME */
    uint32_t levels;                 /* --levels; 0: not given */
    const char *name;                /* --name */
    struct word_list axes;           /* --axes */
    struct word_list types;          /* --axis-types */
    struct word_list units;          /* --units */
    uint32_t n_scale;                /* entries in scale */
    double scale[SL_MAX_RANK];       /* --scale */
    uint32_t n_translation;          /* entries in translation */
    double translation[SL_MAX_RANK]; /* --translation */
    bool omero;                      /* --omero or --omero-percentiles */
    uint32_t n_omero;                /* entries in omero_percentiles: 0 (defaults) or 2 */
    double omero_percentiles[SL_MAX_RANK]; /* --omero-percentiles LO,HI */
    bool smooth;                           /* --smooth gaussian */
};

static bool
split_words(const char *text, struct word_list *out)
{
    if (strlen(text) >= sizeof(out->text))
        return false;
    strcpy(out->text, text);
    out->n = 0;
    char *p = out->text;
    for (;;) {
        if (out->n == SL_MAX_RANK)
            return false;
        out->w[out->n++] = p;
        char *comma = strchr(p, ',');
        if (comma == NULL)
            return true;
        *comma = '\0';
        p = comma + 1;
    }
}

static bool
parse_doubles(const char *text, double *out, uint32_t *n)
{
    *n = 0;
    const char *p = text;
    for (;;) {
        if (*n == SL_MAX_RANK)
            return false;
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno != 0 || !isfinite(v))
            return false;
        out[(*n)++] = v;
        if (*end == '\0')
            return true;
        if (*end != ',')
            return false;
        p = end + 1;
    }
}

/* Consume one pyramid-only option.  @return 1, 0 (not one), 2 (usage error). */
static int
pyramid_parse(struct pyramid_args *a, int argc, char **argv, int *i)
{
    if (strcmp(argv[*i], "--into") == 0 || strcmp(argv[*i], "--omero") == 0) {
        a->into |= argv[*i][2] == 'i';
        a->omero |= argv[*i][2] == 'o';
        return 1;
    }
    static const char *const names[] = {
        "--levels", "--name",        "--axes",   "--axis-types",        "--units",
        "--scale",  "--translation", "--member", "--omero-percentiles", "--smooth"};
    const size_t n_names = sizeof(names) / sizeof(names[0]);
    size_t which = 0;
    while (which < n_names && strcmp(argv[*i], names[which]) != 0)
        which++;
    if (which == n_names)
        return 0;
    if (*i + 1 >= argc)
        return cmd_usage_error(&cmd_pyramid, "%s needs a value", argv[*i]);
    const char *v = argv[++*i];
    bool ok = true;
    char *end;
    switch (which) {
    case 0:
        errno = 0;
        unsigned long n = strtoul(v, &end, 10);
        ok = *end == '\0' && v[0] >= '0' && v[0] <= '9' && errno == 0 && n >= 1 && n <= 64;
        a->levels = ok ? (uint32_t)n : 0;
        break;
    case 1:
        a->name = v;
        break;
    case 2:
        ok = split_words(v, &a->axes);
        break;
    case 3:
        ok = split_words(v, &a->types);
        break;
    case 4:
        ok = split_words(v, &a->units);
        break;
    case 5:
        ok = parse_doubles(v, a->scale, &a->n_scale);
        break;
    case 6:
        ok = parse_doubles(v, a->translation, &a->n_translation);
        break;
    case 7:
        a->member = v;
        ok = v[0] != '\0' && strchr(v, '/') == NULL && strcmp(v, ".") != 0 &&
             strcmp(v, "..") != 0 && strlen(v) < 256;
        break;
    case 9:
        a->smooth = strcmp(v, "gaussian") == 0;
        ok = a->smooth || strcmp(v, "none") == 0;
        break;
    default:
        a->omero = true;
        ok = parse_doubles(v, a->omero_percentiles, &a->n_omero) && a->n_omero == 2 &&
             a->omero_percentiles[0] >= 0 && a->omero_percentiles[0] < a->omero_percentiles[1] &&
             a->omero_percentiles[1] <= 100;
        break;
    }
    if (!ok)
        return cmd_usage_error(&cmd_pyramid, "%s: \"%s\" is not %s", names[which], v,
                               which == 0   ? "a level count from 1 to 64"
                               : which == 7 ? "a member name (one path component, not . or ..)"
                               : which == 8 ? "two percentiles LO,HI with 0 <= LO < HI <= 100"
                               : which == 9 ? "a smoothing: none or gaussian"
                               : which <= 1 ? "a name"
                               : which <= 4 ? "a comma-separated list of at most 16 words"
                                            : "a comma-separated list of finite numbers");
    return 1;
}

/* Parse the command line; 0, or 2 after a usage error. */
static int
pyramid_parse_all(struct pyramid_args *a, struct downsample_opts *dso, struct array_opts *ao,
                  struct run_opts *ro, int argc, char **argv)
{
    int n_paths = 0;
    for (int i = 1; i < argc; i++) {
        int r = pyramid_parse(a, argc, argv, &i);
        if (r == 0)
            r = downsample_opts_parse(&cmd_pyramid, dso, argc, argv, &i);
        if (r == 0)
            r = array_opts_parse(&cmd_pyramid, ao, argc, argv, &i);
        if (r == 0)
            r = run_opts_parse(&cmd_pyramid, ro, argc, argv, &i);
        if (r == 2)
            return 2;
        if (r == 1)
            continue;
        if (cmd_take_path(&cmd_pyramid, argv[i], a->paths, &n_paths, 2) != 0)
            return 2;
    }
    if (n_paths != 2)
        return cmd_usage_error(&cmd_pyramid, "need SRC and DSTGROUP");
    if (a->levels == 0)
        return cmd_usage_error(&cmd_pyramid, "need --levels");
    if (dso->n_factors == 0)
        return cmd_usage_error(&cmd_pyramid, "need --factors");
    a->dst = a->paths[1];
    if (a->member != NULL && a->into)
        return cmd_usage_error(&cmd_pyramid,
                               "--member and --into: give one (a new member of DSTGROUP, or "
                               "the levels straight into DSTGROUP)");
    if (a->omero && dist_size() > 1)
        return cmd_usage_error(&cmd_pyramid,
                               "--omero needs the statistics of every chunk in one process; "
                               "across %d processes each sees only its part: run without "
                               "mpirun, or without --omero",
                               dist_size());
    if (a->into && (ro->resume || ro->rerun_failed != NULL))
        return cmd_usage_error(&cmd_pyramid,
                               "--into writes in place and cannot be resumed: drop %s, or use "
                               "--member NAME (staged, resumable)",
                               ro->resume ? "--resume" : "--rerun-failed");
    if (a->member != NULL) {
        size_t len = strlen(a->paths[1]);
        while (len > 1 && a->paths[1][len - 1] == '/')
            len--;
        snprintf(a->dst_buf, sizeof(a->dst_buf), "%.*s/%s", (int)len, a->paths[1], a->member);
        a->dst = a->dst_buf;
    }
    if (!a->into)
        return dest_check_alias(&cmd_pyramid, a->paths[0], a->dst);
    /* SRC may be a member of DSTGROUP, but not where a level goes. */
    for (uint32_t k = 0; k < a->levels; k++) {
        size_t len = strlen(a->paths[1]);
        while (len > 1 && a->paths[1][len - 1] == '/')
            len--;
        snprintf(a->dst_buf, sizeof(a->dst_buf), "%.*s/%" PRIu32, (int)len, a->paths[1], k);
        if (dest_check_alias(&cmd_pyramid, a->paths[0], a->dst_buf) != 0)
            return 2;
    }
    return 0;
}

/* Check that a per-axis list has one entry per dimension (or was not given). */
static int
check_count(const char *option, uint32_t n, uint32_t rank)
{
    if (n == 0 || n == rank)
        return 0;
    return cmd_usage_error(&cmd_pyramid,
                           "%s has %" PRIu32 " entr%s; the array has %" PRIu32 " dimension%s",
                           option, n, n == 1 ? "y" : "ies", rank, CMD_PLURAL(rank));
}

/* The builder's options from the command line and the source array. */
static int
pyramid_opts_make(const struct pyramid_args *a, const struct downsample_opts *dso,
                  const struct array_opts *ao, const sl_array *src, struct sl_pyramid_opts *o)
{
    uint32_t rank = sl_array_rank(src);
    int rc = check_count("--axes", a->axes.n, rank);
    if (rc == 0)
        rc = check_count("--axis-types", a->types.n, rank);
    if (rc == 0)
        rc = check_count("--units", a->units.n, rank);
    if (rc == 0)
        rc = check_count("--scale", a->n_scale, rank);
    if (rc == 0)
        rc = check_count("--translation", a->n_translation, rank);
    if (rc == 0)
        rc = array_opts_spec(&cmd_pyramid, ao, src, sl_array_shape(src), &o->level);
    if (rc != 0)
        return rc;
    o->n_levels = a->levels;
    memcpy(o->factor, dso->factors, sizeof(o->factor));
    o->omero = a->omero;
    if (a->n_omero == 2)
        memcpy(o->omero_percentiles, a->omero_percentiles, sizeof(o->omero_percentiles));
    /* A smoothed level is sampled (stride) unless --method says otherwise. */
    o->smooth = a->smooth ? SL_PYRAMID_SMOOTH_GAUSSIAN : SL_PYRAMID_SMOOTH_NONE;
    if (a->smooth)
        o->method = SL_DOWNSAMPLE_STRIDE;
    struct sl_error err = SL_ERROR_INIT;
    if (dso->method != NULL &&
        sl_downsample_method_from_name(dso->method, &o->method, &err) != SL_OK)
        return cmd_usage_error(&cmd_pyramid, "%s", err.text);
    for (uint32_t d = 0; d < rank; d++) {
        o->axes[d].name = a->axes.n != 0 ? a->axes.w[d] : sl_array_dimension_name(src, d);
        o->axes[d].type = a->types.n != 0 ? a->types.w[d] : NULL;
        o->axes[d].unit = a->units.n != 0 && a->units.w[d][0] != '\0' ? a->units.w[d] : NULL;
        o->scale[d] = a->n_scale != 0 ? a->scale[d] : 0;
        o->translation[d] = a->n_translation != 0 ? a->translation[d] : 0;
    }
    return 0;
}

/* DSTGROUP's last path component, without a ".zarr" or ".ome.zarr" suffix. */
static void
base_name(const char *path, char *buf, size_t size)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/')
        start--;
    size_t n = len - start;
    const char *suffixes[] = {".ome.zarr", ".zarr"};
    for (size_t i = 0; i < 2; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && strncmp(path + start + n - k, suffixes[i], k) == 0) {
            n -= k;
            break;
        }
    }
    snprintf(buf, size, "%.*s", (int)n, path + start);
}

/* Print each level's shape, chunks and shards on stderr. */
static void
print_levels(const sl_graph *g, const uint32_t *puts, uint32_t n_levels, const char *dst)
{
    for (uint32_t k = 0; k < n_levels; k++) {
        struct sl_node_info info;
        if (sl_graph_node_info(g, puts[k], &info, NULL) != SL_OK)
            return;
        char shape[160], chunks[160];
        sl_shape_format(info.grid->rank, info.grid->shape, shape, sizeof(shape));
        sl_shape_format(info.grid->rank, info.grid->chunk, chunks, sizeof(chunks));
        fprintf(stderr, "sluice pyramid: %s/%" PRIu32 ": shape %s, chunks %s\n", dst, k, shape,
                chunks);
    }
}

/* What a pyramid's graph is built from. */
struct pyr_job {
    const struct pyramid_args *a;
    sl_array *src;
    struct sl_pyramid_opts o;
};

/* The get and the pyramid into a group at the root of `out`
 * (graph_build_fn).  Across processes rank 0 creates the group and its
 * levels first; the other ranks then build the same nodes over the arrays
 * it made. */
static int
pyr_build(void *ctx, sl_store *out, bool real, sl_graph **g)
{
    struct pyr_job *j = ctx;
    struct sl_error err = SL_ERROR_INIT;
    *g = sl_graph_create(NULL, &err);
    uint32_t get, puts[SL_PYRAMID_MAX_LEVELS];
    struct sl_pyramid_opts mine = j->o;
    /* A resumed run opens the levels its earlier run made; --into's group
     * is there from the start (the rehearsal's memory store gets one). */
    bool first = (!real || dist_rank() == 0) && (j->a->into || !(real && dest_has_node(out, "")));
    mine.into_group = j->a->into;
    sl_status st = *g != NULL ? sl_graph_add_get(*g, "input", j->src, &get, &err) : SL_ENOMEM;
    if (st == SL_OK && !real && j->a->into)
        st = sl_group_create(out, "", mine.level.zarr_format, NULL, &err);
    if (st == SL_OK && first)
        st = sl_graph_add_pyramid(*g, "level", get, out, "", &mine, puts, &err);
    if (real)
        st = dist_share(st, &err);
    mine.open_existing = true;
    if (st == SL_OK && !first)
        st = sl_graph_add_pyramid(*g, "level", get, out, "", &mine, puts, &err);
    if (st != SL_OK)
        return cmd_fail("pyramid", j->a->dst, &err);
    if (real && dist_rank() == 0)
        print_levels(*g, puts, j->o.n_levels, j->a->dst);
    return 0;
}

/* Note whether a member came from consolidated metadata, then stop. */
static sl_status
member_seen(void *arg, const struct sl_group_member *m)
{
    *(bool *)arg = m->consolidated;
    return SL_ECANCELED;
}

/* Whether the group at the root of `s` lists its members in consolidated
 * metadata (told by its first member; a group without any is not). */
static bool
group_is_consolidated(sl_store *s)
{
    bool yes = false;
    struct sl_error ignored = SL_ERROR_INIT;
    sl_status st = sl_group_members(s, "", member_seen, &yes, &ignored);
    return (st == SL_OK || st == SL_ECANCELED) && yes;
}

/*
 * After a --member or --into run whose image is in place (`rc` 0 or 1),
 * rewrite the group's consolidated metadata, when it has some, so that it
 * lists the image too.  @return `rc`, or 1 when that fails (after a
 * message).
 */
static int
pyramid_member_consolidate(const struct pyramid_args *a, const struct run_opts *ro, int rc)
{
    if ((a->member == NULL && !a->into) || !a->consolidated || (rc != 0 && rc != 1) ||
        dist_rank() != 0)
        return rc;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *group = sl_url_is_s3(a->paths[1]) ? open_output_store(a->paths[1], ro, &err)
                                                : open_dir_store(a->paths[1], true, &err);
    sl_status st = group != NULL ? sl_group_consolidate(group, "", &err) : err.code;
    sl_store_unref(group);
    if (st == SL_OK)
        return rc;
    fprintf(stderr,
            "sluice pyramid: %s: the image is in place but the group's consolidated metadata "
            "does not list it: %s\n",
            a->paths[1], err.text);
    return 1;
}

/* --into: name the levels of DSTGROUP's older multiscale image that the
 * new one does not replace (they stay, listed nowhere: never deleted, as
 * one may be SRC itself or data kept on purpose). */
static void
pyramid_into_note(const struct pyramid_args *a, sl_store *group)
{
    struct sl_ome_multiscale *old = malloc(sizeof(*old));
    if (old == NULL || sl_ome_multiscale_read(group, "", 0, old, NULL, NULL) != SL_OK) {
        free(old);
        return;
    }
    for (uint32_t k = 0; k < old->n_levels; k++) {
        char *end;
        unsigned long n = strtoul(old->levels[k].path, &end, 10);
        bool replaced = *end == '\0' && old->levels[k].path[0] >= '0' &&
                        old->levels[k].path[0] <= '9' && n < a->levels &&
                        (n == 0 || old->levels[k].path[0] != '0');
        if (!replaced)
            fprintf(stderr,
                    "sluice pyramid: --into: level \"%s\" of the multiscale image DSTGROUP "
                    "described before stays, but the new multiscales do not list it\n",
                    old->levels[k].path);
    }
    free(old);
}

/* --into: a level already in DSTGROUP (store `group`) is refused unless
 * --overwrite.  0, or 2 after a message naming it. */
static int
pyramid_into_check(const struct pyramid_args *a, const struct array_opts *ao, sl_store *group)
{
    for (uint32_t k = 0; k < a->levels && !ao->overwrite && !ao->overwrite_in_place; k++) {
        char level[16];
        snprintf(level, sizeof(level), "%" PRIu32, k);
        sl_zarr_kind kind = SL_ZARR_NONE;
        int format = 0;
        if (sl_zarr_probe(group, level, &kind, &format, NULL) == SL_OK && kind != SL_ZARR_NONE)
            return cmd_usage_error(&cmd_pyramid,
                                   "--into: DSTGROUP \"%s\" holds a Zarr v%d %s \"%s\" where "
                                   "level %" PRIu32 " goes (pass --overwrite to replace the "
                                   "levels; its other members stay)",
                                   a->paths[1], format, kind == SL_ZARR_ARRAY ? "array" : "group",
                                   level, k);
    }
    pyramid_into_note(a, group);
    return 0;
}

/*
 * For --member and --into: DSTGROUP must hold a Zarr group, whose format
 * the image takes (another given with --format is refused: readers walk
 * one format per hierarchy).  0, or 2 after a message.
 */
static int
pyramid_member_check(struct pyramid_args *a, struct array_opts *ao, const struct run_opts *ro)
{
    char opt[300];
    snprintf(opt, sizeof(opt), a->into ? "--into" : "--member %s", a->member);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *group = open_input_store(a->paths[1], ro, &err);
    sl_zarr_kind kind = SL_ZARR_NONE;
    int format = 0;
    sl_status st = group != NULL ? sl_zarr_probe(group, "", &kind, &format, &err) : err.code;
    if (st == SL_OK && kind == SL_ZARR_GROUP)
        a->consolidated = group_is_consolidated(group);
    int rc = st == SL_OK && kind == SL_ZARR_GROUP && a->into ? pyramid_into_check(a, ao, group) : 0;
    sl_store_unref(group);
    if (st != SL_OK && st != SL_ENOTFOUND)
        return cmd_fail("pyramid", a->paths[1], &err);
    if (kind != SL_ZARR_GROUP)
        return cmd_usage_error(&cmd_pyramid,
                               "%s: DSTGROUP \"%s\" holds %s, not a Zarr group to %s (without "
                               "%s DSTGROUP becomes the image's group)",
                               opt, a->paths[1],
                               kind == SL_ZARR_ARRAY ? "a Zarr array" : "no Zarr node",
                               a->into ? "write the levels into" : "add the image to",
                               a->into ? "--into" : "--member");
    if (ao->format != 0 && ao->format != format)
        return cmd_usage_error(&cmd_pyramid,
                               "%s: --format v%d, but DSTGROUP \"%s\" is a Zarr v%d "
                               "group (its members are v%d too)",
                               opt, ao->format, a->paths[1], format, format);
    ao->format = format;
    return rc;
}

/*
 * --into: the levels written in place into DSTGROUP's store (a failed or
 * killed run leaves the levels written so far, and the group's attributes
 * naming them: run again with --overwrite).  Under mpirun rank 0 creates
 * the levels and rewrites the attributes, then every rank writes its own
 * shards.  @return the exit status.
 */
static int
pyramid_write_into(struct pyr_job *j, const struct run_opts *ro)
{
    const char *dst = j->a->paths[1];
    const char *nodes[2] = {dst, j->a->paths[0]};
    if (run_files_check(&cmd_pyramid, ro, nodes, 2) != 0 ||
        rehearse(&cmd_pyramid, pyr_build, j, ro, "pyramid") != 0)
        return 2;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *out =
        sl_url_is_s3(dst) ? open_output_store(dst, ro, &err) : open_dir_store(dst, true, &err);
    if (out == NULL)
        return cmd_fail("pyramid", dst, &err);
    int rc = dest_build_run(&cmd_pyramid, pyr_build, j, out, ro, "pyramid");
    sl_store_unref(out);
    return dist_exit_status(rc);
}

static int
run_pyramid(int argc, char **argv)
{
    struct pyramid_args a;
    memset(&a, 0, sizeof(a));
    struct downsample_opts dso = {.method = NULL};
    struct array_opts ao = {0};
    struct run_opts ro = RUN_OPTS_DEFAULT;
    int rc = pyramid_parse_all(&a, &dso, &ao, &ro, argc, argv);
    if (rc != 0)
        return rc;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *in = open_input_store(a.paths[0], &ro, &err);
    sl_array *src = in != NULL ? sl_array_open(in, "", NULL, &err) : NULL;
    if (src == NULL) {
        sl_store_unref(in);
        return cmd_fail("pyramid", a.paths[0], &err);
    }
    struct sl_op op;
    struct pyr_job j = {.a = &a, .src = src, .o = SL_PYRAMID_OPTS_DEFAULT};
    char name[256];
    rc = downsample_opts_bind(&cmd_pyramid, &dso, src, &op);
    if (rc == 0 && (a.member != NULL || a.into))
        rc = pyramid_member_check(&a, &ao, &ro); /* before the levels take ao's format */
    if (rc == 0)
        rc = pyramid_opts_make(&a, &dso, &ao, src, &j.o);
    if (rc == 0) {
        base_name(a.dst, name, sizeof(name));
        j.o.name = a.name != NULL ? a.name : name;
        j.o.group_attributes = sl_array_attributes(src);
        j.o.level.overwrite = a.into && (ao.overwrite || ao.overwrite_in_place);
        rc = a.into
                 ? pyramid_write_into(&j, &ro)
                 : dest_write(&cmd_pyramid, a.paths[0], a.dst, &ao, pyr_build, &j, &ro, "pyramid");
        rc = pyramid_member_consolidate(&a, &ro, rc);
    }
    sl_array_unref(src);
    sl_store_unref(in);
    return rc;
}
