/* SPDX-License-Identifier: MIT */
/*
 * An example plugin: the elementwise operation "invert", which graph files
 * name like a built-in op once the file lists this library in "plugins":
 *
 *     "plugins": ["./libinvert.so"],
 *     "nodes": {"inv": {"op": "invert", "input": "read"}, ...}
 *
 * Unsigned integers become max(dtype) - x, signed integers and floats -x
 * (signed integers wrap as in numpy: -(-128) is -128 for int8), bool
 * becomes not x.  The output has the input's dtype; float16 and complex
 * inputs are refused when the graph is built.
 *
 * Build it against an installed sluice (the README, "Writing a plugin"):
 *
 *     cc -std=c11 -shared -fPIC -o libinvert.so invert.c $(pkg-config --cflags sluice)
 */
#include <stdint.h>

#include <sluice.h>

SL_PLUGIN_DEFINE_ABI_VERSION;

/* The inverse of one element of C type T, by the type's kind: floats
 * negate, signed integers negate modulo 2^bits, unsigned ones subtract
 * from their maximum ((T)-1).  bool is handled apart (its C type is
 * uint8_t, which would give 255 - x). */
#define INVERT_(T, x)             \
    _Generic((T)0, float          \
             : (T) - (x), double  \
             : (T) - (x), default \
             : ((T)-1 < (T)1 ? (T)(0 - (uintmax_t)(x)) : (T)((T)-1 - (x))))

/* One row of `n` elements, `in_step` and `out_step` elements apart. */
typedef void invert_row_fn(const void *in, int64_t in_step, void *out, int64_t out_step,
                           uint64_t n);

#define DEF_ROW_(NAME, sfx, T, ACC)                                                              \
    static void invert_row_##sfx(const void *in_, int64_t in_step, void *out_, int64_t out_step, \
                                 uint64_t n)                                                     \
    {                                                                                            \
        const T *in = in_;                                                                       \
        T *out = out_;                                                                           \
        for (uint64_t i = 0; i < n; i++)                                                         \
            out[(int64_t)i * out_step] = SL_DTYPE_##NAME == SL_DTYPE_BOOL                        \
                                             ? (T)!in[(int64_t)i * in_step]                      \
                                             : INVERT_(T, in[(int64_t)i * in_step]);             \
    }
SL_DTYPE_REAL_MAP(DEF_ROW_)
#undef DEF_ROW_

static invert_row_fn *const row_by_dtype[SL_DTYPE_COUNT_] = {
#define ROW_ENTRY_(NAME, sfx, T, ACC) [SL_DTYPE_##NAME] = invert_row_##sfx,
    SL_DTYPE_REAL_MAP(ROW_ENTRY_)
#undef ROW_ENTRY_
};

static sl_status
invert_bind(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype, uint32_t rank,
            struct sl_error *err)
{
    (void)args, (void)rank;
    if (row_by_dtype[in_dtype] == NULL)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "invert: input dtype %s is not supported (bool, integers, float32, "
                            "float64)",
                            sl_dtype_name(in_dtype));
    op->out_dtype = in_dtype;
    return SL_OK;
}

/* Walk every row of the last dimension of `in` (strided views, any rank);
 * sl_op_apply has checked that `out` has the same shape and dtype. */
static sl_status
invert_apply(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
             void *scratch, size_t scratch_bytes, struct sl_error *err)
{
    (void)op, (void)scratch, (void)scratch_bytes, (void)err;
    invert_row_fn *row = row_by_dtype[in->dtype];
    const size_t es = sl_dtype_size(in->dtype);
    const uint32_t r = in->rank;
    const uint64_t n = r > 0 ? in->shape[r - 1] : 1;
    const int64_t in_step = r > 0 ? in->stride[r - 1] : 0;
    const int64_t out_step = r > 0 ? out->stride[r - 1] : 0;
    uint64_t idx[SL_MAX_RANK] = {0};
    for (uint32_t d = 0; d < r; d++)
        if (in->shape[d] == 0)
            return SL_OK;
    for (;;) {
        int64_t in_off = 0, out_off = 0;
        for (uint32_t d = 0; d + 1 < r; d++) {
            in_off += (int64_t)idx[d] * in->stride[d];
            out_off += (int64_t)idx[d] * out->stride[d];
        }
        row((const char *)in->data + in_off * (int64_t)es, in_step,
            (char *)out->data + out_off * (int64_t)es, out_step, n);
        /* The next row: count up the outer dimensions, last fastest. */
        uint32_t d = r > 1 ? r - 1 : 0;
        while (d > 0 && ++idx[d - 1] == in->shape[d - 1])
            idx[--d] = 0;
        if (d == 0)
            return SL_OK;
    }
}

static const struct sl_op_desc invert_op = {
    .name = "invert",
    .kind = SL_OP_KIND_MAP,
    .summary =
        "max(dtype) - x for unsigned integers, -x for signed ones and floats, not x for bool",
    .n_params = 0,
    .params = NULL,
    .bind = invert_bind,
    .apply = invert_apply,
};

SL_PLUGIN_EXPORT sl_status
sl_plugin_register(struct sl_plugin_host *host)
{
    return host->add_op(host, &invert_op);
}
