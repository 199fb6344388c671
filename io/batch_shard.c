/* SPDX-License-Identifier: MIT */
/*
 * Batched reads of sharded arrays.  The plan's shards are taken in waves;
 * each wave runs four steps, three of them in parallel:
 *
 *   1. per shard: open it, read and check its index (once), and look up
 *      the byte range of every inner chunk the selections need;
 *   2. on the calling thread: sort each shard's needed ranges by offset
 *      and coalesce them into requests (gap and size caps from the options);
 *   3. per request: read its bytes;
 *   4. per inner chunk: decode it (straight into an output where it can)
 *      and deliver it to its selections; absent chunks are filled.
 *
 * Steps 3 and 4 go in sub-waves holding at most `wave_bytes` of requested
 * bytes.  Unlike sl__shard_read_entries, which reads and decodes a shard's
 * chunks one after another on one thread, this decodes the chunks of one
 * request on many workers.
 *
 * DESIGN: a shard's reader stays open from step 1 until its wave ends, so
 * every range read comes from the version of the shard whose index was
 * read, even while another thread replaces it.  A wave opens at most
 * BATCH_WAVE_SHARDS shards, bounding open files.  Per-chunk state is
 * written by the step that owns the chunk and read by later steps only
 * after sl_parallel_run returned, which orders them.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"

/* Shards open at once. */
#define BATCH_WAVE_SHARDS 256

/* States of a chunk within its wave. */
enum {
    CH_PENDING, /* not looked up yet */
    CH_ABSENT,  /* its shard or its index entry is absent: fill value */
    CH_READY,   /* its byte range is known (then read into `bytes`) */
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
    uint8_t *buf;   /* its bytes, once read (step 3) */
};

/* A chunk to sort by stored offset. */
struct by_offset {
    uint64_t offset;
    size_t c; /* plan chunk */
};

/* A chunk step 4 delivers: plan chunk and wave slot of its shard. */
struct todo {
    size_t c;
    size_t shard;
};

/* Everything the steps share. */
struct shards {
    struct sl__batch_run *run;
    struct wave_shard *slots; /* BATCH_WAVE_SHARDS */
    size_t o0;                /* the wave's first plan object */
    uint64_t *off;            /* per plan chunk: stored offset */
    uint64_t *len;            /* ... and size */
    const uint8_t **bytes;    /* ... and its bytes once read */
    uint8_t *state;           /* ... CH_* */
    struct by_offset *sorted; /* the wave's ready chunks, by shard then offset */
    struct request *reqs;     /* the wave's requests */
    size_t n_reqs;            /* ... */
    size_t r0;                /* the sub-wave's first request */
    struct todo *absent;      /* the wave's absent chunks */
    size_t n_absent;          /* ... */
    struct todo *todo;        /* the sub-wave's chunks for step 4 */
    size_t n_todo;            /* ... */
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

/* Look up the chunks of object `o` in its decoded index; false if none
 * needs reading. */
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
        st = sl__reader_open(a->store, slot->key, &slot->rd, &e);
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

/* Coalesce sorted[first .. first + n) of wave slot `slot` into requests. */
static void
coalesce(struct shards *sh, size_t slot, size_t first, size_t n)
{
    const struct sl__batch_run *run = sh->run;
    for (size_t i = first; i < first + n;) {
        size_t c = sh->sorted[i].c;
        uint64_t start = sh->off[c], end = start + sh->len[c];
        size_t j = i + 1;
        for (; j < first + n; j++) {
            size_t cj = sh->sorted[j].c;
            uint64_t e = sh->off[cj] + sh->len[cj];
            uint64_t new_end = e > end ? e : end;
            /* Offsets are sorted, so off >= start; entries were bounds-checked. */
            if ((sh->off[cj] > end && sh->off[cj] - end > run->gap_bytes) ||
                new_end - start > run->max_bytes)
                break;
            end = new_end;
        }
        sh->reqs[sh->n_reqs++] = (struct request){slot, i, j - i, start, end, NULL};
        i = j;
    }
}

/* Plan the wave's requests; absent chunks go first in todo. */
static void
plan_requests(struct shards *sh, size_t n_slots)
{
    const struct sl__batch_plan *p = &sh->run->plan;
    size_t n_sorted = 0;
    sh->n_reqs = 0;
    sh->n_absent = 0;
    for (size_t i = 0; i < n_slots; i++) {
        const struct sl__batch_object *obj = &p->objects[sh->o0 + i];
        size_t first = n_sorted;
        for (size_t c = obj->first; c < obj->first + obj->n_chunks; c++) {
            if (sh->state[c] == CH_ABSENT)
                sh->absent[sh->n_absent++] = (struct todo){c, i};
            else if (sh->state[c] == CH_READY)
                sh->sorted[n_sorted++] = (struct by_offset){sh->off[c], c};
        }
        if (n_sorted - first > 1)
            qsort(sh->sorted + first, n_sorted - first, sizeof(*sh->sorted), by_offset_cmp);
        if (n_sorted > first)
            coalesce(sh, i, first, n_sorted - first);
    }
}

/* ---- steps 3 and 4: reading and decoding ------------------------------------------------- */

static void
fail_request(struct shards *sh, const struct request *r, const struct sl_error *e)
{
    for (size_t i = r->first; i < r->first + r->n; i++) {
        size_t c = sh->sorted[i].c;
        sh->state[c] = CH_FAILED;
        sl__batch_fail_chunk(sh->run, c, e);
    }
}

static void
read_item(struct sl__batch_run *run, void *arg, size_t i, sl_codec_ctx *ctx)
{
    (void)ctx;
    struct shards *sh = arg;
    struct request *r = &sh->reqs[sh->r0 + i];
    struct wave_shard *slot = &sh->slots[r->shard];
    struct sl_error e = SL_ERROR_INIT;
    uint64_t span = r->end - r->start;
    sl_status st = SL_OK;
    if (span > SIZE_MAX)
        st = sl_error_set(&e, SL_EOVERFLOW, NULL, "request of %" PRIu64 " bytes", span);
    if (st == SL_OK && (r->buf = sl_alloc(sh->alloc, (size_t)span, 64)) == NULL)
        st = sl_error_set(&e, SL_ENOMEM, NULL, "no memory for a read of %" PRIu64 " bytes", span);
    if (st == SL_OK)
        st = sl__reader_read(&slot->rd, r->start, (size_t)span, r->buf, &e);
    if (st != SL_OK) {
        sl__error_locate(&e, slot->key, run->a->meta.rank, slot->coords);
        fail_request(sh, r, &e);
        return;
    }
    atomic_fetch_add_explicit(&run->n_requests, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&run->bytes_requested, span, memory_order_relaxed);
    for (size_t j = r->first; j < r->first + r->n; j++) {
        size_t c = sh->sorted[j].c;
        sh->bytes[c] = r->buf + (sh->off[c] - r->start);
    }
}

static void
decode_item(struct sl__batch_run *run, void *arg, size_t i, sl_codec_ctx *ctx)
{
    struct shards *sh = arg;
    size_t c = sh->todo[i].c;
    if (sh->state[c] == CH_FAILED)
        return;
    const sl_array *a = run->a;
    struct sl_error e = SL_ERROR_INIT;
    bool missing = sh->state[c] == CH_ABSENT;
    uint8_t *target = NULL;
    size_t in_sel = SIZE_MAX;
    sl_status st = SL_OK;
    if (!missing && ctx == NULL)
        st = sl_error_set(&e, SL_ENOMEM, NULL, "no memory for a codec context");
    if (!missing && st == SL_OK)
        st = sl__batch_target(run, c, ctx, &target, &in_sel, &e);
    if (!missing && st == SL_OK)
        st = sl__chain_decode(&a->meta.chain, &a->layout, sh->bytes[c], (size_t)sh->len[c], target,
                              ctx, &e);
    if (st != SL_OK) {
        uint64_t coords[SL_MAX_RANK];
        sl_grid_coords_of(&a->chunk_grid, run->plan.chunks[c].chunk, coords);
        sl__error_locate(&e, sh->slots[sh->todo[i].shard].key, a->meta.rank, coords);
    }
    sl__batch_finish(run, c, st, missing, target, in_sel, &e);
}

/* Read and decode requests [r0, r1), and the wave's absent chunks when
 * `with_absent`; free the requests' bytes. */
static sl_status
read_and_decode(struct shards *sh, size_t r0, size_t r1, bool with_absent)
{
    sh->r0 = r0;
    sl_status st = sl__batch_loop(sh->run, r1 - r0, read_item, sh);
    sh->n_todo = 0;
    if (with_absent) {
        memcpy(sh->todo, sh->absent, sh->n_absent * sizeof(*sh->todo));
        sh->n_todo = sh->n_absent;
    }
    for (size_t r = r0; r < r1; r++)
        for (size_t j = sh->reqs[r].first; j < sh->reqs[r].first + sh->reqs[r].n; j++)
            sh->todo[sh->n_todo++] = (struct todo){sh->sorted[j].c, sh->reqs[r].shard};
    if (st == SL_OK)
        st = sl__batch_loop(sh->run, sh->n_todo, decode_item, sh);
    for (size_t r = r0; r < r1; r++) {
        sl_free(sh->alloc, sh->reqs[r].buf, (size_t)(sh->reqs[r].end - sh->reqs[r].start));
        sh->reqs[r].buf = NULL;
    }
    return st;
}

/* Steps 3 and 4 over the wave's requests, in sub-waves of at most
 * `wave_bytes` requested bytes (at least one request each). */
static sl_status
wave_read(struct shards *sh)
{
    size_t wave = sh->run->wave_bytes;
    bool first = true;
    sl_status st = SL_OK;
    for (size_t r0 = 0; st == SL_OK && (r0 < sh->n_reqs || first);) {
        size_t r1 = r0;
        uint64_t held = 0;
        while (r1 < sh->n_reqs) {
            uint64_t span = sh->reqs[r1].end - sh->reqs[r1].start;
            if (r1 > r0 && held + span > wave)
                break;
            held += span;
            r1++;
        }
        st = read_and_decode(sh, r0, r1, first);
        first = false;
        r0 = r1;
    }
    return st;
}

/* One wave: shards [o0, o0 + n_slots) of the plan. */
static sl_status
wave_run(struct shards *sh, size_t o0, size_t n_slots)
{
    sh->o0 = o0;
    sl_status st = sl__batch_loop(sh->run, n_slots, index_item, sh);
    if (st == SL_OK) {
        plan_requests(sh, n_slots);
        st = wave_read(sh);
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
    sh->bytes = sl_alloc_zeroed(sh->alloc, n, sizeof(*sh->bytes), 0);
    sh->state = sl_alloc_zeroed(sh->alloc, n, 1, 0);
    sh->sorted = sl_alloc_zeroed(sh->alloc, n, sizeof(*sh->sorted), 0);
    sh->reqs = sl_alloc_zeroed(sh->alloc, n, sizeof(*sh->reqs), 0);
    sh->absent = sl_alloc_zeroed(sh->alloc, n, sizeof(*sh->absent), 0);
    sh->todo = sl_alloc_zeroed(sh->alloc, n, sizeof(*sh->todo), 0);
    if (sh->slots == NULL || sh->off == NULL || sh->len == NULL || sh->bytes == NULL ||
        sh->state == NULL || sh->sorted == NULL || sh->reqs == NULL || sh->absent == NULL ||
        sh->todo == NULL)
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
    sl_free(sh->alloc, sh->bytes, n * sizeof(*sh->bytes));
    sl_free(sh->alloc, sh->state, n);
    sl_free(sh->alloc, sh->sorted, n * sizeof(*sh->sorted));
    sl_free(sh->alloc, sh->reqs, n * sizeof(*sh->reqs));
    sl_free(sh->alloc, sh->absent, n * sizeof(*sh->absent));
    sl_free(sh->alloc, sh->todo, n * sizeof(*sh->todo));
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
