/* SPDX-License-Identifier: MIT */
/*
 * Array metadata common to both formats: ownership, the consistency and
 * size-cap checks every parsed or created array passes, chunk layouts and
 * chunk keys.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/array.h>
#include <sluice/grid.h>

#include "zarr_internal.h"

void
sl__meta_init(struct sl__meta *m, const struct sl_allocator *alloc)
{
    memset(m, 0, sizeof(*m));
    m->alloc = alloc != NULL ? *alloc : sl_allocator_default();
    m->sep = '/';
}

void
sl__meta_fini(struct sl__meta *m)
{
    for (uint32_t d = 0; d < SL_MAX_RANK; d++) {
        if (m->dim_names[d] != NULL)
            sl_free(&m->alloc, m->dim_names[d], strlen(m->dim_names[d]) + 1);
        m->dim_names[d] = NULL;
    }
    if (m->attributes != NULL)
        sl_free(&m->alloc, m->attributes, strlen(m->attributes) + 1);
    m->attributes = NULL;
}

void
sl__meta_chunk_layout(const struct sl__meta *m, struct sl__chunk_layout *lay)
{
    struct sl_error ignored = SL_ERROR_INIT;
    /* sl__meta_check has verified the size fits. */
    (void)sl__chunk_layout_init(lay, m->dtype, m->rank, m->sharded ? m->inner : m->chunk, &ignored);
}

void
sl__meta_index_layout(const struct sl__meta *m, struct sl__chunk_layout *lay)
{
    const uint64_t shape[2] = {m->n_per_shard, 2};
    struct sl_error ignored = SL_ERROR_INIT;
    (void)sl__chunk_layout_init(lay, SL_DTYPE_U64, 2, shape, &ignored);
}

size_t
sl__meta_chunk_max_bytes(const struct sl__meta *m)
{
    struct sl__chunk_layout lay;
    sl__meta_chunk_layout(m, &lay);
    return sl__chain_encoded_bound(&m->chain, lay.n_bytes);
}

uint64_t
sl__meta_object_max_bytes(const struct sl__meta *m)
{
    uint64_t chunk = sl__meta_chunk_max_bytes(m), all;
    if (!m->sharded || chunk == 0)
        return chunk;
    if (!sl_u64_mul_fits(chunk, m->n_per_shard, &all) || all > UINT64_MAX - m->index_bytes)
        return 0;
    return all + m->index_bytes;
}

static sl_status
meta_check_extents(const struct sl__meta *m, struct sl_error *err)
{
    if (m->rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "rank %u exceeds sluice's %d", m->rank,
                            SL_MAX_RANK);
    for (uint32_t d = 0; d < m->rank; d++) {
        if (m->shape[d] > SL_DIM_MAX || m->chunk[d] > SL_DIM_MAX)
            return sl_error_set(err, SL_EOVERFLOW, NULL,
                                "dimension %u: shape %" PRIu64 " or chunk %" PRIu64 " exceeds 2^62",
                                d, m->shape[d], m->chunk[d]);
        if (m->chunk[d] == 0 || (m->sharded && m->inner[d] == 0))
            return sl_error_set(err, SL_EPARSE, NULL, "dimension %u: chunk extent 0", d);
    }
    struct sl_grid g;
    return sl_grid_init_regular(&g, m->rank, m->shape, m->chunk, err);
}

/* Shard geometry: inner chunks divide the shard; count them. */
static sl_status
meta_check_shards(struct sl__meta *m, struct sl_error *err)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < m->rank; d++) {
        if (m->chunk[d] % m->inner[d] != 0) {
            char s[200], i[200];
            sl_shape_format(m->rank, m->chunk, s, sizeof(s));
            sl_shape_format(m->rank, m->inner, i, sizeof(i));
            return sl_error_set(err, SL_EPARSE, NULL,
                                "shard shape %s is not a multiple of inner chunk shape %s "
                                "(dimension %u)",
                                s, i, d);
        }
        m->per_shard[d] = m->chunk[d] / m->inner[d];
        if (!sl_u64_mul_fits(n, m->per_shard[d], &n) || n > SL_SHARD_MAX_CHUNKS)
            return sl_error_set(err, SL_EOVERFLOW, NULL,
                                "shards of more than %" PRIu64 " inner chunks are refused",
                                SL_SHARD_MAX_CHUNKS);
    }
    m->n_per_shard = n;
    struct sl__chunk_layout lay;
    sl__meta_index_layout(m, &lay);
    SL_TRY(sl__chain_check(&m->index_chain, &lay, err));
    if (m->index_chain.n_aa > 0 ||
        !sl__chain_fixed_size(&m->index_chain, lay.n_bytes, &m->index_bytes))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "index_codecs must be bytes and crc32c only (a fixed-size index)");
    return SL_OK;
}

sl_status
sl__meta_check(struct sl__meta *m, struct sl_error *err)
{
    SL_TRY(meta_check_extents(m, err));
    if (m->sharded)
        SL_TRY(meta_check_shards(m, err));
    const uint64_t *shape = m->sharded ? m->inner : m->chunk;
    uint64_t n;
    SL_TRY(sl_shape_count(m->rank, shape, &n, err));
    size_t es = sl_dtype_size(m->dtype);
    if (n > SL_CHUNK_MAX_BYTES / es) {
        char s[200];
        sl_shape_format(m->rank, shape, s, sizeof(s));
        return sl_error_set(err, SL_EOVERFLOW, NULL,
                            "chunks of shape %s and %zu-byte elements exceed the %zu-byte limit", s,
                            es, SL_CHUNK_MAX_BYTES);
    }
    struct sl__chunk_layout lay;
    SL_TRY(sl__chunk_layout_init(&lay, m->dtype, m->rank, shape, err));
    return sl__chain_check(&m->chain, &lay, err);
}

/* ---- chunk keys ------------------------------------------------------------------ */

size_t
sl__meta_chunk_key(const struct sl__meta *m, const uint64_t *coords, char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    if (m->keys == SL__KEYS_DEFAULT) {
        sl__strbuf_append(buf, size, &len, "c");
        for (uint32_t d = 0; d < m->rank; d++)
            sl__strbuf_append(buf, size, &len, "%c%" PRIu64, m->sep, coords[d]);
        return len;
    }
    if (m->rank == 0)
        sl__strbuf_append(buf, size, &len, "0");
    for (uint32_t d = 0; d < m->rank; d++)
        sl__strbuf_append(buf, size, &len, "%s%" PRIu64, d > 0 ? (m->sep == '/' ? "/" : ".") : "",
                          coords[d]);
    return len;
}

/* Parse decimal digits at *p into *v; advance.  Only the canonical form:
 * "01" is not the key of chunk 1, so no two objects count as one chunk. */
static bool
key_digits(const char **p, uint64_t *v)
{
    const char *s = *p;
    uint64_t x = 0;
    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (x > (UINT64_MAX - 9) / 10)
            return false;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    *p = s;
    *v = x;
    return true;
}

bool
sl__meta_parse_chunk_key(const struct sl__meta *m, const char *key, uint64_t *coords)
{
    const char *p = key;
    if (m->keys == SL__KEYS_DEFAULT) {
        if (*p++ != 'c')
            return false;
        for (uint32_t d = 0; d < m->rank; d++)
            if (*p++ != m->sep || !key_digits(&p, &coords[d]))
                return false;
        return *p == '\0';
    }
    if (m->rank == 0)
        return strcmp(key, "0") == 0;
    for (uint32_t d = 0; d < m->rank; d++)
        if ((d > 0 && *p++ != m->sep) || !key_digits(&p, &coords[d]))
            return false;
    return *p == '\0';
}

/* ---- shard geometry: inner chunks and the shards holding them ---- */

void
sl__shard_of_inner(const struct sl__meta *m, const uint64_t *inner, uint64_t *shard, uint64_t *k)
{
    uint64_t idx = 0;
    for (uint32_t d = 0; d < m->rank; d++) {
        shard[d] = inner[d] / m->per_shard[d];
        idx = idx * m->per_shard[d] + inner[d] % m->per_shard[d];
    }
    *k = idx;
}

void
sl__shard_inner_coords(const struct sl__meta *m, const uint64_t *shard, uint64_t k, uint64_t *inner)
{
    for (uint32_t d = m->rank; d-- > 0;) {
        inner[d] = shard[d] * m->per_shard[d] + k % m->per_shard[d];
        k /= m->per_shard[d];
    }
}
