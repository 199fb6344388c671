/* SPDX-License-Identifier: MIT */
/*
 * Writing a group's consolidated metadata: every member's metadata document
 * gathered into one (a v3 zarr.json's inline "consolidated_metadata", a v2
 * ".zmetadata" as zarr.consolidate_metadata writes it), so that readers
 * open the hierarchy with one request.  The members are found by listing
 * the store, never from older consolidated metadata.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "zarr_internal.h"

/* The metadata keys found under a group. */
struct cons_list {
    size_t n_prefix; /* length of the group's key prefix ("g/"), 0 at the root */
    int format;      /* the group's */
    json_t *keys;    /* the keys to gather, in listing order */
};

static sl_status
cons_list_one(void *arg, const char *key, uint64_t bytes)
{
    (void)bytes;
    struct cons_list *l = arg;
    static const char *const v3[] = {"/zarr.json", NULL};
    static const char *const v2[] = {"/.zarray", "/.zgroup", "/.zattrs", NULL};
    const char *rel = key + l->n_prefix;
    size_t n = strlen(rel);
    for (const char *const *name = l->format == 3 ? v3 : v2; *name != NULL; name++) {
        size_t k = strlen(*name);
        bool own = l->format == 2 && strcmp(rel, *name + 1) == 0; /* the group's .zgroup */
        if (own || (n > k && strcmp(rel + n - k, *name) == 0))
            return json_array_append_new(l->keys, json_string(key)) == 0 ? SL_OK : SL_ENOMEM;
    }
    return SL_OK;
}

/* Read document `key` into `md` under `name`. */
static sl_status
cons_add(sl_store *store, const char *key, const char *name, json_t *md, struct sl_error *err)
{
    struct sl_buf doc = SL_BUF_INIT;
    bool found = false;
    json_t *v = NULL;
    sl_status st = sl__meta_get_optional(store, key, &doc, &found, err);
    if (st == SL_OK && found)
        st = sl__json_parse((const char *)doc.data, doc.size, key, &v, err);
    sl_buf_fini(&doc);
    if (st == SL_OK && v != NULL && json_object_set_new(md, name, v) != 0)
        st = sl_error_set(err, SL_ENOMEM, NULL, "out of memory consolidating %s", key);
    return st;
}

/* Gather every listed document into `md`, named as each format wants. */
static sl_status
cons_gather(sl_store *store, const struct cons_list *l, json_t *md, struct sl_error *err)
{
    size_t i;
    json_t *k;
    json_array_foreach(l->keys, i, k)
    {
        const char *key = json_string_value(k);
        char name[SL_STORE_KEY_MAX + 1];
        snprintf(name, sizeof(name), "%s", key + l->n_prefix);
        if (l->format == 3)
            name[strlen(name) - strlen("/zarr.json")] = '\0'; /* v3 names the node */
        SL_TRY(cons_add(store, key, name, md, err));
    }
    return SL_OK;
}

/* Write `md` as the group's consolidated metadata. */
static sl_status
cons_write(sl_store *store, const char *path, int format, json_t *md, struct sl_error *err)
{
    char key[SL_STORE_KEY_MAX + 16];
    json_t *root = NULL;
    sl_status st =
        sl__node_key(path, format == 3 ? "zarr.json" : ".zmetadata", key, sizeof(key), err);
    if (st == SL_OK && format == 3) {
        struct sl_buf doc = SL_BUF_INIT;
        bool found = false;
        st = sl__meta_get_optional(store, key, &doc, &found, err);
        if (st == SL_OK && !found)
            st = sl_error_set(err, SL_ENOTFOUND, NULL, "consolidate: %s vanished", key);
        if (st == SL_OK)
            st = sl__json_parse((const char *)doc.data, doc.size, key, &root, err);
        sl_buf_fini(&doc);
        json_t *cm =
            json_pack("{s:s, s:b, s:O}", "kind", "inline", "must_understand", 0, "metadata", md);
        if (st == SL_OK && (cm == NULL || json_object_set_new(root, "consolidated_metadata", cm)))
            st = sl_error_set(err, SL_ENOMEM, NULL, "out of memory consolidating %s", key);
    } else if (st == SL_OK) {
        root = json_pack("{s:O, s:i}", "metadata", md, "zarr_consolidated_format", 1);
        if (root == NULL)
            st = sl_error_set(err, SL_ENOMEM, NULL, "out of memory consolidating %s", key);
    }
    struct sl_buf out = SL_BUF_INIT;
    if (st == SL_OK)
        st = sl__json_dump(root, format == 3 ? JSON_INDENT(2) : JSON_INDENT(4) | JSON_SORT_KEYS,
                           &out, err);
    if (st == SL_OK)
        st = sl_store_set(store, key, out.data, out.size, err);
    sl_buf_fini(&out);
    json_decref(root);
    return st;
}

sl_status
sl_group_consolidate(sl_store *store, const char *path, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (store == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "store is missing");
    sl_zarr_kind kind = SL_ZARR_NONE;
    struct cons_list l = {.format = 0};
    SL_TRY(sl_zarr_probe(store, path, &kind, &l.format, err));
    if (kind != SL_ZARR_GROUP)
        return sl_error_set(err, kind == SL_ZARR_NONE ? SL_ENOTFOUND : SL_EINVAL, NULL,
                            "consolidate: \"%s\" holds %s, not a group", path,
                            kind == SL_ZARR_NONE ? "nothing" : "an array");
    char prefix[SL_STORE_KEY_MAX + 2];
    snprintf(prefix, sizeof(prefix), "%s%s", path, path[0] != '\0' ? "/" : "");
    l.n_prefix = strlen(prefix);
    l.keys = json_array();
    json_t *md = json_object();
    sl_status st = l.keys != NULL && md != NULL
                       ? sl_store_list(store, prefix, cons_list_one, &l, err)
                       : SL_ENOMEM;
    if (st == SL_OK)
        st = cons_gather(store, &l, md, err);
    if (st == SL_OK)
        st = cons_write(store, path, l.format, md, err);
    if (st == SL_ENOMEM && err != NULL && err->code == SL_OK)
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory consolidating \"%s\"", path);
    json_decref(l.keys);
    json_decref(md);
    return st;
}
