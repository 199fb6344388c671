/* SPDX-License-Identifier: MIT */
/*
 * The helpers of numpy_driver.h: argument parsing, raw files, flipped
 * views and the clock of the drivers the check_*_numpy.py scripts run.
 */
#include "numpy_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
driver_die(const char *what, const struct sl_error *err)
{
    fprintf(stderr, "%s: %s: %s\n", driver_name, what, err != NULL ? err->text : "");
    exit(2);
}

uint32_t
driver_shape_parse(const char *s, uint64_t *shape)
{
    uint32_t rank = 0;
    if (strcmp(s, "-") == 0)
        return 0;
    while (rank < SL_MAX_RANK) {
        char *end;
        shape[rank++] = strtoull(s, &end, 10);
        if (end == s || (*end != 'x' && *end != '\0'))
            driver_die("bad shape", NULL);
        if (*end == '\0')
            break;
        s = end + 1;
    }
    return rank;
}

uint64_t
driver_shape_count(uint32_t rank, const uint64_t *shape)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < rank; d++)
        n *= shape[d];
    return n;
}

void *
driver_calloc(size_t n)
{
    void *p = calloc(n > 0 ? n : 1, 1);
    if (p == NULL)
        driver_die("out of memory", NULL);
    return p;
}

void *
driver_file_read(const char *path, size_t bytes)
{
    void *p = driver_calloc(bytes);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        driver_die(path, NULL);
    if (fread(p, 1, bytes, f) != bytes || fgetc(f) != EOF)
        driver_die("input file size differs from its shape", NULL);
    fclose(f);
    return p;
}

void
driver_file_write(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, n, f) != n || fclose(f) != 0)
        driver_die(path, NULL);
}

void
driver_view_flipped(struct sl_view *v, sl_dtype dt, uint32_t rank, const uint64_t *shape,
                    unsigned flips, void *data)
{
    struct sl_error err = SL_ERROR_INIT;
    if (sl_view_init(v, dt, rank, shape, data, &err) != SL_OK)
        driver_die("input view", &err);
    unsigned char *p = data;
    for (uint32_t a = 0; a < rank; a++) {
        if (flips & (1u << a) && shape[a] > 0) {
            p += (int64_t)(shape[a] - 1) * v->stride[a] * (int64_t)sl_dtype_size(dt);
            v->stride[a] = -v->stride[a];
        }
    }
    v->data = p;
}

int
driver_repeat_opt(int argc, char **argv, int *first_arg)
{
    if (argc > 2 && strcmp(argv[1], "--repeat") == 0) {
        *first_arg = 3;
        return atoi(argv[2]);
    }
    *first_arg = 1;
    return 1;
}

double
driver_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
