/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 as FIPS 180-4 defines it: 64-byte blocks, big-endian words, the
 * message padded with 0x80, zeros and its bit length.  The portable block
 * function is written for clarity and runs at 150-250 MB/s; on x86-64
 * CPUs with the SHA extensions (cpuid leaf 7, EBX bit 29) the blocks go
 * through them instead, several times faster (`sluice checksum` and the
 * signed payloads of S3 writes hash every byte they move).  Chosen once,
 * at the first hash; sl__sha256_use_hw lets tests compare both.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include <sluice/sha256.h>

#include "core_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SHA256_HW 1
#include <cpuid.h>
#include <immintrin.h>
#endif

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t
rotr32(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static uint32_t
load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Mix one 64-byte block into the chaining value. */
static void
sha256_block_portable(uint32_t h[8], const uint8_t *block)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = load_be32(block + 4 * t);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr32(w[t - 15], 7) ^ rotr32(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr32(w[t - 2], 17) ^ rotr32(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t s1 = rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = k + s1 + ch + sha256_k[t] + w[t];
        uint32_t s0 = rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = s0 + maj;
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

static void
sha256_blocks_portable(uint32_t h[8], const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sha256_block_portable(h, p + 64 * i);
}

#ifdef SHA256_HW
/*
 * `n` blocks through the SHA extensions.  The state lives as ABEF and CDGH
 * in two registers; each step of 4 rounds adds 4 schedule words and their
 * constants, and sha256rnds2 does two rounds with the low 2 of them.  The
 * schedule keeps words 4j..4j+3 in m[j % 4]: for j >= 4 they are made from
 * the 16 before, msg1 adding sigma0 of w[t-15] to w[t-16], the add w[t-7]
 * (alignr of the two previous groups), msg2 sigma1 of w[t-2].
 */
__attribute__((target("sha,sse4.1,ssse3"))) static void
sha256_blocks_hw(uint32_t h[8], const uint8_t *p, size_t n)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)(const void *)&h[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)(const void *)&h[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (size_t b = 0; b < n; b++, p += 64) {
        __m128i abef_in = abef, cdgh_in = cdgh;
        __m128i m[4];
        for (int j = 0; j < 16; j++) {
            __m128i *x = &m[j % 4];
            if (j < 4) {
                *x = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * j)),
                                      bswap);
            } else {
                __m128i t = _mm_sha256msg1_epu32(*x, m[(j + 1) % 4]);
                t = _mm_add_epi32(t, _mm_alignr_epi8(m[(j + 3) % 4], m[(j + 2) % 4], 4));
                *x = _mm_sha256msg2_epu32(t, m[(j + 3) % 4]);
            }
            __m128i k = _mm_loadu_si128((const __m128i *)(const void *)&sha256_k[4 * j]);
            __m128i wk = _mm_add_epi32(*x, k);
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef_in);
        cdgh = _mm_add_epi32(cdgh, cdgh_in);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)(void *)&h[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)(void *)&h[4], _mm_alignr_epi8(dchg, feba, 8));
}

/* Whether the CPU has the SHA extensions and the SSE4.1/SSSE3 they need here. */
static bool
sha256_cpu_has_hw(void)
{
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d) == 0 || !(c & (1u << 19)) || !(c & (1u << 9)))
        return false;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0)
        return false;
    return (b & (1u << 29)) != 0;
}
#endif

typedef void sha256_blocks_fn(uint32_t h[8], const uint8_t *p, size_t n);

/* The block function in use: NULL until the first hash chooses. */
static _Atomic(sha256_blocks_fn *) sha256_blocks_impl;

static sha256_blocks_fn *
sha256_blocks_choose(void)
{
#ifdef SHA256_HW
    if (sha256_cpu_has_hw())
        return sha256_blocks_hw;
#endif
    return sha256_blocks_portable;
}

static void
sha256_blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
    sha256_blocks_fn *f = atomic_load_explicit(&sha256_blocks_impl, memory_order_relaxed);
    if (f == NULL) {
        f = sha256_blocks_choose();
        atomic_store_explicit(&sha256_blocks_impl, f, memory_order_relaxed);
    }
    f(h, p, n);
}

bool
sl__sha256_use_hw(bool on)
{
    sha256_blocks_fn *hw = sha256_blocks_choose();
    atomic_store_explicit(&sha256_blocks_impl, on ? hw : sha256_blocks_portable,
                          memory_order_relaxed);
    return hw != sha256_blocks_portable;
}

void
sl_sha256_init(struct sl_sha256 *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof(iv));
    s->n_bytes = 0;
    s->n_block = 0;
}

void
sl_sha256_update(struct sl_sha256 *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->n_bytes += n;
    if (s->n_block > 0) {
        size_t take = 64 - s->n_block < n ? 64 - s->n_block : n;
        memcpy(s->block + s->n_block, p, take);
        s->n_block += take;
        p += take;
        n -= take;
        if (s->n_block < 64)
            return;
        sha256_blocks(s->h, s->block, 1);
        s->n_block = 0;
    }
    if (n >= 64) {
        sha256_blocks(s->h, p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    if (n > 0) {
        memcpy(s->block, p, n);
        s->n_block = n;
    }
}

void
sl_sha256_final(struct sl_sha256 *s, uint8_t digest[SL_SHA256_BYTES])
{
    uint64_t bits = s->n_bytes * 8;
    s->block[s->n_block++] = 0x80;
    if (s->n_block > 56) {
        memset(s->block + s->n_block, 0, 64 - s->n_block);
        sha256_blocks(s->h, s->block, 1);
        s->n_block = 0;
    }
    memset(s->block + s->n_block, 0, 56 - s->n_block);
    for (int i = 0; i < 8; i++)
        s->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_blocks(s->h, s->block, 1);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(s->h[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        digest[4 * i + 3] = (uint8_t)s->h[i];
    }
    s->n_block = 0;
}

void
sl_sha256(const void *data, size_t n, uint8_t digest[SL_SHA256_BYTES])
{
    struct sl_sha256 s;
    sl_sha256_init(&s);
    sl_sha256_update(&s, data, n);
    sl_sha256_final(&s, digest);
}

void
sl_sha256_hex(const uint8_t digest[SL_SHA256_BYTES], char hex[SL_SHA256_HEX_CHARS + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < SL_SHA256_BYTES; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[SL_SHA256_HEX_CHARS] = '\0';
}
