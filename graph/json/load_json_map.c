/* SPDX-License-Identifier: MIT */
/*
 * Map nodes of a graph file: {"op": "map", "fn": NAME, "inputs": [ids],
 * "dtype": ...}, a function the program loading the file supplies
 * (sl_graph_json_opts.maps), called per output block with the blocks of
 * its inputs.  A file cannot bring code of its own this way: a name the
 * loader was not given is an error naming those it was.
 */
#include <string.h>

#include <sluice/graph.h>

#include "core_internal.h"
#include "load_json_internal.h"

/* The names of the functions the loader was given, for an error. */
static void
map_names(const sl_graph_json *doc, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < doc->opts.n_maps; i++)
        sl__strbuf_append(buf, size, &len, "%s\"%s\"", i > 0 ? ", " : "", doc->opts.maps[i].name);
    if (doc->opts.n_maps == 0)
        sl__strbuf_append(buf, size, &len, "none");
}

void
sl__jmap_parse(sl_graph_json *doc, struct sl__jnode *n)
{
    char at[SL__JPTR_MAX];
    sl__jinputs_parse_list(doc, n);
    n->map_dtype = SL_DTYPE_COUNT_;
    const json_t *v = json_object_get(n->obj, "dtype");
    sl__jptr_key(at, n->ptr, "dtype");
    struct sl_error err = SL_ERROR_INIT;
    const char *name = NULL;
    if (v != NULL && sl__jget_string(&doc->diag, v, at, &name) &&
        sl_dtype_from_name(name, &n->map_dtype, &err) != SL_OK) {
        sl__jdiag_add_error(&doc->diag, at, &err);
        n->map_dtype = SL_DTYPE_COUNT_;
    }
    v = json_object_get(n->obj, "fn");
    sl__jptr_key(at, n->ptr, "fn");
    if (v == NULL) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "missing \"fn\": the name of a function the program running the file "
                      "supplies");
        return;
    }
    if (!sl__jget_string(&doc->diag, v, at, &name))
        return;
    for (size_t i = 0; i < doc->opts.n_maps; i++) {
        if (doc->opts.maps[i].name != NULL && strcmp(doc->opts.maps[i].name, name) == 0) {
            n->map = &doc->opts.maps[i];
            return;
        }
    }
    char known[256];
    map_names(doc, known, sizeof(known));
    sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                  "no function \"%s\": map nodes call functions the program running the file "
                  "supplies (sluice.Graph.map in Python); this one supplies %s",
                  name, known);
}

bool
sl__jmap_build(sl_graph_json *doc, struct sl__jnode *n)
{
    struct sl_error err = SL_ERROR_INIT;
    uint32_t ids[SL__JNODE_INPUTS_MAX];
    for (size_t i = 0; i < n->inputs.n; i++)
        ids[i] = doc->nodes[n->inputs.node[i]].gid;
    sl_dtype out = n->map_dtype;
    if (out == SL_DTYPE_COUNT_) {
        struct sl_node_info first;
        if (sl_graph_node_info(doc->graph, ids[0], &first, &err) != SL_OK)
            return sl__jdiag_add_node_error(&doc->diag, n->id, n->ptr, &err);
        out = first.dtype;
    }
    struct sl_map_desc desc = {
        .op_name = n->map->name,
        .fn = n->map->fn,
        .ctx = n->map->ctx,
        .out_dtype = out,
    };
    if (sl_graph_add_map(doc->graph, n->id, n->inputs.n, ids, &desc, &n->gid, &err) == SL_OK)
        return true;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "inputs");
    return sl__jdiag_add_node_error(&doc->diag, n->id, at, &err);
}
