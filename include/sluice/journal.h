/* SPDX-License-Identifier: MIT */
/*
 * Run journals: a small append-only file beside a long run that records
 * each unit its puts completed (a shard, or a chunk of an unsharded array),
 * so that a later run of the same computation skips them.
 *
 * The journal's header carries a fingerprint of the computation, item by
 * item: the graph (nodes, operations and their parameters, grids, stages),
 * the metadata of every array it reads ("input:<node>") and writes
 * ("output:<node>"), and the options that change output bytes
 * ("option:missing").  A journal is only applied to a plan whose
 * fingerprint is the same, and a refusal names the items that differ.
 *
 * Every line of the file ends with a checksum of the line (16 hex digits of
 * its SHA-256), so a file truncated or damaged at any byte is detected: a
 * damaged header refuses the journal; records after the first damaged line
 * are not trusted, and their units run again.  A unit is recorded only
 * after the store's write of it returned, with every chunk of it ok; it is
 * written to the file at once (a killed process loses none), and the file
 * is made durable (fdatasync, against a crash of the machine) at most every
 * `sync_interval_s` and when the journal is closed.
 */
#ifndef SL_JOURNAL_H
#define SL_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/plan.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_journal sl_journal;

/* How sl_journal_open treats the file. */
struct sl_journal_opts {
    bool resume;                    /* read the units an earlier run recorded and skip them;
                                       false: start a new journal, replacing any file there */
    const char *const *staging;     /* the directories the run's outputs are written into,
                                       kept in the header with their identities for
                                       sl_journal_read_staging; borrowed for the call */
    uint32_t n_staging;             /* how many; at most SL_JOURNAL_MAX_STAGING */
    double sync_interval_s;         /* most seconds between fdatasyncs while records come */
    const char *const *resume_from; /* with resume: the journals of the earlier run to read
                                       (one per process of a run across processes), each of
                                       the plan's fingerprint and naming the same staging
                                       directories; their units are united.  NULL: `path`
                                       itself.  Borrowed for the call */
    uint32_t n_resume_from;         /* how many; 0 with NULL */
};
/**
 * SL_JOURNAL_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_journal_opts
sl_journal_opts_default(void)
{
    struct sl_journal_opts o;
    memset(&o, 0, sizeof o);
    o.sync_interval_s = 2.0;
    return o;
}
#define SL_JOURNAL_OPTS_DEFAULT (sl_journal_opts_default())

/* The most staging directories a journal names. */
#define SL_JOURNAL_MAX_STAGING 64

/* What sl_journal_open found in an earlier run's journal. */
struct sl_journal_info {
    uint64_t units_done;      /* units recorded and trusted: their runs are skipped */
    uint64_t units_dropped;   /* recorded units not trusted, as a unit of another put
                                 that their chunks read runs again: they run again */
    int64_t damaged_at;       /* byte offset of the first damaged line; -1 if none */
    uint32_t damaged_in;      /* in which of opts.resume_from that line is (0 without) */
    uint64_t records_ignored; /* lines from the damaged one on, not trusted (in every
                                 journal read) */
};

/**
 * Open the journal at `path` for `plan` and attach it: until
 * sl_journal_close, every run of the plan skips the units the journal
 * holds (their chunks count as ok, SL_OK, and as resumed in the summary)
 * and records the units it completes.  Without `opts->resume` a new
 * journal is written (an existing file is replaced).  With it the file
 * (or every file of `opts->resume_from`) must hold a journal whose
 * fingerprint is the plan's; the trusted records of all of them are kept
 * and `path` is rewritten (atomically, through a temporary file) with the
 * new `staging`, ready for appending.
 * @param plan  borrowed; must outlive the journal; one journal at a time.
 * @return the journal, or NULL with `err`: SL_ENOTFOUND (resume and no
 * file), SL_ECORRUPT (not a journal, or its header is damaged: the byte
 * offset is named), SL_ECONFLICT (the fingerprint differs: the text names
 * the items that changed; or two journals of `resume_from` name different
 * staging directories, so are of different runs), SL_ESTATE (the plan already has a journal),
 * SL_EIO (the file cannot be read or written), SL_ENOMEM.
 * Thread-safety: not while the plan runs.
 */
SL_API sl_journal *sl_journal_open(sl_plan *plan, const char *path,
                                   const struct sl_journal_opts *opts, struct sl_error *err);

/**
 * What the earlier run's journal held (zeros, damaged_at -1, for a new
 * journal) into `out`.
 * Thread-safety: any thread.
 */
SL_API void sl_journal_get_info(const sl_journal *j, struct sl_journal_info *out);

/**
 * Make every record durable, detach the journal from its plan and free it.
 * NULL is a no-op returning SL_OK.
 * @return SL_OK, or SL_EIO when a write or sync failed since the journal
 * was opened (the records may then be lost; the run's output is not).
 * Thread-safety: not while the plan runs.
 */
SL_API sl_status sl_journal_close(sl_journal *j, struct sl_error *err);

/* A directory where the run that wrote a journal writes its outputs. */
struct sl_journal_staging {
    char path[4096]; /* as given in opts.staging then */
    uint64_t dev;    /* its identity then (st_dev, st_ino), which a rename keeps: */
    uint64_t ino;    /* the directory is found under its final name too */
};

/**
 * Read the staging directories of the journal at `path` from its header
 * (whose checksums alone are checked) into `out` (`cap` entries), their
 * number into `*n`.
 * @return SL_OK; SL_ENOTFOUND (no file), SL_ECORRUPT (damaged header, or
 * more than `cap` directories), SL_EIO.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_journal_read_staging(const char *path,
                                                      struct sl_journal_staging *out, uint32_t cap,
                                                      uint32_t *n, struct sl_error *err);

/**
 * Compare the fingerprint of the journal at `path` with `plan`'s, reading
 * and changing nothing else: a check before an earlier run's output is
 * touched.
 * @return SL_OK, or as sl_journal_open with resume: SL_ENOTFOUND,
 * SL_ECORRUPT, SL_ECONFLICT (naming the items that changed), SL_EIO,
 * SL_ENOMEM.
 * Thread-safety: not while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_journal_check(const sl_plan *plan, const char *path,
                                               struct sl_error *err);

/**
 * Check that the report at `report_path` (docs/report.schema.json, as
 * sl_plan_write_report writes it) is of the run that wrote the journal
 * `j` (opened with resume): every put of the plan is in it with the same
 * chunk grid, and the units whose chunks it lists as failed are exactly
 * the units the journal does not hold as done, besides the units whose
 * records the journal dropped as they read units that run again (a unit
 * of a pyramid level reading a failed unit of the level below, recorded
 * by a later run), which run again too.  A run with `j` then
 * reruns exactly those units (`sluice run --rerun-failed`).
 * @return SL_OK and the number of such units in `*units`; SL_EPARSE (not
 * a report), SL_ECONFLICT (a put missing or of another grid, or a unit
 * done in one and failed or absent in the other: named), SL_ENOMEM.
 * Thread-safety: not while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_journal_check_report(const sl_journal *j, const char *report_path,
                                                      uint64_t *units, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_JOURNAL_H */
