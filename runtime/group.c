/* SPDX-License-Identifier: MIT */
/*
 * Submitting tasks, task groups (count, wait, cancel) and dependencies
 * between caller-provided tasks.
 *
 * DESIGN
 * A group's `state` is one 32-bit futex word: 4 x unfinished tasks, plus
 * bit 0 (a thread outside the pool sleeps on the word) and bit 1 (a worker
 * sleeps on the pool's event count waiting for the group).  A submit adds 4
 * before the task is queued; the task's end subtracts 4 after its callback.
 * The finisher that takes the count to zero wakes the sleepers the bits
 * name, and touches nothing of the group but its address from then on: the
 * waiter may see zero, return and reuse the storage at once.  A futex wake
 * on a reused address at worst wakes someone spuriously, which every futex
 * waiter tolerates.
 *
 * A caller-provided task counts one dependency for "not yet submitted",
 * so no predecessor can start it before its submit; the submit removes
 * that one.  Whoever removes the last dependency makes the task ready: a
 * predecessor's worker runs it next (continuation), sl_task_release from a
 * worker spawns it, from elsewhere it is queued.
 */
#include <limits.h>
#include <stdatomic.h>

#include "runtime_internal.h"

#define GROUP_SLEEP_FUTEX 1u
#define GROUP_SLEEP_EC 2u
#define GROUP_SLEEP_MASK 3u
#define GROUP_ONE 4u
/* Unfinished tasks at most; far below 2^30, so concurrent adds that pass
 * the check cannot wrap the count. */
#define GROUP_MAX_PENDING ((uint32_t)1 << 29)

static inline uint32_t
group_pending(uint32_t state)
{
    return state / GROUP_ONE;
}

sl_status
sl__group_add(struct sl_task_group *g)
{
    /* Relaxed: the add is ordered before the task's end by the queue that
     * carries the task (release push, acquire pop), and before the
     * submitter's own wait by program order. */
    uint32_t old = atomic_fetch_add_explicit(&g->state, GROUP_ONE, memory_order_relaxed);
    if (group_pending(old) >= GROUP_MAX_PENDING) {
        atomic_fetch_sub_explicit(&g->state, GROUP_ONE, memory_order_relaxed);
        return SL_EOVERFLOW;
    }
    return SL_OK;
}

void
sl__group_undo_add(struct sl_task_group *g)
{
    atomic_fetch_sub_explicit(&g->state, GROUP_ONE, memory_order_relaxed);
}

void
sl__group_finish(sl_pool *pool, struct sl_task_group *g, uint32_t n)
{
    /* Acq_rel: the release half publishes the tasks' writes to the waiter
     * (whose acquire load reads this or a later value of the same release
     * sequence of read-modify-writes). */
    uint32_t old = atomic_fetch_sub_explicit(&g->state, GROUP_ONE * n, memory_order_acq_rel);
    if (group_pending(old) != n || (old & GROUP_SLEEP_MASK) == 0)
        return;
    /* From here on only &g->state as an address (see DESIGN). */
    if (old & GROUP_SLEEP_FUTEX)
        sl__futex_wake(&g->state, INT_MAX);
    if (old & GROUP_SLEEP_EC) {
        /* Seq_cst fence: pairs with the fence in sl__ec_prepare of the worker
         * that set the bit, so it sees the count at zero or we see it
         * announced (park.c). */
        atomic_thread_fence(memory_order_seq_cst);
        sl__ec_notify(&pool->ec, true);
    }
}

/* Set sleeper `bit` while the group has unfinished tasks.  Returns the
 * state with the bit set, or 0 when the count reached zero. */
static uint32_t
group_announce_sleeper(struct sl_task_group *g, uint32_t bit)
{
    /* Acquire: pairs with the finishers' release when we read zero. */
    uint32_t s = atomic_load_explicit(&g->state, memory_order_acquire);
    while (group_pending(s) != 0) {
        if ((s & bit) != 0)
            return s;
        /* Seq_cst: the bit must be in place before the sleeper's last look. */
        if (atomic_compare_exchange_weak_explicit(&g->state, &s, s | bit, memory_order_seq_cst,
                                                  memory_order_acquire))
            return s | bit;
    }
    return 0;
}

/* A thread outside the pool: sleep on the group's futex word. */
static void
group_wait_external(struct sl_task_group *g)
{
    for (;;) {
        uint32_t s = group_announce_sleeper(g, GROUP_SLEEP_FUTEX);
        if (s == 0)
            break;
        /* Returns at once if a finisher changed the word since. */
        sl__futex_wait(&g->state, s);
    }
}

/* Park the helping worker on the pool's event count until the group ends
 * or work appears.  Returns a task found by the last look, or NULL. */
static struct sl_task *
group_park_worker(struct sl__worker *w, struct sl_task_group *g)
{
    sl_pool *pool = w->pool;
    if (group_announce_sleeper(g, GROUP_SLEEP_EC) == 0)
        return NULL;
    uint32_t key = sl__ec_prepare(&pool->ec);
    bool contended = false;
    struct sl_task *t = NULL;
    if (group_pending(atomic_load_explicit(&g->state, memory_order_seq_cst)) == 0 ||
        (t = sl__worker_find(w, &contended)) != NULL || contended) {
        sl__ec_cancel(&pool->ec);
        return t;
    }
    SL__STAT_ADD(w->stats.n_parks, 1);
    sl__ec_wait(&pool->ec, key);
    return NULL;
}

/* A worker of the pool: run tasks until the group's count is zero. */
static void
group_wait_worker(struct sl__worker *w, struct sl_task_group *g)
{
    unsigned round = 0;
    for (;;) {
        /* Our own finished tasks may be what the count waits for. */
        sl__worker_flush_done(w);
        if (group_pending(atomic_load_explicit(&g->state, memory_order_acquire)) == 0)
            break;
        bool contended = false;
        struct sl_task *t = sl__worker_find(w, &contended);
        if (t == NULL && round >= w->pool->spin_rounds && !contended)
            t = group_park_worker(w, g);
        else if (t == NULL)
            sl__worker_backoff(round++);
        if (t != NULL) {
            sl__worker_run(w, t);
            round = 0;
        }
    }
}

void
sl_task_group_init(struct sl_task_group *group, sl_pool *pool)
{
    group->pool = pool;
    atomic_init(&group->state, 0);
    atomic_init(&group->canceled, 0);
}

sl_status
sl_task_group_wait(struct sl_task_group *group)
{
    if (group == NULL || group->pool == NULL)
        return SL_EINVAL;
    struct sl__worker *w = sl__worker_of(group->pool);
    if (w != NULL)
        group_wait_worker(w, group);
    else
        group_wait_external(group);
    /* The count is zero: no finisher reads the sleeper bits any more. */
    atomic_fetch_and_explicit(&group->state, ~GROUP_SLEEP_MASK, memory_order_relaxed);
    return sl_task_group_is_canceled(group) ? SL_ECANCELED : SL_OK;
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
    return atomic_load_explicit((_Atomic uint32_t *)&group->canceled, memory_order_relaxed) != 0;
}

/* Checks shared by every submit. */
static sl_status
submit_check(sl_pool *pool, struct sl_task_group *g)
{
    if (g != NULL && sl_task_group_is_canceled(g))
        return SL_ECANCELED;
    if (sl__pool_is_shutting_down(pool))
        return SL_ECANCELED;
    return SL_OK;
}

static sl_status
submit_fn(sl_pool *pool, struct sl_task_group *g, sl_task_fn *fn, void *arg)
{
    if (pool == NULL || fn == NULL)
        return SL_EINVAL;
    SL_TRY(submit_check(pool, g));
    struct sl__worker *w = sl__worker_of(pool);
    struct sl_task *t = w != NULL ? sl__task_alloc_worker(w) : sl__task_alloc_external(pool);
    if (t == NULL)
        return SL_ENOMEM;
    t->fn = fn;
    t->arg = arg;
    t->group = g;
    t->successor = NULL;
    t->pool = pool;
    atomic_store_explicit(&t->n_deps, 0, memory_order_relaxed);
    atomic_store_explicit(&t->flags, SL__TASK_POOL_OWNED | SL__TASK_SUBMITTED,
                          memory_order_relaxed);
    if (g != NULL) {
        sl_status st = sl__group_add(g);
        if (st != SL_OK) {
            if (w != NULL)
                sl__task_free_worker(w, t);
            else
                sl__task_free_external(pool, t);
            return st;
        }
    }
    if (w != NULL)
        sl__pool_spawn(w, t);
    else
        sl__pool_schedule(pool, NULL, t);
    return SL_OK;
}

sl_status
sl_pool_submit(sl_pool *pool, sl_task_fn *fn, void *arg)
{
    return submit_fn(pool, NULL, fn, arg);
}

sl_status
sl_task_group_submit(struct sl_task_group *group, sl_task_fn *fn, void *arg)
{
    if (group == NULL)
        return SL_EINVAL;
    return submit_fn(group->pool, group, fn, arg);
}

void
sl_task_init(struct sl_task *task, sl_task_fn *fn, void *arg)
{
    task->fn = fn;
    task->arg = arg;
    task->group = NULL;
    task->successor = NULL;
    task->next = NULL;
    task->pool = NULL;
    task->link = NULL;
    /* The one dependency that sl_*_submit_task removes. */
    atomic_init(&task->n_deps, 1);
    atomic_init(&task->flags, 0);
}

static bool
task_is_submitted(const struct sl_task *t)
{
    return (atomic_load_explicit((_Atomic uint32_t *)&t->flags, memory_order_relaxed) &
            SL__TASK_SUBMITTED) != 0;
}

sl_status
sl_task_add_deps(struct sl_task *task, uint32_t n)
{
    if (task == NULL)
        return SL_EINVAL;
    if (task_is_submitted(task))
        return SL_ESTATE;
    uint32_t deps = atomic_load_explicit(&task->n_deps, memory_order_relaxed);
    if (n > UINT32_MAX - 1 - deps)
        return SL_EOVERFLOW;
    /* Relaxed: the task is not submitted, so nothing can start it yet; the
     * submit's release publishes the count. */
    atomic_fetch_add_explicit(&task->n_deps, n, memory_order_relaxed);
    return SL_OK;
}

sl_status
sl_task_precede(struct sl_task *pred, struct sl_task *succ)
{
    if (pred == NULL || succ == NULL || pred == succ)
        return SL_EINVAL;
    if (pred->successor != NULL || task_is_submitted(pred) || task_is_submitted(succ))
        return SL_ESTATE;
    SL_TRY(sl_task_add_deps(succ, 1));
    pred->successor = succ;
    return SL_OK;
}

void
sl_task_release(struct sl_task *task)
{
    /* Acq_rel: as in sl__task_release_from. */
    uint32_t old = atomic_fetch_sub_explicit(&task->n_deps, 1, memory_order_acq_rel);
    if (SL_NEVER(old == 0) || old != 1)
        return;
    /* From a worker: spawned, so thieves can take it while the releasing
     * callback goes on; the continuation slot is for tasks released as
     * their predecessor ends. */
    sl__pool_schedule(task->pool, sl__worker_current(), task);
}

static sl_status
submit_task(sl_pool *pool, struct sl_task_group *g, struct sl_task *t)
{
    if (pool == NULL || t == NULL || t->fn == NULL)
        return SL_EINVAL;
    if (task_is_submitted(t))
        return SL_ESTATE;
    SL_TRY(submit_check(pool, g));
    t->group = g;
    t->pool = pool;
    if (g != NULL)
        SL_TRY(sl__group_add(g));
    atomic_fetch_or_explicit(&t->flags, SL__TASK_SUBMITTED, memory_order_relaxed);
    /* Acq_rel: the release half publishes the fields above to the
     * predecessor that may remove the last dependency; from here on `t` may
     * run at any moment, so we touch it only if we made it ready. */
    if (atomic_fetch_sub_explicit(&t->n_deps, 1, memory_order_acq_rel) == 1)
        sl__pool_schedule(pool, sl__worker_current(), t);
    return SL_OK;
}

sl_status
sl_pool_submit_task(sl_pool *pool, struct sl_task *task)
{
    return submit_task(pool, NULL, task);
}

sl_status
sl_task_group_submit_task(struct sl_task_group *group, struct sl_task *task)
{
    if (group == NULL)
        return SL_EINVAL;
    return submit_task(group->pool, group, task);
}
