/* SPDX-License-Identifier: MIT */
/*
 * The runner of io_test.h's stand-in for criterion (ThreadSanitizer builds):
 * runs every registered test in this process, in order, each under an
 * alarm, and exits 1 at the first failed assertion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "io_test.h"

enum { IO_PLAIN_MAX = 128, IO_PLAIN_TIMEOUT_S = 240 };

static struct {
    const char *suite, *name;
    void (*fn)(void);
} io_plain_tests[IO_PLAIN_MAX];
static int io_plain_count;
static int io_plain_running = -1;

void
sl_io_plain_add(const char *suite, const char *name, void (*fn)(void))
{
    if (io_plain_count == IO_PLAIN_MAX) {
        fprintf(stderr, "io plain runner: more than %d tests\n", IO_PLAIN_MAX);
        exit(2);
    }
    io_plain_tests[io_plain_count].suite = suite;
    io_plain_tests[io_plain_count].name = name;
    io_plain_tests[io_plain_count].fn = fn;
    io_plain_count++;
}

void
sl_io_plain_failed(const char *file, int line, const char *expr)
{
    const char *suite = io_plain_running >= 0 ? io_plain_tests[io_plain_running].suite : "?";
    const char *name = io_plain_running >= 0 ? io_plain_tests[io_plain_running].name : "?";
    fprintf(stderr, "%s:%d: %s::%s failed: %s\n", file, line, suite, name, expr);
    fflush(stderr);
    _exit(1);
}

int
main(void)
{
    for (io_plain_running = 0; io_plain_running < io_plain_count; io_plain_running++) {
        printf("[RUN ] %s::%s\n", io_plain_tests[io_plain_running].suite,
               io_plain_tests[io_plain_running].name);
        fflush(stdout);
        alarm(IO_PLAIN_TIMEOUT_S);
        io_plain_tests[io_plain_running].fn();
        alarm(0);
        printf("[ OK ] %s::%s\n", io_plain_tests[io_plain_running].suite,
               io_plain_tests[io_plain_running].name);
    }
    printf("%d tests passed\n", io_plain_count);
    return 0;
}
