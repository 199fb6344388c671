/* SPDX-License-Identifier: MIT */
/*
 * One-pass, mergeable statistics of arrays: count, NaN count, min, max,
 * compensated sum, mean, standard deviation, a histogram and percentiles,
 * accumulated block by block and merged across accumulators (one per
 * worker, one per chunk) in any order.  ops/README.md ("Statistics") gives
 * the exact semantics against numpy, the percentile method and the proof of
 * its rank error bound, and the memory each accumulator holds.
 *
 * An accumulator allocates everything at creation; adding, merging,
 * resetting and reading results never allocate.  It is used by one thread
 * at a time; distinct accumulators may be used on any threads at once.
 */
#ifndef SL_STATS_H
#define SL_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/status.h>
#include <sluice/view.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL_STATS_MAX_PERCENTILES 16  /* percentiles one accumulator computes */
#define SL_STATS_MAX_BINS (1u << 20) /* histogram bins one accumulator may have */

/* What to compute besides the moments. */
struct sl_stats_opts {
    uint32_t bins;        /* histogram bins, 0: no histogram; at most SL_STATS_MAX_BINS */
    bool has_range;       /* `lo`, `hi` given; else (bins > 0) bool, int8, uint8, int16 and
                             uint16 use their whole range as [min, max + 1) (uint8: [0, 256)),
                             and other dtypes are refused */
    double lo, hi;        /* histogram range: finite, lo < hi; values outside are counted in
                             `below`/`above`, not in bins */
    size_t n_percentiles; /* 0 ... SL_STATS_MAX_PERCENTILES */
    double percentiles[SL_STATS_MAX_PERCENTILES]; /* each in [0, 100] */
};
/**
 * SL_STATS_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_stats_opts
sl_stats_opts_default(void)
{
    struct sl_stats_opts o;
    memset(&o, 0, sizeof o);

    return o;
}
#define SL_STATS_OPTS_DEFAULT (sl_stats_opts_default())

/* An accumulator of one set of statistics over elements of one dtype. */
typedef struct sl_stats sl_stats;

/**
 * Make an empty accumulator for elements of dtype `dtype` (bool, int8 ...
 * int64, uint8 ... uint64, float32, float64), allocating all it will need:
 * sl_stats_bytes(dtype, opts) bytes.
 *
 * @param opts   borrowed, copied; NULL means SL_STATS_OPTS_DEFAULT.
 * @param alloc  copied; the accumulator's memory comes from it (NULL: the
 *               default allocator) and it must outlive the accumulator.
 * @return the accumulator, freed with sl_stats_free; NULL on failure with
 * `err` set: SL_EUNSUPPORTED (float16, complex), SL_EINVAL (a dtype outside
 * the enum; more than SL_STATS_MAX_BINS bins; bins without a range for a
 * dtype wider than 16 bits, e.g. "stats: give a histogram range for float32
 * (256 bins)"; a range not finite or with lo >= hi; more than
 * SL_STATS_MAX_PERCENTILES percentiles or one outside [0, 100], naming its
 * index and value), SL_ENOMEM (naming the bytes).
 * Thread-safety: any thread.
 */
SL_API sl_stats *sl_stats_create(sl_dtype dtype, const struct sl_stats_opts *opts,
                                 const struct sl_allocator *alloc, struct sl_error *err);

/**
 * Free an accumulator through its allocator.  NULL is a no-op.
 * Thread-safety: any thread, once no other thread uses `s`.
 */
SL_API void sl_stats_free(sl_stats *s);

/**
 * Make `s` empty again, keeping its memory and options.
 * Thread-safety: the thread that uses `s`.
 */
SL_API void sl_stats_reset(sl_stats *s);

/**
 * Fold every element of `block` (any rank, shape and strides, zero and
 * negative strides included) into `s`.  No allocation; `block` is borrowed
 * for the call.
 * @return SL_OK; SL_EINVAL (NULL argument, or the block's dtype is not the
 * accumulator's, naming both); SL_EINVAL, SL_EUNSUPPORTED or SL_EOVERFLOW
 * from sl_view_check; SL_EOVERFLOW (the element count would pass 2^64 - 1).
 * On failure `s` is unchanged.
 * Thread-safety: the thread that uses `s`; other threads may read `block`.
 */
SL_API SL_NODISCARD sl_status sl_stats_add(sl_stats *s, const struct sl_view *block,
                                           struct sl_error *err);

/**
 * Fold everything `from` holds into `into`, as if `into` had been given
 * `from`'s blocks too.  `from` is only read.  No allocation.
 * @return SL_OK; SL_EINVAL (NULL argument, `into` == `from`, or a different
 * dtype or options, naming what differs); SL_EOVERFLOW (the element count
 * would pass 2^64 - 1).  On failure `into` is unchanged.
 * Thread-safety: the thread that uses `into`; other merges from `from`
 * and one sl_stats_result of it may run at the same time.
 */
SL_API SL_NODISCARD sl_status sl_stats_merge(sl_stats *into, const sl_stats *from,
                                             struct sl_error *err);

/* The statistics of everything an accumulator was given. */
struct sl_stats_result {
    uint64_t count;            /* elements, NaN included */
    uint64_t nan_count;        /* NaN elements (floats only) */
    double min, max;           /* over non-NaN elements; NaN when there are none */
    double sum;                /* of non-NaN elements in float64 (0 when none): integers exactly,
                                  rounded once; floats compensated (Neumaier), within 1e-12
                                  relative of np.nansum(x.astype(np.float64)) */
    double mean, std;          /* of non-NaN elements (np.nanmean, np.nanstd with ddof=0); NaN when
                                  there are none; std is NaN when an infinity is present */
    uint32_t bins;             /* histogram bins (0: no histogram) */
    double lo, hi;             /* the histogram's range as used (NaN without histogram) */
    const uint64_t *histogram; /* `bins` counts, NULL without histogram; points into the
                                  accumulator, valid while it is unchanged.  Bin i holds
                                  lo + i * w <= x < lo + (i + 1) * w, the last bin also x ==
                                  hi, with numpy.histogram's edges and edge corrections in
                                  float64 */
    uint64_t below, above;     /* non-NaN values < lo and > hi (0 without histogram) */
    size_t n_percentiles;      /* as in the options */
    double percentile[SL_STATS_MAX_PERCENTILES]; /* numpy's default ('linear') method over the
                                                    non-NaN values, as np.nanpercentile of
                                                    x.astype(np.float64); NaN when none */
    bool percentiles_exact; /* bool, int8, uint8, int16, uint16: exactly numpy's values */
    double rank_error;      /* otherwise a proven bound e on the rank error as a fraction of
                               the non-NaN count m: each percentile lies between the sorted
                               values at positions floor(r - e*m) and ceil(r + e*m), where
                               r = (m - 1) * p / 100 is the position numpy interpolates at.
                               0 while no compaction has happened (exact order statistics);
                               at most 1/1024 for m <= 2^40 */
};

/**
 * The statistics of everything `s` holds, in `*out`.  No allocation.  `s`
 * keeps its contents; the one thing written is the histogram of bool and
 * 8/16-bit dtypes, which is filled here from the per-value counters (one
 * pass over them, 65536 at most) rather than counted element by element.
 * Percentiles of wide dtypes cost up to 64 passes over the summary's
 * unsorted level (under a millisecond each).
 * @return SL_OK or SL_EINVAL (NULL argument).
 * Thread-safety: any thread, concurrently with merges from `s`
 * (sl_stats_merge), not with changes to `s` or another sl_stats_result of
 * it.
 */
SL_API SL_NODISCARD sl_status sl_stats_result(const sl_stats *s, struct sl_stats_result *out,
                                              struct sl_error *err);

/**
 * The checks sl_stats_create makes of `dtype` and `opts`, with the same
 * errors, without allocating anything (an accumulator of a 16-bit dtype
 * holds half a megabyte).
 * @return SL_OK, SL_EUNSUPPORTED or SL_EINVAL, as sl_stats_create.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_stats_check(sl_dtype dtype, const struct sl_stats_opts *opts,
                                             struct sl_error *err);

/**
 * Bytes an accumulator with these options holds (one allocation), for
 * memory budgets; 0 when sl_stats_create would refuse the options.
 * `opts` NULL means SL_STATS_OPTS_DEFAULT.
 * Thread-safety: any thread.
 */
SL_API size_t sl_stats_bytes(sl_dtype dtype, const struct sl_stats_opts *opts);

#ifdef __cplusplus
}
#endif

#endif /* SL_STATS_H */
