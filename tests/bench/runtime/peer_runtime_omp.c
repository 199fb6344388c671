/* SPDX-License-Identifier: MIT */
/*
 * The OpenMP side of bench_runtime_sched: the same three workloads with
 * OpenMP tasks, run by the driver in the same invocation.
 *   loop N   one producer (omp single) creates N empty tasks, then taskwait
 *   pfor N   a parallel loop of N empty iterations: a parallel region whose
 *            threads each run their schedule(static) block through the
 *            loop body sluice's side runs (empty_range.h)
 *   fib K    recursive fork-join fib(K): both children as tasks, then taskwait
 *   chain N  one producer creates N tasks each depend(inout) on one token,
 *            so each runs after the one before, then taskwait
 * Threads from OMP_NUM_THREADS.  Prints `ns_per_task: MEDIAN` over REPS
 * runs after one warm-up run, then min and max.  libgomp runs a task at once
 * in its creator when too many are queued (its throttle), which makes
 * `loop` close to a plain loop of calls.
 *   usage: OMP_NUM_THREADS=T peer_runtime_omp {loop|pfor|fib|chain} N REPS
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "empty_range.h"

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void
loop_tasks(long n)
{
#pragma omp parallel
#pragma omp single
    {
        for (long i = 0; i < n; i++) {
#pragma omp task
            __asm__ volatile("");
        }
#pragma omp taskwait
    }
}

static void
pfor_loop(long n)
{
    /* schedule(static)'s partition, one contiguous block per thread, each
     * run through the loop body sluice's side runs (empty_range.h). */
#pragma omp parallel
    {
        long t = omp_get_thread_num(), nt = omp_get_num_threads();
        long q = n / nt, r = n % nt;
        long begin = t * q + (t < r ? t : r);
        sl_bench_empty_range(begin, begin + q + (t < r));
    }
}

static long
fib(int n)
{
    if (n < 2)
        return n;
    long x = 0, y = 0;
#pragma omp task shared(x)
    x = fib(n - 1);
#pragma omp task shared(y)
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}

static long
fib_serial(int n)
{
    return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

static long
fib_tasks(int k)
{
    long r = 0;
#pragma omp parallel
#pragma omp single
    r = fib(k);
    return r;
}

static void
chain_tasks(long n)
{
    char token = 0;
#pragma omp parallel
#pragma omp single
    {
        for (long i = 0; i < n; i++) {
#pragma omp task depend(inout : token)
            __asm__ volatile("");
        }
#pragma omp taskwait
    }
    (void)token;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s {loop|pfor|fib|chain} N REPS\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    int reps = atoi(argv[3]);
    if (n <= 0 || reps <= 0 || reps > 1000)
        return 2;
    int is_fib = strcmp(mode, "fib") == 0;
    long n_tasks = is_fib ? 2 * fib_serial((int)n + 1) - 2 : n;
    double *t = calloc((size_t)reps, sizeof(double));
    if (t == NULL)
        return 1;
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up (the team starts) */
        double t0 = now();
        if (strcmp(mode, "loop") == 0) {
            loop_tasks(n);
        } else if (strcmp(mode, "pfor") == 0) {
            pfor_loop(n);
        } else if (is_fib) {
            if (fib_tasks((int)n) != fib_serial((int)n)) {
                fprintf(stderr, "fib mismatch\n");
                return 1;
            }
        } else if (strcmp(mode, "chain") == 0) {
            chain_tasks(n);
        } else {
            fprintf(stderr, "unknown mode %s\n", mode);
            return 2;
        }
        if (r >= 0)
            t[r] = now() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    double scale = 1e9 / (double)n_tasks;
    printf("ns_per_task: %.3f min %.3f max %.3f (OpenMP %d, %d threads)\n", t[reps / 2] * scale,
           t[0] * scale, t[reps - 1] * scale, _OPENMP, omp_get_max_threads());
    free(t);
    return 0;
}
