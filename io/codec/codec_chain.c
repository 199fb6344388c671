/* SPDX-License-Identifier: MIT */
/*
 * Codec chains: checking a chain against the chunks it encodes, and running
 * it forwards (encode) and backwards (decode).
 *
 * DESIGN: the size each decoding step must produce is known before the
 * step runs: the bytes codec produces exactly the chunk's byte count, crc32c
 * adds four bytes, and a compressor's output is bounded by its worst case.
 * Every step decodes into a buffer of exactly that size (or bound) and fails
 * on anything else, so a hostile chunk can neither make sluice allocate what
 * it declares nor write past a buffer.  The last compressor of a chain
 * decodes straight into the caller's chunk buffer when no transpose follows,
 * so a bytes+zstd chunk is decompressed with no copy at all.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "codec_internal.h"

static const char *const codec_names[SL__CODEC_COUNT_] = {
    [SL__CODEC_BYTES] = "bytes", [SL__CODEC_TRANSPOSE] = "transpose", [SL__CODEC_CRC32C] = "crc32c",
    [SL__CODEC_ZSTD] = "zstd",   [SL__CODEC_GZIP] = "gzip",           [SL__CODEC_ZLIB] = "zlib",
    [SL__CODEC_BLOSC] = "blosc",
};

const char *
sl__codec_name(sl__codec_id id)
{
    return (unsigned)id < SL__CODEC_COUNT_ ? codec_names[id] : "?";
}

bool
sl__codec_built(sl__codec_id id)
{
    switch (id) {
    case SL__CODEC_GZIP:
    case SL__CODEC_ZLIB:
#ifdef SL_HAVE_ZLIB
        return true;
#else
        return false;
#endif
    case SL__CODEC_BLOSC:
#ifdef SL_HAVE_BLOSC
        return true;
#else
        return false;
#endif
    default:
        return (unsigned)id < SL__CODEC_COUNT_;
    }
}

sl_status
sl__chunk_layout_init(struct sl__chunk_layout *lay, sl_dtype dtype, uint32_t rank,
                      const uint64_t *shape, struct sl_error *err)
{
    if (rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "rank %u exceeds %d", rank, SL_MAX_RANK);
    lay->dtype = dtype;
    lay->rank = rank;
    for (uint32_t d = 0; d < rank; d++)
        lay->shape[d] = shape[d];
    return sl_shape_bytes(rank, shape, sl_dtype_size(dtype), &lay->n_bytes, err);
}

static bool
codec_is_bytes_to_bytes(sl__codec_id id)
{
    return id == SL__CODEC_CRC32C || id == SL__CODEC_ZSTD || id == SL__CODEC_GZIP ||
           id == SL__CODEC_ZLIB || id == SL__CODEC_BLOSC;
}

/* Width of the words the bytes codec swaps: complex types swap each part. */
static size_t
swap_width(sl_dtype dt)
{
    size_t es = sl_dtype_size(dt);
    return sl_dtype_is_complex(dt) ? es / 2 : es;
}

static sl_status
chain_check_transpose(struct sl__chain *ch, uint32_t i, uint32_t rank, struct sl_error *err)
{
    const uint32_t *order = ch->c[i].u.transpose.order;
    bool seen[SL_MAX_RANK] = {false};
    uint32_t next[SL_MAX_RANK];
    for (uint32_t k = 0; k < rank; k++) {
        if (order[k] >= rank || seen[order[k]])
            return sl_error_set(err, SL_EPARSE, NULL,
                                "codec %u (transpose): order is not a permutation of 0..%u", i,
                                rank - 1);
        seen[order[k]] = true;
        next[k] = ch->perm[order[k]];
    }
    memcpy(ch->perm, next, rank * sizeof(*next));
    return SL_OK;
}

static sl_status
chain_check_bytes_to_bytes(const struct sl__codec *c, uint32_t i, struct sl_error *err)
{
    const char *name = sl__codec_name(c->id);
    if (!sl__codec_built(c->id))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "codec %u (%s) is not in this build (its library was not found)", i,
                            name);
    switch (c->id) {
    case SL__CODEC_ZSTD:
        if (c->u.zstd.level < -131072 || c->u.zstd.level > 22)
            return sl_error_set(err, SL_EPARSE, NULL,
                                "codec %u (zstd): level %d is outside -131072..22", i,
                                c->u.zstd.level);
        break;
    case SL__CODEC_GZIP:
    case SL__CODEC_ZLIB:
        if (c->u.gzip.level < 0 || c->u.gzip.level > 9)
            return sl_error_set(err, SL_EPARSE, NULL, "codec %u (%s): level %d is outside 0..9", i,
                                name, c->u.gzip.level);
        break;
    case SL__CODEC_BLOSC:
        if (c->u.blosc.clevel < 0 || c->u.blosc.clevel > 9 || c->u.blosc.shuffle < 0 ||
            c->u.blosc.shuffle > 2 || c->u.blosc.typesize < 1 || c->u.blosc.typesize > 255)
            return sl_error_set(err, SL_EPARSE, NULL,
                                "codec %u (blosc): clevel %d, shuffle %d or typesize %u out of "
                                "range",
                                i, c->u.blosc.clevel, c->u.blosc.shuffle, c->u.blosc.typesize);
        if (!sl__blosc_cname_known(c->u.blosc.cname))
            return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                                "codec %u (blosc): compressor \"%s\" is not in this libblosc", i,
                                c->u.blosc.cname);
        break;
    default:
        break;
    }
    return SL_OK;
}

sl_status
sl__chain_check(struct sl__chain *ch, const struct sl__chunk_layout *lay, struct sl_error *err)
{
    if (ch->n == 0 || ch->n > SL__CHAIN_MAX)
        return sl_error_set(err, SL_EPARSE, NULL,
                            "a codec chain holds 1 to %d codecs and a bytes codec, not %u",
                            SL__CHAIN_MAX, ch->n);
    ch->rank = lay->rank;
    for (uint32_t k = 0; k < lay->rank; k++)
        ch->perm[k] = k;
    uint32_t i = 0;
    for (; i < ch->n && ch->c[i].id == SL__CODEC_TRANSPOSE; i++)
        SL_TRY(chain_check_transpose(ch, i, lay->rank, err));
    ch->n_aa = i;
    if (i == ch->n || ch->c[i].id != SL__CODEC_BYTES)
        return sl_error_set(err, SL_EPARSE, NULL,
                            "codec %u (%s): expected the array-to-bytes codec \"bytes\" here", i,
                            i < ch->n ? sl__codec_name(ch->c[i].id) : "end of chain");
    const struct sl__codec *b = &ch->c[i];
    size_t es = sl_dtype_size(lay->dtype);
    if (es > 1 && !b->u.bytes.has_endian)
        return sl_error_set(err, SL_EPARSE, NULL, "codec %u (bytes): \"endian\" is required for %s",
                            i, sl_dtype_name(lay->dtype));
    ch->swap = es > 1 && b->u.bytes.endian != sl_endian_native();
    for (i++; i < ch->n; i++) {
        if (!codec_is_bytes_to_bytes(ch->c[i].id))
            return sl_error_set(err, SL_EPARSE, NULL, "codec %u (%s) cannot follow the bytes codec",
                                i, sl__codec_name(ch->c[i].id));
        SL_TRY(chain_check_bytes_to_bytes(&ch->c[i], i, err));
    }
    return SL_OK;
}

/* Worst-case output of one bytes-to-bytes codec for `n` input bytes. */
static size_t
codec_bound(sl__codec_id id, size_t n)
{
    size_t b;
    switch (id) {
    case SL__CODEC_CRC32C:
        return n > SIZE_MAX - 4 ? SIZE_MAX : n + 4;
    case SL__CODEC_ZSTD:
        /* zstd's own bound plus slack for other encoders' block headers. */
        b = n + (n >> 7) + 1024;
        return b < n ? SIZE_MAX : b;
    case SL__CODEC_GZIP:
    case SL__CODEC_ZLIB:
        return sl__gzip_bound(n);
    case SL__CODEC_BLOSC:
        return sl__blosc_bound(n);
    default:
        return n;
    }
}

size_t
sl__chain_encoded_bound(const struct sl__chain *ch, size_t n)
{
    for (uint32_t i = ch->n_aa + 1; i < ch->n; i++)
        n = codec_bound(ch->c[i].id, n);
    return n == SIZE_MAX ? 0 : n;
}

bool
sl__chain_fixed_size(const struct sl__chain *ch, size_t n, size_t *encoded)
{
    for (uint32_t i = ch->n_aa + 1; i < ch->n; i++) {
        if (ch->c[i].id != SL__CODEC_CRC32C)
            return false;
        n += 4;
    }
    *encoded = n;
    return true;
}

/* ---- encoding ---------------------------------------------------------------- */

static void
put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t
get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The array-level steps: transpose and byte order, into the stage buffer
 * when they change anything. */
static sl_status
chain_encode_array(const struct sl__chain *ch, const struct sl__chunk_layout *lay, const void *src,
                   sl_codec_ctx *ctx, struct sl_buf **holder, const uint8_t **out,
                   struct sl_error *err)
{
    size_t n = lay->n_bytes;
    *holder = NULL;
    *out = src;
    if (ch->n_aa == 0 && !ch->swap)
        return SL_OK;
    struct sl_buf *stage;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_STAGE, n, &stage, err));
    if (ch->n_aa > 0)
        sl__transpose(stage->data, src, lay->rank, lay->shape, ch->perm, sl_dtype_size(lay->dtype));
    else
        memcpy(stage->data, src, n);
    if (ch->swap)
        sl__byteswap(stage->data, n, swap_width(lay->dtype));
    stage->size = n;
    *holder = stage;
    *out = stage->data;
    return SL_OK;
}

sl_status
sl__chain_encode(const struct sl__chain *ch, const struct sl__chunk_layout *lay, const void *src,
                 sl_codec_ctx *ctx, struct sl__view *out, struct sl_error *err)
{
    struct sl_buf *holder;
    const uint8_t *data;
    SL_TRY(chain_encode_array(ch, lay, src, ctx, &holder, &data, err));
    size_t size = lay->n_bytes;
    for (uint32_t i = ch->n_aa + 1; i < ch->n; i++) {
        const struct sl__codec *c = &ch->c[i];
        struct sl_buf *dest = holder == &ctx->scratch[SL__SCR_A] ? &ctx->scratch[SL__SCR_B]
                                                                 : &ctx->scratch[SL__SCR_A];
        if (c->id == SL__CODEC_CRC32C) {
            uint32_t crc = sl__crc32c(0, data, size);
            if (holder == NULL || holder->capacity - size < 4) {
                dest->size = 0;
                SL_TRY(sl_buf_reserve(dest, size + 4, err));
                memcpy(dest->data, data, size);
                holder = dest;
            }
            put_le32(holder->data + size, crc);
            holder->size = size += 4;
            data = holder->data;
            continue;
        }
        dest->size = 0;
        sl_status st = SL_OK;
        if (c->id == SL__CODEC_ZSTD)
            st = sl__zstd_encode(c, ctx, data, size, dest, err);
        else if (c->id == SL__CODEC_GZIP || c->id == SL__CODEC_ZLIB)
            st = sl__gzip_encode(c, ctx, data, size, dest, err);
        else
            st = sl__blosc_encode(c, data, size, dest, err);
        SL_TRY(st);
        holder = dest;
        data = dest->data;
        size = dest->size;
    }
    *out = (struct sl__view){data, size};
    return SL_OK;
}

/* ---- decoding ---------------------------------------------------------------- */

/* What decoding codec i must produce: its encode-side input size. */
struct want {
    size_t size; /* exact size, or the bound */
    bool exact;  /* size is exact */
};

static void
chain_wants(const struct sl__chain *ch, size_t n, struct want *w)
{
    struct want cur = {n, true};
    for (uint32_t i = ch->n_aa + 1; i < ch->n; i++) {
        w[i] = cur;
        if (ch->c[i].id == SL__CODEC_CRC32C)
            cur.size = codec_bound(SL__CODEC_CRC32C, cur.size);
        else
            cur = (struct want){codec_bound(ch->c[i].id, cur.size), false};
    }
}

static sl_status
chain_decode_crc(uint32_t i, struct sl__view *cur, struct want w, struct sl_error *err)
{
    if (cur->size < 4)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "codec %u (crc32c): %zu bytes cannot hold a checksum", i, cur->size);
    size_t n = cur->size - 4;
    uint32_t stored = get_le32(cur->data + n);
    uint32_t computed = sl__crc32c(0, cur->data, n);
    if (stored != computed)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "crc32c mismatch: stored 0x%08" PRIx32 ", computed 0x%08" PRIx32
                            " over %zu bytes",
                            stored, computed, n);
    if ((w.exact && n != w.size) || n > w.size)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "codec %u (crc32c): %zu bytes under the checksum, expected %s%zu", i, n,
                            w.exact ? "" : "at most ", w.size);
    cur->size = n;
    return SL_OK;
}

static sl_status
chain_decode_step(const struct sl__codec *c, sl_codec_ctx *ctx, struct sl__view *cur, uint8_t *dest,
                  struct want w, struct sl_error *err)
{
    size_t got = 0;
    sl_status st;
    if (c->id == SL__CODEC_ZSTD)
        st = sl__zstd_decode(ctx, cur->data, cur->size, dest, w.size, w.exact, &got, err);
    else if (c->id == SL__CODEC_GZIP || c->id == SL__CODEC_ZLIB)
        st = sl__gzip_decode(ctx, cur->data, cur->size, dest, w.size, w.exact, &got, err);
    else
        st = sl__blosc_decode(cur->data, cur->size, dest, w.size, w.exact, &got, err);
    SL_TRY(st);
    *cur = (struct sl__view){dest, got};
    return SL_OK;
}

sl_status
sl__chain_decode(const struct sl__chain *ch, const struct sl__chunk_layout *lay, const uint8_t *src,
                 size_t n, void *dst, sl_codec_ctx *ctx, struct sl_error *err)
{
    size_t size = lay->n_bytes;
    uint8_t *stage = dst;
    if (ch->n_aa > 0) {
        struct sl_buf *b;
        SL_TRY(sl__ctx_scratch(ctx, SL__SCR_STAGE, size, &b, err));
        stage = b->data;
    }
    struct want w[SL__CHAIN_MAX];
    chain_wants(ch, size, w);
    struct sl__view cur = {src, n};
    for (uint32_t i = ch->n; i-- > ch->n_aa + 1;) {
        const struct sl__codec *c = &ch->c[i];
        if (c->id == SL__CODEC_CRC32C) {
            SL_TRY(chain_decode_crc(i, &cur, w[i], err));
            continue;
        }
        uint8_t *dest = stage;
        if (i != ch->n_aa + 1) {
            struct sl_buf *b = cur.data == ctx->scratch[SL__SCR_A].data ? &ctx->scratch[SL__SCR_B]
                                                                        : &ctx->scratch[SL__SCR_A];
            b->size = 0;
            SL_TRY(sl_buf_reserve(b, w[i].size, err));
            dest = b->data;
        }
        SL_TRY(chain_decode_step(c, ctx, &cur, dest, w[i], err));
    }
    if (cur.size != size)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "chunk decodes to %zu bytes, expected %zu (%s of shape %u-d)", cur.size,
                            size, sl_dtype_name(lay->dtype), lay->rank);
    if (cur.data != stage && size > 0)
        memcpy(stage, cur.data, size);
    if (ch->swap)
        sl__byteswap(stage, size, swap_width(lay->dtype));
    if (ch->n_aa > 0) {
        uint64_t enc_shape[SL_MAX_RANK];
        uint32_t inv[SL_MAX_RANK];
        for (uint32_t k = 0; k < lay->rank; k++) {
            enc_shape[k] = lay->shape[ch->perm[k]];
            inv[ch->perm[k]] = k;
        }
        sl__transpose(dst, stage, lay->rank, enc_shape, inv, sl_dtype_size(lay->dtype));
    }
    return SL_OK;
}

/* ---- description --------------------------------------------------------------- */

static void
codec_describe(const struct sl__codec *c, uint32_t rank, char *buf, size_t size, size_t *len)
{
    const char *name = sl__codec_name(c->id);
    switch (c->id) {
    case SL__CODEC_BYTES:
        sl__strbuf_append(buf, size, len, "bytes(%s)",
                          !c->u.bytes.has_endian               ? "one-byte"
                          : c->u.bytes.endian == SL_ENDIAN_BIG ? "big"
                                                               : "little");
        break;
    case SL__CODEC_TRANSPOSE:
        sl__strbuf_append(buf, size, len, "transpose(order=[");
        for (uint32_t k = 0; k < rank; k++)
            sl__strbuf_append(buf, size, len, "%s%u", k ? "," : "", c->u.transpose.order[k]);
        sl__strbuf_append(buf, size, len, "])");
        break;
    case SL__CODEC_ZSTD:
        sl__strbuf_append(buf, size, len, "zstd(level=%d%s)", c->u.zstd.level,
                          c->u.zstd.checksum ? ",checksum" : "");
        break;
    case SL__CODEC_GZIP:
    case SL__CODEC_ZLIB:
        sl__strbuf_append(buf, size, len, "%s(level=%d)", name, c->u.gzip.level);
        break;
    case SL__CODEC_BLOSC: {
        static const char *const shuffles[] = {"noshuffle", "shuffle", "bitshuffle"};
        int sh = c->u.blosc.shuffle >= 0 && c->u.blosc.shuffle <= 2 ? c->u.blosc.shuffle : 0;
        sl__strbuf_append(buf, size, len, "blosc(cname=%s,clevel=%d,%s,typesize=%u)",
                          c->u.blosc.cname, c->u.blosc.clevel, shuffles[sh], c->u.blosc.typesize);
        break;
    }
    default:
        sl__strbuf_append(buf, size, len, "%s", name);
        break;
    }
}

size_t
sl__chain_describe(const struct sl__chain *ch, char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    for (uint32_t i = 0; i < ch->n; i++) {
        if (i > 0)
            sl__strbuf_append(buf, size, &len, " > ");
        codec_describe(&ch->c[i], ch->rank, buf, size, &len);
    }
    return len;
}
