/* SPDX-License-Identifier: MIT */
/*
 * Blocks: a chunk (or any n-d piece of an array) in memory — a view of its
 * elements plus where it lies in its array and its chunk coordinates.
 * Getters, blockwise functions and putters receive blocks; kernels work on
 * their views, so taking part of a chunk costs nothing.
 */
#ifndef SL_BLOCK_H
#define SL_BLOCK_H

#include <stdint.h>

#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/region.h>
#include <sluice/status.h>
#include <sluice/view.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Elements in memory and their place in an array. */
struct sl_block {
    struct sl_view view;       /* the elements (strides in elements) */
    struct sl_region region;   /* their place in the array; extents equal view.shape */
    struct sl_chunk_key chunk; /* chunk coordinates in the grid it came from; rank 0 if none */
};

/**
 * Describe `data` as a C-order contiguous block of `shape` (rank entries)
 * lying at `region` in its array (NULL: at [0, shape)); `chunk` is left at
 * rank 0.
 * @return SL_OK; SL_EINVAL, SL_EUNSUPPORTED or SL_EOVERFLOW as
 * sl_view_init; SL_EINVAL when `region`'s extents differ from `shape`.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_block_init(struct sl_block *b, sl_dtype dtype, uint32_t rank,
                                            const uint64_t *shape, void *data,
                                            const struct sl_region *region, struct sl_error *err);

/**
 * The part of `b` covering `sub` (array coordinates, inside `b->region`),
 * sharing `b`'s memory; `chunk` is kept.
 * @return SL_OK or SL_EBOUNDS naming both regions.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_block_slice(const struct sl_block *b, const struct sl_region *sub,
                                             struct sl_block *out, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_BLOCK_H */
