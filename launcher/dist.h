/* SPDX-License-Identifier: MIT */
/*
 * Runs across processes.  Built with the `mpi` feature and started under
 * mpirun, every rank runs the same command on its part of every put's
 * chunks (cut at shard boundaries), waits for the others between phases,
 * and sends its results to rank 0, which shows the whole run's progress,
 * writes the report and decides the exit status every rank returns.
 * Without MPI (or outside mpirun) there is one process and these calls do
 * nothing beyond it.
 */
#ifndef SL_LAUNCHER_DIST_H
#define SL_LAUNCHER_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include <sluice.h>

/* Start MPI when the program was launched by mpirun (call first in main). */
void dist_init(int *argc, char ***argv);

/*
 * Stop MPI (call last in main with the command's exit status).  A rank that
 * failed before the run's final exchange (setting up its part) aborts the
 * whole job with `rc`, since the other ranks may be waiting for it.
 */
void dist_finish(int rc);

/* This process's rank and the number of processes (0 and 1 when alone). */
int dist_rank(void);
int dist_size(void);

/*
 * Make `o` run this rank's part, with a barrier between phases, and route
 * progress through rank 0: `show` (may be NULL) draws the whole run's
 * progress there, with `show_ctx`.
 */
void dist_plan_opts(struct sl_plan_opts *o, sl_progress_fn *show, void *show_ctx);

/* Tell the phase barrier which plan runs (call after preparing it). */
void dist_set_plan(sl_plan *plan);

/*
 * After a run: every rank sends its status arrays, failure records and
 * summary to rank 0, which folds them into `plan` (so its summary and
 * report cover the whole run).  `local_status` is this rank's run status.
 * @return the run's status as rank 0 sees it, the same on every rank.
 */
sl_status dist_gather(sl_plan *plan, sl_status local_status);

/*
 * Create the array at `path` in `store` from `spec` once for the whole run:
 * rank 0 creates it, the others open it when rank 0 has.  Alone: create.
 * @return the array, or NULL with the error (rank 0's, on every rank).
 */
sl_array *dist_create_array(sl_store *store, const char *path, const struct sl_array_spec *spec,
                            struct sl_error *err);

/*
 * Rank 0's `status` and `err` on every rank (alone: unchanged): for work
 * rank 0 does first, such as creating outputs the others then open.
 */
sl_status dist_share(sl_status status, struct sl_error *err);

/* Give every rank rank 0's NUL-terminated text in `buf` (`size` bytes, the
 * same on every rank). */
void dist_share_text(char *buf, size_t size);

/* Agree on an exit status: rank 0's, on every rank. */
int dist_exit_status(int rc);

/* Agree on an exit status every rank chose: the largest, on every rank
 * (for work each rank does, such as opening its own journal). */
int dist_worst(int rc);

/* Rank 0's `flag` on every rank (alone: `flag`). */
bool dist_share_flag(bool flag);

#endif /* SL_LAUNCHER_DIST_H */
