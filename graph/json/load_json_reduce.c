/* SPDX-License-Identifier: MIT */
/*
 * Reduce nodes of a graph file: "method", "axes" (a list, or "all"),
 * "keepdims", "dtype", "ddof", "chunks" and "split_every", checked in the
 * document pass; axes against the input's rank when the node is built.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/graph.h>
#include <sluice/reduce.h>

#include "core_internal.h"
#include "load_json_internal.h"

/* "axes": a list of axes, or "all" (the default). */
static void
reduce_parse_axes(sl_graph_json *doc, struct sl__jnode *n)
{
    const json_t *v = json_object_get(n->obj, "axes");
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "axes");
    n->n_axes = 0;
    if (v == NULL || (json_is_string(v) && strcmp(json_string_value(v), "all") == 0))
        return;
    if (!json_is_array(v)) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "expected a list of axes or \"all\", found %s",
                      sl__json_type_name(v));
        return;
    }
    (void)sl__jget_axes(&doc->diag, v, at, n->axes, &n->n_axes);
}

void
sl__jreduce_parse(sl_graph_json *doc, struct sl__jnode *n)
{
    char at[SL__JPTR_MAX];
    struct sl_error err = SL_ERROR_INIT;
    const char *text;
    const json_t *v = json_object_get(n->obj, "method");
    sl__jptr_key(at, n->ptr, "method");
    if (v == NULL)
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "missing \"method\": sum, prod, mean, min, max, std, var, any, all, "
                      "count_nonzero, nansum, nanmean, nanmin or nanmax");
    else if (sl__jget_string(&doc->diag, v, at, &text) &&
             sl_reduce_method_from_name(text, &n->reduce.method, &err) != SL_OK)
        sl__jdiag_add_error(&doc->diag, at, &err);
    reduce_parse_axes(doc, n);
    v = json_object_get(n->obj, "keepdims");
    sl__jptr_key(at, n->ptr, "keepdims");
    if (v != NULL && !json_is_boolean(v))
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "expected true or false, found %s",
                      sl__json_type_name(v));
    n->reduce.keepdims = v != NULL && json_is_true(v);
    n->reduce.dtype = SL_DTYPE_COUNT_;
    v = json_object_get(n->obj, "dtype");
    sl__jptr_key(at, n->ptr, "dtype");
    sl_error_clear(&err);
    if (v != NULL && sl__jget_string(&doc->diag, v, at, &text) &&
        sl_dtype_from_name(text, &n->reduce.dtype, &err) != SL_OK)
        sl__jdiag_add_error(&doc->diag, at, &err);
    v = json_object_get(n->obj, "ddof");
    sl__jptr_key(at, n->ptr, "ddof");
    if (v != NULL && (!json_is_number(v) || json_number_value(v) < 0))
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "expected a number >= 0, found %s",
                      json_is_number(v) ? "a negative number" : sl__json_type_name(v));
    n->reduce.ddof = v != NULL && json_is_number(v) ? json_number_value(v) : 0;
    v = json_object_get(n->obj, "split_every");
    sl__jptr_key(at, n->ptr, "split_every");
    uint64_t every = 0;
    if (v != NULL && sl__jget_uint(&doc->diag, v, at, 2, 1u << 16, &every))
        n->reduce.split_every = (uint32_t)every;
    v = json_object_get(n->obj, "chunks");
    sl__jptr_key(at, n->ptr, "chunks");
    if (v != NULL)
        (void)sl__jget_dims(&doc->diag, v, at, 1, n->chunks, &n->n_chunks);
}

bool
sl__jreduce_build(sl_graph_json *doc, struct sl__jnode *n)
{
    const struct sl_reduce_desc desc = {
        .method = n->reduce.method,
        .n_axes = n->n_axes,
        .axes = n->axes,
        .keepdims = n->reduce.keepdims,
        .out_dtype = n->reduce.dtype,
        .ddof = n->reduce.ddof,
        .chunks = n->n_chunks > 0 ? n->chunks : NULL,
        .split_every = n->reduce.split_every,
    };
    struct sl_node_info in;
    struct sl_error err = SL_ERROR_INIT;
    uint32_t input = doc->nodes[n->input].gid;
    if (sl_graph_node_info(doc->graph, input, &in, &err) != SL_OK)
        return false;
    uint32_t rank = in.grid->rank;
    if (n->reduce.keepdims || n->n_axes == 0)
        rank = n->reduce.keepdims ? in.grid->rank : 0;
    else
        rank = in.grid->rank >= n->n_axes ? in.grid->rank - n->n_axes : 0;
    char at[SL__JPTR_MAX];
    if (n->n_chunks > 0 && n->n_chunks != rank) {
        sl__jptr_key(at, n->ptr, "chunks");
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "expected %" PRIu32 " entries (the result has rank %" PRIu32
                      "), found %" PRIu32,
                      rank, rank, n->n_chunks);
        return false;
    }
    if (sl_graph_add_reduce(doc->graph, n->id, input, &desc, &n->gid, &err) == SL_OK)
        return true;
    const char *field = strstr(err.text, "axis") != NULL ? "axes"
                        : strstr(err.text, "dtype") != NULL || strstr(err.text, "float16") != NULL
                            ? "dtype"
                            : "input";
    if (strcmp(field, "dtype") == 0 && n->reduce.dtype == SL_DTYPE_COUNT_)
        field = "input";
    sl__jptr_key(at, n->ptr, field);
    return sl__jdiag_add_node_error(&doc->diag, n->id, at, &err);
}
