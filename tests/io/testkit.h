/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the io array tests: a small thread-pool "parallel for" that
 * implements struct sl_parallel, deterministic test data for any dtype, and
 * a reference copy of a box out of a dense array.
 */
#ifndef SL_TEST_TESTKIT_H
#define SL_TEST_TESTKIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice.h>

/* A parallel-for over `n_threads` threads made per call. */
struct sl_test_pool {
    struct sl_parallel par; /* pass &par */
    unsigned n_threads;
};

void sl_test_pool_init(struct sl_test_pool *p, unsigned n_threads);

/* Fill `n` elements of `dt` with values derived from `seed` and their index:
 * smooth runs with some noise, NaNs in floats every 97th element when
 * `with_nan`. */
void sl_test_fill_data(void *buf, size_t n, sl_dtype dt, unsigned seed, bool with_nan);

/* Copy box [start, start + shape) of a dense C-order `src` of `dims` into
 * the dense `dst`. */
void sl_test_box_extract(void *dst, const void *src, uint32_t rank, const uint64_t *dims,
                         const uint64_t *start, const uint64_t *shape, size_t es);

/* Number of elements of a shape. */
uint64_t sl_test_count(uint32_t rank, const uint64_t *shape);

#endif /* SL_TEST_TESTKIT_H */
