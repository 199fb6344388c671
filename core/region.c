/* SPDX-License-Identifier: MIT */
/*
 * Regions: construction, intersection, containment, bounds checks with
 * messages that name the region and the array, and formatting.
 */
#include <inttypes.h>

#include <sluice/checked.h>
#include <sluice/region.h>

#include "core_internal.h"

sl_status
sl_region_init(struct sl_region *r, uint32_t rank, const uint64_t *start, const uint64_t *stop,
               struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "rank %" PRIu32 " exceeds the maximum of %d", rank, SL_MAX_RANK);
    for (uint32_t d = 0; d < rank; d++) {
        if (start[d] > stop[d])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "dimension %" PRIu32 ": start %" PRIu64 " is after stop %" PRIu64,
                                d, start[d], stop[d]);
    }
    r->rank = rank;
    for (uint32_t d = 0; d < rank; d++) {
        r->start[d] = start[d];
        r->stop[d] = stop[d];
    }
    return SL_OK;
}

struct sl_region
sl_region_whole(uint32_t rank, const uint64_t *shape)
{
    struct sl_region r = {.rank = rank > SL_MAX_RANK ? SL_MAX_RANK : rank};
    for (uint32_t d = 0; d < r.rank; d++) {
        r.start[d] = 0;
        r.stop[d] = shape[d];
    }
    return r;
}

uint64_t
sl_region_extent(const struct sl_region *r, uint32_t dim)
{
    return dim < r->rank ? r->stop[dim] - r->start[dim] : 0;
}

void
sl_region_shape(const struct sl_region *r, uint64_t *shape)
{
    for (uint32_t d = 0; d < r->rank; d++)
        shape[d] = r->stop[d] - r->start[d];
}

bool
sl_region_is_empty(const struct sl_region *r)
{
    for (uint32_t d = 0; d < r->rank; d++)
        if (r->stop[d] <= r->start[d])
            return true;
    return false;
}

sl_status
sl_region_count(const struct sl_region *r, uint64_t *count, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    uint64_t shape[SL_MAX_RANK];
    sl_region_shape(r, shape);
    return sl_shape_count(r->rank, shape, count, err);
}

bool
sl_region_intersect(const struct sl_region *a, const struct sl_region *b, struct sl_region *out)
{
    struct sl_region r = {.rank = a->rank};
    bool nonempty = a->rank == b->rank;
    for (uint32_t d = 0; d < a->rank && d < b->rank; d++) {
        r.start[d] = a->start[d] > b->start[d] ? a->start[d] : b->start[d];
        r.stop[d] = a->stop[d] < b->stop[d] ? a->stop[d] : b->stop[d];
        if (r.stop[d] <= r.start[d]) {
            r.stop[d] = r.start[d];
            nonempty = false;
        }
    }
    *out = r;
    return nonempty;
}

bool
sl_region_contains(const struct sl_region *outer, const struct sl_region *inner)
{
    if (outer->rank != inner->rank)
        return false;
    for (uint32_t d = 0; d < outer->rank; d++)
        if (inner->start[d] < outer->start[d] || inner->stop[d] > outer->stop[d])
            return false;
    return true;
}

bool
sl_region_equal(const struct sl_region *a, const struct sl_region *b)
{
    if (a->rank != b->rank)
        return false;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->start[d] != b->start[d] || a->stop[d] != b->stop[d])
            return false;
    return true;
}

size_t
sl_region_format(const struct sl_region *r, char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    sl__strbuf_append(buf, size, &len, "[");
    for (uint32_t d = 0; d < r->rank && d < SL_MAX_RANK; d++)
        sl__strbuf_append(buf, size, &len, "%s%" PRIu64 ":%" PRIu64, d ? ", " : "", r->start[d],
                          r->stop[d]);
    sl__strbuf_append(buf, size, &len, "]");
    return len;
}

sl_status
sl_region_check_within(const struct sl_region *r, uint32_t rank, const uint64_t *shape,
                       struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    char sel[160], arr[128];
    if (r->rank != rank) {
        sl_region_format(r, sel, sizeof(sel));
        return sl_error_set(err, SL_EBOUNDS, NULL,
                            "selection %s has rank %" PRIu32 ", the array has rank %" PRIu32, sel,
                            r->rank, rank);
    }
    for (uint32_t d = 0; d < rank; d++) {
        if (r->start[d] <= r->stop[d] && r->stop[d] <= shape[d])
            continue;
        sl_region_format(r, sel, sizeof(sel));
        sl_shape_format(rank, shape, arr, sizeof(arr));
        return sl_error_set(err, SL_EBOUNDS, NULL,
                            "selection %s leaves array of shape %s in dimension %" PRIu32, sel, arr,
                            d);
    }
    return SL_OK;
}
