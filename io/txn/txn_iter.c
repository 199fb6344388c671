/* SPDX-License-Identifier: MIT */
/*
 * Iterating the shards of a selection and the inner chunks of a shard:
 * the loop of "compute a shard's chunks one by one, write the shard once".
 * Both walk a copy of one of the array's regular grids, which owns nothing.
 */
#include <inttypes.h>

#include "txn_internal.h"

sl_status
sl_array_iter_shards(const sl_array *a, const struct sl_region *sel, struct sl_array_iter *it,
                     struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (a == NULL || it == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "array or iterator is missing");
    if (sel != NULL)
        SL_TRY(sl_region_check_within(sel, a->meta.rank, a->meta.shape, err));
    it->grid = a->object_grid;
    sl_grid_iter_init(&it->iter, &it->grid, sel);
    return SL_OK;
}

sl_status
sl_array_iter_shard_chunks(const sl_array *a, const uint64_t *shard, struct sl_array_iter *it,
                           struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (a == NULL || it == NULL || (shard == NULL && a->meta.rank > 0))
        return sl_error_set(err, SL_EINVAL, NULL, "array, shard or iterator is missing");
    SL_TRY(sl__array_check_object_coords(a, shard, err));
    struct sl_region r;
    sl_grid_chunk_region(&a->object_grid, shard, &r);
    it->grid = a->chunk_grid;
    sl_grid_iter_init(&it->iter, &it->grid, &r);
    return SL_OK;
}

bool
sl_array_iter_next(struct sl_array_iter *it)
{
    return sl_grid_iter_next(&it->iter);
}
