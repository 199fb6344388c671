/* SPDX-License-Identifier: MIT */
/*
 * Dense N-d boxes: copying a box between two C-order arrays, filling a box
 * or everything outside one with a fill value, and testing whether a chunk
 * is all fill.  Region reads and writes and edge-chunk padding use these.
 *
 * DESIGN: trailing dimensions that both arrays cover fully are folded into
 * one contiguous run, so copying whole rows (the common case) is one
 * memcpy per run rather than per element.
 */
#include <string.h>

#include "zarr_internal.h"

/* Strides in elements of a C-order array of `dims`. */
static void
box_strides(uint32_t rank, const uint64_t *dims, uint64_t *stride)
{
    uint64_t s = 1;
    for (uint32_t d = rank; d-- > 0;) {
        stride[d] = s;
        s *= dims[d];
    }
}

/* Innermost dimension k such that dims after it are whole in both arrays. */
static uint32_t
box_fold(uint32_t rank, const uint64_t *shape, const uint64_t *a, const uint64_t *b)
{
    uint32_t k = rank - 1;
    while (k > 0 && shape[k] == a[k] && shape[k] == b[k])
        k--;
    return k;
}

void
sl__box_copy(void *dst, const uint64_t *dst_dims, const uint64_t *dst_origin, const void *src,
             const uint64_t *src_dims, const uint64_t *src_origin, const uint64_t *shape,
             uint32_t rank, size_t es)
{
    if (rank == 0) {
        memcpy(dst, src, es);
        return;
    }
    for (uint32_t d = 0; d < rank; d++)
        if (shape[d] == 0)
            return;
    uint64_t ds[SL_MAX_RANK], ss[SL_MAX_RANK];
    box_strides(rank, dst_dims, ds);
    box_strides(rank, src_dims, ss);
    uint32_t k = box_fold(rank, shape, dst_dims, src_dims);
    uint64_t run = 1, doff = 0, soff = 0;
    for (uint32_t d = k; d < rank; d++)
        run *= shape[d];
    for (uint32_t d = 0; d < rank; d++) {
        doff += dst_origin[d] * ds[d];
        soff += src_origin[d] * ss[d];
    }
    uint64_t idx[SL_MAX_RANK] = {0};
    uint8_t *dp = dst;
    const uint8_t *sp = src;
    for (;;) {
        memcpy(dp + doff * es, sp + soff * es, run * es);
        uint32_t d = k;
        while (d-- > 0) {
            doff += ds[d];
            soff += ss[d];
            if (++idx[d] < shape[d])
                break;
            doff -= ds[d] * shape[d];
            soff -= ss[d] * shape[d];
            idx[d] = 0;
        }
        if (d == UINT32_MAX)
            return;
    }
}

void
sl__fill_elements(void *dst, size_t n, const uint8_t *fill, size_t es)
{
    uint8_t *p = dst;
    if (n == 0)
        return;
    bool zero = true;
    for (size_t i = 0; i < es; i++)
        zero = zero && fill[i] == 0;
    if (zero) {
        memset(p, 0, n * es);
        return;
    }
    memcpy(p, fill, es);
    /* Double the filled prefix until done. */
    size_t done = 1;
    while (done < n) {
        size_t take = done < n - done ? done : n - done;
        memcpy(p + done * es, p, take * es);
        done += take;
    }
}

void
sl__box_fill(void *dst, const uint64_t *dst_dims, const uint64_t *origin, const uint64_t *shape,
             uint32_t rank, const uint8_t *fill, size_t es)
{
    if (rank == 0) {
        memcpy(dst, fill, es);
        return;
    }
    for (uint32_t d = 0; d < rank; d++)
        if (shape[d] == 0)
            return;
    uint64_t ds[SL_MAX_RANK];
    box_strides(rank, dst_dims, ds);
    uint32_t k = box_fold(rank, shape, dst_dims, dst_dims);
    uint64_t run = 1, off = 0;
    for (uint32_t d = k; d < rank; d++)
        run *= shape[d];
    for (uint32_t d = 0; d < rank; d++)
        off += origin[d] * ds[d];
    uint64_t idx[SL_MAX_RANK] = {0};
    uint8_t *p = dst;
    for (;;) {
        sl__fill_elements(p + off * es, run, fill, es);
        uint32_t d = k;
        while (d-- > 0) {
            off += ds[d];
            if (++idx[d] < shape[d])
                break;
            off -= ds[d] * shape[d];
            idx[d] = 0;
        }
        if (d == UINT32_MAX)
            return;
    }
}

void
sl__fill_outside(void *buf, uint32_t rank, const uint64_t *dims, const uint64_t *extent,
                 const uint8_t *fill, size_t es)
{
    /* For each dimension d, the slab [extent[d], dims[d]) in d, restricted to
     * [0, extent) in the dimensions before d and whole after it. */
    uint64_t origin[SL_MAX_RANK], shape[SL_MAX_RANK];
    for (uint32_t d = 0; d < rank; d++) {
        if (extent[d] >= dims[d])
            continue;
        for (uint32_t j = 0; j < rank; j++) {
            origin[j] = j == d ? extent[j] : 0;
            shape[j] = j < d ? extent[j] : j == d ? dims[j] - extent[j] : dims[j];
        }
        sl__box_fill(buf, dims, origin, shape, rank, fill, es);
    }
}

bool
sl__is_fill(const void *buf, size_t n_bytes, const uint8_t *fill, size_t es)
{
    const uint8_t *p = buf;
    if (n_bytes < es)
        return true;
    /* The first element equals the fill and every element equals the one
     * before it. */
    return memcmp(p, fill, es) == 0 && memcmp(p, p + es, n_bytes - es) == 0;
}
