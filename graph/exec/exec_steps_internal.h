/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the executor's steps that the driver (exec.c)
 * calls, one section per file: waiting for room or idleness, emitting
 * tasks, the parts of a split run, put transactions and evaluating chunks.
 * Open to the graph tests, not to the rest of graph/.
 */
#ifndef SL_EXEC_STEPS_INTERNAL_H
#define SL_EXEC_STEPS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec_internal.h"

/* ---- the driver's waits (exec_wait.c) --------------------------------------- */

/* Progress totals, computed once per run. */
struct sl__exec_totals {
    uint64_t chunks;           /* output chunks of every put */
    uint64_t bytes;            /* their decoded bytes */
    uint64_t next_progress_ns; /* when the next progress call is due */
};

/* Call the progress callback with the run's counters (`final`: the last call). */
void sl__exec_progress(struct sl__exec *ex, uint64_t total, uint64_t bytes_total, bool final);

/*
 * Sleep until `what` holds (room for `need` bytes and fewer than `max_tasks`
 * tasks in flight, or no task in flight), calling the progress callback
 * when due.
 * @return SL_OK, or SL_EBUDGET when room is awaited with nothing running
 * (intermediate chunks waiting for consumers hold the budget).
 * Thread-safety: the driver only.
 */
sl_status sl__exec_wait(struct sl__exec *ex, enum sl__exec_wait what, size_t need,
                        uint64_t max_tasks, struct sl__exec_totals *tot, struct sl_error *err);

/* ---- emitting tasks (exec_emit.c) ------------------------------------------- */

/* Scratch list of intermediate chunks one task reads. */
struct sl__exec_needs {
    uint32_t *node;   /* producer node ids */
    uint64_t *coords; /* SL_MAX_RANK coordinates each */
    size_t n;         /* in use */
    size_t cap;       /* allocated */
};

/* The driver's state while emitting. */
struct sl__exec_drive {
    struct sl__exec_totals tot;  /* progress totals */
    uint64_t max_tasks;          /* queued tasks at most */
    struct sl__exec_needs needs; /* scratch */
};

/*
 * Emit a task computing `count` chunks of stage `stage` from position `first`
 * of box `box` (and `output`, the intermediate chunk it produces, or NULL):
 * the intermediate chunks it reads first, then room in the budget, then
 * the pool.  A task that could not be prepared still runs, as cancelled.
 * @return SL_OK, SL_ENOMEM, SL_EOVERFLOW, SL_EBUDGET or the pool's refusal.
 * Thread-safety: the driver only.
 */
sl_status sl__exec_task_emit(struct sl__exec *ex, struct sl__exec_drive *dr, uint32_t stage,
                             uint64_t box, uint64_t first, uint32_t count, struct sl__entry *output,
                             struct sl_error *err);

/* Wait for workers still leaving their last task, then free every task.
 * Thread-safety: the driver only, after the run went idle. */
void sl__exec_tasks_fini(struct sl__exec *ex);

/* ---- parts of a split run (exec_parts.c) ------------------------------------ */

/*
 * The positions [lo, hi) of put stage `stage` that this part runs: the
 * chunks split into n_parts runs of about equal count, cut at box (shard)
 * boundaries when there are several boxes, so no shard is written by two
 * parts.
 */
void sl__exec_part_range(const struct sl__exec *ex, uint32_t stage, uint64_t *lo, uint64_t *hi);

/* Mark the chunks of put stage `stage` outside [lo, hi) as SL_ESKIPPED
 * (before any task of the stage runs). */
void sl__exec_part_mark_skipped(struct sl__exec *ex, uint32_t stage, uint64_t lo, uint64_t hi);

/* ---- put transactions (exec_put.c) ------------------------------------------ */

/* Open a transaction per put (see struct sl__exec_put).
 * @return SL_OK, SL_ENOMEM or the transaction's failure. */
sl_status sl__exec_puts_open(struct sl__exec *ex, struct sl_error *err);

/* Commit the transactions of the puts of `phase`: write what is still staged. */
void sl__exec_puts_commit(struct sl__exec *ex, uint32_t phase);

/* Close (abort) what is still open and free the puts. */
void sl__exec_puts_close(struct sl__exec *ex);

/* ---- evaluating chunks (exec_eval.c) ---------------------------------------- */

/* Compute every chunk of task `t`.  Thread-safety: a worker, or the driver. */
void sl__exec_task_run(struct sl__exec *ex, struct sl__exec_task *t, unsigned worker);

/* Fail intermediate chunk `e`, whose task could not be made (out of
 * memory), and release the tasks waiting for it.  Thread-safety: the driver. */
void sl__exec_entry_abandon(struct sl__exec *ex, struct sl__entry *e, sl_status code,
                            const char *text);

#endif /* SL_EXEC_STEPS_INTERNAL_H */
