/* SPDX-License-Identifier: MIT */
/*
 * Writing to and reading from S3: s3rver 3.7.1 (tests/remote/s3serve.py)
 * behind the latency proxy of tests/remote/serve.py, which checks every
 * request's SigV4 signature, at 0 and 20 ms per request.  Each case is one
 * process (wall time, peak RSS and CPU from wait4; the CPU of the proxy and
 * s3rver from /proc), and its requests by method, body bytes both ways, the
 * most GETs and PUTs open at once and the share of the run with one open
 * come from the proxy's log:
 *
 *   upload      `sluice copy` of bench_io_remote's 512^3 uint16 array (64^3
 *               chunks, zstd 1, 512 objects) from disk to s3:// at 0 ms:
 *               the downsample's input; beside it (upload_peer64) the same
 *               files PUT by Python threads 64 at once, at 0 and 20 ms
 *   downsample  `sluice downsample s3://.../ds512.zarr s3://.../out.zarr
 *               --factors 2,2,2 --memory 256M` (the case of bench_io_remote
 *               over HTTP, written to S3 too), at 0 and 20 ms; at 20 ms
 *               also with the output on disk (_to_disk), to tell the cost
 *               of the writes from that of the reads
 *   pyramid_5d  `sluice pyramid` of the demo's 2 x 2 x 32 x 1024 x 1024
 *               uint16 TCZYX image (examples/quickstart.sh; on disk) into a
 *               4-level group in s3://, chunks (1,1,32,256,256) in shards
 *               (1,1,32,1024,1024), zstd 1, as examples/graphs/pyramid.json,
 *               `--memory 1G`, at 20 ms; each level is read back from S3
 *
 * Each output is checked against the same command run on disk (sluice
 * checksum of the S3 and local arrays), so a wrong run fails instead of
 * printing figures.  The floor: ceil(requests / 64) x latency + bytes /
 * loopback bandwidth, bytes counting both ways (GET bodies and PUT bodies)
 * and the bandwidth being the best of 3 curl GETs of 256 MiB from nginx;
 * floor_via_proxy is the same with the GET and PUT bandwidths of one 64 MiB
 * object through the proxy and s3rver (curl --aws-sigv4), which the test
 * server cannot beat.  The best of REPS runs of each case is kept.
 *
 *   bench_io_s3 [REPS]   (default 1; needs SL_BENCH_SOURCE_ROOT and
 *                         SL_SLUICE_EXE, as tests/bench/run.sh sets)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sluice.h>

#include "bench.h"
#include "bench_remote.h"

#define WINDOW 64 /* the remote stores' default io_concurrency */
#define BUCKET "sluice-bench"
#define PYRAMID_OPTS                                                                    \
    "--levels 4 --factors 1,1,1,2,2 --chunks 1,1,32,256,256 --shards 1,1,32,1024,1024 " \
    "--codec zstd:1 --memory 1G"

static const char *g_root, *g_dir, *g_exe, *g_proxy, *g_control;
static double g_bw;               /* MB/s, nginx on loopback */
static double g_bw_get, g_bw_put; /* MB/s through the proxy and s3rver */
static unsigned g_seq;            /* a fresh S3 prefix per run */
static int g_server_pid;          /* the proxy's and s3rver's helper */

/* One sluice process and what the proxy saw of it. */
struct s3_run {
    double wall, rss_mib;
    double cpu, server_cpu; /* CPU seconds of sluice, of the proxy and s3rver */
    struct bench_proxy_totals log;
};

/* Run `cmd` once through the proxy at `delay_ms`; its wall time, peak RSS
 * and the proxy's counts. */
static void
s3_run_once(const char *cmd, double delay_ms, struct s3_run *r)
{
    bench_proxy_delay(g_control, delay_ms);
    double server0 = bench_tree_cpu(g_server_pid);
    r->wall = bench_child_run(cmd, &r->rss_mib, &r->cpu);
    r->server_cpu = bench_tree_cpu(g_server_pid) - server0;
    bench_proxy_totals(g_control, &r->log);
}

/* Print run `r` of case `tag` beside its floors; `budget_mib` 0: none. */
static void
s3_report(const char *tag, const struct s3_run *r, double delay_ms, double budget_mib)
{
    const struct bench_proxy_totals *t = &r->log;
    double rounds = ceil(t->requests / WINDOW) * delay_ms / 1e3;
    double bytes = t->bytes + t->req_bytes; /* GET bodies and PUT bodies */
    double floor_s = rounds + bytes / (g_bw * 1e6);
    double floor_proxy = rounds + t->bytes / (g_bw_get * 1e6) + t->req_bytes / (g_bw_put * 1e6);
    bench_report_tagged(tag, "wall", r->wall, "s");
    bench_report_tagged(tag, "requests", t->requests, "requests");
    bench_report_tagged(tag, "get_requests", t->get, "requests");
    bench_report_tagged(tag, "put_requests", t->put, "requests");
    bench_report_tagged(tag, "other_requests", t->other, "requests");
    bench_report_tagged(tag, "get_max_open", t->get_max_open, "requests");
    bench_report_tagged(tag, "put_max_open", t->put_max_open, "requests");
    /* A PUT open nearly all the time, one at a time: the writes are the
     * run's critical path. */
    bench_report_tagged(tag, "get_busy", t->get_busy / r->wall, "x");
    bench_report_tagged(tag, "put_busy", t->put_busy / r->wall, "x");
    bench_report_tagged(tag, "bytes", bytes, "bytes");
    bench_report_tagged(tag, "bytes_get", t->bytes, "bytes");
    bench_report_tagged(tag, "bytes_put", t->req_bytes, "bytes");
    bench_report_tagged(tag, "floor", floor_s, "s");
    bench_report_tagged(tag, "floor_via_proxy", floor_proxy, "s");
    bench_report_tagged(tag, "sluice_cpu", r->cpu, "s");
    bench_report_tagged(tag, "server_cpu", r->server_cpu, "s");
    /* Near 1: the cores were busy with this run alone, whatever the floor. */
    bench_report_tagged(
        tag, "cpu_busy",
        (r->cpu + r->server_cpu) / (r->wall * (double)sysconf(_SC_NPROCESSORS_ONLN)), "x");
    bench_report_tagged(tag, "peak_rss", r->rss_mib, "MiB");
    if (budget_mib > 0) {
        bench_report_tagged(tag, "memory_budget", budget_mib, "MiB");
        bench_report_tagged(tag, "peak_rss_over_budget", r->rss_mib / budget_mib, "x");
    }
    bench_report_tagged(tag, "over_floor_via_proxy", r->wall / floor_proxy, "x");
    bench_report_tagged(tag, "over_floor", r->wall / floor_s, "x");
}

/* The first word `sluice checksum PATH` prints, into `out` (65 bytes). */
static void
checksum(const char *path, char *out)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "%s checksum %s --endpoint %s", g_exe, path, g_proxy);
    FILE *f = popen(cmd, "r");
    if (f == NULL || fscanf(f, "%64s", out) != 1 || pclose(f) != 0)
        bench_remote_fail(cmd);
}

/* Fail unless the S3 array `url` holds what the local array `path` holds. */
static void
check_same(const char *url, const char *path)
{
    char got[65], want[65], msg[8400];
    bench_proxy_delay(g_control, 0);
    checksum(url, got);
    checksum(path, want);
    if (strcmp(got, want) != 0) {
        snprintf(msg, sizeof(msg), "%s reads %s, but the same run on disk (%s) gives %s", url, got,
                 path, want);
        bench_remote_fail(msg);
    }
}

/* What a case runs and how its output is checked: `head` URL `tail`, URL
 * the S3 output, made fresh each run under `stem`; `local`, the same
 * command's output on disk; `parts`, the arrays compared under both (""
 * the output itself), NULL-terminated. */
struct s3_case {
    const char *tag, *head, *tail, *stem, *local;
    const char *const *parts;
    double budget_mib;
};

/* Best of `reps` runs of case `c` at `delay_ms`, every output checked. */
static void
s3_case_run(const struct s3_case *c, double delay_ms, int reps)
{
    struct s3_run best = {.wall = INFINITY}, r;
    char url[512], cmd[8192], part_url[600], part_path[4200];
    for (int i = 0; i < reps; i++) {
        snprintf(url, sizeof(url), "s3://" BUCKET "/%s_%u.zarr", c->stem, g_seq++);
        snprintf(cmd, sizeof(cmd), "%s %s %s >/dev/null", c->head, url, c->tail);
        s3_run_once(cmd, delay_ms, &r);
        if (r.wall < best.wall)
            best = r;
        for (const char *const *p = c->parts; *p != NULL; p++) {
            snprintf(part_url, sizeof(part_url), "%s%s", url, *p);
            snprintf(part_path, sizeof(part_path), "%s%s", c->local, *p);
            check_same(part_url, part_path);
        }
    }
    s3_report(c->tag, &best, delay_ms, c->budget_mib);
}

static void
run_downsample(int reps)
{
    char cmd[8192], head[4200], tail[1024], ref[4096], in[512];
    bench_ds512_make(g_exe, g_dir);
    snprintf(ref, sizeof(ref), "%s/s3_ds512_ref.zarr", g_dir);
    snprintf(cmd, sizeof(cmd),
             "%s downsample %s/remote_ds512.zarr %s --factors 2,2,2 --overwrite --no-progress "
             ">/dev/null",
             g_exe, g_dir, ref);
    bench_shell(cmd, NULL);
    /* The input: the same array, copied into S3 (chunks and codec kept). */
    snprintf(in, sizeof(in), "s3://" BUCKET "/ds512_in.zarr");
    snprintf(cmd, sizeof(cmd),
             "%s copy %s/remote_ds512.zarr %s --endpoint %s --no-progress >/dev/null", g_exe, g_dir,
             in, g_proxy);
    struct s3_run r;
    s3_run_once(cmd, 0, &r);
    s3_report("s3_0ms_upload", &r, 0, 0);
    /* The same objects PUT 64 at once by peer_remote.py: what a write
     * window buys on this server, at 0 and 20 ms. */
    char args[4400];
    for (int delay = 0; delay <= 20; delay += 20) {
        snprintf(args, sizeof(args), "s3upload %s " BUCKET " %s/remote_ds512.zarr peer_in_%d 64",
                 g_proxy, g_dir, delay);
        bench_peer_cmd(cmd, sizeof(cmd) - 16, args);
        strcat(cmd, " >/dev/null");
        s3_run_once(cmd, delay, &r);
        s3_report(delay ? "s3_20ms_upload_peer64" : "s3_0ms_upload_peer64", &r, delay, 0);
    }
    snprintf(head, sizeof(head), "%s downsample %s", g_exe, in);
    snprintf(tail, sizeof(tail), "--factors 2,2,2 --endpoint %s --memory 256M --no-progress",
             g_proxy);
    static const char *const whole[] = {"", NULL};
    struct s3_case c = {"s3_0ms_downsample", head, tail, "ds512_out", ref, whole, 256};
    s3_case_run(&c, 0, reps);
    c.tag = "s3_20ms_downsample";
    s3_case_run(&c, 20, reps);
    /* The same read from S3 with the output on disk: what the writes cost. */
    char out[4200];
    snprintf(out, sizeof(out), "%s/s3_ds512_from_s3.zarr", g_dir);
    snprintf(cmd, sizeof(cmd), "%s %s %s --overwrite >/dev/null", head, out, tail);
    s3_run_once(cmd, 20, &r);
    s3_report("s3_20ms_downsample_to_disk", &r, 20, 256);
    check_same(out, ref);
}

static void
run_pyramid(int reps)
{
    char cmd[8192], head[8192], tail[1024], src[4096], ref[4096];
    snprintf(src, sizeof(src), "%s/s3_tczyx.zarr", g_dir);
    bench_generate_once(g_exe, src, "--shape 2,2,32,1024,1024 --chunks 1,1,32,256,256");
    snprintf(ref, sizeof(ref), "%s/s3_tczyx_pyr_ref.zarr", g_dir);
    snprintf(cmd, sizeof(cmd),
             "%s pyramid %s %s " PYRAMID_OPTS " --overwrite --no-progress >/dev/null", g_exe, src,
             ref);
    bench_shell(cmd, NULL);
    snprintf(head, sizeof(head), "%s pyramid %s", g_exe, src);
    snprintf(tail, sizeof(tail), PYRAMID_OPTS " --endpoint %s --no-progress", g_proxy);
    /* Level 0 is the input copied; levels 1-3 were each computed from the
     * level below read back from S3, so they check the whole chain. */
    static const char *const levels[] = {"/1", "/2", "/3", NULL};
    struct s3_case c = {"s3_20ms_pyramid_5d", head, tail, "pyr5d", ref, levels, 1024};
    s3_case_run(&c, 20, reps);
}

int
main(int argc, char **argv)
{
    int reps = bench_reps(argc, argv, 1);
    if (!bench_remote_init("bench_io_s3", &g_root, &g_exe, &g_dir))
        return 0;

    struct bench_server nginx, s3;
    bench_http_start(&nginx, g_dir);
    g_bw = bench_bandwidth(g_dir, nginx.word[0]);
    bench_server_stop(&nginx);
    sl_bench_report("s3_loopback_nginx_bandwidth", g_bw, "MB/s");

    bench_server_start(&s3, "s3serve " BUCKET, 4,
                       "s3rver did not start (node and npm ci --prefix tests/tools?)");
    g_server_pid = s3.pid;
    g_proxy = s3.word[0];
    g_control = s3.word[1];
    /* The s3rver key pair, as every command's credentials. */
    setenv("AWS_ACCESS_KEY_ID", s3.word[2], 1);
    setenv("AWS_SECRET_ACCESS_KEY", s3.word[3], 1);
    setenv("AWS_REGION", "us-east-1", 1);
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");

    char cmd[8400], args[4200];
    struct bench_lines l;
    snprintf(args, sizeof(args), "s3bandwidth %s %s " BUCKET " 2", g_dir, g_proxy);
    bench_peer_cmd(cmd, sizeof(cmd), args);
    bench_helper_run(cmd, "s3_proxy_", &l);
    g_bw_put = bench_lines_need(&l, "put_bandwidth", cmd);
    g_bw_get = bench_lines_need(&l, "get_bandwidth", cmd);

    run_downsample(reps);
    run_pyramid(reps);
    bench_server_stop(&s3);
    return 0;
}
