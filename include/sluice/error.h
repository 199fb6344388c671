/* SPDX-License-Identifier: MIT */
/*
 * Error records.  A `struct sl_error` is owned by the caller, has a fixed
 * size and is filled without allocating, so even SL_ENOMEM can be recorded.
 * Records are per call: every public function that takes one empties it
 * on entry, so after a failure the program chose to tolerate, the next
 * call's record says only what that call did, and its code is the status
 * the call returns.  Within one call the first error recorded wins: the
 * cascade that follows a failure cannot overwrite its cause.  (The
 * recording functions below are the exception: they add to the record.)
 * A record says where the failure happened in one of
 * three ways: line/column/byte position for text input, a JSON pointer for
 * meaning, chunk coordinates for data.
 */
#ifndef SL_ERROR_H
#define SL_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <sluice/common.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Grid coordinates of one chunk (or shard); rank 0 means "no chunk". */
struct sl_chunk_key {
    uint32_t rank;             /* number of valid entries in idx */
    uint64_t idx[SL_MAX_RANK]; /* chunk index per dimension */
};

/* What went wrong and where. */
struct sl_error {
    sl_status code;            /* SL_OK while nothing is recorded */
    int line;                  /* 1-based; -1 if not text input */
    int column;                /* 1-based; -1 if unknown */
    size_t position;           /* byte offset into the input */
    struct sl_chunk_key chunk; /* grid coordinates; rank 0 if none */
    char source[256];          /* file name, store key or node id */
    char path[128];            /* JSON pointer, e.g. "/nodes/3/kind" */
    char text[512];            /* message with the numbers, NUL-terminated */
};
/**
 * SL_ERROR_INIT's value (an empty record) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_error
sl_error_init(void)
{
    struct sl_error o;
    memset(&o, 0, sizeof o);
    o.line = -1;
    o.column = -1;
    return o;
}
#define SL_ERROR_INIT (sl_error_init())

/**
 * Forget any recorded error: make `err` an empty record, as
 * `*err = SL_ERROR_INIT` does for every reader.  Inline, writing only what
 * readers look at (the numbers, the chunk's rank, the first byte of each
 * string) instead of all ~1 KiB, so records made once per chunk in hot
 * loops stay cheap.  `err` may be NULL.
 * Thread-safety: one record per thread.
 */
static inline void
sl_error_clear(struct sl_error *err)
{
    if (err == NULL)
        return;
    err->code = SL_OK;
    err->line = -1;
    err->column = -1;
    err->position = 0;
    err->chunk.rank = 0;
    err->source[0] = '\0';
    err->path[0] = '\0';
    err->text[0] = '\0';
}

/**
 * Record `code` with a printf-style message and optional chunk coordinates,
 * unless an error is already recorded; then return `code`, so callers can
 * write `return sl_error_set(...)`.  `err` and `chunk` may be NULL.  A
 * message too long for `text` keeps its head and its tail around "...",
 * cut at a space, '/' or ',', never inside a UTF-8 sequence.
 * @return `code` unchanged: any status, SL_OK included.
 * Thread-safety: one record per thread; recording never allocates.
 */
SL_API sl_status sl_error_set(struct sl_error *err, sl_status code,
                              const struct sl_chunk_key *chunk, const char *fmt, ...)
    SL_PRINTF(4, 5);

/**
 * sl_error_set with a va_list.
 * @return `code` unchanged: any status, SL_OK included.
 * Thread-safety: one record per thread; recording never allocates.
 */
SL_API sl_status sl_error_setv(struct sl_error *err, sl_status code,
                               const struct sl_chunk_key *chunk, const char *fmt, va_list ap)
    SL_PRINTF(4, 0);

/**
 * Record `code` at JSON pointer `path` (e.g. "/nodes/3/input"), unless an
 * error is already recorded.  @return `code` unchanged: any status, SL_OK
 * included.
 * Thread-safety: one record per thread; recording never allocates.
 */
SL_API sl_status sl_error_set_path(struct sl_error *err, sl_status code, const char *path,
                                   const char *fmt, ...) SL_PRINTF(4, 5);

/**
 * Record `code` at a text location (1-based line and column, byte offset),
 * unless an error is already recorded.  @return `code` unchanged: any
 * status, SL_OK included.
 * Thread-safety: one record per thread; recording never allocates.
 */
SL_API sl_status sl_error_set_at(struct sl_error *err, sl_status code, int line, int column,
                                 size_t position, const char *fmt, ...) SL_PRINTF(6, 7);

/**
 * Name the file, store key or node the recorded error concerns, when an
 * error is recorded and names no source yet; the innermost caller that knows
 * a source wins.  `err` may be NULL.  A source too long for the record
 * keeps its head and its tail (the file name) around "...".
 * Thread-safety: one record per thread; recording never allocates.
 */
SL_API void sl_error_set_source(struct sl_error *err, const char *source);

/**
 * Write one human-readable line for the record, e.g.
 * `ECORRUPT: a/c/0/1: chunk (0, 1): crc32c mismatch ...`, into `buf`
 * (always NUL-terminated when `size` > 0).
 * @return the length the full line needs, as snprintf does.
 * Thread-safety: any thread.
 */
SL_API size_t sl_error_format(const struct sl_error *err, char *buf, size_t size);

/**
 * Write `key` as "(i, j, k)" into `buf` ("()" for rank 0).
 * @return the length the full text needs, as snprintf does.
 * Thread-safety: any thread.
 */
SL_API size_t sl_chunk_key_format(const struct sl_chunk_key *key, char *buf, size_t size);

/**
 * Build a key from `rank` coordinates; rank is clamped to SL_MAX_RANK.
 * Thread-safety: any thread.
 */
SL_API struct sl_chunk_key sl_chunk_key_make(uint32_t rank, const uint64_t *idx);

/** True when both keys have the same rank and coordinates.  Thread-safety: any thread. */
SL_API bool sl_chunk_key_equal(const struct sl_chunk_key *a, const struct sl_chunk_key *b);

#ifdef __cplusplus
}
#endif

#endif /* SL_ERROR_H */
