/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the runtime's pool: task free lists, NUMA-local
 * buffers, workers and the pool itself, with the headers of the parts they
 * embed (deque_internal.h, park_internal.h, inject_internal.h,
 * ck_glue_internal.h, counter_internal.h).  Task groups and topology
 * internals have headers of their own (group_internal.h, topo_internal.h).
 * Open to the runtime's tests; never to the launcher or examples.
 *
 * DESIGN
 * Threads: a pool owns n worker threads.  Each worker owns a deque, a task
 * cache, an epoch record, buffer caches and counters; only it writes them,
 * except the deque's `top`, which thieves CAS.  Shared by all: the external
 * queue, the event count, the task depot and the buffer depots (mutexes).
 *
 * Lock order: a worker holds at most one lock at a time (the task depot,
 * a buffer depot or the overflow list of the external queue), never while
 * running a task.
 */
#ifndef SL_RUNTIME_INTERNAL_H
#define SL_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/pool.h>
#include <sluice/status.h>
#include <sluice/topo.h>

#include "ck_glue_internal.h"
#include "core_internal.h"
#include "counter_internal.h"
#include "deque_internal.h"
#include "inject_internal.h"
#include "park_internal.h"

/* ---- tasks (task.c) ------------------------------------------------------ */

/* sl_task.flags */
#define SL__TASK_POOL_OWNED 0x1u /* from the pool's free lists; freed after running */
#define SL__TASK_SUBMITTED 0x2u  /* submitted; no more predecessors may be added */
#define SL__TASK_CANCELED 0x4u   /* a predecessor was cancelled */

/* Pool-owned tasks move between a worker and the depot in batches of this many. */
#define SL__TASK_BATCH 128

/* A worker's free list of pool-owned tasks (owner only). */
struct sl__task_cache {
    struct sl_task *head; /* free tasks linked through `next` */
    unsigned n;           /* how many */
};

/* Slabs of tasks and the batches workers hand back (under `lock`). */
struct sl__task_depot {
    pthread_mutex_t lock;    /* guards everything below */
    struct sl_task *batches; /* full batches, linked through `link` */
    struct sl_task *loose;   /* single tasks, linked through `next` */
    void *slabs;             /* every slab, for destruction */
    sl__counter n_slabs;     /* slabs allocated */
};

struct sl__worker;
sl_status sl__task_depot_init(struct sl__task_depot *d);
void sl__task_depot_fini(struct sl__task_depot *d, const struct sl_allocator *alloc);
struct sl_task *sl__task_alloc_external(sl_pool *pool);
void sl__task_free_external(sl_pool *pool, struct sl_task *t);
struct sl_task *sl__task_alloc_refill(struct sl__worker *w);
void sl__task_free_spill(struct sl__worker *w);
/* ---- NUMA-local buffers (numabuf.c) ------------------------------------ */

#define SL__BUF_CLASSES 73 /* 4 KiB, then 4 classes per power of two up to 1 GiB */
/* Free buffers of one class a worker keeps in its own list; more go to the
 * node's depot, where every worker of the node finds them (numabuf.c). */
#define SL__BUF_LISTED_MAX 2

/* A worker's cached buffers of each class (owner only) and its counters. */
struct sl__buf_cache {
    void *head[SL__BUF_CLASSES];       /* free buffers of each class */
    uint8_t n_listed[SL__BUF_CLASSES]; /* how many: at most SL__BUF_LISTED_MAX (workers) */
    size_t cached_bytes;               /* their total size */
    sl__counter n_allocs;
    sl__counter n_hits;
    sl__counter n_misses;
    sl__counter n_frees;
    sl__counter n_bound;
    _Atomic int64_t bytes_system; /* signed: a worker may free what another took */
    _Atomic int64_t bytes_cached;
    _Atomic int64_t bytes_in_use;
};

/* Buffers of one NUMA node that no worker cache holds (under `lock`). */
struct sl__buf_depot {
    pthread_mutex_t lock;
    void *head[SL__BUF_CLASSES];
    size_t cached_bytes;
    size_t cap_bytes;
    struct sl__buf_cache counts; /* counters of threads outside the pool (head unused) */
};

sl_status sl__buf_depots_init(sl_pool *pool);
void sl__buf_depots_fini(sl_pool *pool);
void sl__buf_cache_fini(sl_pool *pool, struct sl__worker *w);
unsigned sl__buf_node(const void *buf);
bool sl__buf_is_bound(const void *buf);

/* ---- workers and the pool (worker.c, pool.c) -------------------------- */

/* Counters of one worker (written by it alone). */
struct sl__worker_stats {
    sl__counter n_tasks_run;
    sl__counter n_tasks_canceled;
    sl__counter n_spawned;
    sl__counter n_injected_taken;
    sl__counter n_continuations;
    sl__counter n_steals[SL_TOPO_DISTANCE_COUNT_];
    sl__counter n_steal_aborts;
    sl__counter n_parks;
    sl__counter n_wakeups;
};

struct sl__worker {
    struct sl__deque deque;               /* its own deque; top and bottom padded apart */
    _Alignas(SL_CACHELINE) sl_pool *pool; /* from here on: written by the owner only */
    unsigned index;                       /* in [0, n_workers) */
    struct sl_task *next_task;            /* a continuation to run before anything else */
    struct sl_task_group *done_group;     /* group of tasks finished but not yet subtracted */
    uint32_t n_done;                      /* how many (see sl__worker_flush_done) */
    struct sl__task_cache tasks;          /* free pool-owned tasks */
    uint64_t rng;                         /* xorshift state for victim choice */
    unsigned *victims;                    /* other workers, nearest first */
    unsigned class_end[SL_TOPO_DISTANCE_COUNT_];     /* victims of class c end at class_end[c] */
    _Alignas(SL_CACHELINE) struct sl__epoch_rec rec; /* read by other workers polling epochs */
    struct sl__buf_cache bufs;                       /* NUMA-local buffers */
    struct sl__worker_stats stats;                   /* counters */
    struct sl_topo_place place;                      /* planned core */
    _Atomic bool pinned;                             /* bound to the core's PUs */
    pthread_t thread;                                /* the thread */
};

struct sl_pool {
    /* Read-mostly: set at creation, read by every worker. */
    struct sl__worker *workers;       /* n_workers of them */
    unsigned n_workers;               /* >= 1 */
    unsigned spin_rounds;             /* idle steal rounds before parking */
    sl_pin pin;                       /* placement policy */
    size_t buf_cache_bytes;           /* cap of each worker's buffer cache */
    unsigned n_numa_nodes;            /* of the topology */
    struct sl__buf_depot *buf_depots; /* one per NUMA node */
    sl_topo *topo;                    /* owned */
    struct sl_allocator alloc;        /* the pool's allocator */
    _Atomic bool shutdown;            /* sl_pool_destroy has begun (written once) */
    /* Written while the pool runs, each on its own lines. */
    struct sl__ec ec;                                    /* idle workers park here */
    _Alignas(SL_CACHELINE) _Atomic uint32_t n_searching; /* awake workers looking for work */
    _Alignas(SL_CACHELINE) struct sl__inject inject;     /* tasks from outside */
    sl__counter n_injected;        /* submissions through `inject` (atomic adds) */
    sl__counter n_inject_overflow; /* ... that went to its overflow list */
    struct sl__task_depot depot;   /* pool-owned tasks */
    struct sl__epoch epoch;        /* reclaims outgrown deque arrays */
    /* Creation and teardown only. */
    unsigned n_workers_ready;   /* workers initialised */
    unsigned n_threads;         /* threads started */
    bool have_inject;           /* `inject` initialised */
    bool have_depot;            /* `depot` initialised */
    pthread_mutex_t start_lock; /* guards n_started */
    pthread_cond_t start_cond;  /* signalled as workers start */
    unsigned n_started;         /* workers running and pinned (or not) */
};

/* The worker the calling thread is, of any pool, or NULL (worker.c).
 * initial-exec: one instruction per access, even inside libsluice.so. */
#if defined(__GNUC__)
#define SL__TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define SL__TLS_MODEL
#endif
extern _Thread_local struct sl__worker *sl__tls_worker SL__TLS_MODEL;

static inline struct sl__worker *
sl__worker_current(void)
{
    return sl__tls_worker;
}

/* The calling thread's worker if it belongs to `pool`, else NULL. */
static inline struct sl__worker *
sl__worker_of(const sl_pool *pool)
{
    struct sl__worker *w = sl__worker_current();
    return w != NULL && w->pool == pool ? w : NULL;
}

static inline bool
sl__pool_is_shutting_down(const sl_pool *pool)
{
    return atomic_load_explicit((_Atomic bool *)&pool->shutdown, memory_order_relaxed);
}

sl_status sl__pool_opts_check(const struct sl_pool_opts *o, struct sl_error *err);
void *sl__worker_main(void *arg);
void sl__worker_run(struct sl__worker *w, struct sl_task *t);
struct sl_task *sl__worker_find(struct sl__worker *w, bool *contended);
void sl__worker_backoff(unsigned round);
void sl__pool_schedule(sl_pool *pool, struct sl__worker *w, struct sl_task *t);
void sl__pool_spawn(struct sl__worker *w, struct sl_task *t);
void sl__task_release_from(struct sl__worker *w, struct sl_task *t, bool canceled);
void sl__worker_flush_done(struct sl__worker *w);

/* Pool-owned task from the worker's cache; NULL only when out of memory. */
static inline struct sl_task *
sl__task_alloc_worker(struct sl__worker *w)
{
    struct sl_task *t = w->tasks.head;
    if (t == NULL)
        return sl__task_alloc_refill(w);
    w->tasks.head = t->next;
    w->tasks.n--;
    return t;
}

/* Give a pool-owned task back to the worker's cache. */
static inline void
sl__task_free_worker(struct sl__worker *w, struct sl_task *t)
{
    t->next = w->tasks.head;
    w->tasks.head = t;
    if (++w->tasks.n > 2 * SL__TASK_BATCH)
        sl__task_free_spill(w);
}

#endif /* SL_RUNTIME_INTERNAL_H */
