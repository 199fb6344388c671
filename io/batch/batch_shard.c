/* SPDX-License-Identifier: MIT */
/*
 * Batched reads of sharded arrays.  The plan's shards are taken in waves;
 * each wave runs three steps, two of them in parallel:
 *
 *   1. per shard: open it, read and check its index (once), and look up
 *      the byte range of every inner chunk the selections need;
 *   2. on the calling thread: sort each shard's needed ranges by offset
 *      and coalesce them into requests: a gap of at most `gap_bytes`, a
 *      request of at most `max_bytes`, and, when the executor has several
 *      workers, of at most the wave's bytes / (2 x workers) but not below
 *      1 MiB, so that a few large requests still spread over every worker;
 *   3. per request: read its bytes into the worker's codec context, then
 *      decode each of its inner chunks (straight into an output where one
 *      holds it) and deliver it to its selections; per absent chunk: fill.
 *
 * A remote store is told ahead what each step reads: the wave's shard
 * indexes before step 1 (those it does not hold from earlier reads), and
 * the requests of step 3 a lookahead before their workers read them, so
 * that the wave's reads are in flight together within the store's window
 * rather than one per worker.
 *
 * Unlike sl__shard_read_entries, whose callers decode a shard's chunks on
 * one thread with a fixed 64 KiB gap, this spreads a shard's requests over
 * the workers and takes the gap and cap from the options.
 *
 * DESIGN: a shard's reader stays open from step 1 until its wave ends, so
 * every range read comes from the version of the shard whose index was
 * read, even while another thread replaces it.  A wave opens at most
 * BATCH_WAVE_SHARDS shards, bounding open files.  Requested bytes live in
 * the reading worker's SL__SCR_IO scratch, so memory is bounded by one
 * request per worker and nothing is allocated per request once the
 * contexts are warm.  Per-chunk state is written by the step that owns the
 * chunk and read by the next only after sl_parallel_run returned, which
 * orders them.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "batch_internal.h"

/* Shards open at once. */
#define BATCH_WAVE_SHARDS 256
/* Smallest request the spreading over workers makes. */
#define BATCH_MIN_SPREAD ((uint64_t)1 << 20)
/* How far ahead of the request it reads each item hints a remote store
 * (the store takes what its window and byte limit allow). */
#define BATCH_REQ_LOOKAHEAD 64

/* States of a chunk within its wave. */
enum {
    CH_PENDING, /* not looked up yet */
    CH_ABSENT,  /* its shard or its index entry is absent: fill value */
    CH_READY,   /* its byte range is known */
    CH_FAILED,  /* failed and recorded */
};

/* One open shard of a wave. */
struct wave_shard {
    struct sl__reader rd;           /* open from step 1 to the wave's end */
    bool open;                      /* rd must be closed */
    uint64_t coords[SL_MAX_RANK];   /* shard grid coordinates */
    char key[SL_STORE_KEY_MAX + 1]; /* its store key */
};

/* One coalesced request. */
struct request {
    size_t shard;   /* wave slot */
    size_t first;   /* its chunks: sorted[first .. first + n) */
    size_t n;       /* chunks it holds */
    uint64_t start; /* byte range in the shard */
    uint64_t end;   /* ... */
};

/* A chunk to sort by stored offset. */
struct by_offset {
    uint64_t offset;
    size_t c; /* plan chunk */
};

/* Everything the steps share. */
struct shards {
    struct sl__batch_run *run;
    struct wave_shard *slots; /* BATCH_WAVE_SHARDS */
    size_t o0;                /* the wave's first plan object */
    uint64_t *off;            /* per plan chunk: stored offset */
    uint64_t *len;            /* ... and size */
    uint8_t *state;           /* ... CH_* */
    struct by_offset *sorted; /* the wave's ready chunks, by shard then offset */
    struct request *reqs;     /* the wave's requests */
    size_t n_reqs;            /* ... */
    size_t *absent;           /* the wave's absent chunks */
    size_t n_absent;          /* ... */
    const struct sl_allocator *alloc;
};

/* Fail every chunk of plan object `o` with `e`. */
static void
fail_object(struct shards *sh, size_t o, const struct sl_error *e)
{
    const struct sl__batch_object *obj = &sh->run->plan.objects[o];
    for (size_t c = obj->first; c < obj->first + obj->n_chunks; c++) {
        sh->state[c] = CH_FAILED;
        sl__batch_fail_chunk(sh->run, c, e);
    }
}

/* ---- step 1: indexes ---------------------------------------------------------------- */

/* A remote store: fetch the wave's shard indexes ahead (those an earlier
 * read did not fetch), so that step 1's workers find them in flight
 * together instead of two at a time.  Other stores ignore it. */
static void
hint_indexes(struct shards *sh, size_t n_slots)
{
    const sl_array *a = sh->run->a;
    if (!sl_store_reads_ahead(a->store))
        return;
    struct sl_byte_range first = sl__shard_index_first(&a->meta);
    for (size_t i = 0; i < n_slots; i++) {
        uint64_t coords[SL_MAX_RANK];
        char key[SL_STORE_KEY_MAX + 1];
        sl_grid_coords_of(&a->object_grid, sh->run->plan.objects[sh->o0 + i].object, coords);
        if (sl__array_object_key(a, coords, key, sizeof(key)) < sizeof(key) &&
            !sl__store_has_first(a->store, key, &first))
            sl__store_prefetch(a->store, key, &first);
    }
}

/* Look up the chunks of object `o` in its decoded index (NULL: the shard is
 * absent); false if none needs reading. */
static bool
lookup_chunks(struct shards *sh, size_t o, const uint64_t *entries)
{
    const struct sl__batch_object *obj = &sh->run->plan.objects[o];
    bool any = false;
    for (size_t c = obj->first; c < obj->first + obj->n_chunks; c++) {
        uint64_t k = sh->run->plan.chunks[c].k;
        if (entries == NULL || entries[2 * k] == SL__SHARD_EMPTY) {
            sh->state[c] = CH_ABSENT;
            continue;
        }
        sh->off[c] = entries[2 * k];
        sh->len[c] = entries[2 * k + 1];
        sh->state[c] = CH_READY;
        any = true;
    }
    return any;
}

static void
index_item(struct sl__batch_run *run, void *arg, size_t i, sl_codec_ctx *ctx)
{
    struct shards *sh = arg;
    struct wave_shard *slot = &sh->slots[i];
    const sl_array *a = run->a;
    size_t o = sh->o0 + i;
    struct sl_error e = SL_ERROR_INIT;
    slot->open = false;
    sl_grid_coords_of(&a->object_grid, run->plan.objects[o].object, slot->coords);
    sl_status st = SL_OK;
    if (sl__array_object_key(a, slot->coords, slot->key, sizeof(slot->key)) >= sizeof(slot->key))
        st = sl_error_set(&e, SL_EINVAL, NULL, "shard key too long");
    else if (ctx == NULL)
        st = sl_error_set(&e, SL_ENOMEM, NULL, "no memory for a codec context");
    if (st == SL_OK)
        st = sl__shard_open(a->store, &a->meta, slot->key, &slot->rd, &e);
    if (st == SL_ENOTFOUND) {
        lookup_chunks(sh, o, NULL);
        return;
    }
    const uint64_t *entries = NULL;
    if (st == SL_OK) {
        slot->open = true;
        st = sl__shard_index_read(&slot->rd, &a->meta, ctx, &entries, &e);
        atomic_fetch_add_explicit(&run->n_index_reads, 1, memory_order_relaxed);
    }
    if (st == SL_OK && lookup_chunks(sh, o, entries))
        return;
    if (slot->open)
        sl__reader_close(&slot->rd);
    slot->open = false;
    if (st != SL_OK) {
        sl__error_locate(&e, slot->key, a->meta.rank, slot->coords);
        fail_object(sh, o, &e);
    }
}

/* ---- step 2: requests ---------------------------------------------------------------- */

static int
by_offset_cmp(const void *pa, const void *pb)
{
    const struct by_offset *a = pa, *b = pb;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    return a->c < b->c ? -1 : a->c > b->c;
}

/* Coalesce sorted[first .. first + n) of wave slot `slot` into requests of
 * at most `cap` bytes (a larger chunk alone). */
static void
coalesce(struct shards *sh, size_t slot, size_t first, size_t n, uint64_t cap)
{
    uint64_t gap = sh->run->gap_bytes;
    for (size_t i = first; i < first + n;) {
        size_t c = sh->sorted[i].c;
        uint64_t start = sh->off[c], end = start + sh->len[c];
        size_t j = i + 1;
        for (; j < first + n; j++) {
            size_t cj = sh->sorted[j].c;
            uint64_t e = sh->off[cj] + sh->len[cj];
            uint64_t new_end = e > end ? e : end;
            /* Sorted, so off >= start; entries were bounds-checked, so no
             * sum overflows. */
            if ((sh->off[cj] > end && sh->off[cj] - end > gap) || new_end - start > cap)
                break;
            end = new_end;
        }
        sh->reqs[sh->n_reqs++] = (struct request){slot, i, j - i, start, end};
        i = j;
    }
}

/* The request cap: the option's, lowered so that a wave of `total` bytes
 * gives every worker about two requests, but not below BATCH_MIN_SPREAD. */
static uint64_t
request_cap(const struct sl__batch_run *run, uint64_t total)
{
    uint64_t cap = run->max_bytes;
    if (run->n_workers < 2)
        return cap;
    uint64_t share = total / (2 * (uint64_t)run->n_workers);
    if (share < BATCH_MIN_SPREAD)
        share = BATCH_MIN_SPREAD;
    return share < cap ? share : cap;
}

/* Sort the wave's needed ranges and plan its requests; list absent chunks. */
static void
plan_requests(struct shards *sh, size_t n_slots)
{
    const struct sl__batch_plan *p = &sh->run->plan;
    size_t n_sorted = 0;
    uint64_t total = 0;
    sh->n_reqs = 0;
    sh->n_absent = 0;
    size_t starts[BATCH_WAVE_SHARDS + 1];
    for (size_t i = 0; i < n_slots; i++) {
        const struct sl__batch_object *obj = &p->objects[sh->o0 + i];
        starts[i] = n_sorted;
        for (size_t c = obj->first; c < obj->first + obj->n_chunks; c++) {
            if (sh->state[c] == CH_ABSENT)
                sh->absent[sh->n_absent++] = c;
            else if (sh->state[c] == CH_READY) {
                sh->sorted[n_sorted++] = (struct by_offset){sh->off[c], c};
                total += sh->len[c];
            }
        }
        if (n_sorted - starts[i] > 1)
            qsort(sh->sorted + starts[i], n_sorted - starts[i], sizeof(*sh->sorted), by_offset_cmp);
    }
    starts[n_slots] = n_sorted;
    uint64_t cap = request_cap(sh->run, total);
    for (size_t i = 0; i < n_slots; i++)
        if (starts[i + 1] > starts[i])
            coalesce(sh, i, starts[i], starts[i + 1] - starts[i], cap);
}

/* ---- step 3: reading and decoding ------------------------------------------------------ */

/* A remote store: fetch request `i`'s byte range ahead, so that the wave's
 * requests are in flight together while the workers decode. */
static void
hint_request(struct shards *sh, size_t i)
{
    if (i >= sh->n_reqs || !sl_store_reads_ahead(sh->run->a->store))
        return;
    const struct request *r = &sh->reqs[i];
    struct sl_byte_range range = sl_byte_range_at(r->start, r->end - r->start);
    sl__store_prefetch(sh->run->a->store, sh->slots[r->shard].key, &range);
}

/* Decode chunk `c` from its stored bytes and deliver it. */
static void
decode_chunk(struct shards *sh, size_t c, const uint8_t *bytes, const struct wave_shard *slot,
             sl_codec_ctx *ctx)
{
    struct sl__batch_run *run = sh->run;
    const sl_array *a = run->a;
    struct sl_error e = SL_ERROR_INIT;
    uint8_t *target = NULL;
    size_t in_sel = SIZE_MAX;
    sl_status st = sl__batch_target(run, c, ctx, &target, &in_sel, &e);
    if (st == SL_OK)
        st = sl__chain_decode(&a->meta.chain, &a->layout, bytes, (size_t)sh->len[c], target, ctx,
                              &e);
    if (st != SL_OK) {
        uint64_t coords[SL_MAX_RANK];
        sl_grid_coords_of(&a->chunk_grid, run->plan.chunks[c].chunk, coords);
        sl__error_locate(&e, slot->key, a->meta.rank, coords);
    }
    sl__batch_finish(run, c, st, false, target, in_sel, &e);
}

/* Fail every chunk of request `r` with `e`. */
static void
fail_request(struct shards *sh, const struct request *r, const struct sl_error *e)
{
    for (size_t i = r->first; i < r->first + r->n; i++) {
        size_t c = sh->sorted[i].c;
        sh->state[c] = CH_FAILED;
        sl__batch_fail_chunk(sh->run, c, e);
    }
}

/* Item i: request i (read, then decode its chunks), or, past the
 * requests, absent chunk i - n_reqs (fill). */
static void
request_item(struct sl__batch_run *run, void *arg, size_t i, sl_codec_ctx *ctx)
{
    struct shards *sh = arg;
    if (i >= sh->n_reqs) {
        sl__batch_finish(run, sh->absent[i - sh->n_reqs], SL_OK, true, NULL, SIZE_MAX, NULL);
        return;
    }
    hint_request(sh, i + BATCH_REQ_LOOKAHEAD);
    const struct request *r = &sh->reqs[i];
    struct wave_shard *slot = &sh->slots[r->shard];
    struct sl_error e = SL_ERROR_INIT;
    uint64_t span = r->end - r->start;
    struct sl_buf *io = NULL;
    sl_status st = SL_OK;
    if (ctx == NULL)
        st = sl_error_set(&e, SL_ENOMEM, NULL, "no memory for a codec context");
    else if (span > SIZE_MAX)
        st = sl_error_set(&e, SL_EOVERFLOW, NULL, "request of %" PRIu64 " bytes", span);
    if (st == SL_OK)
        st = sl__ctx_scratch(ctx, SL__SCR_IO, (size_t)span, &io, &e);
    if (st == SL_OK)
        st = sl__reader_read(&slot->rd, r->start, (size_t)span, io->data, &e);
    if (st != SL_OK) {
        sl__error_locate(&e, slot->key, run->a->meta.rank, slot->coords);
        fail_request(sh, r, &e);
        return;
    }
    atomic_fetch_add_explicit(&run->n_requests, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&run->bytes_requested, span, memory_order_relaxed);
    for (size_t j = r->first; j < r->first + r->n; j++) {
        size_t c = sh->sorted[j].c;
        decode_chunk(sh, c, io->data + (sh->off[c] - r->start), slot, ctx);
    }
}

/* One wave: shards [o0, o0 + n_slots) of the plan. */
static sl_status
wave_run(struct shards *sh, size_t o0, size_t n_slots)
{
    sh->o0 = o0;
    hint_indexes(sh, n_slots);
    sl_status st = sl__batch_loop(sh->run, n_slots, index_item, sh);
    if (st == SL_OK) {
        plan_requests(sh, n_slots);
        for (size_t i = 0; i < BATCH_REQ_LOOKAHEAD && i < sh->n_reqs; i++)
            hint_request(sh, i);
        st = sl__batch_loop(sh->run, sh->n_reqs + sh->n_absent, request_item, sh);
    }
    for (size_t i = 0; i < n_slots; i++) {
        if (sh->slots[i].open)
            sl__reader_close(&sh->slots[i].rd);
        sh->slots[i].open = false;
    }
    return st;
}

/* ---- the whole read ------------------------------------------------------------------------ */

/* Per-chunk and per-wave arrays, all or none. */
static sl_status
shards_init(struct shards *sh, struct sl__batch_run *run, struct sl_error *err)
{
    size_t n = run->plan.n_chunks;
    memset(sh, 0, sizeof(*sh));
    sh->run = run;
    sh->alloc = &run->a->alloc;
    sh->slots = sl_alloc_zeroed(sh->alloc, BATCH_WAVE_SHARDS, sizeof(*sh->slots), 0);
    sh->off = sl_alloc_zeroed(sh->alloc, n, sizeof(uint64_t), 0);
    sh->len = sl_alloc_zeroed(sh->alloc, n, sizeof(uint64_t), 0);
    sh->state = sl_alloc_zeroed(sh->alloc, n, 1, 0);
    sh->sorted = sl_alloc_zeroed(sh->alloc, n, sizeof(*sh->sorted), 0);
    sh->reqs = sl_alloc_zeroed(sh->alloc, n, sizeof(*sh->reqs), 0);
    sh->absent = sl_alloc_zeroed(sh->alloc, n, sizeof(size_t), 0);
    if (sh->slots == NULL || sh->off == NULL || sh->len == NULL || sh->state == NULL ||
        sh->sorted == NULL || sh->reqs == NULL || sh->absent == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "no memory to read %zu inner chunks", n);
    return SL_OK;
}

static void
shards_fini(struct shards *sh)
{
    size_t n = sh->run->plan.n_chunks;
    sl_free(sh->alloc, sh->slots, BATCH_WAVE_SHARDS * sizeof(*sh->slots));
    sl_free(sh->alloc, sh->off, n * sizeof(uint64_t));
    sl_free(sh->alloc, sh->len, n * sizeof(uint64_t));
    sl_free(sh->alloc, sh->state, n);
    sl_free(sh->alloc, sh->sorted, n * sizeof(*sh->sorted));
    sl_free(sh->alloc, sh->reqs, n * sizeof(*sh->reqs));
    sl_free(sh->alloc, sh->absent, n * sizeof(size_t));
}

sl_status
sl__batch_read_shards(struct sl__batch_run *run, struct sl_error *err)
{
    struct shards sh;
    sl_status st = shards_init(&sh, run, err);
    for (size_t o0 = 0; st == SL_OK && o0 < run->plan.n_objects; o0 += BATCH_WAVE_SHARDS) {
        size_t n_slots = run->plan.n_objects - o0;
        st = wave_run(&sh, o0, n_slots < BATCH_WAVE_SHARDS ? n_slots : BATCH_WAVE_SHARDS);
    }
    if (st != SL_OK)
        sl_error_set(err, st, NULL, "the parallel executor stopped before this chunk was read");
    shards_fini(&sh);
    return st;
}
