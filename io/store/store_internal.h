/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the store sub-library, shared by its files and
 * open to its tests: the vtable each kind of store implements, the common
 * part of every store, prefix checks and errno mapping.
 */
#ifndef SL_STORE_INTERNAL_H
#define SL_STORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <sluice/remote.h>

#include "io_store.h"

/* What each kind of store implements; the generic layer checks keys,
 * counts operations and names keys in errors. */
struct sl__store_vtable {
    const char *kind;
    /* Writer threads worth giving a transaction: 0 where a set does not
     * wait (memory), 1 where it waits for a device (a file's fsync), more
     * where sets wait on a network and overlap there (a PUT). */
    unsigned set_writers;
    /* `first`: the range the caller reads first (NULL: all of it), so a
     * remote store fetches it with the opening request. */
    sl_status (*reader_open)(sl_store *s, const char *key, const struct sl_byte_range *first,
                             struct sl__reader *rd, struct sl_error *err);
    sl_status (*reader_read)(struct sl__reader *rd, uint64_t offset, size_t n, void *dst,
                             struct sl_error *err);
    void (*reader_close)(struct sl__reader *rd);
    /* The bytes [offset, offset + n) where the reader already holds them in
     * memory (a fetched body, a stored value), valid until it closes; NULL:
     * read them (reader_read).  A NULL entry: never held. */
    const uint8_t *(*reader_view)(struct sl__reader *rd, uint64_t offset, size_t n);
    sl_status (*set)(sl_store *s, const char *key, const void *data, size_t n, unsigned flags,
                     struct sl_error *err);
    sl_status (*del)(sl_store *s, const char *key, struct sl_error *err);
    /* Delete `n` keys (checked; absent ones succeed) in as few requests as
     * the kind can, naming `path` (the node they are under) in messages;
     * NULL: `del` once per key (sl_store_delete_tree). */
    sl_status (*del_keys)(sl_store *s, const char *path, const char *const *keys, size_t n,
                          struct sl_error *err);
    sl_status (*list)(sl_store *s, const char *prefix, sl_store_list_fn *fn, void *arg,
                      struct sl_error *err);
    /* Start fetching `range` of object `key` (NULL: all of it) ahead of its
     * read; NULL: no prefetching. */
    void (*prefetch)(sl_store *s, const char *key, const struct sl_byte_range *range);
    /* Start fetching `n` ranges of `key` ahead, coalescing nearby ones
     * into one request (sl__store_prefetch_ranges); NULL: `prefetch` each. */
    void (*prefetch_ranges)(sl_store *s, const char *key, const struct sl_byte_range *ranges,
                            size_t n, uint64_t gap, uint64_t cap);
    /* Whether the whole of `key`, hinted before, has come, so its read
     * will not wait (sl__store_fetched); NULL: reads never wait on a fetch
     * ahead. */
    bool (*fetched)(sl_store *s, const char *key);
    /* Whether a first range was fetched before (sl__store_has_first); NULL:
     * never. */
    bool (*has_first)(sl_store *s, const char *key, const struct sl_byte_range *first);
    /* A remote store's counters; NULL for local stores. */
    void (*remote_stats)(const sl_store *s, struct sl_remote_stats *out);
    /* Whether writes were conditional; NULL: not applicable. */
    sl_store_conditional (*conditional_writes)(const sl_store *s);
    /* Make what was written durable (sl_store_sync); NULL: every write is. */
    sl_status (*sync)(sl_store *s, struct sl_error *err);
    void (*destroy)(sl_store *s);
};

/* The part every store starts with. */
struct sl_store {
    const struct sl__store_vtable *vt;
    struct sl_allocator alloc; /* the store's own memory */
    const char *given;         /* filesystem root as opened, for messages; NULL: memory */
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

/* Check a listing prefix: like a key, but it may be empty, end in '/' or end
 * in a partial component. */
sl_status sl__key_prefix_check(const char *prefix, struct sl_error *err);

/* True for names the filesystem store uses for its temporary files. */
bool sl__key_is_temporary(const char *name);

/* The scheme of `text` ("s3" for "s3://b/k") in `out` (`size` bytes);
 * false when it has none (url.c). */
bool sl__url_scheme(const char *text, char *out, size_t size);

/* Whether `url` has a host (a name, an IPv4 or a bracketed IPv6 address),
 * an optional port 1..65535 and no spaces or control characters; false
 * with SL_EINVAL naming what is wrong (url.c). */
bool sl__url_check(const char *url, struct sl_error *err);

/* The URL the HTTP store `s` requests for `key` (already checked), in `out`:
 * its base URL, "/", the key percent-encoded except for unreserved
 * characters and '/', then its query.  False when `s` is not an HTTP store
 * (always without libcurl) or the URL does not fit.  No I/O: for the tests
 * and the fuzz target (store_http.c). */
bool sl__http_url_for(const sl_store *s, const char *key, char *out, size_t size);

/* Map a negated errno value to a status. */
sl_status sl__status_from_errno(int neg_errno);

/* Resolve `range` against an object of `size` bytes into [*offset, +*n).
 * @return SL_OK or SL_EBOUNDS naming `key`. */
sl_status sl__range_resolve(const struct sl_byte_range *range, uint64_t size, const char *key,
                            uint64_t *offset, uint64_t *n, struct sl_error *err);

#endif /* SL_STORE_INTERNAL_H */
