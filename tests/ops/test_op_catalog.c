/* SPDX-License-Identifier: MIT */
/*
 * The catalogue of operations (ops/op_catalog.c): descriptors a program
 * adds with sl_op_register, every refusal of sl_op_desc_check, duplicates
 * against built-ins and added ops, the order of listings, binding what an
 * added op's bind fills, and registering while other threads look up.
 * Criterion runs each test in a process of its own.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

TestSuite(ops_op_catalog, .timeout = 10.0);

static sl_status
copy_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
          struct sl_error *err)
{
    (void)args, (void)rank, (void)err;
    op->out_dtype = in_dtype;
    return SL_OK;
}

static sl_status
copy_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
           void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)op, (void)scratch, (void)scratch_bytes;
    return sl_cast(in, out, err);
}

static sl_status
noop_apply_at(const struct sl_op *op, const uint64_t *shape, const struct sl_view *in,
              const uint64_t *in_start, const struct sl_view *out, const uint64_t *out_start,
              void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)op, (void)shape, (void)in, (void)in_start, (void)out, (void)out_start, (void)scratch,
        (void)scratch_bytes, (void)err;
    return SL_OK;
}

static const struct sl_op_param two_params[] = {
    {"gain", SL_OP_PARAM_NUMBER, true, "multiplier"},
    {"dtype", SL_OP_PARAM_DTYPE, false, "output dtype; default the input's"},
};

/* A good map descriptor called `name`. */
static struct sl_op_desc
good_desc(const char *name)
{
    return (struct sl_op_desc){.name = name,
                               .kind = SL_OP_KIND_MAP,
                               .summary = "a copy",
                               .n_params = 2,
                               .params = two_params,
                               .bind = copy_bind,
                               .apply = copy_apply};
}

/* sl_op_desc_check and sl_op_register refuse `d` with EINVAL saying `text`. */
static void
expect_bad(const struct sl_op_desc *d, const char *text)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_desc_check(d, &err), SL_EINVAL, "%s", text);
    cr_assert_not_null(strstr(err.text, text), "want \"%s\" in: %s", text, err.text);
    const uint32_t n = sl_op_count();
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_register(d, &err), SL_EINVAL);
    cr_assert_eq(sl_op_count(), n);
}

Test(ops_op_catalog, bad_descriptors_are_refused_saying_why)
{
    struct sl_op_desc d = good_desc(NULL);
    expect_bad(&d, "the name is NULL");
    d = good_desc("");
    expect_bad(&d, "the name is empty");
    d = good_desc("9lives");
    expect_bad(&d, "is not 1 to 32 letters, digits and '_' starting with a letter");
    d = good_desc("has-dash");
    expect_bad(&d, "\"has-dash\" is not 1 to 32");
    d = good_desc("a_name_that_is_far_too_long_to_be_ok");
    expect_bad(&d, "is not 1 to 32");
    d = good_desc("expr");
    expect_bad(&d, "op \"expr\": graph files use that name for another kind of node");
    d = good_desc("ok");
    d.summary = NULL;
    expect_bad(&d, "op \"ok\": no summary");
    d = good_desc("ok");
    d.kind = (sl_op_kind)7;
    expect_bad(&d, "op \"ok\": unknown kind 7");
    d = good_desc("ok");
    d.bind = NULL;
    expect_bad(&d, "op \"ok\": no bind function");
    d = good_desc("ok");
    d.apply = NULL;
    expect_bad(&d, "op \"ok\": a map op without apply");
    d = good_desc("ok");
    d.kind = SL_OP_KIND_HALO;
    expect_bad(&d, "op \"ok\": a halo op without apply_at");
    d = good_desc("ok");
    d.apply_at = noop_apply_at;
    expect_bad(&d, "op \"ok\": a map op with apply_at, which only halo ops have");
}

Test(ops_op_catalog, bad_parameters_are_refused_saying_which)
{
    struct sl_op_desc d = good_desc("ok");
    d.n_params = SL_OP_MAX_PARAMS + 1;
    expect_bad(&d, "op \"ok\": 9 parameters; at most 8");
    d = good_desc("ok");
    d.params = NULL;
    expect_bad(&d, "op \"ok\": 2 parameters but no params");
    struct sl_op_param p[2] = {two_params[0], two_params[1]};
    d = good_desc("ok");
    d.params = p;
    p[1].name = "";
    expect_bad(&d, "op \"ok\": parameter 1's name is empty");
    p[1].name = "gain";
    expect_bad(&d, "op \"ok\": parameters 0 and 1 are both called \"gain\"");
    p[1].name = "input";
    expect_bad(&d, "op \"ok\": parameter 1 \"input\" is a field every op node has");
    p[1].name = "dtype";
    p[1].type = (sl_op_param_type)40;
    expect_bad(&d, "op \"ok\": parameter \"dtype\" has unknown type 40");
    p[1].type = SL_OP_PARAM_DTYPE;
    p[1].doc = NULL;
    expect_bad(&d, "op \"ok\": parameter \"dtype\" has no doc");
}

Test(ops_op_catalog, added_ops_are_found_listed_and_bound)
{
    const uint32_t n_builtin = sl_op_count();
    const struct sl_op_desc d = good_desc("gain_copy");
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_register(&d, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_op_count(), n_builtin + 1);
    const struct sl_op_desc *found = NULL;
    cr_assert_eq(sl_op_lookup("gain_copy", &found, &err), SL_OK);
    cr_assert_eq(found, sl_op_at(n_builtin), "added ops follow the built-ins");
    cr_assert_null(sl_op_at(n_builtin + 1));
    cr_assert_not(sl_op_is_builtin(found));
    char names[256];
    sl_op_names(names, sizeof names);
    cr_assert_not_null(strstr(names, "uniform, gain_copy"), "%s", names);
    cr_assert_eq(sl_op_lookup("nothing", &found, &err), SL_ENOTFOUND);
    cr_assert_not_null(strstr(err.text, "gain_copy"), "unknown names list added ops: %s", err.text);
    /* The generic checks apply to added ops: a required parameter. */
    struct sl_op_args args;
    memset(&args, 0, sizeof args);
    struct sl_op op;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_lookup("gain_copy", &found, NULL), SL_OK);
    cr_assert_eq(sl_op_bind(&op, found, &args, SL_DTYPE_U8, 1, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "gain_copy: parameter \"gain\" is required (multiplier)");
    cr_assert_eq(sl_op_args_set_number(&args, found, "gain", 2, NULL), SL_OK);
    cr_assert_eq(sl_op_bind(&op, found, &args, SL_DTYPE_U8, 1, NULL), SL_OK);
    uint8_t src[3] = {1, 2, 3}, dst[3] = {0};
    struct sl_view in, out;
    cr_assert_eq(sl_view_init(&in, SL_DTYPE_U8, 1, (const uint64_t[]){3}, src, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&out, SL_DTYPE_U8, 1, (const uint64_t[]){3}, dst, NULL), SL_OK);
    cr_assert_eq(sl_op_apply(&op, &in, &out, NULL, 0, NULL), SL_OK);
    cr_assert_eq(memcmp(src, dst, 3), 0);
    char text[96];
    sl_op_format(&op, text, sizeof text);
    cr_assert_str_eq(text, "gain_copy(gain=2) uint8 -> uint8");
}

Test(ops_op_catalog, duplicate_names_are_refused)
{
    struct sl_op_desc d = good_desc("cast");
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_register(&d, &err), SL_EEXIST);
    cr_assert_str_eq(err.text, "op \"cast\" exists: a built-in operation");
    d = good_desc("mine");
    cr_assert_eq(sl_op_register(&d, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_register(&d, &err), SL_EEXIST);
    cr_assert_str_eq(err.text, "op \"mine\" exists: an operation added before");
}

/* A regrid op whose bind forgets the factors. */
static sl_status
lazy_regrid_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
                 struct sl_error *err)
{
    (void)args, (void)rank, (void)err;
    op->out_dtype = in_dtype;
    return SL_OK;
}

Test(ops_op_catalog, binding_checks_what_a_kind_must_fill)
{
    struct sl_op_desc d = good_desc("lazy");
    d.kind = SL_OP_KIND_REGRID;
    d.n_params = 0;
    d.bind = lazy_regrid_bind;
    cr_assert_eq(sl_op_register(&d, NULL), SL_OK);
    const struct sl_op_desc *found;
    cr_assert_eq(sl_op_lookup("lazy", &found, NULL), SL_OK);
    struct sl_op_args args;
    memset(&args, 0, sizeof args);
    struct sl_op op;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_op_bind(&op, found, &args, SL_DTYPE_F32, 2, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "lazy: bind set u.downsample.rank 0 for rank 2 (a regrid op gives "
                               "one factor per dimension)");
}

Test(ops_op_catalog, full_registry_refuses_more)
{
    static char names[SL_OP_MAX_ADDED + 1][16];
    uint32_t added = 0;
    sl_status st = SL_OK;
    for (uint32_t i = 0; i <= SL_OP_MAX_ADDED && st == SL_OK; i++) {
        snprintf(names[i], sizeof names[i], "op_%u", i);
        const struct sl_op_desc d = good_desc(names[i]);
        struct sl_error err = SL_ERROR_INIT;
        st = sl_op_register(&d, &err);
        if (st == SL_OK)
            added++;
        else
            cr_assert_str_eq(err.text, "op \"op_256\": the registry holds 256 added operations "
                                       "already");
    }
    cr_assert_eq(st, SL_EOVERFLOW);
    cr_assert_eq(added, SL_OP_MAX_ADDED);
}

/* ---- registering while others look up ------------------------------------- */

#define N_WRITERS 4
#define OPS_PER_WRITER 32

static char writer_names[N_WRITERS][OPS_PER_WRITER][16];

static void *
writer(void *arg)
{
    const unsigned w = (unsigned)(uintptr_t)arg;
    for (unsigned k = 0; k < OPS_PER_WRITER; k++) {
        const struct sl_op_desc d = good_desc(writer_names[w][k]);
        cr_assert_eq(sl_op_register(&d, NULL), SL_OK);
    }
    return NULL;
}

/* Every op a lookup or listing sees is complete. */
static void *
reader(void *arg)
{
    (void)arg;
    for (unsigned round = 0; round < 2000; round++) {
        const uint32_t n = sl_op_count();
        for (uint32_t i = 0; i < n; i++) {
            const struct sl_op_desc *d = sl_op_at(i);
            cr_assert_not_null(d);
            cr_assert_not_null(d->name);
            cr_assert_eq(d->summary != NULL && d->bind != NULL, true);
        }
        const struct sl_op_desc *d;
        if (sl_op_lookup(writer_names[round % N_WRITERS][0], &d, NULL) == SL_OK)
            cr_assert_str_eq(d->name, writer_names[round % N_WRITERS][0]);
    }
    return NULL;
}

Test(ops_op_catalog, concurrent_registration_and_lookup)
{
    const uint32_t before = sl_op_count();
    for (unsigned w = 0; w < N_WRITERS; w++)
        for (unsigned k = 0; k < OPS_PER_WRITER; k++)
            snprintf(writer_names[w][k], sizeof writer_names[w][k], "w%u_%u", w, k);
    pthread_t t[N_WRITERS + 2];
    for (unsigned i = 0; i < N_WRITERS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, writer, (void *)(uintptr_t)i), 0);
    for (unsigned i = N_WRITERS; i < N_WRITERS + 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, reader, NULL), 0);
    for (unsigned i = 0; i < N_WRITERS + 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(sl_op_count(), before + N_WRITERS * OPS_PER_WRITER);
    for (unsigned w = 0; w < N_WRITERS; w++)
        for (unsigned k = 0; k < OPS_PER_WRITER; k++) {
            const struct sl_op_desc *d;
            cr_assert_eq(sl_op_lookup(writer_names[w][k], &d, NULL), SL_OK);
        }
}
