/* SPDX-License-Identifier: MIT */
/*
 * Checks shared by the two metadata targets: what any parsed struct
 * sl__meta must satisfy (sluice's caps, a valid chain, chunk keys that
 * parse back to their coordinates), and field-by-field equality for
 * write-then-read round trips.
 */
#ifndef SL_FUZZ_META_CHECK_H
#define SL_FUZZ_META_CHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include <sluice/grid.h>

#include "fuzz.h"
#include "zarr_internal.h"

/* Chunk `coords` of `m` gives a key that parses back to `coords`. */
static inline void
fuzz_meta_check_key(const struct sl__meta *m, const uint64_t *coords)
{
    char key[SL_STORE_KEY_MAX + 1];
    size_t len = sl__meta_chunk_key(m, coords, key, sizeof(key));
    FUZZ_CHECK(len < sizeof(key), "chunk key of %zu bytes", len);
    struct sl_error err = SL_ERROR_INIT;
    FUZZ_CHECK(sl__key_check(key, len, &err) == SL_OK, "chunk key \"%s\" refused: %s", key,
               err.text);
    uint64_t back[SL_MAX_RANK] = {0};
    FUZZ_CHECK(sl__meta_parse_chunk_key(m, key, back), "chunk key \"%s\" does not parse", key);
    for (uint32_t d = 0; d < m->rank; d++)
        FUZZ_CHECK(back[d] == coords[d], "key \"%s\" dimension %u: %llu, not %llu", key, d,
                   (unsigned long long)back[d], (unsigned long long)coords[d]);
}

/* What every successfully parsed metadata satisfies. */
static inline void
fuzz_meta_check_parsed(const struct sl__meta *m)
{
    FUZZ_CHECK(m->rank <= SL_MAX_RANK, "rank %u", m->rank);
    FUZZ_CHECK(m->zarr_format == 2 || m->zarr_format == 3, "format %d", m->zarr_format);
    struct sl__chunk_layout lay;
    sl__meta_chunk_layout(m, &lay);
    FUZZ_CHECK(lay.n_bytes <= SL_CHUNK_MAX_BYTES, "chunk of %zu bytes", lay.n_bytes);
    struct sl__chain ch = m->chain;
    struct sl_error err = SL_ERROR_INIT;
    FUZZ_CHECK(sl__chain_check(&ch, &lay, &err) == SL_OK, "parsed chain invalid: %s", err.text);
    if (m->sharded) {
        FUZZ_CHECK(m->n_per_shard >= 1 && m->n_per_shard <= SL_SHARD_MAX_CHUNKS,
                   "%llu inner chunks", (unsigned long long)m->n_per_shard);
        FUZZ_CHECK(m->index_bytes >= 16 * m->n_per_shard, "index of %zu bytes", m->index_bytes);
    }
    char text[1024];
    sl__chain_describe(&m->chain, text, sizeof(text));
    struct sl_grid g;
    err = SL_ERROR_INIT;
    FUZZ_CHECK(sl_grid_init_regular(&g, m->rank, m->shape, m->chunk, &err) == SL_OK,
               "grid of parsed metadata refused: %s", err.text);
    uint64_t first[SL_MAX_RANK] = {0}, last[SL_MAX_RANK] = {0};
    for (uint32_t d = 0; d < m->rank; d++)
        last[d] = g.n_chunks[d] > 0 ? g.n_chunks[d] - 1 : 0;
    sl_grid_fini(&g);
    fuzz_meta_check_key(m, first);
    fuzz_meta_check_key(m, last);
}

/* Equal strings, both possibly NULL. */
static inline bool
fuzz_str_equal(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Attribute texts that hold equal JSON objects (key order aside). */
static inline bool
fuzz_json_text_equal(const char *a, const char *b)
{
    json_t *x = json_loads(a != NULL ? a : "{}", 0, NULL);
    json_t *y = json_loads(b != NULL ? b : "{}", 0, NULL);
    bool eq = x != NULL && y != NULL && json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return eq;
}

/* Chains that encode `dt` the same way: byte order means nothing for
 * one-byte types (v2 ">b1" is written back "|b1"). */
static inline bool
fuzz_chain_same(const struct sl__chain *a, const struct sl__chain *b, sl_dtype dt)
{
    struct sl__chain x = *a, y = *b;
    for (uint32_t i = 0; i < x.n && i < y.n && sl_dtype_size(dt) == 1; i++) {
        if (x.c[i].id == SL__CODEC_BYTES)
            x.c[i].u.bytes.endian = SL_ENDIAN_LITTLE;
        if (y.c[i].id == SL__CODEC_BYTES)
            y.c[i].u.bytes.endian = SL_ENDIAN_LITTLE;
    }
    return memcmp(&x, &y, sizeof(x)) == 0;
}

/* `b` (written from `a` and read back) describes the same array. */
static inline void
fuzz_meta_check_same(const struct sl__meta *a, const struct sl__meta *b)
{
    FUZZ_CHECK(a->zarr_format == b->zarr_format && a->rank == b->rank && a->dtype == b->dtype,
               "format, rank or type changed");
    FUZZ_CHECK(memcmp(a->shape, b->shape, sizeof(a->shape)) == 0, "shape changed");
    FUZZ_CHECK(memcmp(a->chunk, b->chunk, sizeof(a->chunk)) == 0, "chunk shape changed");
    FUZZ_CHECK(a->keys == b->keys && a->sep == b->sep, "key encoding changed");
    FUZZ_CHECK(a->fill_null == b->fill_null, "fill null changed");
    FUZZ_CHECK(memcmp(a->fill, b->fill, sl_dtype_size(a->dtype)) == 0, "fill value changed");
    FUZZ_CHECK(fuzz_chain_same(&a->chain, &b->chain, a->dtype), "codec chain changed");
    FUZZ_CHECK(a->sharded == b->sharded, "sharding changed");
    if (a->sharded) {
        FUZZ_CHECK(memcmp(a->inner, b->inner, sizeof(a->inner)) == 0, "inner shape changed");
        FUZZ_CHECK(memcmp(&a->index_chain, &b->index_chain, sizeof(a->index_chain)) == 0,
                   "index codecs changed");
        FUZZ_CHECK(a->index_at_start == b->index_at_start, "index location changed");
    }
    FUZZ_CHECK(a->has_dim_names == b->has_dim_names, "dimension names appeared or vanished");
    for (uint32_t d = 0; d < a->rank; d++)
        FUZZ_CHECK(fuzz_str_equal(a->dim_names[d], b->dim_names[d]), "dimension name %u changed",
                   d);
    FUZZ_CHECK(fuzz_json_text_equal(a->attributes, b->attributes), "attributes changed: %s -> %s",
               a->attributes, b->attributes);
}

#endif /* SL_FUZZ_META_CHECK_H */
