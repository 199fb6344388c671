/* SPDX-License-Identifier: MIT */
/*
 * A fault-injecting I/O table for filesystem-store tests: it counts every
 * call by operation, fails the n-th call of a chosen operation with a chosen
 * errno, shortens writes, and counts renames per target path (how "each
 * shard is written exactly once" is checked).  It wraps the default table,
 * less its read-ahead hint (`willneed` NULL: a store under test makes
 * exactly the calls that read or change files).
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
    SL_FAULT_SYNCFS,
    SL_FAULT_OP_COUNT_
} sl_fault_op;

#define SL_FAULT_MAX_TARGETS 256

/*
 * What a planned fault on the k-th *mutating* call does (the k-th write, for
 * the kinds that shorten writes, so that every k of a sweep hits one however
 * threads interleave).  Mutating calls are those that change the file
 * system: open for writing (O_WRONLY, O_RDWR, O_CREAT or O_TRUNC), write,
 * fsync, rename, unlink, mkdir and syncfs.
 */
typedef enum sl_fault_kind {
    SL_FAULT_ERRNO,       /* the call fails with the errno, changing nothing */
    SL_FAULT_SHORT,       /* a write writes half of its bytes (at least one) and says
                             so; any other call runs as usual */
    SL_FAULT_SHORT_ERRNO, /* a write writes half, and the next write (of any
                             thread) fails with the errno: a disk filling up */
} sl_fault_kind;

struct sl_fault_io {
    struct sl_io_table table;                   /* give &table to the store */
    const struct sl_io_table *inner;            /* the table doing the real work */
    _Atomic uint64_t calls[SL_FAULT_OP_COUNT_]; /* calls made, by operation */
    _Atomic uint64_t n_direct_opens;            /* opens asking for O_DIRECT */
    int fail_op;                                /* operation to fail, or -1 */
    uint64_t fail_at;                           /* 1-based call number of fail_op to fail */
    uint64_t fail_times;                        /* ... and the calls after it, this many in all */
    int fail_errno;                             /* errno the failing call reports */
    bool fail_sticky;                           /* also fail every later call of fail_op */
    size_t write_max;                           /* > 0: each write writes at most this */
    pthread_mutex_t lock;                       /* guards the rename targets */
    char *targets[SL_FAULT_MAX_TARGETS];        /* rename targets seen */
    unsigned target_renames[SL_FAULT_MAX_TARGETS]; /* renames onto each target */
    unsigned n_targets;                            /* entries used */
    _Atomic uint64_t n_mutating;                   /* mutating calls made */
    _Atomic uint64_t n_mut_writes;                 /* of those, writes */
    uint64_t mut_fail_at;     /* mutating call (write, SHORT kinds) to hit (1-based); 0: none */
    sl_fault_kind mut_kind;   /* what hitting it does */
    int mut_errno;            /* errno of SL_FAULT_ERRNO and _SHORT_ERRNO */
    _Atomic int mut_fired_op; /* operation hit, or -1 */
    _Atomic bool mut_next_write_fails; /* SL_FAULT_SHORT_ERRNO armed */
};

/* Wrap the default table; no faults planned. */
void sl_fault_io_init(struct sl_fault_io *f);

/* Free what the counters hold. */
void sl_fault_io_fini(struct sl_fault_io *f);

/* Fail the `at`-th call (counting from now) of `op` with `errno_value`. */
void sl_fault_io_fail(struct sl_fault_io *f, sl_fault_op op, uint64_t at, int errno_value);

/* Fail `times` calls of `op` in a row, from the `at`-th (counting from
 * now), with `errno_value`: a transient fault, gone after `times`. */
void sl_fault_io_fail_times(struct sl_fault_io *f, sl_fault_op op, uint64_t at, uint64_t times,
                            int errno_value);

/* Plan a fault of `kind` on the `at`-th mutating call counting from now
 * (the `at`-th write for SL_FAULT_SHORT and SL_FAULT_SHORT_ERRNO; see
 * sl_fault_kind); `errno_value` for the kinds that fail. */
void sl_fault_io_fail_mutating(struct sl_fault_io *f, uint64_t at, sl_fault_kind kind,
                               int errno_value);

/* Mutating calls so far. */
uint64_t sl_fault_io_mutating_calls(struct sl_fault_io *f);

/* Writes so far. */
uint64_t sl_fault_io_mutating_writes(struct sl_fault_io *f);

/* The operation the planned mutating-call fault hit, or -1 when it has not
 * fired (not reached yet). */
int sl_fault_io_fired(struct sl_fault_io *f);

/* Forget the plan and zero the counters. */
void sl_fault_io_reset(struct sl_fault_io *f);

/* Calls of `op` so far. */
uint64_t sl_fault_io_calls(struct sl_fault_io *f, sl_fault_op op);

/* Renames whose target path ends with `suffix`, summed. */
unsigned sl_fault_io_renames_to(struct sl_fault_io *f, const char *suffix);

/* Name of an operation ("open", "write", ...). */
const char *sl_fault_op_name(sl_fault_op op);

#endif /* SL_TEST_FAULT_IO_H */
