/* SPDX-License-Identifier: MIT */
/* Tests of sl_size_parse: byte sizes written as text. */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

TestSuite(core_size, .timeout = 5.0);

static uint64_t
size_of(const char *text)
{
    uint64_t v = 0;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_size_parse(text, &v, &err), SL_OK, "\"%s\": %s", text, err.text);
    cr_assert_eq(err.code, SL_OK);
    return v;
}

/* Refused with SL_EINVAL, `out` untouched and `part` in the message. */
static void
refused(const char *text, const char *part)
{
    uint64_t v = 12345;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_size_parse(text, &v, &err), SL_EINVAL, "\"%s\" accepted as %llu", text,
                 (unsigned long long)v);
    cr_assert_eq(v, 12345, "\"%s\": out written on failure", text);
    cr_assert_eq(err.code, SL_EINVAL);
    cr_assert_not_null(strstr(err.text, part), "\"%s\": message \"%s\" lacks \"%s\"", text,
                       err.text, part);
}

Test(core_size, plain_bytes)
{
    cr_assert_eq(size_of("0"), 0);
    cr_assert_eq(size_of("1"), 1);
    cr_assert_eq(size_of("4096"), 4096);
    cr_assert_eq(size_of("007"), 7);
    cr_assert_eq(size_of("18446744073709551615"), UINT64_MAX);
}

Test(core_size, units_are_powers_of_1024_in_either_case)
{
    cr_assert_eq(size_of("64K"), 65536);
    cr_assert_eq(size_of("64k"), 65536);
    cr_assert_eq(size_of("3M"), (uint64_t)3 << 20);
    cr_assert_eq(size_of("512m"), (uint64_t)512 << 20);
    cr_assert_eq(size_of("2G"), (uint64_t)2 << 30);
    cr_assert_eq(size_of("2g"), (uint64_t)2 << 30);
    cr_assert_eq(size_of("5T"), (uint64_t)5 << 40);
    cr_assert_eq(size_of("0K"), 0);
}

Test(core_size, b_and_ib_may_follow_a_unit)
{
    cr_assert_eq(size_of("64KB"), 65536);
    cr_assert_eq(size_of("64KiB"), 65536);
    cr_assert_eq(size_of("1.5GiB"), (uint64_t)3 << 29);
    cr_assert_eq(size_of("2tB"), (uint64_t)2 << 40);
}

Test(core_size, fractions_are_exact_and_round_down)
{
    cr_assert_eq(size_of("1.5G"), (uint64_t)3 << 29);
    cr_assert_eq(size_of("0.5K"), 512);
    cr_assert_eq(size_of(".5K"), 512);
    cr_assert_eq(size_of("2.K"), 2048);
    cr_assert_eq(size_of("0.1K"), 102, "102.4 rounds down");
    cr_assert_eq(size_of("1.999999999999999999999K"), 2047, "never rounds up to 2048");
    cr_assert_eq(size_of("1.5"), 1, "a fraction of a byte rounds down");
    cr_assert_eq(size_of("0.000001T"), 1099511);
    /* Near 2^64 - 1 = 16777216 T - 1: exact where a double would round. */
    cr_assert_eq(size_of("16777215.999999999999T"), UINT64_MAX - 1);
    cr_assert_eq(size_of("16777215.9999999999999999T"), UINT64_MAX);
}

Test(core_size, malformed_text_is_refused_and_quoted)
{
    static const char *const cases[] = {
        "12Q",   "1e9", "0x10", " 5",  "5 ",    "+5",  "K",   "KB",   ".",
        "1.2.3", "5B",  "5KBB", "5Ki", "5KiBs", "inf", "nan", "1,5G", "5 G",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "\"%s\"", cases[i]);
        refused(cases[i], quoted);
    }
}

Test(core_size, empty_negative_and_overflow_are_refused)
{
    refused("", "empty size");
    refused("-1", "\"-1\": a size cannot be negative");
    refused("-0.5K", "negative");
    refused("18446744073709551616", "\"18446744073709551616\" exceeds 2^64 - 1 bytes");
    refused("99999999999999999999999", "exceeds");
    refused("16777216T", "exceeds");
    refused("16777216.5T", "exceeds");
}

Test(core_size, null_arguments_are_refused)
{
    uint64_t v;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_size_parse(NULL, &v, &err), SL_EINVAL);
    cr_assert_eq(sl_size_parse("1", NULL, NULL), SL_EINVAL);
}

Test(core_size, a_long_text_is_quoted_in_part)
{
    char text[200];
    memset(text, '7', sizeof(text) - 2);
    text[sizeof(text) - 2] = 'Q';
    text[sizeof(text) - 1] = '\0';
    uint64_t v;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_size_parse(text, &v, &err), SL_EINVAL);
    cr_assert_lt(strlen(err.text), sizeof(err.text));
    cr_assert_not_null(strstr(err.text, "is not a size"), "%s", err.text);
}
