/* SPDX-License-Identifier: MIT */
/*
 * Writing a transaction's units: a shard assembled from its staged inner
 * chunks and the stored ones it keeps, or an unsharded chunk, written once
 * through the store's atomic set, then reported and released.  Encoding
 * the staged chunks is txn_encode.c's.
 *
 * DESIGN: two passes.  First the complete staged chunks of every unit are
 * encoded on opts.par with no lock held: the units are flushing, so no
 * writer changes them, and readers only read.  Then each unit is assembled
 * and written under the array's stripe lock of its object, the lock every
 * read-modify-write of that object in this process takes and transaction
 * reads hold while they combine storage with staged data; the unit leaves
 * the staging table before that lock is released, so such a reader sees
 * either the staged unit over the old object or the new object.  No
 * parallel loop runs while a lock is held: a pool worker waiting for its
 * loop may run another task that wants the same lock.  A chunk the first
 * pass did not encode (no pool, a failed context, a cancelled loop) is
 * encoded in the second, which also reports its error.
 */
#include <string.h>

#include "txn_internal.h"

/* ---- assembling and writing ----------------------------------------------------------- */

/* Merge partial chunk `c` over the stored encoding `old` (NULL: absent)
 * and encode the result into `*v`. */
static sl_status
chunk_merge_encode(const sl_txn *t, const struct sl__txn_chunk *c, const uint8_t *old, size_t old_n,
                   sl_codec_ctx *ctx, struct sl__view *v, bool *empty, struct sl_error *err)
{
    const sl_array *a = t->a;
    struct sl_buf *chunk;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_CHUNK, a->layout.n_bytes, &chunk, err));
    if (old != NULL)
        SL_TRY(sl__chain_decode(&a->meta.chain, &a->layout, old, old_n, chunk->data, ctx, err));
    else
        sl__fill_elements(chunk->data, a->layout.n_bytes / a->elem_bytes, a->meta.fill,
                          a->elem_bytes);
    SL_TRY(sl__txn_chunk_overlay(t, c, chunk->data, ctx, err));
    return sl__txn_chunk_encode(t, chunk->data, ctx, v, empty, err);
}

/* Add inner chunk k of unit `u` to the shard being built: staged, merged
 * or kept from `old`. */
static sl_status
shard_add_inner(const sl_txn *t, const struct sl__txn_unit *u, uint64_t k,
                const struct sl__shard_old *old, struct sl__shard_builder *b, sl_codec_ctx *ctx,
                struct sl_error *err)
{
    const struct sl__txn_chunk *c = u->slots[k];
    const uint64_t *e = old->entries;
    bool had = e != NULL && e[2 * k] != SL__SHARD_EMPTY;
    const uint8_t *old_bytes = had ? old->bytes + e[2 * k] : NULL;
    size_t old_n = had ? (size_t)e[2 * k + 1] : 0;
    if (c == NULL)
        return had ? sl__shard_builder_add(b, k, old_bytes, old_n, err) : SL_OK;
    struct sl__view v = {NULL, 0};
    bool empty = false;
    if (c->partial)
        SL_TRY(chunk_merge_encode(t, c, old_bytes, old_n, ctx, &v, &empty, err));
    else
        SL_TRY(sl__txn_chunk_view(t, c, ctx, &v, &empty, err));
    return empty ? SL_OK : sl__shard_builder_add(b, k, v.data, v.size, err);
}

static bool
inner_is_outside(const sl_array *a, const uint64_t *inner)
{
    for (uint32_t d = 0; d < a->meta.rank; d++)
        if (inner[d] >= a->chunk_grid.n_chunks[d])
            return true;
    return false;
}

static unsigned
set_flags(const sl_txn *t)
{
    return t->opts.reread ? SL__SET_REREAD : 0;
}

/*
 * Set (or, with `data` NULL, delete) a unit's object `key`, tried again
 * after a transient failure as opts.retries asks: the bytes are in hand,
 * and a set or delete done twice leaves what one leaves.
 */
static sl_status
unit_store(const sl_txn *t, const char *key, const void *data, size_t size, struct sl_error *err)
{
    sl_store *s = t->a->store;
    sl_status st = data != NULL ? sl__store_set(s, key, data, size, set_flags(t), err)
                                : sl_store_delete(s, key, err);
    for (unsigned retry = 1; sl_status_transient(st) && retry <= t->opts.retries; retry++) {
        sl__retry_sleep(retry, t->opts.retry_backoff_s, 2.0);
        atomic_fetch_add_explicit(&((sl_txn *)t)->n_retries, 1, memory_order_relaxed);
        sl_error_clear(err);
        st = data != NULL ? sl__store_set(s, key, data, size, set_flags(t), err)
                          : sl_store_delete(s, key, err);
    }
    return st;
}

/* Assemble shard `u` into `out`: its staged chunks over `old` (the
 * stored shard's, when `u` is partial).  `*empty`: no chunk is left;
 * `*index` (may be NULL): its entries, native (offset, length) pairs
 * from the start of `out`, in `ctx`'s SL__SCR_INDEX_NEW. */
static sl_status
shard_assemble(const sl_txn *t, const struct sl__txn_unit *u, const char *key,
               const struct sl__shard_old *old, struct sl_buf *out, sl_codec_ctx *ctx, bool *empty,
               const uint64_t **index, struct sl_error *err)
{
    const sl_array *a = t->a;
    const struct sl__meta *m = &a->meta;
    struct sl_buf *entries;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_INDEX_NEW, (size_t)m->n_per_shard * 16, &entries, err));
    struct sl__shard_builder b;
    SL_TRY(sl__shard_builder_init(&b, m, out, (uint64_t *)entries->data, err));
    if (index != NULL)
        *index = (const uint64_t *)entries->data;
    for (uint64_t k = 0; k < m->n_per_shard; k++) {
        uint64_t inner[SL_MAX_RANK];
        sl__shard_inner_coords(m, u->coords, k, inner);
        if (inner_is_outside(a, inner))
            continue;
        sl_status st = shard_add_inner(t, u, k, old, &b, ctx, err);
        if (st != SL_OK) {
            sl__error_locate(err, key, m->rank, inner);
            return st;
        }
    }
    return sl__shard_builder_finish(&b, ctx, empty, err);
}

uint64_t
sl__txn_encoded_bytes(const sl_txn *t, const struct sl__txn_unit *u)
{
    uint64_t n = 0;
    for (uint64_t k = 0; k < t->n_per_unit; k++) {
        const struct sl__txn_chunk *c = u->slots[k];
        n += c != NULL && c->encoded && !c->empty ? sl__txn_chunk_encoding(c).size : 0;
    }
    return n;
}

bool
sl__txn_assemble_early(sl_txn *t, struct sl__txn_unit *u, sl_codec_ctx *ctx)
{
    if (!t->a->meta.sharded || ctx == NULL || u->n_complete < u->n_inside)
        return false;
    const struct sl__shard_old none = {NULL, NULL};
    struct sl_error ignored = SL_ERROR_INIT;
    /* One allocation of the final size (on a page when large, for the
     * store's direct writes), not a buffer doubling as it fills. */
    size_t need = t->a->meta.index_bytes + (size_t)sl__txn_encoded_bytes(t, u);
    u->bytes = SL_BUF_INIT;
    u->bytes.alloc = t->alloc;
    u->bytes.data = sl_alloc(&t->alloc, need, need >= ((size_t)64 << 10) ? 4096 : 64);
    u->bytes.capacity = u->bytes.data != NULL ? need : 0;
    bool empty = false;
    const uint64_t *e = NULL;
    if (u->bytes.data == NULL ||
        shard_assemble(t, u, "", &none, &u->bytes, ctx, &empty, &e, &ignored) != SL_OK) {
        sl_buf_fini(&u->bytes); /* the writer assembles it again, and reports */
        return false;
    }
    u->assembled = true;
    u->assembled_empty = empty;
    /* Counted before the chunks give their buffers up below, so that the
     * peak sees the moment both exist; then the shard is all it holds. */
    sl__txn_staged_add(t, u->bytes.capacity);
    struct sl__txn_stripe *s = sl__txn_stripe_of(t, u->index);
    pthread_mutex_lock(&s->mu);
    for (uint64_t k = 0; k < t->n_per_unit; k++) {
        if (u->slots[k] == NULL)
            continue;
        bool stored = !empty && e[2 * k] != SL__SHARD_EMPTY;
        sl__txn_chunk_into_shard(t, u->slots[k], stored ? u->bytes.data + e[2 * k] : NULL,
                                 stored ? (size_t)e[2 * k + 1] : 0);
    }
    pthread_mutex_unlock(&s->mu);
    /* The encodings made for the hand-over went with the chunk buffers. */
    sl__txn_staged_add(t, (uint64_t)0 - u->behind_bytes);
    u->behind_bytes = u->bytes.capacity;
    return true;
}

/* Assemble shard `u` (stripe lock held) and write it, or delete it when
 * nothing is left.  The stored shard is read only when `u` is partial.
 * A unit the write handing it over assembled already is written as is. */
static sl_status
shard_write_locked(const sl_txn *t, const struct sl__txn_unit *u, const char *key,
                   sl_codec_ctx *ctx, struct sl_error *err)
{
    const sl_array *a = t->a;
    if (u->assembled)
        return u->assembled_empty ? unit_store(t, key, NULL, 0, err)
                                  : unit_store(t, key, u->bytes.data, u->bytes.size, err);
    struct sl__shard_old old = {NULL, NULL};
    if (u->n_complete < u->n_inside)
        SL_TRY(sl__shard_read_old(a, key, ctx, &old, err));
    struct sl_buf *out;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_SHARD, 0, &out, err));
    bool empty = false;
    SL_TRY(shard_assemble(t, u, key, &old, out, ctx, &empty, NULL, err));
    if (empty)
        return unit_store(t, key, NULL, 0, err);
    return unit_store(t, key, out->data, out->size, err);
}

/* Write chunk unit `u` of an unsharded array (stripe lock held). */
static sl_status
chunk_write_locked(const sl_txn *t, const struct sl__txn_unit *u, const char *key,
                   sl_codec_ctx *ctx, struct sl_error *err)
{
    const sl_array *a = t->a;
    const struct sl__txn_chunk *c = u->slots[0];
    if (c->partial) {
        struct sl_buf *chunk;
        bool missing = false;
        SL_TRY(sl__ctx_scratch(ctx, SL__SCR_CHUNK, a->layout.n_bytes, &chunk, err));
        SL_TRY(sl__chunk_fetch(a, u->coords, chunk->data, ctx, &missing, err));
        if (missing)
            sl__fill_elements(chunk->data, a->layout.n_bytes / a->elem_bytes, a->meta.fill,
                              a->elem_bytes);
        SL_TRY(sl__txn_chunk_overlay(t, c, chunk->data, ctx, err));
        return sl__chunk_store(a, u->coords, chunk->data, ctx, err);
    }
    struct sl__view v = {NULL, 0};
    bool empty = false;
    SL_TRY(sl__txn_chunk_view(t, c, ctx, &v, &empty, err));
    if (empty)
        return unit_store(t, key, NULL, 0, err);
    return unit_store(t, key, v.data, v.size, err);
}

/* Write unit `u` once under its stripe lock and take it out of the
 * staging table; its outcome goes to u->status and u->err. */
static void
unit_write(sl_txn *t, struct sl__txn_unit *u, sl_codec_ctx *ctx)
{
    const sl_array *a = t->a;
    char key[SL_STORE_KEY_MAX + 1];
    pthread_mutex_t *lock = sl__array_stripe(a, u->coords);
    pthread_mutex_lock(lock);
    sl_status st;
    if (sl__array_object_key(a, u->coords, key, sizeof(key)) >= sizeof(key)) {
        key[0] = '\0';
        st = sl_error_set(&u->err, SL_EINVAL, NULL, "the unit's key is too long");
    } else if (a->meta.sharded) {
        st = shard_write_locked(t, u, key, ctx, &u->err);
    } else {
        st = chunk_write_locked(t, u, key, ctx, &u->err);
    }
    sl__error_locate(&u->err, key, a->meta.rank, u->coords);
    u->status = st;
    u->written = true;
    struct sl__txn_stripe *s = sl__txn_stripe_of(t, u->index);
    pthread_mutex_lock(&s->mu);
    sl__txn_table_remove(s, u->index);
    pthread_cond_broadcast(&s->done);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(lock);
}

/* The second pass's work: the units to write. */
struct write_job {
    sl_txn *t;
    struct sl__txn_unit **units;
};

static sl_status
write_one(void *arg, size_t i, sl_codec_ctx *ctx, struct sl_error *err)
{
    (void)err;
    const struct write_job *job = arg;
    unit_write(job->t, job->units[i], ctx);
    return SL_OK;
}

/* Fail units[0..n) without writing them (no codec context). */
static void
units_fail(sl_txn *t, struct sl__txn_unit **units, size_t n, const struct sl_error *why)
{
    for (size_t i = 0; i < n; i++) {
        struct sl__txn_unit *u = units[i];
        struct sl__txn_stripe *s = sl__txn_stripe_of(t, u->index);
        u->err = *why;
        u->status = why->code;
        u->written = true;
        pthread_mutex_lock(&s->mu);
        sl__txn_table_remove(s, u->index);
        pthread_cond_broadcast(&s->done);
        pthread_mutex_unlock(&s->mu);
    }
}

void
sl__txn_flush(sl_txn *t, struct sl__txn_unit **units, size_t n, sl_codec_ctx *ctx, bool early)
{
    sl__txn_encode_units(t, units, n, NULL);
    sl__txn_write_units(t, units, n, ctx, early);
}

void
sl__txn_write_units(sl_txn *t, struct sl__txn_unit **units, size_t n, sl_codec_ctx *given,
                    bool early)
{
    struct sl_error why = SL_ERROR_INIT;
    sl_codec_ctx *ctx = given != NULL ? given : sl_codec_ctx_create(&t->alloc, &why);
    if (ctx == NULL)
        units_fail(t, units, n, &why); /* and nothing is left to write */
    const struct sl_parallel *par = t->opts.par;
    if (ctx != NULL && n > 1 && par != NULL && sl_parallel_workers(par) > 1) {
        struct write_job job = {t, units};
        struct sl_error ignored = SL_ERROR_INIT;
        (void)sl__for_each(par, n, NULL, &t->alloc, write_one, &job, &ignored);
    }
    /* Here when there is no pool, and for what a cancelled loop left. */
    for (size_t i = 0; i < n; i++)
        if (!units[i]->written)
            unit_write(t, units[i], ctx);
    for (size_t i = 0; i < n; i++)
        sl__txn_unit_finish(t, units[i], early);
    if (ctx != given)
        sl_codec_ctx_destroy(ctx);
}
