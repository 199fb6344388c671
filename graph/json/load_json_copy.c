/* SPDX-License-Identifier: MIT */
/*
 * Copy nodes of graph files: a whole Zarr group ("source", a path or URL;
 * a whole store too) copied into a new group ("group", under the rules of
 * a pyramid's group), every array and group below it with its attributes,
 * each array through a get and a put laid out as "create" says and, for
 * one member, as "members" says.  The source's hierarchy is read in the
 * document pass (sl_group_tree_read), so that every layout is checked
 * against the arrays it applies to before anything is built; building
 * creates the groups and arrays (in memory in the first pass, at "group"
 * in the second) and adds a get -> put per array.  A copy reads nothing
 * from other nodes and produces nothing they read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sluice/graph_node.h>

#include "core_internal.h"
#include "load_json_internal.h"

static const char *const copy_create_keys[] = {"format", "chunks", "shards", "codec", NULL};
static const char *const member_keys[] = {"chunks", "shards", "codec", NULL};

static void copy_open(sl_graph_json *doc, struct sl__jnode *n);

/* "members": member array path -> {"chunks", "shards", "codec"}. */
static void
copy_parse_members(sl_graph_json *doc, struct sl__jcopy *c, const json_t *v, const char *ptr)
{
    if (!json_is_object(v)) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, ptr,
                      "expected an object of member array path -> {\"chunks\", \"shards\", "
                      "\"codec\"}, found %s",
                      sl__json_type_name(v));
        return;
    }
    size_t n = json_object_size(v);
    c->members = n > 0 ? sl_alloc_zeroed(&doc->alloc, n, sizeof(*c->members), 0) : NULL;
    if (n > 0 && c->members == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, ptr, "no memory for %zu members", n);
        return;
    }
    const char *key;
    json_t *m;
    json_object_foreach((json_t *)v, key, m)
    {
        struct sl__jcopy_member *cm = &c->members[c->n_members++];
        cm->path = key;
        sl__jptr_key(cm->ptr, ptr, key);
        (void)sl__jcreate_parse(doc, m, cm->ptr, member_keys, &cm->create);
    }
}

void
sl__jcopy_parse(sl_graph_json *doc, struct sl__jnode *n)
{
    struct sl__jcopy *c = &n->copy;
    struct sl__jdiag *d = &doc->diag;
    size_t before = d->count;
    const json_t *v;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "source");
    if ((v = json_object_get(n->obj, "source")) == NULL)
        sl__jdiag_add(d, SL_EINVAL, at, "missing \"source\": the path or URL of the group to copy");
    else if (sl__jget_string(d, v, at, &c->source))
        c->source_full = sl__jpath_join(doc, c->source, at);
    sl__jptr_key(at, n->ptr, "group");
    if ((v = json_object_get(n->obj, "group")) == NULL)
        sl__jdiag_add(d, SL_EINVAL, at, "missing \"group\": the path of the copy to create");
    else if (sl__jget_string(d, v, at, &c->group))
        c->full_path = sl__jpath_join(doc, c->group, at);
    sl__jptr_key(at, n->ptr, "overwrite");
    if ((v = json_object_get(n->obj, "overwrite")) != NULL)
        (void)sl__jget_overwrite(d, v, at, &c->overwrite, &c->in_place);
    sl__jptr_key(at, n->ptr, "create");
    if ((v = json_object_get(n->obj, "create")) != NULL)
        (void)sl__jcreate_parse(doc, v, at, copy_create_keys, &c->create);
    sl__jptr_key(at, n->ptr, "members");
    if ((v = json_object_get(n->obj, "members")) != NULL)
        copy_parse_members(doc, c, v, at);
    if (d->count != before)
        return;
    sl__jptr_key(at, n->ptr, "group");
    struct sl__jdest dest = sl__jcopy_dest(c, at);
    if (!sl__jpath_check_free(doc, &dest, &c->exists))
        return;
    copy_open(doc, n);
}

struct sl__jdest
sl__jcopy_dest(const struct sl__jcopy *c, const char *ptr)
{
    return (struct sl__jdest){.full_path = c->full_path,
                              .path = c->group,
                              .ptr = ptr,
                              .overwrite = c->overwrite,
                              .in_place = c->in_place};
}

/* The settings for member array `path`: its entry of "members", else NULL. */
static const struct sl__jcopy_member *
copy_member(const struct sl__jcopy *c, const char *path)
{
    for (size_t k = 0; k < c->n_members; k++)
        if (strcmp(c->members[k].path, path) == 0)
            return &c->members[k];
    return NULL;
}

/* Report a list of "create" (or of the member's entry) whose length is not
 * member array `path`'s rank. */
static bool
copy_check_rank(sl_graph_json *doc, const char *ptr, const char *field, uint32_t n,
                const char *path, uint32_t rank, bool in_create)
{
    if (n == 0 || n == rank)
        return true;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, ptr, field);
    sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                  "%" PRIu32 " entr%s, but member array \"%s\" has %" PRIu32 " dimension%s%s", n,
                  n == 1 ? "y" : "ies", path, rank, rank == 1 ? "" : "s",
                  in_create ? " (give it its own in \"members\")" : "");
    return false;
}

/* The layout of member array `k` of the tree into c->specs[k]: the
 * source's, changed by "create", then by its entry of "members". */
static bool
copy_member_spec(sl_graph_json *doc, const struct sl__jnode *n, uint32_t k)
{
    const struct sl__jcopy *c = &n->copy;
    const struct sl_group_node *m = &c->tree.nodes[k];
    const struct sl__jcopy_member *own = copy_member(c, m->path);
    const struct sl__jcreate *cr = &c->create;
    const struct sl__jcreate *mc = own != NULL ? &own->create : NULL;
    uint32_t rank = sl_array_rank(m->array);
    char cat[SL__JPTR_MAX];
    sl__jptr_key(cat, n->ptr, "create");
    bool own_chunks = mc != NULL && mc->n_chunks > 0, own_shards = mc != NULL && mc->has_shards;
    bool ok = own_chunks || copy_check_rank(doc, cat, "chunks", cr->n_chunks, m->path, rank, true);
    ok = (own_shards || copy_check_rank(doc, cat, "shards", cr->n_shards, m->path, rank, true)) &&
         ok;
    if (mc != NULL) {
        ok = copy_check_rank(doc, own->ptr, "chunks", mc->n_chunks, m->path, rank, false) && ok;
        ok = copy_check_rank(doc, own->ptr, "shards", mc->n_shards, m->path, rank, false) && ok;
    }
    if (!ok)
        return false;
    struct sl_array_spec *sp = &c->specs[k];
    *sp = SL_ARRAY_SPEC_DEFAULT;
    sp->zarr_format = c->format;
    sp->rank = rank;
    sp->dtype = sl_array_dtype(m->array);
    sp->fill_value = sl_array_fill_value(m->array);
    sp->attributes_json = sl_array_attributes(m->array);
    sp->overwrite = c->overwrite;
    if (mc != NULL && mc->has_codec)
        sp->codec = mc->codec;
    else if (cr->has_codec)
        sp->codec = cr->codec;
    const uint64_t *chunks = own_chunks ? mc->chunks : cr->n_chunks > 0 ? cr->chunks : NULL;
    bool has_shards = own_shards || cr->has_shards;
    const uint64_t *shards = own_shards         ? (mc->n_shards > 0 ? mc->shards : NULL)
                             : cr->n_shards > 0 ? cr->shards
                                                : NULL;
    /* The source's shards stay when neither chunks nor shards are given. */
    if (!has_shards && chunks == NULL && sp->zarr_format == 3)
        shards = sl_array_shard_shape(m->array);
    for (uint32_t d = 0; d < rank; d++) {
        sp->shape[d] = sl_array_shape(m->array)[d];
        sp->chunk_shape[d] = chunks != NULL ? chunks[d] : sl_array_chunk_shape(m->array)[d];
        sp->shard_shape[d] = shards != NULL ? shards[d] : 0;
        sp->dimension_names[d] = sl_array_dimension_name(m->array, d);
    }
    if (shards != NULL && sp->zarr_format == 2) {
        char at[SL__JPTR_MAX];
        sl__jptr_key(at, own_shards ? own->ptr : cat, "shards");
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "member array \"%s\": Zarr v2 has no sharding; set \"format\": 3 in "
                      "\"create\"",
                      m->path);
        return false;
    }
    return true;
}

/* Read the source's hierarchy and every member array's layout; reports
 * what does not fit. */
static void
copy_open(sl_graph_json *doc, struct sl__jnode *n)
{
    struct sl__jcopy *c = &n->copy;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "source");
    struct sl_error err = SL_ERROR_INIT;
    c->in = sl__jstore_open_url(doc, c->source_full, NULL, NULL, false, false, &err);
    if (c->in == NULL || sl_group_tree_read(c->in, "", &c->tree, &err) != SL_OK) {
        sl__jdiag_add(&doc->diag, err.code, at,
                      "cannot read the group \"%s\" to copy (a copy node copies a group, with "
                      "everything below it; copy an array with a get and a put): %s",
                      c->source, err.text);
        n->bad = true;
        return;
    }
    c->have_tree = true;
    c->format = c->create.format != 0 ? c->create.format : c->tree.zarr_format;
    c->specs = sl_alloc_zeroed(&doc->alloc, c->tree.n_nodes + 1, sizeof(*c->specs), 0);
    if (c->specs == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, n->ptr, "no memory for %" PRIu32 " members",
                      c->tree.n_nodes);
        return;
    }
    for (uint32_t k = 0; k < c->tree.n_nodes; k++)
        if (c->tree.nodes[k].kind == SL_ZARR_ARRAY)
            (void)copy_member_spec(doc, n, k);
    for (size_t k = 0; k < c->n_members; k++) {
        bool found = false;
        for (uint32_t t = 0; t < c->tree.n_nodes && !found; t++)
            found = c->tree.nodes[t].kind == SL_ZARR_ARRAY &&
                    strcmp(c->tree.nodes[t].path, c->members[k].path) == 0;
        if (!found)
            sl__jdiag_add(&doc->diag, SL_EINVAL, c->members[k].ptr,
                          "the group \"%s\" has no member array \"%s\"", c->source,
                          c->members[k].path);
    }
}

/* Node names of member `k` at `path`: "<id>:<path>" and "<id>:<path>.get"
 * when they fit the graph's name limit (beside a ".rechunk" suffix), else
 * "<id>#<k>" and "<id>#<k>.get". */
static void
copy_node_names(const char *id, uint32_t k, const char *path, char put[64], char get[64])
{
    if (strlen(id) + 1 + strlen(path) + sizeof(".get.rechunk") <= 64) {
        snprintf(put, 64, "%s:%s", id, path);
        snprintf(get, 64, "%s:%s.get", id, path);
    } else {
        snprintf(put, 64, "%s#%" PRIu32, id, k);
        snprintf(get, 64, "%s#%" PRIu32 ".get", id, k);
    }
}

/* The groups of the copy (unless `open`: made already), then a get -> put
 * per array.  @return SL_OK, or the error in `err` (at `what`: the member). */
static sl_status
copy_add(sl_graph_json *doc, struct sl__jnode *n, sl_store *out, bool open, struct sl_error *err,
         const char **what)
{
    struct sl__jcopy *c = &n->copy;
    sl_status st = open ? SL_OK : sl_group_create(out, "", c->format, c->tree.attributes, err);
    for (uint32_t k = 0; st == SL_OK && k < c->tree.n_nodes; k++) {
        const struct sl_group_node *m = &c->tree.nodes[k];
        *what = m->path;
        if (m->kind == SL_ZARR_GROUP) {
            st = open ? SL_OK : sl_group_create(out, m->path, c->format, m->attributes, err);
            continue;
        }
        struct sl_array_opts ao = SL_ARRAY_OPTS_DEFAULT;
        ao.alloc = &doc->alloc;
        sl_array *dst = open ? sl_array_open(out, m->path, &ao, err)
                             : sl_array_create(out, m->path, &c->specs[k], &ao, err);
        char put[64], get[64];
        copy_node_names(n->id, k, m->path, put, get);
        uint32_t gid;
        st = dst != NULL ? sl_graph_add_get(doc->graph, get, m->array, &gid, err) : err->code;
        if (st == SL_OK)
            st = sl_graph_add_put(doc->graph, put, gid, dst, &n->gid, err);
        sl_array_unref(dst);
    }
    *what = NULL;
    /* Every node's metadata is written: gather it, as the source had it. */
    if (st == SL_OK && !open && c->tree.consolidated)
        st = sl_group_consolidate(out, "", err);
    return st;
}

bool
sl__jcopy_build(sl_graph_json *doc, struct sl__jnode *n, bool on_disk)
{
    struct sl__jcopy *c = &n->copy;
    if (!c->have_tree)
        return false;
    struct sl_error err = SL_ERROR_INIT;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "group");
    struct sl__jdest dest = sl__jcopy_dest(c, at);
    /* Another process of the run, or the earlier run resumed, made them. */
    bool open = sl__jnode_opens(doc, &dest, on_disk);
    sl_store *out = sl__jnode_store(doc, &dest, on_disk, &err);
    if (out == NULL && err.code == SL_OK)
        return false; /* refused, and reported */
    const char *what = NULL;
    sl_status st = out != NULL ? copy_add(doc, n, out, open, &err, &what) : err.code;
    sl_store_unref(out);
    if (st == SL_OK)
        return true;
    if (what != NULL) {
        struct sl_error e = err;
        sl_error_set(&err, e.code, NULL, "member \"%s\": %s", what, e.text);
    }
    sl__jdiag_add_error(&doc->diag, out == NULL ? at : n->ptr, &err);
    return false;
}

void
sl__jcopy_fini(sl_graph_json *doc, struct sl__jnode *n)
{
    struct sl__jcopy *c = &n->copy;
    if (c->have_tree) {
        sl_free(&doc->alloc, c->specs, (c->tree.n_nodes + 1) * sizeof(*c->specs));
        sl_group_tree_fini(&c->tree);
    }
    sl_store_unref(c->in);
    sl_free(&doc->alloc, c->members, c->n_members * sizeof(*c->members));
    if (c->full_path != NULL)
        sl_free(&doc->alloc, c->full_path, strlen(c->full_path) + 1);
    if (c->source_full != NULL)
        sl_free(&doc->alloc, c->source_full, strlen(c->source_full) + 1);
    memset(c, 0, sizeof(*c));
}
