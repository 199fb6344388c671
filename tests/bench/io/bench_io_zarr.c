/* SPDX-License-Identifier: MIT */
/*
 * Read and write throughput of a 512^3 uint16 array of smooth image-like
 * data (the peers' b4 generator: sums of sines plus gaussian noise, sigma
 * 40), zstd level 1, one thread, in two layouts: 64^3 chunks, and 32^3
 * inner chunks in 256^3 shards.  Beside each figure, the zstd library's own
 * compress and decompress speed on the same chunks (ZSTD_compressCCtx and
 * ZSTD_decompressDCtx with reused contexts) is the ceiling, with the ratio.
 *
 * Stores: memory (codec and layout cost alone) and filesystem under
 * $SL_BENCH_DATA (every object fsynced on write; reads from a warm page
 * cache).  MB is 10^6 bytes of decoded data.  Best of REPS runs.
 *
 *   bench_io_zarr [REPS]      (default 3)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include <sluice.h>

#include "bench.h"
#include "bench_io_volume.h"

static double
mbps(double seconds)
{
    return (double)BYTES / 1e6 / seconds;
}

struct ceiling {
    double compress_s, decompress_s; /* best times for the whole volume */
    size_t compressed;               /* bytes */
};

static struct ceiling
zstd_ceiling(const uint16_t *chunks, size_t c, int reps)
{
    size_t cb = c * c * c * 2, n = BYTES / cb, bound = ZSTD_compressBound(cb);
    uint8_t *comp = malloc(n * bound);
    size_t *sizes = malloc(n * sizeof(size_t));
    uint16_t *back = malloc(cb);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    struct ceiling r = {1e9, 1e9, 0};
    for (int rep = 0; rep < reps; rep++) {
        double t0 = sl_bench_now();
        size_t total = 0;
        for (size_t i = 0; i < n; i++) {
            sizes[i] = ZSTD_compressCCtx(cc, comp + i * bound, bound,
                                         (const uint8_t *)chunks + i * cb, cb, 1);
            total += sizes[i];
        }
        double t1 = sl_bench_now();
        for (size_t i = 0; i < n; i++)
            if (ZSTD_decompressDCtx(dc, back, cb, comp + i * bound, sizes[i]) != cb)
                abort();
        double t2 = sl_bench_now();
        r.compress_s = fmin(r.compress_s, t1 - t0);
        r.decompress_s = fmin(r.decompress_s, t2 - t1);
        r.compressed = total;
    }
    ZSTD_freeCCtx(cc);
    ZSTD_freeDCtx(dc);
    free(comp);
    free(sizes);
    free(back);
    return r;
}

static void
die(const char *what, const struct sl_error *err)
{
    char text[512] = "";
    if (err != NULL)
        sl_error_format(err, text, sizeof(text));
    fprintf(stderr, "bench_io_zarr: %s: %s\n", what, text);
    exit(1);
}

struct timings {
    double write_s, read_s, chunks_s; /* best times */
    uint64_t stored;                  /* bytes stored */
};

/* Write the volume as a region, read it back as a region and chunk by
 * chunk; check the data. */
static struct timings
run_sluice(sl_store *store, const char *path, size_t chunk, size_t shard, const uint16_t *v,
           uint16_t *back, int reps)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 3;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 3; d++) {
        sp.shape[d] = N;
        sp.chunk_shape[d] = chunk;
        sp.shard_shape[d] = shard;
    }
    sp.overwrite = true;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(store, path, &sp, NULL, &err);
    if (a == NULL)
        die("create", &err);
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    struct sl_region whole = sl_region_whole(3, sp.shape);
    struct timings t = {1e9, 1e9, 1e9, 0};
    size_t cb = sl_array_chunk_bytes(a);
    uint16_t *cbuf = malloc(cb);
    for (int rep = 0; rep < reps; rep++) {
        double t0 = sl_bench_now();
        if (sl_array_write_region(a, &whole, v, BYTES, ctx, NULL, &err) != SL_OK)
            die("write", &err);
        double t1 = sl_bench_now();
        if (sl_array_read_region(a, &whole, back, BYTES, ctx, NULL, &err) != SL_OK)
            die("read", &err);
        double t2 = sl_bench_now();
        uint64_t nc = N / chunk, c[3];
        for (c[0] = 0; c[0] < nc; c[0]++)
            for (c[1] = 0; c[1] < nc; c[1]++)
                for (c[2] = 0; c[2] < nc; c[2]++)
                    if (sl_array_read_chunk(a, c, cbuf, cb, ctx, NULL, &err) != SL_OK)
                        die("read chunk", &err);
        double t3 = sl_bench_now();
        if (memcmp(v, back, BYTES) != 0)
            die("data read back differs", NULL);
        t.write_s = fmin(t.write_s, t1 - t0);
        t.read_s = fmin(t.read_s, t2 - t1);
        t.chunks_s = fmin(t.chunks_s, t3 - t2);
    }
    struct sl_array_stored st;
    if (sl_array_stored(a, &st, &err) != SL_OK)
        die("stored", &err);
    t.stored = st.n_bytes;
    free(cbuf);
    sl_codec_ctx_destroy(ctx);
    sl_array_unref(a);
    return t;
}

static void
report(const char *layout, const char *store, const struct timings *t, const struct ceiling *z)
{
    char name[96];
    snprintf(name, sizeof(name), "io_%s_%s_write", layout, store);
    sl_bench_report(name, mbps(t->write_s), "MB/s");
    snprintf(name, sizeof(name), "io_%s_%s_read_region", layout, store);
    sl_bench_report(name, mbps(t->read_s), "MB/s");
    snprintf(name, sizeof(name), "io_%s_%s_read_chunks", layout, store);
    sl_bench_report(name, mbps(t->chunks_s), "MB/s");
    snprintf(name, sizeof(name), "io_%s_%s_write_vs_zstd", layout, store);
    sl_bench_report(name, z->compress_s / t->write_s, "x");
    snprintf(name, sizeof(name), "io_%s_%s_read_region_vs_zstd", layout, store);
    sl_bench_report(name, z->decompress_s / t->read_s, "x");
    snprintf(name, sizeof(name), "io_%s_%s_read_chunks_vs_zstd", layout, store);
    sl_bench_report(name, z->decompress_s / t->chunks_s, "x");
    snprintf(name, sizeof(name), "io_%s_%s_ratio", layout, store);
    sl_bench_report(name, (double)BYTES / (double)t->stored, "x");
}

int
main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    if (reps < 1)
        reps = 1;
    uint16_t *v = malloc(BYTES), *back = malloc(BYTES);
    make_volume(v);
    printf("# 512^3 uint16 (%.0f MB), zstd level 1, one thread, best of %d\n", BYTES / 1e6, reps);
    const size_t edges[2] = {64, 32};
    struct ceiling z[2];
    for (int i = 0; i < 2; i++) {
        uint16_t *chunks = split_chunks(v, edges[i]);
        z[i] = zstd_ceiling(chunks, edges[i], reps);
        free(chunks);
        char name[64];
        snprintf(name, sizeof(name), "zstd_%zu_compress", edges[i]);
        sl_bench_report(name, mbps(z[i].compress_s), "MB/s");
        snprintf(name, sizeof(name), "zstd_%zu_decompress", edges[i]);
        sl_bench_report(name, mbps(z[i].decompress_s), "MB/s");
        snprintf(name, sizeof(name), "zstd_%zu_ratio", edges[i]);
        sl_bench_report(name, (double)BYTES / (double)z[i].compressed, "x");
    }
    sl_store *mem = sl_store_create_memory(NULL, NULL);
    struct timings t = run_sluice(mem, "chunked", 64, 0, v, back, reps);
    report("chunked64", "mem", &t, &z[0]);
    t = run_sluice(mem, "sharded", 32, 256, v, back, reps);
    report("sharded32in256", "mem", &t, &z[1]);
    sl_store_unref(mem);

    const char *dir = getenv("SL_BENCH_DATA");
    char root[4096];
    snprintf(root, sizeof(root), "%s/bench_io_zarr", dir != NULL ? dir : "/tmp/sluice-bench-data");
    struct sl_error err = SL_ERROR_INIT;
    sl_store *fs = sl_store_open_fs(root, NULL, &err);
    if (fs == NULL)
        die("open store", &err);
    t = run_sluice(fs, "chunked", 64, 0, v, back, reps);
    report("chunked64", "fs", &t, &z[0]);
    t = run_sluice(fs, "sharded", 32, 256, v, back, reps);
    report("sharded32in256", "fs", &t, &z[1]);
    sl_store_unref(fs);
    free(v);
    free(back);
    return 0;
}
