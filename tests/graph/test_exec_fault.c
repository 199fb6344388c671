/* SPDX-License-Identifier: MIT */
/*
 * A graph run under storage faults: get → {put "copy" into an unsharded
 * array, downsample → put "pyr" into a sharded one}, both on a durable
 * filesystem store whose I/O table fails the k-th mutating call (open for
 * writing, write, fsync, rename, unlink, mkdir) for every k until a run
 * ends without reaching it: with EIO, with ENOSPC, as a short write, and as
 * a short write followed by ENOSPC (a disk filling up).  Before each run
 * both arrays hold an "old" image (a complete earlier version); after it:
 *
 * - no chunk the put's status array calls ok fails to read back its new
 *   value, and every shard (every chunk of the unsharded array) decodes and
 *   equals its old or its new image, never a mix;
 * - the fault is reported: the run returns the injected status, exactly
 *   one unit (shard, or chunk of the unsharded array) failed, every chunk
 *   of it carries the status and a message naming the unit's key, the
 *   summary and the JSON report agree with the status arrays;
 * - no temporary file is left on disk (so none can be listed or read);
 * - a run without faults then writes every unit (nothing left blocks it);
 * - nothing leaks (the suite runs under LeakSanitizer in CI).
 *
 * Under ThreadSanitizer it runs on plain_test.h's stand-in for criterion,
 * which drops assertion messages: hence the (void) of message arguments.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sluice.h>

#include "fault_io.h"
#include "graph_fault_fixture.h"
#include "plain_test.h"
#include "testutil.h"

TestSuite(graph_exec_fault, .timeout = 120.0);

/* The source: [24, 20] uint16 in [8, 8] chunks; "copy" has its layout,
 * "pyr" is its 2x downsample, [12, 10] in [4, 4] chunks in [8, 8] shards. */
#define SRC_Y 24
#define SRC_X 20
#define PYR_Y 12
#define PYR_X 10
#define N_OUT 2 /* 0: copy, 1: pyr */

/* One output array: its arrays on both stores, images and unit grid. */
struct output {
    const char *path;      /* in the store */
    sl_array *plain;       /* through the default I/O table (setup, checks) */
    sl_array *faulty;      /* through the fault table (the graph's) */
    uint64_t shape[2];     /* array shape */
    uint64_t unit[2];      /* a unit's shape: the shard, or the chunk */
    uint16_t *old_img;     /* what it holds before each run */
    uint16_t *new_img;     /* what a clean run writes */
    uint32_t put;          /* its put node */
    uint64_t units_failed; /* over the whole sweep */
};

struct sweep {
    struct sl_test_fault_fs fs; /* the fault store durable */
    sl_store *mem;              /* holds the source */
    sl_array *src;
    struct output out[N_OUT];
    sl_plan *plan;
    uint64_t runs, fired;
};

/* ---- setup --------------------------------------------------------------------- */

/* The source: distinct values, zero (the fill value) in its top-left 16x16
 * corner, so "copy" deletes 4 chunks and "pyr" deletes shard (0, 0). */
static uint16_t *
source_image(void)
{
    uint16_t *img = malloc(SRC_Y * SRC_X * 2);
    cr_assert_not_null(img);
    for (int y = 0; y < SRC_Y; y++)
        for (int x = 0; x < SRC_X; x++)
            img[y * SRC_X + x] = y < 16 && x < 16 ? 0 : (uint16_t)(1 + y * 131 + x * 7);
    return img;
}

/* An old image: other values, and the last row of units all fill (absent
 * on disk, their directory removed by restore_old), so runs make a
 * directory and create units as well as replace and delete some. */
static uint16_t *
old_image(const struct output *o)
{
    size_t n = (size_t)(o->shape[0] * o->shape[1]);
    uint16_t *img = malloc(n * 2);
    cr_assert_not_null(img);
    for (uint64_t y = 0; y < o->shape[0]; y++)
        for (uint64_t x = 0; x < o->shape[1]; x++) {
            bool absent = y >= (o->shape[0] - 1) / o->unit[0] * o->unit[0];
            img[y * o->shape[1] + x] = absent ? 0 : (uint16_t)(30000 + y * 17 + x * 3);
        }
    return img;
}

/* Put both outputs back to their old images, the directory of their last
 * row of units removed. */
static void
restore_old(struct sweep *sw)
{
    for (int i = 0; i < N_OUT; i++) {
        struct output *o = &sw->out[i];
        char dir[700];
        snprintf(dir, sizeof(dir), "%s/%s/c/%" PRIu64, sw->fs.root, o->path,
                 (o->shape[0] - 1) / o->unit[0]);
        sl_test_rmtree(dir);
        sl_test_write_whole_u16(o->plain, o->old_img);
    }
}

static void
add_graph_nodes(sl_graph *g, sl_array *src, sl_array *copy, sl_array *pyr, uint32_t *puts)
{
    uint32_t get, ds;
    cr_assert_eq(sl_graph_add_get(g, "src", src, &get, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_put(g, "copy", get, copy, &puts[0], NULL), SL_OK);
    const struct sl_op_desc *d = NULL;
    cr_assert_eq(sl_op_lookup("downsample", &d, NULL), SL_OK);
    struct sl_op_args args;
    memset(&args, 0, sizeof(args));
    cr_assert_eq(sl_op_args_set_factors(&args, d, "factors", 2, (const uint64_t[]){2, 2}, NULL),
                 SL_OK);
    struct sl_op op;
    cr_assert_eq(sl_op_bind(&op, d, &args, SL_DTYPE_U16, 2, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_op(g, "ds", get, &op, (const uint64_t[]){4, 4}, &ds, NULL), SL_OK);
    cr_assert_eq(sl_graph_add_put(g, "pyr", ds, pyr, &puts[1], NULL), SL_OK);
    cr_assert_eq(sl_graph_seal(g, NULL), SL_OK);
}

static sl_plan *
make_plan(sl_array *src, sl_array *copy, sl_array *pyr, uint32_t *puts)
{
    sl_graph *g = sl_graph_create(NULL, NULL);
    cr_assert_not_null(g);
    add_graph_nodes(g, src, copy, pyr, puts);
    struct sl_error err = SL_ERROR_INIT;
    sl_plan *plan = sl_plan_create(g, NULL, &err);
    cr_assert_not_null(plan, "%s", err.text);
    sl_graph_unref(g);
    return plan;
}

/* The new images: the same graph on a memory store, without faults. */
static void
reference_images(struct sweep *sw)
{
    sl_store *m = sl_store_create_memory(NULL, NULL);
    cr_assert_not_null(m);
    sl_array *copy = sl_test_array_u16(m, "copy", sw->out[0].shape, (const uint64_t[]){8, 8}, NULL);
    sl_array *pyr = sl_test_array_u16(m, "pyr", sw->out[1].shape, (const uint64_t[]){4, 4},
                                      (const uint64_t[]){8, 8});
    uint32_t puts[2];
    sl_plan *plan = make_plan(sw->src, copy, pyr, puts);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(plan, sw->fs.pool, &err), SL_OK, "%s", err.text);
    sw->out[0].new_img = sl_test_read_whole_u16(copy);
    sw->out[1].new_img = sl_test_read_whole_u16(pyr);
    uint16_t *src = sl_test_read_whole_u16(sw->src);
    cr_assert_arr_eq(sw->out[0].new_img, src, SRC_Y * SRC_X * 2, "the copy equals the source");
    free(src);
    sl_plan_destroy(plan);
    sl_array_unref(copy);
    sl_array_unref(pyr);
    sl_store_unref(m);
}

static void
sweep_init(struct sweep *sw)
{
    memset(sw, 0, sizeof(*sw));
    sl_test_fault_fs_init(&sw->fs, sl_test_tmpdir_ram("exec-fault"), 2, true);
    sw->mem = sl_store_create_memory(NULL, NULL);
    struct sl_error err = SL_ERROR_INIT;

    sw->src = sl_test_array_u16(sw->mem, "src", (const uint64_t[]){SRC_Y, SRC_X},
                                (const uint64_t[]){8, 8}, NULL);
    uint16_t *src = source_image();
    sl_test_write_whole_u16(sw->src, src);
    free(src);
    sw->out[0] = (struct output){.path = "copy", .shape = {SRC_Y, SRC_X}, .unit = {8, 8}};
    sw->out[1] = (struct output){.path = "pyr", .shape = {PYR_Y, PYR_X}, .unit = {8, 8}};
    sw->out[0].plain =
        sl_test_array_u16(sw->fs.plain, "copy", sw->out[0].shape, sw->out[0].unit, NULL);
    sw->out[1].plain = sl_test_array_u16(sw->fs.plain, "pyr", sw->out[1].shape,
                                         (const uint64_t[]){4, 4}, sw->out[1].unit);
    for (int i = 0; i < N_OUT; i++) {
        sw->out[i].faulty = sl_array_open(sw->fs.fault, sw->out[i].path, NULL, &err);
        cr_assert_not_null(sw->out[i].faulty, "%s", err.text);
        sw->out[i].old_img = old_image(&sw->out[i]);
    }
    reference_images(sw);
    uint32_t puts[2];
    sw->plan = make_plan(sw->src, sw->out[0].faulty, sw->out[1].faulty, puts);
    sw->out[0].put = puts[0];
    sw->out[1].put = puts[1];
}

static void
sweep_fini(struct sweep *sw)
{
    sl_plan_destroy(sw->plan);
    for (int i = 0; i < N_OUT; i++) {
        sl_array_unref(sw->out[i].plain);
        sl_array_unref(sw->out[i].faulty);
        free(sw->out[i].old_img);
        free(sw->out[i].new_img);
    }
    sl_array_unref(sw->src);
    sl_store_unref(sw->mem);
    sl_test_fault_fs_fini(&sw->fs);
}

/* ---- checks ---------------------------------------------------------------------- */

static int n_temps;

static int
count_temp(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag;
    n_temps += strncmp(path + ftw->base, ".sluice-tmp.", 12) == 0;
    return 0;
}

static sl_status
refuse_temporaries(void *arg, const char *key, uint64_t bytes)
{
    (void)arg, (void)bytes;
    cr_assert_null(strstr(key, ".sluice-tmp."), "a listing shows %s", key);
    return SL_OK;
}

/* Whether unit `u` of `img` (clipped to the array) equals `back` there. */
static bool
unit_equals(const struct output *o, const uint64_t *u, const uint16_t *img, const uint16_t *back)
{
    for (uint64_t y = u[0] * o->unit[0]; y < (u[0] + 1) * o->unit[0] && y < o->shape[0]; y++)
        for (uint64_t x = u[1] * o->unit[1]; x < (u[1] + 1) * o->unit[1] && x < o->shape[1]; x++)
            if (back[y * o->shape[1] + x] != img[y * o->shape[1] + x])
                return false;
    return true;
}

/* What the status array says of one unit: ok, or the code all its chunks share. */
static sl_status
unit_code(const struct output *o, const struct sl_put_status *ps, const uint64_t *u,
          const char *what)
{
    (void)what;
    const struct sl_grid *g = ps->grid; /* the array's chunk grid */
    uint64_t per[2] = {o->unit[0] / g->chunk[0], o->unit[1] / g->chunk[1]};
    sl_status code = SL_OK;
    bool first = true;
    for (uint64_t cy = u[0] * per[0]; cy < (u[0] + 1) * per[0] && cy < g->n_chunks[0]; cy++)
        for (uint64_t cx = u[1] * per[1]; cx < (u[1] + 1) * per[1] && cx < g->n_chunks[1]; cx++) {
            sl_status c = (sl_status)ps->codes[sl_grid_linear_index(g, (const uint64_t[]){cy, cx})];
            if (first)
                code = c;
            cr_assert_eq(c, code,
                         "%s: chunks of unit (%" PRIu64 ", %" PRIu64 ") of %s differ: %s and %s",
                         what, u[0], u[1], o->path, sl_status_name(code), sl_status_name(c));
            first = false;
        }
    return code;
}

/* Every unit decodes and is old or new; ok units are new.  Returns units failed. */
static uint64_t
check_output(struct sweep *sw, struct output *o, const char *what, sl_status injected)
{
    struct sl_put_status ps;
    cr_assert_eq(sl_plan_put_status(sw->plan, o->put, &ps, NULL), SL_OK);
    uint16_t *back =
        sl_test_read_whole_u16(o->plain); /* fails the test if anything does not decode */
    uint64_t n_units[2] = {(o->shape[0] + o->unit[0] - 1) / o->unit[0],
                           (o->shape[1] + o->unit[1] - 1) / o->unit[1]};
    uint64_t failed = 0, n_failed_chunks = 0;
    for (uint64_t k = 0; k < ps.grid->n_total; k++)
        n_failed_chunks += ps.codes[k] != SL_OK;
    cr_assert_eq(ps.n_failed, n_failed_chunks,
                 "%s: %s counts %" PRIu64 " failed, codes say %" PRIu64, what, o->path, ps.n_failed,
                 n_failed_chunks);
    cr_assert_eq(ps.n_ok + ps.n_failed, ps.grid->n_total, "%s: %s", what, o->path);
    for (uint64_t uy = 0; uy < n_units[0]; uy++)
        for (uint64_t ux = 0; ux < n_units[1]; ux++) {
            const uint64_t u[2] = {uy, ux};
            sl_status code = unit_code(o, &ps, u, what);
            bool is_new = unit_equals(o, u, o->new_img, back);
            bool is_old = unit_equals(o, u, o->old_img, back);
            cr_assert(is_new || is_old,
                      "%s: unit (%" PRIu64 ", %" PRIu64 ") of %s is neither old nor new (%s)", what,
                      uy, ux, o->path, sl_status_name(code));
            cr_assert(code != SL_OK || is_new,
                      "%s: unit (%" PRIu64 ", %" PRIu64 ") of %s reported ok but does not read "
                      "back its new value",
                      what, uy, ux, o->path);
            if (code != SL_OK) {
                cr_assert_eq(code, injected, "%s: unit (%" PRIu64 ", %" PRIu64 ") of %s: %s", what,
                             uy, ux, o->path, sl_status_name(code));
                failed++;
            }
        }
    free(back);
    return failed;
}

/* Each failed chunk has a record naming its unit's key, with its code. */
static void
check_errors(struct sweep *sw, const char *what)
{
    (void)what;
    size_t n = 0;
    const struct sl_chunk_error *errs = sl_plan_errors(sw->plan, &n);
    size_t n_failed = 0;
    for (int i = 0; i < N_OUT; i++) {
        struct sl_put_status ps;
        cr_assert_eq(sl_plan_put_status(sw->plan, sw->out[i].put, &ps, NULL), SL_OK);
        n_failed += (size_t)ps.n_failed;
        for (size_t e = 0; e < n; e++) {
            if (errs[e].node != sw->out[i].put)
                continue;
            uint64_t k = sl_grid_linear_index(ps.grid, errs[e].key.idx);
            cr_assert_eq(errs[e].code, ps.codes[k], "%s: record and status array differ", what);
            uint64_t unit[2];
            for (int d = 0; d < 2; d++)
                unit[d] = errs[e].key.idx[d] * ps.grid->chunk[d] / sw->out[i].unit[d];
            char key[64];
            if (i == 0)
                snprintf(key, sizeof(key), "copy/c/%" PRIu64 "/%" PRIu64, unit[0], unit[1]);
            else
                snprintf(key, sizeof(key), "pyr/c/%" PRIu64 "/%" PRIu64, unit[0], unit[1]);
            cr_assert_not_null(strstr(errs[e].text, key), "%s: \"%s\" does not name %s", what,
                               errs[e].text, key);
        }
    }
    cr_assert_eq(n, n_failed, "%s: %zu error records for %zu failed chunks", what, n, n_failed);
}

/* The summary and the JSON report say what the status arrays say. */
static void
check_report(struct sweep *sw, sl_status st, const char *what)
{
    (void)what;
    struct sl_run_summary sum;
    sl_plan_summary(sw->plan, &sum);
    uint64_t ok = 0, failed = 0;
    for (int i = 0; i < N_OUT; i++) {
        struct sl_put_status ps;
        cr_assert_eq(sl_plan_put_status(sw->plan, sw->out[i].put, &ps, NULL), SL_OK);
        ok += ps.n_ok;
        failed += ps.n_failed;
    }
    cr_assert_eq(sum.n_ok, ok, "%s", what);
    cr_assert_eq(sum.n_failed + sum.n_upstream + sum.n_canceled, failed, "%s", what);
    cr_assert_eq(sum.first_error, st, "%s: summary says %s, run returned %s", what,
                 sl_status_name(sum.first_error), sl_status_name(st));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(sl_plan_write_report(sw->plan, f, NULL), SL_OK);
    fclose(f);
    json_error_t jerr;
    json_t *rep = json_loads(text, 0, &jerr);
    cr_assert_not_null(rep, "%s: report is not JSON: %s", what, jerr.text);
    cr_assert_eq(json_is_true(json_object_get(rep, "ok")), st == SL_OK, "%s", what);
    json_t *puts = json_object_get(rep, "puts");
    uint64_t listed = 0;
    for (size_t i = 0; i < json_array_size(puts); i++) {
        json_t *p = json_array_get(puts, i);
        listed += json_array_size(json_object_get(p, "failures"));
    }
    cr_assert_eq(listed, failed, "%s: the report lists %" PRIu64 " failures of %" PRIu64, what,
                 listed, failed);
    json_decref(rep);
    free(text);
}

/* What a run must leave, given what its fault did. */
static void
check_run(struct sweep *sw, sl_status st, const struct sl_error *err, sl_status injected,
          bool fails, const char *what)
{
    (void)err, (void)what;
    n_temps = 0;
    nftw(sw->fs.root, count_temp, 16, FTW_PHYS);
    cr_assert_eq(n_temps, 0, "%s: %d temporary files left", what, n_temps);
    cr_assert_eq(sl_store_list(sw->fs.plain, "", refuse_temporaries, NULL, NULL), SL_OK);
    if (fails)
        cr_assert_eq(st, injected, "%s: the run returned %s (%s)", what, sl_status_name(st),
                     err->text);
    else
        cr_assert_eq(st, SL_OK, "%s: %s", what, err->text);
    uint64_t failed = 0;
    for (int i = 0; i < N_OUT; i++) {
        uint64_t f = check_output(sw, &sw->out[i], what, injected);
        sw->out[i].units_failed += f;
        failed += f;
    }
    cr_assert_eq(failed, fails ? 1 : 0, "%s: %" PRIu64 " units failed", what, failed);
    check_errors(sw, what);
    check_report(sw, st, what);
}

/* ---- the sweep ------------------------------------------------------------------ */

/* The next run without a fault writes everything: a failure leaves nothing
 * behind that stops later writes (a stale temporary file, a lock). */
static void
rerun_clean(struct sweep *sw, const char *what)
{
    (void)what;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_plan_run(sw->plan, sw->fs.pool, &err), SL_OK, "%s: the clean rerun: %s", what,
                 err.text);
    for (int i = 0; i < N_OUT; i++) {
        uint16_t *back = sl_test_read_whole_u16(sw->out[i].plain);
        cr_assert_arr_eq(back, sw->out[i].new_img, sw->out[i].shape[0] * sw->out[i].shape[1] * 2,
                         "%s: the clean rerun left %s different", what, sw->out[i].path);
        free(back);
    }
}

struct kind_stats {
    uint64_t k_max; /* the first k no run reached */
    uint64_t fired; /* runs whose fault fired */
    uint64_t by_op[SL_FAULT_OP_COUNT_];
};

static struct kind_stats
sweep_kind(struct sweep *sw, sl_fault_kind kind, int errno_value)
{
    struct kind_stats ks;
    memset(&ks, 0, sizeof(ks));
    sl_status injected = errno_value == EIO ? SL_EIO : SL_ENOSPC;
    for (uint64_t k = 1;; k++) {
        cr_assert_lt(k, 10000, "the workload never ends");
        restore_old(sw);
        sl_fault_io_reset(&sw->fs.fio);
        sl_fault_io_fail_mutating(&sw->fs.fio, k, kind, errno_value);
        struct sl_error err = SL_ERROR_INIT;
        sl_status st = sl_plan_run(sw->plan, sw->fs.pool, &err);
        /* The short kinds hit the k-th write, the others the k-th call. */
        uint64_t calls = kind == SL_FAULT_ERRNO ? sl_fault_io_mutating_calls(&sw->fs.fio)
                                                : sl_fault_io_mutating_writes(&sw->fs.fio);
        int op = sl_fault_io_fired(&sw->fs.fio);
        sl_fault_io_reset(&sw->fs.fio);
        sw->runs++;
        char what[96];
        snprintf(what, sizeof(what), "kind %d, %s, k = %" PRIu64 " (%s)", (int)kind,
                 strerror(errno_value), k, op >= 0 ? sl_fault_op_name((sl_fault_op)op) : "-");
        bool fails = op >= 0 && kind != SL_FAULT_SHORT;
        check_run(sw, st, &err, injected, fails, what);
        rerun_clean(sw, what);
        if (op >= 0) {
            ks.fired++;
            ks.by_op[op]++;
            sw->fired++;
        }
        if (k > calls) {
            cr_assert_lt(op, 0, "%s: fired beyond the last call", what);
            ks.k_max = k;
            return ks;
        }
    }
}

Test(graph_exec_fault, every_failing_mutating_call_is_reported_and_leaves_units_old_or_new)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    static struct sweep sw;
    sweep_init(&sw);
    const struct {
        sl_fault_kind kind;
        int errno_value;
        const char *name;
    } kinds[] = {
        {SL_FAULT_ERRNO, EIO, "EIO"},
        {SL_FAULT_ERRNO, ENOSPC, "ENOSPC"},
        {SL_FAULT_SHORT, ENOSPC, "short write"},
        {SL_FAULT_SHORT_ERRNO, ENOSPC, "short write, then ENOSPC"},
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        struct kind_stats ks = sweep_kind(&sw, kinds[i].kind, kinds[i].errno_value);
        fprintf(stderr, "graph_exec_fault: %s: k = 1..%" PRIu64 ", %" PRIu64 " faults fired:",
                kinds[i].name, ks.k_max - 1, ks.fired);
        for (int op = 0; op < SL_FAULT_OP_COUNT_; op++)
            if (ks.by_op[op] > 0)
                fprintf(stderr, " %s %" PRIu64, sl_fault_op_name((sl_fault_op)op), ks.by_op[op]);
        fprintf(stderr, "\n");
        cr_assert_gt(ks.fired, 3, "%s: the sweep hit almost nothing", kinds[i].name);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr,
            "graph_exec_fault: %" PRIu64 " runs, %" PRIu64 " faults injected, units failed: "
            "copy %" PRIu64 ", pyr %" PRIu64 "; %.1f s\n",
            sw.runs, sw.fired, sw.out[0].units_failed, sw.out[1].units_failed,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    sweep_fini(&sw);
}
