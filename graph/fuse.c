/* SPDX-License-Identifier: MIT */
/*
 * The fusion planner: a pure pass from a sealed graph to stages.
 *
 * DESIGN: an edge producer → consumer is fused only when (1) neither node is
 * marked unfusable, (2) the producer has no other consumer, (3) every
 * output chunk of the consumer needs exactly one chunk of the producer and
 * (4) no producer chunk is needed by two output chunks, so fusing never
 * computes a chunk twice.  (3) and (4) are decided one dimension at a time
 * from the separable mappings of graph_map.c, in time linear in the chunks
 * per dimension.  Fused nodes form trees (a fused producer has one consumer);
 * each tree is a stage whose tasks run one output chunk of its root through
 * the whole tree.  Fusion never changes what a getter is asked for: getters
 * are only ever read by whole stored chunk.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/graph_node.h>

#include "core_internal.h"
#include "graph_internal.h"

const char *
sl__fuse_reason_text(enum sl__fuse_reason reason)
{
    switch (reason) {
    case SL__FUSED:
        return "fused";
    case SL__NOFUSE_CONSUMERS:
        return "producer has several consumers";
    case SL__NOFUSE_MARKED:
        return "marked unfusable";
    case SL__NOFUSE_MANY:
        return "an output chunk needs several producer chunks";
    case SL__NOFUSE_SHARED:
        return "a producer chunk is needed by several output chunks";
    case SL__NOFUSE_PUT:
        return "puts produce no chunks";
    case SL__NOFUSE_HALO:
        return "halo: an output chunk needs a margin of its neighbours";
    }
    return "unknown";
}

/* Decide conditions (3) and (4) along dimension `d` of the producer. */
static enum sl__fuse_reason
fuse_check_dim(const sl_graph *g, const struct sl__node *c, uint32_t input, uint32_t d,
               char *detail, size_t size)
{
    const struct sl__node *p = sl__graph_node(g, c->inputs[input]);
    int o = sl__node_out_dim(c, input, d);
    if (o == SL__AXIS_WHOLE) {
        if (p->grid.n_chunks[d] <= 1)
            return SL__FUSED;
        snprintf(detail, size,
                 "every chunk of \"%s\" needs all %" PRIu64 " chunks of \"%s\" in its "
                 "dimension %" PRIu32 " (read whole)",
                 c->name, p->grid.n_chunks[d], p->name, d);
        return SL__NOFUSE_MANY;
    }
    uint64_t prev = 0, prev_j = 0;
    bool have_prev = false;
    for (uint64_t j = 0; j < c->grid.n_chunks[o]; j++) {
        uint64_t a = sl_grid_chunk_start(&c->grid, (uint32_t)o, j),
                 b = sl_grid_chunk_start(&c->grid, (uint32_t)o, j + 1);
        uint64_t ia, ib;
        sl__node_input_interval(g, c, input, d, a, b, &ia, &ib);
        if (ib <= ia)
            continue;
        uint64_t lo = sl_grid_chunk_at(&p->grid, d, ia), hi = sl_grid_chunk_at(&p->grid, d, ib - 1);
        const struct sl__dim_map *m = &c->map[o];
        if (lo != hi && (m->halo_lo > 0 || m->halo_hi > 0)) {
            snprintf(detail, size,
                     "output chunk %" PRIu64 " of \"%s\" needs [%" PRIu64 ":%" PRIu64
                     ") of \"%s\" (halo %" PRIu64 " before, %" PRIu64 " after%s), chunks %" PRIu64
                     "..%" PRIu64 " in dimension %" PRIu32,
                     j, c->name, ia, ib, p->name, m->halo_lo, m->halo_hi,
                     m->wrap ? ", wrapping" : "", lo, hi, d);
            return SL__NOFUSE_HALO;
        }
        if (lo != hi) {
            snprintf(detail, size,
                     "output chunk %" PRIu64 " of \"%s\" needs [%" PRIu64 ":%" PRIu64
                     ") of \"%s\", chunks %" PRIu64 "..%" PRIu64 " in dimension %" PRIu32,
                     j, c->name, ia, ib, p->name, lo, hi, d);
            return SL__NOFUSE_MANY;
        }
        if (have_prev && lo <= prev) {
            snprintf(detail, size,
                     "chunk %" PRIu64 " of \"%s\" is needed by output chunks %" PRIu64
                     " and %" PRIu64 " of \"%s\" in dimension %" PRIu32,
                     lo, p->name, prev_j, j, c->name, d);
            return SL__NOFUSE_SHARED;
        }
        prev = lo;
        prev_j = j;
        have_prev = true;
    }
    return SL__FUSED;
}

/* Whether output dimension `o` of `c` is followed by a dimension of input `input`. */
static bool
out_dim_followed(const sl_graph *g, const struct sl__node *c, uint32_t input, uint32_t o)
{
    const struct sl__node *p = sl__graph_node(g, c->inputs[input]);
    for (uint32_t d = 0; d < p->grid.rank; d++)
        if (sl__node_out_dim(c, input, d) == (int)o)
            return true;
    return false;
}

/* How many chunks of `grid` along `d` meet [lo, hi). */
static uint64_t
window_chunks(const struct sl_grid *grid, uint32_t d, uint64_t lo, uint64_t hi)
{
    if (lo >= hi || lo >= grid->shape[d])
        return 0;
    hi = hi < grid->shape[d] ? hi : grid->shape[d];
    return sl_grid_chunk_at(grid, d, hi - 1) - sl_grid_chunk_at(grid, d, lo) + 1;
}

/* Condition (4) along the output dimensions no producer dimension follows:
 * every output chunk along them reads the same producer chunks. */
static enum sl__fuse_reason
fuse_check_broadcast(const sl_graph *g, const struct sl__node *c, uint32_t input, char *detail,
                     size_t size)
{
    const struct sl__node *p = sl__graph_node(g, c->inputs[input]);
    for (uint32_t o = 0; o < c->grid.rank; o++) {
        if (c->grid.n_chunks[o] <= 1 || out_dim_followed(g, c, input, o))
            continue;
        if ((int)o == c->win_axis &&
            window_chunks(&c->grid, o, c->win_lo[input], c->win_hi[input]) <= 1)
            continue; /* a stack: one output chunk along o reads this input */
        snprintf(detail, size,
                 "each chunk of \"%s\" is needed by all %" PRIu64 " output chunks of \"%s\" "
                 "in dimension %" PRIu32 " (broadcast)",
                 p->name, c->grid.n_chunks[o], c->name, o);
        return SL__NOFUSE_SHARED;
    }
    return SL__FUSED;
}

/* The planner's verdict on edge `e`, with its numbers in e->detail. */
static void
fuse_decide(const sl_graph *g, struct sl__edge *e)
{
    const struct sl__node *p = sl__graph_node(g, e->producer);
    const struct sl__node *c = sl__graph_node(g, e->consumer);
    e->detail[0] = '\0';
    if (!p->fusable || !c->fusable) {
        snprintf(e->detail, sizeof(e->detail), "\"%s\" is marked unfusable",
                 !p->fusable ? p->name : c->name);
        e->reason = SL__NOFUSE_MARKED;
        return;
    }
    if (p->n_consumers > 1) {
        snprintf(e->detail, sizeof(e->detail), "\"%s\" has %" PRIu32 " consumers", p->name,
                 p->n_consumers);
        e->reason = SL__NOFUSE_CONSUMERS;
        return;
    }
    e->reason = SL__FUSED;
    for (uint32_t d = 0; d < p->grid.rank && e->reason == SL__FUSED; d++)
        e->reason = fuse_check_dim(g, c, e->input, d, e->detail, sizeof(e->detail));
    if (e->reason == SL__FUSED && c->axes_mapped)
        e->reason = fuse_check_broadcast(g, c, e->input, e->detail, sizeof(e->detail));
}

/* Bytes of the largest chunk of node `n` (saturating). */
static size_t
node_chunk_bytes(const struct sl__node *n)
{
    /* Gets and puts handle whole stored chunks, edge chunks included. */
    if (n->kind == SL_NODE_GET || n->kind == SL_NODE_PUT)
        return sl_array_chunk_bytes(n->u.io.array);
    uint64_t shape[SL_MAX_RANK];
    for (uint32_t d = 0; d < n->grid.rank; d++)
        shape[d] = sl_grid_max_chunk(&n->grid, d);
    size_t bytes;
    if (sl_shape_bytes(n->grid.rank, shape, sl_dtype_size(n->dtype), &bytes, NULL) != SL_OK)
        return SIZE_MAX;
    return bytes;
}

/* Bytes of the largest input region node `n` assembles from input `input`. */
static size_t
node_input_bytes(const sl_graph *g, const struct sl__node *n, uint32_t input)
{
    const struct sl__node *p = sl__graph_node(g, n->inputs[input]);
    uint64_t shape[SL_MAX_RANK];
    for (uint32_t d = 0; d < p->grid.rank; d++) {
        int o = sl__node_out_dim(n, input, d);
        if (o == SL__AXIS_WHOLE) {
            shape[d] = p->grid.shape[d];
            continue;
        }
        shape[d] = 0;
        for (uint64_t j = 0; j < n->grid.n_chunks[o]; j++) {
            uint64_t ia, ib;
            sl__node_input_interval(g, n, input, d, sl_grid_chunk_start(&n->grid, (uint32_t)o, j),
                                    sl_grid_chunk_start(&n->grid, (uint32_t)o, j + 1), &ia, &ib);
            shape[d] = ib - ia > shape[d] ? ib - ia : shape[d];
        }
    }
    size_t bytes;
    if (sl_shape_bytes(p->grid.rank, shape, sl_dtype_size(p->dtype), &bytes, NULL) != SL_OK)
        return SIZE_MAX;
    return bytes;
}

static size_t
add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/*
 * Chunk buffers one task of a stage holds at once: every node's output
 * except views (selects inside the stage) and puts, plus the regions a
 * regrid assembles from other stages' chunks (unless its op runs chunk by
 * chunk).
 */
static size_t
stage_task_bytes(const sl_graph *g, const struct sl__fusion *f, const struct sl__stage *s)
{
    size_t total = 0;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const struct sl__node *n = sl__graph_node(g, s->nodes[i]);
        /* A put may copy an edge or strided chunk into a whole one. */
        bool is_putter = n->kind == SL_NODE_PUTTER;
        bool is_view = (n->kind == SL_NODE_SELECT || n->kind == SL_NODE_VIEW) && n->id != s->root;
        if (!is_putter && !is_view)
            total = add_sat(total, node_chunk_bytes(n));
        /* Maps reading by region, and views, assemble inputs of other grids. */
        if ((n->kind == SL_NODE_MAP && n->by_region) || n->kind == SL_NODE_VIEW) {
            for (uint32_t k = 0; k < n->n_inputs; k++)
                if (f->stage_of[n->inputs[k]] != f->stage_of[n->id])
                    total = add_sat(total, node_input_bytes(g, n, k));
            continue;
        }
        if (n->kind != SL_NODE_REGRID || n->op_piecewise)
            continue;
        if (f->stage_of[n->inputs[0]] != f->stage_of[n->id])
            total = add_sat(total, node_input_bytes(g, n, 0));
    }
    return total;
}

/* Union-find root of `x` in `parent`. */
static uint32_t
find_root(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* Fill f->stages from the fused edges. */
static sl_status
fusion_build_stages(const sl_graph *g, struct sl__fusion *f, uint32_t *root_of,
                    struct sl_error *err)
{
    uint32_t n = g->n_nodes;
    /* A node is a stage root when its output leaves the stage (or it is a put). */
    f->n_stages = 0;
    for (uint32_t i = 0; i < n; i++)
        if (find_root(root_of, i) == i)
            f->stage_of[i] = f->n_stages++;
    f->stages = sl_alloc_zeroed(&f->alloc, f->n_stages, sizeof(struct sl__stage), 0);
    if (f->stages == NULL && f->n_stages > 0)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu32 " stages", f->n_stages);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = f->stage_of[find_root(root_of, i)];
        f->stage_of[i] = s;
        f->stages[s].root = find_root(root_of, i);
        f->stages[s].n_nodes++;
    }
    for (uint32_t s = 0; s < f->n_stages; s++) {
        f->stages[s].nodes = sl_alloc_zeroed(&f->alloc, f->stages[s].n_nodes, sizeof(uint32_t), 0);
        if (f->stages[s].nodes == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "no memory for stage %" PRIu32, s);
        f->stages[s].n_nodes = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct sl__stage *s = &f->stages[f->stage_of[i]];
        s->nodes[s->n_nodes++] = i;
    }
    for (uint32_t e = 0; e < f->n_edges; e++) {
        if (f->edges[e].reason == SL__FUSED)
            continue;
        f->stages[f->stage_of[f->edges[e].producer]].n_consumers++;
        f->stages[f->stage_of[f->edges[e].consumer]].n_unfused_inputs++;
    }
    for (uint32_t s = 0; s < f->n_stages; s++)
        f->stages[s].task_bytes = stage_task_bytes(g, f, &f->stages[s]);
    return SL_OK;
}

/*
 * The stage root's dimension that producer dimension `d` of edge `e`
 * follows up the fused path (path[0] the consumer, path[n_path - 1] the
 * root), with the dimension at each step in dims[]; SL__AXIS_WHOLE when a
 * step follows none.
 */
static int
edge_root_dim(const sl_graph *g, const struct sl__fusion *f, const struct sl__edge *e,
              const uint32_t *path, uint32_t n_path, uint32_t d, uint32_t *dims)
{
    int o = sl__node_out_dim(sl__graph_node(g, e->consumer), e->input, d);
    for (uint32_t k = 0; o != SL__AXIS_WHOLE; k++) {
        dims[k] = (uint32_t)o;
        if (k + 1 == n_path)
            return o;
        o = sl__node_out_dim(sl__graph_node(g, path[k + 1]), f->fused_input[path[k]], (uint32_t)o);
    }
    return SL__AXIS_WHOLE;
}

/* Count the reads of producer chunks with index k along producer dimension
 * `d` that the root's chunks along `dims[n_path - 1]` make over edge `e`. */
static void
edge_count_dim(const sl_graph *g, const struct sl__fusion *f, struct sl__edge *e,
               const uint32_t *path, uint32_t n_path, const uint32_t *dims, uint32_t d)
{
    const struct sl__node *p = sl__graph_node(g, e->producer);
    const struct sl__node *root = sl__graph_node(g, path[n_path - 1]);
    uint32_t rd = dims[n_path - 1];
    for (uint64_t j = 0; j < root->grid.n_chunks[rd]; j++) {
        uint64_t a = sl_grid_chunk_start(&root->grid, rd, j);
        uint64_t b = sl_grid_chunk_start(&root->grid, rd, j + 1);
        /* Down the fused path: each step picks the one chunk it needs. */
        for (uint32_t k = n_path - 1; k > 0 && a < b; k--) {
            const struct sl__node *m = sl__graph_node(g, path[k]);
            const struct sl__node *n = sl__graph_node(g, path[k - 1]);
            uint64_t ia, ib;
            sl__node_input_interval(g, m, f->fused_input[path[k - 1]], dims[k - 1], a, b, &ia, &ib);
            if (ib <= ia) {
                a = b;
                break;
            }
            uint64_t c = sl_grid_chunk_at(&n->grid, dims[k - 1], ia);
            a = sl_grid_chunk_start(&n->grid, dims[k - 1], c);
            b = sl_grid_chunk_start(&n->grid, dims[k - 1], c + 1);
        }
        if (a >= b)
            continue;
        uint64_t ia, ib;
        sl__node_input_interval(g, sl__graph_node(g, e->consumer), e->input, d, a, b, &ia, &ib);
        if (ib <= ia)
            continue;
        uint64_t hi = sl_grid_chunk_at(&p->grid, d, ib - 1);
        for (uint64_t k = sl_grid_chunk_at(&p->grid, d, ia); k <= hi; k++)
            e->uses[d][k]++;
    }
}

/*
 * How many chunks of the stage root along its dimension `r`, which no
 * producer dimension follows, read the producer over edge `e`: all of them,
 * but where `r` comes down the fused path to the consumer's window axis,
 * those that meet the input's window.
 */
static uint64_t
edge_count_unreached(const sl_graph *g, const struct sl__fusion *f, const struct sl__edge *e,
                     const uint32_t *path, uint32_t n_path, uint32_t r)
{
    const struct sl__node *root = sl__graph_node(g, path[n_path - 1]);
    uint32_t dims[64];
    dims[n_path - 1] = r;
    for (uint32_t k = n_path - 1; k > 0; k--) {
        /* The dimension of path[k - 1] that follows dims[k] of path[k]. */
        const struct sl__node *m = sl__graph_node(g, path[k]);
        const struct sl__node *n = sl__graph_node(g, path[k - 1]);
        int found = -1;
        for (uint32_t d = 0; d < n->grid.rank && found < 0; d++)
            if (sl__node_out_dim(m, f->fused_input[path[k - 1]], d) == (int)dims[k])
                found = (int)d;
        if (found < 0)
            return root->grid.n_chunks[r]; /* every root chunk along r reads alike */
        dims[k - 1] = (uint32_t)found;
    }
    const struct sl__node *c = sl__graph_node(g, e->consumer);
    if ((int)dims[0] != c->win_axis)
        return root->grid.n_chunks[r];
    uint64_t lo = c->win_lo[e->input], hi = c->win_hi[e->input], count = 0;
    for (uint64_t j = 0; j < root->grid.n_chunks[r]; j++) {
        uint64_t a = sl_grid_chunk_start(&root->grid, r, j);
        uint64_t b = sl_grid_chunk_start(&root->grid, r, j + 1);
        for (uint32_t k = n_path - 1; k > 0 && a < b; k--) {
            const struct sl__node *m = sl__graph_node(g, path[k]);
            const struct sl__node *n = sl__graph_node(g, path[k - 1]);
            uint64_t ia, ib;
            sl__node_input_interval(g, m, f->fused_input[path[k - 1]], dims[k - 1], a, b, &ia, &ib);
            if (ib <= ia) {
                a = b;
                break;
            }
            uint64_t ch = sl_grid_chunk_at(&n->grid, dims[k - 1], ia);
            a = sl_grid_chunk_start(&n->grid, dims[k - 1], ch);
            b = sl_grid_chunk_start(&n->grid, dims[k - 1], ch + 1);
        }
        count += a < b && a < hi && b > lo;
    }
    return count;
}

/* Count, per dimension, the reads each producer chunk gets over unfused edge `e`. */
static sl_status
edge_count_uses(const sl_graph *g, const struct sl__fusion *f, struct sl__edge *e,
                struct sl_error *err)
{
    const struct sl__node *p = sl__graph_node(g, e->producer);
    uint32_t path[64], n_path = 0; /* consumer up to its stage root */
    for (uint32_t x = e->consumer; x != UINT32_MAX; x = f->fused_to[x]) {
        if (n_path == SL_ARRAY_LEN(path))
            return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                                "stage of \"%s\" fuses more than %zu nodes in a chain",
                                sl__graph_node(g, e->consumer)->name, SL_ARRAY_LEN(path));
        path[n_path++] = x;
    }
    const struct sl__node *root = sl__graph_node(g, path[n_path - 1]);
    bool reached[SL_MAX_RANK] = {false};
    for (uint32_t d = 0; d < p->grid.rank; d++) {
        e->uses[d] = sl_alloc_zeroed(&f->alloc, p->grid.n_chunks[d] + 1, sizeof(uint64_t), 0);
        if (e->uses[d] == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "no memory to count chunk reads");
        uint32_t dims[64];
        int rd = edge_root_dim(g, f, e, path, n_path, d, dims);
        if (rd == SL__AXIS_WHOLE) {
            /* Read whole along d: each reading root chunk reads every chunk. */
            for (uint64_t k = 0; k < p->grid.n_chunks[d]; k++)
                e->uses[d][k] = 1;
            continue;
        }
        reached[rd] = true;
        edge_count_dim(g, f, e, path, n_path, dims, d);
    }
    e->fan = 1;
    for (uint32_t r = 0; r < root->grid.rank; r++)
        if (!reached[r] &&
            !sl_u64_mul_fits(e->fan, edge_count_unreached(g, f, e, path, n_path, r), &e->fan))
            e->fan = UINT64_MAX;
    return SL_OK;
}

uint64_t
sl__fusion_chunk_uses(const sl_graph *g, const struct sl__fusion *f, uint32_t producer,
                      const uint64_t *coords)
{
    const struct sl__node *p = sl__graph_node(g, producer);
    uint64_t total = 0;
    for (uint32_t i = 0; i < f->n_edges; i++) {
        const struct sl__edge *e = &f->edges[i];
        if (e->producer != producer || e->reason == SL__FUSED)
            continue;
        uint64_t n = e->fan;
        for (uint32_t d = 0; d < p->grid.rank; d++)
            n *= e->uses[d][coords[d]];
        total += n;
    }
    return total;
}

sl_status
sl__fusion_plan(const sl_graph *g, const struct sl_allocator *alloc, struct sl__fusion *out,
                struct sl_error *err)
{
    uint32_t n = g->n_nodes;
    struct sl__fusion f = {
        .alloc = alloc != NULL ? *alloc : sl_allocator_default(), .n_nodes = n, .graph = g};
    for (uint32_t i = 0; i < n; i++)
        f.n_edges += g->nodes[i].n_inputs;
    f.edges = sl_alloc_zeroed(&f.alloc, f.n_edges, sizeof(struct sl__edge), 0);
    f.stage_of = sl_alloc_zeroed(&f.alloc, n, sizeof(uint32_t), 0);
    f.fused_to = sl_alloc_zeroed(&f.alloc, n, sizeof(uint32_t), 0);
    f.fused_input = sl_alloc_zeroed(&f.alloc, n, sizeof(uint32_t), 0);
    uint32_t *root_of = sl_alloc_zeroed(&f.alloc, n, sizeof(uint32_t), 0);
    if ((f.edges == NULL && f.n_edges > 0) || f.stage_of == NULL || root_of == NULL ||
        f.fused_to == NULL || f.fused_input == NULL) {
        sl_free(&f.alloc, root_of, n * sizeof(uint32_t));
        sl__fusion_fini(&f);
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory to plan %" PRIu32 " nodes", n);
    }
    for (uint32_t i = 0; i < n; i++) {
        root_of[i] = i;
        f.fused_to[i] = UINT32_MAX;
    }
    uint32_t k = 0;
    for (uint32_t c = 0; c < n; c++) {
        for (uint32_t in = 0; in < g->nodes[c].n_inputs; in++, k++) {
            struct sl__edge *e = &f.edges[k];
            *e = (struct sl__edge){.producer = g->nodes[c].inputs[in], .consumer = c, .input = in};
            fuse_decide(g, e);
            /* The producer joins the consumer's tree: its root is the consumer's. */
            if (e->reason == SL__FUSED) {
                root_of[e->producer] = c;
                f.fused_to[e->producer] = c;
                f.fused_input[e->producer] = in;
            }
        }
    }
    sl_status st = fusion_build_stages(g, &f, root_of, err);
    sl_free(&f.alloc, root_of, n * sizeof(uint32_t));
    for (uint32_t e = 0; e < f.n_edges && st == SL_OK; e++)
        if (f.edges[e].reason != SL__FUSED)
            st = edge_count_uses(g, &f, &f.edges[e], err);
    if (st == SL_OK)
        st = sl__compose_plan(g, &f, err);
    if (st != SL_OK) {
        sl__fusion_fini(&f);
        return st;
    }
    *out = f;
    return SL_OK;
}

void
sl__fusion_fini(struct sl__fusion *f)
{
    sl__compose_fini(f);
    for (uint32_t s = 0; s < f->n_stages && f->stages != NULL; s++)
        sl_free(&f->alloc, f->stages[s].nodes, f->stages[s].n_nodes * sizeof(uint32_t));
    sl_free(&f->alloc, f->stages, f->n_stages * sizeof(struct sl__stage));
    for (uint32_t e = 0; e < f->n_edges && f->edges != NULL; e++) {
        struct sl__edge *ed = &f->edges[e];
        for (uint32_t d = 0; d < SL_MAX_RANK; d++) {
            if (ed->uses[d] == NULL)
                continue;
            const struct sl__node *p = sl__graph_node(f->graph, ed->producer);
            sl_free(&f->alloc, ed->uses[d], (p->grid.n_chunks[d] + 1) * sizeof(uint64_t));
        }
    }
    sl_free(&f->alloc, f->edges, f->n_edges * sizeof(struct sl__edge));
    sl_free(&f->alloc, f->fused_to, f->n_nodes * sizeof(uint32_t));
    sl_free(&f->alloc, f->fused_input, f->n_nodes * sizeof(uint32_t));
    sl_free(&f->alloc, f->stage_of, f->n_nodes * sizeof(uint32_t));
    memset(f, 0, sizeof(*f));
}
