/* SPDX-License-Identifier: MIT */
/*
 * Regions: per dimension a half-open range [start, stop) of element
 * coordinates.  A region is what a getter is asked for (a whole stored
 * chunk), what a blockwise function is told its block covers, and what a
 * selection reads.  Regions are plain values of fixed size.
 */
#ifndef SL_REGION_H
#define SL_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* [start[d], stop[d]) for d < rank; a region with any empty range is empty. */
struct sl_region {
    uint32_t rank;               /* number of dimensions, <= SL_MAX_RANK */
    uint64_t start[SL_MAX_RANK]; /* first element per dimension */
    uint64_t stop[SL_MAX_RANK];  /* one past the last element per dimension */
};

/**
 * Fill `r` from `rank` starts and stops.
 * @return SL_OK, SL_EUNSUPPORTED (rank above SL_MAX_RANK) or SL_EINVAL (a
 * start after its stop), naming the dimension and numbers.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_region_init(struct sl_region *r, uint32_t rank,
                                             const uint64_t *start, const uint64_t *stop,
                                             struct sl_error *err);

/**
 * The region [0, shape[d]) in every dimension; rank is clamped to SL_MAX_RANK.
 * Thread-safety: any thread.
 */
SL_API struct sl_region sl_region_whole(uint32_t rank, const uint64_t *shape);

/** stop - start in dimension `dim` (0 when dim >= rank).  Thread-safety: any thread. */
SL_API uint64_t sl_region_extent(const struct sl_region *r, uint32_t dim);

/** Write the per-dimension extents into `shape` (rank entries).  Thread-safety: any thread. */
SL_API void sl_region_shape(const struct sl_region *r, uint64_t *shape);

/**
 * True when some dimension has no elements (a rank-0 region is not empty).
 * Thread-safety: any thread.
 */
SL_API bool sl_region_is_empty(const struct sl_region *r);

/**
 * Number of elements.  @return SL_OK or SL_EOVERFLOW with the region in the
 * message.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_region_count(const struct sl_region *r, uint64_t *count,
                                              struct sl_error *err);

/**
 * Intersection of `a` and `b` (same rank) into `out`.
 * @return true when it holds at least one element (or both are rank 0).
 * Thread-safety: any thread.
 */
SL_API bool sl_region_intersect(const struct sl_region *a, const struct sl_region *b,
                                struct sl_region *out);

/** True when `inner` lies wholly inside `outer` (same rank).  Thread-safety: any thread. */
SL_API bool sl_region_contains(const struct sl_region *outer, const struct sl_region *inner);

/** True when the regions have the same rank, starts and stops.  Thread-safety: any thread. */
SL_API bool sl_region_equal(const struct sl_region *a, const struct sl_region *b);

/**
 * Check that `r` has `rank` dimensions and lies inside [0, shape).
 * @return SL_OK, or SL_EBOUNDS naming the region, the dimension and the
 * array's shape.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_region_check_within(const struct sl_region *r, uint32_t rank,
                                                     const uint64_t *shape, struct sl_error *err);

/**
 * Write the region as "[0:64, 128:192]" into `buf`.
 * @return the length the full text needs, as snprintf does.
 * Thread-safety: any thread.
 */
SL_API size_t sl_region_format(const struct sl_region *r, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* SL_REGION_H */
