/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the zarr sub-library, shared by its files and
 * open to its tests: metadata parsers and writers (v2 and v3), JSON
 * helpers, fill-value conversions, shard index decoding and rewriting.
 * The parsers take plain byte buffers so fuzz targets can call them.
 */
#ifndef SL_ZARR_INTERNAL_H
#define SL_ZARR_INTERNAL_H

#include "io_fill.h"
#include "io_zarr.h"

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

/* sl_zarr_read_node, and the key a group's attributes came from
 * (zarr.json or .zattrs) in `source` (when `attrs` is given). */
sl_status sl__zarr_read_node(sl_store *store, const char *path, sl_zarr_kind *kind,
                             int *zarr_format, struct sl_buf *attrs, char *source,
                             size_t source_size, struct sl_error *err);

/* A v2 group's .zattrs at `key`, checked to be an object, as compact JSON
 * text in `out` ("{}" when absent). */
sl_status sl__v2_group_attributes(sl_store *store, const char *key, struct sl_buf *out,
                                  struct sl_error *err);

/* sl_group_attributes, and the key the attributes came from (zarr.json
 * or .zattrs) in `source`, for messages. */
sl_status sl__group_attributes(sl_store *store, const char *path, struct sl_buf *out, char *source,
                               size_t source_size, struct sl_error *err);

/* Check a v3 group zarr.json; its attributes as compact text in `attrs`. */
sl_status sl__group_parse_v3(const char *text, size_t n, const char *source, struct sl_buf *attrs,
                             struct sl_error *err);

/* ---- nodes: paths, metadata documents, arrays (array.c; used by group.c) ---- */

/* Key of `name` under node `path` ("" is the root); SL_EINVAL when too long. */
sl_status sl__node_key(const char *path, const char *name, char *buf, size_t size,
                       struct sl_error *err);

/* SL_OK for "" (the root) or a valid store key; else SL_EINVAL or SL_EACCES. */
sl_status sl__node_path_check(const char *path, struct sl_error *err);

/* Read metadata document `key` into `out`; `*found` false when absent (no
 * error recorded).  A document over SL_META_MAX_BYTES is refused unread. */
sl_status sl__meta_get_optional(sl_store *s, const char *key, struct sl_buf *out, bool *found,
                                struct sl_error *err);

/* Make the array object at `path` around parsed metadata `meta` (taken over
 * on success: `meta` is left empty).  NULL with SL_ENOMEM or a grid error. */
sl_array *sl__array_from_meta(sl_store *store, const char *path, struct sl__meta *meta,
                              const struct sl_array_opts *opts, struct sl_error *err);

/* Write the key of stored object `coords` (chunk or shard grid coordinates)
 * relative to the array.  @return the length needed, as snprintf does. */
size_t sl__meta_chunk_key(const struct sl__meta *m, const uint64_t *coords, char *buf, size_t size);

/* Parse a key relative to the array back into object coordinates; false
 * when it is not one of this array's chunk keys. */
bool sl__meta_parse_chunk_key(const struct sl__meta *m, const char *key, uint64_t *coords);

/* Copy `buf` into the context's chunk scratch with the padding beyond the
 * array filled, when chunk `coords` is an edge chunk; else return `buf`. */
sl_status sl__chunk_padded(const sl_array *a, const uint64_t *coords, const void *buf,
                           sl_codec_ctx *ctx, const void **out, struct sl_error *err);

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

#endif /* SL_ZARR_INTERNAL_H */
