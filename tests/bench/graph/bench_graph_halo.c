/* SPDX-License-Identifier: MIT */
/*
 * The halo benchmark: neighbourhood filters over chunked arrays, each
 * against its peer in the same run.
 *
 * gaussian: a graph file get -> gaussian (sigma 2, mode reflect) -> put
 * over a float32 512^3 volume in 64^3 chunks (Zarr v2, zstd level 1, made
 * once by `sluice generate`), by `sluice run --no-sync` (dask does not wait
 * for the device either), against dask: from_zarr, map_overlap of
 * scipy.ndimage.gaussian_filter with depth 8 (the kernel's radius) and
 * boundary 'reflect' (numpy's 'symmetric', scipy's 'reflect'), to_zarr with
 * the same codec and chunks (peer_dask_halo.py gauss).
 *
 * smooth_pyramid: `sluice pyramid --levels 4 --factors 1,1,1,2,2 --smooth
 * gaussian` of the 5-D demo input (examples/quickstart.sh's uint16
 * (2, 2, 32, 1024, 1024) in (1, 1, 32, 256, 256) chunks, here Zarr v2 with
 * zstd level 1, bench_proc_demo_raw), against ngff-zarr's Gaussian method
 * as dask computes it, each level from the previous one read back
 * (peer_dask_halo.py pyramid).
 *
 * Both sluice runs get the same thread count as dask (one per core) and the
 * memory budget HALO_BUDGET; each is a child process whose wall time, CPU
 * time and peak RSS come from wait4(), and the worst peak RSS of every
 * sluice run is checked against the budget.  dask's times are its
 * pipeline's only (imports and set-up excluded).  Runs interleave (sluice
 * gaussian, dask gaussian, sluice pyramid, dask pyramid; REPS rounds), each
 * after the previous output is removed and written back (sync).  The
 * medians are reported and the ratios dask / sluice; the outputs are
 * compared (all of the gaussian's, levels 1 to 3 of the pyramids) and the
 * bench fails when they disagree, since a ratio over different work means
 * nothing.
 *
 * gaussian_kernel: sl_filter on this thread over the 512^3 volume in
 * memory, 64^3 output blocks each reading its input in place from the
 * whole array, against scipy.ndimage.gaussian_filter on the whole array in
 * a Python child on one thread (peer_dask_halo.py kernel); best of
 * KERNEL_REPS each, and the results compared.
 *
 * A peer that cannot run (dask or scipy missing) gets a line saying why and
 * no figures.  Inputs are made once under $SL_BENCH_DATA/halo.
 *
 *   bench_graph_halo [REPS]   (default $REPS, else 3; run by tests/bench/run.sh, which
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
#include <sluice/filter.h>

#include "bench.h"
#include "bench_proc.h"

#define HALO_BUDGET "256M" /* sluice's --memory for both runs */
#define HALO_BUDGET_MIB 256.0
#define VOL_N 512         /* the volume is VOL_N^3 float32 */
#define VOL_CHUNK 64      /* in VOL_CHUNK^3 chunks */
#define SIGMA 2.0         /* the gaussian's sigma, every axis */
#define KERNEL_REPS 3     /* timed passes of the kernel, each side */
#define MAX_REL_DIFF 1e-5 /* sluice against a peer: max |a - b| / max |b| */

/* Paths and programs of this invocation. */
struct env {
    const char *sluice; /* the launcher */
    char peer[4096];    /* peer_dask_halo.py */
    char data[4096];    /* $SL_BENCH_DATA/halo: inputs, outputs, graph */
    char threads[16];   /* worker threads of sluice and dask */
};

static void
die(const char *what)
{
    fprintf(stderr, "bench_graph_halo: %s\n", what);
    exit(1);
}

/* `name` under the data directory into `out` (4096 bytes). */
static void
data_path(const struct env *e, const char *name, char *out)
{
    snprintf(out, 4096, "%s/%s", e->data, name);
}

/* Run the peer with up to three arguments. */
static int
peer(const struct env *e, const char *cmd, const char *a1, const char *a2, const char *a3,
     struct bench_proc_lines *out, struct bench_proc_cost *c)
{
    char *argv[] = {"/usr/bin/python3", (char *)e->peer, (char *)cmd, (char *)a1,
                    (char *)a2,         (char *)a3,      NULL};
    return bench_proc_spawn(argv, out, c);
}

/* The graph file of the gaussian, beside its arrays. */
static void
write_graph(const struct env *e, char *graph)
{
    data_path(e, "gaussian.json", graph);
    FILE *f = fopen(graph, "w");
    if (f == NULL)
        die("cannot write the graph file");
    fprintf(f,
            "{\n"
            "  \"sluice\": 1,\n"
            "  \"comment\": \"bench_graph_halo: a Gaussian of a float32 volume\",\n"
            "  \"arrays\": {\n"
            "    \"vol\": {\"path\": \"vol.zarr\"},\n"
            "    \"out\": {\"path\": \"out_sluice.zarr\",\n"
            "            \"create\": {\"format\": 2, \"dtype\": \"float32\", \"chunks\": [%d, %d, "
            "%d], \"codec\": \"zstd:1\"}}\n"
            "  },\n"
            "  \"nodes\": {\n"
            "    \"r\": {\"op\": \"get\", \"array\": \"vol\"},\n"
            "    \"g\": {\"op\": \"gaussian\", \"input\": \"r\", \"sigma\": %g, \"mode\": "
            "\"reflect\"},\n"
            "    \"w\": {\"op\": \"put\", \"input\": \"g\", \"array\": \"out\"}\n"
            "  }\n"
            "}\n",
            VOL_CHUNK, VOL_CHUNK, VOL_CHUNK, SIGMA);
    if (fclose(f) != 0)
        die("cannot write the graph file");
}

/* `dir`/vol.zarr by `sluice generate`, unless it is there. */
static void
make_volume(const struct env *e)
{
    char vol[4096], meta[4096], partial[4096];
    data_path(e, "vol.zarr", vol);
    data_path(e, "vol.zarr/.zarray", meta);
    data_path(e, "vol.zarr.partial", partial);
    if (access(meta, F_OK) == 0)
        return;
    bench_proc_rm_tree(partial);
    bench_proc_rm_tree(vol);
    /* clang-format off */
    char *argv[] = {(char *)e->sluice, "generate", partial,
                    "--shape", "512,512,512", "--chunks", "64,64,64", "--dtype", "float32",
                    "--format", "v2", "--codec", "zstd:1", "--no-progress", NULL};
    /* clang-format on */
    struct bench_proc_cost c;
    if (bench_proc_spawn(argv, NULL, &c) != 0 || rename(partial, vol) != 0)
        die("sluice generate could not make the volume");
    printf("# volume generated by sluice generate in %.2f s\n", c.wall_s);
}

/* Whether dask and scipy can run here; a line saying why not when not. */
static int
peer_usable(const struct env *e)
{
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    int rc = peer(e, "check", NULL, NULL, NULL, &l, &c);
    if (rc == 0) {
        bench_proc_notes(&l);
        return 1;
    }
    l.text[strcspn(l.text, "\n")] = '\0';
    printf("# dask and scipy peers: not measured (python3-dask or python3-scipy missing or "
           "broken: %s; exit %d)\n",
           l.text, rc);
    return 0;
}

/* The measurements of the rounds. */
struct rounds {
    struct bench_proc_cost sl_gauss[16], dask_gauss[16], sl_pyr[16], dask_pyr[16];
};

/* The dask peer's own figures `prefix`_{wall,cpu,peak_rss} in `l`. */
static struct bench_proc_cost
peer_cost(const struct bench_proc_lines *l, const char *prefix)
{
    char w[128], u[128], r[128];
    snprintf(w, sizeof(w), "%s_wall", prefix);
    snprintf(u, sizeof(u), "%s_cpu", prefix);
    snprintf(r, sizeof(r), "%s_peak_rss", prefix);
    return (struct bench_proc_cost){bench_proc_value(l, w), bench_proc_value(l, u),
                                    bench_proc_value(l, r), -1};
}

/* Run the peer's `cmd` from `src` into `out` (removed first). */
static void
dask_once(const struct env *e, const char *cmd, const char *src, const char *out,
          const char *prefix, struct bench_proc_cost *c)
{
    struct bench_proc_lines l;
    struct bench_proc_cost whole;
    bench_proc_rm_tree(out);
    sync();
    if (peer(e, cmd, src, out, e->threads, &l, &whole) != 0)
        die("the dask peer failed");
    *c = peer_cost(&l, prefix);
    if (c->wall_s <= 0)
        die("the dask peer printed no wall time");
}

/* Run sluice with `argv`, its output `out` removed first. */
static void
sluice_once(char *const argv[], const char *out, struct bench_proc_cost *c)
{
    bench_proc_rm_tree(out);
    sync();
    if (bench_proc_spawn(argv, NULL, c) != 0)
        die("a sluice run failed");
}

/* One round: sluice's gaussian, dask's, sluice's pyramid, dask's. */
static void
bench_round(const struct env *e, const char *graph, int dask, int i, struct rounds *r)
{
    char vol[4096], raw[4096], out[4096], pyr[4096];
    data_path(e, "vol.zarr", vol);
    data_path(e, "raw.zarr", raw);
    data_path(e, "out_sluice.zarr", out);
    data_path(e, "pyr_sluice.zarr", pyr);
    /* clang-format off */
    char *run[] = {(char *)e->sluice, "run", (char *)graph, "--no-progress", "--no-sync",
                   "--threads", (char *)e->threads, "--memory", HALO_BUDGET, NULL};
    /* clang-format on */
    sluice_once(run, out, &r->sl_gauss[i]);
    /* clang-format off */
    char *pyramid[] = {(char *)e->sluice, "pyramid", raw, pyr,
                       "--levels", "4", "--factors", "1,1,1,2,2", "--smooth", "gaussian",
                       "--format", "v2", "--chunks", "1,1,32,256,256", "--codec", "zstd:1",
                       "--no-progress", "--no-sync", "--threads", (char *)e->threads,
                       "--memory", HALO_BUDGET, NULL};
    /* clang-format on */
    if (dask) {
        data_path(e, "out_dask.zarr", out);
        dask_once(e, "gauss", vol, out, "dask_gaussian", &r->dask_gauss[i]);
    }
    sluice_once(pyramid, pyr, &r->sl_pyr[i]);
    if (dask) {
        data_path(e, "pyr_dask.zarr", pyr);
        dask_once(e, "pyramid", raw, pyr, "dask_smooth_pyramid", &r->dask_pyr[i]);
    }
}

/* Compare sluice's output `mine` with dask's `theirs` by the peer's `cmd`,
 * over `n_levels` arrays (1: one array; else pyramid levels 1 ...), and
 * report its `peer_prefix`_... figures as `prefix`_..._sluice_vs_dask_...;
 * dies unless every max relative difference is within MAX_REL_DIFF. */
static void
check_outputs(const struct env *e, const char *cmd, const char *mine, const char *theirs,
              const char *peer_prefix, const char *prefix, int n_levels)
{
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    if (peer(e, cmd, mine, theirs, NULL, &l, &c) != 0)
        die("the comparison with dask's output failed");
    for (int k = 0; k < n_levels; k++) {
        char from[128], name[160], lvl[32] = "";
        if (n_levels > 1)
            snprintf(lvl, sizeof(lvl), "_level%d", k + 1);
        static const char *const what[] = {"max_rel_diff", "max_abs_diff", "equal_share"};
        static const char *const unit[] = {"value", "value", "fraction"};
        double v[3];
        for (int j = 0; j < 3; j++) {
            snprintf(from, sizeof(from), "%s%s_%s", peer_prefix, lvl, what[j]);
            snprintf(name, sizeof(name), "%s%s_sluice_vs_dask_%s", prefix, lvl, what[j]);
            v[j] = bench_proc_value(&l, from);
            sl_bench_report(name, v[j], unit[j]);
        }
        if (v[0] < 0 || v[0] > MAX_REL_DIFF) {
            fprintf(stderr, "bench_graph_halo: %s%s: max |sluice - dask| / max |dask| = %g\n",
                    prefix, lvl, v[0]);
            die("sluice's output differs from dask's: FAILED (they do not do the same work)");
        }
    }
    printf("# %s: sluice's output agrees with dask's (max relative difference at most %g)\n",
           prefix, MAX_REL_DIFF);
}

/* The worst peak RSS of `n` sluice runs. */
static double
worst_rss(const struct bench_proc_cost *c, int n)
{
    double w = 0;
    for (int i = 0; i < n; i++)
        w = c[i].rss_mib > w ? c[i].rss_mib : w;
    return w;
}

/* Medians, ratios, the budget and the checks of one computation. */
static void
report_one(const char *prefix, const struct bench_proc_cost *sl, const struct bench_proc_cost *dk,
           int reps, int dask)
{
    char name[160];
    struct bench_proc_cost s = bench_proc_median_cost(sl, reps);
    snprintf(name, sizeof(name), "sluice_%s", prefix);
    bench_proc_report_cost(name, &s);
    snprintf(name, sizeof(name), "sluice_%s_budget", prefix);
    sl_bench_report(name, HALO_BUDGET_MIB, "MiB");
    snprintf(name, sizeof(name), "sluice_%s_worst_peak_rss", prefix);
    sl_bench_report(name, worst_rss(sl, reps), "MiB");
    if (!dask) {
        printf("# %s_speedup_vs_dask: not measured (no dask)\n", prefix);
        return;
    }
    struct bench_proc_cost d = bench_proc_median_cost(dk, reps);
    snprintf(name, sizeof(name), "dask_%s", prefix);
    bench_proc_report_cost(name, &d);
    snprintf(name, sizeof(name), "%s_speedup_vs_dask", prefix);
    sl_bench_report(name, d.wall_s / s.wall_s, "x");
    snprintf(name, sizeof(name), "%s_dask_over_sluice_cpu", prefix);
    sl_bench_report(name, d.cpu_s / s.cpu_s, "x");
}

/* Every figure of the rounds, and the outputs checked. */
static void
report_rounds(const struct env *e, const struct rounds *r, int reps, int dask)
{
    report_one("gaussian", r->sl_gauss, r->dask_gauss, reps, dask);
    report_one("smooth_pyramid", r->sl_pyr, r->dask_pyr, reps, dask);
    const double g = worst_rss(r->sl_gauss, reps), p = worst_rss(r->sl_pyr, reps);
    const double worst = g > p ? g : p;
    sl_bench_report("graph_halo_peak_rss", worst, "MiB");
    sl_bench_report("graph_halo_budget", HALO_BUDGET_MIB, "MiB");
    sl_bench_report("graph_halo_peak_rss_within_budget", worst <= HALO_BUDGET_MIB, "flag");
    printf("# peak RSS of every sluice run %s the budget (%.1f MiB against --memory %s)\n",
           worst <= HALO_BUDGET_MIB ? "within" : "OVER", worst, HALO_BUDGET);
    if (!dask)
        return;
    char a[4096], b[4096];
    data_path(e, "out_sluice.zarr", a);
    data_path(e, "out_dask.zarr", b);
    check_outputs(e, "compare", a, b, "compare", "gaussian", 1);
    data_path(e, "pyr_sluice.zarr", a);
    data_path(e, "pyr_dask.zarr", b);
    check_outputs(e, "compare_pyramid", a, b, "compare", "smooth_pyramid", 3);
}

/* Read `n` bytes of the file at `path` into a new buffer, or die. */
static void *
read_exact(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    void *p = malloc(n);
    if (f == NULL || p == NULL || fread(p, 1, n, f) != n)
        die("cannot read the kernel's input (peer_dask_halo.py setup writes it)");
    fclose(f);
    return p;
}

/* One pass of sl_filter over the whole volume `in` into `out`, in
 * VOL_CHUNK^3 output blocks, each reading its input in place. */
static void
kernel_pass(const struct sl_filter_params *p, const struct sl_view *in, const struct sl_view *out,
            void *scratch, size_t scratch_bytes)
{
    const uint64_t shape[3] = {VOL_N, VOL_N, VOL_N};
    struct sl_error err = SL_ERROR_INIT;
    for (uint64_t z = 0; z < VOL_N; z += VOL_CHUNK)
        for (uint64_t y = 0; y < VOL_N; y += VOL_CHUNK)
            for (uint64_t x = 0; x < VOL_N; x += VOL_CHUNK) {
                struct sl_region o = {.rank = 3,
                                      .start = {z, y, x},
                                      .stop = {z + VOL_CHUNK, y + VOL_CHUNK, x + VOL_CHUNK}},
                                 r;
                struct sl_view iv, ov;
                sl_filter_input_region(p, shape, &o, &r);
                if (sl_view_slice(in, &r, &iv, &err) != SL_OK ||
                    sl_view_slice(out, &o, &ov, &err) != SL_OK ||
                    sl_filter(p, shape, &iv, r.start, &ov, o.start, scratch, scratch_bytes, &err) !=
                        SL_OK) {
                    fprintf(stderr, "bench_graph_halo: sl_filter: %s\n", err.text);
                    exit(1);
                }
            }
}

/* sluice's kernel: KERNEL_REPS passes on this thread; median and best s. */
static void
kernel_sluice(float *in, float *out, double *med_s, double *best_s)
{
    const uint64_t shape[3] = {VOL_N, VOL_N, VOL_N}, block[3] = {VOL_CHUNK, VOL_CHUNK, VOL_CHUNK};
    struct sl_filter_params p = {.kind = SL_FILTER_GAUSSIAN,
                                 .rank = 3,
                                 .sigma = {SIGMA, SIGMA, SIGMA},
                                 .truncate = 4.0,
                                 .mode = SL_BOUNDARY_REFLECT};
    struct sl_error err = SL_ERROR_INIT;
    struct sl_view iv, ov;
    size_t bytes;
    if (sl_filter_check(&p, SL_DTYPE_F32, 3, &err) != SL_OK ||
        sl_filter_scratch_bytes(&p, SL_DTYPE_F32, block, &bytes, &err) != SL_OK ||
        sl_view_init(&iv, SL_DTYPE_F32, 3, shape, in, &err) != SL_OK ||
        sl_view_init(&ov, SL_DTYPE_F32, 3, shape, out, &err) != SL_OK) {
        fprintf(stderr, "bench_graph_halo: %s\n", err.text);
        exit(1);
    }
    void *scratch = malloc(bytes > 0 ? bytes : 1);
    if (scratch == NULL)
        die("out of memory");
    printf("# sluice kernel: sl_filter gaussian sigma %g mode reflect, float32 %d^3 in %d^3 "
           "blocks read in place, 1 thread, %d passes, %zu scratch bytes\n",
           SIGMA, VOL_N, VOL_CHUNK, KERNEL_REPS, bytes);
    double t[KERNEL_REPS];
    for (int i = 0; i < KERNEL_REPS; i++) {
        double t0 = sl_bench_now();
        kernel_pass(&p, &iv, &ov, scratch, bytes);
        t[i] = sl_bench_now() - t0;
    }
    free(scratch);
    *med_s = bench_proc_median(t, KERNEL_REPS);
    *best_s = t[0];
}

/* scipy's output (the file at `path`) against sluice's. */
static void
kernel_compare(const float *mine, const char *path, size_t n)
{
    float *theirs = read_exact(path, n * sizeof(float));
    size_t equal = 0;
    double worst = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = mine[i], y = theirs[i], d = x > y ? x - y : y - x;
        equal += mine[i] == theirs[i];
        worst = d > worst ? d : worst;
        top = (y < 0 ? -y : y) > top ? (y < 0 ? -y : y) : top;
    }
    free(theirs);
    const double rel = top > 0 ? worst / top : worst;
    sl_bench_report("gaussian_kernel_sluice_vs_scipy_max_rel_diff", rel, "value");
    sl_bench_report("gaussian_kernel_sluice_vs_scipy_equal_share", (double)equal / (double)n,
                    "fraction");
    if (rel > MAX_REL_DIFF)
        die("sluice's kernel differs from scipy's: FAILED (they do not do the same work)");
}

/* The kernel alone, sluice against scipy, one thread each. */
static void
bench_kernel(const struct env *e, int scipy)
{
    char in_path[4096], out_path[4096], reps[16];
    const size_t n = (size_t)VOL_N * VOL_N * VOL_N;
    data_path(e, "vol.f32", in_path);
    data_path(e, "out_scipy.f32", out_path);
    float *in = read_exact(in_path, n * sizeof(float)), *out = malloc(n * sizeof(float));
    if (out == NULL)
        die("out of memory");
    double med_s, best_s;
    kernel_sluice(in, out, &med_s, &best_s);
    free(in);
    sl_bench_report("sluice_gaussian_kernel", med_s, "s");
    sl_bench_report("sluice_gaussian_kernel_best", best_s, "s");
    sl_bench_report("sluice_gaussian_kernel_rate", (double)n / best_s / 1e6, "Melem/s");
    if (!scipy) {
        printf("# gaussian_kernel_over_scipy: not measured (no scipy)\n");
        free(out);
        return;
    }
    snprintf(reps, sizeof(reps), "%d", KERNEL_REPS);
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    if (peer(e, "kernel", in_path, reps, out_path, &l, &c) != 0)
        die("the scipy kernel peer failed");
    bench_proc_notes(&l);
    const double sp = bench_proc_value(&l, "scipy_gaussian_kernel"),
                 sp_best = bench_proc_value(&l, "scipy_gaussian_kernel_best");
    if (sp_best <= 0)
        die("the scipy kernel peer printed no time");
    sl_bench_report("scipy_gaussian_kernel", sp, "s");
    sl_bench_report("scipy_gaussian_kernel_best", sp_best, "s");
    sl_bench_report("gaussian_kernel_over_scipy", best_s / sp_best, "x");
    kernel_compare(out, out_path, n);
    free(out);
}

/* The inputs (made once), the graph file, and whether the peers can run. */
static int
bench_setup(const struct env *e, char *graph)
{
    if (mkdir(e->data, 0755) != 0 && errno != EEXIST)
        die("cannot make the data directory");
    make_volume(e);
    bench_proc_demo_raw(e->sluice, e->data);
    write_graph(e, graph);
    const int usable = peer_usable(e);
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    if (peer(e, "setup", e->data, NULL, NULL, &l, &c) != 0)
        die("peer_dask_halo.py setup failed: the kernel's input is not there (python3-zarr?)");
    bench_proc_notes(&l);
    return usable;
}

int
main(int argc, char **argv)
{
    /* A child's peak RSS (wait4) starts from this process's RSS at the
     * fork: large buffers always mmapped, and the kernel's (1 GiB) only
     * after the last sluice run. */
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
    snprintf(e.data, sizeof(e.data), "%s/halo", data != NULL ? data : "/tmp/sluice-bench-data");
    snprintf(e.peer, sizeof(e.peer), "%s/tests/bench/graph/peer_dask_halo.py", root);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const int threads = cores > 0 && cores <= 16 ? (int)cores : 2;
    snprintf(e.threads, sizeof(e.threads), "%d", threads);
    char graph[4096];
    const int dask = bench_setup(&e, graph);
    printf("# %d rounds, %d threads for sluice and dask, sluice --memory %s\n", reps, threads,
           HALO_BUDGET);
    static struct rounds r;
    for (int i = 0; i < reps; i++)
        bench_round(&e, graph, dask, i, &r);
    report_rounds(&e, &r, reps, dask);
    sl_bench_report("graph_halo_threads", threads, "count");
    sl_bench_report("bench_process_rss_at_fork", bench_proc_rss_at_fork(), "MiB");
    bench_kernel(&e, dask);
    return 0;
}
