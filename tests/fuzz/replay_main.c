/* SPDX-License-Identifier: MIT */
/*
 * The replay driver: a plain main that feeds every file named on the command
 * line (directories are walked one level, in name order) to the target's
 * LLVMFuzzerTestOneInput, once each.  Linked with each target, it needs no
 * libFuzzer and builds with any compiler, so `meson test --suite fuzz` replays
 * the seed corpora and every crash ever found in the ordinary CI builds,
 * including the ASan+UBSan one.
 *
 * Under AddressSanitizer an allocation over 256 MiB is a finding, as it is
 * for the fuzzer's -malloc_limit_mb=256: __asan_default_options sets
 * max_allocation_size_mb (ASAN_OPTIONS still overrides it).
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* The largest input replayed: libFuzzer's default -max_len is far below. */
#define REPLAY_MAX_BYTES ((size_t)64 << 20)

const char *__asan_default_options(void);

/* Read by the ASan runtime at start-up, when there is one. */
const char *
__asan_default_options(void)
{
    return "max_allocation_size_mb=256:allocator_may_return_null=0";
}

/* Feed file `path` to the target, in a buffer of exactly its size so ASan
 * sees reads past its end.  @return 0, or 1 when it cannot be read. */
static int
replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (f == NULL || fstat(fileno(f), &st) != 0 || st.st_size < 0 ||
        (uint64_t)st.st_size > REPLAY_MAX_BYTES) {
        fprintf(stderr, "replay: cannot open %s (or larger than %zu bytes): %s\n", path,
                REPLAY_MAX_BYTES, strerror(errno));
        if (f != NULL)
            fclose(f);
        return 1;
    }
    size_t n = (size_t)st.st_size;
    uint8_t *data = malloc(n > 0 ? n : 1);
    bool bad = data == NULL || fread(data, 1, n, f) != n;
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(data);
        return 1;
    }
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(data, n);
    free(data);
    return 0;
}

static int
name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every regular file in directory `dir`, in name order.
 * @return the number of files that could not be read; `*count` grows. */
static int
replay_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "replay: cannot open directory %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int bad = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap == 0 ? 64 : 2 * cap;
            char **grown = realloc(names, cap * sizeof(*names));
            if (grown == NULL) {
                bad = 1;
                break;
            }
            names = grown;
        }
        if ((names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2)) == NULL) {
            bad = 1;
            break;
        }
        sprintf(names[n++], "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), name_cmp);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            bad += replay_file(names[i]);
            ++*count;
        }
        free(names[i]);
    }
    free(names);
    return bad;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    size_t count = 0;
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            bad++;
        } else if (S_ISDIR(st.st_mode)) {
            bad += replay_dir(argv[i], &count);
        } else {
            bad += replay_file(argv[i]);
            count++;
        }
    }
    printf("replayed %zu inputs, %d unreadable\n", count, bad);
    if (count == 0) {
        fprintf(stderr, "replay: no inputs found: an empty corpus tests nothing\n");
        return 1;
    }
    return bad != 0;
}
