/* SPDX-License-Identifier: MIT */
/*
 * Select nodes: one slice of the input, or several disjoint slices
 * concatenated along an axis (katdal's dump selections, zarr's batched
 * slice requests).
 *
 * DESIGN: the output chunk grid is the slices' intersection with the input
 * grid: along each dimension the output boundaries are the slice ends plus
 * every input chunk boundary inside a slice.  So each output chunk lies in
 * exactly one input chunk and one slice, and the chunk read for it is always
 * a whole stored chunk of the input.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/graph_node.h>

#include "core_internal.h"
#include "graph_internal.h"

/* Check each slice alone: rank, bounds, not empty. */
static sl_status
select_check_slices(const char *name, const struct sl__node *in, const struct sl_select_desc *desc,
                    struct sl_error *err)
{
    for (size_t k = 0; k < desc->n_slices; k++) {
        const struct sl_region *s = &desc->slices[k];
        if (s->rank != in->grid.rank)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": slice %zu has rank %" PRIu32
                                ", input \"%s\" has rank %" PRIu32,
                                name, k, s->rank, in->name, in->grid.rank);
        sl_status st = sl_region_check_within(s, in->grid.rank, in->grid.shape, err);
        if (st != SL_OK)
            return sl__node_fail(err, name, st);
        if (sl_region_is_empty(s)) {
            char text[160];
            sl_region_format(s, text, sizeof(text));
            return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": slice %zu %s is empty", name, k,
                                text);
        }
    }
    return SL_OK;
}

/* Order slice indices by their start along the axis (insertion sort: few slices). */
static void
select_sort_by_start(const struct sl_select_desc *desc, size_t *order)
{
    uint32_t ax = desc->axis;
    for (size_t i = 0; i < desc->n_slices; i++) {
        size_t j = i;
        while (j > 0 && desc->slices[order[j - 1]].start[ax] > desc->slices[i].start[ax]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
}

/* Several slices: same extent outside the axis, no overlap along it. */
static sl_status
select_check_concat(sl_graph *g, const char *name, const struct sl_select_desc *desc,
                    struct sl_error *err)
{
    uint32_t ax = desc->axis;
    const struct sl_region *s0 = &desc->slices[0];
    if (ax >= s0->rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": concatenation axis %" PRIu32 " but rank is %" PRIu32,
                            name, ax, s0->rank);
    for (size_t k = 1; k < desc->n_slices; k++) {
        const struct sl_region *s = &desc->slices[k];
        for (uint32_t d = 0; d < s->rank; d++) {
            if (d == ax || (s->start[d] == s0->start[d] && s->stop[d] == s0->stop[d]))
                continue;
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": slice %zu covers [%" PRIu64 ":%" PRIu64
                                ") in dimension %" PRIu32 " but slice 0 covers [%" PRIu64
                                ":%" PRIu64
                                "); concatenated slices must agree outside axis %" PRIu32,
                                name, k, s->start[d], s->stop[d], d, s0->start[d], s0->stop[d], ax);
        }
    }
    size_t *order = sl_alloc_zeroed(&g->alloc, desc->n_slices, sizeof(size_t), 0);
    if (order == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for node \"%s\"", name);
    select_sort_by_start(desc, order);
    sl_status st = SL_OK;
    for (size_t i = 1; i < desc->n_slices && st == SL_OK; i++) {
        const struct sl_region *a = &desc->slices[order[i - 1]], *b = &desc->slices[order[i]];
        if (a->stop[ax] > b->start[ax])
            st = sl_error_set(err, SL_EINVAL, NULL,
                              "node \"%s\": slices %zu [%" PRIu64 ":%" PRIu64 ") and %zu [%" PRIu64
                              ":%" PRIu64 ") overlap along axis %" PRIu32,
                              name, order[i - 1], a->start[ax], a->stop[ax], order[i], b->start[ax],
                              b->stop[ax], ax);
    }
    sl_free(&g->alloc, order, desc->n_slices * sizeof(size_t));
    return st;
}

/*
 * Append the output boundaries of input interval [s, e), placed at output
 * offset `o`, to `b` (NULL: only count): o, each input chunk boundary inside
 * the interval, and o + e - s when `last`.
 */
static uint64_t
select_bounds(const struct sl_grid *in, uint32_t d, uint64_t s, uint64_t e, uint64_t o, bool last,
              uint64_t *b)
{
    uint64_t n = 0;
    if (b != NULL)
        b[n] = o;
    n++;
    uint64_t k_end = sl_grid_chunk_at(in, d, e - 1);
    for (uint64_t k = sl_grid_chunk_at(in, d, s) + 1; k <= k_end; k++, n++)
        if (b != NULL)
            b[n] = o + sl_grid_chunk_start(in, d, k) - s;
    if (last) {
        if (b != NULL)
            b[n] = o + e - s;
        n++;
    }
    return n;
}

/* Build the output grid and the slice pieces of `tmp`. */
static sl_status
select_build(sl_graph *g, const struct sl__node *in, const struct sl_select_desc *desc,
             struct sl__node *tmp, struct sl_error *err)
{
    uint32_t rank = in->grid.rank, ax = desc->n_slices > 1 ? desc->axis : 0;
    const struct sl_region *s0 = &desc->slices[0];
    uint64_t *bounds[SL_MAX_RANK] = {0}, n_chunks[SL_MAX_RANK] = {0};
    sl_status st = SL_OK;
    for (uint32_t d = 0; d < rank && st == SL_OK; d++) {
        size_t n_pieces = d == ax ? desc->n_slices : 1;
        uint64_t count = 0, o = 0;
        for (size_t k = 0; k < n_pieces; k++) {
            const struct sl_region *s = &desc->slices[d == ax ? k : 0];
            count +=
                select_bounds(&in->grid, d, s->start[d], s->stop[d], 0, k + 1 == n_pieces, NULL);
        }
        bounds[d] = sl_alloc_zeroed(&g->alloc, count, sizeof(uint64_t), 0);
        if (bounds[d] == NULL) {
            st = sl_error_set(err, SL_ENOMEM, NULL, "no memory for node \"%s\"", tmp->name);
            break;
        }
        uint64_t at = 0;
        for (size_t k = 0; k < n_pieces; k++) {
            const struct sl_region *s = &desc->slices[d == ax ? k : 0];
            at += select_bounds(&in->grid, d, s->start[d], s->stop[d], o, k + 1 == n_pieces,
                                bounds[d] + at);
            o += s->stop[d] - s->start[d];
        }
        n_chunks[d] = count - 1;
        tmp->u.select.offset[d] = d == ax ? 0 : s0->start[d];
    }
    if (st == SL_OK)
        st = sl_grid_init_bounds(&tmp->grid, &g->alloc, rank, n_chunks,
                                 (const uint64_t *const *)bounds, err);
    for (uint32_t d = 0; d < rank; d++)
        if (bounds[d] != NULL)
            sl_free(&g->alloc, bounds[d], (n_chunks[d] + 1) * sizeof(uint64_t));
    return st;
}

/* Record the slices along the axis as pieces, in output order. */
static sl_status
select_pieces(sl_graph *g, const struct sl_select_desc *desc, struct sl__node *tmp,
              struct sl_error *err)
{
    uint32_t ax = desc->n_slices > 1 ? desc->axis : 0;
    tmp->u.select.axis = ax;
    tmp->u.select.pieces =
        sl_alloc_zeroed(&g->alloc, desc->n_slices, sizeof(struct sl__select_piece), 0);
    if (tmp->u.select.pieces == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for node \"%s\"", tmp->name);
    tmp->u.select.n_pieces = desc->n_slices;
    uint64_t o = 0;
    for (size_t k = 0; k < desc->n_slices; k++) {
        const struct sl_region *s = &desc->slices[k];
        tmp->u.select.pieces[k] = (struct sl__select_piece){
            .out_start = o, .in_start = s->start[ax], .extent = s->stop[ax] - s->start[ax]};
        o += s->stop[ax] - s->start[ax];
    }
    return SL_OK;
}

sl_status
sl_graph_add_select(sl_graph *g, const char *name, uint32_t input,
                    const struct sl_select_desc *desc, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    SL_TRY(sl__graph_check_input(g, name, input, err));
    if (desc == NULL || desc->n_slices == 0 || desc->slices == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": a select needs at least one slice",
                            name);
    const struct sl__node *in = sl__graph_node(g, input);
    if (in->grid.rank == 0)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": cannot select from 0-dimensional \"%s\"", name, in->name);
    SL_TRY(select_check_slices(name, in, desc, err));
    if (desc->n_slices > 1)
        SL_TRY(select_check_concat(g, name, desc, err));
    SL_TRY(sl__graph_reserve(g, err));
    in = sl__graph_node(g, input);
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_SELECT, name, "select");
    tmp.dtype = in->dtype;
    sl_status st = select_pieces(g, desc, &tmp, err);
    if (st == SL_OK)
        st = select_build(g, in, desc, &tmp, err);
    if (st == SL_OK)
        st = sl__node_set_inputs(g, &tmp, 1, &input, err);
    if (st != SL_OK) {
        sl__node_fini(g, &tmp);
        return sl__node_fail(err, name, st);
    }
    sl__graph_commit_node(g, &tmp, id);
    return SL_OK;
}
