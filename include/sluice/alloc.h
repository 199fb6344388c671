/* SPDX-License-Identifier: MIT */
/*
 * Allocators.  Memory comes from a `struct sl_allocator` passed per pool,
 * graph or store (never a process-wide hook).  The free function takes the
 * size, as hwloc_free and ck_malloc want one.
 */
#ifndef SL_ALLOC_H
#define SL_ALLOC_H

#include <stddef.h>

#include <sluice/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An allocator: `alloc` returns NULL on failure; `free(ctx, NULL, n)` is a no-op. */
struct sl_allocator {
    void *ctx;                                         /* passed back untouched */
    void *(*alloc)(void *ctx, size_t n, size_t align); /* align: power of two */
    void (*free)(void *ctx, void *p, size_t n);        /* n: the size allocated */
};

/**
 * The C library's allocator (malloc, or aligned_alloc above max_align_t).
 * Thread-safety: any thread.
 */
SL_API struct sl_allocator sl_allocator_default(void);

/**
 * Allocate `n` bytes aligned to `align` (a power of two; 0 means the
 * natural alignment) from `a`, or from the default allocator when `a` is
 * NULL.  @return NULL when out of memory or `n` is 0.  No `struct
 * sl_error`, as with malloc: the caller knows what the memory was for and
 * says so.
 * Thread-safety: as `a`'s functions allow; the default allocator: any thread.
 */
SL_API void *sl_alloc(const struct sl_allocator *a, size_t n, size_t align);

/**
 * Allocate `count` × `size` bytes, zeroed, checking the product for
 * overflow.  @return NULL when out of memory, on overflow or when empty.
 * No `struct sl_error`, as sl_alloc.
 * Thread-safety: as `a`'s functions allow; the default allocator: any thread.
 */
SL_API void *sl_alloc_zeroed(const struct sl_allocator *a, size_t count, size_t size, size_t align);

/**
 * Free `p` of `n` bytes from `a` (the default when NULL); NULL is a no-op.
 * Thread-safety: as `a`'s functions allow; the default allocator: any thread.
 */
SL_API void sl_free(const struct sl_allocator *a, void *p, size_t n);

/**
 * Copy the NUL-terminated `s` into memory from `a`.  Free with
 * sl_free(a, p, strlen(p) + 1).  @return NULL when out of memory.  No
 * `struct sl_error`, as sl_alloc.
 * Thread-safety: as `a`'s functions allow; the default allocator: any thread.
 */
SL_API char *sl_strdup(const struct sl_allocator *a, const char *s);

#ifdef __cplusplus
}
#endif

#endif /* SL_ALLOC_H */
