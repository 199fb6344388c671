/* SPDX-License-Identifier: MIT */
/*
 * Workers: the loop each worker thread runs, how it finds work (its
 * continuation slot, its own deque, the external queue, then other
 * workers' deques nearest first), how it runs a task, and when it parks.
 *
 * DESIGN
 * Finding work, in order: the continuation slot (a successor this worker
 * just made ready, run next so a chain stays in this core's cache), the
 * bottom of the own deque (LIFO, hot in cache), the external queue, then a
 * steal round: the victims of each distance class (same cache, same NUMA
 * node, same package, remote) in turn, each class from a random start
 * drawn from the worker's own PRNG, skipping deques that look empty
 * without a fence (cheetah's fast test).  A steal round runs inside one
 * epoch section, so the deque arrays it reads outlive it.
 *
 * Idle: a worker that finds nothing counts itself as searching, backs off
 * (ck_backoff, doubling up to 1024 pauses, yielding after a while) for
 * `spin_rounds` rounds, then parks on the pool's event count after one last
 * look (park.c explains why no wake-up is lost).
 *
 * Group counts: a worker subtracts the tasks it finished from their group
 * lazily, once per run of consecutive tasks of the same group, so a thief
 * draining a producer's deque does not bounce the group's line per task.
 * It flushes before running a task of another group (or none) and whenever
 * a search finds nothing, so it never holds a count back while idle, and a
 * waiting worker flushes before each look at the count.  A group thus ends
 * no later than when its last task's worker moves on.
 *
 * Wake-ups: a submission from outside always notifies (after a seq_cst
 * fence).  A spawn from a worker notifies only when workers sleep and none
 * is searching, and without a fence: in a narrow race a sleeper may miss
 * it, but the spawning worker is awake and runs the task itself, so
 * progress never depends on that wake-up; only parallelism can be late
 * (TBB makes the same trade).  A searching worker that finds work where
 * more remains wakes one more, so parallelism ramps up.
 */
#include <ck_backoff.h>
#include <sched.h>
#include <stdatomic.h>

#include <sluice/task.h>

#include "group_internal.h"
#include "runtime_internal.h"
#include "topo_internal.h"

_Thread_local struct sl__worker *sl__tls_worker SL__TLS_MODEL;

/* xorshift64*: a fast per-worker PRNG for victim choice. */
static inline unsigned
rng_below(uint64_t *state, unsigned n)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    uint32_t r = (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 32);
    return (unsigned)(((uint64_t)r * n) >> 32);
}

void
sl__worker_backoff(unsigned round)
{
    ck_backoff_t spins = round < 10 ? (ck_backoff_t)1 << round : 1024;
    ck_backoff_eb(&spins);
    /* On an oversubscribed machine the worker we wait for may need our core. */
    if (round >= 8)
        sched_yield();
}

/* The continuation slot, then the own deque. */
static inline struct sl_task *
worker_take_local(struct sl__worker *w)
{
    struct sl_task *t = w->next_task;
    if (t != NULL) {
        w->next_task = NULL;
        return t;
    }
    return sl__deque_pop_owner(&w->deque);
}

/* Wake one more sleeper when the place we took work from has more and
 * nobody is searching.  Called by a worker no longer counted as searching. */
static void
worker_wake_more(struct sl__worker *w, bool more)
{
    sl_pool *pool = w->pool;
    if (more && sl__ec_has_waiters(&pool->ec) &&
        atomic_load_explicit(&pool->n_searching, memory_order_relaxed) == 0 &&
        sl__ec_notify(&pool->ec, false))
        SL__STAT_ADD(w->stats.n_wakeups, 1);
}

/* One steal round of victims, nearest class first.  `*more` says whether
 * the victim robbed still looks non-empty. */
static struct sl_task *
worker_steal_victims(struct sl__worker *w, bool *contended, bool *more)
{
    sl_pool *pool = w->pool;
    struct sl_task *t = NULL;
    unsigned begin = 0;
    sl__epoch_enter(&w->rec);
    for (int c = 0; c < SL_TOPO_DISTANCE_COUNT_ && t == NULL; c++) {
        unsigned end = w->class_end[c], n = end - begin;
        unsigned start = n > 1 ? rng_below(&w->rng, n) : 0;
        for (unsigned i = 0; i < n; i++) {
            unsigned k = start + i < n ? start + i : start + i - n;
            struct sl__deque *dq = &pool->workers[w->victims[begin + k]].deque;
            if (sl__deque_looks_empty(dq))
                continue;
            enum sl__steal r = sl__deque_steal(dq, &t);
            if (r == SL__STEAL_OK) {
                SL__STAT_ADD(w->stats.n_steals[c], 1);
                *more = !sl__deque_looks_empty(dq);
                break;
            }
            if (r == SL__STEAL_ABORT) {
                *contended = true;
                SL__STAT_ADD(w->stats.n_steal_aborts, 1);
            }
        }
        begin = end;
    }
    sl__epoch_leave(&w->rec);
    return t;
}

/* Work from outside the worker: the external queue, then other deques.
 * `*contended` is set when a steal lost a race (work may remain); `*more`
 * when the place robbed has more. */
static struct sl_task *
worker_steal(struct sl__worker *w, bool *contended, bool *more)
{
    sl_pool *pool = w->pool;
    struct sl_task *t = sl__inject_pop(&pool->inject);
    if (t != NULL) {
        SL__STAT_ADD(w->stats.n_injected_taken, 1);
        *more = !sl__inject_looks_empty(&pool->inject);
        return t;
    }
    if (pool->n_workers == 1)
        return NULL;
    return worker_steal_victims(w, contended, more);
}

struct sl_task *
sl__worker_find(struct sl__worker *w, bool *contended)
{
    struct sl_task *t = worker_take_local(w);
    if (t != NULL)
        return t;
    bool more = false;
    t = worker_steal(w, contended, &more);
    worker_wake_more(w, more);
    return t;
}

static void
searching_enter(sl_pool *pool)
{
    atomic_fetch_add_explicit(&pool->n_searching, 1, memory_order_relaxed);
}

static void
searching_leave(sl_pool *pool)
{
    atomic_fetch_sub_explicit(&pool->n_searching, 1, memory_order_relaxed);
}

/* Sleep on the event count unless a last look finds work.  Returns the
 * task found, or NULL after sleeping (or when the last look was contended). */
static struct sl_task *
worker_park(struct sl__worker *w, bool *stop)
{
    sl_pool *pool = w->pool;
    bool contended = false;
    /* Free outgrown deque arrays no thief can see any more. */
    sl__ck_epoch_poll(&w->rec);
    uint32_t key = sl__ec_prepare(&pool->ec);
    bool more = false;
    struct sl_task *t = worker_steal(w, &contended, &more);
    if (t != NULL || contended) {
        sl__ec_cancel(&pool->ec);
        worker_wake_more(w, more);
        return t;
    }
    if (sl__pool_is_shutting_down(pool)) {
        sl__ec_cancel(&pool->ec);
        *stop = true;
        return NULL;
    }
    SL__STAT_ADD(w->stats.n_parks, 1);
    sl__ec_wait(&pool->ec, key);
    return NULL;
}

/* Find work for an idle worker, parking when there is none for a while.
 * Returns NULL when the pool shuts down and no work is left to see. */
static struct sl_task *
worker_idle(struct sl__worker *w)
{
    sl_pool *pool = w->pool;
    searching_enter(pool);
    for (unsigned round = 0;;) {
        bool contended = false, more = false;
        struct sl_task *t = worker_steal(w, &contended, &more);
        if (t != NULL) {
            searching_leave(pool);
            worker_wake_more(w, more);
            return t;
        }
        /* Nothing to run: subtract what this worker finished, so the
         * groups it holds back can end while it searches or sleeps. */
        sl__worker_flush_done(w);
        if (!contended && sl__pool_is_shutting_down(pool)) {
            searching_leave(pool);
            return NULL;
        }
        if (round < pool->spin_rounds || contended) {
            sl__worker_backoff(round++);
            continue;
        }
        searching_leave(pool);
        bool stop = false;
        t = worker_park(w, &stop);
        if (t != NULL || stop)
            return t;
        searching_enter(pool);
        round = 0;
    }
}

void
sl__worker_run(struct sl__worker *w, struct sl_task *t)
{
    sl_pool *pool = w->pool;
    /* Read everything first: the callback may free or reuse caller storage. */
    sl_task_fn *fn = t->fn;
    void *arg = t->arg;
    struct sl_task_group *g = t->group;
    struct sl_task *succ = t->successor;
    uint32_t flags = atomic_load_explicit(&t->flags, memory_order_relaxed);
    bool canceled = (flags & SL__TASK_CANCELED) != 0 ||
                    (g != NULL && atomic_load_explicit(&g->canceled, memory_order_relaxed)) ||
                    sl__pool_is_shutting_down(pool);
    /* Freed before running, so the callback's own spawns reuse it hot. */
    if (flags & SL__TASK_POOL_OWNED)
        sl__task_free_worker(w, t);
    /* Another group's tasks finished here must not wait for this one. */
    if (g != w->done_group)
        sl__worker_flush_done(w);
    fn(arg, canceled ? SL_ECANCELED : SL_OK);
    SL__STAT_ADD(w->stats.n_tasks_run, 1);
    if (canceled)
        SL__STAT_ADD(w->stats.n_tasks_canceled, 1);
    if (succ != NULL)
        sl__task_release_from(w, succ, canceled);
    if (g != NULL) {
        /* The callback may have run other groups' tasks (a wait, or a spawn
         * that could not grow the deque): theirs are subtracted first. */
        if (g != w->done_group)
            sl__worker_flush_done(w);
        w->done_group = g;
        w->n_done++;
    }
}

void
sl__worker_flush_done(struct sl__worker *w)
{
    if (w->n_done != 0)
        sl__group_finish(w->pool, w->done_group, w->n_done);
    w->done_group = NULL;
    w->n_done = 0;
}

/* Bind the calling worker thread to its core when the topology is this
 * machine's and pinning is asked for; a refusal leaves it unpinned. */
static void
worker_pin(struct sl__worker *w, sl_pin pin)
{
    const sl_topo *topo = w->pool->topo;
    if (pin == SL_PIN_NONE || !sl_topo_is_this_system(topo))
        return;
    hwloc_const_cpuset_t set = sl__topo_core_cpuset(topo, w->place.core);
    if (hwloc_set_cpubind(sl__topo_hwloc(topo), set, HWLOC_CPUBIND_THREAD) == 0)
        atomic_store_explicit(&w->pinned, true, memory_order_relaxed);
}

void *
sl__worker_main(void *arg)
{
    struct sl__worker *w = arg;
    sl_pool *pool = w->pool;
    sl__tls_worker = w;
    worker_pin(w, pool->pin);
    pthread_mutex_lock(&pool->start_lock);
    pool->n_started++;
    pthread_cond_broadcast(&pool->start_cond);
    pthread_mutex_unlock(&pool->start_lock);

    for (;;) {
        struct sl_task *t = worker_take_local(w);
        if (t == NULL)
            t = worker_idle(w);
        if (t == NULL)
            break;
        sl__worker_run(w, t);
    }
    sl__worker_flush_done(w);
    sl__tls_worker = NULL;
    return NULL;
}

void
sl__pool_spawn(struct sl__worker *w, struct sl_task *t)
{
    if (sl__deque_push_owner(&w->deque, t) != SL_OK) {
        /* The deque cannot grow: run the task here and now, which keeps
         * the contract (it runs exactly once) at the cost of parallelism. */
        sl__worker_run(w, t);
        return;
    }
    SL__STAT_ADD(w->stats.n_spawned, 1);
    /* Relaxed hints, no fence: see DESIGN. */
    sl_pool *pool = w->pool;
    if (sl__ec_has_waiters(&pool->ec) &&
        atomic_load_explicit(&pool->n_searching, memory_order_relaxed) == 0 &&
        sl__ec_notify(&pool->ec, false))
        SL__STAT_ADD(w->stats.n_wakeups, 1);
}

void
sl__pool_schedule(sl_pool *pool, struct sl__worker *w, struct sl_task *t)
{
    if (w != NULL && w->pool == pool) {
        sl__pool_spawn(w, t);
        return;
    }
    bool in_ring = sl__inject_push(&pool->inject, t);
    /* Relaxed: counters from many threads; only sums are read. */
    atomic_fetch_add_explicit(&pool->n_injected, 1, memory_order_relaxed);
    if (!in_ring)
        atomic_fetch_add_explicit(&pool->n_inject_overflow, 1, memory_order_relaxed);
    /* Seq_cst fence: pairs with the fence in sl__ec_prepare, so either the
     * parking worker's last look sees this task or we see it announced. */
    atomic_thread_fence(memory_order_seq_cst);
    sl__ec_notify(&pool->ec, false);
}

void
sl__task_release_from(struct sl__worker *w, struct sl_task *t, bool canceled)
{
    if (canceled)
        atomic_fetch_or_explicit(&t->flags, SL__TASK_CANCELED, memory_order_relaxed);
    /* Acq_rel: the release half publishes this predecessor's writes (and the
     * cancel bit above) to whoever removes the last dependency; the acquire
     * half makes the last one see every predecessor's. */
    uint32_t old = atomic_fetch_sub_explicit(&t->n_deps, 1, memory_order_acq_rel);
    if (SL_NEVER(old == 0) || old != 1)
        return;
    sl_pool *pool = t->pool;
    if (w != NULL && w->pool == pool && w->next_task == NULL) {
        w->next_task = t;
        SL__STAT_ADD(w->stats.n_continuations, 1);
        return;
    }
    sl__pool_schedule(pool, w, t);
}
