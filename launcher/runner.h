/* SPDX-License-Identifier: MIT */
/*
 * What the commands that run graphs share: their common options (threads,
 * memory budget, error policy, progress, trace, report), parsing of sizes
 * and shape lists, opening arrays by directory, the progress display, and
 * running a sealed graph to an exit status.
 */
#ifndef SL_LAUNCHER_RUNNER_H
#define SL_LAUNCHER_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice.h>

#include "commands.h"

/* Options every graph-running command takes. */
struct run_opts {
    unsigned threads;           /* --threads N: workers; 0 = one per core */
    size_t memory;              /* --memory SIZE: chunk-buffer budget in bytes; 0 = none */
    bool fail_fast;             /* --fail-fast: stop at the first failed chunk */
    bool missing_is_error;      /* --missing-is-error: absent input chunks fail */
    int progress;               /* --progress 1, --no-progress 0, default -1: on a terminal */
    const char *trace;          /* --trace FILE: Chrome trace of every task */
    const char *report;         /* --report FILE: JSON report of every chunk that failed */
    const char *status_map;     /* --status-map FILE: PNG of every put's chunk outcomes */
    unsigned io_concurrency;    /* --io-concurrency N: remote requests in flight; 0 = default */
    unsigned io_attempts;       /* --io-attempts N: tries per remote request; 0 = default */
    double io_deadline_s;       /* --io-deadline SECONDS: per remote request; 0 = default */
    bool missing_on_403;        /* --missing-on-403: a remote 403 reads as absent */
    const char *endpoint;       /* --endpoint URL: an S3-compatible server; NULL = AWS's rules */
    const char *region;         /* --region NAME: S3's region; NULL = AWS's rules */
    bool no_sign_request;       /* --no-sign-request: anonymous S3 requests */
    const char *journal;        /* --journal FILE: the run's journal; NULL: REPORT.journal
                                   when --report is given, else none */
    bool resume;                /* --resume: skip the units the journal holds */
    const char *rerun_failed;   /* --rerun-failed REPORT: rerun exactly the units REPORT lists
                                   as failed (a --resume with REPORT.journal, checked
                                   against REPORT); NULL: none */
    int retries;                /* --retries N: tries again of a store operation that failed
                                   transiently; -1: not given (the graph file's, else 0) */
    const char *const *staging; /* where the outputs are written (set by the command, kept
                                   in the journal for --resume) */
    uint32_t n_staging;         /* how many */
    const struct sl_journal_staging *resume_dirs; /* `sluice run --resume`: the journal's
                                                     directories, for the loader */
    uint32_t n_resume_dirs;                       /* how many */
    bool defer_sync; /* `sluice run`: its new local nodes may be synced once before they
                        are put in place (no journal, one process; set by the command) */
    bool no_sync;    /* --no-sync: where defer_sync holds, not even that sync; refused
                        where a journal or other processes need it */
};
#define RUN_OPTS_DEFAULT ((struct run_opts){.progress = -1, .retries = -1})

/* Help lines of the options reading remote stores (commands that only read
 * take these alone). */
#define REMOTE_OPTS_HELP                                                                         \
    "  --io-concurrency N   remote (http, https, s3) requests in flight at most (default 64)\n"  \
    "  --io-attempts N      tries per remote request, the first included (default 10)\n"         \
    "  --io-deadline SECS   a remote request gives up after this, retries included\n"            \
    "                       (default 300)\n"                                                     \
    "  --missing-on-403     read a remote 403 as an absent chunk, as Ceph's gateway means it\n"  \
    "  --endpoint URL       S3-compatible server for s3:// paths, e.g. http://host:9000\n"       \
    "                       (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, the profile's,\n" \
    "                       else AWS)\n"                                                         \
    "  --region NAME        S3 region (default: $AWS_REGION, $AWS_DEFAULT_REGION, the\n"         \
    "                       profile's, else us-east-1)\n"                                        \
    "  --no-sign-request    read s3:// paths anonymously (public buckets)\n"

/* Help lines for the options above, for commands' usage texts. */
#define RUN_OPTS_HELP                                                                           \
    "  --threads N          worker threads (default: one per core)\n"                           \
    "  --memory SIZE        budget for chunk buffers alive at once, e.g. 2G (default: none);\n" \
    "                       free-buffer caches are kept to a quarter of it on top\n"            \
    "  --fail-fast          stop at the first failed chunk (default: go on, report all)\n"      \
    "  --missing-is-error   absent input chunks fail instead of reading as fill\n"              \
    "  --progress           draw progress even when stderr is not a terminal\n"                 \
    "  --no-progress        draw no progress\n"                                                 \
    "  --trace FILE         write a Chrome trace (Perfetto) of every task (under mpirun:\n"     \
    "                       FILE.rank<N> for each rank)\n"                                      \
    "  --report FILE        write the JSON report of failed chunks\n"                           \
    "  --status-map FILE    write a PNG of every output chunk's outcome, by colour\n"           \
    "  --journal FILE       record shards written, for --resume (default REPORT.journal;\n"     \
    "                       under mpirun each rank writes FILE.rank-R-of-N)\n"                  \
    "  --resume             skip the shards the journal holds (under mpirun, or not: those\n"   \
    "                       of every rank of the earlier run, with any number of ranks)\n"      \
    "  --rerun-failed REPORT  rerun exactly the shards REPORT (an earlier --report) lists\n"    \
    "                       as failed, into the output it wrote; uses REPORT.journal (or\n"     \
    "                       --journal), refused unless both are of this computation\n"          \
    "  --no-sync            put new outputs in place without waiting for the device (no\n"      \
    "                       fsync, no syncfs): a killed run still leaves the old path or\n"     \
    "                       the whole new node, a power cut soon after may lose data; not\n"    \
    "                       with a journal, --resume or mpirun; nodes written in place\n"       \
    "                       are still synced\n"                                                 \
    "  --retries N          try a chunk read or shard write that failed with an I/O error,\n"   \
    "                       timeout or network failure again, up to N times, waiting 50 ms\n"   \
    "                       doubling to 2 s between tries (default 0; at most "                 \
    "100)\n" REMOTE_OPTS_HELP

/*
 * Consume the shared option at argv[*i] (and its value, advancing *i).
 * @return 1 when consumed, 0 when it is not one of them, 2 after printing a
 * usage error.
 */
int run_opts_parse(const struct cmd *c, struct run_opts *o, int argc, char **argv, int *i);

/* Open the writable store of an output URL (s3://) with `o`'s remote
 * options; NULL with `err` set. */
sl_store *open_output_store(const char *path, const struct run_opts *o, struct sl_error *err);

/* run_opts_parse for the options of REMOTE_OPTS_HELP alone. */
int remote_opts_parse(const struct cmd *c, struct run_opts *o, int argc, char **argv, int *i);

/* A --memory value: a positive size as sl_size_parse reads it ("512M",
 * "2G", "1.5GiB") that fits in size_t; false otherwise. */
bool memory_parse(const char *text, size_t *out);

/* Parse "32,256,256" into at most `max` values > 0; false if malformed,
 * including empty items ("2,,2") and a trailing comma. */
bool parse_u64_list(const char *text, uint64_t *out, uint32_t max, uint32_t *n);

/*
 * Check the files the run writes besides its output (--report, --trace)
 * before anything runs: each must not be, hold or lie inside any of the
 * `n` nodes (inputs and outputs, paths as given), and its directory must
 * exist and be writable.
 * @return 0, or 2 after a message naming the option and the path.
 */
int run_files_check(const struct cmd *c, const struct run_opts *o, const char *const *nodes,
                    size_t n);

/* The journal file of a run with `o`: --journal, else REPORT.journal with
 * --report (in `buf`), else NULL. */
const char *journal_path(const struct run_opts *o, char *buf, size_t size);

/*
 * With --no-sync, whether the run may leave its outputs unsynced: not when
 * something records them as durable as they are written (the run's journal
 * `journal`, a resumed run's) or other processes write them too (mpirun).
 * @return 0, or 2 after a usage error saying why not.
 */
int no_sync_check(const struct cmd *c, const struct run_opts *ro, const char *journal);

/*
 * Before a --resume touches an earlier run's output: seal `g` (the graph
 * as this run would build it, over memory stores) and plan it as `o` says,
 * and compare the fingerprint of the journal with it; read the journal's
 * staging directories into `dirs` (`cap`), their number into `*n`.  When
 * there is no journal (the run was killed before it made one) `*fresh` is
 * set: the run starts afresh.
 * @return 0, or 2 after a message naming what changed.
 */
int journal_resume_check(const struct cmd *c, sl_graph *g, const struct run_opts *o,
                         struct sl_journal_staging *dirs, uint32_t cap, uint32_t *n, bool *fresh);

/* Open the directory store at `path` (read-only or created for writing). */
sl_store *open_dir_store(const char *path, bool writable, struct sl_error *err);

/* Open the store an input names: a directory, a file:// URL, or an
 * http(s):// URL (read-only, with `o`'s remote options; `o` may be NULL). */
sl_store *open_input_store(const char *path, const struct run_opts *o, struct sl_error *err);

/*
 * Prepare and run the sealed graph `g` on a new pool as `o` says, with
 * progress, then print a summary (and the first failures) on stderr and
 * write the report.  `what` names the work in messages ("copy").
 * @return 0 when every chunk is ok, 1 otherwise.
 */
int run_graph(const struct cmd *c, sl_graph *g, const struct run_opts *o, const char *what);

/*
 * Build a command's graph writing its output node into store `out` (at key
 * ""): `real` is false for the rehearsal in memory, true for the run (then
 * across processes arrays are made through dist).  Stores the graph in *g.
 * @return 0, or 2 after a message.
 */
typedef int graph_build_fn(void *ctx, sl_store *out, bool real, sl_graph **g);

/*
 * Seal `g` and plan it as a run with `o` would (budget included), then
 * drop the plan: the refusals of run_graph that come before any chunk.
 * @return 0, or 2 after a message.
 */
int plan_check(const struct cmd *c, sl_graph *g, const struct run_opts *o, const char *what);

/*
 * Rehearse a run before anything is created on disk: build the graph over a
 * memory store, seal it and plan it with `o`'s budget, so that every refusal
 * that needs no data (arguments, layouts, budgets) comes before the output
 * node is touched.
 * @return 0, or 2 after a message.
 */
int rehearse(const struct cmd *c, graph_build_fn *build, void *ctx, const struct run_opts *o,
             const char *what);

/*
 * A dry run of the sealed graph `g`: prepare its plan as `o` says (so a
 * budget too small is found), print a summary, then find which stored
 * chunks its gets would read and list the missing ones on stdout (the
 * first 100; all of them, with per-node counts, in the JSON report when
 * o->report is set).  Reads and writes no chunk data.
 * @return 0 when no input chunk is missing, 1 otherwise or on failure.
 */
int dry_run_graph(const struct cmd *c, sl_graph *g, const struct run_opts *o, const char *what);

#endif /* SL_LAUNCHER_RUNNER_H */
