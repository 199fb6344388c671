/* SPDX-License-Identifier: MIT */
/*
 * The filesystem store: one file per key under a root directory.  Writes go
 * to a temporary file in the target directory, are written fully (short
 * writes are continued), fsynced, closed and renamed over the target; with
 * `durable` the directory is fsynced too, so the rename itself survives a
 * crash.  Every system call goes through the store's `struct sl_io_table`.
 *
 * Direct writes: an object of DIRECT_FROM bytes or more whose bytes start on
 * a DIRECT_ALIGN boundary (sl_buf's large buffers do) is written with
 * O_DIRECT, the device reading it from the caller's memory, not through a
 * page-cache copy, whose CPU time it saves for the same fsynced result.
 * The whole blocks go through an O_DIRECT descriptor; the last partial
 * block is appended through an ordinary one, which is also the one
 * fsynced.  Not for a set flagged SL__SET_REREAD (a transaction whose
 * units a later stage reads): the page cache then saves the device read.
 * A file system that refuses O_DIRECT (EINVAL on open or on a
 * write) gets the object written the ordinary way instead, and, after a
 * refused open or a refused first write, every later one too (one
 * refused after some blocks went through only rewrites that object).
 *
 * DESIGN: keys reach this file already checked lexically (store.c), so the
 * only way out of the root is a symbolic link.  Before a read, the object's
 * path is resolved with realpath and must stay under the resolved root; the
 * file is then opened by its resolved path.  Before a write, the target
 * directory is resolved the same way, and missing directories are made one
 * component at a time, each existing component checked first, so mkdir never
 * runs through a link that leads outside.  Temporary files are named
 * ".sluice-tmp.<pid>.<n>"; listings skip them and keys may not use them.
 *
 * Durable stores: a directory this store makes is durable only once its
 * parent is fsynced.  Until then (and for good if that fsync failed) it is
 * listed in `unsynced`, entered before the mkdir; a set that returns
 * SL_OK first fsyncs the parent of every listed directory on its path, so
 * a writer that finds a directory another thread has just made, or one
 * whose parent's fsync failed, cannot report an object durable that a
 * power cut would take with the directory.
 *
 * Deferred syncs (`defer_sync`): objects are written and renamed without
 * an fsync, and sl_store_sync writes the root's file system back at once
 * (syncfs(2)).  Its descriptor is opened with the store, before any write,
 * because syncfs reports a write-back error only to descriptors opened
 * before it happened (Linux 5.8 on; earlier kernels report none, so a
 * store that must see them needs per-object fsyncs).  It is for a node
 * staged out of sight and put in place by one rename after the sync
 * (sl_fs_replace_commit): a crash before that rename leaves only the
 * staging directory, which the next run removes, and after it every
 * object is on disk.  Not for stores whose objects something records as
 * durable as they go (a run journal): the kernel may write that record
 * back before the object it names.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read_ahead.h"
#include "store_internal.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* A directory made by a durable store whose parent is not known fsynced. */
struct fs_unsynced {
    struct fs_unsynced *next; /* next in the store's list */
    uint64_t id;              /* names it while no lock is held (never reused) */
    char path[];              /* resolved path of the directory */
};

struct fs_store {
    struct sl_store base;          /* must come first */
    const struct sl_io_table *io;  /* borrowed; every system call goes here */
    char *root;                    /* resolved root without trailing '/'; "" for "/" */
    char *given;                   /* root as the caller gave it, for messages (base.given) */
    size_t root_len;               /* strlen(root) */
    bool durable;                  /* fsync directories after changing them */
    bool read_only;                /* refuse set and delete */
    bool direct;                   /* write large objects with O_DIRECT */
    int sync_fd;                   /* defer_sync: the root, open for syncfs; else -1 */
    _Atomic bool direct_refused;   /* the file system refused O_DIRECT */
    _Atomic uint64_t tmp_seq;      /* numbers temporary files */
    pthread_mutex_t unsynced_lock; /* guards the two fields below */
    struct fs_unsynced *unsynced;  /* durable stores: see DESIGN above */
    uint64_t unsynced_seq;         /* the last id given */
    struct sl__ahead ahead;        /* hints of reads to come (read_ahead.h) */
};

static struct fs_store *
fs_of(sl_store *s)
{
    return (struct fs_store *)s;
}

static sl_status
fs_errno(struct sl_error *err, int rc, const char *what, const char *path)
{
    return sl_error_set(err, sl__status_from_errno(rc), NULL, "%s %s: %s", what, path,
                        strerror(-rc));
}

/* Object or prefix `key` of `st` as the user would name it, for messages. */
struct fs_name {
    char text[PATH_MAX + 8];
};

static const char *
fs_name(const struct fs_store *st, const char *key, struct fs_name *out)
{
    sl_store_name(&st->base, key, out->text, sizeof(out->text));
    return out->text;
}

/* root + "/" + rel (rel may be empty: the root itself). */
static sl_status
fs_path(const struct fs_store *st, const char *rel, char *out, struct sl_error *err)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", st->root, rel);
    if (n < 0 || n >= PATH_MAX)
        return sl_error_set(err, SL_EINVAL, NULL, "path of key %s is too long",
                            fs_name(st, rel, &(struct fs_name){0}));
    if (rel[0] == '\0' && n > 1)
        out[n - 1] = '\0';
    return SL_OK;
}

static bool
fs_inside(const struct fs_store *st, const char *resolved)
{
    return strncmp(resolved, st->root, st->root_len) == 0 &&
           (resolved[st->root_len] == '/' || resolved[st->root_len] == '\0');
}

/*
 * Resolve `path` (of key `key`) and check it stays under the root.
 * @return SL_OK, SL_ENOTFOUND (missing), SL_EACCES (outside) or SL_EIO.
 */
static sl_status
fs_resolve(const struct fs_store *st, const char *path, const char *key, char *resolved,
           struct sl_error *err)
{
    int rc = st->io->realpath(st->io->ctx, path, resolved, PATH_MAX);
    if (rc == -ENOENT || rc == -ENOTDIR)
        return SL_ENOTFOUND; /* quiet: callers decide whether absence is an error */
    if (rc < 0)
        return fs_errno(err, rc, "cannot resolve", path);
    if (!fs_inside(st, resolved))
        return sl_error_set(err, SL_EACCES, NULL,
                            "key %s refused: it resolves to %s, outside the store root",
                            fs_name(st, key, &(struct fs_name){0}), resolved);
    return SL_OK;
}

/* ---- reads ---------------------------------------------------------------- */

static sl_status
fs_reader_open(sl_store *s, const char *key, const struct sl_byte_range *first,
               struct sl__reader *rd, struct sl_error *err)
{
    (void)first; /* a local read costs nothing up front */
    struct fs_store *st = fs_of(s);
    sl__ahead_read(&st->ahead, key);
    char path[PATH_MAX], resolved[PATH_MAX];
    SL_TRY(fs_path(st, key, path, err));
    sl_status status = fs_resolve(st, path, key, resolved, err);
    if (status == SL_ENOTFOUND)
        return sl_error_set(err, SL_ENOTFOUND, NULL, "no object %s",
                            fs_name(st, key, &(struct fs_name){0}));
    SL_TRY(status);
    /* O_NONBLOCK: opening a FIFO planted at a key must not wait for a
     * writer (fstat below refuses it); reads of regular files ignore it. */
    int fd = st->io->open(st->io->ctx, resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0) {
        if (fd == -ENOENT || fd == -EISDIR)
            return sl_error_set(err, SL_ENOTFOUND, NULL, "no object %s",
                                fs_name(st, key, &(struct fs_name){0}));
        return fs_errno(err, fd, "cannot open", resolved);
    }
    struct sl_io_stat info;
    int rc = st->io->fstat(st->io->ctx, fd, &info);
    if (rc < 0 || info.kind != SL_IO_FILE) {
        st->io->close(st->io->ctx, fd);
        if (rc < 0)
            return fs_errno(err, rc, "cannot stat", resolved);
        return sl_error_set(err, SL_ENOTFOUND, NULL, "no object %s (not a file)",
                            fs_name(st, key, &(struct fs_name){0}));
    }
    rd->fd = fd;
    rd->size = info.size;
    return SL_OK;
}

static sl_status
fs_reader_read(struct sl__reader *rd, uint64_t offset, size_t n, void *dst, struct sl_error *err)
{
    struct fs_store *st = fs_of(rd->store);
    uint8_t *p = dst;
    size_t done = 0;
    while (done < n) {
        int64_t r = st->io->pread(st->io->ctx, rd->fd, p + done, n - done, offset + done);
        if (r < 0)
            return sl_error_set(err, sl__status_from_errno((int)r), NULL,
                                "read of %zu bytes at offset %" PRIu64 " failed: %s", n - done,
                                offset + done, strerror((int)-r));
        if (r == 0)
            return sl_error_set(err, SL_EIO, NULL,
                                "file ended at byte %" PRIu64 " of %" PRIu64
                                " (changed while being read?)",
                                offset + done, rd->size);
        done += (size_t)r;
    }
    return SL_OK;
}

static void
fs_reader_close(struct sl__reader *rd)
{
    struct fs_store *st = fs_of(rd->store);
    if (rd->fd >= 0)
        st->io->close(st->io->ctx, rd->fd);
    rd->fd = -1;
}

/* ---- reading ahead ---------------------------------------------------------- */

/* Bytes of a file one read-ahead hint asks for (below every device's
 * largest request in practice). */
#define WILLNEED_PIECE ((uint64_t)256 << 10)

/* Open object `key` for a hint, or -1 (a hint that cannot be given is
 * dropped: the read that follows reports whatever is wrong). */
static int
fs_hint_open(struct fs_store *st, const char *key)
{
    char path[PATH_MAX], resolved[PATH_MAX];
    if (fs_path(st, key, path, NULL) != SL_OK || fs_resolve(st, path, key, resolved, NULL) != SL_OK)
        return -1;
    int fd = st->io->open(st->io->ctx, resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
    return fd >= 0 ? fd : -1;
}

/* Ask the kernel for [offset, offset + length) of `fd`, in pieces: Linux
 * reads at most the device's largest request or its read-ahead window per
 * WILLNEED call (force_page_cache_ra), 128 KiB to a few MiB, and drops the
 * rest of a larger range.  The bytes asked for. */
static uint64_t
fs_willneed(struct fs_store *st, int fd, uint64_t offset, uint64_t length)
{
    for (uint64_t done = 0; done < length; done += WILLNEED_PIECE) {
        uint64_t left = length - done;
        (void)st->io->willneed(st->io->ctx, fd, offset + done,
                               left < WILLNEED_PIECE ? left : WILLNEED_PIECE);
    }
    return length;
}

/* The read-ahead window's way to the kernel (sl__ahead_give_fn): a whole
 * chunk file (n == 0), or a shard's inner chunks, each range through one
 * descriptor (a local read needs no coalescing). */
static uint64_t
fs_give_hint(void *ctx, const char *key, const struct sl_byte_range *ranges, size_t n)
{
    struct fs_store *st = ctx;
    int fd = fs_hint_open(st, key);
    if (fd < 0)
        return 0;
    uint64_t bytes = 0;
    struct sl_io_stat info;
    if (n == 0) {
        if (st->io->fstat(st->io->ctx, fd, &info) == 0 && info.kind == SL_IO_FILE)
            bytes = fs_willneed(st, fd, 0, info.size);
    }
    for (size_t i = 0; i < n; i++)
        if (ranges[i].kind == SL_RANGE_FROM && ranges[i].length != SL_RANGE_TO_END)
            bytes += fs_willneed(st, fd, ranges[i].offset, ranges[i].length);
    st->io->close(st->io->ctx, fd);
    return bytes;
}

/* A whole chunk file about to be read: the kernel reads it while the
 * workers decode earlier ones, so a cold cache costs the device's time,
 * not the device's time plus the decode's; within the read-ahead window
 * (read_ahead.h), so the device's queue holds a few chunks, not the run's
 * whole input.  A single range (a shard index) is not hinted: the shard's
 * first read reads it, then hints the inner chunks' ranges together
 * (fs_prefetch_ranges). */
static void
fs_prefetch(sl_store *s, const char *key, const struct sl_byte_range *range)
{
    if (range == NULL)
        sl__ahead_hint(&fs_of(s)->ahead, key, NULL, 0);
}

/* Inner chunks of a shard about to be read, one hint (`gap` and `cap`
 * unused: a local read needs no coalescing). */
static void
fs_prefetch_ranges(sl_store *s, const char *key, const struct sl_byte_range *ranges, size_t n,
                   uint64_t gap, uint64_t cap)
{
    (void)gap, (void)cap;
    if (n > 0)
        sl__ahead_hint(&fs_of(s)->ahead, key, ranges, n);
}

/* ---- directories ------------------------------------------------------------ */

static sl_status
fs_fsync_dir(const struct fs_store *st, const char *dir, struct sl_error *err)
{
    int fd = st->io->open(st->io->ctx, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0)
        return fs_errno(err, fd, "cannot open directory", dir);
    int rc = st->io->fsync(st->io->ctx, fd);
    st->io->close(st->io->ctx, fd);
    if (rc < 0)
        return fs_errno(err, rc, "cannot fsync directory", dir);
    return SL_OK;
}

/* Note directory `path` (made next) as not durable yet; its id, or 0 when
 * out of memory. */
static uint64_t
fs_unsynced_add(struct fs_store *st, const char *path)
{
    size_t n = strlen(path) + 1;
    struct fs_unsynced *u = sl_alloc(&st->base.alloc, sizeof(*u) + n, 0);
    if (u == NULL)
        return 0;
    memcpy(u->path, path, n);
    pthread_mutex_lock(&st->unsynced_lock);
    u->id = ++st->unsynced_seq;
    u->next = st->unsynced;
    st->unsynced = u;
    pthread_mutex_unlock(&st->unsynced_lock);
    return u->id;
}

/* Drop entry `id` if it is still listed (its parent was fsynced, or the
 * directory was never made). */
static void
fs_unsynced_remove(struct fs_store *st, uint64_t id)
{
    pthread_mutex_lock(&st->unsynced_lock);
    struct fs_unsynced **at = &st->unsynced;
    while (*at != NULL && (*at)->id != id)
        at = &(*at)->next;
    struct fs_unsynced *u = *at;
    if (u != NULL)
        *at = u->next;
    pthread_mutex_unlock(&st->unsynced_lock);
    if (u != NULL)
        sl_free(&st->base.alloc, u, sizeof(*u) + strlen(u->path) + 1);
}

/* True when directory `a` is `dir` or one of its ancestors. */
static bool
fs_is_on_path(const char *a, const char *dir)
{
    size_t n = strlen(a);
    return strncmp(a, dir, n) == 0 && (dir[n] == '\0' || dir[n] == '/');
}

/*
 * Make durable every listed directory on the path to `dir` (resolved) by
 * fsyncing its parent, so an object just made durable in `dir` is
 * reachable after a power cut.  Entries leave the list once synced.
 */
static sl_status
fs_sync_unsynced(struct fs_store *st, const char *dir, struct sl_error *err)
{
    for (;;) {
        char parent[PATH_MAX];
        uint64_t id = 0;
        pthread_mutex_lock(&st->unsynced_lock);
        for (const struct fs_unsynced *u = st->unsynced; u != NULL && id == 0; u = u->next)
            if (fs_is_on_path(u->path, dir)) {
                id = u->id;
                snprintf(parent, sizeof(parent), "%s", u->path);
            }
        pthread_mutex_unlock(&st->unsynced_lock);
        if (id == 0)
            return SL_OK;
        char *slash = strrchr(parent, '/');
        *slash = '\0';
        SL_TRY(fs_fsync_dir(st, parent[0] != '\0' ? parent : "/", err));
        fs_unsynced_remove(st, id);
    }
}

/*
 * Make directory `path` (whose parent exists) in a durable store: listed
 * as unsynced before the mkdir, so that writers finding it meanwhile sync
 * its parent themselves, and unlisted once its parent is fsynced.  A
 * directory another writer made meanwhile is theirs to list.
 */
static sl_status
fs_make_durable_dir(struct fs_store *st, char *path, bool *raced, struct sl_error *err)
{
    *raced = false;
    /* The parent resolved, so the entry matches the resolved paths sets use. */
    char *slash = strrchr(path, '/');
    *slash = '\0';
    char resolved[PATH_MAX], entry[PATH_MAX];
    int rc = st->io->realpath(st->io->ctx, path[0] != '\0' ? path : "/", resolved, PATH_MAX);
    *slash = '/';
    if (rc < 0)
        return fs_errno(err, rc, "cannot resolve the parent of", path);
    if (snprintf(entry, sizeof(entry), "%s/%s", strcmp(resolved, "/") == 0 ? "" : resolved,
                 slash + 1) >= (int)sizeof(entry))
        return sl_error_set(err, SL_EINVAL, NULL, "path %s is too long", path);
    uint64_t id = fs_unsynced_add(st, entry);
    if (id == 0)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory making %s", path);
    rc = st->io->mkdir(st->io->ctx, path, 0777);
    if (rc < 0) {
        fs_unsynced_remove(st, id);
        *raced = rc == -EEXIST;
        return *raced ? SL_OK : fs_errno(err, rc, "cannot make directory", path);
    }
    *slash = '\0';
    sl_status status = fs_fsync_dir(st, path[0] != '\0' ? path : "/", err);
    *slash = '/';
    if (status == SL_OK)
        fs_unsynced_remove(st, id);
    return status; /* on failure the entry stays: the next set into it syncs it */
}

/* Make sure directory component `rel` (a key prefix) exists inside the root. */
static sl_status
fs_make_component(struct fs_store *st, const char *rel, struct sl_error *err)
{
    char path[PATH_MAX], resolved[PATH_MAX];
    SL_TRY(fs_path(st, rel, path, err));
    for (int attempt = 0; attempt < 2; attempt++) {
        struct sl_io_stat info;
        int rc = st->io->lstat(st->io->ctx, path, &info);
        if (rc == -ENOENT) {
            if (!st->durable) {
                rc = st->io->mkdir(st->io->ctx, path, 0777);
                if (rc == -EEXIST)
                    continue; /* another writer made it: look again */
                return rc < 0 ? fs_errno(err, rc, "cannot make directory", path) : SL_OK;
            }
            bool raced;
            sl_status status = fs_make_durable_dir(st, path, &raced, err);
            if (raced)
                continue; /* another writer made it: look again */
            return status;
        }
        if (rc < 0)
            return fs_errno(err, rc, "cannot stat", path);
        if (info.kind == SL_IO_LINK) {
            sl_status status = fs_resolve(st, path, rel, resolved, err);
            if (status == SL_ENOTFOUND)
                return sl_error_set(err, SL_ENOTFOUND, NULL,
                                    "key prefix %s is a dangling symbolic link",
                                    fs_name(st, rel, &(struct fs_name){0}));
            SL_TRY(status);
            rc = st->io->lstat(st->io->ctx, resolved, &info);
            if (rc < 0)
                return fs_errno(err, rc, "cannot stat", resolved);
        }
        if (info.kind != SL_IO_DIR)
            return sl_error_set(err, SL_EEXIST, NULL, "key prefix %s is an object, not a directory",
                                fs_name(st, rel, &(struct fs_name){0}));
        return SL_OK;
    }
    return sl_error_set(err, SL_EIO, NULL, "directory %s keeps changing", path);
}

/*
 * Resolve the directory that will hold `key` into `dir`, making missing
 * directories.  Sets `*base` to the key's last component.
 */
static sl_status
fs_parent_dir(struct fs_store *st, const char *key, bool make, char *dir, const char **base,
              struct sl_error *err)
{
    const char *slash = strrchr(key, '/');
    *base = slash != NULL ? slash + 1 : key;
    if (slash == NULL) {
        snprintf(dir, PATH_MAX, "%s", st->root[0] != '\0' ? st->root : "/");
        return SL_OK;
    }
    char rel[SL_STORE_KEY_MAX + 1];
    size_t rel_len = (size_t)(slash - key);
    memcpy(rel, key, rel_len);
    rel[rel_len] = '\0';
    char path[PATH_MAX];
    SL_TRY(fs_path(st, rel, path, err));
    sl_status status = fs_resolve(st, path, rel, dir, err);
    if (status != SL_ENOTFOUND || !make)
        return status;
    for (size_t i = 1; i <= rel_len; i++) {
        if (i < rel_len && rel[i] != '/')
            continue;
        rel[i] = '\0';
        status = fs_make_component(st, rel, err);
        if (i < rel_len)
            rel[i] = '/';
        SL_TRY(status);
    }
    status = fs_resolve(st, path, rel, dir, err);
    if (status == SL_ENOTFOUND)
        return sl_error_set(err, SL_EIO, NULL, "directory %s vanished after mkdir", path);
    return status;
}

/* ---- writes ----------------------------------------------------------------- */

/* Write all `n` bytes to `fd`, continuing after short writes.  With
 * `refused` (a direct write), a write failing with EINVAL stops it with
 * `*refused` set and no error, `*done` bytes having gone through. */
static sl_status
fs_write_all(const struct fs_store *st, int fd, const uint8_t *p, size_t n, const char *path,
             size_t *done, bool *refused, struct sl_error *err)
{
    *done = 0;
    while (*done < n) {
        int64_t r = st->io->write(st->io->ctx, fd, p + *done, n - *done);
        if (r == -EINTR)
            continue;
        if (r == -EINVAL && refused != NULL) {
            *refused = true;
            return SL_OK;
        }
        if (r < 0)
            return fs_errno(err, (int)r, "cannot write", path);
        if (r == 0)
            return sl_error_set(err, SL_EIO, NULL, "write to %s made no progress at byte %zu", path,
                                *done);
        *done += (size_t)r;
    }
    return SL_OK;
}

#define DIRECT_FROM ((size_t)1 << 20)
#define DIRECT_ALIGN ((size_t)4096)

/* Create the temporary file `tmp` with open flags `extra` added; `*fd`
 * gets the descriptor, or -EINVAL (and SL_OK) when `extra` was refused. */
static sl_status
fs_create(const struct fs_store *st, const char *tmp, int extra, int *fd, struct sl_error *err)
{
    *fd = st->io->open(st->io->ctx, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | extra, 0666);
    if (*fd >= 0 || (*fd == -EINVAL && extra != 0))
        return SL_OK;
    if (*fd == -ENOTDIR)
        return sl_error_set(err, SL_EEXIST, NULL,
                            "a prefix of the key is an object, not a directory");
    return fs_errno(err, *fd, "cannot create", tmp);
}

/* Write the whole blocks of `data` into the new file `tmp` with O_DIRECT;
 * `*body` gets how many bytes that was.  `*refused` (and SL_OK) when the
 * file system would not: then `tmp` does not exist. */
static sl_status
fs_write_direct(struct fs_store *st, const char *tmp, const uint8_t *data, size_t n, size_t *body,
                bool *refused, struct sl_error *err)
{
    *body = n / DIRECT_ALIGN * DIRECT_ALIGN;
    *refused = false;
    int fd;
    SL_TRY(fs_create(st, tmp, O_DIRECT, &fd, err));
    if (fd == -EINVAL) {
        /* Some file systems make the file before refusing the flag. */
        atomic_store_explicit(&st->direct_refused, true, memory_order_relaxed);
        *refused = true;
        int rc = st->io->unlink(st->io->ctx, tmp);
        if (rc < 0 && rc != -ENOENT)
            return fs_errno(err, rc, "cannot remove, after O_DIRECT was refused,", tmp);
        return SL_OK;
    }
    size_t done;
    sl_status status = fs_write_all(st, fd, data, *body, tmp, &done, refused, err);
    /* Refused: alignment this device will not take (then every object
     * would meet it: stop asking), or a short write that left the rest
     * unaligned; either way start again the ordinary way. */
    if (*refused && done == 0)
        atomic_store_explicit(&st->direct_refused, true, memory_order_relaxed);
    int rc = st->io->close(st->io->ctx, fd);
    if (rc < 0 && status == SL_OK && !*refused)
        status = fs_errno(err, rc, "cannot close", tmp);
    if (*refused && status == SL_OK) {
        rc = st->io->unlink(st->io->ctx, tmp);
        if (rc < 0 && rc != -ENOENT)
            status = fs_errno(err, rc, "cannot remove, after a direct write was refused,", tmp);
    }
    return status;
}

/* Fill the temporary file `tmp`: create, write, fsync, close. */
static sl_status
fs_write_tmp(struct fs_store *st, const char *tmp, const void *data, size_t n, unsigned flags,
             struct sl_error *err)
{
    size_t body = 0;
    int fd;
    if (st->direct && (flags & SL__SET_REREAD) == 0 && n >= DIRECT_FROM &&
        (uintptr_t)data % DIRECT_ALIGN == 0 &&
        !atomic_load_explicit(&st->direct_refused, memory_order_relaxed)) {
        bool refused;
        SL_TRY(fs_write_direct(st, tmp, data, n, &body, &refused, err));
        if (refused)
            body = 0;
    }
    if (body > 0) {
        fd = st->io->open(st->io->ctx, tmp, O_WRONLY | O_APPEND | O_CLOEXEC, 0);
        if (fd < 0)
            return fs_errno(err, fd, "cannot reopen", tmp);
    } else {
        SL_TRY(fs_create(st, tmp, 0, &fd, err));
    }
    size_t done;
    sl_status status =
        fs_write_all(st, fd, (const uint8_t *)data + body, n - body, tmp, &done, NULL, err);
    if (status == SL_OK && st->sync_fd < 0) {
        int rc = st->io->fsync(st->io->ctx, fd);
        if (rc < 0)
            status = fs_errno(err, rc, "cannot fsync", tmp);
    }
    /* close can report a deferred write error (NFS): it counts. */
    int rc = st->io->close(st->io->ctx, fd);
    if (rc < 0 && status == SL_OK)
        status = fs_errno(err, rc, "cannot close", tmp);
    return status;
}

static sl_status
fs_set(sl_store *s, const char *key, const void *data, size_t n, unsigned flags,
       struct sl_error *err)
{
    struct fs_store *st = fs_of(s);
    if (st->read_only)
        return sl_error_set(err, SL_EACCES, NULL, "store is read-only");
    char dir[PATH_MAX], tmp[PATH_MAX], path[PATH_MAX];
    const char *base;
    SL_TRY(fs_parent_dir(st, key, true, dir, &base, err));
    uint64_t seq = atomic_fetch_add_explicit(&st->tmp_seq, 1, memory_order_relaxed);
    int a = snprintf(tmp, PATH_MAX, "%s/.sluice-tmp.%ld.%" PRIu64, dir, (long)getpid(), seq);
    int b = snprintf(path, PATH_MAX, "%s/%s", dir, base);
    if (a < 0 || a >= PATH_MAX || b < 0 || b >= PATH_MAX)
        return sl_error_set(err, SL_EINVAL, NULL, "path of key %s is too long",
                            fs_name(st, key, &(struct fs_name){0}));
    sl_status status = fs_write_tmp(st, tmp, data, n, flags, err);
    if (status == SL_OK) {
        int rc = st->io->rename(st->io->ctx, tmp, path);
        if (rc < 0)
            status = fs_errno(err, rc, "cannot rename temporary file to", path);
    }
    if (status != SL_OK) {
        st->io->unlink(st->io->ctx, tmp);
        return status;
    }
    if (!st->durable)
        return SL_OK;
    SL_TRY(fs_fsync_dir(st, dir, err));
    return fs_sync_unsynced(st, dir, err);
}

static sl_status
fs_del(sl_store *s, const char *key, struct sl_error *err)
{
    struct fs_store *st = fs_of(s);
    if (st->read_only)
        return sl_error_set(err, SL_EACCES, NULL, "store is read-only");
    char dir[PATH_MAX], path[PATH_MAX];
    const char *base;
    sl_status status = fs_parent_dir(st, key, false, dir, &base, err);
    if (status == SL_ENOTFOUND)
        return SL_OK;
    SL_TRY(status);
    int b = snprintf(path, PATH_MAX, "%s/%s", dir, base);
    if (b < 0 || b >= PATH_MAX)
        return sl_error_set(err, SL_EINVAL, NULL, "path of key %s is too long",
                            fs_name(st, key, &(struct fs_name){0}));
    int rc = st->io->unlink(st->io->ctx, path);
    if (rc == -ENOENT)
        return SL_OK;
    if (rc == -EISDIR || rc == -EPERM)
        return sl_error_set(err, SL_EEXIST, NULL, "key %s is a directory, not an object",
                            fs_name(st, key, &(struct fs_name){0}));
    if (rc < 0)
        return fs_errno(err, rc, "cannot unlink", path);
    return st->durable ? fs_fsync_dir(st, dir, err) : SL_OK;
}

/* ---- listing ---------------------------------------------------------------- */

/* One directory entry being listed. */
struct fs_entry {
    char *name;      /* owned */
    sl_io_kind kind; /* from the directory, SL_IO_OTHER when unknown */
};

/* The entries of one directory, collected before recursing so that only one
 * directory is open at a time. */
struct fs_entries {
    const struct sl_allocator *alloc;
    struct fs_entry *v;
    size_t n, cap;
    bool failed;
};

/* Append entry `name` of `kind`; a negated errno value on failure. */
static int
fs_entries_add(struct fs_entries *es, const char *name, sl_io_kind kind)
{
    if (es->n == es->cap) {
        size_t cap = es->cap ? es->cap * 2 : 32;
        struct fs_entry *v = sl_alloc(es->alloc, cap * sizeof(*v), 0);
        if (v == NULL) {
            es->failed = true;
            return -ENOMEM;
        }
        if (es->n > 0)
            memcpy(v, es->v, es->n * sizeof(*v));
        sl_free(es->alloc, es->v, es->cap * sizeof(*v));
        es->v = v;
        es->cap = cap;
    }
    char *copy = sl_strdup(es->alloc, name);
    if (copy == NULL) {
        es->failed = true;
        return -ENOMEM;
    }
    es->v[es->n++] = (struct fs_entry){copy, kind};
    return 0;
}

static int
fs_collect(void *arg, const char *name, sl_io_kind kind)
{
    return sl__key_is_temporary(name) ? 0 : fs_entries_add(arg, name, kind);
}

static void
fs_entries_fini(struct fs_entries *es)
{
    for (size_t i = 0; i < es->n; i++)
        sl_free(es->alloc, es->v[i].name, strlen(es->v[i].name) + 1);
    sl_free(es->alloc, es->v, es->cap * sizeof(*es->v));
}

/* Order as the keys would sort: a directory "a" lists keys "a/...". */
static int
fs_entry_cmp(const void *pa, const void *pb)
{
    const struct fs_entry *a = pa, *b = pb;
    const unsigned char *x = (const unsigned char *)a->name, *y = (const unsigned char *)b->name;
    for (;; x++, y++) {
        int cx = *x != '\0' ? *x : a->kind == SL_IO_DIR ? '/' : 0;
        int cy = *y != '\0' ? *y : b->kind == SL_IO_DIR ? '/' : 0;
        if (cx != cy || cx == 0 || cx == '/')
            return cx - cy;
    }
}

struct fs_walk {
    struct fs_store *st;
    const char *prefix;
    size_t prefix_len;
    sl_store_list_fn *fn;
    void *arg;
    struct sl_error *err;
};

static sl_status fs_walk_dir(struct fs_walk *w, const char *rel);

/* Decide what entry `key` (relative path of kind `kind`) is, and list it. */
static sl_status
fs_walk_entry(struct fs_walk *w, char *key, sl_io_kind kind)
{
    struct fs_store *st = w->st;
    char path[PATH_MAX], resolved[PATH_MAX];
    SL_TRY(fs_path(st, key, path, w->err));
    struct sl_io_stat info = {0, kind};
    int rc = st->io->lstat(st->io->ctx, path, &info);
    if (rc == -ENOENT)
        return SL_OK; /* removed while listing */
    if (rc < 0)
        return fs_errno(w->err, rc, "cannot stat", path);
    if (info.kind == SL_IO_LINK) {
        struct sl_error ignored = SL_ERROR_INIT;
        if (fs_resolve(st, path, key, resolved, &ignored) != SL_OK)
            return SL_OK; /* dangling, or leads outside: not part of the store */
        if (st->io->lstat(st->io->ctx, resolved, &info) < 0 || info.kind != SL_IO_FILE)
            return SL_OK; /* links to directories are not followed */
    }
    size_t n = strlen(key);
    if (info.kind == SL_IO_DIR) {
        if (n + 2 > SL_STORE_KEY_MAX)
            return SL_OK;
        key[n] = '/';
        key[n + 1] = '\0';
        bool wanted = strncmp(key, w->prefix, n + 1 < w->prefix_len ? n + 1 : w->prefix_len) == 0;
        sl_status status = wanted ? fs_walk_dir(w, key) : SL_OK;
        key[n] = '\0';
        return status;
    }
    if (info.kind != SL_IO_FILE || strncmp(key, w->prefix, w->prefix_len) != 0)
        return SL_OK;
    return w->fn(w->arg, key, info.size);
}

/* List directory `rel` ("" or ending in '/'). */
static sl_status
fs_walk_dir(struct fs_walk *w, const char *rel)
{
    struct fs_store *st = w->st;
    char path[PATH_MAX];
    SL_TRY(fs_path(st, rel, path, w->err));
    struct fs_entries es = {.alloc = &st->base.alloc};
    int rc = st->io->list_dir(st->io->ctx, path, fs_collect, &es);
    sl_status status = SL_OK;
    if (es.failed)
        status = sl_error_set(w->err, SL_ENOMEM, NULL, "out of memory listing %s", path);
    else if (rc < 0 && rc != -ENOENT && rc != -ENOTDIR)
        status = fs_errno(w->err, rc, "cannot list", path);
    if (status == SL_OK && es.n > 1)
        qsort(es.v, es.n, sizeof(*es.v), fs_entry_cmp);
    size_t rel_len = strlen(rel);
    for (size_t i = 0; i < es.n && status == SL_OK; i++) {
        char key[SL_STORE_KEY_MAX + SL_STORE_KEY_COMPONENT_MAX + 2];
        size_t name_len = strlen(es.v[i].name);
        if (rel_len + name_len > SL_STORE_KEY_MAX)
            continue;
        memcpy(key, rel, rel_len);
        memcpy(key + rel_len, es.v[i].name, name_len + 1);
        status = fs_walk_entry(w, key, es.v[i].kind);
    }
    fs_entries_fini(&es);
    return status;
}

static sl_status
fs_list(sl_store *s, const char *prefix, sl_store_list_fn *fn, void *arg, struct sl_error *err)
{
    struct fs_store *st = fs_of(s);
    struct fs_walk w = {st, prefix, strlen(prefix), fn, arg, err};
    char rel[SL_STORE_KEY_MAX + 1];
    const char *slash = strrchr(prefix, '/');
    size_t rel_len = slash != NULL ? (size_t)(slash - prefix) + 1 : 0;
    memcpy(rel, prefix, rel_len);
    rel[rel_len] = '\0';
    if (rel_len > 0) {
        char path[PATH_MAX], resolved[PATH_MAX];
        SL_TRY(fs_path(st, rel, path, err));
        sl_status status = fs_resolve(st, path, rel, resolved, err);
        if (status == SL_ENOTFOUND)
            return SL_OK;
        SL_TRY(status);
    }
    return fs_walk_dir(&w, rel);
}

/* ---- open and close ---------------------------------------------------------- */

/* sl_store_sync of a store that defers its syncs. */
static sl_status
fs_sync(sl_store *s, struct sl_error *err)
{
    struct fs_store *st = fs_of(s);
    if (st->sync_fd < 0)
        return SL_OK;
    int rc = st->io->syncfs(st->io->ctx, st->sync_fd);
    if (rc < 0)
        return sl_error_set(err, sl__status_from_errno(rc), NULL,
                            "cannot write back the file system of store %s (objects written "
                            "since it opened may be lost to a crash): %s",
                            st->given, strerror(-rc));
    return SL_OK;
}

static void
fs_destroy(sl_store *s)
{
    struct fs_store *st = fs_of(s);
    struct sl_allocator alloc = s->alloc;
    if (st->sync_fd >= 0)
        (void)st->io->close(st->io->ctx, st->sync_fd);
    while (st->unsynced != NULL)
        fs_unsynced_remove(st, st->unsynced->id);
    pthread_mutex_destroy(&st->unsynced_lock);
    sl__ahead_fini(&st->ahead);
    sl_free(&alloc, st->root, st->root_len + 1);
    sl_free(&alloc, st->given, strlen(st->given) + 1);
    sl_free(&alloc, st, sizeof(*st));
}

#define FS_VTABLE_COMMON                                                                          \
    .kind = "fs", .set_writers = 1, .reader_open = fs_reader_open, .reader_read = fs_reader_read, \
    .reader_close = fs_reader_close, .set = fs_set, .del = fs_del, .list = fs_list,               \
    .sync = fs_sync, .destroy = fs_destroy

static const struct sl__store_vtable fs_vtable = {
    FS_VTABLE_COMMON,
    .prefetch = fs_prefetch,
    .prefetch_ranges = fs_prefetch_ranges,
};

/* A store that reads nothing ahead (read_ahead_bytes 0, or an I/O table
 * without `willneed`): sl_store_reads_ahead says so, and no hint is kept. */
static const struct sl__store_vtable fs_vtable_no_ahead = {FS_VTABLE_COMMON};

/* The descriptor of `resolved` (root `root`) that a store deferring its
 * syncs hands syncfs, opened before anything is written. */
static sl_status
fs_open_sync_fd(const struct sl_io_table *io, const struct sl_fs_store_opts *o,
                const char *resolved, const char *root, int *fd, struct sl_error *err)
{
    if (o->durable || o->read_only)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "store %s: defer_sync is for writable stores that are not durable "
                            "object by object (durable %d, read_only %d)",
                            root, (int)o->durable, (int)o->read_only);
    if (io->syncfs == NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "store %s: defer_sync needs an I/O table with syncfs", root);
    *fd = io->open(io->ctx, resolved, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (*fd < 0)
        return fs_errno(err, *fd, "cannot open, to sync it later, store root", root);
    return SL_OK;
}

/* mkdir -p `root` through the I/O table. */
static sl_status
fs_make_root(const struct sl_io_table *io, const char *root, struct sl_error *err)
{
    char path[PATH_MAX];
    size_t n = strlen(root);
    if (n >= PATH_MAX)
        return sl_error_set(err, SL_EINVAL, NULL, "store root is too long");
    memcpy(path, root, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (i < n && path[i] != '/')
            continue;
        path[i] = '\0';
        int rc = io->mkdir(io->ctx, path, 0777);
        if (rc < 0 && rc != -EEXIST)
            return fs_errno(err, rc, "cannot make store root", path);
        if (i < n)
            path[i] = '/';
    }
    return SL_OK;
}

sl_store *
sl_store_open_fs(const char *root, const struct sl_fs_store_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_fs_store_opts o = opts != NULL ? *opts : SL_FS_STORE_OPTS_DEFAULT;
    const struct sl_io_table *io = o.io != NULL ? o.io : sl_io_table_default();
    if (root == NULL || root[0] == '\0') {
        sl_error_set(err, SL_EINVAL, NULL, "store root is missing");
        return NULL;
    }
    if (o.create && !o.read_only && fs_make_root(io, root, err) != SL_OK)
        return NULL;
    char resolved[PATH_MAX];
    struct sl_io_stat info;
    int rc = io->realpath(io->ctx, root, resolved, PATH_MAX);
    if (rc == 0)
        rc = io->lstat(io->ctx, resolved, &info);
    if (rc < 0) {
        fs_errno(err, rc, "cannot open store root", root);
        return NULL;
    }
    if (info.kind != SL_IO_DIR) {
        sl_error_set(err, SL_EEXIST, NULL, "store root %s is not a directory", root);
        return NULL;
    }
    int sync_fd = -1;
    if (o.defer_sync && fs_open_sync_fd(io, &o, resolved, root, &sync_fd, err) != SL_OK)
        return NULL;
    struct sl_allocator alloc = o.alloc != NULL ? *o.alloc : sl_allocator_default();
    struct fs_store *st = sl_alloc(&alloc, sizeof(*st), 0);
    size_t len = strcmp(resolved, "/") == 0 ? 0 : strlen(resolved);
    char *copy = sl_alloc(&alloc, len + 1, 1);
    char *given = sl_strdup(&alloc, root);
    if (st == NULL || copy == NULL || given == NULL) {
        sl_free(&alloc, st, sizeof(*st));
        sl_free(&alloc, copy, len + 1);
        if (given != NULL)
            sl_free(&alloc, given, strlen(given) + 1);
        if (sync_fd >= 0)
            (void)io->close(io->ctx, sync_fd);
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory opening store %s", root);
        return NULL;
    }
    memcpy(copy, resolved, len);
    copy[len] = '\0';
    bool ahead = o.read_ahead_bytes > 0 && io->willneed != NULL;
    sl__store_init(&st->base, ahead ? &fs_vtable : &fs_vtable_no_ahead, &alloc);
    st->io = io;
    st->root = copy;
    st->root_len = len;
    st->given = given;
    st->base.given = given;
    st->durable = o.durable;
    st->read_only = o.read_only;
    st->direct = o.direct_writes;
    st->sync_fd = sync_fd;
    atomic_init(&st->direct_refused, false);
    atomic_init(&st->tmp_seq, 0);
    st->unsynced = NULL;
    pthread_mutex_init(&st->unsynced_lock, NULL);
    sl__ahead_init(&st->ahead, o.read_ahead_bytes, fs_give_hint, st, &alloc);
    return &st->base;
}

/* ---- leftovers of killed writers ----------------------------------------------- */

/* True when `name` is ".sluice-tmp.<pid>.<n>" of a process that no longer
 * runs on this machine.  This process's own files may be in flight. */
static bool
fs_tmp_is_stale(const char *name)
{
    if (!sl__key_is_temporary(name))
        return false;
    const char *p = name + sizeof(".sluice-tmp.") - 1;
    char *end;
    errno = 0;
    long pid = strtol(p, &end, 10);
    if (errno != 0 || end == p || *end != '.' || pid <= 0 || pid == (long)getpid())
        return false;
    return sl__pid_gone(pid);
}

/* Collect what a sweep must look at: subdirectories, stale temporary files
 * and entries of unknown kind; other files are skipped. */
static int
fs_sweep_collect(void *arg, const char *name, sl_io_kind kind)
{
    if (kind == SL_IO_LINK || (kind == SL_IO_FILE && !fs_tmp_is_stale(name)))
        return 0;
    return fs_entries_add(arg, name, kind);
}

/* Remove `file` if it is a stale temporary file; set `*removed`. */
static sl_status
fs_sweep_file(struct fs_store *st, const char *file, const char *name, bool *removed,
              struct sl_error *err)
{
    *removed = false;
    if (!fs_tmp_is_stale(name))
        return SL_OK;
    int rc = st->io->unlink(st->io->ctx, file);
    if (rc < 0 && rc != -ENOENT)
        return fs_errno(err, rc, "cannot remove leftover", file);
    *removed = rc == 0;
    return SL_OK;
}

/* Sweep directory `path` (resolved, inside the root) and, `depth` levels
 * down at most, its subdirectories (symbolic links are not followed). */
static sl_status
fs_sweep_dir(struct fs_store *st, const char *path, int depth, uint64_t *n_removed,
             struct sl_error *err)
{
    struct fs_entries es = {.alloc = &st->base.alloc};
    int rc = st->io->list_dir(st->io->ctx, path, fs_sweep_collect, &es);
    sl_status status = SL_OK;
    if (es.failed)
        status = sl_error_set(err, SL_ENOMEM, NULL, "out of memory listing %s", path);
    else if (rc < 0 && rc != -ENOENT && rc != -ENOTDIR)
        status = fs_errno(err, rc, "cannot list", path);
    bool any = false;
    for (size_t i = 0; i < es.n && status == SL_OK; i++) {
        char sub[PATH_MAX];
        int n = snprintf(sub, PATH_MAX, "%s/%s", path, es.v[i].name);
        if (n < 0 || n >= PATH_MAX)
            continue;
        struct sl_io_stat info = {0, es.v[i].kind};
        if (info.kind == SL_IO_OTHER && st->io->lstat(st->io->ctx, sub, &info) < 0)
            continue; /* gone meanwhile */
        bool removed = false;
        if (info.kind == SL_IO_FILE)
            status = fs_sweep_file(st, sub, es.v[i].name, &removed, err);
        else if (info.kind == SL_IO_DIR && depth > 0)
            status = fs_sweep_dir(st, sub, depth - 1, n_removed, err);
        *n_removed += removed;
        any = any || removed;
    }
    if (status == SL_OK && any && st->durable)
        status = fs_fsync_dir(st, path, err);
    fs_entries_fini(&es);
    return status;
}

sl_status
sl__store_sweep(sl_store *s, const char *prefix, uint64_t *n_removed, struct sl_error *err)
{
    *n_removed = 0;
    if (s->vt != &fs_vtable)
        return SL_OK;
    struct fs_store *st = fs_of(s);
    if (st->read_only)
        return SL_OK;
    SL_TRY(sl__key_prefix_check(prefix, err));
    char rel[SL_STORE_KEY_MAX + 1];
    const char *slash = strrchr(prefix, '/');
    size_t rel_len = slash != NULL ? (size_t)(slash - prefix) : 0;
    memcpy(rel, prefix, rel_len);
    rel[rel_len] = '\0';
    char path[PATH_MAX], resolved[PATH_MAX];
    SL_TRY(fs_path(st, rel, path, err));
    sl_status status = fs_resolve(st, path, rel, resolved, err);
    if (status == SL_ENOTFOUND)
        return SL_OK;
    SL_TRY(status);
    /* Below an array, chunk keys have "c" and one component per dimension. */
    return fs_sweep_dir(st, resolved, SL_MAX_RANK + 1, n_removed, err);
}
