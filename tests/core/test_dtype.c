/* SPDX-License-Identifier: MIT */
/* Tests of the dtype table: names, typestrs, classes, and refusals. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

TestSuite(core_dtype, .timeout = 5.0);

Test(core_dtype, every_v3_name_round_trips)
{
    for (int i = 0; i < SL_DTYPE_COUNT_; i++) {
        sl_dtype dt = (sl_dtype)i, back;
        struct sl_error err = SL_ERROR_INIT;
        const char *name = sl_dtype_name(dt);
        cr_assert_eq(sl_dtype_from_name(name, &back, &err), SL_OK, "%s: %s", name, err.text);
        cr_assert_eq(back, dt, "%s parsed as %s", name, sl_dtype_name(back));
    }
}

Test(core_dtype, every_typestr_round_trips_in_both_byte_orders)
{
    for (int i = 0; i < SL_DTYPE_COUNT_; i++) {
        for (int e = 0; e < 2; e++) {
            sl_dtype dt = (sl_dtype)i, back;
            sl_endian endian = (sl_endian)e, back_endian;
            char ts[8];
            struct sl_error err = SL_ERROR_INIT;
            cr_assert_eq(sl_dtype_typestr(dt, endian, ts, sizeof(ts), NULL), SL_OK);
            cr_assert_eq(sl_dtype_from_typestr(ts, &back, &back_endian, &err), SL_OK, "%s: %s", ts,
                         err.text);
            cr_assert_eq(back, dt, "%s parsed as %s", ts, sl_dtype_name(back));
            if (sl_dtype_size(dt) > 1)
                cr_assert_eq(back_endian, endian, "%s lost its byte order", ts);
            else
                cr_assert_eq(ts[0], '|', "one-byte %s should use '|'", ts);
        }
    }
}

Test(core_dtype, typestrs_match_numpy_spelling)
{
    char ts[8];
    cr_assert_eq(sl_dtype_typestr(SL_DTYPE_U16, SL_ENDIAN_LITTLE, ts, sizeof(ts), NULL), SL_OK);
    cr_assert_str_eq(ts, "<u2");
    cr_assert_eq(sl_dtype_typestr(SL_DTYPE_F64, SL_ENDIAN_BIG, ts, sizeof(ts), NULL), SL_OK);
    cr_assert_str_eq(ts, ">f8");
    cr_assert_eq(sl_dtype_typestr(SL_DTYPE_BOOL, SL_ENDIAN_BIG, ts, sizeof(ts), NULL), SL_OK);
    cr_assert_str_eq(ts, "|b1");
    cr_assert_eq(sl_dtype_typestr(SL_DTYPE_C128, SL_ENDIAN_LITTLE, ts, sizeof(ts), NULL), SL_OK);
    cr_assert_str_eq(ts, "<c16");
    cr_assert_eq(sl_dtype_typestr(SL_DTYPE_F16, SL_ENDIAN_LITTLE, ts, sizeof(ts), NULL), SL_OK);
    cr_assert_str_eq(ts, "<f2");
}

Test(core_dtype, sizes_and_classes)
{
    cr_assert_eq(sl_dtype_size(SL_DTYPE_BOOL), 1);
    cr_assert_eq(sl_dtype_size(SL_DTYPE_I64), 8);
    cr_assert_eq(sl_dtype_size(SL_DTYPE_F16), 2);
    cr_assert_eq(sl_dtype_size(SL_DTYPE_C64), 8);
    cr_assert_eq(sl_dtype_size(SL_DTYPE_C128), 16);
    cr_assert_eq(sl_dtype_size((sl_dtype)99), 0);
    cr_assert(sl_dtype_is_integer(SL_DTYPE_U8));
    cr_assert_not(sl_dtype_is_integer(SL_DTYPE_BOOL));
    cr_assert(sl_dtype_is_signed(SL_DTYPE_I8));
    cr_assert_not(sl_dtype_is_signed(SL_DTYPE_U64));
    cr_assert(sl_dtype_is_float(SL_DTYPE_F16));
    cr_assert_not(sl_dtype_is_float(SL_DTYPE_C64));
    cr_assert(sl_dtype_is_complex(SL_DTYPE_C128));
    cr_assert(sl_dtype_is_real(SL_DTYPE_F32));
    cr_assert_not(sl_dtype_is_real(SL_DTYPE_F16));
    cr_assert_not(sl_dtype_is_real(SL_DTYPE_C64));
    cr_assert_str_eq(sl_dtype_name((sl_dtype)-1), "invalid");
}

Test(core_dtype, unknown_name_is_refused_with_the_name)
{
    const char *bad[] = {"int3", "float128", "string", "", "UINT8", "r16"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_dtype dt;
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_dtype_from_name(bad[i], &dt, &err), SL_EUNSUPPORTED, "%s", bad[i]);
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "\"%s\"", bad[i]);
        cr_assert_not_null(strstr(err.text, quoted), "message \"%s\" lacks %s", err.text, quoted);
    }
}

Test(core_dtype, malformed_typestr_is_a_parse_error)
{
    const char *bad[] = {"u2", "<", "<u", "<u2x", "!u2", "|u2", "<x2", "<u-2", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_dtype dt;
        struct sl_error err = SL_ERROR_INIT;
        sl_status st = sl_dtype_from_typestr(bad[i], &dt, NULL, &err);
        cr_assert(st == SL_EPARSE || st == SL_EUNSUPPORTED, "%s gave %s", bad[i],
                  sl_status_name(st));
        cr_assert_not_null(strstr(err.text, bad[i]), "message \"%s\" lacks \"%s\"", err.text,
                           bad[i]);
    }
}

Test(core_dtype, string_and_object_typestrs_are_unsupported)
{
    const char *bad[] = {"<U7", "|S5", "|O", "<M8[ns]", "|V8", "<u3", "<f3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_dtype dt;
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_dtype_from_typestr(bad[i], &dt, NULL, &err), SL_EUNSUPPORTED, "%s", bad[i]);
        cr_assert_not_null(strstr(err.text, bad[i]), "message \"%s\"", err.text);
    }
}

Test(core_dtype, native_order_typestr_is_accepted)
{
    sl_dtype dt;
    sl_endian e;
    cr_assert_eq(sl_dtype_from_typestr("=i4", &dt, &e, NULL), SL_OK);
    cr_assert_eq(dt, SL_DTYPE_I32);
    cr_assert_eq(e, sl_endian_native());
}
