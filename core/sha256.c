/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 as FIPS 180-4 defines it: 64-byte blocks, big-endian words, the
 * message padded with 0x80, zeros and its bit length.  Written for clarity;
 * hashing runs at a few hundred MB/s, well above what checksumming decoded
 * arrays needs next to decompression.
 */
#include <string.h>

#include <sluice/sha256.h>

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
sha256_block(uint32_t h[8], const uint8_t *block)
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
        sha256_block(s->h, s->block);
        s->n_block = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        sha256_block(s->h, p);
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
        sha256_block(s->h, s->block);
        s->n_block = 0;
    }
    memset(s->block + s->n_block, 0, 56 - s->n_block);
    for (int i = 0; i < 8; i++)
        s->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_block(s->h, s->block);
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
