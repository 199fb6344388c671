/* SPDX-License-Identifier: MIT */
/*
 * Free lists of pool-owned tasks (the ones sl_pool_submit and
 * sl_task_group_submit hand out), so that submitting never calls malloc on
 * the hot path.
 *
 * DESIGN
 * Tasks are carved from slabs of SL__TASK_SLAB, allocated from the pool's
 * allocator and kept until the pool is destroyed.  Each worker keeps a free
 * list it alone touches (runtime_internal.h: sl__task_alloc_worker and
 * sl__task_free_worker).  A task is freed by the worker that ran it, which
 * is often not the one that allocated it, so lists drift: a worker holding
 * more than two batches hands one back to the depot, and a worker that runs
 * dry takes a batch from the depot, or loose tasks, or a new slab.  Threads
 * outside the pool take single tasks from the depot under its lock.  The
 * lock is taken once per batch on workers, never per task.
 */
#include <stdalign.h>

#include <sluice/task.h>

#include "runtime_internal.h"

#define SL__TASK_SLAB 256

/* A slab's header; its tasks follow, cache-line aligned. */
struct task_slab {
    struct task_slab *next; /* all slabs of the depot */
    _Alignas(64) struct sl_task tasks[SL__TASK_SLAB];
};

_Static_assert(sizeof(struct sl_task) == 64, "a task fills one 64-byte line");

sl_status
sl__task_depot_init(struct sl__task_depot *d)
{
    if (pthread_mutex_init(&d->lock, NULL) != 0)
        return SL_ENOMEM;
    d->batches = NULL;
    d->loose = NULL;
    d->slabs = NULL;
    atomic_init(&d->n_slabs, 0);
    return SL_OK;
}

void
sl__task_depot_fini(struct sl__task_depot *d, const struct sl_allocator *alloc)
{
    struct task_slab *s = d->slabs;
    while (s != NULL) {
        struct task_slab *next = s->next;
        sl_free(alloc, s, sizeof(*s));
        s = next;
    }
    pthread_mutex_destroy(&d->lock);
}

/* A new slab's tasks as a list, or NULL when out of memory.  Caller holds
 * the lock. */
static struct sl_task *
depot_new_slab_locked(sl_pool *pool)
{
    struct sl__task_depot *d = &pool->depot;
    struct task_slab *s = sl_alloc(&pool->alloc, sizeof(*s), alignof(struct task_slab));
    if (s == NULL)
        return NULL;
    s->next = d->slabs;
    d->slabs = s;
    sl__counter_add(&d->n_slabs, 1);
    for (unsigned i = 0; i < SL__TASK_SLAB; i++)
        s->tasks[i].next = i + 1 < SL__TASK_SLAB ? &s->tasks[i + 1] : NULL;
    return &s->tasks[0];
}

struct sl_task *
sl__task_alloc_external(sl_pool *pool)
{
    struct sl__task_depot *d = &pool->depot;
    pthread_mutex_lock(&d->lock);
    if (d->loose == NULL && d->batches != NULL) {
        d->loose = d->batches;
        d->batches = d->batches->link;
    }
    if (d->loose == NULL)
        d->loose = depot_new_slab_locked(pool);
    struct sl_task *t = d->loose;
    if (t != NULL)
        d->loose = t->next;
    pthread_mutex_unlock(&d->lock);
    return t;
}

void
sl__task_free_external(sl_pool *pool, struct sl_task *t)
{
    struct sl__task_depot *d = &pool->depot;
    pthread_mutex_lock(&d->lock);
    t->next = d->loose;
    d->loose = t;
    pthread_mutex_unlock(&d->lock);
}

/* The worker's list is empty: refill it, then hand out one task. */
struct sl_task *
sl__task_alloc_refill(struct sl__worker *w)
{
    struct sl__task_depot *d = &w->pool->depot;
    struct sl_task *list = NULL;
    unsigned n = 0;
    pthread_mutex_lock(&d->lock);
    if (d->batches != NULL) {
        list = d->batches;
        d->batches = list->link;
        n = SL__TASK_BATCH;
    } else if (d->loose != NULL) {
        /* Take up to a batch of loose tasks. */
        list = d->loose;
        struct sl_task *last = list;
        for (n = 1; n < SL__TASK_BATCH && last->next != NULL; n++)
            last = last->next;
        d->loose = last->next;
        last->next = NULL;
    } else {
        list = depot_new_slab_locked(w->pool);
        n = list != NULL ? SL__TASK_SLAB : 0;
    }
    pthread_mutex_unlock(&d->lock);
    if (list == NULL)
        return NULL;
    w->tasks.head = list->next;
    w->tasks.n = n - 1;
    return list;
}

/* The worker holds more than two batches: give one back. */
void
sl__task_free_spill(struct sl__worker *w)
{
    struct sl__task_depot *d = &w->pool->depot;
    struct sl_task *batch = w->tasks.head, *last = batch;
    for (unsigned i = 1; i < SL__TASK_BATCH; i++)
        last = last->next;
    w->tasks.head = last->next;
    w->tasks.n -= SL__TASK_BATCH;
    last->next = NULL;
    pthread_mutex_lock(&d->lock);
    batch->link = d->batches;
    d->batches = batch;
    pthread_mutex_unlock(&d->lock);
}
