/* SPDX-License-Identifier: MIT */
/*
 * Shards: the index (entries, sentinel, bounds, crc), assembly with the
 * index at either end, coalesced inner-chunk reads, one index read per
 * chunk read, each shard written once by region writes, inner-chunk writes
 * that keep their neighbours, and shards deleted when they become empty.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "fault_io.h"
#include "testkit.h"
#include "testutil.h"
#include "zarr_internal.h"

TestSuite(io_shard, .timeout = 30.0);

/* A 2-d uint16 array [20, 20], shards [8, 8] of inner chunks [4, 4]. */
static sl_array *
make_sharded(sl_store *s, bool index_at_start, const char *codec)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = 20;
        sp.chunk_shape[d] = 4;
        sp.shard_shape[d] = 8;
    }
    sp.index_at_start = index_at_start;
    cr_assert_eq(sl_codec_spec_parse(codec, &sp.codec, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, "a", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    return a;
}

static void
fill_inner(uint16_t *chunk, uint16_t base)
{
    for (int i = 0; i < 16; i++)
        chunk[i] = (uint16_t)(base + i);
}

Test(io_shard, entries_are_bounds_checked_without_overflow)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__shard_entry_check(0, SL__SHARD_EMPTY, SL__SHARD_EMPTY, 10, NULL), SL_OK);
    cr_assert_eq(sl__shard_entry_check(0, 96, 32, 128, NULL), SL_OK);
    cr_assert_eq(sl__shard_entry_check(3, 96, 64, 128, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, "entry 3 [96, +64) exceeds the shard of 128 bytes"), "%s",
                       err.text);
    cr_assert_eq(sl__shard_entry_check(0, UINT64_MAX - 1, 4, 128, NULL), SL_ECORRUPT);
    cr_assert_eq(sl__shard_entry_check(0, 4, UINT64_MAX - 1, 128, NULL), SL_ECORRUPT);
    cr_assert_eq(sl__shard_entry_check(0, SL__SHARD_EMPTY, 5, 128, NULL), SL_ECORRUPT,
                 "half a sentinel is not empty");
}

static void
check_builder_and_index(bool at_start)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_sharded(s, at_start, "none");
    const struct sl__meta *m = &a->meta;
    cr_assert_eq(m->n_per_shard, 4);
    cr_assert_eq(m->index_bytes, 4 * 16 + 4);
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    struct sl_buf out = SL_BUF_INIT;
    uint64_t entries[8], back[8];
    struct sl__shard_builder b;
    cr_assert_eq(sl__shard_builder_init(&b, m, &out, entries, NULL), SL_OK);
    cr_assert_eq(sl__shard_builder_add(&b, 2, (const uint8_t *)"two", 3, NULL), SL_OK);
    cr_assert_eq(sl__shard_builder_add(&b, 0, (const uint8_t *)"zero!", 5, NULL), SL_OK);
    bool empty;
    cr_assert_eq(sl__shard_builder_finish(&b, ctx, &empty, NULL), SL_OK);
    cr_assert_not(empty);
    cr_assert_eq(out.size, 8 + 68);
    uint64_t off;
    cr_assert_eq(sl__shard_index_range(m, out.size, &off, NULL), SL_OK);
    cr_assert_eq(off, at_start ? 0 : 8);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__shard_index_decode(m, out.data + off, 68, out.size, back, ctx, &err), SL_OK,
                 "%s", err.text);
    uint64_t base = at_start ? 68 : 0;
    cr_assert(back[4] == base && back[5] == 3, "entry 2 at %llu", (unsigned long long)back[4]);
    cr_assert(back[0] == base + 3 && back[1] == 5);
    cr_assert(back[2] == SL__SHARD_EMPTY && back[3] == SL__SHARD_EMPTY);
    cr_assert(memcmp(out.data + back[0], "zero!", 5) == 0);
    /* The stored index is little-endian uint64 pairs plus a crc32c. */
    uint64_t first;
    memcpy(&first, out.data + off + 32, 8);
    cr_assert_eq(first, base, "entry 2's offset, little-endian");
    /* Corruptions of the index. */
    out.data[off + 1] ^= 1;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__shard_index_decode(m, out.data + off, 68, out.size, back, ctx, &err),
                 SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, "shard index: crc32c mismatch"), "%s", err.text);
    out.data[off + 1] ^= 1;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__shard_index_decode(m, out.data + off, 68, 6, back, ctx, &err), SL_ECORRUPT,
                 "entries past a (claimed) shorter shard");
    cr_assert_not_null(strstr(err.text, "exceeds the shard of 6 bytes"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__shard_index_range(m, 67, &off, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, "smaller than its 68-byte index"), "%s", err.text);
    /* A builder with nothing added reports an empty shard. */
    cr_assert_eq(sl__shard_builder_init(&b, m, &out, entries, NULL), SL_OK);
    cr_assert_eq(sl__shard_builder_finish(&b, ctx, &empty, NULL), SL_OK);
    cr_assert(empty);
    sl_buf_fini(&out);
    sl_codec_ctx_destroy(ctx);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_shard, builder_and_index_with_the_index_at_the_end) { check_builder_and_index(false); }
Test(io_shard, builder_and_index_with_the_index_at_the_start) { check_builder_and_index(true); }

Test(io_shard, a_chunk_read_reads_the_index_once_then_the_chunk)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_sharded(s, false, "zstd:1");
    uint16_t chunk[16], back[16];
    fill_inner(chunk, 100);
    const uint64_t c[2] = {1, 0};
    cr_assert_eq(sl_array_write_chunk(a, c, chunk, sizeof(chunk), NULL, NULL), SL_OK);
    struct sl_store_stats before, after;
    sl_store_get_stats(s, &before);
    bool missing = true;
    cr_assert_eq(sl_array_read_chunk(a, c, back, sizeof(back), NULL, &missing, NULL), SL_OK);
    sl_store_get_stats(s, &after);
    cr_assert_not(missing);
    cr_assert(memcmp(chunk, back, sizeof(chunk)) == 0);
    cr_assert_eq(after.n_get - before.n_get, 2, "index, then the inner chunk");
    /* Its neighbour in the same shard is an empty entry. */
    const uint64_t c2[2] = {1, 1};
    cr_assert_eq(sl_array_read_chunk(a, c2, back, sizeof(back), NULL, &missing, NULL), SL_OK);
    cr_assert(missing);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(back[i], 0);
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_shard, inner_chunk_writes_keep_their_neighbours_and_empty_shards_go)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_sharded(s, true, "gzip:1");
    uint16_t chunk[16], back[16];
    const uint64_t coords[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
    for (int i = 0; i < 4; i++) {
        fill_inner(chunk, (uint16_t)(1000 * (i + 1)));
        cr_assert_eq(sl_array_write_chunk(a, coords[i], chunk, sizeof(chunk), NULL, NULL), SL_OK);
    }
    for (int i = 0; i < 4; i++) {
        fill_inner(chunk, (uint16_t)(1000 * (i + 1)));
        cr_assert_eq(sl_array_read_chunk(a, coords[i], back, sizeof(back), NULL, NULL, NULL),
                     SL_OK);
        cr_assert(memcmp(chunk, back, sizeof(chunk)) == 0, "inner chunk %d", i);
    }
    memset(chunk, 0, sizeof(chunk));
    uint64_t size = 0;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(sl_store_size(s, "a/c/0/0", &size, NULL), SL_OK, "shard still there");
        cr_assert_eq(sl_array_write_chunk(a, coords[i], chunk, sizeof(chunk), NULL, NULL), SL_OK);
    }
    cr_assert_eq(sl_store_size(s, "a/c/0/0", &size, NULL), SL_ENOTFOUND,
                 "a shard with only fill chunks is deleted");
    sl_array_unref(a);
    sl_store_unref(s);
}

/* Counts sets per key through the memory store's hook. */
struct set_counter {
    int sets;
    int shard_sets[3][3];
};

static int
count_sets(void *ctx, sl_store_op op, const char *key, size_t bytes)
{
    (void)bytes;
    struct set_counter *c = ctx;
    unsigned y, x;
    if (op == SL_STORE_OP_SET && sscanf(key, "a/c/%u/%u", &y, &x) == 2 && y < 3 && x < 3) {
        c->sets++;
        c->shard_sets[y][x]++;
    }
    return 0;
}

Test(io_shard, region_writes_write_each_shard_exactly_once)
{
    struct set_counter c = {0};
    struct sl_mem_store_opts o = SL_MEM_STORE_OPTS_DEFAULT;
    o.hook = count_sets;
    o.hook_ctx = &c;
    sl_store *s = sl_store_create_memory(&o, NULL);
    sl_array *a = make_sharded(s, false, "zstd:1");
    uint16_t data[400];
    sl_test_fill_data(data, 400, SL_DTYPE_U16, 5, false);
    for (int i = 0; i < 400; i++)
        data[i] |= 1; /* no chunk is all fill */
    struct sl_region whole = {.rank = 2, .start = {0, 0}, .stop = {20, 20}};
    cr_assert_eq(sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, NULL), SL_OK);
    cr_assert_eq(c.sets, 9, "3 x 3 shards");
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 3; x++)
            cr_assert_eq(c.shard_sets[y][x], 1, "shard %d/%d", y, x);
    /* A write across four shards rewrites those four once each. */
    memset(&c, 0, sizeof(c));
    struct sl_region part = {.rank = 2, .start = {6, 6}, .stop = {10, 10}};
    uint16_t box[16] = {1, 2, 3};
    cr_assert_eq(sl_array_write_region(a, &part, box, sizeof(box), NULL, NULL, NULL), SL_OK);
    cr_assert_eq(c.sets, 4);
    uint16_t back[400];
    cr_assert_eq(sl_array_read_region(a, &whole, back, sizeof(back), NULL, NULL, NULL), SL_OK);
    for (int y = 0; y < 20; y++)
        for (int x = 0; x < 20; x++) {
            bool in = y >= 6 && y < 10 && x >= 6 && x < 10;
            uint16_t want = in ? box[(y - 6) * 4 + (x - 6)] : data[y * 20 + x];
            cr_assert_eq(back[y * 20 + x], want, "(%d, %d)", y, x);
        }
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_shard, edge_shards_have_empty_entries_beyond_the_array)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_sharded(s, false, "none");
    uint16_t data[400];
    for (int i = 0; i < 400; i++)
        data[i] = (uint16_t)(i + 1);
    struct sl_region whole = {.rank = 2, .start = {0, 0}, .stop = {20, 20}};
    cr_assert_eq(sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, NULL), SL_OK);
    /* Shard (2, 2) covers [16, 24)^2: only inner chunk (0, 0) holds data. */
    struct sl_buf raw = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "a/c/2/2", NULL, &raw, NULL, NULL), SL_OK);
    cr_assert_eq(raw.size, 32 + 68, "one raw inner chunk (padded to 4x4) and the index");
    uint64_t e[8];
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    cr_assert_eq(sl__shard_index_decode(&a->meta, raw.data + 32, 68, raw.size, e, ctx, NULL),
                 SL_OK);
    cr_assert(e[0] == 0 && e[1] == 32);
    for (int k = 1; k < 4; k++)
        cr_assert(e[2 * k] == SL__SHARD_EMPTY && e[2 * k + 1] == SL__SHARD_EMPTY);
    /* The inner chunk is padded with the fill value beyond the array. */
    const uint16_t *inner = (const uint16_t *)raw.data;
    cr_assert_eq(inner[0], data[16 * 20 + 16]);
    cr_assert_eq(inner[4 * 3 + 3], data[19 * 20 + 19]);
    sl_codec_ctx_destroy(ctx);
    sl_buf_fini(&raw);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* Records which inner chunks the coalescing reader hands over. */
struct seen {
    int n;
    uint64_t k[16];
};

static sl_status
note_chunk(void *arg, uint64_t k, const uint8_t *bytes, size_t n, struct sl_error *err)
{
    (void)err;
    struct seen *s = arg;
    cr_assert_eq(n, 1);
    cr_assert_eq(bytes[0], (uint8_t)('a' + k), "chunk %llu's byte", (unsigned long long)k);
    s->k[s->n++] = k;
    return SL_OK;
}

Test(io_shard, nearby_byte_ranges_are_read_together)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    /* An object with three one-byte "chunks": two close, one 200 KiB away. */
    size_t size = 300 << 10;
    uint8_t *obj = calloc(size, 1);
    obj[10] = 'a';
    obj[20] = 'b';
    obj[250 << 10] = 'c';
    cr_assert_eq(sl_store_set(s, "shard", obj, size, NULL), SL_OK);
    uint64_t entries[8] = {10, 1, 20, 1, 250 << 10, 1, SL__SHARD_EMPTY, SL__SHARD_EMPTY};
    const uint64_t which[4] = {2, 3, 1, 0};
    struct sl__reader rd;
    cr_assert_eq(sl__reader_open(s, "shard", &rd, NULL), SL_OK);
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    struct seen seen = {0};
    struct sl_store_stats before, after;
    sl_store_get_stats(s, &before);
    cr_assert_eq(sl__shard_read_entries(&rd, entries, which, 4, ctx, note_chunk, &seen, NULL),
                 SL_OK);
    sl_store_get_stats(s, &after);
    cr_assert_eq(seen.n, 3, "the empty entry is skipped");
    cr_assert(seen.k[0] == 0 && seen.k[1] == 1 && seen.k[2] == 2, "in offset order");
    cr_assert_eq(after.n_get - before.n_get, 2, "a and b in one read, c in another");
    cr_assert_eq(after.bytes_read - before.bytes_read, 12);
    sl__reader_close(&rd);
    sl_codec_ctx_destroy(ctx);
    free(obj);
    sl_store_unref(s);
}

static sl_status
note_empty_chunk(void *arg, uint64_t k, const uint8_t *bytes, size_t n, struct sl_error *err)
{
    (void)err;
    int *calls = arg;
    cr_assert_not_null(bytes, "chunk %llu: an empty chunk still gets an address",
                       (unsigned long long)k);
    cr_assert_eq(n, 0);
    ++*calls;
    return SL_OK;
}

Test(io_shard, zero_length_inner_chunks_read_without_a_null_buffer)
{
    /* Found by the shard_index fuzz target: entries of length 0 made a read
     * of 0 bytes, whose scratch buffer was still NULL, and NULL + 0 is
     * undefined behaviour that UBSan reports. */
    sl_store *s = sl_store_create_memory(NULL, NULL);
    cr_assert_eq(sl_store_set(s, "shard", "0123456789", 10, NULL), SL_OK);
    const uint64_t entries[4] = {3, 0, 7, 0};
    const uint64_t which[2] = {0, 1};
    struct sl__reader rd;
    cr_assert_eq(sl__reader_open(s, "shard", &rd, NULL), SL_OK);
    sl_codec_ctx *ctx = sl_codec_ctx_create(NULL, NULL);
    int calls = 0;
    cr_assert_eq(
        sl__shard_read_entries(&rd, entries, which, 2, ctx, note_empty_chunk, &calls, NULL), SL_OK);
    cr_assert_eq(calls, 2);
    sl__reader_close(&rd);
    sl_codec_ctx_destroy(ctx);
    sl_store_unref(s);
}

Test(io_shard, region_reads_coalesce_a_shards_chunks_into_one_read)
{
    sl_store *s = sl_store_create_memory(NULL, NULL);
    sl_array *a = make_sharded(s, false, "zstd:1");
    uint16_t data[400];
    for (int i = 0; i < 400; i++)
        data[i] = (uint16_t)(i + 1);
    struct sl_region whole = {.rank = 2, .start = {0, 0}, .stop = {20, 20}};
    cr_assert_eq(sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, NULL), SL_OK);
    struct sl_store_stats before, after;
    sl_store_get_stats(s, &before);
    uint16_t back[400];
    cr_assert_eq(sl_array_read_region(a, &whole, back, sizeof(back), NULL, NULL, NULL), SL_OK);
    sl_store_get_stats(s, &after);
    cr_assert(memcmp(back, data, sizeof(data)) == 0);
    cr_assert_eq(after.n_get - before.n_get, 18, "per shard: the index and one read of chunks");
    sl_array_unref(a);
    sl_store_unref(s);
}

Test(io_shard, shards_on_disk_are_renamed_into_place_once_each)
{
    char root[4096];
    snprintf(root, sizeof(root), "%s", sl_test_tmpdir("shard-fs"));
    struct sl_fault_io fio;
    sl_fault_io_init(&fio);
    struct sl_fs_store_opts o = SL_FS_STORE_OPTS_DEFAULT;
    o.io = &fio.table;
    sl_store *s = sl_store_open_fs(root, &o, NULL);
    sl_array *a = make_sharded(s, false, "zstd:1");
    uint16_t data[400];
    for (int i = 0; i < 400; i++)
        data[i] = (uint16_t)(i + 1);
    struct sl_region whole = {.rank = 2, .start = {0, 0}, .stop = {20, 20}};
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_array_write_region(a, &whole, data, sizeof(data), NULL, NULL, NULL), SL_OK);
    cr_assert_eq(sl_fault_io_calls(&fio, SL_FAULT_RENAME), 9);
    cr_assert_eq(sl_fault_io_renames_to(&fio, "/a/c/1/1"), 1);
    /* A failing shard write leaves the old shard readable. */
    sl_fault_io_fail(&fio, SL_FAULT_WRITE, 1, ENOSPC);
    uint16_t box[16] = {7};
    struct sl_region part = {.rank = 2, .start = {0, 0}, .stop = {4, 4}};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_write_region(a, &part, box, sizeof(box), NULL, NULL, &err), SL_ENOSPC);
    cr_assert_str_eq(err.source, "a/c/0/0");
    uint16_t back[400];
    cr_assert_eq(sl_array_read_region(a, &whole, back, sizeof(back), NULL, NULL, NULL), SL_OK);
    cr_assert(memcmp(back, data, sizeof(data)) == 0);
    sl_array_unref(a);
    sl_store_unref(s);
    sl_fault_io_fini(&fio);
    sl_test_rmtree(root);
}
