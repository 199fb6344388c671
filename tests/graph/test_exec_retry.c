/* SPDX-License-Identifier: MIT */
/*
 * In-run retries (sl_plan_opts.retries): get "src" → put "copy", both on a
 * filesystem store whose I/O table fails chosen calls a chosen number of
 * times in a row (a transient fault), one worker so that the failing calls
 * are mostly those of one chunk (the driver may run a task too, so checks
 * do not depend on which chunk a fault hits).
 *
 * - a chunk read that fails twice with EIO succeeds with 3 retries: the run
 *   is ok, the output equals the source, and the summary and the report
 *   (summary and put) count 2 retries;
 * - a fault that outlasts the retries (0, 1 or 2) fails each chunk with
 *   SL_EIO after exactly that many retries of it;
 * - a corrupt chunk (a flipped byte under a checksum) is not retried: it
 *   fails SL_ECORRUPT with no retry counted;
 * - a unit write whose file writes fail twice with EIO is written by its
 *   third try: the output equals the source, 2 retries counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "fault_io.h"
#include "plain_test.h"
#include "testutil.h"

TestSuite(graph_exec_retry, .timeout = 60.0);

#define SIDE 16 /* [16, 16] uint16 in [8, 8] chunks: 4 chunks */

struct fixture {
    char root[512];
    struct sl_fault_io fio;
    sl_pool *pool;
    sl_store *plain; /* the directory through the default I/O table */
    sl_store *fault; /* ... through fio */
    sl_array *src;   /* on `fault` */
    sl_array *copy;  /* on `fault` */
    uint16_t img[SIDE * SIDE];
};

static sl_array *
create_array(sl_store *s, const char *path)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = SIDE;
        sp.chunk_shape[d] = 8;
    }
    sp.checksum = true;
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, path, &sp, NULL, &err);
    cr_assert_not_null(a, "%s: %s", path, err.text);
    return a;
}

static void
fixture_init(struct fixture *f, const char *tag)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->root, sizeof(f->root), "%s", sl_test_tmpdir(tag));
    sl_fault_io_init(&f->fio);
    struct sl_pool_opts po = SL_POOL_OPTS_DEFAULT;
    po.n_workers = 1;
    po.pin = SL_PIN_NONE;
    f->pool = sl_pool_create(&po, NULL);
    cr_assert_not_null(f->pool);
    struct sl_error err = SL_ERROR_INIT;
    f->plain = sl_store_open_fs(f->root, NULL, &err);
    cr_assert_not_null(f->plain, "%s", err.text);
    struct sl_fs_store_opts fo = SL_FS_STORE_OPTS_DEFAULT;
    fo.io = &f->fio.table;
    f->fault = sl_store_open_fs(f->root, &fo, &err);
    cr_assert_not_null(f->fault, "%s", err.text);
    sl_array *src = create_array(f->plain, "src");
    sl_array *copy = create_array(f->plain, "copy");
    for (int k = 0; k < SIDE * SIDE; k++)
        f->img[k] = (uint16_t)(1 + k * 37);
    struct sl_region all = sl_region_whole(2, (const uint64_t[]){SIDE, SIDE});
    cr_assert_eq(sl_array_write_region(src, &all, f->img, sizeof(f->img), NULL, NULL, &err), SL_OK,
                 "%s", err.text);
    sl_array_unref(src);
    sl_array_unref(copy);
    f->src = sl_array_open(f->fault, "src", NULL, &err);
    cr_assert_not_null(f->src, "%s", err.text);
    f->copy = sl_array_open(f->fault, "copy", NULL, &err);
    cr_assert_not_null(f->copy, "%s", err.text);
}

static void
fixture_fini(struct fixture *f)
{
    sl_array_unref(f->src);
    sl_array_unref(f->copy);
    sl_store_unref(f->fault);
    sl_store_unref(f->plain);
    sl_pool_destroy(f->pool);
    sl_fault_io_fini(&f->fio);
    sl_test_rmtree(f->root);
}

/* The plan of get "src" → put "copy" with `retries`; `*put`: the put node. */
static sl_plan *
make_plan(struct fixture *f, uint32_t retries, uint32_t *put)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    cr_assert_not_null(g);
    uint32_t get;
    cr_assert_eq(sl_graph_add_get(g, "src", f->src, &get, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_put(g, "copy", get, f->copy, put, NULL), SL_OK);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    struct sl_plan_opts po = SL_PLAN_OPTS_DEFAULT;
    po.retries = retries;
    po.retry_backoff_s = 0.001;
    struct sl_error err = SL_ERROR_INIT;
    sl_plan *plan = sl_plan_create(g, &po, &err);
    cr_assert_not_null(plan, "%s", err.text);
    sl_graph_unref(g);
    return plan;
}

/* The report's summary "retries" and the put's. */
static void
report_retries(const sl_plan *plan, uint64_t *summary, uint64_t *put)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    cr_assert_not_null(out);
    cr_assert_eq(sl_plan_write_report(plan, out, NULL), SL_OK);
    fclose(out);
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    cr_assert_not_null(doc, "the report parses: %s", jerr.text);
    json_t *s = json_object_get(json_object_get(doc, "summary"), "retries");
    json_t *p = json_object_get(json_array_get(json_object_get(doc, "puts"), 0), "retries");
    cr_assert(json_is_integer(s) && json_is_integer(p), "both counts are in the report");
    *summary = (uint64_t)json_integer_value(s);
    *put = (uint64_t)json_integer_value(p);
    json_decref(doc);
    free(text);
}

/* The run's outcome: code, retries counted (summary == report), ok chunks. */
static sl_status
run_counted(struct fixture *f, sl_plan *plan, uint32_t put, uint64_t *retries, uint64_t *n_ok)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl_plan_run(plan, f->pool, &err);
    sl_fault_io_reset(&f->fio);
    struct sl_run_summary s;
    sl_plan_summary(plan, &s);
    uint64_t rs, rp;
    report_retries(plan, &rs, &rp);
    cr_assert_eq(rs, s.n_retries, "the report's summary counts %" PRIu64 ", the summary %" PRIu64,
                 rs, s.n_retries);
    cr_assert_eq(rp, s.n_retries, "the put counts %" PRIu64 " of %" PRIu64, rp, s.n_retries);
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(plan, put, &ps, NULL), SL_OK);
    *retries = s.n_retries;
    *n_ok = ps.n_ok;
    return st;
}

static void
assert_copy_equals_source(struct fixture *f)
{
    uint16_t back[SIDE * SIDE];
    struct sl_region all = sl_region_whole(2, (const uint64_t[]){SIDE, SIDE});
    struct sl_error err = SL_ERROR_INIT;
    sl_array *copy = sl_array_open(f->plain, "copy", NULL, &err);
    cr_assert_not_null(copy, "%s", err.text);
    cr_assert_eq(sl_array_read_region(copy, &all, back, sizeof(back), NULL, NULL, &err), SL_OK,
                 "%s", err.text);
    cr_assert_arr_eq(back, f->img, sizeof(back), "the copy equals the source");
    sl_array_unref(copy);
}

Test(graph_exec_retry, transient_read_retried)
{
    struct fixture f;
    fixture_init(&f, "retry-read");
    uint32_t put;
    sl_plan *plan = make_plan(&f, 3, &put);
    sl_fault_io_fail_times(&f.fio, SL_FAULT_PREAD, 1, 2, EIO);
    uint64_t retries, n_ok;
    sl_status st = run_counted(&f, plan, put, &retries, &n_ok);
    cr_assert_eq(st, SL_OK, "%s", sl_status_name(st));
    cr_assert_eq(retries, 2, "2 retries, counted %" PRIu64, retries);
    cr_assert_eq(n_ok, 4);
    assert_copy_equals_source(&f);
    sl_plan_destroy(plan);
    fixture_fini(&f);
}

Test(graph_exec_retry, retries_exhausted)
{
    for (uint32_t allowed = 0; allowed < 3; allowed++) {
        struct fixture f;
        fixture_init(&f, "retry-exhausted");
        uint32_t put;
        sl_plan *plan = make_plan(&f, allowed, &put);
        /* Every read fails: each chunk's every try (the driver may run a
         * task beside the worker, so a fault of a few calls could be
         * shared between two chunks). */
        sl_fault_io_fail(&f.fio, SL_FAULT_PREAD, 1, EIO);
        f.fio.fail_sticky = true;
        uint64_t retries, n_ok;
        sl_status st = run_counted(&f, plan, put, &retries, &n_ok);
        cr_assert_eq(st, SL_EIO, "%u retries: %s", allowed, sl_status_name(st));
        cr_assert_eq(retries, 4 * allowed, "%u retries allowed per chunk, %" PRIu64 " counted",
                     allowed, retries);
        cr_assert_eq(n_ok, 0);
        size_t n_err = 0;
        const struct sl_chunk_error *e = sl_plan_errors(plan, &n_err);
        cr_assert_eq(n_err, 4);
        for (size_t k = 0; k < n_err; k++)
            cr_assert_eq(e[k].code, SL_EIO, "a chunk fails with its code: %s",
                         sl_status_name(e[k].code));
        sl_plan_destroy(plan);
        fixture_fini(&f);
    }
}

Test(graph_exec_retry, corrupt_not_retried)
{
    struct fixture f;
    fixture_init(&f, "retry-corrupt");
    char key[256], path[1024];
    cr_assert_lt(sl_array_chunk_key(f.src, (const uint64_t[]){1, 0}, key, sizeof(key)),
                 sizeof(key));
    snprintf(path, sizeof(path), "%s/%s", f.root, key);
    FILE *fp = fopen(path, "r+b");
    cr_assert_not_null(fp, "%s", path);
    cr_assert_eq(fseek(fp, 0, SEEK_END), 0);
    long size = ftell(fp);
    cr_assert_gt(size, 8);
    cr_assert_eq(fseek(fp, size / 2, SEEK_SET), 0);
    int c = fgetc(fp);
    cr_assert_eq(fseek(fp, size / 2, SEEK_SET), 0);
    fputc(c ^ 0x5a, fp);
    fclose(fp);
    uint32_t put;
    sl_plan *plan = make_plan(&f, 3, &put);
    uint64_t retries, n_ok;
    sl_status st = run_counted(&f, plan, put, &retries, &n_ok);
    cr_assert_eq(st, SL_ECORRUPT, "%s", sl_status_name(st));
    cr_assert_eq(retries, 0, "a corrupt chunk is not retried: %" PRIu64, retries);
    cr_assert_eq(n_ok, 3);
    sl_plan_destroy(plan);
    fixture_fini(&f);
}

Test(graph_exec_retry, transient_write_retried)
{
    struct fixture f;
    fixture_init(&f, "retry-write");
    uint32_t put;
    sl_plan *plan = make_plan(&f, 3, &put);
    sl_fault_io_fail_times(&f.fio, SL_FAULT_WRITE, 1, 2, EIO);
    uint64_t retries, n_ok;
    sl_status st = run_counted(&f, plan, put, &retries, &n_ok);
    cr_assert_eq(st, SL_OK, "%s", sl_status_name(st));
    cr_assert_eq(retries, 2, "2 retries, counted %" PRIu64, retries);
    cr_assert_eq(n_ok, 4);
    assert_copy_equals_source(&f);
    sl_plan_destroy(plan);
    fixture_fini(&f);
}

Test(graph_exec_retry, bad_options_refused)
{
    struct fixture f;
    fixture_init(&f, "retry-opts");
    sl_graph *g = sl_graph_create(NULL, NULL);
    uint32_t get, put;
    cr_assert_eq(sl_graph_add_get(g, "src", f.src, &get, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_put(g, "copy", get, f.copy, &put, NULL), SL_OK);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
    struct sl_plan_opts po = SL_PLAN_OPTS_DEFAULT;
    po.retries = SL_PLAN_MAX_RETRIES + 1;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_null(sl_plan_create(g, &po, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "101 retries; at most 100"), "%s", err.text);
    po.retries = 1;
    po.retry_backoff_s = -1;
    err = SL_ERROR_INIT;
    cr_assert_null(sl_plan_create(g, &po, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    sl_graph_unref(g);
    fixture_fini(&f);
}
