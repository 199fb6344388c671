/* SPDX-License-Identifier: MIT */
/*
 * OME-Zarr multiscales read from a group's attributes (see <sluice/ome.h>):
 * 0.4 keeps the list at the top of the attributes with a "version" in each
 * entry, 0.5 inside "ome" beside its "version".  Every field is checked
 * against what the specification writes before anything is handed over,
 * and a failure names the attributes' key and the JSON pointer of the
 * entry, as consolidated metadata does.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sluice/ome.h>

#include "zarr_internal.h"

/* Where a read is: the attributes' key and the pointer of the image. */
struct ome_read {
    const char *source;
    char at[160];
    struct sl_error *err;
};

static sl_status ome_fail(const struct ome_read *r, sl_status code, const char *field,
                          const char *fmt, ...) SL_PRINTF(4, 5);

static sl_status
ome_fail(const struct ome_read *r, sl_status code, const char *field, const char *fmt, ...)
{
    char at[256], what[512];
    snprintf(at, sizeof(at), "%s%s", r->at, field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    sl_error_set_path(r->err, code, at, "OME-Zarr multiscales: %s", what);
    sl_error_set_source(r->err, r->source);
    return code;
}

/* Copy string `v` (may be absent when `optional`) into `out`. */
static sl_status
ome_string(const struct ome_read *r, const json_t *v, bool optional, const char *field, char *out,
           size_t size)
{
    out[0] = '\0';
    if (v == NULL && optional)
        return SL_OK;
    if (!json_is_string(v))
        return ome_fail(r, SL_EPARSE, field, "expected a string");
    size_t n = json_string_length(v);
    if (n >= size)
        return ome_fail(r, SL_EPARSE, field, "a string of %zu bytes, longer than the %zu kept", n,
                        size - 1);
    memcpy(out, json_string_value(v), n + 1);
    return SL_OK;
}

static sl_status
ome_axes(const struct ome_read *r, const json_t *axes, struct sl_ome_multiscale *out)
{
    if (!json_is_array(axes) || json_array_size(axes) == 0)
        return ome_fail(r, SL_EPARSE, "/axes", "expected a non-empty list of axes");
    size_t n = json_array_size(axes);
    if (n > SL_MAX_RANK)
        return ome_fail(r, SL_EUNSUPPORTED, "/axes", "%zu axes, more than the %d supported", n,
                        SL_MAX_RANK);
    out->rank = (uint32_t)n;
    for (size_t d = 0; d < n; d++) {
        const json_t *a = json_array_get(axes, d);
        struct sl_ome_axis *x = &out->axes[d];
        char f[3][48];
        snprintf(f[0], sizeof(f[0]), "/axes/%zu/name", d);
        snprintf(f[1], sizeof(f[1]), "/axes/%zu/type", d);
        snprintf(f[2], sizeof(f[2]), "/axes/%zu/unit", d);
        if (json_is_string(a)) { /* 0.3 wrote bare names */
            SL_TRY(ome_string(r, a, false, f[0], x->name, sizeof(x->name)));
            x->type[0] = x->unit[0] = '\0';
            continue;
        }
        if (!json_is_object(a))
            return ome_fail(r, SL_EPARSE, f[0] + 0, "expected an axis object");
        SL_TRY(ome_string(r, json_object_get(a, "name"), false, f[0], x->name, sizeof(x->name)));
        SL_TRY(ome_string(r, json_object_get(a, "type"), true, f[1], x->type, sizeof(x->type)));
        SL_TRY(ome_string(r, json_object_get(a, "unit"), true, f[2], x->unit, sizeof(x->unit)));
    }
    return SL_OK;
}

/* A transformation's vector of `rank` numbers into `out`. */
static sl_status
ome_vector(const struct ome_read *r, const json_t *v, uint32_t rank, const char *field, double *out)
{
    if (!json_is_array(v) || json_array_size(v) != rank)
        return ome_fail(r, SL_EPARSE, field, "expected a list of %u numbers (one per axis)",
                        (unsigned)rank);
    for (uint32_t d = 0; d < rank; d++) {
        const json_t *x = json_array_get(v, d);
        if (!json_is_number(x))
            return ome_fail(r, SL_EPARSE, field, "entry %u is not a number", (unsigned)d);
        out[d] = json_number_value(x);
    }
    return SL_OK;
}

static sl_status
ome_transforms(const struct ome_read *r, const json_t *list, const char *at, uint32_t rank,
               struct sl_ome_level *l)
{
    for (uint32_t d = 0; d < rank; d++) {
        l->scale[d] = 1.0;
        l->translation[d] = 0.0;
    }
    if (list == NULL)
        return SL_OK;
    char f[96];
    snprintf(f, sizeof(f), "%s/coordinateTransformations", at);
    if (!json_is_array(list))
        return ome_fail(r, SL_EPARSE, f, "expected a list of transformations");
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *t = json_array_get(list, i);
        char fi[128];
        snprintf(fi, sizeof(fi), "%s/%zu", f, i);
        const char *type = json_string_value(json_object_get(t, "type"));
        if (!json_is_object(t) || type == NULL)
            return ome_fail(r, SL_EPARSE, fi, "expected an object with a \"type\"");
        bool scale = strcmp(type, "scale") == 0;
        if (!scale && strcmp(type, "translation") != 0)
            continue; /* "identity", or a path to a binary: nothing to keep */
        char fv[160];
        snprintf(fv, sizeof(fv), "%s/%s", fi, type);
        SL_TRY(
            ome_vector(r, json_object_get(t, type), rank, fv, scale ? l->scale : l->translation));
    }
    return SL_OK;
}

static sl_status
ome_levels(const struct ome_read *r, const json_t *datasets, struct sl_ome_multiscale *out)
{
    if (!json_is_array(datasets) || json_array_size(datasets) == 0)
        return ome_fail(r, SL_EPARSE, "/datasets", "expected a non-empty list of datasets");
    size_t n = json_array_size(datasets);
    if (n > SL_OME_MAX_LEVELS)
        return ome_fail(r, SL_EUNSUPPORTED, "/datasets", "%zu levels, more than the %d supported",
                        n, SL_OME_MAX_LEVELS);
    out->n_levels = (uint32_t)n;
    for (size_t k = 0; k < n; k++) {
        const json_t *ds = json_array_get(datasets, k);
        char at[48], f[64];
        snprintf(at, sizeof(at), "/datasets/%zu", k);
        snprintf(f, sizeof(f), "%s/path", at);
        struct sl_ome_level *l = &out->levels[k];
        if (!json_is_object(ds))
            return ome_fail(r, SL_EPARSE, at, "expected a dataset object");
        SL_TRY(ome_string(r, json_object_get(ds, "path"), false, f, l->path, sizeof(l->path)));
        struct sl_error local = SL_ERROR_INIT;
        if (l->path[0] == '\0' || sl__node_path_check(l->path, &local) != SL_OK)
            return ome_fail(r, SL_EPARSE, f, "\"%s\" is not a path inside the group", l->path);
        SL_TRY(
            ome_transforms(r, json_object_get(ds, "coordinateTransformations"), at, out->rank, l));
    }
    return SL_OK;
}

/* Image `index` of the list `list` (its pointer in r->at). */
static sl_status
ome_image(struct ome_read *r, const json_t *list, const char *version, uint32_t index,
          struct sl_ome_multiscale *out)
{
    size_t base = strlen(r->at);
    snprintf(r->at + base, sizeof(r->at) - base, "/%u", (unsigned)index);
    const json_t *ms = json_array_get(list, index);
    if (!json_is_object(ms))
        return ome_fail(r, SL_EPARSE, "", "expected a multiscale object");
    memset(out, 0, sizeof(*out));
    const json_t *v = json_object_get(ms, "version");
    if (v != NULL)
        SL_TRY(ome_string(r, v, false, "/version", out->version, sizeof(out->version)));
    else
        snprintf(out->version, sizeof(out->version), "%s", version);
    SL_TRY(ome_string(r, json_object_get(ms, "name"), true, "/name", out->name, sizeof(out->name)));
    SL_TRY(ome_string(r, json_object_get(ms, "type"), true, "/type", out->type, sizeof(out->type)));
    SL_TRY(ome_axes(r, json_object_get(ms, "axes"), out));
    return ome_levels(r, json_object_get(ms, "datasets"), out);
}

sl_status
sl_ome_multiscale_parse(const char *attributes_json, const char *source, uint32_t index,
                        struct sl_ome_multiscale *out, uint32_t *n_images, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (n_images != NULL)
        *n_images = 0;
    if (out == NULL || attributes_json == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "attributes or output is missing");
    if (source == NULL)
        source = "attributes";
    json_t *attrs = NULL;
    SL_TRY(sl__json_parse(attributes_json, strlen(attributes_json), source, &attrs, err));
    sl_status st = SL_OK;
    struct ome_read r = {.source = source, .err = err};
    if (!json_is_object(attrs))
        st = ome_fail(&r, SL_EPARSE, "", "expected a JSON object of attributes");
    const json_t *ome = json_object_get(attrs, "ome");
    const json_t *list = json_object_get(attrs, "multiscales");
    char version[16] = "";
    if (st == SL_OK && json_is_object(ome)) {
        struct ome_read rv = {.source = source, .at = "/ome", .err = err};
        const json_t *v = json_object_get(ome, "version");
        if (v != NULL)
            st = ome_string(&rv, v, false, "/version", version, sizeof(version));
        list = json_object_get(ome, "multiscales");
        snprintf(r.at, sizeof(r.at), "/ome/multiscales");
    } else {
        snprintf(r.at, sizeof(r.at), "/multiscales");
    }
    if (st == SL_OK && list != NULL && !json_is_array(list))
        st = ome_fail(&r, SL_EPARSE, "", "expected a list");
    size_t n = st == SL_OK && list != NULL ? json_array_size(list) : 0;
    if (st == SL_OK && n_images != NULL)
        *n_images = (uint32_t)n;
    if (st == SL_OK && index >= n)
        st = sl_error_set(err, SL_ENOTFOUND, NULL,
                          "%s describes %zu multiscale image%s; no image %u", source, n,
                          n == 1 ? "" : "s", (unsigned)index);
    if (st == SL_OK)
        st = ome_image(&r, list, version, index, out);
    json_decref(attrs);
    return st;
}

sl_status
sl_ome_multiscale_read(sl_store *store, const char *path, uint32_t index,
                       struct sl_ome_multiscale *out, uint32_t *n_images, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (n_images != NULL)
        *n_images = 0;
    if (out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "output is missing");
    char source[SL_STORE_KEY_MAX + 16];
    struct sl_buf text = SL_BUF_INIT;
    sl_status st = sl__group_attributes(store, path, &text, source, sizeof(source), err);
    if (st == SL_OK)
        st = sl_ome_multiscale_parse((const char *)text.data, source, index, out, n_images, err);
    sl_buf_fini(&text);
    return st;
}
