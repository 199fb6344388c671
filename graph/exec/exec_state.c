/* SPDX-License-Identifier: MIT */
/*
 * The executor's shared state: what the driver (exec.c, exec_emit.c,
 * exec_wait.c) and the task side (exec_eval.c, exec_put.c) both touch in a
 * run: the clock and box geometry, the budget and the driver's wake-up,
 * the run's first failure, the put transactions, and each output chunk's
 * status.
 *
 * DESIGN: this file sits below both halves of the executor and calls
 * neither, so they never call each other in a circle: tasks report here,
 * and the driver reads what they reported here.
 */
#include <stddef.h>
#include <time.h>

#include <sluice/plan.h>

#include "exec_internal.h"

uint64_t
sl__exec_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
sl__exec_box_coords(const struct sl__exec *ex, uint32_t stage, uint64_t box, uint64_t pos,
                    uint64_t *coords)
{
    const struct sl_grid *bg = &ex->boxes[stage];
    uint64_t bc[SL_MAX_RANK];
    struct sl_region r;
    sl_grid_coords_of(bg, box, bc);
    sl_grid_chunk_region(bg, bc, &r);
    for (uint32_t d = bg->rank; d-- > 0;) {
        uint64_t ext = r.stop[d] - r.start[d];
        coords[d] = r.start[d] + pos % ext;
        pos /= ext;
    }
}

/* Chunks in box `box` of stage `stage`. */
uint64_t
sl__exec_box_count(const struct sl__exec *ex, uint32_t stage, uint64_t box)
{
    const struct sl_grid *bg = &ex->boxes[stage];
    uint64_t bc[SL_MAX_RANK];
    struct sl_region r;
    sl_grid_coords_of(bg, box, bc);
    sl_grid_chunk_region(bg, bc, &r);
    uint64_t n = 1;
    for (uint32_t d = 0; d < bg->rank; d++)
        n *= r.stop[d] - r.start[d];
    return n;
}

uint64_t
sl__exec_sum(const struct sl__exec *ex, size_t offset)
{
    uint64_t total = 0;
    for (unsigned w = 0; w <= ex->n_workers; w++) {
        const char *base = (const char *)&ex->workers[w];
        total += atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)(base + offset),
                                      memory_order_relaxed);
    }
    return total;
}

/*
 * Wake the driver if it sleeps for `why`: room (any finished task or freed
 * byte may give it) or idleness (only the last task's end does).
 */
void
sl__exec_wake_driver(struct sl__exec *ex, enum sl__exec_wait why)
{
    /* Seq-cst: with the caller's seq_cst update of `accounted` or
     * `in_flight` before it, pairs with the driver's seq_cst store of
     * driver_waiting followed by its seq_cst loads of those counters in
     * exec_ready (exec_wait.c), a Dekker pattern: either the driver sees
     * the update or this load sees it waiting.  Anything weaker lets both
     * miss each other and the driver sleep through its wake-up. */
    int waiting = atomic_load_explicit(&ex->driver_waiting, memory_order_seq_cst);
    if (waiting != 0 && (waiting == (int)why || why == SL__WAIT_IDLE)) {
        pthread_mutex_lock(&ex->lock);
        pthread_cond_signal(&ex->cond);
        pthread_mutex_unlock(&ex->lock);
    }
}

void
sl__exec_release(struct sl__exec *ex, size_t bytes)
{
    if (bytes == 0)
        return;
    /* Seq-cst: the first half of the Dekker pair in sl__exec_wake_driver. */
    atomic_fetch_sub_explicit(&ex->accounted, bytes, memory_order_seq_cst);
    sl__exec_wake_driver(ex, SL__WAIT_ROOM);
}

/* Reserve `bytes` of budget (the driver only). */
void
sl__exec_reserve(struct sl__exec *ex, size_t bytes)
{
    /* Relaxed: only the driver adds, and it reads its own additions;
     * workers' subtractions reach it through the seq_cst loads in
     * exec_ready.  The peak counts chunk data staged in transactions too;
     * only the driver writes it, and reads it after the run. */
    size_t now = atomic_fetch_add_explicit(&ex->accounted, bytes, memory_order_relaxed) + bytes +
                 sl__exec_staged(ex);
    if (now > atomic_load_explicit(&ex->peak, memory_order_relaxed))
        atomic_store_explicit(&ex->peak, now, memory_order_relaxed);
}

void
sl__exec_note_failure(struct sl__exec *ex, sl_status code, const struct sl_error *err)
{
    int expected = SL_OK;
    /* Relaxed: the CAS only elects the first failure; its message is
     * published by `lock`, and the driver reads both after the run, which
     * it orders after every task (in_flight) and writer thread (commit). */
    if (atomic_compare_exchange_strong_explicit(&ex->first_error, &expected, (int)code,
                                                memory_order_relaxed, memory_order_relaxed)) {
        pthread_mutex_lock(&ex->lock);
        ex->first_err = *err;
        pthread_mutex_unlock(&ex->lock);
    }
    if (ex->plan->opts.policy == SL_POLICY_FAIL_FAST)
        sl__exec_cancel(ex);
}

sl_txn *
sl__exec_put_txn(const struct sl__exec *ex, uint32_t node)
{
    for (uint32_t i = 0; i < ex->plan->n_puts; i++)
        if (ex->puts[i].node == node)
            return ex->puts[i].txn;
    return NULL;
}

size_t
sl__exec_staged(const struct sl__exec *ex)
{
    size_t total = 0;
    for (uint32_t i = 0; ex->puts != NULL && i < ex->plan->n_puts; i++)
        if (ex->puts[i].txn != NULL)
            total += (size_t)sl_txn_staged_bytes(ex->puts[i].txn);
    return total;
}

/*
 * Reconciliation: a chunk's status byte starts SL__CODE_PENDING and is
 * settled here only, by the first of these to reach it:
 *   SKIPPED      PENDING -> SL_ESKIPPED, before any task of the stage runs;
 *   RAN          PENDING -> the chunk's own result (ok or its failure);
 *                if a unit failure came first, that failure stays;
 *   UNIT_FAILED  PENDING or SL_OK -> the unit's failure: a chunk reported
 *                ok must read back, so the shard's failure overrides an ok
 *                that came first; a chunk that failed by itself keeps its
 *                own (earlier, more precise) cause;
 *   UNRUN        PENDING -> SL_ECANCELED, once nothing runs any more.
 * RAN and UNIT_FAILED race (a shard is written by whichever thread staged
 * its last chunk, or a writer thread, possibly before the staging task
 * records its chunk), hence compare-and-swap.  Besides this function only
 * sl__plan_reset (before a run) and sl_plan_merge_codes (after runs,
 * copying what the other parts settled) write status bytes.
 *
 * Relaxed: a status byte publishes no other data (the error record is
 * claimed by its own atomic and read after the run), and its readers are
 * ordered after the run's writers by the run itself (see
 * sl__put_state_code); only the atomicity of each transition matters.
 */
bool
sl__exec_chunk_settle(struct sl__exec *ex, struct sl__put_state *ps, uint64_t linear,
                      enum sl__chunk_outcome how, sl_status code, const char *text)
{
    _Atomic uint8_t *slot = &ps->codes[linear];
    uint8_t cur = SL__CODE_PENDING;
    switch (how) {
    case SL__CHUNK_SKIPPED:
        atomic_store_explicit(slot, (uint8_t)SL_ESKIPPED, memory_order_relaxed);
        return true;
    case SL__CHUNK_RESUMED:
        atomic_store_explicit(slot, (uint8_t)SL_OK, memory_order_relaxed);
        return true;
    case SL__CHUNK_UNRUN:
        if (atomic_load_explicit(slot, memory_order_relaxed) != SL__CODE_PENDING)
            return false;
        atomic_store_explicit(slot, (uint8_t)SL_ECANCELED, memory_order_relaxed);
        return true;
    case SL__CHUNK_RAN:
        if (!atomic_compare_exchange_strong_explicit(slot, &cur, (uint8_t)code,
                                                     memory_order_relaxed, memory_order_relaxed))
            return false;
        break;
    case SL__CHUNK_UNIT_FAILED:
        cur = atomic_load_explicit(slot, memory_order_relaxed);
        do {
            if (cur != SL_OK && cur != SL__CODE_PENDING)
                return false;
        } while (!atomic_compare_exchange_weak_explicit(
            slot, &cur, (uint8_t)code, memory_order_relaxed, memory_order_relaxed));
        break;
    }
    if (code != SL_OK)
        sl__plan_error_add(ex->plan, ps, linear, code, text);
    return true;
}
