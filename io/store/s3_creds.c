/* SPDX-License-Identifier: MIT */
/*
 * Where an S3 store's credentials, region and endpoint come from: the
 * environment (through a lookup function, so tests need no setenv) and
 * AWS's shared files, in the order the AWS CLI and botocore use
 * (struct sl__s3_config).  Only static credentials: no SSO, no
 * credential_process, no instance metadata.
 *
 * DESIGN: both files are read whole (at most 1 MiB each) and parsed in
 * place (s3_ini.c); the profile's values are pointers into those buffers
 * until the winners are copied into the config, and the buffers are wiped
 * before they are freed, as they hold secrets.  No message quotes a
 * secret, a token or a line of the credentials file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core_internal.h"
#include "s3_internal.h"
#include "store_internal.h"

/* The largest AWS file read. */
#define CREDS_FILE_MAX (1u << 20)

/* What one file says about the profile: pointers into its text. */
struct creds_profile {
    const char *file; /* the file's path */
    const char *name; /* the profile looked for */
    bool is_config;   /* config file: "[profile NAME]" (and "[default]") */
    bool seen;        /* the profile's section is in the file */
    const char *access_key;
    const char *secret_key;
    const char *session_token;
    const char *region;
    const char *endpoint_url;
    const char *addressing; /* "s3 =" "addressing_style" */
};

/* Zero `n` bytes at `p` in a way the compiler keeps. */
static void
creds_wipe(void *p, size_t n)
{
    volatile char *v = p;
    for (size_t i = 0; v != NULL && i < n; i++)
        v[i] = 0;
}

static const char *
creds_getenv(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

/* The variable's value, NULL when unset or empty. */
static const char *
creds_env(const struct sl__s3_config_opts *o, const char *name)
{
    const char *v = o->env != NULL ? o->env(o->env_ctx, name) : creds_getenv(NULL, name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* Whether `section` of the file is the profile's. */
static bool
creds_section_matches(const struct creds_profile *p, const char *section)
{
    if (!p->is_config)
        return strcmp(section, p->name) == 0;
    if (strcmp(p->name, "default") == 0 && strcmp(section, "default") == 0)
        return true;
    if (strncmp(section, "profile", 7) != 0 || (section[7] != ' ' && section[7] != '\t'))
        return false;
    return strcmp(section + 7 + strspn(section + 7, " \t"), p->name) == 0;
}

/* sl__s3_ini_fn: keep the profile's settings (the last of a repeated key). */
static sl_status
creds_setting(void *ctx, const char *section, const char *parent, const char *key,
              const char *value, int line, struct sl_error *err)
{
    (void)line;
    (void)err;
    struct creds_profile *p = ctx;
    if (!creds_section_matches(p, section))
        return SL_OK;
    p->seen = true;
    if (parent != NULL) {
        if (p->is_config && strcmp(parent, "s3") == 0 && strcmp(key, "addressing_style") == 0)
            p->addressing = value;
        return SL_OK;
    }
    if (strcmp(key, "aws_access_key_id") == 0)
        p->access_key = value;
    else if (strcmp(key, "aws_secret_access_key") == 0)
        p->secret_key = value;
    else if (strcmp(key, "aws_session_token") == 0)
        p->session_token = value;
    else if (p->is_config && strcmp(key, "region") == 0)
        p->region = value;
    else if (p->is_config && strcmp(key, "endpoint_url") == 0)
        p->endpoint_url = value;
    return SL_OK;
}

/* Read `path` into `b` (NUL-terminated); a missing file leaves `b` empty. */
static sl_status
creds_file_read(const char *path, struct sl_buf *b, struct sl_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR
                   ? SL_OK
                   : sl_error_set(err, SL_EIO, NULL, "%s: cannot be opened: %s", path,
                                  strerror(errno));
    sl_status st = SL_OK;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = sl_error_set(err, SL_EIO, NULL, "%s: not a regular file", path);
    else if (sb.st_size > (off_t)CREDS_FILE_MAX)
        st = sl_error_set(err, SL_EIO, NULL, "%s: %lld bytes; AWS files over %u bytes are refused",
                          path, (long long)sb.st_size, CREDS_FILE_MAX);
    else
        st = sl_buf_reserve(b, (size_t)sb.st_size + 1, err);
    while (st == SL_OK && b->size < b->capacity - 1) {
        ssize_t got = read(fd, b->data + b->size, b->capacity - 1 - b->size);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            st = sl_error_set(err, SL_EIO, NULL, "%s: read failed: %s", path, strerror(errno));
        else if (got == 0)
            break; /* shorter than it was: read what is there */
        else
            b->size += (size_t)got;
    }
    close(fd);
    if (st == SL_OK)
        b->data[b->size] = '\0';
    return st;
}

/* Read and parse one file for the profile into `p`; `b` keeps the text. */
static sl_status
creds_file_load(struct creds_profile *p, struct sl_buf *b, struct sl_error *err)
{
    if (p->file == NULL)
        return SL_OK;
    SL_TRY(creds_file_read(p->file, b, err));
    if (b->data == NULL || b->size == 0)
        return SL_OK;
    return sl__s3_ini_parse((char *)b->data, b->size, p->file, creds_setting, p, err);
}

/* The path of a file: `given`, else $VAR, else ~/.aws/NAME; a leading
 * "~/" is $HOME's.  NULL when there is none (no $HOME, or too long). */
static const char *
creds_path(const struct sl__s3_config_opts *o, const char *given, const char *var, const char *name,
           char *buf, size_t size)
{
    const char *path = given != NULL ? given : creds_env(o, var);
    if (path != NULL && strncmp(path, "~/", 2) != 0)
        return path;
    const char *home = creds_env(o, "HOME");
    if (home == NULL)
        return NULL;
    int n = path != NULL ? snprintf(buf, size, "%s%s", home, path + 1)
                         : snprintf(buf, size, "%s/.aws/%s", home, name);
    return n > 0 && (size_t)n < size ? buf : NULL;
}

static sl_status
creds_dup(struct sl__s3_config *c, char **dst, const char *src, struct sl_error *err)
{
    if (src == NULL)
        return SL_OK;
    *dst = sl_strdup(&c->alloc, src);
    return *dst != NULL ? SL_OK
                        : sl_error_set(err, SL_ENOMEM, NULL, "out of memory copying S3 settings");
}

/* Credentials from one file's profile: both keys or neither. */
static sl_status
creds_from_profile(struct sl__s3_config *c, const struct creds_profile *p, bool *found,
                   struct sl_error *err)
{
    *found = false;
    if (p->access_key == NULL && p->secret_key == NULL)
        return SL_OK;
    if (p->access_key == NULL || p->secret_key == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: profile \"%s\" has %s but no %s", p->file,
                            p->name,
                            p->access_key != NULL ? "aws_access_key_id" : "aws_secret_access_key",
                            p->access_key != NULL ? "aws_secret_access_key" : "aws_access_key_id");
    SL_TRY(creds_dup(c, &c->access_key, p->access_key, err));
    SL_TRY(creds_dup(c, &c->secret_key, p->secret_key, err));
    SL_TRY(creds_dup(c, &c->session_token, p->session_token, err));
    SL_TRY(creds_dup(c, &c->creds_file, p->file, err));
    c->creds_from = p->is_config ? "config file" : "credentials file";
    *found = true;
    return SL_OK;
}

static sl_status
creds_resolve_keys(struct sl__s3_config *c, const struct sl__s3_config_opts *o,
                   const struct creds_profile *cred, const struct creds_profile *conf,
                   struct sl_error *err)
{
    if (o->anonymous) {
        c->anonymous = true;
        c->creds_from = "none (anonymous)";
        return SL_OK;
    }
    const char *ak = creds_env(o, "AWS_ACCESS_KEY_ID"), *sk = creds_env(o, "AWS_SECRET_ACCESS_KEY");
    if ((ak == NULL) != (sk == NULL))
        return sl_error_set(err, SL_EINVAL, NULL, "%s is set but %s is not",
                            ak != NULL ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                            ak != NULL ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    if (ak != NULL) {
        SL_TRY(creds_dup(c, &c->access_key, ak, err));
        SL_TRY(creds_dup(c, &c->secret_key, sk, err));
        SL_TRY(creds_dup(c, &c->session_token, creds_env(o, "AWS_SESSION_TOKEN"), err));
        c->creds_from = "environment";
        return SL_OK;
    }
    bool found;
    SL_TRY(creds_from_profile(c, cred, &found, err));
    if (!found)
        SL_TRY(creds_from_profile(c, conf, &found, err));
    if (found)
        return SL_OK;
    return sl_error_set(err, SL_ENOTFOUND, NULL,
                        "no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are "
                        "unset and profile \"%s\" has none in %s or %s; set them, or read "
                        "the bucket anonymously",
                        cred->name, cred->file != NULL ? cred->file : "(no credentials file)",
                        conf->file != NULL ? conf->file : "(no config file)");
}

/* A region goes into host names and the signing scope. */
static bool
creds_region_ok(const char *r)
{
    size_t n = strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-");
    return n > 0 && n < 64 && r[n] == '\0';
}

static sl_status
creds_resolve_region(struct sl__s3_config *c, const struct sl__s3_config_opts *o,
                     const struct creds_profile *conf, struct sl_error *err)
{
    const char *r = creds_env(o, "AWS_REGION");
    c->region_from = "AWS_REGION";
    if (r == NULL) {
        r = creds_env(o, "AWS_DEFAULT_REGION");
        c->region_from = "AWS_DEFAULT_REGION";
    }
    if (r == NULL && conf->region != NULL && conf->region[0] != '\0') {
        r = conf->region;
        c->region_from = "config file";
    }
    if (r == NULL) {
        r = "us-east-1";
        c->region_from = "default";
    }
    if (!creds_region_ok(r))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "region \"%s\" (from %s) is not lowercase letters, digits and '-'", r,
                            c->region_from);
    return creds_dup(c, &c->region, r, err);
}

static sl_status
creds_resolve_endpoint(struct sl__s3_config *c, const struct sl__s3_config_opts *o,
                       const struct creds_profile *conf, struct sl_error *err)
{
    const char *e = creds_env(o, "AWS_ENDPOINT_URL_S3");
    c->endpoint_from = "AWS_ENDPOINT_URL_S3";
    if (e == NULL) {
        e = creds_env(o, "AWS_ENDPOINT_URL");
        c->endpoint_from = "AWS_ENDPOINT_URL";
    }
    if (e == NULL && conf->endpoint_url != NULL && conf->endpoint_url[0] != '\0') {
        e = conf->endpoint_url;
        c->endpoint_from = "config file";
    }
    if (e == NULL) {
        c->endpoint_from = "default";
        return SL_OK;
    }
    if (strncmp(e, "http://", 7) != 0 && strncmp(e, "https://", 8) != 0)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "endpoint \"%s\" (from %s) is not an http:// or https:// URL", e,
                            c->endpoint_from);
    struct sl_error why = SL_ERROR_INIT;
    if (!sl__url_check(e, &why))
        return sl_error_set(err, SL_EINVAL, NULL, "endpoint (from %s): %s", c->endpoint_from,
                            why.text);
    if (strpbrk(e, "?#") != NULL)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "endpoint \"%s\" (from %s) has a query or a fragment", e,
                            c->endpoint_from);
    SL_TRY(creds_dup(c, &c->endpoint, e, err));
    size_t n = strlen(c->endpoint);
    while (n > 0 && c->endpoint[n - 1] == '/') /* "http://h:9000/" is "http://h:9000" */
        c->endpoint[--n] = '\0';
    return SL_OK;
}

static sl_status
creds_resolve_addressing(struct sl__s3_config *c, const struct creds_profile *conf,
                         struct sl_error *err)
{
    const char *a = conf->addressing;
    if (a == NULL || strcmp(a, "auto") == 0)
        c->addressing = SL__S3_ADDRESSING_AUTO;
    else if (strcmp(a, "virtual") == 0)
        c->addressing = SL__S3_ADDRESSING_VIRTUAL;
    else if (strcmp(a, "path") == 0)
        c->addressing = SL__S3_ADDRESSING_PATH;
    else
        return sl_error_set(err, SL_EINVAL, NULL,
                            "%s: profile \"%s\": addressing_style \"%s\" is not auto, virtual "
                            "or path",
                            conf->file, conf->name, a);
    return SL_OK;
}

/* Everything but reading the files. */
static sl_status
creds_resolve(struct sl__s3_config *c, const struct sl__s3_config_opts *o,
              const struct creds_profile *cred, const struct creds_profile *conf, bool named,
              struct sl_error *err)
{
    if (named && !cred->seen && !conf->seen)
        return sl_error_set(err, SL_ENOTFOUND, NULL, "AWS profile \"%s\" is in neither %s nor %s",
                            cred->name, cred->file != NULL ? cred->file : "(no credentials file)",
                            conf->file != NULL ? conf->file : "(no config file)");
    SL_TRY(creds_dup(c, &c->profile, cred->name, err));
    SL_TRY(creds_resolve_keys(c, o, cred, conf, err));
    SL_TRY(creds_resolve_region(c, o, conf, err));
    SL_TRY(creds_resolve_endpoint(c, o, conf, err));
    return creds_resolve_addressing(c, conf, err);
}

sl_status
sl__s3_config_resolve(const struct sl__s3_config_opts *opts, struct sl__s3_config *out,
                      struct sl_error *err)
{
    static const struct sl__s3_config_opts defaults = {0};
    const struct sl__s3_config_opts *o = opts != NULL ? opts : &defaults;
    *out = (struct sl__s3_config){.alloc = o->alloc != NULL ? *o->alloc : sl_allocator_default()};
    const char *profile = o->profile != NULL ? o->profile : creds_env(o, "AWS_PROFILE");
    bool named = profile != NULL && strcmp(profile, "default") != 0;
    char cred_buf[4096], conf_buf[4096];
    struct creds_profile cred = {
        .file = creds_path(o, o->credentials_file, "AWS_SHARED_CREDENTIALS_FILE", "credentials",
                           cred_buf, sizeof(cred_buf)),
        .name = profile != NULL ? profile : "default",
    };
    struct creds_profile conf = {
        .file =
            creds_path(o, o->config_file, "AWS_CONFIG_FILE", "config", conf_buf, sizeof(conf_buf)),
        .name = cred.name,
        .is_config = true,
    };
    struct sl_buf cred_text = {.alloc = out->alloc}, conf_text = {.alloc = out->alloc};
    sl_status st = creds_file_load(&cred, &cred_text, err);
    if (st == SL_OK)
        st = creds_file_load(&conf, &conf_text, err);
    if (st == SL_OK)
        st = creds_resolve(out, o, &cred, &conf, named, err);
    creds_wipe(cred_text.data, cred_text.capacity);
    creds_wipe(conf_text.data, conf_text.capacity);
    sl_buf_fini(&cred_text);
    sl_buf_fini(&conf_text);
    return st;
}

/* Wipe and free one owned string. */
static void
creds_free(struct sl__s3_config *c, char **s)
{
    if (*s == NULL)
        return;
    size_t n = strlen(*s) + 1;
    creds_wipe(*s, n);
    sl_free(&c->alloc, *s, n);
    *s = NULL;
}

void
sl__s3_config_fini(struct sl__s3_config *c)
{
    if (c == NULL)
        return;
    creds_free(c, &c->access_key);
    creds_free(c, &c->secret_key);
    creds_free(c, &c->session_token);
    creds_free(c, &c->region);
    creds_free(c, &c->endpoint);
    creds_free(c, &c->profile);
    creds_free(c, &c->creds_file);
    *c = (struct sl__s3_config){0};
}

struct sl__s3_creds
sl__s3_config_creds(const struct sl__s3_config *c)
{
    return (struct sl__s3_creds){
        .access_key = c->access_key,
        .secret_key = c->secret_key,
        .session_token = c->session_token,
    };
}

size_t
sl__s3_config_describe(const struct sl__s3_config *c, char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    sl__strbuf_append(buf, size, &len, "profile %s, ", c->profile != NULL ? c->profile : "?");
    if (c->anonymous || c->access_key == NULL) {
        sl__strbuf_append(buf, size, &len, "anonymous (unsigned requests)");
    } else {
        size_t n = strlen(c->access_key);
        /* An access key ID is no secret, but a log needs no more of it. */
        if (n > 8)
            sl__strbuf_append(buf, size, &len, "access key %.4s...%s", c->access_key,
                              c->access_key + n - 4);
        else
            sl__strbuf_append(buf, size, &len, "access key of %zu characters", n);
        sl__strbuf_append(
            buf, size, &len, " from %s%s%s, session token: %s",
            c->creds_from != NULL ? c->creds_from : "?", c->creds_file != NULL ? " " : "",
            c->creds_file != NULL ? c->creds_file : "", c->session_token != NULL ? "yes" : "no");
    }
    sl__strbuf_append(
        buf, size, &len, ", region %s from %s, endpoint %s", c->region != NULL ? c->region : "?",
        c->region_from != NULL ? c->region_from : "?", c->endpoint != NULL ? c->endpoint : "AWS");
    if (c->endpoint != NULL)
        sl__strbuf_append(buf, size, &len, " from %s",
                          c->endpoint_from != NULL ? c->endpoint_from : "?");
    static const char *const styles[] = {"auto", "virtual", "path"};
    sl__strbuf_append(buf, size, &len, ", addressing %s", styles[c->addressing]);
    return len;
}
