/* SPDX-License-Identifier: MIT */
/*
 * View nodes: an input's region seen with other axes, never copied by the
 * node itself.  squeeze drops extent-1 axes, expand_dims inserts them,
 * transpose permutes axes, stack puts inputs of one shape side by side
 * along a new axis, concat joins inputs along an existing one.
 *
 * DESIGN: every output chunk lies inside one input's region, so its block
 * is that region's block with its shape and strides rearranged (exec_eval.c,
 * eval_view).  The mapping is the node's axis map (which output dimension
 * each input dimension follows) and, for stack and concat, each input's
 * window along the joining axis; the output grid keeps each followed
 * dimension's chunk boundaries, gives a new axis one chunk per element
 * (stack) or of extent 1 (expand_dims), and cuts a concatenation where the
 * inputs meet, so where the inputs' other boundaries agree every edge fuses.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/graph_node.h>

#include "core_internal.h"
#include "graph_internal.h"

/* Boundaries of output dimension `o` into a new array of *n + 1 entries. */
static sl_status
view_bounds(sl_graph *g, const struct sl_grid *in, const struct sl__grid_dim *vd, uint64_t **out,
            uint64_t *n, struct sl_error *err)
{
    *n = vd->src >= 0 ? in->n_chunks[vd->src] : vd->per_element ? vd->extent : 1;
    *out = sl_alloc_zeroed(&g->alloc, *n + 1, sizeof(uint64_t), 0);
    if (*out == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu64 " chunk bounds", *n);
    for (uint64_t k = 0; k <= *n; k++)
        (*out)[k] = vd->src >= 0      ? sl_grid_chunk_start(in, (uint32_t)vd->src, k)
                    : vd->per_element ? k
                                      : k * vd->extent;
    return SL_OK;
}

sl_status
sl__grid_from_dims(sl_graph *g, const struct sl_grid *in, uint32_t rank,
                   const struct sl__grid_dim *dims, const uint64_t *concat, uint64_t concat_n,
                   uint32_t axis, struct sl_grid *out, struct sl_error *err)
{
    uint64_t *bounds[SL_MAX_RANK] = {0}, n_chunks[SL_MAX_RANK];
    sl_status st = SL_OK;
    for (uint32_t o = 0; o < rank && st == SL_OK; o++) {
        if (concat != NULL && o == axis) {
            n_chunks[o] = concat_n;
            bounds[o] = (uint64_t *)concat;
            continue;
        }
        st = view_bounds(g, in, &dims[o], &bounds[o], &n_chunks[o], err);
    }
    if (st == SL_OK)
        st = sl_grid_init_bounds(out, &g->alloc, rank, n_chunks, (const uint64_t *const *)bounds,
                                 err);
    for (uint32_t o = 0; o < rank; o++)
        if (bounds[o] != NULL && !(concat != NULL && o == axis))
            sl_free(&g->alloc, bounds[o], (n_chunks[o] + 1) * sizeof(uint64_t));
    return st;
}

/* Commit view node `tmp` over `n` inputs once its grid and axes are set. */
static sl_status
view_commit(sl_graph *g, struct sl__node *tmp, size_t n, const uint32_t *inputs, uint32_t *id,
            struct sl_error *err)
{
    tmp->axes_mapped = true;
    tmp->dtype = sl__graph_node(g, inputs[0])->dtype;
    sl_status st = sl__node_set_inputs(g, tmp, n, inputs, err);
    if (st != SL_OK) {
        sl__node_fini(g, tmp);
        return st;
    }
    sl__graph_commit_node(g, tmp, id);
    return SL_OK;
}

/* The first checks of every view of one input. */
static sl_status
view_check_one(const sl_graph *g, const char *name, uint32_t input, struct sl_error *err)
{
    SL_TRY(sl__graph_check_new_node(g, name, err));
    return sl__graph_check_input(g, name, input, err);
}

sl_status
sl_graph_add_squeeze(sl_graph *g, const char *name, uint32_t input, size_t n_axes,
                     const uint32_t *axes, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(view_check_one(g, name, input, err));
    const struct sl__node *in = sl__graph_node(g, input);
    bool drop[SL_MAX_RANK] = {false};
    for (size_t k = 0; k < n_axes; k++) {
        if (axes == NULL || axes[k] >= in->grid.rank || drop[axes[k]])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": axis %" PRIu32 " to squeeze is %s (input \"%s\" has "
                                "rank %" PRIu32 ")",
                                name, axes != NULL ? axes[k] : 0,
                                axes != NULL && axes[k] < in->grid.rank ? "given twice"
                                                                        : "out of range",
                                in->name, in->grid.rank);
        if (in->grid.shape[axes[k]] != 1)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": cannot squeeze axis %" PRIu32 " of \"%s\": its "
                                "extent is %" PRIu64 ", not 1",
                                name, axes[k], in->name, in->grid.shape[axes[k]]);
        drop[axes[k]] = true;
    }
    for (uint32_t d = 0; d < in->grid.rank && n_axes == 0; d++)
        drop[d] = in->grid.shape[d] == 1;
    SL_TRY(sl__graph_reserve(g, err));
    in = sl__graph_node(g, input); /* the reserve may have moved the nodes */
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_VIEW, name, "squeeze");
    struct sl__grid_dim dims[SL_MAX_RANK];
    uint32_t rank = 0;
    for (uint32_t d = 0; d < in->grid.rank; d++) {
        tmp.in_axis[0][d] = drop[d] ? SL__AXIS_WHOLE : (int8_t)rank;
        if (!drop[d])
            dims[rank++] = (struct sl__grid_dim){.src = (int)d};
    }
    sl_status st = sl__grid_from_dims(g, &in->grid, rank, dims, NULL, 0, 0, &tmp.grid, err);
    if (st != SL_OK)
        return sl__node_fail(err, name, st);
    return view_commit(g, &tmp, 1, &input, id, err);
}

sl_status
sl_graph_add_expand_dims(sl_graph *g, const char *name, uint32_t input, size_t n_axes,
                         const uint32_t *axes, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(view_check_one(g, name, input, err));
    const struct sl__node *in = sl__graph_node(g, input);
    uint32_t rank = in->grid.rank + (uint32_t)n_axes;
    if (n_axes == 0 || axes == NULL || rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": expand_dims needs 1 to %" PRIu32 " new axes, got %zu",
                            name, SL_MAX_RANK - in->grid.rank, n_axes);
    bool added[SL_MAX_RANK] = {false};
    for (size_t k = 0; k < n_axes; k++) {
        if (axes[k] >= rank || added[axes[k]])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": new axis %" PRIu32 " is %s (the output has rank "
                                "%" PRIu32 ")",
                                name, axes[k], axes[k] < rank ? "given twice" : "out of range",
                                rank);
        added[axes[k]] = true;
    }
    SL_TRY(sl__graph_reserve(g, err));
    in = sl__graph_node(g, input); /* the reserve may have moved the nodes */
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_VIEW, name, "expand_dims");
    struct sl__grid_dim dims[SL_MAX_RANK];
    uint32_t d = 0;
    for (uint32_t o = 0; o < rank; o++) {
        if (added[o]) {
            dims[o] = (struct sl__grid_dim){.src = -1, .extent = 1};
            continue;
        }
        tmp.in_axis[0][d] = (int8_t)o;
        dims[o] = (struct sl__grid_dim){.src = (int)d++};
    }
    sl_status st = sl__grid_from_dims(g, &in->grid, rank, dims, NULL, 0, 0, &tmp.grid, err);
    if (st != SL_OK)
        return sl__node_fail(err, name, st);
    return view_commit(g, &tmp, 1, &input, id, err);
}

sl_status
sl_graph_add_transpose(sl_graph *g, const char *name, uint32_t input, const uint32_t *perm,
                       uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(view_check_one(g, name, input, err));
    const struct sl__node *in = sl__graph_node(g, input);
    bool seen[SL_MAX_RANK] = {false};
    for (uint32_t o = 0; o < in->grid.rank; o++) {
        if (perm == NULL || perm[o] >= in->grid.rank || seen[perm[o]])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": the axes are no permutation of 0..%" PRIu32
                                " (entry %" PRIu32 " is %s)",
                                name, in->grid.rank - 1, o,
                                perm == NULL               ? "missing"
                                : perm[o] >= in->grid.rank ? "out of range"
                                                           : "a repeat");
        seen[perm[o]] = true;
    }
    SL_TRY(sl__graph_reserve(g, err));
    in = sl__graph_node(g, input); /* the reserve may have moved the nodes */
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_VIEW, name, "transpose");
    struct sl__grid_dim dims[SL_MAX_RANK];
    for (uint32_t o = 0; o < in->grid.rank; o++) {
        tmp.in_axis[0][perm[o]] = (int8_t)o;
        dims[o] = (struct sl__grid_dim){.src = (int)perm[o]};
    }
    sl_status st =
        sl__grid_from_dims(g, &in->grid, in->grid.rank, dims, NULL, 0, 0, &tmp.grid, err);
    if (st != SL_OK)
        return sl__node_fail(err, name, st);
    return view_commit(g, &tmp, 1, &input, id, err);
}

/* Check the inputs of a stack or concat: 1..8 of one dtype and rank, with
 * equal extents but along `skip` (UINT32_MAX: none). */
static sl_status
join_check(const sl_graph *g, const char *name, const char *what, size_t n, const uint32_t *inputs,
           uint32_t skip, struct sl_error *err)
{
    SL_TRY(sl__graph_check_new_node(g, name, err));
    if (n == 0 || inputs == NULL || n > SL_MAP_MAX_INPUTS)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": %s takes 1 to %d inputs, got %zu",
                            name, what, SL_MAP_MAX_INPUTS, n);
    for (size_t i = 0; i < n; i++)
        SL_TRY(sl__graph_check_input(g, name, inputs[i], err));
    const struct sl__node *a = sl__graph_node(g, inputs[0]);
    for (size_t i = 1; i < n; i++) {
        const struct sl__node *b = sl__graph_node(g, inputs[i]);
        if (b->dtype != a->dtype)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": %s inputs \"%s\" (%s) and \"%s\" (%s) differ in "
                                "dtype; cast one first",
                                name, what, a->name, sl_dtype_name(a->dtype), b->name,
                                sl_dtype_name(b->dtype));
        bool same = b->grid.rank == a->grid.rank;
        for (uint32_t d = 0; same && d < a->grid.rank; d++)
            same = d == skip || a->grid.shape[d] == b->grid.shape[d];
        if (same)
            continue;
        char sa[96], sb[96];
        sl_shape_format(a->grid.rank, a->grid.shape, sa, sizeof(sa));
        sl_shape_format(b->grid.rank, b->grid.shape, sb, sizeof(sb));
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": %s inputs \"%s\" (shape %s) and \"%s\" (shape %s) "
                            "must have the same shape%s",
                            name, what, a->name, sa, b->name, sb,
                            skip != UINT32_MAX ? " outside the axis" : "");
    }
    return SL_OK;
}

sl_status
sl_graph_add_stack(sl_graph *g, const char *name, size_t n_inputs, const uint32_t *inputs,
                   uint32_t axis, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(join_check(g, name, "stack", n_inputs, inputs, UINT32_MAX, err));
    const struct sl__node *in = sl__graph_node(g, inputs[0]);
    uint32_t rank = in->grid.rank + 1;
    if (axis >= rank || rank > SL_MAX_RANK || in->grid.rank == 0)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": stack axis %" PRIu32 " is out of range for inputs of "
                            "rank %" PRIu32 " (0..%" PRIu32 "; at most rank %d out)",
                            name, axis, in->grid.rank, in->grid.rank, SL_MAX_RANK);
    SL_TRY(sl__graph_reserve(g, err));
    in = sl__graph_node(g, inputs[0]); /* the reserve may have moved the nodes */
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_VIEW, name, "stack");
    struct sl__grid_dim dims[SL_MAX_RANK];
    for (uint32_t o = 0, d = 0; o < rank; o++)
        dims[o] = o == axis
                      ? (struct sl__grid_dim){.src = -1, .extent = n_inputs, .per_element = true}
                      : (struct sl__grid_dim){.src = (int)d++};
    tmp.win_axis = (int8_t)axis;
    for (size_t i = 0; i < n_inputs; i++) {
        for (uint32_t d = 0; d < in->grid.rank; d++)
            tmp.in_axis[i][d] = (int8_t)(d < axis ? d : d + 1);
        tmp.win_lo[i] = i;
        tmp.win_hi[i] = i + 1;
    }
    sl_status st = sl__grid_from_dims(g, &in->grid, rank, dims, NULL, 0, 0, &tmp.grid, err);
    if (st != SL_OK)
        return sl__node_fail(err, name, st);
    return view_commit(g, &tmp, n_inputs, inputs, id, err);
}

/* The concatenation's boundaries along `axis`: each input's, shifted. */
static sl_status
concat_bounds(sl_graph *g, const char *name, size_t n, const uint32_t *inputs, uint32_t axis,
              uint64_t **out, uint64_t *n_out, struct sl_error *err)
{
    uint64_t total = 0, extent = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sl__node *in = sl__graph_node(g, inputs[i]);
        total += in->grid.shape[axis] > 0 ? in->grid.n_chunks[axis] : 0;
        if (extent > UINT64_MAX - in->grid.shape[axis])
            return sl_error_set(err, SL_EOVERFLOW, NULL,
                                "node \"%s\": the concatenation is longer than 2^64 - 1", name);
        extent += in->grid.shape[axis];
    }
    *n_out = total;
    *out = sl_alloc_zeroed(&g->alloc, total + 1, sizeof(uint64_t), 0);
    if (*out == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu64 " chunk bounds", total);
    uint64_t k = 0, base = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sl__node *in = sl__graph_node(g, inputs[i]);
        if (in->grid.shape[axis] == 0)
            continue;
        for (uint64_t c = 0; c < in->grid.n_chunks[axis]; c++)
            (*out)[k++] = base + sl_grid_chunk_start(&in->grid, axis, c);
        base += in->grid.shape[axis];
    }
    (*out)[k] = base;
    return SL_OK;
}

sl_status
sl_graph_add_concat(sl_graph *g, const char *name, size_t n_inputs, const uint32_t *inputs,
                    uint32_t axis, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(join_check(g, name, "concat", n_inputs, inputs, axis, err));
    const struct sl__node *in = sl__graph_node(g, inputs[0]);
    if (axis >= in->grid.rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": concat axis %" PRIu32 " is out of range for inputs of "
                            "rank %" PRIu32,
                            name, axis, in->grid.rank);
    SL_TRY(sl__graph_reserve(g, err));
    in = sl__graph_node(g, inputs[0]); /* the reserve may have moved the nodes */
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_VIEW, name, "concat");
    struct sl__grid_dim dims[SL_MAX_RANK];
    for (uint32_t d = 0; d < in->grid.rank; d++)
        dims[d] = (struct sl__grid_dim){.src = (int)d};
    tmp.win_axis = (int8_t)axis;
    uint64_t base = 0;
    for (size_t i = 0; i < n_inputs; i++) {
        const struct sl__node *x = sl__graph_node(g, inputs[i]);
        for (uint32_t d = 0; d < in->grid.rank; d++)
            tmp.in_axis[i][d] = (int8_t)d;
        tmp.win_lo[i] = base;
        base += x->grid.shape[axis];
        tmp.win_hi[i] = base;
    }
    uint64_t *bounds = NULL, n_bounds = 0;
    sl_status st = concat_bounds(g, name, n_inputs, inputs, axis, &bounds, &n_bounds, err);
    if (st == SL_OK)
        st = sl__grid_from_dims(g, &in->grid, in->grid.rank, dims, bounds, n_bounds, axis,
                                &tmp.grid, err);
    if (bounds != NULL)
        sl_free(&g->alloc, bounds, (n_bounds + 1) * sizeof(uint64_t));
    if (st != SL_OK)
        return sl__node_fail(err, name, st);
    return view_commit(g, &tmp, n_inputs, inputs, id, err);
}
