/* SPDX-License-Identifier: MIT */
/*
 * Reading and writing the data of an open Zarr array (<sluice/array.h>):
 * whole chunks, which chunks a shard stores, any region, and whole-array
 * checksums and stored-size counts.  The fill value stands wherever
 * nothing is stored; different chunks may be read and written from many
 * threads at once.
 */
#ifndef SL_ARRAY_IO_H
#define SL_ARRAY_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/array.h>
#include <sluice/codec.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/parallel.h>
#include <sluice/region.h>
#include <sluice/sha256.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- chunks ---------------------------------------------------------------- */

/**
 * Decode chunk `coords` (chunk grid coordinates; inner chunk when sharded)
 * into `buf`: sl_array_chunk_bytes() bytes, C order, native byte order, edge
 * chunks full size.  An absent chunk (or empty inner chunk) fills `buf`
 * with the fill value and sets `*missing` (the caller decides whether that
 * is an error).  Reads one shard index, then the inner chunk's bytes.
 * @param ctx      this thread's codec context, or NULL for a temporary one.
 * @param missing  may be NULL.
 * @return SL_OK; SL_EBOUNDS (coords outside the grid); SL_EINVAL
 * (`buf_bytes` too small); SL_ECORRUPT naming the key and what failed;
 * SL_EIO; SL_ENOMEM.
 * Thread-safety: any thread, concurrently with reads and writes of other
 * chunks.
 */
SL_API SL_NODISCARD sl_status sl_array_read_chunk(const sl_array *a, const uint64_t *coords,
                                                  void *buf, size_t buf_bytes, sl_codec_ctx *ctx,
                                                  bool *missing, struct sl_error *err);

/**
 * Hint that chunk `coords` will be read soon: a remote store starts
 * fetching it now, so that many requests are in flight while few threads
 * read (the executor hints each task's chunks as it emits the task).  The
 * read that follows takes the fetched bytes; a store that holds as many
 * hinted objects as its window allows ignores further hints until reads
 * take some.  Local stores, sharded arrays and coordinates outside the
 * grid: nothing happens.
 * Thread-safety: any thread.
 */
SL_API void sl_array_prefetch_chunk(const sl_array *a, const uint64_t *coords);

/**
 * Encode and store chunk `coords` from `buf` (as sl_array_read_chunk
 * writes it).  Padding outside the array is stored as the fill value.  A
 * chunk equal to the fill value is deleted instead of stored unless the
 * array was opened with `write_fill_chunks`.  A sharded array rewrites the
 * inner chunk's whole shard (read, replace, write once); writers of the
 * same shard are serialized.
 * @return SL_OK, SL_EBOUNDS, SL_EINVAL, SL_ECORRUPT (the existing shard),
 * SL_EACCES (read-only store), SL_ENOSPC, SL_EIO, SL_ENOMEM.
 * Thread-safety: any thread, concurrently with reads and writes of any chunk
 * (writers of one shard are serialized).
 */
SL_API SL_NODISCARD sl_status sl_array_write_chunk(sl_array *a, const uint64_t *coords,
                                                   const void *buf, size_t buf_bytes,
                                                   sl_codec_ctx *ctx, struct sl_error *err);

/**
 * Which chunks of stored object `shard` (coordinates in the grid of
 * sl_array_shard_grid: a shard when the array is sharded, else one chunk)
 * are stored, reading no chunk data: for an unsharded array whether the
 * chunk's key exists; for a sharded one, the shard's index alone (one read).
 * `exist` receives one entry per chunk of the object, in C order over the
 * shard's inner chunk grid (shard shape / chunk shape per dimension; one
 * entry when unsharded), chunks beyond the array's edge included.  Empty
 * inner chunks and absent shards count as not stored.  What a dry run uses
 * to find missing input chunks cheaply.
 * @param ctx  this thread's codec context, or NULL for a temporary one.
 * @return SL_OK; SL_EBOUNDS (`shard` outside the grid); SL_EINVAL (`exist`
 * NULL or `n_exist` too small, naming the count needed); SL_ECORRUPT (an
 * index that fails validation, naming the key); SL_EIO; SL_ENOMEM.
 * Thread-safety: any thread, as sl_array_read_chunk.
 */
SL_API SL_NODISCARD sl_status sl_array_shard_chunks_exist(const sl_array *a, const uint64_t *shard,
                                                          bool *exist, size_t n_exist,
                                                          sl_codec_ctx *ctx, struct sl_error *err);

/* ---- regions ----------------------------------------------------------------- */

/**
 * Read `region` (inside the array) into `buf` as a dense C-order array of
 * the region's shape, assembled from the chunks it meets; the fill value
 * where nothing is stored.  A sharded array reads each shard's index once
 * and only the inner chunks needed, coalescing nearby byte ranges.
 * @param ctx  used on the calling thread (worker 0); NULL: temporary.
 * @param par  runs chunks (shards) in parallel; NULL: a plain loop.
 * @return SL_OK, SL_EBOUNDS (region outside the array), SL_EINVAL
 * (`buf_bytes` too small), or the first failing chunk's error.
 * Thread-safety: any thread, as sl_array_read_chunk.
 */
SL_API SL_NODISCARD sl_status sl_array_read_region(const sl_array *a,
                                                   const struct sl_region *region, void *buf,
                                                   size_t buf_bytes, sl_codec_ctx *ctx,
                                                   const struct sl_parallel *par,
                                                   struct sl_error *err);

/**
 * Write `region` from `buf` (as sl_array_read_region reads it).  Chunks
 * the region covers only partly are read, merged and rewritten; each shard
 * touched is written once.  Not atomic across chunks: after a failure some
 * chunks may hold the new data.
 * @return SL_OK, SL_EBOUNDS, SL_EINVAL, SL_ECORRUPT, SL_EACCES, SL_ENOSPC,
 * SL_EIO or SL_ENOMEM: those of sl_array_read_region and
 * sl_array_write_chunk.
 * Thread-safety: any thread, as sl_array_write_chunk.
 */
SL_API SL_NODISCARD sl_status sl_array_write_region(sl_array *a, const struct sl_region *region,
                                                    const void *buf, size_t buf_bytes,
                                                    sl_codec_ctx *ctx,
                                                    const struct sl_parallel *par,
                                                    struct sl_error *err);

/* ---- whole arrays -------------------------------------------------------------- */

/**
 * SHA-256 of the array's decoded contents: every element in C order,
 * little-endian, each NaN replaced by the canonical quiet NaN (float16
 * 0x7e00, float32 0x7fc00000, float64 0x7ff8000000000000; complex parts
 * each), absent chunks as the fill value.  What `sluice checksum` prints.
 * Reads a slab of whole chunk rows at a time.
 * @return SL_OK or the first read error (SL_ECORRUPT, SL_EIO, SL_ENOMEM).
 * Thread-safety: any thread, concurrently with reads.
 */
SL_API SL_NODISCARD sl_status sl_array_checksum(const sl_array *a, uint8_t digest[SL_SHA256_BYTES],
                                                const struct sl_parallel *par,
                                                struct sl_error *err);

/* What is stored of an array. */
struct sl_array_stored {
    uint64_t n_objects; /* chunk (or shard) objects present */
    uint64_t n_bytes;   /* their total size */
};

/**
 * Count the chunk (or shard) objects stored and their bytes, by listing
 * the array's keys.  @return SL_OK or the store's error (SL_EACCES,
 * SL_EIO, SL_ENOMEM).
 * Thread-safety: any thread, concurrently with reads.
 */
SL_API SL_NODISCARD sl_status sl_array_stored(const sl_array *a, struct sl_array_stored *out,
                                              struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_ARRAY_IO_H */
