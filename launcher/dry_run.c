/* SPDX-License-Identifier: MIT */
/*
 * `sluice run --dry-run`: plan a sealed graph, then list the stored input
 * chunks the run would read that are missing (sl_graph_check_inputs: chunk
 * keys and shard indexes only), with counts per get node, on stdout and
 * optionally as a JSON report.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "runner.h"

/* Missing chunks listed on stdout before the rest go only to the report. */
#define DRY_RUN_LISTED 100

/* What a dry run has seen so far. */
struct dry_state {
    const sl_graph *g;      /* the graph */
    FILE *report;           /* JSON report being written, or NULL */
    uint32_t node;          /* node of the chunks counted below; UINT32_MAX before any */
    uint64_t n_read;        /* chunks of `node` the run would read */
    uint64_t n_missing;     /* ... of which are not stored */
    uint64_t total_read;    /* over every node */
    uint64_t total_missing; /* over every node */
    uint64_t n_listed;      /* missing chunks printed on stdout */
};

/* Write `s` as a JSON string. */
static void
json_write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Close the counts of the node seen last. */
static void
dry_node_done(struct dry_state *s)
{
    if (s->node == UINT32_MAX)
        return;
    struct sl_node_info info;
    if (sl_graph_node_info(s->g, s->node, &info, NULL) != SL_OK)
        return;
    printf("get \"%s\": %" PRIu64 " chunk%s to read, %" PRIu64 " missing\n", info.name, s->n_read,
           CMD_PLURAL(s->n_read), s->n_missing);
    if (s->report != NULL)
        fprintf(s->report, "], \"chunks\": %" PRIu64 ", \"missing_count\": %" PRIu64 "}", s->n_read,
                s->n_missing);
    s->total_read += s->n_read;
    s->total_missing += s->n_missing;
}

static sl_status
dry_on_chunk(void *ctx, uint32_t node, const struct sl_chunk_key *chunk, bool stored)
{
    struct dry_state *s = ctx;
    struct sl_node_info info;
    if (sl_graph_node_info(s->g, node, &info, NULL) != SL_OK)
        return SL_EINVAL;
    if (node != s->node) {
        bool first = s->node == UINT32_MAX;
        dry_node_done(s);
        s->node = node;
        s->n_read = s->n_missing = 0;
        if (s->report != NULL) {
            fprintf(s->report, "%s\n    {\"node\": ", first ? "" : ",");
            json_write_string(s->report, info.name);
            fprintf(s->report, ", \"missing\": [");
        }
    }
    s->n_read++;
    if (stored)
        return SL_OK;
    char key[SL_MAX_RANK * 22 + 4];
    sl_chunk_key_format(chunk, key, sizeof(key));
    if (s->n_listed++ < DRY_RUN_LISTED)
        printf("missing: get \"%s\" chunk %s\n", info.name, key);
    if (s->report != NULL) {
        fprintf(s->report, "%s[", s->n_missing > 0 ? ", " : "");
        for (uint32_t d = 0; d < chunk->rank; d++)
            fprintf(s->report, "%s%" PRIu64, d ? ", " : "", chunk->idx[d]);
        fputc(']', s->report);
    }
    s->n_missing++;
    return SL_OK;
}

/* The plan's size: nodes, and output chunks of every put. */
static void
dry_print_plan(const sl_graph *g, const char *what)
{
    uint32_t n_puts = 0;
    uint64_t n_chunks = 0;
    for (uint32_t id = 0; id < sl_graph_node_count(g); id++) {
        struct sl_node_info info;
        if (sl_graph_node_info(g, id, &info, NULL) != SL_OK ||
            (info.kind != SL_NODE_PUT && info.kind != SL_NODE_PUTTER))
            continue;
        n_puts++;
        n_chunks += info.grid->n_total;
    }
    printf("plan of %s: %u nodes; %u puts writing %" PRIu64 " chunks\n", what,
           sl_graph_node_count(g), n_puts, n_chunks);
}

int
dry_run_graph(const struct cmd *c, sl_graph *g, const struct run_opts *o, const char *what)
{
    struct sl_plan_opts opts = SL_PLAN_OPTS_DEFAULT;
    opts.memory_budget = o->memory;
    opts.policy = o->fail_fast ? SL_POLICY_FAIL_FAST : SL_POLICY_COLLECT;
    opts.missing_is_error = o->missing_is_error;
    struct sl_error err = SL_ERROR_INIT;
    if (sl_graph_seal(g, &err) != SL_OK)
        return cmd_fail(c->name, what, &err);
    sl_plan *plan = sl_plan_create(g, &opts, &err);
    if (plan == NULL)
        return cmd_fail(c->name, what, &err);
    sl_plan_destroy(plan);
    dry_print_plan(g, what);
    struct dry_state s = {.g = g, .node = UINT32_MAX};
    if (o->report != NULL && (s.report = fopen(o->report, "w")) == NULL) {
        fprintf(stderr, "sluice: cannot write report %s: %s\n", o->report, strerror(errno));
        return 1;
    }
    if (s.report != NULL)
        fprintf(s.report, "{\"dry_run\": true, \"inputs\": [");
    sl_status st = sl_graph_check_inputs(g, dry_on_chunk, &s, &err);
    dry_node_done(&s);
    if (s.n_listed > DRY_RUN_LISTED)
        printf("(%" PRIu64 " more missing chunks%s)\n", s.n_listed - DRY_RUN_LISTED,
               s.report != NULL ? " are in the report" : "; --report FILE lists them all");
    int rc = st == SL_OK ? 0 : cmd_fail(c->name, what, &err);
    if (s.report != NULL) {
        fprintf(s.report,
                "\n  ],\n  \"chunks\": %" PRIu64 ", \"missing_count\": %" PRIu64
                ", \"complete\": %s}\n",
                s.total_read, s.total_missing, st == SL_OK ? "true" : "false");
        if (fclose(s.report) != 0) {
            fprintf(stderr, "sluice: cannot write report %s\n", o->report);
            rc = 1;
        }
    }
    printf("dry run of %s: %" PRIu64 " input chunks to read, %" PRIu64 " missing; nothing was "
           "read or written\n",
           what, s.total_read, s.total_missing);
    return rc != 0 || s.total_missing > 0 ? 1 : 0;
}
