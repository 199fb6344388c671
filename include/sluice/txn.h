/* SPDX-License-Identifier: MIT */
/*
 * Write transactions on arrays: stage whole chunks or regions, read them
 * back through the transaction, then commit, writing every shard (or chunk
 * of an unsharded array) once, atomically; or abort.  This is the answer to
 * "compute a shard's inner chunks one by one, write the shard once": a
 * shard whose chunks are all staged is written at once, so memory stays
 * bounded by the shards in progress.  Iterators over the shards of a region
 * and the inner chunks of a shard (<sluice/array_iter.h>) make that loop
 * short:
 *
 *     sl_txn *t = sl_txn_open(a, NULL, &err);
 *     struct sl_array_iter shards, chunks;
 *     sl_array_iter_shards(a, NULL, &shards, &err);
 *     while (sl_array_iter_next(&shards)) {
 *         sl_array_iter_shard_chunks(a, shards.iter.coords, &chunks, &err);
 *         while (sl_array_iter_next(&chunks)) {
 *             compute(&chunks.iter.chunk, buf);
 *             sl_txn_write_chunk(t, chunks.iter.coords, buf, n, ctx, &err);
 *         }
 *     }
 *     sl_txn_commit(t, ctx, &err);
 *     sl_txn_close(t);
 *
 * Guarantees, and what is not promised:
 * - Nothing reaches storage before commit, except that a unit (shard, or
 *   chunk of an unsharded array) whose chunks inside the array are all
 *   staged whole is written at once when `flush_full` is set (the
 *   default).  Such early writes are final: abort cannot undo them.
 * - Each unit is written once per commit (once per flush), atomically: a
 *   reader, or the store after a crash, sees its old or its new version.
 *   A unit only partly staged is read once, merged and written once.
 * - Atomicity across units is NOT promised: after a failure or a crash
 *   some units may hold the new data and others the old.  Every unit's
 *   outcome is reported to `on_unit`, so callers know which.
 * - Writers of one unit (threads of this transaction, other transactions
 *   and array writes of this process) are serialized and lose nothing.
 *   Processes writing one unit at once are not serialized.
 * - With `write_behind`, a unit completed early is encoded by the write
 *   that completed it (on `par`, else with the writer's codec context)
 *   and written by the transaction's writer threads while writes go on,
 *   so the store's writes and fsyncs overlap the encoding of the next
 *   units (one thread where sets wait for a device, a file's fsync;
 *   several where they wait on a network and overlap, S3's PUTs: 8, a
 *   program's store: 4; never more than `write_behind`); at most
 *   `write_behind` units wait for or are in those threads'
 *   hands (they stay staged, readable, and counted in
 *   sl_txn_staged_bytes until written: when the write that completed
 *   one had a codec context, it assembled the shard, and that is all the
 *   unit then holds).  Commit and abort first
 *   wait for them.  Each unit is still written once, atomically, and
 *   reported to `on_unit`.  But such a unit is not yet stored when the
 *   write that completed it returns: a write of the same unit from
 *   outside this transaction (an array write, another transaction) must
 *   come after sl_txn_wait_behind or commit, or the writer thread may
 *   store the older image over it.  Writes and reads through this
 *   transaction need no such care.
 * - With `encode_on_write`, sl_txn_write_chunk encodes its chunk on the
 *   calling thread and keeps only the encoding: staged memory is the
 *   compressed size, and a unit completed early only needs assembling.
 *   Made for many threads writing at once (a pool's put stage), whose
 *   encoding it spreads; one thread writing in a loop is better served
 *   without it, its flushes encoding on `par`.  Results are the same
 *   either way: a read through the transaction decodes such a chunk, a
 *   region write over part of it decodes it first, and a chunk written
 *   whole twice is encoded twice.  Writes without a codec context and
 *   region writes stage chunks decoded, as without the option.
 */
#ifndef SL_TXN_H
#define SL_TXN_H

#include <limits.h>
#include <stdbool.h>
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

typedef struct sl_txn sl_txn;

/*
 * Called once for every unit a transaction staged, with the unit's
 * coordinates in the shard grid (sl_array_shard_grid; the chunk grid when
 * unsharded): SL_OK once it is written (or deleted, being all fill), the
 * failure that left it unchanged (`err` says why), or SL_ECANCELED when an
 * abort dropped it.  `err` is NULL on SL_OK.  Runs on the thread that
 * wrote the unit (a writer whose write completed it, the writer thread of
 * `write_behind`, or a worker of `par` during commit), outside the
 * transaction's locks, possibly on several threads at once; it may not
 * call the transaction back.  A put stage marks every chunk of a failed
 * unit failed (sl_array_iter_shard_chunks lists them).
 */
typedef void sl_txn_unit_fn(void *arg, const uint64_t *unit, sl_status status,
                            const struct sl_error *err);

/* Options of a transaction. */
struct sl_txn_opts {
    bool flush_full;               /* write a unit as soon as all its chunks inside
                                      the array are staged whole (default true) */
    bool clean_leftovers;          /* on open, remove the temporary files of
                                      writers that were killed (default true) */
    const struct sl_parallel *par; /* borrowed: encodes the chunks of flushes and
                                      the units of commit; NULL: the calling thread */
    sl_txn_unit_fn *on_unit;       /* NULL: no reports */
    void *on_unit_arg;             /* passed to `on_unit` */
    unsigned write_behind;         /* units completed early that a writer thread
                                      may hold at once (0, the default: each is
                                      written before the write that completed it
                                      returns); see the guarantees above;
                                      SL_TXN_WRITE_BEHIND_AUTO: decided by the
                                      store */
    bool reread;                   /* the units will be read again soon (a later
                                      stage reads the array): the store keeps them
                                      in its cache; the filesystem store then
                                      writes through the page cache, not directly
                                      (default false) */
    bool encode_on_write;          /* a chunk written whole (sl_txn_write_chunk,
                                      with a codec context) is encoded by that
                                      write and kept only encoded; see below
                                      (default false) */
    unsigned retries;              /* tries after the first of a unit's store write
                                      or delete that failed transiently
                                      (sl_status_transient); default 0 */
    double retry_backoff_s;        /* the first retry waits up to this, doubling
                                      per retry up to 2 s (default 0.05) */
};

/* write_behind of 2 where the array's store waits for a device on every
 * set (the filesystem store: its fsync), so that the wait overlaps
 * encoding; as many as its writer threads where sets wait on a network
 * (S3: 8 PUTs in flight); 0 where a set does not wait (the memory store),
 * where a thread more would only compete for the cores. */
#define SL_TXN_WRITE_BEHIND_AUTO UINT_MAX
/**
 * SL_TXN_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_txn_opts
sl_txn_opts_default(void)
{
    struct sl_txn_opts o;
    memset(&o, 0, sizeof o);
    o.flush_full = true;
    o.clean_leftovers = true;
    o.retry_backoff_s = 0.05;
    return o;
}
#define SL_TXN_OPTS_DEFAULT (sl_txn_opts_default())

/* What a transaction did so far. */
struct sl_txn_stats {
    uint64_t n_chunks_staged;   /* chunk writes and region parts staged */
    uint64_t n_units_written;   /* units written or deleted */
    uint64_t n_units_failed;    /* units whose write failed */
    uint64_t n_units_early;     /* of both, written before commit (flush_full) */
    uint64_t staged_bytes;      /* chunk data staged now (see sl_txn_staged_bytes) */
    uint64_t peak_staged_bytes; /* the most staged at once */
    uint64_t staged_units;      /* units staged now, not yet written or dropped */
    uint64_t n_retries;         /* unit writes and deletes tried again (`retries`) */
};

/**
 * Begin a transaction on `a`.  With `clean_leftovers`, first removes the
 * temporary files that writers killed mid-write left in the array's
 * directories (see sl_txn_clean_leftovers).
 * @param a     retained until sl_txn_close.
 * @param opts  NULL for SL_TXN_OPTS_DEFAULT.
 * @return the transaction (release with sl_txn_close), or NULL with
 * SL_EINVAL (no array), SL_ENOMEM or the error of cleaning (SL_EIO) in
 * `err`.
 * Thread-safety: any thread.
 */
SL_API sl_txn *sl_txn_open(sl_array *a, const struct sl_txn_opts *opts, struct sl_error *err);

/**
 * Stage chunk `coords` (chunk grid; inner chunk when sharded) from `buf`,
 * a whole chunk as sl_array_write_chunk takes it (padding beyond the array
 * is stored as the fill value).  A later write of the same chunk replaces
 * it.  When this completes a unit and `flush_full` is set, the unit is
 * written before this returns (with `write_behind`: encoded, then handed
 * to the writer thread once it has room); its outcome goes to `on_unit`
 * and to commit, not to this call's status.  A write to a unit being
 * written by another thread waits for that write.
 * @param ctx  this thread's codec context: encodes the chunk with
 *             encode_on_write, and a flush; NULL: the chunk is staged
 *             decoded, a flush makes a temporary one.
 * @return SL_OK; SL_EBOUNDS; SL_EINVAL (NULL or short buffer); SL_ESTATE
 * (the transaction is committing, committed or aborted); SL_ENOMEM.
 * Thread-safety: any thread, concurrently with other writes and reads.
 */
SL_API SL_NODISCARD sl_status sl_txn_write_chunk(sl_txn *t, const uint64_t *coords, const void *buf,
                                                 size_t buf_bytes, sl_codec_ctx *ctx,
                                                 struct sl_error *err);

/**
 * Stage `region` from `buf` (dense, C order, the region's shape, as
 * sl_array_write_region takes it).  Chunks it covers whole are staged
 * whole; the parts of others are kept with a mask and merged with the
 * stored chunk when their unit is written.  After a failure, the chunks
 * met before the failing one stay staged.
 * @return as sl_txn_write_chunk (SL_OK, SL_EINVAL, SL_ESTATE, SL_ENOMEM),
 * SL_EBOUNDS for a region outside the array;
 * a part written over a chunk staged encoded decodes it first, which may
 * fail (SL_ENOMEM, or SL_ECORRUPT naming the chunk).
 * Thread-safety: as sl_txn_write_chunk.
 */
SL_API SL_NODISCARD sl_status sl_txn_write_region(sl_txn *t, const struct sl_region *region,
                                                  const void *buf, size_t buf_bytes,
                                                  sl_codec_ctx *ctx, struct sl_error *err);

/**
 * Read chunk `coords` as sl_array_read_chunk does, seeing what this
 * transaction staged over what is stored.  `*missing` (may be NULL) is
 * true when nothing is staged or stored there.
 * @return as sl_array_read_chunk: SL_OK, SL_EBOUNDS, SL_EINVAL,
 * SL_ECORRUPT, SL_EIO or SL_ENOMEM; a chunk staged encoded is decoded,
 * with the same failures.
 * Thread-safety: any thread, concurrently with writes.
 */
SL_API SL_NODISCARD sl_status sl_txn_read_chunk(sl_txn *t, const uint64_t *coords, void *buf,
                                                size_t buf_bytes, sl_codec_ctx *ctx, bool *missing,
                                                struct sl_error *err);

/**
 * Read `region` as sl_array_read_region does, seeing what this
 * transaction staged over what is stored.
 * @return as sl_array_read_region: SL_OK, SL_EBOUNDS, SL_EINVAL,
 * SL_ECORRUPT, SL_EIO or SL_ENOMEM.
 * Thread-safety: as sl_txn_read_chunk.
 */
SL_API SL_NODISCARD sl_status sl_txn_read_region(sl_txn *t, const struct sl_region *region,
                                                 void *buf, size_t buf_bytes, sl_codec_ctx *ctx,
                                                 struct sl_error *err);

/**
 * Write every unit still staged, each once, encoding on `par`; report
 * each to `on_unit`.  A failing unit does not stop the others.
 * @param ctx  the calling thread's codec context; NULL: temporary.
 * @return SL_OK when every unit of the transaction (early flushes
 * included) was written; else the first failure recorded, with its
 * message.  SL_ESTATE when writes are still running or the transaction is
 * not open (nothing is written then).
 * Thread-safety: call once, after every write has returned.
 */
SL_API SL_NODISCARD sl_status sl_txn_commit(sl_txn *t, sl_codec_ctx *ctx, struct sl_error *err);

/**
 * Drop everything staged, reporting each dropped unit to `on_unit` with
 * SL_ECANCELED.  Storage is left untouched (units already flushed early
 * stay written; with `write_behind`, units in the writer thread's hands
 * are written, and reported, before this returns).
 * @return SL_OK; SL_EINVAL (`t` is NULL); SL_ESTATE when writes are still
 * running (naming how many) or the transaction is not open (naming its
 * state).
 * Thread-safety: call once, after every write has returned.
 */
SL_API SL_NODISCARD sl_status sl_txn_abort(sl_txn *t, struct sl_error *err);

/**
 * Abort when still open, release the array and free.  NULL is a no-op.
 * Call it after every write returned; a write still running (a caller's
 * error) is waited for first.
 * Thread-safety: one thread, after every write has returned.
 */
SL_API void sl_txn_close(sl_txn *t);

/**
 * Wait until the writer thread of `write_behind` holds no unit: every unit
 * handed to it is written (or failed), reported to `on_unit` and no longer
 * staged.  Writes may go on meanwhile and hand it more.
 * @return whether there was anything to wait for.
 * Thread-safety: any thread but the writer thread (that is, not from
 * `on_unit`).
 */
SL_API bool sl_txn_wait_behind(sl_txn *t);

/** Bytes of chunk data staged now: a chunk staged decoded counts its size
 * (a partial one its mask too), one staged encoded (encode_on_write) its
 * encoding, an all-fill one so staged nothing; a unit handed to the
 * writer thread its assembled shard instead of its chunks (or, not
 * assembled yet, its chunks and their encodings).  0 does not mean that
 * nothing is staged: see sl_txn_stats.staged_units.
 * Thread-safety: any thread. */
SL_API uint64_t sl_txn_staged_bytes(const sl_txn *t);

/** Copy the transaction's counters into `out`.  Thread-safety: any thread. */
SL_API void sl_txn_get_stats(const sl_txn *t, struct sl_txn_stats *out);

/**
 * Remove the temporary files that writers killed mid-write left in the
 * directories of array `a` (filesystem stores name them
 * ".sluice-tmp.<pid>.<n>"; reads and listings never see them).  Files of
 * processes still running on this machine are kept, so use it only where
 * no writer on another machine shares the directory.  `n_removed` may be
 * NULL.  @return SL_OK, SL_EIO or SL_ENOMEM.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_txn_clean_leftovers(sl_array *a, uint64_t *n_removed,
                                                     struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_TXN_H */
