/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the test suites: an allocator that fails on demand,
 * scratch directories, and where the shared fixtures live.
 */
#ifndef SL_TESTUTIL_H
#define SL_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <sluice.h>

/* An allocator that fails its `fail_at`-th allocation (1-based; 0 never)
 * and counts live blocks and bytes, so fault tests can check for leaks.
 * Safe to use from several threads at once (one process-wide lock guards
 * the counters); read the fields when no other thread allocates. */
struct sl_test_alloc {
    size_t fail_at;    /* allocation number that fails; 0 = none */
    size_t n_calls;    /* allocations attempted */
    size_t n_failed;   /* allocations refused */
    size_t n_live;     /* blocks allocated and not freed */
    size_t live_bytes; /* bytes allocated and not freed */
    size_t peak_bytes; /* highest live_bytes seen */
};

/* An sl_allocator backed by `state` (which must outlive it). */
struct sl_allocator sl_test_alloc_make(struct sl_test_alloc *state);

/* Make a fresh empty directory under $TMPDIR (or /tmp) named for `tag`;
 * returns a static path valid until the next call. Aborts the test on failure. */
const char *sl_test_tmpdir(const char *tag);

/* As sl_test_tmpdir, but on a RAM file system (/dev/shm) when there is a
 * writable one: for tests whose fsyncs only cost time (a SIGKILL or a
 * simulated power cut does not depend on the disk).  Else as sl_test_tmpdir. */
const char *sl_test_tmpdir_ram(const char *tag);

/* Remove a directory tree (best effort). */
void sl_test_rmtree(const char *path);

/* Whether the file system holding directory `dir` lets a file be opened
 * with O_DIRECT (ramfs, tmpfs before Linux 6.6 and some FUSE ones do not;
 * the filesystem store then writes the ordinary way). */
bool sl_test_takes_direct(const char *dir);

/* The shared fixtures folder ($SL_FIXTURES_DIR), or NULL when absent. */
const char *sl_test_fixtures_dir(void);

/* Read a whole file into a malloc'd buffer; NULL if it cannot be read. */
void *sl_test_read_file(const char *path, size_t *len);

#endif /* SL_TESTUTIL_H */
