/* SPDX-License-Identifier: MIT */
/*
 * A chunk store of one's own over HTTP: katdal's MeerKAT archive keeps each
 * chunk of an array as an object named "<array>/<i>_<j>" (zero-padded
 * offsets) on an object-store gateway, not under Zarr's keys.  A mapped
 * HTTP store (sl_store_open_http_mapped) turns each Zarr key into such a
 * URL, and sluice reads the array with its own window of requests in
 * flight, retries and per-chunk errors: here, a copy of it into a local
 * Zarr array through a get -> put graph.
 *
 *   chunkstore_http BASE_URL ARRAY META_URL OUT
 *
 * BASE_URL/ARRAY/<i>_<j> holds chunk (i, j) of a 2-D array whose Zarr v3
 * metadata (zarr.json, unsharded, chunk keys "c/i/j") is at META_URL.  OUT
 * receives the copy.  Exit status 0 when every chunk is copied.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

/* The layout: where each key lives. */
struct layout {
    const char *base;  /* BASE_URL without a trailing '/' */
    const char *array; /* the array's name in the archive */
    const char *meta;  /* the metadata's URL */
};

/* "zarr.json" -> META_URL; "c/I/J" -> BASE/ARRAY/IIIII_JJJJJ; nothing else. */
static bool
key_to_url(void *ctx, const char *key, char *url, size_t size)
{
    const struct layout *l = ctx;
    if (strcmp(key, "zarr.json") == 0)
        return (size_t)snprintf(url, size, "%s", l->meta) < size;
    uint64_t i, j;
    char end;
    if (sscanf(key, "c/%" SCNu64 "/%" SCNu64 "%c", &i, &j, &end) != 2)
        return false; /* not a chunk of this array: absent */
    return (size_t)snprintf(url, size, "%s/%s/%05" PRIu64 "_%05" PRIu64, l->base, l->array, i, j) <
           size;
}

int
main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s BASE_URL ARRAY META_URL OUT\n", argv[0]);
        return 2;
    }
    struct layout l = {.base = argv[1], .array = argv[2], .meta = argv[3]};
    struct sl_error err = SL_ERROR_INIT;
    struct sl_http_store_opts ho = SL_HTTP_STORE_OPTS_DEFAULT;
    ho.io_concurrency = 32;
    sl_store *in = sl_store_open_http_mapped(key_to_url, &l, &ho, &err);
    sl_array *src = in != NULL ? sl_array_open(in, "", NULL, &err) : NULL;
    if (src == NULL) {
        fprintf(stderr, "cannot open the archive's array: %s\n", err.text);
        sl_store_unref(in);
        return 1;
    }
    struct sl_array_spec spec = SL_ARRAY_SPEC_DEFAULT;
    spec.rank = sl_array_rank(src);
    spec.dtype = sl_array_dtype(src);
    for (uint32_t d = 0; d < spec.rank; d++) {
        spec.shape[d] = sl_array_shape(src)[d];
        spec.chunk_shape[d] = sl_array_chunk_shape(src)[d];
    }
    sl_store *out = sl_store_open_fs(argv[4], NULL, &err);
    sl_array *dst = out != NULL ? sl_array_create(out, "", &spec, NULL, &err) : NULL;
    sl_graph *g = dst != NULL ? sl_graph_create(NULL, &err) : NULL;
    sl_pool *pool = g != NULL ? sl_pool_create(NULL, &err) : NULL;
    uint32_t get;
    sl_plan *plan = NULL;
    int rc = 1;
    if (pool != NULL && sl_graph_add_get(g, "archive", src, &get, &err) == SL_OK &&
        sl_graph_add_put(g, "copy", get, dst, NULL, &err) == SL_OK &&
        sl_graph_seal(g, &err) == SL_OK && (plan = sl_plan_create(g, NULL, &err)) != NULL) {
        sl_status st = sl_plan_run(plan, pool, &err);
        struct sl_run_summary s;
        sl_plan_summary(plan, &s);
        printf("%" PRIu64 " chunks: %" PRIu64 " ok, %" PRIu64 " failed; %" PRIu64
               " requests, %" PRIu64 " retries, at most %u in flight\n",
               s.n_chunks, s.n_ok, s.n_failed, s.remote_requests, s.remote_retries,
               s.remote_max_in_flight);
        rc = st == SL_OK ? 0 : 1;
    }
    if (rc != 0)
        fprintf(stderr, "copy failed: %s\n", err.text);
    sl_plan_destroy(plan);
    sl_pool_destroy(pool);
    sl_graph_unref(g);
    sl_array_unref(dst);
    sl_array_unref(src);
    sl_store_unref(out);
    sl_store_unref(in);
    return rc;
}
