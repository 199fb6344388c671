/* SPDX-License-Identifier: MIT */
/*
 * Loading plugins (<sluice/plugin.h>): open a shared library, check the ABI
 * version it was built for before running any of its functions, let its
 * sl_plugin_register stage its operations, check them, and add them to the
 * op registry all together.  Refusals name the library and what is wrong.
 *
 * DESIGN: one process-wide table of loaded libraries, guarded by a mutex
 * that also serializes loads, so two threads loading the same library add
 * its operations once.  A library whose operations were added is never
 * closed: bound ops, plans and graphs point into it.  A load that fails
 * adds nothing and closes the library.  dlopen returns the handle a
 * library already has, which is how a second load of one is recognized.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/op_registry.h>
#include <sluice/plugin.h>

#include "core_internal.h"

/* The most libraries a process loads, and operations one library adds. */
#define PLUGIN_MAX_LIBRARIES 64
#define PLUGIN_MAX_OPS 64

/* A library loaded for good. */
struct plugin_lib {
    void *handle; /* dlopen's */
    char *path;   /* as given to sl_plugin_load; owned */
};

/* An operation a library added, for sl_plugin_op_library. */
struct plugin_op {
    const struct sl_op_desc *desc; /* the registry's copy */
    uint32_t lib;                  /* index in `libs` */
};

static pthread_mutex_t plugins_lock = PTHREAD_MUTEX_INITIALIZER;
static struct plugin_lib libs[PLUGIN_MAX_LIBRARIES]; /* [0, n_libs), under the lock */
static uint32_t n_libs;
static struct plugin_op ops[SL_OP_MAX_ADDED]; /* [0, n_ops), under the lock */
static uint32_t n_ops;

/* What one load's sl_plugin_register adds, before it enters the registry. */
struct plugin_stage {
    struct sl_op_desc descs[PLUGIN_MAX_OPS]; /* copies of what add_op was given */
    uint32_t n;                              /* how many */
    bool refused;                            /* add_op refused one: the load fails */
};

/* Where the op called `name` comes from, for a duplicate's message. */
static void
describe_origin(const struct sl_op_desc *d, char *buf, size_t size)
{
    if (sl_op_is_builtin(d)) {
        snprintf(buf, size, "a built-in operation");
        return;
    }
    for (uint32_t i = 0; i < n_ops; i++) {
        if (ops[i].desc == d) {
            snprintf(buf, size, "an operation of plugin %s", libs[ops[i].lib].path);
            return;
        }
    }
    snprintf(buf, size, "an operation the program added");
}

/* host->add_op: check `d` and stage a copy. */
static sl_status
host_add_op(struct sl_plugin_host *host, const struct sl_op_desc *d)
{
    struct plugin_stage *s = host->ctx;
    struct sl_error e = SL_ERROR_INIT;
    sl_status st = sl_op_desc_check(d, &e);
    const struct sl_op_desc *same = NULL;
    if (st == SL_OK && sl_op_lookup(d->name, &same, NULL) == SL_OK) {
        char origin[160];
        describe_origin(same, origin, sizeof origin);
        st = sl_error_set(&e, SL_EEXIST, NULL, "op \"%s\" exists: %s", d->name, origin);
    }
    for (uint32_t i = 0; st == SL_OK && i < s->n; i++)
        if (strcmp(s->descs[i].name, d->name) == 0)
            st = sl_error_set(&e, SL_EEXIST, NULL, "op \"%s\" is added twice", d->name);
    if (st == SL_OK && s->n == PLUGIN_MAX_OPS)
        st = sl_error_set(&e, SL_EOVERFLOW, NULL, "op \"%s\": a plugin adds at most %d operations",
                          d->name, PLUGIN_MAX_OPS);
    if (st != SL_OK) {
        s->refused = true;
        return sl_error_set(host->err, st, NULL, "%s", e.text);
    }
    s->descs[s->n++] = *d;
    return SL_OK;
}

/* The library's entry points, after its ABI version is checked. */
static sl_status
lib_entry(void *handle, const char *path, sl_status (**reg)(struct sl_plugin_host *),
          struct sl_error *err)
{
    dlerror();
    const void *abi = dlsym(handle, "sl_plugin_abi_version");
    if (abi == NULL)
        return sl_error_set(err, SL_ENOTFOUND, NULL,
                            "plugin %s: does not export sl_plugin_abi_version (not a sluice "
                            "plugin, or built without SL_PLUGIN_DEFINE_ABI_VERSION)",
                            path);
    uint32_t version;
    memcpy(&version, abi, sizeof version);
    if (version != SL_PLUGIN_ABI_VERSION)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "plugin %s: built for plugin ABI version %" PRIu32
                            "; this sluice loads version %u (rebuild it against this sluice's "
                            "<sluice/plugin.h>)",
                            path, version, SL_PLUGIN_ABI_VERSION);
    void *sym = dlsym(handle, "sl_plugin_register");
    if (sym == NULL)
        return sl_error_set(err, SL_ENOTFOUND, NULL,
                            "plugin %s: does not export sl_plugin_register", path);
    /* POSIX makes dlsym's object pointer convertible to a function pointer;
     * copying the bits says so without ISO C's warning. */
    memcpy(reg, &sym, sizeof sym);
    return SL_OK;
}

/* Run the library's sl_plugin_register into `stage`. */
static sl_status
lib_register(sl_status (*reg)(struct sl_plugin_host *), const char *path,
             struct plugin_stage *stage, struct sl_error *err)
{
    struct sl_error e = SL_ERROR_INIT;
    struct sl_plugin_host host = {
        .abi_version = SL_PLUGIN_ABI_VERSION,
        .library = path,
        .add_op = host_add_op,
        .err = &e,
        .ctx = stage,
    };
    sl_status st = reg(&host);
    if (st == SL_OK && !stage->refused)
        return SL_OK;
    if (e.code != SL_OK)
        return sl_error_set(err, e.code, NULL, "plugin %s: %s", path, e.text);
    return sl_error_set(err, SL_EFUNC, NULL, "plugin %s: sl_plugin_register failed: %s", path,
                        sl_status_name(st));
}

/* Add the staged operations and keep the library; under the lock. */
static sl_status
lib_commit_locked(void *handle, const char *path, const struct plugin_stage *stage,
                  struct sl_error *err)
{
    if (n_libs == PLUGIN_MAX_LIBRARIES)
        return sl_error_set(err, SL_EOVERFLOW, NULL, "plugin %s: %d plugins are loaded already",
                            path, PLUGIN_MAX_LIBRARIES);
    char *copy = strdup(path);
    if (copy == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "plugin %s: no memory", path);
    libs[n_libs] = (struct plugin_lib){.handle = handle, .path = copy};
    const uint32_t lib = n_libs++;
    /* The names were checked while staging and loads are serialized, so
     * only sl_op_register from another thread can refuse one now; the
     * operations added before it then keep the library open. */
    for (uint32_t i = 0; i < stage->n; i++) {
        struct sl_error e = SL_ERROR_INIT;
        const struct sl_op_desc *d = NULL;
        if (sl_op_register(&stage->descs[i], &e) != SL_OK)
            return sl_error_set(err, e.code, NULL, "plugin %s: %s", path, e.text);
        if (SL_ALWAYS(sl_op_lookup(stage->descs[i].name, &d, NULL) == SL_OK) &&
            n_ops < SL_OP_MAX_ADDED)
            ops[n_ops++] = (struct plugin_op){.desc = d, .lib = lib};
    }
    return SL_OK;
}

/* Whether `handle` is a library loaded before; under the lock. */
static bool
lib_is_loaded_locked(const void *handle)
{
    for (uint32_t i = 0; i < n_libs; i++)
        if (libs[i].handle == handle)
            return true;
    return false;
}

/* sl_plugin_load's work, under the lock. */
static sl_status
load_locked(const char *path, struct sl_error *err)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        return sl_error_set(err, SL_ENOTFOUND, NULL, "plugin %s: cannot load: %s", path,
                            why != NULL ? why : "unknown error");
    }
    if (lib_is_loaded_locked(handle)) {
        dlclose(handle); /* drops the reference this dlopen took */
        return SL_OK;
    }
    sl_status (*reg)(struct sl_plugin_host *) = NULL;
    struct plugin_stage *stage = calloc(1, sizeof *stage);
    sl_status st =
        stage != NULL ? SL_OK : sl_error_set(err, SL_ENOMEM, NULL, "plugin %s: no memory", path);
    if (st == SL_OK)
        st = lib_entry(handle, path, &reg, err);
    if (st == SL_OK)
        st = lib_register(reg, path, stage, err);
    const uint32_t before = n_libs;
    if (st == SL_OK)
        st = lib_commit_locked(handle, path, stage, err);
    if (n_libs == before)
        dlclose(handle); /* nothing of it was added */
    free(stage);
    return st;
}

sl_status
sl_plugin_load(const char *path, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (path == NULL || path[0] == '\0')
        return sl_error_set(err, SL_EINVAL, NULL, "plugin: no library path");
    pthread_mutex_lock(&plugins_lock);
    const sl_status st = load_locked(path, err);
    pthread_mutex_unlock(&plugins_lock);
    return st;
}

const char *
sl_plugin_op_library(const struct sl_op_desc *d)
{
    const char *path = NULL;
    pthread_mutex_lock(&plugins_lock);
    for (uint32_t i = 0; d != NULL && i < n_ops && path == NULL; i++)
        if (ops[i].desc == d)
            path = libs[ops[i].lib].path;
    pthread_mutex_unlock(&plugins_lock);
    return path;
}
