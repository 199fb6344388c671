/* SPDX-License-Identifier: MIT */
/*
 * Where the requests for "s3://bucket/prefix" go: bucket name rules,
 * virtual-hosted or path-style addressing on AWS and on other endpoints
 * (MinIO, Ceph, s3rver), and the URL and signed path of each object.
 * Paths are built encoded once, with sl__s3_uri_encode, so the URL sent
 * and the path signed are the same bytes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core_internal.h"
#include "s3_internal.h"
#include "store_internal.h"

static bool
url_is_lower_or_digit(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Four dot-separated groups of digits, like "192.168.5.4". */
static bool
url_looks_like_ipv4(const char *s)
{
    int groups = 0;
    while (*s != '\0') {
        size_t d = strspn(s, "0123456789");
        if (d == 0 || d > 3)
            return false;
        groups++;
        s += d;
        if (*s == '.')
            s++;
        else if (*s != '\0')
            return false;
    }
    return groups == 4;
}

static bool
url_ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

sl_status
sl__s3_bucket_check(const char *bucket, const char *url, struct sl_error *err)
{
    static const char *const prefixes[] = {"xn--", "sthree-", "amzn-s3-demo-"};
    static const char *const suffixes[] = {"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"};
    size_t n = strlen(bucket);
    if (n < 3 || n > 63)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "\"%s\": bucket name \"%s\" has %zu characters; S3 wants 3 to 63", url,
                            bucket, n);
    for (size_t i = 0; i < n; i++) {
        char c = bucket[i];
        if (!url_is_lower_or_digit(c) && c != '.' && c != '-')
            return sl_error_set(err, SL_EINVAL, NULL,
                                "\"%s\": bucket name \"%s\" holds '%c' at %zu; S3 bucket names are "
                                "lowercase letters, digits, '.' and '-'",
                                url, bucket, (unsigned char)c >= 0x20 && c != 0x7f ? c : '?', i);
        bool label_edge = i == 0 || i == n - 1 || bucket[i - 1] == '.' || bucket[i + 1] == '.';
        if (label_edge && !url_is_lower_or_digit(c) && !(c == '.' && i > 0 && i < n - 1))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "\"%s\": bucket name \"%s\" must start and end, and each part "
                                "between periods must start and end, with a letter or digit",
                                url, bucket);
        if (c == '.' && bucket[i + 1] == '.')
            return sl_error_set(err, SL_EINVAL, NULL,
                                "\"%s\": bucket name \"%s\" has two adjacent periods", url, bucket);
    }
    if (url_looks_like_ipv4(bucket))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "\"%s\": bucket name \"%s\" is formatted as an IP address", url,
                            bucket);
    for (size_t i = 0; i < SL_ARRAY_LEN(prefixes); i++)
        if (strncmp(bucket, prefixes[i], strlen(prefixes[i])) == 0)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "\"%s\": bucket name \"%s\" starts with \"%s\", which S3 reserves",
                                url, bucket, prefixes[i]);
    for (size_t i = 0; i < SL_ARRAY_LEN(suffixes); i++)
        if (url_ends_with(bucket, n, suffixes[i]))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "\"%s\": bucket name \"%s\" ends with \"%s\", which S3 reserves",
                                url, bucket, suffixes[i]);
    return SL_OK;
}

/* The prefix after "s3://bucket/": components neither empty nor "." or
 * "..", no control characters, trailing '/' dropped. */
static sl_status
url_prefix_parse(const char *url, const char *p, struct sl__s3_location *out, struct sl_error *err)
{
    size_t n = strlen(p);
    while (n > 0 && p[n - 1] == '/')
        n--;
    if (n >= sizeof(out->prefix))
        return sl_error_set(err, SL_EINVAL, NULL, "\"%s\": the key prefix exceeds %zu bytes", url,
                            sizeof(out->prefix) - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "\"%s\": a control character (0x%02x) in the key prefix", url,
                                (unsigned char)p[i]);
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k < n && p[k] != '/')
            k++;
        size_t len = k - i;
        if (len == 0 || (len == 1 && p[i] == '.') || (len == 2 && p[i] == '.' && p[i + 1] == '.'))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "\"%s\": the key prefix has an empty, \".\" or \"..\" component",
                                url);
        i = k + 1;
    }
    memcpy(out->prefix, p, n);
    out->prefix[n] = '\0';
    return SL_OK;
}

/* "s3://bucket[/prefix]" into the bucket and the prefix. */
static sl_status
url_s3_parse(const char *url, struct sl__s3_location *out, struct sl_error *err)
{
    if (strncasecmp(url, "s3://", 5) != 0)
        return sl_error_set(err, SL_EINVAL, NULL, "\"%s\" is not an s3:// URL", url);
    const char *b = url + 5;
    if (strpbrk(b, "?#") != NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "\"%s\": an s3:// URL has no query or fragment ('?' or '#')", url);
    size_t n = strcspn(b, "/");
    if (n >= sizeof(out->bucket))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "\"%s\": bucket name \"%.*s\" has %zu characters; S3 wants 3 to 63",
                            url, (int)(n < 80 ? n : 80), b, n);
    memcpy(out->bucket, b, n);
    out->bucket[n] = '\0';
    SL_TRY(sl__s3_bucket_check(out->bucket, url, err));
    return url_prefix_parse(url, b[n] == '/' ? b + n + 1 : b + n, out, err);
}

/* Copy printf-style text into `dst`; false when it does not fit. */
static bool url_fmt(char *dst, size_t size, const char *fmt, ...) SL_PRINTF(3, 4);

static bool
url_fmt(char *dst, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, size, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < size;
}

/* Place the bucket on AWS. */
static bool
url_place_aws(struct sl__s3_location *out, const char *region, enum sl__s3_addressing a)
{
    const char *domain = strncmp(region, "cn-", 3) == 0 ? "amazonaws.com.cn" : "amazonaws.com";
    /* A '.' in the name breaks the match with AWS's *.s3 TLS certificate. */
    out->path_style = a == SL__S3_ADDRESSING_PATH ||
                      (a == SL__S3_ADDRESSING_AUTO && strchr(out->bucket, '.') != NULL);
    if (out->path_style)
        return url_fmt(out->host, sizeof(out->host), "s3.%s.%s", region, domain) &&
               url_fmt(out->bucket_path, sizeof(out->bucket_path), "/%s", out->bucket);
    return url_fmt(out->host, sizeof(out->host), "%s.s3.%s.%s", out->bucket, region, domain) &&
           url_fmt(out->bucket_path, sizeof(out->bucket_path), "/");
}

static bool
url_is_hex_upper(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* An endpoint's path must already be encoded: it is sent and signed as it is. */
static bool
url_path_is_encoded(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '%' && i + 2 < n && url_is_hex_upper(p[i + 1]) && url_is_hex_upper(p[i + 2]))
            i += 2;
        else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   (c != '\0' && strchr("-._~/", c) != NULL)))
            return false;
    }
    return true;
}

/* Place the bucket on another endpoint: "http(s)://authority[/path]". */
static sl_status
url_place_endpoint(struct sl__s3_location *out, const char *url, const char *endpoint,
                   enum sl__s3_addressing a, struct sl_error *err)
{
    bool https = strncasecmp(endpoint, "https://", 8) == 0;
    struct sl_error why = SL_ERROR_INIT;
    if ((!https && strncasecmp(endpoint, "http://", 7) != 0) || !sl__url_check(endpoint, &why) ||
        strpbrk(endpoint, "?#@") != NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "\"%s\": endpoint \"%s\" is no http:// or https:// URL without user, "
                            "query or fragment%s%s",
                            url, endpoint, why.text[0] != '\0' ? ": " : "", why.text);
    const char *auth = endpoint + (https ? 8 : 7);
    size_t an = strcspn(auth, "/"), pn = strlen(auth + an);
    const char *path = auth + an;
    while (pn > 0 && path[pn - 1] == '/')
        pn--;
    if (!url_path_is_encoded(path, pn))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "\"%s\": endpoint \"%s\" has a path that is not URI-encoded", url,
                            endpoint);
    /* The Host header leaves out the scheme's default port, as clients send it. */
    size_t hn = an;
    const char *dflt = https ? ":443" : ":80";
    if (url_ends_with(auth, an, dflt))
        hn -= strlen(dflt);
    char host[256], epath[512];
    if (hn >= sizeof(host) || pn >= sizeof(epath))
        return sl_error_set(err, SL_EINVAL, NULL, "\"%s\": endpoint \"%s\" is too long", url,
                            endpoint);
    memcpy(host, auth, hn);
    host[hn] = '\0';
    memcpy(epath, path, pn);
    epath[pn] = '\0';
    out->path_style = a != SL__S3_ADDRESSING_VIRTUAL;
    bool ok =
        out->path_style
            ? url_fmt(out->host, sizeof(out->host), "%s", host) &&
                  url_fmt(out->bucket_path, sizeof(out->bucket_path), "%s/%s", epath, out->bucket)
            : url_fmt(out->host, sizeof(out->host), "%s.%s", out->bucket, host) &&
                  url_fmt(out->bucket_path, sizeof(out->bucket_path), "%s/", epath);
    ok = ok && url_fmt(out->origin, sizeof(out->origin), "%s%s", https ? "https://" : "http://",
                       out->host);
    return ok ? SL_OK
              : sl_error_set(err, SL_EINVAL, NULL, "\"%s\": the endpoint's URL is too long", url);
}

/* The path of the bucket's keys: bucket_path without a trailing '/'. */
static size_t
url_key_root_len(const struct sl__s3_location *loc)
{
    size_t n = strlen(loc->bucket_path);
    return n > 0 && loc->bucket_path[n - 1] == '/' ? n - 1 : n;
}

/* Append the encoded path of `key` (or of the prefix alone when `key` is
 * NULL) to `b`. */
static sl_status
url_path_append(const struct sl__s3_location *loc, const char *key, struct sl_buf *b,
                struct sl_error *err)
{
    SL_TRY(sl_buf_append(b, loc->bucket_path, url_key_root_len(loc), err));
    if (loc->prefix[0] != '\0') {
        SL_TRY(sl_buf_append(b, "/", 1, err));
        SL_TRY(sl__s3_uri_encode(b, loc->prefix, strlen(loc->prefix), true, err));
    }
    if (key == NULL)
        return SL_OK;
    SL_TRY(sl_buf_append(b, "/", 1, err));
    return sl__s3_uri_encode(b, key, strlen(key), true, err);
}

sl_status
sl__s3_location_parse(const char *url, const char *endpoint, const char *region,
                      enum sl__s3_addressing addressing, struct sl__s3_location *out,
                      struct sl_error *err)
{
    memset(out, 0, sizeof(*out));
    SL_TRY(url_s3_parse(url, out, err));
    size_t rn = region != NULL ? strspn(region, "abcdefghijklmnopqrstuvwxyz0123456789-") : 0;
    if (rn == 0 || rn > 63 || region[rn] != '\0')
        return sl_error_set(err, SL_EINVAL, NULL,
                            "\"%s\": region \"%s\" is not lowercase letters, digits and '-'", url,
                            region != NULL ? region : "");
    if (endpoint == NULL) {
        if (!url_place_aws(out, region, addressing) ||
            !url_fmt(out->origin, sizeof(out->origin), "https://%s", out->host))
            return sl_error_set(err, SL_EINVAL, NULL, "\"%s\": the bucket's URL is too long", url);
    } else {
        SL_TRY(url_place_endpoint(out, url, endpoint, addressing, err));
    }
    struct sl_buf path = SL_BUF_INIT;
    sl_status st = url_path_append(out, NULL, &path, err);
    if (st == SL_OK)
        st = sl_buf_append(&path, "", 1, err);
    if (st == SL_OK && !url_fmt(out->base_url, sizeof(out->base_url), "%s%s", out->origin,
                                (const char *)path.data))
        st = sl_error_set(err, SL_EINVAL, NULL, "\"%s\": the URL of its prefix is too long", url);
    sl_buf_fini(&path);
    return st;
}

sl_status
sl__s3_object_url(const struct sl__s3_location *loc, const char *key, struct sl_buf *url,
                  struct sl_buf *path, struct sl_error *err)
{
    if (key == NULL || key[0] == '\0')
        return sl_error_set(err, SL_EINVAL, NULL, "%s: an object needs a key", loc->base_url);
    if (url != NULL) {
        url->size = 0;
        SL_TRY(sl_buf_append(url, loc->origin, strlen(loc->origin), err));
        SL_TRY(url_path_append(loc, key, url, err));
        SL_TRY(sl_buf_append(url, "", 1, err));
        url->size--;
    }
    if (path == NULL)
        return SL_OK;
    path->size = 0;
    if (url != NULL) {
        size_t at = strlen(loc->origin);
        SL_TRY(sl_buf_append(path, url->data + at, url->size - at + 1, err));
    } else {
        SL_TRY(url_path_append(loc, key, path, err));
        SL_TRY(sl_buf_append(path, "", 1, err));
    }
    path->size--;
    return SL_OK;
}
