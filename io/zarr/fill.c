/* SPDX-License-Identifier: MIT */
/*
 * Fill values: JSON (as zarr.json and .zarray spell them) to element bytes
 * and back, for every dtype: booleans, integers range-checked, floats as
 * numbers, "NaN", "Infinity", "-Infinity" or (v3) "0x..." bit patterns,
 * complex numbers as [real, imaginary]; plus float16 conversion.
 *
 * DESIGN: fill bytes are kept in native byte order, like decoded chunks.
 * A NaN whose bits are the canonical quiet NaN is written "NaN"; any other
 * NaN is written as its bit pattern in v3 (v2 cannot say more than "NaN").
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zarr_internal.h"

/* ---- float16 ---------------------------------------------------------------- */

/* Round `m` >> `shift` to nearest, ties to even. */
static uint64_t
round_shift(uint64_t m, int shift)
{
    uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    return rem > half || (rem == half && (q & 1)) ? q + 1 : q;
}

uint16_t
sl__f16_from_double(double d)
{
    uint64_t b;
    memcpy(&b, &d, 8);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000);
    int exp = (int)((b >> 52) & 0x7ff);
    uint64_t mant = b & ((1ull << 52) - 1);
    if (exp == 0x7ff)
        return sign | 0x7c00 | (mant != 0 ? (uint16_t)(0x200 | ((mant >> 42) & 0x3ff)) : 0);
    int e = exp - 1023 + 15;
    if (e >= 31)
        return sign | 0x7c00;
    if (e <= 0) {
        if (e < -10)
            return sign;
        return sign | (uint16_t)round_shift(mant | (1ull << 52), 43 - e);
    }
    /* A carry out of the mantissa correctly bumps the exponent (up to infinity). */
    return sign | (uint16_t)(((uint64_t)e << 10) + round_shift(mant | (1ull << 52), 42) - 1024);
}

double
sl__f16_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0    ? ldexp(m, -24)
               : e == 31 ? (m != 0 ? NAN : INFINITY)
                         : ldexp(m + 1024, e - 25);
    return (h & 0x8000) != 0 ? -v : v;
}

/* ---- classification ---------------------------------------------------------- */

/* The canonical quiet NaN of a float width, as sluice checksum writes it. */
static uint64_t
canonical_nan(size_t width)
{
    return width == 2 ? 0x7e00u : width == 4 ? 0x7fc00000u : 0x7ff8000000000000ull;
}

static uint64_t
load_bits(const uint8_t *p, size_t width)
{
    uint16_t h;
    uint32_t w;
    uint64_t d;
    switch (width) {
    case 2:
        memcpy(&h, p, 2);
        return h;
    case 4:
        memcpy(&w, p, 4);
        return w;
    default:
        memcpy(&d, p, 8);
        return d;
    }
}

static void
store_bits(uint8_t *p, size_t width, uint64_t bits)
{
    uint16_t h = (uint16_t)bits;
    uint32_t w = (uint32_t)bits;
    if (width == 2)
        memcpy(p, &h, 2);
    else if (width == 4)
        memcpy(p, &w, 4);
    else
        memcpy(p, &bits, 8);
}

/* The float at `p` of `width` bytes as a double. */
static double
load_float(const uint8_t *p, size_t width)
{
    float f;
    double d;
    if (width == 2)
        return sl__f16_to_double((uint16_t)load_bits(p, 2));
    if (width == 4) {
        memcpy(&f, p, 4);
        return f;
    }
    memcpy(&d, p, 8);
    return d;
}

static void
store_float(uint8_t *p, size_t width, double v)
{
    float f = (float)v;
    if (width == 2)
        store_bits(p, 2, sl__f16_from_double(v));
    else if (width == 4)
        memcpy(p, &f, 4);
    else
        memcpy(p, &v, 8);
}

bool
sl__float_bits_is_nan(uint64_t bits, size_t width)
{
    int ebits = width == 2 ? 5 : width == 4 ? 8 : 11;
    int mbits = width == 2 ? 10 : width == 4 ? 23 : 52;
    uint64_t emask = ((1ull << ebits) - 1) << mbits, mmask = (1ull << mbits) - 1;
    return (bits & emask) == emask && (bits & mmask) != 0;
}

uint64_t
sl__float_canonical_nan(size_t width)
{
    return canonical_nan(width);
}

/* ---- parsing ----------------------------------------------------------------- */

static sl_status
fill_fail(struct sl_error *err, const char *path, sl_dtype dt, const char *why)
{
    return sl_error_set_path(err, SL_EPARSE, path, "fill_value for %s: %s", sl_dtype_name(dt), why);
}

/* Parse "0x..." with exactly 2 * width hex digits. */
static bool
parse_hex_bits(const char *s, size_t width, uint64_t *bits)
{
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || strlen(s + 2) != 2 * width)
        return false;
    uint64_t v = 0;
    for (const char *p = s + 2; *p != '\0'; p++) {
        int d = *p >= '0' && *p <= '9'   ? *p - '0'
                : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                : *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
                                         : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *bits = v;
    return true;
}

/* One float of `width` bytes into `out`. */
static sl_status
fill_parse_float(const json_t *v, sl_dtype dt, size_t width, uint8_t *out, const char *path,
                 struct sl_error *err)
{
    if (json_is_number(v)) {
        store_float(out, width, json_number_value(v));
        return SL_OK;
    }
    if (!json_is_string(v))
        return fill_fail(err, path, dt,
                         "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\"");
    const char *s = json_string_value(v);
    uint64_t bits;
    if (strcmp(s, "NaN") == 0)
        store_bits(out, width, canonical_nan(width));
    else if (strcmp(s, "Infinity") == 0)
        store_float(out, width, INFINITY);
    else if (strcmp(s, "-Infinity") == 0)
        store_float(out, width, -INFINITY);
    else if (parse_hex_bits(s, width, &bits))
        store_bits(out, width, bits);
    else
        return fill_fail(err, path, dt,
                         "expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or a hex bit "
                         "pattern of the type's width");
    return SL_OK;
}

/* An integer in the dtype's range, from a JSON integer or an integral real. */
static sl_status
fill_parse_int(const json_t *v, sl_dtype dt, uint8_t *out, const char *path, struct sl_error *err)
{
    int64_t x;
    if (json_is_integer(v)) {
        x = (int64_t)json_integer_value(v);
    } else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
               fabs(json_real_value(v)) < 9.2e18) {
        x = (int64_t)json_real_value(v);
    } else {
        return fill_fail(err, path, dt, "expected an integer");
    }
    size_t es = sl_dtype_size(dt);
    bool is_signed = sl_dtype_is_signed(dt);
    int64_t lo = is_signed ? (es == 8 ? INT64_MIN : -((int64_t)1 << (8 * es - 1))) : 0;
    int64_t hi = es == 8     ? INT64_MAX
                 : is_signed ? ((int64_t)1 << (8 * es - 1)) - 1
                             : ((int64_t)1 << (8 * es)) - 1;
    if (x < lo || x > hi) {
        char why[96];
        snprintf(why, sizeof(why), "%" PRId64 " is outside %" PRId64 "..%" PRId64, x, lo, hi);
        return fill_fail(err, path, dt, why);
    }
    /* Native byte order: store through a variable of the type's width. */
    uint64_t u = (uint64_t)x;
    uint8_t i8 = (uint8_t)u;
    uint16_t i16 = (uint16_t)u;
    uint32_t i32 = (uint32_t)u;
    if (es == 1)
        memcpy(out, &i8, 1);
    else if (es == 2)
        memcpy(out, &i16, 2);
    else if (es == 4)
        memcpy(out, &i32, 4);
    else
        memcpy(out, &u, 8);
    return SL_OK;
}

sl_status
sl__fill_parse(const json_t *v, sl_dtype dt, int zarr_format, uint8_t out[16], bool *is_null,
               const char *path, struct sl_error *err)
{
    memset(out, 0, 16);
    *is_null = false;
    if (json_is_null(v)) {
        if (zarr_format == 2) {
            *is_null = true;
            return SL_OK;
        }
        return fill_fail(err, path, dt, "null is not allowed in Zarr v3");
    }
    switch (sl_dtype_get_class(dt)) {
    case SL_DTYPE_CLASS_BOOL:
        if (json_is_boolean(v) ||
            (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))) {
            out[0] = json_is_true(v) || (json_is_integer(v) && json_integer_value(v) == 1);
            return SL_OK;
        }
        return fill_fail(err, path, dt, "expected true or false");
    case SL_DTYPE_CLASS_SINT:
    case SL_DTYPE_CLASS_UINT:
        return fill_parse_int(v, dt, out, path, err);
    case SL_DTYPE_CLASS_FLOAT16:
    case SL_DTYPE_CLASS_FLOAT:
        return fill_parse_float(v, dt, sl_dtype_size(dt), out, path, err);
    case SL_DTYPE_CLASS_COMPLEX:
        if (!json_is_array(v) || json_array_size(v) != 2)
            return fill_fail(err, path, dt, "expected [real, imaginary]");
        size_t w = sl_dtype_size(dt) / 2;
        SL_TRY(fill_parse_float(json_array_get(v, 0), dt, w, out, path, err));
        return fill_parse_float(json_array_get(v, 1), dt, w, out + w, path, err);
    }
    return fill_fail(err, path, dt, "unknown type");
}

/* ---- writing ------------------------------------------------------------------ */

static json_t *
float_to_json(const uint8_t *p, size_t width, int zarr_format)
{
    uint64_t bits = load_bits(p, width);
    if (sl__float_bits_is_nan(bits, width)) {
        if (bits == canonical_nan(width) || zarr_format == 2)
            return json_string("NaN");
        char hex[24];
        snprintf(hex, sizeof(hex), "0x%0*" PRIx64, (int)(2 * width), bits);
        return json_string(hex);
    }
    double d = load_float(p, width);
    if (isinf(d))
        return json_string(d > 0 ? "Infinity" : "-Infinity");
    return json_real(d);
}

sl_status
sl__fill_to_json(sl_dtype dt, const uint8_t fill[16], bool is_null, int zarr_format, json_t **out,
                 struct sl_error *err)
{
    json_t *v = NULL;
    size_t es = sl_dtype_size(dt);
    if (is_null && zarr_format == 2) {
        v = json_null();
    } else if (sl_dtype_get_class(dt) == SL_DTYPE_CLASS_BOOL) {
        v = json_boolean(fill[0] != 0);
    } else if (sl_dtype_is_integer(dt)) {
        uint64_t u = 0;
        int64_t s;
        memcpy(&u, fill, es); /* on big-endian hosts the value lands high: */
        if (sl_endian_native() == SL_ENDIAN_BIG)
            u >>= 8 * (8 - es);
        if (!sl_dtype_is_signed(dt) && u > (uint64_t)INT64_MAX)
            return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                                "fill value %" PRIu64 " above 2^63-1 cannot be written to JSON "
                                "by jansson",
                                u);
        /* Sign-extend from the type's width. */
        s = es == 8 ? (int64_t)u
                    : (sl_dtype_is_signed(dt) && (u >> (8 * es - 1)) != 0
                           ? (int64_t)(u | ~((1ull << (8 * es)) - 1))
                           : (int64_t)u);
        v = json_integer((json_int_t)s);
    } else if (sl_dtype_is_complex(dt)) {
        v = json_array();
        if (v != NULL &&
            (json_array_append_new(v, float_to_json(fill, es / 2, zarr_format)) != 0 ||
             json_array_append_new(v, float_to_json(fill + es / 2, es / 2, zarr_format)) != 0)) {
            json_decref(v);
            v = NULL;
        }
    } else {
        v = float_to_json(fill, es, zarr_format);
    }
    if (v == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory writing a fill value");
    *out = v;
    return SL_OK;
}
