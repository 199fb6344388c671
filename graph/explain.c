/* SPDX-License-Identifier: MIT */
/*
 * Explaining a plan to people: a text dump of nodes, stages, every edge
 * with the planner's verdict and the programs elementwise chains were
 * composed into (what `sluice explain` prints and the golden fusion tests
 * compare), and Graphviz DOT with one cluster per stage.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/expr.h>
#include <sluice/graph_node.h>

#include "core_internal.h"
#include "graph_internal.h"

/* "shape [100, 80] chunks [32, 32] (4 x 3)" or "... chunks irregular (...)". */
static void
grid_describe(const struct sl_grid *g, char *buf, size_t size)
{
    char shape[128], chunks[128], counts[128];
    sl_shape_format(g->rank, g->shape, shape, sizeof(shape));
    sl_shape_format(g->rank, g->n_chunks, counts, sizeof(counts));
    if (sl_grid_is_regular(g)) {
        sl_shape_format(g->rank, g->chunk, chunks, sizeof(chunks));
    } else {
        size_t len = 0;
        chunks[0] = '\0';
        sl__strbuf_append(chunks, sizeof(chunks), &len, "[");
        for (uint32_t d = 0; d < g->rank; d++) {
            if (g->bounds[d] == NULL)
                sl__strbuf_append(chunks, sizeof(chunks), &len, "%s%" PRIu64, d ? ", " : "",
                                  g->chunk[d]);
            else
                sl__strbuf_append(chunks, sizeof(chunks), &len, "%sirregular", d ? ", " : "");
        }
        sl__strbuf_append(chunks, sizeof(chunks), &len, "]");
    }
    snprintf(buf, size, "shape %s chunks %s grid %s", shape, chunks, counts);
}

/* " -> "-joined names of a stage's nodes. */
static void
stage_names(const sl_graph *g, const struct sl__stage *s, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < s->n_nodes; i++)
        sl__strbuf_append(buf, size, &len, "%s%s", i ? " + " : "",
                          sl__graph_node(g, s->nodes[i])->name);
}

/* The canonical text of node `id`'s composed program into buf, cut with
 * "..." when it does not fit. */
static void
program_text(const struct sl__fusion *f, uint32_t id, char *buf, size_t size)
{
    size_t len = sl_expr_format(f->programs[id].expr, buf, size);
    if (len >= size && size > 4)
        memcpy(buf + size - 4, "...", 4);
}

/*
 * The "programs:" section: every composed chain with its one program, and
 * every edge between two elementwise nodes that stayed apart, with why.
 * Nothing when the graph has neither.
 */
static void
explain_programs(const sl_graph *g, const struct sl__fusion *f, FILE *out)
{
    bool header = false;
    char members[512], text[1024];
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        if (!sl__compose_is_top(f, i))
            continue;
        if (!header)
            fprintf(out, "programs:\n");
        header = true;
        sl__compose_members(g, f, i, members, sizeof(members));
        program_text(f, i, text, sizeof(text));
        fprintf(out, "  %s: one program: %s\n", members, text);
    }
    for (uint32_t e = 0; e < f->n_edges; e++) {
        const struct sl__edge *ed = &f->edges[e];
        if (ed->composed || ed->compose_why[0] == '\0')
            continue;
        if (!header)
            fprintf(out, "programs:\n");
        header = true;
        fprintf(out, "  %s into %s: not composed: %s\n", sl__graph_node(g, ed->producer)->name,
                sl__graph_node(g, ed->consumer)->name, ed->compose_why);
    }
}

void
sl__fusion_explain(const sl_graph *g, const struct sl__fusion *f, FILE *out)
{
    uint32_t n_fused = 0;
    for (uint32_t e = 0; e < f->n_edges; e++)
        n_fused += f->edges[e].reason == SL__FUSED;
    fprintf(out,
            "plan: %" PRIu32 " node%s, %" PRIu32 " edge%s (%" PRIu32 " fused), %" PRIu32
            " stage%s\n",
            g->n_nodes, g->n_nodes == 1 ? "" : "s", f->n_edges, f->n_edges == 1 ? "" : "s", n_fused,
            f->n_stages, f->n_stages == 1 ? "" : "s");
    fprintf(out, "nodes:\n");
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const struct sl__node *n = &g->nodes[i];
        char grid[400];
        grid_describe(&n->grid, grid, sizeof(grid));
        fprintf(out, "  %-16s %-7s %-10s %-8s %s\n", n->name, sl_node_kind_name(n->kind),
                n->op_name, sl_dtype_name(n->dtype), grid);
    }
    fprintf(out, "stages:\n");
    for (uint32_t s = 0; s < f->n_stages; s++) {
        const struct sl__stage *st = &f->stages[s];
        const struct sl__node *root = sl__graph_node(g, st->root);
        char names[512];
        stage_names(g, st, names, sizeof(names));
        fprintf(out,
                "  stage %" PRIu32 ": %s -> %" PRIu64 " tasks of %zu bytes (phase %" PRIu32 ")\n",
                s, names, root->grid.n_total, st->task_bytes, st->phase);
    }
    fprintf(out, "edges:\n");
    for (uint32_t e = 0; e < f->n_edges; e++) {
        const struct sl__edge *ed = &f->edges[e];
        fprintf(out, "  %s -> %s: %s", sl__graph_node(g, ed->producer)->name,
                sl__graph_node(g, ed->consumer)->name,
                ed->reason == SL__FUSED ? "fused" : "not fused");
        if (ed->reason != SL__FUSED)
            fprintf(out, " (%s: %s)", sl__fuse_reason_text(ed->reason), ed->detail);
        fprintf(out, "\n");
    }
    explain_programs(g, f, out);
}

/* Print `s` as the inside of a DOT double-quoted string. */
static void
dot_escape(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
}

void
sl__fusion_write_dot(const sl_graph *g, const struct sl__fusion *f, FILE *out)
{
    fprintf(out, "digraph sluice {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n");
    for (uint32_t s = 0; s < f->n_stages; s++) {
        const struct sl__stage *st = &f->stages[s];
        fprintf(out,
                "  subgraph cluster_%" PRIu32 " {\n    label=\"stage %" PRIu32 ": %" PRIu64
                " tasks\";\n    style=rounded;\n",
                s, s, sl__graph_node(g, st->root)->grid.n_total);
        for (uint32_t i = 0; i < st->n_nodes; i++) {
            const struct sl__node *n = sl__graph_node(g, st->nodes[i]);
            char shape[128];
            sl_shape_format(n->grid.rank, n->grid.shape, shape, sizeof(shape));
            fprintf(out, "    n%" PRIu32 " [label=\"", n->id);
            dot_escape(out, n->name);
            fprintf(out, "\\n%s %s\\n%s %s", sl_node_kind_name(n->kind), n->op_name,
                    sl_dtype_name(n->dtype), shape);
            if (sl__compose_is_top(f, n->id)) {
                char text[160];
                program_text(f, n->id, text, sizeof(text));
                fprintf(out, "\\none program: ");
                dot_escape(out, text);
            } else if (f->composed_to != NULL && f->composed_to[n->id] != UINT32_MAX) {
                fprintf(out, "\\ncomposed into ");
                dot_escape(out, sl__graph_node(g, f->composed_to[n->id])->name);
            }
            fprintf(out, "\"];\n");
        }
        fprintf(out, "  }\n");
    }
    for (uint32_t e = 0; e < f->n_edges; e++) {
        const struct sl__edge *ed = &f->edges[e];
        fprintf(out, "  n%" PRIu32 " -> n%" PRIu32, ed->producer, ed->consumer);
        if (ed->reason == SL__FUSED) {
            if (ed->composed) {
                fprintf(out, " [label=\"composed\"];\n");
            } else if (ed->compose_why[0] != '\0') {
                fprintf(out, " [label=\"not composed\", tooltip=\"");
                dot_escape(out, ed->compose_why);
                fprintf(out, "\"];\n");
            } else {
                fprintf(out, ";\n");
            }
            continue;
        }
        fprintf(out, " [style=dashed, label=\"");
        dot_escape(out, sl__fuse_reason_text(ed->reason));
        fprintf(out, "\", tooltip=\"");
        dot_escape(out, ed->detail);
        fprintf(out, "\"];\n");
    }
    fprintf(out, "}\n");
}
