/* SPDX-License-Identifier: MIT */
/*
 * Loading JSON graph files: reading the file within its size limit,
 * parsing it (duplicate keys refused, nesting bounded) with located syntax
 * errors, the top level and "run" fields, and the passes that validate the
 * document and build the graph (see load_json_internal.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sluice/checked.h>
#include <sluice/plan.h>

#include "core_internal.h"
#include "load_json_internal.h"

/* ---- the "run" object ----------------------------------------------------------- */

static void
run_parse_memory(sl_graph_json *doc, const json_t *v, const char *ptr)
{
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        doc->run.memory_budget = (size_t)json_integer_value(v);
        return;
    }
    uint64_t bytes;
    if (json_is_string(v) && sl_size_parse(json_string_value(v), &bytes, NULL) == SL_OK &&
        bytes > 0 && bytes <= SIZE_MAX) {
        doc->run.memory_budget = (size_t)bytes;
        return;
    }
    sl__jdiag_add(
        &doc->diag, SL_EINVAL, ptr,
        "expected a positive byte count or a size like \"512M\" or \"2G\", found %s%s%s%s",
        sl__json_type_name(v), json_is_string(v) ? " \"" : "",
        json_is_string(v) ? json_string_value(v) : "", json_is_string(v) ? "\"" : "");
}

/* One of `names` (NULL-terminated): its index, or -1 after reporting. */
static int
jget_enum(struct sl__jdiag *d, const json_t *v, const char *ptr, const char *const *names)
{
    const char *s = NULL;
    if (!sl__jget_string(d, v, ptr, &s))
        return -1;
    char list[96];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; names[i] != NULL; i++) {
        if (strcmp(names[i], s) == 0)
            return i;
        sl__strbuf_append(list, sizeof(list), &len, "%s\"%s\"", i ? " or " : "", names[i]);
    }
    sl__jdiag_add(d, SL_EINVAL, ptr, "expected %s, found \"%s\"", list, s);
    return -1;
}

/* "journal": a file name, relative to the base directory unless absolute. */
static void
run_parse_journal(sl_graph_json *doc, const char *journal)
{
    size_t n = strlen(journal);
    if (n == 0 || journal[n - 1] == '/' || strchr(journal, '\n') != NULL) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, "/run/journal", "expected a file name, found \"%s\"",
                      journal);
        return;
    }
    int w = journal[0] == '/'
                ? snprintf(doc->journal, sizeof(doc->journal), "%s", journal)
                : snprintf(doc->journal, sizeof(doc->journal), "%s/%s", doc->base_dir, journal);
    if (w < 0 || (size_t)w >= sizeof(doc->journal)) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, "/run/journal",
                      "the path is too long: %zu bytes; at most %zu", n, sizeof(doc->journal) - 1);
        return;
    }
    doc->run.journal = doc->journal;
}

static void
run_parse(sl_graph_json *doc, const json_t *run)
{
    static const char *const keys[] = {
        "threads",     "memory",        "error_policy", "missing", "comment", "io_concurrency",
        "io_attempts", "io_deadline_s", "journal",      "retries", NULL};
    static const char *const policies[] = {"collect", "fail_fast", NULL};
    static const char *const missing[] = {"fill", "error", NULL};
    struct sl__jdiag *d = &doc->diag;
    if (!json_is_object(run)) {
        sl__jdiag_add(d, SL_EINVAL, "/run", "expected an object, found %s",
                      sl__json_type_name(run));
        return;
    }
    sl__jcheck_keys(d, run, "/run", "\"run\"", keys, NULL);
    const json_t *v;
    uint64_t threads;
    if ((v = json_object_get(run, "threads")) != NULL &&
        sl__jget_uint(d, v, "/run/threads", 1, 4096, &threads))
        doc->run.threads = (uint32_t)threads;
    if ((v = json_object_get(run, "memory")) != NULL)
        run_parse_memory(doc, v, "/run/memory");
    uint64_t window;
    if ((v = json_object_get(run, "io_concurrency")) != NULL &&
        sl__jget_uint(d, v, "/run/io_concurrency", 1, 4096, &window))
        doc->run.io_concurrency = (uint32_t)window;
    uint64_t attempts;
    if ((v = json_object_get(run, "io_attempts")) != NULL &&
        sl__jget_uint(d, v, "/run/io_attempts", 1, 1000, &attempts))
        doc->run.io_attempts = (uint32_t)attempts;
    if ((v = json_object_get(run, "io_deadline_s")) != NULL) {
        if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 86400 * 7)
            sl__jdiag_add(d, SL_EINVAL, "/run/io_deadline_s",
                          "expected a number of seconds above 0 and at most 604800, found %s",
                          sl__json_type_name(v));
        else
            doc->run.io_deadline_s = json_number_value(v);
    }
    uint64_t retries;
    if ((v = json_object_get(run, "retries")) != NULL &&
        sl__jget_uint(d, v, "/run/retries", 0, SL_PLAN_MAX_RETRIES, &retries))
        doc->run.retries = (uint32_t)retries;
    int k;
    if ((v = json_object_get(run, "error_policy")) != NULL &&
        (k = jget_enum(d, v, "/run/error_policy", policies)) >= 0)
        doc->run.policy = k == 0 ? SL_POLICY_COLLECT : SL_POLICY_FAIL_FAST;
    if ((v = json_object_get(run, "missing")) != NULL &&
        (k = jget_enum(d, v, "/run/missing", missing)) >= 0)
        doc->run.missing_is_error = k == 1;
    const char *comment;
    if ((v = json_object_get(run, "comment")) != NULL)
        (void)sl__jget_string(d, v, "/run/comment", &comment);
    const char *journal;
    if ((v = json_object_get(run, "journal")) != NULL &&
        sl__jget_string(d, v, "/run/journal", &journal))
        run_parse_journal(doc, journal);
}

/* ---- the document ----------------------------------------------------------------- */

/*
 * Refuse nesting deeper than `max`: report the line and column of the
 * first bracket too deep.  Strings are skipped, escapes included; columns
 * count characters, as jansson's do.
 */
static bool
text_check_depth(struct sl__jdiag *d, const char *text, size_t len, uint32_t max)
{
    uint32_t depth = 0;
    int line = 1, column = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if ((c & 0xc0) != 0x80)
            column++;
        if (c == '\n') {
            line++;
            column = 0;
        } else if (in_string) {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max) {
                char msg[96];
                snprintf(msg, sizeof(msg), "nesting deeper than %" PRIu32 " levels", max);
                sl__jdiag_add_at(d, SL_EOVERFLOW, line, column, i, msg);
                return false;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return true;
}

/* Check the top-level fields; false when the rest cannot be read (not an
 * object, or a version this build does not read). */
static bool
doc_check_top(sl_graph_json *doc)
{
    static const char *const keys[] = {"sluice",  "arrays",  "nodes", "run",
                                       "comment", "plugins", NULL};
    struct sl__jdiag *d = &doc->diag;
    if (!json_is_object(doc->root)) {
        sl__jdiag_add(d, SL_EINVAL, "", "expected a graph object {\"sluice\": %d, ...}, found %s",
                      SL_GRAPH_JSON_VERSION, sl__json_type_name(doc->root));
        return false;
    }
    const json_t *v = json_object_get(doc->root, "sluice");
    if (v == NULL) {
        sl__jdiag_add(d, SL_EINVAL, "/sluice",
                      "missing the format version: add \"sluice\": %d at the top",
                      SL_GRAPH_JSON_VERSION);
        return false;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 1) {
        sl__jdiag_add(d, SL_EINVAL, "/sluice", "expected the format version %d, found %s",
                      SL_GRAPH_JSON_VERSION, sl__json_type_name(v));
        return false;
    }
    if (json_integer_value(v) != SL_GRAPH_JSON_VERSION) {
        sl__jdiag_add(d, SL_EUNSUPPORTED, "/sluice",
                      "format version %" JSON_INTEGER_FORMAT " is not read by this build (it reads "
                      "version %d)",
                      json_integer_value(v), SL_GRAPH_JSON_VERSION);
        return false;
    }
    sl__jcheck_keys(d, doc->root, "", "a graph file", keys, NULL);
    const char *comment;
    if ((v = json_object_get(doc->root, "comment")) != NULL)
        (void)sl__jget_string(d, v, "/comment", &comment);
    return true;
}

/* The document pass: every field, name and reference. */
static void
doc_parse(sl_graph_json *doc)
{
    struct sl__jdiag *d = &doc->diag;
    const json_t *run = json_object_get(doc->root, "run");
    if (run != NULL)
        run_parse(doc, run);
    /* The nodes may name the plugins' operations: without them, the
     * errors the nodes would give only repeat this one. */
    const json_t *plugins = json_object_get(doc->root, "plugins");
    if (plugins != NULL && !sl__jplugins_load(doc, plugins))
        return;
    const json_t *arrays = json_object_get(doc->root, "arrays");
    if (arrays == NULL)
        sl__jdiag_add(d, SL_EINVAL, "/arrays",
                      "missing \"arrays\": an object naming the arrays the graph reads and writes");
    else if (!json_is_object(arrays))
        sl__jdiag_add(d, SL_EINVAL, "/arrays", "expected an object of named arrays, found %s",
                      sl__json_type_name(arrays));
    else {
        sl__jarrays_parse(doc, arrays);
        sl__jarrays_open(doc);
    }
    const json_t *nodes = json_object_get(doc->root, "nodes");
    if (nodes == NULL)
        sl__jdiag_add(d, SL_EINVAL, "/nodes",
                      "missing \"nodes\": an object of id -> node, or a list of nodes");
    else if (!json_is_object(nodes) && !json_is_array(nodes))
        sl__jdiag_add(d, SL_EINVAL, "/nodes",
                      "expected an object of id -> node or a list of nodes, found %s",
                      sl__json_type_name(nodes));
    else
        sl__jnodes_parse(doc, nodes);
    sl__jarrays_check_like(doc);
    sl__jpaths_check_alias(doc);
}

/* One build pass: a fresh graph with every node, then the arrays no node
 * needed.  @return true when nothing failed. */
static bool
doc_build(sl_graph_json *doc, bool on_disk)
{
    struct sl_error err = SL_ERROR_INIT;
    doc->graph = sl_graph_create(&doc->alloc, &err);
    if (doc->graph == NULL) {
        sl__jdiag_add_error(&doc->diag, "", &err);
        return false;
    }
    for (size_t k = 0; k < doc->n_order && !doc->diag.full; k++)
        (void)sl__jnode_build(doc, doc->order[k], on_disk);
    for (size_t i = 0; i < doc->n_arrays && !doc->diag.full; i++)
        (void)sl__jarray_resolve(doc, i, on_disk);
    /* Seal only a graph whose every node was built: its errors are the
     * loader's, with pointers, not the graph's. */
    if (doc->diag.count != 0)
        return false;
    if (sl_graph_seal(doc->graph, &err) != SL_OK) {
        sl__jdiag_add_error(&doc->diag, "/nodes", &err);
        return false;
    }
    return true;
}

/* Parse, validate and build from `text`; false when any error was found. */
static bool
doc_load(sl_graph_json *doc, const char *text, size_t len)
{
    size_t max_bytes = doc->opts.max_bytes != 0 ? doc->opts.max_bytes : SL_GRAPH_JSON_MAX_BYTES;
    uint32_t max_depth = doc->opts.max_depth != 0 ? doc->opts.max_depth : SL_GRAPH_JSON_MAX_DEPTH;
    if (len > max_bytes) {
        sl__jdiag_add(&doc->diag, SL_EOVERFLOW, "",
                      "graph file of %zu bytes exceeds the limit of %zu bytes", len, max_bytes);
        return false;
    }
    json_error_t jerr;
    doc->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (doc->root == NULL) {
        sl__jdiag_add_at(&doc->diag, SL_EPARSE, jerr.line, jerr.column, (size_t)jerr.position,
                         jerr.text);
        return false;
    }
    if (!text_check_depth(&doc->diag, text, len, max_depth) || !doc_check_top(doc))
        return false;
    doc_parse(doc);
    if (doc->diag.full || !doc_build(doc, false))
        return false;
    if (doc->opts.new_arrays == SL_GRAPH_JSON_IN_MEMORY)
        return true;
    /* The whole file is valid: build again, with the new arrays on disk. */
    sl_graph_unref(doc->graph);
    doc->graph = NULL;
    sl__jarrays_reset(doc);
    for (size_t i = 0; i < doc->n_nodes; i++)
        doc->nodes[i].mark = 0;
    return doc_build(doc, true);
}

/* Keep `name` for error records; a long one keeps its head and its tail. */
static void
doc_set_source(sl_graph_json *doc, const char *name)
{
    sl__text_fit(doc->source, sizeof(doc->source), name);
    doc->diag.source = doc->source;
}

static sl_graph_json *
doc_create(const struct sl_graph_json_opts *opts, const char *base_dir, const char *source,
           struct sl_graph_json_errors *errors)
{
    struct sl_graph_json_opts o = opts != NULL ? *opts : SL_GRAPH_JSON_OPTS_DEFAULT;
    struct sl_allocator a = o.alloc != NULL ? *o.alloc : sl_allocator_default();
    sl_graph_json *doc = sl_alloc_zeroed(&a, 1, sizeof(*doc), 0);
    char *dir = doc != NULL ? sl_strdup(&a, base_dir) : NULL;
    if (dir == NULL) {
        struct sl__jdiag d = {.out = errors, .source = source};
        sl__jdiag_add(&d, SL_ENOMEM, "", "no memory to load a graph file");
        sl_free(&a, doc, sizeof(*doc));
        return NULL;
    }
    doc->alloc = a;
    doc->opts = o;
    doc->opts.alloc = &doc->alloc;
    doc->base_dir = dir;
    doc->opts.base_dir = dir;
    doc->diag.out = errors;
    doc->run.policy = SL_POLICY_COLLECT;
    doc_set_source(doc, source);
    return doc;
}

sl_graph_json *
sl_graph_json_load_string(const char *text, size_t len, const char *source,
                          const struct sl_graph_json_opts *opts,
                          struct sl_graph_json_errors *errors)
{
    const char *dir = opts != NULL && opts->base_dir != NULL ? opts->base_dir : ".";
    sl_graph_json *doc = doc_create(opts, dir, source != NULL ? source : "<string>", errors);
    if (doc == NULL)
        return NULL;
    if (text == NULL) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, "", "no text to load");
        sl_graph_json_destroy(doc);
        return NULL;
    }
    if (!doc_load(doc, text, len)) {
        sl_graph_json_destroy(doc);
        return NULL;
    }
    return doc;
}

/* Read the file at `path` into an owned buffer, refusing more than `max`
 * bytes before reading them. */
static char *
file_read(sl_graph_json *doc, const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (f == NULL || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = f == NULL ? errno : S_ISREG(st.st_mode) ? errno : EISDIR;
        sl__jdiag_add(&doc->diag, e == ENOENT ? SL_ENOTFOUND : SL_EIO, "",
                      "cannot read graph file: %s", strerror(e));
        if (f != NULL)
            fclose(f);
        return NULL;
    }
    if ((uint64_t)st.st_size > max) {
        sl__jdiag_add(&doc->diag, SL_EOVERFLOW, "",
                      "graph file of %" PRIu64 " bytes exceeds the limit of %zu bytes",
                      (uint64_t)st.st_size, max);
        fclose(f);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    char *text = sl_alloc(&doc->alloc, n + 1, 0);
    if (text == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, "", "no memory for a graph file of %zu bytes", n);
        fclose(f);
        return NULL;
    }
    size_t got = fread(text, 1, n, f);
    fclose(f);
    if (got != n) {
        sl__jdiag_add(&doc->diag, SL_EIO, "", "read %zu of %zu bytes of the graph file", got, n);
        sl_free(&doc->alloc, text, n + 1);
        return NULL;
    }
    *len = n;
    return text;
}

sl_graph_json *
sl_graph_json_load_file(const char *path, const struct sl_graph_json_opts *opts,
                        struct sl_graph_json_errors *errors)
{
    if (path == NULL) {
        struct sl__jdiag d = {.out = errors, .source = ""};
        sl__jdiag_add(&d, SL_EINVAL, "", "no graph file named");
        return NULL;
    }
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (opts != NULL && opts->base_dir != NULL)
        snprintf(dir, sizeof(dir), "%s", opts->base_dir);
    else if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
    sl_graph_json *doc = doc_create(opts, dir, path, errors);
    if (doc == NULL)
        return NULL;
    size_t max = doc->opts.max_bytes != 0 ? doc->opts.max_bytes : SL_GRAPH_JSON_MAX_BYTES;
    size_t len = 0;
    char *text = file_read(doc, path, max, &len);
    bool ok = text != NULL && doc_load(doc, text, len);
    if (text != NULL)
        sl_free(&doc->alloc, text, len + 1);
    if (!ok) {
        sl_graph_json_destroy(doc);
        return NULL;
    }
    return doc;
}

void
sl_graph_json_destroy(sl_graph_json *doc)
{
    if (doc == NULL)
        return;
    sl_graph_unref(doc->graph);
    sl__jnodes_fini(doc);
    sl__jarrays_fini(doc);
    sl__jreplace_fini(doc);
    json_decref(doc->root);
    struct sl_allocator a = doc->alloc;
    sl_free(&a, doc->base_dir, strlen(doc->base_dir) + 1);
    sl_free(&a, doc, sizeof(*doc));
}

sl_graph *
sl_graph_json_graph(const sl_graph_json *doc)
{
    return doc->graph;
}

void
sl_graph_json_run_opts(const sl_graph_json *doc, struct sl_graph_json_run *out)
{
    *out = doc->run;
}
