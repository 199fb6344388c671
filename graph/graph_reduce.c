/* SPDX-License-Identifier: MIT */
/*
 * Reduce nodes: sum, mean, max, ... along axes, as numpy computes them,
 * over any extent in bounded memory.
 *
 * DESIGN: where every reduced axis lies in one input chunk, the reduction
 * is one map reading each input chunk whole along those axes (fused with
 * the read: a maximum-intensity projection of chunks that hold all of z).
 * Otherwise it is a tree, as dask's reductions are: "<name>.partial" folds
 * each input chunk into one partial state per output element (ops'
 * sl_reduce_state_add; the state array has one element per input chunk
 * along each reduced axis and a last axis of the state's words),
 * "<name>.combine<k>" merges `split_every` of them per axis (a regrid-like
 * map whose input region along a reduced axis is k·s ... (k+1)·s), until
 * at most that many are left, and the node itself merges the rest and
 * finishes (sl_reduce_state_finish).  Each level's chunks are freed after
 * their one read, so memory holds a fan-in of partials per task, whatever
 * the extent reduced; every input chunk is read once.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <sluice/graph_node.h>
#include <sluice/reduce.h>

#include "core_internal.h"
#include "graph_internal.h"

/* A reduce map's user function slot, never called: the executor runs the
 * reduction kernels itself. */
static sl_status
reduce_map_unused(void *ctx, struct sl_block *out, size_t n_inputs, const struct sl_block *inputs,
                  struct sl_error *err)
{
    (void)ctx;
    (void)out;
    (void)n_inputs;
    (void)inputs;
    return sl_error_set(err, SL_ESTATE, NULL, "reduce node called as a user map");
}

/* Fill the kernel parameters from `desc` for input `in`. */
static sl_status
reduce_params(const char *name, const struct sl__node *in, const struct sl_reduce_desc *desc,
              struct sl_reduce_params *p, struct sl_error *err)
{
    *p = (struct sl_reduce_params){
        .method = desc->method, .in_dtype = in->dtype, .rank = in->grid.rank, .ddof = desc->ddof};
    for (size_t k = 0; k < desc->n_axes; k++) {
        uint32_t a = desc->axes != NULL ? desc->axes[k] : UINT32_MAX;
        if (a >= in->grid.rank || p->reduced[a])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": axis %" PRIu32 " to reduce is %s (input \"%s\" has "
                                "rank %" PRIu32 ")",
                                name, a, a < in->grid.rank ? "given twice" : "out of range",
                                in->name, in->grid.rank);
        p->reduced[a] = true;
    }
    for (uint32_t d = 0; d < in->grid.rank && desc->n_axes == 0; d++)
        p->reduced[d] = true;
    if (desc->out_dtype == SL_DTYPE_COUNT_) {
        sl_status st = sl_reduce_default_dtype(desc->method, in->dtype, &p->out_dtype, err);
        if (st != SL_OK)
            return sl__node_fail(err, name, st);
    } else {
        p->out_dtype = desc->out_dtype;
    }
    sl_status st = sl_reduce_check(p, err);
    return st == SL_OK ? SL_OK : sl__node_fail(err, name, st);
}

/* Fan-in per reduced axis: split_every^(1/axes), at least 2, as dask. */
static uint64_t
reduce_fan_in(const struct sl_reduce_params *p, uint32_t split_every)
{
    uint32_t k = 0;
    for (uint32_t d = 0; d < p->rank; d++)
        k += p->reduced[d];
    double s = split_every == 0 ? 8.0 : (double)split_every;
    uint64_t f = k > 0 ? (uint64_t)floor(pow(s, 1.0 / k) + 1e-9) : 2;
    return f < 2 ? 2 : f;
}

/* Name a step: "<name><suffix>", refused when too long. */
static sl_status
reduce_step_name(const char *name, const char *suffix, char out[SL__NODE_NAME_MAX + 1],
                 struct sl_error *err)
{
    int n = snprintf(out, SL__NODE_NAME_MAX + 1, "%s%s", name, suffix);
    if (n < 0 || n > SL__NODE_NAME_MAX)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": name too long to add its reduction step \"%s\"", name,
                            suffix);
    return SL_OK;
}

/* Add one step of the reduction: a map of `input` with `grid` (taken). */
static sl_status
reduce_add_step(sl_graph *g, const char *name, const char *op, uint32_t input,
                enum sl__reduce_step step, const struct sl_reduce_params *p, sl_dtype dtype,
                struct sl_grid *grid, const int8_t *in_axis, const uint64_t *fan, uint32_t *id,
                struct sl_error *err)
{
    sl_status st = sl__graph_check_new_node(g, name, err);
    if (st == SL_OK)
        st = sl__graph_reserve(g, err);
    if (st != SL_OK) {
        sl_grid_fini(grid);
        return st;
    }
    struct sl__node tmp;
    char op_name[32];
    snprintf(op_name, sizeof(op_name), "%s %s", op, sl_reduce_method_name(p->method));
    sl__node_start(&tmp, SL_NODE_MAP, name, op_name);
    tmp.dtype = dtype;
    tmp.u.map.fn = reduce_map_unused;
    tmp.grid = *grid;
    tmp.axes_mapped = true;
    tmp.by_region = step != SL__REDUCE_PARTIAL;
    tmp.red_step = step;
    tmp.red = *p;
    const struct sl__node *in = sl__graph_node(g, input);
    for (uint32_t d = 0; d < in->grid.rank; d++)
        tmp.in_axis[0][d] = in_axis[d];
    for (uint32_t d = 0; fan != NULL && d < p->rank; d++)
        tmp.map[d] = (struct sl__dim_map){.num = fan[d], .den = 1};
    st = sl__node_set_inputs(g, &tmp, 1, &input, err);
    if (st != SL_OK) {
        sl__node_fini(g, &tmp);
        return st;
    }
    sl__graph_commit_node(g, &tmp, id);
    return SL_OK;
}

/* The result's grid, and how the input's dimensions follow its. */
static sl_status
reduce_result_grid(sl_graph *g, const struct sl__node *in, const struct sl_reduce_params *p,
                   const struct sl_reduce_desc *desc, struct sl_grid *out, int8_t *in_axis,
                   struct sl_error *err)
{
    struct sl__grid_dim dims[SL_MAX_RANK];
    uint64_t shape[SL_MAX_RANK];
    uint32_t rank = 0;
    for (uint32_t d = 0; d < p->rank; d++) {
        if (p->reduced[d]) {
            in_axis[d] = desc->keepdims ? (int8_t)rank : SL__AXIS_WHOLE;
            if (!desc->keepdims)
                continue;
            shape[rank] = 1;
            dims[rank++] = (struct sl__grid_dim){.src = -1, .extent = 1};
            continue;
        }
        in_axis[d] = (int8_t)rank;
        shape[rank] = in->grid.shape[d];
        dims[rank++] = (struct sl__grid_dim){.src = (int)d};
    }
    if (desc->keepdims)
        for (uint32_t d = 0; d < p->rank; d++)
            if (p->reduced[d])
                in_axis[d] = SL__AXIS_WHOLE; /* the kept extent-1 axis follows nothing */
    if (desc->chunks != NULL)
        return sl_grid_init_regular(out, rank, shape, desc->chunks, err);
    return sl__grid_from_dims(g, &in->grid, rank, dims, NULL, 0, 0, out, err);
}

/* The grid of a level of partial states: `extent[d]` partials along each
 * reduced dimension, the input's chunks along the others, then the words. */
static sl_status
reduce_state_grid(sl_graph *g, const struct sl__node *in, const struct sl_reduce_params *p,
                  const uint64_t *extent, uint32_t words, struct sl_grid *out, struct sl_error *err)
{
    struct sl__grid_dim dims[SL_MAX_RANK];
    for (uint32_t d = 0; d < p->rank; d++)
        dims[d] = p->reduced[d]
                      ? (struct sl__grid_dim){.src = -1, .extent = extent[d], .per_element = true}
                      : (struct sl__grid_dim){.src = (int)d};
    dims[p->rank] = (struct sl__grid_dim){.src = -1, .extent = words};
    return sl__grid_from_dims(g, &in->grid, p->rank + 1, dims, NULL, 0, 0, out, err);
}

/* The partial and combine levels; `*last` is the level the result reads. */
static sl_status
reduce_add_tree(sl_graph *g, const char *name, uint32_t input, const struct sl_reduce_params *p,
                uint32_t split_every, uint32_t *last, struct sl_error *err)
{
    const struct sl__node *in = sl__graph_node(g, input);
    if (p->rank + 1 > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "node \"%s\": reducing a rank-%" PRIu32 " input across chunks needs "
                            "rank %" PRIu32 " partial states, above %d",
                            name, p->rank, p->rank + 1, SL_MAX_RANK);
    uint32_t words = sl_reduce_state_words(p);
    uint64_t extent[SL_MAX_RANK] = {0}, fan[SL_MAX_RANK];
    int8_t same[SL_MAX_RANK + 1];
    for (uint32_t d = 0; d <= p->rank; d++)
        same[d] = (int8_t)d;
    uint64_t s = reduce_fan_in(p, split_every);
    for (uint32_t d = 0; d < p->rank; d++) {
        extent[d] = p->reduced[d] ? in->grid.n_chunks[d] : in->grid.shape[d];
        fan[d] = p->reduced[d] ? s : 1;
    }
    char step[SL__NODE_NAME_MAX + 1];
    struct sl_grid grid;
    SL_TRY(reduce_step_name(name, ".partial", step, err));
    /* Each step added may move the nodes: `in` is looked up again. */
    SL_TRY(reduce_state_grid(g, sl__graph_node(g, input), p, extent, words, &grid, err));
    SL_TRY(reduce_add_step(g, step, "partial", input, SL__REDUCE_PARTIAL, p, SL_DTYPE_U64, &grid,
                           same, NULL, last, err));
    for (uint32_t level = 1;; level++) {
        bool more = false;
        for (uint32_t d = 0; d < p->rank; d++)
            more = more || (p->reduced[d] && extent[d] > s);
        if (!more)
            return SL_OK;
        for (uint32_t d = 0; d < p->rank; d++)
            if (p->reduced[d])
                extent[d] = (extent[d] + s - 1) / s;
        char suffix[24];
        snprintf(suffix, sizeof(suffix), ".combine%" PRIu32, level);
        SL_TRY(reduce_step_name(name, suffix, step, err));
        SL_TRY(reduce_state_grid(g, sl__graph_node(g, input), p, extent, words, &grid, err));
        SL_TRY(reduce_add_step(g, step, "combine", *last, SL__REDUCE_COMBINE, p, SL_DTYPE_U64,
                               &grid, same, fan, last, err));
    }
}

sl_status
sl_graph_add_reduce(sl_graph *g, const char *name, uint32_t input,
                    const struct sl_reduce_desc *desc, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    SL_TRY(sl__graph_check_input(g, name, input, err));
    if (desc == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": a reduce needs a descriptor", name);
    const struct sl__node *in = sl__graph_node(g, input);
    struct sl_reduce_params p;
    SL_TRY(reduce_params(name, in, desc, &p, err));
    bool direct = true;
    for (uint32_t d = 0; d < p.rank; d++)
        direct = direct && (!p.reduced[d] || in->grid.n_chunks[d] <= 1);
    uint32_t n_before = g->n_nodes, source = input;
    sl_status st =
        direct ? SL_OK : reduce_add_tree(g, name, input, &p, desc->split_every, &source, err);
    int8_t in_axis[SL_MAX_RANK + 1];
    struct sl_grid grid;
    if (st == SL_OK)
        st = reduce_result_grid(g, sl__graph_node(g, input), &p, desc, &grid, in_axis, err);
    if (st == SL_OK) {
        in_axis[p.rank] = SL__AXIS_WHOLE; /* the words of the partial states */
        st = reduce_add_step(g, name, direct ? "reduce" : "finish", source,
                             direct ? SL__REDUCE_DIRECT : SL__REDUCE_FINISH, &p, p.out_dtype, &grid,
                             in_axis, NULL, id, err);
    }
    if (st == SL_OK)
        return SL_OK;
    while (g->n_nodes > n_before)
        sl__graph_pop_node(g);
    return sl__node_fail(err, name, st);
}
