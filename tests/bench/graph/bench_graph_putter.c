/* SPDX-License-Identifier: MIT */
/*
 * The dask issue's case (katdal's chunk stores): a putter that does nothing
 * over every chunk of a zeros array, N elements in chunks of 1,000.
 *
 *   1,000 chunks (N = 10^6): build (graph, seal, prepare) and run times,
 *       beside dask's map_blocks and low-level blockwise versions of the
 *       same graph, run in this invocation by peer_dask_putter.py; ratios.
 *   10^6 chunks (N = 10^9, a virtual array): build and run times, and the
 *       peak RSS the run adds, per chunk, against the status arrays' 1 B.
 *
 * The getter fills each float64 chunk with zeros (as da.zeros hands each
 * chunk a zeros array) in the 1,000-chunk case; in the 10^6-chunk case it
 * writes only the first element, so what is measured is the scheduling of a
 * million tasks, not 8 GB of memset.  Medians of REPS runs on a pool of one
 * worker per core.
 *
 *   bench_graph_putter [REPS]   (default 7; SL_BENCH_SOURCE_ROOT finds the peer)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <sluice.h>

#include "bench.h"

static sl_status
zeros_getter(void *ctx, const char *name, const struct sl_region *region, struct sl_block *out,
             struct sl_error *err)
{
    (void)name;
    (void)region;
    (void)err;
    bool full = *(const bool *)ctx;
    memset(out->view.data, 0, full ? sl_view_count(&out->view) * sizeof(double) : sizeof(double));
    return SL_OK;
}

static sl_status
noop_putter(void *ctx, const char *name, const struct sl_block *block, struct sl_error *err)
{
    (void)ctx;
    (void)name;
    (void)block;
    (void)err;
    return SL_OK;
}

static void
check(sl_status st, const struct sl_error *err, const char *what)
{
    if (st != SL_OK) {
        fprintf(stderr, "bench_graph_putter: %s: %s\n", what, err->text);
        exit(1);
    }
}

/* Build, seal and prepare the graph; returns the plan (the graph is owned by it). */
static sl_plan *
build(uint64_t n, bool *full)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_graph *g = sl_graph_create(NULL, &err);
    const uint64_t chunk = 1000;
    const struct sl_getter_desc gd = {.array_name = "zeros",
                                      .dtype = SL_DTYPE_F64,
                                      .rank = 1,
                                      .shape = &n,
                                      .chunk_shape = &chunk,
                                      .fn = zeros_getter,
                                      .ctx = full};
    uint32_t get, put;
    check(sl_graph_add_getter(g, "zeros", &gd, &get, &err), &err, "add getter");
    const struct sl_putter_desc pd = {.fn = noop_putter};
    check(sl_graph_add_putter(g, "put", get, &pd, &put, &err), &err, "add putter");
    check(sl_graph_seal(g, &err), &err, "seal");
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    if (plan == NULL)
        check(err.code, &err, "prepare");
    sl_graph_unref(g);
    return plan;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

static long
max_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Median build and run seconds over `reps` runs. */
static void
measure(sl_pool *pool, uint64_t n, bool full, int reps, double *build_s, double *run_s)
{
    double b[32], r[32];
    for (int i = 0; i < reps; i++) {
        double t0 = sl_bench_now();
        sl_plan *plan = build(n, &full);
        double t1 = sl_bench_now();
        struct sl_error err = SL_ERROR_INIT;
        check(sl_plan_run(plan, pool, &err), &err, "run");
        double t2 = sl_bench_now();
        sl_plan_destroy(plan);
        b[i] = t1 - t0;
        r[i] = t2 - t1;
    }
    *build_s = median(b, reps);
    *run_s = median(r, reps);
}

/* Run the dask peer; returns its best total (ms) over its two variants, or -1. */
static double
run_peer(uint64_t n, int reps)
{
    const char *root = getenv("SL_BENCH_SOURCE_ROOT");
    if (root == NULL) {
        fprintf(stderr, "SL_BENCH_SOURCE_ROOT unset: skipping dask (run via tests/bench/run.sh)\n");
        return -1;
    }
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/bench/graph/peer_dask_putter.py %llu %d",
             root, (unsigned long long)n, reps);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    char line[512];
    double best = -1;
    while (fgets(line, sizeof(line), p) != NULL) {
        fputs(line, stdout);
        double v;
        if (strstr(line, "_total:") != NULL && sscanf(strchr(line, ':') + 1, "%lf", &v) == 1)
            best = best < 0 || v < best ? v : best;
    }
    fflush(stdout);
    return pclose(p) == 0 ? best : -1;
}

int
main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 1 || reps > 32)
        reps = 7;
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    struct sl_error err = SL_ERROR_INIT;
    sl_pool *pool = sl_pool_create(&o, &err);
    if (pool == NULL)
        check(err.code, &err, "pool");

    double b, r;
    measure(pool, 1000000, true, reps, &b, &r);
    sl_bench_report("sluice_1000_chunks_build", b * 1e3, "ms");
    sl_bench_report("sluice_1000_chunks_run", r * 1e3, "ms");
    sl_bench_report("sluice_1000_chunks_total", (b + r) * 1e3, "ms");
    sl_bench_report("sluice_1000_chunks_per_chunk", (b + r) * 1e9 / 1000, "ns");
    double dask_ms = run_peer(1000000, reps);
    if (dask_ms > 0)
        sl_bench_report("dask_best_over_sluice_1000_chunks", dask_ms / ((b + r) * 1e3), "x");

    long rss0 = max_rss_kib();
    measure(pool, 1000000000, false, reps < 3 ? reps : 3, &b, &r);
    long rss1 = max_rss_kib();
    sl_bench_report("sluice_1e6_chunks_build", b * 1e3, "ms");
    sl_bench_report("sluice_1e6_chunks_run", r * 1e3, "ms");
    sl_bench_report("sluice_1e6_chunks_total", (b + r) * 1e3, "ms");
    sl_bench_report("sluice_1e6_chunks_per_chunk", (b + r) * 1e9 / 1e6, "ns");
    sl_bench_report("sluice_1e6_chunks_peak_rss_growth_per_chunk",
                    (double)(rss1 - rss0) * 1024.0 / 1e6, "B");
    sl_pool_destroy(pool);
    return 0;
}
