/* SPDX-License-Identifier: MIT */
/*
 * The launcher's commands.  Each command file defines one `struct cmd`;
 * main.c lists them, so adding a command is one line there.
 */
#ifndef SL_LAUNCHER_COMMANDS_H
#define SL_LAUNCHER_COMMANDS_H

#include <stdio.h>

/* One `sluice` command. */
struct cmd {
    const char *name;    /* what follows `sluice` on the command line */
    const char *summary; /* one line for `sluice --help` */
    const char *usage;   /* printed by `sluice NAME --help`, ends in a newline */
    const char *options; /* printed after it (NULL: none): the shared options'
                            help, kept apart so no literal outgrows C's 4095 */
    /* Run with argv[0] the command's name; return the exit status:
     * 0 success, 1 failure (reported on stderr), 2 bad usage. */
    int (*run)(int argc, char **argv);
};

extern const struct cmd cmd_info;
extern const struct cmd cmd_checksum;
extern const struct cmd cmd_preview;
extern const struct cmd cmd_copy;
extern const struct cmd cmd_generate;
extern const struct cmd cmd_downsample;
extern const struct cmd cmd_pyramid;
extern const struct cmd cmd_run;
extern const struct cmd cmd_validate;
extern const struct cmd cmd_explain;
extern const struct cmd cmd_ops;

/* Print "sluice NAME: PATH: " and the error record on stderr; return 2: a
 * failure before any chunk ran (opening, validating, creating, planning). */
struct sl_error;
int cmd_fail(const char *name, const char *path, const struct sl_error *err);

/* The plural ending for a count in a message: "1 entry" needs its own. */
#define CMD_PLURAL(n) ((n) == 1 ? "" : "s")

/* Print a usage error for command `c` on stderr, one line and a pointer to
 * `sluice NAME --help` (never the usage text itself); return 2. */
int cmd_usage_error(const struct cmd *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Take `arg`, which no option parser claimed, as the next of at most `max`
 * paths of command `c`: 0, or 2 after a usage error (an unknown option, or
 * one path too many).  "-" is a path. */
int cmd_take_path(const struct cmd *c, const char *arg, const char **paths, int *n_paths, int max);

#endif /* SL_LAUNCHER_COMMANDS_H */
