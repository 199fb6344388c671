/* SPDX-License-Identifier: MIT */
/*
 * Filesystem paths as the kernel reaches them, and whole-node replacement.
 *
 * Two paths given by a user can name the same directory (a symbolic link,
 * "..", a trailing slash), or one can lie inside the other; a command that
 * reads one and writes the other must know before it touches anything.
 * sl_fs_path_resolve and sl_fs_path_overlap answer that.
 *
 * A node (a Zarr array or group: a directory) is replaced whole and
 * atomically by writing the new one beside it, in a hidden sibling, and
 * swapping the two when the new one is complete (renameat2 with
 * RENAME_EXCHANGE; two renames where the file system lacks it), then
 * removing the old one.  Until the swap, readers see the old node as it
 * was; a run that fails, is refused or is killed leaves it so.  The cost is
 * the space of both nodes during the run; SL_FS_REPLACE_IN_PLACE deletes the
 * old node first instead, for datasets too large to hold twice.
 */
#ifndef SL_FS_H
#define SL_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Resolve `path` to the absolute path the kernel would reach: its longest
 * existing prefix through realpath(3) (symbolic links and ".." resolved),
 * then the missing rest appended, its "." and ".." applied by name.
 * @return SL_OK; SL_EINVAL (empty path, or the result does not fit `size`
 * bytes), SL_EIO (the working directory or a prefix cannot be resolved, with
 * the reason).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_fs_path_resolve(const char *path, char *out, size_t size,
                                                 struct sl_error *err);

/* How two resolved paths relate. */
typedef enum sl_fs_overlap {
    SL_FS_APART,   /* neither holds the other */
    SL_FS_SAME,    /* the same path */
    SL_FS_INSIDE,  /* the first lies inside the second */
    SL_FS_CONTAINS /* the second lies inside the first */
} sl_fs_overlap;

/**
 * Compare two paths made by sl_fs_path_resolve, by whole components.
 * @return how `a` relates to `b`.
 * Thread-safety: any thread.
 */
SL_API sl_fs_overlap sl_fs_path_overlap(const char *a, const char *b);

/* What sl_fs_replace_begin does with a node already at the destination. */
typedef enum sl_fs_replace_mode {
    SL_FS_REPLACE_REFUSE,  /* refuse it (SL_EEXIST) */
    SL_FS_REPLACE_STAGED,  /* write beside it, swap at commit, then remove it */
    SL_FS_REPLACE_IN_PLACE /* remove its contents now, write in its place */
} sl_fs_replace_mode;

/* One replacement under way. */
typedef struct sl_fs_replace sl_fs_replace;

/**
 * Begin writing a node at directory `dest`.  Its parents are made when
 * missing (and removed again by an abort).  What is at `dest` decides:
 * nothing, or an empty directory: the node is written in a hidden sibling
 * and renamed into place at commit (so a refused or killed run leaves
 * nothing behind).  A Zarr node (a directory holding .zarray, .zgroup,
 * .zattrs or zarr.json): as `mode` says.  A file, or a directory that holds
 * entries but no Zarr node: refused (SL_EEXIST) in every mode, since
 * replacing it would delete what is not a dataset.  Hidden siblings that
 * killed runs on this host left behind (their process is gone) are removed
 * first.  `dest` is named as given in every message.
 * @return the replacement (finish it with sl_fs_replace_commit or
 * sl_fs_replace_abort), or NULL with SL_EEXIST (see above: the text says
 * what is there), SL_EINVAL (an empty or too long path), SL_EACCES or SL_EIO
 * (a directory could not be made or read) or SL_ENOMEM in `err`.
 * Thread-safety: any thread; one replacement per destination at a time.
 */
SL_API sl_fs_replace *sl_fs_replace_begin(const char *dest, sl_fs_replace_mode mode,
                                          struct sl_error *err);

/**
 * The directory to write the new node into (the hidden sibling, or `dest`
 * itself in place).  Valid until the replacement ends.
 * @return a NUL-terminated path, never NULL.
 * Thread-safety: any thread.
 */
SL_API const char *sl_fs_replace_path(const sl_fs_replace *r);

/**
 * Whether a Zarr node was at the destination when the replacement began.
 * @return true when one was there.
 * Thread-safety: any thread.
 */
SL_API bool sl_fs_replace_existed(const sl_fs_replace *r);

/**
 * Put the new node in place: swap it with the old one (or rename it into
 * place), then remove the old one, and free `r`.  Once this returns SL_OK
 * the destination is the new node, even when removing the old one failed
 * part way (its rest stays in a hidden sibling that the next replacement of
 * `dest` removes; the error is not reported then).
 * @return SL_OK, or SL_EEXIST (something appeared at the destination
 * meanwhile) or SL_EIO with the reason; the old node is then still in
 * place and the new one removed.
 * Thread-safety: the thread that owns `r`.
 */
SL_API SL_NODISCARD sl_status sl_fs_replace_commit(sl_fs_replace *r, struct sl_error *err);

/**
 * Find where another process is writing a new node for `dest` (the hidden
 * sibling its sl_fs_replace_begin made), so that the processes of one run
 * can write into the same new node before the first commits it.
 * @return SL_OK with the directory in `out` (`size` bytes); SL_ENOTFOUND
 * when no such sibling exists (the node is in place, or was never begun);
 * SL_EEXIST when several runs are writing it, naming two; SL_EINVAL when the
 * path does not fit.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_fs_replace_find(const char *dest, char *out, size_t size,
                                                 struct sl_error *err);

/**
 * Go on with a replacement of `dest` that a killed (or failed) run began
 * in directory `staging` (sl_fs_replace_path then), whose identity then
 * was (`dev`, `ino`) (st_dev, st_ino: a rename keeps them).  When
 * `staging` is still that directory, a hidden sibling of `dest` made by
 * sl_fs_replace_begin, it is taken over (renamed as this process's, so
 * that it is not removed as a killed run's leftover) and committed as
 * begin's would be; so is a hidden sibling of `dest` by another name that
 * is that directory (an earlier resume took it over).  When `dest` is that directory (the node was
 * written in place, or put in place already), it is written where it is.  A directory by either
 * name that is not the one begun (an old node that a commit swapped out, another run's node) is
 * never taken.
 * @return the replacement, or NULL with SL_ENOTFOUND (neither path is the
 * directory begun), SL_EINVAL (`staging` is not a sibling of `dest` that
 * sl_fs_replace_begin makes), SL_EEXIST (a process of this host that
 * still runs owns it, or `dest` holds what begin refuses to replace; a
 * killed process left as a zombie no longer runs),
 * SL_EIO or SL_ENOMEM.
 * Thread-safety: any thread; one replacement per destination at a time.
 */
SL_API sl_fs_replace *sl_fs_replace_resume(const char *dest, const char *staging, uint64_t dev,
                                           uint64_t ino, struct sl_error *err);

/**
 * Stop without putting the new node in place or removing it: it stays
 * where it was written (sl_fs_replace_path), for sl_fs_replace_resume, and
 * `r` is freed.  NULL is a no-op.
 * Thread-safety: the thread that owns `r`.
 */
SL_API void sl_fs_replace_keep(sl_fs_replace *r);

/**
 * Give up: remove the new node and any parents begin made, leave the old
 * node as it was (in place mode: as emptied), and free `r`.  NULL is a
 * no-op.
 * Thread-safety: the thread that owns `r`.
 */
SL_API void sl_fs_replace_abort(sl_fs_replace *r);

/**
 * Remove the directory tree at `path` (files, links and directories; links
 * are removed, never followed).  An absent path succeeds.
 * @return SL_OK, or SL_EIO naming the entry that could not be removed.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_fs_remove_tree(const char *path, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_FS_H */
