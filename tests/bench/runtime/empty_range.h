/* SPDX-License-Identifier: MIT */
/*
 * The body of every parallel loop of bench_runtime_sched (`pfor`):
 * iterations [begin, end) of nothing, one function compiled alike for
 * sluice and both peers, so the loops differ only in how each runtime
 * splits and joins them.  Left to the compiler, OpenMP's outlined loop
 * came out two iterations per taken branch and sluice's range body one,
 * and a one-cycle loop's speed also moves with where it sits in a 64-byte
 * line (the same function ran 2x slower in two binaries than in the
 * third): aligned to 64 bytes, the three copies are the same bytes at the
 * same offsets (docs/BENCHMARKS.md, runtime_sched, stop 31).
 */
#ifndef SL_BENCH_EMPTY_RANGE_H
#define SL_BENCH_EMPTY_RANGE_H

static __attribute__((noinline, aligned(64))) void
sl_bench_empty_range(long begin, long end)
{
    for (long i = begin; i < end; i++)
        __asm__ volatile("");
}

#endif /* SL_BENCH_EMPTY_RANGE_H */
