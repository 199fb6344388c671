/* SPDX-License-Identifier: MIT */
/*
 * The default I/O table: thin wrappers over the C library that return
 * negated errno values instead of setting `errno`, so that a test's table
 * can fail a call without touching thread-local state.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_internal.h"

static int
neg_errno(void)
{
    return errno != 0 ? -errno : -EIO;
}

static int
io_open(void *ctx, const char *path, int flags, unsigned mode)
{
    (void)ctx;
    int fd;
    do
        fd = open(path, flags, (mode_t)mode);
    while (fd < 0 && errno == EINTR);
    return fd >= 0 ? fd : neg_errno();
}

static int
io_close(void *ctx, int fd)
{
    (void)ctx;
    /* No retry on EINTR: on Linux the descriptor is gone either way. */
    return close(fd) == 0 ? 0 : neg_errno();
}

static int64_t
io_pread(void *ctx, int fd, void *buf, size_t n, uint64_t offset)
{
    (void)ctx;
    if (offset > (uint64_t)INT64_MAX)
        return -EINVAL;
    ssize_t r;
    do
        r = pread(fd, buf, n, (off_t)offset);
    while (r < 0 && errno == EINTR);
    return r >= 0 ? (int64_t)r : neg_errno();
}

static int64_t
io_write(void *ctx, int fd, const void *buf, size_t n)
{
    (void)ctx;
    ssize_t r = write(fd, buf, n);
    return r >= 0 ? (int64_t)r : neg_errno();
}

static int
io_fsync(void *ctx, int fd)
{
    (void)ctx;
    return fsync(fd) == 0 ? 0 : neg_errno();
}

static int
io_syncfs(void *ctx, int fd)
{
    (void)ctx;
    return syncfs(fd) == 0 ? 0 : neg_errno();
}

static int
io_willneed(void *ctx, int fd, uint64_t offset, uint64_t length)
{
    (void)ctx;
    if (offset > (uint64_t)INT64_MAX || length > (uint64_t)INT64_MAX)
        return -EINVAL;
    /* posix_fadvise returns the error number rather than setting errno. */
    int rc = posix_fadvise(fd, (off_t)offset, (off_t)length, POSIX_FADV_WILLNEED);
    return -rc;
}

static sl_io_kind
kind_of_mode(mode_t m)
{
    if (S_ISREG(m))
        return SL_IO_FILE;
    if (S_ISDIR(m))
        return SL_IO_DIR;
    if (S_ISLNK(m))
        return SL_IO_LINK;
    return SL_IO_OTHER;
}

static int
io_fstat(void *ctx, int fd, struct sl_io_stat *out)
{
    (void)ctx;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return neg_errno();
    out->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    out->kind = kind_of_mode(st.st_mode);
    return 0;
}

static int
io_lstat(void *ctx, const char *path, struct sl_io_stat *out)
{
    (void)ctx;
    struct stat st;
    if (lstat(path, &st) != 0)
        return neg_errno();
    out->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    out->kind = kind_of_mode(st.st_mode);
    return 0;
}

static int
io_rename(void *ctx, const char *from, const char *to)
{
    (void)ctx;
    return rename(from, to) == 0 ? 0 : neg_errno();
}

static int
io_unlink(void *ctx, const char *path)
{
    (void)ctx;
    return unlink(path) == 0 ? 0 : neg_errno();
}

static int
io_mkdir(void *ctx, const char *path, unsigned mode)
{
    (void)ctx;
    return mkdir(path, (mode_t)mode) == 0 ? 0 : neg_errno();
}

static int
io_realpath(void *ctx, const char *path, char *resolved, size_t size)
{
    (void)ctx;
    if (size >= PATH_MAX) /* the common case: no allocation */
        return realpath(path, resolved) != NULL ? 0 : neg_errno();
    char *r = realpath(path, NULL);
    if (r == NULL)
        return neg_errno();
    size_t n = strlen(r);
    int rc = 0;
    if (n >= size)
        rc = -ENAMETOOLONG;
    else
        memcpy(resolved, r, n + 1);
    free(r);
    return rc;
}

static sl_io_kind
kind_of_dirent(const struct dirent *e)
{
    switch (e->d_type) {
    case DT_REG:
        return SL_IO_FILE;
    case DT_DIR:
        return SL_IO_DIR;
    case DT_LNK:
        return SL_IO_LINK;
    case DT_UNKNOWN:
        return SL_IO_OTHER; /* the caller asks lstat */
    default:
        return SL_IO_OTHER;
    }
}

static int
io_list_dir(void *ctx, const char *path, sl_io_dir_fn *fn, void *arg)
{
    (void)ctx;
    DIR *d = opendir(path);
    if (d == NULL)
        return neg_errno();
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (e == NULL) {
            rc = errno != 0 ? -errno : 0;
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        rc = fn(arg, e->d_name, kind_of_dirent(e));
        if (rc != 0)
            break;
    }
    closedir(d);
    return rc;
}

static const struct sl_io_table io_table_default = {
    .ctx = NULL,
    .open = io_open,
    .close = io_close,
    .pread = io_pread,
    .write = io_write,
    .fsync = io_fsync,
    .fstat = io_fstat,
    .lstat = io_lstat,
    .rename = io_rename,
    .unlink = io_unlink,
    .mkdir = io_mkdir,
    .realpath = io_realpath,
    .list_dir = io_list_dir,
    .syncfs = io_syncfs,
    .willneed = io_willneed,
};

const struct sl_io_table *
sl_io_table_default(void)
{
    return &io_table_default;
}
