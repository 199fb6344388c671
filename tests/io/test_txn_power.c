/* SPDX-License-Identifier: MIT */
/*
 * Transactions under power loss, through power_io.h's model: a workload
 * commits generations of txn_crash.h's writes (whole chunks, half the
 * chunks, regions merged at commit; the first makes a directory) to a
 * filesystem store until the power
 * is cut at a random mutating call.  What the disk would then hold — file
 * contents as last fsynced, directory entries as last made durable by a
 * directory fsync, and in half the cuts also a random prefix of each
 * directory's later changes — is written to a fresh directory and checked:
 *
 * - with `durable`: the array opens; every shard decodes and equals its
 *   image after the last commit that returned SL_OK or after the
 *   generation in flight (nothing committed is lost, nothing torn); no
 *   listing shows a temporary file, and cleaning removes every one left.
 * - without `durable`: every shard still decodes and equals the image of
 *   some earlier complete generation (files are fsynced before their
 *   rename), but committed generations are lost: the test counts them and
 *   checks that cuts after a commit do lose it when no pending change
 *   survives, so that the durable figures above mean something.
 *
 * SL_TXN_POWER_CUTS sets the cuts with `durable` (default 1000; the soak
 * in io/README.md uses 20000), a third as many run without;
 * SL_TXN_POWER_SEED the seed.
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sluice.h>

#include "power_io.h"
#include "testutil.h"
#include "txn_crash.h"

TestSuite(io_txn_power, .timeout = 600.0);

#define GENS 8               /* generations a workload commits at most */
#define DEAD_PID 2147483000L /* a pid no process has: leftovers are stale */
#define N_SHARDS (SL_CRASH_SHARDS * SL_CRASH_SHARDS)

/* The generation of every element after generations 0..g: hist[g]. */
struct model {
    uint64_t gen[SL_CRASH_N][SL_CRASH_N];
};
static struct model hist[GENS + 1];

/* Applying one generation's boxes to a model. */
struct apply {
    struct model *m;
    uint64_t g;
};

static void
apply_box(void *arg, uint64_t y0, uint64_t y1, uint64_t x0, uint64_t x1)
{
    struct apply *ap = arg;
    for (uint64_t y = y0; y < y1; y++)
        for (uint64_t x = x0; x < x1; x++)
            ap->m->gen[y][x] = ap->g;
}

/* Generation 0 leaves the last row of shards unwritten (their directory
 * too), so later generations make a directory; elements never written
 * read as the fill value, 0, which sl_crash_value never is. */
#define UNWRITTEN UINT64_MAX
#define SETUP_ROWS (SL_CRASH_N - SL_CRASH_SHARD)

static uint16_t
value_of(uint64_t g, uint64_t y, uint64_t x)
{
    return g == UNWRITTEN ? 0 : sl_crash_value(g, y, x);
}

static void
history(void)
{
    for (uint64_t y = 0; y < SL_CRASH_N; y++)
        for (uint64_t x = 0; x < SL_CRASH_N; x++)
            hist[0].gen[y][x] = y < SETUP_ROWS ? 0 : UNWRITTEN;
    for (uint64_t g = 1; g <= GENS; g++) {
        hist[g] = hist[g - 1];
        struct apply ap = {&hist[g], g};
        sl_crash_plan(g, apply_box, &ap);
    }
}

static uint64_t
env_u64(const char *name, uint64_t fallback)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? strtoull(v, NULL, 10) : fallback;
}

static uint64_t
rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ---- the workload ------------------------------------------------------------------------ */

/* Create the array and write generation 0 (rows above SETUP_ROWS). */
static void
setup_array(const char *root)
{
    sl_store *s = sl_store_open_fs(root, NULL, NULL);
    cr_assert_not_null(s);
    struct sl_array_spec sp = SL_ARRAY_SPEC_DEFAULT;
    sp.rank = 2;
    sp.dtype = SL_DTYPE_U16;
    for (int d = 0; d < 2; d++) {
        sp.shape[d] = SL_CRASH_N;
        sp.chunk_shape[d] = SL_CRASH_CHUNK;
        sp.shard_shape[d] = SL_CRASH_SHARD;
    }
    sp.checksum = true;
    sl_array *a = sl_array_create(s, "a", &sp, NULL, NULL);
    cr_assert_not_null(a);
    static uint16_t all[SETUP_ROWS * SL_CRASH_N];
    for (uint64_t y = 0; y < SETUP_ROWS; y++)
        for (uint64_t x = 0; x < SL_CRASH_N; x++)
            all[y * SL_CRASH_N + x] = sl_crash_value(0, y, x);
    struct sl_region top = {.rank = 2, .start = {0, 0}, .stop = {SETUP_ROWS, SL_CRASH_N}};
    cr_assert_eq(sl_array_write_region(a, &top, all, sizeof(all), NULL, NULL, NULL), SL_OK);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* Writing one generation's boxes through a transaction. */
struct writer {
    sl_txn *t;
    sl_codec_ctx *ctx;
    uint64_t g;
    sl_status st;
};

static void
write_box(void *arg, uint64_t y0, uint64_t y1, uint64_t x0, uint64_t x1)
{
    struct writer *w = arg;
    static uint16_t box[SL_CRASH_N * SL_CRASH_N];
    size_t n = 0;
    for (uint64_t y = y0; y < y1; y++)
        for (uint64_t x = x0; x < x1; x++)
            box[n++] = sl_crash_value(w->g, y, x);
    if (w->st != SL_OK)
        return;
    if (y1 - y0 == SL_CRASH_CHUNK && x1 - x0 == SL_CRASH_CHUNK && y0 % SL_CRASH_CHUNK == 0 &&
        x0 % SL_CRASH_CHUNK == 0) {
        const uint64_t coords[2] = {y0 / SL_CRASH_CHUNK, x0 / SL_CRASH_CHUNK};
        w->st = sl_txn_write_chunk(w->t, coords, box, n * 2, w->ctx, NULL);
    } else {
        struct sl_region r = {.rank = 2, .start = {y0, x0}, .stop = {y1, x1}};
        w->st = sl_txn_write_region(w->t, &r, box, n * 2, w->ctx, NULL);
    }
}

/* Commit generations 1..GENS through `io` until one fails; the last that
 * committed (0: none). */
static uint64_t
run_workload(const char *root, bool durable, const struct sl_io_table *io)
{
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.durable = durable;
    so.create = false;
    so.io = io;
    sl_store *s = sl_store_open_fs(root, &so, NULL);
    sl_array *a = s != NULL ? sl_array_open(s, "a", NULL, NULL) : NULL;
    uint64_t last_ok = 0;
    struct writer w = {.ctx = sl_codec_ctx_create(NULL, NULL)};
    for (uint64_t g = 1; a != NULL && g <= GENS; g++) {
        w.t = sl_txn_open(a, NULL, NULL);
        if (w.t == NULL)
            break;
        w.g = g;
        w.st = SL_OK;
        sl_crash_plan(g, write_box, &w);
        if (w.st == SL_OK)
            w.st = sl_txn_commit(w.t, w.ctx, NULL);
        sl_txn_close(w.t);
        if (w.st != SL_OK)
            break;
        last_ok = g;
    }
    sl_codec_ctx_destroy(w.ctx);
    sl_array_unref(a);
    sl_store_unref(s);
    return last_ok;
}

/* ---- after the cut ----------------------------------------------------------------------- */

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

static bool
shard_is(const uint16_t *back, uint64_t sy, uint64_t sx, const struct model *m)
{
    size_t i = 0;
    for (uint64_t y = sy * SL_CRASH_SHARD; y < (sy + 1) * SL_CRASH_SHARD; y++)
        for (uint64_t x = sx * SL_CRASH_SHARD; x < (sx + 1) * SL_CRASH_SHARD; x++, i++)
            if (back[i] != value_of(m->gen[y][x], y, x))
                return false;
    return true;
}

/* What one cut left, as the checks found it. */
struct found {
    uint64_t n_new;   /* shards holding the generation in flight */
    uint64_t lost;    /* committed generations lost (the most over the shards) */
    uint64_t n_older; /* shards older than the last commit */
    int temps;        /* temporary files left */
};

/* Open what survived and check every shard against the history. */
static struct found
check_survivor(const char *dir, bool durable, uint64_t last_ok, uint64_t cut_no)
{
    struct found f = {0};
    n_temps = 0;
    nftw(dir, count_temp, 16, FTW_PHYS);
    f.temps = n_temps;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(dir, NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    sl_array *a = sl_array_open(s, "a", NULL, &err);
    cr_assert_not_null(a, "cut %" PRIu64 ": the array does not open: %s", cut_no, err.text);
    cr_assert_eq(sl_store_list(s, "", refuse_temporaries, NULL, NULL), SL_OK);
    uint64_t in_flight = last_ok < GENS ? last_ok + 1 : last_ok;
    for (uint64_t sy = 0; sy < SL_CRASH_SHARDS; sy++)
        for (uint64_t sx = 0; sx < SL_CRASH_SHARDS; sx++) {
            struct sl_region r = {.rank = 2,
                                  .start = {sy * SL_CRASH_SHARD, sx * SL_CRASH_SHARD},
                                  .stop = {(sy + 1) * SL_CRASH_SHARD, (sx + 1) * SL_CRASH_SHARD}};
            static uint16_t back[SL_CRASH_SHARD * SL_CRASH_SHARD];
            cr_assert_eq(sl_array_read_region(a, &r, back, sizeof(back), NULL, NULL, &err), SL_OK,
                         "cut %" PRIu64 ": shard (%" PRIu64 ", %" PRIu64 ") does not decode: %s",
                         cut_no, sy, sx, err.text);
            /* The newest generation whose image this shard is. */
            int64_t newest = -1;
            for (uint64_t g = 0; g <= in_flight; g++)
                if (shard_is(back, sy, sx, &hist[g]))
                    newest = (int64_t)g;
            cr_assert_geq(newest, 0,
                          "cut %" PRIu64 ": shard (%" PRIu64 ", %" PRIu64 ") is no generation's "
                          "image (torn)",
                          cut_no, sy, sx);
            if (durable)
                cr_assert_geq((uint64_t)newest, last_ok,
                              "cut %" PRIu64 ": shard (%" PRIu64 ", %" PRIu64 ") lost committed "
                              "generation %" PRIu64 ": it holds generation %" PRId64,
                              cut_no, sy, sx, last_ok, newest);
            bool is_old = shard_is(back, sy, sx, &hist[last_ok]);
            f.n_new += (uint64_t)newest == in_flight && !is_old;
            if (!is_old && (uint64_t)newest < last_ok) {
                f.n_older++;
                f.lost = last_ok - (uint64_t)newest > f.lost ? last_ok - (uint64_t)newest : f.lost;
            }
        }
    uint64_t removed = 0;
    cr_assert_eq(sl_txn_clean_leftovers(a, &removed, &err), SL_OK, "%s", err.text);
    cr_assert_eq(removed, (uint64_t)f.temps, "cut %" PRIu64 ": %d leftovers, %" PRIu64 " removed",
                 cut_no, f.temps, removed);
    sl_array_unref(a);
    sl_store_unref(s);
    return f;
}

/* ---- the test ---------------------------------------------------------------------------- */

/* Figures of the cuts of one kind of store. */
struct tally {
    uint64_t cuts, commits, n_new, cuts_losing, max_lost, shards_older, cuts_with_temps;
    uint64_t pending, pending_kept, unsynced;
};

/* Mutating calls of a whole workload, without a cut. */
static uint64_t
calibrate(const char *root, bool durable)
{
    sl_test_rmtree(root);
    cr_assert_eq(mkdir(root, 0777), 0);
    setup_array(root);
    struct sl_power_io *p = sl_power_io_create(root);
    cr_assert_not_null(p);
    cr_assert_eq(run_workload(root, durable, sl_power_io_table(p)), GENS);
    struct sl_power_stats st;
    sl_power_io_stats(p, &st);
    sl_power_io_destroy(p);
    cr_assert_gt(st.n_mutating, GENS, "the workload makes mutating calls");
    return st.n_mutating;
}

static void
one_cut(const char *root, const char *dst, bool durable, uint64_t calls, uint64_t *rng,
        uint64_t cut_no, struct tally *t)
{
    sl_test_rmtree(root);
    sl_test_rmtree(dst);
    cr_assert_eq(mkdir(root, 0777), 0);
    cr_assert_eq(mkdir(dst, 0777), 0);
    setup_array(root);
    struct sl_power_io *p = sl_power_io_create(root);
    cr_assert_not_null(p);
    sl_power_io_cut_at(p, 1 + rng_next(rng) % calls);
    uint64_t last_ok = run_workload(root, durable, sl_power_io_table(p));
    cr_assert(sl_power_io_is_cut(p), "cut %" PRIu64 ": the power stayed on", cut_no);
    sl_power_keep keep = cut_no % 2 == 0 ? SL_POWER_KEEP_NONE : SL_POWER_KEEP_SOME;
    cr_assert_eq(sl_power_io_materialize(p, dst, keep, rng, DEAD_PID), 0);
    struct sl_power_stats st;
    sl_power_io_stats(p, &st);
    sl_power_io_destroy(p);
    struct found f = check_survivor(dst, durable, last_ok, cut_no);
    t->cuts++;
    t->commits += last_ok;
    t->n_new += f.n_new;
    t->cuts_losing += f.lost > 0;
    t->max_lost = f.lost > t->max_lost ? f.lost : t->max_lost;
    t->shards_older += f.n_older;
    t->cuts_with_temps += f.temps > 0;
    t->pending += st.n_pending;
    t->pending_kept += st.n_pending_kept;
    t->unsynced += st.n_unsynced;
    /* The model's teeth: without durability and with no pending change
     * kept, every generation committed before the cut is lost. */
    if (!durable && keep == SL_POWER_KEEP_NONE && last_ok > 0)
        cr_assert_eq(f.lost, last_ok,
                     "cut %" PRIu64 ": without durable, %" PRIu64 " generations committed, %" PRIu64
                     " lost",
                     cut_no, last_ok, f.lost);
}

static void
report(const char *what, const struct tally *t, double secs)
{
    fprintf(stderr,
            "io_txn_power: %s: %" PRIu64 " cuts in %.1f s, %" PRIu64 " commits returned SL_OK "
            "before them, %" PRIu64 " cuts lost committed generations (at most %" PRIu64
            ", %" PRIu64 " shards older than their last commit), %" PRIu64
            " shards held the generation in flight, %" PRIu64 " cuts left temporary files; "
            "%" PRIu64 " directory changes pending at the cuts, %" PRIu64 " kept\n",
            what, t->cuts, secs, t->commits, t->cuts_losing, t->max_lost, t->shards_older, t->n_new,
            t->cuts_with_temps, t->pending, t->pending_kept);
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

Test(io_txn_power, durable_commits_survive_power_cuts_and_shards_are_never_torn)
{
    history();
    uint64_t cuts = env_u64("SL_TXN_POWER_CUTS", 1000);
    uint64_t seed = env_u64("SL_TXN_POWER_SEED", (uint64_t)time(NULL));
    uint64_t rng = seed | 1;
    char base[512], root[600], dst[600];
    snprintf(base, sizeof(base), "%s", sl_test_tmpdir_ram("txn-power"));
    snprintf(root, sizeof(root), "%s/store", base);
    snprintf(dst, sizeof(dst), "%s/after", base);
    fprintf(stderr, "io_txn_power: seed %" PRIu64 "\n", seed);
    for (int durable = 1; durable >= 0; durable--) {
        uint64_t calls = calibrate(root, durable);
        uint64_t n = durable ? cuts : (cuts + 2) / 3;
        struct tally t = {0};
        double t0 = now_s();
        for (uint64_t i = 0; i < n; i++)
            one_cut(root, dst, durable, calls, &rng, i, &t);
        char what[96];
        snprintf(what, sizeof(what), "%s (%" PRIu64 " mutating calls per workload)",
                 durable ? "durable" : "not durable", calls);
        report(what, &t, now_s() - t0);
        if (durable)
            cr_assert_eq(t.cuts_losing, 0);
        else if (n >= 10)
            cr_assert_gt(t.cuts_losing, 0, "without durable, no cut lost a commit");
    }
    sl_test_rmtree(base);
}

/* ---- directories made durable --------------------------------------------------------- */

/* What survives a cut right now (no pending change kept), in `dst`. */
static void
cut_and_materialize(struct sl_power_io *p, const char *dst)
{
    sl_power_io_cut_at(p, 1);
    cr_assert_eq(mkdir(dst, 0777), 0);
    uint64_t rng = 1;
    cr_assert_eq(sl_power_io_materialize(p, dst, SL_POWER_KEEP_NONE, &rng, DEAD_PID), 0);
}

static void
assert_file_holds(const char *dst, const char *rel, const char *want)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dst, rel);
    size_t len = 0;
    char *got = sl_test_read_file(path, &len);
    cr_assert_not_null(got,
                       "%s, written by a set that returned SL_OK on a durable store, is "
                       "lost in the power cut",
                       rel);
    cr_assert(len == strlen(want) && memcmp(got, want, len) == 0, "%s holds %zu other bytes", rel,
              len);
    free(got);
}

static struct sl_store *
durable_store(const char *root, struct sl_power_io *p)
{
    struct sl_fs_store_opts so = SL_FS_STORE_OPTS_DEFAULT;
    so.durable = true;
    so.io = sl_power_io_table(p);
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(root, &so, &err);
    cr_assert_not_null(s, "%s", err.text);
    return s;
}

/* A set made a directory, and fsyncing its parent failed: the set failed,
 * the directory stays, not durable.  A later set into it must make it
 * durable before reporting SL_OK. */
Test(io_txn_power, a_directory_whose_parent_fsync_failed_is_made_durable_by_the_next_set)
{
    char base[512], root[600], dst[600];
    snprintf(base, sizeof(base), "%s", sl_test_tmpdir_ram("txn-power-dir"));
    snprintf(root, sizeof(root), "%s/store", base);
    snprintf(dst, sizeof(dst), "%s/after", base);
    cr_assert_eq(mkdir(root, 0777), 0);
    struct sl_power_io *p = sl_power_io_create(root);
    cr_assert_not_null(p);
    sl_store *s = durable_store(root, p);
    sl_power_io_fail_dir_fsync(p, 1); /* the root's, after mkdir x */
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_store_set(s, "x/a", "first", 5, &err), SL_EIO, "%s", err.text);
    cr_assert_eq(sl_store_set(s, "x/b", "second", 6, &err), SL_OK, "%s", err.text);
    sl_store_unref(s);
    cut_and_materialize(p, dst);
    sl_power_io_destroy(p);
    assert_file_holds(dst, "x/b", "second");
    sl_test_rmtree(base);
}

/* Another writer's set lands between a mkdir and the fsync of its parent. */
struct racer {
    sl_store *s;
    struct sl_power_io *p;
    bool done;
    sl_status st;
};

static void
race_into_new_dir(void *arg, const char *path)
{
    struct racer *r = arg;
    if (r->done || strstr(path, "/y") == NULL)
        return;
    r->done = true;
    struct sl_error err = SL_ERROR_INIT;
    r->st = sl_store_set(r->s, "y/c", "racer", 5, &err);
    /* The racer was told its object is durable: the power may go now,
     * before the maker of "y" fsyncs its parent. */
    sl_power_io_cut_at(r->p, 1);
}

Test(io_txn_power, a_set_into_a_directory_another_writer_just_made_is_durable)
{
    char base[512], root[600], dst[600];
    snprintf(base, sizeof(base), "%s", sl_test_tmpdir_ram("txn-power-race"));
    snprintf(root, sizeof(root), "%s/store", base);
    snprintf(dst, sizeof(dst), "%s/after", base);
    cr_assert_eq(mkdir(root, 0777), 0);
    struct sl_power_io *p = sl_power_io_create(root);
    cr_assert_not_null(p);
    struct racer r = {.s = durable_store(root, p), .p = p};
    sl_power_io_on_mkdir(p, race_into_new_dir, &r);
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl_store_set(r.s, "y/maker", "maker", 5, &err);
    cr_assert(r.done);
    cr_assert_eq(r.st, SL_OK, "the racing set failed: %s", sl_status_name(r.st));
    cr_assert_eq(st, SL_EIO, "the maker's set ran into the cut: %s", err.text);
    sl_power_io_on_mkdir(p, NULL, NULL);
    sl_store_unref(r.s);
    /* The power is already off: what survives is fixed. */
    cr_assert_eq(mkdir(dst, 0777), 0);
    uint64_t rng = 1;
    cr_assert_eq(sl_power_io_materialize(p, dst, SL_POWER_KEEP_NONE, &rng, DEAD_PID), 0);
    sl_power_io_destroy(p);
    assert_file_holds(dst, "y/c", "racer");
    sl_test_rmtree(base);
}
