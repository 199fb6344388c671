/* SPDX-License-Identifier: MIT */
/*
 * Writes the generated seed corpora: `fuzz_make_seeds DIR` fills
 * DIR/<target>/seed-<what> for every target, valid inputs of each kind plus
 * the hostile ones issue 11 names (a shard smaller than its index, a zstd
 * frame without a content size, overflowing shapes, deep nesting, keys that
 * leave the store).  The corpora in tests/fuzz/corpus were made with
 * `fuzz_make_seeds tests/fuzz/corpus`; regression inputs found by fuzzing
 * sit beside them as regress-<what> and are never regenerated.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include <sluice.h>

#include "codec_internal.h"
#include "fuzz.h"
#include "fuzz_layouts.h"
#include "zarr_internal.h"

static const char *out_dir;

/* A growable seed being assembled. */
struct seed {
    uint8_t data[1 << 16];
    size_t n;
};

static void
seed_add(struct seed *s, const void *p, size_t n)
{
    FUZZ_CHECK(s->n + n <= sizeof(s->data), "seed too large");
    memcpy(s->data + s->n, p, n);
    s->n += n;
}

static void
seed_bytes(struct seed *s, int count, ...)
{
    va_list ap;
    va_start(ap, count);
    for (int i = 0; i < count; i++) {
        uint8_t b = (uint8_t)va_arg(ap, int);
        seed_add(s, &b, 1);
    }
    va_end(ap);
}

static void
write_seed(const char *target, const char *name, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", out_dir, target);
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot make %s: %s\n", path, strerror(errno));
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%s/seed-%s", out_dir, target, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

static void
write_text(const char *target, const char *name, const char *text)
{
    write_seed(target, name, text, strlen(text));
}

/* ---- metadata ----------------------------------------------------------------- */

#define V3_HEAD "{\"zarr_format\": 3, \"node_type\": \"array\", "
#define V3_BYTES "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define V3_GRID(cs) \
    "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": " cs "}}, "
#define V3_KEYS "\"chunk_key_encoding\": {\"name\": \"default\"}, "

static const char *const v3_docs[][2] = {
    {"zstd-u16",
     V3_HEAD "\"shape\": [100, 100], \"data_type\": \"uint16\", " V3_GRID("[10, 10]") V3_KEYS
     "\"fill_value\": 0, \"codecs\": [" V3_BYTES
     ", {\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": "
     "true}}], \"attributes\": {}}"},
    {"sharded-index-end-crc",
     V3_HEAD "\"shape\": [64, 64], \"data_type\": \"float32\", " V3_GRID("[32, 32]") V3_KEYS
     "\"fill_value\": \"NaN\", \"codecs\": [{\"name\": \"sharding_indexed\", "
     "\"configuration\": {\"chunk_shape\": [8, 8], \"codecs\": [" V3_BYTES
     ", {\"name\": \"gzip\", \"configuration\": {\"level\": 5}}], \"index_codecs\": "
     "[" V3_BYTES ", {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]}"},
    {"sharded-index-start",
     V3_HEAD "\"shape\": [10, 9], \"data_type\": \"int8\", " V3_GRID("[4, 3]") V3_KEYS
     "\"fill_value\": -3, \"codecs\": [{\"name\": \"sharding_indexed\", "
     "\"configuration\": {\"chunk_shape\": [2, 1], \"codecs\": [{\"name\": "
     "\"bytes\"}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
     "{\"endian\": \"big\"}}], \"index_location\": \"start\"}}], \"dimension_names\": "
     "[\"y\", null], \"attributes\": {\"a\": [1, {\"b\": null}], \"c\": \"d\"}}"},
    {"transpose-blosc-complex",
     V3_HEAD "\"shape\": [5, 6, 7], \"data_type\": \"complex64\", " V3_GRID(
         "[2, 3, 4]") "\"chunk_key_encoding\": {\"name\": \"v2\", \"configuration\": "
                      "{\"separator\": "
                      "\".\"}}, \"fill_value\": [1.5, \"NaN\"], \"codecs\": [{\"name\": "
                      "\"transpose\", "
                      "\"configuration\": {\"order\": [2, 0, 1]}}, " V3_BYTES
                      ", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": "
                      "5, "
                      "\"shuffle\": \"shuffle\", \"typesize\": 4, \"blocksize\": 0}}]}"},
    {"float16-hex-nan", V3_HEAD "\"shape\": [3], \"data_type\": \"float16\", " V3_GRID("[2]")
                            V3_KEYS "\"fill_value\": \"0x7e01\", \"codecs\": [" V3_BYTES "]}"},
    {"float64-infinity",
     V3_HEAD "\"shape\": [3], \"data_type\": \"float64\", " V3_GRID("[2]") V3_KEYS
     "\"fill_value\": \"-Infinity\", \"codecs\": [" V3_BYTES ", {\"name\": \"crc32c\"}]}"},
    {"float32-large-fill", V3_HEAD "\"shape\": [3], \"data_type\": \"float32\", " V3_GRID("[2]")
                               V3_KEYS "\"fill_value\": 3.4028235e38, \"codecs\": [" V3_BYTES "]}"},
    {"bool-0d", V3_HEAD "\"shape\": [], \"data_type\": \"bool\", " V3_GRID("[]") V3_KEYS
     "\"fill_value\": true, \"codecs\": [{\"name\": \"bytes\"}]}"},
    {"uint64-max-fill", V3_HEAD "\"shape\": [4], \"data_type\": \"uint64\", " V3_GRID("[4]") V3_KEYS
     "\"fill_value\": 9223372036854775807, \"codecs\": [" V3_BYTES "]}"},
    {"must-understand-false",
     V3_HEAD "\"shape\": [4], \"data_type\": \"int32\", " V3_GRID("[4]") V3_KEYS
     "\"fill_value\": 0, \"codecs\": [" V3_BYTES
     "], \"ext\": {\"must_understand\": false, \"x\": 1}, \"storage_transformers\": []}"},
    {"group", "{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": {\"k\": [1, 2]}, "
              "\"consolidated_metadata\": null}"},
    /* Hostile documents: each must be refused with a clear error. */
    {"overflowing-shape", V3_HEAD
     "\"shape\": [4611686018427387904, 4611686018427387904, 16], \"data_type\": "
     "\"uint64\", " V3_GRID("[1, 1, 1]") V3_KEYS "\"fill_value\": 0, \"codecs\": [" V3_BYTES "]}"},
    {"huge-chunk",
     V3_HEAD "\"shape\": [10, 10], \"data_type\": \"uint64\", " V3_GRID("[100000, 100000]") V3_KEYS
     "\"fill_value\": 0, \"codecs\": [" V3_BYTES "]}"},
    {"chunk-at-cap",
     V3_HEAD "\"shape\": [65536, 65536], \"data_type\": \"uint8\", " V3_GRID("[32768, 32768]")
         V3_KEYS "\"fill_value\": 0, \"codecs\": [" V3_BYTES "]}"},
    {"too-many-inner-chunks",
     V3_HEAD "\"shape\": [8388608], \"data_type\": \"uint8\", " V3_GRID("[8388608]") V3_KEYS
     "\"fill_value\": 0, \"codecs\": [{\"name\": \"sharding_indexed\", "
     "\"configuration\": {\"chunk_shape\": [1], \"codecs\": [{\"name\": \"bytes\"}]}}]}"},
    {"nested-sharding", V3_HEAD "\"shape\": [8], \"data_type\": \"uint8\", " V3_GRID("[8]") V3_KEYS
     "\"fill_value\": 0, \"codecs\": [{\"name\": \"sharding_indexed\", "
     "\"configuration\": {\"chunk_shape\": [4], \"codecs\": [{\"name\": "
     "\"sharding_indexed\", \"configuration\": {\"chunk_shape\": [2], \"codecs\": "
     "[{\"name\": \"bytes\"}]}}]}}]}"},
    {"unknown-codec", V3_HEAD "\"shape\": [8], \"data_type\": \"string\", " V3_GRID("[8]") V3_KEYS
     "\"fill_value\": \"\", \"codecs\": [{\"name\": \"vlen-utf8\"}]}"},
    {"duplicate-key", "{\"zarr_format\": 3, \"zarr_format\": 3}"},
};

/* `depth` opening brackets: deep nesting must be refused, not recurse. */
static void
deep_nesting(const char *target, const char *name, const char *head, size_t depth)
{
    static char doc[1 << 16];
    size_t n = (size_t)snprintf(doc, sizeof(doc), "%s", head);
    for (size_t i = 0; i < depth && n + 2 < sizeof(doc); i++)
        doc[n++] = '[';
    doc[n] = '\0';
    write_text(target, name, doc);
}

static void
seeds_meta_v3(void)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(v3_docs); i++)
        write_text("meta_v3", v3_docs[i][0], v3_docs[i][1]);
    deep_nesting("meta_v3", "deep-nesting", V3_HEAD "\"attributes\": {\"a\": ", 20000);
}

static const char *const v2_docs[][2] = {
    {"zstd-u16", "{\"chunks\": [10, 10], \"compressor\": {\"id\": \"zstd\", \"level\": 1}, "
                 "\"dtype\": \"<u2\", \"fill_value\": 0, \"filters\": null, \"order\": \"C\", "
                 "\"shape\": [100, 100], \"zarr_format\": 2}"},
    {"blosc-f-order-dims",
     "{\"chunks\": [4, 5, 6], \"compressor\": {\"id\": \"blosc\", \"cname\": \"lz4\", "
     "\"clevel\": 5, \"shuffle\": -1, \"blocksize\": 0}, \"dtype\": \">f8\", \"fill_value\": "
     "\"NaN\", \"filters\": [], \"order\": \"F\", \"shape\": [9, 10, 11], "
     "\"dimension_separator\": \"/\", \"zarr_format\": 2}\0{\"_ARRAY_DIMENSIONS\": [\"z\", "
     "\"y\", \"x\"], \"units\": \"m\"}"},
    {"bool-null-fill", "{\"chunks\": [3], \"compressor\": null, \"dtype\": \"|b1\", "
                       "\"fill_value\": null, \"filters\": null, \"order\": \"C\", \"shape\": "
                       "[7], \"zarr_format\": 2}"},
    {"zlib-complex", "{\"chunks\": [2, 2], \"compressor\": {\"id\": \"zlib\", \"level\": 3}, "
                     "\"dtype\": \"<c8\", \"fill_value\": [0.5, -1], \"filters\": null, "
                     "\"order\": \"C\", \"shape\": [3, 3], \"zarr_format\": 2}"},
    {"gzip-0d", "{\"chunks\": [], \"compressor\": {\"id\": \"gzip\", \"level\": 1}, \"dtype\": "
                "\"<i8\", \"fill_value\": -1, \"filters\": null, \"order\": \"C\", \"shape\": "
                "[], \"zarr_format\": 2}"},
    {"filters-refused", "{\"chunks\": [3], \"compressor\": null, \"dtype\": \"<i4\", "
                        "\"fill_value\": 0, \"filters\": [{\"id\": \"delta\", \"dtype\": "
                        "\"<i4\"}], \"order\": \"C\", \"shape\": [7], \"zarr_format\": 2}"},
    {"structured-dtype", "{\"chunks\": [3], \"compressor\": null, \"dtype\": [[\"a\", \"<i4\"]], "
                         "\"fill_value\": null, \"filters\": null, \"order\": \"C\", \"shape\": "
                         "[7], \"zarr_format\": 2}"},
    {"overflowing-shape", "{\"chunks\": [1, 1, 1], \"compressor\": null, \"dtype\": \"<u8\", "
                          "\"fill_value\": 0, \"filters\": null, \"order\": \"C\", \"shape\": "
                          "[4611686018427387904, 4611686018427387904, 16], \"zarr_format\": 2}"},
    {"huge-chunk", "{\"chunks\": [100000, 100000], \"compressor\": null, \"dtype\": \"<u8\", "
                   "\"fill_value\": 0, \"filters\": null, \"order\": \"C\", \"shape\": [10, 10], "
                   "\"zarr_format\": 2}"},
};

static void
seeds_meta_v2(void)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(v2_docs); i++) {
        const char *doc = v2_docs[i][1];
        size_t n = strlen(doc);
        if (strcmp(v2_docs[i][0], "blosc-f-order-dims") == 0)
            n += 1 + strlen(doc + n + 1); /* .zarray NUL .zattrs */
        write_seed("meta_v2", v2_docs[i][0], doc, n);
    }
    static char doc[1 << 16];
    const char *head = "{\"chunks\": [3], \"compressor\": null, \"dtype\": \"<i4\", "
                       "\"fill_value\": 0, \"filters\": null, \"order\": \"C\", \"shape\": [7], "
                       "\"zarr_format\": 2}";
    size_t n = (size_t)snprintf(doc, sizeof(doc), "%s", head) + 1;
    n += (size_t)snprintf(doc + n, sizeof(doc) - n, "{\"a\": ");
    while (n + 1 < sizeof(doc))
        doc[n++] = '[';
    write_seed("meta_v2", "deep-nesting-zattrs", doc, n);
}

/* ---- chunks ------------------------------------------------------------------- */

/* `header` and one more byte: a header parser that reads exactly the
 * header leaves that byte, one that wants more reads it. */
static struct fuzz_input
header_input(const uint8_t *header, size_t n)
{
    static uint8_t buf[64];
    FUZZ_CHECK(n < sizeof(buf), "header too long");
    memcpy(buf, header, n);
    buf[n] = 0xa5;
    return (struct fuzz_input){buf, n + 1};
}

/* A chunk_decode seed: `header` bytes, then the chunk (of the header's
 * layout, filled with a ramp) encoded by the header's chain; `no_content_size`
 * re-encodes the last zstd step as a frame without a content size. */
static void
chunk_seed(const char *name, const uint8_t *header, size_t n_header, bool no_content_size)
{
    struct fuzz_input in = header_input(header, n_header);
    struct sl__chunk_layout lay;
    struct sl__chain ch;
    uint8_t flags;
    FUZZ_CHECK(fuzz_chunk_header(&in, &lay, &ch, &flags), "seed %s: chain refused", name);
    FUZZ_CHECK(in.n == 1, "seed %s: header of %zu bytes, %zu read", name, n_header,
               n_header + 1 - in.n);
    uint8_t *chunk = malloc(lay.n_bytes);
    for (size_t i = 0; i < lay.n_bytes; i++)
        chunk[i] = (uint8_t)(i * 7 / 5);
    static struct seed s;
    s.n = 0;
    seed_add(&s, header, n_header);
    if (flags & CHUNK_F_ROUNDTRIP) {
        seed_add(&s, chunk, lay.n_bytes < 64 ? lay.n_bytes : 64);
    } else if (no_content_size) {
        /* bytes then zstd: compress the chunk without pledging its size. */
        ZSTD_CCtx *cc = ZSTD_createCCtx();
        ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
        ZSTD_outBuffer out = {s.data + s.n, sizeof(s.data) - s.n, 0};
        ZSTD_inBuffer src = {chunk, lay.n_bytes, 0};
        size_t rc = ZSTD_compressStream2(cc, &out, &src, ZSTD_e_end);
        FUZZ_CHECK(rc == 0, "zstd stream did not finish");
        FUZZ_CHECK(ZSTD_getFrameContentSize(s.data + s.n, out.pos) == ZSTD_CONTENTSIZE_UNKNOWN,
                   "frame has a content size");
        s.n += out.pos;
        ZSTD_freeCCtx(cc);
    } else {
        sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
        struct sl__view v;
        struct sl_error err = SL_ERROR_INIT;
        FUZZ_CHECK(sl__chain_encode(&ch, &lay, chunk, ctx, &v, &err) == SL_OK, "%s", err.text);
        seed_add(&s, v.data, v.size);
        sl_codec_ctx_destroy(ctx);
    }
    free(chunk);
    write_seed("chunk_decode", name, s.data, s.n);
}

static void
seeds_chunk_decode(void)
{
    /* dtype (u8 = 5, u16 = 6, f32 = 10, c128 = 13), rank, extents - 1,
     * flags, permutation, number of bytes-to-bytes codecs, then per codec
     * (0 crc32c, 1 zstd, 2 gzip, 3 zlib, 4 blosc), parameter[, typesize]. */
    static const uint8_t raw_u16[] = {6, 2, 4, 5, 0, 0, 0};
    static const uint8_t zstd[] = {6, 2, 7, 9, 0, 0, 1, 1, 3};
    static const uint8_t zstd_crc[] = {10, 3, 3, 4, 5, 0, 0, 2, 1, 0x83, 0, 0};
    static const uint8_t gzip_big[] = {10, 2, 8, 8, 0x02, 0, 1, 2, 6};
    static const uint8_t zlib_transpose[] = {13, 3, 2, 3, 4, 0x01, 3, 1, 3, 1};
    static const uint8_t blosc_lz4[] = {6, 1, 23, 0, 0, 1, 4, 121, 1};
    static const uint8_t two_compressors[] = {5, 1, 20, 0, 0, 2, 2, 5, 1, 1};
    static const uint8_t two_transposes_crc[] = {10, 3, 2, 3, 4, 0x11, 4, 1, 0, 0};
    static const uint8_t roundtrip_blosc[] = {13, 2, 5, 6, 0x08, 0, 3, 4, 4 | (9 << 3) | (2 << 6),
                                              15, 1, 2, 0, 0};
    static const uint8_t zstd_no_size[] = {6, 2, 7, 9, 0, 0, 1, 1, 3};
    chunk_seed("raw-u16", raw_u16, sizeof(raw_u16), false);
    chunk_seed("zstd", zstd, sizeof(zstd), false);
    chunk_seed("zstd-checksum-crc32c", zstd_crc, sizeof(zstd_crc), false);
    chunk_seed("gzip-big-endian", gzip_big, sizeof(gzip_big), false);
    chunk_seed("zlib-transpose", zlib_transpose, sizeof(zlib_transpose), false);
    chunk_seed("blosc-lz4-shuffle", blosc_lz4, sizeof(blosc_lz4), false);
    chunk_seed("gzip-then-zstd", two_compressors, sizeof(two_compressors), false);
    chunk_seed("two-transposes-crc32c", two_transposes_crc, sizeof(two_transposes_crc), false);
    chunk_seed("roundtrip-blosc-zstd-crc", roundtrip_blosc, sizeof(roundtrip_blosc), false);
    chunk_seed("zstd-without-content-size", zstd_no_size, sizeof(zstd_no_size), true);
    /* A zstd frame declaring 2^40 bytes: refused before anything is allocated. */
    static struct seed s;
    s.n = 0;
    seed_add(&s, zstd, sizeof(zstd));
    /* Magic, descriptor (8-byte content size, single segment), size, one
     * empty raw last block. */
    seed_bytes(&s, 4, 0x28, 0xb5, 0x2f, 0xfd);
    seed_bytes(&s, 1, 0xe0);
    seed_bytes(&s, 8, 0, 0, 0, 0, 0, 1, 0, 0);
    seed_bytes(&s, 3, 1, 0, 0);
    write_seed("chunk_decode", "zstd-declares-1tib", s.data, s.n);
}

/* ---- shards ------------------------------------------------------------------- */

/* A parse-mode shard_index seed: `header`, then a shard built from `n`
 * inner chunks of 1 + k bytes (`damage` then applies). */
static void
shard_seed(const char *name, const uint8_t *header, size_t n_header, uint64_t n_chunks,
           void (*damage)(struct seed *s, const struct sl__meta *m))
{
    struct fuzz_input in = header_input(header, n_header);
    struct sl__meta m;
    uint8_t flags;
    fuzz_shard_meta(&in, &m, &flags);
    FUZZ_CHECK(in.n == 1 && !(flags & SHARD_F_BUILD), "seed %s: bad header", name);
    struct sl_buf out = SL_BUF_INIT;
    uint64_t *entries = malloc(16 * m.n_per_shard);
    struct sl__shard_builder b;
    struct sl_error err = SL_ERROR_INIT;
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    FUZZ_CHECK(sl__shard_builder_init(&b, &m, &out, entries, &err) == SL_OK, "%s", err.text);
    uint8_t bytes[64];
    for (uint64_t k = 0; k < n_chunks && k < m.n_per_shard; k += 2) {
        memset(bytes, (int)k, sizeof(bytes));
        FUZZ_CHECK(sl__shard_builder_add(&b, k, bytes, 1 + k, &err) == SL_OK, "%s", err.text);
    }
    bool empty;
    FUZZ_CHECK(sl__shard_builder_finish(&b, ctx, &empty, &err) == SL_OK, "%s", err.text);
    if (empty) {
        /* The builder writes nothing for an empty shard: an index of
         * sentinels only, as other writers may store. */
        struct sl__chunk_layout lay;
        sl__meta_index_layout(&m, &lay);
        struct sl__view v;
        FUZZ_CHECK(sl__chain_encode(&m.index_chain, &lay, entries, ctx, &v, &err) == SL_OK, "%s",
                   err.text);
        out.size = 0;
        FUZZ_CHECK(sl_buf_append(&out, v.data, v.size, &err) == SL_OK, "%s", err.text);
    }
    static struct seed s;
    s.n = 0;
    seed_add(&s, header, n_header);
    size_t start = s.n;
    seed_add(&s, out.data, out.size);
    if (damage != NULL) {
        struct seed shard = {.n = 0};
        seed_add(&shard, s.data + start, s.n - start);
        damage(&shard, &m);
        s.n = start;
        seed_add(&s, shard.data, shard.n);
    }
    write_seed("shard_index", name, s.data, s.n);
    sl_codec_ctx_destroy(ctx);
    free(entries);
    sl_buf_fini(&out);
    sl__meta_fini(&m);
}

/* Keep only the last 12 bytes: smaller than any index. */
static void
damage_truncate(struct seed *s, const struct sl__meta *m)
{
    (void)m;
    memmove(s->data, s->data + s->n - 12, 12);
    s->n = 12;
}

/* The first entry's offset (index at the end, little-endian) points past
 * the end, with the crc32c recomputed so the bounds check is what refuses. */
static void
damage_entry_past_end(struct seed *s, const struct sl__meta *m)
{
    size_t idx = s->n - m->index_bytes;
    uint64_t past = s->n;
    memcpy(s->data + idx, &past, 8);
    uint32_t crc = sl__crc32c(0, s->data + idx, m->index_bytes - 4);
    memcpy(s->data + s->n - 4, &crc, 4);
}

static void
damage_half_sentinel(struct seed *s, const struct sl__meta *m)
{
    size_t idx = s->n - m->index_bytes;
    memset(s->data + idx, 0xff, 8); /* entry 0: offset empty, nbytes not */
    uint32_t crc = sl__crc32c(0, s->data + idx, m->index_bytes - 4);
    memcpy(s->data + s->n - 4, &crc, 4);
}

static void
damage_crc(struct seed *s, const struct sl__meta *m)
{
    (void)m;
    s->data[s->n - 1] ^= 0x40;
}

static void
seeds_shard_index(void)
{
    /* rank - 1, (inner chunks per shard - 1, inner extent - 1) per
     * dimension, flags */
    static const uint8_t end_crc[] = {0, 3, 1, 0x02};
    static const uint8_t start_plain[] = {1, 1, 2, 1, 0, 0x01};
    static const uint8_t big_crc_zstd[] = {1, 2, 0, 1, 2, 0x16};
    static const uint8_t start_crc_3d[] = {2, 1, 1, 2, 0, 0, 1, 0x03};
    shard_seed("index-end-crc32c", end_crc, sizeof(end_crc), 4, NULL);
    shard_seed("index-start", start_plain, sizeof(start_plain), 6, NULL);
    shard_seed("index-big-endian-zstd-inner", big_crc_zstd, sizeof(big_crc_zstd), 6, NULL);
    shard_seed("index-start-crc32c-3d", start_crc_3d, sizeof(start_crc_3d), 12, NULL);
    shard_seed("all-empty", end_crc, sizeof(end_crc), 0, NULL);
    shard_seed("shard-smaller-than-index", end_crc, sizeof(end_crc), 4, damage_truncate);
    shard_seed("entry-past-end", end_crc, sizeof(end_crc), 4, damage_entry_past_end);
    shard_seed("half-sentinel", end_crc, sizeof(end_crc), 4, damage_half_sentinel);
    shard_seed("bad-crc32c", end_crc, sizeof(end_crc), 4, damage_crc);
    /* Build mode: inner chunks (index, length, bytes). */
    static const uint8_t build[] = {0, 3, 1, 0x0a, 2, 3, 'a', 'b', 'c', 0, 0, 1, 1, 'x'};
    write_seed("shard_index", "build-three-chunks", build, sizeof(build));
    static const uint8_t build_start[] = {1, 2, 0, 1, 1, 0x09, 3, 2, 'p', 'q', 1, 0};
    write_seed("shard_index", "build-index-at-start", build_start, sizeof(build_start));
}

/* ---- keys --------------------------------------------------------------------- */

static void
seeds_key(void)
{
    static const char *const keys[][2] = {
        {"plain", "arr/c/0/1"},
        {"v2-chunk", "0.1.2"},
        {"dot-dot", "a/../../etc/passwd"},
        {"absolute", "/etc/passwd"},
        {"empty-component", "a//b"},
        {"dot", "a/./b"},
        {"temporary", "a/.sluice-tmp.12.3"},
        {"backslash", "a\\..\\b"},
        {"prefix", "arr/"},
        {"zarr-json", "group/arr/zarr.json"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(keys); i++)
        write_text("key", keys[i][0], keys[i][1]);
    write_seed("key", "embedded-nul", "a\0/../b", 7);
    static char long_key[1100];
    memset(long_key, 'k', sizeof(long_key));
    long_key[300] = '/';
    write_seed("key", "too-long", long_key, 1025);
    write_seed("key", "long-component", long_key, 256);
}

/* ---- arrays ------------------------------------------------------------------- */

/* An array seed: flags, the metadata document, NUL, chunk 0's object (after
 * `damage`), from an array made with `sp` and a ramp written to chunk 0. */
static void
array_seed(const char *name, uint8_t flags, const struct sl_array_spec *sp,
           void (*damage)(struct seed *obj, const sl_array *a))
{
    sl_store *st = sl_store_create_memory(NULL, NULL);
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(st, "a", sp, NULL, &err);
    FUZZ_CHECK(a != NULL, "seed %s: %s", name, err.text);
    size_t n = sl_array_chunk_bytes(a);
    uint8_t *chunk = malloc(n);
    for (size_t i = 0; i < n; i++)
        chunk[i] = (uint8_t)(i % 251);
    const uint64_t zero[SL_MAX_RANK] = {0};
    FUZZ_CHECK(sl_array_write_chunk(a, zero, chunk, n, NULL, &err) == SL_OK, "%s", err.text);
    struct sl_buf doc = SL_BUF_INIT, obj = SL_BUF_INIT;
    FUZZ_CHECK(sl_store_get(st, sp->zarr_format == 2 ? "a/.zarray" : "a/zarr.json", NULL, &doc,
                            NULL, &err) == SL_OK,
               "%s", err.text);
    char key[SL_STORE_KEY_MAX + 1];
    sl_array_chunk_key(a, zero, key, sizeof(key));
    FUZZ_CHECK(sl_store_get(st, key, NULL, &obj, NULL, &err) == SL_OK, "%s", err.text);
    static struct seed s;
    s.n = 0;
    seed_add(&s, &flags, 1);
    seed_add(&s, doc.data, doc.size);
    seed_bytes(&s, 1, 0);
    struct seed o = {.n = 0};
    seed_add(&o, obj.data, obj.size);
    if (damage != NULL)
        damage(&o, a);
    seed_add(&s, o.data, o.n);
    write_seed("array", name, s.data, s.n);
    sl_buf_fini(&doc);
    sl_buf_fini(&obj);
    free(chunk);
    sl_array_unref(a);
    sl_store_unref(st);
}

static void
damage_shard_to_tail(struct seed *obj, const sl_array *a)
{
    (void)a;
    memmove(obj->data, obj->data + obj->n - 10, 10);
    obj->n = 10;
}

/* Recompress chunk 0 (bytes, zstd) as a frame without a content size. */
static void
damage_zstd_no_size(struct seed *obj, const sl_array *a)
{
    size_t n = sl_array_chunk_bytes(a);
    uint8_t *chunk = malloc(n);
    size_t got = ZSTD_decompress(chunk, n, obj->data, obj->n);
    FUZZ_CHECK(got == n, "seed chunk does not decompress");
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
    ZSTD_outBuffer out = {obj->data, sizeof(obj->data), 0};
    ZSTD_inBuffer in = {chunk, n, 0};
    FUZZ_CHECK(ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end) == 0, "zstd stream unfinished");
    obj->n = out.pos;
    ZSTD_freeCCtx(cc);
    free(chunk);
}

static void
seeds_array(void)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    sp.shape[0] = 20, sp.shape[1] = 13;
    sp.chunk_shape[0] = 8, sp.chunk_shape[1] = 5;
    array_seed("v3-zstd", 0x02, &sp, NULL);
    array_seed("v3-zstd-without-content-size", 0x02, &sp, damage_zstd_no_size);
    sp.checksum = true;
    sp.shard_shape[0] = 16, sp.shard_shape[1] = 10;
    array_seed("v3-sharded-index-end", 0x02, &sp, NULL);
    array_seed("v3-shard-smaller-than-index", 0x02, &sp, damage_shard_to_tail);
    sp.index_at_start = true;
    sp.order_f = true;
    sp.codec.compressor = SL_COMPRESSOR_GZIP;
    array_seed("v3-sharded-index-start-gzip-transpose", 0x02, &sp, NULL);
    struct sl_array_spec v2 = SL_ARRAY_SPEC_DEFAULT;
    v2.zarr_format = 2;
    v2.rank = 3;
    v2.dtype = SL_DTYPE_F64;
    v2.endian = SL_ENDIAN_BIG;
    v2.order_f = true;
    v2.shape[0] = 5, v2.shape[1] = 6, v2.shape[2] = 7;
    v2.chunk_shape[0] = 2, v2.chunk_shape[1] = 3, v2.chunk_shape[2] = 4;
    v2.codec.compressor = SL_COMPRESSOR_BLOSC;
    v2.separator = '/';
    array_seed("v2-blosc-f-order-big-endian", 0x03, &v2, NULL);
    v2.codec.compressor = SL_COMPRESSOR_NONE;
    v2.dtype = SL_DTYPE_I32;
    array_seed("v2-raw", 0x03, &v2, NULL);
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    out_dir = argv[1];
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot make %s: %s\n", out_dir, strerror(errno));
        return 1;
    }
    seeds_meta_v3();
    seeds_meta_v2();
    seeds_chunk_decode();
    seeds_shard_index();
    seeds_key();
    seeds_array();
    return 0;
}
