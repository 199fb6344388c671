/* SPDX-License-Identifier: MIT */
/*
 * Iterating the shards of an array that meet a selection, and the inner
 * chunks of one shard, in C order: the loop of "compute a shard's chunks
 * one by one, write the shard once" that transactions (<sluice/txn.h>)
 * are made for.
 */
#ifndef SL_ARRAY_ITER_H
#define SL_ARRAY_ITER_H

#include <stdbool.h>
#include <stdint.h>

#include <sluice/array.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/grid.h>
#include <sluice/region.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An iteration over the shards of a selection, or the inner chunks of one
 * shard.  `iter.coords` are the grid coordinates (shard grid or chunk
 * grid), `iter.chunk` the region (clipped at the array edge), `iter.part`
 * its intersection with the selection.  It points into itself: do not copy
 * it once started.  It owns nothing.
 */
struct sl_array_iter {
    struct sl_grid grid;      /* the grid walked */
    struct sl_grid_iter iter; /* the position */
};

/**
 * Start iterating the shards of `a` (its chunks when unsharded) that meet
 * `sel` (NULL: the whole array), in C order.
 * @return SL_OK, SL_EINVAL (NULL argument) or SL_EBOUNDS (`sel` outside the
 * array).
 * Thread-safety: any thread; an iterator is used by one thread at a time.
 */
SL_API SL_NODISCARD sl_status sl_array_iter_shards(const sl_array *a, const struct sl_region *sel,
                                                   struct sl_array_iter *it, struct sl_error *err);

/**
 * Start iterating the chunks of shard `shard` (shard grid coordinates) that
 * lie inside the array, in C order: chunk grid coordinates and regions.
 * @return SL_OK, SL_EINVAL or SL_EBOUNDS (`shard` outside the grid).
 * Thread-safety: any thread; an iterator is used by one thread at a time.
 */
SL_API SL_NODISCARD sl_status sl_array_iter_shard_chunks(const sl_array *a, const uint64_t *shard,
                                                         struct sl_array_iter *it,
                                                         struct sl_error *err);

/**
 * Advance.  @return false when there is nothing more.
 * Thread-safety: one thread per iterator at a time.
 */
SL_API bool sl_array_iter_next(struct sl_array_iter *it);

#ifdef __cplusplus
}
#endif

#endif /* SL_ARRAY_ITER_H */
