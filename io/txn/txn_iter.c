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
    if (a == NULL || it == NULL || (shard == NULL && a->meta.rank > 0))
        return sl_error_set(err, SL_EINVAL, NULL, "array, shard or iterator is missing");
    for (uint32_t d = 0; d < a->meta.rank; d++)
        if (shard[d] >= a->object_grid.n_chunks[d]) {
            struct sl_chunk_key key = sl_chunk_key_make(a->meta.rank, shard);
            return sl_error_set(err, SL_EBOUNDS, &key,
                                "shard index %" PRIu64 " in dimension %u is outside the grid of "
                                "%" PRIu64 " shards",
                                shard[d], d, a->object_grid.n_chunks[d]);
        }
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
