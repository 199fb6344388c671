/* SPDX-License-Identifier: MIT */
/*
 * Reads through a transaction: what is stored, with what the transaction
 * staged laid over it (whole chunks replace, partial chunks replace the
 * elements they wrote).
 *
 * DESIGN: a read of one unit holds the array's stripe lock of that unit's
 * object while it reads storage and then copies staged data.  A flush
 * writes the object and takes the unit out of the staging table under the
 * same lock, so the read sees the unit staged over the old object, or the
 * new object without it, never the old object without the staged data.
 * Lock order: array stripe, then transaction stripe.  Chunks staged whole
 * are served from memory without touching storage (decoded, when staged
 * encoded: encode_on_write).  Reads without a codec context make one.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/array_io.h>

#include "txn_internal.h"

/* What a look at a staged chunk found. */
typedef enum staged_found {
    STAGED_NONE,    /* nothing staged */
    STAGED_PARTIAL, /* a partial chunk (laid over `buf` unless complete_only) */
    STAGED_WHOLE,   /* a complete chunk, copied into `buf` */
    STAGED_FAILED,  /* decoding it failed: `*status` and `*err` say why */
} staged_found;

static staged_found
staged_overlay(sl_txn *t, uint64_t index, uint64_t k, void *buf, bool complete_only,
               sl_codec_ctx *ctx, sl_status *status, struct sl_error *err)
{
    struct sl__txn_stripe *s = sl__txn_stripe_of(t, index);
    staged_found found = STAGED_NONE;
    pthread_mutex_lock(&s->mu);
    const struct sl__txn_unit *u = sl__txn_table_find(s, index);
    const struct sl__txn_chunk *c = u != NULL ? u->slots[k] : NULL;
    if (c != NULL) {
        found = c->partial ? STAGED_PARTIAL : STAGED_WHOLE;
        if ((!c->partial || !complete_only) &&
            (*status = sl__txn_chunk_overlay(t, c, buf, ctx, err)) != SL_OK)
            found = STAGED_FAILED;
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

/* `ctx`, or a new context into `*own` (NULL with SL_ENOMEM in `err`). */
static sl_codec_ctx *
ctx_or_own(const sl_array *a, sl_codec_ctx *ctx, sl_codec_ctx **own, struct sl_error *err)
{
    *own = ctx == NULL ? sl_codec_ctx_create(&a->alloc, err) : NULL;
    return ctx != NULL ? ctx : *own;
}

sl_status
sl_txn_read_chunk(sl_txn *t, const uint64_t *coords, void *buf, size_t buf_bytes, sl_codec_ctx *ctx,
                  bool *missing, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (t == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "transaction is missing");
    const sl_array *a = t->a;
    SL_TRY(sl__array_check_coords(a, coords, err));
    if (buf == NULL || buf_bytes < a->layout.n_bytes)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "chunk buffer of %zu bytes is smaller than a chunk (%zu bytes)",
                            buf != NULL ? buf_bytes : 0, a->layout.n_bytes);
    uint64_t unit[SL_MAX_RANK], index, k;
    sl__txn_unit_of(t, coords, unit, &index, &k);
    sl_codec_ctx *own;
    if ((ctx = ctx_or_own(a, ctx, &own, err)) == NULL)
        return SL_ENOMEM;
    pthread_mutex_t *lock = sl__array_stripe(a, unit);
    bool absent = false;
    sl_status st = SL_OK;
    pthread_mutex_lock(lock);
    staged_found found = staged_overlay(t, index, k, buf, true, ctx, &st, err);
    if (found != STAGED_WHOLE && found != STAGED_FAILED) {
        st = sl_array_read_chunk(a, coords, buf, buf_bytes, ctx, &absent, err);
        if (st == SL_OK)
            found = staged_overlay(t, index, k, buf, false, ctx, &st, err);
        if (st == SL_OK && found != STAGED_NONE)
            absent = false;
    }
    pthread_mutex_unlock(lock);
    sl_codec_ctx_destroy(own);
    if (found == STAGED_FAILED)
        sl__error_locate(err, NULL, a->meta.rank, coords);
    if (missing != NULL)
        *missing = absent;
    return st;
}

/* Lay the staged chunks of unit `u` meeting `part` over `dst` (dense, of
 * `dims`, at `origin`); with `dry`, only say in `*covered` whether staged
 * whole chunks cover `part`. */
static sl_status
unit_overlay_locked(const sl_txn *t, const struct sl__txn_unit *u, const struct sl_region *part,
                    void *dst, const uint64_t *dims, const uint64_t *origin, bool dry,
                    bool *covered, sl_codec_ctx *ctx, struct sl_error *err)
{
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, &t->a->chunk_grid, part);
    *covered = true;
    while (sl_grid_iter_next(&it)) {
        uint64_t unit[SL_MAX_RANK], index, k;
        sl__txn_unit_of(t, it.coords, unit, &index, &k);
        const struct sl__txn_chunk *c = u->slots[k];
        *covered = *covered && c != NULL && !c->partial;
        if (c != NULL && !dry) {
            sl_status st =
                sl__txn_chunk_copy_box(t, c, &it.chunk, &it.part, dst, dims, origin, ctx, err);
            if (st != SL_OK) {
                sl__error_locate(err, NULL, t->a->meta.rank, it.coords);
                return st;
            }
        }
    }
    return SL_OK;
}

/* One unit's part of a region read. */
struct read_part {
    sl_txn *t;
    uint64_t index;         /* the unit */
    struct sl_region part;  /* its part of the region */
    uint8_t *dst;           /* the region's buffer */
    const uint64_t *dims;   /* its shape */
    const uint64_t *origin; /* the region's start */
    struct sl_buf *tmp;     /* the part read from storage */
};

/* Staged data of the part over dst; with `only_if_covered`, nothing
 * unless staged whole chunks cover it.  `*copied`: whether it copied. */
static sl_status
part_overlay(const struct read_part *rp, bool only_if_covered, bool *copied, sl_codec_ctx *ctx,
             struct sl_error *err)
{
    struct sl__txn_stripe *s = sl__txn_stripe_of(rp->t, rp->index);
    sl_status st = SL_OK;
    *copied = false;
    pthread_mutex_lock(&s->mu);
    const struct sl__txn_unit *u = sl__txn_table_find(s, rp->index);
    bool covered = true;
    if (u != NULL && only_if_covered)
        (void)unit_overlay_locked(rp->t, u, &rp->part, NULL, NULL, NULL, true, &covered, NULL,
                                  NULL);
    if (u != NULL && covered) {
        st = unit_overlay_locked(rp->t, u, &rp->part, rp->dst, rp->dims, rp->origin, false,
                                 &covered, ctx, err);
        *copied = true;
    }
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* Read the part from storage into tmp, then into the region's buffer. */
static sl_status
part_read_stored(const struct read_part *rp, sl_codec_ctx *ctx, struct sl_error *err)
{
    const sl_array *a = rp->t->a;
    uint32_t rank = a->meta.rank;
    uint64_t count = 1, shape[SL_MAX_RANK], zero[SL_MAX_RANK] = {0}, at[SL_MAX_RANK];
    for (uint32_t d = 0; d < rank; d++) {
        shape[d] = rp->part.stop[d] - rp->part.start[d];
        at[d] = rp->part.start[d] - rp->origin[d];
        count *= shape[d];
    }
    /* The part lies inside one unit, whose bytes fit in memory. */
    size_t bytes = (size_t)count * a->elem_bytes;
    SL_TRY(sl_buf_reserve(rp->tmp, bytes, err));
    SL_TRY(sl_array_read_region(a, &rp->part, rp->tmp->data, bytes, ctx, NULL, err));
    sl__box_copy(&(struct sl__box){.base = rp->dst, .dims = rp->dims, .origin = at},
                 &(struct sl__box){.base = (void *)rp->tmp->data, .dims = shape, .origin = zero},
                 shape, rank, a->elem_bytes);
    return SL_OK;
}

sl_status
sl_txn_read_region(sl_txn *t, const struct sl_region *region, void *buf, size_t buf_bytes,
                   sl_codec_ctx *ctx, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (t == NULL || region == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "transaction or region is missing");
    const sl_array *a = t->a;
    SL_TRY(sl_region_check_within(region, a->meta.rank, a->meta.shape, err));
    uint64_t count;
    SL_TRY(sl_region_count(region, &count, err));
    if (count > SIZE_MAX / a->elem_bytes || buf_bytes < (size_t)count * a->elem_bytes ||
        (buf == NULL && count > 0))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "buffer of %zu bytes is smaller than the region's %" PRIu64 " elements",
                            buf != NULL ? buf_bytes : 0, count);
    if (sl_region_is_empty(region))
        return SL_OK;
    uint64_t dims[SL_MAX_RANK];
    sl_region_shape(region, dims);
    sl_codec_ctx *own;
    if ((ctx = ctx_or_own(a, ctx, &own, err)) == NULL)
        return SL_ENOMEM;
    struct sl_buf tmp = {.alloc = a->alloc};
    struct read_part rp = {.t = t, .dst = buf, .dims = dims, .origin = region->start, .tmp = &tmp};
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, &a->object_grid, region);
    sl_status st = SL_OK;
    while (st == SL_OK && sl_grid_iter_next(&it)) {
        rp.index = sl_grid_linear_index(&a->object_grid, it.coords);
        rp.part = it.part;
        pthread_mutex_t *lock = sl__array_stripe(a, it.coords);
        pthread_mutex_lock(lock);
        bool copied = false;
        st = part_overlay(&rp, true, &copied, ctx, err);
        if (st == SL_OK && !copied) {
            st = part_read_stored(&rp, ctx, err);
            if (st == SL_OK)
                st = part_overlay(&rp, false, &copied, ctx, err);
        }
        pthread_mutex_unlock(lock);
    }
    sl_buf_fini(&tmp);
    sl_codec_ctx_destroy(own);
    return st;
}
