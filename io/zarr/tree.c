/* SPDX-License-Identifier: MIT */
/*
 * A group's whole hierarchy at once (sl_group_tree_read): its attributes
 * and every node below it, parents before children, arrays open and
 * groups' attributes read, so that a program copying or describing a
 * hierarchy walks a list instead of a callback.
 */
#include <stdlib.h>
#include <string.h>

#include <sluice/array.h>
#include <sluice/buf.h>

#include "zarr_internal.h"

/* Take one member into the tree (sl_group_member_fn). */
static sl_status
tree_take(void *arg, const struct sl_group_member *gm)
{
    struct sl_group_tree *t = arg;
    struct sl_error *err = t->internal_;
    if (gm->kind != SL_ZARR_ARRAY && gm->kind != SL_ZARR_GROUP) {
        char name[SL_STORE_KEY_MAX + 4096];
        sl_store_name(gm->store, gm->path, name, sizeof(name));
        return sl_error_set(err, SL_EPARSE, NULL,
                            "%s: member \"%s\" of the group cannot be read as a Zarr array or "
                            "group",
                            name, gm->path);
    }
    if (t->n_nodes == t->cap_nodes_) {
        uint32_t cap = t->cap_nodes_ != 0 ? 2 * t->cap_nodes_ : 16;
        struct sl_group_node *n = realloc(t->nodes, cap * sizeof(*n));
        if (n == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %u group members", cap);
        t->nodes = n;
        t->cap_nodes_ = cap;
    }
    struct sl_group_node *n = &t->nodes[t->n_nodes];
    memset(n, 0, sizeof(*n));
    n->kind = gm->kind;
    n->zarr_format = gm->zarr_format;
    n->path = strdup(gm->path);
    if (n->path == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for a member's path");
    t->n_nodes++;
    t->consolidated = t->consolidated || gm->consolidated;
    if (gm->kind == SL_ZARR_ARRAY) {
        n->array = sl_group_member_open(gm, NULL, err);
        return n->array != NULL ? SL_OK : err->code;
    }
    struct sl_buf b = SL_BUF_INIT;
    sl_status st = sl_group_member_attributes(gm, &b, err);
    n->attributes = st == SL_OK ? strdup((const char *)b.data) : NULL;
    sl_buf_fini(&b);
    if (st == SL_OK && n->attributes == NULL)
        st = sl_error_set(err, SL_ENOMEM, NULL, "no memory for a member's attributes");
    return st;
}

/* Parents before children: a group's path is a prefix of its members'. */
static int
tree_cmp(const void *a, const void *b)
{
    return strcmp(((const struct sl_group_node *)a)->path, ((const struct sl_group_node *)b)->path);
}

sl_status
sl_group_tree_read(sl_store *store, const char *path, struct sl_group_tree *out,
                   struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "no tree to read into");
    memset(out, 0, sizeof(*out));
    struct sl_error local = SL_ERROR_INIT;
    struct sl_error *e = err != NULL ? err : &local;
    struct sl_buf attrs = SL_BUF_INIT;
    sl_zarr_kind kind = SL_ZARR_NONE;
    sl_status st = sl_zarr_read_node(store, path, &kind, &out->zarr_format, &attrs, e);
    if (st == SL_OK && kind != SL_ZARR_GROUP) {
        char name[SL_STORE_KEY_MAX + 4096];
        sl_store_name(store, path, name, sizeof(name));
        st = kind == SL_ZARR_NONE
                 ? sl_error_set(e, SL_ENOTFOUND, NULL, "%s holds no Zarr group", name)
                 : sl_error_set(e, SL_EINVAL, NULL, "%s holds a Zarr v%d array, not a group", name,
                                out->zarr_format);
    }
    if (st == SL_OK) {
        out->attributes = strdup(attrs.data != NULL ? (const char *)attrs.data : "{}");
        st = out->attributes != NULL
                 ? SL_OK
                 : sl_error_set(e, SL_ENOMEM, NULL, "no memory for the group's attributes");
    }
    sl_buf_fini(&attrs);
    out->internal_ = e;
    if (st == SL_OK)
        st = sl_group_members(store, path, tree_take, out, e);
    out->internal_ = NULL;
    if (st == SL_OK && out->n_nodes > 1)
        qsort(out->nodes, out->n_nodes, sizeof(*out->nodes), tree_cmp);
    if (st != SL_OK)
        sl_group_tree_fini(out);
    return st;
}

void
sl_group_tree_fini(struct sl_group_tree *t)
{
    if (t == NULL)
        return;
    for (uint32_t k = 0; k < t->n_nodes; k++) {
        free(t->nodes[k].path);
        free(t->nodes[k].attributes);
        sl_array_unref(t->nodes[k].array);
    }
    free(t->nodes);
    free(t->attributes);
    memset(t, 0, sizeof(*t));
}
