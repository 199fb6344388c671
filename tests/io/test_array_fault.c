/* SPDX-License-Identifier: MIT */
/*
 * Arrays under allocation failure: the n-th allocation of the array's and
 * the store's allocator fails, for n = 1, 2, 3, ... until the whole
 * create / write / read / checksum sequence succeeds.  Each run must fail
 * with SL_ENOMEM (never crash) and leave nothing allocated.  (zstd, zlib and
 * jansson allocate on their own and are not covered.)
 */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

#include "alloc_sweep.h"
#include "testutil.h"

TestSuite(io_array_fault, .timeout = 60.0);

/* The whole sequence; returns the first failing status. */
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
        sp.shape[d] = 10;
        sp.chunk_shape[d] = 3;
        sp.shard_shape[d] = sharded ? 6 : 0;
    }
    sp.dimension_names[0] = "y";
    sp.attributes_json = "{\"a\": 1}";
    struct sl_array_opts ao = SL_ARRAY_OPTS_DEFAULT;
    ao.alloc = alloc;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, "x", &sp, &ao, &err);
    sl_status st = a != NULL ? SL_OK : err.code;
    int16_t data[100], back[100];
    for (int i = 0; i < 100; i++)
        data[i] = (int16_t)(i + 1);
    struct sl_region whole = sl_region_whole(2, sp.shape);
    struct sl_region part = {.rank = 2, .start = {1, 2}, .stop = {5, 7}};
    if (st == SL_OK)
        st = sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, NULL);
    if (st == SL_OK)
        st = sl_array_write_region(a, &part, data, 20 * 2, NULL, NULL, NULL);
    if (st == SL_OK)
        st = sl_array_read_region(a, &whole, back, sizeof(back), NULL, NULL, NULL);
    uint8_t digest[SL_SHA256_BYTES];
    if (st == SL_OK)
        st = sl_array_checksum(a, digest, NULL, NULL);
    sl_array_unref(a);
    if (st == SL_OK) {
        a = sl_array_open(s, "x", &ao, &err);
        st = a != NULL ? SL_OK : err.code;
        sl_array_unref(a);
    }
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

Test(io_array_fault, every_allocation_failure_is_enomem_without_leaks)
{
    check_every_failure(false);
}

Test(io_array_fault, every_allocation_failure_in_sharded_arrays_is_enomem_without_leaks)
{
    check_every_failure(true);
}
