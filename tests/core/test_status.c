/* SPDX-License-Identifier: MIT */
/* Tests of status names and messages and of error records. */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

TestSuite(core_status, .timeout = 5.0);

Test(core_status, every_code_has_a_name_and_message_that_round_trip)
{
    for (int i = 0; i < SL_STATUS_COUNT_; i++) {
        sl_status back;
        const char *name = sl_status_name((sl_status)i);
        cr_assert_neq(strcmp(name, "EUNKNOWN"), 0);
        cr_assert_gt(strlen(sl_status_message((sl_status)i)), 0);
        cr_assert_eq(sl_status_from_name(name, &back, NULL), SL_OK, "%s", name);
        cr_assert_eq(back, (sl_status)i);
    }
    sl_status back;
    cr_assert_eq(sl_status_from_name("SL_ECORRUPT", &back, NULL), SL_OK);
    cr_assert_eq(back, SL_ECORRUPT);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_status_from_name("EBOGUS", &back, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "unknown status name \"EBOGUS\"");
    cr_assert_str_eq(sl_status_name((sl_status)1000), "EUNKNOWN");
    cr_assert_str_eq(sl_status_message((sl_status)-1), "unknown status");
}

Test(core_status, codes_keep_their_values)
{
    /* Values are ABI and appear in reports: they may only be appended. */
    cr_assert_eq(SL_OK, 0);
    cr_assert_eq(SL_ENOMEM, 1);
    cr_assert_eq(SL_ECORRUPT, 4);
    cr_assert_eq(SL_ECANCELED, 7);
    cr_assert_eq(SL_EUPSTREAM, 14);
}

TestSuite(core_error, .timeout = 5.0);

Test(core_error, first_error_wins)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_error_set(&err, SL_ECORRUPT, NULL, "first %d", 1), SL_ECORRUPT);
    cr_assert_eq(sl_error_set(&err, SL_EIO, NULL, "second"), SL_EIO);
    cr_assert_eq(err.code, SL_ECORRUPT);
    cr_assert_str_eq(err.text, "first 1");
    cr_assert_eq(sl_error_set_path(&err, SL_EPARSE, "/x", "third"), SL_EPARSE);
    cr_assert_str_eq(err.path, "");
}

Test(core_error, null_record_is_allowed)
{
    cr_assert_eq(sl_error_set(NULL, SL_ENOMEM, NULL, "x"), SL_ENOMEM);
    cr_assert_eq(sl_error_set_path(NULL, SL_EPARSE, "/a", "x"), SL_EPARSE);
    cr_assert_eq(sl_error_set_at(NULL, SL_EPARSE, 1, 2, 3, "x"), SL_EPARSE);
    sl_error_set_source(NULL, "x");
    sl_error_clear(NULL);
}

Test(core_error, long_message_is_truncated_and_terminated)
{
    struct sl_error err = SL_ERROR_INIT;
    char big[1000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    sl_error_set(&err, SL_EINVAL, NULL, "%s", big);
    cr_assert_eq(strlen(err.text), sizeof(err.text) - 1);
    sl_error_set_source(&err, big);
    cr_assert_eq(strlen(err.source), sizeof(err.source) - 1);
}

Test(core_error, locations_are_recorded)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_error_set_at(&err, SL_EPARSE, 3, 14, 52, "unexpected '}'");
    cr_assert_eq(err.line, 3);
    cr_assert_eq(err.column, 14);
    cr_assert_eq(err.position, 52);

    struct sl_error e2 = SL_ERROR_INIT;
    sl_error_set_path(&e2, SL_EINVAL, "/nodes/3/input", "unknown node \"%s\"", "dwn");
    cr_assert_str_eq(e2.path, "/nodes/3/input");
    cr_assert_eq(e2.line, -1);

    struct sl_error e3 = SL_ERROR_INIT;
    const uint64_t idx[] = {2, 1, 3};
    struct sl_chunk_key key = sl_chunk_key_make(3, idx);
    sl_error_set(&e3, SL_ECORRUPT, &key, "crc mismatch");
    cr_assert(sl_chunk_key_equal(&e3.chunk, &key));
}

Test(core_error, source_is_set_once_and_only_on_error)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_error_set_source(&err, "ignored");
    cr_assert_str_eq(err.source, "");
    sl_error_set(&err, SL_EIO, NULL, "read failed");
    sl_error_set_source(&err, "a/c/0/1");
    sl_error_set_source(&err, "outer");
    cr_assert_str_eq(err.source, "a/c/0/1");
}

Test(core_error, format_names_code_source_location_and_chunk)
{
    struct sl_error err = SL_ERROR_INIT;
    const uint64_t idx[] = {0, 1};
    struct sl_chunk_key key = sl_chunk_key_make(2, idx);
    sl_error_set(&err, SL_ECORRUPT, &key, "crc32c mismatch");
    sl_error_set_source(&err, "a/c/0/1");
    char line[256];
    size_t n = sl_error_format(&err, line, sizeof(line));
    cr_assert_str_eq(line, "ECORRUPT: a/c/0/1: chunk (0, 1): crc32c mismatch");
    cr_assert_eq(n, strlen(line));

    struct sl_error e2 = SL_ERROR_INIT;
    sl_error_set_at(&e2, SL_EPARSE, 3, 7, 40, "bad");
    sl_error_set_source(&e2, "g.json");
    sl_error_format(&e2, line, sizeof(line));
    cr_assert_str_eq(line, "EPARSE: g.json:3:7: bad");

    char tiny[8];
    n = sl_error_format(&err, tiny, sizeof(tiny));
    cr_assert_eq(strlen(tiny), 7);
    cr_assert_gt(n, 7);
}

Test(core_error, chunk_key_format)
{
    char buf[64];
    struct sl_chunk_key none = {0};
    sl_chunk_key_format(&none, buf, sizeof(buf));
    cr_assert_str_eq(buf, "()");
    const uint64_t idx[] = {12, 0, 7};
    struct sl_chunk_key k = sl_chunk_key_make(3, idx);
    sl_chunk_key_format(&k, buf, sizeof(buf));
    cr_assert_str_eq(buf, "(12, 0, 7)");
}
