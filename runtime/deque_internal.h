/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the runtime's Chase-Lev deque (deque.c), one per
 * worker.  Open to the runtime's tests.
 */
#ifndef SL_DEQUE_INTERNAL_H
#define SL_DEQUE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/pool.h>
#include <sluice/status.h>

#include "ck_glue_internal.h"
#include "counter_internal.h"

/* ---- Chase-Lev deque (deque.c) ----------------------------------------- */

/* A circular array of a deque; replaced by a larger one when full. */
struct sl__deque_array {
    ck_epoch_entry_t retire;          /* ck_epoch link while waiting to be freed */
    struct sl__deque *deque;          /* owner, whose counters count the reclamation */
    int64_t capacity;                 /* slots, a power of two */
    _Atomic(struct sl_task *) slot[]; /* task of index i is slot[i & (capacity - 1)] */
};

/* A work-stealing deque: the owner pushes and pops at the bottom, thieves
 * steal at the top.  See deque.c for the algorithm and its orderings. */
struct sl__deque {
    _Alignas(SL_CACHELINE) _Atomic int64_t top;    /* thieves CAS this */
    _Alignas(SL_CACHELINE) _Atomic int64_t bottom; /* only the owner writes this */
    int64_t top_cache;                             /* owner: a past value of top, <= top */
    _Atomic(struct sl__deque_array *) array;       /* current array; owner replaces it */
    const struct sl_allocator *alloc;              /* for arrays */
    struct sl__epoch_rec *rec;                     /* owner's epoch record */
    sl__counter n_grows;                           /* owner: arrays replaced */
    sl__counter n_reclaimed;                       /* owner: outgrown arrays freed */
    sl__counter n_last_races;                      /* owner: pops that raced for the last task */
    sl__counter n_last_races_lost;                 /* owner: ... lost to a thief */
};
_Static_assert(offsetof(struct sl__deque, bottom) >= SL_CACHELINE,
               "deque top and bottom share a cache line");

/* What a steal attempt found. */
enum sl__steal {
    SL__STEAL_OK,    /* a task was taken */
    SL__STEAL_EMPTY, /* the deque was empty */
    SL__STEAL_ABORT, /* lost a race; the deque may still hold tasks */
};

sl_status sl__deque_init(struct sl__deque *dq, int64_t capacity, const struct sl_allocator *alloc,
                         struct sl__epoch_rec *rec);
void sl__deque_fini(struct sl__deque *dq);
sl_status sl__deque_push_owner(struct sl__deque *dq, struct sl_task *task);
struct sl_task *sl__deque_pop_owner(struct sl__deque *dq);
enum sl__steal sl__deque_steal(struct sl__deque *dq, struct sl_task **out);
int64_t sl__deque_capacity(struct sl__deque *dq);

/* Cheetah's "fast test": plain loads, no fence, may be stale.  Thieves skip
 * deques that look empty before paying for a real steal. */
static inline bool
sl__deque_looks_empty(struct sl__deque *dq)
{
    return atomic_load_explicit(&dq->top, memory_order_relaxed) >=
           atomic_load_explicit(&dq->bottom, memory_order_relaxed);
}

#endif /* SL_DEQUE_INTERNAL_H */
