/* SPDX-License-Identifier: MIT */
/*
 * Out of space, for real: a child process mounts a 1 MiB tmpfs in a
 * private mount namespace (so the mount vanishes with it, whatever
 * happens), fills it until about two new shards fit, and commits a
 * transaction writing four.  The shards that did not fit must be reported
 * failed (per chunk, through on_unit), be unchanged on disk, and leave no
 * temporary file; every chunk reported written must read back, also after
 * reopening the store; once space is freed, a new transaction writes the
 * failed shards.  Needs root (CAP_SYS_ADMIN); skipped with a message
 * where mounting is not permitted.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sluice.h>

#include "testutil.h"

TestSuite(io_txn_enospc, .timeout = 120.0);

/* [64, 1024] uint16, inner chunks [64, 64] (8 KiB), shards [64, 256]:
 * four shards of four chunks, 32 KiB each when incompressible. */
#define ROWS 64
#define COLS 1024
#define N_SHARDS 4
#define SKIP_EXIT 77

/* ---- the child's reporting ------------------------------------------------------- */

static int report_fd = -1;
static int check_line; /* of the failed CHECK */

static _Noreturn void child_exit(int code, const char *fmt, ...) SL_PRINTF(2, 3);

/* Report `fmt` to the parent and exit with `code`. */
static void
child_exit(int code, const char *fmt, ...)
{
    char msg[600];
    int at = check_line > 0 ? snprintf(msg, sizeof(msg), "line %d: ", check_line) : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg + at, sizeof(msg) - (size_t)at, fmt, ap);
    va_end(ap);
    if (n > 0 && write(report_fd, msg, strlen(msg)) < 0)
        code = 3;
    _exit(code);
}

#define CHECK(cond, ...)                \
    do {                                \
        if (!(cond)) {                  \
            check_line = __LINE__;      \
            child_exit(1, __VA_ARGS__); \
        }                               \
    } while (0)

/* ---- the scenario, inside the tmpfs ------------------------------------------------ */

static uint16_t
old_value(size_t i)
{
    return (uint16_t)(3 + i % 2);
}

static uint16_t
new_value(size_t i)
{
    uint32_t x = (uint32_t)i * 2654435761u;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    return (uint16_t)(x | 1); /* noise: incompressible */
}

struct outcome {
    sl_status status[N_SHARDS];
    int calls[N_SHARDS];
};

static void
record(void *arg, const uint64_t *unit, sl_status status, const struct sl_error *err)
{
    (void)err;
    struct outcome *o = arg;
    o->status[unit[1]] = status;
    o->calls[unit[1]]++;
}

static int
count_temporaries(const char *dir)
{
    char sub[512];
    int n = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        n += strncmp(e->d_name, ".sluice-tmp.", 12) == 0;
        snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
        if (e->d_type == DT_DIR)
            n += count_temporaries(sub);
    }
    closedir(d);
    return n;
}

/* Leave about `keep` bytes free on the file system of `dir`. */
static void
fill_up(const char *path, const char *dir, uint64_t keep)
{
    struct statvfs vs;
    CHECK(statvfs(dir, &vs) == 0, "statvfs: %s", strerror(errno));
    uint64_t avail = (uint64_t)vs.f_bavail * vs.f_frsize;
    CHECK(avail > keep, "only %llu bytes free", (unsigned long long)avail);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0, "filler: %s", strerror(errno));
    static const char block[4096];
    for (uint64_t left = avail - keep; left > 0;) {
        size_t n = left < sizeof(block) ? (size_t)left : sizeof(block);
        CHECK(write(fd, block, n) == (ssize_t)n, "filler: %s", strerror(errno));
        left -= n;
    }
    close(fd);
}

/* Every chunk reads back new where its shard was reported written, old
 * where it failed. */
static void
check_chunks(sl_array *a, const struct outcome *o, const char *when)
{
    struct sl_array_iter shards, chunks;
    uint16_t buf[64 * 64];
    CHECK(sl_array_iter_shards(a, NULL, &shards, NULL) == SL_OK, "iterate");
    while (sl_array_iter_next(&shards)) {
        bool ok = o->status[shards.iter.coords[1]] == SL_OK;
        CHECK(sl_array_iter_shard_chunks(a, shards.iter.coords, &chunks, NULL) == SL_OK, "chunks");
        while (sl_array_iter_next(&chunks)) {
            struct sl_error err = SL_ERROR_INIT;
            CHECK(sl_array_read_chunk(a, chunks.iter.coords, buf, sizeof(buf), NULL, NULL, &err) ==
                      SL_OK,
                  "%s: read: %s", when, err.text);
            for (size_t y = 0; y < 64; y++)
                for (size_t x = 0; x < 64; x++) {
                    size_t i =
                        (chunks.iter.chunk.start[0] + y) * COLS + chunks.iter.chunk.start[1] + x;
                    uint16_t want = ok ? new_value(i) : old_value(i);
                    CHECK(buf[y * 64 + x] == want,
                          "%s: chunk (%llu, %llu) of a shard reported %s reads %u, not %u", when,
                          (unsigned long long)chunks.iter.coords[0],
                          (unsigned long long)chunks.iter.coords[1], ok ? "written" : "failed",
                          buf[y * 64 + x], want);
                }
        }
    }
}

static sl_array *
open_array(const char *root, sl_store **s)
{
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.durable = true;
    struct sl_error err = SL_ERROR_INIT;
    *s = sl_store_open_fs(root, &so, &err);
    CHECK(*s != NULL, "store: %s", err.text);
    sl_array *a = sl_array_open(*s, "a", NULL, &err);
    CHECK(a != NULL, "open: %s", err.text);
    return a;
}

/* Returns the shards written and failed by the full commit. */
static void
scenario(const char *mnt, int *n_written, int *n_failed_out)
{
    char root[300], filler[300];
    snprintf(root, sizeof(root), "%s/store", mnt);
    snprintf(filler, sizeof(filler), "%s/filler", mnt);
    uint16_t *data = malloc(ROWS * COLS * 2);
    CHECK(data != NULL, "out of memory");
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.durable = true;
    sl_store *s = sl_store_open_fs(root, &so, NULL);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    sp.shape[0] = sp.chunk_shape[0] = sp.shard_shape[0] = ROWS;
    sp.shape[1] = COLS;
    sp.chunk_shape[1] = 64;
    sp.shard_shape[1] = 256;
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    CHECK(a != NULL, "create");
    struct sl_region whole = sl_region_whole(2, sp.shape);
    for (size_t i = 0; i < ROWS * COLS; i++)
        data[i] = old_value(i);
    CHECK(sl_array_write_region(a, &whole, data, ROWS * COLS * 2, NULL, NULL, NULL) == SL_OK,
          "old data");
    /* A new shard takes 9 pages of 4 KiB; its temporary file exists next
     * to the old one until the rename.  Room for two, not three. */
    fill_up(filler, mnt, 23 * 4096);
    for (size_t i = 0; i < ROWS * COLS; i++)
        data[i] = new_value(i);
    struct outcome o = {0};
    struct sl_txn_opts to = SL_TXN_OPTS_DEFAULT;
    to.on_unit = record;
    to.on_unit_arg = &o;
    sl_txn *t = sl_txn_open(a, &to, NULL);
    CHECK(t != NULL, "begin");
    struct sl_error err = SL_ERROR_INIT;
    CHECK(sl_txn_write_region(t, &whole, data, ROWS * COLS * 2, NULL, &err) == SL_OK, "stage: %s",
          err.text);
    sl_status st = sl_txn_commit(t, NULL, &err);
    sl_txn_close(t);
    int n_ok = 0, n_failed = 0;
    for (int i = 0; i < N_SHARDS; i++) {
        CHECK(o.calls[i] == 1, "shard %d reported %d times", i, o.calls[i]);
        CHECK(o.status[i] == SL_OK || o.status[i] == SL_ENOSPC, "shard %d: %s", i,
              sl_status_name(o.status[i]));
        n_ok += o.status[i] == SL_OK;
        n_failed += o.status[i] != SL_OK;
    }
    CHECK(n_ok >= 1 && n_failed >= 1,
          "%d shards written, %d failed: the file system was not sized "
          "for a partial failure",
          n_ok, n_failed);
    CHECK(st == SL_ENOSPC && strstr(err.text, "No space left") != NULL, "commit: %s: %s",
          sl_status_name(st), err.text);
    CHECK(count_temporaries(root) == 0, "temporary files were left behind");
    check_chunks(a, &o, "after the commit");
    sl_array_unref(a);
    sl_store_unref(s);
    /* As after a restart: reopen and look again. */
    a = open_array(root, &s);
    check_chunks(a, &o, "after reopening");
    /* With space again, the failed shards can be written. */
    CHECK(unlink(filler) == 0, "unlink filler");
    t = sl_txn_open(a, NULL, NULL);
    for (uint64_t sx = 0; sx < N_SHARDS; sx++) {
        if (o.status[sx] == SL_OK)
            continue;
        struct sl_region r = {.rank = 2, .start = {0, sx * 256}, .stop = {ROWS, sx * 256 + 256}};
        uint16_t *box = malloc(ROWS * 256 * 2);
        for (size_t y = 0; y < ROWS; y++)
            memcpy(box + y * 256, data + y * COLS + sx * 256, 256 * 2);
        CHECK(sl_txn_write_region(t, &r, box, ROWS * 256 * 2, NULL, NULL) == SL_OK, "retry");
        free(box);
        o.status[sx] = SL_OK;
    }
    CHECK(sl_txn_commit(t, NULL, &err) == SL_OK, "retry: %s", err.text);
    sl_txn_close(t);
    check_chunks(a, &o, "after the retry");
    sl_array_unref(a);
    sl_store_unref(s);
    free(data);
    *n_written = n_ok;
    *n_failed_out = n_failed;
}

/* In a child: a private mount namespace, the tmpfs, the scenario. */
static _Noreturn void
child_run(const char *mnt)
{
    if (unshare(CLONE_NEWNS) != 0)
        child_exit(SKIP_EXIT, "cannot make a mount namespace (%s): run as root to test ENOSPC",
                   strerror(errno));
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        child_exit(SKIP_EXIT, "cannot make mounts private (%s)", strerror(errno));
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") != 0)
        child_exit(SKIP_EXIT, "cannot mount a tmpfs (%s): run as root to test ENOSPC",
                   strerror(errno));
    int n_ok = 0, n_failed = 0;
    scenario(mnt, &n_ok, &n_failed);
    if (umount(mnt) != 0)
        child_exit(1, "umount: %s", strerror(errno));
    child_exit(0, "full tmpfs: %d shards written, %d failed with ENOSPC", n_ok, n_failed);
}

Test(io_txn_enospc, failed_shards_are_reported_per_chunk_and_left_unchanged)
{
    char mnt[512];
    snprintf(mnt, sizeof(mnt), "%s", sl_test_tmpdir("txn-enospc"));
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        report_fd = p[1];
        child_run(mnt);
    }
    close(p[1]);
    char msg[600] = "";
    size_t have = 0;
    for (ssize_t r; (r = read(p[0], msg + have, sizeof(msg) - 1 - have)) > 0;)
        have += (size_t)r;
    msg[have] = '\0';
    close(p[0]);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    sl_test_rmtree(mnt);
    if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_EXIT)
        cr_skip_test("%s", msg);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s (status %d)", msg, status);
    fprintf(stderr, "io_txn_enospc: %s\n", msg);
}
