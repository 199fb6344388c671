/* SPDX-License-Identifier: MIT */
/*
 * The put transactions of a run: one shard write transaction per put,
 * opened when the run starts, committed at the end of the put's phase, and
 * the callback through which a shard (unit) write that failed fails the
 * chunks it held.
 */
#include <inttypes.h>
#include <stdio.h>

#include <sluice/graph_node.h>
#include <sluice/plan.h>

#include "exec_internal.h"
#include "exec_steps_internal.h"

/* Fail every chunk of put `ps` that is pending or ok with `status` and
 * `text`.  @return the chunks whose status changed. */
static uint64_t
put_fail_all(struct sl__exec *ex, struct sl__put_state *ps, sl_status status, const char *text)
{
    uint64_t changed = 0;
    for (uint64_t k = 0; k < ps->n_chunks; k++)
        changed += sl__exec_chunk_settle(ex, ps, k, SL__CHUNK_UNIT_FAILED, status, text);
    return changed;
}

/*
 * Fail the chunks of failed unit `unit` of put `xp` with `status` and
 * `why` (the unit's error).  When they cannot be listed, no chunk of the
 * put may stay ok, as it might be one of them: every chunk of the put not
 * failed otherwise fails, with both errors in its message.
 * @return the chunks whose status changed; `text` gets the message.
 */
static uint64_t
unit_fail_chunks(struct sl__exec *ex, const struct sl__exec_put *xp, const uint64_t *unit,
                 sl_status status, const char *why, char *text, size_t text_size)
{
    const struct sl__node *n = sl__graph_node(ex->graph, xp->node);
    struct sl__put_state *ps = sl__plan_put(ex->plan, xp->node);
    struct sl_array_iter it;
    struct sl_error ierr = SL_ERROR_INIT;
    sl_status ist = ex->plan->unit_chunks(n->u.io.array, unit, &it, &ierr);
    if (ist == SL_OK && !sl_array_iter_next(&it))
        ist = sl_error_set(&ierr, SL_EBOUNDS, NULL, "the shard holds no chunk of the array");
    if (ist != SL_OK) {
        char at[SL_MAX_RANK * 21 + 4];
        struct sl_chunk_key key = sl_chunk_key_make(n->grid.rank, unit);
        sl_chunk_key_format(&key, at, sizeof(at));
        /* Both statuses first: a chunk's record keeps 128 bytes. */
        snprintf(text, text_size,
                 "put \"%s\": shard %s not written (%s), nor its chunks listed (%s: %s), so "
                 "no chunk of the put is ok: %s",
                 n->name, at, sl_status_name(status), sl_status_name(ist), ierr.text, why);
        return put_fail_all(ex, ps, status, text);
    }
    /* The unit's key, from its first chunk. */
    char key[SL_STORE_KEY_MAX];
    sl_array_chunk_key(n->u.io.array, it.iter.coords, key, sizeof(key));
    snprintf(text, text_size, "put \"%s\": shard %s not written: %s: %s", n->name, key,
             sl_status_name(status), why);
    uint64_t changed = 0;
    do
        changed += sl__exec_chunk_settle(ex, ps, sl_grid_linear_index(&n->grid, it.iter.coords),
                                         SL__CHUNK_UNIT_FAILED, status, text);
    while (sl_array_iter_next(&it));
    return changed;
}

/*
 * Record unit `unit` of put `xp`, written, in the plan's journal when every
 * chunk of it is ok.  A unit written before commit had all its chunks
 * staged whole, each by a write that succeeded; one written by commit may
 * hold chunks that failed (not staged), so their statuses, all settled by
 * then, are looked at.
 */
static void
unit_journal(struct sl__exec *ex, struct sl__exec_put *xp, const uint64_t *unit)
{
    sl_journal *j = ex->plan->journal;
    if (atomic_load_explicit(&xp->committing, memory_order_relaxed)) {
        const struct sl__node *n = sl__graph_node(ex->graph, xp->node);
        const struct sl__put_state *ps = &ex->plan->puts[xp->index];
        struct sl_array_iter it;
        if (ex->plan->unit_chunks(n->u.io.array, unit, &it, NULL) != SL_OK)
            return;
        while (sl_array_iter_next(&it))
            if (sl__put_state_code(ps, sl_grid_linear_index(&n->grid, it.iter.coords)) != SL_OK)
                return;
    }
    sl__journal_record(j, xp->index, sl_grid_linear_index(sl__journal_units(j, xp->index), unit));
}

/*
 * Count the resumed chunks of this part (all of them in a run alone) and
 * their bytes as done for progress, whose totals are this part's: each
 * part of a split run skips every chunk the journal holds, but counts only
 * its own.
 */
static void
resume_progress(struct sl__exec *ex)
{
    uint64_t chunks = 0, bytes = 0;
    for (uint32_t s = 0; s < ex->fusion->n_stages && ex->n_resumed > 0; s++) {
        const struct sl__node *root = sl__graph_node(ex->graph, ex->fusion->stages[s].root);
        if (root->kind != SL_NODE_PUT || sl__plan_put(ex->plan, root->id)->n_resumed == 0)
            continue;
        uint64_t lo, hi, at = 0;
        sl__exec_part_range(ex, s, &lo, &hi);
        for (uint64_t b = 0; b < ex->boxes[s].n_total && at < hi; b++) {
            uint64_t n = sl__exec_box_count(ex, s, b);
            for (uint64_t k = 0; k < n; k++, at++) {
                if (at < lo || at >= hi || !sl__exec_pos_resumed(ex, s, b, k))
                    continue;
                uint64_t coords[SL_MAX_RANK], count = 1;
                struct sl_region r;
                sl__exec_box_coords(ex, s, b, k, coords);
                sl_grid_chunk_region(&root->grid, coords, &r);
                for (uint32_t d = 0; d < r.rank; d++)
                    count *= r.stop[d] - r.start[d];
                bytes += count * sl_dtype_size(root->dtype);
                chunks++;
            }
        }
    }
    /* In the slot of threads outside the pool. */
    sl__exec_count(&ex->workers[ex->n_workers].chunks_done, chunks);
    sl__exec_count(&ex->workers[ex->n_workers].bytes_done, bytes);
}

void
sl__exec_puts_resume(struct sl__exec *ex)
{
    const sl_journal *j = ex->plan->journal;
    for (uint32_t i = 0; i < ex->plan->n_puts; i++)
        ex->plan->puts[i].n_resumed = 0;
    for (uint32_t i = 0; i < ex->plan->n_puts; i++)
        atomic_store_explicit(&ex->plan->puts[i].n_retries, 0, memory_order_relaxed);
    if (j == NULL)
        return;
    for (uint32_t i = 0; i < ex->plan->n_puts; i++) {
        struct sl__put_state *ps = &ex->plan->puts[i];
        const struct sl__node *n = sl__graph_node(ex->graph, ps->node);
        const struct sl_grid *ug = sl__journal_units(j, i);
        if (n->kind != SL_NODE_PUT || ug->n_total == 0)
            continue;
        uint64_t coords[SL_MAX_RANK], uc[SL_MAX_RANK];
        for (uint64_t k = 0; k < ps->n_chunks; k++) {
            sl_grid_coords_of(&n->grid, k, coords);
            for (uint32_t d = 0; d < n->grid.rank; d++)
                uc[d] = n->shard_chunks[d] > 0 ? coords[d] / n->shard_chunks[d] : coords[d];
            if (!sl__journal_done(j, i, sl_grid_linear_index(ug, uc)))
                continue;
            (void)sl__exec_chunk_settle(ex, ps, k, SL__CHUNK_RESUMED, SL_OK, NULL);
            ex->n_resumed++;
            ps->n_resumed++;
        }
    }
    resume_progress(ex);
}

bool
sl__exec_pos_resumed(const struct sl__exec *ex, uint32_t stage, uint64_t box, uint64_t pos)
{
    const struct sl__node *root = sl__graph_node(ex->graph, ex->fusion->stages[stage].root);
    const struct sl__put_state *ps = sl__plan_put(ex->plan, root->id);
    uint64_t coords[SL_MAX_RANK];
    sl__exec_box_coords(ex, stage, box, pos, coords);
    return sl__put_state_code(ps, sl_grid_linear_index(&root->grid, coords)) == SL_OK;
}

/*
 * A put's shard (or unsharded chunk) write ended: on failure, every chunk
 * of the unit that was ok fails with the shard's error, as what was
 * reported ok must read back; on success the unit goes to the plan's
 * journal.  Runs on the thread that wrote the unit.
 */
static void
exec_on_unit(void *arg, const uint64_t *unit, sl_status status, const struct sl_error *uerr)
{
    struct sl__exec_put *xp = arg;
    struct sl__exec *ex = xp->ex;
    if (status == SL_OK && ex->plan->journal != NULL)
        unit_journal(ex, xp, unit);
    if (status == SL_OK)
        return;
    char text[1024]; /* sl__plan_error_add fits it to the record */
    uint64_t changed =
        unit_fail_chunks(ex, xp, unit, status,
                         uerr != NULL ? uerr->text : sl_status_message(status), text, sizeof(text));
    /* Not sl__exec_count: besides workers and the driver, the writer
     * threads of transactions (several at once) report here. */
    int w = sl_pool_worker_index(ex->pool);
    atomic_fetch_add_explicit(&ex->workers[w >= 0 ? (unsigned)w : ex->n_workers].chunks_failed,
                              changed, memory_order_relaxed);
    if (status != SL_ECANCELED) {
        struct sl_error e = SL_ERROR_INIT;
        sl_error_set(&e, status, NULL, "%s", text);
        sl__exec_note_failure(ex, status, &e);
    }
}

/* Nodes of `kind` (get or put) in `g` on array `a`. */
static uint32_t
nodes_on_array(const sl_graph *g, sl_node_kind kind, const sl_array *a)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < g->n_nodes; k++)
        n += g->nodes[k].kind == kind && sl__array_same(g->nodes[k].u.io.array, a);
    return n;
}

/* A transaction per put, writing each shard once (see struct sl__exec_put). */
sl_status
sl__exec_puts_open(struct sl__exec *ex, struct sl_error *err)
{
    sl_plan *plan = ex->plan;
    ex->puts = sl_alloc_zeroed(&plan->alloc, plan->n_puts, sizeof(*ex->puts), 0);
    if (ex->puts == NULL && plan->n_puts > 0)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for %" PRIu32 " puts", plan->n_puts);
    for (uint32_t i = 0; i < plan->n_puts; i++) {
        struct sl__exec_put *xp = &ex->puts[i];
        xp->ex = ex;
        xp->node = plan->puts[i].node;
        xp->index = i;
        atomic_init(&xp->committing, false);
        const struct sl__node *n = sl__graph_node(ex->graph, xp->node);
        if (n->kind != SL_NODE_PUT)
            continue;
        struct sl_txn_opts to = SL_TXN_OPTS_DEFAULT;
        ex->parallel = sl_pool_parallel(ex->pool);
        to.par = &ex->parallel;
        to.on_unit = exec_on_unit;
        to.on_unit_arg = xp;
        /* Another process of a split run may be writing its own shards
         * here: only a run alone removes what killed writers left. */
        to.clean_leftovers = plan->opts.n_parts == 1;
        /* Shards completed early are written by a writer thread where the
         * store waits for a device, so pool workers go on encoding.  Safe
         * while this put is the only writer of its array: gets of it run
         * in a later phase, after commit waited for that thread. */
        const sl_array *a = n->u.io.array;
        to.write_behind =
            nodes_on_array(ex->graph, SL_NODE_PUT, a) == 1 ? SL_TXN_WRITE_BEHIND_AUTO : 0;
        /* A get of the array runs in a later phase (the levels of a
         * pyramid are read back for the next): the page cache saves
         * reading it from the device. */
        to.reread = nodes_on_array(ex->graph, SL_NODE_GET, a) > 0;
        /* Pool workers write the chunks: each encodes its own as it stages
         * it, so staging holds compressed bytes and a completed shard only
         * needs assembling. */
        to.encode_on_write = true;
        /* A unit write that failed transiently is tried again: the
         * transaction holds its bytes until the write ends. */
        to.retries = plan->opts.retries;
        to.retry_backoff_s = plan->opts.retry_backoff_s;
        xp->txn = sl_txn_open(n->u.io.array, &to, err);
        if (xp->txn == NULL)
            return err != NULL && err->code != SL_OK ? err->code : SL_ENOMEM;
    }
    return SL_OK;
}

/* Commit the transactions of the puts of `phase`: write what is still staged. */
void
sl__exec_puts_commit(struct sl__exec *ex, uint32_t phase)
{
    for (uint32_t i = 0; i < ex->plan->n_puts; i++) {
        struct sl__exec_put *xp = &ex->puts[i];
        if (xp->txn == NULL || ex->fusion->stages[ex->fusion->stage_of[xp->node]].phase != phase)
            continue;
        struct sl_error e = SL_ERROR_INIT;
        atomic_store_explicit(&xp->committing, true, memory_order_relaxed);
        /* A unit's failure reaches its chunks through exec_on_unit; a
         * commit that could not start (out of memory) fails what it held. */
        sl_status st = sl_txn_commit(xp->txn, ex->workers[ex->n_workers].codec, &e);
        struct sl_txn_stats ts;
        sl_txn_get_stats(xp->txn, &ts);
        atomic_fetch_add_explicit(&ex->plan->puts[i].n_retries, ts.n_retries, memory_order_relaxed);
        atomic_fetch_add_explicit(&ex->n_retries, ts.n_retries, memory_order_relaxed);
        /* (Units, not bytes: chunks of fill staged encoded count none.) */
        if (st != SL_OK && ts.staged_units > 0)
            sl__exec_note_failure(ex, st, &e);
        sl_txn_close(xp->txn);
        xp->txn = NULL;
    }
}

void
sl__exec_puts_close(struct sl__exec *ex)
{
    for (uint32_t i = 0; ex->puts != NULL && i < ex->plan->n_puts; i++)
        sl_txn_close(ex->puts[i].txn); /* aborts what an early stop left staged */
    sl_free(&ex->plan->alloc, ex->puts, ex->plan->n_puts * sizeof(*ex->puts));
    ex->puts = NULL;
}
