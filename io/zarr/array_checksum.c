/* SPDX-License-Identifier: MIT */
/*
 * Whole-array questions: the SHA-256 of the decoded contents in canonical
 * form (what `sluice checksum` prints and the fixture manifests record), and
 * how many chunk objects are stored and their bytes (`sluice info`).
 *
 * DESIGN: the checksum reads slabs of whole chunk rows, so each chunk is
 * decoded once and memory stays at one slab, however large the array.  When
 * a row of chunks is itself too large, the slab is cut along later
 * dimensions (chunks are then decoded more than once, but memory stays
 * bounded).
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/array_io.h>

#include "zarr_internal.h"

/* Slabs up to this size, or one chunk row when that is larger. */
#define SL__SLAB_BYTES ((size_t)64 << 20)

/* Rewrite `n` elements in place as the checksum defines them: little-endian,
 * NaNs canonical. */
static void
canonicalize(uint8_t *p, size_t n, sl_dtype dt)
{
    size_t es = sl_dtype_size(dt);
    bool is_float = sl_dtype_is_float(dt) || sl_dtype_is_complex(dt);
    size_t width = sl_dtype_is_complex(dt) ? es / 2 : es;
    size_t words = n * (es / width);
    if (is_float) {
        uint64_t canon = sl__float_canonical_nan(width);
        for (size_t i = 0; i < words; i++) {
            uint64_t bits = 0;
            memcpy(&bits, p + i * width, width); /* little-endian hosts; see below */
            if (sl_endian_native() == SL_ENDIAN_BIG)
                bits >>= 8 * (8 - width);
            if (sl__float_bits_is_nan(bits, width)) {
                uint8_t tmp[8];
                memcpy(tmp, &canon, 8);
                memcpy(p + i * width, sl_endian_native() == SL_ENDIAN_BIG ? tmp + 8 - width : tmp,
                       width);
            }
        }
    }
    if (sl_endian_native() == SL_ENDIAN_BIG && width > 1)
        sl__byteswap(p, n * es, width);
}

/* The slab plan: dimensions before `k` step one index at a time, dimension
 * `k` in steps of `step`, later ones are whole. */
struct slab_plan {
    uint32_t k;
    uint64_t step;
    size_t bytes; /* of the largest slab */
};

static struct slab_plan
slab_plan(const sl_array *a)
{
    const struct sl__meta *m = &a->meta;
    const uint64_t *chunk = a->layout.shape;
    struct slab_plan p = {0, 1, a->elem_bytes};
    for (uint32_t k = 0; k < m->rank; k++) {
        uint64_t n = chunk[k] < m->shape[k] ? chunk[k] : m->shape[k];
        bool fits = true;
        for (uint32_t d = k + 1; d < m->rank && fits; d++)
            fits = sl_u64_mul_fits(n, m->shape[d], &n);
        uint64_t bytes;
        fits = fits && sl_u64_mul_fits(n, a->elem_bytes, &bytes);
        if ((fits && bytes <= SL__SLAB_BYTES) || k + 1 == m->rank) {
            p.k = k;
            p.step = chunk[k];
            p.bytes = fits && bytes <= SIZE_MAX ? (size_t)bytes : SIZE_MAX;
            return p;
        }
    }
    return p;
}

/* Advance `start` to the next slab; false when done. */
static bool
slab_next(const sl_array *a, const struct slab_plan *p, uint64_t *start)
{
    const uint64_t *shape = a->meta.shape;
    start[p->k] += p->step;
    if (start[p->k] < shape[p->k])
        return true;
    start[p->k] = 0;
    for (uint32_t d = p->k; d-- > 0;) {
        if (++start[d] < shape[d])
            return true;
        start[d] = 0;
    }
    return false;
}

sl_status
sl_array_checksum(const sl_array *a, uint8_t digest[SL_SHA256_BYTES], const struct sl_parallel *par,
                  struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    const struct sl__meta *m = &a->meta;
    struct sl_sha256 sha;
    sl_sha256_init(&sha);
    uint64_t count;
    SL_TRY(sl_shape_count(m->rank, m->shape, &count, err));
    if (count == 0) {
        sl_sha256_final(&sha, digest);
        return SL_OK;
    }
    struct slab_plan plan = slab_plan(a);
    if (plan.bytes == SIZE_MAX)
        return sl_error_set(err, SL_EOVERFLOW, NULL, "a slab of this array overflows memory");
    uint8_t *slab = sl_alloc(&a->alloc, plan.bytes, 64);
    sl_codec_ctx *ctx = sl_codec_ctx_create(&a->alloc, err);
    sl_status st =
        slab != NULL && ctx != NULL
            ? SL_OK
            : sl_error_set(err, SL_ENOMEM, NULL, "out of memory for a %zu-byte slab", plan.bytes);
    uint64_t start[SL_MAX_RANK] = {0};
    bool more = st == SL_OK;
    while (more) {
        struct sl_region r = {.rank = m->rank};
        for (uint32_t d = 0; d < m->rank; d++) {
            r.start[d] = start[d];
            r.stop[d] = d < plan.k                                          ? start[d] + 1
                        : d == plan.k && start[d] + plan.step < m->shape[d] ? start[d] + plan.step
                                                                            : m->shape[d];
        }
        uint64_t n = 1;
        for (uint32_t d = 0; d < m->rank; d++)
            n *= r.stop[d] - r.start[d];
        st = sl_array_read_region(a, &r, slab, plan.bytes, ctx, par, err);
        if (st != SL_OK)
            break;
        canonicalize(slab, (size_t)n, m->dtype);
        sl_sha256_update(&sha, slab, (size_t)n * a->elem_bytes);
        more = m->rank > 0 && slab_next(a, &plan, start);
    }
    sl_codec_ctx_destroy(ctx);
    sl_free(&a->alloc, slab, plan.bytes);
    if (st == SL_OK)
        sl_sha256_final(&sha, digest);
    return st;
}

/* ---- stored objects --------------------------------------------------------------- */

struct stored_count {
    const sl_array *a;
    struct sl_array_stored *out;
};

static sl_status
count_object(void *arg, const char *key, uint64_t bytes)
{
    struct stored_count *c = arg;
    const sl_array *a = c->a;
    uint64_t coords[SL_MAX_RANK];
    if (!sl__meta_parse_chunk_key(&a->meta, key + a->prefix_len, coords))
        return SL_OK;
    for (uint32_t d = 0; d < a->meta.rank; d++)
        if (coords[d] >= a->object_grid.n_chunks[d])
            return SL_OK;
    c->out->n_objects++;
    c->out->n_bytes += bytes;
    return SL_OK;
}

sl_status
sl_array_stored(const sl_array *a, struct sl_array_stored *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    *out = (struct sl_array_stored){0, 0};
    struct stored_count c = {a, out};
    return sl_store_list(a->store, a->prefix, count_object, &c, err);
}
