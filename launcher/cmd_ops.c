/* SPDX-License-Identifier: MIT */
/*
 * `sluice ops [--json]`: list every operation graph files can name, the
 * built-in ones and those of the plugins given with --plugin (loaded only
 * with --allow-plugins), with kind, summary and parameters (name, type,
 * required, doc).  The JSON form's schema is docs/ops.schema.json.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "commands.h"
#include "json_out.h"

static int run_ops(int argc, char **argv);

const struct cmd cmd_ops = {
    .name = "ops",
    .summary = "list the operations graph files can use, with their parameters",
    .usage = "usage: sluice ops [--json] [--allow-plugins --plugin LIB.so ...]\n"
             "\n"
             "List every operation a graph file's nodes can name: the built-in ones,\n"
             "then those the plugins given add, each with its kind (map, regrid or halo),\n"
             "a summary and its parameters (name, type, whether required, meaning and\n"
             "default).\n"
             "\n"
             "Options:\n"
             "  --json               one JSON document (schema: docs/ops.schema.json)\n"
             "  --plugin LIB.so      load this plugin first (repeatable); needs\n"
             "                       --allow-plugins\n"
             "  --allow-plugins      allow loading plugins, running their code (also\n"
             "                       SL_ALLOW_PLUGINS=1)\n"
             "  --help               print this help\n"
             "\n"
             "Exit status: 0, or 2 when a plugin is refused or bad usage.\n",
    .run = run_ops,
};

static const char *
kind_name(sl_op_kind k)
{
    switch (k) {
    case SL_OP_KIND_MAP:
        return "map";
    case SL_OP_KIND_REGRID:
        return "regrid";
    case SL_OP_KIND_HALO:
        return "halo";
    }
    return "?";
}

/* How a graph file writes a parameter of type `t`. */
static const char *
type_name(sl_op_param_type t)
{
    switch (t) {
    case SL_OP_PARAM_NUMBER:
        return "number";
    case SL_OP_PARAM_DTYPE:
        return "dtype";
    case SL_OP_PARAM_METHOD:
        return "method";
    case SL_OP_PARAM_FACTORS:
        return "factors";
    case SL_OP_PARAM_NUMBERS:
        return "numbers";
    case SL_OP_PARAM_MODE:
        return "mode";
    }
    return "?";
}

static void
print_text(void)
{
    for (uint32_t i = 0; i < sl_op_count(); i++) {
        const struct sl_op_desc *d = sl_op_at(i);
        const char *lib = sl_plugin_op_library(d);
        printf("%s (%s%s%s): %s\n", d->name, kind_name(d->kind), lib != NULL ? ", plugin " : "",
               lib != NULL ? lib : "", d->summary);
        for (uint32_t k = 0; k < d->n_params; k++) {
            const struct sl_op_param *p = &d->params[k];
            printf("    %-12s %-8s %-9s %s\n", p->name, type_name(p->type),
                   p->required ? "required" : "optional", p->doc);
        }
    }
}

static void
print_json(void)
{
    printf("{\"schema\":\"sluice-ops/1\",\"ops\":[");
    for (uint32_t i = 0; i < sl_op_count(); i++) {
        const struct sl_op_desc *d = sl_op_at(i);
        const char *lib = sl_plugin_op_library(d);
        printf("%s{\"name\":", i ? "," : "");
        json_out_string(d->name);
        printf(",\"kind\":\"%s\",\"origin\":\"%s\",\"library\":", kind_name(d->kind),
               sl_op_is_builtin(d) ? "builtin"
               : lib != NULL       ? "plugin"
                                   : "program");
        if (lib != NULL)
            json_out_string(lib);
        else
            printf("null");
        printf(",\"summary\":");
        json_out_string(d->summary);
        printf(",\"params\":[");
        for (uint32_t k = 0; k < d->n_params; k++) {
            const struct sl_op_param *p = &d->params[k];
            printf("%s{\"name\":", k ? "," : "");
            json_out_string(p->name);
            printf(",\"type\":\"%s\",\"required\":%s,\"doc\":", type_name(p->type),
                   p->required ? "true" : "false");
            json_out_string(p->doc);
            printf("}");
        }
        printf("]}");
    }
    printf("]}\n");
}

static int
run_ops(int argc, char **argv)
{
    const char *env = getenv("SL_ALLOW_PLUGINS");
    bool json = false, allow = env != NULL && strcmp(env, "1") == 0;
    const char *plugins[16];
    int n_plugins = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--allow-plugins") == 0) {
            allow = true;
        } else if (strcmp(argv[i], "--plugin") == 0) {
            if (i + 1 >= argc)
                return cmd_usage_error(&cmd_ops, "--plugin needs a library path");
            if (n_plugins == (int)(sizeof plugins / sizeof plugins[0]))
                return cmd_usage_error(&cmd_ops, "at most %d --plugin options", n_plugins);
            plugins[n_plugins++] = argv[++i];
        } else {
            return cmd_usage_error(&cmd_ops, "unknown argument %s", argv[i]);
        }
    }
    if (n_plugins > 0 && !allow)
        return cmd_usage_error(&cmd_ops, "loading a plugin runs its code and needs permission: "
                                         "--allow-plugins (or SL_ALLOW_PLUGINS=1)");
    for (int i = 0; i < n_plugins; i++) {
        struct sl_error err = SL_ERROR_INIT;
        if (sl_plugin_load(plugins[i], &err) != SL_OK)
            return cmd_fail("ops", plugins[i], &err);
    }
    if (json)
        print_json();
    else
        print_text();
    return 0;
}
