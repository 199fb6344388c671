/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the runtime's single-writer counters and the
 * SL_STATS switch that compiles the scheduling counters away.  Open to the
 * runtime's tests.
 */
#ifndef SL_COUNTER_INTERNAL_H
#define SL_COUNTER_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

/* ---- counters ----------------------------------------------------------
 * Counters have one writer each (their worker), so an increment is a
 * relaxed load and store, not a locked add; readers sum relaxed loads.
 * Building with -DSL_STATS=0 compiles the scheduling counters away. */
#ifndef SL_STATS
#define SL_STATS 1
#endif

typedef _Atomic uint64_t sl__counter;

static inline void
sl__counter_add(sl__counter *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline uint64_t
sl__counter_get(const sl__counter *c)
{
    return atomic_load_explicit((sl__counter *)c, memory_order_relaxed);
}

#if SL_STATS
#define SL__STAT_ADD(c, n) sl__counter_add(&(c), (n))
#else
#define SL__STAT_ADD(c, n) ((void)0)
#endif

#endif /* SL_COUNTER_INTERNAL_H */
