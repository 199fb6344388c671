/* SPDX-License-Identifier: MIT */
/*
 * The `sluice` program: dispatches to its commands through one table.  It
 * uses only the public API, which proves that API is enough to build tools
 * on.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "commands.h"
#include "dist.h"

/*
 * hwloc loads every plugin it finds when a topology is first made: its
 * PCI, OpenCL, GL and libxml2 back-ends, with libX11, libOpenCL, ICU and
 * more behind them, about 15 ms of every run on a small machine.  The
 * runtime reads only cores and NUMA nodes (hwloc's built-in Linux
 * back-end; its own XML reader parses SLUICE_TOPOLOGY files), so the
 * program asks hwloc not to load them, unless the user's environment says
 * otherwise.  Not under mpirun: the MPI library shares the process's hwloc
 * and may want the PCI tree for its network devices.
 */
static void
skip_hwloc_device_plugins(void)
{
    if (getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_SIZE") != NULL ||
        getenv("PMIX_RANK") != NULL)
        return;
    (void)setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_xml_libxml", 0);
}

/* Every command; a new one is one line here. */
/* clang-format off */
static const struct cmd *const commands[] = {
    &cmd_info,
    &cmd_checksum,
    &cmd_preview,
    &cmd_copy,
    &cmd_generate,
    &cmd_downsample,
    &cmd_pyramid,
    &cmd_run,
    &cmd_validate,
    &cmd_explain,
    &cmd_ops,
};
/* clang-format on */

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* `sluice NAME --help`. */
static void
print_command_help(const struct cmd *c)
{
    printf("%s\n\n%s%s", c->summary, c->usage, c->options != NULL ? c->options : "");
}

static void
print_usage(FILE *out)
{
    fprintf(out, "usage: sluice [--version] [--help] <command> [<args>]\n"
                 "\n"
                 "Dataflow graphs over chunked arrays.\n"
                 "\n"
                 "Commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s  %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\n"
                 "Options:\n"
                 "  --version   print the version and exit\n"
                 "  --help      print this help and exit\n"
                 "\n"
                 "Run `sluice <command> --help` for a command's options.\n");
}

static bool
is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int
cmd_fail(const char *name, const char *path, const struct sl_error *err)
{
    char text[2048];
    sl_error_format(err, text, sizeof(text));
    fprintf(stderr, "sluice %s: %s: %s\n", name, path, text);
    return 2;
}

int
cmd_usage_error(const struct cmd *c, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "sluice %s: ", c->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see \"sluice %s --help\")\n", c->name);
    return 2;
}

int
cmd_take_path(const struct cmd *c, const char *arg, const char **paths, int *n_paths, int max)
{
    if (arg[0] == '-' && arg[1] != '\0')
        return cmd_usage_error(c, "unknown option %s", arg);
    if (*n_paths == max)
        return cmd_usage_error(c, "too many paths (\"%s\")", arg);
    paths[(*n_paths)++] = arg;
    return 0;
}

static const struct cmd *
find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i]->name) == 0)
            return commands[i];
    return NULL;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("sluice %s\n", sl_version());
        return 0;
    }
    if (is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        const struct cmd *c = argc > 2 && !is_help(argv[1]) ? find_command(argv[2]) : NULL;
        if (c != NULL)
            print_command_help(c);
        else
            print_usage(stdout);
        return 0;
    }
    const struct cmd *c = find_command(argv[1]);
    if (c == NULL) {
        fprintf(stderr, "sluice: unknown command \"%s\" (see sluice --help)\n", argv[1]);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (is_help(argv[i])) {
            print_command_help(c);
            return 0;
        }
    }
    skip_hwloc_device_plugins();
    /* Under mpirun, every rank runs the command on its part. */
    dist_init(&argc, &argv);
    int rc = c->run(argc - 1, argv + 1);
    dist_finish(rc);
    return rc;
}
