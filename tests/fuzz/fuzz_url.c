/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: URLs.  The input is a URL, optionally NUL and a key.
 * sl_url_is_remote must agree with the rule stated independently (http://
 * or https://, any case); sl_store_open_url and sl_store_open_http either
 * give a store or NULL with a status and a message (opening does no I/O:
 * plain paths and file:// URLs, which open the filesystem store, are not
 * passed to sl_store_open_url); and for an opened HTTP store the URL of a
 * valid key (sl__http_url_for, what a read would request, built without a
 * request) is the base URL without its query or fragment, "/", the key
 * percent-encoded so that it decodes back to exactly the key, then the
 * query: no key can reach another object or smuggle a query, fragment or
 * space into the request.  Writes, deletes and listings of the store fail
 * without I/O.
 */
#include <ctype.h>
#include <strings.h>

#include <sluice/remote.h>
#include <sluice/store.h>

#include "fuzz.h"
#include "store_internal.h"

/* The rules, written from remote.h rather than from url.c. */
static bool
oracle_http(const char *s)
{
    return strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0;
}

/* s3:// also counts as remote; the fuzzer opens it only anonymously and
 * read-only, and asks it nothing that would send a request. */
static bool
oracle_s3(const char *s)
{
    return strncasecmp(s, "s3://", 5) == 0;
}

static bool
oracle_remote(const char *s)
{
    return oracle_http(s) || oracle_s3(s);
}

/* "scheme://" other than file://, which sl_store_open_url refuses unopened
 * (a scheme of 16 characters or more is not one: the text is a path). */
static bool
oracle_other_scheme(const char *s)
{
    size_t n = 0;
    while (isalnum((unsigned char)s[n]) || s[n] == '+' || s[n] == '.' || s[n] == '-')
        n++;
    return n > 0 && n < 16 && strncmp(s + n, "://", 3) == 0 &&
           !(n == 4 && strncasecmp(s, "file", 4) == 0);
}

static int
hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The URL of `key` in store `st` opened on `url`. */
static void
check_key_url(sl_store *st, const char *url, const char *key)
{
    struct sl_error err = SL_ERROR_INIT;
    if (sl__key_check(key, strlen(key), &err) != SL_OK)
        return;
    static char out[8192];
    if (!sl__http_url_for(st, key, out, sizeof(out)))
        return; /* too long: refused, never truncated */
    size_t root_n = strcspn(url, "?#"), q_n = 0;
    if (url[root_n] == '?')
        q_n = strcspn(url + root_n, "#");
    const char *query = url + root_n;
    while (root_n > 0 && url[root_n - 1] == '/')
        root_n--;
    FUZZ_CHECK(strncmp(out, url, root_n) == 0 && out[root_n] == '/',
               "URL \"%s\" of key \"%s\" does not start with the base of \"%s\"", out, key, url);
    size_t len = strlen(out);
    FUZZ_CHECK(len >= root_n + 1 + q_n && memcmp(out + len - q_n, query, q_n) == 0,
               "URL \"%s\" does not end in the query of \"%s\"", out, url);
    /* The encoded key: unreserved characters, '/' and %XX only, decoding to the key. */
    const char *p = out + root_n + 1, *end = out + len - q_n;
    size_t k = 0;
    while (p < end) {
        int c = (unsigned char)*p;
        if (c == '%') {
            int hi = p + 3 <= end ? hex_value(p[1]) : -1;
            int lo = hi >= 0 ? hex_value(p[2]) : -1;
            FUZZ_CHECK(hi >= 0 && lo >= 0, "bad escape in \"%s\"", out);
            c = hi * 16 + lo;
            p += 3;
        } else {
            FUZZ_CHECK(isalnum(c) || strchr("-._~/", c) != NULL,
                       "'%c' (0x%02x) left unencoded in \"%s\"", c, c, out);
            p++;
        }
        FUZZ_CHECK(key[k] != '\0' && (unsigned char)key[k] == c,
                   "URL \"%s\" decodes to another key than \"%s\" at byte %zu", out, key, k);
        k++;
    }
    FUZZ_CHECK(key[k] == '\0', "URL \"%s\" holds %zu of the %zu bytes of key \"%s\"", out, k,
               strlen(key), key);
}

/* A store opened on `url` is read-only and cannot list; none of this does I/O. */
static void
check_store(sl_store *st, const char *url, const char *key)
{
    char name[512];
    sl_store_name(st, key, name, sizeof(name));
    struct sl_error err = SL_ERROR_INIT;
    sl_status s = sl_store_set(st, "k", "x", 1, &err);
    fuzz_check_error(s, &err, "sl_store_set");
    FUZZ_CHECK(s == SL_EACCES, "set on an HTTP store: %s", sl_status_name(s));
    err = SL_ERROR_INIT;
    s = sl_store_list(st, "", NULL, NULL, &err);
    fuzz_check_error(s, &err, "sl_store_list");
    FUZZ_CHECK(s != SL_OK, "an HTTP store listed");
    check_key_url(st, url, key);
}

/* Open `url` with `open_url` (sl_store_open_url) or sl_store_open_http. */
static void
check_open(const char *url, const char *key, bool open_url)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_url_store_opts o = SL_URL_STORE_OPTS_DEFAULT;
    o.http.io_concurrency = 1;
    o.s3.anonymous = true;
    o.s3.read_only = true;
    o.s3.region = "us-east-1";
    sl_store *st =
        open_url ? sl_store_open_url(url, &o, &err) : sl_store_open_http(url, &o.http, &err);
    const char *what = open_url ? "sl_store_open_url" : "sl_store_open_http";
    if (st == NULL) {
        fuzz_check_error(err.code, &err, what);
        FUZZ_CHECK(err.code != SL_OK, "%s gave no store and no error", what);
        if (!(open_url ? oracle_remote(url) : oracle_http(url)))
            FUZZ_CHECK(err.code == (open_url && url[0] != '\0' ? SL_EUNSUPPORTED : SL_EINVAL),
                       "%s(\"%s\"): %s", what, url, sl_status_name(err.code));
        else
            FUZZ_CHECK(err.code == SL_EUNSUPPORTED || err.code == SL_ENOMEM ||
                           err.code == SL_EINVAL || err.code == SL_EIO,
                       "%s(\"%s\"): %s", what, url, sl_status_name(err.code));
        return;
    }
    FUZZ_CHECK(open_url ? oracle_remote(url) : oracle_http(url), "%s(\"%s\") opened a store", what,
               url);
    if (oracle_s3(url)) { /* names its keys; anything more would send requests */
        char name[512];
        sl_store_name(st, key, name, sizeof(name));
        FUZZ_CHECK(strcmp(sl_store_kind(st), "s3") == 0, "s3 URL opened a %s store",
                   sl_store_kind(st));
        sl_store_unref(st);
        return;
    }
    check_store(st, url, key);
    sl_store_unref(st);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *url = fuzz_strndup(data, size);
    size_t n = strlen(url);
    char *key = fuzz_strndup(n < size ? data + n + 1 : data + n, n < size ? size - n - 1 : 0);
    FUZZ_CHECK(sl_url_is_remote(url) == oracle_remote(url), "sl_url_is_remote(\"%s\") is %d", url,
               sl_url_is_remote(url));
    check_open(url, key, false);
    if (url[0] == '\0' || oracle_remote(url) || oracle_other_scheme(url))
        check_open(url, key, true);
    free(url);
    free(key);
    return 0;
}
