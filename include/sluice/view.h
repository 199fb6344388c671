/* SPDX-License-Identifier: MIT */
/*
 * Views: strided n-d arrays of elements in memory.  Kernels read and write
 * views; blocks (<sluice/block.h>) are views that also know where they lie
 * in their array.  Taking a view of part of another costs nothing.
 */
#ifndef SL_VIEW_H
#define SL_VIEW_H

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
/* ------------------------------------------------------------------------ */

/*
 * A strided n-d view of elements in memory: element (i0, ..., ik) lives at
 * `(T *)data + i0 * stride[0] + ... + ik * stride[k]`.  Strides count
 * elements, not bytes, so every element is naturally aligned; they may be
 * zero (broadcast) or negative.  A view borrows its memory.  Kernels read
 * their input view and write every element of their output view, nothing
 * else.
 */
struct sl_view {
    sl_dtype dtype;              /* element type */
    uint32_t rank;               /* number of dimensions, <= SL_MAX_RANK */
    uint64_t shape[SL_MAX_RANK]; /* extent per dimension */
    int64_t stride[SL_MAX_RANK]; /* elements between neighbours along each dimension */
    void *data;                  /* the element at index (0, ..., 0); borrowed */
};

/**
 * Make `v` a C-order (last dimension fastest) contiguous view of `data`.
 * @return SL_OK; SL_EINVAL (`v` NULL, `shape` NULL with rank > 0, invalid
 * dtype, or `data` NULL for a non-empty shape); SL_EUNSUPPORTED (rank above
 * SL_MAX_RANK); SL_EOVERFLOW (the byte size does not fit in size_t).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_view_init(struct sl_view *v, sl_dtype dtype, uint32_t rank,
                                           const uint64_t *shape, void *data, struct sl_error *err);

/**
 * Check that `v` is usable by the kernels: valid dtype and rank, `data` set
 * when the view has elements, element count within 2^64 - 1, and every
 * element's byte offset within PTRDIFF_MAX.
 * @return SL_OK, SL_EINVAL, SL_EUNSUPPORTED (rank) or SL_EOVERFLOW, naming
 * the dimension and the numbers.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_view_check(const struct sl_view *v, struct sl_error *err);

/**
 * True when `v` is C-order contiguous (extent-1 dimensions may have any stride).
 * Thread-safety: any thread.
 */
SL_API bool sl_view_is_contiguous(const struct sl_view *v);

/**
 * Make `out` the part of `v` covered by `region` (same rank; the region's
 * coordinates are indices into `v`).  `out` may be `v`.
 * @return SL_OK, SL_EINVAL (rank mismatch) or SL_EBOUNDS (the region leaves
 * the view), naming the region and the view's shape.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_view_slice(const struct sl_view *v, const struct sl_region *region,
                                            struct sl_view *out, struct sl_error *err);

/**
 * Copy every element of `src` into `dst`: same dtype (any dtype, float16 and
 * complex included) and same shape; the views must not overlap.
 * @return SL_OK or SL_EINVAL (dtype, rank or shape mismatch, overlap),
 * naming both.
 * Thread-safety: any thread, on distinct destination views.
 */
SL_API SL_NODISCARD sl_status sl_view_copy(const struct sl_view *dst, const struct sl_view *src,
                                           struct sl_error *err);

/** Number of elements of a checked view (the product of its shape).  Thread-safety: any thread. */
SL_API uint64_t sl_view_count(const struct sl_view *v);

/**
 * Set every element of `v` to the `sl_dtype_size(v->dtype)` bytes at
 * `value` (one element, native byte order).  @return SL_OK, or SL_EINVAL,
 * SL_EUNSUPPORTED or SL_EOVERFLOW as sl_view_check.
 * Thread-safety: any thread, on distinct destination views.
 */
SL_API SL_NODISCARD sl_status sl_view_fill(const struct sl_view *v, const void *value,
                                           struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_VIEW_H */
