/* SPDX-License-Identifier: MIT */
/*
 * The pool's life: create (topology, plan, workers, threads), destroy
 * (cancel what is queued, join), and what it tells about itself (worker
 * count and index, places, victim orders, counters).
 *
 * DESIGN
 * Creation builds every structure before starting any thread, then waits
 * until every worker has pinned itself, so sl_pool_worker_info is exact
 * when create returns.  Destruction sets `shutdown`, wakes every worker
 * and joins them.  A worker exits only when its own deque is empty and a
 * steal round over the external queue and every deque finds nothing; work
 * left in another worker's deque belongs to a worker that has not exited
 * and will run it (cancelled) itself.  No thread outside the pool may
 * submit once destroy has begun (the API says so), so nothing arrives late.
 */
#include <stdio.h>
#include <string.h>

#include "runtime_internal.h"

static uint64_t
rng_seed(unsigned index)
{
    /* splitmix64 of the index: distinct, well-mixed, never zero in practice. */
    uint64_t z = 0x9E3779B97F4A7C15ULL * (index + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z != 0 ? z : 1;
}

/* Victims of worker `w` nearest first, and where each class ends. */
static sl_status
worker_victims_init(sl_pool *pool, struct sl__worker *w, const struct sl_topo_place *places,
                    struct sl_error *err)
{
    unsigned n = pool->n_workers - 1;
    for (int c = 0; c < SL_TOPO_DISTANCE_COUNT_; c++)
        w->class_end[c] = 0;
    if (n == 0)
        return SL_OK;
    w->victims = sl_alloc(&pool->alloc, n * sizeof(unsigned), 0);
    sl_topo_distance *dist = sl_alloc(&pool->alloc, n * sizeof(sl_topo_distance), 0);
    if (w->victims == NULL || dist == NULL) {
        sl_free(&pool->alloc, dist, n * sizeof(sl_topo_distance));
        return sl_error_set(err, SL_ENOMEM, NULL, "worker %u: no memory for %u victims", w->index,
                            n);
    }
    sl_status st =
        sl_topo_victims(pool->topo, places, pool->n_workers, w->index, w->victims, dist, err);
    for (unsigned i = 0; st == SL_OK && i < n; i++)
        w->class_end[dist[i]] = i + 1;
    /* Empty classes end where the previous one did. */
    for (int c = 1; c < SL_TOPO_DISTANCE_COUNT_; c++)
        if (w->class_end[c] < w->class_end[c - 1])
            w->class_end[c] = w->class_end[c - 1];
    sl_free(&pool->alloc, dist, n * sizeof(sl_topo_distance));
    return st;
}

static sl_status
worker_init(sl_pool *pool, struct sl__worker *w, unsigned index, const struct sl_topo_place *places,
            unsigned deque_capacity, struct sl_error *err)
{
    w->pool = pool;
    w->index = index;
    w->place = places[index];
    w->rng = rng_seed(index);
    atomic_init(&w->pinned, false);
    sl__ck_epoch_register(&pool->epoch, &w->rec);
    SL_TRY(worker_victims_init(pool, w, places, err));
    if (sl__deque_init(&w->deque, deque_capacity, &pool->alloc, &w->rec) != SL_OK)
        return sl_error_set(err, SL_ENOMEM, NULL, "worker %u: no memory for a deque of %u", index,
                            deque_capacity);
    return SL_OK;
}

/* Undo worker_init of `w` (after its thread, if any, was joined). */
static void
worker_fini(sl_pool *pool, struct sl__worker *w)
{
    if (atomic_load_explicit(&w->deque.array, memory_order_relaxed) != NULL)
        sl__deque_fini(&w->deque);
    sl__buf_cache_fini(pool, w);
    sl__ck_epoch_unregister(&w->rec);
    if (w->victims != NULL)
        sl_free(&pool->alloc, w->victims, (pool->n_workers - 1) * sizeof(unsigned));
}

/* Create the workers array and each worker's structures. */
static sl_status
pool_workers_init(sl_pool *pool, const struct sl_pool_opts *o, struct sl_error *err)
{
    unsigned n = pool->n_workers;
    struct sl_topo_place *places = sl_alloc(&pool->alloc, n * sizeof(*places), 0);
    if (places == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory to plan %u workers", n);
    sl_status st = sl_topo_plan(pool->topo, n, o->pin, places, err);
    if (st == SL_OK) {
        pool->workers = sl_alloc_zeroed(&pool->alloc, n, sizeof(struct sl__worker), SL_CACHELINE);
        if (pool->workers == NULL)
            st = sl_error_set(err, SL_ENOMEM, NULL, "no memory for %u workers", n);
    }
    for (unsigned i = 0; st == SL_OK && i < n; i++) {
        pool->n_workers_ready = i + 1;
        st = worker_init(pool, &pool->workers[i], i, places, o->deque_capacity, err);
    }
    sl_free(&pool->alloc, places, n * sizeof(*places));
    return st;
}

/* Start every worker thread and wait until each has pinned itself. */
static sl_status
pool_threads_start(sl_pool *pool, struct sl_error *err)
{
    for (unsigned i = 0; i < pool->n_workers; i++) {
        int rc = pthread_create(&pool->workers[i].thread, NULL, sl__worker_main, &pool->workers[i]);
        if (rc != 0)
            return sl_error_set(err, SL_ENOMEM, NULL, "cannot start worker %u of %u: %s", i,
                                pool->n_workers, strerror(rc));
        pool->n_threads = i + 1;
    }
    pthread_mutex_lock(&pool->start_lock);
    while (pool->n_started < pool->n_workers)
        pthread_cond_wait(&pool->start_cond, &pool->start_lock);
    pthread_mutex_unlock(&pool->start_lock);
    return SL_OK;
}

/* Stop and join the threads started so far, then free everything. */
static void
pool_free(sl_pool *pool)
{
    atomic_store_explicit(&pool->shutdown, true, memory_order_seq_cst);
    /* Seq_cst fence: pairs with sl__ec_prepare (park.c): a worker about to
     * sleep either sees `shutdown` or is woken here. */
    atomic_thread_fence(memory_order_seq_cst);
    sl__ec_notify(&pool->ec, true);
    for (unsigned i = 0; i < pool->n_threads; i++)
        pthread_join(pool->workers[i].thread, NULL);
    for (unsigned i = 0; i < pool->n_workers_ready; i++)
        worker_fini(pool, &pool->workers[i]);
    if (pool->workers != NULL)
        sl_free(&pool->alloc, pool->workers, pool->n_workers * sizeof(struct sl__worker));
    sl__buf_depots_fini(pool);
    if (pool->have_inject)
        sl__inject_fini(&pool->inject, &pool->alloc);
    if (pool->have_depot)
        sl__task_depot_fini(&pool->depot, &pool->alloc);
    pthread_cond_destroy(&pool->start_cond);
    pthread_mutex_destroy(&pool->start_lock);
    sl_topo_destroy(pool->topo);
    struct sl_allocator alloc = pool->alloc;
    sl_free(&alloc, pool, sizeof(*pool));
}

/* The pool object with its topology, queues and depots, no workers yet. */
static sl_pool *
pool_new(const struct sl_pool_opts *o, struct sl_error *err)
{
    struct sl_allocator alloc = o->alloc != NULL ? *o->alloc : sl_allocator_default();
    sl_pool *pool = sl_alloc_zeroed(&alloc, 1, sizeof(*pool), SL_CACHELINE);
    if (pool == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "no memory for a pool");
        return NULL;
    }
    pool->alloc = alloc;
    pthread_mutex_init(&pool->start_lock, NULL);
    pthread_cond_init(&pool->start_cond, NULL);
    sl__ec_init(&pool->ec);
    sl__ck_epoch_init(&pool->epoch);
    pool->spin_rounds = o->spin_rounds;
    pool->pin = o->pin;
    pool->buf_cache_bytes = o->buf_cache_bytes;
    pool->topo = sl_topo_create(o->topology, err);
    if (pool->topo == NULL)
        goto out_free;
    struct sl_topo_counts counts = sl_topo_counts(pool->topo);
    pool->n_workers = o->n_workers != 0 ? o->n_workers : counts.n_cores;
    pool->n_numa_nodes = counts.n_numa_nodes;
    if (sl__inject_init(&pool->inject, o->inject_capacity, &pool->alloc) != SL_OK) {
        sl_error_set(err, SL_ENOMEM, NULL, "no memory for an external queue of %u",
                     o->inject_capacity);
        goto out_free;
    }
    pool->have_inject = true;
    if (sl__task_depot_init(&pool->depot) != SL_OK) {
        sl_error_set(err, SL_ENOMEM, NULL, "cannot create the task depot");
        goto out_free;
    }
    pool->have_depot = true;
    if (sl__buf_depots_init(pool) != SL_OK) {
        sl_error_set(err, SL_ENOMEM, NULL, "no memory for %u buffer depots", pool->n_numa_nodes);
        goto out_free;
    }
    return pool;

out_free:
    pool_free(pool);
    return NULL;
}

sl_pool *
sl_pool_create(const struct sl_pool_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_pool_opts o = opts != NULL ? *opts : SL_POOL_OPTS_DEFAULT;
    if (sl__pool_opts_check(&o, err) != SL_OK)
        return NULL;
    sl_pool *pool = pool_new(&o, err);
    if (pool == NULL)
        return NULL;
    if (pool_workers_init(pool, &o, err) != SL_OK || pool_threads_start(pool, err) != SL_OK) {
        pool_free(pool);
        return NULL;
    }
    return pool;
}

void
sl_pool_destroy(sl_pool *pool)
{
    if (pool == NULL)
        return;
    /* From one of its own tasks we would join ourselves: refuse (and leak). */
    if (SL_NEVER(sl__worker_of(pool) != NULL))
        return;
    pool_free(pool);
}

unsigned
sl_pool_worker_count(const sl_pool *pool)
{
    return pool->n_workers;
}

int
sl_pool_worker_index(const sl_pool *pool)
{
    struct sl__worker *w = sl__worker_of(pool);
    return w != NULL ? (int)w->index : -1;
}

sl_pool *
sl_pool_current(void)
{
    struct sl__worker *w = sl__worker_current();
    return w != NULL ? w->pool : NULL;
}

const sl_topo *
sl_pool_topo(const sl_pool *pool)
{
    return pool->topo;
}

static void
stats_add_worker(struct sl_pool_stats *s, const struct sl__worker *w)
{
    const struct sl__worker_stats *ws = &w->stats;
    s->n_tasks_run += sl__counter_get(&ws->n_tasks_run);
    s->n_tasks_canceled += sl__counter_get(&ws->n_tasks_canceled);
    s->n_spawned += sl__counter_get(&ws->n_spawned);
    s->n_continuations += sl__counter_get(&ws->n_continuations);
    for (int c = 0; c < SL_TOPO_DISTANCE_COUNT_; c++) {
        uint64_t n = sl__counter_get(&ws->n_steals[c]);
        s->n_steals_by_distance[c] += n;
        s->n_steals += n;
    }
    s->n_steal_aborts += sl__counter_get(&ws->n_steal_aborts);
    s->n_last_races += sl__counter_get(&w->deque.n_last_races);
    s->n_last_races_lost += sl__counter_get(&w->deque.n_last_races_lost);
    s->n_deque_grows += sl__counter_get(&w->deque.n_grows);
    s->n_arrays_reclaimed += sl__counter_get(&w->deque.n_reclaimed);
    s->n_parks += sl__counter_get(&ws->n_parks);
    s->n_wakeups += sl__counter_get(&ws->n_wakeups);
}

void
sl_pool_get_stats(const sl_pool *pool, struct sl_pool_stats *out)
{
    struct sl_pool_stats s = {0};
    for (unsigned i = 0; i < pool->n_workers; i++)
        stats_add_worker(&s, &pool->workers[i]);
    s.n_injected = sl__counter_get(&pool->n_injected);
    s.n_inject_overflow = sl__counter_get(&pool->n_inject_overflow);
    s.n_task_slabs = sl__counter_get(&pool->depot.n_slabs);
    *out = s;
}

sl_status
sl_pool_worker_get_stats(const sl_pool *pool, unsigned worker, struct sl_pool_stats *out,
                         struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (worker >= pool->n_workers)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "worker stats: worker %u out of range (%u workers)", worker,
                            pool->n_workers);
    *out = (struct sl_pool_stats){0};
    stats_add_worker(out, &pool->workers[worker]);
    out->n_injected = sl__counter_get(&pool->workers[worker].stats.n_injected_taken);
    return SL_OK;
}

sl_status
sl_pool_worker_info(const sl_pool *pool, unsigned worker, struct sl_pool_worker_info *out,
                    struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (worker >= pool->n_workers)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "worker info: worker %u out of range (%u workers)", worker,
                            pool->n_workers);
    const struct sl__worker *w = &pool->workers[worker];
    out->place = w->place;
    out->pinned = atomic_load_explicit((_Atomic bool *)&w->pinned, memory_order_relaxed);
    out->n_victims = pool->n_workers - 1;
    return SL_OK;
}

unsigned
sl_pool_victims(const sl_pool *pool, unsigned worker, unsigned *victims,
                sl_topo_distance *distances, unsigned cap)
{
    if (worker >= pool->n_workers)
        return 0;
    const struct sl__worker *w = &pool->workers[worker];
    unsigned n = pool->n_workers - 1, c = 0;
    for (unsigned i = 0; i < n && i < cap; i++) {
        while (i >= w->class_end[c])
            c++;
        if (victims != NULL)
            victims[i] = w->victims[i];
        if (distances != NULL)
            distances[i] = (sl_topo_distance)c;
    }
    return n;
}
