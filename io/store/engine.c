/* SPDX-License-Identifier: MIT */
/*
 * The I/O engine (engine_internal.h): a thread that drives libcurl's multi
 * interface.  Submitted requests wait in a FIFO; up to `window` run at once
 * on reused connections (HTTP/2 multiplexed where the server offers it);
 * a finished transfer is judged (status, Content-Range, length) and either
 * completed through its callback or scheduled again after a backoff.
 *
 * DESIGN: only the engine's thread touches libcurl, the in-flight set and
 * the retry list; submitters touch only the FIFO, under `lock`, and wake
 * the thread with curl_multi_wakeup.  Retries wait a random time in
 * [0, min(cap, first * 2^k)) ("full jitter"), or what Retry-After says when
 * longer; a 429 or 503 halves the window, and each success grows it back by
 * one, so a throttling server sees fewer requests at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "curl_lib.h"
#include "engine_internal.h"
#include "s3_internal.h"
#include "store_internal.h"

/* The largest body whose room is made when its length is announced
 * (body_expect); larger ones grow as they come. */
#define BODY_RESERVE_MAX ((size_t)1 << 30)

/* libcurl's receive buffer per transfer (its default: 16 KiB): a body of
 * megabytes then comes in fewer reads and callbacks. */
#define RECV_BUFFER_BYTES (256L << 10)

/* What a transfer's answer said, gathered by the header callback. */
struct answer {
    long status;
    int64_t range_first, range_last, range_total; /* Content-Range; -1 when absent */
    int64_t length;                               /* Content-Length; -1 when absent */
    double retry_after;                           /* seconds; -1 when absent */
};

/* The state a transfer carries: its request and what the answer says. */
struct transfer {
    struct sl__http_req *req;
    struct answer a;
    bool overflow; /* the body grew past what was asked */
    char range[64];
    struct curl_slist *slist;     /* the request's headers */
    struct transfer *prev, *next; /* the engine's in-flight list */
    struct sl__http_headers hdrs; /* the signer's headers */
};

/* Free a transfer and its header list. */
static void
transfer_free(struct transfer *t)
{
    if (t == NULL)
        return;
    sl__curl_fn.slist_free_all(t->slist);
    free(t);
}

struct curl_engine {
    struct sl__engine base; /* first: the engine's operations */
    struct sl__engine_opts o;
    CURLM *multi;
    pthread_t thread;
    pthread_mutex_t lock;             /* guards head, tail, stop */
    struct sl__http_req *head, *tail; /* submitted, not started: FIFO */
    bool stop;                        /* destroy asked */
    /* The engine's thread only. */
    struct sl__http_req *waiting; /* retries not yet due */
    unsigned in_flight;           /* transfers in the multi handle */
    unsigned window;              /* the window now: 1 .. o.window */
    uint64_t rng;                 /* jitter */
    struct transfer *flying;      /* transfers in flight: a list */
    CURL **idle;                  /* easy handles to reuse */
    size_t n_idle;
    /* Counters: written by the engine's thread, read by any (relaxed). */
    _Atomic uint64_t n_requests, n_attempts, n_retries, n_bytes;
    _Atomic unsigned max_in_flight, window_now;
};

/* ---- per-transfer callbacks ------------------------------------------------------- */

static size_t
on_body(char *data, size_t size, size_t n, void *arg)
{
    struct transfer *t = arg;
    size_t bytes = size * n;
    if (sl_buf_append(&t->req->body, data, bytes, NULL) != SL_OK) {
        t->overflow = true;
        return 0; /* libcurl aborts the transfer: CURLE_WRITE_ERROR */
    }
    return bytes;
}

/* A successful answer's Content-Length: its body's room made at once, so
 * that the body is not copied each time its buffer doubles and each
 * page is faulted in once.  Only room: the body is still checked
 * against the length once it has come (answer_check), and a length
 * that cannot be had leaves the buffer to grow as bytes come. */
static void
body_expect(struct transfer *t, long long length)
{
    t->a.length = length;
    if (length <= 0 || t->a.status < 200 || t->a.status >= 300 ||
        (uint64_t)length > BODY_RESERVE_MAX)
        return;
    struct sl_buf *b = &t->req->body;
    if (b->capacity == 0)
        b->alloc = sl__allocator_filled(&b->alloc);
    if (sl_buf_reserve(b, b->size + (size_t)length, NULL) != SL_OK)
        return; /* the appends will say so if the bytes really come */
}

/* Parse "bytes a-b/total" (total may be "*"). */
static void
parse_content_range(const char *v, struct answer *a)
{
    long long first, last, total;
    if (sscanf(v, " bytes %lld-%lld/%lld", &first, &last, &total) == 3) {
        a->range_first = first;
        a->range_last = last;
        a->range_total = total;
    } else if (sscanf(v, " bytes */%lld", &total) == 1) {
        a->range_total = total;
    }
}

static size_t
on_header(char *data, size_t size, size_t n, void *arg)
{
    struct transfer *t = arg;
    size_t bytes = size * n;
    char line[256];
    size_t len = bytes < sizeof(line) - 1 ? bytes : sizeof(line) - 1;
    memcpy(line, data, len);
    line[len] = '\0';
    if (strncmp(line, "HTTP/", 5) == 0) { /* a new answer (after a redirect or 100) */
        t->req->etag[0] = '\0';
        t->a = (struct answer){.range_first = -1,
                               .range_last = -1,
                               .range_total = -1,
                               .length = -1,
                               .retry_after = -1};
        if (sscanf(line, "HTTP/%*s %ld", &t->a.status) != 1)
            t->a.status = 0;
        return bytes;
    }
    char *colon = strchr(line, ':');
    if (colon == NULL)
        return bytes;
    *colon = '\0';
    const char *v = colon + 1;
    if (strcasecmp(line, "Content-Range") == 0)
        parse_content_range(v, &t->a);
    else if (strcasecmp(line, "Content-Length") == 0)
        body_expect(t, strtoll(v, NULL, 10));
    else if (strcasecmp(line, "ETag") == 0) {
        while (*v == ' ' || *v == '\t')
            v++;
        size_t len_v = strcspn(v, "\r\n");
        if (len_v < sizeof(t->req->etag))
            snprintf(t->req->etag, sizeof(t->req->etag), "%.*s", (int)len_v, v);
    } else if (strcasecmp(line, "Retry-After") == 0) {
        char *end;
        double s = strtod(v, &end);
        if (end != v && s >= 0) /* HTTP-dates are not honoured: the backoff serves */
            t->a.retry_after = s;
    }
    return bytes;
}

/* ---- starting and judging transfers ---------------------------------------------- */

static void
range_text(const struct sl_byte_range *r, char *buf, size_t size)
{
    buf[0] = '\0';
    if (r->kind == SL_RANGE_SUFFIX)
        snprintf(buf, size, "-%" PRIu64, r->length);
    else if (r->kind == SL_RANGE_FROM && r->length == SL_RANGE_TO_END)
        snprintf(buf, size, "%" PRIu64 "-", r->offset);
    else if (r->kind == SL_RANGE_FROM)
        snprintf(buf, size, "%" PRIu64 "-%" PRIu64, r->offset, r->offset + r->length - 1);
}

bool
sl__http_header_add(struct sl__http_headers *h, const char *name, const char *value)
{
    if (h->n >= SL__HTTP_HEADERS_MAX)
        return false;
    size_t n = (size_t)snprintf(h->line[h->n], sizeof(h->line[0]), "%s: %s", name, value);
    if (n >= sizeof(h->line[0]))
        return false;
    h->n++;
    return true;
}

/* The header list of `req`'s try: the signer's, the submitter's, and for
 * bodies an explicit type and no "Expect: 100-continue" wait.  False with
 * the message set when the signer refuses or memory runs out. */
static bool
engine_headers(struct curl_engine *e, struct sl__http_req *req, struct transfer *t)
{
    t->hdrs.n = 0;
    if (e->o.sign != NULL &&
        !e->o.sign(e->o.sign_ctx, req, &t->hdrs, req->message, sizeof(req->message)))
        return false;
    bool ok = true;
    for (size_t i = 0; i < t->hdrs.n && ok; i++) {
        struct curl_slist *l = sl__curl_fn.slist_append(t->slist, t->hdrs.line[i]);
        ok = l != NULL;
        t->slist = l != NULL ? l : t->slist;
    }
    for (const char *const *h = req->headers; ok && h != NULL && *h != NULL; h++) {
        struct curl_slist *l = sl__curl_fn.slist_append(t->slist, *h);
        ok = l != NULL;
        t->slist = l != NULL ? l : t->slist;
    }
    if (ok && req->method != NULL &&
        (strcmp(req->method, "PUT") == 0 || strcmp(req->method, "POST") == 0)) {
        static const char *const body_headers[] = {"Expect:",
                                                   "Content-Type: application/octet-stream"};
        for (size_t i = 0; i < 2 && ok; i++) {
            struct curl_slist *l = sl__curl_fn.slist_append(t->slist, body_headers[i]);
            ok = l != NULL;
            t->slist = l != NULL ? l : t->slist;
        }
    }
    if (!ok)
        snprintf(req->message, sizeof(req->message), "%s: out of memory for its headers", req->url);
    return ok;
}

/* Start `req` on an easy handle; false when libcurl refuses. */
static bool
engine_start(struct curl_engine *e, struct sl__http_req *req)
{
    CURL *c = e->n_idle > 0 ? e->idle[--e->n_idle] : sl__curl_fn.easy_init();
    struct transfer *t = calloc(1, sizeof(*t));
    if (c == NULL || t == NULL) {
        if (c != NULL)
            sl__curl_fn.easy_cleanup(c);
        transfer_free(t);
        return false;
    }
    sl__curl_fn.easy_reset(c);
    t->req = req;
    t->a = (struct answer){-1, -1, -1, -1, -1, -1};
    req->body.size = 0;
    req->etag[0] = '\0';
    req->easy = c;
    if (!engine_headers(e, req, t)) {
        transfer_free(t);
        req->easy = NULL;
        e->idle[e->n_idle++] = c; /* taken from idle or made: there is room */
        return false;
    }
    const char *method = req->method != NULL ? req->method : "GET";
    if (strcmp(method, "GET") == 0)
        range_text(&req->range, t->range, sizeof(t->range));
    sl__curl_fn.easy_setopt(c, CURLOPT_URL, req->url);
    if (strcmp(method, "HEAD") == 0) {
        sl__curl_fn.easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        sl__curl_fn.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
            sl__curl_fn.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->send_n);
            sl__curl_fn.easy_setopt(c, CURLOPT_POSTFIELDS, req->send != NULL ? req->send : "");
        }
    }
    if (t->slist != NULL)
        sl__curl_fn.easy_setopt(c, CURLOPT_HTTPHEADER, t->slist);
    sl__curl_fn.easy_setopt(c, CURLOPT_PRIVATE, t);
    sl__curl_fn.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    sl__curl_fn.easy_setopt(c, CURLOPT_WRITEDATA, t);
    sl__curl_fn.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    sl__curl_fn.easy_setopt(c, CURLOPT_HEADERDATA, t);
    if (t->range[0] != '\0')
        sl__curl_fn.easy_setopt(c, CURLOPT_RANGE, t->range);
    sl__curl_fn.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    sl__curl_fn.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    sl__curl_fn.easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    sl__curl_fn.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(e->o.connect_timeout_s * 1000));
    sl__curl_fn.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, e->o.low_speed_bytes);
    sl__curl_fn.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, e->o.low_speed_s);
    sl__curl_fn.easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    sl__curl_fn.easy_setopt(c, CURLOPT_BUFFERSIZE, RECV_BUFFER_BYTES);
    /* HTTP/2 comes only over TLS (ALPN): there a new transfer waits for
     * the first connection to say whether it multiplexes.  In the clear
     * (HTTP/1.1) that wait would only put the first round trip to a host
     * before the others (a metadata lookup's three keys, a burst of
     * hints). */
    if (strncmp(req->url, "https://", 8) == 0)
        sl__curl_fn.easy_setopt(c, CURLOPT_PIPEWAIT, 1L);
    sl__curl_fn.easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    if (e->o.user_agent != NULL)
        sl__curl_fn.easy_setopt(c, CURLOPT_USERAGENT, e->o.user_agent);
    if (req->attempts == 0)
        req->started = sl__engine_now();
    req->attempts++;
    atomic_fetch_add_explicit(&e->n_attempts, 1, memory_order_relaxed);
    if (req->attempts > 1)
        atomic_fetch_add_explicit(&e->n_retries, 1, memory_order_relaxed);
    if (sl__curl_fn.multi_add_handle(e->multi, c) != CURLM_OK) {
        transfer_free(t);
        sl__curl_fn.easy_cleanup(c);
        req->easy = NULL;
        return false;
    }
    t->next = e->flying;
    if (e->flying != NULL)
        e->flying->prev = t;
    e->flying = t;
    e->in_flight++;
    if (e->in_flight > atomic_load_explicit(&e->max_in_flight, memory_order_relaxed))
        atomic_store_explicit(&e->max_in_flight, e->in_flight, memory_order_relaxed);
    return true;
}

/* The server's first words, printable, for messages. */
static void
body_excerpt(const struct sl_buf *b, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < b->size && n + 1 < size && n < 80; i++) {
        unsigned char ch = b->data[i];
        out[n++] = ch >= 0x20 && ch < 0x7f ? (char)ch : ' ';
    }
    out[n] = '\0';
}

/* Check a 206 or 200 answer against the range asked, slicing a 200's
 * whole body down to it.  SL_OK, or SL_ECORRUPT with the message set. */
static sl_status
answer_check(struct sl__http_req *req, const struct answer *a, long status)
{
    const struct sl_byte_range *r = &req->range;
    uint64_t got = req->body.size;
    if (a->length >= 0 && (uint64_t)a->length != got)
        goto mismatch; /* libcurl reports short bodies itself; never decode one */
    if (status == 200 || r->kind == SL_RANGE_ALL) {
        req->object_size = got;
        if (r->kind == SL_RANGE_ALL)
            return SL_OK;
        uint64_t off, n;
        if (sl__range_resolve(r, got, req->url, &off, &n, NULL) != SL_OK) {
            snprintf(req->message, sizeof(req->message),
                     "%s: range %" PRIu64 "+%" PRIu64 " past the end of its %" PRIu64 " bytes",
                     req->url, r->offset, r->length, got);
            return SL_EBOUNDS;
        }
        memmove(req->body.data, req->body.data + off, (size_t)n);
        req->body.size = (size_t)n;
        return SL_OK;
    }
    if (a->range_first < 0 || a->range_last < a->range_first ||
        (uint64_t)(a->range_last - a->range_first + 1) != got)
        goto mismatch;
    req->object_size = a->range_total >= 0 ? (uint64_t)a->range_total : 0;
    if (r->kind == SL_RANGE_SUFFIX) {
        if (a->range_total < 0 || a->range_last + 1 != a->range_total ||
            got != (r->length < (uint64_t)a->range_total ? r->length : (uint64_t)a->range_total))
            goto mismatch;
        return SL_OK;
    }
    uint64_t want_last = r->length == SL_RANGE_TO_END ? UINT64_MAX : r->offset + r->length - 1;
    if ((uint64_t)a->range_first != r->offset ||
        (want_last != UINT64_MAX && (uint64_t)a->range_last != want_last &&
         (a->range_total < 0 || (uint64_t)a->range_last + 1 != (uint64_t)a->range_total)))
        goto mismatch;
    if (want_last != UINT64_MAX && (uint64_t)a->range_last != want_last) {
        snprintf(req->message, sizeof(req->message),
                 "%s: bytes %" PRIu64 "-%" PRIu64 " asked, the object has %" PRId64, req->url,
                 r->offset, want_last, a->range_total);
        return SL_EBOUNDS;
    }
    return SL_OK;
mismatch:
    snprintf(req->message, sizeof(req->message),
             "%s: the answer (HTTP %ld, %" PRIu64 " bytes, Content-Range %" PRId64 "-%" PRId64
             "/%" PRId64 ", Content-Length %" PRId64 ") does not match the range asked",
             req->url, status, got, a->range_first, a->range_last, a->range_total, a->length);
    return SL_ECORRUPT;
}

/* Whether an HTTP status is worth another try. */
static bool
status_transient(long s)
{
    return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

static bool
curl_transient(CURLcode c)
{
    return c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST ||
           c == CURLE_OPERATION_TIMEDOUT || c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR ||
           c == CURLE_PARTIAL_FILE || c == CURLE_GOT_NOTHING || c == CURLE_HTTP2 ||
           c == CURLE_HTTP2_STREAM || c == CURLE_SSL_CONNECT_ERROR;
}

/* Judge a finished try: SL_OK or a final status (message set), or
 * SL_ECANCELED meaning "try again". */
static sl_status
engine_judge(struct curl_engine *e, struct transfer *t, CURLcode rc)
{
    struct sl__http_req *req = t->req;
    long status = 0;
    sl__curl_fn.easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status);
    req->http_status = status;
    req->retry_after = t->a.retry_after;
    char first[96];
    bool get = req->method == NULL || strcmp(req->method, "GET") == 0;
    if (rc == CURLE_OK && get && (status == 200 || status == 206))
        return answer_check(req, &t->a, status);
    if (rc == CURLE_OK && !get && status >= 200 && status < 300) {
        req->object_size = t->a.length >= 0 ? (uint64_t)t->a.length : 0;
        return SL_OK;
    }
    if (rc == CURLE_OK && (status == 412 || status == 409)) {
        body_excerpt(&req->body, first, sizeof(first));
        snprintf(req->message, sizeof(req->message),
                 "%s: HTTP %ld: changed by another writer (its condition failed): \"%s\"", req->url,
                 status, first);
        return SL_ECONFLICT;
    }
    if (rc == CURLE_OK && status == 404 && e->o.s3_errors &&
        memmem(req->body.data, req->body.size, "<Code>NoSuchBucket</Code>", 25) != NULL) {
        snprintf(req->message, sizeof(req->message), "%s: HTTP 404: no such bucket", req->url);
        return SL_EHTTP;
    }
    if (rc == CURLE_OK && (status == 404 || (status == 403 && e->o.missing_on_403))) {
        snprintf(req->message, sizeof(req->message), "%s: HTTP %ld: no such object", req->url,
                 status);
        return SL_ENOTFOUND;
    }
    if (rc == CURLE_OK && status == 416) {
        snprintf(req->message, sizeof(req->message),
                 "%s: HTTP 416: range %s past the end of the object (%" PRId64 " bytes)", req->url,
                 t->range, t->a.range_total);
        return SL_EBOUNDS;
    }
    bool transient = rc == CURLE_OK ? status_transient(status) : curl_transient(rc);
    struct sl__s3_error_body s3 = {.code = ""};
    struct sl_error ignored = SL_ERROR_INIT;
    if (rc == CURLE_OK && e->o.s3_errors && req->body.size > 0 &&
        sl__s3_error_parse((const char *)req->body.data, req->body.size, &s3, &ignored) == SL_OK &&
        s3.code[0] != '\0') {
        /* S3's own words; a refused signature names the key id used. */
        snprintf(req->message, sizeof(req->message),
                 "%s: HTTP %ld after %u attempt%s: S3 %s: %s%s%s%s", req->url, status,
                 req->attempts, req->attempts == 1 ? "" : "s", s3.code, s3.message,
                 status == 403 && e->o.key_id != NULL ? " (access key id " : "",
                 status == 403 && e->o.key_id != NULL ? e->o.key_id : "",
                 status == 403 && e->o.key_id != NULL ? ")" : "");
    } else if (rc == CURLE_OK) {
        body_excerpt(&req->body, first, sizeof(first));
        snprintf(req->message, sizeof(req->message), "%s: HTTP %ld after %u attempt%s: \"%s\"",
                 req->url, status, req->attempts, req->attempts == 1 ? "" : "s", first);
    } else {
        snprintf(req->message, sizeof(req->message), "%s: %s after %u attempt%s", req->url,
                 t->overflow ? "out of memory for the body" : sl__curl_fn.easy_strerror(rc),
                 req->attempts, req->attempts == 1 ? "" : "s");
    }
    if (t->overflow)
        return SL_ENOMEM;
    req->final = rc == CURLE_OK                   ? SL_EHTTP
                 : rc == CURLE_OPERATION_TIMEDOUT ? SL_ETIMEDOUT
                                                  : SL_ENETWORK;
    if (transient && req->attempts < e->o.max_attempts &&
        sl__engine_now() - req->started < e->o.deadline_s)
        return SL_ECANCELED;
    return req->final;
}

/* Schedule another try of `req` after the backoff; false (nothing
 * scheduled) when that try would start after the request's deadline. */
static bool
engine_retry_later(struct curl_engine *e, struct sl__http_req *req)
{
    double wait = sl__engine_backoff(&e->o, req->attempts, req->retry_after, &e->rng);
    if (req->http_status == 429 || req->http_status == 503) {
        e->window = e->window > 1 ? e->window / 2 : 1;
        atomic_store_explicit(&e->window_now, e->window, memory_order_relaxed);
    }
    req->due = sl__engine_now() + wait;
    if (req->due - req->started >= e->o.deadline_s)
        return false;
    req->next = e->waiting;
    e->waiting = req;
    return true;
}

static void
engine_complete(struct curl_engine *e, struct sl__http_req *req, sl_status st)
{
    req->status = st;
    if (st == SL_OK)
        req->message[0] = '\0';
    atomic_fetch_add_explicit(&e->n_requests, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->n_bytes, req->body.size, memory_order_relaxed);
    req->done(req, req->ctx);
}

static void
flying_unlink(struct curl_engine *e, struct transfer *t)
{
    if (t->prev != NULL)
        t->prev->next = t->next;
    else
        e->flying = t->next;
    if (t->next != NULL)
        t->next->prev = t->prev;
}

/* A transfer ended: judge it, then complete or retry its request. */
static void
engine_finish(struct curl_engine *e, CURL *c, CURLcode rc)
{
    struct transfer *t = NULL;
    sl__curl_fn.easy_getinfo(c, CURLINFO_PRIVATE, (char **)&t);
    sl__curl_fn.multi_remove_handle(e->multi, c);
    e->in_flight--;
    flying_unlink(e, t);
    struct sl__http_req *req = t->req;
    sl_status st = engine_judge(e, t, rc);
    req->easy = NULL;
    transfer_free(t);
    if (e->n_idle < e->o.window)
        e->idle[e->n_idle++] = c;
    else
        sl__curl_fn.easy_cleanup(c);
    if (st == SL_ECANCELED && engine_retry_later(e, req))
        return;
    if (st == SL_ECANCELED)
        st = req->final; /* no retry could start before the deadline */
    if (st == SL_OK && e->window < e->o.window) {
        e->window++;
        atomic_store_explicit(&e->window_now, e->window, memory_order_relaxed);
    }
    engine_complete(e, req, st);
}

/* ---- the thread --------------------------------------------------------------------- */

/* Move due retries to the front of the FIFO; the time until the next one. */
static double
engine_due(struct curl_engine *e, double now)
{
    double next = 1.0;
    struct sl__http_req **p = &e->waiting;
    while (*p != NULL) {
        struct sl__http_req *r = *p;
        if (r->due <= now) {
            *p = r->next;
            pthread_mutex_lock(&e->lock);
            r->next = e->head;
            e->head = r;
            if (e->tail == NULL)
                e->tail = r;
            pthread_mutex_unlock(&e->lock);
        } else {
            if (r->due - now < next)
                next = r->due - now;
            p = &r->next;
        }
    }
    return next;
}

/* Start what the window allows; true when the FIFO still holds some. */
static bool
engine_fill(struct curl_engine *e)
{
    for (;;) {
        pthread_mutex_lock(&e->lock);
        struct sl__http_req *r = e->in_flight < e->window ? e->head : NULL;
        if (r != NULL) {
            e->head = r->next;
            if (e->head == NULL)
                e->tail = NULL;
        }
        bool more = e->head != NULL;
        pthread_mutex_unlock(&e->lock);
        if (r == NULL)
            return more;
        if (!engine_start(e, r)) {
            snprintf(r->message, sizeof(r->message), "%s: cannot start a transfer", r->url);
            engine_complete(e, r, SL_ENOMEM);
        }
    }
}

/* Complete every request left with SL_ECANCELED (the engine stops). */
static void
engine_cancel_all(struct curl_engine *e)
{
    CURLMsg *m;
    int left;
    while ((m = sl__curl_fn.multi_info_read(e->multi, &left)) != NULL)
        (void)m;
    while (e->flying != NULL) {
        struct transfer *t = e->flying;
        flying_unlink(e, t);
        sl__curl_fn.multi_remove_handle(e->multi, t->req->easy);
        sl__curl_fn.easy_cleanup(t->req->easy);
        snprintf(t->req->message, sizeof(t->req->message), "%s: cancelled", t->req->url);
        engine_complete(e, t->req, SL_ECANCELED);
        transfer_free(t);
    }
    for (struct sl__http_req *r = e->waiting, *n; r != NULL; r = n) {
        n = r->next;
        engine_complete(e, r, SL_ECANCELED);
    }
    e->waiting = NULL;
    for (struct sl__http_req *r = e->head, *n; r != NULL; r = n) {
        n = r->next;
        snprintf(r->message, sizeof(r->message), "%s: cancelled", r->url);
        engine_complete(e, r, SL_ECANCELED);
    }
    e->head = e->tail = NULL;
}

static void *
engine_main(void *arg)
{
    struct curl_engine *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->lock);
        bool stop = e->stop;
        pthread_mutex_unlock(&e->lock);
        if (stop)
            break;
        double next = engine_due(e, sl__engine_now());
        bool more = engine_fill(e);
        int running;
        sl__curl_fn.multi_perform(e->multi, &running);
        CURLMsg *m;
        int left;
        while ((m = sl__curl_fn.multi_info_read(e->multi, &left)) != NULL)
            if (m->msg == CURLMSG_DONE)
                engine_finish(e, m->easy_handle, m->data.result);
        int timeout_ms = more && e->in_flight < e->window ? 0 : (int)(next * 1000) + 1;
        if (timeout_ms > 100)
            timeout_ms = 100;
        sl__curl_fn.multi_poll(e->multi, NULL, 0, timeout_ms, NULL);
    }
    engine_cancel_all(e);
    return NULL;
}

/* ---- the interface ------------------------------------------------------------------ */

static const struct sl__engine_ops curl_ops;

sl__engine *
sl__engine_create(const struct sl__engine_opts *o, struct sl_error *err)
{
    if (sl__curl_load(err) == NULL) /* libcurl, and its global state, once per process */
        return NULL;
    struct curl_engine *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory starting the I/O engine");
        return NULL;
    }
    e->base.ops = &curl_ops;
    e->o = *o;
    if (e->o.window == 0)
        e->o.window = 1;
    e->window = e->o.window;
    atomic_store_explicit(&e->window_now, e->window, memory_order_relaxed);
    e->rng = sl__engine_seed();
    e->idle = calloc(e->o.window, sizeof(CURL *));
    e->multi = sl__curl_fn.multi_init();
    if (e->idle == NULL || e->multi == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory starting the I/O engine");
        goto fail;
    }
    sl__curl_fn.multi_setopt(e->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    sl__curl_fn.multi_setopt(e->multi, CURLMOPT_MAXCONNECTS, (long)e->o.window);
    pthread_mutex_init(&e->lock, NULL);
    int rc = pthread_create(&e->thread, NULL, engine_main, e);
    if (rc != 0) {
        pthread_mutex_destroy(&e->lock);
        sl_error_set(err, SL_EIO, NULL, "cannot start the I/O engine's thread: %s", strerror(rc));
        goto fail;
    }
    return &e->base;
fail:
    if (e->multi != NULL)
        sl__curl_fn.multi_cleanup(e->multi);
    free(e->idle);
    free(e);
    return NULL;
}

static void
curl_destroy(sl__engine *base)
{
    struct curl_engine *e = (struct curl_engine *)base;
    pthread_mutex_lock(&e->lock);
    e->stop = true;
    pthread_mutex_unlock(&e->lock);
    sl__curl_fn.multi_wakeup(e->multi);
    pthread_join(e->thread, NULL);
    for (size_t i = 0; i < e->n_idle; i++)
        sl__curl_fn.easy_cleanup(e->idle[i]);
    sl__curl_fn.multi_cleanup(e->multi);
    pthread_mutex_destroy(&e->lock);
    free(e->idle);
    free(e);
}

static void
curl_submit(sl__engine *base, struct sl__http_req *req)
{
    struct curl_engine *e = (struct curl_engine *)base;
    pthread_mutex_lock(&e->lock);
    if (e->tail != NULL)
        e->tail->next = req;
    else
        e->head = req;
    e->tail = req;
    pthread_mutex_unlock(&e->lock);
    sl__curl_fn.multi_wakeup(e->multi);
}

static void
curl_stats(sl__engine *base, struct sl__engine_stats *out)
{
    const struct curl_engine *e = (const struct curl_engine *)base;
    out->requests = atomic_load_explicit(&e->n_requests, memory_order_relaxed);
    out->attempts = atomic_load_explicit(&e->n_attempts, memory_order_relaxed);
    out->retries = atomic_load_explicit(&e->n_retries, memory_order_relaxed);
    out->bytes = atomic_load_explicit(&e->n_bytes, memory_order_relaxed);
    out->max_in_flight = atomic_load_explicit(&e->max_in_flight, memory_order_relaxed);
    out->window = atomic_load_explicit(&e->window_now, memory_order_relaxed);
}

static const struct sl__engine_ops curl_ops = {
    .submit = curl_submit,
    .stats = curl_stats,
    .destroy = curl_destroy,
};
