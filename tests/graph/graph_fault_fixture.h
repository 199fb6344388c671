/* SPDX-License-Identifier: MIT */
/*
 * What the graph suites under storage faults (test_exec_fault.c,
 * test_exec_retry.c) share: a directory opened twice as a filesystem
 * store, through the default I/O table and through a fault table
 * (fault_io.h), a pool of unpinned workers, and whole-array reads and
 * writes of rank-2 uint16 arrays.  Built into each suite (not a library):
 * under ThreadSanitizer the suites run on plain_test.h's stand-in for
 * criterion, so failures here abort the test through its cr_assert.
 */
#ifndef SL_GRAPH_FAULT_FIXTURE_H
#define SL_GRAPH_FAULT_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <sluice.h>

#include "fault_io.h"

/* A directory, its two stores and a pool. */
struct sl_test_fault_fs {
    char root[512];
    struct sl_fault_io fio;
    sl_pool *pool;
    sl_store *plain; /* the directory through the default I/O table */
    sl_store *fault; /* the same directory through fio */
};

/* Open `root` (a fresh directory the fixture removes in _fini) both ways,
 * the fault store durable or not, and start `n_workers` unpinned workers;
 * fails the test on any error. */
void sl_test_fault_fs_init(struct sl_test_fault_fs *f, const char *root, unsigned n_workers,
                           bool durable);
/* Close both stores and the pool, finish fio, remove the directory. */
void sl_test_fault_fs_fini(struct sl_test_fault_fs *f);

/* Create the rank-2 uint16 array `path` of `shape` in `chunk`s (in
 * `shard`s when not NULL), with a checksum; fails the test naming `path`. */
sl_array *sl_test_array_u16(sl_store *s, const char *path, const uint64_t *shape,
                            const uint64_t *chunk, const uint64_t *shard);

/* Write the whole of rank-2 uint16 array `a` from `img`. */
void sl_test_write_whole_u16(sl_array *a, const uint16_t *img);

/* The whole of rank-2 uint16 array `a`, malloc'ed; fails the test when a
 * chunk does not read back. */
uint16_t *sl_test_read_whole_u16(sl_array *a);

#endif /* SL_GRAPH_FAULT_FIXTURE_H */
