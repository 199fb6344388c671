/* SPDX-License-Identifier: MIT */
/*
 * The pipeline floor of bench_graph_downsample (see downsample_floor.h):
 * the downsample written out by hand, with nothing a general runtime
 * needs (no graph, no pool, no store layers, no staging), so that
 * sluice's time over it is what the runtime itself costs and its time
 * over the zstd floor is the work the task cannot skip (files, reduction).
 */
#include "downsample_floor.h"

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

/* The geometry every thread shares. */
struct pipeline_geo {
    const struct pipeline_spec *p;
    uint64_t grid[5];     /* output chunks per dimension */
    uint64_t n_out;       /* output chunks */
    uint64_t sub[5];      /* one input chunk's reduced block */
    uint64_t chunk_elems; /* elements of a chunk (input and output alike) */
    uint64_t n_blocks;    /* input chunks per output chunk */
    unsigned shift;       /* log2 of the elements one mean sums */
};

/* Reduce the decoded input chunk `in` into its block of the output chunk
 * `out`, the block's first element at `at` (per dimension); `acc` holds
 * one reduced row's sums. */
static void
reduce_block(const struct pipeline_geo *g, const uint16_t *in, uint16_t *out, const uint64_t *at,
             uint32_t *acc)
{
    const struct pipeline_spec *p = g->p;
    const int last = p->rank - 1;
    uint64_t stride[5];
    stride[last] = 1;
    for (int d = last - 1; d >= 0; d--)
        stride[d] = stride[d + 1] * p->chunk[d + 1];
    const uint64_t nx = g->sub[last], fx = p->factor[last];
    const uint32_t half = g->shift > 0 ? 1u << (g->shift - 1) : 0, mask = (1u << g->shift) - 1;
    uint64_t o[5] = {0};
    do {
        memset(acc, 0, nx * sizeof(*acc));
        uint64_t k[5] = {0};
        do {
            uint64_t off = 0;
            for (int d = 0; d < last; d++)
                off += (o[d] * p->factor[d] + k[d]) * stride[d];
            const uint16_t *row = in + off;
            if (fx == 2)
                for (uint64_t j = 0; j < nx; j++)
                    acc[j] += (uint32_t)row[2 * j] + row[2 * j + 1];
            else
                for (uint64_t j = 0; j < nx; j++)
                    for (uint64_t i = 0; i < fx; i++)
                        acc[j] += row[j * fx + i];
        } while (chunk_index_next(k, p->factor, last));
        uint64_t off = at[last];
        for (int d = 0; d < last; d++)
            off += (at[d] + o[d]) * stride[d];
        uint16_t *orow = out + off;
        for (uint64_t j = 0; j < nx; j++) {
            /* Round half to even. */
            const uint32_t q = acc[j] >> g->shift, r = acc[j] & mask;
            orow[j] = (uint16_t)(q + (r > half || (r == half && half != 0 && (q & 1))));
        }
    } while (chunk_index_next(o, g->sub, last));
}

/* One thread: output chunks taken from the shared counter until none are
 * left, and its CPU seconds in each phase. */
struct pipeline_job {
    const struct pipeline_geo *g;
    _Atomic uint64_t *next;
    int failed;
    double phase_s[PIPELINE_PHASES];
};

/* Make output chunk `c` (linear index): read, decode and reduce each of
 * its input chunks, then encode and write it.  0 or -1. */
static int
pipeline_chunk(const struct pipeline_geo *g, uint64_t c, ZSTD_DCtx *dctx, ZSTD_CCtx *cctx,
               unsigned char **file, size_t *file_cap, uint16_t *raw, uint16_t *out,
               unsigned char *packed, size_t packed_cap, uint32_t *acc, double *phase_s)
{
    double t = phase_clock_now();
    const struct pipeline_spec *p = g->p;
    uint64_t oc[5];
    chunk_coords(g->grid, g->p->rank, c, oc);
    char path[4200];
    const size_t chunk_bytes = g->chunk_elems * sizeof(uint16_t);
    uint64_t k[5] = {0};
    do {
        uint64_t ic[5], at[5];
        for (int d = 0; d < p->rank; d++) {
            ic[d] = oc[d] * p->factor[d] + k[d];
            at[d] = k[d] * g->sub[d];
        }
        chunk_file_path(path, sizeof(path), p->in_dir, ic, p->rank);
        ssize_t n = chunk_file_read(path, file, file_cap);
        if (n < 0)
            return -1;
        phase_clock_end(phase_s, PIPELINE_READ, &t);
        size_t got = ZSTD_decompressDCtx(dctx, raw, chunk_bytes, *file, (size_t)n);
        if (ZSTD_isError(got) || got != chunk_bytes) {
            fprintf(stderr, "bench_graph_downsample: %s is not a whole zstd chunk\n", path);
            return -1;
        }
        phase_clock_end(phase_s, PIPELINE_DECODE, &t);
        reduce_block(g, raw, out, at, acc);
        phase_clock_end(phase_s, PIPELINE_REDUCE, &t);
    } while (chunk_index_next(k, p->factor, p->rank));
    size_t packed_n = ZSTD_compressCCtx(cctx, packed, packed_cap, out, chunk_bytes, 1);
    if (ZSTD_isError(packed_n))
        return -1;
    phase_clock_end(phase_s, PIPELINE_ENCODE, &t);
    chunk_file_path(path, sizeof(path), p->out_dir, oc, p->rank);
    if (chunk_file_write(path, packed, packed_n) != 0)
        return -1;
    phase_clock_end(phase_s, PIPELINE_WRITE, &t);
    return 0;
}

/* What the read-ahead thread shares with the workers. */
struct pipeline_hints {
    const struct pipeline_geo *g;
    _Atomic uint64_t *next; /* output chunks taken by the workers */
};

/* Output chunks the read-ahead thread hints beyond those taken: 1 was the
 * fastest cold (5-D, 10 interleaved runs each: 0.61 s against 0.64 s for
 * 3 and 0.73 s unbounded, which fills the device's queue with the whole
 * input, so the output's writes wait behind it). */
#define PIPELINE_HINTS_AHEAD 1

/* The read-ahead thread: every output chunk's input files, in the order
 * the threads take output chunks, each hinted whole in 256 KiB pieces
 * (Linux reads at most about one read-ahead window per call), no more
 * than PIPELINE_HINTS_AHEAD output chunks beyond those taken. */
static void *
pipeline_hint_thread(void *arg)
{
    const struct pipeline_hints *ph = arg;
    const struct pipeline_geo *g = ph->g;
    const struct pipeline_spec *p = g->p;
    char path[4200];
    for (uint64_t c = 0; c < g->n_out; c++) {
        /* pipeline_run sets `next` to n_out once the workers are done,
         * failed ones too, so this never waits for a chunk no one takes. */
        while (c > atomic_load(ph->next) + PIPELINE_HINTS_AHEAD)
            nanosleep(&(struct timespec){.tv_nsec = 200000}, NULL);
        if (atomic_load(ph->next) >= g->n_out)
            break;
        uint64_t oc[5], k[5] = {0};
        chunk_coords(g->grid, g->p->rank, c, oc);
        do {
            uint64_t ic[5];
            for (int d = 0; d < p->rank; d++)
                ic[d] = oc[d] * p->factor[d] + k[d];
            chunk_file_path(path, sizeof(path), p->in_dir, ic, p->rank);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            struct stat st;
            if (fd >= 0 && fstat(fd, &st) == 0)
                for (off_t off = 0; off < st.st_size; off += 256 << 10)
                    (void)posix_fadvise(fd, off, 256 << 10, POSIX_FADV_WILLNEED);
            if (fd >= 0)
                close(fd);
        } while (chunk_index_next(k, p->factor, p->rank));
    }
    return NULL;
}

static void *
pipeline_thread(void *arg)
{
    struct pipeline_job *j = arg;
    const struct pipeline_geo *g = j->g;
    const size_t chunk_bytes = g->chunk_elems * sizeof(uint16_t);
    const size_t packed_cap = ZSTD_compressBound(chunk_bytes);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    uint16_t *raw = malloc(chunk_bytes), *out = malloc(chunk_bytes);
    unsigned char *packed = malloc(packed_cap), *file = NULL;
    uint32_t *acc = malloc(g->sub[g->p->rank - 1] * sizeof(uint32_t));
    size_t file_cap = 0;
    j->failed =
        dctx == NULL || cctx == NULL || raw == NULL || out == NULL || packed == NULL || acc == NULL;
    for (uint64_t c; !j->failed && (c = atomic_fetch_add(j->next, 1)) < g->n_out;)
        j->failed = pipeline_chunk(g, c, dctx, cctx, &file, &file_cap, raw, out, packed, packed_cap,
                                   acc, j->phase_s) != 0;
    ZSTD_freeDCtx(dctx);
    ZSTD_freeCCtx(cctx);
    free(raw);
    free(out);
    free(packed);
    free(file);
    free(acc);
    return NULL;
}

/* The geometry of `p`, or -1 when the bench's shortcuts do not hold. */
static int
pipeline_geometry(const struct pipeline_spec *p, struct pipeline_geo *g)
{
    memset(g, 0, sizeof(*g));
    g->p = p;
    g->n_out = 1;
    g->chunk_elems = 1;
    g->n_blocks = 1;
    if (p->rank < 1 || p->rank > 5)
        return -1;
    for (int d = 0; d < p->rank; d++) {
        const uint64_t f = p->factor[d], c = p->chunk[d];
        if (f == 0 || c == 0 || c % f != 0 || p->shape[d] % (c * f) != 0) {
            fprintf(stderr,
                    "bench_graph_downsample: the pipeline floor needs chunks and shapes that "
                    "the factors divide (dimension %d: shape %llu, chunk %llu, factor %llu)\n",
                    d, (unsigned long long)p->shape[d], (unsigned long long)c,
                    (unsigned long long)f);
            return -1;
        }
        g->grid[d] = p->shape[d] / f / c;
        g->sub[d] = c / f;
        g->n_out *= g->grid[d];
        g->chunk_elems *= c;
        g->n_blocks *= f;
    }
    while ((1ull << g->shift) < g->n_blocks)
        g->shift++;
    if ((1ull << g->shift) != g->n_blocks || g->shift > 16) {
        fprintf(stderr, "bench_graph_downsample: the pipeline floor needs a 2^k mean\n");
        return -1;
    }
    return 0;
}

const char *const pipeline_phase_names[PIPELINE_PHASES] = {"read", "decode", "reduce", "encode",
                                                           "write"};

int
pipeline_run(const struct pipeline_spec *p, int threads, double *wall_s, double *cpu_s,
             double phase_s[PIPELINE_PHASES])
{
    struct pipeline_geo g;
    if (pipeline_geometry(p, &g) != 0)
        return -1;
    if (mkdir(p->out_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_graph_downsample: cannot make %s: %s\n", p->out_dir,
                strerror(errno));
        return -1;
    }
    pthread_t t[16];
    struct pipeline_job jobs[16];
    _Atomic uint64_t next = 0;
    if (threads < 1 || threads > 16)
        threads = 2;
    double w0 = sl_bench_now(), c0 = sl_bench_cpu();
    pthread_t hint;
    struct pipeline_hints ph = {.g = &g, .next = &next};
    const bool hinting =
        p->read_ahead && pthread_create(&hint, NULL, pipeline_hint_thread, &ph) == 0;
    int made = 0;
    for (; made < threads; made++) {
        jobs[made] = (struct pipeline_job){.g = &g, .next = &next};
        if (pthread_create(&t[made], NULL, pipeline_thread, &jobs[made]) != 0)
            break;
    }
    int failed = made < threads;
    for (int i = 0; i < PIPELINE_PHASES; i++)
        phase_s[i] = 0;
    for (int k = 0; k < made; k++) {
        pthread_join(t[k], NULL);
        failed |= jobs[k].failed;
        for (int i = 0; i < PIPELINE_PHASES; i++)
            phase_s[i] += jobs[k].phase_s[i];
    }
    if (hinting) {
        atomic_store(&next, g.n_out);
        pthread_join(hint, NULL);
    }
    *wall_s = sl_bench_now() - w0;
    *cpu_s = sl_bench_cpu() - c0;
    return failed ? -1 : 0;
}

int
pipeline_compare(const struct pipeline_spec *p, const char *a, const char *b, uint64_t *n_equal,
                 uint64_t *n_chunks)
{
    struct pipeline_geo g;
    if (pipeline_geometry(p, &g) != 0)
        return -1;
    return chunk_files_compare(a, b, g.grid, p->rank, n_equal, n_chunks, NULL, 0);
}
