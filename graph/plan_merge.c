/* SPDX-License-Identifier: MIT */
/*
 * Merging the results of a split run: each part (an MPI rank, or a process
 * of a split run) ran its share of the output chunks and marked the rest
 * SL_ESKIPPED; rank 0 takes the other parts' status codes, error records
 * and summaries into its own plan, refusing a chunk that two parts ran.
 */
#include <inttypes.h>

#include <sluice/plan.h>

#include "core_internal.h"
#include "graph_internal.h"

sl_status
sl_plan_merge_codes(sl_plan *plan, uint32_t node, const uint8_t *codes, uint64_t n_codes,
                    struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl__put_state *ps = sl__plan_put(plan, node);
    if (ps == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "node %" PRIu32 " is not a put", node);
    if (n_codes != ps->n_chunks)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "put \"%s\" has %" PRIu64 " chunk%s; %" PRIu64 " code%s given",
                            sl__graph_node(plan->graph, node)->name, ps->n_chunks,
                            SL__PLURAL(ps->n_chunks), n_codes, n_codes == 1 ? " was" : "s were");
    for (uint64_t k = 0; k < n_codes; k++) {
        uint8_t mine = sl__put_state_code(ps, k);
        if (codes[k] == SL_ESKIPPED || codes[k] == mine)
            continue;
        if (mine != SL_ESKIPPED)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "chunk %" PRIu64 " of put \"%s\" ran in two parts (%s and %s)", k,
                                sl__graph_node(plan->graph, node)->name,
                                sl_status_name((sl_status)mine),
                                sl_status_name((sl_status)codes[k]));
        /* What the other part's run settled; no run of this plan is in
         * progress, so relaxed (sl__put_state_code). */
        atomic_store_explicit(&ps->codes[k], codes[k], memory_order_relaxed);
    }
    return SL_OK;
}

void
sl_plan_merge_errors(sl_plan *plan, const struct sl_chunk_error *errors, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t slot = atomic_fetch_add_explicit(&plan->n_errors, 1, memory_order_relaxed);
        if (slot < plan->cap_errors)
            plan->errors[slot] = errors[i];
    }
}

void
sl_plan_merge_summary(sl_plan *plan, const struct sl_run_summary *other)
{
    struct sl_run_summary *s = &plan->summary;
    s->n_tasks += other->n_tasks;
    s->bytes_read += other->bytes_read;
    s->bytes_written += other->bytes_written;
    s->objects_written += other->objects_written;
    s->remote_requests += other->remote_requests;
    s->remote_retries += other->remote_retries;
    s->n_retries += other->n_retries;
    s->remote_max_in_flight = other->remote_max_in_flight > s->remote_max_in_flight
                                  ? other->remote_max_in_flight
                                  : s->remote_max_in_flight;
    s->peak_bytes = other->peak_bytes > s->peak_bytes ? other->peak_bytes : s->peak_bytes;
    s->elapsed_s = other->elapsed_s > s->elapsed_s ? other->elapsed_s : s->elapsed_s;
    s->journal_s = other->journal_s > s->journal_s ? other->journal_s : s->journal_s;
    if (s->first_error == SL_OK)
        s->first_error = other->first_error;
    sl__plan_count(plan);
}
