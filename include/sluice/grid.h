/* SPDX-License-Identifier: MIT */
/*
 * Chunk grids and their iterators.  A grid splits an array's shape into
 * chunks: regular (one chunk extent per dimension, as Zarr stores them; the
 * last chunk is clipped at the array edge) or irregular (per-dimension
 * boundaries, as selections produce).  Lookup of the chunk holding a
 * coordinate is O(1) in regular dimensions and O(log n) in irregular ones.
 *
 * Shards are chunks of a coarser grid: iterate a grid made with the shard
 * shape to walk shard coordinates and regions, and iterate the chunk grid
 * over a shard's region to walk its inner chunks.
 */
#ifndef SL_GRID_H
#define SL_GRID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/region.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A chunk grid over an array shape. */
struct sl_grid {
    uint32_t rank;                  /* number of dimensions, <= SL_MAX_RANK */
    uint64_t shape[SL_MAX_RANK];    /* array extent per dimension */
    uint64_t chunk[SL_MAX_RANK];    /* regular chunk extent; 0 in irregular dimensions */
    uint64_t n_chunks[SL_MAX_RANK]; /* chunks per dimension */
    uint64_t *bounds[SL_MAX_RANK];  /* irregular dimensions: n_chunks + 1 ascending
                                       boundaries from 0 to shape, owned; else NULL */
    uint64_t n_total;               /* product of n_chunks (1 for rank 0) */
    struct sl_allocator alloc;      /* frees `bounds` */
};

/**
 * Make a regular grid: chunk extent `chunk[d]` over `shape[d]`.  The grid
 * allocates nothing; sl_grid_fini is still allowed.
 * @return SL_OK; SL_EUNSUPPORTED for rank above SL_MAX_RANK; SL_EINVAL for a
 * zero chunk extent; SL_EOVERFLOW when the chunk count or one chunk's
 * element count exceeds 2^64 - 1.  Messages name the dimension and numbers.
 * Thread-safety: any thread; one at a time per grid made.
 */
SL_API SL_NODISCARD sl_status sl_grid_init_regular(struct sl_grid *g, uint32_t rank,
                                                   const uint64_t *shape, const uint64_t *chunk,
                                                   struct sl_error *err);

/**
 * Make a grid with explicit boundaries.  For each dimension d, `bounds[d]`
 * holds `n_chunks[d] + 1` strictly ascending values starting at 0; the last
 * one is the array's extent.  A dimension whose boundaries are evenly spaced
 * (but for a shorter last chunk) is stored as regular.  Copies the
 * boundaries with `alloc` (NULL for the default).
 * @return SL_OK, SL_ENOMEM, SL_EUNSUPPORTED (rank), SL_EINVAL (boundaries
 * not starting at 0 or not ascending, naming dimension and index) or
 * SL_EOVERFLOW.  On failure nothing needs releasing.
 * Thread-safety: any thread; one at a time per grid made.
 */
SL_API SL_NODISCARD sl_status sl_grid_init_bounds(struct sl_grid *g,
                                                  const struct sl_allocator *alloc, uint32_t rank,
                                                  const uint64_t *n_chunks,
                                                  const uint64_t *const *bounds,
                                                  struct sl_error *err);

/**
 * Deep copy `src` into `dst` with `alloc` (NULL for the default).
 * @return SL_OK or SL_ENOMEM; on failure nothing needs releasing.
 * Thread-safety: any thread; one at a time per grid made.
 */
SL_API SL_NODISCARD sl_status sl_grid_copy(struct sl_grid *dst, const struct sl_grid *src,
                                           const struct sl_allocator *alloc, struct sl_error *err);

/**
 * Release what the grid owns.  Safe on a zeroed or regular grid.
 * Thread-safety: one thread, once nothing reads the grid.
 */
SL_API void sl_grid_fini(struct sl_grid *g);

/** True when every dimension is regular.  Thread-safety: any thread. */
SL_API bool sl_grid_is_regular(const struct sl_grid *g);

/**
 * True when both grids have the same shape and the same chunk boundaries.
 * Thread-safety: any thread.
 */
SL_API bool sl_grid_equal(const struct sl_grid *a, const struct sl_grid *b);

/**
 * Index of the chunk holding coordinate `pos` (< shape[dim]) in `dim`.
 * Thread-safety: any thread.
 */
SL_API uint64_t sl_grid_chunk_at(const struct sl_grid *g, uint32_t dim, uint64_t pos);

/**
 * First coordinate of chunk `i` in `dim`; i == n_chunks[dim] gives shape[dim].
 * Thread-safety: any thread.
 */
SL_API uint64_t sl_grid_chunk_start(const struct sl_grid *g, uint32_t dim, uint64_t i);

/**
 * Extent of the largest chunk in `dim` (clipped at the array edge; 0 for an
 * empty dimension).
 * Thread-safety: any thread.
 */
SL_API uint64_t sl_grid_max_chunk(const struct sl_grid *g, uint32_t dim);

/** Region of the chunk at `coords`, clipped at the array edge.  Thread-safety: any thread. */
SL_API void sl_grid_chunk_region(const struct sl_grid *g, const uint64_t *coords,
                                 struct sl_region *out);

/**
 * Range of chunk coordinates [lo, hi) per dimension of the chunks that meet
 * `region` (which must lie inside the array).  @return false when no chunk
 * does (the region is empty).
 * Thread-safety: any thread.
 */
SL_API bool sl_grid_chunks_meeting(const struct sl_grid *g, const struct sl_region *region,
                                   struct sl_region *coord_range);

/** C-order linear index of chunk `coords` (< n_total).  Thread-safety: any thread. */
SL_API uint64_t sl_grid_linear_index(const struct sl_grid *g, const uint64_t *coords);

/** Chunk coordinates of C-order linear index `index` (< n_total).  Thread-safety: any thread. */
SL_API void sl_grid_coords_of(const struct sl_grid *g, uint64_t index, uint64_t *coords);

/*
 * Iterator over the chunks meeting a selection, in C order (last dimension
 * fastest).  Use it as
 *
 *     struct sl_grid_iter it;
 *     sl_grid_iter_init(&it, &grid, NULL);
 *     while (sl_grid_iter_next(&it))
 *         use(it.coords, &it.chunk, &it.part);
 *
 * The grid is borrowed and must outlive the iterator.
 */
struct sl_grid_iter {
    const struct sl_grid *grid;   /* borrowed */
    struct sl_region sel;         /* selection, array coordinates */
    struct sl_region range;       /* chunk coordinates met, [lo, hi) per dimension */
    uint64_t coords[SL_MAX_RANK]; /* current chunk's coordinates */
    struct sl_region chunk;       /* current chunk's region, clipped at the array edge */
    struct sl_region part;        /* chunk ∩ selection, array coordinates */
    uint64_t n_done;              /* chunks visited so far, the current one included */
    uint64_t n_total;             /* chunks the iteration visits */
    bool started;                 /* next() has been called */
    bool done;                    /* no more chunks */
};

/**
 * Start iterating the chunks of `g` that meet `sel` (the whole array when
 * NULL).  `sel` must lie inside the array; use sl_grid_iter_init_at for
 * untrusted selections.
 * Thread-safety: one thread per iterator at a time.
 */
SL_API void sl_grid_iter_init(struct sl_grid_iter *it, const struct sl_grid *g,
                              const struct sl_region *sel);

/**
 * Start iterating the chunks that meet the selection of shape `sel_shape`
 * at `origin` (each `g->rank` long).
 * @return SL_OK, or SL_EBOUNDS naming the selection and the array's shape
 * when it does not lie inside the array (SL_EOVERFLOW if origin + shape
 * overflows).
 * Thread-safety: one thread per iterator at a time.
 */
SL_API SL_NODISCARD sl_status sl_grid_iter_init_at(struct sl_grid_iter *it, const struct sl_grid *g,
                                                   const uint64_t *origin,
                                                   const uint64_t *sel_shape, struct sl_error *err);

/**
 * Advance to the next chunk.  @return false when there is none.
 * Thread-safety: one thread per iterator at a time.
 */
SL_API bool sl_grid_iter_next(struct sl_grid_iter *it);

#ifdef __cplusplus
}
#endif

#endif /* SL_GRID_H */
