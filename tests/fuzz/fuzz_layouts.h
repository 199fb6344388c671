/* SPDX-License-Identifier: MIT */
/*
 * The input headers of the chunk_decode and shard_index targets, shared
 * with make_seeds.c so generated seeds mean what the targets read.
 */
#ifndef SL_FUZZ_LAYOUTS_H
#define SL_FUZZ_LAYOUTS_H

#include "fuzz.h"
#include "zarr_internal.h"

/* ---- chunk_decode ------------------------------------------------------------ */

/* Flags byte. */
#define CHUNK_F_TRANSPOSE 0x01  /* one transpose first */
#define CHUNK_F_BIG 0x02        /* big-endian bytes codec */
#define CHUNK_F_NO_ENDIAN 0x04  /* bytes codec without "endian" */
#define CHUNK_F_ROUNDTRIP 0x08  /* payload is the decoded chunk */
#define CHUNK_F_TRANSPOSE2 0x10 /* a second transpose (composed) */

static const char *const fuzz_blosc_cnames[] = {"blosclz", "lz4",  "lz4hc",
                                                "zlib",    "zstd", "snappy"};

/* Permutation number `which` of 0..rank-1 into `order`. */
static inline void
fuzz_permutation(uint32_t rank, uint32_t which, uint32_t *order)
{
    uint32_t pool[SL_MAX_RANK];
    for (uint32_t k = 0; k < rank; k++)
        pool[k] = k;
    for (uint32_t k = 0; k < rank; k++) {
        uint32_t left = rank - k, pick = which % left;
        which /= left;
        order[k] = pool[pick];
        memmove(pool + pick, pool + pick + 1, (left - pick - 1) * sizeof(*pool));
    }
}

/* One bytes-to-bytes codec from two (blosc: three) header bytes. */
static inline void
fuzz_add_b2b(struct fuzz_input *in, struct sl__codec *c)
{
    static const sl__codec_id ids[] = {SL__CODEC_CRC32C, SL__CODEC_ZSTD, SL__CODEC_GZIP,
                                       SL__CODEC_ZLIB, SL__CODEC_BLOSC};
    memset(c, 0, sizeof(*c));
    c->id = ids[fuzz_below(in, 5)];
    uint8_t p = fuzz_u8(in);
    switch (c->id) {
    case SL__CODEC_ZSTD:
        c->u.zstd.level = (int)(p % 8) - 2;
        c->u.zstd.checksum = (p & 0x80) != 0;
        break;
    case SL__CODEC_GZIP:
    case SL__CODEC_ZLIB:
        c->u.gzip.level = p % 10;
        break;
    case SL__CODEC_BLOSC:
        snprintf(c->u.blosc.cname, sizeof(c->u.blosc.cname), "%s", fuzz_blosc_cnames[p % 6]);
        c->u.blosc.clevel = (p >> 3) % 10;
        c->u.blosc.shuffle = (p >> 6) % 3;
        c->u.blosc.typesize = 1 + fuzz_below(in, 255);
        break;
    default:
        break;
    }
}

/* Read the layout and chain from the header.  @return false when the chain
 * check refuses them (checked to carry a message). */
static inline bool
fuzz_chunk_header(struct fuzz_input *in, struct sl__chunk_layout *lay, struct sl__chain *ch,
                  uint8_t *flags)
{
    sl_dtype dt = (sl_dtype)fuzz_below(in, SL_DTYPE_COUNT_);
    uint32_t rank = fuzz_below(in, 4);
    uint64_t shape[SL_MAX_RANK] = {0};
    for (uint32_t d = 0; d < rank; d++)
        shape[d] = 1 + fuzz_below(in, 24);
    struct sl_error err = SL_ERROR_INIT;
    FUZZ_CHECK(sl__chunk_layout_init(lay, dt, rank, shape, &err) == SL_OK, "%s", err.text);
    *flags = fuzz_u8(in);
    uint32_t perm = fuzz_u8(in);
    memset(ch, 0, sizeof(*ch));
    int n_transpose = (*flags & CHUNK_F_TRANSPOSE ? 1 : 0) + (*flags & CHUNK_F_TRANSPOSE2 ? 1 : 0);
    for (int t = 0; t < n_transpose; t++) {
        ch->c[ch->n].id = SL__CODEC_TRANSPOSE;
        fuzz_permutation(rank, perm + (uint32_t)t * 5, ch->c[ch->n].u.transpose.order);
        ch->n++;
    }
    ch->c[ch->n].id = SL__CODEC_BYTES;
    ch->c[ch->n].u.bytes.endian = *flags & CHUNK_F_BIG ? SL_ENDIAN_BIG : SL_ENDIAN_LITTLE;
    ch->c[ch->n].u.bytes.has_endian = (*flags & CHUNK_F_NO_ENDIAN) == 0;
    ch->n++;
    uint32_t n_b2b = fuzz_below(in, 4);
    for (uint32_t i = 0; i < n_b2b; i++)
        fuzz_add_b2b(in, &ch->c[ch->n++]);
    err = SL_ERROR_INIT;
    sl_status st = sl__chain_check(ch, lay, &err);
    fuzz_check_error(st, &err, "sl__chain_check");
    return st == SL_OK;
}

/* ---- shard_index ------------------------------------------------------------- */

/* Flags byte. */
#define SHARD_F_AT_START 0x01   /* index before the chunks */
#define SHARD_F_CRC 0x02        /* index_codecs: bytes, crc32c */
#define SHARD_F_BIG 0x04        /* big-endian index */
#define SHARD_F_BUILD 0x08      /* build mode */
#define SHARD_F_INNER_ZSTD 0x10 /* inner chunks zstd-compressed */

/* The uint8 sharded array the header describes: rank 1..3, per dimension
 * 1..6 inner chunks of extent 1..3 per shard; then the flags byte. */
static inline void
fuzz_shard_meta(struct fuzz_input *in, struct sl__meta *m, uint8_t *flags)
{
    sl__meta_init(m, NULL);
    m->zarr_format = 3;
    m->rank = 1 + fuzz_below(in, 3);
    m->dtype = SL_DTYPE_U8;
    m->sharded = true;
    for (uint32_t d = 0; d < m->rank; d++) {
        uint64_t per = 1 + fuzz_below(in, 6);
        m->inner[d] = 1 + fuzz_below(in, 3);
        m->chunk[d] = per * m->inner[d];
        m->shape[d] = 2 * m->chunk[d] - 1;
    }
    *flags = fuzz_u8(in);
    m->index_at_start = (*flags & SHARD_F_AT_START) != 0;
    m->chain.n = 1;
    m->chain.c[0].id = SL__CODEC_BYTES;
    if (*flags & SHARD_F_INNER_ZSTD)
        m->chain.c[m->chain.n++].id = SL__CODEC_ZSTD;
    m->index_chain.n = 1;
    m->index_chain.c[0].id = SL__CODEC_BYTES;
    m->index_chain.c[0].u.bytes.has_endian = true;
    m->index_chain.c[0].u.bytes.endian = *flags & SHARD_F_BIG ? SL_ENDIAN_BIG : SL_ENDIAN_LITTLE;
    if (*flags & SHARD_F_CRC)
        m->index_chain.c[m->index_chain.n++].id = SL__CODEC_CRC32C;
    struct sl_error err = SL_ERROR_INIT;
    FUZZ_CHECK(sl__meta_check(m, &err) == SL_OK, "harness metadata refused: %s", err.text);
}

#endif /* SL_FUZZ_LAYOUTS_H */
