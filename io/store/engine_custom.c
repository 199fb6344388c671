/* SPDX-License-Identifier: MIT */
/*
 * The engine over a program's own store (engine_internal.h,
 * sl_store_open_custom): each request is a read of a key through the
 * program's struct sl_store_impl, with the same window, retries with
 * backoff and deadline as the libcurl engine.  Reads start on the
 * engine's thread through get_async, or run through get on `window`
 * threads of the engine's own; sl_store_read_done (any thread) judges a
 * try and completes the request or schedules it again.
 *
 * DESIGN: one lock guards the FIFO of requests ready to start, the retries
 * waiting for their time, the count in flight and `stop`; one condition
 * wakes the scheduler and the workers.  A request's callback runs without
 * the lock.  Destroying waits until no read is in flight, so a program's
 * late sl_store_read_done never meets freed memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_internal.h"
#include "store_internal.h"

struct custom_engine {
    struct sl__engine base; /* first: the engine's operations */
    struct sl__engine_opts o;
    const struct sl_store_impl *impl;
    void *ctx;
    const char *kind;
    pthread_mutex_t lock;             /* guards everything below but the counters */
    pthread_cond_t cond;              /* work, a retry, a read ended or stop */
    struct sl__http_req *head, *tail; /* ready to start: FIFO */
    struct sl__http_req *waiting;     /* retries not yet due */
    unsigned in_flight;
    bool stop;
    uint64_t rng;
    pthread_t scheduler;
    pthread_t *workers; /* get only: `o.window` threads */
    unsigned n_workers;
    _Atomic uint64_t n_requests, n_attempts, n_retries, n_bytes;
    _Atomic unsigned max_in_flight;
};

/* One try in flight: what sl_store_read_done gets back. */
struct sl_store_read {
    struct custom_engine *e;
    struct sl__http_req *req;
};

static bool
status_transient(sl_status st)
{
    return st == SL_ENETWORK || st == SL_ETIMEDOUT || st == SL_EIO;
}

/* Check what a successful try returned against the range asked; SL_OK or
 * SL_ECORRUPT with the message set. */
static sl_status
answer_check(struct custom_engine *e, struct sl__http_req *req, uint64_t object_bytes)
{
    const struct sl_byte_range *r = &req->range;
    uint64_t got = req->body.size;
    const char *why = NULL;
    if (r->kind == SL_RANGE_ALL) {
        if (object_bytes != 0 && object_bytes != got)
            why = "a whole object whose size differs from the bytes given";
        object_bytes = got;
    } else if (r->kind == SL_RANGE_SUFFIX) {
        if (object_bytes < got || (got != r->length && got != object_bytes))
            why = "a suffix of another length than asked, or longer than the object";
    } else if (r->length != SL_RANGE_TO_END && got != r->length) {
        why = "a range of another length than asked";
    } else if (object_bytes != 0 && r->offset + got > object_bytes) {
        why = "a range reaching past the object's size";
    }
    if (why != NULL) {
        snprintf(req->message, sizeof(req->message),
                 "%s://%s: the store returned %s (%llu bytes, object of %llu)", e->kind, req->url,
                 why, (unsigned long long)got, (unsigned long long)object_bytes);
        return SL_ECORRUPT;
    }
    req->object_size = object_bytes;
    return SL_OK;
}

/* Complete `req` with `st`; without the lock. */
static void
complete(struct custom_engine *e, struct sl__http_req *req, sl_status st)
{
    req->status = st;
    if (st == SL_OK)
        req->message[0] = '\0';
    else
        req->body.size = 0;
    atomic_fetch_add_explicit(&e->n_requests, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->n_bytes, req->body.size, memory_order_relaxed);
    req->done(req, req->ctx);
}

/* A try of `req` ended with `st` (and `err`'s text): retry or complete. */
static void
try_ended(struct custom_engine *e, struct sl__http_req *req, sl_status st, uint64_t object_bytes,
          const char *text)
{
    if (st == SL_OK)
        st = answer_check(e, req, object_bytes);
    else if (st == SL_ENOTFOUND)
        snprintf(req->message, sizeof(req->message), "%s://%s: no such object", e->kind, req->url);
    else
        snprintf(req->message, sizeof(req->message), "%s://%s: %s after %u attempt%s", e->kind,
                 req->url, text != NULL && text[0] != '\0' ? text : sl_status_name(st),
                 req->attempts, req->attempts == 1 ? "" : "s");
    bool again = false;
    pthread_mutex_lock(&e->lock);
    if (status_transient(st) && req->attempts < e->o.max_attempts && !e->stop) {
        double now = sl__engine_now();
        req->due = now + sl__engine_backoff(&e->o, req->attempts, -1, &e->rng);
        if (req->due - req->started < e->o.deadline_s) {
            req->body.size = 0;
            req->next = e->waiting;
            e->waiting = req;
            e->in_flight--;
            again = true;
            pthread_cond_broadcast(&e->cond);
        }
    }
    pthread_mutex_unlock(&e->lock);
    if (again)
        return;
    /* The read counts as in flight until its callback returned, so that
     * destroying (which waits for none in flight) cannot free the engine
     * under it. */
    complete(e, req, st);
    pthread_mutex_lock(&e->lock);
    e->in_flight--;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
}

/* Count a try of `req` as started; locked. */
static void
try_begin_locked(struct custom_engine *e, struct sl__http_req *req)
{
    e->in_flight++;
    if (e->in_flight > atomic_load_explicit(&e->max_in_flight, memory_order_relaxed))
        atomic_store_explicit(&e->max_in_flight, e->in_flight, memory_order_relaxed);
    if (req->attempts++ == 0)
        req->started = sl__engine_now();
    else
        atomic_fetch_add_explicit(&e->n_retries, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->n_attempts, 1, memory_order_relaxed);
}

/* Pop the FIFO's head; locked. */
static struct sl__http_req *
pop_locked(struct custom_engine *e)
{
    struct sl__http_req *r = e->head;
    if (r != NULL) {
        e->head = r->next;
        if (e->head == NULL)
            e->tail = NULL;
        r->next = NULL;
    }
    return r;
}

/* Move due retries to the FIFO's front; the seconds until the next one
 * (1 when none waits).  Locked. */
static double
due_locked(struct custom_engine *e)
{
    double now = sl__engine_now(), next = 1.0;
    struct sl__http_req **p = &e->waiting;
    while (*p != NULL) {
        struct sl__http_req *r = *p;
        if (r->due <= now) {
            *p = r->next;
            r->next = e->head;
            e->head = r;
            if (e->tail == NULL)
                e->tail = r;
        } else {
            if (r->due - now < next)
                next = r->due - now;
            p = &r->next;
        }
    }
    return next;
}

static void
wait_locked(struct custom_engine *e, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(seconds * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&e->cond, &e->lock, &ts);
}

/* Start one try through get_async; without the lock. */
static void
start_async(struct custom_engine *e, struct sl__http_req *req)
{
    sl_store_read *rd = malloc(sizeof(*rd));
    if (rd == NULL) {
        try_ended(e, req, SL_ENOMEM, 0, "out of memory starting a read");
        return;
    }
    *rd = (struct sl_store_read){e, req};
    e->impl->get_async(e->ctx, req->url, &req->range, rd);
}

/* The scheduler: due retries to the FIFO, and (get_async) reads started
 * while the window allows. */
static void *
scheduler_main(void *arg)
{
    struct custom_engine *e = arg;
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        double next = due_locked(e);
        if (e->impl->get_async != NULL && e->head != NULL && e->in_flight < e->o.window) {
            struct sl__http_req *r = pop_locked(e);
            try_begin_locked(e, r);
            pthread_mutex_unlock(&e->lock);
            start_async(e, r);
            pthread_mutex_lock(&e->lock);
            continue;
        }
        if (e->head != NULL)
            pthread_cond_broadcast(&e->cond); /* the workers take it */
        wait_locked(e, next);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* A worker (get only): one read at a time, synchronously. */
static void *
worker_main(void *arg)
{
    struct custom_engine *e = arg;
    pthread_mutex_lock(&e->lock);
    for (;;) {
        while (!e->stop && e->head == NULL)
            pthread_cond_wait(&e->cond, &e->lock);
        if (e->stop)
            break;
        struct sl__http_req *r = pop_locked(e);
        try_begin_locked(e, r);
        pthread_mutex_unlock(&e->lock);
        uint64_t size = 0;
        struct sl_error err = SL_ERROR_INIT;
        sl_status st = e->impl->get(e->ctx, r->url, &r->range, &r->body, &size, &err);
        try_ended(e, r, st, size, err.text);
        pthread_mutex_lock(&e->lock);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

struct sl_buf *
sl_store_read_buf(sl_store_read *rd)
{
    return &rd->req->body;
}

void
sl_store_read_done(sl_store_read *rd, sl_status status, uint64_t object_bytes,
                   const struct sl_error *err)
{
    struct custom_engine *e = rd->e;
    struct sl__http_req *req = rd->req;
    free(rd);
    try_ended(e, req, status, object_bytes, err != NULL ? err->text : NULL);
}

static void
custom_submit(sl__engine *base, struct sl__http_req *req)
{
    struct custom_engine *e = (struct custom_engine *)base;
    pthread_mutex_lock(&e->lock);
    bool stopped = e->stop;
    if (!stopped) {
        if (e->tail != NULL)
            e->tail->next = req;
        else
            e->head = req;
        e->tail = req;
        pthread_cond_broadcast(&e->cond);
    }
    pthread_mutex_unlock(&e->lock);
    if (stopped) {
        snprintf(req->message, sizeof(req->message), "%s://%s: cancelled", e->kind, req->url);
        complete(e, req, SL_ECANCELED);
    }
}

static void
custom_stats(sl__engine *base, struct sl__engine_stats *out)
{
    struct custom_engine *e = (struct custom_engine *)base;
    out->requests = atomic_load_explicit(&e->n_requests, memory_order_relaxed);
    out->attempts = atomic_load_explicit(&e->n_attempts, memory_order_relaxed);
    out->retries = atomic_load_explicit(&e->n_retries, memory_order_relaxed);
    out->bytes = atomic_load_explicit(&e->n_bytes, memory_order_relaxed);
    out->max_in_flight = atomic_load_explicit(&e->max_in_flight, memory_order_relaxed);
    out->window = e->o.window;
}

/* Stop the threads (after every read in flight ended) and cancel what
 * has not started. */
static void
custom_stop(struct custom_engine *e, unsigned n_workers, bool scheduler)
{
    pthread_mutex_lock(&e->lock);
    e->stop = true;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    if (scheduler)
        pthread_join(e->scheduler, NULL);
    for (unsigned i = 0; i < n_workers; i++)
        pthread_join(e->workers[i], NULL);
    pthread_mutex_lock(&e->lock);
    while (e->in_flight > 0)
        pthread_cond_wait(&e->cond, &e->lock);
    struct sl__http_req *left = e->head, *waiting = e->waiting;
    e->head = e->tail = e->waiting = NULL;
    pthread_mutex_unlock(&e->lock);
    for (struct sl__http_req *lists[2] = {left, waiting}, **l = lists; l < lists + 2; l++)
        for (struct sl__http_req *r = *l, *n; r != NULL; r = n) {
            n = r->next;
            snprintf(r->message, sizeof(r->message), "%s://%s: cancelled", e->kind, r->url);
            complete(e, r, SL_ECANCELED);
        }
}

static void
custom_destroy(sl__engine *base)
{
    struct custom_engine *e = (struct custom_engine *)base;
    custom_stop(e, e->n_workers, true);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    free(e->workers);
    free(e);
}

static const struct sl__engine_ops custom_ops = {
    .submit = custom_submit,
    .stats = custom_stats,
    .destroy = custom_destroy,
};

sl__engine *
sl__engine_create_custom(const struct sl__engine_opts *o, const struct sl_store_impl *impl,
                         void *ctx, struct sl_error *err)
{
    struct custom_engine *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory starting a store's I/O engine");
        return NULL;
    }
    e->base.ops = &custom_ops;
    e->o = *o;
    if (e->o.window == 0)
        e->o.window = 1;
    e->impl = impl;
    e->ctx = ctx;
    e->kind = impl->kind != NULL ? impl->kind : "custom";
    e->rng = sl__engine_seed();
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    unsigned want = impl->get_async != NULL ? 0 : e->o.window;
    e->workers = want > 0 ? calloc(want, sizeof(pthread_t)) : NULL;
    int rc = want > 0 && e->workers == NULL ? ENOMEM : 0;
    if (rc == 0)
        rc = pthread_create(&e->scheduler, NULL, scheduler_main, e);
    bool scheduler = rc == 0;
    while (rc == 0 && e->n_workers < want) {
        rc = pthread_create(&e->workers[e->n_workers], NULL, worker_main, e);
        if (rc == 0)
            e->n_workers++;
    }
    if (rc == 0)
        return &e->base;
    custom_stop(e, e->n_workers, scheduler);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    free(e->workers);
    free(e);
    sl_error_set(err, rc == ENOMEM ? SL_ENOMEM : SL_EIO, NULL,
                 "cannot start the threads of a store's I/O engine: %s", strerror(rc));
    return NULL;
}
