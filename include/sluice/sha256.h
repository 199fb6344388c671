/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4), incremental.  sluice hashes decoded array contents
 * with it (`sluice checksum`), so users can check a conversion or a copy,
 * and tests check stored fixtures against their manifests.
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

#ifdef __cplusplus
}
#endif

#endif /* SL_SHA256_H */
