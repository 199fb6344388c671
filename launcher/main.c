/* SPDX-License-Identifier: MIT */
/*
 * The `sluice` program: dispatches to its commands.  It uses only the
 * public API, which proves that API is enough to build tools on.
 */
#include <stdio.h>
#include <string.h>

#include <sluice.h>

static void
print_usage(FILE *out)
{
    fprintf(out, "usage: sluice [--version] [--help] <command> [<args>]\n"
                 "\n"
                 "Dataflow graphs over chunked arrays.\n"
                 "\n"
                 "Options:\n"
                 "  --version   print the version and exit\n"
                 "  --help      print this help and exit\n");
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
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    fprintf(stderr, "sluice: unknown command \"%s\" (see sluice --help)\n", argv[1]);
    return 2;
}
