/* SPDX-License-Identifier: MIT */
/*
 * The expression evaluator: checks the views, then walks the output tile
 * by tile, loading each used input's tile into the working type, running
 * the program's instructions over the tile and storing the result by the
 * cast rules.  The per-type code is expr_eval_body.inc, included for
 * float and double.
 *
 * DESIGN: dimensions of extent 1 are dropped and neighbours contiguous in
 * every view are merged, so most blocks walk as a few long rows.  A tile
 * is up to SL__EXPR_TILE_BYTES of T from one row, or, when rows are
 * shorter than half a tile, up to SL__EXPR_SEGS whole rows.  An input
 * whose row is contiguous and already of the working type is read where
 * it lies (no copy); a row of stride 0 is loaded once and splatted; others
 * go through elementwise_convert.c's loads.  When the output row is
 * contiguous in the working type, the last instruction writes into it
 * directly.  Stack: SL_EXPR_MAX_REGS registers of SL__EXPR_TILE_BYTES
 * (32 KiB), the conversion buffer (2 KiB) and the walk and tile records
 * (about 2.5 KiB), within SL_EXPR_STACK_BYTES.
 */
#include <math.h>
#include <string.h>

#include "expr_internal.h"

/* Whole rows per tile at most, when rows are short. */
#define SL__EXPR_SEGS 16
/* Views of one evaluation: the inputs, then the output. */
#define SL__EXPR_VIEWS (SL_EXPR_MAX_INPUTS + 1)
/* Elements of the buffer a conversion through a dtype goes through. */
#define SL__EXPR_CAST_BUF 256

/* Room for SL__EXPR_CAST_BUF elements of any kernel dtype. */
union sl__expr_cast_buf {
    uint64_t u64[SL__EXPR_CAST_BUF];
    double f64[SL__EXPR_CAST_BUF];
};

/* The views of one evaluation, merged, in byte steps. */
struct expr_walk {
    uint32_t rank;                               /* merged dimensions, >= 1 */
    uint32_t n_views;                            /* used inputs, then the output */
    bool in_place;                               /* the output is also an input's view */
    uint64_t shape[SL_MAX_RANK];                 /* extents */
    ptrdiff_t step[SL__EXPR_VIEWS][SL_MAX_RANK]; /* bytes between neighbours, by view */
    const unsigned char *base[SL__EXPR_VIEWS];   /* element (0, ..., 0) of each view */
    sl_dtype dtype[SL__EXPR_VIEWS];              /* element type of each view */
    uint8_t reg[SL__EXPR_VIEWS];                 /* inputs: the register loaded */
};

/* Where the walk is: the next row and column. */
struct expr_cursor {
    uint64_t row[SL_MAX_RANK]; /* index of the current row (dimensions 0 .. rank - 2) */
    uint64_t col;              /* next column of that row */
    size_t tile;               /* elements per register */
    bool done;                 /* every element has been handed out */
};

/* One tile: n_segs pieces of seg_len elements, each at off[v][s] bytes
 * from view v's base. */
struct expr_tile {
    size_t n;                                     /* elements: n_segs * seg_len */
    uint32_t n_segs;                              /* 1 .. SL__EXPR_SEGS */
    size_t seg_len;                               /* elements per piece */
    ptrdiff_t off[SL__EXPR_VIEWS][SL__EXPR_SEGS]; /* byte offset of each piece, by view */
};

static void
expr_cursor_init(struct expr_cursor *c, const struct expr_walk *w, size_t tile)
{
    memset(c->row, 0, sizeof c->row);
    c->col = 0;
    c->tile = tile;
    c->done = false;
    (void)w;
}

/* Byte offsets of the cursor's row, column `col`, in every view. */
static void
expr_row_offsets(const struct expr_cursor *c, const struct expr_walk *w, uint64_t col,
                 struct expr_tile *t, uint32_t seg)
{
    const uint32_t last = w->rank - 1;
    for (uint32_t v = 0; v < w->n_views; v++) {
        ptrdiff_t off = (ptrdiff_t)col * w->step[v][last];
        for (uint32_t d = 0; d < last; d++)
            off += (ptrdiff_t)c->row[d] * w->step[v][d];
        t->off[v][seg] = off;
    }
}

/* The next tile into *t; false when the walk is done. */
static bool
expr_tile_next(struct expr_cursor *c, const struct expr_walk *w, struct expr_tile *t)
{
    const uint32_t last = w->rank - 1;
    const uint64_t n_row = w->shape[last];
    if (c->done)
        return false;
    if (2 * n_row <= c->tile) {
        const uint64_t k = c->tile / n_row < SL__EXPR_SEGS ? c->tile / n_row : SL__EXPR_SEGS;
        t->n_segs = 0;
        while (t->n_segs < k && !c->done) {
            expr_row_offsets(c, w, 0, t, t->n_segs++);
            c->done = !sl__index_next(c->row, w->shape, last);
        }
        t->seg_len = (size_t)n_row;
    } else {
        const uint64_t m = n_row - c->col < c->tile ? n_row - c->col : c->tile;
        expr_row_offsets(c, w, c->col, t, 0);
        t->n_segs = 1;
        t->seg_len = (size_t)m;
        c->col += m;
        if (c->col == n_row) {
            c->col = 0;
            c->done = !sl__index_next(c->row, w->shape, last);
        }
    }
    t->n = t->n_segs * t->seg_len;
    return true;
}

/* The per-type evaluators. */
#define T float
#define SFX f32
#define KIND SL__EW_F32
#define SL__EXPR_DTYPE_T SL_DTYPE_F32
#define TILE (SL__EXPR_TILE_BYTES / sizeof(float))
#define M(fn) fn##f
#include "expr_eval_body.inc"
#undef T
#undef SFX
#undef KIND
#undef SL__EXPR_DTYPE_T
#undef TILE
#undef M

#define T double
#define SFX f64
#define KIND SL__EW_F64
#define SL__EXPR_DTYPE_T SL_DTYPE_F64
#define TILE (SL__EXPR_TILE_BYTES / sizeof(double))
#define M(fn) fn
#include "expr_eval_body.inc"
#undef T
#undef SFX
#undef KIND
#undef SL__EXPR_DTYPE_T
#undef TILE
#undef M

double
sl__expr_eval_one(sl_dtype compute, const struct sl__expr_ins *ins, const double *args)
{
    if (compute == SL_DTYPE_F32)
        return expr_eval_one_f32(ins, args);
    return expr_eval_one_f64(ins, args);
}

/* ---- views -------------------------------------------------------------------------- */

/* True when the views address the same elements in the same bytes. */
static bool
expr_same_view(const struct sl_view *a, const struct sl_view *b)
{
    if (a->data != b->data || sl_dtype_size(a->dtype) != sl_dtype_size(b->dtype))
        return false;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->shape[d] > 1 && a->stride[d] != b->stride[d])
            return false;
    return true;
}

/* Input i's view against the program and the output. */
static sl_status
expr_check_input(const sl_expr *e, size_t i, const struct sl_view *in, const struct sl_view *out,
                 struct sl_error *err)
{
    const char *name = e->name[i];
    if (in->dtype != e->in_dtype[i])
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr: input %zu (\"%s\") is %s, but the program was compiled for %s",
                            i, name, sl_dtype_name(in->dtype), sl_dtype_name(e->in_dtype[i]));
    if (in->rank != out->rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr: input %zu (\"%s\") has rank %u, the output rank %u", i, name,
                            in->rank, out->rank);
    for (uint32_t d = 0; d < out->rank; d++)
        if (in->shape[d] != out->shape[d])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "expr: input %zu (\"%s\") has extent %llu in dimension %u, the "
                                "output %llu",
                                i, name, (unsigned long long)in->shape[d], d,
                                (unsigned long long)out->shape[d]);
    struct sl_error local = SL_ERROR_INIT;
    const sl_status st = sl_view_check(in, &local);
    if (st != SL_OK)
        return sl_error_set(err, st, NULL, "expr: input %zu (\"%s\"): %s", i, name, local.text);
    return SL_OK;
}

/* Every check of sl_expr_eval; *in_place when the output is an input's view. */
static sl_status
expr_check(const sl_expr *e, const struct sl_view *inputs, const struct sl_view *out,
           bool *in_place, struct sl_error *err)
{
    if (e == NULL || out == NULL || (e->n_inputs > 0 && inputs == NULL))
        return sl_error_set(err, SL_EINVAL, NULL, "expr: NULL %s",
                            e == NULL     ? "program"
                            : out == NULL ? "output"
                                          : "inputs");
    SL_TRY(sl_view_check(out, err));
    SL_TRY(sl__ops_check_kernel_dtype("expr output", out->dtype, err));
    *in_place = false;
    for (size_t i = 0; i < e->n_inputs; i++) {
        if (!(e->used & (1u << i)))
            continue;
        SL_TRY(expr_check_input(e, i, &inputs[i], out, err));
        if (sl__view_is_empty(out))
            continue;
        if (expr_same_view(&inputs[i], out))
            *in_place = true;
        else if (sl__view_overlap(&inputs[i], out))
            return sl_error_set(err, SL_EINVAL, NULL,
                                "expr: the output overlaps input %zu (\"%s\") without being "
                                "the same view",
                                i, e->name[i]);
    }
    return SL_OK;
}

/* True when dimension d chains onto the walk's last dimension in every view. */
static bool
expr_walk_chains(const struct expr_walk *w, const ptrdiff_t *step, uint64_t n)
{
    const uint32_t k = w->rank - 1;
    for (uint32_t v = 0; v < w->n_views; v++)
        if (!sl__ops_steps_chain(w->step[v][k], step[v], n))
            return false;
    return true;
}

/* The views of an evaluation as one walk: extent-1 dimensions dropped,
 * neighbours contiguous in every view merged. */
static void
expr_walk_init(struct expr_walk *w, const sl_expr *e, const struct sl_view *inputs,
               const struct sl_view *out)
{
    const struct sl_view *views[SL__EXPR_VIEWS];
    w->n_views = 0;
    for (uint32_t i = 0; i < e->n_inputs; i++) {
        if (!(e->used & (1u << i)))
            continue;
        w->reg[w->n_views] = e->input_reg[i];
        views[w->n_views++] = &inputs[i];
    }
    views[w->n_views++] = out;
    for (uint32_t v = 0; v < w->n_views; v++) {
        w->base[v] = views[v]->data;
        w->dtype[v] = views[v]->dtype;
    }
    w->rank = 0;
    for (uint32_t d = 0; d < out->rank; d++) {
        if (out->shape[d] == 1)
            continue;
        ptrdiff_t step[SL__EXPR_VIEWS];
        for (uint32_t v = 0; v < w->n_views; v++)
            step[v] = (ptrdiff_t)views[v]->stride[d] * (ptrdiff_t)sl_dtype_size(w->dtype[v]);
        const bool merge = w->rank > 0 && expr_walk_chains(w, step, out->shape[d]);
        const uint32_t k = merge ? w->rank - 1 : w->rank++;
        w->shape[k] = merge ? w->shape[k] * out->shape[d] : out->shape[d];
        for (uint32_t v = 0; v < w->n_views; v++)
            w->step[v][k] = step[v];
    }
    if (w->rank == 0) {
        w->rank = 1;
        w->shape[0] = 1;
        for (uint32_t v = 0; v < w->n_views; v++)
            w->step[v][0] = 0;
    }
}

sl_status
sl_expr_eval(const sl_expr *e, const struct sl_view *inputs, struct sl_view *out,
             struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    bool in_place = false;
    SL_TRY(expr_check(e, inputs, out, &in_place, err));
    if (sl__view_is_empty(out))
        return SL_OK;
    struct expr_walk w;
    expr_walk_init(&w, e, inputs, out);
    w.in_place = in_place;
    if (e->compute == SL_DTYPE_F32)
        expr_run_f32(e, &w);
    else
        expr_run_f64(e, &w);
    return SL_OK;
}
