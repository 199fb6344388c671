/* SPDX-License-Identifier: MIT */
/*
 * Submitting tasks, dependencies between caller-provided tasks, and
 * waiting on a group.  These sit above the workers: a submit from a worker
 * spawns onto its deque, and a worker that waits runs other tasks
 * meanwhile.  The group's count word and a thread outside the pool
 * sleeping on it are below the workers, in group.c.
 *
 * DESIGN
 * A caller-provided task counts one dependency for "not yet submitted",
 * so no predecessor can start it before its submit; the submit removes
 * that one.  Whoever removes the last dependency makes the task ready: a
 * predecessor's worker runs it next (continuation), sl_task_release from a
 * worker spawns it, from elsewhere it is queued.
 *
 * A worker that waits on a group runs tasks until the group's count is
 * zero, flushing its own finished tasks before each look at the count, and
 * parks on the pool's event count (sleeper bit 1 of the count word, see
 * group.c) when it has found nothing for `spin_rounds` rounds.
 */
#include <stdatomic.h>

#include <sluice/task.h>

#include "group_internal.h"
#include "runtime_internal.h"

/* Park the helping worker on the pool's event count until the group ends
 * or work appears.  Returns a task found by the last look, or NULL. */
static struct sl_task *
group_park_worker(struct sl__worker *w, struct sl_task_group *g)
{
    sl_pool *pool = w->pool;
    if (sl__group_announce_sleeper(g, SL__GROUP_SLEEP_EC) == 0)
        return NULL;
    uint32_t key = sl__ec_prepare(&pool->ec);
    bool contended = false;
    struct sl_task *t = NULL;
    if (sl__group_pending(atomic_load_explicit(&g->state, memory_order_seq_cst)) == 0 ||
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
        if (sl__group_pending(atomic_load_explicit(&g->state, memory_order_acquire)) == 0)
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

sl_status
sl_task_group_wait(struct sl_task_group *group)
{
    if (group == NULL || group->pool == NULL)
        return SL_EINVAL;
    struct sl__worker *w = sl__worker_of(group->pool);
    if (w != NULL)
        group_wait_worker(w, group);
    else
        sl__group_wait_external(group);
    sl__group_wait_end(group);
    return sl__group_is_canceled(group) ? SL_ECANCELED : SL_OK;
}

/* Checks shared by every submit. */
static sl_status
submit_check(sl_pool *pool, struct sl_task_group *g)
{
    if (g != NULL && sl__group_is_canceled(g))
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
