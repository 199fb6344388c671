/* SPDX-License-Identifier: MIT */
/*
 * A chunk store of one's own, read by the program's own code: katdal-like
 * archives keep each chunk of an array as a file or object named
 * "<array>/<i>_<j>" (zero-padded offsets) with the metadata elsewhere.
 * The program implements `get` (struct sl_store_impl) for that layout and
 * opens it with sl_store_open_custom; sluice then reads it with its window
 * of reads in flight (on threads of the store's own), retries of transient
 * failures, fetching ahead and per-chunk errors, here copying it into a
 * local Zarr array through a get -> put graph.  A store whose client is
 * asynchronous implements `get_async` and ends each read with
 * sl_store_read_done instead.
 *
 *   chunkstore_custom ARCHIVE ARRAY META OUT
 *
 * ARCHIVE/ARRAY/<i>_<j> holds chunk (i, j) of a 2-D array whose Zarr v3
 * metadata (zarr.json, unsharded, chunk keys "c/i/j") is the file META.
 * OUT receives the copy.  Exit status 0 when every chunk is copied, 1 when
 * some failed (each named), 2 for bad arguments.
 */
/* pread and O_CLOEXEC are POSIX.1-2008, beyond C11. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sluice.h>

/* The layout: where each key lives. */
struct archive {
    const char *root;  /* ARCHIVE */
    const char *array; /* the array's name in it */
    const char *meta;  /* the metadata file */
};

/* "zarr.json" -> META; "c/I/J" -> ARCHIVE/ARRAY/IIIII_JJJJJ; false: no such key. */
static bool
key_to_path(const struct archive *a, const char *key, char *path, size_t size)
{
    if (strcmp(key, "zarr.json") == 0)
        return (size_t)snprintf(path, size, "%s", a->meta) < size;
    uint64_t i, j;
    char end;
    if (sscanf(key, "c/%" SCNu64 "/%" SCNu64 "%c", &i, &j, &end) != 2)
        return false;
    return (size_t)snprintf(path, size, "%s/%s/%05" PRIu64 "_%05" PRIu64, a->root, a->array, i, j) <
           size;
}

/* Read `range` of the file behind `key`: what sluice calls, from several
 * threads at once.  A missing file is an absent chunk (the fill value);
 * other failures are SL_EIO, which sluice retries before failing the chunk. */
static sl_status
archive_get(void *ctx, const char *key, const struct sl_byte_range *range, struct sl_buf *out,
            uint64_t *object_bytes, struct sl_error *err)
{
    char path[4096];
    if (!key_to_path(ctx, key, path, sizeof(path)))
        return SL_ENOTFOUND;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? SL_ENOTFOUND
                               : sl_error_set(err, SL_EIO, NULL, "%s: %s", path, strerror(errno));
    struct stat st;
    sl_status s = fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
                      ? SL_OK
                      : sl_error_set(err, SL_EIO, NULL, "%s: not a readable file", path);
    uint64_t size = s == SL_OK ? (uint64_t)st.st_size : 0, off = 0, n = size;
    if (s == SL_OK && range->kind == SL_RANGE_SUFFIX) {
        n = range->length < size ? range->length : size;
        off = size - n;
    } else if (s == SL_OK && range->kind == SL_RANGE_FROM) {
        if (range->offset > size)
            s = sl_error_set(err, SL_EBOUNDS, NULL, "%s: offset past the end", path);
        off = range->offset;
        n = range->length == SL_RANGE_TO_END || off + range->length > size ? size - off
                                                                           : range->length;
    }
    if (s == SL_OK)
        s = sl_buf_reserve(out, (size_t)n, err);
    if (s == SL_OK) {
        ssize_t got = pread(fd, out->data, (size_t)n, (off_t)off);
        if (got != (ssize_t)n)
            s = sl_error_set(err, SL_EIO, NULL, "%s: short read", path);
        out->size = s == SL_OK ? (size_t)n : 0;
    }
    close(fd);
    *object_bytes = size;
    return s;
}

int
main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s ARCHIVE ARRAY META OUT\n", argv[0]);
        return 2;
    }
    struct archive ar = {.root = argv[1], .array = argv[2], .meta = argv[3]};
    struct sl_store_impl impl = {.kind = "katdal", .get = archive_get};
    struct sl_custom_store_opts so = SL_CUSTOM_STORE_OPTS_DEFAULT;
    so.io_concurrency = 16;
    so.backoff_first_s = 0.01;
    so.max_attempts = 3;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *in = sl_store_open_custom(&impl, &ar, &so, &err);
    sl_array *src = in != NULL ? sl_array_open(in, "", NULL, &err) : NULL;
    if (src == NULL) {
        fprintf(stderr, "cannot open the archive's array: %s\n", err.text);
        sl_store_unref(in);
        return 2;
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
    int rc = 2;
    if (pool != NULL && sl_graph_add_get(g, "archive", src, &get, &err) == SL_OK &&
        sl_graph_add_put(g, "copy", get, dst, NULL, &err) == SL_OK &&
        sl_graph_seal(g, &err) == SL_OK && (plan = sl_plan_create(g, NULL, &err)) != NULL) {
        sl_status st = sl_plan_run(plan, pool, &err);
        struct sl_run_summary s;
        sl_plan_summary(plan, &s);
        printf("%" PRIu64 " chunks: %" PRIu64 " ok, %" PRIu64 " failed; %" PRIu64 " reads, %" PRIu64
               " retries, at most %u at once\n",
               s.n_chunks, s.n_ok, s.n_failed, s.remote_requests, s.remote_retries,
               s.remote_max_in_flight);
        size_t n_errors = 0;
        const struct sl_chunk_error *e = sl_plan_errors(plan, &n_errors);
        for (size_t i = 0; i < n_errors; i++)
            printf("failed: %s: %s\n", sl_status_name(e[i].code), e[i].text);
        rc = st == SL_OK ? 0 : 1;
    }
    if (rc == 2)
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
