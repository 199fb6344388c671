/* SPDX-License-Identifier: MIT */
/*
 * Expr nodes of a graph file: "inputs" (the names the expression uses, each
 * the id of a node), "expr", "dtype", "compute" and "chunks", checked in the
 * document pass; the expression itself is compiled when the node is built,
 * against its inputs' dtypes, and its errors point into the string:
 * `/nodes/ff/expr: column 8: unknown name "drak" (inputs: raw, dark, flat)`.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/expr.h>
#include <sluice/graph_node.h>

#include "core_internal.h"
#include "load_json_internal.h"

/* "inputs": an object of 1 to 8 names, each a node id. */
static void
expr_parse_inputs(sl_graph_json *doc, struct sl__jnode *n)
{
    const json_t *v = json_object_get(n->obj, "inputs");
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "inputs");
    if (v == NULL) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "missing \"inputs\": the names the expression uses, each the id of a "
                      "node, e.g. {\"raw\": \"r\", \"dark\": \"d\"}");
        return;
    }
    if (!json_is_object(v) || json_object_size(v) == 0 ||
        json_object_size(v) > SL__JNODE_INPUTS_MAX) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "expected an object of 1 to %d names, each the id of a node, found %s",
                      SL__JNODE_INPUTS_MAX,
                      json_is_object(v) ? "an object of another size" : sl__json_type_name(v));
        return;
    }
    const char *key;
    const json_t *id;
    json_object_foreach((json_t *)v, key, id)
    {
        char item[SL__JPTR_MAX];
        sl__jptr_key(item, at, key);
        size_t k = n->inputs.n;
        if (!sl__jget_string(&doc->diag, id, item, &n->inputs.id[k]))
            continue;
        n->inputs.name[k] = key;
        n->inputs.node[k] = -1;
        n->inputs.n++;
    }
}

/* "compute": the working type, float64 or float32. */
static void
expr_parse_compute(sl_graph_json *doc, struct sl__jnode *n)
{
    const json_t *v = json_object_get(n->obj, "compute");
    n->expr.compute = SL_DTYPE_F64;
    if (v == NULL)
        return;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "compute");
    const char *text;
    if (!sl__jget_string(&doc->diag, v, at, &text))
        return;
    if (strcmp(text, "float64") == 0 || strcmp(text, "float32") == 0) {
        n->expr.compute = text[5] == '6' ? SL_DTYPE_F64 : SL_DTYPE_F32;
        return;
    }
    sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                  "the working type is \"float64\" (the default) or \"float32\", found \"%s\"",
                  text);
}

void
sl__jexpr_parse(sl_graph_json *doc, struct sl__jnode *n)
{
    expr_parse_inputs(doc, n);
    const json_t *v = json_object_get(n->obj, "expr");
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "expr");
    if (v == NULL)
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "missing \"expr\": the expression, e.g. \"(raw - dark) / max(flat, 1)\"");
    else if (sl__jget_string(&doc->diag, v, at, &n->expr.text) &&
             strlen(n->expr.text) > SL_EXPR_TEXT_MAX)
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "the expression has %zu characters, at most %d",
                      strlen(n->expr.text), SL_EXPR_TEXT_MAX);
    expr_parse_compute(doc, n);
    n->expr.dtype = n->expr.compute;
    v = json_object_get(n->obj, "dtype");
    sl__jptr_key(at, n->ptr, "dtype");
    const char *name;
    struct sl_error err = SL_ERROR_INIT;
    if (v != NULL && sl__jget_string(&doc->diag, v, at, &name) &&
        sl_dtype_from_name(name, &n->expr.dtype, &err) != SL_OK)
        sl__jdiag_add_error(&doc->diag, at, &err);
    v = json_object_get(n->obj, "chunks");
    sl__jptr_key(at, n->ptr, "chunks");
    if (v != NULL)
        (void)sl__jget_dims(&doc->diag, v, at, 1, n->chunks, &n->n_chunks);
}

/* Report a graph error of expr `n`: an expression's error at "expr" with
 * the node's own prefix dropped (the pointer names the node). */
static bool
expr_build_fail(sl_graph_json *doc, const struct sl__jnode *n, struct sl_error *err)
{
    /* The field at fault: the expression, the output dtype, the chunk
     * shape (the grid's refusals name a chunk extent), else the inputs
     * (broadcasting, names, dtypes, an unused one). */
    const char *field = "inputs";
    if (err->code == SL_EPARSE)
        field = "expr";
    else if (strstr(err->text, "cannot produce") != NULL)
        field = "dtype";
    else if (n->n_chunks > 0 && strstr(err->text, "chunk") != NULL)
        field = "chunks";
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, field);
    return sl__jdiag_add_node_error(&doc->diag, n->id, at, err);
}

bool
sl__jexpr_build(sl_graph_json *doc, struct sl__jnode *n)
{
    uint32_t ids[SL__JNODE_INPUTS_MAX], rank = 0;
    for (size_t i = 0; i < n->inputs.n; i++) {
        ids[i] = doc->nodes[n->inputs.node[i]].gid;
        struct sl_node_info info;
        if (sl_graph_node_info(doc->graph, ids[i], &info, NULL) == SL_OK)
            rank = info.grid->rank > rank ? info.grid->rank : rank;
    }
    if (n->n_chunks > 0 && n->n_chunks != rank) {
        char at[SL__JPTR_MAX];
        sl__jptr_key(at, n->ptr, "chunks");
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "expected %" PRIu32 " entries (the broadcast output has rank %" PRIu32
                      "), found %" PRIu32,
                      rank, rank, n->n_chunks);
        return false;
    }
    const struct sl_expr_desc desc = {
        .text = n->expr.text,
        .names = n->inputs.name,
        .out_dtype = n->expr.dtype,
        .compute = n->expr.compute,
        .chunks = n->n_chunks > 0 ? n->chunks : NULL,
    };
    struct sl_error err = SL_ERROR_INIT;
    if (sl_graph_add_expr(doc->graph, n->id, n->inputs.n, ids, &desc, &n->gid, &err) != SL_OK)
        return expr_build_fail(doc, n, &err);
    return true;
}

bool
sl__jnode_reads(const struct sl__jnode *n, int k)
{
    if (k < 0)
        return false;
    if (n->input == k)
        return true;
    for (size_t i = 0; i < n->inputs.n; i++)
        if (n->inputs.node[i] == k)
            return true;
    return false;
}
