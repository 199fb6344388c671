/* SPDX-License-Identifier: MIT */
/*
 * The executor's driver: sl_plan_run sets a run up, walks every put's
 * output chunks phase by phase, has tasks emitted for them within the
 * memory budget (exec_emit.c), waits for them (exec_wait.c), and gathers
 * the results.
 *
 * DESIGN: the thread calling sl_plan_run is the driver; the pool's workers
 * run tasks (exec_eval.c).  Nothing of size O(chunks) exists besides the
 * status arrays: the driver emits tasks (batches of consecutive chunks of
 * one stage, in shard order) only while the chunk buffers accounted alive
 * fit the budget and few enough tasks are queued, and sleeps otherwise.
 * The files of the executor call downwards only: exec.c drives
 * exec_emit.c, exec_wait.c, exec_parts.c and exec_put.c; exec_emit.c runs
 * tasks through exec_eval.c; all of them share exec_state.c and
 * exec_inter.c, which call none of them.
 *
 * Budget: the driver reserves a stage's task bytes before emitting a task;
 * the task returns them when done, except the bytes of an intermediate
 * chunk it publishes, returned when that chunk's last reader frees it.
 * Only the driver adds, so an admitted reservation is never overtaken.
 *
 * Lock order: ex->lock and the intermediate table's lock are never held
 * together.
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/graph_node.h>
#include <sluice/op_registry.h>
#include <sluice/plan.h>

#include "core_internal.h"
#include "exec_internal.h"
#include "exec_steps_internal.h"

/* Tasks queued or running at most, per worker, when the budget allows more. */
#define EXEC_TASKS_PER_WORKER 32

/* Largest number of chunks one task computes in a row. */
#define EXEC_MAX_BATCH 64

/* Trace events kept per worker. */
#define EXEC_TRACE_CAP ((size_t)1 << 20)

/*
 * Where the driver is in one put stage's walk.  Positions number the
 * stage's chunks box after box; this process runs positions [lo, hi).
 */
struct exec_cursor {
    uint32_t stage; /* the put stage */
    uint64_t box;   /* current box */
    uint64_t pos;   /* next position in it */
    uint64_t base;  /* position of the box's first chunk */
    uint64_t lo;    /* first position of this part */
    uint64_t hi;    /* one past its last */
    uint32_t batch; /* chunks per task */
};

/* Emit the next task of `c`; false when its part of the stage is done. */
static bool
cursor_step(struct sl__exec *ex, struct sl__exec_drive *dr, struct exec_cursor *c, sl_status *st,
            struct sl_error *err)
{
    const struct sl_grid *bg = &ex->boxes[c->stage];
    while (c->box < bg->n_total && c->base + c->pos < c->hi) {
        uint64_t n = sl__exec_box_count(ex, c->stage, c->box);
        if (c->base + n <= c->lo) {
            /* A box of another part, before ours. */
            c->base += n;
            c->box++;
            continue;
        }
        if (c->base + c->pos < c->lo)
            c->pos = c->lo - c->base;
        /* Chunks an earlier run wrote (the journal) are not emitted. */
        while (ex->n_resumed > 0 && c->pos < n && c->base + c->pos < c->hi &&
               sl__exec_pos_resumed(ex, c->stage, c->box, c->pos))
            c->pos++;
        if (c->pos < n && c->base + c->pos < c->hi) {
            uint64_t left = n - c->pos;
            if (c->base + n > c->hi)
                left = c->hi - c->base - c->pos;
            uint32_t count = left < c->batch ? (uint32_t)left : c->batch;
            for (uint32_t k = 1; ex->n_resumed > 0 && k < count; k++)
                if (sl__exec_pos_resumed(ex, c->stage, c->box, c->pos + k))
                    count = k;
            *st = sl__exec_task_emit(ex, dr, c->stage, c->box, c->pos, count, NULL, err);
            c->pos += count;
            return true;
        }
        c->base += n;
        c->box++;
        c->pos = 0;
    }
    return false;
}

/* Emit every put stage of `phase`, round robin, then wait for them. */
static sl_status
exec_phase(struct sl__exec *ex, struct sl__exec_drive *dr, uint32_t phase, struct sl_error *err)
{
    const struct sl__fusion *f = ex->fusion;
    struct exec_cursor cur[64];
    uint32_t n_cur = 0;
    sl_status st = SL_OK;
    for (uint32_t s = 0; s < f->n_stages; s++) {
        const struct sl__node *root = sl__graph_node(ex->graph, f->stages[s].root);
        bool is_put = root->kind == SL_NODE_PUT || root->kind == SL_NODE_PUTTER;
        if (!is_put || f->stages[s].phase != phase)
            continue;
        if (n_cur == SL_ARRAY_LEN(cur))
            return sl_error_set(err, SL_EUNSUPPORTED, NULL, "more than %zu puts in one phase",
                                SL_ARRAY_LEN(cur));
        uint64_t per = root->grid.n_total / (16 * (uint64_t)ex->n_workers);
        uint32_t batch = per < 1 ? 1 : per > EXEC_MAX_BATCH ? EXEC_MAX_BATCH : (uint32_t)per;
        if (f->stages[s].n_unfused_inputs > 0)
            batch = 1;
        struct exec_cursor *c = &cur[n_cur++];
        *c = (struct exec_cursor){.stage = s, .batch = batch};
        sl__exec_part_range(ex, s, &c->lo, &c->hi);
        if (ex->plan->opts.n_parts > 1)
            sl__exec_part_mark_skipped(ex, s, c->lo, c->hi);
    }
    bool any = true;
    while (any && st == SL_OK && !sl__exec_is_canceled(ex)) {
        any = false;
        for (uint32_t i = 0; i < n_cur && st == SL_OK; i++)
            any |= cursor_step(ex, dr, &cur[i], &st, err);
    }
    sl_status wst = sl__exec_wait(ex, SL__WAIT_IDLE, 0, 0, &dr->tot, NULL);
    /* Later phases may read what this one wrote: write every shard now. */
    sl__exec_puts_commit(ex, phase);
    return st != SL_OK ? st : wst;
}

/* ---- setting up and tearing down a run ---------------------------------------- */

/* Box grids: shards (in chunks) for puts, whole grids for putters, single
 * chunks for intermediate stages. */
static sl_status
exec_boxes(struct sl__exec *ex, struct sl_error *err)
{
    const struct sl__fusion *f = ex->fusion;
    ex->boxes = sl_alloc_zeroed(&ex->plan->alloc, f->n_stages, sizeof(struct sl_grid), 0);
    if (ex->boxes == NULL && f->n_stages > 0)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu32 " stages", f->n_stages);
    for (uint32_t s = 0; s < f->n_stages; s++) {
        const struct sl__node *root = sl__graph_node(ex->graph, f->stages[s].root);
        uint64_t box[SL_MAX_RANK];
        bool is_put = root->kind == SL_NODE_PUT || root->kind == SL_NODE_PUTTER;
        for (uint32_t d = 0; d < root->grid.rank; d++) {
            uint64_t n = root->grid.n_chunks[d];
            box[d] = is_put ? (n > 0 ? n : 1) : 1;
            if (is_put && root->shard_chunks[d] > 0)
                box[d] = root->shard_chunks[d];
        }
        SL_TRY(sl_grid_init_regular(&ex->boxes[s], root->grid.rank, root->grid.n_chunks, box, err));
    }
    return SL_OK;
}

/* The distinct stores the graph reads and writes, and their counters now. */
static sl_status
exec_stores(struct sl__exec *ex, struct sl_error *err)
{
    const sl_graph *g = ex->graph;
    ex->stores = sl_alloc_zeroed(&ex->plan->alloc, g->n_nodes + 1, sizeof(sl_store *), 0);
    ex->stats0 =
        sl_alloc_zeroed(&ex->plan->alloc, g->n_nodes + 1, sizeof(struct sl_store_stats), 0);
    ex->remote0 =
        sl_alloc_zeroed(&ex->plan->alloc, g->n_nodes + 1, sizeof(struct sl_remote_stats), 0);
    if (ex->stores == NULL || ex->stats0 == NULL || ex->remote0 == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory to track stores");
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const struct sl__node *n = &g->nodes[i];
        if (n->kind != SL_NODE_GET && n->kind != SL_NODE_PUT)
            continue;
        sl_store *st = sl_array_store(n->u.io.array);
        bool seen = false;
        for (uint32_t k = 0; k < ex->n_stores; k++)
            seen |= ex->stores[k] == st;
        if (!seen) {
            ex->stores[ex->n_stores] = st;
            sl_store_get_stats(st, &ex->stats0[ex->n_stores]);
            sl_store_get_remote_stats(st, &ex->remote0[ex->n_stores]);
            ex->n_stores++;
        }
    }
    return SL_OK;
}

/* Bytes read and written through the stores since exec_stores. */
static void
exec_store_bytes(const struct sl__exec *ex, struct sl_run_summary *s)
{
    s->bytes_read = s->bytes_written = s->objects_written = 0;
    s->remote_requests = s->remote_retries = 0;
    s->remote_max_in_flight = 0;
    for (uint32_t k = 0; k < ex->n_stores; k++) {
        struct sl_store_stats now;
        sl_store_get_stats(ex->stores[k], &now);
        s->bytes_read += now.bytes_read - ex->stats0[k].bytes_read;
        s->bytes_written += now.bytes_written - ex->stats0[k].bytes_written;
        s->objects_written += now.n_set - ex->stats0[k].n_set;
        struct sl_remote_stats r;
        sl_store_get_remote_stats(ex->stores[k], &r);
        s->remote_requests += r.requests - ex->remote0[k].requests;
        s->remote_retries += r.retries - ex->remote0[k].retries;
        if (r.max_in_flight > s->remote_max_in_flight)
            s->remote_max_in_flight = r.max_in_flight;
    }
}

/* Per-worker scratch for ops kernels, and trace buffers. */
static sl_status
exec_workers(struct sl__exec *ex, struct sl_error *err)
{
    size_t scratch = 0;
    for (uint32_t i = 0; i < ex->graph->n_nodes; i++) {
        const struct sl__node *n = sl__graph_node(ex->graph, i);
        if (!n->has_op)
            continue;
        size_t bytes = 0;
        /* Halo ops size their scratch by the output block: the largest chunk. */
        uint64_t chunk[SL_MAX_RANK];
        for (uint32_t d = 0; d < n->grid.rank; d++)
            chunk[d] = sl_grid_max_chunk(&n->grid, d);
        const bool halo = n->op.desc->kind == SL_OP_KIND_HALO;
        SL_TRY(sl_op_scratch_bytes(&n->op, halo ? chunk : NULL, &bytes, err));
        scratch = bytes > scratch ? bytes : scratch;
    }
    bool need_codec = false;
    for (uint32_t i = 0; i < ex->graph->n_nodes; i++) {
        sl_node_kind k = sl__graph_node(ex->graph, i)->kind;
        need_codec |= k == SL_NODE_GET || k == SL_NODE_PUT;
    }
    unsigned n = ex->n_workers + 1;
    ex->workers =
        sl_alloc_zeroed(&ex->plan->alloc, n, sizeof(struct sl__exec_worker), SL_CACHELINE);
    if (ex->workers == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %u workers' state", n);
    for (unsigned w = 0; w < n; w++) {
        struct sl__exec_worker *wk = &ex->workers[w];
        if (scratch > 0) {
            wk->scratch = sl_alloc(&ex->plan->alloc, scratch, 64);
            if (wk->scratch == NULL)
                return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %zu bytes of scratch",
                                    scratch);
            wk->scratch_bytes = scratch;
        }
        if (need_codec) {
            wk->codec = sl_codec_ctx_create(&ex->plan->alloc, err);
            if (wk->codec == NULL)
                return err != NULL ? err->code : SL_ENOMEM;
        }
        if (ex->plan->opts.trace_path != NULL) {
            wk->trace.cap = EXEC_TRACE_CAP;
            wk->trace.events =
                sl_alloc(&ex->plan->alloc, wk->trace.cap * sizeof(struct sl__trace_event), 0);
            if (wk->trace.events == NULL)
                return sl_error_set(err, SL_ENOMEM, NULL, "no memory for trace events");
        }
    }
    return SL_OK;
}

static void
exec_fini(struct sl__exec *ex)
{
    sl__exec_tasks_fini(ex);
    const struct sl_allocator *a = &ex->plan->alloc;
    if (ex->workers != NULL) {
        for (unsigned w = 0; w <= ex->n_workers; w++) {
            struct sl__exec_worker *wk = &ex->workers[w];
            sl_free(a, wk->scratch, wk->scratch_bytes);
            sl_codec_ctx_destroy(wk->codec);
            sl_free(a, wk->trace.events, wk->trace.cap * sizeof(struct sl__trace_event));
        }
        sl_free(a, ex->workers, (ex->n_workers + 1) * sizeof(struct sl__exec_worker));
    }
    if (ex->boxes != NULL) {
        for (uint32_t s = 0; s < ex->fusion->n_stages; s++)
            sl_grid_fini(&ex->boxes[s]);
        sl_free(a, ex->boxes, ex->fusion->n_stages * sizeof(struct sl_grid));
    }
    if (ex->inter.buckets != NULL)
        sl__inter_fini(&ex->inter, ex->pool);
    sl__exec_puts_close(ex);
    sl_free(a, ex->stores, (ex->graph->n_nodes + 1) * sizeof(sl_store *));
    sl_free(a, ex->stats0, (ex->graph->n_nodes + 1) * sizeof(struct sl_store_stats));
    sl_free(a, ex->remote0, (ex->graph->n_nodes + 1) * sizeof(struct sl_remote_stats));
    pthread_cond_destroy(&ex->cond);
    pthread_mutex_destroy(&ex->lock);
}

static sl_status
exec_init(struct sl__exec *ex, sl_plan *plan, sl_pool *pool, struct sl_error *err)
{
    memset(ex, 0, sizeof(*ex));
    ex->plan = plan;
    ex->graph = plan->graph;
    ex->fusion = &plan->fusion;
    ex->pool = pool;
    ex->n_workers = sl_pool_worker_count(pool);
    atomic_init(&ex->first_error, SL_OK);
    atomic_init(&ex->n_retries, 0);
    ex->first_err = SL_ERROR_INIT;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&ex->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0 || pthread_mutex_init(&ex->lock, NULL) != 0)
        return sl_error_set(err, SL_ENOMEM, NULL, "cannot create the run's lock");
    SL_TRY(sl__inter_init(&ex->inter, &plan->alloc, err));
    SL_TRY(exec_boxes(ex, err));
    SL_TRY(exec_stores(ex, err));
    ex->prefetch = sl__exec_reads_ahead(ex);
    SL_TRY(exec_workers(ex, err));
    return sl__exec_puts_open(ex, err);
}

/* Totals for progress: the chunks of every put (this part's) and their bytes. */
static void
exec_totals(const struct sl__exec *ex, struct sl__exec_totals *tot)
{
    memset(tot, 0, sizeof(*tot));
    for (uint32_t s = 0; s < ex->fusion->n_stages; s++) {
        const struct sl__node *n = sl__graph_node(ex->graph, ex->fusion->stages[s].root);
        if (n->kind != SL_NODE_PUT && n->kind != SL_NODE_PUTTER)
            continue;
        uint64_t lo, hi, count;
        sl__exec_part_range(ex, s, &lo, &hi);
        if (sl_shape_count(n->grid.rank, n->grid.shape, &count, NULL) != SL_OK)
            count = 0;
        tot->chunks += hi - lo;
        /* A part's bytes in proportion to its chunks: exact for even grids. */
        uint64_t bytes = count * sl_dtype_size(n->dtype);
        tot->bytes += n->grid.n_total > 0
                          ? (uint64_t)((double)bytes * (double)(hi - lo) / (double)n->grid.n_total)
                          : 0;
    }
}

/* After the run: pending chunks become cancelled, counts and first error. */
static sl_status
exec_finish(struct sl__exec *ex, sl_status st, struct sl_error *run_err, struct sl_error *err)
{
    sl_plan *plan = ex->plan;
    for (uint32_t i = 0; i < plan->n_puts; i++)
        for (uint64_t k = 0; k < plan->puts[i].n_chunks; k++)
            (void)sl__exec_chunk_settle(ex, &plan->puts[i], k, SL__CHUNK_UNRUN, SL_ECANCELED, NULL);
    sl__plan_count(plan);
    struct sl_run_summary *s = &plan->summary;
    /* A run whose setup failed (out of memory) may have no worker state. */
    s->n_tasks =
        ex->workers != NULL ? sl__exec_sum(ex, offsetof(struct sl__exec_worker, n_tasks)) : 0;
    /* Relaxed: after the run went idle (ordered by exec_wait). */
    s->peak_bytes = atomic_load_explicit(&ex->peak, memory_order_relaxed);
    s->budget_bytes = plan->opts.memory_budget;
    s->elapsed_s = (double)(sl__exec_now_ns() - ex->t0_ns) * 1e-9;
    s->first_error = (sl_status)atomic_load_explicit(&ex->first_error, memory_order_relaxed);
    s->n_resumed = ex->n_resumed;
    s->n_retries = atomic_load_explicit(&ex->n_retries, memory_order_relaxed);
    if (ex->stores != NULL)
        exec_store_bytes(ex, s);
    s->run_error = st;
    if (st != SL_OK) {
        /* The run itself failed (budget, memory): that is the first error. */
        if (s->first_error == SL_OK)
            s->first_error = st;
        if (err != NULL)
            *err = *run_err;
        return st;
    }
    if (s->first_error != SL_OK) {
        if (err != NULL && err->code == SL_OK)
            *err = ex->first_err;
        return s->first_error;
    }
    if (s->n_ok + s->n_skipped != s->n_chunks)
        return sl_error_set(err, SL_ECANCELED, NULL, "%" PRIu64 " chunk%s not run",
                            s->n_chunks - s->n_ok - s->n_skipped,
                            s->n_chunks - s->n_ok - s->n_skipped == 1 ? " was" : "s were");
    return SL_OK;
}

sl_status
sl_plan_run(sl_plan *plan, sl_pool *pool, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (plan == NULL || pool == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "sl_plan_run needs a plan and a pool");
    struct sl__exec ex;
    struct sl_error run_err = SL_ERROR_INIT;
    sl__plan_reset(plan);
    memset(&plan->summary, 0, sizeof(plan->summary));
    sl_status st = exec_init(&ex, plan, pool, &run_err);
    struct sl__exec_drive dr;
    memset(&dr, 0, sizeof(dr));
    if (st == SL_OK) {
        ex.t0_ns = sl__exec_now_ns();
        exec_totals(&ex, &dr.tot);
        sl__exec_puts_resume(&ex);
        dr.max_tasks = (uint64_t)EXEC_TASKS_PER_WORKER * ex.n_workers;
        uint32_t n_phases = 0;
        for (uint32_t s = 0; s < ex.fusion->n_stages; s++)
            n_phases = ex.fusion->stages[s].phase + 1 > n_phases ? ex.fusion->stages[s].phase + 1
                                                                 : n_phases;
        for (uint32_t ph = 0; ph < n_phases && st == SL_OK && !sl__exec_is_canceled(&ex); ph++) {
            st = exec_phase(&ex, &dr, ph, &run_err);
            if (st == SL_OK && plan->opts.phase_done != NULL)
                st = plan->opts.phase_done(plan->opts.phase_ctx, ph, n_phases);
            if (st != SL_OK && run_err.code == SL_OK)
                sl_error_set(&run_err, st, NULL, "phase %" PRIu32 " of %" PRIu32 " ended with %s",
                             ph + 1, n_phases, sl_status_message(st));
        }
        /* Whatever happened, nothing may still run when the run returns. */
        (void)sl__exec_wait(&ex, SL__WAIT_IDLE, 0, 0, &dr.tot, NULL);
        sl__exec_progress(&ex, dr.tot.chunks, dr.tot.bytes, true);
        if (plan->opts.trace_path != NULL && st == SL_OK)
            st = sl__trace_write(plan->opts.trace_path, ex.graph, ex.fusion, &ex.workers[0],
                                 ex.n_workers + 1, &run_err);
    }
    sl_free(&plan->alloc, dr.needs.node, dr.needs.cap * sizeof(uint32_t));
    sl_free(&plan->alloc, dr.needs.coords, dr.needs.cap * SL_MAX_RANK * sizeof(uint64_t));
    st = exec_finish(&ex, st, &run_err, err);
    exec_fini(&ex);
    /* The pyramids' omero windows, from this run's statistics, before the
     * run returns (pyramid_omero.c, DESIGN). */
    return sl__pyramid_omero_commit(plan, st, err);
}
