/* SPDX-License-Identifier: MIT */
/*
 * Arrays: opening (v3 zarr.json, else v2 .zarray), creating from a spec,
 * reference counting, metadata accessors, and probing and creating groups.
 *
 * DESIGN: an array's metadata and grids are fixed when it opens, so every
 * accessor is a plain read and any thread may call it.  Absence is normal
 * while probing for metadata (zarr.json, then .zarray), so store errors go
 * to a local record and reach the caller's only when they are real.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarr_internal.h"

/* ---- paths and probing ---------------------------------------------------------- */

/* Node `path` of `store` as the user would name it (sl_store_name), for messages. */
struct node_name {
    char text[SL_STORE_KEY_MAX + 4096];
};

static const char *
node_name(const sl_store *store, const char *path, struct node_name *out)
{
    sl_store_name(store, path, out->text, sizeof(out->text));
    return out->text;
}

/* see zarr_internal.h */
sl_status
sl__node_key(const char *path, const char *name, char *buf, size_t size, struct sl_error *err)
{
    int n = snprintf(buf, size, "%s%s%s", path, path[0] != '\0' ? "/" : "", name);
    if (n < 0 || (size_t)n >= size)
        return sl_error_set(err, SL_EINVAL, NULL, "path \"%s\" is too long", path);
    return SL_OK;
}

/* see zarr_internal.h */
sl_status
sl__node_path_check(const char *path, struct sl_error *err)
{
    if (path == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "path is missing");
    return path[0] == '\0' ? SL_OK : sl__key_check(path, strlen(path), err);
}

/* see zarr_internal.h */
sl_status
sl__meta_get_optional(sl_store *s, const char *key, struct sl_buf *out, bool *found,
                      struct sl_error *err)
{
    struct sl_error local = SL_ERROR_INIT;
    struct sl__reader rd;
    sl_status st = sl__reader_open(s, key, &rd, &local);
    *found = st == SL_OK;
    if (st == SL_ENOTFOUND)
        return SL_OK;
    if (st == SL_OK && rd.size > SL_META_MAX_BYTES) {
        st = sl_error_set(&local, SL_EPARSE, NULL,
                          "metadata of %" PRIu64 " bytes exceeds the %zu-byte limit", rd.size,
                          SL_META_MAX_BYTES);
        sl_error_set_source(&local, key);
    }
    if (st == SL_OK)
        st = sl__reader_read_range(&rd, NULL, out, &local);
    sl__reader_close(&rd);
    sl__error_forward(err, &local);
    return st;
}

/* The node_type of a v3 zarr.json, checked lightly. */
static sl_status
probe_v3(const struct sl_buf *doc, const char *key, sl_zarr_kind *kind, struct sl_error *err)
{
    json_t *root;
    SL_TRY(sl__json_parse((const char *)doc->data, doc->size, key, &root, err));
    const char *t = json_string_value(json_object_get(root, "node_type"));
    *kind = t == NULL                 ? SL_ZARR_NONE
            : strcmp(t, "array") == 0 ? SL_ZARR_ARRAY
            : strcmp(t, "group") == 0 ? SL_ZARR_GROUP
                                      : SL_ZARR_NONE;
    json_decref(root);
    return SL_OK;
}

/* see zarr_internal.h */
sl_status
sl__v2_group_attributes(sl_store *store, const char *key, struct sl_buf *out, struct sl_error *err)
{
    struct sl_buf text = SL_BUF_INIT;
    bool found = false;
    sl_status st = sl__meta_get_optional(store, key, &text, &found, err);
    json_t *root = NULL;
    if (st == SL_OK && found)
        st = sl__json_parse((const char *)text.data, text.size, key, &root, err);
    if (st == SL_OK && found && !json_is_object(root)) {
        st = sl_error_set_path(err, SL_EPARSE, "", "expected a JSON object of attributes");
        sl_error_set_source(err, key);
    }
    out->size = 0;
    if (st == SL_OK && found)
        st = sl__json_dump(root, JSON_COMPACT, out, err);
    else if (st == SL_OK && (st = sl_buf_append(out, "{}", 3, err)) == SL_OK)
        out->size = 2;
    json_decref(root);
    sl_buf_fini(&text);
    return st;
}

/* A remote store: fetch the metadata objects `names` of the node at
 * `path` at once, so that looking for them one after another costs one
 * round trip, not one each.  Hinted once zarr.json is known absent: the
 * v2 keys a v3 node lacks are never asked for. */
static void
hint_meta(sl_store *store, const char *path, const char *const *names, int n)
{
    if (!sl_store_reads_ahead(store))
        return;
    char key[SL_STORE_KEY_MAX + 16];
    for (int i = 0; i < n; i++)
        if (sl__node_key(path, names[i], key, sizeof(key), NULL) == SL_OK)
            sl__store_prefetch(store, key, NULL);
}

/* see zarr_internal.h */
sl_status
sl__zarr_read_node(sl_store *store, const char *path, sl_zarr_kind *kind, int *zarr_format,
                   struct sl_buf *attrs, char *source, size_t source_size, struct sl_error *err)
{
    SL_TRY(sl__node_path_check(path, err));
    static const char *const names[] = {"zarr.json", ".zarray", ".zgroup", ".zattrs"};
    struct sl_buf doc = SL_BUF_INIT;
    sl_status st = SL_OK;
    *kind = SL_ZARR_NONE;
    int format = 0;
    char key[SL_STORE_KEY_MAX + 16];
    for (int i = 0; i < 3 && st == SL_OK && *kind == SL_ZARR_NONE; i++) {
        bool found;
        st = sl__node_key(path, names[i], key, sizeof(key), err);
        if (st == SL_OK)
            st = sl__meta_get_optional(store, key, &doc, &found, err);
        if (st == SL_OK && !found && i == 0)
            hint_meta(store, path, names + 1, attrs != NULL ? 3 : 2);
        if (st != SL_OK || !found)
            continue;
        if (i == 0)
            st = probe_v3(&doc, key, kind, err);
        else
            *kind = i == 1 ? SL_ZARR_ARRAY : SL_ZARR_GROUP;
        format = i == 0 ? 3 : 2;
    }
    if (zarr_format != NULL)
        *zarr_format = format;
    /* A group's attributes: from the zarr.json just read, or v2's .zattrs. */
    if (st == SL_OK && *kind == SL_ZARR_GROUP && attrs != NULL) {
        if (format == 3) {
            snprintf(source, source_size, "%s", key);
            st = sl__group_parse_v3((const char *)doc.data, doc.size, key, attrs, err);
        } else {
            st = sl__node_key(path, ".zattrs", source, source_size, err);
            if (st == SL_OK)
                st = sl__v2_group_attributes(store, source, attrs, err);
        }
    }
    sl_buf_fini(&doc);
    return st;
}

sl_status
sl_zarr_probe(sl_store *store, const char *path, sl_zarr_kind *kind, int *zarr_format,
              struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    return sl__zarr_read_node(store, path, kind, zarr_format, NULL, NULL, 0, err);
}

sl_status
sl_zarr_read_node(sl_store *store, const char *path, sl_zarr_kind *kind, int *zarr_format,
                  struct sl_buf *attrs, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (store == NULL || kind == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "store or kind is missing");
    char source[SL_STORE_KEY_MAX + 16];
    return sl__zarr_read_node(store, path, kind, zarr_format, attrs, source, sizeof(source), err);
}

/* ---- construction ------------------------------------------------------------------ */

/* see zarr_internal.h */
sl_array *
sl__array_from_meta(sl_store *store, const char *path, struct sl__meta *meta,
                    const struct sl_array_opts *opts, struct sl_error *err)
{
    struct sl_array_opts o = opts != NULL ? *opts : SL_ARRAY_OPTS_DEFAULT;
    struct sl_allocator alloc = o.alloc != NULL ? *o.alloc : sl_allocator_default();
    struct sl_grid chunks, objects;
    const uint64_t *cs = meta->sharded ? meta->inner : meta->chunk;
    if (sl_grid_init_regular(&chunks, meta->rank, meta->shape, cs, err) != SL_OK ||
        sl_grid_init_regular(&objects, meta->rank, meta->shape, meta->chunk, err) != SL_OK)
        return NULL;
    sl_array *a = sl_alloc(&alloc, sizeof(*a), 0);
    size_t plen = path[0] != '\0' ? strlen(path) + 1 : 0;
    char *prefix = sl_alloc(&alloc, plen + 1, 1);
    char *path_copy = sl_strdup(&alloc, path);
    if (a == NULL || prefix == NULL || path_copy == NULL) {
        sl_free(&alloc, a, sizeof(*a));
        sl_free(&alloc, prefix, plen + 1);
        if (path_copy != NULL)
            sl_free(&alloc, path_copy, strlen(path_copy) + 1);
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory opening array %s",
                     node_name(store, path, &(struct node_name){0}));
        return NULL;
    }
    memset(a, 0, sizeof(*a));
    snprintf(prefix, plen + 1, "%s%s", path, plen > 0 ? "/" : "");
    a->alloc = alloc;
    a->prefix = prefix;
    a->prefix_len = plen;
    a->path = path_copy;
    a->meta = *meta;
    a->write_fill_chunks = o.write_fill_chunks;
    a->elem_bytes = sl_dtype_size(meta->dtype);
    sl__meta_chunk_layout(&a->meta, &a->layout);
    a->chunk_grid = chunks;
    a->object_grid = objects;
    for (int i = 0; i < SL__STRIPES; i++)
        pthread_mutex_init(&a->stripes[i], NULL);
    pthread_mutex_init(&a->hint_lock, NULL);
    a->hints = NULL;
    a->n_hints = a->cap_hints = 0;
    atomic_init(&a->refs, 1);
    sl_store_ref(store);
    a->store = store;
    memset(meta, 0, sizeof(*meta)); /* ownership moved */
    return a;
}

/* Open a v2 array whose .zarray text is in `zarray`. */
static sl_array *
open_v2(sl_store *store, const char *path, struct sl_buf *zarray, const char *key,
        const struct sl_array_opts *opts, struct sl_error *err)
{
    char attrs_key[SL_STORE_KEY_MAX + 16];
    struct sl_buf attrs = SL_BUF_INIT;
    bool has_attrs = false;
    struct sl__meta meta;
    sl__meta_init(&meta, opts != NULL ? opts->alloc : NULL);
    sl_status st = sl__node_key(path, ".zattrs", attrs_key, sizeof(attrs_key), err);
    if (st == SL_OK)
        st = sl__meta_get_optional(store, attrs_key, &attrs, &has_attrs, err);
    if (st == SL_OK)
        st = sl__meta_parse_v2((const char *)zarray->data, zarray->size,
                               has_attrs ? (const char *)attrs.data : NULL, attrs.size, key, &meta,
                               err);
    sl_buf_fini(&attrs);
    sl_array *a = st == SL_OK ? sl__array_from_meta(store, path, &meta, opts, err) : NULL;
    sl__meta_fini(&meta);
    return a;
}

sl_array *
sl_array_open(sl_store *store, const char *path, const struct sl_array_opts *opts,
              struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (store == NULL || sl__node_path_check(path, err) != SL_OK) {
        sl_error_set(err, SL_EINVAL, NULL, "store or path is missing");
        return NULL;
    }
    static const char *const v2_names[] = {".zarray", ".zattrs"};
    char key[SL_STORE_KEY_MAX + 16];
    struct sl_buf doc = SL_BUF_INIT;
    bool found = false;
    sl_array *a = NULL;
    if (sl__node_key(path, "zarr.json", key, sizeof(key), err) != SL_OK ||
        sl__meta_get_optional(store, key, &doc, &found, err) != SL_OK)
        goto out_free_doc;
    if (found) {
        struct sl__meta meta;
        struct sl_error local = SL_ERROR_INIT;
        sl__meta_init(&meta, opts != NULL ? opts->alloc : NULL);
        if (sl__meta_parse_v3((const char *)doc.data, doc.size, key, &meta, &local) == SL_OK)
            a = sl__array_from_meta(store, path, &meta, opts, err);
        else if (local.code == SL_EINVAL && strcmp(local.path, "/node_type") == 0)
            /* A group: say so by the path the user gave, as for v2 below. */
            sl_error_set(err, SL_EINVAL, NULL, "%s is a group, not an array",
                         node_name(store, path, &(struct node_name){0}));
        else
            sl__error_forward(err, &local);
        sl__meta_fini(&meta);
        goto out_free_doc;
    }
    hint_meta(store, path, v2_names, 2);
    if (sl__node_key(path, ".zarray", key, sizeof(key), err) != SL_OK ||
        sl__meta_get_optional(store, key, &doc, &found, err) != SL_OK)
        goto out_free_doc;
    if (found) {
        a = open_v2(store, path, &doc, key, opts, err);
        goto out_free_doc;
    }
    sl_zarr_kind kind = SL_ZARR_NONE;
    if (sl_zarr_probe(store, path, &kind, NULL, err) == SL_OK)
        sl_error_set(err, kind == SL_ZARR_GROUP ? SL_EINVAL : SL_ENOTFOUND, NULL,
                     kind == SL_ZARR_GROUP ? "%s is a group, not an array"
                                           : "no Zarr array at %s (no zarr.json or .zarray)",
                     node_name(store, path, &(struct node_name){0}));
out_free_doc:
    sl_buf_fini(&doc);
    return a;
}

void
sl_array_ref(sl_array *a)
{
    /* Relaxed: the caller holds a reference already. */
    atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

void
sl_array_unref(sl_array *a)
{
    if (a == NULL)
        return;
    /* Release pairs with the acquire fence, as in sl_store_unref. */
    if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_release) != 1)
        return;
    atomic_thread_fence(memory_order_acquire);
    for (int i = 0; i < SL__STRIPES; i++)
        pthread_mutex_destroy(&a->stripes[i]);
    sl__hint_fini(a);
    sl_grid_fini(&a->chunk_grid);
    sl_grid_fini(&a->object_grid);
    sl__meta_fini(&a->meta);
    sl_store_unref(a->store);
    struct sl_allocator alloc = a->alloc;
    sl_free(&alloc, a->prefix, a->prefix_len + 1);
    sl_free(&alloc, a->path, strlen(a->path) + 1);
    sl_free(&alloc, a, sizeof(*a));
}

/* ---- creation ------------------------------------------------------------------------ */

static sl_status
spec_check(const struct sl_array_spec *sp, bool sharded, struct sl_error *err)
{
    if (sp->zarr_format != 2 && sp->zarr_format != 3)
        return sl_error_set(err, SL_EINVAL, NULL, "zarr_format must be 2 or 3, not %d",
                            sp->zarr_format);
    if (sp->rank > SL_MAX_RANK || (unsigned)sp->dtype >= SL_DTYPE_COUNT_)
        return sl_error_set(err, SL_EINVAL, NULL, "rank %u or data type out of range", sp->rank);
    if (sp->zarr_format == 2 && (sharded || sp->checksum || sp->codec.crc32c || sp->index_at_start))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "Zarr v2 has no sharding and no crc32c codec");
    if (sp->separator != 0 && sp->separator != '/' && sp->separator != '.')
        return sl_error_set(err, SL_EINVAL, NULL, "separator must be '/' or '.'");
    for (uint32_t d = 0; d < sp->rank; d++)
        if (sp->chunk_shape[d] == 0)
            return sl_error_set(err, SL_EINVAL, NULL, "chunk_shape[%u] is 0", d);
    return SL_OK;
}

/* The compressor of a spec as a codec. */
static sl_status
spec_compressor(const struct sl_array_spec *sp, struct sl__codec *c, bool *present,
                struct sl_error *err)
{
    const struct sl_codec_spec *cs = &sp->codec;
    memset(c, 0, sizeof(*c));
    *present = cs->compressor != SL_COMPRESSOR_NONE;
    switch (cs->compressor) {
    case SL_COMPRESSOR_NONE:
        return SL_OK;
    case SL_COMPRESSOR_ZSTD:
        c->id = SL__CODEC_ZSTD;
        c->u.zstd.level = cs->level;
        c->u.zstd.checksum = cs->checksum;
        if (cs->checksum && sp->zarr_format == 2)
            return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                                "zstd checksums cannot be written in Zarr v2 metadata");
        return SL_OK;
    case SL_COMPRESSOR_GZIP:
        c->id = SL__CODEC_GZIP;
        c->u.gzip.level = cs->level;
        return SL_OK;
    case SL_COMPRESSOR_BLOSC:
        c->id = SL__CODEC_BLOSC;
        if (strlen(cs->blosc_cname) >= sizeof(c->u.blosc.cname))
            return sl_error_set(err, SL_EINVAL, NULL, "blosc cname too long");
        strcpy(c->u.blosc.cname, cs->blosc_cname);
        c->u.blosc.clevel = cs->level;
        c->u.blosc.shuffle = (int)cs->blosc_shuffle;
        c->u.blosc.typesize = (uint32_t)sl_dtype_size(sp->dtype);
        return SL_OK;
    }
    return sl_error_set(err, SL_EINVAL, NULL, "unknown compressor %d", (int)cs->compressor);
}

static sl_status
spec_chain(const struct sl_array_spec *sp, struct sl__chain *ch, struct sl_error *err)
{
    memset(ch, 0, sizeof(*ch));
    if (sp->order_f && sp->rank > 1) {
        ch->c[0].id = SL__CODEC_TRANSPOSE;
        for (uint32_t k = 0; k < sp->rank; k++)
            ch->c[0].u.transpose.order[k] = sp->rank - 1 - k;
        ch->n = 1;
    }
    ch->c[ch->n].id = SL__CODEC_BYTES;
    ch->c[ch->n].u.bytes.endian = sp->endian;
    ch->c[ch->n].u.bytes.has_endian = true;
    ch->n++;
    bool present;
    SL_TRY(spec_compressor(sp, &ch->c[ch->n], &present, err));
    ch->n += present;
    if (sp->checksum || sp->codec.crc32c)
        ch->c[ch->n++].id = SL__CODEC_CRC32C;
    return SL_OK;
}

static sl_status
spec_names_and_attrs(const struct sl_array_spec *sp, struct sl__meta *m, struct sl_error *err)
{
    for (uint32_t d = 0; d < sp->rank; d++) {
        if (sp->dimension_names[d] == NULL)
            continue;
        m->has_dim_names = true;
        if ((m->dim_names[d] = sl_strdup(&m->alloc, sp->dimension_names[d])) == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "out of memory");
    }
    json_error_t jerr;
    json_t *attrs = json_loads(sp->attributes_json != NULL ? sp->attributes_json : "{}",
                               JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(attrs)) {
        json_decref(attrs);
        return sl_error_set(err, SL_EINVAL, NULL, "attributes must be a JSON object%s%s",
                            attrs == NULL ? ": " : "", attrs == NULL ? jerr.text : "");
    }
    sl_status st = sl__meta_set_attributes(m, attrs, err);
    json_decref(attrs);
    return st;
}

/* Build metadata from a spec. */
static sl_status
spec_meta(const struct sl_array_spec *sp, struct sl__meta *m, struct sl_error *err)
{
    bool sharded = false;
    for (uint32_t d = 0; d < sp->rank; d++)
        sharded = sharded || sp->shard_shape[d] != 0;
    SL_TRY(spec_check(sp, sharded, err));
    m->zarr_format = sp->zarr_format;
    m->rank = sp->rank;
    m->dtype = sp->dtype;
    memcpy(m->shape, sp->shape, sp->rank * sizeof(uint64_t));
    memcpy(m->chunk, sharded ? sp->shard_shape : sp->chunk_shape, sp->rank * sizeof(uint64_t));
    m->keys = sp->zarr_format == 3 ? SL__KEYS_DEFAULT : SL__KEYS_V2;
    m->sep = sp->separator != 0 ? sp->separator : sp->zarr_format == 3 ? '/' : '.';
    if (sp->fill_value != NULL)
        memcpy(m->fill, sp->fill_value, sl_dtype_size(sp->dtype));
    SL_TRY(spec_chain(sp, &m->chain, err));
    if (sharded) {
        m->sharded = true;
        m->index_at_start = sp->index_at_start;
        memcpy(m->inner, sp->chunk_shape, sp->rank * sizeof(uint64_t));
        m->index_chain = (struct sl__chain){.n = 2};
        m->index_chain.c[0].id = SL__CODEC_BYTES;
        m->index_chain.c[0].u.bytes.has_endian = true;
        m->index_chain.c[1].id = SL__CODEC_CRC32C;
    }
    SL_TRY(spec_names_and_attrs(sp, m, err));
    return sl__meta_check(m, err);
}

/* Write the metadata documents of `m` at `path`. */
static sl_status
meta_store(sl_store *store, const char *path, const struct sl__meta *m, struct sl_error *err)
{
    char key[SL_STORE_KEY_MAX + 16];
    struct sl_buf doc = SL_BUF_INIT, attrs = SL_BUF_INIT;
    sl_status st;
    if (m->zarr_format == 3) {
        st = sl__node_key(path, "zarr.json", key, sizeof(key), err);
        if (st == SL_OK)
            st = sl__meta_write_v3(m, &doc, err);
        if (st == SL_OK)
            st = sl_store_set(store, key, doc.data, doc.size, err);
    } else {
        st = sl__meta_write_v2(m, &doc, &attrs, err);
        if (st == SL_OK)
            st = sl__node_key(path, ".zattrs", key, sizeof(key), err);
        if (st == SL_OK)
            st = attrs.size > 0 ? sl_store_set(store, key, attrs.data, attrs.size, err)
                                : sl_store_delete(store, key, err);
        if (st == SL_OK)
            st = sl__node_key(path, ".zarray", key, sizeof(key), err);
        if (st == SL_OK)
            st = sl_store_set(store, key, doc.data, doc.size, err);
    }
    sl_buf_fini(&doc);
    sl_buf_fini(&attrs);
    return st;
}

sl_array *
sl_array_create(sl_store *store, const char *path, const struct sl_array_spec *spec,
                const struct sl_array_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (store == NULL || spec == NULL || sl__node_path_check(path, err) != SL_OK) {
        sl_error_set(err, SL_EINVAL, NULL, "store, path or spec is missing");
        return NULL;
    }
    struct sl__meta meta;
    sl__meta_init(&meta, opts != NULL ? opts->alloc : NULL);
    sl_array *a = NULL;
    sl_zarr_kind kind = SL_ZARR_NONE;
    if (spec_meta(spec, &meta, err) != SL_OK)
        goto out_fini_meta;
    if (!spec->overwrite && sl_zarr_probe(store, path, &kind, NULL, err) != SL_OK)
        goto out_fini_meta;
    /* Overwriting replaces the node whole: no chunk outside the new grid,
     * no metadata of the other format, no members stay. */
    if (spec->overwrite && sl_store_delete_tree(store, path, err) != SL_OK)
        goto out_fini_meta;
    if (kind != SL_ZARR_NONE) {
        sl_error_set(err, SL_EEXIST, NULL,
                     "an %s already exists at %s; set spec.overwrite to replace it (`sluice` "
                     "takes --overwrite)",
                     kind == SL_ZARR_ARRAY ? "array" : "group",
                     node_name(store, path, &(struct node_name){0}));
        goto out_fini_meta;
    }
    if (meta_store(store, path, &meta, err) == SL_OK)
        a = sl__array_from_meta(store, path, &meta, opts, err);
out_fini_meta:
    sl__meta_fini(&meta);
    return a;
}

/* A v2 group's .zgroup, as zarr-python writes it (without the C string's NUL). */
static const char v2_zgroup[] = "{\n    \"zarr_format\": 2\n}";

sl_status
sl_group_create(sl_store *store, const char *path, int zarr_format, const char *attributes_json,
                struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__node_path_check(path, err));
    json_t *attrs =
        json_loads(attributes_json != NULL ? attributes_json : "{}", JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(attrs)) {
        json_decref(attrs);
        return sl_error_set(err, SL_EINVAL, NULL, "group attributes must be a JSON object");
    }
    char key[SL_STORE_KEY_MAX + 16];
    struct sl_buf doc = SL_BUF_INIT;
    sl_status st = SL_OK;
    if (zarr_format == 3) {
        json_t *root = json_pack("{s:O, s:i, s:s}", "attributes", attrs, "zarr_format", 3,
                                 "node_type", "group");
        st = root != NULL ? sl__json_dump(root, JSON_INDENT(2), &doc, err)
                          : sl_error_set(err, SL_ENOMEM, NULL, "out of memory");
        json_decref(root);
        if (st == SL_OK)
            st = sl__node_key(path, "zarr.json", key, sizeof(key), err);
        if (st == SL_OK)
            st = sl_store_set(store, key, doc.data, doc.size, err);
    } else if (zarr_format == 2) {
        st = sl__node_key(path, ".zgroup", key, sizeof(key), err);
        if (st == SL_OK)
            st = sl_store_set(store, key, v2_zgroup, sizeof(v2_zgroup) - 1, err);
        if (st == SL_OK && json_object_size(attrs) > 0)
            st = sl__json_dump(attrs, JSON_INDENT(4) | JSON_SORT_KEYS, &doc, err);
        if (st == SL_OK && doc.size > 0)
            st = sl__node_key(path, ".zattrs", key, sizeof(key), err);
        if (st == SL_OK && doc.size > 0)
            st = sl_store_set(store, key, doc.data, doc.size, err);
    } else {
        st = sl_error_set(err, SL_EINVAL, NULL, "zarr_format must be 2 or 3");
    }
    json_decref(attrs);
    sl_buf_fini(&doc);
    return st;
}

/* ---- accessors ------------------------------------------------------------------------ */

int
sl_array_zarr_format(const sl_array *a)
{
    return a->meta.zarr_format;
}

uint32_t
sl_array_rank(const sl_array *a)
{
    return a->meta.rank;
}

const uint64_t *
sl_array_shape(const sl_array *a)
{
    return a->meta.shape;
}

sl_dtype
sl_array_dtype(const sl_array *a)
{
    return a->meta.dtype;
}

const uint64_t *
sl_array_chunk_shape(const sl_array *a)
{
    return a->meta.sharded ? a->meta.inner : a->meta.chunk;
}

const uint64_t *
sl_array_shard_shape(const sl_array *a)
{
    return a->meta.sharded ? a->meta.chunk : NULL;
}

size_t
sl_array_chunk_bytes(const sl_array *a)
{
    return a->layout.n_bytes;
}

const void *
sl_array_fill_value(const sl_array *a)
{
    return a->meta.fill;
}

const char *
sl_array_dimension_name(const sl_array *a, uint32_t dim)
{
    return dim < a->meta.rank ? a->meta.dim_names[dim] : NULL;
}

const char *
sl_array_attributes(const sl_array *a)
{
    return a->meta.attributes != NULL ? a->meta.attributes : "{}";
}

const char *
sl_array_path(const sl_array *a)
{
    return a->path;
}

sl_store *
sl_array_store(const sl_array *a)
{
    return a->store;
}

sl_status
sl_array_chunk_grid(const sl_array *a, struct sl_grid *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    return sl_grid_copy(out, &a->chunk_grid, NULL, err);
}

sl_status
sl_array_shard_grid(const sl_array *a, struct sl_grid *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    return sl_grid_copy(out, &a->object_grid, NULL, err);
}

size_t
sl_array_codecs_describe(const sl_array *a, char *buf, size_t size)
{
    const struct sl__meta *m = &a->meta;
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    if (m->sharded) {
        char shape[200], index[200];
        sl_shape_format(m->rank, m->inner, shape, sizeof(shape));
        sl__chain_describe(&m->index_chain, index, sizeof(index));
        sl__strbuf_append(buf, size, &len,
                          "sharding_indexed(chunk_shape=%s, index_location=%s, index_codecs=[%s], "
                          "codecs=[",
                          shape, m->index_at_start ? "start" : "end", index);
    }
    char chain[512];
    sl__chain_describe(&m->chain, chain, sizeof(chain));
    sl__strbuf_append(buf, size, &len, "%s%s", chain, m->sharded ? "])" : "");
    return len;
}

size_t
sl_array_fill_describe(const sl_array *a, char *buf, size_t size)
{
    json_t *v = NULL;
    struct sl_error ignored = SL_ERROR_INIT;
    if (size > 0)
        buf[0] = '\0';
    if (sl__fill_to_json(a->meta.dtype, a->meta.fill, a->meta.fill_null, a->meta.zarr_format, &v,
                         &ignored) != SL_OK) {
        /* A uint64 above 2^63 - 1, which jansson cannot print. */
        uint64_t u;
        memcpy(&u, a->meta.fill, 8);
        return (size_t)snprintf(buf, size, "%" PRIu64, u);
    }
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(v);
    size_t n = text != NULL ? (size_t)snprintf(buf, size, "%s", text) : 0;
    free(text);
    return n;
}

size_t
sl__array_object_key(const sl_array *a, const uint64_t *coords, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s", a->prefix);
    size_t len = n > 0 ? (size_t)n : 0;
    return len + sl__meta_chunk_key(&a->meta, coords, len < size ? buf + len : NULL,
                                    len < size ? size - len : 0);
}

size_t
sl_array_chunk_key(const sl_array *a, const uint64_t *coords, char *buf, size_t size)
{
    if (!a->meta.sharded)
        return sl__array_object_key(a, coords, buf, size);
    uint64_t shard[SL_MAX_RANK], k;
    sl__shard_of_inner(&a->meta, coords, shard, &k);
    return sl__array_object_key(a, shard, buf, size);
}

pthread_mutex_t *
sl__array_stripe(const sl_array *a, const uint64_t *coords)
{
    uint64_t i = sl_grid_linear_index(&a->object_grid, coords);
    return (pthread_mutex_t *)&a->stripes[i % SL__STRIPES];
}

/* Check `coords` against `grid`, whose cells are called `what` ("chunk",
 * "shard") in messages. */
static sl_status
array_check_grid(const sl_array *a, const struct sl_grid *grid, const uint64_t *coords,
                 const char *what, struct sl_error *err)
{
    if (coords == NULL && a->meta.rank > 0)
        return sl_error_set(err, SL_EINVAL, NULL, "%s coordinates are missing", what);
    for (uint32_t d = 0; d < a->meta.rank; d++)
        if (coords[d] >= grid->n_chunks[d]) {
            struct sl_chunk_key key = sl_chunk_key_make(a->meta.rank, coords);
            return sl_error_set(err, SL_EBOUNDS, &key,
                                "%s index %" PRIu64 " in dimension %u is outside the grid of "
                                "%" PRIu64 " %ss",
                                what, coords[d], d, grid->n_chunks[d], what);
        }
    return SL_OK;
}

sl_status
sl__array_check_coords(const sl_array *a, const uint64_t *coords, struct sl_error *err)
{
    return array_check_grid(a, &a->chunk_grid, coords, "chunk", err);
}

sl_status
sl__array_check_object_coords(const sl_array *a, const uint64_t *coords, struct sl_error *err)
{
    return array_check_grid(a, &a->object_grid, coords, a->meta.sharded ? "shard" : "chunk", err);
}
