/* SPDX-License-Identifier: MIT */
/*
 * Parking: the event count loses no wake-up (a waiter and a notifier that
 * race many times never leave the waiter asleep with work pending), an idle
 * pool uses (almost) no CPU, and a submission from outside wakes a parked
 * worker at once.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "park_internal.h"
#include "plain_test.h"
#include "pool_test.h"

TestSuite(runtime_park, .timeout = 30.0);

static double
cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double
wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#define EC_ROUNDS 20000

struct ec_race {
    struct sl__ec ec;
    _Atomic uint32_t published; /* items the producer made available */
    _Atomic uint32_t sleeps;    /* times the consumer actually waited */
};

static void *
ec_producer(void *arg)
{
    struct ec_race *r = arg;
    for (uint32_t i = 1; i <= EC_ROUNDS; i++) {
        atomic_store_explicit(&r->published, i, memory_order_relaxed);
        /* The notifier's half of the protocol (park.c). */
        atomic_thread_fence(memory_order_seq_cst);
        sl__ec_notify(&r->ec, false);
        if (i % 64 == 0)
            sched_yield();
    }
    return NULL;
}

Test(runtime_park, event_count_loses_no_wakeup)
{
    struct ec_race r;
    sl__ec_init(&r.ec);
    atomic_init(&r.published, 0);
    atomic_init(&r.sleeps, 0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, ec_producer, &r), 0);
    /* Consume every item; a lost wake-up would hang here (and time out). */
    uint32_t seen = 0;
    while (seen < EC_ROUNDS) {
        uint32_t avail = atomic_load_explicit(&r.published, memory_order_relaxed);
        if (avail > seen) {
            seen = avail;
            continue;
        }
        uint32_t key = sl__ec_prepare(&r.ec);
        if (atomic_load_explicit(&r.published, memory_order_relaxed) > seen) {
            sl__ec_cancel(&r.ec);
            continue;
        }
        atomic_fetch_add(&r.sleeps, 1);
        sl__ec_wait(&r.ec, key);
    }
    pthread_join(th, NULL);
    cr_assert_eq(seen, EC_ROUNDS);
    cr_assert_eq(atomic_load(&r.ec.n_waiters), 0, "every waiter accounted for");
}

struct flag {
    _Atomic int set;
    _Atomic double at;
};

static void
flag_task(void *arg, sl_status status)
{
    struct flag *f = arg;
    (void)status;
    atomic_store(&f->at, wall_seconds());
    atomic_store_explicit(&f->set, 1, memory_order_release);
}

Test(runtime_park, idle_pool_sleeps_and_a_submission_wakes_it)
{
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    o.n_workers = 2;
    sl_pool *pool = sl_pool_create(&o, NULL);
    cr_assert_not_null(pool);
    /* Some work first, so the workers go idle from busy. */
    struct flag warm = {0};
    cr_assert_eq(sl_pool_submit(pool, flag_task, &warm), SL_OK);
    while (!atomic_load_explicit(&warm.set, memory_order_acquire))
        sched_yield();
    /* Let them spin out and park. */
    double deadline = wall_seconds() + 5.0;
    while (pool_stats(pool).n_parks < 2 && wall_seconds() < deadline)
        sleep_ms(10);
    cr_assert_geq(pool_stats(pool).n_parks, 2, "both workers park when idle");

    double cpu0 = cpu_seconds(), wall0 = wall_seconds();
    sleep_ms(1000);
    double cpu = cpu_seconds() - cpu0, wall = wall_seconds() - wall0;
    printf("idle pool: %.6f s of CPU in %.3f s\n", cpu, wall);
    cr_assert_lt(cpu, 0.02, "idle pool used %.4f s of CPU in %.2f s", cpu, wall);

    /* A submission from outside wakes a parked worker. */
    struct flag f = {0};
    double t0 = wall_seconds();
    cr_assert_eq(sl_pool_submit(pool, flag_task, &f), SL_OK);
    while (!atomic_load_explicit(&f.set, memory_order_acquire) && wall_seconds() < t0 + 5.0)
        sleep_ms(1);
    cr_assert(atomic_load_explicit(&f.set, memory_order_acquire), "no worker woke");
    double latency = atomic_load(&f.at) - t0;
    printf("a submission woke a parked worker in %.6f s\n", latency);
    cr_assert_lt(latency, 0.5, "woke after %.3f s", latency);
    sl_pool_destroy(pool);
}

Test(runtime_park, many_parked_workers_all_wake_for_destroy)
{
    /* 16 workers on any host: they park, and destroy wakes and joins them. */
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    o.topology = "pack:2 numa:2 core:4 pu:1";
    o.spin_rounds = 0;
    sl_pool *pool = sl_pool_create(&o, NULL);
    cr_assert_not_null(pool);
    double deadline = wall_seconds() + 5.0;
    while (pool_stats(pool).n_parks < 16 && wall_seconds() < deadline)
        sleep_ms(5);
    cr_assert_geq(pool_stats(pool).n_parks, 16);
    /* Wake them all with work, then let them park again. */
    struct flag f[32] = {0};
    for (int i = 0; i < 32; i++)
        cr_assert_eq(sl_pool_submit(pool, flag_task, &f[i]), SL_OK);
    for (int i = 0; i < 32; i++)
        while (!atomic_load_explicit(&f[i].set, memory_order_acquire))
            sched_yield();
    sl_pool_destroy(pool);
}
