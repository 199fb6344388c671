/* SPDX-License-Identifier: MIT */
/*
 * The portable 128-by-64-bit division behind sl__u128_divmod, used where
 * the compiler has no 128-bit integer type (and by the tests everywhere).
 */
#include "u128_internal.h"

uint64_t
sl__u128_divmod_portable(uint64_t hi, uint64_t lo, uint64_t d, uint64_t *rem)
{
    /* Restoring division, one quotient bit per step.  Invariant: r < d, and
     * r is the remainder of the bits consumed so far; hi < d makes it hold
     * at the start and the quotient fit in 64 bits. */
    uint64_t r = hi, q = 0;
    for (int i = 63; i >= 0; i--) {
        const uint64_t top = r >> 63; /* the bit that 2r would lose */
        r = (r << 1) | ((lo >> i) & 1);
        q <<= 1;
        if (top != 0 || r >= d) {
            r -= d; /* wraps back into range when top was set */
            q |= 1;
        }
    }
    *rem = r;
    return q;
}
