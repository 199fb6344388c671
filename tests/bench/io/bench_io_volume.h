/* SPDX-License-Identifier: MIT */
/*
 * The io benchmarks' test volume: a 512^3 uint16 array of smooth
 * image-like data (the peers' b4 generator: sums of sines plus gaussian
 * noise, sigma 40), and its split into contiguous chunks.
 */
#ifndef SL_BENCH_IO_VOLUME_H
#define SL_BENCH_IO_VOLUME_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N 512
#define TOTAL ((size_t)N * N * N)
#define BYTES (TOTAL * 2)

/* A fast deterministic stream of standard normals from a table. */
static float normals[1 << 16];

static inline void
make_normals(void)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < (1 << 16); i += 2) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u1 = ((double)(s >> 11) + 1) / 9007199254740993.0;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u2 = (double)(s >> 11) / 9007199254740992.0;
        double r = sqrt(-2 * log(u1));
        normals[i] = (float)(r * cos(2 * M_PI * u2));
        normals[i + 1] = (float)(r * sin(2 * M_PI * u2));
    }
}

/* 3000 + 1200 sin(x/37) cos(y/53) + 800 sin(z/21 + x/90)
 *      + 500 cos((x+y)/17 + z/29) + N(0, 40), as uint16. */
static inline void
make_volume(uint16_t *v)
{
    make_normals();
    static float sx37[N], cy53[N], sz21[N], cz21[N], cx90[N], sx90[N], cz29[N], sz29[N];
    static float cxy[2 * N], sxy[2 * N];
    for (int i = 0; i < N; i++) {
        sx37[i] = sinf((float)i / 37), cy53[i] = cosf((float)i / 53);
        sz21[i] = sinf((float)i / 21), cz21[i] = cosf((float)i / 21);
        cx90[i] = cosf((float)i / 90), sx90[i] = sinf((float)i / 90);
        cz29[i] = cosf((float)i / 29), sz29[i] = sinf((float)i / 29);
    }
    for (int i = 0; i < 2 * N; i++)
        cxy[i] = cosf((float)i / 17), sxy[i] = sinf((float)i / 17);
    uint32_t h = 12345;
    for (size_t z = 0; z < N; z++)
        for (size_t y = 0; y < N; y++) {
            uint16_t *row = v + (z * N + y) * N;
            for (size_t x = 0; x < N; x++) {
                h ^= h << 13, h ^= h >> 17, h ^= h << 5;
                float f = 3000 + 1200 * sx37[x] * cy53[y] +
                          800 * (sz21[z] * cx90[x] + cz21[z] * sx90[x]) +
                          500 * (cxy[x + y] * cz29[z] - sxy[x + y] * sz29[z]) +
                          40 * normals[h & 0xffff];
                row[x] = (uint16_t)(f < 0 ? 0 : f > 65535 ? 65535 : f + 0.5f);
            }
        }
}

/* The chunks of edge `c` as contiguous buffers, back to back. */
static inline uint16_t *
split_chunks(const uint16_t *v, size_t c)
{
    uint16_t *out = malloc(BYTES);
    size_t nc = N / c, k = 0;
    for (size_t cz = 0; cz < nc; cz++)
        for (size_t cy = 0; cy < nc; cy++)
            for (size_t cx = 0; cx < nc; cx++)
                for (size_t z = 0; z < c; z++)
                    for (size_t y = 0; y < c; y++, k += c)
                        memcpy(out + k, v + ((cz * c + z) * N + cy * c + y) * N + cx * c, c * 2);
    return out;
}

#endif /* SL_BENCH_IO_VOLUME_H */
