/* SPDX-License-Identifier: MIT */
/*
 * The XML an S3 store sends: DeleteObjects request bodies, with keys
 * escaped so that XML carries them unchanged (CR and LF as character
 * references, which XML's line-end handling leaves alone), and keys XML
 * cannot carry at all (control characters, bytes that are not UTF-8)
 * refused rather than mangled.  Also XML's Char production, which the
 * reader (s3_xml.c) checks character references against.
 */
#include <string.h>

#include "core_internal.h"
#include "s3_internal.h"

bool
sl__s3_xml_is_char(uint32_t c)
{
    return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) ||
           (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
}

/* The length of the UTF-8 character at s[0] (of `n` bytes) that XML 1.0
 * can carry, or 0. */
static size_t
xml_char_len(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return s[0] >= 0x20 || s[0] == '\t' || s[0] == '\n' || s[0] == '\r' ? 1 : 0;
    size_t k = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 0;
    if (k == 0 || k > n || s[0] > 0xF4)
        return 0;
    uint32_t c = s[0] & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3F);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000}; /* no overlong forms */
    return c >= least[k] && sl__s3_xml_is_char(c) ? k : 0;
}

/* Escape into `out`; `*bad` gets the offset of a byte XML cannot carry. */
static sl_status
xml_escape(struct sl_buf *out, const char *s, size_t n, size_t *bad, struct sl_error *err)
{
    size_t run = 0;
    for (size_t i = 0; i < n;) {
        const char *rep = NULL;
        switch (s[i]) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&apos;";
            break;
        case '\r':
            rep = "&#13;";
            break;
        case '\n':
            rep = "&#10;";
            break;
        default:
            break;
        }
        size_t k = rep != NULL ? 1 : xml_char_len((const unsigned char *)s + i, n - i);
        if (k == 0) {
            *bad = i;
            return SL_EINVAL;
        }
        if (rep == NULL) {
            run += k;
            i += k;
            continue;
        }
        if (run > 0)
            SL_TRY(sl_buf_append(out, s + i - run, run, err));
        run = 0;
        SL_TRY(sl_buf_append(out, rep, strlen(rep), err));
        i++;
    }
    return run > 0 ? sl_buf_append(out, s + n - run, run, err) : SL_OK;
}

sl_status
sl__s3_xml_escape(struct sl_buf *out, const char *s, size_t n, struct sl_error *err)
{
    size_t bad = 0;
    sl_status st = xml_escape(out, s, n, &bad, err);
    if (st == SL_EINVAL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "byte 0x%02x at offset %zu is no UTF-8 character XML 1.0 can carry",
                            (unsigned char)s[bad], bad);
    return st;
}

sl_status
sl__s3_delete_body(const char *const *keys, size_t n_keys, struct sl_buf *out, struct sl_error *err)
{
    out->size = 0;
    if (n_keys == 0 || n_keys > SL__S3_DELETE_MAX || keys == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "DeleteObjects takes 1 to %d keys, not %zu",
                            SL__S3_DELETE_MAX, n_keys);
    SL_TRY(sl_buf_append(out, "<Delete><Quiet>true</Quiet>", 27, err));
    for (size_t i = 0; i < n_keys; i++) {
        if (keys[i] == NULL || keys[i][0] == '\0') {
            out->size = 0;
            return sl_error_set(err, SL_EINVAL, NULL, "DeleteObjects: key %zu is empty", i);
        }
        size_t bad = 0;
        SL_TRY(sl_buf_append(out, "<Object><Key>", 13, err));
        sl_status st = xml_escape(out, keys[i], strlen(keys[i]), &bad, err);
        if (st != SL_OK) {
            out->size = 0;
            return st != SL_EINVAL
                       ? st
                       : sl_error_set(err, SL_EINVAL, NULL,
                                      "DeleteObjects: key %zu holds byte 0x%02x at offset %zu, "
                                      "no UTF-8 character XML 1.0 can carry",
                                      i, (unsigned char)keys[i][bad], bad);
        }
        SL_TRY(sl_buf_append(out, "</Key></Object>", 15, err));
    }
    SL_TRY(sl_buf_append(out, "</Delete>", 10, err)); /* with the NUL */
    out->size--;
    return SL_OK;
}
