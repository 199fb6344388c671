/* SPDX-License-Identifier: MIT */
/*
 * Batched reads: checking the selections and their outputs, planning them
 * together, running the chunks through the caller's "parallel for" and
 * recording each selection's outcome.  Unsharded arrays read and decode one
 * chunk per iteration; sharded arrays go through batch_shard.c; both
 * deliver or fail chunks through batch_run.c.
 *
 * DESIGN: each chunk of the plan is delivered (decoded once, then copied to
 * or filled into every selection it serves) or failed exactly once, by one
 * iteration, and different chunks write disjoint bytes of every output, so
 * outputs need no locks.  Failures are rare and take a mutex: a selection
 * keeps the error of the earliest chunk of the plan that failed it, so the
 * outcome does not depend on the order workers ran in.  Codec contexts are
 * per worker and live for the whole call, so scratch buffers are reused
 * from one phase to the next.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sluice/batch.h>

#include <sluice/array_io.h>

#include "batch_internal.h"

/* ---- unsharded arrays ---------------------------------------------------------------- */

/* How far ahead of the chunk it reads each item hints a remote store: the
 * store takes what its window allows and ignores the rest. */
#define BATCH_LOOKAHEAD 64

/* How many unclaimed chunks, from the first, an iteration looks through for
 * one whose fetch has come. */
#define COME_SCAN 8

/* The chunk iteration `i` reads.  From a store that fetches ahead, the
 * first of the next COME_SCAN unclaimed chunks whose fetch has come, else
 * the first unclaimed one (which it then waits for): the bodies of a
 * window's requests come in no set order, and decoding one as soon as it
 * is there overlaps the decoding with the rest of the transfer.  Every
 * iteration claims exactly one chunk, each chunk once: there are as many
 * iterations as chunks, and a claim is an atomic exchange. */
static size_t
claim_chunk(struct sl__batch_run *run, size_t i)
{
    if (run->claimed == NULL)
        return i;
    size_t n = run->plan.n_chunks;
    size_t from = atomic_load_explicit(&run->claim_from, memory_order_relaxed);
    unsigned seen = 0;
    for (size_t c = from; c < n && seen < COME_SCAN; c++) {
        if (atomic_load_explicit(&run->claimed[c], memory_order_relaxed))
            continue;
        seen++;
        uint64_t coords[SL_MAX_RANK];
        sl_grid_coords_of(&run->a->chunk_grid, run->plan.chunks[c].chunk, coords);
        if (sl__array_chunk_fetched(run->a, coords) &&
            !atomic_exchange_explicit(&run->claimed[c], 1, memory_order_relaxed))
            return c;
    }
    for (size_t c = from; c < n; c++)
        if (!atomic_exchange_explicit(&run->claimed[c], 1, memory_order_relaxed)) {
            /* Every chunk before c was claimed when looked at: move the
             * mark on, unless another claim moved it further. */
            size_t cur = from;
            while (cur < c + 1 &&
                   !atomic_compare_exchange_weak_explicit(
                       &run->claim_from, &cur, c + 1, memory_order_relaxed, memory_order_relaxed)) {
            }
            return c;
        }
    return i; /* not reached: the claims outnumber the iterations */
}

static void
chunk_item(struct sl__batch_run *run, void *arg, size_t i, sl_codec_ctx *ctx)
{
    (void)arg;
    size_t c = claim_chunk(run, i);
    struct sl_error e = SL_ERROR_INIT;
    uint64_t coords[SL_MAX_RANK];
    sl_grid_coords_of(&run->a->chunk_grid, run->plan.chunks[c].chunk, coords);
    uint8_t *target = NULL;
    size_t in_sel = SIZE_MAX;
    bool missing = false;
    sl_status st =
        ctx != NULL ? SL_OK : sl_error_set(&e, SL_ENOMEM, NULL, "no memory for a codec context");
    if (st == SL_OK)
        st = sl__batch_target(run, c, ctx, &target, &in_sel, &e);
    /* Keep the store's fetches ahead going past what the first hints took. */
    if (c + BATCH_LOOKAHEAD < run->plan.n_chunks) {
        uint64_t next[SL_MAX_RANK];
        sl_grid_coords_of(&run->a->chunk_grid, run->plan.chunks[c + BATCH_LOOKAHEAD].chunk, next);
        sl_array_prefetch_chunk(run->a, next);
    }
    if (st == SL_OK)
        st = sl__chunk_fetch(run->a, coords, target, ctx, &missing, &e);
    sl__error_locate(&e, NULL, run->a->meta.rank, coords);
    sl__batch_finish(run, c, st, missing, target, in_sel, &e);
}

/* Name every planned chunk to a store that fetches ahead, so a remote
 * store has the whole batch in flight (within its window) while the
 * workers read chunk after chunk. */
static void
hint_chunks(struct sl__batch_run *run)
{
    for (size_t c = 0; c < run->plan.n_chunks; c++) {
        uint64_t coords[SL_MAX_RANK];
        sl_grid_coords_of(&run->a->chunk_grid, run->plan.chunks[c].chunk, coords);
        sl_array_prefetch_chunk(run->a, coords);
    }
}

/* ---- running a batch ------------------------------------------------------------------ */

/* Fail every selection not yet failed with `code` (a whole-call failure). */
static void
fail_all(struct sl__batch_run *run, const struct sl_error *e)
{
    for (size_t s = 0; s < run->n; s++)
        sl__batch_fail_selection_locked(run, s, SIZE_MAX - 1, e);
}

/* Fail the chunks no iteration delivered (the executor stopped early, or
 * the shard reader had no memory), with `e`. */
static void
fail_undone(struct sl__batch_run *run, struct sl_error *e)
{
    for (size_t c = 0; c < run->plan.n_chunks; c++)
        if (!run->done[c])
            sl__batch_fail_chunk(run, c, e);
}

static void
fill_stats(const struct sl__batch_run *run, struct sl_batch_stats *stats)
{
    if (stats == NULL)
        return;
    *stats = (struct sl_batch_stats){0};
    for (size_t s = 0; s < run->n; s++)
        stats->n_selections_failed += run->status[s] != SL_OK;
    stats->n_chunks = run->plan.n_chunks;
    stats->n_parts = run->plan.n_sels;
    /* Relaxed: the parallel loop has returned, and its join orders every
     * worker's increments before these loads. */
    stats->n_decoded = atomic_load_explicit(&run->n_decoded, memory_order_relaxed);
    stats->n_direct = atomic_load_explicit(&run->n_direct, memory_order_relaxed);
    stats->n_missing = atomic_load_explicit(&run->n_missing, memory_order_relaxed);
    stats->n_objects = run->plan.n_objects;
    stats->n_index_reads = atomic_load_explicit(&run->n_index_reads, memory_order_relaxed);
    stats->n_requests = atomic_load_explicit(&run->n_requests, memory_order_relaxed);
    stats->bytes_requested = atomic_load_explicit(&run->bytes_requested, memory_order_relaxed);
}

/* Plan the selections still valid and read their chunks. */
static void
batch_execute(struct sl__batch_run *run)
{
    const sl_array *a = run->a;
    struct sl_error e = SL_ERROR_INIT;
    const uint64_t *per_shard = a->meta.sharded ? a->meta.per_shard : NULL;
    sl_status st = sl__batch_plan_build(&run->plan, &a->chunk_grid, per_shard, run->n,
                                        run->geom.regions, run->status, &a->alloc, &e);
    if (st == SL_OK && run->plan.n_chunks > 0) {
        run->done = sl_alloc_zeroed(&a->alloc, run->plan.n_chunks, 1, 0);
        if (run->done == NULL)
            st = sl_error_set(&e, SL_ENOMEM, NULL, "no memory for %zu chunk states",
                              run->plan.n_chunks);
    }
    if (st == SL_OK && run->plan.n_chunks > 0) {
        /* Sharded batches coalesce their ranges, which the hints would not
         * match: only whole chunks are hinted. */
        if (!a->meta.sharded && sl_store_reads_ahead(a->store)) {
            /* Without memory for the claims, chunks are read in plan order. */
            if (sl__store_fetches_ahead(a->store))
                run->claimed = sl_alloc_zeroed(&a->alloc, run->plan.n_chunks, 1, 0);
            atomic_store_explicit(&run->claim_from, 0, memory_order_relaxed);
            hint_chunks(run);
        }
        st = a->meta.sharded ? sl__batch_read_shards(run, &e)
                             : sl__batch_loop(run, run->plan.n_chunks, chunk_item, NULL);
        if (st != SL_OK) {
            sl_error_set(&e, st, NULL, "the parallel executor stopped before this chunk was read");
            fail_undone(run, &e);
        }
    } else if (st != SL_OK) {
        fail_all(run, &e);
    }
    sl_free(&a->alloc, run->done, run->plan.n_chunks);
    run->done = NULL;
    sl_free(&a->alloc, (void *)run->claimed, run->plan.n_chunks);
    run->claimed = NULL;
}

/* Set up `run` for `n` selections: outcomes, per-worker contexts. */
static sl_status
batch_begin(struct sl__batch_run *run, const sl_array *a, size_t n, const struct sl_region *regions,
            const struct sl_batch_opts *opts, sl_status *status, struct sl_error *errors,
            struct sl_error *err)
{
    struct sl_batch_opts o = opts != NULL ? *opts : SL_BATCH_OPTS_DEFAULT;
    memset(run, 0, sizeof(*run));
    run->a = a;
    run->n = n;
    run->gap_bytes = o.coalesce_gap_bytes;
    run->max_bytes = o.coalesce_max_bytes;
    run->par = o.par;
    run->ctx0 = o.ctx;
    run->errors = errors;
    run->first = SL_ERROR_INIT;
    run->first_sel = SIZE_MAX;
    run->geom = (struct sl__batch_geom){.grid = &a->chunk_grid,
                                        .chunk_shape = a->layout.shape,
                                        .elem_bytes = a->elem_bytes,
                                        .fill = a->meta.fill,
                                        .regions = regions};
    run->n_workers = sl_parallel_workers(o.par);
    run->ctxs = sl_alloc_zeroed(&a->alloc, run->n_workers, sizeof(sl_codec_ctx *), 0);
    run->status = status != NULL ? status : sl_alloc_zeroed(&a->alloc, n, sizeof(sl_status), 0);
    run->failed_at = sl_alloc_zeroed(&a->alloc, n, sizeof(size_t), 0);
    if (run->ctxs == NULL || (n > 0 && (run->status == NULL || run->failed_at == NULL)))
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for a batch of %zu selections", n);
    for (unsigned w = 0; w < run->n_workers; w++)
        run->ctxs[w] = o.worker_ctxs != NULL ? o.worker_ctxs[w] : NULL;
    if (run->ctxs[0] == NULL)
        run->ctxs[0] = o.ctx;
    run->worker_ctxs = o.worker_ctxs;
    for (size_t s = 0; s < n; s++) {
        run->status[s] = SL_OK;
        if (errors != NULL)
            errors[s] = SL_ERROR_INIT;
    }
    pthread_mutex_init(&run->lock, NULL);
    return SL_OK;
}

/* Release the run; report its outcome and statistics. */
static sl_status
batch_end(struct sl__batch_run *run, sl_status *status, const struct sl_batch_opts *opts,
          struct sl_error *err)
{
    const sl_array *a = run->a;
    fill_stats(run, opts != NULL ? opts->stats : NULL);
    for (unsigned w = 0; w < run->n_workers && run->ctxs != NULL; w++)
        if (run->ctxs[w] != run->ctx0 &&
            (run->worker_ctxs == NULL || run->ctxs[w] != run->worker_ctxs[w]))
            sl_codec_ctx_destroy(run->ctxs[w]);
    sl__batch_plan_fini(&run->plan);
    sl_status st = run->first_sel != SIZE_MAX ? run->first.code : SL_OK;
    if (st != SL_OK)
        sl__error_forward(err, &run->first);
    sl_free(&a->alloc, run->ctxs, run->n_workers * sizeof(sl_codec_ctx *));
    sl_free(&a->alloc, run->failed_at, run->n * sizeof(size_t));
    if (status == NULL)
        sl_free(&a->alloc, run->status, run->n * sizeof(sl_status));
    pthread_mutex_destroy(&run->lock);
    return st;
}

/* Release what batch_begin got before it failed (for lack of memory). */
static void
batch_abandon(struct sl__batch_run *run, sl_status *status)
{
    const sl_array *a = run->a;
    for (size_t s = 0; s < run->n; s++) {
        if (status != NULL)
            status[s] = SL_ENOMEM;
        if (run->errors != NULL) {
            run->errors[s] = SL_ERROR_INIT;
            sl_error_set(&run->errors[s], SL_ENOMEM, NULL, "selection %zu: not read", s);
        }
    }
    sl_free(&a->alloc, run->ctxs, run->n_workers * sizeof(sl_codec_ctx *));
    sl_free(&a->alloc, run->failed_at, run->n * sizeof(size_t));
    if (status == NULL)
        sl_free(&a->alloc, run->status, run->n * sizeof(sl_status));
}

/* Fail selection `s` before planning (its region or buffer is wrong). */
static void
fail_early(struct sl__batch_run *run, size_t s, const struct sl_error *e)
{
    sl__batch_fail_selection_locked(run, s, 0, e);
}

static sl_status
check_call(const sl_array *a, size_t n, const struct sl_region *regions,
           const struct sl_batch_opts *opts, struct sl_error *err)
{
    if (a == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "array is missing");
    const struct sl_parallel *par = opts != NULL ? opts->par : NULL;
    if (par != NULL && par->run != NULL && par->n_workers == 0)
        return sl_error_set(err, SL_EINVAL, NULL, "the parallel executor has no workers");
    if (n > 0 && regions == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "%zu selections but no regions", n);
    return SL_OK;
}

sl_status
sl_array_read_batch(const sl_array *a, size_t n, const struct sl_region *regions, void *const *bufs,
                    const size_t *buf_bytes, const struct sl_batch_opts *opts, sl_status *status,
                    struct sl_error *errors, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(check_call(a, n, regions, opts, err));
    if (n > 0 && (bufs == NULL || buf_bytes == NULL))
        return sl_error_set(err, SL_EINVAL, NULL, "%zu selections but no buffers or sizes", n);
    struct sl__batch_run run;
    if (batch_begin(&run, a, n, regions, opts, status, errors, err) != SL_OK) {
        batch_abandon(&run, status);
        return SL_ENOMEM;
    }
    run.geom.out.bufs = bufs;
    for (size_t s = 0; s < n; s++) {
        struct sl_error e = SL_ERROR_INIT;
        uint64_t count;
        size_t bytes = 0;
        sl_status st = sl__batch_check_selection(s, &regions[s], a->meta.rank, a->meta.shape, &e);
        if (st == SL_OK)
            st = sl_region_count(&regions[s], &count, &e);
        if (st == SL_OK && (count > SIZE_MAX || !sl_size_mul_fits(count, a->elem_bytes, &bytes)))
            st = sl_error_set(&e, SL_EOVERFLOW, NULL, "selection %zu of %" PRIu64 " elements", s,
                              count);
        if (st == SL_OK && bytes > 0 && (bufs[s] == NULL || buf_bytes[s] < bytes))
            st = sl_error_set(&e, SL_EINVAL, NULL,
                              "selection %zu needs %zu bytes, its buffer has %zu", s, bytes,
                              bufs[s] == NULL ? 0 : buf_bytes[s]);
        if (st != SL_OK)
            fail_early(&run, s, &e);
    }
    batch_execute(&run);
    return batch_end(&run, status, opts, err);
}

/* ---- concatenated outputs --------------------------------------------------------------- */

/* The concatenated shape; `*bad` names the offending selection on failure
 * (SIZE_MAX when none does). */
static sl_status
concat_shape(const sl_array *a, size_t n, const struct sl_region *regions, uint32_t axis,
             uint64_t *shape, size_t *bytes, size_t *bad, struct sl_error *err)
{
    uint32_t rank = a->meta.rank;
    *bad = SIZE_MAX;
    if (n == 0 || regions == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "no selections to concatenate");
    if (axis >= rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "concatenation axis %" PRIu32 " but the array has rank %" PRIu32, axis,
                            rank);
    for (size_t s = 0; s < n; s++) {
        const struct sl_region *r = &regions[s];
        *bad = s;
        if (r->rank != rank)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "selection %zu has rank %" PRIu32 ", the array has rank %" PRIu32,
                                s, r->rank, rank);
        for (uint32_t d = 0; d < rank; d++) {
            if (r->start[d] > r->stop[d])
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "selection %zu starts at %" PRIu64 " after its stop %" PRIu64
                                    " in dimension %" PRIu32,
                                    s, r->start[d], r->stop[d], d);
            uint64_t ext = r->stop[d] - r->start[d];
            if (s > 0 && d != axis && ext != shape[d])
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "selection %zu spans %" PRIu64 " in dimension %" PRIu32
                                    ", selection 0 spans %" PRIu64
                                    "; concatenated selections must agree outside axis %" PRIu32,
                                    s, ext, d, shape[d], axis);
            if (s == 0)
                shape[d] = ext;
            else if (d == axis && !sl_u64_add_fits(shape[d], ext, &shape[d]))
                return sl_error_set(err, SL_EOVERFLOW, NULL, "concatenated extent overflows");
        }
    }
    *bad = SIZE_MAX;
    return sl_shape_bytes(rank, shape, a->elem_bytes, bytes, err);
}

sl_status
sl_array_batch_concat_shape(const sl_array *a, size_t n, const struct sl_region *regions,
                            uint32_t axis, uint64_t *shape, size_t *bytes, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    size_t bad;
    if (a == NULL || shape == NULL || bytes == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "array, shape or bytes is missing");
    return concat_shape(a, n, regions, axis, shape, bytes, &bad, err);
}

/* A layout error: the offending selection is invalid, the others canceled. */
static sl_status
concat_refuse(size_t n, size_t bad, sl_status code, sl_status *status, struct sl_error *errors,
              const struct sl_error *e, struct sl_error *err)
{
    for (size_t s = 0; s < n; s++) {
        sl_status st = s == bad || bad == SIZE_MAX ? code : SL_ECANCELED;
        if (status != NULL)
            status[s] = st;
        if (errors != NULL) {
            errors[s] = SL_ERROR_INIT;
            if (st == code)
                errors[s] = *e;
            else
                sl_error_set(&errors[s], st, NULL,
                             "selection %zu: not read, the concatenated layout is invalid", s);
        }
    }
    sl__error_forward(err, e);
    return code;
}

sl_status
sl_array_read_batch_concat(const sl_array *a, size_t n, const struct sl_region *regions,
                           uint32_t axis, void *buf, size_t buf_bytes,
                           const struct sl_batch_opts *opts, sl_status *status,
                           struct sl_error *errors, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(check_call(a, n, regions, opts, err));
    uint64_t shape[SL_MAX_RANK];
    size_t bytes, bad;
    struct sl_error e = SL_ERROR_INIT;
    sl_status st = concat_shape(a, n, regions, axis, shape, &bytes, &bad, &e);
    if (st == SL_OK && (buf_bytes < bytes || (buf == NULL && bytes > 0)))
        st = sl_error_set(&e, SL_EINVAL, NULL,
                          "buffer of %zu bytes is smaller than the concatenated selections' %zu",
                          buf == NULL ? 0 : buf_bytes, bytes);
    if (st != SL_OK)
        return concat_refuse(n, bad, st, status, errors, &e, err);
    uint64_t *offsets = sl_alloc_zeroed(&a->alloc, n, sizeof(uint64_t), 0);
    struct sl__batch_run run;
    if (offsets == NULL || batch_begin(&run, a, n, regions, opts, status, errors, err) != SL_OK) {
        if (offsets != NULL)
            batch_abandon(&run, status);
        sl_free(&a->alloc, offsets, n * sizeof(uint64_t));
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for a batch of %zu selections", n);
    }
    run.geom.out = (struct sl__batch_out){.buf = buf, .axis = axis, .offsets = offsets};
    memcpy(run.geom.out.dims, shape, sizeof(shape));
    uint64_t at = 0;
    for (size_t s = 0; s < n; s++) {
        offsets[s] = at;
        at += regions[s].stop[axis] - regions[s].start[axis];
        struct sl_error se = SL_ERROR_INIT;
        if (sl__batch_check_selection(s, &regions[s], a->meta.rank, a->meta.shape, &se) != SL_OK)
            fail_early(&run, s, &se);
    }
    batch_execute(&run);
    st = batch_end(&run, status, opts, err);
    sl_free(&a->alloc, offsets, n * sizeof(uint64_t));
    return st;
}
