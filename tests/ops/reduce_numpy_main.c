/* SPDX-License-Identifier: MIT */
/*
 * The driver check_reduce_numpy.py runs: reduce one array read from a raw
 * file along some axes, directly and through partial states, and write the
 * results raw.  The input is read through negative strides along the axes
 * its file holds reversed, so reversed views are what is tested.
 *
 *   reduce_numpy [--repeat N] METHOD IN_DTYPE OUT_DTYPE SHAPE REDUCED FLIPS DDOF SEED
 *                IN_FILE DIRECT NATURAL STATE STATE_NATURAL
 *
 * SHAPE is "3x4x5" ("-" for rank 0); REDUCED and FLIPS are bitmasks of
 * axes.  DIRECT gets sl_reduce_block's result in OUT_DTYPE, NATURAL the
 * same in the method's natural dtype (numpy's default, float64 for float
 * results); STATE and STATE_NATURAL the same through states: SEED draws a
 * split of each reduced axis into pieces, each piece (sometimes in two
 * parts) is added into its own partial state, runs of partials along one
 * axis are merged, and the merged partials are finished.  Files are
 * little-endian, C order.  --repeat N times sl_reduce_block N times and
 * prints the fastest time in seconds on stderr.  Exits 0; 4 when the
 * reduction fails (printing the message, e.g. min of an empty extent); 2
 * for any other failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>
#include <sluice/reduce.h>

#include "numpy_driver.h"

/* Pieces per reduced axis at most. */
#define MAX_PIECES 4

const char driver_name[] = "reduce_numpy";

static uint64_t rng_state, rng_seed;

static uint64_t
rng_below(uint64_t n)
{
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return n == 0 ? 0 : (rng_state >> 33) % n;
}

/* How each reduced axis is cut: cuts[a][0..n[a]] with cuts[a][0] = 0 and
 * cuts[a][n[a]] = the extent; kept axes are one piece. */
struct split {
    uint32_t n[SL_MAX_RANK];
    uint64_t cuts[SL_MAX_RANK][MAX_PIECES + 1];
};

static void
split_draw(struct split *s, const struct sl_reduce_params *p, const uint64_t *shape)
{
    for (uint32_t a = 0; a < p->rank; a++) {
        uint32_t n = p->reduced[a] ? 1 + (uint32_t)rng_below(MAX_PIECES) : 1;
        s->n[a] = n;
        s->cuts[a][0] = 0;
        for (uint32_t k = 1; k < n; k++) /* sorted; pieces may be empty */
            s->cuts[a][k] = s->cuts[a][k - 1] + rng_below(shape[a] - s->cuts[a][k - 1] + 1);
        s->cuts[a][n] = shape[a];
    }
}

/* Advance C-order index `idx` over extents `n`; false after the last. */
static int
index_next(uint64_t *idx, const uint32_t *n, uint32_t rank)
{
    for (uint32_t d = rank; d-- > 0;) {
        if (++idx[d] < n[d])
            return 1;
        idx[d] = 0;
    }
    return 0;
}

/* A state buffer with extents `ext` on the first p->rank axes. */
static void
state_alloc(struct sl_view *v, const struct sl_reduce_params *p, const uint64_t *ext)
{
    struct sl_error err = SL_ERROR_INIT;
    uint64_t shape[SL_MAX_RANK];
    memcpy(shape, ext, p->rank * sizeof *ext);
    shape[p->rank] = sl_reduce_state_words(p);
    void *data = driver_calloc(driver_shape_count(p->rank + 1, shape) * sizeof(uint64_t));
    if (sl_view_init(v, SL_DTYPE_U64, p->rank + 1, shape, data, &err) != SL_OK)
        driver_die("state view", &err);
}

/* The region of state view `v` with [lo, hi) on axis `axis` and everything
 * else whole. */
static void
state_part(struct sl_view *part, const struct sl_view *v, uint32_t axis, uint64_t lo, uint64_t hi)
{
    *part = *v;
    part->shape[axis] = hi - lo;
    part->data = (uint64_t *)v->data + (int64_t)lo * v->stride[axis];
}

/* Add piece `piece` (indices per axis) of `in` into its partial. */
static sl_status
add_piece(const struct sl_reduce_params *p, const struct sl_view *in, const struct split *s,
          const uint64_t *piece, const struct sl_view *partials, struct sl_error *err)
{
    struct sl_region r = {.rank = p->rank};
    struct sl_view part = *partials;
    for (uint32_t a = 0; a < p->rank; a++) {
        r.start[a] = s->cuts[a][piece[a]];
        r.stop[a] = s->cuts[a][piece[a] + 1];
        if (p->reduced[a]) {
            part.shape[a] = 1;
            part.data = (uint64_t *)part.data + (int64_t)piece[a] * part.stride[a];
        }
    }
    /* Sometimes in two parts along the first reduced axis, into the same
     * partial, to exercise accumulation. */
    for (uint32_t a = 0; a < p->rank; a++) {
        if (!p->reduced[a] || r.stop[a] - r.start[a] < 2 || rng_below(2) == 0)
            continue;
        struct sl_region r2 = r;
        r.stop[a] = r2.start[a] = r.start[a] + 1 + rng_below(r.stop[a] - r.start[a] - 1);
        struct sl_view v2;
        if (sl_view_slice(in, &r2, &v2, err) != SL_OK ||
            sl_reduce_state_add(p, &v2, &part, err) != SL_OK)
            return err->code;
        break;
    }
    struct sl_view v;
    if (sl_view_slice(in, &r, &v, err) != SL_OK)
        return err->code;
    return sl_reduce_state_add(p, &v, &part, err);
}

/* Cut the reduced axes into pieces, add each into its own partial, merge
 * the partials of [0, k) and [k, n) pieces along the first axis cut in two
 * or more (all pieces of the other reduced axes), then finish into `out`. */
static sl_status
reduce_by_states(const struct sl_reduce_params *p, const struct sl_view *in, struct sl_view *out,
                 struct sl_error *err)
{
    struct split s;
    split_draw(&s, p, in->shape);
    uint64_t ext[SL_MAX_RANK];
    for (uint32_t a = 0; a < p->rank; a++)
        ext[a] = p->reduced[a] ? s.n[a] : in->shape[a];
    struct sl_view partials, merged;
    state_alloc(&partials, p, ext);
    sl_status st = sl_reduce_state_init(p, &partials, err);
    uint64_t piece[SL_MAX_RANK] = {0};
    if (st == SL_OK) {
        do
            st = add_piece(p, in, &s, piece, &partials, err);
        while (st == SL_OK && index_next(piece, s.n, p->rank));
    }
    uint32_t axis = p->rank;
    for (uint32_t a = 0; a < p->rank && axis == p->rank; a++)
        if (p->reduced[a] && s.n[a] >= 2)
            axis = a;
    const struct sl_view *from = &partials;
    if (st == SL_OK && axis < p->rank) {
        /* Runs [0, k) and [k, n): two merged partials along `axis`. */
        const uint64_t k = 1 + rng_below(s.n[axis] - 1);
        for (uint32_t a = 0; a < p->rank; a++)
            if (p->reduced[a])
                ext[a] = a == axis ? 2 : 1;
        state_alloc(&merged, p, ext);
        struct sl_view f0, f1, i0, i1;
        state_part(&f0, &partials, axis, 0, k);
        state_part(&f1, &partials, axis, k, s.n[axis]);
        state_part(&i0, &merged, axis, 0, 1);
        state_part(&i1, &merged, axis, 1, 2);
        st = sl_reduce_state_merge(p, &f0, &i0, err);
        if (st == SL_OK)
            st = sl_reduce_state_merge(p, &f1, &i1, err);
        from = &merged;
    }
    if (st == SL_OK)
        st = sl_reduce_state_finish(p, from, out, err);
    free(partials.data);
    if (from == &merged)
        free(merged.data);
    return st;
}

/* An output view of `dt` for input shape `shape`: extent 1 on reduced axes. */
static void
out_alloc(struct sl_view *v, const struct sl_reduce_params *p, sl_dtype dt, const uint64_t *shape)
{
    struct sl_error err = SL_ERROR_INIT;
    uint64_t ext[SL_MAX_RANK];
    for (uint32_t a = 0; a < p->rank; a++)
        ext[a] = p->reduced[a] ? 1 : shape[a];
    void *data = driver_calloc(driver_shape_count(p->rank, ext) * sl_dtype_size(dt));
    if (sl_view_init(v, dt, p->rank, ext, data, &err) != SL_OK)
        driver_die("output view", &err);
}

static size_t
view_bytes(const struct sl_view *v)
{
    return driver_shape_count(v->rank, v->shape) * sl_dtype_size(v->dtype);
}

/* Reduce `in` directly and by states with out dtype `dt`, writing both. */
static void
reduce_both(struct sl_reduce_params p, sl_dtype dt, const struct sl_view *in, const char *direct,
            const char *state)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_view a, b;
    p.out_dtype = dt;
    out_alloc(&a, &p, dt, in->shape);
    out_alloc(&b, &p, dt, in->shape);
    if (sl_reduce_block(&p, in, &a, &err) != SL_OK) {
        printf("%s\n", err.text);
        exit(4);
    }
    rng_state = rng_seed; /* the same split for every output dtype */
    if (reduce_by_states(&p, in, &b, &err) != SL_OK)
        driver_die("states", &err);
    driver_file_write(direct, a.data, view_bytes(&a));
    driver_file_write(state, b.data, view_bytes(&b));
    free(a.data);
    free(b.data);
}

int
main(int argc, char **argv)
{
    int a;
    const int repeat = driver_repeat_opt(argc, argv, &a);
    if (argc - a != 13) {
        fprintf(stderr, "usage: reduce_numpy [--repeat N] METHOD IN_DTYPE OUT_DTYPE SHAPE REDUCED "
                        "FLIPS DDOF SEED IN_FILE DIRECT NATURAL STATE STATE_NATURAL\n");
        return 2;
    }
    char **arg = argv + a;
    struct sl_error err = SL_ERROR_INIT;
    struct sl_reduce_params p = {0};
    sl_dtype natural;
    uint64_t shape[SL_MAX_RANK];
    if (sl_reduce_method_from_name(arg[0], &p.method, &err) != SL_OK ||
        sl_dtype_from_name(arg[1], &p.in_dtype, &err) != SL_OK ||
        sl_dtype_from_name(arg[2], &p.out_dtype, &err) != SL_OK ||
        sl_reduce_default_dtype(p.method, p.in_dtype, &natural, &err) != SL_OK)
        driver_die("arguments", &err);
    if (sl_dtype_is_float(natural))
        natural = SL_DTYPE_F64;
    p.rank = driver_shape_parse(arg[3], shape);
    const unsigned reduced = (unsigned)strtoul(arg[4], NULL, 0);
    for (uint32_t d = 0; d < p.rank; d++)
        p.reduced[d] = (reduced >> d) & 1;
    const unsigned flips = (unsigned)strtoul(arg[5], NULL, 0);
    p.ddof = strtod(arg[6], NULL);
    rng_seed = strtoull(arg[7], NULL, 0);
    void *data =
        driver_file_read(arg[8], driver_shape_count(p.rank, shape) * sl_dtype_size(p.in_dtype));
    struct sl_view in;
    driver_view_flipped(&in, p.in_dtype, p.rank, shape, flips, data);
    if (repeat > 1) {
        struct sl_view o;
        out_alloc(&o, &p, p.out_dtype, shape);
        double best = 1e300;
        for (int r = 0; r < repeat; r++) {
            const double t0 = driver_now_s();
            if (sl_reduce_block(&p, &in, &o, &err) != SL_OK)
                driver_die("reduce", &err);
            const double t = driver_now_s() - t0;
            best = t < best ? t : best;
        }
        fprintf(stderr, "%.6f\n", best);
        free(o.data);
    }
    reduce_both(p, p.out_dtype, &in, arg[9], arg[11]);
    reduce_both(p, natural, &in, arg[10], arg[12]);
    free(data);
    return 0;
}
