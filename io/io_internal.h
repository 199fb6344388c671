/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of io, shared by its files and open to its tests:
 * the store vtable and readers, key checks, the codec chain, metadata, shard
 * encoding and the array internals.  The parsers (metadata, shard index,
 * codec chain) take plain byte buffers so fuzz targets can call them.
 */
#ifndef SL_IO_INTERNAL_H
#define SL_IO_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/checked.h>
#include <sluice/error.h>
#include <sluice/store.h>

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
    sl_status (*reader_open)(sl_store *s, const char *key, struct sl__reader *rd,
                             struct sl_error *err);
    sl_status (*reader_read)(struct sl__reader *rd, uint64_t offset, size_t n, void *dst,
                             struct sl_error *err);
    void (*reader_close)(struct sl__reader *rd);
    sl_status (*set)(sl_store *s, const char *key, const void *data, size_t n,
                     struct sl_error *err);
    sl_status (*del)(sl_store *s, const char *key, struct sl_error *err);
    sl_status (*list)(sl_store *s, const char *prefix, sl_store_list_fn *fn, void *arg,
                      struct sl_error *err);
    void (*destroy)(sl_store *s);
};

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

#endif /* SL_IO_INTERNAL_H */
