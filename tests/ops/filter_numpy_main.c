/* SPDX-License-Identifier: MIT */
/*
 * The driver check_filter_scipy.py runs: filter one array read from a raw
 * file block by block, as a graph would, and write the whole result raw.
 *
 *   filter_numpy [--repeat N] KIND DTYPE SHAPE MODE CVAL TRUNCATE PARAMS CHUNKS FLIPS
 *                IN_FILE OUT_FILE
 *   filter_numpy --batch < lines of those 11 arguments
 *
 * KIND and MODE are sluice's names (gaussian, ..., reflect, ...); SHAPE
 * and CHUNKS are "3x4x5"; PARAMS is one number per axis, comma-separated
 * (sigma for gaussian and gradient_magnitude, size for the box filters,
 * ignored for laplace); CVAL and TRUNCATE are numbers ("nan" and "inf"
 * read as such).  The array is cut into blocks of CHUNKS; each block's
 * input is sl_filter_input_region's region, copied into a buffer of its
 * own (read through negative strides along the axes in bitmask FLIPS), its
 * output a buffer of its own, its scratch exactly sl_filter_scratch_bytes
 * of the block's shape, so a read or write past any of them is caught
 * under AddressSanitizer.  Files are little-endian, C order.  --repeat N
 * filters the whole array N times and prints, on stderr, the fastest total
 * time in seconds spent inside sl_filter (not copying blocks in and out),
 * with one scratch buffer of a whole block's size reused by every call.
 * Exits 0; 4 when a call fails (printing its message); 2 for any other
 * failure.  --batch runs one case per line of stdin (the check's cases in
 * one process: under AddressSanitizer, starting 500 processes costs more
 * than filtering) and prints per case "ok" or "fail: " and the message;
 * it exits 0 unless a case fails otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>
#include <sluice/filter.h>

#include "numpy_driver.h"

const char driver_name[] = "filter_numpy";

/* Seconds spent inside sl_filter by the last filter_blocks. */
static double kernel_s;
/* The message of the last failing call. */
static char failure[sizeof(((struct sl_error *)0)->text)];

/* Parse "a,b,c" into `rank` doubles. */
static void
params_parse(const char *s, uint32_t rank, double *out)
{
    for (uint32_t d = 0; d < rank; d++) {
        char *end;
        out[d] = strtod(s, &end);
        if (end == s || (*end != ',' && *end != '\0'))
            driver_die("bad PARAMS", NULL);
        s = *end == ',' ? end + 1 : end;
    }
}

/* Advance a C-order index; 0 after the last. */
static int
index_next(uint64_t *idx, const uint64_t *shape, uint32_t rank)
{
    for (uint32_t d = rank; d-- > 0;) {
        if (++idx[d] < shape[d])
            return 1;
        idx[d] = 0;
    }
    return 0;
}

/* Copy region `r` of the C-order array `full` (shape `shape`) into view `v`
 * (its shape), or back when `to_full`. */
static void
region_copy(const struct sl_view *v, unsigned char *full, const uint64_t *shape,
            const struct sl_region *r, int to_full)
{
    const size_t es = sl_dtype_size(v->dtype);
    uint64_t idx[SL_MAX_RANK] = {0};
    if (sl_view_count(v) == 0)
        return;
    do {
        uint64_t flat = 0;
        int64_t off = 0;
        for (uint32_t d = 0; d < v->rank; d++) {
            flat = flat * shape[d] + r->start[d] + idx[d];
            off += (int64_t)idx[d] * v->stride[d];
        }
        unsigned char *e = (unsigned char *)v->data + off * (int64_t)es;
        if (to_full)
            memcpy(full + flat * es, e, es);
        else
            memcpy(e, full + flat * es, es);
    } while (index_next(idx, v->shape, v->rank));
}

/* Filter every block of `chunk`; 0, or 4 after printing the failure. */
static int
filter_blocks(const struct sl_filter_params *p, sl_dtype dt, const uint64_t *shape,
              const uint64_t *chunk, unsigned flips, unsigned char *in, unsigned char *out,
              void *reuse)
{
    const uint32_t rank = p->rank;
    const size_t es = sl_dtype_size(dt);
    struct sl_error err = SL_ERROR_INIT;
    uint64_t grid[SL_MAX_RANK], k[SL_MAX_RANK] = {0};
    size_t nominal;
    if (sl_filter_scratch_bytes(p, dt, chunk, &nominal, &err) != SL_OK) {
        memcpy(failure, err.text, sizeof failure);
        return 4;
    }
    for (uint32_t d = 0; d < rank; d++) {
        grid[d] = (shape[d] + chunk[d] - 1) / chunk[d];
        if (grid[d] == 0)
            return 0;
    }
    kernel_s = 0;
    do {
        struct sl_region o = {.rank = rank}, r;
        uint64_t oshape[SL_MAX_RANK], ishape[SL_MAX_RANK];
        for (uint32_t d = 0; d < rank; d++) {
            o.start[d] = k[d] * chunk[d];
            o.stop[d] = o.start[d] + chunk[d] < shape[d] ? o.start[d] + chunk[d] : shape[d];
            oshape[d] = o.stop[d] - o.start[d];
        }
        sl_filter_input_region(p, shape, &o, &r);
        sl_region_shape(&r, ishape);
        struct sl_view iv, ov;
        void *ibuf = driver_calloc(driver_shape_count(rank, ishape) * es);
        void *obuf = driver_calloc(driver_shape_count(rank, oshape) * es);
        driver_view_flipped(&iv, dt, rank, ishape, flips, ibuf);
        driver_view_flipped(&ov, dt, rank, oshape, flips, obuf);
        region_copy(&iv, in, shape, &r, 0);
        size_t bytes;
        if (sl_filter_scratch_bytes(p, dt, oshape, &bytes, &err) != SL_OK)
            driver_die("scratch", &err);
        if (bytes > nominal)
            driver_die("a partial block needs more scratch than a whole one", NULL);
        void *scratch = reuse != NULL ? reuse : bytes > 0 ? malloc(bytes) : NULL;
        if (bytes > 0 && scratch == NULL)
            driver_die("out of memory", NULL);
        const double t0 = driver_now_s();
        const sl_status st = sl_filter(p, shape, &iv, r.start, &ov, o.start, scratch, bytes, &err);
        kernel_s += driver_now_s() - t0;
        if (st == SL_OK)
            region_copy(&ov, out, shape, &o, 1);
        if (scratch != reuse)
            free(scratch);
        free(ibuf);
        free(obuf);
        if (st != SL_OK) {
            memcpy(failure, err.text, sizeof failure);
            return 4;
        }
    } while (index_next(k, grid, rank));
    return 0;
}

/* Run one case of 11 arguments; its exit status.  `repeat` > 1 times it. */
static int
run_case(char **arg, int repeat)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_filter_params p = {0};
    sl_dtype dt;
    uint64_t shape[SL_MAX_RANK], chunk[SL_MAX_RANK];
    if (sl_filter_kind_from_name(arg[0], &p.kind, &err) != SL_OK ||
        sl_dtype_from_name(arg[1], &dt, &err) != SL_OK ||
        sl_boundary_from_name(arg[3], &p.mode, &err) != SL_OK)
        driver_die("arguments", &err);
    const uint32_t rank = driver_shape_parse(arg[2], shape);
    if (driver_shape_parse(arg[7], chunk) != rank)
        driver_die("CHUNKS and SHAPE differ in rank", NULL);
    p.rank = rank;
    p.cval = strtod(arg[4], NULL);
    p.truncate = strtod(arg[5], NULL);
    double prm[SL_MAX_RANK];
    params_parse(arg[6], rank, prm);
    for (uint32_t d = 0; d < rank; d++) {
        p.sigma[d] = prm[d];
        p.size[d] = (uint64_t)prm[d];
    }
    const unsigned flips = (unsigned)strtoul(arg[8], NULL, 10);
    if (sl_filter_check(&p, dt, rank, &err) != SL_OK) {
        memcpy(failure, err.text, sizeof failure);
        return 4;
    }
    const size_t bytes = driver_shape_count(rank, shape) * sl_dtype_size(dt);
    unsigned char *in = driver_file_read(arg[9], bytes);
    unsigned char *out = driver_calloc(bytes);
    /* Timing reuses one scratch of a whole block's size, as a worker
     * would; otherwise each block gets exactly its own size. */
    void *reuse = NULL;
    size_t nominal;
    if (repeat > 1 && sl_filter_scratch_bytes(&p, dt, chunk, &nominal, &err) == SL_OK &&
        nominal > 0)
        reuse = driver_calloc(nominal);
    double best = 1e300;
    int rc = 0;
    for (int i = 0; i < repeat && rc == 0; i++) {
        rc = filter_blocks(&p, dt, shape, chunk, flips, in, out, reuse);
        best = kernel_s < best ? kernel_s : best;
    }
    if (rc == 0)
        driver_file_write(arg[10], out, bytes);
    if (repeat > 1)
        fprintf(stderr, "%.6f\n", best);
    free(reuse);
    free(in);
    free(out);
    return rc;
}

/* --batch: one case of 11 arguments per line of stdin; per case one line
 * on stdout, "ok" or "fail: " and the message. */
static int
run_batch(void)
{
    char line[4096];
    while (fgets(line, sizeof line, stdin) != NULL) {
        char *arg[11];
        int n = 0;
        for (char *t = strtok(line, " \n"); t != NULL && n < 11; t = strtok(NULL, " \n"))
            arg[n++] = t;
        if (n != 11)
            driver_die("a --batch line needs 11 arguments", NULL);
        if (run_case(arg, 1) == 0)
            printf("ok\n");
        else
            printf("fail: %s\n", failure);
        fflush(stdout);
    }
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--batch") == 0)
        return run_batch();
    int a0;
    const int repeat = driver_repeat_opt(argc, argv, &a0);
    if (argc - a0 != 11) {
        fprintf(stderr, "usage: filter_numpy [--repeat N] KIND DTYPE SHAPE MODE CVAL TRUNCATE "
                        "PARAMS CHUNKS FLIPS IN_FILE OUT_FILE\n"
                        "       filter_numpy --batch < lines of those 11 arguments\n");
        return 2;
    }
    const int rc = run_case(argv + a0, repeat);
    if (rc != 0)
        printf("%s\n", failure);
    return rc;
}
