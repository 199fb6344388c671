/* SPDX-License-Identifier: MIT */
/*
 * Scheduling overhead of the pool against oneTBB and OpenMP, measured in the
 * same invocation: for 1 and 2 workers, three workloads in ns per task, and
 * the ratios sluice/TBB and sluice/OpenMP (below 1 means sluice is faster).
 *
 *   loop   10^6 independent empty tasks made by one producer task, then wait
 *   pfor   parallel loops of 10^6 empty iterations, back to back in a task
 *          on a worker and each timed there, as the peers run and time
 *          theirs on a thread of their team; every side runs the same
 *          compiled body (empty_range.h): sl_parallel_run_ranges (ranges
 *          of iterations, as OpenMP's schedule(static) and oneTBB's
 *          parallel_for split them), and, as pfor_indexed, sl_parallel_run
 *          (a call per iteration)
 *   fib    recursive fork-join fib(28): both children submitted, then wait
 *   chain  10^6 dependent tasks, each the successor of the one before,
 *          built (init, precede, submit) and run inside the timing
 *   submit 10^6 independent tasks submitted from outside the pool (sluice
 *          only: what the graph executor's thread does)
 *
 * The peers are this folder's peer_runtime_tbb and peer_runtime_omp, run as
 * child processes between sluice's runs.  Each figure is the median of REPS
 * runs after a warm-up.  The producer of `loop` and `chain` and the root of
 * `fib` run on a worker, as OpenMP's `single` and oneTBB's calling thread
 * take part in their teams; the main thread only submits and waits.
 *
 *   bench_runtime_sched [REPS]        (default 7)
 * Environment: SL_PEER_TBB / SL_PEER_OMP override the peers' paths ("" skips
 * one); SLUICE_* pool options apply (SLUICE_THREADS is ignored).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "bench.h"
#include "empty_range.h"

#ifndef SL_PEER_TBB
#define SL_PEER_TBB ""
#endif
#ifndef SL_PEER_OMP
#define SL_PEER_OMP ""
#endif

#define N_LOOP 1000000L
#define FIB_N 28
#define N_CHAIN 1000000L

static sl_pool *bench_pool;

static void
empty_task(void *arg, sl_status status)
{
    (void)arg;
    (void)status;
    __asm__ volatile("");
}

static void
fail(const char *what)
{
    fprintf(stderr, "bench_runtime_sched: %s failed\n", what);
    exit(1);
}

/* ---- the workloads ------------------------------------------------------ */

static void
loop_root(void *arg, sl_status status)
{
    long n = *(const long *)arg;
    (void)status;
    struct sl_task_group g;
    sl_task_group_init(&g, bench_pool);
    for (long i = 0; i < n; i++)
        if (sl_task_group_submit(&g, empty_task, NULL) != SL_OK)
            fail("loop submit");
    if (sl_task_group_wait(&g) != SL_OK)
        fail("loop wait");
}

struct fib {
    int n;
    long result;
};

static void
fib_task(void *arg, sl_status status)
{
    struct fib *f = arg;
    (void)status;
    if (f->n < 2) {
        f->result = f->n;
        return;
    }
    struct fib x = {f->n - 1, 0}, y = {f->n - 2, 0};
    struct sl_task_group g;
    sl_task_group_init(&g, bench_pool);
    if (sl_task_group_submit(&g, fib_task, &x) != SL_OK ||
        sl_task_group_submit(&g, fib_task, &y) != SL_OK)
        fail("fib submit");
    if (sl_task_group_wait(&g) != SL_OK)
        fail("fib wait");
    f->result = x.result + y.result;
}

static long
fib_serial(int n)
{
    return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

struct chain {
    struct sl_task *tasks; /* caller storage, reused across runs */
    long n;
};

static void
chain_root(void *arg, sl_status status)
{
    struct chain *c = arg;
    (void)status;
    struct sl_task_group g;
    sl_task_group_init(&g, bench_pool);
    for (long i = 0; i < c->n; i++) {
        sl_task_init(&c->tasks[i], empty_task, NULL);
        if (i > 0 && sl_task_precede(&c->tasks[i - 1], &c->tasks[i]) != SL_OK)
            fail("chain precede");
    }
    /* Last first: nothing is ready until the head is submitted. */
    for (long i = c->n; i-- > 0;)
        if (sl_task_group_submit_task(&g, &c->tasks[i]) != SL_OK)
            fail("chain submit");
    if (sl_task_group_wait(&g) != SL_OK)
        fail("chain wait");
}

static void
pfor_range(void *arg, size_t begin, size_t end, unsigned worker)
{
    (void)arg;
    (void)worker;
    sl_bench_empty_range((long)begin, (long)end);
}

static void
pfor_index(void *arg, size_t index, unsigned worker)
{
    (void)arg;
    (void)index;
    (void)worker;
    __asm__ volatile("");
}

/* Parallel loops of N_LOOP iterations: ranged, or a call per index. */
struct pfor_run {
    bool ranged;
    int n;           /* loops timed, after one warm-up loop */
    double *seconds; /* each loop alone, timed on the worker that calls it */
};

/* A warm-up loop, then the loops, called one after the other and each
 * timed on a worker, as the peers run and time theirs on a thread of their
 * team (OpenMP's master, oneTBB's calling thread): a microsecond-scale
 * loop must not be charged the hand-over of a root task from the outside
 * thread and back, which the peers do not make. */
static void
pfor_root(void *arg, sl_status status)
{
    (void)status;
    struct pfor_run *run = arg;
    struct sl_parallel par = sl_pool_parallel(bench_pool);
    for (int i = -1; i < run->n; i++) {
        double t0 = sl_bench_now();
        sl_status st = run->ranged ? sl_parallel_run_ranges(&par, (size_t)N_LOOP, pfor_range, NULL)
                                   : sl_parallel_run(&par, (size_t)N_LOOP, pfor_index, NULL);
        if (i >= 0)
            run->seconds[i] = sl_bench_now() - t0;
        if (st != SL_OK)
            fail("pfor");
    }
}

/* Run `fn(arg)` as one task and wait from this (outside) thread. */
static double
time_root(sl_task_fn *fn, void *arg)
{
    struct sl_task_group g;
    sl_task_group_init(&g, bench_pool);
    double t0 = sl_bench_now();
    if (sl_task_group_submit(&g, fn, arg) != SL_OK || sl_task_group_wait(&g) != SL_OK)
        fail("root");
    return sl_bench_now() - t0;
}

static double
time_submit_outside(long n)
{
    struct sl_task_group g;
    sl_task_group_init(&g, bench_pool);
    double t0 = sl_bench_now();
    for (long i = 0; i < n; i++)
        if (sl_task_group_submit(&g, empty_task, NULL) != SL_OK)
            fail("outside submit");
    if (sl_task_group_wait(&g) != SL_OK)
        fail("outside wait");
    return sl_bench_now() - t0;
}

/* ---- measuring ------------------------------------------------------------ */

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum mode { MODE_LOOP, MODE_PFOR, MODE_PFOR_INDEXED, MODE_FIB, MODE_CHAIN, MODE_SUBMIT };

/* Median seconds of `reps` runs after a warm-up. */
static double
sluice_median(enum mode m, int reps, struct chain *chain)
{
    double t[64];
    long n = N_LOOP;
    if (m == MODE_PFOR || m == MODE_PFOR_INDEXED) {
        /* The warm-up and the `reps` loops, all in one root task. */
        struct pfor_run run = {m == MODE_PFOR, reps, t};
        (void)time_root(pfor_root, &run);
    }
    for (int r = -1; r < reps && m != MODE_PFOR && m != MODE_PFOR_INDEXED; r++) {
        double dt = 0;
        struct fib f = {FIB_N, 0};
        switch (m) {
        case MODE_LOOP:
            dt = time_root(loop_root, &n);
            break;
        case MODE_PFOR:
        case MODE_PFOR_INDEXED:
            break; /* measured above, not in this loop */
        case MODE_FIB:
            dt = time_root(fib_task, &f);
            if (f.result != fib_serial(FIB_N))
                fail("fib result");
            break;
        case MODE_CHAIN:
            dt = time_root(chain_root, chain);
            break;
        case MODE_SUBMIT:
            dt = time_submit_outside(N_LOOP);
            break;
        }
        if (r >= 0)
            t[r] = dt;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    return t[reps / 2];
}

/* Run a peer; returns its median ns/task, or -1 when it is not available. */
static double
peer_ns(const char *path, const char *env, const char *mode, long n, unsigned workers, int reps)
{
    if (path == NULL || path[0] == '\0')
        return -1;
    char cmd[1024];
    bool tbb = env == NULL;
    if (tbb)
        snprintf(cmd, sizeof(cmd), "'%s' %s %ld %u %d", path, mode, n, workers, reps);
    else
        snprintf(cmd, sizeof(cmd), "%s=%u '%s' %s %ld %d", env, workers, path, mode, n, reps);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    char line[512];
    double ns = -1;
    while (fgets(line, sizeof(line), p) != NULL) {
        const char *at = strstr(line, "ns_per_task: ");
        if (at != NULL)
            ns = atof(at + strlen("ns_per_task: "));
        fprintf(stderr, "  %s %s %u: %s", tbb ? "tbb" : "omp", mode, workers, line);
    }
    if (pclose(p) != 0)
        return -1;
    return ns;
}

static void
report(const char *workload, unsigned workers, double sluice_ns, double tbb_ns, double omp_ns)
{
    char name[128];
    snprintf(name, sizeof(name), "runtime_%s_w%u_sluice", workload, workers);
    sl_bench_report(name, sluice_ns, "ns/task");
    if (tbb_ns > 0) {
        snprintf(name, sizeof(name), "runtime_%s_w%u_tbb", workload, workers);
        sl_bench_report(name, tbb_ns, "ns/task");
        snprintf(name, sizeof(name), "runtime_%s_w%u_sluice_vs_tbb", workload, workers);
        sl_bench_report(name, sluice_ns / tbb_ns, "x");
    }
    if (omp_ns > 0) {
        snprintf(name, sizeof(name), "runtime_%s_w%u_omp", workload, workers);
        sl_bench_report(name, omp_ns, "ns/task");
        snprintf(name, sizeof(name), "runtime_%s_w%u_sluice_vs_omp", workload, workers);
        sl_bench_report(name, sluice_ns / omp_ns, "x");
    }
}

int
main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 1 || reps > 64)
        reps = 7;
    const char *tbb = getenv("SL_PEER_TBB") != NULL ? getenv("SL_PEER_TBB") : SL_PEER_TBB;
    const char *omp = getenv("SL_PEER_OMP") != NULL ? getenv("SL_PEER_OMP") : SL_PEER_OMP;
    if (tbb[0] == '\0' || omp[0] == '\0')
        fprintf(stderr, "bench_runtime_sched: peer %s not built; no ratio against it\n",
                tbb[0] == '\0' ? "oneTBB" : "OpenMP");
    struct chain chain = {.n = N_CHAIN};
    chain.tasks = calloc((size_t)N_CHAIN, sizeof(struct sl_task));
    if (chain.tasks == NULL)
        fail("chain allocation");
    double fib_tasks = (double)(2 * fib_serial(FIB_N + 1) - 2);

    for (unsigned workers = 1; workers <= 2; workers++) {
        struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
        struct sl_error err = SL_ERROR_INIT;
        if (sl_pool_opts_from_env(&o, &err) != SL_OK) {
            fprintf(stderr, "bench_runtime_sched: %s\n", err.text);
            return 1;
        }
        o.n_workers = workers;
        bench_pool = sl_pool_create(&o, &err);
        if (bench_pool == NULL) {
            fprintf(stderr, "bench_runtime_sched: %s\n", err.text);
            return 1;
        }
        double s = sluice_median(MODE_LOOP, reps, &chain) * 1e9 / N_LOOP;
        report("loop_1e6", workers, s, peer_ns(tbb, NULL, "loop", N_LOOP, workers, reps),
               peer_ns(omp, "OMP_NUM_THREADS", "loop", N_LOOP, workers, reps));
        s = sluice_median(MODE_PFOR, reps, &chain) * 1e9 / N_LOOP;
        report("pfor_1e6", workers, s, peer_ns(tbb, NULL, "pfor", N_LOOP, workers, reps),
               peer_ns(omp, "OMP_NUM_THREADS", "pfor", N_LOOP, workers, reps));
        s = sluice_median(MODE_PFOR_INDEXED, reps, &chain) * 1e9 / N_LOOP;
        report("pfor_indexed_1e6", workers, s, -1,
               peer_ns(omp, "OMP_NUM_THREADS", "pfor", N_LOOP, workers, reps));
        s = sluice_median(MODE_FIB, reps, &chain) * 1e9 / fib_tasks;
        report("fib28", workers, s, peer_ns(tbb, NULL, "fib", FIB_N, workers, reps),
               peer_ns(omp, "OMP_NUM_THREADS", "fib", FIB_N, workers, reps));
        s = sluice_median(MODE_CHAIN, reps, &chain) * 1e9 / N_CHAIN;
        report("chain_1e6", workers, s, peer_ns(tbb, NULL, "chain", N_CHAIN, workers, reps),
               peer_ns(omp, "OMP_NUM_THREADS", "chain", N_CHAIN, workers, reps));
        s = sluice_median(MODE_SUBMIT, reps, &chain) * 1e9 / N_LOOP;
        report("submit_outside_1e6", workers, s, -1, -1);
        sl_pool_destroy(bench_pool);
    }
    free(chain.tasks);
    return 0;
}
