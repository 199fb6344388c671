/* SPDX-License-Identifier: MIT */
/*
 * JSON helpers of the metadata parsers: loading with located syntax errors,
 * typed field access that reports a JSON pointer, and serialization into a
 * buffer.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "zarr_internal.h"

sl_status
sl__json_parse(const char *text, size_t n, const char *source, json_t **out, struct sl_error *err)
{
    if (n > SL_META_MAX_BYTES) {
        sl_error_set(err, SL_EPARSE, NULL, "metadata of %zu bytes exceeds the %zu-byte limit", n,
                     SL_META_MAX_BYTES);
        sl_error_set_source(err, source);
        return SL_EPARSE;
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        sl_error_set_at(err, SL_EPARSE, jerr.line, jerr.column, (size_t)jerr.position, "%s",
                        jerr.text);
        sl_error_set_source(err, source);
        return SL_EPARSE;
    }
    *out = root;
    return SL_OK;
}

sl_status
sl__json_dims(const json_t *v, const char *path, uint64_t lo, uint64_t *out, uint32_t max,
              uint32_t *n, struct sl_error *err)
{
    if (!json_is_array(v))
        return sl_error_set_path(err, SL_EPARSE, path, "expected an array of integers");
    size_t len = json_array_size(v);
    if (len > max)
        return sl_error_set_path(err, SL_EUNSUPPORTED, path,
                                 "%zu dimensions; sluice handles at most %u", len, max);
    for (size_t i = 0; i < len; i++) {
        const json_t *e = json_array_get(v, i);
        json_int_t x = json_is_integer(e) ? json_integer_value(e) : -1;
        if (!json_is_integer(e) || x < 0 || (uint64_t)x < lo || (uint64_t)x > SL_DIM_MAX) {
            char at[96];
            snprintf(at, sizeof(at), "%s/%zu", path, i);
            return sl_error_set_path(err, SL_EPARSE, at,
                                     "expected an integer in %" PRIu64 "..2^62, found %s%" PRId64,
                                     lo, json_is_integer(e) ? "" : "a non-integer ",
                                     json_is_integer(e) ? (int64_t)x : (int64_t)0);
        }
        out[i] = (uint64_t)x;
    }
    *n = (uint32_t)len;
    return SL_OK;
}

sl_status
sl__json_int(const json_t *v, const char *path, long long lo, long long hi, int *out,
             struct sl_error *err)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return sl_error_set_path(err, SL_EPARSE, path, "expected an integer in %lld..%lld", lo, hi);
    *out = (int)json_integer_value(v);
    return SL_OK;
}

sl_status
sl__json_only_keys(const json_t *obj, const char *path, const char *const *known,
                   struct sl_error *err)
{
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)obj, key, value)
    {
        (void)value;
        bool ok = false;
        for (const char *const *k = known; *k != NULL && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok) {
            char at[120];
            snprintf(at, sizeof(at), "%s/%s", path, key);
            return sl_error_set_path(err, SL_EPARSE, at, "unknown key \"%s\"", key);
        }
    }
    return SL_OK;
}

sl_status
sl__json_dump(const json_t *v, size_t flags, struct sl_buf *out, struct sl_error *err)
{
    char *text = json_dumps(v, flags);
    if (text == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory writing JSON");
    size_t n = strlen(text);
    out->size = 0;
    sl_status st = sl_buf_append(out, text, n + 1, err);
    free(text);
    if (st == SL_OK)
        out->size = n;
    return st;
}
