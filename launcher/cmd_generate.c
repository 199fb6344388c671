/* SPDX-License-Identifier: MIT */
/*
 * `sluice generate DST --shape S --chunks C`: write a sample array of
 * smooth, image-like data (sums of sines with a little deterministic
 * noise, like a microscope volume) chunk by chunk through a getter -> put
 * graph, so demos and benchmarks need nothing but sluice.  Dimensions are
 * read as (..., z, y, x); the ones before z shift the pattern's phase, as
 * time points and channels of a TCZYX image would.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

#include "array_opts.h"
#include "commands.h"
#include "dest.h"
#include "dist.h"
#include "runner.h"

static int run_generate(int argc, char **argv);

const struct cmd cmd_generate = {
    .name = "generate",
    .summary = "write a sample array of smooth image-like data",
    .usage = "usage: sluice generate DST --shape S --chunks C [options]\n"
             "\n"
             "Write a new Zarr array in directory DST holding smooth image-like data\n"
             "(sums of sines plus a little deterministic noise; the same for the same\n"
             "shape and --seed), chunk by chunk.  Dimensions are read as (..., z, y, x).\n"
             "\n"
             "Options:\n"
             "  --shape S            array shape, comma separated, e.g. 4,2,32,1024,1024\n"
             "  --dtype T            uint16 (default), uint8, int16, int32, float32, float64\n"
             "  --seed N             noise seed (default 1)\n" ARRAY_OPTS_HELP,
    .options = RUN_OPTS_HELP "  --help               print this help\n",
    .run = run_generate,
};

/* What the getter needs. */
struct generate_ctx {
    uint32_t rank;
    uint64_t seed;
};

/* A cheap, well-mixed hash of (seed, index) into [-1, 1). */
static double
noise(uint64_t seed, uint64_t i)
{
    uint64_t h = (i + seed * 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return (double)(h >> 11) / (double)(1ull << 52) - 1.0;
}

/* The value at element `idx` (rank entries) and its linear index `lin`. */
static double
sample_value(const struct generate_ctx *g, const uint64_t *idx, uint64_t lin)
{
    uint32_t r = g->rank;
    double x = r >= 1 ? (double)idx[r - 1] : 0, y = r >= 2 ? (double)idx[r - 2] : 0;
    double z = r >= 3 ? (double)idx[r - 3] : 0, phase = 0;
    for (uint32_t d = 0; d + 3 < r; d++)
        phase += (1.7 + 0.8 * d) * (double)idx[d];
    return 3000.0 + 1200.0 * sin(x / 37.0 + phase) * cos(y / 53.0) +
           800.0 * sin(z / 21.0 + x / 90.0) + 500.0 * cos((x + y) / 17.0 + z / 29.0) +
           40.0 * noise(g->seed, lin);
}

/* Store `m` values as `dtype` elements at `dst`. */
#define SL_GENERATE_STORE_(NAME, sfx, T, ACC) \
    case SL_DTYPE_##NAME:                     \
        for (uint64_t k = 0; k < m; k++)      \
            ((T *)dst)[k] = (T)values[k];     \
        return true;
static bool
store_values(sl_dtype dtype, void *dst, const double *values, uint64_t m)
{
    switch (dtype) {
        SL_DTYPE_REAL_MAP(SL_GENERATE_STORE_)
    default:
        return false;
    }
}
#undef SL_GENERATE_STORE_

/* The getter: one stored chunk of the sample, 4096 values at a time. */
static sl_status
generate_chunk(void *ctx, const char *name, const struct sl_region *region, struct sl_block *out,
               struct sl_error *err)
{
    (void)name;
    const struct generate_ctx *g = ctx;
    uint64_t n = sl_view_count(&out->view), idx[SL_MAX_RANK], shape[SL_MAX_RANK];
    double values[4096];
    sl_region_shape(region, shape);
    char *dst = out->view.data;
    size_t es = sl_dtype_size(out->view.dtype);
    for (uint64_t base = 0; base < n; base += 4096) {
        uint64_t m = n - base < 4096 ? n - base : 4096;
        for (uint64_t k = 0; k < m; k++) {
            uint64_t rem = base + k, lin = 0;
            for (uint32_t d = g->rank; d-- > 0;) {
                idx[d] = region->start[d] + rem % shape[d];
                rem /= shape[d];
            }
            for (uint32_t d = 0; d < g->rank; d++)
                lin = lin * 1000003u + idx[d];
            double v = sample_value(g, idx, lin);
            if (!sl_dtype_is_float(out->view.dtype))
                v = v < 0 ? 0 : v > 65535 ? 65535 : floor(v + 0.5);
            if (out->view.dtype == SL_DTYPE_U8)
                v = floor(v / 256.0);
            values[k] = v;
        }
        if (!store_values(out->view.dtype, dst + base * es, values, m))
            return sl_error_set(err, SL_EUNSUPPORTED, NULL, "cannot generate %s",
                                sl_dtype_name(out->view.dtype));
    }
    return SL_OK;
}

/* Parse the command line; 0, or 2 after a usage error. */
static int
generate_parse(int argc, char **argv, const char **dst, struct sl_array_spec *spec,
               struct array_opts *ao, struct run_opts *ro, uint64_t *seed)
{
    uint32_t n_shape = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = array_opts_parse(&cmd_generate, ao, argc, argv, &i);
        if (r == 0)
            r = run_opts_parse(&cmd_generate, ro, argc, argv, &i);
        if (r == 2)
            return 2;
        if (r == 1)
            continue;
        bool takes =
            strcmp(a, "--shape") == 0 || strcmp(a, "--dtype") == 0 || strcmp(a, "--seed") == 0;
        if (takes && v == NULL)
            return cmd_usage_error(&cmd_generate, "%s needs a value", a);
        if (strcmp(a, "--shape") == 0) {
            if (!parse_u64_list(v, spec->shape, SL_MAX_RANK, &n_shape))
                return cmd_usage_error(&cmd_generate,
                                       "--shape: \"%s\" is not a list of positive "
                                       "integers",
                                       v);
        } else if (strcmp(a, "--dtype") == 0) {
            struct sl_error err = SL_ERROR_INIT;
            if (sl_dtype_from_name(v, &spec->dtype, &err) != SL_OK ||
                !sl_dtype_is_real(spec->dtype) || spec->dtype == SL_DTYPE_BOOL)
                return cmd_usage_error(&cmd_generate, "--dtype: \"%s\" is not a numeric type", v);
        } else if (strcmp(a, "--seed") == 0) {
            uint32_t n;
            if (!parse_u64_list(v, seed, 1, &n))
                return cmd_usage_error(&cmd_generate, "--seed: \"%s\" is not a positive integer",
                                       v);
        } else if (a[0] == '-' && a[1] != '\0') {
            return cmd_usage_error(&cmd_generate, "unknown option %s", a);
        } else if (*dst != NULL) {
            return cmd_usage_error(&cmd_generate, "too many paths (\"%s\")", a);
        } else {
            *dst = a;
            continue;
        }
        i++;
    }
    if (*dst == NULL || n_shape == 0 || ao->n_chunks == 0)
        return cmd_usage_error(&cmd_generate, "need DST, --shape and --chunks");
    if (ao->n_chunks != n_shape || (ao->n_shards != 0 && ao->n_shards != n_shape))
        return cmd_usage_error(&cmd_generate, "--chunks and --shards need %u value%s, like --shape",
                               n_shape, CMD_PLURAL(n_shape));
    spec->rank = n_shape;
    return 0;
}

/* What generate's graph is built from. */
struct gen_job {
    const char *dst_path;      /* DST as given */
    struct sl_array_spec spec; /* the output's layout */
    struct generate_ctx g;     /* the getter's state, alive through the run */
};

/* sample getter -> put into a new array at the root of `out`
 * (graph_build_fn). */
static int
gen_build(void *ctx, sl_store *out, bool real, sl_graph **g)
{
    struct gen_job *j = ctx;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = dest_create_array(out, "", &j->spec, real, &err);
    *g = a != NULL ? sl_graph_create(NULL, &err) : NULL;
    const struct sl_getter_desc gd = {.array_name = "sample",
                                      .dtype = j->spec.dtype,
                                      .rank = j->spec.rank,
                                      .shape = j->spec.shape,
                                      .chunk_shape = j->spec.chunk_shape,
                                      .fn = generate_chunk,
                                      .ctx = &j->g};
    uint32_t get;
    int rc = 0;
    if (*g == NULL || sl_graph_add_getter(*g, "sample", &gd, &get, &err) != SL_OK ||
        sl_graph_add_put(*g, "write", get, a, NULL, &err) != SL_OK)
        rc = cmd_fail("generate", j->dst_path, &err);
    sl_array_unref(a);
    return rc;
}

static int
run_generate(int argc, char **argv)
{
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.dtype = SL_DTYPE_U16;
    struct array_opts ao = {0};
    struct run_opts ro = RUN_OPTS_DEFAULT;
    uint64_t seed = 1;
    const char *dst = NULL;
    int rc = generate_parse(argc, argv, &dst, &spec, &ao, &ro, &seed);
    if (rc != 0)
        return rc;
    spec.zarr_format = ao.format != 0 ? ao.format : 3;
    if (ao.have_codec)
        spec.codec = ao.codec;
    memcpy(spec.chunk_shape, ao.chunks, spec.rank * sizeof(uint64_t));
    memcpy(spec.shard_shape, ao.shards, ao.n_shards * sizeof(uint64_t));
    struct gen_job j = {.dst_path = dst, .spec = spec, .g = {.rank = spec.rank, .seed = seed}};
    return dest_write(&cmd_generate, NULL, dst, &ao, gen_build, &j, &ro, "generate");
}
