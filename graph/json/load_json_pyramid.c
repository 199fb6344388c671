/* SPDX-License-Identifier: MIT */
/*
 * Pyramid nodes of graph files: a multiscale pyramid of the input written
 * as a group of levels, with the fields of sl_graph_add_pyramid (levels,
 * factors, method, how each level is stored, the OME-Zarr name, axes,
 * scale and translation, the OME omero channel windows) and a group path
 * under the rules of array paths.
 * Every field is checked when parsed; building hands them to
 * sl_graph_add_pyramid over a memory store in the first pass (so its own
 * checks run before anything reaches disk) and over the group's directory
 * in the second (or, for ranks after the first of a split run, over the
 * levels rank 0 created).
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <sluice/graph_node.h>
#include <sluice/pyramid.h>

#include "core_internal.h"
#include "io_fill.h"
#include "load_json_internal.h"

static const char *const pyramid_create_keys[] = {"format", "chunks",     "shards",
                                                  "codec",  "fill_value", NULL};
static const char *const axis_keys[] = {"name", "type", "unit", NULL};
static const char *const omero_keys[] = {"percentiles", NULL};

/* "axes": one object {name, type, unit} per dimension, each field optional. */
static void
pyramid_parse_axes(sl_graph_json *doc, struct sl__jpyramid *p, const json_t *v, const char *ptr)
{
    struct sl__jdiag *d = &doc->diag;
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > SL_MAX_RANK) {
        sl__jdiag_add(d, SL_EINVAL, ptr,
                      "expected a list of axes {\"name\", \"type\", \"unit\"}, one per "
                      "dimension, found %s",
                      sl__json_type_name(v));
        return;
    }
    p->n_axes = (uint32_t)json_array_size(v);
    for (uint32_t i = 0; i < p->n_axes; i++) {
        const json_t *axis = json_array_get(v, i);
        char at[SL__JPTR_MAX];
        sl__jptr_index(at, ptr, i);
        if (!json_is_object(axis)) {
            sl__jdiag_add(d, SL_EINVAL, at, "expected an axis {\"name\": \"x\", ...}, found %s",
                          sl__json_type_name(axis));
            continue;
        }
        sl__jcheck_keys(d, axis, at, "an axis", axis_keys, NULL);
        const char **fields[3] = {&p->axis_name[i], &p->axis_type[i], &p->axis_unit[i]};
        for (int k = 0; k < 3; k++) {
            const json_t *f = json_object_get(axis, axis_keys[k]);
            char fat[SL__JPTR_MAX];
            sl__jptr_key(fat, at, axis_keys[k]);
            if (f != NULL)
                (void)sl__jget_string(d, f, fat, fields[k]);
        }
    }
}

/* "percentiles" of "omero": [lo, hi] with 0 <= lo < hi <= 100. */
static void
pyramid_parse_omero_percentiles(sl_graph_json *doc, struct sl__jpyramid *p, const json_t *v,
                                const char *ptr)
{
    struct sl__jdiag *d = &doc->diag;
    if (!json_is_array(v) || json_array_size(v) != 2) {
        sl__jdiag_add(d, SL_EINVAL, ptr,
                      "expected [start, end]: the two percentiles of the window, found %s",
                      json_is_array(v) ? "a list of another length" : sl__json_type_name(v));
        return;
    }
    double q[2];
    for (size_t i = 0; i < 2; i++) {
        const json_t *e = json_array_get(v, i);
        char at[SL__JPTR_MAX];
        sl__jptr_index(at, ptr, i);
        if (!json_is_number(e)) {
            sl__jdiag_add(d, SL_EINVAL, at, "expected a number in [0, 100], found %s",
                          sl__json_type_name(e));
            return;
        }
        q[i] = json_number_value(e);
        if (!(q[i] >= 0 && q[i] <= 100)) {
            sl__jdiag_add(d, SL_EINVAL, at, "expected a number in [0, 100], found %g", q[i]);
            return;
        }
    }
    if (q[0] >= q[1]) {
        sl__jdiag_add(d, SL_EINVAL, ptr, "the window's start percentile %g is not below its end %g",
                      q[0], q[1]);
        return;
    }
    memcpy(p->omero_percentiles, q, sizeof(q));
}

/* "omero": true, false or {"percentiles": [start, end]}. */
static void
pyramid_parse_omero(sl_graph_json *doc, struct sl__jpyramid *p, const json_t *v, const char *ptr)
{
    struct sl__jdiag *d = &doc->diag;
    p->omero_percentiles[0] = SL_PYRAMID_OMERO_START;
    p->omero_percentiles[1] = SL_PYRAMID_OMERO_END;
    if (json_is_boolean(v)) {
        p->omero = json_is_true(v);
        return;
    }
    if (!json_is_object(v)) {
        sl__jdiag_add(d, SL_EINVAL, ptr,
                      "expected true, false or {\"percentiles\": [start, end]}, found %s",
                      sl__json_type_name(v));
        return;
    }
    p->omero = true;
    sl__jcheck_keys(d, v, ptr, "\"omero\"", omero_keys, NULL);
    const json_t *q = json_object_get(v, "percentiles");
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, ptr, "percentiles");
    if (q != NULL)
        pyramid_parse_omero_percentiles(doc, p, q, at);
}

/* A list of one number per dimension: positive ones for "scale". */
static void
pyramid_parse_numbers(sl_graph_json *doc, const json_t *v, const char *ptr, bool positive,
                      double *out, uint32_t *n)
{
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > SL_MAX_RANK) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, ptr,
                      "expected a list of numbers, one per dimension, found %s",
                      sl__json_type_name(v));
        return;
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        char at[SL__JPTR_MAX];
        sl__jptr_index(at, ptr, i);
        double x = json_is_number(e) ? json_number_value(e) : NAN;
        if (json_is_number(e) && isfinite(x) && (!positive || x > 0)) {
            out[i] = x;
            continue;
        }
        if (json_is_number(e))
            sl__jdiag_add(&doc->diag, SL_EINVAL, at, "expected a positive number, found %g", x);
        else
            sl__jdiag_add(&doc->diag, SL_EINVAL, at, "expected a %snumber, found %s",
                          positive ? "positive " : "", sl__json_type_name(e));
    }
    *n = (uint32_t)json_array_size(v);
}

/* Lists of one entry per dimension must agree with "factors". */
static void
pyramid_check_ranks(sl_graph_json *doc, const struct sl__jnode *n)
{
    const struct sl__jpyramid *p = &n->pyramid;
    const struct {
        const char *name;
        uint32_t count;
    } lists[] = {{"axes", p->n_axes},
                 {"scale", p->n_scale},
                 {"translation", p->n_translation},
                 {"create/chunks", p->create.n_chunks},
                 {"create/shards", p->create.n_shards}};
    for (size_t i = 0; i < SL_ARRAY_LEN(lists); i++) {
        if (lists[i].count == 0 || lists[i].count == p->n_factors)
            continue;
        char at[SL__JPTR_MAX];
        snprintf(at, sizeof(at), "%s/%s", n->ptr, lists[i].name);
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "expected %" PRIu32 " entr%s, as \"factors\" has, found %" PRIu32,
                      p->n_factors, p->n_factors == 1 ? "y" : "ies", lists[i].count);
    }
}

/* The fields sl_graph_add_pyramid needs besides "create" and "axes". */
static void
pyramid_parse_fields(sl_graph_json *doc, struct sl__jnode *n)
{
    struct sl__jpyramid *p = &n->pyramid;
    struct sl__jdiag *d = &doc->diag;
    const json_t *v;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "group");
    if ((v = json_object_get(n->obj, "group")) == NULL)
        sl__jdiag_add(d, SL_EINVAL, at,
                      "missing \"group\": the path of the group to create, "
                      "holding one array per level");
    else if (sl__jget_string(d, v, at, &p->group))
        p->full_path = sl__jpath_join(doc, p->group, at);
    sl__jptr_key(at, n->ptr, "levels");
    if ((v = json_object_get(n->obj, "levels")) == NULL)
        sl__jdiag_add(d, SL_EINVAL, at, "missing \"levels\": how many levels, level 0 included");
    else
        (void)sl__jget_uint(d, v, at, 1, 64, &p->n_levels);
    sl__jptr_key(at, n->ptr, "factors");
    if ((v = json_object_get(n->obj, "factors")) == NULL)
        sl__jdiag_add(d, SL_EINVAL, at,
                      "missing \"factors\": the factor between levels per "
                      "dimension");
    else
        (void)sl__jget_dims(d, v, at, 1, p->factors, &p->n_factors);
    const char *smooth = NULL;
    sl__jptr_key(at, n->ptr, "smooth");
    if ((v = json_object_get(n->obj, "smooth")) != NULL && sl__jget_string(d, v, at, &smooth)) {
        if (strcmp(smooth, "gaussian") == 0)
            p->smooth = SL_PYRAMID_SMOOTH_GAUSSIAN;
        else if (strcmp(smooth, "none") != 0)
            sl__jdiag_add(d, SL_EINVAL, at, "unknown smoothing \"%.40s\" (none, gaussian)", smooth);
    }
    /* A smoothed level is sampled (stride) unless a method is given. */
    if (p->smooth == SL_PYRAMID_SMOOTH_GAUSSIAN)
        p->method = SL_DOWNSAMPLE_STRIDE;
    const char *method = NULL;
    sl__jptr_key(at, n->ptr, "method");
    struct sl_error err = SL_ERROR_INIT;
    if ((v = json_object_get(n->obj, "method")) != NULL && sl__jget_string(d, v, at, &method) &&
        sl_downsample_method_from_name(method, &p->method, &err) != SL_OK)
        sl__jdiag_add_error(d, at, &err);
    sl__jptr_key(at, n->ptr, "name");
    if ((v = json_object_get(n->obj, "name")) != NULL)
        (void)sl__jget_string(d, v, at, &p->name);
    sl__jptr_key(at, n->ptr, "overwrite");
    if ((v = json_object_get(n->obj, "overwrite")) != NULL)
        (void)sl__jget_overwrite(d, v, at, &p->overwrite, &p->in_place);
    sl__jptr_key(at, n->ptr, "omero");
    if ((v = json_object_get(n->obj, "omero")) != NULL)
        pyramid_parse_omero(doc, p, v, at);
}

/* Where the group is written: at "group", with the document's S3 settings. */
static struct sl__jdest
pyramid_dest(const struct sl__jpyramid *p, const char *ptr)
{
    return (struct sl__jdest){.full_path = p->full_path,
                              .path = p->group,
                              .ptr = ptr,
                              .overwrite = p->overwrite,
                              .in_place = p->in_place};
}

void
sl__jpyramid_parse(sl_graph_json *doc, struct sl__jnode *n)
{
    struct sl__jpyramid *p = &n->pyramid;
    struct sl__jdiag *d = &doc->diag;
    size_t before = d->count;
    p->method = SL_DOWNSAMPLE_MEAN;
    pyramid_parse_fields(doc, n);
    const json_t *v;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "create");
    if ((v = json_object_get(n->obj, "create")) != NULL)
        (void)sl__jcreate_parse(doc, v, at, pyramid_create_keys, &p->create);
    sl__jptr_key(at, n->ptr, "axes");
    if ((v = json_object_get(n->obj, "axes")) != NULL)
        pyramid_parse_axes(doc, p, v, at);
    sl__jptr_key(at, n->ptr, "scale");
    if ((v = json_object_get(n->obj, "scale")) != NULL)
        pyramid_parse_numbers(doc, v, at, true, p->scale, &p->n_scale);
    sl__jptr_key(at, n->ptr, "translation");
    if ((v = json_object_get(n->obj, "translation")) != NULL)
        pyramid_parse_numbers(doc, v, at, false, p->translation, &p->n_translation);
    if (d->count != before)
        return;
    pyramid_check_ranks(doc, n);
    sl__jptr_key(at, n->ptr, "group");
    struct sl__jdest dest = pyramid_dest(p, at);
    if (d->count != before || !sl__jpath_check_free(doc, &dest, &p->exists))
        return;
}

/* The options sl_graph_add_pyramid takes, from the node's fields. */
static bool
pyramid_opts(sl_graph_json *doc, struct sl__jnode *n, sl_dtype dtype, uint32_t rank,
             struct sl_pyramid_opts *o)
{
    struct sl__jpyramid *p = &n->pyramid;
    const struct sl__jcreate *c = &p->create;
    *o = SL_PYRAMID_OPTS_DEFAULT;
    o->n_levels = (uint32_t)p->n_levels;
    o->method = p->method;
    o->smooth = p->smooth;
    o->name = p->name;
    for (uint32_t d = 0; d < rank; d++) {
        o->factor[d] = p->n_factors > 0 ? p->factors[d] : 1;
        o->axes[d].name = p->n_axes > 0 ? p->axis_name[d] : NULL;
        o->axes[d].type = p->n_axes > 0 ? p->axis_type[d] : NULL;
        o->axes[d].unit = p->n_axes > 0 ? p->axis_unit[d] : NULL;
        o->scale[d] = p->n_scale > 0 ? p->scale[d] : 0;
        o->translation[d] = p->n_translation > 0 ? p->translation[d] : 0;
        o->level.chunk_shape[d] = c->n_chunks > 0 ? c->chunks[d] : 0;
        o->level.shard_shape[d] = c->n_shards > 0 ? c->shards[d] : 0;
    }
    if (c->format != 0)
        o->level.zarr_format = c->format;
    if (c->has_codec)
        o->level.codec = c->codec;
    o->level.overwrite = p->overwrite;
    o->omero = p->omero;
    if (p->omero)
        memcpy(o->omero_percentiles, p->omero_percentiles, sizeof(o->omero_percentiles));
    if (c->fill_value != NULL) {
        char at[SL__JPTR_MAX], cat[SL__JPTR_MAX];
        sl__jptr_key(cat, n->ptr, "create");
        sl__jptr_key(at, cat, "fill_value");
        struct sl_error err = SL_ERROR_INIT;
        bool is_null;
        if (sl__fill_parse(c->fill_value, dtype, o->level.zarr_format, p->fill, &is_null, at,
                           &err) != SL_OK) {
            sl__jdiag_add_error(&doc->diag, at, &err);
            return false;
        }
        o->level.fill_value = p->fill;
    }
    return true;
}

bool
sl__jpyramid_build(sl_graph_json *doc, struct sl__jnode *n, bool on_disk)
{
    struct sl__jpyramid *p = &n->pyramid;
    struct sl_node_info in;
    if (sl_graph_node_info(doc->graph, doc->nodes[n->input].gid, &in, NULL) != SL_OK)
        return false;
    struct sl_pyramid_opts o;
    if (!pyramid_opts(doc, n, in.dtype, in.grid->rank, &o))
        return false;
    struct sl_error err = SL_ERROR_INIT;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "group");
    struct sl__jdest dest = pyramid_dest(p, at);
    o.open_existing = sl__jnode_opens(doc, &dest, on_disk);
    sl_store *store = sl__jnode_store(doc, &dest, on_disk, &err);
    if (store == NULL && err.code == SL_OK)
        return false; /* refused, and reported */
    /* The level arrays keep the store; the graph keeps the arrays. */
    sl_status st = store != NULL ? sl_graph_add_pyramid(doc->graph, n->id, doc->nodes[n->input].gid,
                                                        store, "", &o, NULL, &err)
                                 : err.code;
    sl_store_unref(store);
    if (st == SL_OK)
        return true;
    sl__jptr_key(at, n->ptr, store == NULL ? "group" : "levels");
    sl__jdiag_add_error(&doc->diag, at, &err);
    return false;
}
