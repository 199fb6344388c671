/* SPDX-License-Identifier: MIT */
/*
 * Error records: recording (first error wins, never allocates), formatting
 * for people, and the string helpers of core_internal.h.
 *
 * DESIGN: a message longer than its record keeps its head and its tail
 * around "..." (sl__text_fit): the head says what failed, the tail names
 * the file and the cause.  Formatting goes to the record first and, only
 * when that is too short, again to a scratch buffer on the stack, so the
 * common case copies nothing and recording still never allocates.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sluice/error.h>

#include "core_internal.h"

void
sl__strlcpy(char *dst, const char *src, size_t size)
{
    if (size == 0)
        return;
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* True for the bytes a long text may be cut after (head) or before (tail). */
static bool
text_is_boundary(char c)
{
    return c == ' ' || c == '/' || c == ',';
}

/* True when `p` points inside a UTF-8 sequence (at a continuation byte). */
static bool
text_is_continuation(const char *p)
{
    return ((unsigned char)*p & 0xC0u) == 0x80u;
}

/* Length of the head of `src` to keep within `max` bytes: up to and including
 * the last boundary in its second half, else cut between UTF-8 sequences. */
static size_t
text_head_len(const char *src, size_t max)
{
    size_t h = max;
    while (h > 0 && text_is_continuation(src + h))
        h--;
    for (size_t b = h; b > max / 2; b--)
        if (text_is_boundary(src[b - 1]))
            return b;
    return h;
}

/* Start of the tail of `src` (`n` bytes) to keep within `max` bytes: at the
 * first boundary in its first half, else between UTF-8 sequences. */
static size_t
text_tail_start(const char *src, size_t n, size_t max)
{
    size_t t = n - max;
    while (t < n && text_is_continuation(src + t))
        t++;
    for (size_t b = t; b < n - max / 2; b++)
        if (text_is_boundary(src[b]))
            return b;
    return t;
}

bool
sl__text_fit(char *dst, size_t size, const char *src)
{
    static const char dots[] = "...";
    const size_t n_dots = sizeof(dots) - 1;
    size_t n = strlen(src);
    if (n < size) {
        memcpy(dst, src, n + 1);
        return true;
    }
    if (size < 4 * n_dots) {
        /* Too small to show both ends: a head cut between UTF-8 sequences. */
        size_t h = size > 0 ? size - 1 : 0;
        while (h > 0 && text_is_continuation(src + h))
            h--;
        if (size > 0) {
            memcpy(dst, src, h);
            dst[h] = '\0';
        }
        return false;
    }
    size_t room = size - 1 - n_dots;
    size_t head = text_head_len(src, room / 3);
    size_t tail = text_tail_start(src, n, room - room / 3);
    memcpy(dst, src, head);
    memcpy(dst + head, dots, n_dots);
    memcpy(dst + head + n_dots, src + tail, n - tail + 1);
    return false;
}

/* Format into `text` (`size` bytes), fitting with sl__text_fit what does not
 * fit.  A message past the scratch buffer loses its tail beyond it. */
static void text_vformat(char *text, size_t size, const char *fmt, va_list ap) SL_PRINTF(3, 0);

static void
text_vformat(char *text, size_t size, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(text, size, fmt, ap);
    if (n >= 0 && (size_t)n >= size) {
        char scratch[4096];
        vsnprintf(scratch, sizeof(scratch), fmt, again);
        sl__text_fit(text, size, scratch);
    }
    va_end(again);
}

void
sl__strbuf_append(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *at = *len < size ? buf + *len : NULL;
    size_t room = *len < size ? size - *len : 0;
    int n = vsnprintf(at, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len += (size_t)n;
}

/* Claim `err` for a new error: false when it is NULL or already holds one. */
static bool
error_claim(struct sl_error *err, sl_status code)
{
    if (err == NULL || err->code != SL_OK)
        return false;
    *err = SL_ERROR_INIT;
    err->code = code;
    return true;
}

sl_status
sl_error_setv(struct sl_error *err, sl_status code, const struct sl_chunk_key *chunk,
              const char *fmt, va_list ap)
{
    if (!error_claim(err, code))
        return code;
    if (chunk != NULL)
        err->chunk = *chunk;
    text_vformat(err->text, sizeof(err->text), fmt, ap);
    return code;
}

sl_status
sl_error_set(struct sl_error *err, sl_status code, const struct sl_chunk_key *chunk,
             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl_error_setv(err, code, chunk, fmt, ap);
    va_end(ap);
    return code;
}

sl_status
sl_error_set_path(struct sl_error *err, sl_status code, const char *path, const char *fmt, ...)
{
    if (!error_claim(err, code))
        return code;
    sl__text_fit(err->path, sizeof(err->path), path != NULL ? path : "");
    va_list ap;
    va_start(ap, fmt);
    text_vformat(err->text, sizeof(err->text), fmt, ap);
    va_end(ap);
    return code;
}

sl_status
sl_error_set_at(struct sl_error *err, sl_status code, int line, int column, size_t position,
                const char *fmt, ...)
{
    if (!error_claim(err, code))
        return code;
    err->line = line;
    err->column = column;
    err->position = position;
    va_list ap;
    va_start(ap, fmt);
    text_vformat(err->text, sizeof(err->text), fmt, ap);
    va_end(ap);
    return code;
}

void
sl_error_set_source(struct sl_error *err, const char *source)
{
    if (err == NULL || err->code == SL_OK || err->source[0] != '\0' || source == NULL)
        return;
    sl__text_fit(err->source, sizeof(err->source), source);
}

size_t
sl_chunk_key_format(const struct sl_chunk_key *key, char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    sl__strbuf_append(buf, size, &len, "(");
    for (uint32_t d = 0; d < key->rank && d < SL_MAX_RANK; d++)
        sl__strbuf_append(buf, size, &len, "%s%" PRIu64, d ? ", " : "", key->idx[d]);
    sl__strbuf_append(buf, size, &len, ")");
    return len;
}

size_t
sl_error_format(const struct sl_error *err, char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    sl__strbuf_append(buf, size, &len, "%s", sl_status_name(err->code));
    if (err->source[0] != '\0')
        sl__strbuf_append(buf, size, &len, ": %s", err->source);
    if (err->line > 0) {
        sl__strbuf_append(buf, size, &len, ":%d", err->line);
        if (err->column > 0)
            sl__strbuf_append(buf, size, &len, ":%d", err->column);
    }
    if (err->path[0] != '\0')
        sl__strbuf_append(buf, size, &len, ": at %s", err->path);
    if (err->chunk.rank > 0) {
        char key[SL_MAX_RANK * 22 + 4];
        sl_chunk_key_format(&err->chunk, key, sizeof(key));
        sl__strbuf_append(buf, size, &len, ": chunk %s", key);
    }
    sl__strbuf_append(buf, size, &len, ": %s",
                      err->text[0] != '\0' ? err->text : sl_status_message(err->code));
    return len;
}

struct sl_chunk_key
sl_chunk_key_make(uint32_t rank, const uint64_t *idx)
{
    struct sl_chunk_key key = {.rank = rank > SL_MAX_RANK ? SL_MAX_RANK : rank};
    for (uint32_t d = 0; d < key.rank; d++)
        key.idx[d] = idx[d];
    return key;
}

bool
sl_chunk_key_equal(const struct sl_chunk_key *a, const struct sl_chunk_key *b)
{
    if (a->rank != b->rank)
        return false;
    for (uint32_t d = 0; d < a->rank; d++)
        if (a->idx[d] != b->idx[d])
            return false;
    return true;
}

void
sl__error_forward(struct sl_error *dst, const struct sl_error *src)
{
    if (dst != NULL && dst->code == SL_OK && src->code != SL_OK)
        *dst = *src;
}

void
sl__error_locate(struct sl_error *err, const char *key, uint32_t rank, const uint64_t *coords)
{
    if (err == NULL || err->code == SL_OK)
        return;
    if (err->chunk.rank == 0 && coords != NULL)
        err->chunk = sl_chunk_key_make(rank, coords);
    sl_error_set_source(err, key);
}

sl_status
sl_status_from_name(const char *name, sl_status *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (name == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "status from name: NULL argument");
    if (!sl__status_find(name, out))
        return sl_error_set(err, SL_EINVAL, NULL, "unknown status name \"%s\"", name);
    return SL_OK;
}
