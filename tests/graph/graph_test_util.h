/* SPDX-License-Identifier: MIT */
/* Helpers shared by the graph suites: trivial getters, maps and putters. */
#ifndef SL_GRAPH_TEST_UTIL_H
#define SL_GRAPH_TEST_UTIL_H

#include <criterion/criterion.h>

#include <sluice.h>

#include "graph_internal.h"

/* A getter that writes each element's C-order index in the whole array
 * (`ctx` points at the array's shape). */
sl_status sl_test_getter_iota(void *ctx, const char *array_name, const struct sl_region *region,
                              struct sl_block *out, struct sl_error *err);
/* A putter that accepts everything. */
sl_status sl_test_putter_ok(void *ctx, const char *name, const struct sl_block *block,
                            struct sl_error *err);
/* A map/regrid that does nothing useful (planning tests never run it). */
sl_status sl_test_map_noop(void *ctx, struct sl_block *out, size_t n_inputs,
                           const struct sl_block *inputs, struct sl_error *err);
sl_status sl_test_regrid_noop(void *ctx, struct sl_block *out, const struct sl_block *in,
                              struct sl_error *err);

/* Add a float64 iota getter node of `rank` dims; aborts the test on failure. */
uint32_t sl_test_add_getter(sl_graph *g, const char *name, uint32_t rank, const uint64_t *shape,
                            const uint64_t *chunks);
/* Add an accepting putter; aborts the test on failure. */
uint32_t sl_test_add_putter(sl_graph *g, const char *name, uint32_t input);

/* A pool of `n` unpinned workers; aborts the test on failure. */
sl_pool *sl_test_pool(unsigned n);

/* Compare `text` with tests/data/<rel>, or rewrite the file when
 * SL_UPDATE_GOLDEN=1; on mismatch fail showing both. */
void sl_test_golden(const char *rel, const char *text);

#endif /* SL_GRAPH_TEST_UTIL_H */
