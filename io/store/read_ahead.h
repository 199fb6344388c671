/* SPDX-License-Identifier: MIT */
/*
 * A read-ahead window: hints of reads to come, given to a device no more
 * than `window` bytes ahead of the reads.  The filesystem store gives each
 * hint to the kernel (posix_fadvise WILLNEED), which queues every byte of
 * it on the device at once; hinting a whole run's input up front fills the
 * device's queue for the whole run, and every other request (a metadata
 * block, the journal's write for an output file) then waits behind it.
 * The window keeps the device busy a few chunks ahead of the workers and
 * no further: hints beyond it wait in order and are given as reads catch
 * up.
 *
 * A hint leaves the window when the first read of its key begins, or, if
 * its key is never read (a cancelled task), once AGE_READS reads have
 * begun since it was given.  A read of a key whose hint still waits
 * withdraws the hint (it would only fetch what was just read).  Hints that cannot wait (more than
 * SL__AHEAD_QUEUE_MAX waiting) are dropped: a hint changes no result.
 */
#ifndef SL_IO_READ_AHEAD_H
#define SL_IO_READ_AHEAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/store.h>

/* Hints waiting for room at most; later ones are dropped. */
#define SL__AHEAD_QUEUE_MAX 4096

/* Give hint `key` to the device: `ranges` (n > 0) or the whole object
 * (n == 0).  Returns the bytes asked for, 0 when nothing was given.
 * Called without the window's lock held, by one thread at a time. */
typedef uint64_t sl__ahead_give_fn(void *ctx, const char *key, const struct sl_byte_range *ranges,
                                   size_t n);

/* One hint: waiting, or given and not yet read. */
struct sl__ahead_hint {
    char *key;                    /* owned */
    struct sl_byte_range *ranges; /* owned; NULL: the whole object */
    size_t n_ranges;
    uint64_t bytes; /* given: bytes asked for */
    uint64_t seq;   /* given: reads begun before it was given */
};

/* What a window did, for tests and reports. */
struct sl__ahead_stats {
    uint64_t given;   /* hints given to the device */
    uint64_t dropped; /* hints dropped (queue full, or out of memory) */
    uint64_t skipped; /* waiting hints withdrawn by a read of their key */
    uint64_t aged;    /* given hints never read, let go after AGE_READS reads */
    uint64_t ahead;   /* bytes given and not yet read, now */
    uint64_t most;    /* the most bytes given and not yet read at once */
    size_t waiting;   /* hints waiting for room, now */
};

struct sl__ahead {
    pthread_mutex_t lock; /* guards everything below but the constants */
    uint64_t window;      /* constant: bytes given ahead of the reads at most */
    sl__ahead_give_fn *give;
    void *give_ctx;
    struct sl_allocator alloc;
    bool giving;                  /* a thread is giving hints (one at a time) */
    uint64_t reads;               /* reads begun */
    struct sl__ahead_hint *given; /* in the order given */
    size_t n_given, cap_given;
    struct sl__ahead_hint *queue; /* a ring of waiting hints */
    size_t head, n_queued, cap_queue;
    _Atomic size_t live; /* n_given + n_queued, read without the lock */
    struct sl__ahead_stats stats;
};

void sl__ahead_init(struct sl__ahead *a, uint64_t window, sl__ahead_give_fn *give, void *ctx,
                    const struct sl_allocator *alloc);
void sl__ahead_fini(struct sl__ahead *a);

/* Hint a read of `key` (`ranges`, n > 0, or the whole object, n == 0) to
 * come: given now if the window has room, else queued behind earlier
 * hints.  Thread-safety: any thread. */
void sl__ahead_hint(struct sl__ahead *a, const char *key, const struct sl_byte_range *ranges,
                    size_t n);

/* A read of `key` begins: its hint leaves the window, and waiting hints
 * are given while there is room (by the calling thread).
 * Thread-safety: any thread. */
void sl__ahead_read(struct sl__ahead *a, const char *key);

/* A copy of the window's counters.  Thread-safety: any thread. */
void sl__ahead_stats(struct sl__ahead *a, struct sl__ahead_stats *out);

#endif /* SL_IO_READ_AHEAD_H */
