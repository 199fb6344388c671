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
 * directly (curl); also printed: the same through the proxy (which
 * splices bodies through, yet adds a hop).  Then, at 20 ms, `sluice downsample URL
 * local --factors 2,2,2` of a 512^3 uint16 array (64^3 chunks) with and
 * without --memory 256M, after one untimed run: wall time and the child's
 * peak RSS.
 *
 *   bench_io_remote [REPS]   (default 3; needs SL_BENCH_SOURCE_ROOT and
 *                             SL_SLUICE_EXE, as tests/bench/run.sh sets)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sluice.h>

#include "bench.h"
#include "bench_remote.h"

#define CHUNK 1000000ull
#define MAX_SLICES 64
#define WINDOW 64

static const char *g_root, *g_dir, *g_exe;
static const char *g_nginx, *g_proxy, *g_control;

/* Slice k's first element, as peer_remote.py's slices(). */
static uint64_t
slice_start(int k, int n)
{
    return (n <= 8 ? 2 * (uint64_t)k : (uint64_t)k * 100 / (uint64_t)n) * CHUNK;
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
        bench_remote_die("read the slices from disk", &err);
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
        bench_remote_die(url, &err);
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
            bench_remote_die("batched read over HTTP", &err);
        double t = sl_bench_now() - t0;
        if (r >= 0 && t < best)
            best = t;
        if (memcmp(s->out, s->expect, s->bytes) != 0)
            bench_remote_fail("the batched read over HTTP differs from the slices on disk");
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
        bench_remote_fail(path);
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
        bench_remote_die("read the graph's output", &err);
    if (memcmp(s->out, s->expect, s->bytes) != 0)
        bench_remote_fail("the graph's output differs from the slices on disk");
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
    struct bench_lines l;
    for (int r = -1; r < reps; r++) {
        if (r == 0)
            bench_proxy_clear(g_control);
        double t0 = sl_bench_now();
        bench_shell(cmd, NULL);
        double t = sl_bench_now() - t0;
        if (r >= 0 && t < best)
            best = t;
    }
    bench_proxy_log(g_control, &l);
    *requests = bench_lines_get(&l, "requests") / reps;
    graph_check(s);
    return best;
}

static void
run_sluice(const char *tag, const struct sel *s, sl_pool *pool, int reps, struct ways *w)
{
    double ignore;
    w->batched =
        sluice_batched(s, pool, false, reps, &w->req_batched, &w->bytes, &w->in_flight_batched);
    w->hinted = sluice_batched(s, pool, true, reps, &w->req_hinted, &ignore, &w->in_flight_hinted);
    w->graph = sluice_graph(s, reps, &w->req_graph);
    bench_report_tagged(tag, "sluice_batched_time", w->batched, "s");
    bench_report_tagged(tag, "sluice_batched_requests", w->req_batched, "requests");
    bench_report_tagged(tag, "sluice_batched_bytes", w->bytes, "bytes");
    bench_report_tagged(tag, "sluice_batched_max_in_flight", w->in_flight_batched, "requests");
    bench_report_tagged(tag, "sluice_hinted_time", w->hinted, "s");
    bench_report_tagged(tag, "sluice_hinted_requests", w->req_hinted, "requests");
    bench_report_tagged(tag, "sluice_hinted_max_in_flight", w->in_flight_hinted, "requests");
    bench_report_tagged(tag, "sluice_graph_time", w->graph, "s");
    bench_report_tagged(tag, "sluice_graph_requests", w->req_graph, "requests");
}

/* ---- peers and ratios ---------------------------------------------------------------------- */

static void
run_peers(const char *tag, int n, int reps, struct bench_lines *py, struct bench_lines *js)
{
    char cmd[2048], args[1024], prefix[64];
    snprintf(prefix, sizeof(prefix), "%s_", tag);
    snprintf(args, sizeof(args), "peers %s %sb3.zarr %d %d", g_control, g_proxy, reps, n);
    bench_peer_cmd(cmd, sizeof(cmd), args);
    bench_helper_run(cmd, prefix, py);
    js->n = 0;
    struct stat st;
    snprintf(cmd, sizeof(cmd), "%s/tests/tools/node_modules/zarrita", g_root);
    if (stat(cmd, &st) != 0) {
        fprintf(stderr, "bench_io_remote: no zarrita (npm ci --prefix tests/tools): skipped\n");
        return;
    }
    snprintf(cmd, sizeof(cmd), "node %s/tests/bench/io/peer_zarrita_remote.mjs %sb3.zarr %s %d %d",
             g_root, g_proxy, g_control, reps, n);
    bench_helper_run(cmd, prefix, js);
}

static void
run_case(int delay_ms, int n, sl_pool *pool, int reps, double bandwidth, double bw_proxy)
{
    char tag[32];
    if (n == 8)
        snprintf(tag, sizeof(tag), "remote_%dms", delay_ms);
    else
        snprintf(tag, sizeof(tag), "remote_%dms_%d", delay_ms, n);
    bench_proxy_delay(g_control, delay_ms);
    struct sel s;
    sel_init(&s, n);
    struct ways w;
    run_sluice(tag, &s, pool, reps, &w);
    struct bench_lines py, js;
    run_peers(tag, n, reps, &py, &js);
    double loop = bench_lines_get(&py, "zarr_fsspec_loop"),
           oidx = bench_lines_get(&py, "zarr_fsspec_oindex");
    double zarr_best = loop < oidx ? loop : oidx, dask = bench_lines_get(&py, "dask");
    double zarrita = bench_lines_get(&js, "zarrita");
    bench_report_tagged(tag, "zarr_fsspec_time", zarr_best, "s");
    bench_report_tagged(tag, "dask_time", dask, "s");
    bench_report_tagged(tag, "zarrita_time", zarrita, "s");
    double floor_s = ceil(w.req_batched / WINDOW) * delay_ms / 1e3 + w.bytes / (bandwidth * 1e6);
    double floor_proxy = ceil(w.req_batched / WINDOW) * delay_ms / 1e3 + w.bytes / (bw_proxy * 1e6);
    bench_report_tagged(tag, "floor", floor_s, "s");
    bench_report_tagged(tag, "floor_via_proxy", floor_proxy, "s");
    static const char *const way_names[] = {"batched", "hinted", "graph"};
    const double way_t[] = {w.batched, w.hinted, w.graph};
    char name[96];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "%s_speedup_vs_zarr_fsspec", way_names[i]);
        bench_report_tagged(tag, name, zarr_best / way_t[i], "x");
        snprintf(name, sizeof(name), "%s_speedup_vs_dask", way_names[i]);
        bench_report_tagged(tag, name, dask / way_t[i], "x");
        snprintf(name, sizeof(name), "%s_speedup_vs_zarrita", way_names[i]);
        bench_report_tagged(tag, name, zarrita / way_t[i], "x");
        snprintf(name, sizeof(name), "%s_over_floor", way_names[i]);
        bench_report_tagged(tag, name, way_t[i] / floor_s, "x");
    }
    free(s.out);
    free(s.expect);
}

/* ---- downsample over HTTP ------------------------------------------------------------------- */

static void
run_downsample(void)
{
    char cmd[8192];
    bench_ds512_make(g_exe, g_dir);
    bench_proxy_delay(g_control, 20);
    static const char *const budgets[] = {"", "256M"};
    /* One untimed run first: nginx then serves the input from the page
     * cache in both timed runs (the first read of it after the benches
     * before took 1.7-3.3 s against 0.7 s). */
    for (int i = -1; i < 2; i++) {
        char mem[64] = "";
        if (i >= 0 && budgets[i][0])
            snprintf(mem, sizeof(mem), " --memory %s", budgets[i]);
        snprintf(cmd, sizeof(cmd),
                 "%s downsample %sremote_ds512.zarr %s/remote_ds512_out.zarr --factors 2,2,2 "
                 "--overwrite --no-progress%s >/dev/null",
                 g_exe, g_proxy, g_dir, mem);
        double rss, t = bench_child_run(cmd, &rss, NULL);
        if (i < 0)
            continue;
        const char *tag =
            budgets[i][0] ? "remote_20ms_downsample_mem256M" : "remote_20ms_downsample";
        bench_report_tagged(tag, "time", t, "s");
        bench_report_tagged(tag, "peak_rss", rss, "MiB");
    }
}

int
main(int argc, char **argv)
{
    int reps = bench_reps(argc, argv, 3);
    if (!bench_remote_init("bench_io_remote", &g_root, &g_exe, &g_dir))
        return 0;
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 %s/tests/bench/io/peer_zarr_read.py create %s/b3.zarr", g_root,
             g_dir);
    bench_shell(cmd, "zarr-python could not write b3.zarr (python3-zarr installed?)");

    struct sl_error err = SL_ERROR_INIT;
    sl_pool *pool = sl_pool_create(NULL, &err);
    if (pool == NULL)
        bench_remote_die("pool", &err);
    sl_bench_report("workers", sl_pool_worker_count(pool), "threads");
    struct bench_server server;
    bench_http_start(&server, g_dir);
    g_nginx = server.word[0];
    g_proxy = server.word[1];
    g_control = server.word[2];
    double bw = bench_bandwidth(g_dir, g_nginx);
    double bw_proxy = bench_bandwidth(g_dir, g_proxy);
    sl_bench_report("remote_loopback_nginx_bandwidth", bw, "MB/s");
    sl_bench_report("remote_loopback_proxy_bandwidth", bw_proxy, "MB/s");

    static const int delays[] = {0, 5, 20};
    for (int i = 0; i < 3; i++)
        run_case(delays[i], 8, pool, reps, bw, bw_proxy);
    run_case(20, 64, pool, reps, bw, bw_proxy);
    if (getenv("SL_BENCH_REMOTE_NO_DOWNSAMPLE") == NULL)
        run_downsample();
    bench_server_stop(&server);
    sl_pool_destroy(pool);
    return 0;
}
