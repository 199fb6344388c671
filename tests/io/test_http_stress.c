/* SPDX-License-Identifier: MIT */
/*
 * The HTTP store under threads, against a real nginx behind the project's
 * fault-and-latency proxy (tests/remote/serve.py, started here): readers
 * on several threads read whole objects and byte ranges, hint objects
 * ahead, while the proxy answers some requests 503 (with Retry-After), 429,
 * resets bodies midway and truncates them; every read must return exactly
 * the file's bytes, and a store closed with fetches ahead in flight must
 * free them.  Also a ThreadSanitizer suite (the plain runner).  Skips when
 * python3 or nginx are missing.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sluice.h>

#include "http_server.h"
#include "io_store.h"
#include "plain_test.h"

#define N_OBJECTS 48
#define N_THREADS 4
#define ROUNDS 3

/* The served directory's objects, as written. */
static uint8_t *objects[N_OBJECTS];
static size_t sizes[N_OBJECTS];

static void
write_objects(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/obj", dir);
    cr_assert_eq(mkdir(p, 0777), 0);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < N_OBJECTS; i++) {
        sizes[i] = (size_t)(i * 7919 % 200000) + (i % 5 == 0 ? 0 : 1);
        objects[i] = malloc(sizes[i] + 1);
        cr_assert_not_null(objects[i]);
        for (size_t k = 0; k < sizes[i]; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            objects[i][k] = (uint8_t)x;
        }
        snprintf(p, sizeof(p), "%s/obj/%d", dir, i);
        FILE *f = fopen(p, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(objects[i], 1, sizes[i], f), sizes[i]);
        fclose(f);
    }
}

/* Faults on some objects, a few times each; the retries get through. */
static const char rules[] =
    "[{\"path\": \"*/obj/1\", \"status\": 503, \"retry_after\": 0, \"count\": 6},"
    " {\"path\": \"*/obj/2\", \"status\": 429, \"count\": 6},"
    " {\"path\": \"*/obj/3\", \"fault\": \"reset_mid_body\", \"count\": 6},"
    " {\"path\": \"*/obj/4\", \"fault\": \"truncate_body\", \"count\": 6},"
    " {\"path\": \"*/obj/6\", \"fault\": \"drop_connection\", \"count\": 6},"
    " {\"path\": \"*/obj/7\", \"fault\": \"full_200\", \"count\": -1}]";

static sl_store *
open_store(const struct sl_test_http_server *s)
{
    struct sl_http_store_opts o = SL_HTTP_STORE_OPTS_DEFAULT;
    o.io_concurrency = 16;
    o.backoff_first_s = 0.005;
    o.backoff_cap_s = 0.05;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = sl_store_open_http(s->url, &o, &err);
    cr_assert_not_null(st, "%s", err.text);
    return st;
}

struct reader_arg {
    sl_store *store;
    int thread;
    int bad; /* reads that did not return the file's bytes */
};

static void *
reader_main(void *p)
{
    struct reader_arg *r = p;
    struct sl_buf buf = SL_BUF_INIT;
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < N_OBJECTS; k++) {
            int i = (k * 5 + r->thread * 11 + round) % N_OBJECTS;
            char key[32], ahead[32];
            snprintf(key, sizeof(key), "obj/%d", i);
            snprintf(ahead, sizeof(ahead), "obj/%d", (i + 3) % N_OBJECTS);
            sl__store_prefetch(r->store, ahead, NULL);
            struct sl_error err = SL_ERROR_INIT;
            uint64_t total = 0;
            bool ranged = (k + r->thread) % 3 == 0 && sizes[i] > 16;
            uint64_t off = ranged ? sizes[i] / 3 : 0, len = ranged ? sizes[i] / 2 : sizes[i];
            struct sl_byte_range range = sl_byte_range_at(off, len);
            if (ranged && k % 2 == 0) /* a range fetched ahead, as inner chunks are */
                sl__store_prefetch(r->store, key, &range);
            sl_status st = sl_store_get(r->store, key, ranged ? &range : NULL, &buf, &total, &err);
            if (st != SL_OK || buf.size != len || total != sizes[i] ||
                (len > 0 && memcmp(buf.data, objects[i] + off, len) != 0)) {
                fprintf(stderr, "thread %d: %s: %s (%zu of %" PRIu64 " bytes)\n", r->thread, key,
                        st == SL_OK ? "wrong bytes" : err.text, buf.size, len);
                r->bad++;
            }
        }
    }
    sl_buf_fini(&buf);
    return NULL;
}

Test(io_http_stress, threads_read_exact_bytes_through_faults_and_hints)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/sluice-http-stress-XXXXXX", base);
    cr_assert_not_null(mkdtemp(dir));
    write_objects(dir);
    struct sl_test_http_server s;
    if (!sl_test_http_start(dir, 2, rules, &s)) {
        cr_assert_eq(sl_fs_remove_tree(dir, NULL), SL_OK);
        cr_skip_test("python3, tests/remote/serve.py or nginx is missing");
        return;
    }
    sl_store *store = open_store(&s);
    pthread_t t[N_THREADS];
    struct reader_arg args[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        args[i] = (struct reader_arg){.store = store, .thread = i};
        cr_assert_eq(pthread_create(&t[i], NULL, reader_main, &args[i]), 0);
    }
    int bad = 0;
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(t[i], NULL);
        bad += args[i].bad;
    }
    struct sl_remote_stats rs;
    sl_store_get_remote_stats(store, &rs);
    printf("%" PRIu64 " requests, %" PRIu64 " retries, at most %u in flight\n", rs.requests,
           rs.retries, rs.max_in_flight);
    /* Hints whose reads never come: the close must end and free them. */
    for (int i = 0; i < N_OBJECTS; i++) {
        char key[32];
        snprintf(key, sizeof(key), "obj/%d", i);
        sl__store_prefetch(store, key, NULL);
    }
    sl_store_unref(store);
    sl_test_http_stop(&s);
    for (int i = 0; i < N_OBJECTS; i++)
        free(objects[i]);
    cr_assert_eq(sl_fs_remove_tree(dir, NULL), SL_OK);
    cr_assert_eq(bad, 0, "%d reads did not return the file's bytes", bad);
    cr_assert_gt(rs.retries, 0, "the faults made retries");
    cr_assert_gt(rs.max_in_flight, 1, "requests overlapped");
}
