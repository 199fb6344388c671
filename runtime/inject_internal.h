/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the runtime's external queue (inject.c): tasks
 * submitted from threads outside the pool.  Open to the runtime's tests.
 */
#ifndef SL_INJECT_INTERNAL_H
#define SL_INJECT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <ck_ring.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/pool.h>
#include <sluice/status.h>

/* ---- external queue (inject.c) ------------------------------------------ */

/* Multi-producer, multi-consumer queue of tasks from outside the pool: a
 * bounded ck_ring, plus a locked list for when the ring is full. */
struct sl__inject {
    struct ck_ring ring;                              /* ck's MPMC ring (its own padding) */
    struct ck_ring_buffer *slots;                     /* ring storage */
    unsigned capacity;                                /* ring slots, a power of two */
    _Alignas(SL_CACHELINE) _Atomic size_t n_overflow; /* tasks in the overflow list */
    pthread_mutex_t overflow_lock;                    /* guards the list */
    struct sl_task *overflow_head;                    /* oldest */
    struct sl_task *overflow_tail;                    /* newest */
};

sl_status sl__inject_init(struct sl__inject *q, unsigned capacity,
                          const struct sl_allocator *alloc);
void sl__inject_fini(struct sl__inject *q, const struct sl_allocator *alloc);
bool sl__inject_push(struct sl__inject *q, struct sl_task *task);
struct sl_task *sl__inject_pop(struct sl__inject *q);
bool sl__inject_looks_empty(struct sl__inject *q);

#endif /* SL_INJECT_INTERNAL_H */
