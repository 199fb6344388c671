/* SPDX-License-Identifier: MIT */
/*
 * Stress of the Chase-Lev deque: one owner pushing and popping in bursts
 * and two thieves stealing, over 10^6 tasks, on deques that start with two
 * slots, so arrays grow (and are retired and reclaimed) hundreds of times
 * while thieves read them.  Every task must be taken exactly once.  Prints
 * the steals, aborted steals and last-element races seen.  Runs under
 * ThreadSanitizer in CI (the 'stress' suite).
 */
#include <sluice/task.h>

#include "plain_test.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "deque_internal.h"

TestSuite(runtime_deque_stress, .timeout = 120.0);

#define N_TASKS (1u << 20)
#define N_ROUNDS 64
#define PER_ROUND (N_TASKS / N_ROUNDS)
#define N_THIEVES 2

struct stress {
    struct sl__epoch epoch;
    struct sl__epoch_rec owner_rec;
    struct sl__epoch_rec thief_recs[N_THIEVES]; /* ck keeps records listed: they outlive use */
    struct sl__deque deques[N_ROUNDS];          /* one per round, each from 2 slots */
    _Atomic int round;                          /* deque thieves use; N_ROUNDS = stop */
    _Atomic uint8_t *taken;                     /* times each task was taken */
    _Atomic uint64_t n_stolen;
    _Atomic uint64_t n_aborts;
    _Atomic uint64_t n_popped;
    _Atomic uint64_t n_bad; /* tasks that decoded out of range */
};

struct thief {
    struct stress *s;
    struct sl__epoch_rec *rec;
};

static struct sl_task *
fake(uintptr_t i)
{
    return (struct sl_task *)(i + 1);
}

static void
take(struct stress *s, struct sl_task *t)
{
    /* No cr_assert here: thieves are not the test's thread. */
    uintptr_t i = (uintptr_t)t - 1;
    if (i < N_TASKS)
        atomic_fetch_add_explicit(&s->taken[i], 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&s->n_bad, 1, memory_order_relaxed);
}

static void *
thief_main(void *arg)
{
    struct thief *th = arg;
    struct stress *s = th->s;
    struct sl__epoch_rec *rec = th->rec;
    uint64_t stolen = 0, aborts = 0;
    unsigned idle = 0;
    for (;;) {
        int r = atomic_load_explicit(&s->round, memory_order_acquire);
        if (r >= N_ROUNDS)
            break;
        struct sl_task *t = NULL;
        sl__epoch_enter(rec);
        enum sl__steal res = sl__deque_steal(&s->deques[r], &t);
        sl__epoch_leave(rec);
        if (res == SL__STEAL_OK) {
            take(s, t);
            stolen++;
            idle = 0;
        } else if (res == SL__STEAL_ABORT) {
            aborts++;
        } else if (++idle % 64 == 0) {
            sched_yield();
        }
    }
    atomic_fetch_add(&s->n_stolen, stolen);
    atomic_fetch_add(&s->n_aborts, aborts);
    return NULL;
}

/* One round: push PER_ROUND tasks in bursts, popping some after each
 * burst, then drain; thieves steal throughout. */
static void
owner_round(struct stress *s, int r, uint64_t *rng)
{
    struct sl__deque *dq = &s->deques[r];
    uintptr_t next = (uintptr_t)r * PER_ROUND, end = next + PER_ROUND;
    uint64_t popped = 0;
    while (next < end) {
        *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned burst = 1 + (unsigned)((*rng >> 33) % 1024);
        unsigned pops = (unsigned)((*rng >> 20) % (burst + 1));
        for (unsigned i = 0; i < burst && next < end; i++)
            cr_assert_eq(sl__deque_push_owner(dq, fake(next++)), SL_OK);
        for (unsigned i = 0; i < pops; i++) {
            struct sl_task *t = sl__deque_pop_owner(dq);
            if (t == NULL)
                break;
            take(s, t);
            popped++;
        }
    }
    struct sl_task *t;
    while ((t = sl__deque_pop_owner(dq)) != NULL) {
        take(s, t);
        popped++;
    }
    atomic_fetch_add(&s->n_popped, popped);
}

Test(runtime_deque_stress, million_tasks_each_taken_once_with_growth)
{
    struct stress *s = calloc(1, sizeof(*s));
    cr_assert_not_null(s);
    s->taken = calloc(N_TASKS, sizeof(*s->taken));
    cr_assert_not_null(s->taken);
    sl__ck_epoch_init(&s->epoch);
    sl__ck_epoch_register(&s->epoch, &s->owner_rec);
    for (int r = 0; r < N_ROUNDS; r++)
        cr_assert_eq(sl__deque_init(&s->deques[r], 2, NULL, &s->owner_rec), SL_OK);

    pthread_t thieves[N_THIEVES];
    struct thief args[N_THIEVES];
    for (int i = 0; i < N_THIEVES; i++) {
        sl__ck_epoch_register(&s->epoch, &s->thief_recs[i]);
        args[i] = (struct thief){.s = s, .rec = &s->thief_recs[i]};
        cr_assert_eq(pthread_create(&thieves[i], NULL, thief_main, &args[i]), 0);
    }
    uint64_t rng = 42;
    for (int r = 0; r < N_ROUNDS; r++) {
        owner_round(s, r, &rng);
        /* The drain emptied deque r; move the thieves on. */
        atomic_store_explicit(&s->round, r + 1, memory_order_release);
    }
    for (int i = 0; i < N_THIEVES; i++)
        pthread_join(thieves[i], NULL);

    uint64_t grows = 0, races = 0, lost = 0;
    for (int r = 0; r < N_ROUNDS; r++) {
        grows += sl__counter_get(&s->deques[r].n_grows);
        races += sl__counter_get(&s->deques[r].n_last_races);
        lost += sl__counter_get(&s->deques[r].n_last_races_lost);
    }
    /* Every retired array is reclaimed at the latest when its deque ends. */
    for (int r = 0; r < N_ROUNDS; r++)
        sl__deque_fini(&s->deques[r]);
    uint64_t reclaimed = 0;
    for (int r = 0; r < N_ROUNDS; r++)
        reclaimed += sl__counter_get(&s->deques[r].n_reclaimed);

    uint64_t n_stolen = atomic_load(&s->n_stolen), n_popped = atomic_load(&s->n_popped);
    printf("deque stress: %u tasks, %lu stolen, %lu popped, %lu steal aborts, "
           "%lu last-element races (%lu lost to thieves), %lu grows, %lu arrays reclaimed\n",
           N_TASKS, (unsigned long)n_stolen, (unsigned long)n_popped,
           (unsigned long)atomic_load(&s->n_aborts), (unsigned long)races, (unsigned long)lost,
           (unsigned long)grows, (unsigned long)reclaimed);
    cr_assert_eq(atomic_load(&s->n_bad), 0);
    cr_assert_eq(n_stolen + n_popped, N_TASKS);
    for (uint32_t i = 0; i < N_TASKS; i++) {
        unsigned n = atomic_load_explicit(&s->taken[i], memory_order_relaxed);
        cr_assert_eq(n, 1, "task %u taken %u times", i, n);
    }
    cr_assert_geq(grows, N_ROUNDS * 5, "each round's deque grows from 2 slots");
    cr_assert_eq(reclaimed, grows);
    cr_assert_gt(races, 0);
    for (int i = 0; i < N_THIEVES; i++)
        sl__ck_epoch_unregister(&s->thief_recs[i]);
    sl__ck_epoch_unregister(&s->owner_rec);
    free(s->taken);
    free(s);
}
