/* SPDX-License-Identifier: MIT */
/*
 * The graph file's paths against each other: two entries of "arrays", or an
 * array and a pyramid's "group", that name one directory under two
 * spellings (a symbolic link, "..", "./x" and "x", a trailing slash), or one
 * inside the other.  Writing one would replace or change what the other
 * names (reading from inside a node being replaced destroys the input), and
 * two names for one array read are a mistake too; so each is refused at its
 * "path" (or "group"), naming both as written, before anything is created.
 * s3:// URLs are compared with each other as written (bucket and prefix).
 * The same *name* twice is the links' business (load_json_links.c).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <sluice/fs.h>

#include <sluice/remote.h>

#include "load_json_internal.h"

/* One path of the file. */
struct alias_entry {
    const char *path;  /* as written */
    const char *full;  /* joined to the base directory */
    const char *owner; /* "/arrays/<name>" or "/nodes/<id>" */
    const char *key;   /* "path", "group" or "source" (a copy's) */
    bool written;      /* created, written by a put, or a pyramid's or copy's group */
    char *real;        /* resolved; owned, NULL when it could not be */
    size_t real_bytes; /* its allocation */
};

/* Whether `full` is an http(s) URL: read only (a group there is refused
 * when checked), and no other path names it. */
static bool
alias_http(const char *full)
{
    return sl_url_is_remote(full) && !sl_url_is_s3(full);
}

/* Count the entries with a path, filling `e` when not NULL. */
static size_t
alias_collect(const sl_graph_json *doc, struct alias_entry *e)
{
    size_t n = 0;
    for (size_t i = 0; i < doc->n_arrays; i++) {
        const struct sl__jarray *a = &doc->arrays[i];
        if (a->full_path == NULL || alias_http(a->full_path))
            continue; /* read only, and no other path names it */
        if (e != NULL)
            e[n] = (struct alias_entry){.path = a->path,
                                        .full = a->full_path,
                                        .owner = a->ptr,
                                        .key = "path",
                                        .written = a->role == SL__JARRAY_CREATE || a->writer >= 0};
        n++;
    }
    for (size_t i = 0; i < doc->n_nodes; i++) {
        const struct sl__jnode *node = &doc->nodes[i];
        /* A pyramid's or copy's group (written); a copy's source (read). */
        const char *full[2] = {NULL, NULL}, *path[2] = {NULL, NULL};
        if (node->kind == SL__JNODE_PYRAMID) {
            full[0] = node->pyramid.full_path;
            path[0] = node->pyramid.group;
        } else if (node->kind == SL__JNODE_COPY) {
            full[0] = node->copy.full_path;
            path[0] = node->copy.group;
            full[1] = node->copy.source_full;
            path[1] = node->copy.source;
        }
        for (int k = 0; k < 2; k++) {
            if (full[k] == NULL || alias_http(full[k]))
                continue;
            if (e != NULL)
                e[n] = (struct alias_entry){.path = path[k],
                                            .full = full[k],
                                            .owner = node->ptr,
                                            .key = k == 0 ? "group" : "source",
                                            .written = k == 0};
            n++;
        }
    }
    return n;
}

/* Resolve entry `e` into an owned string; false after reporting. */
static bool
alias_resolve(sl_graph_json *doc, struct alias_entry *e)
{
    char at[SL__JPTR_MAX], real[PATH_MAX];
    sl__jptr_key(at, e->owner, e->key);
    struct sl_error err = SL_ERROR_INIT;
    if (sl_url_is_s3(e->full)) /* compared as written (sl_s3_url_overlap) */
        snprintf(real, sizeof(real), "%s", e->full);
    else if (sl_fs_path_resolve(e->full, real, sizeof(real), &err) != SL_OK) {
        sl__jdiag_add(&doc->diag, err.code, at, "cannot resolve \"%s\": %s", e->path, err.text);
        return false;
    }
    e->real_bytes = strlen(real) + 1;
    e->real = sl_alloc(&doc->alloc, e->real_bytes, 0);
    if (e->real == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, at, "no memory for a path of %zu bytes",
                      e->real_bytes);
        return false;
    }
    memcpy(e->real, real, e->real_bytes);
    return true;
}

/* True when entry `j` is an array spelled like an earlier one once joined
 * to the base directory: load_json_arrays.c reported that already. */
static bool
alias_spelled_alike(const struct alias_entry *e, size_t j)
{
    for (size_t i = 0; i < j; i++)
        if (strcmp(e[i].key, "path") == 0 && strcmp(e[j].key, "path") == 0 &&
            strcmp(e[i].full, e[j].full) == 0)
            return true;
    return false;
}

/* Report `b` (the later entry) if it aliases `a`.  @return true when it
 * does. */
static bool
alias_report(sl_graph_json *doc, const struct alias_entry *a, const struct alias_entry *b)
{
    bool s3 = sl_url_is_s3(a->real) || sl_url_is_s3(b->real);
    sl_fs_overlap o =
        s3 ? sl_s3_url_overlap(b->real, a->real) : sl_fs_path_overlap(b->real, a->real);
    /* Reading one place twice is wrong only for two "arrays" entries. */
    bool copy_read = strcmp(a->key, "source") == 0 || strcmp(b->key, "source") == 0;
    if (o == SL_FS_APART || ((o != SL_FS_SAME || copy_read) && !a->written && !b->written))
        return false;
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, b->owner, b->key);
    /* Named in full: the record keeps a too long message's head and tail. */
    const char *pa = a->path, *pb = b->path, *other = a->owner, *real = b->real;
    struct sl__jdiag *d = &doc->diag;
    if (o == SL_FS_SAME) {
        sl__jdiag_add(d, SL_EINVAL, at, "\"%s\" and \"%s\" (%s) are one %s, %s; %s", pb, pa, other,
                      a->written || b->written ? "directory" : "array", real,
                      a->written || b->written ? "writing one replaces the other" : "name it once");
        return true;
    }
    /* `b` inside `a`, or `a` (named with its pointer) inside `b`. */
    const char *outer_words = (o == SL_FS_INSIDE ? a->written : b->written)
                                  ? "replacing the outer would destroy the inner"
                                  : "writing the inner would change the outer";
    if (o == SL_FS_INSIDE)
        sl__jdiag_add(d, SL_EINVAL, at, "\"%s\" lies inside \"%s\" (%s); %s", pb, pa, other,
                      outer_words);
    else
        sl__jdiag_add(d, SL_EINVAL, at, "\"%s\" (%s) lies inside \"%s\"; %s", pa, other, pb,
                      outer_words);
    return true;
}

void
sl__jpaths_check_alias(sl_graph_json *doc)
{
    size_t n = alias_collect(doc, NULL);
    if (n < 2 || doc->diag.full)
        return;
    struct alias_entry *e = sl_alloc_zeroed(&doc->alloc, n, sizeof(*e), 0);
    if (e == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, "/arrays", "no memory to compare %zu paths", n);
        return;
    }
    (void)alias_collect(doc, e);
    for (size_t k = 0; k < n && !doc->diag.full; k++)
        (void)alias_resolve(doc, &e[k]);
    /* One report per entry, against the first it aliases; an entry that
     * could not be resolved, or is spelled like an earlier array, was
     * reported already. */
    for (size_t j = 1; j < n && !doc->diag.full; j++)
        for (size_t i = 0; i < j && e[j].real != NULL && !alias_spelled_alike(e, j); i++)
            if (e[i].real != NULL && alias_report(doc, &e[i], &e[j]))
                break;
    for (size_t k = 0; k < n; k++)
        if (e[k].real != NULL)
            sl_free(&doc->alloc, e[k].real, e[k].real_bytes);
    sl_free(&doc->alloc, e, n * sizeof(*e));
}
