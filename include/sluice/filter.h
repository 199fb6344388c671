/* SPDX-License-Identifier: MIT */
/*
 * Neighbourhood filters: each output element is a function of the input
 * elements around it (a Gaussian, a box mean, a median, a minimum or
 * maximum, a gradient magnitude, a Laplacian), as scipy.ndimage computes
 * them, with scipy.ndimage's boundary modes for the elements beyond the
 * array's edges.
 *
 * A kernel computes one output block from an input block that holds every
 * in-array element the output block's neighbourhoods reach: the output
 * region grown by the filter's halo (sl_filter_halo) and clipped to the
 * array, widened by what the mode maps there.  Elements beyond the array's
 * edges are made up from the ones inside by the boundary mode; for `wrap`
 * they come from the opposite edge, so the input block of an output block
 * whose halo crosses an edge must also hold the elements the wrap maps
 * there (sl_filter_input_region gives the one region that holds them all).
 * So a chunked array filtered block by block equals the whole array
 * filtered at once.
 *
 * Results are scipy.ndimage 1.10's: passes in axis order, intermediates
 * stored in the input's dtype, doubles truncated into integers as scipy's
 * C casts do on x86-64; bit-exact but for the cases ops/README.md lists
 * ("Where sluice differs from scipy"): minimum and maximum ignore NaN,
 * uniform keeps inf and NaN in the windows that hold them, and Gaussian
 * weights may differ from numpy's in the last bit.  Kernels allocate
 * nothing: all working memory is the caller's scratch.
 */
#ifndef SL_FILTER_H
#define SL_FILTER_H

#include <stddef.h>
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

/* What a filter computes at each element. */
typedef enum sl_filter_kind {
    SL_FILTER_GAUSSIAN,           /* scipy.ndimage.gaussian_filter (order 0) */
    SL_FILTER_UNIFORM,            /* scipy.ndimage.uniform_filter: the box mean */
    SL_FILTER_MEDIAN,             /* scipy.ndimage.median_filter over a box */
    SL_FILTER_MINIMUM,            /* scipy.ndimage.minimum_filter over a box */
    SL_FILTER_MAXIMUM,            /* scipy.ndimage.maximum_filter over a box */
    SL_FILTER_GRADIENT_MAGNITUDE, /* scipy.ndimage.gaussian_gradient_magnitude */
    SL_FILTER_LAPLACE             /* scipy.ndimage.laplace */
} sl_filter_kind;

/* How elements beyond an edge are made up (scipy.ndimage's `mode`). */
typedef enum sl_boundary {
    SL_BOUNDARY_REFLECT,  /* d c b a | a b c d | d c b a (scipy's default) */
    SL_BOUNDARY_NEAREST,  /* a a a a | a b c d | d d d d */
    SL_BOUNDARY_MIRROR,   /* d c b | a b c d | c b a */
    SL_BOUNDARY_CONSTANT, /* k k k k | a b c d | k k k k, k = cval */
    SL_BOUNDARY_WRAP      /* a b c d | a b c d | a b c d */
} sl_boundary;

/**
 * The kind's name: "gaussian", "uniform", "median", "minimum", "maximum",
 * "gradient_magnitude", "laplace"; "invalid" for a value outside the enum.
 * Thread-safety: any thread.
 */
SL_API const char *sl_filter_kind_name(sl_filter_kind k);

/**
 * Parse a kind name (as sl_filter_kind_name gives).
 * @return SL_OK, or SL_EINVAL naming the unknown name and listing the
 * known ones (or for a NULL argument).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_filter_kind_from_name(const char *name, sl_filter_kind *out,
                                                       struct sl_error *err);

/**
 * The mode's name, as scipy spells it: "reflect", "nearest", "mirror",
 * "constant", "wrap"; "invalid" for a value outside the enum.
 * Thread-safety: any thread.
 */
SL_API const char *sl_boundary_name(sl_boundary m);

/**
 * Parse a mode name (as sl_boundary_name gives).
 * @return SL_OK, or SL_EINVAL naming the unknown name and listing the
 * known ones (or for a NULL argument).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_boundary_from_name(const char *name, sl_boundary *out,
                                                    struct sl_error *err);

/* A filter's parameters; the fields its kind does not use are ignored. */
struct sl_filter_params {
    sl_filter_kind kind;
    uint32_t rank;              /* equals the views' rank */
    double sigma[SL_MAX_RANK];  /* gaussian, gradient_magnitude: per axis, >= 0; 0 leaves an
                                   axis alone */
    double truncate;            /* gaussian, gradient_magnitude: radius = (int)(truncate·sigma
                                   + 0.5), as scipy; 0 means 4.0 */
    uint64_t size[SL_MAX_RANK]; /* uniform, median, minimum, maximum: box extent per axis, >= 1 */
    sl_boundary mode;           /* the boundary mode */
    double cval;                /* the value beyond the edges for SL_BOUNDARY_CONSTANT */
};

/**
 * Check `p` for input of dtype `dt` and rank `rank`.
 * @return SL_OK; SL_EINVAL (rank mismatch, a negative or non-finite sigma,
 * a size of 0, an unknown kind or mode), SL_EUNSUPPORTED (dtype), naming
 * the filter, parameter, axis and value.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_filter_check(const struct sl_filter_params *p, sl_dtype dt,
                                              uint32_t rank, struct sl_error *err);

/**
 * The margin, per axis, an output element needs before (`lo`) and after
 * (`hi`) it.  `p` must have passed sl_filter_check.
 * Thread-safety: any thread.
 */
SL_API void sl_filter_halo(const struct sl_filter_params *p, uint64_t *lo, uint64_t *hi);

/**
 * The output dtype for input of dtype `dt`: the input's, as scipy.ndimage's
 * default `output`.
 * Thread-safety: any thread.
 */
SL_API sl_dtype sl_filter_out_dtype(const struct sl_filter_params *p, sl_dtype dt);

/**
 * The region of an array of `shape` the kernel needs for output region
 * `out`: per axis `out` grown by the halo and clipped to the array,
 * widened to hold what the mode maps beyond the edges (a `mirror` box of
 * even size reaches one element further at the low edge; an axis shorter
 * than the halo is taken whole), except that with SL_BOUNDARY_WRAP an
 * axis whose grown interval crosses an edge takes the array's whole
 * extent.  An empty `out` gives an empty region.
 * Thread-safety: any thread.
 */
SL_API void sl_filter_input_region(const struct sl_filter_params *p, const uint64_t *shape,
                                   const struct sl_region *out, struct sl_region *in);

/**
 * Scratch bytes sl_filter needs for an output block of `out_shape`
 * (p->rank entries) from input of dtype `dt`: it depends on the block's
 * shape and the halo only, never on the array or the block's position
 * (wrap included), a partial block never needs more than a whole one, and
 * any alignment will do, so one buffer per worker sized for the chunk
 * shape serves every block.  @return SL_OK, SL_EINVAL or SL_EUNSUPPORTED
 * (as sl_filter_check), or SL_EOVERFLOW.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_filter_scratch_bytes(const struct sl_filter_params *p, sl_dtype dt,
                                                      const uint64_t *out_shape, size_t *bytes,
                                                      struct sl_error *err);

/**
 * Filter: write `out`, the part of the filtered array of `shape` that starts
 * at `out_start`, from `in`, the part of the input array that starts at
 * `in_start` and holds sl_filter_input_region's region (or more).  Both
 * views may have any strides; `out` has the input's dtype
 * (sl_filter_out_dtype) and may not overlap `in`.  The input is read in
 * place unless the output's neighbourhoods cross an edge of the array.
 * @return SL_OK; SL_EINVAL (views of other dtypes or rank than `p` gives,
 * regions leaving `shape`, overlapping views, an input that lacks elements
 * the output needs, naming the axis and coordinates), SL_EUNSUPPORTED
 * (dtype, or an array extent above 2^62), SL_EOVERFLOW, or SL_ENOMEM when
 * `scratch` is NULL or smaller than sl_filter_scratch_bytes.  On failure
 * `out` is untouched.
 * Thread-safety: any thread, on distinct outputs and scratch.
 */
SL_API SL_NODISCARD sl_status sl_filter(const struct sl_filter_params *p, const uint64_t *shape,
                                        const struct sl_view *in, const uint64_t *in_start,
                                        const struct sl_view *out, const uint64_t *out_start,
                                        void *scratch, size_t scratch_bytes, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_FILTER_H */
