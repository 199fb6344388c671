/* SPDX-License-Identifier: MIT */
/*
 * The pipeline floor of bench_graph_expr (see flatfield_pipeline.h): the
 * flat-field written out by hand, with nothing a general runtime needs (no
 * graph, no pool, no store layers, no expression program), so that sluice's
 * time over it is what the runtime and its kernel cost.
 *
 * DESIGN: one output chunk per raw chunk, same key, so a thread reads,
 * decodes, corrects, encodes and writes one chunk with no other thread
 * involved.  The arithmetic is the expression's in float32 with numpy's
 * max (a NaN flat stays NaN): each raw element converted exactly, the dark
 * subtracted, the difference divided by max(flat, 1), each step rounded to
 * float32 as sluice's float32 working type does, so the bytes must equal
 * sluice's.
 */
#include "flatfield_pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "bench.h"
#include "chunk_files.h"

const char *const flatfield_phase_names[FLATFIELD_PHASES] = {"load",    "read",   "decode",
                                                             "compute", "encode", "write"};

/* What every thread shares. */
struct flatfield_geo {
    const struct flatfield_spec *s;
    uint64_t grid[5];     /* chunks per dimension */
    uint64_t n_chunks;    /* chunks of the raw (and of the output) */
    uint64_t chunk_elems; /* elements of one chunk */
    const float *dark;    /* the dark plane, shape[3] x shape[4] */
    const float *divisor; /* max(flat, 1), same plane */
};

/* Write `n` bytes at `data` (4096-byte aligned) as the file `key` of
 * `dir` as sluice's filesystem store does (see flatfield_run).  0, or -1
 * after a message. */
static int
ff_write_synced(const char *dir, const char *key, const void *data, size_t n)
{
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof(tmp), "%s/.tmp.%s", dir, key);
    snprintf(path, sizeof(path), "%s/%s", dir, key);
    const size_t head = n & ~(size_t)4095;
    size_t put = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EINVAL) /* no O_DIRECT here: all of it the ordinary way */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    while (fd >= 0 && put < head) {
        ssize_t w = write(fd, (const char *)data + put, head - put);
        if (w <= 0)
            break;
        put += (size_t)w;
    }
    if (fd < 0 || close(fd) != 0 || put != head) {
        fprintf(stderr, "bench_graph_expr: cannot write %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    fd = open(tmp, O_WRONLY | O_APPEND | O_CLOEXEC);
    while (fd >= 0 && put < n) {
        ssize_t w = write(fd, (const char *)data + put, n - put);
        if (w <= 0)
            break;
        put += (size_t)w;
    }
    if (fd < 0 || put != n || fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "bench_graph_expr: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Read the float32 plane of the Zarr v2 array in `dir` (chunks
 * s->plane_chunk, "." keys) into `plane`.  0, or -1 after a message. */
static int
ff_load_plane(const struct flatfield_spec *s, const char *dir, float *plane, ZSTD_DCtx *dctx)
{
    const uint64_t ny = s->shape[3], nx = s->shape[4];
    const uint64_t cy = s->plane_chunk[0], cx = s->plane_chunk[1];
    const size_t chunk_bytes = (size_t)(cy * cx) * sizeof(float);
    float *tile = malloc(chunk_bytes);
    unsigned char *file = NULL;
    size_t cap = 0;
    int rc = tile != NULL ? 0 : -1;
    for (uint64_t iy = 0; rc == 0 && iy < ny / cy; iy++) {
        for (uint64_t ix = 0; rc == 0 && ix < nx / cx; ix++) {
            char path[4200];
            const uint64_t idx[2] = {iy, ix};
            chunk_file_path(path, sizeof(path), dir, idx, 2);
            ssize_t n = chunk_file_read(path, &file, &cap);
            size_t got = n < 0 ? 0 : ZSTD_decompressDCtx(dctx, tile, chunk_bytes, file, (size_t)n);
            if (n < 0 || ZSTD_isError(got) || got != chunk_bytes) {
                fprintf(stderr, "bench_graph_expr: %s is not a whole zstd chunk\n", path);
                rc = -1;
                break;
            }
            for (uint64_t y = 0; y < cy; y++)
                memcpy(plane + (iy * cy + y) * nx + ix * cx, tile + y * cx, cx * sizeof(float));
        }
    }
    free(tile);
    free(file);
    return rc;
}

/* Correct the decoded raw chunk `raw` at grid index `idx` into `out`. */
static void
ff_compute(const struct flatfield_geo *g, const uint64_t *idx, const uint16_t *raw, float *out)
{
    const struct flatfield_spec *s = g->s;
    const uint64_t cz = s->chunk[2], cy = s->chunk[3], cx = s->chunk[4], nx = s->shape[4];
    const uint64_t y0 = idx[3] * cy, x0 = idx[4] * cx;
    for (uint64_t z = 0; z < cz; z++) {
        for (uint64_t y = 0; y < cy; y++) {
            const uint16_t *restrict r = raw + (z * cy + y) * cx;
            const float *restrict d = g->dark + (y0 + y) * nx + x0;
            const float *restrict f = g->divisor + (y0 + y) * nx + x0;
            float *restrict o = out + (z * cy + y) * cx;
            for (uint64_t x = 0; x < cx; x++)
                o[x] = ((float)r[x] - d[x]) / f[x];
        }
    }
}

/* One thread: raw chunks taken from the shared counter until none are
 * left, and its CPU seconds in each phase. */
struct flatfield_job {
    const struct flatfield_geo *g;
    _Atomic uint64_t *next;
    int failed;
    double phase_s[FLATFIELD_PHASES];
};

/* A thread's reused contexts and buffers. */
struct flatfield_bufs {
    ZSTD_DCtx *dctx;
    ZSTD_CCtx *cctx;
    unsigned char *file;   /* a raw chunk file */
    size_t file_cap;       /* bytes of `file` */
    uint16_t *raw;         /* the decoded raw chunk */
    float *out;            /* the corrected chunk */
    unsigned char *packed; /* its zstd frame */
    size_t packed_cap;     /* bytes of `packed` */
};

/* Compress `n` bytes at `in` into b->packed as sluice's zstd codec does.
 * Its length, or 0 on failure. */
static size_t
ff_encode(struct flatfield_bufs *b, const void *in, size_t n)
{
    size_t rc = ZSTD_CCtx_reset(b->cctx, ZSTD_reset_session_and_parameters);
    if (!ZSTD_isError(rc))
        rc = ZSTD_CCtx_setParameter(b->cctx, ZSTD_c_compressionLevel, 1);
    if (!ZSTD_isError(rc))
        rc = ZSTD_CCtx_setParameter(b->cctx, ZSTD_c_checksumFlag, 0);
    if (!ZSTD_isError(rc))
        rc = ZSTD_CCtx_setParameter(b->cctx, ZSTD_c_contentSizeFlag, 1);
    if (!ZSTD_isError(rc))
        rc = ZSTD_compress2(b->cctx, b->packed, b->packed_cap, in, n);
    return ZSTD_isError(rc) ? 0 : rc;
}

/* Make output chunk `c`: read, decode, correct, encode, write.  0 or -1. */
static int
ff_chunk(const struct flatfield_geo *g, uint64_t c, struct flatfield_bufs *b, double *phase_s)
{
    double t = phase_clock_now();
    const struct flatfield_spec *s = g->s;
    uint64_t idx[5];
    chunk_coords(g->grid, 5, c, idx);
    char path[4200];
    chunk_file_path(path, sizeof(path), s->raw_dir, idx, 5);
    ssize_t n = chunk_file_read(path, &b->file, &b->file_cap);
    if (n < 0)
        return -1;
    phase_clock_end(phase_s, FLATFIELD_READ, &t);
    const size_t raw_bytes = g->chunk_elems * sizeof(uint16_t);
    size_t got = ZSTD_decompressDCtx(b->dctx, b->raw, raw_bytes, b->file, (size_t)n);
    if (ZSTD_isError(got) || got != raw_bytes) {
        fprintf(stderr, "bench_graph_expr: %s is not a whole zstd chunk\n", path);
        return -1;
    }
    phase_clock_end(phase_s, FLATFIELD_DECODE, &t);
    ff_compute(g, idx, b->raw, b->out);
    phase_clock_end(phase_s, FLATFIELD_COMPUTE, &t);
    size_t packed_n = ff_encode(b, b->out, g->chunk_elems * sizeof(float));
    if (packed_n == 0)
        return -1;
    phase_clock_end(phase_s, FLATFIELD_ENCODE, &t);
    chunk_file_path(path, sizeof(path), s->out_dir, idx, 5);
    if (s->synced
            ? ff_write_synced(s->out_dir, path + strlen(s->out_dir) + 1, b->packed, packed_n) != 0
            : chunk_file_write(path, b->packed, packed_n) != 0)
        return -1;
    phase_clock_end(phase_s, FLATFIELD_WRITE, &t);
    return 0;
}

static void *
ff_thread(void *arg)
{
    struct flatfield_job *j = arg;
    const struct flatfield_geo *g = j->g;
    struct flatfield_bufs b = {
        .dctx = ZSTD_createDCtx(),
        .cctx = ZSTD_createCCtx(),
        .raw = malloc(g->chunk_elems * sizeof(uint16_t)),
        .out = malloc(g->chunk_elems * sizeof(float)),
        .packed_cap = ZSTD_compressBound(g->chunk_elems * sizeof(float)),
    };
    /* Aligned as sluice's large buffers are, for the synced variant's O_DIRECT. */
    b.packed_cap = (b.packed_cap + 4095) & ~(size_t)4095;
    b.packed = aligned_alloc(4096, b.packed_cap);
    j->failed =
        b.dctx == NULL || b.cctx == NULL || b.raw == NULL || b.out == NULL || b.packed == NULL;
    for (uint64_t c; !j->failed && (c = atomic_fetch_add(j->next, 1)) < g->n_chunks;)
        j->failed = ff_chunk(g, c, &b, j->phase_s) != 0;
    ZSTD_freeDCtx(b.dctx);
    ZSTD_freeCCtx(b.cctx);
    free(b.file);
    free(b.raw);
    free(b.out);
    free(b.packed);
    return NULL;
}

/* The geometry of `s` into `g`, or -1 when a chunk shape does not divide. */
static int
ff_geometry(const struct flatfield_spec *s, struct flatfield_geo *g)
{
    memset(g, 0, sizeof(*g));
    g->s = s;
    g->n_chunks = 1;
    g->chunk_elems = 1;
    for (int d = 0; d < 5; d++) {
        if (s->chunk[d] == 0 || s->shape[d] % s->chunk[d] != 0) {
            fprintf(stderr, "bench_graph_expr: the pipeline floor needs chunks that divide "
                            "the shape\n");
            return -1;
        }
        g->grid[d] = s->shape[d] / s->chunk[d];
        g->n_chunks *= g->grid[d];
        g->chunk_elems *= s->chunk[d];
    }
    for (int d = 0; d < 2; d++)
        if (s->plane_chunk[d] == 0 || s->shape[3 + d] % s->plane_chunk[d] != 0) {
            fprintf(stderr, "bench_graph_expr: dark and flat chunks must divide the plane\n");
            return -1;
        }
    return 0;
}

/* Dark and flat into the planes `dark` and `divisor` (max(flat, 1)). */
static int
ff_load(const struct flatfield_spec *s, float *dark, float *divisor)
{
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    int rc = dctx != NULL && ff_load_plane(s, s->dark_dir, dark, dctx) == 0 &&
                     ff_load_plane(s, s->flat_dir, divisor, dctx) == 0
                 ? 0
                 : -1;
    ZSTD_freeDCtx(dctx);
    const size_t n = (size_t)(s->shape[3] * s->shape[4]);
    for (size_t i = 0; rc == 0 && i < n; i++) /* numpy's maximum: NaN wins */
        divisor[i] = divisor[i] != divisor[i] || divisor[i] > 1.0f ? divisor[i] : 1.0f;
    return rc;
}

/* The output's .zarray. */
static int
ff_write_meta(const struct flatfield_spec *s)
{
    char meta[1024], path[4200];
    const uint64_t *a = s->shape, *c = s->chunk;
    int n = snprintf(meta, sizeof(meta),
                     "{\n  \"zarr_format\": 2,\n  \"shape\": [%llu, %llu, %llu, %llu, %llu],\n"
                     "  \"chunks\": [%llu, %llu, %llu, %llu, %llu],\n  \"dtype\": \"<f4\",\n"
                     "  \"compressor\": {\"id\": \"zstd\", \"level\": 1},\n"
                     "  \"fill_value\": 0.0,\n  \"order\": \"C\",\n  \"filters\": null\n}\n",
                     (unsigned long long)a[0], (unsigned long long)a[1], (unsigned long long)a[2],
                     (unsigned long long)a[3], (unsigned long long)a[4], (unsigned long long)c[0],
                     (unsigned long long)c[1], (unsigned long long)c[2], (unsigned long long)c[3],
                     (unsigned long long)c[4]);
    snprintf(path, sizeof(path), "%s/.zarray", s->out_dir);
    return chunk_file_write(path, meta, (size_t)n);
}

int
flatfield_run(const struct flatfield_spec *s, int threads, double *wall_s, double *cpu_s,
              double phase_s[FLATFIELD_PHASES])
{
    struct flatfield_geo g;
    if (ff_geometry(s, &g) != 0)
        return -1;
    if (threads < 1 || threads > 16)
        threads = 2;
    for (int i = 0; i < FLATFIELD_PHASES; i++)
        phase_s[i] = 0;
    const size_t plane = (size_t)(s->shape[3] * s->shape[4]);
    double w0 = sl_bench_now(), c0 = sl_bench_cpu(), t = phase_clock_now();
    float *dark = malloc(plane * sizeof(float)), *divisor = malloc(plane * sizeof(float));
    int failed = dark == NULL || divisor == NULL || ff_load(s, dark, divisor) != 0 ||
                 (mkdir(s->out_dir, 0755) != 0 && errno != EEXIST);
    g.dark = dark;
    g.divisor = divisor;
    phase_clock_end(phase_s, FLATFIELD_LOAD, &t);
    pthread_t tid[16];
    struct flatfield_job jobs[16];
    _Atomic uint64_t next = 0;
    int made = 0;
    for (; !failed && made < threads; made++) {
        jobs[made] = (struct flatfield_job){.g = &g, .next = &next};
        if (pthread_create(&tid[made], NULL, ff_thread, &jobs[made]) != 0) {
            failed = 1;
            break;
        }
    }
    for (int k = 0; k < made; k++) {
        pthread_join(tid[k], NULL);
        failed |= jobs[k].failed;
        for (int i = 0; i < FLATFIELD_PHASES; i++)
            phase_s[i] += jobs[k].phase_s[i];
    }
    t = phase_clock_now();
    failed = failed || ff_write_meta(s) != 0;
    phase_clock_end(phase_s, FLATFIELD_WRITE, &t);
    *wall_s = sl_bench_now() - w0;
    *cpu_s = sl_bench_cpu() - c0;
    free(dark);
    free(divisor);
    return failed ? -1 : 0;
}

int
flatfield_compare(const struct flatfield_spec *s, const char *a, const char *b, uint64_t *n_equal,
                  uint64_t *n_chunks, char *first_diff, size_t size)
{
    struct flatfield_geo g;
    if (ff_geometry(s, &g) != 0)
        return -1;
    return chunk_files_compare(a, b, g.grid, 5, n_equal, n_chunks, first_diff, size);
}
