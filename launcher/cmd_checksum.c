/* SPDX-License-Identifier: MIT */
/*
 * `sluice checksum PATH...`: the SHA-256 of each array's decoded contents,
 * every element in C order, little-endian, NaNs canonical, so a conversion
 * or a copy can be checked against the original (see sl_array_checksum).
 * Prints "HEX  PATH" lines, as sha256sum does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "commands.h"
#include "runner.h"

static int run_checksum(int argc, char **argv);

const struct cmd cmd_checksum = {
    .name = "checksum",
    .summary = "SHA-256 of a stored array's decoded contents",
    .usage = "usage: sluice checksum PATH...\n"
             "\n"
             "Print the SHA-256 of the decoded contents of the Zarr array in each\n"
             "directory PATH: every element in C order, written little-endian, each\n"
             "NaN replaced by the canonical quiet NaN (float16 0x7e00, float32\n"
             "0x7fc00000, float64 0x7ff8000000000000), missing chunks as the fill\n"
             "value.  Two arrays with equal contents print equal sums whatever their\n"
             "chunking, codecs, byte order or Zarr format.\n"
             "\n"
             "PATH may be a URL (http://, https://, s3://).\n"
             "\n"
             "Options:\n" REMOTE_OPTS_HELP "  --help               print this help\n",
    .run = run_checksum,
};

/* Print one array's line; return the exit status for it. */
static int
checksum_one(const char *path, const struct run_opts *ro)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *store = open_input_store(path, ro, &err);
    if (store == NULL)
        return cmd_fail("checksum", path, &err);
    sl_array *a = sl_array_open(store, "", NULL, &err);
    uint8_t digest[SL_SHA256_BYTES];
    int rc = 0;
    if (a == NULL || sl_array_checksum(a, digest, NULL, &err) != SL_OK) {
        rc = cmd_fail("checksum", path, &err);
    } else {
        char hex[SL_SHA256_HEX_CHARS + 1];
        sl_sha256_hex(digest, hex);
        printf("%s  %s\n", hex, path);
    }
    sl_array_unref(a);
    sl_store_unref(store);
    return rc;
}

static int
run_checksum(int argc, char **argv)
{
    int n_paths = 0, rc = 0;
    struct run_opts ro = RUN_OPTS_DEFAULT;
    const char **paths = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*paths));
    if (paths == NULL) {
        fprintf(stderr, "sluice checksum: out of memory\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        int used = remote_opts_parse(&cmd_checksum, &ro, argc, argv, &i);
        if (used == 1)
            continue;
        if (used == 0 && argv[i][0] == '-' && strcmp(argv[i], "-") != 0)
            used = cmd_usage_error(&cmd_checksum, "unknown option \"%s\"", argv[i]);
        if (used != 0) {
            free(paths);
            return used;
        }
        paths[n_paths++] = argv[i];
    }
    for (int i = 0; i < n_paths; i++) {
        if (checksum_one(paths[i], &ro) != 0)
            rc = 1;
        fflush(stdout);
    }
    free(paths);
    if (n_paths == 0)
        return cmd_usage_error(&cmd_checksum, "PATH is missing");
    return rc;
}
