/* SPDX-License-Identifier: MIT */
/*
 * A power-loss model for filesystem-store tests: an I/O table that runs
 * every call for real under a root directory and records what a power cut
 * would keep of it.
 *
 * - A file's durable content is what it held when it was last fsynced; a
 *   file never fsynced keeps nothing (it comes back empty).
 * - A directory's entries (made by create, mkdir, rename, unlink) become
 *   durable when that directory is fsynced; until then they are pending,
 *   in order, per directory.
 *
 * sl_power_io_cut_at() plans the cut: from the k-th mutating call on
 * (open for writing, write, fsync, rename, unlink, mkdir), every call of
 * the table fails with EIO and changes nothing, as if the machine had
 * stopped.  sl_power_io_materialize() then writes what the disk would
 * hold after the reboot into a fresh directory: the durable entries, and,
 * in the "some" mode, each directory also keeping a random prefix of its
 * pending changes (a file system may write metadata early, never out of
 * order within a directory).
 *
 * The tree under the root when the model is made counts as durable (as
 * after a sync).  fsync is modelled, not performed, so the model runs at
 * the speed of the page cache.  Not thread-safe beyond a mutex around the
 * model: meant for one writer thread.
 */
#ifndef SL_TEST_POWER_IO_H
#define SL_TEST_POWER_IO_H

#include <stdbool.h>
#include <stdint.h>

#include <sluice.h>

struct sl_power_io;

/* What survives of the changes not made durable. */
typedef enum sl_power_keep {
    SL_POWER_KEEP_NONE, /* no pending directory change survives */
    SL_POWER_KEEP_SOME, /* each directory keeps a random prefix of its pending changes */
} sl_power_keep;

/* Counters of the model. */
struct sl_power_stats {
    uint64_t n_mutating;     /* mutating calls made (before the cut) */
    uint64_t n_file_fsyncs;  /* fsyncs of files */
    uint64_t n_dir_fsyncs;   /* fsyncs of directories */
    uint64_t n_pending;      /* directory changes pending at the cut */
    uint64_t n_pending_kept; /* ... of which the last materialize kept */
    uint64_t n_unsynced;     /* files reachable after the cut never fsynced (come back empty) */
};

/* Model the tree under `root` (which exists) as durable.  NULL on failure. */
struct sl_power_io *sl_power_io_create(const char *root);

/* Free the model.  NULL is a no-op. */
void sl_power_io_destroy(struct sl_power_io *p);

/* The table to give the store; valid while the model lives. */
const struct sl_io_table *sl_power_io_table(struct sl_power_io *p);

/* Cut the power at the `at`-th mutating call from now (1-based). */
void sl_power_io_cut_at(struct sl_power_io *p, uint64_t at);

/* Whether the power is off. */
bool sl_power_io_is_cut(struct sl_power_io *p);

/* Fail the `at`-th fsync of a directory from now with EIO (it makes
 * nothing durable): a failing disk, for the stores' error paths. */
void sl_power_io_fail_dir_fsync(struct sl_power_io *p, uint64_t at);

/* Call `fn(arg, path)` after each mkdir that succeeds, outside the model's
 * lock, before the caller sees mkdir return: a test can act in the window
 * between a directory's creation and its parent's fsync.  NULL: none. */
void sl_power_io_on_mkdir(struct sl_power_io *p, void (*fn)(void *arg, const char *path),
                          void *arg);

/* Copy the counters. */
void sl_power_io_stats(struct sl_power_io *p, struct sl_power_stats *out);

/*
 * Write what the disk holds after the cut into `dst` (an empty existing
 * directory).  `*rng` drives the "some" mode.  Temporary files
 * (".sluice-tmp.<pid>.<n>") are renamed to carry `dead_pid`, as a writer
 * that no longer runs would have left them.  Returns 0 or a negated errno.
 */
int sl_power_io_materialize(struct sl_power_io *p, const char *dst, sl_power_keep keep,
                            uint64_t *rng, long dead_pid);

#endif /* SL_TEST_POWER_IO_H */
