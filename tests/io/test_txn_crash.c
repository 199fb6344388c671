/* SPDX-License-Identifier: MIT */
/*
 * Crash safety of transactions: a child process (txn_crash_child) commits
 * generation after generation of txn_crash.h's writes to a filesystem
 * store and is killed with SIGKILL at random moments.  After each kill,
 * every shard must decode (crc32c, index bounds) and equal either its
 * image before the generation in flight or after it, element for element;
 * listings must show no temporary file; and cleaning must remove every
 * temporary file the killed writer left.  The next child continues from
 * whatever state each shard was left in.
 *
 * SL_TXN_CRASH_KILLS sets the number of kills (default 1000; the soak run
 * in io/README.md uses 50000), SL_TXN_CRASH_SEED the random seed.  The
 * store lives on /dev/shm when there is one: a SIGKILL leaves the page
 * cache as it was, so the file system cannot change what a kill leaves,
 * while fsyncs there cost nothing, so kills land in ~100x more commits
 * per second than on a disk.  SL_TXN_CRASH_DIR names another parent
 * directory (a disk, for a soak run that also pays real fsyncs).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sluice.h>

#include "testutil.h"
#include "txn_crash.h"

/* No criterion timeout: a soak run takes hours.  meson's (300 s) bounds
 * CI runs; each child must open the array within 30 s. */
TestSuite(io_txn_crash);

/* The generation of every element, as far as the parent knows. */
struct model {
    uint64_t gen[SL_CRASH_N][SL_CRASH_N];
};

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

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- temporary files on disk ------------------------------------------------------ */

static int n_temps_found;

static int
count_temp(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag;
    if (strncmp(path + ftw->base, ".sluice-tmp.", 12) == 0)
        n_temps_found++;
    return 0;
}

static int
count_temps(const char *root)
{
    n_temps_found = 0;
    nftw(root, count_temp, 16, FTW_PHYS);
    return n_temps_found;
}

static sl_status
list_no_temporaries(void *arg, const char *key, uint64_t bytes)
{
    (void)arg, (void)bytes;
    cr_assert_null(strstr(key, ".sluice-tmp."), "a listing shows %s", key);
    return SL_OK;
}

/* ---- the child ------------------------------------------------------------------------ */

struct child {
    pid_t pid;
    int fd; /* read end of its stdout */
};

static struct child
child_start(const char *exe, const char *root, uint64_t first, bool durable)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    char first_s[32];
    snprintf(first_s, sizeof(first_s), "%" PRIu64, first);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execl(exe, exe, root, first_s, durable ? "1" : "0", (char *)NULL);
        fprintf(stderr, "io_txn_crash: cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(p[1]);
    return (struct child){pid, p[0]};
}

/* Wait for the child's 'R' (array open); false if it died first. */
static bool
child_ready(struct child *c)
{
    struct pollfd pfd = {c->fd, POLLIN, 0};
    char r = 0;
    cr_assert_eq(poll(&pfd, 1, 30000), 1, "the child did not start within 30 s");
    return read(c->fd, &r, 1) == 1 && r == 'R';
}

/* Kill the child, reap it, and read what it reported: `*last` is the
 * last generation committed (unchanged when none was). */
static int
child_kill(struct child *c, uint64_t *last)
{
    kill(c->pid, SIGKILL);
    int status = 0;
    cr_assert_eq(waitpid(c->pid, &status, 0), c->pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
              "the child exited by itself (status %d): see its message above", status);
    uint8_t buf[4096];
    size_t have = 0;
    int n_reports = 0;
    for (;;) {
        ssize_t r = read(c->fd, buf + have, sizeof(buf) - have);
        if (r <= 0)
            break;
        have += (size_t)r;
        for (; have >= 8; have -= 8, n_reports++) {
            memcpy(last, buf, 8);
            memmove(buf, buf + 8, have - 8);
        }
    }
    close(c->fd);
    return n_reports;
}

/* Apply the generations [first, last] the child reported committed. */
static void
apply_committed(struct model *m, uint64_t first, uint64_t last)
{
    for (uint64_t g = first; g <= last; g++) {
        struct apply ap = {m, g};
        sl_crash_plan(g, apply_box, &ap);
    }
}

/* ---- checking the store ------------------------------------------------------------------ */

/* Compare shard (sy, sx) as read with the model's generations. */
static bool
shard_matches(const uint16_t *back, uint64_t sy, uint64_t sx, const struct model *m)
{
    size_t i = 0;
    for (uint64_t y = sy * SL_CRASH_SHARD; y < (sy + 1) * SL_CRASH_SHARD; y++)
        for (uint64_t x = sx * SL_CRASH_SHARD; x < (sx + 1) * SL_CRASH_SHARD; x++, i++)
            if (back[i] != sl_crash_value(m->gen[y][x], y, x))
                return false;
    return true;
}

/* Every shard equals its old or its new image; the model follows it.
 * `n_new` counts shards found new. */
static void
check_shards(sl_array *a, struct model *m, uint64_t in_flight, int kill_no, int *n_new)
{
    struct model next = *m;
    struct apply ap = {&next, in_flight};
    sl_crash_plan(in_flight, apply_box, &ap);
    for (uint64_t sy = 0; sy < SL_CRASH_SHARDS; sy++)
        for (uint64_t sx = 0; sx < SL_CRASH_SHARDS; sx++) {
            struct sl_region r = {.rank = 2,
                                  .start = {sy * SL_CRASH_SHARD, sx * SL_CRASH_SHARD},
                                  .stop = {(sy + 1) * SL_CRASH_SHARD, (sx + 1) * SL_CRASH_SHARD}};
            uint16_t back[SL_CRASH_SHARD * SL_CRASH_SHARD];
            struct sl_error err = SL_ERROR_INIT;
            cr_assert_eq(sl_array_read_region(a, &r, back, sizeof(back), NULL, NULL, &err), SL_OK,
                         "kill %d: shard (%" PRIu64 ", %" PRIu64 ") does not decode: %s", kill_no,
                         sy, sx, err.text);
            bool is_old = shard_matches(back, sy, sx, m);
            bool is_new = shard_matches(back, sy, sx, &next);
            cr_assert(is_old || is_new,
                      "kill %d: shard (%" PRIu64 ", %" PRIu64 ") is neither its image before "
                      "generation %" PRIu64 " nor after it",
                      kill_no, sy, sx, in_flight);
            if (is_new && !is_old) {
                (*n_new)++;
                for (uint64_t y = sy * SL_CRASH_SHARD; y < (sy + 1) * SL_CRASH_SHARD; y++)
                    for (uint64_t x = sx * SL_CRASH_SHARD; x < (sx + 1) * SL_CRASH_SHARD; x++)
                        m->gen[y][x] = next.gen[y][x];
            }
        }
}

/* Open the store as a reader would after the crash and check it. */
static void
check_after_kill(const char *root, struct model *m, uint64_t in_flight, int kill_no, int *n_new,
                 int *n_leftovers)
{
    int temps = count_temps(root);
    *n_leftovers += temps > 0;
    struct sl_error err = SL_ERROR_INIT;
    sl_store *s = sl_store_open_fs(root, NULL, &err);
    cr_assert_not_null(s, "%s", err.text);
    sl_array *a = sl_array_open(s, "a", NULL, &err);
    cr_assert_not_null(a, "kill %d: %s", kill_no, err.text);
    cr_assert_eq(sl_store_list(s, "", list_no_temporaries, NULL, NULL), SL_OK);
    check_shards(a, m, in_flight, kill_no, n_new);
    uint64_t removed = 0;
    cr_assert_eq(sl_txn_clean_leftovers(a, &removed, &err), SL_OK, "%s", err.text);
    cr_assert_eq(removed, (uint64_t)temps, "kill %d: %d leftovers, %" PRIu64 " removed", kill_no,
                 temps, removed);
    cr_assert_eq(count_temps(root), 0, "kill %d: leftovers remain after cleaning", kill_no);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* Create the array and commit generation 0 (every chunk). */
static void
setup_array(const char *root, struct model *m)
{
    sl_store *s = sl_store_open_fs(root, NULL, NULL);
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
    uint16_t all[SL_CRASH_N * SL_CRASH_N];
    for (uint64_t y = 0; y < SL_CRASH_N; y++)
        for (uint64_t x = 0; x < SL_CRASH_N; x++) {
            all[y * SL_CRASH_N + x] = sl_crash_value(0, y, x);
            m->gen[y][x] = 0;
        }
    struct sl_region whole = sl_region_whole(2, sp.shape);
    cr_assert_eq(sl_array_write_region(a, &whole, all, sizeof(all), NULL, NULL, NULL), SL_OK);
    sl_array_unref(a);
    sl_store_unref(s);
}

/* Microseconds one commit of the child takes, from a 200 ms run. */
static double
calibrate(const char *exe, const char *root, struct model *m, uint64_t *next)
{
    struct child c = child_start(exe, root, *next, false);
    cr_assert(child_ready(&c), "the child failed to open the array");
    double t0 = now_s();
    usleep(200000);
    uint64_t last = *next - 1;
    int n = child_kill(&c, &last);
    double dt = now_s() - t0;
    cr_assert_gt(n, 0, "the child committed nothing in 200 ms");
    apply_committed(m, *next, last);
    int n_new = 0, n_left = 0;
    check_after_kill(root, m, last + 1, 0, &n_new, &n_left);
    *next = last + 2;
    return dt * 1e6 / n;
}

Test(io_txn_crash, killed_commits_leave_every_shard_old_or_new)
{
    const char *build = getenv("SL_BUILD_ROOT");
    cr_assert_not_null(build, "SL_BUILD_ROOT is unset (run through meson test)");
    char exe[1024], root[512];
    snprintf(exe, sizeof(exe), "%s/tests/io/txn_crash_child", build);
    cr_assert_eq(access(exe, X_OK), 0, "%s is missing", exe);
    const char *parent = getenv("SL_TXN_CRASH_DIR");
    if (parent != NULL && parent[0] != '\0') {
        snprintf(root, sizeof(root), "%s/sluice-txn-crash-%ld-XXXXXX", parent, (long)getpid());
        cr_assert_not_null(mkdtemp(root), "cannot make a directory under %s", parent);
    } else {
        snprintf(root, sizeof(root), "%s", sl_test_tmpdir_ram("txn-crash"));
    }
    uint64_t kills = env_u64("SL_TXN_CRASH_KILLS", 1000);
    uint64_t seed = env_u64("SL_TXN_CRASH_SEED", (uint64_t)time(NULL));
    uint64_t rng = seed | 1;
    static struct model m;
    setup_array(root, &m);
    uint64_t next = 1;
    double commit_us = calibrate(exe, root, &m, &next);
    int n_new = 0, n_leftovers = 0, n_reports = 0;
    double t0 = now_s();
    for (uint64_t i = 1; i <= kills; i++) {
        struct child c = child_start(exe, root, next, rng_next(&rng) % 2 == 0);
        cr_assert(child_ready(&c), "kill %" PRIu64 ": the child failed to open the array", i);
        /* Anywhere in the next few commits, often early in one; at most
         * 25 ms, so that a loaded machine (slow fsyncs) cannot stretch the
         * run: kills then land in the first commit, as often in a flush. */
        double span = commit_us * (rng_next(&rng) % 4 == 0 ? 1.0 : 3.0);
        span = span < 25000 ? span : 25000;
        usleep((useconds_t)((double)(rng_next(&rng) % 1000) / 1000.0 * span));
        uint64_t last = next - 1;
        n_reports += child_kill(&c, &last);
        apply_committed(&m, next, last);
        check_after_kill(root, &m, last + 1, (int)i, &n_new, &n_leftovers);
        next = last + 2;
    }
    fprintf(stderr,
            "io_txn_crash: seed %" PRIu64 ": %" PRIu64 " kills in %.1f s (%.0f us per commit) "
            "under %s, %d commits reported, %d shards found new at a kill, %d kills left "
            "temporary files\n",
            seed, kills, now_s() - t0, commit_us, root, n_reports, n_new, n_leftovers);
    cr_assert_gt(n_reports, 0);
    sl_test_rmtree(root);
}
