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
#include "graph_fault_fixture.h"
#include "plain_test.h"
#include "testutil.h"

TestSuite(graph_exec_retry, .timeout = 60.0);

#define SIDE 16 /* [16, 16] uint16 in [8, 8] chunks: 4 chunks */

struct fixture {
    struct sl_test_fault_fs fs; /* one worker; the fault store not durable */
    sl_array *src;              /* on `fs.fault` */
    sl_array *copy;             /* on `fs.fault` */
    uint16_t img[SIDE * SIDE];
};

static void
fixture_init(struct fixture *f, const char *tag)
{
    memset(f, 0, sizeof(*f));
    sl_test_fault_fs_init(&f->fs, sl_test_tmpdir(tag), 1, false);
    static const uint64_t shape[2] = {SIDE, SIDE}, chunk[2] = {8, 8};
    sl_array *src = sl_test_array_u16(f->fs.plain, "src", shape, chunk, NULL);
    sl_array *copy = sl_test_array_u16(f->fs.plain, "copy", shape, chunk, NULL);
    for (int k = 0; k < SIDE * SIDE; k++)
        f->img[k] = (uint16_t)(1 + k * 37);
    sl_test_write_whole_u16(src, f->img);
    sl_array_unref(src);
    sl_array_unref(copy);
    struct sl_error err = SL_ERROR_INIT;
    f->src = sl_array_open(f->fs.fault, "src", NULL, &err);
    cr_assert_not_null(f->src, "%s", err.text);
    f->copy = sl_array_open(f->fs.fault, "copy", NULL, &err);
    cr_assert_not_null(f->copy, "%s", err.text);
}

static void
fixture_fini(struct fixture *f)
{
    sl_array_unref(f->src);
    sl_array_unref(f->copy);
    sl_test_fault_fs_fini(&f->fs);
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
    sl_status st = sl_plan_run(plan, f->fs.pool, &err);
    sl_fault_io_reset(&f->fs.fio);
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
    struct sl_error err = SL_ERROR_INIT;
    sl_array *copy = sl_array_open(f->fs.plain, "copy", NULL, &err);
    cr_assert_not_null(copy, "%s", err.text);
    uint16_t *back = sl_test_read_whole_u16(copy);
    cr_assert_arr_eq(back, f->img, sizeof(f->img), "the copy equals the source");
    free(back);
    sl_array_unref(copy);
}

/* The first call of `op` fails twice with EIO; with 3 retries the run is
 * ok, 2 retries counted, and the copy equals the source. */
static void
check_transient_retried(const char *tag, sl_fault_op op)
{
    struct fixture f;
    fixture_init(&f, tag);
    uint32_t put;
    sl_plan *plan = make_plan(&f, 3, &put);
    sl_fault_io_fail_times(&f.fs.fio, op, 1, 2, EIO);
    uint64_t retries, n_ok;
    sl_status st = run_counted(&f, plan, put, &retries, &n_ok);
    cr_assert_eq(st, SL_OK, "%s: %s", sl_fault_op_name(op), sl_status_name(st));
    cr_assert_eq(retries, 2, "%s: 2 retries, counted %" PRIu64, sl_fault_op_name(op), retries);
    cr_assert_eq(n_ok, 4);
    assert_copy_equals_source(&f);
    sl_plan_destroy(plan);
    fixture_fini(&f);
}

Test(graph_exec_retry, transient_read_retried)
{
    check_transient_retried("retry-read", SL_FAULT_PREAD);
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
        sl_fault_io_fail(&f.fs.fio, SL_FAULT_PREAD, 1, EIO);
        f.fs.fio.fail_sticky = true;
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
    snprintf(path, sizeof(path), "%s/%s", f.fs.root, key);
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
    check_transient_retried("retry-write", SL_FAULT_WRITE);
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
