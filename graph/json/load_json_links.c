/* SPDX-License-Identifier: MIT */
/*
 * How the nodes of a graph file refer to each other and to arrays: "input"
 * and "array" names resolved (with a suggestion for a misspelt id), one
 * writer per array, writes into existing arrays only when allowed, nodes
 * nobody uses, and cycles, found by a depth-first search that also yields
 * the order the build pass adds nodes in.
 *
 * DESIGN: a node depends on its input and, when it reads or writes an
 * array that a put of the file writes, on the input of that put (and of the
 * writers of the arrays it is "like"): that node decides a new array's
 * shape and dtype, and the run writes an array before reading it back.  So
 * a graph that reads what it derives its own output from is a cycle, as
 * the planner would find later.  The search keeps an explicit stack, so deep
 * chains of nodes cannot overflow the C stack.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/remote.h>

#include "core_internal.h"
#include "load_json_internal.h"

/* ---- names ------------------------------------------------------------------- */

static int
node_ptr_cmp(const void *pa, const void *pb)
{
    const struct sl__jnode *a = *(const struct sl__jnode *const *)pa;
    const struct sl__jnode *b = *(const struct sl__jnode *const *)pb;
    int c = strcmp(a->id, b->id);
    return c != 0 ? c : (a < b ? -1 : a > b);
}

/* Edit distance of two ids, capped at 3 (only near misses matter). */
static size_t
id_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na > SL__JNODE_ID_MAX || nb > SL__JNODE_ID_MAX || (na > nb ? na - nb : nb - na) > 2)
        return 3;
    size_t prev[SL__JNODE_ID_MAX + 1], cur[SL__JNODE_ID_MAX + 1];
    for (size_t j = 0; j <= nb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= na; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (nb + 1) * sizeof(size_t));
    }
    return prev[nb] < 3 ? prev[nb] : 3;
}

/* ", did you mean \"x\"?" for the closest id within 2 edits, or "". */
static void
id_suggest(const sl_graph_json *doc, const char *name, char *buf, size_t size)
{
    size_t best = 3;
    const char *found = NULL;
    for (size_t i = 0; i < doc->n_nodes; i++) {
        const char *id = doc->nodes[i].id;
        size_t dist = id != NULL ? id_distance(name, id) : 3;
        if (dist < best && dist < strlen(name)) {
            best = dist;
            found = id;
        }
    }
    if (found != NULL)
        snprintf(buf, size, "; did you mean \"%s\"?", found);
    else
        buf[0] = '\0';
}

/* Nodes sorted by id, for lookups; duplicate ids (lists only) reported. */
static struct sl__jnode **
names_index(sl_graph_json *doc, size_t *n_out)
{
    struct sl__jnode **by_id = sl_alloc_zeroed(&doc->alloc, doc->n_nodes + 1, sizeof(*by_id), 0);
    if (by_id == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, "/nodes", "no memory to index %zu nodes",
                      doc->n_nodes);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < doc->n_nodes; i++)
        if (doc->nodes[i].id != NULL)
            by_id[n++] = &doc->nodes[i];
    qsort(by_id, n, sizeof(*by_id), node_ptr_cmp);
    for (size_t k = 1; k < n; k++) {
        if (strcmp(by_id[k]->id, by_id[k - 1]->id) != 0)
            continue;
        char at[SL__JPTR_MAX];
        sl__jptr_key(at, by_id[k]->ptr, "id");
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "duplicate node id \"%s\" (also at %s)",
                      by_id[k]->id, by_id[k - 1]->ptr);
        by_id[k]->bad = true;
    }
    *n_out = n;
    return by_id;
}

/* Index of the node with id `name`, or -1. */
static int
names_find(const sl_graph_json *doc, struct sl__jnode *const *by_id, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(by_id[mid]->id, name);
        if (c == 0) {
            /* Duplicates sort by position: name the first of them. */
            while (mid > 0 && strcmp(by_id[mid - 1]->id, name) == 0)
                mid--;
            return (int)(by_id[mid] - doc->nodes);
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* ---- references ---------------------------------------------------------------- */

/* Resolve input name `name` of `n`, reported at `at`, into `*out`; false
 * when it names no node. */
static bool
link_one(sl_graph_json *doc, struct sl__jnode *n, struct sl__jnode *const *by_id, size_t n_ids,
         const char *name, const char *at, int *out)
{
    int k = names_find(doc, by_id, n_ids, name);
    if (k < 0) {
        char hint[64];
        id_suggest(doc, name, hint, sizeof(hint));
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "unknown node \"%s\"%s", name, hint);
        n->bad = true;
        return false;
    }
    struct sl__jnode *in = &doc->nodes[k];
    if (in->kind == SL__JNODE_PUT || in->kind == SL__JNODE_PYRAMID || in->kind == SL__JNODE_COPY ||
        in->kind == SL__JNODE_STATS) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "node \"%s\" is a %s, which produces no chunks to read", in->id,
                      in->kind == SL__JNODE_PUT       ? "put"
                      : in->kind == SL__JNODE_PYRAMID ? "pyramid"
                      : in->kind == SL__JNODE_STATS   ? "stats node"
                                                      : "copy");
        n->bad = true;
        return true;
    }
    *out = k;
    in->n_consumers++;
    return true;
}

/* Resolve `n`'s input, or each of its "inputs"; false when one names no node. */
static bool
link_input(sl_graph_json *doc, struct sl__jnode *n, struct sl__jnode *const *by_id, size_t n_ids)
{
    char at[SL__JPTR_MAX];
    if (n->input_name != NULL) {
        sl__jptr_key(at, n->ptr, "input");
        return link_one(doc, n, by_id, n_ids, n->input_name, at, &n->input);
    }
    bool found = true;
    for (size_t i = 0; i < n->inputs.n; i++) {
        char inputs[SL__JPTR_MAX];
        sl__jptr_key(inputs, n->ptr, "inputs");
        if (n->inputs.name[i] != NULL)
            sl__jptr_key(at, inputs, n->inputs.name[i]);
        else
            sl__jptr_index(at, inputs, i);
        found = link_one(doc, n, by_id, n_ids, n->inputs.id[i], at, &n->inputs.node[i]) && found;
    }
    return found;
}

/* The names of the arrays, for a message. */
static void
array_names(const sl_graph_json *doc, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < doc->n_arrays; i++)
        sl__strbuf_append(buf, size, &len, "%s%s", i ? ", " : "", doc->arrays[i].name);
    if (doc->n_arrays == 0)
        sl__strbuf_append(buf, size, &len, "(none)");
}

static void
link_array(sl_graph_json *doc, struct sl__jnode *n)
{
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, n->ptr, "array");
    int k = sl__jarrays_find(doc, n->array_name);
    if (k < 0) {
        char names[96];
        array_names(doc, names, sizeof(names));
        sl__jdiag_add(&doc->diag, SL_EINVAL, at, "unknown array \"%s\"; \"arrays\" has: %s",
                      n->array_name, names);
        n->bad = true;
        return;
    }
    n->array = k;
    struct sl__jarray *a = &doc->arrays[k];
    if (n->kind == SL__JNODE_GET) {
        a->n_readers++;
        return;
    }
    if (a->writer >= 0) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "array \"%s\" is already written by node \"%s\"; one put per array", a->name,
                      doc->nodes[a->writer].id);
        n->bad = true;
        return;
    }
    a->writer = (int)(n - doc->nodes);
    if (a->role == SL__JARRAY_READ && !a->overwrite) {
        sl__jdiag_add(&doc->diag, SL_EINVAL, at,
                      "array \"%s\" exists and is not created here; set \"overwrite\": true "
                      "in %s to write into it",
                      a->name, a->ptr);
        n->bad = true;
    } else if (a->role == SL__JARRAY_READ && sl_url_is_remote(a->full_path) &&
               !sl_url_is_s3(a->full_path)) {
        sl__jdiag_add(&doc->diag, SL_EACCES, at,
                      "array \"%s\" at %s is http(s), read here, not written; a put writes a "
                      "path or an s3:// URL",
                      a->name, a->path);
        n->bad = true;
    }
}

/* Every non-put node must be read by another (unless some "input" named
 * no node: it may have meant one of them); some put must exist. */
static void
link_check_use(sl_graph_json *doc, bool all_inputs_found)
{
    bool any_sink = false;
    for (size_t i = 0; i < doc->n_nodes; i++) {
        struct sl__jnode *n = &doc->nodes[i];
        bool sink = n->kind == SL__JNODE_PUT || n->kind == SL__JNODE_PYRAMID ||
                    n->kind == SL__JNODE_COPY || n->kind == SL__JNODE_STATS;
        any_sink = any_sink || (sink && n->id != NULL);
        if (sink || n->bad || n->n_consumers > 0 || !all_inputs_found)
            continue;
        sl__jdiag_add(&doc->diag, SL_EINVAL, n->ptr,
                      "node \"%s\" is never used: make it the \"input\" of a node that leads "
                      "to a put, or remove it",
                      n->id);
        n->bad = true;
    }
    if (!any_sink && doc->diag.count == 0)
        sl__jdiag_add(&doc->diag, SL_EINVAL, "/nodes",
                      "the graph has no put node, so running it would write nothing");
}

/* ---- dependencies, cycles, order ----------------------------------------------------- */

/* The most dependencies a node has: its input, and per array of its "like"
 * chain the input of that array's writer. */
#define DEPS_MAX (SL__JLIKE_MAX + 1 + SL__JNODE_INPUTS_MAX)

/* Node `i`'s dependencies into `deps`; @return how many. */
static size_t
node_deps(const sl_graph_json *doc, size_t i, size_t *deps)
{
    const struct sl__jnode *n = &doc->nodes[i];
    size_t count = 0;
    if (n->input >= 0)
        deps[count++] = (size_t)n->input;
    for (size_t j = 0; j < n->inputs.n; j++)
        if (n->inputs.node[j] >= 0)
            deps[count++] = (size_t)n->inputs.node[j];
    int k = n->array;
    for (int steps = 0; k >= 0 && steps <= SL__JLIKE_MAX; steps++) {
        const struct sl__jarray *a = &doc->arrays[k];
        if (a->writer >= 0 && (size_t)a->writer != i && doc->nodes[a->writer].input >= 0)
            deps[count++] = (size_t)doc->nodes[a->writer].input;
        k = a->like;
    }
    return count;
}

/* A node on the search stack and its next dependency to visit. */
struct search_frame {
    size_t node; /* node index */
    size_t next; /* index into its dependencies */
};

/* Report the cycle from `dep` (on the stack) to the top of the stack, in
 * the direction data flows: each node feeds the next. */
static void
cycle_report(sl_graph_json *doc, const struct search_frame *stack, size_t depth, size_t dep)
{
    size_t from = 0;
    while (from + 1 < depth && stack[from].node != dep)
        from++;
    char text[1024]; /* sl__jdiag_add fits it to the record */
    size_t len = 0;
    text[0] = '\0';
    sl__strbuf_append(text, sizeof(text), &len, "cycle: %s", doc->nodes[dep].id);
    /* stack[k] depends on stack[k + 1] (and the top on `dep`): walk down. */
    for (size_t k = depth; k-- > from;) {
        const struct sl__jnode *n = &doc->nodes[stack[k].node];
        size_t feeder = k + 1 < depth ? stack[k + 1].node : dep;
        if (!sl__jnode_reads(n, (int)feeder) && n->array >= 0)
            sl__strbuf_append(text, sizeof(text), &len, " -> array %s", doc->arrays[n->array].name);
        sl__strbuf_append(text, sizeof(text), &len, " -> %s", n->id);
        doc->nodes[stack[k].node].bad = true;
    }
    const struct sl__jnode *top = &doc->nodes[stack[depth - 1].node];
    char at[SL__JPTR_MAX];
    sl__jptr_key(at, top->ptr,
                 (int)dep == top->input           ? "input"
                 : sl__jnode_reads(top, (int)dep) ? "inputs"
                                                  : "array");
    sl__jdiag_add(&doc->diag, SL_EINVAL, at, "%s", text);
}

/* Depth-first search from node `root`, appending finished nodes to doc->order. */
static void
search_from(sl_graph_json *doc, size_t root, struct search_frame *stack)
{
    size_t depth = 0, deps[DEPS_MAX];
    stack[depth++] = (struct search_frame){root, 0};
    doc->nodes[root].mark = 1;
    while (depth > 0) {
        struct search_frame *f = &stack[depth - 1];
        size_t n_deps = node_deps(doc, f->node, deps);
        if (f->next == n_deps) {
            doc->nodes[f->node].mark = 2;
            doc->order[doc->n_order++] = f->node;
            depth--;
            continue;
        }
        size_t dep = deps[f->next++];
        if (doc->nodes[dep].mark == 1)
            cycle_report(doc, stack, depth, dep);
        if (doc->nodes[dep].mark != 0)
            continue;
        doc->nodes[dep].mark = 1;
        stack[depth++] = (struct search_frame){dep, 0};
    }
}

static void
link_order(sl_graph_json *doc)
{
    doc->order = sl_alloc_zeroed(&doc->alloc, doc->n_nodes + 1, sizeof(size_t), 0);
    struct search_frame *stack =
        sl_alloc_zeroed(&doc->alloc, doc->n_nodes + 1, sizeof(struct search_frame), 0);
    if (doc->order == NULL || stack == NULL) {
        sl__jdiag_add(&doc->diag, SL_ENOMEM, "/nodes", "no memory to order %zu nodes",
                      doc->n_nodes);
    } else {
        for (size_t i = 0; i < doc->n_nodes && !doc->diag.full; i++)
            if (doc->nodes[i].mark == 0)
                search_from(doc, i, stack);
    }
    sl_free(&doc->alloc, stack, (doc->n_nodes + 1) * sizeof(struct search_frame));
    for (size_t i = 0; i < doc->n_nodes; i++)
        doc->nodes[i].mark = 0;
}

void
sl__jnodes_link(sl_graph_json *doc)
{
    size_t n_ids = 0;
    struct sl__jnode **by_id = names_index(doc, &n_ids);
    if (by_id == NULL)
        return;
    bool all_found = true;
    for (size_t i = 0; i < doc->n_nodes; i++) {
        struct sl__jnode *n = &doc->nodes[i];
        if (n->input_name != NULL || n->inputs.n > 0)
            all_found = link_input(doc, n, by_id, n_ids) && all_found;
        if (n->array_name != NULL)
            link_array(doc, n);
    }
    sl_free(&doc->alloc, by_id, (doc->n_nodes + 1) * sizeof(*by_id));
    link_check_use(doc, all_found);
    link_order(doc);
}
