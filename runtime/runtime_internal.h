/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the runtime: the Chase-Lev deque, the ck glue
 * (ring and epochs), the external queue, the event count workers park on,
 * task free lists, workers and the pool itself.  Open to the runtime's
 * tests; never to the launcher or examples.
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
 *
 * ThreadSanitizer cannot see ck's inline-assembly atomics, so the calls into
 * ck live in ck_glue.c, which a TSan build compiles uninstrumented; the
 * happens-before edges that ck provides are announced to TSan at the call
 * sites with SL__TSAN_RELEASE/SL__TSAN_ACQUIRE (no-ops in other builds).
 */
#ifndef SL_RUNTIME_INTERNAL_H
#define SL_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ck_epoch.h>
#include <ck_ring.h>
#include <hwloc.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/pool.h>
#include <sluice/status.h>
#include <sluice/topo.h>

#include "core_internal.h"

/* ---- ThreadSanitizer annotations ------------------------------------- */

#if defined(__SANITIZE_THREAD__)
#define SL__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SL__TSAN 1
#endif
#endif

#ifdef SL__TSAN
#include <sanitizer/tsan_interface.h>
#define SL__TSAN_RELEASE(p) __tsan_release((void *)(p))
#define SL__TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#else
#define SL__TSAN_RELEASE(p) ((void)(p))
#define SL__TSAN_ACQUIRE(p) ((void)(p))
#endif

/* ---- counters ----------------------------------------------------------
 * Counters have one writer each (their worker), so an increment is a
 * relaxed load and store, not a locked add; readers sum relaxed loads.
 * Building with -DSL_STATS=0 compiles the scheduling counters away. */
#ifndef SL_STATS
#define SL_STATS 1
#endif

typedef _Atomic uint64_t sl__counter;

static inline void
sl__counter_add(sl__counter *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline uint64_t
sl__counter_get(const sl__counter *c)
{
    return atomic_load_explicit((sl__counter *)c, memory_order_relaxed);
}

#if SL_STATS
#define SL__STAT_ADD(c, n) sl__counter_add(&(c), (n))
#else
#define SL__STAT_ADD(c, n) ((void)0)
#endif

/* ---- ck glue (ck_glue.c) ----------------------------------------------- */

/* An epoch domain: one per pool (or per deque test). */
struct sl__epoch {
    ck_epoch_t ck;  /* the ck domain */
    char tsan_sync; /* address TSan joins section ends and reclamations on */
};

/* A thread's record in an epoch domain. */
struct sl__epoch_rec {
    ck_epoch_record_t ck;    /* the ck record (cache-line aligned by ck) */
    struct sl__epoch *epoch; /* its domain */
};

void sl__ck_epoch_init(struct sl__epoch *epoch);
void sl__ck_epoch_register(struct sl__epoch *epoch, struct sl__epoch_rec *rec);
void sl__ck_epoch_unregister(struct sl__epoch_rec *rec);
void sl__ck_epoch_begin(struct sl__epoch_rec *rec);
void sl__ck_epoch_end(struct sl__epoch_rec *rec);
void sl__ck_epoch_call(struct sl__epoch_rec *rec, ck_epoch_entry_t *entry, ck_epoch_cb_t *cb);
bool sl__ck_epoch_poll(struct sl__epoch_rec *rec);
void sl__ck_epoch_reclaim(struct sl__epoch_rec *rec);

void sl__ck_ring_init(struct ck_ring *ring, unsigned size);
bool sl__ck_ring_enqueue_mpmc(struct ck_ring *ring, struct ck_ring_buffer *buf, void *p);
bool sl__ck_ring_dequeue_mpmc(struct ck_ring *ring, struct ck_ring_buffer *buf, void **p);
bool sl__ck_ring_is_empty(const struct ck_ring *ring);

/* Enter an epoch section: memory retired from now on outlives it. */
static inline void
sl__epoch_enter(struct sl__epoch_rec *rec)
{
    sl__ck_epoch_begin(rec);
}

/* Leave a section.  The release tells TSan that what the section read
 * happens before any reclamation that waited for it (ck_epoch's grace
 * period gives that order; TSan cannot see it). */
static inline void
sl__epoch_leave(struct sl__epoch_rec *rec)
{
    SL__TSAN_RELEASE(&rec->epoch->tsan_sync);
    sl__ck_epoch_end(rec);
}

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

/* ---- event count (park.c) -----------------------------------------------
 * Workers park here.  A waiter announces itself (prepare), checks for work
 * once more, then sleeps unless the epoch moved; a notifier publishes work,
 * then bumps the epoch if anyone announced.  See park.c. */
struct sl__ec {
    _Alignas(SL_CACHELINE) _Atomic uint32_t epoch; /* futex word; bumped per notify */
    _Atomic uint32_t n_waiters;                    /* announced waiters */
};

void sl__ec_init(struct sl__ec *ec);
uint32_t sl__ec_prepare(struct sl__ec *ec);
void sl__ec_cancel(struct sl__ec *ec);
void sl__ec_wait(struct sl__ec *ec, uint32_t key);
bool sl__ec_notify(struct sl__ec *ec, bool all);
bool sl__ec_has_waiters(struct sl__ec *ec);

/* futex wrappers (park.c) */
void sl__futex_wait(_Atomic uint32_t *word, uint32_t expected);
void sl__futex_wake(_Atomic uint32_t *word, int n);

/* ---- external queue (inject.c) ------------------------------------------ */

/* Multi-producer, multi-consumer queue of tasks from outside the pool: a
 * bounded ck_ring, plus a locked list for when the ring is full. */
struct sl__inject {
    struct ck_ring ring;                              /* ck's MPMC ring (its own padding) */
    struct ck_ring_buffer *slots;                     /* ring storage */
    unsigned capacity;                                /* ring slots, a power of two */
    _Alignas(SL_CACHELINE) _Atomic size_t n_overflow; /* tasks in the overflow list */
    pthread_mutex_t overflow_lock;                    /* guards the list */
    struct sl_task *overflow_head;                    /* oldest */
    struct sl_task *overflow_tail;                    /* newest */
};

sl_status sl__inject_init(struct sl__inject *q, unsigned capacity,
                          const struct sl_allocator *alloc);
void sl__inject_fini(struct sl__inject *q, const struct sl_allocator *alloc);
bool sl__inject_push(struct sl__inject *q, struct sl_task *task);
struct sl_task *sl__inject_pop(struct sl__inject *q);
bool sl__inject_looks_empty(struct sl__inject *q);

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

/* ---- NUMA-local buffers (numabuf.c) ------------------------------------ */

#define SL__BUF_CLASSES 73 /* 4 KiB, then 4 classes per power of two up to 1 GiB */

/* A worker's cached buffers of each class (owner only) and its counters. */
struct sl__buf_cache {
    void *head[SL__BUF_CLASSES]; /* free buffers of each class */
    size_t cached_bytes;         /* their total size */
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

/* ---- topology internals (topo.c) --------------------------------------- */

hwloc_topology_t sl__topo_hwloc(const sl_topo *topo);
hwloc_const_cpuset_t sl__topo_core_cpuset(const sl_topo *topo, unsigned core);
hwloc_const_nodeset_t sl__topo_numa_nodeset(const sl_topo *topo, unsigned node);
unsigned sl__topo_numa_of_os_pu(const sl_topo *topo, unsigned pu_os_index);

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
