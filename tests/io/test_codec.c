/* SPDX-License-Identifier: MIT */
/*
 * Codecs: CRC-32C vectors, transposes, byte swapping, every codec chain
 * round-tripping every dtype over odd chunk shapes, chain validation, zstd
 * frame properties, the --codec parser and codec contexts.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include <sluice.h>

#include "codec_internal.h"
#include "testutil.h"

TestSuite(io_codec, .timeout = 30.0);

Test(io_codec, crc32c_known_vectors)
{
    cr_assert_eq(sl__crc32c(0, "123456789", 9), 0xe3069283u);
    cr_assert_eq(sl__crc32c(0, "", 0), 0u);
    uint8_t zeros[32] = {0}, ones[32], asc[32];
    memset(ones, 0xff, sizeof(ones));
    for (int i = 0; i < 32; i++)
        asc[i] = (uint8_t)i;
    /* RFC 3720 (iSCSI) B.4 test vectors. */
    cr_assert_eq(sl__crc32c(0, zeros, 32), 0x8a9136aau);
    cr_assert_eq(sl__crc32c(0, ones, 32), 0x62a8ab43u);
    cr_assert_eq(sl__crc32c(0, asc, 32), 0x46dd794eu);
    cr_assert_eq(sl__crc32c_portable(0, asc, 32), 0x46dd794eu);
    /* Continuing a CRC equals one pass. */
    cr_assert_eq(sl__crc32c(sl__crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
}

Test(io_codec, crc32c_hardware_and_portable_agree_at_every_alignment)
{
    uint8_t buf[300];
    unsigned seed = 7;
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(rand_r(&seed) >> 3);
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n + off <= sizeof(buf); n += 13)
            cr_assert_eq(sl__crc32c(0, buf + off, n), sl__crc32c_portable(0, buf + off, n),
                         "offset %zu length %zu", off, n);
}

Test(io_codec, transpose_moves_dimensions)
{
    /* A 2x3 array [[0,1,2],[3,4,5]] transposed is [[0,3],[1,4],[2,5]]. */
    const uint16_t src[6] = {0, 1, 2, 3, 4, 5};
    uint16_t dst[6];
    const uint64_t shape[2] = {2, 3};
    const uint32_t perm[2] = {1, 0};
    sl__transpose(dst, src, 2, shape, perm, 2);
    const uint16_t want[6] = {0, 3, 1, 4, 2, 5};
    cr_assert(memcmp(dst, want, sizeof(want)) == 0);
    /* Order [1, 2, 0] of a 2x3x4 array: dst[j][k][i] = src[i][j][k]. */
    uint8_t a[24], b[24];
    for (int i = 0; i < 24; i++)
        a[i] = (uint8_t)i;
    const uint64_t s3[3] = {2, 3, 4};
    const uint32_t p3[3] = {1, 2, 0};
    sl__transpose(b, a, 3, s3, p3, 1);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                cr_assert_eq(b[(j * 4 + k) * 2 + i], a[(i * 3 + j) * 4 + k]);
}

Test(io_codec, byteswap_reverses_words)
{
    uint8_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    sl__byteswap(v, 8, 4);
    const uint8_t want4[8] = {4, 3, 2, 1, 8, 7, 6, 5};
    cr_assert(memcmp(v, want4, 8) == 0);
    sl__byteswap(v, 8, 8);
    const uint8_t want8[8] = {5, 6, 7, 8, 1, 2, 3, 4};
    cr_assert(memcmp(v, want8, 8) == 0);
}

/* ---- chains ---------------------------------------------------------------- */

static struct sl__codec
codec_bytes(sl_endian e)
{
    struct sl__codec c = {.id = SL__CODEC_BYTES};
    c.u.bytes.endian = e;
    c.u.bytes.has_endian = true;
    return c;
}

static struct sl__codec
codec_transpose(uint32_t rank)
{
    struct sl__codec c = {.id = SL__CODEC_TRANSPOSE};
    for (uint32_t k = 0; k < rank; k++)
        c.u.transpose.order[k] = (k + 1) % rank; /* a rotation */
    return c;
}

static struct sl__codec
codec_simple(sl__codec_id id, int level)
{
    struct sl__codec c = {.id = id};
    if (id == SL__CODEC_ZSTD)
        c.u.zstd.level = level;
    else
        c.u.gzip.level = level;
    return c;
}

static struct sl__codec
codec_blosc(const char *cname, int shuffle, uint32_t typesize)
{
    struct sl__codec c = {.id = SL__CODEC_BLOSC};
    strcpy(c.u.blosc.cname, cname);
    c.u.blosc.clevel = 5;
    c.u.blosc.shuffle = shuffle;
    c.u.blosc.typesize = typesize;
    return c;
}

/* Fill `n` bytes with smooth-ish data that still differs everywhere. */
static void
fill_pattern(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i / 3) ^ (seed * 31) ^ (i % 7 == 0 ? rand_r(&seed) : 0));
}

/* Encode then decode a chunk of `dtype` and `shape`; the bytes must return. */
static void
round_trip(struct sl__chain *ch, sl_dtype dtype, uint32_t rank, const uint64_t *shape,
           sl_codec_ctx *ctx)
{
    struct sl__chunk_layout lay;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__chunk_layout_init(&lay, dtype, rank, shape, &err), SL_OK);
    char desc[256];
    sl__chain_describe(ch, desc, sizeof(desc));
    cr_assert_eq(sl__chain_check(ch, &lay, &err), SL_OK, "%s: %s", desc, err.text);
    uint8_t *src = malloc(lay.n_bytes + 1), *dst = malloc(lay.n_bytes + 1);
    fill_pattern(src, lay.n_bytes, (unsigned)lay.n_bytes);
    struct sl__view enc;
    cr_assert_eq(sl__chain_encode(ch, &lay, src, ctx, &enc, &err), SL_OK, "%s: %s", desc, err.text);
    size_t bound = sl__chain_encoded_bound(ch, lay.n_bytes);
    cr_assert(bound == 0 || enc.size <= bound, "%s: %zu > bound %zu", desc, enc.size, bound);
    /* Decode from a copy: the encoder's output lives in the context's scratch. */
    uint8_t *copy = malloc(enc.size + 1);
    memcpy(copy, enc.data, enc.size);
    cr_assert_eq(sl__chain_decode(ch, &lay, copy, enc.size, dst, ctx, &err), SL_OK, "%s %s: %s",
                 desc, sl_dtype_name(dtype), err.text);
    cr_assert(memcmp(src, dst, lay.n_bytes) == 0, "%s %s: decoded bytes differ", desc,
              sl_dtype_name(dtype));
    free(copy);
    free(src);
    free(dst);
}

Test(io_codec, every_chain_round_trips_every_dtype_over_odd_shapes)
{
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    const uint64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 1, 33}, {64, 9, 2}};
    for (int dt = 0; dt < SL_DTYPE_COUNT_; dt++) {
        size_t es = sl_dtype_size((sl_dtype)dt);
        for (size_t si = 0; si < SL_ARRAY_LEN(shapes); si++) {
            for (int variant = 0; variant < 12; variant++) {
                struct sl__chain ch = {0};
                if (variant % 2 == 1)
                    ch.c[ch.n++] = codec_transpose(3);
                ch.c[ch.n++] = codec_bytes(variant % 4 >= 2 ? SL_ENDIAN_BIG : SL_ENDIAN_LITTLE);
                switch (variant / 4) {
                case 0:
                    ch.c[ch.n++] = codec_simple(SL__CODEC_ZSTD, 1);
                    ch.c[ch.n++] = codec_simple(SL__CODEC_CRC32C, 0);
                    break;
                case 1:
                    ch.c[ch.n++] = codec_simple(SL__CODEC_GZIP, 5);
                    ch.c[ch.n++] = codec_simple(SL__CODEC_ZLIB, 1);
                    break;
                default:
                    ch.c[ch.n++] = codec_blosc("lz4", (int)(si % 3), (uint32_t)es);
                    ch.c[ch.n++] = codec_simple(SL__CODEC_ZSTD, 3);
                    break;
                }
                round_trip(&ch, (sl_dtype)dt, 3, shapes[si], ctx);
            }
        }
    }
    sl_codec_ctx_destroy(ctx);
}

Test(io_codec, raw_and_checksum_only_chains_round_trip)
{
    const uint64_t shape[2] = {5, 3};
    struct sl__chain ch = {.n = 1};
    ch.c[0] = codec_bytes(SL_ENDIAN_LITTLE);
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    round_trip(&ch, SL_DTYPE_F64, 2, shape, ctx);
    ch.c[ch.n++] = codec_simple(SL__CODEC_CRC32C, 0);
    ch.c[ch.n++] = codec_simple(SL__CODEC_CRC32C, 0);
    round_trip(&ch, SL_DTYPE_I32, 2, shape, ctx);
    size_t fixed;
    cr_assert(sl__chain_fixed_size(&ch, 60, &fixed));
    cr_assert_eq(fixed, 68);
    sl_codec_ctx_destroy(ctx);
}

Test(io_codec, a_raw_chain_encodes_without_copying)
{
    const uint64_t shape[1] = {16};
    struct sl__chunk_layout lay;
    cr_assert_eq(sl__chunk_layout_init(&lay, SL_DTYPE_U8, 1, shape, NULL), SL_OK);
    struct sl__chain ch = {.n = 1};
    ch.c[0] = (struct sl__codec){.id = SL__CODEC_BYTES};
    cr_assert_eq(sl__chain_check(&ch, &lay, NULL), SL_OK, "one-byte types need no endian");
    uint8_t src[16] = {1, 2, 3};
    struct sl__view v;
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    cr_assert_eq(sl__chain_encode(&ch, &lay, src, ctx, &v, NULL), SL_OK);
    cr_assert_eq(v.data, src);
    cr_assert_eq(v.size, 16);
    sl_codec_ctx_destroy(ctx);
}

Test(io_codec, zstd_frames_record_their_content_size)
{
    const uint64_t shape[1] = {1000};
    struct sl__chunk_layout lay;
    cr_assert_eq(sl__chunk_layout_init(&lay, SL_DTYPE_I16, 1, shape, NULL), SL_OK);
    struct sl__chain ch = {.n = 2};
    ch.c[0] = codec_bytes(SL_ENDIAN_LITTLE);
    ch.c[1] = codec_simple(SL__CODEC_ZSTD, 0);
    ch.c[1].u.zstd.checksum = true;
    cr_assert_eq(sl__chain_check(&ch, &lay, NULL), SL_OK);
    int16_t data[1000] = {0};
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    struct sl__view v;
    cr_assert_eq(sl__chain_encode(&ch, &lay, data, ctx, &v, NULL), SL_OK);
    cr_assert_eq(ZSTD_getFrameContentSize(v.data, v.size), 2000ull);
    /* Frame header descriptor (after the 4-byte magic): bit 2 is the checksum flag. */
    cr_assert_eq((v.data[4] >> 2) & 1, 1);
    /* The same context serves the next chunk with the same zstd state. */
    void *cctx = ctx->zstd_c;
    cr_assert_eq(sl__chain_encode(&ch, &lay, data, ctx, &v, NULL), SL_OK);
    cr_assert_eq(ctx->zstd_c, cctx);
    sl_codec_ctx_destroy(ctx);
}

Test(io_codec, a_frame_without_content_size_decodes_in_a_bounded_buffer)
{
    uint8_t data[4096];
    fill_pattern(data, sizeof(data), 3);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
    uint8_t frame[8192];
    ZSTD_outBuffer out = {frame, sizeof(frame), 0};
    ZSTD_inBuffer in = {data, sizeof(data), 0};
    cr_assert_eq(ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end), 0u);
    ZSTD_freeCCtx(cc);
    cr_assert_eq(ZSTD_getFrameContentSize(frame, out.pos), ZSTD_CONTENTSIZE_UNKNOWN);
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    uint8_t back[4096];
    size_t got = 0;
    cr_assert_eq(sl__zstd_decode(ctx, frame, out.pos, back, sizeof(back), true, &got, NULL), SL_OK);
    cr_assert(got == sizeof(back) && memcmp(back, data, got) == 0);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__zstd_decode(ctx, frame, out.pos, back, 1000, true, &got, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, "more than the 1000 bytes"), "%s", err.text);
    sl_codec_ctx_destroy(ctx);
}

static void
expect_check_error(struct sl__chain *ch, sl_dtype dt, sl_status want, const char *text)
{
    const uint64_t shape[2] = {4, 4};
    struct sl__chunk_layout lay;
    cr_assert_eq(sl__chunk_layout_init(&lay, dt, 2, shape, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__chain_check(ch, &lay, &err), want, "%s", err.text);
    cr_assert_not_null(strstr(err.text, text), "%s", err.text);
}

Test(io_codec, invalid_chains_are_refused_with_the_codec_named)
{
    struct sl__chain ch = {.n = 1};
    ch.c[0] = codec_simple(SL__CODEC_ZSTD, 1);
    expect_check_error(&ch, SL_DTYPE_U8, SL_EPARSE, "expected the array-to-bytes codec");
    ch.c[0] = (struct sl__codec){.id = SL__CODEC_BYTES};
    expect_check_error(&ch, SL_DTYPE_I16, SL_EPARSE, "\"endian\" is required for int16");
    ch.n = 2;
    ch.c[0] = codec_bytes(SL_ENDIAN_LITTLE);
    ch.c[1] = codec_transpose(2);
    expect_check_error(&ch, SL_DTYPE_I16, SL_EPARSE, "cannot follow the bytes codec");
    ch.c[0] = codec_transpose(2);
    ch.c[0].u.transpose.order[0] = 0; /* [0, 0] */
    ch.c[1] = codec_bytes(SL_ENDIAN_LITTLE);
    expect_check_error(&ch, SL_DTYPE_I16, SL_EPARSE, "not a permutation");
    ch.c[0] = codec_bytes(SL_ENDIAN_LITTLE);
    ch.c[1] = codec_simple(SL__CODEC_ZSTD, 23);
    expect_check_error(&ch, SL_DTYPE_I16, SL_EPARSE, "level 23");
    ch.c[1] = codec_blosc("nosuch", 1, 2);
    expect_check_error(&ch, SL_DTYPE_I16, SL_EUNSUPPORTED, "nosuch");
    ch.n = 0;
    expect_check_error(&ch, SL_DTYPE_I16, SL_EPARSE, "1 to 8 codecs");
}

Test(io_codec, decoding_checks_sizes_and_checksums)
{
    const uint64_t shape[1] = {100};
    struct sl__chunk_layout lay;
    cr_assert_eq(sl__chunk_layout_init(&lay, SL_DTYPE_U32, 1, shape, NULL), SL_OK);
    struct sl__chain ch = {.n = 3};
    ch.c[0] = codec_bytes(SL_ENDIAN_LITTLE);
    ch.c[1] = codec_simple(SL__CODEC_ZSTD, 1);
    ch.c[2] = codec_simple(SL__CODEC_CRC32C, 0);
    cr_assert_eq(sl__chain_check(&ch, &lay, NULL), SL_OK);
    uint32_t data[100] = {1, 2, 3}, back[100];
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    struct sl__view v;
    cr_assert_eq(sl__chain_encode(&ch, &lay, data, ctx, &v, NULL), SL_OK);
    uint8_t enc[1024];
    size_t n = v.size;
    memcpy(enc, v.data, n);
    enc[n / 2] ^= 0x40;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__chain_decode(&ch, &lay, enc, n, back, ctx, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, "crc32c mismatch: stored 0x"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "computed 0x"), "%s", err.text);
    enc[n / 2] ^= 0x40;
    /* A chunk of the wrong size: decode as 101 elements. */
    const uint64_t other[1] = {101};
    struct sl__chunk_layout big;
    cr_assert_eq(sl__chunk_layout_init(&big, SL_DTYPE_U32, 1, other, NULL), SL_OK);
    uint32_t back_big[101];
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__chain_decode(&ch, &big, enc, n, back_big, ctx, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, "declares 400 bytes, the chunk decodes to 404"), "%s",
                       err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__chain_decode(&ch, &lay, enc, 3, back, ctx, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, "cannot hold a checksum"), "%s", err.text);
    cr_assert_eq(sl__chain_decode(&ch, &lay, enc, n, back, ctx, NULL), SL_OK);
    cr_assert(memcmp(back, data, sizeof(data)) == 0);
    sl_codec_ctx_destroy(ctx);
}

/* ---- specs ------------------------------------------------------------------- */

Test(io_codec, codec_specs_parse_and_format)
{
    struct sl_codec_spec s;
    char text[64];
    cr_assert_eq(sl_codec_spec_parse("zstd:5", &s, NULL), SL_OK);
    cr_assert(s.compressor == SL_COMPRESSOR_ZSTD && s.level == 5);
    cr_assert_eq(sl_codec_spec_parse("zstd:-3", &s, NULL), SL_OK);
    cr_assert_eq(s.level, -3);
    cr_assert_eq(sl_codec_spec_parse("zstd", &s, NULL), SL_OK);
    cr_assert_eq(sl_codec_spec_parse("none", &s, NULL), SL_OK);
    cr_assert_eq(s.compressor, SL_COMPRESSOR_NONE);
    cr_assert_eq(sl_codec_spec_parse("gzip:9", &s, NULL), SL_OK);
    cr_assert(s.compressor == SL_COMPRESSOR_GZIP && s.level == 9);
    cr_assert_eq(sl_codec_spec_parse("blosc:zstd:3:bitshuffle", &s, NULL), SL_OK);
    cr_assert(s.compressor == SL_COMPRESSOR_BLOSC && s.level == 3 &&
              s.blosc_shuffle == SL_BLOSC_BITSHUFFLE && strcmp(s.blosc_cname, "zstd") == 0);
    sl_codec_spec_format(&s, text, sizeof(text));
    cr_assert_str_eq(text, "blosc:zstd:3:bitshuffle");
    cr_assert_eq(sl_codec_spec_parse("blosc:lz4:5", &s, NULL), SL_OK);
    cr_assert_eq(s.blosc_shuffle, SL_BLOSC_SHUFFLE);
    cr_assert_not(s.crc32c);
    /* chains ending in a crc32c checksum */
    cr_assert_eq(sl_codec_spec_parse("zstd:3,crc32c", &s, NULL), SL_OK);
    cr_assert(s.compressor == SL_COMPRESSOR_ZSTD && s.level == 3 && s.crc32c);
    sl_codec_spec_format(&s, text, sizeof(text));
    cr_assert_str_eq(text, "zstd:3,crc32c");
    cr_assert_eq(sl_codec_spec_parse("none,crc32c", &s, NULL), SL_OK);
    cr_assert(s.compressor == SL_COMPRESSOR_NONE && s.crc32c);
    sl_codec_spec_format(&s, text, sizeof(text));
    cr_assert_str_eq(text, "crc32c");
    cr_assert_eq(sl_codec_spec_parse("crc32c", &s, NULL), SL_OK);
    cr_assert(s.compressor == SL_COMPRESSOR_NONE && s.crc32c);
    char small[4];
    cr_assert_eq(sl_codec_spec_format(&s, small, sizeof(small)), 6); /* "crc32c", cut */
    cr_assert_str_eq(small, "crc");

    const char *bad[] = {"zstd:23",
                         "zstd:x",
                         "zstd:1:2",
                         "gzip:10",
                         "gzip:-1",
                         "blosc",
                         "blosc:lz4",
                         "blosc:lz4:10",
                         "blosc:lz4:5:sideways",
                         "lzma:1",
                         "",
                         "none:1",
                         "zstd:1,",
                         "zstd:1,crc32",
                         "zstd:1,crc32c,crc32c",
                         "crc32c,zstd:1",
                         ",crc32c"};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_codec_spec_parse(bad[i], &s, &err), SL_EPARSE, "\"%s\"", bad[i]);
        cr_assert_not_null(strstr(err.text, "codec \""), "%s", err.text);
    }
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_codec_spec_parse("blosc:nosuch:5", &s, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "nosuch"), "%s", err.text);
}

Test(io_codec, available_codecs_are_reported)
{
    cr_assert(sl_codec_available("bytes"));
    cr_assert(sl_codec_available("zstd"));
    cr_assert(sl_codec_available("crc32c"));
    cr_assert(sl_codec_available("sharding_indexed"));
    cr_assert_not(sl_codec_available("vlen-utf8"));
    cr_assert_not(sl_codec_available(NULL));
}

Test(io_codec, context_creation_survives_allocation_failure)
{
    struct sl_test_alloc ta = {.fail_at = 1};
    struct sl_allocator a = sl_test_alloc_make(&ta);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_codec_ctx_create(&a, &err));
    cr_assert_eq(err.code, SL_ENOMEM);
    ta.fail_at = 3;
    sl_codec_ctx *ctx = sl_codec_ctx_create(&a, NULL);
    cr_assert_not_null(ctx);
    const uint64_t shape[1] = {64};
    struct sl__chunk_layout lay;
    cr_assert_eq(sl__chunk_layout_init(&lay, SL_DTYPE_U8, 1, shape, NULL), SL_OK);
    struct sl__chain ch = {.n = 2};
    ch.c[0] = (struct sl__codec){.id = SL__CODEC_BYTES};
    ch.c[1] = codec_simple(SL__CODEC_GZIP, 1);
    cr_assert_eq(sl__chain_check(&ch, &lay, NULL), SL_OK);
    uint8_t data[64] = {0};
    struct sl__view v;
    /* Allocation 2 is the zlib stream, 3 the output buffer. */
    cr_assert_eq(sl__chain_encode(&ch, &lay, data, ctx, &v, NULL), SL_ENOMEM);
    cr_assert_eq(sl__chain_encode(&ch, &lay, data, ctx, &v, NULL), SL_OK, "and then recovers");
    sl_codec_ctx_destroy(ctx);
    cr_assert_eq(ta.n_live, 0);
}
