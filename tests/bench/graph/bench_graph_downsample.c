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
 * Prints medians of REPS runs, the sluice / dask ratios against the faster
 * dask variant (wall) and the leaner one (RSS), and checks the outputs
 * agree to 1 (dask truncates the mean to uint16, sluice rounds half to
 * even).  The inputs are generated once under $SL_BENCH_DATA.
 *
 *   bench_graph_downsample [REPS]   (default 3; run by tests/bench/run.sh,
 *   which sets SL_SLUICE_EXE, SL_BENCH_SOURCE_ROOT and SL_BENCH_DATA)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* One child process's cost. */
struct cost {
    double wall_s;  /* wall time */
    double cpu_s;   /* user + system time */
    double rss_mib; /* peak resident set */
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

/* Run argv[0] with argv; capture its stdout into `out` (NULL: discard). */
static int
spawn(char *const argv[], struct lines *out, struct cost *c)
{
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
    double w[16], u[16], r[16];
    for (int i = 0; i < n; i++)
        w[i] = c[i].wall_s, u[i] = c[i].cpu_s, r[i] = c[i].rss_mib;
    qsort(w, (size_t)n, sizeof(double), cmp_double);
    qsort(u, (size_t)n, sizeof(double), cmp_double);
    qsort(r, (size_t)n, sizeof(double), cmp_double);
    return (struct cost){w[n / 2], u[n / 2], r[n / 2]};
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

/* Measure one case: sluice, then both dask variants; print the lines. */
static void
bench_case(const struct env *e, const char *kind, const char *factors, double raw_mb, int reps)
{
    char in[4096], out_sl[4096], out_dask[4096], name[128];
    struct lines l;
    struct cost c[16];
    snprintf(in, sizeof(in), "%s/%s_in.zarr", e->data, kind);
    snprintf(out_sl, sizeof(out_sl), "%s/%s_out_sluice.zarr", e->data, kind);
    if (peer(e, "setup", kind, e->data, NULL, NULL, &l, &c[0]) != 0)
        die("the peer could not create the input");
    for (int i = 0; i < reps; i++) {
        char *argv[] = {
            (char *)e->sluice, "downsample",    in,  out_sl, "--factors", (char *)factors,
            "--overwrite",     "--no-progress", NULL};
        if (spawn(argv, NULL, &c[i]) != 0)
            die("sluice downsample failed");
    }
    struct cost s = median_cost(c, reps);
    snprintf(name, sizeof(name), "sluice_%s_wall", kind);
    sl_bench_report(name, s.wall_s, "s");
    snprintf(name, sizeof(name), "sluice_%s_cpu", kind);
    sl_bench_report(name, s.cpu_s, "s");
    snprintf(name, sizeof(name), "sluice_%s_peak_rss", kind);
    sl_bench_report(name, s.rss_mib, "MiB");
    snprintf(name, sizeof(name), "sluice_%s_input_rate", kind);
    sl_bench_report(name, raw_mb / s.wall_s, "MB/s");

    double best_wall = -1, best_rss = -1;
    const char *variants[] = {"rechunk", "aligned"};
    for (int v = 0; v < 2; v++) {
        double w[16], u[16], r[16];
        snprintf(out_dask, sizeof(out_dask), "%s/%s_out_dask_%s.zarr", e->data, kind, variants[v]);
        for (int i = 0; i < reps; i++) {
            if (peer(e, "run", kind, variants[v], e->data, out_dask, &l, &c[i]) != 0)
                die("the dask peer failed");
            char key[128];
            snprintf(key, sizeof(key), "dask_%s_%s_wall", kind, variants[v]);
            w[i] = line_value(&l, key);
            snprintf(key, sizeof(key), "dask_%s_%s_cpu", kind, variants[v]);
            u[i] = line_value(&l, key);
            snprintf(key, sizeof(key), "dask_%s_%s_peak_rss", kind, variants[v]);
            r[i] = line_value(&l, key);
        }
        for (int i = 0; i < reps; i++)
            c[i] = (struct cost){w[i], u[i], r[i]};
        struct cost d = median_cost(c, reps);
        snprintf(name, sizeof(name), "dask_%s_%s_wall", kind, variants[v]);
        sl_bench_report(name, d.wall_s, "s");
        snprintf(name, sizeof(name), "dask_%s_%s_cpu", kind, variants[v]);
        sl_bench_report(name, d.cpu_s, "s");
        snprintf(name, sizeof(name), "dask_%s_%s_peak_rss", kind, variants[v]);
        sl_bench_report(name, d.rss_mib, "MiB");
        best_wall = best_wall < 0 || d.wall_s < best_wall ? d.wall_s : best_wall;
        best_rss = best_rss < 0 || d.rss_mib < best_rss ? d.rss_mib : best_rss;
    }
    snprintf(name, sizeof(name), "sluice_over_dask_%s_wall", kind);
    sl_bench_report(name, s.wall_s / best_wall, "x");
    snprintf(name, sizeof(name), "dask_over_sluice_%s_wall", kind);
    sl_bench_report(name, best_wall / s.wall_s, "x");
    snprintf(name, sizeof(name), "sluice_over_dask_%s_peak_rss", kind);
    sl_bench_report(name, s.rss_mib / best_rss, "x");

    /* Same values up to dask's truncation against sluice's rounding. */
    if (peer(e, "compare", out_sl, out_dask, NULL, NULL, &l, &c[0]) != 0)
        die("the comparison failed");
    double diff = line_value(&l, "compare_max_abs_diff");
    double share = line_value(&l, "compare_equal_share");
    snprintf(name, sizeof(name), "%s_sluice_vs_dask_max_abs_diff", kind);
    sl_bench_report(name, diff, "count");
    snprintf(name, sizeof(name), "%s_sluice_vs_dask_equal_share", kind);
    sl_bench_report(name, share, "fraction");
    if (diff < 0 || diff > 1)
        die("sluice and dask outputs differ by more than rounding");
}

int
main(int argc, char **argv)
{
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
    bench_case(&e, "3d", "2,2,2", 512.0 * 512 * 512 * 2 / 1e6, reps);
    bench_case(&e, "5d", "1,1,1,2,2", 4.0 * 2 * 32 * 1024 * 1024 * 2 / 1e6, reps);
    return 0;
}
