/* SPDX-License-Identifier: MIT */
/*
 * Overflow-checked shape products and byte counts, with messages that carry
 * the shape and the limit.
 */
#include <inttypes.h>

#include <sluice/checked.h>

#include "core_internal.h"

size_t
sl_shape_format(uint32_t rank, const uint64_t *shape, char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    sl__strbuf_append(buf, size, &len, "[");
    for (uint32_t d = 0; d < rank; d++)
        sl__strbuf_append(buf, size, &len, "%s%" PRIu64, d ? ", " : "", shape[d]);
    sl__strbuf_append(buf, size, &len, "]");
    return len;
}

sl_status
sl_shape_count(uint32_t rank, const uint64_t *shape, uint64_t *count, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    uint64_t n = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < rank; d++) {
        if (!sl_u64_mul_fits(n, shape[d], &n))
            overflow = true;
    }
    /* A zero extent after an overflow still makes an empty array. */
    for (uint32_t d = 0; d < rank; d++)
        if (shape[d] == 0)
            overflow = false, n = 0;
    if (overflow) {
        char text[128];
        sl_shape_format(rank, shape, text, sizeof(text));
        return sl_error_set(err, SL_EOVERFLOW, NULL, "shape %s has more than %" PRIu64 " elements",
                            text, UINT64_MAX);
    }
    *count = n;
    return SL_OK;
}

sl_status
sl_shape_bytes(uint32_t rank, const uint64_t *shape, size_t elem_bytes, size_t *bytes,
               struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    uint64_t n;
    SL_TRY(sl_shape_count(rank, shape, &n, err));
    uint64_t total;
    if (!sl_u64_mul_fits(n, elem_bytes, &total) || total > SIZE_MAX) {
        char text[128];
        sl_shape_format(rank, shape, text, sizeof(text));
        return sl_error_set(err, SL_EOVERFLOW, NULL,
                            "shape %s of %zu-byte elements needs more than %zu bytes", text,
                            elem_bytes, (size_t)SIZE_MAX);
    }
    *bytes = (size_t)total;
    return SL_OK;
}
