/* SPDX-License-Identifier: MIT */
/*
 * Growable byte buffers: what stores read objects into and codecs encode
 * into.  The caller owns the buffer; reusing one across calls keeps reads
 * free of allocation once it has grown.
 */
#ifndef SL_BUF_H
#define SL_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A byte buffer owned by the caller that stores fill and grow.  Reusing one
 * across calls keeps reads free of allocation once it has grown.  A zeroed
 * buffer (SL_BUF_INIT) is empty and uses the default allocator.
 */
struct sl_buf {
    uint8_t *data;             /* `capacity` bytes, or NULL */
    size_t size;               /* bytes in use */
    size_t capacity;           /* bytes allocated */
    struct sl_allocator alloc; /* where `data` comes from; zeroed: the default */
};
/**
 * SL_BUF_INIT's value (an empty record) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_buf
sl_buf_init(void)
{
    struct sl_buf o;
    memset(&o, 0, sizeof o);

    return o;
}
#define SL_BUF_INIT (sl_buf_init())

/**
 * Make room for at least `n` bytes, keeping the first `size` bytes.
 * @return SL_OK or SL_ENOMEM (the buffer is unchanged).
 * Thread-safety: one thread per buffer at a time.
 */
SL_API SL_NODISCARD sl_status sl_buf_reserve(struct sl_buf *b, size_t n, struct sl_error *err);

/**
 * sl_buf_reserve, but a buffer that must grow gets exactly `n` bytes rather
 * than the next doubling: for a buffer sized once to a known bound (a
 * codec's worst case), which then holds no unused half.
 * @return SL_OK or SL_ENOMEM (the buffer is unchanged).
 * Thread-safety: one thread per buffer at a time.
 */
SL_API SL_NODISCARD sl_status sl_buf_reserve_exact(struct sl_buf *b, size_t n,
                                                   struct sl_error *err);

/**
 * Append `n` bytes.  @return SL_OK, SL_ENOMEM or SL_EOVERFLOW.
 * Thread-safety: one thread per buffer at a time.
 */
SL_API SL_NODISCARD sl_status sl_buf_append(struct sl_buf *b, const void *data, size_t n,
                                            struct sl_error *err);

/**
 * Free the buffer's memory and make it empty.  NULL is a no-op.
 * Thread-safety: one thread per buffer at a time.
 */
SL_API void sl_buf_fini(struct sl_buf *b);

#ifdef __cplusplus
}
#endif

#endif /* SL_BUF_H */
