/* SPDX-License-Identifier: MIT */
/*
 * Evaluating chunks: a task computes each of its output chunks by walking
 * the stage's fused tree from the root down, reading whole stored chunks at
 * the leaves, viewing or assembling input regions, running kernels and user
 * functions, and finally handing the chunk to its put, or publishing it as
 * an intermediate chunk for other stages.
 *
 * DESIGN: evaluation is a recursion over the fused tree, one output chunk at
 * a time.  Each node's result either owns a buffer from the pool's
 * NUMA-local caches (freed by its consumer as soon as it is used), views a
 * buffer owned further down, or views an intermediate chunk of another
 * stage (released, by refcount, once used).  A failure anywhere stops the
 * chunk with the first error; a failed input chunk of another stage makes
 * the chunk fail as upstream without running anything of it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sluice/array_io.h>
#include <sluice/checked.h>
#include <sluice/expr.h>
#include <sluice/graph_node.h>
#include <sluice/op_registry.h>
#include <sluice/plan.h>
#include <sluice/task.h>

#include "core_internal.h"
#include "exec_internal.h"
#include "exec_steps_internal.h"

/* What evaluating a node produced. */
struct eval_out {
    struct sl_block block;   /* the result (or the part asked for) */
    void *buf;               /* buffer owned by this result, freed after use; NULL if a view */
    size_t buf_bytes;        /* its size */
    struct sl__entry *entry; /* intermediate chunk this result views; released after use */
};

/* One output chunk's evaluation. */
struct eval {
    struct sl__exec *ex;       /* the run */
    struct sl__exec_worker *w; /* this worker's scratch */
    sl_status code;            /* first failure, or SL_OK */
    struct sl_error err;       /* its message */
    struct sl__put_state *put; /* the put whose chunk this is (counts its retries); NULL
                                  for an intermediate chunk */
};

static sl_status eval_node(struct eval *ev, uint32_t id, const uint64_t *coords,
                           struct eval_out *out);

/* Record the chunk's failure (the first wins) and return `code`. */
static sl_status eval_fail(struct eval *ev, sl_status code, const char *fmt, ...) SL_PRINTF(3, 4);

static sl_status
eval_fail(struct eval *ev, sl_status code, const char *fmt, ...)
{
    if (ev->code != SL_OK)
        return code;
    ev->code = code;
    va_list ap;
    va_start(ap, fmt);
    sl_error_clear(&ev->err);
    sl_error_setv(&ev->err, code, NULL, fmt, ap);
    va_end(ap);
    return code;
}

/* Drop one read of intermediate chunk `e`; the last read frees it. */
static void
entry_release(struct sl__exec *ex, struct sl__entry *e)
{
    void *buf = NULL;
    size_t bytes = 0;
    pthread_mutex_lock(&ex->inter.lock);
    if (SL_ALWAYS(e->refs_left > 0) && --e->refs_left == 0) {
        buf = e->buf;
        bytes = e->buf_bytes;
        sl__inter_remove_locked(&ex->inter, e);
    }
    pthread_mutex_unlock(&ex->inter.lock);
    if (buf != NULL) {
        sl_pool_buf_free(ex->pool, buf, bytes);
        sl__exec_release(ex, bytes);
    }
}

/* Free whatever `o` holds. */
static void
out_release(struct sl__exec *ex, struct eval_out *o)
{
    if (o->buf != NULL)
        sl_pool_buf_free(ex->pool, o->buf, o->buf_bytes);
    if (o->entry != NULL)
        entry_release(ex, o->entry);
    o->buf = NULL;
    o->entry = NULL;
}

/* `*dst = *src`, copying only the dimensions in use (a whole region is
 * 264 bytes, copied per chunk). */
static void
region_assign(struct sl_region *dst, const struct sl_region *src)
{
    dst->rank = src->rank;
    memcpy(dst->start, src->start, src->rank * sizeof(uint64_t));
    memcpy(dst->stop, src->stop, src->rank * sizeof(uint64_t));
}

/* Allocate a C-order block of `dtype` covering `region` into `o`. */
static sl_status
out_alloc(struct eval *ev, sl_dtype dtype, const struct sl_region *region, const uint64_t *coords,
          struct eval_out *o)
{
    uint64_t shape[SL_MAX_RANK];
    sl_region_shape(region, shape);
    size_t bytes;
    struct sl_error err;
    sl_error_clear(&err);
    if (sl_shape_bytes(region->rank, shape, sl_dtype_size(dtype), &bytes, &err) != SL_OK)
        return eval_fail(ev, err.code, "%s", err.text);
    o->entry = NULL;
    /* One element at least, so even empty blocks have an address. */
    o->buf_bytes = bytes > 0 ? bytes : sl_dtype_size(dtype);
    o->buf = sl_pool_buf_alloc(ev->ex->pool, o->buf_bytes);
    if (o->buf == NULL)
        return eval_fail(ev, SL_ENOMEM, "no memory for a chunk buffer of %zu bytes", bytes);
    if (sl_block_init(&o->block, dtype, region->rank, shape, o->buf, region, &err) != SL_OK) {
        out_release(ev->ex, o);
        return eval_fail(ev, err.code, "%s", err.text);
    }
    o->block.chunk.rank = region->rank;
    memcpy(o->block.chunk.idx, coords, region->rank * sizeof(uint64_t));
    return SL_OK;
}

/* Format chunk coordinates of node `n` for messages. */
static void
coords_text(const struct sl__node *n, const uint64_t *coords, char *buf, size_t size)
{
    struct sl_chunk_key key = sl_chunk_key_make(n->grid.rank, coords);
    sl_chunk_key_format(&key, buf, size);
}

/*
 * Record that node `n` failed on its chunk `coords` with `code`: "<op>
 * \"name\" chunk (i, j) [at <source>]: [<cause>: ]<text>", where `cause`
 * is the underlying status when it differs from `code` (a function's
 * failure recorded as SL_EFUNC).  @return `code`.
 */
static sl_status
eval_fail_node(struct eval *ev, const struct sl__node *n, const uint64_t *coords, sl_status code,
               sl_status cause, const struct sl_error *err)
{
    char key[96];
    coords_text(n, coords, key, sizeof(key));
    bool source = err->source[0] != '\0';
    return eval_fail(ev, code, "%s \"%s\" chunk %s%s%s: %s%s%s", n->op_name, n->name, key,
                     source ? " at " : "", err->source, cause != code ? sl_status_name(cause) : "",
                     cause != code ? ": " : "",
                     err->text[0] != '\0' ? err->text : sl_status_message(cause));
}

/* An intermediate chunk's view of `rin` into `o`, or its failure. */
static sl_status
input_from_entry(struct eval *ev, const struct sl__node *p, struct sl__entry *e,
                 const struct sl_region *rin, struct eval_out *o)
{
    if (e->state != SL__ENTRY_READY) {
        uint64_t coords[SL_MAX_RANK];
        char key[96];
        sl_grid_coords_of(&p->grid, e->linear, coords);
        coords_text(p, coords, key, sizeof(key));
        /* The entry's message already names its node and chunk. */
        eval_fail(ev, SL_EUPSTREAM, "upstream %s: %s", sl_status_name(e->code),
                  e->text[0] != '\0' ? e->text : key);
        entry_release(ev->ex, e);
        return SL_EUPSTREAM;
    }
    o->buf = NULL;
    o->entry = NULL;
    struct sl_error err;
    sl_error_clear(&err);
    if (sl_block_slice(&e->block, rin, &o->block, &err) != SL_OK) {
        entry_release(ev->ex, e);
        return eval_fail(ev, err.code, "%s", err.text);
    }
    o->entry = e;
    return SL_OK;
}

/* Look up the entry of chunk `coords` of stage root `p` (done before this task ran). */
static struct sl__entry *
entry_find(struct eval *ev, const struct sl__node *p, const uint64_t *coords)
{
    struct sl__exec *ex = ev->ex;
    uint32_t stage = ex->fusion->stage_of[p->id];
    uint64_t linear = sl_grid_linear_index(&p->grid, coords);
    pthread_mutex_lock(&ex->inter.lock);
    struct sl__entry *e = sl__inter_find_locked(&ex->inter, stage, linear);
    pthread_mutex_unlock(&ex->inter.lock);
    if (e == NULL)
        eval_fail(ev, SL_ESTATE, "intermediate chunk %" PRIu64 " of \"%s\" is missing", linear,
                  p->name);
    return e;
}

/* Copy every intermediate chunk meeting `rin` into one new block. */
static sl_status
input_assemble(struct eval *ev, const struct sl__node *p, const struct sl_region *rin,
               struct eval_out *o)
{
    SL_TRY(out_alloc(ev, p->dtype, rin, (const uint64_t[SL_MAX_RANK]){0}, o));
    o->block.chunk.rank = 0;
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, &p->grid, rin);
    while (sl_grid_iter_next(&it)) {
        struct sl__entry *e = entry_find(ev, p, it.coords);
        struct eval_out part;
        if (e == NULL || input_from_entry(ev, p, e, &it.part, &part) != SL_OK)
            break;
        struct sl_block dst;
        struct sl_error err;
        sl_error_clear(&err);
        sl_status st = sl_block_slice(&o->block, &it.part, &dst, &err);
        if (st == SL_OK)
            st = sl_view_copy(&dst.view, &part.block.view, &err);
        out_release(ev->ex, &part);
        if (st != SL_OK) {
            eval_fail(ev, st, "%s", err.text);
            break;
        }
    }
    if (ev->code != SL_OK) {
        /* Release the reads of the chunks not reached. */
        while (sl_grid_iter_next(&it)) {
            struct sl__entry *e = entry_find(ev, p, it.coords);
            if (e != NULL)
                entry_release(ev->ex, e);
        }
        out_release(ev->ex, o);
        return ev->code;
    }
    return SL_OK;
}

/* The region `rin` of input `i` of node `n`, evaluated or read from another stage. */
static sl_status
eval_input(struct eval *ev, const struct sl__node *n, uint32_t i, const struct sl_region *rin,
           struct eval_out *o)
{
    const struct sl__fusion *f = ev->ex->fusion;
    const struct sl__node *p = sl__graph_node(ev->ex->graph, n->inputs[i]);
    o->buf = NULL;
    o->entry = NULL;
    if (sl_region_is_empty(rin)) {
        /* An output chunk past the input's extent reads nothing. */
        memset(&o->block, 0, sizeof(o->block));
        o->block.view.dtype = p->dtype;
        o->block.view.rank = rin->rank;
        o->block.region = *rin;
        for (uint32_t d = 0; d < rin->rank; d++)
            o->block.view.shape[d] = rin->stop[d] - rin->start[d];
        return SL_OK;
    }
    uint64_t coords[SL_MAX_RANK];
    if (f->fused_to[p->id] == n->id) {
        /* Fused: exactly one producer chunk holds the region. */
        for (uint32_t d = 0; d < rin->rank; d++)
            coords[d] = sl_grid_chunk_at(&p->grid, d, rin->start[d]);
        sl_status st = eval_node(ev, p->id, coords, o);
        if (st != SL_OK) {
            o->buf = NULL; /* released by the failing node */
            o->entry = NULL;
            return st;
        }
        if (sl_region_equal(&o->block.region, rin))
            return SL_OK;
        struct sl_error err;
        sl_error_clear(&err);
        if (sl_block_slice(&o->block, rin, &o->block, &err) != SL_OK) {
            out_release(ev->ex, o);
            return eval_fail(ev, err.code, "%s", err.text);
        }
        return SL_OK;
    }
    struct sl_region range;
    sl_grid_chunks_meeting(&p->grid, rin, &range);
    uint64_t n_chunks = 1;
    for (uint32_t d = 0; d < rin->rank; d++)
        n_chunks *= range.stop[d] - range.start[d];
    if (n_chunks > 1)
        return input_assemble(ev, p, rin, o);
    struct sl__entry *e = entry_find(ev, p, range.start);
    if (e == NULL)
        return ev->code;
    return input_from_entry(ev, p, e, rin, o);
}

/* A getter's chunk. */
static sl_status
eval_getter(struct eval *ev, const struct sl__node *n, const struct sl_region *r,
            const uint64_t *coords, struct eval_out *out)
{
    SL_TRY(out_alloc(ev, n->dtype, r, coords, out));
    struct sl_error err;
    sl_error_clear(&err);
    sl_status st = n->u.getter.fn(n->u.getter.ctx, n->u.getter.array_name, r, &out->block, &err);
    if (st == SL_EABSENT) {
        /* As a get node's absent stored chunk: the fill value, or a failure. */
        sl_error_clear(&err);
        if (ev->ex->plan->opts.missing_is_error) {
            char key[96];
            coords_text(n, coords, key, sizeof(key));
            st = sl_error_set(&err, SL_ENOTFOUND, NULL, "chunk %s of getter \"%s\" is absent", key,
                              n->u.getter.array_name);
        } else {
            st = sl_view_fill(&out->block.view, n->u.getter.fill, &err);
        }
    }
    if (st == SL_OK)
        return SL_OK;
    out_release(ev->ex, out);
    return eval_fail_node(ev, n, coords, st, st, &err);
}

/* The region of a whole (unclipped) chunk of `a` at `coords`. */
static void
array_full_chunk(const sl_array *a, const uint64_t *coords, struct sl_region *r)
{
    const uint64_t *cs = sl_array_chunk_shape(a);
    r->rank = sl_array_rank(a);
    for (uint32_t d = 0; d < r->rank; d++) {
        r->start[d] = coords[d] * cs[d];
        r->stop[d] = r->start[d] + cs[d];
    }
}

/*
 * The put of this plan that writes the array get `n` reads (it ran in an
 * earlier phase), or NULL.  Puts are few, so a scan per chunk costs little.
 */
static const struct sl__put_state *
get_writer(const struct sl__exec *ex, const struct sl__node *n)
{
    const sl_plan *plan = ex->plan;
    for (uint32_t i = 0; i < plan->n_puts; i++) {
        const struct sl__node *w = sl__graph_node(ex->graph, plan->puts[i].node);
        if (w->kind == SL_NODE_PUT && sl__array_same(w->u.io.array, n->u.io.array))
            return &plan->puts[i];
    }
    return NULL;
}

/*
 * A chunk that a put of this run failed to write is not read back as
 * whatever storage holds (the fill value, or stale data): the get fails as
 * upstream of that failure.  The put's phase ended before this one began,
 * so its status byte is final.
 */
static sl_status
get_check_writer(struct eval *ev, const struct sl__node *n, const struct sl__put_state *ps,
                 const uint64_t *coords)
{
    uint8_t code = sl__put_state_code(ps, sl_grid_linear_index(&n->grid, coords));
    if (code == SL_OK)
        return SL_OK;
    char key[96];
    coords_text(n, coords, key, sizeof(key));
    const struct sl__node *w = sl__graph_node(ev->ex->graph, ps->node);
    return eval_fail(ev, SL_EUPSTREAM, "upstream %s: put \"%s\" did not write chunk %s of %s",
                     code == SL__CODE_PENDING ? "pending" : sl_status_name((sl_status)code),
                     w->name, key, sl__array_name(n->u.io.array, &(struct sl__array_name){0}));
}

/* A stored chunk: decoded whole, then clipped at the array's edge. */
static sl_status
eval_get(struct eval *ev, const struct sl__node *n, const struct sl_region *r,
         const uint64_t *coords, struct eval_out *out)
{
    sl_array *a = n->u.io.array;
    const struct sl__put_state *writer = get_writer(ev->ex, n);
    if (writer != NULL)
        SL_TRY(get_check_writer(ev, n, writer, coords));
    struct sl_region full;
    array_full_chunk(a, coords, &full);
    SL_TRY(out_alloc(ev, n->dtype, &full, coords, out));
    bool missing = false;
    struct sl_error err;
    sl_error_clear(&err);
    sl_status st =
        sl_array_read_chunk(a, coords, out->buf, out->buf_bytes, ev->w->codec, &missing, &err);
    /* A read that failed transiently is tried again (sl_plan_opts.retries):
     * a read has no effect to undo, and the buffer is written whole. */
    const struct sl_plan_opts *po = &ev->ex->plan->opts;
    for (uint32_t retry = 1; sl_status_transient(st) && retry <= po->retries; retry++) {
        if (sl__exec_is_canceled(ev->ex))
            break;
        sl__retry_sleep(retry, po->retry_backoff_s, SL__RETRY_CAP_S);
        atomic_fetch_add_explicit(&ev->ex->n_retries, 1, memory_order_relaxed);
        if (ev->put != NULL)
            atomic_fetch_add_explicit(&ev->put->n_retries, 1, memory_order_relaxed);
        missing = false;
        sl_error_clear(&err);
        st = sl_array_read_chunk(a, coords, out->buf, out->buf_bytes, ev->w->codec, &missing, &err);
    }
    char key[96];
    /* A chunk this run wrote may be absent because it equals the fill value. */
    if (st == SL_OK && missing && writer == NULL && ev->ex->plan->opts.missing_is_error) {
        coords_text(n, coords, key, sizeof(key));
        st = sl_error_set(&err, SL_ENOTFOUND, NULL, "chunk %s of array %s is absent", key,
                          sl__array_name(a, &(struct sl__array_name){0}));
    }
    if (st == SL_OK && !sl_region_equal(&full, r))
        st = sl_block_slice(&out->block, r, &out->block, &err);
    if (st == SL_OK)
        return SL_OK;
    out_release(ev->ex, out);
    return eval_fail_node(ev, n, coords, st, st, &err);
}

/*
 * A put's chunk: its input, written as a whole stored chunk (edge chunks
 * padded with the fill value).  An interior chunk that is already one
 * contiguous block is written from where it lies.
 */
static sl_status
eval_put(struct eval *ev, const struct sl__node *n, const struct sl_region *r,
         const uint64_t *coords, struct eval_out *out)
{
    sl_array *a = n->u.io.array;
    struct sl_region rin;
    sl__node_input_region(ev->ex->graph, n, 0, r, &rin);
    SL_TRY(eval_input(ev, n, 0, &rin, out));
    struct sl_region full;
    array_full_chunk(a, coords, &full);
    struct sl_error err;
    sl_error_clear(&err);
    sl_status st = SL_OK;
    const void *data = out->block.view.data;
    struct eval_out whole = {.buf = NULL, .entry = NULL};
    if (!sl_region_equal(&full, r) || !sl_view_is_contiguous(&out->block.view)) {
        st = out_alloc(ev, n->dtype, &full, coords, &whole);
        struct sl_block part;
        if (st == SL_OK && !sl_region_equal(&full, r))
            st = sl_view_fill(&whole.block.view, sl_array_fill_value(a), &err);
        if (st == SL_OK)
            st = sl_block_slice(&whole.block, r, &part, &err);
        if (st == SL_OK)
            st = sl_view_copy(&part.view, &out->block.view, &err);
        data = whole.buf;
    }
    /* Staged in the put's transaction: the shard is written once, when all
     * its chunks are staged (or at the end of the phase). */
    if (st == SL_OK)
        st = sl_txn_write_chunk(sl__exec_put_txn(ev->ex, n->id), coords, data,
                                sl_array_chunk_bytes(a), ev->w->codec, &err);
    out_release(ev->ex, &whole);
    if (st == SL_OK)
        return SL_OK;
    out_release(ev->ex, out);
    return eval_fail_node(ev, n, coords, st, st, &err);
}

/*
 * Input `i` of node `n` (block view `in`) seen with the shape of output
 * view `o`: stride 0 along the dimensions it does not follow (numpy's
 * broadcasting; an input's dimensions that follow none have extent 1).
 */
static void
broadcast_view(const struct sl__node *n, uint32_t i, const struct sl_view *in,
               const struct sl_view *o, struct sl_view *v)
{
    *v = (struct sl_view){.dtype = in->dtype, .rank = o->rank, .data = in->data};
    memcpy(v->shape, o->shape, o->rank * sizeof(uint64_t));
    for (uint32_t d = 0; d < in->rank; d++) {
        int od = sl__node_out_dim(n, i, d);
        if (od != SL__AXIS_WHOLE)
            v->stride[od] = in->stride[d];
    }
}

/* Evaluate expr node `n` into `out` from its input blocks. */
static sl_status
eval_expr(const struct sl__node *n, const struct sl_block *blocks, struct sl_block *out,
          struct sl_error *err)
{
    struct sl_view views[SL_MAP_MAX_INPUTS];
    for (uint32_t i = 0; i < n->n_inputs; i++)
        broadcast_view(n, i, &blocks[i].view, &out->view, &views[i]);
    return sl_expr_eval(n->expr, views, &out->view, err);
}

/*
 * The chunk of the top `n` of a composed chain (graph/compose.c): every
 * input of the chain read as the member owning it would read it, in the
 * order the members would read them (so a failed input chunk fails the
 * same chunks with the same message), then the one program over them.
 * The members' own chunks are never made.
 */
static sl_status
eval_composed(struct eval *ev, const struct sl__node *n, const struct sl__program *p,
              const struct sl_region *r, const uint64_t *coords, struct eval_out *out)
{
    const sl_graph *g = ev->ex->graph;
    struct eval_out ins[SL_EXPR_MAX_INPUTS];
    uint32_t got = 0;
    for (; got < p->n_inputs; got++) {
        const struct sl__node *m = sl__graph_node(g, p->in[got].node);
        struct sl_region rin;
        /* Members share the top's grid: chunk `coords` is the same region in each. */
        sl__node_input_region(g, m, p->in[got].input, r, &rin);
        if (eval_input(ev, m, p->in[got].input, &rin, &ins[got]) != SL_OK)
            break;
    }
    sl_status st = ev->code;
    if (st == SL_OK)
        st = out_alloc(ev, n->dtype, r, coords, out);
    if (st == SL_OK) {
        struct sl_view views[SL_EXPR_MAX_INPUTS];
        for (uint32_t k = 0; k < p->n_inputs; k++)
            broadcast_view(sl__graph_node(g, p->in[k].node), p->in[k].input, &ins[k].block.view,
                           &out->block.view, &views[p->in[k].slot]);
        struct sl_error err;
        sl_error_clear(&err);
        st = sl_expr_eval(p->expr, views, &out->block.view, &err);
        if (st != SL_OK) {
            st = eval_fail_node(ev, n, coords, SL_EFUNC, st, &err);
            out_release(ev->ex, out);
        }
    }
    for (uint32_t i = 0; i < got; i++)
        out_release(ev->ex, &ins[i]);
    return st;
}

/*
 * The keepdims form of reduction result block `out`: the input's rank,
 * extent 1 along the reduced dimensions (in_axis WHOLE), the result's
 * dimensions elsewhere.
 */
static void
reduce_out_view(const struct sl__node *n, const struct sl_view *out, struct sl_view *v)
{
    *v = (struct sl_view){.dtype = out->dtype, .rank = n->red.rank, .data = out->data};
    for (uint32_t d = 0; d < n->red.rank; d++) {
        int od = sl__node_out_dim(n, 0, d);
        v->shape[d] = od == SL__AXIS_WHOLE ? 1 : out->shape[od];
        v->stride[d] = od == SL__AXIS_WHOLE ? 0 : out->stride[od];
    }
}

/* Run step n->red_step of a reduction from input block `in` into `out`. */
static sl_status
eval_reduce(const struct sl__node *n, const struct sl_block *in, struct sl_block *out,
            struct sl_error *err)
{
    const struct sl_reduce_params *p = &n->red;
    struct sl_view v;
    switch (n->red_step) {
    case SL__REDUCE_DIRECT:
        reduce_out_view(n, &out->view, &v);
        return sl_reduce_block(p, &in->view, &v, err);
    case SL__REDUCE_PARTIAL:
        SL_TRY(sl_reduce_state_init(p, &out->view, err));
        return sl_reduce_state_add(p, &in->view, &out->view, err);
    case SL__REDUCE_COMBINE:
        return sl_reduce_state_merge(p, &in->view, &out->view, err);
    case SL__REDUCE_FINISH:
        reduce_out_view(n, &out->view, &v);
        return sl_reduce_state_finish(p, &in->view, &v, err);
    case SL__REDUCE_NONE:
        break;
    }
    return sl_error_set(err, SL_ESTATE, NULL, "node \"%s\" is no reduction", n->name);
}

/* A map's chunk: the same chunk of each input, then the function or op. */
static sl_status
eval_map(struct eval *ev, const struct sl__node *n, const struct sl_region *r,
         const uint64_t *coords, struct eval_out *out)
{
    if (sl__compose_is_top(ev->ex->fusion, n->id))
        return eval_composed(ev, n, &ev->ex->fusion->programs[n->id], r, coords, out);
    struct eval_out ins[SL_MAP_MAX_INPUTS];
    struct sl_block blocks[SL_MAP_MAX_INPUTS];
    /* sl_graph_add_map refused more. */
    if (SL_NEVER(n->n_inputs > SL_ARRAY_LEN(ins)))
        return eval_fail(ev, SL_EUNSUPPORTED, "map \"%s\" has %" PRIu32 " inputs; at most %zu",
                         n->name, n->n_inputs, SL_ARRAY_LEN(ins));
    uint32_t got = 0;
    for (; got < n->n_inputs; got++) {
        struct sl_region rin;
        sl__node_input_region(ev->ex->graph, n, got, r, &rin);
        if (eval_input(ev, n, got, &rin, &ins[got]) != SL_OK)
            break;
        blocks[got] = ins[got].block;
    }
    sl_status st = ev->code;
    if (st == SL_OK)
        st = out_alloc(ev, n->dtype, r, coords, out);
    if (st == SL_OK) {
        struct sl_error err;
        sl_error_clear(&err);
        if (n->expr != NULL)
            st = eval_expr(n, blocks, &out->block, &err);
        else if (n->red_step != SL__REDUCE_NONE)
            st = eval_reduce(n, &blocks[0], &out->block, &err);
        else if (n->has_op)
            st = sl_op_apply(&n->op, &blocks[0].view, &out->block.view, ev->w->scratch,
                             ev->w->scratch_bytes, &err);
        else
            st = n->u.map.fn(n->u.map.ctx, &out->block, n->n_inputs, blocks, &err);
        if (st != SL_OK) {
            st = eval_fail_node(ev, n, coords, SL_EFUNC, st, &err);
            out_release(ev->ex, out);
        }
    }
    for (uint32_t i = 0; i < got; i++)
        out_release(ev->ex, &ins[i]);
    return st;
}

/*
 * A downsample whose input chunks align with its factors, from another
 * stage's chunks: each input chunk's part is reduced straight into its part
 * of the output, with no assembled copy of the input region.
 */
static sl_status
eval_regrid_piecewise(struct eval *ev, const struct sl__node *n, const struct sl__node *p,
                      const struct sl_region *rin, struct eval_out *out)
{
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, &p->grid, rin);
    while (sl_grid_iter_next(&it)) {
        struct sl__entry *e = entry_find(ev, p, it.coords);
        struct eval_out part;
        if (e == NULL || input_from_entry(ev, p, e, &it.part, &part) != SL_OK)
            break;
        struct sl_region sub = {.rank = it.part.rank};
        for (uint32_t d = 0; d < sub.rank; d++) {
            uint64_t f = n->op.u.downsample.factor[d];
            sub.start[d] = it.part.start[d] / f;
            sub.stop[d] = (it.part.stop[d] + f - 1) / f;
        }
        struct sl_block dst;
        struct sl_error err;
        sl_error_clear(&err);
        sl_status st = sl_block_slice(&out->block, &sub, &dst, &err);
        if (st == SL_OK)
            st = sl_op_apply(&n->op, &part.block.view, &dst.view, ev->w->scratch,
                             ev->w->scratch_bytes, &err);
        out_release(ev->ex, &part);
        if (st != SL_OK) {
            eval_fail(ev, SL_EFUNC, "%s \"%s\": %s: %s", n->op_name, n->name, sl_status_name(st),
                      err.text);
            break;
        }
    }
    if (ev->code == SL_OK)
        return SL_OK;
    while (sl_grid_iter_next(&it)) {
        struct sl__entry *e = entry_find(ev, p, it.coords);
        if (e != NULL)
            entry_release(ev->ex, e);
    }
    out_release(ev->ex, out);
    return ev->code;
}

/* A regrid's chunk: the mapped input region, then the function or op. */
static sl_status
eval_regrid(struct eval *ev, const struct sl__node *n, const struct sl_region *r,
            const uint64_t *coords, struct eval_out *out)
{
    struct sl_region rin;
    sl__node_input_region(ev->ex->graph, n, 0, r, &rin);
    const struct sl__node *p = sl__graph_node(ev->ex->graph, n->inputs[0]);
    if (n->op_piecewise && ev->ex->fusion->fused_to[p->id] != n->id && !sl_region_is_empty(&rin)) {
        SL_TRY(out_alloc(ev, n->dtype, r, coords, out));
        return eval_regrid_piecewise(ev, n, p, &rin, out);
    }
    if (n->rechunk && !sl_region_is_empty(&rin)) {
        /* The input region is the output region: the block evaluated (a
         * view of one stored chunk, or the copy that assembled several)
         * is the chunk, relabelled; the consumer copies it if it must. */
        SL_TRY(eval_input(ev, n, 0, &rin, out));
        out->block.chunk.rank = r->rank;
        memcpy(out->block.chunk.idx, coords, r->rank * sizeof(uint64_t));
        return SL_OK;
    }
    struct eval_out in;
    SL_TRY(eval_input(ev, n, 0, &rin, &in));
    sl_status st = out_alloc(ev, n->dtype, r, coords, out);
    if (st == SL_OK) {
        struct sl_error err;
        sl_error_clear(&err);
        if (n->has_op && n->op.desc->kind == SL_OP_KIND_HALO)
            st = sl_op_apply_at(&n->op, p->grid.shape, &in.block.view, rin.start, &out->block.view,
                                r->start, ev->w->scratch, ev->w->scratch_bytes, &err);
        else if (n->has_op)
            st = sl_op_apply(&n->op, &in.block.view, &out->block.view, ev->w->scratch,
                             ev->w->scratch_bytes, &err);
        else
            st = n->u.regrid.fn(n->u.regrid.ctx, &out->block, &in.block, &err);
        if (st != SL_OK) {
            st = eval_fail_node(ev, n, coords, SL_EFUNC, st, &err);
            out_release(ev->ex, out);
        }
    }
    out_release(ev->ex, &in);
    return st;
}

/* A select's chunk: a view of its input, relabelled with output coordinates. */
static sl_status
eval_select(struct eval *ev, const struct sl__node *n, const struct sl_region *r,
            const uint64_t *coords, struct eval_out *out)
{
    struct sl_region rin;
    sl__node_input_region(ev->ex->graph, n, 0, r, &rin);
    SL_TRY(eval_input(ev, n, 0, &rin, out));
    region_assign(&out->block.region, r);
    out->block.chunk.rank = r->rank;
    memcpy(out->block.chunk.idx, coords, r->rank * sizeof(uint64_t));
    return SL_OK;
}

/*
 * A view's chunk: the region of the one input it lies in, its strides
 * rearranged by the node's axis map (extent-1 input axes dropped, new axes
 * of stride 0), relabelled with output coordinates.
 */
static sl_status
eval_view(struct eval *ev, const struct sl__node *n, const struct sl_region *r,
          const uint64_t *coords, struct eval_out *out)
{
    struct sl_region rin;
    uint32_t i = 0;
    for (; i < n->n_inputs; i++) {
        sl__node_input_region(ev->ex->graph, n, i, r, &rin);
        if (!sl_region_is_empty(&rin) ||
            sl__graph_node(ev->ex->graph, n->inputs[i])->grid.rank == 0)
            break;
    }
    if (SL_NEVER(i == n->n_inputs))
        return eval_fail(ev, SL_EUNSUPPORTED, "view \"%s\": no input holds its chunk", n->name);
    SL_TRY(eval_input(ev, n, i, &rin, out));
    struct sl_view in = out->block.view;
    struct sl_view *v = &out->block.view;
    v->rank = r->rank;
    for (uint32_t o = 0; o < r->rank; o++) {
        v->shape[o] = r->stop[o] - r->start[o];
        v->stride[o] = 0;
    }
    for (uint32_t d = 0; d < in.rank; d++) {
        int od = sl__node_out_dim(n, i, d);
        if (od != SL__AXIS_WHOLE)
            v->stride[od] = in.stride[d];
    }
    region_assign(&out->block.region, r);
    out->block.chunk.rank = r->rank;
    memcpy(out->block.chunk.idx, coords, r->rank * sizeof(uint64_t));
    return SL_OK;
}

/* A putter's chunk: its input, handed to the user function. */
static sl_status
eval_putter(struct eval *ev, const struct sl__node *n, const struct sl_region *r,
            const uint64_t *coords, struct eval_out *out)
{
    struct sl_region rin;
    sl__node_input_region(ev->ex->graph, n, 0, r, &rin);
    SL_TRY(eval_input(ev, n, 0, &rin, out));
    region_assign(&out->block.region, r);
    out->block.chunk.rank = r->rank;
    memcpy(out->block.chunk.idx, coords, r->rank * sizeof(uint64_t));
    struct sl_error err;
    sl_error_clear(&err);
    sl_status st = n->stats != NULL
                       ? sl__plan_stats_fold(sl__plan_put(ev->ex->plan, n->id), &out->block, &err)
                       : n->u.putter.fn(n->u.putter.ctx, n->name, &out->block, &err);
    if (st == SL_OK)
        return SL_OK;
    out_release(ev->ex, out);
    return eval_fail_node(ev, n, coords, st, st, &err);
}

static sl_status
eval_node(struct eval *ev, uint32_t id, const uint64_t *coords, struct eval_out *out)
{
    const struct sl__node *n = sl__graph_node(ev->ex->graph, id);
    struct sl_region r;
    sl_grid_chunk_region(&n->grid, coords, &r);
    out->buf = NULL;
    out->entry = NULL;
    switch (n->kind) {
    case SL_NODE_GET:
        return eval_get(ev, n, &r, coords, out);
    case SL_NODE_GETTER:
        return eval_getter(ev, n, &r, coords, out);
    case SL_NODE_SELECT:
        return eval_select(ev, n, &r, coords, out);
    case SL_NODE_MAP:
        return eval_map(ev, n, &r, coords, out);
    case SL_NODE_REGRID:
        return eval_regrid(ev, n, &r, coords, out);
    case SL_NODE_PUTTER:
        return eval_putter(ev, n, &r, coords, out);
    case SL_NODE_VIEW:
        return eval_view(ev, n, &r, coords, out);
    case SL_NODE_PUT:
        return eval_put(ev, n, &r, coords, out);
    default:
        return eval_fail(ev, SL_EUNSUPPORTED, "node \"%s\": %s nodes cannot run here", n->name,
                         sl_node_kind_name(n->kind));
    }
}

/* Bytes of the output chunk at `coords` of node `n`. */
static uint64_t
chunk_bytes(const struct sl__node *n, const uint64_t *coords)
{
    struct sl_region r;
    sl_grid_chunk_region(&n->grid, coords, &r);
    uint64_t count = 1;
    for (uint32_t d = 0; d < r.rank; d++)
        count *= r.stop[d] - r.start[d];
    return count * sl_dtype_size(n->dtype);
}

/* Finish a chunk of a put stage: record its status. */
static void
finish_put_chunk(struct sl__exec *ex, const struct sl__node *root, const uint64_t *coords,
                 struct eval *ev)
{
    struct sl__put_state *ps = sl__plan_put(ex->plan, root->id);
    uint64_t linear = sl_grid_linear_index(&root->grid, coords);
    (void)sl__exec_chunk_settle(ex, ps, linear, SL__CHUNK_RAN, ev->code, ev->err.text);
    sl__exec_count(&ev->w->chunks_done, 1);
    sl__exec_count(&ev->w->bytes_done, chunk_bytes(root, coords));
    if (ev->code != SL_OK) {
        /* Shared with writer threads' reports (exec_put.c, exec_on_unit). */
        atomic_fetch_add_explicit(&ev->w->chunks_failed, 1, memory_order_relaxed);
        if (ev->code != SL_EUPSTREAM && ev->code != SL_ECANCELED)
            sl__exec_note_failure(ex, ev->code, &ev->err);
    }
}

/*
 * Finish a chunk of an intermediate stage: publish it (owning its buffer)
 * or its failure, then release the tasks waiting for it.  Returns the bytes
 * the published buffer keeps from the task's budget share.
 */
static size_t
finish_entry(struct sl__exec *ex, struct sl__entry *e, struct eval *ev, struct eval_out *out)
{
    if (ev->code == SL_OK &&
        (out->buf == NULL || out->entry != NULL || !sl_view_is_contiguous(&out->block.view))) {
        /* A view of something else: copy it into a buffer of its own. */
        struct eval_out own;
        if (out_alloc(ev, out->block.view.dtype, &out->block.region, out->block.chunk.idx, &own) ==
            SL_OK) {
            struct sl_error err;
            sl_error_clear(&err);
            if (sl_view_copy(&own.block.view, &out->block.view, &err) != SL_OK)
                eval_fail(ev, err.code, "%s", err.text);
        }
        out_release(ex, out);
        *out = own;
    }
    if (ev->code != SL_OK && ev->code != SL_EUPSTREAM && ev->code != SL_ECANCELED)
        sl__exec_note_failure(ex, ev->code, &ev->err);
    pthread_mutex_lock(&ex->inter.lock);
    if (ev->code == SL_OK) {
        e->state = SL__ENTRY_READY;
        e->block = out->block;
        e->buf = out->buf;
        e->buf_bytes = out->buf_bytes;
    } else {
        e->state = SL__ENTRY_FAILED;
        e->code = ev->code;
        sl__text_fit(e->text, sizeof(e->text), ev->err.text);
    }
    struct sl__waiter *w = e->waiters;
    e->waiters = NULL;
    pthread_mutex_unlock(&ex->inter.lock);
    size_t kept = ev->code == SL_OK ? out->buf_bytes : 0;
    if (ev->code != SL_OK)
        out_release(ex, out);
    /* Release the waiting tasks outside the lock; the last release of a
     * task's dependencies runs it next on this worker. */
    while (w != NULL) {
        struct sl__waiter *next = w->next;
        struct sl__exec_task *t = w->task;
        pthread_mutex_lock(&ex->inter.lock);
        w->next = ex->inter.free_waiters;
        ex->inter.free_waiters = w;
        pthread_mutex_unlock(&ex->inter.lock);
        sl_task_release(&t->task);
        w = next;
    }
    return kept;
}

void
sl__exec_entry_abandon(struct sl__exec *ex, struct sl__entry *e, sl_status code, const char *text)
{
    struct eval ev = {.ex = ex,
                      .w = &ex->workers[ex->n_workers],
                      .code = SL_OK,
                      .err = SL_ERROR_INIT,
                      .put = NULL};
    struct eval_out out = {.buf = NULL, .entry = NULL};
    eval_fail(&ev, code, "%s", text);
    (void)finish_entry(ex, e, &ev, &out);
}

void
sl__exec_task_run(struct sl__exec *ex, struct sl__exec_task *t, unsigned worker)
{
    const struct sl__stage *s = &ex->fusion->stages[t->stage];
    const struct sl__node *root = sl__graph_node(ex->graph, s->root);
    struct sl__exec_worker *w = &ex->workers[worker];
    uint64_t t0 = w->trace.events != NULL ? sl__exec_now_ns() : 0;
    size_t kept = 0;
    for (uint32_t k = 0; k < t->count; k++) {
        uint64_t coords[SL_MAX_RANK];
        sl__exec_box_coords(ex, t->stage, t->box, t->first + k, coords);
        /* ev.err is written (whole) only when the chunk fails, and read
         * only then: clearing its 480 bytes per chunk showed in profiles. */
        struct eval ev;
        ev.ex = ex;
        ev.w = w;
        ev.code = SL_OK;
        ev.err.text[0] = '\0';
        ev.put = t->output == NULL ? sl__plan_put(ex->plan, root->id) : NULL;
        struct eval_out out;
        out.buf = NULL;
        out.buf_bytes = 0;
        out.entry = NULL;
        if (sl__exec_is_canceled(ex))
            eval_fail(&ev, SL_ECANCELED, "not run: the run stopped at the first failure");
        else
            eval_node(&ev, root->id, coords, &out);
        if (t->output != NULL) {
            kept += finish_entry(ex, t->output, &ev, &out);
        } else {
            out_release(ex, &out);
            finish_put_chunk(ex, root, coords, &ev);
        }
    }
    if (w->trace.events != NULL) {
        if (w->trace.n < w->trace.cap) {
            uint64_t coords[SL_MAX_RANK];
            sl__exec_box_coords(ex, t->stage, t->box, t->first, coords);
            w->trace.events[w->trace.n++] =
                (struct sl__trace_event){.start_ns = t0 - ex->t0_ns,
                                         .end_ns = sl__exec_now_ns() - ex->t0_ns,
                                         .stage = t->stage,
                                         .count = t->count,
                                         .first = sl_grid_linear_index(&root->grid, coords)};
        } else {
            w->trace.dropped++;
        }
    }
    sl__exec_count(&w->n_tasks, 1);
    sl__exec_release(ex, t->reserved > kept ? t->reserved - kept : 0);
}
