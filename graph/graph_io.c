/* SPDX-License-Identifier: MIT */
/*
 * Get and put nodes: the graph's ends on io arrays.  A get's chunk grid is
 * the array's (inner) chunk grid, so it is only ever asked for whole stored
 * chunks; a put checks its input against the array and walks it shard by
 * shard.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/graph_node.h>

#include "core_internal.h"
#include "graph_internal.h"

sl_status
sl_graph_add_get(sl_graph *g, const char *name, sl_array *array, uint32_t *id, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    if (array == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": a get needs an array", name);
    SL_TRY(sl__graph_reserve(g, err));
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_GET, name, "get");
    tmp.dtype = sl_array_dtype(array);
    sl_status st = sl_array_chunk_grid(array, &tmp.grid, err);
    if (st != SL_OK)
        return sl__node_fail(err, name, st);
    sl_array_ref(array);
    tmp.u.io.array = array;
    sl__graph_commit_node(g, &tmp, id);
    return SL_OK;
}

/* Check that node `in` can be written into `array` as is (dtype, shape). */
static sl_status
put_check_input(const char *name, const struct sl__node *in, const sl_array *array,
                struct sl_error *err)
{
    if (in->dtype != sl_array_dtype(array))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "node \"%s\": input \"%s\" is %s but array %s stores %s; add a "
                            "cast op",
                            name, in->name, sl_dtype_name(in->dtype),
                            sl__array_name(array, &(struct sl__array_name){0}),
                            sl_dtype_name(sl_array_dtype(array)));
    uint32_t rank = sl_array_rank(array);
    const uint64_t *shape = sl_array_shape(array);
    bool same = in->grid.rank == rank;
    for (uint32_t d = 0; same && d < rank; d++)
        same = in->grid.shape[d] == shape[d];
    if (same)
        return SL_OK;
    char a[128], b[128];
    sl_shape_format(in->grid.rank, in->grid.shape, a, sizeof(a));
    sl_shape_format(rank, shape, b, sizeof(b));
    return sl_error_set(err, SL_EINVAL, NULL,
                        "node \"%s\": input \"%s\" has shape %s but array %s has shape %s", name,
                        in->name, a, sl__array_name(array, &(struct sl__array_name){0}), b);
}

sl_status
sl_graph_add_put(sl_graph *g, const char *name, uint32_t input, sl_array *array, uint32_t *id,
                 struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl__graph_check_new_node(g, name, err));
    SL_TRY(sl__graph_check_input(g, name, input, err));
    if (array == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "node \"%s\": a put needs an array", name);
    SL_TRY(put_check_input(name, sl__graph_node(g, input), array, err));
    uint32_t source;
    SL_TRY(sl__graph_input_with_chunks(g, name, input, sl_array_chunk_shape(array), &source, err));
    struct sl__node tmp;
    sl__node_start(&tmp, SL_NODE_PUT, name, "put");
    sl_status st = sl__graph_reserve(g, err);
    if (st == SL_OK) {
        tmp.dtype = sl_array_dtype(array);
        st = sl_array_chunk_grid(array, &tmp.grid, err);
    }
    if (st == SL_OK)
        st = sl__node_set_inputs(g, &tmp, 1, &source, err);
    if (st != SL_OK) {
        sl__node_fini(g, &tmp);
        if (source != input)
            sl__graph_pop_node(g);
        return st;
    }
    const uint64_t *shard = sl_array_shard_shape(array);
    const uint64_t *chunk = sl_array_chunk_shape(array);
    for (uint32_t d = 0; shard != NULL && d < tmp.grid.rank; d++)
        tmp.shard_chunks[d] = shard[d] / chunk[d];
    sl_array_ref(array);
    tmp.u.io.array = array;
    sl__graph_commit_node(g, &tmp, id);
    return SL_OK;
}

const char *
sl__array_name(const sl_array *a, struct sl__array_name *out)
{
    sl_store_name(sl_array_store(a), sl_array_path(a), out->text, sizeof(out->text));
    return out->text;
}

/* True when `a` and `b` are the same stored array (same store and path). */
bool
sl__array_same(const sl_array *a, const sl_array *b)
{
    return a == b || (sl_array_store(a) == sl_array_store(b) &&
                      strcmp(sl_array_path(a), sl_array_path(b)) == 0);
}
