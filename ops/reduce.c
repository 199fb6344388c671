/* SPDX-License-Identifier: MIT */
/*
 * Reductions along axes (include/sluice/reduce.h): method names, numpy's
 * default dtypes, parameter and view checks, and the public calls, which
 * check their views, normalize them into a `struct sl__rd_plan` and run the
 * driver (reduce_drive.c) with the method's kernel (reduce_kernels.c).
 *
 * DESIGN: the direct form and the state form share the kernels: a direct
 * reduction folds a tile's inputs into accumulators and finishes them at
 * once; state_add folds them the same way and merges them into records;
 * merge and finish read records back.  So a block split into partials
 * goes through the same arithmetic as the whole block, in another order.
 * A plan orders dimensions by input stride, so the row loops run along
 * the input's contiguous dimension whatever the views' order.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_internal.h"

static const char *const method_names[SL_REDUCE_METHOD_COUNT_] = {
#define SL_REDUCE_NAME_(NAME, str) [SL_REDUCE_##NAME] = str,
    SL_REDUCE_METHOD_MAP(SL_REDUCE_NAME_)
#undef SL_REDUCE_NAME_
};

const char *
sl_reduce_method_name(sl_reduce_method m)
{
    return (unsigned)m < SL_REDUCE_METHOD_COUNT_ ? method_names[m] : "invalid";
}

sl_status
sl_reduce_method_from_name(const char *name, sl_reduce_method *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (name == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "reduce method: NULL argument");
    for (unsigned m = 0; m < SL_REDUCE_METHOD_COUNT_; m++) {
        if (strcmp(name, method_names[m]) == 0) {
            *out = (sl_reduce_method)m;
            return SL_OK;
        }
    }
    char known[128];
    size_t len = 0;
    known[0] = '\0';
    for (unsigned m = 0; m < SL_REDUCE_METHOD_COUNT_; m++)
        sl__strbuf_append(known, sizeof known, &len, "%s%s", m ? ", " : "", method_names[m]);
    return sl_error_set(err, SL_EINVAL, NULL, "unknown reduce method \"%.20s\"; known: %s", name,
                        known);
}

/* SL_EINVAL for an invalid dtype value, SL_EUNSUPPORTED for a dtype the
 * kernels do not compute on; `what` names the dtype's role. */
static sl_status
check_dtype(sl_reduce_method m, const char *what, sl_dtype dt, struct sl_error *err)
{
    if (sl_dtype_size(dt) == 0)
        return sl_error_set(err, SL_EINVAL, NULL, "reduce %s: invalid %s dtype %d", method_names[m],
                            what, (int)dt);
    if (!sl__ops_dtype_is_kernel(dt))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "reduce %s does not support %s dtype %s (it supports bool, "
                            "int8..int64, uint8..uint64, float32, float64)",
                            method_names[m], what, sl_dtype_name(dt));
    return SL_OK;
}

sl_status
sl_reduce_default_dtype(sl_reduce_method m, sl_dtype in, sl_dtype *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "reduce default dtype: NULL argument");
    if ((unsigned)m >= SL_REDUCE_METHOD_COUNT_)
        return sl_error_set(err, SL_EINVAL, NULL, "reduce: invalid method %d", (int)m);
    SL_TRY(check_dtype(m, "input", in, err));
    const bool is_float = sl_dtype_is_float(in);
    switch (m) {
    case SL_REDUCE_SUM:
    case SL_REDUCE_PROD:
    case SL_REDUCE_NANSUM:
        *out = is_float                                               ? in
               : (sl_dtype_is_integer(in) && !sl_dtype_is_signed(in)) ? SL_DTYPE_U64
                                                                      : SL_DTYPE_I64;
        break;
    case SL_REDUCE_MEAN:
    case SL_REDUCE_STD:
    case SL_REDUCE_VAR:
    case SL_REDUCE_NANMEAN:
        *out = is_float ? in : SL_DTYPE_F64;
        break;
    case SL_REDUCE_ANY:
    case SL_REDUCE_ALL:
        *out = SL_DTYPE_BOOL;
        break;
    case SL_REDUCE_COUNT_NONZERO:
        *out = SL_DTYPE_I64;
        break;
    default: /* min, max, nanmin, nanmax */
        *out = in;
        break;
    }
    return SL_OK;
}

sl_status
sl_reduce_check(const struct sl_reduce_params *p, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (p == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "reduce: NULL params");
    if ((unsigned)p->method >= SL_REDUCE_METHOD_COUNT_)
        return sl_error_set(err, SL_EINVAL, NULL, "reduce: invalid method %d", (int)p->method);
    SL_TRY(check_dtype(p->method, "input", p->in_dtype, err));
    SL_TRY(check_dtype(p->method, "output", p->out_dtype, err));
    if (p->rank > SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "reduce %s: rank %" PRIu32 " exceeds %d",
                            method_names[p->method], p->rank, SL_MAX_RANK);
    if (!isfinite(p->ddof) || p->ddof < 0)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "reduce %s: ddof %g must be finite and at least 0",
                            method_names[p->method], p->ddof);
    return SL_OK;
}

uint32_t
sl_reduce_state_words(const struct sl_reduce_params *p)
{
    const struct sl__rd_kernel *k = p != NULL ? sl__rd_kernel_for(p->method, p->in_dtype) : NULL;
    return k != NULL ? k->words : 1;
}

/* ---- view checks ------------------------------------------------------------- */

/* `v` is a checked view of dtype `dt` and rank `rank`; `role` names it. */
static sl_status
check_view(const struct sl_reduce_params *p, const char *role, const struct sl_view *v, sl_dtype dt,
           uint32_t rank, struct sl_error *err)
{
    if (v == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "reduce %s: NULL %s view",
                            method_names[p->method], role);
    SL_TRY(sl_view_check(v, err));
    if (v->dtype != dt || v->rank != rank)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "reduce %s: %s is %s of rank %" PRIu32 ", expected %s of rank %" PRIu32,
                            method_names[p->method], role, sl_dtype_name(v->dtype), v->rank,
                            sl_dtype_name(dt), rank);
    return SL_OK;
}

/*
 * The first p->rank extents of `v` against `ref`'s: equal on kept
 * dimensions; 1 on reduced ones unless `any_reduced`.
 */
static sl_status
check_extents(const struct sl_reduce_params *p, const char *role, const struct sl_view *v,
              const char *ref_role, const struct sl_view *ref, bool any_reduced,
              struct sl_error *err)
{
    for (uint32_t d = 0; d < p->rank; d++) {
        if (p->reduced[d] && !any_reduced && v->shape[d] != 1)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "reduce %s: %s extent %" PRIu64 " in dimension %" PRIu32
                                " should be 1 (a reduced dimension)",
                                method_names[p->method], role, v->shape[d], d);
        if (!p->reduced[d] && v->shape[d] != ref->shape[d])
            return sl_error_set(err, SL_EINVAL, NULL,
                                "reduce %s: %s extent %" PRIu64 " in dimension %" PRIu32
                                " should be %" PRIu64 ", the %s's",
                                method_names[p->method], role, v->shape[d], d, ref->shape[d],
                                ref_role);
    }
    return SL_OK;
}

/* A state view of `p`: uint64, rank p->rank + 1, the words dimension last
 * with stride 1. */
static sl_status
check_state(const struct sl_reduce_params *p, const char *role, const struct sl_view *v,
            uint32_t words, struct sl_error *err)
{
    if (p->rank >= SL_MAX_RANK)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "reduce %s: a state view of rank %" PRIu32 " + 1 exceeds %d",
                            method_names[p->method], p->rank, SL_MAX_RANK);
    SL_TRY(check_view(p, role, v, SL_DTYPE_U64, p->rank + 1, err));
    if (v->shape[p->rank] != words ||
        (words > 1 && v->stride[p->rank] != 1 && !sl__view_is_empty(v)))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "reduce %s: %s's last dimension has extent %" PRIu64
                            " and stride %" PRId64 ", a state needs %" PRIu32 " words of stride 1",
                            method_names[p->method], role, v->shape[p->rank], v->stride[p->rank],
                            words);
    return SL_OK;
}

static sl_status
check_disjoint(const struct sl_reduce_params *p, const struct sl_view *a, const struct sl_view *b,
               struct sl_error *err)
{
    if (!sl__view_is_empty(a) && !sl__view_is_empty(b) && sl__view_overlap(a, b))
        return sl_error_set(err, SL_EINVAL, NULL, "reduce %s: the views overlap",
                            method_names[p->method]);
    return SL_OK;
}

/* The first p->rank dimensions of state view `v`: one record per element. */
static struct sl_view
state_head(const struct sl_reduce_params *p, const struct sl_view *v)
{
    struct sl_view h = *v;
    h.rank = p->rank;
    return h;
}

/* True when some kept dimension of `v` has extent 0 (no output). */
static bool
kept_empty(const struct sl_reduce_params *p, const struct sl_view *v)
{
    for (uint32_t d = 0; d < p->rank; d++)
        if (!p->reduced[d] && v->shape[d] == 0)
            return true;
    return false;
}

/* ---- plans ------------------------------------------------------------------- */

/* One dimension while a plan is built. */
struct rd_dim {
    uint64_t ext;  /* extent, > 1 */
    ptrdiff_t in;  /* input bytes between neighbours */
    ptrdiff_t out; /* output bytes between neighbours (0 when reduced) */
    bool red;      /* reduced */
};

/* Sort by |input step|, largest first, keeping C order among equals; then
 * merge neighbours of one role that are contiguous in both views. */
static uint32_t
dims_normalize(struct rd_dim *dim, uint32_t n)
{
    for (uint32_t a = 1; a < n; a++) {
        const struct rd_dim t = dim[a];
        uint32_t b = a;
        for (; b > 0 && llabs((long long)dim[b - 1].in) < llabs((long long)t.in); b--)
            dim[b] = dim[b - 1];
        dim[b] = t;
    }
    uint32_t m = 0;
    for (uint32_t a = 0; a < n; a++) {
        if (m > 0 && dim[m - 1].red == dim[a].red &&
            sl__ops_steps_chain(dim[m - 1].in, dim[a].in, dim[a].ext) &&
            (dim[a].red || sl__ops_steps_chain(dim[m - 1].out, dim[a].out, dim[a].ext))) {
            dim[m - 1].ext *= dim[a].ext;
            dim[m - 1].in = dim[a].in;
            dim[m - 1].out = dim[a].out;
            continue;
        }
        dim[m++] = dim[a];
    }
    return m;
}

/*
 * Plan the reduction of `in` (rank p->rank; records when it is a state
 * head) into `out` (same rank, extent 1 on reduced dimensions).  With
 * `inner` the innermost dimension, when reduced, goes inside the row step.
 * Kept extents are not 0.
 */
static void
plan_build(struct sl__rd_plan *pl, const struct sl_reduce_params *p, const struct sl_view *in,
           const struct sl_view *out, bool inner)
{
    const ptrdiff_t ies = (ptrdiff_t)sl_dtype_size(in->dtype);
    const ptrdiff_t oes = (ptrdiff_t)sl_dtype_size(out->dtype);
    struct rd_dim dim[SL_MAX_RANK];
    uint32_t n = 0;
    memset(pl, 0, sizeof *pl);
    pl->count = 1;
    for (uint32_t d = 0; d < p->rank; d++)
        if (p->reduced[d])
            pl->count *= in->shape[d]; /* <= the input's element count */
    for (uint32_t d = 0; d < p->rank; d++) {
        if (in->shape[d] == 1 || (p->reduced[d] && pl->count == 0))
            continue;
        dim[n++] = (struct rd_dim){.ext = in->shape[d],
                                   .in = (ptrdiff_t)in->stride[d] * ies,
                                   .out = p->reduced[d] ? 0 : (ptrdiff_t)out->stride[d] * oes,
                                   .red = p->reduced[d]};
    }
    n = dims_normalize(dim, n);
    pl->in = in->data;
    pl->out = out->data;
    pl->j_ext = pl->i_ext = 1;
    if (inner && n > 0 && dim[n - 1].red) {
        pl->i_ext = dim[n - 1].ext;
        pl->i_in = dim[n - 1].in;
        n--;
    }
    bool have_j = false;
    for (uint32_t a = n; a-- > 0;) {
        if (dim[a].red) {
            pl->red_ext[pl->n_red] = dim[a].ext;
            pl->red_in[pl->n_red++] = dim[a].in;
        } else if (!have_j) {
            have_j = true;
            pl->j_ext = dim[a].ext;
            pl->j_in = dim[a].in;
            pl->j_out = dim[a].out;
        } else {
            pl->outer_ext[pl->n_outer] = dim[a].ext;
            pl->outer_in[pl->n_outer] = dim[a].in;
            pl->outer_out[pl->n_outer++] = dim[a].out;
        }
    }
    /* Collected innermost first: put them back outermost first. */
    for (uint32_t a = 0; a < pl->n_red / 2; a++) {
        const uint32_t b = pl->n_red - 1 - a;
        const uint64_t e = pl->red_ext[a];
        const ptrdiff_t s = pl->red_in[a];
        pl->red_ext[a] = pl->red_ext[b];
        pl->red_in[a] = pl->red_in[b];
        pl->red_ext[b] = e;
        pl->red_in[b] = s;
    }
    for (uint32_t a = 0; a < pl->n_outer / 2; a++) {
        const uint32_t b = pl->n_outer - 1 - a;
        const uint64_t e = pl->outer_ext[a];
        const ptrdiff_t si = pl->outer_in[a], so = pl->outer_out[a];
        pl->outer_ext[a] = pl->outer_ext[b];
        pl->outer_in[a] = pl->outer_in[b];
        pl->outer_out[a] = pl->outer_out[b];
        pl->outer_ext[b] = e;
        pl->outer_in[b] = si;
        pl->outer_out[b] = so;
    }
}

static struct sl__rd_ctx
ctx_of(const struct sl_reduce_params *p)
{
    return (struct sl__rd_ctx){.ddof = p->ddof, .sqrt = p->method == SL_REDUCE_STD};
}

/* The kernel of checked params (never NULL for them). */
static sl_status
kernel_of(const struct sl_reduce_params *p, const struct sl__rd_kernel **k, struct sl_error *err)
{
    *k = sl__rd_kernel_for(p->method, p->in_dtype);
    if (SL_NEVER(*k == NULL))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "reduce %s: no kernel for %s",
                            method_names[p->method], sl_dtype_name(p->in_dtype));
    return SL_OK;
}

/* min, max, nanmin, nanmax refuse a reduced extent of 0, as numpy does. */
static sl_status
check_not_empty(const struct sl_reduce_params *p, const struct sl__rd_kernel *k,
                const struct sl_view *in, struct sl_error *err)
{
    if (k->unseen == NULL)
        return SL_OK;
    for (uint32_t d = 0; d < p->rank; d++)
        if (p->reduced[d] && in->shape[d] == 0)
            return sl_error_set(err, SL_EINVAL, NULL,
                                "reduce %s of an empty extent: dimension %" PRIu32
                                " has extent 0 (numpy raises: it has no identity)",
                                method_names[p->method], d);
    return SL_OK;
}

/* ---- the calls ---------------------------------------------------------------- */

/* Checks shared by sl_reduce_block and sl_reduce_state_add. */
static sl_status
check_block(const struct sl_reduce_params *p, const struct sl_view *in,
            const struct sl__rd_kernel **k, struct sl_error *err)
{
    SL_TRY(sl_reduce_check(p, err));
    SL_TRY(check_view(p, "input", in, p->in_dtype, p->rank, err));
    return kernel_of(p, k, err);
}

sl_status
sl_reduce_block(const struct sl_reduce_params *p, const struct sl_view *in, struct sl_view *out,
                struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    const struct sl__rd_kernel *k;
    SL_TRY(check_block(p, in, &k, err));
    SL_TRY(check_view(p, "output", out, p->out_dtype, p->rank, err));
    SL_TRY(check_extents(p, "output", out, "input", in, false, err));
    SL_TRY(check_disjoint(p, in, out, err));
    if (kept_empty(p, in))
        return SL_OK;
    SL_TRY(check_not_empty(p, k, in, err));
    struct sl__rd_plan pl;
    plan_build(&pl, p, in, out, true);
    const struct sl__rd_ctx ctx = ctx_of(p);
    sl__rd_drive(&pl, k, SL__RD_DIRECT, p->out_dtype, &ctx);
    return SL_OK;
}

sl_status
sl_reduce_state_init(const struct sl_reduce_params *p, struct sl_view *state, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    SL_TRY(sl_reduce_check(p, err));
    const struct sl__rd_kernel *k;
    SL_TRY(kernel_of(p, &k, err));
    SL_TRY(check_state(p, "state", state, k->words, err));
    if (sl__view_is_empty(state))
        return SL_OK;
    unsigned char acc[SL__RD_ACC_MAX];
    uint64_t empty[SL__RD_ACC_MAX / sizeof(uint64_t)];
    k->init(acc, 1);
    k->save((unsigned char *)empty, 0, acc, 1, 0);
    for (uint32_t w = 0; w < k->words; w++) {
        struct sl_view word = *state;
        word.shape[p->rank] = 1;
        word.data = (uint64_t *)state->data + w;
        sl__view_fill_unchecked(&word, &empty[w]);
    }
    return SL_OK;
}

sl_status
sl_reduce_state_add(const struct sl_reduce_params *p, const struct sl_view *in,
                    struct sl_view *state, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    const struct sl__rd_kernel *k;
    SL_TRY(check_block(p, in, &k, err));
    SL_TRY(check_state(p, "state", state, k->words, err));
    SL_TRY(check_extents(p, "state", state, "input", in, false, err));
    SL_TRY(check_disjoint(p, in, state, err));
    if (kept_empty(p, in))
        return SL_OK;
    const struct sl_view head = state_head(p, state);
    struct sl__rd_plan pl;
    plan_build(&pl, p, in, &head, true);
    if (pl.count == 0)
        return SL_OK;
    sl__rd_drive(&pl, k, SL__RD_ADD, p->out_dtype, NULL);
    return SL_OK;
}

/* Checks shared by merge and finish; `*k` is the kernel. */
static sl_status
check_from(const struct sl_reduce_params *p, const struct sl_view *from,
           const struct sl__rd_kernel **k, struct sl_error *err)
{
    SL_TRY(sl_reduce_check(p, err));
    SL_TRY(kernel_of(p, k, err));
    return check_state(p, "partial states", from, (*k)->words, err);
}

sl_status
sl_reduce_state_merge(const struct sl_reduce_params *p, const struct sl_view *from,
                      struct sl_view *into, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    const struct sl__rd_kernel *k;
    SL_TRY(check_from(p, from, &k, err));
    SL_TRY(check_state(p, "merged state", into, k->words, err));
    SL_TRY(check_extents(p, "merged state", into, "partial states", from, false, err));
    SL_TRY(check_disjoint(p, from, into, err));
    if (kept_empty(p, from))
        return SL_OK;
    const struct sl_view fh = state_head(p, from), ih = state_head(p, into);
    struct sl__rd_plan pl;
    plan_build(&pl, p, &fh, &ih, false);
    sl__rd_drive(&pl, k, SL__RD_MERGE, p->out_dtype, NULL);
    return SL_OK;
}

sl_status
sl_reduce_state_finish(const struct sl_reduce_params *p, const struct sl_view *from,
                       struct sl_view *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    const struct sl__rd_kernel *k;
    SL_TRY(check_from(p, from, &k, err));
    SL_TRY(check_view(p, "output", out, p->out_dtype, p->rank, err));
    SL_TRY(check_extents(p, "output", out, "partial states", from, false, err));
    SL_TRY(check_disjoint(p, from, out, err));
    if (kept_empty(p, from))
        return SL_OK;
    const struct sl_view fh = state_head(p, from);
    struct sl__rd_plan pl;
    plan_build(&pl, p, &fh, out, false);
    const struct sl__rd_ctx ctx = ctx_of(p);
    if (k->unseen != NULL && !sl__rd_drive(&pl, k, SL__RD_CHECK, p->out_dtype, &ctx))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "reduce %s of an empty extent: an output element's partial states "
                            "saw no element (numpy raises: it has no identity)",
                            method_names[p->method]);
    sl__rd_drive(&pl, k, SL__RD_FINISH, p->out_dtype, &ctx);
    return SL_OK;
}
