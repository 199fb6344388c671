/* SPDX-License-Identifier: MIT */
/*
 * Batched reads under allocation failure: the n-th allocation of the
 * array's and the store's allocator fails, for n = 1, 2, 3, ... until a
 * sequence of batched reads (separate buffers and concatenated, unsharded
 * and sharded, with absent chunks) succeeds.  Each run must fail with
 * SL_ENOMEM, report it for the selections it did not read, and leave
 * nothing allocated.  (zstd allocates on its own and is not covered.)
 */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

#include "alloc_sweep.h"
#include "testutil.h"

TestSuite(io_batch_fault, .timeout = 60.0);

/* Create, write part of, and batch-read an array; the first failing status. */
static sl_status
sequence(const struct sl_allocator *alloc, bool sharded)
{
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
    struct sl_array_opts ao = SL_ARRAY_OPTS_DEFAULT;
    ao.alloc = alloc;
    sl_array *a = sl_array_create(s, "x", &sp, &ao, NULL);
    sl_status st = a != NULL ? SL_OK : SL_ENOMEM;
    int16_t data[144], out[3][144];
    for (int i = 0; i < 144; i++)
        data[i] = (int16_t)(i + 1);
    struct sl_region top = {.rank = 2, .start = {0, 0}, .stop = {7, 12}};
    if (st == SL_OK)
        st = sl_array_write_region(a, &top, data, 7 * 12 * 2, NULL, NULL, NULL);
    struct sl_region r[3] = {{.rank = 2, .start = {1, 2}, .stop = {9, 11}},
                             {.rank = 2, .start = {0, 0}, .stop = {12, 12}},
                             {.rank = 2, .start = {3, 3}, .stop = {6, 6}}};
    void *bufs[3] = {out[0], out[1], out[2]};
    size_t sizes[3] = {sizeof(out[0]), sizeof(out[1]), sizeof(out[2])};
    sl_status status[3];
    if (st == SL_OK) {
        st = sl_array_read_batch(a, 3, r, bufs, sizes, NULL, status, NULL, NULL);
        for (int i = 0; i < 3; i++)
            cr_assert(status[i] == SL_OK || status[i] == SL_ENOMEM, "status %s",
                      sl_status_name(status[i]));
    }
    if (st == SL_OK)
        cr_assert_eq(out[1][6 * 12 + 5], 6 * 12 + 6);
    r[1] = r[0];
    r[1].start[0] = 8;
    r[1].stop[0] = 12;
    if (st == SL_OK)
        st = sl_array_read_batch_concat(a, 2, r, 0, out, sizeof(out), NULL, status, NULL, NULL);
    sl_array_unref(a);
    sl_store_unref(s);
    return st;
}

/* The sequence as a sweep sees it: `arg` says whether sharded. */
static sl_status
sweep_one(const struct sl_allocator *alloc, void *arg, bool *data_ok)
{
    *data_ok = true; /* what it reads is not checked here */
    return sequence(alloc, *(const bool *)arg);
}

static void
check_every_failure(bool sharded)
{
    (void)sl_test_alloc_sweep(sweep_one, &sharded, false, 10);
}

Test(io_batch_fault, every_allocation_failure_is_enomem_without_leaks)
{
    check_every_failure(false);
}

Test(io_batch_fault, every_allocation_failure_in_sharded_arrays_is_enomem_without_leaks)
{
    check_every_failure(true);
}
