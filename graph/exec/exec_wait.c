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

#include "exec_internal.h"

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
    uint64_t in_flight = atomic_load(&ex->in_flight);
    if (what == SL__WAIT_IDLE)
        return in_flight == 0;
    size_t budget = ex->plan->opts.memory_budget;
    bool fits = budget == 0 || atomic_load(&ex->accounted) + sl__exec_staged(ex) + need <= budget;
    return fits && in_flight < max_tasks;
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
        if (what == SL__WAIT_ROOM && atomic_load(&ex->in_flight) == 0)
            return sl_error_set(err, SL_EBUDGET, NULL,
                                "memory budget of %zu bytes exhausted: %zu bytes are held by "
                                "intermediate chunks awaiting their readers and the next task "
                                "needs %zu",
                                ex->plan->opts.memory_budget, atomic_load(&ex->accounted), need);
        /* Short runs end within microseconds: look again a few times
         * before paying for a sleep and a wake-up. */
        if (now - wait_start < EXEC_DRIVER_SPIN_NS) {
            sched_yield();
            continue;
        }
        pthread_mutex_lock(&ex->lock);
        atomic_store(&ex->driver_waiting, (int)what);
        if (!exec_ready(ex, what, need, max_tasks)) {
            uint64_t until = tot->next_progress_ns;
            struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
                                  .tv_nsec = (long)(until % 1000000000u)};
            pthread_cond_timedwait(&ex->cond, &ex->lock, &ts);
        }
        atomic_store(&ex->driver_waiting, 0);
        pthread_mutex_unlock(&ex->lock);
    }
}
