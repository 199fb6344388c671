/* SPDX-License-Identifier: MIT */
/*
 * Planning a batched read: every (chunk, selection) pair the selections
 * meet, sorted so that each chunk appears once with the selections it
 * serves and a shard's chunks are adjacent; and the geometry of delivering
 * one decoded chunk to its selections (straight into an output, copies,
 * fill).  Nothing here reads data, so graph selections plan with it too.
 *
 * DESIGN: pairs are generated per selection with the grid iterator, then
 * sorted by (object, inner index, selection).  Sorting rather than hashing
 * keeps the plan deterministic and gives shards their chunks in index
 * order, which the shard reader's coalescing wants.  Piece geometry (the
 * box a chunk shares with a selection) is recomputed at delivery from the
 * two regions, so the plan stays small: 8 bytes per pair, 40 per chunk.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "batch_internal.h"

sl_status
sl__batch_check_selection(size_t i, const struct sl_region *r, uint32_t rank, const uint64_t *shape,
                          struct sl_error *err)
{
    char sel[96], arr[64];
    if (r->rank != rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "selection %zu has rank %" PRIu32 ", the array has rank %" PRIu32, i,
                            r->rank, rank);
    for (uint32_t d = 0; d < rank; d++) {
        if (r->start[d] > r->stop[d])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "selection %zu starts at %" PRIu64 " after its stop %" PRIu64
                                " in dimension %" PRIu32,
                                i, r->start[d], r->stop[d], d);
        if (r->stop[d] <= shape[d])
            continue;
        sl_region_format(r, sel, sizeof(sel));
        sl_shape_format(rank, shape, arr, sizeof(arr));
        return sl_error_set(err, SL_EBOUNDS, NULL,
                            "selection %zu %s is outside the array's bounds %s: dimension %" PRIu32
                            " stops at %" PRIu64 " > %" PRIu64,
                            i, sel, arr, d, r->stop[d], shape[d]);
    }
    return SL_OK;
}

/* ---- building the plan ------------------------------------------------------------ */

/* One (chunk, selection) meeting, while planning. */
struct pair {
    uint64_t object; /* sort key 1 */
    uint64_t k;      /* sort key 2 */
    uint64_t chunk;  /* linear chunk index */
    size_t sel;      /* sort key 3 */
};

static int
pair_cmp(const void *pa, const void *pb)
{
    const struct pair *a = pa, *b = pb;
    if (a->object != b->object)
        return a->object < b->object ? -1 : 1;
    if (a->k != b->k)
        return a->k < b->k ? -1 : 1;
    return a->sel < b->sel ? -1 : a->sel > b->sel;
}

static bool
plan_wants(const sl_status *skip, size_t i)
{
    return skip == NULL || skip[i] == SL_OK;
}

/* Count the pairs, checking that their array fits in memory. */
static sl_status
plan_count(const struct sl_grid *grid, size_t n, const struct sl_region *regions,
           const sl_status *skip, size_t *n_pairs, struct sl_error *err)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        struct sl_region range;
        if (!plan_wants(skip, i) || !sl_grid_chunks_meeting(grid, &regions[i], &range))
            continue;
        uint64_t count = 1;
        for (uint32_t d = 0; d < grid->rank; d++)
            if (!sl_u64_mul_fits(count, range.stop[d] - range.start[d], &count))
                return sl_error_set(err, SL_EOVERFLOW, NULL, "selection %zu meets over 2^64 chunks",
                                    i);
        if (!sl_u64_add_fits(total, count, &total))
            return sl_error_set(err, SL_EOVERFLOW, NULL, "selections meet over 2^64 chunks");
    }
    if (total > SIZE_MAX / sizeof(struct pair))
        return sl_error_set(err, SL_EOVERFLOW, NULL,
                            "selections meet %" PRIu64 " chunks: too many to plan", total);
    *n_pairs = (size_t)total;
    return SL_OK;
}

/* Object (shard) and inner index of chunk `coords`. */
static void
plan_object_of(const struct sl_grid *grid, const uint64_t *per_shard, const uint64_t *coords,
               uint64_t *object, uint64_t *k)
{
    if (per_shard == NULL) {
        *object = sl_grid_linear_index(grid, coords);
        *k = 0;
        return;
    }
    uint64_t obj = 0, idx = 0;
    for (uint32_t d = 0; d < grid->rank; d++) {
        uint64_t n_shards =
            grid->n_chunks[d] / per_shard[d] + (grid->n_chunks[d] % per_shard[d] != 0);
        obj = obj * n_shards + coords[d] / per_shard[d];
        idx = idx * per_shard[d] + coords[d] % per_shard[d];
    }
    *object = obj;
    *k = idx;
}

static void
plan_fill_pairs(const struct sl_grid *grid, const uint64_t *per_shard, size_t n,
                const struct sl_region *regions, const sl_status *skip, struct pair *pairs)
{
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (!plan_wants(skip, i))
            continue;
        struct sl_grid_iter it;
        sl_grid_iter_init(&it, grid, &regions[i]);
        while (sl_grid_iter_next(&it)) {
            struct pair *q = &pairs[at++];
            plan_object_of(grid, per_shard, it.coords, &q->object, &q->k);
            q->chunk = sl_grid_linear_index(grid, it.coords);
            q->sel = i;
        }
    }
}

/* Group sorted pairs into chunks and objects. */
static sl_status
plan_group(struct sl__batch_plan *p, const struct pair *pairs, size_t n_pairs, struct sl_error *err)
{
    size_t n_chunks = 0, n_objects = 0;
    for (size_t i = 0; i < n_pairs; i++) {
        bool new_object = i == 0 || pairs[i].object != pairs[i - 1].object;
        n_objects += new_object;
        n_chunks += new_object || pairs[i].k != pairs[i - 1].k;
    }
    p->sels = sl_alloc_zeroed(&p->alloc, n_pairs, sizeof(size_t), 0);
    p->chunks = sl_alloc_zeroed(&p->alloc, n_chunks, sizeof(*p->chunks), 0);
    p->objects = sl_alloc_zeroed(&p->alloc, n_objects, sizeof(*p->objects), 0);
    p->n_sels = n_pairs;
    p->n_chunks = n_chunks;
    p->n_objects = n_objects;
    if (n_pairs > 0 && (p->sels == NULL || p->chunks == NULL || p->objects == NULL)) {
        sl__batch_plan_fini(p);
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory planning %zu chunks", n_chunks);
    }
    size_t c = SIZE_MAX, o = SIZE_MAX;
    for (size_t i = 0; i < n_pairs; i++) {
        const struct pair *q = &pairs[i];
        if (i == 0 || q->object != pairs[i - 1].object) {
            p->objects[++o] = (struct sl__batch_object){q->object, c + 1, 0};
        }
        if (i == 0 || q->object != pairs[i - 1].object || q->k != pairs[i - 1].k) {
            p->chunks[++c] = (struct sl__batch_chunk){q->chunk, q->object, q->k, i, 0};
            p->objects[o].n_chunks++;
        }
        p->sels[i] = q->sel;
        p->chunks[c].n_sels++;
    }
    return SL_OK;
}

sl_status
sl__batch_plan_build(struct sl__batch_plan *p, const struct sl_grid *chunks,
                     const uint64_t *per_shard, size_t n, const struct sl_region *regions,
                     const sl_status *skip, const struct sl_allocator *alloc, struct sl_error *err)
{
    memset(p, 0, sizeof(*p));
    p->alloc = alloc != NULL ? *alloc : sl_allocator_default();
    size_t n_pairs;
    SL_TRY(plan_count(chunks, n, regions, skip, &n_pairs, err));
    if (n_pairs == 0)
        return SL_OK;
    struct pair *pairs = sl_alloc(&p->alloc, n_pairs * sizeof(*pairs), 0);
    if (pairs == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory planning %zu chunk pieces",
                            n_pairs);
    plan_fill_pairs(chunks, per_shard, n, regions, skip, pairs);
    qsort(pairs, n_pairs, sizeof(*pairs), pair_cmp);
    sl_status st = plan_group(p, pairs, n_pairs, err);
    sl_free(&p->alloc, pairs, n_pairs * sizeof(*pairs));
    return st;
}

void
sl__batch_plan_fini(struct sl__batch_plan *p)
{
    sl_free(&p->alloc, p->sels, p->n_sels * sizeof(size_t));
    sl_free(&p->alloc, p->chunks, p->n_chunks * sizeof(*p->chunks));
    sl_free(&p->alloc, p->objects, p->n_objects * sizeof(*p->objects));
    p->sels = NULL;
    p->chunks = NULL;
    p->objects = NULL;
    p->n_sels = p->n_chunks = p->n_objects = 0;
}

/* ---- delivering a chunk ------------------------------------------------------------- */

/* Selection `s`'s output: its buffer, that buffer's shape and where the
 * selection starts in it. */
static uint8_t *
out_of(const struct sl__batch_geom *g, size_t s, uint64_t *dims, uint64_t *origin)
{
    const struct sl_region *r = &g->regions[s];
    if (g->out.bufs != NULL) {
        sl_region_shape(r, dims);
        memset(origin, 0, r->rank * sizeof(uint64_t));
        return g->out.bufs[s];
    }
    memcpy(dims, g->out.dims, r->rank * sizeof(uint64_t));
    for (uint32_t d = 0; d < r->rank; d++)
        origin[d] = d == g->out.axis ? g->out.offsets[s] : 0;
    return g->out.buf;
}

/* The box a chunk region shares with one selection, placed in its output. */
struct piece {
    uint8_t *base;                  /* the selection's output buffer */
    uint64_t dims[SL_MAX_RANK];     /* that buffer's shape */
    uint64_t shape[SL_MAX_RANK];    /* the box's extents */
    uint64_t in_chunk[SL_MAX_RANK]; /* its origin in the chunk buffer */
    uint64_t in_dest[SL_MAX_RANK];  /* its origin in the output buffer */
};

static bool
piece_of(const struct sl__batch_geom *g, const struct sl_region *chunk, size_t s, struct piece *pc)
{
    struct sl_region box;
    const struct sl_region *sel = &g->regions[s];
    if (!sl_region_intersect(chunk, sel, &box))
        return false;
    uint64_t origin[SL_MAX_RANK];
    pc->base = out_of(g, s, pc->dims, origin);
    for (uint32_t d = 0; d < chunk->rank; d++) {
        pc->shape[d] = box.stop[d] - box.start[d];
        pc->in_chunk[d] = box.start[d] - chunk->start[d];
        pc->in_dest[d] = origin[d] + box.start[d] - sel->start[d];
    }
    return true;
}

static void
chunk_region_of(const struct sl__batch_plan *p, size_t c, const struct sl__batch_geom *g,
                struct sl_region *out)
{
    uint64_t coords[SL_MAX_RANK];
    sl_grid_coords_of(g->grid, p->chunks[c].chunk, coords);
    sl_grid_chunk_region(g->grid, coords, out);
}

/* Offset in elements of `origin` in a C-order array of `dims`. */
static uint64_t
dest_offset(uint32_t rank, const uint64_t *dims, const uint64_t *origin)
{
    uint64_t off = 0;
    for (uint32_t d = 0; d < rank; d++)
        off = off * dims[d] + origin[d];
    return off;
}

/* True when a whole chunk of `shape` lies contiguously, in its own C order,
 * in an output of `dims`: every dimension after the first one of extent
 * above 1 spans the output's full width. */
static bool
dest_holds_contiguously(uint32_t rank, const uint64_t *shape, const uint64_t *dims)
{
    uint32_t k = 0;
    while (k < rank && shape[k] == 1)
        k++;
    for (uint32_t d = k + 1; d < rank; d++)
        if (shape[d] != dims[d])
            return false;
    return true;
}

uint8_t *
sl__batch_direct(const struct sl__batch_plan *p, size_t c, const struct sl__batch_geom *g,
                 size_t *sel)
{
    struct sl_region chunk;
    chunk_region_of(p, c, g, &chunk);
    uint32_t rank = chunk.rank;
    for (uint32_t d = 0; d < rank; d++)
        if (chunk.stop[d] - chunk.start[d] != g->chunk_shape[d])
            return NULL; /* an edge chunk: its padding has no place in any output */
    const struct sl__batch_chunk *ch = &p->chunks[c];
    for (size_t i = ch->first; i < ch->first + ch->n_sels; i++) {
        size_t s = p->sels[i];
        struct piece pc;
        if (!sl_region_contains(&g->regions[s], &chunk) || !piece_of(g, &chunk, s, &pc) ||
            !dest_holds_contiguously(rank, g->chunk_shape, pc.dims))
            continue;
        *sel = s;
        return pc.base + dest_offset(rank, pc.dims, pc.in_dest) * g->elem_bytes;
    }
    return NULL;
}

void
sl__batch_scatter(const struct sl__batch_plan *p, size_t c, const struct sl__batch_geom *g,
                  const uint8_t *data, size_t in_sel)
{
    struct sl_region chunk;
    chunk_region_of(p, c, g, &chunk);
    uint32_t rank = chunk.rank;
    const uint8_t *src = data;
    const uint64_t *src_dims = g->chunk_shape;
    uint64_t src_base[SL_MAX_RANK] = {0};
    struct piece whole;
    if (in_sel != SIZE_MAX && piece_of(g, &chunk, in_sel, &whole)) {
        /* The chunk was decoded into in_sel's output, where it starts here. */
        src = whole.base;
        src_dims = whole.dims;
        memcpy(src_base, whole.in_dest, rank * sizeof(uint64_t));
    }
    const struct sl__batch_chunk *ch = &p->chunks[c];
    for (size_t i = ch->first; i < ch->first + ch->n_sels; i++) {
        size_t s = p->sels[i];
        struct piece pc;
        if (s == in_sel || !piece_of(g, &chunk, s, &pc))
            continue;
        uint64_t src_origin[SL_MAX_RANK];
        for (uint32_t d = 0; d < rank; d++)
            src_origin[d] = src_base[d] + pc.in_chunk[d];
        sl__box_copy(&(struct sl__box){.base = pc.base, .dims = pc.dims, .origin = pc.in_dest},
                     &(struct sl__box){.base = (void *)src, .dims = src_dims, .origin = src_origin},
                     pc.shape, rank, g->elem_bytes);
    }
}

void
sl__batch_fill(const struct sl__batch_plan *p, size_t c, const struct sl__batch_geom *g)
{
    struct sl_region chunk;
    chunk_region_of(p, c, g, &chunk);
    const struct sl__batch_chunk *ch = &p->chunks[c];
    for (size_t i = ch->first; i < ch->first + ch->n_sels; i++) {
        struct piece pc;
        if (piece_of(g, &chunk, p->sels[i], &pc))
            sl__box_fill(&(struct sl__box){.base = pc.base, .dims = pc.dims, .origin = pc.in_dest},
                         pc.shape, chunk.rank, g->fill, g->elem_bytes);
    }
}
