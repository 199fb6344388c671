/* SPDX-License-Identifier: MIT */
/*
 * Region reads and writes: a dense C-order box of the array assembled from
 * (or scattered to) the chunks it meets, with the fill value where nothing
 * is stored.  Unsharded arrays work chunk by chunk; sharded arrays shard by
 * shard, reading each index once and only the inner chunks needed, and
 * writing each shard once.  Chunks (shards) run through the caller's
 * "parallel for", each worker with its own codec context.
 *
 * DESIGN: different chunks never share bytes of the region buffer, so
 * parallel iterations need no locks on it.  Partly covered chunks and shards
 * are read, merged and rewritten under their stripe lock, so concurrent
 * region writes that meet in one chunk do not lose each other's data.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/array_io.h>

#include "zarr_internal.h"

/* One region operation, shared by its iterations. */
struct region_job {
    const sl_array *a;
    struct sl_region region;    /* the box, array coordinates */
    uint64_t dims[SL_MAX_RANK]; /* its shape: the buffer's dimensions */
    uint8_t *dst;               /* reads: the caller's buffer */
    const uint8_t *src;         /* writes: the caller's buffer */
    const struct sl_grid *grid; /* chunks (unsharded) or shards iterated */
    struct sl_region range;     /* grid coordinates met, [start, stop) */
    uint64_t range_dims[SL_MAX_RANK];
};

static void
job_coords(const struct region_job *job, size_t i, uint64_t *coords)
{
    for (uint32_t d = job->region.rank; d-- > 0;) {
        coords[d] = job->range.start[d] + i % job->range_dims[d];
        i /= job->range_dims[d];
    }
}

/* Box geometry of `obj` (an object region, clipped) ∩ the job's region. */
struct part {
    struct sl_region box;         /* the intersection, array coordinates */
    uint64_t shape[SL_MAX_RANK];  /* its extents */
    uint64_t in_obj[SL_MAX_RANK]; /* its origin relative to the object */
    uint64_t in_buf[SL_MAX_RANK]; /* its origin relative to the region */
    bool whole;                   /* it is all of the object's in-array part */
};

static bool
part_of(const struct region_job *job, const struct sl_region *obj, struct part *p)
{
    if (!sl_region_intersect(obj, &job->region, &p->box))
        return false;
    p->whole = sl_region_equal(obj, &p->box);
    for (uint32_t d = 0; d < job->region.rank; d++) {
        p->shape[d] = p->box.stop[d] - p->box.start[d];
        p->in_obj[d] = p->box.start[d] - obj->start[d];
        p->in_buf[d] = p->box.start[d] - job->region.start[d];
    }
    return true;
}

/* Object `i` of the job: its coordinates, and its part (false when none). */
static bool
job_part(const struct region_job *job, size_t i, uint64_t *coords, struct part *p)
{
    struct sl_region obj;
    job_coords(job, i, coords);
    sl_grid_chunk_region(job->grid, coords, &obj);
    return part_of(job, &obj, p);
}

/* True when the in-array part `obj` of a chunk is smaller than the chunk. */
static bool
is_edge(const sl_array *a, const struct sl_region *obj)
{
    for (uint32_t d = 0; d < a->meta.rank; d++)
        if (obj->stop[d] - obj->start[d] < a->layout.shape[d])
            return true;
    return false;
}

/* Check region and buffer; set up the job over `grid`; `*n` iterations. */
static sl_status
job_init(struct region_job *job, const sl_array *a, const struct sl_region *region,
         size_t buf_bytes, const struct sl_grid *grid, size_t *n, struct sl_error *err)
{
    if (region == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "region is missing");
    SL_TRY(sl_region_check_within(region, a->meta.rank, a->meta.shape, err));
    size_t bytes;
    uint64_t count;
    SL_TRY(sl_region_count(region, &count, err));
    if (!sl_size_mul_fits((size_t)count, a->elem_bytes, &bytes) || count > SIZE_MAX)
        return sl_error_set(err, SL_EOVERFLOW, NULL, "region of %" PRIu64 " elements", count);
    if (buf_bytes < bytes)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "buffer of %zu bytes is smaller than the region's %zu", buf_bytes,
                            bytes);
    memset(job, 0, sizeof(*job));
    job->a = a;
    job->region = *region;
    job->grid = grid;
    sl_region_shape(region, job->dims);
    *n = 0;
    if (sl_region_is_empty(region))
        return SL_OK;
    sl_grid_chunks_meeting(grid, region, &job->range);
    uint64_t total = 1;
    for (uint32_t d = 0; d < a->meta.rank; d++) {
        job->range_dims[d] = job->range.stop[d] - job->range.start[d];
        total *= job->range_dims[d];
    }
    *n = (size_t)total;
    return SL_OK;
}

/* ---- unsharded ------------------------------------------------------------------- */

static sl_status
read_chunk_part(void *arg, size_t i, sl_codec_ctx *ctx, struct sl_error *err)
{
    const struct region_job *job = arg;
    const sl_array *a = job->a;
    uint64_t coords[SL_MAX_RANK];
    struct part p;
    if (!job_part(job, i, coords, &p))
        return SL_OK;
    struct sl_buf *chunk;
    bool missing;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_CHUNK, a->layout.n_bytes, &chunk, err));
    SL_TRY(sl__chunk_fetch(a, coords, chunk->data, ctx, &missing, err));
    if (missing)
        sl__box_fill(&(struct sl__box){.base = job->dst, .dims = job->dims, .origin = p.in_buf},
                     p.shape, a->meta.rank, a->meta.fill, a->elem_bytes);
    else
        sl__box_copy(&(struct sl__box){.base = job->dst, .dims = job->dims, .origin = p.in_buf},
                     &(struct sl__box){
                         .base = (void *)chunk->data, .dims = a->layout.shape, .origin = p.in_obj},
                     p.shape, a->meta.rank, a->elem_bytes);
    return SL_OK;
}

static sl_status
write_chunk_part(void *arg, size_t i, sl_codec_ctx *ctx, struct sl_error *err)
{
    const struct region_job *job = arg;
    const sl_array *a = job->a;
    uint64_t coords[SL_MAX_RANK];
    struct part p;
    if (!job_part(job, i, coords, &p))
        return SL_OK;
    struct sl_buf *chunk;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_CHUNK, a->layout.n_bytes, &chunk, err));
    size_t n_elems = a->layout.n_bytes / a->elem_bytes;
    pthread_mutex_t *lock = p.whole ? NULL : sl__array_stripe(a, coords);
    sl_status st = SL_OK;
    if (lock != NULL) {
        bool missing;
        pthread_mutex_lock(lock);
        st = sl__chunk_fetch(a, coords, chunk->data, ctx, &missing, err);
        if (st == SL_OK && missing)
            sl__fill_elements(chunk->data, n_elems, a->meta.fill, a->elem_bytes);
    } else if (is_edge(a, &p.box)) {
        /* Whole (so the box is the chunk's in-array part): only the padding
         * beyond the array needs the fill value. */
        sl__fill_elements(chunk->data, n_elems, a->meta.fill, a->elem_bytes);
    }
    if (st == SL_OK) {
        sl__box_copy(
            &(struct sl__box){.base = chunk->data, .dims = a->layout.shape, .origin = p.in_obj},
            &(struct sl__box){.base = (void *)job->src, .dims = job->dims, .origin = p.in_buf},
            p.shape, a->meta.rank, a->elem_bytes);
        st = sl__chunk_store(a, coords, chunk->data, ctx, err);
    }
    if (lock != NULL)
        pthread_mutex_unlock(lock);
    return st;
}

/* ---- sharded --------------------------------------------------------------------- */

/* One shard of a region read. */
struct shard_read {
    const struct region_job *job;
    const uint64_t *shard; /* its coordinates */
    sl_codec_ctx *ctx;
};

/* Region and part of inner chunk `inner`; false when outside the job. */
static bool
inner_part(const struct region_job *job, const uint64_t *inner, struct part *p)
{
    struct sl_region obj;
    sl_grid_chunk_region(&job->a->chunk_grid, inner, &obj);
    return part_of(job, &obj, p);
}

static sl_status
read_inner_bytes(void *arg, uint64_t k, const uint8_t *bytes, size_t n, struct sl_error *err)
{
    const struct shard_read *sr = arg;
    const struct region_job *job = sr->job;
    const sl_array *a = job->a;
    uint64_t inner[SL_MAX_RANK];
    struct part p;
    sl__shard_inner_coords(&a->meta, sr->shard, k, inner);
    if (!inner_part(job, inner, &p))
        return SL_OK;
    struct sl_buf *chunk;
    SL_TRY(sl__ctx_scratch(sr->ctx, SL__SCR_CHUNK, a->layout.n_bytes, &chunk, err));
    sl_status st =
        sl__chain_decode(&a->meta.chain, &a->layout, bytes, n, chunk->data, sr->ctx, err);
    if (st != SL_OK) {
        sl__error_locate(err, NULL, a->meta.rank, inner);
        return st;
    }
    sl__box_copy(
        &(struct sl__box){.base = job->dst, .dims = job->dims, .origin = p.in_buf},
        &(struct sl__box){.base = (void *)chunk->data, .dims = a->layout.shape, .origin = p.in_obj},
        p.shape, a->meta.rank, a->elem_bytes);
    return SL_OK;
}

/* The inner chunks (indices k) of `shard` meeting the region, into `which`. */
static size_t
shard_needs(const struct region_job *job, const uint64_t *shard, uint64_t *which)
{
    const struct sl__meta *m = &job->a->meta;
    size_t n = 0;
    for (uint64_t k = 0; k < m->n_per_shard; k++) {
        uint64_t inner[SL_MAX_RANK];
        struct part p;
        sl__shard_inner_coords(m, shard, k, inner);
        bool inside = true;
        for (uint32_t d = 0; d < m->rank && inside; d++)
            inside = inner[d] < job->a->chunk_grid.n_chunks[d];
        if (inside && inner_part(job, inner, &p))
            which[n++] = k;
    }
    return n;
}

/* Fill the parts of the inner chunks in `which` whose entries are empty. */
static void
fill_empty_inner(const struct region_job *job, const uint64_t *shard, const uint64_t *entries,
                 const uint64_t *which, size_t n)
{
    const sl_array *a = job->a;
    for (size_t i = 0; i < n; i++) {
        uint64_t inner[SL_MAX_RANK];
        struct part p;
        if (entries != NULL && entries[2 * which[i]] != SL__SHARD_EMPTY)
            continue;
        sl__shard_inner_coords(&a->meta, shard, which[i], inner);
        if (inner_part(job, inner, &p))
            sl__box_fill(&(struct sl__box){.base = job->dst, .dims = job->dims, .origin = p.in_buf},
                         p.shape, a->meta.rank, a->meta.fill, a->elem_bytes);
    }
}

static sl_status
read_shard_part(void *arg, size_t i, sl_codec_ctx *ctx, struct sl_error *err)
{
    const struct region_job *job = arg;
    const sl_array *a = job->a;
    uint64_t shard[SL_MAX_RANK];
    job_coords(job, i, shard);
    struct sl_buf *wb;
    SL_TRY(sl__ctx_scratch(ctx, SL__SCR_WHICH, (size_t)a->meta.n_per_shard * 8, &wb, err));
    uint64_t *which = (uint64_t *)wb->data;
    size_t n = shard_needs(job, shard, which);
    char key[SL_STORE_KEY_MAX + 1];
    sl__array_object_key(a, shard, key, sizeof(key));
    struct sl__reader rd;
    struct sl_error local = SL_ERROR_INIT;
    sl_status st = sl__shard_open(a->store, &a->meta, key, &rd, &local);
    if (st == SL_ENOTFOUND) {
        fill_empty_inner(job, shard, NULL, which, n);
        return SL_OK;
    }
    const uint64_t *entries = NULL;
    if (st == SL_OK)
        st = sl__shard_index_read(&rd, &a->meta, ctx, &entries, &local);
    struct shard_read sr = {job, shard, ctx};
    if (st == SL_OK)
        st = sl__shard_read_entries(&rd, entries, which, n, ctx, read_inner_bytes, &sr, &local);
    if (st == SL_OK)
        fill_empty_inner(job, shard, entries, which, n);
    sl__reader_close(&rd);
    sl__error_forward(err, &local);
    sl__error_locate(err, key, a->meta.rank, shard);
    return st;
}

/* Decide one inner chunk of a shard a region write rewrites. */
static sl_status
write_inner(void *arg, uint64_t k, const uint64_t *inner, const uint8_t *old, size_t old_n,
            void *chunk, sl_codec_ctx *ctx, sl__inner_action *action, struct sl_error *err)
{
    (void)k;
    const struct region_job *job = arg;
    const sl_array *a = job->a;
    struct sl_region obj;
    struct part p;
    *action = SL__INNER_KEEP;
    sl_grid_chunk_region(&a->chunk_grid, inner, &obj);
    if (!part_of(job, &obj, &p))
        return SL_OK;
    size_t n_elems = a->layout.n_bytes / a->elem_bytes;
    if (!p.whole && old != NULL)
        SL_TRY(sl__chain_decode(&a->meta.chain, &a->layout, old, old_n, chunk, ctx, err));
    else if (!p.whole || is_edge(a, &obj))
        sl__fill_elements(chunk, n_elems, a->meta.fill, a->elem_bytes);
    sl__box_copy(&(struct sl__box){.base = chunk, .dims = a->layout.shape, .origin = p.in_obj},
                 &(struct sl__box){.base = (void *)job->src, .dims = job->dims, .origin = p.in_buf},
                 p.shape, a->meta.rank, a->elem_bytes);
    *action = SL__INNER_REPLACE;
    return SL_OK;
}

static sl_status
write_shard_part(void *arg, size_t i, sl_codec_ctx *ctx, struct sl_error *err)
{
    const struct region_job *job = arg;
    const sl_array *a = job->a;
    uint64_t shard[SL_MAX_RANK];
    struct part p;
    if (!job_part(job, i, shard, &p))
        return SL_OK;
    pthread_mutex_t *lock = sl__array_stripe(a, shard);
    pthread_mutex_lock(lock);
    sl_status st = sl__shard_rewrite(a, shard, !p.whole, write_inner, (void *)job, ctx, err);
    pthread_mutex_unlock(lock);
    return st;
}

/* ---- entry points ------------------------------------------------------------------ */

sl_status
sl_array_read_region(const sl_array *a, const struct sl_region *region, void *buf, size_t buf_bytes,
                     sl_codec_ctx *ctx, const struct sl_parallel *par, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct region_job job;
    size_t n = 0;
    if (buf == NULL && buf_bytes > 0)
        return sl_error_set(err, SL_EINVAL, NULL, "buffer is missing");
    SL_TRY(job_init(&job, a, region, buf_bytes, &a->object_grid, &n, err));
    job.dst = buf;
    if (n == 0)
        return SL_OK;
    return sl__for_each(par, n, ctx, &a->alloc, a->meta.sharded ? read_shard_part : read_chunk_part,
                        &job, err);
}

sl_status
sl_array_write_region(sl_array *a, const struct sl_region *region, const void *buf,
                      size_t buf_bytes, sl_codec_ctx *ctx, const struct sl_parallel *par,
                      struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    struct region_job job;
    size_t n = 0;
    if (buf == NULL && buf_bytes > 0)
        return sl_error_set(err, SL_EINVAL, NULL, "buffer is missing");
    SL_TRY(job_init(&job, a, region, buf_bytes, &a->object_grid, &n, err));
    job.src = buf;
    if (n == 0)
        return SL_OK;
    return sl__for_each(par, n, ctx, &a->alloc,
                        a->meta.sharded ? write_shard_part : write_chunk_part, &job, err);
}
