/* SPDX-License-Identifier: MIT */
/*
 * Remote stores: every read goes through an I/O engine that keeps a window
 * of requests in flight.  The HTTP(S) store (read-only, keys as URLs under
 * a base URL or through the program's mapping, GETs on the libcurl engine,
 * engine.c) and stores of the program's own (sl_store_open_custom: keys
 * read through its get or get_async on engine_custom.c, writes and listing
 * passed to it) share the readers, the fetching ahead of hinted objects
 * within `prefetch_bytes`, and the cache of shard indexes.  A reader's
 * opening request fetches the range its caller reads first (the whole
 * object, or a shard's index by a suffix range) and keeps those bytes;
 * later reads of other ranges are requests of their own.  Only a 404 (or a
 * 403 with missing_on_403; SL_ENOTFOUND from a program's store) reads as
 * absent.
 */
#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sluice/remote.h>

#include "engine_internal.h"
#include "remote_internal.h"
#include "store_internal.h"

/* The longest URL the store builds, and the longest it fetches ahead. */
#define HTTP_URL_MAX 8192
#define HTTP_URL_MAX_AHEAD 2048

/* An object fetched ahead of its read (sl__remote_prefetch). */
struct http_ahead {
    struct http_ahead *next;
    struct http_store *h;
    char *key;                  /* owned */
    struct sl_byte_range range; /* what is fetched (SL_RANGE_ALL: the object) */
    char url[HTTP_URL_MAX_AHEAD];
    struct sl__http_req req; /* its body is handed to the reader */
    bool done;               /* under ahead_lock */
    uint64_t held;           /* bytes counted in ahead_bytes: the range's length, an
                                estimate for a whole object, then what came; under
                                ahead_lock */
    uint32_t parts;          /* hinted ranges it holds, coalesced (sl__remote_prefetch_ranges):
                                reads copy theirs out; 1: one read takes it whole */
    uint32_t taken;          /* of them, read; under ahead_lock */
    uint32_t readers;        /* reads copying from it now: not freed or evicted meanwhile;
                                under ahead_lock */
};

/* A first range fetched before (a shard's index): the store is read-only,
 * so opening the object again serves it without a request.  Slots are
 * direct-mapped by the key's hash. */
#define HTTP_HEADS 1024
struct http_head {
    char *key;                  /* owned; NULL: an empty slot */
    struct sl_byte_range range; /* the range asked */
    uint64_t size;              /* the object's size */
    uint64_t offset;            /* where the bytes start in the object */
    struct sl_buf bytes;
};

struct http_store {
    struct sl_store base;
    char *root;                       /* the base URL without a trailing '/' or the query; owned */
    char *query;                      /* "?..." kept after every key, or ""; owned */
    sl_store_url_fn *url_of;          /* the caller's key -> URL mapping, or NULL */
    void *url_ctx;                    /* its context; a program's own store: the impl's */
    const struct sl_store_impl *impl; /* a program's own store; NULL: HTTP */
    void *ext;                        /* a kind's own state (S3's), freed by ext_free */
    void (*ext_free)(void *ext);      /* after the engine stopped; NULL: none */
    sl__remote_seen_fn *seen;         /* told what each open found; NULL: none */
    sl__engine *engine;
    /* Objects fetched ahead, oldest first; `ahead_lock` guards the list,
     * each entry's `done` and `n_ahead`; `ahead_cond` says one is done. */
    pthread_mutex_t ahead_lock;
    pthread_cond_t ahead_cond;
    struct http_ahead *ahead, *ahead_tail;
    size_t n_ahead, max_ahead;
    /* Bytes in flight or fetched and not yet read, at most max_ahead_bytes
     * (one fetch may pass it when none is held); a whole object counts as
     * the mean size of those fetched so far until it comes. */
    uint64_t ahead_bytes, max_ahead_bytes;
    uint64_t whole_bytes, whole_n; /* whole objects fetched ahead: bytes, count */
    pthread_mutex_t heads_lock;    /* guards heads */
    struct http_head *heads;       /* HTTP_HEADS slots */
};

/* What a reader keeps: the bytes its opening request fetched. */
struct http_blob {
    struct sl_buf bytes; /* [offset, offset + bytes.size) of the object */
    uint64_t offset;
};

static struct http_store *
http_of(sl_store *s)
{
    return (struct http_store *)s;
}

/* Percent-encode what a URL path may not hold as it is; keys are checked
 * already (no "..", no empty components). */
static bool
url_for(const struct http_store *h, const char *key, char *out, size_t size)
{
    if (h->url_of != NULL)
        return h->url_of(h->url_ctx, key, out, size);
    if (h->impl != NULL) /* a program's own store: its engine reads keys */
        return (size_t)snprintf(out, size, "%s", key) < size;
    size_t n = (size_t)snprintf(out, size, "%s/", h->root);
    const char *p = key;
    for (; *p != '\0' && n + 4 < size; p++) {
        unsigned char c = (unsigned char)*p;
        if (isalnum(c) || strchr("-._~/", c) != NULL)
            out[n++] = (char)c;
        else
            n += (size_t)snprintf(out + n, size - n, "%%%02X", c);
    }
    /* A key cut short would name another object: refuse, never truncate. */
    if (*p != '\0' || n + strlen(h->query) + 1 >= size)
        return false;
    strcpy(out + n, h->query);
    return true;
}

/* ---- fetching ahead ---------------------------------------------------------------- */

static void
ahead_free(struct http_store *h, struct http_ahead *a)
{
    sl_buf_fini(&a->req.body);
    sl_free(&h->base.alloc, a->key, strlen(a->key) + 1);
    sl_free(&h->base.alloc, a, sizeof(*a));
}

/* On the engine's thread: the fetch ended. */
static void
ahead_done(struct sl__http_req *req, void *ctx)
{
    struct http_ahead *a = ctx;
    struct http_store *h = a->h;
    pthread_mutex_lock(&h->ahead_lock);
    a->done = true;
    /* Count what came instead of what was expected. */
    uint64_t got = req->status == SL_OK ? req->body.size : 0;
    h->ahead_bytes = h->ahead_bytes - a->held + got;
    a->held = got;
    if (a->range.kind == SL_RANGE_ALL && req->status == SL_OK) {
        h->whole_bytes += got;
        h->whole_n++;
    }
    pthread_cond_broadcast(&h->ahead_cond);
    pthread_mutex_unlock(&h->ahead_lock);
}

/* Unlink `a` (whose predecessor is `prev`, or NULL) from the list; locked. */
static void
ahead_unlink_locked(struct http_store *h, struct http_ahead *prev, struct http_ahead *a)
{
    if (prev != NULL)
        prev->next = a->next;
    else
        h->ahead = a->next;
    if (h->ahead_tail == a)
        h->ahead_tail = prev;
    h->n_ahead--;
    h->ahead_bytes -= a->held;
    a->held = 0;
}

/* The bytes a fetch of `r` is expected to hold; locked. */
static uint64_t
ahead_expect_locked(const struct http_store *h, const struct sl_byte_range *r)
{
    if (r->kind != SL_RANGE_ALL && r->length != SL_RANGE_TO_END)
        return r->length;
    return h->whole_n > 0 ? h->whole_bytes / h->whole_n : 0;
}

/* Whether a fetch of `expect` more bytes fits; locked. */
static bool
ahead_fits_locked(const struct http_store *h, uint64_t expect)
{
    if (h->n_ahead >= h->max_ahead)
        return false;
    return h->n_ahead == 0 ||
           (h->ahead_bytes <= h->max_ahead_bytes && expect <= h->max_ahead_bytes - h->ahead_bytes);
}

static bool
range_same(const struct sl_byte_range *a, const struct sl_byte_range *b)
{
    return a->kind == b->kind && a->offset == b->offset && a->length == b->length;
}

/* Whether [offset, offset + length) range `in` lies inside range `out`. */
static bool
range_within(const struct sl_byte_range *in, const struct sl_byte_range *out)
{
    return in->kind == SL_RANGE_FROM && out->kind == SL_RANGE_FROM &&
           in->length != SL_RANGE_TO_END && out->length != SL_RANGE_TO_END &&
           in->offset >= out->offset && in->offset - out->offset <= out->length &&
           in->length <= out->length - (in->offset - out->offset);
}

/* Start fetching range `r` of `key` ahead, for `parts` reads. */
static void
ahead_start(struct http_store *h, const char *key, struct sl_byte_range r, uint32_t parts)
{
    sl_store *s = &h->base;
    struct http_ahead *evicted = NULL;
    pthread_mutex_lock(&h->ahead_lock);
    bool known = false;
    for (struct http_ahead *a = h->ahead; a != NULL && !known; a = a->next)
        known = strcmp(a->key, key) == 0 &&
                (range_same(&a->range, &r) || (a->parts > 1 && range_within(&r, &a->range)));
    uint64_t expect = ahead_expect_locked(h, &r);
    /* Full: make room by dropping the oldest fetched object nobody read. */
    if (!known && !ahead_fits_locked(h, expect) && h->ahead != NULL && h->ahead->done &&
        h->ahead->readers == 0) {
        evicted = h->ahead;
        ahead_unlink_locked(h, NULL, evicted);
    }
    bool room = !known && ahead_fits_locked(h, expect);
    if (room) /* counted now, so that concurrent hints see it */
        h->ahead_bytes += expect;
    pthread_mutex_unlock(&h->ahead_lock);
    if (evicted != NULL)
        ahead_free(h, evicted);
    if (!room)
        return;
    struct http_ahead *a = sl_alloc(&s->alloc, sizeof(*a), 0);
    char *k = sl_strdup(&s->alloc, key);
    if (a == NULL || k == NULL || !url_for(h, key, a->url, sizeof(a->url))) {
        if (a != NULL)
            sl_free(&s->alloc, a, sizeof(*a));
        if (k != NULL)
            sl_free(&s->alloc, k, strlen(k) + 1);
        pthread_mutex_lock(&h->ahead_lock);
        h->ahead_bytes -= expect;
        pthread_mutex_unlock(&h->ahead_lock);
        return; /* a hint: the read fetches it itself */
    }
    a->next = NULL;
    a->h = h;
    a->key = k;
    a->range = r;
    a->done = false;
    a->held = expect;
    a->parts = parts;
    a->taken = a->readers = 0;
    a->req = (struct sl__http_req){
        .url = a->url, .range = r, .done = ahead_done, .ctx = a, .body = {.alloc = s->alloc}};
    pthread_mutex_lock(&h->ahead_lock);
    if (h->ahead_tail != NULL)
        h->ahead_tail->next = a;
    else
        h->ahead = a;
    h->ahead_tail = a;
    h->n_ahead++;
    pthread_mutex_unlock(&h->ahead_lock);
    sl__engine_submit(h->engine, &a->req);
}

void
sl__remote_prefetch(sl_store *s, const char *key, const struct sl_byte_range *range)
{
    struct http_store *h = http_of(s);
    if (h->max_ahead_bytes == 0)
        return; /* fetching ahead is off */
    ahead_start(h, key, range != NULL ? *range : (struct sl_byte_range){SL_RANGE_ALL, 0, 0}, 1);
}

static int
range_offset_cmp(const void *pa, const void *pb)
{
    const struct sl_byte_range *a = pa, *b = pb;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

void
sl__remote_prefetch_ranges(sl_store *s, const char *key, const struct sl_byte_range *ranges,
                           size_t n, uint64_t gap, uint64_t cap)
{
    struct http_store *h = http_of(s);
    if (h->max_ahead_bytes == 0)
        return;
    struct sl_byte_range sorted[SL__PREFETCH_RANGES_MAX];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m < SL__PREFETCH_RANGES_MAX && ranges[i].kind == SL_RANGE_FROM &&
            ranges[i].length != SL_RANGE_TO_END &&
            ranges[i].length <= UINT64_MAX - ranges[i].offset)
            sorted[m++] = ranges[i];
        else
            ahead_start(h, key, ranges[i], 1);
    }
    qsort(sorted, m, sizeof(*sorted), range_offset_cmp);
    /* Runs whose gaps are at most `gap`, each at most `cap` bytes (a larger
     * range alone): one request each, the reads of its parts copying
     * theirs out of it (ahead_take). */
    for (size_t i = 0; i < m;) {
        uint64_t start = sorted[i].offset, end = start + sorted[i].length;
        size_t j = i + 1;
        for (; j < m; j++) {
            uint64_t e = sorted[j].offset + sorted[j].length, new_end = e > end ? e : end;
            if ((sorted[j].offset > end && sorted[j].offset - end > gap) || new_end - start > cap)
                break;
            end = new_end;
        }
        ahead_start(h, key, j - i == 1 ? sorted[i] : sl_byte_range_at(start, end - start),
                    (uint32_t)(j - i));
        i = j;
    }
}

/*
 * Take what was fetched ahead for `range` of `key`, waiting until its
 * fetch ends; NULL when nothing was.  With `parts_ok` also a coalesced
 * fetch holding `range` (`*shared` set): it stays listed for the other
 * parts' reads, and the caller copies its part out and calls ahead_release.
 */
static struct http_ahead *
ahead_take(struct http_store *h, const char *key, const struct sl_byte_range *range, bool parts_ok,
           bool *shared)
{
    *shared = false;
    pthread_mutex_lock(&h->ahead_lock);
    struct http_ahead *prev = NULL, *a = h->ahead;
    while (a != NULL &&
           !(strcmp(a->key, key) == 0 && (a->parts > 1 ? parts_ok && range_within(range, &a->range)
                                                       : range_same(&a->range, range)))) {
        prev = a;
        a = a->next;
    }
    if (a != NULL) {
        *shared = a->parts > 1;
        if (*shared)
            a->readers++;
        else
            ahead_unlink_locked(h, prev, a);
        while (!a->done)
            pthread_cond_wait(&h->ahead_cond, &h->ahead_lock);
    }
    pthread_mutex_unlock(&h->ahead_lock);
    return a;
}

/* A read copied its part out of coalesced fetch `a`: once every part was
 * read and no read copies, it goes. */
static void
ahead_release(struct http_store *h, struct http_ahead *a)
{
    pthread_mutex_lock(&h->ahead_lock);
    a->readers--;
    a->taken++;
    bool last = a->taken >= a->parts && a->readers == 0;
    if (last) {
        struct http_ahead *prev = NULL, *x = h->ahead;
        while (x != NULL && x != a) {
            prev = x;
            x = x->next;
        }
        if (x != NULL)
            ahead_unlink_locked(h, prev, a);
        last = x != NULL; /* else evicted, and freed there */
    }
    pthread_mutex_unlock(&h->ahead_lock);
    if (last)
        ahead_free(h, a);
}

/* ---- shard indexes fetched before ------------------------------------------------ */

static size_t
head_slot(const char *key)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = key; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (size_t)(h % HTTP_HEADS);
}

/* Serve `key`'s first range `r` from what was fetched before into a new
 * blob; false when it was not fetched (or no memory). */
static bool
head_get(struct http_store *h, const char *key, const struct sl_byte_range *r,
         struct sl__reader *rd)
{
    struct http_blob *b = sl_alloc(&h->base.alloc, sizeof(*b), 0);
    if (b == NULL)
        return false;
    *b = (struct http_blob){.bytes = {.alloc = h->base.alloc}};
    bool hit = false;
    pthread_mutex_lock(&h->heads_lock);
    const struct http_head *e = &h->heads[head_slot(key)];
    if (e->key != NULL && strcmp(e->key, key) == 0 && range_same(&e->range, r) &&
        sl_buf_append(&b->bytes, e->bytes.data, e->bytes.size, NULL) == SL_OK) {
        hit = true;
        b->offset = e->offset;
        rd->size = e->size;
    }
    pthread_mutex_unlock(&h->heads_lock);
    if (!hit) {
        sl_buf_fini(&b->bytes);
        sl_free(&h->base.alloc, b, sizeof(*b));
        return false;
    }
    rd->blob = b;
    return true;
}

/* Keep a copy of what a reader's first range fetched; best effort. */
static void
head_put(struct http_store *h, const char *key, const struct sl_byte_range *r,
         const struct sl__reader *rd)
{
    const struct http_blob *b = rd->blob;
    struct http_head n = {
        .range = *r, .size = rd->size, .offset = b->offset, .bytes = {.alloc = h->base.alloc}};
    n.key = sl_strdup(&h->base.alloc, key);
    if (n.key == NULL || sl_buf_append(&n.bytes, b->bytes.data, b->bytes.size, NULL) != SL_OK) {
        if (n.key != NULL)
            sl_free(&h->base.alloc, n.key, strlen(n.key) + 1);
        sl_buf_fini(&n.bytes);
        return;
    }
    pthread_mutex_lock(&h->heads_lock);
    struct http_head *e = &h->heads[head_slot(key)];
    struct http_head old = *e;
    *e = n;
    pthread_mutex_unlock(&h->heads_lock);
    if (old.key != NULL)
        sl_free(&h->base.alloc, old.key, strlen(old.key) + 1);
    sl_buf_fini(&old.bytes);
}

bool
sl__remote_fetched(sl_store *s, const char *key)
{
    struct http_store *h = http_of(s);
    bool done = false;
    pthread_mutex_lock(&h->ahead_lock);
    for (const struct http_ahead *a = h->ahead; a != NULL; a = a->next)
        if (a->parts <= 1 && a->range.kind == SL_RANGE_ALL && strcmp(a->key, key) == 0) {
            done = a->done;
            break;
        }
    pthread_mutex_unlock(&h->ahead_lock);
    return done;
}

bool
sl__remote_has_first(sl_store *s, const char *key, const struct sl_byte_range *first)
{
    struct http_store *h = http_of(s);
    if (h->heads == NULL)
        return false;
    pthread_mutex_lock(&h->heads_lock);
    const struct http_head *e = &h->heads[head_slot(key)];
    bool hit = e->key != NULL && strcmp(e->key, key) == 0 && range_same(&e->range, first);
    pthread_mutex_unlock(&h->heads_lock);
    return hit;
}

/* ---- readers ----------------------------------------------------------------------- */

sl_status
sl__remote_reader_open(sl_store *s, const char *key, const struct sl_byte_range *first,
                       struct sl__reader *rd, struct sl_error *err)
{
    struct http_store *h = http_of(s);
    struct sl_byte_range all = {SL_RANGE_ALL, 0, 0};
    const struct sl_byte_range *r = first != NULL ? first : &all;
    bool partial = r->kind != SL_RANGE_ALL;
    bool shared;
    struct http_ahead *got = ahead_take(h, key, r, false, &shared);
    if (got != NULL) {
        sl_status st = got->req.status;
        if (h->seen != NULL)
            h->seen(h->ext, key, st, got->req.etag);
        if (st == SL_OK) {
            struct http_blob *b = sl_alloc(&s->alloc, sizeof(*b), 0);
            if (b != NULL) {
                uint64_t size = got->req.object_size, n = got->req.body.size;
                *b = (struct http_blob){.bytes = got->req.body,
                                        .offset = r->kind == SL_RANGE_SUFFIX ? size - n
                                                  : r->kind == SL_RANGE_FROM ? r->offset
                                                                             : 0};
                got->req.body = (struct sl_buf){.alloc = s->alloc};
                rd->size = size;
                rd->blob = b;
                if (partial && h->heads != NULL)
                    head_put(h, key, r, rd);
            } else {
                st = sl_error_set(err, SL_ENOMEM, NULL, "out of memory reading %s", got->url);
            }
        } else {
            sl_error_set(err, st, NULL, "%s", got->req.message);
        }
        ahead_free(h, got);
        return st;
    }
    if (partial && h->heads != NULL && head_get(h, key, r, rd))
        return SL_OK;
    char url[HTTP_URL_MAX];
    if (!url_for(h, key, url, sizeof(url)))
        return h->url_of != NULL
                   ? SL_ENOTFOUND /* the mapping holds no such key */
                   : sl_error_set(err, SL_EINVAL, NULL, "URL of key \"%s\" is too long", key);
    struct http_blob *b = sl_alloc(&s->alloc, sizeof(*b), 0);
    if (b == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory reading %s", url);
    *b = (struct http_blob){.bytes = {.alloc = s->alloc}};
    struct sl__http_req req = {.url = url, .range = *r, .body = b->bytes};
    sl_status st = sl__engine_run(h->engine, &req);
    b->bytes = req.body;
    uint64_t size = req.object_size;
    if (h->seen != NULL)
        h->seen(h->ext, key, st, req.etag);
    if (st != SL_OK)
        sl_error_set(err, st, NULL, "%s", req.message);
    if (st == SL_OK) {
        rd->size = size;
        b->offset = r->kind == SL_RANGE_SUFFIX ? size - b->bytes.size
                    : r->kind == SL_RANGE_FROM ? r->offset
                                               : 0;
        rd->blob = b;
        if (partial && h->heads != NULL)
            head_put(h, key, r, rd);
        return SL_OK;
    }
    sl_buf_fini(&b->bytes);
    sl_free(&s->alloc, b, sizeof(*b));
    return st;
}

sl_status
sl__remote_reader_read(struct sl__reader *rd, uint64_t offset, size_t n, void *dst,
                       struct sl_error *err)
{
    struct http_blob *b = rd->blob;
    if (offset >= b->offset && offset + n <= b->offset + b->bytes.size) {
        memcpy(dst, b->bytes.data + (offset - b->offset), n);
        return SL_OK;
    }
    struct http_store *h = http_of(rd->store);
    struct sl_byte_range r = sl_byte_range_at(offset, n);
    bool shared;
    struct http_ahead *ahead = ahead_take(h, rd->key, &r, true, &shared);
    if (ahead != NULL && shared) {
        /* A part of a coalesced fetch.  When it failed, or came short,
         * this read asks for its own bytes below: a chunk fails for what
         * its own request meets, as without coalescing. */
        bool whole = ahead->req.status == SL_OK && ahead->req.body.size == ahead->range.length;
        if (whole)
            memcpy(dst, ahead->req.body.data + (offset - ahead->range.offset), n);
        ahead_release(h, ahead);
        if (whole)
            return SL_OK;
        ahead = NULL;
    }
    if (ahead != NULL) {
        sl_status st = ahead->req.status;
        if (st == SL_OK && ahead->req.body.size != n)
            st =
                sl_error_set(err, SL_ECORRUPT, NULL, "%s: %zu bytes asked at %" PRIu64 ", %zu came",
                             ahead->url, n, offset, ahead->req.body.size);
        else if (st == SL_OK)
            memcpy(dst, ahead->req.body.data, n);
        else
            sl_error_set(err, st, NULL, "%s", ahead->req.message);
        ahead_free(h, ahead);
        return st;
    }
    char url[HTTP_URL_MAX];
    if (!url_for(h, rd->key, url, sizeof(url)))
        return sl_error_set(err, SL_EINVAL, NULL, "URL of key \"%s\" is too long", rd->key);
    struct sl_buf got = {.alloc = rd->store->alloc};
    sl_status st = sl__engine_get(h->engine, url, &r, &got, NULL, err);
    if (st == SL_OK && got.size != n)
        st = sl_error_set(err, SL_ECORRUPT, NULL, "%s: %zu bytes asked at %" PRIu64 ", %zu came",
                          url, n, offset, got.size);
    if (st == SL_OK)
        memcpy(dst, got.data, n);
    sl_buf_fini(&got);
    return st;
}

const uint8_t *
sl__remote_reader_view(struct sl__reader *rd, uint64_t offset, size_t n)
{
    const struct http_blob *b = rd->blob;
    if (b == NULL || offset < b->offset || offset + n > b->offset + b->bytes.size)
        return NULL; /* beyond the opening fetch: read (and fetch) it */
    return b->bytes.data + (offset - b->offset);
}

void
sl__remote_reader_close(struct sl__reader *rd)
{
    struct http_blob *b = rd->blob;
    if (b == NULL)
        return;
    sl_buf_fini(&b->bytes);
    sl_free(&rd->store->alloc, b, sizeof(*b));
    rd->blob = NULL;
}

#ifdef SL_HAVE_CURL
static sl_status
http_set(sl_store *s, const char *key, const void *data, size_t n, unsigned flags,
         struct sl_error *err)
{
    (void)data;
    (void)n;
    (void)flags;
    return sl_error_set(err, SL_EACCES, NULL, "cannot write \"%s\": the HTTP store %s is read-only",
                        key, http_of(s)->root);
}

static sl_status
http_del(sl_store *s, const char *key, struct sl_error *err)
{
    return sl_error_set(err, SL_EACCES, NULL,
                        "cannot delete \"%s\": the HTTP store %s is read-only", key,
                        http_of(s)->root);
}

static sl_status
http_list(sl_store *s, const char *prefix, sl_store_list_fn *fn, void *arg, struct sl_error *err)
{
    (void)fn;
    (void)arg;
    return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                        "cannot list \"%s\" under %s: HTTP has no listing", prefix,
                        http_of(s)->root);
}

#endif /* SL_HAVE_CURL */

void
sl__remote_stats(const sl_store *s, struct sl_remote_stats *out)
{
    struct sl__engine_stats e;
    sl__engine_get_stats(((const struct http_store *)s)->engine, &e);
    *out = (struct sl_remote_stats){.requests = e.requests,
                                    .attempts = e.attempts,
                                    .retries = e.retries,
                                    .bytes = e.bytes,
                                    .max_in_flight = e.max_in_flight,
                                    .window = e.window};
}

static void
heads_free(struct http_store *h)
{
    pthread_mutex_destroy(&h->heads_lock);
    if (h->heads == NULL)
        return;
    for (size_t i = 0; i < HTTP_HEADS; i++) {
        if (h->heads[i].key != NULL)
            sl_free(&h->base.alloc, h->heads[i].key, strlen(h->heads[i].key) + 1);
        sl_buf_fini(&h->heads[i].bytes);
    }
    sl_free(&h->base.alloc, h->heads, HTTP_HEADS * sizeof(struct http_head));
    h->heads = NULL;
}

/* Free what remote_new made (the engine is the caller's). */
static void
remote_free(struct http_store *h)
{
    struct sl_allocator alloc = h->base.alloc;
    pthread_cond_destroy(&h->ahead_cond);
    pthread_mutex_destroy(&h->ahead_lock);
    heads_free(h);
    if (h->root != NULL)
        sl_free(&alloc, h->root, strlen(h->root) + 1);
    if (h->query != NULL)
        sl_free(&alloc, h->query, strlen(h->query) + 1);
    sl_free(&alloc, h, sizeof(*h));
}

void
sl__remote_destroy(sl_store *s)
{
    struct http_store *h = http_of(s);
    sl__engine_destroy(h->engine); /* every fetch ahead has ended */
    while (h->ahead != NULL) {
        struct http_ahead *a = h->ahead;
        h->ahead = a->next;
        ahead_free(h, a);
    }
    const struct sl_store_impl *impl = h->impl;
    void *impl_ctx = h->url_ctx;
    if (h->ext_free != NULL)
        h->ext_free(h->ext);
    remote_free(h);
    if (impl != NULL && impl->destroy != NULL)
        impl->destroy(impl_ctx);
}

#ifdef SL_HAVE_CURL
static const struct sl__store_vtable http_vtable = {
    .kind = "http",
    .set_writers = 0, /* read only */
    .reader_open = sl__remote_reader_open,
    .reader_read = sl__remote_reader_read,
    .reader_close = sl__remote_reader_close,
    .reader_view = sl__remote_reader_view,
    .set = http_set,
    .del = http_del,
    .list = http_list,
    .prefetch = sl__remote_prefetch,
    .prefetch_ranges = sl__remote_prefetch_ranges,
    .has_first = sl__remote_has_first,
    .fetched = sl__remote_fetched,
    .remote_stats = sl__remote_stats,
    .destroy = sl__remote_destroy,
};

/* see store_internal.h */
bool
sl__http_url_for(const sl_store *s, const char *key, char *out, size_t size)
{
    if (s == NULL || s->vt != &http_vtable || key == NULL || size == 0)
        return false;
    return url_for((const struct http_store *)s, key, out, size);
}
#endif /* SL_HAVE_CURL */

/* Check the options; SL_OK or SL_EINVAL naming the field. */
sl_status
sl__remote_opts_check(const struct sl_http_store_opts *o, struct sl_error *err)
{
    if (o->io_concurrency < 1 || o->io_concurrency > 4096)
        return sl_error_set(err, SL_EINVAL, NULL, "io_concurrency %u is not in 1..4096",
                            o->io_concurrency);
    if (o->max_attempts < 1 || o->max_attempts > 1000)
        return sl_error_set(err, SL_EINVAL, NULL, "max_attempts %u is not in 1..1000",
                            o->max_attempts);
    if (!(o->backoff_first_s >= 0) || !(o->backoff_cap_s >= o->backoff_first_s) ||
        !(o->request_deadline_s > 0) || !(o->connect_timeout_s > 0))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "timing options out of range (backoff %g..%g s, deadline %g s, "
                            "connect timeout %g s)",
                            o->backoff_first_s, o->backoff_cap_s, o->request_deadline_s,
                            o->connect_timeout_s);
    return SL_OK;
}

/* Copy `n` bytes of `text` into a new string of the store's allocator. */
static char *
http_strndup(const struct sl_allocator *a, const char *text, size_t n)
{
    char *s = sl_alloc(a, n + 1, 0);
    if (s != NULL) {
        memcpy(s, text, n);
        s[n] = '\0';
    }
    return s;
}

/* A remote store of kind `vt` named by `root_n` bytes of `name` (a base
 * URL) with the query at `q_at` (`q_n` bytes), without its engine; NULL
 * with `err` set. */
static struct http_store *
remote_new(const struct sl__store_vtable *vt, const char *name, size_t root_n, size_t q_at,
           size_t q_n, unsigned window, uint64_t prefetch_bytes, const struct sl_allocator *a,
           struct sl_error *err)
{
    struct sl_allocator alloc = a != NULL ? *a : sl_allocator_default();
    struct http_store *h = sl_alloc(&alloc, sizeof(*h), 0);
    if (h == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory opening %s", name);
        return NULL;
    }
    memset(h, 0, sizeof(*h));
    sl__store_init(&h->base, vt, &alloc);
    h->root = http_strndup(&alloc, name, root_n);
    h->query = http_strndup(&alloc, name + q_at, q_n);
    h->max_ahead = 2 * (size_t)window;
    h->max_ahead_bytes = prefetch_bytes;
    /* Without memory for the slots, indexes are fetched each time. */
    h->heads = sl_alloc_zeroed(&alloc, HTTP_HEADS, sizeof(struct http_head), 0);
    pthread_mutex_init(&h->heads_lock, NULL);
    pthread_mutex_init(&h->ahead_lock, NULL);
    pthread_cond_init(&h->ahead_cond, NULL);
    if (h->root == NULL || h->query == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory opening %s", name);
        remote_free(h);
        return NULL;
    }
    h->base.given = h->root;
    return h;
}

#ifdef SL_HAVE_CURL
sl_store *
sl__remote_open_curl(const struct sl__store_vtable *vt, const char *root,
                     const struct sl__engine_opts *eo, uint64_t prefetch_bytes,
                     const struct sl_allocator *alloc, void *ext, void (*ext_free)(void *ext),
                     sl__remote_seen_fn *seen, struct sl_error *err)
{
    size_t n = strlen(root);
    struct http_store *h = remote_new(vt, root, n, n, 0, eo->window, prefetch_bytes, alloc, err);
    if (h == NULL)
        return NULL;
    h->engine = sl__engine_create(eo, err);
    if (h->engine == NULL) {
        remote_free(h);
        return NULL;
    }
    h->ext = ext;
    h->ext_free = ext_free;
    h->seen = seen;
    return &h->base;
}

void *
sl__remote_ext(const sl_store *s)
{
    return ((const struct http_store *)s)->ext;
}

sl__engine *
sl__remote_engine(const sl_store *s)
{
    return ((const struct http_store *)s)->engine;
}

bool
sl__remote_url_for(const sl_store *s, const char *key, char *out, size_t size)
{
    return url_for((const struct http_store *)s, key, out, size);
}

/* The HTTP store around a root URL (`root_n` bytes of `url`) and query, or
 * a mapping (`url_of`); NULL with `err` set. */
static sl_store *
http_open(const char *url, size_t root_n, size_t q_at, size_t q_n, sl_store_url_fn *url_of,
          void *url_ctx, const struct sl_http_store_opts *o, struct sl_error *err)
{
    if (sl__remote_opts_check(o, err) != SL_OK)
        return NULL;
    struct http_store *h = remote_new(&http_vtable, url, root_n, q_at, q_n, o->io_concurrency,
                                      o->prefetch_bytes, o->alloc, err);
    if (h == NULL)
        return NULL;
    h->url_of = url_of;
    h->url_ctx = url_ctx;
    struct sl__engine_opts eo = {.window = o->io_concurrency,
                                 .max_attempts = o->max_attempts,
                                 .backoff_first_s = o->backoff_first_s,
                                 .backoff_cap_s = o->backoff_cap_s,
                                 .deadline_s = o->request_deadline_s,
                                 .connect_timeout_s = o->connect_timeout_s,
                                 .low_speed_bytes = o->low_speed_bytes,
                                 .low_speed_s = o->low_speed_s,
                                 .missing_on_403 = o->missing_on_403,
                                 .user_agent = "sluice"};
    h->engine = sl__engine_create(&eo, err);
    if (h->engine == NULL) {
        remote_free(h);
        return NULL;
    }
    return &h->base;
}

sl_store *
sl_store_open_http(const char *url, const struct sl_http_store_opts *opts, struct sl_error *err)
{
    struct sl_http_store_opts o = opts != NULL ? *opts : SL_HTTP_STORE_OPTS_DEFAULT;
    if (url == NULL ||
        (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)) {
        sl_error_set(err, SL_EINVAL, NULL, "\"%s\" is not an http:// or https:// URL",
                     url != NULL ? url : "(null)");
        return NULL;
    }
    if (!sl__url_check(url, err))
        return NULL;
    size_t n = strcspn(url, "?#"), q = url[n] == '?' ? strcspn(url + n, "#") : 0;
    size_t root_n = n;
    while (root_n > 0 && url[root_n - 1] == '/')
        root_n--;
    return http_open(url, root_n, n, q, NULL, NULL, &o, err);
}

sl_store *
sl_store_open_http_mapped(sl_store_url_fn *url_of, void *ctx, const struct sl_http_store_opts *opts,
                          struct sl_error *err)
{
    struct sl_http_store_opts o = opts != NULL ? *opts : SL_HTTP_STORE_OPTS_DEFAULT;
    if (url_of == NULL) {
        sl_error_set(err, SL_EINVAL, NULL, "a mapped HTTP store needs a key -> URL function");
        return NULL;
    }
    static const char name[] = "mapped HTTP store";
    return http_open(name, sizeof(name) - 1, 0, 0, url_of, ctx, &o, err);
}
#endif /* SL_HAVE_CURL */

/* ---- stores of the program's own ---------------------------------------------------- */

static const struct sl_store_impl *
impl_of(sl_store *s)
{
    return http_of(s)->impl;
}

static sl_status
custom_set(sl_store *s, const char *key, const void *data, size_t n, unsigned flags,
           struct sl_error *err)
{
    (void)flags;
    const struct sl_store_impl *impl = impl_of(s);
    if (impl->set == NULL)
        return sl_error_set(err, SL_EACCES, NULL, "cannot write \"%s\": the store %s is read-only",
                            key, http_of(s)->root);
    return impl->set(http_of(s)->url_ctx, key, data, n, err);
}

static sl_status
custom_del(sl_store *s, const char *key, struct sl_error *err)
{
    const struct sl_store_impl *impl = impl_of(s);
    if (impl->del == NULL)
        return sl_error_set(err, SL_EACCES, NULL, "cannot delete \"%s\": the store %s is read-only",
                            key, http_of(s)->root);
    return impl->del(http_of(s)->url_ctx, key, err);
}

static sl_status
custom_list(sl_store *s, const char *prefix, sl_store_list_fn *fn, void *arg, struct sl_error *err)
{
    const struct sl_store_impl *impl = impl_of(s);
    if (impl->list == NULL)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "cannot list \"%s\" under %s: the store has no listing", prefix,
                            http_of(s)->root);
    return impl->list(http_of(s)->url_ctx, prefix, fn, arg, err);
}

static const struct sl__store_vtable custom_vtable = {
    .kind = "custom",
    .set_writers = 4, /* a program's write may well wait on a device or a network */
    .reader_open = sl__remote_reader_open,
    .reader_read = sl__remote_reader_read,
    .reader_close = sl__remote_reader_close,
    .reader_view = sl__remote_reader_view,
    .set = custom_set,
    .del = custom_del,
    .list = custom_list,
    .prefetch = sl__remote_prefetch,
    .prefetch_ranges = sl__remote_prefetch_ranges,
    .has_first = sl__remote_has_first,
    .fetched = sl__remote_fetched,
    .remote_stats = sl__remote_stats,
    .destroy = sl__remote_destroy,
};

sl_store *
sl_store_open_custom(const struct sl_store_impl *impl, void *ctx,
                     const struct sl_custom_store_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_custom_store_opts o = opts != NULL ? *opts : SL_CUSTOM_STORE_OPTS_DEFAULT;
    if (impl == NULL || (impl->get == NULL && impl->get_async == NULL)) {
        sl_error_set(err, SL_EINVAL, NULL, "a store of the program's own needs get or get_async");
        return NULL;
    }
    struct sl_http_store_opts check = SL_HTTP_STORE_OPTS_DEFAULT;
    check.io_concurrency = o.io_concurrency;
    check.max_attempts = o.max_attempts;
    check.backoff_first_s = o.backoff_first_s;
    check.backoff_cap_s = o.backoff_cap_s;
    check.request_deadline_s = o.request_deadline_s;
    if (sl__remote_opts_check(&check, err) != SL_OK)
        return NULL;
    char name[80];
    int n = snprintf(name, sizeof(name), "%.64s://", impl->kind != NULL ? impl->kind : "custom");
    struct http_store *h = remote_new(&custom_vtable, name, (size_t)n, (size_t)n, 0,
                                      o.io_concurrency, o.prefetch_bytes, o.alloc, err);
    if (h == NULL)
        return NULL;
    h->impl = impl;
    h->url_ctx = ctx;
    struct sl__engine_opts eo = {.window = o.io_concurrency,
                                 .max_attempts = o.max_attempts,
                                 .backoff_first_s = o.backoff_first_s,
                                 .backoff_cap_s = o.backoff_cap_s,
                                 .deadline_s = o.request_deadline_s};
    h->engine = sl__engine_create_custom(&eo, impl, ctx, err);
    if (h->engine == NULL) {
        remote_free(h);
        return NULL;
    }
    return &h->base;
}
