/* SPDX-License-Identifier: MIT */
/*
 * S3 addressing (io/store/s3_url.c): "s3://bucket/prefix" on AWS
 * (virtual-hosted, path-style for dotted names or when asked, China's
 * domain) and on other endpoints (path-style, virtual when asked), the URL
 * and signed path of objects, and the refusals of bad bucket names, URLs,
 * regions and endpoints, each naming the URL and the rule.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

#include "s3_internal.h"

TestSuite(io_s3_url, .timeout = 20.0);

static struct sl__s3_location
place(const char *url, const char *endpoint, const char *region, enum sl__s3_addressing a)
{
    struct sl__s3_location loc;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_location_parse(url, endpoint, region, a, &loc, &err), SL_OK, "%s: %s", url,
                 err.text);
    return loc;
}

/* The URL and the signed path of `key`. */
static void
expect_object(const struct sl__s3_location *loc, const char *key, const char *url, const char *path)
{
    struct sl_buf u = SL_BUF_INIT, p = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_object_url(loc, key, &u, &p, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq((const char *)u.data, url);
    cr_assert_eq(u.size, strlen(url));
    cr_assert_str_eq((const char *)p.data, path);
    cr_assert_eq(p.size, strlen(path));
    /* The path alone, and the URL alone, are the same. */
    sl_buf_fini(&p);
    p = SL_BUF_INIT;
    cr_assert_eq(sl__s3_object_url(loc, key, NULL, &p, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq((const char *)p.data, path);
    cr_assert_eq(sl__s3_object_url(loc, key, &u, NULL, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq((const char *)u.data, url);
    sl_buf_fini(&u);
    sl_buf_fini(&p);
}

Test(io_s3_url, aws_buckets_are_virtual_hosted)
{
    struct sl__s3_location loc =
        place("s3://bucket/prefix/x.zarr", NULL, "us-east-1", SL__S3_ADDRESSING_AUTO);
    cr_assert_str_eq(loc.bucket, "bucket");
    cr_assert_str_eq(loc.prefix, "prefix/x.zarr");
    cr_assert_str_eq(loc.origin, "https://bucket.s3.us-east-1.amazonaws.com");
    cr_assert_str_eq(loc.host, "bucket.s3.us-east-1.amazonaws.com");
    cr_assert_str_eq(loc.bucket_path, "/");
    cr_assert_str_eq(loc.base_url, "https://bucket.s3.us-east-1.amazonaws.com/prefix/x.zarr");
    cr_assert_not(loc.path_style);
    expect_object(&loc, "c/0/0", "https://bucket.s3.us-east-1.amazonaws.com/prefix/x.zarr/c/0/0",
                  "/prefix/x.zarr/c/0/0");

    /* The bucket's root, with or without '/', and the scheme in any case. */
    const char *roots[] = {"s3://my-bucket", "s3://my-bucket/", "S3://my-bucket//"};
    for (int i = 0; i < 3; i++) {
        loc = place(roots[i], NULL, "eu-west-1", SL__S3_ADDRESSING_AUTO);
        cr_assert_str_eq(loc.prefix, "");
        cr_assert_str_eq(loc.base_url, "https://my-bucket.s3.eu-west-1.amazonaws.com");
        expect_object(&loc, "zarr.json", "https://my-bucket.s3.eu-west-1.amazonaws.com/zarr.json",
                      "/zarr.json");
    }
}

Test(io_s3_url, aws_path_style_for_dotted_names_or_when_asked)
{
    struct sl__s3_location loc =
        place("s3://my.data.bucket/d", NULL, "eu-west-1", SL__S3_ADDRESSING_AUTO);
    cr_assert(loc.path_style);
    cr_assert_str_eq(loc.origin, "https://s3.eu-west-1.amazonaws.com");
    cr_assert_str_eq(loc.host, "s3.eu-west-1.amazonaws.com");
    cr_assert_str_eq(loc.bucket_path, "/my.data.bucket");
    cr_assert_str_eq(loc.base_url, "https://s3.eu-west-1.amazonaws.com/my.data.bucket/d");
    expect_object(&loc, "a b", "https://s3.eu-west-1.amazonaws.com/my.data.bucket/d/a%20b",
                  "/my.data.bucket/d/a%20b");

    loc = place("s3://my.data.bucket/d", NULL, "eu-west-1", SL__S3_ADDRESSING_VIRTUAL);
    cr_assert_not(loc.path_style);
    cr_assert_str_eq(loc.host, "my.data.bucket.s3.eu-west-1.amazonaws.com");

    loc = place("s3://plain/d", NULL, "ap-south-1", SL__S3_ADDRESSING_PATH);
    cr_assert(loc.path_style);
    cr_assert_str_eq(loc.base_url, "https://s3.ap-south-1.amazonaws.com/plain/d");

    loc = place("s3://plain", NULL, "cn-north-1", SL__S3_ADDRESSING_AUTO);
    cr_assert_str_eq(loc.origin, "https://plain.s3.cn-north-1.amazonaws.com.cn");
}

Test(io_s3_url, other_endpoints_are_path_style)
{
    struct sl__s3_location loc = place("s3://bucket/prefix/x.zarr", "http://localhost:9000",
                                       "us-east-1", SL__S3_ADDRESSING_AUTO);
    cr_assert(loc.path_style);
    cr_assert_str_eq(loc.origin, "http://localhost:9000");
    cr_assert_str_eq(loc.host, "localhost:9000");
    cr_assert_str_eq(loc.bucket_path, "/bucket");
    cr_assert_str_eq(loc.base_url, "http://localhost:9000/bucket/prefix/x.zarr");
    expect_object(&loc, "c/1/\xc3\xa9", "http://localhost:9000/bucket/prefix/x.zarr/c/1/%C3%A9",
                  "/bucket/prefix/x.zarr/c/1/%C3%A9");

    /* A default port is left out of the Host header; a path is kept. */
    loc = place("s3://bucket/p", "https://minio.example.org:443/s3/", "us-east-1",
                SL__S3_ADDRESSING_AUTO);
    cr_assert_str_eq(loc.host, "minio.example.org");
    cr_assert_str_eq(loc.origin, "https://minio.example.org");
    cr_assert_str_eq(loc.bucket_path, "/s3/bucket");
    cr_assert_str_eq(loc.base_url, "https://minio.example.org/s3/bucket/p");
    loc = place("s3://bucket", "http://[::1]:80", "us-east-1", SL__S3_ADDRESSING_AUTO);
    cr_assert_str_eq(loc.host, "[::1]");

    /* Virtual-hosted when asked. */
    loc =
        place("s3://bucket/p", "http://storage.local:9000", "us-east-1", SL__S3_ADDRESSING_VIRTUAL);
    cr_assert_not(loc.path_style);
    cr_assert_str_eq(loc.host, "bucket.storage.local:9000");
    cr_assert_str_eq(loc.bucket_path, "/");
    cr_assert_str_eq(loc.base_url, "http://bucket.storage.local:9000/p");
    expect_object(&loc, "k", "http://bucket.storage.local:9000/p/k", "/p/k");
}

Test(io_s3_url, keys_and_prefixes_are_encoded_once_with_slashes_kept)
{
    struct sl__s3_location loc =
        place("s3://bucket/my data/x+y.zarr", NULL, "us-east-1", SL__S3_ADDRESSING_AUTO);
    cr_assert_str_eq(loc.prefix, "my data/x+y.zarr");
    cr_assert_str_eq(loc.base_url,
                     "https://bucket.s3.us-east-1.amazonaws.com/my%20data/x%2By.zarr");
    expect_object(&loc, "c/0 1/%",
                  "https://bucket.s3.us-east-1.amazonaws.com/my%20data/x%2By.zarr/c/0%201/%25",
                  "/my%20data/x%2By.zarr/c/0%201/%25");
    struct sl_buf u = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_object_url(&loc, "", &u, NULL, &err), SL_EINVAL);
    cr_assert_str_eq(err.text, "https://bucket.s3.us-east-1.amazonaws.com/my%20data/x%2By.zarr: "
                               "an object needs a key");
    sl_buf_fini(&u);
}

static void
expect_refused(const char *url, const char *endpoint, const char *region, const char *message)
{
    struct sl__s3_location loc;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_location_parse(url, endpoint, region, SL__S3_ADDRESSING_AUTO, &loc, &err),
                 SL_EINVAL, "%s was accepted", url);
    cr_assert_eq(err.code, SL_EINVAL);
    cr_assert_str_eq(err.text, message);
}

Test(io_s3_url, bucket_names_follow_s3s_rules)
{
    const char *good[] = {
        "abc",           "a-b.c1", "1bucket", "my.bucket.name", "xn-bucket", "bucket-s3alias-not",
        "123.456.789.0a"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_eq(sl__s3_bucket_check(good[i], "u", &err), SL_OK, "%s: %s", good[i], err.text);
    }
    char long_name[80];
    memset(long_name, 'a', 64);
    long_name[64] = '\0';
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_bucket_check(long_name, "u", &err), SL_EINVAL);
    cr_assert_str_eq(err.text,
                     "\"u\": bucket name \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                     "aaaaaaaaaaaaaaa\" has 64 characters; S3 wants 3 to 63");
    expect_refused("s3://ab/x", NULL, "us-east-1",
                   "\"s3://ab/x\": bucket name \"ab\" has 2 characters; S3 wants 3 to 63");
    expect_refused("s3://My-Bucket", NULL, "us-east-1",
                   "\"s3://My-Bucket\": bucket name \"My-Bucket\" holds 'M' at 0; S3 bucket names "
                   "are lowercase letters, digits, '.' and '-'");
    expect_refused("s3://my_bucket", NULL, "us-east-1",
                   "\"s3://my_bucket\": bucket name \"my_bucket\" holds '_' at 2; S3 bucket names "
                   "are lowercase letters, digits, '.' and '-'");
    const char *edge = "must start and end, and each part between periods must start and end, "
                       "with a letter or digit";
    const char *edges[] = {"-bucket", "bucket-", ".bucket", "bucket.", "bu.-cket", "bu-.cket"};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        char url[128], want[512];
        snprintf(url, sizeof(url), "s3://%s", edges[i]);
        snprintf(want, sizeof(want), "\"%s\": bucket name \"%s\" %s", url, edges[i], edge);
        expect_refused(url, NULL, "us-east-1", want);
    }
    expect_refused("s3://bu..cket", NULL, "us-east-1",
                   "\"s3://bu..cket\": bucket name \"bu..cket\" has two adjacent periods");
    expect_refused("s3://192.168.5.4/x", NULL, "us-east-1",
                   "\"s3://192.168.5.4/x\": bucket name \"192.168.5.4\" is formatted as an IP "
                   "address");
    expect_refused("s3://xn--bucket", NULL, "us-east-1",
                   "\"s3://xn--bucket\": bucket name \"xn--bucket\" starts with \"xn--\", which S3 "
                   "reserves");
    expect_refused("s3://sthree-b", NULL, "us-east-1",
                   "\"s3://sthree-b\": bucket name \"sthree-b\" starts with \"sthree-\", which S3 "
                   "reserves");
    expect_refused("s3://amzn-s3-demo-b", NULL, "us-east-1",
                   "\"s3://amzn-s3-demo-b\": bucket name \"amzn-s3-demo-b\" starts with "
                   "\"amzn-s3-demo-\", which S3 reserves");
    const char *suffixes[] = {"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"};
    for (size_t i = 0; i < 5; i++) {
        char bucket[64], url[128], want[512];
        snprintf(bucket, sizeof(bucket), "data%s", suffixes[i]);
        snprintf(url, sizeof(url), "s3://%s/p", bucket);
        snprintf(want, sizeof(want),
                 "\"%s\": bucket name \"%s\" ends with \"%s\", which S3 reserves", url, bucket,
                 suffixes[i]);
        expect_refused(url, NULL, "us-east-1", want);
    }
}

Test(io_s3_url, bad_urls_regions_and_endpoints_are_refused_naming_the_url)
{
    expect_refused("gs://bucket/x", NULL, "us-east-1", "\"gs://bucket/x\" is not an s3:// URL");
    expect_refused("s3:/bucket", NULL, "us-east-1", "\"s3:/bucket\" is not an s3:// URL");
    expect_refused("s3://", NULL, "us-east-1",
                   "\"s3://\": bucket name \"\" has 0 characters; S3 wants 3 to 63");
    expect_refused("s3://bucket/a//b", NULL, "us-east-1",
                   "\"s3://bucket/a//b\": the key prefix has an empty, \".\" or \"..\" component");
    expect_refused("s3://bucket//a", NULL, "us-east-1",
                   "\"s3://bucket//a\": the key prefix has an empty, \".\" or \"..\" component");
    expect_refused("s3://bucket/a/../b", NULL, "us-east-1",
                   "\"s3://bucket/a/../b\": the key prefix has an empty, \".\" or \"..\" "
                   "component");
    expect_refused("s3://bucket/./b", NULL, "us-east-1",
                   "\"s3://bucket/./b\": the key prefix has an empty, \".\" or \"..\" component");
    expect_refused("s3://bucket/x?versionId=3", NULL, "us-east-1",
                   "\"s3://bucket/x?versionId=3\": an s3:// URL has no query or fragment ('?' or "
                   "'#')");
    expect_refused("s3://bucket/x#y", NULL, "us-east-1",
                   "\"s3://bucket/x#y\": an s3:// URL has no query or fragment ('?' or '#')");
    expect_refused("s3://bucket/a\tb", NULL, "us-east-1",
                   "\"s3://bucket/a\tb\": a control character (0x09) in the key prefix");
    expect_refused("s3://bucket/x", NULL, "US_EAST_1",
                   "\"s3://bucket/x\": region \"US_EAST_1\" is not lowercase letters, digits and "
                   "'-'");
    expect_refused("s3://bucket/x", NULL, "",
                   "\"s3://bucket/x\": region \"\" is not lowercase letters, digits and '-'");
    expect_refused("s3://bucket/x", "ftp://files", "us-east-1",
                   "\"s3://bucket/x\": endpoint \"ftp://files\" is no http:// or https:// URL "
                   "without user, query or fragment");
    expect_refused("s3://bucket/x", "http://user:pw@h:9000", "us-east-1",
                   "\"s3://bucket/x\": endpoint \"http://user:pw@h:9000\" is no http:// or "
                   "https:// URL without user, query or fragment");
    expect_refused("s3://bucket/x", "http://h:9000?x=1", "us-east-1",
                   "\"s3://bucket/x\": endpoint \"http://h:9000?x=1\" is no http:// or https:// "
                   "URL without user, query or fragment");
    expect_refused("s3://bucket/x", "http://:9000", "us-east-1",
                   "\"s3://bucket/x\": endpoint \"http://:9000\" is no http:// or https:// URL "
                   "without user, query or fragment: \"http://:9000\" names no host");
    expect_refused("s3://bucket/x", "http://h/a b", "us-east-1",
                   "\"s3://bucket/x\": endpoint \"http://h/a b\" is no http:// or https:// URL "
                   "without user, query or fragment: \"http://h/a b\": a URL holds no spaces or "
                   "control characters");
    expect_refused("s3://bucket/x", "http://h/a%2f", "us-east-1",
                   "\"s3://bucket/x\": endpoint \"http://h/a%2f\" has a path that is not "
                   "URI-encoded");
    char prefix[1100] = "s3://bucket/";
    memset(prefix + 12, 'p', 1030);
    prefix[1042] = '\0';
    struct sl__s3_location loc;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(
        sl__s3_location_parse(prefix, NULL, "us-east-1", SL__S3_ADDRESSING_AUTO, &loc, &err),
        SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "the key prefix exceeds 1023 bytes"), "%s", err.text);
}

Test(io_s3_url, nodes_overlap_by_bucket_and_prefix_at_a_slash)
{
    cr_assert_eq(sl_s3_url_overlap("s3://b/x.zarr", "s3://b/x.zarr/"), SL_FS_SAME);
    cr_assert_eq(sl_s3_url_overlap("S3://b/x.zarr", "s3://b/x.zarr"), SL_FS_SAME);
    cr_assert_eq(sl_s3_url_overlap("s3://b/x.zarr/0", "s3://b/x.zarr"), SL_FS_INSIDE);
    cr_assert_eq(sl_s3_url_overlap("s3://b/x.zarr", "s3://b/x.zarr/0"), SL_FS_CONTAINS);
    cr_assert_eq(sl_s3_url_overlap("s3://b", "s3://b/x.zarr"), SL_FS_CONTAINS);
    cr_assert_eq(sl_s3_url_overlap("s3://b/x.zarr2", "s3://b/x.zarr"), SL_FS_APART);
    cr_assert_eq(sl_s3_url_overlap("s3://c/x.zarr", "s3://b/x.zarr"), SL_FS_APART);
    cr_assert_eq(sl_s3_url_overlap("x.zarr", "s3://b/x.zarr"), SL_FS_APART);
    cr_assert(sl_url_is_s3("S3://b") && !sl_url_is_s3("https://b") && !sl_url_is_s3(NULL));
}
