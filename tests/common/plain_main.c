/* SPDX-License-Identifier: MIT */
/*
 * The runner of plain_test.h's stand-in for criterion (ThreadSanitizer
 * builds): every registered test runs in this process, in registration
 * order, under an alarm, and the first failed assertion ends the process
 * with status 1.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "plain_test.h"

#define PLAIN_MAX_TESTS 256
#define PLAIN_TIMEOUT_S 240

struct plain_test {
    const char *suite;
    const char *name;
    void (*fn)(void);
};

static struct plain_test plain_tests[PLAIN_MAX_TESTS];
static int plain_n_tests;
static const struct plain_test *plain_current;

void
sl_plain_register(const char *suite, const char *name, void (*fn)(void))
{
    if (plain_n_tests == PLAIN_MAX_TESTS) {
        fprintf(stderr, "plain runner: more than %d tests\n", PLAIN_MAX_TESTS);
        exit(2);
    }
    plain_tests[plain_n_tests++] = (struct plain_test){suite, name, fn};
}

void
sl_plain_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: %s::%s: assertion failed: %s\n", file, line,
            plain_current != NULL ? plain_current->suite : "?",
            plain_current != NULL ? plain_current->name : "?", what);
    fflush(stderr);
    _exit(1);
}

void
sl_plain_skip(const char *file, int line, const char *what)
{
    printf("%s:%d: skipped: %s\n", file, line, what);
}

int
main(void)
{
    for (int i = 0; i < plain_n_tests; i++) {
        plain_current = &plain_tests[i];
        printf("[ RUN  ] %s::%s\n", plain_current->suite, plain_current->name);
        fflush(stdout);
        alarm(PLAIN_TIMEOUT_S);
        plain_current->fn();
        alarm(0);
        printf("[  OK  ] %s::%s\n", plain_current->suite, plain_current->name);
        fflush(stdout);
    }
    printf("%d tests passed\n", plain_n_tests);
    return 0;
}
