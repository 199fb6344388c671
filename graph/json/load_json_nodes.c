/* SPDX-License-Identifier: MIT */
/*
 * The "nodes" of a graph file: ids (object keys, or "id" fields in a
 * list), the node kinds and the fields of each (get, put, select, rechunk,
 * the built-in ops with their parameters, pyramid), each checked for type
 * and value with a JSON pointer to what is wrong.  References, cycles and
 * building come after (load_json_links.c, load_json_build.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sluice/op_registry.h>

#include "core_internal.h"
#include "load_json_internal.h"

/* The fields each kind of node takes (built-in ops add their parameters). */
static const char *const get_keys[] = {"op", "id", "array", "comment", NULL};
static const char *const put_keys[] = {"op", "id", "input", "array", "comment", NULL};
static const char *const select_keys[] = {"op",      "id",   "input",   "region",
                                          "regions", "axis", "comment", NULL};
static const char *const rechunk_keys[] = {"op", "id", "input", "chunks", "comment", NULL};
static const char *const map_keys[] = {"op", "id", "input", "comment", NULL};
static const char *const regrid_keys[] = {"op", "id", "input", "chunks", "comment", NULL};
static const char *const pyramid_keys[] = {
    "op",   "id",    "input",       "group",     "levels", "factors", "method",  "create", "name",
    "axes", "scale", "translation", "overwrite", "omero",  "smooth",  "comment", NULL};

static const char *const expr_keys[] = {"op",      "id",     "inputs",  "expr", "dtype",
                                        "compute", "chunks", "comment", NULL};

static const char *const axes_keys[] = {"op", "id", "input", "axes", "comment", NULL};
static const char *const reduce_keys[] = {"op",     "id",          "input",   "method",
                                          "axes",   "keepdims",    "dtype",   "ddof",
                                          "chunks", "split_every", "comment", NULL};
static const char *const stats_keys[] = {"op",        "id",          "input",   "per",
                                         "histogram", "percentiles", "comment", NULL};
static const char *const join_keys[] = {"op", "id", "inputs", "axis", "comment", NULL};
static const char *const map_fn_keys[] = {"op", "id", "inputs", "fn", "dtype", "comment", NULL};

static const char *const copy_keys[] = {"op",      "id",        "source",  "group", "create",
                                        "members", "overwrite", "comment", NULL};

/* Node kinds besides the registry's ops, by the name "op" gives them. */
static const struct {
    const char *name;
    sl__jnode_kind kind;
    const char *const *keys;
} node_kinds[] = {
    {"get", SL__JNODE_GET, get_keys},
    {"put", SL__JNODE_PUT, put_keys},
    {"select", SL__JNODE_SELECT, select_keys},
    {"rechunk", SL__JNODE_RECHUNK, rechunk_keys},
    {"pyramid", SL__JNODE_PYRAMID, pyramid_keys},
    {"copy", SL__JNODE_COPY, copy_keys},
    {"expr", SL__JNODE_EXPR, expr_keys},
    {"reduce", SL__JNODE_REDUCE, reduce_keys},
    {"stats", SL__JNODE_STATS, stats_keys},
    {"squeeze", SL__JNODE_VIEW, axes_keys},
    {"expand_dims", SL__JNODE_VIEW, axes_keys},
    {"transpose", SL__JNODE_VIEW, axes_keys},
    {"stack", SL__JNODE_VIEW, join_keys},
    {"concat", SL__JNODE_VIEW, join_keys},
    {"map", SL__JNODE_MAP, map_fn_keys},
};

/* A required field of node `n`, or NULL after reporting it missing. */
static const json_t *
node_require(sl_graph_json *doc, const struct sl__jnode *n, const char *key, const char *what)
{
    const json_t *v = json_object_get(n->obj, key);
    if (v == NULL) {
        char at[SL__JPTR_MAX];
        sl__jptr_key(at, n->ptr, key);
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "missing \"%s\": %s", key, what);
    }
    return v;
}

/* A string field: required, or optional when `what` is NULL. */
static void
node_string(sl_graph_json *doc, const struct sl__jnode *n, const char *key, const char *what,
            const char **out)
{
    const json_t *v = what != NULL ? node_require(doc, n, key, what) : json_object_get(n->obj, key);
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, key);
    if (v != NULL)
        (void)sl__jget_string(&doc->diag, v, at, out);
}

/* Set `n`'s kind from "op"; false after reporting. */
static bool
node_parse_kind(sl_graph_json *doc, struct sl__jnode *n, const char *const **keys)
{
    const char *name = NULL;
    node_string(doc, n, "op", "what the node does (get, select, downsample, put, ...)", &name);
    if (name == NULL)
        return false;
    for (size_t i = 0; i < SL_ARRAY_LEN(node_kinds); i++) {
        if (strcmp(name, node_kinds[i].name) == 0) {
            n->kind = node_kinds[i].kind;
            n->view_op = node_kinds[i].name;
            *keys = node_kinds[i].keys;
            return true;
        }
    }
    n->op = NULL;
    if (sl_op_lookup(name, &n->op, NULL) == SL_OK) {
        n->kind = SL__JNODE_OP;
        *keys = n->op->kind == SL_OP_KIND_MAP ? map_keys : regrid_keys;
        return true;
    }
    char known[400], ops[256];
    sl_op_names(ops, sizeof(ops));
    size_t len = 0;
    known[0] = '\0';
    for (size_t i = 0; i < SL_ARRAY_LEN(node_kinds); i++)
        sl__strbuf_append(known, sizeof(known), &len, "%s, ", node_kinds[i].name);
    sl__strbuf_append(known, sizeof(known), &len, "%s", ops);
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "op");
    sl__jdiag_add(&doc->diag, SL_EINVAL, at, "unknown op \"%s\"; known: %s", name, known);
    return false;
}

/* One dimension of a slice: null, or [start, stop] with stop null for the end. */
static bool
slice_parse_dim(sl_graph_json *doc, const json_t *v, const char *ptr, struct sl__jslice *s,
                uint32_t d)
{
    s->whole[d] = json_is_null(v);
    if (s->whole[d])
        return true;
    const json_t *a = json_array_get(v, 0), *b = json_array_get(v, 1);
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_integer(a) ||
        json_integer_value(a) < 0 || (!json_is_integer(b) && !json_is_null(b)) ||
        (json_is_integer(b) && json_integer_value(b) < json_integer_value(a))) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, ptr,
                      "expected null (the whole dimension) or [start, stop] with 0 <= start <= "
                      "stop (stop null: to the end), found %s",
                      json_is_array(v) ? "another list" : sl__json_type_name(v));
        return false;
    }
    s->start[d] = (uint64_t)json_integer_value(a);
    s->stop[d] = json_is_null(b) ? UINT64_MAX : (uint64_t)json_integer_value(b);
    return true;
}

static bool
slice_parse(sl_graph_json *doc, const json_t *v, const char *ptr, struct sl__jslice *s)
{
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > SL_MAX_RANK) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, ptr,
                      "expected a list with one entry per dimension (null or [start, stop]), "
                      "found %s",
                      json_is_array(v) ? "an empty or too long list" : sl__json_type_name(v));
        return false;
    }
    bool ok = true;
    s->rank = (uint32_t)json_array_size(v);
    for (uint32_t d = 0; d < s->rank; d++) {
        char at[SL__JPTR_MAX];
        sl__jptr_index(at, ptr, d);
        ok = slice_parse_dim(doc, json_array_get(v, d), at, s, d) && ok;
    }
    return ok;
}

/* "region" (one slice) or "regions" and "axis" (slices concatenated). */
static void
node_parse_select(sl_graph_json *doc, struct sl__jnode *n)
{
    const json_t *one = json_object_get(n->obj, "region");
    const json_t *many = json_object_get(n->obj, "regions");
    const json_t *axis = json_object_get(n->obj, "axis");
    char at[SL__JPTR_MAX];
    if ((one == NULL) == (many == NULL)) {
        sl__jptr_key(at, n->ptr, one == NULL ? "region" : "regions");
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "a select takes exactly one of \"region\" (a slice) and \"regions\" (slices "
                      "concatenated along \"axis\")");
        return;
    }
    if (one != NULL && axis != NULL) {
        sl__jptr_key(at, n->ptr, "axis");
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "\"axis\" goes with \"regions\", not \"region\"");
    }
    uint64_t ax = 0;
    sl__jptr_key(at, n->ptr, "axis");
    if (axis != NULL && sl__jget_uint(&doc->diag, axis, at, 0, SL_MAX_RANK - 1, &ax))
        n->axis = (uint32_t)ax;
    n->concat = many != NULL;
    const json_t *list = many;
    sl__jptr_key(at, n->ptr, many != NULL ? "regions" : "region");
    if (many != NULL && (!json_is_array(many) || json_array_size(many) == 0)) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "expected a non-empty list of regions, found %s",
                      sl__json_type_name(many));
        return;
    }
    n->n_slices = many != NULL ? json_array_size(many) : 1;
    n->slices = sl_alloc_zeroed(&doc->alloc, n->n_slices, sizeof(struct sl__jslice), 0);
    if (n->slices == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, at, "no memory for %zu regions", n->n_slices);
        n->n_slices = 0;
        return;
    }
    for (size_t k = 0; k < n->n_slices; k++) {
        char item[SL__JPTR_MAX];
        sl__jptr_index(item, at, k);
        (void)slice_parse(doc, list != NULL ? json_array_get(list, k) : one,
                          list != NULL ? item : at, &n->slices[k]);
    }
}

/* A number, or a non-empty list of at most SL_MAX_RANK numbers. */
static bool
param_numbers(sl_graph_json *doc, const json_t *v, const char *at, double *out, uint32_t *n)
{
    if (json_is_number(v)) {
        out[0] = json_number_value(v);
        *n = 1;
        return true;
    }
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > SL_MAX_RANK) {
        if (json_is_array(v))
            sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                          "expected a number or a list of 1 to %d numbers, found a list of %zu",
                          SL_MAX_RANK, json_array_size(v));
        else
            sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                          "expected a number or a list of 1 to %d numbers, found %s", SL_MAX_RANK,
                          sl__json_type_name(v));
        return false;
    }
    for (size_t k = 0; k < json_array_size(v); k++) {
        const json_t *e = json_array_get(v, k);
        if (!json_is_number(e)) {
            char item[SL__JPTR_MAX];
            sl__jptr_index(item, at, k);
            sl__jdiag_add(&doc->diag, SL_EINVAL, item, "expected a number, found %s",
                          sl__json_type_name(e));
            return false;
        }
        out[k] = json_number_value(e);
    }
    *n = (uint32_t)json_array_size(v);
    return true;
}

/* One parameter of a built-in op, set in n->args through the registry. */
static void
node_parse_param(sl_graph_json *doc, struct sl__jnode *n, const struct sl_op_param *p)
{
    const json_t *v = json_object_get(n->obj, p->name);
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, p->name);
    if (v == NULL) {
        if (p->required)
            sl__jdiag_add(&doc->diag, SL_EINVAL, at, "missing \"%s\" of op %s: %s", p->name,
                          n->op->name, p->doc);
        return;
    }
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = SL_OK;
    const char *text;
    uint64_t factors[SL_MAX_RANK];
    double numbers[SL_MAX_RANK];
    uint32_t n_factors;
    switch (p->type) {
    case SL_OP_PARAM_NUMBER:
        if (!json_is_number(v)) {
            sl__jdiag_add(&doc->diag, SL_EINVAL, at, "expected a number, found %s",
                          sl__json_type_name(v));
            return;
        }
        st = sl_op_args_set_number(&n->args, n->op, p->name, json_number_value(v), &err);
        break;
    case SL_OP_PARAM_DTYPE:
    case SL_OP_PARAM_METHOD:
    case SL_OP_PARAM_MODE:
        if (!sl__jget_string(&doc->diag, v, at, &text))
            return;
        st = sl_op_args_set_string(&n->args, n->op, p->name, text, &err);
        break;
    case SL_OP_PARAM_FACTORS:
        /* One integer stands for every dimension (the op's bind says
         * whether it takes that). */
        if (json_is_integer(v) && json_integer_value(v) > 0) {
            factors[0] = (uint64_t)json_integer_value(v);
            n_factors = 1;
        } else if (!sl__jget_dims(&doc->diag, v, at, 1, factors, &n_factors)) {
            return;
        }
        st = sl_op_args_set_factors(&n->args, n->op, p->name, n_factors, factors, &err);
        break;
    case SL_OP_PARAM_NUMBERS:
        if (!param_numbers(doc, v, at, numbers, &n_factors))
            return;
        st = sl_op_args_set_numbers(&n->args, n->op, p->name, n_factors, numbers, &err);
        break;
    }
    if (st != SL_OK)
        sl__jdiag_add_error(&doc->diag, at, &err);
}

static void
node_parse_op(sl_graph_json *doc, struct sl__jnode *n)
{
    for (uint32_t i = 0; i < n->op->n_params; i++)
        node_parse_param(doc, n, &n->op->params[i]);
    const json_t *v = json_object_get(n->obj, "chunks");
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "chunks");
    if (v != NULL)
        (void)sl__jget_dims(&doc->diag, v, at, 1, n->chunks, &n->n_chunks);
}

/* The fields of node `n` beyond its id. */
static void
node_parse(sl_graph_json *doc, struct sl__jnode *n)
{
    const char *const *keys = NULL;
    if (!node_parse_kind(doc, n, &keys)) {
        /* Still count what it reads, so its input is not called unused. */
        const json_t *in = json_object_get(n->obj, "input");
        n->input_name = json_is_string(in) ? json_string_value(in) : NULL;
        return;
    }
    char what[48];
    const char *kind_name = n->kind == SL__JNODE_OP ? n->op->name : n->view_op;
    snprintf(what, sizeof(what), "a%s %s node", strchr("aeiou", kind_name[0]) != NULL ? "n" : "",
             kind_name);
    sl__jcheck_keys(&doc->diag, n->obj, n->ptr, what, keys, n->op);
    node_string(doc, n, "comment", NULL, &(const char *){NULL});
    bool joins = n->kind == SL__JNODE_EXPR || n->kind == SL__JNODE_MAP ||
                 (n->kind == SL__JNODE_VIEW &&
                  (strcmp(n->view_op, "stack") == 0 || strcmp(n->view_op, "concat") == 0));
    if (n->kind != SL__JNODE_GET && n->kind != SL__JNODE_COPY && !joins)
        node_string(doc, n, "input", "the id of the node whose chunks this one reads",
                    &n->input_name);
    if (n->kind == SL__JNODE_GET || n->kind == SL__JNODE_PUT)
        node_string(doc, n, "array", "the name of an entry of \"arrays\"", &n->array_name);
    const json_t *v;
    char at[SL__JPTR_MAX];
    switch (n->kind) {
    case SL__JNODE_SELECT:
        node_parse_select(doc, n);
        break;
    case SL__JNODE_RECHUNK:
        v = node_require(doc, n, "chunks", "the new chunk shape");
        sl__jptr_key(at, n->ptr, "chunks");
        if (v != NULL)
            (void)sl__jget_dims(&doc->diag, v, at, 1, n->chunks, &n->n_chunks);
        break;
    case SL__JNODE_OP:
        node_parse_op(doc, n);
        break;
    case SL__JNODE_PYRAMID:
        sl__jpyramid_parse(doc, n);
        break;
    case SL__JNODE_COPY:
        sl__jcopy_parse(doc, n);
        break;
    case SL__JNODE_EXPR:
        sl__jexpr_parse(doc, n);
        break;
    case SL__JNODE_VIEW:
        sl__jview_parse(doc, n);
        break;
    case SL__JNODE_REDUCE:
        sl__jreduce_parse(doc, n);
        break;
    case SL__JNODE_STATS:
        sl__jstats_parse(doc, n);
        break;
    case SL__JNODE_MAP:
        sl__jmap_parse(doc, n);
        break;
    case SL__JNODE_GET:
    case SL__JNODE_PUT:
        break;
    }
}

/* The id of a node in a list: its "id" field. */
static void
node_parse_list_id(sl_graph_json *doc, struct sl__jnode *n)
{
    const json_t *v = json_object_get(n->obj, "id");
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "id");
    if (v == NULL)
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "missing \"id\": nodes in a list need one, for other nodes' \"input\"");
    else
        (void)sl__jget_string(&doc->diag, v, at, &n->id);
}

/* Check the id's length, and that an object's node has no "id" field. */
static void
node_check_id(sl_graph_json *doc, struct sl__jnode *n, bool in_list)
{
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "id");
    if (!in_list && json_object_get(n->obj, "id") != NULL)
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "\"id\" is for nodes in a list; here the key is the id");
    size_t len = n->id != NULL ? strlen(n->id) : 0;
    if (n->id != NULL && (len == 0 || len > SL__JNODE_ID_MAX))
        sl__jdiag_add(&doc->diag, SL_EINVAL, in_list ? at : n->ptr,
                      "node ids have 1 to %d characters, found %zu", SL__JNODE_ID_MAX, len);
}

void
sl__jnodes_parse(sl_graph_json *doc, const json_t *nodes)
{
    size_t n = json_is_array(nodes) ? json_array_size(nodes) : json_object_size(nodes);
    doc->nodes = n > 0 ? sl_alloc_zeroed(&doc->alloc, n, sizeof(struct sl__jnode), 0) : NULL;
    if (n > 0 && doc->nodes == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, "/nodes", "no memory for %zu nodes", n);
        return;
    }
    const char *key = NULL;
    json_t *v;
    size_t i = 0;
    void *iter = json_is_object(nodes) ? json_object_iter((json_t *)nodes) : NULL;
    for (; i < n; i++) {
        struct sl__jnode *node = &doc->nodes[doc->n_nodes++];
        node->input = -1;
        node->array = -1;
        if (json_is_array(nodes)) {
            v = json_array_get(nodes, i);
            sl__jptr_index(node->ptr, "/nodes", i);
        } else {
            key = json_object_iter_key(iter);
            v = json_object_iter_value(iter);
            iter = json_object_iter_next((json_t *)nodes, iter);
            node->id = key;
            sl__jptr_key(node->ptr, "/nodes", key);
        }
        node->obj = v;
        size_t before = doc->diag.count;
        if (!json_is_object(v)) {
            sl__jdiag_add(&doc->diag, SL_EINVAL, node->ptr,
                          "expected a node object {\"op\": ...}, found %s", sl__json_type_name(v));
        } else {
            if (json_is_array(nodes))
                node_parse_list_id(doc, node);
            node_check_id(doc, node, json_is_array(nodes));
            node_parse(doc, node);
        }
        node->bad = doc->diag.count != before;
        if (doc->diag.full)
            return;
    }
    sl__jnodes_link(doc);
}

void
sl__jnodes_fini(sl_graph_json *doc)
{
    for (size_t i = 0; i < doc->n_nodes; i++) {
        struct sl__jnode *n = &doc->nodes[i];
        sl_free(&doc->alloc, n->slices, n->n_slices * sizeof(struct sl__jslice));
        if (n->pyramid.full_path != NULL)
            sl_free(&doc->alloc, n->pyramid.full_path, strlen(n->pyramid.full_path) + 1);
        sl__jcopy_fini(doc, n);
    }
    sl_free(&doc->alloc, doc->order, (doc->n_nodes + 1) * sizeof(size_t));
    sl_free(&doc->alloc, doc->nodes, doc->n_nodes * sizeof(struct sl__jnode));
    doc->nodes = NULL;
    doc->order = NULL;
    doc->n_nodes = 0;
    doc->n_order = 0;
}
