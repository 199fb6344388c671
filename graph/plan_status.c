/* SPDX-License-Identifier: MIT */
/*
 * A plan's per-chunk results: the status arrays of its puts and the error
 * records of failed chunks, reset before a run, recorded while it runs,
 * and read back as counts, status arrays and error lists after it.
 *
 * DESIGN: everything a run writes per chunk was sized by sl_graph_prepare,
 * before any task exists: one status byte per output chunk of every put
 * and a fixed array of error records.  Recording a result is a store into
 * the status array and, for a failure, one atomic increment to claim a
 * record slot, so workers never allocate or lock to report.
 */
#include <string.h>

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
            memset(plan->puts[i].codes, SL__CODE_PENDING, (size_t)plan->puts[i].n_chunks);
    atomic_store_explicit(&plan->n_errors, 0, memory_order_relaxed);
}

/* Claim an error slot and fill it for chunk `linear` of `ps`. */
static void plan_error_record(sl_plan *plan, struct sl__put_state *ps, uint64_t linear,
                              sl_status code, const char *text);

void
sl__plan_record(sl_plan *plan, struct sl__put_state *ps, uint64_t linear, sl_status code,
                const char *text)
{
    /* Acq-rel CAS from pending: a shard write that already failed the
     * chunk (sl__plan_fail_chunk, another thread) keeps its code. */
    uint8_t expected = SL__CODE_PENDING;
    if (!__atomic_compare_exchange_n(&ps->codes[linear], &expected, (uint8_t)code, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    if (code != SL_OK)
        plan_error_record(plan, ps, linear, code, text);
}

bool
sl__plan_fail_chunk(sl_plan *plan, struct sl__put_state *ps, uint64_t linear, sl_status code,
                    const char *text)
{
    uint8_t cur = __atomic_load_n(&ps->codes[linear], __ATOMIC_ACQUIRE);
    /* Pairs with the CAS in sl__plan_record: whichever comes first, a
     * failure of the shard wins over the chunk's own ok. */
    while (cur == SL_OK || cur == SL__CODE_PENDING) {
        if (__atomic_compare_exchange_n(&ps->codes[linear], &cur, (uint8_t)code, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            plan_error_record(plan, ps, linear, code, text);
            return true;
        }
    }
    return false;
}

static void
plan_error_record(sl_plan *plan, struct sl__put_state *ps, uint64_t linear, sl_status code,
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
    sl__strlcpy(e->text, text != NULL ? text : sl_status_message(code), sizeof(e->text));
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
            uint8_t c = ps->codes[k];
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
sl_plan_put_status(const sl_plan *plan, uint32_t node, struct sl_put_status *out)
{
    const struct sl__put_state *ps = sl__plan_put(plan, node);
    if (ps == NULL)
        return SL_EINVAL;
    const struct sl__node *n = sl__graph_node(plan->graph, node);
    *out = (struct sl_put_status){.name = n->name, .grid = &n->grid, .codes = ps->codes};
    for (uint64_t k = 0; k < ps->n_chunks; k++) {
        out->n_ok += ps->codes[k] == SL_OK;
        out->n_failed += ps->codes[k] != SL_OK && ps->codes[k] != SL_ESKIPPED;
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
