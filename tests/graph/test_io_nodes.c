/* SPDX-License-Identifier: MIT */
/*
 * Get and put nodes on io arrays: copies between every format pair (v2, v3,
 * v3 sharded) with rechunking, missing and corrupt chunks reported per
 * chunk, input checks, and puts read back by later gets in one run.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fault_io.h"
#include "graph_test_util.h"
#include "testutil.h"

TestSuite(graph_io_nodes, .timeout = 60.0);

static sl_store *
mem_store(void)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_create_memory(NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    return s;
}

/* A float32 array of `shape` holding 0.5 * (C-order index), chunks `chunk`. */
static sl_array *
make_source(sl_store *s, const char *path, int format, const uint64_t *shape, const uint64_t *chunk,
            const uint64_t *shard)
{
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.zarr_format = format;
    spec.rank = 2;
    spec.dtype = SL_DTYPE_F32;
    for (int d = 0; d < 2; d++) {
        spec.shape[d] = shape[d];
        spec.chunk_shape[d] = chunk[d];
        spec.shard_shape[d] = shard != NULL ? shard[d] : 0;
    }
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, path, &spec, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    return a;
}

static void
fill_source(sl_array *a)
{
    const uint64_t *shape = sl_array_shape(a);
    size_t n = (size_t)(shape[0] * shape[1]);
    float *data = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        data[i] = 0.5f * (float)i;
    struct sl_region all = sl_region_whole(2, shape);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_write_region(a, &all, data, n * sizeof(float), NULL, NULL, &err), SL_OK,
                 "%s", err.text);
    free(data);
}

/* Check that 2-D float array `a` holds what fill_source writes. */
static void
expect_filled(const sl_array *a)
{
    const uint64_t *shape = sl_array_shape(a);
    size_t n = (size_t)(shape[0] * shape[1]);
    float *back = malloc(n * sizeof(float));
    struct sl_region all = sl_region_whole(2, shape);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_region(a, &all, back, n * sizeof(float), NULL, NULL, &err), SL_OK,
                 "%s", err.text);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(back[i], 0.5f * (float)i, "element %zu", i);
    free(back);
}

static void
digest(const sl_array *a, uint8_t out[SL_SHA256_BYTES])
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_checksum(a, out, NULL, &err), SL_OK, "%s", err.text);
}

/* Copy `src` into `dst` with a get -> put graph; returns the run status. */
static sl_status
copy(sl_pool *pool, sl_array *src, sl_array *dst, const struct sl_plan_opts *opts,
     sl_plan **plan_out, uint32_t *put_out, struct sl_error *err)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t get, put;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, err), SL_OK, "%s", err->text);
    cr_assert_eq(sl_graph_add_put(g, "dst", get, dst, &put, err), SL_OK, "%s", err->text);
    cr_assert_eq(sl_graph_seal(g, err), SL_OK, "%s", err->text);
    sl_plan *plan = sl_plan_create(g, opts, err);
    cr_assert_not_null(plan, "%s", err->text);
    sl_graph_unref(g);
    sl_status st = sl_plan_run(plan, pool, err);
    if (plan_out != NULL) {
        *plan_out = plan;
        *put_out = put;
    } else {
        sl_plan_destroy(plan);
    }
    return st;
}

Test(graph_io_nodes, copies_between_every_format_pair)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = mem_store();
    const uint64_t shape[] = {45, 37};
    struct {
        int format;
        uint64_t chunk[2];
        uint64_t shard[2];
    } layouts[] = {
        {2, {8, 10}, {0, 0}},
        {3, {16, 16}, {0, 0}},
        {3, {5, 6}, {10, 18}},
    };
    char path[64];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "src%zu", i);
        sl_array *src = make_source(s, path, layouts[i].format, shape, layouts[i].chunk,
                                    layouts[i].shard[0] ? layouts[i].shard : NULL);
        fill_source(src);
        uint8_t want[SL_SHA256_BYTES];
        digest(src, want);
        for (size_t j = 0; j < 3; j++) {
            snprintf(path, sizeof(path), "dst%zu_%zu", i, j);
            sl_array *dst = make_source(s, path, layouts[j].format, shape, layouts[j].chunk,
                                        layouts[j].shard[0] ? layouts[j].shard : NULL);
            struct sl_error err = SL_ERROR_INIT;
            cr_assert_eq(copy(pool, src, dst, NULL, NULL, NULL, &err), SL_OK, "%zu -> %zu: %s", i,
                         j, err.text);
            uint8_t got[SL_SHA256_BYTES];
            digest(dst, got);
            cr_assert_arr_eq(got, want, SL_SHA256_BYTES, "copy %zu -> %zu differs", i, j);
            sl_array_unref(dst);
        }
        sl_array_unref(src);
    }
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

Test(graph_io_nodes, missing_chunks_fill_or_fail_per_chunk)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = mem_store();
    const uint64_t shape[] = {20, 20}, chunk[] = {10, 10};
    sl_array *src = make_source(s, "src", 3, shape, chunk, NULL);
    fill_source(src);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_delete(s, "src/c/1/0", &err), SL_OK, "%s", err.text);
    sl_array *dst = make_source(s, "dst", 3, shape, chunk, NULL);
    cr_assert_eq(copy(pool, src, dst, NULL, NULL, NULL, &err), SL_OK, "%s", err.text);

    struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
    o.missing_is_error = true;
    sl_plan *plan;
    uint32_t put;
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(copy(pool, src, dst, &o, &plan, &put, &e2), SL_ENOTFOUND);
    cr_assert_not_null(strstr(e2.text, "chunk (1, 0) of array memory store key \"src\" is absent"),
                       "%s", e2.text);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, put, &ps, NULL), SL_OK);
    cr_assert_eq(ps.codes[2], SL_ENOTFOUND);
    cr_assert_eq(ps.n_ok, 3);
    sl_plan_destroy(plan);
    sl_array_unref(src);
    sl_array_unref(dst);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

/* A getter of 2-D float32 chunks holding 0.5 * (C-order index) of a 20 x 20
 * array, which says chunk (1, 0) is absent. */
static sl_status
getter_losing_a_chunk(void *ctx, const char *array_name, const struct sl_region *region,
                      struct sl_block *out, struct sl_error *err)
{
    (void)ctx, (void)array_name, (void)err;
    if (out->chunk.idx[0] == 1 && out->chunk.idx[1] == 0)
        return SL_EABSENT;
    float *p = out->view.data;
    for (uint64_t i = region->start[0]; i < region->stop[0]; i++)
        for (uint64_t j = region->start[1]; j < region->stop[1]; j++)
            *p++ = 0.5f * (float)(i * 20 + j);
    return SL_OK;
}

Test(graph_io_nodes, absent_getter_chunks_take_the_fill_value_or_fail)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = mem_store();
    const uint64_t shape[] = {20, 20}, chunk[] = {10, 10};
    const float fill = -7.25f;
    const struct sl_getter_desc gd = {.array_name = "dumps",
                                      .dtype = SL_DTYPE_F32,
                                      .rank = 2,
                                      .shape = shape,
                                      .chunk_shape = chunk,
                                      .fn = getter_losing_a_chunk,
                                      .fill_value = &fill};
    for (int strict = 0; strict < 2; strict++) {
        sl_array *dst = make_source(s, strict ? "strict" : "lenient", 3, shape, chunk, NULL);
        sl_graph *g = sl_graph_create(NULL, NULL);
        uint32_t get, put;
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_graph_add_getter(g, "dumps", &gd, &get, &err), SL_OK, "%s", err.text);
        cr_assert_eq(sl_graph_add_put(g, "dst", get, dst, &put, &err), SL_OK, "%s", err.text);
        cr_assert_eq(sl_graph_seal(g, &err), SL_OK, "%s", err.text);
        struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
        o.missing_is_error = strict;
        sl_plan *plan = sl_plan_create(g, &o, &err);
        cr_assert_not_null(plan, "%s", err.text);
        sl_status st = sl_plan_run(plan, pool, &err);
        struct sl_put_status ps;
        cr_assert_eq(sl_plan_put_status(plan, put, &ps, NULL), SL_OK);
        float back[400];
        struct sl_region all = sl_region_whole(2, shape);
        struct sl_error e2 = SL_ERROR_INIT;
        cr_assert_eq(sl_array_read_region(dst, &all, back, sizeof back, NULL, NULL, &e2), SL_OK,
                     "%s", e2.text);
        if (!strict) {
            cr_assert_eq(st, SL_OK, "%s", err.text);
            cr_assert_eq(ps.n_ok, 4);
            for (size_t i = 0; i < 400; i++) {
                bool lost = i / 20 >= 10 && i % 20 < 10;
                cr_assert_eq(back[i], lost ? fill : 0.5f * (float)i, "element %zu", i);
            }
        } else {
            cr_assert_eq(st, SL_ENOTFOUND, "%s", err.text);
            cr_assert_not_null(strstr(err.text, "chunk (1, 0) of getter \"dumps\" is absent"), "%s",
                               err.text);
            cr_assert_eq(ps.codes[2], SL_ENOTFOUND);
            cr_assert_eq(ps.n_ok, 3);
            /* The failed chunk was not written: readers see the array's fill (0). */
            cr_assert_eq(back[10 * 20], 0.0f);
            cr_assert_eq(back[10 * 20 + 9], 0.0f);
            cr_assert_eq(back[1], 0.5f, "the other chunks are written");
        }
        sl_plan_destroy(plan);
        sl_graph_unref(g);
        sl_array_unref(dst);
    }
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

Test(graph_io_nodes, corrupt_chunk_fails_alone_naming_the_key)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = mem_store();
    const uint64_t shape[] = {20, 20}, chunk[] = {10, 10};
    sl_array *src = make_source(s, "src", 3, shape, chunk, NULL);
    fill_source(src);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, "src/c/0/1", "garbage", 7, &err), SL_OK, "%s", err.text);
    sl_array *dst = make_source(s, "dst", 3, shape, chunk, NULL);
    sl_plan *plan;
    uint32_t put;
    cr_assert_eq(copy(pool, src, dst, NULL, &plan, &put, &err), SL_ECORRUPT);
    cr_assert_not_null(strstr(err.text, "src/c/0/1"), "%s", err.text);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, put, &ps, NULL), SL_OK);
    cr_assert_eq(ps.codes[1], SL_ECORRUPT);
    cr_assert_eq(ps.n_ok, 3, "the other chunks are written");
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_gt(sum.bytes_read, 0);
    cr_assert_gt(sum.bytes_written, 0);
    sl_plan_destroy(plan);
    sl_array_unref(src);
    sl_array_unref(dst);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

Test(graph_io_nodes, put_checks_dtype_and_shape)
{
    sl_store *s = mem_store();
    const uint64_t shape[] = {20, 20}, chunk[] = {10, 10}, other[] = {20, 21};
    sl_array *src = make_source(s, "src", 3, shape, chunk, NULL);
    sl_array *wide = make_source(s, "wide", 3, other, chunk, NULL);
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = 2;
    spec.dtype = SL_DTYPE_U8;
    memcpy(spec.shape, shape, sizeof(shape));
    memcpy(spec.chunk_shape, chunk, sizeof(chunk));
    sl_array *bytes = sl_array_create(s, "bytes", &spec, NULL, NULL);
    cr_assert_not_null(bytes);
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t get;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_put(g, "p", get, bytes, NULL, &err), SL_EINVAL);
    cr_assert_not_null(
        strstr(err.text, "is float32 but array memory store key \"bytes\" stores uint8"), "%s",
        err.text);
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_put(g, "p", get, wide, NULL, &e2), SL_EINVAL);
    cr_assert_not_null(
        strstr(e2.text, "shape [20, 20] but array memory store key \"wide\" has shape [20, 21]"),
        "%s", e2.text);
    sl_graph_unref(g);
    sl_array_unref(src);
    sl_array_unref(wide);
    sl_array_unref(bytes);
    sl_store_unref(s);
}

/*
 * The sealed graph: copy [32, 32] float32 `src` into `mid`, then read
 * `mid` back, downsample it 2x2 by mean and put it into a new [16, 16]
 * array "low" of 8x8 chunks (`*low`); `*low_put` (may be NULL) is that
 * put's node.  Two phases: the get of `mid` waits for its put.
 */
static sl_graph *
copy_then_downsample(sl_store *s, sl_array *src, sl_array *mid, sl_array **low, uint32_t *low_put)
{
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = 2;
    spec.dtype = SL_DTYPE_F32;
    spec.shape[0] = spec.shape[1] = 16;
    spec.chunk_shape[0] = spec.chunk_shape[1] = 8;
    *low = sl_array_create(s, "low", &spec, NULL, NULL);
    cr_assert_not_null(*low);
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t a, b, ds, put;
    cr_assert_eq(sl_graph_add_get(g, "read_src", src, &a, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_put(g, "write_mid", a, mid, NULL, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_get(g, "read_mid", mid, &b, NULL), SL_OK);
    const struct sl_op_desc *d = NULL;
    cr_assert_eq(sl_op_lookup("downsample", &d, NULL), SL_OK);
    struct sl_op_args args;
    memset(&args, 0, sizeof(args));
    cr_assert_eq(sl_op_args_set_factors(&args, d, "factors", 2, (const uint64_t[]){2, 2}, NULL),
                 SL_OK);
    struct sl_op op;
    cr_assert_eq(sl_op_bind(&op, d, &args, SL_DTYPE_F32, 2, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_op(g, "ds", b, &op, NULL, &ds, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_put(g, "write_low", ds, *low, &put, NULL), SL_OK);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    if (low_put != NULL)
        *low_put = put;
    return g;
}

/* An uncompressed float32 [512, 1024] array in shards of [512, 512]: 1 MiB
 * objects, large enough for the filesystem store's direct writes. */
static sl_array *
make_big_sharded(sl_store *s, const char *path)
{
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = 2;
    spec.dtype = SL_DTYPE_F32;
    spec.codec.compressor = SL_COMPRESSOR_NONE;
    spec.shape[0] = 512, spec.shape[1] = 1024;
    spec.chunk_shape[0] = spec.chunk_shape[1] = 128;
    spec.shard_shape[0] = spec.shard_shape[1] = 512;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, path, &spec, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    return a;
}

/* A put whose array a later get reads writes through the page cache (the
 * get would otherwise read it back from the device); the last put writes
 * its shards directly.  Counted through the I/O table's O_DIRECT opens. */
Test(graph_io_nodes, arrays_read_back_later_are_written_through_the_page_cache)
{
    struct sl_fault_io fio;
    sl_fault_io_init(&fio);
    const char *root = sl_test_tmpdir("graph-reread");
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.io = &fio.table;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *fs = sl_store_open_fs(root, &so, &err);
    cr_assert_not_null(fs, "%s", err.text);
    sl_store *m = mem_store();
    const uint64_t shape[] = {512, 1024}, chunk[] = {128, 128};
    sl_array *src = make_source(m, "src", 3, shape, chunk, NULL);
    fill_source(src);
    sl_array *mid = make_big_sharded(fs, "mid"), *out = make_big_sharded(fs, "out");
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t a, b;
    cr_assert_eq(sl_graph_add_get(g, "read_src", src, &a, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_put(g, "write_mid", a, mid, NULL, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_get(g, "read_mid", mid, &b, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_put(g, "write_out", b, out, NULL, NULL), SL_OK);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    cr_assert_not_null(plan, "%s", err.text);
    sl_pool *pool = sl_test_pool(2);
    sl_fault_io_reset(&fio);
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    cr_assert_eq(
        sl_fault_io_renames_to(&fio, "/mid/c/0/0") + sl_fault_io_renames_to(&fio, "/mid/c/0/1"), 2);
    cr_assert_eq(
        sl_fault_io_renames_to(&fio, "/out/c/0/0") + sl_fault_io_renames_to(&fio, "/out/c/0/1"), 2);
    if (sl_test_takes_direct(root))
        cr_assert_eq(atomic_load(&fio.n_direct_opens), 2,
                     "out's 2 shards directly, none of mid's: %llu",
                     (unsigned long long)atomic_load(&fio.n_direct_opens));
    else
        cr_log_info("%s refuses O_DIRECT: only the data is checked", root);
    expect_filled(out);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    sl_array_unref(src);
    sl_array_unref(mid);
    sl_array_unref(out);
    sl_store_unref(m);
    sl_store_unref(fs);
    sl_fault_io_fini(&fio);
    sl_test_rmtree(root);
}

/* posix_fadvise(WILLNEED) calls seen by count_willneed. */
static _Atomic int n_willneed;

static int
count_willneed(void *ctx, int fd, uint64_t offset, uint64_t length)
{
    atomic_fetch_add(&n_willneed, 1);
    return sl_io_table_default()->willneed(ctx, fd, offset, length);
}

/* A get from a filesystem store has each chunk file read ahead as its task
 * is emitted: one hint per chunk, whatever the pool's size; the copy is
 * right. */
Test(graph_io_nodes, gets_from_files_read_their_chunks_ahead)
{
    struct sl_io_table t = *sl_io_table_default();
    t.willneed = count_willneed;
    const char *root = sl_test_tmpdir("graph-readahead");
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.io = &t;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *fs = sl_store_open_fs(root, &so, &err);
    cr_assert_not_null(fs, "%s", err.text);
    sl_store *m = mem_store();
    const uint64_t shape[] = {64, 48}, chunk[] = {8, 16};
    sl_array *src = make_source(fs, "src", 2, shape, chunk, NULL);
    fill_source(src);
    sl_array *dst = make_source(m, "dst", 3, shape, chunk, NULL);
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t a;
    cr_assert_eq(sl_graph_add_get(g, "read_src", src, &a, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_put(g, "write_dst", a, dst, NULL, NULL), SL_OK);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    cr_assert_not_null(plan, "%s", err.text);
    sl_pool *pool = sl_test_pool(2);
    atomic_store(&n_willneed, 0);
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    cr_assert_eq(atomic_load(&n_willneed), (64 / 8) * (48 / 16), "%d hints",
                 atomic_load(&n_willneed));
    expect_filled(dst);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    sl_array_unref(src);
    sl_array_unref(dst);
    sl_store_unref(m);
    sl_store_unref(fs);
    sl_test_rmtree(root);
}

/* A put and a later get of the same array run in two phases; a cycle is refused. */
Test(graph_io_nodes, gets_of_written_arrays_wait_for_their_put)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = mem_store();
    const uint64_t shape[] = {32, 32}, chunk[] = {8, 8}, half[] = {16, 16};
    sl_array *src = make_source(s, "src", 3, shape, chunk, NULL);
    fill_source(src);
    sl_array *mid = make_source(s, "mid", 3, shape, chunk, NULL);
    sl_array *low;
    sl_graph *g = copy_then_downsample(s, src, mid, &low, NULL);
    struct sl_error err = SL_ERROR_INIT;
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    cr_assert_not_null(plan, "%s", err.text);
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_OK, "%s", err.text);
    float out[16 * 16];
    struct sl_region all = sl_region_whole(2, half);
    cr_assert_eq(sl_array_read_region(low, &all, out, sizeof(out), NULL, NULL, &err), SL_OK);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            float want = 0.5f * (float)((2 * i) * 32 + 2 * j) + 0.25f * 0.5f * (1 + 32 + 33);
            cr_assert_float_eq(out[i * 16 + j], want, 1e-3, "(%d, %d)", i, j);
        }
    sl_plan_destroy(plan);
    sl_graph_unref(g);

    /* Reading what the same run writes from what it reads: refused. */
    sl_graph *cyc = sl_graph_create(NULL, NULL);
    uint32_t r;
    cr_assert_eq(sl_graph_add_get(cyc, "r", mid, &r, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_put(cyc, "w", r, mid, NULL, NULL), SL_OK);
    cr_assert_eq(sl_graph_seal(cyc, NULL), SL_OK);
    struct sl_error e3 = SL_ERROR_INIT;
    cr_assert_null(sl_plan_create(cyc, NULL, &e3));
    cr_assert_not_null(strstr(e3.text, "a cycle through storage"), "%s", e3.text);
    sl_graph_unref(cyc);
    sl_array_unref(src);
    sl_array_unref(mid);
    sl_array_unref(low);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

/*
 * Chunks a put failed to write are not read back by a later get of the same
 * run (they would read as the fill value): the reading chunks fail as
 * upstream.  Chunks the put elided because they equal the fill value are
 * not missing, even with missing_is_error.
 */
Test(graph_io_nodes, later_gets_see_failed_puts_as_upstream)
{
    sl_pool *pool = sl_test_pool(2);
    sl_store *s = mem_store();
    const uint64_t shape[] = {32, 32}, chunk[] = {8, 8};
    /* src's fill value is -1, so its chunk (0, 0) of zeros is stored, while
     * mid (fill value 0) elides it; src's chunk (1, 2) is corrupt. */
    struct sl_array_spec src_spec = SL_ARRAY_SPEC_DEFAULT;
    src_spec.rank = 2;
    src_spec.dtype = SL_DTYPE_F32;
    memcpy(src_spec.shape, shape, sizeof(shape));
    memcpy(src_spec.chunk_shape, chunk, sizeof(chunk));
    const float minus_one = -1.0f;
    src_spec.fill_value = &minus_one;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *src = sl_array_create(s, "src", &src_spec, NULL, &err);
    cr_assert_not_null(src, "%s", err.text);
    fill_source(src);
    float zeros[64] = {0};
    cr_assert_eq(
        sl_array_write_chunk(src, (const uint64_t[]){0, 0}, zeros, sizeof(zeros), NULL, &err),
        SL_OK, "%s", err.text);
    cr_assert_eq(sl_store_set(s, "src/c/1/2", "garbage", 7, &err), SL_OK, "%s", err.text);
    sl_array *mid = make_source(s, "mid", 3, shape, chunk, NULL);
    sl_array *low;
    uint32_t low_put;
    sl_graph *g = copy_then_downsample(s, src, mid, &low, &low_put);
    struct sl_plan_opts o = SL_PLAN_OPTS_DEFAULT;
    o.missing_is_error = true;
    sl_plan *plan = sl_plan_create(g, &o, &err);
    cr_assert_not_null(plan, "%s", err.text);
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_ECORRUPT, "%s", err.text);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, low_put, &ps, NULL), SL_OK);
    /* low chunk (0, 1) reads mid chunks (0..1, 2..3), among them (1, 2). */
    cr_assert_eq(ps.codes[1], SL_EUPSTREAM);
    cr_assert_eq(ps.n_ok, 3, "the chunk over the elided fill chunk is fine");
    size_t n_errors;
    const struct sl_chunk_error *errs = sl_plan_errors(plan, &n_errors);
    bool named = false;
    for (size_t i = 0; i < n_errors; i++)
        named |= errs[i].node == low_put &&
                 strstr(errs[i].text, "put \"write_mid\" did not write chunk (1, 2)") != NULL;
    cr_assert(named, "the upstream failure names the put and the chunk");
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_array_unref(src);
    sl_array_unref(mid);
    sl_array_unref(low);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

/* Fails every set of one key with ENOSPC and counts sets. */
struct set_hook {
    const char *fail_key;
    _Atomic unsigned sets;
};

static int
hook_fail_key(void *ctx, sl_store_op op, const char *key, size_t bytes)
{
    struct set_hook *h = ctx;
    (void)bytes;
    if (op != SL_STORE_OP_SET)
        return 0;
    atomic_fetch_add(&h->sets, 1);
    return h->fail_key != NULL && strcmp(key, h->fail_key) == 0 ? -ENOSPC : 0;
}

/* A put into a sharded array writes each shard once; a shard whose write
 * fails fails every chunk in it, though each was staged ok. */
Test(graph_io_nodes, sharded_put_writes_each_shard_once_and_reports_its_failure)
{
    sl_pool *pool = sl_test_pool(2);
    struct set_hook h = {.fail_key = NULL};
    struct sl_mem_store_opts mo = SL_MEM_STORE_OPTS_DEFAULT;
    mo.hook = hook_fail_key;
    mo.hook_ctx = &h;
    sl_store *s = sl_store_create_memory(&mo, NULL);
    cr_assert_not_null(s);
    const uint64_t shape[] = {40, 30}, chunk[] = {5, 5}, shard[] = {20, 15};
    sl_array *src = make_source(s, "src", 3, shape, (const uint64_t[]){8, 30}, NULL);
    fill_source(src);
    sl_array *dst = make_source(s, "dst", 3, shape, chunk, shard);
    atomic_store(&h.sets, 0);
    struct sl_error err = SL_ERROR_INIT;
    sl_plan *plan;
    uint32_t put;
    cr_assert_eq(copy(pool, src, dst, NULL, &plan, &put, &err), SL_OK, "%s", err.text);
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_eq(sum.objects_written, 4, "%llu writes for 4 shards",
                 (unsigned long long)sum.objects_written);
    cr_assert_eq(atomic_load(&h.sets), 4);
    sl_plan_destroy(plan);

    h.fail_key = "dst/c/1/0";
    struct sl_error e2 = SL_ERROR_INIT;
    cr_assert_eq(copy(pool, src, dst, NULL, &plan, &put, &e2), SL_ENOSPC);
    cr_assert_not_null(strstr(e2.text, "shard dst/c/1/0 not written"), "%s", e2.text);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, put, &ps, NULL), SL_OK);
    for (uint64_t k = 0; k < ps.grid->n_total; k++) {
        uint64_t c[2];
        sl_grid_coords_of(ps.grid, k, c);
        bool in_shard = c[0] >= 4 && c[1] < 3;
        cr_assert_eq(ps.codes[k], in_shard ? SL_ENOSPC : SL_OK, "chunk (%llu, %llu): %s",
                     (unsigned long long)c[0], (unsigned long long)c[1],
                     sl_status_name((sl_status)ps.codes[k]));
    }
    cr_assert_eq(ps.n_failed, 12);
    sl_plan_destroy(plan);
    sl_array_unref(src);
    sl_array_unref(dst);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}

/* Lists no chunk: out of memory, as a listing that allocated could be. */
static sl_status
unit_chunks_fail(const sl_array *a, const uint64_t *unit, struct sl_array_iter *it,
                 struct sl_error *err)
{
    (void)a, (void)unit, (void)it;
    return sl_error_set(err, SL_ENOMEM, NULL, "no memory to list the shard's chunks");
}

/* A shard write fails and its chunks cannot be listed: the failure is not
 * lost, no chunk of the shard is reported ok, and the run and its summary
 * carry the shard's status; the messages name both errors. */
Test(graph_io_nodes, failed_shard_whose_chunks_cannot_be_listed_fails_the_put)
{
    sl_pool *pool = sl_test_pool(2);
    struct set_hook h = {.fail_key = NULL};
    struct sl_mem_store_opts mo = SL_MEM_STORE_OPTS_DEFAULT;
    mo.hook = hook_fail_key;
    mo.hook_ctx = &h;
    sl_store *s = sl_store_create_memory(&mo, NULL);
    cr_assert_not_null(s);
    const uint64_t shape[] = {40, 30}, chunk[] = {5, 5}, shard[] = {20, 15};
    sl_array *src = make_source(s, "src", 3, shape, (const uint64_t[]){8, 30}, NULL);
    fill_source(src);
    sl_array *dst = make_source(s, "dst", 3, shape, chunk, shard);
    h.fail_key = "dst/c/1/0";
    struct sl_error err = SL_ERROR_INIT;
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t get, put;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_add_put(g, "dst", get, dst, &put, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_seal(g, &err), SL_OK, "%s", err.text);
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    cr_assert_not_null(plan, "%s", err.text);
    sl_graph_unref(g);
    plan->unit_chunks = unit_chunks_fail;
    cr_assert_eq(sl_plan_run(plan, pool, &err), SL_ENOSPC, "%s", err.text);
    cr_assert_not_null(strstr(err.text, "shard (1, 0) not written"), "%s", err.text);
    struct sl_run_summary sum;
    sl_plan_summary(plan, &sum);
    cr_assert_eq(sum.first_error, SL_ENOSPC);
    cr_assert_gt(sum.n_failed, 0);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, put, &ps, NULL), SL_OK);
    for (uint64_t k = 0; k < ps.grid->n_total; k++) {
        uint64_t c[2];
        sl_grid_coords_of(ps.grid, k, c);
        if (c[0] >= 4 && c[1] < 3)
            cr_assert_eq(ps.codes[k], SL_ENOSPC, "chunk (%llu, %llu) of the failed shard: %s",
                         (unsigned long long)c[0], (unsigned long long)c[1],
                         sl_status_name((sl_status)ps.codes[k]));
    }
    size_t n_errors;
    const struct sl_chunk_error *errs = sl_plan_errors(plan, &n_errors);
    cr_assert_gt(n_errors, 0);
    cr_assert_not_null(strstr(errs[0].text, "ENOSPC"), "%s", errs[0].text);
    cr_assert_not_null(strstr(errs[0].text, "ENOMEM: no memory to list"), "%s", errs[0].text);
    sl_plan_destroy(plan);
    sl_array_unref(src);
    sl_array_unref(dst);
    sl_store_unref(s);
    sl_pool_destroy(pool);
}
