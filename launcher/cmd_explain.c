/* SPDX-License-Identifier: MIT */
/*
 * `sluice explain GRAPH.json [--dot FILE]`: validate a graph file and print
 * its plan (arrays, nodes, fused stages and why each edge is not fused),
 * optionally as Graphviz DOT, without creating or running anything.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

#include "commands.h"
#include "graph_file.h"
#include "runner.h"

static int run_explain(int argc, char **argv);

const struct cmd cmd_explain = {
    .name = "explain",
    .summary = "show the plan of a JSON graph file",
    .usage = "usage: sluice explain GRAPH.json [options]\n"
             "\n"
             "Validate the graph file (as sluice validate does), plan it, and print the\n"
             "arrays it reads and writes, its nodes, the stages fusion makes (one task per\n"
             "output chunk of a stage) and, for every edge not fused, why.  Nothing is\n"
             "created or run.\n"
             "\n"
             "Exit status: 0 on success, 1 when the plan cannot be made (e.g. the memory\n"
             "budget is too small) or the DOT file cannot be written, 2 for an invalid\n"
             "graph or bad usage.\n"
             "\n"
             "Options:\n"
             "  --dot FILE           also write the plan as Graphviz DOT to FILE\n"
             "  --memory SIZE        plan for this budget instead of the file's\n" REMOTE_OPTS_HELP
                 GRAPH_FILE_HELP "  --help               print this help\n",
    .run = run_explain,
};

static int
write_dot(const sl_plan *plan, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "sluice explain: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    sl_status st = sl_plan_write_dot(plan, f, NULL);
    if (fclose(f) != 0 || st != SL_OK) {
        fprintf(stderr, "sluice explain: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

static int
explain_doc(const sl_graph_json *doc, size_t memory, const char *dot, const char *path)
{
    struct sl_graph_json_run run;
    sl_graph_json_run_opts(doc, &run);
    struct sl_plan_opts opts = SL_PLAN_OPTS_DEFAULT;
    opts.memory_budget = memory != 0 ? memory : run.memory_budget;
    opts.policy = run.policy;
    opts.missing_is_error = run.missing_is_error;
    struct sl_error err = SL_ERROR_INIT;
    sl_plan *plan = sl_plan_create(sl_graph_json_graph(doc), &opts, &err);
    if (plan == NULL)
        return cmd_fail("explain", path, &err);
    int rc = 0;
    if (sl_graph_json_write_arrays(doc, stdout, NULL) != SL_OK ||
        sl_plan_explain(plan, stdout, NULL) != SL_OK)
        rc = 1;
    if (dot != NULL)
        rc |= write_dot(plan, dot);
    sl_plan_destroy(plan);
    return rc;
}

static int
run_explain(int argc, char **argv)
{
    const char *path = NULL, *dot = NULL;
    struct graph_file_perm perm = graph_file_perm_default();
    size_t memory = 0;
    struct run_opts ro = RUN_OPTS_DEFAULT;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int used = remote_opts_parse(&cmd_explain, &ro, argc, argv, &i);
        if (used == 2)
            return 2;
        if (used == 1)
            continue;
        if (graph_file_perm_parse(&perm, a)) {
            continue;
        } else if (strcmp(a, "--dot") == 0 || strcmp(a, "--memory") == 0) {
            if (i + 1 >= argc)
                return cmd_usage_error(&cmd_explain, "%s needs a value", a);
            const char *v = argv[++i];
            if (strcmp(a, "--dot") == 0)
                dot = v;
            else if (!memory_parse(v, &memory))
                return cmd_usage_error(&cmd_explain,
                                       "--memory: \"%s\" is not a size like 512M or 2G", v);
        } else if (a[0] == '-' && a[1] != '\0') {
            return cmd_usage_error(&cmd_explain, "unknown option %s", a);
        } else if (path != NULL) {
            return cmd_usage_error(&cmd_explain, "more than one graph file (\"%s\")", a);
        } else {
            path = a;
        }
    }
    if (path == NULL)
        return cmd_usage_error(&cmd_explain, "GRAPH.json is missing");
    sl_graph_json *doc;
    /* The remote options open the arrays read (and look at S3 outputs);
     * --memory stays the budget planned for. */
    int rc = graph_file_load(&cmd_explain, path, SL_GRAPH_JSON_IN_MEMORY, &perm, &ro, &doc);
    if (rc != 0)
        return rc;
    rc = explain_doc(doc, memory, dot, path);
    sl_graph_json_destroy(doc);
    return rc;
}
