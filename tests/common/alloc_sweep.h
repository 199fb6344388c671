/* SPDX-License-Identifier: MIT */
/*
 * The allocation-failure sweep of the io fault suites: run a sequence with
 * its 1st, 2nd, 3rd, ... allocation failing until a run fails none.
 * Criterion suites only (testutil.c itself stays free of criterion).
 */
#ifndef SL_ALLOC_SWEEP_H
#define SL_ALLOC_SWEEP_H

#include <criterion/criterion.h>
#include <stdbool.h>

#include "testutil.h"

/* One run: everything through `alloc`; the first failing status.
 * `*data_ok`: whether what it made reads back right (true when the
 * sequence checks nothing). */
typedef sl_status sl_test_sequence(const struct sl_allocator *alloc, void *arg, bool *data_ok);

/*
 * Sweep `seq`: every run must leak nothing and return SL_ENOMEM, or, when
 * `may_recover`, SL_OK with its data right (the code worked around the
 * failure); the run that fails nothing must return SL_OK with its data
 * right after more than `min_allocs` allocations.  @return the number of
 * allocations failed in turn.
 */
static inline size_t
sl_test_alloc_sweep(sl_test_sequence *seq, void *arg, bool may_recover, size_t min_allocs)
{
    for (size_t fail = 1;; fail++) {
        cr_assert_lt(fail, 100000, "the sequence never completes");
        struct sl_test_alloc ta = {.fail_at = fail};
        struct sl_allocator alloc = sl_test_alloc_make(&ta);
        bool data_ok = false;
        sl_status st = seq(&alloc, arg, &data_ok);
        cr_assert_eq(ta.n_live, 0, "allocation %zu failing leaks %zu blocks", fail, ta.n_live);
        if (ta.n_failed == 0) {
            cr_assert_eq(st, SL_OK, "no failure, yet %s", sl_status_name(st));
            cr_assert(data_ok, "no failure, yet wrong data");
            cr_assert_gt(fail, min_allocs, "the sequence allocates through the allocators");
            return fail - 1;
        }
        if (may_recover && st == SL_OK)
            cr_assert(data_ok, "allocation %zu failing gave SL_OK and wrong data", fail);
        else
            cr_assert_eq(st, SL_ENOMEM, "allocation %zu failing gave %s", fail, sl_status_name(st));
    }
}

#endif /* SL_ALLOC_SWEEP_H */
