/* SPDX-License-Identifier: MIT */
/*
 * The nodes a graph file creates on disk are written beside their paths
 * (sl_fs_replace) and put in place by sl_graph_json_commit after the run,
 * so that a refused, failed or killed run leaves every path as it was;
 * "overwrite": "in-place" empties an existing node first instead.  S3 has
 * no rename of a prefix: an s3:// node is written where it is, its old
 * node (when "overwrite" allows) deleted first, so a failed or killed run
 * leaves the new node's metadata with the chunks written so far.  Here
 * too: the stores of a file's arrays and nodes, local, http(s) or s3://,
 * opened with the file's remote options.
 *
 * DESIGN: with `defer_sync` a node staged out of sight is written without
 * an fsync per object and synced once, before the rename that puts it in
 * place: a crash before that rename leaves only the staging directory,
 * which the next run removes; after it, every object is on disk.  A node
 * written in place (an existing one with "in-place") keeps an fsync per
 * object, as nothing hides it while it is written.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/alloc.h>
#include <sluice/remote.h>

#include "load_json_internal.h"

/* Take over the node an earlier run wrote for `full_path`: the one of
 * the directories to resume that is its. */
static sl_fs_replace *
jreplace_resume(sl_graph_json *doc, const char *full_path, struct sl_error *err)
{
    for (uint32_t i = 0; i < doc->opts.n_resume; i++) {
        const struct sl_journal_staging *js = &doc->opts.resume[i];
        struct sl_error e = SL_ERROR_INIT;
        sl_fs_replace *r = sl_fs_replace_resume(full_path, js->path, js->dev, js->ino, &e);
        if (r != NULL)
            return r;
        if (e.code != SL_ENOTFOUND && e.code != SL_EINVAL) {
            *err = e;
            return NULL;
        }
    }
    sl_error_set(err, SL_ENOTFOUND, NULL,
                 "none of the %" PRIu32 " directories the earlier run wrote into is this node's",
                 doc->opts.n_resume);
    return NULL;
}

const char *
sl__jreplace_begin(sl_graph_json *doc, const struct sl__jdest *d)
{
    const char *path = d->path, *ptr = d->ptr;
    size_t old = doc->n_reps * sizeof(struct sl__jrep);
    struct sl__jrep *grown = sl_alloc(&doc->alloc, old + sizeof(struct sl__jrep), 0);
    if (grown == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, ptr, "out of memory creating \"%s\"", path);
        return NULL;
    }
    if (old > 0)
        memcpy(grown, doc->reps, old);
    sl_free(&doc->alloc, doc->reps, old);
    doc->reps = grown;
    sl_fs_replace_mode mode = d->in_place    ? SL_FS_REPLACE_IN_PLACE
                              : d->overwrite ? SL_FS_REPLACE_STAGED
                                             : SL_FS_REPLACE_REFUSE;
    struct sl_error err = SL_ERROR_INIT;
    sl_fs_replace *r = doc->opts.n_resume > 0 ? jreplace_resume(doc, d->full_path, &err)
                                              : sl_fs_replace_begin(d->full_path, mode, &err);
    if (r == NULL) {
        bool may = err.code == SL_EEXIST && mode == SL_FS_REPLACE_REFUSE &&
                   strstr(err.text, "needs the overwrite") != NULL;
        sl__jdiag_add(&doc->diag, err.code, ptr, "\"%s\": %s%s", path, err.text,
                      may ? " (set \"overwrite\": true, or \"in-place\")" : "");
        return NULL;
    }
    doc->reps[doc->n_reps++] = (struct sl__jrep){.rep = r, .sync = NULL, .path = path};
    return sl_fs_replace_path(r);
}

const char *
sl__jreplace_find(sl_graph_json *doc, const char *full_path)
{
    struct sl_error err = SL_ERROR_INIT;
    if (sl_fs_replace_find(full_path, doc->found, sizeof(doc->found), &err) != SL_OK)
        return full_path;
    return doc->found;
}

/* sl__jnode_store for an s3:// node: written where it is.  Creating (not
 * opening) makes room first: the check of the document pass again, since
 * time has passed, then the old node's keys deleted when "overwrite"
 * allows. */
/* see load_json_internal.h */
sl_store *
sl__jstore_open_url(sl_graph_json *doc, const char *full_path, const char *endpoint,
                    const char *region, bool missing_on_403, bool writable, struct sl_error *err)
{
    struct sl_url_store_opts so = SL_URL_STORE_OPTS_DEFAULT;
    so.fs.create = false;
    so.fs.read_only = !writable;
    so.fs.alloc = &doc->alloc;
    so.http.alloc = &doc->alloc;
    so.http.missing_on_403 = missing_on_403 || doc->opts.missing_on_403;
    so.s3.endpoint = endpoint != NULL ? endpoint : doc->opts.endpoint;
    so.s3.region = region != NULL ? region : doc->opts.region;
    so.s3.anonymous = doc->opts.no_sign_request;
    so.s3.read_only = !writable;
    if (doc->opts.io_concurrency > 0 || doc->run.io_concurrency > 0)
        so.http.io_concurrency =
            doc->opts.io_concurrency > 0 ? doc->opts.io_concurrency : doc->run.io_concurrency;
    if (doc->opts.io_attempts > 0 || doc->run.io_attempts > 0)
        so.http.max_attempts =
            doc->opts.io_attempts > 0 ? doc->opts.io_attempts : doc->run.io_attempts;
    if (doc->opts.io_deadline_s > 0 || doc->run.io_deadline_s > 0)
        so.http.request_deadline_s =
            doc->opts.io_deadline_s > 0 ? doc->opts.io_deadline_s : doc->run.io_deadline_s;
    sl_http_store_opts_fit_budget(&so.http,
                                  doc->opts.memory > 0 ? doc->opts.memory : doc->run.memory_budget);
    return sl_store_open_url(full_path, &so, err);
}

static sl_store *
s3_node_store(sl_graph_json *doc, const struct sl__jdest *d, struct sl_error *err)
{
    sl_store *s = sl__jstore_open_url(doc, d->full_path, d->endpoint, d->region, false, true, err);
    if (s == NULL || sl__jnode_opens(doc, d, true))
        return s;
    struct sl_error e = SL_ERROR_INIT;
    bool existed = false;
    if (sl_zarr_make_room(s, "", d->overwrite, true, &existed, &e) == SL_OK)
        return s;
    sl_store_unref(s);
    if (e.code == SL_EEXIST && existed)
        sl__jdiag_add(&doc->diag, e.code, d->ptr, "\"%s\" %s (set \"overwrite\": true)", d->path,
                      e.text);
    else
        sl__jdiag_add(&doc->diag, e.code, d->ptr, "cannot write \"%s\": %s", d->path, e.text);
    return NULL;
}

bool
sl__jnode_opens(const sl_graph_json *doc, const struct sl__jdest *d, bool on_disk)
{
    return on_disk && (doc->opts.new_arrays == SL_GRAPH_JSON_OPEN || doc->opts.n_resume > 0 ||
                       (doc->opts.resuming && sl_url_is_s3(d->full_path)));
}

/* Keep the memory store `mem` an in-memory build made for s3:// node `d`. */
static sl_status
inplace_keep(sl_graph_json *doc, const struct sl__jdest *d, sl_store *mem, struct sl_error *err)
{
    size_t old = doc->n_inplace * sizeof(struct sl__jinplace);
    struct sl__jinplace *grown = sl_alloc(&doc->alloc, old + sizeof(struct sl__jinplace), 0);
    char *url = sl_alloc(&doc->alloc, strlen(d->full_path) + 1, 0);
    char *ptr = sl_alloc(&doc->alloc, strlen(d->ptr) + 1, 0);
    if (grown == NULL || url == NULL || ptr == NULL) {
        sl_free(&doc->alloc, grown, old + sizeof(struct sl__jinplace));
        sl_free(&doc->alloc, url, strlen(d->full_path) + 1);
        sl_free(&doc->alloc, ptr, strlen(d->ptr) + 1);
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for \"%s\"", d->path);
    }
    if (old > 0)
        memcpy(grown, doc->inplace, old);
    sl_free(&doc->alloc, doc->inplace, old);
    memcpy(url, d->full_path, strlen(d->full_path) + 1);
    memcpy(ptr, d->ptr, strlen(d->ptr) + 1);
    sl_store_ref(mem);
    grown[doc->n_inplace++] = (struct sl__jinplace){
        .url = url, .ptr = ptr, .endpoint = d->endpoint, .region = d->region, .mem = mem};
    doc->inplace = grown;
    return SL_OK;
}

/* Whether node `d`, begun as `r`, may be written without an fsync per
 * object (see DESIGN): the caller asked, the node is staged out of sight
 * (not an existing one emptied in place) and begun afresh (a resume goes
 * on with a journal, which records objects as durable as they are
 * written). */
static bool
jrep_may_defer_sync(const sl_graph_json *doc, const sl_fs_replace *r, const struct sl__jdest *d)
{
    return doc->opts.defer_sync && doc->opts.new_arrays == SL_GRAPH_JSON_CREATE &&
           doc->opts.n_resume == 0 && !(d->in_place && sl_fs_replace_existed(r));
}

sl_store *
sl__jnode_store(sl_graph_json *doc, const struct sl__jdest *d, bool on_disk, struct sl_error *err)
{
    if (!on_disk) {
        struct sl_mem_store_opts mo = SL_MEM_STORE_OPTS_DEFAULT;
        mo.alloc = &doc->alloc;
        sl_store *mem = sl_store_create_memory(&mo, err);
        if (mem != NULL && sl_url_is_s3(d->full_path) && inplace_keep(doc, d, mem, err) != SL_OK) {
            sl_store_unref(mem);
            return NULL;
        }
        return mem;
    }
    if (sl_url_is_s3(d->full_path))
        return s3_node_store(doc, d, err);
    bool open = doc->opts.new_arrays == SL_GRAPH_JSON_OPEN;
    const char *dir = open ? sl__jreplace_find(doc, d->full_path) : sl__jreplace_begin(doc, d);
    if (dir == NULL)
        return NULL;
    struct sl__jrep *jr = open ? NULL : &doc->reps[doc->n_reps - 1];
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.create = !open;
    so.alloc = &doc->alloc;
    so.defer_sync = jr != NULL && jrep_may_defer_sync(doc, jr->rep, d);
    sl_store *s = sl_store_open_fs(dir, &so, err);
    if (s != NULL && so.defer_sync && !doc->opts.no_sync) {
        sl_store_ref(s);
        jr->sync = s;
    }
    return s;
}

/* Put node `jr` in place, syncing it first when its objects were written
 * without an fsync each; a node that cannot be synced is removed instead.
 * @return SL_OK, or the failure, recorded in `err` (the first error wins). */
static sl_status
jrep_commit(struct sl__jrep *jr, struct sl_error *err)
{
    sl_fs_replace *r = jr->rep;
    sl_store *sync = jr->sync;
    jr->rep = NULL;
    jr->sync = NULL;
    struct sl_error e = SL_ERROR_INIT;
    sl_status st = sync != NULL ? sl_store_sync(sync, &e) : SL_OK;
    sl_store_unref(sync);
    if (st != SL_OK) {
        sl_fs_replace_abort(r);
        return sl_error_set(err, st, NULL,
                            "\"%s\": the new node could not be made durable, so it was "
                            "removed and the path left as it was: %s",
                            jr->path, e.text);
    }
    if (sl_fs_replace_commit(r, &e) != SL_OK)
        return sl_error_set(err, e.code, NULL, "%s", e.text);
    return SL_OK;
}

sl_status
sl_graph_json_commit(sl_graph_json *doc, bool run_ok, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    sl_status st = SL_OK;
    for (size_t i = 0; i < doc->n_reps; i++) {
        struct sl__jrep *jr = &doc->reps[i];
        if (jr->rep == NULL)
            continue;
        sl_status one = SL_OK;
        if (run_ok || !sl_fs_replace_existed(jr->rep)) {
            one = jrep_commit(jr, err);
        } else {
            sl_fs_replace_abort(jr->rep);
            jr->rep = NULL;
        }
        if (st == SL_OK)
            st = one;
    }
    return st;
}

size_t
sl_graph_json_staging(const sl_graph_json *doc, const char **dirs, size_t cap)
{
    for (size_t i = 0; i < doc->n_reps && i < cap; i++)
        dirs[i] = doc->reps[i].rep != NULL ? sl_fs_replace_path(doc->reps[i].rep) : "";
    return doc->n_reps;
}

void
sl_graph_json_keep(sl_graph_json *doc)
{
    for (size_t i = 0; i < doc->n_reps; i++) {
        sl_fs_replace_keep(doc->reps[i].rep);
        doc->reps[i].rep = NULL;
    }
}

size_t
sl_graph_json_n_in_place(const sl_graph_json *doc)
{
    return doc->n_inplace;
}

sl_status
sl_graph_json_check_in_place(sl_graph_json *doc, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    for (size_t i = 0; i < doc->n_inplace; i++) {
        const struct sl__jinplace *ip = &doc->inplace[i];
        struct sl_error e = SL_ERROR_INIT;
        sl_store *at =
            sl__jstore_open_url(doc, ip->url, ip->endpoint, ip->region, false, false, &e);
        char first[SL_STORE_KEY_MAX];
        bool missing = false;
        sl_zarr_kind kind = SL_ZARR_NONE;
        sl_status st = at != NULL ? sl_zarr_probe(at, "", &kind, NULL, &e) : e.code;
        if (st == SL_OK && kind == SL_ZARR_NONE) {
            sl_store_unref(at);
            return sl_error_set(err, SL_ENOTFOUND, NULL,
                                "%s: no Zarr node at %s, where the earlier run wrote (run "
                                "without --resume to start afresh)",
                                ip->ptr, ip->url);
        }
        if (st == SL_OK)
            st = sl_store_objects_match(ip->mem, at, first, sizeof(first), &missing, &e);
        sl_store_unref(at);
        if (st != SL_OK)
            return sl_error_set(err, st, NULL, "%s: cannot look at %s: %s", ip->ptr, ip->url,
                                e.text);
        if (first[0] == '\0')
            continue;
        return sl_error_set(err, SL_ECONFLICT, NULL,
                            "%s: the node at %s is not the one this file makes: its \"%s\" "
                            "%s (a layout, codec or attribute changed, or another run wrote "
                            "there; run without --resume to start afresh)",
                            ip->ptr, ip->url, first, missing ? "is missing" : "differs");
    }
    return SL_OK;
}

void
sl__jreplace_fini(sl_graph_json *doc)
{
    for (size_t i = 0; i < doc->n_inplace; i++) {
        struct sl__jinplace *ip = &doc->inplace[i];
        sl_free(&doc->alloc, ip->url, strlen(ip->url) + 1);
        sl_free(&doc->alloc, ip->ptr, strlen(ip->ptr) + 1);
        sl_store_unref(ip->mem);
    }
    sl_free(&doc->alloc, doc->inplace, doc->n_inplace * sizeof(struct sl__jinplace));
    doc->inplace = NULL;
    doc->n_inplace = 0;
    /* What an earlier run wrote is never removed by a resume that stops. */
    for (size_t i = 0; i < doc->n_reps; i++) {
        if (doc->opts.n_resume > 0)
            sl_fs_replace_keep(doc->reps[i].rep);
        else
            sl_fs_replace_abort(doc->reps[i].rep);
        sl_store_unref(doc->reps[i].sync);
    }
    sl_free(&doc->alloc, doc->reps, doc->n_reps * sizeof(struct sl__jrep));
    doc->reps = NULL;
    doc->n_reps = 0;
}
