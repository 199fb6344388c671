/* SPDX-License-Identifier: MIT */
/*
 * core's "parallel for" seam (struct sl_parallel) on the pool, so io can
 * decode the chunks of a batched read, or encode the shards of a commit,
 * on every worker without knowing the pool.
 *
 * DESIGN
 * Iterations are claimed in grains from one shared counter by helper tasks,
 * one per worker at most; a worker that calls the loop claims grains
 * itself and then waits on the helpers' group, which runs other tasks
 * meanwhile, so a loop inside a task never deadlocks.  A grain is n / (8 x
 * workers), at least 1: eight grains per worker balance uneven iterations.
 * An indexed body is called once per iteration (iterations are
 * chunk-sized, micro- to milliseconds); a ranged body gets each grain
 * whole, so a loop of tiny iterations costs a few claims per worker, not a
 * call each.  Claims use a CAS that stops at n, so the counter never
 * overflows.
 */
#include <stdatomic.h>

#include <sluice/task.h>

#include "runtime_internal.h"

struct pfor_job {
    sl_parallel_body *body;        /* the loop body, or NULL when ranged */
    sl_parallel_range_body *range; /* the ranged body, or NULL */
    void *arg;                     /* its argument */
    size_t n;                      /* iterations */
    size_t grain;                  /* iterations per claim */
    _Atomic size_t next;           /* first unclaimed iteration */
    _Atomic size_t done;           /* iterations run */
};

/* Claim and run grains until none is left. */
static void
pfor_claim_loop(struct pfor_job *job, unsigned worker)
{
    size_t ran = 0;
    size_t i = atomic_load_explicit(&job->next, memory_order_relaxed);
    while (i < job->n) {
        size_t end = job->n - i > job->grain ? i + job->grain : job->n;
        /* Relaxed: the claim only splits the index range; the group orders
         * the iterations' effects before the caller's return. */
        if (!atomic_compare_exchange_weak_explicit(&job->next, &i, end, memory_order_relaxed,
                                                   memory_order_relaxed))
            continue;
        if (job->range != NULL)
            job->range(job->arg, i, end, worker);
        else
            for (size_t k = i; k < end; k++)
                job->body(job->arg, k, worker);
        ran += end - i;
        i = end;
    }
    atomic_fetch_add_explicit(&job->done, ran, memory_order_relaxed);
}

static void
pfor_task(void *arg, sl_status status)
{
    if (status != SL_OK)
        return;
    pfor_claim_loop(arg, sl__worker_current()->index);
}

/* Run `job` (its body and argument set) on the pool. */
static sl_status
pool_pfor(sl_pool *pool, struct pfor_job job_in, size_t n)
{
    if (n == 0)
        return SL_OK;
    struct sl__worker *w = sl__worker_of(pool);
    unsigned n_workers = pool->n_workers;
    struct pfor_job job = job_in;
    job.n = n;
    job.grain = n / (8 * (size_t)n_workers);
    if (job.grain == 0)
        job.grain = 1;
    atomic_init(&job.next, 0);
    atomic_init(&job.done, 0);
    size_t n_grains = n / job.grain + (n % job.grain != 0);
    size_t n_helpers = n_grains < n_workers ? n_grains : n_workers;
    if (w != NULL)
        n_helpers--; /* the caller is one of them */

    struct sl_task_group group;
    sl_task_group_init(&group, pool);
    for (size_t h = 0; h < n_helpers; h++)
        if (sl_task_group_submit(&group, pfor_task, &job) != SL_OK)
            break; /* shutting down: whoever runs claims the rest */
    if (w != NULL)
        pfor_claim_loop(&job, w->index);
    /* The group is never cancelled; whether every iteration ran says more. */
    sl_status waited = sl_task_group_wait(&group);
    (void)waited;
    return atomic_load_explicit(&job.done, memory_order_relaxed) == n ? SL_OK : SL_ECANCELED;
}

static sl_status
pool_parallel_run(void *ctx, size_t n, sl_parallel_body *body, void *arg)
{
    if (ctx == NULL || body == NULL)
        return SL_EINVAL;
    return pool_pfor(ctx, (struct pfor_job){.body = body, .arg = arg}, n);
}

static sl_status
pool_parallel_run_ranges(void *ctx, size_t n, sl_parallel_range_body *body, void *arg)
{
    if (ctx == NULL || body == NULL)
        return SL_EINVAL;
    return pool_pfor(ctx, (struct pfor_job){.range = body, .arg = arg}, n);
}

struct sl_parallel
sl_pool_parallel(sl_pool *pool)
{
    return (struct sl_parallel){
        .ctx = pool,
        .n_workers = pool != NULL ? pool->n_workers : 1,
        .run = pool != NULL ? pool_parallel_run : NULL,
        .run_ranges = pool != NULL ? pool_parallel_run_ranges : NULL,
    };
}
