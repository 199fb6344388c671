/* SPDX-License-Identifier: MIT */
/*
 * Neighbourhood filters (<sluice/filter.h>): names, parameter checks,
 * halos, input regions, scratch sizes, and sl_filter(), which validates a
 * call, pads the input where the output's neighbourhoods cross an edge,
 * and runs the kind's passes (filter_separable.c) or the median
 * (filter_rank.c).
 *
 * DESIGN: the semantics are scipy.ndimage's (1.10), step by step:
 * gaussian, uniform, minimum and maximum are one 1-D pass per axis that
 * the filter changes (sigma > 1e-15, size > 1), in axis order, each
 * intermediate stored in the input's dtype; gradient_magnitude and
 * laplace compute one derivative per axis from the input and fold them in
 * the dtype with numpy's arithmetic; median_filter of a box of one element
 * is a copy and of two elements a maximum_filter, as scipy dispatches
 * them.  Scratch holds, in this order: the Gaussian weights, the padded
 * box, two intermediates, the derivative of gradient_magnitude and
 * laplace, the line tiles and the median's box; scratch_layout() computes
 * it once for both sl_filter_scratch_bytes and sl_filter.
 */
#include <inttypes.h>
#include <string.h>

#include <sluice/checked.h>
#include <sluice/filter.h>

#include "filter_internal.h"

#define KIND_COUNT ((unsigned)SL_FILTER_LAPLACE + 1)
#define MODE_COUNT ((unsigned)SL_BOUNDARY_WRAP + 1)

static const char *const kind_names[KIND_COUNT] = {
    [SL_FILTER_GAUSSIAN] = "gaussian", [SL_FILTER_UNIFORM] = "uniform",
    [SL_FILTER_MEDIAN] = "median",     [SL_FILTER_MINIMUM] = "minimum",
    [SL_FILTER_MAXIMUM] = "maximum",   [SL_FILTER_GRADIENT_MAGNITUDE] = "gradient_magnitude",
    [SL_FILTER_LAPLACE] = "laplace",
};

static const char *const mode_names[MODE_COUNT] = {
    [SL_BOUNDARY_REFLECT] = "reflect", [SL_BOUNDARY_NEAREST] = "nearest",
    [SL_BOUNDARY_MIRROR] = "mirror",   [SL_BOUNDARY_CONSTANT] = "constant",
    [SL_BOUNDARY_WRAP] = "wrap",
};

const char *
sl_filter_kind_name(sl_filter_kind k)
{
    return (unsigned)k < KIND_COUNT ? kind_names[k] : "invalid";
}

const char *
sl_boundary_name(sl_boundary m)
{
    return (unsigned)m < MODE_COUNT ? mode_names[m] : "invalid";
}

/* Find `name` among `count` names; EINVAL listing them when absent. */
static sl_status
name_find(const char *what, const char *const *names, unsigned count, const char *name,
          unsigned *out, struct sl_error *err)
{
    if (name == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: NULL argument", what);
    for (unsigned i = 0; i < count; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = i;
            return SL_OK;
        }
    }
    char known[128];
    size_t len = 0;
    known[0] = '\0';
    for (unsigned i = 0; i < count; i++)
        sl__strbuf_append(known, sizeof known, &len, "%s%s", i ? ", " : "", names[i]);
    return sl_error_set(err, SL_EINVAL, NULL, "unknown %s \"%.40s\"; known: %s", what, name, known);
}

sl_status
sl_filter_kind_from_name(const char *name, sl_filter_kind *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    unsigned i = 0;
    SL_TRY(name_find("filter kind", kind_names, KIND_COUNT, name, &i, err));
    *out = (sl_filter_kind)i;
    return SL_OK;
}

sl_status
sl_boundary_from_name(const char *name, sl_boundary *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    unsigned i = 0;
    SL_TRY(name_find("boundary mode", mode_names, MODE_COUNT, name, &i, err));
    *out = (sl_boundary)i;
    return SL_OK;
}

/* ---- parameters ------------------------------------------------------------------- */

static bool
uses_sigma(sl_filter_kind k)
{
    return k == SL_FILTER_GAUSSIAN || k == SL_FILTER_GRADIENT_MAGNITUDE;
}

static bool
uses_size(sl_filter_kind k)
{
    return k == SL_FILTER_UNIFORM || k == SL_FILTER_MEDIAN || k == SL_FILTER_MINIMUM ||
           k == SL_FILTER_MAXIMUM;
}

static double
truncate_of(const struct sl_filter_params *p)
{
    return p->truncate == 0 ? 4.0 : p->truncate;
}

/* True when the Gaussian of axis d is applied (scipy: sigma > 1e-15). */
static bool
sigma_applies(const struct sl_filter_params *p, uint32_t d)
{
    return p->sigma[d] > SL__FILT_SIGMA_MIN;
}

/* The Gaussian radius of axis d: int(truncate * sigma + 0.5), checked. */
static uint64_t
radius_of(const struct sl_filter_params *p, uint32_t d)
{
    return sigma_applies(p, d) ? (uint64_t)(truncate_of(p) * p->sigma[d] + 0.5) : 0;
}

sl_status
sl_filter_check(const struct sl_filter_params *p, sl_dtype dt, uint32_t rank, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (p == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "filter: NULL params");
    if ((unsigned)p->kind >= KIND_COUNT)
        return sl_error_set(err, SL_EINVAL, NULL, "filter: invalid kind %d", (int)p->kind);
    const char *name = kind_names[p->kind];
    if ((unsigned)p->mode >= MODE_COUNT)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "filter \"%s\": invalid boundary mode %d (modes: reflect, nearest, "
                            "mirror, constant, wrap)",
                            name, (int)p->mode);
    if (p->rank != rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "filter \"%s\": parameters of rank %" PRIu32
                            " for input of rank %" PRIu32,
                            name, p->rank, rank);
    if (rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "filter \"%s\": rank %" PRIu32 " exceeds %d", name, rank, SL_MAX_RANK);
    if (sl_dtype_size(dt) == 0)
        return sl_error_set(err, SL_EINVAL, NULL, "filter \"%s\": invalid dtype %d", name, (int)dt);
    if (!sl__ops_dtype_is_kernel(dt))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "filter \"%s\" does not support dtype %s (it supports bool, "
                            "int8..int64, uint8..uint64, float32, float64)",
                            name, sl_dtype_name(dt));
    if (uses_sigma(p->kind)) {
        if (!isfinite(p->truncate) || p->truncate < 0)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "filter \"%s\": truncate %g (it must be finite and >= 0; 0 "
                                "means 4.0)",
                                name, p->truncate);
        for (uint32_t d = 0; d < rank; d++) {
            const double s = p->sigma[d];
            if (!isfinite(s) || s < 0)
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "filter \"%s\": sigma %g on axis %" PRIu32
                                    " (sigmas must be finite and >= 0)",
                                    name, s, d);
            const double r = truncate_of(p) * s + 0.5;
            if (sigma_applies(p, d) && !(r < (double)SL__FILT_SIZE_MAX))
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "filter \"%s\": sigma %g on axis %" PRIu32
                                    " with truncate %g gives radius %.0f, above the largest, "
                                    "%" PRIu64,
                                    name, s, d, truncate_of(p), floor(r), SL__FILT_SIZE_MAX - 1);
        }
    }
    if (uses_size(p->kind)) {
        for (uint32_t d = 0; d < rank; d++) {
            if (p->size[d] == 0)
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "filter \"%s\": size 0 on axis %" PRIu32
                                    " (sizes must be at least 1)",
                                    name, d);
            if (p->size[d] > SL__FILT_SIZE_MAX)
                return sl_error_set(err, SL_EINVAL, NULL,
                                    "filter \"%s\": size %" PRIu64 " on axis %" PRIu32
                                    " exceeds the largest, %" PRIu64,
                                    name, p->size[d], d, SL__FILT_SIZE_MAX);
        }
    }
    return SL_OK;
}

void
sl_filter_halo(const struct sl_filter_params *p, uint64_t *lo, uint64_t *hi)
{
    for (uint32_t d = 0; d < p->rank; d++) {
        if (uses_sigma(p->kind)) {
            lo[d] = hi[d] = radius_of(p, d);
        } else if (uses_size(p->kind)) {
            lo[d] = p->size[d] / 2;
            hi[d] = p->size[d] - 1 - lo[d];
        } else {
            lo[d] = hi[d] = 1; /* laplace: [1, -2, 1] */
        }
    }
}

sl_dtype
sl_filter_out_dtype(const struct sl_filter_params *p, sl_dtype dt)
{
    (void)p;
    return dt;
}

void
sl_filter_input_region(const struct sl_filter_params *p, const uint64_t *shape,
                       const struct sl_region *out, struct sl_region *in)
{
    uint64_t lo[SL_MAX_RANK], hi[SL_MAX_RANK];
    sl_filter_halo(p, lo, hi);
    struct sl_region r = {.rank = p->rank};
    const bool empty = sl_region_is_empty(out);
    for (uint32_t d = 0; d < p->rank; d++) {
        const uint64_t n = shape[d] < SL__FILT_EXTENT_MAX ? shape[d] : SL__FILT_EXTENT_MAX;
        const uint64_t o0 = out->start[d] < n ? out->start[d] : n;
        const uint64_t o1 = out->stop[d] < n ? out->stop[d] : n;
        if (empty || o0 >= o1) {
            r.start[d] = r.stop[d] = o0;
            continue;
        }
        sl__filt_needed(p->mode, (int64_t)o0 - (int64_t)lo[d], (int64_t)(o1 + hi[d]), n,
                        &r.start[d], &r.stop[d]);
    }
    *in = r;
}

/* ---- scratch ------------------------------------------------------------------------- */

/* Byte offsets of each scratch buffer (0 size: absent) and the total. */
struct layout {
    uint64_t lo[SL_MAX_RANK], hi[SL_MAX_RANK]; /* the halo */
    uint64_t ext[SL_MAX_RANK];                 /* out + lo + hi per axis */
    size_t weights, pad, a, b, tmp, tile_ext, tile_res, tile_aux, window;
    size_t total;
};

/* Reserve `count` items of `item` bytes, aligned, at the end of `l`;
 * false on overflow. */
static bool
reserve(struct layout *l, size_t *at, uint64_t count, size_t item)
{
    size_t bytes, start;
    if (count > SIZE_MAX / item || !sl_size_add_fits(l->total, SL__FILT_ALIGN - 1, &start))
        return false;
    bytes = (size_t)count * item;
    start &= ~(size_t)(SL__FILT_ALIGN - 1);
    if (!sl_size_add_fits(start, bytes, &l->total))
        return false;
    *at = start;
    return true;
}

/* Product of `ext` with the axes in `use_out` taken from `out` instead;
 * false on overflow. */
static bool
box_count(uint32_t rank, const uint64_t *ext, const uint64_t *out, const bool *use_out, uint64_t *n)
{
    uint64_t c = 1;
    for (uint32_t d = 0; d < rank; d++)
        if (!sl_u64_mul_fits(c, use_out[d] ? out[d] : ext[d], &c))
            return false;
    *n = c;
    return true;
}

/* The axes the separable passes of `p` filter, in order (scipy skips
 * sigma <= 1e-15 and size 1); their number. */
static uint32_t
pass_axes(const struct sl_filter_params *p, uint32_t *axes)
{
    uint32_t n = 0;
    for (uint32_t d = 0; d < p->rank; d++) {
        bool on;
        if (uses_sigma(p->kind))
            on = sigma_applies(p, d);
        else if (uses_size(p->kind))
            on = p->size[d] > 1;
        else
            on = true;
        if (on)
            axes[n++] = d;
    }
    return n;
}

/* Elements in the median's box (sizes <= 2^31 each, so check the product). */
static bool
median_count(const struct sl_filter_params *p, uint64_t *n)
{
    uint64_t c = 1;
    for (uint32_t d = 0; d < p->rank; d++)
        if (!sl_u64_mul_fits(c, p->size[d], &c))
            return false;
    *n = c;
    return true;
}

/* True when median runs the rank kernel (boxes of three elements or more). */
static bool
median_is_rank(const struct sl_filter_params *p)
{
    uint64_t n;
    return !median_count(p, &n) || n > 2;
}

static sl_status
scratch_layout(const struct sl_filter_params *p, sl_dtype dt, const uint64_t *out, struct layout *l,
               struct sl_error *err)
{
    const uint32_t rank = p->rank;
    const size_t es = sl_dtype_size(dt);
    memset(l, 0, sizeof *l);
    sl_filter_halo(p, l->lo, l->hi);
    uint32_t axes[SL_MAX_RANK];
    const uint32_t n_pass = pass_axes(p, axes);
    bool use_out[SL_MAX_RANK], all_out[SL_MAX_RANK];
    uint64_t n_weights = 0, len_max = 0, n_max = 0, n_pad = 0, n_a = 0, n_b = 0, n_out = 0;
    uint64_t n_win = 0;
    bool ok = true;
    for (uint32_t d = 0; d < rank; d++) {
        ok = ok && sl_u64_add_fits(out[d], l->lo[d], &l->ext[d]) &&
             sl_u64_add_fits(l->ext[d], l->hi[d], &l->ext[d]);
        use_out[d] = false;
        all_out[d] = true;
    }
    ok = ok && box_count(rank, l->ext, out, use_out, &n_pad) &&
         box_count(rank, l->ext, out, all_out, &n_out);
    bool halo = false;
    for (uint32_t d = 0; d < rank; d++)
        halo = halo || l->lo[d] > 0 || l->hi[d] > 0;
    if (!halo)
        n_pad = 0; /* the input is read in place */
    for (uint32_t k = 0; ok && k < n_pass; k++) {
        const uint32_t a = axes[k];
        if (uses_sigma(p->kind))
            n_weights += 2 * (l->lo[a] + 1); /* orders 0 and 1 */
        len_max = l->ext[a] > len_max ? l->ext[a] : len_max;
        n_max = out[a] > n_max ? out[a] : n_max;
        /* Intermediate k: axes filtered so far at the output's extent;
         * axes filtered later at the padded one; others at the output's. */
        bool now[SL_MAX_RANK];
        for (uint32_t d = 0; d < rank; d++)
            now[d] = true;
        for (uint32_t j = k + 1; j < n_pass; j++)
            now[axes[j]] = false;
        uint64_t c = 0;
        ok = ok && box_count(rank, l->ext, out, now, &c);
        if (k == 0)
            n_a = n_pass >= 2 ? c : 0;
        if (k == 1)
            n_b = n_pass >= 3 ? c : 0;
    }
    const bool multi = p->kind == SL_FILTER_GRADIENT_MAGNITUDE || p->kind == SL_FILTER_LAPLACE;
    const bool rank_kernel = p->kind == SL_FILTER_MEDIAN && median_is_rank(p);
    if (rank_kernel)
        ok = ok && median_count(p, &n_win);
    /* Laplace derivatives run one axis each: no intermediates. */
    if (p->kind == SL_FILTER_LAPLACE)
        n_a = n_b = 0;
    /* Tiles are as wide as the widest axis, up to SL__FILT_TILE columns. */
    uint64_t tile = 1;
    for (uint32_t d = 0; d < rank; d++)
        tile = l->ext[d] > tile ? l->ext[d] : tile;
    tile = tile < SL__FILT_TILE ? tile : SL__FILT_TILE;
    uint64_t n_ext = 0, n_res = 0, n_aux = 0;
    if (ok && !rank_kernel && n_pass > 0) {
        ok = sl_u64_mul_fits(len_max, tile, &n_ext) && sl_u64_mul_fits(n_max, tile, &n_res);
        if (p->kind == SL_FILTER_UNIFORM)
            n_aux = tile;
        else if (p->kind == SL_FILTER_MINIMUM || p->kind == SL_FILTER_MAXIMUM ||
                 p->kind == SL_FILTER_MEDIAN)
            ok = ok && sl_u64_mul_fits(n_ext, 2, &n_aux);
    }
    ok = ok && reserve(l, &l->weights, n_weights, sizeof(double)) &&
         reserve(l, &l->pad, n_pad, es) && reserve(l, &l->a, n_a, es) &&
         reserve(l, &l->b, n_b, es) && reserve(l, &l->tmp, multi ? n_out : 0, es) &&
         reserve(l, &l->tile_ext, n_ext, sizeof(double)) &&
         reserve(l, &l->tile_res, n_res, sizeof(double)) &&
         reserve(l, &l->tile_aux, n_aux, sizeof(double)) &&
         reserve(l, &l->window, n_win, sizeof(double)) &&
         sl_size_add_fits(l->total, SL__FILT_ALIGN - 1, &l->total);
    if (!ok) {
        char buf[160];
        sl_shape_format(rank, out, buf, sizeof buf);
        return sl_error_set(err, SL_EOVERFLOW, NULL,
                            "filter \"%s\": scratch for output blocks of shape %s exceeds "
                            "SIZE_MAX",
                            kind_names[p->kind], buf);
    }
    return SL_OK;
}

sl_status
sl_filter_scratch_bytes(const struct sl_filter_params *p, sl_dtype dt, const uint64_t *out_shape,
                        size_t *bytes, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (p == NULL || bytes == NULL || (out_shape == NULL && p->rank > 0))
        return sl_error_set(err, SL_EINVAL, NULL, "filter scratch: NULL argument");
    SL_TRY(sl_filter_check(p, dt, p->rank, err));
    struct layout l;
    SL_TRY(scratch_layout(p, dt, out_shape, &l, err));
    *bytes = l.total;
    return SL_OK;
}

/* ---- filtering ------------------------------------------------------------------------ */

/* The box of view `v` placed at array position `start`. */
static struct sl__filt_box
box_of_view(const struct sl_view *v, const uint64_t *start)
{
    struct sl__filt_box b = {.data = v->data};
    const ptrdiff_t es = (ptrdiff_t)sl_dtype_size(v->dtype);
    for (uint32_t d = 0; d < v->rank; d++) {
        b.start[d] = (int64_t)start[d];
        b.ext[d] = v->shape[d];
        b.step[d] = (ptrdiff_t)v->stride[d] * es;
    }
    return b;
}

/* A C-order box of `ext` at `data`, placed at `start`. */
static struct sl__filt_box
box_c(unsigned char *data, uint32_t rank, const int64_t *start, const uint64_t *ext, size_t es)
{
    struct sl__filt_box b = {.data = data};
    ptrdiff_t step = (ptrdiff_t)es;
    for (uint32_t d = rank; d-- > 0;) {
        b.start[d] = start[d];
        b.ext[d] = ext[d];
        b.step[d] = step;
        step *= (ptrdiff_t)ext[d];
    }
    return b;
}

/* The part of `b` at positions [start, start + ext), which it holds. */
static struct sl__filt_box
box_sub(const struct sl__filt_box *b, uint32_t rank, const int64_t *start, const uint64_t *ext)
{
    struct sl__filt_box r = *b;
    ptrdiff_t off = 0;
    for (uint32_t d = 0; d < rank; d++) {
        off += (ptrdiff_t)(start[d] - b->start[d]) * b->step[d];
        r.start[d] = start[d];
        r.ext[d] = ext[d];
    }
    r.data = b->data + off;
    return r;
}

/* Run `n` passes from `src` (padded along the passes' axes) into `final`,
 * through intermediates at `buf_a` and `buf_b`, alternately. */
static void
run_chain(const struct sl__filt_ctx *ctx, const struct sl__filt_pass *passes, uint32_t n,
          const struct sl__filt_box *src, const struct sl__filt_box *final, unsigned char *buf_a,
          unsigned char *buf_b)
{
    const size_t es = sl_dtype_size(ctx->dtype);
    struct sl__filt_box cur = *src;
    for (uint32_t k = 0; k < n; k++) {
        const uint32_t a = passes[k].axis;
        struct sl__filt_box next = *final;
        if (k + 1 < n) {
            int64_t start[SL_MAX_RANK];
            uint64_t ext[SL_MAX_RANK];
            memcpy(start, cur.start, sizeof start);
            memcpy(ext, cur.ext, sizeof ext);
            start[a] = final->start[a];
            ext[a] = final->ext[a];
            next = box_c(k % 2 == 0 ? buf_a : buf_b, ctx->rank, start, ext, es);
        }
        sl__filt_pass_run(ctx, &passes[k], &cur, &next);
        cur = next;
    }
}

/* Everything one call works with. */
struct call {
    const struct sl_filter_params *p;
    struct sl__filt_ctx ctx;
    struct layout l;
    unsigned char *base;          /* aligned scratch */
    struct sl__filt_box pad;      /* the padded input over E */
    struct sl__filt_box out;      /* the output */
    int64_t e_start[SL_MAX_RANK]; /* E's first position per axis */
    int64_t o_start[SL_MAX_RANK]; /* the output's */
    uint32_t axes[SL_MAX_RANK];   /* the axes passes filter, in order */
    uint32_t n_pass;              /* their number */
};

/* The part of the padded input a chain of passes over `axes` (n of them)
 * starts from: padded along those axes, the output's extent elsewhere. */
static struct sl__filt_box
chain_source(const struct call *c, const uint32_t *axes, uint32_t n)
{
    int64_t start[SL_MAX_RANK];
    uint64_t ext[SL_MAX_RANK];
    for (uint32_t d = 0; d < c->ctx.rank; d++) {
        start[d] = c->o_start[d];
        ext[d] = c->out.ext[d];
    }
    for (uint32_t k = 0; k < n; k++) {
        start[axes[k]] = c->e_start[axes[k]];
        ext[axes[k]] = c->l.ext[axes[k]];
    }
    return box_sub(&c->pad, c->ctx.rank, start, ext);
}

/* Gaussian, uniform, minimum, maximum (and median of two): one chain. */
static void
run_separable(struct call *c, enum sl__filt_line line)
{
    struct sl__filt_pass passes[SL_MAX_RANK];
    double *w = (double *)(void *)(c->base + c->l.weights);
    for (uint32_t k = 0; k < c->n_pass; k++) {
        const uint32_t a = c->axes[k];
        passes[k] = (struct sl__filt_pass){
            .axis = a, .line = line, .lo = c->l.lo[a], .hi = c->l.hi[a], .w = w};
        if (line == SL__FILT_LINE_SYM) {
            passes[k].line = sl__filt_gauss_weights(c->p->sigma[a], 0, c->l.lo[a], w);
            w += c->l.lo[a] + 1;
        }
    }
    const struct sl__filt_box src = chain_source(c, c->axes, c->n_pass);
    run_chain(&c->ctx, passes, c->n_pass, &src, &c->out, c->base + c->l.a, c->base + c->l.b);
}

/* gradient_magnitude: sqrt of the sum of squared Gaussian derivatives;
 * laplace: the sum of second differences; each derivative from the input,
 * folded in the dtype. */
static void
run_derivatives(struct call *c)
{
    const uint32_t rank = c->ctx.rank;
    const bool gm = c->p->kind == SL_FILTER_GRADIENT_MAGNITUDE;
    static const double lap_w[2] = {-2.0, 1.0};
    double *w = (double *)(void *)(c->base + c->l.weights);
    const double *w0[SL_MAX_RANK], *w1[SL_MAX_RANK];
    enum sl__filt_line l0[SL_MAX_RANK], l1[SL_MAX_RANK];
    for (uint32_t k = 0; gm && k < c->n_pass; k++) {
        const uint32_t a = c->axes[k];
        const uint64_t r = c->l.lo[a];
        l0[a] = sl__filt_gauss_weights(c->p->sigma[a], 0, r, w);
        w0[a] = w;
        l1[a] = sl__filt_gauss_weights(c->p->sigma[a], 1, r, w + r + 1);
        w1[a] = w + r + 1;
        w += 2 * (r + 1);
    }
    const struct sl__filt_box tmp =
        box_c(c->base + c->l.tmp, rank, c->o_start, c->out.ext, sl_dtype_size(c->ctx.dtype));
    for (uint32_t d = 0; d < rank; d++) {
        struct sl__filt_pass passes[SL_MAX_RANK];
        struct sl__filt_box src, t = tmp;
        if (gm) {
            for (uint32_t k = 0; k < c->n_pass; k++) {
                const uint32_t a = c->axes[k];
                passes[k] = (struct sl__filt_pass){.axis = a,
                                                   .line = a == d ? l1[a] : l0[a],
                                                   .lo = c->l.lo[a],
                                                   .hi = c->l.hi[a],
                                                   .w = a == d ? w1[a] : w0[a]};
            }
            src = chain_source(c, c->axes, c->n_pass);
            if (c->n_pass == 0)
                t = src; /* no axis smoothed: the derivative is the input */
            else
                run_chain(&c->ctx, passes, c->n_pass, &src, &tmp, c->base + c->l.a,
                          c->base + c->l.b);
        } else {
            passes[0] = (struct sl__filt_pass){
                .axis = d, .line = SL__FILT_LINE_SYM, .lo = 1, .hi = 1, .w = lap_w};
            src = chain_source(c, &d, 1);
            run_chain(&c->ctx, passes, 1, &src, &tmp, NULL, NULL);
        }
        enum sl__filt_fold f;
        if (gm)
            f = d == 0 ? SL__FILT_FOLD_SQUARE : SL__FILT_FOLD_ADD_SQ;
        else
            f = d == 0 ? SL__FILT_FOLD_SET : SL__FILT_FOLD_ADD;
        sl__filt_combine(c->ctx.dtype, rank, f, &c->out, &t);
    }
    if (gm)
        sl__filt_combine(c->ctx.dtype, rank, SL__FILT_FOLD_SQRT, &c->out, &c->out);
}

/* Check the arguments of sl_filter that sl_filter_check does not. */
static sl_status
check_call(const struct sl_filter_params *p, const uint64_t *shape, const struct sl_view *in,
           const uint64_t *in_start, const struct sl_view *out, const uint64_t *out_start,
           struct sl_error *err)
{
    const char *name = kind_names[p->kind];
    if (out->dtype != in->dtype || out->rank != in->rank)
        return sl_error_set(
            err, SL_EINVAL, NULL,
            "filter \"%s\": output %s of rank %" PRIu32 " for input %s of rank %" PRIu32
            " (the output takes the input's dtype and rank)",
            name, sl_dtype_name(out->dtype), out->rank, sl_dtype_name(in->dtype), in->rank);
    for (uint32_t d = 0; d < p->rank; d++) {
        if (shape[d] > SL__FILT_EXTENT_MAX)
            return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                                "filter \"%s\": array extent %" PRIu64 " on axis %" PRIu32
                                " exceeds 2^62",
                                name, shape[d], d);
        if (out_start[d] > shape[d] || out->shape[d] > shape[d] - out_start[d])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "filter \"%s\": output [%" PRIu64 ", +%" PRIu64 ") on axis %" PRIu32
                                " leaves the array's extent %" PRIu64,
                                name, out_start[d], out->shape[d], d, shape[d]);
        if (in_start[d] > shape[d] || in->shape[d] > shape[d] - in_start[d])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "filter \"%s\": input [%" PRIu64 ", +%" PRIu64 ") on axis %" PRIu32
                                " leaves the array's extent %" PRIu64,
                                name, in_start[d], in->shape[d], d, shape[d]);
    }
    return SL_OK;
}

/* Check that `in` holds every element the output's neighbourhoods map to. */
static sl_status
check_input_holds(const struct sl_filter_params *p, const uint64_t *shape, const struct sl_view *in,
                  const uint64_t *in_start, const struct sl_view *out, const uint64_t *out_start,
                  struct sl_error *err)
{
    struct sl_region o = {.rank = p->rank}, need;
    for (uint32_t d = 0; d < p->rank; d++) {
        o.start[d] = out_start[d];
        o.stop[d] = out_start[d] + out->shape[d];
    }
    sl_filter_input_region(p, shape, &o, &need);
    for (uint32_t d = 0; d < p->rank; d++) {
        const uint64_t i0 = in_start[d], i1 = in_start[d] + in->shape[d];
        if (need.start[d] < i0 || need.stop[d] > i1)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "filter \"%s\": the input holds [%" PRIu64 ", %" PRIu64
                                ") on axis %" PRIu32 ", but output [%" PRIu64 ", %" PRIu64
                                ") needs [%" PRIu64 ", %" PRIu64 ") there (%s mode; see "
                                "sl_filter_input_region)",
                                kind_names[p->kind], i0, i1, d, o.start[d], o.stop[d],
                                need.start[d], need.stop[d], mode_names[p->mode]);
    }
    return SL_OK;
}

sl_status
sl_filter(const struct sl_filter_params *p, const uint64_t *shape, const struct sl_view *in,
          const uint64_t *in_start, const struct sl_view *out, const uint64_t *out_start,
          void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (p == NULL || in == NULL || out == NULL ||
        (p->rank > 0 && (shape == NULL || in_start == NULL || out_start == NULL)))
        return sl_error_set(err, SL_EINVAL, NULL, "filter: NULL argument");
    SL_TRY(sl_view_check(in, err));
    SL_TRY(sl_view_check(out, err));
    SL_TRY(sl_filter_check(p, in->dtype, in->rank, err));
    SL_TRY(check_call(p, shape, in, in_start, out, out_start, err));
    if (sl__view_is_empty(out))
        return SL_OK;
    const char *name = kind_names[p->kind];
    struct call c = {.p = p};
    SL_TRY(scratch_layout(p, in->dtype, out->shape, &c.l, err));
    if (scratch_bytes < c.l.total || (scratch == NULL && c.l.total > 0)) {
        char buf[160];
        sl_shape_format(p->rank, out->shape, buf, sizeof buf);
        return sl_error_set(err, SL_ENOMEM, NULL,
                            "filter \"%s\": scratch of %zu bytes; output blocks of shape %s "
                            "need %zu (sl_filter_scratch_bytes)",
                            name, scratch == NULL ? (size_t)0 : scratch_bytes, buf, c.l.total);
    }
    SL_TRY(check_input_holds(p, shape, in, in_start, out, out_start, err));
    if (!sl__view_is_empty(in) && sl__view_overlap(in, out))
        return sl_error_set(err, SL_EINVAL, NULL, "filter \"%s\": output overlaps input", name);

    const uint32_t rank = p->rank;
    const size_t es = sl_dtype_size(in->dtype);
    /* The part of the input at the output's region, for copies. */
    struct sl_view same = *in;
    for (uint32_t d = 0; d < rank; d++) {
        same.shape[d] = out->shape[d];
        same.data = (unsigned char *)same.data +
                    (ptrdiff_t)(out_start[d] - in_start[d]) * in->stride[d] * (ptrdiff_t)es;
    }
    c.n_pass = pass_axes(p, c.axes);
    uint64_t box = 0;
    const bool median2 =
        p->kind == SL_FILTER_MEDIAN && !median_is_rank(p) && median_count(p, &box) && box == 2;
    bool copy = rank == 0;
    if (p->kind == SL_FILTER_GAUSSIAN || p->kind == SL_FILTER_UNIFORM ||
        p->kind == SL_FILTER_MINIMUM || p->kind == SL_FILTER_MAXIMUM || median2)
        copy = copy || c.n_pass == 0;
    if (p->kind == SL_FILTER_MEDIAN && !median2 && !median_is_rank(p))
        copy = true; /* a box of one element */
    if (copy) {
        sl__view_copy_unchecked(out, &same);
        return SL_OK;
    }

    c.base = (unsigned char *)(((uintptr_t)scratch + (SL__FILT_ALIGN - 1)) &
                               ~(uintptr_t)(SL__FILT_ALIGN - 1));
    c.ctx = (struct sl__filt_ctx){.dtype = in->dtype,
                                  .rank = rank,
                                  .constant = p->mode == SL_BOUNDARY_CONSTANT,
                                  .cval = p->cval,
                                  .ext = (double *)(void *)(c.base + c.l.tile_ext),
                                  .res = (double *)(void *)(c.base + c.l.tile_res),
                                  .aux = (double *)(void *)(c.base + c.l.tile_aux)};
    memcpy(c.ctx.shape, shape, rank * sizeof *shape);
    c.out = box_of_view(out, out_start);
    const struct sl__filt_box inb = box_of_view(in, in_start);
    bool inside = true;
    for (uint32_t d = 0; d < rank; d++) {
        c.o_start[d] = (int64_t)out_start[d];
        c.e_start[d] = (int64_t)out_start[d] - (int64_t)c.l.lo[d];
        const int64_t e_stop = c.e_start[d] + (int64_t)c.l.ext[d];
        inside =
            inside && c.e_start[d] >= inb.start[d] && e_stop <= inb.start[d] + (int64_t)inb.ext[d];
    }
    if (inside) {
        c.pad = box_sub(&inb, rank, c.e_start, c.l.ext);
    } else {
        c.pad = box_c(c.base + c.l.pad, rank, c.e_start, c.l.ext, es);
        sl__filt_pad(&c.pad, &inb, rank, shape, p->mode, es);
    }
    switch (p->kind) {
    case SL_FILTER_GAUSSIAN:
        run_separable(&c, SL__FILT_LINE_SYM);
        break;
    case SL_FILTER_UNIFORM:
        run_separable(&c, SL__FILT_LINE_MEAN);
        break;
    case SL_FILTER_MINIMUM:
        run_separable(&c, SL__FILT_LINE_MIN);
        break;
    case SL_FILTER_MAXIMUM:
        run_separable(&c, SL__FILT_LINE_MAX);
        break;
    case SL_FILTER_MEDIAN:
        if (median2)
            run_separable(&c, SL__FILT_LINE_MAX); /* scipy: the larger of two */
        else
            sl__filt_median(&c.ctx, p->size, &c.pad, &c.out,
                            (double *)(void *)(c.base + c.l.window));
        break;
    case SL_FILTER_GRADIENT_MAGNITUDE:
    case SL_FILTER_LAPLACE:
        run_derivatives(&c);
        break;
    }
    return SL_OK;
}
