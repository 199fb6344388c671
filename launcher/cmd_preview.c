/* SPDX-License-Identifier: MIT */
/*
 * `sluice preview SRC -o OUT.png`: a 2-D grey picture of an array: one
 * plane at fixed indices of the other axes, or a projection (max, mean,
 * min) along some of them, downsampled to at most --max-size pixels a side
 * and stretched between two percentiles (or a fixed range).
 *
 * DESIGN: the picture is computed by a graph, get -> select -> downsample
 * (the projection: a factor as long as the axis) -> downsample (the fit,
 * mean) -> put into a memory array, so a preview of a huge array reads only
 * the chunks of the plane (or the slab projected) and holds only chunks in
 * flight, within --memory.  A multiscale group is read at its coarsest level
 * that still fills --max-size, so most previews read a small array.  The
 * picture itself (at most max-size^2 values) is read back whole, cast to
 * double, stretched and written with libpng's simplified API.
 */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "commands.h"
#include "runner.h"

static int run_preview(int argc, char **argv);

const struct cmd cmd_preview = {
    .name = "preview",
    .summary = "write a PNG picture of a plane or projection of an array",
    .usage = "usage: sluice preview SRC -o OUT.png [options]\n"
             "\n"
             "Write an 8-bit grey PNG of the Zarr array at SRC (a directory or URL): the\n"
             "plane of its last two axes (or --axes) at index 0 of every other axis (or\n"
             "--index), or a projection along --along; downsampled (mean) so that no side\n"
             "exceeds --max-size; grey levels stretched between two percentiles of the\n"
             "values.  SRC may be an OME-Zarr multiscale group: its coarsest level that\n"
             "still fills --max-size is read (or --level K), indices given in level 0's\n"
             "coordinates.  Only the chunks the picture needs are read.  Exit status: 0\n"
             "when the picture is written, 1 when reading failed, 2 for bad usage.\n"
             "\n"
             "Options:\n"
             "  -o, --output FILE    the PNG to write (required)\n"
             "  --axes Y,X           the picture's rows and columns: axis names or\n"
             "                       numbers (default: the last two axes)\n"
             "  --index SPEC         fix the other axes: \"t=0,c=1,z=16\" by name or number,\n"
             "                       or \"0,1,16\" in axis order (default: 0 each)\n"
             "  --along AXES         project along these axes (names or numbers) instead\n"
             "                       of fixing them\n"
             "  --project METHOD     max (default), mean or min, for --along\n"
             "  --max-size N         longest side in pixels (default 1024)\n"
             "  --contrast LO,HI     percentiles mapped to black and white (default\n"
             "                       0.5,99.5)\n"
             "  --range MIN,MAX      values mapped to black and white instead\n"
             "  --level K            the level of a multiscale group (default: see "
             "above)\n",
    .options = RUN_OPTS_HELP "  --help               print this help\n",
    .run = run_preview,
};

#define PREVIEW_MAX_SIZE_DEFAULT 1024u

struct preview_opts {
    const char *src, *out;
    const char *axes, *index, *along, *project;
    uint64_t max_size;
    double contrast[2]; /* percentiles */
    bool has_range;
    double range[2];
    int level; /* -1: choose */
    struct run_opts ro;
};

/* ---- options ----------------------------------------------------------------------- */

static bool
parse_pair(const char *text, double out[2])
{
    char *end;
    out[0] = strtod(text, &end);
    if (end == text || *end != ',')
        return false;
    const char *b = end + 1;
    out[1] = strtod(b, &end);
    return end != b && *end == '\0' && isfinite(out[0]) && isfinite(out[1]);
}

static int
preview_parse(struct preview_opts *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        int used = run_opts_parse(&cmd_preview, &o->ro, argc, argv, &i);
        if (used == 2)
            return 2;
        if (used == 1)
            continue;
        const char *a = argv[i];
        static const char *const valued[] = {"-o",      "--output",  "--axes",     "--index",
                                             "--along", "--project", "--max-size", "--contrast",
                                             "--range", "--level",   NULL};
        bool takes = false;
        for (int k = 0; valued[k] != NULL; k++)
            takes = takes || strcmp(a, valued[k]) == 0;
        if (!takes) {
            if (a[0] == '-' && strcmp(a, "-") != 0)
                return cmd_usage_error(&cmd_preview, "unknown option \"%s\"", a);
            if (o->src != NULL)
                return cmd_usage_error(&cmd_preview, "more than one SRC (\"%s\", \"%s\")", o->src,
                                       a);
            o->src = a;
            continue;
        }
        if (i + 1 >= argc)
            return cmd_usage_error(&cmd_preview, "%s needs a value", a);
        const char *v = argv[++i];
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            o->out = v;
        } else if (strcmp(a, "--axes") == 0) {
            o->axes = v;
        } else if (strcmp(a, "--index") == 0) {
            o->index = v;
        } else if (strcmp(a, "--along") == 0) {
            o->along = v;
        } else if (strcmp(a, "--project") == 0) {
            if (strcmp(v, "max") != 0 && strcmp(v, "mean") != 0 && strcmp(v, "min") != 0)
                return cmd_usage_error(&cmd_preview, "--project: \"%s\" is not max, mean or min",
                                       v);
            o->project = v;
        } else if (strcmp(a, "--max-size") == 0) {
            uint32_t n = 0;
            if (!parse_u64_list(v, &o->max_size, 1, &n) || n != 1 || o->max_size > 65536)
                return cmd_usage_error(&cmd_preview,
                                       "--max-size: \"%s\" is not a size in pixels from 1 to "
                                       "65536",
                                       v);
        } else if (strcmp(a, "--contrast") == 0) {
            if (!parse_pair(v, o->contrast) || o->contrast[0] < 0 || o->contrast[1] > 100 ||
                o->contrast[0] >= o->contrast[1])
                return cmd_usage_error(
                    &cmd_preview, "--contrast: \"%s\" is not LO,HI with 0 <= LO < HI <= 100", v);
        } else if (strcmp(a, "--range") == 0) {
            if (!parse_pair(v, o->range) || o->range[0] >= o->range[1])
                return cmd_usage_error(&cmd_preview,
                                       "--range: \"%s\" is not MIN,MAX with MIN < MAX", v);
            o->has_range = true;
        } else { /* --level */
            char *end;
            long k = strtol(v, &end, 10);
            if (end == v || *end != '\0' || k < 0 || k >= SL_OME_MAX_LEVELS)
                return cmd_usage_error(&cmd_preview, "--level: \"%s\" is not a level number", v);
            o->level = (int)k;
        }
    }
    if (o->src == NULL)
        return cmd_usage_error(&cmd_preview, "SRC is missing");
    if (o->out == NULL)
        return cmd_usage_error(&cmd_preview, "-o OUT.png is missing");
    if (o->project != NULL && o->along == NULL)
        return cmd_usage_error(&cmd_preview, "--project needs --along (the axes to project)");
    return 0;
}

/* ---- the input: an array, or a level of a multiscale group ---------------------------- */

struct source {
    sl_store *store;
    sl_array *array;                 /* the level read */
    const char *names[SL_MAX_RANK];  /* axis names (NULL: unnamed) */
    char ome_names[SL_MAX_RANK][64]; /* a multiscale's axes */
    uint64_t shape0[SL_MAX_RANK];    /* level 0's shape (the array's when not multiscale) */
    int level;                       /* -1: not a multiscale group */
    uint32_t n_levels;
};

static void
source_fini(struct source *s)
{
    sl_array_unref(s->array);
    sl_store_unref(s->store);
}

/* Pick the level of multiscale `m`: `want`, else the coarsest whose longer
 * displayed side (the last two axes) still reaches max_size. */
static int
source_open_multiscale(struct source *s, const struct sl_ome_multiscale *m, int want,
                       uint64_t max_size, const char *src)
{
    struct sl_error err = SL_ERROR_INIT;
    s->n_levels = m->n_levels;
    if (want >= 0 && (uint32_t)want >= m->n_levels) {
        fprintf(stderr,
                "sluice preview: %s: --level %d, but its multiscale image has %u level%s "
                "(0..%u)\n",
                src, want, (unsigned)m->n_levels, m->n_levels == 1 ? "" : "s",
                (unsigned)m->n_levels - 1);
        return 2;
    }
    for (uint32_t d = 0; d < m->rank; d++) {
        memcpy(s->ome_names[d], m->axes[d].name, sizeof(s->ome_names[d]));
        s->names[d] = s->ome_names[d];
    }
    sl_array *level0 = sl_array_open(s->store, m->levels[0].path, NULL, &err);
    if (level0 == NULL)
        return cmd_fail("preview", m->levels[0].path, &err);
    uint32_t rank = sl_array_rank(level0);
    memcpy(s->shape0, sl_array_shape(level0), rank * sizeof(uint64_t));
    if (rank != m->rank) {
        fprintf(stderr,
                "sluice preview: level \"%s\" has %u dimensions but the multiscale metadata "
                "names %u axes\n",
                m->levels[0].path, (unsigned)rank, (unsigned)m->rank);
        sl_array_unref(level0);
        return 1;
    }
    int pick = want >= 0 ? want : 0;
    for (int k = (int)m->n_levels - 1; want < 0 && k > 0; k--) {
        sl_array *a = sl_array_open(s->store, m->levels[k].path, NULL, &err);
        if (a == NULL) {
            sl_array_unref(level0);
            return cmd_fail("preview", m->levels[k].path, &err);
        }
        const uint64_t *sh = sl_array_shape(a);
        bool fills = sl_array_rank(a) == rank && rank >= 2 &&
                     (sh[rank - 1] >= max_size || sh[rank - 2] >= max_size);
        sl_array_unref(a);
        if (fills) {
            pick = k;
            break;
        }
    }
    s->level = pick;
    if (pick == 0) {
        s->array = level0;
        return 0;
    }
    sl_array_unref(level0);
    s->array = sl_array_open(s->store, m->levels[pick].path, NULL, &err);
    if (s->array == NULL)
        return cmd_fail("preview", m->levels[pick].path, &err);
    if (sl_array_rank(s->array) != rank) {
        fprintf(stderr, "sluice preview: level \"%s\" has %u dimensions, level 0 has %u\n",
                m->levels[pick].path, (unsigned)sl_array_rank(s->array), (unsigned)rank);
        return 1;
    }
    return 0;
}

static int
source_open(struct source *s, const struct preview_opts *o)
{
    struct sl_error err = SL_ERROR_INIT;
    memset(s, 0, sizeof(*s));
    s->level = -1;
    s->store = open_input_store(o->src, &o->ro, &err);
    if (s->store == NULL)
        return cmd_fail("preview", o->src, &err);
    sl_zarr_kind kind = SL_ZARR_NONE;
    if (sl_zarr_probe(s->store, "", &kind, NULL, &err) != SL_OK)
        return cmd_fail("preview", o->src, &err);
    if (kind == SL_ZARR_GROUP) {
        struct sl_ome_multiscale *m = malloc(sizeof(*m));
        if (m == NULL)
            return cmd_fail("preview", o->src,
                            (sl_error_set(&err, SL_ENOMEM, NULL, "out of memory"), &err));
        uint32_t n = 0;
        sl_status st = sl_ome_multiscale_read(s->store, "", 0, m, &n, &err);
        int rc = st == SL_OK ? source_open_multiscale(s, m, o->level, o->max_size, o->src) : 0;
        free(m);
        if (st == SL_ENOTFOUND && n == 0) {
            fprintf(stderr,
                    "sluice preview: %s is a group without OME-Zarr multiscales; give one of "
                    "its arrays (see \"sluice info %s\")\n",
                    o->src, o->src);
            return 2;
        }
        if (st != SL_OK)
            return cmd_fail("preview", o->src, &err);
        return rc;
    }
    if (o->level >= 0) {
        fprintf(stderr, "sluice preview: %s: --level applies to multiscale groups, not arrays\n",
                o->src);
        return 2;
    }
    s->array = sl_array_open(s->store, "", NULL, &err);
    if (s->array == NULL)
        return cmd_fail("preview", o->src, &err);
    for (uint32_t d = 0; d < sl_array_rank(s->array); d++)
        s->names[d] = sl_array_dimension_name(s->array, d);
    memcpy(s->shape0, sl_array_shape(s->array), sl_array_rank(s->array) * sizeof(uint64_t));
    return 0;
}

/* ---- which axes are shown, fixed and projected ---------------------------------------- */

enum axis_role { AXIS_FIXED, AXIS_ROW, AXIS_COL, AXIS_PROJECTED };

struct layout {
    uint32_t rank;
    enum axis_role role[SL_MAX_RANK];
    uint64_t index0[SL_MAX_RANK]; /* fixed axes: index in level 0's coordinates */
    uint32_t row, col;
};

/* The axis `name` names (a dimension name, or a number). -1 after a message. */
static int
axis_find(const struct source *s, uint32_t rank, const char *name, size_t n, const char *option)
{
    for (uint32_t d = 0; d < rank; d++)
        if (s->names[d] != NULL && strlen(s->names[d]) == n && strncmp(s->names[d], name, n) == 0)
            return (int)d;
    char *end;
    long d = strtol(name, &end, 10);
    if (end == name + n && n > 0 && d >= 0 && d < (long)rank)
        return (int)d;
    char names[512] = "";
    for (uint32_t k = 0; k < rank; k++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", k ? ", " : "",
                 s->names[k] != NULL ? s->names[k] : "-");
    cmd_usage_error(&cmd_preview,
                    "%s: no axis \"%.*s\": the array's %u axes are named [%s], or give a number "
                    "0..%u",
                    option, (int)n, name, (unsigned)rank, names, (unsigned)rank - 1);
    return -1;
}

/* Comma-separated items of `text`: call fn(item, length) for each. */
typedef int item_fn(void *ctx, const char *item, size_t n, uint32_t k);

static int
for_items(const char *text, item_fn *fn, void *ctx)
{
    uint32_t k = 0;
    for (const char *p = text;; k++) {
        const char *c = strchr(p, ',');
        size_t n = c != NULL ? (size_t)(c - p) : strlen(p);
        int rc = fn(ctx, p, n, k);
        if (rc != 0)
            return rc;
        if (c == NULL)
            return 0;
        p = c + 1;
    }
}

struct axes_ctx {
    const struct source *s;
    struct layout *l;
    const char *option;
    int found[2];
};

static int
axes_item(void *ctx, const char *item, size_t n, uint32_t k)
{
    struct axes_ctx *a = ctx;
    if (k >= 2)
        return cmd_usage_error(&cmd_preview, "--axes: \"%s\" names more than two axes", a->option);
    int d = axis_find(a->s, a->l->rank, item, n, "--axes");
    if (d < 0)
        return 2;
    a->found[k] = d;
    return 0;
}

static int
along_item(void *ctx, const char *item, size_t n, uint32_t k)
{
    (void)k;
    struct axes_ctx *a = ctx;
    int d = axis_find(a->s, a->l->rank, item, n, "--along");
    if (d < 0)
        return 2;
    if (a->l->role[d] != AXIS_FIXED)
        return cmd_usage_error(&cmd_preview, "--along: axis \"%.*s\" is %s", (int)n, item,
                               a->l->role[d] == AXIS_PROJECTED ? "named twice"
                                                               : "shown in the picture");
    a->l->role[d] = AXIS_PROJECTED;
    return 0;
}

struct index_ctx {
    const struct source *s;
    struct layout *l;
    bool named, positional;
    uint32_t next; /* positional: the next fixed axis */
};

static int
index_item(void *ctx, const char *item, size_t n, uint32_t k)
{
    (void)k;
    struct index_ctx *x = ctx;
    const char *eq = memchr(item, '=', n);
    int d;
    const char *value = item;
    size_t vn = n;
    if (eq != NULL) {
        x->named = true;
        d = axis_find(x->s, x->l->rank, item, (size_t)(eq - item), "--index");
        if (d < 0)
            return 2;
        value = eq + 1;
        vn = n - (size_t)(eq - item) - 1;
    } else {
        x->positional = true;
        while (x->next < x->l->rank && x->l->role[x->next] != AXIS_FIXED)
            x->next++;
        if (x->next >= x->l->rank)
            return cmd_usage_error(&cmd_preview,
                                   "--index: more values than the %u axes neither shown nor "
                                   "projected",
                                   (unsigned)x->l->rank);
        d = (int)x->next++;
    }
    if (x->named && x->positional)
        return cmd_usage_error(&cmd_preview, "--index: give every axis by name or none");
    if (x->l->role[d] != AXIS_FIXED)
        return cmd_usage_error(&cmd_preview, "--index: axis %d is %s, not fixed", d,
                               x->l->role[d] == AXIS_PROJECTED ? "projected" : "shown");
    char buf[32];
    char *end;
    if (vn == 0 || vn >= sizeof(buf))
        return cmd_usage_error(&cmd_preview, "--index: \"%.*s\" has no index", (int)n, item);
    memcpy(buf, value, vn);
    buf[vn] = '\0';
    unsigned long long v = strtoull(buf, &end, 10);
    if (*end != '\0' || buf[0] == '-' || v >= x->s->shape0[d])
        return cmd_usage_error(&cmd_preview,
                               "--index: \"%s\" is not an index of axis %d (0..%llu, in level "
                               "0's coordinates)",
                               buf, d, (unsigned long long)x->s->shape0[d] - 1);
    x->l->index0[d] = v;
    return 0;
}

static int
layout_make(struct layout *l, const struct source *s, const struct preview_opts *o)
{
    memset(l, 0, sizeof(*l));
    l->rank = sl_array_rank(s->array);
    if (l->rank < 2)
        return cmd_usage_error(&cmd_preview, "%s has %u dimension%s; a picture needs at least 2",
                               o->src, (unsigned)l->rank, l->rank == 1 ? "" : "s");
    struct axes_ctx a = {
        .s = s, .l = l, .option = o->axes, .found = {(int)l->rank - 2, (int)l->rank - 1}};
    if (o->axes != NULL) {
        a.found[1] = -1;
        int rc = for_items(o->axes, axes_item, &a);
        if (rc != 0)
            return rc;
        if (a.found[1] < 0 || a.found[0] == a.found[1])
            return cmd_usage_error(&cmd_preview, "--axes: \"%s\" must name two different axes",
                                   o->axes);
    }
    l->row = (uint32_t)a.found[0];
    l->col = (uint32_t)a.found[1];
    l->role[l->row] = AXIS_ROW;
    l->role[l->col] = AXIS_COL;
    if (o->along != NULL) {
        int rc = for_items(o->along, along_item, &a);
        if (rc != 0)
            return rc;
    }
    if (o->index != NULL) {
        struct index_ctx x = {.s = s, .l = l};
        return for_items(o->index, index_item, &x);
    }
    return 0;
}

/* ---- the graph ---------------------------------------------------------------------- */

/* A bound downsample of `method` by `factors` over an input of `src`'s
 * dtype and `rank`. */
static sl_status
bind_downsample(struct sl_op *op, const char *method, const uint64_t *factors, uint32_t rank,
                sl_dtype dtype, struct sl_error *err)
{
    const struct sl_op_desc *d = NULL;
    struct sl_op_args args;
    memset(&args, 0, sizeof(args));
    sl_status st = sl_op_lookup("downsample", &d, err);
    if (st == SL_OK)
        st = sl_op_args_set_factors(&args, d, "factors", rank, factors, err);
    if (st == SL_OK)
        st = sl_op_args_set_string(&args, d, "method", method, err);
    return st == SL_OK ? sl_op_bind(op, d, &args, dtype, rank, err) : st;
}

/* Chunks of an op's output: the input's chunks divided by the factors,
 * at least 1 and at most the output's extent. */
static void
op_chunks(const uint64_t *in_chunk, const uint64_t *factor, const uint64_t *out_shape,
          uint32_t rank, uint64_t *out)
{
    for (uint32_t d = 0; d < rank; d++) {
        uint64_t c = (in_chunk[d] + factor[d] - 1) / factor[d];
        c = c < 1 ? 1 : c;
        out[d] = c < out_shape[d] ? c : (out_shape[d] > 0 ? out_shape[d] : 1);
    }
}

struct picture {
    uint64_t rows, cols;
    double *v; /* rows * cols values */
};

static int
picture_compute(const struct source *s, const struct layout *l, const struct preview_opts *o,
                struct picture *pic)
{
    const sl_array *a = s->array;
    uint32_t rank = l->rank;
    const uint64_t *shape = sl_array_shape(a);
    sl_dtype dt = sl_array_dtype(a);
    struct sl_region box = {.rank = rank};
    uint64_t pf[SL_MAX_RANK], ff[SL_MAX_RANK], mid[SL_MAX_RANK] = {0}, out[SL_MAX_RANK];
    bool project = false;
    for (uint32_t d = 0; d < rank; d++) {
        pf[d] = ff[d] = 1;
        if (l->role[d] == AXIS_FIXED) {
            /* level 0's index in this level's coordinates */
            uint64_t i =
                s->shape0[d] == shape[d]
                    ? l->index0[d]
                    : (uint64_t)((double)l->index0[d] * (double)shape[d] / (double)s->shape0[d]);
            box.start[d] = i < shape[d] ? i : shape[d] - 1;
            box.stop[d] = box.start[d] + 1;
        } else {
            box.start[d] = 0;
            box.stop[d] = shape[d];
            if (l->role[d] == AXIS_PROJECTED && shape[d] > 1) {
                pf[d] = shape[d];
                project = true;
            }
        }
        mid[d] = (box.stop[d] - box.start[d] + pf[d] - 1) / pf[d];
    }
    /* One factor for both sides, so the picture keeps the data's aspect. */
    uint64_t longer = mid[l->row] > mid[l->col] ? mid[l->row] : mid[l->col];
    ff[l->row] = ff[l->col] = (longer + o->max_size - 1) / o->max_size;
    for (uint32_t d = 0; d < rank; d++)
        out[d] = (mid[d] + ff[d] - 1) / ff[d];
    bool fit = ff[l->row] > 1 || ff[l->col] > 1;
    struct sl_error err = SL_ERROR_INIT;
    struct sl_op op_p, op_f;
    if ((project && bind_downsample(&op_p, o->project != NULL ? o->project : "max", pf, rank, dt,
                                    &err) != SL_OK) ||
        (fit && bind_downsample(&op_f, "mean", ff, rank, dt, &err) != SL_OK))
        return cmd_usage_error(&cmd_preview, "%s", err.text);
    uint64_t c_mid[SL_MAX_RANK], c_out[SL_MAX_RANK];
    op_chunks(sl_array_chunk_shape(a), pf, mid, rank, c_mid);
    op_chunks(c_mid, ff, out, rank, c_out);
    /* The picture's array: in memory, uncompressed. */
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = rank;
    spec.dtype = dt;
    memcpy(spec.shape, out, rank * sizeof(uint64_t));
    memcpy(spec.chunk_shape, c_out, rank * sizeof(uint64_t));
    sl_store *mem = sl_store_create_memory(NULL, &err);
    sl_array *dst = mem != NULL ? sl_array_create(mem, "", &spec, NULL, &err) : NULL;
    sl_graph *g = dst != NULL ? sl_graph_create(NULL, &err) : NULL;
    uint32_t id;
    struct sl_select_desc sel = {.n_slices = 1, .slices = &box};
    bool built =
        g != NULL && sl_graph_add_get(g, "input", (sl_array *)a, &id, &err) == SL_OK &&
        sl_graph_add_select(g, "plane", id, &sel, &id, &err) == SL_OK &&
        (!project || sl_graph_add_op(g, "project", id, &op_p, c_mid, &id, &err) == SL_OK) &&
        (!fit || sl_graph_add_op(g, "fit", id, &op_f, c_out, &id, &err) == SL_OK) &&
        sl_graph_add_put(g, "picture", id, dst, NULL, &err) == SL_OK;
    int rc =
        built ? run_graph(&cmd_preview, g, &o->ro, "preview") : cmd_fail("preview", o->src, &err);
    pic->rows = out[l->row];
    pic->cols = out[l->col];
    size_t n = (size_t)(pic->rows * pic->cols);
    size_t esize = sl_dtype_size(dt);
    void *raw = rc == 0 ? malloc(n * esize) : NULL;
    pic->v = rc == 0 ? malloc(n * sizeof(double)) : NULL;
    if (rc == 0 && (raw == NULL || pic->v == NULL))
        rc = cmd_fail("preview", o->src,
                      (sl_error_set(&err, SL_ENOMEM, NULL, "out of memory for the picture"), &err));
    struct sl_region all = {.rank = rank};
    for (uint32_t d = 0; d < rank; d++)
        all.stop[d] = out[d];
    struct sl_view in_v, out_v;
    uint64_t shape2[2] = {pic->rows, pic->cols};
    /* The picture's other axes all have extent 1, so it is rows x cols in
     * C order whichever order row and col come in; a transposed view when
     * the columns' axis comes first. */
    if (rc == 0 && (sl_array_read_region(dst, &all, raw, n * esize, NULL, NULL, &err) != SL_OK ||
                    sl_view_init(&in_v, dt, 2, shape2, raw, &err) != SL_OK ||
                    sl_view_init(&out_v, SL_DTYPE_F64, 2, shape2, pic->v, &err) != SL_OK))
        rc = cmd_fail("preview", o->src, &err);
    if (rc == 0 && l->col < l->row) {
        in_v.stride[0] = 1;
        in_v.stride[1] = (int64_t)pic->rows;
    }
    if (rc == 0 && sl_cast(&in_v, &out_v, &err) != SL_OK)
        rc = cmd_fail("preview", o->src, &err);
    free(raw);
    sl_graph_unref(g);
    sl_array_unref(dst);
    sl_store_unref(mem);
    return rc;
}

/* ---- contrast and the PNG ----------------------------------------------------------- */

static int
by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The black and white points: --range, else the percentiles of the finite
 * values (linear between ranks). */
static void
contrast_points(const struct picture *p, const struct preview_opts *o, double *lo, double *hi)
{
    if (o->has_range) {
        *lo = o->range[0];
        *hi = o->range[1];
        return;
    }
    size_t n = (size_t)(p->rows * p->cols), m = 0;
    double *v = malloc(n * sizeof(double));
    for (size_t i = 0; v != NULL && i < n; i++)
        if (isfinite(p->v[i]))
            v[m++] = p->v[i];
    *lo = 0;
    *hi = 1;
    if (v != NULL && m > 0) {
        qsort(v, m, sizeof(double), by_value);
        for (int k = 0; k < 2; k++) {
            double r = o->contrast[k] / 100.0 * (double)(m - 1);
            size_t i = (size_t)r;
            double f = r - (double)i;
            double x = i + 1 < m ? v[i] + f * (v[i + 1] - v[i]) : v[i];
            *(k == 0 ? lo : hi) = x;
        }
    }
    free(v);
}

static int
picture_write(const struct picture *p, const struct preview_opts *o, double lo, double hi)
{
    size_t n = (size_t)(p->rows * p->cols);
    png_bytep px = malloc(n);
    if (px == NULL) {
        fprintf(stderr, "sluice preview: out of memory for a %llu x %llu picture\n",
                (unsigned long long)p->cols, (unsigned long long)p->rows);
        return 1;
    }
    double scale = hi > lo ? 255.0 / (hi - lo) : 0.0;
    for (size_t i = 0; i < n; i++) {
        double x = p->v[i];
        double g = !isfinite(x) ? 0.0 : hi > lo ? (x - lo) * scale : (x > lo ? 255.0 : 0.0);
        px[i] = (png_byte)(g <= 0 ? 0 : g >= 255 ? 255 : lround(g));
    }
    png_image img;
    memset(&img, 0, sizeof(img));
    img.version = PNG_IMAGE_VERSION;
    img.width = (png_uint_32)p->cols;
    img.height = (png_uint_32)p->rows;
    img.format = PNG_FORMAT_GRAY;
    int ok = png_image_write_to_file(&img, o->out, 0, px, (png_int_32)p->cols, NULL);
    free(px);
    if (!ok) {
        fprintf(stderr, "sluice preview: cannot write %s: %s\n", o->out, img.message);
        return 1;
    }
    return 0;
}

static int
run_preview(int argc, char **argv)
{
    struct preview_opts o = {.max_size = PREVIEW_MAX_SIZE_DEFAULT,
                             .contrast = {0.5, 99.5},
                             .level = -1,
                             .ro = RUN_OPTS_DEFAULT};
    o.ro.progress = 0;
    int rc = preview_parse(&o, argc, argv);
    if (rc != 0)
        return rc;
    struct source s;
    struct layout l;
    struct picture p = {0};
    rc = source_open(&s, &o);
    if (rc == 0)
        rc = layout_make(&l, &s, &o);
    if (rc == 0)
        rc = picture_compute(&s, &l, &o, &p);
    if (rc == 0) {
        double lo, hi;
        contrast_points(&p, &o, &lo, &hi);
        rc = picture_write(&p, &o, lo, hi);
        if (rc == 0) {
            fprintf(stderr, "sluice preview: wrote %s: %llu x %llu pixels", o.out,
                    (unsigned long long)p.cols, (unsigned long long)p.rows);
            if (s.level >= 0)
                fprintf(stderr, " from level %d of %u", s.level, (unsigned)s.n_levels);
            fprintf(stderr, ", black %g, white %g\n", lo, hi);
        }
    }
    free(p.v);
    source_fini(&s);
    return rc;
}
