/* SPDX-License-Identifier: MIT */
/*
 * Loading graph files for the commands that take one, with every error
 * the loader found printed as one line: code, file, line and column or
 * JSON pointer, and what was expected and found.
 */
#include <stdio.h>

#include "graph_file.h"

int
graph_file_load(const struct cmd *c, const char *path, sl_graph_json_arrays new_arrays,
                bool allow_outside, const struct run_opts *ro, sl_graph_json **out)
{
    struct sl_error records[GRAPH_FILE_MAX_ERRORS];
    struct sl_graph_json_errors errors = {.errors = records, .capacity = GRAPH_FILE_MAX_ERRORS};
    struct sl_graph_json_opts opts = SL_GRAPH_JSON_OPTS_DEFAULT;
    opts.new_arrays = new_arrays;
    opts.allow_outside = allow_outside;
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
