/* SPDX-License-Identifier: MIT */
/*
 * Remote stores and opening a store by URL.  An HTTP(S) store reads Zarr
 * arrays served by any web server or object store gateway: keys become URLs
 * under the store's base URL, objects are read with GET (byte ranges with
 * `Range:`), and an I/O engine of its own (libcurl's multi interface on one
 * thread) keeps a window of requests in flight, whatever the number of
 * threads that read, retrying what is worth retrying.
 *
 * Only a 404 means "absent" (the fill value, or an error where missing
 * chunks are errors); every other failure is an error for that read, never
 * a fill value.  Servers that answer 403 for absent keys (Ceph's gateway)
 * need `missing_on_403`.
 */
#ifndef SL_REMOTE_H
#define SL_REMOTE_H

#include <stdbool.h>
#include <string.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/fs.h>
#include <sluice/store.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Options of the HTTP(S) store, with their defaults. */
struct sl_http_store_opts {
    unsigned io_concurrency;          /* requests in flight at most (64) */
    unsigned max_attempts;            /* tries per request, the first included (10) */
    double backoff_first_s;           /* a first retry waits up to this, doubling (0.1 s) */
    double backoff_cap_s;             /* no wait longer than this (15 s) */
    double request_deadline_s;        /* a request gives up after this, retries included (300 s) */
    double connect_timeout_s;         /* per connection attempt (5 s) */
    long low_speed_bytes;             /* a transfer under this many bytes per second ... (1024) */
    long low_speed_s;                 /* ... for this long is cut and retried (30 s) */
    bool missing_on_403;              /* a 403 means "absent" (Ceph's gateway does so) (false) */
    uint64_t prefetch_bytes;          /* bytes fetched ahead of their reads, in flight or
                                         waiting, at most (256 MiB; one fetch may pass it) */
    const struct sl_allocator *alloc; /* copied; NULL: the default allocator */
};
/**
 * SL_HTTP_STORE_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_http_store_opts
sl_http_store_opts_default(void)
{
    struct sl_http_store_opts o;
    memset(&o, 0, sizeof o);
    o.io_concurrency = 64;
    o.max_attempts = 10;
    o.backoff_first_s = 0.1;
    o.backoff_cap_s = 15;
    o.request_deadline_s = 300;
    o.connect_timeout_s = 5;
    o.low_speed_bytes = 1024;
    o.low_speed_s = 30;
    o.prefetch_bytes = (uint64_t)256 << 20;
    return o;
}
#define SL_HTTP_STORE_OPTS_DEFAULT (sl_http_store_opts_default())

/**
 * Open a read-only store over `url` (http:// or https://; a trailing "/" is
 * optional; a query string, as a signed URL carries, is kept after every
 * key).  Nothing is requested until a key is read.  Set and delete fail
 * with SL_EACCES; listing fails with SL_EUNSUPPORTED (HTTP cannot list).
 * @param opts  NULL for SL_HTTP_STORE_OPTS_DEFAULT.
 * @return a store with one reference, or NULL with SL_EINVAL (not an
 * http(s) URL, an option out of range), SL_EUNSUPPORTED (built without
 * libcurl) or SL_ENOMEM in `err`.
 * Thread-safety: any thread.
 */
SL_API sl_store *sl_store_open_http(const char *url, const struct sl_http_store_opts *opts,
                                    struct sl_error *err);

/*
 * Where key `key` lives: write the URL into `url` (`size` bytes) and return
 * true, or false for a key the store does not hold (read as absent).
 * Called from any thread.
 */
typedef bool sl_store_url_fn(void *ctx, const char *key, char *url, size_t size);

/**
 * Open a read-only HTTP(S) store whose keys map to URLs through `url_of`
 * instead of a base URL: a chunk store laid out its own way (katdal's
 * archive names chunks "<array>/<i>_<j>.npy" on a Ceph gateway), read with
 * the same window, retries, fetching ahead and per-chunk errors as
 * sl_store_open_http.  `ctx` must outlive the store.
 * @param opts  NULL for SL_HTTP_STORE_OPTS_DEFAULT.
 * @return a store with one reference, or NULL with SL_EINVAL (no function,
 * an option out of range), SL_EUNSUPPORTED (built without libcurl) or
 * SL_ENOMEM in `err`.
 * Thread-safety: any thread.
 */
SL_API sl_store *sl_store_open_http_mapped(sl_store_url_fn *url_of, void *ctx,
                                           const struct sl_http_store_opts *opts,
                                           struct sl_error *err);

/**
 * Keep what `o` fetches ahead within a quarter of a memory budget of
 * `budget` bytes: prefetch_bytes becomes the smaller of its value and
 * budget / 4 (at least 1 MiB); a budget of 0 (none) changes nothing.  The
 * launcher does this with `--memory`, so that chunk buffers (the budget)
 * and bytes fetched ahead (a quarter of it) together stay within 1.25 x
 * the budget.
 * Thread-safety: any thread.
 */
SL_API void sl_http_store_opts_fit_budget(struct sl_http_store_opts *o, uint64_t budget);

/* Whether the S3 store makes its writes conditional (struct sl_s3_store_opts). */
typedef enum sl_s3_conditional {
    SL_S3_CONDITIONAL_AUTO,   /* when the server honours it, found by a probe at the first
                                 write (two PUTs and a DELETE of a ".sluice-probe-" key) */
    SL_S3_CONDITIONAL_ALWAYS, /* always (the server is known to honour it) */
    SL_S3_CONDITIONAL_NEVER,  /* never: the last writer wins silently */
} sl_s3_conditional;

/* Options of the S3 store besides its requests' (struct sl_http_store_opts),
 * with their defaults.  Every string is copied. */
struct sl_s3_store_opts {
    const char *endpoint;     /* "http(s)://host[:port]" of an S3-compatible server (path-style
                                 addressing); NULL: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, the
                                 profile's endpoint_url, else AWS (virtual-hosted) */
    const char *region;       /* NULL: $AWS_REGION, $AWS_DEFAULT_REGION, the profile's, us-east-1 */
    const char *profile;      /* NULL: $AWS_PROFILE, else "default" */
    bool anonymous;           /* unsigned requests, no credentials looked up (--no-sign-request) */
    bool read_only;           /* refuse writes and deletes (SL_EACCES) */
    uint64_t multipart_bytes; /* objects of this many bytes or more are uploaded in parts
                                 (64 MiB); the upload is aborted when a part fails, so no
                                 partial object remains */
    uint64_t part_bytes;      /* bytes per part but the last (16 MiB; at least 5 MiB) */
    sl_s3_conditional conditional; /* a write of a key this store read is conditional on
                                      the version read (If-Match), or on the key's absence
                                      (If-None-Match: *), so that of two writers of one shard
                                      the second fails with SL_ECONFLICT instead of losing
                                      the first's update (AUTO) */
};
/**
 * SL_S3_STORE_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_s3_store_opts
sl_s3_store_opts_default(void)
{
    struct sl_s3_store_opts o;
    memset(&o, 0, sizeof o);
    o.multipart_bytes = (uint64_t)64 << 20;
    o.part_bytes = (uint64_t)16 << 20;
    o.conditional = SL_S3_CONDITIONAL_AUTO;
    return o;
}
#define SL_S3_STORE_OPTS_DEFAULT (sl_s3_store_opts_default())

/**
 * Open the S3 store `url` names ("s3://bucket" or "s3://bucket/prefix"):
 * keys are objects under the prefix, read with GET (byte ranges, a shard's
 * index by a suffix range) through the same engine, window, retries and
 * fetching ahead as the HTTP store, written with one PUT per object (a
 * shard is never visible half-written), deleted with DELETE and listed
 * with ListObjectsV2, every request signed with AWS Signature Version 4
 * (credentials from the environment or ~/.aws, as the AWS CLI finds them;
 * secrets never appear in a message).  A 404 reads as absent, except
 * NoSuchBucket, which is an error; S3's error Code and Message are quoted
 * in messages.  Nothing is requested until a key is used.
 * @param http  NULL for SL_HTTP_STORE_OPTS_DEFAULT (window, retries, ...).
 * @param s3    NULL for SL_S3_STORE_OPTS_DEFAULT.
 * @return a store with one reference, or NULL with SL_EINVAL (not an s3://
 * URL, a bad bucket name, endpoint or region, an option out of range),
 * SL_ENOTFOUND (no credentials and not anonymous, a profile named that
 * does not exist: the message says where it looked), SL_EPARSE (a
 * malformed line of an AWS file: file and line), SL_EUNSUPPORTED (built
 * without libcurl) or SL_ENOMEM in `err`.
 * Thread-safety: any thread.
 */
SL_API sl_store *sl_store_open_s3(const char *url, const struct sl_http_store_opts *http,
                                  const struct sl_s3_store_opts *s3, struct sl_error *err);

/* Options of sl_store_open_url: one set per kind of store. */
struct sl_url_store_opts {
    struct sl_fs_store_opts fs;     /* for paths and file:// URLs */
    struct sl_http_store_opts http; /* for http://, https:// and s3:// */
    struct sl_s3_store_opts s3;     /* for s3:// */
};
/**
 * SL_URL_STORE_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_url_store_opts
sl_url_store_opts_default(void)
{
    struct sl_url_store_opts o;
    memset(&o, 0, sizeof o);
    o.fs = SL_FS_STORE_OPTS_DEFAULT;
    o.http = SL_HTTP_STORE_OPTS_DEFAULT;
    o.s3 = SL_S3_STORE_OPTS_DEFAULT;
    return o;
}
#define SL_URL_STORE_OPTS_DEFAULT (sl_url_store_opts_default())

/**
 * Whether `text` is a URL sluice opens remotely (http://, https:// or s3://).
 * @return true for those schemes (case-insensitive).
 * Thread-safety: any thread.
 */
SL_API bool sl_url_is_remote(const char *text);

/**
 * Whether `text` is an s3:// URL, the one remote scheme sluice writes.
 * @return true for "s3://..." (the scheme case-insensitive).
 * Thread-safety: any thread.
 */
SL_API bool sl_url_is_s3(const char *text);

/**
 * How the S3 nodes at URLs `a` and `b` relate, as sl_fs_path_overlap says
 * for resolved paths: the same bucket and prefix (trailing slashes
 * ignored), one prefix inside the other at a "/", or apart (also when
 * either is not an s3:// URL).  Compared as written: two endpoints serving
 * one bucket are not recognised.
 * @return SL_FS_SAME, SL_FS_INSIDE (`a` inside `b`), SL_FS_CONTAINS (`b`
 * inside `a`) or SL_FS_APART.
 * Thread-safety: any thread.
 */
SL_API sl_fs_overlap sl_s3_url_overlap(const char *a, const char *b);

/**
 * Open the store `text` names, choosing it by scheme: http:// and https://
 * open the HTTP store; s3:// the S3 store; file:///abs/path and a plain
 * path open the filesystem store.
 * @param opts  NULL for SL_URL_STORE_OPTS_DEFAULT.
 * @return a store with one reference, or NULL with what the chosen store's
 * opening returns, or SL_EUNSUPPORTED (another scheme, e.g. gs://, named in
 * the message).
 * Thread-safety: any thread.
 */
SL_API sl_store *sl_store_open_url(const char *text, const struct sl_url_store_opts *opts,
                                   struct sl_error *err);

/* What a remote store did since it was opened (all zero for local stores). */
struct sl_remote_stats {
    uint64_t requests;      /* requests completed */
    uint64_t attempts;      /* tries, retries included */
    uint64_t retries;       /* tries after a request's first */
    uint64_t bytes;         /* body bytes received */
    unsigned max_in_flight; /* the most requests in flight at once */
    unsigned window;        /* the window now (halved by 429/503, grown back by successes) */
};

/** Copy a store's remote counters into `out`.  Thread-safety: any thread. */
SL_API void sl_store_get_remote_stats(const sl_store *s, struct sl_remote_stats *out);

/* Whether a store's writes were conditional (sl_store_conditional_writes). */
typedef enum sl_store_conditional {
    SL_STORE_CONDITIONAL_NOT_APPLICABLE, /* not an S3 store, or a read-only one */
    SL_STORE_CONDITIONAL_NOT_KNOWN,      /* SL_S3_CONDITIONAL_AUTO before the first write (its
                                            probe has not run) */
    SL_STORE_CONDITIONAL_HONOURED,       /* writes carry If-None-Match: * or If-Match: the
                                            probe found the server honours them, or
                                            SL_S3_CONDITIONAL_ALWAYS said so */
    SL_STORE_CONDITIONAL_IGNORED,        /* the probe found the server ignores them (or could not
                                            tell): writes were unconditional, and of two writers
                                            of one key the last wins silently */
    SL_STORE_CONDITIONAL_OFF,            /* SL_S3_CONDITIONAL_NEVER: writes unconditional by
                                            choice */
} sl_store_conditional;

/**
 * Whether the writes of `s` were conditional, for a run's report: an S3
 * store opened with SL_S3_CONDITIONAL_AUTO knows only after its first
 * write (which probes the server once), ALWAYS reports HONOURED and NEVER
 * OFF from the start.  NOT_APPLICABLE for NULL, for stores of other kinds
 * and for read-only S3 stores.
 * Thread-safety: any thread.
 */
SL_API sl_store_conditional sl_store_conditional_writes(const sl_store *s);

#ifdef __cplusplus
}
#endif

#endif /* SL_REMOTE_H */
