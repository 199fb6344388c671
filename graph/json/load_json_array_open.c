/* SPDX-License-Identifier: MIT */
/*
 * Opening and creating the arrays of a graph file: in the document pass,
 * opening the arrays that must exist and refusing to replace stored arrays
 * unless "overwrite" allows it; in the build passes, resolving the spec of
 * each new array (explicit fields, then what its writer's input and its
 * "like" array say) and creating it, in memory or on disk.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/graph_node.h>
#include <sluice/remote.h>

#include "core_internal.h"
#include "io_fill.h"
#include "load_json_internal.h"

/* ---- the document pass ------------------------------------------------------------ */

/* An array that must exist: open it (for writing too when `writable`). */
static void
array_open_existing(sl_graph_json *doc, struct sl__jarray *a, bool writable)
{
    sl_array_unref(a->array);
    sl_store_unref(a->store);
    a->array = NULL;
    a->store = NULL;
    struct sl_error err = SL_ERROR_INIT;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, a->ptr, "path");
    if (writable && sl_url_is_remote(a->full_path) && !sl_url_is_s3(a->full_path)) {
        sl__jdiag_add(&doc->diag, SL_EACCES, at,
                      "array \"%s\" at %s is written by a put, but http(s) arrays are read "
                      "here, not written (write to a path or an s3:// URL)",
                      a->name, a->path);
        a->bad = true;
        return;
    }
    a->store = sl__jstore_open_url(doc, a->full_path, a->endpoint, a->region, a->missing_on_403,
                                   writable, &err);
    struct sl_array_opts ao = SL_ARRAY_OPTS_DEFAULT;
    ao.alloc = &doc->alloc;
    a->array = a->store != NULL ? sl_array_open(a->store, "", &ao, &err) : NULL;
    if (a->array == NULL) {
        sl__jdiag_add(&doc->diag, err.code, at,
                      "cannot open array \"%s\" (it must exist; add \"create\" to make it): %s",
                      a->path, err.text);
        a->bad = true;
        return;
    }
    a->writable = writable;
}

/* sl__jpath_check_free for an s3:// node: nothing there, or a Zarr node
 * that "overwrite" allows replacing (deleted, in place, when the node is
 * begun for real).  Only reads. */
static bool
s3_check_free(sl_graph_json *doc, const struct sl__jdest *d, bool *exists)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s =
        sl__jstore_open_url(doc, d->full_path, d->endpoint, d->region, false, false, &err);
    sl_status st =
        s != NULL ? sl_zarr_make_room(s, "", d->overwrite, false, exists, &err) : err.code;
    sl_store_unref(s);
    if (st == SL_OK)
        return true;
    if (st == SL_EEXIST && *exists)
        sl__jdiag_add(&doc->diag, st, d->ptr,
                      "\"%s\" %s (set \"overwrite\": true; on S3 the old node is deleted "
                      "before the run and the new one written in place, not atomically)",
                      d->path, err.text);
    else
        sl__jdiag_add(&doc->diag, st, d->ptr, "cannot write \"%s\": %s", d->path, err.text);
    return false;
}

bool
sl__jpath_check_free(sl_graph_json *doc, const struct sl__jdest *d, bool *exists)
{
    *exists = false;
    if (sl_url_is_remote(d->full_path) && !sl_url_is_s3(d->full_path)) {
        sl__jdiag_add(&doc->diag, SL_EACCES, d->ptr,
                      "\"%s\" cannot be created: http(s) stores are read here, not written "
                      "(write to a path or an s3:// URL)",
                      d->path);
        return false;
    }
    if (sl_url_is_s3(d->full_path))
        return doc->opts.new_arrays == SL_GRAPH_JSON_OPEN || doc->opts.resuming ||
               s3_check_free(doc, d, exists);
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.create = false;
    so.read_only = true;
    so.alloc = &doc->alloc;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(d->full_path, &so, &err);
    sl_zarr_kind kind = SL_ZARR_NONE;
    sl_status st = s != NULL ? sl_zarr_probe(s, "", &kind, NULL, &err) : err.code;
    sl_store_unref(s);
    if (st == SL_EPARSE) {
        kind = SL_ZARR_ARRAY; /* unreadable metadata: something is there */
    } else if (st != SL_OK && st != SL_ENOTFOUND) {
        sl__jdiag_add(&doc->diag, st, d->ptr, "cannot look at \"%s\": %s", d->path, err.text);
        return false;
    }
    *exists = kind != SL_ZARR_NONE;
    if (!*exists || d->overwrite || doc->opts.new_arrays == SL_GRAPH_JSON_OPEN ||
        doc->opts.resuming)
        return true;
    sl__jdiag_add(&doc->diag, SL_EEXIST, d->ptr,
                  "%s already exists at \"%s\"; set \"overwrite\": true to replace it",
                  kind == SL_ZARR_GROUP ? "a group" : "an array", d->path);
    return false;
}

struct sl__jdest
sl__jarray_dest(const struct sl__jarray *a, const char *ptr)
{
    return (struct sl__jdest){.full_path = a->full_path,
                              .path = a->path,
                              .ptr = ptr,
                              .endpoint = a->endpoint,
                              .region = a->region,
                              .overwrite = a->overwrite,
                              .in_place = a->in_place};
}

void
sl__jarrays_open(sl_graph_json *doc)
{
    for (size_t i = 0; i < doc->n_arrays && !doc->diag.full; i++) {
        struct sl__jarray *a = &doc->arrays[i];
        if (a->bad)
            continue;
        char at[SL__JPTR_MAX];
        sl__jptr_key(at, a->ptr, "path");
        if (a->role == SL__JARRAY_READ) {
            array_open_existing(doc, a, false);
            continue;
        }
        struct sl__jdest dest = sl__jarray_dest(a, at);
        if (!sl__jpath_check_free(doc, &dest, &a->exists))
            a->bad = true;
    }
}

/* ---- resolving the spec of a new array --------------------------------------------- */

/* What a new array's spec starts from besides its own fields. */
struct spec_sources {
    const sl_array *like;         /* the "like" array, or NULL */
    bool has_writer;              /* a put writes it */
    sl_dtype w_dtype;             /* ... of this dtype */
    const struct sl_grid *w_grid; /* ... on this grid */
};

/* Report a spec field that nothing determines. */
static bool
spec_missing(sl_graph_json *doc, const struct sl__jarray *a, const char *field, const char *extra)
{
    char at[SL__JPTR_MAX], create[SL__JPTR_MAX];
    sl__jptr_key(create, a->ptr, "create");
    sl__jptr_key(at, create, field);
    sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                  "missing \"%s\": no put writes array \"%s\" and it is \"like\" no array%s", field,
                  a->name, extra);
    return false;
}

/* Report a list whose length is not the array's rank. */
static bool
spec_check_rank(sl_graph_json *doc, const struct sl__jarray *a, const char *field, uint32_t n,
                uint32_t rank, const char *from)
{
    if (n == 0 || n == rank)
        return true;
    char at[SL__JPTR_MAX], create[SL__JPTR_MAX];
    sl__jptr_key(create, a->ptr, "create");
    sl__jptr_key(at, create, field);
    sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                  "expected %" PRIu32 " entr%s (the rank of %s), found %" PRIu32, rank,
                  rank == 1 ? "y" : "ies", from, n);
    return false;
}

/* Format, dtype, shape and rank: explicit, else the writer's, else like's. */
static bool
spec_resolve_shape(sl_graph_json *doc, struct sl__jarray *a, const struct spec_sources *src)
{
    const struct sl__jcreate *c = &a->create;
    struct sl_array_spec *sp = &a->spec;
    sp->zarr_format = c->format != 0      ? c->format
                      : src->like != NULL ? sl_array_zarr_format(src->like)
                                          : 3;
    if (c->has_dtype)
        sp->dtype = c->dtype;
    else if (src->has_writer)
        sp->dtype = src->w_dtype;
    else if (src->like != NULL)
        sp->dtype = sl_array_dtype(src->like);
    else
        return spec_missing(doc, a, "dtype", "");
    const uint64_t *shape = c->n_shape > 0      ? c->shape
                            : src->has_writer   ? src->w_grid->shape
                            : src->like != NULL ? sl_array_shape(src->like)
                                                : NULL;
    if (shape == NULL)
        return spec_missing(doc, a, "shape", "");
    sp->rank = c->n_shape > 0    ? c->n_shape
               : src->has_writer ? src->w_grid->rank
                                 : sl_array_rank(src->like);
    memcpy(sp->shape, shape, sp->rank * sizeof(uint64_t));
    const char *from = c->n_shape > 0    ? "\"shape\""
                       : src->has_writer ? "the node writing it"
                                         : "the \"like\" array";
    bool ok = spec_check_rank(doc, a, "chunks", c->n_chunks, sp->rank, from);
    ok = spec_check_rank(doc, a, "shards", c->n_shards, sp->rank, from) && ok;
    return spec_check_rank(doc, a, "dimension_names", c->has_dim_names ? c->n_dim_names : 0,
                           sp->rank, from) &&
           ok;
}

/* The largest chunk extent of `g` per dimension (its chunk shape when
 * regular; after a select, the interior chunks' shape). */
static void
grid_largest_chunks(const struct sl_grid *g, uint64_t *out)
{
    for (uint32_t d = 0; d < g->rank; d++) {
        out[d] = g->chunk[d];
        for (uint64_t k = 0; g->bounds[d] != NULL && k < g->n_chunks[d]; k++) {
            uint64_t end = k + 1 < g->n_chunks[d] ? sl_grid_chunk_start(g, d, k + 1) : g->shape[d];
            uint64_t extent = end - sl_grid_chunk_start(g, d, k);
            out[d] = extent > out[d] ? extent : out[d];
        }
    }
}

/* Chunks and shards: explicit, else like's (same rank), else the writer's
 * largest chunks. */
static bool
spec_resolve_chunks(sl_graph_json *doc, struct sl__jarray *a, const struct spec_sources *src)
{
    const struct sl__jcreate *c = &a->create;
    struct sl_array_spec *sp = &a->spec;
    bool like_fits = src->like != NULL && sl_array_rank(src->like) == sp->rank;
    const uint64_t *chunks = c->n_chunks > 0 ? c->chunks
                             : like_fits     ? sl_array_chunk_shape(src->like)
                                             : NULL;
    if (chunks != NULL)
        memcpy(sp->chunk_shape, chunks, sp->rank * sizeof(uint64_t));
    else if (src->has_writer)
        grid_largest_chunks(src->w_grid, sp->chunk_shape);
    else
        return spec_missing(doc, a, "chunks", "");
    const uint64_t *shards = c->n_shards > 0 ? c->shards : NULL;
    if (!c->has_shards && c->n_chunks == 0 && like_fits && sp->zarr_format == 3)
        shards = sl_array_shard_shape(src->like);
    for (uint32_t d = 0; d < sp->rank; d++) {
        sp->shard_shape[d] = shards != NULL ? shards[d] : 0;
        /* Chunks of 0 come only from a writer over an empty dimension. */
        if (sp->chunk_shape[d] == 0)
            sp->chunk_shape[d] = 1;
        if (shards == NULL || shards[d] % sp->chunk_shape[d] == 0)
            continue;
        char at[SL__JPTR_MAX], create[SL__JPTR_MAX];
        sl__jptr_key(create, a->ptr, "create");
        sl__jptr_key(at, create, c->n_shards > 0 ? "shards" : "chunks");
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "inner chunks must divide shards: shard extent %" PRIu64
                      " is not a multiple of chunk extent %" PRIu64 " in dimension %" PRIu32,
                      shards[d], sp->chunk_shape[d], d);
        return false;
    }
    return true;
}

/* Codec, fill value, dimension names and attributes. */
static bool
spec_resolve_rest(sl_graph_json *doc, struct sl__jarray *a, const struct spec_sources *src)
{
    const struct sl__jcreate *c = &a->create;
    struct sl_array_spec *sp = &a->spec;
    if (c->has_codec)
        sp->codec = c->codec;
    bool same_like = src->like != NULL && sl_array_rank(src->like) == sp->rank;
    memset(a->fill, 0, sizeof(a->fill));
    if (c->fill_value != NULL) {
        char at[SL__JPTR_MAX], create[SL__JPTR_MAX];
        sl__jptr_key(create, a->ptr, "create");
        sl__jptr_key(at, create, "fill_value");
        bool is_null;
        struct sl_error err = SL_ERROR_INIT;
        if (sl__fill_parse(c->fill_value, sp->dtype, sp->zarr_format, a->fill, &is_null, at,
                           &err) != SL_OK) {
            err.code = SL_EINVAL;
            sl__jdiag_add_error(&doc->diag, at, &err);
            return false;
        }
    } else if (src->like != NULL && sl_array_dtype(src->like) == sp->dtype) {
        memcpy(a->fill, sl_array_fill_value(src->like), sl_dtype_size(sp->dtype));
    }
    sp->fill_value = a->fill;
    for (uint32_t d = 0; d < sp->rank; d++)
        sp->dimension_names[d] = c->has_dim_names ? c->dim_names[d]
                                 : same_like      ? sl_array_dimension_name(src->like, d)
                                                  : NULL;
    if (c->attributes != NULL) {
        a->attributes = json_dumps(c->attributes, JSON_COMPACT);
        if (a->attributes == NULL) {
            sl__jdiag_add(&doc->diag, SL_ENOMEM, a->ptr, "no memory for the attributes");
            return false;
        }
        sp->attributes_json = a->attributes;
    } else if (src->like != NULL) {
        sp->attributes_json = sl_array_attributes(src->like);
    }
    sp->overwrite = a->overwrite;
    return true;
}

/* The sources of array `a`'s spec; false when one of them failed. */
static bool
spec_sources_get(sl_graph_json *doc, struct sl__jarray *a, bool on_disk, struct spec_sources *src)
{
    memset(src, 0, sizeof(*src));
    if (a->like >= 0) {
        if (!sl__jarray_resolve(doc, (size_t)a->like, on_disk))
            return false;
        src->like = doc->arrays[a->like].array;
    }
    if (a->writer < 0)
        return true;
    const struct sl__jnode *w = &doc->nodes[a->writer];
    if (!sl__jnode_built(doc, w->input))
        return false;
    struct sl_node_info info;
    if (sl_graph_node_info(doc->graph, doc->nodes[w->input].gid, &info, NULL) != SL_OK)
        return false;
    src->has_writer = true;
    src->w_dtype = info.dtype;
    src->w_grid = info.grid;
    return true;
}

/* Create array `a` from its resolved spec: on disk (or open it there, when
 * another process of the run created it), or in a memory store. */
static bool
array_create(sl_graph_json *doc, struct sl__jarray *a, bool on_disk)
{
    struct sl_error err = SL_ERROR_INIT;
    /* A resumed run opens the arrays its earlier run created. */
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, a->ptr, "path");
    struct sl__jdest dest = sl__jarray_dest(a, at);
    bool open = sl__jnode_opens(doc, &dest, on_disk);
    a->store = sl__jnode_store(doc, &dest, on_disk, &err);
    if (a->store == NULL && err.code == SL_OK)
        return false; /* refused, and reported */
    struct sl_array_opts ao = SL_ARRAY_OPTS_DEFAULT;
    ao.alloc = &doc->alloc;
    if (a->store != NULL)
        a->array = open ? sl_array_open(a->store, "", &ao, &err)
                        : sl_array_create(a->store, "", &a->spec, &ao, &err);
    if (a->array != NULL)
        return true;
    sl__jptr_key(at, a->ptr, on_disk ? "path" : "create");
    sl__jdiag_add(&doc->diag, err.code, at, "cannot %s array \"%s\": %s",
                  open ? "open the created" : "create", a->name, err.text);
    sl_store_unref(a->store);
    a->store = NULL;
    return false;
}

bool
sl__jarray_resolve(sl_graph_json *doc, size_t i, bool on_disk)
{
    struct sl__jarray *a = &doc->arrays[i];
    if (a->bad || a->mark == 1)
        return false;
    if (a->role == SL__JARRAY_READ && on_disk && a->writer >= 0 && !a->writable)
        array_open_existing(doc, a, true); /* a put writes into it in this pass */
    if (a->role == SL__JARRAY_READ || a->mark == 2)
        return a->array != NULL;
    a->mark = 1;
    struct spec_sources src;
    bool ok = spec_sources_get(doc, a, on_disk, &src);
    if (ok) {
        a->spec = SL_ARRAY_SPEC_DEFAULT;
        ok = spec_resolve_shape(doc, a, &src) && spec_resolve_chunks(doc, a, &src) &&
             spec_resolve_rest(doc, a, &src) && array_create(doc, a, on_disk);
    }
    a->mark = 2;
    a->bad = !ok;
    return ok;
}

void
sl__jarrays_reset(sl_graph_json *doc)
{
    for (size_t i = 0; i < doc->n_arrays; i++) {
        struct sl__jarray *a = &doc->arrays[i];
        if (a->role != SL__JARRAY_CREATE)
            continue;
        sl_array_unref(a->array);
        sl_store_unref(a->store);
        free(a->attributes);
        a->array = NULL;
        a->store = NULL;
        a->attributes = NULL;
        a->mark = 0;
    }
}

void
sl__jarrays_fini(sl_graph_json *doc)
{
    for (size_t i = 0; i < doc->n_arrays; i++) {
        struct sl__jarray *a = &doc->arrays[i];
        sl_array_unref(a->array);
        sl_store_unref(a->store);
        free(a->attributes);
        if (a->full_path != NULL)
            sl_free(&doc->alloc, a->full_path, strlen(a->full_path) + 1);
    }
    sl_free(&doc->alloc, doc->arrays, doc->n_arrays * sizeof(struct sl__jarray));
    doc->arrays = NULL;
    doc->n_arrays = 0;
}

/* ---- describing ------------------------------------------------------------------- */

sl_status
sl_graph_json_write_arrays(const sl_graph_json *doc, FILE *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    for (size_t i = 0; i < doc->n_arrays; i++) {
        const struct sl__jarray *a = &doc->arrays[i];
        const sl_array *arr = a->array;
        if (arr == NULL)
            continue; /* only a file that failed to load has one */
        const char *what = a->role == SL__JARRAY_READ ? (a->writer >= 0 ? "write" : "read")
                           : a->exists                ? "overwrite"
                                                      : "create";
        char shape[256], chunks[256], shards[256] = "";
        sl_shape_format(sl_array_rank(arr), sl_array_shape(arr), shape, sizeof(shape));
        sl_shape_format(sl_array_rank(arr), sl_array_chunk_shape(arr), chunks, sizeof(chunks));
        if (sl_array_shard_shape(arr) != NULL) {
            char s[240];
            sl_shape_format(sl_array_rank(arr), sl_array_shard_shape(arr), s, sizeof(s));
            snprintf(shards, sizeof(shards), ", shards %s", s);
        }
        fprintf(out, "array %s: %s %s: zarr v%d %s %s, chunks %s%s\n", a->name, what, a->path,
                sl_array_zarr_format(arr), sl_dtype_name(sl_array_dtype(arr)), shape, chunks,
                shards);
    }
    if (ferror(out))
        return sl_error_set(err, SL_EIO, NULL, "arrays: writing %zu arrays to the stream failed",
                            doc->n_arrays);
    return SL_OK;
}
