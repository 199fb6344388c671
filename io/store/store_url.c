/* SPDX-License-Identifier: MIT */
/*
 * Opening a store by URL: the scheme chooses the store (http and https:
 * the HTTP store; file and plain paths: the filesystem store), and remote
 * counters for any store.  Without libcurl the HTTP store says so.
 */
#include <string.h>
#include <strings.h>

#include <sluice/remote.h>

#include "store_internal.h"

sl_store *
sl_store_open_url(const char *text, const struct sl_url_store_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct sl_url_store_opts o = opts != NULL ? *opts : SL_URL_STORE_OPTS_DEFAULT;
    if (text == NULL || text[0] == '\0') {
        sl_error_set(err, SL_EINVAL, NULL, "empty path or URL");
        return NULL;
    }
    if (strncasecmp(text, "s3://", 5) == 0)
        return sl_store_open_s3(text, &o.http, &o.s3, err);
    if (sl_url_is_remote(text))
        return sl_store_open_http(text, &o.http, err);
    char scheme[16];
    if (!sl__url_scheme(text, scheme, sizeof(scheme)))
        return sl_store_open_fs(text, &o.fs, err);
    if (strcasecmp(scheme, "file") == 0) {
        const char *path = text + 7;
        if (path[0] != '/') {
            sl_error_set(err, SL_EINVAL, NULL,
                         "\"%s\": a file:// URL needs an absolute path (file:///data/a.zarr)",
                         text);
            return NULL;
        }
        return sl_store_open_fs(path, &o.fs, err);
    }
    sl_error_set(err, SL_EUNSUPPORTED, NULL,
                 "\"%s\": the %s:// scheme is not supported (http://, https://, file:// and "
                 "paths are)",
                 text, scheme);
    return NULL;
}

void
sl_store_get_remote_stats(const sl_store *s, struct sl_remote_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (s != NULL && s->vt->remote_stats != NULL)
        s->vt->remote_stats(s, out);
}

sl_store_conditional
sl_store_conditional_writes(const sl_store *s)
{
    if (s == NULL || s->vt->conditional_writes == NULL)
        return SL_STORE_CONDITIONAL_NOT_APPLICABLE;
    return s->vt->conditional_writes(s);
}

void
sl_http_store_opts_fit_budget(struct sl_http_store_opts *o, uint64_t budget)
{
    if (o == NULL || budget == 0)
        return;
    uint64_t share = budget / 4;
    if (share < ((uint64_t)1 << 20))
        share = (uint64_t)1 << 20;
    if (share < o->prefetch_bytes)
        o->prefetch_bytes = share;
}

#ifndef SL_HAVE_CURL
sl_store *
sl_store_open_s3(const char *url, const struct sl_http_store_opts *http,
                 const struct sl_s3_store_opts *s3, struct sl_error *err)
{
    (void)http, (void)s3;
    sl_error_set(err, SL_EUNSUPPORTED, NULL,
                 "cannot open %s: this sluice was built without libcurl (install "
                 "libcurl4-openssl-dev and rebuild)",
                 url != NULL ? url : "(null)");
    return NULL;
}

sl_store *
sl_store_open_http(const char *url, const struct sl_http_store_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    (void)opts;
    sl_error_set(err, SL_EUNSUPPORTED, NULL,
                 "cannot open %s: this sluice was built without libcurl (install "
                 "libcurl4-openssl-dev and rebuild)",
                 url != NULL ? url : "(null)");
    return NULL;
}

sl_store *
sl_store_open_http_mapped(sl_store_url_fn *url_of, void *ctx, const struct sl_http_store_opts *opts,
                          struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    (void)url_of, (void)ctx, (void)opts;
    sl_error_set(err, SL_EUNSUPPORTED, NULL,
                 "cannot open a mapped HTTP store: this sluice was built without libcurl");
    return NULL;
}

bool
sl__http_url_for(const sl_store *s, const char *key, char *out, size_t size)
{
    (void)s;
    (void)key;
    (void)out;
    (void)size;
    return false;
}
#endif
