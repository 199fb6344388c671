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
#include <time.h>

#include <sluice.h>

/* One input as the command line gives it. */
struct input {
    const char *name;
    sl_dtype dtype;
    uint32_t rank;
    uint64_t shape[SL_MAX_RANK];
    unsigned flips;
    void *data;
};

static void
die(const char *what, const struct sl_error *err)
{
    fprintf(stderr, "expr_numpy: %s: %s\n", what, err != NULL ? err->text : "");
    exit(2);
}

static uint32_t
parse_shape(const char *s, uint64_t *shape)
{
    uint32_t rank = 0;
    if (strcmp(s, "-") == 0)
        return 0;
    while (rank < SL_MAX_RANK) {
        char *end;
        shape[rank++] = strtoull(s, &end, 10);
        if (end == s || (*end != 'x' && *end != '\0'))
            die("bad shape", NULL);
        if (*end == '\0')
            break;
        s = end + 1;
    }
    return rank;
}

static uint64_t
shape_count(uint32_t rank, const uint64_t *shape)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < rank; d++)
        n *= shape[d];
    return n;
}

static void *
read_file(const char *path, size_t want)
{
    void *p = malloc(want > 0 ? want : 1);
    FILE *f = fopen(path, "rb");
    if (p == NULL || f == NULL)
        die(path, NULL);
    if (fread(p, 1, want, f) != want || fgetc(f) != EOF)
        die("input file size differs from its shape", NULL);
    fclose(f);
    return p;
}

/* The view of `in` broadcast to the output's shape, as numpy broadcasts. */
static void
input_view(const struct input *in, uint32_t rank, const uint64_t *shape, struct sl_view *v)
{
    memset(v, 0, sizeof *v);
    v->dtype = in->dtype;
    v->rank = rank;
    int64_t own[SL_MAX_RANK];
    int64_t s = 1;
    for (uint32_t a = in->rank; a-- > 0;) {
        own[a] = s;
        s *= (int64_t)in->shape[a];
    }
    unsigned char *p = in->data;
    for (uint32_t a = 0; a < in->rank; a++) {
        if (in->flips & (1u << a) && in->shape[a] > 0) {
            p += (int64_t)(in->shape[a] - 1) * own[a] * (int64_t)sl_dtype_size(in->dtype);
            own[a] = -own[a];
        }
    }
    v->data = p;
    for (uint32_t d = 0; d < rank; d++) {
        v->shape[d] = shape[d];
        const int64_t a = (int64_t)d - (int64_t)(rank - in->rank);
        if (a < 0 || (in->shape[a] == 1 && shape[d] != 1))
            v->stride[d] = 0;
        else
            v->stride[d] = own[a];
    }
}

static double
now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int
main(int argc, char **argv)
{
    int repeat = 1, a = 1;
    if (argc > 2 && strcmp(argv[1], "--repeat") == 0) {
        repeat = atoi(argv[2]);
        a = 3;
    }
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
        die("dtype", &err);
    const uint32_t rank = parse_shape(argv[a + 3], shape);
    const size_t n_in = (size_t)(argc - a - 5) / 5;
    struct input in[SL_EXPR_MAX_INPUTS];
    const char *names[SL_EXPR_MAX_INPUTS];
    sl_dtype dtypes[SL_EXPR_MAX_INPUTS];
    struct sl_view views[SL_EXPR_MAX_INPUTS];
    for (size_t i = 0; i < n_in; i++) {
        char **f = argv + a + 5 + 5 * i;
        in[i].name = names[i] = f[0];
        if (sl_dtype_from_name(f[1], &in[i].dtype, &err) != SL_OK)
            die("dtype", &err);
        dtypes[i] = in[i].dtype;
        in[i].rank = parse_shape(f[2], in[i].shape);
        in[i].flips = (unsigned)strtoul(f[3], NULL, 0);
        in[i].data =
            read_file(f[4], shape_count(in[i].rank, in[i].shape) * sl_dtype_size(in[i].dtype));
        input_view(&in[i], rank, shape, &views[i]);
    }
    sl_expr *e;
    if (sl_expr_compile(text, n_in, names, dtypes, compute, NULL, &e, &err) != SL_OK) {
        printf("%s\n", err.text);
        return 3;
    }
    const size_t out_bytes = shape_count(rank, shape) * sl_dtype_size(out_dtype);
    void *out_data = calloc(out_bytes > 0 ? out_bytes : 1, 1);
    struct sl_view out;
    if (out_data == NULL || sl_view_init(&out, out_dtype, rank, shape, out_data, &err) != SL_OK)
        die("output view", &err);
    double best = 1e300;
    for (int r = 0; r < repeat; r++) {
        const double t0 = now_s();
        if (sl_expr_eval(e, views, &out, &err) != SL_OK)
            die("eval", &err);
        const double t = now_s() - t0;
        best = t < best ? t : best;
    }
    if (repeat > 1)
        fprintf(stderr, "%.6f\n", best);
    FILE *f = fopen(out_file, "wb");
    if (f == NULL || fwrite(out_data, 1, out_bytes, f) != out_bytes || fclose(f) != 0)
        die(out_file, NULL);
    char canon[SL_EXPR_TEXT_MAX * 2];
    sl_expr_format(e, canon, sizeof canon);
    printf("%s\n", canon);
    sl_expr_free(e);
    for (size_t i = 0; i < n_in; i++)
        free(in[i].data);
    free(out_data);
    return 0;
}
