/* SPDX-License-Identifier: MIT */
/*
 * The pyramid builder: from an image node and options, the level layout
 * (shapes by TensorStore's ceil(n / f) rule, chunk and shard shapes clipped
 * per level, OME-Zarr axes, scales and translations), then the level arrays
 * and group metadata in the store, then the nodes: level 0 is a put of the
 * input; level k + 1 is a get of level k, a downsample op and a put.
 *
 * DESIGN: everything that can be refused is checked (sl__pyramid_layout,
 * node names) before anything is written to the store, and the nodes come
 * last, so a failure leaves the graph as it was.  Level k + 1 reads level k
 * from storage: the planner runs a get of an array after the put that
 * writes it (a later phase), and the executor fails the chunks that read a
 * chunk the put failed to write, so no level is computed from fill values.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/op_registry.h>

#include "core_internal.h"
#include "graph_internal.h"
#include "pyramid_internal.h"

/* Longest node-name prefix: "<name>.63.downsample" must fit a node name. */
#define PYR_NAME_MAX 48

/* Default axes by rank (2..5), and the OME types of those positions. */
static const char *const pyr_default_names[6][5] = {
    [2] = {"y", "x"},
    [3] = {"z", "y", "x"},
    [4] = {"c", "z", "y", "x"},
    [5] = {"t", "c", "z", "y", "x"},
};
static const char *const pyr_default_types[6][5] = {
    [2] = {"space", "space"},
    [3] = {"space", "space", "space"},
    [4] = {"channel", "space", "space", "space"},
    [5] = {"time", "channel", "space", "space", "space"},
};

/* The type an axis called `name` has when none is given, or NULL. */
static const char *
pyr_type_of_name(const char *name)
{
    if (strcmp(name, "t") == 0 || strcmp(name, "time") == 0)
        return "time";
    if (strcmp(name, "c") == 0 || strcmp(name, "channel") == 0)
        return "channel";
    if (strcmp(name, "x") == 0 || strcmp(name, "y") == 0 || strcmp(name, "z") == 0)
        return "space";
    return NULL;
}

/* Bind the downsample op for the input. */
static sl_status
pyr_bind(struct sl__pyramid_layout *l, sl_dtype dtype, const struct sl_pyramid_opts *o,
         struct sl_error *err)
{
    const struct sl_op_desc *d;
    SL_TRY(sl_op_lookup("downsample", &d, err));
    struct sl_op_args args;
    memset(&args, 0, sizeof(args));
    SL_TRY(sl_op_args_set_factors(&args, d, "factors", l->rank, o->factor, err));
    SL_TRY(sl_op_args_set_string(&args, d, "method", sl_downsample_method_name(o->method), err));
    SL_TRY(sl_op_bind(&l->op, d, &args, dtype, l->rank, err));
    l->smooth = o->smooth == SL_PYRAMID_SMOOTH_GAUSSIAN;
    if (o->smooth != SL_PYRAMID_SMOOTH_NONE && !l->smooth)
        return sl_error_set(err, SL_EINVAL, NULL, "pyramid: unknown smoothing %d", (int)o->smooth);
    if (!l->smooth)
        return SL_OK;
    /* The Gaussian whose width matches the factor (sl_pyramid_smooth). */
    double sigma[SL_MAX_RANK];
    for (uint32_t k = 0; k < l->rank; k++) {
        double f = (double)o->factor[k];
        sigma[k] = sqrt((f * f - 1.0) / (8.0 * log(2.0)));
    }
    SL_TRY(sl_op_lookup("gaussian", &d, err));
    memset(&args, 0, sizeof(args));
    SL_TRY(sl_op_args_set_numbers(&args, d, "sigma", l->rank, sigma, err));
    SL_TRY(sl_op_args_set_string(&args, d, "mode", "nearest", err));
    return sl_op_bind(&l->smooth_op, d, &args, dtype, l->rank, err);
}

/* Level shapes; refuses an empty input and levels that would shrink nothing. */
static sl_status
pyr_shapes(struct sl__pyramid_layout *l, const uint64_t *shape, struct sl_error *err)
{
    const uint64_t *f = l->op.u.downsample.factor;
    char text[160];
    for (uint32_t d = 0; d < l->rank; d++) {
        if (shape[d] == 0) {
            sl_shape_format(l->rank, shape, text, sizeof(text));
            return sl_error_set(err, SL_EINVAL, NULL,
                                "pyramid: the input's shape %s has an empty dimension %" PRIu32,
                                text, d);
        }
        l->shape[0][d] = shape[d];
    }
    for (uint32_t k = 1; k < l->n_levels; k++) {
        bool shrinks = false;
        for (uint32_t d = 0; d < l->rank; d++) {
            l->shape[k][d] = (l->shape[k - 1][d] + f[d] - 1) / f[d];
            shrinks |= l->shape[k][d] < l->shape[k - 1][d];
        }
        if (!shrinks) {
            char fs[160];
            sl_shape_format(l->rank, l->shape[k - 1], text, sizeof(text));
            sl_shape_format(l->rank, f, fs, sizeof(fs));
            return sl_error_set(err, SL_EINVAL, NULL,
                                "pyramid: %" PRIu32 " level%s asked, but level %" PRIu32
                                " would equal level %" PRIu32 " (shape %s: factors %s shrink it "
                                "no further); at most %" PRIu32 " level%s",
                                l->n_levels, SL__PLURAL(l->n_levels), k, k - 1, text, fs, k,
                                SL__PLURAL(k));
        }
    }
    return SL_OK;
}

/* Chunk and shard shapes per level: the asked ones, clipped to each level. */
static sl_status
pyr_chunks(struct sl__pyramid_layout *l, const uint64_t *in_chunk, const struct sl_array_spec *t,
           struct sl_error *err)
{
    uint32_t n_chunk = 0, n_shard = 0;
    for (uint32_t d = 0; d < l->rank; d++) {
        n_chunk += t->chunk_shape[d] != 0;
        n_shard += t->shard_shape[d] != 0;
    }
    if (n_chunk == 0 && in_chunk == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "pyramid: the input has irregular chunks; give the chunk shape");
    if ((n_chunk != 0 && n_chunk != l->rank) || (n_shard != 0 && n_shard != l->rank))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "pyramid: the %s shape has a zero entry among %" PRIu32 " dimensions",
                            n_chunk != 0 && n_chunk != l->rank ? "chunk" : "shard", l->rank);
    for (uint32_t d = 0; d < l->rank; d++) {
        uint64_t c = n_chunk != 0 ? t->chunk_shape[d] : in_chunk[d];
        uint64_t s = t->shard_shape[d];
        if (s % c != 0)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "pyramid: shard extent %" PRIu64 " of dimension %" PRIu32
                                " is not a multiple of the chunk extent %" PRIu64,
                                s, d, c);
        for (uint32_t k = 0; k < l->n_levels; k++) {
            uint64_t n = l->shape[k][d];
            uint64_t ck = c < n ? c : n;
            uint64_t whole = (n + ck - 1) / ck * ck; /* the level in whole chunks */
            l->chunk[k][d] = ck;
            l->shard[k][d] = s == 0 ? 0 : s < whole ? s : whole;
        }
    }
    return SL_OK;
}

/* True when the axes' types follow OME-Zarr: [time] [channel or custom] space{2,3}. */
static bool
pyr_axis_order_ok(const struct sl_pyramid_axis *axes, uint32_t rank)
{
    uint32_t d = 0;
    if (d < rank && strcmp(axes[d].type, "time") == 0)
        d++;
    if (d < rank && strcmp(axes[d].type, "space") != 0 && strcmp(axes[d].type, "time") != 0)
        d++;
    uint32_t n_space = rank - d;
    for (; d < rank; d++)
        if (strcmp(axes[d].type, "space") != 0)
            return false;
    return n_space == 2 || n_space == 3;
}

/* Resolve the axes' defaults and check them against OME-Zarr's rules. */
static sl_status
pyr_axes(struct sl__pyramid_layout *l, const struct sl_pyramid_opts *o, struct sl_error *err)
{
    for (uint32_t d = 0; d < l->rank; d++) {
        struct sl_pyramid_axis *a = &l->axes[d];
        *a = o->axes[d];
        if (a->name == NULL)
            a->name = pyr_default_names[l->rank][d];
        if (a->type == NULL)
            a->type = pyr_type_of_name(a->name);
        if (a->type == NULL)
            a->type = pyr_default_types[l->rank][d];
        if (a->name[0] == '\0' || a->type[0] == '\0')
            return sl_error_set(err, SL_EINVAL, NULL, "pyramid: axis %" PRIu32 " has an empty %s",
                                d, a->name[0] == '\0' ? "name" : "type");
        for (uint32_t e = 0; e < d; e++)
            if (strcmp(l->axes[e].name, a->name) == 0)
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "pyramid: axes %" PRIu32 " and %" PRIu32
                                    " are both named \"%s\"",
                                    e, d, a->name);
    }
    l->channel_axis = UINT32_MAX;
    for (uint32_t d = 0; d < l->rank; d++)
        if (strcmp(l->axes[d].type, "channel") == 0)
            l->channel_axis = d;
    if (pyr_axis_order_ok(l->axes, l->rank))
        return SL_OK;
    /* The types as a list, cut with "..." to leave the rest of the message
     * room in the error's 160 bytes (a type may be of any length). */
    char types[48];
    size_t len = 0;
    types[0] = '\0';
    for (uint32_t d = 0; d < l->rank && len < sizeof(types); d++) {
        int n = snprintf(types + len, sizeof(types) - len, "%s%s", d ? ", " : "", l->axes[d].type);
        len = n < 0 ? sizeof(types) : len + (size_t)n;
    }
    if (len >= sizeof(types))
        memcpy(types + sizeof(types) - 4, "...", 4);
    return sl_error_set(err, SL_EINVAL, NULL,
                        "pyramid: axis types [%s] break OME-Zarr's order: an optional \"time\" "
                        "first, an optional channel or custom axis, then 2 or 3 \"space\" axes",
                        types);
}

/* Scales and translations of every level (graph/README.md, "Coordinates"). */
static sl_status
pyr_coordinates(struct sl__pyramid_layout *l, const struct sl_pyramid_opts *o, struct sl_error *err)
{
    const uint64_t *f = l->op.u.downsample.factor;
    bool centre = l->op.u.downsample.method != SL_DOWNSAMPLE_STRIDE;
    for (uint32_t d = 0; d < l->rank; d++) {
        double s = o->scale[d], t = o->translation[d];
        if (!isfinite(s) || s < 0 || !isfinite(t))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "pyramid: axis %" PRIu32 " (\"%s\") has scale %g and translation "
                                "%g; the scale must be positive (0: 1) and both finite",
                                d, l->axes[d].name, s, t);
        l->scale[0][d] = s == 0 ? 1.0 : s;
        l->translation[0][d] = t;
        for (uint32_t k = 1; k < l->n_levels; k++) {
            double prev = l->scale[k - 1][d];
            l->scale[k][d] = prev * (double)f[d];
            l->translation[k][d] =
                l->translation[k - 1][d] + (centre ? 0.5 * (double)(f[d] - 1) * prev : 0.0);
        }
    }
    return SL_OK;
}

/* The omero percentiles, when asked for: 0 <= lo < hi <= 100. */
static sl_status
pyr_omero_check(const struct sl_pyramid_opts *o, struct sl_error *err)
{
    const double lo = o->omero_percentiles[0], hi = o->omero_percentiles[1];
    if (!o->omero || (lo >= 0 && lo < hi && hi <= 100))
        return SL_OK;
    return sl_error_set(err, SL_EINVAL, NULL,
                        "pyramid: omero percentiles %g and %g; the window's start and end need "
                        "0 <= start < end <= 100",
                        lo, hi);
}

sl_status
sl__pyramid_layout(struct sl__pyramid_layout *l, sl_dtype dtype, uint32_t rank,
                   const uint64_t *shape, const uint64_t *in_chunk,
                   const struct sl_pyramid_opts *opts, struct sl_error *err)
{
    memset(l, 0, sizeof(*l));
    if (rank < 2 || rank > 5)
        return sl_error_set(
            err, SL_EINVAL, NULL,
            "pyramid: OME-Zarr images have 2 to 5 dimensions; the input has %" PRIu32, rank);
    if (opts->n_levels < 1 || opts->n_levels > SL_PYRAMID_MAX_LEVELS)
        return sl_error_set(err, SL_EINVAL, NULL, "pyramid: %" PRIu32 " level%s; 1 to %d allowed",
                            opts->n_levels, SL__PLURAL(opts->n_levels), SL_PYRAMID_MAX_LEVELS);
    int format = opts->level.zarr_format;
    if (format != 2 && format != 3)
        return sl_error_set(err, SL_EINVAL, NULL, "pyramid: zarr_format %d is neither 2 nor 3",
                            format);
    l->rank = rank;
    l->n_levels = opts->n_levels;
    l->zarr_format = format;
    SL_TRY(pyr_bind(l, dtype, opts, err));
    SL_TRY(pyr_shapes(l, shape, err));
    SL_TRY(pyr_chunks(l, in_chunk, &opts->level, err));
    SL_TRY(pyr_axes(l, opts, err));
    SL_TRY(pyr_omero_check(opts, err));
    return pyr_coordinates(l, opts, err);
}

/* "group/k", or "k" in the store's root. */
static void
pyr_level_path(const char *group, uint32_t k, char *buf, size_t size)
{
    if (group[0] == '\0')
        snprintf(buf, size, "%" PRIu32, k);
    else
        snprintf(buf, size, "%s/%" PRIu32, group, k);
}

/* Refuse an existing node at `group` unless overwriting. */
static sl_status
pyr_check_group(sl_store *store, const char *group, bool overwrite, struct sl_error *err)
{
    sl_zarr_kind kind;
    int format = 0;
    SL_TRY(sl_zarr_probe(store, group, &kind, &format, err));
    if (kind == SL_ZARR_NONE)
        return SL_OK;
    if (overwrite) /* replaced whole: no level of the old pyramid stays */
        return sl_store_delete_tree(store, group, err);
    char name[SL_STORE_KEY_MAX + 4096];
    sl_store_name(store, group, name, sizeof(name));
    return sl_error_set(err, SL_EEXIST, NULL,
                        "pyramid: %s already holds a Zarr v%d %s; set opts.overwrite to replace "
                        "it (`sluice pyramid` takes --overwrite, a graph file \"overwrite\": true)",
                        name, format, kind == SL_ZARR_ARRAY ? "array" : "group");
}

/* For into_group: the group at `group` must be there, of the levels'
 * format, its attributes read into `attrs`; a node at a level's path is
 * refused, or deleted when overwriting. */
static sl_status
pyr_check_into(const struct sl__pyramid_layout *l, sl_store *store, const char *group,
               bool overwrite, struct sl_buf *attrs, struct sl_error *err)
{
    sl_zarr_kind kind = SL_ZARR_NONE;
    int format = 0;
    char name[SL_STORE_KEY_MAX + 4096];
    sl_store_name(store, group, name, sizeof(name));
    SL_TRY(sl_zarr_read_node(store, group, &kind, &format, attrs, err));
    if (kind == SL_ZARR_NONE)
        return sl_error_set(err, SL_ENOTFOUND, NULL,
                            "pyramid: %s holds no Zarr group to write the levels into", name);
    if (kind != SL_ZARR_GROUP || format != l->zarr_format)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "pyramid: %s is a Zarr v%d %s; the levels written into it are Zarr "
                            "v%d arrays, which only a v%d group holds",
                            name, format, kind == SL_ZARR_GROUP ? "group" : "array", l->zarr_format,
                            l->zarr_format);
    /* Every level's path looked at before any is deleted. */
    for (int pass = 0; pass < (overwrite ? 2 : 1); pass++) {
        for (uint32_t k = 0; k < l->n_levels; k++) {
            char path[SL_STORE_KEY_MAX];
            pyr_level_path(group, k, path, sizeof(path));
            SL_TRY(sl_zarr_probe(store, path, &kind, &format, err));
            if (kind != SL_ZARR_NONE && pass == 1)
                SL_TRY(sl_store_delete_tree(store, path, err));
            if (kind == SL_ZARR_NONE || overwrite)
                continue;
            sl_store_name(store, path, name, sizeof(name));
            return sl_error_set(err, SL_EEXIST, NULL,
                                "pyramid: %s already holds a Zarr v%d %s where level %" PRIu32
                                " goes; set opts.level.overwrite to replace it (`sluice pyramid "
                                "--into` takes --overwrite)",
                                name, format, kind == SL_ZARR_ARRAY ? "array" : "group", k);
        }
    }
    return SL_OK;
}

/* Check the group (pyr_check_group, or pyr_check_into reading its
 * attributes into `base`), then create the level arrays (arrays[k], one
 * reference each). */
static sl_status
pyr_write_levels(const struct sl__pyramid_layout *l, sl_store *store, const char *group,
                 const struct sl_pyramid_opts *o, sl_dtype dtype, struct sl_buf *base,
                 sl_array **arrays, struct sl_error *err)
{
    if (!o->open_existing && o->into_group)
        SL_TRY(pyr_check_into(l, store, group, o->level.overwrite, base, err));
    else if (!o->open_existing)
        SL_TRY(pyr_check_group(store, group, o->level.overwrite, err));
    for (uint32_t k = 0; k < l->n_levels; k++) {
        struct sl_array_spec spec = o->level;
        spec.rank = l->rank;
        spec.dtype = dtype;
        spec.attributes_json = NULL;
        for (uint32_t d = 0; d < SL_MAX_RANK; d++) {
            bool in = d < l->rank;
            spec.shape[d] = in ? l->shape[k][d] : 0;
            spec.chunk_shape[d] = in ? l->chunk[k][d] : 0;
            spec.shard_shape[d] = in ? l->shard[k][d] : 0;
            spec.dimension_names[d] = in ? l->axes[d].name : NULL;
        }
        char path[SL_STORE_KEY_MAX];
        pyr_level_path(group, k, path, sizeof(path));
        struct sl_error e = SL_ERROR_INIT;
        arrays[k] = o->open_existing ? sl_array_open(store, path, NULL, &e)
                                     : sl_array_create(store, path, &spec, NULL, &e);
        if (arrays[k] == NULL) {
            if (err != NULL && err->code == SL_OK)
                *err = e;
            return e.code;
        }
    }
    return SL_OK;
}

/* Create the level arrays (arrays[k], one reference each), then the group
 * (into_group: rewrite its attributes). */
static sl_status
pyr_write_store(const struct sl__pyramid_layout *l, sl_store *store, const char *group,
                const struct sl_pyramid_opts *o, sl_dtype dtype, sl_array **arrays,
                struct sl_error *err)
{
    struct sl_buf base = SL_BUF_INIT;
    sl_status st = pyr_write_levels(l, store, group, o, dtype, &base, arrays, err);
    char *attrs = NULL;
    if (st == SL_OK && !o->open_existing)
        st = sl__pyramid_ome_json(l, o->name, o->group_attributes,
                                  o->into_group ? (const char *)base.data : NULL, &attrs, err);
    if (st == SL_OK && attrs != NULL)
        st = sl_group_create(store, group, l->zarr_format, attrs, err);
    free(attrs);
    sl_buf_fini(&base);
    return st;
}

/* The node names of level k: its put, and for k >= 1 its get and downsample. */
static void
pyr_node_names(const char *name, uint32_t k, char put[64], char get[64], char op[64],
               char smooth[64])
{
    snprintf(put, 64, "%s.%" PRIu32, name, k);
    snprintf(get, 64, "%s.%" PRIu32 ".get", name, k);
    snprintf(op, 64, "%s.%" PRIu32 ".downsample", name, k);
    snprintf(smooth, 64, "%s.%" PRIu32 ".smooth", name, k);
}

/* Refuse names that are taken before anything is written. */
static sl_status
pyr_check_names(const sl_graph *g, const char *name, uint32_t n_levels, bool omero,
                struct sl_error *err)
{
    size_t len = name != NULL ? strlen(name) : 0;
    if (len == 0 || len > PYR_NAME_MAX)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "pyramid: the name prefix must have 1 to %d characters, not %zu",
                            PYR_NAME_MAX, len);
    char put[64], get[64], op[64], smooth[64];
    for (uint32_t k = 0; k < n_levels; k++) {
        pyr_node_names(name, k, put, get, op, smooth);
        SL_TRY(sl__graph_check_new_node(g, put, err));
        if (k > 0) {
            SL_TRY(sl__graph_check_new_node(g, get, err));
            SL_TRY(sl__graph_check_new_node(g, op, err));
            SL_TRY(sl__graph_check_new_node(g, smooth, err));
        }
    }
    if (!omero)
        return SL_OK;
    snprintf(put, sizeof(put), "%s.omero", name);
    return sl__graph_check_new_node(g, put, err);
}

/*
 * The omero stats node "<name>.omero" over `input`: one set per channel,
 * the window's two percentiles, and where its sets go after a run.
 */
static sl_status
pyr_add_omero(sl_graph *g, const char *name, uint32_t input, const struct sl__pyramid_layout *l,
              const struct sl_pyramid_opts *o, sl_store *store, const char *group,
              struct sl_error *err)
{
    struct sl_stats_desc desc = {.opts = SL_STATS_OPTS_DEFAULT};
    desc.opts.n_percentiles = 2;
    desc.opts.percentiles[0] = o->omero_percentiles[0];
    desc.opts.percentiles[1] = o->omero_percentiles[1];
    uint32_t per = l->channel_axis;
    if (per != UINT32_MAX) {
        desc.per = &per;
        desc.n_per = 1;
    }
    if (strlen(group) >= SL_STORE_KEY_MAX)
        return sl_error_set(err, SL_EINVAL, NULL, "pyramid: group path of %zu bytes is too long",
                            strlen(group));
    char id_name[64];
    snprintf(id_name, sizeof(id_name), "%s.omero", name);
    uint32_t id;
    SL_TRY(sl_graph_add_stats(g, id_name, input, &desc, &id, err));
    struct sl__node *n = sl__graph_node(g, id);
    struct sl__omero_target *t = sl_alloc_zeroed(&g->alloc, 1, sizeof(*t), 0);
    if (t == NULL) {
        sl__graph_pop_node(g);
        return sl_error_set(err, SL_ENOMEM, NULL, "pyramid: no memory for node \"%s\"", id_name);
    }
    sl_store_ref(store);
    t->store = store;
    sl__strlcpy(t->group, group, sizeof(t->group));
    t->zarr_format = l->zarr_format;
    n->stats->omero = t;
    return SL_OK;
}

/* Add every level's nodes; on failure remove those added. */
static sl_status
pyr_add_nodes(sl_graph *g, const char *name, uint32_t input, const struct sl__pyramid_layout *l,
              const struct sl_pyramid_opts *o, sl_store *store, const char *group,
              sl_array **arrays, uint32_t *level_puts, struct sl_error *err)
{
    uint32_t n0 = g->n_nodes;
    char put[64], get[64], op[64], smooth[64];
    uint32_t ids[SL_PYRAMID_MAX_LEVELS];
    pyr_node_names(name, 0, put, get, op, smooth);
    sl_status st = sl_graph_add_put(g, put, input, arrays[0], &ids[0], err);
    for (uint32_t k = 1; k < l->n_levels && st == SL_OK; k++) {
        uint32_t from, reduced;
        pyr_node_names(name, k, put, get, op, smooth);
        st = sl_graph_add_get(g, get, arrays[k - 1], &from, err);
        /* Smoothed from level k - 1's chunks and their margins; the
         * reduction then fuses with the Gaussian, chunk for chunk. */
        if (st == SL_OK && l->smooth)
            st = sl_graph_add_op(g, smooth, from, &l->smooth_op, NULL, &from, err);
        /* Reduced per chunk of level k - 1 where the blocks allow (fused
         * with its read, as the planner fuses one-to-one edges). */
        uint64_t chunks[SL_MAX_RANK];
        const struct sl__node *in = st == SL_OK ? sl__graph_node(g, from) : NULL;
        if (in != NULL && sl_grid_is_regular(&in->grid))
            sl_downsample_chunks(&l->op.u.downsample, in->grid.chunk, l->chunk[k], chunks);
        else
            memcpy(chunks, l->chunk[k], sizeof(chunks));
        if (st == SL_OK)
            st = sl_graph_add_op(g, op, from, &l->op, chunks, &reduced, err);
        if (st == SL_OK)
            st = sl_graph_add_put(g, put, reduced, arrays[k], &ids[k], err);
    }
    if (st == SL_OK && o->omero)
        st = pyr_add_omero(g, name, input, l, o, store, group, err);
    if (st != SL_OK) {
        while (g->n_nodes > n0)
            sl__graph_pop_node(g);
        return st;
    }
    if (level_puts != NULL)
        memcpy(level_puts, ids, l->n_levels * sizeof(uint32_t));
    return SL_OK;
}

sl_status
sl_graph_add_pyramid(sl_graph *g, const char *name, uint32_t input, sl_store *store,
                     const char *group, const struct sl_pyramid_opts *opts, uint32_t *level_puts,
                     struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (g == NULL || store == NULL || opts == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "sl_graph_add_pyramid needs a graph, a store and options");
    if (g->sealed)
        return sl_error_set(err, SL_ESTATE, NULL, "graph is sealed; cannot add pyramid \"%s\"",
                            name != NULL ? name : "");
    SL_TRY(pyr_check_names(g, name, opts->n_levels <= SL_PYRAMID_MAX_LEVELS ? opts->n_levels : 0,
                           opts->omero, err));
    SL_TRY(sl__graph_check_input(g, name, input, err));
    const struct sl__node *in = sl__graph_node(g, input);
    struct sl__pyramid_layout *l = sl_alloc(&g->alloc, sizeof(*l), 0);
    if (l == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "pyramid: no memory for the level layout");
    sl_array *arrays[SL_PYRAMID_MAX_LEVELS] = {NULL};
    sl_status st =
        sl__pyramid_layout(l, in->dtype, in->grid.rank, in->grid.shape,
                           sl_grid_is_regular(&in->grid) ? in->grid.chunk : NULL, opts, err);
    const char *at = group != NULL ? group : "";
    if (st == SL_OK)
        st = pyr_write_store(l, store, at, opts, in->dtype, arrays, err);
    if (st == SL_OK)
        st = pyr_add_nodes(g, name, input, l, opts, store, at, arrays, level_puts, err);
    for (uint32_t k = 0; k < SL_PYRAMID_MAX_LEVELS; k++)
        sl_array_unref(arrays[k]);
    sl_free(&g->alloc, l, sizeof(*l));
    return st;
}
