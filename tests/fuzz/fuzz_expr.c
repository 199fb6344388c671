/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: expressions.  The input is two header bytes (the dtypes of
 * inputs a, b, c; the working type and the output dtype), then the
 * expression text (up to the first NUL).  A refusal is SL_EPARSE with a
 * column inside the text (or just past it) and a message starting
 * "column N: ".  An accepted program is evaluated on a 2x3 block (a
 * contiguous, b broadcast down the rows with stride 0, c reversed through
 * negative strides; values with NaN, +-inf, -0.0, zeros and large
 * integers; unused inputs without data); its canonical text must compile
 * to a program with the same text computing the same bytes (NaN as any
 * NaN); and the program composed with itself through a's dtype must
 * compile and evaluate, or be refused with SL_EINVAL and a message.
 */
#include <math.h>

#include <sluice/expr.h>
#include <sluice/ops.h>
#include <sluice/view.h>

#include "fuzz.h"

#define ROWS 2
#define COLS 3

static const sl_dtype in_dtypes[8] = {SL_DTYPE_BOOL, SL_DTYPE_U8,  SL_DTYPE_U16, SL_DTYPE_I32,
                                      SL_DTYPE_I64,  SL_DTYPE_F32, SL_DTYPE_F64, SL_DTYPE_U64};
static const sl_dtype out_dtypes[11] = {SL_DTYPE_BOOL, SL_DTYPE_I8,  SL_DTYPE_I16, SL_DTYPE_I32,
                                        SL_DTYPE_I64,  SL_DTYPE_U8,  SL_DTYPE_U16, SL_DTYPE_U32,
                                        SL_DTYPE_U64,  SL_DTYPE_F32, SL_DTYPE_F64};
static const char *const names[3] = {"a", "b", "c"};

/* Element k of input i's buffer (6 elements), as double. */
static double
sample(unsigned i, unsigned k)
{
    static const double v[6][3] = {{1.5, NAN, -0.0},        {0, 7, 1e300},   {-3, INFINITY, 2.5},
                                   {255, -INFINITY, 65536}, {1e20, 0.5, -1}, {-2.5, 3, 4e9}};
    return v[k][i];
}

/* Storage for inputs of any dtype; views for the composed program too. */
struct block {
    union {
        uint64_t u64[ROWS * COLS];
        double f64[ROWS * COLS];
    } mem[8];
    struct sl_view in[8];
};

/* Fill input i of dtype dt by the cast rules (through a one-element cast). */
static void
block_input(struct block *b, unsigned i, sl_dtype dt, unsigned layout)
{
    const uint64_t shape[2] = {ROWS, COLS}, flat[1] = {ROWS * COLS};
    double src[ROWS * COLS];
    for (unsigned k = 0; k < ROWS * COLS; k++)
        src[k] = sample(i % 3, k);
    struct sl_view vs, vd;
    FUZZ_CHECK(sl_view_init(&vs, SL_DTYPE_F64, 1, flat, src, NULL) == SL_OK, "view");
    FUZZ_CHECK(sl_view_init(&vd, dt, 1, flat, b->mem[i].u64, NULL) == SL_OK, "view");
    FUZZ_CHECK(sl_cast(&vs, &vd, NULL) == SL_OK, "cast");
    struct sl_view *v = &b->in[i];
    FUZZ_CHECK(sl_view_init(v, dt, 2, shape, b->mem[i].u64, NULL) == SL_OK, "view");
    if (layout == 1) { /* one row broadcast down */
        v->stride[0] = 0;
    } else if (layout == 2) { /* both dimensions reversed */
        v->data = (unsigned char *)v->data + (ROWS * COLS - 1) * sl_dtype_size(dt);
        v->stride[0] = -COLS;
        v->stride[1] = -1;
    }
}

/* Evaluate e into out (bytes of dtype out_dt); inputs it does not use get no data. */
static sl_status
run(const sl_expr *e, struct block *b, sl_dtype out_dt, void *out, struct sl_error *err)
{
    const uint64_t shape[2] = {ROWS, COLS};
    struct sl_view in[8], o;
    for (size_t i = 0; i < sl_expr_n_inputs(e); i++) {
        in[i] = b->in[i];
        if (!sl_expr_uses_input(e, i))
            in[i].data = NULL;
    }
    FUZZ_CHECK(sl_view_init(&o, out_dt, 2, shape, out, NULL) == SL_OK, "view");
    return sl_expr_eval(e, in, &o, err);
}

/* Outputs equal element for element, any NaN equal to any NaN. */
static bool
same_output(sl_dtype dt, const void *x, const void *y)
{
    for (unsigned k = 0; k < ROWS * COLS; k++) {
        if (dt == SL_DTYPE_F64) {
            const double p = ((const double *)x)[k], q = ((const double *)y)[k];
            if (!(isnan(p) && isnan(q)) && memcmp(&p, &q, sizeof p) != 0)
                return false;
        } else if (dt == SL_DTYPE_F32) {
            const float p = ((const float *)x)[k], q = ((const float *)y)[k];
            if (!(isnan(p) && isnan(q)) && memcmp(&p, &q, sizeof p) != 0)
                return false;
        }
    }
    return sl_dtype_is_float(dt) || memcmp(x, y, ROWS * COLS * sl_dtype_size(dt)) == 0;
}

/* The canonical text compiles to a program with the same text and results. */
static void
check_round_trip(const sl_expr *e, const sl_dtype *dts, struct block *b, sl_dtype out_dt,
                 const void *want)
{
    char text[SL_EXPR_TEXT_MAX + 1], again[SL_EXPR_TEXT_MAX + 1];
    const size_t n = sl_expr_format(e, text, sizeof text);
    FUZZ_CHECK(n == sl_expr_format(e, NULL, 0), "two lengths of one text");
    if (n > SL_EXPR_TEXT_MAX)
        return; /* the added parentheses took it past the limit */
    FUZZ_CHECK(strlen(text) == n, "text of %zu bytes reported as %zu", strlen(text), n);
    struct sl_error err = SL_ERROR_INIT;
    sl_expr *f = NULL;
    sl_status st = sl_expr_compile(text, 3, names, dts, sl_expr_compute_dtype(e), NULL, &f, &err);
    FUZZ_CHECK(st == SL_OK || (st == SL_EPARSE && strstr(err.text, "registers") != NULL) ||
                   (st == SL_EPARSE && strstr(err.text, "nests deeper") != NULL),
               "canonical \"%s\" does not compile: %s", text, err.text);
    if (st != SL_OK)
        return;
    FUZZ_CHECK(sl_expr_format(f, again, sizeof again) == n && strcmp(text, again) == 0,
               "\"%s\" formats as \"%s\"", text, again);
    uint64_t out[ROWS * COLS];
    st = run(f, b, out_dt, out, &err);
    FUZZ_CHECK(st == SL_OK, "canonical program: %s", err.text);
    FUZZ_CHECK(same_output(out_dt, want, out), "\"%s\" computes other bytes", text);
    sl_expr_free(f);
}

/* e composed with itself through a's dtype. */
static void
check_compose(const sl_expr *e, struct block *b, sl_dtype out_dt)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_expr *c = NULL;
    const sl_status st = sl_expr_compose(e, 0, e, b->in[0].dtype, NULL, &c, &err);
    fuzz_check_error(st, &err, "sl_expr_compose");
    FUZZ_CHECK(st == SL_OK || st == SL_EINVAL, "compose: %s", sl_status_name(st));
    if (st != SL_OK)
        return;
    FUZZ_CHECK(sl_expr_n_inputs(c) == 5, "composed inputs: %zu", sl_expr_n_inputs(c));
    b->in[3] = b->in[1];
    b->in[4] = b->in[2];
    uint64_t out[ROWS * COLS];
    err = SL_ERROR_INIT;
    FUZZ_CHECK(run(c, b, out_dt, out, &err) == SL_OK, "composed program: %s", err.text);
    sl_expr_free(c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    const unsigned h0 = fuzz_u8(&in), h1 = fuzz_u8(&in);
    const sl_dtype dts[3] = {in_dtypes[h0 & 7], in_dtypes[(h0 >> 3) & 7],
                             in_dtypes[((h0 >> 6) | (h1 << 2)) & 7]};
    const sl_dtype compute = (h1 & 8) ? SL_DTYPE_F32 : SL_DTYPE_F64;
    const sl_dtype out_dt = out_dtypes[(h1 >> 4) % 11];
    char *text = fuzz_strndup(in.p, in.n);
    struct sl_error err = SL_ERROR_INIT;
    sl_expr *e = NULL;
    const sl_status st = sl_expr_compile(text, 3, names, dts, compute, NULL, &e, &err);
    fuzz_check_error(st, &err, "sl_expr_compile");
    if (st != SL_OK) {
        FUZZ_CHECK(st == SL_EPARSE, "compile: %s", sl_status_name(st));
        FUZZ_CHECK(err.column >= 1 && (size_t)err.column <= strlen(text) + 1,
                   "column %d of %zu bytes", err.column, strlen(text));
        char prefix[32];
        snprintf(prefix, sizeof prefix, "column %d: ", err.column);
        FUZZ_CHECK(strncmp(err.text, prefix, strlen(prefix)) == 0, "message \"%s\"", err.text);
        FUZZ_CHECK(e == NULL, "a refused program was returned");
        free(text);
        return 0;
    }
    static struct block b;
    for (unsigned i = 0; i < 3; i++)
        block_input(&b, i, dts[i], i);
    uint64_t out[ROWS * COLS];
    err = SL_ERROR_INIT;
    FUZZ_CHECK(run(e, &b, out_dt, out, &err) == SL_OK, "eval: %s", err.text);
    check_round_trip(e, dts, &b, out_dt, out);
    check_compose(e, &b, out_dt);
    sl_expr_free(e);
    free(text);
    return 0;
}
