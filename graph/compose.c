/* SPDX-License-Identifier: MIT */
/*
 * Composing chains of elementwise nodes (expr, cast, scale, clip,
 * threshold) into one expr program per chain, at plan time, so a fused
 * chain is evaluated in one pass over the tiles instead of node by node
 * over intermediate chunk buffers.
 *
 * DESIGN: every elementwise node gets a program form when one gives
 * results bit-identical to its own evaluation: an expr computing in
 * float64 is its own program; an op becomes the text its kernel computes
 * (op_text) when every dtype it touches is exact in float64 (bool,
 * integers up to 32 bits, float32, float64).  Then, in node order
 * (producers first), each fused edge between two program forms whose
 * grids are equal is composed with sl_expr_compose through the producer's
 * dtype, which is exactly storing the producer's chunk and loading it
 * back.  The graph, its stages and node names stay as they are: a
 * composed-away node is still a member of its stage, only the executor
 * evaluates its chain top's program instead (eval_composed in
 * exec_eval.c), reading the chain's inputs as the members would.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sluice/expr.h>
#include <sluice/graph_node.h>
#include <sluice/op_registry.h>

#include "core_internal.h"
#include "graph_internal.h"

/* True for the dtypes whose every value float64 holds exactly. */
static bool
dtype_exact_in_f64(sl_dtype dt)
{
    switch (dt) {
    case SL_DTYPE_BOOL:
    case SL_DTYPE_I8:
    case SL_DTYPE_U8:
    case SL_DTYPE_I16:
    case SL_DTYPE_U16:
    case SL_DTYPE_I32:
    case SL_DTYPE_U32:
    case SL_DTYPE_F32:
    case SL_DTYPE_F64:
        return true;
    default:
        return false;
    }
}

/* Append `v` as a literal the expr parser reads back to the same double:
 * 17 significant digits, parenthesised when negative. */
static void
text_number(char *buf, size_t size, size_t *len, double v)
{
    if (isinf(v))
        sl__strbuf_append(buf, size, len, "%s", v > 0 ? "inf" : "(-inf)");
    else if (signbit(v))
        sl__strbuf_append(buf, size, len, "(-%.17g)", -v);
    else
        sl__strbuf_append(buf, size, len, "%.17g", v);
}

/* Append "where(x OP k, k, inner)": what the clip kernel does for one bound
 * (`t < lo ? lo : ...`), NaN compared false as there. */
static void
text_bound(char *buf, size_t size, size_t *len, const char *op, double k, const char *inner)
{
    sl__strbuf_append(buf, size, len, "where(x %s ", op);
    text_number(buf, size, len, k);
    sl__strbuf_append(buf, size, len, ", ");
    text_number(buf, size, len, k);
    sl__strbuf_append(buf, size, len, ", %s)", inner);
}

/* The lowest and highest value of integer or bool dtype `dt`. */
static void
dtype_int_range(sl_dtype dt, double *lo, double *hi)
{
    switch (dt) {
    case SL_DTYPE_BOOL:
        *lo = 0, *hi = 1;
        return;
    case SL_DTYPE_I8:
        *lo = INT8_MIN, *hi = INT8_MAX;
        return;
    case SL_DTYPE_U8:
        *lo = 0, *hi = UINT8_MAX;
        return;
    case SL_DTYPE_I16:
        *lo = INT16_MIN, *hi = INT16_MAX;
        return;
    case SL_DTYPE_U16:
        *lo = 0, *hi = UINT16_MAX;
        return;
    case SL_DTYPE_I32:
        *lo = INT32_MIN, *hi = INT32_MAX;
        return;
    default:
        *lo = 0, *hi = UINT32_MAX;
        return;
    }
}

/*
 * The clip kernel as a program.  Floats: `t < lo ? lo : t > hi ? hi : t`
 * in double, written with where() because min/max pick the other zero on
 * a tie of signed zeros.  Integers and bool: the bounds rounded inward as
 * the kernel rounds them (+0.0 for a ceil of -0.5), a bound beyond the
 * dtype's range left out (it clips nothing).
 */
static void
text_clip(const struct sl_op *op, char *buf, size_t size)
{
    double lo = op->u.clip.lo, hi = op->u.clip.hi;
    if (!sl_dtype_is_float(op->in_dtype)) {
        double dlo, dhi;
        dtype_int_range(op->in_dtype, &dlo, &dhi);
        lo = ceil(lo) + 0.0;
        hi = floor(hi) + 0.0;
        lo = lo <= dlo ? -INFINITY : lo;
        hi = hi >= dhi ? INFINITY : hi;
    }
    char inner[256];
    size_t n = 0;
    inner[0] = '\0';
    if (hi < INFINITY)
        text_bound(inner, sizeof(inner), &n, ">", hi, "x");
    else
        sl__strbuf_append(inner, sizeof(inner), &n, "x");
    size_t len = 0;
    buf[0] = '\0';
    if (lo > -INFINITY)
        text_bound(buf, size, &len, "<", lo, inner);
    else
        sl__strbuf_append(buf, size, &len, "%s", inner);
}

/*
 * The text computing bound op `op` on input "x" in float64 exactly as its
 * kernel does (ops/README.md), or false with `why` when there is none.
 * Scale: `x * s + o` in double, the kernel's two roundings.  Threshold:
 * `where(x > t, value, 0)`, since an integer x exceeds t exactly when it
 * exceeds floor(t) and NaN exceeds nothing; the value is stored by the
 * cast rules either way.  Cast: `x`, stored by the cast rules.
 */
static bool
op_text(const struct sl_op *op, char *buf, size_t size, char *why, size_t why_size)
{
    const char *name = op->desc->name;
    size_t len = 0;
    buf[0] = '\0';
    if (!dtype_exact_in_f64(op->in_dtype) || !dtype_exact_in_f64(op->out_dtype)) {
        const bool in_ok = dtype_exact_in_f64(op->in_dtype);
        snprintf(why, why_size, "%s: %s %s not exact in float64", name,
                 sl_dtype_name(in_ok ? op->out_dtype : op->in_dtype), in_ok ? "output" : "input");
        return false;
    }
    if (strcmp(name, "cast") == 0) {
        /* A cast to its own dtype copies bytes: bool bytes other than 0
         * and 1, and signalling NaNs, would come out of a program changed. */
        if (op->in_dtype == op->out_dtype &&
            (sl_dtype_is_float(op->in_dtype) || op->in_dtype == SL_DTYPE_BOOL)) {
            snprintf(why, why_size,
                     "a cast to the same %s copies bytes a program would "
                     "normalise",
                     sl_dtype_name(op->in_dtype));
            return false;
        }
        sl__strbuf_append(buf, size, &len, "x");
        return true;
    }
    if (strcmp(name, "scale") == 0) {
        sl__strbuf_append(buf, size, &len, "x * ");
        text_number(buf, size, &len, op->u.scale.scale);
        sl__strbuf_append(buf, size, &len, " + ");
        text_number(buf, size, &len, op->u.scale.offset);
        return true;
    }
    if (strcmp(name, "clip") == 0) {
        text_clip(op, buf, size);
        return true;
    }
    if (strcmp(name, "threshold") == 0) {
        if (isnan(op->u.threshold.value)) {
            snprintf(why, why_size, "threshold value NaN has no exact literal");
            return false;
        }
        sl__strbuf_append(buf, size, &len, "where(x > ");
        text_number(buf, size, &len, op->u.threshold.threshold);
        sl__strbuf_append(buf, size, &len, ", ");
        text_number(buf, size, &len, op->u.threshold.value);
        sl__strbuf_append(buf, size, &len, ", 0)");
        return true;
    }
    snprintf(why, why_size, "op %s has no program form", name);
    return false;
}

/* True for the nodes composition considers: exprs and the four elementwise ops. */
static bool
node_is_elementwise(const struct sl__node *n)
{
    if (n->kind != SL_NODE_MAP)
        return false;
    if (n->expr != NULL)
        return true;
    if (!n->has_op || n->op.desc->kind != SL_OP_KIND_MAP)
        return false;
    const char *name = n->op.desc->name;
    return strcmp(name, "cast") == 0 || strcmp(name, "scale") == 0 || strcmp(name, "clip") == 0 ||
           strcmp(name, "threshold") == 0;
}

/* Node `n`'s own program form into `p` (or p->why); ENOMEM only. */
static sl_status
program_form(const sl_graph *g, const struct sl__node *n, struct sl__program *p,
             struct sl_error *err)
{
    p->n_members = 1;
    if (n->expr != NULL) {
        if (sl_expr_compute_dtype(n->expr) != SL_DTYPE_F64) {
            snprintf(p->why, sizeof(p->why), "expr \"%s\" computes in %s", n->name,
                     sl_dtype_name(sl_expr_compute_dtype(n->expr)));
            return SL_OK;
        }
        p->expr = n->expr;
    } else {
        char text[640];
        if (!op_text(&n->op, text, sizeof(text), p->why, sizeof(p->why)))
            return SL_OK;
        const char *name = "x";
        struct sl_error e = SL_ERROR_INIT;
        sl_status st = sl_expr_compile(text, 1, &name, &n->op.in_dtype, SL_DTYPE_F64, &g->alloc,
                                       &p->owned, &e);
        if (st == SL_ENOMEM)
            return sl_error_set(err, st, NULL, "node \"%s\": %s", n->name, e.text);
        if (st != SL_OK) {
            /* Cannot happen for the texts above; stay unfused if it does. */
            snprintf(p->why, sizeof(p->why), "%s", e.text);
            return SL_OK;
        }
        p->expr = p->owned;
    }
    p->n_inputs = (uint32_t)sl_expr_n_inputs(p->expr);
    for (uint32_t k = 0; k < p->n_inputs; k++)
        p->in[k] = (struct sl__program_input){.node = n->id, .input = k, .slot = k};
    return SL_OK;
}

/* Whether edge `e` between two elementwise nodes can be composed; when
 * not, why into `why`. */
static bool
edge_composable(const sl_graph *g, const struct sl__fusion *f, const struct sl__edge *e, char *why,
                size_t size)
{
    const struct sl__node *p = sl__graph_node(g, e->producer);
    const struct sl__node *c = sl__graph_node(g, e->consumer);
    if (e->reason != SL__FUSED) {
        snprintf(why, size, "not fused (the edge says why)");
        return false;
    }
    if (f->programs[p->id].expr == NULL || f->programs[c->id].expr == NULL) {
        snprintf(why, size, "%s",
                 f->programs[p->id].expr == NULL ? f->programs[p->id].why : f->programs[c->id].why);
        return false;
    }
    if (!sl_grid_equal(&p->grid, &c->grid)) {
        snprintf(why, size, "\"%s\" and \"%s\" have different chunk grids", p->name, c->name);
        return false;
    }
    for (uint32_t d = 0; d < p->grid.rank; d++) {
        if (sl__node_out_dim(c, e->input, d) != (int)d) {
            snprintf(why, size, "\"%s\" is broadcast into \"%s\"", p->name, c->name);
            return false;
        }
    }
    return true;
}

/* Compose producer `e->producer`'s program into `c`'s (`cp`) in place, or
 * leave it and say why.  ENOMEM only. */
static sl_status
compose_edge(const sl_graph *g, struct sl__fusion *f, struct sl__edge *e, struct sl__program *cp,
             struct sl_error *err)
{
    const struct sl__program *pp = &f->programs[e->producer];
    uint32_t at = 0;
    while (at < cp->n_inputs && !(cp->in[at].node == e->consumer && cp->in[at].input == e->input))
        at++;
    if (SL_NEVER(at == cp->n_inputs))
        return SL_OK;
    const uint32_t slot = cp->in[at].slot;
    sl_expr *out = NULL;
    struct sl_error ce = SL_ERROR_INIT;
    sl_status st = sl_expr_compose(cp->expr, slot, pp->expr, sl__graph_node(g, e->producer)->dtype,
                                   &g->alloc, &out, &ce);
    if (st == SL_ENOMEM)
        return sl_error_set(err, st, NULL, "%s", ce.text);
    if (st != SL_OK) {
        snprintf(e->compose_why, sizeof(e->compose_why), "%s", ce.text);
        return SL_OK;
    }
    /* The composed program's inputs: the producer's, then the consumer's
     * others renumbered; in evaluation order the producer's take the
     * place of the input they feed. */
    struct sl__program_input in[SL_EXPR_MAX_INPUTS];
    uint32_t n = 0;
    for (uint32_t k = 0; k < cp->n_inputs; k++) {
        if (k == at) {
            for (uint32_t j = 0; j < pp->n_inputs; j++)
                in[n++] = pp->in[j];
            continue;
        }
        in[n] = cp->in[k];
        in[n].slot = pp->n_inputs + cp->in[k].slot - (cp->in[k].slot > slot);
        n++;
    }
    sl_expr_free(cp->owned);
    cp->owned = out;
    cp->expr = out;
    cp->n_inputs = n;
    memcpy(cp->in, in, n * sizeof(in[0]));
    cp->n_members += pp->n_members;
    e->composed = true;
    f->composed_to[e->producer] = e->consumer;
    return SL_OK;
}

sl_status
sl__compose_plan(const sl_graph *g, struct sl__fusion *f, struct sl_error *err)
{
    const uint32_t n = g->n_nodes;
    f->programs = sl_alloc_zeroed(&f->alloc, n, sizeof(struct sl__program), 0);
    f->composed_to = sl_alloc_zeroed(&f->alloc, n, sizeof(uint32_t), 0);
    if (f->programs == NULL || f->composed_to == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory to compose %" PRIu32 " nodes", n);
    for (uint32_t i = 0; i < n; i++)
        f->composed_to[i] = UINT32_MAX;
    /* Edges are listed by consumer, inputs in order; node ids are in
     * topological order, so a producer's program is final before use. */
    uint32_t k = 0;
    for (uint32_t c = 0; c < n; c++) {
        const struct sl__node *cn = &g->nodes[c];
        const bool ew = node_is_elementwise(cn);
        if (ew)
            SL_TRY(program_form(g, cn, &f->programs[c], err));
        for (uint32_t in = 0; in < cn->n_inputs; in++, k++) {
            struct sl__edge *e = &f->edges[k];
            if (!ew || !node_is_elementwise(sl__graph_node(g, e->producer)))
                continue;
            if (edge_composable(g, f, e, e->compose_why, sizeof(e->compose_why)))
                SL_TRY(compose_edge(g, f, e, &f->programs[c], err));
        }
    }
    return SL_OK;
}

void
sl__compose_fini(struct sl__fusion *f)
{
    if (f->programs != NULL) {
        for (uint32_t i = 0; i < f->n_nodes; i++)
            sl_expr_free(f->programs[i].owned);
        sl_free(&f->alloc, f->programs, f->n_nodes * sizeof(struct sl__program));
    }
    if (f->composed_to != NULL)
        sl_free(&f->alloc, f->composed_to, f->n_nodes * sizeof(uint32_t));
    f->programs = NULL;
    f->composed_to = NULL;
}

bool
sl__compose_is_top(const struct sl__fusion *f, uint32_t id)
{
    return f->programs != NULL && f->programs[id].n_members > 1 && f->composed_to[id] == UINT32_MAX;
}

void
sl__compose_members(const sl_graph *g, const struct sl__fusion *f, uint32_t id, char *buf,
                    size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i <= id; i++) {
        uint32_t x = i;
        while (x != id && f->composed_to[x] != UINT32_MAX)
            x = f->composed_to[x];
        if (x == id)
            sl__strbuf_append(buf, size, &len, "%s%s", len > 0 ? " + " : "",
                              sl__graph_node(g, i)->name);
    }
}
