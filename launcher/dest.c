/* SPDX-License-Identifier: MIT */
/*
 * Output nodes of commands: aliasing refused, existing nodes replaced whole
 * and atomically (or in place when asked, and always on S3), nothing left
 * behind by a refused run.  See dest.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dest.h"
#include "dist.h"
#include "journal_set.h"
#include "runner.h"

int
dest_check_alias(const struct cmd *c, const char *src, const char *dst)
{
    if (src != NULL && sl_s3_url_overlap(src, dst) != SL_FS_APART)
        return cmd_usage_error(c,
                               "SRC \"%s\" and DST \"%s\" are the same S3 node or one lies "
                               "inside the other: writing DST would destroy its input; write to "
                               "another prefix",
                               src, dst);
    if (sl_url_is_s3(dst))
        return 0;
    if (strstr(dst, "://") != NULL)
        return cmd_usage_error(c,
                               "DST \"%s\": outputs are directories or s3:// URLs; http(s) "
                               "stores are read here, not written",
                               dst);
    if (strstr(src, "://") != NULL)
        return 0; /* a remote input cannot alias a local output */
    char a[4096], b[4096];
    struct sl_error err = SL_ERROR_INIT;
    if (sl_fs_path_resolve(src, a, sizeof(a), &err) != SL_OK ||
        sl_fs_path_resolve(dst, b, sizeof(b), &err) != SL_OK)
        return cmd_usage_error(c, "%s", err.text);
    switch (sl_fs_path_overlap(a, b)) {
    case SL_FS_APART:
        return 0;
    case SL_FS_SAME:
        return cmd_usage_error(c,
                               "SRC \"%s\" and DST \"%s\" are the same directory (%s); write "
                               "to another path",
                               src, dst, a);
    case SL_FS_INSIDE:
        return cmd_usage_error(c,
                               "SRC \"%s\" lies inside DST \"%s\" (%s inside %s): writing DST "
                               "would destroy its input; write to another path",
                               src, dst, a, b);
    case SL_FS_CONTAINS:
    default:
        return cmd_usage_error(c,
                               "DST \"%s\" lies inside SRC \"%s\" (%s inside %s): writing it "
                               "would change its input; write to another path",
                               dst, src, b, a);
    }
}

int
dest_begin(const struct cmd *c, struct dest *d, const char *path, const struct array_opts *ao)
{
    memset(d, 0, sizeof(*d));
    d->given = path;
    d->in_place = ao->overwrite_in_place;
    sl_fs_replace_mode mode = ao->overwrite_in_place ? SL_FS_REPLACE_IN_PLACE
                              : ao->overwrite        ? SL_FS_REPLACE_STAGED
                                                     : SL_FS_REPLACE_REFUSE;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = SL_OK;
    if (dist_rank() == 0) {
        d->rep = sl_fs_replace_begin(path, mode, &err);
        st = d->rep != NULL ? SL_OK : err.code;
        if (d->rep != NULL) {
            snprintf(d->at, sizeof(d->at), "%s", sl_fs_replace_path(d->rep));
            d->existed = sl_fs_replace_existed(d->rep);
        }
    }
    st = dist_share(st, &err);
    dist_share_text(d->at, sizeof(d->at));
    if (st == SL_OK)
        return 0;
    bool may = mode == SL_FS_REPLACE_REFUSE && strstr(err.text, "needs the overwrite") != NULL;
    fprintf(stderr, "sluice %s: %s%s\n", c->name, err.text,
            may ? " (pass --overwrite to replace it whole, or --overwrite-in-place)" : "");
    return 2;
}

sl_store *
dest_open_store(const struct dest *d, struct sl_error *err)
{
    if (!d->defer_sync)
        return open_dir_store(d->at, true, err);
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.defer_sync = true;
    return sl_store_open_fs(d->at, &o, err);
}

int
dest_sync(const struct cmd *c, struct dest *d, sl_store *out, int rc)
{
    if (!d->defer_sync || d->no_sync || out == NULL || (rc != 0 && rc != 1))
        return rc;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_store_sync(out, &err) == SL_OK)
        return rc;
    fprintf(stderr, "sluice %s: %s: %s\n", c->name, d->given, err.text);
    d->sync_failed = true;
    return 1;
}

/*
 * Whether d's objects may be written without an fsync each, synced once
 * before commit: the node is staged out of sight (a crash before the
 * commit's rename leaves only the staging directory, removed by the next
 * run) and nothing records objects as durable as they are written (a
 * journal: the kernel may write its record back before the object).  One
 * process only: the ranks of a run across processes would each have to
 * sync before rank 0 commits.
 */
static bool
dest_may_defer_sync(const struct dest *d)
{
    return d->journal == NULL && !d->resumed && !(d->in_place && d->existed) && dist_size() == 1;
}

int
dest_finish(const struct cmd *c, struct dest *d, int rc)
{
    if (d->rep == NULL)
        return dist_exit_status(rc);
    /* In place the old node is gone already: keep what this run wrote.
     * Not what a failed sync may have lost. */
    bool keep = !d->sync_failed && (rc == 0 || (rc == 1 && (!d->existed || d->in_place)));
    if (keep) {
        struct sl_error err = SL_ERROR_INIT;
        if (sl_fs_replace_commit(d->rep, &err) != SL_OK) {
            fprintf(stderr, "sluice %s: %s: the new node was not put in place: %s\n", c->name,
                    d->given, err.text);
            rc = 1;
        }
    } else if (d->journal != NULL && (rc == 1 || d->resumed)) {
        /* What was written stays for --resume (a refused resume keeps it too). */
        fprintf(stderr,
                "sluice %s: %s: left as it was; this run's output is kept in %s for "
                "--resume\n",
                c->name, d->given, d->at);
        sl_fs_replace_keep(d->rep);
    } else {
        sl_fs_replace_abort(d->rep);
        if (rc == 1)
            fprintf(stderr,
                    "sluice %s: %s: left as it was, since the run did not succeed (its output "
                    "was removed)\n",
                    c->name, d->given);
    }
    d->rep = NULL;
    return dist_exit_status(rc);
}

sl_array *
dest_create_array(sl_store *out, const char *path, const struct sl_array_spec *spec, bool real,
                  struct sl_error *err)
{
    /* Only a resumed run finds its array made (dest_begin starts empty). */
    if (real && dest_has_node(out, path))
        return sl_array_open(out, path, NULL, err);
    return real ? dist_create_array(out, path, spec, err)
                : sl_array_create(out, path, spec, NULL, err);
}

bool
dest_has_node(sl_store *out, const char *path)
{
    sl_zarr_kind kind = SL_ZARR_NONE;
    return sl_zarr_probe(out, path, &kind, NULL, NULL) == SL_OK && kind != SL_ZARR_NONE;
}

/* Make room for the node at the root of S3 store `out` (`path`): nothing
 * there, or, as `ao` allows, a Zarr node deleted first (S3 cannot rename a
 * prefix, so --overwrite replaces in place there).  Done by rank 0 alone;
 * every rank learns the outcome.  0, or 2 after a message (rank 0's). */
static int
s3_make_room(const struct cmd *c, sl_store *out, const char *path, const struct array_opts *ao)
{
    struct sl_error err = SL_ERROR_INIT;
    bool existed = false;
    sl_status st = SL_OK;
    if (dist_rank() == 0)
        st = sl_zarr_make_room(out, "", ao->overwrite || ao->overwrite_in_place, true, &existed,
                               &err);
    st = dist_share(st, &err);
    if (st == SL_OK) {
        if (existed)
            fprintf(stderr, "sluice %s: %s: the old Zarr node was deleted (S3 replaces in place)\n",
                    c->name, path);
        return 0;
    }
    if (dist_rank() != 0)
        return 2;
    if (st != SL_EEXIST)
        return cmd_fail(c->name, path, &err);
    bool may = strstr(err.text, "overwrite option") != NULL;
    fprintf(stderr, "sluice %s: %s %s%s\n", c->name, path, err.text,
            may ? " (pass --overwrite: on S3 the old node is deleted before the run)" : "");
    return 2;
}

/* Rank 0's part of dest_resume: the earlier run's staging directory,
 * named alike by each of its journals, taken over. */
static sl_status
dest_resume_take(const struct cmd *c, struct dest *d, const char *path, const char *journal,
                 struct sl_error *err)
{
    struct journal_set set;
    struct sl_journal_staging js;
    uint32_t n = 0;
    int rc = journal_set_find(c, journal, &set);
    if (rc == 0)
        rc = journal_set_staging(c, &set, &js, 1, &n);
    journal_set_fini(&set);
    if (rc != 0) { /* the message is out: an error without text */
        *err = SL_ERROR_INIT;
        err->code = SL_EINVAL;
        return SL_EINVAL;
    }
    if (n != 1)
        return sl_error_set(err, SL_EINVAL, NULL, "journal %s names no output directory", journal);
    d->rep = sl_fs_replace_resume(path, js.path, js.dev, js.ino, err);
    if (d->rep == NULL)
        return err->code;
    snprintf(d->at, sizeof(d->at), "%s", sl_fs_replace_path(d->rep));
    d->existed = sl_fs_replace_existed(d->rep);
    return SL_OK;
}

/* dest_begin for --resume: take over where the journals say the earlier
 * run wrote; across processes rank 0 does, and every rank learns where.
 * 0, or 2 after a message. */
static int
dest_resume(const struct cmd *c, struct dest *d, const char *path, const char *journal)
{
    memset(d, 0, sizeof(*d));
    d->given = path;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = SL_OK;
    if (dist_rank() == 0)
        st = dest_resume_take(c, d, path, journal, &err);
    st = dist_share(st, &err);
    dist_share_text(d->at, sizeof(d->at));
    if (st != SL_OK) {
        if (dist_rank() == 0 && err.text[0] != '\0')
            fprintf(stderr,
                    "sluice %s: --resume refused: %s (run without --resume to start afresh)\n",
                    c->name, err.text);
        return 2;
    }
    d->resumed = true;
    return 0;
}

/* Comparing the metadata a build makes with a resumed run's output. */
/*
 * Refuse a resumed run whose options make other metadata (layouts,
 * codecs, attributes) than the earlier run's output holds: build the graph
 * over a memory store and compare every object it made.  0, or 2 after a
 * message naming the first object that differs.
 */
static int
dest_resume_check(const struct cmd *c, graph_build_fn *build, void *ctx, sl_store *out)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *mem = sl_store_create_memory(NULL, &err);
    if (mem == NULL)
        return cmd_fail(c->name, "memory store", &err);
    sl_graph *g = NULL;
    int rc = build(ctx, mem, false, &g);
    sl_graph_unref(g);
    char differs[256];
    bool missing = false;
    if (rc == 0 &&
        sl_store_objects_match(mem, out, differs, sizeof(differs), &missing, &err) != SL_OK)
        rc = cmd_fail(c->name, "the earlier run's output", &err);
    sl_store_unref(mem);
    if (rc == 0 && differs[0] != '\0') {
        fprintf(stderr,
                "sluice %s: --resume refused: the earlier run's output %s \"%s\" that these "
                "options make (a layout, codec or attribute changed; run without --resume to "
                "start afresh)\n",
                c->name, missing ? "lacks" : "differs in", differs);
        rc = 2;
    }
    return rc;
}

/*
 * Whether a --resume finds no journal of the earlier run at `journal` (it
 * was killed before making one): then it starts afresh (`*fresh`), except
 * a --rerun-failed, refused.  Rank 0 looks; every rank learns.  0, or 2
 * after a message.
 */
static int
dest_resume_fresh(const struct cmd *c, const struct run_opts *ro, const char *journal, bool *fresh)
{
    int rc = 0;
    *fresh = false;
    if (ro->resume && dist_rank() == 0) {
        struct journal_set set;
        rc = journal_set_find(c, journal, &set);
        *fresh = rc == 0 && set.n == 0;
        journal_set_fini(&set);
        /* Rerunning failed units needs the run that failed them. */
        if (*fresh && ro->rerun_failed != NULL) {
            fprintf(stderr,
                    "sluice %s: --rerun-failed refused: no journal %s of the run that wrote "
                    "%s\n",
                    c->name, journal, ro->rerun_failed);
            rc = 2;
        } else if (*fresh) {
            fprintf(stderr, "sluice %s: --resume: no journal %s: the run starts afresh\n", c->name,
                    journal);
        }
    }
    *fresh = dist_share_flag(*fresh);
    return dist_exit_status(rc);
}

/*
 * Before an s3:// run begun afresh that journals: rank 0 removes the
 * earlier journals first, as the node they describe is about to be
 * deleted (a kill in between must not leave them to a --resume).  0, or 1
 * after a message.
 */
static int
s3_journal_clear(const struct cmd *c, const char *journal)
{
    int rc = journal != NULL && dist_rank() == 0 ? journal_set_remove(c, journal, 0) : 0;
    return dist_exit_status(rc);
}

/* A --resume of an s3:// output: the earlier run's node must be there (it
 * is written in place, and never deleted by a resume).  Rank 0 looks and
 * compares its metadata with what this run makes.  0, or 2 after a
 * message. */
static int
s3_resume_check(const struct cmd *c, sl_store *out, const char *path, graph_build_fn *build,
                void *ctx)
{
    int rc = 0;
    if (dist_rank() == 0 && !dest_has_node(out, "")) {
        fprintf(stderr,
                "sluice %s: --resume refused: no Zarr node at %s, where the journal's run "
                "wrote (run without --resume to start afresh)\n",
                c->name, path);
        rc = 2;
    }
    if (rc == 0 && dist_rank() == 0)
        rc = dest_resume_check(c, build, ctx, out);
    return dist_worst(rc);
}

int
dest_build_run(const struct cmd *c, graph_build_fn *build, void *ctx, sl_store *out,
               const struct run_opts *ro, const char *what)
{
    sl_graph *g = NULL;
    int rc = build(ctx, out, true, &g);
    if (rc == 0)
        rc = run_graph(c, g, ro, what);
    sl_graph_unref(g);
    return rc;
}

/* dest_write for an s3:// output: written where it is, in place.  Under
 * mpirun rank 0 makes room and creates the metadata (dest_create_array),
 * then every rank writes its own shards.  A --resume opens the earlier
 * run's node instead (nothing is deleted) and skips what its journals
 * hold. */
static int
dest_write_s3(const struct cmd *c, const char *path, const struct array_opts *ao,
              graph_build_fn *build, void *ctx, const struct run_opts *ro, const char *what)
{
    char jbuf[4096];
    const char *journal = journal_path(ro, jbuf, sizeof(jbuf));
    bool fresh = false;
    if (dest_resume_fresh(c, ro, journal, &fresh) != 0)
        return 2;
    struct run_opts rs = *ro;
    rs.resume = ro->resume && !fresh;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *out = open_output_store(path, ro, &err);
    if (out == NULL)
        return dist_exit_status(cmd_fail(c->name, path, &err));
    int rc = rs.resume ? s3_resume_check(c, out, path, build, ctx) : s3_journal_clear(c, journal);
    if (rc == 0 && !rs.resume)
        rc = s3_make_room(c, out, path, ao);
    if (rc == 0)
        rc = dest_build_run(c, build, ctx, out, &rs, what);
    sl_store_unref(out);
    return dist_exit_status(rc);
}

int
dest_write(const struct cmd *c, const char *src, const char *path, const struct array_opts *ao,
           graph_build_fn *build, void *ctx, const struct run_opts *ro, const char *what)
{
    const char *nodes[2] = {path, src};
    if (run_files_check(c, ro, nodes, src != NULL ? 2 : 1) != 0 ||
        rehearse(c, build, ctx, ro, what) != 0)
        return 2;
    if (sl_url_is_s3(path))
        return dest_write_s3(c, path, ao, build, ctx, ro, what);
    struct dest d;
    char jbuf[4096];
    const char *journal = journal_path(ro, jbuf, sizeof(jbuf));
    if (no_sync_check(c, ro, journal) != 0)
        return 2;
    bool fresh = false;
    if (dest_resume_fresh(c, ro, journal, &fresh) != 0)
        return 2;
    if ((ro->resume && !fresh ? dest_resume(c, &d, path, journal) : dest_begin(c, &d, path, ao)) !=
        0)
        return 2;
    d.journal = journal;
    d.defer_sync = dest_may_defer_sync(&d);
    d.no_sync = ro->no_sync && d.defer_sync; /* in place over a node: still synced */
    struct run_opts rs = *ro;
    const char *at = d.at;
    rs.staging = &at;
    rs.n_staging = 1;
    rs.resume = ro->resume && !fresh;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *out = dest_open_store(&d, &err);
    int rc = out != NULL ? 0 : cmd_fail(c->name, path, &err);
    /* Rank 0 compares (the others would read the same objects). */
    if (rc == 0 && d.resumed && dist_rank() == 0)
        rc = dest_resume_check(c, build, ctx, out);
    rc = dist_worst(rc);
    if (rc == 0)
        rc = dest_build_run(c, build, ctx, out, &rs, what);
    rc = dest_sync(c, &d, out, rc);
    sl_store_unref(out);
    return dest_finish(c, &d, rc);
}
