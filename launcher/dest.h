/* SPDX-License-Identifier: MIT */
/*
 * Where a command writes its output node (an array, or a pyramid's group):
 * refused when it aliases the input; otherwise written beside what is at
 * the path and put in place after the run (sl_fs_replace), so that a
 * refused, failed or killed run leaves the destination as it was.  An
 * s3:// node is written in place instead (S3 cannot rename a prefix): rank
 * 0 refuses an old node, or deletes it with --overwrite (sl_zarr_make_room),
 * and writes the metadata; then every rank writes its shards.
 */
#ifndef SL_LAUNCHER_DEST_H
#define SL_LAUNCHER_DEST_H

#include <stdbool.h>

#include <sluice.h>

#include "array_opts.h"
#include "commands.h"
#include "runner.h"

/* One output node being written. */
struct dest {
    const char *given;   /* the path as the user gave it */
    sl_fs_replace *rep;  /* rank 0's replacement; NULL elsewhere and once finished */
    char at[4096];       /* the directory the new node is written into */
    bool existed;        /* a Zarr node was there */
    bool in_place;       /* --overwrite-in-place */
    const char *journal; /* the run's journal; NULL: none */
    bool resumed;        /* --resume took over an earlier run's output */
    bool defer_sync;     /* objects written without fsync, synced once before commit */
    bool no_sync;        /* --no-sync: with defer_sync, not synced at all */
    bool sync_failed;    /* that sync failed: the node is not put in place */
};

/*
 * Refuse input `src` and output `dst` that are the same directory or one
 * inside the other, through symbolic links and ".." too.
 * @return 0, or 2 after a message naming both paths.
 */
int dest_check_alias(const struct cmd *c, const char *src, const char *dst);

/*
 * Begin writing a node at `path`, replacing what is there as `ao` allows.
 * Across processes rank 0 decides and every rank learns where to write.
 * @return 0, or 2 after a message (something is there and may not be
 * replaced: the message names the option that would allow it).
 */
int dest_begin(const struct cmd *c, struct dest *d, const char *path, const struct array_opts *ao);

/*
 * Open the store that writes into d->at; with d->defer_sync one that defers
 * its fsyncs to dest_sync.
 */
sl_store *dest_open_store(const struct dest *d, struct sl_error *err);

/*
 * Before dest_finish, with d->defer_sync: make what `out` wrote durable, so
 * that the commit's rename never puts in place a node a crash could take
 * back.  A failure is reported, and the node is then not put in place.
 * @return `rc`, or 1 when the sync failed.
 */
int dest_sync(const struct cmd *c, struct dest *d, sl_store *out, int rc);

/*
 * End the run whose exit status is `rc`: put the new node in place when the
 * run succeeded, or when it failed in some chunks and nothing was there
 * before (the failures are reported; the rest is kept); otherwise remove it
 * and leave the old node.  Says what happened on stderr.
 * @return the command's exit status (1 when putting the node in place fails).
 */
int dest_finish(const struct cmd *c, struct dest *d, int rc);

/*
 * The whole life of a command's output: check the --report and --trace
 * files against `src` (NULL: none) and `path`, rehearse the graph in memory
 * (refusals before anything is touched), begin the destination at `path` as
 * `ao` allows, build the graph over it for real, run it and finish.
 * @return the command's exit status.
 */
int dest_write(const struct cmd *c, const char *src, const char *path, const struct array_opts *ao,
               graph_build_fn *build, void *ctx, const struct run_opts *ro, const char *what);

/* Create the output array at `path` of `out` ("": its root; a member of a
 * copied group otherwise): in the rehearsal plainly, for real through dist
 * (rank 0 creates, the others open); for real where one is already (a
 * resumed run's), open it. */
sl_array *dest_create_array(sl_store *out, const char *path, const struct sl_array_spec *spec,
                            bool real, struct sl_error *err);

/* Build the graph over `out` for real and run it.  @return the exit
 * status (the build's, else run_graph's). */
int dest_build_run(const struct cmd *c, graph_build_fn *build, void *ctx, sl_store *out,
                   const struct run_opts *ro, const char *what);

/* Whether a Zarr node is at `path` of `out` already: the output of the
 * earlier run that a --resume goes on with (a run begun afresh finds none). */
bool dest_has_node(sl_store *out, const char *path);

#endif /* SL_LAUNCHER_DEST_H */
