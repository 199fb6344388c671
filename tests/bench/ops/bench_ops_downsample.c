/* SPDX-License-Identifier: MIT */
/*
 * Downsample kernel throughput: every method on a 2x2x2 uint16 block of
 * 64^3 (cache-resident: the pipeline's chunk size) and 256^3 (memory
 * bound), plus the 2x mean along the last dimension only, in input GB/s
 * (1e9 bytes of input per second, one thread).  The ceiling is memcpy of
 * the same input bytes, timed the same way (median of repetitions after a
 * warm-up, as the peers' memcpy_bw does); each method also prints its
 * ratio to it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "bench.h"

static int
cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Repetitions: at least 3, until 0.4 s have passed or 15 ran. */
#define MAX_REPS 15

/* Median seconds of `run(arg)` over the repetitions, after one warm-up. */
static double
time_median(void (*run)(void *), void *arg)
{
    double t[MAX_REPS], total = 0;
    int n = 0;
    run(arg);
    while (n < MAX_REPS && (n < 3 || total < 0.4)) {
        const double t0 = sl_bench_now();
        run(arg);
        t[n] = sl_bench_now() - t0;
        total += t[n++];
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    return t[n / 2];
}

/* One downsample call, and what it needs. */
struct job {
    struct sl_downsample_params p;
    struct sl_view in, out;
    void *scratch;
    size_t scratch_bytes;
    size_t in_bytes;
    unsigned long checksum;
};

static void
run_downsample(void *arg)
{
    struct job *j = arg;
    if (sl_downsample(&j->p, &j->in, &j->out, j->scratch, j->scratch_bytes, NULL) != SL_OK)
        abort();
    j->checksum += ((const uint16_t *)j->out.data)[j->checksum % 64];
}

static void
run_memcpy(void *arg)
{
    struct job *j = arg;
    memcpy(j->out.data, j->in.data, j->in_bytes);
    j->checksum += ((const uint16_t *)j->out.data)[j->checksum % 64];
}

/* Fill with a smooth ramp plus noise, as microscopy data looks. */
static void
fill(uint16_t *a, size_t n)
{
    uint64_t s = 88172645463325252ULL;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        a[i] = (uint16_t)(3000 + (i % 1024) + (s & 127));
    }
}

/* Benchmark every method on an n^3 block with factors f; returns 0 on success. */
static int
bench_cube(uint64_t n, const uint64_t *f, const char *tag)
{
    const uint64_t shape[3] = {n, n, n};
    struct job j;
    memset(&j, 0, sizeof j);
    j.p.rank = 3;
    memcpy(j.p.factor, f, sizeof j.p.factor[0] * 3);
    uint64_t out_shape[3];
    sl_downsample_shape(&j.p, shape, out_shape);
    j.in_bytes = (size_t)(n * n * n * sizeof(uint16_t));
    uint16_t *in = malloc(j.in_bytes), *out = malloc(j.in_bytes);
    if (in == NULL || out == NULL)
        return 1;
    fill(in, j.in_bytes / sizeof(uint16_t));
    memset(out, 0, j.in_bytes);
    if (sl_view_init(&j.in, SL_DTYPE_U16, 3, shape, in, NULL) != SL_OK ||
        sl_view_init(&j.out, SL_DTYPE_U16, 3, out_shape, out, NULL) != SL_OK)
        return 1;
    char name[96];
    const double gb = (double)j.in_bytes / 1e9;
    const double memcpy_gbs = gb / time_median(run_memcpy, &j);
    snprintf(name, sizeof name, "%s_memcpy", tag);
    sl_bench_report(name, memcpy_gbs, "GB/s");
    for (int m = 0; m < SL_DOWNSAMPLE_METHOD_COUNT_; m++) {
        j.p.method = (sl_downsample_method)m;
        if (sl_downsample_scratch_bytes(&j.p, SL_DTYPE_U16, shape, &j.scratch_bytes, NULL) != SL_OK)
            return 1;
        j.scratch = j.scratch_bytes ? malloc(j.scratch_bytes) : NULL;
        const double gbs = gb / time_median(run_downsample, &j);
        snprintf(name, sizeof name, "%s_%s", tag, sl_downsample_method_name(j.p.method));
        sl_bench_report(name, gbs, "GB/s");
        snprintf(name, sizeof name, "%s_%s_vs_memcpy", tag, sl_downsample_method_name(j.p.method));
        sl_bench_report(name, gbs / memcpy_gbs, "x");
        free(j.scratch);
    }
    fprintf(stderr, "(checksum %lu)\n", j.checksum);
    free(in);
    free(out);
    return 0;
}

int
main(void)
{
    const uint64_t cube[3] = {2, 2, 2}, row[3] = {1, 1, 2};
    int rc = bench_cube(64, cube, "ds_u16_64cube_2x2x2");
    rc |= bench_cube(256, cube, "ds_u16_256cube_2x2x2");
    rc |= bench_cube(64, row, "ds_u16_64cube_1x1x2");
    return rc;
}
