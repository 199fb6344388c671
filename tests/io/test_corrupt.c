/* SPDX-License-Identifier: MIT */
/*
 * Hostile input: truncated and bit-flipped chunks, bad checksums, zstd
 * frames that lie about their size, shard indexes pointing past the shard,
 * shards smaller than their index, overflowing shapes, keys and symlinks
 * that try to leave the store.  Each must be a status with a message that
 * names the key (and chunk), never a crash, an abort or an allocation of
 * what the input claims.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sluice.h>

#include "codec_internal.h"
#include "testutil.h"
#include "zarr_internal.h"

TestSuite(io_corrupt, .timeout = 60.0);

/* A 1-d uint32 array [64] in chunks of [16] (sharded: shards of [32]). */
static sl_array *
make_array(sl_store *s, const char *codec, bool checksum, bool sharded)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 1;
    sp.dtype = SL_DTYPE_U32;
    sp.shape[0] = 64;
    sp.chunk_shape[0] = 16;
    sp.shard_shape[0] = sharded ? 32 : 0;
    sp.checksum = checksum;
    cr_assert_eq(sl_codec_spec_parse(codec, &sp.codec, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, "arr", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    uint32_t data[64];
    for (int i = 0; i < 64; i++)
        data[i] = (uint32_t)(i * 2654435761u) >> 7;
    struct sl_region whole = {.rank = 1, .start = {0}, .stop = {64}};
    cr_assert_eq(sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, NULL), SL_OK);
    return a;
}

static struct sl_buf
get(sl_store *s, const char *key)
{
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, key, NULL, &b, NULL, NULL), SL_OK, "%s", key);
    return b;
}

/* Read chunk `c`; expect `want` with the key and coordinates in the error. */
static void
expect_chunk_error(sl_array *a, uint64_t c, sl_status want, const char *key, const char *text)
{
    uint32_t buf[16];
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl_array_read_chunk(a, &c, buf, sizeof(buf), NULL, NULL, &err);
    cr_assert_eq(st, want, "got %s: %s", sl_status_name(st), err.text);
    cr_assert_str_eq(err.source, key);
    cr_assert_eq(err.chunk.rank, 1);
    cr_assert_eq(err.chunk.idx[0], c);
    cr_assert_not_null(strstr(err.text, text), "\"%s\" lacks \"%s\"", err.text, text);
}

Test(io_corrupt, a_truncated_chunk_is_corrupt)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "zstd:1", false, false);
    struct sl_buf b = get(s, "arr/c/1");
    cr_assert_eq(sl_store_set(s, "arr/c/1", b.data, b.size / 2, NULL), SL_OK);
    expect_chunk_error(a, 1, SL_ECORRUPT, "arr/c/1", "zstd");
    cr_assert_eq(sl_store_set(s, "arr/c/1", b.data, 0, NULL), SL_OK);
    expect_chunk_error(a, 1, SL_ECORRUPT, "arr/c/1", "not a zstd frame");
    sl_buf_fini(&b);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_corrupt, a_raw_chunk_of_the_wrong_size_is_corrupt)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "none", false, false);
    cr_assert_eq(sl_store_set(s, "arr/c/2", "12345", 5, NULL), SL_OK);
    expect_chunk_error(a, 2, SL_ECORRUPT, "arr/c/2", "chunk decodes to 5 bytes, expected 64");
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_corrupt, a_bad_crc_names_both_checksums)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "zstd:1", true, false);
    struct sl_buf b = get(s, "arr/c/3");
    b.data[b.size - 1] ^= 0x80;
    cr_assert_eq(sl_store_set(s, "arr/c/3", b.data, b.size, NULL), SL_OK);
    expect_chunk_error(a, 3, SL_ECORRUPT, "arr/c/3", "crc32c mismatch: stored 0x");
    uint32_t buf[16];
    uint64_t c = 3;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_chunk(a, &c, buf, sizeof(buf), NULL, NULL, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, ", computed 0x"), "%s", err.text);
    char line[512];
    sl_error_format(&err, line, sizeof(line));
    cr_assert_not_null(strstr(line, "ECORRUPT: arr/c/3: chunk (3): crc32c mismatch"), "%s", line);
    sl_buf_fini(&b);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* Flip every bit of every byte of a chunk in turn: each read must succeed
 * (codecs without checksums may decode garbage) or fail with a status;
 * with a crc32c, every flip must be caught. */
static void
flip_sweep(const char *codec, bool checksum, bool all_caught)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, codec, checksum, false);
    struct sl_buf b = get(s, "arr/c/0");
    int caught = 0, flips = 0;
    for (size_t i = 0; i < b.size; i++) {
        for (int bit = 0; bit < 8; bit++) {
            b.data[i] ^= (uint8_t)(1 << bit);
            cr_assert_eq(sl_store_set(s, "arr/c/0", b.data, b.size, NULL), SL_OK);
            uint32_t buf[16];
            uint64_t c = 0;
            struct sl_error err = SL_ERROR_INIT;
            sl_status st = sl_array_read_chunk(a, &c, buf, sizeof(buf), NULL, NULL, &err);
            cr_assert(st == SL_OK || st == SL_ECORRUPT, "%s byte %zu bit %d: %s %s", codec, i, bit,
                      sl_status_name(st), err.text);
            cr_assert(st == SL_OK || err.text[0] != '\0');
            caught += st != SL_OK;
            flips++;
            b.data[i] ^= (uint8_t)(1 << bit);
        }
    }
    if (all_caught)
        cr_assert_eq(caught, flips, "%s: %d of %d flips caught", codec, caught, flips);
    sl_buf_fini(&b);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_corrupt, every_flipped_bit_is_caught_by_crc32c) { flip_sweep("zstd:1", true, true); }
Test(io_corrupt, flipped_bits_in_zstd_never_crash) { flip_sweep("zstd:3", false, false); }
Test(io_corrupt, flipped_bits_in_gzip_never_crash) { flip_sweep("gzip:6", false, false); }
Test(io_corrupt, flipped_bits_in_blosc_never_crash)
{
    flip_sweep("blosc:lz4:5:shuffle", false, false);
}

Test(io_corrupt, a_zstd_frame_declaring_a_huge_size_is_refused_before_allocating)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "zstd:1", false, false);
    /* Magic, a frame header with an 8-byte content size of 2^40, and a
     * raw last block of 4 bytes. */
    const uint8_t frame[] = {0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 0,
                             1,    0,    0,    0x21, 0,    0, 1, 2, 3, 4};
    cr_assert_eq(sl_store_set(s, "arr/c/0", frame, sizeof(frame), NULL), SL_OK);
    expect_chunk_error(a, 0, SL_ECORRUPT, "arr/c/0",
                       "zstd frame declares 1099511627776 bytes, the chunk decodes to 64");
    /* A real frame of the wrong size. */
    uint8_t big[68] = {0};
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    struct sl__codec z = {.id = SL__CODEC_ZSTD};
    struct sl_buf out = SL_BUF_INIT;
    cr_assert_eq(sl__zstd_encode(&z, ctx, big, sizeof(big), &out, NULL), SL_OK);
    cr_assert_eq(sl_store_set(s, "arr/c/0", out.data, out.size, NULL), SL_OK);
    expect_chunk_error(a, 0, SL_ECORRUPT, "arr/c/0", "declares 68 bytes");
    sl_buf_fini(&out);
    sl_codec_ctx_destroy(ctx);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_corrupt, gzip_data_decoding_past_the_chunk_is_refused)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "gzip:1", false, false);
    uint8_t zeros[1 << 16] = {0};
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    struct sl__codec g = {.id = SL__CODEC_GZIP};
    g.u.gzip.level = 9;
    struct sl_buf out = SL_BUF_INIT;
    cr_assert_eq(sl__gzip_encode(&g, ctx, zeros, sizeof(zeros), &out, NULL), SL_OK);
    cr_assert_eq(sl_store_set(s, "arr/c/1", out.data, out.size, NULL), SL_OK);
    expect_chunk_error(a, 1, SL_ECORRUPT, "arr/c/1", "more than the 64 bytes expected");
    sl_buf_fini(&out);
    sl_codec_ctx_destroy(ctx);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_corrupt, a_blosc_header_lying_about_sizes_is_refused)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "blosc:lz4:5:shuffle", false, false);
    struct sl_buf b = get(s, "arr/c/2");
    /* Bytes 4..7 of a blosc header are the uncompressed size. */
    b.data[5] ^= 0x01;
    cr_assert_eq(sl_store_set(s, "arr/c/2", b.data, b.size, NULL), SL_OK);
    expect_chunk_error(a, 2, SL_ECORRUPT, "arr/c/2", "blosc");
    sl_buf_fini(&b);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* ---- shards ---------------------------------------------------------------- */

/* Rewrite entry k of the (end-located, bytes+crc32c) index of `key`. */
static void
patch_index(sl_store *s, const char *key, const sl_array *a, uint64_t k, uint64_t off, uint64_t n)
{
    struct sl_buf b = get(s, key);
    size_t ib = a->meta.index_bytes, at = b.size - ib;
    memcpy(b.data + at + 16 * k, &off, 8);
    memcpy(b.data + at + 16 * k + 8, &n, 8);
    uint32_t crc = sl__crc32c(0, b.data + at, ib - 4);
    memcpy(b.data + b.size - 4, &crc, 4);
    cr_assert_eq(sl_store_set(s, key, b.data, b.size, NULL), SL_OK);
    sl_buf_fini(&b);
}

Test(io_corrupt, a_shard_index_pointing_past_the_shard_is_corrupt)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "zstd:1", false, true);
    uint64_t size;
    cr_assert_eq(sl_store_size(s, "arr/c/0", &size, NULL), SL_OK);
    patch_index(s, "arr/c/0", a, 1, size - 2, 10);
    expect_chunk_error(a, 0, SL_ECORRUPT, "arr/c/0", "entry 1 [");
    expect_chunk_error(a, 1, SL_ECORRUPT, "arr/c/0", "exceeds the shard of");
    patch_index(s, "arr/c/0", a, 1, UINT64_MAX - 5, 10);
    expect_chunk_error(a, 1, SL_ECORRUPT, "arr/c/0", "exceeds the shard");
    patch_index(s, "arr/c/0", a, 1, 3, UINT64_MAX);
    expect_chunk_error(a, 1, SL_ECORRUPT, "arr/c/0", "exceeds the shard");
    /* Region reads report it too. */
    uint32_t buf[64];
    struct sl_region whole = {.rank = 1, .start = {0}, .stop = {64}};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_region(a, &whole, buf, sizeof(buf), NULL, NULL, &err), SL_ECORRUPT);
    cr_assert_str_eq(err.source, "arr/c/0");
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_corrupt, a_shard_smaller_than_its_index_is_corrupt)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "none", false, true);
    cr_assert_eq(sl_store_set(s, "arr/c/1", "tiny", 4, NULL), SL_OK);
    expect_chunk_error(a, 2, SL_ECORRUPT, "arr/c/1",
                       "shard of 4 bytes is smaller than its 36-byte index");
    /* Writing into it must not silently drop the corrupt shard either. */
    uint32_t buf[16] = {1};
    uint64_t c = 3;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_write_chunk(a, &c, buf, sizeof(buf), NULL, &err), SL_ECORRUPT);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_corrupt, a_shard_index_with_a_bad_crc_is_corrupt)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "zstd:1", false, true);
    struct sl_buf b = get(s, "arr/c/0");
    b.data[b.size - 10] ^= 4;
    cr_assert_eq(sl_store_set(s, "arr/c/0", b.data, b.size, NULL), SL_OK);
    expect_chunk_error(a, 0, SL_ECORRUPT, "arr/c/0", "shard index: crc32c mismatch");
    sl_buf_fini(&b);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_corrupt, a_shard_entry_larger_than_any_encoding_is_corrupt)
{
    /* Inner chunks of 64 raw bytes: an entry of 100 bytes inside the shard
     * is still corrupt, refused before its bytes are read. */
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "none", false, true);
    patch_index(s, "arr/c/0", a, 0, 0, 100);
    expect_chunk_error(a, 0, SL_ECORRUPT, "arr/c/0",
                       "entry 0 of 100 bytes is larger than any encoding of an inner chunk "
                       "(at most 64 bytes)");
    sl_array_unref(a);
    sl_store_unref(s);
}

/* Make `key` of the filesystem store at `root` a sparse file of `bytes`. */
static void
make_sparse(const char *root, const char *key, uint64_t bytes)
{
    char path[8300];
    snprintf(path, sizeof(path), "%s/%s", root, key);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    fclose(f);
    cr_assert_eq(truncate(path, (off_t)bytes), 0, "%s", path);
}

static uint64_t
bytes_read(sl_store *s)
{
    struct sl_store_stats st;
    sl_store_get_stats(s, &st);
    return st.bytes_read;
}

Test(io_corrupt, huge_stored_objects_are_refused_before_they_are_read)
{
    /* A sparse file costs nothing on disk but, read whole, as much memory
     * as it claims: metadata, chunks and shards larger than they can be are
     * refused from their size alone. */
    char root[4096];
    snprintf(root, sizeof(root), "%s", sl_test_tmpdir("corrupt-huge"));
    sl_store *s = sl_store_open_fs(root, NULL, NULL);
    sl_array *a = make_array(s, "zstd:1", false, false);
    cr_assert_eq(sl_store_set(s, "huge/x", "", 0, NULL), SL_OK);
    make_sparse(root, "huge/zarr.json", (uint64_t)1 << 30);
    make_sparse(root, "arr/c/1", (uint64_t)1 << 30);
    uint64_t before = bytes_read(s);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_array_open(s, "huge", NULL, &err));
    cr_assert_eq(err.code, SL_EPARSE, "%s", err.text);
    cr_assert_not_null(strstr(err.text, "metadata of 1073741824 bytes exceeds the 16777216-byte"),
                       "%s", err.text);
    cr_assert_str_eq(err.source, "huge/zarr.json");
    expect_chunk_error(a, 1, SL_ECORRUPT, "arr/c/1",
                       "stored chunk of 1073741824 bytes is larger than any encoding");
    cr_assert_eq(bytes_read(s), before, "nothing of the huge objects was read");
    sl_array_unref(a);
    sl_store_unref(s);
    sl_test_rmtree(root);

    /* A shard rewritten in part is read whole first. */
    s = sl_store_open_fs(root, NULL, NULL);
    a = make_array(s, "none", false, true);
    make_sparse(root, "arr/c/1", (uint64_t)1 << 30);
    before = bytes_read(s);
    uint32_t buf[16] = {7};
    uint64_t c = 2;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_write_chunk(a, &c, buf, sizeof(buf), NULL, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, "shard of 1073741824 bytes is larger than"), "%s",
                       err.text);
    cr_assert_eq(bytes_read(s), before, "nothing of the huge shard was read");
    sl_array_unref(a);
    sl_store_unref(s);
    sl_test_rmtree(root);
}

Test(io_corrupt, random_damage_to_shards_never_crashes)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "gzip:1", true, true);
    struct sl_buf b = get(s, "arr/c/1");
    unsigned seed = 11;
    for (int round = 0; round < 300; round++) {
        struct sl_buf d = SL_BUF_INIT;
        cr_assert_eq(sl_buf_append(&d, b.data, b.size, NULL), SL_OK);
        size_t n = round % 7 == 0 ? (size_t)rand_r(&seed) % d.size : d.size;
        for (int f = 0; f < 1 + round % 4; f++)
            d.data[(size_t)rand_r(&seed) % d.size] ^= (uint8_t)(1 + rand_r(&seed) % 255);
        cr_assert_eq(sl_store_set(s, "arr/c/1", d.data, n, NULL), SL_OK);
        uint32_t buf[64];
        struct sl_region whole = {.rank = 1, .start = {0}, .stop = {64}};
        struct sl_error err = SL_ERROR_INIT;
        sl_status st = sl_array_read_region(a, &whole, buf, sizeof(buf), NULL, NULL, &err);
        cr_assert(st == SL_OK || st == SL_ECORRUPT, "round %d: %s %s", round, sl_status_name(st),
                  err.text);
        sl_buf_fini(&d);
    }
    sl_buf_fini(&b);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* ---- metadata -------------------------------------------------------------- */

static void
expect_open_error(sl_store *s, const char *doc, sl_status want, const char *text)
{
    cr_assert_eq(sl_store_set(s, "m/zarr.json", doc, strlen(doc), NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_array_open(s, "m", NULL, &err));
    cr_assert_eq(err.code, want, "%s: %s", sl_status_name(err.code), err.text);
    cr_assert_str_eq(err.source, "m/zarr.json");
    cr_assert_not_null(strstr(err.text, text), "\"%s\" lacks \"%s\"", err.text, text);
}

static const char *
array_doc(char *buf, size_t size, const char *shape, const char *chunks)
{
    snprintf(buf, size,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": %s, \"data_type\": "
             "\"uint64\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
             "{\"chunk_shape\": %s}}, \"chunk_key_encoding\": {\"name\": \"default\"}, "
             "\"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\", \"configuration\": "
             "{\"endian\": \"little\"}}]}",
             shape, chunks);
    return buf;
}

Test(io_corrupt, overflowing_shapes_are_refused)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    char doc[1024];
    expect_open_error(
        s,
        array_doc(doc, sizeof(doc), "[4611686018427387904, 4611686018427387904, 16]", "[1, 1, 1]"),
        SL_EOVERFLOW, "");
    expect_open_error(s, array_doc(doc, sizeof(doc), "[10, 10]", "[100000, 100000]"), SL_EOVERFLOW,
                      "exceed the 1073741824-byte limit");
    expect_open_error(s, array_doc(doc, sizeof(doc), "[18446744073709551616]", "[1]"), SL_EPARSE,
                      "");
    expect_open_error(s, array_doc(doc, sizeof(doc), "[9223372036854775807]", "[1]"), SL_EPARSE,
                      "2^62");
    expect_open_error(s,
                      array_doc(doc, sizeof(doc),
                                "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]",
                                "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"),
                      SL_EUNSUPPORTED, "17 dimensions");
    expect_open_error(s, "{\"zarr_format\": 3, ", SL_EPARSE, "");
    sl_store_unref(s);
}

Test(io_corrupt, deeply_nested_metadata_is_refused)
{
    /* jansson bounds nesting (2048), so no parser or writer of sluice
     * recurses as deep as a hostile document asks. */
    sl_store *s = sl_store_create_memory(NULL, NULL);
    size_t depth = 100000, n = 0;
    char *doc = malloc(depth + 64);
    n += (size_t)sprintf(doc, "{\"attributes\": ");
    for (size_t i = 0; i < depth; i++)
        doc[n++] = '[';
    doc[n] = '\0';
    expect_open_error(s, doc, SL_EPARSE, "maximum parsing depth");
    /* Deep but allowed attributes open and keep their nesting. */
    char ok[8192], *p = ok;
    p += sprintf(p, "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [2], "
                    "\"data_type\": \"uint8\", \"chunk_grid\": {\"name\": \"regular\", "
                    "\"configuration\": {\"chunk_shape\": [2]}}, \"chunk_key_encoding\": "
                    "{\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\": "
                    "\"bytes\"}], \"attributes\": {\"a\": ");
    for (int i = 0; i < 1000; i++)
        *p++ = '[';
    for (int i = 0; i < 1000; i++)
        *p++ = ']';
    strcpy(p, "}}");
    cr_assert_eq(sl_store_set(s, "deep/zarr.json", ok, strlen(ok), NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(s, "deep", NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    cr_assert_eq(strlen(sl_array_attributes(a)), 2006); /* {"a":[[...]]} */
    sl_array_unref(a);
    free(doc);
    sl_store_unref(s);
}

Test(io_corrupt, damaged_metadata_never_crashes)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_array(s, "blosc:zstd:3:shuffle", true, true);
    sl_array_unref(a);
    struct sl_buf good = get(s, "arr/zarr.json");
    unsigned seed = 5;
    for (int round = 0; round < 400; round++) {
        struct sl_buf d = SL_BUF_INIT;
        cr_assert_eq(sl_buf_append(&d, good.data, good.size, NULL), SL_OK);
        size_t n = round % 5 == 0 ? (size_t)rand_r(&seed) % d.size : d.size;
        for (int f = 0; f < 1 + round % 3; f++)
            d.data[(size_t)rand_r(&seed) % d.size] =
                (uint8_t)("0123456789[]{},:\"x- "[rand_r(&seed) % 21]);
        cr_assert_eq(sl_store_set(s, "arr/zarr.json", d.data, n, NULL), SL_OK);
        struct sl_error err = SL_ERROR_INIT;
        a = sl_array_open(s, "arr", NULL, &err);
        cr_assert(a != NULL || (err.code != SL_OK && err.text[0] != '\0'), "round %d", round);
        sl_array_unref(a);
        sl_buf_fini(&d);
    }
    sl_buf_fini(&good);
    sl_store_unref(s);
}

/* ---- keys and links ----------------------------------------------------------- */

Test(io_corrupt, dot_dot_paths_are_refused)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_array_open(s, "../outside", NULL, &err));
    cr_assert_eq(err.code, SL_EACCES);
    cr_assert_not_null(strstr(err.text, "../outside"), "%s", err.text);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    err = SL_ERROR_INIT;
    cr_assert_null(sl_array_create(s, "a/../../b", &sp, NULL, &err));
    cr_assert_eq(err.code, SL_EACCES);
    sl_store_unref(s);
}

Test(io_corrupt, a_chunk_symlinked_outside_the_store_is_refused)
{
    char root[4096], outside[4096], path[8300];
    snprintf(root, sizeof(root), "%s", sl_test_tmpdir("corrupt-root"));
    snprintf(outside, sizeof(outside), "%s", sl_test_tmpdir("corrupt-outside"));
    sl_store *s = sl_store_open_fs(root, NULL, NULL);
    sl_array *a = make_array(s, "none", false, false);
    /* Replace chunk 2 by a link to a file outside that is a valid chunk. */
    snprintf(path, sizeof(path), "%s/secret", outside);
    FILE *f = fopen(path, "wb");
    uint32_t secret[16] = {0xdeadbeef};
    fwrite(secret, 1, sizeof(secret), f);
    fclose(f);
    char link[8300];
    snprintf(link, sizeof(link), "%s/arr/c/2", root);
    cr_assert_eq(unlink(link), 0);
    cr_assert_eq(symlink(path, link), 0);
    expect_chunk_error(a, 2, SL_EACCES, "arr/c/2", "outside the store root");
    /* A whole directory linked outside. */
    snprintf(link, sizeof(link), "%s/arr/c", root);
    sl_test_rmtree(link);
    cr_assert_eq(symlink(outside, link), 0);
    uint32_t buf[16] = {1};
    uint64_t c = 1;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_write_chunk(a, &c, buf, sizeof(buf), NULL, &err), SL_EACCES);
    snprintf(path, sizeof(path), "%s/1", outside);
    cr_assert_eq(access(path, F_OK), -1, "nothing was written outside");
    sl_array_unref(a);
    sl_store_unref(s);
    sl_test_rmtree(root);
    sl_test_rmtree(outside);
}

Test(io_corrupt, a_fifo_at_a_key_is_not_an_object_and_does_not_block)
{
    /* Opening a FIFO for reading waits for a writer: a FIFO named zarr.json
     * hung `sluice info` forever. */
    char root[4096], path[8300];
    snprintf(root, sizeof(root), "%s", sl_test_tmpdir("corrupt-fifo"));
    sl_store *s = sl_store_open_fs(root, NULL, NULL);
    sl_array *a = make_array(s, "none", false, false);
    snprintf(path, sizeof(path), "%s/arr/c/2", root);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkfifo(path, 0600), 0);
    uint32_t buf[16];
    uint64_t c = 2;
    bool missing = false;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_chunk(a, &c, buf, sizeof(buf), NULL, &missing, &err), SL_OK, "%s",
                 err.text);
    cr_assert(missing, "a FIFO is no chunk, as a directory is none");
    sl_array_unref(a);
    snprintf(path, sizeof(path), "%s/fifo/zarr.json", root);
    cr_assert_eq(sl_store_set(s, "fifo/x", "", 0, NULL), SL_OK);
    cr_assert_eq(mkfifo(path, 0600), 0);
    err = SL_ERROR_INIT;
    cr_assert_null(sl_array_open(s, "fifo", NULL, &err));
    cr_assert_eq(err.code, SL_ENOTFOUND, "%s", err.text);
    sl_store_unref(s);
    sl_test_rmtree(root);
}
