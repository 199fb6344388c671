/* SPDX-License-Identifier: MIT */
/*
 * The top-level "plugins" of a graph file: shared libraries, by paths
 * relative to the graph file's directory (the base directory), whose
 * operations its nodes name.  They are loaded (sl_plugin_load) before the
 * nodes are read, and only when the caller allows it
 * (sl_graph_json_opts.allow_plugins: `sluice --allow-plugins`), since
 * loading one runs its code.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <sluice/plugin.h>

#include "load_json_internal.h"

/* The most libraries one graph file names. */
#define PLUGINS_MAX 16

/* Load entry `i` of "plugins", `v`; false after reporting. */
static bool
plugin_load_one(sl_graph_json *doc, const json_t *v, size_t i)
{
    char at[SL__JPTR_MAX];
    sl__jptr_index(at, "/plugins", i);
    const char *path;
    if (!sl__jget_string(&doc->diag, v, at, &path))
        return false;
    if (path[0] == '\0') {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "expected the path of a shared library, found \"\"");
        return false;
    }
    char full[PATH_MAX];
    int w = path[0] == '/' ? snprintf(full, sizeof full, "%s", path)
                           : snprintf(full, sizeof full, "%s/%s", doc->base_dir, path);
    if (w < 0 || (size_t)w >= sizeof full) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "the path is too long: %zu bytes; at most %zu",
                      strlen(path), sizeof full - 1);
        return false;
    }
    struct sl_error err = SL_ERROR_INIT;
    if (sl_plugin_load(full, &err) != SL_OK) {
        sl__jdiag_add_error(&doc->diag, at, &err);
        return false;
    }
    return true;
}

bool
sl__jplugins_load(sl_graph_json *doc, const json_t *plugins)
{
    if (!json_is_array(plugins) || json_array_size(plugins) > PLUGINS_MAX) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, "/plugins",
                      "expected a list of at most %d shared library paths, found %s", PLUGINS_MAX,
                      json_is_array(plugins) ? "a longer list" : sl__json_type_name(plugins));
        return false;
    }
    if (json_array_size(plugins) > 0 && !doc->opts.allow_plugins) {
        sl__jdiag_add(&doc->diag, SL_EACCES, "/plugins",
                      "loading plugins runs their code and needs permission: sluice "
                      "--allow-plugins (or SL_ALLOW_PLUGINS=1; in C, opts.allow_plugins)");
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < json_array_size(plugins); i++)
        ok = plugin_load_one(doc, json_array_get(plugins, i), i) && ok;
    return ok;
}
