/* SPDX-License-Identifier: MIT */
/*
 * OME-Zarr `multiscales` metadata of a pyramid layout: version 0.5 (Zarr v3
 * groups: attributes {"ome": {"version": "0.5", "multiscales": [...]}}) or
 * 0.4 (Zarr v2 groups: attributes {"multiscales": [{"version": "0.4",
 * ...}]}).  Each level is a dataset "k" with one scale and one translation
 * transformation, in that order, as both versions require.  And the
 * "omero" block of channel windows written after a run: inside "ome" in
 * 0.5, beside "multiscales" in 0.4.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include <sluice/version.h>

#include "core_internal.h"
#include "pyramid_internal.h"

/* Set obj[key] = value.  Takes `value` even on failure (jansson's "steal"
 * rule); false when either is NULL or memory ran out. */
static bool
put(json_t *obj, const char *key, json_t *value)
{
    if (obj == NULL) {
        json_decref(value);
        return false;
    }
    return json_object_set_new(obj, key, value) == 0;
}

/* Append `value` to `arr`; takes `value` as put() does. */
static bool
push(json_t *arr, json_t *value)
{
    if (arr == NULL) {
        json_decref(value);
        return false;
    }
    return json_array_append_new(arr, value) == 0;
}

/* Return `v` when `ok`, else release it and return NULL. */
static json_t *
keep_if(bool ok, json_t *v)
{
    if (ok)
        return v;
    json_decref(v);
    return NULL;
}

/* A list of `n` reals. */
static json_t *
reals(const double *v, uint32_t n)
{
    json_t *a = json_array();
    bool ok = a != NULL;
    for (uint32_t i = 0; i < n && ok; i++)
        ok = push(a, json_real(v[i]));
    return keep_if(ok, a);
}

/* [{"name": "t", "type": "time", "unit": "second"}, ...] */
static json_t *
ome_axes(const struct sl__pyramid_layout *l)
{
    json_t *axes = json_array();
    bool ok = axes != NULL;
    for (uint32_t d = 0; d < l->rank && ok; d++) {
        const struct sl_pyramid_axis *a = &l->axes[d];
        json_t *o = json_object();
        bool done = put(o, "name", json_string(a->name)) && put(o, "type", json_string(a->type)) &&
                    (a->unit == NULL || put(o, "unit", json_string(a->unit)));
        ok = push(axes, keep_if(done, o));
    }
    return keep_if(ok, axes);
}

/* {"type": "scale", "scale": [...]} and the like. */
static json_t *
ome_transform(const char *type, const double *v, uint32_t n)
{
    json_t *t = json_object();
    bool ok = put(t, "type", json_string(type)) && put(t, type, reals(v, n));
    return keep_if(ok, t);
}

/* One dataset: {"path": "k", "coordinateTransformations": [scale, translation]}.
 * Each put runs whatever failed before it, so every value is taken. */
static json_t *
ome_dataset(const struct sl__pyramid_layout *l, uint32_t k)
{
    char path[16];
    snprintf(path, sizeof(path), "%u", (unsigned)k);
    json_t *list = json_array();
    bool ok = push(list, ome_transform("scale", l->scale[k], l->rank));
    ok = push(list, ome_transform("translation", l->translation[k], l->rank)) && ok;
    json_t *ds = json_object();
    ok = put(ds, "path", json_string(path)) && ok;
    ok = put(ds, "coordinateTransformations", keep_if(ok, list)) && ok;
    return keep_if(ok, ds);
}

/* "metadata": how the levels were made. */
static json_t *
ome_method(const struct sl__pyramid_layout *l)
{
    const struct sl_downsample_params *p = &l->op.u.downsample;
    json_t *factors = json_array();
    bool ok = factors != NULL;
    for (uint32_t d = 0; d < l->rank && ok; d++)
        ok = push(factors, json_integer((json_int_t)p->factor[d]));
    json_t *kwargs = json_object();
    ok = put(kwargs, "factors", keep_if(ok, factors)) && ok;
    ok = put(kwargs, "method", json_string(sl_downsample_method_name(p->method))) && ok;
    json_t *m = json_object();
    ok = put(m, "description",
             json_string("each level downsampled from the previous one, block by block, "
                         "with TensorStore's edge rule: extent ceil(n / factor)")) &&
         ok;
    ok = put(m, "method", json_string("sluice.downsample")) && ok;
    ok = put(m, "version", json_string(sl_version())) && ok;
    ok = put(m, "kwargs", keep_if(ok, kwargs)) && ok;
    return keep_if(ok, m);
}

/* The multiscales entry; 0.4 carries its version inside it. */
static json_t *
ome_multiscale(const struct sl__pyramid_layout *l, const char *name)
{
    json_t *datasets = json_array();
    bool ok = datasets != NULL;
    for (uint32_t k = 0; k < l->n_levels && ok; k++)
        ok = push(datasets, ome_dataset(l, k));
    json_t *ms = json_object();
    if (l->zarr_format == 2)
        ok = put(ms, "version", json_string("0.4")) && ok;
    if (name != NULL)
        ok = put(ms, "name", json_string(name)) && ok;
    ok = put(ms, "axes", ome_axes(l)) && ok;
    ok = put(ms, "datasets", keep_if(ok, datasets)) && ok;
    ok = put(ms, "type", json_string(sl_downsample_method_name(l->op.u.downsample.method))) && ok;
    ok = put(ms, "metadata", ome_method(l)) && ok;
    return keep_if(ok, ms);
}

/* `text` parsed as a JSON object into `*out`, the keys the OME metadata
 * owns dropped (v3's "ome" kept when `keep_ome`: its other keys stay); an
 * empty object for NULL.  SL_EINVAL names `what`. */
static sl_status
ome_user_object(const char *text, const char *what, bool keep_ome, json_t **out,
                struct sl_error *err)
{
    json_t *root = text != NULL ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : json_object();
    if (text != NULL && root != NULL && !json_is_object(root)) {
        json_decref(root);
        return sl_error_set(err, SL_EINVAL, NULL, "pyramid: %s are not a JSON object", what);
    }
    if (root == NULL)
        return text != NULL ? sl_error_set(err, SL_EINVAL, NULL, "pyramid: %s are not JSON", what)
                            : sl_error_set(err, SL_ENOMEM, NULL,
                                           "pyramid: no memory for the OME-Zarr metadata");
    static const char *const owned[] = {"ome", "multiscales", "_ARRAY_DIMENSIONS"};
    for (size_t i = keep_ome ? 1 : 0; i < sizeof(owned) / sizeof(owned[0]); i++)
        json_object_del(root, owned[i]);
    if (!json_is_object(json_object_get(root, "ome")))
        json_object_del(root, "ome");
    *out = root;
    return SL_OK;
}

/* The group's attributes to start from: `base`'s keys (an existing group's,
 * or NULL), then those of `user` that `base` lacks, without the keys the OME
 * metadata owns (v3's "ome" object of `base` kept). */
static sl_status
ome_user_root(const char *user, const char *base, json_t **out, struct sl_error *err)
{
    json_t *root = NULL, *add = NULL;
    SL_TRY(ome_user_object(base, "the group's attributes", true, &root, err));
    sl_status st = ome_user_object(user, "the group attributes given", false, &add, err);
    if (st == SL_OK && json_object_update_missing(root, add) != 0)
        st = sl_error_set(err, SL_ENOMEM, NULL, "pyramid: no memory for the OME-Zarr metadata");
    json_decref(add);
    if (st != SL_OK)
        json_decref(root);
    *out = st == SL_OK ? root : NULL;
    return st;
}

sl_status
sl__pyramid_ome_json(const struct sl__pyramid_layout *l, const char *name, const char *user,
                     const char *base, char **out, struct sl_error *err)
{
    json_t *root = NULL;
    *out = NULL;
    SL_TRY(ome_user_root(user, base, &root, err));
    json_t *list = json_array();
    bool ok = push(list, ome_multiscale(l, name));
    if (l->zarr_format == 3) {
        json_t *ome = json_object_get(root, "ome");
        ome = ome != NULL ? json_incref(ome) : json_object();
        ok = put(ome, "version", json_string("0.5")) && ok;
        ok = put(ome, "multiscales", keep_if(ok, list)) && ok;
        ok = put(root, "ome", keep_if(ok, ome)) && ok;
    } else {
        ok = put(root, "multiscales", keep_if(ok, list)) && ok;
    }
    *out = ok ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (*out == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "pyramid: no memory for the OME-Zarr metadata");
    return SL_OK;
}

/* Channel colours when there are several, in turn (one channel: white). */
static const char *const omero_colors[] = {"FF0000", "00FF00", "0000FF",
                                           "FF00FF", "00FFFF", "FFFF00"};

/* One channel of the omero block. */
static json_t *
omero_channel(const struct sl__omero_window *w, uint64_t k, uint64_t n)
{
    char label[32];
    snprintf(label, sizeof(label), "channel %" PRIu64, k);
    json_t *win = json_object();
    bool ok = put(win, "min", json_real(w->min)) && put(win, "max", json_real(w->max)) &&
              put(win, "start", json_real(w->start)) && put(win, "end", json_real(w->end));
    json_t *c = json_object();
    ok = put(c, "active", json_true()) && ok;
    ok = put(c, "coefficient", json_real(1.0)) && ok;
    ok = put(c, "color",
             json_string(n == 1 ? "FFFFFF" : omero_colors[k % SL_ARRAY_LEN(omero_colors)])) &&
         ok;
    ok = put(c, "family", json_string("linear")) && ok;
    ok = put(c, "inverted", json_false()) && ok;
    ok = put(c, "label", json_string(label)) && ok;
    ok = put(c, "window", keep_if(ok, win)) && ok;
    return keep_if(ok, c);
}

/* The omero block of `n` channels, after checking every value is finite. */
static sl_status
omero_block(const struct sl__omero_window *w, uint64_t n, json_t **out, struct sl_error *err)
{
    for (uint64_t k = 0; k < n; k++) {
        const double v[4] = {w[k].min, w[k].max, w[k].start, w[k].end};
        for (size_t i = 0; i < 4; i++)
            if (!isfinite(v[i]))
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "channel %" PRIu64 " has window min %g, max %g, start %g, "
                                    "end %g; OME's window needs finite numbers (the channel "
                                    "holds %s)",
                                    k, w[k].min, w[k].max, w[k].start, w[k].end,
                                    isnan(v[i]) ? "only NaN" : "infinities");
    }
    json_t *channels = json_array();
    bool ok = channels != NULL;
    for (uint64_t k = 0; k < n && ok; k++)
        ok = push(channels, omero_channel(&w[k], k, n));
    json_t *rdefs = json_object();
    ok = put(rdefs, "model", json_string(n == 1 ? "greyscale" : "color")) && ok;
    json_t *omero = json_object();
    ok = put(omero, "channels", keep_if(ok, channels)) && ok;
    ok = put(omero, "rdefs", keep_if(ok, rdefs)) && ok;
    *out = keep_if(ok, omero);
    if (*out == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "pyramid: no memory for the omero metadata");
    return SL_OK;
}

sl_status
sl__pyramid_omero_json(const char *attrs, int zarr_format, const struct sl__omero_window *w,
                       uint64_t n, char **out, struct sl_error *err)
{
    *out = NULL;
    json_t *omero = NULL;
    SL_TRY(omero_block(w, n, &omero, err));
    json_t *root = json_loads(attrs, JSON_REJECT_DUPLICATES, NULL);
    json_t *at = zarr_format == 3 ? json_object_get(root, "ome") : root;
    if (!json_is_object(root) || !json_is_object(at)) {
        json_decref(omero);
        json_decref(root);
        return sl_error_set(err, SL_EPARSE, NULL,
                            "the group's attributes hold no %s object to add \"omero\" to",
                            zarr_format == 3 ? "\"ome\"" : "JSON");
    }
    bool ok = put(at, "omero", omero);
    *out = ok ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (*out == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "pyramid: no memory for the omero metadata");
    return SL_OK;
}
