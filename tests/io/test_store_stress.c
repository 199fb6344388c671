/* SPDX-License-Identifier: MIT */
/*
 * Stores under threads: each thread sets, gets and deletes its own keys
 * while one thread keeps replacing a key all of them read; every read must
 * return a whole value.  Runs under ThreadSanitizer in CI (plain_test.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "plain_test.h"

TestSuite(io_store_stress, .timeout = 60.0);

struct worker {
    sl_store *s;
    int id;
    int failures;
};

static int
is_value(const struct sl_buf *b, const char *text)
{
    return b->size == strlen(text) && memcmp(b->data, text, b->size) == 0;
}

static void *
hammer(void *arg)
{
    struct worker *w = arg;
    struct sl_buf b = SL_BUF_INIT;
    char key[64], val[64];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "t%d/c/%d", w->id, i % 7);
        snprintf(val, sizeof(val), "value %d of %d", i, w->id);
        if (sl_store_set(w->s, key, val, strlen(val), NULL) != SL_OK)
            w->failures++;
        if (sl_store_get(w->s, key, NULL, &b, NULL, NULL) != SL_OK || !is_value(&b, val))
            w->failures++;
        if (w->id == 0) {
            const char *v = i % 2 ? "odd-value" : "even-value";
            if (sl_store_set(w->s, "shared", v, strlen(v), NULL) != SL_OK)
                w->failures++;
        } else if (sl_store_get(w->s, "shared", NULL, &b, NULL, NULL) != SL_OK ||
                   !(is_value(&b, "odd-value") || is_value(&b, "even-value"))) {
            w->failures++;
        }
        if (i % 50 == 0 && sl_store_delete(w->s, key, NULL) != SL_OK)
            w->failures++;
    }
    sl_buf_fini(&b);
    return NULL;
}

static void
check_concurrency(sl_store *s)
{
    cr_assert_not_null(s);
    cr_assert_eq(sl_store_set(s, "shared", "even-value", 10, NULL), SL_OK);
    enum { N = 4 };
    pthread_t t[N];
    struct worker w[N];
    for (int i = 0; i < N; i++) {
        w[i] = (struct worker){s, i, 0};
        pthread_create(&t[i], NULL, hammer, &w[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(w[i].failures, 0, "thread %d", i);
    }
    sl_store_unref(s);
}

Test(io_store_stress, memory_store_threads_see_whole_values)
{
    check_concurrency(sl_store_create_memory(NULL, NULL));
}

Test(io_store_stress, fs_store_threads_see_whole_values)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    char root[4096];
    snprintf(root, sizeof(root), "%s/sluice-store-stress-XXXXXX", base);
    cr_assert_not_null(mkdtemp(root));
    check_concurrency(sl_store_open_fs(root, NULL, NULL));
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    cr_assert_eq(system(cmd), 0);
}
