/* SPDX-License-Identifier: MIT */
/*
 * Deferred syncs of a graph file's new nodes (`defer_sync`): which nodes
 * are written without an fsync per object (those staged beside their
 * path, fresh or "overwrite": true, in a run begun afresh), and what
 * sl_graph_json_commit does when the one sync before a node's rename
 * fails: the commit fails naming the path, the staging directory is
 * removed and the old node (or nothing) stays at the path.  The sync
 * failure comes from a store over the node's staging directory opened on
 * the fault I/O table (tests/io/fault_io.h), put in the document's place
 * through load_json_internal.h; the fsyncs themselves are counted under
 * strace by tests/launcher/check_deferred_sync.py.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>

#include <sluice.h>

#include "fault_io.h"
#include "load_json_internal.h"
#include "testutil.h"

TestSuite(graph_load_json_sync, .timeout = 60.0);

#define MAX_ERRORS 8

/* A load's error list with its own records. */
struct errs {
    struct sl_error rec[MAX_ERRORS];
    struct sl_graph_json_errors list;
};

/* Load `text` in `dir` creating new arrays on disk, with `defer_sync`
 * and as `new_arrays` says. */
static sl_graph_json *
load(const char *dir, const char *text, sl_graph_json_arrays new_arrays, bool defer_sync,
     struct errs *e)
{
    memset(e, 0, sizeof(*e));
    e->list = (struct sl_graph_json_errors){.errors = e->rec, .capacity = MAX_ERRORS};
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    o.base_dir = dir;
    o.new_arrays = new_arrays;
    o.defer_sync = defer_sync;
    sl_graph_json *doc = sl_graph_json_load_string(text, strlen(text), "test.json", &o, &e->list);
    cr_assert_not_null(doc, "%s %s", e->rec[0].path, e->rec[0].text);
    return doc;
}

/* A 2-d uint16 array of `n` x `n` in chunks of 4 at dir/name. */
static void
make_array(const char *dir, const char *name, uint64_t n)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(path, NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = n;
        sp.chunk_shape[d] = 4;
    }
    sl_array *a = sl_array_create(s, "", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* The first dimension of the array at dir/name, or 0 when none is there. */
static uint64_t
array_extent(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.create = false;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(path, &so, &err);
    cr_assert_not_null(s, "%s", err.text);
    sl_array *a = sl_array_open(s, "", NULL, &err);
    uint64_t extent = a != NULL ? sl_array_shape(a)[0] : 0;
    sl_array_unref(a);
    sl_store_unref(s);
    return extent;
}

/* How many staging directories (hidden siblings) lie in `dir`. */
static int
count_staging(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        n += strncmp(de->d_name, ".sluice-tmp", 11) == 0;
    closedir(d);
    return n;
}

/* A graph writing raw.zarr halved into out.zarr, whose "overwrite" is
 * `overwrite` (a JSON value). */
static void
graph_text(char *buf, size_t size, const char *overwrite)
{
    snprintf(buf, size,
             "{\"sluice\": 1,"
             " \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"},"
             "  \"out\": {\"path\": \"out.zarr\", \"like\": \"raw\", \"overwrite\": %s}},"
             " \"nodes\": {\"read\": {\"op\": \"get\", \"array\": \"raw\"},"
             "  \"half\": {\"op\": \"downsample\", \"input\": \"read\", \"factors\": [2, 2],"
             "   \"method\": \"mean\"},"
             "  \"write\": {\"op\": \"put\", \"input\": \"half\", \"array\": \"out\"}}}",
             overwrite);
}

/* Put a store over node 0's staging directory whose sync fails with EIO in
 * place of the one the document syncs at commit. */
static void
sync_fails(sl_graph_json *doc, struct sl_fault_io *f)
{
    cr_assert_eq(doc->n_reps, 1);
    cr_assert_not_null(doc->reps[0].sync, "the node is written with deferred syncs");
    sl_fault_io_init(f);
    sl_fault_io_fail(f, SL_FAULT_SYNCFS, 1, EIO);
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.create = false;
    so.defer_sync = true;
    so.io = &f->table;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(sl_fs_replace_path(doc->reps[0].rep), &so, &err);
    cr_assert_not_null(s, "%s", err.text);
    sl_store_unref(doc->reps[0].sync);
    doc->reps[0].sync = s;
}

Test(graph_load_json_sync, only_nodes_staged_afresh_defer_their_syncs)
{
    const char *dir = sl_test_tmpdir("json-sync-which");
    make_array(dir, "raw.zarr", 16);
    char text[1024];
    struct errs e;
    /* A fresh node and "overwrite": true: staged beside the path. */
    const char *staged[] = {"false", "true", "\"in-place\""};
    for (size_t i = 0; i < sizeof(staged) / sizeof(staged[0]); i++) {
        graph_text(text, sizeof(text), staged[i]);
        sl_graph_json *doc = load(dir, text, SL_GRAPH_JSON_CREATE, true, &e);
        cr_assert_not_null(doc->reps[0].sync, "fresh, \"overwrite\": %s: deferred", staged[i]);
        sl_graph_json_destroy(doc);
        /* Not asked: an fsync per object. */
        doc = load(dir, text, SL_GRAPH_JSON_CREATE, false, &e);
        cr_assert_null(doc->reps[0].sync, "\"overwrite\": %s, not asked: not deferred", staged[i]);
        sl_graph_json_destroy(doc);
    }
    make_array(dir, "out.zarr", 8);
    graph_text(text, sizeof(text), "true");
    sl_graph_json *doc = load(dir, text, SL_GRAPH_JSON_CREATE, true, &e);
    cr_assert_not_null(doc->reps[0].sync, "replacing a node staged: deferred");
    sl_graph_json_destroy(doc);
    /* In place over an existing node nothing hides it: an fsync per object. */
    graph_text(text, sizeof(text), "\"in-place\"");
    doc = load(dir, text, SL_GRAPH_JSON_CREATE, true, &e);
    cr_assert_null(doc->reps[0].sync, "in place over a node: not deferred");
    sl_graph_json_destroy(doc);
    /* Another process of the run opens what the first began: none. */
    doc = load(dir, text, SL_GRAPH_JSON_OPEN, true, &e);
    cr_assert_eq(doc->n_reps, 0);
    sl_graph_json_destroy(doc);
    sl_test_rmtree(dir);
}

Test(graph_load_json_sync, deferred_nodes_are_put_in_place_after_their_sync)
{
    const char *dir = sl_test_tmpdir("json-sync-ok");
    make_array(dir, "raw.zarr", 16);
    make_array(dir, "out.zarr", 12);
    char text[1024];
    graph_text(text, sizeof(text), "true");
    struct errs e;
    sl_graph_json *doc = load(dir, text, SL_GRAPH_JSON_CREATE, true, &e);
    cr_assert_not_null(doc->reps[0].sync);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_json_commit(doc, true, &err), SL_OK, "%s", err.text);
    cr_assert_null(doc->reps[0].sync, "released once synced");
    sl_graph_json_destroy(doc);
    cr_assert_eq(array_extent(dir, "out.zarr"), 8, "the new node (16 halved) is in place");
    cr_assert_eq(count_staging(dir), 0);
    sl_test_rmtree(dir);
}

Test(graph_load_json_sync, a_failed_sync_fails_the_commit_and_keeps_the_old_node)
{
    const char *dir = sl_test_tmpdir("json-sync-fail");
    make_array(dir, "raw.zarr", 40);
    make_array(dir, "out.zarr", 12);
    char text[1024];
    graph_text(text, sizeof(text), "true");
    struct errs e;
    sl_graph_json *doc = load(dir, text, SL_GRAPH_JSON_CREATE, true, &e);
    struct sl_fault_io f;
    sync_fails(doc, &f);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_json_commit(doc, true, &err), SL_EIO, "%s", err.text);
    cr_assert_not_null(strstr(err.text, "\"out.zarr\""), "names the path: %s", err.text);
    cr_assert_not_null(strstr(err.text, "durable"), "%s", err.text);
    cr_assert_eq(sl_fault_io_calls(&f, SL_FAULT_SYNCFS), 1);
    sl_graph_json_destroy(doc);
    cr_assert_eq(array_extent(dir, "out.zarr"), 12, "the old node stays");
    cr_assert_eq(count_staging(dir), 0, "the staging directory is removed");
    sl_fault_io_fini(&f);
    sl_test_rmtree(dir);
}

Test(graph_load_json_sync, a_failed_run_syncs_the_fresh_nodes_it_puts_in_place)
{
    const char *dir = sl_test_tmpdir("json-sync-failed-run");
    make_array(dir, "raw.zarr", 40);
    char text[1024];
    graph_text(text, sizeof(text), "false");
    struct errs e;
    sl_graph_json *doc = load(dir, text, SL_GRAPH_JSON_CREATE, true, &e);
    struct sl_fault_io f;
    sync_fails(doc, &f);
    struct sl_error err = SL_ERROR_INIT;
    /* A failed run still puts a fresh node in place: not one it cannot sync. */
    cr_assert_eq(sl_graph_json_commit(doc, false, &err), SL_EIO, "%s", err.text);
    cr_assert_not_null(strstr(err.text, "\"out.zarr\""), "%s", err.text);
    cr_assert_eq(sl_fault_io_calls(&f, SL_FAULT_SYNCFS), 1);
    sl_graph_json_destroy(doc);
    cr_assert_eq(array_extent(dir, "out.zarr"), 0, "nothing at the path");
    cr_assert_eq(count_staging(dir), 0);
    sl_fault_io_fini(&f);
    sl_test_rmtree(dir);
}
