/* SPDX-License-Identifier: MIT */
/*
 * Neighbourhood filters (<sluice/filter.h>): parameter checks and their
 * messages, halos, input regions, scratch sizes, refusals of bad calls,
 * the boundary mapping, and small cases computed by hand (the expected
 * values are scipy.ndimage 1.10's, noted beside each).  The comparison
 * with scipy on random arrays is tests/ops/check_filter_scipy.py.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>
#include <sluice/filter.h>

#include "filter_internal.h"

TestSuite(ops_filter, .timeout = 20.0);

/* ---- helpers --------------------------------------------------------------------- */

/* Filter the whole 1-D or n-D C-order array `in` into `out` in one call. */
static sl_status
filter_whole(const struct sl_filter_params *p, sl_dtype dt, const uint64_t *shape, void *in,
             void *out, struct sl_error *err)
{
    struct sl_view iv, ov;
    uint64_t zero[SL_MAX_RANK] = {0};
    size_t bytes;
    cr_assert_eq(sl_view_init(&iv, dt, p->rank, shape, in, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&ov, dt, p->rank, shape, out, NULL), SL_OK);
    cr_assert_eq(sl_filter_scratch_bytes(p, dt, shape, &bytes, NULL), SL_OK);
    void *scratch = bytes > 0 ? malloc(bytes) : NULL;
    const sl_status st = sl_filter(p, shape, &iv, zero, &ov, zero, scratch, bytes, err);
    free(scratch);
    return st;
}

/* Filter C-order `in` of `shape` block by block (blocks of `chunk`, each
 * from its own copy of sl_filter_input_region's region) into `out`. */
static void
filter_blocks(const struct sl_filter_params *p, sl_dtype dt, const uint64_t *shape,
              const uint64_t *chunk, const void *in, void *out)
{
    const uint32_t rank = p->rank;
    const size_t es = sl_dtype_size(dt);
    uint64_t grid[SL_MAX_RANK], k[SL_MAX_RANK] = {0};
    for (uint32_t d = 0; d < rank; d++)
        grid[d] = (shape[d] + chunk[d] - 1) / chunk[d];
    do {
        struct sl_region o = {.rank = rank}, r;
        uint64_t oshape[SL_MAX_RANK], ishape[SL_MAX_RANK];
        for (uint32_t d = 0; d < rank; d++) {
            o.start[d] = k[d] * chunk[d];
            o.stop[d] = o.start[d] + chunk[d] < shape[d] ? o.start[d] + chunk[d] : shape[d];
            oshape[d] = o.stop[d] - o.start[d];
        }
        sl_filter_input_region(p, shape, &o, &r);
        sl_region_shape(&r, ishape);
        uint64_t n_in = 1, n_out = 1;
        for (uint32_t d = 0; d < rank; d++) {
            n_in *= ishape[d];
            n_out *= oshape[d];
        }
        unsigned char *ib = malloc(n_in * es), *ob = malloc(n_out * es);
        /* Gather the region element by element. */
        uint64_t i[SL_MAX_RANK] = {0};
        for (uint64_t e = 0; e < n_in; e++) {
            uint64_t flat = 0;
            for (uint32_t d = 0; d < rank; d++)
                flat = flat * shape[d] + r.start[d] + i[d];
            memcpy(ib + e * es, (const unsigned char *)in + flat * es, es);
            for (uint32_t d = rank; d-- > 0;) {
                if (++i[d] < ishape[d])
                    break;
                i[d] = 0;
            }
        }
        struct sl_view iv, ov;
        size_t bytes;
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_view_init(&iv, dt, rank, ishape, ib, NULL), SL_OK);
        cr_assert_eq(sl_view_init(&ov, dt, rank, oshape, ob, NULL), SL_OK);
        cr_assert_eq(sl_filter_scratch_bytes(p, dt, oshape, &bytes, NULL), SL_OK);
        void *scratch = bytes > 0 ? malloc(bytes) : NULL;
        cr_assert_eq(sl_filter(p, shape, &iv, r.start, &ov, o.start, scratch, bytes, &err), SL_OK,
                     "%s", err.text);
        memset(i, 0, sizeof i);
        for (uint64_t e = 0; e < n_out; e++) {
            uint64_t flat = 0;
            for (uint32_t d = 0; d < rank; d++)
                flat = flat * shape[d] + o.start[d] + i[d];
            memcpy((unsigned char *)out + flat * es, ob + e * es, es);
            for (uint32_t d = rank; d-- > 0;) {
                if (++i[d] < oshape[d])
                    break;
                i[d] = 0;
            }
        }
        free(scratch);
        free(ib);
        free(ob);
        for (uint32_t d = rank; d-- > 0;) {
            if (++k[d] < grid[d])
                goto next;
            k[d] = 0;
        }
        break;
    next:;
    } while (1);
}

static uint64_t rng_state = 88172645463325252u;

static uint64_t
rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* ---- names ------------------------------------------------------------------------- */

Test(ops_filter, names_round_trip)
{
    for (int k = SL_FILTER_GAUSSIAN; k <= SL_FILTER_LAPLACE; k++) {
        sl_filter_kind back;
        cr_assert_eq(sl_filter_kind_from_name(sl_filter_kind_name(k), &back, NULL), SL_OK);
        cr_assert_eq(back, k);
    }
    for (int m = SL_BOUNDARY_REFLECT; m <= SL_BOUNDARY_WRAP; m++) {
        sl_boundary back;
        cr_assert_eq(sl_boundary_from_name(sl_boundary_name(m), &back, NULL), SL_OK);
        cr_assert_eq(back, m);
    }
    cr_assert_str_eq(sl_filter_kind_name((sl_filter_kind)99), "invalid");
    cr_assert_str_eq(sl_boundary_name(SL_BOUNDARY_MIRROR), "mirror");
}

Test(ops_filter, unknown_names_list_the_known_ones)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_boundary m;
    cr_assert_eq(sl_boundary_from_name("reflekt", &m, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "unknown boundary mode \"reflekt\"; known: reflect, nearest, "
                               "mirror, constant, wrap");
    sl_filter_kind k;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_kind_from_name("median_filter", &k, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "known: gaussian, uniform, median"), "%s", err.text);
}

/* ---- checks ------------------------------------------------------------------------ */

Test(ops_filter, negative_sigma_names_filter_axis_and_value)
{
    struct sl_filter_params p = {.kind = SL_FILTER_GAUSSIAN, .rank = 3, .sigma = {1, 2, -1}};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_F32, 3, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "filter \"gaussian\": sigma -1 on axis 2 (sigmas must be finite "
                               "and >= 0)");
    p.sigma[2] = NAN;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_F32, 3, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "sigma nan on axis 2"), "%s", err.text);
    p.sigma[2] = INFINITY;
    p.kind = SL_FILTER_GRADIENT_MAGNITUDE;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_F32, 3, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "\"gradient_magnitude\": sigma inf on axis 2"), "%s",
                       err.text);
}

Test(ops_filter, bad_truncate_and_huge_radius_are_refused)
{
    struct sl_filter_params p = {
        .kind = SL_FILTER_GAUSSIAN, .rank = 1, .sigma = {1}, .truncate = -2};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_F64, 1, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "filter \"gaussian\": truncate -2 (it must be finite and >= 0; 0 "
                               "means 4.0)");
    p.truncate = 0;
    p.sigma[0] = 1e12;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_F64, 1, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "filter \"gaussian\": sigma 1e+12 on axis 0 with truncate 4 gives "
                               "radius 4000000000000, above the largest, 2147483647");
}

Test(ops_filter, size_zero_and_huge_size_are_refused)
{
    struct sl_filter_params p = {.kind = SL_FILTER_MEDIAN, .rank = 2, .size = {3, 0}};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_U16, 2, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "filter \"median\": size 0 on axis 1 (sizes must be at least 1)");
    p.size[1] = (uint64_t)1 << 40;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_U16, 2, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "filter \"median\": size 1099511627776 on axis 1 exceeds the "
                               "largest, 2147483648");
}

Test(ops_filter, unused_fields_are_ignored)
{
    /* A uniform filter does not look at sigma, nor laplace at sizes. */
    struct sl_filter_params p = {.kind = SL_FILTER_UNIFORM, .rank = 1, .size = {3}, .sigma = {-5}};
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_I32, 1, NULL), SL_OK);
    p = (struct sl_filter_params){.kind = SL_FILTER_LAPLACE, .rank = 2};
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_I32, 2, NULL), SL_OK);
}

Test(ops_filter, rank_kind_and_mode_are_checked)
{
    struct sl_filter_params p = {.kind = SL_FILTER_LAPLACE, .rank = 2};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_F32, 3, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "filter \"laplace\": parameters of rank 2 for input of rank 3");
    p.kind = (sl_filter_kind)42;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_F32, 2, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "filter: invalid kind 42");
    p.kind = SL_FILTER_LAPLACE;
    p.mode = (sl_boundary)7;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_F32, 2, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "invalid boundary mode 7"), "%s", err.text);
    cr_assert_eq(sl_filter_check(NULL, SL_DTYPE_F32, 2, NULL), SL_EINVAL);
}

Test(ops_filter, float16_and_complex_are_unsupported)
{
    struct sl_filter_params p = {.kind = SL_FILTER_MEDIAN, .rank = 1, .size = {3}};
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_F16, 1, &err), SL_EUNSUPPORTED);
    cr_assert_str_eq(err.text, "filter \"median\" does not support dtype float16 (it supports "
                               "bool, int8..int64, uint8..uint64, float32, float64)");
    p.kind = SL_FILTER_GAUSSIAN;
    p.sigma[0] = 1;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, SL_DTYPE_C128, 1, &err), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "\"gaussian\" does not support dtype complex128"), "%s",
                       err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_check(&p, (sl_dtype)200, 1, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "filter \"gaussian\": invalid dtype 200");
}

/* ---- halos, regions, scratch -------------------------------------------------------- */

Test(ops_filter, halos_follow_scipy)
{
    uint64_t lo[4], hi[4];
    /* radius int(truncate * sigma + 0.5): 4*2+.5 -> 8, 1*2.3+.5 -> 2;
     * sigma 0 and 1e-16 leave the axis alone. */
    struct sl_filter_params g = {.kind = SL_FILTER_GAUSSIAN, .rank = 4, .sigma = {2, 0, 1e-16, 1}};
    cr_assert_eq(sl_filter_check(&g, SL_DTYPE_F32, 4, NULL), SL_OK);
    sl_filter_halo(&g, lo, hi);
    cr_assert(lo[0] == 8 && hi[0] == 8 && lo[1] == 0 && lo[2] == 0 && lo[3] == 4 && hi[3] == 4);
    g.truncate = 1.0;
    g.sigma[0] = 2.3;
    sl_filter_halo(&g, lo, hi);
    cr_assert(lo[0] == 2 && hi[0] == 2 && lo[3] == 1);
    /* Boxes: size / 2 before, the rest after (even sizes lean back). */
    struct sl_filter_params u = {.kind = SL_FILTER_UNIFORM, .rank = 3, .size = {4, 3, 1}};
    sl_filter_halo(&u, lo, hi);
    cr_assert(lo[0] == 2 && hi[0] == 1 && lo[1] == 1 && hi[1] == 1 && lo[2] == 0 && hi[2] == 0);
    struct sl_filter_params l = {.kind = SL_FILTER_LAPLACE, .rank = 2};
    sl_filter_halo(&l, lo, hi);
    cr_assert(lo[0] == 1 && hi[1] == 1);
    cr_assert_eq(sl_filter_out_dtype(&l, SL_DTYPE_U16), SL_DTYPE_U16);
}

Test(ops_filter, input_region_grows_by_halo_and_clips)
{
    struct sl_filter_params p = {.kind = SL_FILTER_UNIFORM, .rank = 2, .size = {5, 3}};
    const uint64_t shape[2] = {100, 50};
    struct sl_region out = {.rank = 2, .start = {10, 0}, .stop = {20, 10}}, in;
    sl_filter_input_region(&p, shape, &out, &in);
    cr_assert(in.start[0] == 8 && in.stop[0] == 22 && in.start[1] == 0 && in.stop[1] == 11);
    out = (struct sl_region){.rank = 2, .start = {98, 45}, .stop = {100, 50}};
    sl_filter_input_region(&p, shape, &out, &in);
    cr_assert(in.start[0] == 96 && in.stop[0] == 100 && in.start[1] == 44 && in.stop[1] == 50);
}

Test(ops_filter, wrap_at_an_edge_takes_the_whole_axis)
{
    struct sl_filter_params p = {
        .kind = SL_FILTER_MINIMUM, .rank = 2, .size = {3, 3}, .mode = SL_BOUNDARY_WRAP};
    const uint64_t shape[2] = {100, 50};
    struct sl_region out = {.rank = 2, .start = {0, 20}, .stop = {10, 30}}, in;
    sl_filter_input_region(&p, shape, &out, &in);
    cr_assert(in.start[0] == 0 && in.stop[0] == 100, "[%lu, %lu)", (unsigned long)in.start[0],
              (unsigned long)in.stop[0]);
    cr_assert(in.start[1] == 19 && in.stop[1] == 31);
}

Test(ops_filter, mirror_with_an_even_box_reaches_past_the_grown_region)
{
    /* Size 4 leans back by 2: at the low edge, position -2 mirrors to 2,
     * one past what out [0, 1) grown by the 1 after needs. */
    struct sl_filter_params p = {
        .kind = SL_FILTER_MAXIMUM, .rank = 1, .size = {4}, .mode = SL_BOUNDARY_MIRROR};
    const uint64_t shape[1] = {10};
    struct sl_region out = {.rank = 1, .start = {0}, .stop = {1}}, in;
    sl_filter_input_region(&p, shape, &out, &in);
    cr_assert(in.start[0] == 0 && in.stop[0] == 3, "[%lu, %lu)", (unsigned long)in.start[0],
              (unsigned long)in.stop[0]);
}

Test(ops_filter, array_smaller_than_halo_needs_all_of_it)
{
    struct sl_filter_params p = {.kind = SL_FILTER_GAUSSIAN, .rank = 1, .sigma = {3}};
    const uint64_t shape[1] = {4};
    struct sl_region out = {.rank = 1, .start = {2}, .stop = {3}}, in;
    sl_filter_input_region(&p, shape, &out, &in);
    cr_assert(in.start[0] == 0 && in.stop[0] == 4);
    out.start[0] = out.stop[0] = 2; /* empty: needs nothing */
    sl_filter_input_region(&p, shape, &out, &in);
    cr_assert(in.start[0] == in.stop[0]);
}

Test(ops_filter, scratch_overflow_is_reported)
{
    struct sl_filter_params p = {.kind = SL_FILTER_UNIFORM, .rank = 2, .size = {3, 3}};
    const uint64_t huge[2] = {(uint64_t)1 << 40, (uint64_t)1 << 40};
    size_t bytes;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter_scratch_bytes(&p, SL_DTYPE_F64, huge, &bytes, &err), SL_EOVERFLOW);
    cr_assert_not_null(strstr(err.text, "filter \"uniform\": scratch for output blocks of shape"),
                       "%s", err.text);
    const uint64_t small[2] = {8, 8};
    cr_assert_eq(sl_filter_scratch_bytes(&p, SL_DTYPE_F64, small, &bytes, NULL), SL_OK);
    cr_assert_gt(bytes, 0);
    p.size[0] = p.size[1] = 1; /* a copy: the input is read in place */
    cr_assert_eq(sl_filter_scratch_bytes(&p, SL_DTYPE_F64, small, &bytes, NULL), SL_OK);
    cr_assert_lt(bytes, 128);
}

/* ---- refusals ----------------------------------------------------------------------- */

Test(ops_filter, input_lacking_the_halo_names_the_axis)
{
    struct sl_filter_params p = {.kind = SL_FILTER_UNIFORM, .rank = 1, .size = {5}};
    const uint64_t shape[1] = {20}, in_start[1] = {5}, out_start[1] = {5};
    int32_t ib[10] = {0}, ob[10];
    struct sl_view iv, ov;
    cr_assert_eq(sl_view_init(&iv, SL_DTYPE_I32, 1, (uint64_t[]){10}, ib, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&ov, SL_DTYPE_I32, 1, (uint64_t[]){10}, ob, NULL), SL_OK);
    size_t bytes;
    cr_assert_eq(sl_filter_scratch_bytes(&p, SL_DTYPE_I32, ov.shape, &bytes, NULL), SL_OK);
    void *scratch = malloc(bytes);
    for (int i = 0; i < 10; i++)
        ob[i] = -1;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter(&p, shape, &iv, in_start, &ov, out_start, scratch, bytes, &err),
                 SL_EINVAL);
    cr_assert_str_eq(err.text, "filter \"uniform\": the input holds [5, 15) on axis 0, but output "
                               "[5, 15) needs [3, 17) there (reflect mode; see "
                               "sl_filter_input_region)");
    for (int i = 0; i < 10; i++)
        cr_assert_eq(ob[i], -1, "the output was touched");
    free(scratch);
}

Test(ops_filter, small_scratch_is_enomem_and_out_untouched)
{
    struct sl_filter_params p = {.kind = SL_FILTER_GAUSSIAN, .rank = 1, .sigma = {1}};
    const uint64_t shape[1] = {8}, zero[1] = {0};
    float ib[8] = {1, 2, 3, 4, 5, 6, 7, 8}, ob[8] = {0};
    struct sl_view iv, ov;
    cr_assert_eq(sl_view_init(&iv, SL_DTYPE_F32, 1, shape, ib, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&ov, SL_DTYPE_F32, 1, shape, ob, NULL), SL_OK);
    size_t bytes;
    cr_assert_eq(sl_filter_scratch_bytes(&p, SL_DTYPE_F32, shape, &bytes, NULL), SL_OK);
    char *scratch = malloc(bytes);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter(&p, shape, &iv, zero, &ov, zero, scratch, bytes - 1, &err), SL_ENOMEM);
    cr_assert_not_null(strstr(err.text, "need"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter(&p, shape, &iv, zero, &ov, zero, NULL, bytes, &err), SL_ENOMEM);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(ob[i], 0.0f);
    cr_assert_eq(sl_filter(&p, shape, &iv, zero, &ov, zero, scratch, bytes, NULL), SL_OK);
    free(scratch);
}

Test(ops_filter, bad_views_are_refused)
{
    struct sl_filter_params p = {.kind = SL_FILTER_LAPLACE, .rank = 1};
    const uint64_t shape[1] = {8}, zero[1] = {0}, late[1] = {4};
    float buf[16] = {0};
    double dbuf[8] = {0};
    struct sl_view iv, ov, dv;
    cr_assert_eq(sl_view_init(&iv, SL_DTYPE_F32, 1, shape, buf, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&ov, SL_DTYPE_F32, 1, shape, buf + 4, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&dv, SL_DTYPE_F64, 1, shape, dbuf, NULL), SL_OK);
    static char scratch[65536];
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter(&p, shape, &iv, zero, &ov, zero, scratch, sizeof scratch, &err),
                 SL_EINVAL);
    cr_assert_str_eq(err.text, "filter \"laplace\": output overlaps input");
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter(&p, shape, &iv, zero, &dv, zero, scratch, sizeof scratch, &err),
                 SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "output float64 of rank 1 for input float32"), "%s",
                       err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_filter(&p, shape, &iv, zero, &dv, late, scratch, sizeof scratch, &err),
                 SL_EINVAL);
    err = SL_ERROR_INIT;
    iv.dtype = SL_DTYPE_F64;
    cr_assert_eq(sl_filter(&p, shape, &iv, zero, &dv, late, scratch, sizeof scratch, &err),
                 SL_EINVAL);
    cr_assert_str_eq(err.text, "filter \"laplace\": output [4, +8) on axis 0 leaves the array's "
                               "extent 8");
    cr_assert_eq(sl_filter(NULL, shape, &iv, zero, &dv, zero, scratch, sizeof scratch, NULL),
                 SL_EINVAL);
}

/* ---- boundary mapping ---------------------------------------------------------------- */

Test(ops_filter, boundary_map_repeats_like_scipys_line_extension)
{
    /* n = 3: reflect ... 2 1 0 | 0 1 2 | 2 1 0 | 0 ..., period 6. */
    const int64_t reflect[] = {0, 1, 2, 2, 1, 0}; /* positions 6k .. 6k + 5 */
    for (int64_t p = -12; p < 12; p++)
        cr_assert_eq(sl__filt_map(SL_BOUNDARY_REFLECT, p, 3), reflect[((p % 6) + 6) % 6]);
    /* mirror ... 1 | 0 1 2 | 1 0 1 2 ..., period 4. */
    const int64_t mirror[] = {0, 1, 2, 1};
    for (int64_t p = -12; p < 12; p++)
        cr_assert_eq(sl__filt_map(SL_BOUNDARY_MIRROR, p, 3), mirror[((p % 4) + 4) % 4]);
    cr_assert_eq(sl__filt_map(SL_BOUNDARY_MIRROR, -5, 1), 0); /* extent 1: nearest */
    cr_assert_eq(sl__filt_map(SL_BOUNDARY_WRAP, -1, 3), 2);
    cr_assert_eq(sl__filt_map(SL_BOUNDARY_WRAP, -7, 3), 2);
    cr_assert_eq(sl__filt_map(SL_BOUNDARY_NEAREST, 99, 3), 2);
    cr_assert_eq(sl__filt_map(SL_BOUNDARY_CONSTANT, -1, 3), -1);
    cr_assert_eq(sl__filt_map(SL_BOUNDARY_CONSTANT, 1, 3), 1);
}

/* ---- values ----------------------------------------------------------------------------- */

Test(ops_filter, uniform_truncates_into_integers)
{
    /* scipy: uniform_filter([1, 2, 3, 4], 3) -> [1, 2, 3, 3] (4/3, 11/3 truncated). */
    struct sl_filter_params p = {.kind = SL_FILTER_UNIFORM, .rank = 1, .size = {3}};
    int64_t in[4] = {1, 2, 3, 4}, out[4];
    cr_assert_eq(filter_whole(&p, SL_DTYPE_I64, (uint64_t[]){4}, in, out, NULL), SL_OK);
    cr_assert(out[0] == 1 && out[1] == 2 && out[2] == 3 && out[3] == 3);
}

Test(ops_filter, out_of_range_results_wrap_as_scipys_casts)
{
    /* scipy: uniform_filter(zeros(5, uint8), 3, mode="constant", cval=1000)
     * -> [77, 0, 0, 0, 77] (333 modulo 256); cval -1000 -> 179. */
    struct sl_filter_params p = {
        .kind = SL_FILTER_UNIFORM, .rank = 1, .size = {3}, .mode = SL_BOUNDARY_CONSTANT};
    uint8_t in[5] = {0}, out[5];
    p.cval = 1000;
    cr_assert_eq(filter_whole(&p, SL_DTYPE_U8, (uint64_t[]){5}, in, out, NULL), SL_OK);
    cr_assert(out[0] == 77 && out[1] == 0 && out[4] == 77, "%u %u", out[0], out[4]);
    p.cval = -1000;
    cr_assert_eq(filter_whole(&p, SL_DTYPE_U8, (uint64_t[]){5}, in, out, NULL), SL_OK);
    cr_assert(out[0] == 179 && out[4] == 179);
    /* scipy: minimum_filter([2**63 - 1] * 3, 3) -> INT64_MIN: through double. */
    struct sl_filter_params m = {.kind = SL_FILTER_MINIMUM, .rank = 1, .size = {3}};
    int64_t big[3] = {INT64_MAX, INT64_MAX, INT64_MAX}, res[3];
    cr_assert_eq(filter_whole(&m, SL_DTYPE_I64, (uint64_t[]){3}, big, res, NULL), SL_OK);
    cr_assert(res[0] == INT64_MIN && res[2] == INT64_MIN);
}

Test(ops_filter, filters_that_change_nothing_copy_exactly)
{
    /* sigma 0 and boxes of 1 are scipy's output[...] = input: no trip
     * through double. */
    int64_t in[3] = {INT64_MAX, INT64_MIN + 1, (INT64_C(1) << 60) + 1}, out[3];
    struct sl_filter_params g = {.kind = SL_FILTER_GAUSSIAN, .rank = 1, .sigma = {0}};
    cr_assert_eq(filter_whole(&g, SL_DTYPE_I64, (uint64_t[]){3}, in, out, NULL), SL_OK);
    cr_assert_eq(memcmp(in, out, sizeof in), 0);
    struct sl_filter_params m = {.kind = SL_FILTER_MEDIAN, .rank = 1, .size = {1}};
    memset(out, 0, sizeof out);
    cr_assert_eq(filter_whole(&m, SL_DTYPE_I64, (uint64_t[]){3}, in, out, NULL), SL_OK);
    cr_assert_eq(memcmp(in, out, sizeof in), 0);
}

Test(ops_filter, median_of_odd_and_even_boxes)
{
    /* scipy: median_filter([5, 1, 4, 2, 3], 3, mode="nearest") -> [5, 4, 2, 3, 3];
     * with size 2 (a maximum of x[i - 1], x[i]) -> [5, 5, 4, 4, 3]. */
    struct sl_filter_params p = {
        .kind = SL_FILTER_MEDIAN, .rank = 1, .size = {3}, .mode = SL_BOUNDARY_NEAREST};
    int16_t in[5] = {5, 1, 4, 2, 3}, out[5];
    cr_assert_eq(filter_whole(&p, SL_DTYPE_I16, (uint64_t[]){5}, in, out, NULL), SL_OK);
    const int16_t want3[5] = {5, 4, 2, 3, 3}, want2[5] = {5, 5, 4, 4, 3};
    cr_assert_eq(memcmp(out, want3, sizeof out), 0);
    p.size[0] = 2;
    cr_assert_eq(filter_whole(&p, SL_DTYPE_I16, (uint64_t[]){5}, in, out, NULL), SL_OK);
    cr_assert_eq(memcmp(out, want2, sizeof out), 0);
}

Test(ops_filter, median_with_nan_follows_scipys_selection)
{
    /* scipy: median_filter([nan, 1, 2, nan, 3], 3, mode="constant",
     * cval=nan) -> [1, 2, 1, 2, nan]: what Hoare's selection makes of NaN. */
    struct sl_filter_params p = {.kind = SL_FILTER_MEDIAN,
                                 .rank = 1,
                                 .size = {3},
                                 .mode = SL_BOUNDARY_CONSTANT,
                                 .cval = NAN};
    double in[5] = {NAN, 1, 2, NAN, 3}, out[5];
    cr_assert_eq(filter_whole(&p, SL_DTYPE_F64, (uint64_t[]){5}, in, out, NULL), SL_OK);
    cr_assert(out[0] == 1 && out[1] == 2 && out[2] == 1 && out[3] == 2 && isnan(out[4]));
}

Test(ops_filter, minimum_and_maximum_ignore_nan)
{
    struct sl_filter_params p = {.kind = SL_FILTER_MINIMUM, .rank = 1, .size = {3}};
    float in[5] = {4, NAN, 3, NAN, NAN}, out[5];
    cr_assert_eq(filter_whole(&p, SL_DTYPE_F32, (uint64_t[]){5}, in, out, NULL), SL_OK);
    /* reflect: windows [4 4 nan] [4 nan 3] [nan 3 nan] [3 nan nan] [nan nan nan] */
    cr_assert(out[0] == 4 && out[1] == 3 && out[2] == 3 && out[3] == 3 && isnan(out[4]));
    p.kind = SL_FILTER_MAXIMUM;
    cr_assert_eq(filter_whole(&p, SL_DTYPE_F32, (uint64_t[]){5}, in, out, NULL), SL_OK);
    cr_assert(out[0] == 4 && out[1] == 4 && out[2] == 3 && out[3] == 3 && isnan(out[4]));
}

Test(ops_filter, uniform_nan_and_inf_stay_in_their_windows)
{
    /* scipy's running sum makes everything after an inf NaN; sluice's
     * windows without one are finite. */
    struct sl_filter_params p = {.kind = SL_FILTER_UNIFORM, .rank = 1, .size = {3}};
    double in[6] = {INFINITY, 3, 3, 3, 6, 6}, out[6];
    cr_assert_eq(filter_whole(&p, SL_DTYPE_F64, (uint64_t[]){6}, in, out, NULL), SL_OK);
    cr_assert(isinf(out[0]) && isinf(out[1]) && out[2] == 3 && out[3] == 4 && out[4] == 5 &&
              out[5] == 6);
}

Test(ops_filter, laplace_and_gradient_of_an_impulse)
{
    /* scipy: laplace([0, 0, 1, 0, 0]) -> [0, 1, -2, 1, 0]. */
    struct sl_filter_params l = {.kind = SL_FILTER_LAPLACE, .rank = 1};
    int32_t in[5] = {0, 0, 1, 0, 0}, out[5];
    cr_assert_eq(filter_whole(&l, SL_DTYPE_I32, (uint64_t[]){5}, in, out, NULL), SL_OK);
    const int32_t want[5] = {0, 1, -2, 1, 0};
    cr_assert_eq(memcmp(out, want, sizeof out), 0);
    /* scipy: gaussian_filter([0, 0, 1, 0, 0.], 1, truncate=1) ->
     * [0, 0.27406862, 0.45186276, 0.27406862, 0]; the gradient magnitude
     * -> [0, 0.27406862, 0, 0.27406862, 0]. */
    struct sl_filter_params g = {
        .kind = SL_FILTER_GAUSSIAN, .rank = 1, .sigma = {1}, .truncate = 1};
    double x[5] = {0, 0, 1, 0, 0}, y[5];
    cr_assert_eq(filter_whole(&g, SL_DTYPE_F64, (uint64_t[]){5}, x, y, NULL), SL_OK);
    cr_assert_float_eq(y[1], 0.27406862, 1e-8);
    cr_assert_float_eq(y[2], 0.45186276, 1e-8);
    cr_assert_eq(y[0], 0.0);
    g.kind = SL_FILTER_GRADIENT_MAGNITUDE;
    cr_assert_eq(filter_whole(&g, SL_DTYPE_F64, (uint64_t[]){5}, x, y, NULL), SL_OK);
    cr_assert_float_eq(y[1], 0.27406862, 1e-8);
    cr_assert_float_eq(y[3], 0.27406862, 1e-8);
    cr_assert_eq(y[2], 0.0);
}

Test(ops_filter, reflect_repeats_over_an_array_smaller_than_the_box)
{
    /* scipy: uniform_filter1d([1., 2.], 7, mode="reflect") * 7 -> [11, 10]. */
    struct sl_filter_params p = {.kind = SL_FILTER_UNIFORM, .rank = 1, .size = {7}};
    double in[2] = {1, 2}, out[2];
    cr_assert_eq(filter_whole(&p, SL_DTYPE_F64, (uint64_t[]){2}, in, out, NULL), SL_OK);
    cr_assert_float_eq(out[0] * 7, 11.0, 1e-12);
    cr_assert_float_eq(out[1] * 7, 10.0, 1e-12);
}

/* Random data filtered at once and in blocks of `chunk` must agree bit for
 * bit, for every kind and mode. */
static void
check_blocks_agree(uint32_t rank, const uint64_t *shape, const uint64_t *chunk, sl_dtype dt)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < rank; d++)
        n *= shape[d];
    const size_t es = sl_dtype_size(dt);
    unsigned char *in = malloc(n * es), *a = malloc(n * es), *b = malloc(n * es);
    for (uint64_t i = 0; i < n; i++) {
        const double v = (double)(rng_next() % 2000) / 8.0 - 100.0;
        if (dt == SL_DTYPE_F32)
            ((float *)(void *)in)[i] = (float)v;
        else
            ((int16_t *)(void *)in)[i] = (int16_t)v;
    }
    for (int kind = SL_FILTER_GAUSSIAN; kind <= SL_FILTER_LAPLACE; kind++) {
        for (int mode = SL_BOUNDARY_REFLECT; mode <= SL_BOUNDARY_WRAP; mode++) {
            struct sl_filter_params p = {
                .kind = (sl_filter_kind)kind, .rank = rank, .mode = (sl_boundary)mode, .cval = 7};
            for (uint32_t d = 0; d < rank; d++) {
                p.sigma[d] = d % 3 == 1 ? 0.0 : 1.0 + 0.5 * d;
                p.size[d] = kind == SL_FILTER_MEDIAN ? 1 + d % 3 : 2 + d % 4;
            }
            struct sl_error err = SL_ERROR_INIT;
            cr_assert_eq(filter_whole(&p, dt, shape, in, a, &err), SL_OK, "%s", err.text);
            filter_blocks(&p, dt, shape, chunk, in, b);
            cr_assert_eq(memcmp(a, b, n * es), 0, "%s %s: blocks differ from the whole array",
                         sl_filter_kind_name(p.kind), sl_boundary_name(p.mode));
        }
    }
    free(in);
    free(a);
    free(b);
}

Test(ops_filter, blocks_smaller_than_the_halo_agree_with_the_whole)
{
    const uint64_t shape[2] = {9, 13}, chunk[2] = {2, 1};
    check_blocks_agree(2, shape, chunk, SL_DTYPE_F32);
    check_blocks_agree(2, shape, chunk, SL_DTYPE_I16);
}

Test(ops_filter, rank_five_blocks_agree_with_the_whole)
{
    const uint64_t shape[5] = {3, 4, 2, 5, 6}, chunk[5] = {2, 3, 1, 2, 4};
    check_blocks_agree(5, shape, chunk, SL_DTYPE_F32);
}
