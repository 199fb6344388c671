/* SPDX-License-Identifier: MIT */
/*
 * Stores under threads: each thread sets, gets and deletes its own keys
 * while one thread keeps replacing a key all of them read; every read must
 * return a whole value.  And the filesystem store's read-ahead window
 * hinted and read from many threads.  Runs under ThreadSanitizer in CI
 * (plain_test.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "plain_test.h"
#include "read_ahead.h"

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

/* The read-ahead window's device: every hint is AHEAD_HINT bytes, except
 * keys ending in 'x' (nothing to read: 0). */
#define AHEAD_HINT 1000
#define AHEAD_WINDOW (5 * AHEAD_HINT)
#define AHEAD_THREADS 4
#define AHEAD_KEYS 400

static _Atomic uint64_t ahead_given;

static uint64_t
ahead_give(void *ctx, const char *key, const struct sl_byte_range *ranges, size_t n)
{
    (void)ctx, (void)ranges, (void)n;
    if (key[strlen(key) - 1] == 'x')
        return 0;
    atomic_fetch_add(&ahead_given, 1);
    return AHEAD_HINT;
}

/* Each thread hints its keys and reads each three hints later. */
static void *
ahead_worker(void *arg)
{
    struct sl__ahead *a = ((void **)arg)[0];
    int id = *(int *)((void **)arg)[1];
    char key[64];
    for (int i = 0; i < AHEAD_KEYS + 3; i++) {
        if (i < AHEAD_KEYS) {
            snprintf(key, sizeof(key), "t%d/%d%s", id, i, i % 10 == 9 ? "x" : "");
            sl__ahead_hint(a, key, NULL, 0);
        }
        if (i >= 3) {
            snprintf(key, sizeof(key), "t%d/%d%s", id, i - 3, (i - 3) % 10 == 9 ? "x" : "");
            sl__ahead_read(a, key);
        }
    }
    return NULL;
}

/* Hints and reads from many threads: the window never holds more than one
 * hint beyond its bytes, every hint is given, withdrawn or let go, and
 * once other reads age out the hints given after their reads, nothing is
 * left ahead or waiting. */
Test(io_store_stress, read_ahead_window_holds_under_threads)
{
    struct sl__ahead a;
    sl__ahead_init(&a, AHEAD_WINDOW, ahead_give, NULL, NULL);
    atomic_store(&ahead_given, 0);
    pthread_t t[AHEAD_THREADS];
    int ids[AHEAD_THREADS];
    void *args[AHEAD_THREADS][2];
    for (int i = 0; i < AHEAD_THREADS; i++) {
        ids[i] = i;
        args[i][0] = &a;
        args[i][1] = &ids[i];
        cr_assert_eq(pthread_create(&t[i], NULL, ahead_worker, args[i]), 0);
    }
    for (int i = 0; i < AHEAD_THREADS; i++)
        pthread_join(t[i], NULL);
    /* Hints given after their key was read (a read racing the giver)
     * stay until aged out, and each batch aged lets waiting hints in,
     * which age in turn: read until none is left, within a bound far
     * above what every hint aging one by one would need. */
    struct sl__ahead_stats st;
    sl__ahead_stats(&a, &st);
    for (int i = 0; i < 1000000 && (st.ahead > 0 || st.waiting > 0); i++) {
        sl__ahead_read(&a, "unhinted");
        if (i % 64 == 0)
            sl__ahead_stats(&a, &st);
    }
    sl__ahead_stats(&a, &st);
    cr_assert_lt(st.most, AHEAD_WINDOW + AHEAD_HINT, "%llu bytes ahead at most",
                 (unsigned long long)st.most);
    cr_assert_eq(st.ahead, 0, "%llu bytes still ahead", (unsigned long long)st.ahead);
    cr_assert_eq(st.given, atomic_load(&ahead_given));
    const uint64_t readable = AHEAD_THREADS * (AHEAD_KEYS - AHEAD_KEYS / 10);
    cr_assert_eq(st.dropped, 0);
    /* Each readable hint was given or withdrawn before it was given. */
    cr_assert_eq(st.given + st.skipped >= readable, true,
                 "given %llu + withdrawn %llu of %llu readable hints", (unsigned long long)st.given,
                 (unsigned long long)st.skipped, (unsigned long long)readable);
    cr_assert_gt(st.given, 0);
    sl__ahead_fini(&a);
}
