/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the executor (exec*.c, trace.c): one run's state,
 * its tasks, the table of intermediate chunks shared between stages, and the
 * per-worker trace buffers.
 */
#ifndef SL_EXEC_INTERNAL_H
#define SL_EXEC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <sluice/array_iter.h>
#include <sluice/codec.h>
#include <sluice/pool.h>
#include <sluice/store.h>
#include <sluice/txn.h>

#include "graph_internal.h"

/* ---- intermediate chunks (exec_inter.c) ----------------------------------- */

/* Where an intermediate chunk stands. */
enum sl__entry_state {
    SL__ENTRY_PENDING, /* its task has not finished */
    SL__ENTRY_READY,   /* its block can be read */
    SL__ENTRY_FAILED   /* its task failed; `code` and `text` say why */
};

/* A task waiting for an entry to leave PENDING. */
struct sl__waiter {
    struct sl__exec_task *task; /* released when the entry is done */
    struct sl__waiter *next;    /* next waiter of the entry, or of the free list */
};

/*
 * One chunk of a stage whose root feeds other stages: computed once, read by
 * every consumer chunk that needs it, freed after the last.
 */
struct sl__entry {
    uint32_t stage;              /* producing stage */
    uint64_t linear;             /* chunk's linear index in the stage root's grid */
    enum sl__entry_state state;  /* guarded by the table lock */
    uint64_t refs_left;          /* consumer reads still to come */
    struct sl_block block;       /* the chunk, once READY */
    void *buf;                   /* owned buffer behind `block` */
    size_t buf_bytes;            /* its size, also its budget share */
    sl_status code;              /* why it FAILED */
    char text[112];              /* ... with the message */
    struct sl__waiter *waiters;  /* tasks to release when done */
    struct sl__entry *hash_next; /* bucket chain, or free list */
};

/* Entries by (stage, linear), under one mutex. */
struct sl__inter_table {
    pthread_mutex_t lock;            /* guards everything below and every entry */
    struct sl__entry **buckets;      /* power-of-two count */
    size_t n_buckets;                /* bucket count */
    size_t n_entries;                /* entries in the table */
    struct sl__entry *free_entries;  /* recycled entries */
    struct sl__waiter *free_waiters; /* recycled waiters */
    struct sl_allocator alloc;       /* the plan's */
};

sl_status sl__inter_init(struct sl__inter_table *t, const struct sl_allocator *alloc,
                         struct sl_error *err);
void sl__inter_fini(struct sl__inter_table *t, sl_pool *pool);
/* Find the entry of (stage, linear); lock held. */
struct sl__entry *sl__inter_find_locked(struct sl__inter_table *t, uint32_t stage, uint64_t linear);
/* Insert a new PENDING entry; lock held.  NULL when out of memory. */
struct sl__entry *sl__inter_insert_locked(struct sl__inter_table *t, uint32_t stage,
                                          uint64_t linear, uint64_t refs);
/* Remove and recycle `e` (its buffer already freed); lock held. */
void sl__inter_remove_locked(struct sl__inter_table *t, struct sl__entry *e);
/* A recycled or new waiter; lock held.  NULL when out of memory. */
struct sl__waiter *sl__inter_waiter_locked(struct sl__inter_table *t);

/* ---- trace (trace.c) ------------------------------------------------------- */

/* One task as the Chrome trace shows it. */
struct sl__trace_event {
    uint64_t start_ns; /* since the run started */
    uint64_t end_ns;   /* since the run started */
    uint32_t stage;    /* which stage */
    uint32_t count;    /* chunks in the task */
    uint64_t first;    /* first chunk's linear index in the stage root's grid */
};

/* Events of one worker; full buffers drop further events and count them. */
struct sl__trace_buf {
    struct sl__trace_event *events; /* owned; NULL when tracing is off */
    size_t n;                       /* events recorded */
    size_t cap;                     /* events that fit */
    uint64_t dropped;               /* events beyond cap */
};

struct sl__exec_worker;

/* Write every worker's events as Chrome trace JSON to `path`. */
sl_status sl__trace_write(const char *path, const sl_graph *g, const struct sl__fusion *f,
                          const struct sl__exec_worker *workers, unsigned n_workers,
                          struct sl_error *err);

/* ---- runs (exec.c, exec_eval.c) -------------------------------------------- */

/* A task: `count` chunks of one stage, walked from position `first` of box `box`. */
struct sl__exec_task {
    struct sl_task task;        /* what the pool runs */
    struct sl__exec *ex;        /* the run */
    uint32_t stage;             /* the stage */
    uint32_t count;             /* chunks to compute, one after another */
    uint64_t box;               /* linear index of the box in the stage's box grid */
    uint64_t first;             /* position of the first chunk within the box */
    size_t reserved;            /* budget bytes reserved for it */
    struct sl__entry *output;   /* intermediate chunk it produces, or NULL */
    struct sl__exec_task *next; /* free list */
};

/* Per-worker state, each on its own cache lines. */
struct sl__exec_worker {
    _Alignas(SL_CACHELINE) void *scratch; /* kernel scratch (median, mode); owned */
    sl_codec_ctx *codec;                  /* this worker's codec state for gets and puts */
    size_t scratch_bytes;                 /* its size */
    struct sl__trace_buf trace;           /* this worker's events */
    /* Counters with one writer (this worker) that the driver sums for
     * progress: relaxed load-and-store, no locked add, no shared line. */
    _Atomic uint64_t chunks_done;   /* output chunks of puts finished */
    _Atomic uint64_t chunks_failed; /* ... of which not ok (always atomic adds) */
    _Atomic uint64_t bytes_done;    /* decoded bytes of finished output chunks */
    _Atomic uint64_t n_tasks;       /* tasks run */
    char pad[SL_CACHELINE];         /* keep the next worker's fields away */
};

/*
 * A put's transaction for one run: its chunks are staged and each shard
 * written once (as soon as all its chunks are staged, or at the end of the
 * put's phase); a shard write that fails fails every chunk of the shard.
 */
struct sl__exec_put {
    struct sl__exec *ex; /* the run */
    uint32_t node;       /* the put node */
    sl_txn *txn;         /* open while the put's phase runs; NULL for putters */
};

/* What the driver waits for. */
enum { SL__WAIT_ROOM = 1, SL__WAIT_IDLE = 2 };

/* One run of a plan. */
struct sl__exec {
    sl_plan *plan;                   /* the plan run */
    const sl_graph *graph;           /* plan->graph */
    const struct sl__fusion *fusion; /* plan->fusion */
    sl_pool *pool;                   /* runs the tasks */
    unsigned n_workers;              /* sl_pool_worker_count */
    struct sl__exec_worker *workers; /* n_workers + 1 (the last for outside threads) */
    struct sl__inter_table inter;    /* intermediate chunks */
    struct sl_grid *boxes;           /* per stage: box grid over its root's chunk coordinates */
    struct sl__exec_put *puts;       /* per plan->puts entry */
    struct sl_parallel parallel;     /* the pool's parallel for, for transactions */
    uint32_t n_stores;               /* distinct stores of the graph's arrays */
    sl_store **stores;               /* them (borrowed from the arrays) */
    struct sl_store_stats *stats0;   /* their counters when the run started */
    uint64_t t0_ns;                  /* monotonic start of the run */

    _Alignas(SL_CACHELINE) _Atomic size_t accounted; /* budget bytes alive */
    _Atomic size_t peak;                             /* highest `accounted` */
    _Atomic uint64_t in_flight;                      /* tasks submitted and not finished */
    _Atomic uint64_t n_started;                      /* submitted tasks whose callback has begun */
    _Atomic uint64_t n_exiting; /* workers past their in_flight decrement that may still
                                   touch the run (waking the driver); exec_fini waits */
    uint64_t n_submitted;       /* tasks the driver submitted (only it writes) */
    _Atomic uint64_t n_inline;  /* tasks the driver ran itself */
    _Atomic bool cancel;        /* fail_fast tripped: skip what has not started */
    _Atomic int driver_waiting; /* what the driver sleeps on `cond` for: 0 (not asleep),
                                   SL__WAIT_ROOM or SL__WAIT_IDLE */
    _Atomic int first_error;    /* first failure's sl_status, or SL_OK */

    _Alignas(SL_CACHELINE) pthread_mutex_t lock; /* guards `cond` and `first_err` */
    pthread_cond_t cond;                      /* the driver waits here for budget or completion */
    struct sl__exec_task *free_tasks;         /* the driver's recycled tasks (only it reads) */
    _Atomic(struct sl__exec_task *) returned; /* tasks workers finished, pushed lock-free */
    struct sl_error first_err;                /* message of the first failure, under `lock` */
};

/* Add `n` to a counter only the calling worker writes. */
static inline void
sl__exec_count(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Sum a counter over the workers (and the driver's slot). */
uint64_t sl__exec_sum(const struct sl__exec *ex, size_t offset);

/* Compute every chunk of task `t` (exec_eval.c); runs on a worker. */
void sl__exec_task_run(struct sl__exec *ex, struct sl__exec_task *t, unsigned worker);

/* Fail intermediate chunk `e`, whose task could not be made (out of
 * memory), and release the tasks waiting for it (exec_eval.c; the driver). */
void sl__exec_entry_abandon(struct sl__exec *ex, struct sl__entry *e, sl_status code,
                            const char *text);

/* Nanoseconds on the monotonic clock. */
uint64_t sl__exec_now_ns(void);

/* Chunk coordinates of position `pos` of box `box` of stage `stage`. */
void sl__exec_box_coords(const struct sl__exec *ex, uint32_t stage, uint64_t box, uint64_t pos,
                         uint64_t *coords);

/* Return `bytes` of budget to the run and wake the driver if it waits. */
void sl__exec_release(struct sl__exec *ex, size_t bytes);

/* The transaction of put node `node`, or NULL. */
sl_txn *sl__exec_put_txn(const struct sl__exec *ex, uint32_t node);

/* Bytes staged in the run's open transactions. */
size_t sl__exec_staged(const struct sl__exec *ex);

/* Note a failure for the run's first error (and fail_fast). */
void sl__exec_note_failure(struct sl__exec *ex, sl_status code, const struct sl_error *err);

#endif /* SL_EXEC_INTERNAL_H */
