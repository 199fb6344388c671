/* SPDX-License-Identifier: MIT */
/*
 * Dry runs: which stored chunks would a sealed graph read, and are they
 * stored?  What katdal's placeholder mode told its users before a long job:
 * the chunks that will come back as fill values (or fail, with missing
 * chunks as errors), found without reading or writing any chunk data.
 *
 * DESIGN: starting from every chunk of every put, each node's chunks are
 * mapped to the input regions the executor would compute them from, and
 * the input chunks meeting those regions are marked, one bit per chunk and
 * node, so a chunk needed by many is walked once.  The marks of a get node
 * are the stored chunks the run would read; per shard (or chunk, unsharded)
 * one sl_array_shard_chunks_exist call says which of them are stored.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/array.h>
#include <sluice/array_io.h>
#include <sluice/graph_json.h>
#include <sluice/graph_node.h>

#include "core_internal.h"
#include "graph_internal.h"

/* A chunk waiting to have its inputs marked. */
struct pending {
    uint32_t node;  /* node id */
    uint64_t chunk; /* linear index in the node's grid */
};

/* The state of one check. */
struct dry {
    const sl_graph *g;                /* the graph */
    const struct sl_allocator *alloc; /* the graph's */
    uint8_t **marks;                  /* per node: one bit per chunk of its grid, or NULL */
    struct pending *stack;            /* chunks to visit */
    size_t n_stack;                   /* in use */
    size_t cap_stack;                 /* allocated */
};

static bool
bit_test(const uint8_t *bits, uint64_t i)
{
    return (bits[i / 8] >> (i % 8)) & 1u;
}

static void
bit_set(uint8_t *bits, uint64_t i)
{
    bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

static size_t
bits_bytes(const struct sl_grid *grid)
{
    return (size_t)(grid->n_total / 8 + 1);
}

static sl_status
dry_push(struct dry *s, uint32_t node, uint64_t chunk, struct sl_error *err)
{
    if (s->n_stack == s->cap_stack) {
        size_t cap = s->cap_stack != 0 ? 2 * s->cap_stack : 256;
        struct pending *p = sl_alloc(s->alloc, cap * sizeof(*p), 0);
        if (p == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %zu pending chunks", cap);
        if (s->n_stack > 0)
            memcpy(p, s->stack, s->n_stack * sizeof(*p));
        sl_free(s->alloc, s->stack, s->cap_stack * sizeof(*p));
        s->stack = p;
        s->cap_stack = cap;
    }
    s->stack[s->n_stack++] = (struct pending){node, chunk};
    return SL_OK;
}

/* Mark (and queue) the chunks of node `id` meeting `region`. */
static sl_status
dry_mark(struct dry *s, uint32_t id, const struct sl_region *region, struct sl_error *err)
{
    const struct sl__node *n = sl__graph_node(s->g, id);
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, &n->grid, region);
    while (sl_grid_iter_next(&it)) {
        uint64_t k = sl_grid_linear_index(&n->grid, it.coords);
        if (bit_test(s->marks[id], k))
            continue;
        bit_set(s->marks[id], k);
        if (n->kind != SL_NODE_GET && n->kind != SL_NODE_GETTER)
            SL_TRY(dry_push(s, id, k, err));
    }
    return SL_OK;
}

/* Mark every chunk the graph's puts need, through every node. */
static sl_status
dry_walk(struct dry *s, struct sl_error *err)
{
    for (uint32_t id = 0; id < s->g->n_nodes; id++) {
        const struct sl__node *n = sl__graph_node(s->g, id);
        if (n->kind != SL_NODE_PUT && n->kind != SL_NODE_PUTTER)
            continue;
        struct sl_region all = sl_region_whole(n->grid.rank, n->grid.shape);
        SL_TRY(dry_mark(s, id, &all, err));
    }
    while (s->n_stack > 0) {
        struct pending p = s->stack[--s->n_stack];
        const struct sl__node *n = sl__graph_node(s->g, p.node);
        uint64_t coords[SL_MAX_RANK];
        struct sl_region out, in;
        sl_grid_coords_of(&n->grid, p.chunk, coords);
        sl_grid_chunk_region(&n->grid, coords, &out);
        for (uint32_t i = 0; i < n->n_inputs; i++) {
            sl__node_input_region(s->g, n, i, &out, &in);
            if (!sl_region_is_empty(&in))
                SL_TRY(dry_mark(s, n->inputs[i], &in, err));
        }
    }
    return SL_OK;
}

/* True when a put of the graph writes `array` (its gets read what the run wrote). */
static bool
dry_written(const sl_graph *g, const sl_array *array)
{
    for (uint32_t id = 0; id < g->n_nodes; id++) {
        const struct sl__node *n = sl__graph_node(g, id);
        if (n->kind == SL_NODE_PUT && sl__array_same(n->u.io.array, array))
            return true;
    }
    return false;
}

/* Chunk-grid coordinates of inner chunk `k` (C order) of a shard whose
 * first inner chunk is `lo`; false when it lies beyond the array. */
static bool
dry_inner_coords(const struct sl_grid *grid, const uint64_t *lo, const uint64_t *per, uint64_t k,
                 uint64_t *inner)
{
    bool inside = true;
    for (uint32_t d = grid->rank; d-- > 0;) {
        inner[d] = lo[d] + k % per[d];
        k /= per[d];
        inside = inside && inner[d] < grid->n_chunks[d];
    }
    return inside;
}

/* Where the chunks of one stored object (shard, or chunk unsharded) are. */
struct dry_object {
    uint64_t lo[SL_MAX_RANK];  /* chunk-grid coordinates of its first chunk */
    uint64_t per[SL_MAX_RANK]; /* chunks per dimension */
    uint64_t n;                /* chunks */
};

/* True when some chunk of object `o` of get node `n` is marked. */
static bool
dry_object_marked(const struct sl__node *n, const uint8_t *marks, const struct dry_object *o)
{
    uint64_t inner[SL_MAX_RANK];
    for (uint64_t k = 0; k < o->n; k++)
        if (dry_inner_coords(&n->grid, o->lo, o->per, k, inner) &&
            bit_test(marks, sl_grid_linear_index(&n->grid, inner)))
            return true;
    return false;
}

/* Which marked chunks of get node `n` are stored, into the bits `stored`;
 * `exist` has room for a shard's chunks. */
static sl_status
dry_find_stored(const struct sl__node *n, const uint8_t *marks, uint8_t *stored, bool *exist,
                sl_codec_ctx *ctx, struct sl_error *err)
{
    const sl_array *a = n->u.io.array;
    struct sl_grid objects;
    SL_TRY(sl_array_shard_grid(a, &objects, err));
    const uint64_t *shard = sl_array_shard_shape(a);
    const uint64_t *chunk = sl_array_chunk_shape(a);
    struct dry_object o = {.n = 1};
    for (uint32_t d = 0; d < n->grid.rank; d++) {
        o.per[d] = shard != NULL ? shard[d] / chunk[d] : 1;
        o.n *= o.per[d];
    }
    sl_status st = SL_OK;
    uint64_t oc[SL_MAX_RANK], inner[SL_MAX_RANK];
    for (uint64_t i = 0; i < objects.n_total && st == SL_OK; i++) {
        sl_grid_coords_of(&objects, i, oc);
        for (uint32_t d = 0; d < n->grid.rank; d++)
            o.lo[d] = oc[d] * o.per[d];
        if (!dry_object_marked(n, marks, &o))
            continue;
        st = sl_array_shard_chunks_exist(a, oc, exist, (size_t)o.n, ctx, err);
        for (uint64_t k = 0; k < o.n && st == SL_OK; k++)
            if (dry_inner_coords(&n->grid, o.lo, o.per, k, inner) && exist[k])
                bit_set(stored, sl_grid_linear_index(&n->grid, inner));
    }
    sl_grid_fini(&objects);
    return st;
}

/* Report the marked chunks of get node `id`, in C order, to `fn`. */
static sl_status
dry_report_node(struct dry *s, uint32_t id, sl_input_chunk_fn *fn, void *ctx, struct sl_error *err)
{
    const struct sl__node *n = sl__graph_node(s->g, id);
    const sl_array *a = n->u.io.array;
    size_t n_exist = 1;
    const uint64_t *shard = sl_array_shard_shape(a);
    for (uint32_t d = 0; shard != NULL && d < n->grid.rank; d++)
        n_exist *= (size_t)(shard[d] / sl_array_chunk_shape(a)[d]);
    size_t n_bits = bits_bytes(&n->grid);
    uint8_t *stored = sl_alloc_zeroed(s->alloc, n_bits, 1, 0);
    bool *exist = sl_alloc_zeroed(s->alloc, n_exist, sizeof(bool), 0);
    sl_codec_ctx *cctx = sl_codec_ctx_create(s->alloc, err);
    sl_status st = SL_OK;
    if (stored == NULL || exist == NULL || cctx == NULL)
        st = sl_error_set(err, SL_ENOMEM, NULL, "no memory to check the chunks of node \"%s\"",
                          n->name);
    if (st == SL_OK)
        st = dry_find_stored(n, s->marks[id], stored, exist, cctx, err);
    uint64_t coords[SL_MAX_RANK];
    for (uint64_t k = 0; st == SL_OK && k < n->grid.n_total; k++) {
        if (!bit_test(s->marks[id], k))
            continue;
        sl_grid_coords_of(&n->grid, k, coords);
        struct sl_chunk_key key = sl_chunk_key_make(n->grid.rank, coords);
        st = fn(ctx, id, &key, bit_test(stored, k));
    }
    sl_codec_ctx_destroy(cctx);
    sl_free(s->alloc, exist, n_exist * sizeof(bool));
    sl_free(s->alloc, stored, n_bits);
    return st;
}

static void
dry_fini(struct dry *s)
{
    for (uint32_t id = 0; s->marks != NULL && id < s->g->n_nodes; id++)
        sl_free(s->alloc, s->marks[id], bits_bytes(&sl__graph_node(s->g, id)->grid));
    sl_free(s->alloc, s->marks, (s->g->n_nodes + 1) * sizeof(uint8_t *));
    sl_free(s->alloc, s->stack, s->cap_stack * sizeof(struct pending));
}

sl_status
sl_graph_check_inputs(const sl_graph *g, sl_input_chunk_fn *fn, void *ctx, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (g == NULL || fn == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "check inputs: NULL graph or callback");
    if (!g->sealed)
        return sl_error_set(err, SL_ESTATE, NULL, "check inputs: the graph is not sealed");
    struct dry s = {.g = g, .alloc = &g->alloc};
    sl_status st = SL_OK;
    s.marks = sl_alloc_zeroed(s.alloc, g->n_nodes + 1, sizeof(uint8_t *), 0);
    if (s.marks == NULL)
        st = sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu32 " nodes", g->n_nodes);
    for (uint32_t id = 0; st == SL_OK && id < g->n_nodes; id++) {
        s.marks[id] = sl_alloc_zeroed(s.alloc, bits_bytes(&g->nodes[id].grid), 1, 0);
        if (s.marks[id] == NULL)
            st = sl_error_set(err, SL_ENOMEM, NULL, "no memory to mark the chunks of node \"%s\"",
                              g->nodes[id].name);
    }
    if (st == SL_OK)
        st = dry_walk(&s, err);
    for (uint32_t id = 0; st == SL_OK && id < g->n_nodes; id++) {
        const struct sl__node *n = &g->nodes[id];
        if (n->kind == SL_NODE_GET && !dry_written(g, n->u.io.array))
            st = dry_report_node(&s, id, fn, ctx, err);
    }
    dry_fini(&s);
    return st;
}
