/* SPDX-License-Identifier: MIT */
/*
 * What the graph benchmarks that time `sluice run` and Python peers as
 * child processes share (bench_graph_downsample, bench_graph_expr,
 * bench_graph_reduce): running a
 * child with its stdout captured and its wall time, CPU time and peak RSS
 * taken by wait4(); reading its `name: value unit` and `#` lines; medians
 * of rounds and their report; removing an earlier output; and the 5-D demo input, made once
 * by `sluice generate`.  Every failure prints "<program>: <what>" and
 * exits 1.
 */
#ifndef SL_BENCH_PROC_H
#define SL_BENCH_PROC_H

#include <stddef.h>

/* One run's cost. */
struct bench_proc_cost {
    double wall_s;  /* wall time */
    double cpu_s;   /* user + system time */
    double rss_mib; /* peak resident set; < 0 when not measured */
    double faults;  /* page faults, minor and major; < 0 when not measured */
};

/* Captured stdout of a child. */
struct bench_proc_lines {
    char text[8192]; /* what the child printed (the first 8191 bytes) */
    size_t len;      /* bytes in text */
};

/* Print "<program>: <what>" on stderr and exit 1. */
_Noreturn void bench_proc_die(const char *what);

/* Run argv[0] with argv; its stdout into `out` (NULL: discard), its cost
 * by wait4 into `c`.  Its exit status, or 128 when it was killed. */
int bench_proc_spawn(char *const argv[], struct bench_proc_lines *out, struct bench_proc_cost *c);

/* The most this process held resident when it forked a child (MiB): a
 * child's peak RSS counts from there. */
double bench_proc_rss_at_fork(void);

/* The value of line `name: value unit` in `l`, or -1. */
double bench_proc_value(const struct bench_proc_lines *l, const char *name);

/* Print the lines of `l` that begin with '#' (a peer's notes). */
void bench_proc_notes(const struct bench_proc_lines *l);

/* The median of `n` (1 ... 16) values, sorted in place. */
double bench_proc_median(double *v, int n);

/* The median of each field over `n` (1 ... 16) costs. */
struct bench_proc_cost bench_proc_median_cost(const struct bench_proc_cost *c, int n);

/* Print `prefix`_wall and `prefix`_cpu of `c` and, when measured,
 * `prefix`_peak_rss (sl_bench_report). */
void bench_proc_report_cost(const char *prefix, const struct bench_proc_cost *c);

/* The rounds to run: argv[1], else $REPS, else 3; 3 when outside 1 ... max. */
int bench_proc_reps(int argc, char **argv, int max);

/* Remove the tree at `path` if there is one. */
void bench_proc_rm_tree(const char *path);

/* `dir`/raw.zarr, the 5-D demo image of examples/quickstart.sh (uint16
 * (2, 2, 32, 1024, 1024) in (1, 1, 32, 256, 256) chunks) in Zarr v2 with
 * zstd level 1, by `sluice generate` (the launcher `sluice`), unless it is
 * there; says so when it makes it. */
void bench_proc_demo_raw(const char *sluice, const char *dir);

#endif /* SL_BENCH_PROC_H */
