/* SPDX-License-Identifier: MIT */
/*
 * Splitting a run into parts (one per MPI rank, or per process of a split
 * run): which output chunks of each put stage this part runs, cut at box
 * (shard) boundaries so that no shard is written by two parts, and marking
 * the others as skipped.
 */
#include "exec_internal.h"
#include "exec_steps_internal.h"

/*
 * The positions [lo, hi) of put stage `stage` that this part runs: the
 * chunks split into n_parts runs of about equal count, cut at box (shard)
 * boundaries when the put is sharded (a single shard going whole to one
 * part), so no shard is written by two parts.
 */
void
sl__exec_part_range(const struct sl__exec *ex, uint32_t stage, uint64_t *lo, uint64_t *hi)
{
    const struct sl_grid *bg = &ex->boxes[stage];
    const struct sl__node *root = sl__graph_node(ex->graph, ex->fusion->stages[stage].root);
    uint64_t total = root->grid.n_total;
    uint32_t n = ex->plan->opts.n_parts, p = ex->plan->opts.part;
    uint64_t want_lo = (uint64_t)((double)total * p / n);
    uint64_t want_hi = p + 1 == n ? total : (uint64_t)((double)total * (p + 1) / n);
    /* One box of an unsharded put is the whole grid, every chunk its own
     * object: any cut will do.  One shard is one part's alone. */
    bool sharded = false;
    for (uint32_t d = 0; d < root->grid.rank; d++)
        sharded = sharded || root->shard_chunks[d] > 0;
    if (n == 1 || (bg->n_total <= 1 && !sharded)) {
        *lo = want_lo;
        *hi = want_hi;
        return;
    }
    *lo = *hi = total;
    bool have_lo = false;
    uint64_t at = 0;
    for (uint64_t b = 0; b < bg->n_total; b++) {
        if (!have_lo && at >= want_lo) {
            *lo = at;
            have_lo = true;
        }
        if (at >= want_hi) {
            *hi = at;
            return;
        }
        at += sl__exec_box_count(ex, stage, b);
    }
}

/* Mark the chunks of put stage `stage` outside this part as SL_ESKIPPED. */
void
sl__exec_part_mark_skipped(struct sl__exec *ex, uint32_t stage, uint64_t lo, uint64_t hi)
{
    const struct sl_grid *bg = &ex->boxes[stage];
    const struct sl__node *root = sl__graph_node(ex->graph, ex->fusion->stages[stage].root);
    struct sl__put_state *ps = sl__plan_put(ex->plan, root->id);
    uint64_t at = 0;
    for (uint64_t b = 0; b < bg->n_total; b++) {
        uint64_t n = sl__exec_box_count(ex, stage, b);
        for (uint64_t k = 0; k < n; k++, at++) {
            if (at >= lo && at < hi)
                continue;
            uint64_t coords[SL_MAX_RANK];
            sl__exec_box_coords(ex, stage, b, k, coords);
            (void)sl__exec_chunk_settle(ex, ps, sl_grid_linear_index(&root->grid, coords),
                                        SL__CHUNK_SKIPPED, SL_ESKIPPED, NULL);
        }
    }
}
