/* SPDX-License-Identifier: MIT */
/*
 * Hints of reads to come.  As the driver emits a task, the chunks its gets
 * will read are named to their arrays (sl_array_prefetch_chunk), so that a
 * remote store has them in flight while the workers are busy with earlier
 * tasks: requests in flight follow the tasks the budget lets the driver
 * emit, not the number of workers.  A filesystem store asks the kernel to
 * read the files ahead, so that a cold page cache costs the device's time
 * overlapped with the decoding, not added to it.  The task still reads
 * synchronously; it finds its bytes fetched, or being fetched.
 */
#include <sluice/array_io.h>
#include <sluice/store.h>

#include "exec_internal.h"

/* Name the get chunks node `n`'s chunk `coords` reads through the nodes
 * fused into it. */
static void
prefetch_walk(const struct sl__exec *ex, const struct sl__node *n, const uint64_t *coords)
{
    if (n->kind == SL_NODE_GET) {
        sl_array_prefetch_chunk(n->u.io.array, coords);
        return;
    }
    struct sl_region r;
    sl_grid_chunk_region(&n->grid, coords, &r);
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        const struct sl__node *p = sl__graph_node(ex->graph, n->inputs[i]);
        if (ex->fusion->fused_to[p->id] != n->id)
            continue; /* another stage's: its own tasks name its chunks */
        struct sl_region rin;
        sl__node_input_region(ex->graph, n, i, &r, &rin);
        if (sl_region_is_empty(&rin))
            continue;
        /* Fused: exactly one producer chunk holds the region (as eval_input). */
        uint64_t pc[SL_MAX_RANK];
        for (uint32_t d = 0; d < rin.rank; d++)
            pc[d] = sl_grid_chunk_at(&p->grid, d, rin.start[d]);
        prefetch_walk(ex, p, pc);
    }
}

bool
sl__exec_reads_ahead(const struct sl__exec *ex)
{
    for (uint32_t i = 0; i < ex->n_stores; i++)
        if (sl_store_reads_ahead(ex->stores[i]))
            return true;
    return false;
}

void
sl__exec_prefetch(const struct sl__exec *ex, uint32_t stage, uint64_t box, uint64_t first,
                  uint32_t count)
{
    if (!ex->prefetch)
        return;
    const struct sl__node *root = sl__graph_node(ex->graph, ex->fusion->stages[stage].root);
    for (uint32_t k = 0; k < count; k++) {
        uint64_t coords[SL_MAX_RANK];
        sl__exec_box_coords(ex, stage, box, first + k, coords);
        prefetch_walk(ex, root, coords);
    }
}
