/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4), incremental, and HMAC-SHA256 on top of it.
 * sluice hashes decoded array contents with it (`sluice checksum`), so
 * users can check a conversion or a copy, and tests check stored fixtures
 * against their manifests; S3 requests are signed with the HMAC.
 */
#ifndef SL_SHA256_H
#define SL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include <sluice/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes in a digest, and characters in its hex form (without the NUL). */
#define SL_SHA256_BYTES 32
#define SL_SHA256_HEX_CHARS 64

/* Hashing state; plain data, copyable, owned by the caller. */
struct sl_sha256 {
    uint32_t h[8];     /* chaining value */
    uint64_t n_bytes;  /* bytes hashed so far */
    uint8_t block[64]; /* pending input */
    size_t n_block;    /* bytes pending in `block` */
};

/** Start a new hash.  Thread-safety: one thread per state at a time. */
SL_API void sl_sha256_init(struct sl_sha256 *s);

/**
 * Hash `n` more bytes of `data` (`data` may be NULL when `n` is 0).
 * Thread-safety: one thread per state at a time.
 */
SL_API void sl_sha256_update(struct sl_sha256 *s, const void *data, size_t n);

/**
 * Finish: write the digest.  `s` must be initialized again before reuse.
 * Thread-safety: one thread per state at a time.
 */
SL_API void sl_sha256_final(struct sl_sha256 *s, uint8_t digest[SL_SHA256_BYTES]);

/** One-shot: the digest of `n` bytes at `data`.  Thread-safety: any thread. */
SL_API void sl_sha256(const void *data, size_t n, uint8_t digest[SL_SHA256_BYTES]);

/** Write `digest` as 64 lowercase hex digits and a NUL into `hex`.  Thread-safety: any thread. */
SL_API void sl_sha256_hex(const uint8_t digest[SL_SHA256_BYTES], char hex[SL_SHA256_HEX_CHARS + 1]);

/**
 * HMAC-SHA256 (RFC 2104 over FIPS 180-4 SHA-256; test vectors in RFC
 * 4231): the 32-byte code of `n` bytes at `data` under the `key_len`-byte
 * `key`.  A key longer than SHA-256's 64-byte block is hashed first, as
 * the RFC says; either pointer may be NULL when its length is 0.  What
 * the computation leaves of the key on the stack is wiped before return.
 * AWS Signature Version 4 (an S3 store's requests) chains five of these.
 * Thread-safety: any thread.
 */
SL_API void sl_hmac_sha256(const void *key, size_t key_len, const void *data, size_t n,
                           uint8_t mac[SL_SHA256_BYTES]);

#ifdef __cplusplus
}
#endif

#endif /* SL_SHA256_H */
