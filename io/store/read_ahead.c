/* SPDX-License-Identifier: MIT */
/*
 * The read-ahead window (read_ahead.h).  One lock guards the window; the
 * device is given hints outside it, by one thread at a time (`giving`):
 * whichever thread finds room gives waiting hints until the window is
 * full or none wait, rechecking under the lock, so a read that makes room
 * while another thread gives is never missed.
 */
#include "read_ahead.h"

#include <string.h>

/* Reads begun after a hint was given before it is let go unread, beyond
 * two per hint in the window (a hint is normally read within about as
 * many reads as there are hints before it). */
#define AGE_READS 64

/* Waiting hints a read looks through for its key (reads follow the hints'
 * order, so a key read early is near the head). */
#define SKIP_SCAN 256

void
sl__ahead_init(struct sl__ahead *a, uint64_t window, sl__ahead_give_fn *give, void *ctx,
               const struct sl_allocator *alloc)
{
    memset(a, 0, sizeof(*a));
    pthread_mutex_init(&a->lock, NULL);
    a->window = window;
    a->give = give;
    a->give_ctx = ctx;
    a->alloc = alloc != NULL ? *alloc : sl_allocator_default();
    atomic_init(&a->live, 0);
}

static void
hint_free(struct sl__ahead *a, struct sl__ahead_hint *h)
{
    if (h->key != NULL)
        sl_free(&a->alloc, h->key, strlen(h->key) + 1);
    if (h->ranges != NULL)
        sl_free(&a->alloc, h->ranges, h->n_ranges * sizeof(*h->ranges));
    h->key = NULL;
    h->ranges = NULL;
}

void
sl__ahead_fini(struct sl__ahead *a)
{
    for (size_t i = 0; i < a->n_given; i++)
        hint_free(a, &a->given[i]);
    for (size_t i = 0; i < a->n_queued; i++)
        hint_free(a, &a->queue[(a->head + i) % a->cap_queue]);
    sl_free(&a->alloc, a->given, a->cap_given * sizeof(*a->given));
    sl_free(&a->alloc, a->queue, a->cap_queue * sizeof(*a->queue));
    pthread_mutex_destroy(&a->lock);
}

static void
live_update(struct sl__ahead *a)
{
    /* Relaxed: a hint only, read to skip the lock when nothing is live. */
    atomic_store_explicit(&a->live, a->n_given + a->n_queued, memory_order_relaxed);
}

/* Let given hint `i` go (caller holds the lock). */
static void
given_remove(struct sl__ahead *a, size_t i)
{
    a->stats.ahead -= a->given[i].bytes;
    hint_free(a, &a->given[i]);
    memmove(&a->given[i], &a->given[i + 1], (a->n_given - i - 1) * sizeof(*a->given));
    a->n_given--;
}

/* Append `h` to the given hints (caller holds the lock); false when out of
 * memory (the hint was given, but is not counted). */
static bool
given_push(struct sl__ahead *a, const struct sl__ahead_hint *h)
{
    if (a->n_given == a->cap_given) {
        size_t cap = a->cap_given != 0 ? 2 * a->cap_given : 16;
        struct sl__ahead_hint *g = sl_alloc(&a->alloc, cap * sizeof(*g), 0);
        if (g == NULL)
            return false;
        if (a->n_given > 0)
            memcpy(g, a->given, a->n_given * sizeof(*g));
        sl_free(&a->alloc, a->given, a->cap_given * sizeof(*a->given));
        a->given = g;
        a->cap_given = cap;
    }
    a->given[a->n_given++] = *h;
    a->stats.ahead += h->bytes;
    if (a->stats.ahead > a->stats.most)
        a->stats.most = a->stats.ahead;
    return true;
}

/* Queue `h` behind the waiting hints (caller holds the lock); false when
 * the queue is full or out of memory. */
static bool
queue_push(struct sl__ahead *a, const struct sl__ahead_hint *h)
{
    if (a->n_queued == SL__AHEAD_QUEUE_MAX)
        return false;
    if (a->n_queued == a->cap_queue) {
        size_t cap = a->cap_queue != 0 ? 2 * a->cap_queue : 16;
        struct sl__ahead_hint *q = sl_alloc(&a->alloc, cap * sizeof(*q), 0);
        if (q == NULL)
            return false;
        for (size_t i = 0; i < a->n_queued; i++)
            q[i] = a->queue[(a->head + i) % a->cap_queue];
        sl_free(&a->alloc, a->queue, a->cap_queue * sizeof(*a->queue));
        a->queue = q;
        a->cap_queue = cap;
        a->head = 0;
    }
    a->queue[(a->head + a->n_queued) % a->cap_queue] = *h;
    a->n_queued++;
    return true;
}

/* Give waiting hints while the window has room, unless another thread is
 * at it.  Called with the lock held; returns with it held. */
static void
give_waiting(struct sl__ahead *a)
{
    if (a->giving)
        return;
    a->giving = true;
    while (a->n_queued > 0 && a->stats.ahead < a->window) {
        struct sl__ahead_hint h = a->queue[a->head];
        a->head = (a->head + 1) % a->cap_queue;
        a->n_queued--;
        if (h.key == NULL)
            continue; /* withdrawn (sl__ahead_read) */
        pthread_mutex_unlock(&a->lock);
        h.bytes = a->give(a->give_ctx, h.key, h.ranges, h.n_ranges);
        pthread_mutex_lock(&a->lock);
        h.seq = a->reads;
        if (h.bytes > 0)
            a->stats.given++;
        if (h.bytes == 0 || !given_push(a, &h))
            hint_free(a, &h);
    }
    a->giving = false;
    live_update(a);
}

void
sl__ahead_hint(struct sl__ahead *a, const char *key, const struct sl_byte_range *ranges, size_t n)
{
    struct sl__ahead_hint h = {.n_ranges = n};
    h.key = sl_strdup(&a->alloc, key);
    if (n > 0) {
        h.ranges = sl_alloc(&a->alloc, n * sizeof(*ranges), 0);
        if (h.ranges != NULL)
            memcpy(h.ranges, ranges, n * sizeof(*ranges));
    }
    pthread_mutex_lock(&a->lock);
    if (h.key == NULL || (n > 0 && h.ranges == NULL) || !queue_push(a, &h)) {
        a->stats.dropped++;
        hint_free(a, &h);
    }
    give_waiting(a);
    pthread_mutex_unlock(&a->lock);
}

void
sl__ahead_read(struct sl__ahead *a, const char *key)
{
    if (atomic_load_explicit(&a->live, memory_order_relaxed) == 0)
        return; /* no hint given or waiting: nothing to account */
    pthread_mutex_lock(&a->lock);
    a->reads++;
    bool found = false;
    for (size_t i = 0; i < a->n_given && !found; i++)
        if (strcmp(a->given[i].key, key) == 0) {
            given_remove(a, i);
            found = true;
        }
    for (size_t i = 0; i < a->n_queued && i < SKIP_SCAN && !found; i++) {
        struct sl__ahead_hint *h = &a->queue[(a->head + i) % a->cap_queue];
        if (h->key != NULL && strcmp(h->key, key) == 0) {
            hint_free(a, h);
            a->stats.skipped++;
            found = true;
        }
    }
    while (a->n_given > 0 && a->reads - a->given[0].seq > AGE_READS + 2 * (uint64_t)a->n_given) {
        given_remove(a, 0);
        a->stats.aged++;
    }
    give_waiting(a);
    pthread_mutex_unlock(&a->lock);
}

void
sl__ahead_stats(struct sl__ahead *a, struct sl__ahead_stats *out)
{
    pthread_mutex_lock(&a->lock);
    *out = a->stats;
    out->waiting = a->n_queued;
    pthread_mutex_unlock(&a->lock);
}
