/* SPDX-License-Identifier: MIT */
/*
 * The expr node's benchmark: a flat-field correction of the 5-D demo image
 * (examples/quickstart.sh's uint16 (2, 2, 32, 1024, 1024) in
 * (1, 1, 32, 256, 256) chunks, Zarr v2, zstd level 1) with float32
 * (1024, 1024) dark and flat frames broadcast over T, C and Z,
 *
 *   "ff": {"op": "expr", "inputs": {"raw": "r", "dark": "d", "flat": "f"},
 *          "expr": "(raw - dark) / max(flat, 1)", "dtype": "float32",
 *          "compute": "float32"}
 *
 * put into a new Zarr v2 float32 array (zstd level 1, the raw's chunks), by
 * `sluice run --no-sync` on a graph file (dask and the floor do not wait
 * for the device either: like for like), by `sluice run` as it is by
 * default (the output durable before it is put in place: against the
 * floor that syncs too), by dask (from_zarr, the same arithmetic in
 * float32, to_zarr on the threaded scheduler: peer_dask_expr.py) and by the
 * pipeline floor (flatfield_pipeline.c: the same work by a minimal
 * hand-written program, in this process, whose every output chunk file must
 * be byte for byte sluice's, or the bench fails; and again writing each
 * chunk file as sluice's store does, O_DIRECT, fsync and rename, which
 * tells the store's durability from the runtime).  Each sluice run is a
 * child process: its wall time, CPU time and peak RSS come from wait4()
 * over the whole process; dask's from the peer, which times its pipeline
 * only (imports and set-up excluded).  Runs interleave (sluice --no-sync,
 * sluice, floor, synced floor, dask; REPS rounds), each after the previous outputs are removed and
 * written back (sync), so one run's write-back does not fall into the next.
 * Prints medians, dask / sluice and sluice / floor, and checks that
 * sluice's values equal dask's.
 *
 * Then the kernel alone: sl_expr_eval on one thread over 4M elements
 * (uint16 raw (4, 1024, 1024) against the float32 planes as stride-0
 * views, float32 working type and output), median and best of
 * KERNEL_REPS, against numexpr on one thread over the same buffers
 * (peer_numexpr_expr.py, `(raw - dark) / where(flat > 1, flat, 1)`), whose
 * result is compared with sluice's.
 *
 * A peer that cannot run (dask or numexpr missing) gets a line saying why
 * and no figures.  The inputs are made once under $SL_BENCH_DATA/expr: the
 * raw by `sluice generate` (Zarr v2), dark, flat and the kernel's buffers
 * by peer_dask_expr.py setup (zarr-python), which also checks the raw.
 *
 *   bench_graph_expr [REPS]   (default $REPS, else 3; run by tests/bench/run.sh, which
 *   sets SL_SLUICE_EXE, SL_BENCH_SOURCE_ROOT and SL_BENCH_DATA)
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sluice.h>

#include "bench.h"
#include "bench_proc.h"
#include "flatfield_pipeline.h"

#define KERNEL_REPS 21  /* timed evaluations of the kernel, each side */
#define KERNEL_PLANES 4 /* the kernel's raw is KERNEL_PLANES x 1024 x 1024 */
#define PLANE_N 1024    /* the frames' extent in Y and in X */
#define EXPR_TEXT "(raw - dark) / max(flat, 1)"

/* Paths and programs of this invocation. */
struct env {
    const char *sluice;   /* the launcher */
    char dask_peer[4096]; /* peer_dask_expr.py */
    char ne_peer[4096];   /* peer_numexpr_expr.py */
    char data[4096];      /* $SL_BENCH_DATA/expr: inputs, outputs, graph */
};

static void
die(const char *what)
{
    fprintf(stderr, "bench_graph_expr: %s\n", what);
    exit(1);
}

/* `path` under the data directory into `out` (4096 bytes). */
static void
data_path(const struct env *e, const char *name, char *out)
{
    snprintf(out, 4096, "%s/%s", e->data, name);
}

/* The graph file of the flat-field, beside its arrays. */
static void
write_graph(const struct env *e, char *graph)
{
    data_path(e, "flatfield.json", graph);
    FILE *f = fopen(graph, "w");
    if (f == NULL)
        die("cannot write the graph file");
    fputs("{\n"
          "  \"sluice\": 1,\n"
          "  \"comment\": \"bench_graph_expr: flat-field correction of the 5-D demo image\",\n"
          "  \"arrays\": {\n"
          "    \"raw\": {\"path\": \"raw.zarr\"},\n"
          "    \"dark\": {\"path\": \"dark.zarr\"},\n"
          "    \"flat\": {\"path\": \"flat.zarr\"},\n"
          "    \"out\": {\"path\": \"out_sluice.zarr\",\n"
          "            \"create\": {\"format\": 2, \"dtype\": \"float32\", \"chunks\": [1, 1, 32, "
          "256, 256], \"codec\": \"zstd:1\"}}\n"
          "  },\n"
          "  \"nodes\": {\n"
          "    \"r\": {\"op\": \"get\", \"array\": \"raw\"},\n"
          "    \"d\": {\"op\": \"get\", \"array\": \"dark\"},\n"
          "    \"f\": {\"op\": \"get\", \"array\": \"flat\"},\n"
          "    \"ff\": {\"op\": \"expr\", \"inputs\": {\"raw\": \"r\", \"dark\": \"d\", \"flat\": "
          "\"f\"},\n"
          "           \"expr\": \"" EXPR_TEXT "\", \"dtype\": \"float32\", \"compute\": "
          "\"float32\"},\n"
          "    \"w\": {\"op\": \"put\", \"input\": \"ff\", \"array\": \"out\"}\n"
          "  }\n"
          "}\n",
          f);
    if (fclose(f) != 0)
        die("cannot write the graph file");
}

/* Run a peer script with up to three arguments. */
static int
peer(const char *script, const char *a1, const char *a2, const char *a3,
     struct bench_proc_lines *out, struct bench_proc_cost *c)
{
    char *argv[] = {"/usr/bin/python3", (char *)script, (char *)a1, (char *)a2, (char *)a3, NULL};
    return bench_proc_spawn(argv, out, c);
}

/* Whether dask can run here; a line saying why not when it cannot. */
static int
dask_usable(const struct env *e)
{
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    int rc = peer(e->dask_peer, "check", NULL, NULL, &l, &c);
    if (rc == 0)
        return 1;
    l.text[strcspn(l.text, "\n")] = '\0';
    printf("# dask_flatfield: not measured (python3-dask missing or broken: %s; exit %d)\n", l.text,
           rc);
    return 0;
}

/* The measurements of one round's runs. */
struct rounds {
    struct bench_proc_cost sl[16], durable[16], dask[16], floor[16], synced[16];
    double phase_s[16][FLATFIELD_PHASES];
};

/* Run the floor `fs` into its out_dir, removed and written back first. */
static void
floor_once(const struct flatfield_spec *fs, int threads, struct bench_proc_cost *c, double *phase_s)
{
    bench_proc_rm_tree(fs->out_dir);
    sync();
    c->rss_mib = -1;
    if (flatfield_run(fs, threads, &c->wall_s, &c->cpu_s, phase_s) != 0)
        die("the pipeline floor failed");
    malloc_trim(0);
}

/* One round: sluice, the floor, the floor writing as sluice's store does
 * (`synced`), then dask, each after the previous outputs are removed and
 * written back. */
static void
bench_round(const struct env *e, const char *graph, const struct flatfield_spec *fs,
            const struct flatfield_spec *synced, int threads, int dask, int i, struct rounds *r)
{
    char out[4096];
    data_path(e, "out_sluice.zarr", out);
    bench_proc_rm_tree(out);
    sync();
    char *argv[] = {(char *)e->sluice, "run", (char *)graph, "--no-progress", "--no-sync", NULL};
    if (bench_proc_spawn(argv, NULL, &r->sl[i]) != 0)
        die("sluice run --no-sync failed");
    bench_proc_rm_tree(out);
    sync();
    argv[4] = NULL; /* durable, as by default */
    if (bench_proc_spawn(argv, NULL, &r->durable[i]) != 0)
        die("sluice run failed");
    floor_once(fs, threads, &r->floor[i], r->phase_s[i]);
    double phase_s[FLATFIELD_PHASES];
    floor_once(synced, threads, &r->synced[i], phase_s);
    if (!dask)
        return;
    struct bench_proc_lines l;
    struct bench_proc_cost whole;
    data_path(e, "out_dask.zarr", out);
    bench_proc_rm_tree(out);
    sync();
    if (peer(e->dask_peer, "run", e->data, out, &l, &whole) != 0)
        die("the dask peer failed");
    r->dask[i] = (struct bench_proc_cost){bench_proc_value(&l, "dask_flatfield_wall"),
                                          bench_proc_value(&l, "dask_flatfield_cpu"),
                                          bench_proc_value(&l, "dask_flatfield_peak_rss"), -1};
}

/* The floor's output against sluice's, chunk file by chunk file: the bench
 * fails unless every one is the same. */
static void
check_floor_bytes(const struct env *e, const struct flatfield_spec *fs)
{
    char theirs[4096], diff[8600];
    data_path(e, "out_sluice.zarr", theirs);
    uint64_t equal, n;
    if (flatfield_compare(fs, fs->out_dir, theirs, &equal, &n, diff, sizeof(diff)) != 0)
        die("the pipeline floor's output cannot be compared with sluice's");
    sl_bench_report("pipeline_floor_flatfield_chunks_equal_to_sluice",
                    n > 0 ? (double)equal / (double)n : 0, "fraction");
    if (equal != n || n == 0) {
        fprintf(stderr, "bench_graph_expr: first differing chunk: %s\n", diff);
        die("the pipeline floor wrote other bytes than sluice: FAILED (it does not do the same "
            "work, or sluice computes something else)");
    }
    printf("# pipeline floor and sluice outputs match: all %llu chunk files byte-identical\n",
           (unsigned long long)n);
}

/* sluice's values against dask's (peer_dask_expr.py compare). */
static void
check_dask_values(const struct env *e)
{
    char a[4096], b[4096];
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    data_path(e, "out_sluice.zarr", a);
    data_path(e, "out_dask.zarr", b);
    if (peer(e->dask_peer, "compare", a, b, &l, &c) != 0)
        die("the comparison with dask's output failed");
    double diff = bench_proc_value(&l, "compare_max_abs_diff");
    sl_bench_report("flatfield_sluice_vs_dask_max_abs_diff", diff, "value");
    sl_bench_report("flatfield_sluice_vs_dask_equal_share",
                    bench_proc_value(&l, "compare_equal_share"), "fraction");
    if (diff != 0)
        printf("# sluice's values differ from dask's (max |diff| %g)\n", diff);
}

/* Medians of the rounds, the ratios, and the checks. */
static void
report_flatfield(const struct env *e, const struct flatfield_spec *fs, const struct rounds *r,
                 int reps, int dask, int threads)
{
    struct bench_proc_cost s = bench_proc_median_cost(r->sl, reps),
                           p = bench_proc_median_cost(r->floor, reps);
    p.rss_mib = -1;
    bench_proc_report_cost("sluice_flatfield", &s);
    const double raw_mb = 2.0 * 2 * 32 * 1024 * 1024 * 2 / 1e6;
    sl_bench_report("sluice_flatfield_input_rate", raw_mb / s.wall_s, "MB/s");
    sl_bench_report("sluice_flatfield_threads", threads, "count");
    bench_proc_report_cost("pipeline_floor_flatfield", &p);
    for (int k = 0; k < FLATFIELD_PHASES; k++) {
        double v[16];
        char name[128];
        for (int i = 0; i < reps; i++)
            v[i] = r->phase_s[i][k];
        snprintf(name, sizeof(name), "pipeline_floor_flatfield_cpu_%s", flatfield_phase_names[k]);
        sl_bench_report(name, bench_proc_median(v, reps), "s");
    }
    check_floor_bytes(e, fs);
    sl_bench_report("flatfield_wall_over_pipeline_floor", s.wall_s / p.wall_s, "x");
    sl_bench_report("flatfield_cpu_over_pipeline_floor", s.cpu_s / p.cpu_s, "x");
    const double idle = threads * s.wall_s - s.cpu_s, floor_idle = threads * p.wall_s - p.cpu_s;
    sl_bench_report("sluice_flatfield_waiting", idle > 0 ? idle : 0, "thread-s");
    sl_bench_report("pipeline_floor_flatfield_waiting", floor_idle > 0 ? floor_idle : 0,
                    "thread-s");
    struct bench_proc_cost q = bench_proc_median_cost(r->synced, reps),
                           u = bench_proc_median_cost(r->durable, reps);
    q.rss_mib = -1;
    bench_proc_report_cost("pipeline_floor_synced_flatfield", &q);
    bench_proc_report_cost("sluice_durable_flatfield", &u);
    sl_bench_report("flatfield_durable_wall_over_synced_pipeline_floor", u.wall_s / q.wall_s, "x");
    if (!dask) {
        printf("# flatfield_speedup_vs_dask: not measured (no dask)\n");
        return;
    }
    struct bench_proc_cost d = bench_proc_median_cost(r->dask, reps);
    bench_proc_report_cost("dask_flatfield", &d);
    sl_bench_report("flatfield_speedup_vs_dask", d.wall_s / s.wall_s, "x");
    sl_bench_report("flatfield_dask_over_sluice_cpu", d.cpu_s / s.cpu_s, "x");
    sl_bench_report("flatfield_sluice_over_dask_peak_rss", s.rss_mib / d.rss_mib, "x");
    sl_bench_report("flatfield_durable_speedup_vs_dask", d.wall_s / u.wall_s, "x");
    check_dask_values(e);
}

/* Read `n` bytes of the file at `path` into a new buffer, or die. */
static void *
read_exact(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    void *p = malloc(n);
    if (f == NULL || p == NULL || fread(p, 1, n, f) != n)
        die("cannot read the kernel's inputs (peer_dask_expr.py setup writes them)");
    fclose(f);
    return p;
}

/* The kernel's buffers: the inputs and sluice's output. */
struct kernel_bufs {
    uint16_t *raw;
    float *dark, *flat, *out;
};

/* sluice's kernel: compile once, evaluate KERNEL_REPS times on this
 * thread; median and best milliseconds. */
static void
kernel_sluice(const struct kernel_bufs *b, double *med_ms, double *best_ms)
{
    const char *const names[] = {"raw", "dark", "flat"};
    const sl_dtype dtypes[] = {SL_DTYPE_U16, SL_DTYPE_F32, SL_DTYPE_F32};
    struct sl_error err = SL_ERROR_INIT;
    sl_expr *ex;
    if (sl_expr_compile(EXPR_TEXT, 3, names, dtypes, SL_DTYPE_F32, NULL, &ex, &err) != SL_OK) {
        fprintf(stderr, "bench_graph_expr: sl_expr_compile: %s\n", err.text);
        exit(1);
    }
    char text[256];
    (void)sl_expr_format(ex, text, sizeof(text));
    printf("# sluice kernel: %s, float32 working type, 1 thread, %d x %d x %d elements\n", text,
           KERNEL_PLANES, PLANE_N, PLANE_N);
    const uint64_t shape[3] = {KERNEL_PLANES, PLANE_N, PLANE_N};
    struct sl_view in[3], out;
    if (sl_view_init(&in[0], SL_DTYPE_U16, 3, shape, b->raw, &err) != SL_OK ||
        sl_view_init(&out, SL_DTYPE_F32, 3, shape, b->out, &err) != SL_OK)
        die("sl_view_init failed");
    for (int k = 1; k < 3; k++) /* the planes repeat along the first axis */
        in[k] = (struct sl_view){.dtype = SL_DTYPE_F32,
                                 .rank = 3,
                                 .shape = {KERNEL_PLANES, PLANE_N, PLANE_N},
                                 .stride = {0, PLANE_N, 1},
                                 .data = k == 1 ? b->dark : b->flat};
    double t[KERNEL_REPS];
    for (int i = -2; i < KERNEL_REPS; i++) {
        double t0 = sl_bench_now();
        if (sl_expr_eval(ex, in, &out, &err) != SL_OK) {
            fprintf(stderr, "bench_graph_expr: sl_expr_eval: %s\n", err.text);
            exit(1);
        }
        if (i >= 0)
            t[i] = (sl_bench_now() - t0) * 1e3;
    }
    sl_expr_free(ex);
    *med_ms = bench_proc_median(t, KERNEL_REPS);
    *best_ms = t[0];
}

/* numexpr's output (the file at `path`) against sluice's. */
static void
kernel_compare(const struct kernel_bufs *b, const char *path, size_t n)
{
    float *theirs = read_exact(path, n * sizeof(float));
    size_t equal = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const float x = b->out[i], y = theirs[i];
        equal += memcmp(&x, &y, sizeof(x)) == 0 || (x != x && y != y);
        const double d = x > y ? (double)x - y : (double)y - x;
        worst = d > worst ? d : worst;
    }
    free(theirs);
    sl_bench_report("expr_kernel_sluice_vs_numexpr_equal_share", (double)equal / (double)n,
                    "fraction");
    sl_bench_report("expr_kernel_sluice_vs_numexpr_max_abs_diff", worst, "value");
}

/* The kernel alone, sluice against numexpr, one thread each. */
static void
bench_kernel(const struct env *e)
{
    char dir[4096], path[4096], reps[16];
    data_path(e, "kernel", dir);
    const size_t n = (size_t)KERNEL_PLANES * PLANE_N * PLANE_N, plane = PLANE_N * PLANE_N;
    struct kernel_bufs b;
    snprintf(path, sizeof(path), "%s/raw.u16", dir);
    b.raw = read_exact(path, n * sizeof(uint16_t));
    snprintf(path, sizeof(path), "%s/dark.f32", dir);
    b.dark = read_exact(path, plane * sizeof(float));
    snprintf(path, sizeof(path), "%s/flat.f32", dir);
    b.flat = read_exact(path, plane * sizeof(float));
    b.out = malloc(n * sizeof(float));
    if (b.out == NULL)
        die("out of memory");
    double med_ms, best_ms;
    kernel_sluice(&b, &med_ms, &best_ms);
    sl_bench_report("sluice_expr_kernel", med_ms, "ms");
    sl_bench_report("sluice_expr_kernel_best", best_ms, "ms");
    sl_bench_report("sluice_expr_kernel_rate", (double)n / (med_ms * 1e-3) / 1e6, "Melem/s");
    snprintf(path, sizeof(path), "%s/out_numexpr.f32", dir);
    snprintf(reps, sizeof(reps), "%d", KERNEL_REPS);
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    int rc = peer(e->ne_peer, dir, reps, path, &l, &c);
    if (rc != 0) {
        l.text[strcspn(l.text, "\n")] = '\0';
        printf("# numexpr_expr_kernel: not measured (python3-numexpr missing or broken: %s; "
               "exit %d)\n",
               l.text, rc);
    } else {
        bench_proc_notes(&l);
        double ne = bench_proc_value(&l, "numexpr_expr_kernel");
        sl_bench_report("numexpr_expr_kernel", ne, "ms");
        sl_bench_report("numexpr_expr_kernel_best",
                        bench_proc_value(&l, "numexpr_expr_kernel_best"), "ms");
        sl_bench_report("expr_kernel_over_numexpr", med_ms / ne, "x");
        kernel_compare(&b, path, n);
    }
    free(b.raw);
    free(b.dark);
    free(b.flat);
    free(b.out);
}

/* The inputs (made once), the graph file, and whether dask can run. */
static int
bench_setup(const struct env *e, char *graph)
{
    if (mkdir(e->data, 0755) != 0 && errno != EEXIST)
        die("cannot make the data directory");
    bench_proc_demo_raw(e->sluice, e->data);
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    if (peer(e->dask_peer, "setup", e->data, NULL, &l, &c) != 0)
        die("peer_dask_expr.py setup failed: the inputs are not there (python3-zarr?)");
    bench_proc_notes(&l);
    write_graph(e, graph);
    return dask_usable(e);
}

int
main(int argc, char **argv)
{
    /* A child's peak RSS (wait4) starts from this process's RSS at the
     * fork: large buffers always mmapped and freed memory trimmed after
     * each floor, so that stays small (see bench_graph_downsample.c). */
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    const int reps = bench_proc_reps(argc, argv, 15);
    struct env e;
    e.sluice = getenv("SL_SLUICE_EXE");
    const char *root = getenv("SL_BENCH_SOURCE_ROOT"), *data = getenv("SL_BENCH_DATA");
    if (e.sluice == NULL || root == NULL) {
        fprintf(stderr,
                "SL_SLUICE_EXE or SL_BENCH_SOURCE_ROOT unset: run via tests/bench/run.sh\n");
        return 0;
    }
    snprintf(e.data, sizeof(e.data), "%s/expr", data != NULL ? data : "/tmp/sluice-bench-data");
    snprintf(e.dask_peer, sizeof(e.dask_peer), "%s/tests/bench/graph/peer_dask_expr.py", root);
    snprintf(e.ne_peer, sizeof(e.ne_peer), "%s/tests/bench/graph/peer_numexpr_expr.py", root);
    char graph[4096], raw[4096], dark[4096], flat[4096], floor_out[4096], synced_out[4096];
    const int dask = bench_setup(&e, graph);
    data_path(&e, "raw.zarr", raw);
    data_path(&e, "dark.zarr", dark);
    data_path(&e, "flat.zarr", flat);
    data_path(&e, "out_floor.zarr", floor_out);
    data_path(&e, "out_floor_synced.zarr", synced_out);
    const struct flatfield_spec fs = {.raw_dir = raw,
                                      .dark_dir = dark,
                                      .flat_dir = flat,
                                      .out_dir = floor_out,
                                      .shape = {2, 2, 32, PLANE_N, PLANE_N},
                                      .chunk = {1, 1, 32, 256, 256},
                                      .plane_chunk = {256, 256}};
    struct flatfield_spec synced = fs;
    synced.out_dir = synced_out;
    synced.synced = 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const int threads = cores > 0 && cores <= 16 ? (int)cores : 2;
    static struct rounds r;
    for (int i = 0; i < reps; i++)
        bench_round(&e, graph, &fs, &synced, threads, dask, i, &r);
    report_flatfield(&e, &fs, &r, reps, dask, threads);
    sl_bench_report("bench_process_rss_at_fork", bench_proc_rss_at_fork(), "MiB");
    bench_kernel(&e);
    return 0;
}
