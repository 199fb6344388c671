/* SPDX-License-Identifier: MIT */
/*
 * Writing array metadata: zarr.json in the field order zarr-python uses, and
 * .zarray/.zattrs with sorted keys as zarr-python 2 writes them.  v2 zstd
 * compressors are written without a "checksum" key, which numcodecs 0.11
 * (Debian's python3-zarr 2.13) refuses.
 */
#include <jansson.h>
#include <string.h>

#include "zarr_internal.h"

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
        /* zarr-extensions: "checksum" should be omitted when false. */
        ok = put(conf, "level", json_integer(c->u.zstd.level)) &&
             (!c->u.zstd.checksum || put(conf, "checksum", json_true()));
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

/* ---- v2 ------------------------------------------------------------------------ */

static json_t *
compressor_v2_json(const struct sl__chain *ch)
{
    const struct sl__codec *c = ch->n > ch->n_aa + 1 ? &ch->c[ch->n - 1] : NULL;
    if (c == NULL)
        return json_null();
    json_t *o = json_object();
    bool ok = o != NULL;
    switch (c->id) {
    case SL__CODEC_ZSTD:
        ok = ok && put(o, "id", json_string("zstd")) &&
             put(o, "level", json_integer(c->u.zstd.level));
        break;
    case SL__CODEC_ZLIB:
    case SL__CODEC_GZIP:
        ok = ok && put(o, "id", json_string(sl__codec_name(c->id))) &&
             put(o, "level", json_integer(c->u.gzip.level));
        break;
    case SL__CODEC_BLOSC:
        ok = ok && put(o, "id", json_string("blosc")) &&
             put(o, "cname", json_string(c->u.blosc.cname)) &&
             put(o, "clevel", json_integer(c->u.blosc.clevel)) &&
             put(o, "shuffle", json_integer(c->u.blosc.shuffle)) &&
             put(o, "blocksize", json_integer(c->u.blosc.blocksize));
        break;
    default:
        ok = false;
        break;
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static sl_status
zattrs_v2_write(const struct sl__meta *m, struct sl_buf *zattrs, struct sl_error *err)
{
    json_t *attrs = attributes_json(m);
    if (attrs == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory writing .zattrs");
    if (m->has_dim_names) {
        json_t *dims = json_array();
        for (uint32_t d = 0; dims != NULL && d < m->rank; d++)
            if (!push(dims, json_string(m->dim_names[d] != NULL ? m->dim_names[d] : ""))) {
                json_decref(dims);
                dims = NULL;
            }
        if (!put(attrs, "_ARRAY_DIMENSIONS", dims)) {
            json_decref(attrs);
            return sl_error_set(err, SL_ENOMEM, NULL, "out of memory writing .zattrs");
        }
    }
    sl_status st = SL_OK;
    zattrs->size = 0;
    if (json_object_size(attrs) > 0)
        st = sl__json_dump(attrs, JSON_INDENT(4) | JSON_SORT_KEYS, zattrs, err);
    json_decref(attrs);
    return st;
}

sl_status
sl__meta_write_v2(const struct sl__meta *m, struct sl_buf *zarray, struct sl_buf *zattrs,
                  struct sl_error *err)
{
    if (m->sharded)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "Zarr v2 has no sharding");
    char typestr[8];
    const struct sl__codec *bytes = &m->chain.c[m->chain.n_aa];
    if (sl_dtype_typestr(m->dtype, bytes->u.bytes.endian, typestr, sizeof(typestr), NULL) != SL_OK)
        return sl_error_set(err, SL_EINVAL, NULL, "invalid data type");
    json_t *fill = NULL;
    SL_TRY(sl__fill_to_json(m->dtype, m->fill, m->fill_null, 2, &fill, err));
    char sep[2] = {m->sep, '\0'};
    json_t *root = json_object();
    bool ok = root != NULL && put(root, "zarr_format", json_integer(2)) &&
              put(root, "shape", dims_json(m->rank, m->shape)) &&
              put(root, "chunks", dims_json(m->rank, m->chunk)) &&
              put(root, "dtype", json_string(typestr)) &&
              put(root, "compressor", compressor_v2_json(&m->chain)) &&
              put(root, "fill_value", json_incref(fill)) &&
              put(root, "order", json_string(m->chain.n_aa > 0 ? "F" : "C")) &&
              put(root, "filters", json_null()) &&
              put(root, "dimension_separator", json_string(sep));
    json_decref(fill);
    if (!ok) {
        json_decref(root);
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory writing .zarray");
    }
    sl_status st = sl__json_dump(root, JSON_INDENT(4) | JSON_SORT_KEYS, zarray, err);
    json_decref(root);
    if (st == SL_OK)
        st = zattrs_v2_write(m, zattrs, err);
    return st;
}
