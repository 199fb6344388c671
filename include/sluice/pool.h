/* SPDX-License-Identifier: MIT */
/*
 * The work-stealing pool that runs every chunk task.
 *
 * One worker thread per core (by default), pinned to it.  Each worker owns
 * a Chase-Lev deque: tasks spawned by a task go to the bottom of its own
 * deque, idle workers steal from the top of others', nearest first (same
 * cache, same NUMA node, then remote), and park when there is nothing to
 * steal, so an idle pool uses no CPU.  Tasks submitted from threads outside
 * the pool enter through a multi-producer queue.
 *
 * Work is a callback `fn(arg, status)`.  The contract, as in libuv: if a
 * submit call returns SL_OK the callback runs exactly once, with SL_OK, or
 * with SL_ECANCELED when its group was cancelled, a predecessor was
 * cancelled or the pool is shutting down; if the submit call fails it never
 * runs.  Tasks come from per-worker free lists (sl_pool_submit,
 * sl_task_group_submit) or from storage the caller provides (struct
 * sl_task), so submitting never calls malloc on the hot path.
 *
 * Task groups count their unfinished tasks; waiting on a group from inside
 * a task runs other tasks meanwhile.  Caller-provided tasks may depend on
 * others: the worker that finishes a task's last predecessor runs the task
 * next, so a chain of tasks stays in one core's cache.  <sluice/task.h>
 * declares tasks and task groups.
 */
#ifndef SL_POOL_H
#define SL_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/parallel.h>
#include <sluice/status.h>
#include <sluice/task.h>
#include <sluice/topo.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A pool of worker threads.  Opaque. */
typedef struct sl_pool sl_pool;

/* Limits of the options below (sl_pool_create refuses others with SL_EINVAL). */
#define SL_POOL_MAX_WORKERS 4096u
#define SL_POOL_MIN_DEQUE 2u
#define SL_POOL_MAX_DEQUE (1u << 30)
#define SL_POOL_MIN_INJECT 4u
#define SL_POOL_MAX_INJECT (1u << 24)

/*
 * Pool options.  Each field names the environment variable that
 * sl_pool_opts_from_env() reads into it; nothing else reads the
 * environment.
 */
struct sl_pool_opts {
    unsigned n_workers;       /* SLUICE_THREADS: worker threads; 0 = one per core */
    const char *topology;     /* SLUICE_TOPOLOGY: NULL = this machine; else see sl_topo_create */
    sl_pin pin;               /* SLUICE_PIN: compact | spread | none */
    unsigned deque_capacity;  /* SLUICE_DEQUE_CAPACITY: first size of each deque (power of 2) */
    unsigned inject_capacity; /* SLUICE_INJECT_CAPACITY: slots of the external queue (power of 2) */
    unsigned spin_rounds;     /* SLUICE_SPIN_ROUNDS: steal rounds before an idle worker parks */
    size_t buf_cache_bytes;   /* SLUICE_BUF_CACHE_BYTES: buffer bytes each worker keeps cached */
    const struct sl_allocator *alloc; /* memory for the pool's own structures; NULL = malloc */
};

/* clang-format off */
/**
 * SL_POOL_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_pool_opts
sl_pool_opts_default(void)
{
    struct sl_pool_opts o;
    memset(&o, 0, sizeof o);
    o.pin = SL_PIN_COMPACT;
    o.deque_capacity = 256;
    o.inject_capacity = 4096;
    o.spin_rounds = 64;
    o.buf_cache_bytes = (size_t)64 << 20;
    return o;
}
#define SL_POOL_OPTS_DEFAULT (sl_pool_opts_default())
/* clang-format on */

/* Scheduling counters, summed over workers (see sl_pool_get_stats). */
struct sl_pool_stats {
    uint64_t n_tasks_run;      /* callbacks called, cancelled ones included */
    uint64_t n_tasks_canceled; /* callbacks called with SL_ECANCELED */
    uint64_t n_spawned;        /* tasks pushed by workers onto their own deque */
    uint64_t n_injected;       /* tasks that entered through the external queue */
    uint64_t
        n_inject_overflow; /* ... of which found the queue full and waited in its overflow list */
    uint64_t n_continuations; /* successors run at once by the worker that released them */
    uint64_t n_steals;        /* tasks taken from another worker's deque */
    uint64_t n_steals_by_distance[SL_TOPO_DISTANCE_COUNT_]; /* ... by distance to the victim */
    uint64_t n_steal_aborts;     /* steals that lost a race and retried elsewhere */
    uint64_t n_last_races;       /* owner pops that raced thieves for a deque's last task */
    uint64_t n_last_races_lost;  /* ... that a thief won */
    uint64_t n_deque_grows;      /* deque arrays replaced by one twice as large */
    uint64_t n_arrays_reclaimed; /* outgrown deque arrays freed after no thief could see them */
    uint64_t n_parks;            /* times a worker went to sleep */
    uint64_t n_wakeups;          /* sleepers woken by workers (spawns, found work) */
    uint64_t n_task_slabs; /* slabs of pool-owned tasks allocated (the only malloc of tasks) */
};

/* NUMA-local buffer counters (see sl_pool_buf_get_stats). */
struct sl_pool_buf_stats {
    uint64_t n_allocs;     /* sl_pool_buf_alloc calls that succeeded */
    uint64_t n_hits;       /* ... served from a cache without allocating */
    uint64_t n_misses;     /* ... that allocated from the system */
    uint64_t n_frees;      /* sl_pool_buf_free calls */
    uint64_t n_bound;      /* system allocations bound to their NUMA node */
    uint64_t bytes_system; /* bytes taken from the system and not yet returned */
    uint64_t bytes_cached; /* ... of which sit in caches, free */
    int64_t bytes_in_use;  /* bytes handed out and not yet freed (class sizes) */
};

/* What a worker is and where it runs (see sl_pool_worker_info). */
struct sl_pool_worker_info {
    struct sl_topo_place place; /* planned core, NUMA node, package, cache */
    bool pinned;                /* its thread is bound to the core's PUs */
    unsigned n_victims;         /* workers it steals from, nearest first */
};

/**
 * Default options overridden by the environment: every variable named in
 * struct sl_pool_opts that is set and non-empty replaces its field in `*opts`
 * (start from SL_POOL_OPTS_DEFAULT).  SLUICE_PIN takes compact|spread|none;
 * SLUICE_BUF_CACHE_BYTES takes an optional K, M or G suffix.  SLUICE_TOPOLOGY
 * is borrowed from the environment: do not change it while `opts` is used.
 *
 * @return SL_OK, or SL_EINVAL naming the variable and its bad value (the
 *         fields read before it are already replaced).
 * Thread-safety: like getenv.
 */
SL_API SL_NODISCARD sl_status sl_pool_opts_from_env(struct sl_pool_opts *opts,
                                                    struct sl_error *err);

/**
 * Start a pool: load the topology, plan the workers' places, start and pin
 * the workers (pinning is skipped, not failed, where the topology is a model
 * or the system refuses it; sl_pool_worker_info says which).
 *
 * @param opts  NULL for SL_POOL_OPTS_DEFAULT; borrowed for the call.
 * @return the pool, or NULL with SL_EINVAL (an option out of range, named),
 *         SL_ENOMEM, or the status of sl_topo_create (SL_EINVAL,
 *         SL_EUNSUPPORTED).
 * Thread-safety: any thread.
 */
SL_API sl_pool *sl_pool_create(const struct sl_pool_opts *opts, struct sl_error *err);

/**
 * Stop the pool and free it.  Tasks already running finish; tasks queued
 * but not started, and tasks they spawn, run their callbacks with
 * SL_ECANCELED; then the workers exit and are joined.  Buffers from
 * sl_pool_buf_alloc must all be freed before.  NULL is a no-op.
 * Must not be called from one of the pool's tasks, nor while another
 * thread may still submit to, wait on or otherwise use the pool.
 * Thread-safety: one thread, outside the pool's tasks, once no other thread
 * uses the pool.
 */
SL_API void sl_pool_destroy(sl_pool *pool);

/** The number of workers, >= 1.  Thread-safety: any thread. */
SL_API unsigned sl_pool_worker_count(const sl_pool *pool);

/**
 * The index in [0, sl_pool_worker_count) of the calling worker of `pool`,
 * stable for the pool's life, or -1 when the caller is not one of its
 * workers.  Per-worker scratch (codec contexts) can be an array indexed by it.
 * Thread-safety: any thread.
 */
SL_API int sl_pool_worker_index(const sl_pool *pool);

/** The pool whose worker is calling, or NULL outside every pool.  Thread-safety: any thread. */
SL_API sl_pool *sl_pool_current(void);

/**
 * Queue `fn(arg, status)` to run once on one of the pool's workers.  From a
 * worker of `pool` the task goes onto its own deque (LIFO, stealable); from
 * any other thread through the external queue (FIFO, wakes a worker).
 *
 * @param pool  borrowed; must outlive the task.
 * @param fn    runs exactly once if this returns SL_OK; never if it fails.
 * @param arg   borrowed user data, passed to `fn` untouched.
 * @return SL_OK, SL_EINVAL (`pool` or `fn` NULL), SL_ENOMEM (no task could
 *         be allocated) or SL_ECANCELED (pool shutting down).
 *         No `struct sl_error`: each code has the one cause named here,
 *         so a message would add nothing, and submitting is the hot path.
 * Thread-safety: any thread, including the pool's own workers.
 */
SL_API SL_NODISCARD sl_status sl_pool_submit(sl_pool *pool, sl_task_fn *fn, void *arg);

/**
 * The pool as core's "parallel for" executor: `run(ctx, n, body, arg)`
 * calls body(arg, i, worker) for every i in [0, n) on the pool's workers,
 * `worker` being the running worker's index.  It may be called from any
 * thread, and from inside a task, where the calling worker takes part, so
 * nested loops never deadlock.  `run` returns SL_OK, or SL_ECANCELED when
 * the pool shut down before every iteration ran.
 * The returned value borrows `pool`.
 * Thread-safety: any thread.
 */
SL_API struct sl_parallel sl_pool_parallel(sl_pool *pool);

/**
 * Allocate `n_bytes` (64-byte aligned) from the calling worker's NUMA-local
 * cache of the size class that fits, falling back to its node's shared cache
 * and then to memory bound to the node with hwloc.  Threads outside the pool
 * use the cache of the node they run on.  Buffers over 1 GiB bypass caches.
 *
 * @return the buffer, or NULL when out of memory or `n_bytes` is 0.  No
 *         `struct sl_error`, as with malloc: the caller knows what the
 *         buffer was for and says so.
 * Thread-safety: any thread.
 */
SL_API void *sl_pool_buf_alloc(sl_pool *pool, size_t n_bytes);

/**
 * Return a buffer from sl_pool_buf_alloc of the same `pool` and `n_bytes`.
 * Any thread may free it, not only the allocating one: it goes back to the
 * cache of its own NUMA node.  NULL is a no-op.
 * Thread-safety: any thread.
 */
SL_API void sl_pool_buf_free(sl_pool *pool, void *buf, size_t n_bytes);

/**
 * Copy the pool's buffer counters into `out` (a snapshot; counters of busy
 * workers move).
 * Thread-safety: any thread.
 */
SL_API void sl_pool_buf_get_stats(const sl_pool *pool, struct sl_pool_buf_stats *out);

/**
 * Copy the pool's scheduling counters, summed over workers, into `out` (a snapshot).
 * Thread-safety: any thread.
 */
SL_API void sl_pool_get_stats(const sl_pool *pool, struct sl_pool_stats *out);

/**
 * Copy the counters of worker `worker` alone into `out`.
 * @return SL_OK, or SL_EINVAL (worker out of range, naming it and the
 *         worker count; `out` is untouched).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_pool_worker_get_stats(const sl_pool *pool, unsigned worker,
                                                       struct sl_pool_stats *out,
                                                       struct sl_error *err);

/**
 * Where worker `worker` runs and whether it is pinned.
 * @return SL_OK, or SL_EINVAL (worker out of range, naming it and the
 *         worker count).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_pool_worker_info(const sl_pool *pool, unsigned worker,
                                                  struct sl_pool_worker_info *out,
                                                  struct sl_error *err);

/**
 * The order in which worker `worker` tries victims (see sl_topo_victims):
 * up to `cap` worker indices and, when `distances` is not NULL, their classes.
 * @return the number of victims (sl_pool_worker_count - 1), even if > cap;
 *         0 when `worker` is out of range.
 * Thread-safety: any thread.
 */
SL_API unsigned sl_pool_victims(const sl_pool *pool, unsigned worker, unsigned *victims,
                                sl_topo_distance *distances, unsigned cap);

/** The pool's topology (borrowed; lives as long as the pool).  Thread-safety: any thread. */
SL_API const sl_topo *sl_pool_topo(const sl_pool *pool);

#ifdef __cplusplus
}
#endif

#endif /* SL_POOL_H */
