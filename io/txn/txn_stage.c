/* SPDX-License-Identifier: MIT */
/*
 * Staging of a transaction: the pool of chunk records, the striped table of
 * units (shards, or chunks of unsharded arrays) being staged, whole and
 * partial chunk writes with their element masks, and copying staged data
 * out for reads and merges; a written unit's outcome reported and its
 * records released.
 *
 * DESIGN: a unit lives in the table of stripe index % SL__TXN_STRIPES from
 * its first staged chunk until its write finished; the stripe's lock
 * guards the table, the unit's state and slots, and the contents of its
 * partial chunks.  A whole chunk is copied into a fresh record before the
 * lock is taken, so writers of different chunks hold it only to install a
 * pointer.  A unit marked flushing is immutable: writers of it wait on the
 * stripe's condition variable until it has left the table, so a later
 * write of the same unit is staged anew and written after it.  With
 * encode_on_write a whole chunk is encoded before the lock too, into a
 * bare record (no chunk buffer); the rare paths that need its elements (a
 * partial write over it, a read) decode it.  Each record remembers what it
 * counts in staged_bytes, which changes as it does.
 */
#include <inttypes.h>
#include <string.h>

#include "txn_internal.h"

/* ---- chunk records ----------------------------------------------------------- */

/* Give bare record `c` its chunk buffer.  @return SL_OK or SL_ENOMEM. */
static sl_status
chunk_give_data(sl_txn *t, struct sl__txn_chunk *c, struct sl_error *err)
{
    size_t n = t->a->layout.n_bytes;
    c->data = sl_alloc(&t->alloc, n, 64);
    if (c->data == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory staging a chunk of %zu bytes", n);
    return SL_OK;
}

/* A record, with a chunk buffer unless `bare`: from the pool, else new. */
static struct sl__txn_chunk *
chunk_get(sl_txn *t, bool bare, struct sl_error *err)
{
    pthread_mutex_lock(&t->pool_mu);
    struct sl__txn_chunk **from = bare ? &t->pool_bare : &t->pool;
    struct sl__txn_chunk *c = *from;
    if (c != NULL)
        *from = c->next;
    pthread_mutex_unlock(&t->pool_mu);
    if (c == NULL) {
        c = sl_alloc_zeroed(&t->alloc, 1, sizeof(*c), 0);
        if (c == NULL) {
            sl_error_set(err, SL_ENOMEM, NULL, "out of memory for a staged chunk's record");
            return NULL;
        }
        c->enc.alloc = t->alloc;
        if (!bare && chunk_give_data(t, c, err) != SL_OK) {
            sl_free(&t->alloc, c, sizeof(*c));
            return NULL;
        }
    }
    c->next = NULL;
    c->partial = false;
    c->n_written = 0;
    c->counted = 0;
    c->view = NULL;
    c->view_n = 0;
    c->encoded = false;
    c->empty = false;
    return c;
}

void
sl__txn_staged_add(sl_txn *t, uint64_t n)
{
    /* Relaxed: statistics; nothing is published through them. */
    uint64_t now = atomic_fetch_add_explicit(&t->staged_bytes, n, memory_order_relaxed) + n;
    uint64_t peak = atomic_load_explicit(&t->peak_staged_bytes, memory_order_relaxed);
    while (now > peak &&
           !atomic_compare_exchange_weak_explicit(&t->peak_staged_bytes, &peak, now,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

/* What record `c` holds now, to count in staged_bytes. */
static uint64_t
chunk_staged_bytes(const sl_txn *t, const struct sl__txn_chunk *c)
{
    if (c->data == NULL) /* bare: its encoding, unless in the unit's shard */
        return c->empty || c->view != NULL ? 0 : c->enc.capacity;
    return t->a->layout.n_bytes + (c->partial ? t->mask_bytes : 0);
}

/* Count `c` as it is now, in place of what it counted. */
static void
chunk_recount(sl_txn *t, struct sl__txn_chunk *c)
{
    uint64_t now = chunk_staged_bytes(t, c);
    atomic_fetch_sub_explicit(&t->staged_bytes, c->counted, memory_order_relaxed);
    sl__txn_staged_add(t, now);
    c->counted = now;
}

/* Back to the pool of its kind, uncounted. */
static void
chunk_put(sl_txn *t, struct sl__txn_chunk *c)
{
    c->partial = false;
    c->view = NULL; /* its shard goes with its unit */
    pthread_mutex_lock(&t->pool_mu);
    struct sl__txn_chunk **to = c->data == NULL ? &t->pool_bare : &t->pool;
    c->next = *to;
    *to = c;
    pthread_mutex_unlock(&t->pool_mu);
}

/* Put the buffers of decoded record `c` (its chunk buffer, and its
 * encoding's, a codec context's scratch that later encodings trade for)
 * back in the pool, in a bare record's shell, so that staging goes on
 * reusing them; `c` keeps what the shell held. */
static void
buffers_donate(sl_txn *t, struct sl__txn_chunk *c)
{
    pthread_mutex_lock(&t->pool_mu);
    struct sl__txn_chunk *shell = t->pool_bare;
    if (shell != NULL)
        t->pool_bare = shell->next;
    pthread_mutex_unlock(&t->pool_mu);
    if (shell == NULL) {
        shell = sl_alloc_zeroed(&t->alloc, 1, sizeof(*shell), 0);
        if (shell == NULL) {
            sl_free(&t->alloc, c->data, t->a->layout.n_bytes);
            c->data = NULL;
            sl_buf_fini(&c->enc);
            return;
        }
        shell->enc.alloc = t->alloc;
    }
    struct sl_buf kept = shell->enc; /* a bare record's encoding: not needed */
    shell->data = c->data;
    shell->enc = c->enc;
    shell->enc.size = 0;
    c->data = NULL;
    c->enc = kept;
    sl_buf_fini(&c->enc);
    chunk_put(t, shell);
}

void
sl__txn_chunk_into_shard(sl_txn *t, struct sl__txn_chunk *c, const uint8_t *at, size_t n)
{
    if (c->data != NULL)
        buffers_donate(t, c);
    else
        sl_buf_fini(&c->enc); /* its own copy, sized to fit: not needed now */
    c->view = at;
    c->view_n = n;
    c->encoded = true;
    c->empty = at == NULL;
    chunk_recount(t, c);
}

void
sl__txn_chunk_release(sl_txn *t, struct sl__txn_chunk *c)
{
    if (c == NULL)
        return;
    atomic_fetch_sub_explicit(&t->staged_bytes, c->counted, memory_order_relaxed);
    c->counted = 0;
    chunk_put(t, c);
}

/* ---- the table ------------------------------------------------------------------- */

struct sl__txn_stripe *
sl__txn_stripe_of(sl_txn *t, uint64_t index)
{
    return &t->stripes[index % SL__TXN_STRIPES];
}

/* Home slot of `index` in a table of `cap` (a power of two). */
static size_t
table_home(uint64_t index, size_t cap)
{
    /* Indices of one stripe share their low bits: mix before masking. */
    uint64_t h = (index / SL__TXN_STRIPES) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

struct sl__txn_unit *
sl__txn_table_find(const struct sl__txn_stripe *s, uint64_t index)
{
    if (s->cap == 0)
        return NULL;
    for (size_t i = table_home(index, s->cap);; i = (i + 1) & (s->cap - 1)) {
        struct sl__txn_unit *u = s->table[i];
        if (u == NULL || u->index == index)
            return u;
    }
}

static void
table_put(struct sl__txn_unit **table, size_t cap, struct sl__txn_unit *u)
{
    size_t i = table_home(u->index, cap);
    while (table[i] != NULL)
        i = (i + 1) & (cap - 1);
    table[i] = u;
}

/* Insert `u`, growing the table to keep it at most half full. */
static sl_status
table_insert(sl_txn *t, struct sl__txn_stripe *s, struct sl__txn_unit *u, struct sl_error *err)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap != 0 ? 2 * s->cap : 16;
        struct sl__txn_unit **table = sl_alloc_zeroed(&t->alloc, cap, sizeof(*table), 0);
        if (table == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "out of memory for %zu staged units", cap);
        for (size_t i = 0; i < s->cap; i++)
            if (s->table[i] != NULL)
                table_put(table, cap, s->table[i]);
        sl_free(&t->alloc, s->table, s->cap * sizeof(*table));
        s->table = table;
        s->cap = cap;
    }
    table_put(s->table, s->cap, u);
    s->n++;
    return SL_OK;
}

void
sl__txn_table_remove(struct sl__txn_stripe *s, uint64_t index)
{
    if (s->cap == 0)
        return;
    size_t mask = s->cap - 1, i = table_home(index, s->cap);
    while (s->table[i] != NULL && s->table[i]->index != index)
        i = (i + 1) & mask;
    if (s->table[i] == NULL)
        return;
    s->table[i] = NULL;
    s->n--;
    /* Backward shift: move later entries of the run into the hole when
     * their home does not lie cyclically in (hole, j]. */
    for (size_t j = (i + 1) & mask; s->table[j] != NULL; j = (j + 1) & mask) {
        size_t home = table_home(s->table[j]->index, s->cap);
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays)
            continue;
        s->table[i] = s->table[j];
        s->table[j] = NULL;
        i = j;
    }
}

/* ---- units ------------------------------------------------------------------------ */

void
sl__txn_unit_of(const sl_txn *t, const uint64_t *coords, uint64_t *unit, uint64_t *index,
                uint64_t *k)
{
    const sl_array *a = t->a;
    if (a->meta.sharded) {
        sl__shard_of_inner(&a->meta, coords, unit, k);
    } else {
        memcpy(unit, coords, a->meta.rank * sizeof(*unit));
        *k = 0;
    }
    *index = sl_grid_linear_index(&a->object_grid, unit);
}

/* Chunks of unit `unit` inside the array. */
static uint64_t
unit_inside(const sl_txn *t, const uint64_t *unit)
{
    const sl_array *a = t->a;
    if (!a->meta.sharded)
        return 1;
    uint64_t n = 1;
    for (uint32_t d = 0; d < a->meta.rank; d++) {
        uint64_t per = a->meta.per_shard[d], first = unit[d] * per;
        uint64_t left = a->chunk_grid.n_chunks[d] - first;
        n *= left < per ? left : per;
    }
    return n;
}

static struct sl__txn_unit *
unit_new(sl_txn *t, const uint64_t *unit, uint64_t index, struct sl_error *err)
{
    struct sl__txn_unit *u = sl_alloc_zeroed(&t->alloc, 1, sizeof(*u), 0);
    struct sl__txn_chunk **slots =
        u != NULL ? sl_alloc_zeroed(&t->alloc, t->n_per_unit, sizeof(*slots), 0) : NULL;
    if (slots == NULL) {
        sl_free(&t->alloc, u, sizeof(*u));
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory staging a unit of %" PRIu64 " chunks",
                     t->n_per_unit);
        return NULL;
    }
    u->index = index;
    memcpy(u->coords, unit, t->a->meta.rank * sizeof(*unit));
    u->state = SL__TXN_STAGING;
    u->n_inside = unit_inside(t, unit);
    u->slots = slots;
    u->status = SL_OK;
    u->err = SL_ERROR_INIT;
    return u;
}

/*
 * The staging unit at `index` in locked stripe `s`, made when missing;
 * waits while a flush of it runs.  NULL with SL_ENOMEM.
 */
static struct sl__txn_unit *
unit_staging_locked(sl_txn *t, struct sl__txn_stripe *s, const uint64_t *unit, uint64_t index,
                    struct sl_error *err)
{
    for (;;) {
        struct sl__txn_unit *u = sl__txn_table_find(s, index);
        if (u != NULL && u->state == SL__TXN_STAGING)
            return u;
        if (u != NULL) {
            pthread_cond_wait(&s->done, &s->mu);
            continue;
        }
        u = unit_new(t, unit, index, err);
        if (u != NULL && table_insert(t, s, u, err) != SL_OK) {
            sl_free(&t->alloc, u->slots, t->n_per_unit * sizeof(*u->slots));
            sl_free(&t->alloc, u, sizeof(*u));
            u = NULL;
        }
        if (u != NULL) /* until sl__txn_unit_finish */
            atomic_fetch_add_explicit(&t->n_units_staged, 1, memory_order_relaxed);
        return u;
    }
}

/* After staging into `u`: mark it for flushing when it is now complete. */
static struct sl__txn_unit *
unit_check_full_locked(sl_txn *t, struct sl__txn_unit *u)
{
    if (!t->opts.flush_full || u->n_complete < u->n_inside)
        return NULL;
    u->state = SL__TXN_FLUSHING;
    return u;
}

/* ---- whole chunks ------------------------------------------------------------------ */

/* Install whole record `c` (counted) as chunk `coords`, replacing what
 * was staged there. */
static sl_status
stage_whole(sl_txn *t, const uint64_t *coords, struct sl__txn_chunk *c, struct sl__txn_unit **flush,
            struct sl_error *err)
{
    uint64_t unit[SL_MAX_RANK], index, k;
    sl__txn_unit_of(t, coords, unit, &index, &k);
    struct sl__txn_stripe *s = sl__txn_stripe_of(t, index);
    pthread_mutex_lock(&s->mu);
    struct sl__txn_unit *u = unit_staging_locked(t, s, unit, index, err);
    struct sl__txn_chunk *old = NULL;
    if (u != NULL) {
        old = u->slots[k];
        u->slots[k] = c;
        if (old == NULL || old->partial)
            u->n_complete++;
        *flush = unit_check_full_locked(t, u);
    }
    pthread_mutex_unlock(&s->mu);
    if (u == NULL) {
        sl__txn_chunk_release(t, c);
        return SL_ENOMEM;
    }
    sl__txn_chunk_release(t, old);
    atomic_fetch_add_explicit(&t->n_chunks_staged, 1, memory_order_relaxed);
    return SL_OK;
}

/* Extents of chunk `coords` inside the array; true when smaller than a
 * chunk (an edge chunk with padding). */
static bool
chunk_extent(const sl_array *a, const uint64_t *coords, struct sl_region *r, uint64_t *extent)
{
    bool edge = false;
    sl_grid_chunk_region(&a->chunk_grid, coords, r);
    sl_region_shape(r, extent);
    for (uint32_t d = 0; d < a->meta.rank; d++)
        edge = edge || extent[d] < a->layout.shape[d];
    return edge;
}

/* Fill bare record `c` with the encoding of whole chunk `coords` from
 * `buf`, encoded with `ctx` (an edge chunk's padding is filled in its
 * SL__SCR_CHUNK first). */
/* Copy whole chunk `coords` from `buf` into `dst`, its padding beyond the
 * array (an edge chunk's) as the fill value.  @return whether it had any. */
static bool
copy_padded(const sl_array *a, const uint64_t *coords, uint8_t *dst, const void *buf)
{
    struct sl_region r;
    uint64_t extent[SL_MAX_RANK];
    memcpy(dst, buf, a->layout.n_bytes);
    bool edge = chunk_extent(a, coords, &r, extent);
    if (edge)
        sl__fill_outside(dst, a->meta.rank, a->layout.shape, extent, a->meta.fill, a->elem_bytes);
    return edge;
}

static sl_status
chunk_encode_from(sl_txn *t, struct sl__txn_chunk *c, const uint64_t *coords, const void *buf,
                  sl_codec_ctx *ctx, struct sl_error *err)
{
    const sl_array *a = t->a;
    struct sl_region r;
    uint64_t extent[SL_MAX_RANK];
    const uint8_t *data = buf;
    if (chunk_extent(a, coords, &r, extent)) { /* only then a copy */
        struct sl_buf *padded;
        SL_TRY(sl__ctx_scratch(ctx, SL__SCR_CHUNK, a->layout.n_bytes, &padded, err));
        (void)copy_padded(a, coords, padded->data, buf);
        data = padded->data;
    }
    return sl__txn_chunk_encode_keep(t, c, data, ctx, err);
}

sl_status
sl__txn_stage_chunk(sl_txn *t, const uint64_t *coords, const void *buf, sl_codec_ctx *ctx,
                    struct sl__txn_unit **flush, struct sl_error *err)
{
    const sl_array *a = t->a;
    *flush = NULL;
    struct sl__txn_chunk *c = NULL;
    /* An unsharded chunk is a unit: with flush_full it is written at
     * once, encoded then without a copy.  Not with write_behind: it then
     * waits for a writer thread, better as its encoding alone than as a
     * copy of the chunk and the encoding made of it. */
    bool alone = !a->meta.sharded && t->opts.flush_full && t->opts.write_behind == 0;
    if (t->opts.encode_on_write && ctx != NULL && !alone) {
        /* Where encoding fails (out of memory), the chunk is staged
         * decoded instead, and its unit's write encodes it again and
         * reports what still fails: the option never changes an outcome. */
        struct sl_error ignored = SL_ERROR_INIT;
        c = chunk_get(t, true, &ignored);
        if (c != NULL && chunk_encode_from(t, c, coords, buf, ctx, &ignored) != SL_OK) {
            chunk_put(t, c);
            c = NULL;
        }
    }
    if (c == NULL) {
        c = chunk_get(t, false, err);
        if (c == NULL)
            return SL_ENOMEM;
        (void)copy_padded(a, coords, c->data, buf);
    }
    chunk_recount(t, c);
    return stage_whole(t, coords, c, flush, err);
}

/* Stage box `r` (all of chunk `coords` inside the array) from `src`. */
static sl_status
stage_whole_box(sl_txn *t, const uint64_t *coords, const struct sl_region *r, const void *src,
                const uint64_t *src_dims, const uint64_t *src_origin, struct sl__txn_unit **flush,
                struct sl_error *err)
{
    const sl_array *a = t->a;
    struct sl__txn_chunk *c = chunk_get(t, false, err);
    if (c == NULL)
        return SL_ENOMEM;
    uint64_t zero[SL_MAX_RANK] = {0}, in_src[SL_MAX_RANK], extent[SL_MAX_RANK];
    struct sl_region chunk;
    if (chunk_extent(a, coords, &chunk, extent))
        sl__fill_elements(c->data, a->layout.n_bytes / a->elem_bytes, a->meta.fill, a->elem_bytes);
    for (uint32_t d = 0; d < a->meta.rank; d++)
        in_src[d] = r->start[d] - src_origin[d];
    sl__box_copy(&(struct sl__box){.base = c->data, .dims = a->layout.shape, .origin = zero},
                 &(struct sl__box){.base = (void *)src, .dims = src_dims, .origin = in_src}, extent,
                 a->meta.rank, a->elem_bytes);
    chunk_recount(t, c);
    return stage_whole(t, coords, c, flush, err);
}

/* ---- partial chunks and masks ------------------------------------------------------ */

/* C-order strides in elements of a box of `dims`. */
static void
strides_of(uint32_t rank, const uint64_t *dims, uint64_t *stride)
{
    uint64_t s = 1;
    for (uint32_t d = rank; d-- > 0;) {
        stride[d] = s;
        s *= dims[d];
    }
}

/*
 * Walk the rows (runs along the last dimension) of box `shape` at `origin`
 * of a C-order array of `dims`: row(arg, offset of its first element,
 * length) once per row, in C order.
 */
typedef void row_fn(void *arg, uint64_t offset, uint64_t length);

static void
rows_walk(uint32_t rank, const uint64_t *dims, const uint64_t *origin, const uint64_t *shape,
          row_fn *row, void *arg)
{
    if (rank == 0) {
        row(arg, 0, 1);
        return;
    }
    uint64_t stride[SL_MAX_RANK], idx[SL_MAX_RANK] = {0};
    strides_of(rank, dims, stride);
    for (uint32_t d = 0; d < rank; d++)
        if (shape[d] == 0)
            return;
    for (;;) {
        uint64_t off = 0;
        for (uint32_t d = 0; d < rank; d++)
            off += (origin[d] + idx[d]) * stride[d];
        row(arg, off, shape[rank - 1]);
        uint32_t d = rank - 1;
        for (;;) {
            if (d == 0)
                return;
            d--;
            if (++idx[d] < shape[d])
                break;
            idx[d] = 0;
        }
    }
}

/* Setting mask bits of rows, counting those newly set. */
struct mask_set {
    uint64_t *mask;
    uint64_t n_new;
};

static void
mask_set_row(void *arg, uint64_t off, uint64_t len)
{
    struct mask_set *ms = arg;
    for (uint64_t i = off; i < off + len; i++) {
        uint64_t bit = (uint64_t)1 << (i % 64);
        if ((ms->mask[i / 64] & bit) == 0) {
            ms->mask[i / 64] |= bit;
            ms->n_new++;
        }
    }
}

/* Elements of chunk `coords` inside the array. */
static uint64_t
chunk_inside_elements(const sl_array *a, const uint64_t *coords)
{
    struct sl_region r;
    sl_grid_chunk_region(&a->chunk_grid, coords, &r);
    uint64_t n = 1;
    for (uint32_t d = 0; d < a->meta.rank; d++)
        n *= r.stop[d] - r.start[d];
    return n;
}

/* A fresh partial record: all fill, an empty mask. */
static struct sl__txn_chunk *
chunk_get_partial(sl_txn *t, struct sl_error *err)
{
    const sl_array *a = t->a;
    struct sl__txn_chunk *c = chunk_get(t, false, err);
    if (c == NULL)
        return NULL;
    if (c->mask == NULL)
        c->mask = sl_alloc(&t->alloc, t->mask_bytes, 64);
    if (c->mask == NULL) {
        chunk_put(t, c);
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory for a chunk mask of %zu bytes",
                     t->mask_bytes);
        return NULL;
    }
    memset(c->mask, 0, t->mask_bytes);
    c->partial = true;
    sl__fill_elements(c->data, a->layout.n_bytes / a->elem_bytes, a->meta.fill, a->elem_bytes);
    return c;
}

/* Merge `box` of `src` into staged chunk `c` of unit `u` (stripe locked). */
static void
merge_part_locked(sl_txn *t, struct sl__txn_unit *u, struct sl__txn_chunk *c,
                  const uint64_t *coords, const struct sl_region *box, const void *src,
                  const uint64_t *src_dims, const uint64_t *src_origin)
{
    const sl_array *a = t->a;
    uint32_t rank = a->meta.rank;
    struct sl_region r;
    uint64_t in_chunk[SL_MAX_RANK], in_src[SL_MAX_RANK], shape[SL_MAX_RANK];
    sl_grid_chunk_region(&a->chunk_grid, coords, &r);
    for (uint32_t d = 0; d < rank; d++) {
        in_chunk[d] = box->start[d] - r.start[d];
        in_src[d] = box->start[d] - src_origin[d];
        shape[d] = box->stop[d] - box->start[d];
    }
    sl__box_copy(&(struct sl__box){.base = c->data, .dims = a->layout.shape, .origin = in_chunk},
                 &(struct sl__box){.base = (void *)src, .dims = src_dims, .origin = in_src}, shape,
                 rank, a->elem_bytes);
    if (!c->partial)
        return;
    struct mask_set ms = {c->mask, 0};
    rows_walk(rank, a->layout.shape, in_chunk, shape, mask_set_row, &ms);
    c->n_written += ms.n_new;
    if (c->n_written < chunk_inside_elements(a, coords))
        return;
    /* Every element inside the array is written: complete. */
    c->partial = false;
    chunk_recount(t, c);
    u->n_complete++;
}

/* Make bare chunk `c` (stripe locked) a decoded one, ready to be written
 * over: its encoding decoded (or fill) into a new chunk buffer. */
static sl_status
unbare_locked(sl_txn *t, struct sl__txn_chunk *c, sl_codec_ctx *ctx, struct sl_error *err)
{
    const sl_array *a = t->a;
    size_t n = a->layout.n_bytes;
    uint8_t *data = sl_alloc(&t->alloc, n, 64);
    if (data == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "out of memory staging a chunk of %zu bytes", n);
    sl_status st = sl__txn_chunk_overlay(t, c, data, ctx, err); /* decodes: c is bare */
    if (st != SL_OK) {
        sl_free(&t->alloc, data, n);
        return st;
    }
    c->data = data;
    c->encoded = false;
    c->empty = false;
    sl_buf_fini(&c->enc); /* no longer counted: not kept */
    chunk_recount(t, c);
    return SL_OK;
}

sl_status
sl__txn_stage_part(sl_txn *t, const uint64_t *coords, const struct sl_region *box, const void *src,
                   const uint64_t *src_dims, const uint64_t *src_origin, sl_codec_ctx *ctx,
                   struct sl__txn_unit **flush, struct sl_error *err)
{
    *flush = NULL;
    struct sl_region chunk;
    sl_grid_chunk_region(&t->a->chunk_grid, coords, &chunk);
    if (sl_region_equal(box, &chunk))
        return stage_whole_box(t, coords, box, src, src_dims, src_origin, flush, err);
    /* Made before locking, returned when the chunk is staged already. */
    struct sl__txn_chunk *spare = chunk_get_partial(t, err);
    if (spare == NULL)
        return SL_ENOMEM;
    chunk_recount(t, spare);
    uint64_t unit[SL_MAX_RANK], index, k;
    sl__txn_unit_of(t, coords, unit, &index, &k);
    struct sl__txn_stripe *s = sl__txn_stripe_of(t, index);
    sl_codec_ctx *own = NULL; /* for a bare chunk, when the caller gave none */
    sl_status st = SL_OK;
    pthread_mutex_lock(&s->mu);
    struct sl__txn_unit *u = unit_staging_locked(t, s, unit, index, err);
    if (u == NULL)
        st = SL_ENOMEM;
    struct sl__txn_chunk *c = u != NULL ? u->slots[k] : NULL;
    if (u != NULL && c == NULL) {
        c = u->slots[k] = spare;
        spare = NULL;
    } else if (c != NULL && c->data == NULL) {
        if (ctx == NULL)
            ctx = own = sl_codec_ctx_create(&t->alloc, err);
        st = ctx != NULL ? unbare_locked(t, c, ctx, err) : SL_ENOMEM;
    }
    if (st == SL_OK) {
        merge_part_locked(t, u, c, coords, box, src, src_dims, src_origin);
        *flush = unit_check_full_locked(t, u);
    }
    pthread_mutex_unlock(&s->mu);
    sl_codec_ctx_destroy(own);
    sl__txn_chunk_release(t, spare);
    if (st != SL_OK) {
        sl__error_locate(err, NULL, t->a->meta.rank, coords);
        return st;
    }
    atomic_fetch_add_explicit(&t->n_chunks_staged, 1, memory_order_relaxed);
    return SL_OK;
}

/* ---- copying staged data out ----------------------------------------------------------- */

sl_status
sl__txn_chunk_overlay(const sl_txn *t, const struct sl__txn_chunk *c, void *dst, sl_codec_ctx *ctx,
                      struct sl_error *err)
{
    const sl_array *a = t->a;
    size_t es = a->elem_bytes, n = a->layout.n_bytes / es;
    if (c->data == NULL) {
        if (!c->empty) {
            struct sl__view v = sl__txn_chunk_encoding(c);
            return sl__chain_decode(&a->meta.chain, &a->layout, v.data, v.size, dst, ctx, err);
        }
        sl__fill_elements(dst, n, a->meta.fill, es);
        return SL_OK;
    }
    if (!c->partial) {
        memcpy(dst, c->data, a->layout.n_bytes);
        return SL_OK;
    }
    uint8_t *out = dst;
    for (size_t w = 0; w < (n + 63) / 64; w++) {
        uint64_t bits = c->mask[w];
        size_t base = w * 64, len = n - base < 64 ? n - base : 64;
        if (bits == 0)
            continue;
        if (len == 64 && bits == UINT64_MAX) {
            memcpy(out + base * es, c->data + base * es, 64 * es);
            continue;
        }
        for (size_t i = 0; i < len; i++)
            if (bits >> i & 1)
                memcpy(out + (base + i) * es, c->data + (base + i) * es, es);
    }
    return SL_OK;
}

/* Copying one box of a staged chunk out, row by row. */
struct box_out {
    const struct sl__txn_chunk *c;
    const uint8_t *data; /* its elements: c->data, or a bare chunk decoded */
    size_t es;
    uint8_t *dst;
    uint64_t dst_stride[SL_MAX_RANK];
    uint64_t dst_origin[SL_MAX_RANK]; /* where the box starts in dst */
    uint64_t src_origin[SL_MAX_RANK]; /* where it starts in the chunk */
    uint64_t src_stride[SL_MAX_RANK];
    uint32_t rank;
};

/* Map a chunk offset inside the box to the destination offset. */
static uint64_t
box_out_offset(const struct box_out *bo, uint64_t off)
{
    uint64_t dst = 0;
    for (uint32_t d = 0; d < bo->rank; d++) {
        uint64_t i = off / bo->src_stride[d];
        off %= bo->src_stride[d];
        dst += (i - bo->src_origin[d] + bo->dst_origin[d]) * bo->dst_stride[d];
    }
    return dst;
}

static void
box_out_row(void *arg, uint64_t off, uint64_t len)
{
    const struct box_out *bo = arg;
    uint8_t *dst = bo->dst + box_out_offset(bo, off) * bo->es;
    const uint8_t *src = bo->data + off * bo->es;
    if (!bo->c->partial) {
        memcpy(dst, src, len * bo->es);
        return;
    }
    for (uint64_t i = 0; i < len; i++)
        if (bo->c->mask[(off + i) / 64] >> ((off + i) % 64) & 1)
            memcpy(dst + i * bo->es, src + i * bo->es, bo->es);
}

sl_status
sl__txn_chunk_copy_box(const sl_txn *t, const struct sl__txn_chunk *c,
                       const struct sl_region *chunk_region, const struct sl_region *box, void *dst,
                       const uint64_t *dst_dims, const uint64_t *dst_origin, sl_codec_ctx *ctx,
                       struct sl_error *err)
{
    const sl_array *a = t->a;
    uint32_t rank = a->meta.rank;
    struct box_out bo = {.c = c, .data = c->data, .es = a->elem_bytes, .dst = dst, .rank = rank};
    if (c->data == NULL) {
        struct sl_buf *chunk;
        SL_TRY(sl__ctx_scratch(ctx, SL__SCR_CHUNK, a->layout.n_bytes, &chunk, err));
        SL_TRY(sl__txn_chunk_overlay(t, c, chunk->data, ctx, err));
        bo.data = chunk->data;
    }
    uint64_t shape[SL_MAX_RANK];
    strides_of(rank, dst_dims, bo.dst_stride);
    strides_of(rank, a->layout.shape, bo.src_stride);
    for (uint32_t d = 0; d < rank; d++) {
        bo.src_origin[d] = box->start[d] - chunk_region->start[d];
        bo.dst_origin[d] = box->start[d] - dst_origin[d];
        shape[d] = box->stop[d] - box->start[d];
    }
    rows_walk(rank, a->layout.shape, bo.src_origin, shape, box_out_row, &bo);
    return SL_OK;
}

/* ---- outcomes --------------------------------------------------------------------- */

void
sl__txn_unit_finish(sl_txn *t, struct sl__txn_unit *u, bool early)
{
    if (u->status == SL_OK) {
        atomic_fetch_add_explicit(&t->n_units_written, 1, memory_order_relaxed);
    } else if (u->status != SL_ECANCELED) {
        atomic_fetch_add_explicit(&t->n_units_failed, 1, memory_order_relaxed);
        pthread_mutex_lock(&t->err_mu);
        sl__error_forward(&t->first_err, &u->err);
        pthread_mutex_unlock(&t->err_mu);
    }
    if (early && u->status != SL_ECANCELED)
        atomic_fetch_add_explicit(&t->n_units_early, 1, memory_order_relaxed);
    if (t->opts.on_unit != NULL)
        t->opts.on_unit(t->opts.on_unit_arg, u->coords, u->status,
                        u->status == SL_OK ? NULL : &u->err);
    for (uint64_t k = 0; k < t->n_per_unit; k++)
        sl__txn_chunk_release(t, u->slots[k]);
    atomic_fetch_sub_explicit(&t->staged_bytes, u->behind_bytes, memory_order_relaxed);
    sl_buf_fini(&u->bytes);
    sl_free(&t->alloc, u->slots, t->n_per_unit * sizeof(*u->slots));
    sl_free(&t->alloc, u, sizeof(*u));
    atomic_fetch_sub_explicit(&t->n_units_staged, 1, memory_order_relaxed);
}
