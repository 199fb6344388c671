/* SPDX-License-Identifier: MIT */
/*
 * What io_array_fault, io_txn_fault and io_batch_fault leave out, under
 * allocation failure: the filesystem store (open, nested sets, ranges,
 * listings, sizes, deletes) and every codec chain (zstd, gzip, blosc,
 * crc32c, transposes, big-endian bytes, sharded) through a codec context
 * made with the failing allocator.  The n-th allocation fails for n = 1,
 * 2, 3, ... until the sequence completes: each attempt ends in SL_ENOMEM
 * (never a crash or another code), leaves nothing allocated, no temporary
 * file on disk, and no object half written: what a failed set leaves is
 * the old object or the new one.  (zstd, zlib, libblosc and jansson
 * allocate on their own and are not covered.)
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sluice.h>

#include "testutil.h"

TestSuite(io_alloc_fault, .timeout = 120.0);

/* ---- the filesystem store ------------------------------------------------------------ */

static int n_temps;

static int
count_temp(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag;
    n_temps += strncmp(path + ftw->base, ".sluice-tmp.", 12) == 0;
    return 0;
}

static sl_status
count_key(void *arg, const char *key, uint64_t bytes)
{
    (void)key, (void)bytes;
    (*(int *)arg)++;
    return SL_OK;
}

/* Open, write, read, list, delete; the first failure's status. */
static sl_status
fs_sequence(const char *root, const struct sl_allocator *alloc)
{
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.alloc = alloc;
    o.durable = true;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(root, &o, &err);
    if (s == NULL)
        return err.code;
    static const char *const keys[] = {"a/b/c/0", "a/b/c/1", "a/d", "e", "a/b/f/g/h"};
    const char payload[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    sl_status st = SL_OK;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && st == SL_OK; i++)
        st = sl_store_set(s, keys[i], payload, sizeof(payload) - i, &err);
    struct sl_buf buf = SL_BUF_INIT;
    buf.alloc = *alloc;
    if (st == SL_OK)
        st = sl_store_get(s, "a/b/c/1", NULL, &buf, NULL, &err);
    if (st == SL_OK)
        cr_assert(buf.size == sizeof(payload) - 1 && memcmp(buf.data, payload, buf.size) == 0);
    struct sl_byte_range r = sl_byte_range_at(3, 5);
    if (st == SL_OK)
        st = sl_store_get(s, "a/d", &r, &buf, NULL, &err);
    if (st == SL_OK)
        cr_assert(buf.size == 5 && memcmp(buf.data, payload + 3, 5) == 0);
    struct sl_byte_range sfx = sl_byte_range_suffix(4);
    if (st == SL_OK)
        st = sl_store_get(s, "e", &sfx, &buf, NULL, &err);
    int n_keys = 0;
    if (st == SL_OK)
        st = sl_store_list(s, "", count_key, &n_keys, &err);
    if (st == SL_OK)
        cr_assert_eq(n_keys, 5);
    uint64_t size = 0;
    if (st == SL_OK)
        st = sl_store_size(s, "a/b/f/g/h", &size, &err);
    if (st == SL_OK)
        st = sl_store_delete(s, "a/b/c/0", &err);
    if (st == SL_OK)
        st = sl_store_set(s, "a/b/c/1", "new", 3, &err); /* replacing */
    sl_buf_fini(&buf);
    sl_store_unref(s);
    return st;
}

/* After an attempt: no temporary file, and "a/b/c/1" whole (old or new). */
static void
check_fs_left(const char *root, size_t fail)
{
    n_temps = 0;
    nftw(root, count_temp, 16, FTW_PHYS);
    cr_assert_eq(n_temps, 0, "allocation %zu failing left %d temporary files", fail, n_temps);
    char path[1024];
    snprintf(path, sizeof(path), "%s/a/b/c/1", root);
    size_t len = 0;
    char *got = sl_test_read_file(path, &len);
    if (got == NULL)
        return; /* never written */
    bool is_old = len == 36 && memcmp(got, "0123456789abcdefghijklmnopqrstuvwxyz", 36) == 0;
    bool is_new = len == 3 && memcmp(got, "new", 3) == 0;
    cr_assert(is_old || is_new, "allocation %zu failing left a/b/c/1 torn (%zu bytes)", fail, len);
    free(got);
}

Test(io_alloc_fault, filesystem_store_allocation_failures_are_enomem_without_leaks)
{
    char root[1024];
    snprintf(root, sizeof(root), "%s", sl_test_tmpdir_ram("alloc-fault"));
    for (size_t fail = 1;; fail++) {
        cr_assert_lt(fail, 10000, "the sequence never completes");
        sl_test_rmtree(root);
        cr_assert_eq(mkdir(root, 0777), 0);
        struct sl_test_alloc ta = {.fail_at = fail};
        struct sl_allocator alloc = sl_test_alloc_make(&ta);
        sl_status st = fs_sequence(root, &alloc);
        cr_assert_eq(ta.n_live, 0, "allocation %zu failing leaks %zu blocks", fail, ta.n_live);
        check_fs_left(root, fail);
        if (ta.n_failed == 0) {
            cr_assert_eq(st, SL_OK, "no failure, yet %s", sl_status_name(st));
            cr_assert_gt(fail, 5, "the store allocates through its allocator");
            fprintf(stderr, "io_alloc_fault: filesystem store: allocations 1..%zu failed in turn\n",
                    fail - 1);
            break;
        }
        cr_assert_eq(st, SL_ENOMEM, "allocation %zu failing gave %s", fail, sl_status_name(st));
    }
    sl_test_rmtree(root);
}

/* ---- codec chains -------------------------------------------------------------------- */

/* One array layout: a codec and the chain's other choices. */
struct chain_case {
    const char *codec; /* sl_codec_spec_parse syntax */
    const char *needs; /* a codec the build must have, or NULL */
    bool checksum;     /* crc32c */
    bool order_f;      /* a transpose */
    bool big_endian;   /* bytes swapped */
    bool sharded;      /* inside sharding_indexed */
    int format;        /* 2 or 3 */
};

/* Create, write, read back, with the context and everything on `alloc`. */
static sl_status
chain_sequence(const struct chain_case *c, const struct sl_allocator *alloc)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_mem_store_opts so = SL_MEM_STORE_OPTS_DEFAULT;
    so.alloc = alloc;
    sl_store *s = sl_store_create_memory(&so, &err);
    if (s == NULL)
        return err.code;
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.zarr_format = c->format;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_I32;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = 12;
        sp.chunk_shape[d] = 4;
        sp.shard_shape[d] = c->sharded ? 8 : 0;
    }
    cr_assert_eq(sl_codec_spec_parse(c->codec, &sp.codec, NULL), SL_OK, "%s", c->codec);
    sp.checksum = c->checksum;
    sp.order_f = c->order_f;
    sp.endian = c->big_endian ? SL_ENDIAN_BIG : SL_ENDIAN_LITTLE;
    struct sl_array_opts ao = SL_ARRAY_OPTS_DEFAULT;
    ao.alloc = alloc;
    sl_codec_ctx *ctx = sl_codec_ctx_create(alloc, &err);
    sl_array *a = ctx != NULL ? sl_array_create(s, "x", &sp, &ao, &err) : NULL;
    sl_status st = a != NULL ? SL_OK : err.code;
    int32_t data[144], back[144];
    for (int i = 0; i < 144; i++)
        data[i] = i * 7919 - 500000;
    struct sl_region whole = sl_region_whole(2, sp.shape);
    if (st == SL_OK)
        st = sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, &err);
    bool missing;
    for (uint64_t k = 0; k < 9 && st == SL_OK; k++) {
        const uint64_t coords[2] = {k / 3, k % 3};
        int32_t chunk[16];
        st = sl_array_read_chunk(a, coords, chunk, sizeof(chunk), ctx, &missing, &err);
        for (int i = 0; st == SL_OK && i < 16; i++)
            cr_assert_eq(
                chunk[i],
                data[(coords[0] * 4 + (uint64_t)i / 4) * 12 + coords[1] * 4 + (uint64_t)i % 4]);
        if (st == SL_OK)
            st = sl_array_write_chunk(a, coords, chunk, sizeof(chunk), ctx, &err);
    }
    if (st == SL_OK)
        st = sl_array_read_region(a, &whole, back, sizeof(back), NULL, NULL, &err);
    if (st == SL_OK)
        cr_assert_arr_eq(back, data, sizeof(data), "%s: read back differs", c->codec);
    sl_array_unref(a);
    sl_codec_ctx_destroy(ctx);
    sl_store_unref(s);
    return st;
}

Test(io_alloc_fault, every_codec_chain_survives_every_allocation_failure)
{
    const struct chain_case cases[] = {
        {"zstd:3", NULL, true, false, false, false, 3},
        {"zstd:1", NULL, false, true, true, true, 3},
        {"gzip:5", "gzip", false, false, false, false, 3},
        {"gzip:1", "gzip", true, true, false, true, 3},
        {"blosc:lz4:5:shuffle", "blosc", false, false, false, false, 3},
        {"blosc:zstd:3:bitshuffle", "blosc", true, false, false, true, 3},
        {"none", NULL, true, true, true, false, 3},
        {"none", NULL, false, false, true, true, 3},
        {"zstd:3", NULL, false, true, true, false, 2},
        {"gzip:5", "gzip", false, false, false, false, 2},
        {"blosc:lz4:5:noshuffle", "blosc", false, true, false, false, 2},
    };
    size_t total = 0, n_cases = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct chain_case *c = &cases[i];
        if (c->needs != NULL && !sl_codec_available(c->needs))
            continue;
        n_cases++;
        for (size_t fail = 1;; fail++) {
            cr_assert_lt(fail, 100000, "case %zu never completes", i);
            struct sl_test_alloc ta = {.fail_at = fail};
            struct sl_allocator alloc = sl_test_alloc_make(&ta);
            sl_status st = chain_sequence(c, &alloc);
            cr_assert_eq(ta.n_live, 0, "case %zu (%s): allocation %zu failing leaks %zu blocks", i,
                         c->codec, fail, ta.n_live);
            if (ta.n_failed == 0) {
                cr_assert_eq(st, SL_OK, "case %zu: no failure, yet %s", i, sl_status_name(st));
                total += fail - 1;
                break;
            }
            cr_assert_eq(st, SL_ENOMEM, "case %zu (%s): allocation %zu failing gave %s", i,
                         c->codec, fail, sl_status_name(st));
        }
    }
    fprintf(stderr, "io_alloc_fault: %zu codec chains, %zu allocation failures in all\n", n_cases,
            total);
}
