/* SPDX-License-Identifier: MIT */
/*
 * Stats nodes: count, NaN count, min, max, sum, mean, std, a histogram and
 * percentiles of their input (ops' sl_stats), over the whole array or one
 * set per index along `per` axes (one per channel).
 *
 * DESIGN: a stats node is a putter whose chunks are folded into the plan's
 * accumulators (plan_stats.c) instead of handed to a user function, so it
 * has a status array like every sink: a failed input chunk fails the
 * chunks that read it, and the statistics of a run with a failed chunk are
 * refused (sl_plan_stats), naming it, never computed without it.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/graph_node.h>
#include <sluice/plan.h>
#include <sluice/stats.h>

#include "core_internal.h"
#include "graph_internal.h"

/* A stats putter's function slot, never called: the executor folds. */
static sl_status
stats_putter_unused(void *ctx, const char *name, const struct sl_block *block, struct sl_error *err)
{
    (void)ctx;
    (void)name;
    (void)block;
    return sl_error_set(err, SL_ESTATE, NULL, "stats node called as a user putter");
}

/* Fill `spec` from `desc` for input `in`. */
static sl_status
stats_spec(const char *name, const struct sl__node *in, const struct sl_stats_desc *desc,
           struct sl__stats_spec *spec, struct sl_error *err)
{
    memset(spec, 0, sizeof(*spec));
    spec->opts = desc->opts;
    spec->n_sets = 1;
    bool per[SL_MAX_RANK] = {false};
    for (size_t k = 0; k < desc->n_per; k++) {
        uint32_t a = desc->per != NULL ? desc->per[k] : UINT32_MAX;
        if (a >= in->grid.rank || per[a])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": \"per\" axis %" PRIu32 " is %s (input \"%s\" has "
                                "rank %" PRIu32 ")",
                                name, a, a < in->grid.rank ? "given twice" : "out of range",
                                in->name, in->grid.rank);
        per[a] = true;
    }
    for (uint32_t d = 0; d < in->grid.rank; d++) {
        if (!per[d])
            continue;
        spec->per_extent[spec->n_per] = in->grid.shape[d];
        spec->per[spec->n_per++] = d;
        if (!sl_u64_mul_fits(spec->n_sets, in->grid.shape[d], &spec->n_sets) ||
            spec->n_sets > (UINT64_C(1) << 20))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": one set of statistics per index along the \"per\" "
                                "axes makes more than 2^20 sets",
                                name);
    }
    /* Let the kernels check the options now, with their messages. */
    sl_status st = sl_stats_check(in->dtype, &spec->opts, err);
    return st == SL_OK ? SL_OK : sl__node_fail(err, name, st);
}

sl_status
sl_graph_add_stats(sl_graph *g, const char *name, uint32_t input, const struct sl_stats_desc *desc,
                   uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    SL_TRY(sl__graph_check_input(g, name, input, err));
    if (desc == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": stats need a descriptor", name);
    struct sl__stats_spec spec;
    SL_TRY(stats_spec(name, sl__graph_node(g, input), desc, &spec, err));
    const struct sl_putter_desc pd = {.fn = stats_putter_unused};
    uint32_t added;
    SL_TRY(sl_graph_add_putter(g, name, input, &pd, &added, err));
    struct sl__node *n = sl__graph_node(g, added);
    n->stats = sl_alloc_zeroed(&g->alloc, 1, sizeof(*n->stats), 0);
    if (n->stats == NULL) {
        sl__graph_pop_node(g);
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for stats node \"%s\"", name);
    }
    *n->stats = spec;
    sl__strlcpy(n->op_name, "stats", sizeof(n->op_name));
    if (id != NULL)
        *id = added;
    return SL_OK;
}
