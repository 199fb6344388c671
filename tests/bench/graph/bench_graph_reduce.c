/* SPDX-License-Identifier: MIT */
/*
 * The reduce and stats nodes' benchmark, on the 5-D demo image
 * (examples/quickstart.sh's uint16 (2, 2, 32, 1024, 1024) in
 * (1, 1, 32, 256, 256) chunks, Zarr v2, zstd level 1; bench_graph_expr's
 * input under $SL_BENCH_DATA/expr, made once by `sluice generate`):
 *
 *   MIP:   "m": {"op": "reduce", "input": "r", "method": "max", "axes": [2]}
 *          put into a new Zarr v2 uint16 (2, 2, 1024, 1024) array in
 *          (1, 1, 256, 256) chunks, zstd level 1;
 *   stats: "s": {"op": "stats", "input": "r", "per": [1],
 *                "histogram": {"bins": 256}, "percentiles": [0.5, 99.5]}
 *          per channel: min, max, mean, std, 256 bins over [0, 65536) and
 *          two percentiles, into the --report file and on stdout.
 *
 * by `sluice run --memory 256M` on a graph file each, and by dask on the
 * threaded scheduler (peer_dask_reduce.py): from_zarr(raw).max(axis=2)
 * .to_zarr(...) with Zstd(1) and the same chunks; and the statistics in one
 * dask.compute two ways, "direct" (min, max, mean, std, da.histogram,
 * da.percentile over each channel's blocks flattened) and "bincount" (the
 * counts of all 65536 values per block by map_blocks, summed per channel,
 * the rest derived in numpy: exact for uint16); the faster one is dask's
 * figure.  Each sluice run is a child process: its wall time, CPU time and
 * peak RSS come from wait4() over the whole process; dask's from the peer,
 * which times its pipeline only (imports and set-up excluded).  Runs
 * interleave (sluice MIP, dask MIP, sluice stats, dask stats bincount, dask
 * stats direct; REPS rounds), each after the previous outputs are removed
 * and written back (sync).  Prints medians, dask / sluice, whether sluice's
 * peak RSS stayed below its budget, and checks the results: sluice's MIP
 * must equal dask's element for element, and sluice's statistics numpy's
 * (min, max, histogram and percentiles exactly, mean within 1e-12 and std
 * within 1e-9 relative), or the bench fails.  A peer that cannot run gets a
 * line saying why and no figures.
 *
 *   bench_graph_reduce [REPS]   (default $REPS, else 3; run by tests/bench/run.sh, which
 *   sets SL_SLUICE_EXE, SL_BENCH_SOURCE_ROOT and SL_BENCH_DATA)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_proc.h"
#include "downsample_floor.h"

#define BUDGET "256M"    /* sluice's --memory */
#define BUDGET_MIB 256.0 /* the same, in MiB */
#define MAX_REPS 15      /* rounds at most (bench_proc_median takes 16) */
#define STATS_VARIANTS 2 /* dask's ways of computing the statistics */

/* dask's statistics variants, as peer_dask_reduce.py names them. */
static const char *const variant_names[STATS_VARIANTS] = {"bincount", "direct"};

/* Paths and programs of this invocation. */
struct env {
    const char *sluice; /* the launcher */
    char peer[4096];    /* peer_dask_reduce.py */
    char data[4096];    /* $SL_BENCH_DATA/expr: the raw, the graphs, the outputs */
};

/* The measurements of the rounds. */
struct rounds {
    struct bench_proc_cost sl_mip[MAX_REPS], dask_mip[MAX_REPS];
    struct bench_proc_cost sl_stats[MAX_REPS], dask_stats[STATS_VARIANTS][MAX_REPS];
    double sl_mip_run_s[MAX_REPS], sl_stats_run_s[MAX_REPS]; /* the reports' elapsed_s */
};

/* `name` under the data directory into `out` (4096 bytes). */
static void
data_path(const struct env *e, const char *name, char *out)
{
    snprintf(out, 4096, "%s/%s", e->data, name);
}

/* Write `text` into the file `name` under the data directory. */
static void
write_text(const struct env *e, const char *name, const char *text)
{
    char path[4096];
    data_path(e, name, path);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
        bench_proc_die("cannot write a graph file");
}

/* The two graph files, beside the raw. */
static void
write_graphs(const struct env *e)
{
    write_text(e, "reduce_mip.json",
               "{\n"
               "  \"sluice\": 1,\n"
               "  \"comment\": \"bench_graph_reduce: maximum along z of the 5-D demo image\",\n"
               "  \"arrays\": {\n"
               "    \"raw\": {\"path\": \"raw.zarr\"},\n"
               "    \"mip\": {\"path\": \"reduce_mip_sluice.zarr\",\n"
               "            \"create\": {\"format\": 2, \"dtype\": \"uint16\", \"chunks\": [1, 1, "
               "256, 256], \"codec\": \"zstd:1\"}}\n"
               "  },\n"
               "  \"nodes\": {\n"
               "    \"r\": {\"op\": \"get\", \"array\": \"raw\"},\n"
               "    \"m\": {\"op\": \"reduce\", \"input\": \"r\", \"method\": \"max\", \"axes\": "
               "[2]},\n"
               "    \"w\": {\"op\": \"put\", \"input\": \"m\", \"array\": \"mip\"}\n"
               "  }\n"
               "}\n");
    write_text(e, "reduce_stats.json",
               "{\n"
               "  \"sluice\": 1,\n"
               "  \"comment\": \"bench_graph_reduce: statistics per channel of the 5-D demo "
               "image\",\n"
               "  \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"}},\n"
               "  \"nodes\": {\n"
               "    \"r\": {\"op\": \"get\", \"array\": \"raw\"},\n"
               "    \"s\": {\"op\": \"stats\", \"input\": \"r\", \"per\": [1], \"histogram\": "
               "{\"bins\": 256},\n"
               "          \"percentiles\": [0.5, 99.5]}\n"
               "  }\n"
               "}\n");
}

/* Run the peer with up to four arguments. */
static int
peer(const struct env *e, const char *a1, const char *a2, const char *a3, const char *a4,
     struct bench_proc_lines *out, struct bench_proc_cost *c)
{
    char *argv[] = {"/usr/bin/python3", (char *)e->peer, (char *)a1, (char *)a2,
                    (char *)a3,         (char *)a4,      NULL};
    return bench_proc_spawn(argv, out, c);
}

/* Whether dask can run here; a line saying why not when it cannot. */
static int
dask_usable(const struct env *e)
{
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    int rc = peer(e, "check", NULL, NULL, NULL, &l, &c);
    if (rc == 0)
        return 1;
    l.text[strcspn(l.text, "\n")] = '\0';
    printf("# dask_mip, dask_stats: not measured (python3-dask missing or broken: %s; exit %d)\n",
           l.text, rc);
    return 0;
}

/* The "elapsed_s" of the sluice report at `path`, or -1. */
static double
report_elapsed(const char *path)
{
    static char text[1 << 16];
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *p = strstr(text, "\"elapsed_s\":");
    return p != NULL ? atof(p + strlen("\"elapsed_s\":")) : -1;
}

/* One `sluice run GRAPH --memory BUDGET --report REPORT`, its output
 * `out_name` removed and written back first; the report's elapsed_s. */
static double
sluice_once(const struct env *e, const char *graph_name, const char *out_name,
            const char *report_name, struct bench_proc_lines *l, struct bench_proc_cost *c)
{
    char graph[4096], out[4096], report[4096];
    data_path(e, graph_name, graph);
    data_path(e, report_name, report);
    if (out_name != NULL) {
        data_path(e, out_name, out);
        bench_proc_rm_tree(out);
    }
    remove(report);
    sync();
    char *argv[] = {(char *)e->sluice, "run",  graph,           "--memory", BUDGET,
                    "--report",        report, "--no-progress", NULL};
    if (bench_proc_spawn(argv, l, c) != 0)
        bench_proc_die("sluice run failed");
    return report_elapsed(report);
}

/* One dask run of `what` ("mip", or "stats" with `variant`) into `out_name`. */
static void
dask_once(const struct env *e, const char *what, const char *variant, const char *out_name,
          struct bench_proc_cost *c)
{
    char out[4096], name[128];
    data_path(e, out_name, out);
    bench_proc_rm_tree(out);
    sync();
    struct bench_proc_lines l;
    struct bench_proc_cost whole;
    int rc = variant == NULL ? peer(e, what, e->data, out, NULL, &l, &whole)
                             : peer(e, what, e->data, variant, out, &l, &whole);
    if (rc != 0)
        bench_proc_die("the dask peer failed");
    char prefix[64];
    snprintf(prefix, sizeof(prefix), variant == NULL ? "dask_%s" : "dask_%s_%s", what, variant);
    snprintf(name, sizeof(name), "%s_wall", prefix);
    c->wall_s = bench_proc_value(&l, name);
    snprintf(name, sizeof(name), "%s_cpu", prefix);
    c->cpu_s = bench_proc_value(&l, name);
    snprintf(name, sizeof(name), "%s_peak_rss", prefix);
    c->rss_mib = bench_proc_value(&l, name);
}

/* Print sluice's stats lines (its stdout) as notes. */
static void
print_sluice_stats(const struct bench_proc_lines *l)
{
    for (const char *p = l->text; *p != '\0';) {
        const char *end = strchr(p, '\n');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        if (strncmp(p, "stats ", 6) == 0)
            printf("# sluice: %.*s\n", (int)n, p);
        p = end != NULL ? end + 1 : p + n;
    }
}

/* One round: sluice's MIP, dask's, sluice's stats, dask's two variants. */
static void
bench_round(const struct env *e, int dask, int i, struct rounds *r)
{
    struct bench_proc_lines l;
    r->sl_mip_run_s[i] = sluice_once(e, "reduce_mip.json", "reduce_mip_sluice.zarr",
                                     "reduce_mip_report.json", NULL, &r->sl_mip[i]);
    if (dask)
        dask_once(e, "mip", NULL, "reduce_mip_dask.zarr", &r->dask_mip[i]);
    r->sl_stats_run_s[i] =
        sluice_once(e, "reduce_stats.json", NULL, "reduce_stats_report.json", &l, &r->sl_stats[i]);
    if (i == 0)
        print_sluice_stats(&l);
    for (int v = 0; dask && v < STATS_VARIANTS; v++) {
        char out[128];
        snprintf(out, sizeof(out), "reduce_stats_dask_%s.json", variant_names[v]);
        dask_once(e, "stats", variant_names[v], out, &r->dask_stats[v][i]);
    }
}

/* sluice's side of `what` (mip, stats): medians, the run's own elapsed
 * time and whether the peak RSS stayed below the budget. */
static struct bench_proc_cost
report_sluice(const char *what, const struct bench_proc_cost *c, double *run_s, int reps)
{
    char name[128];
    struct bench_proc_cost s = bench_proc_median_cost(c, reps);
    snprintf(name, sizeof(name), "sluice_%s", what);
    bench_proc_report_cost(name, &s);
    snprintf(name, sizeof(name), "sluice_%s_run_elapsed", what);
    sl_bench_report(name, bench_proc_median(run_s, reps), "s");
    snprintf(name, sizeof(name), "sluice_%s_rss_within_budget", what);
    sl_bench_report(name, s.rss_mib < BUDGET_MIB, "flag");
    return s;
}

/* Fail the bench unless the peer's line `flag` says 1. */
static void
check_flag(const struct bench_proc_lines *l, const char *flag, const char *what)
{
    if (bench_proc_value(l, flag) == 1)
        return;
    fprintf(stderr, "bench_graph_reduce: FAILED: %s (%s is %g)\n", what, flag,
            bench_proc_value(l, flag));
    exit(1);
}

/* sluice's MIP against dask's, element for element. */
static void
check_mip(const struct env *e)
{
    char a[4096], b[4096];
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    data_path(e, "reduce_mip_sluice.zarr", a);
    data_path(e, "reduce_mip_dask.zarr", b);
    if (peer(e, "compare-mip", a, b, NULL, &l, &c) != 0)
        bench_proc_die("the comparison of the MIPs failed");
    bench_proc_notes(&l);
    sl_bench_report("mip_sluice_vs_dask_differing", bench_proc_value(&l, "compare_mip_differing"),
                    "count");
    check_flag(&l, "compare_mip_equal", "sluice's MIP differs from dask's");
    printf("# mip: sluice's output equals dask's, element for element\n");
}

/* sluice's statistics (and dask's) against numpy's over each channel. */
static void
check_stats(const struct env *e, int dask)
{
    char report[4096], peers[STATS_VARIANTS][4096];
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    data_path(e, "reduce_stats_report.json", report);
    for (int v = 0; v < STATS_VARIANTS; v++) {
        char name[128];
        snprintf(name, sizeof(name), "reduce_stats_dask_%s.json", variant_names[v]);
        data_path(e, name, peers[v]);
    }
    char *argv[] = {"/usr/bin/python3",
                    (char *)e->peer,
                    "compare-stats",
                    (char *)e->data,
                    report,
                    dask ? peers[0] : NULL,
                    peers[1],
                    NULL};
    if (bench_proc_spawn(argv, &l, &c) != 0)
        bench_proc_die("the comparison of the statistics failed");
    bench_proc_notes(&l);
    check_flag(&l, "compare_stats_sluice_equal", "sluice's statistics differ from numpy's");
    printf("# stats: sluice's min, max, histogram and percentiles equal numpy's, mean within "
           "1e-12 and std within 1e-9 relative, in both channels\n");
    if (!dask)
        return;
    check_flag(&l, "compare_stats_dask_bincount_equal",
               "dask's bincount statistics differ from numpy's: the peer is wrong");
    if (bench_proc_value(&l, "compare_stats_dask_direct_equal") != 1)
        printf("# dask direct: da.percentile merges per-block percentiles, not numpy's "
               "(above); its other statistics are checked there too\n");
}

/* dask's side and the ratios; the faster stats variant is dask's figure. */
static void
report_dask(const struct rounds *r, int reps, const struct bench_proc_cost *sl_mip,
            const struct bench_proc_cost *sl_stats)
{
    struct bench_proc_cost d = bench_proc_median_cost(r->dask_mip, reps), v[STATS_VARIANTS];
    bench_proc_report_cost("dask_mip", &d);
    sl_bench_report("mip_speedup_vs_dask", d.wall_s / sl_mip->wall_s, "x");
    sl_bench_report("mip_dask_over_sluice_cpu", d.cpu_s / sl_mip->cpu_s, "x");
    int best = 0;
    for (int k = 0; k < STATS_VARIANTS; k++) {
        char name[64];
        v[k] = bench_proc_median_cost(r->dask_stats[k], reps);
        snprintf(name, sizeof(name), "dask_stats_%s", variant_names[k]);
        bench_proc_report_cost(name, &v[k]);
        best = v[k].wall_s < v[best].wall_s ? k : best;
    }
    printf("# dask_stats: the %s variant, the faster (median wall %.3g s against %.3g s)\n",
           variant_names[best], v[best].wall_s, v[1 - best].wall_s);
    bench_proc_report_cost("dask_stats", &v[best]);
    sl_bench_report("stats_speedup_vs_dask", v[best].wall_s / sl_stats->wall_s, "x");
    sl_bench_report("stats_dask_over_sluice_cpu", v[best].cpu_s / sl_stats->cpu_s, "x");
}

/*
 * The zstd floor (downsample_floor.c) of both tasks: every input chunk
 * decoded in memory on 2 threads (reused contexts and buffers, the files
 * read beforehand), and for the MIP the output's share (1/32 of the input)
 * re-encoded at level 1.  No program doing either task can take less; so
 * dask's time over it is the most any speedup over dask can be here.
 */
static void
report_floor(const struct env *e, int reps, const struct bench_proc_cost *sl_mip,
             const struct bench_proc_cost *sl_stats, const struct rounds *r, int dask)
{
    char in[4096];
    data_path(e, "raw.zarr", in);
    struct floor_chunks c;
    if (floor_load(in, &c) != 0) {
        printf("# zstd floor: not measured (the input's chunk files cannot be read)\n");
        return;
    }
    static const char *const kinds[2] = {"mip", "stats"};
    const double shares[2] = {1.0 / 32, 0};
    const struct bench_proc_cost *sl[2] = {sl_mip, sl_stats};
    for (int k = 0; k < 2; k++) {
        double w[MAX_REPS], u[MAX_REPS];
        int rc = 0;
        for (int i = 0; i < reps && rc == 0; i++)
            rc = floor_run(&c, 2, shares[k], &w[i], &u[i]);
        if (rc != 0)
            break;
        const double wall = bench_proc_median(w, reps), cpu = bench_proc_median(u, reps);
        char name[64];
        snprintf(name, sizeof(name), "zstd_floor_%s_wall", kinds[k]);
        sl_bench_report(name, wall, "s");
        snprintf(name, sizeof(name), "zstd_floor_%s_cpu", kinds[k]);
        sl_bench_report(name, cpu, "s");
        snprintf(name, sizeof(name), "sluice_%s_wall_over_zstd_floor", kinds[k]);
        sl_bench_report(name, sl[k]->wall_s / wall, "x");
        if (!dask)
            continue;
        double dask_wall = bench_proc_median_cost(r->dask_mip, reps).wall_s;
        if (k == 1)
            for (int v = 0; v < STATS_VARIANTS; v++) {
                const double dv = bench_proc_median_cost(r->dask_stats[v], reps).wall_s;
                dask_wall = v == 0 || dv < dask_wall ? dv : dask_wall;
            }
        snprintf(name, sizeof(name), "%s_speedup_vs_dask_at_zstd_floor", kinds[k]);
        sl_bench_report(name, dask_wall / wall, "x");
    }
    floor_free(&c);
}

/* The input (made once), its check, the graph files; whether dask runs. */
static int
bench_setup(const struct env *e)
{
    bench_proc_demo_raw(e->sluice, e->data);
    struct bench_proc_lines l;
    struct bench_proc_cost c;
    if (peer(e, "setup", e->data, NULL, NULL, &l, &c) != 0)
        bench_proc_die("peer_dask_reduce.py setup failed: the raw is not the demo input, or "
                       "python3-zarr is missing");
    bench_proc_notes(&l);
    write_graphs(e);
    return dask_usable(e);
}

int
main(int argc, char **argv)
{
    const int reps = bench_proc_reps(argc, argv, MAX_REPS);
    struct env e;
    e.sluice = getenv("SL_SLUICE_EXE");
    const char *root = getenv("SL_BENCH_SOURCE_ROOT"), *data = getenv("SL_BENCH_DATA");
    if (e.sluice == NULL || root == NULL) {
        fprintf(stderr,
                "SL_SLUICE_EXE or SL_BENCH_SOURCE_ROOT unset: run via tests/bench/run.sh\n");
        return 0;
    }
    snprintf(e.data, sizeof(e.data), "%s/expr", data != NULL ? data : "/tmp/sluice-bench-data");
    snprintf(e.peer, sizeof(e.peer), "%s/tests/bench/graph/peer_dask_reduce.py", root);
    const int dask = bench_setup(&e);
    static struct rounds r;
    for (int i = 0; i < reps; i++)
        bench_round(&e, dask, i, &r);
    printf("# %d rounds; sluice runs with --memory %s, timed over the whole process\n", reps,
           BUDGET);
    const struct bench_proc_cost mip = report_sluice("mip", r.sl_mip, r.sl_mip_run_s, reps);
    const struct bench_proc_cost st = report_sluice("stats", r.sl_stats, r.sl_stats_run_s, reps);
    if (dask)
        report_dask(&r, reps, &mip, &st);
    else
        printf("# mip_speedup_vs_dask, stats_speedup_vs_dask: not measured (no dask)\n");
    report_floor(&e, reps, &mip, &st, &r, dask);
    if (dask)
        check_mip(&e);
    else
        printf("# mip: not checked (no dask output to compare with)\n");
    check_stats(&e, dask);
    sl_bench_report("bench_process_rss_at_fork", bench_proc_rss_at_fork(), "MiB");
    return 0;
}
