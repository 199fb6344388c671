/* SPDX-License-Identifier: MIT */
/*
 * S3 settings (io/store/s3_creds.c, s3_ini.c): credentials, region and
 * endpoint from a fake environment (a lookup table, no setenv) and from
 * credentials and config files written to a scratch directory; their
 * order; malformed files named by file and line; and that no message or
 * description ever holds a secret or a session token.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <sluice.h>

#include "s3_internal.h"
#include "testutil.h"

static char dir[4096];

static void
remove_dir(void)
{
    if (dir[0] != '\0')
        sl_test_rmtree(dir);
    dir[0] = '\0';
}

static void
make_dir(void)
{
    snprintf(dir, sizeof(dir), "%s", sl_test_tmpdir("s3creds"));
}

TestSuite(io_s3_creds, .timeout = 20.0, .init = make_dir, .fini = remove_dir);

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define TOKEN "FwoGZXIvYXdzEXAMPLESESSIONTOKEN"
#define FILE_SECRET "fileSECRETfileSECRETfileSECRETfileSECRET"
#define FILE_TOKEN "fileTOKENfileTOKEN"

/* A fake environment: NULL-terminated name/value pairs. */
struct fake_env {
    const char *vars[16][2];
};

static const char *
fake_getenv(void *ctx, const char *name)
{
    const struct fake_env *e = ctx;
    for (int i = 0; i < 16 && e->vars[i][0] != NULL; i++)
        if (strcmp(e->vars[i][0], name) == 0)
            return e->vars[i][1];
    return NULL;
}

/* Write `text` to `name` in the scratch directory; returns a static path
 * (one of two, so a credentials and a config path can be live at once). */
static const char *
write_file(const char *name, const char *text)
{
    static char paths[2][4096];
    static int k;
    char *path = paths[k++ % 2];
    snprintf(path, 4096, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    fclose(f);
    return path;
}

static const char *
scratch_path(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return path;
}

/* Neither the description nor `text` holds a secret or a token. */
static void
expect_no_secrets(const char *text)
{
    const char *secrets[] = {SECRET, TOKEN, FILE_SECRET, FILE_TOKEN};
    for (size_t i = 0; i < 4; i++)
        cr_assert_null(strstr(text, secrets[i]), "\"%s\" holds a secret", text);
}

static void
expect_described_without_secrets(const struct sl__s3_config *c)
{
    char line[1024];
    size_t n = sl__s3_config_describe(c, line, sizeof(line));
    cr_assert_lt(n, sizeof(line));
    cr_assert_eq(strlen(line), n);
    expect_no_secrets(line);
}

static sl_status
resolve(struct fake_env *env, const char *cred, const char *conf, struct sl__s3_config *c,
        struct sl_error *err)
{
    struct sl__s3_config_opts o = {
        .env = fake_getenv,
        .env_ctx = env,
        .credentials_file = cred,
        .config_file = conf,
    };
    *err = SL_ERROR_INIT;
    sl_status st = sl__s3_config_resolve(&o, c, err);
    if (st != SL_OK)
        expect_no_secrets(err->text);
    else
        expect_described_without_secrets(c);
    return st;
}

static const char *cred_text = "# shared credentials\n"
                               "[default]\n"
                               "aws_access_key_id = AKIAFILEDEFAULT01\n"
                               "aws_secret_access_key = " FILE_SECRET "\n"
                               "\n"
                               "; another profile\n"
                               "[dev]\r\n"
                               "  aws_access_key_id=AKIAFILEDEV000002\r\n"
                               "aws_secret_access_key =   " FILE_SECRET "  \r\n"
                               "aws_session_token = " FILE_TOKEN "\r\n";

static const char *conf_text = "[default]\n"
                               "region = eu-central-1\n"
                               "[profile dev]\n"
                               "region=ap-southeast-2\n"
                               "endpoint_url = http://localhost:9000/\n"
                               "s3 =\n"
                               "    addressing_style = path\n"
                               "    signature_version = s3v4\n"
                               "output = json\n"
                               "[sso-session corp]\n"
                               "sso_region = us-east-1\n";

Test(io_s3_creds, environment_credentials_come_first)
{
    const char *cred = write_file("credentials", cred_text);
    const char *conf = write_file("config", conf_text);
    struct fake_env env = {{{"AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"},
                            {"AWS_SECRET_ACCESS_KEY", SECRET},
                            {"AWS_SESSION_TOKEN", TOKEN}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&env, cred, conf, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.access_key, "AKIAIOSFODNN7EXAMPLE");
    cr_assert_str_eq(c.secret_key, SECRET);
    cr_assert_str_eq(c.session_token, TOKEN);
    cr_assert_str_eq(c.creds_from, "environment");
    cr_assert_null(c.creds_file);
    cr_assert_str_eq(c.profile, "default");
    cr_assert_str_eq(c.region, "eu-central-1");
    cr_assert_str_eq(c.region_from, "config file");
    cr_assert_null(c.endpoint);
    cr_assert_eq(c.addressing, SL__S3_ADDRESSING_AUTO);
    struct sl__s3_creds k = sl__s3_config_creds(&c);
    cr_assert_str_eq(k.access_key, "AKIAIOSFODNN7EXAMPLE");
    cr_assert_str_eq(k.session_token, TOKEN);
    char line[1024];
    sl__s3_config_describe(&c, line, sizeof(line));
    cr_assert_str_eq(line, "profile default, access key AKIA...MPLE from environment, session "
                           "token: yes, region eu-central-1 from config file, endpoint AWS, "
                           "addressing auto");
    sl__s3_config_fini(&c);
    cr_assert_null(c.secret_key);
}

Test(io_s3_creds, half_the_environment_pair_is_an_error)
{
    struct fake_env env = {{{"AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&env, scratch_path("none"), scratch_path("none"), &c, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    sl__s3_config_fini(&c);
    struct fake_env env2 = {{{"AWS_SECRET_ACCESS_KEY", SECRET}, {"AWS_ACCESS_KEY_ID", ""}}};
    cr_assert_eq(resolve(&env2, scratch_path("none"), scratch_path("none"), &c, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, default_profile_from_the_credentials_file)
{
    const char *cred = write_file("credentials", cred_text);
    struct fake_env env = {{{NULL, NULL}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&env, cred, scratch_path("no-config"), &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.access_key, "AKIAFILEDEFAULT01");
    cr_assert_str_eq(c.secret_key, FILE_SECRET);
    cr_assert_null(c.session_token);
    cr_assert_str_eq(c.creds_from, "credentials file");
    cr_assert_str_eq(c.creds_file, cred);
    cr_assert_str_eq(c.region, "us-east-1");
    cr_assert_str_eq(c.region_from, "default");
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, named_profile_reads_both_files_with_crlf_and_nested_settings)
{
    const char *cred = write_file("credentials", cred_text);
    const char *conf = write_file("config", conf_text);
    struct fake_env env = {{{"AWS_PROFILE", "dev"}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&env, cred, conf, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.profile, "dev");
    cr_assert_str_eq(c.access_key, "AKIAFILEDEV000002");
    cr_assert_str_eq(c.secret_key, FILE_SECRET);
    cr_assert_str_eq(c.session_token, FILE_TOKEN);
    cr_assert_str_eq(c.region, "ap-southeast-2");
    cr_assert_str_eq(c.endpoint, "http://localhost:9000");
    cr_assert_str_eq(c.endpoint_from, "config file");
    cr_assert_eq(c.addressing, SL__S3_ADDRESSING_PATH);
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, region_order_is_aws_region_then_default_region_then_config)
{
    const char *conf = write_file("config", conf_text);
    struct fake_env both = {{{"AWS_REGION", "us-west-2"},
                             {"AWS_DEFAULT_REGION", "eu-west-1"},
                             {"AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"},
                             {"AWS_SECRET_ACCESS_KEY", SECRET}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&both, scratch_path("none"), conf, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.region, "us-west-2");
    cr_assert_str_eq(c.region_from, "AWS_REGION");
    sl__s3_config_fini(&c);
    both.vars[0][1] = ""; /* empty counts as unset */
    cr_assert_eq(resolve(&both, scratch_path("none"), conf, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.region, "eu-west-1");
    cr_assert_str_eq(c.region_from, "AWS_DEFAULT_REGION");
    sl__s3_config_fini(&c);
    both.vars[1][1] = NULL;
    cr_assert_eq(resolve(&both, scratch_path("none"), conf, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.region, "eu-central-1");
    sl__s3_config_fini(&c);
    both.vars[0][1] = "EU West";
    cr_assert_eq(resolve(&both, scratch_path("none"), conf, &c, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "region \"EU West\" (from AWS_REGION) is not lowercase letters, "
                               "digits and '-'");
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, endpoint_order_is_s3_variable_then_global_then_config)
{
    const char *conf = write_file("config", conf_text);
    struct fake_env env = {{{"AWS_PROFILE", "dev"},
                            {"AWS_ENDPOINT_URL_S3", "https://s3.example.org:8443/"},
                            {"AWS_ENDPOINT_URL", "http://global.example.org"},
                            {"AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"},
                            {"AWS_SECRET_ACCESS_KEY", SECRET}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&env, scratch_path("none"), conf, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.endpoint, "https://s3.example.org:8443");
    cr_assert_str_eq(c.endpoint_from, "AWS_ENDPOINT_URL_S3");
    sl__s3_config_fini(&c);
    env.vars[1][1] = NULL;
    cr_assert_eq(resolve(&env, scratch_path("none"), conf, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.endpoint, "http://global.example.org");
    cr_assert_str_eq(c.endpoint_from, "AWS_ENDPOINT_URL");
    sl__s3_config_fini(&c);
    env.vars[2][1] = "ftp://files.example.org";
    cr_assert_eq(resolve(&env, scratch_path("none"), conf, &c, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "endpoint \"ftp://files.example.org\" (from AWS_ENDPOINT_URL) is "
                               "not an http:// or https:// URL");
    sl__s3_config_fini(&c);
    env.vars[2][1] = "http://h:99999";
    cr_assert_eq(resolve(&env, scratch_path("none"), conf, &c, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "a port must be 1 to 65535"), "%s", err.text);
    sl__s3_config_fini(&c);
    env.vars[2][1] = "http://h/?x=1";
    cr_assert_eq(resolve(&env, scratch_path("none"), conf, &c, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "a query or a fragment"), "%s", err.text);
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, missing_files_are_fine_but_credentials_are_needed_unless_anonymous)
{
    struct fake_env env = {{{"AWS_REGION", "eu-north-1"}}};
    struct sl__s3_config c;
    struct sl_error err;
    char cred[4096], conf[4096];
    snprintf(cred, sizeof(cred), "%s", scratch_path("nope/credentials"));
    snprintf(conf, sizeof(conf), "%s", scratch_path("config-missing"));
    cr_assert_eq(resolve(&env, cred, conf, &c, &err), SL_ENOTFOUND);
    char want[8192];
    snprintf(want, sizeof(want),
             "no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are unset and "
             "profile \"default\" has none in %s or %s; set them, or read the bucket "
             "anonymously",
             cred, conf);
    cr_assert_str_eq(err.text, want);
    sl__s3_config_fini(&c);

    struct sl__s3_config_opts o = {.env = fake_getenv,
                                   .env_ctx = &env,
                                   .credentials_file = cred,
                                   .config_file = conf,
                                   .anonymous = true};
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_config_resolve(&o, &c, &err), SL_OK, "%s", err.text);
    cr_assert(c.anonymous);
    cr_assert_null(c.access_key);
    cr_assert_str_eq(c.region, "eu-north-1");
    char line[512];
    sl__s3_config_describe(&c, line, sizeof(line));
    cr_assert_str_eq(line, "profile default, anonymous (unsigned requests), region eu-north-1 "
                           "from AWS_REGION, endpoint AWS, addressing auto");
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, a_named_profile_must_exist)
{
    const char *cred = write_file("credentials", cred_text);
    const char *conf = write_file("config", conf_text);
    struct fake_env env = {{{"AWS_PROFILE", "prod"}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&env, cred, conf, &c, &err), SL_ENOTFOUND);
    char want[8192];
    snprintf(want, sizeof(want), "AWS profile \"prod\" is in neither %s nor %s", cred, conf);
    cr_assert_str_eq(err.text, want);
    sl__s3_config_fini(&c);
    /* An explicit profile in the options wins over AWS_PROFILE. */
    struct sl__s3_config_opts o = {.env = fake_getenv,
                                   .env_ctx = &env,
                                   .profile = "dev",
                                   .credentials_file = cred,
                                   .config_file = conf};
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_config_resolve(&o, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.profile, "dev");
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, malformed_lines_name_file_and_line_but_never_their_text)
{
    /* A secret pasted without '=' on line 3. */
    const char *cred = write_file("credentials", "[default]\n"
                                                 "aws_access_key_id = AKIAFILEDEFAULT01\n"
                                                 "aws_secret_access_key " FILE_SECRET "\n");
    struct fake_env env = {{{NULL, NULL}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&env, cred, scratch_path("none"), &c, &err), SL_EPARSE);
    char want[8192];
    snprintf(want, sizeof(want), "%s:3: expected \"[section]\", \"key = value\" or a comment",
             cred);
    cr_assert_str_eq(err.text, want);
    cr_assert_eq(err.line, 3);
    cr_assert_str_eq(err.source, cred);
    sl__s3_config_fini(&c);

    const char *conf = write_file("config", "region = us-east-1\n");
    cr_assert_eq(resolve(&env, scratch_path("none"), conf, &c, &err), SL_EPARSE);
    snprintf(want, sizeof(want), "%s:1: a setting before the first [section]", conf);
    cr_assert_str_eq(err.text, want);
    sl__s3_config_fini(&c);

    conf = write_file("config", "# fine\n\n[profile dev\nregion = x\n");
    cr_assert_eq(resolve(&env, scratch_path("none"), conf, &c, &err), SL_EPARSE);
    cr_assert_eq(err.line, 3);
    cr_assert_not_null(strstr(err.text, ":3: a section header is \"[name]\""), "%s", err.text);
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, half_a_key_pair_in_a_file_is_an_error_naming_no_secret)
{
    const char *cred = write_file("credentials", "[default]\n"
                                                 "aws_secret_access_key = " FILE_SECRET "\n");
    struct fake_env env = {{{NULL, NULL}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&env, cred, scratch_path("none"), &c, &err), SL_EINVAL);
    char want[8192];
    snprintf(want, sizeof(want),
             "%s: profile \"default\" has aws_secret_access_key but no aws_access_key_id", cred);
    cr_assert_str_eq(err.text, want);
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, credentials_in_the_config_file_count_after_the_credentials_file)
{
    const char *cred = write_file("credentials", "[other]\naws_access_key_id = X\n");
    const char *conf = write_file("config", "[profile ci]\n"
                                            "aws_access_key_id = AKIACONFIGCI00003\n"
                                            "aws_secret_access_key = " FILE_SECRET "\n"
                                            "region = sa-east-1\n"
                                            "s3 =\n"
                                            "  addressing_style = virtual\n");
    struct fake_env env = {{{"AWS_PROFILE", "ci"}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&env, cred, conf, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.access_key, "AKIACONFIGCI00003");
    cr_assert_str_eq(c.creds_from, "config file");
    cr_assert_str_eq(c.creds_file, conf);
    cr_assert_eq(c.addressing, SL__S3_ADDRESSING_VIRTUAL);
    sl__s3_config_fini(&c);

    /* Both files with keys for the profile: the credentials file's win. */
    cred = write_file("credentials", cred_text);
    conf = write_file("config", "[default]\n"
                                "aws_access_key_id = AKIACONFIGDEF0005\n"
                                "aws_secret_access_key = " FILE_SECRET "\n");
    struct fake_env none = {{{NULL, NULL}}};
    cr_assert_eq(resolve(&none, cred, conf, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.access_key, "AKIAFILEDEFAULT01");
    cr_assert_str_eq(c.creds_from, "credentials file");
    sl__s3_config_fini(&c);

    conf = write_file("config", "[default]\ns3 =\n  addressing_style = sideways\n");
    struct fake_env env2 = {
        {{"AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"}, {"AWS_SECRET_ACCESS_KEY", SECRET}}};
    cr_assert_eq(resolve(&env2, cred, conf, &c, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "addressing_style \"sideways\" is not auto, virtual or "
                                        "path"),
                       "%s", err.text);
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, files_default_to_home_and_tilde_is_home)
{
    char aws[4200];
    snprintf(aws, sizeof(aws), "%s/.aws", dir);
    cr_assert_eq(mkdir(aws, 0700), 0);
    write_file(".aws/credentials", cred_text);
    write_file(".aws/config", conf_text);
    struct fake_env env = {{{"HOME", dir}}};
    struct sl__s3_config_opts o = {.env = fake_getenv, .env_ctx = &env};
    struct sl__s3_config c;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_config_resolve(&o, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.access_key, "AKIAFILEDEFAULT01");
    cr_assert_str_eq(c.region, "eu-central-1");
    sl__s3_config_fini(&c);

    write_file("creds-elsewhere", "[default]\naws_access_key_id = AKIAELSEWHERE0004\n"
                                  "aws_secret_access_key = " FILE_SECRET "\n");
    struct fake_env env2 = {{{"HOME", dir}, {"AWS_SHARED_CREDENTIALS_FILE", "~/creds-elsewhere"}}};
    o.env_ctx = &env2;
    cr_assert_eq(sl__s3_config_resolve(&o, &c, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(c.access_key, "AKIAELSEWHERE0004");
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, unreadable_and_oversized_files_are_errors)
{
    struct fake_env env = {
        {{"AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"}, {"AWS_SECRET_ACCESS_KEY", SECRET}}};
    struct sl__s3_config c;
    struct sl_error err;
    cr_assert_eq(resolve(&env, dir, scratch_path("none"), &c, &err), SL_EIO);
    cr_assert_not_null(strstr(err.text, "not a regular file"), "%s", err.text);
    sl__s3_config_fini(&c);

    char path[4200];
    snprintf(path, sizeof(path), "%s/huge", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, (1 << 20) + 1, SEEK_SET), 0);
    fputc('\n', f);
    fclose(f);
    cr_assert_eq(resolve(&env, scratch_path("none"), path, &c, &err), SL_EIO);
    cr_assert_not_null(strstr(err.text, "1048578 bytes; AWS files over 1048576 bytes are refused"),
                       "%s", err.text);
    sl__s3_config_fini(&c);
}

Test(io_s3_creds, every_allocation_failure_is_enomem_and_leaks_nothing)
{
    const char *cred = write_file("credentials", cred_text);
    const char *conf = write_file("config", conf_text);
    struct fake_env env = {{{"AWS_PROFILE", "dev"}}};
    size_t total = 0;
    for (size_t fail = 1;; fail++) {
        struct sl_test_alloc state = {.fail_at = fail};
        struct sl_allocator a = sl_test_alloc_make(&state);
        struct sl__s3_config_opts o = {.env = fake_getenv,
                                       .env_ctx = &env,
                                       .credentials_file = cred,
                                       .config_file = conf,
                                       .alloc = &a};
        struct sl__s3_config c;
        struct sl_error err = SL_ERROR_INIT;
        sl_status st = sl__s3_config_resolve(&o, &c, &err);
        expect_described_without_secrets(&c); /* half-resolved too */
        expect_no_secrets(err.text);
        sl__s3_config_fini(&c);
        cr_assert_eq(state.n_live, 0, "allocation %zu failing leaks %zu blocks", fail,
                     state.n_live);
        if (state.n_failed == 0) {
            cr_assert_eq(st, SL_OK, "%s", err.text);
            total = fail - 1;
            break;
        }
        cr_assert_eq(st, SL_ENOMEM, "allocation %zu failing: %s", fail, err.text);
    }
    cr_assert_gt(total, 5);
}

/* ---- the INI reader alone -------------------------------------------------------------------- */

/* Collects "section|parent|key=value@line;" for each setting. */
static sl_status
collect(void *ctx, const char *section, const char *parent, const char *key, const char *value,
        int line, struct sl_error *err)
{
    (void)err;
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 2048 - n, "%s|%s|%s=%s@%d;", section, parent != NULL ? parent : "", key,
             value, line);
    return SL_OK;
}

static sl_status
parse_text(const char *text, char *out, struct sl_error *err)
{
    char buf[2048];
    size_t n = strlen(text);
    memcpy(buf, text, n + 1);
    out[0] = '\0';
    *err = SL_ERROR_INIT;
    return sl__s3_ini_parse(buf, n, "t.ini", collect, out, err);
}

Test(io_s3_creds, ini_reader_keeps_what_configparser_keeps)
{
    char out[2048];
    struct sl_error err;
    cr_assert_eq(parse_text("\xef\xbb\xbf[bom]\nk=v\n", out, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(out, "bom||k=v@2;");
    cr_assert_eq(parse_text("  [ a b ]  \n"
                            "k=v # not a comment\n"
                            "empty =\n"
                            "  indented = under empty\n"
                            "\tdeeper = too\n"
                            "   # an indented comment\n"
                            "x = 1 = 2\n"
                            "[c]\n"
                            "  first = top\n"
                            "last=\tend",
                            out, &err),
                 SL_OK, "%s", err.text);
    cr_assert_str_eq(out, "a b||k=v # not a comment@2;"
                          "a b||empty=@3;"
                          "a b|empty|indented=under empty@4;"
                          "a b|empty|deeper=too@5;"
                          "a b||x=1 = 2@7;"
                          "c||first=top@9;"
                          "c||last=end@10;");
    cr_assert_eq(parse_text("[s]\n= value\n", out, &err), SL_EPARSE);
    cr_assert_str_eq(err.text, "t.ini:2: expected \"[section]\", \"key = value\" or a comment");
    cr_assert_eq(parse_text("[]\n", out, &err), SL_EPARSE);
    cr_assert_eq(parse_text("[ ]\n", out, &err), SL_EPARSE);
    cr_assert_str_eq(err.text, "t.ini:1: a section header without a name");
    cr_assert_eq(parse_text("[s] x\n", out, &err), SL_EPARSE);
    char nul[] = "[s]\nk = a\0b\n";
    out[0] = '\0';
    err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_ini_parse(nul, sizeof(nul) - 1, "n.ini", collect, out, &err), SL_EPARSE);
    cr_assert_str_eq(err.text, "n.ini:2: a NUL byte in the line");
    cr_assert_eq(parse_text("", out, &err), SL_OK);
    cr_assert_str_eq(out, "");
}
