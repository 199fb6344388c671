/* SPDX-License-Identifier: MIT */
/*
 * The S3 store (sl_store_open_s3): a remote store (store_remote.c) whose
 * reads are signed GETs on the libcurl engine, with writes (one PUT per
 * object, the body's SHA-256 signed; multipart above a threshold),
 * deletes (DELETE of one key; DeleteObjects of up to 1000 keys with the
 * body's Content-MD5 for a tree) and listing (ListObjectsV2, page by page)
 * of its own.  The building blocks are
 * s3_*.c: settings and credentials resolved once at open, the bucket
 * placed (virtual-hosted on AWS, path-style on other endpoints), each try
 * signed anew on the engine's thread (so a retry's date is fresh), S3's
 * XML read for listings and error messages.
 *
 * DESIGN: signing runs only on the engine's thread, through the engine's
 * sign hook, so the store's one signature buffer needs no lock.  The
 * secret and the session token live in the resolved settings, are never
 * formatted into a message and are wiped when the store closes.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <sluice/md5.h>
#include <sluice/remote.h>
#include <sluice/sha256.h>

#include "remote_internal.h"
#include "s3_internal.h"

/* The longest URL the store builds (a listing's, with its token). */
#define S3_URL_MAX 8192

/* What the store keeps besides the remote store's state. */
struct s3_ext {
    struct sl__s3_config cfg;   /* credentials, region, endpoint; secrets wiped at close */
    struct sl__s3_location loc; /* bucket, prefix, origin, Host */
    bool read_only;
    uint64_t multipart_bytes, part_bytes;
    struct sl__s3_signature sig; /* the engine thread's */
    struct sl_allocator alloc;
    /* Conditional writes: 1 on, 0 off, -1 not probed yet (under probe_lock). */
    int conditional;
    bool never; /* SL_S3_CONDITIONAL_NEVER: off by choice */
    pthread_mutex_t probe_lock;
    /* What reads, listings and this store's writes found of each key, so
     * that a write is conditional on it; under seen_lock.  `listed`: the
     * prefixes listed, under which a key not seen is absent when the
     * listing was whole (and no entry was dropped: `seen_full`). */
    pthread_mutex_t seen_lock;
    struct seen_entry **seen; /* S3_SEEN_BUCKETS chains */
    size_t n_seen;
    bool seen_full;
    struct listed *listed;
    size_t n_listed;
    bool list_denied; /* a listing was refused (403): nothing more is listed */
    /* Held while a prefix is listed for the versions of its keys. */
    pthread_mutex_t snap_lock;
};

/* A key's version as a read, a listing or a write found it: absent, an
 * ETag, or not known (a write whose answer gave none). */
#define S3_SEEN_BUCKETS 4096
#define S3_SEEN_MAX ((size_t)1 << 16) /* entries; past it keys are not remembered */
#define S3_LISTED_MAX 64
#define S3_SNAP_KEYS_MAX 16000 /* a listing for versions stops after so many keys */
struct listed {
    char *prefix;
    bool whole; /* every key under it was listed */
};
enum seen_state { SEEN_ABSENT, SEEN_ETAG, SEEN_UNKNOWN };
struct seen_entry {
    struct seen_entry *next;
    enum seen_state state;
    char etag[128];
    char key[]; /* NUL-terminated */
};

static void
ext_free(void *p)
{
    struct s3_ext *x = p;
    for (size_t i = 0; x->seen != NULL && i < S3_SEEN_BUCKETS; i++)
        for (struct seen_entry *e = x->seen[i], *next; e != NULL; e = next) {
            next = e->next;
            sl_free(&x->alloc, e, sizeof(*e) + strlen(e->key) + 1);
        }
    if (x->seen != NULL)
        sl_free(&x->alloc, x->seen, S3_SEEN_BUCKETS * sizeof(*x->seen));
    for (size_t i = 0; i < x->n_listed; i++)
        sl_free(&x->alloc, x->listed[i].prefix, strlen(x->listed[i].prefix) + 1);
    if (x->listed != NULL)
        sl_free(&x->alloc, x->listed, S3_LISTED_MAX * sizeof(*x->listed));
    pthread_mutex_destroy(&x->snap_lock);
    pthread_mutex_destroy(&x->seen_lock);
    pthread_mutex_destroy(&x->probe_lock);
    sl__s3_signature_fini(&x->sig);
    sl__s3_config_fini(&x->cfg);
    struct sl_allocator a = x->alloc;
    sl_free(&a, x, sizeof(*x));
}

/* The entry of `key`, or NULL; under seen_lock. */
static struct seen_entry **
seen_find(struct s3_ext *x, const char *key)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = key; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    struct seen_entry **at = &x->seen[h % S3_SEEN_BUCKETS];
    while (*at != NULL && strcmp((*at)->key, key) != 0)
        at = &(*at)->next;
    return at;
}

/* Remember `key` as `state` (with `etag` for SEEN_ETAG; none given:
 * SEEN_UNKNOWN), unless `only_new` and something is known of it already
 * (a listing does not replace what a read or a write of this store found:
 * a write depends on what it read, and a page may predate a write);
 * best effort: past S3_SEEN_MAX entries, or without memory, the key is
 * not remembered and no absence is inferred any more. */
static void
seen_set(struct s3_ext *x, const char *key, enum seen_state state, const char *etag, bool only_new)
{
    if (x->seen == NULL)
        return;
    if (state == SEEN_ETAG && (etag == NULL || etag[0] == '\0'))
        state = SEEN_UNKNOWN;
    pthread_mutex_lock(&x->seen_lock);
    struct seen_entry **at = seen_find(x, key);
    if (*at == NULL) {
        size_t kn = strlen(key) + 1;
        struct seen_entry *e =
            x->n_seen < S3_SEEN_MAX ? sl_alloc(&x->alloc, sizeof(*e) + kn, 0) : NULL;
        if (e == NULL) {
            x->seen_full = true;
            pthread_mutex_unlock(&x->seen_lock);
            return;
        }
        e->next = NULL;
        memcpy(e->key, key, kn);
        *at = e;
        x->n_seen++;
    } else if (only_new) {
        pthread_mutex_unlock(&x->seen_lock);
        return;
    }
    (*at)->state = state;
    snprintf((*at)->etag, sizeof((*at)->etag), "%s", state == SEEN_ETAG ? etag : "");
    pthread_mutex_unlock(&x->seen_lock);
}

static void
seen_put(struct s3_ext *x, const char *key, bool absent, const char *etag)
{
    seen_set(x, key, absent ? SEEN_ABSENT : SEEN_ETAG, etag, false);
}

/* Forget what was seen of `key`: its version is not known any more. */
static void
seen_forget(struct s3_ext *x, const char *key)
{
    seen_set(x, key, SEEN_UNKNOWN, NULL, false);
}

/* Whether `key` lies under a prefix listed (`whole`: listed whole);
 * under seen_lock. */
static bool
seen_listed(const struct s3_ext *x, const char *key, bool whole)
{
    for (size_t i = 0; i < x->n_listed; i++)
        if (strncmp(key, x->listed[i].prefix, strlen(x->listed[i].prefix)) == 0 &&
            (x->listed[i].whole || !whole))
            return true;
    return false;
}

/* The condition a write of `key` carries, as a header line in `out`: on
 * the version seen, on absence for a key not seen under a prefix listed
 * whole; "" when its version is not known.  False when nothing is known
 * of `key` (neither seen nor under a listed prefix). */
static bool
seen_condition(struct s3_ext *x, const char *key, char *out, size_t size)
{
    out[0] = '\0';
    if (x->seen == NULL)
        return true;
    pthread_mutex_lock(&x->seen_lock);
    const struct seen_entry *e = *seen_find(x, key);
    bool known = true;
    if (e != NULL && e->state == SEEN_ABSENT)
        snprintf(out, size, "If-None-Match: *");
    else if (e != NULL && e->state == SEEN_ETAG)
        snprintf(out, size, "If-Match: %s", e->etag);
    else if (e == NULL && !x->seen_full && seen_listed(x, key, true))
        snprintf(out, size, "If-None-Match: *");
    else if (e == NULL) /* listed in part, or full: nothing more is learnt */
        known = x->seen_full || seen_listed(x, key, false);
    pthread_mutex_unlock(&x->seen_lock);
    return known;
}

/* The remote store's hook: what an open of `key` found. */
static void
s3_seen(void *ext, const char *key, sl_status st, const char *etag)
{
    if (st == SL_OK || st == SL_ENOTFOUND)
        seen_put(ext, key, st == SL_ENOTFOUND, etag);
}

/* A request's query, raw: the store builds the URL from it (s3_url) and
 * hands it to the signer as the request's sign_arg, so that nothing is
 * parsed back out of a URL. */
struct s3_query {
    struct sl__s3_kv p[3];
    size_t n;
};

/* `base` (a URL without a query), then '?' and the parameters of `q`
 * ("name=value" joined by '&', each encoded as SigV4 encodes them) into
 * `out` (`size` bytes); false when it does not fit. */
static bool
s3_url(const struct sl_allocator *alloc, const char *base, const struct s3_query *q, char *out,
       size_t size)
{
    struct sl_buf b = {.alloc = *alloc};
    struct sl_error e = SL_ERROR_INIT;
    sl_status st = sl_buf_append(&b, base, strlen(base), &e);
    for (size_t i = 0; i < q->n && st == SL_OK; i++) {
        const char *name = q->p[i].name, *value = q->p[i].value != NULL ? q->p[i].value : "";
        st = sl_buf_append(&b, i == 0 ? "?" : "&", 1, &e);
        if (st == SL_OK)
            st = sl__s3_uri_encode(&b, name, strlen(name), false, &e);
        if (st == SL_OK)
            st = sl_buf_append(&b, "=", 1, &e);
        if (st == SL_OK)
            st = sl__s3_uri_encode(&b, value, strlen(value), false, &e);
    }
    bool ok = st == SL_OK && b.size < size;
    if (ok) {
        memcpy(out, b.data, b.size);
        out[b.size] = '\0';
    }
    sl_buf_fini(&b);
    return ok;
}

/* The engine's sign hook: Authorization and the x-amz headers for one try
 * of `req`, whose URL starts with the store's origin. */
static bool
s3_sign(void *ctx, const struct sl__http_req *req, struct sl__http_headers *out, char *message,
        size_t msize)
{
    struct s3_ext *x = ctx;
    size_t on = strlen(x->loc.origin);
    if (strncmp(req->url, x->loc.origin, on) != 0) {
        snprintf(message, msize, "%s: not under the store's origin %s", req->url, x->loc.origin);
        return false;
    }
    const char *path = req->url + on;
    size_t path_n = strcspn(path, "?");
    const struct s3_query *q = req->sign_arg;
    if (path[path_n] == '?' && q == NULL) {
        snprintf(message, msize, "%s: a query without its parameters to sign", req->url);
        return false;
    }
    char path_buf[S3_URL_MAX];
    if (path_n >= sizeof(path_buf)) {
        snprintf(message, msize, "%s: URL too long to sign", req->url);
        return false;
    }
    memcpy(path_buf, path, path_n);
    path_buf[path_n] = '\0';
    struct sl__s3_request r = {.method = req->method != NULL ? req->method : "GET",
                               .host = x->loc.host,
                               .path = path_buf,
                               .path_encoded = true,
                               .params = q != NULL ? q->p : NULL,
                               .n_params = q != NULL ? q->n : 0,
                               .payload_hash = req->payload_hash,
                               .region = x->cfg.region,
                               .time = (int64_t)time(NULL)};
    struct sl__s3_creds creds = sl__s3_config_creds(&x->cfg);
    struct sl_error e = SL_ERROR_INIT;
    if (sl__s3_sign(&r, &creds, &x->sig, &e) != SL_OK) {
        snprintf(message, msize, "%s: cannot sign: %s", req->url, e.text);
        return false;
    }
    const char *hash = req->payload_hash != NULL ? req->payload_hash : SL__S3_EMPTY_SHA256;
    bool ok = sl__http_header_add(out, "x-amz-date", x->sig.amz_date) &&
              sl__http_header_add(out, "x-amz-content-sha256", hash) &&
              (creds.session_token == NULL ||
               sl__http_header_add(out, "x-amz-security-token", creds.session_token)) &&
              sl__http_header_add(out, "Authorization", x->sig.authorization);
    if (!ok)
        snprintf(message, msize, "%s: the signed headers do not fit", req->url);
    return ok;
}

/* Fail `req` (done) with its status, its message and what S3's error body
 * says; the secret is in neither. */
static sl_status
s3_fail(const struct sl__http_req *req, const char *what, struct sl_error *err)
{
    struct sl__s3_error_body b = {.code = ""};
    struct sl_error ignored = SL_ERROR_INIT;
    sl_status st = req->status != SL_OK ? req->status : SL_EHTTP;
    if (req->body.size > 0 &&
        sl__s3_error_parse((const char *)req->body.data, req->body.size, &b, &ignored) == SL_OK &&
        b.code[0] != '\0' && strstr(req->message, b.code) == NULL)
        return sl_error_set(err, st, NULL, "%s: %s (S3 %s: %s)", what, req->message, b.code,
                            b.message);
    return sl_error_set(err, st, NULL, "%s: %s", what, req->message);
}

/* One part of a multipart upload: its request, hash and URL. */
struct part {
    struct sl__http_req req;
    char hash[SL_SHA256_HEX_CHARS + 1];
    char number[24];
    struct s3_query q; /* partNumber, uploadId */
    char url[S3_URL_MAX];
};

/* Counts the parts that ended; the waiter of s3_parts. */
struct parts_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t left;
};

static void
part_done(struct sl__http_req *req, void *ctx)
{
    (void)req;
    struct parts_wait *w = ctx;
    pthread_mutex_lock(&w->lock);
    if (--w->left == 0)
        pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* The CompleteMultipartUpload body of `parts` into `xml`; SL_OK, or the
 * first part's failure in `err`. */
static sl_status
parts_xml(struct part *parts, size_t n_parts, struct sl_buf *xml, struct sl_error *err)
{
    static const char head[] = "<CompleteMultipartUpload>", tail[] = "</CompleteMultipartUpload>";
    sl_status st = sl_buf_append(xml, head, sizeof(head) - 1, err);
    for (size_t i = 0; i < n_parts && st == SL_OK; i++) {
        struct part *p = &parts[i];
        if (p->req.status != SL_OK || p->req.etag[0] == '\0') {
            char what[64];
            snprintf(what, sizeof(what), "cannot upload part %zu of %zu", i + 1, n_parts);
            if (p->req.status == SL_OK)
                return sl_error_set(err, SL_EHTTP, NULL, "%s: %s: no ETag in the answer", what,
                                    p->url);
            return s3_fail(&p->req, what, err);
        }
        char line[96];
        int k = snprintf(line, sizeof(line), "<Part><PartNumber>%zu</PartNumber><ETag>", i + 1);
        st = sl_buf_append(xml, line, (size_t)k, err);
        if (st == SL_OK)
            st = sl__s3_xml_escape(xml, p->req.etag, strlen(p->req.etag), err);
        if (st == SL_OK)
            st = sl_buf_append(xml, "</ETag></Part>", 14, err);
    }
    return st == SL_OK ? sl_buf_append(xml, tail, sizeof(tail) - 1, err) : st;
}

/* POST the CompleteMultipartUpload body `xml` for upload `id` of `url`;
 * the new object's ETag into `etag` ("" when S3 gave none). */
static sl_status
parts_complete(sl_store *s, const char *url, const char *id, const struct sl_buf *xml,
               const char *cond, char etag[128], struct sl_error *err)
{
    const char *headers[2] = {cond, NULL};
    char curl[S3_URL_MAX];
    struct s3_query q = {{{"uploadId", id}}, 1};
    if (!s3_url(&s->alloc, url, &q, curl, sizeof(curl)))
        return sl_error_set(err, SL_EOVERFLOW, NULL, "%s: the upload's URL is too long", url);
    uint8_t digest[SL_SHA256_BYTES];
    char hash[SL_SHA256_HEX_CHARS + 1];
    sl_sha256(xml->data, xml->size, digest);
    sl_sha256_hex(digest, hash);
    struct sl__http_req req = {.url = curl,
                               .method = "POST",
                               .send = xml->data,
                               .send_n = xml->size,
                               .payload_hash = hash,
                               .sign_arg = &q,
                               .headers = cond[0] != '\0' ? headers : NULL,
                               .body = {.alloc = s->alloc}};
    sl_status st = sl__engine_run(sl__remote_engine(s), &req);
    struct sl__s3_complete_result r;
    struct sl_error pe = SL_ERROR_INIT;
    if (st != SL_OK) {
        st = s3_fail(&req,
                     st == SL_ECONFLICT ? "cannot complete the upload (another writer changed "
                                          "it since this store read it)"
                                        : "cannot complete the upload",
                     err);
    } else if (sl__s3_complete_parse((const char *)req.body.data, req.body.size, &r, &pe) !=
               SL_OK) {
        st = sl_error_set(err, SL_EHTTP, NULL, "cannot complete the upload: %s: %s", curl, pe.text);
    } else if (r.failed) {
        /* S3 may answer 200 with an <Error> when completing fails late. */
        st = sl_error_set(err, SL_EHTTP, NULL,
                          "cannot complete the upload: %s: HTTP 200 with an error (S3 %s: %s)",
                          curl, r.error.code, r.error.message);
    } else {
        snprintf(etag, 128, "%s", r.etag);
    }
    sl_buf_fini(&req.body);
    return st;
}

/* Upload the parts of `data` to upload `id` of `url`, all in the engine's
 * window at once, then complete it.  SL_OK or a failure in `err`. */
static sl_status
s3_parts(sl_store *s, const char *url, const char *id, const uint8_t *data, size_t n,
         uint64_t part_bytes, const char *cond, char etag[128], struct sl_error *err)
{
    size_t n_parts = (size_t)((n + part_bytes - 1) / part_bytes);
    struct part *parts = sl_alloc_zeroed(&s->alloc, n_parts, sizeof(*parts), 0);
    if (parts == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory uploading %s", url);
    struct parts_wait w = {.left = n_parts};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    for (size_t i = 0; i < n_parts; i++) {
        struct part *p = &parts[i];
        size_t off = (size_t)(i * part_bytes), len = n - off < part_bytes ? n - off : part_bytes;
        uint8_t digest[SL_SHA256_BYTES];
        sl_sha256(data + off, len, digest);
        sl_sha256_hex(digest, p->hash);
        snprintf(p->number, sizeof(p->number), "%zu", i + 1);
        p->q = (struct s3_query){{{"partNumber", p->number}, {"uploadId", id}}, 2};
        if (!s3_url(&s->alloc, url, &p->q, p->url, sizeof(p->url))) {
            sl_free(&s->alloc, parts, n_parts * sizeof(*parts));
            return sl_error_set(err, SL_EOVERFLOW, NULL, "%s: the part's URL is too long", url);
        }
        p->req = (struct sl__http_req){.url = p->url,
                                       .method = "PUT",
                                       .send = data + off,
                                       .send_n = len,
                                       .payload_hash = p->hash,
                                       .sign_arg = &p->q,
                                       .done = part_done,
                                       .ctx = &w,
                                       .body = {.alloc = s->alloc}};
    }
    for (size_t i = 0; i < n_parts; i++)
        sl__engine_submit(sl__remote_engine(s), &parts[i].req);
    pthread_mutex_lock(&w.lock);
    while (w.left > 0)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    struct sl_buf xml = {.alloc = s->alloc};
    sl_status st = parts_xml(parts, n_parts, &xml, err);
    for (size_t i = 0; i < n_parts; i++)
        sl_buf_fini(&parts[i].req.body);
    sl_free(&s->alloc, parts, n_parts * sizeof(*parts));
    if (st == SL_OK)
        st = parts_complete(s, url, id, &xml, cond, etag, err);
    sl_buf_fini(&xml);
    return st;
}

/* The ETags S3 gives `n` bytes of `data`: in `one`, written by one PUT
 * (the MD5 of the body); in `parts`, uploaded in parts of `part_bytes`
 * (the MD5 of the parts' MD5s, "-" and the number of parts; "" for a
 * single PUT).  Both quoted, as S3 sends them. */
static void
etags_of(const uint8_t *data, size_t n, uint64_t part_bytes, char one[40], char parts[64])
{
    uint8_t digest[SL_MD5_BYTES];
    char hex[SL_MD5_HEX_CHARS + 1];
    sl_md5(data, n, digest);
    sl_md5_hex(digest, hex);
    snprintf(one, 40, "\"%s\"", hex);
    parts[0] = '\0';
    if (part_bytes == 0)
        return;
    struct sl_md5 all;
    sl_md5_init(&all);
    size_t n_parts = 0;
    for (size_t off = 0; off < n; off += (size_t)part_bytes, n_parts++) {
        sl_md5(data + off, n - off < part_bytes ? n - off : (size_t)part_bytes, digest);
        sl_md5_update(&all, digest, sizeof(digest));
    }
    sl_md5_final(&all, digest);
    sl_md5_hex(digest, hex);
    snprintf(parts, 64, "\"%s-%zu\"", hex, n_parts);
}

/* Whether a write of `data` to `url` that failed its condition (or, a
 * multipart one, found its upload gone) had landed on an earlier try whose
 * answer was lost (a reset, a truncated answer; libcurl itself sends a
 * request again when a kept-alive connection dies before any answer, so
 * this is asked of every such failure, not only of retried ones): the
 * stored object is then these bytes, by its ETag (HEAD).  Another
 * writer's object of the same bytes passes too: what is stored is this
 * write's.  Its ETag into `etag` when so. */
static bool
s3_landed(sl_store *s, const char *url, const uint8_t *data, size_t n, uint64_t part_bytes,
          char etag[128])
{
    char one[40], parts[64];
    etags_of(data, n, part_bytes, one, parts);
    struct sl__http_req req = {.url = url, .method = "HEAD", .body = {.alloc = s->alloc}};
    sl_status st = sl__engine_run(sl__remote_engine(s), &req);
    bool ours = st == SL_OK &&
                (strcmp(req.etag, one) == 0 || (parts[0] != '\0' && strcmp(req.etag, parts) == 0));
    if (ours)
        snprintf(etag, 128, "%s", req.etag);
    sl_buf_fini(&req.body);
    return ours;
}

/* Upload `n` bytes to `url` in parts: initiate, the parts, complete; on a
 * failure, abort, so that no partial object remains.  The object's ETag
 * into `etag` ("" when S3 gave none). */
static sl_status
s3_put_multipart(sl_store *s, const char *url, const void *data, size_t n, const char *cond,
                 char etag[128], struct sl_error *err)
{
    struct s3_ext *x = sl__remote_ext(s);
    char iurl[S3_URL_MAX], id[1024];
    struct s3_query iq = {{{"uploads", ""}}, 1};
    if (!s3_url(&s->alloc, url, &iq, iurl, sizeof(iurl)))
        return sl_error_set(err, SL_EOVERFLOW, NULL, "%s: the upload's URL is too long", url);
    struct sl__http_req req = {
        .url = iurl, .method = "POST", .sign_arg = &iq, .body = {.alloc = s->alloc}};
    sl_status st = sl__engine_run(sl__remote_engine(s), &req);
    struct sl_error pe = SL_ERROR_INIT;
    if (st != SL_OK)
        st = s3_fail(&req, "cannot start a multipart upload", err);
    else if (sl__s3_initiate_parse((const char *)req.body.data, req.body.size, id, sizeof(id),
                                   &pe) != SL_OK)
        st = sl_error_set(err, SL_EHTTP, NULL, "cannot start a multipart upload: %s: %s", iurl,
                          pe.text);
    sl_buf_fini(&req.body);
    if (st != SL_OK)
        return st;
    st = s3_parts(s, url, id, data, n, x->part_bytes, cond, etag, err);
    /* A completion whose earlier try completed the upload (its answer
     * lost) fails its condition, or finds the upload gone (NoSuchUpload). */
    if ((st == SL_ECONFLICT || st == SL_ENOTFOUND) &&
        s3_landed(s, url, data, n, x->part_bytes, etag)) {
        *err = SL_ERROR_INIT; /* an earlier try completed it: its answer was lost */
        return SL_OK;
    }
    if (st != SL_OK) {
        char aurl[S3_URL_MAX];
        struct s3_query aq = {{{"uploadId", id}}, 1};
        bool fits = s3_url(&s->alloc, url, &aq, aurl, sizeof(aurl));
        struct sl__http_req abort = {
            .url = aurl, .method = "DELETE", .sign_arg = &aq, .body = {.alloc = s->alloc}};
        if (!fits) {
            snprintf(abort.message, sizeof(abort.message), "%s: the upload's URL is too long", url);
            abort.status = SL_EOVERFLOW;
        } else {
            (void)sl__engine_run(sl__remote_engine(s), &abort);
        }
        if (abort.status != SL_OK) {
            char first[sizeof(err->text)];
            snprintf(first, sizeof(first), "%s", err->text);
            *err = SL_ERROR_INIT;
            sl_error_set(err, st, NULL, "%s; aborting the upload failed too: %s", first,
                         abort.message);
        }
        sl_buf_fini(&abort.body);
    }
    return st;
}

/* PUT `n` bytes to `url` with the extra header `cond` ("" none); the
 * request's status, its answer in `req` (the caller finis req->body). */
static sl_status
s3_put(sl_store *s, const char *url, const void *data, size_t n, const char *cond,
       struct sl__http_req *req)
{
    uint8_t digest[SL_SHA256_BYTES];
    char hash[SL_SHA256_HEX_CHARS + 1];
    sl_sha256(data, n, digest);
    sl_sha256_hex(digest, hash);
    const char *headers[2] = {cond, NULL};
    *req = (struct sl__http_req){.url = url,
                                 .method = "PUT",
                                 .send = data,
                                 .send_n = n,
                                 .payload_hash = hash,
                                 .headers = cond[0] != '\0' ? headers : NULL,
                                 .body = {.alloc = s->alloc}};
    return sl__engine_run(sl__remote_engine(s), req);
}

/* Whether writes are conditional: the option, or (AUTO) whether the server
 * honours If-None-Match: * on PUT, probed once with a key of its own. */
static bool
conditional_on(sl_store *s, struct s3_ext *x)
{
    pthread_mutex_lock(&x->probe_lock);
    if (x->conditional < 0) {
        char key[96], url[S3_URL_MAX];
        static _Atomic unsigned probes;
        snprintf(key, sizeof(key), ".sluice-probe-%ld-%u", (long)getpid(), probes++);
        x->conditional = 0;
        if (sl__remote_url_for(s, key, url, sizeof(url))) {
            struct sl__http_req a, b, d;
            sl_status sa = s3_put(s, url, "probe", 5, "If-None-Match: *", &a);
            sl_status sb = sa == SL_OK ? s3_put(s, url, "probe", 5, "If-None-Match: *", &b) : SL_OK;
            x->conditional = sa == SL_OK && sb == SL_ECONFLICT;
            if (sa == SL_OK) {
                sl_buf_fini(&b.body);
                d = (struct sl__http_req){
                    .url = url, .method = "DELETE", .body = {.alloc = s->alloc}};
                (void)sl__engine_run(sl__remote_engine(s), &d);
                sl_buf_fini(&d.body);
            }
            sl_buf_fini(&a.body);
        }
    }
    bool on = x->conditional == 1;
    pthread_mutex_unlock(&x->probe_lock);
    return on;
}

static sl_status s3_list(sl_store *s, const char *prefix, sl_store_list_fn *fn, void *arg,
                         struct sl_error *err);

/* Counts a snapshot's keys; stops the listing past S3_SNAP_KEYS_MAX. */
static sl_status
list_count(void *arg, const char *key, uint64_t bytes)
{
    (void)key, (void)bytes;
    size_t *n = arg;
    return ++*n > S3_SNAP_KEYS_MAX ? SL_ECANCELED : SL_OK;
}

/* Learn the version of every key stored under the first component of
 * `key` ("c/" of "c/0/1", the store's top for "zarr.json") by listing it
 * (s3_list remembers each ETag), once per prefix: a write of a key this
 * store has neither read nor written is then conditional on what was
 * stored before its first write there (absent: If-None-Match: *), so that
 * of two writers that both looked before either wrote, the second
 * conflicts instead of replacing the first's object unseen.  A listing
 * stops after S3_SNAP_KEYS_MAX keys (a store on a bucket's top holding
 * much else): the ETags found are kept, but nothing is taken as absent
 * there.  Past S3_LISTED_MAX prefixes, or once a listing was refused
 * (403), nothing is listed: such writes go unconditional. */
static sl_status
snapshot(sl_store *s, struct s3_ext *x, const char *key, struct sl_error *err)
{
    const char *slash = strchr(key, '/');
    size_t pn = slash != NULL ? (size_t)(slash - key) + 1 : 0;
    char prefix[SL_STORE_KEY_MAX + 1];
    snprintf(prefix, sizeof(prefix), "%.*s", (int)pn, key);
    sl_status st = SL_OK;
    pthread_mutex_lock(&x->snap_lock);
    pthread_mutex_lock(&x->seen_lock);
    bool done = seen_listed(x, key, false) || x->listed == NULL || x->n_listed == S3_LISTED_MAX ||
                x->list_denied;
    pthread_mutex_unlock(&x->seen_lock);
    if (!done) {
        struct sl_error le = SL_ERROR_INIT;
        size_t n_keys = 0;
        st = s3_list(s, prefix, list_count, &n_keys, &le);
        bool whole = st == SL_OK;
        if (st == SL_ECANCELED && n_keys > S3_SNAP_KEYS_MAX)
            st = SL_OK; /* listed in part */
        /* Credentials that may write but not list (no s3:ListBucket): keys
         * never read are written unconditionally, as before any listing. */
        bool denied = (st == SL_EHTTP && strstr(le.text, ": HTTP 403 ") != NULL) ||
                      st == SL_ENOTFOUND; /* a 403 with missing_on_403 */
        if (denied)
            st = SL_OK;
        char *p = st == SL_OK && !denied ? sl_strdup(&x->alloc, prefix) : NULL;
        if (st != SL_OK)
            sl_error_set(err, st, NULL,
                         "cannot write \"%s\": listing \"%s\" for the versions of its keys "
                         "failed: %s",
                         key, prefix, le.text);
        pthread_mutex_lock(&x->seen_lock);
        x->list_denied = x->list_denied || denied;
        if (p != NULL && x->listed != NULL)
            x->listed[x->n_listed++] = (struct listed){p, whole};
        else if (p != NULL)
            sl_free(&x->alloc, p, strlen(p) + 1);
        pthread_mutex_unlock(&x->seen_lock);
    }
    pthread_mutex_unlock(&x->snap_lock);
    return st;
}

static sl_status
s3_set(sl_store *s, const char *key, const void *data, size_t n, unsigned flags,
       struct sl_error *err)
{
    (void)flags;
    struct s3_ext *x = sl__remote_ext(s);
    char url[S3_URL_MAX];
    if (x->read_only)
        return sl_error_set(err, SL_EACCES, NULL,
                            "cannot write \"%s\": the S3 store %s is read-only", key,
                            x->loc.base_url);
    if (!sl__remote_url_for(s, key, url, sizeof(url)))
        return sl_error_set(err, SL_EINVAL, NULL, "URL of key \"%s\" is too long", key);
    char cond[160] = "";
    if (conditional_on(s, x) && !seen_condition(x, key, cond, sizeof(cond))) {
        SL_TRY(snapshot(s, x, key, err));
        seen_condition(x, key, cond, sizeof(cond));
    }
    if (n >= x->multipart_bytes) {
        char etag[128] = "";
        sl_status mst = s3_put_multipart(s, url, data, n, cond, etag, err);
        /* The next write replaces this version; without an ETag in the
         * answer its version is not known, and that write goes
         * unconditional. */
        if (mst == SL_OK && etag[0] != '\0')
            seen_put(x, key, false, etag);
        else if (mst == SL_OK)
            seen_forget(x, key);
        return mst;
    }
    struct sl__http_req req;
    sl_status st = s3_put(s, url, data, n, cond, &req);
    char landed[128];
    if (st == SL_ECONFLICT && s3_landed(s, url, data, n, 0, landed)) {
        st = SL_OK; /* an earlier try wrote it: its answer was lost */
        snprintf(req.etag, sizeof(req.etag), "%s", landed);
    }
    if (st == SL_OK)
        seen_put(x, key, false, req.etag); /* the next write replaces this version */
    else
        st = s3_fail(&req,
                     st == SL_ECONFLICT ? "cannot write (another writer changed it since "
                                          "this store read it)"
                                        : "cannot write",
                     err);
    sl_buf_fini(&req.body);
    return st;
}

static sl_status
s3_del(sl_store *s, const char *key, struct sl_error *err)
{
    struct s3_ext *x = sl__remote_ext(s);
    char url[S3_URL_MAX];
    if (x->read_only)
        return sl_error_set(err, SL_EACCES, NULL,
                            "cannot delete \"%s\": the S3 store %s is read-only", key,
                            x->loc.base_url);
    if (!sl__remote_url_for(s, key, url, sizeof(url)))
        return sl_error_set(err, SL_EINVAL, NULL, "URL of key \"%s\" is too long", key);
    struct sl__http_req req = {.url = url, .method = "DELETE", .body = {.alloc = s->alloc}};
    sl_status st = sl__engine_run(sl__remote_engine(s), &req);
    if (st == SL_ENOTFOUND)
        st = SL_OK; /* deleting an absent key succeeds */
    if (st == SL_OK)
        seen_put(x, key, true, NULL); /* a write after this one creates the key anew */
    else if (st != SL_OK)
        st = s3_fail(&req, "cannot delete", err);
    sl_buf_fini(&req.body);
    return st;
}

/* `n` bytes of `data` in base64 (RFC 4648, padded) into `out`, which
 * holds 4 * ceil(n / 3) + 1 bytes. */
static void
base64(const uint8_t *data, size_t n, char *out)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)data[i + 1] << 8;
        if (i + 2 < n)
            v |= data[i + 2];
        out[k++] = digits[v >> 18];
        out[k++] = digits[(v >> 12) & 63];
        out[k++] = i + 1 < n ? digits[(v >> 6) & 63] : '=';
        out[k++] = i + 2 < n ? digits[v & 63] : '=';
    }
    out[k] = '\0';
}

/* What a DeleteObjects result reported of the keys it could not delete. */
struct del_failed {
    struct s3_ext *x;
    size_t strip_n; /* the location's prefix and '/', before each store key */
    size_t n;       /* keys refused */
    char first[600];
};

static sl_status
del_item(void *ctx, const struct sl__s3_delete_item *it, struct sl_error *err)
{
    (void)err;
    struct del_failed *f = ctx;
    if (it->deleted)
        return SL_OK;
    if (f->n++ == 0)
        snprintf(f->first, sizeof(f->first), "\"%s\" (S3 %s: %s)", it->key, it->code, it->message);
    if (strlen(it->key) > f->strip_n)
        seen_forget(f->x, it->key + f->strip_n); /* its version is not known any more */
    return SL_OK;
}

/* One DeleteObjects request: POST ?delete with the body naming `n` (1 to
 * 1000) of the location's keys, `full` (the prefix included), and the
 * body's Content-MD5 (S3, MinIO and Ceph require it); retried as every
 * request (deleting the same keys again is harmless). */
static sl_status
s3_delete_objects(sl_store *s, const char *path, const char *const *full, size_t n, size_t strip_n,
                  struct sl_error *err)
{
    struct s3_ext *x = sl__remote_ext(s);
    struct sl_buf body = {.alloc = s->alloc};
    struct sl_error be = SL_ERROR_INIT;
    if (sl__s3_delete_body(full, n, &body, &be) != SL_OK) {
        sl_buf_fini(&body);
        return sl_error_set(err, be.code, NULL, "cannot delete the keys under \"%s\" in %s: %s",
                            path, x->loc.base_url, be.text);
    }
    uint8_t md5[SL_MD5_BYTES], digest[SL_SHA256_BYTES];
    char md5_b64[32], header[64], hash[SL_SHA256_HEX_CHARS + 1], url[S3_URL_MAX],
        bucket_url[sizeof(x->loc.origin) + sizeof(x->loc.bucket_path)];
    sl_md5(body.data, body.size, md5);
    base64(md5, sizeof(md5), md5_b64);
    snprintf(header, sizeof(header), "Content-MD5: %s", md5_b64);
    sl_sha256(body.data, body.size, digest);
    sl_sha256_hex(digest, hash);
    snprintf(bucket_url, sizeof(bucket_url), "%s%s", x->loc.origin, x->loc.bucket_path);
    struct s3_query q = {{{"delete", ""}}, 1};
    if (!s3_url(&s->alloc, bucket_url, &q, url, sizeof(url))) {
        sl_buf_fini(&body);
        return sl_error_set(err, SL_EOVERFLOW, NULL, "%s: the DeleteObjects URL is too long",
                            bucket_url);
    }
    const char *headers[2] = {header, NULL};
    struct sl__http_req req = {.url = url,
                               .method = "POST",
                               .send = body.data,
                               .send_n = body.size,
                               .payload_hash = hash,
                               .sign_arg = &q,
                               .headers = headers,
                               .body = {.alloc = s->alloc}};
    sl_status st = sl__engine_run(sl__remote_engine(s), &req);
    char what[SL_STORE_KEY_MAX + 160];
    snprintf(what, sizeof(what), "cannot delete %zu keys under \"%s\" in %s", n, path,
             x->loc.base_url);
    for (size_t i = 0; st == SL_OK && i < n; i++)
        seen_put(x, full[i] + strip_n, true, NULL); /* a write after this creates it anew */
    struct del_failed f = {.x = x, .strip_n = strip_n};
    struct sl_error pe = SL_ERROR_INIT;
    if (st != SL_OK)
        st = s3_fail(&req, what, err);
    else if (sl__s3_delete_result_parse((const char *)req.body.data, req.body.size, del_item, &f,
                                        NULL, NULL, &pe) != SL_OK)
        st = sl_error_set(err, SL_EHTTP, NULL, "%s: %s", what, pe.text);
    else if (f.n > 0)
        st = sl_error_set(err, SL_EHTTP, NULL, "%s: S3 refused %zu of them, the first %s", what,
                          f.n, f.first);
    sl_buf_fini(&req.body);
    sl_buf_fini(&body);
    return st;
}

static sl_status
s3_del_keys(sl_store *s, const char *path, const char *const *keys, size_t n, struct sl_error *err)
{
    struct s3_ext *x = sl__remote_ext(s);
    if (x->read_only)
        return sl_error_set(err, SL_EACCES, NULL,
                            "cannot delete \"%s\": the S3 store %s is read-only", path,
                            x->loc.base_url);
    char strip[sizeof(x->loc.prefix) + 1];
    snprintf(strip, sizeof(strip), "%s%s", x->loc.prefix, x->loc.prefix[0] != '\0' ? "/" : "");
    size_t strip_n = strlen(strip);
    struct sl_buf names = {.alloc = s->alloc};
    const char **full = sl_alloc(&s->alloc, SL__S3_DELETE_MAX * sizeof(*full), 0);
    size_t *at = sl_alloc(&s->alloc, SL__S3_DELETE_MAX * sizeof(*at), 0);
    sl_status st = full != NULL && at != NULL ? SL_OK : SL_ENOMEM;
    for (size_t done = 0; st == SL_OK && done < n;) {
        size_t batch = n - done < SL__S3_DELETE_MAX ? n - done : SL__S3_DELETE_MAX;
        names.size = 0;
        for (size_t i = 0; st == SL_OK && i < batch; i++) {
            at[i] = names.size;
            st = sl_buf_append(&names, strip, strip_n, err);
            if (st == SL_OK)
                st = sl_buf_append(&names, keys[done + i], strlen(keys[done + i]) + 1, err);
        }
        for (size_t i = 0; st == SL_OK && i < batch; i++)
            full[i] = (const char *)names.data + at[i];
        if (st == SL_OK)
            st = s3_delete_objects(s, path, full, batch, strip_n, err);
        done += batch;
    }
    if (st == SL_ENOMEM && err != NULL && err->code == SL_OK)
        sl_error_set(err, st, NULL, "out of memory deleting the keys under \"%s\"", path);
    sl_buf_fini(&names);
    if (full != NULL)
        sl_free(&s->alloc, full, SL__S3_DELETE_MAX * sizeof(*full));
    if (at != NULL)
        sl_free(&s->alloc, at, SL__S3_DELETE_MAX * sizeof(*at));
    return st;
}

static sl_store_conditional
s3_conditional_writes(const sl_store *s)
{
    struct s3_ext *x = sl__remote_ext(s);
    if (x->read_only)
        return SL_STORE_CONDITIONAL_NOT_APPLICABLE;
    if (x->never)
        return SL_STORE_CONDITIONAL_OFF;
    pthread_mutex_lock(&x->probe_lock);
    int c = x->conditional;
    pthread_mutex_unlock(&x->probe_lock);
    return c < 0    ? SL_STORE_CONDITIONAL_NOT_KNOWN
           : c == 1 ? SL_STORE_CONDITIONAL_HONOURED
                    : SL_STORE_CONDITIONAL_IGNORED;
}

/* A listing's state: the caller's function and the store's prefix. */
struct list_ctx {
    struct s3_ext *x; /* remembers each key's ETag (a writable store) */
    sl_store_list_fn *fn;
    void *arg;
    const char *strip; /* the location's prefix and '/', removed from each key */
    size_t strip_n;
    sl_status user; /* what fn returned, when not SL_OK */
};

static sl_status
list_entry(void *ctx, const struct sl__s3_list_entry *e, struct sl_error *err)
{
    (void)err;
    struct list_ctx *l = ctx;
    if (e->is_prefix || e->key_len <= l->strip_n || strncmp(e->key, l->strip, l->strip_n) != 0)
        return SL_OK; /* not under the store's prefix: not one of its keys */
    if (!l->x->read_only && e->etag[0] != '\0')
        seen_set(l->x, e->key + l->strip_n, SEEN_ETAG, e->etag, true);
    sl_status st = l->fn(l->arg, e->key + l->strip_n, e->size);
    if (st != SL_OK)
        l->user = st;
    return st;
}

static sl_status
s3_list(sl_store *s, const char *prefix, sl_store_list_fn *fn, void *arg, struct sl_error *err)
{
    struct s3_ext *x = sl__remote_ext(s);
    char strip[sizeof(x->loc.prefix) + 1], full[sizeof(x->loc.prefix) + SL_STORE_KEY_MAX + 2];
    snprintf(strip, sizeof(strip), "%s%s", x->loc.prefix, x->loc.prefix[0] != '\0' ? "/" : "");
    snprintf(full, sizeof(full), "%s%s", strip, prefix);
    struct list_ctx l = {x, fn, arg, strip, strlen(strip), SL_OK};
    char *token = sl_alloc(&s->alloc, 2048, 0);
    if (token == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory listing %s", x->loc.base_url);
    token[0] = '\0';
    char bucket_url[sizeof(x->loc.origin) + sizeof(x->loc.bucket_path)];
    snprintf(bucket_url, sizeof(bucket_url), "%s%s", x->loc.origin, x->loc.bucket_path);
    sl_status st = SL_OK;
    for (unsigned page = 0; st == SL_OK; page++) {
        char url[S3_URL_MAX];
        struct s3_query q = {{{"list-type", "2"}, {"prefix", full}}, 2};
        if (token[0] != '\0')
            q.p[q.n++] = (struct sl__s3_kv){"continuation-token", token};
        if (!s3_url(&s->alloc, bucket_url, &q, url, sizeof(url))) {
            st = sl_error_set(err, SL_EOVERFLOW, NULL, "listing URL of %s too long",
                              x->loc.base_url);
            break;
        }
        struct sl__http_req req = {.url = url, .sign_arg = &q, .body = {.alloc = s->alloc}};
        st = sl__engine_run(sl__remote_engine(s), &req);
        struct sl__s3_list_page pg;
        if (st != SL_OK) {
            st = s3_fail(&req, "cannot list", err);
        } else {
            struct sl_error pe = SL_ERROR_INIT;
            st = sl__s3_list_parse((const char *)req.body.data, req.body.size, false, list_entry,
                                   &l, &pg, &pe);
            if (st != SL_OK && l.user == SL_OK)
                sl_error_set(err, st, NULL, "listing page %u of %s: %s", page + 1, x->loc.base_url,
                             pe.text);
            else if (st == SL_OK && pg.is_truncated)
                snprintf(token, 2048, "%s", pg.next_token);
        }
        sl_buf_fini(&req.body);
        if (st != SL_OK || !pg.is_truncated)
            break;
    }
    sl_free(&s->alloc, token, 2048);
    return st;
}

static const struct sl__store_vtable s3_vtable = {
    .kind = "s3",
    .set_writers = 8, /* a PUT waits on the network: PUTs in flight together pay */
    .reader_open = sl__remote_reader_open,
    .reader_read = sl__remote_reader_read,
    .reader_close = sl__remote_reader_close,
    .reader_view = sl__remote_reader_view,
    .set = s3_set,
    .del = s3_del,
    .del_keys = s3_del_keys,
    .list = s3_list,
    .prefetch = sl__remote_prefetch,
    .prefetch_ranges = sl__remote_prefetch_ranges,
    .has_first = sl__remote_has_first,
    .fetched = sl__remote_fetched,
    .remote_stats = sl__remote_stats,
    .conditional_writes = s3_conditional_writes,
    .destroy = sl__remote_destroy,
};

sl_store *
sl_store_open_s3(const char *url, const struct sl_http_store_opts *http,
                 const struct sl_s3_store_opts *s3, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_http_store_opts ho = http != NULL ? *http : SL_HTTP_STORE_OPTS_DEFAULT;
    struct sl_s3_store_opts so = s3 != NULL ? *s3 : SL_S3_STORE_OPTS_DEFAULT;
    if (url == NULL || strncasecmp(url, "s3://", 5) != 0) {
        sl_error_set(err, SL_EINVAL, NULL, "\"%s\" is not an s3:// URL",
                     url != NULL ? url : "(null)");
        return NULL;
    }
    if (sl__remote_opts_check(&ho, err) != SL_OK)
        return NULL;
    if (so.part_bytes < ((uint64_t)5 << 20) || so.multipart_bytes < so.part_bytes) {
        sl_error_set(err, SL_EINVAL, NULL,
                     "part_bytes %" PRIu64 " is under S3's 5 MiB, or multipart_bytes %" PRIu64
                     " under it",
                     so.part_bytes, so.multipart_bytes);
        return NULL;
    }
    struct sl_allocator alloc = ho.alloc != NULL ? *ho.alloc : sl_allocator_default();
    struct s3_ext *x = sl_alloc_zeroed(&alloc, 1, sizeof(*x), 0);
    if (x == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory opening %s", url);
        return NULL;
    }
    x->alloc = alloc;
    x->read_only = so.read_only;
    x->multipart_bytes = so.multipart_bytes;
    x->part_bytes = so.part_bytes;
    x->never = so.conditional == SL_S3_CONDITIONAL_NEVER;
    x->conditional = so.conditional == SL_S3_CONDITIONAL_ALWAYS  ? 1
                     : so.conditional == SL_S3_CONDITIONAL_NEVER ? 0
                                                                 : -1;
    pthread_mutex_init(&x->probe_lock, NULL);
    pthread_mutex_init(&x->seen_lock, NULL);
    pthread_mutex_init(&x->snap_lock, NULL);
    /* Without memory for these, writes of keys not read are unconditional. */
    x->seen = sl_alloc_zeroed(&alloc, S3_SEEN_BUCKETS, sizeof(*x->seen), 0);
    x->listed = sl_alloc_zeroed(&alloc, S3_LISTED_MAX, sizeof(*x->listed), 0);
    x->sig = SL__S3_SIGNATURE_INIT;
    struct sl__s3_config_opts co = {
        .profile = so.profile, .anonymous = so.anonymous, .alloc = &alloc};
    struct sl_error e = SL_ERROR_INIT;
    sl_status st = sl__s3_config_resolve(&co, &x->cfg, &e);
    const char *endpoint = so.endpoint != NULL ? so.endpoint : x->cfg.endpoint;
    const char *region = so.region != NULL ? so.region : x->cfg.region;
    if (st == SL_OK)
        st = sl__s3_location_parse(url, endpoint, region, x->cfg.addressing, &x->loc, &e);
    if (st != SL_OK) {
        sl_error_set(err, st, NULL, "cannot open %s: %s", url, e.text);
        ext_free(x);
        return NULL;
    }
    if (so.region != NULL) { /* sign with the region asked */
        char *r = sl_strdup(&alloc, so.region);
        if (r == NULL) {
            sl_error_set(err, SL_ENOMEM, NULL, "out of memory opening %s", url);
            ext_free(x);
            return NULL;
        }
        sl_free(&alloc, x->cfg.region, strlen(x->cfg.region) + 1);
        x->cfg.region = r;
    }
    struct sl__engine_opts eo = {.window = ho.io_concurrency,
                                 .max_attempts = ho.max_attempts,
                                 .backoff_first_s = ho.backoff_first_s,
                                 .backoff_cap_s = ho.backoff_cap_s,
                                 .deadline_s = ho.request_deadline_s,
                                 .connect_timeout_s = ho.connect_timeout_s,
                                 .low_speed_bytes = ho.low_speed_bytes,
                                 .low_speed_s = ho.low_speed_s,
                                 .missing_on_403 = ho.missing_on_403,
                                 .s3_errors = true,
                                 .key_id = x->cfg.anonymous ? NULL : x->cfg.access_key,
                                 .user_agent = "sluice",
                                 .sign = x->cfg.anonymous ? NULL : s3_sign,
                                 .sign_ctx = x};
    sl_store *s = sl__remote_open_curl(&s3_vtable, x->loc.base_url, &eo, ho.prefetch_bytes, &alloc,
                                       x, ext_free, s3_seen, err);
    if (s == NULL)
        ext_free(x);
    return s;
}
