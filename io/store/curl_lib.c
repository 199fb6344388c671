/* SPDX-License-Identifier: MIT */
/*
 * libcurl loaded on first use (curl_lib.h).
 *
 * DESIGN: one dlopen for the process, under pthread_once; the library is
 * never closed (libcurl keeps global state, and engines of later stores
 * reuse it).  The sonames tried are libcurl's ABI 4, which every libcurl
 * since 7.16 has kept: Debian's OpenSSL build first, then its GnuTLS one.
 * Each function is looked up by name and checked, so a library without one
 * is refused with its name, not called through NULL.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "curl_lib.h"

/* The libraries tried, in order. */
static const char *const curl_sonames[] = {"libcurl.so.4", "libcurl-gnutls.so.4"};

struct sl__curl sl__curl_fn;
static bool curl_ready;
static char curl_why[512]; /* why loading failed, when it did */

/* Look up `name` in `lib` into `*slot`; false (and curl_why) when absent. */
static bool
curl_sym(void *lib, const char *soname, const char *name, void *slot)
{
    void *p = dlsym(lib, name);
    if (p == NULL) {
        snprintf(curl_why, sizeof curl_why, "%s has no function %s", soname, name);
        return false;
    }
    memcpy(slot, &p, sizeof p); /* a data pointer's bits into a function pointer */
    return true;
}

static void
curl_open(void)
{
    void *lib = NULL;
    const char *soname = NULL;
    char tried[sizeof curl_why] = "";
    for (size_t i = 0; i < sizeof curl_sonames / sizeof curl_sonames[0] && lib == NULL; i++) {
        soname = curl_sonames[i];
        lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            const char *e = dlerror();
            size_t used = strlen(tried);
            snprintf(tried + used, sizeof tried - used, "%s%s", used > 0 ? "; " : "",
                     e != NULL ? e : soname);
        }
    }
    if (lib == NULL) {
        snprintf(curl_why, sizeof curl_why, "%s", tried);
        return;
    }
    struct sl__curl *t = &sl__curl_fn;
    /* clang-format off */
    bool ok = curl_sym(lib, soname, "curl_global_init", &t->global_init)
        && curl_sym(lib, soname, "curl_easy_init", &t->easy_init)
        && curl_sym(lib, soname, "curl_easy_reset", &t->easy_reset)
        && curl_sym(lib, soname, "curl_easy_cleanup", &t->easy_cleanup)
        && curl_sym(lib, soname, "curl_easy_setopt", &t->easy_setopt)
        && curl_sym(lib, soname, "curl_easy_getinfo", &t->easy_getinfo)
        && curl_sym(lib, soname, "curl_easy_strerror", &t->easy_strerror)
        && curl_sym(lib, soname, "curl_slist_append", &t->slist_append)
        && curl_sym(lib, soname, "curl_slist_free_all", &t->slist_free_all)
        && curl_sym(lib, soname, "curl_multi_init", &t->multi_init)
        && curl_sym(lib, soname, "curl_multi_setopt", &t->multi_setopt)
        && curl_sym(lib, soname, "curl_multi_add_handle", &t->multi_add_handle)
        && curl_sym(lib, soname, "curl_multi_remove_handle", &t->multi_remove_handle)
        && curl_sym(lib, soname, "curl_multi_perform", &t->multi_perform)
        && curl_sym(lib, soname, "curl_multi_poll", &t->multi_poll)
        && curl_sym(lib, soname, "curl_multi_wakeup", &t->multi_wakeup)
        && curl_sym(lib, soname, "curl_multi_info_read", &t->multi_info_read)
        && curl_sym(lib, soname, "curl_multi_cleanup", &t->multi_cleanup);
    /* clang-format on */
    if (!ok)
        return; /* curl_why names the missing function; the library stays open */
    const CURLcode rc = t->global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(curl_why, sizeof curl_why, "%s: curl_global_init failed (code %d)", soname,
                 (int)rc);
        return;
    }
    curl_ready = true;
}

const struct sl__curl *
sl__curl_load(struct sl_error *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, curl_open);
    if (!curl_ready) {
        sl_error_set(err, SL_EUNSUPPORTED, NULL,
                     "remote stores need libcurl, which cannot be loaded: %s", curl_why);
        return NULL;
    }
    return &sl__curl_fn;
}
