/* SPDX-License-Identifier: MIT */
/*
 * What a path or URL names: its scheme, and whether sluice reads it
 * remotely.  Below both the URL opener and the HTTP store.
 */
#include <string.h>
#include <strings.h>

#include <sluice/remote.h>

#include "store_internal.h"

bool
sl_url_is_remote(const char *text)
{
    return text != NULL &&
           (strncasecmp(text, "http://", 7) == 0 || strncasecmp(text, "https://", 8) == 0);
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
