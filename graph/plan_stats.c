/* SPDX-License-Identifier: MIT */
/*
 * The accumulators of a plan's stats nodes: one sl_stats per set (per
 * index along the node's `per` axes), and a pool of local accumulators a
 * task folds its chunk into before merging it into the set under the set's
 * lock, so tasks on different workers do the counting at once and hold a
 * lock only for the merge.  And the public read-out, sl_plan_stats.
 *
 * DESIGN: lock order: a set's lock, or the pool's, never both.  The pool
 * grows to as many local accumulators as tasks fold at once (the workers)
 * and is kept across runs; a run only resets the sets.  Statistics of a
 * run that failed a chunk of the node, or ran only part of it (a run split
 * across processes), are refused rather than given over fewer elements.
 */
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/plan.h>
#include <sluice/stats.h>

#include "core_internal.h"
#include "graph_internal.h"

/* Local accumulators kept for reuse at most. */
#define STATS_POOL_MAX 64

/* Most bytes the sets of one stats node may hold. */
#define STATS_SETS_MAX_BYTES (UINT64_C(4) << 30)

struct sl__stats_run {
    const struct sl__stats_spec *spec; /* the node's (the graph outlives the plan) */
    sl_dtype dtype;                    /* the input's */
    struct sl_allocator alloc;         /* the plan's */
    sl_stats **sets;                   /* spec->n_sets accumulators */
    pthread_mutex_t *locks;            /* one per set */
    pthread_mutex_t pool_lock;         /* guards pool and n_pool */
    sl_stats *pool[STATS_POOL_MAX];    /* empty local accumulators */
    uint32_t n_pool;                   /* in `pool` */
};

sl_status
sl__plan_stats_init(sl_plan *plan, struct sl__put_state *ps, struct sl_error *err)
{
    const struct sl__node *n = sl__graph_node(plan->graph, ps->node);
    const struct sl__stats_spec *spec = n->stats;
    sl_dtype dtype = sl__graph_node(plan->graph, n->inputs[0])->dtype;
    uint64_t bytes = sl_stats_bytes(dtype, &spec->opts);
    if (bytes != 0 && spec->n_sets > STATS_SETS_MAX_BYTES / bytes)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "stats \"%s\": %" PRIu64 " sets of %" PRIu64 " bytes each pass %" PRIu64
                            " GiB; use fewer \"per\" axes or bins",
                            n->name, spec->n_sets, bytes, STATS_SETS_MAX_BYTES >> 30);
    struct sl__stats_run *r = sl_alloc_zeroed(&plan->alloc, 1, sizeof(*r), 0);
    if (r == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for stats \"%s\"", n->name);
    *r = (struct sl__stats_run){.spec = spec, .dtype = dtype, .alloc = plan->alloc};
    ps->stats = r;
    pthread_mutex_init(&r->pool_lock, NULL);
    r->sets = sl_alloc_zeroed(&plan->alloc, (size_t)spec->n_sets, sizeof(*r->sets), 0);
    r->locks = sl_alloc_zeroed(&plan->alloc, (size_t)spec->n_sets, sizeof(*r->locks), 0);
    if (r->sets == NULL || r->locks == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory for the %" PRIu64 " sets of \"%s\"",
                            spec->n_sets, n->name);
    for (uint64_t k = 0; k < spec->n_sets; k++)
        pthread_mutex_init(&r->locks[k], NULL); /* the sets are made when first folded into */
    if (spec->omero != NULL) {
        ps->omero = sl_alloc(&plan->alloc, sizeof(*ps->omero), 0);
        if (ps->omero == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "no memory for stats \"%s\"", n->name);
        *ps->omero = SL_ERROR_INIT;
    }
    return SL_OK;
}

void
sl__plan_stats_reset(struct sl__put_state *ps)
{
    struct sl__stats_run *r = ps->stats;
    for (uint64_t k = 0; r != NULL && k < r->spec->n_sets; k++)
        if (r->sets[k] != NULL)
            sl_stats_reset(r->sets[k]);
    if (ps->omero != NULL) {
        *ps->omero = SL_ERROR_INIT;
        sl_error_set(ps->omero, SL_ESTATE, NULL, "the plan has not run");
    }
}

void
sl__plan_stats_fini(sl_plan *plan, struct sl__put_state *ps)
{
    struct sl__stats_run *r = ps->stats;
    sl_free(&plan->alloc, ps->omero, sizeof(*ps->omero));
    ps->omero = NULL;
    if (r == NULL)
        return;
    for (uint64_t k = 0; k < r->spec->n_sets; k++) {
        if (r->sets != NULL)
            sl_stats_free(r->sets[k]);
        if (r->locks != NULL)
            pthread_mutex_destroy(&r->locks[k]);
    }
    for (uint32_t k = 0; k < r->n_pool; k++)
        sl_stats_free(r->pool[k]);
    pthread_mutex_destroy(&r->pool_lock);
    sl_free(&plan->alloc, r->sets, (size_t)r->spec->n_sets * sizeof(*r->sets));
    sl_free(&plan->alloc, r->locks, (size_t)r->spec->n_sets * sizeof(*r->locks));
    sl_free(&plan->alloc, r, sizeof(*r));
    ps->stats = NULL;
}

/* An empty local accumulator: one from the pool, or a new one. */
static sl_stats *
stats_take(struct sl__stats_run *r, struct sl_error *err)
{
    pthread_mutex_lock(&r->pool_lock);
    sl_stats *s = r->n_pool > 0 ? r->pool[--r->n_pool] : NULL;
    pthread_mutex_unlock(&r->pool_lock);
    return s != NULL ? s : sl_stats_create(r->dtype, &r->spec->opts, &r->alloc, err);
}

/* Give local accumulator `s` back, emptied. */
static void
stats_give(struct sl__stats_run *r, sl_stats *s)
{
    sl_stats_reset(s);
    pthread_mutex_lock(&r->pool_lock);
    bool kept = r->n_pool < STATS_POOL_MAX;
    if (kept)
        r->pool[r->n_pool++] = s;
    pthread_mutex_unlock(&r->pool_lock);
    if (!kept)
        sl_stats_free(s);
}

/* Set `k`'s accumulator, made now if it has none; call with its lock
 * held.  Made lazily, a plan that never runs (sluice run's check of the
 * graph) makes none, and each costs its half megabyte only once used. */
static sl_stats *
stats_set(const struct sl__stats_run *r, uint64_t k, struct sl_error *err)
{
    if (r->sets[k] == NULL)
        r->sets[k] = sl_stats_create(r->dtype, &r->spec->opts, &r->alloc, err);
    return r->sets[k];
}

/* Fold `v` into set `k` through a local accumulator. */
static sl_status
stats_fold_set(struct sl__stats_run *r, uint64_t k, const struct sl_view *v, struct sl_error *err)
{
    sl_stats *local = stats_take(r, err);
    if (local == NULL)
        return err != NULL ? err->code : SL_ENOMEM;
    sl_status st = sl_stats_add(local, v, err);
    if (st == SL_OK) {
        pthread_mutex_lock(&r->locks[k]);
        sl_stats *set = stats_set(r, k, err);
        st = set != NULL ? sl_stats_merge(set, local, err) : err != NULL ? err->code : SL_ENOMEM;
        pthread_mutex_unlock(&r->locks[k]);
    }
    stats_give(r, local);
    return st;
}

sl_status
sl__plan_stats_fold(struct sl__put_state *ps, const struct sl_block *block, struct sl_error *err)
{
    struct sl__stats_run *r = ps->stats;
    const struct sl__stats_spec *spec = r->spec;
    if (spec->n_per == 0)
        return stats_fold_set(r, 0, &block->view, err);
    /* Every index of the per axes the block covers, odometer-style: the
     * block's slice at that index goes to the index's set. */
    uint64_t idx[SL_MAX_RANK];
    for (uint32_t k = 0; k < spec->n_per; k++)
        idx[k] = block->region.start[spec->per[k]];
    size_t elem = sl_dtype_size(block->view.dtype);
    for (;;) {
        struct sl_view v = block->view;
        uint64_t set = 0;
        for (uint32_t k = 0; k < spec->n_per; k++) {
            uint32_t d = spec->per[k];
            ptrdiff_t at = (ptrdiff_t)(idx[k] - block->region.start[d]);
            v.data = (char *)v.data + at * (ptrdiff_t)v.stride[d] * (ptrdiff_t)elem;
            v.shape[d] = 1;
            set = set * spec->per_extent[k] + idx[k];
        }
        SL_TRY(stats_fold_set(r, set, &v, err));
        uint32_t k = spec->n_per;
        while (k-- > 0) {
            uint32_t d = spec->per[k];
            if (++idx[k] < block->region.stop[d])
                break;
            idx[k] = block->region.start[d];
        }
        if (k == UINT32_MAX)
            return SL_OK;
    }
}

/* The put state of node `node`, or NULL.  (Not sl__plan_put: plan_status.c
 * resets the accumulators, so this file calls nothing of it.) */
static const struct sl__put_state *
stats_put(const sl_plan *plan, uint32_t node)
{
    for (uint32_t i = 0; i < plan->n_puts; i++)
        if (plan->puts[i].node == node)
            return &plan->puts[i];
    return NULL;
}

/* The stats state of node `node`, or NULL after recording why not. */
static const struct sl__stats_run *
stats_of(const sl_plan *plan, uint32_t node, struct sl_error *err)
{
    const struct sl__put_state *ps = stats_put(plan, node);
    if (ps == NULL || ps->stats == NULL) {
        sl_error_set(err, SL_EINVAL, NULL, "node %" PRIu32 " is no stats node of the plan", node);
        return NULL;
    }
    return ps->stats;
}

sl_status
sl_plan_stats_info(const sl_plan *plan, uint32_t node, struct sl_stats_info *out,
                   struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (plan == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "sl_plan_stats_info: NULL argument");
    const struct sl__stats_run *r = stats_of(plan, node, err);
    if (r == NULL)
        return SL_EINVAL;
    memset(out, 0, sizeof(*out));
    out->n_sets = r->spec->n_sets;
    out->n_per = r->spec->n_per;
    memcpy(out->per, r->spec->per, sizeof(out->per));
    memcpy(out->per_extent, r->spec->per_extent, sizeof(out->per_extent));
    out->n_percentiles = r->spec->opts.n_percentiles;
    memcpy(out->percentile_q, r->spec->opts.percentiles, sizeof(out->percentile_q));
    out->omero = r->spec->omero != NULL;
    return SL_OK;
}

/* SL_OK when every chunk of the stats node was folded in the last run,
 * else why not, naming the first chunk that was not. */
static sl_status
stats_complete(const sl_plan *plan, uint32_t node, struct sl_error *err)
{
    const struct sl__put_state *ps = stats_put(plan, node);
    const struct sl__node *n = sl__graph_node(plan->graph, node);
    if (plan->opts.n_parts > 1)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "stats \"%s\": a run split into %" PRIu32 " parts folds only its "
                            "part's chunks; statistics are not gathered across parts",
                            n->name, plan->opts.n_parts);
    for (uint64_t k = 0; k < ps->n_chunks; k++) {
        uint8_t code = sl__put_state_code(ps, k);
        if (code == SL_OK)
            continue;
        uint64_t coords[SL_MAX_RANK];
        char at[96];
        sl_grid_coords_of(&n->grid, k, coords);
        sl_shape_format(n->grid.rank, coords, at, sizeof(at));
        return sl_error_set(err, SL_EUPSTREAM, NULL,
                            "stats \"%s\": chunk %s %s (%s), so the statistics would leave it "
                            "out",
                            n->name, at, code == SL__CODE_PENDING ? "did not run" : "failed",
                            code == SL__CODE_PENDING ? "not run" : sl_status_name((sl_status)code));
    }
    return SL_OK;
}

sl_status
sl_plan_stats(const sl_plan *plan, uint32_t node, uint64_t set, struct sl_stats_result *out,
              struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (plan == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "sl_plan_stats: NULL argument");
    const struct sl__stats_run *r = stats_of(plan, node, err);
    if (r == NULL)
        return SL_EINVAL;
    if (set >= r->spec->n_sets)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "stats set %" PRIu64 " of %" PRIu64 " does not exist", set,
                            r->spec->n_sets);
    SL_TRY(stats_complete(plan, node, err));
    /* A set no chunk folded into (an empty array) gets its empty
     * accumulator here; its lock also keeps two results of one set (which
     * fill its histogram) apart. */
    pthread_mutex_lock(&r->locks[set]);
    const sl_stats *s = stats_set(r, set, err);
    sl_status st = s != NULL ? sl_stats_result(s, out, err) : err != NULL ? err->code : SL_ENOMEM;
    pthread_mutex_unlock(&r->locks[set]);
    return st;
}
