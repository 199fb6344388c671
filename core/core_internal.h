/* SPDX-License-Identifier: MIT */
/*
 * Private helpers shared by the library's modules (core, runtime, io, ops,
 * graph): the one control-flow macro, the debug-only invariants and small
 * string helpers.  Never included by the launcher, examples or users.
 */
#ifndef SL_CORE_INTERNAL_H
#define SL_CORE_INTERNAL_H

#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/status.h>
#include <sluice/view.h>

/* The allocator for a buffer that is filled whole as soon as it is made
 * (a fetched body reserved to its Content-Length): where `a` is the
 * default allocator (or NULL), one whose blocks from 2 MiB on are
 * mappings on huge pages, kept for reuse when freed, so that filling one
 * faults in a few huge pages, or none, rather than a page per 4 KiB;
 * else `a` itself.  The buffer must be freed through what this returned
 * (struct sl_buf keeps it). */
struct sl_allocator sl__allocator_filled(const struct sl_allocator *a);

/* Return the status of `expr` when it is not SL_OK.  Only where nothing
 * needs releasing. */
#define SL_TRY(expr)                       \
    do {                                   \
        sl_status sl_try_status_ = (expr); \
        if (sl_try_status_ != SL_OK)       \
            return sl_try_status_;         \
    } while (0)

/*
 * Conditions believed always (or never) true: assert in debug builds, and in
 * release builds evaluate to the condition so the caller can recover, as
 * SQLite's ALWAYS/NEVER do.  `if (SL_NEVER(x)) return SL_ESTATE;`
 */
#ifdef NDEBUG
#define SL_ALWAYS(cond) (cond)
#define SL_NEVER(cond) (cond)
#else
#define SL_ALWAYS(cond) ((cond) ? true : (assert(!"SL_ALWAYS failed: " #cond), false))
#define SL_NEVER(cond) ((cond) ? (assert(!"SL_NEVER failed: " #cond), true) : false)
#endif

#define SL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The plural ending for a count in a message: "1 level", "2 levels". */
#define SL__PLURAL(n) ((n) == 1 ? "" : "s")

/*
 * Append printf-style text at `*len` in `buf` of `size` bytes, keeping it
 * NUL-terminated and advancing `*len` even past `size` (as snprintf reports),
 * so a sequence of appends can be checked once at the end.
 */
void sl__strbuf_append(char *buf, size_t size, size_t *len, const char *fmt, ...) SL_PRINTF(4, 5);

/* Copy `src` into `dst` of `size` bytes, truncating, always NUL-terminated. */
void sl__strlcpy(char *dst, const char *src, size_t size);

/*
 * Copy message or path `src` into `dst` of `size` bytes, always
 * NUL-terminated.  Text that does not fit keeps its head and its tail (which
 * names the file and the cause, e.g. ": Permission denied") around "...",
 * each cut at a space, '/' or ',' where one is near and never inside a UTF-8
 * sequence.  `dst` and `src` must not overlap.
 * @return true when `src` was copied whole.
 */
bool sl__text_fit(char *dst, size_t size, const char *src);

/* Advance the C-order index `idx` over `shape` (n entries); false after the
 * last index, when `idx` is back to all zeros. */
static inline bool
sl__index_next(uint64_t *idx, const uint64_t *shape, uint32_t n)
{
    for (uint32_t d = n; d-- > 0;) {
        if (++idx[d] < shape[d])
            return true;
        idx[d] = 0;
    }
    return false;
}

/* ---- views (view.c) ---- */

/* The lowest and highest byte offsets (relative to data) `v` touches, for
 * a non-empty view already checked by sl_view_check. */
void sl__view_byte_range(const struct sl_view *v, ptrdiff_t *lo, ptrdiff_t *hi);

/*
 * Hash with the CPU's SHA extensions (`on`, where it has them) or the
 * portable code (for tests comparing the two; not while other threads
 * hash).  @return whether the CPU has the extensions.
 */
bool sl__sha256_use_hw(bool on);

/* True when the views share any byte (both non-empty and checked). */
bool sl__view_overlap(const struct sl_view *a, const struct sl_view *b);

/* True when `v` holds no element. */
bool sl__view_is_empty(const struct sl_view *v);

/*
 * Copy `src` to `dst` (same shape, same element size, checked, not
 * overlapping), element by element in C order (box.c).
 */
void sl__view_copy_unchecked(const struct sl_view *dst, const struct sl_view *src);

/* Set every element of checked, non-empty view `v` to `value` (box.c). */
void sl__view_fill_unchecked(const struct sl_view *v, const void *value);

/* ---- boxes of C-order arrays (box.c) ---- */

/*
 * A box inside a C-order array in memory: the elements from `origin` on of
 * an array of `dims` elements at `base`.  A copy has one shape and two
 * boxes, so the shape is an argument, not a field.  Everything is borrowed.
 */
struct sl__box {
    void *base;             /* element (0, ..., 0) of the whole array */
    const uint64_t *dims;   /* the whole array's shape */
    const uint64_t *origin; /* the box's first element in the array */
};

/* Copy `shape` elements (`es` bytes each) from box `src` to box `dst`; the
 * arrays do not overlap. */
void sl__box_copy(const struct sl__box *dst, const struct sl__box *src, const uint64_t *shape,
                  uint32_t rank, size_t es);

/* Set `shape` elements of box `dst` to the `es` bytes at `value`. */
void sl__box_fill(const struct sl__box *dst, const uint64_t *shape, uint32_t rank,
                  const void *value, size_t es);

/* Fill everything of `buf` (a C-order array of `dims`) outside
 * [0, extent) with `value`. */
void sl__fill_outside(void *buf, uint32_t rank, const uint64_t *dims, const uint64_t *extent,
                      const void *value, size_t es);

/* Write `n` elements of `value` at `dst`. */
void sl__fill_elements(void *dst, size_t n, const void *value, size_t es);

/* True when every `es`-byte element of `n_bytes` at `buf` equals `value`. */
bool sl__is_fill(const void *buf, size_t n_bytes, const void *value, size_t es);

/* Check that `a` and `b` have the same rank and shape; EINVAL naming
 * `what`, both shapes and the first dimension that differs. */
sl_status sl__view_check_same_shape(const char *what, const struct sl_view *a,
                                    const struct sl_view *b, struct sl_error *err);

/* The status named `name` ("EIO" or "SL_EIO") into `*out`; false when no
 * status has that name (status.c; sl_status_from_name reports it). */
bool sl__status_find(const char *name, sl_status *out);

/* The wait before try `attempt` + 1 (attempt >= 1: the retry number) of
 * an operation that failed transiently: `first_s` doubling per retry up to
 * `cap_s`, times a random factor in [0.5, 1] (status.c). */
double sl__retry_delay_s(unsigned attempt, double first_s, double cap_s);

/* Sleep sl__retry_delay_s(attempt, first_s, cap_s) seconds. */
void sl__retry_sleep(unsigned attempt, double first_s, double cap_s);

/* Copy `src` into `dst` unless `dst` already records an error (the first
 * error wins); `dst` may be NULL. */
void sl__error_forward(struct sl_error *dst, const struct sl_error *src);

/* Name the key and chunk coordinates of a recorded error that lacks them. */
void sl__error_locate(struct sl_error *err, const char *key, uint32_t rank, const uint64_t *coords);

#endif /* SL_CORE_INTERNAL_H */
