/* SPDX-License-Identifier: MIT */
/*
 * Batched reads over HTTP, against a real nginx behind the project's
 * fault-and-latency proxy (tests/remote/serve.py, 5 ms per request): a
 * sharded array's batch fetches every shard index once and all in one
 * window (more requests in flight than workers), coalesces each shard's
 * inner chunks into one request, reads back exactly what was written,
 * keeps what it fetches ahead within the store's byte limit, and fails
 * exactly the chunks of a shard the server refuses, naming its URL.
 * Skips when python3 or nginx are missing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <sluice.h>

#include "http_server.h"
#include "testkit.h"

TestSuite(io_http_batch, .timeout = 120.0);

#define SIDE 256
#define INNER 32
#define SHARD 128
#define N_SEL ((SIDE / INNER) * (SIDE / INNER)) /* one selection per inner chunk */
#define N_SHARDS ((SIDE / SHARD) * (SIDE / SHARD))

static uint16_t
value_at(uint64_t i, uint64_t j)
{
    return (uint16_t)((i * SIDE + j) * 7 + (i ^ j));
}

/* Write array "s" (sharded, zstd) under `dir`. */
static void
write_array(const char *dir)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = sl_store_open_fs(dir, NULL, &err);
    cr_assert_not_null(st, "%s", err.text);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = SIDE;
        sp.chunk_shape[d] = INNER;
        sp.shard_shape[d] = SHARD;
    }
    cr_assert_eq(sl_codec_spec_parse("zstd:1", &sp.codec, NULL), SL_OK);
    sl_array *a = sl_array_create(st, "s", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    uint16_t *data = malloc(sizeof(uint16_t) * SIDE * SIDE);
    cr_assert_not_null(data);
    for (uint64_t i = 0; i < SIDE; i++)
        for (uint64_t j = 0; j < SIDE; j++)
            data[i * SIDE + j] = value_at(i, j);
    struct sl_region whole = {2, {0, 0}, {SIDE, SIDE}};
    cr_assert_eq(
        sl_array_write_region(a, &whole, data, sizeof(uint16_t) * SIDE * SIDE, NULL, NULL, &err),
        SL_OK, "%s", err.text);
    free(data);
    sl_array_unref(a);
    sl_store_unref(st);
}

/* One batched read of every inner chunk of "s" over `url`; what it did. */
struct outcome {
    sl_status status[N_SEL];
    struct sl_error errors[N_SEL];
    sl_status ret; /* what the call returned */
    int wrong;     /* selections read ok whose values differ */
    struct sl_batch_stats stats;
    struct sl_remote_stats before, after;
};

static void
batch_read(const char *url, const struct sl_http_store_opts *o, struct outcome *out)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = sl_store_open_http(url, o, &err);
    cr_assert_not_null(st, "%s", err.text);
    sl_array *a = sl_array_open(st, "s", NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    sl_store_get_remote_stats(st, &out->before);
    struct sl_test_chunks_read r =
        sl_test_read_chunks(a, SIDE, INNER, value_at, out->status, out->errors, &out->stats);
    sl_store_get_remote_stats(st, &out->after);
    out->ret = r.ret;
    out->wrong = r.wrong;
    sl_array_unref(a);
    sl_store_unref(st);
}

static struct sl_http_store_opts
fast_retries(void)
{
    struct sl_http_store_opts o = SL_HTTP_STORE_OPTS_DEFAULT;
    o.max_attempts = 2;
    o.backoff_first_s = 0.005;
    o.backoff_cap_s = 0.01;
    return o;
}

/* The served directory with array "s", and its server; false: skipped. */
static bool
setup(char *dir, size_t size, const char *rules, struct sl_test_http_server *s)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, size, "%s/sluice-http-batch-XXXXXX", base);
    cr_assert_not_null(mkdtemp(dir));
    write_array(dir);
    if (sl_test_http_start(dir, 5, rules, s))
        return true;
    cr_assert_eq(sl_fs_remove_tree(dir, NULL), SL_OK);
    return false;
}

static void
teardown(const char *dir, struct sl_test_http_server *s)
{
    sl_test_http_stop(s);
    cr_assert_eq(sl_fs_remove_tree(dir, NULL), SL_OK);
}

Test(io_http_batch, sharded_batch_fetches_indexes_once_in_one_window_and_coalesces)
{
    char dir[4096];
    struct sl_test_http_server s;
    if (!setup(dir, sizeof(dir), NULL, &s)) {
        cr_skip_test("python3, tests/remote/serve.py or nginx is missing");
        return;
    }
    struct sl_http_store_opts o = fast_retries();
    struct outcome *out = calloc(1, sizeof(*out));
    cr_assert_not_null(out);
    batch_read(s.url, &o, out);
    uint64_t requests = out->after.requests - out->before.requests;
    printf("batch: %" PRIu64 " requests, %" PRIu64 " index reads, %" PRIu64
           " range requests, at most %u in flight\n",
           requests, out->stats.n_index_reads, out->stats.n_requests, out->after.max_in_flight);
    teardown(dir, &s);
    cr_assert_eq(out->ret, SL_OK);
    for (int k = 0; k < N_SEL; k++)
        cr_assert_eq(out->status[k], SL_OK, "selection %d: %s", k, out->errors[k].text);
    cr_assert_eq(out->wrong, 0, "%d selections read wrong values", out->wrong);
    cr_assert_eq(out->stats.n_index_reads, N_SHARDS);
    /* Every shard's 16 inner chunks lie within the 1 MiB gap: one request each. */
    cr_assert_eq(out->stats.n_requests, N_SHARDS);
    cr_assert_eq(requests, 2 * N_SHARDS, "one index and one range request per shard");
    /* Two workers alone keep two requests in flight; the hints keep the
     * wave's four indexes (and then its four ranges) in flight together. */
    cr_assert_geq(out->after.max_in_flight, N_SHARDS);
    free(out);
}

Test(io_http_batch, fetching_ahead_stays_within_its_byte_limit)
{
    char dir[4096];
    struct sl_test_http_server s;
    if (!setup(dir, sizeof(dir), NULL, &s)) {
        cr_skip_test("python3, tests/remote/serve.py or nginx is missing");
        return;
    }
    struct sl_http_store_opts o = fast_retries();
    o.prefetch_bytes = 1; /* fetch one object ahead at a time */
    struct outcome *out = calloc(1, sizeof(*out));
    cr_assert_not_null(out);
    batch_read(s.url, &o, out);
    teardown(dir, &s);
    cr_assert_eq(out->ret, SL_OK);
    for (int k = 0; k < N_SEL; k++)
        cr_assert_eq(out->status[k], SL_OK, "selection %d: %s", k, out->errors[k].text);
    cr_assert_eq(out->wrong, 0);
    /* Two workers' own reads and one fetch ahead. */
    cr_assert_leq(out->after.max_in_flight, 3, "%u in flight", out->after.max_in_flight);
    free(out);
}

Test(io_http_batch, a_refused_shard_fails_exactly_its_chunks_naming_its_url)
{
    char dir[4096];
    struct sl_test_http_server s;
    if (!setup(dir, sizeof(dir), "[{\"path\": \"*/s/c/1/0\", \"status\": 500, \"count\": -1}]",
               &s)) {
        cr_skip_test("python3, tests/remote/serve.py or nginx is missing");
        return;
    }
    struct sl_http_store_opts o = fast_retries();
    struct outcome *out = calloc(1, sizeof(*out));
    cr_assert_not_null(out);
    batch_read(s.url, &o, out);
    teardown(dir, &s);
    int failed = 0;
    for (int k = 0; k < N_SEL; k++) {
        int row = k / (SIDE / INNER), col = k % (SIDE / INNER);
        bool in_bad = row * INNER / SHARD == 1 && col * INNER / SHARD == 0;
        if (!in_bad) {
            cr_assert_eq(out->status[k], SL_OK, "selection %d: %s", k, out->errors[k].text);
            continue;
        }
        failed++;
        cr_assert_eq(out->status[k], SL_EHTTP, "selection %d: %s", k, out->errors[k].text);
        cr_assert_not_null(strstr(out->errors[k].text, "/s/c/1/0"), "%s", out->errors[k].text);
        cr_assert_not_null(strstr(out->errors[k].text, "500"), "%s", out->errors[k].text);
    }
    cr_assert_eq(failed, 16);
    cr_assert_eq(out->ret, SL_EHTTP, "the lowest failed selection's status");
    cr_assert_eq(out->wrong, 0);
    free(out);
}
