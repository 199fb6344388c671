/* SPDX-License-Identifier: MIT */
/*
 * Every array of the zarr-python fixtures (shared/fixtures/zarr-python,
 * written by zarr-python, hashed by independent readers) read back against
 * its manifest: shape, data type, fill value, chunk and shard shapes, the
 * SHA-256 of the contents and the first and last elements; arrays using a
 * codec or dtype sluice lacks must fail with EUNSUPPORTED naming it.  Groups
 * must probe as groups.  Skips when the fixtures are absent.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "testutil.h"

TestSuite(io_fixtures, .timeout = 60.0);

static json_t *
load_manifest(char *root, size_t size)
{
    const char *dir = sl_test_fixtures_dir();
    if (dir == NULL)
        return NULL;
    snprintf(root, size, "%s/zarr-python", dir);
    char path[4200];
    snprintf(path, sizeof(path), "%s/MANIFEST.json", root);
    json_error_t jerr;
    json_t *m = json_load_file(path, 0, &jerr);
    cr_assert_not_null(m, "%s: %s", path, jerr.text);
    return m;
}

static sl_store *
open_store(const char *root, const char *sub)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", root, sub);
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.create = false;
    o.read_only = true;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(path, &o, &err);
    cr_assert_not_null(s, "%s: %s", path, err.text);
    return s;
}

/* Element `i` of a dense buffer as a double (bool 0/1). */
static double
element(const uint8_t *buf, size_t i, sl_dtype dt)
{
    const uint8_t *p = buf + i * sl_dtype_size(dt);
    switch (dt) {
#define SL_CASE_(NAME, sfx, T, ACC) \
    case SL_DTYPE_##NAME: {         \
        T v;                        \
        memcpy(&v, p, sizeof(v));   \
        return (double)v;           \
    }
        SL_DTYPE_REAL_MAP(SL_CASE_)
#undef SL_CASE_
    case SL_DTYPE_F16: {
        uint16_t h;
        memcpy(&h, p, 2);
        int e = (h >> 10) & 31, m = h & 1023;
        double v = e == 0 ? ldexp(m, -24) : e == 31 ? NAN : ldexp(m + 1024, e - 25);
        return (h & 0x8000) != 0 ? -v : v;
    }
    default:
        return NAN;
    }
}

static void
expect_dims(const json_t *want, uint32_t rank, const uint64_t *got, const char *what,
            const char *path)
{
    cr_assert_eq(json_array_size(want), rank, "%s: %s rank", path, what);
    for (uint32_t d = 0; d < rank; d++)
        cr_assert_eq((uint64_t)json_integer_value(json_array_get(want, d)), got[d], "%s: %s[%u]",
                     path, what, d);
}

/* Data type as the manifest spells it: the v3 name, or the v2 typestr. */
static void
expect_dtype(const sl_array *a, const char *want, const char *path)
{
    if (sl_array_zarr_format(a) == 3) {
        cr_assert_str_eq(sl_dtype_name(sl_array_dtype(a)), want, "%s", path);
        return;
    }
    sl_dtype dt;
    sl_endian e;
    cr_assert_eq(sl_dtype_from_typestr(want, &dt, &e, NULL), SL_OK, "%s", path);
    cr_assert_eq(dt, sl_array_dtype(a), "%s: %s", path, want);
}

static void
expect_values(const uint8_t *buf, uint64_t n, sl_dtype dt, const json_t *first, const json_t *last,
              const char *path)
{
    for (size_t i = 0; i < json_array_size(first); i++) {
        double want = json_number_value(json_array_get(first, i)), got = element(buf, i, dt);
        cr_assert(got == want || (isnan(got) && isnan(want)), "%s: element %zu is %g, not %g", path,
                  i, got, want);
    }
    size_t nl = json_array_size(last);
    for (size_t i = 0; i < nl; i++) {
        double want = json_number_value(json_array_get(last, i));
        double got = element(buf, (size_t)n - nl + i, dt);
        cr_assert(got == want, "%s: element %llu is %g, not %g", path,
                  (unsigned long long)(n - nl + i), got, want);
    }
}

/* An "ok" array: metadata, checksum and values match the manifest. */
static void
check_ok_array(sl_store *s, const json_t *arr, const char *path)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(s, path, NULL, &err);
    cr_assert_not_null(a, "%s: %s", path, err.text);
    uint32_t rank = sl_array_rank(a);
    expect_dims(json_object_get(arr, "shape"), rank, sl_array_shape(a), "shape", path);
    expect_dims(json_object_get(arr, "chunk_shape"), rank, sl_array_chunk_shape(a), "chunk", path);
    const json_t *shard = json_object_get(arr, "shard_shape");
    cr_assert_eq(shard != NULL, sl_array_shard_shape(a) != NULL, "%s: sharded", path);
    if (shard != NULL)
        expect_dims(shard, rank, sl_array_shard_shape(a), "shard", path);
    expect_dtype(a, json_string_value(json_object_get(arr, "data_type")), path);
    char fill[128], want_fill[128];
    sl_array_fill_describe(a, fill, sizeof(fill));
    char *w = json_dumps(json_object_get(arr, "fill_value"), JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(want_fill, sizeof(want_fill), "%s", w);
    free(w);
    cr_assert_str_eq(fill, want_fill, "%s: fill value", path);

    uint8_t digest[SL_SHA256_BYTES];
    char hex[SL_SHA256_HEX_CHARS + 1];
    cr_assert_eq(sl_array_checksum(a, digest, NULL, &err), SL_OK, "%s: %s", path, err.text);
    sl_sha256_hex(digest, hex);
    cr_assert_str_eq(hex, json_string_value(json_object_get(arr, "sha256")), "%s", path);

    uint64_t n = 1;
    for (uint32_t d = 0; d < rank; d++)
        n *= sl_array_shape(a)[d];
    size_t bytes = (size_t)n * sl_dtype_size(sl_array_dtype(a));
    uint8_t *buf = malloc(bytes + 1);
    struct sl_region whole = sl_region_whole(rank, sl_array_shape(a));
    cr_assert_eq(sl_array_read_region(a, &whole, buf, bytes, NULL, NULL, &err), SL_OK, "%s: %s",
                 path, err.text);
    expect_values(buf, n, sl_array_dtype(a), json_object_get(arr, "first8"),
                  json_object_get(arr, "last4"), path);
    free(buf);
    sl_array_unref(a);
}

/* What sluice lacks in the fixtures, one of which a refusal must name. */
static const char *const missing_features[] = {
    "vlen-utf8",        "numcodecs.delta", "delta", "lz4", "shuffle", "bitround",
    "fixedscaleoffset", "json2",           "|S7",   "U13", "<U7",
};

static void
check_refused_array(sl_store *s, const json_t *arr, const char *path)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(s, path, NULL, &err);
    cr_assert_null(a, "%s should be refused", path);
    cr_assert_eq(err.code, SL_EUNSUPPORTED, "%s: %s %s", path, sl_status_name(err.code), err.text);
    bool named = false;
    for (size_t i = 0; i < sizeof(missing_features) / sizeof(*missing_features); i++)
        named = named || strstr(err.text, missing_features[i]) != NULL;
    cr_assert(named, "%s: the refusal names nothing sluice lacks: %s", path, err.text);
    const char *expect = json_string_value(json_object_get(arr, "expect"));
    if (strcmp(expect, "unsupported-dtype") == 0)
        cr_assert_not_null(strstr(err.text, "data type"), "%s: %s", path, err.text);
}

Test(io_fixtures, every_array_matches_its_manifest)
{
    char root[4096];
    json_t *m = load_manifest(root, sizeof(root));
    if (m == NULL)
        cr_skip_test("no fixtures: SL_FIXTURES_DIR is unset or missing");
    int n_ok = 0, n_refused = 0, n_groups = 0;
    const json_t *stores = json_object_get(m, "stores");
    for (size_t si = 0; si < json_array_size(stores); si++) {
        const json_t *st = json_array_get(stores, si);
        sl_store *s = open_store(root, json_string_value(json_object_get(st, "root")));
        const json_t *arrays = json_object_get(st, "arrays");
        for (size_t ai = 0; ai < json_array_size(arrays); ai++) {
            const json_t *arr = json_array_get(arrays, ai);
            const char *path = json_string_value(json_object_get(arr, "path"));
            if (strcmp(json_string_value(json_object_get(arr, "expect")), "ok") == 0) {
                check_ok_array(s, arr, path);
                n_ok++;
            } else {
                check_refused_array(s, arr, path);
                n_refused++;
            }
        }
        const json_t *groups = json_object_get(st, "groups");
        for (size_t gi = 0; gi < json_array_size(groups); gi++) {
            sl_zarr_kind kind;
            int format;
            const char *g = json_string_value(json_array_get(groups, gi));
            cr_assert_eq(sl_zarr_probe(s, g, &kind, &format, NULL), SL_OK);
            cr_assert_eq(kind, SL_ZARR_GROUP, "group \"%s\"", g);
            cr_assert_eq(format, (int)json_integer_value(json_object_get(st, "zarr_format")));
            n_groups++;
        }
        sl_store_unref(s);
    }
    const json_t *counts = json_object_get(m, "counts");
    cr_assert_eq(n_ok, json_integer_value(json_object_get(counts, "with_sha256")));
    cr_assert_eq(n_ok + n_refused, json_integer_value(json_object_get(counts, "arrays")));
    cr_assert_eq(n_groups, 6);
    json_decref(m);
}

Test(io_fixtures, fixture_manifest_hashes_are_sha256_of_the_reference_values)
{
    /* The manifest's own definition, checked with sluice's SHA-256 on an
     * array whose values it lists in full (first8 covers all 4). */
    char root[4096];
    json_t *m = load_manifest(root, sizeof(root));
    if (m == NULL)
        cr_skip_test("no fixtures");
    const json_t *arrays =
        json_object_get(json_array_get(json_object_get(m, "stores"), 0), "arrays");
    int checked = 0;
    for (size_t i = 0; i < json_array_size(arrays); i++) {
        const json_t *arr = json_array_get(arrays, i);
        if (strcmp(json_string_value(json_object_get(arr, "data_type")), "int16") != 0 ||
            json_array_size(json_object_get(arr, "shape")) != 1 ||
            json_integer_value(json_array_get(json_object_get(arr, "shape"), 0)) != 4 ||
            json_object_get(arr, "first8") == NULL)
            continue;
        uint8_t bytes[8];
        for (int k = 0; k < 4; k++) {
            int16_t v =
                (int16_t)json_number_value(json_array_get(json_object_get(arr, "first8"), k));
            bytes[2 * k] = (uint8_t)v;
            bytes[2 * k + 1] = (uint8_t)((uint16_t)v >> 8);
        }
        uint8_t d[SL_SHA256_BYTES];
        char hex[SL_SHA256_HEX_CHARS + 1];
        sl_sha256(bytes, 8, d);
        sl_sha256_hex(d, hex);
        cr_assert_str_eq(hex, json_string_value(json_object_get(arr, "sha256")), "%s",
                         json_string_value(json_object_get(arr, "path")));
        checked++;
    }
    cr_assert_gt(checked, 3);
    json_decref(m);
}
