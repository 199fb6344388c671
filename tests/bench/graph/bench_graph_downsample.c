/* SPDX-License-Identifier: MIT */
/*
 * The pipeline benchmark: a 2x mean downsample of a Zarr v2 uint16
 * array (zstd level 1) into a new Zarr v2 array with the input's chunks,
 * by `sluice downsample` and by dask (from_zarr -> coarsen(np.mean) ->
 * astype(uint16) -> to_zarr, peer_dask_downsample.py), side by side:
 *
 *   3d: (512, 512, 512) in 64^3 chunks, factors 2, 2, 2;
 *   5d: (4, 2, 32, 1024, 1024) in (1, 1, 32, 256, 256) chunks, factors
 *       1, 1, 1, 2, 2 (Y and X only).
 *
 * Each run is a child process: sluice's wall time, CPU time and peak RSS
 * come from wait4() over the whole `sluice downsample` process; dask's from
 * the peer, which times its pipeline only (imports and set-up excluded).
 * Runs interleave (sluice, dask rechunk, dask aligned, REPS rounds) so a
 * neighbour's load on a shared machine falls on both alike.  Prints
 * medians, the dask / sluice ratios against the better dask variant for
 * wall and CPU time, sluice / dask for peak RSS against the leaner one,
 * and checks the outputs agree to 1 (dask truncates the mean to uint16,
 * sluice rounds half to even).  The inputs are generated once under
 * $SL_BENCH_DATA.
 *
 * Beside dask, the floor (downsample_floor.c), measured in this process in
 * the same run: the input's chunk files, already in memory, decoded and
 * the output's share of each (one eighth in 3-D, one quarter in 5-D)
 * re-encoded at level 1 on as many threads as sluice runs; sluice's wall
 * and CPU time over it.  And the pipeline floor (downsample_pipeline.c):
 * the same downsample by a minimal hand-written program, in this process,
 * run in each round beside sluice, its output checked byte for byte
 * against sluice's, with its CPU time per phase; sluice over it is what
 * the runtime costs, it over the zstd floor is the work the task cannot
 * skip (reading and writing files, reducing).  Then cold-cache runs (the
 * input's pages dropped with posix_fadvise before each), REPS rounds of:
 * sluice, the pipeline floor as it is and with a thread reading ahead,
 * and the device's read of the input; sluice against the larger of the
 * zstd floor and the device's read, and against the better cold pipeline
 * floor; and where sluice's CPU time goes, a
 * perf profile of one more run sorted into zstd decode and encode,
 * reduction, copies, allocation and page faults, file I/O, scheduling and
 * the rest, with its page faults and the thread time spent waiting.
 *
 *   bench_graph_downsample [REPS]   (default 3; run by tests/bench/run.sh,
 *   which sets SL_SLUICE_EXE, SL_BENCH_SOURCE_ROOT and SL_BENCH_DATA)
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_proc.h"
#include "downsample_floor.h"

/* One run of the pipeline floor: its cost (wall and CPU) and phases. */
struct pipe_cost {
    struct bench_proc_cost c;
    double phase_s[PIPELINE_PHASES];
};

/* Paths and programs of this invocation. */
struct env {
    const char *sluice; /* the launcher */
    char peer[4096];    /* peer_dask_downsample.py */
    const char *data;   /* inputs and outputs */
};

/* Run the peer with `args` (NULL-terminated after the script). */
static int
peer(const struct env *e, const char *a1, const char *a2, const char *a3, const char *a4,
     const char *a5, struct bench_proc_lines *out, struct bench_proc_cost *c)
{
    char *argv[] = {"/usr/bin/python3", (char *)e->peer, (char *)a1, (char *)a2,
                    (char *)a3,         (char *)a4,      (char *)a5, NULL};
    return bench_proc_spawn(argv, out, c);
}

/* The dask variants measured. */
static const char *const dask_variants[] = {"rechunk", "aligned"};
#define N_VARIANTS 2

/* One round: sluice once, then each dask variant once (interleaved, so a
 * neighbour's load on this shared machine falls on both alike). */
static void
bench_round(const struct env *e, const char *kind, const char *factors,
            const struct pipeline_spec *ps, int threads, struct bench_proc_cost *sl,
            struct pipe_cost *pipe, struct bench_proc_cost *dask)
{
    char in[4096], out[4096];
    snprintf(in, sizeof(in), "%s/%s_in.zarr", e->data, kind);
    snprintf(out, sizeof(out), "%s/%s_out_sluice.zarr", e->data, kind);
    char *argv[] = {(char *)e->sluice, "downsample",    in,  out, "--factors", (char *)factors,
                    "--overwrite",     "--no-progress", NULL};
    if (bench_proc_spawn(argv, NULL, sl) != 0)
        bench_proc_die("sluice downsample failed");
    pipe->c = (struct bench_proc_cost){-1, -1, -1, -1};
    if (pipeline_run(ps, threads, &pipe->c.wall_s, &pipe->c.cpu_s, pipe->phase_s) != 0)
        bench_proc_die("the pipeline floor failed");
    malloc_trim(0);
    for (int v = 0; v < N_VARIANTS; v++) {
        struct bench_proc_lines l;
        struct bench_proc_cost whole;
        char key[128];
        snprintf(out, sizeof(out), "%s/%s_out_dask_%s.zarr", e->data, kind, dask_variants[v]);
        if (peer(e, "run", kind, dask_variants[v], e->data, out, &l, &whole) != 0)
            bench_proc_die("the dask peer failed");
        snprintf(key, sizeof(key), "dask_%s_%s_wall", kind, dask_variants[v]);
        dask[v].wall_s = bench_proc_value(&l, key);
        snprintf(key, sizeof(key), "dask_%s_%s_cpu", kind, dask_variants[v]);
        dask[v].cpu_s = bench_proc_value(&l, key);
        snprintf(key, sizeof(key), "dask_%s_%s_peak_rss", kind, dask_variants[v]);
        dask[v].rss_mib = bench_proc_value(&l, key);
    }
}

/* Check that sluice's and dask's outputs agree up to rounding. */
static void
compare_outputs(const struct env *e, const char *kind)
{
    char a[4096], b[4096], name[128];
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    snprintf(a, sizeof(a), "%s/%s_out_sluice.zarr", e->data, kind);
    snprintf(b, sizeof(b), "%s/%s_out_dask_aligned.zarr", e->data, kind);
    if (peer(e, "compare", a, b, NULL, NULL, &l, &c) != 0)
        bench_proc_die("the comparison failed");
    double diff = bench_proc_value(&l, "compare_max_abs_diff");
    snprintf(name, sizeof(name), "%s_sluice_vs_dask_max_abs_diff", kind);
    sl_bench_report(name, diff, "count");
    snprintf(name, sizeof(name), "%s_sluice_vs_dask_equal_share", kind);
    sl_bench_report(name, bench_proc_value(&l, "compare_equal_share"), "fraction");
    if (diff < 0 || diff > 1)
        bench_proc_die("sluice and dask outputs differ by more than rounding");
}

/* sluice downsample of `kind`'s input, as bench_round runs it, in argv. */
static void
sluice_argv(const struct env *e, const char *kind, const char *factors, char *in, char *out,
            char *argv[9])
{
    snprintf(in, 4096, "%s/%s_in.zarr", e->data, kind);
    snprintf(out, 4096, "%s/%s_out_sluice.zarr", e->data, kind);
    char *a[] = {(char *)e->sluice, "downsample",    in,  out, "--factors", (char *)factors,
                 "--overwrite",     "--no-progress", NULL};
    memcpy(argv, a, sizeof(a));
}

/* The zstd floor of `kind` (median of `reps`), and sluice's median `s`
 * over it; 0 when measured. */
static int
bench_floor(const struct env *e, const char *kind, double share, int threads,
            const struct bench_proc_cost *s, int reps, double *floor_wall, double *floor_cpu)
{
    char in[4096], name[128];
    snprintf(in, sizeof(in), "%s/%s_in.zarr", e->data, kind);
    struct floor_chunks c;
    if (floor_load(in, &c) != 0)
        return -1;
    double w[16], u[16];
    int rc = 0;
    for (int i = 0; i < reps && rc == 0; i++)
        rc = floor_run(&c, threads, share, &w[i], &u[i]);
    floor_free(&c);
    malloc_trim(0);
    if (rc != 0)
        return -1;
    *floor_wall = bench_proc_median(w, reps);
    *floor_cpu = bench_proc_median(u, reps);
    snprintf(name, sizeof(name), "zstd_floor_%s_wall", kind);
    sl_bench_report(name, *floor_wall, "s");
    snprintf(name, sizeof(name), "zstd_floor_%s_cpu", kind);
    sl_bench_report(name, *floor_cpu, "s");
    snprintf(name, sizeof(name), "sluice_%s_wall_over_floor", kind);
    sl_bench_report(name, s->wall_s / *floor_wall, "x");
    snprintf(name, sizeof(name), "sluice_%s_cpu_over_floor", kind);
    sl_bench_report(name, s->cpu_s / *floor_cpu, "x");
    return 0;
}

/* Cold-cache runs, `reps` rounds of: sluice, the pipeline floor as it is
 * and with its read-ahead thread, then the device's cold read of the input,
 * each after the input's pages were dropped.  Medians: sluice against the
 * larger of the zstd floor and the device's read (the target), and
 * against the better pipeline floor run cold (what a program doing only
 * this task reaches from the same cold cache on the same cores). */
static void
bench_cold(const struct env *e, const char *kind, const char *factors, struct pipeline_spec *ps,
           int threads, double floor_wall, int reps)
{
    char in[4096], out[4096], *argv[9], name[128];
    sluice_argv(e, kind, factors, in, out, argv);
    double sl[16], plain[16], ahead[16], dev[16], rate[16];
    for (int i = 0; i < reps; i++) {
        struct bench_proc_cost cold;
        double cpu, phase[PIPELINE_PHASES];
        uint64_t bytes;
        /* Earlier runs' outputs written back first, so that write-back
         * still pending from them does not fall into a cold run. */
        sync();
        if (floor_evict(in) != 0) {
            printf("# %s cold cache: skipped (the page cache cannot be dropped here)\n", kind);
            return;
        }
        if (bench_proc_spawn(argv, NULL, &cold) != 0)
            bench_proc_die("sluice downsample failed (cold)");
        sl[i] = cold.wall_s;
        for (int v = 0; v < 2; v++) {
            ps->read_ahead = v;
            if (floor_evict(in) != 0 ||
                pipeline_run(ps, threads, v ? &ahead[i] : &plain[i], &cpu, phase) != 0)
                bench_proc_die("the pipeline floor failed (cold)");
        }
        ps->read_ahead = 0;
        if (floor_cold_read(in, &dev[i], &bytes) != 0)
            return;
        rate[i] = (double)bytes / 1e6 / dev[i];
    }
    const double sl_m = bench_proc_median(sl, reps), plain_m = bench_proc_median(plain, reps);
    const double ahead_m = bench_proc_median(ahead, reps), dev_m = bench_proc_median(dev, reps);
    snprintf(name, sizeof(name), "sluice_%s_cold_wall", kind);
    sl_bench_report(name, sl_m, "s");
    snprintf(name, sizeof(name), "pipeline_floor_%s_cold_wall", kind);
    sl_bench_report(name, plain_m, "s");
    snprintf(name, sizeof(name), "pipeline_floor_%s_cold_read_ahead_wall", kind);
    sl_bench_report(name, ahead_m, "s");
    snprintf(name, sizeof(name), "device_read_%s_time", kind);
    sl_bench_report(name, dev_m, "s");
    snprintf(name, sizeof(name), "device_read_%s_rate", kind);
    sl_bench_report(name, bench_proc_median(rate, reps), "MB/s");
    double floor = dev_m > floor_wall ? dev_m : floor_wall;
    snprintf(name, sizeof(name), "sluice_%s_cold_over_floor", kind);
    sl_bench_report(name, sl_m / floor, "x");
    double best = ahead_m < plain_m ? ahead_m : plain_m;
    snprintf(name, sizeof(name), "sluice_%s_cold_over_pipeline_floor_cold", kind);
    sl_bench_report(name, sl_m / best, "x");
    snprintf(name, sizeof(name), "pipeline_floor_%s_cold_over_floor", kind);
    sl_bench_report(name, best / floor, "x");
}

/* Where sluice's CPU time goes: a profiled run's shares of the median CPU
 * time `s`, its page faults, and thread time spent not running. */
static void
bench_profile(const struct env *e, const char *kind, const char *factors,
              const struct bench_proc_cost *s, int threads)
{
    char in[4096], out[4096], *argv[9], name[160];
    sluice_argv(e, kind, factors, in, out, argv);
    double share[PROFILE_N];
    snprintf(name, sizeof(name), "sluice_%s_page_faults", kind);
    sl_bench_report(name, s->faults, "count");
    snprintf(name, sizeof(name), "sluice_%s_waiting", kind);
    double idle = (double)threads * s->wall_s - s->cpu_s;
    sl_bench_report(name, idle > 0 ? idle : 0, "thread-s");
    if (profile_run(argv, share) != 0)
        return;
    for (int k = 0; k < PROFILE_N; k++) {
        snprintf(name, sizeof(name), "sluice_%s_cpu_%s", kind, profile_names[k]);
        sl_bench_report(name, share[k] * s->cpu_s, "s");
    }
}

/* The pipeline floor's lines: the median of `reps` runs `runs` (wall, CPU
 * and each phase's CPU), how many of its chunks equal sluice's, and
 * sluice's median `s` over it.  Its median cost in *p. */
static void
report_pipeline(const struct env *e, const char *kind, struct pipeline_spec *ps,
                const struct pipe_cost *runs, int reps, const struct bench_proc_cost *s,
                struct bench_proc_cost *p)
{
    char name[160], theirs[4096];
    struct bench_proc_cost c[16];
    for (int i = 0; i < reps; i++)
        c[i] = runs[i].c;
    *p = bench_proc_median_cost(c, reps);
    snprintf(name, sizeof(name), "pipeline_floor_%s_wall", kind);
    sl_bench_report(name, p->wall_s, "s");
    snprintf(name, sizeof(name), "pipeline_floor_%s_cpu", kind);
    sl_bench_report(name, p->cpu_s, "s");
    for (int k = 0; k < PIPELINE_PHASES; k++) {
        double v[16];
        for (int i = 0; i < reps; i++)
            v[i] = runs[i].phase_s[k];
        snprintf(name, sizeof(name), "pipeline_floor_%s_cpu_%s", kind, pipeline_phase_names[k]);
        sl_bench_report(name, bench_proc_median(v, reps), "s");
    }
    snprintf(theirs, sizeof(theirs), "%s/%s_out_sluice.zarr", e->data, kind);
    uint64_t equal, n;
    if (pipeline_compare(ps, ps->out_dir, theirs, &equal, &n) != 0)
        bench_proc_die("the pipeline floor's output cannot be compared with sluice's");
    snprintf(name, sizeof(name), "pipeline_floor_%s_chunks_equal_to_sluice", kind);
    sl_bench_report(name, n > 0 ? (double)equal / (double)n : 0, "fraction");
    if (equal != n)
        bench_proc_die(
            "the pipeline floor wrote other bytes than sluice: it does not do the same work");
    snprintf(name, sizeof(name), "sluice_%s_wall_over_pipeline_floor", kind);
    sl_bench_report(name, s->wall_s / p->wall_s, "x");
    snprintf(name, sizeof(name), "sluice_%s_cpu_over_pipeline_floor", kind);
    sl_bench_report(name, s->cpu_s / p->cpu_s, "x");
}

/* Measure one case in `reps` interleaved rounds; print medians and ratios. */
static void
bench_case(const struct env *e, const char *kind, const char *factors, struct pipeline_spec *ps,
           double raw_mb, double share, int reps)
{
    struct bench_proc_lines l;
    struct bench_proc_cost c, sl[16], dask[N_VARIANTS][16], round[N_VARIANTS];
    struct pipe_cost pipe[16];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cores > 0 && cores <= 16 ? (int)cores : 2;
    char pin[4096], pout[4096];
    snprintf(pin, sizeof(pin), "%s/%s_in.zarr", e->data, kind);
    snprintf(pout, sizeof(pout), "%s/%s_out_pipeline", e->data, kind);
    ps->in_dir = pin;
    ps->out_dir = pout;
    if (peer(e, "setup", kind, e->data, NULL, NULL, &l, &c) != 0)
        bench_proc_die("the peer could not create the input");
    for (int i = 0; i < reps; i++) {
        bench_round(e, kind, factors, ps, threads, &sl[i], &pipe[i], round);
        for (int v = 0; v < N_VARIANTS; v++)
            dask[v][i] = round[v];
    }
    char name[128];
    struct bench_proc_cost s = bench_proc_median_cost(sl, reps), best = {-1, -1, -1, -1};
    snprintf(name, sizeof(name), "sluice_%s", kind);
    bench_proc_report_cost(name, &s);
    snprintf(name, sizeof(name), "sluice_%s_input_rate", kind);
    sl_bench_report(name, raw_mb / s.wall_s, "MB/s");
    for (int v = 0; v < N_VARIANTS; v++) {
        struct bench_proc_cost d = bench_proc_median_cost(dask[v], reps);
        snprintf(name, sizeof(name), "dask_%s_%s", kind, dask_variants[v]);
        bench_proc_report_cost(name, &d);
        best.wall_s = best.wall_s < 0 || d.wall_s < best.wall_s ? d.wall_s : best.wall_s;
        best.cpu_s = best.cpu_s < 0 || d.cpu_s < best.cpu_s ? d.cpu_s : best.cpu_s;
        best.rss_mib = best.rss_mib < 0 || d.rss_mib < best.rss_mib ? d.rss_mib : best.rss_mib;
    }
    snprintf(name, sizeof(name), "dask_over_sluice_%s_wall", kind);
    sl_bench_report(name, best.wall_s / s.wall_s, "x");
    snprintf(name, sizeof(name), "dask_over_sluice_%s_cpu", kind);
    sl_bench_report(name, best.cpu_s / s.cpu_s, "x");
    snprintf(name, sizeof(name), "sluice_over_dask_%s_peak_rss", kind);
    sl_bench_report(name, s.rss_mib / best.rss_mib, "x");
    compare_outputs(e, kind);
    snprintf(name, sizeof(name), "bench_process_rss_at_fork_%s", kind);
    sl_bench_report(name, bench_proc_rss_at_fork(), "MiB");
    struct bench_proc_cost p;
    report_pipeline(e, kind, ps, pipe, reps, &s, &p);
    double floor_wall, floor_cpu;
    if (bench_floor(e, kind, share, threads, &s, reps, &floor_wall, &floor_cpu) == 0) {
        snprintf(name, sizeof(name), "pipeline_floor_%s_cpu_over_floor", kind);
        sl_bench_report(name, p.cpu_s / floor_cpu, "x");
        bench_cold(e, kind, factors, ps, threads, floor_wall, reps);
    }
    bench_profile(e, kind, factors, &s, threads);
}

int
main(int argc, char **argv)
{
    /* A child's peak RSS (wait4) starts from this process's RSS at the
     * fork, which the kernel carries across exec: keep it small.  Large
     * buffers always mmapped (a fixed threshold stops glibc from raising
     * it after a free, which left the floors' freed buffers resident in
     * the heap: every later child then "peaked" at 200 MiB), and freed
     * memory trimmed after each floor (malloc_trim). */
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    if (reps < 1 || reps > 15)
        reps = 3;
    struct env e;
    e.sluice = getenv("SL_SLUICE_EXE");
    const char *root = getenv("SL_BENCH_SOURCE_ROOT");
    e.data = getenv("SL_BENCH_DATA");
    if (e.sluice == NULL || root == NULL) {
        fprintf(stderr,
                "SL_SLUICE_EXE or SL_BENCH_SOURCE_ROOT unset: run via tests/bench/run.sh\n");
        return 0;
    }
    if (e.data == NULL)
        e.data = "/tmp/sluice-bench-data";
    snprintf(e.peer, sizeof(e.peer), "%s/tests/bench/graph/peer_dask_downsample.py", root);
    struct pipeline_spec p3 = {
        .rank = 3, .shape = {512, 512, 512}, .chunk = {64, 64, 64}, .factor = {2, 2, 2}};
    struct pipeline_spec p5 = {.rank = 5,
                               .shape = {4, 2, 32, 1024, 1024},
                               .chunk = {1, 1, 32, 256, 256},
                               .factor = {1, 1, 1, 2, 2}};
    bench_case(&e, "3d", "2,2,2", &p3, 512.0 * 512 * 512 * 2 / 1e6, 1.0 / 8, reps);
    bench_case(&e, "5d", "1,1,1,2,2", &p5, 4.0 * 2 * 32 * 1024 * 1024 * 2 / 1e6, 1.0 / 4, reps);
    return 0;
}
