/* SPDX-License-Identifier: MIT */
/*
 * Reads over HTTP: the case of zarr-python issue #3175 (b3.zarr, 10^8
 * float64 standard normals in chunks of 10^6, numcodecs Zstd level 1, Zarr
 * v2, written by zarr-python as in bench_io_batch) served by nginx through
 * the latency proxy of tests/remote/serve.py with 0, 5 and 20 ms per
 * request.  The selection: 8 disjoint chunk-sized slices (every other
 * chunk), and at 20 ms also 64 (slice k on chunk 100k/64).  sluice reads
 * them three ways, each on a fresh sl_store_open_http store (default
 * window, 64):
 *
 *   batched  one sl_array_read_batch_concat on a pool of one worker per core
 *   hinted   the same, after sl_array_prefetch_chunk of each chunk (the
 *            hint the graph executor gives), so the store's engine fetches
 *            them all at once
 *   graph    `sluice run` of a get -> select(regions) -> put graph writing
 *            the slices uncompressed to a local array: the whole process,
 *            metadata requests included
 *
 * beside zarr-python 2.13 over fsspec's HTTP filesystem (a loop of z[a:b],
 * and z.oindex of all positions, which fetches concurrently) and dask's
 * from_zarr on the same store (peer_remote.py), and zarrita.js's FetchStore
 * (peer_zarrita_remote.mjs, all slices at once), in this run, on the same
 * URLs.  Every time is the best of REPS after one warm-up (the peers'
 * method); every read is checked against the slices read from disk.
 *
 * The floor: ceil(requests / 64) x latency + bytes / loopback bandwidth,
 * the bandwidth being the best of 3 GETs of a 256 MiB file from nginx
 * directly (curl); also printed: the same through the proxy, whose Python
 * relay is slower than nginx.  Then, at 20 ms, `sluice downsample URL
 * local --factors 2,2,2` of a 512^3 uint16 array (64^3 chunks) with and
 * without --memory 256M: wall time and the child's peak RSS.
 *
 *   bench_io_remote [REPS]   (default 3; needs SL_BENCH_SOURCE_ROOT and
 *                             SL_SLUICE_EXE, as tests/bench/run.sh sets)
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sluice.h>

#include "bench.h"

#define CHUNK 1000000ull
#define MAX_SLICES 64
#define WINDOW 64

static const char *g_root, *g_dir, *g_exe;
static char g_nginx[256], g_proxy[256], g_control[256];

static void
die(const char *what, const struct sl_error *err)
{
    char line[512];
    sl_error_format(err, line, sizeof(line));
    fprintf(stderr, "bench_io_remote: %s: %s\n", what, line);
    exit(1);
}

static void
fail(const char *what)
{
    fprintf(stderr, "bench_io_remote: %s\n", what);
    exit(1);
}

/* Slice k's first element, as peer_remote.py's slices(). */
static uint64_t
slice_start(int k, int n)
{
    return (n <= 8 ? 2 * (uint64_t)k : (uint64_t)k * 100 / (uint64_t)n) * CHUNK;
}

/* ---- the helper's output ------------------------------------------------------------------ */

/* `name: value unit` lines of one helper run, kept to look values up. */
struct lines {
    int n;
    char name[32][64];
    double value[32];
};

static double
lines_get(const struct lines *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0)
            return l->value[i];
    return -1;
}

/* Run `cmd`; keep its `name: value unit` lines, reprinting them as
 * `<prefix><name>: ...` when prefix is not NULL.  Exits if it fails. */
static void
helper(const char *cmd, const char *prefix, struct lines *l)
{
    FILE *f = popen(cmd, "r");
    if (f == NULL)
        fail(cmd);
    l->n = 0;
    char line[512], name[64], unit[32];
    double v;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%63[a-z_0-9]: %lf %31s", name, &v, unit) < 2 || l->n == 32)
            continue;
        snprintf(l->name[l->n], sizeof(l->name[0]), "%s", name);
        l->value[l->n++] = v;
        if (prefix != NULL)
            printf("%s%s: %.4g %s\n", prefix, name, v, unit);
    }
    fflush(stdout);
    if (pclose(f) != 0) {
        fprintf(stderr, "bench_io_remote: failed: %s\n", cmd);
        exit(1);
    }
}

static void
peer_cmd(char *cmd, size_t size, const char *args)
{
    snprintf(cmd, size, "/usr/bin/python3 %s/tests/bench/io/peer_remote.py %s", g_root, args);
}

static void
proxy_do(const char *what, struct lines *l)
{
    char cmd[1024], args[512];
    snprintf(args, sizeof(args), "%s %s", what, g_control);
    peer_cmd(cmd, sizeof(cmd), args);
    helper(cmd, NULL, l);
}

/* ---- the server -------------------------------------------------------------------------- */

static FILE *g_server;
static int g_server_pid;

static void
server_start(void)
{
    char cmd[1024], args[512];
    snprintf(args, sizeof(args), "serve %s", g_dir);
    peer_cmd(cmd, sizeof(cmd), args);
    char exec_cmd[1100];
    snprintf(exec_cmd, sizeof(exec_cmd), "exec %s", cmd); /* the helper is our child */
    g_server = popen(exec_cmd, "r");
    char line[1024];
    if (g_server == NULL || fgets(line, sizeof(line), g_server) == NULL ||
        sscanf(line, "%d %255s %255s %255s", &g_server_pid, g_nginx, g_proxy, g_control) != 4)
        fail("the server did not start (nginx-light installed?)");
}

static void
server_stop(void)
{
    kill(g_server_pid, SIGTERM);
    pclose(g_server);
}

static void
set_delay(int ms)
{
    char what[64];
    struct lines l;
    snprintf(what, sizeof(what), "delay %s %d", g_control, ms);
    char cmd[1024];
    peer_cmd(cmd, sizeof(cmd), what);
    helper(cmd, NULL, &l);
}

/* ---- sluice ------------------------------------------------------------------------------ */

struct ways {
    double batched, hinted, graph;                /* best seconds */
    double req_batched, req_hinted, req_graph;    /* requests per read */
    double bytes;                                 /* body bytes per batched read */
    unsigned in_flight_batched, in_flight_hinted; /* most in flight at once */
};

struct sel {
    int n;
    struct sl_region regions[MAX_SLICES];
    size_t bytes; /* output */
    double *expect;
    double *out;
};

static void
sel_init(struct sel *s, int n)
{
    s->n = n;
    for (int k = 0; k < n; k++)
        s->regions[k] = (struct sl_region){
            .rank = 1, .start = {slice_start(k, n)}, .stop = {slice_start(k, n) + CHUNK}};
    s->bytes = (size_t)n * CHUNK * sizeof(double);
    s->out = malloc(s->bytes);
    s->expect = malloc(s->bytes);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = sl_store_open_fs(g_dir, NULL, &err);
    sl_array *a = st ? sl_array_open(st, "b3.zarr", NULL, &err) : NULL;
    if (a == NULL || sl_array_read_batch_concat(a, (size_t)n, s->regions, 0, s->expect, s->bytes,
                                                NULL, NULL, NULL, &err) != SL_OK)
        die("read the slices from disk", &err);
    sl_array_unref(a);
    sl_store_unref(st);
}

/* Best seconds of `reps` batched reads over a fresh HTTP store, after one
 * warm-up; hinted: sl_array_prefetch_chunk of each slice's chunk first. */
static double
sluice_batched(const struct sel *s, sl_pool *pool, bool hinted, int reps, double *requests,
               double *bytes, unsigned *in_flight)
{
    struct sl_error err = SL_ERROR_INIT;
    char url[300];
    snprintf(url, sizeof(url), "%sb3.zarr", g_proxy);
    sl_store *st = sl_store_open_http(g_proxy, NULL, &err);
    sl_array *a = st ? sl_array_open(st, "b3.zarr", NULL, &err) : NULL;
    if (a == NULL)
        die(url, &err);
    struct sl_parallel par = sl_pool_parallel(pool);
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.par = &par;
    struct sl_remote_stats r0, r1;
    double best = INFINITY;
    for (int r = -1; r < reps; r++) {
        if (r == 0)
            sl_store_get_remote_stats(st, &r0);
        memset(s->out, 0, s->bytes);
        double t0 = sl_bench_now();
        if (hinted)
            for (int k = 0; k < s->n; k++)
                sl_array_prefetch_chunk(a, &(uint64_t){s->regions[k].start[0] / CHUNK});
        if (sl_array_read_batch_concat(a, (size_t)s->n, s->regions, 0, s->out, s->bytes, &o, NULL,
                                       NULL, &err) != SL_OK)
            die("batched read over HTTP", &err);
        double t = sl_bench_now() - t0;
        if (r >= 0 && t < best)
            best = t;
        if (memcmp(s->out, s->expect, s->bytes) != 0)
            fail("the batched read over HTTP differs from the slices on disk");
    }
    sl_store_get_remote_stats(st, &r1);
    *requests = (double)(r1.requests - r0.requests) / reps;
    *bytes = (double)(r1.bytes - r0.bytes) / reps;
    *in_flight = r1.max_in_flight;
    sl_array_unref(a);
    sl_store_unref(st);
    return best;
}

/* Write the get -> select -> put graph of `s` under the data dir. */
static void
graph_write(const struct sel *s, char *path, size_t size)
{
    snprintf(path, size, "%s/remote_graph_%d.json", g_dir, s->n);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        fail(path);
    fprintf(
        f,
        "{\"sluice\": 1,\n \"arrays\": {\"src\": {\"path\": \"%sb3.zarr\"},\n"
        "  \"out\": {\"path\": \"remote_graph_out.zarr\", \"like\": \"src\", \"overwrite\": "
        "true, \"create\": {\"codec\": \"none\"}}},\n \"nodes\": {\"read\": {\"op\": \"get\", "
        "\"array\": \"src\"},\n  \"sel\": {\"op\": \"select\", \"input\": \"read\", \"axis\": 0, "
        "\"regions\": [",
        g_proxy);
    for (int k = 0; k < s->n; k++)
        fprintf(f, "%s[[%llu, %llu]]", k ? ", " : "", (unsigned long long)s->regions[k].start[0],
                (unsigned long long)s->regions[k].stop[0]);
    fprintf(f, "]},\n  \"write\": {\"op\": \"put\", \"input\": \"sel\", \"array\": \"out\"}}}\n");
    fclose(f);
}

/* Check the graph's output against the expected slices. */
static void
graph_check(const struct sel *s)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = sl_store_open_fs(g_dir, NULL, &err);
    sl_array *a = st ? sl_array_open(st, "remote_graph_out.zarr", NULL, &err) : NULL;
    struct sl_region all = {.rank = 1, .start = {0}, .stop = {(uint64_t)s->n * CHUNK}};
    if (a == NULL || sl_array_read_region(a, &all, s->out, s->bytes, NULL, NULL, &err) != SL_OK)
        die("read the graph's output", &err);
    if (memcmp(s->out, s->expect, s->bytes) != 0)
        fail("the graph's output differs from the slices on disk");
    sl_array_unref(a);
    sl_store_unref(st);
}

/* Best wall seconds of `reps` runs of the graph (whole process), after one
 * warm-up; requests per run from the proxy's log. */
static double
sluice_graph(const struct sel *s, int reps, double *requests)
{
    char path[4096], cmd[8192];
    graph_write(s, path, sizeof(path));
    snprintf(cmd, sizeof(cmd), "%s run %s --no-progress >/dev/null 2>&1", g_exe, path);
    double best = INFINITY;
    struct lines l;
    for (int r = -1; r < reps; r++) {
        if (r == 0)
            proxy_do("clear", &l);
        double t0 = sl_bench_now();
        if (system(cmd) != 0)
            fail(cmd);
        double t = sl_bench_now() - t0;
        if (r >= 0 && t < best)
            best = t;
    }
    proxy_do("log", &l);
    *requests = lines_get(&l, "requests") / reps;
    graph_check(s);
    return best;
}

static void
report(const char *tag, const char *name, double v, const char *unit)
{
    char full[128];
    snprintf(full, sizeof(full), "%s_%s", tag, name);
    sl_bench_report(full, v, unit);
}

static void
run_sluice(const char *tag, const struct sel *s, sl_pool *pool, int reps, struct ways *w)
{
    double ignore;
    w->batched =
        sluice_batched(s, pool, false, reps, &w->req_batched, &w->bytes, &w->in_flight_batched);
    w->hinted = sluice_batched(s, pool, true, reps, &w->req_hinted, &ignore, &w->in_flight_hinted);
    w->graph = sluice_graph(s, reps, &w->req_graph);
    report(tag, "sluice_batched_time", w->batched, "s");
    report(tag, "sluice_batched_requests", w->req_batched, "requests");
    report(tag, "sluice_batched_bytes", w->bytes, "bytes");
    report(tag, "sluice_batched_max_in_flight", w->in_flight_batched, "requests");
    report(tag, "sluice_hinted_time", w->hinted, "s");
    report(tag, "sluice_hinted_requests", w->req_hinted, "requests");
    report(tag, "sluice_hinted_max_in_flight", w->in_flight_hinted, "requests");
    report(tag, "sluice_graph_time", w->graph, "s");
    report(tag, "sluice_graph_requests", w->req_graph, "requests");
}

/* ---- peers and ratios ---------------------------------------------------------------------- */

static void
run_peers(const char *tag, int n, int reps, struct lines *py, struct lines *js)
{
    char cmd[2048], args[1024], prefix[64];
    snprintf(prefix, sizeof(prefix), "%s_", tag);
    snprintf(args, sizeof(args), "peers %s %sb3.zarr %d %d", g_control, g_proxy, reps, n);
    peer_cmd(cmd, sizeof(cmd), args);
    helper(cmd, prefix, py);
    js->n = 0;
    struct stat st;
    snprintf(cmd, sizeof(cmd), "%s/tests/tools/node_modules/zarrita", g_root);
    if (stat(cmd, &st) != 0) {
        fprintf(stderr, "bench_io_remote: no zarrita (npm ci --prefix tests/tools): skipped\n");
        return;
    }
    snprintf(cmd, sizeof(cmd), "node %s/tests/bench/io/peer_zarrita_remote.mjs %sb3.zarr %s %d %d",
             g_root, g_proxy, g_control, reps, n);
    helper(cmd, prefix, js);
}

static void
run_case(int delay_ms, int n, sl_pool *pool, int reps, double bandwidth, double bw_proxy)
{
    char tag[32];
    if (n == 8)
        snprintf(tag, sizeof(tag), "remote_%dms", delay_ms);
    else
        snprintf(tag, sizeof(tag), "remote_%dms_%d", delay_ms, n);
    set_delay(delay_ms);
    struct sel s;
    sel_init(&s, n);
    struct ways w;
    run_sluice(tag, &s, pool, reps, &w);
    struct lines py, js;
    run_peers(tag, n, reps, &py, &js);
    double loop = lines_get(&py, "zarr_fsspec_loop"), oidx = lines_get(&py, "zarr_fsspec_oindex");
    double zarr_best = loop < oidx ? loop : oidx, dask = lines_get(&py, "dask");
    double zarrita = lines_get(&js, "zarrita");
    report(tag, "zarr_fsspec_time", zarr_best, "s");
    report(tag, "dask_time", dask, "s");
    report(tag, "zarrita_time", zarrita, "s");
    double floor_s = ceil(w.req_batched / WINDOW) * delay_ms / 1e3 + w.bytes / (bandwidth * 1e6);
    double floor_proxy = ceil(w.req_batched / WINDOW) * delay_ms / 1e3 + w.bytes / (bw_proxy * 1e6);
    report(tag, "floor", floor_s, "s");
    report(tag, "floor_via_proxy", floor_proxy, "s");
    static const char *const way_names[] = {"batched", "hinted", "graph"};
    const double way_t[] = {w.batched, w.hinted, w.graph};
    char name[96];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "%s_speedup_vs_zarr_fsspec", way_names[i]);
        report(tag, name, zarr_best / way_t[i], "x");
        snprintf(name, sizeof(name), "%s_speedup_vs_dask", way_names[i]);
        report(tag, name, dask / way_t[i], "x");
        snprintf(name, sizeof(name), "%s_speedup_vs_zarrita", way_names[i]);
        report(tag, name, zarrita / way_t[i], "x");
        snprintf(name, sizeof(name), "%s_over_floor", way_names[i]);
        report(tag, name, way_t[i] / floor_s, "x");
    }
    free(s.out);
    free(s.expect);
}

/* ---- downsample over HTTP ------------------------------------------------------------------- */

/* Wall seconds and peak RSS (MiB) of one child command. */
static double
child_run(const char *cmd, double *rss_mib)
{
    double t0 = sl_bench_now();
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        fail(cmd);
    *rss_mib = (double)ru.ru_maxrss / 1024;
    return sl_bench_now() - t0;
}

static void
run_downsample(void)
{
    char path[4096], cmd[8192];
    struct stat st;
    snprintf(path, sizeof(path), "%s/remote_ds512.zarr", g_dir);
    if (stat(path, &st) != 0) {
        snprintf(cmd, sizeof(cmd),
                 "%s generate %s --shape 512,512,512 --chunks 64,64,64 --dtype uint16 "
                 ">/dev/null 2>&1",
                 g_exe, path);
        if (system(cmd) != 0)
            fail(cmd);
    }
    set_delay(20);
    static const char *const budgets[] = {"", "256M"};
    for (int i = 0; i < 2; i++) {
        char mem[64] = "";
        if (budgets[i][0])
            snprintf(mem, sizeof(mem), " --memory %s", budgets[i]);
        snprintf(cmd, sizeof(cmd),
                 "%s downsample %sremote_ds512.zarr %s/remote_ds512_out.zarr --factors 2,2,2 "
                 "--overwrite --no-progress%s >/dev/null",
                 g_exe, g_proxy, g_dir, mem);
        double rss, t = child_run(cmd, &rss);
        const char *tag =
            budgets[i][0] ? "remote_20ms_downsample_mem256M" : "remote_20ms_downsample";
        report(tag, "time", t, "s");
        report(tag, "peak_rss", rss, "MiB");
    }
}

int
main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    if (reps < 1)
        reps = 3;
    g_dir = getenv("SL_BENCH_DATA");
    if (g_dir == NULL || g_dir[0] == '\0')
        g_dir = "/tmp/sluice-bench-data";
    g_root = getenv("SL_BENCH_SOURCE_ROOT");
    g_exe = getenv("SL_SLUICE_EXE");
    if (g_root == NULL || g_exe == NULL) {
        fprintf(stderr, "bench_io_remote: needs SL_BENCH_SOURCE_ROOT and SL_SLUICE_EXE "
                        "(run via tests/bench/run.sh); skipped\n");
        return 0;
    }
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 %s/tests/bench/io/peer_zarr_read.py create %s/b3.zarr", g_root,
             g_dir);
    if (system(cmd) != 0)
        fail("zarr-python could not write b3.zarr (python3-zarr installed?)");

    struct sl_error err = SL_ERROR_INIT;
    sl_pool *pool = sl_pool_create(NULL, &err);
    if (pool == NULL)
        die("pool", &err);
    sl_bench_report("workers", sl_pool_worker_count(pool), "threads");
    server_start();
    struct lines l;
    char args[1024];
    snprintf(args, sizeof(args), "bandwidth %s %s 3", g_dir, g_nginx);
    peer_cmd(cmd, sizeof(cmd), args);
    helper(cmd, NULL, &l);
    double bw = lines_get(&l, "bandwidth");
    snprintf(args, sizeof(args), "bandwidth %s %s 3", g_dir, g_proxy);
    peer_cmd(cmd, sizeof(cmd), args);
    helper(cmd, NULL, &l);
    double bw_proxy = lines_get(&l, "bandwidth");
    sl_bench_report("remote_loopback_nginx_bandwidth", bw, "MB/s");
    sl_bench_report("remote_loopback_proxy_bandwidth", bw_proxy, "MB/s");

    static const int delays[] = {0, 5, 20};
    for (int i = 0; i < 3; i++)
        run_case(delays[i], 8, pool, reps, bw, bw_proxy);
    run_case(20, 64, pool, reps, bw, bw_proxy);
    if (getenv("SL_BENCH_REMOTE_NO_DOWNSAMPLE") == NULL)
        run_downsample();
    server_stop();
    sl_pool_destroy(pool);
    return 0;
}
