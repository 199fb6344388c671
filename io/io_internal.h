/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of io, shared by its files and open to its tests:
 * the store vtable and readers, key checks, the codec chain, metadata, shard
 * encoding and the array internals.  The parsers (metadata, shard index,
 * codec chain) take plain byte buffers so fuzz targets can call them.
 */
#ifndef SL_IO_INTERNAL_H
#define SL_IO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
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
#include <sluice/store.h>
#include <sluice/txn.h>

#include "core_internal.h"

/* ---- stores --------------------------------------------------------------- */

/*
 * An open object: reads of byte ranges of one version of it.  Sharded reads
 * open a reader, read the index and then inner chunks, so a concurrent
 * replacement of the shard cannot pair an old index with new bytes.
 */
struct sl__reader {
    sl_store *store; /* borrowed */
    const char *key; /* borrowed, for messages */
    uint64_t size;   /* object size in bytes */
    int fd;          /* filesystem store: the open file; else -1 */
    void *blob;      /* memory store: the referenced value; else NULL */
};

/* What each kind of store implements; the generic layer checks keys,
 * counts operations and names keys in errors. */
struct sl__store_vtable {
    const char *kind;
    bool sets_wait; /* a set waits for a device (fsync): worth a writer thread */
    sl_status (*reader_open)(sl_store *s, const char *key, struct sl__reader *rd,
                             struct sl_error *err);
    sl_status (*reader_read)(struct sl__reader *rd, uint64_t offset, size_t n, void *dst,
                             struct sl_error *err);
    void (*reader_close)(struct sl__reader *rd);
    sl_status (*set)(sl_store *s, const char *key, const void *data, size_t n, unsigned flags,
                     struct sl_error *err);
    sl_status (*del)(sl_store *s, const char *key, struct sl_error *err);
    sl_status (*list)(sl_store *s, const char *prefix, sl_store_list_fn *fn, void *arg,
                      struct sl_error *err);
    void (*destroy)(sl_store *s);
};

/* Flags of a set (struct sl__store_vtable.set, sl__store_set). */
enum {
    SL__SET_REREAD = 1u, /* read again soon: keep it in the cache (no direct write) */
};

/* sl_store_set with `flags`. */
sl_status sl__store_set(sl_store *s, const char *key, const void *data, size_t n, unsigned flags,
                        struct sl_error *err);

/* The part every store starts with. */
struct sl_store {
    const struct sl__store_vtable *vt;
    struct sl_allocator alloc; /* the store's own memory */
    _Atomic uint32_t refs;     /* references; the last unref destroys */
    _Atomic uint64_t n_get;    /* see struct sl_store_stats */
    _Atomic uint64_t n_set;
    _Atomic uint64_t n_delete;
    _Atomic uint64_t n_list;
    _Atomic uint64_t bytes_read;
    _Atomic uint64_t bytes_written;
};

/* Initialize the common part with one reference. */
void sl__store_init(sl_store *s, const struct sl__store_vtable *vt,
                    const struct sl_allocator *alloc);

/*
 * Check that `key` (`len` bytes, which must not include a NUL) may name an
 * object: see sl_store_set for the rules.  @return SL_OK or SL_EACCES
 * naming the key and the rule it breaks.
 */
sl_status sl__key_check(const char *key, size_t len, struct sl_error *err);

/* Check a listing prefix: like a key, but it may be empty, end in '/' or end
 * in a partial component. */
sl_status sl__key_prefix_check(const char *prefix, struct sl_error *err);

/* True for names the filesystem store uses for its temporary files. */
bool sl__key_is_temporary(const char *name);

/* Map a negated errno value to a status. */
sl_status sl__status_from_errno(int neg_errno);

/*
 * Open object `key` for range reads.  @return SL_OK, SL_ENOTFOUND,
 * SL_EACCES, SL_EIO or SL_ENOMEM.  Close with sl__reader_close.
 */
sl_status sl__reader_open(sl_store *s, const char *key, struct sl__reader *rd,
                          struct sl_error *err);

/* Read exactly `n` bytes at `offset` into `dst`.  @return SL_OK, SL_EBOUNDS
 * (past the end), SL_EIO. */
sl_status sl__reader_read(struct sl__reader *rd, uint64_t offset, size_t n, void *dst,
                          struct sl_error *err);

/* Read `range` into `out`, replacing its contents. */
sl_status sl__reader_read_range(struct sl__reader *rd, const struct sl_byte_range *range,
                                struct sl_buf *out, struct sl_error *err);

/* Close a reader; safe on a reader whose open failed. */
void sl__reader_close(struct sl__reader *rd);

/* Resolve `range` against an object of `size` bytes into [*offset, +*n).
 * @return SL_OK or SL_EBOUNDS naming `key`. */
sl_status sl__range_resolve(const struct sl_byte_range *range, uint64_t size, const char *key,
                            uint64_t *offset, uint64_t *n, struct sl_error *err);

/* ---- checksums ------------------------------------------------------------ */

/* CRC-32C (Castagnoli) of `n` bytes continuing from `crc` (0 to start), with
 * the usual pre- and post-inversion: crc32c("123456789") == 0xe3069283.
 * Uses the SSE4.2 instruction when the processor has it. */
uint32_t sl__crc32c(uint32_t crc, const void *data, size_t n);

/* The same, always in portable C (tests compare the two). */
uint32_t sl__crc32c_portable(uint32_t crc, const void *data, size_t n);

/* ---- codec contexts ---------------------------------------------------------- */

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

/* Opaque in codec.h: one thread's codec state and scratch. */
struct sl_codec_ctx {
    struct sl_allocator alloc;             /* for the context and its buffers */
    void *zstd_c;                          /* ZSTD_CCtx, made on first use */
    void *zstd_d;                          /* ZSTD_DCtx, made on first use */
    void *deflate_gzip;                    /* z_stream for gzip encoding, lazily */
    void *deflate_zlib;                    /* z_stream for zlib encoding, lazily */
    void *inflate;                         /* z_stream for both decodings, lazily */
    struct sl_buf scratch[SL__SCR_COUNT_]; /* reused buffers, by sl__scratch */
};

/* Scratch buffer `which` of `ctx`, emptied, with room for `n` bytes; its
 * data is never NULL, even for n == 0. */
sl_status sl__ctx_scratch(sl_codec_ctx *ctx, sl__scratch which, size_t n, struct sl_buf **out,
                          struct sl_error *err);

/* ---- codec chains -------------------------------------------------------------- */

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

/* True when this build has the codec (gzip and zlib need zlib, blosc needs
 * libblosc). */
bool sl__codec_built(sl__codec_id id);

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

/* Permute the dimensions of an array: dst has shape[k] = src_shape[perm[k]]. */
void sl__transpose(void *dst, const void *src, uint32_t rank, const uint64_t *src_shape,
                   const uint32_t *perm, size_t elem_bytes);

/* Reverse the byte order of each `width`-byte word of `n` bytes in place. */
void sl__byteswap(void *data, size_t n, size_t width);

/* One bytes-to-bytes codec step, encode and decode (codec_*.c). */
sl_status sl__zstd_encode(const struct sl__codec *c, sl_codec_ctx *ctx, const uint8_t *in, size_t n,
                          struct sl_buf *out, struct sl_error *err);
sl_status sl__zstd_decode(sl_codec_ctx *ctx, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
                          bool exact, size_t *produced, struct sl_error *err);
sl_status sl__gzip_encode(const struct sl__codec *c, sl_codec_ctx *ctx, const uint8_t *in, size_t n,
                          struct sl_buf *out, struct sl_error *err);
sl_status sl__gzip_decode(sl_codec_ctx *ctx, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
                          bool exact, size_t *produced, struct sl_error *err);
sl_status sl__blosc_encode(const struct sl__codec *c, const uint8_t *in, size_t n,
                           struct sl_buf *out, struct sl_error *err);
sl_status sl__blosc_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap, bool exact,
                           size_t *produced, struct sl_error *err);
size_t sl__gzip_bound(size_t n);
size_t sl__blosc_bound(size_t n);
bool sl__blosc_cname_known(const char *cname);
void sl__codec_ctx_free_zlib(sl_codec_ctx *ctx);

/* ---- fill values ---------------------------------------------------------------- */

typedef struct json_t json_t;

/* Parse fill value `v` of a `zarr_format` array of `dt` into native bytes;
 * `*is_null` reports a v2 null.  @return SL_OK or SL_EPARSE at `path`. */
sl_status sl__fill_parse(const json_t *v, sl_dtype dt, int zarr_format, uint8_t out[16],
                         bool *is_null, const char *path, struct sl_error *err);

/* The JSON of a fill value (a new reference in `*out`).  @return SL_OK,
 * SL_ENOMEM or SL_EUNSUPPORTED (a uint64 above 2^63-1). */
sl_status sl__fill_to_json(sl_dtype dt, const uint8_t fill[16], bool is_null, int zarr_format,
                           json_t **out, struct sl_error *err);

/* IEEE binary16 conversions, rounding to nearest even. */
uint16_t sl__f16_from_double(double d);
double sl__f16_to_double(uint16_t h);

/* True when `bits` of a `width`-byte float (2, 4, 8) are a NaN. */
bool sl__float_bits_is_nan(uint64_t bits, size_t width);

/* The canonical quiet NaN's bits: 0x7e00, 0x7fc00000, 0x7ff8000000000000. */
uint64_t sl__float_canonical_nan(size_t width);

/* ---- JSON helpers ------------------------------------------------------------------ */

/* The largest metadata document sluice reads; larger ones are refused
 * before they are read. */
#define SL_META_MAX_BYTES ((size_t)16 << 20)

/* Parse a JSON document (duplicate keys refused); syntax errors carry line,
 * column and byte position, and `source` names the document. */
sl_status sl__json_parse(const char *text, size_t n, const char *source, json_t **out,
                         struct sl_error *err);

/* An array of 1..`max` integers in [lo, SL_DIM_MAX] at `path`. */
sl_status sl__json_dims(const json_t *v, const char *path, uint64_t lo, uint64_t *out, uint32_t max,
                        uint32_t *n, struct sl_error *err);

/* An integer in [lo, hi] at `path`. */
sl_status sl__json_int(const json_t *v, const char *path, long long lo, long long hi, int *out,
                       struct sl_error *err);

/* Refuse keys of object `obj` (at `path`) not in the NULL-terminated `known`. */
sl_status sl__json_only_keys(const json_t *obj, const char *path, const char *const *known,
                             struct sl_error *err);

/* Serialize `v` into `out` (replacing its contents, NUL-terminated, the NUL
 * not counted in size). */
sl_status sl__json_dump(const json_t *v, size_t flags, struct sl_buf *out, struct sl_error *err);

/* ---- array metadata ------------------------------------------------------------------ */

/* How chunk coordinates become keys. */
typedef enum sl__key_encoding {
    SL__KEYS_DEFAULT, /* v3 "default": "c/1/2" */
    SL__KEYS_V2,      /* v3 "v2" and every v2 array: "1.2" */
} sl__key_encoding;

/* Largest extent of one dimension, and of one chunk's decoded bytes. */
#define SL_DIM_MAX ((uint64_t)1 << 62)

/* Metadata of one array, whichever format it came from.  Sharded arrays
 * keep the shard shape in `chunk`, the inner chunk shape in `inner`, and the
 * inner chunks' codecs in `chain`. */
struct sl__meta {
    int zarr_format;                 /* 2 or 3 */
    uint32_t rank;                   /* dimensions, <= SL_MAX_RANK */
    uint64_t shape[SL_MAX_RANK];     /* array shape */
    sl_dtype dtype;                  /* element type */
    uint64_t chunk[SL_MAX_RANK];     /* chunk grid: stored objects (shards when sharded) */
    sl__key_encoding keys;           /* chunk key encoding */
    char sep;                        /* '/' or '.' */
    _Alignas(16) uint8_t fill[16];   /* fill value, native byte order, aligned for any type */
    bool fill_null;                  /* v2 "fill_value": null (reads as zeros) */
    struct sl__chain chain;          /* codecs of a (inner) chunk */
    bool sharded;                    /* sharding_indexed */
    uint64_t inner[SL_MAX_RANK];     /* sharded: inner chunk shape */
    uint64_t per_shard[SL_MAX_RANK]; /* sharded: inner chunks per shard, per dimension */
    uint64_t n_per_shard;            /* sharded: inner chunks per shard */
    struct sl__chain index_chain;    /* sharded: codecs of the index */
    bool index_at_start;             /* sharded: index before the chunks */
    size_t index_bytes;              /* sharded: stored size of the index */
    char *dim_names[SL_MAX_RANK];    /* owned; NULL: unnamed */
    bool has_dim_names;              /* "dimension_names" present (v2: _ARRAY_DIMENSIONS) */
    char *attributes;                /* owned JSON object text, compact */
    struct sl_allocator alloc;       /* owns dim_names and attributes */
};

/* Zero `m` and set its allocator (NULL: default). */
void sl__meta_init(struct sl__meta *m, const struct sl_allocator *alloc);

/* Free what `m` owns; safe on a zeroed or initialized meta. */
void sl__meta_fini(struct sl__meta *m);

/*
 * Check that the metadata is consistent and inside sluice's caps: rank,
 * extents, chunk byte counts, inner chunks dividing shards, codec chains
 * valid for their chunks; fills the derived sharding fields.
 * @return SL_OK, SL_EPARSE, SL_EOVERFLOW or SL_EUNSUPPORTED.
 */
sl_status sl__meta_check(struct sl__meta *m, struct sl_error *err);

/* The most bytes one stored (inner) chunk of `m` can take: the chain's
 * worst-case encoding of a chunk.  0 when it has no bound. */
size_t sl__meta_chunk_max_bytes(const struct sl__meta *m);

/* The most bytes one stored object (a chunk, or a shard: its index and
 * every inner chunk at its worst case) can take, so a larger object is
 * corrupt and is refused before it is read.  0 when it has no bound. */
uint64_t sl__meta_object_max_bytes(const struct sl__meta *m);

/* The layout of one (inner) chunk; of one shard index. */
void sl__meta_chunk_layout(const struct sl__meta *m, struct sl__chunk_layout *lay);
void sl__meta_index_layout(const struct sl__meta *m, struct sl__chunk_layout *lay);

/*
 * Parse a v3 zarr.json of an array.  `source` names the document in errors.
 * @return SL_OK; SL_EPARSE (syntax with line and column, meaning with a JSON
 * pointer); SL_EUNSUPPORTED naming the codec, data type or field sluice
 * lacks; SL_EINVAL when the document is a group.
 */
sl_status sl__meta_parse_v3(const char *text, size_t n, const char *source, struct sl__meta *m,
                            struct sl_error *err);

/* Set `m`'s attributes to the compact text of JSON object `attrs`. */
sl_status sl__meta_set_attributes(struct sl__meta *m, const json_t *attrs, struct sl_error *err);

/* Write `m` as a v3 zarr.json into `out`. */
sl_status sl__meta_write_v3(const struct sl__meta *m, struct sl_buf *out, struct sl_error *err);

/*
 * Parse a v2 array from its .zarray and optional .zattrs texts (`zattrs`
 * NULL when absent).  @return as sl__meta_parse_v3.
 */
sl_status sl__meta_parse_v2(const char *zarray, size_t n, const char *zattrs, size_t n_attrs,
                            const char *source, struct sl__meta *m, struct sl_error *err);

/* Write `m` as a v2 .zarray and .zattrs (the latter empty when there is
 * nothing to say). */
sl_status sl__meta_write_v2(const struct sl__meta *m, struct sl_buf *zarray, struct sl_buf *zattrs,
                            struct sl_error *err);

/* Check a v3 group zarr.json; its attributes as compact text in `attrs`. */
sl_status sl__group_parse_v3(const char *text, size_t n, const char *source, struct sl_buf *attrs,
                             struct sl_error *err);

/* Write the key of stored object `coords` (chunk or shard grid coordinates)
 * relative to the array.  @return the length needed, as snprintf does. */
size_t sl__meta_chunk_key(const struct sl__meta *m, const uint64_t *coords, char *buf, size_t size);

/* Parse a key relative to the array back into object coordinates; false
 * when it is not one of this array's chunk keys. */
bool sl__meta_parse_chunk_key(const struct sl__meta *m, const char *key, uint64_t *coords);

/* ---- boxes, fill and errors ---------------------------------------------------- */

/* Copy box `shape` from `src` (a C-order array of `src_dims`) at `src_origin`
 * to `dst` (of `dst_dims`) at `dst_origin`; `es` bytes per element. */
void sl__box_copy(void *dst, const uint64_t *dst_dims, const uint64_t *dst_origin, const void *src,
                  const uint64_t *src_dims, const uint64_t *src_origin, const uint64_t *shape,
                  uint32_t rank, size_t es);

/* Fill box `shape` at `origin` of `dst` (of `dst_dims`) with `fill`. */
void sl__box_fill(void *dst, const uint64_t *dst_dims, const uint64_t *origin,
                  const uint64_t *shape, uint32_t rank, const uint8_t *fill, size_t es);

/* Fill everything of `buf` (of `dims`) outside [0, extent) with `fill`. */
void sl__fill_outside(void *buf, uint32_t rank, const uint64_t *dims, const uint64_t *extent,
                      const uint8_t *fill, size_t es);

/* Write `n` elements of `fill` at `dst`. */
void sl__fill_elements(void *dst, size_t n, const uint8_t *fill, size_t es);

/* True when every `es`-byte element of `n_bytes` at `buf` equals `fill`. */
bool sl__is_fill(const void *buf, size_t n_bytes, const uint8_t *fill, size_t es);

/* Copy `src` into `dst` unless `dst` already records an error. */
void sl__error_forward(struct sl_error *dst, const struct sl_error *src);

/* Name the key and chunk coordinates of a recorded error that lacks them. */
void sl__error_locate(struct sl_error *err, const char *key, uint32_t rank, const uint64_t *coords);

/* ---- parallel loops ------------------------------------------------------------ */

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

/* ---- arrays -------------------------------------------------------------------- */

/* Locks that serialize read-modify-write of one stored object (a chunk
 * rewritten in part, or a shard): object i uses stripe i % SL__STRIPES. */
#define SL__STRIPES 64

/* Opaque in array.h. */
struct sl_array {
    _Atomic uint32_t refs;                /* the last unref frees */
    sl_store *store;                      /* retained */
    char *prefix;                         /* owned: "" or "path/" */
    size_t prefix_len;                    /* strlen(prefix) */
    char *path;                           /* owned: the path opened ("" for the root) */
    struct sl__meta meta;                 /* immutable after open */
    struct sl_allocator alloc;            /* the array's own memory */
    bool write_fill_chunks;               /* store chunks equal to the fill value */
    struct sl_grid chunk_grid;            /* chunks read and written (inner if sharded) */
    struct sl_grid object_grid;           /* stored objects (shards if sharded) */
    struct sl__chunk_layout layout;       /* one (inner) chunk */
    size_t elem_bytes;                    /* bytes per element */
    pthread_mutex_t stripes[SL__STRIPES]; /* see SL__STRIPES */
};

/* The key of stored object `coords` (object grid), prefix included. */
size_t sl__array_object_key(const sl_array *a, const uint64_t *coords, char *buf, size_t size);

/* The stripe lock of stored object `coords`. */
pthread_mutex_t *sl__array_stripe(const sl_array *a, const uint64_t *coords);

/* Check chunk coordinates against the chunk grid (SL_EBOUNDS). */
sl_status sl__array_check_coords(const sl_array *a, const uint64_t *coords, struct sl_error *err);

/*
 * Decode chunk `coords` of an unsharded array into `buf` (a whole chunk);
 * when it is absent, set `*missing` and leave `buf` untouched.
 */
sl_status sl__chunk_fetch(const sl_array *a, const uint64_t *coords, void *buf, sl_codec_ctx *ctx,
                          bool *missing, struct sl_error *err);

/* Store chunk `coords` of an unsharded array from `buf` (padding already
 * filled): encoded, or deleted when it is all fill and fill chunks are not
 * written. */
sl_status sl__chunk_store(const sl_array *a, const uint64_t *coords, const void *buf,
                          sl_codec_ctx *ctx, struct sl_error *err);

/* Copy `buf` into the context's chunk scratch with the padding beyond the
 * array filled, when chunk `coords` is an edge chunk; else return `buf`. */
sl_status sl__chunk_padded(const sl_array *a, const uint64_t *coords, const void *buf,
                           sl_codec_ctx *ctx, const void **out, struct sl_error *err);

/* ---- shards -------------------------------------------------------------------- */

/* An index entry's offset and nbytes when the inner chunk is empty. */
#define SL__SHARD_EMPTY UINT64_MAX

/*
 * Check index entry k (offset, nbytes) against a shard of `shard_bytes`:
 * both SL__SHARD_EMPTY is an empty chunk; anything else must lie inside
 * the shard, tested without overflow.  @return SL_OK or SL_ECORRUPT naming
 * the entry, its range and the shard size.
 */
sl_status sl__shard_entry_check(uint64_t k, uint64_t offset, uint64_t nbytes, uint64_t shard_bytes,
                                struct sl_error *err);

/* Where the index of a shard of `shard_bytes` lies; SL_ECORRUPT when the
 * shard is smaller than its index. */
sl_status sl__shard_index_range(const struct sl__meta *m, uint64_t shard_bytes, uint64_t *offset,
                                struct sl_error *err);

/*
 * Decode `n` stored index bytes of a shard of `shard_bytes` into `entries`
 * (2 * m->n_per_shard native uint64: offset, nbytes per inner chunk in C
 * order), verifying the index codecs (crc32c) and every entry's bounds.
 * @return SL_OK or SL_ECORRUPT.
 */
sl_status sl__shard_index_decode(const struct sl__meta *m, const uint8_t *bytes, size_t n,
                                 uint64_t shard_bytes, uint64_t *entries, sl_codec_ctx *ctx,
                                 struct sl_error *err);

/* Read and decode the index of the shard open in `rd` into the context's
 * SL__SCR_INDEX; `*entries` points there. */
sl_status sl__shard_index_read(struct sl__reader *rd, const struct sl__meta *m, sl_codec_ctx *ctx,
                               const uint64_t **entries, struct sl_error *err);

/* Called once per inner chunk read: its index `k` in the shard and its
 * stored bytes. */
typedef sl_status sl__shard_chunk_fn(void *arg, uint64_t k, const uint8_t *bytes, size_t n,
                                     struct sl_error *err);

/*
 * Read inner chunks `which[0..n_which)` (empty ones skipped) of the shard
 * open in `rd` whose decoded index is `entries`, coalescing byte ranges
 * less than 64 KiB apart into single reads of at most 16 MiB, and call `fn`
 * for each in the order of their offsets.  Uses SL__SCR_IO and SL__SCR_PLAN.
 */
sl_status sl__shard_read_entries(struct sl__reader *rd, const uint64_t *entries,
                                 const uint64_t *which, size_t n_which, sl_codec_ctx *ctx,
                                 sl__shard_chunk_fn *fn, void *arg, struct sl_error *err);

/*
 * Assembling a shard: init, add inner chunks (any order), finish.  The
 * shard's bytes go to `out`; entries to `entries` (2 * n_per_shard).
 */
struct sl__shard_builder {
    const struct sl__meta *m; /* the array */
    struct sl_buf *out;       /* the shard being built */
    uint64_t *entries;        /* offset, nbytes per inner chunk */
    uint64_t n_chunks;        /* inner chunks added */
};

sl_status sl__shard_builder_init(struct sl__shard_builder *b, const struct sl__meta *m,
                                 struct sl_buf *out, uint64_t *entries, struct sl_error *err);
sl_status sl__shard_builder_add(struct sl__shard_builder *b, uint64_t k, const uint8_t *bytes,
                                size_t n, struct sl_error *err);
/* Encode and place the index.  `*empty` is true when no chunk was added
 * (the shard should be deleted rather than written). */
sl_status sl__shard_builder_finish(struct sl__shard_builder *b, sl_codec_ctx *ctx, bool *empty,
                                   struct sl_error *err);

/* Inner chunk coordinates (chunk grid) of inner chunk k of shard `shard`. */
void sl__shard_inner_coords(const struct sl__meta *m, const uint64_t *shard, uint64_t k,
                            uint64_t *inner);

/* Shard coordinates and index k within it of inner chunk `inner`. */
void sl__shard_of_inner(const struct sl__meta *m, const uint64_t *inner, uint64_t *shard,
                        uint64_t *k);

/*
 * Rewrite one shard: for each inner chunk, `fn` decides to keep it, drop it
 * or replace it.  The previous shard is read only when `need_old`.  Writes
 * the shard once (or deletes it when nothing is left).  The caller holds
 * the shard's stripe lock.
 */
typedef enum sl__inner_action {
    SL__INNER_KEEP,    /* keep the stored bytes (none if it was empty) */
    SL__INNER_EMPTY,   /* make it empty */
    SL__INNER_REPLACE, /* encode the chunk `fn` wrote into its buffer */
} sl__inner_action;

/* Decide inner chunk k (at chunk-grid `inner`): return the action; for
 * SL__INNER_REPLACE fill `chunk` (a whole chunk).  `old` is the previously
 * stored encoding (NULL when absent or not read) for merges. */
typedef sl_status sl__inner_fn(void *arg, uint64_t k, const uint64_t *inner, const uint8_t *old,
                               size_t old_n, void *chunk, sl_codec_ctx *ctx,
                               sl__inner_action *action, struct sl_error *err);

sl_status sl__shard_rewrite(const sl_array *a, const uint64_t *shard, bool need_old,
                            sl__inner_fn *fn, void *arg, sl_codec_ctx *ctx, struct sl_error *err);

/* Decode inner chunk `inner` (chunk grid) of a sharded array into `buf`;
 * `*missing` when its shard or entry is absent (`buf` untouched). */
sl_status sl__inner_fetch(const sl_array *a, const uint64_t *inner, void *buf, sl_codec_ctx *ctx,
                          bool *missing, struct sl_error *err);

/* ---- transactions (txn*.c) ------------------------------------------------------ */

/* The previous version of a shard, read whole for a merge (shard.c). */
struct sl__shard_old {
    const uint8_t *bytes;    /* the shard, in the context's SL__SCR_OLD; NULL when absent */
    const uint64_t *entries; /* its decoded index, in SL__SCR_INDEX; NULL when absent */
};

/* Read shard `key` of `a` whole and decode its index; an absent shard
 * leaves both pointers NULL.  @return SL_OK, SL_ECORRUPT or a store error. */
sl_status sl__shard_read_old(const sl_array *a, const char *key, sl_codec_ctx *ctx,
                             struct sl__shard_old *old, struct sl_error *err);

/*
 * Remove the temporary files (".sluice-tmp.<pid>.<n>") that writers which
 * no longer run left in the directories under `prefix` of a filesystem
 * store; files of this process and of live processes are kept.  Other
 * stores have none.  `*n_removed` counts what was removed.
 * @return SL_OK, SL_EACCES (refused prefix), SL_EIO or SL_ENOMEM.
 */
sl_status sl__store_sweep(sl_store *s, const char *prefix, uint64_t *n_removed,
                          struct sl_error *err);

/* Stripes of a transaction's staging table: units hash to index % stripes. */
#define SL__TXN_STRIPES 16

/*
 * One staged chunk: a whole decoded chunk (C order, native byte order,
 * padding beyond the array filled).  Complete when every element inside
 * the array was written; partial otherwise, with a bit per element written.
 * A complete chunk staged with encode_on_write is kept as its encoding
 * only: `data` is NULL ("bare") and `encoded` is set.  Records are pooled
 * by their transaction and reused with their buffers, bare ones apart.
 */
struct sl__txn_chunk {
    struct sl__txn_chunk *next; /* the pool's free list */
    uint8_t *data;              /* layout.n_bytes, 64-byte aligned; NULL when bare */
    uint64_t *mask;             /* one bit per element; allocated on first partial use */
    bool partial;               /* `mask` says which elements were written */
    uint64_t n_written;         /* partial: elements inside the array written */
    uint64_t counted;           /* bytes it counts in staged_bytes */
    struct sl_buf enc;          /* the encoding, when `encoded` (and not `view`) */
    const uint8_t *view;        /* or: the encoding in its unit's assembled bytes */
    size_t view_n;              /* its length */
    bool encoded;               /* `enc` or `view` holds it (or `empty`) */
    bool empty;                 /* encoded: all fill, not stored */
};

/* The encoding of an encoded, non-empty chunk record. */
static inline struct sl__view
sl__txn_chunk_encoding(const struct sl__txn_chunk *c)
{
    return c->view != NULL ? (struct sl__view){c->view, c->view_n}
                           : (struct sl__view){c->enc.data, c->enc.size};
}

/* How far a unit has gone. */
typedef enum sl__txn_unit_state {
    SL__TXN_STAGING,  /* accepting writes */
    SL__TXN_FLUSHING, /* being written; writers of it wait, readers still see it */
} sl__txn_unit_state;

/* One unit of writing: a shard, or a chunk of an unsharded array. */
struct sl__txn_unit {
    uint64_t index;                   /* C-order index in the object grid */
    uint64_t coords[SL_MAX_RANK];     /* object grid coordinates */
    sl__txn_unit_state state;         /* guarded by its stripe's lock */
    uint64_t n_inside;                /* its chunks inside the array */
    uint64_t n_complete;              /* of those, staged complete */
    struct sl__txn_chunk **slots;     /* n_per_unit entries; NULL where nothing is staged */
    bool written;                     /* flush: its write was attempted */
    struct sl__txn_unit *behind_next; /* the writer thread's queue */
    uint64_t behind_bytes;            /* its encodings, counted as staged while handed over */
    bool assembled;                   /* `bytes` holds the shard, built before the hand-over */
    bool assembled_empty;             /* ... which has no chunk left: delete it */
    struct sl_buf bytes;              /* that shard (the unit's allocator) */
    sl_status status;                 /* flush: the outcome */
    struct sl_error err;              /* flush: what failed */
};

/* A lock, its wait queue and the units hashing to it. */
struct sl__txn_stripe {
    _Alignas(SL_CACHELINE) pthread_mutex_t mu; /* guards everything below and the units' staging */
    pthread_cond_t done;                       /* broadcast when a unit leaves the table */
    struct sl__txn_unit **table;               /* open addressing by unit index; NULL slots free */
    size_t cap;                                /* slots in table, a power of two (or 0) */
    size_t n;                                  /* units in table */
};

/* Where a transaction is in its life. */
typedef enum sl__txn_phase {
    SL__TXN_OPEN,       /* writes accepted */
    SL__TXN_COMMITTING, /* commit running */
    SL__TXN_COMMITTED,  /* commit returned */
    SL__TXN_ABORTED,    /* abort returned */
} sl__txn_phase;

/* Opaque in txn.h. */
struct sl_txn {
    sl_array *a;                        /* retained */
    struct sl_txn_opts opts;            /* copied; `par` borrowed */
    struct sl_allocator alloc;          /* the array's allocator */
    uint64_t n_per_unit;                /* chunks per unit (1 unsharded) */
    size_t mask_bytes;                  /* one chunk's mask */
    _Atomic int phase;                  /* sl__txn_phase */
    _Atomic uint32_t n_writers;         /* writes in progress */
    _Atomic uint64_t staged_bytes;      /* chunk data and masks staged */
    _Atomic uint64_t peak_staged_bytes; /* most staged at once */
    _Atomic uint64_t n_chunks_staged;   /* see struct sl_txn_stats */
    _Atomic uint64_t n_units_staged;    /* units in the table or handed over */
    _Atomic uint64_t n_units_written;
    _Atomic uint64_t n_units_failed;
    _Atomic uint64_t n_units_early;
    pthread_mutex_t pool_mu;                        /* guards `pool` and `pool_bare` */
    struct sl__txn_chunk *pool;                     /* free chunk records with a buffer */
    struct sl__txn_chunk *pool_bare;                /* free records without */
    pthread_mutex_t err_mu;                         /* guards `first_err` */
    struct sl_error first_err;                      /* the first unit that failed */
    struct sl__txn_stripe stripes[SL__TXN_STRIPES]; /* the staging table */
    /* The writer thread of opts.write_behind (txn_behind.c). */
    pthread_mutex_t behind_mu;        /* guards the fields below */
    pthread_cond_t behind_cv;         /* broadcast when any of them changes */
    struct sl__txn_unit *behind_head; /* units to write, oldest first */
    struct sl__txn_unit *behind_tail;
    unsigned behind_n;   /* units queued or being written */
    bool behind_running; /* the thread was started */
    bool behind_failed;  /* it could not be: write in place */
    bool behind_stop;    /* close: exit once the queue is empty */
    pthread_t behind_thread;
};

/* Bytes of the encodings unit `u`'s chunks hold (chunks not encoded and
 * fill chunks count 0). */
uint64_t sl__txn_encoded_bytes(const sl_txn *t, const struct sl__txn_unit *u);

/* Assemble complete shard `u`, whose chunks are encoded, into u->bytes
 * with `ctx` (the unit is flushing: no writer changes it); the writer
 * thread then only writes it.  Its chunks then refer to their encodings
 * in u->bytes and give up their own buffers, and u->behind_bytes (counted
 * in staged bytes, in place of what it counted) becomes the shard's
 * size.  False (nothing kept) when `u` is not a complete shard, `ctx` is
 * NULL, or assembling failed (the writer retries and reports). */
bool sl__txn_assemble_early(sl_txn *t, struct sl__txn_unit *u, sl_codec_ctx *ctx);

/* Count `n` bytes more staged (keeping the peak), or fewer (negated). */
void sl__txn_staged_add(sl_txn *t, uint64_t n);

/* The stripe of unit `index`. */
struct sl__txn_stripe *sl__txn_stripe_of(sl_txn *t, uint64_t index);

/* The unit at `index` in its (locked) stripe, or NULL. */
struct sl__txn_unit *sl__txn_table_find(const struct sl__txn_stripe *s, uint64_t index);

/* Remove unit `index` from its (locked) stripe, if there. */
void sl__txn_table_remove(struct sl__txn_stripe *s, uint64_t index);

/* Unit coordinates, its C-order index and chunk `coords`' slot in it. */
void sl__txn_unit_of(const sl_txn *t, const uint64_t *coords, uint64_t *unit, uint64_t *index,
                     uint64_t *k);

/* Stage the whole chunk `coords` from `buf` (with encode_on_write and a
 * `ctx`, as its encoding); `*flush` receives the unit when this completed
 * it and it is to be written now (marked flushing). */
sl_status sl__txn_stage_chunk(sl_txn *t, const uint64_t *coords, const void *buf, sl_codec_ctx *ctx,
                              struct sl__txn_unit **flush, struct sl_error *err);

/* Stage the part `box` (array coordinates) of chunk `coords` from the
 * dense `src` of shape `src_dims` at `src_origin` in array coordinates:
 * whole when `box` is all of the chunk inside the array, else partial (a
 * bare chunk staged there is decoded first, with `ctx` or a temporary
 * context). */
sl_status sl__txn_stage_part(sl_txn *t, const uint64_t *coords, const struct sl_region *box,
                             const void *src, const uint64_t *src_dims, const uint64_t *src_origin,
                             sl_codec_ctx *ctx, struct sl__txn_unit **flush, struct sl_error *err);

/* Return chunk records to the pool, uncounting what they staged. */
void sl__txn_chunk_release(sl_txn *t, struct sl__txn_chunk *c);

/* Make complete chunk `c` of a unit just assembled early refer to its
 * encoding in the unit's assembled bytes (`at`, `n` bytes; NULL: fill)
 * and give up its own buffers, which count no more (stripe locked:
 * readers may be reading it). */
void sl__txn_chunk_into_shard(sl_txn *t, struct sl__txn_chunk *c, const uint8_t *at, size_t n);

/* Copy the elements of `c` its mask marks (all when complete) into the
 * whole chunk `dst`; a bare chunk is decoded there with `ctx`.
 * @return SL_OK, or the decoding's error (SL_ENOMEM, SL_ECORRUPT). */
sl_status sl__txn_chunk_overlay(const sl_txn *t, const struct sl__txn_chunk *c, void *dst,
                                sl_codec_ctx *ctx, struct sl_error *err);

/* Copy box `box` (array coordinates, inside chunk `chunk_region`) of
 * staged chunk `c` into the dense `dst` of `dst_dims` at `dst_origin`
 * (array coordinates), only the written elements of a partial chunk; a
 * bare chunk is decoded first into `ctx`'s SL__SCR_CHUNK.
 * @return as sl__txn_chunk_overlay. */
sl_status sl__txn_chunk_copy_box(const sl_txn *t, const struct sl__txn_chunk *c,
                                 const struct sl_region *chunk_region, const struct sl_region *box,
                                 void *dst, const uint64_t *dst_dims, const uint64_t *dst_origin,
                                 sl_codec_ctx *ctx, struct sl_error *err);

/* Encode the whole chunk `data` into `c`'s own `enc`, sized to fit (or
 * mark it `empty`), with `ctx`: encode_on_write's staging.
 * @return SL_OK, or the encoding's error. */
sl_status sl__txn_chunk_encode_keep(const sl_txn *t, struct sl__txn_chunk *c, const uint8_t *data,
                                    sl_codec_ctx *ctx, struct sl_error *err);

/*
 * Write units[0..n) (each flushing): encode their complete chunks on
 * opts.par, then assemble and write each unit once under its stripe lock,
 * leave the table, report and release it.  `ctx` is the calling thread's
 * context (NULL: a temporary one).  `early`: a flush before commit.
 */
void sl__txn_flush(sl_txn *t, struct sl__txn_unit **units, size_t n, sl_codec_ctx *ctx, bool early);

/* The first half of sl__txn_flush: encode the complete chunks of
 * units[0..n) not yet encoded, on opts.par; without a pool (or with one
 * chunk) on this thread with `here`, or (`here` NULL) not at all. */
void sl__txn_encode_units(sl_txn *t, struct sl__txn_unit **units, size_t n, sl_codec_ctx *here);

/* The second half: write units[0..n), then report and free them. */
void sl__txn_write_units(sl_txn *t, struct sl__txn_unit **units, size_t n, sl_codec_ctx *ctx,
                         bool early);

/* Hand flushing unit `u` (encoded) to the writer thread, starting it if
 * needed and waiting while it holds opts.write_behind units.  false: it is
 * not taken (the option is off, or the thread cannot start); write it. */
bool sl__txn_behind_take(sl_txn *t, struct sl__txn_unit *u);

/* Wait until the writer thread holds no unit; true if it held any. */
bool sl__txn_behind_drain(sl_txn *t);

/* Drain, then stop and join the writer thread (close). */
void sl__txn_behind_stop(sl_txn *t);

/* Record a unit's outcome, report it to opts.on_unit, release its chunks
 * and free it. */
void sl__txn_unit_finish(sl_txn *t, struct sl__txn_unit *u, bool early);
/* ---- batched reads --------------------------------------------------------------- */

/*
 * The plan of a batched read: which chunks the selections need, and which
 * selections each chunk serves.  It depends only on the chunk grid, the
 * shard shape and the selections, not on stored data, so the graph's
 * select-over-get plans with it too.
 */

/* One chunk the selections need, read once. */
struct sl__batch_chunk {
    uint64_t chunk;  /* C-order linear index in the chunk grid */
    uint64_t object; /* C-order linear index of its stored object (its shard, or itself) */
    uint64_t k;      /* its index in the shard (C order); 0 when unsharded */
    size_t first;    /* its selections: plan->sels[first .. first + n_sels), ascending */
    size_t n_sels;   /* >= 1 */
};

/* One stored object (shard, or chunk when unsharded) the selections meet. */
struct sl__batch_object {
    uint64_t object; /* C-order linear index in the object grid */
    size_t first;    /* its chunks: plan->chunks[first .. first + n_chunks), by k */
    size_t n_chunks; /* >= 1 */
};

struct sl__batch_plan {
    struct sl__batch_chunk *chunks;   /* by (object, k): a shard's chunks are adjacent */
    size_t n_chunks;                  /* distinct chunks met */
    size_t *sels;                     /* selection indices, grouped by chunk */
    size_t n_sels;                    /* (chunk, selection) pairs */
    struct sl__batch_object *objects; /* by object */
    size_t n_objects;                 /* distinct objects met */
    struct sl_allocator alloc;        /* owns the three arrays */
};

/*
 * Check selection `i` against an array of `rank` and `shape`.
 * @return SL_OK; SL_EINVAL (another rank, a start after its stop) or
 * SL_EBOUNDS (outside the array), the message naming the selection, its
 * region, the dimension and the array's shape.
 */
sl_status sl__batch_check_selection(size_t i, const struct sl_region *r, uint32_t rank,
                                    const uint64_t *shape, struct sl_error *err);

/*
 * Plan selections `regions[0..n)` over chunk grid `chunks`, whose chunks
 * are grouped into shards of `per_shard[d]` chunks per dimension (NULL:
 * unsharded, each chunk its own object).  Selections with `skip[i]` !=
 * SL_OK are left out (`skip` may be NULL); the others must lie inside the
 * grid.  Memory: 32 bytes per (chunk, selection) pair while planning, then
 * 40 per chunk, 24 per object and 8 per pair.
 * @return SL_OK, SL_ENOMEM or SL_EOVERFLOW; on failure nothing needs
 * releasing.
 */
sl_status sl__batch_plan_build(struct sl__batch_plan *p, const struct sl_grid *chunks,
                               const uint64_t *per_shard, size_t n, const struct sl_region *regions,
                               const sl_status *skip, const struct sl_allocator *alloc,
                               struct sl_error *err);

/* Release a plan; safe on a zeroed one. */
void sl__batch_plan_fini(struct sl__batch_plan *p);

/*
 * Where the selections' elements go: each selection into its own dense
 * C-order buffer of its shape (`bufs`), or all of them into one buffer of
 * `dims`, concatenated along `axis`, selection i's slab starting at
 * `offsets[i]` along it.
 */
struct sl__batch_out {
    void *const *bufs;          /* one buffer per selection, or NULL: concatenated */
    uint8_t *buf;               /* concatenated: the buffer */
    uint32_t axis;              /* concatenated: along this dimension */
    const uint64_t *offsets;    /* concatenated: each selection's start along `axis` */
    uint64_t dims[SL_MAX_RANK]; /* concatenated: the buffer's shape */
};

/* How a chunk's decoded elements reach the selections of a plan. */
struct sl__batch_geom {
    const struct sl_grid *grid;      /* the chunk grid */
    const uint64_t *chunk_shape;     /* full chunk shape (decoded buffers), rank entries */
    size_t elem_bytes;               /* bytes per element */
    const uint8_t *fill;             /* the fill value, one element */
    const struct sl_region *regions; /* the selections */
    struct sl__batch_out out;        /* their outputs */
};

/*
 * Where chunk `c` of `p` can be decoded straight into an output: a
 * selection containing the chunk's whole region (not an edge chunk) whose
 * output holds the chunk's elements contiguously in the chunk's own C
 * order (every dimension after the first one of extent > 1 spans the
 * output's full width).  @return the address, with the selection in
 * `*sel`, or NULL when every piece needs a copy.
 */
uint8_t *sl__batch_direct(const struct sl__batch_plan *p, size_t c, const struct sl__batch_geom *g,
                          size_t *sel);

/*
 * Copy chunk `c`'s decoded elements into every selection it serves: from
 * `data`, a whole chunk buffer, or, when `in_sel` != SIZE_MAX, from
 * selection `in_sel`'s output, where sl__batch_direct placed the decoding
 * (that selection is then already served).
 */
void sl__batch_scatter(const struct sl__batch_plan *p, size_t c, const struct sl__batch_geom *g,
                       const uint8_t *data, size_t in_sel);

/* Write the fill value into every piece of chunk `c` (an absent chunk). */
void sl__batch_fill(const struct sl__batch_plan *p, size_t c, const struct sl__batch_geom *g);

/* One batched read in progress (batch_read.c runs it; batch_shard.c reads
 * the shards of sharded arrays). */
struct sl__batch_run {
    const sl_array *a;                /* the array read */
    struct sl__batch_plan plan;       /* chunks and the selections they serve */
    struct sl__batch_geom geom;       /* where decoded chunks go */
    uint64_t gap_bytes;               /* options, resolved */
    uint64_t max_bytes;               /* ... */
    const struct sl_parallel *par;    /* the caller's; NULL: a plain loop */
    size_t n;                         /* selections */
    sl_status *status;                /* n: each selection's outcome */
    size_t *failed_at;                /* n: plan index of the chunk that failed it */
    struct sl_error *errors;          /* the caller's n records, or NULL */
    struct sl_error first;            /* the error of the lowest-numbered failed selection */
    size_t first_sel;                 /* that selection; SIZE_MAX while none */
    pthread_mutex_t lock;             /* guards the five fields above while chunks run */
    uint8_t *done;                    /* per chunk: delivered or failed */
    sl_codec_ctx **ctxs;              /* per worker, made on first use */
    sl_codec_ctx *ctx0;               /* the caller's context for worker 0, or NULL */
    sl_codec_ctx *const *worker_ctxs; /* the caller's per-worker contexts, or NULL */
    unsigned n_workers;               /* entries of ctxs */
    _Atomic uint64_t n_decoded;       /* see struct sl_batch_stats */
    _Atomic uint64_t n_direct;        /* ... */
    _Atomic uint64_t n_missing;       /* ... */
    _Atomic uint64_t n_index_reads;   /* ... */
    _Atomic uint64_t n_requests;      /* ... */
    _Atomic uint64_t bytes_requested;
};

/* One iteration of a batch loop: item `i`, on this worker's codec context
 * (NULL when none could be made: the item fails with SL_ENOMEM). */
typedef void sl__batch_item_fn(struct sl__batch_run *run, void *arg, size_t i, sl_codec_ctx *ctx);

/* Run fn for items [0, n) on the run's executor, every worker with its
 * own codec context kept for the whole run.  Items record their own
 * failures.  @return SL_OK, or SL_ECANCELED when the executor stopped. */
sl_status sl__batch_loop(struct sl__batch_run *run, size_t n, sl__batch_item_fn *fn, void *arg);

/* Record that chunk `c` failed with `e`: every selection it serves fails,
 * unless a chunk earlier in the plan already failed it.  Any thread. */
void sl__batch_fail_chunk(struct sl__batch_run *run, size_t c, const struct sl_error *e);

/* Where to decode chunk `c`: straight into an output (`*in_sel` names the
 * selection), or the context's chunk scratch (`*in_sel` = SIZE_MAX). */
sl_status sl__batch_target(struct sl__batch_run *run, size_t c, sl_codec_ctx *ctx, uint8_t **target,
                           size_t *in_sel, struct sl_error *err);

/* Finish chunk `c`: fail it (`st` != SL_OK, with `e`), fill its pieces
 * (`missing`), or copy the decoding at `target` to its other selections. */
void sl__batch_finish(struct sl__batch_run *run, size_t c, sl_status st, bool missing,
                      const uint8_t *target, size_t in_sel, const struct sl_error *e);

/* Read every chunk of the plan of a sharded array: shards in waves, each
 * index read once, byte ranges coalesced, chunks decoded in parallel.
 * @return SL_OK (failures are recorded per chunk), or the executor's
 * SL_ECANCELED / SL_ENOMEM for the wave state, when chunks are left. */
sl_status sl__batch_read_shards(struct sl__batch_run *run, struct sl_error *err);

#endif /* SL_IO_INTERNAL_H */
