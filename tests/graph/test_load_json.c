/* SPDX-License-Identifier: MIT */
/*
 * The JSON graph loader's behaviour beyond single errors (those are the
 * corpus, test_load_json_corpus.c): every error reported, the list's
 * limit, size and depth limits, run options, nothing created unless asked
 * and only after the whole file is valid, specs derived from writers and
 * "like", overwriting, outside paths, nodes in lists, the arrays summary,
 * running a loaded graph end to end, and allocation failures.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <sluice.h>

#include "alloc_sweep.h"
#include "testutil.h"

TestSuite(graph_load_json, .timeout = 60.0);

#define MAX_ERRORS 20

/* A load's error list with its own records. */
struct errs {
    struct sl_error rec[MAX_ERRORS];
    struct sl_graph_json_errors list;
};

static struct sl_graph_json_errors *
errs_init(struct errs *e, size_t capacity)
{
    memset(e, 0, sizeof(*e));
    e->list = (struct sl_graph_json_errors){.errors = e->rec, .capacity = capacity};
    return &e->list;
}

static sl_graph_json *
load_text(const char *dir, const char *text, bool create, struct errs *e)
{
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    o.base_dir = dir;
    o.new_arrays = create ? SL_GRAPH_JSON_CREATE : SL_GRAPH_JSON_IN_MEMORY;
    return sl_graph_json_load_string(text, strlen(text), "test.json", &o, errs_init(e, MAX_ERRORS));
}

static bool
path_exists(const char *dir, const char *name)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

/* A uint16 array at dir/name of `shape` (3-d) and `chunks`, holding
 * element (z, y, x) = z * 100 + y + x when `fill`; fill value 7. */
static void
make_array(const char *dir, const char *name, const uint64_t *shape, const uint64_t *chunks,
           const uint64_t *shards, bool fill)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(path, NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    const uint16_t fv = 7;
    sp.rank = 3;
    sp.dtype = SL_DTYPE_U16;
    sp.fill_value = &fv;
    sp.attributes_json = "{\"origin\":\"test\"}";
    static const char *const names[3] = {"z", "y", "x"};
    for (int d = 0; d < 3; d++) {
        sp.shape[d] = shape[d];
        sp.chunk_shape[d] = chunks[d];
        sp.shard_shape[d] = shards != NULL ? shards[d] : 0;
        sp.dimension_names[d] = names[d];
    }
    sl_array *a = sl_array_create(s, "", &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    if (fill) {
        size_t n = (size_t)(shape[0] * shape[1] * shape[2]);
        uint16_t *data = malloc(n * sizeof(uint16_t));
        for (uint64_t z = 0, i = 0; z < shape[0]; z++)
            for (uint64_t y = 0; y < shape[1]; y++)
                for (uint64_t x = 0; x < shape[2]; x++)
                    data[i++] = (uint16_t)(z * 100 + y + x);
        struct sl_region all = sl_region_whole(3, shape);
        cr_assert_eq(sl_array_write_region(a, &all, data, n * 2, NULL, NULL, &err), SL_OK, "%s",
                     err.text);
        free(data);
    }
    sl_array_unref(a);
    sl_store_unref(s);
}

static sl_array *
open_array(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(path, NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    sl_array *a = sl_array_open(s, "", NULL, &err);
    cr_assert_not_null(a, "%s: %s", name, err.text);
    sl_store_unref(s);
    return a;
}

/* Run the loaded document's graph on a pool of `workers` (unpinned); the
 * run's status, and its plan in *plan_out (to destroy) when not NULL. */
static sl_status
run_doc_plan(sl_graph_json *doc, unsigned workers, sl_plan **plan_out)
{
    struct sl_pool_opts po = SL_POOL_OPTS_DEFAULT;
    po.n_workers = workers;
    po.pin = SL_PIN_NONE;
    sl_pool *pool = sl_pool_create(&po, NULL);
    cr_assert_not_null(pool);
    struct sl_error err = SL_ERROR_INIT;
    sl_plan *plan = sl_plan_create(sl_graph_json_graph(doc), NULL, &err);
    cr_assert_not_null(plan, "%s", err.text);
    sl_status st = sl_plan_run(plan, pool, &err);
    sl_pool_destroy(pool);
    if (plan_out != NULL)
        *plan_out = plan;
    else
        sl_plan_destroy(plan);
    return st;
}

/* Run the loaded document's graph, which must succeed. */
static void
run_doc(sl_graph_json *doc, unsigned workers)
{
    cr_assert_eq(run_doc_plan(doc, workers, NULL), SL_OK);
}

static const uint64_t raw_shape[3] = {20, 30, 40}, raw_chunks[3] = {10, 10, 10};

Test(graph_load_json, every_independent_error_is_reported_in_document_order)
{
    const char *dir = sl_test_tmpdir("json-errors");
    make_array(dir, "raw.zarr", raw_shape, raw_chunks, NULL, false);
    const char *text = "{\"sluice\": 1,\n"
                       " \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"},\n"
                       "            \"out\": {\"path\": \"out.zarr\", \"like\": \"raw\", "
                       "\"create\": {\"codec\": \"zstd:x\"}}},\n"
                       " \"nodes\": {\"read\": {\"op\": \"get\", \"array\": \"raw\"},\n"
                       "           \"half\": {\"op\": \"downsample\", \"input\": \"read\", "
                       "\"factors\": [2, 2]},\n"
                       "           \"write\": {\"op\": \"put\", \"input\": \"half\", \"array\": "
                       "\"out\"}},\n"
                       " \"run\": {\"missing\": \"zero\"}}";
    struct errs e;
    cr_assert_null(load_text(dir, text, true, &e));
    cr_assert_eq(e.list.count, 3, "found %zu errors", e.list.count);
    cr_assert_str_eq(e.rec[0].path, "/run/missing");
    cr_assert_str_eq(e.rec[1].path, "/arrays/out/create/codec");
    cr_assert_str_eq(e.rec[2].path, "/nodes/half/factors");
    cr_assert_not_null(strstr(e.rec[2].text, "expected 3 entries"), "%s", e.rec[2].text);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_str_eq(e.rec[i].source, "test.json");
        cr_assert_eq(e.rec[i].line, -1);
    }
    cr_assert_not(e.list.truncated);
    cr_assert_not(path_exists(dir, "out.zarr"), "an invalid file creates nothing");
    sl_test_rmtree(dir);
}

Test(graph_load_json, the_error_list_stops_at_its_capacity)
{
    const char *text =
        "{\"sluice\": 1, \"arrays\": {}, \"nodes\": {}, \"a\": 1, \"b\": 2, \"c\": 3}";
    struct errs e;
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    cr_assert_null(sl_graph_json_load_string(text, strlen(text), NULL, &o, errs_init(&e, 2)));
    cr_assert_eq(e.list.count, 2);
    cr_assert(e.list.truncated);
    cr_assert_str_eq(e.rec[0].path, "/a");
    cr_assert_str_eq(e.rec[1].path, "/b");
    cr_assert_null(sl_graph_json_load_string(text, strlen(text), NULL, &o, NULL),
                   "a NULL list still fails the load");
}

/* Found by fuzz_graph_json: once the list was full, errors stopped being
 * counted, so a zero chunk extent looked valid and shards were divided by it. */
Test(graph_load_json, a_full_error_list_still_stops_bad_values_being_used)
{
    const char *text = "{\"sluice\": 1, \"a\": 1, \"arrays\": {\"out\": {\"path\": \"o.zarr\", "
                       "\"create\": {\"dtype\": \"uint8\", \"shape\": [8], \"chunks\": [0], "
                       "\"shards\": [4]}}}, \"nodes\": {}}";
    struct errs e;
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    cr_assert_null(sl_graph_json_load_string(text, strlen(text), NULL, &o, errs_init(&e, 1)));
    cr_assert_eq(e.list.count, 1);
    cr_assert(e.list.truncated);
    cr_assert_str_eq(e.rec[0].path, "/a");
    cr_assert_null(sl_graph_json_load_string(text, strlen(text), NULL, &o, NULL));
}

Test(graph_load_json, syntax_errors_keep_line_column_and_position)
{
    const char *text = "{\n  \"sluice\": 1,\n  \"arrays\": {\"a\" 1}\n}";
    struct errs e;
    cr_assert_null(load_text(".", text, false, &e));
    cr_assert_eq(e.list.count, 1, "a syntax error is the only error");
    cr_assert_eq(e.rec[0].code, SL_EPARSE);
    cr_assert_eq(e.rec[0].line, 3);
    cr_assert_eq(e.rec[0].column, 18);
    cr_assert_eq(e.rec[0].position, 35, "bytes read when jansson stopped");
    cr_assert_str_eq(e.rec[0].path, "");
    char line[256];
    sl_error_format(&e.rec[0], line, sizeof(line));
    cr_assert_not_null(strstr(line, "EPARSE: test.json:3:18: "), "%s", line);
}

Test(graph_load_json, size_and_depth_limits_are_enforced)
{
    const char *text = "{\"sluice\": 1, \"arrays\": {}, \"nodes\": [[[]]]}";
    struct errs e;
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    o.max_bytes = 20;
    cr_assert_null(sl_graph_json_load_string(text, strlen(text), NULL, &o, errs_init(&e, 4)));
    cr_assert_eq(e.rec[0].code, SL_EOVERFLOW);
    cr_assert_not_null(strstr(e.rec[0].text, "exceeds the limit of 20 bytes"), "%s", e.rec[0].text);
    o.max_bytes = 0;
    o.max_depth = 3;
    cr_assert_null(sl_graph_json_load_string(text, strlen(text), NULL, &o, errs_init(&e, 4)));
    cr_assert_eq(e.rec[0].code, SL_EOVERFLOW);
    cr_assert_eq(e.rec[0].line, 1);
    cr_assert_eq(e.rec[0].column, 40, "the third '[' opens a fourth level, at column 40");
    /* Brackets inside strings do not nest. */
    const char *quoted =
        "{\"sluice\": 1, \"comment\": \"[[[[\\\"[[\", \"arrays\": {}, \"nodes\": {}}";
    cr_assert_null(sl_graph_json_load_string(quoted, strlen(quoted), NULL, &o, errs_init(&e, 4)));
    cr_assert_neq(e.rec[0].code, SL_EOVERFLOW, "%s", e.rec[0].text);
}

Test(graph_load_json, a_missing_file_is_not_found)
{
    struct errs e;
    cr_assert_null(sl_graph_json_load_file("/nonexistent/graph.json", NULL, errs_init(&e, 4)));
    cr_assert_eq(e.rec[0].code, SL_ENOTFOUND);
    cr_assert_str_eq(e.rec[0].source, "/nonexistent/graph.json");
}

/* A graph downsampling raw.zarr into out.zarr ("like" raw) and casting into
 * f.zarr (explicit settings). */
static const char *const derive_graph =
    "{\"sluice\": 1,\n"
    " \"arrays\": {\n"
    "   \"raw\": {\"path\": \"raw.zarr\"},\n"
    "   \"out\": {\"path\": \"results/out.zarr\", \"like\": \"raw\"},\n"
    "   \"f\": {\"path\": \"f.zarr\", \"create\": {\"format\": 2, \"chunks\": [5, 15, 20], "
    "\"codec\": \"gzip:3\", \"fill_value\": \"NaN\", \"dimension_names\": [\"t\", null, \"u\"], "
    "\"attributes\": {\"k\": [1, 2]}}}},\n"
    " \"nodes\": {\n"
    "   \"read\": {\"op\": \"get\", \"array\": \"raw\"},\n"
    "   \"half\": {\"op\": \"downsample\", \"input\": \"read\", \"factors\": [2, 2, 2]},\n"
    "   \"write\": {\"op\": \"put\", \"input\": \"half\", \"array\": \"out\"},\n"
    "   \"f32\": {\"op\": \"cast\", \"input\": \"read\", \"dtype\": \"float32\"},\n"
    "   \"big\": {\"op\": \"scale\", \"input\": \"f32\", \"scale\": 0.5, \"offset\": 1},\n"
    "   \"wf\": {\"op\": \"put\", \"input\": \"big\", \"array\": \"f\"}},\n"
    " \"run\": {\"threads\": 3, \"memory\": \"1.5M\", \"error_policy\": \"fail_fast\", "
    "\"missing\": \"error\", \"io_concurrency\": 12, \"io_attempts\": 4, \"io_deadline_s\": 2.5, "
    "\"retries\": 5}}";

Test(graph_load_json, validating_creates_nothing_and_reads_run_options)
{
    const char *dir = sl_test_tmpdir("json-validate");
    make_array(dir, "raw.zarr", raw_shape, raw_chunks, NULL, false);
    struct errs e;
    sl_graph_json *doc = load_text(dir, derive_graph, false, &e);
    cr_assert_not_null(doc, "%s %s", e.rec[0].path, e.rec[0].text);
    cr_assert_not(path_exists(dir, "results"), "validation creates no directory");
    cr_assert_not(path_exists(dir, "f.zarr"));
    struct sl_graph_json_run run;
    sl_graph_json_run_opts(doc, &run);
    cr_assert_eq(run.threads, 3);
    cr_assert_eq(run.memory_budget, (size_t)(1.5 * 1024 * 1024));
    cr_assert_eq(run.policy, SL_POLICY_FAIL_FAST);
    cr_assert(run.missing_is_error);
    cr_assert_eq(run.io_concurrency, 12);
    cr_assert_eq(run.io_attempts, 4);
    cr_assert_float_eq(run.io_deadline_s, 2.5, 1e-12);
    cr_assert_eq(run.retries, 5);
    sl_graph *g = sl_graph_json_graph(doc);
    cr_assert(sl_graph_is_sealed(g));
    cr_assert_eq(sl_graph_node_count(g), 7, "six nodes and the put's rechunk of wf");
    uint32_t id;
    struct sl_node_info info;
    cr_assert_eq(sl_graph_find(g, "half", &id, NULL), SL_OK);
    cr_assert_eq(sl_graph_node_info(g, id, &info, NULL), SL_OK);
    cr_assert_eq(info.grid->shape[1], 15);
    sl_graph_json_destroy(doc);
    sl_test_rmtree(dir);
}

Test(graph_load_json, new_arrays_take_their_spec_from_the_writer_and_like)
{
    const char *dir = sl_test_tmpdir("json-derive");
    make_array(dir, "raw.zarr", raw_shape, raw_chunks, NULL, false);
    struct errs e;
    /* Destroyed without a commit (a refused run): nothing is left. */
    sl_graph_json *doc = load_text(dir, derive_graph, true, &e);
    cr_assert_not_null(doc, "%s %s", e.rec[0].path, e.rec[0].text);
    sl_graph_json_destroy(doc);
    cr_assert(!path_exists(dir, "results/out.zarr") && !path_exists(dir, "f.zarr"));
    cr_assert(!path_exists(dir, "results"), "the parent made for it is removed too");
    doc = load_text(dir, derive_graph, true, &e);
    cr_assert_not_null(doc, "%s %s", e.rec[0].path, e.rec[0].text);
    cr_assert(!path_exists(dir, "results/out.zarr"), "written beside its path until committed");
    struct sl_error cerr = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_json_commit(doc, true, &cerr), SL_OK, "%s", cerr.text);
    sl_array *out = open_array(dir, "results/out.zarr");
    cr_assert_eq(sl_array_zarr_format(out), 3);
    cr_assert_eq(sl_array_dtype(out), SL_DTYPE_U16);
    const uint64_t half[3] = {10, 15, 20};
    for (int d = 0; d < 3; d++) {
        cr_assert_eq(sl_array_shape(out)[d], half[d], "shape from the downsample");
        cr_assert_eq(sl_array_chunk_shape(out)[d], raw_chunks[d], "chunks like raw's");
    }
    cr_assert_eq(*(const uint16_t *)sl_array_fill_value(out), 7, "fill value like raw's");
    cr_assert_str_eq(sl_array_dimension_name(out, 2), "x");
    cr_assert_str_eq(sl_array_attributes(out), "{\"origin\":\"test\"}");
    sl_array *f = open_array(dir, "f.zarr");
    cr_assert_eq(sl_array_zarr_format(f), 2);
    cr_assert_eq(sl_array_dtype(f), SL_DTYPE_F32, "dtype from the scale's input cast");
    cr_assert_eq(sl_array_shape(f)[2], 40);
    cr_assert_eq(sl_array_chunk_shape(f)[0], 5);
    cr_assert(isnan(*(const float *)sl_array_fill_value(f)));
    cr_assert_str_eq(sl_array_dimension_name(f, 0), "t");
    const char *unnamed = sl_array_dimension_name(f, 1);
    cr_assert(unnamed == NULL || unnamed[0] == '\0', "v2 writes unnamed dimensions as \"\"");
    cr_assert_str_eq(sl_array_attributes(f), "{\"k\":[1,2]}");
    char codecs[256];
    sl_array_codecs_describe(f, codecs, sizeof(codecs));
    cr_assert_not_null(strstr(codecs, "gzip"), "%s", codecs);
    sl_array_unref(out);
    sl_array_unref(f);
    sl_graph_json_destroy(doc);

    /* Now the outputs exist: loading again is refused, unless overwriting. */
    cr_assert_null(load_text(dir, derive_graph, true, &e));
    cr_assert_eq(e.rec[0].code, SL_EEXIST);
    cr_assert_str_eq(e.rec[0].path, "/arrays/out/path");
    cr_assert_eq(e.list.count, 2, "both outputs exist");
    sl_test_rmtree(dir);
}

Test(graph_load_json, a_loaded_graph_runs_end_to_end)
{
    const char *dir = sl_test_tmpdir("json-run");
    make_array(dir, "raw.zarr", raw_shape, raw_chunks, NULL, true);
    const char *text =
        "{\"sluice\": 1,\n"
        " \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"},\n"
        "            \"out\": {\"path\": \"out.zarr\", \"create\": {\"chunks\": [4, 8, 8], "
        "\"shards\": [8, 16, 16]}}},\n"
        " \"nodes\": [\n"
        "   {\"id\": \"read\", \"op\": \"get\", \"array\": \"raw\"},\n"
        "   {\"id\": \"crop\", \"op\": \"select\", \"input\": \"read\", \"region\": [[2, 18], "
        "null, "
        "[4, null]]},\n"
        "   {\"id\": \"half\", \"op\": \"downsample\", \"input\": \"crop\", \"factors\": [2, 1, "
        "2], \"method\": \"max\", \"chunks\": [8, 10, 12]},\n"
        "   {\"id\": \"write\", \"op\": \"put\", \"input\": \"half\", \"array\": \"out\"}]}";
    struct errs e;
    sl_graph_json *doc = load_text(dir, text, true, &e);
    cr_assert_not_null(doc, "%s %s", e.rec[0].path, e.rec[0].text);
    run_doc(doc, 2);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_json_commit(doc, true, &err), SL_OK, "%s", err.text);
    sl_graph_json_destroy(doc);

    sl_array *out = open_array(dir, "out.zarr");
    const uint64_t want_shape[3] = {8, 30, 18};
    for (int d = 0; d < 3; d++)
        cr_assert_eq(sl_array_shape(out)[d], want_shape[d]);
    uint16_t got[8 * 30 * 18];
    struct sl_region all = sl_region_whole(3, want_shape);
    cr_assert_eq(sl_array_read_region(out, &all, got, sizeof(got), NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    /* max over z in {2+2o, 3+2o} and x in {4+2q, 5+2q}: z = 3+2o, x = 5+2q. */
    for (uint64_t o = 0, i = 0; o < 8; o++)
        for (uint64_t y = 0; y < 30; y++)
            for (uint64_t q = 0; q < 18; q++, i++)
                cr_assert_eq(got[i], (3 + 2 * o) * 100 + y + 5 + 2 * q, "at (%d, %d, %d)", (int)o,
                             (int)y, (int)q);
    sl_array_unref(out);
    sl_test_rmtree(dir);
}

Test(graph_load_json, outside_paths_need_permission)
{
    const char *dir = sl_test_tmpdir("json-outside");
    make_array(dir, "raw.zarr", raw_shape, raw_chunks, NULL, false);
    char text[8192];
    snprintf(text, sizeof(text),
             "{\"sluice\": 1, \"arrays\": {\"raw\": {\"path\": \"%s/raw.zarr\"}, \"out\": "
             "{\"path\": \"sub/../out.zarr\", \"like\": \"raw\"}}, \"nodes\": {\"r\": {\"op\": "
             "\"get\", \"array\": \"raw\"}, \"w\": {\"op\": \"put\", \"input\": \"r\", \"array\": "
             "\"out\"}}}",
             dir);
    struct errs e;
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    o.base_dir = dir;
    cr_assert_null(sl_graph_json_load_string(text, strlen(text), NULL, &o, errs_init(&e, 8)));
    cr_assert_eq(e.list.count, 2);
    cr_assert_eq(e.rec[0].code, SL_EACCES);
    cr_assert_str_eq(e.rec[0].path, "/arrays/raw/path");
    cr_assert_str_eq(e.rec[1].path, "/arrays/out/path");
    o.allow_outside = true;
    sl_graph_json *doc = sl_graph_json_load_string(text, strlen(text), NULL, &o, errs_init(&e, 8));
    cr_assert_not_null(doc, "%s", e.rec[0].text);
    sl_graph_json_destroy(doc);
    sl_test_rmtree(dir);
}

Test(graph_load_json, the_arrays_summary_names_each_role)
{
    const char *dir = sl_test_tmpdir("json-summary");
    make_array(dir, "raw.zarr", raw_shape, raw_chunks, NULL, false);
    const uint64_t small[3] = {10, 15, 20};
    make_array(dir, "old.zarr", small, raw_chunks, NULL, false);
    const char *text =
        "{\"sluice\": 1, \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"}, \"old\": {\"path\": "
        "\"old.zarr\", \"like\": \"raw\", \"overwrite\": true, \"create\": {\"shards\": [10, 20, "
        "20]}}},\n"
        " \"nodes\": {\"r\": {\"op\": \"get\", \"array\": \"raw\"}, \"d\": {\"op\": "
        "\"downsample\", \"input\": \"r\", \"factors\": [2, 2, 2]}, \"w\": {\"op\": \"put\", "
        "\"input\": \"d\", \"array\": \"old\"}}}";
    struct errs e;
    sl_graph_json *doc = load_text(dir, text, false, &e);
    cr_assert_not_null(doc, "%s %s", e.rec[0].path, e.rec[0].text);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(sl_graph_json_write_arrays(doc, f, NULL), SL_OK);
    fclose(f);
    cr_assert_str_eq(buf, "array raw: read raw.zarr: zarr v3 uint16 [20, 30, 40], chunks [10, "
                          "10, 10]\n"
                          "array old: overwrite old.zarr: zarr v3 uint16 [10, 15, 20], chunks "
                          "[10, 10, 10], shards [10, 20, 20]\n");
    free(buf);
    sl_graph_json_destroy(doc);
    sl_test_rmtree(dir);
}

Test(graph_load_json, writing_into_an_existing_array_reopens_it_for_writing)
{
    const char *dir = sl_test_tmpdir("json-inplace");
    make_array(dir, "raw.zarr", raw_shape, raw_chunks, NULL, true);
    make_array(dir, "dst.zarr", raw_shape, raw_chunks, NULL, false);
    const char *text =
        "{\"sluice\": 1, \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"}, \"dst\": {\"path\": "
        "\"dst.zarr\", \"overwrite\": true}},\n"
        " \"nodes\": {\"r\": {\"op\": \"get\", \"array\": \"raw\"}, \"c\": {\"op\": \"clip\", "
        "\"input\": \"r\", \"max\": 1000}, \"w\": {\"op\": \"put\", \"input\": \"c\", \"array\": "
        "\"dst\"}}}";
    struct errs e;
    sl_graph_json *doc = load_text(dir, text, true, &e);
    cr_assert_not_null(doc, "%s %s", e.rec[0].path, e.rec[0].text);
    run_doc(doc, 1);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_json_commit(doc, true, &err), SL_OK, "%s", err.text);
    sl_graph_json_destroy(doc);
    sl_array *dst = open_array(dir, "dst.zarr");
    uint16_t v;
    const struct sl_region one = {.rank = 3, .start = {19, 29, 39}, .stop = {20, 30, 40}};
    cr_assert_eq(sl_array_read_region(dst, &one, &v, 2, NULL, NULL, NULL), SL_OK);
    cr_assert_eq(v, 1000, "clipped 1900 + 29 + 39 to 1000");
    sl_array_unref(dst);
    sl_test_rmtree(dir);
}

/* One load of derive_graph from `arg` (the directory) through `alloc`;
 * the first error's code, or SL_OK with the graph and its arrays there. */
static sl_status
load_through(const struct sl_allocator *alloc, void *arg, bool *data_ok)
{
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    o.base_dir = arg;
    o.alloc = alloc;
    struct errs e;
    sl_graph_json *doc = sl_graph_json_load_string(derive_graph, strlen(derive_graph), NULL, &o,
                                                   errs_init(&e, MAX_ERRORS));
    if (doc == NULL) {
        cr_assert_geq(e.list.count, 1, "the load failed without an error");
        *data_ok = false;
        return e.rec[0].code;
    }
    cr_assert_eq(e.list.count, 0, "loaded, yet reported %s", e.rec[0].text);
    *data_ok = sl_graph_json_graph(doc) != NULL;
    sl_graph_json_destroy(doc);
    return SL_OK;
}

/* Fail the 1st, 2nd, ... allocation: each load fails with SL_ENOMEM and
 * leaks nothing, until the one that fails none loads. */
Test(graph_load_json, allocation_failures_fail_cleanly)
{
    const char *dir = sl_test_tmpdir("json-fault");
    make_array(dir, "raw.zarr", raw_shape, raw_chunks, NULL, false);
    (void)sl_test_alloc_sweep(load_through, (void *)dir, false, 10);
    sl_test_rmtree(dir);
}

Test(graph_load_json, other_processes_open_what_the_first_created)
{
    const char *dir = sl_test_tmpdir("json-open");
    make_array(dir, "raw.zarr", raw_shape, raw_chunks, NULL, false);
    struct errs e;
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    o.base_dir = dir;
    o.new_arrays = SL_GRAPH_JSON_OPEN;
    const size_t len = strlen(derive_graph);
    cr_assert_null(sl_graph_json_load_string(derive_graph, len, NULL, &o, errs_init(&e, 4)),
                   "nothing to open before the first process creates it");
    cr_assert_str_eq(e.rec[0].path, "/arrays/out/path");
    cr_assert_not_null(strstr(e.rec[0].text, "cannot open the created array"), "%s", e.rec[0].text);
    sl_graph_json *first = load_text(dir, derive_graph, true, &e);
    cr_assert_not_null(first, "%s", e.rec[0].text);
    sl_graph_json *other = sl_graph_json_load_string(derive_graph, len, NULL, &o, errs_init(&e, 4));
    cr_assert_not_null(other, "%s %s", e.rec[0].path, e.rec[0].text);
    cr_assert_eq(sl_graph_node_count(sl_graph_json_graph(other)),
                 sl_graph_node_count(sl_graph_json_graph(first)));
    sl_graph_json_destroy(other);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_json_commit(first, true, &err), SL_OK, "%s", err.text);
    sl_graph_json_destroy(first);
    /* Once committed, the others open it at its path. */
    other = sl_graph_json_load_string(derive_graph, len, NULL, &o, errs_init(&e, 4));
    cr_assert_not_null(other, "%s %s", e.rec[0].path, e.rec[0].text);
    sl_graph_json_destroy(other);
    sl_test_rmtree(dir);
}

/* A group at dir/name with `attrs`. */
static void
make_group(const char *dir, const char *name, const char *attrs)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(path, NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    cr_assert_eq(sl_group_create(s, "", 3, attrs, &err), SL_OK, "%s", err.text);
    sl_store_unref(s);
}

/* Whether arrays dir/a and dir/b hold the same elements of raw_shape. */
static bool
same_contents(const char *dir, const char *a, const char *b)
{
    sl_array *x = open_array(dir, a), *y = open_array(dir, b);
    static uint16_t vx[20 * 30 * 40], vy[20 * 30 * 40];
    struct sl_region all = sl_region_whole(3, raw_shape);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_array_read_region(x, &all, vx, sizeof(vx), NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    cr_assert_eq(sl_array_read_region(y, &all, vy, sizeof(vy), NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    sl_array_unref(x);
    sl_array_unref(y);
    return memcmp(vx, vy, sizeof(vx)) == 0;
}

static const char copy_graph[] =
    "{\"sluice\": 1, \"arrays\": {},\n"
    " \"nodes\": {\"all\": {\"op\": \"copy\", \"source\": \"src.zarr\", \"group\": "
    "\"out.zarr\",\n"
    "   \"create\": {\"codec\": \"zstd:1,crc32c\"},\n"
    "   \"members\": {\"sub/b\": {\"chunks\": [5, 5, 5], \"shards\": [10, 10, 20]}}}}}";

Test(graph_load_json, a_copy_node_copies_a_whole_group)
{
    const char *dir = sl_test_tmpdir("json-copy");
    make_group(dir, "src.zarr", "{\"title\":\"source\"}");
    make_array(dir, "src.zarr/a", raw_shape, raw_chunks, NULL, true);
    make_group(dir, "src.zarr/sub", "{\"kind\":\"labels\"}");
    make_array(dir, "src.zarr/sub/b", raw_shape, raw_chunks, NULL, true);
    struct errs e;
    sl_graph_json *doc = load_text(dir, copy_graph, true, &e);
    cr_assert_not_null(doc, "%s %s", e.rec[0].path, e.rec[0].text);
    /* A get and a put per array: nothing else. */
    cr_assert_eq(sl_graph_node_count(sl_graph_json_graph(doc)), 2 + 2 + 1, "rechunk for sub/b");
    run_doc(doc, 2);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_not(path_exists(dir, "out.zarr"), "written beside its path until committed");
    cr_assert_eq(sl_graph_json_commit(doc, true, &err), SL_OK, "%s", err.text);
    sl_graph_json_destroy(doc);

    cr_assert(same_contents(dir, "src.zarr/a", "out.zarr/a"));
    cr_assert(same_contents(dir, "src.zarr/sub/b", "out.zarr/sub/b"));
    sl_array *a = open_array(dir, "out.zarr/a"), *b = open_array(dir, "out.zarr/sub/b");
    cr_assert_eq(sl_array_chunk_shape(a)[1], 10, "the source's chunks by default");
    cr_assert_null(sl_array_shard_shape(a));
    cr_assert_eq(sl_array_chunk_shape(b)[0], 5, "the member's own chunks");
    cr_assert_eq(sl_array_shard_shape(b)[2], 20, "and shards");
    cr_assert_str_eq(sl_array_attributes(b), "{\"origin\":\"test\"}");
    sl_array_unref(a);
    sl_array_unref(b);
    char path[4200];
    snprintf(path, sizeof(path), "%s/out.zarr", dir);
    sl_store *s = sl_store_open_fs(path, NULL, &err);
    struct sl_buf attrs = SL_BUF_INIT;
    cr_assert_eq(sl_group_attributes(s, "", &attrs, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq((const char *)attrs.data, "{\"title\":\"source\"}");
    cr_assert_eq(sl_group_attributes(s, "sub", &attrs, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq((const char *)attrs.data, "{\"kind\":\"labels\"}");
    sl_buf_fini(&attrs);
    /* Every array carries the crc32c checksum "create" asked for. */
    struct sl_buf meta = SL_BUF_INIT;
    cr_assert_eq(sl_store_get(s, "sub/b/zarr.json", NULL, &meta, NULL, &err), SL_OK, "%s",
                 err.text);
    cr_assert_not_null(memmem(meta.data, meta.size, "crc32c", 6));
    sl_buf_fini(&meta);
    sl_store_unref(s);

    /* Other processes of a split run open what the first made. */
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    o.base_dir = dir;
    o.new_arrays = SL_GRAPH_JSON_OPEN;
    doc = load_text(dir, copy_graph, true, &e);
    cr_assert_null(doc, "the copy exists now: refused without overwrite");
    cr_assert_str_eq(e.rec[0].path, "/nodes/all/group");
    sl_graph_json *other =
        sl_graph_json_load_string(copy_graph, strlen(copy_graph), NULL, &o, errs_init(&e, 4));
    cr_assert_not_null(other, "%s %s", e.rec[0].path, e.rec[0].text);
    cr_assert_eq(sl_graph_node_count(sl_graph_json_graph(other)), 5);
    sl_graph_json_destroy(other);
    sl_test_rmtree(dir);
}

/* A map function: out = a + 2 * b + (the block's first z), as float32. */
static sl_status
add_twice(void *ctx, struct sl_block *out, size_t n, const struct sl_block *in,
          struct sl_error *err)
{
    int *calls = ctx;
    __atomic_fetch_add(calls, 1, __ATOMIC_RELAXED);
    if (n != 2 || in[0].view.dtype != SL_DTYPE_U16 || out->view.dtype != SL_DTYPE_F32)
        return sl_error_set(err, SL_EINVAL, NULL, "add_twice: %zu inputs", n);
    if (out->region.start[0] == 10 && out->region.start[1] == 20 && out->region.start[2] == 0)
        return sl_error_set(err, SL_EFUNC, NULL, "add_twice refuses this block");
    const struct sl_view *a = &in[0].view, *b = &in[1].view, *o = &out->view;
    for (uint64_t z = 0; z < o->shape[0]; z++)
        for (uint64_t y = 0; y < o->shape[1]; y++)
            for (uint64_t x = 0; x < o->shape[2]; x++) {
                int64_t ia = (int64_t)z * a->stride[0] + (int64_t)y * a->stride[1] +
                             (int64_t)x * a->stride[2];
                int64_t ib = (int64_t)z * b->stride[0] + (int64_t)y * b->stride[1] +
                             (int64_t)x * b->stride[2];
                int64_t io = (int64_t)z * o->stride[0] + (int64_t)y * o->stride[1] +
                             (int64_t)x * o->stride[2];
                ((float *)o->data)[io] = (float)((const uint16_t *)a->data)[ia] +
                                         2.0f * (float)((const uint16_t *)b->data)[ib] +
                                         (float)out->region.start[0];
            }
    return SL_OK;
}

Test(graph_load_json, map_nodes_call_the_functions_the_loader_is_given)
{
    const char *dir = sl_test_tmpdir("json-map");
    make_array(dir, "raw.zarr", raw_shape, raw_chunks, NULL, true);
    const char *text =
        "{\"sluice\": 1,\n"
        " \"arrays\": {\"raw\": {\"path\": \"raw.zarr\"}, \"out\": {\"path\": \"out.zarr\", "
        "\"create\": {}}},\n"
        " \"nodes\": {\"r\": {\"op\": \"get\", \"array\": \"raw\"},\n"
        "   \"m\": {\"op\": \"map\", \"fn\": \"add_twice\", \"inputs\": [\"r\", \"r\"], "
        "\"dtype\": \"float32\"},\n"
        "   \"w\": {\"op\": \"put\", \"input\": \"m\", \"array\": \"out\"}}}";
    struct errs e;
    /* Without the function: refused, naming what the loader has (nothing). */
    cr_assert_null(load_text(dir, text, false, &e));
    cr_assert_str_eq(e.rec[0].path, "/nodes/m/fn");
    cr_assert(strstr(e.rec[0].text, "no function \"add_twice\"") != NULL &&
                  strstr(e.rec[0].text, "supplies none") != NULL,
              "%s", e.rec[0].text);

    int calls = 0;
    struct sl_graph_json_map maps[] = {{"other", add_twice, &calls},
                                       {"add_twice", add_twice, &calls}};
    struct sl_graph_json_opts o = SL_GRAPH_JSON_OPTS_DEFAULT;
    o.base_dir = dir;
    o.new_arrays = SL_GRAPH_JSON_CREATE;
    o.maps = maps;
    o.n_maps = 2;
    sl_graph_json *doc =
        sl_graph_json_load_string(text, strlen(text), "t.json", &o, errs_init(&e, MAX_ERRORS));
    cr_assert_not_null(doc, "%s %s", e.rec[0].path, e.rec[0].text);
    /* One block refuses: that chunk fails with the function's error, the
     * others are written. */
    sl_plan *plan;
    cr_assert_neq(run_doc_plan(doc, 2, &plan), SL_OK);
    struct sl_run_summary s;
    sl_plan_summary(plan, &s);
    cr_assert_eq(s.n_failed, 1, "%llu failed", (unsigned long long)s.n_failed);
    cr_assert_eq(calls, 24, "%d calls for 24 chunks", calls);
    size_t n_err = 0;
    const struct sl_chunk_error *ce = sl_plan_errors(plan, &n_err);
    cr_assert_eq(n_err, 1);
    cr_assert_eq(ce[0].key.idx[0], 1);
    cr_assert_eq(ce[0].key.idx[1], 2);
    cr_assert_eq(ce[0].code, SL_EFUNC);
    cr_assert(strstr(ce[0].text, "add_twice refuses") != NULL, "%s", ce[0].text);
    sl_plan_destroy(plan);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_json_commit(doc, true, &err), SL_OK, "%s", err.text);
    sl_graph_json_destroy(doc);

    sl_array *out = open_array(dir, "out.zarr");
    cr_assert_eq(sl_array_dtype(out), SL_DTYPE_F32);
    static float got[20 * 30 * 40];
    struct sl_region all = sl_region_whole(3, raw_shape);
    cr_assert_eq(sl_array_read_region(out, &all, got, sizeof(got), NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    for (uint64_t z = 0, i = 0; z < 20; z++)
        for (uint64_t y = 0; y < 30; y++)
            for (uint64_t x = 0; x < 40; x++, i++) {
                if (z >= 10 && y >= 20 && x < 10)
                    continue; /* the failed chunk */
                float want = 3.0f * (float)(z * 100 + y + x) + (float)(z / 10 * 10);
                cr_assert_eq(got[i], want, "at (%d, %d, %d)", (int)z, (int)y, (int)x);
            }
    sl_array_unref(out);
    sl_test_rmtree(dir);
}
