/* SPDX-License-Identifier: MIT */
/*
 * The JSON graph loader's paths as the kernel reaches them (issue 18): a
 * symbolic link in the base directory does not carry an array or a
 * pyramid group out of it without permission, and two entries that name
 * one directory (a link, "..", "./x", a trailing slash), or one inside the
 * other where either is written, are refused before anything is created,
 * naming both paths as written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <sluice.h>

#include "testutil.h"

TestSuite(graph_load_json_paths, .timeout = 60.0);

#define MAX_ERRORS 8

/* A load's error list with its own records. */
struct errs {
    struct sl_error rec[MAX_ERRORS];
    struct sl_graph_json_errors list;
};

/* Load `text` with `dir` as the base directory, creating new arrays on
 * disk (so a missed refusal leaves something behind). */
static sl_graph_json *
load(const char *dir, const char *text, bool allow_outside, struct errs *e)
{
    memset(e, 0, sizeof(*e));
    e->list = (struct sl_graph_json_errors){.errors = e->rec, .capacity = MAX_ERRORS};
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    o.base_dir = dir;
    o.new_arrays = SL_GRAPH_JSON_CREATE;
    o.allow_outside = allow_outside;
    return sl_graph_json_load_string(text, strlen(text), "test.json", &o, &e->list);
}

static bool
exists(const char *dir, const char *name)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

/* A 3-d uint16 array of 8 x 8 x 8 in chunks of 4 at dir/name. */
static void
make_array(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(path, NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 3;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 3; d++) {
        sp.shape[d] = 8;
        sp.chunk_shape[d] = 4;
    }
    sl_array *a = sl_array_create(s, "", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    sl_array_unref(a);
    sl_store_unref(s);
}

static void
make_dir(const char *dir, const char *name)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    cr_assert_eq(mkdir(p, 0755), 0, "mkdir %s", p);
}

static void
make_link(const char *dir, const char *name, const char *target)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    cr_assert_eq(symlink(target, p), 0, "symlink %s -> %s", p, target);
}

/* A scratch directory, copied out of sl_test_tmpdir's static buffer. */
static char *
scratch(const char *tag)
{
    char *d = strdup(sl_test_tmpdir(tag));
    cr_assert_not_null(d);
    return d;
}

/* A graph reading array `src_path` and writing a new array at `dst_path`
 * like it; `extra` adds entries to "arrays" (may be ""). */
static void
copy_graph(char *out, size_t size, const char *src_path, const char *dst_path, const char *extra)
{
    snprintf(out, size,
             "{\"sluice\": 1, \"arrays\": {\"src\": {\"path\": \"%s\"}, \"dst\": {\"path\": "
             "\"%s\", \"like\": \"src\"}%s},\n"
             " \"nodes\": {\"r\": {\"op\": \"get\", \"array\": \"src\"}, \"w\": {\"op\": \"put\", "
             "\"input\": \"r\", \"array\": \"dst\"}}}",
             src_path, dst_path, extra);
}

static void
assert_has(const struct sl_error *e, const char *what)
{
    cr_assert_not_null(strstr(e->text, what), "\"%s\" not in: %s", what, e->text);
}

/* ---- symbolic links out of the base directory ----------------------------------- */

Test(graph_load_json_paths, a_link_out_of_the_base_directory_is_refused_for_reading)
{
    char *dir = scratch("paths-out"), *far = scratch("paths-far");
    make_array(far, "raw.zarr");
    make_link(dir, "ext", far);
    char text[4096];
    copy_graph(text, sizeof(text), "ext/raw.zarr", "out.zarr", "");
    struct errs e;
    cr_assert_null(load(dir, text, false, &e));
    cr_assert_eq(e.list.count, 1, "%zu errors, first %s", e.list.count, e.rec[0].text);
    cr_assert_eq(e.rec[0].code, SL_EACCES);
    cr_assert_str_eq(e.rec[0].path, "/arrays/src/path");
    assert_has(&e.rec[0], "\"ext/raw.zarr\" leads to ");
    assert_has(&e.rec[0], "/raw.zarr, outside ");
    assert_has(&e.rec[0], "--allow-outside");
    assert_has(&e.rec[0], "opts.allow_outside");
    cr_assert(!exists(dir, "out.zarr"), "nothing is created");
    sl_graph_json *doc = load(dir, text, true, &e);
    cr_assert_not_null(doc, "allowed: %s", e.rec[0].text);
    sl_graph_json_destroy(doc);
    sl_test_rmtree(dir);
    sl_test_rmtree(far);
    free(dir);
    free(far);
}

Test(graph_load_json_paths, a_link_out_of_the_base_directory_is_refused_for_writing)
{
    char *dir = scratch("paths-outw"), *far = scratch("paths-farw");
    make_array(dir, "raw.zarr");
    make_link(dir, "ext", far);
    char text[4096];
    copy_graph(text, sizeof(text), "raw.zarr", "ext/new/out.zarr", "");
    struct errs e;
    cr_assert_null(load(dir, text, false, &e));
    cr_assert_eq(e.rec[0].code, SL_EACCES, "%s", e.rec[0].text);
    cr_assert_str_eq(e.rec[0].path, "/arrays/dst/path");
    assert_has(&e.rec[0], "\"ext/new/out.zarr\" leads to ");
    cr_assert(!exists(far, "new"), "nothing is created through the link");
    sl_test_rmtree(dir);
    sl_test_rmtree(far);
    free(dir);
    free(far);
}

Test(graph_load_json_paths, a_pyramid_group_through_a_link_out_is_refused)
{
    char *dir = scratch("paths-pyr"), *far = scratch("paths-farp");
    make_array(dir, "raw.zarr");
    make_link(dir, "ext", far);
    const char *text =
        "{\"sluice\": 1, \"arrays\": {\"src\": {\"path\": \"raw.zarr\"}},\n"
        " \"nodes\": {\"r\": {\"op\": \"get\", \"array\": \"src\"}, \"p\": {\"op\": \"pyramid\", "
        "\"input\": \"r\", \"group\": \"ext/g.zarr\", \"levels\": 2, \"factors\": [2, 2, 2], "
        "\"method\": \"mean\"}}}";
    struct errs e;
    cr_assert_null(load(dir, text, false, &e));
    cr_assert_eq(e.rec[0].code, SL_EACCES, "%s", e.rec[0].text);
    cr_assert_str_eq(e.rec[0].path, "/nodes/p/group");
    cr_assert(!exists(far, "g.zarr"));
    sl_test_rmtree(dir);
    sl_test_rmtree(far);
    free(dir);
    free(far);
}

/* ---- remote outputs ------------------------------------------------------------- */

Test(graph_load_json_paths, http_outputs_are_refused_before_anything_is_requested)
{
    char *dir = scratch("paths-http");
    make_array(dir, "raw.zarr");
    char text[4096];
    copy_graph(text, sizeof(text), "raw.zarr", "http://127.0.0.1:1/out.zarr", "");
    struct errs e;
    cr_assert_null(load(dir, text, false, &e));
    cr_assert_eq(e.list.count, 1, "%zu errors, first %s", e.list.count, e.rec[0].text);
    cr_assert_eq(e.rec[0].code, SL_EACCES, "%s", e.rec[0].text);
    cr_assert_str_eq(e.rec[0].path, "/arrays/dst/path");
    assert_has(&e.rec[0], "http(s) stores are read here, not written");
    const char *pyr =
        "{\"sluice\": 1, \"arrays\": {\"src\": {\"path\": \"raw.zarr\"}},\n"
        " \"nodes\": {\"r\": {\"op\": \"get\", \"array\": \"src\"}, \"p\": {\"op\": \"pyramid\", "
        "\"input\": \"r\", \"group\": \"https://127.0.0.1:1/g.zarr\", \"levels\": 2, "
        "\"factors\": [2, 2, 2]}}}";
    cr_assert_null(load(dir, pyr, false, &e));
    cr_assert_eq(e.rec[0].code, SL_EACCES, "%s", e.rec[0].text);
    cr_assert_str_eq(e.rec[0].path, "/nodes/p/group");
    sl_test_rmtree(dir);
    free(dir);
}

Test(graph_load_json_paths, a_link_that_stays_inside_is_accepted)
{
    char *dir = scratch("paths-in");
    make_dir(dir, "data");
    make_array(dir, "data/raw.zarr");
    make_link(dir, "in", "data");
    char text[4096];
    copy_graph(text, sizeof(text), "in/raw.zarr", "out.zarr", "");
    struct errs e;
    sl_graph_json *doc = load(dir, text, false, &e);
    cr_assert_not_null(doc, "%s %s", e.rec[0].path, e.rec[0].text);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_json_commit(doc, true, &err), SL_OK, "%s", err.text);
    sl_graph_json_destroy(doc);
    cr_assert(exists(dir, "out.zarr"));
    sl_test_rmtree(dir);
    free(dir);
}

/* ---- aliases ------------------------------------------------------------------------ */

/* Load `text` in `dir` (outside paths as `allow_outside` says): refused
 * with one SL_EINVAL at `ptr` naming `a` and `b` (as written) and `what`,
 * and `dst` not created. */
static void
assert_alias(const char *dir, const char *text, bool allow_outside, const char *ptr, const char *a,
             const char *b, const char *what, const char *dst)
{
    struct errs e;
    cr_assert_null(load(dir, text, allow_outside, &e), "an alias of \"%s\" and \"%s\" loads", a, b);
    cr_assert_eq(e.list.count, 1, "%zu errors, first %s %s", e.list.count, e.rec[0].path,
                 e.rec[0].text);
    cr_assert_eq(e.rec[0].code, SL_EINVAL, "%s", e.rec[0].text);
    cr_assert_str_eq(e.rec[0].path, ptr);
    char q[200];
    snprintf(q, sizeof(q), "\"%s\"", a);
    assert_has(&e.rec[0], q);
    snprintf(q, sizeof(q), "\"%s\"", b);
    assert_has(&e.rec[0], q);
    assert_has(&e.rec[0], what);
    if (dst != NULL)
        cr_assert(!exists(dir, dst), "%s is not created", dst);
}

Test(graph_load_json_paths, an_output_that_is_the_input_through_a_link_is_refused)
{
    char *dir = scratch("paths-alias-link");
    make_array(dir, "raw.zarr");
    make_link(dir, "lnk.zarr", "raw.zarr");
    const char *text =
        "{\"sluice\": 1, \"arrays\": {\"src\": {\"path\": \"raw.zarr\"}, \"dst\": {\"path\": "
        "\"lnk.zarr\", \"overwrite\": true}},\n"
        " \"nodes\": {\"r\": {\"op\": \"get\", \"array\": \"src\"}, \"c\": {\"op\": \"clip\", "
        "\"input\": \"r\", \"max\": 10}, \"w\": {\"op\": \"put\", \"input\": \"c\", \"array\": "
        "\"dst\"}}}";
    assert_alias(dir, text, false, "/arrays/dst/path", "lnk.zarr", "raw.zarr", "one directory",
                 NULL);
    sl_test_rmtree(dir);
    free(dir);
}

Test(graph_load_json_paths, two_names_for_one_array_read_are_refused)
{
    char *dir = scratch("paths-alias-read");
    make_array(dir, "raw.zarr");
    make_link(dir, "lnk.zarr", "raw.zarr");
    char text[4096];
    copy_graph(text, sizeof(text), "raw.zarr", "out.zarr", ", \"again\": {\"path\": \"lnk.zarr\"}");
    assert_alias(dir, text, false, "/arrays/again/path", "lnk.zarr", "raw.zarr", "one array",
                 "out.zarr");
    sl_test_rmtree(dir);
    free(dir);
}

Test(graph_load_json_paths, a_dotdot_alias_is_refused)
{
    char *dir = scratch("paths-alias-dotdot");
    make_dir(dir, "sub");
    make_array(dir, "raw.zarr");
    char text[4096];
    copy_graph(text, sizeof(text), "raw.zarr", "sub/../raw.zarr", "");
    /* "like" a read array at the same place: "overwrite" would be needed
     * too, but the alias is found first, in the document pass. */
    struct errs e;
    cr_assert_null(load(dir, text, true, &e));
    bool found = false;
    for (size_t i = 0; i < e.list.count && i < MAX_ERRORS; i++)
        found |= e.rec[i].code == SL_EINVAL && strcmp(e.rec[i].path, "/arrays/dst/path") == 0 &&
                 strstr(e.rec[i].text, "\"sub/../raw.zarr\" and \"raw.zarr\"") != NULL;
    cr_assert(found, "no alias reported; first %s %s", e.rec[0].path, e.rec[0].text);
    /* Two new arrays, one spelled with "..". */
    copy_graph(text, sizeof(text), "raw.zarr", "out.zarr",
               ", \"dst2\": {\"path\": \"sub/../out.zarr\", \"like\": \"src\"}");
    assert_alias(dir, text, true, "/arrays/dst2/path", "sub/../out.zarr", "out.zarr",
                 "one directory", "out.zarr");
    sl_test_rmtree(dir);
    free(dir);
}

Test(graph_load_json_paths, a_trailing_slash_alias_of_a_pyramid_group_is_refused)
{
    char *dir = scratch("paths-alias-slash");
    make_array(dir, "raw.zarr");
    const char *text =
        "{\"sluice\": 1, \"arrays\": {\"src\": {\"path\": \"raw.zarr\"}, \"dst\": {\"path\": "
        "\"g.zarr\", \"like\": \"src\"}},\n"
        " \"nodes\": {\"r\": {\"op\": \"get\", \"array\": \"src\"}, \"w\": {\"op\": \"put\", "
        "\"input\": \"r\", \"array\": \"dst\"}, \"p\": {\"op\": \"pyramid\", \"input\": "
        "\"r\", \"group\": \"./g.zarr/\", \"levels\": 2, \"factors\": [2, 2, 2], "
        "\"method\": \"mean\"}}}";
    assert_alias(dir, text, false, "/nodes/p/group", "./g.zarr/", "g.zarr", "one directory",
                 "g.zarr");
    sl_test_rmtree(dir);
    free(dir);
}

/* Arrays spelled alike once joined ("./x", "x/") were refused before
 * paths were resolved; they are still reported once, not twice. */
Test(graph_load_json_paths, arrays_spelled_alike_are_reported_once)
{
    char *dir = scratch("paths-alias-spelled");
    make_array(dir, "raw.zarr");
    char text[4096];
    copy_graph(text, sizeof(text), "raw.zarr", "out.zarr",
               ", \"dst2\": {\"path\": \"./out.zarr/\", \"like\": \"src\"}");
    struct errs e;
    cr_assert_null(load(dir, text, false, &e));
    cr_assert_eq(e.list.count, 1, "%zu errors, first %s", e.list.count, e.rec[0].text);
    cr_assert_eq(e.rec[0].code, SL_EINVAL);
    cr_assert_str_eq(e.rec[0].path, "/arrays/dst2/path");
    cr_assert(!exists(dir, "out.zarr"));
    sl_test_rmtree(dir);
    free(dir);
}

Test(graph_load_json_paths, an_array_inside_another_written_one_is_refused)
{
    char *dir = scratch("paths-nested");
    make_array(dir, "raw.zarr");
    char text[4096];
    copy_graph(text, sizeof(text), "raw.zarr", "a.zarr",
               ", \"inner\": {\"path\": \"a.zarr/b\", \"like\": \"src\"}");
    assert_alias(dir, text, false, "/arrays/inner/path", "a.zarr/b", "a.zarr", "lies inside",
                 "a.zarr");
    /* Writing inside the array read. */
    copy_graph(text, sizeof(text), "raw.zarr", "raw.zarr/sub.zarr", "");
    assert_alias(dir, text, false, "/arrays/dst/path", "raw.zarr/sub.zarr", "raw.zarr",
                 "lies inside", "raw.zarr/sub.zarr");
    sl_test_rmtree(dir);
    free(dir);
}

Test(graph_load_json_paths, a_pyramid_group_holding_its_input_is_refused)
{
    char *dir = scratch("paths-pyr-input");
    make_dir(dir, "g.zarr");
    make_array(dir, "g.zarr/raw");
    const char *text =
        "{\"sluice\": 1, \"arrays\": {\"src\": {\"path\": \"g.zarr/raw\"}},\n"
        " \"nodes\": {\"r\": {\"op\": \"get\", \"array\": \"src\"}, \"p\": {\"op\": \"pyramid\", "
        "\"input\": \"r\", \"group\": \"g.zarr\", \"levels\": 2, \"factors\": [2, 2, 2], "
        "\"method\": \"mean\", \"overwrite\": true}}}";
    assert_alias(dir, text, false, "/nodes/p/group", "g.zarr/raw", "g.zarr",
                 "replacing the outer would destroy the inner", NULL);
    cr_assert(exists(dir, "g.zarr/raw"), "the input is still there");
    sl_test_rmtree(dir);
    free(dir);
}

Test(graph_load_json_paths, distinct_paths_with_a_shared_prefix_are_not_aliases)
{
    char *dir = scratch("paths-apart");
    make_array(dir, "raw.zarr");
    char text[4096];
    copy_graph(text, sizeof(text), "raw.zarr", "raw.zarr2", "");
    struct errs e;
    sl_graph_json *doc = load(dir, text, false, &e);
    cr_assert_not_null(doc, "%s %s", e.rec[0].path, e.rec[0].text);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_json_commit(doc, true, &err), SL_OK, "%s", err.text);
    sl_graph_json_destroy(doc);
    cr_assert(exists(dir, "raw.zarr2"));
    sl_test_rmtree(dir);
    free(dir);
}
