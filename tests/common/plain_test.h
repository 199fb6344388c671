/* SPDX-License-Identifier: MIT */
/*
 * What the threaded suites (runtime's, io's stress suites, graph's fault
 * sweeps) include instead of <criterion/criterion.h>.
 *
 * Normally it is criterion.  Built with SL_PLAIN_TEST (the ThreadSanitizer
 * build, see tests/meson.build) it is a stand-in for the part of criterion
 * these suites use: Test() registers a function before main runs, a failed
 * assertion prints its expression and location and exits 1, cr_skip_test
 * prints why and returns, and plain_main.c runs every test in one process,
 * in order, each under an alarm.  Messages after the condition are dropped.
 * Criterion's runner cannot start under TSan: its BoxFort arena is mapped
 * at fixed addresses inside the range TSan reserves for shadow memory.
 */
#ifndef SL_PLAIN_TEST_H
#define SL_PLAIN_TEST_H

#ifndef SL_PLAIN_TEST
#include <criterion/criterion.h>
#else

#include <stdio.h>
#include <string.h>

void sl_plain_register(const char *suite, const char *name, void (*fn)(void));
_Noreturn void sl_plain_fail(const char *file, int line, const char *what);
void sl_plain_skip(const char *file, int line, const char *what);

/* Fully variadic, as criterion's own, so that C11 -Wpedantic accepts calls
 * without options.  TestSuite(name, options...): options are ignored. */
#define TestSuite(...) SL_PLAIN_SUITE_(__VA_ARGS__, 0)
#define SL_PLAIN_SUITE_(suite, ...) \
    static const char *const sl_plain_suite_##suite __attribute__((unused)) = #suite

/* Test(suite, name, options...): registered before main runs. */
#define Test(...) SL_PLAIN_TEST_(__VA_ARGS__, 0)
#define SL_PLAIN_TEST_(suite, name, ...)                                       \
    static void suite##__##name(void);                                         \
    __attribute__((constructor)) static void suite##__##name##__register(void) \
    {                                                                          \
        sl_plain_register(#suite, #name, suite##__##name);                     \
    }                                                                          \
    static void suite##__##name(void)

#define SL_PLAIN_FIRST_(first, ...) first
#define SL_PLAIN_CHECK_(cond, text) ((cond) ? (void)0 : sl_plain_fail(__FILE__, __LINE__, text))
#define SL_PLAIN_CMP_(op, a, b, ...) SL_PLAIN_CHECK_((a)op(b), #a " " #op " " #b)
#define SL_PLAIN_ARR_(a, b, n, ...) \
    SL_PLAIN_CHECK_(memcmp((a), (b), (n)) == 0, #a " and " #b " differ")

#define cr_assert(...) SL_PLAIN_CHECK_(SL_PLAIN_FIRST_(__VA_ARGS__, 0), #__VA_ARGS__)
#define cr_assert_not(...) SL_PLAIN_CHECK_(!(SL_PLAIN_FIRST_(__VA_ARGS__, 0)), #__VA_ARGS__)
#define cr_assert_eq(...) SL_PLAIN_CMP_(==, __VA_ARGS__, 0)
#define cr_assert_neq(...) SL_PLAIN_CMP_(!=, __VA_ARGS__, 0)
#define cr_assert_lt(...) SL_PLAIN_CMP_(<, __VA_ARGS__, 0)
#define cr_assert_leq(...) SL_PLAIN_CMP_(<=, __VA_ARGS__, 0)
#define cr_assert_gt(...) SL_PLAIN_CMP_(>, __VA_ARGS__, 0)
#define cr_assert_geq(...) SL_PLAIN_CMP_(>=, __VA_ARGS__, 0)
#define cr_assert_null(...) SL_PLAIN_CMP_(==, SL_PLAIN_FIRST_(__VA_ARGS__, 0), NULL, 0)
#define cr_assert_not_null(...) SL_PLAIN_CMP_(!=, SL_PLAIN_FIRST_(__VA_ARGS__, 0), NULL, 0)
#define cr_assert_arr_eq(...) SL_PLAIN_ARR_(__VA_ARGS__, 0)
#define cr_skip_test(...)                                \
    do {                                                 \
        sl_plain_skip(__FILE__, __LINE__, #__VA_ARGS__); \
        return;                                          \
    } while (0)

#endif /* SL_PLAIN_TEST */
#endif /* SL_PLAIN_TEST_H */
