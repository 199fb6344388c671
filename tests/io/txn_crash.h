/* SPDX-License-Identifier: MIT */
/*
 * What the crash test's child commits, generation after generation, and
 * what its parent checks against: a [48, 48] uint16 array of [8, 8] inner
 * chunks in [16, 16] shards (3 x 3 shards of 4 chunks), zstd and crc32c.
 * Generation g writes, by g % 4: every chunk whole (every shard complete,
 * written when staged); the even chunks whole; a region cutting through
 * chunks (partial chunks, merged at commit); the odd chunks whole.  Every
 * element written by g holds sl_crash_value(g, y, x), never the fill
 * value, so each shard's contents name the generation of each element.
 */
#ifndef SL_TEST_TXN_CRASH_H
#define SL_TEST_TXN_CRASH_H

#include <stdint.h>

#define SL_CRASH_N 48     /* array extent per dimension */
#define SL_CRASH_CHUNK 8  /* inner chunk extent */
#define SL_CRASH_SHARD 16 /* shard extent */
#define SL_CRASH_CHUNKS (SL_CRASH_N / SL_CRASH_CHUNK)
#define SL_CRASH_SHARDS (SL_CRASH_N / SL_CRASH_SHARD)

static inline uint16_t
sl_crash_value(uint64_t g, uint64_t y, uint64_t x)
{
    return (uint16_t)((g * 2654435761u + y * 131 + x * 7) | 1);
}

/* One box generation g writes: [y0, y1) x [x0, x1). */
typedef void sl_crash_box_fn(void *arg, uint64_t y0, uint64_t y1, uint64_t x0, uint64_t x1);

/* Call `fn` for every box generation `g` writes, in order. */
static inline void
sl_crash_plan(uint64_t g, sl_crash_box_fn *fn, void *arg)
{
    if (g % 4 == 2) {
        uint64_t x0 = (g * 7) % 40, y0 = (g * 3) % 30;
        fn(arg, y0, y0 + 17, x0, x0 + 5);
        return;
    }
    for (uint64_t cy = 0; cy < SL_CRASH_CHUNKS; cy++)
        for (uint64_t cx = 0; cx < SL_CRASH_CHUNKS; cx++) {
            uint64_t parity = (cy + cx) % 2;
            if (g % 4 == 0 || (g % 4 == 1 && parity == 0) || (g % 4 == 3 && parity == 1))
                fn(arg, cy * SL_CRASH_CHUNK, (cy + 1) * SL_CRASH_CHUNK, cx * SL_CRASH_CHUNK,
                   (cx + 1) * SL_CRASH_CHUNK);
        }
}

#endif /* SL_TEST_TXN_CRASH_H */
