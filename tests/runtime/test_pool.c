/* SPDX-License-Identifier: MIT */
/*
 * Tests of the pool's contract: submit from outside and from tasks, worker
 * indices, groups (wait from outside and from inside a task, cancel),
 * dependencies and continuations, the parallel-for seam, destroy with queued
 * work, options and their environment variables.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sluice/task.h>

#include "plain_test.h"
#include "pool_test.h"
#include "runtime_internal.h"

TestSuite(runtime_pool, .timeout = 30.0);

static sl_pool *
pool_make(unsigned n_workers)
{
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    o.n_workers = n_workers;
    struct sl_error err = SL_ERROR_INIT;
    sl_pool *pool = sl_pool_create(&o, &err);
    cr_assert_not_null(pool, "sl_pool_create: %s", err.text);
    return pool;
}

/* ---- submit and indices ---------------------------------------------- */

struct probe {
    sl_pool *pool;
    _Atomic int runs;
    _Atomic int index;
    _Atomic int status;
};

static void
probe_task(void *arg, sl_status status)
{
    struct probe *p = arg;
    atomic_store(&p->index, sl_pool_worker_index(p->pool));
    atomic_store(&p->status, (int)status);
    atomic_fetch_add(&p->runs, 1);
}

Test(runtime_pool, default_pool_has_a_worker_per_core)
{
    sl_pool *pool = sl_pool_create(NULL, NULL);
    cr_assert_not_null(pool);
    struct sl_topo_counts c = sl_topo_counts(sl_pool_topo(pool));
    cr_assert_eq(sl_pool_worker_count(pool), c.n_cores);
    cr_assert_eq(sl_pool_worker_index(pool), -1, "the test thread is no worker");
    cr_assert_null(sl_pool_current());
    sl_pool_destroy(pool);
    sl_pool_destroy(NULL);
}

Test(runtime_pool, submitted_task_runs_once_on_a_worker)
{
    sl_pool *pool = pool_make(3);
    struct probe p = {.pool = pool};
    atomic_init(&p.index, -2);
    struct sl_task_group g;
    sl_task_group_init(&g, pool);
    cr_assert_eq(sl_task_group_submit(&g, probe_task, &p), SL_OK);
    cr_assert_eq(sl_task_group_wait(&g), SL_OK);
    cr_assert_eq(atomic_load(&p.runs), 1);
    cr_assert_eq(atomic_load(&p.status), SL_OK);
    int idx = atomic_load(&p.index);
    cr_assert(idx >= 0 && idx < 3, "worker index %d", idx);
    sl_pool_destroy(pool);
}

Test(runtime_pool, submit_rejects_null_arguments)
{
    sl_pool *pool = pool_make(1);
    cr_assert_eq(sl_pool_submit(NULL, probe_task, NULL), SL_EINVAL);
    cr_assert_eq(sl_pool_submit(pool, NULL, NULL), SL_EINVAL);
    cr_assert_eq(sl_task_group_submit(NULL, probe_task, NULL), SL_EINVAL);
    cr_assert_eq(sl_task_group_wait(NULL), SL_EINVAL);
    cr_assert_eq(sl_pool_submit_task(pool, NULL), SL_EINVAL);
    sl_pool_destroy(pool);
}

/* A detached task signals completion itself. */
struct detached {
    _Atomic int done;
    _Atomic int current_ok;
};

static void
detached_task(void *arg, sl_status status)
{
    struct detached *d = arg;
    sl_pool *cur = sl_pool_current();
    atomic_store(&d->current_ok, cur != NULL && status == SL_OK);
    atomic_store_explicit(&d->done, 1, memory_order_release);
}

Test(runtime_pool, detached_submit_runs_and_knows_its_pool)
{
    sl_pool *pool = pool_make(2);
    struct detached d = {0};
    cr_assert_eq(sl_pool_submit(pool, detached_task, &d), SL_OK);
    while (!atomic_load_explicit(&d.done, memory_order_acquire))
        sched_yield();
    cr_assert(atomic_load(&d.current_ok));
    sl_pool_destroy(pool);
}

/* ---- fork-join and waiting inside tasks ------------------------------- */

struct fib {
    sl_pool *pool;
    int n;
    long result;
};

static void
fib_task(void *arg, sl_status status)
{
    struct fib *f = arg;
    if (status != SL_OK || f->n < 2) {
        f->result = f->n;
        return;
    }
    struct fib a = {f->pool, f->n - 1, 0}, b = {f->pool, f->n - 2, 0};
    struct sl_task_group g;
    sl_task_group_init(&g, f->pool);
    if (sl_task_group_submit(&g, fib_task, &a) != SL_OK ||
        sl_task_group_submit(&g, fib_task, &b) != SL_OK) {
        f->result = -1000000;
        return;
    }
    sl_status st = sl_task_group_wait(&g);
    f->result = st == SL_OK ? a.result + b.result : -1000000;
}

Test(runtime_pool, nested_fork_join_waits_inside_tasks)
{
    for (unsigned n_workers = 1; n_workers <= 4; n_workers++) {
        sl_pool *pool = pool_make(n_workers);
        struct fib f = {pool, 20, 0};
        struct sl_task_group g;
        sl_task_group_init(&g, pool);
        cr_assert_eq(sl_task_group_submit(&g, fib_task, &f), SL_OK);
        cr_assert_eq(sl_task_group_wait(&g), SL_OK);
        cr_assert_eq(f.result, 6765, "fib(20) with %u workers", n_workers);
        struct sl_pool_stats s = pool_stats(pool);
        /* fib(20) makes 21890 calls: the root and its 21890 - 1 descendants. */
        cr_assert_eq(s.n_tasks_run, 21891);
        cr_assert_eq(s.n_tasks_canceled, 0);
        sl_pool_destroy(pool);
    }
}

/* ---- cancellation ------------------------------------------------------ */

/* A task that holds its worker until the gate opens. */
struct gate {
    _Atomic int open;
    _Atomic int n_waiting;
};

static void
gate_task(void *arg, sl_status status)
{
    struct gate *g = arg;
    (void)status;
    atomic_fetch_add(&g->n_waiting, 1);
    while (!atomic_load_explicit(&g->open, memory_order_acquire))
        sched_yield();
}

static void
gate_wait_for(struct gate *g, int n)
{
    while (atomic_load(&g->n_waiting) < n)
        sched_yield();
}

struct tally {
    _Atomic int ok;
    _Atomic int canceled;
};

static void
tally_task(void *arg, sl_status status)
{
    struct tally *t = arg;
    atomic_fetch_add(status == SL_OK ? &t->ok : &t->canceled, 1);
}

Test(runtime_pool, cancel_runs_queued_tasks_with_ecanceled)
{
    sl_pool *pool = pool_make(2);
    struct gate gate = {0};
    struct tally tally = {0};
    struct sl_task_group busy, g;
    sl_task_group_init(&busy, pool);
    sl_task_group_init(&g, pool);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(sl_task_group_submit(&busy, gate_task, &gate), SL_OK);
    gate_wait_for(&gate, 2);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(sl_task_group_submit(&g, tally_task, &tally), SL_OK);
    cr_assert_not(sl_task_group_is_canceled(&g));
    sl_task_group_cancel(&g);
    cr_assert(sl_task_group_is_canceled(&g));
    cr_assert_eq(sl_task_group_submit(&g, tally_task, &tally), SL_ECANCELED,
                 "submit to a cancelled group fails and never runs");
    atomic_store_explicit(&gate.open, 1, memory_order_release);
    cr_assert_eq(sl_task_group_wait(&g), SL_ECANCELED);
    cr_assert_eq(sl_task_group_wait(&busy), SL_OK);
    cr_assert_eq(atomic_load(&tally.canceled), 100);
    cr_assert_eq(atomic_load(&tally.ok), 0);
    cr_assert_eq(pool_stats(pool).n_tasks_canceled, 100);
    sl_pool_destroy(pool);
}

struct destroyer {
    sl_pool *pool;
    _Atomic int done;
};

static void *
destroy_main(void *arg)
{
    struct destroyer *d = arg;
    sl_pool_destroy(d->pool);
    atomic_store(&d->done, 1);
    return NULL;
}

Test(runtime_pool, destroy_cancels_queued_tasks_and_runs_each_once)
{
    sl_pool *pool = pool_make(2);
    struct gate gate = {0};
    struct tally tally = {0};
    for (int i = 0; i < 2; i++)
        cr_assert_eq(sl_pool_submit(pool, gate_task, &gate), SL_OK);
    gate_wait_for(&gate, 2);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(sl_pool_submit(pool, tally_task, &tally), SL_OK);
    /* Destroy while both workers are held: queued tasks must still run. */
    struct destroyer d = {.pool = pool};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, destroy_main, &d), 0);
    while (!sl__pool_is_shutting_down(pool))
        sched_yield();
    cr_assert_eq(sl_pool_submit(pool, tally_task, &tally), SL_ECANCELED);
    atomic_store_explicit(&gate.open, 1, memory_order_release);
    pthread_join(th, NULL);
    cr_assert(atomic_load(&d.done));
    cr_assert_eq(atomic_load(&tally.canceled), 1000);
    cr_assert_eq(atomic_load(&tally.ok), 0);
}

/* ---- dependencies and continuations ----------------------------------- */

#define CHAIN 2000

struct chain;

/* One link: the task and what its callback needs. */
struct link {
    struct sl_task task;
    struct chain *chain;
    int index;
};

struct chain {
    sl_pool *pool;
    struct link links[CHAIN];
    _Atomic int next;      /* index expected next */
    _Atomic int bad_order; /* links that ran out of order */
    _Atomic int workers;   /* bit i: worker i ran a link */
    _Atomic int canceled;  /* links that ran with SL_ECANCELED */
};

static void
chain_link(void *arg, sl_status status)
{
    struct link *l = arg;
    struct chain *c = l->chain;
    if (atomic_fetch_add(&c->next, 1) != l->index)
        atomic_fetch_add(&c->bad_order, 1);
    atomic_fetch_or(&c->workers, 1 << sl_pool_worker_index(c->pool));
    if (status == SL_ECANCELED)
        atomic_fetch_add(&c->canceled, 1);
}

static struct chain *
chain_make(sl_pool *pool)
{
    struct chain *c = calloc(1, sizeof(*c));
    cr_assert_not_null(c);
    c->pool = pool;
    for (int i = 0; i < CHAIN; i++) {
        c->links[i].chain = c;
        c->links[i].index = i;
        sl_task_init(&c->links[i].task, chain_link, &c->links[i]);
    }
    for (int i = 0; i + 1 < CHAIN; i++)
        cr_assert_eq(sl_task_precede(&c->links[i].task, &c->links[i + 1].task), SL_OK);
    return c;
}

Test(runtime_pool, chain_runs_in_order_on_one_worker)
{
    sl_pool *pool = pool_make(4);
    struct chain *c = chain_make(pool);
    struct sl_task_group g;
    sl_task_group_init(&g, pool);
    /* Submit from the end: each waits for its predecessor anyway. */
    for (int i = CHAIN; i-- > 0;)
        cr_assert_eq(sl_task_group_submit_task(&g, &c->links[i].task), SL_OK);
    cr_assert_eq(sl_task_group_wait(&g), SL_OK);
    cr_assert_eq(atomic_load(&c->next), CHAIN);
    cr_assert_eq(atomic_load(&c->bad_order), 0);
    int w = atomic_load(&c->workers);
    cr_assert(w != 0 && (w & (w - 1)) == 0, "chain ran on workers mask %#x, not one", w);
    cr_assert_geq(pool_stats(pool).n_continuations, CHAIN - 1);
    free(c);
    sl_pool_destroy(pool);
}

Test(runtime_pool, cancelled_predecessor_cancels_successor)
{
    sl_pool *pool = pool_make(2);
    struct chain *c = chain_make(pool);
    struct gate gate = {0};
    struct sl_task_group busy, g1, g2;
    sl_task_group_init(&busy, pool);
    sl_task_group_init(&g1, pool);
    sl_task_group_init(&g2, pool);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(sl_task_group_submit(&busy, gate_task, &gate), SL_OK);
    gate_wait_for(&gate, 2);
    /* The first link in g1, the rest in g2; g1 is cancelled before any runs. */
    cr_assert_eq(sl_task_group_submit_task(&g1, &c->links[0].task), SL_OK);
    for (int i = 1; i < CHAIN; i++)
        cr_assert_eq(sl_task_group_submit_task(&g2, &c->links[i].task), SL_OK);
    sl_task_group_cancel(&g1);
    atomic_store_explicit(&gate.open, 1, memory_order_release);
    cr_assert_eq(sl_task_group_wait(&g1), SL_ECANCELED);
    cr_assert_eq(sl_task_group_wait(&g2), SL_OK, "g2 itself was not cancelled");
    cr_assert_eq(sl_task_group_wait(&busy), SL_OK);
    cr_assert_eq(atomic_load(&c->next), CHAIN, "every link still runs once");
    cr_assert_eq(atomic_load(&c->canceled), CHAIN, "the cancel travels down the chain");
    free(c);
    sl_pool_destroy(pool);
}

struct join {
    struct sl_task a, b, c, d;
    struct sl_task *d_ptr;
    _Atomic int order[4];
    _Atomic int step;
};

static void
join_record(struct join *j, int who)
{
    atomic_store(&j->order[who], atomic_fetch_add(&j->step, 1));
}

static void
join_a(void *arg, sl_status status)
{
    (void)status;
    join_record(arg, 0);
}

static void
join_b(void *arg, sl_status status)
{
    (void)status;
    join_record(arg, 1);
}

static void
join_c(void *arg, sl_status status)
{
    struct join *j = arg;
    (void)status;
    join_record(j, 2);
    sl_task_release(j->d_ptr); /* the second dependency of d */
}

static void
join_d(void *arg, sl_status status)
{
    (void)status;
    join_record(arg, 3);
}

Test(runtime_pool, diamond_with_manual_release)
{
    sl_pool *pool = pool_make(3);
    for (int rep = 0; rep < 200; rep++) {
        struct join j = {0};
        j.d_ptr = &j.d;
        sl_task_init(&j.a, join_a, &j);
        sl_task_init(&j.b, join_b, &j);
        sl_task_init(&j.c, join_c, &j);
        sl_task_init(&j.d, join_d, &j);
        /* a -> b -> d and a -> c -(release)-> d: b precedes d, c releases it. */
        cr_assert_eq(sl_task_precede(&j.a, &j.b), SL_OK);
        cr_assert_eq(sl_task_precede(&j.b, &j.d), SL_OK);
        cr_assert_eq(sl_task_add_deps(&j.c, 1), SL_OK);
        cr_assert_eq(sl_task_add_deps(&j.d, 1), SL_OK);
        struct sl_task_group g;
        sl_task_group_init(&g, pool);
        cr_assert_eq(sl_task_group_submit_task(&g, &j.d), SL_OK);
        cr_assert_eq(sl_task_group_submit_task(&g, &j.c), SL_OK);
        cr_assert_eq(sl_task_group_submit_task(&g, &j.b), SL_OK);
        cr_assert_eq(sl_task_group_submit_task(&g, &j.a), SL_OK);
        sl_task_release(&j.c); /* from outside the pool: queued */
        cr_assert_eq(sl_task_group_wait(&g), SL_OK);
        int oa = atomic_load(&j.order[0]), ob = atomic_load(&j.order[1]);
        int oc = atomic_load(&j.order[2]), od = atomic_load(&j.order[3]);
        cr_assert(oa < ob && ob < od && oc < od, "order a%d b%d c%d d%d", oa, ob, oc, od);
    }
    sl_pool_destroy(pool);
}

Test(runtime_pool, precede_and_submit_check_states)
{
    sl_pool *pool = pool_make(1);
    struct sl_task a, b, c;
    struct tally tally = {0};
    sl_task_init(&a, tally_task, &tally);
    sl_task_init(&b, tally_task, &tally);
    sl_task_init(&c, tally_task, &tally);
    cr_assert_eq(sl_task_precede(&a, &a), SL_EINVAL);
    cr_assert_eq(sl_task_precede(NULL, &a), SL_EINVAL);
    cr_assert_eq(sl_task_precede(&a, &b), SL_OK);
    cr_assert_eq(sl_task_precede(&a, &c), SL_ESTATE, "one successor per task");
    cr_assert_eq(sl_task_add_deps(&c, UINT32_MAX), SL_EOVERFLOW);
    struct sl_task_group g;
    sl_task_group_init(&g, pool);
    cr_assert_eq(sl_task_group_submit_task(&g, &b), SL_OK);
    cr_assert_eq(sl_task_group_submit_task(&g, &b), SL_ESTATE, "submitted twice");
    cr_assert_eq(sl_task_precede(&c, &b), SL_ESTATE, "successor already submitted");
    cr_assert_eq(sl_task_add_deps(&b, 1), SL_ESTATE);
    cr_assert_eq(sl_task_group_submit_task(&g, &a), SL_OK);
    cr_assert_eq(sl_pool_submit_task(pool, &c), SL_OK);
    cr_assert_eq(sl_task_group_wait(&g), SL_OK);
    cr_assert_geq(atomic_load(&tally.ok), 2, "a and b ran (c may have too)");
    sl_pool_destroy(pool); /* c ran too, or is cancelled now: either way once */
    cr_assert_eq(atomic_load(&tally.ok) + atomic_load(&tally.canceled), 3);
}

/* ---- the parallel-for seam -------------------------------------------- */

struct pfor {
    _Atomic uint8_t *hits;
    _Atomic uint64_t *per_worker;
    unsigned n_workers;
    _Atomic int bad_worker;
    _Atomic int n_ranges; /* ranged bodies: calls */
};

static void
pfor_body(void *arg, size_t i, unsigned worker)
{
    struct pfor *p = arg;
    atomic_fetch_add_explicit(&p->hits[i], 1, memory_order_relaxed);
    if (worker >= p->n_workers)
        atomic_store(&p->bad_worker, 1);
    else
        atomic_fetch_add_explicit(&p->per_worker[worker], i, memory_order_relaxed);
}

static void
pfor_check(struct pfor *p, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(atomic_load(&p->hits[i]), 1, "iteration %zu", i);
    for (unsigned w = 0; w < p->n_workers; w++)
        sum += atomic_load(&p->per_worker[w]);
    cr_assert_eq(sum, (uint64_t)n * (n - 1) / 2);
    cr_assert_not(atomic_load(&p->bad_worker));
}

#define PFOR_N 20000

Test(runtime_pool, parallel_for_from_outside_runs_each_index_once)
{
    sl_pool *pool = pool_make(3);
    struct sl_parallel par = sl_pool_parallel(pool);
    cr_assert_eq(sl_parallel_workers(&par), 3);
    struct pfor p = {.n_workers = 3};
    p.hits = calloc(PFOR_N, sizeof(*p.hits));
    p.per_worker = calloc(3, sizeof(*p.per_worker));
    cr_assert_eq(sl_parallel_run(&par, PFOR_N, pfor_body, &p), SL_OK);
    pfor_check(&p, PFOR_N);
    cr_assert_eq(sl_parallel_run(&par, 0, pfor_body, &p), SL_OK);
    free(p.hits);
    free(p.per_worker);
    sl_pool_destroy(pool);
}

/* A ranged body: each index of [b, e) once, and how many ranges came. */
static void
pfor_range_body(void *arg, size_t b, size_t e, unsigned worker)
{
    struct pfor *p = arg;
    if (b >= e)
        atomic_store(&p->bad_worker, 1); /* an empty range is a bug too */
    atomic_fetch_add_explicit(&p->n_ranges, 1, memory_order_relaxed);
    for (size_t i = b; i < e; i++)
        pfor_body(arg, i, worker);
}

/* An executor without ranges: sl_parallel_run_ranges goes through `run`. */
static sl_status
serial_run(void *ctx, size_t n, sl_parallel_body *body, void *arg)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        body(arg, i, 0);
    return SL_OK;
}

Test(runtime_pool, parallel_for_over_ranges_runs_each_index_once_in_few_ranges)
{
    sl_pool *pool = pool_make(3);
    struct sl_parallel par = sl_pool_parallel(pool);
    struct pfor p = {.n_workers = 3};
    p.hits = calloc(PFOR_N, sizeof(*p.hits));
    p.per_worker = calloc(3, sizeof(*p.per_worker));
    cr_assert_eq(sl_parallel_run_ranges(&par, PFOR_N, pfor_range_body, &p), SL_OK);
    pfor_check(&p, PFOR_N);
    /* Grains of n / (8 x workers) = 833: 25 ranges, not a call per index. */
    cr_assert_eq(atomic_load(&p.n_ranges), 25, "%d ranges", (int)atomic_load(&p.n_ranges));
    cr_assert_eq(sl_parallel_run_ranges(&par, 0, pfor_range_body, &p), SL_OK);
    cr_assert_eq(sl_parallel_run_ranges(&par, 5, NULL, &p), SL_EINVAL);

    /* No executor: one range on the caller; one without ranges: n of one. */
    struct pfor q = {.n_workers = 1};
    q.hits = calloc(PFOR_N, sizeof(*q.hits));
    q.per_worker = calloc(1, sizeof(*q.per_worker));
    cr_assert_eq(sl_parallel_run_ranges(NULL, PFOR_N, pfor_range_body, &q), SL_OK);
    pfor_check(&q, PFOR_N);
    cr_assert_eq(atomic_load(&q.n_ranges), 1);
    struct sl_parallel plain = {.ctx = NULL, .n_workers = 1, .run = serial_run};
    memset(q.hits, 0, PFOR_N * sizeof(*q.hits));
    atomic_store(&q.per_worker[0], 0);
    atomic_store(&q.n_ranges, 0);
    cr_assert_eq(sl_parallel_run_ranges(&plain, 100, pfor_range_body, &q), SL_OK);
    pfor_check(&q, 100);
    cr_assert_eq(atomic_load(&q.n_ranges), 100);
    free(q.hits);
    free(q.per_worker);
    free(p.hits);
    free(p.per_worker);
    sl_pool_destroy(pool);
}

struct nested {
    sl_pool *pool;
    struct pfor inner[8];
    _Atomic int status;
};

static void
nested_outer_body(void *arg, size_t i, unsigned worker)
{
    struct nested *n = arg;
    (void)worker;
    struct sl_parallel par = sl_pool_parallel(n->pool);
    if (sl_parallel_run(&par, 1000, pfor_body, &n->inner[i]) != SL_OK)
        atomic_store(&n->status, 1);
}

Test(runtime_pool, parallel_for_nested_inside_tasks_does_not_deadlock)
{
    for (unsigned n_workers = 1; n_workers <= 3; n_workers++) {
        sl_pool *pool = pool_make(n_workers);
        struct nested *n = calloc(1, sizeof(*n));
        n->pool = pool;
        for (int i = 0; i < 8; i++) {
            n->inner[i].n_workers = n_workers;
            n->inner[i].hits = calloc(1000, sizeof(*n->inner[i].hits));
            n->inner[i].per_worker = calloc(n_workers, sizeof(*n->inner[i].per_worker));
        }
        struct sl_parallel par = sl_pool_parallel(pool);
        cr_assert_eq(sl_parallel_run(&par, 8, nested_outer_body, n), SL_OK);
        cr_assert_eq(atomic_load(&n->status), 0);
        for (int i = 0; i < 8; i++) {
            pfor_check(&n->inner[i], 1000);
            free(n->inner[i].hits);
            free(n->inner[i].per_worker);
        }
        free(n);
        sl_pool_destroy(pool);
    }
}

/* ---- options ------------------------------------------------------------ */

Test(runtime_pool, create_rejects_bad_options_with_a_message)
{
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    struct sl_error err = SL_ERROR_INIT;
    o.deque_capacity = 3;
    cr_assert_null(sl_pool_create(&o, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "deque_capacity 3"), "%s", err.text);

    o = SL_POOL_OPTS_DEFAULT;
    err = SL_ERROR_INIT;
    o.inject_capacity = 2;
    cr_assert_null(sl_pool_create(&o, &err));
    cr_assert_not_null(strstr(err.text, "inject_capacity 2"), "%s", err.text);

    o = SL_POOL_OPTS_DEFAULT;
    err = SL_ERROR_INIT;
    o.n_workers = SL_POOL_MAX_WORKERS + 1;
    cr_assert_null(sl_pool_create(&o, &err));
    cr_assert_eq(err.code, SL_EINVAL);

    o = SL_POOL_OPTS_DEFAULT;
    err = SL_ERROR_INIT;
    o.topology = "pack:2 bogus:3";
    cr_assert_null(sl_pool_create(&o, &err));
    cr_assert_eq(err.code, SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "bogus"), "%s", err.text);
}

static void
env_clear(void)
{
    static const char *const vars[] = {
        "SLUICE_THREADS",         "SLUICE_TOPOLOGY",        "SLUICE_PIN",
        "SLUICE_DEQUE_CAPACITY",  "SLUICE_INJECT_CAPACITY", "SLUICE_SPIN_ROUNDS",
        "SLUICE_BUF_CACHE_BYTES",
    };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

Test(runtime_pool, opts_from_env_reads_every_variable)
{
    env_clear();
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    cr_assert_eq(sl_pool_opts_from_env(&o, NULL), SL_OK);
    cr_assert_eq(o.n_workers, 0, "nothing set: defaults stay");
    setenv("SLUICE_THREADS", "3", 1);
    setenv("SLUICE_TOPOLOGY", "pack:2 core:2 pu:1", 1);
    setenv("SLUICE_PIN", "spread", 1);
    setenv("SLUICE_DEQUE_CAPACITY", "16", 1);
    setenv("SLUICE_INJECT_CAPACITY", "64", 1);
    setenv("SLUICE_SPIN_ROUNDS", "5", 1);
    setenv("SLUICE_BUF_CACHE_BYTES", "3M", 1);
    cr_assert_eq(sl_pool_opts_from_env(&o, NULL), SL_OK);
    cr_assert_eq(o.n_workers, 3);
    cr_assert_eq(strcmp(o.topology, "pack:2 core:2 pu:1"), 0);
    cr_assert_eq(o.pin, SL_PIN_SPREAD);
    cr_assert_eq(o.deque_capacity, 16);
    cr_assert_eq(o.inject_capacity, 64);
    cr_assert_eq(o.spin_rounds, 5);
    cr_assert_eq(o.buf_cache_bytes, (size_t)3 << 20);
    setenv("SLUICE_BUF_CACHE_BYTES", "1.5G", 1);
    struct sl_pool_opts o2 = SL_POOL_OPTS_DEFAULT;
    cr_assert_eq(sl_pool_opts_from_env(&o2, NULL), SL_OK);
    cr_assert_eq(o2.buf_cache_bytes, (size_t)3 << 29, "a fraction, as on the command line");
    sl_pool *pool = sl_pool_create(&o, NULL);
    cr_assert_not_null(pool);
    cr_assert_eq(sl_pool_worker_count(pool), 3);
    sl_pool_destroy(pool);
    env_clear();
}

Test(runtime_pool, opts_from_env_names_the_bad_variable)
{
    static const char *const cases[][3] = {
        {"SLUICE_THREADS", "two", "SLUICE_THREADS=\"two\""},
        {"SLUICE_THREADS", "-1", "SLUICE_THREADS"},
        {"SLUICE_THREADS", "99999", "SLUICE_THREADS"},
        {"SLUICE_PIN", "sideways", "expected compact, spread or none"},
        {"SLUICE_DEQUE_CAPACITY", "48", "must be a power of two"},
        {"SLUICE_INJECT_CAPACITY", "1", "SLUICE_INJECT_CAPACITY"},
        {"SLUICE_SPIN_ROUNDS", "1x", "SLUICE_SPIN_ROUNDS"},
        {"SLUICE_BUF_CACHE_BYTES", "12Q", "SLUICE_BUF_CACHE_BYTES: \"12Q\" is not a size"},
        {"SLUICE_BUF_CACHE_BYTES", "-1", "SLUICE_BUF_CACHE_BYTES: \"-1\""},
        {"SLUICE_BUF_CACHE_BYTES", "99999999T", "SLUICE_BUF_CACHE_BYTES: \"99999999T\" exceeds"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        env_clear();
        setenv(cases[i][0], cases[i][1], 1);
        struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl_pool_opts_from_env(&o, &err), SL_EINVAL, "%s=%s", cases[i][0], cases[i][1]);
        cr_assert_not_null(strstr(err.text, cases[i][2]), "%s", err.text);
    }
    env_clear();
}

/* ---- stats --------------------------------------------------------------- */

/* What the test itself counts of a fork-join run on two workers. */
struct counted {
    sl_pool *pool;
    _Atomic uint64_t ran_on[2];     /* tasks each worker ran */
    _Atomic uint64_t spawned_by[2]; /* tasks each worker submitted */
    _Atomic uint64_t moved_to[2];   /* tasks a worker ran that the other submitted */
    _Atomic int root_worker;        /* who ran the task submitted from outside */
};

/* fib(n) whose calls record where they ran and who submitted them. */
struct counted_fib {
    struct counted *c;
    int n;
    int spawner; /* worker that submitted this call; -1 from outside */
    long result;
};

static void
counted_fib_task(void *arg, sl_status status)
{
    struct counted_fib *f = arg;
    struct counted *c = f->c;
    int me = sl_pool_worker_index(c->pool);
    if (me < 0 || me > 1 || status != SL_OK) {
        f->result = -1000000;
        return;
    }
    atomic_fetch_add(&c->ran_on[me], 1);
    if (f->spawner < 0)
        atomic_store(&c->root_worker, me);
    else if (f->spawner != me)
        atomic_fetch_add(&c->moved_to[me], 1);
    if (f->n < 2) {
        f->result = f->n;
        return;
    }
    struct counted_fib a = {c, f->n - 1, me, 0}, b = {c, f->n - 2, me, 0};
    struct sl_task_group g;
    sl_task_group_init(&g, c->pool);
    if (sl_task_group_submit(&g, counted_fib_task, &a) != SL_OK ||
        sl_task_group_submit(&g, counted_fib_task, &b) != SL_OK) {
        f->result = -1000000;
        return;
    }
    atomic_fetch_add(&c->spawned_by[me], 2);
    sl_status st = sl_task_group_wait(&g);
    f->result = st == SL_OK ? a.result + b.result : -1000000;
}

/* The counters against what the tasks themselves saw: each worker's tasks
 * run and spawned, the one injected task, and steals, which are exactly
 * the tasks run by the worker that did not submit them (a worker never
 * steals from itself, and no deque here fails to grow). */
Test(runtime_pool, stats_count_what_the_tasks_saw)
{
    sl_pool *pool = pool_make(2);
    struct counted c = {.pool = pool};
    atomic_init(&c.root_worker, -1);
    struct counted_fib f = {&c, 18, -1, 0};
    struct sl_task_group g;
    sl_task_group_init(&g, pool);
    cr_assert_eq(sl_task_group_submit(&g, counted_fib_task, &f), SL_OK);
    cr_assert_eq(sl_task_group_wait(&g), SL_OK);
    cr_assert_eq(f.result, 2584, "fib(18)");
    /* fib(18) makes 2 fib(19) - 1 = 8361 calls, the root included. */
    const uint64_t n_calls = 8361;
    struct sl_pool_stats all = pool_stats(pool), w[2];
    cr_assert_eq(sl_pool_worker_get_stats(pool, 0, &w[0], NULL), SL_OK);
    cr_assert_eq(sl_pool_worker_get_stats(pool, 1, &w[1], NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_pool_worker_get_stats(pool, 2, &w[1], &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "worker 2 out of range (2 workers)"));
    uint64_t moved = 0;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(w[i].n_tasks_run, atomic_load(&c.ran_on[i]), "worker %d ran", i);
        cr_assert_eq(w[i].n_spawned, atomic_load(&c.spawned_by[i]), "worker %d spawned", i);
        cr_assert_eq(w[i].n_steals, atomic_load(&c.moved_to[i]), "worker %d stole", i);
        cr_assert_eq(w[i].n_injected, i == atomic_load(&c.root_worker) ? 1u : 0u,
                     "worker %d took the root", i);
        cr_assert_eq(w[i].n_tasks_canceled, 0);
        moved += atomic_load(&c.moved_to[i]);
    }
    cr_assert_eq(all.n_tasks_run, n_calls);
    cr_assert_eq(all.n_spawned, n_calls - 1, "every call but the root came from a worker");
    cr_assert_eq(all.n_injected, 1, "the root, from outside");
    cr_assert_eq(all.n_inject_overflow, 0);
    cr_assert_eq(all.n_steals, moved);
    cr_assert_eq(all.n_continuations, 0, "no caller-provided tasks, so no successors");
    cr_assert_eq(all.n_tasks_canceled, 0);
    cr_assert_geq(all.n_task_slabs, 1);
    uint64_t by_distance = 0;
    for (int d = 0; d < SL_TOPO_DISTANCE_COUNT_; d++)
        by_distance += all.n_steals_by_distance[d];
    cr_assert_eq(by_distance, moved, "every steal has one distance class");
    sl_pool_destroy(pool);
}

/* ---- a deque that cannot grow ------------------------------------------- */

/* Once armed (`*ctx` nonzero), refuses to allocate a deque array larger
 * than two slots; task slabs are much larger and still succeed. */
static void *
no_growth_alloc(void *ctx, size_t n, size_t align)
{
    if (atomic_load((_Atomic int *)ctx) &&
        n > sizeof(struct sl__deque_array) + 2 * sizeof(struct sl_task *) &&
        n <= sizeof(struct sl__deque_array) + 1024 * sizeof(struct sl_task *))
        return NULL;
    size_t rounded = (n + align - 1) / align * align;
    return aligned_alloc(align < sizeof(void *) ? sizeof(void *) : align, rounded);
}

static void
no_growth_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    free(p);
}

struct inline_root {
    sl_pool *pool;
    struct sl_task_group children;
    struct tally tally;
    _Atomic int failed;
};

/* Submits 100 children and returns without waiting for them. */
static void
inline_root_task(void *arg, sl_status status)
{
    struct inline_root *r = arg;
    (void)status;
    for (int i = 0; i < 100; i++)
        if (sl_task_group_submit(&r->children, tally_task, &r->tally) != SL_OK)
            atomic_store(&r->failed, 1);
}

Test(runtime_pool, spawn_runs_inline_when_the_deque_cannot_grow)
{
    _Atomic int armed = 0;
    struct sl_allocator alloc = {.ctx = &armed, .alloc = no_growth_alloc, .free = no_growth_free};
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    o.n_workers = 1;
    o.deque_capacity = 2;
    o.alloc = &alloc;
    sl_pool *pool = sl_pool_create(&o, NULL);
    cr_assert_not_null(pool);
    atomic_store(&armed, 1);
    struct inline_root r = {.pool = pool};
    sl_task_group_init(&r.children, pool);
    struct sl_task_group g;
    sl_task_group_init(&g, pool);
    cr_assert_eq(sl_task_group_submit(&g, inline_root_task, &r), SL_OK);
    cr_assert_eq(sl_task_group_wait(&g), SL_OK);
    /* The children's group must end although most ran inside the root,
     * which did not wait for them. */
    cr_assert_eq(sl_task_group_wait(&r.children), SL_OK);
    cr_assert_eq(atomic_load(&r.failed), 0);
    cr_assert_eq(atomic_load(&r.tally.ok), 100);
    cr_assert_eq(pool_stats(pool).n_deque_grows, 0);
    sl_pool_destroy(pool);
}

Test(runtime_pool, group_refuses_more_than_its_limit_of_unfinished_tasks)
{
    sl_pool *pool = pool_make(1);
    struct sl_task_group g;
    sl_task_group_init(&g, pool);
    /* Pretend 2^29 tasks are unfinished (4 per task in the state word). */
    uint32_t full = (uint32_t)1 << 31;
    atomic_store(&g.state, full);
    struct tally tally = {0};
    cr_assert_eq(sl_task_group_submit(&g, tally_task, &tally), SL_EOVERFLOW);
    struct sl_task t;
    sl_task_init(&t, tally_task, &tally);
    cr_assert_eq(sl_task_group_submit_task(&g, &t), SL_EOVERFLOW);
    cr_assert_eq(atomic_load(&g.state), full, "a refused submit leaves the count as it was");
    atomic_store(&g.state, 0);
    cr_assert_eq(sl_task_group_submit_task(&g, &t), SL_OK, "the task was not consumed");
    cr_assert_eq(sl_task_group_wait(&g), SL_OK);
    cr_assert_eq(atomic_load(&tally.ok), 1);
    sl_pool_destroy(pool);
}
