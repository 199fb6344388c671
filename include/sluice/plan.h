/* SPDX-License-Identifier: MIT */
/*
 * Plans and runs of a sealed graph (<sluice/graph.h>): sl_plan_create fuses
 * the graph's nodes into stages and sizes them for running; a plan explains
 * itself (text or Graphviz DOT), runs on a pool any number of times, and
 * after each run reports every put's per-chunk status array, the failed
 * chunks, a summary and a JSON report.  Runs split across processes merge
 * their parts' results here too.
 */
#ifndef SL_PLAN_H
#define SL_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/graph.h>
#include <sluice/grid.h>
#include <sluice/pool.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- plans and runs ------------------------------------------------------- */

/* A prepared plan: the fusion stages of a sealed graph, sized for running. */
typedef struct sl_plan sl_plan;

/* What a run does when a chunk fails. */
typedef enum sl_error_policy {
    SL_POLICY_COLLECT,  /* record it, mark its dependents upstream-failed, go on */
    SL_POLICY_FAIL_FAST /* record it and cancel every chunk not yet started */
} sl_error_policy;

/* Progress of a run, as handed to a progress callback. */
struct sl_progress {
    uint64_t chunks_done;   /* output chunks of puts finished (ok or not) */
    uint64_t chunks_total;  /* output chunks of every put */
    uint64_t chunks_failed; /* ... of which failed, upstream-failed or were cancelled */
    uint64_t bytes_done;    /* decoded bytes of the finished output chunks */
    uint64_t bytes_total;   /* decoded bytes of every output chunk */
    double elapsed_s;       /* since the run started */
    double bytes_per_s;     /* average rate so far */
    double eta_s;           /* estimated seconds left; negative when unknown */
    bool final;             /* the last call of the run */
};

/* Called from the thread that runs sl_plan_run, never concurrently. */
typedef void sl_progress_fn(void *ctx, const struct sl_progress *progress);

/*
 * Called from the thread that runs sl_plan_run when phase `phase` (of
 * `n_phases`) has finished, before the next starts: puts whose inputs are
 * arrays written by earlier puts run in later phases.  Runs across
 * processes wait here for every process (a barrier).  Returning anything
 * but SL_OK stops the run with that status.
 */
typedef sl_status sl_phase_fn(void *ctx, uint32_t phase, uint32_t n_phases);

/* The most retries sl_plan_opts.retries may ask. */
#define SL_PLAN_MAX_RETRIES 100

/* How to prepare and run a plan. */
struct sl_plan_opts {
    size_t memory_budget;       /* bytes of chunk buffers alive at once; 0: no limit */
    sl_error_policy policy;     /* default SL_POLICY_COLLECT */
    bool missing_is_error;      /* a stored chunk that is absent fails (SL_ENOTFOUND)
                                   instead of reading as the fill value */
    size_t max_errors;          /* failed chunks whose messages are kept (the codes of
                                   all are kept); more are counted as dropped */
    sl_progress_fn *progress;   /* NULL: none */
    void *progress_ctx;         /* passed to `progress` */
    double progress_interval_s; /* seconds between progress calls */
    const char *trace_path;     /* write a Chrome trace (JSON) of every task here after
                                   each run; NULL: none.  Copied. */
    uint32_t n_parts;           /* split every put's chunks into this many parts along
                                   shard boundaries, balanced by chunk count; 1: one part */
    uint32_t part;              /* the part this plan runs (< n_parts); the others' chunks
                                   get SL_ESKIPPED */
    sl_phase_fn *phase_done;    /* NULL: none */
    void *phase_ctx;            /* passed to `phase_done` */
    uint32_t retries;           /* tries after the first of a store operation that failed
                                   transiently (sl_status_transient): a get's chunk read,
                                   a put's unit write (SL_PLAN_MAX_RETRIES at most; 0: none) */
    double retry_backoff_s;     /* the first retry waits up to this, doubling per retry
                                   up to 2 s, each wait jittered to half of it at least
                                   (0.05 s; at most 60) */
};
/* clang-format off */
/**
 * SL_PLAN_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_plan_opts
sl_plan_opts_default(void)
{
    struct sl_plan_opts o;
    memset(&o, 0, sizeof o);
    o.policy = SL_POLICY_COLLECT;
    o.max_errors = 10000;
    o.progress_interval_s = 0.5;
    o.n_parts = 1;
    o.retry_backoff_s = 0.05;
    return o;
}
#define SL_PLAN_OPTS_DEFAULT (sl_plan_opts_default())
/* clang-format on */

/* One failed chunk of a put, with its message. */
struct sl_chunk_error {
    uint32_t node;           /* the put or putter node */
    struct sl_chunk_key key; /* the chunk, in the node's grid */
    sl_status code;          /* why */
    char text[512];          /* the message, naming the chunk and the cause; a longer one
                                keeps its head and tail around "..." */
};

/* Counts of the last run. */
struct sl_run_summary {
    uint64_t n_chunks;             /* output chunks of every put */
    uint64_t n_ok;                 /* written (or handed to the putter) without error */
    uint64_t n_failed;             /* failed themselves */
    uint64_t n_upstream;           /* not run because an input chunk failed */
    uint64_t n_canceled;           /* not run because the run stopped (fail_fast) */
    uint64_t n_skipped;            /* left to other parts of a split run (SL_ESKIPPED) */
    uint64_t n_tasks;              /* tasks run, intermediate chunks included */
    uint64_t bytes_read;           /* encoded bytes read from stores */
    uint64_t bytes_written;        /* encoded bytes written to stores */
    uint64_t objects_written;      /* objects (chunks, shards) written to stores */
    size_t peak_bytes;             /* most chunk-buffer bytes accounted alive at once */
    size_t budget_bytes;           /* the budget (0: none) */
    size_t errors_dropped;         /* failed chunks beyond max_errors (codes kept, no message) */
    double elapsed_s;              /* wall time of the run */
    sl_status first_error;         /* the first failure's code, or SL_OK */
    uint64_t remote_requests;      /* requests to remote stores (HTTP), completed */
    uint64_t remote_retries;       /* their tries after the first */
    unsigned remote_max_in_flight; /* the most requests a remote store had in flight */
    uint64_t n_resumed;            /* of n_ok, chunks an earlier run wrote: their units were
                                      in the plan's journal (sl_journal_open) and skipped */
    uint64_t n_retries;            /* store operations tried again after a transient failure
                                      (sl_plan_opts.retries): chunk reads and unit writes */
    double journal_s;              /* time spent in the plan's journal, set by sl_journal_close:
                                      opening (reading the earlier one), records and syncs
                                      (every thread's summed) and closing; 0 without one */
    sl_status run_error;           /* SL_OK, or why the run itself could not go on (SL_EBUDGET,
                                      SL_ENOMEM for its own structures, a phase callback's or
                                      the trace's failure): then chunks were left untried
                                      (n_canceled) and sl_plan_run returned this code.  SL_OK
                                      with first_error set: the run went on, chunks failed */
};

/* A put's per-chunk status array. */
struct sl_put_status {
    const char *name;           /* the node's name */
    const struct sl_grid *grid; /* its chunk grid */
    const uint8_t *codes;       /* sl_status of each chunk by C-order linear index;
                                   SL_OK, or why it failed */
    uint64_t n_ok;              /* chunks with SL_OK */
    uint64_t n_failed;          /* chunks with any other code but SL_ESKIPPED */
};

/**
 * Plan the sealed graph `g` (retained by the plan): fuse, size the status
 * arrays and check the budget.  Free the plan with sl_plan_destroy.
 * @return the plan, or NULL with SL_ESTATE (graph not sealed), SL_EBUDGET
 * (the budget is smaller than what one task needs, with both numbers and
 * the stage), SL_EINVAL (bad options), SL_ENOMEM.
 * Thread-safety: any thread; plans of one sealed graph may be made at once.
 */
SL_API sl_plan *sl_plan_create(sl_graph *g, const struct sl_plan_opts *opts, struct sl_error *err);

/**
 * The sealed graph a plan runs (borrowed from the plan).
 * Thread-safety: any thread, even while the plan runs.
 */
SL_API const sl_graph *sl_plan_graph(const sl_plan *plan);

/**
 * Free a plan (not while it runs).  NULL is a no-op.
 * Thread-safety: one thread, once no other thread uses the plan and it does
 * not run.
 */
SL_API void sl_plan_destroy(sl_plan *plan);

/**
 * Write the plan for people: nodes, stages with their task counts and
 * bytes, and every edge with "fused" or why not.  @return SL_OK or SL_EIO
 * (the stream's error flag is set).
 * Thread-safety: any thread, even while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_explain(const sl_plan *plan, FILE *out, struct sl_error *err);

/**
 * Write the plan as Graphviz DOT.  @return SL_OK or SL_EIO (the stream's error flag is set).
 * Thread-safety: any thread, even while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_write_dot(const sl_plan *plan, FILE *out,
                                                struct sl_error *err);

/**
 * The counts of the last run (zeros before the first).
 * Thread-safety: any thread, not while the plan runs.
 */
SL_API void sl_plan_summary(const sl_plan *plan, struct sl_run_summary *out);

/**
 * Run the plan on `pool`: walk every put's output chunks (shard by shard),
 * generating tasks lazily within the memory budget, and record every
 * chunk's status.  A plan can run any number of times, one run at a time;
 * each run starts from fresh status arrays.
 * @return SL_OK when every chunk succeeded; otherwise the first failure's
 * code, with its message in `err` (the status arrays and sl_plan_errors
 * hold every failure).  SL_EBUDGET when the budget cannot hold what must
 * be alive to go on; SL_ENOMEM when the run's own structures do not fit.
 * A run that could not go on and one where chunks failed may return the
 * same code (SL_ENOMEM, say): sl_plan_summary's `run_error` tells them
 * apart (set only for the former).
 * A run whose every chunk succeeded then writes the OME "omero" metadata
 * of the pyramids that asked for it (sl_plan_pyramid_omero); when that
 * fails, its code and message.
 * Thread-safety: one run per plan at a time; the pool may run other work.
 */
SL_API SL_NODISCARD sl_status sl_plan_run(sl_plan *plan, sl_pool *pool, struct sl_error *err);

/**
 * The status array of put (or putter) node `node` from the last run.
 * @return SL_OK, or SL_EINVAL when `node` is not a put of the plan's graph
 * (naming it and the number of puts).
 * Thread-safety: any thread, not while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_put_status(const sl_plan *plan, uint32_t node,
                                                 struct sl_put_status *out, struct sl_error *err);

/**
 * The failed chunks of the last run that kept their message, in the order
 * they failed; `*count` receives how many.
 * Thread-safety: any thread, not while the plan runs.
 */
SL_API const struct sl_chunk_error *sl_plan_errors(const sl_plan *plan, size_t *count);

/*
 * Runs split across processes (sl_plan_opts.n_parts > 1): each process runs
 * its part, then one of them folds in the others' results before reporting.
 */

/**
 * Take the codes another part recorded for put `node` (`n_codes` = its
 * chunk count) where this plan has SL_ESKIPPED; codes equal to this plan's
 * are accepted (a part merged twice).  Allowed between phases, from the
 * phase callback, so that gets of later phases see which chunks failed in
 * other parts.
 * @return SL_OK; SL_EINVAL when `node` is not a put, the count differs, or
 * a chunk has different codes in both (naming it and the codes).
 * Thread-safety: the thread running the plan, from its phase callback, or one
 * thread between runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_merge_codes(sl_plan *plan, uint32_t node,
                                                  const uint8_t *codes, uint64_t n_codes,
                                                  struct sl_error *err);

/**
 * Append another part's failed-chunk records (as sl_plan_errors returns
 * them); those beyond max_errors are counted as dropped.
 * Thread-safety: one thread, not while the plan runs.
 */
SL_API void sl_plan_merge_errors(sl_plan *plan, const struct sl_chunk_error *errors, size_t n);

/**
 * Add another part's summary: bytes, tasks, objects written and remote
 * requests and retries add; peak, elapsed time and remote requests in
 * flight take the larger; the first error is kept if this plan has none; the chunk
 * counts are recounted from the merged status arrays.
 * Thread-safety: one thread, not while the plan runs.
 */
SL_API void sl_plan_merge_summary(sl_plan *plan, const struct sl_run_summary *other);

/**
 * Write the last run's report as JSON: the summary, and per put its counts
 * and each failed chunk with coordinates, code and message.
 * @return SL_OK, SL_ENOMEM (no memory to sort the failed chunks; nothing
 * written) or SL_EIO (the stream's error flag is set).
 * Thread-safety: any thread, not while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_write_report(const sl_plan *plan, FILE *out,
                                                   struct sl_error *err);

/* How the sets of a stats node are laid out. */
struct sl_stats_info {
    uint64_t n_sets;                  /* product of per_extent (1 without per axes) */
    uint32_t n_per;                   /* the node's per axes */
    uint32_t per[SL_MAX_RANK];        /* input axes, ascending */
    uint64_t per_extent[SL_MAX_RANK]; /* the input's extent along each; set k is the C-order
                                         index of (i_0, ..., i_{n_per-1}) over these */
    size_t n_percentiles;             /* percentiles asked for */
    double percentile_q[SL_STATS_MAX_PERCENTILES]; /* which, in [0, 100] */
    bool omero; /* a pyramid's omero node: each successful run writes its sets as the
                   group's OME "omero" channel windows (sl_plan_pyramid_omero) */
};

/**
 * The layout of stats node `node`'s sets.
 * @return SL_OK or SL_EINVAL (NULL argument; `node` is no stats node).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_plan_stats_info(const sl_plan *plan, uint32_t node,
                                                 struct sl_stats_info *out, struct sl_error *err);

/**
 * Set `set`'s statistics from the last run of stats node `node`.  The
 * histogram pointer in `out` stays valid until the plan runs again or is
 * destroyed.
 * @return SL_OK; SL_EINVAL (NULL argument, no stats node, no such set);
 * SL_EUPSTREAM when a chunk of the node failed or did not run (naming the
 * chunk: the statistics would leave it out); SL_EUNSUPPORTED for a run
 * split into parts (each part sees only its chunks).
 * Thread-safety: any thread, while no run of the plan is in progress.
 */
SL_API SL_NODISCARD sl_status sl_plan_stats(const sl_plan *plan, uint32_t node, uint64_t set,
                                            struct sl_stats_result *out, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_PLAN_H */
