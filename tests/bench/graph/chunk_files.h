/* SPDX-License-Identifier: MIT */
/*
 * What the hand-written pipeline floors (downsample_pipeline.c,
 * flatfield_pipeline.c) share: the paths of Zarr v2 chunk files with "."
 * keys, reading one whole into a reused buffer, writing one, comparing two
 * outputs chunk by chunk, and each thread's CPU time per phase.  Messages
 * go to stderr prefixed with the program's name.
 */
#ifndef SL_BENCH_CHUNK_FILES_H
#define SL_BENCH_CHUNK_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The path "dir/i.j..." of chunk `idx` (rank entries) into `out`. */
void chunk_file_path(char *out, size_t size, const char *dir, const uint64_t *idx, int rank);

/* The grid coordinates `idx` of chunk `c` (linear, C order) of a grid of
 * `grid` chunks (rank entries). */
void chunk_coords(const uint64_t *grid, int rank, uint64_t c, uint64_t *idx);

/* Advance the C-order index `idx` within extents `ext` over the first
 * `rank` dimensions; false once it wraps to zero. */
bool chunk_index_next(uint64_t *idx, const uint64_t *ext, int rank);

/* Read the file at `path` whole into *buf (grown as needed, the caller
 * frees it): its length, or -1 after a message. */
ssize_t chunk_file_read(const char *path, unsigned char **buf, size_t *cap);

/* Write `n` bytes at `data` as the file at `path` (no fsync).  0, or -1
 * after a message. */
int chunk_file_write(const char *path, const void *data, size_t n);

/* How many of the chunk files of a grid of `grid` chunks (rank entries)
 * are byte for byte the same under directories `a` and `b` (*n_equal of
 * *n_chunks); when `first_diff` is not NULL, the first that differs is
 * described there ("" when none does).  0, or -1 after a message (a file
 * missing or unreadable). */
int chunk_files_compare(const char *a, const char *b, const uint64_t *grid, int rank,
                        uint64_t *n_equal, uint64_t *n_chunks, char *first_diff, size_t size);

/* This thread's CPU seconds. */
double phase_clock_now(void);

/* Add the thread CPU time since *t to phase_s[k]; *t moves on to now. */
void phase_clock_end(double *phase_s, int k, double *t);

#endif /* SL_BENCH_CHUNK_FILES_H */
