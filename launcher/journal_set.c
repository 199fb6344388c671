/* SPDX-License-Identifier: MIT */
/*
 * The journal files of one run: naming each rank's, finding those an
 * earlier run left, removing them, and checking that they are of one run.
 * See journal_set.h.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal_set.h"

#define RANK_INFIX ".rank-"

const char *
journal_rank_path(const char *base, int rank, int size, char *buf, size_t cap)
{
    int n = size > 1 ? snprintf(buf, cap, "%s" RANK_INFIX "%d-of-%d", base, rank, size)
                     : snprintf(buf, cap, "%s", base);
    return n >= 0 && (size_t)n < cap ? buf : NULL;
}

/* Split `base` into its directory (`dir`, "." when none) and file name. */
static const char *
base_split(const char *base, char *dir, size_t cap)
{
    const char *slash = strrchr(base, '/');
    if (slash == NULL) {
        snprintf(dir, cap, ".");
        return base;
    }
    size_t len = slash == base ? 1 : (size_t)(slash - base);
    snprintf(dir, cap, "%.*s", (int)(len < cap ? len : cap - 1), base);
    return slash + 1;
}

/* "R-of-N" exactly, R < N, N > 1: true with them. */
static bool
rank_suffix_parse(const char *p, unsigned long *rank, unsigned long *size)
{
    char *end;
    if (*p < '0' || *p > '9')
        return false;
    errno = 0;
    *rank = strtoul(p, &end, 10);
    if (errno != 0 || strncmp(end, "-of-", 4) != 0 || end[4] < '0' || end[4] > '9')
        return false;
    *size = strtoul(end + 4, &end, 10);
    return errno == 0 && *end == '\0' && *size > 1 && *rank < *size && *size <= JOURNAL_SET_MAX;
}

/* Order: by name, so FILE (a prefix of the others) comes first. */
static int
path_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
set_add(const struct cmd *c, struct journal_set *s, const char *path)
{
    if (s->n == JOURNAL_SET_MAX) {
        fprintf(stderr, "sluice %s: more than %d journal files beside %s\n", c->name,
                JOURNAL_SET_MAX, path);
        return 2;
    }
    s->paths[s->n] = strdup(path);
    if (s->paths[s->n] == NULL)
        return cmd_usage_error(c, "out of memory");
    s->n++;
    return 0;
}

/* Whether `path` is a rank's journal of the run's journal (`base_len`
 * bytes long): rank and size then. */
static bool
path_rank(const char *path, size_t base_len, unsigned long *rank, unsigned long *size)
{
    size_t infix = strlen(RANK_INFIX);
    return strlen(path) > base_len + infix && strncmp(path + base_len, RANK_INFIX, infix) == 0 &&
           rank_suffix_parse(path + base_len + infix, rank, size);
}

/* Count the ranks of runs across processes whose journal is absent. */
static void
set_count_missing(struct journal_set *s, size_t base_len)
{
    s->n_missing = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        unsigned long r, n, r2, n2, seen = 0;
        bool first = path_rank(s->paths[i], base_len, &r, &n);
        /* Each number of ranks once, at its first file. */
        for (uint32_t k = 0; first && k < i; k++)
            first = !path_rank(s->paths[k], base_len, &r2, &n2) || n2 != n;
        for (uint32_t k = 0; first && k < s->n; k++)
            seen += path_rank(s->paths[k], base_len, &r2, &n2) && n2 == n;
        s->n_missing += first ? (uint32_t)(n - seen) : 0;
    }
}

int
journal_set_find(const struct cmd *c, const char *base, struct journal_set *s)
{
    memset(s, 0, sizeof(*s));
    s->paths = calloc(JOURNAL_SET_MAX, sizeof(*s->paths));
    if (s->paths == NULL)
        return cmd_usage_error(c, "out of memory");
    if (access(base, F_OK) == 0 && set_add(c, s, base) != 0)
        return 2;
    char dir[4096];
    const char *name = base_split(base, dir, sizeof(dir));
    size_t name_len = strlen(name), infix = strlen(RANK_INFIX);
    DIR *d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "sluice %s: journal %s: cannot list %s: %s\n", c->name, base, dir,
                strerror(errno));
        return 2;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        unsigned long r, n;
        if (strncmp(e->d_name, name, name_len) != 0 ||
            strncmp(e->d_name + name_len, RANK_INFIX, infix) != 0 ||
            !rank_suffix_parse(e->d_name + name_len + infix, &r, &n))
            continue;
        char path[4096 + 256];
        snprintf(path, sizeof(path), "%.*s%s", (int)(strlen(base) - name_len), base, e->d_name);
        rc = set_add(c, s, path);
    }
    closedir(d);
    qsort(s->paths, s->n, sizeof(*s->paths), path_order);
    set_count_missing(s, strlen(base));
    return rc;
}

void
journal_set_fini(struct journal_set *s)
{
    for (uint32_t i = 0; s->paths != NULL && i < s->n; i++)
        free(s->paths[i]);
    free(s->paths);
    memset(s, 0, sizeof(*s));
}

int
journal_set_remove(const struct cmd *c, const char *base, int keep)
{
    struct journal_set s;
    int rc = journal_set_find(c, base, &s);
    size_t base_len = strlen(base);
    for (uint32_t i = 0; rc == 0 && i < s.n; i++) {
        unsigned long r, n;
        bool alone = s.paths[i][base_len] == '\0';
        bool ranked = path_rank(s.paths[i], base_len, &r, &n);
        if ((alone && keep == 1) || (ranked && keep > 1 && n == (unsigned long)keep))
            continue;
        if (unlink(s.paths[i]) != 0 && errno != ENOENT) {
            fprintf(stderr, "sluice %s: cannot remove the earlier journal %s: %s\n", c->name,
                    s.paths[i], strerror(errno));
            rc = 1;
        }
    }
    journal_set_fini(&s);
    return rc;
}

int
journal_set_staging(const struct cmd *c, const struct journal_set *s,
                    struct sl_journal_staging *dirs, uint32_t cap, uint32_t *n)
{
    struct sl_journal_staging *other = calloc(cap > 0 ? cap : 1, sizeof(*other));
    if (other == NULL)
        return cmd_usage_error(c, "out of memory");
    struct sl_error err = SL_ERROR_INIT;
    int rc = 0;
    *n = 0;
    for (uint32_t i = 0; rc == 0 && i < s->n; i++) {
        uint32_t m = 0;
        if (sl_journal_read_staging(s->paths[i], i == 0 ? dirs : other, cap, i == 0 ? n : &m,
                                    &err) != SL_OK) {
            fprintf(stderr, "sluice %s: --resume refused: %s\n", c->name, err.text);
            rc = 2;
            break;
        }
        bool same = i == 0 || m == *n;
        for (uint32_t k = 0; i > 0 && same && k < m; k++)
            same = other[k].dev == dirs[k].dev && other[k].ino == dirs[k].ino;
        if (!same) {
            fprintf(stderr,
                    "sluice %s: --resume refused: journals %s and %s name different output "
                    "directories: they are of different runs (remove the stale one, or run "
                    "without --resume to start afresh)\n",
                    c->name, s->paths[0], s->paths[i]);
            rc = 2;
        }
    }
    free(other);
    return rc;
}
