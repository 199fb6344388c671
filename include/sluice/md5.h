/* SPDX-License-Identifier: MIT */
/*
 * MD5 (RFC 1321), one-shot and incremental.  Not for security: S3's
 * DeleteObjects request must carry the MD5 of its body (Content-MD5), and
 * S3 gives a simple object's ETag as the MD5 of its bytes.
 */
#ifndef SL_MD5_H
#define SL_MD5_H

#include <stddef.h>
#include <stdint.h>

#include <sluice/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes in a digest, and characters in its hex form (without the NUL). */
#define SL_MD5_BYTES 16
#define SL_MD5_HEX_CHARS 32

/* Hashing state; plain data, copyable, owned by the caller. */
struct sl_md5 {
    uint32_t h[4];     /* chaining value A, B, C, D */
    uint64_t n_bytes;  /* bytes hashed so far */
    uint8_t block[64]; /* pending input */
    size_t n_block;    /* bytes pending in `block` */
};

/** Start a new hash.  Thread-safety: one thread per state at a time. */
SL_API void sl_md5_init(struct sl_md5 *s);

/**
 * Hash `n` more bytes of `data` (`data` may be NULL when `n` is 0).
 * Thread-safety: one thread per state at a time.
 */
SL_API void sl_md5_update(struct sl_md5 *s, const void *data, size_t n);

/**
 * Finish: write the digest.  `s` must be initialized again before reuse.
 * Thread-safety: one thread per state at a time.
 */
SL_API void sl_md5_final(struct sl_md5 *s, uint8_t digest[SL_MD5_BYTES]);

/** One-shot: the digest of `n` bytes at `data`.  Thread-safety: any thread. */
SL_API void sl_md5(const void *data, size_t n, uint8_t digest[SL_MD5_BYTES]);

/** Write `digest` as 32 lowercase hex digits and a NUL into `hex`.  Thread-safety: any thread. */
SL_API void sl_md5_hex(const uint8_t digest[SL_MD5_BYTES], char hex[SL_MD5_HEX_CHARS + 1]);

#ifdef __cplusplus
}
#endif

#endif /* SL_MD5_H */
