/* SPDX-License-Identifier: MIT */
/*
 * Graph construction: creating graphs, adding getter, select, map, regrid,
 * rechunk and putter nodes with their checks, sealing, and node queries.
 *
 * DESIGN: every node owns its output chunk grid, computed when it is added,
 * and its mapping from output regions to input regions (graph_map.c).  A
 * node can only name inputs that already exist, so a graph is acyclic by
 * construction and node ids are a topological order.  An add either
 * succeeds completely or leaves the graph as it was.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/graph_node.h>

#include "core_internal.h"
#include "graph_internal.h"

static const char *const node_kind_names[SL_NODE_KIND_COUNT_] = {
    [SL_NODE_GET] = "get",       [SL_NODE_GETTER] = "getter", [SL_NODE_SELECT] = "select",
    [SL_NODE_MAP] = "map",       [SL_NODE_REGRID] = "regrid", [SL_NODE_PUT] = "put",
    [SL_NODE_PUTTER] = "putter", [SL_NODE_VIEW] = "view",
};

const char *
sl_node_kind_name(sl_node_kind kind)
{
    if ((unsigned)kind >= SL_NODE_KIND_COUNT_)
        return "invalid";
    return node_kind_names[kind];
}

sl_graph *
sl_graph_create(const struct sl_allocator *alloc, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_allocator a = alloc != NULL ? *alloc : sl_allocator_default();
    sl_graph *g = sl_alloc(&a, sizeof(*g), 0);
    if (g == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "no memory for a graph");
        return NULL;
    }
    memset(g, 0, sizeof(*g));
    atomic_init(&g->refs, 1);
    g->alloc = a;
    return g;
}

sl_graph *
sl_graph_ref(sl_graph *g)
{
    /* Relaxed: taking a reference needs no ordering, only atomicity. */
    atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
    return g;
}

void
sl__node_fini(sl_graph *g, struct sl__node *n)
{
    sl_free(&g->alloc, n->inputs, n->n_inputs * sizeof(uint32_t));
    sl_grid_fini(&n->grid);
    if (n->kind == SL_NODE_GETTER && n->u.getter.array_name != NULL)
        sl_free(&g->alloc, n->u.getter.array_name, strlen(n->u.getter.array_name) + 1);
    if (n->kind == SL_NODE_SELECT)
        sl_free(&g->alloc, n->u.select.pieces,
                n->u.select.n_pieces * sizeof(struct sl__select_piece));
    if (n->kind == SL_NODE_GET || n->kind == SL_NODE_PUT)
        sl_array_unref(n->u.io.array);
    sl_expr_free(n->expr);
    if (n->stats != NULL && n->stats->omero != NULL) {
        sl_store_unref(n->stats->omero->store);
        sl_free(&g->alloc, n->stats->omero, sizeof(*n->stats->omero));
    }
    if (n->stats != NULL)
        sl_free(&g->alloc, n->stats, sizeof(*n->stats));
    memset(n, 0, sizeof(*n));
}

void
sl_graph_unref(sl_graph *g)
{
    if (g == NULL)
        return;
    /* Release pairs with the acquire fence below, so the freeing thread sees
     * every write other holders made before dropping their reference. */
    if (atomic_fetch_sub_explicit(&g->refs, 1, memory_order_release) != 1)
        return;
    atomic_thread_fence(memory_order_acquire);
    for (uint32_t i = 0; i < g->n_nodes; i++)
        sl__node_fini(g, &g->nodes[i]);
    sl_free(&g->alloc, g->nodes, g->cap_nodes * sizeof(struct sl__node));
    struct sl_allocator a = g->alloc;
    sl_free(&a, g, sizeof(*g));
}

struct sl__node *
sl__graph_node(const sl_graph *g, uint32_t id)
{
    return id < g->n_nodes ? &g->nodes[id] : NULL;
}

/* Check that a new node may be added under `name`. */
sl_status
sl__graph_check_new_node(const sl_graph *g, const char *name, struct sl_error *err)
{
    if (g->sealed)
        return sl_error_set(err, SL_ESTATE, NULL, "graph is sealed; cannot add node \"%s\"",
                            name != NULL ? name : "");
    if (name == NULL || name[0] == '\0')
        return sl_error_set(err, SL_EINVAL, NULL, "node name is empty");
    size_t len = strlen(name);
    if (len > SL__NODE_NAME_MAX)
        /* A name past the limit is shown by its head: the count says the rest. */
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node name \"%.40s...\" is %zu characters; the limit is %d", name, len,
                            SL__NODE_NAME_MAX);
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return sl_error_set(err, SL_EEXIST, NULL, "a node named \"%s\" already exists", name);
    return SL_OK;
}

/* Check that `input` names an existing node that produces chunks. */
sl_status
sl__graph_check_input(const sl_graph *g, const char *name, uint32_t input, struct sl_error *err)
{
    const struct sl__node *in = sl__graph_node(g, input);
    if (in == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": input %" PRIu32 " is not a node (the graph has %" PRIu32
                            ")",
                            name, input, g->n_nodes);
    if (in->kind == SL_NODE_PUT || in->kind == SL_NODE_PUTTER)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": input \"%s\" is a %s, which produces no chunks", name,
                            in->name, sl_node_kind_name(in->kind));
    return SL_OK;
}

/* Make room for one more node. */
sl_status
sl__graph_reserve(sl_graph *g, struct sl_error *err)
{
    if (g->n_nodes < g->cap_nodes)
        return SL_OK;
    uint32_t cap = g->cap_nodes ? g->cap_nodes * 2 : 8;
    struct sl__node *nodes = sl_alloc_zeroed(&g->alloc, cap, sizeof(*nodes), 0);
    if (nodes == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu32 " graph nodes", cap);
    if (g->n_nodes > 0)
        memcpy(nodes, g->nodes, g->n_nodes * sizeof(*nodes));
    sl_free(&g->alloc, g->nodes, g->cap_nodes * sizeof(*nodes));
    g->nodes = nodes;
    g->cap_nodes = cap;
    return SL_OK;
}

/* Start a node in `tmp` with identity mappings; the caller fills the rest. */
void
sl__node_start(struct sl__node *tmp, sl_node_kind kind, const char *name, const char *op_name)
{
    memset(tmp, 0, sizeof(*tmp));
    tmp->kind = kind;
    tmp->fusable = true;
    sl__strlcpy(tmp->name, name, sizeof(tmp->name));
    sl__strlcpy(tmp->op_name, op_name != NULL ? op_name : "", sizeof(tmp->op_name));
    for (uint32_t d = 0; d < SL_MAX_RANK; d++)
        tmp->map[d] = (struct sl__dim_map){.num = 1, .den = 1};
    tmp->win_axis = -1;
}

/* Copy `n` input ids into `tmp`, owned by the graph. */
sl_status
sl__node_set_inputs(sl_graph *g, struct sl__node *tmp, size_t n, const uint32_t *inputs,
                    struct sl_error *err)
{
    tmp->inputs = sl_alloc_zeroed(&g->alloc, n, sizeof(uint32_t), 0);
    if (tmp->inputs == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for the inputs of \"%s\"", tmp->name);
    memcpy(tmp->inputs, inputs, n * sizeof(uint32_t));
    tmp->n_inputs = (uint32_t)n;
    return SL_OK;
}

/* Append the finished node `tmp` (whose storage the graph now owns). */
void
sl__graph_commit_node(sl_graph *g, struct sl__node *tmp, uint32_t *id)
{
    tmp->id = g->n_nodes;
    for (uint32_t i = 0; i < tmp->n_inputs; i++)
        g->nodes[tmp->inputs[i]].n_consumers++;
    g->nodes[g->n_nodes++] = *tmp;
    if (id != NULL)
        *id = tmp->id;
}

/* Remove the last node added (undoing a helper node when a later step fails). */
void
sl__graph_pop_node(sl_graph *g)
{
    if (g->n_nodes == 0)
        return;
    struct sl__node *n = &g->nodes[g->n_nodes - 1];
    for (uint32_t i = 0; i < n->n_inputs; i++)
        g->nodes[n->inputs[i]].n_consumers--;
    sl__node_fini(g, n);
    g->n_nodes--;
}

/* Prefix a failure recorded while building node `name` with its name. */
sl_status
sl__node_fail(struct sl_error *err, const char *name, sl_status st)
{
    if (err != NULL && err->code == st && strncmp(err->text, "node \"", 6) != 0) {
        char text[2 * sizeof(err->text)];
        snprintf(text, sizeof(text), "node \"%s\": %s", name, err->text);
        sl__text_fit(err->text, sizeof(err->text), text);
    }
    return st;
}

sl_status
sl_graph_add_getter(sl_graph *g, const char *name, const struct sl_getter_desc *desc, uint32_t *id,
                    struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    if (desc == NULL || desc->fn == NULL || desc->array_name == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": a getter needs a function and an array name", name);
    if ((unsigned)desc->dtype >= SL_DTYPE_COUNT_)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": invalid dtype %d", name,
                            (int)desc->dtype);
    if (desc->rank > 0 && (desc->shape == NULL || desc->chunk_shape == NULL))
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": shape and chunk shape are needed",
                            name);
    SL_TRY(sl__graph_reserve(g, err));
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_GETTER, name, "getter");
    tmp.dtype = desc->dtype;
    sl_status st = sl_grid_init_regular(&tmp.grid, desc->rank, desc->shape, desc->chunk_shape, err);
    if (st != SL_OK)
        return sl__node_fail(err, name, st);
    tmp.u.getter.fn = desc->fn;
    tmp.u.getter.ctx = desc->ctx;
    memset(tmp.u.getter.fill, 0, sizeof tmp.u.getter.fill);
    if (desc->fill_value != NULL)
        memcpy(tmp.u.getter.fill, desc->fill_value, sl_dtype_size(desc->dtype));
    tmp.u.getter.array_name = sl_strdup(&g->alloc, desc->array_name);
    if (tmp.u.getter.array_name == NULL) {
        sl__node_fini(g, &tmp);
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for node \"%s\"", name);
    }
    sl__graph_commit_node(g, &tmp, id);
    return SL_OK;
}

sl_status
sl_graph_set_fusable(sl_graph *g, uint32_t id, bool fusable, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl__node *n = sl__graph_node(g, id);
    if (n == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "set fusable: no node %" PRIu32 " (the graph has %" PRIu32 ")", id,
                            g->n_nodes);
    if (g->sealed)
        return sl_error_set(err, SL_ESTATE, NULL, "set fusable: node \"%s\": the graph is sealed",
                            n->name);
    n->fusable = fusable;
    return SL_OK;
}

sl_status
sl_graph_seal(sl_graph *g, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (g->sealed)
        return SL_OK;
    bool any_put = false;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const struct sl__node *n = &g->nodes[i];
        bool is_put = n->kind == SL_NODE_PUT || n->kind == SL_NODE_PUTTER;
        any_put |= is_put;
        if (!is_put && n->n_consumers == 0)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "node \"%s\" is never used: connect it to a put or remove it",
                                n->name);
    }
    if (!any_put)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "graph has no put or putter node, so running it would do nothing");
    g->sealed = true;
    return SL_OK;
}

bool
sl_graph_is_sealed(const sl_graph *g)
{
    return g->sealed;
}

uint32_t
sl_graph_node_count(const sl_graph *g)
{
    return g->n_nodes;
}

sl_status
sl_graph_find(const sl_graph *g, const char *name, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        if (strcmp(g->nodes[i].name, name) == 0) {
            *id = i;
            return SL_OK;
        }
    }
    return sl_error_set(err, SL_ENOTFOUND, NULL, "no node named \"%s\"", name);
}

sl_status
sl_graph_node_info(const sl_graph *g, uint32_t id, struct sl_node_info *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    const struct sl__node *n = sl__graph_node(g, id);
    if (n == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node info: no node %" PRIu32 " (the graph has %" PRIu32 ")", id,
                            g->n_nodes);
    *out = (struct sl_node_info){
        .name = n->name,
        .kind = n->kind,
        .op_name = n->op_name,
        .dtype = n->dtype,
        .grid = &n->grid,
        .n_inputs = n->n_inputs,
        .inputs = n->inputs,
        .n_consumers = n->n_consumers,
        .fusable = n->fusable,
        .array = n->kind == SL_NODE_GET || n->kind == SL_NODE_PUT ? n->u.io.array : NULL,
    };
    return SL_OK;
}
