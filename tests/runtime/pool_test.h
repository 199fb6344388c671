/* SPDX-License-Identifier: MIT */
/* The pool's counters as values, so a test can assert on one field. */
#ifndef SL_POOL_TEST_H
#define SL_POOL_TEST_H

#include <sluice/pool.h>

/* The pool's scheduling counters. */
static inline struct sl_pool_stats
pool_stats(const sl_pool *pool)
{
    struct sl_pool_stats s;
    sl_pool_get_stats(pool, &s);
    return s;
}

/* The pool's buffer counters. */
static inline struct sl_pool_buf_stats
pool_buf_stats(const sl_pool *pool)
{
    struct sl_pool_buf_stats s;
    sl_pool_buf_get_stats(pool, &s);
    return s;
}

#endif /* SL_POOL_TEST_H */
