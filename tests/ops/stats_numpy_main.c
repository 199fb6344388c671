/* SPDX-License-Identifier: MIT */
/*
 * The driver check_stats_numpy.py runs: read a raw array, add its pieces
 * to separate accumulators (some pieces through reversed views), merge the
 * accumulators in the order given, print the result; or time adding.
 *
 *   stats_numpy check DTYPE FILE BINS LO HI PCTS PIECES MERGES
 *   stats_numpy bench DTYPE N BINS LO HI PCTS REPEAT
 *
 * LO and HI are "-" for no range; PCTS is a comma list or "-"; PIECES is a
 * comma list of "ACC:LEN" (suffix "r" reads the piece reversed); MERGES a
 * comma list of "A<B" (merge accumulator B into A) or "-"; accumulator 0
 * is printed, one "name value..." line per field, doubles as %.17g.  The
 * file is little-endian, C order.  bench fills N pseudo-random elements
 * and prints the fastest of REPEAT sl_stats_add calls in seconds and
 * elements per second on stderr.  Exits 0, or 2 on any failure.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/stats.h>
#include <sluice/view.h>

#include "numpy_driver.h"

#define MAX_ACC 64

const char driver_name[] = "stats_numpy";

static void
parse_opts(char **arg, struct sl_stats_opts *o)
{
    *o = SL_STATS_OPTS_DEFAULT;
    o->bins = (uint32_t)strtoul(arg[0], NULL, 10);
    if (strcmp(arg[1], "-") != 0) {
        o->has_range = true;
        o->lo = strtod(arg[1], NULL);
        o->hi = strtod(arg[2], NULL);
    }
    for (char *p = arg[3]; strcmp(arg[3], "-") != 0 && *p != '\0';) {
        char *end;
        if (o->n_percentiles == SL_STATS_MAX_PERCENTILES)
            driver_die("too many percentiles", NULL);
        o->percentiles[o->n_percentiles++] = strtod(p, &end);
        p = *end == ',' ? end + 1 : end;
    }
}

static void *
read_all(const char *path, size_t *bytes)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0)
        driver_die(path, NULL);
    *bytes = (size_t)ftell(f);
    rewind(f);
    void *p = malloc(*bytes > 0 ? *bytes : 1);
    if (p == NULL || fread(p, 1, *bytes, f) != *bytes)
        driver_die(path, NULL);
    fclose(f);
    return p;
}

static void
print_result(const sl_stats *s)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_stats_result r;
    if (sl_stats_result(s, &r, &err) != SL_OK)
        driver_die("result", &err);
    printf("count %" PRIu64 "\nnan_count %" PRIu64 "\n", r.count, r.nan_count);
    printf("min %.17g\nmax %.17g\nsum %.17g\n", r.min, r.max, r.sum);
    printf("mean %.17g\nstd %.17g\n", r.mean, r.std);
    printf("range %.17g %.17g\nhist", r.lo, r.hi);
    for (uint32_t i = 0; i < r.bins; i++)
        printf(" %" PRIu64, r.histogram[i]);
    printf("\nbelow %" PRIu64 "\nabove %" PRIu64 "\npct", r.below, r.above);
    for (size_t i = 0; i < r.n_percentiles; i++)
        printf(" %.17g", r.percentile[i]);
    printf("\nexact %d\nrank_error %.17g\n", r.percentiles_exact, r.rank_error);
}

static int
run_check(char **argv)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_dtype dt;
    if (sl_dtype_from_name(argv[0], &dt, &err) != SL_OK)
        driver_die("dtype", &err);
    struct sl_stats_opts o;
    parse_opts(argv + 2, &o);
    size_t bytes;
    unsigned char *data = read_all(argv[1], &bytes);
    const size_t es = sl_dtype_size(dt);
    sl_stats *acc[MAX_ACC] = {NULL};
    size_t at = 0;
    for (char *p = argv[6]; *p != '\0';) {
        char *end;
        const unsigned long a = strtoul(p, &end, 10);
        const uint64_t len = strtoull(end + 1, &end, 10);
        const bool reversed = *end == 'r';
        end += reversed;
        p = *end == ',' ? end + 1 : end;
        if (a >= MAX_ACC || (at + len) * es > bytes)
            driver_die("bad piece", NULL);
        if (acc[a] == NULL && (acc[a] = sl_stats_create(dt, &o, NULL, &err)) == NULL)
            driver_die("create", &err);
        struct sl_view v = {.dtype = dt, .rank = 1, .shape = {len}, .stride = {reversed ? -1 : 1}};
        v.data = data + (at + (reversed && len > 0 ? len - 1 : 0)) * es;
        if (sl_stats_add(acc[a], &v, &err) != SL_OK)
            driver_die("add", &err);
        at += len;
    }
    for (char *p = argv[7]; strcmp(argv[7], "-") != 0 && *p != '\0';) {
        char *end;
        const unsigned long a = strtoul(p, &end, 10), b = strtoul(end + 1, &end, 10);
        p = *end == ',' ? end + 1 : end;
        if (a >= MAX_ACC || b >= MAX_ACC || acc[a] == NULL || acc[b] == NULL)
            driver_die("bad merge", NULL);
        if (sl_stats_merge(acc[a], acc[b], &err) != SL_OK)
            driver_die("merge", &err);
    }
    if (acc[0] == NULL)
        driver_die("accumulator 0 has no pieces", NULL);
    print_result(acc[0]);
    for (int i = 0; i < MAX_ACC; i++)
        sl_stats_free(acc[i]);
    free(data);
    return 0;
}

static int
run_bench(char **argv)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_dtype dt;
    if (sl_dtype_from_name(argv[0], &dt, &err) != SL_OK)
        driver_die("dtype", &err);
    const uint64_t n = strtoull(argv[1], NULL, 10);
    struct sl_stats_opts o;
    parse_opts(argv + 2, &o);
    const int repeat = atoi(argv[6]);
    const size_t es = sl_dtype_size(dt);
    unsigned char *data = malloc(n * es);
    if (data == NULL)
        driver_die("out of memory", NULL);
    uint64_t state = 1;
    for (uint64_t i = 0; i < n; i++) {
        state = state * 6364136223846793005u + 1442695040888963407u;
        const uint32_t u = (uint32_t)(state >> 32);
        if (dt == SL_DTYPE_F32) {
            const float f = (float)((double)u / 4294967296.0 * 8 - 4);
            memcpy(data + i * es, &f, 4);
        } else {
            memcpy(data + i * es, &u, es); /* low bytes: uniform over the type */
        }
    }
    sl_stats *s = sl_stats_create(dt, &o, NULL, &err);
    if (s == NULL)
        driver_die("create", &err);
    struct sl_view v;
    if (sl_view_init(&v, dt, 1, &n, data, &err) != SL_OK)
        driver_die("view", &err);
    double best = 1e300;
    for (int r = 0; r < repeat; r++) {
        sl_stats_reset(s);
        const double t0 = driver_now_s();
        if (sl_stats_add(s, &v, &err) != SL_OK)
            driver_die("add", &err);
        const double t = driver_now_s() - t0;
        best = t < best ? t : best;
    }
    fprintf(stderr, "%s: %" PRIu64 " elements in %.4f s: %.3g elements/s (%zu bytes held)\n",
            argv[0], n, best, (double)n / best, sl_stats_bytes(dt, &o));
    print_result(s);
    sl_stats_free(s);
    free(data);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc == 10 && strcmp(argv[1], "check") == 0)
        return run_check(argv + 2);
    if (argc == 9 && strcmp(argv[1], "bench") == 0)
        return run_bench(argv + 2);
    fprintf(stderr, "usage: stats_numpy check DTYPE FILE BINS LO HI PCTS PIECES MERGES\n"
                    "       stats_numpy bench DTYPE N BINS LO HI PCTS REPEAT\n");
    return 2;
}
