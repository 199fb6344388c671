/* SPDX-License-Identifier: MIT */
/*
 * HMAC-SHA256 as RFC 2104 defines it over SHA-256:
 * H((K' ^ opad) || H((K' ^ ipad) || data)), where K' is the key padded
 * with zeros to the 64-byte block, or its digest when it is longer than a
 * block.  Only the one-shot form: AWS Signature Version 4 hashes short
 * strings, each once.
 */
#include <string.h>

#include <sluice/sha256.h>

#define HMAC_BLOCK 64

/* Overwrite `n` bytes at `p` in a way the compiler may not drop as a dead
 * store: what they held was derived from a secret key. */
static void
wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n-- > 0)
        *v++ = 0;
}

void
sl_hmac_sha256(const void *key, size_t key_len, const void *data, size_t n,
               uint8_t mac[SL_SHA256_BYTES])
{
    uint8_t k[HMAC_BLOCK] = {0}, pad[HMAC_BLOCK], inner[SL_SHA256_BYTES];
    if (key_len > HMAC_BLOCK)
        sl_sha256(key, key_len, k);
    else if (key_len > 0)
        memcpy(k, key, key_len);
    struct sl_sha256 s;
    for (int i = 0; i < HMAC_BLOCK; i++)
        pad[i] = k[i] ^ 0x36;
    sl_sha256_init(&s);
    sl_sha256_update(&s, pad, sizeof(pad));
    sl_sha256_update(&s, data, n);
    sl_sha256_final(&s, inner);
    for (int i = 0; i < HMAC_BLOCK; i++)
        pad[i] = k[i] ^ 0x5c;
    sl_sha256_init(&s);
    sl_sha256_update(&s, pad, sizeof(pad));
    sl_sha256_update(&s, inner, sizeof(inner));
    sl_sha256_final(&s, mac);
    wipe(k, sizeof(k));
    wipe(pad, sizeof(pad));
    wipe(inner, sizeof(inner));
    wipe(&s, sizeof(s));
}
