/* SPDX-License-Identifier: MIT */
/*
 * What every part of the JSON graph loader reads fields with: the error
 * list (the caller's records, filled in order until full), JSON pointers
 * (RFC 6901 escaping), typed field access that reports what was expected
 * and found, unknown-field checks, and array paths (joined to the base
 * directory, refused when they leave it, by name or through a symbolic
 * link, and that is not allowed).
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sluice/fs.h>
#include <sluice/op_registry.h>

#include <sluice/remote.h>

#include "core_internal.h"

#include "load_json_internal.h"

/* ---- the error list -------------------------------------------------------- */

/* Count an error and claim the next record of the list, or NULL when there
 * is none to fill.  The count goes on once the list is full: parsers compare
 * it before and after a field to know whether its values can be trusted. */
static struct sl_error *
jdiag_claim(struct sl__jdiag *d)
{
    d->count++;
    if (d->full)
        return NULL;
    struct sl_graph_json_errors *out = d->out;
    if (out == NULL || out->errors == NULL || out->capacity == 0) {
        d->full = true; /* nobody reads the list: the first error decides */
        return NULL;
    }
    struct sl_error *e = &out->errors[out->count++];
    *e = SL_ERROR_INIT;
    if (out->count == out->capacity) {
        d->full = true;
        out->truncated = true;
    }
    return e;
}

sl_status
sl__jdiag_add(struct sl__jdiag *d, sl_status code, const char *ptr, const char *fmt, ...)
{
    struct sl_error *e = jdiag_claim(d);
    if (e == NULL)
        return code;
    va_list ap;
    va_start(ap, fmt);
    sl_error_setv(e, code, NULL, fmt, ap);
    va_end(ap);
    sl__text_fit(e->path, sizeof(e->path), ptr);
    sl_error_set_source(e, d->source);
    return code;
}

sl_status
sl__jdiag_add_error(struct sl__jdiag *d, const char *ptr, const struct sl_error *src)
{
    return sl__jdiag_add(d, src->code != SL_OK ? src->code : SL_EINVAL, ptr, "%s", src->text);
}

bool
sl__jdiag_add_node_error(struct sl__jdiag *d, const char *id, const char *ptr, struct sl_error *err)
{
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "node \"%s\": ", id);
    size_t len = strlen(prefix);
    if (strncmp(err->text, prefix, len) == 0)
        memmove(err->text, err->text + len, strlen(err->text + len) + 1);
    sl__jdiag_add_error(d, ptr, err);
    return false;
}

sl_status
sl__jdiag_add_at(struct sl__jdiag *d, sl_status code, int line, int column, size_t position,
                 const char *text)
{
    struct sl_error *e = jdiag_claim(d);
    if (e == NULL)
        return code;
    sl_error_set_at(e, code, line, column < 1 ? 1 : column, position, "%s", text);
    sl_error_set_source(e, d->source);
    return code;
}

/* ---- JSON pointers and typed fields ------------------------------------------ */

void
sl__jptr_key(char out[SL__JPTR_MAX], const char *parent, const char *key)
{
    size_t len = 0;
    out[0] = '\0';
    sl__strbuf_append(out, SL__JPTR_MAX, &len, "%s/", parent);
    for (const char *c = key; *c != '\0' && len < SL__JPTR_MAX; c++) {
        if (*c == '~')
            sl__strbuf_append(out, SL__JPTR_MAX, &len, "~0");
        else if (*c == '/')
            sl__strbuf_append(out, SL__JPTR_MAX, &len, "~1");
        else
            sl__strbuf_append(out, SL__JPTR_MAX, &len, "%c", *c);
    }
}

void
sl__jptr_index(char out[SL__JPTR_MAX], const char *parent, size_t index)
{
    snprintf(out, SL__JPTR_MAX, "%s/%zu", parent, index);
}

const char *
sl__json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "something else";
}

bool
sl__jcheck_keys(struct sl__jdiag *d, const json_t *obj, const char *ptr, const char *what,
                const char *const *known, const struct sl_op_desc *op)
{
    bool ok = true;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value)
    {
        bool found = sl_op_param_index(op, key) >= 0;
        for (const char *const *k = known; *k != NULL && !found; k++)
            found = strcmp(*k, key) == 0;
        if (found)
            continue;
        char list[160];
        size_t len = 0;
        list[0] = '\0';
        for (const char *const *k = known; *k != NULL; k++)
            sl__strbuf_append(list, sizeof(list), &len, "%s%s", k == known ? "" : ", ", *k);
        for (uint32_t i = 0; op != NULL && i < op->n_params; i++)
            sl__strbuf_append(list, sizeof(list), &len, ", %s", op->params[i].name);
        char at[SL__JPTR_MAX];
        sl__jptr_key(at, ptr, key);
        sl__jdiag_add(d, SL_EINVAL, at, "unknown field \"%s\" in %s; expected one of: %s", key,
                      what, list);
        ok = false;
    }
    return ok;
}

bool
sl__jget_string(struct sl__jdiag *d, const json_t *v, const char *ptr, const char **out)
{
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return true;
    }
    sl__jdiag_add(d, SL_EINVAL, ptr, "expected a string, found %s", sl__json_type_name(v));
    return false;
}

bool
sl__jget_bool(struct sl__jdiag *d, const json_t *v, const char *ptr, bool *out)
{
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return true;
    }
    sl__jdiag_add(d, SL_EINVAL, ptr, "expected true or false, found %s", sl__json_type_name(v));
    return false;
}

bool
sl__jget_overwrite(struct sl__jdiag *d, const json_t *v, const char *ptr, bool *overwrite,
                   bool *in_place)
{
    if (json_is_string(v) && strcmp(json_string_value(v), "in-place") == 0) {
        *overwrite = *in_place = true;
        return true;
    }
    if (json_is_boolean(v)) {
        *overwrite = json_is_true(v);
        *in_place = false;
        return true;
    }
    sl__jdiag_add(d, SL_EINVAL, ptr, "expected true, false or \"in-place\", found %s",
                  json_is_string(v) ? json_string_value(v) : sl__json_type_name(v));
    return false;
}

bool
sl__jget_uint(struct sl__jdiag *d, const json_t *v, const char *ptr, uint64_t lo, uint64_t hi,
              uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0 && (uint64_t)json_integer_value(v) >= lo &&
        (uint64_t)json_integer_value(v) <= hi) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    if (json_is_integer(v))
        sl__jdiag_add(d, SL_EINVAL, ptr,
                      "expected an integer from %" PRIu64 " to %" PRIu64
                      ", found %" JSON_INTEGER_FORMAT,
                      lo, hi, json_integer_value(v));
    else
        sl__jdiag_add(d, SL_EINVAL, ptr,
                      "expected an integer from %" PRIu64 " to %" PRIu64 ", found %s", lo, hi,
                      sl__json_type_name(v));
    return false;
}

/* Dimensions have extents below 2^62, as Zarr metadata does here. */
#define JDIM_MAX ((uint64_t)1 << 62)

bool
sl__jget_axes(struct sl__jdiag *d, const json_t *v, const char *ptr, uint32_t *axes, uint32_t *n)
{
    uint64_t got[SL_MAX_RANK];
    uint32_t count = 0;
    *n = 0;
    if (!sl__jget_dims(d, v, ptr, 0, got, &count))
        return false;
    for (uint32_t k = 0; k < count; k++) {
        if (got[k] >= SL_MAX_RANK) {
            char item[SL__JPTR_MAX];
            sl__jptr_index(item, ptr, k);
            sl__jdiag_add(d, SL_EINVAL, item, "axis %" PRIu64 " is beyond rank %d", got[k],
                          SL_MAX_RANK);
            return false;
        }
        axes[k] = (uint32_t)got[k];
    }
    *n = count;
    return true;
}

bool
sl__jget_dims(struct sl__jdiag *d, const json_t *v, const char *ptr, uint64_t lo, uint64_t *out,
              uint32_t *n)
{
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > SL_MAX_RANK) {
        if (json_is_array(v))
            sl__jdiag_add(d, SL_EINVAL, ptr,
                          "expected 1 to %d integers (one per dimension), "
                          "found %zu",
                          SL_MAX_RANK, json_array_size(v));
        else
            sl__jdiag_add(d, SL_EINVAL, ptr,
                          "expected a list of integers, one per dimension, "
                          "found %s",
                          sl__json_type_name(v));
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < json_array_size(v); i++) {
        char at[SL__JPTR_MAX];
        sl__jptr_index(at, ptr, i);
        const json_t *e = json_array_get(v, i);
        json_int_t x = json_is_integer(e) ? json_integer_value(e) : -1;
        if (json_is_integer(e) && x >= 0 && (uint64_t)x >= lo && (uint64_t)x <= JDIM_MAX) {
            out[i] = (uint64_t)x;
            continue;
        }
        const char *want = lo > 0 ? "a positive integer" : "an integer >= 0";
        if (json_is_integer(e))
            sl__jdiag_add(d, SL_EINVAL, at, "expected %s, found %" JSON_INTEGER_FORMAT, want, x);
        else
            sl__jdiag_add(d, SL_EINVAL, at, "expected %s, found %s", want, sl__json_type_name(e));
        ok = false;
    }
    *n = (uint32_t)json_array_size(v);
    return ok;
}

/* ---- paths -------------------------------------------------------------------- */

/* True when `path` has a ".." component. */
static bool
path_has_dotdot(const char *path)
{
    for (const char *p = path; *p != '\0';) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += n;
        p += *p == '/';
    }
    return false;
}

/* Drop "." components, repeated and trailing slashes, in place, so two
 * spellings of one path compare equal. */
static void
path_normalize(char *path)
{
    char *out = path;
    const char *p = path;
    if (*p == '/')
        *out++ = *p++;
    while (*p != '\0') {
        size_t n = strcspn(p, "/");
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            if (out > path && out[-1] != '/')
                *out++ = '/';
            memmove(out, p, n);
            out += n;
        }
        p += n;
        p += *p == '/';
    }
    if (out == path)
        *out++ = '.';
    *out = '\0';
}

/* Refuse `full` (`path` as written, reported at `ptr`) when the kernel
 * would reach it outside the base directory: a symbolic link on the way
 * leads out though the path, by name, stays in. */
static bool
path_check_inside(sl_graph_json *doc, const char *full, const char *path, const char *ptr)
{
    char base[PATH_MAX], real[PATH_MAX];
    struct sl_error err = SL_ERROR_INIT;
    if (sl_fs_path_resolve(doc->base_dir, base, sizeof(base), &err) != SL_OK ||
        sl_fs_path_resolve(full, real, sizeof(real), &err) != SL_OK) {
        sl__jdiag_add(&doc->diag, err.code, ptr, "cannot resolve \"%s\": %s", path, err.text);
        return false;
    }
    sl_fs_overlap o = sl_fs_path_overlap(real, base);
    if (o == SL_FS_INSIDE || o == SL_FS_SAME)
        return true;
    sl__jdiag_add(&doc->diag, SL_EACCES, ptr,
                  "\"%s\" leads to %s, outside %s (a symbolic link); --allow-outside or "
                  "opts.allow_outside allows it",
                  path, real, base);
    return false;
}

char *
sl__jpath_join(sl_graph_json *doc, const char *path, const char *ptr)
{
    if (path[0] == '\0') {
        sl__jdiag_add(&doc->diag, SL_EINVAL, ptr, "expected a path, found \"\"");
        return NULL;
    }
    if (sl_url_is_remote(path) && doc->opts.local_only) {
        sl__jdiag_add(&doc->diag, SL_EACCES, ptr,
                      "\"%s\" is remote, and this load reads only local paths (local_only)", path);
        return NULL;
    }
    if (sl_url_is_remote(path)) { /* read from where it is: no local rule applies */
        char *url = sl_strdup(&doc->alloc, path);
        if (url == NULL)
            sl__jdiag_add(&doc->diag, SL_ENOMEM, ptr, "no memory for URL \"%s\"", path);
        return url;
    }
    if (strncmp(path, "file://", 7) == 0)
        path += 7; /* file:///data/a.zarr: the absolute path */
    bool absolute = path[0] == '/';
    if (!doc->opts.allow_outside && (absolute || path_has_dotdot(path))) {
        sl__jdiag_add(&doc->diag, SL_EACCES, ptr,
                      "path \"%s\" leaves the graph's directory (%s); allow it with "
                      "opts.allow_outside (`sluice run/validate/explain` take --allow-outside)",
                      path, absolute ? "absolute" : "a \"..\" component");
        return NULL;
    }
    size_t n = absolute ? strlen(path) + 1 : strlen(doc->base_dir) + strlen(path) + 2;
    char *full = sl_alloc(&doc->alloc, n, 0);
    if (full == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, ptr, "no memory for a path of %zu bytes", n);
        return NULL;
    }
    if (absolute)
        memcpy(full, path, n);
    else
        snprintf(full, n, "%s/%s", doc->base_dir, path);
    path_normalize(full);
    if (!doc->opts.allow_outside && !path_check_inside(doc, full, path, ptr)) {
        sl_free(&doc->alloc, full, n);
        return NULL;
    }
    return full;
}
