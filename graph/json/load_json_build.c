/* SPDX-License-Identifier: MIT */
/*
 * The build pass of the graph loader: each node of the file becomes a
 * graph node (get, put, select, rechunk, or a built-in op bound to its
 * input's dtype and rank), in an order where its inputs come first.  What
 * needs the input's shape, rank or dtype is checked here, with the node's
 * JSON pointer, before the graph's own checks run.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/graph_node.h>
#include <sluice/op_registry.h>

#include "core_internal.h"
#include "load_json_internal.h"

/* Report a graph error for node `n` at its field `field` ("" for the node). */
static bool
build_fail(sl_graph_json *doc, const struct sl__jnode *n, const char *field,
           const struct sl_error *err)
{
    char at[SL__JPTR_MAX];
    if (field[0] != '\0')
        sl__jptr_key(at, n->ptr, field);
    else
        sl__strlcpy(at, n->ptr, sizeof(at));
    sl__jdiag_add_error(&doc->diag, at, err);
    return false;
}

/* The input's description (built before `n`). */
static void
build_input_info(const sl_graph_json *doc, const struct sl__jnode *n, struct sl_node_info *info)
{
    /* The loader added the input itself, so this cannot fail; should it
     * ever, the input describes as empty rather than as garbage. */
    if (sl_graph_node_info(doc->graph, doc->nodes[n->input].gid, info, NULL) != SL_OK)
        memset(info, 0, sizeof(*info));
}

/* A list of `count` entries where the input has rank `rank`. */
static bool
build_check_rank(sl_graph_json *doc, const struct sl__jnode *n, const char *field, uint32_t count,
                 const struct sl_node_info *in)
{
    if (count == in->grid->rank)
        return true;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, field);
    sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                  "expected %" PRIu32 " entr%s (input \"%s\" has rank %" PRIu32 "), found %" PRIu32,
                  in->grid->rank, in->grid->rank == 1 ? "y" : "ies", in->name, in->grid->rank,
                  count);
    return false;
}

static bool
build_get(sl_graph_json *doc, struct sl__jnode *n, bool on_disk)
{
    if (!sl__jarray_resolve(doc, (size_t)n->array, on_disk))
        return false;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_graph_add_get(doc->graph, n->id, doc->arrays[n->array].array, &n->gid, &err) != SL_OK)
        return build_fail(doc, n, "array", &err);
    return true;
}

static bool
build_put(sl_graph_json *doc, struct sl__jnode *n, bool on_disk)
{
    if (!sl__jarray_resolve(doc, (size_t)n->array, on_disk))
        return false;
    const struct sl__jarray *a = &doc->arrays[n->array];
    struct sl_node_info in;
    build_input_info(doc, n, &in);
    struct sl_error err = SL_ERROR_INIT;
    uint32_t rank = sl_array_rank(a->array);
    bool same = rank == in.grid->rank;
    for (uint32_t d = 0; same && d < rank; d++)
        same = sl_array_shape(a->array)[d] == in.grid->shape[d];
    if (in.dtype != sl_array_dtype(a->array) || !same) {
        char have[96], want[96];
        sl_shape_format(in.grid->rank, in.grid->shape, have, sizeof(have));
        sl_shape_format(rank, sl_array_shape(a->array), want, sizeof(want));
        sl_error_set(&err, SL_EINVAL, NULL, "input \"%s\" is %s %s but array \"%s\" is %s %s%s",
                     in.name, sl_dtype_name(in.dtype), have, a->name,
                     sl_dtype_name(sl_array_dtype(a->array)), want,
                     in.dtype != sl_array_dtype(a->array) ? "; add a cast op" : "");
        return build_fail(doc, n, "array", &err);
    }
    if (sl_graph_add_put(doc->graph, n->id, doc->nodes[n->input].gid, a->array, &n->gid, &err) !=
        SL_OK)
        return build_fail(doc, n, "", &err);
    return true;
}

/* Slice `s` of a select as a region of the input `in`; false after
 * reporting at `ptr`. */
static bool
build_slice(sl_graph_json *doc, const struct sl__jslice *s, const char *ptr,
            const struct sl_node_info *in, struct sl_region *out)
{
    if (s->rank != in->grid->rank) {
        sl__jdiag_add(
            &doc->diag, SL_EINVAL, ptr,
            "expected %" PRIu32 " dimension%s (input \"%s\" has rank %" PRIu32 "), found %" PRIu32,
            in->grid->rank, SL__PLURAL(in->grid->rank), in->name, in->grid->rank, s->rank);
        return false;
    }
    out->rank = s->rank;
    for (uint32_t d = 0; d < s->rank; d++) {
        uint64_t extent = in->grid->shape[d];
        out->start[d] = s->whole[d] ? 0 : s->start[d];
        out->stop[d] = s->whole[d] || s->stop[d] == UINT64_MAX ? extent : s->stop[d];
        if (out->stop[d] <= extent && out->start[d] < out->stop[d])
            continue;
        char at[SL__JPTR_MAX];
        sl__jptr_index(at, ptr, d);
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "[%" PRIu64 ", %" PRIu64 ") is %s dimension %" PRIu32 " of input \"%s\" "
                      "(extent %" PRIu64 ")",
                      out->start[d], out->stop[d],
                      out->start[d] >= out->stop[d] ? "empty in" : "outside", d, in->name, extent);
        return false;
    }
    return true;
}

static bool
build_select(sl_graph_json *doc, struct sl__jnode *n)
{
    struct sl_node_info in;
    build_input_info(doc, n, &in);
    struct sl_region *regions = sl_alloc_zeroed(&doc->alloc, n->n_slices, sizeof(*regions), 0);
    const char *field = n->concat ? "regions" : "region";
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, field);
    if (regions == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, at, "no memory for %zu regions", n->n_slices);
        return false;
    }
    bool ok = true;
    for (size_t k = 0; k < n->n_slices; k++) {
        char item[SL__JPTR_MAX];
        sl__jptr_index(item, at, k);
        ok = build_slice(doc, &n->slices[k], n->concat ? item : at, &in, &regions[k]) && ok;
    }
    if (ok && n->concat && n->axis >= in.grid->rank) {
        sl__jptr_key(at, n->ptr, "axis");
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "axis %" PRIu32 " is not a dimension of input \"%s\" (rank %" PRIu32 ")",
                      n->axis, in.name, in.grid->rank);
        ok = false;
    }
    struct sl_error err = SL_ERROR_INIT;
    const struct sl_select_desc desc = {
        .n_slices = n->n_slices, .slices = regions, .axis = n->axis};
    if (ok && sl_graph_add_select(doc->graph, n->id, doc->nodes[n->input].gid, &desc, &n->gid,
                                  &err) != SL_OK)
        ok = build_fail(doc, n, field, &err);
    sl_free(&doc->alloc, regions, n->n_slices * sizeof(*regions));
    return ok;
}

static bool
build_rechunk(sl_graph_json *doc, struct sl__jnode *n)
{
    struct sl_node_info in;
    build_input_info(doc, n, &in);
    if (!build_check_rank(doc, n, "chunks", n->n_chunks, &in))
        return false;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_graph_add_rechunk(doc->graph, n->id, doc->nodes[n->input].gid, n->chunks, &n->gid,
                             &err) != SL_OK)
        return build_fail(doc, n, "chunks", &err);
    return true;
}

static bool
build_op(sl_graph_json *doc, struct sl__jnode *n)
{
    struct sl_node_info in;
    build_input_info(doc, n, &in);
    bool ok = true;
    for (uint32_t i = 0; i < n->op->n_params; i++) {
        const struct sl_op_value *v = &n->args.value[i];
        const sl_op_param_type t = n->op->params[i].type;
        if (!v->set || (t != SL_OP_PARAM_FACTORS && t != SL_OP_PARAM_NUMBERS))
            continue;
        /* Filters take one entry for every axis. */
        const uint32_t count = t == SL_OP_PARAM_FACTORS ? v->n_factors : v->n_numbers;
        if (count != 1 || n->op->kind != SL_OP_KIND_HALO)
            ok = build_check_rank(doc, n, n->op->params[i].name, count, &in) && ok;
    }
    if (n->n_chunks > 0)
        ok = build_check_rank(doc, n, "chunks", n->n_chunks, &in) && ok;
    if (!ok)
        return false;
    struct sl_op op;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_op_bind(&op, n->op, &n->args, in.dtype, in.grid->rank, &err) != SL_OK)
        return build_fail(doc, n, "", &err);
    if (sl_graph_add_op(doc->graph, n->id, doc->nodes[n->input].gid, &op,
                        n->n_chunks > 0 ? n->chunks : NULL, &n->gid, &err) != SL_OK)
        return build_fail(doc, n, n->n_chunks > 0 ? "chunks" : "", &err);
    return true;
}

bool
sl__jnode_build(sl_graph_json *doc, size_t i, bool on_disk)
{
    struct sl__jnode *n = &doc->nodes[i];
    if (n->mark == 2)
        return !n->bad;
    n->mark = 2;
    bool sourced = n->kind == SL__JNODE_GET || n->kind == SL__JNODE_COPY;
    bool many = n->inputs.n > 0 || n->kind == SL__JNODE_EXPR;
    bool inputs_built = true;
    for (size_t k = 0; k < n->inputs.n; k++)
        inputs_built = inputs_built && sl__jnode_built(doc, n->inputs.node[k]);
    if (n->bad || (!sourced && !many && !sl__jnode_built(doc, n->input)) ||
        (many && (!inputs_built || n->inputs.n == 0))) {
        n->bad = true;
        return false;
    }
    bool ok = false;
    switch (n->kind) {
    case SL__JNODE_GET:
        ok = build_get(doc, n, on_disk);
        break;
    case SL__JNODE_PUT:
        ok = build_put(doc, n, on_disk);
        break;
    case SL__JNODE_SELECT:
        ok = build_select(doc, n);
        break;
    case SL__JNODE_RECHUNK:
        ok = build_rechunk(doc, n);
        break;
    case SL__JNODE_OP:
        ok = build_op(doc, n);
        break;
    case SL__JNODE_PYRAMID:
        ok = sl__jpyramid_build(doc, n, on_disk);
        break;
    case SL__JNODE_COPY:
        ok = sl__jcopy_build(doc, n, on_disk);
        break;
    case SL__JNODE_EXPR:
        ok = sl__jexpr_build(doc, n);
        break;
    case SL__JNODE_VIEW:
        ok = sl__jview_build(doc, n);
        break;
    case SL__JNODE_REDUCE:
        ok = sl__jreduce_build(doc, n);
        break;
    case SL__JNODE_STATS:
        ok = sl__jstats_build(doc, n);
        break;
    case SL__JNODE_MAP:
        ok = sl__jmap_build(doc, n);
        break;
    }
    n->bad = !ok;
    return ok;
}
