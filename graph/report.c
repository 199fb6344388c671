/* SPDX-License-Identifier: MIT */
/*
 * The run report as JSON: the summary, for every put its counts and every
 * failed chunk with coordinates, code and message (null where the message
 * was dropped past max_errors; the code is always kept), and the results of
 * every stats node (or why there are none; for a pyramid's omero node,
 * whether the run wrote the channel windows).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/plan.h>
#include <sluice/pyramid.h>
#include <sluice/remote.h>

#include "core_internal.h"
#include "graph_internal.h"

/* Print `s` as a JSON string, quotes included. */
static void
json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* An error record found by (node, linear index). */
struct report_index {
    uint32_t node;
    uint64_t linear;
    const struct sl_chunk_error *rec;
};

static int
report_index_cmp(const void *a, const void *b)
{
    const struct report_index *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->linear < y->linear ? -1 : x->linear > y->linear;
}

static void
report_summary(const struct sl_run_summary *s, FILE *out)
{
    fprintf(out,
            "  \"summary\": {\"chunks\": %" PRIu64 ", \"ok\": %" PRIu64 ", \"failed\": %" PRIu64
            ", \"upstream\": %" PRIu64 ", \"canceled\": %" PRIu64 ", \"tasks\": %" PRIu64
            ", \"bytes_read\": %" PRIu64 ", \"bytes_written\": %" PRIu64
            ", \"objects_written\": %" PRIu64
            ", \"peak_bytes\": %zu, \"budget_bytes\": %zu, \"elapsed_s\": %.6f"
            ", \"errors_dropped\": %zu, \"remote_requests\": %" PRIu64
            ", \"remote_retries\": %" PRIu64 ", \"remote_max_in_flight\": %u"
            ", \"resumed\": %" PRIu64 ", \"retries\": %" PRIu64
            ", \"journal_s\": %.6f, \"first_error\": ",
            s->n_chunks, s->n_ok, s->n_failed, s->n_upstream, s->n_canceled, s->n_tasks,
            s->bytes_read, s->bytes_written, s->objects_written, s->peak_bytes, s->budget_bytes,
            s->elapsed_s, s->errors_dropped, s->remote_requests, s->remote_retries,
            s->remote_max_in_flight, s->n_resumed, s->n_retries, s->journal_s);
    if (s->first_error == SL_OK)
        fputs("null},\n", out);
    else
        fprintf(out, "\"%s\"},\n", sl_status_name(s->first_error));
}

/* How a put's writes went to an S3 store: "honoured" (conditional),
 * "ignored" (the server ignores conditions: unconditional, the last
 * writer wins), "off" (unconditional by choice), "not known" (nothing
 * written yet); NULL where conditions do not apply (not S3). */
static const char *
conditional_name(const sl_array *a)
{
    switch (sl_store_conditional_writes(a != NULL ? sl_array_store(a) : NULL)) {
    case SL_STORE_CONDITIONAL_NOT_KNOWN:
        return "not known";
    case SL_STORE_CONDITIONAL_HONOURED:
        return "honoured";
    case SL_STORE_CONDITIONAL_IGNORED:
        return "ignored";
    case SL_STORE_CONDITIONAL_OFF:
        return "off";
    case SL_STORE_CONDITIONAL_NOT_APPLICABLE:
    default:
        return NULL;
    }
}

/* The failures of one put, with messages looked up in `index`. */
static void
report_put(const sl_plan *plan, const struct sl__put_state *ps, const struct report_index *index,
           size_t n_index, FILE *out)
{
    const struct sl__node *n = sl__graph_node(plan->graph, ps->node);
    struct sl_put_status st;
    if (sl_plan_put_status(plan, ps->node, &st, NULL) != SL_OK)
        return;
    fputs("    {\"name\": ", out);
    json_string(out, n->name);
    fprintf(out,
            ", \"chunks\": %" PRIu64 ", \"ok\": %" PRIu64 ", \"resumed\": %" PRIu64
            ", \"failed\": %" PRIu64 ", \"retries\": %" PRIu64,
            ps->n_chunks, st.n_ok, ps->n_resumed, st.n_failed,
            atomic_load_explicit(&ps->n_retries, memory_order_relaxed));
    fputs(", \"grid\": [", out);
    for (uint32_t d = 0; d < n->grid.rank; d++)
        fprintf(out, "%s%" PRIu64, d ? ", " : "", n->grid.n_chunks[d]);
    fputs("]", out);
    const char *cond = conditional_name(n->kind == SL_NODE_PUT ? n->u.io.array : NULL);
    if (cond != NULL)
        fprintf(out, ", \"conditional_writes\": \"%s\"", cond);
    fputs(", \"failures\": [", out);
    bool first = true;
    for (uint64_t k = 0; k < ps->n_chunks; k++) {
        uint8_t code = st.codes[k];
        if (code == SL_OK || code == SL_ESKIPPED)
            continue;
        uint64_t coords[SL_MAX_RANK];
        sl_grid_coords_of(&n->grid, k, coords);
        fprintf(out, "%s\n      {\"chunk\": [", first ? "" : ",");
        first = false;
        for (uint32_t d = 0; d < n->grid.rank; d++)
            fprintf(out, "%s%" PRIu64, d ? ", " : "", coords[d]);
        fprintf(out, "], \"code\": \"%s\", \"message\": ",
                code == SL__CODE_PENDING ? "ECANCELED" : sl_status_name((sl_status)code));
        const struct report_index key = {.node = ps->node, .linear = k};
        const struct report_index *hit =
            n_index > 0 ? bsearch(&key, index, n_index, sizeof(key), report_index_cmp) : NULL;
        if (hit != NULL)
            json_string(out, hit->rec->text);
        else if (code == SL__CODE_PENDING || code == SL_ECANCELED)
            json_string(out, "not run: the run stopped before this chunk");
        else
            fputs("null", out);
        fputc('}', out);
    }
    fputs(first ? "]}" : "\n    ]}", out);
}

/* A number as JSON: null for NaN and infinities, which JSON lacks. */
static void
json_number(FILE *out, double v)
{
    if (isfinite(v))
        fprintf(out, "%.17g", v);
    else
        fputs("null", out);
}

/* One set of statistics. */
static void
report_stats_set(const struct sl_stats_info *info, uint64_t set, const struct sl_stats_result *r,
                 FILE *out)
{
    fputs("        {\"index\": [", out);
    uint64_t rest = set;
    uint64_t idx[SL_MAX_RANK];
    for (uint32_t k = info->n_per; k-- > 0;) {
        idx[k] = rest % info->per_extent[k];
        rest /= info->per_extent[k];
    }
    for (uint32_t k = 0; k < info->n_per; k++)
        fprintf(out, "%s%" PRIu64, k ? ", " : "", idx[k]);
    fprintf(out, "], \"count\": %" PRIu64 ", \"nan_count\": %" PRIu64, r->count, r->nan_count);
    const char *names[] = {"min", "max", "sum", "mean", "std"};
    const double values[] = {r->min, r->max, r->sum, r->mean, r->std};
    for (size_t k = 0; k < SL_ARRAY_LEN(names); k++) {
        fprintf(out, ", \"%s\": ", names[k]);
        json_number(out, values[k]);
    }
    fputs(", \"percentiles\": [", out);
    for (size_t k = 0; k < r->n_percentiles; k++) {
        fprintf(out, "%s{\"q\": ", k ? ", " : "");
        json_number(out, info->percentile_q[k]);
        fputs(", \"value\": ", out);
        json_number(out, r->percentile[k]);
        fputc('}', out);
    }
    fprintf(out, "], \"percentiles_exact\": %s, \"rank_error\": ",
            r->percentiles_exact ? "true" : "false");
    json_number(out, r->rank_error);
    if (r->bins > 0) {
        fputs(", \"histogram\": {\"range\": [", out);
        json_number(out, r->lo);
        fputs(", ", out);
        json_number(out, r->hi);
        fprintf(out, "], \"below\": %" PRIu64 ", \"above\": %" PRIu64 ", \"counts\": [", r->below,
                r->above);
        for (uint32_t b = 0; b < r->bins; b++)
            fprintf(out, "%s%" PRIu64, b ? ", " : "", r->histogram[b]);
        fputs("]}", out);
    }
    fputc('}', out);
}

/* The statistics of stats node `node`, or why there are none. */
static void
report_stats(const sl_plan *plan, uint32_t node, FILE *out)
{
    const struct sl__node *n = sl__graph_node(plan->graph, node);
    struct sl_stats_info info;
    if (sl_plan_stats_info(plan, node, &info, NULL) != SL_OK)
        return;
    fputs("    {\"name\": ", out);
    json_string(out, n->name);
    fputs(", \"per\": [", out);
    for (uint32_t k = 0; k < info.n_per; k++)
        fprintf(out, "%s%" PRIu32, k ? ", " : "", info.per[k]);
    fputs("]", out);
    struct sl_error err = SL_ERROR_INIT;
    if (info.omero) {
        bool written = sl_plan_pyramid_omero(plan, node, &err) == SL_OK;
        fprintf(out, ", \"omero\": {\"written\": %s", written ? "true" : "false");
        if (!written) {
            fputs(", \"error\": ", out);
            json_string(out, err.text);
        }
        fputc('}', out);
        err = SL_ERROR_INIT;
    }
    struct sl_stats_result r;
    if (sl_plan_stats(plan, node, 0, &r, &err) != SL_OK) {
        fputs(", \"error\": ", out);
        json_string(out, err.text);
        fputs("}", out);
        return;
    }
    fputs(", \"sets\": [\n", out);
    for (uint64_t k = 0; k < info.n_sets; k++) {
        if (sl_plan_stats(plan, node, k, &r, NULL) != SL_OK)
            continue;
        report_stats_set(&info, k, &r, out);
        fputs(k + 1 < info.n_sets ? ",\n" : "\n", out);
    }
    fputs("    ]}", out);
}

sl_status
sl_plan_write_report(const sl_plan *plan, FILE *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    size_t n_rec;
    const struct sl_chunk_error *recs = sl_plan_errors(plan, &n_rec);
    struct report_index *index = NULL;
    if (n_rec > 0) {
        index = malloc(n_rec * sizeof(*index));
        if (index == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL,
                                "report: no memory to sort %zu failed-chunk records", n_rec);
        for (size_t i = 0; i < n_rec; i++) {
            const struct sl__node *n = sl__graph_node(plan->graph, recs[i].node);
            index[i] =
                (struct report_index){.node = recs[i].node,
                                      .linear = sl_grid_linear_index(&n->grid, recs[i].key.idx),
                                      .rec = &recs[i]};
        }
        qsort(index, n_rec, sizeof(*index), report_index_cmp);
    }
    const struct sl_run_summary *s = &plan->summary;
    fprintf(out, "{\n  \"sluice_report\": 1,\n  \"ok\": %s,\n",
            s->n_chunks == s->n_ok ? "true" : "false");
    report_summary(s, out);
    fputs("  \"puts\": [\n", out);
    for (uint32_t i = 0; i < plan->n_puts; i++) {
        report_put(plan, &plan->puts[i], index, n_rec, out);
        fputs(i + 1 < plan->n_puts ? ",\n" : "\n", out);
    }
    fputs("  ],\n  \"stats\": [", out);
    bool first = true;
    for (uint32_t i = 0; i < plan->n_puts; i++) {
        if (plan->puts[i].stats == NULL)
            continue;
        fputs(first ? "\n" : ",\n", out);
        first = false;
        report_stats(plan, plan->puts[i].node, out);
    }
    fputs(first ? "]\n}\n" : "\n  ]\n}\n", out);
    free(index);
    if (ferror(out))
        return sl_error_set(err, SL_EIO, NULL,
                            "report: writing %" PRIu32 " puts and %zu failed chunks to the stream "
                            "failed",
                            plan->n_puts, n_rec);
    return SL_OK;
}
