/* SPDX-License-Identifier: MIT */
/*
 * Test helper for interop_zarr_python.py: writes one Zarr array with sluice
 * through the public API, filled with values from a formula the Python side
 * repeats, then rewrites chunk (0, ...) with the fill value so that chunk is
 * left unstored.
 *
 *   interop_write DIR FORMAT DTYPE ENDIAN ORDER CODEC SEP SHAPE CHUNKS FILL
 *   e.g. interop_write /tmp/a 2 int16 big F zstd:1 / 13,7,5 4,3,2 7
 *
 * FILL is an integer or "nan".  Element i (C order) holds, before casting:
 * bool: i % 3 == 0; integers: (7i + 3) % 251 - 100 (signed) or (7i + 3) %
 * 251; floats: ((7i + 3) % 251) / 2 - 20, NaN where i % 13 == 5; complex:
 * that real part and -(i % 17) as the imaginary part.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

static int
fail(const char *what, const struct sl_error *err)
{
    char text[512] = "";
    if (err != NULL)
        sl_error_format(err, text, sizeof(text));
    fprintf(stderr, "interop_write: %s %s\n", what, text);
    return 1;
}

static uint32_t
parse_dims(const char *s, uint64_t *out)
{
    uint32_t n = 0;
    for (char *end; *s != '\0' && n < SL_MAX_RANK; s = *end == ',' ? end + 1 : end)
        out[n++] = strtoull(s, &end, 10);
    return n;
}

/* Exact for the halves in [-20, 106) the formula makes. */
static uint16_t
half_of(double v)
{
    if (isnan(v))
        return 0x7e00;
    if (v == 0)
        return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    double a = fabs(v);
    int e;
    double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((m * 2 - 1) * 1024);
}

static double
float_value(size_t i)
{
    return i % 13 == 5 ? NAN : (double)((7 * i + 3) % 251) / 2 - 20;
}

static void
put_element(uint8_t *p, size_t i, sl_dtype dt)
{
    int64_t iv = (int64_t)((7 * i + 3) % 251) - (sl_dtype_is_signed(dt) ? 100 : 0);
    switch (dt) {
    case SL_DTYPE_BOOL:
        *p = i % 3 == 0;
        break;
    case SL_DTYPE_F16: {
        uint16_t h = half_of(float_value(i));
        memcpy(p, &h, 2);
        break;
    }
    case SL_DTYPE_F32: {
        float f = (float)float_value(i);
        memcpy(p, &f, 4);
        break;
    }
    case SL_DTYPE_F64: {
        double d = float_value(i);
        memcpy(p, &d, 8);
        break;
    }
    case SL_DTYPE_C64: {
        float f[2] = {(float)float_value(i), -(float)(i % 17)};
        memcpy(p, f, 8);
        break;
    }
    case SL_DTYPE_C128: {
        double d[2] = {float_value(i), -(double)(i % 17)};
        memcpy(p, d, 16);
        break;
    }
    default: {
        size_t es = sl_dtype_size(dt);
        int8_t i8 = (int8_t)iv;
        int16_t i16 = (int16_t)iv;
        int32_t i32 = (int32_t)iv;
        memcpy(p,
               es == 1   ? (void *)&i8
               : es == 2 ? (void *)&i16
               : es == 4 ? (void *)&i32
                         : &iv,
               es);
        break;
    }
    }
}

/* The fill value element for FILL ("nan" or an integer). */
static void
fill_element(uint8_t *p, sl_dtype dt, const char *text)
{
    double v = strcmp(text, "nan") == 0 ? NAN : strtod(text, NULL);
    memset(p, 0, 16);
    switch (sl_dtype_get_class(dt)) {
    case SL_DTYPE_CLASS_FLOAT16: {
        uint16_t h = half_of(v);
        memcpy(p, &h, 2);
        break;
    }
    case SL_DTYPE_CLASS_FLOAT:
    case SL_DTYPE_CLASS_COMPLEX:
        if (sl_dtype_size(dt) == 4 || dt == SL_DTYPE_C64) {
            float f = (float)v;
            memcpy(p, &f, 4);
        } else {
            memcpy(p, &v, 8);
        }
        break;
    default: {
        int64_t iv = (int64_t)v;
        memcpy(p, &iv, sl_dtype_size(dt)); /* little-endian hosts */
        break;
    }
    }
}

int
main(int argc, char **argv)
{
    if (argc != 11)
        return fail("usage: DIR FORMAT DTYPE ENDIAN ORDER CODEC SEP SHAPE CHUNKS FILL", NULL);
    struct sl_error err = SL_ERROR_INIT;
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.zarr_format = atoi(argv[2]);
    if (sl_dtype_from_name(argv[3], &sp.dtype, &err) != SL_OK)
        return fail("dtype", &err);
    sp.endian = strcmp(argv[4], "big") == 0 ? SL_ENDIAN_BIG : SL_ENDIAN_LITTLE;
    sp.order_f = strcmp(argv[5], "F") == 0;
    if (sl_codec_spec_parse(argv[6], &sp.codec, &err) != SL_OK)
        return fail("codec", &err);
    sp.separator = argv[7][0];
    sp.rank = parse_dims(argv[8], sp.shape);
    if (parse_dims(argv[9], sp.chunk_shape) != sp.rank)
        return fail("CHUNKS and SHAPE differ in rank", NULL);
    uint8_t fill[16];
    fill_element(fill, sp.dtype, argv[10]);
    sp.fill_value = fill;
    sl_store *store = sl_store_open_fs(argv[1], NULL, &err);
    sl_array *a = store != NULL ? sl_array_create(store, "", &sp, NULL, &err) : NULL;
    if (a == NULL)
        return fail("create", &err);
    size_t es = sl_dtype_size(sp.dtype), n = 1;
    for (uint32_t d = 0; d < sp.rank; d++)
        n *= sp.shape[d];
    uint8_t *data = malloc(n * es + 1);
    for (size_t i = 0; i < n; i++)
        put_element(data + i * es, i, sp.dtype);
    struct sl_region whole = sl_region_whole(sp.rank, sp.shape);
    int rc = 0;
    if (sl_array_write_region(a, &whole, data, n * es, NULL, NULL, &err) != SL_OK)
        rc = fail("write", &err);
    /* Chunk 0 becomes all fill, so it is deleted rather than stored. */
    size_t cb = sl_array_chunk_bytes(a);
    uint8_t *chunk = malloc(cb);
    for (size_t i = 0; i < cb / es; i++)
        memcpy(chunk + i * es, fill, es);
    const uint64_t zero[SL_MAX_RANK] = {0};
    if (rc == 0 && sl_array_write_chunk(a, zero, chunk, cb, NULL, &err) != SL_OK)
        rc = fail("write chunk 0", &err);
    free(chunk);
    free(data);
    sl_array_unref(a);
    sl_store_unref(store);
    return rc;
}
