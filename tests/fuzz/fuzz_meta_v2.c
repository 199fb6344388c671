/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: Zarr v2 .zarray and .zattrs.  The input is the .zarray text,
 * then optionally a NUL byte and the .zattrs text.  Checks as for v3:
 * refusals carry a status and a message; parsed metadata satisfies the caps
 * and round-trips through sl__meta_write_v2 (v2 writes every NaN as "NaN",
 * so NaN fill values compare canonicalized).
 */
#include "fuzz.h"
#include "fuzz_meta_check.h"
#include "zarr_internal.h"

/* Replace NaN fill values by the canonical NaN, as v2 writes them. */
static void
canonical_fill(struct sl__meta *m)
{
    size_t es = sl_dtype_size(m->dtype);
    size_t w = sl_dtype_is_complex(m->dtype) ? es / 2 : es;
    if (!sl_dtype_is_float(m->dtype) && !sl_dtype_is_complex(m->dtype))
        return;
    for (size_t off = 0; off < es; off += w) {
        uint64_t bits = 0;
        memcpy(&bits, m->fill + off, w); /* little-endian hosts: the low bytes */
        if (sl__float_bits_is_nan(bits, w)) {
            bits = sl__float_canonical_nan(w);
            memcpy(m->fill + off, &bits, w);
        }
    }
}

static void
round_trip(struct sl__meta *m)
{
    struct sl_buf zarray = SL_BUF_INIT, zattrs = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl__meta_write_v2(m, &zarray, &zattrs, &err);
    fuzz_check_error(st, &err, "sl__meta_write_v2");
    FUZZ_CHECK(st == SL_OK, "parsed metadata cannot be written: %s", err.text);
    struct sl__meta back;
    sl__meta_init(&back, NULL);
    err = SL_ERROR_INIT;
    st = sl__meta_parse_v2((const char *)zarray.data, zarray.size,
                           zattrs.size > 0 ? (const char *)zattrs.data : NULL, zattrs.size,
                           "written", &back, &err);
    FUZZ_CHECK(st == SL_OK, "written .zarray does not parse: %s\n%.*s", err.text, (int)zarray.size,
               (const char *)zarray.data);
    canonical_fill(m);
    fuzz_meta_check_same(m, &back);
    sl__meta_fini(&back);
    sl_buf_fini(&zarray);
    sl_buf_fini(&zattrs);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t n_zarray = nul != NULL ? (size_t)(nul - data) : size;
    const char *zattrs = nul != NULL ? (const char *)nul + 1 : NULL;
    size_t n_zattrs = nul != NULL ? size - n_zarray - 1 : 0;
    struct sl__meta m;
    sl__meta_init(&m, NULL);
    struct sl_error err = SL_ERROR_INIT;
    sl_status st =
        sl__meta_parse_v2((const char *)data, n_zarray, zattrs, n_zattrs, ".zarray", &m, &err);
    fuzz_check_error(st, &err, "sl__meta_parse_v2");
    if (st == SL_OK) {
        fuzz_meta_check_parsed(&m);
        round_trip(&m);
    }
    sl__meta_fini(&m);
    return 0;
}
