/* SPDX-License-Identifier: MIT */
/*
 * Stress of the whole pool with more workers than cores and two-slot
 * deques: a producer task spawning 2^18 tasks that thieves steal while its
 * deque grows; threads outside the pool submitting at once through a tiny
 * external queue (so its overflow list is used); chains of dependent tasks
 * while a group is cancelled under them; parallel loops from several
 * threads; buffers allocated on one worker and freed on another.  Every
 * task must run exactly once.  Runs under ThreadSanitizer in CI.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <sluice/task.h>

#include "plain_test.h"
#include "pool_test.h"
#include "runtime_internal.h"

TestSuite(runtime_pool_stress, .timeout = 120.0);

static sl_pool *
stress_pool(unsigned n_workers, unsigned inject_capacity)
{
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    o.n_workers = n_workers;
    o.deque_capacity = 2;
    o.inject_capacity = inject_capacity;
    o.spin_rounds = 4;
    struct sl_error err = SL_ERROR_INIT;
    sl_pool *pool = sl_pool_create(&o, &err);
    cr_assert_not_null(pool, "%s", err.text);
    return pool;
}

static void
print_stats(const char *what, const sl_pool *pool)
{
    struct sl_pool_stats s = pool_stats(pool);
    printf("%s: %lu tasks, %lu spawned, %lu injected (%lu overflowed), %lu stolen "
           "(%lu same-core, %lu same-numa), %lu steal aborts, %lu last-element races "
           "(%lu lost), %lu continuations, %lu grows, %lu arrays reclaimed, %lu parks\n",
           what, (unsigned long)s.n_tasks_run, (unsigned long)s.n_spawned,
           (unsigned long)s.n_injected, (unsigned long)s.n_inject_overflow,
           (unsigned long)s.n_steals, (unsigned long)s.n_steals_by_distance[SL_TOPO_SAME_CORE],
           (unsigned long)s.n_steals_by_distance[SL_TOPO_SAME_NUMA],
           (unsigned long)s.n_steal_aborts, (unsigned long)s.n_last_races,
           (unsigned long)s.n_last_races_lost, (unsigned long)s.n_continuations,
           (unsigned long)s.n_deque_grows, (unsigned long)s.n_arrays_reclaimed,
           (unsigned long)s.n_parks);
    fflush(stdout);
}

/* ---- one producer, many thieves ---------------------------------------- */

#define FAN (1u << 18)

struct fan {
    sl_pool *pool;
    _Atomic uint8_t *runs;
    _Atomic uint32_t next;
    _Atomic int failed;
};

static void
fan_leaf(void *arg, sl_status status)
{
    struct fan *f = arg;
    if (status != SL_OK)
        atomic_store(&f->failed, 1);
    uint32_t i = atomic_fetch_add_explicit(&f->next, 1, memory_order_relaxed);
    if (i < FAN)
        atomic_fetch_add_explicit(&f->runs[i], 1, memory_order_relaxed);
    else
        atomic_store(&f->failed, 2);
}

static void
fan_root(void *arg, sl_status status)
{
    struct fan *f = arg;
    (void)status;
    struct sl_task_group g;
    sl_task_group_init(&g, f->pool);
    for (uint32_t i = 0; i < FAN; i++)
        if (sl_task_group_submit(&g, fan_leaf, f) != SL_OK)
            atomic_store(&f->failed, 3);
    if (sl_task_group_wait(&g) != SL_OK)
        atomic_store(&f->failed, 4);
}

Test(runtime_pool_stress, producer_task_and_thieves_run_each_task_once)
{
    sl_pool *pool = stress_pool(4, 4096);
    struct fan f = {.pool = pool};
    f.runs = calloc(FAN, sizeof(*f.runs));
    struct sl_task_group g;
    sl_task_group_init(&g, pool);
    cr_assert_eq(sl_task_group_submit(&g, fan_root, &f), SL_OK);
    cr_assert_eq(sl_task_group_wait(&g), SL_OK);
    cr_assert_eq(atomic_load(&f.failed), 0);
    cr_assert_eq(atomic_load(&f.next), FAN);
    for (uint32_t i = 0; i < FAN; i++)
        cr_assert_eq(atomic_load(&f.runs[i]), 1, "slot %u", i);
    print_stats("fan-out", pool);
    struct sl_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.n_tasks_run, FAN + 1);
    cr_assert_geq(s.n_deque_grows, 1, "a two-slot deque must grow");
    sl_pool_destroy(pool);
    free(f.runs);
}

/* ---- many external producers through a tiny queue ---------------------- */

#define EXT_THREADS 3
#define EXT_PER_THREAD 20000

struct ext {
    sl_pool *pool;
    struct sl_task_group group;
    _Atomic uint8_t *runs;
    _Atomic int failed;
};

struct ext_item {
    struct ext *ext;
    uint32_t index;
};

static void
ext_task(void *arg, sl_status status)
{
    struct ext_item *it = arg;
    if (status != SL_OK)
        atomic_store(&it->ext->failed, 1);
    atomic_fetch_add_explicit(&it->ext->runs[it->index], 1, memory_order_relaxed);
}

struct ext_thread {
    struct ext *ext;
    struct ext_item *items;
    uint32_t first;
};

static void *
ext_producer(void *arg)
{
    struct ext_thread *t = arg;
    for (uint32_t i = 0; i < EXT_PER_THREAD; i++) {
        t->items[i] = (struct ext_item){t->ext, t->first + i};
        if (sl_task_group_submit(&t->ext->group, ext_task, &t->items[i]) != SL_OK)
            atomic_store(&t->ext->failed, 2);
    }
    return NULL;
}

Test(runtime_pool_stress, external_producers_overflow_the_queue_and_lose_nothing)
{
    sl_pool *pool = stress_pool(3, 4);
    struct ext e = {.pool = pool};
    e.runs = calloc(EXT_THREADS * EXT_PER_THREAD, sizeof(*e.runs));
    sl_task_group_init(&e.group, pool);
    pthread_t th[EXT_THREADS];
    struct ext_thread args[EXT_THREADS];
    for (int i = 0; i < EXT_THREADS; i++) {
        args[i] = (struct ext_thread){&e, calloc(EXT_PER_THREAD, sizeof(struct ext_item)),
                                      (uint32_t)i * EXT_PER_THREAD};
        cr_assert_eq(pthread_create(&th[i], NULL, ext_producer, &args[i]), 0);
    }
    for (int i = 0; i < EXT_THREADS; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(sl_task_group_wait(&e.group), SL_OK);
    cr_assert_eq(atomic_load(&e.failed), 0);
    for (uint32_t i = 0; i < EXT_THREADS * EXT_PER_THREAD; i++)
        cr_assert_eq(atomic_load(&e.runs[i]), 1, "task %u", i);
    print_stats("external", pool);
    struct sl_pool_stats s = pool_stats(pool);
    cr_assert_eq(s.n_injected, EXT_THREADS * EXT_PER_THREAD);
    cr_assert_gt(s.n_inject_overflow, 0, "a 4-slot ring must overflow");
    sl_pool_destroy(pool);
    for (int i = 0; i < EXT_THREADS; i++)
        free(args[i].items);
    free(e.runs);
}

/* ---- chains under cancellation ----------------------------------------- */

#define N_CHAINS 64
#define CHAIN_LEN 400

struct clink {
    struct sl_task task;
    _Atomic int runs;
    _Atomic int status;
};

static void
clink_task(void *arg, sl_status status)
{
    struct clink *l = arg;
    atomic_store(&l->status, (int)status);
    atomic_fetch_add(&l->runs, 1);
}

Test(runtime_pool_stress, chains_run_once_while_groups_are_cancelled)
{
    sl_pool *pool = stress_pool(4, 64);
    struct clink *links = calloc(N_CHAINS * CHAIN_LEN, sizeof(*links));
    struct sl_task_group groups[2];
    sl_task_group_init(&groups[0], pool);
    sl_task_group_init(&groups[1], pool);
    for (int c = 0; c < N_CHAINS; c++) {
        struct clink *l = &links[c * CHAIN_LEN];
        for (int i = 0; i < CHAIN_LEN; i++)
            sl_task_init(&l[i].task, clink_task, &l[i]);
        for (int i = 0; i + 1 < CHAIN_LEN; i++)
            cr_assert_eq(sl_task_precede(&l[i].task, &l[i + 1].task), SL_OK);
        for (int i = CHAIN_LEN; i-- > 0;)
            cr_assert_eq(sl_task_group_submit_task(&groups[c & 1], &l[i].task), SL_OK);
    }
    sl_task_group_cancel(&groups[1]); /* while the odd chains run */
    cr_assert_eq(sl_task_group_wait(&groups[0]), SL_OK);
    cr_assert_eq(sl_task_group_wait(&groups[1]), SL_ECANCELED);
    for (int c = 0; c < N_CHAINS; c++) {
        bool canceled_seen = false;
        for (int i = 0; i < CHAIN_LEN; i++) {
            struct clink *l = &links[c * CHAIN_LEN + i];
            cr_assert_eq(atomic_load(&l->runs), 1, "chain %d link %d", c, i);
            int st = atomic_load(&l->status);
            if ((c & 1) == 0)
                cr_assert_eq(st, SL_OK, "chain %d link %d", c, i);
            /* Once a link is cancelled, all after it are. */
            cr_assert(!canceled_seen || st == SL_ECANCELED, "chain %d link %d", c, i);
            canceled_seen = canceled_seen || st == SL_ECANCELED;
        }
    }
    print_stats("chains", pool);
    cr_assert_geq(pool_stats(pool).n_continuations, N_CHAINS * (CHAIN_LEN - 1) / 2);
    sl_pool_destroy(pool);
    free(links);
}

/* ---- parallel loops from several threads, buffers across workers ------- */

#define LOOP_N 4096

struct loop {
    sl_pool *pool;
    _Atomic uint8_t *hits;
    void **bufs; /* allocated by iteration i, freed by iteration (i + 1) */
    _Atomic int failed;
};

static void
loop_alloc(void *arg, size_t i, unsigned worker)
{
    struct loop *l = arg;
    (void)worker;
    size_t n = 4096 + (i % 7) * 1000;
    l->bufs[i] = sl_pool_buf_alloc(l->pool, n);
    if (l->bufs[i] == NULL)
        atomic_store(&l->failed, 1);
    else
        ((char *)l->bufs[i])[n - 1] = (char)i;
    atomic_fetch_add_explicit(&l->hits[i], 1, memory_order_relaxed);
}

static void
loop_free(void *arg, size_t i, unsigned worker)
{
    struct loop *l = arg;
    (void)worker;
    size_t j = (i + 1) % LOOP_N, n = 4096 + (j % 7) * 1000;
    if (((char *)l->bufs[j])[n - 1] != (char)j)
        atomic_store(&l->failed, 2);
    sl_pool_buf_free(l->pool, l->bufs[j], n);
}

static void *
loop_thread(void *arg)
{
    struct loop *l = arg;
    struct sl_parallel par = sl_pool_parallel(l->pool);
    for (int rep = 0; rep < 4; rep++) {
        if (sl_parallel_run(&par, LOOP_N, loop_alloc, l) != SL_OK ||
            sl_parallel_run(&par, LOOP_N, loop_free, l) != SL_OK)
            atomic_store(&l->failed, 3);
    }
    return NULL;
}

Test(runtime_pool_stress, parallel_loops_from_threads_share_buffers_across_workers)
{
    sl_pool *pool = stress_pool(3, 16);
    struct loop loops[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        loops[i] = (struct loop){.pool = pool};
        loops[i].hits = calloc(LOOP_N, sizeof(*loops[i].hits));
        loops[i].bufs = calloc(LOOP_N, sizeof(void *));
        cr_assert_eq(pthread_create(&th[i], NULL, loop_thread, &loops[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(atomic_load(&loops[i].failed), 0, "loop %d", i);
        for (size_t k = 0; k < LOOP_N; k++)
            cr_assert_eq(atomic_load(&loops[i].hits[k]), 4, "loop %d index %zu", i, k);
        free(loops[i].hits);
        free(loops[i].bufs);
    }
    struct sl_pool_buf_stats b = pool_buf_stats(pool);
    printf("buffers: %lu allocs, %lu hits, %lu misses, %lu frees, %lu bytes from the system, "
           "%lu cached\n",
           (unsigned long)b.n_allocs, (unsigned long)b.n_hits, (unsigned long)b.n_misses,
           (unsigned long)b.n_frees, (unsigned long)b.bytes_system, (unsigned long)b.bytes_cached);
    cr_assert_eq(b.n_allocs, 3 * 4 * LOOP_N);
    cr_assert_eq(b.n_frees, b.n_allocs);
    cr_assert_eq(b.n_hits + b.n_misses, b.n_allocs);
    cr_assert_gt(b.n_hits, b.n_misses, "buffers are recycled");
    cr_assert_eq(b.bytes_in_use, 0);
    print_stats("loops", pool);
    sl_pool_destroy(pool);
}
