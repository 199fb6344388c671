/* SPDX-License-Identifier: MIT */
/*
 * Running graphs from the command line: shared options, the progress
 * display (a bar redrawn in place on a terminal, a plain line every few
 * seconds otherwise), and the summary, failures and report after a run.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dist.h"
#include "journal_set.h"
#include "runner.h"
#include "status_map.h"

/* Seconds between progress lines when stderr is not a terminal. */
#define PLAIN_PROGRESS_INTERVAL_S 5.0

bool
memory_parse(const char *text, size_t *out)
{
    uint64_t bytes;
    if (sl_size_parse(text, &bytes, NULL) != SL_OK || bytes == 0 || bytes > SIZE_MAX)
        return false;
    *out = (size_t)bytes;
    return true;
}

bool
parse_u64_list(const char *text, uint64_t *out, uint32_t max, uint32_t *n)
{
    *n = 0;
    const char *p = text;
    while (*p != '\0') {
        if (*n == max || *p < '0' || *p > '9')
            return false;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno != 0 || v == 0)
            return false;
        out[(*n)++] = v;
        if (*end == ',' && (end[1] < '0' || end[1] > '9'))
            return false; /* an empty item: "2,,2" or a trailing comma */
        if (*end == ',')
            end++;
        else if (*end != '\0')
            return false;
        p = end;
    }
    return *n > 0;
}

/* One --report or --trace file against the nodes; 0 or 2. */
static int
run_file_check(const struct cmd *c, const char *flag, const char *file, const char *const *nodes,
               size_t n)
{
    char rf[4096], rn[4096];
    struct sl_error err = SL_ERROR_INIT;
    if (sl_fs_path_resolve(file, rf, sizeof(rf), &err) != SL_OK)
        return cmd_usage_error(c, "%s %s: %s", flag, file, err.text);
    for (size_t i = 0; i < n; i++) {
        if (nodes[i] == NULL || sl_fs_path_resolve(nodes[i], rn, sizeof(rn), NULL) != SL_OK)
            continue;
        sl_fs_overlap rel = sl_fs_path_overlap(rf, rn);
        if (rel != SL_FS_APART)
            return cmd_usage_error(c,
                                   "%s %s %s \"%s\" (%s): writing it would change that "
                                   "array; write it elsewhere",
                                   flag, file,
                                   rel == SL_FS_SAME       ? "is"
                                   : rel == SL_FS_CONTAINS ? "holds"
                                                           : "lies inside",
                                   nodes[i], rn);
    }
    struct stat st;
    if (stat(rf, &st) == 0 && S_ISDIR(st.st_mode))
        return cmd_usage_error(c, "%s %s: is a directory", flag, file);
    char *slash = strrchr(rf, '/');
    if (slash != NULL)
        *slash = '\0';
    const char *dir = slash == rf ? "/" : rf;
    if (access(dir, W_OK) != 0)
        return cmd_usage_error(c, "%s %s: cannot write in %s: %s", flag, file, dir,
                               strerror(errno));
    return 0;
}

const char *
journal_path(const struct run_opts *o, char *buf, size_t size)
{
    if (o->journal != NULL)
        return o->journal;
    /* --rerun-failed R goes on from the journal of the run that wrote R. */
    if (o->rerun_failed != NULL)
        return (size_t)snprintf(buf, size, "%s.journal", o->rerun_failed) < size ? buf : NULL;
    if (o->report == NULL || (size_t)snprintf(buf, size, "%s.journal", o->report) >= size)
        return NULL;
    return buf;
}

int
run_files_check(const struct cmd *c, const struct run_opts *o, const char *const *nodes, size_t n)
{
    char jbuf[4096];
    const char *journal = journal_path(o, jbuf, sizeof(jbuf));
    if (o->resume && journal == NULL)
        return cmd_usage_error(c, "--resume needs the journal: --journal FILE, or --report FILE "
                                  "(whose journal is FILE.journal)");
    if (o->status_map != NULL && run_file_check(c, "--status-map", o->status_map, nodes, n) != 0)
        return 2;
    if (o->report != NULL && run_file_check(c, "--report", o->report, nodes, n) != 0)
        return 2;
    if (journal != NULL && run_file_check(c, "--journal", journal, nodes, n) != 0)
        return 2;
    if (o->trace != NULL && run_file_check(c, "--trace", o->trace, nodes, n) != 0)
        return 2;
    return 0;
}

sl_store *
open_dir_store(const char *path, bool writable, struct sl_error *err)
{
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.create = writable;
    o.read_only = !writable;
    return sl_store_open_fs(path, &o, err);
}

sl_store *
open_input_store(const char *path, const struct run_opts *o, struct sl_error *err)
{
    struct sl_url_store_opts uo = SL_URL_STORE_OPTS_DEFAULT;
    uo.fs.create = false;
    uo.fs.read_only = true;
    if (o != NULL && o->io_concurrency > 0)
        uo.http.io_concurrency = o->io_concurrency;
    if (o != NULL && o->io_attempts > 0)
        uo.http.max_attempts = o->io_attempts;
    if (o != NULL && o->io_deadline_s > 0)
        uo.http.request_deadline_s = o->io_deadline_s;
    if (o != NULL)
        sl_http_store_opts_fit_budget(&uo.http, o->memory);
    uo.http.missing_on_403 = o != NULL && o->missing_on_403;
    if (o != NULL) {
        uo.s3.endpoint = o->endpoint;
        uo.s3.region = o->region;
        uo.s3.anonymous = o->no_sign_request;
    }
    uo.s3.read_only = true;
    return sl_store_open_url(path, &uo, err);
}

sl_store *
open_output_store(const char *path, const struct run_opts *o, struct sl_error *err)
{
    struct sl_url_store_opts uo = SL_URL_STORE_OPTS_DEFAULT;
    if (o->io_concurrency > 0)
        uo.http.io_concurrency = o->io_concurrency;
    if (o->io_attempts > 0)
        uo.http.max_attempts = o->io_attempts;
    if (o->io_deadline_s > 0)
        uo.http.request_deadline_s = o->io_deadline_s;
    sl_http_store_opts_fit_budget(&uo.http, o->memory);
    uo.s3.endpoint = o->endpoint;
    uo.s3.region = o->region;
    uo.s3.anonymous = o->no_sign_request;
    return sl_store_open_url(path, &uo, err);
}

int
remote_opts_parse(const struct cmd *c, struct run_opts *o, int argc, char **argv, int *i)
{
    static const char *const names[] = {
        "--io-concurrency", "--io-attempts", "--io-deadline",     "--missing-on-403",
        "--endpoint",       "--region",      "--no-sign-request", NULL};
    for (int k = 0; names[k] != NULL; k++)
        if (strcmp(argv[*i], names[k]) == 0)
            return run_opts_parse(c, o, argc, argv, i);
    return 0;
}

int
run_opts_parse(const struct cmd *c, struct run_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char *value = *i + 1 < argc ? argv[*i + 1] : NULL;
    bool takes = strcmp(a, "--threads") == 0 || strcmp(a, "--memory") == 0 ||
                 strcmp(a, "--trace") == 0 || strcmp(a, "--report") == 0 ||
                 strcmp(a, "--status-map") == 0 || strcmp(a, "--io-concurrency") == 0 ||
                 strcmp(a, "--io-attempts") == 0 || strcmp(a, "--io-deadline") == 0 ||
                 strcmp(a, "--endpoint") == 0 || strcmp(a, "--region") == 0 ||
                 strcmp(a, "--journal") == 0 || strcmp(a, "--retries") == 0 ||
                 strcmp(a, "--rerun-failed") == 0;
    if (takes && value == NULL)
        return cmd_usage_error(c, "%s needs a value", a);
    if (strcmp(a, "--threads") == 0) {
        char *end;
        unsigned long n = strtoul(value, &end, 10);
        if (*end != '\0' || n == 0 || n > 4096)
            return cmd_usage_error(c, "--threads: \"%s\" is not a count from 1 to 4096", value);
        o->threads = (unsigned)n;
    } else if (strcmp(a, "--memory") == 0) {
        if (!memory_parse(value, &o->memory))
            return cmd_usage_error(c, "--memory: \"%s\" is not a size like 512M or 2G", value);
    } else if (strcmp(a, "--io-concurrency") == 0) {
        char *end;
        unsigned long n = strtoul(value, &end, 10);
        if (*end != '\0' || n == 0 || n > 4096)
            return cmd_usage_error(c, "--io-concurrency: \"%s\" is not a count from 1 to 4096",
                                   value);
        o->io_concurrency = (unsigned)n;
    } else if (strcmp(a, "--io-attempts") == 0) {
        char *end;
        unsigned long n = strtoul(value, &end, 10);
        if (*end != '\0' || n == 0 || n > 1000 || value[0] == '-')
            return cmd_usage_error(c, "--io-attempts: \"%s\" is not a count from 1 to 1000", value);
        o->io_attempts = (unsigned)n;
    } else if (strcmp(a, "--io-deadline") == 0) {
        char *end;
        double s = strtod(value, &end);
        if (*end != '\0' || !(s > 0) || s > 86400 * 7)
            return cmd_usage_error(
                c, "--io-deadline: \"%s\" is not a number of seconds above 0 (at most a week)",
                value);
        o->io_deadline_s = s;
    } else if (strcmp(a, "--endpoint") == 0) {
        if (strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0)
            return cmd_usage_error(c, "--endpoint: \"%s\" is not an http:// or https:// URL",
                                   value);
        o->endpoint = value;
    } else if (strcmp(a, "--region") == 0) {
        o->region = value;
    } else if (strcmp(a, "--no-sign-request") == 0) {
        o->no_sign_request = true;
        return 1;
    } else if (strcmp(a, "--missing-on-403") == 0) {
        o->missing_on_403 = true;
        return 1;
    } else if (strcmp(a, "--trace") == 0) {
        o->trace = value;
    } else if (strcmp(a, "--report") == 0) {
        o->report = value;
    } else if (strcmp(a, "--status-map") == 0) {
        o->status_map = value;
    } else if (strcmp(a, "--journal") == 0) {
        if (value[0] == '\0' || strchr(value, '\n') != NULL)
            return cmd_usage_error(c, "--journal: \"%s\" is not a file name", value);
        o->journal = value;
    } else if (strcmp(a, "--retries") == 0) {
        char *end;
        unsigned long n = strtoul(value, &end, 10);
        if (*end != '\0' || value[0] == '\0' || value[0] == '-' || n > SL_PLAN_MAX_RETRIES)
            return cmd_usage_error(c, "--retries: \"%s\" is not a count from 0 to %d", value,
                                   SL_PLAN_MAX_RETRIES);
        o->retries = (int)n;
    } else if (strcmp(a, "--rerun-failed") == 0) {
        if (value[0] == '\0' || strchr(value, '\n') != NULL)
            return cmd_usage_error(c, "--rerun-failed: \"%s\" is not a file name", value);
        o->rerun_failed = value;
        o->resume = true; /* into the earlier output, skipping what its journal holds */
    } else if (strcmp(a, "--resume") == 0) {
        o->resume = true;
        return 1;
    } else if (strcmp(a, "--fail-fast") == 0) {
        o->fail_fast = true;
        return 1;
    } else if (strcmp(a, "--no-sync") == 0) {
        o->no_sync = true;
        return 1;
    } else if (strcmp(a, "--missing-is-error") == 0) {
        o->missing_is_error = true;
        return 1;
    } else if (strcmp(a, "--progress") == 0) {
        o->progress = 1;
        return 1;
    } else if (strcmp(a, "--no-progress") == 0) {
        o->progress = 0;
        return 1;
    } else {
        return 0;
    }
    (*i)++;
    return 1;
}

int
no_sync_check(const struct cmd *c, const struct run_opts *ro, const char *journal)
{
    if (!ro->no_sync)
        return 0;
    const char *why = journal != NULL ? "the run's journal records shards as durable as they are "
                                        "written (leave out --journal and --report)"
                      : ro->resume    ? "a resumed run's journal records shards as durable"
                      : dist_size() > 1
                          ? "under mpirun every rank fsyncs what it writes before rank 0 commits"
                          : NULL;
    return why == NULL ? 0 : cmd_usage_error(c, "--no-sync cannot be used here: %s", why);
}

/* "512.0 MiB" style. */
static void
human_bytes(double b, char *buf, size_t size)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, size, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
}

/* "1:02:03" or "2:03" or "--:--". */
static void
human_time(double s, char *buf, size_t size)
{
    if (!(s >= 0) || s > 360000) {
        snprintf(buf, size, "--:--");
        return;
    }
    unsigned t = (unsigned)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, size, "%u:%02u:%02u", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, size, "%u:%02u", t / 60, t % 60);
}

/* State of the progress display. */
struct progress_view {
    const char *what; /* "copy" */
    bool tty;         /* redraw a bar in place */
    double last_line; /* elapsed time of the last plain line */
};

static void
on_progress(void *ctx, const struct sl_progress *p)
{
    struct progress_view *v = ctx;
    if (!v->tty && !p->final && p->elapsed_s - v->last_line < PLAIN_PROGRESS_INTERVAL_S)
        return;
    v->last_line = p->elapsed_s;
    double frac = p->bytes_total > 0 ? (double)p->bytes_done / (double)p->bytes_total : 1;
    char done[32], total[32], rate[32], eta[32];
    human_bytes((double)p->bytes_done, done, sizeof(done));
    human_bytes((double)p->bytes_total, total, sizeof(total));
    human_bytes(p->bytes_per_s, rate, sizeof(rate));
    human_time(p->final ? 0 : p->eta_s, eta, sizeof(eta));
    char failed[48] = "";
    if (p->chunks_failed > 0)
        snprintf(failed, sizeof(failed), ", %" PRIu64 " failed", p->chunks_failed);
    if (v->tty) {
        char bar[31];
        int fill = (int)(frac * 30 + 0.5);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr,
                "\r\033[K%s [%s] %3.0f%% %" PRIu64 "/%" PRIu64 " chunks%s  %s/%s  %s/s  ETA %s",
                v->what, bar, frac * 100, p->chunks_done, p->chunks_total, failed, done, total,
                rate, eta);
        if (p->final)
            fputc('\n', stderr);
    } else {
        fprintf(stderr, "%s: %3.0f%% (%" PRIu64 "/%" PRIu64 " chunks%s, %s of %s, %s/s, ETA %s)\n",
                v->what, frac * 100, p->chunks_done, p->chunks_total, failed, done, total, rate,
                eta);
    }
    fflush(stderr);
}

/* The first few failures, then where the rest are. */
static void
print_failures(const sl_plan *plan, const struct run_opts *o)
{
    size_t n;
    const struct sl_chunk_error *e = sl_plan_errors(plan, &n);
    size_t shown = n < 10 ? n : 10;
    for (size_t i = 0; i < shown; i++) {
        char key[256];
        sl_chunk_key_format(&e[i].key, key, sizeof(key));
        fprintf(stderr, "  chunk %s: %s: %s\n", key, sl_status_name(e[i].code), e[i].text);
    }
    if (n > shown || o->report == NULL)
        fprintf(stderr, "  %s\n",
                o->report != NULL ? "(all failures are in the report)"
                                  : "(write every failure with --report FILE)");
}

/* Say so when a put's S3 server ignored conditional writes: two writers
 * of one object there were not told apart (the report says it per put). */
static void
warn_unconditional(const struct cmd *c, const sl_plan *plan)
{
    const sl_graph *g = sl_plan_graph(plan);
    for (uint32_t id = 0; id < sl_graph_node_count(g); id++) {
        struct sl_node_info info;
        if (sl_graph_node_info(g, id, &info, NULL) != SL_OK || info.kind != SL_NODE_PUT ||
            info.array == NULL ||
            sl_store_conditional_writes(sl_array_store(info.array)) != SL_STORE_CONDITIONAL_IGNORED)
            continue;
        fprintf(stderr,
                "sluice %s: put \"%s\": the S3 server ignores conditional writes "
                "(If-None-Match, If-Match), so they were unconditional: another writer of the "
                "same objects would have won silently\n",
                c->name, info.name);
    }
}

/* One set of a stats node's results, as a line on stdout. */
static void
print_stats_set(const char *name, const struct sl_node_info *in, const struct sl_stats_info *info,
                uint64_t set, const struct sl_stats_result *r)
{
    printf("stats %s", name);
    uint64_t rest = set, idx[SL_MAX_RANK];
    for (uint32_t k = info->n_per; k-- > 0;) {
        idx[k] = rest % info->per_extent[k];
        rest /= info->per_extent[k];
    }
    (void)in;
    for (uint32_t k = 0; k < info->n_per; k++)
        printf("%s%" PRIu32 "=%" PRIu64, k ? "," : " [axis ", info->per[k], idx[k]);
    printf("%s: count %" PRIu64 " (%" PRIu64 " NaN), min %.9g, max %.9g, mean %.9g, std %.9g, "
           "sum %.17g",
           info->n_per > 0 ? "]" : "", r->count, r->nan_count, r->min, r->max, r->mean, r->std,
           r->sum);
    for (size_t k = 0; k < r->n_percentiles; k++)
        printf(", p%g %.9g", info->percentile_q[k], r->percentile[k]);
    if (r->n_percentiles > 0 && !r->percentiles_exact)
        printf(" (rank error <= %.3g%%)", 100 * r->rank_error);
    if (r->bins > 0)
        printf(", histogram of %" PRIu32 " bins over [%g, %g] (%" PRIu64 " below, %" PRIu64
               " above)",
               r->bins, r->lo, r->hi, r->below, r->above);
    putchar('\n');
}

/* Every stats node's results on stdout, or on stderr why there are none
 * (for a pyramid's omero node, why it wrote no channel windows); 1 when
 * some are missing. */
static int
print_stats(const struct cmd *c, const sl_plan *plan)
{
    const sl_graph *g = sl_plan_graph(plan);
    int rc = 0;
    for (uint32_t id = 0; id < sl_graph_node_count(g); id++) {
        struct sl_node_info info;
        struct sl_stats_info si;
        if (sl_graph_node_info(g, id, &info, NULL) != SL_OK ||
            sl_plan_stats_info(plan, id, &si, NULL) != SL_OK)
            continue;
        struct sl_node_info in;
        if (sl_graph_node_info(g, info.inputs[0], &in, NULL) != SL_OK)
            continue;
        struct sl_error oerr = SL_ERROR_INIT;
        if (si.omero && sl_plan_pyramid_omero(plan, id, &oerr) != SL_OK) {
            /* Its reason names the chunk the statistics lack, if any. */
            fprintf(stderr, "sluice %s: %s\n", c->name, oerr.text);
            rc = 1;
            continue;
        }
        for (uint64_t k = 0; k < si.n_sets; k++) {
            struct sl_stats_result r;
            struct sl_error err = SL_ERROR_INIT;
            if (sl_plan_stats(plan, id, k, &r, &err) != SL_OK) {
                fprintf(stderr, "sluice %s: %s\n", c->name, err.text);
                rc = 1;
                break;
            }
            print_stats_set(info.name, &in, &si, k, &r);
        }
    }
    return rc;
}

static int
write_report(const sl_plan *plan, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "sluice: --report %s: cannot write it: %s\n", path, strerror(errno));
        return 1;
    }
    sl_status st = sl_plan_write_report(plan, f, NULL);
    if (fclose(f) != 0 || st != SL_OK) {
        fprintf(stderr, "sluice: --report %s: writing it failed\n", path);
        return 1;
    }
    return 0;
}

/*
 * Keep the pool's free-buffer caches inside a quarter of the memory budget
 * (workers' caches, and as much again in the node depots), so that the
 * process's chunk memory stays near --memory rather than the budget plus
 * 64 MiB per worker.  SLUICE_BUF_CACHE_BYTES, when set, wins.
 */
static void
fit_buffer_caches(struct sl_pool_opts *po, size_t memory)
{
    const char *env = getenv("SLUICE_BUF_CACHE_BYTES");
    if (memory == 0 || (env != NULL && env[0] != '\0'))
        return;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t workers = po->n_workers != 0 ? po->n_workers : (cores > 0 ? (size_t)cores : 1);
    size_t share = memory / 8 / workers;
    if (share < po->buf_cache_bytes)
        po->buf_cache_bytes = share;
}

/* The plan options every run takes from `o` (no progress, no trace). */
static struct sl_plan_opts
plan_opts_of(const struct run_opts *o)
{
    struct sl_plan_opts opts = SL_PLAN_OPTS_DEFAULT;
    opts.memory_budget = o->memory;
    opts.policy = o->fail_fast ? SL_POLICY_FAIL_FAST : SL_POLICY_COLLECT;
    opts.missing_is_error = o->missing_is_error;
    opts.retries = o->retries > 0 ? (uint32_t)o->retries : 0;
    return opts;
}

int
plan_check(const struct cmd *c, sl_graph *g, const struct run_opts *o, const char *what)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_pool_opts po = SL_POOL_OPTS_DEFAULT;
    if (sl_pool_opts_from_env(&po, &err) != SL_OK)
        return cmd_fail(c->name, "environment", &err);
    if (sl_graph_seal(g, &err) != SL_OK)
        return cmd_fail(c->name, what, &err);
    struct sl_plan_opts opts = plan_opts_of(o);
    sl_plan *plan = sl_plan_create(g, &opts, &err);
    if (plan == NULL)
        return cmd_fail(c->name, what, &err);
    sl_plan_destroy(plan);
    return 0;
}

int
journal_resume_check(const struct cmd *c, sl_graph *g, const struct run_opts *o,
                     struct sl_journal_staging *dirs, uint32_t cap, uint32_t *n, bool *fresh)
{
    char jbuf[4096];
    const char *path = journal_path(o, jbuf, sizeof(jbuf));
    *n = 0;
    struct journal_set set;
    int rc = journal_set_find(c, path, &set);
    *fresh = rc == 0 && set.n == 0;
    /* Rerunning failed units needs the run that failed them. */
    if (*fresh && o->rerun_failed != NULL) {
        fprintf(stderr,
                "sluice %s: --rerun-failed refused: no journal %s of the run that wrote %s\n",
                c->name, path, o->rerun_failed);
        rc = 2;
    } else if (*fresh) {
        fprintf(stderr, "sluice %s: --resume: no journal %s: the run starts afresh\n", c->name,
                path);
    }
    struct sl_error err = SL_ERROR_INIT;
    sl_plan *plan = NULL;
    if (rc == 0 && !*fresh && sl_graph_seal(g, &err) != SL_OK)
        rc = cmd_fail(c->name, path, &err);
    struct sl_plan_opts opts = plan_opts_of(o);
    if (rc == 0 && !*fresh && (plan = sl_plan_create(g, &opts, &err)) == NULL)
        rc = cmd_fail(c->name, path, &err);
    /* Every rank's journal of the earlier run is of this computation. */
    for (uint32_t i = 0; rc == 0 && plan != NULL && i < set.n; i++)
        if (sl_journal_check(plan, set.paths[i], &err) != SL_OK) {
            fprintf(stderr, "sluice %s: --resume refused: %s\n", c->name, err.text);
            rc = 2;
        }
    sl_plan_destroy(plan);
    if (rc == 0 && !*fresh)
        rc = journal_set_staging(c, &set, dirs, cap, n);
    journal_set_fini(&set);
    return rc;
}

int
rehearse(const struct cmd *c, graph_build_fn *build, void *ctx, const struct run_opts *o,
         const char *what)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *mem = sl_store_create_memory(NULL, &err);
    if (mem == NULL)
        return cmd_fail(c->name, what, &err);
    sl_graph *g = NULL;
    int rc = build(ctx, mem, false, &g);
    if (rc == 0)
        rc = plan_check(c, g, o, what);
    sl_graph_unref(g);
    sl_store_unref(mem);
    return rc;
}

/* Say what the journals read for a resume held (rank 0). */
static void
journal_tell(const struct cmd *c, const sl_journal *j, const char *base,
             const struct journal_set *old, const struct run_opts *o)
{
    struct sl_journal_info info;
    sl_journal_get_info(j, &info);
    if (info.damaged_at >= 0)
        fprintf(stderr,
                "sluice %s: journal %s is damaged at byte %" PRId64 ": the %" PRIu64
                " line%s from there on %s not trusted (their units run again)\n",
                c->name, info.damaged_in < old->n ? old->paths[info.damaged_in] : base,
                info.damaged_at, info.records_ignored, CMD_PLURAL(info.records_ignored),
                info.records_ignored == 1 ? "is" : "are");
    if (old->n_missing > 0)
        fprintf(stderr,
                "sluice %s: %" PRIu32 " rank%s of the earlier run left no journal beside %s: "
                "%s units run again\n",
                c->name, old->n_missing, CMD_PLURAL(old->n_missing), base,
                old->n_missing == 1 ? "its" : "their");
    if (o->resume && o->rerun_failed == NULL)
        fprintf(stderr,
                "sluice %s: resuming from journal %s%s: %" PRIu64 " unit%s done earlier "
                "(skipped)\n",
                c->name, base, old->n > 1 ? " (every rank's)" : "", info.units_done,
                CMD_PLURAL(info.units_done));
    if (info.units_dropped > 0)
        fprintf(stderr,
                "sluice %s: %" PRIu64 " unit%s recorded in the journal run%s again: %s units "
                "that run again\n",
                c->name, info.units_dropped, CMD_PLURAL(info.units_dropped),
                info.units_dropped == 1 ? "s" : "",
                info.units_dropped == 1 ? "it reads" : "they read");
}

/*
 * Before a resumed run across processes (rank 0, while the others wait):
 * remove the temporary files the earlier run's killed writers left in the
 * outputs, which the ranks' own transactions keep (another rank may be
 * writing there); none of this run writes yet.
 */
static void
journal_clean_leftovers(const struct cmd *c, const sl_plan *plan)
{
    const sl_graph *g = sl_plan_graph(plan);
    for (uint32_t id = 0; id < sl_graph_node_count(g); id++) {
        struct sl_node_info info;
        struct sl_error err = SL_ERROR_INIT;
        if (sl_graph_node_info(g, id, &info, NULL) != SL_OK || info.kind != SL_NODE_PUT ||
            info.array == NULL)
            continue;
        /* The plan's arrays are read-only here: the same array opened again. */
        sl_array *a =
            sl_array_open(sl_array_store(info.array), sl_array_path(info.array), NULL, &err);
        sl_status st = a != NULL ? sl_txn_clean_leftovers(a, NULL, &err) : err.code;
        sl_array_unref(a);
        if (st == SL_OK)
            continue;
        fprintf(stderr, "sluice %s: put \"%s\": the earlier run's temporary files stay: %s\n",
                c->name, info.name, err.text);
    }
}

/*
 * Open this process's journal `mine` for `plan`.  Resuming, rank 0 reads
 * every journal `old` of the earlier run (any number of ranks) and writes
 * their units into its own; then the others read rank 0's, so that every
 * rank skips the same units and no file is read while it is replaced.
 * Afresh, rank 0 first removes every earlier journal at `base`.  NULL
 * after a message (rank 0's, or the rank's own).
 */
static sl_journal *
journal_open_rank(const struct cmd *c, sl_plan *plan, const struct run_opts *o, const char *base,
                  const char *mine, const struct journal_set *old)
{
    struct sl_journal_opts jo = SL_JOURNAL_OPTS_DEFAULT;
    jo.resume = o->resume;
    jo.staging = o->staging;
    jo.n_staging = o->n_staging;
    struct sl_error err = SL_ERROR_INIT;
    sl_journal *j = NULL;
    if (dist_rank() == 0) {
        jo.resume_from = (const char *const *)old->paths;
        jo.n_resume_from = o->resume ? old->n : 0;
        int rc = o->resume ? 0 : journal_set_remove(c, base, 0);
        j = rc == 0 ? sl_journal_open(plan, mine, &jo, &err) : NULL;
        if (j == NULL && rc == 0)
            fprintf(stderr, "sluice %s: %s%s\n", c->name, o->resume ? "--resume refused: " : "",
                    err.text);
    }
    if (dist_share_flag(dist_rank() == 0 && j == NULL))
        return NULL;
    if (dist_rank() != 0) {
        char first[4096];
        const char *from = journal_rank_path(base, 0, dist_size(), first, sizeof(first));
        jo.resume_from = &from;
        jo.n_resume_from = o->resume ? 1 : 0;
        j = from != NULL ? sl_journal_open(plan, mine, &jo, &err) : NULL;
        if (j == NULL)
            fprintf(stderr, "sluice %s: rank %d: %s\n", c->name, dist_rank(),
                    from != NULL ? err.text : "the journal's path is too long");
    }
    return j;
}

/*
 * Open the run's journal for `plan` (none without one; under mpirun each
 * rank's own), resuming when asked, and say what was found.  0, or 2
 * after a message: the journal is missing, damaged in its header or
 * written for another computation; the same on every rank.
 */
static int
journal_open(const struct cmd *c, sl_plan *plan, const struct run_opts *o, sl_journal **out)
{
    char jbuf[4096], mbuf[4096 + 64];
    const char *base = journal_path(o, jbuf, sizeof(jbuf));
    *out = NULL;
    if (base == NULL)
        return 0;
    const char *mine = journal_rank_path(base, dist_rank(), dist_size(), mbuf, sizeof(mbuf));
    struct journal_set old = {0};
    int rc = mine == NULL ? cmd_usage_error(c, "--journal %s: the path is too long", base) : 0;
    if (rc == 0 && o->resume && dist_rank() == 0)
        rc = journal_set_find(c, base, &old);
    if (dist_worst(rc) != 0) {
        journal_set_fini(&old);
        return 2;
    }
    sl_journal *j = journal_open_rank(c, plan, o, base, mine, &old);
    rc = j != NULL ? 0 : 2;
    if (rc == 0 && dist_rank() == 0 && o->rerun_failed != NULL) {
        uint64_t units = 0;
        struct sl_error err = SL_ERROR_INIT;
        if (sl_journal_check_report(j, o->rerun_failed, &units, &err) != SL_OK) {
            fprintf(stderr, "sluice %s: --rerun-failed refused: %s\n", c->name, err.text);
            rc = 2;
        } else {
            fprintf(stderr,
                    "sluice %s: rerunning the %" PRIu64 " unit%s that %s lists as failed, or "
                    "that read them (journal %s)\n",
                    c->name, units, CMD_PLURAL(units), o->rerun_failed, base);
        }
    }
    if (rc == 0 && dist_rank() == 0)
        journal_tell(c, j, base, &old, o);
    if (rc == 0 && dist_rank() == 0 && o->resume && dist_size() > 1)
        journal_clean_leftovers(c, plan);
    rc = dist_worst(rc);
    /* Every rank's journal holds the earlier run's units now: the files of
     * another number of ranks go. */
    if (rc == 0 && o->resume && dist_rank() == 0)
        (void)journal_set_remove(c, base, dist_size());
    journal_set_fini(&old);
    if (rc != 0) {
        (void)sl_journal_close(j, NULL);
        return 2;
    }
    *out = j;
    return 0;
}

int
run_graph(const struct cmd *c, sl_graph *g, const struct run_opts *o, const char *what)
{
    struct sl_pool_opts po = SL_POOL_OPTS_DEFAULT;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_pool_opts_from_env(&po, &err) != SL_OK)
        return cmd_fail(c->name, "environment", &err);
    if (o->threads > 0)
        po.n_workers = o->threads;
    fit_buffer_caches(&po, o->memory);
    struct progress_view view = {.what = what, .tty = isatty(STDERR_FILENO) == 1};
    struct sl_plan_opts opts = plan_opts_of(o);
    /* Across processes each rank traces its own tasks: FILE.rank<N>. */
    char trace[4096];
    opts.trace_path = o->trace;
    if (o->trace != NULL && dist_size() > 1) {
        snprintf(trace, sizeof(trace), "%s.rank%d", o->trace, dist_rank());
        opts.trace_path = trace;
    }
    bool show = o->progress == 1 || (o->progress == -1 && view.tty);
    opts.progress_interval_s = view.tty ? 0.2 : 1.0;
    /* Across processes every rank reports to rank 0, which alone draws. */
    dist_plan_opts(&opts, show && dist_rank() == 0 ? on_progress : NULL, &view);
    if (sl_graph_seal(g, &err) != SL_OK)
        return cmd_fail(c->name, what, &err);
    sl_plan *plan = sl_plan_create(g, &opts, &err);
    if (plan == NULL)
        return cmd_fail(c->name, what, &err);
    dist_set_plan(plan);
    sl_journal *journal = NULL;
    if (journal_open(c, plan, o, &journal) != 0) {
        sl_plan_destroy(plan);
        return 2;
    }
    sl_pool *pool = sl_pool_create(&po, &err);
    if (pool == NULL) {
        (void)sl_journal_close(journal, NULL);
        sl_plan_destroy(plan);
        return cmd_fail(c->name, "pool", &err);
    }
    sl_status st = sl_plan_run(plan, pool, &err);
    sl_pool_destroy(pool);
    struct sl_error jerr = SL_ERROR_INIT;
    if (sl_journal_close(journal, &jerr) != SL_OK)
        fprintf(stderr, "sluice %s: %s (a --resume may redo more)\n", c->name, jerr.text);
    st = dist_gather(plan, st);
    if (dist_rank() != 0) {
        sl_plan_destroy(plan);
        return dist_exit_status(1);
    }
    struct sl_run_summary s;
    sl_plan_summary(plan, &s);
    char rd[32], wr[32];
    human_bytes((double)s.bytes_read, rd, sizeof(rd));
    human_bytes((double)s.bytes_written, wr, sizeof(wr));
    fprintf(stderr,
            "sluice %s: %" PRIu64 " chunk%s in %.2f s: %" PRIu64 " ok, %" PRIu64 " failed, %" PRIu64
            " upstream of a failure, %" PRIu64 " cancelled; read %s, wrote %s\n",
            c->name, s.n_chunks, CMD_PLURAL(s.n_chunks), s.elapsed_s, s.n_ok, s.n_failed,
            s.n_upstream, s.n_canceled, rd, wr);
    if (s.n_resumed > 0)
        fprintf(stderr,
                "sluice %s: skipped %" PRIu64 " chunk%s that the earlier run wrote (counted "
                "ok)\n",
                c->name, s.n_resumed, CMD_PLURAL(s.n_resumed));
    if (s.n_retries > 0)
        fprintf(stderr,
                "sluice %s: %" PRIu64 " chunk read%s or shard write%s tried again (--retries)\n",
                c->name, s.n_retries, CMD_PLURAL(s.n_retries), CMD_PLURAL(s.n_retries));
    if (s.remote_requests > 0)
        fprintf(stderr,
                "sluice %s: remote: %" PRIu64 " request%s, %" PRIu64 " retr%s, at most %u in "
                "flight\n",
                c->name, s.remote_requests, CMD_PLURAL(s.remote_requests), s.remote_retries,
                s.remote_retries == 1 ? "y" : "ies", s.remote_max_in_flight);
    int rc = st == SL_OK ? 0 : 1;
    if (st != SL_OK && s.n_failed + s.n_upstream + s.n_canceled == 0)
        cmd_fail(c->name, what, &err);
    else if (st != SL_OK)
        print_failures(plan, o);
    warn_unconditional(c, plan);
    rc |= print_stats(c, plan);
    if (o->report != NULL)
        rc |= write_report(plan, o->report);
    if (o->status_map != NULL)
        rc |= status_map_write(plan, o->status_map);
    sl_plan_destroy(plan);
    return dist_exit_status(rc);
}
