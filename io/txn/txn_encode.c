/* SPDX-License-Identifier: MIT */
/*
 * Encoding a transaction's staged chunks: one chunk on the writing thread
 * (encode_on_write keeps the encoding instead of the chunk), or the
 * complete chunks of units about to be written, in parallel on opts.par
 * with no lock held, as the first pass of a flush (txn_flush.c).
 */
#include <string.h>

#include "txn_internal.h"

sl_status
sl__txn_chunk_encode(const sl_txn *t, const uint8_t *data, sl_codec_ctx *ctx, struct sl__view *v,
                     bool *empty, struct sl_error *err)
{
    const sl_array *a = t->a;
    *empty =
        !a->write_fill_chunks && sl__is_fill(data, a->layout.n_bytes, a->meta.fill, a->elem_bytes);
    if (*empty)
        return SL_OK;
    return sl__chain_encode(&a->meta.chain, &a->layout, data, ctx, v, err);
}

sl_status
sl__txn_chunk_view(const sl_txn *t, const struct sl__txn_chunk *c, sl_codec_ctx *ctx,
                   struct sl__view *v, bool *empty, struct sl_error *err)
{
    if (!c->encoded)
        return sl__txn_chunk_encode(t, c->data, ctx, v, empty, err);
    *empty = c->empty;
    *v = sl__txn_chunk_encoding(c);
    return SL_OK;
}

sl_status
sl__txn_chunk_encode_keep(const sl_txn *t, struct sl__txn_chunk *c, const uint8_t *data,
                          sl_codec_ctx *ctx, struct sl_error *err)
{
    struct sl__view v;
    SL_TRY(sl__txn_chunk_encode(t, data, ctx, &v, &c->empty, err));
    c->encoded = true;
    if (c->empty) {
        sl_buf_fini(&c->enc); /* it counts nothing: it holds nothing */
        return SL_OK;
    }
    /* Traded for the context's scratch when the encoding fills at least
     * half of it (the scratch is sized for the worst case): no copy, and
     * the record's old buffer, warm from an earlier chunk, becomes the
     * scratch, so buffers go round without page faults.  Staged memory is
     * then at most twice what the chunk compressed to; an encoding that
     * fills less is copied into a buffer of its size.  Large buffers
     * start on a page, as sl_buf's do, so that the filesystem store can
     * write them directly. */
    struct sl_buf *held = sl__ctx_scratch_holding(ctx, v.data);
    if (held != NULL && v.size >= held->capacity / 2) {
        struct sl_buf mine = c->enc;
        c->enc = *held;
        c->enc.size = v.size;
        *held = mine;
        return SL_OK;
    }
    if (c->enc.capacity < v.size || c->enc.capacity / 2 > v.size) {
        sl_buf_fini(&c->enc);
        c->enc.alloc = t->alloc; /* defensive: bare records only ever hold t's */
        c->enc.data = sl_alloc(&t->alloc, v.size, v.size >= ((size_t)64 << 10) ? 4096 : 64);
        if (c->enc.data == NULL) {
            c->encoded = false;
            return sl_error_set(err, SL_ENOMEM, NULL,
                                "out of memory keeping a chunk's encoding of %zu bytes", v.size);
        }
        c->enc.capacity = v.size;
    }
    memcpy(c->enc.data, v.data, v.size);
    c->enc.size = v.size;
    return SL_OK;
}

/* The first pass's work: complete chunks to encode into their records. */
struct encode_job {
    const sl_txn *t;
    struct sl__txn_chunk **chunks;
};

static sl_status
encode_one(void *arg, size_t i, sl_codec_ctx *ctx, struct sl_error *err)
{
    (void)err;
    const struct encode_job *job = arg;
    struct sl__txn_chunk *c = job->chunks[i];
    struct sl_error ignored = SL_ERROR_INIT;
    struct sl__view v;
    c->enc.size = 0;
    /* A failure here is met again, and reported, in the second pass. */
    if (sl__txn_chunk_encode(job->t, c->data, ctx, &v, &c->empty, &ignored) != SL_OK)
        return SL_OK;
    struct sl_buf *held = c->empty ? NULL : sl__ctx_scratch_holding(ctx, v.data);
    if (held != NULL) {
        /* Trade buffers rather than copy: each keeps its allocator, and
         * the context gets a buffer of the same use back. */
        struct sl_buf mine = c->enc;
        c->enc = *held;
        c->enc.size = v.size;
        *held = mine;
    } else if (!c->empty && sl_buf_append(&c->enc, v.data, v.size, &ignored) != SL_OK) {
        return SL_OK;
    }
    c->encoded = true;
    return SL_OK;
}

/* Whether the first pass has chunk `c` to encode. */
static bool
to_encode(const struct sl__txn_chunk *c)
{
    return c != NULL && !c->partial && !c->encoded;
}

/* Without a pool, or with one chunk to encode, they are encoded here with
 * `here` when given, else by the second pass where it writes.  A chunk
 * encoded already (a unit the writer thread could not take) is not
 * encoded again. */
void
sl__txn_encode_units(sl_txn *t, struct sl__txn_unit **units, size_t n, sl_codec_ctx *here)
{
    const struct sl_parallel *par = t->opts.par;
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        for (uint64_t k = 0; k < t->n_per_unit; k++)
            count += to_encode(units[i]->slots[k]);
    if (par == NULL || sl_parallel_workers(par) < 2 || count < 2) {
        for (size_t i = 0; here != NULL && i < n; i++)
            for (uint64_t k = 0; k < t->n_per_unit; k++)
                if (to_encode(units[i]->slots[k])) {
                    struct encode_job one = {t, &units[i]->slots[k]};
                    (void)encode_one(&one, 0, here, NULL);
                }
        return;
    }
    struct sl__txn_chunk **chunks = sl_alloc(&t->alloc, count * sizeof(*chunks), 0);
    if (chunks == NULL)
        return;
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        for (uint64_t k = 0; k < t->n_per_unit; k++)
            if (to_encode(units[i]->slots[k]))
                chunks[j++] = units[i]->slots[k];
    struct encode_job job = {t, chunks};
    struct sl_error ignored = SL_ERROR_INIT;
    /* Fresh contexts (NULL): a pool worker calling this may run other
     * tasks while it waits, and they use that worker's own context. */
    (void)sl__for_each(par, count, NULL, &t->alloc, encode_one, &job, &ignored);
    sl_free(&t->alloc, chunks, count * sizeof(*chunks));
}
