/* SPDX-License-Identifier: MIT */
/*
 * Per-chunk kernels: downsampling (stride, mean, min, max, median, mode with
 * TensorStore's edge semantics), elementwise cast, scale, clip and threshold,
 * and a registry that names them for graph files (<sluice/op_registry.h>).
 * Kernels are pure: they start no threads, do no I/O and allocate nothing;
 * the two that need scratch memory (median, mode) take it from the caller,
 * sized by sl_downsample_scratch_bytes().  ops/README.md gives the exact semantics
 * (edges, rounding, NaN, ties) and the cast rules.
 *
 * Blocks are passed as `struct sl_view` (core's strided n-d view, see
 * <sluice/view.h>): a dtype, a shape, strides counted in elements, and a
 * pointer to the first element.
 * Thread-safety: every function here may run on any number of threads at
 * once, on distinct output views.
 */
#ifndef SL_OPS_H
#define SL_OPS_H

#include <stdbool.h>
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

/* ------------------------------------------------------------------------ */
/* Downsampling                                                             */
/* ------------------------------------------------------------------------ */

/*
 * Downsampling methods, as TensorStore's downsample driver names them.
 * Output element o covers the input block [o * f, (o + 1) * f) per
 * dimension, clipped at the input's edge.  stride: the block's first
 * element (any dtype).  mean: the average of the in-bounds elements
 * (integers exact, rounded half to even; bool: the majority, ties false;
 * floats: NaN propagates).  min, max: NaN ignored unless the whole block is
 * NaN.  median: the lower median of the non-NaN elements.  mode: the most
 * frequent non-NaN value, ties toward the lowest.  Floats order -0.0 before
 * +0.0.
 */
/* clang-format off */
#define SL_DOWNSAMPLE_METHOD_MAP(X) \
    X(STRIDE, "stride")             \
    X(MEAN,   "mean")               \
    X(MIN,    "min")                \
    X(MAX,    "max")                \
    X(MEDIAN, "median")             \
    X(MODE,   "mode")
/* clang-format on */

typedef enum sl_downsample_method {
#define SL_DOWNSAMPLE_METHOD_ENUM_(NAME, str) SL_DOWNSAMPLE_##NAME,
    SL_DOWNSAMPLE_METHOD_MAP(SL_DOWNSAMPLE_METHOD_ENUM_) /* SL_DOWNSAMPLE_STRIDE, ... */
#undef SL_DOWNSAMPLE_METHOD_ENUM_
    SL_DOWNSAMPLE_METHOD_COUNT_
} sl_downsample_method;

/**
 * The method's name ("mean"); "invalid" for a value outside the enum.
 * Thread-safety: any thread.
 */
SL_API const char *sl_downsample_method_name(sl_downsample_method m);

/**
 * Parse a method name.  @return SL_OK, or SL_EINVAL naming the unknown
 * name and listing the known ones.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_downsample_method_from_name(const char *name,
                                                             sl_downsample_method *out,
                                                             struct sl_error *err);

/**
 * True when method `m` is defined for dtype `dt` (stride: every dtype; the
 * others: bool, integers, float32, float64).
 * Thread-safety: any thread.
 */
SL_API bool sl_downsample_supports(sl_downsample_method m, sl_dtype dt);

/* What to downsample by, and how. */
struct sl_downsample_params {
    sl_downsample_method method;  /* how a block becomes one element */
    uint32_t rank;                /* number of factors; equals the views' rank */
    uint64_t factor[SL_MAX_RANK]; /* block extent per dimension, >= 1 (1 keeps it) */
};

/**
 * Check `p` for input of dtype `dt` and rank `rank`.
 * @return SL_OK; SL_EINVAL (rank mismatch, a factor of 0, an invalid
 * method), SL_EUNSUPPORTED (method not defined for the dtype), naming the
 * dimension, method, dtype and values.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_downsample_check(const struct sl_downsample_params *p, sl_dtype dt,
                                                  uint32_t rank, struct sl_error *err);

/**
 * Output shape for `in_shape` (p->rank entries): ceil(in_shape[d] / f[d]).
 * `p` must have passed sl_downsample_check.
 * Thread-safety: any thread.
 */
SL_API void sl_downsample_shape(const struct sl_downsample_params *p, const uint64_t *in_shape,
                                uint64_t *out_shape);

/**
 * The chunk shape a downsample node should compute in, for input chunks
 * `in_chunk` and output chunks `out_chunk` (p->rank entries each): per
 * dimension in_chunk / f where f divides in_chunk and the quotient divides
 * out_chunk, so that each computed chunk reads exactly one input chunk (the
 * graph then fuses the reduction with that chunk's read and decode, while
 * it is in cache, and frees it at once; a cheap copy gathers the pieces into
 * output chunks), else out_chunk.  `p` must have passed
 * sl_downsample_check.
 * Thread-safety: any thread.
 */
SL_API void sl_downsample_chunks(const struct sl_downsample_params *p, const uint64_t *in_chunk,
                                 const uint64_t *out_chunk, uint64_t *chunk);

/**
 * The input region an output region depends on: [start * f, stop * f) per
 * dimension, clipped to `in_shape`.  This is the block a caller hands to
 * sl_downsample() to compute `out_region`.
 * @return SL_OK, or SL_EBOUNDS when `out_region` leaves the output shape of
 * `in_shape` (naming both), SL_EINVAL on a rank mismatch.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_downsample_input_region(const struct sl_downsample_params *p,
                                                         const uint64_t *in_shape,
                                                         const struct sl_region *out_region,
                                                         struct sl_region *in_region,
                                                         struct sl_error *err);

/**
 * Scratch bytes sl_downsample() needs for `p` on dtype `dt`: 0 for stride,
 * mean, min and max; for median and mode, room for one block's elements
 * (the product of the factors, each capped by `in_shape[d]` when
 * `in_shape` is not NULL) plus alignment slack.  The scratch may be reused
 * for every call with blocks no larger than that.
 * @return SL_OK, SL_EINVAL/SL_EUNSUPPORTED as sl_downsample_check, or
 * SL_EOVERFLOW when the size does not fit in size_t.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_downsample_scratch_bytes(const struct sl_downsample_params *p,
                                                          sl_dtype dt, const uint64_t *in_shape,
                                                          size_t *bytes, struct sl_error *err);

/**
 * Downsample the block `in` into `out`.  `in` is the input region that
 * corresponds to `out`'s region times the factors, clipped at the array's
 * edge (sl_downsample_input_region), so its blocks start at multiples of
 * the factors and only the last block per dimension may be partial.  `out`
 * has `in`'s dtype and rank and shape ceil(in.shape / factor); any strides.
 * `scratch` (`scratch_bytes` long, any alignment) is needed by median and
 * mode only; NULL otherwise.  The views must not overlap.
 * @return SL_OK; SL_EINVAL (bad params, mismatched views, too little
 * scratch, overlap); SL_EUNSUPPORTED (method not defined for the dtype);
 * SL_EOVERFLOW (a view too large to address).  Messages name the method,
 * dtype, dimension and numbers.  On failure `out` is untouched.
 * Thread-safety: any thread, on distinct output views and scratch.
 */
SL_API SL_NODISCARD sl_status sl_downsample(const struct sl_downsample_params *p,
                                            const struct sl_view *in, const struct sl_view *out,
                                            void *scratch, size_t scratch_bytes,
                                            struct sl_error *err);

/* ------------------------------------------------------------------------ */
/* Elementwise kernels                                                      */
/* ------------------------------------------------------------------------ */

/*
 * Each elementwise kernel reads `in` and writes `out` of the same shape; the
 * dtypes may differ and are any of bool, int8…int64, uint8…uint64, float32,
 * float64 (float16 and complex are refused with SL_EUNSUPPORTED).  The
 * result is converted to `out`'s dtype by the cast rules: to integers,
 * round half to even and saturate at the type's range, NaN becomes 0; to
 * bool, nonzero (NaN included) becomes true; to floats, round to nearest
 * (overflow gives ±inf).  `in` and `out` may be the very same view (same
 * data, strides and element size); otherwise they must not overlap.
 * Each returns SL_OK; SL_EINVAL (shape mismatch, overlap, bad parameter,
 * naming it and its value); SL_EUNSUPPORTED (dtype); SL_EOVERFLOW (a view
 * too large to address).  On failure `out` is untouched.
 */

/**
 * out = cast(in).
 * @return SL_OK; SL_EINVAL, SL_EUNSUPPORTED or SL_EOVERFLOW, as above.
 * Thread-safety: any thread, on distinct output views.
 */
SL_API SL_NODISCARD sl_status sl_cast(const struct sl_view *in, const struct sl_view *out,
                                      struct sl_error *err);

/**
 * out = cast(in * scale + offset), computed in double (int64 and uint64
 * values beyond 2^53 are first rounded to double).  `scale` and `offset`
 * must be finite.
 * @return SL_OK; SL_EINVAL, SL_EUNSUPPORTED or SL_EOVERFLOW, as above.
 * Thread-safety: any thread, on distinct output views.
 */
SL_API SL_NODISCARD sl_status sl_scale(const struct sl_view *in, const struct sl_view *out,
                                       double scale, double offset, struct sl_error *err);

/**
 * out = cast(min(max(in, lo), hi)).  For integer and bool inputs the bounds
 * are first rounded inward (lo up, hi down), so the result stays within
 * [lo, hi]; that range must then hold an integer.  For floats NaN stays NaN.
 * lo <= hi, neither NaN; ±inf means no bound.  Messages (and the
 * registry's "clip") call them "min" and "max".
 * @return SL_OK; SL_EINVAL, SL_EUNSUPPORTED or SL_EOVERFLOW, as above.
 * Thread-safety: any thread, on distinct output views.
 */
SL_API SL_NODISCARD sl_status sl_clip(const struct sl_view *in, const struct sl_view *out,
                                      double lo, double hi, struct sl_error *err);

/**
 * out = in > threshold ? cast(value) : 0, comparing exactly (an integer
 * against the real `threshold`); NaN is not above any threshold.
 * `threshold` must not be NaN.
 * @return SL_OK; SL_EINVAL, SL_EUNSUPPORTED or SL_EOVERFLOW, as above.
 * Thread-safety: any thread, on distinct output views.
 */
SL_API SL_NODISCARD sl_status sl_threshold(const struct sl_view *in, const struct sl_view *out,
                                           double threshold, double value, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_OPS_H */
