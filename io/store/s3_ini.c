/* SPDX-License-Identifier: MIT */
/*
 * The INI dialect of AWS's shared files (~/.aws/credentials, ~/.aws/config)
 * as Python's configparser reads them for botocore: "[section]" headers,
 * "key = value" lines, whole-line comments starting with '#' or ';',
 * indented lines under a key holding its nested settings ("s3 =" then
 * "  addressing_style = path").  No inline comments: a '#' after a value
 * is part of it, as in configparser.  A leading UTF-8 byte order mark is
 * skipped.
 *
 * DESIGN: the parse works in place, writing NULs into the caller's text,
 * so it allocates nothing and hands out pointers that live as long as the
 * text.  A message about a malformed line names the file and the line
 * number but never quotes the line: the credentials file holds secrets,
 * and a malformed line is often a secret pasted in the wrong place.
 */
#include <string.h>

#include "core_internal.h"
#include "s3_internal.h"

/* Trim blanks at both ends of [*s, *s + *n). */
static void
ini_trim(char **s, size_t *n)
{
    while (*n > 0 && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

static sl_status
ini_fail(struct sl_error *err, const char *file, int line, size_t pos, const char *what)
{
    sl_status st = sl_error_set_at(err, SL_EPARSE, line, 1, pos, "%s:%d: %s", file, line, what);
    sl_error_set_source(err, file);
    return st;
}

/* Split "key = value" at [s, s + n) into NUL-terminated, trimmed parts. */
static bool
ini_split(char *s, size_t n, char **key, char **value)
{
    char *eq = memchr(s, '=', n);
    if (eq == NULL)
        return false;
    char *k = s, *v = eq + 1;
    size_t kn = (size_t)(eq - s), vn = n - kn - 1;
    ini_trim(&k, &kn);
    ini_trim(&v, &vn);
    if (kn == 0)
        return false;
    k[kn] = '\0';
    v[vn] = '\0';
    *key = k;
    *value = v;
    return true;
}

/* The state carried from line to line. */
struct ini_state {
    const char *file;
    const char *section; /* NULL before the first header */
    const char *parent;  /* the section's last top-level key, for indented lines */
    sl__s3_ini_fn *fn;
    void *ctx;
};

/* One line, [s, s + n) without its line end, starting at byte `pos`. */
static sl_status
ini_line(struct ini_state *st, char *s, size_t n, int line, size_t pos, struct sl_error *err)
{
    if (memchr(s, '\0', n) != NULL)
        return ini_fail(err, st->file, line, pos, "a NUL byte in the line");
    bool indented = n > 0 && (s[0] == ' ' || s[0] == '\t');
    ini_trim(&s, &n);
    if (n == 0 || s[0] == '#' || s[0] == ';')
        return SL_OK;
    if (s[0] == '[') {
        if (s[n - 1] != ']' || n < 3)
            return ini_fail(err, st->file, line, pos,
                            "a section header is \"[name]\", with a name and nothing after ']'");
        char *name = s + 1;
        size_t len = n - 2;
        ini_trim(&name, &len);
        if (len == 0)
            return ini_fail(err, st->file, line, pos, "a section header without a name");
        name[len] = '\0';
        st->section = name;
        st->parent = NULL;
        return SL_OK;
    }
    char *key, *value;
    if (!ini_split(s, n, &key, &value))
        return ini_fail(err, st->file, line, pos,
                        "expected \"[section]\", \"key = value\" or a comment");
    if (st->section == NULL)
        return ini_fail(err, st->file, line, pos, "a setting before the first [section]");
    if (indented && st->parent != NULL)
        return st->fn(st->ctx, st->section, st->parent, key, value, line, err);
    st->parent = key;
    return st->fn(st->ctx, st->section, NULL, key, value, line, err);
}

sl_status
sl__s3_ini_parse(char *text, size_t n, const char *file, sl__s3_ini_fn *fn, void *ctx,
                 struct sl_error *err)
{
    struct ini_state st = {.file = file != NULL ? file : "(INI text)", .fn = fn, .ctx = ctx};
    /* A UTF-8 byte order mark, as Windows editors write, is no text. */
    size_t pos = n >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    for (int line = 1; pos < n; line++) {
        char *nl = memchr(text + pos, '\n', n - pos);
        size_t end = nl != NULL ? (size_t)(nl - text) : n;
        size_t len = end - pos;
        if (len > 0 && text[pos + len - 1] == '\r')
            len--;
        SL_TRY(ini_line(&st, text + pos, len, line, pos, err));
        pos = end + 1;
    }
    return SL_OK;
}
