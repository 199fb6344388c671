/* SPDX-License-Identifier: MIT */
/*
 * Arrays: creating and opening, metadata accessors, and round trips of every
 * dtype through every codec chain in v2, v3 and sharded v3 over odd shapes
 * with edge chunks; missing chunks, fill chunks, partial writes, padding,
 * checksums, stored counts, groups and errors.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "testkit.h"
#include "zarr_internal.h"

TestSuite(io_array, .timeout = 60.0);

static sl_store *
mem_store(void)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    cr_assert_not_null(s);
    return s;
}

/* A 3-d spec of odd shape [13, 7, 5] and chunks [4, 3, 2]; sharded ones
 * group [2, 2, 2] inner chunks into shards. */
static struct sl_array_spec
odd_spec(int format, sl_dtype dt, bool sharded)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.zarr_format = format;
    sp.rank = 3;
    sp.dtype = dt;
    const uint64_t shape[3] = {13, 7, 5}, chunk[3] = {4, 3, 2};
    for (int d = 0; d < 3; d++) {
        sp.shape[d] = shape[d];
        sp.chunk_shape[d] = chunk[d];
        sp.shard_shape[d] = sharded ? 2 * chunk[d] : 0;
    }
    return sp;
}

/* Variants of the codec settings a round trip runs through. */
static const char *const variant_names[] = {
    "raw",
    "zstd",
    "zstd+crc32c",
    "gzip",
    "blosc-lz4-shuffle",
    "blosc-zstd-bitshuffle",
    "big-endian+F",
    "zstd-checksum",
};

static bool
apply_variant(struct sl_array_spec *sp, int v)
{
    sp->codec = SL_CODEC_SPEC_DEFAULT;
    bool v3 = sp->zarr_format == 3;
    switch (v) {
    case 0:
        sp->codec.compressor = SL_COMPRESSOR_NONE;
        return true;
    case 1:
        sp->codec.level = 3;
        return true;
    case 2:
        sp->checksum = true;
        return v3;
    case 3:
        return sl_codec_spec_parse("gzip:4", &sp->codec, NULL) == SL_OK;
    case 4:
        return sl_codec_spec_parse("blosc:lz4:5:shuffle", &sp->codec, NULL) == SL_OK;
    case 5:
        return sl_codec_spec_parse("blosc:zstd:3:bitshuffle", &sp->codec, NULL) == SL_OK;
    case 6:
        sp->endian = SL_ENDIAN_BIG;
        sp->order_f = true;
        return true;
    default:
        sp->codec.checksum = true;
        return v3;
    }
}

/* Write random data as a region, read it back whole, in parts and chunk by
 * chunk; reopen from the store and read again. */
static void
round_trip(int format, sl_dtype dt, int variant, bool sharded)
{
    struct sl_array_spec sp = odd_spec(format, dt, sharded);
    if (!apply_variant(&sp, variant))
        return;
    const char *what = variant_names[variant];
    sl_store *s = mem_store();
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, "g/arr", &sp, NULL, &err);
    cr_assert_not_null(a, "v%d %s %s%s: %s", format, sl_dtype_name(dt), what,
                       sharded ? " sharded" : "", err.text);
    size_t es = sl_dtype_size(dt);
    uint64_t n = sl_test_count(3, sp.shape);
    uint8_t *data = malloc(n * es), *back = calloc(n, es);
    sl_test_fill_data(data, n, dt, (unsigned)(variant * 31 + format), false);
    struct sl_region whole = sl_region_whole(3, sp.shape);
    cr_assert_eq(sl_array_write_region(a, &whole, data, n * es, NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    sl_array_unref(a);

    a = sl_array_open(s, "g/arr", NULL, &err);
    cr_assert_not_null(a, "reopen %s: %s", what, err.text);
    cr_assert_eq(sl_array_read_region(a, &whole, back, n * es, NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    cr_assert(memcmp(data, back, n * es) == 0, "v%d %s %s%s: region read differs", format,
              sl_dtype_name(dt), what, sharded ? " sharded" : "");
    /* A part crossing chunk (and shard) boundaries. */
    const uint64_t start[3] = {3, 2, 1}, shape[3] = {7, 4, 3};
    struct sl_region part = {.rank = 3};
    for (int d = 0; d < 3; d++) {
        part.start[d] = start[d];
        part.stop[d] = start[d] + shape[d];
    }
    uint8_t *got = malloc(84 * es), *want = malloc(84 * es);
    sl_test_box_extract(want, data, 3, sp.shape, start, shape, es);
    cr_assert_eq(sl_array_read_region(a, &part, got, 84 * es, NULL, NULL, &err), SL_OK);
    cr_assert(memcmp(got, want, 84 * es) == 0, "%s: part differs", what);
    /* Chunk by chunk: the last chunk is an edge chunk in every dimension. */
    size_t cb = sl_array_chunk_bytes(a);
    uint8_t *chunk = malloc(cb), *chunk_want = malloc(cb);
    const uint64_t last[3] = {3, 2, 2}, cstart[3] = {12, 6, 4}, cshape[3] = {1, 1, 1};
    bool missing = true;
    cr_assert_eq(sl_array_read_chunk(a, last, chunk, cb, NULL, &missing, &err), SL_OK);
    sl_test_box_extract(chunk_want, data, 3, sp.shape, cstart, cshape, es);
    /* Its one element decides whether it was stored (zero is the fill). */
    bool zero = true;
    for (size_t i = 0; i < es; i++)
        zero = zero && chunk_want[i] == 0;
    cr_assert_eq(missing, zero, "%s: missing %d for a %s element", what, missing,
                 zero ? "fill" : "non-fill");
    cr_assert(memcmp(chunk, chunk_want, es) == 0, "%s: edge chunk's element differs", what);
    free(chunk);
    free(chunk_want);
    free(got);
    free(want);
    free(data);
    free(back);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_array, every_dtype_round_trips_every_codec_in_v3)
{
    for (int dt = 0; dt < SL_DTYPE_COUNT_; dt++)
        for (int v = 0; v < (int)SL_ARRAY_LEN(variant_names); v++)
            round_trip(3, (sl_dtype)dt, v, false);
}

Test(io_array, every_dtype_round_trips_every_codec_in_v3_sharded)
{
    for (int dt = 0; dt < SL_DTYPE_COUNT_; dt++)
        for (int v = 0; v < (int)SL_ARRAY_LEN(variant_names); v++)
            round_trip(3, (sl_dtype)dt, v, true);
}

Test(io_array, every_dtype_round_trips_every_codec_in_v2)
{
    for (int dt = 0; dt < SL_DTYPE_COUNT_; dt++)
        for (int v = 0; v < (int)SL_ARRAY_LEN(variant_names); v++)
            round_trip(2, (sl_dtype)dt, v, false);
}

Test(io_array, metadata_is_read_back)
{
    sl_store *s = mem_store();
    struct sl_array_spec sp = odd_spec(3, SL_DTYPE_F32, true);
    const float fill = -1.5f;
    sp.fill_value = &fill;
    sp.dimension_names[0] = "z";
    sp.dimension_names[2] = "x";
    sp.attributes_json = "{\"units\": \"um\", \"n\": [1, 2]}";
    sp.index_at_start = true;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, "", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    sl_array_unref(a);
    a = sl_array_open(s, "", NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    cr_assert_eq(sl_array_zarr_format(a), 3);
    cr_assert_eq(sl_array_rank(a), 3);
    cr_assert_eq(sl_array_shape(a)[0], 13);
    cr_assert_eq(sl_array_dtype(a), SL_DTYPE_F32);
    cr_assert_eq(sl_array_chunk_shape(a)[1], 3);
    cr_assert_eq(sl_array_shard_shape(a)[1], 6);
    cr_assert_eq(sl_array_chunk_bytes(a), 4 * 3 * 2 * 4);
    cr_assert_eq(*(const float *)sl_array_fill_value(a), -1.5f);
    cr_assert_str_eq(sl_array_dimension_name(a, 0), "z");
    cr_assert_null(sl_array_dimension_name(a, 1));
    cr_assert_null(sl_array_dimension_name(a, 7));
    cr_assert_str_eq(sl_array_attributes(a), "{\"units\":\"um\",\"n\":[1,2]}");
    char text[512];
    sl_array_codecs_describe(a, text, sizeof(text));
    cr_assert_str_eq(text, "sharding_indexed(chunk_shape=[4, 3, 2], index_location=start, "
                           "index_codecs=[bytes(little) > crc32c], codecs=[bytes(little) > "
                           "zstd(level=1)])");
    sl_array_fill_describe(a, text, sizeof(text));
    cr_assert_str_eq(text, "-1.5");
    struct sl_grid g;
    cr_assert_eq(sl_array_chunk_grid(a, &g, NULL), SL_OK);
    cr_assert(g.n_chunks[0] == 4 && g.n_chunks[1] == 3 && g.n_chunks[2] == 3);
    sl_grid_fini(&g);
    cr_assert_eq(sl_array_shard_grid(a, &g, NULL), SL_OK);
    cr_assert(g.n_chunks[0] == 2 && g.n_chunks[1] == 2 && g.n_chunks[2] == 2);
    sl_grid_fini(&g);
    const uint64_t c[3] = {3, 2, 1};
    sl_array_chunk_key(a, c, text, sizeof(text));
    cr_assert_str_eq(text, "c/1/1/0", "the key of the inner chunk's shard");
    cr_assert_eq(sl_array_store(a), s);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_array, missing_chunks_read_as_fill_and_fill_chunks_are_not_stored)
{
    sl_store *s = mem_store();
    struct sl_array_spec sp = odd_spec(3, SL_DTYPE_I16, false);
    const int16_t fill = 42;
    sp.fill_value = &fill;
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    cr_assert_not_null(a);
    int16_t chunk[24];
    bool missing = false;
    const uint64_t c[3] = {1, 1, 1};
    cr_assert_eq(sl_array_read_chunk(a, c, chunk, sizeof(chunk), NULL, &missing, NULL), SL_OK);
    cr_assert(missing);
    for (int i = 0; i < 24; i++)
        cr_assert_eq(chunk[i], 42);
    struct sl_array_stored st;
    chunk[5] = 7;
    cr_assert_eq(sl_array_write_chunk(a, c, chunk, sizeof(chunk), NULL, NULL), SL_OK);
    cr_assert_eq(sl_array_stored(a, &st, NULL), SL_OK);
    cr_assert_eq(st.n_objects, 1);
    chunk[5] = 42;
    cr_assert_eq(sl_array_write_chunk(a, c, chunk, sizeof(chunk), NULL, NULL), SL_OK);
    cr_assert_eq(sl_array_stored(a, &st, NULL), SL_OK);
    cr_assert_eq(st.n_objects, 0, "a chunk equal to the fill value is deleted");
    cr_assert_eq(sl_array_read_chunk(a, c, chunk, sizeof(chunk), NULL, &missing, NULL), SL_OK);
    cr_assert(missing);
    sl_array_unref(a);

    struct sl_array_opts o = SL_ARRAY_OPTS_DEFAULT;
    o.write_fill_chunks = true;
    a = sl_array_open(s, "a", &o, NULL);
    cr_assert_eq(sl_array_write_chunk(a, c, chunk, sizeof(chunk), NULL, NULL), SL_OK);
    cr_assert_eq(sl_array_stored(a, &st, NULL), SL_OK);
    cr_assert_eq(st.n_objects, 1, "write_fill_chunks stores it");
    cr_assert_gt(st.n_bytes, 0);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_array, edge_chunks_are_stored_full_size_with_fill_padding)
{
    sl_store *s = mem_store();
    struct sl_array_spec sp = odd_spec(3, SL_DTYPE_U8, false);
    sp.codec.compressor = SL_COMPRESSOR_NONE;
    const uint8_t fill = 9;
    sp.fill_value = &fill;
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    /* The caller's padding is garbage; what is stored must be the fill. */
    uint8_t chunk[24];
    memset(chunk, 0xee, sizeof(chunk));
    const uint64_t c[3] = {3, 2, 2}; /* extents 1, 1, 1 of 4, 3, 2 */
    cr_assert_eq(sl_array_write_chunk(a, c, chunk, sizeof(chunk), NULL, NULL), SL_OK);
    struct sl_buf raw = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "a/c/3/2/2", NULL, &raw, NULL, NULL), SL_OK);
    cr_assert_eq(raw.size, 24, "stored full size");
    cr_assert_eq(raw.data[0], 0xee);
    for (int i = 1; i < 24; i++)
        cr_assert_eq(raw.data[i], 9, "padding byte %d", i);
    /* A region write of the same edge pads too. */
    const uint64_t c2[3] = {3, 0, 0};
    struct sl_region r = {.rank = 3, .start = {12, 0, 0}, .stop = {13, 3, 2}};
    uint8_t six[6] = {1, 2, 3, 4, 5, 6};
    cr_assert_eq(sl_array_write_region(a, &r, six, sizeof(six), NULL, NULL, NULL), SL_OK);
    char key[64];
    sl_array_chunk_key(a, c2, key, sizeof(key));
    cr_assert_eq(sl_store_get(s, key, NULL, &raw, NULL, NULL), SL_OK);
    cr_assert_eq(raw.size, 24);
    cr_assert(memcmp(raw.data, six, 6) == 0);
    for (int i = 6; i < 24; i++)
        cr_assert_eq(raw.data[i], 9);
    sl_buf_fini(&raw);
    sl_array_unref(a);
    sl_store_unref(s);
}

static void
check_partial_writes_merge(bool sharded)
{
    sl_store *s = mem_store();
    struct sl_array_spec sp = odd_spec(3, SL_DTYPE_I32, sharded);
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    uint64_t n = sl_test_count(3, sp.shape);
    int32_t *model = calloc(n, 4), *got = calloc(n, 4);
    unsigned seed = 1;
    /* Random boxes written one after another must compose like a model. */
    for (int round = 0; round < 40; round++) {
        struct sl_region r = {.rank = 3};
        uint64_t shape[3];
        for (int d = 0; d < 3; d++) {
            r.start[d] = (uint64_t)rand_r(&seed) % sp.shape[d];
            r.stop[d] = r.start[d] + 1 + (uint64_t)rand_r(&seed) % (sp.shape[d] - r.start[d]);
            shape[d] = r.stop[d] - r.start[d];
        }
        uint64_t m = sl_test_count(3, shape);
        int32_t *box = malloc(m * 4);
        for (uint64_t i = 0; i < m; i++)
            box[i] = round == 7 ? 0 : round * 1000 + (int32_t)i;
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_array_write_region(a, &r, box, m * 4, NULL, NULL, &err), SL_OK, "%s",
                     err.text);
        for (uint64_t i = 0; i < m; i++) {
            uint64_t z = r.start[0] + i / (shape[1] * shape[2]);
            uint64_t y = r.start[1] + i / shape[2] % shape[1];
            uint64_t x = r.start[2] + i % shape[2];
            model[(z * sp.shape[1] + y) * sp.shape[2] + x] = box[i];
        }
        free(box);
    }
    struct sl_region whole = sl_region_whole(3, sp.shape);
    cr_assert_eq(sl_array_read_region(a, &whole, got, n * 4, NULL, NULL, NULL), SL_OK);
    cr_assert(memcmp(got, model, n * 4) == 0);
    free(model);
    free(got);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_array, partial_region_writes_merge_with_what_is_stored)
{
    check_partial_writes_merge(false);
}

Test(io_array, partial_region_writes_merge_inside_shards) { check_partial_writes_merge(true); }

/* The checksum the manifests define, computed directly. */
static void
reference_checksum(const void *data, size_t n, sl_dtype dt, char hex[65])
{
    size_t es = sl_dtype_size(dt);
    uint8_t *copy = malloc(n * es);
    memcpy(copy, data, n * es);
    size_t w = sl_dtype_is_complex(dt) ? es / 2 : es;
    if (dt == SL_DTYPE_F32 || dt == SL_DTYPE_C64)
        for (size_t i = 0; i < n * es / 4; i++) {
            float f;
            memcpy(&f, copy + 4 * i, 4);
            if (isnan(f))
                memcpy(copy + 4 * i, &(uint32_t){0x7fc00000u}, 4);
        }
    if (dt == SL_DTYPE_F64 || dt == SL_DTYPE_C128)
        for (size_t i = 0; i < n * es / 8; i++) {
            double d;
            memcpy(&d, copy + 8 * i, 8);
            if (isnan(d))
                memcpy(copy + 8 * i, &(uint64_t){0x7ff8000000000000ull}, 8);
        }
    if (dt == SL_DTYPE_F16)
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, copy + 2 * i, 2);
            if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0)
                memcpy(copy + 2 * i, &(uint16_t){0x7e00}, 2);
        }
    (void)w;
    uint8_t d[SL_SHA256_BYTES];
    sl_sha256(copy, n * es, d);
    sl_sha256_hex(d, hex);
    free(copy);
}

Test(io_array, checksum_canonicalizes_nans_and_covers_missing_chunks)
{
    const sl_dtype types[] = {SL_DTYPE_F16,  SL_DTYPE_F32, SL_DTYPE_F64, SL_DTYPE_C64,
                              SL_DTYPE_C128, SL_DTYPE_I16, SL_DTYPE_BOOL};
    for (size_t t = 0; t < SL_ARRAY_LEN(types); t++) {
        sl_store *s = mem_store();
        struct sl_array_spec sp = odd_spec(3, types[t], t % 2 == 0);
        sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
        size_t es = sl_dtype_size(types[t]);
        uint64_t n = sl_test_count(3, sp.shape);
        uint8_t *data = calloc(n, es);
        sl_test_fill_data(data, n, types[t], 3, true);
        /* Leave the first planes unwritten: they read (and hash) as fill. */
        memset(data, 0, 8 * 7 * 5 * es);
        struct sl_region r = {.rank = 3, .start = {8, 0, 0}, .stop = {13, 7, 5}};
        cr_assert_eq(
            sl_array_write_region(a, &r, data + 8 * 7 * 5 * es, 5 * 7 * 5 * es, NULL, NULL, NULL),
            SL_OK);
        uint8_t d[SL_SHA256_BYTES];
        char got[65], want[65];
        cr_assert_eq(sl_array_checksum(a, d, NULL, NULL), SL_OK);
        sl_sha256_hex(d, got);
        reference_checksum(data, n, types[t], want);
        cr_assert_str_eq(got, want, "%s", sl_dtype_name(types[t]));
        free(data);
        sl_array_unref(a);
        sl_store_unref(s);
    }
}

Test(io_array, stored_objects_are_counted)
{
    sl_store *s = mem_store();
    struct sl_array_spec sp = odd_spec(2, SL_DTYPE_U16, false);
    sp.separator = '/';
    sl_array *a = sl_array_create(s, "x", &sp, NULL, NULL);
    uint16_t chunk[24];
    for (int i = 0; i < 24; i++)
        chunk[i] = (uint16_t)(i + 1);
    const uint64_t c1[3] = {0, 0, 0}, c2[3] = {3, 2, 2};
    cr_assert_eq(sl_array_write_chunk(a, c1, chunk, sizeof(chunk), NULL, NULL), SL_OK);
    cr_assert_eq(sl_array_write_chunk(a, c2, chunk, sizeof(chunk), NULL, NULL), SL_OK);
    /* Keys that are not chunks of this array are not counted. */
    cr_assert_eq(sl_store_set(s, "x/9/9/9", "zz", 2, NULL), SL_OK);
    cr_assert_eq(sl_store_set(s, "x/notes.txt", "zz", 2, NULL), SL_OK);
    struct sl_buf raw = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "x/3/2/2", NULL, &raw, NULL, NULL), SL_OK, "v2 '/' keys");
    struct sl_array_stored st;
    cr_assert_eq(sl_array_stored(a, &st, NULL), SL_OK);
    cr_assert_eq(st.n_objects, 2);
    sl_buf_fini(&raw);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* Whether `key` is stored in `s`. */
static bool
has_key(sl_store *s, const char *key)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_status st = sl_store_get(s, key, NULL, &b, NULL, NULL);
    sl_buf_fini(&b);
    cr_assert(st == SL_OK || st == SL_ENOTFOUND, "%s: %d", key, (int)st);
    return st == SL_OK;
}

Test(io_array, making_room_refuses_a_node_unless_overwritten_and_never_foreign_objects)
{
    sl_store *s = mem_store();
    bool existed = true;
    cr_assert_eq(sl_zarr_make_room(s, "new", false, true, &existed, NULL), SL_OK);
    cr_assert(!existed, "nothing there is room");
    struct sl_array_spec sp = odd_spec(2, SL_DTYPE_U8, false);
    sl_array *a = sl_array_create(s, "arr", &sp, NULL, NULL);
    cr_assert_not_null(a);
    const uint8_t chunk[4 * 3 * 2] = {1};
    const uint64_t at[3] = {0, 0, 0};
    cr_assert_eq(sl_array_write_chunk(a, at, chunk, sizeof(chunk), NULL, NULL), SL_OK);
    sl_array_unref(a);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_zarr_make_room(s, "arr", false, true, &existed, &err), SL_EEXIST);
    cr_assert(existed);
    cr_assert_not_null(strstr(err.text, "already holds a Zarr v2 array; replacing it needs the "
                                        "overwrite option"),
                       "%s", err.text);
    cr_assert_eq(sl_zarr_make_room(s, "arr", true, false, &existed, NULL), SL_OK);
    cr_assert(existed);
    cr_assert(has_key(s, "arr/.zarray"), "checking alone deletes nothing");
    cr_assert_eq(sl_zarr_make_room(s, "arr", true, true, &existed, NULL), SL_OK);
    cr_assert(!has_key(s, "arr/.zarray"), "overwritten: the metadata is deleted");
    cr_assert(!has_key(s, "arr/0.0.0"), "overwritten: the chunks are deleted");
    cr_assert_eq(sl_store_set(s, "notes/readme.txt", "hi", 2, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_zarr_make_room(s, "notes", true, true, &existed, &err), SL_EEXIST);
    cr_assert(!existed);
    cr_assert_not_null(strstr(err.text, "not a Zarr node"), "%s", err.text);
    cr_assert(has_key(s, "notes/readme.txt"), "objects of no Zarr node are never deleted");
    sl_store_unref(s);
}

Test(io_array, groups_and_probing)
{
    sl_store *s = mem_store();
    cr_assert_eq(sl_group_create(s, "", 3, "{\"a\": 1}", NULL), SL_OK);
    cr_assert_eq(sl_group_create(s, "old", 2, "{\"b\": 2}", NULL), SL_OK);
    sl_zarr_kind k;
    int f = 0;
    cr_assert_eq(sl_zarr_probe(s, "", &k, &f, NULL), SL_OK);
    cr_assert(k == SL_ZARR_GROUP && f == 3);
    cr_assert_eq(sl_zarr_probe(s, "old", &k, &f, NULL), SL_OK);
    cr_assert(k == SL_ZARR_GROUP && f == 2);
    cr_assert_eq(sl_zarr_probe(s, "nothing", &k, NULL, NULL), SL_OK);
    cr_assert_eq(k, SL_ZARR_NONE);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_array_open(s, "", NULL, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "is a group"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_null(sl_array_open(s, "nothing", NULL, &err));
    cr_assert_eq(err.code, SL_ENOTFOUND);
    struct sl_array_spec sp = odd_spec(3, SL_DTYPE_U8, false);
    sl_array *a = sl_array_create(s, "old/arr", &sp, NULL, NULL);
    cr_assert_not_null(a);
    sl_array_unref(a);
    err = SL_ERROR_INIT;
    cr_assert_null(sl_array_create(s, "old/arr", &sp, NULL, &err));
    cr_assert_eq(err.code, SL_EEXIST);
    sp.overwrite = true;
    a = sl_array_create(s, "old/arr", &sp, NULL, NULL);
    cr_assert_not_null(a, "overwrite replaces the metadata");
    sl_array_unref(a);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_group_create(s, "g", 3, "[1]", &err), SL_EINVAL);
    sl_store_unref(s);
}

Test(io_array, bad_calls_get_statuses)
{
    sl_store *s = mem_store();
    struct sl_array_spec sp = odd_spec(3, SL_DTYPE_U8, false);
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    uint8_t buf[64];
    struct sl_error err = SL_ERROR_INIT;
    const uint64_t out[3] = {4, 0, 0};
    cr_assert_eq(sl_array_read_chunk(a, out, buf, sizeof(buf), NULL, NULL, &err), SL_EBOUNDS);
    cr_assert_eq(err.chunk.idx[0], 4);
    const uint64_t ok[3] = {0, 0, 0};
    cr_assert_eq(sl_array_read_chunk(a, ok, buf, 10, NULL, NULL, NULL), SL_EINVAL);
    cr_assert_eq(sl_array_write_chunk(a, out, buf, sizeof(buf), NULL, NULL), SL_EBOUNDS);
    struct sl_region r = {.rank = 3, .start = {0, 0, 0}, .stop = {14, 1, 1}};
    cr_assert_eq(sl_array_read_region(a, &r, buf, sizeof(buf), NULL, NULL, NULL), SL_EBOUNDS);
    r.stop[0] = 13;
    cr_assert_eq(sl_array_read_region(a, &r, buf, 5, NULL, NULL, NULL), SL_EINVAL);
    struct sl_region empty = {.rank = 3, .start = {2, 2, 2}, .stop = {2, 3, 3}};
    cr_assert_eq(sl_array_read_region(a, &empty, NULL, 0, NULL, NULL, NULL), SL_OK);
    sl_array_unref(a);

    struct sl_array_spec v2 = odd_spec(2, SL_DTYPE_U8, true);
    err = SL_ERROR_INIT;
    cr_assert_null(sl_array_create(s, "b", &v2, NULL, &err));
    cr_assert_eq(err.code, SL_EUNSUPPORTED);
    struct sl_array_spec bad = odd_spec(3, SL_DTYPE_U8, false);
    bad.attributes_json = "{not json";
    err = SL_ERROR_INIT;
    cr_assert_null(sl_array_create(s, "c", &bad, NULL, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    bad = odd_spec(3, SL_DTYPE_U8, true);
    bad.shard_shape[1] = 5;
    err = SL_ERROR_INIT;
    cr_assert_null(sl_array_create(s, "d", &bad, NULL, &err));
    cr_assert_eq(err.code, SL_EPARSE);
    cr_assert_not_null(strstr(err.text, "not a multiple"), "%s", err.text);
    bad = odd_spec(3, SL_DTYPE_U8, false);
    bad.chunk_shape[0] = 0;
    err = SL_ERROR_INIT;
    cr_assert_null(sl_array_create(s, "e", &bad, NULL, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    err = SL_ERROR_INIT;
    cr_assert_null(sl_array_open(s, "../x", NULL, &err));
    sl_store_unref(s);
}

Test(io_array, zero_dimensional_and_empty_arrays)
{
    sl_store *s = mem_store();
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.dtype = SL_DTYPE_F64;
    sl_array *a = sl_array_create(s, "scalar", &sp, NULL, NULL);
    cr_assert_not_null(a);
    double v = 2.5, back = 0;
    struct sl_region r = sl_region_whole(0, NULL);
    cr_assert_eq(sl_array_write_region(a, &r, &v, 8, NULL, NULL, NULL), SL_OK);
    cr_assert_eq(sl_array_read_region(a, &r, &back, 8, NULL, NULL, NULL), SL_OK);
    cr_assert_eq(back, 2.5);
    struct sl_buf raw = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "scalar/c", NULL, &raw, NULL, NULL), SL_OK);
    sl_buf_fini(&raw);
    sl_array_unref(a);
    sp.zarr_format = 2;
    a = sl_array_create(s, "scalar2", &sp, NULL, NULL);
    cr_assert_eq(sl_array_write_region(a, &r, &v, 8, NULL, NULL, NULL), SL_OK);
    cr_assert_eq(sl_store_size(s, "scalar2/0", &(uint64_t){0}, NULL), SL_OK);
    sl_array_unref(a);
    sp = odd_spec(3, SL_DTYPE_U8, true);
    sp.shape[1] = 0;
    a = sl_array_create(s, "empty", &sp, NULL, NULL);
    cr_assert_not_null(a);
    uint8_t d[SL_SHA256_BYTES];
    cr_assert_eq(sl_array_checksum(a, d, NULL, NULL), SL_OK);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* Which chunks exist, from chunk keys (unsharded) or one index read (sharded). */
static void
check_chunks_exist(bool sharded)
{
    sl_store *s = mem_store();
    struct sl_array_spec sp = odd_spec(3, SL_DTYPE_U8, sharded);
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    cr_assert_not_null(a);
    uint8_t chunk[24];
    memset(chunk, 9, sizeof(chunk));
    const uint64_t written[2][3] = {{1, 1, 1}, {3, 2, 2}};
    for (int i = 0; i < 2; i++)
        cr_assert_eq(sl_array_write_chunk(a, written[i], chunk, sizeof(chunk), NULL, NULL), SL_OK);
    struct sl_grid shards, chunks;
    cr_assert_eq(sl_array_shard_grid(a, &shards, NULL), SL_OK);
    cr_assert_eq(sl_array_chunk_grid(a, &chunks, NULL), SL_OK);
    const uint64_t per = sharded ? 2 : 1; /* inner chunks per shard and dimension */
    uint64_t n_seen = 0;
    for (uint64_t i = 0; i < shards.n_total; i++) {
        uint64_t sc[3];
        sl_grid_coords_of(&shards, i, sc);
        bool exist[8];
        struct sl_store_stats before, after;
        sl_store_get_stats(s, &before);
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_array_shard_chunks_exist(a, sc, exist, 8, NULL, &err), SL_OK, "%s",
                     err.text);
        sl_store_get_stats(s, &after);
        bool stored = false;
        for (uint64_t k = 0; k < per * per * per; k++) {
            const uint64_t in[3] = {sc[0] * per + k / (per * per), sc[1] * per + k / per % per,
                                    sc[2] * per + k % per};
            bool want = false;
            for (int w = 0; w < 2; w++)
                want = want ||
                       (in[0] == written[w][0] && in[1] == written[w][1] && in[2] == written[w][2]);
            cr_assert_eq(exist[k], want, "shard %zu inner %zu", (size_t)i, (size_t)k);
            n_seen += exist[k];
            stored = stored || want;
        }
        if (sharded)
            cr_assert_eq(after.n_get - before.n_get, stored ? 1u : 0u,
                         "only the index of a stored shard is read");
        else
            cr_assert_eq(after.bytes_read, before.bytes_read, "no chunk bytes are read");
    }
    cr_assert_eq(n_seen, 2);
    const uint64_t outside[3] = {0, shards.n_chunks[1], 0};
    bool exist[8];
    cr_assert_eq(sl_array_shard_chunks_exist(a, outside, exist, 8, NULL, NULL), SL_EBOUNDS);
    struct sl_error err = SL_ERROR_INIT;
    const uint64_t origin[3] = {0, 0, 0};
    cr_assert_eq(sl_array_shard_chunks_exist(a, origin, exist, 0, NULL, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, sharded ? "holds 8 chunks" : "holds 1 chunk"), "%s",
                       err.text);
    sl_grid_fini(&shards);
    sl_grid_fini(&chunks);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_array, chunks_exist_from_keys_without_reading_data) { check_chunks_exist(false); }

Test(io_array, chunks_exist_from_one_shard_index_read) { check_chunks_exist(true); }

Test(io_array, chunks_exist_reports_a_corrupt_shard_index)
{
    sl_store *s = mem_store();
    struct sl_array_spec sp = odd_spec(3, SL_DTYPE_U8, true);
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    cr_assert_not_null(a);
    cr_assert_eq(sl_store_set(s, "a/c/0/0/0", "garbage bytes", 13, NULL), SL_OK);
    bool exist[8];
    struct sl_error err = SL_ERROR_INIT;
    const uint64_t origin[3] = {0, 0, 0};
    cr_assert_eq(sl_array_shard_chunks_exist(a, origin, exist, 8, NULL, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.source, "a/c/0/0/0"), "%s", err.source);
    sl_array_unref(a);
    sl_store_unref(s);
}
