/* SPDX-License-Identifier: MIT */
/*
 * What the runtime's suites include instead of <criterion/criterion.h>.
 *
 * Normally it is criterion.  Built with SL_PLAIN_TEST (the ThreadSanitizer
 * build, see meson.build) it is a stand-in for the part of criterion these
 * suites use: Test() registers a function, the assertions print the failed
 * expression and exit, and plain_main.c runs every test in one process.
 * Criterion's runner cannot start under TSan: its BoxFort arena is mapped
 * at fixed addresses inside the range TSan reserves for shadow memory.
 */
#ifndef SL_RUNTIME_TEST_H
#define SL_RUNTIME_TEST_H

#ifndef SL_PLAIN_TEST
#include <criterion/criterion.h>
#else

#include <stdio.h>

void sl_plain_register(const char *suite, const char *name, void (*fn)(void));
_Noreturn void sl_plain_fail(const char *file, int line, const char *what);
void sl_plain_skip(const char *file, int line, const char *what);

/* Fully variadic, as criterion's own, so that C11 -Wpedantic accepts calls
 * without options. */
#define TestSuite(...) SL_PLAIN_SUITE_(__VA_ARGS__, 0)
#define SL_PLAIN_SUITE_(suite, ...) \
    static const char *const sl_plain_suite_##suite __attribute__((unused)) = #suite

#define Test(...) SL_PLAIN_TEST_(__VA_ARGS__, 0)
#define SL_PLAIN_TEST_(suite, name, ...)                                     \
    static void suite##_##name(void);                                        \
    __attribute__((constructor)) static void suite##_##name##_register(void) \
    {                                                                        \
        sl_plain_register(#suite, #name, suite##_##name);                    \
    }                                                                        \
    static void suite##_##name(void)

#define SL_PLAIN_FIRST_(first, ...) first
#define SL_PLAIN_CHECK_(cond, text) ((cond) ? (void)0 : sl_plain_fail(__FILE__, __LINE__, text))
#define SL_PLAIN_CMP_(op, a, b, ...) SL_PLAIN_CHECK_((a)op(b), #a " " #op " " #b)

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
#define cr_skip_test(...)                                \
    do {                                                 \
        sl_plain_skip(__FILE__, __LINE__, #__VA_ARGS__); \
        return;                                          \
    } while (0)

#endif /* SL_PLAIN_TEST */

#include <sluice/pool.h>

/* The pool's scheduling counters as a value, for asserting on one field. */
static inline struct sl_pool_stats
pool_stats(const sl_pool *pool)
{
    struct sl_pool_stats s;
    sl_pool_get_stats(pool, &s);
    return s;
}

/* The pool's buffer counters as a value, for asserting on one field. */
static inline struct sl_pool_buf_stats
pool_buf_stats(const sl_pool *pool)
{
    struct sl_pool_buf_stats s;
    sl_pool_buf_get_stats(pool, &s);
    return s;
}
#endif /* SL_RUNTIME_TEST_H */
