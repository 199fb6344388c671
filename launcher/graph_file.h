/* SPDX-License-Identifier: MIT */
/*
 * Loading a JSON graph file for `run`, `validate` and `explain`: the
 * options they share (--allow-outside, --allow-plugins) and the report of
 * every error the loader found.
 */
#ifndef SL_LAUNCHER_GRAPH_FILE_H
#define SL_LAUNCHER_GRAPH_FILE_H

#include <stdbool.h>

#include <sluice.h>

#include "commands.h"
#include "runner.h"

/* Errors reported per file before validation stops. */
#define GRAPH_FILE_MAX_ERRORS 20

#define GRAPH_FILE_HELP                                                                        \
    "  --allow-outside      let array paths be absolute or leave the graph file's directory\n" \
    "  --allow-plugins      load the shared libraries the file's \"plugins\" names, running\n" \
    "                       their code (also SL_ALLOW_PLUGINS=1)\n"

/* What a graph file may do beyond its directory's arrays. */
struct graph_file_perm {
    bool allow_outside; /* --allow-outside */
    bool allow_plugins; /* --allow-plugins, or SL_ALLOW_PLUGINS=1 */
};

/* The permissions before any option: plugins as SL_ALLOW_PLUGINS says. */
struct graph_file_perm graph_file_perm_default(void);

/* Take `arg` when it is --allow-outside or --allow-plugins: true. */
bool graph_file_perm_parse(struct graph_file_perm *perm, const char *arg);

/*
 * Load the graph file at `path` (the arrays it creates made as `new_arrays`
 * says), printing every error found on stderr.
 * @return 0 with `*out` set, or 2 (an invalid file, or one that could not be
 * read) with nothing to free.
 */
int graph_file_load(const struct cmd *c, const char *path, sl_graph_json_arrays new_arrays,
                    const struct graph_file_perm *perm, const struct run_opts *ro,
                    sl_graph_json **out);

#endif /* SL_LAUNCHER_GRAPH_FILE_H */
