// SPDX-License-Identifier: MIT
//
// A C++ program against the public headers: every documented initializer
// (SL_ERROR_INIT, SL_BUF_INIT, the SL_*_SPEC_DEFAULT and SL_*_OPTS_DEFAULT
// macros and the functions beside them) used as a C++ user would, then a
// round trip through a memory store, an error record read back, and the
// defaults checked against what the headers document.  check_cpp.sh compiles
// it with g++ and clang++ as C++17 and C++20 with -Wall -Wextra -Wpedantic
// -Werror; meson builds and runs it with its C++ compiler as C++17 and C++20.
#include <sluice.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace
{

int failures = 0;

void
expect(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "cpp_api: %s\n", what);
        failures++;
    }
}

// Every initializer, through the macro and through its function.
void
check_defaults()
{
    struct sl_error e = SL_ERROR_INIT;
    expect(e.code == SL_OK && e.line == -1 && e.column == -1 && e.text[0] == '\0',
           "SL_ERROR_INIT is an empty record (line and column -1)");
    expect(sl_error_init().line == -1, "sl_error_init() gives line -1");
    struct sl_buf b = SL_BUF_INIT;
    expect(b.data == nullptr && b.size == 0 && b.capacity == 0, "SL_BUF_INIT is empty");
    struct sl_codec_spec c = SL_CODEC_SPEC_DEFAULT;
    expect(c.compressor == SL_COMPRESSOR_ZSTD && c.level == 1 &&
               std::strcmp(c.blosc_cname, "lz4") == 0,
           "SL_CODEC_SPEC_DEFAULT is zstd level 1, blosc lz4");
    struct sl_array_spec s = SL_ARRAY_SPEC_DEFAULT;
    expect(s.zarr_format == 3 && s.dtype == SL_DTYPE_U8 && s.codec.level == 1,
           "SL_ARRAY_SPEC_DEFAULT is Zarr v3, uint8, zstd level 1");
    struct sl_array_opts ao = SL_ARRAY_OPTS_DEFAULT;
    expect(!ao.write_fill_chunks, "SL_ARRAY_OPTS_DEFAULT skips fill chunks");
    struct sl_pool_opts po = SL_POOL_OPTS_DEFAULT;
    expect(po.n_workers == 0 && po.deque_capacity == 256, "SL_POOL_OPTS_DEFAULT");
    struct sl_plan_opts pl = SL_PLAN_OPTS_DEFAULT;
    expect(pl.max_errors == 10000 && pl.n_parts == 1, "SL_PLAN_OPTS_DEFAULT");
    struct sl_pyramid_opts py = SL_PYRAMID_OPTS_DEFAULT;
    expect(py.n_levels == 1 && py.omero_percentiles[0] == SL_PYRAMID_OMERO_START &&
               py.omero_percentiles[1] == SL_PYRAMID_OMERO_END && py.level.zarr_format == 3,
           "SL_PYRAMID_OPTS_DEFAULT");
    struct sl_fs_store_opts fs = SL_FS_STORE_OPTS_DEFAULT;
    expect(fs.create && fs.direct_writes && fs.read_ahead_bytes == (uint64_t)32 << 20,
           "SL_FS_STORE_OPTS_DEFAULT");
    struct sl_mem_store_opts ms = SL_MEM_STORE_OPTS_DEFAULT;
    expect(ms.hook == nullptr, "SL_MEM_STORE_OPTS_DEFAULT");
    struct sl_custom_store_opts cs = SL_CUSTOM_STORE_OPTS_DEFAULT;
    expect(cs.io_concurrency == 64, "SL_CUSTOM_STORE_OPTS_DEFAULT");
    struct sl_http_store_opts hs = SL_HTTP_STORE_OPTS_DEFAULT;
    expect(hs.max_attempts == 10 && hs.connect_timeout_s == 5, "SL_HTTP_STORE_OPTS_DEFAULT");
    struct sl_s3_store_opts s3 = SL_S3_STORE_OPTS_DEFAULT;
    expect(s3.conditional == SL_S3_CONDITIONAL_AUTO, "SL_S3_STORE_OPTS_DEFAULT");
    struct sl_url_store_opts us = SL_URL_STORE_OPTS_DEFAULT;
    expect(us.fs.create && us.http.io_concurrency == 64 &&
               us.s3.multipart_bytes == (uint64_t)64 << 20,
           "SL_URL_STORE_OPTS_DEFAULT holds the three stores' defaults");
    struct sl_batch_opts bo = SL_BATCH_OPTS_DEFAULT;
    expect(bo.coalesce_gap_bytes == (uint64_t)1 << 20, "SL_BATCH_OPTS_DEFAULT");
    struct sl_journal_opts jo = SL_JOURNAL_OPTS_DEFAULT;
    expect(jo.sync_interval_s == 2.0 && !jo.resume, "SL_JOURNAL_OPTS_DEFAULT");
    struct sl_txn_opts to = SL_TXN_OPTS_DEFAULT;
    expect(to.flush_full && to.clean_leftovers, "SL_TXN_OPTS_DEFAULT");
    struct sl_stats_opts so = SL_STATS_OPTS_DEFAULT;
    expect(so.bins == 0, "SL_STATS_OPTS_DEFAULT");
    struct sl_graph_json_opts go = SL_GRAPH_JSON_OPTS_DEFAULT;
    expect(go.new_arrays == SL_GRAPH_JSON_IN_MEMORY && !go.allow_plugins,
           "SL_GRAPH_JSON_OPTS_DEFAULT");
}

// An array written and read back through a memory store, and an error record.
void
check_round_trip()
{
    struct sl_error err = SL_ERROR_INIT;
    sl_store *store = sl_store_create_memory(nullptr, &err);
    expect(store != nullptr, "a memory store opens");
    if (store == nullptr)
        return;
    struct sl_array_spec spec = sl_array_spec_default();
    spec.rank = 2;
    spec.shape[0] = 6;
    spec.shape[1] = 5;
    spec.chunk_shape[0] = 4;
    spec.chunk_shape[1] = 4;
    spec.dtype = SL_DTYPE_I32;
    sl_array *a = sl_array_create(store, "a", &spec, nullptr, &err);
    expect(a != nullptr, err.text);
    if (a != nullptr) {
        std::vector<int32_t> in(30), out(30);
        for (size_t i = 0; i < in.size(); i++)
            in[i] = (int32_t)(i * 7) - 50;
        struct sl_region r = {};
        r.rank = 2;
        r.stop[0] = 6;
        r.stop[1] = 5;
        expect(sl_array_write_region(a, &r, in.data(), in.size() * 4, nullptr, nullptr, &err) ==
                   SL_OK,
               err.text);
        expect(sl_array_read_region(a, &r, out.data(), out.size() * 4, nullptr, nullptr, &err) ==
                   SL_OK,
               err.text);
        expect(in == out, "the region reads back as written");
        // A region outside the array: the status and the record agree.
        r.stop[0] = 7;
        struct sl_error e2 = SL_ERROR_INIT;
        sl_status st =
            sl_array_read_region(a, &r, out.data(), out.size() * 4, nullptr, nullptr, &e2);
        expect(st == SL_EBOUNDS && e2.code == SL_EBOUNDS && e2.text[0] != '\0',
               "a region outside the array is SL_EBOUNDS, with a message");
        sl_array_unref(a);
    }
    sl_store_unref(store);
}

} // namespace

int
main()
{
    check_defaults();
    check_round_trip();
    if (failures == 0)
        std::printf("cpp_api: every initializer and the round trip work (C++%ld)\n",
                    (long)__cplusplus / 100 % 100);
    return failures == 0 ? 0 : 1;
}
