/* SPDX-License-Identifier: MIT */
/*
 * The external queue: how tasks submitted by threads outside the pool (and
 * tasks they make ready) reach the workers.  Any thread pushes, workers pop.
 *
 * DESIGN
 * The queue is ck's bounded MPMC ring of pointers.  A push never fails and
 * never blocks on the workers: when the ring is full the task goes to an
 * overflow list under a mutex, which workers drain after the ring.  Order is
 * FIFO within the ring and within the list, roughly FIFO across them.
 * `n_overflow` lets workers skip the lock while the list is empty.
 *
 * A task crosses threads through the ring, whose ordering TSan cannot see
 * (ck_glue.c), so a push announces a release on the task and a pop an
 * acquire on it; the list's mutex is visible to TSan as it is.
 */
#include <stdatomic.h>

#include <sluice/task.h>

#include "ck_glue_internal.h"
#include "inject_internal.h"

sl_status
sl__inject_init(struct sl__inject *q, unsigned capacity, const struct sl_allocator *alloc)
{
    if (capacity < 4 || (capacity & (capacity - 1)) != 0)
        return SL_EINVAL;
    q->slots = sl_alloc_zeroed(alloc, capacity, sizeof(*q->slots), SL_CACHELINE);
    if (q->slots == NULL)
        return SL_ENOMEM;
    if (pthread_mutex_init(&q->overflow_lock, NULL) != 0) {
        sl_free(alloc, q->slots, (size_t)capacity * sizeof(*q->slots));
        return SL_ENOMEM;
    }
    q->capacity = capacity;
    sl__ck_ring_init(&q->ring, capacity);
    atomic_init(&q->n_overflow, 0);
    q->overflow_head = NULL;
    q->overflow_tail = NULL;
    return SL_OK;
}

void
sl__inject_fini(struct sl__inject *q, const struct sl_allocator *alloc)
{
    pthread_mutex_destroy(&q->overflow_lock);
    sl_free(alloc, q->slots, (size_t)q->capacity * sizeof(*q->slots));
}

/* Returns false when the task went to the overflow list. */
bool
sl__inject_push(struct sl__inject *q, struct sl_task *task)
{
    /* Pairs with the acquire in sl__inject_pop: the task's fields, written
     * before the push, are visible to the worker that pops it. */
    SL__TSAN_RELEASE(task);
    if (sl__ck_ring_enqueue_mpmc(&q->ring, q->slots, task))
        return true;
    task->next = NULL;
    pthread_mutex_lock(&q->overflow_lock);
    if (q->overflow_tail != NULL)
        q->overflow_tail->next = task;
    else
        q->overflow_head = task;
    q->overflow_tail = task;
    /* Relaxed: a hint read without the lock; the lock orders the list. */
    atomic_fetch_add_explicit(&q->n_overflow, 1, memory_order_relaxed);
    pthread_mutex_unlock(&q->overflow_lock);
    return false;
}

struct sl_task *
sl__inject_pop(struct sl__inject *q)
{
    void *p = NULL;
    if (sl__ck_ring_dequeue_mpmc(&q->ring, q->slots, &p)) {
        SL__TSAN_ACQUIRE(p);
        return p;
    }
    if (atomic_load_explicit(&q->n_overflow, memory_order_relaxed) == 0)
        return NULL;
    pthread_mutex_lock(&q->overflow_lock);
    struct sl_task *t = q->overflow_head;
    if (t != NULL) {
        q->overflow_head = t->next;
        if (q->overflow_head == NULL)
            q->overflow_tail = NULL;
        atomic_fetch_sub_explicit(&q->n_overflow, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&q->overflow_lock);
    return t;
}

bool
sl__inject_looks_empty(struct sl__inject *q)
{
    return sl__ck_ring_is_empty(&q->ring) &&
           atomic_load_explicit(&q->n_overflow, memory_order_relaxed) == 0;
}
