/* SPDX-License-Identifier: MIT */
/*
 * The dtype table: sizes, classes, Zarr v3 names and v2 typestrs, generated
 * from SL_DTYPE_MAP; parsing and formatting of both spellings.
 */
#include <string.h>

#include <sluice/dtype.h>

#include "core_internal.h"

/* One row of the table. */
struct dtype_info {
    const char *name;     /* Zarr v3 name */
    size_t size;          /* bytes per element */
    char kind;            /* numpy kind letter */
    sl_dtype_class class; /* arithmetic class */
};

static const struct dtype_info dtype_table[SL_DTYPE_COUNT_] = {
#define SL_DTYPE_ROW_(NAME, sfx, T, size, v3, kind, cls) [SL_DTYPE_##NAME] = {v3, size, kind, cls},
    SL_DTYPE_MAP(SL_DTYPE_ROW_)
#undef SL_DTYPE_ROW_
};

#define SL_DTYPE_SIZE_CHECK_(NAME, sfx, T, size, v3, kind, cls) \
    _Static_assert(sizeof(T) == (size), "C type of " v3 " has the wrong size");
SL_DTYPE_MAP(SL_DTYPE_SIZE_CHECK_)
#undef SL_DTYPE_SIZE_CHECK_

static bool
dtype_valid(sl_dtype dt)
{
    return (unsigned)dt < SL_DTYPE_COUNT_;
}

sl_endian
sl_endian_native(void)
{
    const uint16_t probe = 1;
    uint8_t first;
    memcpy(&first, &probe, 1);
    return first == 1 ? SL_ENDIAN_LITTLE : SL_ENDIAN_BIG;
}

size_t
sl_dtype_size(sl_dtype dt)
{
    return dtype_valid(dt) ? dtype_table[dt].size : 0;
}

sl_dtype_class
sl_dtype_get_class(sl_dtype dt)
{
    return dtype_valid(dt) ? dtype_table[dt].class : SL_DTYPE_CLASS_BOOL;
}

const char *
sl_dtype_name(sl_dtype dt)
{
    return dtype_valid(dt) ? dtype_table[dt].name : "invalid";
}

bool
sl_dtype_is_integer(sl_dtype dt)
{
    sl_dtype_class c = sl_dtype_get_class(dt);
    return dtype_valid(dt) && (c == SL_DTYPE_CLASS_SINT || c == SL_DTYPE_CLASS_UINT);
}

bool
sl_dtype_is_signed(sl_dtype dt)
{
    sl_dtype_class c = sl_dtype_get_class(dt);
    return dtype_valid(dt) && c != SL_DTYPE_CLASS_UINT && c != SL_DTYPE_CLASS_BOOL;
}

bool
sl_dtype_is_float(sl_dtype dt)
{
    sl_dtype_class c = sl_dtype_get_class(dt);
    return dtype_valid(dt) && (c == SL_DTYPE_CLASS_FLOAT || c == SL_DTYPE_CLASS_FLOAT16);
}

bool
sl_dtype_is_complex(sl_dtype dt)
{
    return dtype_valid(dt) && sl_dtype_get_class(dt) == SL_DTYPE_CLASS_COMPLEX;
}

bool
sl_dtype_is_real(sl_dtype dt)
{
    switch (dt) {
#define SL_DTYPE_REAL_CASE_(NAME, sfx, T, ACC) case SL_DTYPE_##NAME:
        SL_DTYPE_REAL_MAP(SL_DTYPE_REAL_CASE_)
#undef SL_DTYPE_REAL_CASE_
        return true;
    default:
        return false;
    }
}

sl_status
sl_dtype_from_name(const char *name, sl_dtype *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (name == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "data type name is missing");
    for (unsigned i = 0; i < SL_DTYPE_COUNT_; i++) {
        if (strcmp(name, dtype_table[i].name) == 0) {
            *out = (sl_dtype)i;
            return SL_OK;
        }
    }
    return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                        "unsupported data type \"%.60s\" (sluice stores bool, int8..int64, "
                        "uint8..uint64, float16/32/64, complex64/128)",
                        name);
}

/* Parse the decimal size after the kind letter; false if not all digits. */
static bool
typestr_size(const char *s, size_t *size)
{
    size_t n = 0;
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || n > 1000)
            return false;
        n = n * 10 + (size_t)(*s - '0');
    }
    *size = n;
    return true;
}

/* Unsupported numpy kinds, so they get EUNSUPPORTED rather than EPARSE. */
static bool
typestr_kind_is_known_unsupported(char kind)
{
    return kind != '\0' && strchr("SUOMmVa", kind) != NULL;
}

sl_status
sl_dtype_from_typestr(const char *ts, sl_dtype *out, sl_endian *endian, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (ts == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "typestr is missing");
    char order = ts[0];
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return sl_error_set(err, SL_EPARSE, NULL,
                            "typestr \"%.60s\": byte order must be '<', '>' or '|'", ts);
    char kind = ts[1];
    if (typestr_kind_is_known_unsupported(kind))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "unsupported data type \"%.60s\" (kind '%c': strings, objects, "
                            "dates and structured types are not stored by sluice)",
                            ts, kind);
    size_t size = 0;
    if (kind == '\0' || !typestr_size(ts + 2, &size))
        return sl_error_set(err, SL_EPARSE, NULL,
                            "typestr \"%.60s\" is not <byte order><kind><size>", ts);
    for (unsigned i = 0; i < SL_DTYPE_COUNT_; i++) {
        const struct dtype_info *info = &dtype_table[i];
        if (info->kind != kind || info->size != size)
            continue;
        if (order == '|' && size != 1)
            return sl_error_set(err, SL_EPARSE, NULL,
                                "typestr \"%.60s\": byte order '|' is only for one-byte types", ts);
        *out = (sl_dtype)i;
        if (endian != NULL)
            *endian = order == '>'   ? SL_ENDIAN_BIG
                      : order == '=' ? sl_endian_native()
                                     : SL_ENDIAN_LITTLE;
        return SL_OK;
    }
    return sl_error_set(err, SL_EUNSUPPORTED, NULL, "unsupported data type \"%.60s\"", ts);
}

sl_status
sl_dtype_typestr(sl_dtype dt, sl_endian endian, char *buf, size_t size, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (!dtype_valid(dt))
        return sl_error_set(err, SL_EINVAL, NULL, "typestr: invalid dtype %d", (int)dt);
    if (buf == NULL || size < 8)
        return sl_error_set(err, SL_EINVAL, NULL, "typestr: a buffer of %zu bytes; it needs 8",
                            buf == NULL ? 0 : size);
    const struct dtype_info *info = &dtype_table[dt];
    char order = info->size == 1 ? '|' : endian == SL_ENDIAN_BIG ? '>' : '<';
    buf[0] = order;
    buf[1] = info->kind;
    size_t n = info->size;
    if (n >= 10) {
        buf[2] = (char)('0' + n / 10);
        buf[3] = (char)('0' + n % 10);
        buf[4] = '\0';
    } else {
        buf[2] = (char)('0' + n);
        buf[3] = '\0';
    }
    return SL_OK;
}
