/* SPDX-License-Identifier: MIT */
/*
 * Transactions: nothing is written before commit but complete shards,
 * each shard written once (counted through the memory store's hook),
 * partly covered shards read once and merged, abort leaving storage
 * untouched, reads seeing staged data, region writes against a dense model,
 * unsharded arrays, fill chunks, bounded staging, failed shard writes
 * reported per unit, the iterators, and the leftovers of killed writers.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sluice.h>

#include "fault_io.h"
#include "testkit.h"
#include "testutil.h"
#include "txn_internal.h"

TestSuite(io_txn, .timeout = 60.0);

/* ---- fixture: a [20, 20] uint16 array, shards [8, 8] of inner chunks [4, 4] ---- */

#define N 20
#define SHARDS 3 /* per dimension */

/* Store operations on the shards of array "a", through the memory hook. */
struct counter {
    int sets[SHARDS][SHARDS];
    int gets[SHARDS][SHARDS];
    int deletes[SHARDS][SHARDS];
    int n_sets;      /* sets of shard keys */
    int fail_set[2]; /* shard whose sets fail with ENOSPC; {-1, -1}: none */
    bool counting;   /* ignore operations while false */
    /* A gate: while closed, a set of a shard waits (the writer thread's). */
    pthread_mutex_t gate_mu;
    pthread_cond_t gate_cv;
    bool gate_closed;  /* sets wait */
    bool gate_waiting; /* a set is waiting */
    pthread_t setter;  /* the thread of the last set of a shard */
};

/* Hold sets of shards at the gate while it is closed. */
static void
gate_pass(struct counter *c)
{
    pthread_mutex_lock(&c->gate_mu);
    while (c->gate_closed) {
        c->gate_waiting = true;
        pthread_cond_broadcast(&c->gate_cv);
        pthread_cond_wait(&c->gate_cv, &c->gate_mu);
    }
    pthread_mutex_unlock(&c->gate_mu);
}

static void
gate_set(struct counter *c, bool closed)
{
    pthread_mutex_lock(&c->gate_mu);
    c->gate_closed = closed;
    c->gate_waiting = false;
    pthread_cond_broadcast(&c->gate_cv);
    pthread_mutex_unlock(&c->gate_mu);
}

/* Wait until a set waits at the closed gate. */
static void
gate_wait_for_set(struct counter *c)
{
    pthread_mutex_lock(&c->gate_mu);
    while (!c->gate_waiting)
        pthread_cond_wait(&c->gate_cv, &c->gate_mu);
    pthread_mutex_unlock(&c->gate_mu);
}

static int
count_ops(void *ctx, sl_store_op op, const char *key, size_t bytes)
{
    (void)bytes;
    struct counter *c = ctx;
    unsigned y, x;
    if (!c->counting || sscanf(key, "a/c/%u/%u", &y, &x) != 2 || y >= SHARDS || x >= SHARDS)
        return 0;
    if (op == SL_STORE_OP_SET)
        gate_pass(c);
    if (op == SL_STORE_OP_SET && c->fail_set[0] == (int)y && c->fail_set[1] == (int)x)
        return -ENOSPC;
    if (op == SL_STORE_OP_SET)
        c->sets[y][x]++, c->n_sets++, c->setter = pthread_self();
    else if (op == SL_STORE_OP_GET)
        c->gets[y][x]++;
    else
        c->deletes[y][x]++;
    return 0;
}

struct fixture {
    struct counter c;
    sl_store *s;
    sl_array *a;
    uint16_t model[N * N]; /* what the array must hold after commit */
};

/* Shards with their index before the chunks, and checksums (the next
 * fixture_open only). */
static bool fixture_index_at_start;

static void
fixture_open(struct fixture *f, bool sharded, int zarr_format)
{
    memset(f, 0, sizeof(*f));
    f->c.fail_set[0] = f->c.fail_set[1] = -1;
    pthread_mutex_init(&f->c.gate_mu, NULL);
    pthread_cond_init(&f->c.gate_cv, NULL);
    struct sl_mem_store_opts o = SL_MEM_STORE_OPTS_DEFAULT;
    o.hook = count_ops;
    o.hook_ctx = &f->c;
    f->s = sl_store_create_memory(&o, NULL);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.zarr_format = zarr_format;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = N;
        sp.chunk_shape[d] = 4;
        sp.shard_shape[d] = sharded ? 8 : 0;
    }
    sp.index_at_start = sp.checksum = fixture_index_at_start;
    fixture_index_at_start = false;
    struct sl_error err = SL_ERROR_INIT;
    f->a = sl_array_create(f->s, "a", &sp, NULL, &err);
    cr_assert_not_null(f->a, "%s", err.text);
    f->c.counting = true;
}

static void
fixture_close(struct fixture *f)
{
    sl_array_unref(f->a);
    sl_store_unref(f->s);
    pthread_mutex_destroy(&f->c.gate_mu);
    pthread_cond_destroy(&f->c.gate_cv);
}

static void
counter_reset(struct counter *c)
{
    memset(c->sets, 0, sizeof(c->sets));
    memset(c->gets, 0, sizeof(c->gets));
    memset(c->deletes, 0, sizeof(c->deletes));
    c->n_sets = 0;
}

/* Store `seed`-derived data (never the fill value) over the whole array,
 * without a transaction, and in the model. */
static void
fixture_fill(struct fixture *f, unsigned seed)
{
    sl_test_fill_data(f->model, N * N, SL_DTYPE_U16, seed, false);
    for (int i = 0; i < N * N; i++)
        f->model[i] |= 1;
    struct sl_region whole = sl_region_whole(2, (const uint64_t[]){N, N});
    cr_assert_eq(sl_array_write_region(f->a, &whole, f->model, sizeof(f->model), NULL, NULL, NULL),
                 SL_OK);
    counter_reset(&f->c);
}

/* The chunk at chunk coordinates (cy, cx) of `values` (a dense [N, N]),
 * padding included as garbage. */
static void
chunk_of(const uint16_t *values, uint64_t cy, uint64_t cx, uint16_t chunk[16])
{
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            uint64_t gy = cy * 4 + (uint64_t)y, gx = cx * 4 + (uint64_t)x;
            chunk[y * 4 + x] = gy < N && gx < N ? values[gy * N + gx] : 0xdead;
        }
}

/* The codec context the helpers below write with (NULL: none).  With one,
 * a shard handed to the writer thread is assembled by the write that
 * completes it; without, by the writer thread. */
static sl_codec_ctx *put_ctx;

/* Write chunk (cy, cx) of `values` through `t` and into the model. */
static void
txn_put_chunk(struct fixture *f, sl_txn *t, uint64_t cy, uint64_t cx, const uint16_t *values)
{
    uint16_t chunk[16];
    chunk_of(values, cy, cx, chunk);
    const uint64_t c[2] = {cy, cx};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_write_chunk(t, c, chunk, sizeof(chunk), sl_test_write_ctx(put_ctx), &err),
                 SL_OK, "%s", err.text);
    for (uint64_t y = cy * 4; y < cy * 4 + 4 && y < N; y++)
        for (uint64_t x = cx * 4; x < cx * 4 + 4 && x < N; x++)
            f->model[y * N + x] = values[y * N + x];
}

/* Write region [y0, y1) x [x0, x1) of `values` through `t` and the model. */
static void
txn_put_region(struct fixture *f, sl_txn *t, uint64_t y0, uint64_t y1, uint64_t x0, uint64_t x1,
               const uint16_t *values)
{
    uint16_t box[N * N];
    size_t n = 0;
    for (uint64_t y = y0; y < y1; y++)
        for (uint64_t x = x0; x < x1; x++) {
            box[n++] = values[y * N + x];
            f->model[y * N + x] = values[y * N + x];
        }
    struct sl_region r = {.rank = 2, .start = {y0, x0}, .stop = {y1, x1}};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_write_region(t, &r, box, n * 2, sl_test_write_ctx(put_ctx), &err), SL_OK,
                 "%s", err.text);
}

/* At most what one chunk of the fixture stages: 32 bytes decoded; staged
 * encoded (SL_TEST_ENCODE_ON_WRITE), its encoding, which the codec sizes
 * (above 32 for such small chunks, well under 96). */
#define CHUNK_STAGED_MAX (SL_TEST_ENCODE_ON_WRITE_ON ? 96 : 32)

/* `got` staged bytes are what `n` chunks stage: exactly 32 each decoded;
 * encoded, something for each, at most CHUNK_STAGED_MAX. */
static void
assert_staged_chunks(uint64_t got, uint64_t n, const char *what)
{
    if (SL_TEST_ENCODE_ON_WRITE_ON)
        cr_assert((got == 0) == (n == 0) && got <= n * CHUNK_STAGED_MAX,
                  "%s: %llu bytes staged for %llu chunks staged encoded", what,
                  (unsigned long long)got, (unsigned long long)n);
    else
        cr_assert_eq(got, n * 32, "%s: %llu bytes staged for %llu chunks", what,
                     (unsigned long long)got, (unsigned long long)n);
}

/* The array as stored equals the model. */
static void
check_stored(const struct fixture *f)
{
    uint16_t back[N * N];
    struct sl_region whole = sl_region_whole(2, (const uint64_t[]){N, N});
    cr_assert_eq(sl_array_read_region(f->a, &whole, back, sizeof(back), NULL, NULL, NULL), SL_OK);
    for (int i = 0; i < N * N; i++)
        cr_assert_eq(back[i], f->model[i], "element (%d, %d): %u, expected %u", i / N, i % N,
                     back[i], f->model[i]);
}

/* New data: `seed`-derived, never the fill value. */
static void
values_make(uint16_t *v, unsigned seed)
{
    sl_test_fill_data(v, N * N, SL_DTYPE_U16, seed, false);
    for (int i = 0; i < N * N; i++)
        v[i] = (uint16_t)(v[i] | 2);
}

/* Reports of on_unit, per shard. */
struct reports {
    int calls[SHARDS][SHARDS];
    sl_status status[SHARDS][SHARDS];
    char text[SHARDS][SHARDS][160];
};

static void
record_unit(void *arg, const uint64_t *unit, sl_status status, const struct sl_error *err)
{
    struct reports *r = arg;
    r->calls[unit[0]][unit[1]]++;
    r->status[unit[0]][unit[1]] = status;
    if (err != NULL)
        snprintf(r->text[unit[0]][unit[1]], 160, "%s", err->text);
    cr_assert((status == SL_OK) == (err == NULL));
}

/* ---- what is written when ------------------------------------------------------- */

Test(io_txn, a_shard_is_written_once_when_its_last_chunk_is_staged)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 1);
    uint16_t v[N * N];
    values_make(v, 2);
    sl_txn *t = sl_txn_open(f.a, NULL, NULL);
    cr_assert_not_null(t);
    txn_put_chunk(&f, t, 0, 0, v);
    txn_put_chunk(&f, t, 0, 1, v);
    txn_put_chunk(&f, t, 1, 0, v);
    cr_assert_eq(f.c.n_sets, 0, "nothing is written before the shard is complete");
    txn_put_chunk(&f, t, 1, 1, v);
    cr_assert_eq(f.c.sets[0][0], 1, "the complete shard is written at once");
    cr_assert_eq(f.c.gets[0][0], 0, "a complete shard is not read");
    cr_assert_eq(f.c.n_sets, 1);
    /* One chunk of shard (1, 1): partial, written at commit. */
    txn_put_chunk(&f, t, 2, 3, v);
    cr_assert_eq(f.c.n_sets, 1);
    struct sl_txn_stats st;
    sl_txn_get_stats(t, &st);
    cr_assert_eq(st.n_units_early, 1);
    cr_assert_eq(st.n_chunks_staged, 5);
    assert_staged_chunks(st.staged_bytes, 1, "one chunk of 16 uint16 staged");
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_commit(t, NULL, &err), SL_OK, "%s", err.text);
    cr_assert_eq(f.c.sets[1][1], 1);
    cr_assert_eq(f.c.gets[1][1], 1, "the partly covered shard is read once");
    cr_assert_eq(f.c.n_sets, 2);
    sl_txn_get_stats(t, &st);
    cr_assert_eq(st.n_units_written, 2);
    cr_assert_eq(st.staged_bytes, 0);
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

Test(io_txn, without_flush_full_nothing_is_written_before_commit)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    uint16_t v[N * N];
    values_make(v, 3);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.flush_full = false;
    sl_txn *t = sl_txn_open(f.a, &o, NULL);
    /* Column-major order, so shards complete in no particular order. */
    for (uint64_t cx = 0; cx < 5; cx++)
        for (uint64_t cy = 0; cy < 5; cy++)
            txn_put_chunk(&f, t, cy, cx, v);
    cr_assert_eq(f.c.n_sets, 0);
    assert_staged_chunks(sl_txn_staged_bytes(t), 25, "every chunk staged");
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    for (int y = 0; y < SHARDS; y++)
        for (int x = 0; x < SHARDS; x++) {
            cr_assert_eq(f.c.sets[y][x], 1, "shard (%d, %d) written once", y, x);
            cr_assert_eq(f.c.gets[y][x], 0, "shard (%d, %d) fully covered: not read", y, x);
        }
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

Test(io_txn, abort_leaves_storage_untouched)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 4);
    uint16_t before[N * N], v[N * N];
    memcpy(before, f.model, sizeof(before));
    values_make(v, 5);
    struct reports rep = {0};
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.flush_full = false;
    o.on_unit = record_unit;
    o.on_unit_arg = &rep;
    sl_txn *t = sl_txn_open(f.a, &o, NULL);
    for (uint64_t cy = 0; cy < 5; cy++)
        txn_put_chunk(&f, t, cy, cy, v);
    txn_put_region(&f, t, 3, 17, 5, 6, v);
    cr_assert_eq(sl_txn_abort(t, NULL), SL_OK);
    cr_assert_eq(f.c.n_sets, 0);
    cr_assert_eq(sl_txn_staged_bytes(t), 0);
    int dropped = 0;
    for (int y = 0; y < SHARDS; y++)
        for (int x = 0; x < SHARDS; x++) {
            cr_assert_eq(f.c.deletes[y][x], 0);
            cr_assert_leq(rep.calls[y][x], 1);
            if (rep.calls[y][x] == 1) {
                cr_assert_eq(rep.status[y][x], SL_ECANCELED);
                dropped++;
            }
        }
    cr_assert_eq(dropped, 5, "shards (0,0) (1,1) (2,2) (0,1)... staged: %d reported", dropped);
    cr_assert_eq(sl_txn_write_chunk(t, (const uint64_t[]){0, 0}, v, sizeof(v), NULL, NULL),
                 SL_ESTATE);
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_ESTATE);
    sl_txn_close(t);
    memcpy(f.model, before, sizeof(before));
    check_stored(&f);
    fixture_close(&f);
}

/* With `behind`, the early flushes are the writer thread's. */
static void
check_abort_after_early_flush(unsigned behind)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 6);
    uint16_t v[N * N];
    values_make(v, 7);
    struct reports rep = {0};
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.write_behind = behind;
    o.on_unit = record_unit;
    o.on_unit_arg = &rep;
    sl_txn *t = sl_txn_open(f.a, &o, NULL);
    for (uint64_t cy = 0; cy < 2; cy++)
        for (uint64_t cx = 0; cx < 2; cx++)
            txn_put_chunk(&f, t, cy, cx, v);
    uint16_t kept[N * N];
    memcpy(kept, f.model, sizeof(kept));
    txn_put_chunk(&f, t, 4, 4, v); /* shard (2, 2) holds one chunk: also complete */
    txn_put_chunk(&f, t, 3, 3, v);
    for (uint64_t x = 16; x < 20; x++)
        for (uint64_t y = 16; y < 20; y++)
            kept[y * N + x] = v[y * N + x];
    cr_assert_eq(sl_txn_abort(t, NULL), SL_OK);
    cr_assert_eq(rep.status[0][0], SL_OK);
    cr_assert_eq(rep.status[2][2], SL_OK);
    cr_assert_eq(rep.status[1][1], SL_ECANCELED);
    cr_assert_eq(f.c.n_sets, 2);
    sl_txn_close(t);
    memcpy(f.model, kept, sizeof(kept));
    check_stored(&f);
    fixture_close(&f);
}

Test(io_txn, abort_after_an_early_flush_keeps_only_that_shard) { check_abort_after_early_flush(0); }

Test(io_txn, abort_waits_for_the_writer_thread_and_keeps_what_it_wrote)
{
    check_abort_after_early_flush(1);
    check_abort_after_early_flush(3);
}

Test(io_txn, a_partly_covered_shard_is_read_once_merged_and_written_once)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 8);
    uint16_t v[N * N];
    values_make(v, 9);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    sl_txn *t = sl_txn_open(f.a, &o, NULL);
    txn_put_chunk(&f, t, 0, 1, v);
    txn_put_region(&f, t, 1, 3, 1, 7, v);  /* parts of chunks (0, 0) and (0, 1) */
    txn_put_region(&f, t, 5, 6, 0, 20, v); /* a row across three shards */
    cr_assert_eq(f.c.n_sets, 0);
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    for (int x = 0; x < SHARDS; x++) {
        cr_assert_eq(f.c.gets[0][x], 1, "shard (0, %d) read once", x);
        cr_assert_eq(f.c.sets[0][x], 1, "shard (0, %d) written once", x);
    }
    cr_assert_eq(f.c.n_sets, 3);
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

Test(io_txn, rewriting_a_flushed_shard_merges_again)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    uint16_t v[N * N], w[N * N];
    values_make(v, 10);
    values_make(w, 11);
    sl_txn *t = sl_txn_open(f.a, NULL, NULL);
    for (uint64_t cy = 0; cy < 2; cy++)
        for (uint64_t cx = 0; cx < 2; cx++)
            txn_put_chunk(&f, t, cy, cx, v);
    txn_put_chunk(&f, t, 1, 0, w);
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    cr_assert_eq(f.c.sets[0][0], 2, "written when complete, then again at commit");
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

/* ---- reads through the transaction --------------------------------------------- */

Test(io_txn, reads_see_staged_chunks_and_parts_over_storage)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 12);
    uint16_t stored[N * N], v[N * N];
    memcpy(stored, f.model, sizeof(stored));
    values_make(v, 13);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.flush_full = false;
    sl_txn *t = sl_txn_open(f.a, &o, NULL);
    txn_put_chunk(&f, t, 0, 0, v);
    txn_put_region(&f, t, 9, 10, 9, 11, v);   /* part of chunk (2, 2) */
    txn_put_region(&f, t, 12, 20, 0, 20, v);  /* whole chunks, edge shards */
    txn_put_region(&f, t, 17, 18, 18, 19, v); /* again, inside a whole chunk */
    int gets = f.c.gets[0][0];
    uint16_t chunk[16], want[16];
    bool missing = true;
    cr_assert_eq(sl_txn_read_chunk(t, (const uint64_t[]){0, 0}, chunk, 32, NULL, &missing, NULL),
                 SL_OK);
    chunk_of(f.model, 0, 0, want);
    cr_assert_eq(memcmp(chunk, want, 32), 0);
    cr_assert_not(missing);
    cr_assert_eq(f.c.gets[0][0], gets, "a chunk staged whole is read from memory");
    for (uint64_t cy = 0; cy < 5; cy++)
        for (uint64_t cx = 0; cx < 5; cx++) {
            cr_assert_eq(
                sl_txn_read_chunk(t, (const uint64_t[]){cy, cx}, chunk, 32, NULL, &missing, NULL),
                SL_OK);
            chunk_of(f.model, cy, cx, want);
            for (int i = 0; i < 16; i++)
                if (want[i] != 0xdead)
                    cr_assert_eq(chunk[i], want[i], "chunk (%lu, %lu) element %d",
                                 (unsigned long)cy, (unsigned long)cx, i);
        }
    uint16_t back[N * N];
    struct sl_region whole = sl_region_whole(2, (const uint64_t[]){N, N});
    cr_assert_eq(sl_txn_read_region(t, &whole, back, sizeof(back), NULL, NULL), SL_OK);
    cr_assert_eq(memcmp(back, f.model, sizeof(back)), 0);
    struct sl_region part = {.rank = 2, .start = {3, 7}, .stop = {13, 19}};
    uint16_t box[10 * 12];
    cr_assert_eq(sl_txn_read_region(t, &part, box, sizeof(box), NULL, NULL), SL_OK);
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 12; x++)
            cr_assert_eq(box[y * 12 + x], f.model[(y + 3) * N + x + 7]);
    /* Storage still holds the old data. */
    cr_assert_eq(sl_array_read_region(f.a, &whole, back, sizeof(back), NULL, NULL, NULL), SL_OK);
    cr_assert_eq(memcmp(back, stored, sizeof(back)), 0);
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    cr_assert_eq(sl_txn_read_region(t, &whole, back, sizeof(back), NULL, NULL), SL_OK);
    cr_assert_eq(memcmp(back, f.model, sizeof(back)), 0);
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

Test(io_txn, reading_an_absent_chunk_reports_it_missing_unless_staged)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    sl_txn *t = sl_txn_open(f.a, NULL, NULL);
    uint16_t chunk[16];
    bool missing = false;
    cr_assert_eq(sl_txn_read_chunk(t, (const uint64_t[]){2, 2}, chunk, 32, NULL, &missing, NULL),
                 SL_OK);
    cr_assert(missing);
    uint16_t one = 7;
    struct sl_region r = {.rank = 2, .start = {9, 9}, .stop = {10, 10}};
    cr_assert_eq(sl_txn_write_region(t, &r, &one, 2, NULL, NULL), SL_OK);
    cr_assert_eq(sl_txn_read_chunk(t, (const uint64_t[]){2, 2}, chunk, 32, NULL, &missing, NULL),
                 SL_OK);
    cr_assert_not(missing);
    cr_assert_eq(chunk[5], 7);
    cr_assert_eq(chunk[0], 0, "the rest reads as the fill value");
    sl_txn_close(t);
    fixture_close(&f);
}

/* ---- against a dense model -------------------------------------------------------- */

static uint32_t
lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Random chunks and regions, some repeated, through one transaction. */
static void
check_random_writes(bool sharded, int zarr_format, bool flush_full, unsigned n_threads,
                    unsigned behind)
{
    struct fixture f;
    fixture_open(&f, sharded, zarr_format);
    fixture_fill(&f, 20);
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, n_threads);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.flush_full = flush_full;
    o.par = n_threads > 0 ? &pool.par : NULL;
    o.write_behind = behind;
    uint32_t seed = 99 + n_threads + (flush_full ? 7 : 0);
    for (int round = 0; round < 4; round++) {
        sl_txn *t = sl_txn_open(f.a, &o, NULL);
        sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
        put_ctx = round % 2 == 0 ? ctx : NULL; /* both ways of assembling */
        for (int op = 0; op < 12; op++) {
            uint16_t v[N * N];
            values_make(v, lcg(&seed));
            if (lcg(&seed) % 3 == 0) {
                txn_put_chunk(&f, t, lcg(&seed) % 5, lcg(&seed) % 5, v);
                continue;
            }
            uint64_t y0 = lcg(&seed) % N, x0 = lcg(&seed) % N;
            uint64_t y1 = y0 + 1 + lcg(&seed) % (N - y0), x1 = x0 + 1 + lcg(&seed) % (N - x0);
            txn_put_region(&f, t, y0, y1, x0, x1, v);
        }
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_txn_commit(t, ctx, &err), SL_OK, "%s", err.text);
        put_ctx = NULL;
        sl_codec_ctx_destroy(ctx);
        sl_txn_close(t);
        check_stored(&f);
    }
    fixture_close(&f);
}

Test(io_txn, random_writes_match_a_dense_model_sharded)
{
    check_random_writes(true, 3, true, 0, 0);
    check_random_writes(true, 3, false, 0, 0);
    check_random_writes(true, 3, true, 3, 0);
    check_random_writes(true, 3, false, 3, 0);
}

Test(io_txn, random_writes_match_a_dense_model_writing_behind)
{
    check_random_writes(true, 3, true, 0, 1);
    check_random_writes(true, 3, true, 3, 2);
    check_random_writes(false, 3, true, 2, 1);
    check_random_writes(false, 2, true, 0, 4);
}

Test(io_txn, random_writes_match_a_dense_model_unsharded)
{
    check_random_writes(false, 3, true, 0, 0);
    check_random_writes(false, 3, false, 3, 0);
    check_random_writes(false, 2, true, 2, 0);
    check_random_writes(false, 2, false, 0, 0);
}

Test(io_txn, unsharded_chunks_are_their_own_units)
{
    struct fixture f;
    fixture_open(&f, false, 3);
    fixture_fill(&f, 21);
    uint16_t v[N * N];
    values_make(v, 22);
    struct reports rep = {0};
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.on_unit = record_unit;
    o.on_unit_arg = &rep;
    sl_txn *t = sl_txn_open(f.a, &o, NULL);
    txn_put_chunk(&f, t, 1, 2, v);
    cr_assert_eq(f.c.sets[1][2], 1, "a whole chunk is its own complete unit");
    cr_assert_eq(rep.calls[1][2], 1);
    txn_put_region(&f, t, 0, 2, 0, 2, v);
    cr_assert_eq(f.c.sets[0][0], 0, "a partial chunk waits for commit");
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    cr_assert_eq(f.c.sets[0][0], 1);
    cr_assert_eq(f.c.gets[0][0], 1, "read once for the merge");
    cr_assert_eq(rep.calls[0][0], 1);
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

Test(io_txn, edge_shard_flushes_when_its_chunks_inside_the_array_are_staged)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    uint16_t v[N * N];
    values_make(v, 23);
    sl_txn *t = sl_txn_open(f.a, NULL, NULL);
    txn_put_chunk(&f, t, 4, 4, v);
    cr_assert_eq(f.c.sets[2][2], 1, "shard (2, 2) has one chunk inside the array");
    txn_put_chunk(&f, t, 4, 0, v);
    cr_assert_eq(f.c.sets[2][0], 0);
    txn_put_chunk(&f, t, 4, 1, v);
    cr_assert_eq(f.c.sets[2][0], 1, "shard (2, 0) has two");
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    cr_assert_eq(f.c.n_sets, 2);
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

Test(io_txn, chunks_of_fill_are_not_stored)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 24);
    uint16_t zeros[N * N] = {0};
    sl_txn *t = sl_txn_open(f.a, NULL, NULL);
    txn_put_chunk(&f, t, 0, 0, zeros);
    txn_put_region(&f, t, 16, 20, 16, 20, zeros); /* all of shard (2, 2) */
    cr_assert_eq(f.c.deletes[2][2], 1, "a shard of fill only is deleted");
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    sl_txn_close(t);
    uint16_t chunk[16];
    bool missing = false;
    cr_assert_eq(
        sl_array_read_chunk(f.a, (const uint64_t[]){0, 0}, chunk, 32, NULL, &missing, NULL), SL_OK);
    cr_assert(missing, "its index entry is empty");
    uint64_t bytes;
    cr_assert_eq(sl_store_size(f.s, "a/c/2/2", &bytes, NULL), SL_ENOTFOUND);
    check_stored(&f);
    fixture_close(&f);
}

Test(io_txn, staging_shard_by_shard_keeps_at_most_one_shard_in_memory)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    uint16_t v[N * N];
    values_make(v, 25);
    sl_txn *t = sl_txn_open(f.a, NULL, NULL);
    struct sl_array_iter shards, chunks;
    cr_assert_eq(sl_array_iter_shards(f.a, NULL, &shards, NULL), SL_OK);
    while (sl_array_iter_next(&shards)) {
        cr_assert_eq(sl_array_iter_shard_chunks(f.a, shards.iter.coords, &chunks, NULL), SL_OK);
        while (sl_array_iter_next(&chunks)) {
            txn_put_chunk(&f, t, chunks.iter.coords[0], chunks.iter.coords[1], v);
            cr_assert_lt(sl_txn_staged_bytes(t), 4 * CHUNK_STAGED_MAX);
        }
        cr_assert_eq(sl_txn_staged_bytes(t), 0, "the shard was written");
    }
    struct sl_txn_stats st;
    sl_txn_get_stats(t, &st);
    assert_staged_chunks(st.peak_staged_bytes, 4, "one shard of 4 chunks at most");
    cr_assert_eq(st.n_units_early, 9);
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    cr_assert_eq(f.c.n_sets, 9);
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

/* ---- writing behind ---------------------------------------------------------------- */

Test(io_txn, the_writer_thread_writes_each_complete_shard_once_in_bounded_memory)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 40);
    uint16_t v[N * N];
    values_make(v, 41);
    struct reports rep = {0};
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.write_behind = 1;
    o.on_unit = record_unit;
    o.on_unit_arg = &rep;
    sl_txn *t = sl_txn_open(f.a, &o, NULL);
    /* Writes with a context, as graph puts write: the write completing a
     * shard encodes it before the hand-over, so its encodings are counted
     * whatever the writer thread's timing. */
    put_ctx = sl_codec_ctx_create(NULL, NULL);
    cr_assert_not_null(put_ctx);
    struct sl_array_iter shards, chunks;
    cr_assert_eq(sl_array_iter_shards(f.a, NULL, &shards, NULL), SL_OK);
    while (sl_array_iter_next(&shards)) {
        cr_assert_eq(sl_array_iter_shard_chunks(f.a, shards.iter.coords, &chunks, NULL), SL_OK);
        while (sl_array_iter_next(&chunks))
            txn_put_chunk(&f, t, chunks.iter.coords[0], chunks.iter.coords[1], v);
    }
    (void)sl_txn_wait_behind(t);
    sl_codec_ctx_destroy(put_ctx);
    put_ctx = NULL;
    struct sl_txn_stats st;
    sl_txn_get_stats(t, &st);
    cr_assert_eq(st.n_units_early, 9, "every shard was complete, so written early");
    cr_assert_eq(st.staged_bytes, 0);
    /* A shard handed over counts its encodings (each under 64 bytes) with
     * its chunks; assembled by the write that completed it (the
     * encode-on-write build, whose writes have a context), its bytes
     * instead, the peak catching the moment both exist. */
    cr_assert_gt(st.peak_staged_bytes, 4 * 32, "the encodings of a handed-over shard count");
    cr_assert_leq(st.peak_staged_bytes,
                  SL_TEST_ENCODE_ON_WRITE_ON ? 2 * (4 * 96 + 256) : 2 * (4 * 32 + 4 * 64),
                  "one shard in the writer's hands and one waiting for room: %llu bytes",
                  (unsigned long long)st.peak_staged_bytes);
    cr_assert_eq(f.c.n_sets, 9, "before commit: %d sets", f.c.n_sets);
    for (int y = 0; y < SHARDS; y++)
        for (int x = 0; x < SHARDS; x++) {
            cr_assert_eq(f.c.sets[y][x], 1, "shard (%d, %d)", y, x);
            cr_assert_eq(f.c.gets[y][x], 0, "a complete shard is not read");
            cr_assert_eq(rep.calls[y][x], 1);
            cr_assert_eq(rep.status[y][x], SL_OK);
        }
    cr_assert_eq(sl_txn_wait_behind(t), false, "nothing is left to wait for");
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    cr_assert_eq(f.c.n_sets, 9, "commit had nothing left to write");
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

/* AUTO on a memory store: its sets do not wait for a device, so no writer
 * thread; the write completing a shard stores it before returning. */
Test(io_txn, write_behind_auto_writes_in_place_on_a_memory_store)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 44);
    uint16_t v[N * N];
    values_make(v, 45);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.write_behind = SL_TXN_WRITE_BEHIND_AUTO;
    sl_txn *t = sl_txn_open(f.a, &o, NULL);
    for (uint64_t cy = 0; cy < 2; cy++)
        for (uint64_t cx = 0; cx < 2; cx++)
            txn_put_chunk(&f, t, cy, cx, v);
    cr_assert_eq(f.c.n_sets, 1, "the complete shard is stored when its last write returns");
    cr_assert(pthread_equal(f.c.setter, pthread_self()), "by the writing thread");
    cr_assert_eq(sl_txn_wait_behind(t), false, "no writer thread");
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

/* Renames of shard objects into place by the test's thread and by others
 * (through an I/O table that is the default one but for rename). */
static struct rename_threads {
    const struct sl_io_table *inner;
    pthread_mutex_t mu;
    int n_self, n_other;
    pthread_t self;
} renames;

static int
rename_recorded(void *ctx, const char *from, const char *to)
{
    struct rename_threads *r = &renames;
    const char *key = strstr(to, "/a/c/");
    if (key != NULL) {
        pthread_mutex_lock(&r->mu);
        if (pthread_equal(pthread_self(), r->self))
            r->n_self++;
        else
            r->n_other++;
        pthread_mutex_unlock(&r->mu);
    }
    return r->inner->rename(ctx, from, to);
}

/* AUTO on a filesystem store: complete shards are renamed into place by
 * the writer thread, the rest by commit on the calling thread; the array
 * reads back whole. */
Test(io_txn, write_behind_auto_uses_a_writer_thread_on_a_filesystem_store)
{
    renames = (struct rename_threads){.inner = sl_io_table_default(), .self = pthread_self()};
    pthread_mutex_init(&renames.mu, NULL);
    struct sl_io_table table = *renames.inner;
    table.rename = rename_recorded;
    const char *root = sl_test_tmpdir("txn-auto");
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.io = &table;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(root, &so, &err);
    cr_assert_not_null(s, "%s", err.text);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = N;
        sp.chunk_shape[d] = 4;
        sp.shard_shape[d] = 8;
    }
    sl_array *a = sl_array_create(s, "a", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    uint16_t v[N * N];
    values_make(v, 46);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.write_behind = SL_TXN_WRITE_BEHIND_AUTO;
    sl_txn *t = sl_txn_open(a, &o, &err);
    cr_assert_not_null(t, "%s", err.text);
    /* Shard (0, 0) whole; one chunk of shard (1, 1). */
    for (uint64_t cy = 0; cy < 2; cy++)
        for (uint64_t cx = 0; cx < 2; cx++) {
            uint16_t chunk[16];
            chunk_of(v, cy, cx, chunk);
            cr_assert_eq(sl_txn_write_chunk(t, (uint64_t[]){cy, cx}, chunk, sizeof(chunk),
                                            sl_test_write_ctx(NULL), &err),
                         SL_OK, "%s", err.text);
        }
    uint16_t last[16];
    chunk_of(v, 2, 2, last);
    cr_assert_eq(sl_txn_write_chunk(t, (uint64_t[]){2, 2}, last, sizeof(last),
                                    sl_test_write_ctx(NULL), &err),
                 SL_OK);
    cr_assert_eq(sl_txn_commit(t, NULL, &err), SL_OK, "%s", err.text);
    sl_txn_close(t);
    cr_assert_eq(renames.n_other, 1, "the complete shard by the writer thread");
    cr_assert_eq(renames.n_self, 1, "the partial one by commit");
    const uint64_t written[][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 2}};
    uint16_t back[16];
    for (size_t i = 0; i < sizeof(written) / sizeof(written[0]); i++) {
        uint64_t cy = written[i][0], cx = written[i][1];
        uint16_t want[16];
        chunk_of(v, cy, cx, want);
        cr_assert_eq(
            sl_array_read_chunk(a, (uint64_t[]){cy, cx}, back, sizeof(back), NULL, NULL, &err),
            SL_OK, "%s", err.text);
        cr_assert_arr_eq(back, want, sizeof(want), "chunk (%llu, %llu)", (unsigned long long)cy,
                         (unsigned long long)cx);
    }
    sl_array_unref(a);
    sl_store_unref(s);
    sl_test_rmtree(root);
    pthread_mutex_destroy(&renames.mu);
}

/* Shards of 1 MiB and more on a filesystem store: written directly, or
 * through the page cache with `reread`; one or two opens per shard,
 * counted through the I/O table. */
static void
check_shard_opens(bool reread, uint64_t want_opens)
{
    struct sl_fault_io fio;
    sl_fault_io_init(&fio);
    const char *root = sl_test_tmpdir("txn-reread");
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.io = &fio.table;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(root, &so, &err);
    cr_assert_not_null(s, "%s", err.text);
    /* Two shards of 1024 x 512 uint16 (1 MiB), no compression. */
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    sp.codec.compressor = SL_COMPRESSOR_NONE;
    sp.shape[0] = 1024, sp.shape[1] = 1024;
    sp.chunk_shape[0] = 256, sp.chunk_shape[1] = 256;
    sp.shard_shape[0] = 1024, sp.shard_shape[1] = 512;
    sl_array *a = sl_array_create(s, "a", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.reread = reread;
    sl_txn *t = sl_txn_open(a, &o, &err);
    cr_assert_not_null(t, "%s", err.text);
    uint16_t *chunk = malloc((size_t)256 * 256 * 2);
    sl_fault_io_reset(&fio);
    for (uint64_t cy = 0; cy < 4; cy++)
        for (uint64_t cx = 0; cx < 4; cx++) {
            for (size_t i = 0; i < (size_t)256 * 256; i++)
                chunk[i] = (uint16_t)(i * 7 + cy * 1000 + cx);
            cr_assert_eq(sl_txn_write_chunk(t, (uint64_t[]){cy, cx}, chunk, (size_t)256 * 256 * 2,
                                            sl_test_write_ctx(NULL), &err),
                         SL_OK, "%s", err.text);
        }
    cr_assert_eq(sl_txn_commit(t, NULL, &err), SL_OK, "%s", err.text);
    sl_txn_close(t);
    if (sl_test_takes_direct(root)) {
        cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_OPEN), want_opens, "reread %d: %llu opens",
                     reread, (unsigned long long)sl_fault_io_calls(&fio, SL_FAULT_OPEN));
        cr_assert_eq(atomic_load(&fio.n_direct_opens), reread ? 0 : 2);
    } else {
        cr_log_info("%s refuses O_DIRECT: only the data is checked", root);
    }
    cr_assert_eq(
        sl_fault_io_renames_to(&fio, "/a/c/0/0") + sl_fault_io_renames_to(&fio, "/a/c/0/1"), 2);
    for (uint64_t cy = 0; cy < 4; cy++)
        for (uint64_t cx = 0; cx < 4; cx++) {
            cr_assert_eq(sl_array_read_chunk(a, (uint64_t[]){cy, cx}, chunk, (size_t)256 * 256 * 2,
                                             NULL, NULL, &err),
                         SL_OK, "%s", err.text);
            for (size_t i = 0; i < (size_t)256 * 256; i++)
                cr_assert_eq(chunk[i], (uint16_t)(i * 7 + cy * 1000 + cx));
        }
    free(chunk);
    sl_array_unref(a);
    sl_store_unref(s);
    sl_fault_io_fini(&fio);
    sl_test_rmtree(root);
}

Test(io_txn, large_shards_are_written_directly_unless_reread)
{
    check_shard_opens(false, 4);
    check_shard_opens(true, 2);
}

struct commit_call {
    sl_txn *t;
    sl_status st;
    _Atomic bool returned;
};

static void *
commit_thread(void *arg)
{
    struct commit_call *cc = arg;
    cc->st = sl_txn_commit(cc->t, NULL, NULL);
    atomic_store(&cc->returned, true);
    return NULL;
}

Test(io_txn, commit_waits_for_the_shard_in_the_writer_threads_hands)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 42);
    uint16_t v[N * N];
    values_make(v, 43);
    sl_txn *t =
        sl_txn_open(f.a, &(struct sl_txn_opts){.flush_full = true, .write_behind = 2}, NULL);
    gate_set(&f.c, true);
    /* Shard (0, 0) written without a codec context: the writer thread
     * encodes and assembles it, and its set is held at the gate. */
    for (uint64_t cy = 0; cy < 2; cy++)
        for (uint64_t cx = 0; cx < 2; cx++)
            txn_put_chunk(&f, t, cy, cx, v);
    gate_wait_for_set(&f.c);
    /* Shard (1, 0) with one: the write that completes it assembles it,
     * its chunks give their buffers up for the shard's bytes, and it
     * waits in the queue. */
    put_ctx = sl_codec_ctx_create(NULL, NULL);
    for (uint64_t cy = 2; cy < 4; cy++)
        for (uint64_t cx = 0; cx < 2; cx++)
            txn_put_chunk(&f, t, cy, cx, v);
    sl_codec_ctx_destroy(put_ctx);
    put_ctx = NULL;
    struct sl_txn_stats st;
    sl_txn_get_stats(t, &st);
    cr_assert_eq(st.staged_units, 2, "both shards stay staged until written");
    uint64_t held = st.staged_bytes; /* checked once they are stored */
    /* Readers see the queued shard, decoded from its assembled bytes (the
     * held one they would wait for: its write holds its lock). */
    struct sl_region sq = {.rank = 2, .start = {8, 0}, .stop = {16, 8}};
    uint16_t box[64], chunk[16];
    cr_assert_eq(sl_txn_read_region(t, &sq, box, sizeof(box), NULL, NULL), SL_OK);
    for (int k = 0; k < 64; k++)
        cr_assert_eq(box[k], v[(8 + (uint64_t)(k / 8)) * N + (uint64_t)(k % 8)],
                     "element %d of the queued shard", k);
    bool missing = true;
    cr_assert_eq(
        sl_txn_read_chunk(t, (const uint64_t[]){3, 1}, chunk, sizeof(chunk), NULL, &missing, NULL),
        SL_OK);
    cr_assert_not(missing);
    for (int e = 0; e < 16; e++)
        cr_assert_eq(chunk[e], v[(12 + (uint64_t)(e / 4)) * N + 4 + (uint64_t)(e % 4)]);
    struct commit_call cc = {.t = t};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, commit_thread, &cc), 0);
    usleep(20000);
    cr_assert_eq(atomic_load(&cc.returned), false, "commit returned before the shard was written");
    gate_set(&f.c, false);
    pthread_join(th, NULL);
    cr_assert_eq(cc.st, SL_OK);
    cr_assert_eq(f.c.sets[0][0], 1);
    cr_assert_eq(f.c.sets[1][0], 1);
    cr_assert_eq(f.c.n_sets, 2);
    /* What they held: an assembled shard its bytes and nothing more;
     * shard (0, 0), staged decoded and not assembled, its 4 chunks
     * (assembled too where every write has a context: the encode-on-write
     * build). */
    uint64_t sizes[2];
    const char *keys[2] = {"a/c/0/0", "a/c/1/0"};
    for (int i = 0; i < 2; i++)
        cr_assert_eq(sl_store_size(f.s, keys[i], &sizes[i], NULL), SL_OK);
    uint64_t want = (SL_TEST_ENCODE_ON_WRITE_ON ? sizes[0] : 4 * 32) + sizes[1];
    cr_assert_eq(held, want, "staged while held: %llu bytes, not %llu", (unsigned long long)held,
                 (unsigned long long)want);
    /* While shard (1, 0) was assembled, its chunks and the shard existed
     * at once: the peak says so. */
    sl_txn_get_stats(t, &st);
    cr_assert_gt(st.peak_staged_bytes, held, "peak %llu", (unsigned long long)st.peak_staged_bytes);
    cr_assert_eq(st.staged_bytes, 0);
    cr_assert_eq(st.staged_units, 0);
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

Test(io_txn, a_queued_edge_shard_reads_back_from_its_assembled_bytes_index_first)
{
    struct fixture f;
    fixture_index_at_start = true;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 44);
    uint16_t v[N * N];
    values_make(v, 45);
    /* Chunk (4, 1) all fill: not in the shard. */
    for (uint64_t y = 16; y < 20; y++)
        for (uint64_t x = 4; x < 8; x++)
            v[y * N + x] = 0;
    sl_txn *t =
        sl_txn_open(f.a, &(struct sl_txn_opts){.flush_full = true, .write_behind = 2}, NULL);
    gate_set(&f.c, true);
    for (uint64_t cy = 0; cy < 2; cy++) /* shard (0, 0), held at the gate */
        for (uint64_t cx = 0; cx < 2; cx++)
            txn_put_chunk(&f, t, cy, cx, v);
    gate_wait_for_set(&f.c);
    /* The edge shard (2, 0): chunks (4, 0) and (4, 1) inside the array,
     * assembled by the write completing it, queued. */
    put_ctx = sl_codec_ctx_create(NULL, NULL);
    txn_put_chunk(&f, t, 4, 0, v);
    txn_put_chunk(&f, t, 4, 1, v);
    sl_codec_ctx_destroy(put_ctx);
    put_ctx = NULL;
    struct sl_region sq = {.rank = 2, .start = {14, 0}, .stop = {20, 10}};
    uint16_t box[60];
    cr_assert_eq(sl_txn_read_region(t, &sq, box, sizeof(box), NULL, NULL), SL_OK);
    for (int k = 0; k < 60; k++) {
        uint64_t y = 14 + (uint64_t)(k / 10), x = (uint64_t)(k % 10);
        cr_assert_eq(box[k], f.model[y * N + x], "(%llu, %llu)", (unsigned long long)y,
                     (unsigned long long)x);
    }
    uint16_t chunk[16];
    bool missing = true;
    cr_assert_eq(
        sl_txn_read_chunk(t, (const uint64_t[]){4, 1}, chunk, sizeof(chunk), NULL, &missing, NULL),
        SL_OK);
    cr_assert_not(missing, "staged, as fill");
    for (int e = 0; e < 16; e++)
        cr_assert_eq(chunk[e], 0);
    gate_set(&f.c, false);
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    sl_txn_close(t);
    check_stored(&f);
    fixture_close(&f);
}

Test(io_txn, parallel_commit_writes_the_same_bytes)
{
    struct fixture f[2];
    uint16_t v[N * N];
    values_make(v, 26);
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 3);
    for (int i = 0; i < 2; i++) {
        fixture_open(&f[i], true, 3);
        fixture_fill(&f[i], 27);
        struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
        o.flush_full = false;
        o.par = i == 1 ? &pool.par : NULL;
        sl_txn *t = sl_txn_open(f[i].a, &o, NULL);
        txn_put_region(&f[i], t, 0, 20, 3, 17, v);
        cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
        sl_txn_close(t);
    }
    for (int y = 0; y < SHARDS; y++)
        for (int x = 0; x < SHARDS; x++) {
            char key[32];
            snprintf(key, sizeof(key), "a/c/%d/%d", y, x);
            struct sl_buf b0 = SL_BUF_INIT, b1 = SL_BUF_INIT;
            cr_assert_eq(sl_store_get(f[0].s, key, NULL, &b0, NULL, NULL), SL_OK);
            cr_assert_eq(sl_store_get(f[1].s, key, NULL, &b1, NULL, NULL), SL_OK);
            cr_assert_eq(b0.size, b1.size);
            cr_assert_eq(memcmp(b0.data, b1.data, b0.size), 0, "shard %s", key);
            sl_buf_fini(&b0);
            sl_buf_fini(&b1);
        }
    check_stored(&f[1]);
    fixture_close(&f[0]);
    fixture_close(&f[1]);
}

/* ---- failures ------------------------------------------------------------------------ */

static void
check_failed_shard_write(unsigned behind)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    fixture_fill(&f, 28);
    uint16_t old[N * N], v[N * N];
    memcpy(old, f.model, sizeof(old));
    values_make(v, 29);
    f.c.fail_set[0] = 1;
    f.c.fail_set[1] = 1;
    struct reports rep = {0};
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.write_behind = behind;
    o.on_unit = record_unit;
    o.on_unit_arg = &rep;
    sl_txn *t = sl_txn_open(f.a, &o, NULL);
    txn_put_region(&f, t, 0, 20, 0, 20, v);
    txn_put_region(&f, t, 10, 11, 10, 11, old); /* shard (1, 1) again, now partial */
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_commit(t, NULL, &err), SL_ENOSPC);
    cr_assert_str_eq(err.source, "a/c/1/1");
    cr_assert_eq(err.chunk.rank, 2);
    cr_assert_eq(err.chunk.idx[0], 1);
    struct sl_txn_stats st;
    sl_txn_get_stats(t, &st);
    cr_assert_eq(st.n_units_failed, 2, "the early write and the commit's");
    cr_assert_eq(st.n_units_written, 8);
    sl_txn_close(t);
    /* Per chunk: ok only where it reads back; failed ones unchanged. */
    uint16_t back[N * N];
    struct sl_region whole = sl_region_whole(2, (const uint64_t[]){N, N});
    cr_assert_eq(sl_array_read_region(f.a, &whole, back, sizeof(back), NULL, NULL, NULL), SL_OK);
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++) {
            int sy = y / 8, sx = x / 8;
            cr_assert_eq(rep.calls[sy][sx], sy == 1 && sx == 1 ? 2 : 1);
            bool ok = rep.status[sy][sx] == SL_OK;
            cr_assert_eq(ok, !(sy == 1 && sx == 1));
            cr_assert_eq(back[y * N + x], ok ? f.model[y * N + x] : old[y * N + x],
                         "(%d, %d), shard %s", y, x, ok ? "written" : "failed");
        }
    cr_assert_not_null(strstr(rep.text[1][1], "No space left"), "%s", rep.text[1][1]);
    fixture_close(&f);
}

Test(io_txn, a_failed_shard_write_is_reported_and_leaves_the_shard_unchanged)
{
    check_failed_shard_write(0);
}

Test(io_txn, a_shard_the_writer_thread_fails_is_reported_and_left_unchanged)
{
    check_failed_shard_write(1);
}

Test(io_txn, bad_arguments_and_states_are_refused)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_txn_open(NULL, NULL, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    sl_txn *t = sl_txn_open(f.a, NULL, NULL);
    uint16_t chunk[16] = {1};
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_write_chunk(t, (const uint64_t[]){5, 0}, chunk, 32, NULL, &err),
                 SL_EBOUNDS);
    cr_assert_not_null(strstr(err.text, "outside the grid of 5 chunks"), "%s", err.text);
    cr_assert_eq(sl_txn_write_chunk(t, (const uint64_t[]){0, 0}, chunk, 31, NULL, NULL), SL_EINVAL);
    cr_assert_eq(sl_txn_write_chunk(t, (const uint64_t[]){0, 0}, NULL, 32, NULL, NULL), SL_EINVAL);
    cr_assert_eq(sl_txn_write_chunk(NULL, (const uint64_t[]){0, 0}, chunk, 32, NULL, NULL),
                 SL_EINVAL);
    struct sl_region out = {.rank = 2, .start = {0, 0}, .stop = {21, 1}};
    cr_assert_eq(sl_txn_write_region(t, &out, chunk, 32, NULL, NULL), SL_EBOUNDS);
    struct sl_region big = {.rank = 2, .start = {0, 0}, .stop = {5, 5}};
    cr_assert_eq(sl_txn_write_region(t, &big, chunk, 32, NULL, NULL), SL_EINVAL);
    cr_assert_eq(sl_txn_read_region(t, &big, chunk, 32, NULL, NULL), SL_EINVAL);
    cr_assert_eq(sl_txn_read_chunk(t, (const uint64_t[]){0, 9}, chunk, 32, NULL, NULL, NULL),
                 SL_EBOUNDS);
    struct sl_region empty = {.rank = 2, .start = {3, 3}, .stop = {3, 9}};
    cr_assert_eq(sl_txn_write_region(t, &empty, NULL, 0, NULL, NULL), SL_OK);
    cr_assert_eq(sl_txn_staged_bytes(t), 0, "nothing was staged by the failures");
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_commit(t, NULL, &err), SL_ESTATE);
    cr_assert_not_null(strstr(err.text, "committed"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_abort(t, &err), SL_ESTATE);
    cr_assert_not_null(strstr(err.text, "committed"), "%s", err.text);
    cr_assert_eq(sl_txn_write_chunk(t, (const uint64_t[]){0, 0}, chunk, 32, NULL, NULL), SL_ESTATE);
    cr_assert_eq(f.c.n_sets, 0);
    sl_txn_close(t);
    sl_txn_close(NULL);
    cr_assert_eq(sl_txn_abort(NULL, NULL), SL_EINVAL);
    fixture_close(&f);
}

/* ---- iterators ------------------------------------------------------------------------ */

Test(io_txn, iterators_walk_shards_and_their_chunks)
{
    struct fixture f;
    fixture_open(&f, true, 3);
    struct sl_array_iter it, in;
    int n = 0;
    cr_assert_eq(sl_array_iter_shards(f.a, NULL, &it, NULL), SL_OK);
    while (sl_array_iter_next(&it))
        n++;
    cr_assert_eq(n, 9);
    struct sl_region sel = {.rank = 2, .start = {5, 0}, .stop = {13, 3}};
    cr_assert_eq(sl_array_iter_shards(f.a, &sel, &it, NULL), SL_OK);
    cr_assert(sl_array_iter_next(&it));
    cr_assert_eq(it.iter.coords[0], 0);
    cr_assert_eq(it.iter.part.start[0], 5);
    cr_assert_eq(it.iter.part.stop[0], 8);
    cr_assert(sl_array_iter_next(&it));
    cr_assert_eq(it.iter.coords[0], 1);
    cr_assert_eq(it.iter.chunk.stop[0], 16);
    cr_assert_not(sl_array_iter_next(&it));
    cr_assert_eq(sl_array_iter_shard_chunks(f.a, (const uint64_t[]){2, 1}, &in, NULL), SL_OK);
    cr_assert(sl_array_iter_next(&in));
    cr_assert_eq(in.iter.coords[0], 4);
    cr_assert_eq(in.iter.coords[1], 2);
    cr_assert_eq(in.iter.chunk.start[0], 16);
    cr_assert_eq(in.iter.chunk.stop[0], 20);
    cr_assert(sl_array_iter_next(&in));
    cr_assert_eq(in.iter.coords[1], 3);
    cr_assert_not(sl_array_iter_next(&in), "the shard has two chunks inside the array");
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_iter_shard_chunks(f.a, (const uint64_t[]){3, 0}, &in, &err), SL_EBOUNDS);
    cr_assert_not_null(strstr(err.text, "outside the grid of 3 shards"), "%s", err.text);
    struct sl_region outside = {.rank = 2, .start = {0, 0}, .stop = {1, 21}};
    cr_assert_eq(sl_array_iter_shards(f.a, &outside, &it, NULL), SL_EBOUNDS);
    fixture_close(&f);
    fixture_open(&f, false, 3);
    cr_assert_eq(sl_array_iter_shards(f.a, NULL, &it, NULL), SL_OK);
    for (n = 0; sl_array_iter_next(&it); n++)
        ;
    cr_assert_eq(n, 25, "unsharded: every chunk is its own shard");
    cr_assert_eq(sl_array_iter_shard_chunks(f.a, (const uint64_t[]){1, 2}, &in, NULL), SL_OK);
    cr_assert(sl_array_iter_next(&in));
    cr_assert_eq(in.iter.coords[1], 2);
    cr_assert_not(sl_array_iter_next(&in));
    fixture_close(&f);
}

/* ---- leftovers of killed writers ------------------------------------------------------- */

/* The pid of a process that ran and was reaped. */
static pid_t
dead_pid(void)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(0);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    return pid;
}

static void
touch(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    cr_assert_not_null(fp, "%s", path);
    fputs("half a shard", fp);
    fclose(fp);
}

static bool
exists(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

static sl_status
list_no_temporaries(void *arg, const char *key, uint64_t bytes)
{
    (void)bytes;
    (*(int *)arg)++;
    cr_assert_null(strstr(key, ".sluice-tmp."), "listed %s", key);
    return SL_OK;
}

Test(io_txn, leftovers_of_killed_writers_are_never_read_and_are_removed_on_open)
{
    const char *root = sl_test_tmpdir("txn-leftovers");
    char top[512], dir[600], name_dead[64], name_self[64], name_live[64];
    snprintf(top, sizeof(top), "%s", root);
    sl_store *s = sl_store_open_fs(top, NULL, NULL);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 1;
    sp.shape[0] = 8;
    sp.chunk_shape[0] = 2;
    sp.shard_shape[0] = 4;
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct sl_region whole = sl_region_whole(1, sp.shape);
    cr_assert_eq(sl_array_write_region(a, &whole, data, 8, NULL, NULL, NULL), SL_OK);
    snprintf(dir, sizeof(dir), "%s/a/c", top);
    pid_t dead = dead_pid();
    snprintf(name_dead, sizeof(name_dead), ".sluice-tmp.%ld.3", (long)dead);
    snprintf(name_self, sizeof(name_self), ".sluice-tmp.%ld.9", (long)getpid());
    snprintf(name_live, sizeof(name_live), ".sluice-tmp.%ld.0", (long)getppid());
    touch(dir, name_dead);
    touch(dir, name_self);
    touch(dir, name_live);
    touch(dir, ".sluice-tmp.garbage");
    int n = 0;
    cr_assert_eq(sl_store_list(s, "a/", list_no_temporaries, &n, NULL), SL_OK);
    cr_assert_eq(n, 3, "zarr.json and two shards");
    uint8_t back[8];
    cr_assert_eq(sl_array_read_region(a, &whole, back, 8, NULL, NULL, NULL), SL_OK);
    cr_assert_eq(memcmp(back, data, 8), 0);
    uint64_t removed = 0;
    cr_assert_eq(sl_txn_clean_leftovers(a, &removed, NULL), SL_OK);
    cr_assert_eq(removed, 1);
    cr_assert_not(exists(dir, name_dead));
    cr_assert(exists(dir, name_self), "this process's files may be in flight");
    cr_assert(exists(dir, name_live), "a live process's too");
    cr_assert(exists(dir, ".sluice-tmp.garbage"), "names sluice does not make are kept");
    touch(dir, name_dead);
    sl_txn *t = sl_txn_open(a, NULL, NULL);
    cr_assert_not(exists(dir, name_dead), "opening a transaction cleans");
    sl_txn_close(t);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.clean_leftovers = false;
    touch(dir, name_dead);
    t = sl_txn_open(a, &o, NULL);
    cr_assert(exists(dir, name_dead));
    sl_txn_close(t);
    sl_array_unref(a);
    sl_store_unref(s);
    sl_test_rmtree(top);
}

/* ---- every system call of a commit failing ------------------------------------------ */

static int
count_temporaries(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "find '%s' -name '.sluice-tmp.*' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    cr_assert_not_null(p);
    cr_assert_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* One commit of two complete shards and two partial ones on a store
 * whose `at`-th call of `op` fails; false once the commit makes fewer
 * calls than that.  With `behind`, the complete shards are written early
 * by the writer thread (the fault is armed before staging). */
static bool
commit_with_fault(const char *root, sl_fault_op op, uint64_t at, unsigned behind)
{
    struct sl_fault_io fio;
    sl_fault_io_init(&fio);
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.io = &fio.table;
    so.durable = true;
    sl_store *s = sl_store_open_fs(root, &so, NULL);
    sl_array *a = sl_array_open(s, "a", NULL, NULL);
    cr_assert_not_null(a);
    uint16_t old[N * N], v[N * N], back[N * N];
    struct sl_region whole = sl_region_whole(2, (const uint64_t[]){N, N});
    cr_assert_eq(sl_array_read_region(a, &whole, old, sizeof(old), NULL, NULL, NULL), SL_OK);
    values_make(v, (unsigned)(op * 1000 + at));
    struct reports rep = {0};
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.flush_full = behind > 0;
    o.write_behind = behind;
    o.on_unit = record_unit;
    o.on_unit_arg = &rep;
    sl_txn *t = sl_txn_open(a, &o, NULL);
    cr_assert_not_null(t);
    struct fixture f; /* only its model is used */
    memcpy(f.model, old, sizeof(old));
    if (behind > 0) {
        sl_fault_io_reset(&fio);
        sl_fault_io_fail(&fio, op, at, op == SL_FAULT_WRITE ? ENOSPC : EIO);
    }
    /* With a context, the complete shards are assembled as they are
     * handed over, so the writer thread's faults hit the store alone. */
    put_ctx = behind > 0 && at % 2 == 0 ? sl_codec_ctx_create(NULL, NULL) : NULL;
    txn_put_region(&f, t, 0, 8, 0, 16, v);  /* shards (0, 0) and (0, 1) whole */
    txn_put_region(&f, t, 9, 10, 3, 12, v); /* parts of (1, 0) and (1, 1) */
    sl_codec_ctx_destroy(put_ctx);
    put_ctx = NULL;
    if (behind == 0) {
        sl_fault_io_reset(&fio);
        sl_fault_io_fail(&fio, op, at, op == SL_FAULT_WRITE ? ENOSPC : EIO);
    }
    sl_status st = sl_txn_commit(t, NULL, NULL);
    bool injected = sl_fault_io_calls(&fio, op) >= at;
    sl_txn_close(t);
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_array_read_region(a, &whole, back, sizeof(back), NULL, NULL, NULL), SL_OK,
                 "%s #%lu: a shard does not decode", sl_fault_op_name(op), (unsigned long)at);
    /* A durable store fsyncs the directory after the rename: when that
     * open or fsync fails, the shard is reported failed yet holds the new
     * data (visible, not known durable).  Any other failure leaves it old. */
    bool after_rename_possible = op == SL_FAULT_OPEN || op == SL_FAULT_FSYNC;
    bool any_failed = false;
    for (int sy = 0; sy < SHARDS; sy++)
        for (int sx = 0; sx < SHARDS; sx++) {
            bool staged = sy < 2 && sx < 2;
            bool ok = staged && rep.status[sy][sx] == SL_OK;
            any_failed = any_failed || (staged && !ok);
            bool is_old = true, is_new = true;
            for (int y = sy * 8; y < sy * 8 + 8 && y < N; y++)
                for (int x = sx * 8; x < sx * 8 + 8 && x < N; x++) {
                    is_old = is_old && back[y * N + x] == old[y * N + x];
                    is_new = is_new && back[y * N + x] == f.model[y * N + x];
                }
            cr_assert(ok ? is_new : is_old || (after_rename_possible && is_new),
                      "%s #%lu: shard (%d, %d), reported %s, holds %s", sl_fault_op_name(op),
                      (unsigned long)at, sy, sx, ok ? "written" : "failed",
                      is_old   ? "the old data"
                      : is_new ? "the new data"
                               : "a mix");
        }
    cr_assert_eq(st != SL_OK, any_failed, "%s #%lu: commit says %s", sl_fault_op_name(op),
                 (unsigned long)at, sl_status_name(st));
    cr_assert_eq(count_temporaries(root), 0, "%s #%lu left a temporary file", sl_fault_op_name(op),
                 (unsigned long)at);
    sl_array_unref(a);
    sl_store_unref(s);
    sl_fault_io_fini(&fio);
    return injected;
}

/* Every call of every kind failing in turn, on an array of 3 x 3 shards. */
static void
check_every_failing_call(unsigned behind)
{
    const char *tmp = sl_test_tmpdir("txn-faults");
    char root[512];
    snprintf(root, sizeof(root), "%s", tmp);
    sl_store *s = sl_store_open_fs(root, NULL, NULL);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = N;
        sp.chunk_shape[d] = 4;
        sp.shard_shape[d] = 8;
    }
    sp.checksum = true;
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    uint16_t v[N * N];
    values_make(v, 77);
    struct sl_region whole = sl_region_whole(2, sp.shape);
    cr_assert_eq(sl_array_write_region(a, &whole, v, sizeof(v), NULL, NULL, NULL), SL_OK);
    sl_array_unref(a);
    sl_store_unref(s);
    const sl_fault_op ops[] = {SL_FAULT_OPEN,  SL_FAULT_CLOSE,  SL_FAULT_PREAD,
                               SL_FAULT_WRITE, SL_FAULT_FSYNC,  SL_FAULT_FSTAT,
                               SL_FAULT_LSTAT, SL_FAULT_RENAME, SL_FAULT_REALPATH};
    int n_runs = 0;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        for (uint64_t at = 1; commit_with_fault(root, ops[i], at, behind); at++)
            n_runs++;
    cr_assert_gt(n_runs, 40, "the sweep injected %d failures", n_runs);
    sl_test_rmtree(root);
}

Test(io_txn, every_failing_system_call_of_a_commit_leaves_shards_old_or_new)
{
    check_every_failing_call(0);
}

Test(io_txn, every_failing_system_call_of_the_writer_thread_leaves_shards_old_or_new)
{
    check_every_failing_call(1);
}

/* ---- encoding on write ------------------------------------------------------------ */

/* [50, 50] uint16 (zstd), inner chunks [16, 16] (edge chunks of 2), shards
 * [32, 32]; `model` starts as fill (0). */
#define EW 50
struct ew_fixture {
    sl_store *s;
    sl_array *a;
    sl_codec_ctx *ctx;
    uint16_t model[EW * EW];
};

/* The fixture's array, in shards of `shard` (0: unsharded). */
static void
ew_open_sharded(struct ew_fixture *f, uint64_t shard)
{
    memset(f, 0, sizeof(*f));
    f->s = sl_store_create_memory(NULL, NULL);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = EW;
        sp.chunk_shape[d] = 16;
        sp.shard_shape[d] = shard;
    }
    struct sl_error err = SL_ERROR_INIT;
    f->a = sl_array_create(f->s, "a", &sp, NULL, &err);
    cr_assert_not_null(f->a, "%s", err.text);
    f->ctx = sl_codec_ctx_create(NULL, NULL);
    cr_assert_not_null(f->ctx);
}

static void
ew_open(struct ew_fixture *f)
{
    ew_open_sharded(f, 32);
}

static void
ew_close(struct ew_fixture *f)
{
    sl_codec_ctx_destroy(f->ctx);
    sl_array_unref(f->a);
    sl_store_unref(f->s);
}

static sl_txn *
ew_txn(struct ew_fixture *f, bool eow)
{
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.encode_on_write = eow;
    struct sl_error err = SL_ERROR_INIT;
    sl_txn *t = sl_txn_open(f->a, &o, &err);
    cr_assert_not_null(t, "%s", err.text);
    return t;
}

/* Write chunk (cy, cx) through `t` with `ctx`: value(y, x) inside the
 * array, 0xdead in the padding; into the model too. */
static void
ew_put(struct ew_fixture *f, sl_txn *t, uint64_t cy, uint64_t cx, sl_codec_ctx *ctx,
       uint16_t (*value)(uint64_t, uint64_t))
{
    uint16_t chunk[16 * 16];
    for (uint64_t y = 0; y < 16; y++)
        for (uint64_t x = 0; x < 16; x++) {
            uint64_t gy = cy * 16 + y, gx = cx * 16 + x;
            bool in = gy < EW && gx < EW;
            chunk[y * 16 + x] = in ? value(gy, gx) : 0xdead;
            if (in)
                f->model[gy * EW + gx] = chunk[y * 16 + x];
        }
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_write_chunk(t, (const uint64_t[]){cy, cx}, chunk, sizeof(chunk), ctx, &err),
                 SL_OK, "%s", err.text);
}

static uint16_t
ew_seven(uint64_t y, uint64_t x)
{
    (void)y, (void)x;
    return 7;
}

static uint16_t
ew_ramp(uint64_t y, uint64_t x)
{
    return (uint16_t)(y * 131 + x * 7 + 1);
}

static uint16_t
ew_fill(uint64_t y, uint64_t x)
{
    (void)y, (void)x;
    return 0;
}

/* Region `r` read through `t` (with `ctx`) equals the model. */
static void
ew_check_read(struct ew_fixture *f, sl_txn *t, struct sl_region r, sl_codec_ctx *ctx)
{
    uint16_t back[EW * EW];
    uint64_t h = r.stop[0] - r.start[0], w = r.stop[1] - r.start[1];
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_read_region(t, &r, back, h * w * 2, ctx, &err), SL_OK, "%s", err.text);
    for (uint64_t y = 0; y < h; y++)
        for (uint64_t x = 0; x < w; x++)
            cr_assert_eq(back[y * w + x], f->model[(r.start[0] + y) * EW + r.start[1] + x],
                         "(%llu, %llu)", (unsigned long long)(r.start[0] + y),
                         (unsigned long long)(r.start[1] + x));
}

/* The array as stored equals the model. */
static void
ew_check_stored(struct ew_fixture *f)
{
    uint16_t back[EW * EW];
    struct sl_region whole = sl_region_whole(2, (const uint64_t[]){EW, EW});
    cr_assert_eq(sl_array_read_region(f->a, &whole, back, sizeof(back), NULL, NULL, NULL), SL_OK);
    for (int i = 0; i < EW * EW; i++)
        cr_assert_eq(back[i], f->model[i], "element (%d, %d): %u, expected %u", i / EW, i % EW,
                     back[i], f->model[i]);
}

Test(io_txn, encode_on_write_stages_the_encoding_and_reads_decode_it)
{
    struct ew_fixture f;
    ew_open(&f);
    sl_txn *t = ew_txn(&f, true);
    ew_put(&f, t, 0, 0, f.ctx, ew_seven);
    /* 512 bytes of one value: staged as a few dozen bytes of zstd. */
    uint64_t staged = sl_txn_staged_bytes(t);
    cr_assert(staged > 0 && staged < 128, "staged %llu bytes for a 512-byte chunk",
              (unsigned long long)staged);
    uint16_t chunk[256];
    bool missing = true;
    struct sl_error err = SL_ERROR_INIT;
    for (int with_ctx = 0; with_ctx < 2; with_ctx++) {
        memset(chunk, 0xff, sizeof(chunk));
        cr_assert_eq(sl_txn_read_chunk(t, (const uint64_t[]){0, 0}, chunk, sizeof(chunk),
                                       with_ctx ? f.ctx : NULL, &missing, &err),
                     SL_OK, "%s", err.text);
        cr_assert_not(missing);
        for (int i = 0; i < 256; i++)
            cr_assert_eq(chunk[i], 7, "element %d read through the transaction", i);
    }
    /* A region over the staged chunk and three not staged. */
    ew_check_read(&f, t, (struct sl_region){.rank = 2, .start = {8, 8}, .stop = {24, 24}}, NULL);
    /* A part written over it: decoded, merged, and counted decoded. */
    struct sl_region part = {.rank = 2, .start = {2, 3}, .stop = {4, 6}};
    const uint16_t nines[6] = {9, 9, 9, 9, 9, 9};
    cr_assert_eq(sl_txn_write_region(t, &part, nines, sizeof(nines), f.ctx, &err), SL_OK, "%s",
                 err.text);
    for (uint64_t y = 2; y < 4; y++)
        for (uint64_t x = 3; x < 6; x++)
            f.model[y * EW + x] = 9;
    cr_assert_geq(sl_txn_staged_bytes(t), 512, "decoded to be written over");
    ew_check_read(&f, t, (struct sl_region){.rank = 2, .start = {0, 0}, .stop = {16, 16}}, f.ctx);
    /* The same over another chunk staged encoded, from a write without a
     * codec context: the transaction makes one to decode it. */
    ew_put(&f, t, 1, 1, f.ctx, ew_ramp);
    struct sl_region part2 = {.rank = 2, .start = {20, 17}, .stop = {21, 20}};
    cr_assert_eq(sl_txn_write_region(t, &part2, nines, 6, NULL, &err), SL_OK, "%s", err.text);
    for (uint64_t x = 17; x < 20; x++)
        f.model[20 * EW + x] = 9;
    ew_check_read(&f, t, (struct sl_region){.rank = 2, .start = {14, 14}, .stop = {34, 34}}, NULL);
    cr_assert_eq(sl_txn_commit(t, f.ctx, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_txn_staged_bytes(t), 0);
    sl_txn_close(t);
    ew_check_stored(&f);
    ew_close(&f);
}

Test(io_txn, encode_on_write_stores_the_same_bytes_as_staging_decoded)
{
    /* Every chunk of the array, edge chunks with garbage padding among
     * them, a fill chunk, and one chunk written whole twice: the shards
     * stored are byte for byte those of a transaction staging decoded. */
    struct ew_fixture f[2];
    for (int i = 0; i < 2; i++) {
        ew_open(&f[i]);
        sl_txn *t = ew_txn(&f[i], i == 1);
        for (uint64_t cy = 0; cy < 4; cy++)
            for (uint64_t cx = 0; cx < 4; cx++)
                ew_put(&f[i], t, cy, cx, f[i].ctx, cy == 1 && cx == 2 ? ew_fill : ew_ramp);
        ew_put(&f[i], t, 3, 0, f[i].ctx, ew_seven);
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_txn_commit(t, f[i].ctx, &err), SL_OK, "%s", err.text);
        sl_txn_close(t);
        ew_check_stored(&f[i]);
    }
    for (int sy = 0; sy < 2; sy++)
        for (int sx = 0; sx < 2; sx++) {
            char key[32];
            snprintf(key, sizeof(key), "a/c/%d/%d", sy, sx);
            struct sl_buf b[2] = {SL_BUF_INIT, SL_BUF_INIT};
            for (int i = 0; i < 2; i++)
                cr_assert_eq(sl_store_get(f[i].s, key, NULL, &b[i], NULL, NULL), SL_OK, "%s", key);
            cr_assert_eq(b[0].size, b[1].size, "%s: %zu vs %zu bytes", key, b[0].size, b[1].size);
            cr_assert_eq(memcmp(b[0].data, b[1].data, b[0].size), 0, "%s differs", key);
            sl_buf_fini(&b[0]);
            sl_buf_fini(&b[1]);
        }
    bool missing = false;
    uint16_t chunk[256];
    cr_assert_eq(sl_array_read_chunk(f[1].a, (const uint64_t[]){1, 2}, chunk, sizeof(chunk), NULL,
                                     &missing, NULL),
                 SL_OK);
    cr_assert(missing, "the fill chunk is not stored");
    ew_close(&f[0]);
    ew_close(&f[1]);
}

/* Unsharded, written behind: a chunk is its own unit, and waits for the
 * writer thread as its encoding alone (no decoded copy staged beside it);
 * the objects are those a transaction writing in place stores. */
Test(io_txn, encode_on_write_behind_unsharded_stages_only_the_encoding)
{
    struct ew_fixture f[2];
    for (int i = 0; i < 2; i++) {
        ew_open_sharded(&f[i], 0);
        struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
        o.encode_on_write = true;
        o.write_behind = i == 1 ? 1 : 0;
        struct sl_error err = SL_ERROR_INIT;
        sl_txn *t = sl_txn_open(f[i].a, &o, &err);
        cr_assert_not_null(t, "%s", err.text);
        for (uint64_t cy = 0; cy < 4; cy++)
            for (uint64_t cx = 0; cx < 4; cx++)
                ew_put(&f[i], t, cy, cx, f[i].ctx, cy == 1 && cx == 2 ? ew_fill : ew_seven);
        (void)sl_txn_wait_behind(t);
        struct sl_txn_stats st;
        sl_txn_get_stats(t, &st);
        cr_assert_eq(st.n_units_early, 16, "every chunk written when staged");
        if (i == 1)
            /* 512 bytes of one value encode to a few dozen: one in the
             * writer's hands and one waiting at most, never a chunk. */
            cr_assert(st.peak_staged_bytes > 0 && st.peak_staged_bytes < 256,
                      "peak staged %llu bytes for chunks of 512 encoding to < 128",
                      (unsigned long long)st.peak_staged_bytes);
        cr_assert_eq(sl_txn_commit(t, f[i].ctx, &err), SL_OK, "%s", err.text);
        sl_txn_close(t);
        ew_check_stored(&f[i]);
    }
    for (int cy = 0; cy < 4; cy++)
        for (int cx = 0; cx < 4; cx++) {
            char key[32];
            snprintf(key, sizeof(key), "a/c/%d/%d", cy, cx);
            struct sl_buf b[2] = {SL_BUF_INIT, SL_BUF_INIT};
            sl_status got[2];
            for (int i = 0; i < 2; i++)
                got[i] = sl_store_get(f[i].s, key, NULL, &b[i], NULL, NULL);
            cr_assert_eq(got[0], got[1], "%s: stored in one, not the other", key);
            cr_assert_eq(got[0], cy == 1 && cx == 2 ? SL_ENOTFOUND : SL_OK, "%s", key);
            cr_assert_eq(b[0].size, b[1].size, "%s: %zu vs %zu bytes", key, b[0].size, b[1].size);
            cr_assert(b[0].size == 0 || memcmp(b[0].data, b[1].data, b[0].size) == 0, "%s differs",
                      key);
            sl_buf_fini(&b[0]);
            sl_buf_fini(&b[1]);
        }
    ew_close(&f[0]);
    ew_close(&f[1]);
}

Test(io_txn, encode_on_write_fill_chunks_stage_nothing_and_no_context_stages_decoded)
{
    struct ew_fixture f;
    ew_open(&f);
    sl_txn *t = ew_txn(&f, true);
    ew_put(&f, t, 0, 0, f.ctx, ew_fill);
    cr_assert_eq(sl_txn_staged_bytes(t), 0, "an all-fill chunk encodes to nothing");
    struct sl_txn_stats st;
    sl_txn_get_stats(t, &st);
    cr_assert_eq(st.staged_units, 1, "yet its shard is staged");
    ew_put(&f, t, 0, 1, NULL, ew_ramp);
    cr_assert_eq(sl_txn_staged_bytes(t), 512, "without a context the chunk is staged decoded");
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_commit(t, NULL, &err), SL_OK, "%s", err.text);
    sl_txn_close(t);
    ew_check_stored(&f);
    ew_close(&f);
}
