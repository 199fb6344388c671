/* SPDX-License-Identifier: MIT */
/*
 * A plan's per-chunk results: the status arrays of its puts and the error
 * records of failed chunks, reset before a run, and read back as counts,
 * status arrays and error lists after it.  While a run goes, the executor
 * settles each status byte (sl__exec_chunk_settle in graph/exec/) and keeps
 * failures' messages here.
 *
 * DESIGN: everything a run writes per chunk was sized by sl_plan_create,
 * before any task exists: one status byte per output chunk of every put
 * and a fixed array of error records.  Recording a result is an atomic
 * update of the status byte and, for a failure, one atomic increment to
 * claim a record slot, so workers never allocate or lock to report.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/plan.h>

#include "core_internal.h"
#include "graph_internal.h"

struct sl__put_state *
sl__plan_put(const sl_plan *plan, uint32_t node)
{
    /* Puts are stored by ascending node id: binary search. */
    uint32_t lo = 0, hi = plan->n_puts;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (plan->puts[mid].node < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < plan->n_puts && plan->puts[lo].node == node ? &plan->puts[lo] : NULL;
}

void
sl__plan_reset(sl_plan *plan)
{
    for (uint32_t i = 0; i < plan->n_puts; i++)
        if (plan->puts[i].n_chunks > 0)
            /* Plain bytes: no run is in progress (statuses are plain bytes,
             * see the _Static_assert in graph_internal.h). */
            memset((void *)plan->puts[i].codes, SL__CODE_PENDING, (size_t)plan->puts[i].n_chunks);
    atomic_store_explicit(&plan->n_errors, 0, memory_order_relaxed);
    for (uint32_t i = 0; i < plan->n_puts; i++)
        sl__plan_stats_reset(&plan->puts[i]);
}

void
sl__plan_error_add(sl_plan *plan, const struct sl__put_state *ps, uint64_t linear, sl_status code,
                   const char *text)
{
    /* Relaxed: the slot index only has to be unique; the record is read after
     * the run, which the executor orders after every task has finished. */
    size_t slot = atomic_fetch_add_explicit(&plan->n_errors, 1, memory_order_relaxed);
    if (slot >= plan->cap_errors)
        return;
    struct sl_chunk_error *e = &plan->errors[slot];
    const struct sl__node *n = sl__graph_node(plan->graph, ps->node);
    e->node = ps->node;
    e->key.rank = n->grid.rank;
    sl_grid_coords_of(&n->grid, linear, e->key.idx);
    e->code = code;
    sl__text_fit(e->text, sizeof(e->text), text != NULL ? text : sl_status_message(code));
}

void
sl__plan_count(sl_plan *plan)
{
    struct sl_run_summary *s = &plan->summary;
    s->n_chunks = s->n_ok = s->n_failed = s->n_upstream = s->n_canceled = s->n_skipped = 0;
    for (uint32_t i = 0; i < plan->n_puts; i++) {
        const struct sl__put_state *ps = &plan->puts[i];
        s->n_chunks += ps->n_chunks;
        for (uint64_t k = 0; k < ps->n_chunks; k++) {
            uint8_t c = sl__put_state_code(ps, k);
            s->n_ok += c == SL_OK;
            s->n_upstream += c == SL_EUPSTREAM;
            s->n_canceled += c == SL_ECANCELED || c == SL__CODE_PENDING;
            s->n_skipped += c == SL_ESKIPPED;
            s->n_failed += c != SL_OK && c != SL_EUPSTREAM && c != SL_ECANCELED &&
                           c != SL__CODE_PENDING && c != SL_ESKIPPED;
        }
    }
    size_t n = atomic_load_explicit(&plan->n_errors, memory_order_relaxed);
    s->errors_dropped = n > plan->cap_errors ? n - plan->cap_errors : 0;
}

void
sl_plan_summary(const sl_plan *plan, struct sl_run_summary *out)
{
    *out = plan->summary;
}

sl_status
sl_plan_put_status(const sl_plan *plan, uint32_t node, struct sl_put_status *out,
                   struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    const struct sl__put_state *ps = sl__plan_put(plan, node);
    if (ps == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "put status: node %" PRIu32 " is not one of the plan's %" PRIu32
                            " puts",
                            node, plan->n_puts);
    const struct sl__node *n = sl__graph_node(plan->graph, node);
    /* Plain bytes for the caller, who reads them when no run writes them. */
    *out = (struct sl_put_status){
        .name = n->name, .grid = &n->grid, .codes = (const uint8_t *)ps->codes};
    for (uint64_t k = 0; k < ps->n_chunks; k++) {
        uint8_t c = sl__put_state_code(ps, k);
        out->n_ok += c == SL_OK;
        out->n_failed += c != SL_OK && c != SL_ESKIPPED;
    }
    return SL_OK;
}

const struct sl_chunk_error *
sl_plan_errors(const sl_plan *plan, size_t *count)
{
    size_t n = atomic_load_explicit(&plan->n_errors, memory_order_relaxed);
    *count = n < plan->cap_errors ? n : plan->cap_errors;
    return plan->errors;
}
