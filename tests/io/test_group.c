/* SPDX-License-Identifier: MIT */
/*
 * A group's members (sl_group_members, sl_group_member_open): v2
 * .zmetadata and v3 inline consolidated metadata are read in one get and
 * their arrays open without another; a group without it is listed; bad
 * consolidated metadata is refused naming its key and the JSON pointer;
 * sl_group_consolidate writes what the walk then reads in one get.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

TestSuite(io_group, .timeout = 10.0);

#define ZARRAY_V2                                                                       \
    "{\"zarr_format\": 2, \"shape\": [10, 7], \"chunks\": [4, 4], \"dtype\": \"<u2\", " \
    "\"compressor\": null, \"fill_value\": 0, \"order\": \"C\", \"filters\": null}"
#define ZARR_JSON_V3                                                                         \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [5], \"data_type\": "         \
    "\"float32\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "               \
    "{\"chunk_shape\": [2]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, "             \
    "\"fill_value\": 0, \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": " \
    "\"little\"}}], \"attributes\": {\"units\": \"m\"}}"

/* What a walk saw: "path kind format c|l;" per member, and arrays opened. */
struct seen {
    char text[1024];
    int n_opened;
    struct sl_error open_err;
};

static sl_status
collect(void *arg, const struct sl_group_member *m)
{
    struct seen *s = arg;
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof(s->text) - n, "%s %s v%d %s;", m->path,
             m->kind == SL_ZARR_ARRAY   ? "array"
             : m->kind == SL_ZARR_GROUP ? "group"
                                        : "none",
             m->zarr_format, m->consolidated ? "c" : "l");
    if (m->kind != SL_ZARR_ARRAY)
        return SL_OK;
    sl_array *a = sl_group_member_open(m, NULL, &s->open_err);
    s->n_opened += a != NULL;
    sl_array_unref(a);
    return SL_OK;
}

static sl_store *
store_with(const char *key, const char *text)
{
    sl_store *st = sl_store_create_memory(NULL, NULL);
    cr_assert_not_null(st);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(st, key, text, strlen(text), &err), SL_OK, "%s", err.text);
    return st;
}

static uint64_t
gets_of(const sl_store *st)
{
    struct sl_store_stats stats;
    sl_store_get_stats(st, &stats);
    return stats.n_get;
}

Test(io_group, v2_zmetadata_lists_members_in_one_get_and_opens_arrays_from_it)
{
    /* Only .zmetadata is stored: a member found or opened must come from it. */
    sl_store *st =
        store_with(".zmetadata", "{\"zarr_consolidated_format\": 1, \"metadata\": {"
                                 "\".zgroup\": {\"zarr_format\": 2}, \".zattrs\": {},"
                                 "\"a/.zarray\": " ZARRAY_V2 ", \"a/.zattrs\": {\"k\": 1},"
                                 "\"g/.zgroup\": {\"zarr_format\": 2},"
                                 "\"g/b/.zarray\": " ZARRAY_V2 "}}");
    struct seen s = {.open_err = SL_ERROR_INIT};
    struct sl_error err = SL_ERROR_INIT;
    uint64_t before = gets_of(st);
    cr_assert_eq(sl_group_members(st, "", collect, &s, &err), SL_OK, "%s", err.text);
    cr_expect_str_eq(s.text, "a array v2 c;g group v2 c;g/b array v2 c;");
    cr_expect_eq(s.n_opened, 2, "%s", s.open_err.text);
    /* One read, .zmetadata (looking for the absent zarr.json reads nothing);
     * none for the members. */
    cr_expect_eq(gets_of(st) - before, 1);

    /* The array's attributes came from a/.zattrs in the same document. */
    struct sl_group_member m = {.store = st, .path = "a", .kind = SL_ZARR_ARRAY, .zarr_format = 2};
    sl_array *a = sl_group_member_open(&m, NULL, &err); /* no entry: read from the store */
    cr_expect_null(a);
    cr_expect_eq(err.code, SL_ENOTFOUND);
    sl_store_unref(st);
}

Test(io_group, v3_inline_consolidated_metadata_lists_members_of_a_subgroup)
{
    sl_store *st = store_with("sub/zarr.json",
                              "{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": {},"
                              "\"consolidated_metadata\": {\"kind\": \"inline\", "
                              "\"must_understand\": false, \"metadata\": {"
                              "\"x\": " ZARR_JSON_V3 ","
                              "\"h\": {\"zarr_format\": 3, \"node_type\": \"group\"},"
                              "\"h/y\": " ZARR_JSON_V3 "}}}");
    struct seen s = {.open_err = SL_ERROR_INIT};
    struct sl_error err = SL_ERROR_INIT;
    uint64_t before = gets_of(st);
    cr_assert_eq(sl_group_members(st, "sub", collect, &s, &err), SL_OK, "%s", err.text);
    cr_expect_str_eq(s.text, "sub/x array v3 c;sub/h group v3 c;sub/h/y array v3 c;");
    cr_expect_eq(s.n_opened, 2, "%s", s.open_err.text);
    cr_expect_eq(gets_of(st) - before, 1);
    sl_store_unref(st);
}

Test(io_group, a_group_without_consolidated_metadata_is_listed)
{
    sl_store *st = sl_store_create_memory(NULL, NULL);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_group_create(st, "", 3, NULL, &err), SL_OK);
    cr_assert_eq(sl_group_create(st, "g", 2, NULL, &err), SL_OK);
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = 1;
    spec.shape[0] = 8;
    spec.chunk_shape[0] = 4;
    sl_array *a = sl_array_create(st, "g/a", &spec, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    sl_array_unref(a);
    struct seen s = {.open_err = SL_ERROR_INIT};
    cr_assert_eq(sl_group_members(st, "", collect, &s, &err), SL_OK, "%s", err.text);
    cr_expect(strstr(s.text, "g group v2 l;") != NULL, "%s", s.text);
    cr_expect(strstr(s.text, "g/a array v3 l;") != NULL, "%s", s.text);
    cr_expect_eq(s.n_opened, 1);
    /* An array is not a group. */
    cr_expect_eq(sl_group_members(st, "g/a", collect, &s, &err), SL_EINVAL);
    sl_store_unref(st);
}

/* Walk a store holding `text` at `key`; expect `code` at JSON pointer `path`
 * with `key` as the source, from the walk or (open) from opening members. */
static void
expect_refused(const char *key, const char *text, bool open, sl_status code, const char *path)
{
    sl_store *st = store_with(key, text);
    struct seen s = {.open_err = SL_ERROR_INIT};
    struct sl_error err = SL_ERROR_INIT;
    sl_status got = sl_group_members(st, "", collect, &s, &err);
    if (open) {
        cr_expect_eq(got, SL_OK, "%s", err.text);
        err = s.open_err;
        got = err.code;
    }
    char line[1024];
    sl_error_format(&err, line, sizeof(line));
    cr_expect_eq(got, code, "%s: %s", text, line);
    cr_expect_str_eq(err.path, path, "%s: %s", text, line);
    cr_expect_str_eq(err.source, key, "%s: %s", text, line);
    cr_expect_neq(err.text[0], '\0');
    sl_store_unref(st);
}

Test(io_group, bad_v2_consolidated_metadata_names_the_key_and_pointer)
{
    const char *k = ".zmetadata";
    expect_refused(k, "[]", false, SL_EPARSE, "");
    expect_refused(k, "{\"metadata\": {}}", false, SL_EPARSE, "/zarr_consolidated_format");
    expect_refused(k, "{\"zarr_consolidated_format\": 2, \"metadata\": {}}", false, SL_EUNSUPPORTED,
                   "/zarr_consolidated_format");
    expect_refused(k, "{\"zarr_consolidated_format\": 1, \"metadata\": []}", false, SL_EPARSE,
                   "/metadata");
    expect_refused(k, "{\"zarr_consolidated_format\": 1, \"metadata\": {\"a/.zarray\": 5}}", false,
                   SL_EPARSE, "/metadata/a~1.zarray");
    expect_refused(k,
                   "{\"zarr_consolidated_format\": 1, \"metadata\": {\"a/.zarray\": " ZARRAY_V2
                   ", \"a/.zattrs\": \"x\"}}",
                   false, SL_EPARSE, "/metadata/a~1.zattrs");
    expect_refused(
        k, "{\"zarr_consolidated_format\": 1, \"metadata\": {\"../.zarray\": " ZARRAY_V2 "}}",
        false, SL_EPARSE, "/metadata/..~1.zarray");
    /* A member whose own metadata is invalid fails when opened, at its pointer. */
    expect_refused(k,
                   "{\"zarr_consolidated_format\": 1, \"metadata\": {\"a/.zarray\": "
                   "{\"zarr_format\": 2, \"shape\": \"x\", \"chunks\": [4], \"dtype\": \"<u2\", "
                   "\"compressor\": null, \"fill_value\": 0, \"order\": \"C\", "
                   "\"filters\": null}}}",
                   true, SL_EPARSE, "/metadata/a~1.zarray/shape");
    expect_refused(k, "{\"zarr_consolidated_format\": 1", false, SL_EPARSE, "");
}

Test(io_group, bad_v3_consolidated_metadata_names_the_key_and_pointer)
{
    const char *k = "zarr.json";
#define GROUP3(cm) \
    "{\"zarr_format\": 3, \"node_type\": \"group\", \"consolidated_metadata\": " cm "}"
    expect_refused(k, GROUP3("5"), false, SL_EPARSE, "/consolidated_metadata");
    expect_refused(k, GROUP3("{\"kind\": \"remote\", \"metadata\": {}}"), false, SL_EUNSUPPORTED,
                   "/consolidated_metadata/kind");
    expect_refused(k, GROUP3("{\"kind\": \"inline\", \"metadata\": 1}"), false, SL_EPARSE,
                   "/consolidated_metadata/metadata");
    expect_refused(k, GROUP3("{\"kind\": \"inline\", \"metadata\": {\"a\": []}}"), false, SL_EPARSE,
                   "/consolidated_metadata/metadata/a");
    expect_refused(k,
                   GROUP3("{\"kind\": \"inline\", \"metadata\": {\"a\": {\"zarr_format\": 3, "
                          "\"node_type\": \"table\"}}}"),
                   false, SL_EPARSE, "/consolidated_metadata/metadata/a/node_type");
    expect_refused(k,
                   GROUP3("{\"kind\": \"inline\", \"metadata\": {\"a\": {\"zarr_format\": 2, "
                          "\"node_type\": \"array\"}}}"),
                   false, SL_EPARSE, "/consolidated_metadata/metadata/a/zarr_format");
    expect_refused(k,
                   GROUP3("{\"kind\": \"inline\", \"metadata\": {\"\": {\"zarr_format\": 3, "
                          "\"node_type\": \"group\"}}}"),
                   false, SL_EPARSE, "/consolidated_metadata/metadata/");
    expect_refused(k,
                   GROUP3("{\"kind\": \"inline\", \"metadata\": {\"a\": {\"zarr_format\": 3, "
                          "\"node_type\": \"array\", \"shape\": [-1]}}}"),
                   true, SL_EPARSE, "/consolidated_metadata/metadata/a/codecs");
#undef GROUP3
}

/* sl_group_attributes: "a \"q\"" etc. as compact JSON, {} when none. */
static void
expect_attributes(sl_store *st, const char *path, const char *want)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_group_attributes(st, path, &b, &err), SL_OK, "%s", err.text);
    cr_expect_str_eq((const char *)b.data, want);
    cr_expect_eq(b.size, strlen(want));
    sl_buf_fini(&b);
}

Test(io_group, a_groups_attributes_are_read_for_v2_and_v3)
{
    sl_store *st = store_with("v3/zarr.json", "{\"zarr_format\": 3, \"node_type\": \"group\", "
                                              "\"attributes\": {\"t\": \"a \\\"q\\\"\", "
                                              "\"n\": [1, 2]}}");
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_group_create(st, "v2", 2, "{\"k\": {\"x\": 1}}", &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_group_create(st, "plain", 2, NULL, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_group_create(st, "plain3", 3, NULL, &err), SL_OK, "%s", err.text);
    expect_attributes(st, "v3", "{\"t\":\"a \\\"q\\\"\",\"n\":[1,2]}");
    expect_attributes(st, "v2", "{\"k\":{\"x\":1}}");
    expect_attributes(st, "plain", "{}");
    expect_attributes(st, "plain3", "{}");
    sl_store_unref(st);
}

Test(io_group, group_attributes_of_arrays_absent_nodes_and_bad_zattrs_are_errors)
{
    sl_store *st = store_with("a/.zarray", ZARRAY_V2);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(st, "g/.zgroup", "{\"zarr_format\": 2}", 18, &err), SL_OK);
    cr_assert_eq(sl_store_set(st, "g/.zattrs", "[1]", 3, &err), SL_OK);
    struct sl_buf b = SL_BUF_INIT;
    cr_expect_eq(sl_group_attributes(st, "a", &b, &err), SL_EINVAL);
    cr_expect(strstr(err.text, "an array") != NULL, "%s", err.text);
    err = SL_ERROR_INIT;
    cr_expect_eq(sl_group_attributes(st, "none", &b, &err), SL_ENOTFOUND);
    err = SL_ERROR_INIT;
    cr_expect_eq(sl_group_attributes(st, "g", &b, &err), SL_EPARSE);
    cr_expect_str_eq(err.source, "g/.zattrs");
    cr_expect(strstr(err.text, "JSON object") != NULL, "%s", err.text);
    err = SL_ERROR_INIT;
    cr_expect_eq(sl_group_attributes(st, "../x", &b, &err), SL_EACCES); /* a refused key */
    cr_expect_eq(sl_group_attributes(NULL, "", &b, &err), SL_EINVAL);
    sl_buf_fini(&b);
    sl_store_unref(st);
}

/* "path=attributes;" of every member, from sl_group_member_attributes. */
static sl_status
collect_attrs(void *arg, const struct sl_group_member *m)
{
    char *text = arg;
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl_group_member_attributes(m, &b, &err);
    size_t n = strlen(text);
    snprintf(text + n, 1024 - n, "%s=%s;", m->path, st == SL_OK ? (const char *)b.data : err.text);
    sl_buf_fini(&b);
    return SL_OK;
}

Test(io_group, consolidated_members_attributes_cost_no_read)
{
    sl_store *st =
        store_with(".zmetadata", "{\"zarr_consolidated_format\": 1, \"metadata\": {"
                                 "\".zgroup\": {\"zarr_format\": 2}, \".zattrs\": {\"r\": 0},"
                                 "\"a/.zarray\": " ZARRAY_V2 ", \"a/.zattrs\": {\"k\": 1},"
                                 "\"g/.zgroup\": {\"zarr_format\": 2}, \"g/.zattrs\": {\"t\": 2},"
                                 "\"h/.zgroup\": {\"zarr_format\": 2}}}");
    struct sl_error err = SL_ERROR_INIT;
    struct sl_buf b = SL_BUF_INIT;
    sl_zarr_kind kind = SL_ZARR_NONE;
    int format = 0;
    /* sl_zarr_read_node: the root group's kind, format and attributes. */
    cr_assert_eq(sl_store_set(st, ".zgroup", "{\"zarr_format\": 2}", 18, &err), SL_OK);
    cr_assert_eq(sl_store_set(st, ".zattrs", "{\"r\": 0}", 8, &err), SL_OK);
    cr_assert_eq(sl_zarr_read_node(st, "", &kind, &format, &b, &err), SL_OK, "%s", err.text);
    cr_expect(kind == SL_ZARR_GROUP && format == 2);
    cr_expect_str_eq((const char *)b.data, "{\"r\":0}");
    char text[1024] = "";
    uint64_t before = gets_of(st);
    cr_assert_eq(sl_group_members(st, "", collect_attrs, text, &err), SL_OK, "%s", err.text);
    cr_expect_str_eq(text, "a={\"k\":1};g={\"t\":2};h={};");
    cr_expect_eq(gets_of(st) - before, 1); /* .zmetadata alone */
    sl_buf_fini(&b);
    sl_store_unref(st);

    st = store_with("zarr.json", "{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": "
                                 "{\"o\": 1}, \"consolidated_metadata\": {\"kind\": \"inline\", "
                                 "\"must_understand\": false, \"metadata\": {"
                                 "\"x\": " ZARR_JSON_V3 ","
                                 "\"h\": {\"zarr_format\": 3, \"node_type\": \"group\", "
                                 "\"attributes\": {\"u\": [1]}},"
                                 "\"bad\": {\"zarr_format\": 3, \"node_type\": \"group\", "
                                 "\"attributes\": 5}}}}");
    b = SL_BUF_INIT;
    before = gets_of(st);
    cr_assert_eq(sl_zarr_read_node(st, "", &kind, &format, &b, &err), SL_OK, "%s", err.text);
    cr_expect(kind == SL_ZARR_GROUP && format == 3);
    cr_expect_str_eq((const char *)b.data, "{\"o\":1}");
    cr_expect_eq(gets_of(st) - before, 1); /* kind and attributes in one read */
    text[0] = '\0';
    cr_assert_eq(sl_group_members(st, "", collect_attrs, text, &err), SL_OK, "%s", err.text);
    cr_expect(strstr(text, "x={\"units\":\"m\"};") != NULL, "%s", text);
    cr_expect(strstr(text, "h={\"u\":[1]};") != NULL, "%s", text);
    cr_expect(strstr(text, "bad=consolidated metadata: expected an object") != NULL, "%s", text);
    cr_expect_eq(gets_of(st) - before, 2);
    sl_buf_fini(&b);
    sl_store_unref(st);
}

/* A small hierarchy of format `f`: root group, "a" array, "g" group with
 * attributes, "g/b" array. */
static sl_store *
hierarchy(int f)
{
    sl_store *st = sl_store_create_memory(NULL, NULL);
    cr_assert_not_null(st);
    struct sl_error err = SL_ERROR_INIT;
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.zarr_format = f;
    spec.rank = 1;
    spec.dtype = SL_DTYPE_U16;
    spec.shape[0] = 10;
    spec.chunk_shape[0] = 4;
    cr_assert_eq(sl_group_create(st, "", f, "{\"t\": 1}", &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_group_create(st, "g", f, "{\"k\": \"v\"}", &err), SL_OK, "%s", err.text);
    const char *arrays[] = {"a", "g/b"};
    for (int i = 0; i < 2; i++) {
        sl_array *a = sl_array_create(st, arrays[i], &spec, NULL, &err);
        cr_assert_not_null(a, "%s", err.text);
        sl_array_unref(a);
    }
    return st;
}

Test(io_group, consolidate_writes_what_the_walk_reads_in_one_get)
{
    for (int f = 2; f <= 3; f++) {
        sl_store *st = hierarchy(f);
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_group_consolidate(st, "", &err), SL_OK, "v%d: %s", f, err.text);
        struct seen s = {.open_err = SL_ERROR_INIT};
        uint64_t before = gets_of(st);
        cr_assert_eq(sl_group_members(st, "", collect, &s, &err), SL_OK, "%s", err.text);
        cr_expect_eq(gets_of(st) - before, 1, "v%d: the walk costs one read", f);
        char want[256];
        /* in the listing's byte order: g/b/zarr.json sorts before g/zarr.json */
        if (f == 3)
            snprintf(want, sizeof(want), "a array v3 c;g/b array v3 c;g group v3 c;");
        else
            snprintf(want, sizeof(want), "a array v2 c;g group v2 c;g/b array v2 c;");
        cr_expect_str_eq(s.text, want, "v%d", f);
        cr_expect_eq(s.n_opened, 2, "v%d: %s", f, s.open_err.text);
        /* consolidating again replaces the document, and the group keeps its attributes */
        cr_assert_eq(sl_group_consolidate(st, "", &err), SL_OK, "%s", err.text);
        struct sl_buf attrs = SL_BUF_INIT;
        cr_assert_eq(sl_group_attributes(st, "", &attrs, &err), SL_OK, "%s", err.text);
        cr_expect_str_eq((const char *)attrs.data, "{\"t\":1}");
        sl_buf_fini(&attrs);
        sl_store_unref(st);
    }
}

Test(io_group, consolidate_refuses_arrays_and_nothing)
{
    sl_store *st = hierarchy(3);
    struct sl_error err = SL_ERROR_INIT;
    cr_expect_eq(sl_group_consolidate(st, "a", &err), SL_EINVAL);
    cr_expect(strstr(err.text, "an array") != NULL, "%s", err.text);
    err = SL_ERROR_INIT;
    cr_expect_eq(sl_group_consolidate(st, "nope", &err), SL_ENOTFOUND);
    cr_expect(strstr(err.text, "nothing") != NULL, "%s", err.text);
    sl_store_unref(st);
}
