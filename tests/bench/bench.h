/* SPDX-License-Identifier: MIT */
/*
 * The benchmark convention: every benchmark prints `name: value unit`
 * lines on stdout (one measurement per line, lower or higher is better as
 * the unit says), plus ratios against the peer measured in the same run as
 * `name: value x`.  tests/bench/run.sh collects them into a table.
 */
#ifndef SL_BENCH_H
#define SL_BENCH_H

#include <stdio.h>
#include <time.h>

/* Seconds on a monotonic clock. */
static inline double
sl_bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds used by this process (all threads). */
static inline double
sl_bench_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Print one measurement line. */
static inline void
sl_bench_report(const char *name, double value, const char *unit)
{
    printf("%s: %.4g %s\n", name, value, unit);
    fflush(stdout);
}

#endif /* SL_BENCH_H */
