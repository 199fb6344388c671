/* SPDX-License-Identifier: MIT */
/*
 * The one N-d copy and fill engine: strided walks over elements in memory,
 * used by views (view.c) and by boxes of C-order arrays (io's region reads
 * and writes, batched reads, transactions, edge-chunk padding), plus the
 * fill helpers of C-order arrays built on it.
 *
 * DESIGN: a walk is a base pointer and a byte stride per dimension.  Before
 * walking, trailing dimensions that are laid out back to back in both the
 * destination and the source are folded into one, so copying whole rows of
 * C-order arrays (the common case) is one memcpy per run rather than one
 * per element; a run whose elements are not adjacent is copied element by
 * element with the element size a constant.
 */
#include <string.h>

#include "core_internal.h"

/* One strided walk: where element (0, ..., 0) is and the bytes between
 * neighbours along each dimension. */
struct walk {
    unsigned char *base;
    ptrdiff_t stride[SL_MAX_RANK];
};

/* The walk of a box of a C-order array of `es`-byte elements. */
static struct walk
walk_of_box(const struct sl__box *b, uint32_t rank, size_t es)
{
    struct walk w;
    ptrdiff_t s = (ptrdiff_t)es, off = 0;
    for (uint32_t d = rank; d-- > 0;) {
        w.stride[d] = s;
        off += (ptrdiff_t)b->origin[d] * s;
        s *= (ptrdiff_t)b->dims[d];
    }
    w.base = (unsigned char *)b->base + off;
    return w;
}

/* The walk of a view (strides in elements). */
static struct walk
walk_of_view(const struct sl_view *v, size_t es)
{
    struct walk w;
    w.base = v->data;
    for (uint32_t d = 0; d < v->rank; d++)
        w.stride[d] = (ptrdiff_t)v->stride[d] * (ptrdiff_t)es;
    return w;
}

/* Fold trailing dimensions of `shape` that lie back to back in every walk
 * of `w[0..n_w)` into the last one kept; returns the rank left and writes
 * the folded shape to `out`. */
static uint32_t
walk_fold(struct walk *w, size_t n_w, const uint64_t *shape, uint32_t rank, uint64_t *out)
{
    memcpy(out, shape, rank * sizeof(*shape));
    uint32_t r = rank;
    while (r >= 2) {
        uint32_t in = r - 1, outer = r - 2;
        bool adjacent = true;
        for (size_t i = 0; i < n_w; i++)
            adjacent = adjacent && w[i].stride[outer] == w[i].stride[in] * (ptrdiff_t)out[in];
        if (!adjacent)
            break;
        out[outer] *= out[in];
        for (size_t i = 0; i < n_w; i++)
            w[i].stride[outer] = w[i].stride[in];
        r--;
    }
    return r;
}

/* Copy n elements of ES bytes, `ds`/`ss` bytes apart; ES is a constant, so
 * each memcpy compiles to one load and one store. */
#define SL__COPY_ROW_(ES)            \
    for (uint64_t i = 0; i < n; i++) \
        memcpy(dst + (ptrdiff_t)i * ds, src + (ptrdiff_t)i * ss, ES);

/* Copy one row of n elements of `es` bytes, `ds`/`ss` bytes apart. */
static void
copy_row(unsigned char *dst, ptrdiff_t ds, const unsigned char *src, ptrdiff_t ss, uint64_t n,
         size_t es)
{
    if (ds == (ptrdiff_t)es && ss == (ptrdiff_t)es) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1:
        SL__COPY_ROW_(1) break;
    case 2:
        SL__COPY_ROW_(2) break;
    case 4:
        SL__COPY_ROW_(4) break;
    case 8:
        SL__COPY_ROW_(8) break;
    default:
        SL__COPY_ROW_(es) break;
    }
}
#undef SL__COPY_ROW_

/* Set one row of n elements of `es` bytes, `ds` bytes apart, to `value`. */
static void
fill_row(unsigned char *dst, ptrdiff_t ds, uint64_t n, const void *value, size_t es)
{
    if (ds == (ptrdiff_t)es) {
        sl__fill_elements(dst, (size_t)n, value, es);
        return;
    }
    for (uint64_t i = 0; i < n; i++)
        memcpy(dst + (ptrdiff_t)i * ds, value, es);
}

/* Copy `shape` elements from walk `s` to walk `d` (walks 0 and 1 of `w`). */
static void
walk_copy(struct walk *w, const uint64_t *shape, uint32_t rank, size_t es)
{
    for (uint32_t i = 0; i < rank; i++)
        if (shape[i] == 0)
            return;
    if (rank == 0) {
        memcpy(w[0].base, w[1].base, es);
        return;
    }
    uint64_t folded[SL_MAX_RANK];
    uint32_t r = walk_fold(w, 2, shape, rank, folded);
    const uint32_t last = r - 1;
    uint64_t idx[SL_MAX_RANK] = {0};
    do {
        ptrdiff_t doff = 0, soff = 0;
        for (uint32_t i = 0; i < last; i++) {
            doff += (ptrdiff_t)idx[i] * w[0].stride[i];
            soff += (ptrdiff_t)idx[i] * w[1].stride[i];
        }
        copy_row(w[0].base + doff, w[0].stride[last], w[1].base + soff, w[1].stride[last],
                 folded[last], es);
    } while (sl__index_next(idx, folded, last));
}

/* Set `shape` elements of walk `w` to `value`. */
static void
walk_fill(struct walk *w, const uint64_t *shape, uint32_t rank, const void *value, size_t es)
{
    for (uint32_t i = 0; i < rank; i++)
        if (shape[i] == 0)
            return;
    if (rank == 0) {
        memcpy(w->base, value, es);
        return;
    }
    uint64_t folded[SL_MAX_RANK];
    uint32_t r = walk_fold(w, 1, shape, rank, folded);
    const uint32_t last = r - 1;
    uint64_t idx[SL_MAX_RANK] = {0};
    do {
        ptrdiff_t off = 0;
        for (uint32_t i = 0; i < last; i++)
            off += (ptrdiff_t)idx[i] * w->stride[i];
        fill_row(w->base + off, w->stride[last], folded[last], value, es);
    } while (sl__index_next(idx, folded, last));
}

void
sl__view_copy_unchecked(const struct sl_view *dst, const struct sl_view *src)
{
    const size_t es = sl_dtype_size(src->dtype);
    struct walk w[2] = {walk_of_view(dst, es), walk_of_view(src, es)};
    walk_copy(w, src->shape, src->rank, es);
}

void
sl__view_fill_unchecked(const struct sl_view *v, const void *value)
{
    const size_t es = sl_dtype_size(v->dtype);
    struct walk w = walk_of_view(v, es);
    walk_fill(&w, v->shape, v->rank, value, es);
}

void
sl__box_copy(const struct sl__box *dst, const struct sl__box *src, const uint64_t *shape,
             uint32_t rank, size_t es)
{
    struct walk w[2] = {walk_of_box(dst, rank, es), walk_of_box(src, rank, es)};
    walk_copy(w, shape, rank, es);
}

void
sl__box_fill(const struct sl__box *dst, const uint64_t *shape, uint32_t rank, const void *value,
             size_t es)
{
    struct walk w = walk_of_box(dst, rank, es);
    walk_fill(&w, shape, rank, value, es);
}

void
sl__fill_elements(void *dst, size_t n, const void *value, size_t es)
{
    unsigned char *p = dst;
    const unsigned char *v = value;
    if (n == 0)
        return;
    bool zero = true;
    for (size_t i = 0; i < es; i++)
        zero = zero && v[i] == 0;
    if (zero) {
        memset(p, 0, n * es);
        return;
    }
    memcpy(p, v, es);
    /* Double the filled prefix until done. */
    size_t done = 1;
    while (done < n) {
        size_t take = done < n - done ? done : n - done;
        memcpy(p + done * es, p, take * es);
        done += take;
    }
}

void
sl__fill_outside(void *buf, uint32_t rank, const uint64_t *dims, const uint64_t *extent,
                 const void *value, size_t es)
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
        const struct sl__box slab = {.base = buf, .dims = dims, .origin = origin};
        sl__box_fill(&slab, shape, rank, value, es);
    }
}

bool
sl__is_fill(const void *buf, size_t n_bytes, const void *value, size_t es)
{
    const unsigned char *p = buf;
    if (n_bytes < es)
        return true;
    /* The first element equals the fill and every element equals the one
     * before it. */
    return memcmp(p, value, es) == 0 && memcmp(p, p + es, n_bytes - es) == 0;
}
