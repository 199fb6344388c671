/* SPDX-License-Identifier: MIT */
/*
 * Transactions under threads: 4 threads x 100 read-modify-write
 * transactions on different inner chunks of one shard (none lost, on the
 * memory and the filesystem store); writers and readers sharing one
 * transaction; pool threads staging chunks of many shards with each shard
 * renamed into place exactly once (counted through the I/O table); readers
 * racing early flushes never missing a chunk written before they began;
 * the same with the writer thread of write_behind; threads writing parts
 * over chunks staged encoded (encode_on_write) while others read them.
 * Runs under ThreadSanitizer in CI (plain_test.h).
 */
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sluice.h>

#include "fault_io.h"
#include "plain_test.h"
#include "testkit.h"

TestSuite(io_txn_stress, .timeout = 120.0);

/* ---- scratch directories ------------------------------------------------------- */

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void
tmpdir_make(char *path, size_t size, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(path, size, "%s/sluice-%s-XXXXXX", base != NULL ? base : "/tmp", tag);
    cr_assert_not_null(mkdtemp(path));
}

static void
tmpdir_remove(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- lost updates --------------------------------------------------------------- */

/* [80, 80] uint16, inner chunks [4, 4], one shard: 400 inner chunks. */
static sl_array *
make_one_shard(sl_store *s)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = 80;
        sp.chunk_shape[d] = 4;
        sp.shard_shape[d] = 80;
    }
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    cr_assert_not_null(a);
    return a;
}

static uint16_t
value_of(uint64_t chunk, int e)
{
    return (uint16_t)(chunk * 16 + (uint64_t)e + 1);
}

struct rmw_thread {
    sl_array *a;
    int id;         /* writes chunks id * 100 .. id * 100 + 99 */
    int failures;   /* calls that failed */
    int unexpected; /* chunks that read back other than absent */
};

/* 100 transactions: read the chunk through it, modify, write, commit. */
static void *
rmw_run(void *arg)
{
    struct rmw_thread *w = arg;
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.clean_leftovers = false;
    for (uint64_t i = 0; i < 100; i++) {
        uint64_t chunk = (uint64_t)w->id * 100 + i;
        const uint64_t c[2] = {chunk / 20, chunk % 20};
        uint16_t buf[16];
        bool missing = false;
        sl_txn *t = sl_txn_open(w->a, &o, NULL);
        if (t == NULL || sl_txn_read_chunk(t, c, buf, sizeof(buf), ctx, &missing, NULL) != SL_OK) {
            w->failures++;
            sl_txn_close(t);
            continue;
        }
        w->unexpected += !missing;
        for (int e = 0; e < 16; e++)
            buf[e] = (uint16_t)(buf[e] + value_of(chunk, e));
        if (sl_txn_write_chunk(t, c, buf, sizeof(buf), ctx, NULL) != SL_OK ||
            sl_txn_commit(t, ctx, NULL) != SL_OK)
            w->failures++;
        sl_txn_close(t);
    }
    sl_codec_ctx_destroy(ctx);
    return NULL;
}

/* Every chunk of the shard is stored, element e of chunk `chunk` being
 * expect(chunk, e). */
static void
check_all_400(sl_array *a, uint16_t (*expect)(uint64_t chunk, int e))
{
    for (uint64_t chunk = 0; chunk < 400; chunk++) {
        const uint64_t c[2] = {chunk / 20, chunk % 20};
        uint16_t buf[16];
        bool missing = true;
        cr_assert_eq(sl_array_read_chunk(a, c, buf, sizeof(buf), NULL, &missing, NULL), SL_OK);
        cr_assert_not(missing, "chunk %llu lost", (unsigned long long)chunk);
        for (int e = 0; e < 16; e++)
            cr_assert_eq(buf[e], expect(chunk, e), "chunk %llu element %d",
                         (unsigned long long)chunk, e);
    }
}

static void
check_all_400_present(sl_array *a)
{
    check_all_400(a, value_of);
}

static void
check_lost_updates(sl_store *s)
{
    sl_array *a = make_one_shard(s);
    pthread_t t[4];
    struct rmw_thread w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct rmw_thread){.a = a, .id = i};
        pthread_create(&t[i], NULL, rmw_run, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(w[i].failures, 0);
        cr_assert_eq(w[i].unexpected, 0);
    }
    check_all_400_present(a);
    sl_array_unref(a);
}

Test(io_txn_stress, read_modify_writes_of_one_shard_lose_nothing_in_memory)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    check_lost_updates(s);
    sl_store_unref(s);
}

Test(io_txn_stress, read_modify_writes_of_one_shard_lose_nothing_on_disk)
{
    char dir[256];
    tmpdir_make(dir, sizeof(dir), "txn-rmw");
    sl_store *s = sl_store_open_fs(dir, NULL, NULL);
    cr_assert_not_null(s);
    check_lost_updates(s);
    sl_store_unref(s);
    tmpdir_remove(dir);
}

/* ---- one transaction, many threads ----------------------------------------------- */

/* Counts sets of the shard key "a/c/0/0". */
static int
count_shard_sets(void *ctx, sl_store_op op, const char *key, size_t bytes)
{
    (void)bytes;
    if (op == SL_STORE_OP_SET && strcmp(key, "a/c/0/0") == 0)
        atomic_fetch_add((_Atomic int *)ctx, 1);
    return 0;
}

struct shared_writer {
    sl_txn *t;
    int id;
    int failures;
};

/* Stage 100 chunks, reading each earlier one back through the txn. */
static void *
shared_run(void *arg)
{
    struct shared_writer *w = arg;
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    for (uint64_t i = 0; i < 100; i++) {
        uint64_t chunk = i * 4 + (uint64_t)w->id;
        const uint64_t c[2] = {chunk / 20, chunk % 20};
        uint16_t buf[16];
        for (int e = 0; e < 16; e++)
            buf[e] = value_of(chunk, e);
        if (sl_txn_write_chunk(w->t, c, buf, sizeof(buf), ctx, NULL) != SL_OK)
            w->failures++;
        uint64_t back = (i / 2) * 4 + (uint64_t)w->id;
        const uint64_t b[2] = {back / 20, back % 20};
        bool missing = true;
        if (sl_txn_read_chunk(w->t, b, buf, sizeof(buf), ctx, &missing, NULL) != SL_OK || missing ||
            buf[5] != value_of(back, 5))
            w->failures++;
    }
    sl_codec_ctx_destroy(ctx);
    return NULL;
}

Test(io_txn_stress, threads_sharing_a_transaction_write_the_shard_once)
{
    _Atomic int sets = 0;
    struct sl_mem_store_opts so = SL_MEM_STORE_OPTS_DEFAULT;
    so.hook = count_shard_sets;
    so.hook_ctx = &sets;
    sl_store *s = sl_store_create_memory(&so, NULL);
    sl_array *a = make_one_shard(s);
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 2);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.par = &pool.par;
    sl_txn *t = sl_txn_open(a, &o, NULL);
    pthread_t th[4];
    struct shared_writer w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct shared_writer){t, i, 0};
        pthread_create(&th[i], NULL, shared_run, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(w[i].failures, 0);
    }
    cr_assert_eq(atomic_load(&sets), 1, "the last chunk staged wrote the shard");
    cr_assert_eq(sl_txn_staged_bytes(t), 0);
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    cr_assert_eq(atomic_load(&sets), 1);
    sl_txn_close(t);
    check_all_400_present(a);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* ---- many shards, pool threads, the I/O table ------------------------------------- */

/* [64, 64] uint16, inner [8, 8], shards [32, 32]: 4 shards of 16 chunks. */
static sl_array *
make_four_shards(sl_store *s)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = 64;
        sp.chunk_shape[d] = 8;
        sp.shard_shape[d] = 32;
    }
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    cr_assert_not_null(a);
    return a;
}

struct unit_reports {
    _Atomic int ok;
    _Atomic int failed;
};

static void
count_unit(void *arg, const uint64_t *unit, sl_status status, const struct sl_error *err)
{
    (void)unit, (void)err;
    struct unit_reports *r = arg;
    atomic_fetch_add(status == SL_OK ? &r->ok : &r->failed, 1);
}

/* Writers of a put stage: the body of a pool loop over 64 chunks. */
struct put_stage {
    sl_txn *t;
    sl_codec_ctx *ctx[4]; /* one per worker */
    _Atomic int failures;
};

static uint16_t
put_value(uint64_t chunk, int e)
{
    return (uint16_t)(1000 + chunk * 64 + (uint64_t)e);
}

static void
put_one(void *arg, size_t i, unsigned worker)
{
    struct put_stage *ps = arg;
    /* Interleave shards: chunk i of the walk is (i % 4)'s shard's (i / 4)-th. */
    uint64_t shard = i % 4, k = i / 4;
    const uint64_t c[2] = {(shard / 2) * 4 + k / 4, (shard % 2) * 4 + k % 4};
    uint16_t buf[64];
    for (int e = 0; e < 64; e++)
        buf[e] = put_value(c[0] * 8 + c[1], e);
    if (sl_txn_write_chunk(ps->t, c, buf, sizeof(buf), ps->ctx[worker], NULL) != SL_OK)
        atomic_fetch_add(&ps->failures, 1);
}

static void
check_put_stage(bool flush_full, unsigned behind)
{
    char dir[256];
    tmpdir_make(dir, sizeof(dir), "txn-put");
    struct sl_fault_io fio;
    sl_fault_io_init(&fio);
    struct sl_fs_store_opts fo = SL_FS_STORE_OPTS_DEFAULT;
    fo.io = &fio.table;
    sl_store *s = sl_store_open_fs(dir, &fo, NULL);
    sl_array *a = make_four_shards(s);
    sl_fault_io_reset(&fio);
    struct sl_test_pool writers, encoders;
    sl_test_pool_init(&writers, 4);
    sl_test_pool_init(&encoders, 2);
    struct unit_reports rep = {0};
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.flush_full = flush_full;
    o.write_behind = behind;
    o.par = &encoders.par;
    o.on_unit = count_unit;
    o.on_unit_arg = &rep;
    struct put_stage ps = {.t = sl_txn_open(a, &o, NULL)};
    cr_assert_not_null(ps.t);
    for (int w = 0; w < 4; w++)
        ps.ctx[w] = sl_codec_ctx_create(NULL, NULL);
    cr_assert_eq(sl_parallel_run(&writers.par, 64, put_one, &ps), SL_OK);
    cr_assert_eq(atomic_load(&ps.failures), 0);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_txn_commit(ps.t, NULL, &err), SL_OK, "%s", err.text);
    struct sl_txn_stats st;
    sl_txn_get_stats(ps.t, &st);
    cr_assert_eq(st.n_units_early, flush_full ? 4 : 0);
    sl_txn_close(ps.t);
    for (int w = 0; w < 4; w++)
        sl_codec_ctx_destroy(ps.ctx[w]);
    cr_assert_eq(atomic_load(&rep.ok), 4);
    cr_assert_eq(atomic_load(&rep.failed), 0);
    const char *shards[4] = {"/a/c/0/0", "/a/c/0/1", "/a/c/1/0", "/a/c/1/1"};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(sl_fault_io_renames_to(&fio, shards[i]), 1, "shard %s", shards[i]);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_RENAME), 4, "nothing else was written");
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_PREAD), 0, "complete shards are not read");
    for (uint64_t chunk = 0; chunk < 64; chunk++) {
        const uint64_t c[2] = {chunk / 8, chunk % 8};
        uint16_t buf[64];
        cr_assert_eq(sl_array_read_chunk(a, c, buf, sizeof(buf), NULL, NULL, NULL), SL_OK);
        cr_assert_eq(buf[63], put_value(chunk, 63));
    }
    sl_array_unref(a);
    sl_store_unref(s);
    sl_fault_io_fini(&fio);
    tmpdir_remove(dir);
}

Test(io_txn_stress, a_put_stage_on_pool_threads_renames_each_shard_once)
{
    check_put_stage(true, 0);
    check_put_stage(false, 0);
}

Test(io_txn_stress, a_put_stage_writing_behind_renames_each_shard_once)
{
    check_put_stage(true, 1);
    check_put_stage(true, 3);
}

/* ---- readers racing flushes ----------------------------------------------------------- */

struct race {
    sl_txn *t;
    _Atomic bool written[64]; /* set after the chunk's write returned */
    _Atomic bool stop;
    _Atomic int stale; /* reads that missed a chunk written before */
    _Atomic int errors;
    _Atomic int reads;   /* region reads done */
    _Atomic int started; /* readers running */
};

static void *
race_read(void *arg)
{
    struct race *r = arg;
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    uint16_t *back = malloc(64 * 64 * 2);
    struct sl_region whole = {.rank = 2, .start = {0, 0}, .stop = {64, 64}};
    atomic_fetch_add(&r->started, 1);
    while (!atomic_load(&r->stop)) {
        bool before[64];
        for (int i = 0; i < 64; i++)
            before[i] = atomic_load(&r->written[i]);
        if (sl_txn_read_region(r->t, &whole, back, 64 * 64 * 2, ctx, NULL) != SL_OK) {
            atomic_fetch_add(&r->errors, 1);
            continue;
        }
        for (uint64_t chunk = 0; chunk < 64; chunk++) {
            uint64_t y = chunk / 8 * 8, x = chunk % 8 * 8;
            uint16_t v = back[y * 64 + x];
            if (before[chunk] && v != put_value(chunk, 0))
                atomic_fetch_add(&r->stale, 1);
            if (v != put_value(chunk, 0) && v != 7)
                atomic_fetch_add(&r->errors, 1);
        }
        atomic_fetch_add(&r->reads, 1);
    }
    free(back);
    sl_codec_ctx_destroy(ctx);
    return NULL;
}

Test(io_txn_stress, readers_never_miss_a_chunk_written_before_they_began)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_four_shards(s);
    uint16_t *old = malloc(64 * 64 * 2);
    for (int i = 0; i < 64 * 64; i++)
        old[i] = 7;
    struct sl_region whole = {.rank = 2, .start = {0, 0}, .stop = {64, 64}};
    cr_assert_eq(sl_array_write_region(a, &whole, old, 64 * 64 * 2, NULL, NULL, NULL), SL_OK);
    int reads = 0;
    for (int round = 0; round < 20; round++) {
        struct race *r = calloc(1, sizeof(*r));
        /* Odd rounds: early flushes by the writer thread. */
        struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
        o.write_behind = (unsigned)round % 2;
        r->t = sl_txn_open(a, &o, NULL);
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, race_read, r);
        while (atomic_load(&r->started) < 2)
            sched_yield();
        sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
        for (uint64_t i = 0; i < 64; i++) {
            uint64_t shard = i % 4, k = i / 4;
            const uint64_t c[2] = {(shard / 2) * 4 + k / 4, (shard % 2) * 4 + k % 4};
            uint16_t buf[64];
            for (int e = 0; e < 64; e++)
                buf[e] = put_value(c[0] * 8 + c[1], 0);
            cr_assert_eq(sl_txn_write_chunk(r->t, c, buf, sizeof(buf), ctx, NULL), SL_OK);
            atomic_store(&r->written[c[0] * 8 + c[1]], true);
            sched_yield();
        }
        atomic_store(&r->stop, true);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        cr_assert_eq(atomic_load(&r->stale), 0);
        cr_assert_eq(atomic_load(&r->errors), 0);
        reads += atomic_load(&r->reads);
        cr_assert_eq(sl_txn_commit(r->t, ctx, NULL), SL_OK);
        sl_txn_close(r->t);
        sl_codec_ctx_destroy(ctx);
        /* Back to the old data for the next round. */
        cr_assert_eq(sl_array_write_region(a, &whole, old, 64 * 64 * 2, NULL, NULL, NULL), SL_OK);
        free(r);
    }
    cr_assert(reads > 20, "the readers ran beside the writer (%d reads)", reads);
    free(old);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* ---- parts written over chunks staged encoded ------------------------------------ */

/* A chunk's first row written again as a part. */
static uint16_t
part_value(uint64_t chunk, int e)
{
    return (uint16_t)(value_of(chunk, e) + 30000);
}

/* What the parts test leaves: each chunk's first row its part's. */
static uint16_t
after_parts(uint64_t chunk, int e)
{
    return e < 4 ? part_value(chunk, e) : value_of(chunk, e);
}

/* Whether element e of chunk `chunk` read back as something a writer
 * staged: absent (0, the fill), the whole chunk's, or its part's. */
static bool
plausible(uint64_t chunk, int e, uint16_t v)
{
    return v == 0 || v == value_of(chunk, e) || (e < 4 && v == part_value(chunk, e));
}

struct part_writer {
    sl_txn *t;
    int id;
    int failures; /* calls that failed */
    int wrong;    /* elements read back as nothing anyone wrote */
};

/* Chunks id, id + 4, ...: each staged whole (encoded: a context), then
 * its first row written over it as a region part (every other one
 * without a context, so the transaction makes one to decode the chunk);
 * meanwhile the next thread's chunk and a region across four chunks are
 * read back through the transaction. */
static void *
part_run(void *arg)
{
    struct part_writer *w = arg;
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    for (uint64_t i = 0; i < 100; i++) {
        uint64_t chunk = i * 4 + (uint64_t)w->id;
        const uint64_t c[2] = {chunk / 20, chunk % 20};
        uint16_t buf[16];
        for (int e = 0; e < 16; e++)
            buf[e] = value_of(chunk, e);
        if (sl_txn_write_chunk(w->t, c, buf, sizeof(buf), ctx, NULL) != SL_OK)
            w->failures++;
        uint16_t row[4];
        for (int e = 0; e < 4; e++)
            row[e] = part_value(chunk, e);
        struct sl_region r = {
            .rank = 2, .start = {c[0] * 4, c[1] * 4}, .stop = {c[0] * 4 + 1, c[1] * 4 + 4}};
        if (sl_txn_write_region(w->t, &r, row, sizeof(row), i % 2 ? ctx : NULL, NULL) != SL_OK)
            w->failures++;
        uint64_t other = (chunk + 1) % 400;
        const uint64_t o[2] = {other / 20, other % 20};
        bool missing = true;
        if (sl_txn_read_chunk(w->t, o, buf, sizeof(buf), ctx, &missing, NULL) != SL_OK)
            w->failures++;
        for (int e = 0; e < 16 && !missing; e++)
            w->wrong += !plausible(other, e, buf[e]);
        /* 8 x 8 elements at the chunk's corner: up to four chunks. */
        uint64_t y0 = c[0] * 4 < 72 ? c[0] * 4 : 72, x0 = c[1] * 4 < 72 ? c[1] * 4 : 72;
        struct sl_region sq = {.rank = 2, .start = {y0, x0}, .stop = {y0 + 8, x0 + 8}};
        uint16_t box[64];
        if (sl_txn_read_region(w->t, &sq, box, sizeof(box), i % 2 ? NULL : ctx, NULL) != SL_OK)
            w->failures++;
        for (int k = 0; k < 64; k++) {
            uint64_t y = y0 + (uint64_t)(k / 8), x = x0 + (uint64_t)(k % 8);
            w->wrong += !plausible((y / 4) * 20 + x / 4, (int)((y % 4) * 4 + x % 4), box[k]);
        }
    }
    sl_codec_ctx_destroy(ctx);
    return NULL;
}

Test(io_txn_stress, parts_written_over_chunks_staged_encoded_lose_nothing)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_one_shard(s);
    struct sl_test_pool pool;
    sl_test_pool_init(&pool, 2);
    struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
    o.par = &pool.par;
    o.encode_on_write = true;
    o.flush_full = false; /* one unit staged throughout */
    sl_txn *t = sl_txn_open(a, &o, NULL);
    cr_assert_not_null(t);
    pthread_t th[4];
    struct part_writer w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct part_writer){.t = t, .id = i};
        pthread_create(&th[i], NULL, part_run, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(w[i].failures, 0, "thread %d: %d calls failed", i, w[i].failures);
        cr_assert_eq(w[i].wrong, 0, "thread %d: %d elements read back wrong", i, w[i].wrong);
    }
    cr_assert_eq(sl_txn_commit(t, NULL, NULL), SL_OK);
    cr_assert_eq(sl_txn_staged_bytes(t), 0);
    sl_txn_close(t);
    check_all_400(a, after_parts);
    sl_array_unref(a);
    sl_store_unref(s);
}
