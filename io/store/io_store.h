/* SPDX-License-Identifier: MIT */
/*
 * The store sub-library's interface to the io layers above it (zarr, txn,
 * batch): readers of byte ranges of one version of an object, sets with
 * flags, the key check and the sweep of abandoned temporary files.  graph/
 * and programs use <sluice/store.h> instead.
 */
#ifndef SL_IO_STORE_H
#define SL_IO_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/checked.h>
#include <sluice/error.h>
#include <sluice/store.h>

#include "core_internal.h"

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

/* Flags of a set (struct sl__store_vtable.set, sl__store_set). */
enum {
    SL__SET_REREAD = 1u, /* read again soon: keep it in the cache (no direct write) */
};

/* sl_store_set with `flags`. */
sl_status sl__store_set(sl_store *s, const char *key, const void *data, size_t n, unsigned flags,
                        struct sl_error *err);

/* How many writer threads a transaction on `s` should have: 0 where a set
 * does not wait, 1 where it waits for a device (fsync), more where sets
 * wait on a network and overlap (a PUT). */
unsigned sl__store_set_writers(const sl_store *s);

/*
 * Check that `key` (`len` bytes, which must not include a NUL) may name an
 * object: see sl_store_set for the rules.  @return SL_OK or SL_EACCES
 * naming the key and the rule it breaks.
 */
sl_status sl__key_check(const char *key, size_t len, struct sl_error *err);

/*
 * Open object `key` for range reads.  @return SL_OK, SL_ENOTFOUND,
 * SL_EACCES, SL_EIO or SL_ENOMEM.  Close with sl__reader_close.
 */
sl_status sl__reader_open(sl_store *s, const char *key, struct sl__reader *rd,
                          struct sl_error *err);

/*
 * sl__reader_open, saying which range the caller reads first (NULL: the
 * whole object), so that a remote store fetches it with the request that
 * opens the object: a shard's index by a suffix range, without asking for
 * the object's size first.
 */
sl_status sl__reader_open_first(sl_store *s, const char *key, const struct sl_byte_range *first,
                                struct sl__reader *rd, struct sl_error *err);

/* Hint that `range` of object `key` (NULL: all of it) will be read soon
 * (sl_array_prefetch_chunk); a store that cannot prefetch ignores it.  A
 * first range (a shard's index) is kept for the open that asks for it. */
void sl__store_prefetch(sl_store *s, const char *key, const struct sl_byte_range *range);

/* The most ranges one sl__store_prefetch_ranges call coalesces (more are
 * hinted one by one). */
#define SL__PREFETCH_RANGES_MAX 64

/* Hint that the `n` byte ranges (offset and length) of object `key` will
 * be read soon, each by a read of its own: a remote store fetches runs of
 * them whose gaps are at most `gap` bytes, each run at most `cap` bytes,
 * in one request, and each read copies its range out of it (a read whose
 * run failed asks for its own bytes).  Other stores: sl__store_prefetch
 * each. */
void sl__store_prefetch_ranges(sl_store *s, const char *key, const struct sl_byte_range *ranges,
                               size_t n, uint64_t gap, uint64_t cap);

/* Whether `s` fetches hinted objects ahead, so that a read may wait for
 * its object to come (a remote store); then readers of many objects gain
 * by reading first those already come (sl__store_fetched). */
bool sl__store_fetches_ahead(const sl_store *s);

/* Whether the whole of `key`, hinted before (sl__store_prefetch), has
 * come, so that reading it will not wait; never waits itself.  False where
 * nothing was hinted for it, or the store does not fetch ahead. */
bool sl__store_fetched(sl_store *s, const char *key);

/* Whether an earlier open fetched the first range `first` of `key` (a
 * shard's index), so opening it again costs no request; never waits. */
bool sl__store_has_first(sl_store *s, const char *key, const struct sl_byte_range *first);

/* Read exactly `n` bytes at `offset` into `dst`.  @return SL_OK, SL_EBOUNDS
 * (past the end), SL_EIO. */
sl_status sl__reader_read(struct sl__reader *rd, uint64_t offset, size_t n, void *dst,
                          struct sl_error *err);

/* Read `range` into `out`, replacing its contents. */
sl_status sl__reader_read_range(struct sl__reader *rd, const struct sl_byte_range *range,
                                struct sl_buf *out, struct sl_error *err);

/* The bytes of `range` (NULL: the whole object) in `*data`, `*n`: where the
 * reader holds them in memory (a remote body, a memory store's value),
 * there, valid until the reader closes, with no copy; else read into
 * `scratch` (replacing its contents) and pointing into it. */
sl_status sl__reader_view_range(struct sl__reader *rd, const struct sl_byte_range *range,
                                struct sl_buf *scratch, const uint8_t **data, size_t *n,
                                struct sl_error *err);

/* Close a reader; safe on a reader whose open failed. */
void sl__reader_close(struct sl__reader *rd);

/*
 * Remove the temporary files (".sluice-tmp.<pid>.<n>") that writers which
 * no longer run left in the directories under `prefix` of a filesystem
 * store; files of this process and of live processes are kept.  Other
 * stores have none.  `*n_removed` counts what was removed.
 * @return SL_OK, SL_EACCES (refused prefix), SL_EIO or SL_ENOMEM.
 */
sl_status sl__store_sweep(sl_store *s, const char *prefix, uint64_t *n_removed,
                          struct sl_error *err);

/* True when process `pid` of this machine no longer runs: gone (ESRCH), or
 * a zombie that nobody reaped (/proc/PID/stat state Z; a killed process in
 * a container without an init that reaps it stays one), so its temporary
 * files and staged outputs will never be finished. */
bool sl__pid_gone(long pid);

#endif /* SL_IO_STORE_H */
