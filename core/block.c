/* SPDX-License-Identifier: MIT */
/*
 * Blocks: C-order construction, views, strided copy and fill.
 *
 * DESIGN: copy and fill walk the block as an outer loop over all but the
 * innermost run of contiguous bytes, so a C-order block (or a view whose
 * rows are contiguous) moves with one memcpy per row, and whole contiguous
 * blocks with one memcpy.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/block.h>

#include "core_internal.h"

void
sl_block_init(struct sl_block *b, sl_dtype dtype, uint32_t rank, const uint64_t *shape, void *data,
              const struct sl_region *region)
{
    memset(b, 0, sizeof(*b));
    b->dtype = dtype;
    b->rank = rank > SL_MAX_RANK ? SL_MAX_RANK : rank;
    int64_t stride = (int64_t)sl_dtype_size(dtype);
    for (uint32_t d = b->rank; d-- > 0;) {
        b->shape[d] = shape[d];
        b->strides[d] = stride;
        stride *= (int64_t)shape[d];
    }
    b->data = data;
    b->region = region != NULL ? *region : sl_region_whole(b->rank, shape);
}

uint64_t
sl_block_count(const struct sl_block *b)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < b->rank; d++)
        n *= b->shape[d];
    return n;
}

bool
sl_block_is_contiguous(const struct sl_block *b)
{
    int64_t stride = (int64_t)sl_dtype_size(b->dtype);
    for (uint32_t d = b->rank; d-- > 0;) {
        if (b->shape[d] != 1 && b->strides[d] != stride)
            return false;
        stride *= (int64_t)b->shape[d];
    }
    return true;
}

sl_status
sl_block_view(const struct sl_block *b, const struct sl_region *sub, struct sl_block *out,
              struct sl_error *err)
{
    if (!sl_region_contains(&b->region, sub)) {
        char outer[160], inner[160];
        sl_region_format(&b->region, outer, sizeof(outer));
        sl_region_format(sub, inner, sizeof(inner));
        return sl_error_set(err, SL_EBOUNDS, NULL, "view %s is not inside block %s", inner, outer);
    }
    struct sl_block v = *b;
    char *p = b->data;
    for (uint32_t d = 0; d < b->rank; d++) {
        p += (int64_t)(sub->start[d] - b->region.start[d]) * b->strides[d];
        v.shape[d] = sub->stop[d] - sub->start[d];
    }
    v.data = p;
    v.region = *sub;
    *out = v;
    return SL_OK;
}

/*
 * Number of trailing dimensions that form one contiguous run in both blocks
 * (same shape assumed), and the run's length in bytes.
 */
static uint32_t
block_contiguous_tail(const struct sl_block *a, const struct sl_block *b, size_t *run_bytes)
{
    int64_t run = (int64_t)sl_dtype_size(a->dtype);
    uint32_t d = a->rank;
    while (d > 0 &&
           (a->shape[d - 1] == 1 || (a->strides[d - 1] == run && b->strides[d - 1] == run))) {
        run *= (int64_t)a->shape[d - 1];
        d--;
    }
    *run_bytes = (size_t)run;
    return a->rank - d;
}

sl_status
sl_block_copy(struct sl_block *dst, const struct sl_block *src, struct sl_error *err)
{
    if (dst->dtype != src->dtype || dst->rank != src->rank)
        return sl_error_set(
            err, SL_EINVAL, NULL, "block copy from %s rank %" PRIu32 " to %s rank %" PRIu32,
            sl_dtype_name(src->dtype), src->rank, sl_dtype_name(dst->dtype), dst->rank);
    for (uint32_t d = 0; d < src->rank; d++) {
        if (dst->shape[d] != src->shape[d])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "block copy shape mismatch in dimension %" PRIu32 ": %" PRIu64
                                " into %" PRIu64,
                                d, src->shape[d], dst->shape[d]);
        if (src->shape[d] == 0)
            return SL_OK;
    }
    size_t run;
    uint32_t outer = src->rank - block_contiguous_tail(dst, src, &run);
    uint64_t idx[SL_MAX_RANK] = {0};
    for (;;) {
        const char *s = src->data;
        char *t = dst->data;
        for (uint32_t d = 0; d < outer; d++) {
            s += (int64_t)idx[d] * src->strides[d];
            t += (int64_t)idx[d] * dst->strides[d];
        }
        memmove(t, s, run);
        uint32_t d = outer;
        while (d > 0 && ++idx[d - 1] == src->shape[d - 1])
            idx[--d] = 0;
        if (d == 0)
            return SL_OK;
    }
}

void
sl_block_fill(struct sl_block *b, const void *value)
{
    size_t esize = sl_dtype_size(b->dtype);
    for (uint32_t d = 0; d < b->rank; d++)
        if (b->shape[d] == 0)
            return;
    size_t run;
    uint32_t outer = b->rank - block_contiguous_tail(b, b, &run);
    uint64_t idx[SL_MAX_RANK] = {0};
    for (;;) {
        char *t = b->data;
        for (uint32_t d = 0; d < outer; d++)
            t += (int64_t)idx[d] * b->strides[d];
        /* One element, then double the filled prefix. */
        memcpy(t, value, esize);
        for (size_t done = esize; done < run;) {
            size_t n = done <= run - done ? done : run - done;
            memcpy(t + done, t, n);
            done += n;
        }
        uint32_t d = outer;
        while (d > 0 && ++idx[d - 1] == b->shape[d - 1])
            idx[--d] = 0;
        if (d == 0)
            return;
    }
}
