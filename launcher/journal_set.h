/* SPDX-License-Identifier: MIT */
/*
 * The journal files of one run.  A run alone journals into FILE (the
 * --journal path); under mpirun each rank journals its own units into
 * FILE.rank-R-of-N (rank R of N).  A --resume reads every one an earlier
 * run left, whatever its number of ranks, and unites their units; a run
 * begun afresh removes them all before journaling.
 */
#ifndef SL_LAUNCHER_JOURNAL_SET_H
#define SL_LAUNCHER_JOURNAL_SET_H

#include <stddef.h>
#include <stdint.h>

#include <sluice.h>

#include "commands.h"

/* The most journal files a run may leave (ranks of runs, summed). */
#define JOURNAL_SET_MAX 4096

/* The journal files found at one FILE. */
struct journal_set {
    char **paths;       /* FILE first when it is there, then FILE.rank-R-of-N; owned */
    uint32_t n;         /* how many */
    uint32_t n_missing; /* ranks of a run across processes whose file is absent (their
                           units run again) */
};

/* The journal of rank `rank` of `size` for the run's journal `base`, in
 * `buf` (`cap` bytes): `base` itself for a run alone.  NULL when too long. */
const char *journal_rank_path(const char *base, int rank, int size, char *buf, size_t cap);

/*
 * Find the journal files an earlier run left at `base` into `s`.
 * @return 0 (none found is `s->n` 0), or 2 after a message (`c`'s) when
 * the directory cannot be listed, there are too many or memory ran out.
 */
int journal_set_find(const struct cmd *c, const char *base, struct journal_set *s);

void journal_set_fini(struct journal_set *s);

/*
 * Remove the journal files at `base`, except those of a run of `keep`
 * ranks (0: remove all).  Errors other than a file already gone are
 * printed (`c`'s name) and returned as 1.
 */
int journal_set_remove(const struct cmd *c, const char *base, int keep);

/*
 * Read the staging directories of every journal of `s` into `dirs` (`cap`
 * entries), their number into `*n`: the same in each, as every rank of a
 * run writes into the same directories.
 * @return 0, or 2 after a message naming the journal (damaged header) or
 * the two journals that differ (files of different runs).
 */
int journal_set_staging(const struct cmd *c, const struct journal_set *s,
                        struct sl_journal_staging *dirs, uint32_t cap, uint32_t *n);

#endif /* SL_LAUNCHER_JOURNAL_SET_H */
