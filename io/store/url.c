/* SPDX-License-Identifier: MIT */
/*
 * What a path or URL names: its scheme, and whether sluice reads it
 * remotely.  Below both the URL opener and the HTTP store.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sluice/remote.h>

#include "store_internal.h"

bool
sl_url_is_remote(const char *text)
{
    return text != NULL &&
           (strncasecmp(text, "http://", 7) == 0 || strncasecmp(text, "https://", 8) == 0 ||
            strncasecmp(text, "s3://", 5) == 0);
}

bool
sl_url_is_s3(const char *text)
{
    return text != NULL && strncasecmp(text, "s3://", 5) == 0;
}

/* The length of s3:// URL `u` without its trailing slashes. */
static size_t
s3_url_trimmed(const char *u)
{
    size_t n = strlen(u);
    while (n > 5 && u[n - 1] == '/')
        n--;
    return n;
}

sl_fs_overlap
sl_s3_url_overlap(const char *a, const char *b)
{
    if (!sl_url_is_s3(a) || !sl_url_is_s3(b))
        return SL_FS_APART;
    size_t na = s3_url_trimmed(a), nb = s3_url_trimmed(b);
    size_t n = na < nb ? na : nb;
    if (strncmp(a + 5, b + 5, n - 5) != 0)
        return SL_FS_APART;
    if (na == nb)
        return SL_FS_SAME;
    if (na < nb)
        return b[na] == '/' ? SL_FS_CONTAINS : SL_FS_APART;
    return a[nb] == '/' ? SL_FS_INSIDE : SL_FS_APART;
}

/* see store_internal.h: the scheme of `text` ("s3" for "s3://b/k"), in `out`; false for none. */
bool
sl__url_scheme(const char *text, char *out, size_t size)
{
    size_t n = strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
    if (n == 0 || n >= size || strncmp(text + n, "://", 3) != 0)
        return false;
    memcpy(out, text, n);
    out[n] = '\0';
    return true;
}

/* Whether `c` may be part of a host name or an IPv4 address. */
static bool
host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

bool
sl__url_check(const char *url, struct sl_error *err)
{
    const char *p = strstr(url, "://");
    if (p == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "\"%s\" is not a URL", url) == SL_OK;
    p += 3;
    const char *at = strpbrk(p, "@/?#");
    if (at != NULL && *at == '@')
        p = at + 1; /* user information: not checked */
    size_t n = 0;
    if (*p == '[') { /* an IPv6 literal */
        const char *close = strchr(p, ']');
        if (close == NULL || close == p + 1)
            return sl_error_set(err, SL_EINVAL, NULL, "\"%s\": an unclosed IPv6 host", url) ==
                   SL_OK;
        n = (size_t)(close - p) + 1;
    } else {
        while (host_char(p[n]))
            n++;
    }
    if (n == 0)
        return sl_error_set(err, SL_EINVAL, NULL, "\"%s\" names no host", url) == SL_OK;
    const char *q = p + n;
    if (*q == ':') {
        size_t digits = strspn(q + 1, "0123456789");
        long port = digits > 0 && digits <= 5 ? strtol(q + 1, NULL, 10) : 0;
        if (port < 1 || port > 65535)
            return sl_error_set(err, SL_EINVAL, NULL, "\"%s\": a port must be 1 to 65535", url) ==
                   SL_OK;
        q += 1 + digits;
    }
    if (*q != '\0' && *q != '/' && *q != '?' && *q != '#')
        return sl_error_set(err, SL_EINVAL, NULL, "\"%s\": \"%c\" cannot follow the host", url,
                            *q) == SL_OK;
    for (const char *c = url; *c != '\0'; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "\"%s\": a URL holds no spaces or control characters",
                                url) == SL_OK;
    return true;
}
