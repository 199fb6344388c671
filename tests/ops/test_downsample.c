/* SPDX-License-Identifier: MIT */
/*
 * Every downsample method on every dtype against the plain reference in
 * ops_reference.h: random data, odd sizes, partial edge blocks, ranks 1 to
 * 5, factors of 1 and factors larger than the extent, strided and
 * reversed input and output views.  Output padding must stay untouched.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>

#include <sluice.h>

#include "ops_reference.h"

TestSuite(ops_downsample, .timeout = 60.0);

/* Random cases per method and dtype. */
#define CASES 60

/* Draw a random shape and factors: extents 1..9 (0 now and then), factors
 * 1..4 with an occasional factor beyond the extent. */
static void
random_case(uint64_t *s, uint32_t *rank, uint64_t *shape, struct sl_downsample_params *p)
{
    *rank = 1 + (uint32_t)ref_below(s, 5);
    p->rank = *rank;
    for (uint32_t d = 0; d < *rank; d++) {
        shape[d] = 1 + ref_below(s, 9);
        if (ref_below(s, 40) == 0)
            shape[d] = 0;
        p->factor[d] = 1 + ref_below(s, 4);
        if (ref_below(s, 8) == 0)
            p->factor[d] = shape[d] + 1 + ref_below(s, 3);
    }
}

/* Run one case of `method` on `dt`; returns false (after reporting) on a
 * mismatch. */
static bool
run_case(sl_downsample_method method, sl_dtype dt, uint64_t seed)
{
    uint64_t s = seed;
    uint32_t rank;
    uint64_t shape[SL_MAX_RANK], out_shape[SL_MAX_RANK];
    struct sl_downsample_params p = {.method = method};
    random_case(&s, &rank, shape, &p);
    sl_downsample_shape(&p, shape, out_shape);
    const bool few = ref_below(&s, 2) == 0, plain = ref_below(&s, 3) == 0;

    struct ref_buf in, out;
    ref_buf_make(&in, dt, rank, shape, plain, &s);
    ref_buf_make(&out, dt, rank, out_shape, plain, &s);
    if (sl_dtype_is_real(dt))
        ref_fill(&in.view, &s, few);
    /* The expected buffer: out's bytes with the reference written over
     * its view, so padding must come out unchanged. */
    unsigned char *expect = malloc(out.bytes);
    memcpy(expect, out.mem, out.bytes);
    struct sl_view ev = out.view;
    ev.data = expect + ((unsigned char *)out.view.data - (unsigned char *)out.mem);

    size_t scratch_bytes;
    cr_assert_eq(sl_downsample_scratch_bytes(&p, dt, shape, &scratch_bytes, NULL), SL_OK);
    /* Hand the kernel a misaligned scratch start: it aligns it itself. */
    unsigned char *scratch = malloc(scratch_bytes + 1);
    long double *vals = malloc((ref_count(rank, p.factor) + 1) * sizeof *vals);

    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl_downsample(&p, &in.view, &out.view, scratch_bytes ? scratch + 1 : NULL,
                                 scratch_bytes, &err);
    cr_assert_eq(st, SL_OK, "%s %s seed %" PRIu64 ": %s", sl_downsample_method_name(method),
                 sl_dtype_name(dt), seed, err.text);
    ref_downsample(&p, &in.view, &ev, vals);

    /* Element by element where the reference can read the dtype (NaN
     * equals NaN, -0.0 differs from +0.0). */
    const bool readable = dt != SL_DTYPE_F16 && !sl_dtype_is_complex(dt);
    const bool exact_bytes = method == SL_DOWNSAMPLE_STRIDE || !ref_is_float(dt);
    bool ok = true;
    uint64_t idx[SL_MAX_RANK] = {0};
    if (readable && ref_count(rank, out_shape) > 0) {
        do {
            const ptrdiff_t o = ref_offset(&out.view, idx);
            if (!ref_same(dt, out.view.data, o, ev.data, o)) {
                char sh[96];
                sl_shape_format(rank, shape, sh, sizeof sh);
                cr_log_error("%s %s seed %" PRIu64 " shape %s: got %.21Lg want %.21Lg",
                             sl_downsample_method_name(method), sl_dtype_name(dt), seed, sh,
                             ref_get(dt, out.view.data, o), ref_get(dt, ev.data, o));
                ok = false;
                break;
            }
            if (!exact_bytes) /* NaN payloads may differ; take the kernel's */
                memcpy((unsigned char *)ev.data + o * (ptrdiff_t)sl_dtype_size(dt),
                       (unsigned char *)out.view.data + o * (ptrdiff_t)sl_dtype_size(dt),
                       sl_dtype_size(dt));
        } while (ref_next(idx, out_shape, rank));
    }
    /* Then byte for byte: padding untouched, bools 0 or 1, stride exact. */
    if (ok && memcmp(out.mem, expect, out.bytes) != 0) {
        cr_log_error("%s %s seed %" PRIu64 ": output bytes differ (padding or encoding)",
                     sl_downsample_method_name(method), sl_dtype_name(dt), seed);
        ok = false;
    }
    free(vals);
    free(scratch);
    free(expect);
    ref_buf_free(&in);
    ref_buf_free(&out);
    return ok;
}

static void
run_matrix(sl_downsample_method method)
{
    int failures = 0;
    for (unsigned dt = 0; dt < SL_DTYPE_COUNT_; dt++) {
        if (!sl_downsample_supports(method, (sl_dtype)dt))
            continue;
        for (uint64_t c = 0; c < CASES; c++) {
            const uint64_t seed = 0x9E3779B97F4A7C15ULL * (c + 1) + dt * 1000003 + method * 7919;
            if (!run_case(method, (sl_dtype)dt, seed))
                failures++;
        }
    }
    cr_assert_eq(failures, 0, "%d cases of %s failed", failures, sl_downsample_method_name(method));
}

Test(ops_downsample, stride_matches_reference_for_every_dtype) { run_matrix(SL_DOWNSAMPLE_STRIDE); }

Test(ops_downsample, mean_matches_reference_for_every_dtype) { run_matrix(SL_DOWNSAMPLE_MEAN); }

Test(ops_downsample, min_matches_reference_for_every_dtype) { run_matrix(SL_DOWNSAMPLE_MIN); }

Test(ops_downsample, max_matches_reference_for_every_dtype) { run_matrix(SL_DOWNSAMPLE_MAX); }

Test(ops_downsample, median_matches_reference_for_every_dtype) { run_matrix(SL_DOWNSAMPLE_MEDIAN); }

Test(ops_downsample, mode_matches_reference_for_every_dtype) { run_matrix(SL_DOWNSAMPLE_MODE); }

/* Large blocks: the quickselect and heapsort paths of median and mode, and
 * means over blocks past the narrow accumulators. */
Test(ops_downsample, large_blocks_match_reference)
{
    const sl_downsample_method methods[] = {SL_DOWNSAMPLE_MEAN, SL_DOWNSAMPLE_MEDIAN,
                                            SL_DOWNSAMPLE_MODE, SL_DOWNSAMPLE_MIN};
    const sl_dtype dts[] = {SL_DTYPE_U8, SL_DTYPE_I16, SL_DTYPE_U64, SL_DTYPE_F32, SL_DTYPE_I64};
    uint64_t s = 42;
    for (size_t mi = 0; mi < sizeof methods / sizeof methods[0]; mi++) {
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
            const sl_dtype dt = dts[di];
            const uint64_t shape[2] = {70, 3001};
            struct sl_downsample_params p = {
                .method = methods[mi], .rank = 2, .factor = {33, 1000}};
            uint64_t out_shape[2];
            sl_downsample_shape(&p, shape, out_shape);
            struct ref_buf in, out, want;
            ref_buf_make(&in, dt, 2, shape, false, &s);
            ref_buf_make(&out, dt, 2, out_shape, true, &s);
            ref_buf_make(&want, dt, 2, out_shape, true, &s);
            ref_fill(&in.view, &s, di % 2 == 0);
            size_t nb;
            cr_assert_eq(sl_downsample_scratch_bytes(&p, dt, shape, &nb, NULL), SL_OK);
            void *scratch = nb ? malloc(nb) : NULL;
            long double *vals = malloc(33 * 1000 * sizeof *vals);
            cr_assert_eq(sl_downsample(&p, &in.view, &out.view, scratch, nb, NULL), SL_OK);
            ref_downsample(&p, &in.view, &want.view, vals);
            cr_assert_eq(memcmp(out.mem, want.mem, out.bytes), 0, "%s %s",
                         sl_downsample_method_name(p.method), sl_dtype_name(dt));
            free(vals);
            free(scratch);
            ref_buf_free(&in);
            ref_buf_free(&out);
            ref_buf_free(&want);
        }
    }
}

/* The 2x2x2 mean of uint16 on a 64^3 block, the case the benchmarks and
 * the vectorized loops target, exactly as the reference computes it. */
Test(ops_downsample, mean_2x2x2_uint16_matches_reference)
{
    uint64_t s = 7;
    const uint64_t shape[3] = {64, 64, 64}, oshape[3] = {32, 32, 32};
    struct sl_downsample_params p = {.method = SL_DOWNSAMPLE_MEAN, .rank = 3, .factor = {2, 2, 2}};
    struct ref_buf in, out, want;
    ref_buf_make(&in, SL_DTYPE_U16, 3, shape, true, &s);
    ref_buf_make(&out, SL_DTYPE_U16, 3, oshape, true, &s);
    ref_buf_make(&want, SL_DTYPE_U16, 3, oshape, true, &s);
    ref_fill(&in.view, &s, false);
    long double vals[8];
    cr_assert_eq(sl_downsample(&p, &in.view, &out.view, NULL, 0, NULL), SL_OK);
    ref_downsample(&p, &in.view, &want.view, vals);
    cr_assert_eq(memcmp(out.mem, want.mem, out.bytes), 0);
    ref_buf_free(&in);
    ref_buf_free(&out);
    ref_buf_free(&want);
}

/* A downsample computes per input chunk where the factor divides the input
 * chunk and the quotient divides the output chunk; else in output chunks. */
Test(ops_downsample, chunks_are_one_input_chunk_each_where_the_blocks_allow)
{
    struct sl_downsample_params p = {.method = SL_DOWNSAMPLE_MEAN, .rank = 5};
    const uint64_t f[5] = {2, 2, 3, 1, 2};
    const uint64_t in[5] = {64, 64, 64, 32, 63};
    const uint64_t out[5] = {64, 48, 64, 64, 64};
    memcpy(p.factor, f, sizeof(f));
    uint64_t got[5];
    sl_downsample_chunks(&p, in, out, got);
    cr_assert_eq(got[0], 32, "64 / 2 = 32 divides 64");
    cr_assert_eq(got[1], 48, "32 does not divide 48: the output's chunks");
    cr_assert_eq(got[2], 64, "3 does not divide 64");
    cr_assert_eq(got[3], 32, "a factor of 1: the input chunk, which divides 64");
    cr_assert_eq(got[4], 64, "2 does not divide 63");
}
