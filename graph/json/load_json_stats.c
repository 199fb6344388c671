/* SPDX-License-Identifier: MIT */
/*
 * Stats nodes of a graph file: "per" (axes with one set of statistics per
 * index), "histogram" ({"bins": n, "range": [lo, hi]}) and "percentiles"
 * (a list of numbers in [0, 100]), checked in the document pass; the rest
 * (axes against the input's rank, a range for wide dtypes) by the graph.
 */
#include <math.h>
#include <string.h>

#include <sluice/graph.h>
#include <sluice/stats.h>

#include "core_internal.h"
#include "load_json_internal.h"

/* "histogram": {"bins": n, "range": [lo, hi]} (range optional). */
static void
stats_parse_histogram(sl_graph_json *doc, struct sl__jnode *n, const json_t *v)
{
    char at[SL__JPTR_MAX], item[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "histogram");
    if (!json_is_object(v)) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "expected {\"bins\": n, \"range\": [lo, hi]}, found %s",
                      sl__json_type_name(v));
        return;
    }
    static const char *const keys[] = {"bins", "range", NULL};
    sl__jcheck_keys(&doc->diag, v, at, "a histogram", keys, NULL);
    const json_t *bins = json_object_get(v, "bins");
    sl__jptr_key(item, at, "bins");
    uint64_t b = 256;
    if (bins != NULL && !sl__jget_uint(&doc->diag, bins, item, 1, SL_STATS_MAX_BINS, &b))
        return;
    n->stats.opts.bins = (uint32_t)b;
    const json_t *range = json_object_get(v, "range");
    if (range == NULL)
        return;
    sl__jptr_key(item, at, "range");
    const json_t *lo = json_array_get(range, 0), *hi = json_array_get(range, 1);
    if (!json_is_array(range) || json_array_size(range) != 2 || !json_is_number(lo) ||
        !json_is_number(hi) || !(json_number_value(lo) < json_number_value(hi))) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, item, "expected [lo, hi] with lo < hi, found %s",
                      json_is_array(range) ? "another list" : sl__json_type_name(range));
        return;
    }
    n->stats.opts.has_range = true;
    n->stats.opts.lo = json_number_value(lo);
    n->stats.opts.hi = json_number_value(hi);
}

/* "percentiles": up to SL_STATS_MAX_PERCENTILES numbers in [0, 100]. */
static void
stats_parse_percentiles(sl_graph_json *doc, struct sl__jnode *n, const json_t *v)
{
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "percentiles");
    if (!json_is_array(v) || json_array_size(v) > SL_STATS_MAX_PERCENTILES) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "expected a list of at most %d numbers in [0, 100], found %s",
                      SL_STATS_MAX_PERCENTILES,
                      json_is_array(v) ? "a longer list" : sl__json_type_name(v));
        return;
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *p = json_array_get(v, i);
        char item[SL__JPTR_MAX];
        sl__jptr_index(item, at, i);
        double q = json_is_number(p) ? json_number_value(p) : NAN;
        if (!(q >= 0 && q <= 100)) {
            sl__jdiag_add(&doc->diag, SL_EINVAL, item, "expected a number in [0, 100], found %s",
                          json_is_number(p) ? "one outside" : sl__json_type_name(p));
            return;
        }
        n->stats.opts.percentiles[n->stats.opts.n_percentiles++] = q;
    }
}

void
sl__jstats_parse(sl_graph_json *doc, struct sl__jnode *n)
{
    n->stats.opts = SL_STATS_OPTS_DEFAULT;
    const json_t *v = json_object_get(n->obj, "histogram");
    if (v != NULL)
        stats_parse_histogram(doc, n, v);
    v = json_object_get(n->obj, "percentiles");
    if (v != NULL)
        stats_parse_percentiles(doc, n, v);
    v = json_object_get(n->obj, "per");
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "per");
    n->n_axes = 0;
    if (v != NULL)
        (void)sl__jget_axes(&doc->diag, v, at, n->axes, &n->n_axes);
}

bool
sl__jstats_build(sl_graph_json *doc, struct sl__jnode *n)
{
    const struct sl_stats_desc desc = {.opts = n->stats.opts, .n_per = n->n_axes, .per = n->axes};
    struct sl_error err = SL_ERROR_INIT;
    if (sl_graph_add_stats(doc->graph, n->id, doc->nodes[n->input].gid, &desc, &n->gid, &err) ==
        SL_OK)
        return true;
    const char *field = strstr(err.text, "\"per\"") != NULL ? "per"
                        : strstr(err.text, "histogram") != NULL || strstr(err.text, "bins") != NULL
                            ? "histogram"
                        : strstr(err.text, "percentile") != NULL ? "percentiles"
                                                                 : "input";
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, field);
    return sl__jdiag_add_node_error(&doc->diag, n->id, at, &err);
}
