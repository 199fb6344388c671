/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the ops module's 128-bit unsigned sums (u128.c):
 * the integer mean kernels accumulate in them.  Open to the ops tests.
 */
#ifndef SL_U128_INTERNAL_H
#define SL_U128_INTERNAL_H

#include <stdint.h>

/* ---- 128-bit unsigned sums ------------------------------------------------ */

/* An unsigned 128-bit sum, kept portable (no __int128 in the API). */
struct sl__u128 {
    uint64_t lo; /* low 64 bits */
    uint64_t hi; /* high 64 bits */
};

/* a += v. */
static inline void
sl__u128_add(struct sl__u128 *a, uint64_t v)
{
    a->lo += v;
    a->hi += a->lo < v;
}

/*
 * (hi:lo) / d by shift and subtract; needs hi < d, so the quotient fits in
 * 64 bits.  Stores the remainder in *rem.  Portable fallback of
 * sl__u128_divmod, public to the tests.
 */
uint64_t sl__u128_divmod_portable(uint64_t hi, uint64_t lo, uint64_t d, uint64_t *rem);

/* (hi:lo) / d with remainder; needs d > 0 and hi < d. */
static inline uint64_t
sl__u128_divmod(struct sl__u128 a, uint64_t d, uint64_t *rem)
{
    if (a.hi == 0) {
        *rem = a.lo % d;
        return a.lo / d;
    }
#if defined(__SIZEOF_INT128__)
    __extension__ unsigned __int128 n = ((unsigned __int128)a.hi << 64) | a.lo;
    *rem = (uint64_t)(n % d);
    return (uint64_t)(n / d);
#else
    return sl__u128_divmod_portable(a.hi, a.lo, d, rem);
#endif
}

#endif /* SL_U128_INTERNAL_H */
