/* SPDX-License-Identifier: MIT */
/*
 * Chunk grids (regular and with explicit boundaries), chunk lookup, linear
 * indexing and the C-order iterator over the chunks meeting a selection.
 *
 * DESIGN: a grid keeps per-dimension either a chunk extent (regular, O(1)
 * lookup) or a boundary array (O(log n) lookup).  Irregular grids whose
 * boundaries turn out to be evenly spaced are stored as regular, so a
 * selection aligned to stored chunks gets the fast path and compares equal
 * to the stored grid.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/grid.h>

#include "core_internal.h"

/* Set n_total from n_chunks, or fail with the chunk counts in the message. */
static sl_status
grid_count_chunks(struct sl_grid *g, struct sl_error *err)
{
    uint64_t total = 1;
    for (uint32_t d = 0; d < g->rank; d++) {
        if (g->n_chunks[d] == 0) {
            total = 0;
            break;
        }
    }
    for (uint32_t d = 0; d < g->rank && total != 0; d++) {
        if (!sl_u64_mul_fits(total, g->n_chunks[d], &total)) {
            char counts[128];
            sl_shape_format(g->rank, g->n_chunks, counts, sizeof(counts));
            return sl_error_set(err, SL_EOVERFLOW, NULL,
                                "chunk grid %s has more than %" PRIu64 " chunks", counts,
                                UINT64_MAX);
        }
    }
    g->n_total = total;
    return SL_OK;
}

sl_status
sl_grid_init_regular(struct sl_grid *g, uint32_t rank, const uint64_t *shape, const uint64_t *chunk,
                     struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "rank %" PRIu32 " exceeds the maximum of %d", rank, SL_MAX_RANK);
    struct sl_grid tmp = {.rank = rank, .alloc = sl_allocator_default()};
    for (uint32_t d = 0; d < rank; d++) {
        if (chunk[d] == 0)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "chunk extent is 0 in dimension %" PRIu32 " (array extent %" PRIu64
                                ")",
                                d, shape[d]);
        tmp.shape[d] = shape[d];
        tmp.chunk[d] = chunk[d];
        tmp.n_chunks[d] = shape[d] / chunk[d] + (shape[d] % chunk[d] != 0);
    }
    uint64_t per_chunk;
    SL_TRY(sl_shape_count(rank, chunk, &per_chunk, err));
    SL_TRY(grid_count_chunks(&tmp, err));
    *g = tmp;
    return SL_OK;
}

/* Check one dimension's boundaries; set *regular_chunk when evenly spaced. */
static sl_status
grid_check_bounds(uint32_t dim, uint64_t n, const uint64_t *b, uint64_t *regular_chunk,
                  struct sl_error *err)
{
    if (b == NULL || b[0] != 0)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "dimension %" PRIu32 ": chunk boundaries must start at 0", dim);
    uint64_t first = n > 0 ? b[1] - b[0] : 1;
    bool even = true;
    for (uint64_t i = 0; i < n; i++) {
        if (b[i + 1] <= b[i])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "dimension %" PRIu32 ": chunk boundary %" PRIu64 " (%" PRIu64
                                ") is not above the previous one (%" PRIu64 ")",
                                dim, i + 1, b[i + 1], b[i]);
        uint64_t size = b[i + 1] - b[i];
        if (size != first && !(i + 1 == n && size < first))
            even = false;
    }
    *regular_chunk = even ? first : 0;
    return SL_OK;
}

sl_status
sl_grid_init_bounds(struct sl_grid *g, const struct sl_allocator *alloc, uint32_t rank,
                    const uint64_t *n_chunks, const uint64_t *const *bounds, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "rank %" PRIu32 " exceeds the maximum of %d", rank, SL_MAX_RANK);
    struct sl_grid tmp = {.rank = rank, .alloc = alloc != NULL ? *alloc : sl_allocator_default()};
    for (uint32_t d = 0; d < rank; d++) {
        uint64_t chunk = 0;
        SL_TRY(grid_check_bounds(d, n_chunks[d], bounds[d], &chunk, err));
        tmp.shape[d] = bounds[d][n_chunks[d]];
        tmp.n_chunks[d] = n_chunks[d];
        tmp.chunk[d] = chunk;
    }
    SL_TRY(grid_count_chunks(&tmp, err));
    for (uint32_t d = 0; d < rank; d++) {
        if (tmp.chunk[d] != 0)
            continue;
        size_t count = (size_t)n_chunks[d] + 1;
        tmp.bounds[d] = sl_alloc_zeroed(&tmp.alloc, count, sizeof(uint64_t), 0);
        if (tmp.bounds[d] == NULL || count != n_chunks[d] + 1) {
            sl_grid_fini(&tmp);
            return sl_error_set(err, SL_ENOMEM, NULL,
                                "no memory for %" PRIu64 " chunk boundaries of dimension %" PRIu32,
                                n_chunks[d] + 1, d);
        }
        memcpy(tmp.bounds[d], bounds[d], count * sizeof(uint64_t));
    }
    *g = tmp;
    return SL_OK;
}

sl_status
sl_grid_copy(struct sl_grid *dst, const struct sl_grid *src, const struct sl_allocator *alloc,
             struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    /* Regular dimensions are copied as they are, in O(1): a grid of 2^40
     * chunks copies without materializing a boundary per chunk. */
    struct sl_grid tmp = *src;
    tmp.alloc = alloc != NULL ? *alloc : sl_allocator_default();
    for (uint32_t d = 0; d < SL_MAX_RANK; d++)
        tmp.bounds[d] = NULL;
    for (uint32_t d = 0; d < src->rank; d++) {
        if (src->bounds[d] == NULL)
            continue;
        size_t count = (size_t)src->n_chunks[d] + 1;
        tmp.bounds[d] = sl_alloc_zeroed(&tmp.alloc, count, sizeof(uint64_t), 0);
        if (tmp.bounds[d] == NULL) {
            sl_grid_fini(&tmp);
            return sl_error_set(err, SL_ENOMEM, NULL, "no memory to copy a chunk grid");
        }
        memcpy(tmp.bounds[d], src->bounds[d], count * sizeof(uint64_t));
    }
    *dst = tmp;
    return SL_OK;
}

void
sl_grid_fini(struct sl_grid *g)
{
    if (g == NULL)
        return;
    for (uint32_t d = 0; d < g->rank && d < SL_MAX_RANK; d++) {
        if (g->bounds[d] != NULL)
            sl_free(&g->alloc, g->bounds[d], ((size_t)g->n_chunks[d] + 1) * sizeof(uint64_t));
        g->bounds[d] = NULL;
    }
}

bool
sl_grid_is_regular(const struct sl_grid *g)
{
    for (uint32_t d = 0; d < g->rank; d++)
        if (g->bounds[d] != NULL)
            return false;
    return true;
}

bool
sl_grid_equal(const struct sl_grid *a, const struct sl_grid *b)
{
    if (a->rank != b->rank)
        return false;
    for (uint32_t d = 0; d < a->rank; d++) {
        if (a->shape[d] != b->shape[d] || a->n_chunks[d] != b->n_chunks[d])
            return false;
        if (a->bounds[d] == NULL && b->bounds[d] == NULL) {
            if (a->chunk[d] != b->chunk[d] && a->n_chunks[d] > 1)
                return false;
            continue;
        }
        for (uint64_t i = 0; i <= a->n_chunks[d]; i++)
            if (sl_grid_chunk_start(a, d, i) != sl_grid_chunk_start(b, d, i))
                return false;
    }
    return true;
}

uint64_t
sl_grid_chunk_at(const struct sl_grid *g, uint32_t dim, uint64_t pos)
{
    if (g->bounds[dim] == NULL)
        return pos / g->chunk[dim];
    /* Last boundary <= pos: binary search over [0, n_chunks). */
    const uint64_t *b = g->bounds[dim];
    uint64_t lo = 0, hi = g->n_chunks[dim];
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (b[mid] <= pos)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

uint64_t
sl_grid_chunk_start(const struct sl_grid *g, uint32_t dim, uint64_t i)
{
    if (g->bounds[dim] != NULL)
        return g->bounds[dim][i];
    if (i >= g->n_chunks[dim])
        return g->shape[dim];
    return i * g->chunk[dim];
}

uint64_t
sl_grid_max_chunk(const struct sl_grid *g, uint32_t dim)
{
    if (g->bounds[dim] == NULL)
        return g->chunk[dim] < g->shape[dim] ? g->chunk[dim] : g->shape[dim];
    uint64_t best = 0;
    for (uint64_t k = 0; k < g->n_chunks[dim]; k++) {
        uint64_t e = g->bounds[dim][k + 1] - g->bounds[dim][k];
        best = e > best ? e : best;
    }
    return best;
}

void
sl_grid_chunk_region(const struct sl_grid *g, const uint64_t *coords, struct sl_region *out)
{
    out->rank = g->rank;
    for (uint32_t d = 0; d < g->rank; d++) {
        out->start[d] = sl_grid_chunk_start(g, d, coords[d]);
        out->stop[d] = sl_grid_chunk_start(g, d, coords[d] + 1);
    }
}

bool
sl_grid_chunks_meeting(const struct sl_grid *g, const struct sl_region *region,
                       struct sl_region *range)
{
    range->rank = g->rank;
    bool nonempty = true;
    for (uint32_t d = 0; d < g->rank; d++) {
        if (region->stop[d] <= region->start[d] || region->start[d] >= g->shape[d]) {
            range->start[d] = range->stop[d] = 0;
            nonempty = false;
            continue;
        }
        uint64_t last = region->stop[d] > g->shape[d] ? g->shape[d] - 1 : region->stop[d] - 1;
        range->start[d] = sl_grid_chunk_at(g, d, region->start[d]);
        range->stop[d] = sl_grid_chunk_at(g, d, last) + 1;
    }
    return nonempty;
}

uint64_t
sl_grid_linear_index(const struct sl_grid *g, const uint64_t *coords)
{
    uint64_t index = 0;
    for (uint32_t d = 0; d < g->rank; d++)
        index = index * g->n_chunks[d] + coords[d];
    return index;
}

void
sl_grid_coords_of(const struct sl_grid *g, uint64_t index, uint64_t *coords)
{
    for (uint32_t d = g->rank; d-- > 0;) {
        coords[d] = index % g->n_chunks[d];
        index /= g->n_chunks[d];
    }
}

void
sl_grid_iter_init(struct sl_grid_iter *it, const struct sl_grid *g, const struct sl_region *sel)
{
    memset(it, 0, sizeof(*it));
    it->grid = g;
    it->sel = sel != NULL ? *sel : sl_region_whole(g->rank, g->shape);
    bool any = sl_grid_chunks_meeting(g, &it->sel, &it->range);
    it->n_total = 0;
    if (any) {
        it->n_total = 1;
        for (uint32_t d = 0; d < g->rank; d++)
            it->n_total *= it->range.stop[d] - it->range.start[d];
    }
    it->done = !any;
}

sl_status
sl_grid_iter_init_at(struct sl_grid_iter *it, const struct sl_grid *g, const uint64_t *origin,
                     const uint64_t *sel_shape, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_region sel = {.rank = g->rank};
    for (uint32_t d = 0; d < g->rank; d++) {
        sel.start[d] = origin[d];
        if (!sl_u64_add_fits(origin[d], sel_shape[d], &sel.stop[d]))
            return sl_error_set(err, SL_EOVERFLOW, NULL,
                                "selection origin %" PRIu64 " + extent %" PRIu64
                                " overflows in dimension %" PRIu32,
                                origin[d], sel_shape[d], d);
    }
    SL_TRY(sl_region_check_within(&sel, g->rank, g->shape, err));
    sl_grid_iter_init(it, g, &sel);
    return SL_OK;
}

/* Refresh the current chunk's region and its part of the selection in
 * dimensions [from, rank): the C-order step changes only those. */
static void
grid_iter_fill(struct sl_grid_iter *it, uint32_t from)
{
    const struct sl_grid *g = it->grid;
    for (uint32_t d = from; d < g->rank; d++) {
        uint64_t lo = sl_grid_chunk_start(g, d, it->coords[d]);
        uint64_t hi = sl_grid_chunk_start(g, d, it->coords[d] + 1);
        it->chunk.start[d] = lo;
        it->chunk.stop[d] = hi;
        it->part.start[d] = lo > it->sel.start[d] ? lo : it->sel.start[d];
        it->part.stop[d] = hi < it->sel.stop[d] ? hi : it->sel.stop[d];
    }
    it->n_done++;
}

bool
sl_grid_iter_next(struct sl_grid_iter *it)
{
    if (it->done)
        return false;
    if (!it->started) {
        it->started = true;
        it->chunk.rank = it->part.rank = it->grid->rank;
        for (uint32_t d = 0; d < it->grid->rank; d++)
            it->coords[d] = it->range.start[d];
        grid_iter_fill(it, 0);
        return true;
    }
    for (uint32_t d = it->grid->rank; d-- > 0;) {
        if (++it->coords[d] < it->range.stop[d]) {
            grid_iter_fill(it, d);
            return true;
        }
        it->coords[d] = it->range.start[d];
    }
    it->done = true;
    return false;
}
