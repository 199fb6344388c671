/* SPDX-License-Identifier: MIT */
/*
 * The driver check_expr_numpy.py runs: compile one expression, evaluate it
 * on inputs read from raw files, write the output raw.  Inputs keep their
 * own (numpy-broadcastable) shapes: the driver broadcasts them as numpy
 * does, with stride-0 views, and reads axes stored reversed through
 * negative strides, so broadcasting and reversed views are what is tested.
 *
 *   expr_numpy [--repeat N] EXPR COMPUTE OUT_DTYPE OUT_SHAPE OUT_FILE
 *              [NAME DTYPE SHAPE FLIPS FILE]...
 *
 * Shapes are "3x4x5" ("-" for rank 0); FLIPS is a bitmask of the input's
 * own axes whose data the file holds reversed; files are little-endian,
 * C order.  --repeat N evaluates N times and prints the fastest time in
 * seconds on stderr.  Exits 0, 3 when the expression does not compile
 * (printing the message), 2 for any other failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "numpy_driver.h"

const char driver_name[] = "expr_numpy";

/* One input as the command line gives it. */
struct input {
    const char *name;
    sl_dtype dtype;
    uint32_t rank;
    uint64_t shape[SL_MAX_RANK];
    unsigned flips;
    void *data;
};

/* The view of `in` broadcast to the output's shape, as numpy broadcasts:
 * its own view (axes flipped), with stride 0 along the axes it lacks or
 * has extent 1 in. */
static void
input_view(const struct input *in, uint32_t rank, const uint64_t *shape, struct sl_view *v)
{
    struct sl_view own;
    driver_view_flipped(&own, in->dtype, in->rank, in->shape, in->flips, in->data);
    memset(v, 0, sizeof *v);
    v->dtype = in->dtype;
    v->rank = rank;
    v->data = own.data;
    for (uint32_t d = 0; d < rank; d++) {
        v->shape[d] = shape[d];
        const int64_t a = (int64_t)d - (int64_t)(rank - in->rank);
        if (a < 0 || (in->shape[a] == 1 && shape[d] != 1))
            v->stride[d] = 0;
        else
            v->stride[d] = own.stride[a];
    }
}

int
main(int argc, char **argv)
{
    int a;
    const int repeat = driver_repeat_opt(argc, argv, &a);
    if (argc - a < 5 || (argc - a - 5) % 5 != 0 || (argc - a - 5) / 5 > SL_EXPR_MAX_INPUTS) {
        fprintf(stderr, "usage: expr_numpy [--repeat N] EXPR COMPUTE OUT_DTYPE OUT_SHAPE "
                        "OUT_FILE [NAME DTYPE SHAPE FLIPS FILE]...\n");
        return 2;
    }
    struct sl_error err = SL_ERROR_INIT;
    const char *text = argv[a], *out_file = argv[a + 4];
    sl_dtype compute, out_dtype;
    uint64_t shape[SL_MAX_RANK];
    if (sl_dtype_from_name(argv[a + 1], &compute, &err) != SL_OK ||
        sl_dtype_from_name(argv[a + 2], &out_dtype, &err) != SL_OK)
        driver_die("dtype", &err);
    const uint32_t rank = driver_shape_parse(argv[a + 3], shape);
    const size_t n_in = (size_t)(argc - a - 5) / 5;
    struct input in[SL_EXPR_MAX_INPUTS];
    const char *names[SL_EXPR_MAX_INPUTS];
    sl_dtype dtypes[SL_EXPR_MAX_INPUTS];
    struct sl_view views[SL_EXPR_MAX_INPUTS];
    for (size_t i = 0; i < n_in; i++) {
        char **f = argv + a + 5 + 5 * i;
        in[i].name = names[i] = f[0];
        if (sl_dtype_from_name(f[1], &in[i].dtype, &err) != SL_OK)
            driver_die("dtype", &err);
        dtypes[i] = in[i].dtype;
        in[i].rank = driver_shape_parse(f[2], in[i].shape);
        in[i].flips = (unsigned)strtoul(f[3], NULL, 0);
        in[i].data = driver_file_read(f[4], driver_shape_count(in[i].rank, in[i].shape) *
                                                sl_dtype_size(in[i].dtype));
        input_view(&in[i], rank, shape, &views[i]);
    }
    sl_expr *e;
    if (sl_expr_compile(text, n_in, names, dtypes, compute, NULL, &e, &err) != SL_OK) {
        printf("%s\n", err.text);
        return 3;
    }
    const size_t out_bytes = driver_shape_count(rank, shape) * sl_dtype_size(out_dtype);
    void *out_data = driver_calloc(out_bytes);
    struct sl_view out;
    if (sl_view_init(&out, out_dtype, rank, shape, out_data, &err) != SL_OK)
        driver_die("output view", &err);
    double best = 1e300;
    for (int r = 0; r < repeat; r++) {
        const double t0 = driver_now_s();
        if (sl_expr_eval(e, views, &out, &err) != SL_OK)
            driver_die("eval", &err);
        const double t = driver_now_s() - t0;
        best = t < best ? t : best;
    }
    if (repeat > 1)
        fprintf(stderr, "%.6f\n", best);
    driver_file_write(out_file, out_data, out_bytes);
    char canon[SL_EXPR_TEXT_MAX * 2];
    sl_expr_format(e, canon, sizeof canon);
    printf("%s\n", canon);
    sl_expr_free(e);
    for (size_t i = 0; i < n_in; i++)
        free(in[i].data);
    free(out_data);
    return 0;
}
