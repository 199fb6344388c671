/* SPDX-License-Identifier: MIT */
/*
 * Shard write transactions against the naive way.  A 512^3 uint16 volume
 * of image-like data (bench_io_volume.h), 32^3 inner chunks in 256^3
 * shards, zstd level 1, is written inner chunk by inner chunk, shard by
 * shard:
 *
 *   txn_loop   one thread writes the chunks through a transaction (the loop
 *              of zarr-python issue #3604); each shard is written when its
 *              last chunk is staged, its chunks encoded on the pool
 *   txn_loop_behind  the same with write_behind 2: complete shards are
 *              written by the transaction's writer thread
 *   txn_pool   the pool's workers write the chunks, each with its codec
 *              context, as a graph's put stage does: encode_on_write (each
 *              write encodes its chunk), write_behind AUTO (a writer
 *              thread on the filesystem, none in memory)
 *   txn_pool_in_place  the same with write_behind 0
 *   txn_pool_raw  txn_pool without encode_on_write: chunks staged raw,
 *              each shard encoded on the pool once complete
 *   naive      sl_array_write_chunk per chunk: read, merge and rewrite the
 *              shard every time (on the first NAIVE_SHARDS shards, beside
 *              txn_loop on the same shards)
 *
 * Each run starts from an empty store.  Reported: time, MB/s of decoded
 * data, bytes written and shard writes (the store's counters), the
 * transaction's peak staged bytes (sl_txn_stats), the ratios
 * naive / txn, and the transaction's throughput against zstd's own
 * ZSTD_compressCCtx speed on the same chunks (one thread) times the
 * workers.  Memory store, then the filesystem under $SL_BENCH_DATA (every
 * shard fsynced).  Beside them, the store alone: the time the same store
 * takes to set as many objects of the same total size, with no encoding,
 * so that the transaction's time can be read against zstd's time plus the
 * store's (above 1: the two overlap), with its CPU time; on the
 * filesystem also written through the page cache (direct_writes off), to
 * show what direct writes save.  Best of REPS.
 *
 *   bench_io_txn [REPS] [NAIVE_SHARDS]     (default 5 and 1)
 */
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include <sluice.h>

#include "bench.h"
#include "bench_io_volume.h"

#define INNER 32
#define SHARD 256
#define N_CHUNKS (N / INNER) /* per dimension */
#define CHUNK_BYTES ((size_t)INNER * INNER * INNER * 2)

static void
die(const char *what, const struct sl_error *err)
{
    char text[512] = "";
    if (err != NULL)
        sl_error_format(err, text, sizeof(text));
    fprintf(stderr, "bench_io_txn: %s: %s\n", what, text);
    exit(1);
}

/* zstd's own compression of every chunk, one thread: best seconds. */
static double
zstd_compress_s(const uint8_t *chunks, int reps)
{
    size_t n = BYTES / CHUNK_BYTES, bound = ZSTD_compressBound(CHUNK_BYTES);
    uint8_t *out = malloc(bound);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    double best = 1e9;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = sl_bench_now();
        for (size_t i = 0; i < n; i++)
            if (ZSTD_isError(
                    ZSTD_compressCCtx(cc, out, bound, chunks + i * CHUNK_BYTES, CHUNK_BYTES, 1)))
                die("zstd", NULL);
        double dt = sl_bench_now() - t0;
        best = dt < best ? dt : best;
    }
    ZSTD_freeCCtx(cc);
    free(out);
    return best;
}

/* zstd's own compression of every chunk on the pool's workers, each with
 * its context: the parallel speed this machine gives now. */
struct zstd_job {
    const uint8_t *chunks;
    ZSTD_CCtx **cc; /* one per worker */
    uint8_t **out;  /* one per worker */
    _Atomic int failures;
};

static void
zstd_one(void *arg, size_t i, unsigned worker)
{
    struct zstd_job *z = arg;
    size_t bound = ZSTD_compressBound(CHUNK_BYTES);
    if (ZSTD_isError(ZSTD_compressCCtx(z->cc[worker], z->out[worker], bound,
                                       z->chunks + i * CHUNK_BYTES, CHUNK_BYTES, 1)))
        atomic_fetch_add(&z->failures, 1);
}

static double
zstd_pool_s(const uint8_t *chunks, int reps, const struct sl_parallel *par)
{
    unsigned nw = sl_parallel_workers(par);
    struct zstd_job z = {.chunks = chunks};
    z.cc = calloc(nw, sizeof(*z.cc));
    z.out = calloc(nw, sizeof(*z.out));
    for (unsigned w = 0; w < nw; w++) {
        z.cc[w] = ZSTD_createCCtx();
        z.out[w] = malloc(ZSTD_compressBound(CHUNK_BYTES));
    }
    double best = 1e9;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = sl_bench_now();
        if (sl_parallel_run(par, BYTES / CHUNK_BYTES, zstd_one, &z) != SL_OK ||
            atomic_load(&z.failures) != 0)
            die("zstd on the pool", NULL);
        double dt = sl_bench_now() - t0;
        best = dt < best ? dt : best;
    }
    for (unsigned w = 0; w < nw; w++) {
        ZSTD_freeCCtx(z.cc[w]);
        free(z.out[w]);
    }
    free(z.cc);
    free(z.out);
    return best;
}

/* zstd's speeds measured beside the runs. */
struct ceilings {
    double one_s;  /* one thread, every chunk */
    double pool_s; /* on the pool's workers */
};

/* ---- the runs ------------------------------------------------------------------ */

/* One way of writing and what it cost. */
struct result {
    double seconds;         /* best time */
    uint64_t bytes_written; /* by the store, one run */
    uint64_t n_sets;        /* objects written, one run */
    uint64_t peak_staged;   /* the transaction's peak staged bytes, most of any run */
};

/* What a run writes: the chunks of the first `n_shards` shards, in
 * shard-major order, from `chunks` (split_chunks order). */
struct plan {
    const uint8_t *chunks;
    uint64_t (*coords)[3]; /* every chunk to write, in order */
    size_t n;              /* entries in coords */
};

static void
plan_make(struct plan *p, const uint8_t *chunks, sl_array *a, size_t n_shards)
{
    p->chunks = chunks;
    p->coords = malloc((size_t)N_CHUNKS * N_CHUNKS * N_CHUNKS * sizeof(*p->coords));
    p->n = 0;
    struct sl_array_iter shards, in;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_array_iter_shards(a, NULL, &shards, &err) != SL_OK)
        die("iterate", &err);
    for (size_t s = 0; s < n_shards && sl_array_iter_next(&shards); s++) {
        if (sl_array_iter_shard_chunks(a, shards.iter.coords, &in, &err) != SL_OK)
            die("iterate", &err);
        while (sl_array_iter_next(&in))
            memcpy(p->coords[p->n++], in.iter.coords, sizeof(p->coords[0]));
    }
}

static const void *
plan_chunk(const struct plan *p, size_t i)
{
    const uint64_t *c = p->coords[i];
    return p->chunks + ((c[0] * N_CHUNKS + c[1]) * N_CHUNKS + c[2]) * CHUNK_BYTES;
}

static sl_array *
array_create(sl_store *s)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 3;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 3; d++) {
        sp.shape[d] = N;
        sp.chunk_shape[d] = INNER;
        sp.shard_shape[d] = SHARD;
    }
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, "v", &sp, NULL, &err);
    if (a == NULL)
        die("create", &err);
    return a;
}

typedef enum way {
    WAY_TXN_LOOP,
    WAY_TXN_LOOP_BEHIND,
    WAY_TXN_POOL,
    WAY_TXN_POOL_IN_PLACE,
    WAY_TXN_POOL_RAW,
    WAY_NAIVE
} way;

/* A put stage: pool workers each write chunks with their own context. */
struct put_stage {
    sl_txn *t;
    const struct plan *p;
    sl_codec_ctx **ctx; /* one per worker */
    _Atomic int failures;
};

static void
put_one(void *arg, size_t i, unsigned worker)
{
    struct put_stage *ps = arg;
    if (sl_txn_write_chunk(ps->t, ps->p->coords[i], plan_chunk(ps->p, i), CHUNK_BYTES,
                           ps->ctx[worker], NULL) != SL_OK)
        atomic_fetch_add(&ps->failures, 1);
}

/* Write the plan into array `a` one way; seconds taken, the
 * transaction's peak staged bytes in `*peak` (0 for the naive way). */
static double
write_once(sl_array *a, const struct plan *p, way w, const struct sl_parallel *par,
           sl_codec_ctx **ctx, uint64_t *peak)
{
    *peak = 0;
    struct sl_error err = SL_ERROR_INIT;
    double t0 = sl_bench_now();
    if (w == WAY_NAIVE) {
        for (size_t i = 0; i < p->n; i++)
            if (sl_array_write_chunk(a, p->coords[i], plan_chunk(p, i), CHUNK_BYTES, ctx[0],
                                     &err) != SL_OK)
                die("naive write", &err);
        return sl_bench_now() - t0;
    }
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.par = par;
    o.write_behind = w == WAY_TXN_LOOP_BEHIND                     ? 2
                     : w == WAY_TXN_POOL || w == WAY_TXN_POOL_RAW ? SL_TXN_WRITE_BEHIND_AUTO
                                                                  : 0;
    o.encode_on_write = w == WAY_TXN_POOL || w == WAY_TXN_POOL_IN_PLACE;
    sl_txn *t = sl_txn_open(a, &o, &err);
    if (t == NULL)
        die("begin", &err);
    if (w == WAY_TXN_LOOP || w == WAY_TXN_LOOP_BEHIND) {
        for (size_t i = 0; i < p->n; i++)
            if (sl_txn_write_chunk(t, p->coords[i], plan_chunk(p, i), CHUNK_BYTES, ctx[0], &err) !=
                SL_OK)
                die("stage", &err);
    } else {
        struct put_stage ps = {.t = t, .p = p, .ctx = ctx};
        if (sl_parallel_run(par, p->n, put_one, &ps) != SL_OK || atomic_load(&ps.failures) != 0)
            die("put stage", NULL);
    }
    if (sl_txn_commit(t, ctx[0], &err) != SL_OK)
        die("commit", &err);
    double dt = sl_bench_now() - t0;
    struct sl_txn_stats st;
    sl_txn_get_stats(t, &st);
    *peak = st.peak_staged_bytes;
    sl_txn_close(t);
    return dt;
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* A fresh, empty store: memory, or a new directory under `dir` (with
 * direct writes unless `buffered`). */
static sl_store *
store_fresh_with(const char *dir, char *root, size_t size, bool buffered)
{
    struct sl_error err = SL_ERROR_INIT;
    if (dir == NULL)
        return sl_store_create_memory(NULL, &err);
    snprintf(root, size, "%s/bench_io_txn", dir);
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.direct_writes = !buffered;
    sl_store *s = sl_store_open_fs(root, &o, &err);
    if (s == NULL)
        die("open store", &err);
    return s;
}

static sl_store *
store_fresh(const char *dir, char *root, size_t size)
{
    return store_fresh_with(dir, root, size, false);
}

/* Best of `reps` runs of one way, each on a fresh store; checks the data. */
static struct result
run(const char *dir, const uint8_t *chunks, size_t n_shards, way w, int reps,
    const struct sl_parallel *par, sl_codec_ctx **ctx)
{
    struct result r = {1e9, 0, 0, 0};
    char root[4096];
    for (int rep = 0; rep < reps; rep++) {
        sl_store *s = store_fresh(dir, root, sizeof(root));
        sl_array *a = array_create(s);
        struct plan p;
        plan_make(&p, chunks, a, n_shards);
        struct sl_store_stats before, after;
        sl_store_get_stats(s, &before);
        uint64_t peak;
        double dt = write_once(a, &p, w, par, ctx, &peak);
        sl_store_get_stats(s, &after);
        r.peak_staged = peak > r.peak_staged ? peak : r.peak_staged;
        r.seconds = dt < r.seconds ? dt : r.seconds;
        r.bytes_written = after.bytes_written - before.bytes_written;
        r.n_sets = after.n_set - before.n_set;
        /* Spot check: the last chunk written reads back. */
        uint8_t *back = malloc(CHUNK_BYTES);
        struct sl_error err = SL_ERROR_INIT;
        if (sl_array_read_chunk(a, p.coords[p.n - 1], back, CHUNK_BYTES, ctx[0], NULL, &err) !=
                SL_OK ||
            memcmp(back, plan_chunk(&p, p.n - 1), CHUNK_BYTES) != 0)
            die("read back", &err);
        free(back);
        free(p.coords);
        sl_array_unref(a);
        sl_store_unref(s);
    }
    if (dir != NULL)
        nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return r;
}

static void
report(const char *store, const char *what, const struct result *r, double decoded_bytes)
{
    char name[96];
    snprintf(name, sizeof(name), "io_txn_%s_%s_time", store, what);
    sl_bench_report(name, r->seconds, "s");
    snprintf(name, sizeof(name), "io_txn_%s_%s_write", store, what);
    sl_bench_report(name, decoded_bytes / 1e6 / r->seconds, "MB/s");
    snprintf(name, sizeof(name), "io_txn_%s_%s_bytes_written", store, what);
    sl_bench_report(name, (double)r->bytes_written / 1e6, "MB");
    snprintf(name, sizeof(name), "io_txn_%s_%s_shard_writes", store, what);
    sl_bench_report(name, (double)r->n_sets, "writes");
    if (r->peak_staged > 0) {
        snprintf(name, sizeof(name), "io_txn_%s_%s_peak_staged", store, what);
        sl_bench_report(name, (double)r->peak_staged / 1e6, "MB");
    }
}

/* Print ratio io_txn_<store>_<what>. */
static void
report_ratio(const char *store, const char *what, double value)
{
    char name[96];
    snprintf(name, sizeof(name), "io_txn_%s_%s", store, what);
    sl_bench_report(name, value, "x");
}

/* The store alone: `r->n_sets` objects of `r->bytes_written` bytes in
 * all set into a fresh store (filesystem: written through the page cache
 * when `buffered`); best seconds of `reps`, and the CPU seconds of that
 * run in `*cpu` (the process's; its other threads are idle). */
static double
store_alone_s(const char *dir, const struct result *r, int reps, bool buffered, double *cpu)
{
    size_t n = (size_t)r->n_sets, size = (size_t)(r->bytes_written / r->n_sets);
    /* In an sl_buf, as the shards a transaction assembles are (on a page;
     * from 16 MiB on huge pages where the system has them, which the
     * device takes faster). */
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error berr = SL_ERROR_INIT;
    if (sl_buf_reserve(&b, size, &berr) != SL_OK)
        die("store alone buffer", &berr);
    uint8_t *bytes = b.data;
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < size; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* incompressible, like zstd's output */
        bytes[i] = (uint8_t)x;
    }
    char root[4096];
    double best = 1e9;
    for (int rep = 0; rep < reps; rep++) {
        sl_store *s = store_fresh_with(dir, root, sizeof(root), buffered);
        struct sl_error err = SL_ERROR_INIT;
        double t0 = sl_bench_now(), c0 = sl_bench_cpu();
        for (size_t i = 0; i < n; i++) {
            char key[32];
            snprintf(key, sizeof(key), "alone/%zu", i);
            if (sl_store_set(s, key, bytes, size, &err) != SL_OK)
                die("store alone", &err);
        }
        double dt = sl_bench_now() - t0;
        if (dt < best) {
            best = dt;
            *cpu = sl_bench_cpu() - c0;
        }
        sl_store_unref(s);
    }
    if (dir != NULL)
        nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    sl_buf_fini(&b);
    return best;
}

/* Every way on one store (dir NULL: memory). */
static void
bench_store(const char *store, const char *dir, const uint8_t *chunks, int reps,
            size_t naive_shards, const struct sl_parallel *par, sl_codec_ctx **ctx,
            const struct ceilings *z)
{
    size_t n_shards = (N / SHARD) * (N / SHARD) * (N / SHARD);
    struct result loop = run(dir, chunks, n_shards, WAY_TXN_LOOP, reps, par, ctx);
    report(store, "txn_loop", &loop, BYTES);
    struct result behind = run(dir, chunks, n_shards, WAY_TXN_LOOP_BEHIND, reps, par, ctx);
    report(store, "txn_loop_behind", &behind, BYTES);
    struct result pool = run(dir, chunks, n_shards, WAY_TXN_POOL, reps, par, ctx);
    report(store, "txn_pool", &pool, BYTES);
    struct result in_place = run(dir, chunks, n_shards, WAY_TXN_POOL_IN_PLACE, reps, par, ctx);
    report(store, "txn_pool_in_place", &in_place, BYTES);
    struct result raw = run(dir, chunks, n_shards, WAY_TXN_POOL_RAW, reps, par, ctx);
    report(store, "txn_pool_raw", &raw, BYTES);
    double workers = sl_parallel_workers(par);
    char name[96];
    report_ratio(store, "txn_loop_vs_zstd_x_workers", z->one_s / workers / loop.seconds);
    report_ratio(store, "txn_loop_behind_vs_zstd_x_workers", z->one_s / workers / behind.seconds);
    report_ratio(store, "txn_loop_behind_vs_txn_loop", loop.seconds / behind.seconds);
    report_ratio(store, "txn_pool_vs_zstd_x_workers", z->one_s / workers / pool.seconds);
    report_ratio(store, "txn_pool_in_place_vs_zstd_x_workers",
                 z->one_s / workers / in_place.seconds);
    report_ratio(store, "txn_pool_raw_vs_zstd_x_workers", z->one_s / workers / raw.seconds);
    report_ratio(store, "txn_pool_vs_txn_pool_raw", raw.seconds / pool.seconds);
    report_ratio(store, "txn_loop_vs_zstd_on_pool", z->pool_s / loop.seconds);
    report_ratio(store, "txn_pool_vs_zstd_on_pool", z->pool_s / pool.seconds);
    double alone_cpu = 0;
    double alone = store_alone_s(dir, &pool, reps, false, &alone_cpu);
    snprintf(name, sizeof(name), "io_txn_%s_store_alone_time", store);
    sl_bench_report(name, alone, "s");
    snprintf(name, sizeof(name), "io_txn_%s_store_alone_cpu", store);
    sl_bench_report(name, alone_cpu, "s");
    if (dir != NULL) {
        /* What direct writes save: the same through the page cache. */
        double buffered_cpu = 0;
        double buffered = store_alone_s(dir, &pool, reps, true, &buffered_cpu);
        sl_bench_report("io_txn_fs_store_alone_buffered_time", buffered, "s");
        sl_bench_report("io_txn_fs_store_alone_buffered_cpu", buffered_cpu, "s");
    }
    report_ratio(store, "txn_pool_vs_zstd_on_pool_plus_store_alone",
                 (z->pool_s + alone) / pool.seconds);

    double sub = (double)naive_shards * SHARD * SHARD * SHARD * 2;
    struct result naive = run(dir, chunks, naive_shards, WAY_NAIVE, 1, par, ctx);
    struct result same = run(dir, chunks, naive_shards, WAY_TXN_LOOP, reps, par, ctx);
    char what[64];
    snprintf(what, sizeof(what), "naive_%zushard", naive_shards);
    report(store, what, &naive, sub);
    snprintf(what, sizeof(what), "txn_loop_%zushard", naive_shards);
    report(store, what, &same, sub);
    report_ratio(store, "naive_vs_txn_bytes_written",
                 (double)naive.bytes_written / (double)same.bytes_written);
    report_ratio(store, "naive_vs_txn_shard_writes", (double)naive.n_sets / (double)same.n_sets);
    report_ratio(store, "naive_vs_txn_time", naive.seconds / same.seconds);
}

int
main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    size_t naive_shards = argc > 2 ? (size_t)atoi(argv[2]) : 1;
    if (reps < 1)
        reps = 1;
    if (naive_shards < 1 || naive_shards > 8)
        naive_shards = 1;
    struct sl_error err = SL_ERROR_INIT;
    sl_pool *pool = sl_pool_create(NULL, &err);
    if (pool == NULL)
        die("pool", &err);
    struct sl_parallel par = sl_pool_parallel(pool);
    unsigned workers = sl_parallel_workers(&par);
    sl_codec_ctx **ctx = calloc(workers, sizeof(*ctx));
    for (unsigned w = 0; w < workers; w++)
        ctx[w] = sl_codec_ctx_create(NULL, NULL);
    uint16_t *v = malloc(BYTES);
    make_volume(v);
    uint8_t *chunks = (uint8_t *)split_chunks(v, INNER);
    free(v);
    printf("# 512^3 uint16 (%.0f MB), %d^3 chunks in %d^3 shards, zstd level 1, %u workers, "
           "best of %d; naive on %zu shard(s)\n",
           BYTES / 1e6, INNER, SHARD, workers, reps, naive_shards);
    struct ceilings z = {zstd_compress_s(chunks, reps), zstd_pool_s(chunks, reps, &par)};
    sl_bench_report("io_txn_zstd_compress_1thread", BYTES / 1e6 / z.one_s, "MB/s");
    sl_bench_report("io_txn_zstd_compress_pool", BYTES / 1e6 / z.pool_s, "MB/s");
    bench_store("mem", NULL, chunks, reps, naive_shards, &par, ctx, &z);
    const char *dir = getenv("SL_BENCH_DATA");
    bench_store("fs", dir != NULL ? dir : "/tmp/sluice-bench-data", chunks, reps, naive_shards,
                &par, ctx, &z);
    for (unsigned w = 0; w < workers; w++)
        sl_codec_ctx_destroy(ctx[w]);
    free(ctx);
    free(chunks);
    sl_pool_destroy(pool);
    return 0;
}
