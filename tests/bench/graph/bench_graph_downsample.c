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
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "downsample_floor.h"

/* One child process's cost. */
struct cost {
    double wall_s;  /* wall time */
    double cpu_s;   /* user + system time */
    double rss_mib; /* peak resident set */
    double faults;  /* page faults (minor and major) */
};

/* One run of the pipeline floor: its cost (wall and CPU) and phases. */
struct pipe_cost {
    struct cost c;
    double phase_s[PIPELINE_PHASES];
};

/* Captured `name: value unit` lines of a child's stdout. */
struct lines {
    char text[8192]; /* what the child printed */
    size_t len;      /* bytes in text */
};

static void
die(const char *what)
{
    fprintf(stderr, "bench_graph_downsample: %s\n", what);
    exit(1);
}

/* The most this process held resident when it forked a child (MiB): a
 * child's peak RSS counts from there (bench_case prints it). */
static double parent_rss_at_fork;

/* This process's resident set now, MiB (VmRSS), or 0. */
static double
self_rss_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atof(line + 6);
    if (f != NULL)
        fclose(f);
    return kib / 1024.0;
}

/* Run argv[0] with argv; capture its stdout into `out` (NULL: discard). */
static int
spawn(char *const argv[], struct lines *out, struct cost *c)
{
    double rss = self_rss_mib();
    parent_rss_at_fork = rss > parent_rss_at_fork ? rss : parent_rss_at_fork;
    int fd[2];
    if (pipe(fd) != 0)
        die("pipe failed");
    double t0 = sl_bench_now();
    pid_t pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    char buf[1024];
    ssize_t n;
    if (out != NULL)
        out->len = 0;
    while ((n = read(fd[0], buf, sizeof(buf))) > 0) {
        if (out != NULL && out->len + (size_t)n < sizeof(out->text)) {
            memcpy(out->text + out->len, buf, (size_t)n);
            out->len += (size_t)n;
        }
    }
    close(fd[0]);
    if (out != NULL)
        out->text[out->len] = '\0';
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid)
        die("wait4 failed");
    c->wall_s = sl_bench_now() - t0;
    c->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    c->rss_mib = (double)ru.ru_maxrss / 1024.0;
    c->faults = (double)ru.ru_minflt + (double)ru.ru_majflt;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The value of line `name: value unit` in `l`, or -1. */
static double
line_value(const struct lines *l, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = l->text; p != NULL && *p != '\0';) {
        if (strncmp(p, name, n) == 0 && p[n] == ':')
            return atof(p + n + 1);
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    return -1;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of each field over `n` costs. */
static struct cost
median_cost(const struct cost *c, int n)
{
    double w[16], u[16], r[16], f[16];
    for (int i = 0; i < n; i++)
        w[i] = c[i].wall_s, u[i] = c[i].cpu_s, r[i] = c[i].rss_mib, f[i] = c[i].faults;
    qsort(w, (size_t)n, sizeof(double), cmp_double);
    qsort(u, (size_t)n, sizeof(double), cmp_double);
    qsort(r, (size_t)n, sizeof(double), cmp_double);
    qsort(f, (size_t)n, sizeof(double), cmp_double);
    return (struct cost){w[n / 2], u[n / 2], r[n / 2], f[n / 2]};
}

/* Paths and programs of this invocation. */
struct env {
    const char *sluice; /* the launcher */
    char peer[4096];    /* peer_dask_downsample.py */
    const char *data;   /* inputs and outputs */
};

/* Run the peer with `args` (NULL-terminated after the script). */
static int
peer(const struct env *e, const char *a1, const char *a2, const char *a3, const char *a4,
     const char *a5, struct lines *out, struct cost *c)
{
    char *argv[] = {"/usr/bin/python3", (char *)e->peer, (char *)a1, (char *)a2,
                    (char *)a3,         (char *)a4,      (char *)a5, NULL};
    return spawn(argv, out, c);
}

/* The dask variants measured. */
static const char *const dask_variants[] = {"rechunk", "aligned"};
#define N_VARIANTS 2

/* One round: sluice once, then each dask variant once (interleaved, so a
 * neighbour's load on this shared machine falls on both alike). */
static void
bench_round(const struct env *e, const char *kind, const char *factors,
            const struct pipeline_spec *ps, int threads, struct cost *sl, struct pipe_cost *pipe,
            struct cost *dask)
{
    char in[4096], out[4096];
    snprintf(in, sizeof(in), "%s/%s_in.zarr", e->data, kind);
    snprintf(out, sizeof(out), "%s/%s_out_sluice.zarr", e->data, kind);
    char *argv[] = {(char *)e->sluice, "downsample",    in,  out, "--factors", (char *)factors,
                    "--overwrite",     "--no-progress", NULL};
    if (spawn(argv, NULL, sl) != 0)
        die("sluice downsample failed");
    pipe->c = (struct cost){-1, -1, -1, -1};
    if (pipeline_run(ps, threads, &pipe->c.wall_s, &pipe->c.cpu_s, pipe->phase_s) != 0)
        die("the pipeline floor failed");
    malloc_trim(0);
    for (int v = 0; v < N_VARIANTS; v++) {
        struct lines l;
        struct cost whole;
        char key[128];
        snprintf(out, sizeof(out), "%s/%s_out_dask_%s.zarr", e->data, kind, dask_variants[v]);
        if (peer(e, "run", kind, dask_variants[v], e->data, out, &l, &whole) != 0)
            die("the dask peer failed");
        snprintf(key, sizeof(key), "dask_%s_%s_wall", kind, dask_variants[v]);
        dask[v].wall_s = line_value(&l, key);
        snprintf(key, sizeof(key), "dask_%s_%s_cpu", kind, dask_variants[v]);
        dask[v].cpu_s = line_value(&l, key);
        snprintf(key, sizeof(key), "dask_%s_%s_peak_rss", kind, dask_variants[v]);
        dask[v].rss_mib = line_value(&l, key);
    }
}

/* Print `prefix`_{wall,cpu,peak_rss} of `c`. */
static void
report_cost(const char *prefix, const struct cost *c)
{
    char name[160];
    snprintf(name, sizeof(name), "%s_wall", prefix);
    sl_bench_report(name, c->wall_s, "s");
    snprintf(name, sizeof(name), "%s_cpu", prefix);
    sl_bench_report(name, c->cpu_s, "s");
    snprintf(name, sizeof(name), "%s_peak_rss", prefix);
    sl_bench_report(name, c->rss_mib, "MiB");
}

/* Check that sluice's and dask's outputs agree up to rounding. */
static void
compare_outputs(const struct env *e, const char *kind)
{
    char a[4096], b[4096], name[128];
    struct lines l;
    struct cost c;
    snprintf(a, sizeof(a), "%s/%s_out_sluice.zarr", e->data, kind);
    snprintf(b, sizeof(b), "%s/%s_out_dask_aligned.zarr", e->data, kind);
    if (peer(e, "compare", a, b, NULL, NULL, &l, &c) != 0)
        die("the comparison failed");
    double diff = line_value(&l, "compare_max_abs_diff");
    snprintf(name, sizeof(name), "%s_sluice_vs_dask_max_abs_diff", kind);
    sl_bench_report(name, diff, "count");
    snprintf(name, sizeof(name), "%s_sluice_vs_dask_equal_share", kind);
    sl_bench_report(name, line_value(&l, "compare_equal_share"), "fraction");
    if (diff < 0 || diff > 1)
        die("sluice and dask outputs differ by more than rounding");
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
bench_floor(const struct env *e, const char *kind, double share, int threads, const struct cost *s,
            int reps, double *floor_wall, double *floor_cpu)
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
    qsort(w, (size_t)reps, sizeof(double), cmp_double);
    qsort(u, (size_t)reps, sizeof(double), cmp_double);
    *floor_wall = w[reps / 2];
    *floor_cpu = u[reps / 2];
    snprintf(name, sizeof(name), "zstd_floor_%s_wall", kind);
    sl_bench_report(name, w[reps / 2], "s");
    snprintf(name, sizeof(name), "zstd_floor_%s_cpu", kind);
    sl_bench_report(name, u[reps / 2], "s");
    snprintf(name, sizeof(name), "sluice_%s_wall_over_floor", kind);
    sl_bench_report(name, s->wall_s / w[reps / 2], "x");
    snprintf(name, sizeof(name), "sluice_%s_cpu_over_floor", kind);
    sl_bench_report(name, s->cpu_s / u[reps / 2], "x");
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
        struct cost cold;
        double cpu, phase[PIPELINE_PHASES];
        uint64_t bytes;
        /* Earlier runs' outputs written back first, so that write-back
         * still pending from them does not fall into a cold run. */
        sync();
        if (floor_evict(in) != 0) {
            printf("# %s cold cache: skipped (the page cache cannot be dropped here)\n", kind);
            return;
        }
        if (spawn(argv, NULL, &cold) != 0)
            die("sluice downsample failed (cold)");
        sl[i] = cold.wall_s;
        for (int v = 0; v < 2; v++) {
            ps->read_ahead = v;
            if (floor_evict(in) != 0 ||
                pipeline_run(ps, threads, v ? &ahead[i] : &plain[i], &cpu, phase) != 0)
                die("the pipeline floor failed (cold)");
        }
        ps->read_ahead = 0;
        if (floor_cold_read(in, &dev[i], &bytes) != 0)
            return;
        rate[i] = (double)bytes / 1e6 / dev[i];
    }
    double *cols[] = {sl, plain, ahead, dev, rate};
    for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
        qsort(cols[c], (size_t)reps, sizeof(double), cmp_double);
    const int m = reps / 2;
    snprintf(name, sizeof(name), "sluice_%s_cold_wall", kind);
    sl_bench_report(name, sl[m], "s");
    snprintf(name, sizeof(name), "pipeline_floor_%s_cold_wall", kind);
    sl_bench_report(name, plain[m], "s");
    snprintf(name, sizeof(name), "pipeline_floor_%s_cold_read_ahead_wall", kind);
    sl_bench_report(name, ahead[m], "s");
    snprintf(name, sizeof(name), "device_read_%s_time", kind);
    sl_bench_report(name, dev[m], "s");
    snprintf(name, sizeof(name), "device_read_%s_rate", kind);
    sl_bench_report(name, rate[m], "MB/s");
    double floor = dev[m] > floor_wall ? dev[m] : floor_wall;
    snprintf(name, sizeof(name), "sluice_%s_cold_over_floor", kind);
    sl_bench_report(name, sl[m] / floor, "x");
    double best = ahead[m] < plain[m] ? ahead[m] : plain[m];
    snprintf(name, sizeof(name), "sluice_%s_cold_over_pipeline_floor_cold", kind);
    sl_bench_report(name, sl[m] / best, "x");
    snprintf(name, sizeof(name), "pipeline_floor_%s_cold_over_floor", kind);
    sl_bench_report(name, best / floor, "x");
}

/* Where sluice's CPU time goes: a profiled run's shares of the median CPU
 * time `s`, its page faults, and thread time spent not running. */
static void
bench_profile(const struct env *e, const char *kind, const char *factors, const struct cost *s,
              int threads)
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
                const struct pipe_cost *runs, int reps, const struct cost *s, struct cost *p)
{
    char name[160], theirs[4096];
    struct cost c[16];
    for (int i = 0; i < reps; i++)
        c[i] = runs[i].c;
    *p = median_cost(c, reps);
    snprintf(name, sizeof(name), "pipeline_floor_%s_wall", kind);
    sl_bench_report(name, p->wall_s, "s");
    snprintf(name, sizeof(name), "pipeline_floor_%s_cpu", kind);
    sl_bench_report(name, p->cpu_s, "s");
    for (int k = 0; k < PIPELINE_PHASES; k++) {
        double v[16];
        for (int i = 0; i < reps; i++)
            v[i] = runs[i].phase_s[k];
        qsort(v, (size_t)reps, sizeof(double), cmp_double);
        snprintf(name, sizeof(name), "pipeline_floor_%s_cpu_%s", kind, pipeline_phase_names[k]);
        sl_bench_report(name, v[reps / 2], "s");
    }
    snprintf(theirs, sizeof(theirs), "%s/%s_out_sluice.zarr", e->data, kind);
    uint64_t equal, n;
    if (pipeline_compare(ps, ps->out_dir, theirs, &equal, &n) != 0)
        die("the pipeline floor's output cannot be compared with sluice's");
    snprintf(name, sizeof(name), "pipeline_floor_%s_chunks_equal_to_sluice", kind);
    sl_bench_report(name, n > 0 ? (double)equal / (double)n : 0, "fraction");
    if (equal != n)
        die("the pipeline floor wrote other bytes than sluice: it does not do the same work");
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
    struct lines l;
    struct cost c, sl[16], dask[N_VARIANTS][16], round[N_VARIANTS];
    struct pipe_cost pipe[16];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cores > 0 && cores <= 16 ? (int)cores : 2;
    char pin[4096], pout[4096];
    snprintf(pin, sizeof(pin), "%s/%s_in.zarr", e->data, kind);
    snprintf(pout, sizeof(pout), "%s/%s_out_pipeline", e->data, kind);
    ps->in_dir = pin;
    ps->out_dir = pout;
    if (peer(e, "setup", kind, e->data, NULL, NULL, &l, &c) != 0)
        die("the peer could not create the input");
    for (int i = 0; i < reps; i++) {
        bench_round(e, kind, factors, ps, threads, &sl[i], &pipe[i], round);
        for (int v = 0; v < N_VARIANTS; v++)
            dask[v][i] = round[v];
    }
    char name[128];
    struct cost s = median_cost(sl, reps), best = {-1, -1, -1, -1};
    snprintf(name, sizeof(name), "sluice_%s", kind);
    report_cost(name, &s);
    snprintf(name, sizeof(name), "sluice_%s_input_rate", kind);
    sl_bench_report(name, raw_mb / s.wall_s, "MB/s");
    for (int v = 0; v < N_VARIANTS; v++) {
        struct cost d = median_cost(dask[v], reps);
        snprintf(name, sizeof(name), "dask_%s_%s", kind, dask_variants[v]);
        report_cost(name, &d);
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
    sl_bench_report(name, parent_rss_at_fork, "MiB");
    struct cost p;
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
