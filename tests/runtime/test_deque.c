/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the Chase-Lev deque on one thread: order at each end,
 * emptiness, growth from a tiny array with wrapped indices, reclamation of
 * outgrown arrays, and argument checks.  The concurrent behaviour is in
 * test_deque_stress.c.
 */
#include <sluice/task.h>

#include "plain_test.h"
#include <stdint.h>

#include "deque_internal.h"

TestSuite(runtime_deque, .timeout = 10.0);

/* Tasks are never dereferenced by the deque: encode an index as a pointer. */
static struct sl_task *
fake(uintptr_t i)
{
    return (struct sl_task *)(i + 1);
}

static uintptr_t
unfake(struct sl_task *t)
{
    return (uintptr_t)t - 1;
}

struct fixture {
    struct sl__epoch epoch;
    struct sl__epoch_rec rec;
    struct sl__epoch_rec thief; /* ck keeps records listed: they outlive use */
    struct sl__deque dq;
};

static void
fixture_init(struct fixture *f, int64_t capacity)
{
    sl__ck_epoch_init(&f->epoch);
    sl__ck_epoch_register(&f->epoch, &f->rec);
    cr_assert_eq(sl__deque_init(&f->dq, capacity, NULL, &f->rec), SL_OK);
}

static void
fixture_fini(struct fixture *f)
{
    sl__deque_fini(&f->dq);
    sl__ck_epoch_unregister(&f->rec);
}

Test(runtime_deque, owner_pops_lifo)
{
    struct fixture f;
    fixture_init(&f, 8);
    for (uintptr_t i = 0; i < 5; i++)
        cr_assert_eq(sl__deque_push_owner(&f.dq, fake(i)), SL_OK);
    for (uintptr_t i = 5; i-- > 0;)
        cr_assert_eq(unfake(sl__deque_pop_owner(&f.dq)), i);
    cr_assert_null(sl__deque_pop_owner(&f.dq));
    cr_assert_null(sl__deque_pop_owner(&f.dq), "popping an empty deque twice stays empty");
    fixture_fini(&f);
}

Test(runtime_deque, thief_steals_fifo)
{
    struct fixture f;
    fixture_init(&f, 8);
    for (uintptr_t i = 0; i < 5; i++)
        cr_assert_eq(sl__deque_push_owner(&f.dq, fake(i)), SL_OK);
    for (uintptr_t i = 0; i < 5; i++) {
        struct sl_task *t = NULL;
        cr_assert_eq(sl__deque_steal(&f.dq, &t), SL__STEAL_OK);
        cr_assert_eq(unfake(t), i);
    }
    struct sl_task *t = NULL;
    cr_assert_eq(sl__deque_steal(&f.dq, &t), SL__STEAL_EMPTY);
    cr_assert(sl__deque_looks_empty(&f.dq));
    fixture_fini(&f);
}

Test(runtime_deque, both_ends_meet_in_the_middle)
{
    struct fixture f;
    fixture_init(&f, 4);
    for (uintptr_t i = 0; i < 4; i++)
        cr_assert_eq(sl__deque_push_owner(&f.dq, fake(i)), SL_OK);
    struct sl_task *t = NULL;
    cr_assert_eq(sl__deque_steal(&f.dq, &t), SL__STEAL_OK);
    cr_assert_eq(unfake(t), 0);
    cr_assert_eq(unfake(sl__deque_pop_owner(&f.dq)), 3);
    cr_assert_eq(sl__deque_steal(&f.dq, &t), SL__STEAL_OK);
    cr_assert_eq(unfake(t), 1);
    /* One task left: the owner's pop takes the last-element path. */
    cr_assert_eq(unfake(sl__deque_pop_owner(&f.dq)), 2);
    cr_assert_null(sl__deque_pop_owner(&f.dq));
    cr_assert_eq(sl__deque_steal(&f.dq, &t), SL__STEAL_EMPTY);
    cr_assert_eq(sl__counter_get(&f.dq.n_last_races), 1);
    cr_assert_eq(sl__counter_get(&f.dq.n_last_races_lost), 0);
    fixture_fini(&f);
}

Test(runtime_deque, grows_from_two_slots_and_keeps_order)
{
    struct fixture f;
    fixture_init(&f, 2);
    /* Steal a few first so that indices no longer start at slot 0. */
    for (uintptr_t i = 0; i < 3; i++)
        cr_assert_eq(sl__deque_push_owner(&f.dq, fake(i)), SL_OK);
    struct sl_task *t = NULL;
    for (uintptr_t i = 0; i < 3; i++) {
        cr_assert_eq(sl__deque_steal(&f.dq, &t), SL__STEAL_OK);
        cr_assert_eq(unfake(t), i);
    }
    for (uintptr_t i = 3; i < 1003; i++)
        cr_assert_eq(sl__deque_push_owner(&f.dq, fake(i)), SL_OK);
    cr_assert_eq(sl__deque_capacity(&f.dq), 1024);
    uint64_t grows = sl__counter_get(&f.dq.n_grows);
    cr_assert_geq(grows, 9, "2 -> 1024 takes 9 doublings, saw %lu", (unsigned long)grows);
    /* FIFO from the top, LIFO from the bottom, nothing lost in the copies. */
    for (uintptr_t i = 3; i < 503; i++) {
        cr_assert_eq(sl__deque_steal(&f.dq, &t), SL__STEAL_OK);
        cr_assert_eq(unfake(t), i);
    }
    for (uintptr_t i = 1003; i-- > 503;)
        cr_assert_eq(unfake(sl__deque_pop_owner(&f.dq)), i);
    cr_assert_null(sl__deque_pop_owner(&f.dq));
    /* With no thief in a section, every outgrown array can be freed. */
    sl__ck_epoch_reclaim(&f.rec);
    cr_assert_eq(sl__counter_get(&f.dq.n_reclaimed), grows);
    fixture_fini(&f);
}

Test(runtime_deque, indices_wrap_without_growing)
{
    struct fixture f;
    fixture_init(&f, 4);
    struct sl_task *t = NULL;
    for (uintptr_t i = 0; i < 10000; i++) {
        cr_assert_eq(sl__deque_push_owner(&f.dq, fake(2 * i)), SL_OK);
        cr_assert_eq(sl__deque_push_owner(&f.dq, fake(2 * i + 1)), SL_OK);
        cr_assert_eq(sl__deque_steal(&f.dq, &t), SL__STEAL_OK);
        cr_assert_eq(unfake(t), 2 * i);
        cr_assert_eq(unfake(sl__deque_pop_owner(&f.dq)), 2 * i + 1);
    }
    cr_assert_eq(sl__deque_capacity(&f.dq), 4);
    cr_assert_eq(sl__counter_get(&f.dq.n_grows), 0);
    fixture_fini(&f);
}

Test(runtime_deque, steal_in_a_section_defers_reclamation)
{
    struct fixture f;
    fixture_init(&f, 2);
    struct sl__epoch_rec *thief = &f.thief;
    sl__ck_epoch_register(&f.epoch, thief);
    /* A thief inside a section holds the array it may have loaded... */
    sl__epoch_enter(thief);
    for (uintptr_t i = 0; i < 3; i++)
        cr_assert_eq(sl__deque_push_owner(&f.dq, fake(i)), SL_OK);
    cr_assert_eq(sl__counter_get(&f.dq.n_grows), 1);
    sl__ck_epoch_poll(&f.rec);
    sl__ck_epoch_poll(&f.rec);
    cr_assert_eq(sl__counter_get(&f.dq.n_reclaimed), 0, "freed while a thief could read it");
    /* ...and once it leaves, polling frees it. */
    sl__epoch_leave(thief);
    for (int i = 0; i < 8 && sl__counter_get(&f.dq.n_reclaimed) == 0; i++)
        sl__ck_epoch_poll(&f.rec);
    cr_assert_eq(sl__counter_get(&f.dq.n_reclaimed), 1);
    sl__ck_epoch_unregister(thief);
    fixture_fini(&f);
}

Test(runtime_deque, init_rejects_bad_capacities)
{
    struct sl__epoch epoch;
    struct sl__epoch_rec rec;
    struct sl__deque dq;
    sl__ck_epoch_init(&epoch);
    sl__ck_epoch_register(&epoch, &rec);
    cr_assert_eq(sl__deque_init(&dq, 0, NULL, &rec), SL_EINVAL);
    cr_assert_eq(sl__deque_init(&dq, 1, NULL, &rec), SL_EINVAL);
    cr_assert_eq(sl__deque_init(&dq, 3, NULL, &rec), SL_EINVAL);
    cr_assert_eq(sl__deque_init(&dq, (int64_t)1 << 33, NULL, &rec), SL_EINVAL);
    sl__ck_epoch_unregister(&rec);
}
