/* SPDX-License-Identifier: MIT */
/*
 * Plugins (<sluice/plugin.h>) and operations a program adds: loading the
 * test plugins of tests/graph/plugins/ (built by meson into
 * SL_TEST_PLUGIN_DIR), every refusal naming the library and what is
 * wrong, nothing added by a refused load, graph files that name plugins
 * (with and without permission), and plugin ops of each kind in runs,
 * where a kernel's error is its chunk's failure.  Criterion runs each test
 * in a process of its own, so each starts with the built-in registry.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "graph_test_util.h"

TestSuite(graph_plugin, .timeout = 30.0);

/* The path of test plugin `variant` (libtest_plugin_VARIANT.so). */
static const char *
plugin_path(const char *variant)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/libtest_plugin_%s.so", SL_TEST_PLUGIN_DIR, variant);
    return path;
}

/* Load `variant`, which must fail with `code`; the message must hold
 * `text` and the library's path; the registry must be unchanged. */
static void
expect_refused(const char *variant, sl_status code, const char *text)
{
    const uint32_t before = sl_op_count();
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plugin_load(plugin_path(variant), &err), code, "%s: %s", variant, err.text);
    cr_assert_not_null(strstr(err.text, text), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "libtest_plugin_"), "names the library: %s", err.text);
    cr_assert_eq(sl_op_count(), before, "a refused load adds nothing");
}

static const struct sl_op_desc *
op_named(const char *name)
{
    const struct sl_op_desc *d = NULL;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_lookup(name, &d, &err), SL_OK, "%s", err.text);
    return d;
}

Test(graph_plugin, loads_operations_of_every_kind)
{
    const uint32_t n_builtin = sl_op_count();
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plugin_load(plugin_path("good"), &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_op_count(), n_builtin + 4);
    cr_assert_eq(op_named("add_const")->kind, SL_OP_KIND_MAP);
    cr_assert_eq(op_named("sum3")->kind, SL_OP_KIND_HALO);
    cr_assert_eq(op_named("pick")->kind, SL_OP_KIND_REGRID);
    cr_assert_str_eq(sl_op_at(n_builtin)->name, "add_const", "added ops follow the built-ins");
    cr_assert_not(sl_op_is_builtin(op_named("add_const")));
    cr_assert(sl_op_is_builtin(op_named("cast")));
    cr_assert_str_eq(sl_plugin_op_library(op_named("fail_above")), plugin_path("good"));
    cr_assert_null(sl_plugin_op_library(op_named("cast")));
    char names[256];
    sl_op_names(names, sizeof names);
    cr_assert_not_null(strstr(names, "uniform, add_const, fail_above, sum3, pick"), "%s", names);
    /* Loading it again changes nothing. */
    cr_assert_eq(sl_plugin_load(plugin_path("good"), &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_op_count(), n_builtin + 4);
}

Test(graph_plugin, abi_mismatch_names_both_versions)
{
    char want[96];
    snprintf(want, sizeof want, "built for plugin ABI version %u; this sluice loads version %u",
             SL_PLUGIN_ABI_VERSION + 41, SL_PLUGIN_ABI_VERSION);
    expect_refused("abi", SL_EUNSUPPORTED, want);
}

Test(graph_plugin, missing_symbols_are_named)
{
    expect_refused("no_abi", SL_ENOTFOUND, "does not export sl_plugin_abi_version");
    expect_refused("no_register", SL_ENOTFOUND, "does not export sl_plugin_register");
}

Test(graph_plugin, a_library_that_is_not_there)
{
    expect_refused("absent", SL_ENOTFOUND, "cannot load");
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plugin_load("", &err), SL_EINVAL);
}

Test(graph_plugin, duplicate_names_are_refused)
{
    expect_refused("dup_builtin", SL_EEXIST, "op \"cast\" exists: a built-in operation");
    expect_refused("dup_self", SL_EEXIST, "op \"twice\" is added twice");
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plugin_load(plugin_path("good"), &err), SL_OK, "%s", err.text);
    expect_refused("dup_other", SL_EEXIST, "op \"add_const\" exists: an operation of plugin");
}

Test(graph_plugin, a_bad_descriptor_adds_none_of_the_library)
{
    expect_refused("bad_desc", SL_EINVAL,
                   "op \"halo_without_apply_at\": a halo op without apply_at");
    const struct sl_op_desc *d;
    cr_assert_eq(sl_op_lookup("fine", &d, NULL), SL_ENOTFOUND,
                 "the good op staged before it is not added");
}

Test(graph_plugin, register_says_why_it_refuses)
{
    expect_refused("fails", SL_EINVAL, "no licence for");
    const struct sl_op_desc *d;
    cr_assert_eq(sl_op_lookup("add_const", &d, NULL), SL_ENOTFOUND,
                 "the op it added before refusing is not added");
}

/* ---- operations a program adds ------------------------------------------------ */

static sl_status
twice_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
           struct sl_error *err)
{
    (void)args, (void)rank, (void)err;
    op->out_dtype = in_dtype;
    return SL_OK;
}

static sl_status
twice_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
            void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)op, (void)scratch, (void)scratch_bytes;
    if (in->dtype != SL_DTYPE_F64 || in->rank != 2)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "twice: float64 of rank 2 only");
    for (uint64_t i = 0; i < in->shape[0]; i++)
        for (uint64_t j = 0; j < in->shape[1]; j++)
            ((double *)out->data)[(int64_t)i * out->stride[0] + (int64_t)j * out->stride[1]] =
                2 *
                ((const double *)in->data)[(int64_t)i * in->stride[0] + (int64_t)j * in->stride[1]];
    return SL_OK;
}

static const struct sl_op_desc twice_desc = {
    .name = "twice",
    .kind = SL_OP_KIND_MAP,
    .summary = "2 x",
    .bind = twice_bind,
    .apply = twice_apply,
};

Test(graph_plugin, a_program_registers_its_own_op)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_register(&twice_desc, &err), SL_OK, "%s", err.text);
    cr_assert_null(sl_plugin_op_library(op_named("twice")));
    cr_assert_neq(op_named("twice"), &twice_desc, "the registry holds a copy");
    cr_assert_eq(sl_op_register(&twice_desc, &err), SL_EEXIST);
    cr_assert_str_eq(err.text, "op \"twice\" exists: an operation added before");
    /* A plugin's op of the same name is refused too, naming the program. */
    expect_refused("dup_self", SL_EEXIST, "op \"twice\" exists: an operation the program added");
}

/* ---- running plugin ops ------------------------------------------------------- */

struct collector {
    uint64_t shape[2];
    double *data;
    _Atomic unsigned calls;
};

static sl_status
collect_put(void *ctx, const char *name, const struct sl_block *b, struct sl_error *err)
{
    struct collector *c = ctx;
    (void)name, (void)err;
    atomic_fetch_add(&c->calls, 1);
    cr_assert_eq(b->view.dtype, SL_DTYPE_F64);
    for (uint64_t i = 0; i < b->view.shape[0]; i++)
        for (uint64_t j = 0; j < b->view.shape[1]; j++)
            c->data[(b->region.start[0] + i) * c->shape[1] + b->region.start[1] + j] =
                ((const double *)
                     b->view.data)[(int64_t)i * b->view.stride[0] + (int64_t)j * b->view.stride[1]];
    return SL_OK;
}

/* A plugin op `name` bound for float64 rank 2 with `param` = `value`
 * (NULL: none) or factors `f` (for pick). */
static struct sl_op
bind_plugin_op(const char *name, const char *param, double value)
{
    const struct sl_op_desc *d = op_named(name);
    struct sl_op_args args;
    memset(&args, 0, sizeof args);
    struct sl_error err = SL_ERROR_INIT;
    if (param != NULL && strcmp(param, "factors") == 0) {
        const uint64_t f[2] = {(uint64_t)value, (uint64_t)value};
        cr_assert_eq(sl_op_args_set_factors(&args, d, param, 2, f, &err), SL_OK, "%s", err.text);
    } else if (param != NULL) {
        cr_assert_eq(sl_op_args_set_number(&args, d, param, value, &err), SL_OK, "%s", err.text);
    }
    struct sl_op op;
    cr_assert_eq(sl_op_bind(&op, d, &args, SL_DTYPE_F64, 2, &err), SL_OK, "%s", err.text);
    return op;
}

/* Run iota (shape 40 x 30, chunks 10 x 8) -> op -> collector. */
static sl_plan *
run_one(const struct sl_op *op, struct collector *c, uint32_t *put, sl_status want)
{
    sl_pool *pool = sl_test_pool(2);
    sl_graph *g = sl_graph_create(NULL, NULL);
    const uint64_t shape[] = {40, 30}, chunks[] = {10, 8};
    uint32_t raw = sl_test_add_getter(g, "raw", 2, shape, chunks);
    uint32_t id;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_op(g, "op", raw, op, NULL, &id, &err), SL_OK, "%s", err.text);
    struct sl_node_info info;
    cr_assert_eq(sl_graph_node_info(g, id, &info, NULL), SL_OK);
    memset(c, 0, sizeof *c);
    memcpy(c->shape, info.grid->shape, sizeof c->shape);
    c->data = calloc(c->shape[0] * c->shape[1], sizeof(double));
    const struct sl_putter_desc pd = {.fn = collect_put, .ctx = c};
    cr_assert_eq(sl_graph_add_putter(g, "out", id, &pd, put, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_seal(g, &err), SL_OK, "%s", err.text);
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    cr_assert_not_null(plan, "%s", err.text);
    cr_assert_eq(sl_plan_run(plan, pool, &err), want, "%s", err.text);
    sl_graph_unref(g);
    sl_pool_destroy(pool);
    return plan;
}

Test(graph_plugin, plugin_ops_of_each_kind_compute)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plugin_load(plugin_path("good"), &err), SL_OK, "%s", err.text);
    struct collector c;
    uint32_t put;
    /* map */
    struct sl_op op = bind_plugin_op("add_const", "value", 0.5);
    sl_plan *plan = run_one(&op, &c, &put, SL_OK);
    for (uint64_t k = 0; k < 40 * 30; k++)
        cr_assert_float_eq(c.data[k], (double)k + 0.5, 0, "add_const at %llu",
                           (unsigned long long)k);
    sl_plan_destroy(plan);
    free(c.data);
    /* halo: each row's neighbours along x, the edges repeated */
    op = bind_plugin_op("sum3", NULL, 0);
    plan = run_one(&op, &c, &put, SL_OK);
    for (uint64_t i = 0; i < 40; i++)
        for (uint64_t j = 0; j < 30; j++) {
            const double x = (double)(i * 30 + j);
            const double left = j > 0 ? x - 1 : x, right = j + 1 < 30 ? x + 1 : x;
            cr_assert_float_eq(c.data[i * 30 + j], left + x + right, 0, "sum3 at (%llu, %llu)",
                               (unsigned long long)i, (unsigned long long)j);
        }
    sl_plan_destroy(plan);
    free(c.data);
    /* regrid: every second element of every second row */
    op = bind_plugin_op("pick", "factors", 2);
    plan = run_one(&op, &c, &put, SL_OK);
    cr_assert_eq(c.shape[0], 20);
    cr_assert_eq(c.shape[1], 15);
    for (uint64_t i = 0; i < 20; i++)
        for (uint64_t j = 0; j < 15; j++)
            cr_assert_float_eq(c.data[i * 15 + j], (double)(2 * i * 30 + 2 * j), 0,
                               "pick at (%llu, %llu)", (unsigned long long)i,
                               (unsigned long long)j);
    sl_plan_destroy(plan);
    free(c.data);
}

Test(graph_plugin, a_kernel_error_fails_its_chunk_with_the_message)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plugin_load(plugin_path("good"), &err), SL_OK, "%s", err.text);
    struct collector c;
    uint32_t put;
    /* Elements are their C-order index: rows 30 and on (chunk row 3) fail. */
    struct sl_op op = bind_plugin_op("fail_above", "limit", 30 * 30 - 1);
    sl_plan *plan = run_one(&op, &c, &put, SL_EFUNC);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, put, &ps, NULL), SL_OK);
    cr_assert_eq(ps.n_ok, 12, "the 3 x 4 chunks of rows 0..29 are written");
    for (uint32_t k = 12; k < 16; k++)
        cr_assert_eq(ps.codes[k], SL_EFUNC, "chunk %u", k);
    size_t n;
    const struct sl_chunk_error *e = sl_plan_errors(plan, &n);
    cr_assert_eq(n, 4);
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(e[k].key.idx[0], 3);
        cr_assert_not_null(strstr(e[k].text, "above limit 899"), "%s", e[k].text);
    }
    cr_assert_eq(c.calls, 12);
    sl_plan_destroy(plan);
    free(c.data);
}

/* ---- graph files that name plugins ------------------------------------------- */

/* A graph file whose only node uses add_const (it fails to build for want
 * of arrays, which is after the plugins are loaded). */
static sl_graph_json *
load_text(const char *plugins, bool allow, struct sl_error *first)
{
    char text[8192];
    snprintf(text, sizeof text,
             "{\"sluice\": 1, \"plugins\": %s, \"arrays\": {},"
             " \"nodes\": {\"a\": {\"op\": \"add_const\", \"input\": \"a\", \"value\": 1}}}",
             plugins);
    struct sl_graph_json_opts opts = SL_GRAPH_JSON_OPTS_DEFAULT;
    opts.allow_plugins = allow;
    struct sl_error records[4];
    struct sl_graph_json_errors errors = {.errors = records, .capacity = 4};
    sl_graph_json *doc = sl_graph_json_load_string(text, strlen(text), "test.json", &opts, &errors);
    *first = errors.count > 0 ? records[0] : SL_ERROR_INIT;
    return doc;
}

Test(graph_plugin, graph_files_load_plugins_only_when_allowed)
{
    char list[4200];
    snprintf(list, sizeof list, "[\"%s\"]", plugin_path("good"));
    struct sl_error e;
    cr_assert_null(load_text(list, false, &e));
    cr_assert_eq(e.code, SL_EACCES);
    cr_assert_str_eq(e.path, "/plugins");
    cr_assert_not_null(strstr(e.text, "--allow-plugins"), "%s", e.text);
    const struct sl_op_desc *d;
    cr_assert_eq(sl_op_lookup("add_const", &d, NULL), SL_ENOTFOUND, "nothing was loaded");
    /* Allowed: loaded, and the node's op is found (the cycle is what is wrong). */
    cr_assert_null(load_text(list, true, &e));
    cr_assert_eq(sl_op_lookup("add_const", &d, NULL), SL_OK);
    cr_assert_null(strstr(e.text, "unknown op"), "%s", e.text);
}

Test(graph_plugin, graph_files_report_a_refused_plugin_at_its_entry)
{
    char list[8400], good[4096];
    snprintf(good, sizeof good, "%s", plugin_path("good"));
    snprintf(list, sizeof list, "[\"%s\", \"%s\"]", good, plugin_path("abi"));
    struct sl_error e;
    cr_assert_null(load_text(list, true, &e));
    cr_assert_eq(e.code, SL_EUNSUPPORTED, "%s: %s", e.path, e.text);
    cr_assert_str_eq(e.path, "/plugins/1");
    cr_assert_not_null(strstr(e.text, "ABI version"), "%s", e.text);
    cr_assert_null(load_text("[\"libtest_plugin_good.so\"]", true, &e));
    cr_assert_eq(e.code, SL_ENOTFOUND, "relative to the base directory (\".\"): %s", e.text);
    cr_assert_null(load_text("\"x.so\"", true, &e));
    cr_assert_eq(e.code, SL_EINVAL);
    cr_assert_str_eq(e.path, "/plugins");
}

/* ---- the example plugin ------------------------------------------------------ */

/* Apply the example's invert to `n` elements of `dt` at `in` into `out`. */
static void
invert_values(sl_dtype dt, const void *in, void *out, uint64_t n)
{
    const struct sl_op_desc *d = op_named("invert");
    struct sl_op_args args;
    memset(&args, 0, sizeof args);
    struct sl_op op;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_bind(&op, d, &args, dt, 1, &err), SL_OK, "%s", err.text);
    struct sl_view vi, vo;
    cr_assert_eq(sl_view_init(&vi, dt, 1, &n, (void *)in, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, dt, 1, &n, out, NULL), SL_OK);
    cr_assert_eq(sl_op_apply(&op, &vi, &vo, NULL, 0, &err), SL_OK, "%s", err.text);
}

Test(graph_plugin, the_example_invert_by_dtype)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plugin_load(SL_TEST_EXAMPLE_PLUGIN, &err), SL_OK, "%s", err.text);
    const uint8_t u8[3] = {0, 7, 255}, b[2] = {0, 1};
    uint8_t u8o[3], bo[2];
    invert_values(SL_DTYPE_U8, u8, u8o, 3);
    cr_assert(u8o[0] == 255 && u8o[1] == 248 && u8o[2] == 0);
    invert_values(SL_DTYPE_BOOL, b, bo, 2);
    cr_assert(bo[0] == 1 && bo[1] == 0);
    const uint64_t u64[2] = {0, UINT64_MAX - 3};
    uint64_t u64o[2];
    invert_values(SL_DTYPE_U64, u64, u64o, 2);
    cr_assert(u64o[0] == UINT64_MAX && u64o[1] == 3);
    const int8_t i8[3] = {5, -128, 127};
    int8_t i8o[3];
    invert_values(SL_DTYPE_I8, i8, i8o, 3);
    cr_assert(i8o[0] == -5 && i8o[1] == -128 && i8o[2] == -127, "signed ints wrap as numpy's");
    const int64_t i64[2] = {INT64_MIN, 42};
    int64_t i64o[2];
    invert_values(SL_DTYPE_I64, i64, i64o, 2);
    cr_assert(i64o[0] == INT64_MIN && i64o[1] == -42);
    const float f32[2] = {1.5f, -0.0f};
    float f32o[2];
    invert_values(SL_DTYPE_F32, f32, f32o, 2);
    cr_assert(f32o[0] == -1.5f && f32o[1] == 0.0f && !signbit(f32o[1]));
    /* float16 is refused when bound. */
    struct sl_op_args args;
    memset(&args, 0, sizeof args);
    struct sl_op op;
    cr_assert_eq(sl_op_bind(&op, op_named("invert"), &args, SL_DTYPE_F16, 1, &err),
                 SL_EUNSUPPORTED);
}

Test(graph_plugin, the_example_invert_over_strided_views)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plugin_load(SL_TEST_EXAMPLE_PLUGIN, &err), SL_OK, "%s", err.text);
    /* A 3 x 4 x 5 uint16 block read transposed (strides reversed) into a
     * C-order output. */
    uint16_t src[60], dst[60];
    for (unsigned k = 0; k < 60; k++)
        src[k] = (uint16_t)(k * 1000);
    struct sl_view in = {
        .dtype = SL_DTYPE_U16, .rank = 3, .shape = {5, 4, 3}, .stride = {1, 5, 20}, .data = src};
    struct sl_view out;
    cr_assert_eq(sl_view_init(&out, SL_DTYPE_U16, 3, in.shape, dst, NULL), SL_OK);
    struct sl_op_args args;
    memset(&args, 0, sizeof args);
    struct sl_op op;
    cr_assert_eq(sl_op_bind(&op, op_named("invert"), &args, SL_DTYPE_U16, 3, &err), SL_OK);
    cr_assert_eq(sl_op_apply(&op, &in, &out, NULL, 0, &err), SL_OK, "%s", err.text);
    for (unsigned a = 0; a < 5; a++)
        for (unsigned b = 0; b < 4; b++)
            for (unsigned c = 0; c < 3; c++)
                cr_assert_eq(dst[(a * 4 + b) * 3 + c], 65535 - src[a + 5 * b + 20 * c],
                             "(%u, %u, %u)", a, b, c);
}
