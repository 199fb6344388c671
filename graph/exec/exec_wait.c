/* SPDX-License-Identifier: MIT */
/*
 * The driver's waits: for budget and a free task slot before it emits a
 * task, and for every task to finish at the end of a phase, calling the
 * progress callback while it waits.
 *
 * DESIGN: the driver looks, yields for a short while, then sleeps on the
 * run's condition variable; tasks wake it through exec_state.c when they
 * return budget or finish (see sl__exec_release), and only when it sleeps.
 */
#include <sched.h>
#include <stddef.h>
#include <time.h>

#include <sluice/plan.h>

#include "exec_internal.h"
#include "exec_steps_internal.h"

/* How long the driver yields and looks again before it sleeps (ns). */
#define EXEC_DRIVER_SPIN_NS 200000u

void
sl__exec_progress(struct sl__exec *ex, uint64_t total, uint64_t bytes_total, bool final)
{
    const struct sl_plan_opts *o = &ex->plan->opts;
    if (o->progress == NULL)
        return;
    struct sl_progress p = {
        .chunks_done = sl__exec_sum(ex, offsetof(struct sl__exec_worker, chunks_done)),
        .chunks_total = total,
        .chunks_failed = sl__exec_sum(ex, offsetof(struct sl__exec_worker, chunks_failed)),
        .bytes_done = sl__exec_sum(ex, offsetof(struct sl__exec_worker, bytes_done)),
        .bytes_total = bytes_total,
        .elapsed_s = (double)(sl__exec_now_ns() - ex->t0_ns) * 1e-9,
        .final = final,
    };
    p.bytes_per_s = p.elapsed_s > 0 ? (double)p.bytes_done / p.elapsed_s : 0;
    p.eta_s = p.bytes_done > 0 && p.bytes_per_s > 0
                  ? (double)(bytes_total - p.bytes_done) / p.bytes_per_s
                  : -1;
    o->progress(o->progress_ctx, &p);
}

/* Whether `what` holds now. */
static bool
exec_ready(struct sl__exec *ex, enum sl__exec_wait what, size_t need, uint64_t max_tasks)
{
    /* Seq-cst: the second half of the Dekker pair in sl__exec_wake_driver
     * (after the driver's seq_cst store of driver_waiting); as an acquire
     * it also pairs with each task's release decrement of in_flight, so a
     * driver that finds the run idle sees everything the tasks wrote. */
    uint64_t in_flight = atomic_load_explicit(&ex->in_flight, memory_order_seq_cst);
    if (what == SL__WAIT_IDLE)
        return in_flight == 0;
    size_t budget = ex->plan->opts.memory_budget;
    if (budget == 0)
        return in_flight < max_tasks;
    /* Seq-cst: as the load of in_flight above. */
    size_t alive = atomic_load_explicit(&ex->accounted, memory_order_seq_cst) + sl__exec_staged(ex);
    return alive + need <= budget && in_flight < max_tasks;
}

sl_status
sl__exec_wait(struct sl__exec *ex, enum sl__exec_wait what, size_t need, uint64_t max_tasks,
              struct sl__exec_totals *tot, struct sl_error *err)
{
    const uint64_t interval = (uint64_t)(ex->plan->opts.progress_interval_s * 1e9);
    const uint64_t wait_start = sl__exec_now_ns();
    for (;;) {
        uint64_t now = sl__exec_now_ns();
        if (now >= tot->next_progress_ns) {
            sl__exec_progress(ex, tot->chunks, tot->bytes, false);
            tot->next_progress_ns = now + interval;
        }
        if (exec_ready(ex, what, need, max_tasks))
            return SL_OK;
        /* Nothing running will free budget any more.  Acquire: pairs with
         * the tasks' release decrements of in_flight, so the re-check sees
         * every byte they returned before they ended. */
        if (what == SL__WAIT_ROOM &&
            atomic_load_explicit(&ex->in_flight, memory_order_acquire) == 0 &&
            !exec_ready(ex, what, need, max_tasks))
            return sl_error_set(err, SL_EBUDGET, NULL,
                                "memory budget of %zu bytes exhausted: %zu bytes are held by "
                                "intermediate chunks awaiting their readers and the next task "
                                "needs %zu",
                                ex->plan->opts.memory_budget,
                                atomic_load_explicit(&ex->accounted, memory_order_relaxed), need);
        /* A bounded spin before the sleep: short runs end, and tasks free
         * their slots, within microseconds, and a sleeping driver costs
         * every task that ends a look at driver_waiting plus, for the one
         * that wakes it, a lock and a futex call, and the driver a context
         * switch.  Each round yields the CPU (a worker sharing this core
         * runs), and after EXEC_DRIVER_SPIN_NS the driver blocks on `cond`. */
        if (now - wait_start < EXEC_DRIVER_SPIN_NS) {
            sched_yield();
            continue;
        }
        pthread_mutex_lock(&ex->lock);
        /* Seq-cst: the driver's half of the Dekker pair in
         * sl__exec_wake_driver, before exec_ready's seq_cst loads. */
        atomic_store_explicit(&ex->driver_waiting, (int)what, memory_order_seq_cst);
        if (!exec_ready(ex, what, need, max_tasks)) {
            uint64_t until = tot->next_progress_ns;
            struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
                                  .tv_nsec = (long)(until % 1000000000u)};
            pthread_cond_timedwait(&ex->cond, &ex->lock, &ts);
        }
        /* Relaxed: a worker that still sees the driver waiting only
         * signals once too often; the driver looks again before it sleeps. */
        atomic_store_explicit(&ex->driver_waiting, 0, memory_order_relaxed);
        pthread_mutex_unlock(&ex->lock);
    }
}
