/* SPDX-License-Identifier: MIT */
/*
 * Running the chunks of a batched read: the per-worker loop over the plan's
 * items, and each chunk's delivery (decoded into the output it can go to
 * directly, or into scratch and copied into every selection it serves) or
 * failure, recorded against the selections it serves.  batch_read.c (the
 * unsharded path and the API) and batch_shard.c (the sharded path) call
 * these; they call neither.
 *
 * DESIGN: see batch_read.c.  A selection keeps the error of the earliest
 * chunk of the plan that failed it, under the run's mutex.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "batch_internal.h"

/* ---- per-worker loops ------------------------------------------------------------ */

struct batch_loop {
    struct sl__batch_run *run;
    sl__batch_item_fn *fn;
    void *arg;
};

static void
batch_loop_body(void *arg, size_t index, unsigned worker)
{
    struct batch_loop *l = arg;
    struct sl__batch_run *run = l->run;
    if (SL_NEVER(worker >= run->n_workers)) {
        l->fn(run, l->arg, index, NULL); /* an executor breaking its contract */
        return;
    }
    /* Slot `worker` is only touched by iterations of that worker, which never
     * overlap (the sl_parallel contract). */
    if (run->ctxs[worker] == NULL)
        run->ctxs[worker] = sl_codec_ctx_create(&run->a->alloc, NULL);
    l->fn(run, l->arg, index, run->ctxs[worker]);
}

sl_status
sl__batch_loop(struct sl__batch_run *run, size_t n, sl__batch_item_fn *fn, void *arg)
{
    struct batch_loop l = {run, fn, arg};
    return n == 0 ? SL_OK : sl_parallel_run(run->par, n, batch_loop_body, &l);
}

/* ---- outcomes ---------------------------------------------------------------------- */

void
sl__batch_fail_selection_locked(struct sl__batch_run *run, size_t s, size_t order,
                                const struct sl_error *e)
{
    if (run->status[s] != SL_OK && run->failed_at[s] <= order)
        return;
    run->status[s] = e->code;
    run->failed_at[s] = order;
    struct sl_error rec = *e;
    if (strncmp(e->text, "selection ", 10) != 0)
        snprintf(rec.text, sizeof(rec.text), "selection %zu: %s", s, e->text);
    if (run->errors != NULL)
        run->errors[s] = rec;
    if (s <= run->first_sel) {
        run->first = rec;
        run->first_sel = s;
    }
}

void
sl__batch_fail_chunk(struct sl__batch_run *run, size_t c, const struct sl_error *e)
{
    const struct sl__batch_chunk *ch = &run->plan.chunks[c];
    pthread_mutex_lock(&run->lock);
    for (size_t i = ch->first; i < ch->first + ch->n_sels; i++)
        sl__batch_fail_selection_locked(run, run->plan.sels[i], c, e);
    run->done[c] = 1;
    pthread_mutex_unlock(&run->lock);
}

sl_status
sl__batch_target(struct sl__batch_run *run, size_t c, sl_codec_ctx *ctx, uint8_t **target,
                 size_t *in_sel, struct sl_error *err)
{
    *in_sel = SIZE_MAX;
    *target = sl__batch_direct(&run->plan, c, &run->geom, in_sel);
    if (*target != NULL)
        return SL_OK;
    struct sl_buf *chunk;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_CHUNK, run->a->layout.n_bytes, &chunk, err));
    *target = chunk->data;
    return SL_OK;
}

void
sl__batch_finish(struct sl__batch_run *run, size_t c, sl_status st, bool missing,
                 const uint8_t *target, size_t in_sel, const struct sl_error *e)
{
    if (st != SL_OK) {
        struct sl_error rec = *e;
        if (rec.code == SL_OK)
            sl_error_set(&rec, st, NULL, "%s", sl_status_message(st));
        sl__batch_fail_chunk(run, c, &rec);
        return;
    }
    if (missing) {
        sl__batch_fill(&run->plan, c, &run->geom);
        atomic_fetch_add_explicit(&run->n_missing, 1, memory_order_relaxed);
    } else {
        sl__batch_scatter(&run->plan, c, &run->geom, target, in_sel);
        atomic_fetch_add_explicit(&run->n_decoded, 1, memory_order_relaxed);
        if (in_sel != SIZE_MAX)
            atomic_fetch_add_explicit(&run->n_direct, 1, memory_order_relaxed);
    }
    run->done[c] = 1;
}
