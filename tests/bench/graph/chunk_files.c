/* SPDX-License-Identifier: MIT */
/*
 * Chunk files and phase clocks of the pipeline floors (chunk_files.h).
 */
#include "chunk_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void
chunk_file_path(char *out, size_t size, const char *dir, const uint64_t *idx, int rank)
{
    int n = snprintf(out, size, "%s/", dir);
    for (int d = 0; d < rank && n > 0 && (size_t)n < size; d++)
        n += snprintf(out + n, size - (size_t)n, d == 0 ? "%llu" : ".%llu",
                      (unsigned long long)idx[d]);
}

void
chunk_coords(const uint64_t *grid, int rank, uint64_t c, uint64_t *idx)
{
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = c % grid[d];
        c /= grid[d];
    }
}

ssize_t
chunk_file_read(const char *path, unsigned char **buf, size_t *cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "%s: cannot open %s: %s\n", program_invocation_short_name, path,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t n = (size_t)st.st_size, got = 0;
    if (n > *cap) {
        free(*buf);
        *buf = malloc(n);
        *cap = *buf != NULL ? n : 0;
    }
    while (*buf != NULL && got < n) {
        ssize_t r = pread(fd, *buf + got, n - got, (off_t)got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        fprintf(stderr, "%s: short read of %s (%zu of %zu bytes)\n", program_invocation_short_name,
                path, got, n);
        return -1;
    }
    return (ssize_t)n;
}

int
chunk_file_write(const char *path, const void *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t put = 0;
    while (fd >= 0 && put < n) {
        ssize_t w = write(fd, (const char *)data + put, n - put);
        if (w <= 0)
            break;
        put += (size_t)w;
    }
    if (fd < 0 || close(fd) != 0 || put != n) {
        fprintf(stderr, "%s: cannot write %s\n", program_invocation_short_name, path);
        return -1;
    }
    return 0;
}

bool
chunk_index_next(uint64_t *idx, const uint64_t *grid, int rank)
{
    for (int d = rank - 1; d >= 0; d--) {
        if (++idx[d] < grid[d])
            return true;
        idx[d] = 0;
    }
    return false;
}

int
chunk_files_compare(const char *a, const char *b, const uint64_t *grid, int rank, uint64_t *n_equal,
                    uint64_t *n_chunks, char *first_diff, size_t size)
{
    unsigned char *x = NULL, *y = NULL;
    size_t x_cap = 0, y_cap = 0;
    uint64_t idx[8] = {0};
    *n_equal = *n_chunks = 0;
    if (first_diff != NULL)
        first_diff[0] = '\0';
    int rc = 0;
    do {
        char pa[4200], pb[4200];
        chunk_file_path(pa, sizeof(pa), a, idx, rank);
        chunk_file_path(pb, sizeof(pb), b, idx, rank);
        ssize_t nx = chunk_file_read(pa, &x, &x_cap), ny = chunk_file_read(pb, &y, &y_cap);
        if (nx < 0 || ny < 0) {
            rc = -1;
            break;
        }
        bool same = nx == ny && memcmp(x, y, (size_t)nx) == 0;
        *n_equal += same;
        if (!same && first_diff != NULL && first_diff[0] == '\0')
            snprintf(first_diff, size, "%s (%zd bytes) vs %s (%zd bytes)", pa, nx, pb, ny);
        ++*n_chunks;
    } while (chunk_index_next(idx, grid, rank));
    free(x);
    free(y);
    return rc;
}

double
phase_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
phase_clock_end(double *phase_s, int k, double *t)
{
    double now = phase_clock_now();
    phase_s[k] += now - *t;
    *t = now;
}
