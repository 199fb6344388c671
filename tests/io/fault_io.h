/* SPDX-License-Identifier: MIT */
/*
 * A fault-injecting I/O table for filesystem-store tests: it counts every
 * call by operation, fails the n-th call of a chosen operation with a chosen
 * errno, shortens writes, and counts renames per target path (how "each
 * shard is written exactly once" is checked).  It wraps the default table.
 */
#ifndef SL_TEST_FAULT_IO_H
#define SL_TEST_FAULT_IO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <sluice.h>

/* The operations of struct sl_io_table. */
typedef enum sl_fault_op {
    SL_FAULT_OPEN,
    SL_FAULT_CLOSE,
    SL_FAULT_PREAD,
    SL_FAULT_WRITE,
    SL_FAULT_FSYNC,
    SL_FAULT_FSTAT,
    SL_FAULT_LSTAT,
    SL_FAULT_RENAME,
    SL_FAULT_UNLINK,
    SL_FAULT_MKDIR,
    SL_FAULT_REALPATH,
    SL_FAULT_LIST_DIR,
    SL_FAULT_OP_COUNT_
} sl_fault_op;

#define SL_FAULT_MAX_TARGETS 256

struct sl_fault_io {
    struct sl_io_table table;                      /* give &table to the store */
    const struct sl_io_table *inner;               /* the table doing the real work */
    _Atomic uint64_t calls[SL_FAULT_OP_COUNT_];    /* calls made, by operation */
    int fail_op;                                   /* operation to fail, or -1 */
    uint64_t fail_at;                              /* 1-based call number of fail_op to fail */
    int fail_errno;                                /* errno the failing call reports */
    bool fail_sticky;                              /* also fail every later call of fail_op */
    size_t write_max;                              /* > 0: each write writes at most this */
    pthread_mutex_t lock;                          /* guards the rename targets */
    char *targets[SL_FAULT_MAX_TARGETS];           /* rename targets seen */
    unsigned target_renames[SL_FAULT_MAX_TARGETS]; /* renames onto each target */
    unsigned n_targets;                            /* entries used */
};

/* Wrap the default table; no faults planned. */
void sl_fault_io_init(struct sl_fault_io *f);

/* Free what the counters hold. */
void sl_fault_io_fini(struct sl_fault_io *f);

/* Fail the `at`-th call (counting from now) of `op` with `errno_value`. */
void sl_fault_io_fail(struct sl_fault_io *f, sl_fault_op op, uint64_t at, int errno_value);

/* Forget the plan and zero the counters. */
void sl_fault_io_reset(struct sl_fault_io *f);

/* Calls of `op` so far. */
uint64_t sl_fault_io_calls(struct sl_fault_io *f, sl_fault_op op);

/* Renames whose target path ends with `suffix`, summed. */
unsigned sl_fault_io_renames_to(struct sl_fault_io *f, const char *suffix);

/* Name of an operation ("open", "write", ...). */
const char *sl_fault_op_name(sl_fault_op op);

#endif /* SL_TEST_FAULT_IO_H */
