/* SPDX-License-Identifier: MIT */
/*
 * What every I/O engine shares (engine_internal.h): submitting through the
 * engine's operations, the synchronous get (a submit and a wait), the
 * clock and the retry backoff.  Built with or without libcurl.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "engine_internal.h"

double
sl__engine_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t
sl__engine_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (((uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull) ^ (uint64_t)ts.tv_sec) | 1;
}

/* xorshift64*: a uniform double in [0, 1). */
static double
backoff_random(uint64_t *rng)
{
    *rng ^= *rng >> 12;
    *rng ^= *rng << 25;
    *rng ^= *rng >> 27;
    return (double)((*rng * 2685821657736338717ull) >> 11) * 0x1p-53;
}

double
sl__engine_backoff(const struct sl__engine_opts *o, unsigned attempts, double retry_after,
                   uint64_t *rng)
{
    double cap = o->backoff_first_s * ldexp(1.0, (int)attempts - 1);
    if (cap > o->backoff_cap_s)
        cap = o->backoff_cap_s;
    double wait = backoff_random(rng) * cap;
    if (retry_after > wait)
        wait = retry_after < o->backoff_cap_s ? retry_after : o->backoff_cap_s;
    return wait;
}

void
sl__engine_destroy(sl__engine *e)
{
    if (e != NULL)
        e->ops->destroy(e);
}

void
sl__engine_submit(sl__engine *e, struct sl__http_req *req)
{
    req->status = SL_OK;
    req->http_status = 0;
    req->object_size = 0;
    req->attempts = 0;
    req->message[0] = '\0';
    req->next = NULL;
    req->easy = NULL;
    req->retry_after = -1;
    e->ops->submit(e, req);
}

void
sl__engine_get_stats(sl__engine *e, struct sl__engine_stats *out)
{
    e->ops->stats(e, out);
}

/* A synchronous get's wait. */
struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
};

static void
waiter_done(struct sl__http_req *req, void *ctx)
{
    (void)req;
    struct waiter *w = ctx;
    pthread_mutex_lock(&w->lock);
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

sl_status
sl__engine_run(sl__engine *e, struct sl__http_req *req)
{
    struct waiter w = {.done = false};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    req->done = waiter_done;
    req->ctx = &w;
    sl__engine_submit(e, req);
    pthread_mutex_lock(&w.lock);
    while (!w.done)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    return req->status;
}

sl_status
sl__engine_get(sl__engine *e, const char *url, const struct sl_byte_range *range,
               struct sl_buf *out, uint64_t *object_size, struct sl_error *err)
{
    struct waiter w = {.done = false};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    struct sl__http_req req = {.url = url, .done = waiter_done, .ctx = &w, .body = *out};
    req.range = range != NULL ? *range : (struct sl_byte_range){SL_RANGE_ALL, 0, 0};
    sl__engine_submit(e, &req);
    pthread_mutex_lock(&w.lock);
    while (!w.done)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    *out = req.body;
    if (object_size != NULL)
        *object_size = req.object_size;
    if (req.status != SL_OK)
        return sl_error_set(err, req.status, NULL, "%s", req.message);
    return SL_OK;
}
