/* SPDX-License-Identifier: MIT */
/*
 * Nodes backed by ops/ kernels: elementwise ops become maps over the
 * input's chunk grid, downsampling becomes a regrid whose mapping is the
 * op's factors, neighbourhood filters a regrid of scale 1 whose halos are
 * the op's margins.  The executor applies the bound op with per-worker scratch.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/graph_node.h>
#include <sluice/op_registry.h>

#include "core_internal.h"
#include "graph_internal.h"

/* Maps and regrids with a built-in op never call their user function. */
static sl_status
op_map_unused(void *ctx, struct sl_block *out, size_t n_inputs, const struct sl_block *inputs,
              struct sl_error *err)
{
    (void)ctx;
    (void)out;
    (void)n_inputs;
    (void)inputs;
    return sl_error_set(err, SL_ESTATE, NULL, "built-in op node called as a user map");
}

static sl_status
op_regrid_unused(void *ctx, struct sl_block *out, const struct sl_block *in, struct sl_error *err)
{
    (void)ctx;
    (void)out;
    (void)in;
    return sl_error_set(err, SL_ESTATE, NULL, "built-in op node called as a user regrid");
}

/* True when every input chunk boundary is a multiple of the op's factor, so
 * each input chunk downsamples on its own into part of an output chunk. */
static bool
op_input_aligned(const struct sl_grid *in, const struct sl_op *op)
{
    for (uint32_t d = 0; d < in->rank; d++) {
        uint64_t f = op->u.downsample.factor[d];
        for (uint64_t k = 1; k < in->n_chunks[d]; k++) {
            if (sl_grid_chunk_start(in, d, k) % f != 0)
                return false;
            if (in->bounds[d] == NULL)
                break; /* regular: the first boundary decides */
        }
    }
    return true;
}

/* Mark the node just added as running `op`. */
static void
graph_attach_op(sl_graph *g, uint32_t id, const struct sl_op *op)
{
    struct sl__node *n = sl__graph_node(g, id);
    n->has_op = true;
    n->op = *op;
    if (op->desc->kind == SL_OP_KIND_REGRID)
        n->op_piecewise = op_input_aligned(&sl__graph_node(g, n->inputs[0])->grid, op);
    if (op->desc->kind == SL_OP_KIND_HALO)
        for (uint32_t d = 0; d < n->grid.rank; d++)
            n->map[d].wrap = op->boundary == SL_BOUNDARY_WRAP;
}

sl_status
sl_graph_add_op(sl_graph *g, const char *name, uint32_t input, const struct sl_op *op,
                const uint64_t *chunk_shape, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    SL_TRY(sl__graph_check_input(g, name, input, err));
    const struct sl__node *in = sl__graph_node(g, input);
    if (op == NULL || op->desc == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": the op is not bound", name);
    if (op->in_dtype != in->dtype || op->rank != in->grid.rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": op %s was bound for %s rank %" PRIu32
                            ", but input \"%s\" is %s rank %" PRIu32,
                            name, op->desc->name, sl_dtype_name(op->in_dtype), op->rank, in->name,
                            sl_dtype_name(in->dtype), in->grid.rank);
    uint32_t new_id;
    if (op->desc->kind == SL_OP_KIND_MAP) {
        if (chunk_shape != NULL)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": elementwise op %s keeps its input's chunks; "
                                "rechunk separately",
                                name, op->desc->name);
        const struct sl_map_desc md = {
            .op_name = op->desc->name, .fn = op_map_unused, .out_dtype = op->out_dtype};
        SL_TRY(sl_graph_add_map(g, name, 1, &input, &md, &new_id, err));
    } else {
        if (chunk_shape == NULL && !sl_grid_is_regular(&in->grid))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\": input \"%s\" has irregular chunks; give the output "
                                "chunk shape",
                                name, in->name);
        const bool halo = op->desc->kind == SL_OP_KIND_HALO;
        /* A copy: adding the node may move the node array `in` points into. */
        uint64_t in_chunk[SL_MAX_RANK];
        memcpy(in_chunk, in->grid.chunk, sizeof in_chunk);
        const struct sl_regrid_desc rd = {
            .op_name = op->desc->name,
            .fn = op_regrid_unused,
            .out_dtype = op->out_dtype,
            .chunk_shape = chunk_shape != NULL ? chunk_shape : in_chunk,
            .scale_num = halo ? NULL : op->u.downsample.factor,
            .halo_lo = halo ? op->halo_lo : NULL,
            .halo_hi = halo ? op->halo_hi : NULL,
        };
        SL_TRY(sl_graph_add_regrid(g, name, input, &rd, &new_id, err));
    }
    graph_attach_op(g, new_id, op);
    if (id != NULL)
        *id = new_id;
    return SL_OK;
}
