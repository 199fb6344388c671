/* SPDX-License-Identifier: MIT */
/*
 * Map, regrid, rechunk and putter nodes, and the mapping every node gives
 * from an output region to the input region it needs.
 *
 * DESIGN: mappings are separable per dimension (an interval of output
 * coordinates needs an interval of input coordinates), which covers
 * blockwise maps, downsampling, rechunking, halos and selections, and lets
 * the planner decide fusion one dimension at a time.  A map's output chunk
 * k is computed from input chunk k (same coordinates), whatever the factors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/graph_node.h>

#include "core_internal.h"
#include "graph_internal.h"

/* Largest scale numerator or denominator accepted; keeps the two-step
 * products below 2^64. */
#define GRAPH_SCALE_MAX (UINT64_C(1) << 32)

/* floor(a * num / den) without overflowing while the result fits; saturates. */
static uint64_t
mul_div_floor(uint64_t a, uint64_t num, uint64_t den)
{
    uint64_t hi;
    if (!sl_u64_mul_fits(a / den, num, &hi))
        return UINT64_MAX;
    uint64_t lo = (a % den) * num / den;
    return hi > UINT64_MAX - lo ? UINT64_MAX : hi + lo;
}

/* ceil(a * num / den), as mul_div_floor. */
static uint64_t
mul_div_ceil(uint64_t a, uint64_t num, uint64_t den)
{
    uint64_t hi;
    if (!sl_u64_mul_fits(a / den, num, &hi))
        return UINT64_MAX;
    uint64_t rem = (a % den) * num;
    uint64_t lo = rem / den + (rem % den != 0);
    return hi > UINT64_MAX - lo ? UINT64_MAX : hi + lo;
}

/* The input interval along `dim` for an output interval inside one slice. */
static void
select_interval(const struct sl__node *node, uint32_t dim, uint64_t a, uint64_t b, uint64_t *in_a,
                uint64_t *in_b)
{
    if (dim != node->u.select.axis) {
        *in_a = a + node->u.select.offset[dim];
        *in_b = b + node->u.select.offset[dim];
        return;
    }
    /* Last piece starting at or before a. */
    const struct sl__select_piece *p = node->u.select.pieces;
    size_t lo = 0, hi = node->u.select.n_pieces;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].out_start <= a)
            lo = mid;
        else
            hi = mid;
    }
    *in_a = a - p[lo].out_start + p[lo].in_start;
    *in_b = b - p[lo].out_start + p[lo].in_start;
}

int
sl__node_out_dim(const struct sl__node *node, uint32_t input, uint32_t dim)
{
    if (!node->axes_mapped)
        return (int)dim;
    return node->in_axis[input][dim];
}

void
sl__node_input_interval(const sl_graph *g, const struct sl__node *node, uint32_t input,
                        uint32_t dim, uint64_t a, uint64_t b, uint64_t *in_a, uint64_t *in_b)
{
    const struct sl__node *in = sl__graph_node(g, node->inputs[input]);
    uint64_t extent = in->grid.shape[dim];
    int o = sl__node_out_dim(node, input, dim);
    if (o == SL__AXIS_WHOLE) {
        *in_a = 0;
        *in_b = extent;
        return;
    }
    if (node->kind == SL_NODE_SELECT) {
        select_interval(node, dim, a, b, in_a, in_b);
        return;
    }
    if (node->kind == SL_NODE_MAP && !node->by_region) {
        /* Chunk k of the output comes from chunk k of each input. */
        uint64_t k = sl_grid_chunk_at(&node->grid, (uint32_t)o, a);
        *in_a = sl_grid_chunk_start(&in->grid, dim, k);
        *in_b = sl_grid_chunk_start(&in->grid, dim, k + 1);
        return;
    }
    if (o == node->win_axis) {
        /* Only the input's window, shifted to its start. */
        uint64_t wl = node->win_lo[input], wh = node->win_hi[input];
        a = a > wl ? a : wl;
        b = b < wh ? b : wh;
        *in_a = a < b ? a - wl : 0;
        *in_b = a < b ? b - wl : 0;
        return;
    }
    if (node->has_op && node->op.desc->kind == SL_OP_KIND_HALO) {
        /* The op's boundary says which elements beyond an edge it reads. */
        sl_op_halo_interval(&node->op, dim, extent, a, b, in_a, in_b);
        return;
    }
    const struct sl__dim_map *m = &node->map[o];
    uint64_t lo = mul_div_floor(a, m->num, m->den);
    uint64_t hi = mul_div_ceil(b, m->num, m->den);
    lo = lo > m->halo_lo ? lo - m->halo_lo : 0;
    hi = hi > UINT64_MAX - m->halo_hi ? UINT64_MAX : hi + m->halo_hi;
    *in_a = lo < extent ? lo : extent;
    *in_b = hi < extent ? hi : extent;
}

void
sl__node_input_region(const sl_graph *g, const struct sl__node *node, uint32_t input,
                      const struct sl_region *out, struct sl_region *in)
{
    const struct sl__node *p = sl__graph_node(g, node->inputs[input]);
    in->rank = p->grid.rank;
    int w = node->win_axis;
    if (w >= 0 && (out->stop[w] <= node->win_lo[input] || out->start[w] >= node->win_hi[input])) {
        /* Outside the input's window: nothing of it is read. */
        for (uint32_t d = 0; d < in->rank; d++)
            in->start[d] = in->stop[d] = 0;
        return;
    }
    for (uint32_t d = 0; d < in->rank; d++) {
        int o = sl__node_out_dim(node, input, d);
        uint64_t a = o == SL__AXIS_WHOLE ? 0 : out->start[o];
        uint64_t b = o == SL__AXIS_WHOLE ? 0 : out->stop[o];
        sl__node_input_interval(g, node, input, d, a, b, &in->start[d], &in->stop[d]);
    }
}

/* "shape [..], chunk shape [..], [..] chunks" of `grid` (the largest chunk
 * per dimension, "irregular" where the chunks differ). */
static void
grid_describe(const struct sl_grid *grid, char *buf, size_t size)
{
    char shape[64], chunk[64], count[64];
    uint64_t largest[SL_MAX_RANK];
    for (uint32_t d = 0; d < grid->rank; d++)
        largest[d] = sl_grid_max_chunk(grid, d);
    sl_shape_format(grid->rank, grid->shape, shape, sizeof(shape));
    sl_shape_format(grid->rank, largest, chunk, sizeof(chunk));
    sl_shape_format(grid->rank, grid->n_chunks, count, sizeof(count));
    snprintf(buf, size, "shape %s, chunk shape %s%s, %s chunks", shape, chunk,
             sl_grid_is_regular(grid) ? "" : " at most (irregular)", count);
}

/* Check that every input of a map shares the first input's chunk grid. */
static sl_status
map_check_inputs(const sl_graph *g, const char *name, size_t n, const uint32_t *inputs,
                 struct sl_error *err)
{
    for (size_t i = 0; i < n; i++)
        SL_TRY(sl__graph_check_input(g, name, inputs[i], err));
    const struct sl__node *first = sl__graph_node(g, inputs[0]);
    for (size_t i = 1; i < n; i++) {
        const struct sl__node *other = sl__graph_node(g, inputs[i]);
        if (sl_grid_equal(&first->grid, &other->grid))
            continue;
        char a[160], b[160];
        grid_describe(&first->grid, a, sizeof(a));
        grid_describe(&other->grid, b, sizeof(b));
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": inputs \"%s\" (%s) and \"%s\" (%s) have different "
                            "chunk grids; rechunk one of them",
                            name, first->name, a, other->name, b);
    }
    return SL_OK;
}

/* The output grid of a map: input boundaries scaled by num/den per dimension. */
static sl_status
map_output_grid(sl_graph *g, const char *name, const struct sl_grid *in, const uint64_t *num,
                const uint64_t *den, struct sl_grid *out, struct sl_error *err)
{
    if (num == NULL && den == NULL)
        return sl_grid_copy(out, in, &g->alloc, err);
    uint64_t *bounds[SL_MAX_RANK] = {0};
    sl_status st = SL_OK;
    for (uint32_t d = 0; d < in->rank && st == SL_OK; d++) {
        uint64_t n = num != NULL ? num[d] : 1, q = den != NULL ? den[d] : 1;
        if (n == 0 || q == 0 || n > GRAPH_SCALE_MAX || q > GRAPH_SCALE_MAX || (n != 1 && q != 1)) {
            st = sl_error_set(err, SL_EINVAL, NULL,
                              "node \"%s\": chunk factor %" PRIu64 "/%" PRIu64
                              " in dimension %" PRIu32 " must be k/1 or 1/k with 1 <= k <= 2^32",
                              name, n, q, d);
            break;
        }
        bounds[d] = sl_alloc_zeroed(&g->alloc, in->n_chunks[d] + 1, sizeof(uint64_t), 0);
        if (bounds[d] == NULL) {
            st = sl_error_set(err, SL_ENOMEM, NULL, "no memory for node \"%s\"", name);
            break;
        }
        for (uint64_t k = 0; k <= in->n_chunks[d]; k++)
            bounds[d][k] = mul_div_ceil(sl_grid_chunk_start(in, d, k), n, q);
    }
    if (st == SL_OK)
        st = sl_grid_init_bounds(out, &g->alloc, in->rank, in->n_chunks,
                                 (const uint64_t *const *)bounds, err);
    for (uint32_t d = 0; d < in->rank; d++)
        if (bounds[d] != NULL)
            sl_free(&g->alloc, bounds[d], (in->n_chunks[d] + 1) * sizeof(uint64_t));
    return st == SL_OK ? SL_OK : sl__node_fail(err, name, st);
}

sl_status
sl_graph_add_map(sl_graph *g, const char *name, size_t n_inputs, const uint32_t *inputs,
                 const struct sl_map_desc *desc, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    if (desc == NULL || desc->fn == NULL || n_inputs == 0 || inputs == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": a map needs a function and at least one input", name);
    if (n_inputs > SL_MAP_MAX_INPUTS)
        return sl_error_set(err, SL_EINVAL, NULL, "map \"%s\": %zu inputs, at most %d", name,
                            n_inputs, SL_MAP_MAX_INPUTS);
    if ((unsigned)desc->out_dtype >= SL_DTYPE_COUNT_)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": invalid output dtype %d", name,
                            (int)desc->out_dtype);
    SL_TRY(map_check_inputs(g, name, n_inputs, inputs, err));
    SL_TRY(sl__graph_reserve(g, err));
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_MAP, name, desc->op_name != NULL ? desc->op_name : "map");
    tmp.dtype = desc->out_dtype;
    tmp.u.map.fn = desc->fn;
    tmp.u.map.ctx = desc->ctx;
    const struct sl__node *first = sl__graph_node(g, inputs[0]);
    sl_status st =
        map_output_grid(g, name, &first->grid, desc->chunk_num, desc->chunk_den, &tmp.grid, err);
    if (st == SL_OK)
        st = sl__node_set_inputs(g, &tmp, n_inputs, inputs, err);
    if (st != SL_OK) {
        sl__node_fini(g, &tmp);
        return st;
    }
    sl__graph_commit_node(g, &tmp, id);
    return SL_OK;
}

/* Fill the regrid mapping of `tmp` and its output shape from `desc`. */
static sl_status
regrid_mapping(const char *name, const struct sl__node *in, const struct sl_regrid_desc *desc,
               struct sl__node *tmp, uint64_t *shape, struct sl_error *err)
{
    for (uint32_t d = 0; d < in->grid.rank; d++) {
        struct sl__dim_map m = {
            .num = desc->scale_num != NULL ? desc->scale_num[d] : 1,
            .den = desc->scale_den != NULL ? desc->scale_den[d] : 1,
            .halo_lo = desc->halo_lo != NULL ? desc->halo_lo[d] : 0,
            .halo_hi = desc->halo_hi != NULL ? desc->halo_hi[d] : 0,
        };
        if (m.num == 0 || m.den == 0 || m.num > GRAPH_SCALE_MAX || m.den > GRAPH_SCALE_MAX)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": scale %" PRIu64 "/%" PRIu64 " in dimension %" PRIu32
                                " must have terms in 1..2^32",
                                name, m.num, m.den, d);
        tmp->map[d] = m;
        shape[d] =
            desc->shape != NULL ? desc->shape[d] : mul_div_ceil(in->grid.shape[d], m.den, m.num);
    }
    return SL_OK;
}

sl_status
sl_graph_add_regrid(sl_graph *g, const char *name, uint32_t input,
                    const struct sl_regrid_desc *desc, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    SL_TRY(sl__graph_check_input(g, name, input, err));
    if (desc == NULL || desc->fn == NULL || desc->chunk_shape == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": a regrid needs a function and an output chunk shape",
                            name);
    if ((unsigned)desc->out_dtype >= SL_DTYPE_COUNT_)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": invalid output dtype %d", name,
                            (int)desc->out_dtype);
    SL_TRY(sl__graph_reserve(g, err));
    const struct sl__node *in = sl__graph_node(g, input);
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_REGRID, name, desc->op_name != NULL ? desc->op_name : "regrid");
    uint64_t shape[SL_MAX_RANK];
    SL_TRY(regrid_mapping(name, in, desc, &tmp, shape, err));
    tmp.dtype = desc->out_dtype;
    tmp.u.regrid.fn = desc->fn;
    tmp.u.regrid.ctx = desc->ctx;
    sl_status st = sl_grid_init_regular(&tmp.grid, in->grid.rank, shape, desc->chunk_shape, err);
    if (st == SL_OK)
        st = sl__node_set_inputs(g, &tmp, 1, &input, err);
    if (st != SL_OK) {
        sl__node_fini(g, &tmp);
        return sl__node_fail(err, name, st);
    }
    sl__graph_commit_node(g, &tmp, id);
    return SL_OK;
}

/* A rechunk's function: the input region equals the output region. */
static sl_status
rechunk_copy(void *ctx, struct sl_block *out, const struct sl_block *in, struct sl_error *err)
{
    (void)ctx;
    return sl_view_copy(&out->view, &in->view, err);
}

sl_status
sl_graph_add_rechunk(sl_graph *g, const char *name, uint32_t input, const uint64_t *chunk_shape,
                     uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_input(g, name != NULL ? name : "", input, err));
    const struct sl__node *in = sl__graph_node(g, input);
    const struct sl_regrid_desc desc = {
        .op_name = "rechunk",
        .fn = rechunk_copy,
        .out_dtype = in->dtype,
        .chunk_shape = chunk_shape,
    };
    uint32_t added;
    SL_TRY(sl_graph_add_regrid(g, name, input, &desc, &added, err));
    sl__graph_node(g, added)->rechunk = true;
    if (id != NULL)
        *id = added;
    return SL_OK;
}

/*
 * The input a writer of chunk shape `chunk_shape` reads: `input` itself when
 * its grid already has those chunks, else a rechunk named "<name>.rechunk"
 * added in front.
 */
sl_status
sl__graph_input_with_chunks(sl_graph *g, const char *name, uint32_t input,
                            const uint64_t *chunk_shape, uint32_t *out, struct sl_error *err)
{
    SL_TRY(sl__graph_check_input(g, name, input, err));
    const struct sl__node *in = sl__graph_node(g, input);
    struct sl_grid want;
    SL_TRY(sl_grid_init_regular(&want, in->grid.rank, in->grid.shape, chunk_shape, err));
    if (sl_grid_equal(&want, &in->grid)) {
        *out = input;
        return SL_OK;
    }
    char rechunk_name[SL__NODE_NAME_MAX + 1];
    int n = snprintf(rechunk_name, sizeof(rechunk_name), "%s.rechunk", name);
    if (n < 0 || (size_t)n >= sizeof(rechunk_name))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": name too long to add its rechunk node", name);
    return sl_graph_add_rechunk(g, rechunk_name, input, chunk_shape, out, err);
}

sl_status
sl_graph_add_putter(sl_graph *g, const char *name, uint32_t input,
                    const struct sl_putter_desc *desc, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    SL_TRY(sl__graph_check_input(g, name, input, err));
    if (desc == NULL || desc->fn == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": a putter needs a function", name);
    uint32_t source = input;
    if (desc->chunk_shape != NULL)
        SL_TRY(sl__graph_input_with_chunks(g, name, input, desc->chunk_shape, &source, err));
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_PUTTER, name, "putter");
    tmp.u.putter.fn = desc->fn;
    tmp.u.putter.ctx = desc->ctx;
    sl_status st = sl__graph_reserve(g, err);
    if (st == SL_OK) {
        const struct sl__node *in = sl__graph_node(g, source);
        tmp.dtype = in->dtype;
        st = sl_grid_copy(&tmp.grid, &in->grid, &g->alloc, err);
    }
    if (st == SL_OK)
        st = sl__node_set_inputs(g, &tmp, 1, &source, err);
    if (st != SL_OK) {
        sl__node_fini(g, &tmp);
        if (source != input)
            sl__graph_pop_node(g);
        return st;
    }
    sl__graph_commit_node(g, &tmp, id);
    return SL_OK;
}
