/* SPDX-License-Identifier: MIT */
/*
 * Transactions under allocation failure: the n-th allocation of the
 * array's (and store's) allocator fails, for n = 1, 2, 3, ... until the
 * whole open / stage / read / commit sequence succeeds.  Each run must
 * fail with SL_ENOMEM or succeed with the right data, and leave nothing
 * allocated.  A failure while a unit is written is that unit's failure,
 * reported by commit; also when the writer thread of write_behind writes
 * it.  Also with encode_on_write: a chunk staged encoded, read back
 * through the transaction and written over in part.  (zstd allocates on
 * its own and is not covered.)
 */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

#include "alloc_sweep.h"
#include "testutil.h"

TestSuite(io_txn_fault, .timeout = 60.0);

/* [12, 12] int16, inner chunks [3, 3], shards [6, 6] (or none). */
static sl_status
sequence(const struct sl_allocator *alloc, bool sharded, unsigned behind, bool eow, bool *data_ok)
{
    *data_ok = false;
    struct sl_mem_store_opts so = SL_MEM_STORE_OPTS_DEFAULT;
    so.alloc = alloc;
    sl_store *s = sl_store_create_memory(&so, NULL);
    if (s == NULL)
        return SL_ENOMEM;
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_I16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = 12;
        sp.chunk_shape[d] = 3;
        sp.shard_shape[d] = sharded ? 6 : 0;
    }
    /* Encoding on write, in Fortran order: decoding a staged chunk then
     * allocates (the transpose's buffer) in a fresh context. */
    sp.order_f = eow;
    struct sl_array_opts ao = SL_ARRAY_OPTS_DEFAULT;
    ao.alloc = alloc;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, "x", &sp, &ao, &err);
    sl_status st = a != NULL ? SL_OK : err.code;
    int16_t want[144], chunk[9], back[144];
    for (int i = 0; i < 144; i++)
        want[i] = (int16_t)(i + 1);
    sl_txn *t = NULL;
    /* Writing behind, the writes get a context (with the failing
     * allocator), so complete shards are assembled as they are handed over. */
    sl_codec_ctx *ctx = NULL;
    if (st == SL_OK && (behind > 0 || eow)) {
        ctx = sl_codec_ctx_create(alloc, &err);
        st = ctx != NULL ? SL_OK : err.code;
    }
    if (st == SL_OK) {
        struct sl_txn_opts o = SL_TXN_OPTS_DEFAULT;
        o.write_behind = behind;
        o.encode_on_write = eow;
        t = sl_txn_open(a, &o, &err);
        st = t != NULL ? SL_OK : err.code;
    }
    /* Shard (0, 0) whole, chunk by chunk: written when complete. */
    for (uint64_t c = 0; st == SL_OK && c < 4; c++) {
        const uint64_t coords[2] = {c / 2, c % 2};
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++)
                chunk[y * 3 + x] =
                    want[(coords[0] * 3 + (uint64_t)y) * 12 + coords[1] * 3 + (uint64_t)x];
        st = sl_txn_write_chunk(t, coords, chunk, sizeof(chunk), ctx, NULL);
    }
    /* Chunk (2, 0) whole (encoded, with encode_on_write), read back, then
     * written over in part: decoded first. */
    const uint64_t c20[2] = {2, 0};
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 3; x++)
            chunk[y * 3 + x] = want[(6 + y) * 12 + x];
    if (st == SL_OK)
        st = sl_txn_write_chunk(t, c20, chunk, sizeof(chunk), ctx, NULL);
    /* (What it reads is checked elsewhere: unsharded, the chunk was a
     * whole unit, written at once, and its failed write reads as absent.)
     * Both reads without a context: they make one, and decode in it. */
    int16_t chunk_back[9];
    if (st == SL_OK)
        st = sl_txn_read_chunk(t, c20, chunk_back, sizeof(chunk_back), NULL, NULL, NULL);
    struct sl_region around = {.rank = 2, .start = {5, 0}, .stop = {10, 4}};
    int16_t around_back[20];
    if (st == SL_OK)
        st = sl_txn_read_region(t, &around, around_back, sizeof(around_back), NULL, NULL);
    /* Written over in part without a context: the transaction makes one. */
    struct sl_region corner = {.rank = 2, .start = {6, 0}, .stop = {8, 2}};
    const int16_t part[4] = {want[6 * 12], want[6 * 12 + 1], want[7 * 12], want[7 * 12 + 1]};
    if (st == SL_OK)
        st = sl_txn_write_region(t, &corner, part, sizeof(part), NULL, NULL);
    /* The rest as a region: whole and partial chunks. */
    struct sl_region rest = {.rank = 2, .start = {0, 6}, .stop = {12, 12}};
    struct sl_region low = {.rank = 2, .start = {6, 0}, .stop = {12, 6}};
    int16_t box[72];
    for (int y = 0; y < 12; y++)
        for (int x = 0; x < 6; x++)
            box[y * 6 + x] = want[y * 12 + 6 + x];
    if (st == SL_OK)
        st = sl_txn_write_region(t, &rest, box, sizeof(box), ctx, NULL);
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 6; x++)
            box[y * 6 + x] = want[(6 + y) * 12 + x];
    if (st == SL_OK)
        st = sl_txn_write_region(t, &low, box, 72, ctx, NULL);
    struct sl_region whole = sl_region_whole(2, sp.shape);
    if (st == SL_OK)
        st = sl_txn_read_region(t, &whole, back, sizeof(back), NULL, NULL);
    if (st == SL_OK)
        st = sl_txn_commit(t, NULL, NULL);
    /* Whatever the failures, a commit that ran leaves nothing counted. */
    bool uncounted = st != SL_OK || sl_txn_staged_bytes(t) == 0;
    sl_txn_close(t);
    sl_codec_ctx_destroy(ctx);
    if (st == SL_OK)
        st = sl_array_read_region(a, &whole, back, sizeof(back), NULL, NULL, NULL);
    *data_ok = st == SL_OK && memcmp(back, want, sizeof(want)) == 0 && uncounted;
    sl_array_unref(a);
    sl_store_unref(s);
    return st;
}

struct variant {
    bool sharded;
    unsigned behind;
    bool eow; /* encode_on_write */
};

static sl_status
sweep_one(const struct sl_allocator *alloc, void *arg, bool *data_ok)
{
    const struct variant *v = arg;
    return sequence(alloc, v->sharded, v->behind, v->eow, data_ok);
}

static void
check_every_failure(bool sharded, unsigned behind, bool eow)
{
    struct variant v = {sharded, behind, eow};
    (void)sl_test_alloc_sweep(sweep_one, &v, true, 20);
}

Test(io_txn_fault, every_allocation_failure_is_enomem_without_leaks_sharded)
{
    check_every_failure(true, 0, false);
}

Test(io_txn_fault, every_allocation_failure_is_enomem_without_leaks_writing_behind)
{
    check_every_failure(true, 1, false);
}

Test(io_txn_fault, every_allocation_failure_is_enomem_without_leaks_unsharded)
{
    check_every_failure(false, 0, false);
}

Test(io_txn_fault, every_allocation_failure_is_enomem_without_leaks_encoding_on_write)
{
    check_every_failure(true, 0, true);
    check_every_failure(true, 1, true);
    check_every_failure(false, 0, true);
}
