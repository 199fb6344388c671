/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the executor (graph/exec/): one run's state, its
 * tasks and workers, and the shared state of exec_state.c.  The table of
 * intermediate chunks and the trace buffers that a run embeds have headers
 * of their own (exec_inter_internal.h, exec_trace_internal.h), as do the
 * steps the driver calls (exec_steps_internal.h).  Open to the graph tests,
 * not to the rest of graph/.
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
#include <sluice/remote.h>
#include <sluice/store.h>
#include <sluice/txn.h>

#include "exec_inter_internal.h"
#include "exec_trace_internal.h"
#include "graph_internal.h"

/* The longest wait between two tries of a store operation (sl__retry_sleep). */
#define SL__RETRY_CAP_S 2.0

/* ---- runs ------------------------------------------------------------------ */

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
    struct sl__exec *ex;     /* the run */
    uint32_t node;           /* the put node */
    sl_txn *txn;             /* open while the put's phase runs; NULL for putters */
    uint32_t index;          /* its index in plan->puts (the journal's put number) */
    _Atomic bool committing; /* its commit began: every chunk's status is settled.
                                Relaxed: set before sl_txn_commit hands units to
                                workers, which orders it */
};

/* What the driver waits for (0 in `driver_waiting`: nothing, it is awake). */
enum sl__exec_wait {
    SL__WAIT_ROOM = 1, /* budget for the next task and a free task slot */
    SL__WAIT_IDLE = 2  /* every task finished */
};

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
    struct sl_remote_stats *remote0; /* their remote counters then (zero when local) */
    uint64_t t0_ns;                  /* monotonic start of the run */
    bool prefetch;                   /* a store reads ahead: hint the gets' chunks */
    uint64_t n_resumed;              /* output chunks an earlier run wrote (journal): skipped */
    _Atomic uint64_t n_retries;      /* store operations retried (sl_plan_opts.retries); relaxed */

    /* Memory orders (the pairs are named where each access is):
     * - `accounted`, `in_flight` and `driver_waiting` form a Dekker pair
     *   between a worker (update a counter, then look whether the driver
     *   sleeps) and the driver (announce it sleeps, then look at the
     *   counters): those four accesses are seq_cst, all others relaxed;
     * - a worker's decrement of `in_flight` also releases what its task
     *   wrote (status bytes, counters, returned tasks) to the driver's
     *   loads that find the run idle; `n_exiting` and `returned` pair
     *   release with acquire;
     * - `peak`, `n_started`, `n_inline`, `cancel` and `first_error` publish
     *   nothing and are relaxed. */
    _Alignas(SL_CACHELINE) _Atomic size_t accounted; /* budget bytes alive */
    _Atomic size_t peak;                             /* highest `accounted` (the driver writes) */
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

/*
 * Stop the run: tasks not yet started run as cancelled.  Relaxed, as is
 * every access to `cancel`: the flag publishes nothing, and a task that
 * misses it only runs as it would have without it.
 */
static inline void
sl__exec_cancel(struct sl__exec *ex)
{
    atomic_store_explicit(&ex->cancel, true, memory_order_relaxed);
}

/* Whether the run was stopped (see sl__exec_cancel). */
static inline bool
sl__exec_is_canceled(const struct sl__exec *ex)
{
    return atomic_load_explicit(&ex->cancel, memory_order_relaxed);
}

/* Add `n` to a counter only the calling worker writes. */
static inline void
sl__exec_count(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* ---- shared state (exec_state.c) ------------------------------------------ */

/* Nanoseconds on the monotonic clock. */
uint64_t sl__exec_now_ns(void);

/* Chunk coordinates of position `pos` of box `box` of stage `stage`. */
/* Whether any store of the run acts on hints of reads to come
 * (sl_store_reads_ahead; exec_prefetch.c). */
bool sl__exec_reads_ahead(const struct sl__exec *ex);

/* Hint the chunks the gets of stage `stage` read for chunks
 * [first, first + count) of box `box` (the driver, as it emits a task). */
void sl__exec_prefetch(const struct sl__exec *ex, uint32_t stage, uint64_t box, uint64_t first,
                       uint32_t count);

void sl__exec_box_coords(const struct sl__exec *ex, uint32_t stage, uint64_t box, uint64_t pos,
                         uint64_t *coords);

/* Chunks in box `box` of stage `stage`. */
uint64_t sl__exec_box_count(const struct sl__exec *ex, uint32_t stage, uint64_t box);

/* Sum a counter over the workers (and the driver's slot). */
uint64_t sl__exec_sum(const struct sl__exec *ex, size_t offset);

/* Wake the driver if it sleeps for `why`: room (any finished task or freed
 * byte may give it) or idleness (only the last task's end does).
 * Thread-safety: any thread. */
void sl__exec_wake_driver(struct sl__exec *ex, enum sl__exec_wait why);

/* Return `bytes` of budget to the run and wake the driver if it waits.
 * Thread-safety: any thread. */
void sl__exec_release(struct sl__exec *ex, size_t bytes);

/* Reserve `bytes` of budget and update the peak.  Thread-safety: the driver only. */
void sl__exec_reserve(struct sl__exec *ex, size_t bytes);

/* Note a failure for the run's first error (and fail_fast).  Thread-safety: any thread. */
void sl__exec_note_failure(struct sl__exec *ex, sl_status code, const struct sl_error *err);

/* What settled a chunk's status (sl__exec_chunk_settle). */
enum sl__chunk_outcome {
    SL__CHUNK_SKIPPED,     /* another part of a split run owns it */
    SL__CHUNK_RAN,         /* its task evaluated it: `code` is its result */
    SL__CHUNK_UNIT_FAILED, /* the shard (unit) holding it was not written */
    SL__CHUNK_UNRUN,       /* the run ended before it ran: SL_ECANCELED */
    SL__CHUNK_RESUMED      /* an earlier run wrote its unit (the plan's journal): SL_OK */
};

/*
 * Settle the status of chunk `linear` of put `ps` after `how` (with `code`
 * and, for a failure, `text`): the one place a run decides a chunk's
 * status; a failure newly recorded keeps its message (sl__plan_error_add).
 * Statuses start SL__CODE_PENDING; the reconciliation rule is in
 * exec_state.c.
 * @return true when the status changed.
 * Thread-safety: any thread (workers, writer threads of transactions, the
 * driver); SKIPPED and RESUMED before any task of the stage runs, UNRUN
 * after the run went idle.
 */
bool sl__exec_chunk_settle(struct sl__exec *ex, struct sl__put_state *ps, uint64_t linear,
                           enum sl__chunk_outcome how, sl_status code, const char *text);

/*
 * Settle every chunk of the puts whose unit the plan's journal holds as
 * resumed (SL_OK), and count them in ex->n_resumed and the progress
 * counters.  The driver, before any task runs (exec_put.c).
 */
void sl__exec_puts_resume(struct sl__exec *ex);

/* Whether the chunk at position `pos` of box `box` of put stage `stage`
 * was settled resumed (the driver, before emitting it). */
bool sl__exec_pos_resumed(const struct sl__exec *ex, uint32_t stage, uint64_t box, uint64_t pos);

/* The transaction of put node `node`, or NULL. */
sl_txn *sl__exec_put_txn(const struct sl__exec *ex, uint32_t node);

/* Bytes staged in the run's open transactions. */
size_t sl__exec_staged(const struct sl__exec *ex);

#endif /* SL_EXEC_INTERNAL_H */
