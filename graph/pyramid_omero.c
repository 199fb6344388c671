/* SPDX-License-Identifier: MIT */
/*
 * The end of a run for pyramids that asked for OME "omero" metadata: the
 * channels' statistics of the pyramid's omero stats node become the
 * group's channel windows, written into its metadata once every chunk of
 * the run succeeded; and sl_plan_pyramid_omero, which tells whether the
 * last run wrote them or why not.
 *
 * DESIGN: the windows are written by the run that computed them, after
 * its last chunk and before the run returns, so whatever makes a run's
 * output durable and visible afterwards (the deferred sync and rename of
 * a graph file's staged nodes, sl_graph_json_commit; the launcher's
 * staged destinations) covers them as it covers the levels.  A run that
 * failed anywhere writes none: its statistics could leave chunks out, and
 * its levels are not a finished image.  The group's metadata is read back
 * and written whole, so the multiscales and user attributes the builder
 * wrote stay as they were.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/plan.h>
#include <sluice/pyramid.h>
#include <sluice/stats.h>

#include "core_internal.h"
#include "graph_internal.h"
#include "pyramid_internal.h"

/* Each set's window, in `w` (n_sets entries). */
static sl_status
omero_windows(const sl_plan *plan, uint32_t node, uint64_t n_sets, struct sl__omero_window *w,
              struct sl_error *err)
{
    for (uint64_t k = 0; k < n_sets; k++) {
        struct sl_stats_result r;
        SL_TRY(sl_plan_stats(plan, node, k, &r, err));
        if (r.n_percentiles != 2)
            return sl_error_set(err, SL_ESTATE, NULL, "set %" PRIu64 " has %zu percentiles, not 2",
                                k, r.n_percentiles);
        w[k] = (struct sl__omero_window){
            .min = r.min, .max = r.max, .start = r.percentile[0], .end = r.percentile[1]};
    }
    return SL_OK;
}

/* Write the omero block of node `node` (target `t`) from the last run. */
static sl_status
omero_write(const sl_plan *plan, uint32_t node, const struct sl__omero_target *t,
            struct sl_error *err)
{
    const uint64_t n = sl__graph_node(plan->graph, node)->stats->n_sets;
    struct sl_allocator a = plan->alloc;
    size_t bytes;
    if (!sl_size_mul_fits((size_t)n, sizeof(struct sl__omero_window), &bytes))
        return sl_error_set(err, SL_EOVERFLOW, NULL, "%" PRIu64 " channels are too many", n);
    struct sl__omero_window *w = sl_alloc(&a, bytes, 0);
    if (w == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu64 " channel windows", n);
    struct sl_buf attrs = SL_BUF_INIT;
    char *text = NULL;
    sl_status st = omero_windows(plan, node, n, w, err);
    if (st == SL_OK)
        st = sl_group_attributes(t->store, t->group, &attrs, err);
    if (st == SL_OK)
        st = sl__pyramid_omero_json((const char *)attrs.data, t->zarr_format, w, n, &text, err);
    if (st == SL_OK)
        st = sl_group_create(t->store, t->group, t->zarr_format, text, err);
    free(text);
    sl_buf_fini(&attrs);
    sl_free(&a, w, bytes);
    return st;
}

/* Why a failed run wrote no omero block for `node`: its statistics' own
 * reason (a chunk of its input left out), else the run's first failure. */
static void
omero_refuse(const sl_plan *plan, uint32_t node, sl_status run, struct sl_error *out)
{
    const struct sl__node *n = sl__graph_node(plan->graph, node);
    struct sl_stats_result r;
    struct sl_error e = SL_ERROR_INIT;
    if (sl_plan_stats(plan, node, 0, &r, &e) != SL_OK) {
        sl_error_set(out, e.code, NULL, "no omero metadata written: %s", e.text);
        return;
    }
    const struct sl_run_summary *s = &plan->summary;
    sl_error_set(out, run, NULL,
                 "no omero metadata written for \"%s\": the run failed (%s; %" PRIu64
                 " chunk%s failed, %" PRIu64 " upstream of a failure, %" PRIu64 " cancelled)",
                 n->name, sl_status_name(run), s->n_failed, SL__PLURAL(s->n_failed), s->n_upstream,
                 s->n_canceled);
}

sl_status
sl__pyramid_omero_commit(sl_plan *plan, sl_status run, struct sl_error *err)
{
    sl_status first = SL_OK;
    for (uint32_t i = 0; i < plan->n_puts; i++) {
        struct sl__put_state *ps = &plan->puts[i];
        if (ps->omero == NULL)
            continue;
        const struct sl__node *n = sl__graph_node(plan->graph, ps->node);
        *ps->omero = SL_ERROR_INIT;
        if (run != SL_OK) {
            omero_refuse(plan, ps->node, run, ps->omero);
            continue;
        }
        struct sl_error e = SL_ERROR_INIT;
        if (omero_write(plan, ps->node, n->stats->omero, &e) == SL_OK)
            continue;
        sl_error_set(ps->omero, e.code, NULL, "\"%s\": no omero metadata written: %s", n->name,
                     e.text);
        if (first == SL_OK) {
            first = e.code;
            sl_error_set(err, e.code, NULL, "%s", ps->omero->text);
        }
    }
    return run != SL_OK ? run : first;
}

sl_status
sl_plan_pyramid_omero(const sl_plan *plan, uint32_t node, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (plan == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "sl_plan_pyramid_omero: NULL plan");
    const struct sl__put_state *ps = sl__plan_put(plan, node);
    if (ps == NULL || ps->omero == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node %" PRIu32 " is no pyramid's omero node of the plan", node);
    if (ps->omero->code == SL_OK)
        return SL_OK;
    return sl_error_set(err, ps->omero->code, NULL, "%s", ps->omero->text);
}
