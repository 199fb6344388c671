/* SPDX-License-Identifier: MIT */
/*
 * What the benchmarks over the network (bench_io_remote, bench_io_s3) share:
 * running peer_remote.py's helpers and keeping their `name: value unit`
 * lines, a server helper run as a child (nginx or s3rver behind the latency
 * proxy of tests/remote/serve.py), the proxy's delay and log, the loopback
 * bandwidth, and a child command's wall time and peak RSS.  Every failure
 * prints "<program>: <what>" and exits 1: a benchmark never prints figures
 * made up of a half-started server.
 */
#ifndef SL_BENCH_REMOTE_H
#define SL_BENCH_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <sluice.h>

/* Read the environment tests/bench/run.sh sets: the source root
 * (SL_BENCH_SOURCE_ROOT), the launcher (SL_SLUICE_EXE) and the data folder
 * (SL_BENCH_DATA, default /tmp/sluice-bench-data), and name the program
 * `prog` in failures.  False, after saying so on stderr, when the first
 * two are not set: the bench is then skipped. */
bool bench_remote_init(const char *prog, const char **root, const char **exe, const char **dir);

/* REPS, the program's first argument; `dflt` when there is none or it is
 * below 1. */
int bench_reps(int argc, char **argv, int dflt);

/* Print "<prog>: <what>" (and the error's text) on stderr, exit 1. */
void bench_remote_fail(const char *what);
void bench_remote_die(const char *what, const struct sl_error *err);

/* Print `<tag>_<name>: v unit` (sl_bench_report). */
void bench_report_tagged(const char *tag, const char *name, double v, const char *unit);

/* Run the shell command `cmd`; exits naming `what` (`cmd` when NULL) when
 * it fails. */
void bench_shell(const char *cmd, const char *what);

/* Make the array `path` with `exe generate PATH OPTS` unless it is there. */
void bench_generate_once(const char *exe, const char *path, const char *opts);

/* `name: value unit` lines of one helper run, kept to look values up. */
struct bench_lines {
    int n;
    char name[32][64];
    double value[32];
};

/* The value of `name`, -1 when the helper printed none. */
double bench_lines_get(const struct bench_lines *l, const char *name);

/* The value of `name`; exits naming `what` when the helper printed none. */
double bench_lines_need(const struct bench_lines *l, const char *name, const char *what);

/* Run the shell command `cmd`; keep its `name: value unit` lines, printing
 * them again as `<prefix><name>: ...` when prefix is not NULL.  Exits when
 * the command fails. */
void bench_helper_run(const char *cmd, const char *prefix, struct bench_lines *l);

/* The command line running peer_remote.py with `args`. */
void bench_peer_cmd(char *cmd, size_t size, const char *args);

/* A server helper of peer_remote.py running as this program's child: its
 * first line is "PID WORD1 WORD2 ..." (URLs, then keys for s3serve). */
struct bench_server {
    FILE *f;
    int pid;
    int n_words;
    char word[4][256];
};

/* Start `peer_remote.py <args>` and read its line of `n_words` words (at
 * most 4); exits saying `why_not` when it prints fewer (the helper's own
 * message is on stderr above). */
void bench_server_start(struct bench_server *s, const char *args, int n_words, const char *why_not);
void bench_server_stop(struct bench_server *s);

/* nginx serving `dir` behind the latency proxy (`peer_remote.py serve`):
 * word[0] nginx's URL, word[1] the proxy's, word[2] its control URL. */
void bench_http_start(struct bench_server *s, const char *dir);

/* The proxy at `control`: every request waits `ms` (rules cleared, log
 * emptied); empty its log; its log's totals (requests, get, put, other;
 * bytes sent back, req_bytes received; the most open at once, max_open,
 * get_max_open, put_max_open; the seconds with one open, get_busy,
 * put_busy). */
void bench_proxy_delay(const char *control, double ms);
void bench_proxy_clear(const char *control);
void bench_proxy_log(const char *control, struct bench_lines *l);

/* The proxy's log totals, every one of them required. */
struct bench_proxy_totals {
    double requests, get, put, other;
    double bytes, req_bytes;           /* body bytes sent back, received */
    double get_max_open, put_max_open; /* the most open at once */
    double get_busy, put_busy;         /* seconds with one open */
};

/* Read the log's totals of the proxy at `control` into `t`; exits naming
 * the first one the log lacks. */
void bench_proxy_totals(const char *control, struct bench_proxy_totals *t);

/* Best MB/s of 3 curl GETs of `url`remote_bw.bin (256 MiB, made once in
 * `dir`), the loopback bandwidth of the floors. */
double bench_bandwidth(const char *dir, const char *url);

/* Wall seconds, peak RSS (MiB) and CPU seconds (user + system; `cpu_s` may
 * be NULL) of the shell command `cmd`, run as a child; exits when it
 * fails. */
double bench_child_run(const char *cmd, double *rss_mib, double *cpu_s);

/* CPU seconds (user + system) used so far by process `pid` and those it
 * started that still run (read from /proc); 0 when it is gone. */
double bench_tree_cpu(int pid);

/* Make `dir`/remote_ds512.zarr with `exe` (the sluice program) unless it
 * is there: the downsample's input over HTTP and S3, 512^3 uint16 in 64^3
 * chunks, `sluice generate`'s default codec (zstd 1). */
void bench_ds512_make(const char *exe, const char *dir);

#endif /* SL_BENCH_REMOTE_H */
