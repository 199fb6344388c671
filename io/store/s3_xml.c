/* SPDX-License-Identifier: MIT */
/*
 * The XML S3 answers with, read without a library: error bodies,
 * ListObjectsV2 pages, DeleteObjects results and the answers of
 * InitiateMultipartUpload and CompleteMultipartUpload.  A small pull tokenizer
 * (elements, text, CDATA; comments and processing instructions skipped;
 * DTDs refused; the five predefined entities and character references
 * decoded) under readers that each know their few element names.
 * What sluice writes (DeleteObjects bodies) is s3_xml_write.c.
 *
 * DESIGN: a body is hostile input.  The tokenizer reads only inside [0, n),
 * allocates nothing (text goes into fixed buffers of the caller's parse
 * state, and what does not fit is cut or refused), bounds nesting at
 * XML_DEPTH, and every refusal is SL_EPARSE with the line, column and byte
 * of the problem.  Time is linear in the body: each byte is looked at a
 * bounded number of times.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core_internal.h"
#include "s3_internal.h"

/* The deepest nesting read; S3's answers are three or four deep. */
#define XML_DEPTH 64

enum xml_event { XML_START, XML_END, XML_TEXT, XML_EOF };

/* Where text of the element being read goes. */
struct xml_field {
    char *buf;  /* NUL-terminated */
    size_t cap; /* bytes of buf */
    size_t len; /* bytes in buf */
    bool cut;   /* more came than fits: the rest dropped */
    bool seen;  /* the element was there */
};

/* The tokenizer's state and its current event. */
struct xml {
    const char *data;
    size_t n;
    size_t pos;                /* next byte to read */
    const char *what;          /* the document, for messages: "ListObjectsV2 page" */
    const char *root;          /* the root element expected; NULL: the reader checks */
    size_t open[XML_DEPTH][2]; /* offset and length of each open element's name */
    int depth;                 /* elements open */
    bool seen_root;
    bool pending_end; /* "<a/>": the END of `a` comes next */
    /* The current event. */
    const char *name; /* START, END: the element's name */
    size_t name_len;
    int level;        /* START, END: the element's depth (the root's is 1) */
    const char *text; /* TEXT */
    size_t text_len;
    bool raw;  /* TEXT from CDATA: no entities */
    size_t at; /* where the event starts */
    /* Where TEXT at `field_level` goes; NULL: dropped. */
    struct xml_field *field;
    int field_level;
};

static sl_status xml_fail(const struct xml *x, size_t at, struct sl_error *err, const char *fmt,
                          ...) SL_PRINTF(4, 5);

/* SL_EPARSE at byte `at`, with its line and column. */
static sl_status
xml_fail(const struct xml *x, size_t at, struct sl_error *err, const char *fmt, ...)
{
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < x->n; i++) {
        col++;
        if (x->data[i] == '\n') {
            line++;
            col = 1;
        }
    }
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return sl_error_set_at(err, SL_EPARSE, line, col, at, "%s: %s at line %d, column %d (byte %zu)",
                           x->what, what, line, col, at);
}

static bool
xml_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* A byte of an element name: ASCII letters, digits, "_:-." and anything
 * non-ASCII (names are compared, never validated further). */
static bool
xml_is_name_char(char c)
{
    unsigned char u = (unsigned char)c;
    return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '_' ||
           u == ':' || u == '-' || u == '.' || u >= 0x80;
}

/* The offset of `pat` at or after `from`, or n. */
static size_t
xml_find(const struct xml *x, size_t from, const char *pat)
{
    size_t k = strlen(pat);
    for (size_t i = from; i + k <= x->n; i++)
        if (memcmp(x->data + i, pat, k) == 0)
            return i;
    return x->n;
}

static bool
xml_starts(const struct xml *x, const char *pat)
{
    size_t k = strlen(pat);
    return x->pos + k <= x->n && memcmp(x->data + x->pos, pat, k) == 0;
}

/* Skip "<?...?>", "<!--...-->"; false when it is something else. */
static sl_status
xml_skip_markup(struct xml *x, bool *skipped, struct sl_error *err)
{
    const char *close = xml_starts(x, "<?") ? "?>" : xml_starts(x, "<!--") ? "-->" : NULL;
    *skipped = close != NULL;
    if (close == NULL)
        return SL_OK;
    size_t end = xml_find(x, x->pos + 2, close);
    if (end == x->n)
        return xml_fail(x, x->pos, err, "truncated: \"%s\" is never closed",
                        close[0] == '?' ? "<?" : "<!--");
    x->pos = end + strlen(close);
    return SL_OK;
}

/* "</name>" at x->pos. */
static sl_status
xml_end_tag(struct xml *x, struct sl_error *err)
{
    size_t at = x->pos, p = at + 2, start = p;
    while (p < x->n && xml_is_name_char(x->data[p]))
        p++;
    size_t len = p - start;
    while (p < x->n && xml_is_space(x->data[p]))
        p++;
    if (p >= x->n)
        return xml_fail(x, at, err, "truncated end tag");
    if (x->data[p] != '>' || len == 0)
        return xml_fail(x, at, err, "a malformed end tag");
    if (x->depth == 0)
        return xml_fail(x, at, err, "</%.*s> closes no element", (int)(len < 64 ? len : 64),
                        x->data + start);
    size_t *top = x->open[x->depth - 1];
    if (top[1] != len || memcmp(x->data + top[0], x->data + start, len) != 0)
        return xml_fail(x, at, err, "</%.*s> closes <%.*s>", (int)(len < 64 ? len : 64),
                        x->data + start, (int)(top[1] < 64 ? top[1] : 64), x->data + top[0]);
    x->name = x->data + start;
    x->name_len = len;
    x->level = x->depth--;
    x->at = at;
    x->pos = p + 1;
    return SL_OK;
}

/* "<name attributes...>" or "<name/>" at x->pos. */
static sl_status
xml_start_tag(struct xml *x, struct sl_error *err)
{
    size_t at = x->pos, p = at + 1, start = p;
    while (p < x->n && xml_is_name_char(x->data[p]))
        p++;
    size_t len = p - start;
    if (len == 0)
        return xml_fail(x, at, err, p < x->n ? "a '<' that starts no tag" : "truncated tag");
    if (x->depth == 0 && x->seen_root)
        return xml_fail(x, at, err, "a second root element");
    if (x->depth == XML_DEPTH)
        return xml_fail(x, at, err, "elements nested deeper than %d", XML_DEPTH);
    char quote = 0;
    size_t last = 0; /* the last byte outside quotes and blanks before '>' */
    for (; p < x->n; p++) {
        char c = x->data[p];
        if (quote != 0) {
            quote = c == quote ? 0 : quote;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '>') {
            break;
        } else if (c == '<') {
            return xml_fail(x, p, err, "'<' inside the tag <%.*s>", (int)(len < 64 ? len : 64),
                            x->data + start);
        } else if (!xml_is_space(c)) {
            last = p;
        }
    }
    if (p >= x->n)
        return xml_fail(x, at, err, "truncated: the tag <%.*s> is never closed by '>'",
                        (int)(len < 64 ? len : 64), x->data + start);
    x->pending_end = last > start + len - 1 && x->data[last] == '/';
    x->open[x->depth][0] = start;
    x->open[x->depth][1] = len;
    x->level = ++x->depth;
    x->seen_root = true;
    x->name = x->data + start;
    x->name_len = len;
    x->at = at;
    x->pos = p + 1;
    return SL_OK;
}

/* Text up to the next '<' (or a CDATA section); between elements it must
 * be blank. */
static sl_status
xml_text(struct xml *x, enum xml_event *ev, bool *got, struct sl_error *err)
{
    size_t at = x->pos;
    *got = false;
    if (xml_starts(x, "<![CDATA[")) {
        size_t end = xml_find(x, at + 9, "]]>");
        if (end == x->n)
            return xml_fail(x, at, err, "truncated: a CDATA section is never closed");
        if (x->depth == 0)
            return xml_fail(x, at, err, "a CDATA section outside the root element");
        x->text = x->data + at + 9;
        x->text_len = end - at - 9;
        x->raw = true;
        x->pos = end + 3;
    } else {
        const char *lt = memchr(x->data + at, '<', x->n - at);
        size_t end = lt != NULL ? (size_t)(lt - x->data) : x->n;
        for (size_t i = at; x->depth == 0 && i < end; i++)
            if (!xml_is_space(x->data[i]))
                return xml_fail(x, i, err, "text outside the root element");
        x->text = x->data + at;
        x->text_len = end - at;
        x->raw = false;
        x->pos = end;
        if (x->depth == 0)
            return SL_OK;
    }
    x->at = at;
    *ev = XML_TEXT;
    *got = true;
    return SL_OK;
}

/* The next event. */
static sl_status
xml_next(struct xml *x, enum xml_event *ev, struct sl_error *err)
{
    if (x->pending_end) {
        x->pending_end = false;
        x->level = x->depth--;
        *ev = XML_END;
        return SL_OK;
    }
    for (;;) {
        if (x->pos >= x->n) {
            if (x->depth > 0)
                return xml_fail(
                    x, x->n, err, "truncated: <%.*s> is never closed",
                    (int)(x->open[x->depth - 1][1] < 64 ? x->open[x->depth - 1][1] : 64),
                    x->data + x->open[x->depth - 1][0]);
            if (!x->seen_root)
                return xml_fail(x, x->n, err, "no element (an empty or blank body)");
            *ev = XML_EOF;
            return SL_OK;
        }
        bool done;
        if (x->data[x->pos] != '<' || xml_starts(x, "<![CDATA[")) {
            SL_TRY(xml_text(x, ev, &done, err));
            if (done)
                return SL_OK;
            continue;
        }
        SL_TRY(xml_skip_markup(x, &done, err));
        if (done)
            continue;
        if (xml_starts(x, "<!"))
            return xml_fail(x, x->pos, err, "a DTD or declaration, which S3 never sends");
        if (xml_starts(x, "</")) {
            *ev = XML_END;
            return xml_end_tag(x, err);
        }
        *ev = XML_START;
        return xml_start_tag(x, err);
    }
}

/* ---- text ------------------------------------------------------------------------------------ */

/* Append `n` bytes to `f`, or mark it cut. */
static void
xml_field_put(struct xml_field *f, const char *s, size_t n)
{
    if (f->cut || f->len + n >= f->cap) {
        size_t room = f->cut ? 0 : f->cap - 1 - f->len;
        memcpy(f->buf + f->len, s, room);
        f->len += room;
        f->cut = true;
    } else {
        memcpy(f->buf + f->len, s, n);
        f->len += n;
    }
    f->buf[f->len] = '\0';
}

/* Write `c` as UTF-8 into `out`; its length. */
static size_t
xml_utf8(uint32_t c, char out[4])
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Decode the entity at s[0] == '&' (at most `n` bytes): its bytes into
 * `out`, their number into `*out_n`; the entity's length, 0 when it is not
 * one. */
static size_t
xml_entity(const char *s, size_t n, char out[4], size_t *out_n)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
    for (size_t i = 0; i < SL_ARRAY_LEN(named); i++) {
        size_t k = strlen(named[i].name);
        if (n >= k + 1 && memcmp(s + 1, named[i].name, k) == 0) {
            out[0] = named[i].c;
            *out_n = 1;
            return k + 1;
        }
    }
    if (n < 4 || s[1] != '#')
        return 0;
    bool hex = s[2] == 'x';
    uint32_t c = 0;
    size_t i = hex ? 3 : 2, digits = 0;
    for (; i < n && digits < 8; i++, digits++) {
        char d = s[i];
        int v = d >= '0' && d <= '9'          ? d - '0'
                : hex && d >= 'a' && d <= 'f' ? d - 'a' + 10
                : hex && d >= 'A' && d <= 'F' ? d - 'A' + 10
                                              : -1;
        if (v < 0)
            break;
        c = c * (hex ? 16 : 10) + (uint32_t)v;
    }
    if (digits == 0 || i >= n || s[i] != ';' || !sl__s3_xml_is_char(c))
        return 0;
    *out_n = xml_utf8(c, out);
    return i + 1;
}

/* Decode the current TEXT event into x->field: entities (unless CDATA),
 * and XML's line ends (CR LF and a lone CR read as LF). */
static sl_status
xml_text_decode(struct xml *x, struct sl_error *err)
{
    struct xml_field *f = x->field;
    const char *s = x->text;
    size_t n = x->text_len, run = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != '\0' && c != '\r' && (c != '&' || x->raw)) {
            run++;
            continue;
        }
        xml_field_put(f, s + i - run, run);
        run = 0;
        if (c == '\0')
            return xml_fail(x, (size_t)(s + i - x->data), err, "a NUL byte in text");
        if (c == '\r') {
            xml_field_put(f, "\n", 1);
            if (i + 1 < n && s[i + 1] == '\n')
                i++;
            continue;
        }
        char out[4];
        size_t out_n = 0, k = xml_entity(s + i, n - i, out, &out_n);
        if (k == 0)
            return xml_fail(x, (size_t)(s + i - x->data), err,
                            "'&' that starts no known entity or character reference");
        xml_field_put(f, out, out_n);
        i += k - 1;
    }
    xml_field_put(f, s + n - run, run);
    return SL_OK;
}

/* Send the current element's text to `f` (emptied). */
static void
xml_capture(struct xml *x, struct xml_field *f)
{
    f->len = 0;
    f->buf[0] = '\0';
    f->cut = false;
    f->seen = true;
    x->field = f;
    x->field_level = x->level;
}

static bool
xml_is(const struct xml *x, const char *name)
{
    return x->name_len == strlen(name) && memcmp(x->name, name, x->name_len) == 0;
}

/* What a reader does at elements; `level` is x->level. */
typedef sl_status xml_tag_fn(void *ctx, struct xml *x, struct sl_error *err);

/* Read the whole body: the root must be x->root; text goes to fields. */
static sl_status
xml_walk(struct xml *x, xml_tag_fn *start, xml_tag_fn *end, void *ctx, struct sl_error *err)
{
    if (x->n >= 3 && memcmp(x->data, "\xef\xbb\xbf", 3) == 0)
        x->pos = 3;
    for (;;) {
        enum xml_event ev;
        SL_TRY(xml_next(x, &ev, err));
        if (ev == XML_EOF)
            return SL_OK;
        if (ev == XML_TEXT) {
            if (x->field != NULL && x->depth == x->field_level)
                SL_TRY(xml_text_decode(x, err));
            continue;
        }
        if (ev == XML_START && x->level == 1 && x->root != NULL && !xml_is(x, x->root))
            return xml_fail(x, x->at, err, "the root element is <%.*s>, not <%s>",
                            (int)(x->name_len < 64 ? x->name_len : 64), x->name, x->root);
        if (ev == XML_END && x->field != NULL && x->level == x->field_level)
            x->field = NULL;
        SL_TRY((ev == XML_START ? start : end)(ctx, x, err));
    }
}

static struct xml
xml_open(const char *body, size_t n, const char *what, const char *root)
{
    return (struct xml){
        .data = body != NULL ? body : "", .n = body != NULL ? n : 0, .what = what, .root = root};
}

/* ---- error bodies ---------------------------------------------------------------------------- */

struct error_state {
    struct xml_field code, message;
};

static sl_status
error_start(void *ctx, struct xml *x, struct sl_error *err)
{
    (void)err;
    struct error_state *s = ctx;
    if (x->level == 2 && xml_is(x, "Code"))
        xml_capture(x, &s->code);
    else if (x->level == 2 && xml_is(x, "Message"))
        xml_capture(x, &s->message);
    return SL_OK;
}

static sl_status
error_end(void *ctx, struct xml *x, struct sl_error *err)
{
    (void)ctx;
    (void)x;
    (void)err;
    return SL_OK;
}

/* End a cut text with "...", at a UTF-8 character boundary. */
static void
xml_mark_cut(struct xml_field *f)
{
    if (!f->cut || f->cap < 8)
        return;
    size_t len = f->cap - 4;
    while (len > 0 && ((unsigned char)f->buf[len] & 0xC0) == 0x80)
        len--;
    memcpy(f->buf + len, "...", 4);
    f->len = len + 3;
}

sl_status
sl__s3_error_parse(const char *body, size_t n, struct sl__s3_error_body *out, struct sl_error *err)
{
    struct error_state s = {
        .code = {.buf = out->code, .cap = sizeof(out->code)},
        .message = {.buf = out->message, .cap = sizeof(out->message)},
    };
    out->code[0] = '\0';
    out->message[0] = '\0';
    struct xml x = xml_open(body, n, "S3 error body", "Error");
    sl_status st = xml_walk(&x, error_start, error_end, &s, err);
    if (st != SL_OK) {
        out->code[0] = '\0';
        out->message[0] = '\0';
        return st;
    }
    xml_mark_cut(&s.code);
    xml_mark_cut(&s.message);
    return SL_OK;
}

/* ---- ListObjectsV2 pages --------------------------------------------------------------------- */

enum list_entry_kind { LIST_NONE, LIST_CONTENTS, LIST_PREFIX };

struct list_state {
    sl__s3_list_fn *fn;
    void *ctx;
    bool url_encoded;
    struct sl__s3_list_page *page;
    enum list_entry_kind kind;
    struct xml_field key, size, etag, truncated, token;
    char key_buf[3 * SL__S3_KEY_MAX + 1]; /* room for a key percent-encoded */
    char size_buf[32];
    char etag_buf[256];
    char truncated_buf[16];
};

/* Percent-decode `f` in place (encoding-type=url); false for a bad escape. */
static bool
list_url_decode(struct xml_field *f)
{
    size_t w = 0;
    for (size_t r = 0; r < f->len; r++, w++) {
        char c = f->buf[r];
        if (c == '%') {
            int v = 0;
            for (int k = 1; k <= 2; k++) {
                char d = r + (size_t)k < f->len ? f->buf[r + (size_t)k] : 0;
                int h = d >= '0' && d <= '9'   ? d - '0'
                        : d >= 'a' && d <= 'f' ? d - 'a' + 10
                        : d >= 'A' && d <= 'F' ? d - 'A' + 10
                                               : -1;
                if (h < 0)
                    return false;
                v = v * 16 + h;
            }
            c = (char)v;
            r += 2;
        } else if (c == '+') {
            c = ' '; /* S3 encodes a space as '+' here, as HTML forms do */
        }
        f->buf[w] = c;
    }
    f->len = w;
    f->buf[w] = '\0';
    return true;
}

/* A decimal below 2^63. */
static bool
list_size_parse(const char *s, uint64_t *out)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 19 || s[n] != '\0')
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (uint64_t)(s[i] - '0');
    *out = v;
    return v <= (uint64_t)INT64_MAX;
}

/* The <Contents> or <CommonPrefixes> just closed, to the callback. */
static sl_status
list_emit(struct list_state *s, struct xml *x, struct sl_error *err)
{
    bool is_prefix = s->kind == LIST_PREFIX;
    const char *entry = is_prefix ? "<CommonPrefixes>" : "<Contents>";
    if (!s->key.seen)
        return xml_fail(x, x->at, err, "%s without %s", entry, is_prefix ? "<Prefix>" : "<Key>");
    if (s->url_encoded && !s->key.cut && !list_url_decode(&s->key))
        return xml_fail(x, x->at, err, "a key with a bad %%-escape (encoding-type=url)");
    if (s->key.cut || s->key.len > SL__S3_KEY_MAX)
        return xml_fail(x, x->at, err, "a key longer than S3's %d bytes", SL__S3_KEY_MAX);
    if (s->key.len == 0 || strlen(s->key.buf) != s->key.len)
        return xml_fail(x, x->at, err, "an empty key, or one holding a NUL byte");
    struct sl__s3_list_entry e = {
        .key = s->key.buf, .key_len = s->key.len, .etag = "", .is_prefix = is_prefix};
    if (!is_prefix) {
        if (!s->size.seen)
            return xml_fail(x, x->at, err, "<Contents> without <Size>");
        if (s->size.cut || !list_size_parse(s->size.buf, &e.size))
            return xml_fail(x, x->at, err, "<Size> \"%s\" is not a decimal below 2^63",
                            s->size.buf);
        if (s->etag.cut)
            return xml_fail(x, x->at, err, "an <ETag> longer than %zu bytes",
                            sizeof(s->etag_buf) - 1);
        e.etag = s->etag.seen ? s->etag.buf : "";
        s->page->n_objects++;
    } else {
        s->page->n_prefixes++;
    }
    return s->fn != NULL ? s->fn(s->ctx, &e, err) : SL_OK;
}

static sl_status
list_start(void *ctx, struct xml *x, struct sl_error *err)
{
    (void)err;
    struct list_state *s = ctx;
    if (x->level == 2) {
        s->kind = xml_is(x, "Contents")         ? LIST_CONTENTS
                  : xml_is(x, "CommonPrefixes") ? LIST_PREFIX
                                                : LIST_NONE;
        s->key.seen = s->size.seen = s->etag.seen = false;
        if (xml_is(x, "IsTruncated"))
            xml_capture(x, &s->truncated);
        else if (xml_is(x, "NextContinuationToken"))
            xml_capture(x, &s->token);
    } else if (x->level == 3 && s->kind == LIST_CONTENTS) {
        if (xml_is(x, "Key"))
            xml_capture(x, &s->key);
        else if (xml_is(x, "Size"))
            xml_capture(x, &s->size);
        else if (xml_is(x, "ETag"))
            xml_capture(x, &s->etag);
    } else if (x->level == 3 && s->kind == LIST_PREFIX && xml_is(x, "Prefix")) {
        xml_capture(x, &s->key);
    }
    return SL_OK;
}

static sl_status
list_end(void *ctx, struct xml *x, struct sl_error *err)
{
    struct list_state *s = ctx;
    if (x->level != 2)
        return SL_OK;
    if (xml_is(x, "IsTruncated")) {
        if (strcmp(s->truncated.buf, "true") != 0 && strcmp(s->truncated.buf, "false") != 0)
            return xml_fail(x, x->at, err, "<IsTruncated> is neither true nor false");
        s->page->is_truncated = strcmp(s->truncated.buf, "true") == 0;
    } else if (xml_is(x, "NextContinuationToken") && s->token.cut) {
        return xml_fail(x, x->at, err, "a continuation token longer than %zu bytes",
                        sizeof(s->page->next_token) - 1);
    } else if (s->kind != LIST_NONE) {
        sl_status st = list_emit(s, x, err);
        s->kind = LIST_NONE;
        return st;
    }
    return SL_OK;
}

sl_status
sl__s3_list_parse(const char *body, size_t n, bool url_encoded, sl__s3_list_fn *fn, void *ctx,
                  struct sl__s3_list_page *page, struct sl_error *err)
{
    struct list_state s = {.fn = fn, .ctx = ctx, .url_encoded = url_encoded, .page = page};
    s.key = (struct xml_field){.buf = s.key_buf, .cap = sizeof(s.key_buf)};
    s.size = (struct xml_field){.buf = s.size_buf, .cap = sizeof(s.size_buf)};
    s.etag = (struct xml_field){.buf = s.etag_buf, .cap = sizeof(s.etag_buf)};
    s.truncated = (struct xml_field){.buf = s.truncated_buf, .cap = sizeof(s.truncated_buf)};
    s.token = (struct xml_field){.buf = page->next_token, .cap = sizeof(page->next_token)};
    *page = (struct sl__s3_list_page){.is_truncated = false};
    struct xml x = xml_open(body, n, "ListObjectsV2 page", "ListBucketResult");
    sl_status st = xml_walk(&x, list_start, list_end, &s, err);
    if (st == SL_OK && page->is_truncated && page->next_token[0] == '\0')
        st = xml_fail(&x, x.n, err,
                      "<IsTruncated> is true but there is no "
                      "<NextContinuationToken>");
    if (st != SL_OK)
        page->next_token[0] = '\0';
    return st;
}

/* ---- DeleteObjects results ------------------------------------------------------------------- */

struct delete_state {
    sl__s3_delete_fn *fn;
    void *ctx;
    size_t n_deleted, n_failed;
    int kind; /* 0: none, 1: <Deleted>, 2: <Error> */
    struct xml_field key, code, message;
    char key_buf[SL__S3_KEY_MAX + 1];
    char code_buf[128];
    char message_buf[384];
};

static sl_status
delete_start(void *ctx, struct xml *x, struct sl_error *err)
{
    (void)err;
    struct delete_state *s = ctx;
    if (x->level == 2) {
        s->kind = xml_is(x, "Deleted") ? 1 : xml_is(x, "Error") ? 2 : 0;
        s->key.seen = s->code.cut = s->message.cut = false;
        s->code.len = s->message.len = 0;
        s->code_buf[0] = s->message_buf[0] = '\0';
    } else if (x->level == 3 && s->kind != 0 && xml_is(x, "Key")) {
        xml_capture(x, &s->key);
    } else if (x->level == 3 && s->kind == 2 && xml_is(x, "Code")) {
        xml_capture(x, &s->code);
    } else if (x->level == 3 && s->kind == 2 && xml_is(x, "Message")) {
        xml_capture(x, &s->message);
    }
    return SL_OK;
}

static sl_status
delete_end(void *ctx, struct xml *x, struct sl_error *err)
{
    struct delete_state *s = ctx;
    if (x->level != 2 || s->kind == 0)
        return SL_OK;
    const char *entry = s->kind == 1 ? "<Deleted>" : "<Error>";
    bool deleted = s->kind == 1;
    s->kind = 0;
    if (!s->key.seen)
        return xml_fail(x, x->at, err, "%s without <Key>", entry);
    if (s->key.cut)
        return xml_fail(x, x->at, err, "a key longer than S3's %d bytes", SL__S3_KEY_MAX);
    if (s->key.len == 0 || strlen(s->key.buf) != s->key.len)
        return xml_fail(x, x->at, err, "an empty key, or one holding a NUL byte");
    xml_mark_cut(&s->code);
    xml_mark_cut(&s->message);
    struct sl__s3_delete_item item = {.key = s->key.buf,
                                      .deleted = deleted,
                                      .code = deleted ? "" : s->code_buf,
                                      .message = deleted ? "" : s->message_buf};
    if (deleted)
        s->n_deleted++;
    else
        s->n_failed++;
    return s->fn != NULL ? s->fn(s->ctx, &item, err) : SL_OK;
}

sl_status
sl__s3_delete_result_parse(const char *body, size_t n, sl__s3_delete_fn *fn, void *ctx,
                           size_t *n_deleted, size_t *n_failed, struct sl_error *err)
{
    struct delete_state s = {.fn = fn, .ctx = ctx};
    s.key = (struct xml_field){.buf = s.key_buf, .cap = sizeof(s.key_buf)};
    s.code = (struct xml_field){.buf = s.code_buf, .cap = sizeof(s.code_buf)};
    s.message = (struct xml_field){.buf = s.message_buf, .cap = sizeof(s.message_buf)};
    struct xml x = xml_open(body, n, "DeleteObjects result", "DeleteResult");
    sl_status st = xml_walk(&x, delete_start, delete_end, &s, err);
    if (n_deleted != NULL)
        *n_deleted = s.n_deleted;
    if (n_failed != NULL)
        *n_failed = s.n_failed;
    return st;
}

/* ---- multipart uploads ----------------------------------------------------------------------- */

struct initiate_state {
    struct xml_field id;
};

static sl_status
initiate_start(void *ctx, struct xml *x, struct sl_error *err)
{
    (void)err;
    struct initiate_state *s = ctx;
    if (x->level == 2 && xml_is(x, "UploadId"))
        xml_capture(x, &s->id);
    return SL_OK;
}

static sl_status
xml_no_end(void *ctx, struct xml *x, struct sl_error *err)
{
    (void)ctx;
    (void)x;
    (void)err;
    return SL_OK;
}

sl_status
sl__s3_initiate_parse(const char *body, size_t n, char *upload_id, size_t size,
                      struct sl_error *err)
{
    struct initiate_state s = {.id = {.buf = upload_id, .cap = size}};
    struct xml x =
        xml_open(body, n, "InitiateMultipartUpload answer", "InitiateMultipartUploadResult");
    if (size < 2)
        return sl_error_set(err, SL_EINVAL, NULL, "room for an upload id of %zu bytes", size);
    upload_id[0] = '\0';
    sl_status st = xml_walk(&x, initiate_start, xml_no_end, &s, err);
    if (st == SL_OK && !s.id.seen)
        st = xml_fail(&x, x.n, err, "no <UploadId>");
    else if (st == SL_OK && s.id.cut)
        st = xml_fail(&x, x.n, err, "an <UploadId> longer than %zu bytes", size - 1);
    else if (st == SL_OK && (s.id.len == 0 || strlen(upload_id) != s.id.len))
        st = xml_fail(&x, x.n, err, "an empty <UploadId>, or one holding a NUL byte");
    if (st != SL_OK)
        upload_id[0] = '\0';
    return st;
}

struct complete_state {
    struct sl__s3_complete_result *out;
    struct xml_field etag, code, message;
};

static sl_status
complete_start(void *ctx, struct xml *x, struct sl_error *err)
{
    struct complete_state *s = ctx;
    if (x->level == 1) {
        s->out->failed = xml_is(x, "Error");
        if (!s->out->failed && !xml_is(x, "CompleteMultipartUploadResult"))
            return xml_fail(
                x, x->at, err,
                "the root element is <%.*s>, not <CompleteMultipartUploadResult> or <Error>",
                (int)(x->name_len < 64 ? x->name_len : 64), x->name);
    } else if (x->level == 2 && !s->out->failed && xml_is(x, "ETag")) {
        xml_capture(x, &s->etag);
    } else if (x->level == 2 && s->out->failed && xml_is(x, "Code")) {
        xml_capture(x, &s->code);
    } else if (x->level == 2 && s->out->failed && xml_is(x, "Message")) {
        xml_capture(x, &s->message);
    }
    return SL_OK;
}

sl_status
sl__s3_complete_parse(const char *body, size_t n, struct sl__s3_complete_result *out,
                      struct sl_error *err)
{
    *out = (struct sl__s3_complete_result){.failed = false};
    struct complete_state s = {
        .out = out,
        .etag = {.buf = out->etag, .cap = sizeof(out->etag)},
        .code = {.buf = out->error.code, .cap = sizeof(out->error.code)},
        .message = {.buf = out->error.message, .cap = sizeof(out->error.message)},
    };
    struct xml x = xml_open(body, n, "CompleteMultipartUpload answer", NULL);
    sl_status st = xml_walk(&x, complete_start, xml_no_end, &s, err);
    if (st == SL_OK && s.etag.cut)
        st = xml_fail(&x, x.n, err, "an <ETag> longer than %zu bytes", sizeof(out->etag) - 1);
    for (size_t i = 0; st == SL_OK && i < s.etag.len; i++)
        if ((unsigned char)out->etag[i] < 0x20 || out->etag[i] == 0x7f)
            st = xml_fail(&x, x.n, err, "an <ETag> holding control character 0x%02x at byte %zu",
                          (unsigned char)out->etag[i], i);
    if (st != SL_OK) {
        *out = (struct sl__s3_complete_result){.failed = false};
        return st;
    }
    xml_mark_cut(&s.code);
    xml_mark_cut(&s.message);
    return SL_OK;
}
