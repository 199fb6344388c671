/* SPDX-License-Identifier: MIT */
/*
 * Zarr v2 metadata: .zarray (and .zattrs) parsed into struct sl__meta.  A
 * v2 array becomes the same codec chain a v3 array would have: a reversing
 * transpose for order "F", the bytes codec in the dtype's byte order, and
 * the compressor.  Filters are refused naming them; so are compressors
 * sluice lacks.  Unknown keys are ignored, as zarr-python 2 does; a zstd
 * "checksum" key is accepted and ignored (newer numcodecs writes it, older
 * numcodecs rejects it, so sluice never writes it).  xarray's
 * _ARRAY_DIMENSIONS attribute supplies dimension names.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "zarr_internal.h"

static sl_status
v2_filters(const json_t *filters, struct sl_error *err)
{
    if (filters == NULL || json_is_null(filters) ||
        (json_is_array(filters) && json_array_size(filters) == 0))
        return SL_OK;
    if (!json_is_array(filters))
        return sl_error_set_path(err, SL_EPARSE, "/filters", "expected null or an array");
    char names[120] = "";
    size_t len = 0, n = json_array_size(filters);
    for (size_t i = 0; i < n; i++) {
        const char *id = json_string_value(json_object_get(json_array_get(filters, i), "id"));
        sl__strbuf_append(names, sizeof(names), &len, "%s\"%s\"", i > 0 ? ", " : "",
                          id != NULL ? id : "?");
    }
    return sl_error_set_path(err, SL_EUNSUPPORTED, "/filters",
                             "filter%s %s %s not supported by sluice (v2 filters are not read)",
                             n > 1 ? "s" : "", names, n > 1 ? "are" : "is");
}

/* An optional integer field of a compressor config. */
static sl_status
v2_int(const json_t *c, const char *key, long long lo, long long hi, int dflt, int *out,
       struct sl_error *err)
{
    const json_t *v = json_object_get(c, key);
    char at[64];
    snprintf(at, sizeof(at), "/compressor/%s", key);
    *out = dflt;
    return v != NULL ? sl__json_int(v, at, lo, hi, out, err) : SL_OK;
}

static sl_status
v2_blosc(const json_t *c, sl_dtype dt, struct sl__codec *out, struct sl_error *err)
{
    out->id = SL__CODEC_BLOSC;
    const char *cname = json_string_value(json_object_get(c, "cname"));
    if (cname == NULL)
        cname = "lz4";
    if (strlen(cname) >= sizeof(out->u.blosc.cname))
        return sl_error_set_path(err, SL_EPARSE, "/compressor/cname", "name too long");
    strcpy(out->u.blosc.cname, cname);
    int shuffle, blocksize;
    SL_TRY(v2_int(c, "clevel", 0, 9, 5, &out->u.blosc.clevel, err));
    SL_TRY(v2_int(c, "shuffle", -1, 2, 1, &shuffle, err));
    SL_TRY(v2_int(c, "blocksize", 0, 1 << 30, 0, &blocksize, err));
    size_t es = sl_dtype_size(dt);
    /* numcodecs' AUTOSHUFFLE: bit shuffle for one-byte items, else byte shuffle. */
    out->u.blosc.shuffle = shuffle >= 0 ? shuffle : es == 1 ? 2 : 1;
    out->u.blosc.typesize = (uint32_t)es;
    out->u.blosc.blocksize = (uint32_t)blocksize;
    return SL_OK;
}

/* Parse the compressor into `out`; `*present` false for null. */
static sl_status
v2_compressor(const json_t *c, sl_dtype dt, struct sl__codec *out, bool *present,
              struct sl_error *err)
{
    memset(out, 0, sizeof(*out));
    *present = c != NULL && !json_is_null(c);
    if (!*present)
        return SL_OK;
    const char *id = json_string_value(json_object_get(c, "id"));
    if (!json_is_object(c) || id == NULL)
        return sl_error_set_path(err, SL_EPARSE, "/compressor", "expected null or {\"id\": ...}");
    if (strcmp(id, "zstd") == 0) {
        out->id = SL__CODEC_ZSTD;
        return v2_int(c, "level", -131072, 22, 1, &out->u.zstd.level, err);
    }
    if (strcmp(id, "zlib") == 0 || strcmp(id, "gzip") == 0) {
        out->id = id[0] == 'z' ? SL__CODEC_ZLIB : SL__CODEC_GZIP;
        return v2_int(c, "level", 0, 9, 1, &out->u.gzip.level, err);
    }
    if (strcmp(id, "blosc") == 0)
        return v2_blosc(c, dt, out, err);
    return sl_error_set_path(err, SL_EUNSUPPORTED, "/compressor/id",
                             "compressor \"%s\" is not supported by sluice", id);
}

static sl_status
v2_dtype(const json_t *v, sl_dtype *dt, sl_endian *endian, struct sl_error *err)
{
    if (json_is_array(v))
        return sl_error_set_path(err, SL_EUNSUPPORTED, "/dtype",
                                 "structured data types are not supported");
    if (!json_is_string(v))
        return sl_error_set_path(err, SL_EPARSE, "/dtype", "expected a typestr such as \"<u2\"");
    struct sl_error local = SL_ERROR_INIT;
    if (sl_dtype_from_typestr(json_string_value(v), dt, endian, &local) != SL_OK)
        return sl_error_set_path(err, local.code, "/dtype", "%s", local.text);
    return SL_OK;
}

/* Build the chain: transpose for "F", bytes, compressor. */
static sl_status
v2_chain(const json_t *root, struct sl__meta *m, sl_endian endian, const struct sl__codec *comp,
         bool has_comp, struct sl_error *err)
{
    const char *order = json_string_value(json_object_get(root, "order"));
    if (order == NULL || (strcmp(order, "C") != 0 && strcmp(order, "F") != 0))
        return sl_error_set_path(err, SL_EPARSE, "/order", "expected \"C\" or \"F\"");
    struct sl__chain *ch = &m->chain;
    memset(ch, 0, sizeof(*ch));
    if (order[0] == 'F' && m->rank > 1) {
        ch->c[ch->n].id = SL__CODEC_TRANSPOSE;
        for (uint32_t k = 0; k < m->rank; k++)
            ch->c[ch->n].u.transpose.order[k] = m->rank - 1 - k;
        ch->n++;
    }
    ch->c[ch->n].id = SL__CODEC_BYTES;
    ch->c[ch->n].u.bytes.endian = endian;
    ch->c[ch->n].u.bytes.has_endian = true;
    ch->n++;
    if (has_comp)
        ch->c[ch->n++] = *comp;
    return SL_OK;
}

static sl_status
v2_separator(const json_t *root, struct sl__meta *m, struct sl_error *err)
{
    m->keys = SL__KEYS_V2;
    m->sep = '.';
    const json_t *v = json_object_get(root, "dimension_separator");
    if (v == NULL || json_is_null(v))
        return SL_OK;
    const char *s = json_string_value(v);
    if (s == NULL || (strcmp(s, ".") != 0 && strcmp(s, "/") != 0))
        return sl_error_set_path(err, SL_EPARSE, "/dimension_separator", "expected \".\" or \"/\"");
    m->sep = s[0];
    return SL_OK;
}

static sl_status
v2_zarray(const json_t *root, struct sl__meta *m, struct sl_error *err)
{
    if (!json_is_object(root))
        return sl_error_set_path(err, SL_EPARSE, "", ".zarray must be a JSON object");
    const json_t *f = json_object_get(root, "zarr_format");
    if (!json_is_integer(f) || json_integer_value(f) != 2)
        return sl_error_set_path(err, SL_EPARSE, "/zarr_format", "expected 2");
    SL_TRY(v2_filters(json_object_get(root, "filters"), err));
    struct sl__codec comp;
    bool has_comp;
    sl_endian endian = SL_ENDIAN_LITTLE;
    /* The compressor's id is checked before the dtype, its fields after. */
    const json_t *c = json_object_get(root, "compressor");
    SL_TRY(v2_compressor(c, SL_DTYPE_U8, &comp, &has_comp, err));
    SL_TRY(v2_dtype(json_object_get(root, "dtype"), &m->dtype, &endian, err));
    SL_TRY(v2_compressor(c, m->dtype, &comp, &has_comp, err));
    m->zarr_format = 2;
    uint32_t n = 0;
    SL_TRY(sl__json_dims(json_object_get(root, "shape"), "/shape", 0, m->shape, SL_MAX_RANK,
                         &m->rank, err));
    SL_TRY(sl__json_dims(json_object_get(root, "chunks"), "/chunks", 1, m->chunk, SL_MAX_RANK, &n,
                         err));
    if (n != m->rank)
        return sl_error_set_path(err, SL_EPARSE, "/chunks", "%u entries for a %u-d array", n,
                                 m->rank);
    SL_TRY(v2_chain(root, m, endian, &comp, has_comp, err));
    SL_TRY(v2_separator(root, m, err));
    const json_t *fill = json_object_get(root, "fill_value");
    return sl__fill_parse(fill != NULL ? fill : json_null(), m->dtype, 2, m->fill, &m->fill_null,
                          "/fill_value", err);
}

/* Take dimension names from _ARRAY_DIMENSIONS, then keep the rest. */
static sl_status
v2_zattrs(json_t *attrs, struct sl__meta *m, struct sl_error *err)
{
    if (!json_is_object(attrs))
        return sl_error_set_path(err, SL_EPARSE, "", ".zattrs must be a JSON object");
    const json_t *dims = json_object_get(attrs, "_ARRAY_DIMENSIONS");
    bool all_strings = json_is_array(dims) && json_array_size(dims) == m->rank;
    for (uint32_t d = 0; all_strings && d < m->rank; d++)
        all_strings = json_is_string(json_array_get(dims, d));
    if (all_strings) {
        m->has_dim_names = true;
        for (uint32_t d = 0; d < m->rank; d++) {
            m->dim_names[d] = sl_strdup(&m->alloc, json_string_value(json_array_get(dims, d)));
            if (m->dim_names[d] == NULL)
                return sl_error_set(err, SL_ENOMEM, NULL, "out of memory");
        }
        json_object_del(attrs, "_ARRAY_DIMENSIONS");
    }
    return sl__meta_set_attributes(m, attrs, err);
}

sl_status
sl__meta_parse_v2(const char *zarray, size_t n, const char *zattrs, size_t n_attrs,
                  const char *source, struct sl__meta *m, struct sl_error *err)
{
    json_t *root, *attrs = NULL;
    SL_TRY(sl__json_parse(zarray, n, source, &root, err));
    sl_status st = v2_zarray(root, m, err);
    json_decref(root);
    if (st != SL_OK) {
        sl_error_set_source(err, source);
        return st;
    }
    if (zattrs != NULL) {
        char attr_source[512];
        snprintf(attr_source, sizeof(attr_source), "%s (.zattrs)", source);
        SL_TRY(sl__json_parse(zattrs, n_attrs, attr_source, &attrs, err));
        st = v2_zattrs(attrs, m, err);
        json_decref(attrs);
    } else {
        m->attributes = sl_strdup(&m->alloc, "{}");
        st = m->attributes != NULL ? SL_OK : sl_error_set(err, SL_ENOMEM, NULL, "out of memory");
    }
    if (st == SL_OK)
        st = sl__meta_check(m, err);
    if (st != SL_OK)
        sl_error_set_source(err, source);
    return st;
}
