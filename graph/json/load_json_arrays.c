/* SPDX-License-Identifier: MIT */
/*
 * Parsing the "arrays" of a graph file: each entry's fields and path, its
 * "create" settings (also those of pyramid nodes), and its "like"
 * reference.  Nothing here touches storage: opening and creating the
 * arrays is load_json_array_open.c's.
 */
#include <inttypes.h>
#include <string.h>

#include "core_internal.h"
#include "load_json_internal.h"

static const char *const array_keys[] = {
    "path", "create", "like", "overwrite", "comment", "missing_on_403", "endpoint", "region", NULL};
static const char *const array_create_keys[] = {
    "format", "dtype", "dimension_names", "shape",      "chunks",
    "shards", "codec", "fill_value",      "attributes", NULL};

/* ---- "create" ----------------------------------------------------------------- */

static void
create_parse_names(sl_graph_json *doc, const json_t *v, const char *ptr, struct sl__jcreate *c)
{
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > SL_MAX_RANK) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, ptr,
                      "expected a list of 1 to %d names (strings or null), found %s", SL_MAX_RANK,
                      sl__json_type_name(v));
        return;
    }
    bool ok = true;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        char at[SL__JPTR_MAX];
        sl__jptr_index(at, ptr, i);
        c->dim_names[i] = NULL;
        if (!json_is_null(e))
            ok = sl__jget_string(&doc->diag, e, at, &c->dim_names[i]) && ok;
    }
    c->has_dim_names = ok;
    c->n_dim_names = (uint32_t)json_array_size(v);
}

/* Report lists of different lengths, and shards that chunks do not divide. */
static void
create_check_lists(sl_graph_json *doc, const char *ptr, struct sl__jcreate *c)
{
    struct {
        const char *name;
        uint32_t n;
    } lists[] = {{"shape", c->n_shape},
                 {"chunks", c->n_chunks},
                 {"shards", c->n_shards},
                 {"dimension_names", c->has_dim_names ? c->n_dim_names : 0}};
    const char *first = NULL;
    uint32_t rank = 0;
    for (size_t i = 0; i < SL_ARRAY_LEN(lists); i++) {
        if (lists[i].n == 0)
            continue;
        if (first == NULL) {
            first = lists[i].name;
            rank = lists[i].n;
            continue;
        }
        if (lists[i].n != rank) {
            char at[SL__JPTR_MAX];
            sl__jptr_key(at, ptr, lists[i].name);
            sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                          "expected %" PRIu32 " entr%s, as \"%s\" has, found %" PRIu32, rank,
                          rank == 1 ? "y" : "ies", first, lists[i].n);
        }
    }
    for (uint32_t d = 0; c->n_shards == c->n_chunks && d < c->n_shards; d++) {
        if (c->shards[d] % c->chunks[d] == 0)
            continue;
        char at[SL__JPTR_MAX], sh[SL__JPTR_MAX];
        sl__jptr_key(sh, ptr, "shards");
        sl__jptr_index(at, sh, d);
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "inner chunks must divide shards: shard extent %" PRIu64
                      " is not a multiple of chunk extent %" PRIu64 " in dimension %" PRIu32,
                      c->shards[d], c->chunks[d], d);
    }
}

static void
create_parse_codec(sl_graph_json *doc, const json_t *v, const char *ptr, struct sl__jcreate *c)
{
    const char *text;
    if (!sl__jget_string(&doc->diag, v, ptr, &text))
        return;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_codec_spec_parse(text, &c->codec, &err) != SL_OK) {
        if (err.code == SL_EPARSE)
            err.code = SL_EINVAL;
        sl__jdiag_add_error(&doc->diag, ptr, &err);
        return;
    }
    c->has_codec = true;
}

bool
sl__jcreate_parse(sl_graph_json *doc, const json_t *obj, const char *ptr,
                  const char *const *allowed, struct sl__jcreate *c)
{
    struct sl__jdiag *d = &doc->diag;
    size_t before = d->count;
    memset(c, 0, sizeof(*c));
    if (!json_is_object(obj)) {
        sl__jdiag_add(d, SL_EINVAL, ptr, "expected an object of array settings, found %s",
                      sl__json_type_name(obj));
        return false;
    }
    sl__jcheck_keys(d, obj, ptr, "\"create\"", allowed, NULL);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        char at[SL__JPTR_MAX];
        sl__jptr_key(at, ptr, key);
        uint64_t format;
        const char *name;
        if (strcmp(key, "format") == 0 && sl__jget_uint(d, v, at, 2, 3, &format)) {
            c->format = (int)format;
        } else if (strcmp(key, "dtype") == 0 && sl__jget_string(d, v, at, &name)) {
            struct sl_error err = SL_ERROR_INIT;
            c->has_dtype = sl_dtype_from_name(name, &c->dtype, &err) == SL_OK;
            if (!c->has_dtype)
                sl__jdiag_add_error(d, at, &err);
        } else if (strcmp(key, "shape") == 0) {
            (void)sl__jget_dims(d, v, at, 0, c->shape, &c->n_shape);
        } else if (strcmp(key, "chunks") == 0) {
            (void)sl__jget_dims(d, v, at, 1, c->chunks, &c->n_chunks);
        } else if (strcmp(key, "shards") == 0) {
            c->has_shards = json_is_null(v) || sl__jget_dims(d, v, at, 1, c->shards, &c->n_shards);
        } else if (strcmp(key, "codec") == 0) {
            create_parse_codec(doc, v, at, c);
        } else if (strcmp(key, "fill_value") == 0) {
            c->fill_value = v;
        } else if (strcmp(key, "dimension_names") == 0) {
            create_parse_names(doc, v, at, c);
        } else if (strcmp(key, "attributes") == 0) {
            if (json_is_object(v))
                c->attributes = v;
            else
                sl__jdiag_add(d, SL_EINVAL, at, "expected an object, found %s",
                              sl__json_type_name(v));
        }
    }
    if (d->count == before)
        create_check_lists(doc, ptr, c);
    if (c->format == 2 && c->n_shards > 0) {
        char at[SL__JPTR_MAX];
        sl__jptr_key(at, ptr, "shards");
        sl__jdiag_add(d, SL_EINVAL, at,
                      "Zarr v2 has no sharding; use \"format\": 3 or drop "
                      "\"shards\"");
    }
    return d->count == before;
}

/* ---- entries ------------------------------------------------------------------ */

static void
array_parse_entry(sl_graph_json *doc, struct sl__jarray *a, const json_t *v)
{
    struct sl__jdiag *d = &doc->diag;
    size_t before = d->count;
    if (!json_is_object(v)) {
        sl__jdiag_add(d, SL_EINVAL, a->ptr, "expected an array object {\"path\": ...}, found %s",
                      sl__json_type_name(v));
        a->bad = true;
        return;
    }
    sl__jcheck_keys(d, v, a->ptr, "an array", array_keys, NULL);
    char at[SL__JPTR_MAX];
    const json_t *f;
    sl__jptr_key(at, a->ptr, "path");
    if ((f = json_object_get(v, "path")) == NULL)
        sl__jdiag_add(d, SL_EINVAL, at, "missing the array's \"path\"");
    else if (sl__jget_string(d, f, at, &a->path))
        a->full_path = sl__jpath_join(doc, a->path, at);
    sl__jptr_key(at, a->ptr, "overwrite");
    if ((f = json_object_get(v, "overwrite")) != NULL)
        (void)sl__jget_overwrite(d, f, at, &a->overwrite, &a->in_place);
    sl__jptr_key(at, a->ptr, "missing_on_403");
    if ((f = json_object_get(v, "missing_on_403")) != NULL)
        (void)sl__jget_bool(d, f, at, &a->missing_on_403);
    sl__jptr_key(at, a->ptr, "endpoint");
    if ((f = json_object_get(v, "endpoint")) != NULL && sl__jget_string(d, f, at, &a->endpoint) &&
        strncmp(a->endpoint, "http://", 7) != 0 && strncmp(a->endpoint, "https://", 8) != 0)
        sl__jdiag_add(d, SL_EINVAL, at, "expected an http:// or https:// URL, found \"%s\"",
                      a->endpoint);
    sl__jptr_key(at, a->ptr, "region");
    if ((f = json_object_get(v, "region")) != NULL)
        (void)sl__jget_string(d, f, at, &a->region);
    sl__jptr_key(at, a->ptr, "like");
    if ((f = json_object_get(v, "like")) != NULL && sl__jget_string(d, f, at, &a->like_name))
        a->role = SL__JARRAY_CREATE;
    sl__jptr_key(at, a->ptr, "create");
    if ((f = json_object_get(v, "create")) != NULL) {
        a->role = SL__JARRAY_CREATE;
        (void)sl__jcreate_parse(doc, f, at, array_create_keys, &a->create);
    }
    sl__jptr_key(at, a->ptr, "comment");
    const char *comment;
    if ((f = json_object_get(v, "comment")) != NULL)
        (void)sl__jget_string(d, f, at, &comment);
    a->bad = d->count != before;
}

int
sl__jarrays_find(const sl_graph_json *doc, const char *name)
{
    for (size_t i = 0; i < doc->n_arrays; i++)
        if (strcmp(doc->arrays[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Resolve "like" names; report entries whose paths are the same. */
static void
arrays_link(sl_graph_json *doc)
{
    for (size_t i = 0; i < doc->n_arrays; i++) {
        struct sl__jarray *a = &doc->arrays[i];
        char at[SL__JPTR_MAX];
        if (a->like_name != NULL) {
            sl__jptr_key(at, a->ptr, "like");
            a->like = sl__jarrays_find(doc, a->like_name);
            if (a->like < 0) {
                sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                              "unknown array \"%s\": \"like\" names an entry of \"arrays\"",
                              a->like_name);
                a->bad = true;
            }
        }
        for (size_t j = 0; j < i && a->full_path != NULL; j++) {
            const struct sl__jarray *b = &doc->arrays[j];
            if (b->full_path == NULL || strcmp(a->full_path, b->full_path) != 0)
                continue;
            sl__jptr_key(at, a->ptr, "path");
            sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                          "array \"%s\" has the same path as array \"%s\": \"%s\"", a->name,
                          b->name, a->path);
            a->bad = true;
            break;
        }
    }
}

void
sl__jarrays_parse(sl_graph_json *doc, const json_t *arrays)
{
    size_t n = json_object_size(arrays);
    doc->arrays = n > 0 ? sl_alloc_zeroed(&doc->alloc, n, sizeof(struct sl__jarray), 0) : NULL;
    if (n > 0 && doc->arrays == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, "/arrays", "no memory for %zu arrays", n);
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)arrays, key, v)
    {
        struct sl__jarray *a = &doc->arrays[doc->n_arrays++];
        a->name = key;
        a->like = -1;
        a->writer = -1;
        sl__jptr_key(a->ptr, "/arrays", key);
        array_parse_entry(doc, a, v);
    }
    arrays_link(doc);
}

void
sl__jarrays_check_like(sl_graph_json *doc)
{
    for (size_t i = 0; i < doc->n_arrays; i++) {
        size_t k = i, steps = 0;
        bool loops = false;
        while (doc->arrays[k].like >= 0 && steps <= SL__JLIKE_MAX && !loops) {
            k = (size_t)doc->arrays[k].like;
            loops = k == i;
            steps++;
        }
        if (!loops && steps <= SL__JLIKE_MAX)
            continue;
        struct sl__jarray *a = &doc->arrays[i];
        char at[SL__JPTR_MAX];
        sl__jptr_key(at, a->ptr, "like");
        if (!a->bad && loops)
            sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                          "\"like\" loops: array \"%s\" is, through \"like\", like itself",
                          a->name);
        else if (!a->bad)
            sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                          "\"like\" chain from array \"%s\" loops or is longer than %d arrays",
                          a->name, SL__JLIKE_MAX);
        a->bad = true;
    }
}
