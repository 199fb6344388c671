/* SPDX-License-Identifier: MIT */
/*
 * Blocks: a chunk (or any n-d piece of an array) in memory — its dtype,
 * shape, byte strides and data, where it lies in its array and its chunk
 * coordinates.  Blockwise functions, getters and putters receive blocks;
 * kernels read and write them through their strides, so a view of part of a
 * chunk costs nothing.
 */
#ifndef SL_BLOCK_H
#define SL_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/region.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An n-d strided array of elements, and where it lies in its array. */
struct sl_block {
    sl_dtype dtype;               /* element type */
    uint32_t rank;                /* number of dimensions */
    uint64_t shape[SL_MAX_RANK];  /* elements per dimension */
    int64_t strides[SL_MAX_RANK]; /* bytes between neighbours per dimension */
    void *data;                   /* the element at index (0, ..., 0); borrowed */
    struct sl_region region;      /* the elements' place in the array */
    struct sl_chunk_key chunk;    /* chunk coordinates in the grid it came from */
};

/**
 * Describe `data` as a C-order contiguous block of `shape` (rank entries),
 * lying at `region` (NULL: [0, shape)).  Leaves `chunk` at rank 0.
 */
SL_API void sl_block_init(struct sl_block *b, sl_dtype dtype, uint32_t rank, const uint64_t *shape,
                          void *data, const struct sl_region *region);

/** Number of elements (product of shape; the caller has checked it fits). */
SL_API uint64_t sl_block_count(const struct sl_block *b);

/** True when the elements are C-order contiguous. */
SL_API bool sl_block_is_contiguous(const struct sl_block *b);

/**
 * A view of the part of `b` covering `sub` (array coordinates, inside
 * `b->region`); shares `b`'s data.
 * @return SL_OK or SL_EBOUNDS naming both regions.
 */
SL_API SL_NODISCARD sl_status sl_block_view(const struct sl_block *b, const struct sl_region *sub,
                                            struct sl_block *out, struct sl_error *err);

/**
 * Copy the elements of `src` into `dst` (same dtype and shape; any strides).
 * @return SL_OK or SL_EINVAL naming the mismatch.
 */
SL_API SL_NODISCARD sl_status sl_block_copy(struct sl_block *dst, const struct sl_block *src,
                                            struct sl_error *err);

/** Set every element of `b` to the `sl_dtype_size(b->dtype)` bytes at `value`. */
SL_API void sl_block_fill(struct sl_block *b, const void *value);

#ifdef __cplusplus
}
#endif

#endif /* SL_BLOCK_H */
