/* SPDX-License-Identifier: MIT */
/*
 * What bench_graph_downsample compares sluice with besides dask: the zstd
 * floor (the input's chunks decoded and the output's share re-encoded, in
 * memory, on the same number of threads), the device's cold read rate, and
 * where sluice's own CPU time goes (a perf profile sorted into categories).
 */
#ifndef SL_BENCH_DOWNSAMPLE_FLOOR_H
#define SL_BENCH_DOWNSAMPLE_FLOOR_H

#include <stddef.h>
#include <stdint.h>

/* Every chunk file of a Zarr v2 array, in memory. */
struct floor_chunks {
    size_t n;             /* chunk files */
    unsigned char **data; /* each file's bytes (a zstd frame) */
    size_t *size;         /* each file's length */
    uint64_t bytes;       /* all of them */
};

/* Read every chunk file of the Zarr v2 array in `dir` (every file but
 * those whose name begins with '.').  0, or -1 after a message. */
int floor_load(const char *dir, struct floor_chunks *c);

void floor_free(struct floor_chunks *c);

/* The floor: `threads` threads decode every chunk and compress `share` of
 * each decoded chunk at level 1 (reused contexts and buffers).  Wall and
 * CPU seconds of that part alone.  0, or -1 after a message. */
int floor_run(const struct floor_chunks *c, int threads, double share, double *wall_s,
              double *cpu_s);

/* The pipeline floor: the whole downsample done by the shortest
 * hand-written program that does all of its work, on `threads` threads
 * taking output chunks in turn: for each output chunk, each of its input
 * chunk files opened, read whole with pread into a reused buffer and
 * closed, decoded (reused contexts), reduced by a 2^k mean into the output
 * chunk (uint32 sums, rounded half to even as sluice does), the output
 * chunk compressed at level 1 and written as one file of `out_dir` (no
 * fsync, no rename: the least a run can do that leaves every byte in the
 * page cache).  The input is a Zarr v2 uint16 array with "." keys, chunk
 * shape `chunk`, whose shape and chunk are multiples of `factor`; the
 * output has the same chunk shape.  Wall and CPU seconds.  0, or -1 after
 * a message.  With `read_ahead`, one more thread names every input chunk
 * file to the kernel (posix_fadvise WILLNEED, in 256 KiB pieces) in the
 * order the threads take them, one output chunk's files beyond those
 * taken: the cold-cache variant, reading overlapped with the work. */
struct pipeline_spec {
    const char *in_dir, *out_dir;
    int rank;
    uint64_t shape[5], chunk[5], factor[5];
    int read_ahead;
};
enum {
    PIPELINE_READ,
    PIPELINE_DECODE,
    PIPELINE_REDUCE,
    PIPELINE_ENCODE,
    PIPELINE_WRITE,
    PIPELINE_PHASES
};
extern const char *const pipeline_phase_names[PIPELINE_PHASES];
/* ...and, in `phase_s`, the threads' CPU seconds in each phase: opening
 * and reading the input files, decoding, reducing, encoding, writing. */
int pipeline_run(const struct pipeline_spec *p, int threads, double *wall_s, double *cpu_s,
                 double phase_s[PIPELINE_PHASES]);

/* How many of the output's chunk files are byte for byte the same in
 * `a` and `b` (*n_equal of *n_chunks).  0, or -1 after a message. */
int pipeline_compare(const struct pipeline_spec *p, const char *a, const char *b, uint64_t *n_equal,
                     uint64_t *n_chunks);

/* Drop the page cache's copy of every file under `dir` (posix_fadvise
 * DONTNEED, after fsync).  0, or -1 when the cache kept some (reported). */
int floor_evict(const char *dir);

/* Read every file under `dir` from a cold cache (evicted first): seconds
 * and bytes.  0, or -1 after a message. */
int floor_cold_read(const char *dir, double *seconds, uint64_t *bytes);

/* Where a process's CPU time went, by category of the sampled function. */
enum {
    PROFILE_ZSTD_DECODE,
    PROFILE_ZSTD_ENCODE,
    PROFILE_REDUCTION,
    PROFILE_COPIES,
    PROFILE_ALLOC_FAULTS,
    PROFILE_FILE_IO,
    PROFILE_SCHEDULING,
    PROFILE_OTHER,
    PROFILE_N
};
extern const char *const profile_names[PROFILE_N];

/* Run argv under `perf record` (sampling every thread at ~2 kHz) and share
 * its samples among the categories (each a fraction of 1).  0, or -1 when
 * perf is missing or refused (said on stderr). */
int profile_run(char *const argv[], double share[PROFILE_N]);

#endif /* SL_BENCH_DOWNSAMPLE_FLOOR_H */
