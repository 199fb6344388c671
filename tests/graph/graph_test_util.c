/* SPDX-License-Identifier: MIT */
/* Helpers shared by the graph suites. */
#include "graph_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

sl_status
sl_test_getter_iota(void *ctx, const char *array_name, const struct sl_region *region,
                    struct sl_block *out, struct sl_error *err)
{
    (void)array_name;
    (void)err;
    const uint64_t *shape = ctx;
    uint64_t n = sl_view_count(&out->view);
    double *p = out->view.data;
    for (uint64_t i = 0; i < n; i++) {
        /* C-order index of element i of the block in the whole array. */
        uint64_t rem = i, lin = 0, mul = 1;
        uint64_t idx[SL_MAX_RANK];
        for (uint32_t d = out->view.rank; d-- > 0;) {
            idx[d] = rem % out->view.shape[d] + region->start[d];
            rem /= out->view.shape[d];
        }
        for (uint32_t d = out->view.rank; d-- > 0;) {
            lin += idx[d] * mul;
            mul *= shape[d];
        }
        p[i] = (double)lin;
    }
    return SL_OK;
}

sl_status
sl_test_putter_ok(void *ctx, const char *name, const struct sl_block *block, struct sl_error *err)
{
    (void)ctx;
    (void)name;
    (void)block;
    (void)err;
    return SL_OK;
}

sl_status
sl_test_map_noop(void *ctx, struct sl_block *out, size_t n_inputs, const struct sl_block *inputs,
                 struct sl_error *err)
{
    (void)ctx;
    (void)out;
    (void)n_inputs;
    (void)inputs;
    (void)err;
    return SL_OK;
}

sl_status
sl_test_regrid_noop(void *ctx, struct sl_block *out, const struct sl_block *in,
                    struct sl_error *err)
{
    (void)ctx;
    (void)out;
    (void)in;
    (void)err;
    return SL_OK;
}

uint32_t
sl_test_add_getter(sl_graph *g, const char *name, uint32_t rank, const uint64_t *shape,
                   const uint64_t *chunks)
{
    /* The getter needs the array's shape to number elements; keep a copy
     * that outlives the graph (a ring: tests keep few graphs alive). */
    static uint64_t shapes[256][SL_MAX_RANK];
    static unsigned next;
    uint64_t *copy = shapes[next++ % 256];
    memcpy(copy, shape, rank * sizeof(uint64_t));
    const struct sl_getter_desc desc = {
        .array_name = name,
        .dtype = SL_DTYPE_F64,
        .rank = rank,
        .shape = shape,
        .chunk_shape = chunks,
        .fn = sl_test_getter_iota,
        .ctx = copy,
    };
    uint32_t id;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_getter(g, name, &desc, &id, &err), SL_OK, "%s", err.text);
    return id;
}

uint32_t
sl_test_add_putter(sl_graph *g, const char *name, uint32_t input)
{
    const struct sl_putter_desc desc = {.fn = sl_test_putter_ok};
    uint32_t id;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_graph_add_putter(g, name, input, &desc, &id, &err), SL_OK, "%s", err.text);
    return id;
}

void
sl_test_golden(const char *rel, const char *text)
{
    const char *root = getenv("SL_SOURCE_ROOT");
    cr_assert_not_null(root, "SL_SOURCE_ROOT is not set (run through meson test)");
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/data/%s", root, rel);
    const char *update = getenv("SL_UPDATE_GOLDEN");
    if (update != NULL && strcmp(update, "1") == 0) {
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f, "cannot write %s", path);
        fputs(text, f);
        fclose(f);
        return;
    }
    size_t len;
    char *want = sl_test_read_file(path, &len);
    cr_assert_not_null(want, "missing golden file %s (SL_UPDATE_GOLDEN=1 writes it)", path);
    cr_assert_str_eq(text, want, "plan differs from %s:\n--- got\n%s--- want\n%s", path, text,
                     want);
    free(want);
}

sl_pool *
sl_test_pool(unsigned n)
{
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    o.n_workers = n;
    o.pin = SL_PIN_NONE;
    struct sl_error err = SL_ERROR_INIT;
    sl_pool *p = sl_pool_create(&o, &err);
    cr_assert_not_null(p, "%s", err.text);
    return p;
}
