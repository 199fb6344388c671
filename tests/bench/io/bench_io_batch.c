/* SPDX-License-Identifier: MIT */
/*
 * The case of zarr-python issue #3175: 8 disjoint chunk-sized slices (every
 * other chunk) of 100,000,000 float64 standard normals in chunks of
 * 1,000,000, zstd level 1 -- 64 MB decoded -- read three ways by sluice:
 *
 *   batched     one sl_array_read_batch_concat of the 8 slices
 *   loop        sl_array_read_region of each slice in turn
 *   concurrent  each slice's sl_array_read_region as its own pool task, all
 *               submitted at once
 *
 * each into its place in one 64 MB output, on a pool of one worker per
 * core; beside zarr-python 2.13 and dask's from_zarr on the same store,
 * run in this invocation by peer_zarr_read.py (/usr/bin/python3), with
 * the ratios.  Then the same slices of the same values stored as a sharded
 * v3 array (shards of 2,000,000, inner chunks of 10,000: each slice is the
 * first half of a shard), which zarr-python 2.13 cannot read.
 *
 * The ceiling: zstd itself (ZSTD_decompressDCtx, one context per worker)
 * decompressing the 8 stored frames, already in memory, into the output on
 * the same pool.  No reader of this store can beat it on this machine, so
 * it also bounds every ratio against the peers.  The ways (and the
 * ceiling) run interleaved, rep by rep, so noise from other processes
 * slows them alike.
 *
 * Data: $SL_BENCH_DATA (default /tmp/sluice-bench-data) holds b3.zarr
 * (zarr-python writes it with numpy's default_rng(0), as the peers' b3
 * anchor; without python3-zarr sluice writes normals of its own) and
 * b3_sharded.zarr (sluice copies it from b3.zarr); both are made once and
 * reused.  Warm page cache, median of REPS after one warm-up.
 *
 *   bench_io_batch [REPS]   (default 7; SL_BENCH_SOURCE_ROOT finds the peer)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include <sluice.h>

#include "bench.h"

#define N_TOTAL 100000000ull
#define CHUNK 1000000ull
#define N_SLICES 8
#define SHARD 2000000ull
#define INNER 10000ull
#define OUT_BYTES (N_SLICES * CHUNK * sizeof(double))

static void
die(const char *what, const struct sl_error *err)
{
    char line[512];
    sl_error_format(err, line, sizeof(line));
    fprintf(stderr, "bench_io_batch: %s: %s\n", what, line);
    exit(1);
}

static bool
exists(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- data ----------------------------------------------------------------------------- */

/* Standard normals without python: Box-Muller over a 64-bit LCG. */
static void
own_normals(double *out, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i += 2) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        double u1 = ((double)(*s >> 11) + 1) / 9007199254740993.0;
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        double u2 = (double)(*s >> 11) / 9007199254740992.0;
        double r = sqrt(-2 * log(u1));
        out[i] = r * cos(2 * M_PI * u2);
        if (i + 1 < n)
            out[i + 1] = r * sin(2 * M_PI * u2);
    }
}

/* Write b3.zarr with sluice (the peers are then skipped: their data differ). */
static void
make_own_v2(sl_store *store, const struct sl_parallel *par)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.zarr_format = 2;
    sp.rank = 1;
    sp.shape[0] = N_TOTAL;
    sp.chunk_shape[0] = CHUNK;
    sp.dtype = SL_DTYPE_F64;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(store, "b3.zarr", &sp, NULL, &err);
    if (a == NULL)
        die("create b3.zarr", &err);
    double *slab = malloc(16 * CHUNK * sizeof(double));
    uint64_t s = 0x853c49e6748fea9bull;
    for (uint64_t at = 0; at < N_TOTAL; at += 16 * CHUNK) {
        own_normals(slab, 16 * CHUNK, &s);
        struct sl_region r = {.rank = 1, .start = {at}, .stop = {at + 16 * CHUNK}};
        if (sl_array_write_region(a, &r, slab, 16 * CHUNK * sizeof(double), NULL, par, &err))
            die("write b3.zarr", &err);
    }
    free(slab);
    sl_array_unref(a);
}

/* Make b3.zarr (by the peer script when it can) and b3_sharded.zarr. */
static bool
ensure_data(const char *dir, const char *peer, const struct sl_parallel *par)
{
    bool by_zarr = true;
    double t0 = sl_bench_now();
    struct sl_error err = SL_ERROR_INIT;
    struct sl_fs_store_opts fo = SL_FS_STORE_OPTS_DEFAULT;
    fo.create = true;
    sl_store *store = sl_store_open_fs(dir, &fo, &err);
    if (store == NULL)
        die(dir, &err);
    if (!exists(dir, "b3.zarr/.zarray") && peer != NULL) {
        char cmd[8192];
        snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s create %s/b3.zarr", peer, dir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_io_batch: the peer could not write b3.zarr\n");
    }
    if (!exists(dir, "b3.zarr/.zarray")) {
        by_zarr = false;
        fprintf(stderr, "bench_io_batch: writing b3.zarr with sluice's own normals\n");
        make_own_v2(store, par);
    }
    if (!exists(dir, "b3_sharded.zarr/zarr.json")) {
        sl_array *src = sl_array_open(store, "b3.zarr", NULL, &err);
        if (src == NULL)
            die("open b3.zarr", &err);
        struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
        sp.rank = 1;
        sp.shape[0] = N_TOTAL;
        sp.chunk_shape[0] = INNER;
        sp.shard_shape[0] = SHARD;
        sp.dtype = SL_DTYPE_F64;
        sl_array *dst = sl_array_create(store, "b3_sharded.zarr", &sp, NULL, &err);
        if (dst == NULL)
            die("create b3_sharded.zarr", &err);
        double *slab = malloc(8 * SHARD * sizeof(double));
        for (uint64_t at = 0; at < N_TOTAL; at += 8 * SHARD) {
            uint64_t stop = at + 8 * SHARD < N_TOTAL ? at + 8 * SHARD : N_TOTAL;
            struct sl_region r = {.rank = 1, .start = {at}, .stop = {stop}};
            size_t bytes = (size_t)(stop - at) * sizeof(double);
            if (sl_array_read_region(src, &r, slab, bytes, NULL, par, &err) ||
                sl_array_write_region(dst, &r, slab, bytes, NULL, par, &err))
                die("copy into b3_sharded.zarr", &err);
        }
        free(slab);
        sl_array_unref(dst);
        sl_array_unref(src);
    }
    sl_store_unref(store);
    double t = sl_bench_now() - t0;
    if (t > 0.5)
        fprintf(stderr, "bench_io_batch: data ready in %.1f s\n", t);
    return by_zarr;
}

/* ---- the ceiling ------------------------------------------------------------------------- */

/* The stored frames of the slices (b3.zarr only), for zstd alone. */
struct frames {
    void *data[N_SLICES];  /* stored chunk 2i: slice i */
    size_t size[N_SLICES]; /* its bytes */
    ZSTD_DCtx **dctx;      /* per worker */
    _Atomic int n_failed;  /* frames that did not decode to a whole chunk */
};

/* Load the frames of b3.zarr's chunks 0, 2, ..., 14; false if unreadable. */
static bool
frames_load(struct frames *f, const char *dir, unsigned n_workers)
{
    memset(f, 0, sizeof(*f));
    f->dctx = calloc(n_workers, sizeof(ZSTD_DCtx *));
    for (unsigned w = 0; w < n_workers; w++)
        f->dctx[w] = ZSTD_createDCtx();
    for (int i = 0; i < N_SLICES; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/b3.zarr/%d", dir, 2 * i);
        FILE *fp = fopen(path, "rb");
        if (fp == NULL)
            return false;
        fseek(fp, 0, SEEK_END);
        f->size[i] = (size_t)ftell(fp);
        fseek(fp, 0, SEEK_SET);
        f->data[i] = malloc(f->size[i]);
        size_t got = fread(f->data[i], 1, f->size[i], fp);
        fclose(fp);
        if (got != f->size[i])
            return false;
    }
    return true;
}

static void
frames_free(struct frames *f, unsigned n_workers)
{
    for (int i = 0; i < N_SLICES; i++)
        free(f->data[i]);
    for (unsigned w = 0; w < n_workers && f->dctx != NULL; w++)
        ZSTD_freeDCtx(f->dctx[w]);
    free(f->dctx);
}

/* ---- the three ways ---------------------------------------------------------------------- */

/* What every way reads, and the codec contexts they reuse: one per pool
 * worker, one for the calling thread, made once so that no way pays for
 * fresh scratch buffers. */
struct job {
    const sl_array *a;
    struct sl_region regions[N_SLICES];
    double *out;
    sl_pool *pool;
    struct sl_parallel par;
    sl_codec_ctx **worker_ctxs; /* par.n_workers */
    sl_codec_ctx *main_ctx;
    struct frames *frames; /* NULL: no ceiling for this array */
    struct sl_batch_stats stats;
};

static void
read_batched(struct job *j)
{
    struct sl_batch_opts o = SL_BATCH_OPTS_DEFAULT;
    o.par = &j->par;
    o.worker_ctxs = j->worker_ctxs;
    o.stats = &j->stats;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_array_read_batch_concat(j->a, N_SLICES, j->regions, 0, j->out, OUT_BYTES, &o, NULL, NULL,
                                   &err) != SL_OK)
        die("batched read", &err);
}

static void
read_loop(struct job *j)
{
    struct sl_error err = SL_ERROR_INIT;
    /* A slice meets one chunk (shard): the pool would not help one read. */
    for (int i = 0; i < N_SLICES; i++)
        if (sl_array_read_region(j->a, &j->regions[i], j->out + (size_t)i * CHUNK,
                                 CHUNK * sizeof(double), j->main_ctx, NULL, &err) != SL_OK)
            die("single read", &err);
}

struct single {
    const struct job *j;
    int i;
    sl_status st;
    struct sl_error err;
};

static void
single_task(void *arg, sl_status status)
{
    struct single *s = arg;
    s->st = status;
    int w = sl_pool_worker_index(s->j->pool);
    if (status == SL_OK)
        s->st = sl_array_read_region(s->j->a, &s->j->regions[s->i],
                                     s->j->out + (size_t)s->i * CHUNK, CHUNK * sizeof(double),
                                     w >= 0 ? s->j->worker_ctxs[w] : NULL, NULL, &s->err);
}

static void
read_concurrent(struct job *j)
{
    struct sl_task_group g;
    struct single s[N_SLICES];
    sl_task_group_init(&g, j->pool);
    for (int i = 0; i < N_SLICES; i++) {
        s[i] = (struct single){j, i, SL_OK, SL_ERROR_INIT};
        if (sl_task_group_submit(&g, single_task, &s[i]) != SL_OK) {
            fprintf(stderr, "bench_io_batch: submit failed\n");
            exit(1);
        }
    }
    if (sl_task_group_wait(&g) != SL_OK) {
        fprintf(stderr, "bench_io_batch: wait failed\n");
        exit(1);
    }
    for (int i = 0; i < N_SLICES; i++)
        if (s[i].st != SL_OK)
            die("concurrent single read", &s[i].err);
}

static void
frame_body(void *arg, size_t i, unsigned worker)
{
    struct job *j = arg;
    struct frames *f = j->frames;
    size_t n = ZSTD_decompressDCtx(f->dctx[worker], j->out + i * CHUNK, CHUNK * sizeof(double),
                                   f->data[i], f->size[i]);
    if (ZSTD_isError(n) || n != CHUNK * sizeof(double))
        f->n_failed++;
}

/* zstd alone: the frames, already in memory, decompressed on the pool. */
static void
read_zstd(struct job *j)
{
    if (sl_parallel_run(&j->par, N_SLICES, frame_body, j) != SL_OK || j->frames->n_failed != 0) {
        fprintf(stderr, "bench_io_batch: zstd alone failed\n");
        exit(1);
    }
}

typedef void read_fn(struct job *j);

/*
 * Median milliseconds of `reps` runs of each of `n` ways, interleaved (rep
 * r of every way before rep r + 1), so that a noisy machine slows them
 * alike.  Each way's first (warm-up) output must equal the first way's.
 */
static void
measure(struct job *j, read_fn *const *fns, int n, int reps, double *ms)
{
    double t[4][32];
    double *expect = malloc(OUT_BYTES);
    for (int w = 0; w < n; w++) {
        memset(j->out, 0, OUT_BYTES);
        fns[w](j);
        if (w == 0)
            memcpy(expect, j->out, OUT_BYTES);
        else if (memcmp(expect, j->out, OUT_BYTES) != 0) {
            fprintf(stderr, "bench_io_batch: way %d's output differs from the batched read\n", w);
            exit(1);
        }
    }
    for (int r = 0; r < reps; r++)
        for (int w = 0; w < n; w++) {
            double t0 = sl_bench_now();
            fns[w](j);
            t[w][r] = (sl_bench_now() - t0) * 1e3;
        }
    for (int w = 0; w < n; w++)
        ms[w] = median(t[w], reps);
    free(expect);
}

/* Time the ways on array `path` (and zstd alone when `frames`); results
 * in ms[0..3], ms[3] -1 without frames. */
static void
run_sluice(const char *dir, const char *path, const char *tag, sl_pool *pool, struct frames *frames,
           int reps, double *ms)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *store = sl_store_open_fs(dir, NULL, &err);
    if (store == NULL)
        die(dir, &err);
    static struct job j;
    j.a = sl_array_open(store, path, NULL, &err);
    if (j.a == NULL)
        die(path, &err);
    j.pool = pool;
    j.par = sl_pool_parallel(pool);
    j.worker_ctxs = calloc(j.par.n_workers, sizeof(sl_codec_ctx *));
    for (unsigned w = 0; w < j.par.n_workers; w++)
        j.worker_ctxs[w] = sl_codec_ctx_create(NULL, NULL);
    j.main_ctx = sl_codec_ctx_create(NULL, NULL);
    for (int i = 0; i < N_SLICES; i++)
        j.regions[i] = (struct sl_region){
            .rank = 1, .start = {2 * (uint64_t)i * CHUNK}, .stop = {(2 * (uint64_t)i + 1) * CHUNK}};
    j.out = malloc(OUT_BYTES);
    j.frames = frames;
    static read_fn *const fns[] = {read_batched, read_loop, read_concurrent, read_zstd};
    ms[3] = -1;
    measure(&j, fns, frames != NULL ? 4 : 3, reps, ms);
    char name[96];
    static const char *const ways[] = {"batched", "loop", "concurrent"};
    for (int w = 0; w < 3; w++) {
        snprintf(name, sizeof(name), "%s_sluice_%s", tag, ways[w]);
        sl_bench_report(name, ms[w], "ms");
    }
    snprintf(name, sizeof(name), "%s_sluice_batched_decoded", tag);
    sl_bench_report(name, (double)OUT_BYTES / 1e6 / (ms[0] / 1e3), "MB/s");
    snprintf(name, sizeof(name), "%s_sluice_batched_direct_chunks", tag);
    sl_bench_report(name, (double)j.stats.n_direct, "chunks");
    /* Store reads: one per chunk object, or per shard index plus requests. */
    uint64_t reads =
        j.stats.n_index_reads > 0 ? j.stats.n_index_reads + j.stats.n_requests : j.stats.n_objects;
    snprintf(name, sizeof(name), "%s_sluice_batched_store_reads", tag);
    sl_bench_report(name, (double)reads, "reads");
    for (unsigned w = 0; w < j.par.n_workers; w++)
        sl_codec_ctx_destroy(j.worker_ctxs[w]);
    free(j.worker_ctxs);
    sl_codec_ctx_destroy(j.main_ctx);
    free(j.out);
    sl_array_unref((sl_array *)j.a);
    sl_store_unref(store);
}

/* ---- the peer ------------------------------------------------------------------------------ */

struct peer_ms {
    double slices_loop, oindex, dask_concat, dask_compute;
};

static bool
run_peer(const char *peer, const char *dir, int reps, struct peer_ms *p)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s/b3.zarr %d", peer, dir, reps);
    FILE *f = popen(cmd, "r");
    if (f == NULL)
        return false;
    *p = (struct peer_ms){-1, -1, -1, -1};
    char line[512];
    while (fgets(line, sizeof(line), f) != NULL) {
        fputs(line, stdout);
        double v;
        char name[64];
        if (sscanf(line, "%63[a-z_]: %lf", name, &v) != 2)
            continue;
        if (strcmp(name, "zarr_slices_loop") == 0)
            p->slices_loop = v;
        else if (strcmp(name, "zarr_oindex") == 0)
            p->oindex = v;
        else if (strcmp(name, "dask_concat") == 0)
            p->dask_concat = v;
        else if (strcmp(name, "dask_compute") == 0)
            p->dask_compute = v;
    }
    fflush(stdout);
    return pclose(f) == 0 && p->dask_concat > 0 && p->dask_compute > 0;
}

int
main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 1 || reps > 32)
        reps = 7;
    const char *dir = getenv("SL_BENCH_DATA");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp/sluice-bench-data";
    const char *root = getenv("SL_BENCH_SOURCE_ROOT");
    char peer[4096];
    snprintf(peer, sizeof(peer), "%s/tests/bench/io/peer_zarr_read.py", root ? root : ".");
    bool have_peer = root != NULL;
    if (!have_peer)
        fprintf(stderr, "SL_BENCH_SOURCE_ROOT unset: skipping zarr-python and dask "
                        "(run via tests/bench/run.sh)\n");

    struct sl_error err = SL_ERROR_INIT;
    sl_pool *pool = sl_pool_create(NULL, &err);
    if (pool == NULL)
        die("pool", &err);
    struct sl_parallel par = sl_pool_parallel(pool);
    bool by_zarr = ensure_data(dir, have_peer ? peer : NULL, &par);
    sl_bench_report("workers", sl_pool_worker_count(pool), "threads");

    double v2[4], sh[4];
    struct frames frames;
    bool have_frames = frames_load(&frames, dir, par.n_workers);
    run_sluice(dir, "b3.zarr", "v2", pool, have_frames ? &frames : NULL, reps, v2);
    frames_free(&frames, par.n_workers);
    double ceiling = v2[3];
    if (ceiling > 0) {
        sl_bench_report("v2_zstd_alone", ceiling, "ms");
        sl_bench_report("v2_batched_over_zstd_alone", v2[0] / ceiling, "x");
    }
    sl_bench_report("v2_batched_speedup_vs_loop", v2[1] / v2[0], "x");
    sl_bench_report("v2_batched_speedup_vs_concurrent", v2[2] / v2[0], "x");
    struct peer_ms p;
    bool peers = have_peer && by_zarr && run_peer(peer, dir, reps, &p);
    if (peers) {
        double dask_best = p.dask_concat < p.dask_compute ? p.dask_concat : p.dask_compute;
        sl_bench_report("dask_best", dask_best, "ms");
        sl_bench_report("v2_batched_speedup_vs_dask_best", dask_best / v2[0], "x");
        sl_bench_report("v2_batched_speedup_vs_zarr_slices_loop", p.slices_loop / v2[0], "x");
        sl_bench_report("v2_batched_speedup_vs_zarr_oindex", p.oindex / v2[0], "x");
        if (ceiling > 0)
            sl_bench_report("v2_zstd_alone_speedup_vs_dask_best", dask_best / ceiling, "x");
    } else if (have_peer) {
        fprintf(stderr, "bench_io_batch: no zarr-python/dask figures (python3-zarr, "
                        "python3-dask missing, or b3.zarr not written by zarr-python)\n");
    }

    run_sluice(dir, "b3_sharded.zarr", "sharded", pool, NULL, reps, sh);
    sl_bench_report("sharded_batched_speedup_vs_loop", sh[1] / sh[0], "x");
    sl_bench_report("sharded_batched_speedup_vs_concurrent", sh[2] / sh[0], "x");
    sl_pool_destroy(pool);
    return 0;
}
