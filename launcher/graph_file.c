/* SPDX-License-Identifier: MIT */
/*
 * Loading graph files for the commands that take one, with every error
 * the loader found printed as one line: code, file, line and column or
 * JSON pointer, and what was expected and found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_file.h"

struct graph_file_perm
graph_file_perm_default(void)
{
    const char *env = getenv("SL_ALLOW_PLUGINS");
    return (struct graph_file_perm){.allow_plugins = env != NULL && strcmp(env, "1") == 0};
}

bool
graph_file_perm_parse(struct graph_file_perm *perm, const char *arg)
{
    if (strcmp(arg, "--allow-outside") == 0)
        perm->allow_outside = true;
    else if (strcmp(arg, "--allow-plugins") == 0)
        perm->allow_plugins = true;
    else
        return false;
    return true;
}

int
graph_file_load(const struct cmd *c, const char *path, sl_graph_json_arrays new_arrays,
                const struct graph_file_perm *perm, const struct run_opts *ro, sl_graph_json **out)
{
    struct sl_error records[GRAPH_FILE_MAX_ERRORS];
    struct sl_graph_json_errors errors = {.errors = records, .capacity = GRAPH_FILE_MAX_ERRORS};
    struct sl_graph_json_opts opts = SL_GRAPH_JSON_OPTS_DEFAULT;
    opts.new_arrays = new_arrays;
    opts.allow_outside = perm->allow_outside;
    opts.allow_plugins = perm->allow_plugins;
    if (ro != NULL) {
        opts.io_concurrency = ro->io_concurrency;
        opts.io_attempts = ro->io_attempts;
        opts.io_deadline_s = ro->io_deadline_s;
        opts.memory = ro->memory;
        opts.endpoint = ro->endpoint;
        opts.region = ro->region;
        opts.no_sign_request = ro->no_sign_request;
        opts.missing_on_403 = ro->missing_on_403;
        opts.resume = ro->resume_dirs;
        opts.n_resume = ro->n_resume_dirs;
        opts.resuming = ro->resume;
        opts.defer_sync = ro->defer_sync;
        opts.no_sync = ro->no_sync && ro->defer_sync;
    }
    *out = sl_graph_json_load_file(path, &opts, &errors);
    if (*out != NULL)
        return 0;
    for (size_t i = 0; i < errors.count; i++) {
        char line[512];
        sl_error_format(&records[i], line, sizeof(line));
        fprintf(stderr, "%s\n", line);
    }
    fprintf(stderr, "sluice %s: %s: %zu error%s%s; nothing was run\n", c->name, path, errors.count,
            errors.count == 1 ? "" : "s", errors.truncated ? " (validation stopped there)" : "");
    return 2;
}
