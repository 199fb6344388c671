/* SPDX-License-Identifier: MIT */
/*
 * Plans: preparing a sealed graph for running (fusion, phases, status
 * arrays, the budget check), and explaining them.  Recording and reading
 * per-chunk results is plan_status.c's; merging the parts of a split run,
 * plan_merge.c's.
 *
 * DESIGN: everything a run writes per chunk is sized here, before any task
 * exists: one status byte per output chunk of every put and a fixed array of
 * error records, so that recording results (plan_status.c) never allocates.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/graph_node.h>
#include <sluice/plan.h>

#include "core_internal.h"
#include "graph_internal.h"

/* Largest number of producer chunks one consumer chunk needs over an edge. */
static uint64_t
edge_max_inputs(const sl_graph *g, const struct sl__edge *e)
{
    const struct sl__node *c = sl__graph_node(g, e->consumer);
    const struct sl__node *p = sl__graph_node(g, e->producer);
    uint64_t total = 1;
    for (uint32_t d = 0; d < p->grid.rank; d++) {
        int o = sl__node_out_dim(c, e->input, d);
        if (o == SL__AXIS_WHOLE) {
            if (!sl_u64_mul_fits(total, p->grid.n_chunks[d], &total))
                return UINT64_MAX;
            continue;
        }
        uint64_t most = 0;
        for (uint64_t j = 0; j < c->grid.n_chunks[o]; j++) {
            uint64_t ia, ib;
            sl__node_input_interval(g, c, e->input, d,
                                    sl_grid_chunk_start(&c->grid, (uint32_t)o, j),
                                    sl_grid_chunk_start(&c->grid, (uint32_t)o, j + 1), &ia, &ib);
            if (ib <= ia)
                continue;
            uint64_t n =
                sl_grid_chunk_at(&p->grid, d, ib - 1) - sl_grid_chunk_at(&p->grid, d, ia) + 1;
            most = n > most ? n : most;
        }
        if (!sl_u64_mul_fits(total, most, &total))
            return UINT64_MAX;
    }
    return total;
}

/* Bytes of the largest chunk of `n`'s grid. */
static size_t
node_full_chunk_bytes(const struct sl__node *n)
{
    uint64_t shape[SL_MAX_RANK];
    for (uint32_t d = 0; d < n->grid.rank; d++) {
        uint64_t best = 0;
        for (uint64_t k = 0; k < n->grid.n_chunks[d]; k++) {
            uint64_t e =
                sl_grid_chunk_start(&n->grid, d, k + 1) - sl_grid_chunk_start(&n->grid, d, k);
            best = e > best ? e : best;
            if (n->grid.bounds[d] == NULL)
                break;
        }
        shape[d] = best;
    }
    size_t bytes;
    if (sl_shape_bytes(n->grid.rank, shape, sl_dtype_size(n->dtype), &bytes, NULL) != SL_OK)
        return SIZE_MAX;
    return bytes;
}

/*
 * What one task of each stage needs alive at once: its own buffers and the
 * input chunks of other stages it reads.  Sets the largest need and its stage.
 */
static void
plan_min_budget(sl_plan *plan)
{
    const sl_graph *g = plan->graph;
    const struct sl__fusion *f = &plan->fusion;
    plan->min_budget = 0;
    for (uint32_t s = 0; s < f->n_stages; s++) {
        size_t need = f->stages[s].task_bytes;
        for (uint32_t e = 0; e < f->n_edges; e++) {
            const struct sl__edge *ed = &f->edges[e];
            if (ed->reason == SL__FUSED || f->stage_of[ed->consumer] != s)
                continue;
            uint64_t n = edge_max_inputs(g, ed);
            size_t chunk = node_full_chunk_bytes(sl__graph_node(g, ed->producer));
            size_t bytes;
            if (n > SIZE_MAX || !sl_size_mul_fits((size_t)n, chunk, &bytes))
                bytes = SIZE_MAX;
            need = need > SIZE_MAX - bytes ? SIZE_MAX : need + bytes;
        }
        /* A put into a sharded array stages a whole shard before writing it. */
        const struct sl__node *root = sl__graph_node(g, f->stages[s].root);
        const uint64_t *shard =
            root->kind == SL_NODE_PUT ? sl_array_shard_shape(root->u.io.array) : NULL;
        size_t shard_bytes;
        if (shard != NULL && sl_shape_bytes(root->grid.rank, shard, sl_dtype_size(root->dtype),
                                            &shard_bytes, NULL) == SL_OK)
            need = need > SIZE_MAX - shard_bytes ? SIZE_MAX : need + shard_bytes;
        if (need > plan->min_budget) {
            plan->min_budget = need;
            plan->min_budget_stage = s;
        }
    }
}

/*
 * Order stages in phases: a stage runs after the stages it reads chunks
 * from, and after every put that writes an array one of its gets reads
 * (the whole array must be written before it is read back).  A fixpoint
 * over the stages; more rounds than stages means a cycle through storage.
 */
static sl_status
plan_phases(sl_plan *plan, struct sl_error *err)
{
    const sl_graph *g = plan->graph;
    struct sl__fusion *f = &plan->fusion;
    for (uint32_t round = 0; round <= f->n_stages; round++) {
        bool changed = false;
        for (uint32_t s = 0; s < f->n_stages; s++) {
            uint32_t phase = 0;
            for (uint32_t e = 0; e < f->n_edges; e++) {
                const struct sl__edge *ed = &f->edges[e];
                if (ed->reason != SL__FUSED && f->stage_of[ed->consumer] == s) {
                    uint32_t p = f->stages[f->stage_of[ed->producer]].phase;
                    phase = p > phase ? p : phase;
                }
            }
            for (uint32_t i = 0; i < f->stages[s].n_nodes; i++) {
                const struct sl__node *n = sl__graph_node(g, f->stages[s].nodes[i]);
                if (n->kind != SL_NODE_GET)
                    continue;
                for (uint32_t k = 0; k < g->n_nodes; k++) {
                    const struct sl__node *w = &g->nodes[k];
                    if (w->kind != SL_NODE_PUT || !sl__array_same(w->u.io.array, n->u.io.array))
                        continue;
                    uint32_t p = f->stages[f->stage_of[k]].phase + 1;
                    phase = p > phase ? p : phase;
                }
            }
            if (phase != f->stages[s].phase) {
                f->stages[s].phase = phase;
                changed = true;
            }
        }
        if (!changed)
            return SL_OK;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const struct sl__node *n = &g->nodes[i];
        for (uint32_t k = 0; n->kind == SL_NODE_GET && k < g->n_nodes; k++)
            if (g->nodes[k].kind == SL_NODE_PUT &&
                sl__array_same(g->nodes[k].u.io.array, n->u.io.array))
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "get \"%s\" reads array %s, which put \"%s\" writes from "
                                    "what that get reads: a cycle through storage",
                                    n->name,
                                    sl__array_name(n->u.io.array, &(struct sl__array_name){0}),
                                    g->nodes[k].name);
    }
    return sl_error_set(err, SL_EINVAL, NULL, "the graph's puts and gets form a cycle");
}

/* Allocate the status arrays of every put. */
static sl_status
plan_alloc_puts(sl_plan *plan, struct sl_error *err)
{
    const sl_graph *g = plan->graph;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        plan->n_puts += g->nodes[i].kind == SL_NODE_PUT || g->nodes[i].kind == SL_NODE_PUTTER;
    plan->puts = sl_alloc_zeroed(&plan->alloc, plan->n_puts, sizeof(struct sl__put_state), 0);
    if (plan->puts == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu32 " status arrays",
                            plan->n_puts);
    uint32_t k = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const struct sl__node *n = &g->nodes[i];
        if (n->kind != SL_NODE_PUT && n->kind != SL_NODE_PUTTER)
            continue;
        struct sl__put_state *ps = &plan->puts[k++];
        ps->node = i;
        ps->n_chunks = n->grid.n_total;
        if (ps->n_chunks > SIZE_MAX)
            return sl_error_set(err, SL_EOVERFLOW, NULL,
                                "put \"%s\" has %" PRIu64 " chunks, too many to track", n->name,
                                ps->n_chunks);
        ps->codes = sl_alloc(&plan->alloc, (size_t)ps->n_chunks, 1);
        if (ps->codes == NULL && ps->n_chunks > 0)
            return sl_error_set(err, SL_ENOMEM, NULL,
                                "no memory for the status array of \"%s\" (%" PRIu64 " chunks)",
                                n->name, ps->n_chunks);
        if (n->stats != NULL)
            SL_TRY(sl__plan_stats_init(plan, ps, err));
    }
    return SL_OK;
}

/* Room for the messages of up to max_errors failed chunks (no more than
 * there are chunks); written before they are read, so not zeroed. */
static sl_status
plan_alloc_errors(sl_plan *plan, struct sl_error *err)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < plan->n_puts; i++)
        total += plan->puts[i].n_chunks;
    plan->cap_errors = plan->opts.max_errors < total ? plan->opts.max_errors : (size_t)total;
    if (plan->cap_errors == 0)
        return SL_OK;
    size_t bytes;
    if (!sl_size_mul_fits(plan->cap_errors, sizeof(struct sl_chunk_error), &bytes) ||
        (plan->errors = sl_alloc(&plan->alloc, bytes, 0)) == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %zu error records",
                            plan->cap_errors);
    return SL_OK;
}

/* Check the options and copy them into the plan. */
static sl_status
plan_set_opts(sl_plan *plan, const struct sl_plan_opts *opts, struct sl_error *err)
{
    plan->opts = opts != NULL ? *opts : SL_PLAN_OPTS_DEFAULT;
    if (plan->opts.policy != SL_POLICY_COLLECT && plan->opts.policy != SL_POLICY_FAIL_FAST)
        return sl_error_set(err, SL_EINVAL, NULL, "unknown error policy %d",
                            (int)plan->opts.policy);
    if (!(plan->opts.progress_interval_s > 0))
        plan->opts.progress_interval_s = 0.5;
    if (plan->opts.n_parts == 0 || plan->opts.part >= plan->opts.n_parts)
        return sl_error_set(err, SL_EINVAL, NULL, "part %" PRIu32 " of %" PRIu32 " parts",
                            plan->opts.part, plan->opts.n_parts);
    if (plan->opts.retries > SL_PLAN_MAX_RETRIES)
        return sl_error_set(err, SL_EINVAL, NULL, "%" PRIu32 " retries; at most %d",
                            plan->opts.retries, SL_PLAN_MAX_RETRIES);
    if (!(plan->opts.retry_backoff_s >= 0 && plan->opts.retry_backoff_s <= 60))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "a first retry backoff of %g s; expected 0 to 60 s",
                            plan->opts.retry_backoff_s);
    plan->opts.trace_path = NULL;
    if (opts != NULL && opts->trace_path != NULL) {
        plan->trace_path = sl_strdup(&plan->alloc, opts->trace_path);
        if (plan->trace_path == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "no memory for the trace path");
        plan->opts.trace_path = plan->trace_path;
    }
    return SL_OK;
}

/* Refuse a budget below what one task needs, with the numbers. */
static sl_status
plan_check_budget(const sl_plan *plan, struct sl_error *err)
{
    size_t budget = plan->opts.memory_budget;
    if (budget == 0 || budget >= plan->min_budget)
        return SL_OK;
    const struct sl__stage *s = &plan->fusion.stages[plan->min_budget_stage];
    return sl_error_set(err, SL_EBUDGET, NULL,
                        "memory budget of %zu byte%s is below the %zu bytes one task of stage "
                        "%" PRIu32 " (ending at \"%s\") needs: %zu for its own chunks and %zu "
                        "for the input chunks it reads (and the shard it stages)",
                        budget, budget == 1 ? "" : "s", plan->min_budget, plan->min_budget_stage,
                        sl__graph_node(plan->graph, s->root)->name, s->task_bytes,
                        plan->min_budget - s->task_bytes);
}

sl_plan *
sl_plan_create(sl_graph *g, const struct sl_plan_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (g == NULL || !g->sealed) {
        sl_error_set(err, SL_ESTATE, NULL, "graph must be sealed before it is prepared");
        return NULL;
    }
    sl_plan *plan = sl_alloc_zeroed(&g->alloc, 1, sizeof(*plan), 0);
    if (plan == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "no memory for a plan");
        return NULL;
    }
    plan->graph = sl_graph_ref(g);
    plan->alloc = g->alloc;
    plan->unit_chunks = sl_array_iter_shard_chunks;
    atomic_init(&plan->n_errors, 0);
    sl_status st = plan_set_opts(plan, opts, err);
    if (st == SL_OK)
        st = sl__fusion_plan(g, &plan->alloc, &plan->fusion, err);
    if (st == SL_OK)
        st = plan_phases(plan, err);
    if (st == SL_OK)
        st = plan_alloc_puts(plan, err);
    if (st == SL_OK)
        st = plan_alloc_errors(plan, err);
    if (st == SL_OK) {
        plan_min_budget(plan);
        st = plan_check_budget(plan, err);
    }
    if (st != SL_OK) {
        sl_plan_destroy(plan);
        return NULL;
    }
    sl__plan_reset(plan);
    memset(&plan->summary, 0, sizeof(plan->summary));
    return plan;
}

void
sl_plan_destroy(sl_plan *plan)
{
    if (plan == NULL)
        return;
    for (uint32_t i = 0; i < plan->n_puts && plan->puts != NULL; i++) {
        sl_free(&plan->alloc, (void *)plan->puts[i].codes, (size_t)plan->puts[i].n_chunks);
        sl__plan_stats_fini(plan, &plan->puts[i]);
    }
    sl_free(&plan->alloc, plan->puts, plan->n_puts * sizeof(struct sl__put_state));
    sl_free(&plan->alloc, plan->errors, plan->cap_errors * sizeof(struct sl_chunk_error));
    if (plan->trace_path != NULL)
        sl_free(&plan->alloc, plan->trace_path, strlen(plan->trace_path) + 1);
    sl__fusion_fini(&plan->fusion);
    struct sl_allocator a = plan->alloc;
    sl_graph_unref(plan->graph);
    sl_free(&a, plan, sizeof(*plan));
}

const sl_graph *
sl_plan_graph(const sl_plan *plan)
{
    return plan->graph;
}

sl_status
sl_plan_explain(const sl_plan *plan, FILE *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    sl__fusion_explain(plan->graph, &plan->fusion, out);
    if (plan->opts.memory_budget != 0)
        fprintf(out, "budget: %zu bytes (one task needs at most %zu)\n", plan->opts.memory_budget,
                plan->min_budget);
    else
        fprintf(out, "budget: none (one task needs at most %zu bytes)\n", plan->min_budget);
    if (ferror(out))
        return sl_error_set(err, SL_EIO, NULL,
                            "explain: writing the plan of %" PRIu32 " nodes to the stream failed",
                            plan->graph->n_nodes);
    return SL_OK;
}

sl_status
sl_plan_write_dot(const sl_plan *plan, FILE *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    sl__fusion_write_dot(plan->graph, &plan->fusion, out);
    if (ferror(out))
        return sl_error_set(err, SL_EIO, NULL,
                            "dot: writing the plan of %" PRIu32 " nodes to the stream failed",
                            plan->graph->n_nodes);
    return SL_OK;
}
