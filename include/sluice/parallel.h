/* SPDX-License-Identifier: MIT */
/*
 * The "parallel for" seam.  io knows no pool: where it can use parallelism
 * (decoding a batched read, encoding the shards of a commit) it takes a
 * `struct sl_parallel` that the runtime implements and the caller passes in.
 * A NULL `struct sl_parallel *` means a plain loop on the calling thread.
 */
#ifndef SL_PARALLEL_H
#define SL_PARALLEL_H

#include <stddef.h>

#include <sluice/common.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One iteration: `index` in [0, n); `worker` in [0, n_workers) names the
 * thread running it, so bodies can keep per-worker scratch (codec contexts)
 * without locking.  Two iterations never run at once with the same `worker`.
 */
typedef void sl_parallel_body(void *arg, size_t index, unsigned worker);

/*
 * A range of iterations, [begin, end), all on `worker`: for loops whose
 * iterations are too small to pay a call each (the body loops itself, and
 * the compiler can vectorize it).
 */
typedef void sl_parallel_range_body(void *arg, size_t begin, size_t end, unsigned worker);

/* An executor of parallel loops; the runtime's pool provides one. */
struct sl_parallel {
    void *ctx;          /* implementation state, passed back to `run` */
    unsigned n_workers; /* bound on the `worker` argument bodies receive; >= 1 */
    /* Run body(arg, i, w) for every i in [0, n) and return when all are done.
     * Returns SL_OK, or SL_ECANCELED when the executor shut down first (then
     * some iterations may not have run). */
    sl_status (*run)(void *ctx, size_t n, sl_parallel_body *body, void *arg);
    /* The same over ranges: body(arg, b, e, w) for disjoint ranges covering
     * [0, n).  NULL: sl_parallel_run_ranges calls `run` once per index. */
    sl_status (*run_ranges)(void *ctx, size_t n, sl_parallel_range_body *body, void *arg);
};

/**
 * Run `body` for every index in [0, n) on `par`, or in a plain loop with
 * worker 0 when `par` is NULL.  @return SL_OK, or what `par->run`
 * returns: SL_ECANCELED when the executor shut down first.
 * No `struct sl_error`: the one failure, SL_ECANCELED (the executor shut
 * down), has nothing more to say, and `run` has no room for one.
 * Thread-safety: any thread, as `par` allows (the pool's executor: any).
 */
SL_API SL_NODISCARD sl_status sl_parallel_run(const struct sl_parallel *par, size_t n,
                                              sl_parallel_body *body, void *arg);

/**
 * Run `body` over disjoint ranges covering [0, n) on `par` (a few ranges
 * per worker, claimed as workers come free), or once over [0, n) with
 * worker 0 when `par` is NULL.  An executor without `run_ranges` gets one
 * `run` of n iterations, each a range of one.
 * @return SL_OK, SL_EINVAL (no body), or SL_ECANCELED when the executor
 * shut down first (some ranges may not have run).
 * Thread-safety: any thread, as `par` allows (the pool's executor: any).
 */
SL_API SL_NODISCARD sl_status sl_parallel_run_ranges(const struct sl_parallel *par, size_t n,
                                                     sl_parallel_range_body *body, void *arg);

/**
 * Number of distinct `worker` values bodies may see: 1 when `par` is NULL.
 * Thread-safety: any thread.
 */
SL_API unsigned sl_parallel_workers(const struct sl_parallel *par);

#ifdef __cplusplus
}
#endif

#endif /* SL_PARALLEL_H */
