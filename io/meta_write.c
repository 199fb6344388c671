/* SPDX-License-Identifier: MIT */
/*
 * Writing array metadata: zarr.json in the field order zarr-python uses.
 */
#include <jansson.h>
#include <string.h>

#include "io_internal.h"

/* Append `v` (a new reference, may be NULL) to array `a`, consuming it even
 * on failure, as jansson's _new functions do; false on failure. */
static bool
push(json_t *a, json_t *v)
{
    return v != NULL && json_array_append_new(a, v) == 0;
}

/* Set `key` of object `o` to `v` (consumed, may be NULL); false on failure. */
static bool
put(json_t *o, const char *key, json_t *v)
{
    return v != NULL && json_object_set_new(o, key, v) == 0;
}

static json_t *
dims_json(uint32_t rank, const uint64_t *dims)
{
    json_t *a = json_array();
    for (uint32_t d = 0; a != NULL && d < rank; d++)
        if (!push(a, json_integer((json_int_t)dims[d]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* A {"name": ..., "configuration": ...} entry; `conf` (consumed) may be NULL. */
static json_t *
named(const char *name, json_t *conf)
{
    json_t *o = json_object();
    if (o == NULL || !put(o, "name", json_string(name))) {
        json_decref(o);
        json_decref(conf);
        return NULL;
    }
    if (conf != NULL && !put(o, "configuration", conf)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *
codec_v3_json(const struct sl__codec *c, uint32_t rank)
{
    static const char *const shuffles[] = {"noshuffle", "shuffle", "bitshuffle"};
    json_t *conf = json_object();
    if (conf == NULL)
        return NULL;
    bool ok = true;
    switch (c->id) {
    case SL__CODEC_BYTES:
        if (!c->u.bytes.has_endian) {
            json_decref(conf);
            return named("bytes", NULL);
        }
        ok =
            put(conf, "endian", json_string(c->u.bytes.endian == SL_ENDIAN_BIG ? "big" : "little"));
        break;
    case SL__CODEC_TRANSPOSE: {
        uint64_t order[SL_MAX_RANK];
        for (uint32_t k = 0; k < rank; k++)
            order[k] = c->u.transpose.order[k];
        ok = put(conf, "order", dims_json(rank, order));
        break;
    }
    case SL__CODEC_CRC32C:
        json_decref(conf);
        return named("crc32c", NULL);
    case SL__CODEC_ZSTD:
        ok = put(conf, "level", json_integer(c->u.zstd.level)) &&
             put(conf, "checksum", json_boolean(c->u.zstd.checksum));
        break;
    case SL__CODEC_GZIP:
    case SL__CODEC_ZLIB:
        ok = put(conf, "level", json_integer(c->u.gzip.level));
        break;
    case SL__CODEC_BLOSC:
        ok = put(conf, "typesize", json_integer(c->u.blosc.typesize)) &&
             put(conf, "cname", json_string(c->u.blosc.cname)) &&
             put(conf, "clevel", json_integer(c->u.blosc.clevel)) &&
             put(conf, "shuffle", json_string(shuffles[c->u.blosc.shuffle % 3])) &&
             put(conf, "blocksize", json_integer(c->u.blosc.blocksize));
        break;
    default:
        ok = false;
        break;
    }
    if (!ok) {
        json_decref(conf);
        return NULL;
    }
    return named(c->id == SL__CODEC_ZLIB ? "gzip" : sl__codec_name(c->id), conf);
}

static json_t *
chain_v3_json(const struct sl__chain *ch, uint32_t rank)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a != NULL && i < ch->n; i++)
        if (!push(a, codec_v3_json(&ch->c[i], rank))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *
codecs_v3_json(const struct sl__meta *m)
{
    if (!m->sharded)
        return chain_v3_json(&m->chain, m->rank);
    json_t *conf = json_object();
    if (conf == NULL || !put(conf, "chunk_shape", dims_json(m->rank, m->inner)) ||
        !put(conf, "codecs", chain_v3_json(&m->chain, m->rank)) ||
        !put(conf, "index_codecs", chain_v3_json(&m->index_chain, 2)) ||
        !put(conf, "index_location", json_string(m->index_at_start ? "start" : "end"))) {
        json_decref(conf);
        return NULL;
    }
    json_t *a = json_array();
    if (a == NULL || !push(a, named("sharding_indexed", conf))) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static json_t *
key_encoding_json(const struct sl__meta *m)
{
    char sep[2] = {m->sep, '\0'};
    json_t *conf = json_object();
    if (conf == NULL || !put(conf, "separator", json_string(sep))) {
        json_decref(conf);
        return NULL;
    }
    return named(m->keys == SL__KEYS_DEFAULT ? "default" : "v2", conf);
}

static json_t *
dim_names_json(const struct sl__meta *m)
{
    json_t *a = json_array();
    for (uint32_t d = 0; a != NULL && d < m->rank; d++)
        if (!push(a, m->dim_names[d] != NULL ? json_string(m->dim_names[d]) : json_null())) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *
attributes_json(const struct sl__meta *m)
{
    return json_loads(m->attributes != NULL ? m->attributes : "{}", 0, NULL);
}

sl_status
sl__meta_write_v3(const struct sl__meta *m, struct sl_buf *out, struct sl_error *err)
{
    json_t *fill = NULL;
    SL_TRY(sl__fill_to_json(m->dtype, m->fill, false, 3, &fill, err));
    json_t *grid_conf = json_object(), *root = json_object();
    bool ok =
        root != NULL && grid_conf != NULL &&
        put(grid_conf, "chunk_shape", dims_json(m->rank, m->chunk)) &&
        put(root, "shape", dims_json(m->rank, m->shape)) &&
        put(root, "data_type", json_string(sl_dtype_name(m->dtype))) &&
        put(root, "chunk_grid", named("regular", json_incref(grid_conf))) &&
        put(root, "chunk_key_encoding", key_encoding_json(m)) &&
        put(root, "fill_value", json_incref(fill)) && put(root, "codecs", codecs_v3_json(m)) &&
        put(root, "attributes", attributes_json(m)) && put(root, "zarr_format", json_integer(3)) &&
        put(root, "node_type", json_string("array")) &&
        put(root, "storage_transformers", json_array()) &&
        (!m->has_dim_names || put(root, "dimension_names", dim_names_json(m)));
    json_decref(fill);
    json_decref(grid_conf);
    if (!ok) {
        json_decref(root);
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory writing zarr.json");
    }
    sl_status st = sl__json_dump(root, JSON_INDENT(2), out, err);
    json_decref(root);
    return st;
}
