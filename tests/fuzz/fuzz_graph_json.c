/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: JSON graph files.  The input is the file; arrays it names are
 * looked up among the metadata-only arrays of tests/data/graph_json/arrays
 * (found through SL_SOURCE_ROOT, else nothing exists), arrays it creates
 * stay in memory, and paths may not leave that folder.  Beyond "no crash":
 * a refused file has at least one error record, each with a status and a
 * message, and a syntax error has its line and column; an accepted file
 * gives a sealed graph that plans, explains and draws.
 */
#include <stdio.h>
#include <stdlib.h>

#include <sluice/graph.h>
#include <sluice/graph_json.h>
#include <sluice/plan.h>

#include "fuzz.h"

/* The folder the arrays of the test corpus live in. */
static const char *
arrays_dir(void)
{
    static char dir[4096];
    if (dir[0] == '\0') {
        const char *root = getenv("SL_SOURCE_ROOT");
        snprintf(dir, sizeof(dir), "%s/tests/data/graph_json/arrays", root != NULL ? root : ".");
    }
    return dir;
}

/* Plan the accepted graph and describe it (to /dev/null). */
static void
plan_and_explain(sl_graph_json *doc)
{
    sl_graph *g = sl_graph_json_graph(doc);
    FUZZ_CHECK(g != NULL && sl_graph_is_sealed(g), "an accepted file gives a sealed graph");
    struct sl_error err = SL_ERROR_INIT;
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    if (plan == NULL) {
        fuzz_check_error(err.code, &err, "sl_plan_create");
        return;
    }
    FILE *null = fopen("/dev/null", "w");
    if (null != NULL) {
        FUZZ_CHECK(sl_plan_explain(plan, null, NULL) == SL_OK, "explain");
        FUZZ_CHECK(sl_plan_write_dot(plan, null, NULL) == SL_OK, "dot");
        FUZZ_CHECK(sl_graph_json_write_arrays(doc, null, NULL) == SL_OK, "arrays summary");
        fclose(null);
    }
    sl_plan_destroy(plan);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_error records[8];
    struct sl_graph_json_errors errors = {.errors = records, .capacity = 8};
    struct sl_graph_json_opts opts = SL_GRAPH_JSON_OPTS_DEFAULT;
    opts.base_dir = arrays_dir();
    opts.max_bytes = 1 << 20;
    opts.local_only = true; /* a fuzz input never reaches the network */
    sl_graph_json *doc =
        sl_graph_json_load_string((const char *)data, size, "fuzz.json", &opts, &errors);
    if (doc == NULL) {
        FUZZ_CHECK(errors.count >= 1, "a refused file has an error record");
        for (size_t i = 0; i < errors.count; i++) {
            fuzz_check_error(records[i].code, &records[i], "sl_graph_json_load_string");
            if (records[i].code == SL_EPARSE)
                FUZZ_CHECK(records[i].line >= 1 || records[i].path[0] != '\0',
                           "a syntax error says where: %s", records[i].text);
        }
        return 0;
    }
    plan_and_explain(doc);
    sl_graph_json_destroy(doc);
    return 0;
}
