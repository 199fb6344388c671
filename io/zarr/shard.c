/* SPDX-License-Identifier: MIT */
/*
 * The sharding_indexed codec: shard index decoding (crc32c verified, every
 * entry bounds-checked without overflow), coalesced byte-range reads of
 * inner chunks, assembling a shard from inner chunk encodings, and the
 * read-modify-write of one shard that chunk and region writes use.
 *
 * DESIGN: a shard is read through one store reader, so its index and its
 * inner chunks come from the same version of the object even while another
 * thread replaces it.  Assembly writes inner chunks in C order, densely,
 * with the index at the start or the end as the metadata says; inner chunks
 * entirely outside the array are always empty.  The builder, index decoder
 * and range reader are separate so transactions and batched reads can reuse
 * them.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "zarr_internal.h"

/* Coalescing: ranges closer than this are read together ... */
#define SL__SHARD_GAP_BYTES ((uint64_t)64 << 10)
/* ... into reads no longer than this (a single larger chunk is read alone). */
#define SL__SHARD_SPAN_BYTES ((uint64_t)16 << 20)

sl_status
sl__shard_entry_check(uint64_t k, uint64_t offset, uint64_t nbytes, uint64_t shard_bytes,
                      struct sl_error *err)
{
    if (offset == SL__SHARD_EMPTY && nbytes == SL__SHARD_EMPTY)
        return SL_OK;
    /* Two tests, so that offset + nbytes cannot overflow. */
    if (nbytes > shard_bytes || offset > shard_bytes - nbytes)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "shard index entry %" PRIu64 " [%" PRIu64 ", +%" PRIu64
                            ") exceeds the shard of %" PRIu64 " bytes",
                            k, offset, nbytes, shard_bytes);
    return SL_OK;
}

sl_status
sl__shard_index_range(const struct sl__meta *m, uint64_t shard_bytes, uint64_t *offset,
                      struct sl_error *err)
{
    if (shard_bytes < m->index_bytes)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "shard of %" PRIu64 " bytes is smaller than its %zu-byte index",
                            shard_bytes, m->index_bytes);
    *offset = m->index_at_start ? 0 : shard_bytes - m->index_bytes;
    return SL_OK;
}

sl_status
sl__shard_index_decode(const struct sl__meta *m, const uint8_t *bytes, size_t n,
                       uint64_t shard_bytes, uint64_t *entries, sl_codec_ctx *ctx,
                       struct sl_error *err)
{
    if (n != m->index_bytes)
        return sl_error_set(err, SL_ECORRUPT, NULL,
                            "shard index of %zu bytes, expected %zu (%" PRIu64 " inner chunks)", n,
                            m->index_bytes, m->n_per_shard);
    struct sl__chunk_layout lay;
    sl__meta_index_layout(m, &lay);
    struct sl_error local = SL_ERROR_INIT;
    if (sl__chain_decode(&m->index_chain, &lay, bytes, n, entries, ctx, &local) != SL_OK)
        return sl_error_set(err, local.code, NULL, "shard index: %s", local.text);
    uint64_t max = sl__meta_chunk_max_bytes(m);
    for (uint64_t k = 0; k < m->n_per_shard; k++) {
        uint64_t nbytes = entries[2 * k + 1];
        SL_TRY(sl__shard_entry_check(k, entries[2 * k], nbytes, shard_bytes, err));
        /* Reading an inner chunk allocates its nbytes: only what an
         * encoding of the chunk can take. */
        if (nbytes != SL__SHARD_EMPTY && max > 0 && nbytes > max)
            return sl_error_set(err, SL_ECORRUPT, NULL,
                                "shard index entry %" PRIu64 " of %" PRIu64
                                " bytes is larger than any encoding of an inner chunk (at most "
                                "%" PRIu64 " bytes)",
                                k, nbytes, (uint64_t)max);
    }
    return SL_OK;
}

struct sl_byte_range
sl__shard_index_first(const struct sl__meta *m)
{
    return m->index_at_start ? sl_byte_range_at(0, m->index_bytes)
                             : sl_byte_range_suffix(m->index_bytes);
}

sl_status
sl__shard_open(sl_store *store, const struct sl__meta *m, const char *key, struct sl__reader *rd,
               struct sl_error *err)
{
    struct sl_byte_range first = sl__shard_index_first(m);
    return sl__reader_open_first(store, key, &first, rd, err);
}

sl_status
sl__shard_index_read(struct sl__reader *rd, const struct sl__meta *m, sl_codec_ctx *ctx,
                     const uint64_t **entries, struct sl_error *err)
{
    uint64_t off = 0;
    SL_TRY(sl__shard_index_range(m, rd->size, &off, err));
    struct sl_buf *raw, *idx;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_INDEX_RAW, m->index_bytes, &raw, err));
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_INDEX, (size_t)m->n_per_shard * 16, &idx, err));
    SL_TRY(sl__reader_read(rd, off, m->index_bytes, raw->data, err));
    SL_TRY(sl__shard_index_decode(m, raw->data, m->index_bytes, rd->size, (uint64_t *)idx->data,
                                  ctx, err));
    *entries = (const uint64_t *)idx->data;
    return SL_OK;
}

/* ---- coalesced reads ------------------------------------------------------------- */

/* One inner chunk to read. */
struct plan_entry {
    uint64_t k;      /* index in the shard */
    uint64_t offset; /* bytes from the shard's start */
    uint64_t n;      /* bytes */
};

static int
plan_cmp(const void *pa, const void *pb)
{
    const struct plan_entry *a = pa, *b = pb;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Read plan[i..j) as one range and hand each chunk to fn. */
static sl_status
read_group(struct sl__reader *rd, const struct plan_entry *plan, size_t i, size_t j, uint64_t end,
           sl_codec_ctx *ctx, sl__shard_chunk_fn *fn, void *arg, struct sl_error *err)
{
    uint64_t start = plan[i].offset, span = end - start;
    if (span > SIZE_MAX)
        return sl_error_set(err, SL_EOVERFLOW, NULL, "inner chunk of %" PRIu64 " bytes", span);
    struct sl_buf *io;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_IO, (size_t)span, &io, err));
    SL_TRY(sl__reader_read(rd, start, (size_t)span, io->data, err));
    for (size_t e = i; e < j; e++)
        SL_TRY(fn(arg, plan[e].k, io->data + (plan[e].offset - start), (size_t)plan[e].n, err));
    return SL_OK;
}

sl_status
sl__shard_read_entries(struct sl__reader *rd, const uint64_t *entries, const uint64_t *which,
                       size_t n_which, sl_codec_ctx *ctx, sl__shard_chunk_fn *fn, void *arg,
                       struct sl_error *err)
{
    struct sl_buf *pb;
    size_t bytes;
    if (!sl_size_mul_fits(n_which, sizeof(struct plan_entry), &bytes))
        return sl_error_set(err, SL_EOVERFLOW, NULL, "%zu inner chunks", n_which);
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_PLAN, bytes, &pb, err));
    struct plan_entry *plan = (struct plan_entry *)pb->data;
    size_t n = 0;
    for (size_t i = 0; i < n_which; i++) {
        uint64_t k = which[i];
        if (entries[2 * k] != SL__SHARD_EMPTY)
            plan[n++] = (struct plan_entry){k, entries[2 * k], entries[2 * k + 1]};
    }
    if (n > 1)
        qsort(plan, n, sizeof(*plan), plan_cmp);
    for (size_t i = 0; i < n;) {
        uint64_t end = plan[i].offset + plan[i].n;
        size_t j = i + 1;
        for (; j < n; j++) {
            uint64_t e = plan[j].offset + plan[j].n;
            uint64_t new_end = e > end ? e : end;
            if (plan[j].offset > end + SL__SHARD_GAP_BYTES ||
                new_end - plan[i].offset > SL__SHARD_SPAN_BYTES)
                break;
            end = new_end;
        }
        SL_TRY(read_group(rd, plan, i, j, end, ctx, fn, arg, err));
        i = j;
    }
    return SL_OK;
}

/* ---- assembly -------------------------------------------------------------------- */

sl_status
sl__shard_builder_init(struct sl__shard_builder *b, const struct sl__meta *m, struct sl_buf *out,
                       uint64_t *entries, struct sl_error *err)
{
    *b = (struct sl__shard_builder){m, out, entries, 0};
    for (uint64_t k = 0; k < 2 * m->n_per_shard; k++)
        entries[k] = SL__SHARD_EMPTY;
    out->size = 0;
    if (!m->index_at_start)
        return SL_OK;
    /* Room for the index, written by finish. */
    SL_TRY(sl_buf_reserve(out, m->index_bytes, err));
    memset(out->data, 0, m->index_bytes);
    out->size = m->index_bytes;
    return SL_OK;
}

sl_status
sl__shard_builder_add(struct sl__shard_builder *b, uint64_t k, const uint8_t *bytes, size_t n,
                      struct sl_error *err)
{
    uint64_t offset = b->out->size;
    SL_TRY(sl_buf_append(b->out, bytes, n, err));
    b->entries[2 * k] = offset;
    b->entries[2 * k + 1] = n;
    b->n_chunks++;
    return SL_OK;
}

sl_status
sl__shard_builder_finish(struct sl__shard_builder *b, sl_codec_ctx *ctx, bool *empty,
                         struct sl_error *err)
{
    *empty = b->n_chunks == 0;
    if (*empty)
        return SL_OK;
    struct sl__chunk_layout lay;
    sl__meta_index_layout(b->m, &lay);
    struct sl__view v;
    SL_TRY(sl__chain_encode(&b->m->index_chain, &lay, b->entries, ctx, &v, err));
    if (v.size != b->m->index_bytes)
        return sl_error_set(err, SL_EIO, NULL, "shard index encoded to %zu bytes, not %zu", v.size,
                            b->m->index_bytes);
    if (b->m->index_at_start) {
        memcpy(b->out->data, v.data, v.size);
        return SL_OK;
    }
    return sl_buf_append(b->out, v.data, v.size, err);
}

/* ---- reading one inner chunk --------------------------------------------------------- */

sl_status
sl__inner_fetch(const sl_array *a, const uint64_t *inner, void *buf, sl_codec_ctx *ctx,
                bool *missing, struct sl_error *err)
{
    uint64_t shard[SL_MAX_RANK], k;
    sl__shard_of_inner(&a->meta, inner, shard, &k);
    char key[SL_STORE_KEY_MAX + 1];
    if (sl__array_object_key(a, shard, key, sizeof(key)) >= sizeof(key))
        return sl_error_set(err, SL_EINVAL, NULL, "shard key too long");
    struct sl__reader rd;
    struct sl_error local = SL_ERROR_INIT;
    sl_status st = sl__shard_open(a->store, &a->meta, key, &rd, &local);
    *missing = st == SL_ENOTFOUND;
    if (st == SL_ENOTFOUND)
        return SL_OK;
    const uint64_t *entries = NULL;
    if (st == SL_OK)
        st = sl__shard_index_read(&rd, &a->meta, ctx, &entries, &local);
    if (st == SL_OK && sl_store_reads_ahead(a->store))
        sl__hint_drain(a, sl_grid_linear_index(&a->object_grid, shard), key, entries);
    if (st == SL_OK && entries[2 * k] == SL__SHARD_EMPTY) {
        *missing = true;
    } else if (st == SL_OK) {
        struct sl_buf *io;
        size_t n = (size_t)entries[2 * k + 1];
        st = sl__ctx_scratch(ctx, SL__SCR_IO, n, &io, &local);
        if (st == SL_OK)
            st = sl__reader_read(&rd, entries[2 * k], n, io->data, &local);
        if (st == SL_OK)
            st = sl__chain_decode(&a->meta.chain, &a->layout, io->data, n, buf, ctx, &local);
    }
    sl__reader_close(&rd);
    sl__error_forward(err, &local);
    sl__error_locate(err, key, a->meta.rank, inner);
    return st;
}

/* ---- rewriting a shard ---------------------------------------------------------------- */

sl_status
sl__shard_read_old(const sl_array *a, const char *key, sl_codec_ctx *ctx, struct sl__shard_old *old,
                   struct sl_error *err)
{
    old->bytes = NULL;
    old->entries = NULL;
    struct sl__reader rd;
    struct sl_error local = SL_ERROR_INIT;
    sl_status st = sl__reader_open(a->store, key, &rd, &local);
    if (st == SL_ENOTFOUND)
        return SL_OK;
    struct sl_buf *raw, *idx;
    uint64_t off = 0, max = sl__meta_object_max_bytes(&a->meta);
    if (st == SL_OK && max > 0 && rd.size > max)
        st = sl_error_set(&local, SL_ECORRUPT, NULL,
                          "shard of %" PRIu64 " bytes is larger than its index and every inner "
                          "chunk at their largest (%" PRIu64 " bytes)",
                          rd.size, max);
    if (st == SL_OK)
        st = sl__ctx_scratch(ctx, SL__SCR_OLD, 0, &raw, &local);
    if (st == SL_OK)
        st = sl__reader_read_range(&rd, NULL, raw, &local);
    sl__reader_close(&rd);
    if (st == SL_OK)
        st = sl__shard_index_range(&a->meta, raw->size, &off, &local);
    if (st == SL_OK)
        st = sl__ctx_scratch(ctx, SL__SCR_INDEX, (size_t)a->meta.n_per_shard * 16, &idx, &local);
    if (st == SL_OK)
        st = sl__shard_index_decode(&a->meta, raw->data + off, a->meta.index_bytes, raw->size,
                                    (uint64_t *)idx->data, ctx, &local);
    if (st != SL_OK) {
        sl__error_forward(err, &local);
        return st;
    }
    old->bytes = raw->data;
    old->entries = (const uint64_t *)idx->data;
    return SL_OK;
}

static bool
inner_outside(const sl_array *a, const uint64_t *inner)
{
    for (uint32_t d = 0; d < a->meta.rank; d++)
        if (inner[d] >= a->chunk_grid.n_chunks[d])
            return true;
    return false;
}

/* What one shard rewrite works with. */
struct rewrite {
    const sl_array *a;
    const char *key;          /* the shard's key, for messages */
    struct sl__shard_old old; /* its previous version */
    struct sl_buf *chunk;     /* a decoded inner chunk */
    struct sl__shard_builder b;
    sl__inner_fn *fn; /* the caller's decision */
    void *arg;        /* passed to fn */
};

/* Decide inner chunk k at `inner` and add it to the shard being built. */
static sl_status
rewrite_inner(struct rewrite *rw, uint64_t k, const uint64_t *inner, sl_codec_ctx *ctx,
              struct sl_error *err)
{
    const sl_array *a = rw->a;
    const uint64_t *old = rw->old.entries;
    bool had = old != NULL && old[2 * k] != SL__SHARD_EMPTY;
    const uint8_t *old_bytes = had ? rw->old.bytes + old[2 * k] : NULL;
    size_t old_n = had ? (size_t)old[2 * k + 1] : 0;
    sl__inner_action action = SL__INNER_KEEP;
    SL_TRY(rw->fn(rw->arg, k, inner, old_bytes, old_n, rw->chunk->data, ctx, &action, err));
    if (action == SL__INNER_KEEP && had)
        return sl__shard_builder_add(&rw->b, k, old_bytes, old_n, err);
    if (action != SL__INNER_REPLACE)
        return SL_OK;
    if (!a->write_fill_chunks &&
        sl__is_fill(rw->chunk->data, a->layout.n_bytes, a->meta.fill, a->elem_bytes))
        return SL_OK;
    struct sl__view v;
    SL_TRY(sl__chain_encode(&a->meta.chain, &a->layout, rw->chunk->data, ctx, &v, err));
    return sl__shard_builder_add(&rw->b, k, v.data, v.size, err);
}

sl_status
sl__shard_rewrite(const sl_array *a, const uint64_t *shard, bool need_old, sl__inner_fn *fn,
                  void *arg, sl_codec_ctx *ctx, struct sl_error *err)
{
    const struct sl__meta *m = &a->meta;
    char key[SL_STORE_KEY_MAX + 1];
    if (sl__array_object_key(a, shard, key, sizeof(key)) >= sizeof(key))
        return sl_error_set(err, SL_EINVAL, NULL, "shard key too long");
    struct rewrite rw = {.a = a, .key = key, .fn = fn, .arg = arg};
    struct sl_buf *out, *entries;
    sl_status st = need_old ? sl__shard_read_old(a, key, ctx, &rw.old, err) : SL_OK;
    if (st == SL_OK)
        st = sl__ctx_scratch(ctx, SL__SCR_SHARD, 0, &out, err);
    if (st == SL_OK)
        st = sl__ctx_scratch(ctx, SL__SCR_INDEX_NEW, (size_t)m->n_per_shard * 16, &entries, err);
    /* Keeps its contents when big enough: write_chunk may have staged there. */
    if (st == SL_OK)
        st = sl__ctx_scratch(ctx, SL__SCR_CHUNK, a->layout.n_bytes, &rw.chunk, err);
    if (st == SL_OK)
        st = sl__shard_builder_init(&rw.b, m, out, (uint64_t *)entries->data, err);
    for (uint64_t k = 0; st == SL_OK && k < m->n_per_shard; k++) {
        uint64_t inner[SL_MAX_RANK];
        sl__shard_inner_coords(m, shard, k, inner);
        if (inner_outside(a, inner))
            continue;
        st = rewrite_inner(&rw, k, inner, ctx, err);
        sl__error_locate(err, key, m->rank, inner);
    }
    bool empty = false;
    if (st == SL_OK)
        st = sl__shard_builder_finish(&rw.b, ctx, &empty, err);
    if (st == SL_OK)
        st = empty ? sl_store_delete(a->store, key, err)
                   : sl_store_set(a->store, key, out->data, out->size, err);
    sl__error_locate(err, key, m->rank, shard);
    return st;
}
