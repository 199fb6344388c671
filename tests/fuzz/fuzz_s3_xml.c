/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the XML of S3 (io/store/s3_xml.c, s3_xml_write.c).  The
 * first byte picks what the rest is:
 *
 *   0      an error body: read, or refused with SL_EPARSE and a message;
 *          what is read is NUL-terminated inside its fields; the same
 *          bytes as InitiateMultipartUpload's answer (an UploadId of 1 to
 *          63 bytes, "" when refused) and CompleteMultipartUpload's (an
 *          ETag without control characters; an <Error> root is a failure
 *          without an ETag);
 *   1, 2   a ListObjectsV2 page (2: keys URL-encoded): every entry handed
 *          to the callback has a key of 1 to 1024 bytes without NUL, a
 *          size below 2^63 and (a prefix) no size or ETag; the page's
 *          counts are the callbacks made; a truncated page has a token;
 *   3      a DeleteObjects result: keys of 1 to 1024 bytes, counts match;
 *   4      keys separated by NUL bytes: the DeleteObjects body of them is
 *          written or refused naming a key; written, each key escaped
 *          into a DeleteObjects result and a listing reads back exactly
 *          (keys over 1024 bytes are refused instead).
 *
 * Anything else is refused with a status and a message, never a crash
 * (the replay test and libFuzzer run it under ASan and UBSan).
 */
#include <stdbool.h>

#include <sluice/buf.h>

#include "fuzz.h"
#include "s3_internal.h"

#define FUZZ_KEYS_MAX 64

/* What the callbacks saw, and what mode 4 expects back. */
struct fuzz_seen {
    size_t calls;
    const char *const *want; /* mode 4: the keys in order */
    size_t n_want;
};

static sl_status
fuzz_list_entry(void *ctx, const struct sl__s3_list_entry *e, struct sl_error *err)
{
    (void)err;
    struct fuzz_seen *seen = ctx;
    FUZZ_CHECK(e->key != NULL && strlen(e->key) == e->key_len, "key length %zu", e->key_len);
    FUZZ_CHECK(e->key_len >= 1 && e->key_len <= SL__S3_KEY_MAX, "a key of %zu bytes", e->key_len);
    FUZZ_CHECK(e->size <= (uint64_t)INT64_MAX, "size %llu", (unsigned long long)e->size);
    FUZZ_CHECK(e->etag != NULL && strlen(e->etag) < 256, "etag");
    if (e->is_prefix)
        FUZZ_CHECK(e->size == 0 && e->etag[0] == '\0', "a prefix with a size or an ETag");
    if (seen->want != NULL) {
        FUZZ_CHECK(seen->calls < seen->n_want, "more entries than keys");
        FUZZ_CHECK(strcmp(e->key, seen->want[seen->calls]) == 0,
                   "key %zu read back as \"%s\", written \"%s\"", seen->calls, e->key,
                   seen->want[seen->calls]);
        FUZZ_CHECK(e->size == seen->calls, "size %llu", (unsigned long long)e->size);
    }
    seen->calls++;
    return SL_OK;
}

static sl_status
fuzz_delete_item(void *ctx, const struct sl__s3_delete_item *it, struct sl_error *err)
{
    (void)err;
    struct fuzz_seen *seen = ctx;
    size_t n = strlen(it->key);
    FUZZ_CHECK(n >= 1 && n <= SL__S3_KEY_MAX, "a deleted key of %zu bytes", n);
    FUZZ_CHECK(it->code != NULL && it->message != NULL, "no code or message");
    if (it->deleted)
        FUZZ_CHECK(it->code[0] == '\0' && it->message[0] == '\0', "a deleted key with an error");
    if (seen->want != NULL) {
        FUZZ_CHECK(seen->calls < seen->n_want, "more results than keys");
        FUZZ_CHECK(strcmp(it->key, seen->want[seen->calls]) == 0,
                   "key %zu read back as \"%s\", written \"%s\"", seen->calls, it->key,
                   seen->want[seen->calls]);
    }
    seen->calls++;
    return SL_OK;
}

/* A refusal is SL_EPARSE with a message. */
static void
fuzz_check_parse(sl_status st, const struct sl_error *err, const char *what)
{
    fuzz_check_error(st, err, what);
    FUZZ_CHECK(st == SL_OK || st == SL_EPARSE, "%s: %s", what, sl_status_name(st));
}

static void
fuzz_error_body(const char *body, size_t n)
{
    struct sl__s3_error_body e;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl__s3_error_parse(body, n, &e, &err);
    fuzz_check_parse(st, &err, "sl__s3_error_parse");
    FUZZ_CHECK(memchr(e.code, '\0', sizeof(e.code)) != NULL, "code not terminated");
    FUZZ_CHECK(memchr(e.message, '\0', sizeof(e.message)) != NULL, "message not terminated");
}

static void
fuzz_multipart(const char *body, size_t n)
{
    char id[64];
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl__s3_initiate_parse(body, n, id, sizeof(id), &err);
    fuzz_check_parse(st, &err, "sl__s3_initiate_parse");
    size_t len = strnlen(id, sizeof(id));
    FUZZ_CHECK(len < sizeof(id), "upload id not terminated");
    FUZZ_CHECK(st == SL_OK ? len >= 1 : len == 0, "%s with an upload id of %zu bytes",
               sl_status_name(st), len);
    struct sl__s3_complete_result r;
    err = SL_ERROR_INIT;
    st = sl__s3_complete_parse(body, n, &r, &err);
    fuzz_check_parse(st, &err, "sl__s3_complete_parse");
    len = strnlen(r.etag, sizeof(r.etag));
    FUZZ_CHECK(len < sizeof(r.etag), "etag not terminated");
    for (size_t i = 0; i < len; i++)
        FUZZ_CHECK((unsigned char)r.etag[i] >= 0x20 && r.etag[i] != 0x7f,
                   "a control character in the ETag at byte %zu", i);
    if (st != SL_OK || r.failed)
        FUZZ_CHECK(len == 0, "an ETag of %zu bytes from a failure", len);
    if (st != SL_OK)
        FUZZ_CHECK(!r.failed, "a refused answer marked failed");
    FUZZ_CHECK(memchr(r.error.code, '\0', sizeof(r.error.code)) != NULL, "code not terminated");
    FUZZ_CHECK(memchr(r.error.message, '\0', sizeof(r.error.message)) != NULL,
               "message not terminated");
}

static void
fuzz_list(const char *body, size_t n, bool url_encoded)
{
    struct fuzz_seen seen = {0};
    struct sl__s3_list_page page;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl__s3_list_parse(body, n, url_encoded, fuzz_list_entry, &seen, &page, &err);
    fuzz_check_parse(st, &err, "sl__s3_list_parse");
    FUZZ_CHECK(memchr(page.next_token, '\0', sizeof(page.next_token)) != NULL, "token");
    if (st != SL_OK)
        return;
    FUZZ_CHECK(seen.calls == page.n_objects + page.n_prefixes, "%zu calls, %zu + %zu entries",
               seen.calls, page.n_objects, page.n_prefixes);
    FUZZ_CHECK(!page.is_truncated || page.next_token[0] != '\0', "truncated without a token");
}

static void
fuzz_delete_result(const char *body, size_t n)
{
    struct fuzz_seen seen = {0};
    size_t deleted = 0, failed = 0;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st =
        sl__s3_delete_result_parse(body, n, fuzz_delete_item, &seen, &deleted, &failed, &err);
    fuzz_check_parse(st, &err, "sl__s3_delete_result_parse");
    FUZZ_CHECK(seen.calls == deleted + failed, "%zu calls, %zu + %zu", seen.calls, deleted, failed);
}

/* Append `text` or abort: the harness's own memory. */
static void
fuzz_put(struct sl_buf *b, const char *text)
{
    struct sl_error err = SL_ERROR_INIT;
    FUZZ_CHECK(sl_buf_append(b, text, strlen(text), &err) == SL_OK, "%s", err.text);
}

/* Escape every key into a DeleteObjects result and a listing; read both back. */
static void
fuzz_read_back(const char *const *keys, size_t n)
{
    struct sl_buf del = SL_BUF_INIT, list = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    bool too_long = false;
    fuzz_put(&del, "<DeleteResult>");
    fuzz_put(&list, "<ListBucketResult>");
    for (size_t i = 0; i < n; i++) {
        too_long |= strlen(keys[i]) > SL__S3_KEY_MAX;
        fuzz_put(&del, "<Deleted><Key>");
        FUZZ_CHECK(sl__s3_xml_escape(&del, keys[i], strlen(keys[i]), &err) == SL_OK,
                   "a key the body took is refused alone: %s", err.text);
        fuzz_put(&del, "</Key></Deleted>");
        fuzz_put(&list, "<Contents><Key>");
        FUZZ_CHECK(sl__s3_xml_escape(&list, keys[i], strlen(keys[i]), &err) == SL_OK, "%s",
                   err.text);
        char size[64];
        snprintf(size, sizeof(size), "</Key><Size>%zu</Size></Contents>", i);
        fuzz_put(&list, size);
    }
    fuzz_put(&del, "</DeleteResult>");
    fuzz_put(&list, "</ListBucketResult>");
    struct fuzz_seen seen = {.want = keys, .n_want = n};
    sl_status st = sl__s3_delete_result_parse((const char *)del.data, del.size, fuzz_delete_item,
                                              &seen, NULL, NULL, &err);
    FUZZ_CHECK(too_long ? st == SL_EPARSE : st == SL_OK && seen.calls == n,
               "escaped keys read back: %s (%s), %zu of %zu", sl_status_name(st), err.text,
               seen.calls, n);
    seen.calls = 0;
    err = SL_ERROR_INIT;
    struct sl__s3_list_page page;
    st = sl__s3_list_parse((const char *)list.data, list.size, false, fuzz_list_entry, &seen, &page,
                           &err);
    FUZZ_CHECK(too_long ? st == SL_EPARSE : st == SL_OK && seen.calls == n,
               "escaped keys listed: %s (%s), %zu of %zu", sl_status_name(st), err.text, seen.calls,
               n);
    sl_buf_fini(&del);
    sl_buf_fini(&list);
}

static void
fuzz_delete_body(const char *data, size_t n)
{
    const char *keys[FUZZ_KEYS_MAX];
    size_t n_keys = 0;
    for (size_t at = 0; at <= n && n_keys < FUZZ_KEYS_MAX;) {
        const char *end = memchr(data + at, '\0', n - at);
        size_t len = end != NULL ? (size_t)(end - data) - at : n - at;
        keys[n_keys++] = data + at; /* `data` is NUL-terminated at n */
        at += len + 1;
    }
    struct sl_buf body = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl__s3_delete_body(keys, n_keys, &body, &err);
    fuzz_check_error(st, &err, "sl__s3_delete_body");
    if (st == SL_OK) {
        FUZZ_CHECK(body.size > 0 && strlen((const char *)body.data) == body.size, "body");
        fuzz_read_back(keys, n_keys);
    } else {
        FUZZ_CHECK(st == SL_EINVAL && strstr(err.text, "key") != NULL, "%s: %s", sl_status_name(st),
                   err.text);
        FUZZ_CHECK(body.size == 0, "a refused body kept %zu bytes", body.size);
    }
    sl_buf_fini(&body);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t n = size - 1;
    if (data[0] % 5 == 4) {
        char *text = fuzz_strndup(data + 1, n); /* keys are C strings */
        fuzz_delete_body(text, n);
        free(text);
        return 0;
    }
    /* Exactly the body's bytes are readable, so ASan sees a read past it. */
    char *body = malloc(n > 0 ? n : 1);
    FUZZ_CHECK(body != NULL, "out of memory copying %zu bytes", n);
    if (n > 0)
        memcpy(body, data + 1, n);
    switch (data[0] % 5) {
    case 0:
        fuzz_error_body(body, n);
        fuzz_multipart(body, n);
        break;
    case 1:
        fuzz_list(body, n, false);
        break;
    case 2:
        fuzz_list(body, n, true);
        break;
    default:
        fuzz_delete_result(body, n);
        break;
    }
    free(body);
    return 0;
}
