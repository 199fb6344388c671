/* SPDX-License-Identifier: MIT */
/*
 * Parking: an event count on a Linux futex, where idle workers sleep until
 * work arrives, and the futex calls that task groups use for sleeping
 * waiters.
 *
 * DESIGN
 * A waiter calls sl__ec_prepare (announce itself and read the epoch), looks
 * for work once more, and then either sl__ec_cancel (found some) or
 * sl__ec_wait (sleep while the epoch is unchanged).  A notifier publishes
 * work, then calls sl__ec_notify, which bumps the epoch and wakes sleepers
 * only when someone announced.  No wake-up is lost: the waiter's announce
 * (a seq_cst read-modify-write) comes before its last look for work, and the
 * notifier's publish comes before its seq_cst look at `n_waiters`; in the
 * single total order of seq_cst operations one of the two sees the other, so
 * either the waiter finds the work or the notifier bumps the epoch, and a
 * bumped epoch makes the futex wait return at once.  The epoch is read in
 * prepare, before the last look, so a bump after that look always differs
 * from the key.
 *
 * So a notifier must issue a seq_cst fence between publishing and
 * sl__ec_notify; sl__pool_schedule does.
 */
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "park_internal.h"

void
sl__futex_wait(_Atomic uint32_t *word, uint32_t expected)
{
    /* The kernel compares *word with `expected` atomically with going to
     * sleep; EAGAIN (changed), EINTR and spurious returns all mean "look
     * again", which every caller does. */
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void
sl__futex_wake(_Atomic uint32_t *word, int n)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

void
sl__ec_init(struct sl__ec *ec)
{
    atomic_init(&ec->epoch, 0);
    atomic_init(&ec->n_waiters, 0);
}

uint32_t
sl__ec_prepare(struct sl__ec *ec)
{
    /* Seq_cst: pairs with the seq_cst load of `n_waiters` in sl__ec_notify
     * (see DESIGN): this announce is ordered before the caller's last look
     * for work. */
    atomic_fetch_add_explicit(&ec->n_waiters, 1, memory_order_seq_cst);
    /* Seq_cst fence: pairs with the notifier's seq_cst fence, so that the
     * caller's last look (plain acquire loads of deques and queues) cannot
     * move before the announce.  The store-buffering pattern with a fence on
     * each side is what C11 forbids.  Costs nothing that matters: we are
     * about to sleep. */
    atomic_thread_fence(memory_order_seq_cst);
    /* Read after the announce and before the last look, so a notify that
     * follows the look bumps the epoch past this key. */
    return atomic_load_explicit(&ec->epoch, memory_order_seq_cst);
}

void
sl__ec_cancel(struct sl__ec *ec)
{
    /* Relaxed: only notifiers read the count, and an extra notify is harmless. */
    atomic_fetch_sub_explicit(&ec->n_waiters, 1, memory_order_relaxed);
}

void
sl__ec_wait(struct sl__ec *ec, uint32_t key)
{
    /* Acquire: pairs with the release of the epoch bump in sl__ec_notify. */
    while (atomic_load_explicit(&ec->epoch, memory_order_acquire) == key)
        sl__futex_wait(&ec->epoch, key);
    atomic_fetch_sub_explicit(&ec->n_waiters, 1, memory_order_relaxed);
}

bool
sl__ec_has_waiters(struct sl__ec *ec)
{
    /* Relaxed: a hint for spawns (see sl__pool_spawn). */
    return atomic_load_explicit(&ec->n_waiters, memory_order_relaxed) != 0;
}

bool
sl__ec_notify(struct sl__ec *ec, bool all)
{
    /* Seq_cst: pairs with the announce in sl__ec_prepare (see DESIGN). */
    if (atomic_load_explicit(&ec->n_waiters, memory_order_seq_cst) == 0)
        return false;
    /* Release: pairs with the acquire load in sl__ec_wait. */
    atomic_fetch_add_explicit(&ec->epoch, 1, memory_order_release);
    sl__futex_wake(&ec->epoch, all ? INT_MAX : 1);
    return true;
}
