/* SPDX-License-Identifier: MIT */
/*
 * Dry runs of loaded graph files (sl_graph_check_inputs): exactly the
 * stored chunks a run would read are visited, through selects, downsamples
 * and rechunks, with missing chunks, missing shards and empty inner chunks
 * reported as not stored; arrays the graph writes itself are skipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <sluice.h>

#include "testutil.h"

TestSuite(graph_load_json_dry, .timeout = 60.0);

/* A uint8 array at dir/raw.zarr of shape [20, 30, 40] in chunks of
 * [10, 10, 10] (inner chunks [5, 10, 10] in shards [10, 20, 20] when
 * sharded), every element 1. */
static void
make_raw(const char *dir, bool sharded)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/raw.zarr", dir);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(path, NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    const uint64_t shape[3] = {20, 30, 40};
    sp.rank = 3;
    for (int d = 0; d < 3; d++) {
        sp.shape[d] = shape[d];
        sp.chunk_shape[d] = sharded && d == 0 ? 5 : 10;
        sp.shard_shape[d] = sharded ? (d == 0 ? 10 : 20) : 0;
    }
    sl_array *a = sl_array_create(s, "", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    static uint8_t data[20 * 30 * 40];
    memset(data, 1, sizeof(data));
    struct sl_region all = sl_region_whole(3, shape);
    cr_assert_eq(sl_array_write_region(a, &all, data, sizeof(data), NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    sl_array_unref(a);
    sl_store_unref(s);
}

static void
remove_key(const char *dir, const char *key)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/raw.zarr/%s", dir, key);
    cr_assert_eq(unlink(path), 0, "cannot remove %s", path);
}

static sl_graph_json *
load(const char *dir, const char *text)
{
    struct sl_error rec[8];
    struct sl_graph_json_errors errors = {.errors = rec, .capacity = 8};
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    o.base_dir = dir;
    sl_graph_json *doc = sl_graph_json_load_string(text, strlen(text), NULL, &o, &errors);
    cr_assert_not_null(doc, "%s: %s", rec[0].path, rec[0].text);
    return doc;
}

/* What the callback saw. */
struct seen {
    const sl_graph *g;
    size_t n_read;      /* chunks visited */
    size_t n_missing;   /* ... not stored */
    char missing[512];  /* "node (i, j, k) " for each */
    bool ordered;       /* chunks came in C order per node */
    uint32_t last_node; /* node of the last chunk */
    uint64_t last[3];   /* its coordinates */
};

static sl_status
on_chunk(void *ctx, uint32_t node, const struct sl_chunk_key *chunk, bool stored)
{
    struct seen *s = ctx;
    if (s->n_read > 0 && node == s->last_node) {
        bool after = false;
        for (uint32_t d = 0; d < 3 && !after; d++) {
            if (chunk->idx[d] != s->last[d]) {
                after = chunk->idx[d] > s->last[d];
                break;
            }
        }
        s->ordered = s->ordered && after;
    }
    s->last_node = node;
    memcpy(s->last, chunk->idx, sizeof(s->last));
    s->n_read++;
    if (!stored) {
        struct sl_node_info info;
        cr_assert_eq(sl_graph_node_info(s->g, node, &info, NULL), SL_OK);
        char key[64];
        sl_chunk_key_format(chunk, key, sizeof(key));
        size_t len = strlen(s->missing);
        snprintf(s->missing + len, sizeof(s->missing) - len, "%s %s ", info.name, key);
        s->n_missing++;
    }
    return SL_OK;
}

static void
check(const sl_graph_json *doc, struct seen *s)
{
    memset(s, 0, sizeof(*s));
    s->g = sl_graph_json_graph(doc);
    s->ordered = true;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_check_inputs(s->g, on_chunk, s, &err), SL_OK, "%s", err.text);
    cr_assert(s->ordered, "chunks come in C order");
}

Test(graph_load_json_dry, only_the_chunks_a_selection_reads_are_checked)
{
    const char *dir = sl_test_tmpdir("dry-select");
    make_raw(dir, false);
    remove_key(dir, "c/0/1/2"); /* read by the selection */
    remove_key(dir, "c/1/0/0"); /* not read */
    sl_graph_json *doc =
        load(dir, "{\"sluice\": 1, \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"}, \"out\": "
                  "{\"path\": \"out.zarr\", \"like\": \"raw\"}},\n"
                  " \"nodes\": {\"read\": {\"op\": \"get\", \"array\": \"raw\"},\n"
                  "   \"crop\": {\"op\": \"select\", \"input\": \"read\", \"region\": [[0, 10], "
                  "[3, 17], null]},\n"
                  "   \"half\": {\"op\": \"downsample\", \"input\": \"crop\", \"factors\": [1, "
                  "2, 2]},\n"
                  "   \"write\": {\"op\": \"put\", \"input\": \"half\", \"array\": \"out\"}}}");
    struct seen s;
    check(doc, &s);
    cr_assert_eq(s.n_read, 8, "z chunk 0, y chunks 0 and 1, every x chunk: %zu", s.n_read);
    cr_assert_eq(s.n_missing, 1);
    cr_assert_str_eq(s.missing, "read (0, 1, 2) ");
    sl_graph_json_destroy(doc);
    sl_test_rmtree(dir);
}

Test(graph_load_json_dry, missing_shards_and_empty_inner_chunks_are_not_stored)
{
    const char *dir = sl_test_tmpdir("dry-shards");
    make_raw(dir, true);
    remove_key(dir, "c/1/0/1"); /* shard (1, 0, 1): inner z 2..3, y 0..1, x 2..3 */
    char path[4200];
    snprintf(path, sizeof(path), "%s/raw.zarr", dir);
    sl_store *st = sl_store_open_fs(path, NULL, NULL);
    sl_array *a = sl_array_open(st, "", NULL, NULL);
    cr_assert_not_null(a);
    static uint8_t zeros[5 * 10 * 10];
    const uint64_t inner[3] = {0, 2, 3};
    cr_assert_eq(sl_array_write_chunk(a, inner, zeros, sizeof(zeros), NULL, NULL), SL_OK,
                 "a chunk of fill values leaves its index entry empty");
    sl_array_unref(a);
    sl_store_unref(st);
    sl_graph_json *doc =
        load(dir, "{\"sluice\": 1, \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"}, \"out\": "
                  "{\"path\": \"out.zarr\", \"like\": \"raw\", \"create\": {\"chunks\": [20, 30, "
                  "40]}}},\n"
                  " \"nodes\": {\"read\": {\"op\": \"get\", \"array\": \"raw\"},\n"
                  "   \"write\": {\"op\": \"put\", \"input\": \"read\", \"array\": \"out\"}}}");
    struct seen s;
    check(doc, &s);
    cr_assert_eq(s.n_read, 4 * 3 * 4, "every inner chunk");
    cr_assert_eq(s.n_missing, 1 + 2 * 2 * 2);
    cr_assert_str_eq(s.missing, "read (0, 2, 3) read (2, 0, 2) read (2, 0, 3) read (2, 1, 2) "
                                "read (2, 1, 3) read (3, 0, 2) read (3, 0, 3) read (3, 1, 2) "
                                "read (3, 1, 3) ");
    sl_graph_json_destroy(doc);
    sl_test_rmtree(dir);
}

Test(graph_load_json_dry, arrays_the_graph_writes_are_not_checked)
{
    const char *dir = sl_test_tmpdir("dry-written");
    make_raw(dir, false);
    sl_graph_json *doc =
        load(dir, "{\"sluice\": 1, \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"},\n"
                  "  \"tmp\": {\"path\": \"tmp.zarr\", \"like\": \"raw\"},\n"
                  "  \"out\": {\"path\": \"out.zarr\", \"like\": \"raw\"}},\n"
                  " \"nodes\": {\"read\": {\"op\": \"get\", \"array\": \"raw\"},\n"
                  "   \"w1\": {\"op\": \"put\", \"input\": \"read\", \"array\": \"tmp\"},\n"
                  "   \"back\": {\"op\": \"get\", \"array\": \"tmp\"},\n"
                  "   \"w2\": {\"op\": \"put\", \"input\": \"back\", \"array\": \"out\"}}}");
    struct seen s;
    check(doc, &s);
    cr_assert_eq(s.n_read, 24, "raw's 24 chunks, not tmp's");
    cr_assert_eq(s.n_missing, 0);
    sl_graph_json_destroy(doc);
    sl_test_rmtree(dir);
}

static sl_status
stop_at_first(void *ctx, uint32_t node, const struct sl_chunk_key *chunk, bool stored)
{
    (void)node, (void)chunk, (void)stored;
    (*(int *)ctx)++;
    return SL_ECANCELED;
}

Test(graph_load_json_dry, the_callback_can_stop_and_graphs_must_be_sealed)
{
    const char *dir = sl_test_tmpdir("dry-stop");
    make_raw(dir, false);
    sl_graph_json *doc =
        load(dir, "{\"sluice\": 1, \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"}, \"out\": "
                  "{\"path\": \"out.zarr\", \"like\": \"raw\"}},\n"
                  " \"nodes\": {\"read\": {\"op\": \"get\", \"array\": \"raw\"},\n"
                  "   \"write\": {\"op\": \"put\", \"input\": \"read\", \"array\": \"out\"}}}");
    int calls = 0;
    cr_assert_eq(sl_graph_check_inputs(sl_graph_json_graph(doc), stop_at_first, &calls, NULL),
                 SL_ECANCELED);
    cr_assert_eq(calls, 1);
    sl_graph_json_destroy(doc);
    sl_graph *g = sl_graph_create(NULL, NULL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_check_inputs(g, stop_at_first, &calls, &err), SL_ESTATE);
    sl_graph_unref(g);
    sl_test_rmtree(dir);
}
