/* SPDX-License-Identifier: MIT */
/*
 * Run journals (graph/journal.c): a run records every unit it writes, a
 * resumed run skips them and writes nothing else, a journal of another
 * computation is refused naming what changed, and a damaged journal is
 * refused (header) or trusted up to its damage (records).
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sluice.h>

#include "testutil.h"

TestSuite(graph_journal, .timeout = 30.0);

#define N 64

/* A copy of a 64x64 uint16 array in 16x16 chunks into shards of 32x32 (4
 * units of 4 chunks), both in one memory store. */
struct copy {
    sl_store *store;
    sl_array *src, *dst;
    sl_graph *g;
    sl_plan *plan;
    sl_pool *pool;
    char journal[256];
};

static sl_array *
make_array(sl_store *s, const char *path, bool sharded, bool gzip)
{
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = N;
        sp.chunk_shape[d] = 16;
        sp.shard_shape[d] = sharded ? 32 : 0;
    }
    if (gzip) {
        sp.codec.compressor = SL_COMPRESSOR_GZIP;
        sp.codec.level = 1;
    }
    struct sl_error err = SL_ERROR_INIT;
    sl_array *a = sl_array_create(s, path, &sp, NULL, &err);
    cr_assert_not_null(a, "%s", err.text);
    return a;
}

static void
copy_setup(struct copy *c, bool src_gzip, bool missing_is_error)
{
    struct sl_error err = SL_ERROR_INIT;
    memset(c, 0, sizeof(*c));
    c->store = sl_store_create_memory(NULL, &err);
    cr_assert_not_null(c->store);
    c->src = make_array(c->store, "src", false, src_gzip);
    uint16_t img[N * N];
    for (int i = 0; i < N * N; i++)
        img[i] = (uint16_t)(1 + i);
    struct sl_region all = sl_region_whole(2, sl_array_shape(c->src));
    cr_assert_eq(sl_array_write_region(c->src, &all, img, sizeof(img), NULL, NULL, &err), SL_OK,
                 "%s", err.text);
    c->dst = make_array(c->store, "dst", true, false);
    c->g = sl_graph_create(NULL, &err);
    uint32_t get, put;
    cr_assert_eq(sl_graph_add_get(c->g, "read", c->src, &get, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_add_put(c->g, "write", get, c->dst, &put, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_seal(c->g, &err), SL_OK, "%s", err.text);
    struct sl_plan_opts po = SL_PLAN_OPTS_DEFAULT;
    po.missing_is_error = missing_is_error;
    c->plan = sl_plan_create(c->g, &po, &err);
    cr_assert_not_null(c->plan, "%s", err.text);
    struct sl_pool_opts pool = SL_POOL_OPTS_DEFAULT;
    pool.n_workers = 2;
    c->pool = sl_pool_create(&pool, &err);
    cr_assert_not_null(c->pool, "%s", err.text);
    snprintf(c->journal, sizeof(c->journal), "/tmp/sl_journal_test_%ld", (long)getpid());
}

static void
copy_teardown(struct copy *c)
{
    sl_pool_destroy(c->pool);
    sl_plan_destroy(c->plan);
    sl_graph_unref(c->g);
    sl_array_unref(c->src);
    sl_array_unref(c->dst);
    sl_store_unref(c->store);
}

/* Run c->plan with a journal at c->journal; the summary in *s. */
static sl_status
run_journaled(struct copy *c, bool resume, struct sl_run_summary *s, struct sl_error *err)
{
    struct sl_journal_opts jo = SL_JOURNAL_OPTS_DEFAULT;
    jo.resume = resume;
    sl_journal *j = sl_journal_open(c->plan, c->journal, &jo, err);
    if (j == NULL)
        return err->code;
    sl_status st = sl_plan_run(c->plan, c->pool, err);
    cr_assert_eq(sl_journal_close(j, err), SL_OK, "%s", err->text);
    sl_plan_summary(c->plan, s);
    return st;
}

/* Open c->plan's journal at c->journal for a resume; what it found in *info. */
static sl_journal *
journal_resume(struct copy *c, struct sl_journal_info *info)
{
    struct sl_error err = SL_ERROR_INIT;
    struct sl_journal_opts jo = SL_JOURNAL_OPTS_DEFAULT;
    jo.resume = true;
    sl_journal *j = sl_journal_open(c->plan, c->journal, &jo, &err);
    cr_assert_not_null(j, "%s", err.text);
    sl_journal_get_info(j, info);
    return j;
}

static size_t
file_read(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static void
file_write(const char *path, const char *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
}

Test(graph_journal, resumed_run_skips_every_unit_written)
{
    struct copy c;
    copy_setup(&c, false, false);
    struct sl_error err = SL_ERROR_INIT;
    struct sl_run_summary s;
    cr_assert_eq(run_journaled(&c, false, &s, &err), SL_OK, "%s", err.text);
    cr_assert_eq(s.objects_written, 4);
    cr_assert_eq(s.n_resumed, 0);
    cr_assert_eq(run_journaled(&c, true, &s, &err), SL_OK, "%s", err.text);
    cr_assert_eq(s.objects_written, 0, "a resumed run wrote %" PRIu64 " units", s.objects_written);
    cr_assert_eq(s.bytes_read, 0);
    cr_assert_eq(s.n_resumed, 16);
    cr_assert_eq(s.n_ok, 16);
    unlink(c.journal);
    copy_teardown(&c);
}

Test(graph_journal, records_after_damage_run_again)
{
    struct copy c;
    copy_setup(&c, false, false);
    struct sl_error err = SL_ERROR_INIT;
    struct sl_run_summary s;
    cr_assert_eq(run_journaled(&c, false, &s, &err), SL_OK, "%s", err.text);
    char buf[8192];
    size_t n = file_read(c.journal, buf, sizeof(buf));
    /* Flip a byte of the second record: the first is trusted, 3 run again. */
    char *rec = strstr(buf, "\nu ");
    cr_assert_not_null(rec);
    rec = strchr(rec + 1, '\n');
    cr_assert_not_null(rec);
    rec[3] ^= 1;
    file_write(c.journal, buf, n);
    struct sl_journal_info info;
    sl_journal *j = journal_resume(&c, &info);
    cr_assert_eq(info.units_done, 1);
    cr_assert_eq(info.damaged_at, (int64_t)(rec + 1 - buf));
    cr_assert_eq(info.records_ignored, 3);
    cr_assert_eq(sl_plan_run(c.plan, c.pool, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_journal_close(j, &err), SL_OK);
    sl_plan_summary(c.plan, &s);
    cr_assert_eq(s.objects_written, 3);
    cr_assert_eq(s.n_resumed, 4);
    unlink(c.journal);
    copy_teardown(&c);
}

Test(graph_journal, damaged_or_cut_header_is_refused)
{
    struct copy c;
    copy_setup(&c, false, false);
    struct sl_error err = SL_ERROR_INIT;
    struct sl_run_summary s;
    cr_assert_eq(run_journaled(&c, false, &s, &err), SL_OK, "%s", err.text);
    char buf[8192], bad[8192];
    size_t n = file_read(c.journal, buf, sizeof(buf));
    size_t header = (size_t)(strstr(buf, "begin ") - buf);
    for (size_t off = 0; off < header; off += 7) {
        for (int cut = 0; cut < 2; cut++) {
            memcpy(bad, buf, n);
            bad[off] ^= 0x20;
            file_write(c.journal, bad, cut ? off : n);
            err = SL_ERROR_INIT;
            struct sl_journal_opts jo = SL_JOURNAL_OPTS_DEFAULT;
            jo.resume = true;
            sl_journal *j = sl_journal_open(c.plan, c.journal, &jo, &err);
            cr_assert_null(j, "a journal %s at byte %zu was accepted", cut ? "cut" : "damaged",
                           off);
            cr_assert_eq(err.code, SL_ECORRUPT, "at byte %zu: %s", off, err.text);
        }
    }
    unlink(c.journal);
    copy_teardown(&c);
}

Test(graph_journal, another_computation_is_refused_naming_it)
{
    struct copy a, b;
    copy_setup(&a, false, false);
    struct sl_error err = SL_ERROR_INIT;
    struct sl_run_summary s;
    cr_assert_eq(run_journaled(&a, false, &s, &err), SL_OK, "%s", err.text);
    /* The input's codec differs, and the missing-chunk policy. */
    copy_setup(&b, true, true);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_journal_check(b.plan, a.journal, &err), SL_ECONFLICT);
    cr_assert_not_null(strstr(err.text, "input:read"), "%s", err.text);
    cr_assert_not_null(strstr(err.text, "option:missing"), "%s", err.text);
    cr_assert_null(strstr(err.text, "output:write"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_journal_check(a.plan, a.journal, &err), SL_OK, "%s", err.text);
    unlink(a.journal);
    copy_teardown(&a);
    copy_teardown(&b);
}

/* Write `path` with the header of `buf` and its records `first`..`last`
 * (counting from 0). */
static void
journal_write_records(const char *path, const char *buf, size_t n, int first, int last)
{
    const char *body = strstr(buf, "\nbegin ");
    cr_assert_not_null(body);
    body = strchr(body + 1, '\n') + 1;
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite(buf, 1, (size_t)(body - buf), f);
    int k = 0;
    for (const char *p = body; p < buf + n; k++) {
        const char *nl = strchr(p, '\n');
        cr_assert_not_null(nl);
        if (k >= first && k <= last)
            fwrite(p, 1, (size_t)(nl + 1 - p), f);
        p = nl + 1;
    }
    fclose(f);
}

/* The journals of the ranks of a run (each holding its own units) are
 * united by a resume; a damaged one is named by its index; journals naming
 * different staging directories are of different runs, refused. */
Test(graph_journal, journals_of_ranks_are_united)
{
    struct copy c;
    copy_setup(&c, false, false);
    struct sl_error err = SL_ERROR_INIT;
    struct sl_run_summary s;
    cr_assert_eq(run_journaled(&c, false, &s, &err), SL_OK, "%s", err.text);
    char buf[8192], j0[300], j1[300];
    size_t n = file_read(c.journal, buf, sizeof(buf));
    snprintf(j0, sizeof(j0), "%s.rank-0-of-2", c.journal);
    snprintf(j1, sizeof(j1), "%s.rank-1-of-2", c.journal);
    journal_write_records(j0, buf, n, 0, 1);
    journal_write_records(j1, buf, n, 2, 3);
    const char *both[2] = {j0, j1};
    struct sl_journal_opts jo = SL_JOURNAL_OPTS_DEFAULT;
    jo.resume = true;
    jo.resume_from = both;
    jo.n_resume_from = 2;
    sl_journal *j = sl_journal_open(c.plan, c.journal, &jo, &err);
    cr_assert_not_null(j, "%s", err.text);
    struct sl_journal_info info;
    sl_journal_get_info(j, &info);
    cr_assert_eq(info.units_done, 4);
    cr_assert_eq(info.damaged_at, -1);
    cr_assert_eq(sl_plan_run(c.plan, c.pool, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_journal_close(j, &err), SL_OK);
    sl_plan_summary(c.plan, &s);
    cr_assert_eq(s.objects_written, 0, "wrote %" PRIu64 " units", s.objects_written);
    cr_assert_eq(s.n_resumed, 16);
    /* The second rank's journal damaged in its last record: its unit runs
     * again, and the info names that journal. */
    journal_write_records(j1, buf, n, 2, 3);
    n = file_read(j1, buf, sizeof(buf));
    buf[n - 3] ^= 1;
    file_write(j1, buf, n);
    j = sl_journal_open(c.plan, c.journal, &jo, &err);
    cr_assert_not_null(j, "%s", err.text);
    sl_journal_get_info(j, &info);
    cr_assert_eq(info.units_done, 3);
    cr_assert_eq(info.damaged_in, 1);
    cr_assert_eq(info.records_ignored, 1, "%" PRIu64, info.records_ignored);
    cr_assert_eq(sl_plan_run(c.plan, c.pool, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_journal_close(j, &err), SL_OK);
    sl_plan_summary(c.plan, &s);
    cr_assert_eq(s.objects_written, 1);
    /* Journals naming other output directories: of different runs. */
    const char *dir_a = "/tmp", *dir_b = "/";
    struct sl_journal_opts fresh = SL_JOURNAL_OPTS_DEFAULT;
    fresh.staging = &dir_a;
    fresh.n_staging = 1;
    j = sl_journal_open(c.plan, j0, &fresh, &err);
    cr_assert_not_null(j, "%s", err.text);
    cr_assert_eq(sl_journal_close(j, &err), SL_OK);
    fresh.staging = &dir_b;
    j = sl_journal_open(c.plan, j1, &fresh, &err);
    cr_assert_not_null(j, "%s", err.text);
    cr_assert_eq(sl_journal_close(j, &err), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_null(sl_journal_open(c.plan, c.journal, &jo, &err));
    cr_assert_eq(err.code, SL_ECONFLICT, "%s", err.text);
    cr_assert_not_null(strstr(err.text, "different runs"), "%s", err.text);
    unlink(j0);
    unlink(j1);
    unlink(c.journal);
    copy_teardown(&c);
}

/* Rewrite journal `path` without the record whose payload is `payload`. */
static void
journal_drop_record(const char *path, const char *payload)
{
    char buf[8192], out[8192];
    size_t n = file_read(path, buf, sizeof(buf) - 1), m = 0, len = strlen(payload);
    buf[n] = '\0';
    bool found = false;
    for (const char *p = buf; p < buf + n;) {
        const char *nl = strchr(p, '\n');
        cr_assert_not_null(nl);
        bool drop = (size_t)(nl - p) == len + 17 && strncmp(p, payload, len) == 0;
        found |= drop;
        if (!drop) {
            memcpy(out + m, p, (size_t)(nl + 1 - p));
            m += (size_t)(nl + 1 - p);
        }
        p = nl + 1;
    }
    cr_assert(found, "no record \"%s\" in the journal", payload);
    file_write(path, out, m);
}

/*
 * A put reading the array of an earlier put (a pyramid level reads the
 * level below): of its recorded units, exactly those whose region reads a
 * unit that runs again run again; the others are skipped.  src -> A
 * (shards of 32x32: 4 units) -> B (shards of 64x32: 2 units, unit 0 reading
 * A's units 0 and 2, unit 1 A's units 1 and 3).
 */
Test(graph_journal, only_units_reading_redone_units_run_again)
{
    struct copy c;
    copy_setup(&c, false, false);
    struct sl_error err = SL_ERROR_INIT;
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    sp.shape[0] = sp.shape[1] = N;
    sp.chunk_shape[0] = sp.chunk_shape[1] = 16;
    sp.shard_shape[0] = 64;
    sp.shard_shape[1] = 32;
    sl_array *b = sl_array_create(c.store, "b", &sp, NULL, &err);
    cr_assert_not_null(b, "%s", err.text);
    sl_graph *g = sl_graph_create(NULL, &err);
    uint32_t get, put, reget, put2;
    cr_assert_eq(sl_graph_add_get(g, "read", c.src, &get, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_add_put(g, "write", get, c.dst, &put, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_add_get(g, "reread", c.dst, &reget, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_add_put(g, "write2", reget, b, &put2, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_graph_seal(g, &err), SL_OK, "%s", err.text);
    sl_plan_destroy(c.plan);
    sl_graph_unref(c.g);
    c.g = g;
    c.plan = sl_plan_create(g, NULL, &err);
    cr_assert_not_null(c.plan, "%s", err.text);
    struct sl_run_summary s;
    cr_assert_eq(run_journaled(&c, false, &s, &err), SL_OK, "%s", err.text);
    cr_assert_eq(s.objects_written, 6);
    /* Which put is "write" in the journal: the one of 4 units. */
    journal_drop_record(c.journal, "u 0 0");
    struct sl_journal_info info;
    sl_journal *j = journal_resume(&c, &info);
    cr_assert_eq(info.units_done, 4, "%" PRIu64 " units trusted", info.units_done);
    cr_assert_eq(info.units_dropped, 1, "%" PRIu64 " units dropped", info.units_dropped);
    cr_assert_eq(sl_plan_run(c.plan, c.pool, &err), SL_OK, "%s", err.text);
    cr_assert_eq(sl_journal_close(j, &err), SL_OK);
    sl_plan_summary(c.plan, &s);
    cr_assert_eq(s.objects_written, 2, "wrote %" PRIu64 " units", s.objects_written);
    cr_assert_eq(s.n_resumed, 12 + 8, "%" PRIu64 " chunks resumed", s.n_resumed);
    /* Both arrays read back as the source. */
    uint16_t want[N * N], got[N * N];
    struct sl_region all = sl_region_whole(2, sl_array_shape(c.src));
    cr_assert_eq(sl_array_read_region(c.src, &all, want, sizeof(want), NULL, NULL, &err), SL_OK);
    cr_assert_eq(sl_array_read_region(b, &all, got, sizeof(got), NULL, NULL, &err), SL_OK, "%s",
                 err.text);
    cr_assert_arr_eq(got, want, sizeof(got));
    sl_array_unref(b);
    unlink(c.journal);
    copy_teardown(&c);
}
