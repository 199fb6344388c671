/* SPDX-License-Identifier: MIT */
/*
 * The codec sub-library's interface to the io layers above it: codec
 * chains (check, encode, decode, bounds), scratch buffers of a codec
 * context, and the parallel loop that gives each worker its own context.
 * The chain parsers take plain byte buffers so fuzz targets can call them.
 */
#ifndef SL_IO_CODEC_H
#define SL_IO_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/array.h>
#include <sluice/array_iter.h>
#include <sluice/buf.h>
#include <sluice/checked.h>
#include <sluice/codec.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/parallel.h>

#include "core_internal.h"

/* Scratch buffers of a codec context, by the layer that uses them; a layer
 * never touches another's, so calls can nest (a shard read decodes its index
 * with the chain while holding raw bytes in SL__SCR_IO). */
typedef enum sl__scratch {
    SL__SCR_STAGE,     /* chain: transposed or byte-swapped chunk */
    SL__SCR_A,         /* chain: bytes-to-bytes ping */
    SL__SCR_B,         /* chain: bytes-to-bytes pong */
    SL__SCR_IO,        /* chunk and inner-chunk bytes read from a store */
    SL__SCR_INDEX_RAW, /* shard index bytes as stored */
    SL__SCR_INDEX,     /* shard index decoded to native uint64 pairs */
    SL__SCR_CHUNK,     /* a decoded chunk being merged or copied */
    SL__SCR_SHARD,     /* a shard being assembled */
    SL__SCR_OLD,       /* the previous version of a shard being rewritten */
    SL__SCR_INDEX_NEW, /* entries of a shard being assembled */
    SL__SCR_PLAN,      /* byte ranges planned for one shard read */
    SL__SCR_WHICH,     /* inner chunks of one shard a region needs */
    SL__SCR_COUNT_
} sl__scratch;

/* Scratch buffer `which` of `ctx`, emptied, with room for `n` bytes; its
 * data is never NULL, even for n == 0. */
sl_status sl__ctx_scratch(sl_codec_ctx *ctx, sl__scratch which, size_t n, struct sl_buf **out,
                          struct sl_error *err);

/* The chain scratch buffer of `ctx` (SL__SCR_STAGE, _A or _B) whose data
 * starts at `data`, so an encoding the chain left there can be taken over;
 * NULL when `data` is not at the start of one. */
struct sl_buf *sl__ctx_scratch_holding(sl_codec_ctx *ctx, const uint8_t *data);

/* The codecs sluice implements. */
typedef enum sl__codec_id {
    SL__CODEC_BYTES,     /* array -> bytes: element byte order */
    SL__CODEC_TRANSPOSE, /* array -> array: permute dimensions */
    SL__CODEC_CRC32C,    /* bytes -> bytes: append a CRC-32C */
    SL__CODEC_ZSTD,      /* bytes -> bytes */
    SL__CODEC_GZIP,      /* bytes -> bytes: RFC 1952 gzip (v3 gzip, v2 gzip) */
    SL__CODEC_ZLIB,      /* bytes -> bytes: RFC 1950 zlib (v2 zlib) */
    SL__CODEC_BLOSC,     /* bytes -> bytes */
    SL__CODEC_COUNT_
} sl__codec_id;

/* One codec and its configuration. */
struct sl__codec {
    sl__codec_id id;
    union {
        struct {
            sl_endian endian; /* byte order of stored elements */
            bool has_endian;  /* false: "endian" omitted (one-byte types only) */
        } bytes;
        struct {
            uint32_t order[SL_MAX_RANK]; /* encoded dimension k is decoded dimension order[k] */
        } transpose;
        struct {
            int level;     /* -131072..22; 0 is zstd's default */
            bool checksum; /* store zstd's content checksum */
        } zstd;
        struct {
            int level; /* 0..9 */
        } gzip;        /* gzip and zlib */
        struct {
            char cname[16];     /* blosclz, lz4, lz4hc, snappy, zlib, zstd */
            int clevel;         /* 0..9 */
            int shuffle;        /* 0 none, 1 byte, 2 bit (v2 -1 resolved at parse) */
            uint32_t typesize;  /* bytes per shuffled item, 1..255 */
            uint32_t blocksize; /* 0: automatic */
        } blosc;
    } u;
};

/* Most codecs in one chain. */
#define SL__CHAIN_MAX 8

/* A codec chain in encode order (array -> array codecs, one array -> bytes
 * codec, bytes -> bytes codecs) and what sl__chain_check derives from it. */
struct sl__chain {
    uint32_t n;                        /* codecs in c */
    struct sl__codec c[SL__CHAIN_MAX]; /* in encode order */
    uint32_t rank;                     /* rank of the chunks it encodes */
    uint32_t n_aa;                     /* leading transposes; c[n_aa] is bytes */
    uint32_t perm[SL_MAX_RANK];        /* the transposes composed */
    bool swap;                         /* stored byte order differs from this machine's */
};

/* What a chain encodes: one whole chunk in C order. */
struct sl__chunk_layout {
    sl_dtype dtype;              /* element type */
    uint32_t rank;               /* dimensions */
    uint64_t shape[SL_MAX_RANK]; /* chunk shape */
    size_t n_bytes;              /* bytes of the decoded chunk */
};

/* Fill a layout; SL_EOVERFLOW when the chunk's byte count overflows. */
sl_status sl__chunk_layout_init(struct sl__chunk_layout *lay, sl_dtype dtype, uint32_t rank,
                                const uint64_t *shape, struct sl_error *err);

/* Name of a codec as zarr.json spells it ("zstd", "bytes", ...). */
const char *sl__codec_name(sl__codec_id id);

/*
 * Check that `ch` is a valid chain for chunks of `lay`: transposes first,
 * then exactly one bytes codec, then bytes-to-bytes codecs; transposes are
 * permutations of the chunk's rank; multi-byte types name their byte order;
 * configurations are in range.  Fills the derived fields.
 * @return SL_OK, SL_EPARSE or SL_EUNSUPPORTED naming the codec by position.
 */
sl_status sl__chain_check(struct sl__chain *ch, const struct sl__chunk_layout *lay,
                          struct sl_error *err);

/* A read-only run of bytes. */
struct sl__view {
    const uint8_t *data;
    size_t size;
};

/*
 * Encode one chunk: `src` holds lay->n_bytes bytes, C order, native byte
 * order.  `*out` points either into `src` (a chain that changes nothing) or
 * into `ctx`'s chain scratch, valid until the next chain call on `ctx`.
 * @return SL_OK, SL_ENOMEM or SL_EIO (a compressor failed).
 */
sl_status sl__chain_encode(const struct sl__chain *ch, const struct sl__chunk_layout *lay,
                           const void *src, sl_codec_ctx *ctx, struct sl__view *out,
                           struct sl_error *err);

/*
 * Decode `n` stored bytes into `dst` (lay->n_bytes bytes, C order, native
 * byte order).  Hostile input is safe: every decoded size is checked against
 * what the chain must produce before it is allocated or written, and a
 * checksum mismatch names both checksums.
 * @return SL_OK, SL_ECORRUPT (with the numbers), SL_ENOMEM.
 */
sl_status sl__chain_decode(const struct sl__chain *ch, const struct sl__chunk_layout *lay,
                           const uint8_t *src, size_t n, void *dst, sl_codec_ctx *ctx,
                           struct sl_error *err);

/* Bytes the encoding of an `n`-byte chunk can take at most, or 0 when the
 * chain has a codec without a bound. */
size_t sl__chain_encoded_bound(const struct sl__chain *ch, size_t n);

/* Exact encoded size when every codec keeps sizes fixed (bytes, transpose,
 * crc32c): true and the size, else false. */
bool sl__chain_fixed_size(const struct sl__chain *ch, size_t n, size_t *encoded);

/* Write a human-readable chain, e.g. "bytes(little) > zstd(level=1)". */
size_t sl__chain_describe(const struct sl__chain *ch, char *buf, size_t size);

/* Reverse the byte order of each `width`-byte word of `n` bytes in place. */
void sl__byteswap(void *data, size_t n, size_t width);

/* One iteration of sl__for_each, on the worker's codec context. */
typedef sl_status sl__each_fn(void *arg, size_t index, sl_codec_ctx *ctx, struct sl_error *err);

/*
 * Run fn(arg, i, ctx, err) for i in [0, n) on `par` (NULL: a plain loop),
 * each worker with its own codec context (worker 0 uses `ctx0` when not
 * NULL).  Stops early after a failure and reports the lowest failing
 * index's error.  @return SL_OK or that error's status.
 */
sl_status sl__for_each(const struct sl_parallel *par, size_t n, sl_codec_ctx *ctx0,
                       const struct sl_allocator *alloc, sl__each_fn *fn, void *arg,
                       struct sl_error *err);

#endif /* SL_IO_CODEC_H */
