/* SPDX-License-Identifier: MIT */
/*
 * Layout nodes of a graph file: squeeze, expand_dims and transpose ("input"
 * and "axes"), stack and concat ("inputs", a list of node ids in order, and
 * "axis").  The fields are checked in the document pass; ranks and extents
 * when the node is built, by the graph, with the node's pointer.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/graph.h>

#include "core_internal.h"
#include "load_json_internal.h"

void
sl__jinputs_parse_list(sl_graph_json *doc, struct sl__jnode *n)
{
    const json_t *v = json_object_get(n->obj, "inputs");
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "inputs");
    if (v == NULL || !json_is_array(v) || json_array_size(v) == 0 ||
        json_array_size(v) > SL__JNODE_INPUTS_MAX) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "%s \"inputs\": a list of 1 to %d node ids, in order%s%s",
                      v == NULL ? "missing" : "expected", SL__JNODE_INPUTS_MAX,
                      v == NULL ? "" : ", found ", v == NULL ? "" : sl__json_type_name(v));
        return;
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        char item[SL__JPTR_MAX];
        sl__jptr_index(item, at, i);
        size_t k = n->inputs.n;
        if (!sl__jget_string(&doc->diag, json_array_get(v, i), item, &n->inputs.id[k]))
            continue;
        n->inputs.name[k] = NULL;
        n->inputs.node[k] = -1;
        n->inputs.n++;
    }
}

void
sl__jview_parse(sl_graph_json *doc, struct sl__jnode *n)
{
    char at[SL__JPTR_MAX];
    const char *op = n->view_op;
    bool joins = strcmp(op, "stack") == 0 || strcmp(op, "concat") == 0;
    if (joins) {
        sl__jinputs_parse_list(doc, n);
        const json_t *v = json_object_get(n->obj, "axis");
        sl__jptr_key(at, n->ptr, "axis");
        uint64_t axis = 0;
        if (v == NULL)
            sl__jdiag_add(&doc->diag, SL_EINVAL, at, "missing \"axis\": where the inputs join");
        else if (sl__jget_uint(&doc->diag, v, at, 0, SL_MAX_RANK - 1, &axis))
            n->axis = (uint32_t)axis;
        return;
    }
    const json_t *v = json_object_get(n->obj, "axes");
    sl__jptr_key(at, n->ptr, "axes");
    bool required = strcmp(op, "squeeze") != 0;
    if (v == NULL) {
        if (required)
            sl__jdiag_add(&doc->diag, SL_EINVAL, at, "missing \"axes\": %s",
                          strcmp(op, "transpose") == 0
                              ? "the input axis of each output axis, e.g. [1, 0, 2]"
                              : "the positions of the new axes in the output, e.g. [0]");
        return;
    }
    (void)sl__jget_axes(&doc->diag, v, at, n->axes, &n->n_axes);
}

bool
sl__jview_build(sl_graph_json *doc, struct sl__jnode *n)
{
    struct sl_error err = SL_ERROR_INIT;
    const char *op = n->view_op;
    sl_status st;
    uint32_t ids[SL__JNODE_INPUTS_MAX];
    for (size_t i = 0; i < n->inputs.n; i++)
        ids[i] = doc->nodes[n->inputs.node[i]].gid;
    uint32_t in = n->input >= 0 ? doc->nodes[n->input].gid : 0;
    if (strcmp(op, "squeeze") == 0) {
        st = sl_graph_add_squeeze(doc->graph, n->id, in, n->n_axes, n->axes, &n->gid, &err);
    } else if (strcmp(op, "expand_dims") == 0) {
        st = sl_graph_add_expand_dims(doc->graph, n->id, in, n->n_axes, n->axes, &n->gid, &err);
    } else if (strcmp(op, "transpose") == 0) {
        struct sl_node_info info;
        st = sl_graph_node_info(doc->graph, in, &info, &err);
        if (st == SL_OK && info.grid->rank != n->n_axes)
            st = sl_error_set(&err, SL_EINVAL, NULL,
                              "expected %" PRIu32 " axes (input \"%s\" has rank %" PRIu32
                              "), found %" PRIu32,
                              info.grid->rank, info.name, info.grid->rank, n->n_axes);
        if (st == SL_OK)
            st = sl_graph_add_transpose(doc->graph, n->id, in, n->axes, &n->gid, &err);
    } else if (strcmp(op, "stack") == 0) {
        st = sl_graph_add_stack(doc->graph, n->id, n->inputs.n, ids, n->axis, &n->gid, &err);
    } else {
        st = sl_graph_add_concat(doc->graph, n->id, n->inputs.n, ids, n->axis, &n->gid, &err);
    }
    if (st == SL_OK)
        return true;
    char at[SL__JPTR_MAX];
    bool joins = n->inputs.n > 0;
    bool about_axes = (strstr(err.text, "axis") != NULL || strstr(err.text, "axes") != NULL) &&
                      strstr(err.text, "same shape") == NULL;
    if (about_axes)
        sl__jptr_key(at, n->ptr, joins ? "axis" : "axes");
    else
        sl__jptr_key(at, n->ptr, joins ? "inputs" : "input");
    return sl__jdiag_add_node_error(&doc->diag, n->id, at, &err);
}
