/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the event count workers park on and of the futex
 * wrappers (park.c).  Open to the runtime's tests.
 */
#ifndef SL_PARK_INTERNAL_H
#define SL_PARK_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <sluice/common.h>

/* ---- event count (park.c) -----------------------------------------------
 * Workers park here.  A waiter announces itself (prepare), checks for work
 * once more, then sleeps unless the epoch moved; a notifier publishes work,
 * then bumps the epoch if anyone announced.  See park.c. */
struct sl__ec {
    _Alignas(SL_CACHELINE) _Atomic uint32_t epoch; /* futex word; bumped per notify */
    _Atomic uint32_t n_waiters;                    /* announced waiters */
};

void sl__ec_init(struct sl__ec *ec);
uint32_t sl__ec_prepare(struct sl__ec *ec);
void sl__ec_cancel(struct sl__ec *ec);
void sl__ec_wait(struct sl__ec *ec, uint32_t key);
bool sl__ec_notify(struct sl__ec *ec, bool all);
bool sl__ec_has_waiters(struct sl__ec *ec);

/* futex wrappers (park.c) */
void sl__futex_wait(_Atomic uint32_t *word, uint32_t expected);
void sl__futex_wake(_Atomic uint32_t *word, int n);

#endif /* SL_PARK_INTERNAL_H */
