/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the runtime's task groups (group.c): the state
 * word's layout, the inline add on the submit path and the calls workers
 * and waiters make.  Open to the runtime's tests.
 */
#ifndef SL_GROUP_INTERNAL_H
#define SL_GROUP_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <sluice/pool.h>
#include <sluice/status.h>

/* ---- task groups (group.c) ----------------------------------------------
 * sl_task_group.state is 4 x unfinished tasks plus two sleeper bits; see
 * group.c.  Adding is inline: it is on every submit to a group. */
#define SL__GROUP_SLEEP_FUTEX 1u /* a thread outside the pool sleeps on the word */
#define SL__GROUP_SLEEP_EC 2u    /* a worker sleeps on the pool's event count */
#define SL__GROUP_SLEEP_MASK 3u
#define SL__GROUP_ONE 4u /* one unfinished task */
/* Unfinished tasks at most; far below 2^30, so concurrent adds that pass
 * the check cannot wrap the count. */
#define SL__GROUP_MAX_PENDING ((uint32_t)1 << 29)

static inline uint32_t
sl__group_pending(uint32_t state)
{
    return state / SL__GROUP_ONE;
}

/* Count one more unfinished task, before it is queued.  SL_EOVERFLOW when
 * the group has SL__GROUP_MAX_PENDING already. */
static inline sl_status
sl__group_add(struct sl_task_group *g)
{
    /* Relaxed: the add is ordered before the task's end by the queue that
     * carries the task (release push, acquire pop), and before the
     * submitter's own wait by program order. */
    uint32_t old = atomic_fetch_add_explicit(&g->state, SL__GROUP_ONE, memory_order_relaxed);
    if (sl__group_pending(old) >= SL__GROUP_MAX_PENDING) {
        atomic_fetch_sub_explicit(&g->state, SL__GROUP_ONE, memory_order_relaxed);
        return SL_EOVERFLOW;
    }
    return SL_OK;
}

/* sl_task_group_is_canceled, inline for the submit path. */
static inline bool
sl__group_is_canceled(const struct sl_task_group *g)
{
    /* Relaxed: see sl_task_group_cancel. */
    return atomic_load_explicit((_Atomic uint32_t *)&g->canceled, memory_order_relaxed) != 0;
}

/* Subtract `n` finished tasks; the finisher that reaches zero wakes the
 * sleepers.  Called by workers (sl__worker_flush_done). */
void sl__group_finish(sl_pool *pool, struct sl_task_group *g, uint32_t n);
/* Set sleeper `bit` while the group has unfinished tasks.  Returns the
 * state with the bit set, or 0 once the count is zero. */
uint32_t sl__group_announce_sleeper(struct sl_task_group *g, uint32_t bit);
/* A thread outside the pool: sleep on the count word until it is zero. */
void sl__group_wait_external(struct sl_task_group *g);
/* After a wait saw zero: clear the sleeper bits for the next wait. */
void sl__group_wait_end(struct sl_task_group *g);

#endif /* SL_GROUP_INTERNAL_H */
