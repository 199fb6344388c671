/* SPDX-License-Identifier: MIT */
/*
 * Paths as the kernel reaches them (sl_fs_path_resolve, sl_fs_path_overlap)
 * and whole-node replacement (sl_fs_replace_*): what each kind of
 * destination gives, that the old node stays readable until the commit and
 * nothing of it after, that an abort leaves everything as it was, and that
 * the leftovers of a killed run are removed by the next one.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sluice.h>

#include "io_store.h"
#include "testutil.h"

static void
put(const char *dir, const char *name, const char *text)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s: %s", p, strerror(errno));
    fputs(text, f);
    fclose(f);
}

static bool
has(const char *dir, const char *name)
{
    char p[PATH_MAX];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

/* Entries of `dir`, "." and ".." excluded. */
static int
count(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* A v2 array's files at dir/name: .zarray and two chunks. */
static void
old_node(const char *dir, const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    cr_assert_eq(mkdir(p, 0777), 0);
    put(p, ".zarray", "{\"zarr_format\": 2}");
    put(p, "0.0", "old");
    put(p, "9.9", "old chunk outside the new grid");
}

Test(io_fs, resolve_follows_links_and_dotdot_and_keeps_the_missing_tail)
{
    const char *dir = sl_test_tmpdir("fs-resolve");
    char real[PATH_MAX], a[PATH_MAX], b[PATH_MAX], p[PATH_MAX];
    cr_assert_not_null(realpath(dir, real));
    snprintf(p, sizeof(p), "%s/x", dir);
    cr_assert_eq(mkdir(p, 0777), 0);
    snprintf(p, sizeof(p), "%s/link", dir);
    cr_assert_eq(symlink("x", p), 0);
    snprintf(p, sizeof(p), "%s/link/../x/new/./deeper/..//", dir);
    cr_assert_eq(sl_fs_path_resolve(p, a, sizeof(a), NULL), SL_OK);
    snprintf(b, sizeof(b), "%s/x/new", real);
    cr_assert_str_eq(a, b);
    cr_assert_eq(sl_fs_path_overlap(a, b), SL_FS_SAME);
    snprintf(p, sizeof(p), "%s/link", dir);
    cr_assert_eq(sl_fs_path_resolve(p, a, sizeof(a), NULL), SL_OK);
    cr_assert_eq(sl_fs_path_overlap(b, a), SL_FS_INSIDE);
    cr_assert_eq(sl_fs_path_overlap(a, b), SL_FS_CONTAINS);
    cr_assert_eq(sl_fs_path_overlap("/a/b", "/a/bc"), SL_FS_APART, "whole components only");
    cr_assert_eq(sl_fs_path_overlap("/a/bc", "/"), SL_FS_INSIDE);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_fs_path_resolve("", a, sizeof(a), &err), SL_EINVAL);
    cr_assert_eq(sl_fs_path_resolve(p, a, 4, NULL), SL_EINVAL, "too small");
    sl_test_rmtree(dir);
}

Test(io_fs, staged_replacement_keeps_the_old_node_until_commit_and_nothing_of_it_after)
{
    const char *dir = sl_test_tmpdir("fs-staged");
    old_node(dir, "a.zarr");
    char dest[PATH_MAX];
    snprintf(dest, sizeof(dest), "%s/a.zarr", dir);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_fs_replace_begin(dest, SL_FS_REPLACE_REFUSE, &err));
    cr_assert_eq(err.code, SL_EEXIST);
    cr_assert_not_null(strstr(err.text, "Zarr v2 array"), "%s", err.text);
    sl_fs_replace *r = sl_fs_replace_begin(dest, SL_FS_REPLACE_STAGED, NULL);
    cr_assert_not_null(r);
    cr_assert(sl_fs_replace_existed(r));
    const char *at = sl_fs_replace_path(r);
    cr_assert_neq(strcmp(at, dest), 0);
    put(at, "zarr.json", "{\"zarr_format\": 3}");
    cr_assert(has(dir, "a.zarr/.zarray") && has(dir, "a.zarr/9.9"), "old until commit");
    cr_assert_eq(sl_fs_replace_commit(r, &err), SL_OK, "%s", err.text);
    cr_assert(has(dir, "a.zarr/zarr.json"));
    cr_assert_eq(count(dest), 1, "nothing of the old node");
    cr_assert_eq(count(dir), 1, "no hidden sibling left");
    sl_test_rmtree(dir);
}

Test(io_fs, abort_leaves_the_old_node_and_removes_the_parents_it_made)
{
    const char *dir = sl_test_tmpdir("fs-abort");
    old_node(dir, "a.zarr");
    char dest[PATH_MAX];
    snprintf(dest, sizeof(dest), "%s/a.zarr", dir);
    sl_fs_replace *r = sl_fs_replace_begin(dest, SL_FS_REPLACE_STAGED, NULL);
    cr_assert_not_null(r);
    put(sl_fs_replace_path(r), "zarr.json", "{}");
    sl_fs_replace_abort(r);
    cr_assert_eq(count(dest), 3);
    cr_assert_eq(count(dir), 1);
    snprintf(dest, sizeof(dest), "%s/p/q/new.zarr", dir);
    r = sl_fs_replace_begin(dest, SL_FS_REPLACE_REFUSE, NULL);
    cr_assert_not_null(r);
    cr_assert(!sl_fs_replace_existed(r));
    cr_assert(!has(dir, "p/q/new.zarr"), "written beside, not at, the path");
    sl_fs_replace_abort(r);
    cr_assert(!has(dir, "p"), "the parents it made are gone");
    r = sl_fs_replace_begin(dest, SL_FS_REPLACE_REFUSE, NULL);
    cr_assert_eq(sl_fs_replace_commit(r, NULL), SL_OK);
    cr_assert(has(dir, "p/q/new.zarr"));
    cr_assert_eq(count(dir), 2);
    sl_test_rmtree(dir);
}

Test(io_fs, in_place_empties_the_old_node_first)
{
    const char *dir = sl_test_tmpdir("fs-inplace");
    old_node(dir, "a.zarr");
    char dest[PATH_MAX];
    snprintf(dest, sizeof(dest), "%s/a.zarr/sub", dir);
    cr_assert_eq(mkdir(dest, 0777), 0);
    put(dest, "0", "deep");
    snprintf(dest, sizeof(dest), "%s/a.zarr", dir);
    sl_fs_replace *r = sl_fs_replace_begin(dest, SL_FS_REPLACE_IN_PLACE, NULL);
    cr_assert_not_null(r);
    cr_assert_eq(count(dest), 0, "emptied at begin");
    char resolved[PATH_MAX];
    cr_assert_not_null(realpath(dest, resolved));
    cr_assert_str_eq(sl_fs_replace_path(r), resolved);
    cr_assert_eq(sl_fs_replace_commit(r, NULL), SL_OK);
    sl_test_rmtree(dir);
}

Test(io_fs, files_and_foreign_directories_are_never_replaced)
{
    const char *dir = sl_test_tmpdir("fs-foreign");
    put(dir, "file", "precious");
    char dest[PATH_MAX];
    snprintf(dest, sizeof(dest), "%s/file", dir);
    sl_fs_replace_mode modes[] = {SL_FS_REPLACE_REFUSE, SL_FS_REPLACE_STAGED,
                                  SL_FS_REPLACE_IN_PLACE};
    for (int m = 0; m < 3; m++) {
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_null(sl_fs_replace_begin(dest, modes[m], &err));
        cr_assert_eq(err.code, SL_EEXIST);
        cr_assert_not_null(strstr(err.text, "is a file"), "%s", err.text);
    }
    snprintf(dest, sizeof(dest), "%s/home", dir);
    cr_assert_eq(mkdir(dest, 0777), 0);
    put(dest, "thesis.tex", "years of work");
    for (int m = 0; m < 3; m++) {
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_null(sl_fs_replace_begin(dest, modes[m], &err));
        cr_assert_eq(err.code, SL_EEXIST);
        cr_assert_not_null(strstr(err.text, "no Zarr array or group"), "%s", err.text);
    }
    cr_assert(has(dir, "home/thesis.tex") && has(dir, "file"));
    cr_assert_eq(count(dir), 2);
    sl_test_rmtree(dir);
}

Test(io_fs, leftovers_of_a_killed_run_are_removed_by_the_next)
{
    const char *dir = sl_test_tmpdir("fs-stale");
    old_node(dir, "a.zarr");
    char dest[PATH_MAX];
    snprintf(dest, sizeof(dest), "%s/a.zarr", dir);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        sl_fs_replace *r = sl_fs_replace_begin(dest, SL_FS_REPLACE_STAGED, NULL);
        put(sl_fs_replace_path(r), "zarr.json", "{}");
        _exit(r != NULL ? 0 : 1); /* killed: neither committed nor aborted */
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cr_assert_eq(count(dir), 2, "the dead run's sibling is there");
    char found[PATH_MAX];
    cr_assert_eq(sl_fs_replace_find(dest, found, sizeof(found), NULL), SL_OK);
    sl_fs_replace *r = sl_fs_replace_begin(dest, SL_FS_REPLACE_STAGED, NULL);
    cr_assert_not_null(r);
    cr_assert_eq(count(dir), 2, "the dead run's sibling is removed, ours made");
    cr_assert_str_neq(found, sl_fs_replace_path(r));
    sl_fs_replace_abort(r);
    cr_assert_eq(count(dir), 1);
    cr_assert_eq(count(dest), 3, "the old node as it was");
    cr_assert_eq(sl_fs_replace_find(dest, found, sizeof(found), NULL), SL_ENOTFOUND);
    sl_test_rmtree(dir);
}

Test(io_fs, remove_tree_removes_links_without_following_them)
{
    const char *dir = sl_test_tmpdir("fs-rmtree");
    char p[PATH_MAX], keep[PATH_MAX];
    snprintf(keep, sizeof(keep), "%s/keep", dir);
    cr_assert_eq(mkdir(keep, 0777), 0);
    put(keep, "f", "x");
    snprintf(p, sizeof(p), "%s/t", dir);
    cr_assert_eq(mkdir(p, 0777), 0);
    snprintf(p, sizeof(p), "%s/t/link", dir);
    cr_assert_eq(symlink(keep, p), 0);
    snprintf(p, sizeof(p), "%s/t", dir);
    cr_assert_eq(sl_fs_remove_tree(p, NULL), SL_OK);
    cr_assert(!has(dir, "t") && has(dir, "keep/f"));
    cr_assert_eq(sl_fs_remove_tree(p, NULL), SL_OK, "absent is fine");
    sl_test_rmtree(dir);
}

Test(io_fs, a_node_holding_foreign_files_is_never_replaced)
{
    const char *dir = sl_test_tmpdir("fs-foreign-in-node");
    old_node(dir, "g.zarr");
    put(dir, "g.zarr/graph.json", "{\"sluice\": 1}");
    char dest[PATH_MAX];
    snprintf(dest, sizeof(dest), "%s/g.zarr", dir);
    sl_fs_replace_mode modes[] = {SL_FS_REPLACE_STAGED, SL_FS_REPLACE_IN_PLACE};
    for (int m = 0; m < 2; m++) {
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_null(sl_fs_replace_begin(dest, modes[m], &err));
        cr_assert_eq(err.code, SL_EEXIST);
        cr_assert_not_null(strstr(err.text, "graph.json"), "%s", err.text);
    }
    cr_assert_eq(count(dest), 4, "untouched");
    sl_test_rmtree(dir);
}

Test(io_fs, an_old_node_moved_aside_by_a_killed_swap_comes_back)
{
    const char *dir = sl_test_tmpdir("fs-old-back");
    char host[256] = "";
    cr_assert_eq(gethostname(host, sizeof(host)), 0);
    for (char *h = host; *h != '\0'; h++)
        if (*h == '/' || *h == '+' || *h == '@')
            *h = '_';
    /* A dead process's pid: a child that has exited and been reaped. */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    cr_assert_eq(waitpid(child, NULL, 0), child);
    char name[512];
    snprintf(name, sizeof(name), ".sluice-tmp.node.%ld@%s+a.zarr.old", (long)child, host);
    old_node(dir, name);
    char dest[PATH_MAX];
    snprintf(dest, sizeof(dest), "%s/a.zarr", dir);
    sl_fs_replace *r = sl_fs_replace_begin(dest, SL_FS_REPLACE_STAGED, NULL);
    cr_assert_not_null(r);
    cr_assert(sl_fs_replace_existed(r), "the old node is back at its path first");
    sl_fs_replace_abort(r);
    cr_assert(has(dir, "a.zarr/9.9") && !has(dir, name));
    cr_assert_eq(count(dir), 1);
    sl_test_rmtree(dir);
}

/* A killed run's staging directory, begun over an old node at dir/a.zarr
 * by a child process that exits without ending it; its path and identity. */
static void
killed_begin(const char *dest, char *staging, size_t size, struct stat *id)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        sl_fs_replace *r = sl_fs_replace_begin(dest, SL_FS_REPLACE_STAGED, NULL);
        if (r == NULL)
            _exit(1);
        put(sl_fs_replace_path(r), "zarr.json", "{\"zarr_format\": 3}");
        ssize_t w = write(fds[1], sl_fs_replace_path(r), strlen(sl_fs_replace_path(r)) + 1);
        _exit(w > 0 ? 0 : 1); /* killed: neither committed nor aborted */
    }
    close(fds[1]);
    ssize_t n = read(fds[0], staging, size);
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0 && n > 0);
    cr_assert_eq(stat(staging, id), 0);
}

Test(io_fs, resume_takes_over_a_killed_runs_directory_by_its_identity)
{
    const char *dir = sl_test_tmpdir("fs-resume");
    old_node(dir, "a.zarr");
    char dest[PATH_MAX], staging[PATH_MAX];
    snprintf(dest, sizeof(dest), "%s/a.zarr", dir);
    struct stat id;
    killed_begin(dest, staging, sizeof(staging), &id);
    struct sl_error err = SL_ERROR_INIT;
    /* Another identity is never taken (another device: an inode number
     * near the staging's may be a real directory's, such as dest's). */
    cr_assert_null(
        sl_fs_replace_resume(dest, staging, (uint64_t)id.st_dev + 1, (uint64_t)id.st_ino, &err));
    cr_assert_eq(err.code, SL_ENOTFOUND, "%s", err.text);
    sl_fs_replace *r =
        sl_fs_replace_resume(dest, staging, (uint64_t)id.st_dev, (uint64_t)id.st_ino, &err);
    cr_assert_not_null(r, "%s", err.text);
    cr_assert(sl_fs_replace_existed(r));
    const char *at = sl_fs_replace_path(r);
    cr_assert(has(at, "zarr.json"), "what the killed run wrote is kept");
    cr_assert_str_neq(at, staging, "renamed as this process's");
    /* Kept (a refused resume), then found again under its new name. */
    char renamed[PATH_MAX];
    snprintf(renamed, sizeof(renamed), "%s", at);
    sl_fs_replace_keep(r);
    cr_assert(has(renamed, "zarr.json"));
    r = sl_fs_replace_resume(dest, staging, (uint64_t)id.st_dev, (uint64_t)id.st_ino, &err);
    cr_assert_not_null(r, "%s", err.text);
    cr_assert_eq(sl_fs_replace_commit(r, &err), SL_OK, "%s", err.text);
    cr_assert(has(dest, "zarr.json") && !has(dest, ".zarray"), "the new node in place");
    cr_assert_eq(count(dir), 1, "no hidden sibling left");
    /* Put in place already: written where it is. */
    r = sl_fs_replace_resume(dest, staging, (uint64_t)id.st_dev, (uint64_t)id.st_ino, &err);
    cr_assert_not_null(r, "%s", err.text);
    char resolved[PATH_MAX];
    cr_assert_eq(sl_fs_path_resolve(dest, resolved, sizeof(resolved), NULL), SL_OK);
    cr_assert_str_eq(sl_fs_replace_path(r), resolved);
    cr_assert_eq(sl_fs_replace_commit(r, &err), SL_OK, "%s", err.text);
    cr_assert(has(dest, "zarr.json"));
    sl_test_rmtree(dir);
}

/* A killed run's process that nobody reaps stays a zombie: its staged
 * output and temporary files are still someone's to take over. */
Test(io_fs_replace, a_zombie_owner_counts_as_gone)
{
    cr_assert_not(sl__pid_gone((long)getpid()), "this process runs");
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        char c;
        close(fd[1]);
        (void)read(fd[0], &c, 1); /* wait until told to exit */
        _exit(0);
    }
    close(fd[0]);
    cr_assert_not(sl__pid_gone((long)child), "a running child");
    close(fd[1]); /* it exits; not reaped yet: a zombie */
    for (int i = 0; i < 200 && !sl__pid_gone((long)child); i++)
        usleep(5000);
    cr_assert(sl__pid_gone((long)child), "an exited, unreaped child (a zombie)");
    cr_assert_eq(waitpid(child, NULL, 0), child);
    cr_assert(sl__pid_gone((long)child), "a reaped child");
    cr_assert_not(sl__pid_gone(0));
}
