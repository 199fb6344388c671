/* SPDX-License-Identifier: MIT */
/*
 * Zarr v3 metadata: zarr.json of arrays and groups, parsed into and written
 * from struct sl__meta.
 *
 * DESIGN: the must_understand rule is applied at the top level: an unknown
 * field is ignored only when it is an object whose "must_understand" is
 * false ("consolidated_metadata" of groups is known and ignored).  Unknown
 * codecs, chunk grids, key encodings, storage transformers and data types
 * are EUNSUPPORTED naming them; unknown keys inside a known codec's
 * configuration are EPARSE, as zarr-python treats them.  Codec names are
 * checked before the data type, so an array of strings stored with
 * vlen-utf8 reports the codec it lacks.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "zarr_internal.h"

static const char *const v3_codec_names[] = {"bytes", "transpose", "crc32c",          "zstd",
                                             "gzip",  "blosc",     "sharding_indexed"};

/* Name of codec entry `e` (an object with "name", or a bare string). */
static const char *
codec_entry_name(const json_t *e)
{
    if (json_is_string(e))
        return json_string_value(e);
    return json_string_value(json_object_get(e, "name"));
}

/* Check that every codec named in `codecs` (at `path`), nested ones too, is
 * one sluice implements. */
static sl_status
v3_codec_names_check(const json_t *codecs, const char *path, struct sl_error *err)
{
    if (!json_is_array(codecs))
        return sl_error_set_path(err, SL_EPARSE, path, "expected an array of codecs");
    for (size_t i = 0; i < json_array_size(codecs); i++) {
        const json_t *e = json_array_get(codecs, i);
        char at[128];
        snprintf(at, sizeof(at), "%s/%zu", path, i);
        const char *name = codec_entry_name(e);
        if (name == NULL)
            return sl_error_set_path(err, SL_EPARSE, at, "a codec needs a \"name\" string");
        bool known = false;
        for (size_t k = 0; k < SL_ARRAY_LEN(v3_codec_names) && !known; k++)
            known = strcmp(name, v3_codec_names[k]) == 0;
        if (!known)
            return sl_error_set_path(err, SL_EUNSUPPORTED, at,
                                     "codec \"%s\" is not supported by sluice", name);
        const json_t *conf = json_object_get(e, "configuration");
        if (strcmp(name, "sharding_indexed") == 0 && json_is_object(conf)) {
            char sub[160];
            const json_t *inner = json_object_get(conf, "codecs");
            snprintf(sub, sizeof(sub), "%s/configuration/codecs", at);
            if (inner != NULL)
                SL_TRY(v3_codec_names_check(inner, sub, err));
            inner = json_object_get(conf, "index_codecs");
            snprintf(sub, sizeof(sub), "%s/configuration/index_codecs", at);
            if (inner != NULL)
                SL_TRY(v3_codec_names_check(inner, sub, err));
        }
    }
    return SL_OK;
}

/* The configuration object of codec entry `e`, checked against `keys`. */
static sl_status
codec_config(const json_t *e, const char *path, const char *const *keys, const json_t **out,
             struct sl_error *err)
{
    static const char *const entry_keys[] = {"name", "configuration", "must_understand", NULL};
    *out = NULL;
    if (json_is_string(e))
        return SL_OK;
    if (!json_is_object(e))
        return sl_error_set_path(err, SL_EPARSE, path, "a codec is an object");
    SL_TRY(sl__json_only_keys(e, path, entry_keys, err));
    const json_t *conf = json_object_get(e, "configuration");
    if (conf == NULL)
        return SL_OK;
    char at[120];
    snprintf(at, sizeof(at), "%s/configuration", path);
    if (!json_is_object(conf))
        return sl_error_set_path(err, SL_EPARSE, at, "expected an object");
    *out = conf;
    return sl__json_only_keys(conf, at, keys, err);
}

/* Field `key` of `conf` (may be NULL) and its JSON pointer. */
static const json_t *
conf_get(const json_t *conf, const char *path, const char *key, char *at, size_t size)
{
    snprintf(at, size, "%s/configuration/%s", path, key);
    return conf != NULL ? json_object_get(conf, key) : NULL;
}

static sl_status
v3_parse_bytes(const json_t *conf, const char *path, struct sl__codec *c, struct sl_error *err)
{
    char at[128];
    const json_t *v = conf_get(conf, path, "endian", at, sizeof(at));
    c->u.bytes.has_endian = v != NULL;
    c->u.bytes.endian = SL_ENDIAN_LITTLE;
    if (v == NULL)
        return SL_OK;
    const char *s = json_string_value(v);
    if (s != NULL && strcmp(s, "big") == 0)
        c->u.bytes.endian = SL_ENDIAN_BIG;
    else if (s == NULL || strcmp(s, "little") != 0)
        return sl_error_set_path(err, SL_EPARSE, at, "expected \"little\" or \"big\"");
    return SL_OK;
}

static sl_status
v3_parse_transpose(const json_t *conf, const char *path, uint32_t rank, struct sl__codec *c,
                   struct sl_error *err)
{
    char at[128];
    const json_t *v = conf_get(conf, path, "order", at, sizeof(at));
    const char *s = json_string_value(v);
    if (s != NULL && (strcmp(s, "C") == 0 || strcmp(s, "F") == 0)) {
        /* The early v3 drafts' spelling: identity or reversal. */
        for (uint32_t k = 0; k < rank; k++)
            c->u.transpose.order[k] = s[0] == 'C' ? k : rank - 1 - k;
        return SL_OK;
    }
    uint64_t order[SL_MAX_RANK];
    uint32_t n = 0;
    if (v == NULL)
        return sl_error_set_path(err, SL_EPARSE, at, "transpose needs \"order\"");
    SL_TRY(sl__json_dims(v, at, 0, order, SL_MAX_RANK, &n, err));
    if (n != rank)
        return sl_error_set_path(err, SL_EPARSE, at, "order has %u entries, the array %u dims", n,
                                 rank);
    for (uint32_t k = 0; k < rank; k++)
        c->u.transpose.order[k] = order[k] < SL_MAX_RANK ? (uint32_t)order[k] : SL_MAX_RANK;
    return SL_OK;
}

static sl_status
v3_parse_blosc(const json_t *conf, const char *path, sl_dtype dt, struct sl__codec *c,
               struct sl_error *err)
{
    char at[128];
    const json_t *v = conf_get(conf, path, "cname", at, sizeof(at));
    const char *cname = json_string_value(v);
    if (cname == NULL || strlen(cname) >= sizeof(c->u.blosc.cname))
        return sl_error_set_path(err, SL_EPARSE, at, "blosc needs a \"cname\" string");
    strcpy(c->u.blosc.cname, cname);
    SL_TRY(sl__json_int(conf_get(conf, path, "clevel", at, sizeof(at)), at, 0, 9,
                        &c->u.blosc.clevel, err));
    v = conf_get(conf, path, "shuffle", at, sizeof(at));
    const char *sh = v != NULL ? json_string_value(v) : "noshuffle";
    static const char *const shuffles[] = {"noshuffle", "shuffle", "bitshuffle"};
    c->u.blosc.shuffle = -1;
    for (int k = 0; k < 3 && sh != NULL; k++)
        if (strcmp(sh, shuffles[k]) == 0)
            c->u.blosc.shuffle = k;
    if (c->u.blosc.shuffle < 0)
        return sl_error_set_path(err, SL_EPARSE, at,
                                 "expected \"noshuffle\", \"shuffle\" or \"bitshuffle\"");
    int typesize = (int)sl_dtype_size(dt), blocksize = 0;
    v = conf_get(conf, path, "typesize", at, sizeof(at));
    if (v != NULL)
        SL_TRY(sl__json_int(v, at, 1, 255, &typesize, err));
    v = conf_get(conf, path, "blocksize", at, sizeof(at));
    if (v != NULL)
        SL_TRY(sl__json_int(v, at, 0, 1 << 30, &blocksize, err));
    c->u.blosc.typesize = (uint32_t)typesize;
    c->u.blosc.blocksize = (uint32_t)blocksize;
    return SL_OK;
}

/* Parse one known, non-sharding codec entry. */
static sl_status
v3_codec_parse(const json_t *e, const char *path, uint32_t rank, sl_dtype dt, struct sl__codec *c,
               struct sl_error *err)
{
    static const char *const k_bytes[] = {"endian", NULL}, *const k_transpose[] = {"order", NULL},
                             *const k_none[] = {NULL},
                             *const k_zstd[] = {"level", "checksum", NULL},
                             *const k_gzip[] = {"level", NULL}, *const k_blosc[] = {"cname",
                                                                                    "clevel",
                                                                                    "shuffle",
                                                                                    "typesize",
                                                                                    "blocksize",
                                                                                    NULL};
    const char *name = codec_entry_name(e);
    const json_t *conf, *v;
    char at[128];
    memset(c, 0, sizeof(*c));
    if (strcmp(name, "bytes") == 0) {
        c->id = SL__CODEC_BYTES;
        SL_TRY(codec_config(e, path, k_bytes, &conf, err));
        return v3_parse_bytes(conf, path, c, err);
    }
    if (strcmp(name, "transpose") == 0) {
        c->id = SL__CODEC_TRANSPOSE;
        SL_TRY(codec_config(e, path, k_transpose, &conf, err));
        return v3_parse_transpose(conf, path, rank, c, err);
    }
    if (strcmp(name, "crc32c") == 0) {
        c->id = SL__CODEC_CRC32C;
        return codec_config(e, path, k_none, &conf, err);
    }
    if (strcmp(name, "zstd") == 0) {
        c->id = SL__CODEC_ZSTD;
        SL_TRY(codec_config(e, path, k_zstd, &conf, err));
        if ((v = conf_get(conf, path, "level", at, sizeof(at))) != NULL)
            SL_TRY(sl__json_int(v, at, -131072, 22, &c->u.zstd.level, err));
        if ((v = conf_get(conf, path, "checksum", at, sizeof(at))) != NULL && !json_is_boolean(v))
            return sl_error_set_path(err, SL_EPARSE, at, "expected true or false");
        c->u.zstd.checksum = json_is_true(v);
        return SL_OK;
    }
    if (strcmp(name, "gzip") == 0) {
        c->id = SL__CODEC_GZIP;
        SL_TRY(codec_config(e, path, k_gzip, &conf, err));
        return sl__json_int(conf_get(conf, path, "level", at, sizeof(at)), at, 0, 9,
                            &c->u.gzip.level, err);
    }
    c->id = SL__CODEC_BLOSC;
    SL_TRY(codec_config(e, path, k_blosc, &conf, err));
    return v3_parse_blosc(conf, path, dt, c, err);
}

/* Parse a list of non-sharding codecs into `ch`. */
static sl_status
v3_chain_parse(const json_t *codecs, const char *path, uint32_t rank, sl_dtype dt,
               struct sl__chain *ch, struct sl_error *err)
{
    size_t n = json_array_size(codecs);
    if (n > SL__CHAIN_MAX)
        return sl_error_set_path(err, SL_EUNSUPPORTED, path, "%zu codecs; sluice handles %d", n,
                                 SL__CHAIN_MAX);
    memset(ch, 0, sizeof(*ch));
    for (size_t i = 0; i < n; i++) {
        char at[128];
        snprintf(at, sizeof(at), "%s/%zu", path, i);
        const json_t *e = json_array_get(codecs, i);
        if (strcmp(codec_entry_name(e), "sharding_indexed") == 0)
            return sl_error_set_path(err, SL_EUNSUPPORTED, at,
                                     "sharding_indexed inside a shard (nested sharding) is not "
                                     "supported");
        SL_TRY(v3_codec_parse(e, at, rank, dt, &ch->c[i], err));
    }
    ch->n = (uint32_t)n;
    return SL_OK;
}

static sl_status
v3_sharding_parse(const json_t *e, const char *path, struct sl__meta *m, struct sl_error *err)
{
    static const char *const keys[] = {"chunk_shape", "codecs", "index_codecs", "index_location",
                                       NULL};
    const json_t *conf, *v;
    char at[128];
    SL_TRY(codec_config(e, path, keys, &conf, err));
    if (conf == NULL)
        return sl_error_set_path(err, SL_EPARSE, path, "sharding_indexed needs a configuration");
    uint32_t n = 0;
    v = conf_get(conf, path, "chunk_shape", at, sizeof(at));
    SL_TRY(sl__json_dims(v, at, 1, m->inner, SL_MAX_RANK, &n, err));
    if (n != m->rank)
        return sl_error_set_path(err, SL_EPARSE, at, "%u entries for a %u-d array", n, m->rank);
    m->sharded = true;
    v = conf_get(conf, path, "codecs", at, sizeof(at));
    if (v == NULL)
        return sl_error_set_path(err, SL_EPARSE, at, "sharding_indexed needs \"codecs\"");
    SL_TRY(v3_chain_parse(v, at, m->rank, m->dtype, &m->chain, err));
    v = conf_get(conf, path, "index_codecs", at, sizeof(at));
    if (v == NULL) {
        m->index_chain = (struct sl__chain){.n = 2};
        m->index_chain.c[0].id = SL__CODEC_BYTES;
        m->index_chain.c[0].u.bytes.has_endian = true;
        m->index_chain.c[1].id = SL__CODEC_CRC32C;
    } else {
        SL_TRY(v3_chain_parse(v, at, 2, SL_DTYPE_U64, &m->index_chain, err));
    }
    v = conf_get(conf, path, "index_location", at, sizeof(at));
    const char *loc = v != NULL ? json_string_value(v) : "end";
    if (loc == NULL || (strcmp(loc, "end") != 0 && strcmp(loc, "start") != 0))
        return sl_error_set_path(err, SL_EPARSE, at, "expected \"start\" or \"end\"");
    m->index_at_start = strcmp(loc, "start") == 0;
    return SL_OK;
}

static sl_status
v3_codecs_parse(const json_t *codecs, struct sl__meta *m, struct sl_error *err)
{
    size_t n = json_array_size(codecs);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(codec_entry_name(json_array_get(codecs, i)), "sharding_indexed") != 0)
            continue;
        if (n != 1)
            return sl_error_set_path(err, SL_EUNSUPPORTED, "/codecs",
                                     "sharding_indexed must be the only codec of the array "
                                     "(codecs around it are not supported)");
        return v3_sharding_parse(json_array_get(codecs, 0), "/codecs/0", m, err);
    }
    return v3_chain_parse(codecs, "/codecs", m->rank, m->dtype, &m->chain, err);
}

/* ---- top-level fields ------------------------------------------------------------ */

static const char *const v3_array_fields[] = {
    "zarr_format",        "node_type",  "shape",  "data_type",  "chunk_grid",
    "chunk_key_encoding", "fill_value", "codecs", "attributes", "storage_transformers",
    "dimension_names",    NULL};

/* Apply the must_understand rule to fields not in `known`. */
static sl_status
v3_unknown_fields(const json_t *root, const char *const *known, struct sl_error *err)
{
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)root, key, value)
    {
        bool ok = false;
        for (const char *const *k = known; *k != NULL && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (ok)
            continue;
        const json_t *mu = json_is_object(value) ? json_object_get(value, "must_understand") : NULL;
        if (json_is_false(mu))
            continue;
        char at[128];
        snprintf(at, sizeof(at), "/%s", key);
        return sl_error_set_path(err, SL_EUNSUPPORTED, at,
                                 "unknown field \"%s\" must be understood (it is not an "
                                 "object with \"must_understand\": false)",
                                 key);
    }
    return SL_OK;
}

static sl_status
v3_header(const json_t *root, const char *want_type, struct sl_error *err)
{
    if (!json_is_object(root))
        return sl_error_set_path(err, SL_EPARSE, "", "zarr.json must be a JSON object");
    const json_t *f = json_object_get(root, "zarr_format");
    if (!json_is_integer(f) || json_integer_value(f) != 3)
        return sl_error_set_path(err, SL_EPARSE, "/zarr_format", "expected 3");
    const char *t = json_string_value(json_object_get(root, "node_type"));
    if (t == NULL || (strcmp(t, "array") != 0 && strcmp(t, "group") != 0))
        return sl_error_set_path(err, SL_EPARSE, "/node_type", "expected \"array\" or \"group\"");
    if (strcmp(t, want_type) != 0)
        return sl_error_set_path(err, SL_EINVAL, "/node_type", "this node is a %s, not a%s %s", t,
                                 want_type[0] == 'a' ? "n" : "", want_type);
    return SL_OK;
}

static sl_status
v3_grid_and_keys(const json_t *root, struct sl__meta *m, struct sl_error *err)
{
    uint32_t n = 0;
    const json_t *g = json_object_get(root, "chunk_grid");
    const char *gname = json_string_value(json_object_get(g, "name"));
    if (gname == NULL)
        return sl_error_set_path(err, SL_EPARSE, "/chunk_grid", "expected {\"name\": ...}");
    if (strcmp(gname, "regular") != 0)
        return sl_error_set_path(err, SL_EUNSUPPORTED, "/chunk_grid/name",
                                 "chunk grid \"%s\" is not supported (only \"regular\")", gname);
    const json_t *cs = json_object_get(json_object_get(g, "configuration"), "chunk_shape");
    SL_TRY(sl__json_dims(cs, "/chunk_grid/configuration/chunk_shape", 1, m->chunk, SL_MAX_RANK, &n,
                         err));
    if (n != m->rank)
        return sl_error_set_path(err, SL_EPARSE, "/chunk_grid/configuration/chunk_shape",
                                 "%u entries for a %u-d array", n, m->rank);
    const json_t *k = json_object_get(root, "chunk_key_encoding");
    const char *kname = json_string_value(json_object_get(k, "name"));
    if (kname == NULL)
        return sl_error_set_path(err, SL_EPARSE, "/chunk_key_encoding", "expected {\"name\": ...}");
    if (strcmp(kname, "default") != 0 && strcmp(kname, "v2") != 0)
        return sl_error_set_path(err, SL_EUNSUPPORTED, "/chunk_key_encoding/name",
                                 "chunk key encoding \"%s\" is not supported", kname);
    m->keys = kname[0] == 'd' ? SL__KEYS_DEFAULT : SL__KEYS_V2;
    m->sep = m->keys == SL__KEYS_DEFAULT ? '/' : '.';
    const json_t *sep = json_object_get(json_object_get(k, "configuration"), "separator");
    if (sep != NULL) {
        const char *s = json_string_value(sep);
        if (s == NULL || (strcmp(s, "/") != 0 && strcmp(s, ".") != 0))
            return sl_error_set_path(err, SL_EPARSE, "/chunk_key_encoding/configuration/separator",
                                     "expected \"/\" or \".\"");
        m->sep = s[0];
    }
    return SL_OK;
}

/* Copy `text` with the meta's allocator. */
static sl_status
meta_strdup(struct sl__meta *m, const char *text, char **out, struct sl_error *err)
{
    *out = sl_strdup(&m->alloc, text);
    return *out != NULL ? SL_OK : sl_error_set(err, SL_ENOMEM, NULL, "out of memory");
}

sl_status
sl__meta_set_attributes(struct sl__meta *m, const json_t *attrs, struct sl_error *err)
{
    struct sl_buf text = SL_BUF_INIT;
    sl_status st = sl__json_dump(attrs, JSON_COMPACT, &text, err);
    if (st == SL_OK)
        st = meta_strdup(m, (const char *)text.data, &m->attributes, err);
    sl_buf_fini(&text);
    return st;
}

static sl_status
v3_dims_and_attrs(const json_t *root, struct sl__meta *m, struct sl_error *err)
{
    const json_t *st = json_object_get(root, "storage_transformers");
    if (st != NULL && (!json_is_array(st) || json_array_size(st) > 0))
        return sl_error_set_path(err, SL_EUNSUPPORTED, "/storage_transformers",
                                 "storage transformers are not supported");
    const json_t *dn = json_object_get(root, "dimension_names");
    if (dn != NULL && !json_is_null(dn)) {
        if (!json_is_array(dn) || json_array_size(dn) != m->rank)
            return sl_error_set_path(err, SL_EPARSE, "/dimension_names",
                                     "expected %u names or nulls", m->rank);
        m->has_dim_names = true;
        for (uint32_t d = 0; d < m->rank; d++) {
            const json_t *e = json_array_get(dn, d);
            if (json_is_null(e))
                continue;
            if (!json_is_string(e))
                return sl_error_set_path(err, SL_EPARSE, "/dimension_names",
                                         "entry %u is neither a string nor null", d);
            SL_TRY(meta_strdup(m, json_string_value(e), &m->dim_names[d], err));
        }
    }
    const json_t *attrs = json_object_get(root, "attributes");
    if (attrs != NULL && !json_is_object(attrs))
        return sl_error_set_path(err, SL_EPARSE, "/attributes", "expected an object");
    if (attrs == NULL)
        return meta_strdup(m, "{}", &m->attributes, err);
    return sl__meta_set_attributes(m, attrs, err);
}

static sl_status
v3_array_parse(const json_t *root, struct sl__meta *m, struct sl_error *err)
{
    SL_TRY(v3_header(root, "array", err));
    SL_TRY(v3_unknown_fields(root, v3_array_fields, err));
    const json_t *codecs = json_object_get(root, "codecs");
    if (codecs == NULL)
        return sl_error_set_path(err, SL_EPARSE, "/codecs", "missing");
    SL_TRY(v3_codec_names_check(codecs, "/codecs", err));
    const json_t *dt = json_object_get(root, "data_type");
    if (json_is_object(dt))
        return sl_error_set_path(err, SL_EUNSUPPORTED, "/data_type",
                                 "extension data type \"%s\" is not supported",
                                 json_string_value(json_object_get(dt, "name")));
    if (!json_is_string(dt))
        return sl_error_set_path(err, SL_EPARSE, "/data_type", "expected a data type name");
    struct sl_error dterr = SL_ERROR_INIT;
    if (sl_dtype_from_name(json_string_value(dt), &m->dtype, &dterr) != SL_OK)
        return sl_error_set_path(err, dterr.code, "/data_type", "%s", dterr.text);
    m->zarr_format = 3;
    SL_TRY(sl__json_dims(json_object_get(root, "shape"), "/shape", 0, m->shape, SL_MAX_RANK,
                         &m->rank, err));
    SL_TRY(v3_grid_and_keys(root, m, err));
    const json_t *fill = json_object_get(root, "fill_value");
    if (fill == NULL)
        return sl_error_set_path(err, SL_EPARSE, "/fill_value", "missing");
    SL_TRY(sl__fill_parse(fill, m->dtype, 3, m->fill, &m->fill_null, "/fill_value", err));
    SL_TRY(v3_codecs_parse(codecs, m, err));
    SL_TRY(v3_dims_and_attrs(root, m, err));
    return sl__meta_check(m, err);
}

sl_status
sl__meta_parse_v3(const char *text, size_t n, const char *source, struct sl__meta *m,
                  struct sl_error *err)
{
    json_t *root;
    SL_TRY(sl__json_parse(text, n, source, &root, err));
    sl_status st = v3_array_parse(root, m, err);
    json_decref(root);
    if (st != SL_OK)
        sl_error_set_source(err, source);
    return st;
}

sl_status
sl__group_parse_v3(const char *text, size_t n, const char *source, struct sl_buf *attrs,
                   struct sl_error *err)
{
    static const char *const fields[] = {"zarr_format", "node_type", "attributes",
                                         "consolidated_metadata", NULL};
    json_t *root;
    SL_TRY(sl__json_parse(text, n, source, &root, err));
    sl_status st = v3_header(root, "group", err);
    if (st == SL_OK)
        st = v3_unknown_fields(root, fields, err);
    const json_t *a = json_object_get(root, "attributes");
    if (st == SL_OK && a != NULL && !json_is_object(a))
        st = sl_error_set_path(err, SL_EPARSE, "/attributes", "expected an object");
    if (st == SL_OK && a != NULL) {
        st = sl__json_dump(a, JSON_COMPACT, attrs, err);
    } else if (st == SL_OK) {
        attrs->size = 0;
        st = sl_buf_append(attrs, "{}", 3, err);
        attrs->size = 2;
    }
    json_decref(root);
    if (st != SL_OK)
        sl_error_set_source(err, source);
    return st;
}
