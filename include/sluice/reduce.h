/* SPDX-License-Identifier: MIT */
/*
 * Reductions along axes, as numpy computes them (np.sum, np.mean, np.std,
 * np.min, np.any, np.count_nonzero, np.nansum, ...), in two forms: a direct
 * one that reduces a block straight into its result, and a mergeable
 * partial state, one fixed-size record of uint64 words per output element,
 * for tree reductions across chunks (add blocks into partial states, merge
 * partials, finish into the result).  Kernels are pure: no threads, no I/O,
 * no allocation.  ops/README.md ("Reductions") gives the exact semantics:
 * default dtypes, NaN rules, empty extents, accuracy and the state layout.
 *
 * Thread-safety: every function here may run on any number of threads at
 * once, on distinct output (or state) views.
 */
#ifndef SL_REDUCE_H
#define SL_REDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/status.h>
#include <sluice/view.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Reduction methods, named as numpy's functions.  nan* methods on bool and
 * integers behave as the plain ones (those have no NaN).
 */
/* clang-format off */
#define SL_REDUCE_METHOD_MAP(X)                          \
    X(SUM, "sum") X(PROD, "prod") X(MEAN, "mean")        \
    X(MIN, "min") X(MAX, "max")                          \
    X(STD, "std") X(VAR, "var")                          \
    X(ANY, "any") X(ALL, "all")                          \
    X(COUNT_NONZERO, "count_nonzero")                    \
    X(NANSUM, "nansum") X(NANMEAN, "nanmean")            \
    X(NANMIN, "nanmin") X(NANMAX, "nanmax")
/* clang-format on */

typedef enum sl_reduce_method {
#define SL_REDUCE_METHOD_ENUM_(NAME, str) SL_REDUCE_##NAME,
    SL_REDUCE_METHOD_MAP(SL_REDUCE_METHOD_ENUM_) /* SL_REDUCE_SUM, ... */
#undef SL_REDUCE_METHOD_ENUM_
    SL_REDUCE_METHOD_COUNT_
} sl_reduce_method;

/**
 * The method's name ("sum"); "invalid" for a value outside the enum.
 * Thread-safety: any thread.
 */
SL_API const char *sl_reduce_method_name(sl_reduce_method m);

/**
 * Parse a method name ("count_nonzero").
 * @return SL_OK; SL_EINVAL for NULL arguments or an unknown name, naming it
 * and listing the known ones (`unknown reduce method "mx"; known: sum,
 * prod, ...`).  On failure `*out` is untouched.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_reduce_method_from_name(const char *name, sl_reduce_method *out,
                                                         struct sl_error *err);

/* What to reduce, and how: a plain value, checked by sl_reduce_check. */
struct sl_reduce_params {
    sl_reduce_method method;   /* what each output element is of its inputs */
    sl_dtype in_dtype;         /* input dtype: bool, integers, float32, float64 */
    sl_dtype out_dtype;        /* result dtype, any of those; stored by the cast rules */
    uint32_t rank;             /* rank of the input blocks, 0..SL_MAX_RANK */
    bool reduced[SL_MAX_RANK]; /* which input dimensions are reduced (first `rank` used) */
    double ddof;               /* std, var: numpy's delta degrees of freedom (0 by default) */
};

/**
 * numpy's result dtype for method `m` over input dtype `in` (what
 * np.sum(x).dtype etc. give on 64-bit Linux): sum, prod, nansum: bool and
 * signed integers give int64, unsigned integers uint64, float32 and
 * float64 keep their type; mean, std, var, nanmean: bool and integers give
 * float64, floats keep their type; min, max, nanmin, nanmax: `in` itself;
 * any, all: bool; count_nonzero: int64.
 * @return SL_OK; SL_EINVAL (`out` NULL, invalid method or dtype);
 * SL_EUNSUPPORTED (float16 and complex inputs), naming the method and the
 * dtype.  On failure `*out` is untouched.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_reduce_default_dtype(sl_reduce_method m, sl_dtype in,
                                                      sl_dtype *out, struct sl_error *err);

/**
 * Check `p`: a valid method; in_dtype and out_dtype among bool, integers,
 * float32, float64; rank at most SL_MAX_RANK; ddof finite and >= 0 (any
 * value for methods other than std and var is ignored but must still be
 * finite and >= 0).
 * @return SL_OK; SL_EINVAL (NULL `p`, invalid method or dtype value, ddof
 * NaN, infinite or negative); SL_EUNSUPPORTED (float16 or complex dtypes,
 * rank above SL_MAX_RANK).  Messages name the method, dtype and numbers.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_reduce_check(const struct sl_reduce_params *p,
                                              struct sl_error *err);

/**
 * Reduce block `in` along the dimensions p->reduced into `out`, as numpy
 * does (ops/README.md): `in` has rank p->rank and dtype p->in_dtype; `out`
 * has rank p->rank, dtype p->out_dtype, extent 1 on every reduced dimension
 * and `in`'s extent on the others.  Any strides (zero and negative too).
 * The result is computed in the method's own type (int64 or uint64 for
 * integer sums and products, double for float sums, means, var and std,
 * the element type for min and max) and stored into `out` by the cast
 * rules.  No allocation, at most about 17 KiB of stack.  The views must not
 * overlap.
 * @param p   borrowed, read only.
 * @param in  borrowed, read only.
 * @param out borrowed; every element is written, nothing else.
 * @return SL_OK; SL_EINVAL (NULL arguments, bad params as sl_reduce_check,
 * dtypes or ranks differing from `p`, an extent of `out` other than 1 on a
 * reduced dimension or other than `in`'s on a kept one, overlapping views,
 * or min, max, nanmin, nanmax over a reduced extent of 0 with a non-empty
 * output, "min of an empty extent", as numpy raises); SL_EUNSUPPORTED
 * (dtype, rank); SL_EOVERFLOW (a view too large to address).  Messages name
 * the method, dimension and extents.  On failure `out` is untouched.
 * Thread-safety: any thread, on distinct output views.
 */
SL_API SL_NODISCARD sl_status sl_reduce_block(const struct sl_reduce_params *p,
                                              const struct sl_view *in, struct sl_view *out,
                                              struct sl_error *err);

/* ---- partial states -------------------------------------------------------- */

/*
 * A partial state holds, per output element, what is needed to merge it
 * with others and finish it: sl_reduce_state_words(p) uint64 words
 * (ops/README.md lists them per method: sums and counts as uint64, int64
 * sums as two's complement, doubles by their bits).  A state view has dtype
 * SL_DTYPE_U64 and rank p->rank + 1 (so p->rank <= SL_MAX_RANK - 1): its
 * first p->rank dimensions are the output's, the last has extent
 * sl_reduce_state_words(p) and stride 1.  Its other strides are free.
 */

/**
 * Words per output element of the partial state for `p` (>= 1): 1 for
 * sums and products of bool and integers, float products, any, all and
 * count_nonzero; 2 for float sums and nansums, min, max, nanmin and nanmax;
 * 3 for mean, nanmean, var and std.  `p` must have passed
 * sl_reduce_check (else 1).
 * Thread-safety: any thread.
 */
SL_API uint32_t sl_reduce_state_words(const struct sl_reduce_params *p);

/**
 * Make every partial in `state` the empty reduction (sum 0, prod 1, count
 * 0, min of nothing yet, ...).  Its reduced dimensions may have any extent.
 * @param state borrowed; its words are written, nothing else.
 * @return SL_OK; SL_EINVAL (NULL arguments, bad params, a view that is not
 * a state view of `p`, naming the dimension and extents); SL_EUNSUPPORTED
 * (p->rank of SL_MAX_RANK: no room for the words dimension); SL_EOVERFLOW.
 * On failure `state` is untouched.
 * Thread-safety: any thread, on distinct state views.
 */
SL_API SL_NODISCARD sl_status sl_reduce_state_init(const struct sl_reduce_params *p,
                                                   struct sl_view *state, struct sl_error *err);

/**
 * Fold block `in` (shaped as for sl_reduce_block) into the partials of
 * `state` (extent 1 on the reduced dimensions, `in`'s on the others),
 * accumulating: a reduced extent of 0 leaves `state` as it was.  The views
 * must not overlap.
 * @param in    borrowed, read only.
 * @param state borrowed; read and written.
 * @return SL_OK; SL_EINVAL (NULL arguments, bad params, mismatched dtypes,
 * ranks or extents naming the dimension, overlap); SL_EUNSUPPORTED;
 * SL_EOVERFLOW.  On failure `state` is untouched.
 * Thread-safety: any thread, on distinct state views.
 */
SL_API SL_NODISCARD sl_status sl_reduce_state_add(const struct sl_reduce_params *p,
                                                  const struct sl_view *in, struct sl_view *state,
                                                  struct sl_error *err);

/**
 * Merge all partials of `from` into `into`, per output element: `from` is a
 * state view whose reduced dimensions may have any extent (several partials
 * side by side, e.g. one per chunk along the reduced axes; an extent of 0
 * merges nothing); `into` has extent 1 there and `from`'s extents on the
 * kept dimensions.  `into` is overwritten, not accumulated into.  Partials
 * are merged in C order of their positions; integer, min, max, any, all and
 * count results do not depend on the order, float sums, means, var and std
 * only within the accuracy of ops/README.md.  The views must not overlap.
 * @param from borrowed, read only.
 * @param into borrowed; its words are written.
 * @return SL_OK; SL_EINVAL (NULL arguments, bad params, a view that is not
 * a state view of `p`, mismatched extents naming the dimension, overlap);
 * SL_EUNSUPPORTED; SL_EOVERFLOW.  On failure `into` is untouched.
 * Thread-safety: any thread, on distinct `into` views.
 */
SL_API SL_NODISCARD sl_status sl_reduce_state_merge(const struct sl_reduce_params *p,
                                                    const struct sl_view *from,
                                                    struct sl_view *into, struct sl_error *err);

/**
 * Merge all partials of `from` (any extent on the reduced dimensions) per
 * output element and store the results into `out`, shaped and typed as
 * sl_reduce_block's `out`.  sl_reduce_block gives the same result for the
 * same elements, exactly for integer, min, max, any, all and count
 * methods, within the accuracy of ops/README.md for float sums, means, var
 * and std, however the elements were split into partials.
 * @param from borrowed, read only.
 * @param out  borrowed; every element is written, nothing else.
 * @return SL_OK; SL_EINVAL (as sl_reduce_state_merge; or min, max, nanmin,
 * nanmax of an output element whose partials saw no element, "min of an
 * empty extent"); SL_EUNSUPPORTED; SL_EOVERFLOW.  On failure `out` is
 * untouched.
 * Thread-safety: any thread, on distinct output views.
 */
SL_API SL_NODISCARD sl_status sl_reduce_state_finish(const struct sl_reduce_params *p,
                                                     const struct sl_view *from,
                                                     struct sl_view *out, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_REDUCE_H */
