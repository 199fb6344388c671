/* SPDX-License-Identifier: MIT */
/*
 * The remote store's shared operations (store_remote.c), for the kinds of
 * store built on it beside HTTP and the program's own: the S3 store
 * (store_s3.c) reads through them and adds its writes, listing and
 * signing.  Private to io/store.
 */
#ifndef SL_REMOTE_INTERNAL_H
#define SL_REMOTE_INTERNAL_H

#include "engine_internal.h"
#include "store_internal.h"

/* The vtable entries every remote store shares. */
sl_status sl__remote_reader_open(sl_store *s, const char *key, const struct sl_byte_range *first,
                                 struct sl__reader *rd, struct sl_error *err);
const uint8_t *sl__remote_reader_view(struct sl__reader *rd, uint64_t offset, size_t n);
sl_status sl__remote_reader_read(struct sl__reader *rd, uint64_t offset, size_t n, void *dst,
                                 struct sl_error *err);
void sl__remote_reader_close(struct sl__reader *rd);
void sl__remote_prefetch(sl_store *s, const char *key, const struct sl_byte_range *range);

/* The vtable's prefetch_ranges (see io_store.h): runs of the ranges within
 * `gap` of each other and `cap` long fetched in one request each. */
void sl__remote_prefetch_ranges(sl_store *s, const char *key, const struct sl_byte_range *ranges,
                                size_t n, uint64_t gap, uint64_t cap);
bool sl__remote_fetched(sl_store *s, const char *key);
bool sl__remote_has_first(sl_store *s, const char *key, const struct sl_byte_range *first);
void sl__remote_stats(const sl_store *s, struct sl_remote_stats *out);
void sl__remote_destroy(sl_store *s);

/* Told, on a reader's thread, what opening `key` found: SL_OK with the
 * answer's ETag ("" when none), SL_ENOTFOUND, or a failure; not called when
 * an earlier open's first range served it. */
typedef void sl__remote_seen_fn(void *ext, const char *key, sl_status st, const char *etag);

/*
 * A remote store of kind `vt` whose keys are URLs under `root` (no
 * trailing '/'), read on a libcurl engine started with `eo` (its sign hook
 * may take `ext`), fetching ahead at most `prefetch_bytes`.  `ext` is the
 * kind's own state, given to `ext_free` when the store closes, after its
 * engine stopped (only when this succeeds); `seen` (NULL: none) is told
 * what each open found.  Only with libcurl.
 * @return the store, or NULL with `err` set.
 */
sl_store *sl__remote_open_curl(const struct sl__store_vtable *vt, const char *root,
                               const struct sl__engine_opts *eo, uint64_t prefetch_bytes,
                               const struct sl_allocator *alloc, void *ext,
                               void (*ext_free)(void *ext), sl__remote_seen_fn *seen,
                               struct sl_error *err);

/* Check the request options; SL_OK or SL_EINVAL naming the field. */
sl_status sl__remote_opts_check(const struct sl_http_store_opts *o, struct sl_error *err);

/* The kind's state given to sl__remote_open_curl. */
void *sl__remote_ext(const sl_store *s);

/* The store's engine. */
sl__engine *sl__remote_engine(const sl_store *s);

/* The URL of `key` (checked already): the root, '/', the key encoded
 * (unreserved characters and '/' kept, others %XX).  False when it does
 * not fit. */
bool sl__remote_url_for(const sl_store *s, const char *key, char *out, size_t size);

#endif /* SL_REMOTE_INTERNAL_H */
