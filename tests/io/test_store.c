/* SPDX-License-Identifier: MIT */
/*
 * Behaviour every store shares (memory and filesystem): get, ranges, set,
 * delete, list, key refusal, counters, buffers, concurrency; plus what only
 * the memory store has (hook, allocator faults).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

#include "store_internal.h"
#include "testutil.h"

static char fs_root[4096];

static void
remove_fs_root(void)
{
    if (fs_root[0] != '\0')
        sl_test_rmtree(fs_root);
    fs_root[0] = '\0';
}

TestSuite(io_store, .timeout = 20.0, .fini = remove_fs_root);

typedef sl_store *make_store_fn(void);

static sl_store *
make_memory(void)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_create_memory(NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    return s;
}

static sl_store *
make_fs(void)
{
    struct sl_error err = SL_ERROR_INIT;
    snprintf(fs_root, sizeof(fs_root), "%s", sl_test_tmpdir("store"));
    sl_store *s = sl_store_open_fs(fs_root, NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    return s;
}

static void
put(sl_store *s, const char *key, const char *text)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, key, text, strlen(text), &err), SL_OK, "%s", err.text);
}

static void
expect_value(sl_store *s, const char *key, const char *text)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    uint64_t size = 0;
    cr_assert_eq(sl_store_get(s, key, NULL, &b, &size, &err), SL_OK, "%s: %s", key, err.text);
    cr_assert_eq(b.size, strlen(text));
    cr_assert_eq(size, strlen(text));
    cr_assert(b.size == 0 || memcmp(b.data, text, b.size) == 0);
    sl_buf_fini(&b);
}

static void
check_get_set_delete(make_store_fn *make)
{
    sl_store *s = make();
    struct sl_error err = SL_ERROR_INIT;
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "a/b/c", NULL, &b, NULL, &err), SL_ENOTFOUND);
    cr_assert_not_null(strstr(err.text, "a/b/c"), "%s", err.text);
    put(s, "a/b/c", "hello");
    expect_value(s, "a/b/c", "hello");
    put(s, "a/b/c", "replaced value");
    expect_value(s, "a/b/c", "replaced value");
    put(s, "zero", "");
    expect_value(s, "zero", "");
    uint64_t size;
    cr_assert_eq(sl_store_size(s, "a/b/c", &size, NULL), SL_OK);
    cr_assert_eq(size, 14);
    cr_assert_eq(sl_store_delete(s, "a/b/c", NULL), SL_OK);
    cr_assert_eq(sl_store_get(s, "a/b/c", NULL, &b, NULL, NULL), SL_ENOTFOUND);
    cr_assert_eq(sl_store_delete(s, "a/b/c", NULL), SL_OK, "deleting an absent key succeeds");
    cr_assert_eq(sl_store_delete(s, "never/there", NULL), SL_OK);
    sl_buf_fini(&b);
    sl_store_unref(s);
}

Test(io_store, memory_get_set_delete) { check_get_set_delete(make_memory); }
Test(io_store, fs_get_set_delete) { check_get_set_delete(make_fs); }

static void
check_ranges(make_store_fn *make)
{
    sl_store *s = make();
    put(s, "obj", "0123456789");
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    struct sl_byte_range r = sl_byte_range_at(2, 3);
    cr_assert_eq(sl_store_get(s, "obj", &r, &b, NULL, &err), SL_OK, "%s", err.text);
    cr_assert(b.size == 3 && memcmp(b.data, "234", 3) == 0);
    r = sl_byte_range_suffix(4);
    cr_assert_eq(sl_store_get(s, "obj", &r, &b, NULL, NULL), SL_OK);
    cr_assert(b.size == 4 && memcmp(b.data, "6789", 4) == 0);
    r = sl_byte_range_at(7, SL_RANGE_TO_END);
    cr_assert_eq(sl_store_get(s, "obj", &r, &b, NULL, NULL), SL_OK);
    cr_assert(b.size == 3 && memcmp(b.data, "789", 3) == 0);
    r = sl_byte_range_at(10, 0);
    cr_assert_eq(sl_store_get(s, "obj", &r, &b, NULL, NULL), SL_OK);
    cr_assert_eq(b.size, 0);
    r = sl_byte_range_at(8, 3);
    cr_assert_eq(sl_store_get(s, "obj", &r, &b, NULL, &err), SL_EBOUNDS);
    cr_assert_not_null(strstr(err.text, "exceeds object of 10 bytes"), "%s", err.text);
    cr_assert_str_eq(err.source, "obj");
    r = sl_byte_range_at(UINT64_MAX - 1, 4);
    cr_assert_eq(sl_store_get(s, "obj", &r, &b, NULL, NULL), SL_EBOUNDS, "no overflow");
    r = sl_byte_range_suffix(11);
    cr_assert_eq(sl_store_get(s, "obj", &r, &b, NULL, NULL), SL_EBOUNDS);
    sl_buf_fini(&b);
    sl_store_unref(s);
}

Test(io_store, memory_byte_ranges) { check_ranges(make_memory); }
Test(io_store, fs_byte_ranges) { check_ranges(make_fs); }

/* Collects listed keys as "key=size;" text. */
struct listing {
    char text[1024];
    size_t len;
};

static sl_status
collect_key(void *arg, const char *key, uint64_t bytes)
{
    struct listing *l = arg;
    l->len += (size_t)snprintf(l->text + l->len, sizeof(l->text) - l->len, "%s=%llu;", key,
                               (unsigned long long)bytes);
    return SL_OK;
}

static sl_status
stop_listing(void *arg, const char *key, uint64_t bytes)
{
    (void)key;
    (void)bytes;
    (*(int *)arg)++;
    return SL_ECANCELED;
}

static void
check_list(make_store_fn *make)
{
    sl_store *s = make();
    put(s, "arr/c/1/0", "xx");
    put(s, "arr/c/0/0", "x");
    put(s, "arr/zarr.json", "{}");
    put(s, "arr.b", "yyy");
    put(s, "arr/c/10", "zzzz");
    put(s, "other", "o");
    struct listing l = {0};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_list(s, "", collect_key, &l, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(l.text, "arr.b=3;arr/c/0/0=1;arr/c/1/0=2;arr/c/10=4;arr/zarr.json=2;other=1;");
    l = (struct listing){0};
    cr_assert_eq(sl_store_list(s, "arr/c/", collect_key, &l, NULL), SL_OK);
    cr_assert_str_eq(l.text, "arr/c/0/0=1;arr/c/1/0=2;arr/c/10=4;");
    l = (struct listing){0};
    cr_assert_eq(sl_store_list(s, "arr/c/1", collect_key, &l, NULL), SL_OK);
    cr_assert_str_eq(l.text, "arr/c/1/0=2;arr/c/10=4;");
    l = (struct listing){0};
    cr_assert_eq(sl_store_list(s, "nothing/here/", collect_key, &l, NULL), SL_OK);
    cr_assert_str_eq(l.text, "");
    int calls = 0;
    cr_assert_eq(sl_store_list(s, "arr/", stop_listing, &calls, NULL), SL_ECANCELED);
    cr_assert_eq(calls, 1, "a callback's status stops the listing");
    cr_assert_eq(sl_store_list(s, "../", collect_key, &l, &err), SL_EACCES);
    sl_store_unref(s);
}

Test(io_store, memory_list_by_prefix_in_key_order) { check_list(make_memory); }
Test(io_store, fs_list_by_prefix_in_key_order) { check_list(make_fs); }

static void
expect_refused(sl_store *s, const char *key, const char *why)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, key, "x", 1, &err), SL_EACCES, "key %s", key);
    cr_assert_not_null(strstr(err.text, "refused"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, why), "key %s: %s", key, err.text);
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, key, NULL, &b, NULL, NULL), SL_EACCES, "key %s", key);
    cr_assert_eq(sl_store_delete(s, key, NULL), SL_EACCES, "key %s", key);
}

static void
check_refused_keys(make_store_fn *make)
{
    sl_store *s = make();
    expect_refused(s, "..", "\"..\"");
    expect_refused(s, "a/../../etc/passwd", "\"..\"");
    expect_refused(s, "a/..", "\"..\"");
    expect_refused(s, "./a", "\".\"");
    expect_refused(s, "/etc/passwd", "absolute");
    expect_refused(s, "a//b", "empty path component");
    expect_refused(s, "a/", "empty path component");
    expect_refused(s, "a\\..\\b", "backslash");
    expect_refused(s, "", "empty key");
    expect_refused(s, "d/.sluice-tmp.1.2", "reserved");
    char long_key[SL_STORE_KEY_MAX + 8];
    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    expect_refused(s, long_key, "longer than");
    char long_part[300];
    memset(long_part, 'p', sizeof(long_part) - 1);
    long_part[sizeof(long_part) - 1] = '\0';
    expect_refused(s, long_part, "longer than 255");
    /* Names that look odd but stay inside are keys. */
    put(s, "my group with spaces/..x/.zarray", "{}");
    expect_value(s, "my group with spaces/..x/.zarray", "{}");
    sl_store_unref(s);
}

Test(io_store, memory_refuses_keys_that_could_escape) { check_refused_keys(make_memory); }
Test(io_store, fs_refuses_keys_that_could_escape) { check_refused_keys(make_fs); }

Test(io_store, key_check_refuses_an_embedded_nul)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__key_check("a\0b", 3, &err), SL_EACCES);
    cr_assert_not_null(strstr(err.text, "NUL"), "%s", err.text);
    cr_assert_eq(sl__key_check("a/b", 3, NULL), SL_OK);
}

static void
check_stats(make_store_fn *make)
{
    sl_store *s = make();
    put(s, "k", "abc");
    put(s, "k2", "de");
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "k", NULL, &b, NULL, NULL), SL_OK);
    cr_assert_eq(sl_store_delete(s, "k2", NULL), SL_OK);
    struct sl_store_stats st;
    sl_store_get_stats(s, &st);
    cr_assert_eq(st.n_set, 2);
    cr_assert_eq(st.bytes_written, 5);
    cr_assert_eq(st.n_get, 1);
    cr_assert_eq(st.bytes_read, 3);
    cr_assert_eq(st.n_delete, 1);
    sl_store_ref(s);
    sl_store_unref(s);
    sl_store_unref(s);
    sl_buf_fini(&b);
}

Test(io_store, memory_counts_operations) { check_stats(make_memory); }
Test(io_store, fs_counts_operations) { check_stats(make_fs); }

Test(io_store, buffers_grow_and_keep_contents)
{
    struct sl_buf b = SL_BUF_INIT;
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(sl_buf_append(&b, "0123456789", 10, NULL), SL_OK);
    cr_assert_eq(b.size, 10000);
    cr_assert(b.capacity >= b.size);
    cr_assert(memcmp(b.data + 9990, "0123456789", 10) == 0);
    sl_buf_fini(&b);
    cr_assert_null(b.data);
    sl_buf_fini(NULL);
}

/* ---- memory store only ---------------------------------------------------- */

struct hook_state {
    int sets;
    int fail_set_of_key_x;
};

static int
counting_hook(void *ctx, sl_store_op op, const char *key, size_t bytes)
{
    (void)bytes;
    struct hook_state *h = ctx;
    if (op == SL_STORE_OP_SET)
        h->sets++;
    if (op == SL_STORE_OP_SET && h->fail_set_of_key_x && strcmp(key, "x") == 0)
        return -ENOSPC;
    return 0;
}

Test(io_store, memory_hook_counts_and_fails_sets)
{
    struct hook_state h = {0, 1};
    struct sl_mem_store_opts o = SL_MEM_STORE_OPTS_DEFAULT;
    o.hook = counting_hook;
    o.hook_ctx = &h;
    sl_store *s = sl_store_create_memory(&o, NULL);
    put(s, "y", "1");
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, "x", "1", 1, &err), SL_ENOSPC);
    cr_assert_str_eq(err.source, "x");
    cr_assert_eq(h.sets, 2);
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "x", NULL, &b, NULL, NULL), SL_ENOTFOUND);
    sl_store_unref(s);
}

Test(io_store, memory_store_survives_every_allocation_failure)
{
    for (size_t fail = 1;; fail++) {
        struct sl_test_alloc ta = {.fail_at = fail};
        struct sl_allocator a = sl_test_alloc_make(&ta);
        struct sl_mem_store_opts o = SL_MEM_STORE_OPTS_DEFAULT;
        o.alloc = &a;
        sl_store *s = sl_store_create_memory(&o, NULL);
        bool ok = s != NULL;
        for (int i = 0; ok && i < 100; i++) {
            char key[32];
            snprintf(key, sizeof(key), "k/%d", i);
            ok = sl_store_set(s, key, key, strlen(key), NULL) == SL_OK;
        }
        struct listing l = {0};
        if (ok)
            ok = sl_store_list(s, "k/9", collect_key, &l, NULL) == SL_OK;
        sl_store_unref(s);
        cr_assert_eq(ta.n_live, 0, "leak after failing allocation %zu", fail);
        if (ok && ta.n_failed == 0)
            break;
        cr_assert(fail < 10000);
    }
}

/* sl_store_objects_match: every object of the first store in the second
 * with the same bytes; the first key (in byte order) that is not, and
 * whether it is missing.  Objects only the second holds do not count. */
Test(io_store, objects_match_names_the_first_key_missing_or_different)
{
    sl_store *ref = make_memory(), *other = make_fs();
    put(ref, "a/zarr.json", "{\"a\": 1}");
    put(ref, "zarr.json", "{}");
    put(other, "a/zarr.json", "{\"a\": 1}");
    put(other, "zarr.json", "{}");
    put(other, "extra", "only here");
    char first[64];
    bool missing = true;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_objects_match(ref, other, first, sizeof(first), &missing, &err), SL_OK,
                 "%s", err.text);
    cr_assert_str_empty(first);
    cr_assert(!missing);
    put(other, "zarr.json", "{ }"); /* same length, other bytes */
    put(ref, "b/.zarray", "{}");
    cr_assert_eq(sl_store_objects_match(ref, other, first, sizeof(first), &missing, &err), SL_OK);
    cr_assert_str_eq(first, "b/.zarray");
    cr_assert(missing);
    put(other, "b/.zarray", "{}");
    cr_assert_eq(sl_store_objects_match(ref, other, first, sizeof(first), &missing, &err), SL_OK);
    cr_assert_str_eq(first, "zarr.json");
    cr_assert(!missing);
    cr_assert_eq(sl_store_objects_match(ref, NULL, first, sizeof(first), &missing, &err),
                 SL_EINVAL);
    sl_store_unref(ref);
    sl_store_unref(other);
}
