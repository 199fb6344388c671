/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the transaction sub-library, shared by its files
 * and open to its tests: the staging table (stripes of units, each a shard
 * or an unsharded chunk, holding staged chunks), and the steps of staging,
 * flushing, encoding and writing behind.
 */
#ifndef SL_TXN_INTERNAL_H
#define SL_TXN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <sluice/txn.h>

#include "io_zarr.h"

/* Stripes of a transaction's staging table: units hash to index % stripes. */
#define SL__TXN_STRIPES 16
/* Writer threads of write_behind at most (txn_behind.c). */
#define SL__TXN_WRITERS_MAX 16

/*
 * One staged chunk: a whole decoded chunk (C order, native byte order,
 * padding beyond the array filled).  Complete when every element inside
 * the array was written; partial otherwise, with a bit per element written.
 * A complete chunk staged with encode_on_write is kept as its encoding
 * only: `data` is NULL ("bare") and `encoded` is set.  Records are pooled
 * by their transaction and reused with their buffers, bare ones apart.
 */
struct sl__txn_chunk {
    struct sl__txn_chunk *next; /* the pool's free list */
    uint8_t *data;              /* layout.n_bytes, 64-byte aligned; NULL when bare */
    uint64_t *mask;             /* one bit per element; allocated on first partial use */
    bool partial;               /* `mask` says which elements were written */
    uint64_t n_written;         /* partial: elements inside the array written */
    uint64_t counted;           /* bytes it counts in staged_bytes */
    struct sl_buf enc;          /* the encoding, when `encoded` (and not `view`) */
    const uint8_t *view;        /* or: the encoding in its unit's assembled bytes */
    size_t view_n;              /* its length */
    bool encoded;               /* `enc` or `view` holds it (or `empty`) */
    bool empty;                 /* encoded: all fill, not stored */
};

/* The encoding of an encoded, non-empty chunk record. */
static inline struct sl__view
sl__txn_chunk_encoding(const struct sl__txn_chunk *c)
{
    return c->view != NULL ? (struct sl__view){c->view, c->view_n}
                           : (struct sl__view){c->enc.data, c->enc.size};
}

/* How far a unit has gone. */
typedef enum sl__txn_unit_state {
    SL__TXN_STAGING,  /* accepting writes */
    SL__TXN_FLUSHING, /* being written; writers of it wait, readers still see it */
} sl__txn_unit_state;

/* One unit of writing: a shard, or a chunk of an unsharded array. */
struct sl__txn_unit {
    uint64_t index;                   /* C-order index in the object grid */
    uint64_t coords[SL_MAX_RANK];     /* object grid coordinates */
    sl__txn_unit_state state;         /* guarded by its stripe's lock */
    uint64_t n_inside;                /* its chunks inside the array */
    uint64_t n_complete;              /* of those, staged complete */
    struct sl__txn_chunk **slots;     /* n_per_unit entries; NULL where nothing is staged */
    bool written;                     /* flush: its write was attempted */
    struct sl__txn_unit *behind_next; /* the writer thread's queue */
    uint64_t behind_bytes;            /* its encodings, counted as staged while handed over */
    bool assembled;                   /* `bytes` holds the shard, built before the hand-over */
    bool assembled_empty;             /* ... which has no chunk left: delete it */
    struct sl_buf bytes;              /* that shard (the unit's allocator) */
    sl_status status;                 /* flush: the outcome */
    struct sl_error err;              /* flush: what failed */
};

/* A lock, its wait queue and the units hashing to it. */
struct sl__txn_stripe {
    _Alignas(SL_CACHELINE) pthread_mutex_t mu; /* guards everything below and the units' staging */
    pthread_cond_t done;                       /* broadcast when a unit leaves the table */
    struct sl__txn_unit **table;               /* open addressing by unit index; NULL slots free */
    size_t cap;                                /* slots in table, a power of two (or 0) */
    size_t n;                                  /* units in table */
};

/* Where a transaction is in its life. */
typedef enum sl__txn_phase {
    SL__TXN_OPEN,       /* writes accepted */
    SL__TXN_COMMITTING, /* commit running */
    SL__TXN_COMMITTED,  /* commit returned */
    SL__TXN_ABORTED,    /* abort returned */
} sl__txn_phase;

/* Opaque in txn.h. */
struct sl_txn {
    sl_array *a;                        /* retained */
    struct sl_txn_opts opts;            /* copied; `par` borrowed */
    struct sl_allocator alloc;          /* the array's allocator */
    uint64_t n_per_unit;                /* chunks per unit (1 unsharded) */
    size_t mask_bytes;                  /* one chunk's mask */
    _Atomic int phase;                  /* sl__txn_phase */
    _Atomic uint32_t n_writers;         /* writes in progress */
    _Atomic uint64_t staged_bytes;      /* chunk data and masks staged */
    _Atomic uint64_t peak_staged_bytes; /* most staged at once */
    _Atomic uint64_t n_chunks_staged;   /* see struct sl_txn_stats */
    _Atomic uint64_t n_units_staged;    /* units in the table or handed over */
    _Atomic uint64_t n_units_written;
    _Atomic uint64_t n_units_failed;
    _Atomic uint64_t n_units_early;
    _Atomic uint64_t n_retries;                     /* see struct sl_txn_stats */
    pthread_mutex_t pool_mu;                        /* guards `pool` and `pool_bare` */
    struct sl__txn_chunk *pool;                     /* free chunk records with a buffer */
    struct sl__txn_chunk *pool_bare;                /* free records without */
    pthread_mutex_t err_mu;                         /* guards `first_err` */
    struct sl_error first_err;                      /* the first unit that failed */
    struct sl__txn_stripe stripes[SL__TXN_STRIPES]; /* the staging table */
    /* The writer thread of opts.write_behind (txn_behind.c). */
    pthread_mutex_t behind_mu;        /* guards the fields below */
    pthread_cond_t behind_cv;         /* broadcast when any of them changes */
    struct sl__txn_unit *behind_head; /* units to write, oldest first */
    struct sl__txn_unit *behind_tail;
    unsigned behind_n;       /* units queued or being written */
    unsigned behind_writers; /* writer threads to start: the store's, at most
                                write_behind, at least 1 */
    unsigned behind_running; /* writer threads started */
    bool behind_started;     /* the first handover started them */
    bool behind_stop;        /* close: exit once the queue is empty */
    pthread_t behind_threads[SL__TXN_WRITERS_MAX];
};

/* Bytes of the encodings unit `u`'s chunks hold (chunks not encoded and
 * fill chunks count 0). */
uint64_t sl__txn_encoded_bytes(const sl_txn *t, const struct sl__txn_unit *u);

/* Assemble complete shard `u`, whose chunks are encoded, into u->bytes
 * with `ctx` (the unit is flushing: no writer changes it); the writer
 * thread then only writes it.  Its chunks then refer to their encodings
 * in u->bytes and give up their own buffers, and u->behind_bytes (counted
 * in staged bytes, in place of what it counted) becomes the shard's
 * size.  False (nothing kept) when `u` is not a complete shard, `ctx` is
 * NULL, or assembling failed (the writer retries and reports). */
bool sl__txn_assemble_early(sl_txn *t, struct sl__txn_unit *u, sl_codec_ctx *ctx);

/* Count `n` bytes more staged (keeping the peak), or fewer (negated). */
void sl__txn_staged_add(sl_txn *t, uint64_t n);

/* The stripe of unit `index`. */
struct sl__txn_stripe *sl__txn_stripe_of(sl_txn *t, uint64_t index);

/* The unit at `index` in its (locked) stripe, or NULL. */
struct sl__txn_unit *sl__txn_table_find(const struct sl__txn_stripe *s, uint64_t index);

/* Remove unit `index` from its (locked) stripe, if there. */
void sl__txn_table_remove(struct sl__txn_stripe *s, uint64_t index);

/* Unit coordinates, its C-order index and chunk `coords`' slot in it. */
void sl__txn_unit_of(const sl_txn *t, const uint64_t *coords, uint64_t *unit, uint64_t *index,
                     uint64_t *k);

/* Stage the whole chunk `coords` from `buf` (with encode_on_write and a
 * `ctx`, as its encoding); `*flush` receives the unit when this completed
 * it and it is to be written now (marked flushing). */
sl_status sl__txn_stage_chunk(sl_txn *t, const uint64_t *coords, const void *buf, sl_codec_ctx *ctx,
                              struct sl__txn_unit **flush, struct sl_error *err);

/* Stage the part `box` (array coordinates) of chunk `coords` from the
 * dense `src` of shape `src_dims` at `src_origin` in array coordinates:
 * whole when `box` is all of the chunk inside the array, else partial (a
 * bare chunk staged there is decoded first, with `ctx` or a temporary
 * context). */
sl_status sl__txn_stage_part(sl_txn *t, const uint64_t *coords, const struct sl_region *box,
                             const void *src, const uint64_t *src_dims, const uint64_t *src_origin,
                             sl_codec_ctx *ctx, struct sl__txn_unit **flush, struct sl_error *err);

/* Return chunk records to the pool, uncounting what they staged. */
void sl__txn_chunk_release(sl_txn *t, struct sl__txn_chunk *c);

/* Make complete chunk `c` of a unit just assembled early refer to its
 * encoding in the unit's assembled bytes (`at`, `n` bytes; NULL: fill)
 * and give up its own buffers, which count no more (stripe locked:
 * readers may be reading it). */
void sl__txn_chunk_into_shard(sl_txn *t, struct sl__txn_chunk *c, const uint8_t *at, size_t n);

/* Copy the elements of `c` its mask marks (all when complete) into the
 * whole chunk `dst`; a bare chunk is decoded there with `ctx`.
 * @return SL_OK, or the decoding's error (SL_ENOMEM, SL_ECORRUPT). */
sl_status sl__txn_chunk_overlay(const sl_txn *t, const struct sl__txn_chunk *c, void *dst,
                                sl_codec_ctx *ctx, struct sl_error *err);

/* Copy box `box` (array coordinates, inside chunk `chunk_region`) of
 * staged chunk `c` into the dense `dst` of `dst_dims` at `dst_origin`
 * (array coordinates), only the written elements of a partial chunk; a
 * bare chunk is decoded first into `ctx`'s SL__SCR_CHUNK.
 * @return as sl__txn_chunk_overlay. */
sl_status sl__txn_chunk_copy_box(const sl_txn *t, const struct sl__txn_chunk *c,
                                 const struct sl_region *chunk_region, const struct sl_region *box,
                                 void *dst, const uint64_t *dst_dims, const uint64_t *dst_origin,
                                 sl_codec_ctx *ctx, struct sl_error *err);

/* Encode the whole chunk `data` into `*v` (chain scratch of `ctx`), or set
 * `*empty` when it is all fill and fill chunks are not stored. */
sl_status sl__txn_chunk_encode(const sl_txn *t, const uint8_t *data, sl_codec_ctx *ctx,
                               struct sl__view *v, bool *empty, struct sl_error *err);

/* The encoding of complete chunk `c`: from the first pass, or made now. */
sl_status sl__txn_chunk_view(const sl_txn *t, const struct sl__txn_chunk *c, sl_codec_ctx *ctx,
                             struct sl__view *v, bool *empty, struct sl_error *err);

/* Encode the whole chunk `data` into `c`'s own `enc`, sized to fit (or
 * mark it `empty`), with `ctx`: encode_on_write's staging.
 * @return SL_OK, or the encoding's error. */
sl_status sl__txn_chunk_encode_keep(const sl_txn *t, struct sl__txn_chunk *c, const uint8_t *data,
                                    sl_codec_ctx *ctx, struct sl_error *err);

/*
 * Write units[0..n) (each flushing): encode their complete chunks on
 * opts.par, then assemble and write each unit once under its stripe lock,
 * leave the table, report and release it.  `ctx` is the calling thread's
 * context (NULL: a temporary one).  `early`: a flush before commit.
 */
void sl__txn_flush(sl_txn *t, struct sl__txn_unit **units, size_t n, sl_codec_ctx *ctx, bool early);

/* The first half of sl__txn_flush: encode the complete chunks of
 * units[0..n) not yet encoded, on opts.par; without a pool (or with one
 * chunk) on this thread with `here`, or (`here` NULL) not at all. */
void sl__txn_encode_units(sl_txn *t, struct sl__txn_unit **units, size_t n, sl_codec_ctx *here);

/* The second half: write units[0..n), then report and free them. */
void sl__txn_write_units(sl_txn *t, struct sl__txn_unit **units, size_t n, sl_codec_ctx *ctx,
                         bool early);

/* Hand flushing unit `u` (encoded) to the writer thread, starting it if
 * needed and waiting while it holds opts.write_behind units.  false: it is
 * not taken (the option is off, or the thread cannot start); write it. */
bool sl__txn_behind_take(sl_txn *t, struct sl__txn_unit *u);

/* Wait until the writer thread holds no unit; true if it held any. */
bool sl__txn_behind_drain(sl_txn *t);

/* Drain, then stop and join the writer thread (close). */
void sl__txn_behind_stop(sl_txn *t);

/* Record a unit's outcome, report it to opts.on_unit, release its chunks
 * and free it. */
void sl__txn_unit_finish(sl_txn *t, struct sl__txn_unit *u, bool early);

#endif /* SL_TXN_INTERNAL_H */
