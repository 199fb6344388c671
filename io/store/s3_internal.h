/* SPDX-License-Identifier: MIT */
/*
 * The parts of an S3 store (issue 20) that do no network I/O, each tested
 * alone: AWS Signature Version 4 (s3_sign.c), credentials and settings
 * from the environment and the AWS files (s3_creds.c, over the INI reader
 * of s3_ini.c), bucket addressing (s3_url.c), and the XML of S3's answers
 * and of DeleteObjects requests (s3_xml.c, s3_xml_write.c).  The store itself sends what
 * these build through the I/O engine (engine_internal.h).  None of them
 * needs libcurl.  Private to io/store and its tests.
 *
 * Secrets: the secret access key and the session token never appear in a
 * message, an error record or sl__s3_config_describe.  The one place a
 * session token shows is the canonical request of a signature, because
 * AWS signs it there (struct sl__s3_signature).
 */
#ifndef SL_S3_INTERNAL_H
#define SL_S3_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/buf.h>
#include <sluice/error.h>
#include <sluice/sha256.h>

/* ---- Signature Version 4 (s3_sign.c) --------------------------------------------------------- */

/* The payload hash of a request whose body is not signed. */
#define SL__S3_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
/* The payload hash of an empty body (GET, HEAD, DELETE). */
#define SL__S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Query parameters and further headers one request may sign; S3's
 * requests use a handful. */
#define SL__S3_MAX_PARAMS 32
#define SL__S3_MAX_HEADERS 32
/* Room for the Authorization value ("AWS4-HMAC-SHA256 Credential=...,
 * SignedHeaders=..., Signature=..."). */
#define SL__S3_AUTH_MAX 1024
/* Characters of an x-amz-date value ("20130524T000000Z"). */
#define SL__S3_AMZ_DATE_CHARS 16
/* The longest secret access key signing takes (AWS's have 40 characters). */
#define SL__S3_SECRET_MAX 256

/* A name and a value: a query parameter or a header.  Borrowed. */
struct sl__s3_kv {
    const char *name;
    const char *value;
};

/* What a request is signed with; borrowed strings. */
struct sl__s3_creds {
    const char *access_key;    /* AWS_ACCESS_KEY_ID: named in Credential= */
    const char *secret_key;    /* AWS_SECRET_ACCESS_KEY: never in a message */
    const char *session_token; /* AWS_SESSION_TOKEN, or NULL: never in a message */
};

/*
 * One request to sign.  Borrowed for the call.  The request sent must
 * carry exactly the headers signed: Host = `host`, x-amz-date (from the
 * signature), x-amz-content-sha256 = the payload hash (unless
 * `omit_content_sha256`), x-amz-security-token = the session token when
 * there is one, every header of `headers`, then Authorization.
 */
struct sl__s3_request {
    const char *method;              /* "GET", "PUT", "HEAD", "DELETE", "POST" */
    const char *host;                /* the Host header: "b.s3.us-east-1.amazonaws.com", "h:9000" */
    const char *path;                /* the URL's path, starting with '/'; NULL or "": "/" */
    bool path_encoded;               /* `path` is encoded already (sl__s3_uri_encode); else raw */
    const struct sl__s3_kv *params;  /* the query, raw (not encoded); value NULL or "": "name=" */
    size_t n_params;                 /* at most SL__S3_MAX_PARAMS */
    const struct sl__s3_kv *headers; /* more headers to sign (range, if-none-match, content-md5,
                                        content-type, ...); names in any case; values are trimmed
                                        and inner runs of blanks become one space; a repeated
                                        name signs its values joined by ',' in the order given */
    size_t n_headers;                /* at most SL__S3_MAX_HEADERS */
    const char *payload_hash;        /* 64 lowercase hex digits (SHA-256 of the body) or
                                        SL__S3_UNSIGNED_PAYLOAD; NULL: SL__S3_EMPTY_SHA256 */
    bool omit_content_sha256;        /* do not sign x-amz-content-sha256: for services other
                                        than S3 (AWS's generic test suite); S3 requires it */
    const char *region;              /* "us-east-1" */
    const char *service;             /* NULL: "s3" */
    int64_t time;                    /* the request's time, seconds since 1970 (UTC) */
};

/*
 * A signature and what it was computed from.  The caller owns it; reusing
 * one across requests keeps signing free of allocation once its buffers
 * have grown.  `canonical` holds the session token (AWS signs it): never
 * log it when there is one.
 */
struct sl__s3_signature {
    char amz_date[SL__S3_AMZ_DATE_CHARS + 1]; /* send as x-amz-date */
    char signature[SL_SHA256_HEX_CHARS + 1];  /* hex HMAC of the string to sign */
    char authorization[SL__S3_AUTH_MAX];      /* send as Authorization */
    char signed_headers[SL__S3_AUTH_MAX / 2]; /* "host;x-amz-content-sha256;x-amz-date" */
    struct sl_buf canonical;                  /* the canonical request, NUL-terminated
                                                 (`size` leaves the NUL out) */
    struct sl_buf to_sign;                    /* the string to sign, NUL-terminated */
    struct sl_buf scratch;                    /* encoded parameters, cleaned header values */
};
#define SL__S3_SIGNATURE_INIT ((struct sl__s3_signature){.amz_date = ""})

/*
 * Sign `req` with `creds` (AWS Signature Version 4, header form): build
 * the canonical request (method, URI-encoded path with each segment
 * encoded and '/' kept, the query sorted by encoded name then value,
 * lowercase sorted headers, signed header list, payload hash), the string
 * to sign, the signing key (HMAC chain of date, region, service,
 * "aws4_request") and the signature; fill `sig`.
 * @return SL_OK; SL_EINVAL naming what is wrong (a missing field, a header
 * or parameter too many, a header name that is no HTTP token, a header
 * value with CR, LF or NUL, a header signing sets itself such as host, an
 * encoded path with a bad escape, a time outside years 1970-9999, a
 * secret longer than SL__S3_SECRET_MAX; never quoting the secret or the
 * token); SL_EOVERFLOW (the Authorization value does not fit); SL_ENOMEM.
 * On failure `sig`'s strings are empty.
 */
sl_status sl__s3_sign(const struct sl__s3_request *req, const struct sl__s3_creds *creds,
                      struct sl__s3_signature *sig, struct sl_error *err);

/* Free a signature's buffers, wiping the canonical request first (it may
 * hold a session token).  Leaves it as SL__S3_SIGNATURE_INIT. */
void sl__s3_signature_fini(struct sl__s3_signature *sig);

/*
 * Append the `n` bytes at `s`, URI-encoded as AWS signs them, to `out`:
 * unreserved characters (A-Z a-z 0-9 - . _ ~) as they are, '/' as it is
 * when `keep_slash` (a path) or as %2F (a query name or value), every
 * other byte as %XX with uppercase hex digits.  S3's paths are encoded
 * once (other AWS services encode twice; sluice talks only to S3).
 * @return SL_OK, SL_ENOMEM or SL_EOVERFLOW.
 */
sl_status sl__s3_uri_encode(struct sl_buf *out, const char *s, size_t n, bool keep_slash,
                            struct sl_error *err);

/*
 * The Signature Version 4 signing key of `secret` for `date` ("YYYYMMDD"),
 * `region` and `service`: HMAC("AWS4" secret, date), then region, service,
 * "aws4_request".  False (key untouched) when `secret` is longer than
 * SL__S3_SECRET_MAX.
 */
bool sl__s3_signing_key(const char *secret, const char *date, const char *region,
                        const char *service, uint8_t key[SL_SHA256_BYTES]);

/* Format `t` (seconds since 1970, UTC) as an x-amz-date, "YYYYMMDDTHHMMSSZ";
 * false for a time before 1970 or after 9999. */
bool sl__s3_amz_date(int64_t t, char out[SL__S3_AMZ_DATE_CHARS + 1]);

/* ---- configuration and credentials (s3_creds.c, s3_ini.c) ------------------------------------ */

/* The value of environment variable `name`, or NULL when it is unset. */
typedef const char *sl__s3_env_fn(void *ctx, const char *name);

/* How a bucket is addressed: AUTO is virtual-hosted on AWS (path-style for
 * bucket names with a '.'), path-style on another endpoint. */
enum sl__s3_addressing {
    SL__S3_ADDRESSING_AUTO,
    SL__S3_ADDRESSING_VIRTUAL, /* https://BUCKET.s3.REGION.amazonaws.com/KEY */
    SL__S3_ADDRESSING_PATH,    /* https://s3.REGION.amazonaws.com/BUCKET/KEY */
};

/* Where the settings come from; zeroed: the process's environment and
 * files.  Every pointer is borrowed for the call. */
struct sl__s3_config_opts {
    sl__s3_env_fn *env;               /* NULL: getenv */
    void *env_ctx;                    /* passed to env */
    const char *profile;              /* NULL: $AWS_PROFILE, else "default" */
    const char *credentials_file;     /* NULL: $AWS_SHARED_CREDENTIALS_FILE, else
                                         $HOME/.aws/credentials */
    const char *config_file;          /* NULL: $AWS_CONFIG_FILE, else $HOME/.aws/config */
    bool anonymous;                   /* unsigned requests: no credentials are looked up */
    const struct sl_allocator *alloc; /* NULL: the default allocator */
};

/*
 * Settings for S3 requests, resolved once (sl__s3_config_resolve).  The
 * strings are owned and come from `alloc`.  Credentials come from the
 * first of: AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY (and
 * AWS_SESSION_TOKEN); the profile's section of the credentials file
 * (aws_access_key_id, aws_secret_access_key, aws_session_token); the
 * profile's section of the config file.  The region from AWS_REGION, then
 * AWS_DEFAULT_REGION, then the profile's `region`, else "us-east-1".  The
 * endpoint from AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL, then the
 * profile's `endpoint_url`, else AWS's.
 */
struct sl__s3_config {
    char *access_key;                  /* NULL when anonymous */
    char *secret_key;                  /* NULL when anonymous; never in a message */
    char *session_token;               /* NULL: none; never in a message */
    char *region;                      /* never NULL */
    char *endpoint;                    /* NULL: AWS; else "http(s)://host[:port][/path]" */
    char *profile;                     /* the profile looked up */
    char *creds_file;                  /* the file the credentials came from, or NULL */
    enum sl__s3_addressing addressing; /* the profile's "s3 =" "addressing_style" */
    bool anonymous;                    /* requests go unsigned */
    const char *creds_from;            /* "environment", "credentials file", "config file",
                                          "none (anonymous)": static */
    const char *region_from;           /* "AWS_REGION", "AWS_DEFAULT_REGION", "config file",
                                          "default": static */
    const char *endpoint_from;         /* "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL",
                                          "config file", "default": static */
    struct sl_allocator alloc;         /* where the strings come from */
};

/*
 * Resolve the settings of `o` (NULL: all defaults) into `out`, which the
 * caller releases with sl__s3_config_fini whatever this returns.  Missing
 * files are fine; a profile named explicitly must exist in one of them.
 * @return SL_OK; SL_ENOTFOUND (no credentials anywhere and not anonymous,
 * or a named profile in neither file: the message says where it looked);
 * SL_EPARSE (a malformed line: the file and line number, never the line's
 * text, which may hold a secret); SL_EINVAL (only one of the access key
 * and the secret set, a bad region or endpoint URL); SL_EIO (a file that
 * exists but cannot be read, or is over 1 MiB); SL_ENOMEM.
 */
sl_status sl__s3_config_resolve(const struct sl__s3_config_opts *o, struct sl__s3_config *out,
                                struct sl_error *err);

/* Free the strings of `c`, wiping the secret and the token first; `c` is
 * zeroed.  Safe on a zeroed config and after a failed resolve. */
void sl__s3_config_fini(struct sl__s3_config *c);

/* The credentials of `c` for sl__s3_sign (borrowed from `c`). */
struct sl__s3_creds sl__s3_config_creds(const struct sl__s3_config *c);

/*
 * One line for messages and `--verbose` output, e.g. "profile default,
 * access key AKIA...MPLE from environment, session token: yes, region
 * eu-west-1 from AWS_REGION, endpoint AWS, addressing auto": the access
 * key shortened to its first and last four characters (one of 8 or fewer
 * only counted), the secret and the token never.  `c` may be half
 * resolved (after a failed sl__s3_config_resolve).
 * @return the length the whole line needs, as snprintf does.
 */
size_t sl__s3_config_describe(const struct sl__s3_config *c, char *buf, size_t size);

/* One "key = value" line of an INI file.  `parent` is the key of an
 * indented block ("s3" for "s3 =" followed by "  addressing_style = path"),
 * else NULL.  A status other than SL_OK stops the parse and is returned. */
typedef sl_status sl__s3_ini_fn(void *ctx, const char *section, const char *parent, const char *key,
                                const char *value, int line, struct sl_error *err);

/*
 * Parse INI text as the AWS files use it: "[section]" lines, "key = value"
 * lines (whitespace around both trimmed; no inline comments, as Python's
 * configparser), indented lines under a key as its nested settings, blank
 * lines and lines starting with '#' or ';' ignored, CRLF line ends, a
 * leading UTF-8 byte order mark skipped.  `text` holds `n` bytes and one
 * more after them that may be written; it is modified: pieces are
 * NUL-terminated in place, so the strings passed to `fn` live as long as
 * `text`.  `file` names the file in messages.
 * @return SL_OK, what `fn` returned, or SL_EPARSE naming `file` and the
 * line number and what is wrong (never the line's text, which may hold a
 * secret): no '=', a setting before any section, a bad section header, a
 * NUL byte.
 */
sl_status sl__s3_ini_parse(char *text, size_t n, const char *file, sl__s3_ini_fn *fn, void *ctx,
                           struct sl_error *err);

/* ---- addressing (s3_url.c) ------------------------------------------------------------------- */

/* What "s3://BUCKET/PREFIX" names, and where its requests go. */
struct sl__s3_location {
    char bucket[64];        /* the bucket's name (3 to 63 characters) */
    char prefix[1024];      /* the keys' prefix, raw, without a leading or trailing '/'; may be
                               "" */
    char origin[320];       /* "https://b.s3.us-east-1.amazonaws.com", "http://h:9000" */
    char host[256];         /* the Host header of every request: origin's host[:port], the port
                               left out when it is the scheme's default */
    char bucket_path[1024]; /* the encoded path of bucket-level requests (ListObjectsV2,
                               DeleteObjects): "/" virtual-hosted, "/b" path-style (after an
                               endpoint's own path, if any) */
    char base_url[2048];    /* origin, the path of the bucket and the encoded prefix, without a
                               trailing '/': for messages */
    bool path_style;        /* the bucket is in the path, not the host */
};

/*
 * Check an S3 bucket name (the rules of AWS's "Bucket naming rules"): 3 to
 * 63 characters of lowercase letters, digits, '.' and '-'; a letter or
 * digit first and last; no "..", ".-" or "-."; not an IPv4 address; no
 * prefix "xn--", "sthree-" or "amzn-s3-demo-"; no suffix "-s3alias",
 * "--ol-s3", ".mrap" or "--x-s3".  `url` is named in the message.
 * @return SL_OK or SL_EINVAL naming `url` and the rule broken.
 */
sl_status sl__s3_bucket_check(const char *bucket, const char *url, struct sl_error *err);

/*
 * Parse `url` ("s3://bucket" or "s3://bucket/prefix/x.zarr", scheme in any
 * case) and place it: on AWS (`endpoint` NULL) virtual-hosted
 * "https://bucket.s3.REGION.amazonaws.com" (amazonaws.com.cn for cn-
 * regions; path-style "https://s3.REGION.amazonaws.com/bucket" for names
 * with a '.', whose host would not match AWS's TLS certificate, or when
 * asked); on another endpoint ("http(s)://host[:port][/path]") path-style
 * "ENDPOINT/bucket", or virtual "http(s)://bucket.host" when asked.
 * @return SL_OK; SL_EINVAL naming `url` and what is wrong: another scheme,
 * a bad bucket name, a prefix with an empty, "." or ".." component, a '?'
 * or '#', a region that is not lowercase letters, digits and '-', an
 * endpoint that is no http(s) URL or has a query, or a result too long.
 */
sl_status sl__s3_location_parse(const char *url, const char *endpoint, const char *region,
                                enum sl__s3_addressing addressing, struct sl__s3_location *out,
                                struct sl_error *err);

/*
 * The URL of object `key` (relative to the location's prefix; already
 * checked as a store key) into `url`, and its encoded path, what signing
 * takes (path_encoded), into `path`; both replace their buffers' contents,
 * NUL-terminated; either may be NULL.  The prefix and the key are encoded
 * with sl__s3_uri_encode, '/' kept.
 * @return SL_OK, SL_ENOMEM or SL_EOVERFLOW.
 */
sl_status sl__s3_object_url(const struct sl__s3_location *loc, const char *key, struct sl_buf *url,
                            struct sl_buf *path, struct sl_error *err);

/* ---- XML (s3_xml.c reads, s3_xml_write.c writes) --------------------------------------------- */

/* The most keys one DeleteObjects request may name. */
#define SL__S3_DELETE_MAX 1000
/* The longest key S3 stores, in bytes. */
#define SL__S3_KEY_MAX 1024

/* What an S3 error body says. */
struct sl__s3_error_body {
    char code[128];    /* e.g. "NoSuchKey", "SlowDown"; "" when absent */
    char message[384]; /* entities decoded; cut (ending in "...") when longer */
};

/*
 * Read an error body ("<Error><Code>...</Code><Message>...</Message>...
 * </Error>", entities decoded: &amp; &lt; &gt; &quot; &apos; &#N; &#xN;).
 * Other elements are skipped.
 * @return SL_OK; SL_EPARSE naming line, column and byte of the problem
 * (not XML, truncated, nesting deeper than 64, a DTD, a root other than
 * Error, an unknown entity).  Never reads past `n`; never allocates.
 */
sl_status sl__s3_error_parse(const char *body, size_t n, struct sl__s3_error_body *out,
                             struct sl_error *err);

/* One entry of a listing page, valid during the callback. */
struct sl__s3_list_entry {
    const char *key;  /* the whole key (or common prefix), decoded, NUL-terminated */
    size_t key_len;   /* strlen(key) */
    uint64_t size;    /* bytes; 0 for a common prefix */
    const char *etag; /* as S3 gives it (quotes included), "" if absent or a prefix */
    bool is_prefix;   /* a <CommonPrefixes> entry (a listing with a delimiter) */
};

/* Called once per entry in document order; a status other than SL_OK stops
 * the parse and is returned. */
typedef sl_status sl__s3_list_fn(void *ctx, const struct sl__s3_list_entry *e,
                                 struct sl_error *err);

/* What a ListObjectsV2 page says besides its entries. */
struct sl__s3_list_page {
    bool is_truncated;     /* more pages follow */
    char next_token[2048]; /* NextContinuationToken, "" when none */
    size_t n_objects;      /* <Contents> entries passed to the callback */
    size_t n_prefixes;     /* <CommonPrefixes> entries passed to the callback */
};

/*
 * Read one ListObjectsV2 page (<ListBucketResult>): each <Contents> (Key,
 * Size, ETag) and <CommonPrefixes> (Prefix) to `fn`, IsTruncated and
 * NextContinuationToken into `page`.  `url_encoded`: the request asked
 * encoding-type=url, so keys and prefixes are percent-decoded.
 * @return SL_OK, what `fn` returned, or SL_EPARSE naming line, column and
 * byte: malformed or truncated XML, another root, an entry without Key or
 * Size, a Size that is not a decimal below 2^63, a key empty, longer than
 * SL__S3_KEY_MAX or holding a NUL, a truncated page without a token, a
 * token longer than next_token.  Never allocates.
 */
sl_status sl__s3_list_parse(const char *body, size_t n, bool url_encoded, sl__s3_list_fn *fn,
                            void *ctx, struct sl__s3_list_page *page, struct sl_error *err);

/* Whether code point `c` may appear in an XML 1.0 document (its Char
 * production: tab, LF, CR, U+0020-U+D7FF, U+E000-U+FFFD, U+10000 on). */
bool sl__s3_xml_is_char(uint32_t c);

/*
 * Append `n` bytes of `s` to `out` as XML character data: & < > " ' as
 * entities, CR and LF as &#13; and &#10; (so XML's line-end handling
 * cannot change them).
 * @return SL_OK; SL_EINVAL for a byte XML 1.0 cannot carry (control
 * characters other than tab, CR and LF), naming its offset; SL_ENOMEM;
 * SL_EOVERFLOW.
 */
sl_status sl__s3_xml_escape(struct sl_buf *out, const char *s, size_t n, struct sl_error *err);

/*
 * The body of a DeleteObjects request for `n_keys` keys (1 to
 * SL__S3_DELETE_MAX) into `out` (replacing its contents, NUL-terminated):
 * <Delete><Quiet>true</Quiet><Object><Key>k</Key></Object>...</Delete>,
 * each key escaped (sl__s3_xml_escape).  S3 also wants a Content-MD5 or
 * x-amz-checksum-* header of it.
 * @return SL_OK; SL_EINVAL (no keys, too many, an empty key or one XML
 * cannot carry, naming its index); SL_ENOMEM; SL_EOVERFLOW.
 */
sl_status sl__s3_delete_body(const char *const *keys, size_t n_keys, struct sl_buf *out,
                             struct sl_error *err);

/* What a DeleteObjects result says of one key, valid during the callback. */
struct sl__s3_delete_item {
    const char *key;     /* decoded, NUL-terminated */
    bool deleted;        /* a <Deleted> entry; else an <Error> */
    const char *code;    /* the error's Code, "" for a deleted key */
    const char *message; /* the error's Message, "" for a deleted key */
};

/* Called once per <Deleted> or <Error> entry; a status other than SL_OK
 * stops the parse and is returned. */
typedef sl_status sl__s3_delete_fn(void *ctx, const struct sl__s3_delete_item *item,
                                   struct sl_error *err);

/*
 * Read a DeleteObjects result (<DeleteResult>): each <Deleted> and <Error>
 * entry to `fn` (NULL: count only); their numbers into `*n_deleted` and
 * `*n_failed` (either may be NULL).  A quiet request gets only errors.
 * @return SL_OK, what `fn` returned, or SL_EPARSE as sl__s3_list_parse (an
 * entry without a Key included).  Never allocates.
 */
sl_status sl__s3_delete_result_parse(const char *body, size_t n, sl__s3_delete_fn *fn, void *ctx,
                                     size_t *n_deleted, size_t *n_failed, struct sl_error *err);

/*
 * Read InitiateMultipartUpload's answer (<InitiateMultipartUploadResult>):
 * its <UploadId>, entities decoded, into `upload_id` (`size` bytes, at
 * least 2; "" on failure).
 * @return SL_OK; SL_EPARSE as sl__s3_error_parse, or for an UploadId that
 * is missing, empty, holds a NUL or is longer than `size` - 1 bytes;
 * SL_EINVAL (`size` under 2).  Never allocates.
 */
sl_status sl__s3_initiate_parse(const char *body, size_t n, char *upload_id, size_t size,
                                struct sl_error *err);

/* What CompleteMultipartUpload answered. */
struct sl__s3_complete_result {
    bool failed;                    /* the answer is an <Error>: nothing was completed */
    char etag[128];                 /* the new object's ETag, entities decoded ("\"...\"", quotes
                                       kept), "" when absent or failed */
    struct sl__s3_error_body error; /* failed: S3's Code and Message */
};

/*
 * Read CompleteMultipartUpload's answer: <CompleteMultipartUploadResult>
 * with the object's <ETag> (S3 writes its quotes as &quot;), or <Error>
 * (S3 may send it with status 200 when completing fails after the answer
 * began: the upload did not complete).
 * @return SL_OK (then look at `failed`); SL_EPARSE as sl__s3_error_parse,
 * for another root, or an ETag longer than 127 bytes or holding a control
 * character (it goes into an If-Match header).  Never allocates.
 */
sl_status sl__s3_complete_parse(const char *body, size_t n, struct sl__s3_complete_result *out,
                                struct sl_error *err);

#endif /* SL_S3_INTERNAL_H */
