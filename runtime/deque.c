/* SPDX-License-Identifier: MIT */
/*
 * The Chase-Lev work-stealing deque with growable circular arrays, in C11
 * atomics with the memory orders of N. M. Lê, A. Pop, A. Cohen and F. Zappa
 * Nardelli, "Correct and Efficient Work-Stealing for Weak Memory Models",
 * PPoPP 2013 (Figure 1), which proves them sufficient.
 *
 * Thread contract: one owner thread calls sl__deque_push_owner and
 * sl__deque_pop_owner; any number of thieves call sl__deque_steal, each
 * inside an epoch section of its own record (sl__epoch_enter/leave).
 *
 * DESIGN
 * Indices only grow: `bottom` is the next slot the owner fills, `top` the
 * next one thieves take; the deque holds [top, bottom).  The owner takes
 * from the bottom by first reserving (bottom - 1), then fencing, then
 * reading top: when one task is left it races the thieves for it with a CAS
 * on top, like them, so every task is taken exactly once.  Indices are
 * signed so that `bottom - 1` of an empty deque at 0 compares below top.
 *
 * When the array is full the owner copies [top, bottom) into one twice as
 * large and publishes it.  A thief that loaded the old array may still read
 * a slot of it, so the old array is retired to ck_epoch and freed only once
 * every thief that could hold it has left its section.  The owner never
 * reads an array it retired.
 */
#include <stdatomic.h>
#include <stddef.h>

#include <sluice/task.h>

#include "deque_internal.h"

/* The largest array: 2^32 tasks (32 GiB of slots). */
#define SL__DEQUE_MAX_CAPACITY ((int64_t)1 << 32)

static struct sl__deque_array *
deque_array_new(struct sl__deque *dq, int64_t capacity)
{
    size_t bytes = sizeof(struct sl__deque_array) + (size_t)capacity * sizeof(struct sl_task *);
    struct sl__deque_array *a = sl_alloc(dq->alloc, bytes, SL_CACHELINE);
    if (a == NULL)
        return NULL;
    a->deque = dq;
    a->capacity = capacity;
    return a;
}

static void
deque_array_free(struct sl__deque_array *a)
{
    struct sl__deque *dq = a->deque;
    sl_free(dq->alloc, a,
            sizeof(struct sl__deque_array) + (size_t)a->capacity * sizeof(struct sl_task *));
}

/* ck_epoch callback: no thief can see the array any more. */
static void
deque_array_reclaim(ck_epoch_entry_t *entry)
{
    struct sl__deque_array *a =
        (struct sl__deque_array *)((char *)entry - offsetof(struct sl__deque_array, retire));
    /* Pairs with the release in sl__epoch_leave: every section that could
     * have read this array ended before the grace period that got us here. */
    SL__TSAN_ACQUIRE(&a->deque->rec->epoch->tsan_sync);
    sl__counter_add(&a->deque->n_reclaimed, 1);
    deque_array_free(a);
}

sl_status
sl__deque_init(struct sl__deque *dq, int64_t capacity, const struct sl_allocator *alloc,
               struct sl__epoch_rec *rec)
{
    if (capacity < 2 || capacity > SL__DEQUE_MAX_CAPACITY || (capacity & (capacity - 1)) != 0)
        return SL_EINVAL;
    dq->alloc = alloc;
    dq->rec = rec;
    struct sl__deque_array *a = deque_array_new(dq, capacity);
    if (a == NULL)
        return SL_ENOMEM;
    atomic_init(&dq->top, 0);
    atomic_init(&dq->bottom, 0);
    dq->top_cache = 0;
    atomic_init(&dq->array, a);
    atomic_init(&dq->n_grows, 0);
    atomic_init(&dq->n_reclaimed, 0);
    atomic_init(&dq->n_last_races, 0);
    atomic_init(&dq->n_last_races_lost, 0);
    return SL_OK;
}

void
sl__deque_fini(struct sl__deque *dq)
{
    /* No thread uses the deque any more: free what is retired, then the rest. */
    sl__ck_epoch_reclaim(dq->rec);
    deque_array_free(atomic_load_explicit(&dq->array, memory_order_relaxed));
}

int64_t
sl__deque_capacity(struct sl__deque *dq)
{
    return atomic_load_explicit(&dq->array, memory_order_relaxed)->capacity;
}

/* Replace full array `a` holding [t, b) by one twice as large. */
static struct sl__deque_array *
deque_grow(struct sl__deque *dq, struct sl__deque_array *a, int64_t t, int64_t b)
{
    if (a->capacity >= SL__DEQUE_MAX_CAPACITY)
        return NULL;
    struct sl__deque_array *na = deque_array_new(dq, a->capacity * 2);
    if (na == NULL)
        return NULL;
    int64_t old_mask = a->capacity - 1, new_mask = na->capacity - 1;
    for (int64_t i = t; i < b; i++) {
        struct sl_task *x = atomic_load_explicit(&a->slot[i & old_mask], memory_order_relaxed);
        atomic_store_explicit(&na->slot[i & new_mask], x, memory_order_relaxed);
    }
    /* Release: pairs with the acquire load of `array` in sl__deque_steal, so
     * a thief that sees `na` sees its capacity and the slots copied above. */
    atomic_store_explicit(&dq->array, na, memory_order_release);
    sl__counter_add(&dq->n_grows, 1);
    /* Thieves inside a section may still read `a`: ck_epoch frees it after
     * they leave.  Polling here reclaims arrays retired by earlier growth. */
    sl__ck_epoch_call(dq->rec, &a->retire, deque_array_reclaim);
    sl__ck_epoch_poll(dq->rec);
    return na;
}

sl_status
sl__deque_push_owner(struct sl__deque *dq, struct sl_task *task)
{
    int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed);
    struct sl__deque_array *a = atomic_load_explicit(&dq->array, memory_order_relaxed);
    /* Lê et al. load `top` here on every push.  `top` only grows, so an old
     * value understates the free room and is safe to decide with; reading
     * `top` only when the old value says "full" keeps the owner off the
     * line thieves CAS while they steal. */
    if (b - dq->top_cache > a->capacity - 1) {
        /* Acquire: pairs with the thieves' CAS on `top`, so slots they
         * emptied are not overwritten before their reads of them are done. */
        dq->top_cache = atomic_load_explicit(&dq->top, memory_order_acquire);
        if (b - dq->top_cache > a->capacity - 1) {
            a = deque_grow(dq, a, dq->top_cache, b);
            if (a == NULL)
                return SL_ENOMEM;
        }
    }
    atomic_store_explicit(&a->slot[b & (a->capacity - 1)], task, memory_order_relaxed);
    /* Release: pairs with the acquire load of `bottom` in sl__deque_steal,
     * so a thief that sees b + 1 sees `task` in its slot and everything the
     * owner wrote into the task before pushing it.  Lê et al. write a release
     * fence then a relaxed store; for the one reader that relies on it this
     * is the same order, and ThreadSanitizer, which ignores fences, sees it. */
    atomic_store_explicit(&dq->bottom, b + 1, memory_order_release);
    return SL_OK;
}

struct sl_task *
sl__deque_pop_owner(struct sl__deque *dq)
{
    int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed) - 1;
    struct sl__deque_array *a = atomic_load_explicit(&dq->array, memory_order_relaxed);
    /* Reserve slot b before looking at top. */
    atomic_store_explicit(&dq->bottom, b, memory_order_relaxed);
    /* Seq_cst: pairs with the seq_cst fence in sl__deque_steal.  Of the
     * owner's store of `bottom` and a thief's load of `top` (and vice versa)
     * at least one sees the other, so both cannot take slot b. */
    atomic_thread_fence(memory_order_seq_cst);
    int64_t t = atomic_load_explicit(&dq->top, memory_order_relaxed);
    dq->top_cache = t;
    if (t > b) {
        /* Empty: undo the reservation. */
        atomic_store_explicit(&dq->bottom, b + 1, memory_order_relaxed);
        return NULL;
    }
    struct sl_task *x = atomic_load_explicit(&a->slot[b & (a->capacity - 1)], memory_order_relaxed);
    if (t == b) {
        /* The last task: race the thieves for it on `top`.  Seq_cst pairs
         * with their CAS; the loser sees top moved and gives up. */
        sl__counter_add(&dq->n_last_races, 1);
        if (!atomic_compare_exchange_strong_explicit(&dq->top, &t, t + 1, memory_order_seq_cst,
                                                     memory_order_relaxed)) {
            sl__counter_add(&dq->n_last_races_lost, 1);
            x = NULL;
        }
        atomic_store_explicit(&dq->bottom, b + 1, memory_order_relaxed);
    }
    return x;
}

enum sl__steal
sl__deque_steal(struct sl__deque *dq, struct sl_task **out)
{
    /* Acquire: pairs with the CAS on `top` of other thieves and the owner. */
    int64_t t = atomic_load_explicit(&dq->top, memory_order_acquire);
    /* Seq_cst: pairs with the owner's fence in sl__deque_pop_owner (see there). */
    atomic_thread_fence(memory_order_seq_cst);
    /* Acquire: pairs with the release store of `bottom` in push. */
    int64_t b = atomic_load_explicit(&dq->bottom, memory_order_acquire);
    if (t >= b)
        return SL__STEAL_EMPTY;
    /* Acquire (Lê et al.: consume): pairs with the release store in
     * deque_grow, so the array's capacity and slots are visible. */
    struct sl__deque_array *a = atomic_load_explicit(&dq->array, memory_order_acquire);
    struct sl_task *x = atomic_load_explicit(&a->slot[t & (a->capacity - 1)], memory_order_relaxed);
    /* Seq_cst: pairs with the owner's CAS for the last task and with other
     * thieves; only the winner of slot t returns it. */
    if (!atomic_compare_exchange_strong_explicit(&dq->top, &t, t + 1, memory_order_seq_cst,
                                                 memory_order_relaxed))
        return SL__STEAL_ABORT;
    *out = x;
    return SL__STEAL_OK;
}
