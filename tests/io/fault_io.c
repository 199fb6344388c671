/* SPDX-License-Identifier: MIT */
/* The fault-injecting I/O table of fault_io.h. */
#include "fault_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

static struct sl_fault_io *
fault_of(void *ctx)
{
    return ctx;
}

/* Count a call; return the planned failure (negated errno) or 0. */
static int
fault_tick(struct sl_fault_io *f, sl_fault_op op)
{
    uint64_t n = atomic_fetch_add(&f->calls[op], 1) + 1;
    if (f->fail_op == (int)op && n >= f->fail_at &&
        (n < f->fail_at + f->fail_times || f->fail_sticky))
        return -f->fail_errno;
    return 0;
}

/* What the planned mutating-call fault does to this call. */
enum mut_action { MUT_NONE, MUT_FAIL, MUT_SHORT };

/* Count a mutating call of `op`; decide whether the planned fault hits it. */
static enum mut_action
fault_mutating(struct sl_fault_io *f, sl_fault_op op)
{
    uint64_t n = atomic_fetch_add(&f->n_mutating, 1) + 1;
    if (op != SL_FAULT_WRITE && f->mut_kind != SL_FAULT_ERRNO)
        return MUT_NONE;
    if (op == SL_FAULT_WRITE) {
        uint64_t w = atomic_fetch_add(&f->n_mut_writes, 1) + 1;
        if (atomic_exchange(&f->mut_next_write_fails, false)) {
            atomic_store(&f->mut_fired_op, (int)op);
            return MUT_FAIL;
        }
        if (f->mut_kind != SL_FAULT_ERRNO)
            n = w; /* the short kinds count writes */
    }
    if (f->mut_fail_at == 0 || n != f->mut_fail_at)
        return MUT_NONE;
    if (f->mut_kind == SL_FAULT_ERRNO) {
        atomic_store(&f->mut_fired_op, (int)op);
        return MUT_FAIL;
    }
    atomic_store(&f->mut_fired_op, (int)op);
    if (f->mut_kind == SL_FAULT_SHORT_ERRNO)
        atomic_store(&f->mut_next_write_fails, true);
    return MUT_SHORT;
}

static int
fault_open(void *ctx, const char *path, int flags, unsigned mode)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_OPEN);
    if (rc != 0)
        return rc;
    bool writes = (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0;
    if (writes && fault_mutating(f, SL_FAULT_OPEN) == MUT_FAIL)
        return -f->mut_errno;
    if ((flags & O_DIRECT) != 0)
        atomic_fetch_add(&f->n_direct_opens, 1);
    return f->inner->open(f->inner->ctx, path, flags, mode);
}

static int
fault_close(void *ctx, int fd)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_CLOSE);
    int real = f->inner->close(f->inner->ctx, fd); /* never leak the descriptor */
    return rc != 0 ? rc : real;
}

static int64_t
fault_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_PREAD);
    if (rc != 0)
        return rc;
    return f->inner->pread(f->inner->ctx, fd, buf, n, off);
}

static int64_t
fault_write(void *ctx, int fd, const void *buf, size_t n)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_WRITE);
    if (rc != 0)
        return rc;
    enum mut_action act = fault_mutating(f, SL_FAULT_WRITE);
    if (act == MUT_FAIL)
        return -f->mut_errno;
    if (act == MUT_SHORT && n > 1)
        n /= 2;
    if (f->write_max > 0 && n > f->write_max)
        n = f->write_max;
    return f->inner->write(f->inner->ctx, fd, buf, n);
}

static int
fault_fsync(void *ctx, int fd)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_FSYNC);
    if (rc != 0)
        return rc;
    if (fault_mutating(f, SL_FAULT_FSYNC) == MUT_FAIL)
        return -f->mut_errno;
    return f->inner->fsync(f->inner->ctx, fd);
}

static int
fault_fstat(void *ctx, int fd, struct sl_io_stat *st)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_FSTAT);
    if (rc != 0)
        return rc;
    return f->inner->fstat(f->inner->ctx, fd, st);
}

static int
fault_lstat(void *ctx, const char *path, struct sl_io_stat *st)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_LSTAT);
    if (rc != 0)
        return rc;
    return f->inner->lstat(f->inner->ctx, path, st);
}

static void
fault_note_target(struct sl_fault_io *f, const char *to)
{
    pthread_mutex_lock(&f->lock);
    unsigned i = 0;
    while (i < f->n_targets && strcmp(f->targets[i], to) != 0)
        i++;
    if (i == f->n_targets && i < SL_FAULT_MAX_TARGETS) {
        f->targets[i] = strdup(to);
        f->target_renames[i] = 0;
        f->n_targets++;
    }
    if (i < f->n_targets)
        f->target_renames[i]++;
    pthread_mutex_unlock(&f->lock);
}

static int
fault_rename(void *ctx, const char *from, const char *to)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_RENAME);
    if (rc != 0)
        return rc;
    if (fault_mutating(f, SL_FAULT_RENAME) == MUT_FAIL)
        return -f->mut_errno;
    rc = f->inner->rename(f->inner->ctx, from, to);
    if (rc == 0)
        fault_note_target(f, to);
    return rc;
}

static int
fault_unlink(void *ctx, const char *path)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_UNLINK);
    if (rc != 0)
        return rc;
    if (fault_mutating(f, SL_FAULT_UNLINK) == MUT_FAIL)
        return -f->mut_errno;
    return f->inner->unlink(f->inner->ctx, path);
}

static int
fault_mkdir(void *ctx, const char *path, unsigned mode)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_MKDIR);
    if (rc != 0)
        return rc;
    if (fault_mutating(f, SL_FAULT_MKDIR) == MUT_FAIL)
        return -f->mut_errno;
    return f->inner->mkdir(f->inner->ctx, path, mode);
}

static int
fault_realpath(void *ctx, const char *path, char *resolved, size_t size)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_REALPATH);
    if (rc != 0)
        return rc;
    return f->inner->realpath(f->inner->ctx, path, resolved, size);
}

static int
fault_list_dir(void *ctx, const char *path, sl_io_dir_fn *fn, void *arg)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_LIST_DIR);
    if (rc != 0)
        return rc;
    return f->inner->list_dir(f->inner->ctx, path, fn, arg);
}

static int
fault_syncfs(void *ctx, int fd)
{
    struct sl_fault_io *f = fault_of(ctx);
    int rc = fault_tick(f, SL_FAULT_SYNCFS);
    if (rc != 0)
        return rc;
    if (fault_mutating(f, SL_FAULT_SYNCFS) == MUT_FAIL)
        return -f->mut_errno;
    return f->inner->syncfs(f->inner->ctx, fd);
}

void
sl_fault_io_init(struct sl_fault_io *f)
{
    memset(f, 0, sizeof(*f));
    f->inner = sl_io_table_default();
    f->fail_op = -1;
    f->fail_times = 1;
    atomic_init(&f->mut_fired_op, -1);
    pthread_mutex_init(&f->lock, NULL);
    f->table = (struct sl_io_table){
        .ctx = f,
        .open = fault_open,
        .close = fault_close,
        .pread = fault_pread,
        .write = fault_write,
        .fsync = fault_fsync,
        .fstat = fault_fstat,
        .lstat = fault_lstat,
        .rename = fault_rename,
        .unlink = fault_unlink,
        .mkdir = fault_mkdir,
        .realpath = fault_realpath,
        .list_dir = fault_list_dir,
        .syncfs = fault_syncfs,
    };
}

void
sl_fault_io_fini(struct sl_fault_io *f)
{
    for (unsigned i = 0; i < f->n_targets; i++)
        free(f->targets[i]);
    f->n_targets = 0;
    pthread_mutex_destroy(&f->lock);
}

void
sl_fault_io_reset(struct sl_fault_io *f)
{
    for (int i = 0; i < SL_FAULT_OP_COUNT_; i++)
        atomic_store(&f->calls[i], 0);
    atomic_store(&f->n_direct_opens, 0);
    f->fail_op = -1;
    f->fail_at = 0;
    f->fail_times = 1;
    f->fail_sticky = false;
    f->write_max = 0;
    atomic_store(&f->n_mutating, 0);
    atomic_store(&f->n_mut_writes, 0);
    f->mut_fail_at = 0;
    atomic_store(&f->mut_fired_op, -1);
    atomic_store(&f->mut_next_write_fails, false);
    pthread_mutex_lock(&f->lock);
    for (unsigned i = 0; i < f->n_targets; i++)
        free(f->targets[i]);
    f->n_targets = 0;
    pthread_mutex_unlock(&f->lock);
}

void
sl_fault_io_fail(struct sl_fault_io *f, sl_fault_op op, uint64_t at, int errno_value)
{
    f->fail_op = (int)op;
    f->fail_at = atomic_load(&f->calls[op]) + at;
    f->fail_times = 1;
    f->fail_errno = errno_value;
}

void
sl_fault_io_fail_times(struct sl_fault_io *f, sl_fault_op op, uint64_t at, uint64_t times,
                       int errno_value)
{
    sl_fault_io_fail(f, op, at, errno_value);
    f->fail_times = times;
}

void
sl_fault_io_fail_mutating(struct sl_fault_io *f, uint64_t at, sl_fault_kind kind, int errno_value)
{
    f->mut_kind = kind;
    f->mut_errno = errno_value;
    atomic_store(&f->mut_fired_op, -1);
    atomic_store(&f->mut_next_write_fails, false);
    f->mut_fail_at =
        (kind == SL_FAULT_ERRNO ? atomic_load(&f->n_mutating) : atomic_load(&f->n_mut_writes)) + at;
}

uint64_t
sl_fault_io_mutating_calls(struct sl_fault_io *f)
{
    return atomic_load(&f->n_mutating);
}

uint64_t
sl_fault_io_mutating_writes(struct sl_fault_io *f)
{
    return atomic_load(&f->n_mut_writes);
}

int
sl_fault_io_fired(struct sl_fault_io *f)
{
    return atomic_load(&f->mut_fired_op);
}

uint64_t
sl_fault_io_calls(struct sl_fault_io *f, sl_fault_op op)
{
    return atomic_load(&f->calls[op]);
}

unsigned
sl_fault_io_renames_to(struct sl_fault_io *f, const char *suffix)
{
    unsigned n = 0;
    size_t sl = strlen(suffix);
    pthread_mutex_lock(&f->lock);
    for (unsigned i = 0; i < f->n_targets; i++) {
        size_t tl = strlen(f->targets[i]);
        if (tl >= sl && strcmp(f->targets[i] + tl - sl, suffix) == 0)
            n += f->target_renames[i];
    }
    pthread_mutex_unlock(&f->lock);
    return n;
}

const char *
sl_fault_op_name(sl_fault_op op)
{
    static const char *const names[SL_FAULT_OP_COUNT_] = {
        "open",   "close",  "pread", "write",    "fsync",    "fstat",  "lstat",
        "rename", "unlink", "mkdir", "realpath", "list_dir", "syncfs",
    };
    return (unsigned)op < SL_FAULT_OP_COUNT_ ? names[op] : "?";
}
