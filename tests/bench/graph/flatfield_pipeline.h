/* SPDX-License-Identifier: MIT */
/*
 * The pipeline floor of bench_graph_expr: the flat-field correction
 * (raw - dark) / max(flat, 1) of a 5-D uint16 Zarr v2 array into a float32
 * Zarr v2 array, written out by hand, so that sluice's time over it is what
 * the runtime and its expression kernel cost beyond the work itself.
 */
#ifndef SL_BENCH_FLATFIELD_PIPELINE_H
#define SL_BENCH_FLATFIELD_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

/* Where the arrays are and their geometry.  The raw is uint16 with "."
 * keys; dark and flat are float32 (shape[3], shape[4]) planes in
 * `plane_chunk` chunks; every chunk shape divides its array's shape. */
struct flatfield_spec {
    const char *raw_dir;     /* the raw (Zarr v2, zstd) */
    const char *dark_dir;    /* the dark frame (Zarr v2, zstd) */
    const char *flat_dir;    /* the flat frame (Zarr v2, zstd) */
    const char *out_dir;     /* the output, made if missing */
    uint64_t shape[5];       /* the raw's and the output's shape */
    uint64_t chunk[5];       /* the raw's and the output's chunks */
    uint64_t plane_chunk[2]; /* dark's and flat's chunks */
    int synced;              /* write each chunk file as sluice's store does */
};

/* The phases whose CPU time flatfield_run measures. */
enum {
    FLATFIELD_LOAD,    /* dark and flat read, decoded, max(flat, 1) taken */
    FLATFIELD_READ,    /* raw chunk files opened and read */
    FLATFIELD_DECODE,  /* raw chunks decoded */
    FLATFIELD_COMPUTE, /* the arithmetic */
    FLATFIELD_ENCODE,  /* output chunks compressed */
    FLATFIELD_WRITE,   /* output chunk files written (and .zarray) */
    FLATFIELD_PHASES
};
extern const char *const flatfield_phase_names[FLATFIELD_PHASES];

/*
 * The whole flat-field by the shortest program that does all of its work:
 * dark and flat read and decoded into memory (the divisor max(flat, 1) kept
 * as one plane), then `threads` threads taking raw chunks in turn from a
 * shared counter: each chunk file read whole with pread into a reused
 * buffer, decoded (reused contexts), corrected in float32 element by
 * element, compressed at zstd level 1 exactly as sluice's codec does
 * (ZSTD_compress2, content size recorded, no checksum) and written as one
 * file of `out_dir` (no fsync, no rename), then the .zarray.  Wall and CPU
 * seconds, and each phase's CPU seconds in `phase_s`.  0, or -1 after a
 * message.  With `synced`, each chunk file is written as sluice's
 * filesystem store writes one (io/store/store_fs.c): into a temporary file,
 * its whole 4096-byte blocks through an O_DIRECT descriptor and the rest
 * appended through an ordinary one, fsynced, closed and renamed: the same
 * work with the store's durability, to tell that cost from the runtime's.
 */
int flatfield_run(const struct flatfield_spec *s, int threads, double *wall_s, double *cpu_s,
                  double phase_s[FLATFIELD_PHASES]);

/* How many of the output's chunk files are byte for byte the same under
 * `a` and `b` (*n_equal of *n_chunks); the key of the first that is not in
 * `first_diff` ("" when all are).  0, or -1 after a message (a file
 * missing or unreadable). */
int flatfield_compare(const struct flatfield_spec *s, const char *a, const char *b,
                      uint64_t *n_equal, uint64_t *n_chunks, char *first_diff, size_t size);

#endif /* SL_BENCH_FLATFIELD_PIPELINE_H */
