/* SPDX-License-Identifier: MIT */
/* Tests of fitting long messages into error records: head, "...", tail. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

#include "core_internal.h"

TestSuite(core_error, .timeout = 5.0);

/* A message past any record: a deep path, then the cause. */
static void
long_message(char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    sl__strbuf_append(buf, size, &len, "cannot open /data/in.zarr");
    for (int i = 0; i < 40; i++)
        sl__strbuf_append(buf, size, &len, "/directory-%02d", i);
    sl__strbuf_append(buf, size, &len, "/c/0/1: Permission denied");
}

/* True when `c` is a byte a fitted text may be cut beside. */
static bool
is_boundary(char c)
{
    return c == ' ' || c == '/' || c == ',';
}

Test(core_error, long_text_keeps_head_and_tail_cut_at_boundaries)
{
    char src[1024], dst[96];
    long_message(src, sizeof(src));
    cr_assert_gt(strlen(src), sizeof(dst));
    cr_assert_not(sl__text_fit(dst, sizeof(dst), src));
    cr_assert_lt(strlen(dst), sizeof(dst));
    const char *dots = strstr(dst, "...");
    cr_assert_not_null(dots, "%s", dst);
    size_t head = (size_t)(dots - dst);
    const char *tail = dots + 3;
    cr_assert_gt(head, 0);
    cr_assert_eq(strncmp(src, dst, head), 0, "head of %s", dst);
    cr_assert(is_boundary(dst[head - 1]), "head cut mid-word: %s", dst);
    cr_assert(is_boundary(tail[0]), "tail cut mid-word: %s", dst);
    cr_assert_str_eq(src + strlen(src) - strlen(tail), tail);
    cr_assert_not_null(strstr(tail, "/c/0/1: Permission denied"), "%s", dst);
}

Test(core_error, short_text_is_unchanged)
{
    char dst[32];
    cr_assert(sl__text_fit(dst, sizeof(dst), "no object \"a/b\""));
    cr_assert_str_eq(dst, "no object \"a/b\"");
    /* 31 bytes fill a 32-byte buffer exactly. */
    cr_assert(sl__text_fit(dst, sizeof(dst), "0123456789012345678901234567890"));
    cr_assert_str_eq(dst, "0123456789012345678901234567890");
}

Test(core_error, utf8_sequences_are_never_split)
{
    /* One long word of two-byte letters (é): no boundary to cut at. */
    char src[401], dst[64];
    for (size_t i = 0; i < 200; i++) {
        src[2 * i] = (char)0xC3;
        src[2 * i + 1] = (char)0xA9;
    }
    src[400] = '\0';
    for (size_t size = 1; size <= sizeof(dst); size++) {
        cr_assert_not(sl__text_fit(dst, size, src));
        size_t n = strlen(dst);
        cr_assert_lt(n, size);
        for (size_t i = 0; i < n;) {
            if ((unsigned char)dst[i] == 0xC3) {
                cr_assert_eq((unsigned char)dst[i + 1], 0xA9, "size %zu: split at %zu", size, i);
                i += 2;
            } else {
                cr_assert_eq(dst[i], '.', "size %zu: stray byte at %zu", size, i);
                i++;
            }
        }
    }
}

Test(core_error, record_keeps_the_tail_of_a_long_message_and_source)
{
    char src[1024];
    long_message(src, sizeof(src));
    struct sl_error err = SL_ERROR_INIT;
    char fmt_src[2048];
    snprintf(fmt_src, sizeof(fmt_src), "%s%s", src, src); /* past the text record too */
    cr_assert_eq(sl_error_set(&err, SL_EACCES, NULL, "%s", fmt_src), SL_EACCES);
    cr_assert_lt(strlen(err.text), sizeof(err.text));
    cr_assert_not_null(strstr(err.text, "..."));
    cr_assert_eq(strncmp(err.text, "cannot open ", 12), 0, "%s", err.text);
    size_t n = strlen(err.text);
    cr_assert_str_eq(err.text + n - strlen("/c/0/1: Permission denied"),
                     "/c/0/1: Permission denied");
    sl_error_set_source(&err, src);
    cr_assert_lt(strlen(err.source), sizeof(err.source));
    n = strlen(err.source);
    cr_assert_str_eq(err.source + n - strlen("Permission denied"), "Permission denied");
}
