/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the batched-read sub-library, shared by its
 * files and open to its tests.  The plan of a batched read says which
 * chunks the selections need and which selections each chunk serves.  It
 * depends only on the chunk grid, the shard shape and the selections, not
 * on stored data, so the graph's select-over-get plans with it too.
 */
#ifndef SL_BATCH_INTERNAL_H
#define SL_BATCH_INTERNAL_H

#include <sluice/batch.h>

#include "io_zarr.h"

/*
 * The plan of a batched read: which chunks the selections need, and which
 * selections each chunk serves.  It depends only on the chunk grid, the
 * shard shape and the selections, not on stored data, so the graph's
 * select-over-get plans with it too.
 */

/* One chunk the selections need, read once. */
struct sl__batch_chunk {
    uint64_t chunk;  /* C-order linear index in the chunk grid */
    uint64_t object; /* C-order linear index of its stored object (its shard, or itself) */
    uint64_t k;      /* its index in the shard (C order); 0 when unsharded */
    size_t first;    /* its selections: plan->sels[first .. first + n_sels), ascending */
    size_t n_sels;   /* >= 1 */
};

/* One stored object (shard, or chunk when unsharded) the selections meet. */
struct sl__batch_object {
    uint64_t object; /* C-order linear index in the object grid */
    size_t first;    /* its chunks: plan->chunks[first .. first + n_chunks), by k */
    size_t n_chunks; /* >= 1 */
};

struct sl__batch_plan {
    struct sl__batch_chunk *chunks;   /* by (object, k): a shard's chunks are adjacent */
    size_t n_chunks;                  /* distinct chunks met */
    size_t *sels;                     /* selection indices, grouped by chunk */
    size_t n_sels;                    /* (chunk, selection) pairs */
    struct sl__batch_object *objects; /* by object */
    size_t n_objects;                 /* distinct objects met */
    struct sl_allocator alloc;        /* owns the three arrays */
};

/*
 * Check selection `i` against an array of `rank` and `shape`.
 * @return SL_OK; SL_EINVAL (another rank, a start after its stop) or
 * SL_EBOUNDS (outside the array), the message naming the selection, its
 * region, the dimension and the array's shape.
 */
sl_status sl__batch_check_selection(size_t i, const struct sl_region *r, uint32_t rank,
                                    const uint64_t *shape, struct sl_error *err);

/*
 * Plan selections `regions[0..n)` over chunk grid `chunks`, whose chunks
 * are grouped into shards of `per_shard[d]` chunks per dimension (NULL:
 * unsharded, each chunk its own object).  Selections with `skip[i]` !=
 * SL_OK are left out (`skip` may be NULL); the others must lie inside the
 * grid.  Memory: 32 bytes per (chunk, selection) pair while planning, then
 * 40 per chunk, 24 per object and 8 per pair.
 * @return SL_OK, SL_ENOMEM or SL_EOVERFLOW; on failure nothing needs
 * releasing.
 */
sl_status sl__batch_plan_build(struct sl__batch_plan *p, const struct sl_grid *chunks,
                               const uint64_t *per_shard, size_t n, const struct sl_region *regions,
                               const sl_status *skip, const struct sl_allocator *alloc,
                               struct sl_error *err);

/* Release a plan; safe on a zeroed one. */
void sl__batch_plan_fini(struct sl__batch_plan *p);

/*
 * Where the selections' elements go: each selection into its own dense
 * C-order buffer of its shape (`bufs`), or all of them into one buffer of
 * `dims`, concatenated along `axis`, selection i's slab starting at
 * `offsets[i]` along it.
 */
struct sl__batch_out {
    void *const *bufs;          /* one buffer per selection, or NULL: concatenated */
    uint8_t *buf;               /* concatenated: the buffer */
    uint32_t axis;              /* concatenated: along this dimension */
    const uint64_t *offsets;    /* concatenated: each selection's start along `axis` */
    uint64_t dims[SL_MAX_RANK]; /* concatenated: the buffer's shape */
};

/* How a chunk's decoded elements reach the selections of a plan. */
struct sl__batch_geom {
    const struct sl_grid *grid;      /* the chunk grid */
    const uint64_t *chunk_shape;     /* full chunk shape (decoded buffers), rank entries */
    size_t elem_bytes;               /* bytes per element */
    const uint8_t *fill;             /* the fill value, one element */
    const struct sl_region *regions; /* the selections */
    struct sl__batch_out out;        /* their outputs */
};

/*
 * Where chunk `c` of `p` can be decoded straight into an output: a
 * selection containing the chunk's whole region (not an edge chunk) whose
 * output holds the chunk's elements contiguously in the chunk's own C
 * order (every dimension after the first one of extent > 1 spans the
 * output's full width).  @return the address, with the selection in
 * `*sel`, or NULL when every piece needs a copy.
 */
uint8_t *sl__batch_direct(const struct sl__batch_plan *p, size_t c, const struct sl__batch_geom *g,
                          size_t *sel);

/*
 * Copy chunk `c`'s decoded elements into every selection it serves: from
 * `data`, a whole chunk buffer, or, when `in_sel` != SIZE_MAX, from
 * selection `in_sel`'s output, where sl__batch_direct placed the decoding
 * (that selection is then already served).
 */
void sl__batch_scatter(const struct sl__batch_plan *p, size_t c, const struct sl__batch_geom *g,
                       const uint8_t *data, size_t in_sel);

/* Write the fill value into every piece of chunk `c` (an absent chunk). */
void sl__batch_fill(const struct sl__batch_plan *p, size_t c, const struct sl__batch_geom *g);

/* One batched read in progress (batch_read.c runs it; batch_shard.c reads
 * the shards of sharded arrays). */
struct sl__batch_run {
    const sl_array *a;                /* the array read */
    struct sl__batch_plan plan;       /* chunks and the selections they serve */
    struct sl__batch_geom geom;       /* where decoded chunks go */
    uint64_t gap_bytes;               /* options, resolved */
    uint64_t max_bytes;               /* ... */
    const struct sl_parallel *par;    /* the caller's; NULL: a plain loop */
    size_t n;                         /* selections */
    sl_status *status;                /* n: each selection's outcome */
    size_t *failed_at;                /* n: plan index of the chunk that failed it */
    struct sl_error *errors;          /* the caller's n records, or NULL */
    struct sl_error first;            /* the error of the lowest-numbered failed selection */
    size_t first_sel;                 /* that selection; SIZE_MAX while none */
    pthread_mutex_t lock;             /* guards the five fields above while chunks run */
    uint8_t *done;                    /* per chunk: delivered or failed */
    _Atomic uint8_t *claimed;         /* per chunk, taken by an iteration; NULL: iteration i
                                         reads chunk i (claim_chunk) */
    _Atomic size_t claim_from;        /* every chunk before it is claimed */
    sl_codec_ctx **ctxs;              /* per worker, made on first use */
    sl_codec_ctx *ctx0;               /* the caller's context for worker 0, or NULL */
    sl_codec_ctx *const *worker_ctxs; /* the caller's per-worker contexts, or NULL */
    unsigned n_workers;               /* entries of ctxs */
    _Atomic uint64_t n_decoded;       /* see struct sl_batch_stats */
    _Atomic uint64_t n_direct;        /* ... */
    _Atomic uint64_t n_missing;       /* ... */
    _Atomic uint64_t n_index_reads;   /* ... */
    _Atomic uint64_t n_requests;      /* ... */
    _Atomic uint64_t bytes_requested;
};

/* One iteration of a batch loop: item `i`, on this worker's codec context
 * (NULL when none could be made: the item fails with SL_ENOMEM). */
typedef void sl__batch_item_fn(struct sl__batch_run *run, void *arg, size_t i, sl_codec_ctx *ctx);

/* Run fn for items [0, n) on the run's executor, every worker with its
 * own codec context kept for the whole run.  Items record their own
 * failures.  @return SL_OK, or SL_ECANCELED when the executor stopped. */
sl_status sl__batch_loop(struct sl__batch_run *run, size_t n, sl__batch_item_fn *fn, void *arg);

/* Record that selection `s` failed with `e`, found at plan position
 * `order`, unless something earlier failed it.  Caller holds the lock or
 * runs alone. */
void sl__batch_fail_selection_locked(struct sl__batch_run *run, size_t s, size_t order,
                                     const struct sl_error *e);

/* Record that chunk `c` failed with `e`: every selection it serves fails,
 * unless a chunk earlier in the plan already failed it.  Any thread. */
void sl__batch_fail_chunk(struct sl__batch_run *run, size_t c, const struct sl_error *e);

/* Where to decode chunk `c`: straight into an output (`*in_sel` names the
 * selection), or the context's chunk scratch (`*in_sel` = SIZE_MAX). */
sl_status sl__batch_target(struct sl__batch_run *run, size_t c, sl_codec_ctx *ctx, uint8_t **target,
                           size_t *in_sel, struct sl_error *err);

/* Finish chunk `c`: fail it (`st` != SL_OK, with `e`), fill its pieces
 * (`missing`), or copy the decoding at `target` to its other selections. */
void sl__batch_finish(struct sl__batch_run *run, size_t c, sl_status st, bool missing,
                      const uint8_t *target, size_t in_sel, const struct sl_error *e);

/* Read every chunk of the plan of a sharded array: shards in waves, each
 * index read once, byte ranges coalesced, chunks decoded in parallel.
 * @return SL_OK (failures are recorded per chunk), or the executor's
 * SL_ECANCELED / SL_ENOMEM for the wave state, when chunks are left. */
sl_status sl__batch_read_shards(struct sl__batch_run *run, struct sl_error *err);

#endif /* SL_BATCH_INTERNAL_H */
