/* SPDX-License-Identifier: MIT */
/*
 * Macros and limits shared by every public sluice header: symbol visibility,
 * compiler attributes, the maximum array rank and the cache-line size used
 * to keep fields written by different threads apart.
 */
#ifndef SL_COMMON_H
#define SL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Public symbols are exported; everything else is built hidden. */
#if defined(__GNUC__)
#define SL_API __attribute__((visibility("default")))
#else
#define SL_API
#endif

/* A returned status must be looked at. */
#if defined(__GNUC__)
#define SL_NODISCARD __attribute__((warn_unused_result))
#else
#define SL_NODISCARD
#endif

/* printf-style argument checking: format at `fmt`, arguments from `args`. */
#if defined(__GNUC__)
#define SL_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define SL_PRINTF(fmt, args)
#endif

/*
 * The largest array rank sluice handles.  Arrays of higher rank are refused
 * with SL_EUNSUPPORTED naming the rank; fixed arrays of this length keep
 * regions, chunk keys and error records free of allocation.
 */
#define SL_MAX_RANK 16

/*
 * Distance that keeps two fields off the same cache line, including the
 * adjacent-line prefetcher of x86 (hence 128, as ck and cheetah use).
 */
#define SL_CACHELINE 128

#ifdef __cplusplus
}
#endif

#endif /* SL_COMMON_H */
