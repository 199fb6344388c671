/* SPDX-License-Identifier: MIT */
/*
 * MD5 as RFC 1321 defines it: 64-byte blocks of sixteen little-endian
 * words, four rounds of sixteen steps, the message padded with 0x80, zeros
 * and its bit length (little-endian).  Used on request bodies of a few
 * kilobytes (S3's Content-MD5), so written for clarity.
 */
#include <string.h>

#include <sluice/md5.h>

/* T[i] = floor(2^32 * |sin(i + 1)|), RFC 1321 section 3.4. */
static const uint32_t md5_t[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

/* The left rotations of each round's four steps. */
static const unsigned md5_s[4][4] = {
    {7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};

static uint32_t
rotl32(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

/* Mix one 64-byte block into the chaining value. */
static void
md5_block(uint32_t h[4], const uint8_t *block)
{
    uint32_t x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (uint32_t)block[4 * i] | (uint32_t)block[4 * i + 1] << 8 |
               (uint32_t)block[4 * i + 2] << 16 | (uint32_t)block[4 * i + 3] << 24;
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    for (unsigned i = 0; i < 64; i++) {
        unsigned round = i / 16, word;
        uint32_t f;
        switch (round) {
        case 0:
            f = (b & c) | (~b & d);
            word = i;
            break;
        case 1:
            f = (b & d) | (c & ~d);
            word = (5 * i + 1) % 16;
            break;
        case 2:
            f = b ^ c ^ d;
            word = (3 * i + 5) % 16;
            break;
        default:
            f = c ^ (b | ~d);
            word = (7 * i) % 16;
            break;
        }
        uint32_t next = b + rotl32(a + f + x[word] + md5_t[i], md5_s[round][i % 4]);
        a = d;
        d = c;
        c = b;
        b = next;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

void
sl_md5_init(struct sl_md5 *s)
{
    static const uint32_t iv[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    memcpy(s->h, iv, sizeof(iv));
    s->n_bytes = 0;
    s->n_block = 0;
}

void
sl_md5_update(struct sl_md5 *s, const void *data, size_t n)
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
        md5_block(s->h, s->block);
        s->n_block = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        md5_block(s->h, p);
    if (n > 0) {
        memcpy(s->block, p, n);
        s->n_block = n;
    }
}

void
sl_md5_final(struct sl_md5 *s, uint8_t digest[SL_MD5_BYTES])
{
    uint64_t bits = s->n_bytes * 8;
    s->block[s->n_block++] = 0x80;
    if (s->n_block > 56) {
        memset(s->block + s->n_block, 0, 64 - s->n_block);
        md5_block(s->h, s->block);
        s->n_block = 0;
    }
    memset(s->block + s->n_block, 0, 56 - s->n_block);
    for (int i = 0; i < 8; i++)
        s->block[56 + i] = (uint8_t)(bits >> (8 * i));
    md5_block(s->h, s->block);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            digest[4 * i + k] = (uint8_t)(s->h[i] >> (8 * k));
    s->n_block = 0;
}

void
sl_md5(const void *data, size_t n, uint8_t digest[SL_MD5_BYTES])
{
    struct sl_md5 s;
    sl_md5_init(&s);
    sl_md5_update(&s, data, n);
    sl_md5_final(&s, digest);
}

void
sl_md5_hex(const uint8_t digest[SL_MD5_BYTES], char hex[SL_MD5_HEX_CHARS + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < SL_MD5_BYTES; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[SL_MD5_HEX_CHARS] = '\0';
}
