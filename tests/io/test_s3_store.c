/* SPDX-License-Identifier: MIT */
/*
 * The S3 store against a real S3 server: s3rver behind the project's proxy
 * (tests/remote/s3serve.py), which checks every request's SigV4 signature.
 * Checked: an array written through the store (one PUT per object) reads
 * back equal through another store, whole and batched; listing pages
 * through continuation tokens and returns keys in byte order; deleting a
 * node removes every object; a wrong secret fails with S3's
 * SignatureDoesNotMatch quoted and the secret nowhere in the message; S3's
 * SlowDown is retried; an absent key reads as absent and an absent bucket
 * is an error; a tree is deleted 1000 keys per DeleteObjects request
 * (counted in the proxy's log), a throttled one retried and a failing one
 * named; a multipart write keeps the key's version for the next
 * conditional write; what sl_store_conditional_writes reports; keys never
 * read written on the version a listing found before (a read's version
 * kept over a later listing's), a listing denied (writes unconditional) or
 * failing (the write fails); the proxy's write faults (a PUT, a part, a
 * completion reset while sent, reset before the answer, its answer cut,
 * SlowDown; list pages reset, cut, throttled) once, retried to objects
 * that read back equal (a lost answer of a conditional write that landed
 * is not a conflict), and on every try, failing only the write they hit,
 * naming its URL, aborting a multipart upload.  Skips when python3, node
 * or s3rver is missing (CI installs them: npm ci --prefix tests/tools).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <sluice.h>

#include "http_server.h"
#include "testkit.h"

TestSuite(io_s3_store, .timeout = 120.0);

#define SIDE 96
#define CHUNK 16

static uint16_t
value_at(uint64_t i, uint64_t j)
{
    return (uint16_t)(i * 977 + j * 13 + 5);
}

/* The process's AWS settings: s3rver's key pair, nothing from the host. */
static void
aws_env(const char *secret)
{
    setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    setenv("AWS_REGION", "us-east-1", 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent/sluice-test/config", 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/sluice-test/credentials", 1);
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_ENDPOINT_URL_S3");
}

/* A temporary directory and the server; false: skipped. */
static bool
setup(char *dir, size_t size, const char *rules, struct sl_test_http_server *s)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, size, "%s/sluice-s3-store-XXXXXX", base);
    cr_assert_not_null(mkdtemp(dir));
    aws_env("S3RVER");
    if (sl_test_s3_start(dir, rules, s))
        return true;
    cr_assert_eq(sl_fs_remove_tree(dir, NULL), SL_OK);
    if (getenv("SL_REQUIRE_S3RVER") != NULL && strcmp(getenv("SL_REQUIRE_S3RVER"), "1") == 0)
        cr_assert_fail("s3serve.py did not start and SL_REQUIRE_S3RVER=1");
    return false;
}

/* Start the server with the proxy's `rules` (NULL: none) in a temporary
 * directory, declaring `dir` and `s` for the test; skip the test when it
 * cannot start (setup fails it instead under SL_REQUIRE_S3RVER=1). */
#define S3_SETUP(rules)                                                                   \
    char dir[4096];                                                                       \
    struct sl_test_http_server s;                                                         \
    if (!setup(dir, sizeof(dir), (rules), &s)) {                                          \
        cr_skip_test("python3, node or s3rver is missing (npm ci --prefix tests/tools)"); \
        return;                                                                           \
    }

static void
teardown(const char *dir, struct sl_test_http_server *s)
{
    sl_test_http_stop(s);
    cr_assert_eq(sl_fs_remove_tree(dir, NULL), SL_OK);
}

static sl_store *
open_s3(const struct sl_test_http_server *s, const char *prefix, struct sl_error *err)
{
    char url[512];
    snprintf(url, sizeof(url), "s3://%s/%s", s->bucket, prefix);
    struct sl_http_store_opts ho = SL_HTTP_STORE_OPTS_DEFAULT;
    ho.backoff_first_s = 0.01;
    ho.backoff_cap_s = 0.05;
    struct sl_s3_store_opts so = SL_S3_STORE_OPTS_DEFAULT;
    so.endpoint = s->url;
    return sl_store_open_s3(url, &ho, &so, err);
}

/* Keys listed, in the order they came. */
struct keys {
    char (*key)[128];
    size_t n, cap;
};

static sl_status
collect(void *arg, const char *key, uint64_t bytes)
{
    (void)bytes;
    struct keys *k = arg;
    if (k->n < k->cap)
        snprintf(k->key[k->n], sizeof(k->key[0]), "%s", key);
    k->n++;
    return SL_OK;
}

Test(io_s3_store, an_array_written_to_s3_reads_back_and_is_deleted_whole)
{
    S3_SETUP(NULL);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = open_s3(&s, "runs/a b+c.zarr", &err);
    cr_assert_not_null(st, "%s", err.text);
    cr_assert_eq(strcmp(sl_store_kind(st), "s3"), 0);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = SIDE;
        sp.chunk_shape[d] = CHUNK;
        sp.shard_shape[d] = 2 * CHUNK;
    }
    cr_assert_eq(sl_codec_spec_parse("zstd:1", &sp.codec, NULL), SL_OK);
    sl_array *a = sl_array_create(st, "img", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    static uint16_t data[SIDE * SIDE], back[SIDE * SIDE];
    for (uint64_t i = 0; i < SIDE; i++)
        for (uint64_t j = 0; j < SIDE; j++)
            data[i * SIDE + j] = value_at(i, j);
    struct sl_region whole = {2, {0, 0}, {SIDE, SIDE}};
    cr_assert_eq(sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, &err), SL_OK,
                 "%s", err.text);
    sl_array_unref(a);

    /* Another store reads it back, whole and batched. */
    sl_store *rd = open_s3(&s, "runs/a b+c.zarr", &err);
    cr_assert_not_null(rd, "%s", err.text);
    a = sl_array_open(rd, "img", NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    cr_assert_eq(sl_array_read_region(a, &whole, back, sizeof(back), NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    cr_assert_eq(memcmp(data, back, sizeof(data)), 0);
    struct sl_region parts[4];
    void *bufs[4];
    size_t sizes[4];
    static uint16_t pb[4][CHUNK * CHUNK];
    for (int k = 0; k < 4; k++) {
        uint64_t i = (uint64_t)k * CHUNK, j = (uint64_t)(5 - k) * CHUNK;
        parts[k] = (struct sl_region){2, {i, j}, {i + CHUNK, j + CHUNK}};
        bufs[k] = pb[k];
        sizes[k] = sizeof(pb[k]);
    }
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 2);
    struct sl_batch_opts bo = SL_BATCH_OPTS_DEFAULT;
    bo.par = &pool.par;
    cr_assert_eq(sl_array_read_batch(a, 4, parts, bufs, sizes, &bo, NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(pb[k][3 * CHUNK + 7], value_at(parts[k].start[0] + 3, parts[k].start[1] + 7));
    sl_array_unref(a);

    /* Listing: zarr.json and the 9 shards, in byte order. */
    struct keys k = {calloc(64, sizeof(*k.key)), 0, 64};
    cr_assert_eq(sl_store_list(rd, "img", collect, &k, &err), SL_OK, "%s", err.text);
    cr_assert_eq(k.n, 10, "%zu keys", k.n);
    for (size_t i = 1; i < k.n; i++)
        cr_assert_lt(strcmp(k.key[i - 1], k.key[i]), 0, "%s then %s", k.key[i - 1], k.key[i]);
    cr_assert_eq(strcmp(k.key[k.n - 1], "img/zarr.json"), 0, "%s", k.key[k.n - 1]);

    /* Deleting the node removes every object. */
    cr_assert_eq(sl_store_delete_tree(st, "img", &err), SL_OK, "%s", err.text);
    k.n = 0;
    cr_assert_eq(sl_store_list(rd, "", collect, &k, &err), SL_OK, "%s", err.text);
    cr_assert_eq(k.n, 0, "%zu keys left", k.n);
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(rd, "img/zarr.json", NULL, &b, NULL, &err), SL_ENOTFOUND);
    sl_buf_fini(&b);
    free(k.key);
    sl_store_unref(rd);
    sl_store_unref(st);
    teardown(dir, &s);
}

Test(io_s3_store, listing_pages_through_continuation_tokens)
{
    S3_SETUP(NULL);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = open_s3(&s, "many", &err);
    cr_assert_not_null(st, "%s", err.text);
    enum { N = 1030 }; /* more than one page of 1000 */
    for (int i = 0; i < N; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k/%04d", i);
        cr_assert_eq(sl_store_set(st, key, key, strlen(key), &err), SL_OK, "%s", err.text);
    }
    struct keys k = {calloc(N + 8, sizeof(*k.key)), 0, N + 8};
    cr_assert_eq(sl_store_list(st, "k/", collect, &k, &err), SL_OK, "%s", err.text);
    cr_assert_eq(k.n, N, "%zu keys listed of %d", k.n, N);
    for (int i = 0; i < N; i++) {
        char want[32];
        snprintf(want, sizeof(want), "k/%04d", i);
        cr_assert_eq(strcmp(k.key[i], want), 0, "key %d: %s", i, k.key[i]);
    }
    free(k.key);
    sl_store_unref(st);
    teardown(dir, &s);
}

Test(io_s3_store, a_wrong_secret_is_refused_and_never_named)
{
    S3_SETUP(NULL);
    static const char secret[] = "wrong-Secret-9f8e7d6c5b4a";
    aws_env(secret);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = open_s3(&s, "x", &err);
    cr_assert_not_null(st, "%s", err.text);
    sl_status rc = sl_store_set(st, "k", "v", 1, &err);
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err2 = SL_ERROR_INIT;
    sl_status rc2 = sl_store_get(st, "k", NULL, &b, NULL, &err2);
    sl_buf_fini(&b);
    sl_store_unref(st);
    aws_env("S3RVER");
    teardown(dir, &s);
    cr_assert_eq(rc, SL_EHTTP, "%s", err.text);
    cr_assert_not_null(strstr(err.text, "SignatureDoesNotMatch"), "%s", err.text);
    cr_assert_null(strstr(err.text, secret), "the secret appears: %s", err.text);
    cr_assert_eq(rc2, SL_EHTTP, "a refused read is an error, not an absent key: %s", err2.text);
    cr_assert_null(strstr(err2.text, secret), "the secret appears: %s", err2.text);
}

Test(io_s3_store, slowdown_is_retried_and_absent_keys_and_buckets_differ)
{
    S3_SETUP("[{\"method\": \"PUT\", \"s3_error\": \"SlowDown\", \"count\": 2}]");
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = open_s3(&s, "p", &err);
    cr_assert_not_null(st, "%s", err.text);
    cr_assert_eq(sl_store_set(st, "obj", "hello", 5, &err), SL_OK, "%s", err.text);
    struct sl_remote_stats rs;
    sl_store_get_remote_stats(st, &rs);
    cr_assert_eq(rs.retries, 2, "%" PRIu64 " retries", rs.retries);
    struct sl_buf b = SL_BUF_INIT;
    struct sl_byte_range r = sl_byte_range_suffix(3);
    uint64_t total = 0;
    cr_assert_eq(sl_store_get(st, "obj", &r, &b, &total, &err), SL_OK, "%s", err.text);
    cr_assert_eq(b.size, 3);
    cr_assert_eq(memcmp(b.data, "llo", 3), 0);
    cr_assert_eq(total, 5);
    cr_assert_eq(sl_store_get(st, "absent", NULL, &b, NULL, &err), SL_ENOTFOUND);
    cr_assert_eq(sl_store_delete(st, "absent", &err), SL_OK, "%s", err.text);
    sl_store_unref(st);
    char url[300];
    snprintf(url, sizeof(url), "s3://no-such-bucket-here/p");
    struct sl_s3_store_opts so = SL_S3_STORE_OPTS_DEFAULT;
    so.endpoint = s.url;
    st = sl_store_open_s3(url, NULL, &so, &err);
    cr_assert_not_null(st, "%s", err.text);
    err = SL_ERROR_INIT;
    sl_status rc = sl_store_get(st, "zarr.json", NULL, &b, NULL, &err);
    sl_buf_fini(&b);
    sl_store_unref(st);
    teardown(dir, &s);
    cr_assert_eq(rc, SL_EHTTP, "an absent bucket is an error: %s", err.text);
    cr_assert_not_null(strstr(err.text, "no such bucket"), "%s", err.text);
}

/* A store with parts of 5 MiB from 6 MiB on. */
static sl_store *
open_s3_multipart(const struct sl_test_http_server *s, struct sl_error *err)
{
    char url[512];
    snprintf(url, sizeof(url), "s3://%s/big", s->bucket);
    struct sl_http_store_opts ho = SL_HTTP_STORE_OPTS_DEFAULT;
    ho.backoff_first_s = 0.01;
    ho.backoff_cap_s = 0.02;
    ho.max_attempts = 2;
    struct sl_s3_store_opts so = SL_S3_STORE_OPTS_DEFAULT;
    so.endpoint = s->url;
    so.multipart_bytes = (uint64_t)6 << 20;
    so.part_bytes = (uint64_t)5 << 20;
    return sl_store_open_s3(url, &ho, &so, err);
}

Test(io_s3_store, large_objects_go_up_in_parts_and_a_failed_part_leaves_nothing)
{
    S3_SETUP("[{\"method\": \"PUT\", \"path\": \"*/big/fails\", \"query\": \"partNumber=2&*\", "
             "\"status\": 500}]");
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = open_s3_multipart(&s, &err);
    cr_assert_not_null(st, "%s", err.text);
    size_t n = ((size_t)12 << 20) + 12345; /* three parts: 5, 5 and 2 MiB */
    uint8_t *data = malloc(n);
    cr_assert_not_null(data);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    struct sl_remote_stats before, after;
    sl_store_get_remote_stats(st, &before);
    cr_assert_eq(sl_store_set(st, "ok", data, n, &err), SL_OK, "%s", err.text);
    sl_store_get_remote_stats(st, &after);
    /* Read, then written again in parts by the same store: no false conflict. */
    struct sl_buf again = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(st, "ok", NULL, &again, NULL, &err), SL_OK, "%s", err.text);
    sl_buf_fini(&again);
    cr_assert_eq(sl_store_set(st, "ok", data, n, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_store_set(st, "ok", data, n, &err), SL_OK, "%s", err.text);
    struct sl_buf b = SL_BUF_INIT;
    uint64_t total = 0;
    cr_assert_eq(sl_store_get(st, "ok", NULL, &b, &total, &err), SL_OK, "%s", err.text);
    cr_assert_eq(b.size, n);
    cr_assert_eq(memcmp(b.data, data, n), 0, "the object reads back unlike what was written");
    /* the first write's probe of conditional writes (two PUTs and a
     * DELETE), the listing of the versions stored (one page), initiate,
     * 3 parts, complete */
    cr_assert_eq(after.requests - before.requests, 9, "%" PRIu64 " requests",
                 after.requests - before.requests);
    err = SL_ERROR_INIT;
    sl_status rc = sl_store_set(st, "fails", data, n, &err);
    struct sl_error err2 = SL_ERROR_INIT;
    sl_status rc2 = sl_store_get(st, "fails", NULL, &b, NULL, &err2);
    sl_buf_fini(&b);
    free(data);
    sl_store_unref(st);
    teardown(dir, &s);
    cr_assert_eq(rc, SL_EHTTP, "%s", err.text);
    cr_assert_not_null(strstr(err.text, "part 2 of 3"), "%s", err.text);
    cr_assert_eq(rc2, SL_ENOTFOUND, "no partial object remains: %s", err2.text);
}

/* A store on prefix "race" with conditional writes as `c`. */
static sl_store *
open_s3_cond(const struct sl_test_http_server *s, sl_s3_conditional c)
{
    char url[512];
    snprintf(url, sizeof(url), "s3://%s/race", s->bucket);
    struct sl_s3_store_opts so = SL_S3_STORE_OPTS_DEFAULT;
    so.endpoint = s->url;
    so.conditional = c;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = sl_store_open_s3(url, NULL, &so, &err);
    cr_assert_not_null(st, "%s", err.text);
    return st;
}

/* Read `key` through `st` (what a shard's rewrite does first). */
static sl_status
read_key(sl_store *st, const char *key)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    sl_status rc = sl_store_get(st, key, NULL, &b, NULL, &err);
    sl_buf_fini(&b);
    return rc;
}

Test(io_s3_store, two_writers_of_one_key_conflict_instead_of_losing_an_update)
{
    S3_SETUP(NULL);
    struct sl_error err = SL_ERROR_INIT, err2 = SL_ERROR_INIT;
    sl_store *a = open_s3_cond(&s, SL_S3_CONDITIONAL_AUTO);
    sl_store *b = open_s3_cond(&s, SL_S3_CONDITIONAL_AUTO);
    /* Both find the key absent; the first creates it, the second conflicts. */
    cr_assert_eq(read_key(a, "shard"), SL_ENOTFOUND);
    cr_assert_eq(read_key(b, "shard"), SL_ENOTFOUND);
    cr_assert_eq(sl_store_set(a, "shard", "one", 3, &err), SL_OK, "%s", err.text);
    sl_status create2 = sl_store_set(b, "shard", "two", 3, &err2);
    /* Both read version one; B replaces it, then A's replace conflicts. */
    cr_assert_eq(read_key(a, "shard"), SL_OK);
    cr_assert_eq(read_key(b, "shard"), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(b, "shard", "three", 5, &err), SL_OK, "%s", err.text);
    struct sl_error err3 = SL_ERROR_INIT;
    sl_status replace2 = sl_store_set(a, "shard", "four", 4, &err3);
    /* A store's own writes move its version on: A can write after reading. */
    cr_assert_eq(read_key(a, "shard"), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(a, "shard", "five", 4, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_store_set(a, "shard", "six", 3, &err), SL_OK, "%s", err.text);
    /* Never conditional: the last writer wins silently. */
    sl_store *c = open_s3_cond(&s, SL_S3_CONDITIONAL_NEVER);
    cr_assert_eq(read_key(c, "shard"), SL_OK);
    cr_assert_eq(sl_store_set(a, "shard", "seven", 5, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_store_set(c, "shard", "eight", 5, &err), SL_OK, "%s", err.text);
    struct sl_buf got = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(a, "shard", NULL, &got, NULL, &err), SL_OK, "%s", err.text);
    bool eight = got.size == 5 && memcmp(got.data, "eight", 5) == 0;
    sl_buf_fini(&got);
    /* No probe key is left behind. */
    struct keys k = {calloc(16, sizeof(*k.key)), 0, 16};
    cr_assert_eq(sl_store_list(a, "", collect, &k, &err), SL_OK, "%s", err.text);
    size_t n_keys = k.n;
    free(k.key);
    sl_store_unref(a);
    sl_store_unref(b);
    sl_store_unref(c);
    teardown(dir, &s);
    cr_assert_eq(create2, SL_ECONFLICT, "a second create: %s", err2.text);
    cr_assert_not_null(strstr(err2.text, "another writer"), "%s", err2.text);
    cr_assert_eq(replace2, SL_ECONFLICT, "a replace of a version replaced since: %s", err3.text);
    cr_assert(eight, "without conditions the last write wins");
    cr_assert_eq(n_keys, 1, "%zu keys: a probe key was left", n_keys);
}

Test(io_s3_store, bad_urls_and_options_are_refused_before_any_request)
{
    struct sl_error err = SL_ERROR_INIT;
    aws_env("S3RVER");
    cr_assert_null(sl_store_open_s3("http://x/y", NULL, NULL, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    err = SL_ERROR_INIT;
    cr_assert_null(sl_store_open_s3("s3://Bad_Bucket/x", NULL, NULL, &err));
    cr_assert_eq(err.code, SL_EINVAL, "%s", err.text);
    cr_assert_not_null(strstr(err.text, "Bad_Bucket"), "%s", err.text);
    struct sl_s3_store_opts small = SL_S3_STORE_OPTS_DEFAULT;
    small.part_bytes = 1 << 20;
    err = SL_ERROR_INIT;
    cr_assert_null(sl_store_open_s3("s3://bucket/x", NULL, &small, &err));
    cr_assert_not_null(strstr(err.text, "5 MiB"), "%s", err.text);
    err = SL_ERROR_INIT;
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    cr_assert_null(sl_store_open_s3("s3://bucket/x", NULL, NULL, &err));
    cr_assert_eq(err.code, SL_ENOTFOUND, "no credentials: %s", err.text);
    struct sl_s3_store_opts so = SL_S3_STORE_OPTS_DEFAULT;
    so.anonymous = true;
    so.read_only = true;
    err = SL_ERROR_INIT;
    sl_store *st = sl_store_open_s3("s3://bucket/x", NULL, &so, &err);
    cr_assert_not_null(st, "anonymous needs no credentials: %s", err.text);
    cr_assert_eq(sl_store_set(st, "k", "v", 1, &err), SL_EACCES);
    sl_store_unref(st);
    struct sl_url_store_opts uo = SL_URL_STORE_OPTS_DEFAULT;
    uo.s3.anonymous = true;
    st = sl_store_open_url("s3://bucket/x", &uo, &err);
    cr_assert_not_null(st, "%s", err.text);
    cr_assert_eq(strcmp(sl_store_kind(st), "s3"), 0);
    sl_store_unref(st);
    aws_env("S3RVER");
}

Test(io_s3_store, a_multipart_write_keeps_the_version_so_a_later_replace_is_conditional)
{
    S3_SETUP(NULL);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *a = open_s3_multipart(&s, &err);
    cr_assert_not_null(a, "%s", err.text);
    sl_store *b = open_s3_multipart(&s, &err);
    cr_assert_not_null(b, "%s", err.text);
    size_t n = ((size_t)6 << 20) + 7; /* two parts */
    uint8_t *data = malloc(n);
    cr_assert_not_null(data);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 40503u >> 7);
    cr_assert_eq(sl_store_set(a, "v", data, n, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_store_conditional_writes(a), SL_STORE_CONDITIONAL_HONOURED);
    /* A's next writes replace the version its multipart write made (If-Match
     * with the ETag CompleteMultipartUpload gave, entity-decoded). */
    cr_assert_eq(sl_store_set(a, "v", data, n, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_store_set(a, "v", "small", 5, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_store_set(a, "v", data, n, &err), SL_OK, "%s", err.text);
    /* B, which never read it, replaces it unconditionally; A's replace of
     * the version it wrote then conflicts instead of losing B's update. */
    cr_assert_eq(sl_store_set(b, "v", "from b", 6, &err), SL_OK, "%s", err.text);
    struct sl_error err2 = SL_ERROR_INIT, err3 = SL_ERROR_INIT;
    sl_status small = sl_store_set(a, "v", "lost?", 5, &err2);
    /* The same for a multipart replace: B writes again, A's parts go up
     * but completing them conflicts. */
    cr_assert_eq(read_key(a, "v"), SL_OK);
    cr_assert_eq(sl_store_set(b, "v", "b again", 7, &err), SL_OK, "%s", err.text);
    sl_status big = sl_store_set(a, "v", data, n, &err3);
    struct sl_buf got = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(b, "v", NULL, &got, NULL, &err), SL_OK, "%s", err.text);
    bool kept = got.size == 7 && memcmp(got.data, "b again", 7) == 0;
    sl_buf_fini(&got);
    free(data);
    sl_store_unref(a);
    sl_store_unref(b);
    teardown(dir, &s);
    cr_assert_eq(small, SL_ECONFLICT, "%s", err2.text);
    cr_assert_not_null(strstr(err2.text, "another writer"), "%s", err2.text);
    cr_assert_eq(big, SL_ECONFLICT, "%s", err3.text);
    cr_assert_not_null(strstr(err3.text, "another writer"), "%s", err3.text);
    cr_assert(kept, "B's update was lost");
}

/* The proxy's log (its JSON text, NUL-terminated) into `log`. */
static void
proxy_log(const struct sl_test_http_server *s, struct sl_buf *log)
{
    char url[300];
    snprintf(url, sizeof(url), "%s__proxy", s->url);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *p = sl_store_open_url(url, NULL, &err);
    cr_assert_not_null(p, "%s", err.text);
    cr_assert_eq(sl_store_get(p, "log", NULL, log, NULL, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_buf_append(log, "", 1, &err), SL_OK);
    sl_store_unref(p);
}

/* How many requests of `method` with query `query` the proxy logged. */
static size_t
proxy_count(const struct sl_test_http_server *s, const char *method, const char *query)
{
    char want[128];
    struct sl_buf log = SL_BUF_INIT;
    proxy_log(s, &log);
    snprintf(want, sizeof(want), "\"method\": \"%s\", \"path\": ", method);
    size_t n = 0;
    char q[128];
    snprintf(q, sizeof(q), "\"query\": \"%s\"", query);
    for (const char *e = strstr((const char *)log.data, want); e != NULL; e = strstr(e + 1, want)) {
        const char *end = strchr(e, '}');
        const char *hit = strstr(e, q);
        n += hit != NULL && end != NULL && hit < end;
    }
    sl_buf_fini(&log);
    return n;
}

/* Write `n` small keys "tree/NNNN" through `st`. */
static void
write_keys(sl_store *st, const char *tree, int n)
{
    struct sl_error err = SL_ERROR_INIT;
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof(key), "%s/%04d", tree, i);
        cr_assert_eq(sl_store_set(st, key, key, strlen(key), &err), SL_OK, "%s", err.text);
    }
}

/* Keys under `prefix` in `st`. */
static size_t
count_keys(sl_store *st, const char *prefix)
{
    struct keys k = {NULL, 0, 0};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_list(st, prefix, collect, &k, &err), SL_OK, "%s", err.text);
    return k.n;
}

Test(io_s3_store, a_tree_is_deleted_1000_keys_per_delete_objects_request)
{
    S3_SETUP(NULL);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = open_s3(&s, "del", &err);
    cr_assert_not_null(st, "%s", err.text);
    enum { N = 1030 };
    write_keys(st, "t", N);
    write_keys(st, "other", 3);
    cr_assert_eq(count_keys(st, "t/"), N);
    size_t posts = proxy_count(&s, "POST", "delete=");
    struct sl_remote_stats before, after;
    sl_store_get_remote_stats(st, &before);
    cr_assert_eq(sl_store_delete_tree(st, "t", &err), SL_OK, "%s", err.text);
    sl_store_get_remote_stats(st, &after);
    size_t deletes = proxy_count(&s, "POST", "delete=") - posts;
    size_t single = proxy_count(&s, "DELETE", "");
    size_t left = count_keys(st, "t/"), others = count_keys(st, "other/");
    sl_store_unref(st);
    teardown(dir, &s);
    cr_assert_eq(deletes, 2, "%zu DeleteObjects requests for %d keys", deletes, N);
    cr_assert_eq(single, 0, "%zu single DELETEs", single);
    /* two listing pages and the two DeleteObjects */
    cr_assert_eq(after.requests - before.requests, 4, "%" PRIu64 " requests",
                 after.requests - before.requests);
    cr_assert_eq(left, 0, "%zu keys left", left);
    cr_assert_eq(others, 3, "%zu keys of another tree left", others);
}

Test(io_s3_store, a_throttled_delete_is_retried_and_a_failing_one_names_its_tree)
{
    /* The first DeleteObjects: SlowDown, then its retry goes through; the
     * next: 200 with a per-key <Error>; then 500 forever. */
    S3_SETUP("[{\"method\": \"POST\", \"query\": \"delete=\", \"s3_error\": \"SlowDown\", "
             "\"count\": 1},"
             " {\"method\": \"POST\", \"query\": \"delete=\", \"delay_ms\": 0, \"count\": 1},"
             " {\"method\": \"POST\", \"query\": \"delete=\", \"status\": 200, \"count\": 1, "
             "\"body\": \"<DeleteResult><Deleted><Key>fault/b/0000</Key></Deleted><Error>"
             "<Key>fault/b/0001</Key><Code>AccessDenied</Code><Message>Access "
             "Denied</Message></Error></DeleteResult>\"},"
             " {\"method\": \"POST\", \"query\": \"delete=\", \"s3_error\": \"InternalError\"}]");
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = open_s3(&s, "fault", &err);
    cr_assert_not_null(st, "%s", err.text);
    write_keys(st, "a", 5);
    write_keys(st, "b", 2);
    write_keys(st, "c", 2);
    struct sl_remote_stats before, after;
    sl_store_get_remote_stats(st, &before);
    cr_assert_eq(sl_store_delete_tree(st, "a", &err), SL_OK, "%s", err.text);
    sl_store_get_remote_stats(st, &after);
    size_t left_a = count_keys(st, "a/");
    struct sl_error eb = SL_ERROR_INIT, ec = SL_ERROR_INIT;
    sl_status rb = sl_store_delete_tree(st, "b", &eb);
    sl_status rc = sl_store_delete_tree(st, "c", &ec);
    size_t left_c = count_keys(st, "c/");
    sl_store_unref(st);
    teardown(dir, &s);
    cr_assert_eq(after.retries - before.retries, 1, "%" PRIu64 " retries",
                 after.retries - before.retries);
    cr_assert_eq(left_a, 0, "%zu keys left after the retried delete", left_a);
    cr_assert_eq(rb, SL_EHTTP, "%s", eb.text);
    cr_assert_not_null(strstr(eb.text, "\"b\""), "%s", eb.text);
    cr_assert_not_null(strstr(eb.text, "refused 1 of them"), "%s", eb.text);
    cr_assert_not_null(strstr(eb.text, "\"fault/b/0001\" (S3 AccessDenied: Access Denied)"), "%s",
                       eb.text);
    cr_assert_eq(rc, SL_EHTTP, "%s", ec.text);
    cr_assert_not_null(strstr(ec.text, "cannot delete 2 keys under \"c\""), "%s", ec.text);
    cr_assert_not_null(strstr(ec.text, "InternalError"), "%s", ec.text);
    cr_assert_eq(left_c, 2, "%zu keys of the failed tree left", left_c);
}

Test(io_s3_store, conditional_writes_are_reported)
{
    /* The proxy answers the probe's PUTs itself, both 200: a server that
     * ignores If-None-Match. */
    S3_SETUP("[{\"method\": \"PUT\", \"path\": \"*/.sluice-probe-*\", \"status\": 200},"
             " {\"method\": \"GET\", \"query\": \"*prefix=c%2Fbroken*\", \"status\": 200, "
             "\"body\": \"<ListBucketResult><Contents></ListBucketResult>\"}]");
    cr_assert_eq(sl_store_conditional_writes(NULL), SL_STORE_CONDITIONAL_NOT_APPLICABLE);
    sl_store *mem = sl_store_create_memory(NULL, NULL);
    cr_assert_not_null(mem);
    cr_assert_eq(sl_store_conditional_writes(mem), SL_STORE_CONDITIONAL_NOT_APPLICABLE);
    sl_store_unref(mem);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *a = open_s3(&s, "c", &err);
    cr_assert_not_null(a, "%s", err.text);
    cr_assert_eq(sl_store_conditional_writes(a), SL_STORE_CONDITIONAL_NOT_KNOWN);
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(a, "k", NULL, &b, NULL, &err), SL_ENOTFOUND);
    cr_assert_eq(sl_store_conditional_writes(a), SL_STORE_CONDITIONAL_NOT_KNOWN, "a read probes");
    cr_assert_eq(sl_store_set(a, "k", "v", 1, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_store_conditional_writes(a), SL_STORE_CONDITIONAL_IGNORED);
    /* (A listing page S3 garbled is an error naming the page.) */
    struct keys k = {NULL, 0, 0};
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_list(a, "broken", collect, &k, &err), SL_EPARSE);
    cr_assert_not_null(strstr(err.text, "listing page 1 of "), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "</ListBucketResult> closes <Contents>"), "%s", err.text);
    sl_store *never = open_s3_cond(&s, SL_S3_CONDITIONAL_NEVER);
    sl_store *always = open_s3_cond(&s, SL_S3_CONDITIONAL_ALWAYS);
    cr_assert_eq(sl_store_conditional_writes(never), SL_STORE_CONDITIONAL_OFF);
    cr_assert_eq(sl_store_conditional_writes(always), SL_STORE_CONDITIONAL_HONOURED);
    char url[512];
    snprintf(url, sizeof(url), "s3://%s/c", s.bucket);
    struct sl_s3_store_opts so = SL_S3_STORE_OPTS_DEFAULT;
    so.endpoint = s.url;
    so.read_only = true;
    sl_store *ro = sl_store_open_s3(url, NULL, &so, &err);
    cr_assert_not_null(ro, "%s", err.text);
    cr_assert_eq(sl_store_conditional_writes(ro), SL_STORE_CONDITIONAL_NOT_APPLICABLE);
    cr_assert_eq(sl_store_get(ro, "k", NULL, &b, NULL, &err), SL_OK, "%s", err.text);
    sl_buf_fini(&b);
    sl_store_unref(ro);
    sl_store_unref(never);
    sl_store_unref(always);
    sl_store_unref(a);
    teardown(dir, &s);
}

/* How many requests the proxy logged under the rule named `name`. */
static size_t
rule_hits(const struct sl_test_http_server *s, const char *name)
{
    char want[128];
    struct sl_buf log = SL_BUF_INIT;
    proxy_log(s, &log);
    snprintf(want, sizeof(want), "\"rule\": \"%s\"", name);
    size_t n = 0;
    for (const char *e = strstr((const char *)log.data, want); e != NULL; e = strstr(e + 1, want))
        n++;
    sl_buf_fini(&log);
    return n;
}

/* A store on `prefix` with `attempts` tries, parts of 5 MiB from 6 MiB on,
 * and conditional writes as `c`. */
static sl_store *
open_s3_faulty(const struct sl_test_http_server *s, const char *prefix, unsigned attempts,
               sl_s3_conditional c)
{
    char url[512];
    snprintf(url, sizeof(url), "s3://%s/%s", s->bucket, prefix);
    struct sl_http_store_opts ho = SL_HTTP_STORE_OPTS_DEFAULT;
    ho.backoff_first_s = 0.01;
    ho.backoff_cap_s = 0.02;
    ho.max_attempts = attempts;
    struct sl_s3_store_opts so = SL_S3_STORE_OPTS_DEFAULT;
    so.endpoint = s->url;
    so.multipart_bytes = (uint64_t)6 << 20;
    so.part_bytes = (uint64_t)5 << 20;
    so.conditional = c;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *st = sl_store_open_s3(url, &ho, &so, &err);
    cr_assert_not_null(st, "%s", err.text);
    return st;
}

/* `n` bytes of a pattern of its own for `seed`. */
static uint8_t *
pattern(size_t n, unsigned seed)
{
    uint8_t *d = malloc(n);
    cr_assert_not_null(d);
    for (size_t i = 0; i < n; i++)
        d[i] = (uint8_t)((i + seed) * 2654435761u >> 11);
    return d;
}

/* Whether `key` of `st` reads back as the `n` bytes of `data`. */
static bool
reads_back(sl_store *st, const char *key, const uint8_t *data, size_t n)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    sl_status rc = sl_store_get(st, key, NULL, &b, NULL, &err);
    bool same = rc == SL_OK && b.size == n && memcmp(b.data, data, n) == 0;
    sl_buf_fini(&b);
    return same;
}

/* A proxy rule named `name` for `method` on `path` and `query` (globs),
 * applied `count` times (-1: always), doing `what`. */
#define RULE(name, count, method, path, query, what)                        \
    "{\"name\": \"" name "\", \"count\": " #count ", \"method\": \"" method \
    "\", \"path\": \"" path "\", \"query\": \"" query "\", " what "}"
#define RULE1(name, method, path, query, what) RULE(name, 1, method, path, query, what)

Test(io_s3_store, a_fault_once_on_a_put_a_part_a_completion_or_a_list_page_is_retried_whole)
{
    /* Each fault once: a PUT reset while its body arrives (nothing written),
     * reset before its answer or its answer cut (written: the retry's
     * If-None-Match fails, and the store finds its own bytes there), SlowDown;
     * the same on the parts of a multipart upload and the completion's answer
     * lost; the first write's listing of the versions stored reset, cut and
     * throttled. */
    S3_SETUP(
        "[" RULE1("req", "PUT", "*/wf/k/req", "*", "\"fault\": \"reset_mid_request\"") "," RULE1(
            "lost", "PUT", "*/wf/k/lost",
            "*", "\"fault\": \"reset_before_answer\"") "," RULE1("head", "PUT", "*/wf/k/head",
                                                                 "*", "\"fault\": \"truncate_body\"") "," RULE1("slow",
                                                                                                                "PUT", "*/wf/k/slow", "*", "\"s3_error\": \"SlowDown\"") "," RULE1("page reset",
                                                                                                                                                                                   "GET", "/*", "list-type=2&prefix=wf%2Fk%2F*", "\"fault\": \"reset_mid_body\", \"after_bytes\": 40") "," RULE1("page cut", "GET", "/*", "list-type=2&prefix=wf%2Fk%2F*", "\"fault\": \"truncate_body\"") "," RULE1("page slow",
                                                                                                                                                                                                                                                                                                                                                                                                     "GET", "/*", "list-type=2&prefix=wf%2Fk%2F*", "\"s3_error\": \"SlowDown\"") "," RULE1("part1 req", "PUT", "*/wf/big", "partNumber=1&*", "\"fault\": \"reset_mid_request\"") "," RULE1("part1 slow",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                           "PUT",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                           "*/wf/big",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                           "partNumber=1&*",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                           "\"s3_error\": \"SlowDown\"") "," RULE1("part2 lost", "PUT", "*/wf/big", "partNumber=2&*", "\"fault\": \"reset_before_answer\"") "," RULE1("part3 head",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                      "PUT",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                      "*/wf/big", "partNumber=3&*", "\"fault\": \"truncate_body\"") "," RULE1("complete lost",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              "POST", "*/wf/big", "uploadId=*",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                              "\"fault\": \"reset_before_answer\"") "]");
    sl_store *st = open_s3_faulty(&s, "wf", 4, SL_S3_CONDITIONAL_AUTO);
    static const char *const keys[] = {"k/req", "k/lost", "k/head", "k/slow"};
    enum { N = 3000 };
    uint8_t *small[4], *big;
    size_t big_n = ((size_t)12 << 20) + 12345; /* three parts */
    sl_status rc[5];
    char text[5][512];
    struct sl_remote_stats before, after;
    sl_store_get_remote_stats(st, &before);
    for (int i = 0; i < 4; i++) {
        small[i] = pattern(N, (unsigned)i);
        struct sl_error err = SL_ERROR_INIT;
        rc[i] = sl_store_set(st, keys[i], small[i], N, &err);
        snprintf(text[i], sizeof(text[i]), "%s", err.text);
    }
    big = pattern(big_n, 99);
    struct sl_error err = SL_ERROR_INIT;
    rc[4] = sl_store_set(st, "big", big, big_n, &err);
    snprintf(text[4], sizeof(text[4]), "%s", err.text);
    sl_store_get_remote_stats(st, &after);
    bool back[5];
    for (int i = 0; i < 4; i++)
        back[i] = reads_back(st, keys[i], small[i], N);
    back[4] = reads_back(st, "big", big, big_n);
    static const char *const rules[] = {"req",        "lost",       "head",       "slow",
                                        "page reset", "page cut",   "page slow",  "part1 req",
                                        "part1 slow", "part2 lost", "part3 head", "complete lost"};
    size_t hits[12];
    for (int i = 0; i < 12; i++)
        hits[i] = rule_hits(&s, rules[i]);
    for (int i = 0; i < 4; i++)
        free(small[i]);
    free(big);
    sl_store_unref(st);
    teardown(dir, &s);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(rc[i], SL_OK, "write %d: %s", i, text[i]);
        cr_assert(back[i], "write %d does not read back equal", i);
    }
    for (int i = 0; i < 12; i++)
        cr_assert_eq(hits[i], 1, "rule \"%s\" applied %zu times", rules[i], hits[i]);
    /* Each fault cost a try; libcurl sends some again itself (a kept-alive
     * connection that died before any answer), which the store does not count. */
    cr_assert_gt(after.retries - before.retries, 0, "no retries counted");
}

/* The status and message of writing `n` bytes of `data` to `key`. */
static sl_status
set_msg(sl_store *st, const char *key, const uint8_t *data, size_t n, char *text, size_t size)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_status rc = sl_store_set(st, key, data, n, &err);
    snprintf(text, size, "%s", err.text);
    return rc;
}

Test(io_s3_store, a_fault_on_every_try_fails_only_its_write_naming_the_url_and_leaves_no_part)
{
    S3_SETUP("[" RULE("req", -1, "PUT", "*/wf/k/req", "*", "\"fault\": \"reset_mid_request\"") "," RULE("slow", -1, "PUT", "*/wf/k/slow", "*", "\"s3_error\": \"SlowDown\"") "," RULE(
        "lost", -1, "PUT", "*/wf/k/lost", "*",
        "\"fault\": \"reset_before_answer\"") "," RULE("nlost", -1, "PUT", "*/wn/k/lost", "*",
                                                       "\"fault\": "
                                                       "\"reset_before_"
                                                       "answer\"") "," RULE("pa"
                                                                            "r"
                                                                            "t",
                                                                            -1,
                                                                            "PU"
                                                                            "T",
                                                                            "*/"
                                                                            "wf"
                                                                            "/b"
                                                                            "i"
                                                                            "g",
                                                                            "pa"
                                                                            "rt"
                                                                            "Nu"
                                                                            "mb"
                                                                            "er"
                                                                            "=2"
                                                                            "&"
                                                                            "*",
                                                                            "\""
                                                                            "fa"
                                                                            "ul"
                                                                            "t"
                                                                            "\""
                                                                            ": "
                                                                            "\""
                                                                            "re"
                                                                            "se"
                                                                            "t_"
                                                                            "mi"
                                                                            "d_"
                                                                            "re"
                                                                            "qu"
                                                                            "es"
                                                                            "t"
                                                                            "\"") "," RULE("complet"
                                                                                           "e",
                                                                                           -1,
                                                                                           "POST",
                                                                                           "*/wf/"
                                                                                           "big2",
                                                                                           "uploadI"
                                                                                           "d=*",
                                                                                           "\"fault"
                                                                                           "\": "
                                                                                           "\"reset"
                                                                                           "_mid_"
                                                                                           "request"
                                                                                           "\"") "," RULE("abort",
                                                                                                          -1,
                                                                                                          "DELETE",
                                                                                                          "*/wf/big*",
                                                                                                          "uploadId=*",
                                                                                                          "\"delay_ms\": 0") "," RULE("page",
                                                                                                                                      -1,
                                                                                                                                      "GET",
                                                                                                                                      "/*",
                                                                                                                                      "list-type=2&prefix=wf%2Fnolist%2F*",
                                                                                                                                      "\"fault\": \"reset_mid_body\", \"after_bytes\": 40") "]");
    sl_store *st = open_s3_faulty(&s, "wf", 3, SL_S3_CONDITIONAL_AUTO);
    sl_store *never = open_s3_faulty(&s, "wn", 3, SL_S3_CONDITIONAL_NEVER);
    enum { N = 3000 };
    uint8_t *small = pattern(N, 7);
    size_t big_n = ((size_t)12 << 20) + 12345; /* three parts */
    uint8_t *big = pattern(big_n, 8);
    char t_req[512], t_slow[512], t_lost[512], t_nlost[512], t_ok[512], t_big[512], t_big2[512];
    sl_status r_req = set_msg(st, "k/req", small, N, t_req, sizeof(t_req));
    sl_status r_slow = set_msg(st, "k/slow", small, N, t_slow, sizeof(t_slow));
    sl_status r_lost = set_msg(st, "k/lost", small, N, t_lost, sizeof(t_lost));
    sl_status r_nlost = set_msg(never, "k/lost", small, N, t_nlost, sizeof(t_nlost));
    sl_status r_ok = set_msg(st, "k/ok", small, N, t_ok, sizeof(t_ok));
    sl_status r_big = set_msg(st, "big", big, big_n, t_big, sizeof(t_big));
    sl_status r_big2 = set_msg(st, "big2", big, big_n, t_big2, sizeof(t_big2));
    struct keys k = {NULL, 0, 0};
    struct sl_error le = SL_ERROR_INIT;
    sl_status r_list = sl_store_list(st, "nolist/", collect, &k, &le);
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error ge = SL_ERROR_INIT;
    sl_status g_req = sl_store_get(st, "k/req", NULL, &b, NULL, &ge);
    sl_status g_slow = sl_store_get(st, "k/slow", NULL, &b, NULL, &ge);
    sl_status g_big = sl_store_get(st, "big", NULL, &b, NULL, &ge);
    sl_status g_big2 = sl_store_get(st, "big2", NULL, &b, NULL, &ge);
    sl_buf_fini(&b);
    bool lost_back = reads_back(st, "k/lost", small, N);
    bool nlost_back = reads_back(never, "k/lost", small, N);
    bool ok_back = reads_back(st, "k/ok", small, N);
    size_t aborts = rule_hits(&s, "abort");
    free(small);
    free(big);
    sl_store_unref(st);
    sl_store_unref(never);
    teardown(dir, &s);
    /* Reset while its body arrives: nothing written, the URL named. */
    cr_assert_eq(r_req, SL_ENETWORK, "%s", t_req);
    cr_assert_not_null(strstr(t_req, "/sluice-test/wf/k/req: "), "%s", t_req);
    cr_assert_not_null(strstr(t_req, "after 3 attempts"), "%s", t_req);
    cr_assert_eq(g_req, SL_ENOTFOUND);
    cr_assert_eq(r_slow, SL_EHTTP, "%s", t_slow);
    cr_assert_not_null(strstr(t_slow, "/sluice-test/wf/k/slow: HTTP 503 after 3 attempts: S3 "
                                      "SlowDown: Please reduce your request rate."),
                       "%s", t_slow);
    cr_assert_eq(g_slow, SL_ENOTFOUND);
    /* Every answer lost (the retries' too), though the first try wrote it:
     * reported failed, conditional or not, and what is stored is its own. */
    cr_assert_eq(r_lost, SL_ENETWORK, "%s", t_lost);
    cr_assert_not_null(strstr(t_lost, "/sluice-test/wf/k/lost: "), "%s", t_lost);
    cr_assert(lost_back);
    cr_assert_eq(r_nlost, SL_ENETWORK, "%s", t_nlost);
    cr_assert_not_null(strstr(t_nlost, "/sluice-test/wn/k/lost: "), "%s", t_nlost);
    cr_assert(nlost_back);
    cr_assert_eq(r_ok, SL_OK, "%s", t_ok);
    cr_assert(ok_back);
    /* A part, or the completion, failing: aborted, nothing stored. */
    cr_assert_eq(r_big, SL_ENETWORK, "%s", t_big);
    cr_assert_not_null(strstr(t_big, "cannot upload part 2 of 3"), "%s", t_big);
    cr_assert_not_null(strstr(t_big, "/sluice-test/wf/big?partNumber=2&uploadId="), "%s", t_big);
    cr_assert_eq(g_big, SL_ENOTFOUND, "a partial object remains");
    cr_assert_eq(r_big2, SL_ENETWORK, "%s", t_big2);
    cr_assert_not_null(strstr(t_big2, "cannot complete the upload"), "%s", t_big2);
    cr_assert_not_null(strstr(t_big2, "/sluice-test/wf/big2?uploadId="), "%s", t_big2);
    cr_assert_eq(g_big2, SL_ENOTFOUND, "a partial object remains");
    cr_assert_eq(aborts, 2, "%zu AbortMultipartUpload requests for 2 failed uploads", aborts);
    /* A list page reset on every try. */
    cr_assert_eq(r_list, SL_ENETWORK, "%s", le.text);
    cr_assert_not_null(strstr(le.text, "cannot list: "), "%s", le.text);
    cr_assert_not_null(strstr(le.text, "/sluice-test?list-type=2&prefix=wf%2Fnolist%2F"), "%s",
                       le.text);
}

Test(io_s3_store, a_listing_denied_leaves_writes_of_keys_never_read_unconditional)
{
    /* Credentials that may write but not list: the listing of the versions
     * stored is refused, and writes go on, unconditional (the last wins);
     * another listing failure fails the write, naming the prefix. */
    S3_SETUP(
        "[" RULE("denied", -1, "GET", "/*", "list-type=2&prefix=den%2F*",
                 "\"s3_error\": \"AccessDenied\"") "," RULE("broken", -1, "GET", "/*",
                                                            "list-type=2&prefix=brk%2Fc%2F*",
                                                            "\"s3_error\": \"InternalError\"") "]");
    sl_store *a = open_s3_faulty(&s, "den", 2, SL_S3_CONDITIONAL_AUTO);
    sl_store *b = open_s3_faulty(&s, "den", 2, SL_S3_CONDITIONAL_AUTO);
    sl_store *c = open_s3_faulty(&s, "brk", 2, SL_S3_CONDITIONAL_AUTO);
    struct sl_error ea = SL_ERROR_INIT, eb = SL_ERROR_INIT, ec = SL_ERROR_INIT;
    sl_status ra = sl_store_set(a, "c/0/0", "from a", 6, &ea);
    sl_status rb = sl_store_set(b, "c/0/0", "from b", 6, &eb);
    sl_status rc = sl_store_set(c, "c/0/0", "from c", 6, &ec);
    bool last = reads_back(a, "c/0/0", (const uint8_t *)"from b", 6);
    struct sl_buf got = SL_BUF_INIT;
    struct sl_error ge = SL_ERROR_INIT;
    sl_status gc = sl_store_get(c, "c/0/0", NULL, &got, NULL, &ge);
    sl_buf_fini(&got);
    size_t denied = rule_hits(&s, "denied");
    sl_store_unref(a);
    sl_store_unref(b);
    sl_store_unref(c);
    teardown(dir, &s);
    cr_assert_eq(ra, SL_OK, "%s", ea.text);
    cr_assert_eq(rb, SL_OK, "%s", eb.text);
    cr_assert(last, "the last write did not win");
    cr_assert_eq(denied, 2, "%zu listings refused: one per store", denied);
    cr_assert_eq(rc, SL_EHTTP, "%s", ec.text);
    cr_assert_not_null(strstr(ec.text, "cannot write \"c/0/0\": listing \"c/\" for the versions "
                                       "of its keys failed: cannot list: "),
                       "%s", ec.text);
    cr_assert_not_null(strstr(ec.text, "InternalError"), "%s", ec.text);
    cr_assert_eq(gc, SL_ENOTFOUND, "a write whose listing failed was sent");
}

Test(io_s3_store, keys_never_read_are_written_on_the_version_listed_before_and_reads_still_count)
{
    /* Whole shards are written without reading them: A's first write there
     * lists "c/" and writes each key on what the listing found, so B's
     * concurrent replace of a shard A never read conflicts, and so does A's
     * create of a shard B created since; a version A read is kept over a
     * later listing's. */
    S3_SETUP(NULL);
    sl_store *a = open_s3_faulty(&s, "ver", 2, SL_S3_CONDITIONAL_AUTO);
    sl_store *b = open_s3_faulty(&s, "ver", 2, SL_S3_CONDITIONAL_AUTO);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(b, "c/0/0", "b1", 2, &err), SL_OK, "%s", err.text);
    cr_assert_eq(read_key(a, "c/0/0"), SL_OK);                                    /* A read b1 */
    cr_assert_eq(sl_store_set(b, "c/0/0", "b2", 2, &err), SL_OK, "%s", err.text); /* B: b2 */
    cr_assert_eq(sl_store_set(b, "c/0/1", "b3", 2, &err), SL_OK, "%s", err.text);
    /* A's first write of a key it never read lists c/ (c/0/0 at b2, c/0/1). */
    cr_assert_eq(sl_store_set(a, "c/1/1", "a1", 2, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_store_set(b, "c/0/1", "b4", 2, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_store_set(b, "c/1/0", "b5", 2, &err), SL_OK, "%s", err.text);
    struct sl_error e_read = SL_ERROR_INIT, e_listed = SL_ERROR_INIT, e_new = SL_ERROR_INIT;
    sl_status r_read = sl_store_set(a, "c/0/0", "a2", 2, &e_read);     /* on b1: conflict */
    sl_status r_listed = sl_store_set(a, "c/0/1", "a3", 2, &e_listed); /* on b3: conflict */
    sl_status r_new = sl_store_set(a, "c/1/0", "a4", 2, &e_new);       /* on absent: conflict */
    bool kept = reads_back(a, "c/0/0", (const uint8_t *)"b2", 2) &&
                reads_back(a, "c/0/1", (const uint8_t *)"b4", 2) &&
                reads_back(a, "c/1/0", (const uint8_t *)"b5", 2);
    sl_store_unref(a);
    sl_store_unref(b);
    teardown(dir, &s);
    cr_assert_eq(r_read, SL_ECONFLICT, "a version read, replaced since: %s", e_read.text);
    cr_assert_eq(r_listed, SL_ECONFLICT, "a version listed, replaced since: %s", e_listed.text);
    cr_assert_eq(r_new, SL_ECONFLICT, "a key listed absent, created since: %s", e_new.text);
    cr_assert_not_null(strstr(e_listed.text, "another writer"), "%s", e_listed.text);
    cr_assert(kept, "B's updates were lost");
}
