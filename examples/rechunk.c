/* SPDX-License-Identifier: MIT */
/*
 * Rechunk a stored Zarr array into a new one with the C API: open the
 * source, create the destination from its metadata with other chunks, and
 * run get -> put (the put adds the rechunk), within a memory budget, with
 * a progress callback.
 *
 *   rechunk SRC_DIR DST_DIR CHUNK0,CHUNK1,...
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

static void
on_progress(void *ctx, const struct sl_progress *p)
{
    (void)ctx;
    fprintf(stderr, "%" PRIu64 "/%" PRIu64 " chunks, %.1f MB/s%s\n", p->chunks_done,
            p->chunks_total, p->bytes_per_s / 1e6, p->final ? " (done)" : "");
}

/* Parse "a,b,c" into `out` (up to SL_MAX_RANK values); return the count, 0 if malformed. */
static uint32_t
parse_chunks(const char *s, uint64_t *out)
{
    uint32_t n = 0;
    while (*s != '\0' && n < SL_MAX_RANK) {
        char *end;
        out[n] = strtoull(s, &end, 10);
        if (end == s || out[n] == 0 || (*end != ',' && *end != '\0'))
            return 0;
        n++;
        s = *end == ',' ? end + 1 : end;
    }
    return *s == '\0' ? n : 0;
}

int
main(int argc, char **argv)
{
    uint64_t chunks[SL_MAX_RANK];
    uint32_t n = argc == 4 ? parse_chunks(argv[3], chunks) : 0;
    if (n == 0) {
        fprintf(stderr, "usage: rechunk SRC_DIR DST_DIR CHUNK0,CHUNK1,...\n");
        return 2;
    }
    int rc = 1;
    struct sl_error err = SL_ERROR_INIT;
    struct sl_fs_store_opts ro = SL_FS_STORE_OPTS_DEFAULT, wo = SL_FS_STORE_OPTS_DEFAULT;
    ro.read_only = true;
    wo.create = true;
    sl_store *in = sl_store_open_fs(argv[1], &ro, &err);
    sl_store *out = in != NULL ? sl_store_open_fs(argv[2], &wo, &err) : NULL;
    sl_array *src = out != NULL ? sl_array_open(in, "", NULL, &err) : NULL;
    sl_array *dst = NULL;
    sl_graph *g = NULL;
    sl_plan *plan = NULL;
    sl_pool *pool = NULL;
    if (src == NULL)
        goto done;
    if (n != sl_array_rank(src)) {
        fprintf(stderr, "rechunk: %u chunk extents for a %u-d array\n", n, sl_array_rank(src));
        goto done;
    }
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.zarr_format = sl_array_zarr_format(src);
    spec.rank = n;
    spec.dtype = sl_array_dtype(src);
    spec.fill_value = sl_array_fill_value(src);
    memcpy(spec.shape, sl_array_shape(src), n * sizeof(uint64_t));
    memcpy(spec.chunk_shape, chunks, n * sizeof(uint64_t));
    dst = sl_array_create(out, "", &spec, NULL, &err);
    uint32_t get, put;
    g = dst != NULL ? sl_graph_create(NULL, &err) : NULL;
    if (g == NULL || sl_graph_add_get(g, "src", src, &get, &err) != SL_OK ||
        sl_graph_add_put(g, "dst", get, dst, &put, &err) != SL_OK ||
        sl_graph_seal(g, &err) != SL_OK)
        goto done;
    struct sl_plan_opts opts = SL_PLAN_OPTS_DEFAULT;
    opts.memory_budget = (size_t)256 << 20;
    opts.progress = on_progress;
    plan = sl_plan_create(g, &opts, &err);
    pool = plan != NULL ? sl_pool_create(NULL, &err) : NULL;
    if (pool == NULL || sl_plan_run(plan, pool, &err) != SL_OK)
        goto done;
    struct sl_run_summary s;
    sl_plan_summary(plan, &s);
    printf("%" PRIu64 " chunks written, %" PRIu64 " bytes read, %" PRIu64 " written, peak %zu "
           "bytes of chunk buffers\n",
           s.n_ok, s.bytes_read, s.bytes_written, s.peak_bytes);
    rc = 0;
done:
    if (rc != 0)
        fprintf(stderr, "rechunk: %s\n", err.text);
    sl_pool_destroy(pool);
    sl_plan_destroy(plan);
    sl_graph_unref(g);
    sl_array_unref(dst);
    sl_array_unref(src);
    sl_store_unref(out);
    sl_store_unref(in);
    return rc;
}
