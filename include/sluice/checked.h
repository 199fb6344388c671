/* SPDX-License-Identifier: MIT */
/*
 * Overflow-checked size arithmetic.  Every shape product and byte count in
 * sluice goes through these, written so that the check itself cannot
 * overflow (`a > MAX / b`), never through an unchecked multiplication.
 * Byte sizes written as text ("512M", "1.5G") are parsed here too.
 */
#ifndef SL_CHECKED_H
#define SL_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Store a × b in `*out` and return true, or return false when it overflows.
 * Thread-safety: any thread.
 */
SL_NODISCARD static inline bool
sl_u64_mul_fits(uint64_t a, uint64_t b, uint64_t *out)
{
    if (b != 0 && a > UINT64_MAX / b)
        return false;
    *out = a * b;
    return true;
}

/**
 * Store a + b in `*out` and return true, or return false when it overflows.
 * Thread-safety: any thread.
 */
SL_NODISCARD static inline bool
sl_u64_add_fits(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a > UINT64_MAX - b)
        return false;
    *out = a + b;
    return true;
}

/**
 * Store a × b in `*out` and return true, or return false when it overflows.
 * Thread-safety: any thread.
 */
SL_NODISCARD static inline bool
sl_size_mul_fits(size_t a, size_t b, size_t *out)
{
    if (b != 0 && a > SIZE_MAX / b)
        return false;
    *out = a * b;
    return true;
}

/**
 * Store a + b in `*out` and return true, or return false when it overflows.
 * Thread-safety: any thread.
 */
SL_NODISCARD static inline bool
sl_size_add_fits(size_t a, size_t b, size_t *out)
{
    if (a > SIZE_MAX - b)
        return false;
    *out = a + b;
    return true;
}

/**
 * Number of elements of a `rank`-dimensional shape (1 for rank 0).
 * @return SL_OK, or SL_EOVERFLOW with the shape in the message when the
 * product exceeds 2^64 - 1.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_shape_count(uint32_t rank, const uint64_t *shape, uint64_t *count,
                                             struct sl_error *err);

/**
 * Bytes needed for a shape of `elem_bytes`-byte elements.
 * @return SL_OK, or SL_EOVERFLOW with the shape, element size and limit in
 * the message when the count does not fit in size_t.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_shape_bytes(uint32_t rank, const uint64_t *shape,
                                             size_t elem_bytes, size_t *bytes,
                                             struct sl_error *err);

/**
 * Parse a byte size written as text, as the launcher's `--memory`, a graph
 * file's "run"/"memory" and SLUICE_BUF_CACHE_BYTES take it.
 *
 * Grammar (no spaces, nothing before or after):
 *
 *     size   = number [ unit [ "B" | "iB" ] ]
 *     number = digits [ "." [ digits ] ] | "." digits
 *     unit   = "K" | "M" | "G" | "T"      (either case)
 *
 * Units are powers of 1024: K = 2^10, M = 2^20, G = 2^30, T = 2^40, so
 * "64K", "64k", "64KB" and "64KiB" are all 65536.  A fraction is exact and
 * rounded down to a whole byte: "1.5G" is 1610612736, "0.1K" is 102.  Zero
 * ("0", "0K") is a size; callers that need a positive one check.  Refused:
 * an empty text, a sign ("-1", "+1"), spaces, exponents ("1e9"), any other
 * letter or suffix, and a size above 2^64 - 1 bytes.
 *
 * @param text  the text, NUL-terminated; borrowed.
 * @param out   the size in bytes; untouched on failure.
 * @param err   optional; on failure gets a message that quotes `text`.
 * @return SL_OK, or SL_EINVAL (`text` or `out` NULL, or `text` malformed,
 *         negative or too large).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_size_parse(const char *text, uint64_t *out, struct sl_error *err);

/**
 * Write a shape as "[a, b, c]" into `buf`.
 * @return the length the full text needs, as snprintf does.
 * Thread-safety: any thread.
 */
SL_API size_t sl_shape_format(uint32_t rank, const uint64_t *shape, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* SL_CHECKED_H */
