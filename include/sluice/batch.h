/* SPDX-License-Identifier: MIT */
/*
 * Batched reads: many selections (regions) of one array read as one planned
 * operation, as zarr users batch disjoint slice requests to get "pipeline
 * level" parallelism.  Every chunk the selections meet is read and decoded
 * once, even when several selections share it; every shard index is read
 * once; nearby inner-chunk byte ranges of a shard are read in one request;
 * decoding runs through the caller's "parallel for" with one codec context
 * per worker; and a chunk that lies wholly inside a selection whose output
 * lays it out exactly as the chunk does is decoded straight into the output.
 *
 * Each selection gets its own status: a selection outside the array, a
 * buffer too small or a chunk that fails to decode fails only the
 * selections concerned, and the others are read.
 */
#ifndef SL_BATCH_H
#define SL_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sluice/array.h>
#include <sluice/codec.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/parallel.h>
#include <sluice/region.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What one batched read did (counts over the whole call). */
struct sl_batch_stats {
    uint64_t n_selections_failed; /* selections whose status is not SL_OK */
    uint64_t n_chunks;            /* distinct (inner) chunks the valid selections meet */
    uint64_t n_parts;             /* (chunk, selection) pairs: chunk pieces delivered */
    uint64_t n_decoded;           /* chunks decoded (each at most once) */
    uint64_t n_direct;            /* ... of which straight into an output buffer */
    uint64_t n_missing;           /* chunks absent (or empty in their shard): fill value */
    uint64_t n_objects;           /* stored objects met: chunks, or shards when sharded */
    uint64_t n_index_reads;       /* shard indexes read (each shard at most once) */
    uint64_t n_requests;          /* byte-range reads of inner chunks (after coalescing) */
    uint64_t bytes_requested;     /* bytes those requests read, gaps included */
};

/* Options of a batched read. */
struct sl_batch_opts {
    const struct sl_parallel *par;    /* runs chunk work in parallel; NULL: a plain loop */
    sl_codec_ctx *ctx;                /* worker 0's codec context; NULL: one made for the call */
    sl_codec_ctx *const *worker_ctxs; /* NULL, or one context per worker of `par`
                                         (sl_parallel_workers entries), kept by the caller
                                         across calls; NULL entries (and `ctx`) fill in */
    uint64_t coalesce_gap_bytes;      /* sharded: inner chunks of one shard are read in one
                                         request when at most this many unneeded bytes lie
                                         between them (default 1 MiB, as zarr-python) */
    uint64_t coalesce_max_bytes;      /* ... as long as the request stays within this many
                                         bytes (default 16 MiB, as zarr-python); a larger
                                         inner chunk is read alone.  With several workers,
                                         requests are also cut near 1/(2 x workers) of
                                         the bytes wanted (not below 1 MiB) */
    struct sl_batch_stats *stats;     /* optional output: filled when not NULL */
};
/**
 * SL_BATCH_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_batch_opts
sl_batch_opts_default(void)
{
    struct sl_batch_opts o;
    memset(&o, 0, sizeof o);
    o.coalesce_gap_bytes = (uint64_t)1 << 20;
    o.coalesce_max_bytes = (uint64_t)16 << 20;
    return o;
}
#define SL_BATCH_OPTS_DEFAULT (sl_batch_opts_default())

/**
 * Read `n` selections of `a`: selection i, `regions[i]` (array
 * coordinates), into `bufs[i]` as a dense C-order array of the region's
 * shape (`buf_bytes[i]` bytes available), with the fill value where
 * nothing is stored.  Selections may overlap and share chunks; the buffers
 * must not overlap one another.
 *
 * @param opts    NULL for SL_BATCH_OPTS_DEFAULT.
 * @param status  NULL, or `n` entries: SL_OK for each selection read, else
 *                why it was not: SL_EBOUNDS (outside the array, the message
 *                names the selection and the array's shape), SL_EINVAL (rank
 *                differs, buffer missing or too small), SL_EOVERFLOW, or the
 *                error of the first chunk it needs that failed (SL_ECORRUPT,
 *                SL_EIO, SL_ENOMEM, ...).  A failed selection's buffer holds
 *                unspecified data.
 * @param errors  NULL, or `n` records: each selection's error (code SL_OK
 *                when it was read), its text starting "selection I: ".
 * @return SL_OK when every selection was read; else the status of the
 * lowest-numbered failed selection (as in `status` above: SL_EBOUNDS,
 * SL_EINVAL, SL_EOVERFLOW, SL_ECORRUPT, SL_EIO, SL_ENOMEM), whose error
 * `err` records; SL_EINVAL
 * (`regions`, `bufs` or `buf_bytes` NULL with n > 0, or bad options) or
 * SL_ENOMEM for the plan, when nothing is read.
 * Thread-safety: any thread, concurrently with other reads and with writes
 * of other chunks.
 */
SL_API SL_NODISCARD sl_status sl_array_read_batch(const sl_array *a, size_t n,
                                                  const struct sl_region *regions,
                                                  void *const *bufs, const size_t *buf_bytes,
                                                  const struct sl_batch_opts *opts,
                                                  sl_status *status, struct sl_error *errors,
                                                  struct sl_error *err);

/**
 * Shape and bytes of the output of sl_array_read_batch_concat: the
 * selections' extents summed along `axis`, their common extent elsewhere.
 * @param shape  sl_array_rank(a) entries.
 * @return SL_OK; SL_EINVAL (n == 0, `axis` not below the rank, a selection
 * of another rank, or selections whose extents differ outside `axis`,
 * naming the selection and dimension); SL_EOVERFLOW.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_array_batch_concat_shape(const sl_array *a, size_t n,
                                                          const struct sl_region *regions,
                                                          uint32_t axis, uint64_t *shape,
                                                          size_t *bytes, struct sl_error *err);

/**
 * Read `n` selections of `a` concatenated along `axis` into one dense
 * C-order buffer of sl_array_batch_concat_shape's shape: selection i fills
 * the slab after those of selections 0..i-1 along `axis`.  Otherwise as
 * sl_array_read_batch; a selection that fails leaves its slab unspecified
 * and does not stop the others.
 * @return as sl_array_read_batch (SL_OK, or the lowest failed selection's
 * status); SL_EINVAL or SL_EOVERFLOW as sl_array_batch_concat_shape (every
 * status set to SL_EINVAL for the offending selection, SL_ECANCELED for the
 * others); SL_EINVAL when `buf_bytes` is smaller than the output, before
 * anything is read.
 * Thread-safety: as sl_array_read_batch.
 */
SL_API SL_NODISCARD sl_status sl_array_read_batch_concat(const sl_array *a, size_t n,
                                                         const struct sl_region *regions,
                                                         uint32_t axis, void *buf, size_t buf_bytes,
                                                         const struct sl_batch_opts *opts,
                                                         sl_status *status, struct sl_error *errors,
                                                         struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_BATCH_H */
