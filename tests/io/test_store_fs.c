/* SPDX-License-Identifier: MIT */
/*
 * The filesystem store: atomic replacement under injected faults, short
 * writes, durability fsyncs, symbolic links that try to leave the root,
 * read-only stores and temporary files.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sluice.h>

#include "fault_io.h"
#include "store_internal.h"
#include "testutil.h"

static char root[4096];
static char outside[4096];
static struct sl_fault_io fio;

static void
setup(void)
{
    snprintf(root, sizeof(root), "%s", sl_test_tmpdir("fs-root"));
    snprintf(outside, sizeof(outside), "%s", sl_test_tmpdir("fs-outside"));
    sl_fault_io_init(&fio);
}

static void
teardown(void)
{
    sl_test_rmtree(root);
    sl_test_rmtree(outside);
    sl_fault_io_fini(&fio);
}

TestSuite(io_store_fs, .init = setup, .fini = teardown, .timeout = 30.0);

static sl_store *
open_store(bool durable)
{
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.io = &fio.table;
    o.durable = durable;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(root, &o, &err);
    cr_assert_not_null(s, "%s", err.text);
    return s;
}

static void
write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static bool
file_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Number of leftover temporary files directly in `dir`. */
static int
count_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, ".sluice-tmp.", 12) == 0;
    closedir(d);
    return n;
}

static void
expect_value(sl_store *s, const char *key, const char *text)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_get(s, key, NULL, &b, NULL, &err), SL_OK, "%s", err.text);
    cr_assert_eq(b.size, strlen(text), "%s: %zu bytes", key, b.size);
    cr_assert(memcmp(b.data, text, b.size) == 0);
    sl_buf_fini(&b);
}

Test(io_store_fs, objects_are_plain_files_under_the_root)
{
    sl_store *s = open_store(false);
    cr_assert_eq(sl_store_set(s, "a/c/0/1", "data", 4, NULL), SL_OK);
    char path[4200];
    snprintf(path, sizeof(path), "%s/a/c/0/1", root);
    size_t n = 0;
    char *text = sl_test_read_file(path, &n);
    cr_assert_not_null(text);
    cr_assert(n == 4 && memcmp(text, "data", 4) == 0);
    free(text);
    snprintf(path, sizeof(path), "%s/a/c/0", root);
    cr_assert_eq(count_temporaries(path), 0);
    cr_assert_str_eq(sl_store_kind(s), "fs");
    sl_store_unref(s);
}

/* Fail the first call of `op` during a replacing set; the old value must
 * survive and no temporary file may be left. */
static void
check_failed_set_keeps_old(sl_fault_op op, int errno_value, sl_status want)
{
    sl_store *s = open_store(false);
    cr_assert_eq(sl_store_set(s, "d/k", "old", 3, NULL), SL_OK);
    sl_fault_io_fail(&fio, op, 1, errno_value);
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl_store_set(s, "d/k", "new value", 9, &err);
    cr_assert_eq(st, want, "failing %s gave %s: %s", sl_fault_op_name(op), sl_status_name(st),
                 err.text);
    cr_assert_str_eq(err.source, "d/k", "the error names the key");
    sl_fault_io_reset(&fio);
    expect_value(s, "d/k", "old");
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/d", root);
    cr_assert_eq(count_temporaries(dir), 0, "failing %s left a temporary file",
                 sl_fault_op_name(op));
    sl_store_unref(s);
}

Test(io_store_fs, failed_open_keeps_the_old_object)
{
    check_failed_set_keeps_old(SL_FAULT_OPEN, EACCES, SL_EACCES);
}

Test(io_store_fs, failed_write_reports_enospc_and_keeps_the_old_object)
{
    check_failed_set_keeps_old(SL_FAULT_WRITE, ENOSPC, SL_ENOSPC);
}

Test(io_store_fs, failed_fsync_keeps_the_old_object)
{
    check_failed_set_keeps_old(SL_FAULT_FSYNC, EIO, SL_EIO);
}

Test(io_store_fs, failed_close_keeps_the_old_object)
{
    check_failed_set_keeps_old(SL_FAULT_CLOSE, EIO, SL_EIO);
}

Test(io_store_fs, failed_rename_keeps_the_old_object)
{
    check_failed_set_keeps_old(SL_FAULT_RENAME, EXDEV, SL_EIO);
}

Test(io_store_fs, short_writes_are_continued)
{
    sl_store *s = open_store(false);
    char big[1000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)('a' + i % 26);
    fio.write_max = 7;
    cr_assert_eq(sl_store_set(s, "big", big, sizeof(big), NULL), SL_OK);
    cr_assert_geq(sl_fault_io_calls(&fio, SL_FAULT_WRITE), 143);
    fio.write_max = 0;
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "big", NULL, &b, NULL, NULL), SL_OK);
    cr_assert(b.size == sizeof(big) && memcmp(b.data, big, b.size) == 0);
    sl_buf_fini(&b);
    sl_store_unref(s);
}

Test(io_store_fs, each_set_fsyncs_the_file_and_durable_sets_the_directory)
{
    sl_store *s = open_store(false);
    cr_assert_eq(sl_store_set(s, "x/a", "1", 1, NULL), SL_OK);
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_store_set(s, "x/b", "1", 1, NULL), SL_OK);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_FSYNC), 1);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_RENAME), 1);
    cr_assert_eq(sl_fault_io_renames_to(&fio, "/x/b"), 1);
    sl_store_unref(s);

    s = open_store(true);
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_store_set(s, "x/c", "1", 1, NULL), SL_OK);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_FSYNC), 2, "file and directory");
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_store_set(s, "y/z/c", "1", 1, NULL), SL_OK);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_MKDIR), 2);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_FSYNC), 4,
                 "two new directories' parents, the file, its directory");
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_store_delete(s, "x/c", NULL), SL_OK);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_FSYNC), 1, "the directory after unlink");
    sl_store_unref(s);
}

/* defer_sync: sets write and rename without an fsync; sl_store_sync is one
 * syncfs, on the descriptor of the root opened with the store; a failed
 * syncfs is an error naming the root; the objects read back. */
Test(io_store_fs, deferred_syncs_are_one_syncfs_when_asked)
{
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.io = &fio.table;
    o.defer_sync = true;
    struct sl_error err = SL_ERROR_INIT;
    sl_fault_io_reset(&fio);
    sl_store *s = sl_store_open_fs(root, &o, &err);
    cr_assert_not_null(s, "%s", err.text);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_OPEN), 1, "the root, for syncfs");
    for (int i = 0; i < 8; i++) {
        char key[32], value[32];
        snprintf(key, sizeof(key), "d/c/%d", i);
        snprintf(value, sizeof(value), "value %d", i);
        cr_assert_eq(sl_store_set(s, key, value, strlen(value), &err), SL_OK, "%s", err.text);
    }
    cr_assert_eq(sl_store_delete(s, "d/c/7", &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_FSYNC), 0, "no fsync per object");
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_RENAME), 8);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_SYNCFS), 0, "nothing synced before asked");
    cr_assert_eq(sl_store_sync(s, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_SYNCFS), 1);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_FSYNC), 0);
    expect_value(s, "d/c/0", "value 0");
    expect_value(s, "d/c/6", "value 6");
    sl_fault_io_fail(&fio, SL_FAULT_SYNCFS, 1, EIO);
    cr_assert_eq(sl_store_sync(s, &err), SL_EIO);
    cr_assert(strstr(err.text, "cannot write back the file system of store") != NULL &&
                  strstr(err.text, root) != NULL,
              "%s", err.text);
    sl_error_clear(&err);
    cr_assert_eq(sl_store_sync(s, &err), SL_OK, "only the one call failed: %s", err.text);
    uint64_t closes = sl_fault_io_calls(&fio, SL_FAULT_CLOSE);
    sl_store_unref(s);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_CLOSE), closes + 1, "the root's descriptor");

    /* Without the option, sync has nothing to do: each set fsynced. */
    s = open_store(false);
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_store_set(s, "d/c/8", "x", 1, NULL), SL_OK);
    cr_assert_eq(sl_store_sync(s, &err), SL_OK);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_FSYNC), 1);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_SYNCFS), 0);
    sl_store_unref(s);
    sl_store *m = sl_store_create_memory(NULL, NULL);
    cr_assert_eq(sl_store_sync(m, &err), SL_OK, "a memory store has nothing to sync");
    sl_store_unref(m);
}

Test(io_store_fs, deferred_syncs_are_refused_where_they_cannot_hold)
{
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.defer_sync = true;
    o.durable = true;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_store_open_fs(root, &o, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    cr_assert(strstr(err.text, "defer_sync") != NULL, "%s", err.text);
    o.durable = false;
    o.read_only = true;
    sl_error_clear(&err);
    cr_assert_null(sl_store_open_fs(root, &o, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    /* A table without syncfs (one written before it existed). */
    struct sl_io_table t = *sl_io_table_default();
    t.syncfs = NULL;
    o.read_only = false;
    o.io = &t;
    sl_error_clear(&err);
    cr_assert_null(sl_store_open_fs(root, &o, &err));
    cr_assert(strstr(err.text, "needs an I/O table with syncfs") != NULL, "%s", err.text);
    /* The root's open failing fails the open, naming it. */
    o.io = &fio.table;
    sl_fault_io_reset(&fio);
    sl_fault_io_fail(&fio, SL_FAULT_OPEN, 1, EACCES);
    sl_error_clear(&err);
    cr_assert_null(sl_store_open_fs(root, &o, &err));
    cr_assert_eq(err.code, SL_EACCES, "%s", err.text);
    cr_assert(strstr(err.text, root) != NULL, "%s", err.text);
}

/* Read-ahead hints seen by count_willneed: calls, and bytes asked for
 * (0: a whole file). */
static _Atomic int n_willneed;
static _Atomic uint64_t willneed_bytes;

static int
count_willneed(void *ctx, int fd, uint64_t offset, uint64_t length)
{
    atomic_fetch_add(&n_willneed, 1);
    atomic_fetch_add(&willneed_bytes, length);
    return sl_io_table_default()->willneed(ctx, fd, offset, length);
}

#define RA_SIDE 32  /* the arrays' side */
#define RA_CHUNK 8  /* their chunks' side */
#define RA_SHARD 16 /* the sharded one's shards' side */

/* Array `path` of `s`, RA_SIDE^2 uint16 in RA_CHUNK^2 chunks (sharded:
 * RA_SHARD^2 shards), each element its linear index; the last chunk left
 * unwritten (absent, or an empty inner chunk). */
static void
make_ra_array(sl_store *s, const char *path, bool sharded)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = RA_SIDE;
        sp.chunk_shape[d] = RA_CHUNK;
        sp.shard_shape[d] = sharded ? RA_SHARD : 0;
    }
    cr_assert_eq(sl_codec_spec_parse("zstd:1", &sp.codec, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, path, &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    static uint16_t data[RA_SIDE * RA_SIDE];
    for (int i = 0; i < RA_SIDE * RA_SIDE; i++)
        data[i] = (uint16_t)i;
    struct sl_region part = {2, {0, 0}, {RA_SIDE, RA_SIDE - RA_CHUNK}};
    uint16_t rows[RA_SIDE * (RA_SIDE - RA_CHUNK)];
    for (int y = 0; y < RA_SIDE; y++)
        memcpy(rows + y * (RA_SIDE - RA_CHUNK), data + y * RA_SIDE,
               (RA_SIDE - RA_CHUNK) * sizeof(uint16_t));
    cr_assert_eq(sl_array_write_region(a, &part, rows, sizeof(rows), NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    struct sl_region last = {2, {0, RA_SIDE - RA_CHUNK}, {RA_SIDE - RA_CHUNK, RA_SIDE}};
    for (int y = 0; y < RA_SIDE - RA_CHUNK; y++)
        memcpy(rows + y * RA_CHUNK, data + y * RA_SIDE + RA_SIDE - RA_CHUNK,
               RA_CHUNK * sizeof(uint16_t));
    cr_assert_eq(sl_array_write_region(a, &last, rows, (RA_SIDE - RA_CHUNK) * RA_CHUNK * 2, NULL,
                                       NULL, &err),
                 SL_OK, "%s", err.text);
    sl_array_unref(a);
}

/* Hint every chunk of `path`, then read each: the hints counted before the
 * reads in *hinted; the elements read wrong (the absent chunk reads as
 * the fill value, 0). */
static int
hint_and_read(sl_store *s, const char *path, int *hinted)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(s, path, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    atomic_store(&n_willneed, 0);
    atomic_store(&willneed_bytes, 0);
    const uint64_t n = RA_SIDE / RA_CHUNK;
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t j = 0; j < n; j++)
            sl_array_prefetch_chunk(a, (uint64_t[]){i, j});
    *hinted = atomic_load(&n_willneed);
    int bad = 0;
    uint16_t buf[RA_CHUNK * RA_CHUNK];
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t j = 0; j < n; j++) {
            cr_assert_eq(
                sl_array_read_chunk(a, (uint64_t[]){i, j}, buf, sizeof(buf), NULL, NULL, &err),
                SL_OK, "%s", err.text);
            for (uint64_t y = 0; y < RA_CHUNK; y++)
                for (uint64_t x = 0; x < RA_CHUNK; x++) {
                    const uint64_t r = i * RA_CHUNK + y, c = j * RA_CHUNK + x;
                    const bool absent = r >= RA_SIDE - RA_CHUNK && c >= RA_SIDE - RA_CHUNK;
                    bad += buf[y * RA_CHUNK + x] != (absent ? 0 : (uint16_t)(r * RA_SIDE + c));
                }
        }
    sl_array_unref(a);
    return bad;
}

/* A hinted chunk file is read ahead whole (one posix_fadvise each, none
 * for the absent one); a sharded array's hints wait for the shard's first
 * read, which hints its other hinted inner chunks (not a lone index
 * range); without `willneed` in the table nothing is hinted; the reads
 * return the same either way. */
Test(io_store_fs, hints_read_chunk_files_and_inner_chunks_ahead)
{
    struct sl_io_table t = *sl_io_table_default();
    t.willneed = count_willneed;
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.io = &t;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(root, &o, &err);
    cr_assert_not_null(s, "%s", err.text);
    cr_assert(sl_store_reads_ahead(s));
    sl_store *m = sl_store_create_memory(NULL, &err);
    cr_assert_not_null(m);
    cr_assert_not(sl_store_reads_ahead(m));
    sl_store_unref(m);
    make_ra_array(s, "flat", false);
    make_ra_array(s, "sharded", true);
    const int chunks = (RA_SIDE / RA_CHUNK) * (RA_SIDE / RA_CHUNK);
    int hinted;
    cr_assert_eq(hint_and_read(s, "flat", &hinted), 0);
    cr_assert_eq(hinted, chunks - 1, "%d hints for %d chunk files", hinted, chunks - 1);
    uint64_t files = 0;
    for (int i = 0; i < RA_SIDE / RA_CHUNK; i++)
        for (int j = 0; j < RA_SIDE / RA_CHUNK; j++) {
            char path[4200];
            struct stat info;
            snprintf(path, sizeof(path), "%s/flat/c/%d/%d", root, i, j);
            files += stat(path, &info) == 0 ? (uint64_t)info.st_size : 0;
        }
    cr_assert_eq(atomic_load(&willneed_bytes), files, "each file hinted whole");
    cr_assert_eq(hint_and_read(s, "sharded", &hinted), 0);
    cr_assert_eq(hinted, 0, "no shard index is hinted alone");
    /* Every inner chunk but the empty one, hinted by its shard's first read. */
    cr_assert_eq(atomic_load(&n_willneed), chunks - 1, "%d inner chunks hinted",
                 atomic_load(&n_willneed));
    cr_assert_gt(atomic_load(&willneed_bytes), 0);
    /* A file larger than the kernel reads for one hint, in pieces of 256 KiB. */
    size_t big_n = (3u << 18) + 1;
    char *big = calloc(1, big_n);
    cr_assert_eq(sl_store_set(s, "big", big, big_n, &err), SL_OK, "%s", err.text);
    free(big);
    atomic_store(&n_willneed, 0);
    atomic_store(&willneed_bytes, 0);
    sl__store_prefetch(s, "big", NULL);
    cr_assert_eq(atomic_load(&n_willneed), 4);
    cr_assert_eq(atomic_load(&willneed_bytes), big_n);
    sl__store_prefetch(s, "absent", NULL);
    cr_assert_eq(atomic_load(&n_willneed), 4, "nothing to hint");
    sl_store_unref(s);
    t.willneed = NULL;
    s = sl_store_open_fs(root, &o, &err);
    cr_assert_not_null(s, "%s", err.text);
    cr_assert_eq(hint_and_read(s, "flat", &hinted), 0);
    cr_assert_eq(hint_and_read(s, "sharded", &hinted), 0);
    cr_assert_eq(atomic_load(&n_willneed), 0);
    sl_store_unref(s);
}

/* Read object `key` of `s` whole (its hint leaves the read-ahead window). */
static void
read_key(sl_store *s, const char *key)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_get(s, key, NULL, &b, NULL, &err), SL_OK, "%s", err.text);
    sl_buf_fini(&b);
}

/* Hints start the kernel reading at most `read_ahead_bytes` ahead of the
 * reads: with room for two and a half files, three are asked for and the
 * rest wait; each read of a hinted file lets one more go, in the order
 * hinted; a read of an unhinted object lets none go; hints whose files
 * are never read (a cancelled task's) are let go after enough other
 * reads, so the window never stays full of them; with 0 bytes the store
 * reads nothing ahead. */
Test(io_store_fs, hints_wait_beyond_the_read_ahead_window)
{
    struct sl_io_table t = *sl_io_table_default();
    t.willneed = count_willneed;
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.io = &t;
    const size_t file = 10000; /* below one 256 KiB piece: one call per file */
    o.read_ahead_bytes = file * 5 / 2;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(root, &o, &err);
    cr_assert_not_null(s, "%s", err.text);
    char *bytes = calloc(1, file);
    char key[32];
    for (int i = 0; i < 12; i++) {
        snprintf(key, sizeof(key), "f/%d", i);
        cr_assert_eq(sl_store_set(s, key, bytes, file, &err), SL_OK, "%s", err.text);
    }
    cr_assert_eq(sl_store_set(s, "other", bytes, 10, &err), SL_OK, "%s", err.text);
    free(bytes);
    atomic_store(&n_willneed, 0);
    atomic_store(&willneed_bytes, 0);
    for (int i = 0; i < 8; i++) {
        snprintf(key, sizeof(key), "f/%d", i);
        sl__store_prefetch(s, key, NULL);
    }
    cr_assert_eq(atomic_load(&n_willneed), 3, "%d files asked for, room for 2.5",
                 atomic_load(&n_willneed));
    read_key(s, "other");
    cr_assert_eq(atomic_load(&n_willneed), 3, "an unhinted read makes no room");
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof(key), "f/%d", i);
        read_key(s, key);
        cr_assert_eq(atomic_load(&n_willneed), 4 + i, "after reading %d hinted files: %d asked",
                     i + 1, atomic_load(&n_willneed));
    }
    /* f/5, f/6 and f/7 given and never read: the next hints wait until
     * enough other reads age them out. */
    for (int i = 8; i < 12; i++) {
        snprintf(key, sizeof(key), "f/%d", i);
        sl__store_prefetch(s, key, NULL);
    }
    cr_assert_eq(atomic_load(&n_willneed), 8);
    for (int i = 0; i < 200 && atomic_load(&n_willneed) < 12; i++)
        read_key(s, "other");
    cr_assert_eq(atomic_load(&n_willneed), 12, "hints never read are let go");
    cr_assert_eq(atomic_load(&willneed_bytes), 12 * file);
    sl_store_unref(s);
    /* No window: nothing read ahead, and the store says so. */
    o.read_ahead_bytes = 0;
    s = sl_store_open_fs(root, &o, &err);
    cr_assert_not_null(s, "%s", err.text);
    cr_assert_not(sl_store_reads_ahead(s));
    sl__store_prefetch(s, "f/0", NULL);
    cr_assert_eq(atomic_load(&n_willneed), 12);
    sl_store_unref(s);
}

Test(io_store_fs, every_call_goes_through_the_table)
{
    sl_store *s = open_store(true);
    cr_assert_eq(sl_store_set(s, "p/q", "abc", 3, NULL), SL_OK);
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "p/q", NULL, &b, NULL, NULL), SL_OK);
    cr_assert_eq(sl_store_delete(s, "p/q", NULL), SL_OK);
    cr_assert_eq(sl_store_set(s, "p/r", "abc", 3, NULL), SL_OK);
    struct sl_store_stats st;
    sl_store_get_stats(s, &st);
    cr_assert_eq(st.n_set, 2);
    for (int op = 0; op < SL_FAULT_OP_COUNT_; op++) {
        if (op == SL_FAULT_LIST_DIR || op == SL_FAULT_SYNCFS)
            continue; /* syncfs: stores deferring their syncs (below) */
        cr_assert_gt(sl_fault_io_calls(&fio, (sl_fault_op)op), 0, "%s never called",
                     sl_fault_op_name((sl_fault_op)op));
    }
    sl_buf_fini(&b);
    sl_store_unref(s);
}

/* Whether failing call `k` of `op` during a set comes after its rename
 * (the directory's open, fsync and close of a durable store): the object
 * is then new although the set failed.  `files` is how many descriptors
 * the set opens and closes for the file itself, all before the rename. */
static bool
fails_after_rename(int op, uint64_t k, uint64_t files)
{
    return ((op == SL_FAULT_OPEN || op == SL_FAULT_CLOSE) && k > files) ||
           (op == SL_FAULT_FSYNC && k > 1);
}

/* Fail the k-th call of every operation in turn during a set that replaces
 * an object in a new directory, until the set gets through; each outcome
 * must be either the old state or the new one, with no temporary files. */
Test(io_store_fs, fault_sweep_leaves_old_or_new_never_a_mix)
{
    sl_store *s = open_store(true);
    cr_assert_eq(sl_store_set(s, "sweep/k", "old", 3, NULL), SL_OK);
    for (int op = 0; op < SL_FAULT_OP_COUNT_; op++) {
        for (uint64_t k = 1; k < 50; k++) {
            cr_assert_eq(sl_store_set(s, "sweep/k", "old", 3, NULL), SL_OK);
            sl_fault_io_reset(&fio);
            sl_fault_io_fail(&fio, (sl_fault_op)op, k, EIO);
            sl_status st = sl_store_set(s, "sweep/k", "new!", 4, NULL);
            bool hit = sl_fault_io_calls(&fio, (sl_fault_op)op) >= k;
            sl_fault_io_reset(&fio);
            struct sl_buf b = SL_BUF_INIT;
            cr_assert_eq(sl_store_get(s, "sweep/k", NULL, &b, NULL, NULL), SL_OK);
            bool is_new = b.size == 4 && memcmp(b.data, "new!", 4) == 0;
            bool is_old = b.size == 3 && memcmp(b.data, "old", 3) == 0;
            cr_assert(is_new || is_old, "%s #%llu: a mix", sl_fault_op_name((sl_fault_op)op),
                      (unsigned long long)k);
            bool after = fails_after_rename(op, k, 1);
            /* Every call before the rename matters: its failure fails the set. */
            if (hit && !after)
                cr_assert_neq(st, SL_OK, "%s #%llu failed, yet the set reported success",
                              sl_fault_op_name((sl_fault_op)op), (unsigned long long)k);
            if (st == SL_OK && !after)
                cr_assert(is_new);
            if (st != SL_OK && !after)
                cr_assert(is_old, "%s #%llu failed the set but changed the object",
                          sl_fault_op_name((sl_fault_op)op), (unsigned long long)k);
            sl_buf_fini(&b);
            char dir[4200];
            snprintf(dir, sizeof(dir), "%s/sweep", root);
            cr_assert_eq(count_temporaries(dir), 0);
            if (!hit)
                break;
        }
    }
    sl_store_unref(s);
}

Test(io_store_fs, a_key_below_an_object_is_refused)
{
    sl_store *s = open_store(false);
    cr_assert_eq(sl_store_set(s, "a", "1", 1, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, "a/b", "1", 1, &err), SL_EEXIST);
    cr_assert_not_null(strstr(err.text, "not a directory"), "%s", err.text);
    sl_store_unref(s);
}

Test(io_store_fs, symlinks_leading_outside_are_refused)
{
    char path[4200], target[4200];
    snprintf(target, sizeof(target), "%s/secret", outside);
    write_file(target, "top secret");
    snprintf(path, sizeof(path), "%s/evil", root);
    cr_assert_eq(symlink(outside, path), 0);
    snprintf(path, sizeof(path), "%s/leak", root);
    cr_assert_eq(symlink(target, path), 0);
    sl_store *s = open_store(false);
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_get(s, "evil/secret", NULL, &b, NULL, &err), SL_EACCES);
    cr_assert_not_null(strstr(err.text, "evil/secret"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "outside the store root"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_get(s, "leak", NULL, &b, NULL, &err), SL_EACCES);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, "evil/planted", "x", 1, &err), SL_EACCES, "%s", err.text);
    cr_assert_eq(sl_store_set(s, "evil/deep/er/planted", "x", 1, NULL), SL_EACCES);
    snprintf(path, sizeof(path), "%s/planted", outside);
    cr_assert_not(file_exists(path), "a file was written outside the root");
    snprintf(path, sizeof(path), "%s/deep", outside);
    cr_assert_not(file_exists(path), "a directory was made outside the root");
    cr_assert_eq(sl_store_delete(s, "evil/secret", NULL), SL_EACCES);
    cr_assert(file_exists(target));
    /* Listing skips what leads outside. */
    cr_assert_eq(sl_store_set(s, "ok", "1", 1, NULL), SL_OK);
    uint64_t n = 0;
    cr_assert_eq(sl_store_size(s, "ok", &n, NULL), SL_OK);
    sl_buf_fini(&b);
    sl_store_unref(s);
}

static sl_status
count_keys(void *arg, const char *key, uint64_t bytes)
{
    (void)bytes;
    (void)key;
    (*(int *)arg)++;
    return SL_OK;
}

Test(io_store_fs, symlinks_inside_the_root_are_followed)
{
    sl_store *s = open_store(false);
    cr_assert_eq(sl_store_set(s, "real/obj", "inside", 6, NULL), SL_OK);
    char path[4200], target[4200];
    snprintf(target, sizeof(target), "%s/real", root);
    snprintf(path, sizeof(path), "%s/alias", root);
    cr_assert_eq(symlink(target, path), 0);
    snprintf(target, sizeof(target), "%s/real/obj", root);
    snprintf(path, sizeof(path), "%s/objlink", root);
    cr_assert_eq(symlink(target, path), 0);
    snprintf(path, sizeof(path), "%s/evil", root);
    cr_assert_eq(symlink(outside, path), 0);
    expect_value(s, "alias/obj", "inside");
    expect_value(s, "objlink", "inside");
    int n = 0;
    cr_assert_eq(sl_store_list(s, "", count_keys, &n, NULL), SL_OK);
    cr_assert_eq(n, 2, "real/obj and objlink; linked directories are not walked");
    sl_store_unref(s);
}

Test(io_store_fs, listing_skips_temporary_files)
{
    sl_store *s = open_store(false);
    cr_assert_eq(sl_store_set(s, "d/obj", "1", 1, NULL), SL_OK);
    char path[4200];
    snprintf(path, sizeof(path), "%s/d/.sluice-tmp.99.1", root);
    write_file(path, "half-written");
    int n = 0;
    cr_assert_eq(sl_store_list(s, "", count_keys, &n, NULL), SL_OK);
    cr_assert_eq(n, 1);
    sl_store_unref(s);
}

Test(io_store_fs, read_only_stores_refuse_changes)
{
    sl_store *rw = open_store(false);
    cr_assert_eq(sl_store_set(rw, "k", "1", 1, NULL), SL_OK);
    sl_store_unref(rw);
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.read_only = true;
    sl_store *s = sl_store_open_fs(root, &o, NULL);
    cr_assert_not_null(s);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, "k", "2", 1, &err), SL_EACCES);
    cr_assert_not_null(strstr(err.text, "read-only"), "%s", err.text);
    cr_assert_eq(sl_store_delete(s, "k", NULL), SL_EACCES);
    expect_value(s, "k", "1");
    sl_store_unref(s);
}

Test(io_store_fs, missing_root_without_create_is_not_found)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/missing/deeper", root);
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.create = false;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_store_open_fs(path, &o, &err));
    cr_assert_eq(err.code, SL_ENOTFOUND);
    o.create = true;
    sl_store *s = sl_store_open_fs(path, &o, NULL);
    cr_assert_not_null(s, "create makes the missing directories");
    sl_store_unref(s);
    snprintf(path, sizeof(path), "%s/file", root);
    write_file(path, "x");
    err = SL_ERROR_INIT;
    cr_assert_null(sl_store_open_fs(path, &o, &err));
    cr_assert_neq(err.code, SL_OK);
}

Test(io_store_fs, a_directory_is_not_an_object)
{
    sl_store *s = open_store(false);
    cr_assert_eq(sl_store_set(s, "dir/obj", "1", 1, NULL), SL_OK);
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "dir", NULL, &b, NULL, NULL), SL_ENOTFOUND);
    cr_assert_eq(sl_store_delete(s, "dir", NULL), SL_EEXIST);
    sl_store_unref(s);
}

Test(io_store_fs, failed_reads_report_the_key)
{
    sl_store *s = open_store(false);
    cr_assert_eq(sl_store_set(s, "r/obj", "12345", 5, NULL), SL_OK);
    sl_fault_io_fail(&fio, SL_FAULT_PREAD, 1, EIO);
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_get(s, "r/obj", NULL, &b, NULL, &err), SL_EIO);
    cr_assert_str_eq(err.source, "r/obj");
    sl_buf_fini(&b);
    sl_store_unref(s);
}

/* ---- direct writes ------------------------------------------------------------ */

/* `n` bytes of a pattern in a buffer starting on a page (as sl_buf's
 * large buffers do), shifted by `shift` bytes. */
static uint8_t *
pattern(size_t n, size_t shift, uint8_t **block)
{
    *block = aligned_alloc(4096, (n + shift + 4095) / 4096 * 4096);
    cr_assert_not_null(*block);
    for (size_t i = 0; i < n; i++)
        (*block)[shift + i] = (uint8_t)(i * 2654435761u >> 13);
    return *block + shift;
}

static void
expect_bytes(sl_store *s, const char *key, const uint8_t *want, size_t n)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_get(s, key, NULL, &b, NULL, &err), SL_OK, "%s", err.text);
    cr_assert_eq(b.size, n, "%s: %zu bytes, want %zu", key, b.size, n);
    cr_assert(memcmp(b.data, want, n) == 0, "%s: bytes differ", key);
    sl_buf_fini(&b);
}

/* Pages of file `path` in the page cache, and its page count. */
static size_t
resident_pages(const char *path, size_t *n_pages)
{
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0, "%s", path);
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = ((size_t)st.st_size + page - 1) / page;
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    cr_assert_neq(map, MAP_FAILED);
    unsigned char *vec = malloc(n);
    cr_assert_eq(mincore(map, (size_t)st.st_size, vec), 0);
    size_t in = 0;
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    free(vec);
    munmap(map, (size_t)st.st_size);
    close(fd);
    *n_pages = n;
    return in;
}

/* Skip a test of the direct path where the file system refuses O_DIRECT. */
#define NEED_DIRECT()                                                                    \
    do {                                                                                 \
        if (!sl_test_takes_direct(root))                                                 \
            cr_skip_test("%s refuses O_DIRECT: the direct path cannot be tested", root); \
    } while (0)

Test(io_store_fs, large_aligned_objects_are_written_directly_and_read_back_whole)
{
    NEED_DIRECT();
    sl_store *s = open_store(false);
    size_t sizes[] = {(size_t)1 << 20, ((size_t)1 << 20) + 1, ((size_t)3 << 20) + 4095,
                      ((size_t)2 << 20) + 4096};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint8_t *block, *data = pattern(sizes[i], 0, &block);
        char key[32];
        snprintf(key, sizeof(key), "big/%zu", i);
        sl_fault_io_reset(&fio);
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_store_set(s, key, data, sizes[i], &err), SL_OK, "%s", err.text);
        /* The blocks through one descriptor, the tail and the fsync through
         * a second: two opens, one fsync, one rename. */
        cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_OPEN), 2, "size %zu", sizes[i]);
        cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_FSYNC), 1);
        cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_RENAME), 1);
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", root, key);
        size_t n_pages, in = resident_pages(path, &n_pages);
        cr_assert_leq(in, 1, "size %zu: %zu of %zu pages went through the page cache", sizes[i], in,
                      n_pages);
        expect_bytes(s, key, data, sizes[i]);
        free(block);
    }
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/big", root);
    cr_assert_eq(count_temporaries(dir), 0);
    sl_store_unref(s);
}

Test(io_store_fs, small_unaligned_or_opted_out_objects_are_written_the_ordinary_way)
{
    size_t big = ((size_t)2 << 20) + 7;
    uint8_t *block, *data = pattern(big + 1, 0, &block);
    sl_store *s = open_store(false);
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_store_set(s, "a", data, ((size_t)1 << 20) - 1, NULL), SL_OK);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_OPEN), 1, "below 1 MiB");
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_store_set(s, "b", data + 1, big, NULL), SL_OK);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_OPEN), 1, "not on a page boundary");
    expect_bytes(s, "b", data + 1, big);
    sl_store_unref(s);

    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.io = &fio.table;
    o.direct_writes = false;
    s = sl_store_open_fs(root, &o, NULL);
    cr_assert_not_null(s);
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_store_set(s, "c", data, big, NULL), SL_OK);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_OPEN), 1, "direct_writes off");
    expect_bytes(s, "c", data, big);
    sl_store_unref(s);
    free(block);
}

/* A set flagged as read again soon (a transaction whose array a later
 * stage reads) goes through the page cache even when it could go direct. */
Test(io_store_fs, objects_to_be_reread_go_through_the_page_cache)
{
    size_t n = ((size_t)2 << 20) + 100;
    uint8_t *block, *data = pattern(n, 0, &block);
    sl_store *s = open_store(false);
    sl_fault_io_reset(&fio);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__store_set(s, "rr/a", data, n, SL__SET_REREAD, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_OPEN), 1, "no O_DIRECT descriptor");
    char path[4200];
    snprintf(path, sizeof(path), "%s/rr/a", root);
    size_t n_pages, in = resident_pages(path, &n_pages);
    cr_assert_gt(in, n_pages / 2, "%zu of %zu pages cached", in, n_pages);
    expect_bytes(s, "rr/a", data, n);
    sl_store_unref(s);
    free(block);
}

/* A file system that refuses O_DIRECT when opening: the object is written
 * the ordinary way, and the store stops asking. */
Test(io_store_fs, refused_direct_open_falls_back_and_is_remembered)
{
    size_t n = ((size_t)2 << 20) + 100;
    uint8_t *block, *data = pattern(n, 0, &block);
    sl_store *s = open_store(false);
    sl_fault_io_fail(&fio, SL_FAULT_OPEN, 1, EINVAL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, "r/a", data, n, &err), SL_OK, "%s", err.text);
    expect_bytes(s, "r/a", data, n);
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_store_set(s, "r/b", data, n, NULL), SL_OK);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_OPEN), 1, "O_DIRECT asked again");
    expect_bytes(s, "r/b", data, n);
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/r", root);
    cr_assert_eq(count_temporaries(dir), 0);
    sl_store_unref(s);
    free(block);
}

/* A direct write refused after 1 MiB went through (EINVAL: alignment the
 * device will not take), or one of an unaligned length: the object is
 * written again the ordinary way, whole. */
Test(io_store_fs, refused_or_short_direct_writes_fall_back_to_a_whole_object)
{
    NEED_DIRECT();
    size_t n = ((size_t)3 << 20) + 5;
    uint8_t *block, *data = pattern(n, 0, &block);
    sl_store *s = open_store(false);
    sl_fault_io_fail(&fio, SL_FAULT_WRITE, 2, EINVAL);
    cr_assert_eq(fio.write_max, 0);
    fio.write_max = (size_t)1 << 20; /* the first write stops after 1 MiB */
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, "w/a", data, n, &err), SL_OK, "%s", err.text);
    fio.write_max = 0;
    expect_bytes(s, "w/a", data, n);
    sl_fault_io_reset(&fio);
    fio.write_max = 4097; /* a direct write of an unaligned length: the kernel refuses it */
    cr_assert_eq(sl_store_set(s, "w/b", data, n, &err), SL_OK, "%s", err.text);
    fio.write_max = 0;
    expect_bytes(s, "w/b", data, n);
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/w", root);
    cr_assert_eq(count_temporaries(dir), 0);
    sl_store_unref(s);
    free(block);
}

/* The fault sweep again, on an object written directly: every failing call
 * leaves the old object or the new one, and no temporary file. */
Test(io_store_fs, direct_write_fault_sweep_leaves_old_or_new_never_a_mix)
{
    NEED_DIRECT();
    size_t n_old = ((size_t)1 << 20) + 3, n_new = ((size_t)2 << 20) + 4099;
    uint8_t *old_block, *old = pattern(n_old, 0, &old_block);
    uint8_t *new_block, *new = pattern(n_new, 0, &new_block);
    for (size_t i = 0; i < n_new; i += 4096)
        new[i] ^= 0x5a;
    sl_store *s = open_store(true);
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/dsweep", root);
    int n_failed = 0;
    for (int op = 0; op < SL_FAULT_OP_COUNT_; op++) {
        for (uint64_t k = 1; k < 20; k++) {
            cr_assert_eq(sl_store_set(s, "dsweep/k", old, n_old, NULL), SL_OK);
            sl_fault_io_reset(&fio);
            sl_fault_io_fail(&fio, (sl_fault_op)op, k, EIO);
            sl_status st = sl_store_set(s, "dsweep/k", new, n_new, NULL);
            bool hit = sl_fault_io_calls(&fio, (sl_fault_op)op) >= k;
            sl_fault_io_reset(&fio);
            struct sl_buf b = SL_BUF_INIT;
            cr_assert_eq(sl_store_get(s, "dsweep/k", NULL, &b, NULL, NULL), SL_OK);
            bool is_new = b.size == n_new && memcmp(b.data, new, n_new) == 0;
            bool is_old = b.size == n_old && memcmp(b.data, old, n_old) == 0;
            const char *name = sl_fault_op_name((sl_fault_op)op);
            cr_assert(is_new || is_old, "%s #%llu: a mix", name, (unsigned long long)k);
            /* The O_DIRECT create and the reopen for the tail come
             * before the rename; the directory's open and fsync after. */
            bool after = fails_after_rename(op, k, 2);
            if (hit && !after)
                cr_assert_neq(st, SL_OK, "%s #%llu failed, yet the set reported success", name,
                              (unsigned long long)k);
            if (st == SL_OK && !after)
                cr_assert(is_new, "%s #%llu: ok but old", name, (unsigned long long)k);
            if (st != SL_OK && !after) {
                cr_assert(is_old, "%s #%llu failed the set but changed the object", name,
                          (unsigned long long)k);
                n_failed++;
            }
            sl_buf_fini(&b);
            cr_assert_eq(count_temporaries(dir), 0, "%s #%llu", name, (unsigned long long)k);
            if (!hit)
                break;
        }
    }
    cr_assert_geq(n_failed, 3, "write, close, rename at least");
    sl_store_unref(s);
    free(old_block);
    free(new_block);
}
