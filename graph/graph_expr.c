/* SPDX-License-Identifier: MIT */
/*
 * Expr nodes: blockwise arithmetic over several inputs that broadcast as
 * numpy's arrays do.  The expression is compiled once (ops' sl_expr); the
 * executor evaluates it over views of the input blocks that repeat along
 * the axes an input lacks (stride 0), so no input is ever expanded.
 *
 * DESIGN: an expr is a map read by region (its inputs may have other chunk
 * grids) with an axis mapping per input: input dimension d follows output
 * dimension r - k + d (numpy's trailing alignment), except an extent-1
 * dimension stretched over a longer output one, which follows none and is
 * read whole.  The planner then fuses the inputs whose chunks match the
 * output's and reads the others (broadcast ones, other grids) from their
 * own stages, with the reason in explain.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/expr.h>
#include <sluice/graph_node.h>

#include "core_internal.h"
#include "graph_internal.h"

/* The user function slot of an expr map, never called: the executor
 * evaluates the program itself. */
static sl_status
expr_map_unused(void *ctx, struct sl_block *out, size_t n_inputs, const struct sl_block *inputs,
                struct sl_error *err)
{
    (void)ctx;
    (void)out;
    (void)n_inputs;
    (void)inputs;
    return sl_error_set(err, SL_ESTATE, NULL, "expr node called as a user map");
}

/* The broadcast shape of the inputs into `shape` (rank `*rank`). */
static sl_status
expr_broadcast_shape(const sl_graph *g, const char *name, size_t n, const uint32_t *inputs,
                     const char *const *names, uint32_t *rank, uint64_t *shape,
                     struct sl_error *err)
{
    *rank = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t r = sl__graph_node(g, inputs[i])->grid.rank;
        *rank = r > *rank ? r : *rank;
    }
    for (uint32_t o = 0; o < *rank; o++)
        shape[o] = 1;
    for (size_t i = 0; i < n; i++) {
        const struct sl__node *in = sl__graph_node(g, inputs[i]);
        uint32_t lead = *rank - in->grid.rank;
        for (uint32_t d = 0; d < in->grid.rank; d++) {
            uint64_t e = in->grid.shape[d], *s = &shape[lead + d];
            if (e == *s || e == 1)
                continue;
            if (*s == 1) {
                *s = e;
                continue;
            }
            /* Name the earlier input that set this extent. */
            size_t k = 0;
            for (; k < i; k++) {
                const struct sl__node *o = sl__graph_node(g, inputs[k]);
                uint32_t ld = *rank - o->grid.rank;
                if (lead + d >= ld && o->grid.shape[lead + d - ld] == *s)
                    break;
            }
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": inputs \"%s\" and \"%s\" do not broadcast: output "
                                "dimension %" PRIu32 " has extent %" PRIu64 " in one and %" PRIu64
                                " in the other (extents must be equal or 1)",
                                name, names[k < i ? k : 0], names[i], lead + d, *s, e);
        }
    }
    return SL_OK;
}

/* Fill tmp->in_axis: which output dimension each input dimension follows. */
static void
expr_axes(const sl_graph *g, size_t n, const uint32_t *inputs, uint32_t rank, const uint64_t *shape,
          struct sl__node *tmp)
{
    tmp->axes_mapped = true;
    tmp->by_region = true;
    for (size_t i = 0; i < n; i++) {
        const struct sl__node *in = sl__graph_node(g, inputs[i]);
        uint32_t lead = rank - in->grid.rank;
        for (uint32_t d = 0; d < in->grid.rank; d++) {
            bool stretched = in->grid.shape[d] == 1 && shape[lead + d] != 1;
            tmp->in_axis[i][d] = stretched ? SL__AXIS_WHOLE : (int8_t)(lead + d);
        }
    }
}

/* Chunk extent of the first chunk of `grid` along `d`. */
static uint64_t
grid_first_extent(const struct sl_grid *grid, uint32_t d)
{
    return sl_grid_chunk_start(grid, d, 1) - sl_grid_chunk_start(grid, d, 0);
}

/* The output grid: `chunks`, else that of the first input of the output's
 * shape, else per dimension the first chunk extent of the first input
 * spanning it. */
static sl_status
expr_grid(sl_graph *g, size_t n, const uint32_t *inputs, uint32_t rank, const uint64_t *shape,
          const uint64_t *chunks, struct sl_grid *out, struct sl_error *err)
{
    if (chunks != NULL)
        return sl_grid_init_regular(out, rank, shape, chunks, err);
    for (size_t i = 0; i < n; i++) {
        const struct sl__node *in = sl__graph_node(g, inputs[i]);
        if (in->grid.rank == rank && memcmp(in->grid.shape, shape, rank * sizeof(uint64_t)) == 0)
            return sl_grid_copy(out, &in->grid, &g->alloc, err);
    }
    uint64_t chunk[SL_MAX_RANK];
    for (uint32_t o = 0; o < rank; o++) {
        chunk[o] = shape[o] > 0 ? shape[o] : 1;
        for (size_t i = 0; i < n; i++) {
            const struct sl__node *in = sl__graph_node(g, inputs[i]);
            uint32_t lead = rank - in->grid.rank;
            if (o >= lead && in->grid.shape[o - lead] == shape[o] && shape[o] > 0) {
                chunk[o] = grid_first_extent(&in->grid, o - lead);
                break;
            }
        }
    }
    return sl_grid_init_regular(out, rank, shape, chunk, err);
}

/* Check the descriptor's names: one per input, none twice. */
static sl_status
expr_check_names(const char *name, size_t n, const struct sl_expr_desc *desc, struct sl_error *err)
{
    if (desc->names == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": an expr needs input names", name);
    for (size_t i = 0; i < n; i++) {
        if (desc->names[i] == NULL || desc->names[i][0] == '\0')
            return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": input %zu has no name", name,
                                i);
        for (size_t k = 0; k < i; k++)
            if (strcmp(desc->names[k], desc->names[i]) == 0)
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "node \"%s\": inputs %zu and %zu are both named \"%s\"", name,
                                    k, i, desc->names[i]);
    }
    return SL_OK;
}

/* Compile the expression for the inputs' dtypes; every input must be used. */
static sl_status
expr_compile(sl_graph *g, const char *name, size_t n, const uint32_t *inputs,
             const struct sl_expr_desc *desc, sl_expr **out, struct sl_error *err)
{
    sl_dtype dtypes[SL_MAP_MAX_INPUTS];
    for (size_t i = 0; i < n; i++)
        dtypes[i] = sl__graph_node(g, inputs[i])->dtype;
    sl_status st =
        sl_expr_compile(desc->text, n, desc->names, dtypes, desc->compute, &g->alloc, out, err);
    if (st != SL_OK)
        return sl__node_fail(err, name, st);
    for (size_t i = 0; i < n; i++) {
        if (sl_expr_uses_input(*out, i))
            continue;
        sl_expr_free(*out);
        *out = NULL;
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": input \"%s\" is not used by the expression", name,
                            desc->names[i]);
    }
    return SL_OK;
}

sl_status
sl_graph_add_expr(sl_graph *g, const char *name, size_t n_inputs, const uint32_t *inputs,
                  const struct sl_expr_desc *desc, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    if (desc == NULL || desc->text == NULL || n_inputs == 0 || inputs == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": an expr needs a text and at least one input", name);
    if (n_inputs > SL_MAP_MAX_INPUTS)
        return sl_error_set(err, SL_EINVAL, NULL, "expr \"%s\": %zu inputs, at most %d", name,
                            n_inputs, SL_MAP_MAX_INPUTS);
    if ((unsigned)desc->out_dtype >= SL_DTYPE_COUNT_)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": invalid output dtype %d", name,
                            (int)desc->out_dtype);
    sl_dtype_class cls = sl_dtype_get_class(desc->out_dtype);
    if (cls == SL_DTYPE_CLASS_FLOAT16 || cls == SL_DTYPE_CLASS_COMPLEX)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "node \"%s\": an expr cannot produce %s (bool, integers, float32 "
                            "and float64 only)",
                            name, sl_dtype_name(desc->out_dtype));
    for (size_t i = 0; i < n_inputs; i++)
        SL_TRY(sl__graph_check_input(g, name, inputs[i], err));
    SL_TRY(expr_check_names(name, n_inputs, desc, err));
    uint32_t rank;
    uint64_t shape[SL_MAX_RANK];
    SL_TRY(expr_broadcast_shape(g, name, n_inputs, inputs, desc->names, &rank, shape, err));
    SL_TRY(sl__graph_reserve(g, err));
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_MAP, name, "expr");
    tmp.dtype = desc->out_dtype;
    tmp.u.map.fn = expr_map_unused;
    expr_axes(g, n_inputs, inputs, rank, shape, &tmp);
    sl_status st = expr_compile(g, name, n_inputs, inputs, desc, &tmp.expr, err);
    if (st == SL_OK) {
        st = expr_grid(g, n_inputs, inputs, rank, shape, desc->chunks, &tmp.grid, err);
        if (st != SL_OK)
            st = sl__node_fail(err, name, st);
    }
    if (st == SL_OK)
        st = sl__node_set_inputs(g, &tmp, n_inputs, inputs, err);
    if (st != SL_OK) {
        sl__node_fini(g, &tmp);
        return st;
    }
    sl__graph_commit_node(g, &tmp, id);
    return SL_OK;
}
