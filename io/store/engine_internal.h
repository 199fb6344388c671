/* SPDX-License-Identifier: MIT */
/*
 * The I/O engine under the remote stores: one thread drives libcurl's multi
 * interface and keeps a window of HTTP requests in flight, whatever the
 * number of threads that submit them.  Requests complete through a
 * callback on the engine's thread; a synchronous get is a submit and a wait.
 * Retries (exponential backoff with full jitter, Retry-After honoured, an
 * overall deadline per request) and the window's halving on 429/503 live
 * here, so every store above gets them.  Private to io/store.
 */
#ifndef SL_ENGINE_INTERNAL_H
#define SL_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/buf.h>
#include <sluice/error.h>
#include <sluice/store.h>

/* How the engine runs its requests: see struct sl_http_store_opts. */
struct sl__http_headers;
struct sl__http_req;
struct sl__engine_opts {
    unsigned window;          /* requests in flight at most */
    unsigned max_attempts;    /* tries per request, the first included */
    double backoff_first_s;   /* the first retry waits up to this */
    double backoff_cap_s;     /* no wait longer than this */
    double deadline_s;        /* a request gives up after this, retries included */
    double connect_timeout_s; /* per connection attempt */
    long low_speed_bytes;     /* a transfer slower than this many bytes per second ... */
    long low_speed_s;         /* ... for this many seconds is cut and retried */
    bool missing_on_403;      /* a 403 means "absent" (Ceph's gateway) */
    bool s3_errors;           /* a 404 naming NoSuchBucket is an error, not "absent";
                                 S3's <Code> and <Message> quoted in messages */
    const char *key_id;       /* S3: the access key id, named with a 403 (the secret
                                 never is); NULL: none.  Lives as long as the engine */
    const char *user_agent;   /* sent with every request */
    /* Called before each try of each request, on the engine's thread: add
     * the headers it needs (an S3 signature over the method, URL, payload
     * hash and req->sign_arg; a try signs anew, so a retry's date is
     * fresh).  False fails
     * the request with `message` (`msize` bytes) set.  NULL: none. */
    bool (*sign)(void *ctx, const struct sl__http_req *req, struct sl__http_headers *out,
                 char *message, size_t msize);
    void *sign_ctx;
};

typedef struct sl__engine sl__engine;
struct sl__http_req;

/* Headers a try sends besides the engine's own: "Name: value" lines. */
#define SL__HTTP_HEADERS_MAX 16
struct sl__http_headers {
    size_t n;
    char line[SL__HTTP_HEADERS_MAX][2048];
};

/* Add "name: value" to `h`; false when full or too long. */
bool sl__http_header_add(struct sl__http_headers *h, const char *name, const char *value);
struct sl__engine_stats;

/* What an engine does; every engine's struct starts with a struct
 * sl__engine pointing at its operations (the libcurl engine, engine.c; the
 * engine over a program's own store, engine_custom.c). */
struct sl__engine_ops {
    void (*submit)(sl__engine *e, struct sl__http_req *req); /* request reset already */
    void (*stats)(sl__engine *e, struct sl__engine_stats *out);
    void (*destroy)(sl__engine *e);
};
struct sl__engine {
    const struct sl__engine_ops *ops;
};

/* One request: a GET of `url`, or of the part `range` names. */
struct sl__http_req {
    /* Set by the submitter. */
    const char *url;            /* borrowed until done */
    struct sl_byte_range range; /* SL_RANGE_ALL: the whole object */
    const char *method;         /* NULL: GET; or HEAD, PUT, POST, DELETE */
    const void *send;           /* PUT and POST: the body; borrowed */
    size_t send_n;              /* ... its bytes */
    const char *const *headers; /* extra "Name: value" lines, NULL-terminated; borrowed; NULL:
                                   none */
    const char *payload_hash;   /* the body's SHA-256 in hex, for a signer; NULL: none */
    const void *sign_arg;       /* for the sign hook: what it signs besides the method, the URL's
                                   path and the payload hash (the S3 store: the query's
                                   parameters, raw, from which it built the URL); borrowed;
                                   NULL: none */
    void (*done)(struct sl__http_req *req, void *ctx); /* on the engine's thread */
    void *ctx;                                         /* passed to done */
    /* Set by the engine before done. */
    sl_status status;     /* SL_OK, SL_ENOTFOUND, SL_EHTTP, SL_ENETWORK, SL_ETIMEDOUT, ... */
    long http_status;     /* the last answer's status; 0 when none came */
    struct sl_buf body;   /* SL_OK: exactly the bytes asked for; owned by the submitter */
    uint64_t object_size; /* the whole object's size, when the server said it */
    unsigned attempts;    /* tries made */
    char etag[128];       /* the answer's ETag, quotes included; "" when none */
    char message[384];    /* on failure: the URL, the status, the attempts and the server's
                             first words */
    /* The engine's. */
    struct sl__http_req *next;
    void *easy;
    double due;          /* when a retry may start (monotonic seconds) */
    double started;      /* when the first try started */
    double retry_after;  /* the server's Retry-After, seconds; < 0 none */
    sl_status final;     /* the status should no retry follow */
    unsigned char wrote; /* the body's first bytes were kept for the message */
};

/*
 * Start the libcurl engine with its thread (engine.c; only with libcurl).
 * @return the engine, or NULL with SL_ENOMEM or SL_EIO (libcurl could not
 * start) in `err`.
 */
sl__engine *sl__engine_create(const struct sl__engine_opts *o, struct sl_error *err);

/*
 * Start an engine whose requests are reads of a program's own store
 * (engine_custom.c): `url` is the key, and each try calls the store's
 * get_async, or its get on one of `o->window` threads of the engine's.
 * @return the engine, or NULL with SL_ENOMEM or SL_EIO in `err`.
 */
sl__engine *sl__engine_create_custom(const struct sl__engine_opts *o,
                                     const struct sl_store_impl *impl, void *ctx,
                                     struct sl_error *err);

/* Monotonic seconds. */
double sl__engine_now(void);

/* A seed for sl__engine_backoff's generator. */
uint64_t sl__engine_seed(void);

/* How long to wait before try `attempts` + 1: random in [0, min(cap, first
 * x 2^(attempts - 1))) ("full jitter"), or `retry_after` (capped) when
 * longer; `rng` is the caller's generator state. */
double sl__engine_backoff(const struct sl__engine_opts *o, unsigned attempts, double retry_after,
                          uint64_t *rng);

/* Stop the thread (requests still in flight complete with SL_ECANCELED)
 * and free.  NULL is a no-op. */
void sl__engine_destroy(sl__engine *e);

/* Queue `req` (its output fields are reset); `req->done` runs once, on the
 * engine's thread.  Any thread. */
void sl__engine_submit(sl__engine *e, struct sl__http_req *req);

/*
 * GET `url` (or `range` of it) and wait: the bytes in `out`, the object's
 * size in `*object_size` (may be NULL).  Any thread.
 * @return SL_OK; SL_ENOTFOUND (404, or 403 with missing_on_403); SL_EHTTP,
 * SL_ENETWORK, SL_ETIMEDOUT (retries run out: the message names the URL,
 * the status and the attempts); SL_EBOUNDS (a range past the end: 416);
 * SL_ECORRUPT (an answer that does not match the range asked); SL_ENOMEM.
 */
sl_status sl__engine_get(sl__engine *e, const char *url, const struct sl_byte_range *range,
                         struct sl_buf *out, uint64_t *object_size, struct sl_error *err);

/* Submit `req` (its `done` and `ctx` are replaced) and wait until it
 * ends; its output fields hold the answer, `req->body` what came.  Any
 * thread.  @return req->status. */
sl_status sl__engine_run(sl__engine *e, struct sl__http_req *req);

/* Counters of an engine since it started. */
struct sl__engine_stats {
    uint64_t requests;      /* completed */
    uint64_t attempts;      /* tries, retries included */
    uint64_t retries;       /* tries after the first */
    uint64_t bytes;         /* body bytes received */
    unsigned max_in_flight; /* the most requests in flight at once */
    unsigned window;        /* the window now */
};

void sl__engine_get_stats(sl__engine *e, struct sl__engine_stats *out);

#endif /* SL_ENGINE_INTERNAL_H */
