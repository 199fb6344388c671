/* SPDX-License-Identifier: MIT */
/*
 * `sluice run GRAPH.json`: validate a graph file completely, then create
 * the arrays it asks for and run it, with progress, the memory budget, the
 * error policy and a per-chunk report; or, with --dry-run, plan it and
 * list the input chunks that are missing, creating and writing nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "commands.h"
#include "dist.h"
#include "graph_file.h"
#include "journal_set.h"
#include "runner.h"

static int run_run(int argc, char **argv);

const struct cmd cmd_run = {
    .name = "run",
    .summary = "run a JSON graph file",
    .usage = "usage: sluice run GRAPH.json [options]\n"
             "\n"
             "Validate the graph file completely (nothing is created when it has errors;\n"
             "they are all reported, as sluice validate does), create the arrays it asks\n"
             "for, and run it: every output chunk is computed and written, a failed chunk\n"
             "is reported and the others go on (unless --fail-fast or the file's\n"
             "\"error_policy\" says otherwise).  Options given here override the file's\n"
             "\"run\" settings.  The format is documented in examples/graphs/FORMAT.md.\n"
             "\n"
             "Progress (chunks, bytes, rate, ETA) is a bar on a terminal and a plain line\n"
             "every 5 seconds otherwise; --no-progress turns it off.\n"
             "\n"
             "A run with a journal (--journal, the file's \"run\": {\"journal\": ...}, or\n"
             "REPORT.journal with --report) that was killed goes on with --resume: the\n"
             "shards it wrote are skipped, the rest run, the outputs are put in place.  A\n"
             "resume of a changed graph, input or option is refused, naming what changed.\n"
             "\n"
             "Exit status: 0 when every chunk is ok (with --dry-run: no input chunk is\n"
             "missing), 1 when some chunks failed (with --dry-run: some are missing),\n"
             "2 for an invalid graph or bad usage.\n"
             "\n"
             "Options:\n"
             "  --dry-run            plan the graph and check which input chunks it reads\n"
             "                       are stored (shard indexes only, no chunk data); list\n"
             "                       the missing ones; create and write nothing\n",
    .options = RUN_OPTS_HELP GRAPH_FILE_HELP "  --help               print this help\n",
    .run = run_run,
};

/* The file's "run" settings under what the command line said. */
static void merge_run_opts(const sl_graph_json *doc, struct run_opts *o);

/*
 * Nodes written in place (s3://) have no staging directory: a resume goes
 * on in the node at the URL, which must be what the file makes (checked
 * on the in-memory load `mem`); a run begun afresh removes the earlier
 * journals before the real load deletes the old nodes, so that a kill in
 * between never leaves journals of units that are gone.  Rank 0.
 * @return 0, or the exit status after a message.
 */
static int
in_place_prepare(sl_graph_json *mem, const struct run_opts *ro)
{
    if (sl_graph_json_n_in_place(mem) == 0)
        return 0;
    if (ro->resume) {
        struct sl_error err = SL_ERROR_INIT;
        if (sl_graph_json_check_in_place(mem, &err) == SL_OK)
            return 0;
        fprintf(stderr, "sluice run: --resume refused: %s\n", err.text);
        return 2;
    }
    char jbuf[4096];
    const char *journal = journal_path(ro, jbuf, sizeof(jbuf));
    return journal != NULL ? journal_set_remove(&cmd_run, journal, 0) : 0;
}

/*
 * Whether the file's new local nodes may be written without an fsync per
 * object, each synced once before sl_graph_json_commit renames it into
 * place (the loader's `defer_sync`, as dest.c decides for the other
 * commands): nothing records objects as durable as they are written (a
 * run journal: the kernel may write its record back before the object),
 * and one process (the ranks of a run across processes would each have to
 * sync before rank 0 commits).  `ro` holds the file's journal by now.
 */
static bool
may_defer_sync(const struct run_opts *ro)
{
    char jbuf[4096];
    return journal_path(ro, jbuf, sizeof(jbuf)) == NULL && !ro->resume && ro->n_resume_dirs == 0 &&
           dist_size() == 1;
}

/*
 * Load the graph file for a real run.  It is rehearsed in memory first, so
 * that a budget too small is refused before the file's nodes are begun (on
 * disk, or on S3 where an old node is deleted first, or in place).  Across
 * processes rank 0 alone rehearses and creates the new arrays and pyramid
 * groups (their metadata), then the others open them, once rank 0 says it
 * has: nothing is created twice, and no rank looks at a node while rank 0
 * replaces it.
 * @return 0 with `*doc`, or the exit status (the same on every rank).
 */
static int
load_real(const char *path, const struct graph_file_perm *perm, struct run_opts *ro, char *journal,
          size_t journal_size, sl_graph_json **doc)
{
    int rc = 0;
    *doc = NULL;
    journal[0] = '\0';
    if (dist_rank() == 0) {
        rc = graph_file_load(&cmd_run, path, SL_GRAPH_JSON_IN_MEMORY, perm, ro, doc);
        /* The file's journal path, kept past the document that holds it. */
        if (rc == 0) {
            struct sl_graph_json_run file_run;
            sl_graph_json_run_opts(*doc, &file_run);
            if (ro->journal == NULL && file_run.journal != NULL) {
                snprintf(journal, journal_size, "%s", file_run.journal);
                ro->journal = journal;
            }
            const char *nodes[1] = {path};
            if ((ro->journal != NULL || ro->resume) && run_files_check(&cmd_run, ro, nodes, 1) != 0)
                rc = 2;
        }
        struct sl_journal_staging *dirs = NULL;
        if (rc == 0) {
            struct run_opts mine = *ro;
            merge_run_opts(*doc, &mine);
            rc = plan_check(&cmd_run, sl_graph_json_graph(*doc), &mine, path);
            bool fresh = false;
            if (rc == 0 && ro->resume) {
                /* The journal is checked against the graph as this file
                 * makes it before the earlier run's output is touched. */
                dirs = calloc(SL_JOURNAL_MAX_STAGING, sizeof(*dirs));
                rc = dirs != NULL
                         ? journal_resume_check(&cmd_run, sl_graph_json_graph(*doc), &mine, dirs,
                                                SL_JOURNAL_MAX_STAGING, &ro->n_resume_dirs, &fresh)
                         : cmd_usage_error(&cmd_run, "out of memory");
                ro->resume_dirs = dirs;
                ro->resume = !fresh;
            }
            if (rc == 0)
                rc = in_place_prepare(*doc, ro);
        }
        sl_graph_json_destroy(*doc);
        *doc = NULL;
        ro->defer_sync = may_defer_sync(ro);
        if (rc == 0) {
            char jbuf[4096];
            rc = no_sync_check(&cmd_run, ro, journal_path(ro, jbuf, sizeof(jbuf)));
        }
        if (rc == 0)
            rc = graph_file_load(&cmd_run, path, SL_GRAPH_JSON_CREATE, perm, ro, doc);
        ro->resume_dirs = NULL;
        ro->n_resume_dirs = 0;
        free(dirs);
    }
    rc = dist_exit_status(rc);
    /* What rank 0 found: whether the run resumes, and the file's journal. */
    ro->resume = dist_share_flag(ro->resume);
    dist_share_text(journal, journal_size);
    if (dist_rank() != 0 && ro->journal == NULL && journal[0] != '\0')
        ro->journal = journal;
    if (rc == 0 && dist_rank() != 0)
        rc = graph_file_load(&cmd_run, path, SL_GRAPH_JSON_OPEN, perm, ro, doc);
    if (rc != 0) {
        sl_graph_json_destroy(*doc); /* removes what it began */
        *doc = NULL;
    }
    return rc;
}

static void
merge_run_opts(const sl_graph_json *doc, struct run_opts *o)
{
    struct sl_graph_json_run run;
    sl_graph_json_run_opts(doc, &run);
    if (o->threads == 0)
        o->threads = run.threads;
    if (o->memory == 0)
        o->memory = run.memory_budget;
    o->fail_fast = o->fail_fast || run.policy == SL_POLICY_FAIL_FAST;
    o->missing_is_error = o->missing_is_error || run.missing_is_error;
    if (o->retries < 0)
        o->retries = (int)run.retries;
}

/*
 * Across processes give every rank rank 0's staging directories (`*n` of
 * them in `staging`), which its journal names: the others open the nodes
 * rank 0 began and replace none.  The texts live in the buffer returned
 * (free it after the run; NULL alone or when out of memory, then every
 * rank names none past rank 0's).
 */
static char *
staging_share(const char **staging, size_t *n)
{
    size_t size = (size_t)SL_JOURNAL_MAX_STAGING * 4097 + 32;
    char *buf = dist_size() > 1 ? malloc(size) : NULL;
    if (buf == NULL)
        return NULL;
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; dist_rank() == 0 && i < *n && i < SL_JOURNAL_MAX_STAGING; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s\n", staging[i]);
    dist_share_text(buf, size);
    *n = 0;
    for (char *p = buf, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
        *nl = '\0';
        staging[(*n)++] = p;
    }
    return buf;
}

static int
run_run(int argc, char **argv)
{
    struct run_opts ro = RUN_OPTS_DEFAULT;
    ro.progress = 1; /* a bar on a terminal, a plain line every few seconds otherwise */
    const char *path = NULL;
    bool dry_run = false;
    struct graph_file_perm perm = graph_file_perm_default();
    for (int i = 1; i < argc; i++) {
        int r = run_opts_parse(&cmd_run, &ro, argc, argv, &i);
        if (r == 2)
            return 2;
        if (r == 1)
            continue;
        if (strcmp(argv[i], "--dry-run") == 0)
            dry_run = true;
        else if (graph_file_perm_parse(&perm, argv[i]))
            continue;
        else if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cmd_usage_error(&cmd_run, "unknown option %s", argv[i]);
        else if (path != NULL)
            return cmd_usage_error(&cmd_run, "more than one graph file (\"%s\")", argv[i]);
        else
            path = argv[i];
    }
    if (path == NULL)
        return cmd_usage_error(&cmd_run, "GRAPH.json is missing");
    const char *name = path;
    sl_graph_json *doc = NULL;
    const char *nodes[1] = {path};
    /* The file's "run"/"journal" is known once it is loaded: checked then. */
    struct run_opts early = ro;
    early.resume = false;
    if (run_files_check(&cmd_run, &early, nodes, 1) != 0)
        return 2;
    char journal[4096];
    int rc = dry_run ? graph_file_load(&cmd_run, path, SL_GRAPH_JSON_IN_MEMORY, &perm, &ro, &doc)
                     : load_real(path, &perm, &ro, journal, sizeof(journal), &doc);
    if (rc != 0)
        return rc;
    merge_run_opts(doc, &ro);
    sl_graph *g = sl_graph_json_graph(doc);
    if (dry_run) {
        if (sl_graph_json_write_arrays(doc, stdout, NULL) != SL_OK)
            rc = 1;
        rc |= dry_run_graph(&cmd_run, g, &ro, name);
    } else {
        /* Across processes every rank has written its part once run_graph
         * returns (it gathers the results); rank 0, which began the new
         * local nodes, puts them in place. */
        const char *staging[SL_JOURNAL_MAX_STAGING];
        size_t n = sl_graph_json_staging(doc, staging, SL_JOURNAL_MAX_STAGING);
        char jbuf[4096];
        bool too_many = dist_share_flag(n > SL_JOURNAL_MAX_STAGING &&
                                        journal_path(&ro, jbuf, sizeof(jbuf)) != NULL);
        size_t n_made = n;
        char *shared = staging_share(staging, &n);
        ro.staging = staging;
        ro.n_staging = n < SL_JOURNAL_MAX_STAGING ? (uint32_t)n : SL_JOURNAL_MAX_STAGING;
        if (too_many) {
            fprintf(stderr,
                    "sluice run: %s: a journal names at most %d new nodes; this file "
                    "makes %zu\n",
                    path, SL_JOURNAL_MAX_STAGING, n_made);
            rc = 2;
        } else {
            rc = run_graph(&cmd_run, g, &ro, name);
        }
        free(shared);
        struct sl_error err = SL_ERROR_INIT;
        /* Refused (2): destroying the document removes what it wrote,
         * except what a refused --resume took over from the earlier run. */
        if (rc == 2 && ro.resume)
            sl_graph_json_keep(doc);
        if (rc != 2 && sl_graph_json_commit(doc, rc == 0, &err) != SL_OK) {
            fprintf(stderr, "sluice run: %s: a new array was not put in place: %s\n", path,
                    err.text);
            rc = 1;
        }
        rc = dist_exit_status(rc);
    }
    sl_graph_json_destroy(doc);
    return rc;
}
