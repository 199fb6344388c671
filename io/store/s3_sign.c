/* SPDX-License-Identifier: MIT */
/*
 * AWS Signature Version 4, header form, as the S3 store signs its
 * requests: the canonical request, the string to sign, the signing key and
 * the Authorization value ("Signature Calculations for the Authorization
 * Header" in Amazon S3's API reference).  Pure: the time and the
 * credentials are arguments, so the tests replay AWS's published examples
 * byte for byte.
 *
 * DESIGN: query parameters are sorted by their encoded forms and headers
 * by their lowercased names, so both are first written to a scratch
 * buffer; entries keep offsets into it (it moves when it grows).  Sorting
 * is by insertion: stable, so a repeated header keeps its values in the
 * order given, and enough for the few dozen entries a request may have.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core_internal.h"
#include "s3_internal.h"

/* A parameter or header written to the scratch buffer. */
struct sign_entry {
    size_t name, name_len;   /* offset and length in scratch */
    size_t value, value_len; /* offset and length in scratch */
};

/* The headers signing sets itself, which a caller may not pass. */
static const char *const sign_own_headers[] = {"authorization", "host", "x-amz-content-sha256",
                                               "x-amz-date", "x-amz-security-token"};

static bool
sign_is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

static bool
sign_is_hex_upper(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* An HTTP token character (RFC 9110 tchar): what a header name is made of. */
static bool
sign_is_tchar(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Zero `n` bytes at `p` in a way the compiler keeps: they were derived
 * from a secret. */
static void
sign_wipe(void *p, size_t n)
{
    volatile uint8_t *v = p;
    for (size_t i = 0; v != NULL && i < n; i++)
        v[i] = 0;
}

static sl_status
sign_put(struct sl_buf *b, const char *s, size_t n, struct sl_error *err)
{
    return n == 0 ? SL_OK : sl_buf_append(b, s, n, err);
}

static sl_status
sign_puts(struct sl_buf *b, const char *s, struct sl_error *err)
{
    return sign_put(b, s, strlen(s), err);
}

/* NUL-terminate `b` without counting the NUL in its size. */
static sl_status
sign_terminate(struct sl_buf *b, struct sl_error *err)
{
    SL_TRY(sl_buf_append(b, "", 1, err));
    b->size--;
    return SL_OK;
}

sl_status
sl__s3_uri_encode(struct sl_buf *out, const char *s, size_t n, bool keep_slash,
                  struct sl_error *err)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t run = 0; /* bytes at s[i - run, i) that stay as they are */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (sign_is_unreserved(c) || (keep_slash && c == '/')) {
            run++;
            continue;
        }
        SL_TRY(sign_put(out, s + i - run, run, err));
        run = 0;
        char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
        SL_TRY(sl_buf_append(out, esc, 3, err));
    }
    return sign_put(out, s + n - run, run, err);
}

bool
sl__s3_amz_date(int64_t t, char out[SL__S3_AMZ_DATE_CHARS + 1])
{
    /* 9999-12-31T23:59:59Z: four-digit years only. */
    if (t < 0 || t > INT64_C(253402300799))
        return false;
    time_t tt = (time_t)t;
    struct tm tm;
    if (gmtime_r(&tt, &tm) == NULL)
        return false;
    snprintf(out, SL__S3_AMZ_DATE_CHARS + 1, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return true;
}

bool
sl__s3_signing_key(const char *secret, const char *date, const char *region, const char *service,
                   uint8_t key[SL_SHA256_BYTES])
{
    size_t n = strlen(secret);
    if (n > SL__S3_SECRET_MAX)
        return false;
    uint8_t k[4 + SL__S3_SECRET_MAX], a[SL_SHA256_BYTES], b[SL_SHA256_BYTES];
    memcpy(k, "AWS4", 4);
    memcpy(k + 4, secret, n);
    sl_hmac_sha256(k, 4 + n, date, strlen(date), a);
    sl_hmac_sha256(a, sizeof(a), region, strlen(region), b);
    sl_hmac_sha256(b, sizeof(b), service, strlen(service), a);
    sl_hmac_sha256(a, sizeof(a), "aws4_request", 12, key);
    sign_wipe(k, sizeof(k));
    sign_wipe(a, sizeof(a));
    sign_wipe(b, sizeof(b));
    return true;
}

/* ---- checking a request ---------------------------------------------------------------------- */

/* A short name of 1 to 63 letters, digits, '-' and '_' (region, service). */
static bool
sign_is_scope_part(const char *s)
{
    size_t n = s != NULL ? strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789-_")
                         : 0;
    return n > 0 && n < 64 && s[n] == '\0';
}

/* Printable ASCII without spaces (an access key, a host). */
static bool
sign_is_visible(const char *s)
{
    if (s == NULL || *s == '\0')
        return false;
    for (; *s != '\0'; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
            return false;
    return true;
}

/* A header value: no control characters but tab. */
static bool
sign_is_field_value(const char *s)
{
    for (; *s != '\0'; s++)
        if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
            return false;
    return true;
}

static bool
sign_is_payload_hash(const char *h)
{
    size_t hex = strspn(h, "0123456789abcdef");
    if (hex == SL_SHA256_HEX_CHARS && h[hex] == '\0')
        return true;
    /* UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, ... */
    size_t token = strspn(h, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-");
    return token > 0 && h[token] == '\0' && h[0] >= 'A' && h[0] <= 'Z';
}

/* The path: an encoded one must hold only unreserved characters, '/' and
 * %XX escapes with uppercase digits, as S3 compares it byte for byte. */
static sl_status
sign_check_path(const char *path, bool encoded, struct sl_error *err)
{
    if (path[0] != '\0' && path[0] != '/')
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: the path \"%s\" does not start "
                            "with '/'",
                            path);
    if (!encoded)
        return SL_OK;
    for (size_t i = 0; path[i] != '\0'; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c == '%' && sign_is_hex_upper((unsigned char)path[i + 1]) &&
            sign_is_hex_upper((unsigned char)path[i + 2])) {
            i += 2;
        } else if (!sign_is_unreserved(c) && c != '/') {
            return sl_error_set(err, SL_EINVAL, NULL,
                                "S3 signing: the encoded path \"%s\" holds '%c' (0x%02x) at "
                                "byte %zu: encode it with sl__s3_uri_encode",
                                path, c >= 0x20 && c < 0x7f ? c : '?', c, i);
        }
    }
    return SL_OK;
}

static sl_status
sign_check_headers(const struct sl__s3_request *req, struct sl_error *err)
{
    if (req->n_headers > SL__S3_MAX_HEADERS || (req->n_headers > 0 && req->headers == NULL))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: %zu headers to sign; at most %d, and a list",
                            req->n_headers, SL__S3_MAX_HEADERS);
    for (size_t i = 0; i < req->n_headers; i++) {
        const char *name = req->headers[i].name, *value = req->headers[i].value;
        if (name == NULL || *name == '\0' || value == NULL)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "S3 signing: header %zu has no name or no value", i);
        for (const char *p = name; *p != '\0'; p++)
            if (!sign_is_tchar((unsigned char)*p))
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "S3 signing: header name \"%s\" holds 0x%02x, which no "
                                    "header name may",
                                    name, (unsigned char)*p);
        for (size_t k = 0; k < SL_ARRAY_LEN(sign_own_headers); k++)
            if (strcasecmp(name, sign_own_headers[k]) == 0)
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "S3 signing: header \"%s\" is set by signing, not by the "
                                    "caller",
                                    name);
        if (!sign_is_field_value(value))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "S3 signing: the value of header \"%s\" holds a control "
                                "character (CR and LF included)",
                                name);
    }
    return SL_OK;
}

static sl_status
sign_check_creds(const struct sl__s3_creds *creds, struct sl_error *err)
{
    if (creds == NULL || !sign_is_visible(creds->access_key) || strchr(creds->access_key, '/'))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: the access key is missing or holds '/', a space or a "
                            "control character");
    if (creds->secret_key == NULL || *creds->secret_key == '\0')
        return sl_error_set(err, SL_EINVAL, NULL, "S3 signing: the secret access key is missing");
    if (strlen(creds->secret_key) > SL__S3_SECRET_MAX)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: the secret access key has %zu bytes; at most %d",
                            strlen(creds->secret_key), SL__S3_SECRET_MAX);
    if (creds->session_token != NULL &&
        (*creds->session_token == '\0' || !sign_is_field_value(creds->session_token)))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: the session token is empty or holds a control "
                            "character");
    return SL_OK;
}

static sl_status
sign_check(const struct sl__s3_request *req, const struct sl__s3_creds *creds, struct sl_error *err)
{
    if (req == NULL || req->method == NULL || req->method[0] == '\0' ||
        strspn(req->method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(req->method))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: the method must be uppercase letters, e.g. \"GET\"");
    if (!sign_is_visible(req->host))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: the host is missing or holds a space or a control "
                            "character");
    if (!sign_is_scope_part(req->region))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: the region \"%s\" is not 1 to 63 letters, digits, '-' "
                            "and '_'",
                            req->region != NULL ? req->region : "(null)");
    if (req->service != NULL && !sign_is_scope_part(req->service))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: the service \"%s\" is not 1 to 63 letters, digits, '-' "
                            "and '_'",
                            req->service);
    if (req->payload_hash != NULL && !sign_is_payload_hash(req->payload_hash))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: the payload hash \"%s\" is neither 64 lowercase hex "
                            "digits nor a token such as UNSIGNED-PAYLOAD",
                            req->payload_hash);
    if (req->n_params > SL__S3_MAX_PARAMS || (req->n_params > 0 && req->params == NULL))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "S3 signing: %zu query parameters; at most %d, and a list",
                            req->n_params, SL__S3_MAX_PARAMS);
    for (size_t i = 0; i < req->n_params; i++)
        if (req->params[i].name == NULL || req->params[i].name[0] == '\0')
            return sl_error_set(err, SL_EINVAL, NULL, "S3 signing: query parameter %zu has no name",
                                i);
    SL_TRY(sign_check_path(req->path != NULL ? req->path : "", req->path_encoded, err));
    SL_TRY(sign_check_headers(req, err));
    return sign_check_creds(creds, err);
}

/* ---- the canonical request ------------------------------------------------------------------- */

/* Compare entries by name, then (`by_value`) by value, as bytes. */
static int
sign_entry_cmp(const char *base, const struct sign_entry *a, const struct sign_entry *b,
               bool by_value)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(base + a->name, base + b->name, n);
    if (c != 0 || a->name_len != b->name_len)
        return c != 0 ? c : (a->name_len < b->name_len ? -1 : 1);
    if (!by_value)
        return 0;
    n = a->value_len < b->value_len ? a->value_len : b->value_len;
    c = memcmp(base + a->value, base + b->value, n);
    if (c != 0 || a->value_len == b->value_len)
        return c;
    return a->value_len < b->value_len ? -1 : 1;
}

/* Stable insertion sort of `n` entries. */
static void
sign_entries_sort(const char *base, struct sign_entry *e, size_t n, bool by_value)
{
    for (size_t i = 1; i < n; i++) {
        struct sign_entry x = e[i];
        size_t j = i;
        for (; j > 0 && sign_entry_cmp(base, &e[j - 1], &x, by_value) > 0; j--)
            e[j] = e[j - 1];
        e[j] = x;
    }
}

/* Write the query's encoded names and values to scratch. */
static sl_status
sign_params_encode(const struct sl__s3_request *req, struct sl_buf *scratch, struct sign_entry *e,
                   struct sl_error *err)
{
    for (size_t i = 0; i < req->n_params; i++) {
        const char *name = req->params[i].name, *value = req->params[i].value;
        e[i].name = scratch->size;
        SL_TRY(sl__s3_uri_encode(scratch, name, strlen(name), false, err));
        e[i].name_len = scratch->size - e[i].name;
        e[i].value = scratch->size;
        if (value != NULL)
            SL_TRY(sl__s3_uri_encode(scratch, value, strlen(value), false, err));
        e[i].value_len = scratch->size - e[i].value;
    }
    return SL_OK;
}

/* Write header `name` lowercased and `value` trimmed, inner runs of spaces
 * and tabs made one space, to scratch as entry `e`. */
static sl_status
sign_header_add(struct sl_buf *scratch, struct sign_entry *e, const char *name, const char *value,
                struct sl_error *err)
{
    e->name = scratch->size;
    for (const char *p = name; *p != '\0'; p++) {
        char c = (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a') : *p;
        SL_TRY(sl_buf_append(scratch, &c, 1, err));
    }
    e->name_len = scratch->size - e->name;
    e->value = scratch->size;
    bool blank = false;
    for (const char *p = value + strspn(value, " \t"); *p != '\0'; p++) {
        if (*p == ' ' || *p == '\t') {
            blank = true;
            continue;
        }
        if (blank)
            SL_TRY(sl_buf_append(scratch, " ", 1, err));
        blank = false;
        SL_TRY(sl_buf_append(scratch, p, 1, err));
    }
    e->value_len = scratch->size - e->value;
    return SL_OK;
}

/* Every header signed, sorted by name: the caller's and signing's own. */
static sl_status
sign_headers_collect(const struct sl__s3_request *req, const struct sl__s3_creds *creds,
                     const char *amz_date, struct sl_buf *scratch, struct sign_entry *e, size_t *n,
                     struct sl_error *err)
{
    size_t k = 0;
    SL_TRY(sign_header_add(scratch, &e[k++], "host", req->host, err));
    SL_TRY(sign_header_add(scratch, &e[k++], "x-amz-date", amz_date, err));
    if (!req->omit_content_sha256)
        SL_TRY(sign_header_add(scratch, &e[k++], "x-amz-content-sha256",
                               req->payload_hash != NULL ? req->payload_hash : SL__S3_EMPTY_SHA256,
                               err));
    if (creds->session_token != NULL)
        SL_TRY(
            sign_header_add(scratch, &e[k++], "x-amz-security-token", creds->session_token, err));
    for (size_t i = 0; i < req->n_headers; i++)
        SL_TRY(sign_header_add(scratch, &e[k++], req->headers[i].name, req->headers[i].value, err));
    sign_entries_sort((const char *)scratch->data, e, k, false);
    *n = k;
    return SL_OK;
}

/* Append the canonical headers ("name:value\n", values of a repeated name
 * joined by ','), then "\n", and fill the signed header list. */
static sl_status
sign_headers_write(struct sl__s3_signature *sig, const struct sign_entry *e, size_t n,
                   struct sl_error *err)
{
    const char *base = (const char *)sig->scratch.data;
    size_t list = 0;
    for (size_t i = 0; i < n; i++) {
        bool repeat = i > 0 && sign_entry_cmp(base, &e[i - 1], &e[i], false) == 0;
        if (repeat) {
            SL_TRY(sl_buf_append(&sig->canonical, ",", 1, err));
        } else {
            if (i > 0)
                SL_TRY(sl_buf_append(&sig->canonical, "\n", 1, err));
            SL_TRY(sign_put(&sig->canonical, base + e[i].name, e[i].name_len, err));
            SL_TRY(sl_buf_append(&sig->canonical, ":", 1, err));
            if (list + e[i].name_len + 2 > sizeof(sig->signed_headers))
                return sl_error_set(err, SL_EOVERFLOW, NULL,
                                    "S3 signing: the signed header names exceed %zu bytes",
                                    sizeof(sig->signed_headers) - 1);
            if (list > 0)
                sig->signed_headers[list++] = ';';
            memcpy(sig->signed_headers + list, base + e[i].name, e[i].name_len);
            list += e[i].name_len;
        }
        SL_TRY(sign_put(&sig->canonical, base + e[i].value, e[i].value_len, err));
    }
    sig->signed_headers[list] = '\0';
    return sl_buf_append(&sig->canonical, "\n\n", 2, err);
}

/* The canonical request of `req` into sig->canonical. */
static sl_status
sign_canonical(const struct sl__s3_request *req, const struct sl__s3_creds *creds,
               struct sl__s3_signature *sig, struct sl_error *err)
{
    struct sign_entry params[SL__S3_MAX_PARAMS], headers[SL__S3_MAX_HEADERS + 4];
    size_t n_headers = 0;
    SL_TRY(sign_params_encode(req, &sig->scratch, params, err));
    SL_TRY(
        sign_headers_collect(req, creds, sig->amz_date, &sig->scratch, headers, &n_headers, err));
    const char *base = (const char *)sig->scratch.data;
    sign_entries_sort(base, params, req->n_params, true);

    struct sl_buf *c = &sig->canonical;
    const char *path = req->path != NULL && req->path[0] != '\0' ? req->path : "/";
    SL_TRY(sign_puts(c, req->method, err));
    SL_TRY(sl_buf_append(c, "\n", 1, err));
    if (req->path_encoded)
        SL_TRY(sign_puts(c, path, err));
    else
        SL_TRY(sl__s3_uri_encode(c, path, strlen(path), true, err));
    SL_TRY(sl_buf_append(c, "\n", 1, err));
    for (size_t i = 0; i < req->n_params; i++) {
        if (i > 0)
            SL_TRY(sl_buf_append(c, "&", 1, err));
        SL_TRY(sign_put(c, base + params[i].name, params[i].name_len, err));
        SL_TRY(sl_buf_append(c, "=", 1, err));
        SL_TRY(sign_put(c, base + params[i].value, params[i].value_len, err));
    }
    SL_TRY(sl_buf_append(c, "\n", 1, err));
    SL_TRY(sign_headers_write(sig, headers, n_headers, err));
    SL_TRY(sign_puts(c, sig->signed_headers, err));
    SL_TRY(sl_buf_append(c, "\n", 1, err));
    SL_TRY(sign_puts(c, req->payload_hash != NULL ? req->payload_hash : SL__S3_EMPTY_SHA256, err));
    return sign_terminate(c, err);
}

/* The string to sign, the signature and the Authorization value. */
static sl_status
sign_finish(const struct sl__s3_request *req, const struct sl__s3_creds *creds,
            struct sl__s3_signature *sig, struct sl_error *err)
{
    const char *service = req->service != NULL ? req->service : "s3";
    char date[9], hex[SL_SHA256_HEX_CHARS + 1], scope[160];
    uint8_t digest[SL_SHA256_BYTES], key[SL_SHA256_BYTES];
    memcpy(date, sig->amz_date, 8);
    date[8] = '\0';
    snprintf(scope, sizeof(scope), "%s/%s/%s/aws4_request", date, req->region, service);
    sl_sha256(sig->canonical.data, sig->canonical.size, digest);
    sl_sha256_hex(digest, hex);
    SL_TRY(sign_puts(&sig->to_sign, "AWS4-HMAC-SHA256\n", err));
    SL_TRY(sign_puts(&sig->to_sign, sig->amz_date, err));
    SL_TRY(sl_buf_append(&sig->to_sign, "\n", 1, err));
    SL_TRY(sign_puts(&sig->to_sign, scope, err));
    SL_TRY(sl_buf_append(&sig->to_sign, "\n", 1, err));
    SL_TRY(sign_puts(&sig->to_sign, hex, err));
    SL_TRY(sign_terminate(&sig->to_sign, err));

    if (!sl__s3_signing_key(creds->secret_key, date, req->region, service, key))
        return sl_error_set(err, SL_EINVAL, NULL, "S3 signing: the secret access key is too long");
    sl_hmac_sha256(key, sizeof(key), sig->to_sign.data, sig->to_sign.size, digest);
    sign_wipe(key, sizeof(key));
    sl_sha256_hex(digest, sig->signature);
    int len = snprintf(sig->authorization, sizeof(sig->authorization),
                       "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                       creds->access_key, scope, sig->signed_headers, sig->signature);
    if (len < 0 || (size_t)len >= sizeof(sig->authorization))
        return sl_error_set(err, SL_EOVERFLOW, NULL,
                            "S3 signing: the Authorization value needs %d bytes; room for %zu", len,
                            sizeof(sig->authorization) - 1);
    return SL_OK;
}

static void
sign_reset(struct sl__s3_signature *sig)
{
    sig->amz_date[0] = '\0';
    sig->signature[0] = '\0';
    sig->authorization[0] = '\0';
    sig->signed_headers[0] = '\0';
    sig->canonical.size = 0;
    sig->to_sign.size = 0;
    sig->scratch.size = 0;
}

sl_status
sl__s3_sign(const struct sl__s3_request *req, const struct sl__s3_creds *creds,
            struct sl__s3_signature *sig, struct sl_error *err)
{
    sign_reset(sig);
    sl_status st = sign_check(req, creds, err);
    if (st == SL_OK && !sl__s3_amz_date(req->time, sig->amz_date))
        st = sl_error_set(err, SL_EINVAL, NULL,
                          "S3 signing: time %" PRId64 " is outside the years 1970 to 9999",
                          req->time);
    if (st == SL_OK)
        st = sign_canonical(req, creds, sig, err);
    if (st == SL_OK)
        st = sign_finish(req, creds, sig, err);
    if (st != SL_OK)
        sign_reset(sig);
    return st;
}

/* Zero `b`'s bytes (a canonical request may hold a session token) and free it. */
static void
sign_buf_wipe(struct sl_buf *b)
{
    sign_wipe(b->data, b->capacity);
    sl_buf_fini(b);
}

void
sl__s3_signature_fini(struct sl__s3_signature *sig)
{
    sign_buf_wipe(&sig->canonical);
    sign_buf_wipe(&sig->to_sign);
    sign_buf_wipe(&sig->scratch);
    *sig = SL__S3_SIGNATURE_INIT;
}
