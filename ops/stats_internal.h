/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the statistics accumulator (stats.c,
 * stats_result.c) and of its quantile summary (stats_summary.c), open to
 * their tests: the accumulator's layout, the summary's sizes and a
 * constructor with small sizes so tests reach deep levels quickly.
 */
#ifndef SL_STATS_INTERNAL_H
#define SL_STATS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/stats.h>

/*
 * Summary sizes: levels of SL__SUMMARY_K keys.  With n <= 2^40 values at
 * most 26 levels ever compact (level h compacts only after k * 2^h values),
 * each adding at most n / k to the rank error, so the reported bound
 * (err + 1) / n stays <= 27 / k = 1/1024 (ops/README.md has the proof).
 */
#define SL__SUMMARY_K 27648u
#define SL__SUMMARY_LEVELS 27u
#define SL__SUMMARY_MAX_LEVELS 64u /* what struct sl__summary can describe */

/*
 * A deterministic mergeable quantile summary of uint64 keys: level h holds
 * fewer than k keys of weight weight[h] (2^h, the top level more once it
 * compacts into itself); level 0 is unsorted, the others sorted.
 * Compacting a full level sorts it and keeps every other key with twice the
 * weight, which moves any rank estimate by at most the old weight; `err`
 * adds those weights up, so |estimated rank - true rank| <= err for every
 * key, always.
 */
struct sl__summary {
    uint32_t k;                              /* keys per level, even, >= 4 */
    uint32_t n_levels;                       /* 2 ... SL__SUMMARY_MAX_LEVELS */
    uint64_t *keys;                          /* n_levels * k; level h at keys + h * k */
    uint64_t *scratch;                       /* 2 * k: merges, sorting, carries */
    uint32_t count[SL__SUMMARY_MAX_LEVELS];  /* keys held per level, < k */
    uint64_t weight[SL__SUMMARY_MAX_LEVELS]; /* weight of each key of the level */
    uint64_t parity;                         /* bit h: offset level h's next compaction keeps */
    uint64_t err;                            /* sum of compaction weights, dropped twice */
};

/* Bytes of keys a summary of these sizes needs (levels and scratch). */
size_t sl__summary_bytes(uint32_t k, uint32_t n_levels);
/* An empty summary over `mem` (sl__summary_bytes long, 8-byte aligned). */
void sl__summary_init(struct sl__summary *q, uint32_t k, uint32_t n_levels, uint64_t *mem);
void sl__summary_reset(struct sl__summary *q);
/* Add n keys of weight 1. */
void sl__summary_add(struct sl__summary *q, const uint64_t *keys, size_t n);
/* Fold `from` (same k and n_levels) into `q`. */
void sl__summary_merge(struct sl__summary *q, const struct sl__summary *from);
/* Total weight held (the number of keys added, less any dropped). */
uint64_t sl__summary_weight(const struct sl__summary *q);
/* The estimated number of keys <= y. */
uint64_t sl__summary_rank(const struct sl__summary *q, uint64_t y);
/* The smallest key y in [lo, hi] whose estimated rank exceeds `pos`, where
 * the rank of `hi` does (the key at 0-based position `pos`). */
uint64_t sl__summary_select(const struct sl__summary *q, uint64_t pos, uint64_t lo, uint64_t hi);

/* An exact integer sum: two's complement 128 bits. */
struct sl__stats_i128 {
    uint64_t lo; /* low 64 bits */
    uint64_t hi; /* high 64 bits, two's complement */
};

static inline void
sl__stats_i128_add_u64(struct sl__stats_i128 *a, uint64_t x)
{
    a->lo += x;
    a->hi += a->lo < x;
}

static inline void
sl__stats_i128_add_i64(struct sl__stats_i128 *a, int64_t x)
{
    sl__stats_i128_add_u64(a, (uint64_t)x);
    a->hi -= x < 0; /* sign extension: add 2^128 - 2^64 */
}

static inline void
sl__stats_i128_add(struct sl__stats_i128 *a, struct sl__stats_i128 b)
{
    sl__stats_i128_add_u64(a, b.lo);
    a->hi += b.hi;
}

/* Per-dtype functions of an accumulator. */
struct sl__stats_dtype;

/* An accumulator; one allocation of `bytes` holds it and its arrays. */
struct sl_stats {
    struct sl_allocator alloc;         /* where `bytes` came from */
    size_t bytes;                      /* the allocation */
    sl_dtype dtype;                    /* of every block */
    struct sl_stats_opts opts;         /* as given, validated */
    const struct sl__stats_dtype *ops; /* row adder and key decoder */
    bool exact;                        /* a counter per possible value */
    uint32_t n_values;                 /* exact: possible values */
    int32_t value_min;                 /* exact: the value of counter 0 */
    uint32_t bins;                     /* histogram bins, 0: none */
    double lo, hi;                     /* histogram range as used */
    double step;                       /* (hi - lo) / bins, numpy.linspace's step */
    double norm;                       /* bins / (hi - lo) */
    uint64_t *hist;                    /* bins + 2 slots: bins, below, above */
    uint64_t *counts;                  /* exact: n_values counters */
    bool has_summary;                  /* wide dtype with percentiles */
    struct sl__summary q;              /* has_summary: the percentile keys */
    uint64_t count;                    /* elements, NaN included */
    uint64_t nan_count;                /* NaN elements */
    uint64_t min_key, max_key;         /* wide dtypes: extreme keys of non-NaN elements */
    struct sl__stats_i128 isum;        /* wide integer dtypes: the exact sum */
    double fsum, fcomp;                /* floats: Neumaier sum of finite values */
    uint64_t n_pinf, n_ninf;           /* floats: infinities */
    uint64_t n_fin;                    /* wide dtypes: values in the moments below */
    double shift;                      /* wide dtypes: the first finite value folded */
    double mean, m2;                   /* wide dtypes: mean of finite values less `shift`, and
                                          their sum of squared deviations (Chan et al.) */
};

/* sl_stats_create with summary sizes k (even, >= 4) and n_levels (>= 2). */
sl_stats *sl__stats_create_sized(sl_dtype dtype, const struct sl_stats_opts *opts,
                                 const struct sl_allocator *alloc, uint32_t k, uint32_t n_levels,
                                 struct sl_error *err);

/* The value of a wide dtype's key, as double. */
double sl__stats_key_value(const sl_stats *s, uint64_t key);
/* Edge i of the histogram (i <= bins), as numpy.linspace computes it. */
static inline double
sl__stats_edge(const sl_stats *s, uint32_t i)
{
    if (i == s->bins)
        return s->hi;
    if (s->step == 0) /* the step underflowed */
        return (double)i / s->bins * (s->hi - s->lo) + s->lo;
    return (double)i * s->step + s->lo;
}

/* Histogram slot of non-NaN x by numpy.histogram's rule: a bin, `bins`
 * (below lo) or bins + 1 (above hi).  The index from (x - lo) * norm is
 * corrected by one where rounding put x on the wrong side of an edge. */
static inline uint32_t
sl__stats_slot(const sl_stats *s, double x)
{
    if (x < s->lo)
        return s->bins;
    if (x > s->hi)
        return s->bins + 1;
    uint32_t i = (uint32_t)((x - s->lo) * s->norm);
    if (i >= s->bins)
        i = s->bins - 1;
    if (x < sl__stats_edge(s, i))
        i--;
    else if (i + 1 < s->bins && x >= sl__stats_edge(s, i + 1))
        i++;
    return i;
}
/* The sum as double, rounded once. */
double sl__stats_i128_to_double(struct sl__stats_i128 a);

#endif /* SL_STATS_INTERNAL_H */
