/* SPDX-License-Identifier: MIT */
/*
 * Stores of the program's own (sl_store_open_custom): a test store that
 * serves a memory store's objects through get (on the store's threads) or
 * get_async (answered by a thread of the test after a delay), and fails
 * chosen keys.  Checked: arrays read through it equal what was written,
 * hinted reads overlap (more in flight than the workers reading), transient
 * failures are retried and exactly the chunks of keys that never recover
 * fail, naming "<kind>://<key>", wrong answers fail as ECORRUPT, writes go
 * through `set` or are refused, and closing waits for reads in flight.
 * Also a ThreadSanitizer suite (the plain runner).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sluice.h>

#include "io_store.h"
#include "plain_test.h"
#include "testkit.h"

TestSuite(io_store_custom, .timeout = 60.0);

#define SIDE 64
#define CHUNK 8
#define N_CHUNKS ((SIDE / CHUNK) * (SIDE / CHUNK))
#define MAX_QUEUE 4096

/* The test store: a memory store behind get or get_async. */
struct test_store {
    sl_store *inner;
    int delay_us;          /* per read */
    const char *fail_key;  /* fails with `fail_status` ... */
    sl_status fail_status; /* ... */
    int fail_times;        /* ... this many times (-1: always) */
    bool short_answer;     /* answers every range one byte short */
    uint64_t fail_longer;  /* fails (EIO) every range longer than this; 0: none */
    const char *hold_key;  /* answered only once `outer` has read hold_reads objects ... */
    sl_store *outer;       /* ... (its n_get past hold_base), or after 5 s */
    uint64_t hold_base, hold_reads;
    _Atomic int held_until_read; /* 1: the condition came; 0: the 5 s ran out */
    _Atomic int fails_left;      /* of fail_times */
    _Atomic int calls;           /* reads started */
    _Atomic int now, most;       /* reads running at once */
    _Atomic int destroyed;       /* impl.destroy calls */
    /* get_async: reads queued for the answering thread. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct queued {
        char key[256];
        struct sl_byte_range range;
        sl_store_read *rd;
    } queue[MAX_QUEUE];
    int n_queued;
    bool stop;
    pthread_t answerer;
};

static void
enter(struct test_store *t)
{
    atomic_fetch_add(&t->calls, 1);
    int n = atomic_fetch_add(&t->now, 1) + 1;
    int m = atomic_load(&t->most);
    while (n > m && !atomic_compare_exchange_weak(&t->most, &m, n))
        ;
}

/* Serve one read from the memory store, failing it as set up. */
static sl_status
serve(struct test_store *t, const char *key, const struct sl_byte_range *range, struct sl_buf *out,
      uint64_t *object_bytes, struct sl_error *err)
{
    if (t->delay_us > 0)
        usleep((useconds_t)t->delay_us);
    if (t->fail_key != NULL && strcmp(key, t->fail_key) == 0 &&
        (t->fail_times < 0 || atomic_fetch_sub(&t->fails_left, 1) > 0))
        return sl_error_set(err, t->fail_status, NULL, "test fault on %s", key);
    if (t->hold_key != NULL && strcmp(key, t->hold_key) == 0) {
        int came = 0;
        for (int ms = 0; ms < 5000 && !came; ms++) {
            struct sl_store_stats st;
            sl_store_get_stats(t->outer, &st);
            came = st.n_get - t->hold_base >= t->hold_reads;
            if (!came)
                usleep(1000);
        }
        atomic_store(&t->held_until_read, came);
    }
    if (t->fail_longer > 0 && range->kind == SL_RANGE_FROM && range->length > t->fail_longer)
        return sl_error_set(err, SL_EIO, NULL, "test fault: %" PRIu64 " bytes of %s", range->length,
                            key);
    sl_status st = sl_store_get(t->inner, key, range, out, object_bytes, err);
    if (st == SL_OK && t->short_answer && range->kind == SL_RANGE_FROM && out->size > 0)
        out->size--;
    return st;
}

static sl_status
test_get(void *ctx, const char *key, const struct sl_byte_range *range, struct sl_buf *out,
         uint64_t *object_bytes, struct sl_error *err)
{
    struct test_store *t = ctx;
    enter(t);
    sl_status st = serve(t, key, range, out, object_bytes, err);
    atomic_fetch_sub(&t->now, 1);
    return st;
}

static void
test_get_async(void *ctx, const char *key, const struct sl_byte_range *range, sl_store_read *rd)
{
    struct test_store *t = ctx;
    enter(t);
    pthread_mutex_lock(&t->lock);
    cr_assert_lt(t->n_queued, MAX_QUEUE);
    struct queued *q = &t->queue[t->n_queued++];
    snprintf(q->key, sizeof(q->key), "%s", key);
    q->range = *range;
    q->rd = rd;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

/* The answering thread: after the delay, answers everything queued then,
 * as a server with many requests in flight would. */
static void *
answerer_main(void *arg)
{
    struct test_store *t = arg;
    static struct queued batch[MAX_QUEUE];
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->stop && t->n_queued == 0)
            pthread_cond_wait(&t->cond, &t->lock);
        if (t->stop && t->n_queued == 0)
            break;
        pthread_mutex_unlock(&t->lock);
        usleep((useconds_t)t->delay_us);
        pthread_mutex_lock(&t->lock);
        int n = t->n_queued;
        memcpy(batch, t->queue, (size_t)n * sizeof(batch[0]));
        t->n_queued = 0;
        pthread_mutex_unlock(&t->lock);
        for (int i = 0; i < n; i++) {
            struct sl_error err = SL_ERROR_INIT;
            uint64_t size = 0;
            struct sl_buf *out = sl_store_read_buf(batch[i].rd);
            int delay = t->delay_us;
            t->delay_us = 0; /* the batch waited already */
            sl_status st = serve(t, batch[i].key, &batch[i].range, out, &size, &err);
            t->delay_us = delay;
            atomic_fetch_sub(&t->now, 1);
            sl_store_read_done(batch[i].rd, st, size, &err);
        }
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

static void
test_destroy(void *ctx)
{
    struct test_store *t = ctx;
    atomic_fetch_add(&t->destroyed, 1);
}

static sl_status
test_set(void *ctx, const char *key, const void *data, size_t n, struct sl_error *err)
{
    return sl_store_set(((struct test_store *)ctx)->inner, key, data, n, err);
}

static uint16_t
value_at(uint64_t i, uint64_t j)
{
    return (uint16_t)(i * 131 + j * 7 + 1);
}

/* A test store holding array "a" (v3, zstd, chunks CHUNK x CHUNK; shards
 * of 4 x 4 chunks when `sharded`). */
static struct test_store *
test_store_new(bool sharded)
{
    struct test_store *t = calloc(1, sizeof(*t));
    cr_assert_not_null(t);
    struct sl_error err = SL_ERROR_INIT;
    t->inner = sl_store_create_memory(NULL, &err);
    cr_assert_not_null(t->inner);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = SIDE;
        sp.chunk_shape[d] = CHUNK;
        sp.shard_shape[d] = sharded ? 4 * CHUNK : 0;
    }
    cr_assert_eq(sl_codec_spec_parse("zstd:1", &sp.codec, NULL), SL_OK);
    sl_array *a = sl_array_create(t->inner, "a", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    static uint16_t data[SIDE * SIDE];
    for (uint64_t i = 0; i < SIDE; i++)
        for (uint64_t j = 0; j < SIDE; j++)
            data[i * SIDE + j] = value_at(i, j);
    struct sl_region whole = {2, {0, 0}, {SIDE, SIDE}};
    cr_assert_eq(sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, &err), SL_OK,
                 "%s", err.text);
    sl_array_unref(a);
    return t;
}

static void
test_store_free(struct test_store *t)
{
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    sl_store_unref(t->inner);
    free(t);
}

static void
answerer_start(struct test_store *t)
{
    cr_assert_eq(pthread_create(&t->answerer, NULL, answerer_main, t), 0);
}

static void
answerer_stop(struct test_store *t)
{
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->answerer, NULL);
}

/* The store over `t` with `impl`, with quick retries. */
static sl_store *
open_over(struct test_store *t, const struct sl_store_impl *impl)
{
    struct sl_custom_store_opts o = SL_CUSTOM_STORE_OPTS_DEFAULT;
    o.backoff_first_s = 0.001;
    o.backoff_cap_s = 0.004;
    o.max_attempts = 4;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_custom(impl, t, &o, &err);
    cr_assert_not_null(s, "%s", err.text);
    return s;
}

/* Batched read of every chunk of "a" through `s` with 2 workers; the
 * number of selections whose values are wrong. */
static int
read_all(sl_store *s, sl_status *status, struct sl_error *errors)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(s, "a", NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    struct sl_test_chunks_read got =
        sl_test_read_chunks(a, SIDE, CHUNK, value_at, status, errors, NULL);
    /* the call returns the first failed selection's status */
    cr_assert_eq(got.ret, got.first_failed);
    int wrong = got.wrong;
    sl_array_unref(a);
    return wrong;
}

static void
expect_all_ok(const sl_status *status, const struct sl_error *errors)
{
    for (int k = 0; k < N_CHUNKS; k++) {
        if (status[k] != SL_OK) /* the plain runner drops assertion messages */
            fprintf(stderr, "chunk %d: %s\n", k, errors[k].text);
        cr_assert_eq(status[k], SL_OK);
    }
}

Test(io_store_custom, get_on_the_stores_threads_reads_back_and_overlaps)
{
    for (int sharded = 0; sharded < 2; sharded++) {
        struct test_store *t = test_store_new(sharded);
        t->delay_us = 10000; /* long enough that hinted reads overlap on a busy machine */
        struct sl_store_impl impl = {.kind = "test", .get = test_get, .destroy = test_destroy};
        sl_store *s = open_over(t, &impl);
        cr_assert(strcmp(sl_store_kind(s), "custom") == 0);
        sl_status status[N_CHUNKS];
        struct sl_error errors[N_CHUNKS];
        cr_assert_eq(read_all(s, status, errors), 0);
        expect_all_ok(status, errors);
        struct sl_remote_stats rs;
        sl_store_get_remote_stats(s, &rs);
        sl_store_unref(s);
        cr_assert_eq(atomic_load(&t->destroyed), 1, "destroy called once, at the last unref");
        /* Two workers alone would keep at most two reads running. */
        cr_assert_gt(atomic_load(&t->most), 2, "sharded %d: at most %d reads at once", sharded,
                     atomic_load(&t->most));
        cr_assert_eq(rs.requests, (uint64_t)atomic_load(&t->calls));
        test_store_free(t);
    }
}

/* A batched read takes first the chunks whose fetch has come: every chunk
 * hinted, and all but (0, 0) come (its answer held back until every other
 * chunk was read), one worker reads them all and then (0, 0), every value
 * right; in plan order the worker would wait on (0, 0) until the store
 * gave up holding it. */
Test(io_store_custom, chunks_that_came_are_read_before_one_still_coming)
{
    struct test_store *t = test_store_new(false);
    struct sl_store_impl impl = {.kind = "test", .get = test_get, .destroy = test_destroy};
    sl_store *s = open_over(t, &impl);
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(s, "a", NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    struct sl_store_stats st;
    sl_store_get_stats(s, &st);
    t->outer = s;
    t->hold_base = st.n_get;
    t->hold_reads = N_CHUNKS - 1;
    atomic_store(&t->held_until_read, -1);
    t->hold_key = "a/c/0/0";
    for (uint64_t i = 0; i < SIDE / CHUNK; i++)
        for (uint64_t j = 0; j < SIDE / CHUNK; j++)
            sl_array_prefetch_chunk(a, (uint64_t[]){i, j});
    int came = 0;
    for (int ms = 0; ms < 5000 && came < N_CHUNKS - 1; ms++) {
        came = 0;
        for (int k = 1; k < N_CHUNKS; k++) {
            char key[64];
            snprintf(key, sizeof(key), "a/c/%d/%d", k / (SIDE / CHUNK), k % (SIDE / CHUNK));
            came += sl__store_fetched(s, key);
        }
        if (came < N_CHUNKS - 1)
            usleep(1000);
    }
    cr_assert_eq(came, N_CHUNKS - 1, "hinted chunks that came");
    cr_assert(!sl__store_fetched(s, "a/c/0/0"));
    sl_status status[N_CHUNKS];
    struct sl_error errors[N_CHUNKS];
    struct sl_test_chunks_read got =
        sl_test_read_chunks_on(a, SIDE, CHUNK, value_at, status, errors, NULL, 1);
    expect_all_ok(status, errors);
    cr_assert_eq(got.wrong, 0);
    cr_assert_eq(atomic_load(&t->held_until_read), 1,
                 "(0, 0) was answered before the other %d chunks were read (-1: never asked)",
                 N_CHUNKS - 1);
    sl_array_unref(a);
    sl_store_unref(s);
    test_store_free(t);
}

Test(io_store_custom, get_async_keeps_the_window_full)
{
    struct test_store *t = test_store_new(false);
    t->delay_us = 3000;
    answerer_start(t);
    struct sl_store_impl impl = {.kind = "test", .get_async = test_get_async};
    sl_store *s = open_over(t, &impl);
    sl_status status[N_CHUNKS];
    struct sl_error errors[N_CHUNKS];
    cr_assert_eq(read_all(s, status, errors), 0);
    expect_all_ok(status, errors);
    sl_store_unref(s);
    answerer_stop(t);
    cr_assert_geq(atomic_load(&t->most), 32, "at most %d reads outstanding", atomic_load(&t->most));
    test_store_free(t);
}

Test(io_store_custom, transient_failures_are_retried_and_the_rest_fail_alone)
{
    for (int async = 0; async < 2; async++) {
        /* ENETWORK three times on chunk (2, 3): the fourth try gets it. */
        struct test_store *t = test_store_new(false);
        t->fail_key = "a/c/2/3";
        t->fail_status = SL_ENETWORK;
        t->fail_times = 3;
        atomic_store(&t->fails_left, 3);
        if (async)
            answerer_start(t);
        struct sl_store_impl impl = {.kind = "test", .get = test_get};
        if (async)
            impl = (struct sl_store_impl){.kind = "test", .get_async = test_get_async};
        sl_store *s = open_over(t, &impl);
        sl_status status[N_CHUNKS];
        struct sl_error errors[N_CHUNKS];
        cr_assert_eq(read_all(s, status, errors), 0);
        expect_all_ok(status, errors);
        struct sl_remote_stats rs;
        sl_store_get_remote_stats(s, &rs);
        cr_assert_eq(rs.retries, 3);
        sl_store_unref(s);
        /* ETIMEDOUT forever: fails after max_attempts (4), alone. */
        t->fail_key = "a/c/5/1";
        t->fail_status = SL_ETIMEDOUT;
        t->fail_times = -1;
        s = open_over(t, &impl);
        cr_assert_eq(read_all(s, status, errors), 0);
        int bad = 5 * (SIDE / CHUNK) + 1;
        for (int k = 0; k < N_CHUNKS; k++) {
            if (k != bad) {
                cr_assert_eq(status[k], SL_OK, "chunk %d: %s", k, errors[k].text);
                continue;
            }
            cr_assert_eq(status[k], SL_ETIMEDOUT);
            cr_assert_not_null(strstr(errors[k].text, "test://a/c/5/1"), "%s", errors[k].text);
            cr_assert_not_null(strstr(errors[k].text, "after 4 attempts"), "%s", errors[k].text);
            cr_assert_not_null(strstr(errors[k].text, "test fault"), "%s", errors[k].text);
        }
        sl_store_unref(s);
        /* EACCES is final: one try. */
        t->fail_status = SL_EACCES;
        int calls = atomic_load(&t->calls);
        s = open_over(t, &impl);
        cr_assert_eq(read_all(s, status, errors), 0);
        cr_assert_eq(status[bad], SL_EACCES, "%s", errors[bad].text);
        cr_assert_not_null(strstr(errors[bad].text, "after 1 attempt"), "%s", errors[bad].text);
        sl_store_unref(s);
        cr_assert_leq(atomic_load(&t->calls) - calls, N_CHUNKS + 2, "no retries of EACCES");
        if (async)
            answerer_stop(t);
        test_store_free(t);
    }
}

/* Hint every chunk of sharded "a" through `s` (as the executor hints its
 * tasks' chunks), then read each; the number read wrong or failed. */
static int
hint_then_read(sl_store *s)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(s, "a", NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    for (uint64_t i = 0; i < SIDE / CHUNK; i++)
        for (uint64_t j = 0; j < SIDE / CHUNK; j++)
            sl_array_prefetch_chunk(a, (uint64_t[]){i, j});
    int bad = 0;
    uint16_t buf[CHUNK * CHUNK];
    for (uint64_t i = 0; i < SIDE / CHUNK; i++)
        for (uint64_t j = 0; j < SIDE / CHUNK; j++) {
            bool missing = false;
            if (sl_array_read_chunk(a, (uint64_t[]){i, j}, buf, sizeof(buf), NULL, &missing,
                                    &err) != SL_OK ||
                missing) {
                fprintf(stderr, "chunk (%" PRIu64 ", %" PRIu64 "): %s\n", i, j, err.text);
                bad++;
                continue;
            }
            for (uint64_t y = 0; y < CHUNK; y++)
                for (uint64_t x = 0; x < CHUNK; x++)
                    bad += buf[y * CHUNK + x] != value_at(i * CHUNK + y, j * CHUNK + x);
        }
    sl_array_unref(a);
    return bad;
}

/* Inner chunks hinted before their shard's index is known are fetched
 * together: one request per shard for its 16 chunks (they lie within the
 * gap), beside the index's; each read copies its own bytes out.  Where
 * that request fails, each read asks for its own bytes and reads right. */
Test(io_store_custom, hinted_inner_chunks_of_a_shard_come_in_one_request)
{
    struct test_store *t = test_store_new(true);
    struct sl_store_impl impl = {.kind = "test", .get = test_get};
    sl_store *s = open_over(t, &impl);
    cr_assert_eq(hint_then_read(s), 0);
    int shards = (SIDE / (4 * CHUNK)) * (SIDE / (4 * CHUNK));
    /* (The first read is the array's metadata.) */
    cr_assert_eq(atomic_load(&t->calls), 1 + 2 * shards, "%d reads for %d shards of 16 chunks",
                 atomic_load(&t->calls), shards);
    sl_store_unref(s);
    /* Each coalesced request fails (its 4 tries): the reads fall back. */
    atomic_store(&t->calls, 0);
    t->fail_longer = 600; /* a chunk of 8 x 8 uint16 compresses to less */
    s = open_over(t, &impl);
    cr_assert_eq(hint_then_read(s), 0);
    cr_assert_eq(atomic_load(&t->calls), 1 + shards + 4 * shards + N_CHUNKS, "%d reads",
                 atomic_load(&t->calls));
    sl_store_unref(s);
    test_store_free(t);
}

Test(io_store_custom, short_answers_fail_as_corrupt_and_are_never_decoded)
{
    struct test_store *t = test_store_new(true);
    t->short_answer = true;
    struct sl_store_impl impl = {.kind = "test", .get = test_get};
    sl_store *s = open_over(t, &impl);
    sl_status status[N_CHUNKS];
    struct sl_error errors[N_CHUNKS];
    cr_assert_eq(read_all(s, status, errors), 0);
    for (int k = 0; k < N_CHUNKS; k++) {
        cr_assert_eq(status[k], SL_ECORRUPT, "chunk %d: %s", k, errors[k].text);
        cr_assert_not_null(strstr(errors[k].text, "another length than asked"), "%s",
                           errors[k].text);
    }
    sl_store_unref(s);
    test_store_free(t);
}

static sl_status
count_key(void *arg, const char *key, uint64_t bytes)
{
    (void)arg, (void)key, (void)bytes;
    return SL_OK;
}

Test(io_store_custom, writes_go_through_set_or_are_refused)
{
    struct test_store *t = test_store_new(false);
    struct sl_store_impl ro = {.kind = "test", .get = test_get};
    sl_store *s = open_over(t, &ro);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, "x", "abc", 3, &err), SL_EACCES);
    cr_assert_not_null(strstr(err.text, "test://"), "%s", err.text);
    cr_assert_eq(sl_store_list(s, "", count_key, NULL, &err), SL_EUNSUPPORTED);
    sl_store_unref(s);
    struct sl_store_impl rw = {.kind = "test", .get = test_get, .set = test_set};
    s = open_over(t, &rw);
    cr_assert_eq(sl_store_set(s, "x", "abc", 3, &err), SL_OK, "%s", err.text);
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(t->inner, "x", NULL, &b, NULL, &err), SL_OK);
    cr_assert_eq(b.size, 3);
    cr_assert_eq(sl_store_get(s, "x", NULL, &b, NULL, &err), SL_OK, "%s", err.text);
    cr_assert_eq(memcmp(b.data, "abc", 3), 0);
    cr_assert_eq(sl_store_get(s, "nope", NULL, &b, NULL, &err), SL_ENOTFOUND);
    sl_buf_fini(&b);
    sl_store_unref(s);
    test_store_free(t);
}

Test(io_store_custom, opening_checks_its_arguments)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_store_impl none = {.kind = "test"};
    cr_assert_null(sl_store_open_custom(&none, NULL, NULL, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    cr_assert_null(sl_store_open_custom(NULL, NULL, NULL, &err));
    struct sl_store_impl impl = {.get = test_get};
    struct sl_custom_store_opts o = SL_CUSTOM_STORE_OPTS_DEFAULT;
    o.io_concurrency = 0;
    err = SL_ERROR_INIT;
    cr_assert_null(sl_store_open_custom(&impl, NULL, &o, &err));
    cr_assert_not_null(strstr(err.text, "io_concurrency 0"), "%s", err.text);
}

Test(io_store_custom, closing_waits_for_reads_in_flight)
{
    struct test_store *t = test_store_new(false);
    t->delay_us = 20000;
    answerer_start(t);
    struct sl_store_impl impl = {.kind = "test", .get_async = test_get_async};
    sl_store *s = open_over(t, &impl);
    for (int i = 0; i < 8; i++) {
        char key[32];
        snprintf(key, sizeof(key), "a/c/0/%d", i);
        sl__store_prefetch(s, key, NULL); /* hints whose reads never come */
    }
    usleep(2000);
    sl_store_unref(s); /* must wait for the 8 outstanding reads */
    cr_assert_eq(atomic_load(&t->now), 0, "no read outstanding after the close");
    answerer_stop(t);
    test_store_free(t);
}
