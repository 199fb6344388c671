/* SPDX-License-Identifier: MIT */
/*
 * The graph-file corpus: every tests/data/graph_json/invalid/<case>/input.json
 * must fail with the first error its `expected` file names (code, line and
 * column or JSON pointer, and a fragment of the message), and every
 * valid/<case>/input.json must load, creating nothing.  Array paths in the
 * cases start at tests/data/graph_json/arrays, which holds metadata-only
 * arrays to validate against.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>

#include <sluice.h>

#include "testutil.h"

TestSuite(graph_load_json_corpus, .timeout = 60.0);

/* The corpus folder, or NULL (the test is skipped) without SL_SOURCE_ROOT. */
static const char *
corpus_dir(void)
{
    static char dir[PATH_MAX];
    const char *root = getenv("SL_SOURCE_ROOT");
    if (root == NULL)
        return NULL;
    snprintf(dir, sizeof(dir), "%s/tests/data/graph_json", root);
    return dir;
}

/* What an invalid case expects of its first error. */
struct expected {
    char code[32];      /* status name, e.g. "EINVAL" */
    int line;           /* -1: none */
    int column;         /* -1: none */
    char path[96];      /* JSON pointer; "" for none ("-" in the file) */
    char fragment[200]; /* part of the message */
};

static bool
expected_read(const char *file, struct expected *e)
{
    size_t len;
    char *text = sl_test_read_file(file, &len);
    if (text == NULL)
        return false;
    char line[16], column[16];
    int n = sscanf(text, "%31s %15s %15s %95s", e->code, line, column, e->path);
    e->line = strcmp(line, "-") == 0 ? -1 : atoi(line);
    e->column = strcmp(column, "-") == 0 ? -1 : atoi(column);
    if (strcmp(e->path, "-") == 0)
        e->path[0] = '\0';
    const char *second = strchr(text, '\n');
    e->fragment[0] = '\0';
    if (second != NULL) {
        snprintf(e->fragment, sizeof(e->fragment), "%s", second + 1);
        e->fragment[strcspn(e->fragment, "\n")] = '\0';
    }
    free(text);
    return n == 4 && e->fragment[0] != '\0';
}

/* The case names under `kind` ("valid" or "invalid"), sorted; returns how many. */
static size_t
case_names(const char *kind, char names[][64], size_t max)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/%s", corpus_dir(), kind);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "no corpus folder %s", dir);
    size_t n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL && n < max)
        if (ent->d_name[0] != '.')
            snprintf(names[n++], 64, "%s", ent->d_name);
    closedir(d);
    qsort(names, n, 64, (int (*)(const void *, const void *))strcmp);
    return n;
}

static sl_graph_json *
load_case(const char *kind, const char *name, struct sl_graph_json_errors *errors)
{
    char file[PATH_MAX], base[PATH_MAX];
    snprintf(file, sizeof(file), "%s/%s/%s/input.json", corpus_dir(), kind, name);
    snprintf(base, sizeof(base), "%s/arrays", corpus_dir());
    struct sl_graph_json_opts opts = SL_GRAPH_JSON_OPTS_DEFAULT;
    opts.base_dir = base;
    return sl_graph_json_load_file(file, &opts, errors);
}

/* Compare a case's first error with what it expects; "" when it matches. */
static void
check_first_error(const struct sl_error *got, const struct expected *want, char *why, size_t size)
{
    why[0] = '\0';
    if (strcmp(sl_status_name(got->code), want->code) != 0 || got->line != want->line ||
        (want->line > 0 && got->column != want->column) || strcmp(got->path, want->path) != 0 ||
        strstr(got->text, want->fragment) == NULL)
        snprintf(why, size, "expected %s %d %d %s \"%s\"\n      found %s %d %d %s \"%s\"",
                 want->code, want->line, want->column, want->path[0] ? want->path : "-",
                 want->fragment, sl_status_name(got->code), got->line, got->column,
                 got->path[0] ? got->path : "-", got->text);
}

Test(graph_load_json_corpus, every_invalid_file_reports_its_expected_error)
{
    if (corpus_dir() == NULL)
        cr_skip_test("SL_SOURCE_ROOT is not set");
    static char names[256][64];
    size_t n = case_names("invalid", names, 256);
    cr_assert_geq(n, 25, "the corpus has %zu invalid cases", n);
    size_t n_bad = 0;
    for (size_t i = 0; i < n; i++) {
        char file[PATH_MAX];
        struct expected want;
        snprintf(file, sizeof(file), "%s/invalid/%s/expected", corpus_dir(), names[i]);
        cr_assert(expected_read(file, &want), "%s: malformed expected file", names[i]);
        struct sl_error records[20];
        struct sl_graph_json_errors errors = {.errors = records, .capacity = 20};
        sl_graph_json *doc = load_case("invalid", names[i], &errors);
        char why[512] = "";
        if (doc != NULL)
            snprintf(why, sizeof(why), "loaded without error");
        else if (errors.count == 0)
            snprintf(why, sizeof(why), "failed without recording an error");
        else
            check_first_error(&records[0], &want, why, sizeof(why));
        if (why[0] != '\0') {
            cr_log_error("invalid/%s: %s", names[i], why);
            n_bad++;
        }
        sl_graph_json_destroy(doc);
    }
    cr_assert_eq(n_bad, 0, "%zu of %zu invalid cases did not report what they expect", n_bad, n);
}

/* Every name under `dir`, recursively, joined into `out`. */
static void
tree_list(const char *dir, char *out, size_t size)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s\n", path);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            tree_list(path, out, size);
    }
    closedir(d);
}

Test(graph_load_json_corpus, every_valid_file_loads_and_creates_nothing)
{
    if (corpus_dir() == NULL)
        cr_skip_test("SL_SOURCE_ROOT is not set");
    static char names[64][64];
    static char before[16384], after[16384];
    char arrays[PATH_MAX];
    snprintf(arrays, sizeof(arrays), "%s/arrays", corpus_dir());
    before[0] = after[0] = '\0';
    tree_list(arrays, before, sizeof(before));
    size_t n = case_names("valid", names, 64);
    cr_assert_geq(n, 5);
    for (size_t i = 0; i < n; i++) {
        struct sl_error records[20];
        struct sl_graph_json_errors errors = {.errors = records, .capacity = 20};
        sl_graph_json *doc = load_case("valid", names[i], &errors);
        char first[512] = "";
        if (errors.count > 0)
            sl_error_format(&records[0], first, sizeof(first));
        cr_expect_not_null(doc, "valid/%s: %s", names[i], first);
        if (doc != NULL)
            cr_expect(sl_graph_is_sealed(sl_graph_json_graph(doc)), "valid/%s: not sealed",
                      names[i]);
        sl_graph_json_destroy(doc);
    }
    tree_list(arrays, after, sizeof(after));
    cr_assert_str_eq(after, before, "validating created or removed files under %s", arrays);
}

/* Load `n` bytes of `text`: it must load or fail with a recorded error. */
static void
load_mutant(const char *text, size_t n, const char *what, size_t at)
{
    char base[PATH_MAX];
    snprintf(base, sizeof(base), "%s/arrays", corpus_dir());
    struct sl_graph_json_opts opts = SL_GRAPH_JSON_OPTS_DEFAULT;
    opts.base_dir = base;
    struct sl_error records[4];
    struct sl_graph_json_errors errors = {.errors = records, .capacity = 4};
    sl_graph_json *doc = sl_graph_json_load_string(text, n, "mutant", &opts, &errors);
    if (doc == NULL)
        cr_assert(errors.count >= 1 && records[0].code != SL_OK && records[0].text[0] != '\0',
                  "%s at byte %zu failed without a message", what, at);
    sl_graph_json_destroy(doc);
}

Test(graph_load_json_corpus, truncated_and_mutated_files_fail_cleanly)
{
    if (corpus_dir() == NULL)
        cr_skip_test("SL_SOURCE_ROOT is not set");
    static char names[64][64];
    size_t n = case_names("valid", names, 64);
    static const char replacements[] = {'"', '0', '[', '}', ',', '-'};
    for (size_t i = 0; i < n; i++) {
        char file[PATH_MAX];
        snprintf(file, sizeof(file), "%s/valid/%s/input.json", corpus_dir(), names[i]);
        size_t len;
        char *text = sl_test_read_file(file, &len);
        cr_assert_not_null(text);
        for (size_t cut = 0; cut < len; cut++)
            load_mutant(text, cut, names[i], cut);
        char *copy = malloc(len);
        for (size_t at = 0; at < len; at += 3) {
            for (size_t r = 0; r < sizeof(replacements); r++) {
                memcpy(copy, text, len);
                copy[at] = replacements[r];
                load_mutant(copy, len, names[i], at);
            }
        }
        free(copy);
        free(text);
    }
}
