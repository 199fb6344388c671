/* SPDX-License-Identifier: MIT */
/*
 * libcurl, loaded when the first remote store starts its engine rather
 * than when the program starts.  Linked directly, libcurl brings some
 * thirty libraries (TLS, Kerberos, LDAP, SSH, IDN, ...) into every process
 * that uses libsluice, about 12 ms of start-up on a small machine, paid by
 * every local run that never opens a URL.  The engine (engine.c) calls
 * libcurl only through this table.  Private to io/store.
 */
#ifndef SL_CURL_LIB_H
#define SL_CURL_LIB_H

#include <curl/curl.h>

#include <sluice/error.h>

/* The libcurl functions the engine calls, by their names less "curl_". */
struct sl__curl {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_reset)(CURL *c);
    void (*easy_cleanup)(CURL *c);
    CURLcode (*easy_setopt)(CURL *c, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
    void (*slist_free_all)(struct curl_slist *list);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *m, CURLMoption option, ...);
    CURLMcode (*multi_add_handle)(CURLM *m, CURL *c);
    CURLMcode (*multi_remove_handle)(CURLM *m, CURL *c);
    CURLMcode (*multi_perform)(CURLM *m, int *running);
    CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd extra_fds[], unsigned int n_extra,
                            int timeout_ms, int *n_fds);
    CURLMcode (*multi_wakeup)(CURLM *m);
    CURLMsg *(*multi_info_read)(CURLM *m, int *msgs_in_queue);
    CURLMcode (*multi_cleanup)(CURLM *m);
};

/* The table itself, for calls as `sl__curl_fn.easy_init()`: filled once,
 * by the first sl__curl_load, and only read after it returned non-NULL. */
extern struct sl__curl sl__curl_fn;

/*
 * libcurl's functions, loaded (and curl_global_init called) on the first
 * call; NULL with SL_EUNSUPPORTED naming the library and why it could not
 * be loaded.  Later calls give the same answer.
 * Thread-safety: any thread.
 */
const struct sl__curl *sl__curl_load(struct sl_error *err);

#endif
