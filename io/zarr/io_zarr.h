/* SPDX-License-Identifier: MIT */
/*
 * The zarr sub-library's interface to the io layers above it (txn,
 * batch): array metadata, the array object, whole-chunk fetch and store,
 * shard indexes and shard assembly.  Boxes and fill are core's (box.c).
 */
#ifndef SL_IO_ZARR_H
#define SL_IO_ZARR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/array.h>
#include <sluice/grid.h>

#include "io_codec.h"
#include "io_store.h"

/* How chunk coordinates become keys. */
typedef enum sl__key_encoding {
    SL__KEYS_DEFAULT, /* v3 "default": "c/1/2" */
    SL__KEYS_V2,      /* v3 "v2" and every v2 array: "1.2" */
} sl__key_encoding;

/* Largest extent of one dimension, and of one chunk's decoded bytes. */
#define SL_DIM_MAX ((uint64_t)1 << 62)

/* Metadata of one array, whichever format it came from.  Sharded arrays
 * keep the shard shape in `chunk`, the inner chunk shape in `inner`, and the
 * inner chunks' codecs in `chain`. */
struct sl__meta {
    int zarr_format;                 /* 2 or 3 */
    uint32_t rank;                   /* dimensions, <= SL_MAX_RANK */
    uint64_t shape[SL_MAX_RANK];     /* array shape */
    sl_dtype dtype;                  /* element type */
    uint64_t chunk[SL_MAX_RANK];     /* chunk grid: stored objects (shards when sharded) */
    sl__key_encoding keys;           /* chunk key encoding */
    char sep;                        /* '/' or '.' */
    _Alignas(16) uint8_t fill[16];   /* fill value, native byte order, aligned for any type */
    bool fill_null;                  /* v2 "fill_value": null (reads as zeros) */
    struct sl__chain chain;          /* codecs of a (inner) chunk */
    bool sharded;                    /* sharding_indexed */
    uint64_t inner[SL_MAX_RANK];     /* sharded: inner chunk shape */
    uint64_t per_shard[SL_MAX_RANK]; /* sharded: inner chunks per shard, per dimension */
    uint64_t n_per_shard;            /* sharded: inner chunks per shard */
    struct sl__chain index_chain;    /* sharded: codecs of the index */
    bool index_at_start;             /* sharded: index before the chunks */
    size_t index_bytes;              /* sharded: stored size of the index */
    char *dim_names[SL_MAX_RANK];    /* owned; NULL: unnamed */
    bool has_dim_names;              /* "dimension_names" present (v2: _ARRAY_DIMENSIONS) */
    char *attributes;                /* owned JSON object text, compact */
    struct sl_allocator alloc;       /* owns dim_names and attributes */
};

/* Zero `m` and set its allocator (NULL: default). */
void sl__meta_init(struct sl__meta *m, const struct sl_allocator *alloc);

/* Free what `m` owns; safe on a zeroed or initialized meta. */
void sl__meta_fini(struct sl__meta *m);

/* The layout of one (inner) chunk; of one shard index. */
void sl__meta_chunk_layout(const struct sl__meta *m, struct sl__chunk_layout *lay);
void sl__meta_index_layout(const struct sl__meta *m, struct sl__chunk_layout *lay);

/* Locks that serialize read-modify-write of one stored object (a chunk
 * rewritten in part, or a shard): object i uses stripe i % SL__STRIPES. */
#define SL__STRIPES 64

/* Opaque in array.h. */
struct sl_array {
    _Atomic uint32_t refs;                /* the last unref frees */
    sl_store *store;                      /* retained */
    char *prefix;                         /* owned: "" or "path/" */
    size_t prefix_len;                    /* strlen(prefix) */
    char *path;                           /* owned: the path opened ("" for the root) */
    struct sl__meta meta;                 /* immutable after open */
    struct sl_allocator alloc;            /* the array's own memory */
    bool write_fill_chunks;               /* store chunks equal to the fill value */
    struct sl_grid chunk_grid;            /* chunks read and written (inner if sharded) */
    struct sl_grid object_grid;           /* stored objects (shards if sharded) */
    struct sl__chunk_layout layout;       /* one (inner) chunk */
    size_t elem_bytes;                    /* bytes per element */
    pthread_mutex_t stripes[SL__STRIPES]; /* see SL__STRIPES */
    /* Inner chunks hinted (sl_array_prefetch_chunk) before their shard's
     * index was known: hinted when a read decodes that index (hint.c).
     * Mutable state of a const array, under `hint_lock`. */
    pthread_mutex_t hint_lock;
    struct sl__hint *hints; /* owned; `n_hints` of `cap_hints` */
    size_t n_hints, cap_hints;
};

/* One inner chunk waiting for its shard's index. */
struct sl__hint {
    uint64_t shard; /* linear index in the object grid */
    uint64_t k;     /* the inner chunk in the shard (C order) */
};

/* Remember inner chunk `k` of shard `shard` until its index is known;
 * dropped beyond SL__HINTS_MAX waiting (a hint). */
void sl__hint_add(const sl_array *a, uint64_t shard, uint64_t k);

/* The index of shard `shard` (stored under `key`) is decoded into
 * `entries`: hint the byte ranges of the inner chunks waiting for it. */
void sl__hint_drain(const sl_array *a, uint64_t shard, const char *key, const uint64_t *entries);

/* Free what is waiting (the array is freed). */
void sl__hint_fini(sl_array *a);

/* The key of stored object `coords` (object grid), prefix included. */
size_t sl__array_object_key(const sl_array *a, const uint64_t *coords, char *buf, size_t size);

/* The stripe lock of stored object `coords`. */
pthread_mutex_t *sl__array_stripe(const sl_array *a, const uint64_t *coords);

/* Check chunk coordinates against the chunk grid (SL_EBOUNDS). */
sl_status sl__array_check_coords(const sl_array *a, const uint64_t *coords, struct sl_error *err);

/* Whether chunk `coords` of an unsharded array, hinted before
 * (sl_array_prefetch_chunk), has come whole from its store, so that
 * reading it will not wait.  False for sharded arrays and for stores that
 * do not fetch ahead. */
bool sl__array_chunk_fetched(const sl_array *a, const uint64_t *coords);

/* Check stored-object coordinates against the object grid (shards when
 * sharded) (SL_EBOUNDS naming the dimension and the grid). */
sl_status sl__array_check_object_coords(const sl_array *a, const uint64_t *coords,
                                        struct sl_error *err);

/*
 * Decode chunk `coords` of an unsharded array into `buf` (a whole chunk);
 * when it is absent, set `*missing` and leave `buf` untouched.
 */
sl_status sl__chunk_fetch(const sl_array *a, const uint64_t *coords, void *buf, sl_codec_ctx *ctx,
                          bool *missing, struct sl_error *err);

/* Store chunk `coords` of an unsharded array from `buf` (padding already
 * filled): encoded, or deleted when it is all fill and fill chunks are not
 * written. */
sl_status sl__chunk_store(const sl_array *a, const uint64_t *coords, const void *buf,
                          sl_codec_ctx *ctx, struct sl_error *err);

/* An index entry's offset and nbytes when the inner chunk is empty. */
#define SL__SHARD_EMPTY UINT64_MAX

/* The byte range of a shard's index (a suffix, or the first bytes), which
 * a remote store fetches with the request that opens the shard. */
struct sl_byte_range sl__shard_index_first(const struct sl__meta *m);

/* Open shard `key` of `a`'s store for reading, fetching its index range
 * first (sl__reader_open_first). */
sl_status sl__shard_open(sl_store *store, const struct sl__meta *m, const char *key,
                         struct sl__reader *rd, struct sl_error *err);

/* Read and decode the index of the shard open in `rd` into the context's
 * SL__SCR_INDEX; `*entries` points there. */
sl_status sl__shard_index_read(struct sl__reader *rd, const struct sl__meta *m, sl_codec_ctx *ctx,
                               const uint64_t **entries, struct sl_error *err);

/* Called once per inner chunk read: its index `k` in the shard and its
 * stored bytes. */
typedef sl_status sl__shard_chunk_fn(void *arg, uint64_t k, const uint8_t *bytes, size_t n,
                                     struct sl_error *err);

/*
 * Read inner chunks `which[0..n_which)` (empty ones skipped) of the shard
 * open in `rd` whose decoded index is `entries`, coalescing byte ranges
 * less than 64 KiB apart into single reads of at most 16 MiB, and call `fn`
 * for each in the order of their offsets.  Uses SL__SCR_IO and SL__SCR_PLAN.
 */
sl_status sl__shard_read_entries(struct sl__reader *rd, const uint64_t *entries,
                                 const uint64_t *which, size_t n_which, sl_codec_ctx *ctx,
                                 sl__shard_chunk_fn *fn, void *arg, struct sl_error *err);

/*
 * Assembling a shard: init, add inner chunks (any order), finish.  The
 * shard's bytes go to `out`; entries to `entries` (2 * n_per_shard).
 */
struct sl__shard_builder {
    const struct sl__meta *m; /* the array */
    struct sl_buf *out;       /* the shard being built */
    uint64_t *entries;        /* offset, nbytes per inner chunk */
    uint64_t n_chunks;        /* inner chunks added */
};

sl_status sl__shard_builder_init(struct sl__shard_builder *b, const struct sl__meta *m,
                                 struct sl_buf *out, uint64_t *entries, struct sl_error *err);
sl_status sl__shard_builder_add(struct sl__shard_builder *b, uint64_t k, const uint8_t *bytes,
                                size_t n, struct sl_error *err);
/* Encode and place the index.  `*empty` is true when no chunk was added
 * (the shard should be deleted rather than written). */
sl_status sl__shard_builder_finish(struct sl__shard_builder *b, sl_codec_ctx *ctx, bool *empty,
                                   struct sl_error *err);

/* Inner chunk coordinates (chunk grid) of inner chunk k of shard `shard`. */
void sl__shard_inner_coords(const struct sl__meta *m, const uint64_t *shard, uint64_t k,
                            uint64_t *inner);

/* Shard coordinates and index k within it of inner chunk `inner`. */
void sl__shard_of_inner(const struct sl__meta *m, const uint64_t *inner, uint64_t *shard,
                        uint64_t *k);

/* The previous version of a shard, read whole for a merge (shard.c). */
struct sl__shard_old {
    const uint8_t *bytes;    /* the shard, in the context's SL__SCR_OLD; NULL when absent */
    const uint64_t *entries; /* its decoded index, in SL__SCR_INDEX; NULL when absent */
};

/* Read shard `key` of `a` whole and decode its index; an absent shard
 * leaves both pointers NULL.  @return SL_OK, SL_ECORRUPT or a store error. */
sl_status sl__shard_read_old(const sl_array *a, const char *key, sl_codec_ctx *ctx,
                             struct sl__shard_old *old, struct sl_error *err);

#endif /* SL_IO_ZARR_H */
