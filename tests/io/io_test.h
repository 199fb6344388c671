/* SPDX-License-Identifier: MIT */
/*
 * What io's stress suites include instead of <criterion/criterion.h>.
 *
 * Normally this is criterion.  Under ThreadSanitizer criterion cannot start
 * (its BoxFort arena is mapped at fixed addresses that TSan reserves for
 * shadow memory), so the TSan build defines SL_PLAIN_TEST and these suites
 * get a small stand-in instead: Test() registers a function, a failed
 * assertion prints its expression and location and exits 1, and
 * io_plain_main.c runs the tests one after another under an alarm.  Only
 * what the stress suites use is provided (graph's fault sweeps use it too).
 */
#ifndef SL_IO_TEST_H
#define SL_IO_TEST_H

#ifndef SL_PLAIN_TEST
#include <criterion/criterion.h>
#else
#include <string.h>

void sl_io_plain_add(const char *suite, const char *name, void (*fn)(void));
_Noreturn void sl_io_plain_failed(const char *file, int line, const char *expr);

#define SL_IO_PLAIN_HEAD_(x, ...) x
#define SL_IO_PLAIN_ASSERT_(cond, expr) \
    ((cond) ? (void)0 : sl_io_plain_failed(__FILE__, __LINE__, expr))

/* TestSuite(name, options...): options are ignored. */
#define TestSuite(...) SL_IO_PLAIN_SUITE_(__VA_ARGS__, 0)
#define SL_IO_PLAIN_SUITE_(suite, ...) \
    static const char sl_io_plain_suite_##suite[] __attribute__((unused)) = #suite

/* Test(suite, name, options...): registered before main runs. */
#define Test(...) SL_IO_PLAIN_TEST_(__VA_ARGS__, 0)
#define SL_IO_PLAIN_TEST_(suite, name, ...)                               \
    static void suite##__##name(void);                                    \
    __attribute__((constructor)) static void suite##__##name##__add(void) \
    {                                                                     \
        sl_io_plain_add(#suite, #name, suite##__##name);                  \
    }                                                                     \
    static void suite##__##name(void)

#define cr_assert(...) SL_IO_PLAIN_ASSERT_(SL_IO_PLAIN_HEAD_(__VA_ARGS__, 0), #__VA_ARGS__)
#define cr_assert_not(...) SL_IO_PLAIN_ASSERT_(!(SL_IO_PLAIN_HEAD_(__VA_ARGS__, 0)), #__VA_ARGS__)
#define cr_assert_eq(...) SL_IO_PLAIN_CMP_(==, __VA_ARGS__, 0)
#define cr_assert_not_null(...) SL_IO_PLAIN_CMP_(!=, SL_IO_PLAIN_HEAD_(__VA_ARGS__, 0), NULL, 0)
#define cr_assert_null(...) SL_IO_PLAIN_CMP_(==, SL_IO_PLAIN_HEAD_(__VA_ARGS__, 0), NULL, 0)
#define cr_assert_lt(...) SL_IO_PLAIN_CMP_(<, __VA_ARGS__, 0)
#define cr_assert_leq(...) SL_IO_PLAIN_CMP_(<=, __VA_ARGS__, 0)
#define cr_assert_gt(...) SL_IO_PLAIN_CMP_(>, __VA_ARGS__, 0)
#define cr_assert_geq(...) SL_IO_PLAIN_CMP_(>=, __VA_ARGS__, 0)
#define cr_assert_arr_eq(...) SL_IO_PLAIN_ARR_(__VA_ARGS__, 0)
#define SL_IO_PLAIN_CMP_(op, a, b, ...) SL_IO_PLAIN_ASSERT_((a)op(b), #a " " #op " " #b)
#define SL_IO_PLAIN_ARR_(a, b, n, ...) \
    SL_IO_PLAIN_ASSERT_(memcmp((a), (b), (n)) == 0, #a " and " #b " differ")

#endif /* SL_PLAIN_TEST */
#endif /* SL_IO_TEST_H */
