/* SPDX-License-Identifier: MIT */
/*
 * Blocks: views that know their place in an array.  Construction and
 * slicing by array coordinates; the element work is view.c's.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/block.h>

#include "core_internal.h"

sl_status
sl_block_init(struct sl_block *b, sl_dtype dtype, uint32_t rank, const uint64_t *shape, void *data,
              const struct sl_region *region, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (region != NULL) {
        for (uint32_t d = 0; d < rank; d++)
            if (region->rank != rank || region->stop[d] - region->start[d] != shape[d])
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "block region extent differs from its shape in dimension "
                                    "%" PRIu32,
                                    d);
    }
    /* Blocks are made once per chunk on the hot path: write only the
     * fields in use rather than clearing the whole struct. */
    SL_TRY(sl_view_init(&b->view, dtype, rank, shape, data, err));
    if (region != NULL) {
        b->region.rank = rank;
        memcpy(b->region.start, region->start, rank * sizeof(uint64_t));
        memcpy(b->region.stop, region->stop, rank * sizeof(uint64_t));
    } else {
        b->region = sl_region_whole(rank, shape);
    }
    b->chunk.rank = 0;
    return SL_OK;
}

sl_status
sl_block_slice(const struct sl_block *b, const struct sl_region *sub, struct sl_block *out,
               struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (!sl_region_contains(&b->region, sub)) {
        char outer[160], inner[160];
        sl_region_format(&b->region, outer, sizeof(outer));
        sl_region_format(sub, inner, sizeof(inner));
        return sl_error_set(err, SL_EBOUNDS, NULL, "part %s is not inside block %s", inner, outer);
    }
    struct sl_region rel = {.rank = sub->rank};
    for (uint32_t d = 0; d < sub->rank; d++) {
        rel.start[d] = sub->start[d] - b->region.start[d];
        rel.stop[d] = sub->stop[d] - b->region.start[d];
    }
    struct sl_block tmp = *b;
    SL_TRY(sl_view_slice(&b->view, &rel, &tmp.view, err));
    tmp.region = *sub;
    *out = tmp;
    return SL_OK;
}
