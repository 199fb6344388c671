/* SPDX-License-Identifier: MIT */
/*
 * Whole-chunk reads and writes into and from caller buffers.  Unsharded
 * chunks are one stored object each; inner chunks of sharded arrays go
 * through shard.c (one index read, then the chunk's byte range; writes
 * rewrite the shard once under its stripe lock).
 *
 * DESIGN: a chunk buffer is the whole chunk, edge chunks included.  Writes
 * store the padding beyond the array as the fill value (copying an edge
 * chunk into scratch to do so), so what is stored never depends on what a
 * caller left in the padding.  A chunk that is all fill is deleted, not
 * stored, unless the array writes fill chunks, so reads of it return the
 * fill value either way.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/array_io.h>

#include "zarr_internal.h"

/* A codec context for one call: the caller's, or a temporary one. */
static sl_status
ctx_for_call(const sl_array *a, sl_codec_ctx *given, sl_codec_ctx **ctx, struct sl_error *err)
{
    *ctx = given != NULL ? given : sl_codec_ctx_create(&a->alloc, err);
    return *ctx != NULL ? SL_OK : SL_ENOMEM;
}

static void
ctx_done(sl_codec_ctx *given, sl_codec_ctx *ctx)
{
    if (ctx != given)
        sl_codec_ctx_destroy(ctx);
}

sl_status
sl__chunk_fetch(const sl_array *a, const uint64_t *coords, void *buf, sl_codec_ctx *ctx,
                bool *missing, struct sl_error *err)
{
    char key[SL_STORE_KEY_MAX + 1];
    if (sl__array_object_key(a, coords, key, sizeof(key)) >= sizeof(key))
        return sl_error_set(err, SL_EINVAL, NULL, "chunk key too long");
    struct sl_buf *raw;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_IO, 0, &raw, err));
    struct sl_error local = SL_ERROR_INIT;
    struct sl__reader rd;
    sl_status st = sl__reader_open(a->store, key, &rd, &local);
    *missing = st == SL_ENOTFOUND;
    if (st == SL_ENOTFOUND)
        return SL_OK;
    uint64_t max = sl__meta_object_max_bytes(&a->meta);
    if (st == SL_OK && max > 0 && rd.size > max)
        st = sl_error_set(&local, SL_ECORRUPT, NULL,
                          "stored chunk of %" PRIu64 " bytes is larger than any encoding of the "
                          "chunk (at most %" PRIu64 " bytes)",
                          rd.size, max);
    /* Decoded from where the store holds the bytes (a remote body) when it
     * does, else from `raw`. */
    const uint8_t *data = NULL;
    size_t n = 0;
    if (st == SL_OK)
        st = sl__reader_view_range(&rd, NULL, raw, &data, &n, &local);
    if (st != SL_OK) {
        sl__reader_close(&rd);
        sl__error_forward(err, &local);
        sl__error_locate(err, key, a->meta.rank, coords);
        return st;
    }
    st = sl__chain_decode(&a->meta.chain, &a->layout, data, n, buf, ctx, err);
    sl__reader_close(&rd);
    sl__error_locate(err, key, a->meta.rank, coords);
    return st;
}

sl_status
sl__chunk_store(const sl_array *a, const uint64_t *coords, const void *buf, sl_codec_ctx *ctx,
                struct sl_error *err)
{
    char key[SL_STORE_KEY_MAX + 1];
    if (sl__array_object_key(a, coords, key, sizeof(key)) >= sizeof(key))
        return sl_error_set(err, SL_EINVAL, NULL, "chunk key too long");
    sl_status st;
    if (!a->write_fill_chunks && sl__is_fill(buf, a->layout.n_bytes, a->meta.fill, a->elem_bytes)) {
        st = sl_store_delete(a->store, key, err);
    } else {
        struct sl__view v;
        st = sl__chain_encode(&a->meta.chain, &a->layout, buf, ctx, &v, err);
        if (st == SL_OK)
            st = sl_store_set(a->store, key, v.data, v.size, err);
    }
    sl__error_locate(err, key, a->meta.rank, coords);
    return st;
}

sl_status
sl__chunk_padded(const sl_array *a, const uint64_t *coords, const void *buf, sl_codec_ctx *ctx,
                 const void **out, struct sl_error *err)
{
    struct sl_region r;
    sl_grid_chunk_region(&a->chunk_grid, coords, &r);
    const uint64_t *shape = a->layout.shape;
    uint64_t extent[SL_MAX_RANK];
    bool edge = false;
    for (uint32_t d = 0; d < a->meta.rank; d++) {
        extent[d] = r.stop[d] - r.start[d];
        edge = edge || extent[d] < shape[d];
    }
    *out = buf;
    if (!edge)
        return SL_OK;
    struct sl_buf *chunk;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_CHUNK, a->layout.n_bytes, &chunk, err));
    memcpy(chunk->data, buf, a->layout.n_bytes);
    sl__fill_outside(chunk->data, a->meta.rank, shape, extent, a->meta.fill, a->elem_bytes);
    *out = chunk->data;
    return SL_OK;
}

static sl_status
check_buffer(const sl_array *a, const void *buf, size_t buf_bytes, struct sl_error *err)
{
    if (buf == NULL || buf_bytes < a->layout.n_bytes)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "chunk buffer of %zu bytes is smaller than a chunk (%zu bytes)",
                            buf != NULL ? buf_bytes : 0, a->layout.n_bytes);
    return SL_OK;
}

sl_status
sl_array_read_chunk(const sl_array *a, const uint64_t *coords, void *buf, size_t buf_bytes,
                    sl_codec_ctx *given, bool *missing, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__array_check_coords(a, coords, err));
    SL_TRY(check_buffer(a, buf, buf_bytes, err));
    sl_codec_ctx *ctx;
    SL_TRY(ctx_for_call(a, given, &ctx, err));
    bool absent = false;
    sl_status st = a->meta.sharded ? sl__inner_fetch(a, coords, buf, ctx, &absent, err)
                                   : sl__chunk_fetch(a, coords, buf, ctx, &absent, err);
    if (st == SL_OK && absent)
        sl__fill_elements(buf, a->layout.n_bytes / a->elem_bytes, a->meta.fill, a->elem_bytes);
    if (missing != NULL)
        *missing = absent;
    ctx_done(given, ctx);
    return st;
}

/* An inner chunk's hint: its shard's index is fetched ahead unless an
 * earlier read fetched it, and the chunk waits on the array until a read
 * of the shard decodes the index and hints its byte range (hint.c).  The
 * driver that hints decodes nothing. */
static void
prefetch_inner(const sl_array *a, const uint64_t *coords)
{
    uint64_t shard[SL_MAX_RANK], k;
    sl__shard_of_inner(&a->meta, coords, shard, &k);
    char key[SL_STORE_KEY_MAX + 1];
    if (sl__array_object_key(a, shard, key, sizeof(key)) >= sizeof(key))
        return;
    struct sl_byte_range first = sl__shard_index_first(&a->meta);
    if (!sl__store_has_first(a->store, key, &first))
        sl__store_prefetch(a->store, key, &first);
    sl__hint_add(a, sl_grid_linear_index(&a->object_grid, shard), k);
}

void
sl_array_prefetch_chunk(const sl_array *a, const uint64_t *coords)
{
    if (!sl_store_reads_ahead(a->store) || sl__array_check_coords(a, coords, NULL) != SL_OK)
        return;
    if (a->meta.sharded) {
        prefetch_inner(a, coords);
        return;
    }
    char key[SL_STORE_KEY_MAX + 1];
    if (sl__array_object_key(a, coords, key, sizeof(key)) >= sizeof(key))
        return;
    sl__store_prefetch(a->store, key, NULL);
}

bool
sl__array_chunk_fetched(const sl_array *a, const uint64_t *coords)
{
    char key[SL_STORE_KEY_MAX + 1];
    return !a->meta.sharded && sl__store_fetches_ahead(a->store) &&
           sl__array_object_key(a, coords, key, sizeof(key)) < sizeof(key) &&
           sl__store_fetched(a->store, key);
}

/* Replace one inner chunk of its shard with the caller's buffer. */
struct inner_write {
    uint64_t k;      /* the inner chunk replaced */
    const void *src; /* its new contents, whole chunk, padding filled */
    size_t n;        /* bytes of a chunk */
};

static sl_status
inner_write_one(void *arg, uint64_t k, const uint64_t *inner, const uint8_t *old, size_t old_n,
                void *chunk, sl_codec_ctx *ctx, sl__inner_action *action, struct sl_error *err)
{
    (void)inner, (void)old, (void)old_n, (void)ctx, (void)err;
    const struct inner_write *w = arg;
    *action = k == w->k ? SL__INNER_REPLACE : SL__INNER_KEEP;
    if (k == w->k && chunk != w->src)
        memcpy(chunk, w->src, w->n);
    return SL_OK;
}

static sl_status
inner_write(sl_array *a, const uint64_t *coords, const void *buf, sl_codec_ctx *ctx,
            struct sl_error *err)
{
    uint64_t shard[SL_MAX_RANK], k;
    sl__shard_of_inner(&a->meta, coords, shard, &k);
    /* The padded copy, if any, is in SL__SCR_CHUNK: the very buffer
     * sl__shard_rewrite hands the callback, which then has nothing to copy. */
    const void *padded;
    SL_TRY(sl__chunk_padded(a, coords, buf, ctx, &padded, err));
    struct inner_write w = {k, padded, a->layout.n_bytes};
    pthread_mutex_t *lock = sl__array_stripe(a, shard);
    pthread_mutex_lock(lock);
    sl_status st = sl__shard_rewrite(a, shard, true, inner_write_one, &w, ctx, err);
    pthread_mutex_unlock(lock);
    return st;
}

sl_status
sl_array_write_chunk(sl_array *a, const uint64_t *coords, const void *buf, size_t buf_bytes,
                     sl_codec_ctx *given, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__array_check_coords(a, coords, err));
    SL_TRY(check_buffer(a, buf, buf_bytes, err));
    sl_codec_ctx *ctx;
    SL_TRY(ctx_for_call(a, given, &ctx, err));
    sl_status st;
    if (a->meta.sharded) {
        st = inner_write(a, coords, buf, ctx, err);
    } else {
        const void *padded;
        st = sl__chunk_padded(a, coords, buf, ctx, &padded, err);
        if (st == SL_OK)
            st = sl__chunk_store(a, coords, padded, ctx, err);
    }
    ctx_done(given, ctx);
    return st;
}

/* Fill `exist` from the index of the shard stored under `key`. */
static sl_status
shard_index_exist(const sl_array *a, const char *key, bool *exist, sl_codec_ctx *ctx,
                  struct sl_error *err)
{
    struct sl__reader rd;
    sl_status st = sl__shard_open(a->store, &a->meta, key, &rd, err);
    if (st == SL_ENOTFOUND) {
        sl_error_clear(err);
        memset(exist, 0, (size_t)a->meta.n_per_shard * sizeof(bool));
        return SL_OK;
    }
    SL_TRY(st);
    const uint64_t *entries = NULL;
    st = sl__shard_index_read(&rd, &a->meta, ctx, &entries, err);
    sl__reader_close(&rd);
    for (uint64_t k = 0; st == SL_OK && k < a->meta.n_per_shard; k++)
        exist[k] = entries[2 * k] != SL__SHARD_EMPTY;
    return st;
}

sl_status
sl_array_shard_chunks_exist(const sl_array *a, const uint64_t *shard, bool *exist, size_t n_exist,
                            sl_codec_ctx *given, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__array_check_object_coords(a, shard, err));
    uint64_t n = a->meta.sharded ? a->meta.n_per_shard : 1;
    if (exist == NULL || n_exist < n)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "room for %zu chunk flags; a stored object holds %" PRIu64 " chunk%s",
                            exist != NULL ? n_exist : 0, n, SL__PLURAL(n));
    char key[SL_STORE_KEY_MAX + 1];
    if (sl__array_object_key(a, shard, key, sizeof(key)) >= sizeof(key))
        return sl_error_set(err, SL_EINVAL, NULL, "chunk key too long");
    struct sl_error local = SL_ERROR_INIT;
    sl_status st;
    if (!a->meta.sharded) {
        uint64_t bytes;
        st = sl_store_size(a->store, key, &bytes, &local);
        exist[0] = st == SL_OK;
        if (st == SL_ENOTFOUND)
            st = SL_OK;
    } else {
        sl_codec_ctx *ctx;
        SL_TRY(ctx_for_call(a, given, &ctx, err));
        st = shard_index_exist(a, key, exist, ctx, &local);
        ctx_done(given, ctx);
    }
    if (st != SL_OK) {
        sl__error_forward(err, &local);
        sl__error_locate(err, key, a->meta.rank, shard);
    }
    return st;
}
