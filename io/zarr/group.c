/* SPDX-License-Identifier: MIT */
/*
 * A group's members: read from its consolidated metadata when it has some
 * (a v3 zarr.json's inline "consolidated_metadata", a v2 ".zmetadata" as
 * zarr.consolidate_metadata writes it), else found by listing the store and
 * probing each node; and arrays opened from a consolidated entry.
 *
 * DESIGN: consolidated metadata is what makes a remote group cheap (one
 * request, where HTTP cannot list at all), and it is hostile input like any
 * other document: every entry's shape is checked before a member is handed
 * over, and a failure names the document's key and the JSON pointer of the
 * entry.  An array's own metadata in an entry is checked only when it is
 * opened, by the same parsers that read zarr.json and .zarray, and its
 * errors get the entry's pointer in front of theirs.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarr_internal.h"

/* What internal_ of a consolidated member points at. */
struct group_entry {
    const json_t *doc;   /* zarr.json (v3) or .zarray (v2) of the member */
    const json_t *attrs; /* v2 .zattrs, or NULL */
    const char *source;  /* the consolidated document's key */
    char pointer[128];   /* JSON pointer of `doc` in that document */
};

/* A walk over one group. */
struct group_walk {
    sl_store *store;
    const char *path; /* the group's */
    const char *source;
    sl_group_member_fn *fn;
    void *arg;
    size_t n_prefix; /* length of the group's key prefix ("g/"), 0 at the root */
};

/* Append `key` to JSON pointer `at` escaped (RFC 6901: "~" as "~0", "/" as "~1"). */
static void
pointer_append(char *at, size_t size, const char *key)
{
    size_t n = strlen(at);
    if (n + 1 < size)
        at[n++] = '/';
    for (const char *p = key; *p != '\0' && n + 2 < size; p++) {
        if (*p == '~' || *p == '/') {
            at[n++] = '~';
            at[n++] = *p == '~' ? '0' : '1';
        } else {
            at[n++] = *p;
        }
    }
    at[n < size ? n : size - 1] = '\0';
}

/* The error at pointer `at` of the consolidated document. */
static sl_status
walk_fail(const struct group_walk *w, sl_status code, const char *at, const char *what,
          struct sl_error *err)
{
    sl_error_set_path(err, code, at, "consolidated metadata: %s", what);
    sl_error_set_source(err, w->source);
    return code;
}

/* Hand member `rel` (relative to the group) over with its entry. */
static sl_status
walk_emit(const struct group_walk *w, const char *rel, sl_zarr_kind kind, int format,
          const struct group_entry *e, const char *at, struct sl_error *err)
{
    char path[SL_STORE_KEY_MAX + 1];
    struct sl_error local = SL_ERROR_INIT;
    int n = snprintf(path, sizeof(path), "%s%s%s", w->path, w->path[0] != '\0' ? "/" : "", rel);
    if (rel[0] == '\0' || n < 0 || (size_t)n >= sizeof(path) ||
        sl__node_path_check(path, &local) != SL_OK)
        return walk_fail(w, SL_EPARSE, at, "a member's name is not a valid path", err);
    struct sl_group_member m = {.store = w->store,
                                .path = path,
                                .kind = kind,
                                .zarr_format = format,
                                .consolidated = true,
                                .internal_ = e};
    return w->fn(w->arg, &m);
}

/* One entry of a v3 "consolidated_metadata/metadata" object. */
static sl_status
v3_entry(const struct group_walk *w, const char *rel, const json_t *doc, struct sl_error *err)
{
    struct group_entry e = {.doc = doc, .source = w->source};
    snprintf(e.pointer, sizeof(e.pointer), "/consolidated_metadata/metadata");
    pointer_append(e.pointer, sizeof(e.pointer), rel);
    if (!json_is_object(doc))
        return walk_fail(w, SL_EPARSE, e.pointer, "expected a member's zarr.json object", err);
    const json_t *f = json_object_get(doc, "zarr_format");
    if (!json_is_integer(f) || json_integer_value(f) != 3) {
        char at[160];
        snprintf(at, sizeof(at), "%s/zarr_format", e.pointer);
        return walk_fail(w, SL_EPARSE, at, "expected 3", err);
    }
    const char *t = json_string_value(json_object_get(doc, "node_type"));
    bool array = t != NULL && strcmp(t, "array") == 0;
    if (t == NULL || (!array && strcmp(t, "group") != 0)) {
        char at[160];
        snprintf(at, sizeof(at), "%s/node_type", e.pointer);
        return walk_fail(w, SL_EPARSE, at, "expected \"array\" or \"group\"", err);
    }
    return walk_emit(w, rel, array ? SL_ZARR_ARRAY : SL_ZARR_GROUP, 3, &e, e.pointer, err);
}

/* The members in a v3 group's "consolidated_metadata" (`cm`, not null). */
static sl_status
walk_v3(const struct group_walk *w, const json_t *cm, struct sl_error *err)
{
    if (!json_is_object(cm))
        return walk_fail(w, SL_EPARSE, "/consolidated_metadata", "expected an object or null", err);
    const char *kind = json_string_value(json_object_get(cm, "kind"));
    if (kind == NULL || strcmp(kind, "inline") != 0)
        return walk_fail(w, kind == NULL ? SL_EPARSE : SL_EUNSUPPORTED,
                         "/consolidated_metadata/kind", "expected \"inline\"", err);
    const json_t *md = json_object_get(cm, "metadata");
    if (!json_is_object(md))
        return walk_fail(w, SL_EPARSE, "/consolidated_metadata/metadata", "expected an object",
                         err);
    const char *rel;
    const json_t *doc;
    json_object_foreach((json_t *)md, rel, doc) { SL_TRY(v3_entry(w, rel, doc, err)); }
    return SL_OK;
}

/* True when `key` ends in "/`name`" or is `name`; the node's path length in *n. */
static bool
v2_key_is(const char *key, const char *name, size_t *n)
{
    size_t len = strlen(key), k = strlen(name);
    if (len < k || strcmp(key + len - k, name) != 0 || (len > k && key[len - k - 1] != '/'))
        return false;
    *n = len > k ? len - k - 1 : 0;
    return true;
}

/* One key of a v2 .zmetadata "metadata" object (`md`). */
static sl_status
v2_entry(const struct group_walk *w, const json_t *md, const char *key, const json_t *doc,
         struct sl_error *err)
{
    struct group_entry e = {.doc = doc, .source = w->source};
    snprintf(e.pointer, sizeof(e.pointer), "/metadata");
    pointer_append(e.pointer, sizeof(e.pointer), key);
    size_t n;
    bool array = v2_key_is(key, ".zarray", &n);
    bool group = !array && v2_key_is(key, ".zgroup", &n);
    bool attrs = !array && !group && v2_key_is(key, ".zattrs", &n);
    if (!array && !group && !attrs)
        return SL_OK; /* not metadata sluice reads */
    if (!json_is_object(doc))
        return walk_fail(w, SL_EPARSE, e.pointer, "expected an object", err);
    if (attrs || n == 0)
        return SL_OK; /* attributes go with their node; the group itself is not a member */
    char rel[SL_STORE_KEY_MAX + 16];
    if (n >= sizeof(rel))
        return walk_fail(w, SL_EPARSE, e.pointer, "a member's name is too long", err);
    memcpy(rel, key, n);
    rel[n] = '\0';
    char attrs_key[SL_STORE_KEY_MAX + 32];
    snprintf(attrs_key, sizeof(attrs_key), "%s/.zattrs", rel);
    e.attrs = json_object_get(md, attrs_key);
    if (e.attrs != NULL && !json_is_object(e.attrs)) {
        char at[128] = "/metadata";
        pointer_append(at, sizeof(at), attrs_key);
        return walk_fail(w, SL_EPARSE, at, "expected an object", err);
    }
    return walk_emit(w, rel, array ? SL_ZARR_ARRAY : SL_ZARR_GROUP, 2, &e, e.pointer, err);
}

/* The members in a v2 .zmetadata document `root`. */
static sl_status
walk_v2(const struct group_walk *w, const json_t *root, struct sl_error *err)
{
    if (!json_is_object(root))
        return walk_fail(w, SL_EPARSE, "", "expected a JSON object", err);
    const json_t *f = json_object_get(root, "zarr_consolidated_format");
    if (!json_is_integer(f) || json_integer_value(f) != 1)
        return walk_fail(w, json_is_integer(f) ? SL_EUNSUPPORTED : SL_EPARSE,
                         "/zarr_consolidated_format", "expected 1", err);
    const json_t *md = json_object_get(root, "metadata");
    if (!json_is_object(md))
        return walk_fail(w, SL_EPARSE, "/metadata", "expected an object", err);
    const char *key;
    const json_t *doc;
    json_object_foreach((json_t *)md, key, doc) { SL_TRY(v2_entry(w, md, key, doc, err)); }
    return SL_OK;
}

/* ---- without consolidated metadata: list the store ----------------------------- */

static sl_status
list_one(void *arg, const char *key, uint64_t bytes)
{
    (void)bytes;
    struct group_walk *w = arg;
    static const char *const names[] = {"/zarr.json", "/.zarray", "/.zgroup"};
    size_t n = strlen(key);
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(names[i]);
        if (n <= k || n - k <= w->n_prefix || strcmp(key + n - k, names[i]) != 0)
            continue;
        char path[SL_STORE_KEY_MAX + 1];
        snprintf(path, sizeof(path), "%.*s", (int)(n - k), key);
        struct sl_group_member m = {.store = w->store, .path = path, .kind = SL_ZARR_NONE};
        struct sl_error ignored = SL_ERROR_INIT;
        if (sl_zarr_probe(w->store, path, &m.kind, &m.zarr_format, &ignored) != SL_OK)
            m.kind = SL_ZARR_NONE;
        if (m.zarr_format == 0)
            m.zarr_format = i == 0 ? 3 : 2;
        return w->fn(w->arg, &m);
    }
    return SL_OK;
}

static sl_status
walk_listing(struct group_walk *w, struct sl_error *err)
{
    char prefix[SL_STORE_KEY_MAX + 2];
    snprintf(prefix, sizeof(prefix), "%s%s", w->path, w->path[0] != '\0' ? "/" : "");
    w->n_prefix = strlen(prefix);
    return sl_store_list(w->store, prefix, list_one, w, err);
}

/* ---- the walk -------------------------------------------------------------------- */

/* Parse `doc` (read from `key`) and walk its consolidated metadata, if any;
 * `*done` false when it has none. */
static sl_status
walk_document(struct group_walk *w, const struct sl_buf *doc, const char *key, bool v3, bool *done,
              struct sl_error *err)
{
    json_t *root;
    SL_TRY(sl__json_parse((const char *)doc->data, doc->size, key, &root, err));
    sl_status st = SL_OK;
    w->source = key;
    *done = true;
    if (!v3) {
        st = walk_v2(w, root, err);
    } else if (!json_is_object(root)) {
        st = walk_fail(w, SL_EPARSE, "", "zarr.json must be a JSON object", err);
    } else {
        const char *t = json_string_value(json_object_get(root, "node_type"));
        const json_t *cm = json_object_get(root, "consolidated_metadata");
        if (t != NULL && strcmp(t, "array") == 0)
            st = sl_error_set(err, SL_EINVAL, NULL, "%s is an array, not a group", key);
        else if (cm == NULL || json_is_null(cm))
            *done = false;
        else
            st = walk_v3(w, cm, err);
    }
    json_decref(root);
    return st;
}

sl_status
sl_group_members(sl_store *store, const char *path, sl_group_member_fn *fn, void *arg,
                 struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (store == NULL || fn == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "store or callback is missing");
    SL_TRY(sl__node_path_check(path, err));
    struct group_walk w = {.store = store, .path = path, .fn = fn, .arg = arg};
    static const char *const names[] = {"zarr.json", ".zmetadata"};
    struct sl_buf doc = SL_BUF_INIT;
    sl_status st = SL_OK;
    bool done = false;
    for (int i = 0; i < 2 && st == SL_OK && !done; i++) {
        char key[SL_STORE_KEY_MAX + 16];
        bool found = false;
        st = sl__node_key(path, names[i], key, sizeof(key), err);
        if (st == SL_OK)
            st = sl__meta_get_optional(store, key, &doc, &found, err);
        if (st == SL_OK && found)
            st = walk_document(&w, &doc, key, i == 0, &done, err);
    }
    sl_buf_fini(&doc);
    if (st == SL_OK && !done)
        st = walk_listing(&w, err);
    return st;
}

/* ---- opening a member from its entry --------------------------------------------- */

/* Parse entry `e` into `meta`; errors at the entry's pointer in its document. */
static sl_status
entry_parse(const struct group_entry *e, int format, struct sl__meta *meta, struct sl_error *err)
{
    struct sl_error local = SL_ERROR_INIT;
    char *text = json_dumps(e->doc, JSON_COMPACT);
    char *attrs = e->attrs != NULL ? json_dumps(e->attrs, JSON_COMPACT) : NULL;
    sl_status st;
    if (text == NULL || (e->attrs != NULL && attrs == NULL))
        st = sl_error_set(&local, SL_ENOMEM, NULL, "out of memory reading %s", e->source);
    else if (format == 3)
        st = sl__meta_parse_v3(text, strlen(text), e->source, meta, &local);
    else
        st = sl__meta_parse_v2(text, strlen(text), attrs, attrs != NULL ? strlen(attrs) : 0,
                               e->source, meta, &local);
    free(text);
    free(attrs);
    if (st != SL_OK && st != SL_ENOMEM) {
        char at[sizeof(local.path)];
        snprintf(at, sizeof(at), "%s%s", e->pointer, local.path);
        memcpy(local.path, at, sizeof(at));
        snprintf(local.source, sizeof(local.source), "%s", e->source);
    }
    sl__error_forward(err, &local);
    return st;
}

sl_array *
sl_group_member_open(const struct sl_group_member *m, const struct sl_array_opts *opts,
                     struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (m == NULL || m->store == NULL || m->path == NULL) {
        sl_error_set(err, SL_EINVAL, NULL, "member is missing");
        return NULL;
    }
    const struct group_entry *e = m->internal_;
    if (e == NULL || m->kind != SL_ZARR_ARRAY)
        return sl_array_open(m->store, m->path, opts, err);
    struct sl__meta meta;
    sl__meta_init(&meta, opts != NULL ? opts->alloc : NULL);
    sl_array *a = NULL;
    if (entry_parse(e, m->zarr_format, &meta, err) == SL_OK)
        a = sl__array_from_meta(m->store, m->path, &meta, opts, err);
    sl__meta_fini(&meta);
    return a;
}

/* ---- a group's own attributes --------------------------------------------------------- */

/* see zarr_internal.h */
sl_status
sl__group_attributes(sl_store *store, const char *path, struct sl_buf *out, char *source,
                     size_t source_size, struct sl_error *err)
{
    if (store == NULL || path == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "store, path or output buffer is missing");
    sl_zarr_kind kind = SL_ZARR_NONE;
    SL_TRY(sl__zarr_read_node(store, path, &kind, NULL, out, source, source_size, err));
    if (kind != SL_ZARR_GROUP)
        return sl_error_set(err, kind == SL_ZARR_NONE ? SL_ENOTFOUND : SL_EINVAL, NULL,
                            "\"%s\" is %s, not a group", path[0] != '\0' ? path : "/",
                            kind == SL_ZARR_NONE ? "no Zarr node" : "an array");
    return SL_OK;
}

sl_status
sl_group_attributes(sl_store *store, const char *path, struct sl_buf *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    char source[SL_STORE_KEY_MAX + 16];
    return sl__group_attributes(store, path, out, source, sizeof(source), err);
}

sl_status
sl_group_member_attributes(const struct sl_group_member *m, struct sl_buf *out,
                           struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (m == NULL || m->store == NULL || m->path == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "member or output buffer is missing");
    const struct group_entry *e = m->internal_;
    if (e == NULL && m->kind == SL_ZARR_ARRAY) {
        sl_array *a = sl_array_open(m->store, m->path, NULL, err);
        if (a == NULL)
            return err != NULL && err->code != SL_OK ? err->code : SL_ENOMEM;
        const char *text = sl_array_attributes(a);
        out->size = 0;
        sl_status st = sl_buf_append(out, text, strlen(text) + 1, err);
        if (st == SL_OK)
            out->size = strlen(text);
        sl_array_unref(a);
        return st;
    }
    if (e == NULL)
        return sl_group_attributes(m->store, m->path, out, err);
    /* From the consolidated entry: v3's "attributes" of the member's
     * zarr.json, v2's .zattrs beside it; checked as entry_parse does. */
    const json_t *a = m->zarr_format == 3 ? json_object_get(e->doc, "attributes") : e->attrs;
    if (a != NULL && !json_is_object(a)) {
        char at[sizeof(e->pointer) + 16];
        snprintf(at, sizeof(at), "%s%s", e->pointer, m->zarr_format == 3 ? "/attributes" : "");
        sl_error_set_path(err, SL_EPARSE, at, "consolidated metadata: expected an object");
        sl_error_set_source(err, e->source);
        return SL_EPARSE;
    }
    if (a != NULL)
        return sl__json_dump(a, JSON_COMPACT, out, err);
    out->size = 0;
    SL_TRY(sl_buf_append(out, "{}", 3, err));
    out->size = 2;
    return SL_OK;
}
