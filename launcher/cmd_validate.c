/* SPDX-License-Identifier: MIT */
/*
 * `sluice validate GRAPH.json`: check a graph file completely (syntax,
 * every field, references, cycles, shapes and dtypes against the arrays it
 * reads, arrays it would replace) without creating or running anything.
 */
#include <stdio.h>
#include <string.h>

#include <sluice.h>

#include "commands.h"
#include "graph_file.h"

static int run_validate(int argc, char **argv);

const struct cmd cmd_validate = {
    .name = "validate",
    .summary = "check a JSON graph file without running it",
    .usage = "usage: sluice validate GRAPH.json [options]\n"
             "\n"
             "Check the graph file completely: syntax (errors name the line and column),\n"
             "every field (errors name a JSON pointer such as /nodes/half/factors/1, what\n"
             "was expected and what was found), node and array references, cycles, and\n"
             "shapes, ranks and dtypes against the arrays it reads.  Up to 20 errors\n"
             "are reported.  Nothing is created or run.  On success, prints the arrays\n"
             "the graph reads, writes and would create.  The format is documented in\n"
             "examples/graphs/FORMAT.md.\n"
             "\n"
             "Exit status: 0 when the file is valid, 2 when it is not (or bad usage).\n"
             "\n"
             "Options:\n" GRAPH_FILE_HELP "  --help               print this help\n",
    .run = run_validate,
};

static int
run_validate(int argc, char **argv)
{
    const char *path = NULL;
    struct graph_file_perm perm = graph_file_perm_default();
    for (int i = 1; i < argc; i++) {
        if (graph_file_perm_parse(&perm, argv[i]))
            continue;
        if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cmd_usage_error(&cmd_validate, "unknown option %s", argv[i]);
        else if (path != NULL)
            return cmd_usage_error(&cmd_validate, "more than one graph file (\"%s\")", argv[i]);
        else
            path = argv[i];
    }
    if (path == NULL)
        return cmd_usage_error(&cmd_validate, "GRAPH.json is missing");
    sl_graph_json *doc;
    int rc = graph_file_load(&cmd_validate, path, SL_GRAPH_JSON_IN_MEMORY, &perm, NULL, &doc);
    if (rc != 0)
        return rc;
    printf("%s: valid, %u nodes\n", path, sl_graph_node_count(sl_graph_json_graph(doc)));
    if (sl_graph_json_write_arrays(doc, stdout, NULL) != SL_OK)
        rc = 1;
    sl_graph_json_destroy(doc);
    return rc;
}
