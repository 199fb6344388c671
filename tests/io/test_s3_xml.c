/* SPDX-License-Identifier: MIT */
/*
 * S3's XML (io/store/s3_xml.c): error bodies, ListObjectsV2 pages,
 * DeleteObjects results and multipart uploads' answers (UploadId; the
 * ETag, or an <Error> inside a 200) read, DeleteObjects bodies written; entities and
 * character references, CDATA and comments, keys escaped and read back
 * unchanged, and hostile bodies (truncated at every byte, garbage, deep
 * nesting, DTDs, NUL bytes) refused with line, column and byte.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "s3_internal.h"

TestSuite(io_s3_xml, .timeout = 30.0);

/* ---- error bodies ---------------------------------------------------------------------------- */

static struct sl__s3_error_body
error_ok(const char *body)
{
    struct sl__s3_error_body e;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_error_parse(body, strlen(body), &e, &err), SL_OK, "%s", err.text);
    return e;
}

/* The body is refused with `message`. */
static void
error_refused(const char *body, size_t n, const char *message)
{
    struct sl__s3_error_body e;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_error_parse(body, n, &e, &err), SL_EPARSE, "accepted: %.*s", (int)n, body);
    cr_assert_eq(err.code, SL_EPARSE);
    cr_assert_str_eq(err.text, message);
    cr_assert_str_eq(e.code, "");
}

Test(io_s3_xml, error_body_of_the_s3_documentation)
{
    struct sl__s3_error_body e =
        error_ok("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<Error>\n"
                 "  <Code>NoSuchKey</Code>\n"
                 "  <Message>The resource you requested does not exist</Message>\n"
                 "  <Resource>/mybucket/myfoto.jpg</Resource> \n"
                 "  <RequestId>4442587FB7D0A2F9</RequestId>\n"
                 "</Error>\n");
    cr_assert_str_eq(e.code, "NoSuchKey");
    cr_assert_str_eq(e.message, "The resource you requested does not exist");
    /* Without Message, with a BOM, CRLF and attributes. */
    e = error_ok("\xef\xbb\xbf<Error a='>' b=\"x/\">\r\n<Code>SlowDown</Code><Message/></Error>");
    cr_assert_str_eq(e.code, "SlowDown");
    cr_assert_str_eq(e.message, "");
}

Test(io_s3_xml, entities_character_references_cdata_and_comments)
{
    struct sl__s3_error_body e =
        error_ok("<Error><Code><!-- c -->Slow<![CDATA[Down<&amp;>]]><?pi x?></Code></Error>");
    cr_assert_str_eq(e.code, "SlowDown<&amp;>");
    e = error_ok("<Error><Message>a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos; &#65;&#x42;"
                 "&#x20AC;&#128512;&#9;|&#13;|\r\n|\r|</Message></Error>");
    cr_assert_str_eq(e.message, "a & b <c> \"d\" 'e' AB\xe2\x82\xac\xf0\x9f\x98\x80\t|\r|\n|\n|");
}

Test(io_s3_xml, long_messages_are_cut_at_a_character_with_an_ellipsis)
{
    char body[4096] = "<Error><Code>C</Code><Message>";
    size_t n = strlen(body);
    for (int i = 0; i < 500; i++) {
        memcpy(body + n, "\xc3\xa9", 2); /* é */
        n += 2;
    }
    strcpy(body + n, "</Message></Error>");
    struct sl__s3_error_body e = error_ok(body);
    size_t len = strlen(e.message);
    cr_assert_lt(len, sizeof(e.message));
    cr_assert_geq(len, sizeof(e.message) - 6);
    cr_assert_str_eq(e.message + len - 3, "...");
    for (size_t i = 0; i + 3 < len; i += 2)
        cr_assert(memcmp(e.message + i, "\xc3\xa9", 2) == 0, "byte %zu", i);
}

Test(io_s3_xml, malformed_error_bodies_name_line_column_and_byte)
{
    struct sl__s3_error_body e;
    struct sl_error err = SL_ERROR_INIT;
    const char *b = "<Error>\n  <Code>x</Cod>\n</Error>";
    cr_assert_eq(sl__s3_error_parse(b, strlen(b), &e, &err), SL_EPARSE);
    cr_assert_str_eq(err.text,
                     "S3 error body: </Cod> closes <Code> at line 2, column 10 (byte 17)");
    cr_assert_eq(err.line, 2);
    cr_assert_eq(err.column, 10);
    cr_assert_eq(err.position, 17);

    error_refused("", 0,
                  "S3 error body: no element (an empty or blank body) at line 1, column 1 "
                  "(byte 0)");
    error_refused(NULL, 5,
                  "S3 error body: no element (an empty or blank body) at line 1, column "
                  "1 (byte 0)");
    error_refused(" \n ", 3,
                  "S3 error body: no element (an empty or blank body) at line 2, "
                  "column 2 (byte 3)");
    const char *cases[][2] = {
        {"<Error><Code>x</Code>",
         "truncated: <Error> is never closed at line 1, column 22 (byte 21)"},
        {"<Error",
         "truncated: the tag <Error> is never closed by '>' at line 1, column 1 (byte 0)"},
        {"<", "truncated tag at line 1, column 1 (byte 0)"},
        {"< Error/>", "a '<' that starts no tag at line 1, column 1 (byte 0)"},
        {"<Error><a<b/></Error>", "'<' inside the tag <a> at line 1, column 10 (byte 9)"},
        {"<Error></Error", "truncated end tag at line 1, column 8 (byte 7)"},
        {"<Error></Error x>", "a malformed end tag at line 1, column 8 (byte 7)"},
        {"</Error>", "</Error> closes no element at line 1, column 1 (byte 0)"},
        {"<Other/>", "the root element is <Other>, not <Error> at line 1, column 1 (byte 0)"},
        {"<Error/><Error/>", "a second root element at line 1, column 9 (byte 8)"},
        {"junk<Error/>", "text outside the root element at line 1, column 1 (byte 0)"},
        {"<Error/>x", "text outside the root element at line 1, column 9 (byte 8)"},
        {"<![CDATA[x]]><Error/>", "a CDATA section outside the root element at line 1, column 1 "
                                  "(byte 0)"},
        {"<Error><![CDATA[x</Error>", "truncated: a CDATA section is never closed at line 1, "
                                      "column 8 (byte 7)"},
        {"<Error><!-- x", "truncated: \"<!--\" is never closed at line 1, column 8 (byte 7)"},
        {"<?xml version='1.0'", "truncated: \"<?\" is never closed at line 1, column 1 (byte 0)"},
        {"<!DOCTYPE Error [<!ENTITY a 'b'>]><Error/>", "a DTD or declaration, which S3 never "
                                                       "sends at line 1, column 1 (byte 0)"},
        {"<Error><Code>&bogus;</Code></Error>", "'&' that starts no known entity or character "
                                                "reference at line 1, column 14 (byte 13)"},
        {"<Error><Code>&amp</Code></Error>", "'&' that starts no known entity or character "
                                             "reference at line 1, column 14 (byte 13)"},
        {"<Error><Code>&#0;</Code></Error>", "'&' that starts no known entity or character "
                                             "reference at line 1, column 14 (byte 13)"},
        {"<Error><Code>&#xD800;</Code></Error>", "'&' that starts no known entity or character "
                                                 "reference at line 1, column 14 (byte 13)"},
        {"<Error><Code>&#x110000;</Code></Error>", "'&' that starts no known entity or character "
                                                   "reference at line 1, column 14 (byte 13)"},
        {"<Error><Code>&#X43;</Code></Error>", "'&' that starts no known entity or character "
                                               "reference at line 1, column 14 (byte 13)"},
        {"<Error><Code>&#;</Code></Error>", "'&' that starts no known entity or character "
                                            "reference at line 1, column 14 (byte 13)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[512];
        snprintf(want, sizeof(want), "S3 error body: %s", cases[i][1]);
        error_refused(cases[i][0], strlen(cases[i][0]), want);
    }
    /* A NUL byte in text that is read. */
    const char nul[] = "<Error><Code>a\0b</Code></Error>";
    error_refused(nul, sizeof(nul) - 1,
                  "S3 error body: a NUL byte in text at line 1, column 15 (byte 14)");
    /* Nesting: 64 levels are read, 65 are not. */
    char deep[2048] = "";
    strcat(deep, "<Error>");
    for (int i = 1; i < 64; i++)
        strcat(deep, "<a>");
    for (int i = 1; i < 64; i++)
        strcat(deep, "</a>");
    strcat(deep, "</Error>");
    error_ok(deep);
    strcpy(deep, "<Error>");
    for (int i = 1; i < 65; i++)
        strcat(deep, "<a>");
    error_refused(deep, strlen(deep),
                  "S3 error body: elements nested deeper than 64 at line 1, column 197 (byte 196)");
}

/* ---- ListObjectsV2 --------------------------------------------------------------------------- */

/* Collects "key|size|etag|prefix;" per entry; stops after `stop_at`. */
struct list_log {
    char text[16384];
    int calls;
    int stop_at;
};

static sl_status
log_entry(void *ctx, const struct sl__s3_list_entry *e, struct sl_error *err)
{
    struct list_log *log = ctx;
    size_t n = strlen(log->text);
    cr_assert_eq(strlen(e->key), e->key_len);
    snprintf(log->text + n, sizeof(log->text) - n, "%s|%llu|%s|%d;", e->key,
             (unsigned long long)e->size, e->etag, e->is_prefix);
    if (++log->calls == log->stop_at)
        return sl_error_set(err, SL_ECANCELED, NULL, "stopped at entry %d", log->calls);
    return SL_OK;
}

static const char *list_doc =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "    <Name>bucket</Name>\n"
    "    <Prefix/>\n"
    "    <KeyCount>3</KeyCount>\n"
    "    <MaxKeys>3</MaxKeys>\n"
    "    <Delimiter>/</Delimiter>\n"
    "    <IsTruncated>true</IsTruncated>\n"
    "    <Contents>\n"
    "        <Key>my-image.jpg</Key>\n"
    "        <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
    "        <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>\n"
    "        <Size>434234</Size>\n"
    "        <StorageClass>STANDARD</StorageClass>\n"
    "    </Contents>\n"
    "    <Contents><Size>0</Size><Key>a &amp; b/zarr.json</Key></Contents>\n"
    "    <CommonPrefixes><Prefix>photos/</Prefix></CommonPrefixes>\n"
    "    "
    "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>\n"
    "</ListBucketResult>\n";

Test(io_s3_xml, list_page_entries_prefixes_and_continuation)
{
    struct list_log log = {.text = ""};
    struct sl__s3_list_page page;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_list_parse(list_doc, strlen(list_doc), false, log_entry, &log, &page, &err),
                 SL_OK, "%s", err.text);
    cr_assert_str_eq(log.text, "my-image.jpg|434234|\"fba9dede5f27731c9771645a39863328\"|0;"
                               "a & b/zarr.json|0||0;"
                               "photos/|0||1;");
    cr_assert(page.is_truncated);
    cr_assert_str_eq(page.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    cr_assert_eq(page.n_objects, 2);
    cr_assert_eq(page.n_prefixes, 1);

    /* The callback's status stops the parse. */
    struct list_log stop = {.text = "", .stop_at = 2};
    err = SL_ERROR_INIT;
    cr_assert_eq(
        sl__s3_list_parse(list_doc, strlen(list_doc), false, log_entry, &stop, &page, &err),
        SL_ECANCELED);
    cr_assert_eq(stop.calls, 2);
    cr_assert_str_eq(err.text, "stopped at entry 2");

    /* A last page, empty. */
    const char *empty = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_list_parse(empty, strlen(empty), false, NULL, NULL, &page, &err), SL_OK,
                 "%s", err.text);
    cr_assert_not(page.is_truncated);
    cr_assert_str_eq(page.next_token, "");
    cr_assert_eq(page.n_objects + page.n_prefixes, 0);
}

Test(io_s3_xml, url_encoded_keys_are_decoded)
{
    const char *doc = "<ListBucketResult><EncodingType>url</EncodingType>"
                      "<Contents><Key>a%2Bb+c%20d%2F%C3%A9%0A</Key><Size>7</Size></Contents>"
                      "<CommonPrefixes><Prefix>x%2Fy/</Prefix></CommonPrefixes>"
                      "</ListBucketResult>";
    struct list_log log = {.text = ""};
    struct sl__s3_list_page page;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_list_parse(doc, strlen(doc), true, log_entry, &log, &page, &err), SL_OK,
                 "%s", err.text);
    cr_assert_str_eq(log.text, "a+b c d/\xc3\xa9\n|7||0;x/y/|0||1;");
    /* Not asked for: the text as it is. */
    log.text[0] = '\0';
    cr_assert_eq(sl__s3_list_parse(doc, strlen(doc), false, log_entry, &log, &page, &err), SL_OK);
    cr_assert_str_eq(log.text, "a%2Bb+c%20d%2F%C3%A9%0A|7||0;x%2Fy/|0||1;");
}

/* The page is refused with `message` (after "ListObjectsV2 page: ").
 * `what` is put inside <ListBucketResult>. */
static void
list_refused(const char *inner, bool url_encoded, const char *message)
{
    char doc[8192];
    snprintf(doc, sizeof(doc), "<ListBucketResult>%s</ListBucketResult>", inner);
    struct sl__s3_list_page page;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_list_parse(doc, strlen(doc), url_encoded, NULL, NULL, &page, &err),
                 SL_EPARSE, "accepted: %s", doc);
    char want[1024];
    snprintf(want, sizeof(want), "ListObjectsV2 page: %s", message);
    cr_assert_str_eq(err.text, want);
}

Test(io_s3_xml, bad_list_entries_are_refused)
{
    list_refused("<Contents><Size>1</Size></Contents>", false,
                 "<Contents> without <Key> at line 1, column 43 (byte 42)");
    list_refused("<Contents><Key>k</Key></Contents>", false,
                 "<Contents> without <Size> at line 1, column 41 (byte 40)");
    list_refused("<CommonPrefixes></CommonPrefixes>", false,
                 "<CommonPrefixes> without <Prefix> at line 1, column 35 (byte 34)");
    list_refused("<Contents><Key/><Size>1</Size></Contents>", false,
                 "an empty key, or one holding a NUL byte at line 1, column 49 (byte 48)");
    list_refused("<Contents><Key>a%00b</Key><Size>1</Size></Contents>", true,
                 "an empty key, or one holding a NUL byte at line 1, column 59 (byte 58)");
    list_refused("<Contents><Key>a%2</Key><Size>1</Size></Contents>", true,
                 "a key with a bad %-escape (encoding-type=url) at line 1, column 57 (byte 56)");
    const char *sizes[] = {"-1", "12x", "", "1 ", "9223372036854775808", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char inner[256], want[256];
        snprintf(inner, sizeof(inner), "<Contents><Key>k</Key><Size>%s</Size></Contents>",
                 sizes[i]);
        size_t at = 18 + strlen(inner) - 11;
        snprintf(want, sizeof(want),
                 "<Size> \"%s\" is not a decimal below 2^63 at line 1, column %zu (byte %zu)",
                 sizes[i], at + 1, at);
        list_refused(inner, false, want);
    }
    list_refused("<IsTruncated>maybe</IsTruncated>", false,
                 "<IsTruncated> is neither true nor false at line 1, column 37 (byte 36)");
    list_refused("<IsTruncated>true</IsTruncated>", false,
                 "<IsTruncated> is true but there is no <NextContinuationToken> at line 1, "
                 "column 69 (byte 68)");

    /* Keys of 1024 bytes are read; 1025 are not. */
    char inner[8192], key[1100];
    memset(key, 'k', 1025);
    key[1024] = '\0';
    snprintf(inner, sizeof(inner), "<Contents><Key>%s</Key><Size>1</Size></Contents>", key);
    char doc[8192];
    snprintf(doc, sizeof(doc), "<ListBucketResult>%s</ListBucketResult>", inner);
    struct sl__s3_list_page page;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_list_parse(doc, strlen(doc), false, NULL, NULL, &page, &err), SL_OK, "%s",
                 err.text);
    key[1024] = 'k';
    key[1025] = '\0';
    snprintf(inner, sizeof(inner), "<Contents><Key>%s</Key><Size>1</Size></Contents>", key);
    list_refused(inner, false,
                 "a key longer than S3's 1024 bytes at line 1, column 1079 (byte 1078)");
    /* A token of 2047 bytes fits, 2048 does not. */
    char token[2100];
    memset(token, 't', 2048);
    token[2048] = '\0';
    snprintf(inner, sizeof(inner), "<NextContinuationToken>%s</NextContinuationToken>", token);
    list_refused(inner, false,
                 "a continuation token longer than 2047 bytes at line 1, column 2090 (byte 2089)");

    const char *err_doc = "<Error><Code>AccessDenied</Code></Error>";
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_list_parse(err_doc, strlen(err_doc), false, NULL, NULL, &page, &err),
                 SL_EPARSE);
    cr_assert_str_eq(err.text, "ListObjectsV2 page: the root element is <Error>, not "
                               "<ListBucketResult> at line 1, column 1 (byte 0)");
}

Test(io_s3_xml, every_truncation_of_a_page_is_refused_and_garbage_never_crashes)
{
    size_t n = strlen(list_doc), end = n;
    while (end > 0 && list_doc[end - 1] == '\n')
        end--;
    for (size_t k = 0; k < end; k++) {
        char *copy = malloc(k + 1); /* exactly k bytes readable, for ASan */
        cr_assert_not_null(copy);
        memcpy(copy, list_doc, k);
        struct sl__s3_list_page page;
        struct sl_error err = SL_ERROR_INIT;
        struct list_log log = {.text = ""};
        sl_status st = sl__s3_list_parse(copy, k, false, log_entry, &log, &page, &err);
        cr_assert_eq(st, SL_EPARSE, "%zu bytes: %s", k, sl_status_name(st));
        cr_assert_neq(err.text[0], '\0');
        cr_assert_leq(err.position, k);
        free(copy);
    }
    /* Pseudo-random bytes, and random mixes of markup. */
    uint32_t seed = 12345;
    static const char *parts[] = {"<",
                                  ">",
                                  "</",
                                  "/>",
                                  "<ListBucketResult>",
                                  "</ListBucketResult>",
                                  "<Contents>",
                                  "</Contents>",
                                  "<Key>",
                                  "</Key>",
                                  "&",
                                  ";",
                                  "&#",
                                  "x",
                                  "<!--",
                                  "-->",
                                  "<![CDATA[",
                                  "]]>",
                                  "\"",
                                  "'",
                                  "\n",
                                  "<?",
                                  "?>",
                                  "<Size>",
                                  "</Size>",
                                  "1",
                                  "&amp;",
                                  "%"};
    for (int round = 0; round < 2000; round++) {
        char buf[512];
        size_t len = 0;
        while (len < 400) {
            seed = seed * 1103515245u + 12345u;
            if (round % 2 == 0) {
                buf[len++] = (char)(seed >> 16);
            } else {
                const char *p = parts[(seed >> 16) % (sizeof(parts) / sizeof(parts[0]))];
                memcpy(buf + len, p, strlen(p));
                len += strlen(p);
            }
        }
        struct sl__s3_list_page page;
        struct sl_error err = SL_ERROR_INIT;
        sl_status st = sl__s3_list_parse(buf, len, round % 4 == 1, NULL, NULL, &page, &err);
        cr_assert(st == SL_OK || (st == SL_EPARSE && err.text[0] != '\0'));
        struct sl__s3_error_body e;
        err = SL_ERROR_INIT;
        st = sl__s3_error_parse(buf, len, &e, &err);
        cr_assert(st == SL_OK || (st == SL_EPARSE && err.text[0] != '\0'));
    }
}

/* ---- DeleteObjects --------------------------------------------------------------------------- */

static const char *
body_of(const char *const *keys, size_t n, struct sl_buf *b)
{
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_delete_body(keys, n, b, &err), SL_OK, "%s", err.text);
    cr_assert_eq(strlen((const char *)b->data), b->size);
    return (const char *)b->data;
}

Test(io_s3_xml, delete_body_escapes_keys)
{
    const char *keys[] = {"a/c/0",     "x&y<z>\"q'",  "line\r\nbreak",
                          "tab\tkept", "caf\xc3\xa9", " spaces "};
    struct sl_buf b = SL_BUF_INIT;
    cr_assert_str_eq(body_of(keys, 6, &b),
                     "<Delete><Quiet>true</Quiet>"
                     "<Object><Key>a/c/0</Key></Object>"
                     "<Object><Key>x&amp;y&lt;z&gt;&quot;q&apos;</Key></Object>"
                     "<Object><Key>line&#13;&#10;break</Key></Object>"
                     "<Object><Key>tab\tkept</Key></Object>"
                     "<Object><Key>caf\xc3\xa9</Key></Object>"
                     "<Object><Key> spaces </Key></Object>"
                     "</Delete>");
    /* 1000 keys are one request. */
    const char *many[SL__S3_DELETE_MAX];
    for (size_t i = 0; i < SL__S3_DELETE_MAX; i++)
        many[i] = "k";
    body_of(many, SL__S3_DELETE_MAX, &b);
    cr_assert_eq(b.size, 27 + 1000 * 29 + 9);
    sl_buf_fini(&b);
}

static void
delete_body_refused(const char *const *keys, size_t n, const char *message)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_delete_body(keys, n, &b, &err), SL_EINVAL, "%s", message);
    cr_assert_str_eq(err.text, message);
    cr_assert_eq(b.size, 0);
    sl_buf_fini(&b);
}

Test(io_s3_xml, delete_body_refuses_what_xml_cannot_carry)
{
    const char *one[] = {"k"};
    delete_body_refused(one, 0, "DeleteObjects takes 1 to 1000 keys, not 0");
    delete_body_refused(one, 1001, "DeleteObjects takes 1 to 1000 keys, not 1001");
    const char *empty[] = {"k", ""};
    delete_body_refused(empty, 2, "DeleteObjects: key 1 is empty");
    const char *bad[][2] = {
        {"a\x01", "byte 0x01 at offset 1"},        {"ab\xff", "byte 0xff at offset 2"},
        {"\xef\xbf\xbe", "byte 0xef at offset 0"}, /* U+FFFE */
        {"x\xc0\xaf", "byte 0xc0 at offset 1"},    /* an overlong '/' */
        {"\xed\xa0\x80", "byte 0xed at offset 0"}, /* a surrogate */
        {"\xe2\x82", "byte 0xe2 at offset 0"},     /* cut short */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *keys[] = {"fine", bad[i][0]};
        char want[256];
        snprintf(want, sizeof(want),
                 "DeleteObjects: key 1 holds %s, no UTF-8 character XML 1.0 can carry", bad[i][1]);
        delete_body_refused(keys, 2, want);
    }
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_xml_escape(&b, "a\x1f", 2, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "byte 0x1f at offset 1 is no UTF-8 character XML 1.0 can carry");
    sl_buf_fini(&b);
}

/* Collects "D:key;" or "E:key:code:message;". */
static sl_status
log_item(void *ctx, const struct sl__s3_delete_item *it, struct sl_error *err)
{
    (void)err;
    char *out = ctx;
    size_t n = strlen(out);
    if (it->deleted)
        snprintf(out + n, 8192 - n, "D:%s;", it->key);
    else
        snprintf(out + n, 8192 - n, "E:%s:%s:%s;", it->key, it->code, it->message);
    return SL_OK;
}

Test(io_s3_xml, delete_result_of_the_s3_documentation)
{
    const char *doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
                      "  <Deleted>\n"
                      "    <Key>sample1.txt</Key>\n"
                      "  </Deleted>\n"
                      "  <Error>\n"
                      "    <Key>sample2.txt</Key>\n"
                      "    <Code>AccessDenied</Code>\n"
                      "    <Message>Access Denied</Message>\n"
                      "  </Error>\n"
                      "  <Error><Key>x &amp; y</Key><Code>InternalError</Code></Error>\n"
                      "</DeleteResult>";
    char log[8192] = "";
    size_t deleted = 99, failed = 99;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(
        sl__s3_delete_result_parse(doc, strlen(doc), log_item, log, &deleted, &failed, &err), SL_OK,
        "%s", err.text);
    cr_assert_str_eq(log, "D:sample1.txt;E:sample2.txt:AccessDenied:Access Denied;"
                          "E:x & y:InternalError:;");
    cr_assert_eq(deleted, 1);
    cr_assert_eq(failed, 2);

    const char *quiet = "<DeleteResult></DeleteResult>";
    cr_assert_eq(
        sl__s3_delete_result_parse(quiet, strlen(quiet), NULL, NULL, &deleted, &failed, &err),
        SL_OK);
    cr_assert_eq(deleted + failed, 0);

    const char *nokey = "<DeleteResult><Error><Code>X</Code></Error></DeleteResult>";
    cr_assert_eq(sl__s3_delete_result_parse(nokey, strlen(nokey), NULL, NULL, NULL, NULL, &err),
                 SL_EPARSE);
    cr_assert_str_eq(err.text, "DeleteObjects result: <Error> without <Key> at line 1, column 36 "
                               "(byte 35)");
}

/* Keys escaped into a DeleteObjects result and a listing read back the same. */
Test(io_s3_xml, escaped_keys_read_back_unchanged)
{
    const char *keys[] = {"plain/key", "&<>\"'",       "cr\rlf\ncrlf\r\n",
                          "\ttabs\t",  " lead trail ", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                          "%41+b",     "]]>",          "a&amp;b"};
    size_t n = sizeof(keys) / sizeof(keys[0]);
    struct sl_buf del = SL_BUF_INIT, list = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_buf_append(&del, "<DeleteResult>", 14, &err), SL_OK);
    cr_assert_eq(sl_buf_append(&list, "<ListBucketResult>", 18, &err), SL_OK);
    char want_del[8192] = "", want_list[8192] = "";
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(sl_buf_append(&del, "<Deleted><Key>", 14, &err), SL_OK);
        cr_assert_eq(sl__s3_xml_escape(&del, keys[i], strlen(keys[i]), &err), SL_OK, "%s",
                     err.text);
        cr_assert_eq(sl_buf_append(&del, "</Key></Deleted>", 16, &err), SL_OK);
        cr_assert_eq(sl_buf_append(&list, "<Contents><Key>", 15, &err), SL_OK);
        cr_assert_eq(sl__s3_xml_escape(&list, keys[i], strlen(keys[i]), &err), SL_OK);
        cr_assert_eq(sl_buf_append(&list, "</Key><Size>1</Size></Contents>", 31, &err), SL_OK);
        size_t k = strlen(want_del);
        snprintf(want_del + k, sizeof(want_del) - k, "D:%s;", keys[i]);
        k = strlen(want_list);
        snprintf(want_list + k, sizeof(want_list) - k, "%s|1||0;", keys[i]);
    }
    cr_assert_eq(sl_buf_append(&del, "</DeleteResult>", 15, &err), SL_OK);
    cr_assert_eq(sl_buf_append(&list, "</ListBucketResult>", 19, &err), SL_OK);
    char got[8192] = "";
    cr_assert_eq(sl__s3_delete_result_parse((const char *)del.data, del.size, log_item, got, NULL,
                                            NULL, &err),
                 SL_OK, "%s", err.text);
    cr_assert_str_eq(got, want_del);
    struct list_log log = {.text = ""};
    struct sl__s3_list_page page;
    cr_assert_eq(
        sl__s3_list_parse((const char *)list.data, list.size, false, log_entry, &log, &page, &err),
        SL_OK, "%s", err.text);
    cr_assert_str_eq(log.text, want_list);
    sl_buf_fini(&del);
    sl_buf_fini(&list);
}

/* ---- multipart uploads ----------------------------------------------------------------------- */

Test(io_s3_xml, initiate_answer_of_the_s3_documentation)
{
    const char *doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<InitiateMultipartUploadResult "
                      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
                      "  <Bucket>example-bucket</Bucket>\n"
                      "  <Key>example-object</Key>\n"
                      "  <UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"
                      "</UploadId>\n"
                      "</InitiateMultipartUploadResult>";
    char id[1024];
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_initiate_parse(doc, strlen(doc), id, sizeof(id), &err), SL_OK, "%s",
                 err.text);
    cr_assert_str_eq(id, "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
    /* Entities are decoded (an id with '&' is not S3's, but is XML's). */
    const char *amp = "<InitiateMultipartUploadResult><UploadId>a&amp;b</UploadId>"
                      "</InitiateMultipartUploadResult>";
    cr_assert_eq(sl__s3_initiate_parse(amp, strlen(amp), id, sizeof(id), &err), SL_OK, "%s",
                 err.text);
    cr_assert_str_eq(id, "a&b");
}

/* `doc` is refused with a message containing `what`, and `id` left "". */
static void
initiate_refused(const char *doc, size_t size, const char *what)
{
    char id[64] = "x";
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_initiate_parse(doc, strlen(doc), id, size, &err), SL_EPARSE, "accepted: %s",
                 doc);
    cr_assert_not_null(strstr(err.text, what), "%s: %s", doc, err.text);
    cr_assert_str_eq(id, "");
}

Test(io_s3_xml, initiate_answers_without_a_usable_upload_id_are_refused)
{
    initiate_refused("<InitiateMultipartUploadResult><Key>k</Key>"
                     "</InitiateMultipartUploadResult>",
                     64, "no <UploadId> at line 1");
    initiate_refused("<InitiateMultipartUploadResult><UploadId></UploadId>"
                     "</InitiateMultipartUploadResult>",
                     64, "an empty <UploadId>");
    initiate_refused("<InitiateMultipartUploadResult><UploadId>0123456789</UploadId>"
                     "</InitiateMultipartUploadResult>",
                     8, "an <UploadId> longer than 7 bytes");
    initiate_refused("<Error><Code>AccessDenied</Code></Error>", 64,
                     "the root element is <Error>, not <InitiateMultipartUploadResult>");
    initiate_refused("<InitiateMultipartUploadResult><UploadId>abc", 64,
                     "truncated: <UploadId> is never closed");
    initiate_refused("", 64, "no element");
}

Test(io_s3_xml, complete_answer_gives_the_etag_entity_decoded)
{
    const char *doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<CompleteMultipartUploadResult "
                      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
                      "  <Location>http://Example-Bucket.s3.Region.amazonaws.com/Example-Object"
                      "</Location>\n"
                      "  <Bucket>Example-Bucket</Bucket>\n"
                      "  <Key>Example-Object</Key>\n"
                      "  <ETag>&quot;3858f62230ac3c915f300c664312c11f-9&quot;</ETag>\n"
                      "</CompleteMultipartUploadResult>";
    struct sl__s3_complete_result r;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_complete_parse(doc, strlen(doc), &r, &err), SL_OK, "%s", err.text);
    cr_assert(!r.failed);
    cr_assert_str_eq(r.etag, "\"3858f62230ac3c915f300c664312c11f-9\"");
    /* No ETag: "" (the store then forgets the key's version). */
    const char *bare = "<CompleteMultipartUploadResult><Key>k</Key>"
                       "</CompleteMultipartUploadResult>";
    cr_assert_eq(sl__s3_complete_parse(bare, strlen(bare), &r, &err), SL_OK, "%s", err.text);
    cr_assert(!r.failed);
    cr_assert_str_eq(r.etag, "");
}

Test(io_s3_xml, complete_answer_with_an_error_inside_a_200_is_a_failure)
{
    /* S3's documentation: a 200 whose body is an error. */
    const char *doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\n"
                      "<Error>\n"
                      "  <Code>InternalError</Code>\n"
                      "  <Message>We encountered an internal error. Please try again.</Message>\n"
                      "  <RequestId>656c76696e6727732072657175657374</RequestId>\n"
                      "  <ETag>&quot;not-this-one&quot;</ETag>\n"
                      "</Error>";
    struct sl__s3_complete_result r;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_complete_parse(doc, strlen(doc), &r, &err), SL_OK, "%s", err.text);
    cr_assert(r.failed);
    cr_assert_str_eq(r.error.code, "InternalError");
    cr_assert_str_eq(r.error.message, "We encountered an internal error. Please try again.");
    cr_assert_str_eq(r.etag, "");
}

Test(io_s3_xml, bad_complete_answers_are_refused)
{
    const char *cases[][2] = {
        {"<ListBucketResult/>",
         "the root element is <ListBucketResult>, not <CompleteMultipartUploadResult> or "
         "<Error>"},
        {"<CompleteMultipartUploadResult><ETag>&quot;a&#10;X-Evil: 1&quot;</ETag>"
         "</CompleteMultipartUploadResult>",
         "an <ETag> holding control character 0x0a at byte 2"},
        {"<CompleteMultipartUploadResult><ETag>\"x</ETag>", "truncated"},
        {"<CompleteMultipartUploadResult><ETag>&bogus;</ETag></CompleteMultipartUploadResult>",
         "'&' that starts no known entity"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sl__s3_complete_result r;
        struct sl_error err = SL_ERROR_INIT;
        const char *doc = cases[i][0];
        cr_assert_eq(sl__s3_complete_parse(doc, strlen(doc), &r, &err), SL_EPARSE, "accepted: %s",
                     doc);
        cr_assert_not_null(strstr(err.text, cases[i][1]), "%s: %s", doc, err.text);
        cr_assert(!r.failed);
        cr_assert_str_eq(r.etag, "");
    }
    /* An ETag of 200 bytes does not fit. */
    char doc[512];
    snprintf(doc, sizeof(doc),
             "<CompleteMultipartUploadResult><ETag>%0200d</ETag></CompleteMultipartUploadResult>",
             0);
    struct sl__s3_complete_result r;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_complete_parse(doc, strlen(doc), &r, &err), SL_EPARSE);
    cr_assert_not_null(strstr(err.text, "an <ETag> longer than 127 bytes"), "%s", err.text);
    /* Every truncation of a good answer is refused, reading only what is given. */
    const char *good = "<CompleteMultipartUploadResult><ETag>&quot;e&quot;</ETag>"
                       "</CompleteMultipartUploadResult>";
    for (size_t k = 0; k < strlen(good); k++) {
        char *copy = malloc(k + 1);
        cr_assert_not_null(copy);
        memcpy(copy, good, k);
        err = SL_ERROR_INIT;
        cr_assert_eq(sl__s3_complete_parse(copy, k, &r, &err), SL_EPARSE, "%zu bytes", k);
        cr_assert_leq(err.position, k);
        free(copy);
    }
}
