/* SPDX-License-Identifier: MIT */
/*
 * Task groups: the count word that submits add to and finished tasks
 * subtract from, waking whoever sleeps on it; cancelling; and a thread
 * outside the pool sleeping until the count is zero.  Submitting and a
 * worker's wait (which runs other tasks meanwhile) sit above the workers,
 * in submit.c; this file sits below them, since a worker subtracts its
 * finished tasks here (sl__group_finish).
 *
 * DESIGN
 * A group's `state` is one 32-bit futex word: 4 x unfinished tasks, plus
 * bit 0 (a thread outside the pool sleeps on the word) and bit 1 (a worker
 * sleeps on the pool's event count waiting for the group).  A submit adds 4
 * before the task is queued (sl__group_add, runtime_internal.h); the task's
 * end subtracts 4 after its callback.  The finisher that takes the count to
 * zero wakes the sleepers the bits name, and touches nothing of the group
 * but its address from then on: the waiter may see zero, return and reuse
 * the storage at once.  A futex wake on a reused address at worst wakes
 * someone spuriously, which every futex waiter tolerates.
 */
#include <limits.h>
#include <stdatomic.h>

#include <sluice/task.h>

#include "group_internal.h"
#include "runtime_internal.h"

void
sl__group_finish(sl_pool *pool, struct sl_task_group *g, uint32_t n)
{
    /* Acq_rel: the release half publishes the tasks' writes to the waiter
     * (whose acquire load reads this or a later value of the same release
     * sequence of read-modify-writes). */
    uint32_t old = atomic_fetch_sub_explicit(&g->state, SL__GROUP_ONE * n, memory_order_acq_rel);
    if (sl__group_pending(old) != n || (old & SL__GROUP_SLEEP_MASK) == 0)
        return;
    /* From here on only &g->state as an address (see DESIGN). */
    if (old & SL__GROUP_SLEEP_FUTEX)
        sl__futex_wake(&g->state, INT_MAX);
    if (old & SL__GROUP_SLEEP_EC) {
        /* Seq_cst fence: pairs with the fence in sl__ec_prepare of the worker
         * that set the bit, so it sees the count at zero or we see it
         * announced (park.c). */
        atomic_thread_fence(memory_order_seq_cst);
        sl__ec_notify(&pool->ec, true);
    }
}

uint32_t
sl__group_announce_sleeper(struct sl_task_group *g, uint32_t bit)
{
    /* Acquire: pairs with the finishers' release when we read zero. */
    uint32_t s = atomic_load_explicit(&g->state, memory_order_acquire);
    while (sl__group_pending(s) != 0) {
        if ((s & bit) != 0)
            return s;
        /* Seq_cst: the bit must be in place before the sleeper's last look. */
        if (atomic_compare_exchange_weak_explicit(&g->state, &s, s | bit, memory_order_seq_cst,
                                                  memory_order_acquire))
            return s | bit;
    }
    return 0;
}

void
sl__group_wait_external(struct sl_task_group *g)
{
    for (;;) {
        uint32_t s = sl__group_announce_sleeper(g, SL__GROUP_SLEEP_FUTEX);
        if (s == 0)
            break;
        /* Returns at once if a finisher changed the word since. */
        sl__futex_wait(&g->state, s);
    }
}

void
sl__group_wait_end(struct sl_task_group *g)
{
    /* Relaxed: the count is zero, so no finisher reads the sleeper bits
     * any more. */
    atomic_fetch_and_explicit(&g->state, ~SL__GROUP_SLEEP_MASK, memory_order_relaxed);
}

void
sl_task_group_init(struct sl_task_group *group, sl_pool *pool)
{
    group->pool = pool;
    atomic_init(&group->state, 0);
    atomic_init(&group->canceled, 0);
}

void
sl_task_group_cancel(struct sl_task_group *group)
{
    /* Relaxed: a task that starts after seeing it runs cancelled; one that
     * started before runs normally, both within the contract. */
    atomic_store_explicit(&group->canceled, 1, memory_order_relaxed);
}

bool
sl_task_group_is_canceled(const struct sl_task_group *group)
{
    return sl__group_is_canceled(group);
}
