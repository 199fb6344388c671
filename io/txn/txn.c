/* SPDX-License-Identifier: MIT */
/*
 * Write transactions: open, the write entry points, commit, abort, close,
 * outcomes of units and counters, and cleaning the leftovers of killed
 * writers.  Staging is in txn_stage.c, writing units in txn_flush.c,
 * reads in txn_read.c.
 *
 * DESIGN: writes run between writer_enter and writer_leave, which count
 * them; commit and abort leave the open phase first and then require that
 * count to be zero, so they never run beside a write (both sides use
 * sequentially consistent operations: one of the two sees the other).  An
 * early flush happens inside the write that completed its unit, or, with
 * write_behind, in the writer thread (txn_behind.c), which commit and
 * abort drain first; so once no write runs and the writer thread is idle,
 * no flush runs either, and commit owns every staged unit.
 * Commit writes units in batches of at most SL__TXN_BATCH_BYTES staged, in
 * order of their index, so encoding runs on many units at once without
 * doubling the memory staged.  Every unit staged is finished exactly once:
 * written, failed or dropped, and reported to on_unit.
 */
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "txn_internal.h"

/* Staged bytes commit hands to one flush. */
#define SL__TXN_BATCH_BYTES ((uint64_t)256 << 20)

static const char *
phase_name(int phase)
{
    switch (phase) {
    case SL__TXN_OPEN:
        return "open";
    case SL__TXN_COMMITTING:
        return "committing";
    case SL__TXN_COMMITTED:
        return "committed";
    default:
        return "aborted";
    }
}

/* ---- open and close ------------------------------------------------------------- */

sl_status
sl_txn_clean_leftovers(sl_array *a, uint64_t *n_removed, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    uint64_t n = 0;
    if (a == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "array is missing");
    sl_status st = sl__store_sweep(a->store, a->prefix, &n, err);
    if (n_removed != NULL)
        *n_removed = n;
    return st;
}

sl_txn *
sl_txn_open(sl_array *a, const struct sl_txn_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (a == NULL) {
        sl_error_set(err, SL_EINVAL, NULL, "array is missing");
        return NULL;
    }
    struct sl_txn_opts o = opts != NULL ? *opts : SL_TXN_OPTS_DEFAULT;
    unsigned writers = sl__store_set_writers(a->store);
    if (writers > SL__TXN_WRITERS_MAX)
        writers = SL__TXN_WRITERS_MAX;
    if (o.write_behind == SL_TXN_WRITE_BEHIND_AUTO)
        o.write_behind = writers == 0 ? 0 : writers < 2 ? 2 : writers;
    if (o.clean_leftovers && sl_txn_clean_leftovers(a, NULL, err) != SL_OK)
        return NULL;
    sl_txn *t = sl_alloc_zeroed(&a->alloc, 1, sizeof(*t), SL_CACHELINE);
    if (t == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory opening a transaction");
        return NULL;
    }
    sl_array_ref(a);
    t->a = a;
    t->opts = o;
    t->behind_writers = writers == 0 ? 1 : writers < o.write_behind ? writers : o.write_behind;
    if (t->behind_writers == 0)
        t->behind_writers = 1;
    t->alloc = a->alloc;
    t->n_per_unit = a->meta.sharded ? a->meta.n_per_shard : 1;
    t->mask_bytes = (a->layout.n_bytes / a->elem_bytes + 63) / 64 * 8;
    atomic_init(&t->phase, SL__TXN_OPEN);
    atomic_init(&t->n_retries, 0);
    t->first_err = SL_ERROR_INIT;
    pthread_mutex_init(&t->pool_mu, NULL);
    pthread_mutex_init(&t->err_mu, NULL);
    for (int i = 0; i < SL__TXN_STRIPES; i++) {
        pthread_mutex_init(&t->stripes[i].mu, NULL);
        pthread_cond_init(&t->stripes[i].done, NULL);
    }
    pthread_mutex_init(&t->behind_mu, NULL);
    pthread_cond_init(&t->behind_cv, NULL);
    return t;
}

static void
chunk_free(sl_txn *t, struct sl__txn_chunk *c)
{
    sl_free(&t->alloc, c->data, t->a->layout.n_bytes);
    sl_free(&t->alloc, c->mask, t->mask_bytes);
    sl_buf_fini(&c->enc);
    sl_free(&t->alloc, c, sizeof(*c));
}

void
sl_txn_close(sl_txn *t)
{
    if (t == NULL)
        return;
    /* A write still running is the caller's error; rather than free the
     * transaction under it, wait for it to return, then abort.  A spin, not
     * a blocking wait: correct programs never get here with a write
     * running, and a condition variable would cost every write's
     * writer_leave a check for this one case.  Seq_cst load: part of the
     * phase protocol of writer_enter/phase_leave_open. */
    while (atomic_load(&t->phase) == SL__TXN_OPEN && sl_txn_abort(t, NULL) != SL_OK)
        sched_yield();
    sl__txn_behind_stop(t);
    struct sl__txn_chunk **pools[] = {&t->pool, &t->pool_bare};
    for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++)
        while (*pools[i] != NULL) {
            struct sl__txn_chunk *c = *pools[i];
            *pools[i] = c->next;
            chunk_free(t, c);
        }
    for (int i = 0; i < SL__TXN_STRIPES; i++) {
        struct sl__txn_stripe *s = &t->stripes[i];
        sl_free(&t->alloc, s->table, s->cap * sizeof(*s->table));
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->done);
    }
    pthread_mutex_destroy(&t->pool_mu);
    pthread_mutex_destroy(&t->err_mu);
    pthread_mutex_destroy(&t->behind_mu);
    pthread_cond_destroy(&t->behind_cv);
    sl_array *a = t->a;
    struct sl_allocator alloc = t->alloc;
    sl_free(&alloc, t, sizeof(*t));
    sl_array_unref(a);
}

/* ---- phases ----------------------------------------------------------------------- */

/* Count a write in, unless the transaction left the open phase. */
static sl_status
writer_enter(sl_txn *t, struct sl_error *err)
{
    if (t == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "transaction is missing");
    /* Sequentially consistent, with phase_leave_open: either this write
     * sees the new phase, or the committer sees this write counted. */
    atomic_fetch_add(&t->n_writers, 1);
    int phase = atomic_load(&t->phase);
    if (phase == SL__TXN_OPEN)
        return SL_OK;
    atomic_fetch_sub(&t->n_writers, 1);
    return sl_error_set(err, SL_ESTATE, NULL, "the transaction is %s", phase_name(phase));
}

static void
writer_leave(sl_txn *t)
{
    /* Seq_cst, pairing with phase_leave_open's load of n_writers: a
     * committer that reads 0 also sees everything this write staged (the
     * staging itself is published by the stripe locks). */
    atomic_fetch_sub(&t->n_writers, 1);
}

/* Move from open to `phase`, provided no write runs. */
static sl_status
phase_leave_open(sl_txn *t, int phase, struct sl_error *err)
{
    if (t == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "transaction is missing");
    int open = SL__TXN_OPEN;
    /* Seq_cst CAS then load: with writer_enter's seq_cst add then load
     * (a Dekker pattern), at least one side sees the other's store, so a
     * write never runs once a commit or abort has started. */
    if (!atomic_compare_exchange_strong(&t->phase, &open, phase))
        return sl_error_set(err, SL_ESTATE, NULL, "the transaction is %s", phase_name(open));
    uint32_t writers = atomic_load(&t->n_writers);
    if (writers == 0)
        return SL_OK;
    /* Back to open: writes that saw the other phase were refused and
     * changed nothing, so nothing needs publishing beyond the phase. */
    atomic_store(&t->phase, SL__TXN_OPEN);
    return sl_error_set(err, SL_ESTATE, NULL, "%" PRIu32 " writes of the transaction still run",
                        writers);
}

/* ---- writes ------------------------------------------------------------------------ */

/* Write unit `u`, which a write just completed, before returning; or
 * encode it and hand it to the writer thread. */
static void
flush_now(sl_txn *t, struct sl__txn_unit *u, sl_codec_ctx *ctx)
{
    if (t->opts.write_behind > 0) {
        /* Those staged encoded (encode_on_write) count already. */
        uint64_t before = sl__txn_encoded_bytes(t, u);
        sl__txn_encode_units(t, &u, 1, ctx);
        /* The encodings wait with the unit: they count as staged, so a
         * caller's memory budget (a graph's) sees them. */
        u->behind_bytes = sl__txn_encoded_bytes(t, u) - before;
        sl__txn_staged_add(t, u->behind_bytes);
        /* Assembled here too, on this worker's core, so that the writer
         * thread's time goes to the device alone; the chunks then give
         * their buffers up, and the shard's bytes are all that waits. */
        (void)sl__txn_assemble_early(t, u, ctx);
        if (sl__txn_behind_take(t, u))
            return;
        /* Written here after all: still counted while it is (an assembled
         * unit holds nothing else), until sl__txn_unit_finish. */
        if (!u->assembled) {
            sl__txn_staged_add(t, (uint64_t)0 - u->behind_bytes);
            u->behind_bytes = 0;
        }
    }
    sl__txn_flush(t, &u, 1, ctx, true);
}

static sl_status
check_buffer(const sl_txn *t, const void *buf, size_t buf_bytes, struct sl_error *err)
{
    size_t n = t->a->layout.n_bytes;
    if (buf == NULL || buf_bytes < n)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "chunk buffer of %zu bytes is smaller than a chunk (%zu bytes)",
                            buf != NULL ? buf_bytes : 0, n);
    return SL_OK;
}

sl_status
sl_txn_write_chunk(sl_txn *t, const uint64_t *coords, const void *buf, size_t buf_bytes,
                   sl_codec_ctx *ctx, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(writer_enter(t, err));
    struct sl__txn_unit *flush = NULL;
    sl_status st = sl__array_check_coords(t->a, coords, err);
    if (st == SL_OK)
        st = check_buffer(t, buf, buf_bytes, err);
    if (st == SL_OK)
        st = sl__txn_stage_chunk(t, coords, buf, ctx, &flush, err);
    if (flush != NULL)
        flush_now(t, flush, ctx);
    writer_leave(t);
    return st;
}

/* Check `region` against the array and a buffer of `buf_bytes`. */
static sl_status
check_region(const sl_array *a, const struct sl_region *region, const void *buf, size_t buf_bytes,
             struct sl_error *err)
{
    if (region == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "region is missing");
    SL_TRY(sl_region_check_within(region, a->meta.rank, a->meta.shape, err));
    uint64_t count;
    size_t bytes;
    SL_TRY(sl_region_count(region, &count, err));
    if (count > SIZE_MAX || !sl_size_mul_fits((size_t)count, a->elem_bytes, &bytes))
        return sl_error_set(err, SL_EOVERFLOW, NULL, "region of %" PRIu64 " elements", count);
    if (buf_bytes < bytes || (buf == NULL && bytes > 0))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "buffer of %zu bytes is smaller than the region's %zu",
                            buf != NULL ? buf_bytes : 0, bytes);
    return SL_OK;
}

static sl_status
write_region_entered(sl_txn *t, const struct sl_region *region, const void *buf, size_t buf_bytes,
                     sl_codec_ctx *ctx, struct sl_error *err)
{
    const sl_array *a = t->a;
    SL_TRY(check_region(a, region, buf, buf_bytes, err));
    if (sl_region_is_empty(region))
        return SL_OK;
    uint64_t dims[SL_MAX_RANK];
    sl_region_shape(region, dims);
    struct sl_grid_iter it;
    sl_grid_iter_init(&it, &a->chunk_grid, region);
    while (sl_grid_iter_next(&it)) {
        struct sl__txn_unit *flush = NULL;
        sl_status st =
            sl__txn_stage_part(t, it.coords, &it.part, buf, dims, region->start, ctx, &flush, err);
        if (flush != NULL)
            flush_now(t, flush, ctx);
        if (st != SL_OK)
            return st;
    }
    return SL_OK;
}

sl_status
sl_txn_write_region(sl_txn *t, const struct sl_region *region, const void *buf, size_t buf_bytes,
                    sl_codec_ctx *ctx, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(writer_enter(t, err));
    sl_status st = write_region_entered(t, region, buf, buf_bytes, ctx, err);
    writer_leave(t);
    return st;
}

/* ---- commit and abort ---------------------------------------------------------------- */

/* Every staged unit, marked flushing, into a new array of `*n`; they stay
 * in the table until written, so readers still see them. */
static struct sl__txn_unit **
units_collect(sl_txn *t, size_t *n, struct sl_error *err)
{
    size_t total = 0;
    for (int i = 0; i < SL__TXN_STRIPES; i++) {
        pthread_mutex_lock(&t->stripes[i].mu);
        total += t->stripes[i].n;
        pthread_mutex_unlock(&t->stripes[i].mu);
    }
    *n = 0;
    struct sl__txn_unit **units = sl_alloc(&t->alloc, (total > 0 ? total : 1) * sizeof(*units), 0);
    if (units == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "out of memory for %zu staged units", total);
        return NULL;
    }
    /* No write runs, so the tables keep what was counted. */
    for (int i = 0; i < SL__TXN_STRIPES; i++) {
        struct sl__txn_stripe *s = &t->stripes[i];
        pthread_mutex_lock(&s->mu);
        for (size_t j = 0; j < s->cap; j++) {
            if (s->table[j] != NULL) {
                s->table[j]->state = SL__TXN_FLUSHING;
                units[(*n)++] = s->table[j];
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    return units;
}

static int
unit_cmp(const void *pa, const void *pb)
{
    const struct sl__txn_unit *a = *(const struct sl__txn_unit *const *)pa;
    const struct sl__txn_unit *b = *(const struct sl__txn_unit *const *)pb;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Bytes unit `u`'s write will hold: its chunks' encodings, as large as
 * the chunks where they are still to be made. */
static uint64_t
unit_bytes(const sl_txn *t, const struct sl__txn_unit *u)
{
    uint64_t n = 0;
    for (uint64_t k = 0; k < t->n_per_unit; k++) {
        const struct sl__txn_chunk *c = u->slots[k];
        n += c == NULL ? 0 : c->encoded ? sl__txn_chunk_encoding(c).size : t->a->layout.n_bytes;
    }
    return n;
}

sl_status
sl_txn_commit(sl_txn *t, sl_codec_ctx *ctx, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(phase_leave_open(t, SL__TXN_COMMITTING, err));
    sl__txn_behind_drain(t);
    size_t n;
    struct sl__txn_unit **units = units_collect(t, &n, err);
    if (units == NULL) {
        /* Nothing was flushed: open again, as phase_leave_open does. */
        atomic_store(&t->phase, SL__TXN_OPEN);
        return SL_ENOMEM;
    }
    qsort(units, n, sizeof(*units), unit_cmp);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        for (uint64_t bytes = 0; j < n && (j == i || bytes < SL__TXN_BATCH_BYTES); j++)
            bytes += unit_bytes(t, units[j]);
        sl__txn_flush(t, units + i, j - i, ctx, false);
        i = j;
    }
    sl_free(&t->alloc, units, (n > 0 ? n : 1) * sizeof(*units));
    /* Seq_cst like every phase access; writers that see it are refused
     * (writer_enter), and close reads it before freeing. */
    atomic_store(&t->phase, SL__TXN_COMMITTED);
    pthread_mutex_lock(&t->err_mu);
    struct sl_error first = t->first_err;
    pthread_mutex_unlock(&t->err_mu);
    sl__error_forward(err, &first);
    return first.code;
}

sl_status
sl_txn_abort(sl_txn *t, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(phase_leave_open(t, SL__TXN_ABORTED, err));
    sl__txn_behind_drain(t); /* early writes are final: let them end */
    for (int i = 0; i < SL__TXN_STRIPES; i++) {
        struct sl__txn_stripe *s = &t->stripes[i];
        /* No write runs: take the stripe's table and drop its units
         * outside the lock, where on_unit may run. */
        pthread_mutex_lock(&s->mu);
        struct sl__txn_unit **table = s->table;
        size_t cap = s->cap;
        s->table = NULL;
        s->cap = 0;
        s->n = 0;
        pthread_mutex_unlock(&s->mu);
        for (size_t j = 0; j < cap; j++) {
            struct sl__txn_unit *u = table[j];
            if (u == NULL)
                continue;
            u->status = sl_error_set(&u->err, SL_ECANCELED, NULL, "the transaction was aborted");
            sl__error_locate(&u->err, NULL, t->a->meta.rank, u->coords);
            sl__txn_unit_finish(t, u, false);
        }
        sl_free(&t->alloc, table, cap * sizeof(*table));
    }
    return SL_OK;
}

/* ---- counters ------------------------------------------------------------------------ */

uint64_t
sl_txn_staged_bytes(const sl_txn *t)
{
    return atomic_load_explicit(&((sl_txn *)t)->staged_bytes, memory_order_relaxed);
}

void
sl_txn_get_stats(const sl_txn *t, struct sl_txn_stats *out)
{
    sl_txn *m = (sl_txn *)t; /* atomics are loaded, never changed */
    *out = (struct sl_txn_stats){
        .n_chunks_staged = atomic_load_explicit(&m->n_chunks_staged, memory_order_relaxed),
        .n_units_written = atomic_load_explicit(&m->n_units_written, memory_order_relaxed),
        .n_units_failed = atomic_load_explicit(&m->n_units_failed, memory_order_relaxed),
        .n_units_early = atomic_load_explicit(&m->n_units_early, memory_order_relaxed),
        .staged_bytes = atomic_load_explicit(&m->staged_bytes, memory_order_relaxed),
        .peak_staged_bytes = atomic_load_explicit(&m->peak_staged_bytes, memory_order_relaxed),
        .staged_units = atomic_load_explicit(&m->n_units_staged, memory_order_relaxed),
        .n_retries = atomic_load_explicit(&m->n_retries, memory_order_relaxed),
    };
}
