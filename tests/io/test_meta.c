/* SPDX-License-Identifier: MIT */
/*
 * Zarr v3 and v2 metadata: required fields, fill values of every kind, the
 * must_understand rule, codecs and their errors, sharding configuration,
 * caps, chunk keys, and writing back what was read.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

#include "zarr_internal.h"

TestSuite(io_meta, .timeout = 10.0);

/* A v3 array document with the parts tests vary. */
static void
doc_v3(char *buf, size_t size, const char *dtype, const char *fill, const char *codecs,
       const char *extra)
{
    snprintf(
        buf, size,
        "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [10, 7],"
        " \"data_type\": \"%s\","
        " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [4, 4]}},"
        " \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": "
        "\"/\"}},"
        " \"fill_value\": %s, \"codecs\": %s%s}",
        dtype, fill, codecs, extra);
}

static const char *bytes_le =
    "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]";

static sl_status
parse3(const char *text, struct sl__meta *m, struct sl_error *err)
{
    sl__meta_init(m, NULL);
    return sl__meta_parse_v3(text, strlen(text), "a/zarr.json", m, err);
}

static void
expect_v3_error(const char *text, sl_status want, const char *path, const char *msg)
{
    struct sl__meta m;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = parse3(text, &m, &err);
    cr_assert_eq(st, want, "got %s: %s (%s)", sl_status_name(st), err.text, text);
    if (path != NULL)
        cr_assert_str_eq(err.path, path, "%s", err.text);
    cr_assert_not_null(strstr(err.text, msg), "\"%s\" lacks \"%s\"", err.text, msg);
    cr_assert_str_eq(err.source, "a/zarr.json");
    sl__meta_fini(&m);
}

Test(io_meta, v3_array_fields_are_read)
{
    char doc[2048];
    doc_v3(doc, sizeof(doc), "uint16", "7",
           "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}, {\"name\": \"zstd\", "
           "\"configuration\": {\"level\": 3, \"checksum\": true}}]",
           ", \"attributes\": {\"a\": [1, 2]}, \"dimension_names\": [\"y\", null]");
    struct sl__meta m;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(parse3(doc, &m, &err), SL_OK, "%s", err.text);
    cr_assert_eq(m.zarr_format, 3);
    cr_assert_eq(m.rank, 2);
    cr_assert(m.shape[0] == 10 && m.shape[1] == 7 && m.chunk[0] == 4 && m.chunk[1] == 4);
    cr_assert_eq(m.dtype, SL_DTYPE_U16);
    uint16_t fill;
    memcpy(&fill, m.fill, 2);
    cr_assert_eq(fill, 7);
    cr_assert_eq(m.chain.n, 2);
    cr_assert_eq(m.chain.c[0].u.bytes.endian, SL_ENDIAN_BIG);
    cr_assert(m.chain.c[1].u.zstd.level == 3 && m.chain.c[1].u.zstd.checksum);
    cr_assert_str_eq(m.attributes, "{\"a\":[1,2]}");
    cr_assert_str_eq(m.dim_names[0], "y");
    cr_assert_null(m.dim_names[1]);
    char key[64];
    const uint64_t c[2] = {2, 1};
    sl__meta_chunk_key(&m, c, key, sizeof(key));
    cr_assert_str_eq(key, "c/2/1");
    sl__meta_fini(&m);
}

Test(io_meta, v3_written_documents_read_back_the_same)
{
    char doc[2048];
    doc_v3(doc, sizeof(doc), "float32", "\"NaN\"",
           "[{\"name\": \"transpose\", \"configuration\": {\"order\": [1, 0]}}, {\"name\": "
           "\"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"blosc\", "
           "\"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": \"shuffle\", "
           "\"typesize\": 4, \"blocksize\": 0}}, {\"name\": \"crc32c\"}]",
           ", \"dimension_names\": [\"y\", \"x\"]");
    struct sl__meta a, b;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(parse3(doc, &a, &err), SL_OK, "%s", err.text);
    struct sl_buf out = SL_BUF_INIT;
    cr_assert_eq(sl__meta_write_v3(&a, &out, &err), SL_OK, "%s", err.text);
    cr_assert_eq(parse3((const char *)out.data, &b, &err), SL_OK, "%s\n%s", err.text, out.data);
    cr_assert(memcmp(a.fill, b.fill, 16) == 0);
    cr_assert_eq(b.chain.n, 4);
    cr_assert(memcmp(&a.chain, &b.chain, sizeof(a.chain)) == 0);
    cr_assert_str_eq(b.dim_names[1], "x");
    cr_assert_not_null(strstr((const char *)out.data, "\"fill_value\": \"NaN\""), "%s", out.data);
    sl_buf_fini(&out);
    sl__meta_fini(&a);
    sl__meta_fini(&b);
}

/* Parse fill `json` for `dtype` and compare the bytes with `want`. */
static void
expect_fill(const char *dtype, const char *json, const void *want, size_t n)
{
    char doc[2048];
    const char *codecs =
        strcmp(dtype, "bool") == 0 || strcmp(dtype, "uint8") == 0 || strcmp(dtype, "int8") == 0
            ? "[{\"name\": \"bytes\"}]"
            : bytes_le;
    doc_v3(doc, sizeof(doc), dtype, json, codecs, "");
    struct sl__meta m;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(parse3(doc, &m, &err), SL_OK, "%s %s: %s", dtype, json, err.text);
    cr_assert(memcmp(m.fill, want, n) == 0, "%s %s: bytes differ", dtype, json);
    /* Written back, the fill reads the same bytes. */
    struct sl_buf out = SL_BUF_INIT;
    struct sl__meta again;
    cr_assert_eq(sl__meta_write_v3(&m, &out, &err), SL_OK, "%s", err.text);
    cr_assert_eq(parse3((const char *)out.data, &again, &err), SL_OK, "%s", err.text);
    cr_assert(memcmp(again.fill, want, n) == 0, "%s %s: round trip differs", dtype, json);
    sl_buf_fini(&out);
    sl__meta_fini(&m);
    sl__meta_fini(&again);
}

Test(io_meta, fill_values_of_every_kind)
{
    const uint8_t t = 1;
    expect_fill("bool", "true", &t, 1);
    const int8_t i8 = -128;
    expect_fill("int8", "-128", &i8, 1);
    const uint32_t u32 = 4294967295u;
    expect_fill("uint32", "4294967295", &u32, 4);
    const int64_t i64 = INT64_MIN;
    expect_fill("int64", "-9223372036854775808", &i64, 8);
    const uint32_t nan32 = 0x7fc00000u;
    expect_fill("float32", "\"NaN\"", &nan32, 4);
    const uint64_t nan64 = 0x7ff8000000000000ull;
    expect_fill("float64", "\"NaN\"", &nan64, 8);
    const float inf = INFINITY, ninf = -INFINITY, f = 0.5f;
    expect_fill("float32", "\"Infinity\"", &inf, 4);
    expect_fill("float32", "\"-Infinity\"", &ninf, 4);
    expect_fill("float32", "0.5", &f, 4);
    const uint32_t payload = 0x7fc00001u;
    expect_fill("float32", "\"0x7fc00001\"", &payload, 4);
    const double d = -2.0;
    expect_fill("float64", "\"0xc000000000000000\"", &d, 8);
    expect_fill("float64", "-2", &d, 8);
    const uint16_t h = 0x3c00, hnan = 0x7e00, hneg = 0xc400;
    expect_fill("float16", "1.0", &h, 2);
    expect_fill("float16", "\"NaN\"", &hnan, 2);
    expect_fill("float16", "\"0xc400\"", &hneg, 2);
    const float c64[2] = {1.5f, NAN};
    uint8_t want[8];
    memcpy(want, c64, 4);
    memcpy(want + 4, &nan32, 4);
    expect_fill("complex64", "[1.5, \"NaN\"]", want, 8);
    const double c128[2] = {0.0, -1.0};
    expect_fill("complex128", "[0.0, -1]", c128, 16);
}

Test(io_meta, bad_fill_values_name_the_type_and_path)
{
    char doc[2048];
    doc_v3(doc, sizeof(doc), "uint8", "300", "[{\"name\": \"bytes\"}]", "");
    expect_v3_error(doc, SL_EPARSE, "/fill_value", "300 is outside 0..255");
    doc_v3(doc, sizeof(doc), "int16", "1.5", bytes_le, "");
    expect_v3_error(doc, SL_EPARSE, "/fill_value", "expected an integer");
    doc_v3(doc, sizeof(doc), "float32", "\"nan\"", bytes_le, "");
    expect_v3_error(doc, SL_EPARSE, "/fill_value", "hex bit pattern");
    doc_v3(doc, sizeof(doc), "float32", "\"0x7fc0\"", bytes_le, "");
    expect_v3_error(doc, SL_EPARSE, "/fill_value", "float32");
    doc_v3(doc, sizeof(doc), "complex64", "1.0", bytes_le, "");
    expect_v3_error(doc, SL_EPARSE, "/fill_value", "[real, imaginary]");
    doc_v3(doc, sizeof(doc), "int16", "null", bytes_le, "");
    expect_v3_error(doc, SL_EPARSE, "/fill_value", "null is not allowed");
}

Test(io_meta, float16_conversion_rounds_to_nearest_even)
{
    cr_assert_eq(sl__f16_from_double(1.0), 0x3c00);
    cr_assert_eq(sl__f16_from_double(-1000.5), 0xe3d1);
    cr_assert_eq(sl__f16_from_double(65504.0), 0x7bff);
    cr_assert_eq(sl__f16_from_double(65520.0), 0x7c00, "rounds up to infinity");
    cr_assert_eq(sl__f16_from_double(5.960464477539063e-08), 0x0001, "smallest subnormal");
    cr_assert_eq(sl__f16_from_double(2.98e-08), 0x0000, "below half of it");
    cr_assert_eq(sl__f16_from_double(1.0 + 1.0 / 2048), 0x3c00, "a tie rounds to even");
    cr_assert_eq(sl__f16_from_double(1.0 + 3.0 / 2048), 0x3c02);
    cr_assert_eq(sl__f16_to_double(0xe3d1), -1000.5);
    cr_assert_eq(sl__f16_to_double(0x0001), 5.960464477539063e-08);
    cr_assert(isnan(sl__f16_to_double(0x7e00)));
    for (unsigned h = 0; h < 0x7c00; h += 7)
        cr_assert_eq(sl__f16_from_double(sl__f16_to_double((uint16_t)h)), h);
}

Test(io_meta, must_understand_governs_unknown_fields)
{
    char doc[2048];
    doc_v3(doc, sizeof(doc), "int16", "0", bytes_le,
           ", \"my_extension\": {\"must_understand\": false, \"x\": 1}");
    struct sl__meta m;
    cr_assert_eq(parse3(doc, &m, NULL), SL_OK);
    sl__meta_fini(&m);
    doc_v3(doc, sizeof(doc), "int16", "0", bytes_le, ", \"my_extension\": {\"x\": 1}");
    expect_v3_error(doc, SL_EUNSUPPORTED, "/my_extension", "\"my_extension\" must be understood");
    doc_v3(doc, sizeof(doc), "int16", "0", bytes_le, ", \"version\": 2");
    expect_v3_error(doc, SL_EUNSUPPORTED, "/version", "must be understood");
    doc_v3(doc, sizeof(doc), "int16", "0", bytes_le,
           ", \"storage_transformers\": [{\"name\": \"x\"}]");
    expect_v3_error(doc, SL_EUNSUPPORTED, "/storage_transformers", "not supported");
}

Test(io_meta, unknown_codecs_and_types_are_named)
{
    char doc[2048];
    doc_v3(doc, sizeof(doc), "int32", "0",
           "[{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": \"int32\"}}, "
           "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]",
           "");
    expect_v3_error(doc, SL_EUNSUPPORTED, "/codecs/0", "codec \"numcodecs.delta\"");
    doc_v3(doc, sizeof(doc), "string", "\"\"",
           "[{\"name\": \"vlen-utf8\", \"configuration\": {}}, {\"name\": \"zstd\"}]", "");
    expect_v3_error(doc, SL_EUNSUPPORTED, "/codecs/0", "codec \"vlen-utf8\"");
    doc_v3(doc, sizeof(doc), "bfloat16", "0", bytes_le, "");
    expect_v3_error(doc, SL_EUNSUPPORTED, "/data_type", "bfloat16");
    doc_v3(doc, sizeof(doc), "int16", "0",
           "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\", \"x\": 1}}]", "");
    expect_v3_error(doc, SL_EPARSE, "/codecs/0/configuration/x", "unknown key");
    doc_v3(doc, sizeof(doc), "int16", "0",
           "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": "
           "\"zstd\", \"configuration\": {\"level\": 99}}]",
           "");
    expect_v3_error(doc, SL_EPARSE, "/codecs/1/configuration/level", "-131072..22");
    doc_v3(doc, sizeof(doc), "int16", "0", "[{\"name\": \"bytes\"}]", "");
    expect_v3_error(doc, SL_EPARSE, NULL, "\"endian\" is required for int16");
}

Test(io_meta, syntax_errors_have_line_and_column)
{
    const char *text = "{\n  \"zarr_format\": 3,\n  \"shape\": [1,, 2]\n}";
    struct sl__meta m;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(parse3(text, &m, &err), SL_EPARSE);
    cr_assert_eq(err.line, 3);
    cr_assert_gt(err.column, 0);
    cr_assert_str_eq(err.source, "a/zarr.json");
    sl__meta_fini(&m);
    err = SL_ERROR_INIT;
    cr_assert_eq(parse3("{\"zarr_format\": 3, \"zarr_format\": 3}", &m, &err), SL_EPARSE,
                 "duplicate keys are refused");
    sl__meta_fini(&m);
    expect_v3_error("[1, 2]", SL_EPARSE, "", "JSON object");
    expect_v3_error("{\"zarr_format\": 2}", SL_EPARSE, "/zarr_format", "expected 3");
    expect_v3_error("{\"zarr_format\": 3, \"node_type\": \"group\"}", SL_EINVAL, "/node_type",
                    "is a group");
}

Test(io_meta, shapes_and_grids_are_checked)
{
    char doc[2048];
    snprintf(doc, sizeof(doc),
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [10, -1], \"data_type\": "
             "\"int8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
             "{\"chunk_shape\": [1, 1]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, "
             "\"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\"}]}");
    expect_v3_error(doc, SL_EPARSE, "/shape/1", "expected an integer in 0..2^62");
    snprintf(doc, sizeof(doc),
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4611686018427387904, "
             "4611686018427387904], \"data_type\": \"int8\", \"chunk_grid\": {\"name\": "
             "\"regular\", \"configuration\": {\"chunk_shape\": [1, 1]}}, "
             "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": "
             "[{\"name\": \"bytes\"}]}");
    expect_v3_error(doc, SL_EOVERFLOW, NULL, "");
    snprintf(doc, sizeof(doc),
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [10], \"data_type\": "
             "\"int8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
             "{\"chunk_shape\": [2000000000]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, "
             "\"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\"}]}");
    expect_v3_error(doc, SL_EOVERFLOW, NULL, "exceed the 1073741824-byte limit");
    snprintf(doc, sizeof(doc),
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [10], \"data_type\": "
             "\"int8\", \"chunk_grid\": {\"name\": \"rectilinear\"}, \"chunk_key_encoding\": "
             "{\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\"}]}");
    expect_v3_error(doc, SL_EUNSUPPORTED, "/chunk_grid/name", "rectilinear");
    snprintf(doc, sizeof(doc),
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [10], \"data_type\": "
             "\"int8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
             "{\"chunk_shape\": [0]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, "
             "\"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\"}]}");
    expect_v3_error(doc, SL_EPARSE, "/chunk_grid/configuration/chunk_shape/0", "1..2^62");
}

static const char *
sharded_doc(char *buf, size_t size, const char *inner, const char *codecs, const char *tail)
{
    snprintf(buf, size,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [100, 100], "
             "\"data_type\": \"uint16\", \"chunk_grid\": {\"name\": \"regular\", "
             "\"configuration\": {\"chunk_shape\": [64, 64]}}, \"chunk_key_encoding\": {\"name\": "
             "\"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": \"sharding_indexed\", "
             "\"configuration\": {\"chunk_shape\": %s, \"codecs\": %s, \"index_codecs\": "
             "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": "
             "\"crc32c\"}]%s}}]}",
             inner, codecs, tail);
    return buf;
}

Test(io_meta, sharding_configuration)
{
    char doc[2048];
    struct sl__meta m;
    struct sl_error err = SL_ERROR_INIT;
    sharded_doc(doc, sizeof(doc), "[16, 32]", bytes_le, ", \"index_location\": \"start\"");
    cr_assert_eq(parse3(doc, &m, &err), SL_OK, "%s", err.text);
    cr_assert(m.sharded && m.index_at_start);
    cr_assert(m.inner[0] == 16 && m.inner[1] == 32);
    cr_assert(m.per_shard[0] == 4 && m.per_shard[1] == 2 && m.n_per_shard == 8);
    cr_assert_eq(m.index_bytes, 8 * 16 + 4);
    struct sl_buf out = SL_BUF_INIT;
    struct sl__meta again;
    cr_assert_eq(sl__meta_write_v3(&m, &out, &err), SL_OK, "%s", err.text);
    cr_assert_eq(parse3((const char *)out.data, &again, &err), SL_OK, "%s", err.text);
    cr_assert(again.sharded && again.index_at_start && again.n_per_shard == 8);
    sl_buf_fini(&out);
    sl__meta_fini(&again);
    sl__meta_fini(&m);

    sharded_doc(doc, sizeof(doc), "[24, 32]", bytes_le, "");
    expect_v3_error(doc, SL_EPARSE, NULL, "is not a multiple of inner chunk shape");
    sharded_doc(doc, sizeof(doc), "[1, 1]", bytes_le, "");
    cr_assert_eq(parse3(doc, &m, NULL), SL_OK, "4096 inner chunks are fine");
    sl__meta_fini(&m);
    sharded_doc(doc, sizeof(doc), "[16, 16]", "[{\"name\": \"sharding_indexed\"}]", "");
    expect_v3_error(doc, SL_EUNSUPPORTED, NULL, "nested sharding");
    sharded_doc(doc, sizeof(doc), "[16, 16]", bytes_le, ", \"index_location\": \"middle\"");
    expect_v3_error(doc, SL_EPARSE, NULL, "\"start\" or \"end\"");
    snprintf(doc, sizeof(doc),
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [100, 100], "
             "\"data_type\": \"uint8\", \"chunk_grid\": {\"name\": \"regular\", "
             "\"configuration\": {\"chunk_shape\": [8192, 8192]}}, \"chunk_key_encoding\": "
             "{\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": "
             "\"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2, 2], \"codecs\": "
             "[{\"name\": \"bytes\"}]}}]}");
    expect_v3_error(doc, SL_EOVERFLOW, NULL, "inner chunks are refused");
    snprintf(doc, sizeof(doc),
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [100], \"data_type\": "
             "\"uint8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
             "{\"chunk_shape\": [8]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, "
             "\"fill_value\": 0, \"codecs\": [{\"name\": \"sharding_indexed\", "
             "\"configuration\": {\"chunk_shape\": [2], \"codecs\": [{\"name\": \"bytes\"}]}}, "
             "{\"name\": \"zstd\"}]}");
    expect_v3_error(doc, SL_EUNSUPPORTED, "/codecs", "must be the only codec");
}

Test(io_meta, chunk_keys_in_every_encoding)
{
    struct sl__meta m;
    sl__meta_init(&m, NULL);
    m.rank = 3;
    const uint64_t c[3] = {1, 20, 3};
    uint64_t back[3];
    char key[64];
    m.keys = SL__KEYS_DEFAULT;
    m.sep = '/';
    sl__meta_chunk_key(&m, c, key, sizeof(key));
    cr_assert_str_eq(key, "c/1/20/3");
    cr_assert(sl__meta_parse_chunk_key(&m, key, back) && back[1] == 20);
    m.sep = '.';
    sl__meta_chunk_key(&m, c, key, sizeof(key));
    cr_assert_str_eq(key, "c.1.20.3");
    cr_assert(sl__meta_parse_chunk_key(&m, key, back));
    cr_assert_not(sl__meta_parse_chunk_key(&m, "c.1.20", back));
    cr_assert_not(sl__meta_parse_chunk_key(&m, "c.1.20.3.4", back));
    cr_assert_not(sl__meta_parse_chunk_key(&m, "zarr.json", back));
    m.keys = SL__KEYS_V2;
    sl__meta_chunk_key(&m, c, key, sizeof(key));
    cr_assert_str_eq(key, "1.20.3");
    cr_assert(sl__meta_parse_chunk_key(&m, key, back) && back[2] == 3);
    cr_assert_not(sl__meta_parse_chunk_key(&m, ".zarray", back));
    m.sep = '/';
    sl__meta_chunk_key(&m, c, key, sizeof(key));
    cr_assert_str_eq(key, "1/20/3");
    m.rank = 0;
    sl__meta_chunk_key(&m, c, key, sizeof(key));
    cr_assert_str_eq(key, "0");
    m.keys = SL__KEYS_DEFAULT;
    sl__meta_chunk_key(&m, c, key, sizeof(key));
    cr_assert_str_eq(key, "c");
    sl__meta_fini(&m);
}

Test(io_meta, only_canonical_chunk_keys_parse)
{
    /* "c/01" is not chunk 1: were it parsed as one, listings would count
     * chunk 1 twice. */
    struct sl__meta m;
    sl__meta_init(&m, NULL);
    m.rank = 2;
    m.keys = SL__KEYS_DEFAULT;
    m.sep = '/';
    uint64_t back[2];
    cr_assert(sl__meta_parse_chunk_key(&m, "c/0/10", back) && back[0] == 0 && back[1] == 10);
    cr_assert_not(sl__meta_parse_chunk_key(&m, "c/01/2", back));
    cr_assert_not(sl__meta_parse_chunk_key(&m, "c/1/00", back));
    m.keys = SL__KEYS_V2;
    m.sep = '.';
    cr_assert(sl__meta_parse_chunk_key(&m, "0.0", back));
    cr_assert_not(sl__meta_parse_chunk_key(&m, "0.007", back));
    sl__meta_fini(&m);

    sl_store *s = sl_store_create_memory(NULL, NULL);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 1;
    sp.shape[0] = 8;
    sp.chunk_shape[0] = 4;
    sl_array *a = sl_array_create(s, "arr", &sp, NULL, NULL);
    cr_assert_not_null(a);
    cr_assert_eq(sl_store_set(s, "arr/c/1", "abcd", 4, NULL), SL_OK);
    cr_assert_eq(sl_store_set(s, "arr/c/01", "abcd", 4, NULL), SL_OK);
    struct sl_array_stored st;
    cr_assert_eq(sl_array_stored(a, &st, NULL), SL_OK);
    cr_assert_eq(st.n_objects, 1);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* ---- v2 ----------------------------------------------------------------------- */

static sl_status
parse2(const char *zarray, const char *zattrs, struct sl__meta *m, struct sl_error *err)
{
    sl__meta_init(m, NULL);
    return sl__meta_parse_v2(zarray, strlen(zarray), zattrs, zattrs ? strlen(zattrs) : 0,
                             "a/.zarray", m, err);
}

static void
doc_v2(char *buf, size_t size, const char *dtype, const char *compressor, const char *filters,
       const char *order, const char *fill)
{
    snprintf(buf, size,
             "{\"zarr_format\": 2, \"shape\": [5, 6], \"chunks\": [2, 4], \"dtype\": \"%s\", "
             "\"compressor\": %s, \"filters\": %s, \"order\": \"%s\", \"fill_value\": %s}",
             dtype, compressor, filters, order, fill);
}

Test(io_meta, v2_arrays_become_codec_chains)
{
    char doc[1024];
    struct sl__meta m;
    struct sl_error err = SL_ERROR_INIT;
    doc_v2(doc, sizeof(doc), ">f8", "{\"id\": \"zstd\", \"level\": 0, \"checksum\": false}", "null",
           "F", "\"NaN\"");
    cr_assert_eq(parse2(doc, "{\"_ARRAY_DIMENSIONS\": [\"y\", \"x\"], \"units\": \"m\"}", &m, &err),
                 SL_OK, "%s", err.text);
    cr_assert_eq(m.zarr_format, 2);
    cr_assert_eq(m.dtype, SL_DTYPE_F64);
    cr_assert_eq(m.chain.n, 3);
    cr_assert_eq(m.chain.c[0].id, SL__CODEC_TRANSPOSE);
    cr_assert_eq(m.chain.c[1].u.bytes.endian, SL_ENDIAN_BIG);
    cr_assert_eq(m.chain.c[2].id, SL__CODEC_ZSTD);
    cr_assert(m.keys == SL__KEYS_V2 && m.sep == '.');
    uint64_t nan;
    memcpy(&nan, m.fill, 8);
    cr_assert_eq(nan, 0x7ff8000000000000ull);
    cr_assert_str_eq(m.dim_names[1], "x");
    cr_assert_str_eq(m.attributes, "{\"units\":\"m\"}");
    struct sl_buf za = SL_BUF_INIT, zt = SL_BUF_INIT;
    cr_assert_eq(sl__meta_write_v2(&m, &za, &zt, &err), SL_OK, "%s", err.text);
    cr_assert_null(strstr((const char *)za.data, "checksum"), "%s", za.data);
    cr_assert_not_null(strstr((const char *)za.data, "\"order\": \"F\""), "%s", za.data);
    cr_assert_not_null(strstr((const char *)zt.data, "_ARRAY_DIMENSIONS"), "%s", zt.data);
    struct sl__meta again;
    cr_assert_eq(parse2((const char *)za.data, (const char *)zt.data, &again, &err), SL_OK, "%s",
                 err.text);
    cr_assert(memcmp(&again.chain, &m.chain, sizeof(m.chain)) == 0);
    cr_assert_str_eq(again.dim_names[0], "y");
    sl_buf_fini(&za);
    sl_buf_fini(&zt);
    sl__meta_fini(&again);
    sl__meta_fini(&m);

    doc_v2(doc, sizeof(doc), "|b1",
           "{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, "
           "\"shuffle\": -1, \"blocksize\": 0}",
           "[]", "C", "false");
    cr_assert_eq(parse2(doc, NULL, &m, &err), SL_OK, "%s", err.text);
    cr_assert_eq(m.chain.c[1].u.blosc.shuffle, 2, "autoshuffle of one-byte items is bitshuffle");
    sl__meta_fini(&m);
    doc_v2(doc, sizeof(doc), "<i4", "null", "null", "C", "null");
    cr_assert_eq(parse2(doc, NULL, &m, &err), SL_OK, "%s", err.text);
    cr_assert(m.fill_null && m.chain.n == 1);
    sl__meta_fini(&m);
}

static void
expect_v2_error(const char *doc, sl_status want, const char *path, const char *msg)
{
    struct sl__meta m;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(parse2(doc, NULL, &m, &err), want, "%s", err.text);
    cr_assert_str_eq(err.path, path, "%s", err.text);
    cr_assert_not_null(strstr(err.text, msg), "%s", err.text);
    cr_assert_str_eq(err.source, "a/.zarray");
    sl__meta_fini(&m);
}

Test(io_meta, v2_filters_compressors_and_types_sluice_lacks_are_named)
{
    char doc[1024];
    doc_v2(doc, sizeof(doc), "<i2", "{\"id\": \"zlib\", \"level\": 1}",
           "[{\"id\": \"delta\", \"dtype\": \"<i2\"}, {\"id\": \"shuffle\"}]", "C", "0");
    expect_v2_error(doc, SL_EUNSUPPORTED, "/filters", "filters \"delta\", \"shuffle\" are");
    doc_v2(doc, sizeof(doc), "<i2", "{\"id\": \"lz4\", \"acceleration\": 1}", "null", "C", "0");
    expect_v2_error(doc, SL_EUNSUPPORTED, "/compressor/id", "compressor \"lz4\"");
    doc_v2(doc, sizeof(doc), "<U7", "null", "null", "C", "\"\"");
    expect_v2_error(doc, SL_EUNSUPPORTED, "/dtype", "<U7");
    doc_v2(doc, sizeof(doc), "|O", "null", "[{\"id\": \"json2\"}]", "C", "0");
    expect_v2_error(doc, SL_EUNSUPPORTED, "/filters", "json2");
    doc_v2(doc, sizeof(doc), "<i2", "null", "null", "K", "0");
    expect_v2_error(doc, SL_EPARSE, "/order", "\"C\" or \"F\"");
    doc_v2(doc, sizeof(doc), "<i2", "{\"id\": \"zlib\", \"level\": 12}", "null", "C", "0");
    expect_v2_error(doc, SL_EPARSE, "/compressor/level", "0..9");
}
