/* SPDX-License-Identifier: MIT */
/*
 * AWS Signature Version 4 (io/store/s3_sign.c) against published vectors:
 *
 * - AWS's SigV4 test suite, as aws-c-auth ships it
 *   (github.com/awslabs/aws-c-auth, tests/aws-signing-test-suite/v4/<case>/
 *   at commit 495329c2433034bd8fd53fc6ba9e0202d3fac876): request.txt gives
 *   the inputs, header-canonical-request.txt, header-string-to-sign.txt and
 *   header-signature.txt the expected values; credentials AKIDEXAMPLE /
 *   wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY, us-east-1, service "service",
 *   20150830T123600Z.  These cases do not sign x-amz-content-sha256 unless
 *   their context says "sign_body" (omit_content_sha256 otherwise).  Only
 *   cases whose path S3 would sign the same way are used (the
 *   "-unnormalized" ones: S3 never normalizes a path); cases with a header
 *   value folded over lines are left out (signing refuses CR and LF).
 * - The four examples of "Signature Calculations for the Authorization
 *   Header: Transferring Payload in a Single Chunk" in Amazon S3's API
 *   reference (GET Object with a range, PUT Object, GET Bucket Lifecycle,
 *   Get Bucket (List Objects)): AKIAIOSFODNN7EXAMPLE /
 *   wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, us-east-1, 20130524T000000Z.
 * - The signing key example of the IAM user guide's "Examples of how to
 *   derive a signing key for Signature Version 4" (20120215, us-east-1,
 *   iam), with its intermediate keys.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

#include "core_internal.h"
#include "s3_internal.h"

TestSuite(io_s3_sign, .timeout = 20.0);

#define SUITE_TIME INT64_C(1440938160)  /* 2015-08-30T12:36:00Z */
#define S3_DOC_TIME INT64_C(1369353600) /* 2013-05-24T00:00:00Z */

static const struct sl__s3_creds suite_creds = {
    .access_key = "AKIDEXAMPLE",
    .secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
};
static const struct sl__s3_creds s3_doc_creds = {
    .access_key = "AKIAIOSFODNN7EXAMPLE",
    .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
};

/* One case of AWS's test suite. */
struct suite_case {
    const char *name;
    const char *method;
    const char *path; /* raw */
    struct sl__s3_kv params[4];
    size_t n_params;
    struct sl__s3_kv headers[4]; /* besides Host */
    size_t n_headers;
    const char *body;  /* signed body ("sign_body"), or NULL */
    const char *token; /* a session token signed, or NULL */
    const char *canonical;
    const char *string_to_sign;
    const char *signature;
};

/* Generated from the suite's files (see the top of this file). */
/* clang-format off */
static const struct suite_case suite_cases[] = {
    {
        .name = "get-vanilla",
        .method = "GET",
        .path = "/",
        .canonical = "GET\n"
        "/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63",
        .signature = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
    },
    {
        .name = "get-vanilla-query-order-key-case",
        .method = "GET",
        .path = "/",
        .params = {{"Param2", "value2"}, {"Param1", "value1"}},
        .n_params = 2,
        .canonical = "GET\n"
        "/\n"
        "Param1=value1&Param2=value2\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0",
        .signature = "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
    },
    {
        .name = "get-vanilla-utf8-query",
        .method = "GET",
        .path = "/",
        .params = {{"\341\210\264", "bar"}},
        .n_params = 1,
        .canonical = "GET\n"
        "/\n"
        "%E1%88%B4=bar\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "eb30c5bed55734080471a834cc727ae56beb50e5f39d1bff6d0d38cb192a7073",
        .signature = "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04",
    },
    {
        .name = "get-vanilla-query-unreserved",
        .method = "GET",
        .path = "/",
        .params = {{"-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}},
        .n_params = 1,
        .canonical = "GET\n"
        "/\n"
        "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "c30d4703d9f799439be92736156d47ccfb2d879ddf56f5befa6d1d6aab979177",
        .signature = "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197",
    },
    {
        .name = "get-vanilla-query-order-encoded",
        .method = "GET",
        .path = "/",
        .params = {{"Param-3", "Value3"}, {"Param", "Value2"}, {"\341\210\264", "Value1"}},
        .n_params = 3,
        .canonical = "GET\n"
        "/\n"
        "%E1%88%B4=Value1&Param=Value2&Param-3=Value3\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "868294f5c38bd141c4972a373a76654f1418a8e4fc18b2e7903ae45e8ae0ec71",
        .signature = "371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac",
    },
    {
        .name = "post-vanilla",
        .method = "POST",
        .path = "/",
        .canonical = "POST\n"
        "/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "553f88c9e4d10fc9e109e2aeb65f030801b70c2f6468faca261d401ae622fc87",
        .signature = "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
    },
    {
        .name = "post-vanilla-query",
        .method = "POST",
        .path = "/",
        .params = {{"Param1", "value1"}},
        .n_params = 1,
        .canonical = "POST\n"
        "/\n"
        "Param1=value1\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "9d659678c1756bb3113e2ce898845a0a79dbbc57b740555917687f1b3340fbbd",
        .signature = "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11",
    },
    {
        .name = "get-header-value-trim",
        .method = "GET",
        .path = "/",
        .headers = {{"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}},
        .n_headers = 2,
        .canonical = "GET\n"
        "/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "my-header1:value1\n"
        "my-header2:\"a b c\"\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;my-header1;my-header2;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "a726db9b0df21c14f559d0a978e563112acb1b9e05476f0a6a1c7d68f28605c7",
        .signature = "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
    },
    {
        .name = "get-header-key-duplicate",
        .method = "GET",
        .path = "/",
        .headers = {{"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}},
        .n_headers = 3,
        .canonical = "GET\n"
        "/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "my-header1:value2,value2,value1\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;my-header1;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "dc7f04a3abfde8d472b0ab1a418b741b7c67174dad1551b4117b15527fbe966c",
        .signature = "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea",
    },
    {
        .name = "get-header-value-order",
        .method = "GET",
        .path = "/",
        .headers = {{"My-Header1", "value4"}, {"My-Header1", "value1"}, {"My-Header1", "value3"}, {"My-Header1", "value2"}},
        .n_headers = 4,
        .canonical = "GET\n"
        "/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "my-header1:value4,value1,value3,value2\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;my-header1;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "31ce73cd3f3d9f66977ad3dd957dc47af14df92fcd8509f59b349e9137c58b86",
        .signature = "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01",
    },
    {
        .name = "post-header-key-case",
        .method = "POST",
        .path = "/",
        .canonical = "POST\n"
        "/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "553f88c9e4d10fc9e109e2aeb65f030801b70c2f6468faca261d401ae622fc87",
        .signature = "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
    },
    {
        .name = "post-header-key-sort",
        .method = "POST",
        .path = "/",
        .headers = {{"My-Header1", "value1"}},
        .n_headers = 1,
        .canonical = "POST\n"
        "/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "my-header1:value1\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;my-header1;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "9368318c2967cf6de74404b30c65a91e8f6253e0a8659d6d5319f1a812f87d65",
        .signature = "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c",
    },
    {
        .name = "post-header-value-case",
        .method = "POST",
        .path = "/",
        .headers = {{"My-Header1", "VALUE1"}},
        .n_headers = 1,
        .canonical = "POST\n"
        "/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "my-header1:VALUE1\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;my-header1;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "d51ced243e649e3de6ef63afbbdcbca03131a21a7103a1583706a64618606a93",
        .signature = "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d",
    },
    {
        .name = "post-x-www-form-urlencoded",
        .method = "POST",
        .path = "/",
        .headers = {{"Content-Type", "application/x-www-form-urlencoded"}, {"Content-Length", "13"}},
        .n_headers = 2,
        .body = "Param1=value1",
        .canonical = "POST\n"
        "/\n"
        "\n"
        "content-length:13\n"
        "content-type:application/x-www-form-urlencoded\n"
        "host:example.amazonaws.com\n"
        "x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "content-length;content-type;host;x-amz-content-sha256;x-amz-date\n"
        "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "b1edd1d03544c25390e32085d55b57acc9a3961bb59415ff86c45c3d89d16cfb",
        .signature = "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b",
    },
    {
        .name = "post-x-www-form-urlencoded-parameters",
        .method = "POST",
        .path = "/",
        .headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}, {"Content-Length", "13"}},
        .n_headers = 2,
        .body = "Param1=value1",
        .canonical = "POST\n"
        "/\n"
        "\n"
        "content-length:13\n"
        "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
        "host:example.amazonaws.com\n"
        "x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "content-length;content-type;host;x-amz-content-sha256;x-amz-date\n"
        "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "a89f1a5b53e37702ee6363ce1da3ce8f54386f3c8f352ae652153c2982a0bc4d",
        .signature = "328d1b9eaadca9f5818ef05e8392801e091653bafec24fcab71e7344e7f51422",
    },
    {
        .name = "post-sts-header-before",
        .method = "POST",
        .path = "/",
        .token = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==",
        .canonical = "POST\n"
        "/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "x-amz-security-token:AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==\n"
        "\n"
        "host;x-amz-date;x-amz-security-token\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "c237e1b440d4c63c32ca95b5b99481081cb7b13c7e40434868e71567c1a882f6",
        .signature = "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead",
    },
    {
        .name = "get-vanilla-with-session-token",
        .method = "GET",
        .path = "/",
        .token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267",
        .canonical = "GET\n"
        "/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "x-amz-security-token:6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267\n"
        "\n"
        "host;x-amz-date;x-amz-security-token\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "067b36aa60031588cea4a4cde1f21215227a047690c72247f1d70b32fbbfad2b",
        .signature = "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
    },
    {
        .name = "get-unreserved",
        .method = "GET",
        .path = "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        .canonical = "GET\n"
        "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "6a968768eefaa713e2a6b16b589a8ea192661f098f37349f4e2c0082757446f9",
        .signature = "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f",
    },
    {
        .name = "get-utf8",
        .method = "GET",
        .path = "/\341\210\264",
        .canonical = "GET\n"
        "/%E1%88%B4\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "2a0a97d02205e45ce2e994789806b19270cfbbb0921b278ccf58f5249ac42102",
        .signature = "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
    },
    {
        .name = "get-space-unnormalized",
        .method = "GET",
        .path = "/example space/",
        .canonical = "GET\n"
        "/example%20space/\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "63ee75631ed7234ae61b5f736dfc7754cdccfedbff4b5128a915706ee9390d86",
        .signature = "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
    },
    {
        .name = "get-slashes-unnormalized",
        .method = "GET",
        .path = "//example//",
        .canonical = "GET\n"
        "//example//\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "528ec3105ee1f34ab014bb0a1a45da0ed2742a4fea3555149e5b4d5d201eb240",
        .signature = "87cca117541a147f6df867677d98a7d80dff226d2bfca9e4ffa899665623c7e5",
    },
    {
        .name = "get-slash-unnormalized",
        .method = "GET",
        .path = "//",
        .canonical = "GET\n"
        "//\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "80cb39203d058af815de2b79250ff56e1b73eb9b4718c86556cdc6f150c5d209",
        .signature = "c88bcd3d312d75078c0cd961d6deae3f4c754924b01669efcfcb439fd5e5b76e",
    },
    {
        .name = "get-slash-dot-slash-unnormalized",
        .method = "GET",
        .path = "/./",
        .canonical = "GET\n"
        "/./\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "d67825e2268bd77a97c7688b8d72c31a3c1855b309808505ba0a9747d2465aa7",
        .signature = "68714168e6557f8f2de0ef956fc24dc2593a4bd2961f8df51898d8a134695145",
    },
    {
        .name = "get-slash-pointless-dot-unnormalized",
        .method = "GET",
        .path = "/./example",
        .canonical = "GET\n"
        "/./example\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "73895e0e829507e28e39fd24669aedc2434a8e179e547e3c075b42921f952cdb",
        .signature = "beb03f223f7deae4146464f06e29eebbee9c8afbe15c290cf07aa8b119e14cff",
    },
    {
        .name = "get-relative-unnormalized",
        .method = "GET",
        .path = "/example/..",
        .canonical = "GET\n"
        "/example/..\n"
        "\n"
        "host:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n"
        "\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        .string_to_sign = "AWS4-HMAC-SHA256\n"
        "20150830T123600Z\n"
        "20150830/us-east-1/service/aws4_request\n"
        "0511f456aa502b456d135fcb9d749374a55228f9dbeedda1eacf659e05b0615b",
        .signature = "eca7ead57bb5aa5c8e28007acd4ff04e1ff9a0ff3b237ec1554a184887ff9282",
    },
};
/* clang-format on */

/* Sign `req` with `creds` and check every output. */
static void
expect_signature(const struct sl__s3_request *req, const struct sl__s3_creds *creds,
                 const char *name, const char *canonical, const char *string_to_sign,
                 const char *signature)
{
    struct sl__s3_signature sig = SL__S3_SIGNATURE_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_sign(req, creds, &sig, &err), SL_OK, "%s: %s", name, err.text);
    cr_assert_str_eq((const char *)sig.canonical.data, canonical, "%s: canonical request", name);
    cr_assert_eq(sig.canonical.size, strlen(canonical), "%s", name);
    cr_assert_str_eq((const char *)sig.to_sign.data, string_to_sign, "%s: string to sign", name);
    cr_assert_str_eq(sig.signature, signature, "%s: signature", name);
    /* The Authorization value: the scope, the signed header list (the
     * canonical request's next-to-last line) and the signature. */
    const char *last = strrchr(canonical, '\n');
    const char *list = last - 1;
    while (*list != '\n')
        list--;
    char scope[128], want[1024];
    const char *scope_line = strchr(strchr(string_to_sign, '\n') + 1, '\n') + 1;
    snprintf(scope, sizeof(scope), "%.*s", (int)(strchr(scope_line, '\n') - scope_line),
             scope_line);
    snprintf(want, sizeof(want),
             "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%.*s, Signature=%s",
             creds->access_key, scope, (int)(last - list - 1), list + 1, signature);
    cr_assert_str_eq(sig.authorization, want, "%s: Authorization", name);
    cr_assert(strncmp(strchr(string_to_sign, '\n') + 1, sig.amz_date, 16) == 0, "%s", name);
    sl__s3_signature_fini(&sig);
}

Test(io_s3_sign, aws_sigv4_test_suite)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(suite_cases); i++) {
        const struct suite_case *c = &suite_cases[i];
        char hash[SL_SHA256_HEX_CHARS + 1] = SL__S3_EMPTY_SHA256;
        if (c->body != NULL) {
            uint8_t d[SL_SHA256_BYTES];
            sl_sha256(c->body, strlen(c->body), d);
            sl_sha256_hex(d, hash);
        }
        struct sl__s3_creds creds = suite_creds;
        creds.session_token = c->token;
        struct sl__s3_request req = {
            .method = c->method,
            .host = "example.amazonaws.com",
            .path = c->path,
            .params = c->params,
            .n_params = c->n_params,
            .headers = c->headers,
            .n_headers = c->n_headers,
            .payload_hash = hash,
            .omit_content_sha256 = c->body == NULL,
            .region = "us-east-1",
            .service = "service",
            .time = SUITE_TIME,
        };
        expect_signature(&req, &creds, c->name, c->canonical, c->string_to_sign, c->signature);
    }
}

/* ---- Amazon S3's documented examples --------------------------------------------------------- */

Test(io_s3_sign, s3_example_get_object_with_a_range)
{
    struct sl__s3_kv headers[] = {{"Range", "bytes=0-9"}};
    struct sl__s3_request req = {
        .method = "GET",
        .host = "examplebucket.s3.amazonaws.com",
        .path = "/test.txt",
        .headers = headers,
        .n_headers = 1,
        .region = "us-east-1",
        .time = S3_DOC_TIME,
    };
    expect_signature(&req, &s3_doc_creds, "GET Object",
                     "GET\n"
                     "/test.txt\n"
                     "\n"
                     "host:examplebucket.s3.amazonaws.com\n"
                     "range:bytes=0-9\n"
                     "x-amz-content-sha256:" SL__S3_EMPTY_SHA256 "\n"
                     "x-amz-date:20130524T000000Z\n"
                     "\n"
                     "host;range;x-amz-content-sha256;x-amz-date\n" SL__S3_EMPTY_SHA256,
                     "AWS4-HMAC-SHA256\n"
                     "20130524T000000Z\n"
                     "20130524/us-east-1/s3/aws4_request\n"
                     "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
                     "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

Test(io_s3_sign, s3_example_put_object_with_a_key_to_encode)
{
    const char *body = "Welcome to Amazon S3.";
    uint8_t d[SL_SHA256_BYTES];
    char hash[SL_SHA256_HEX_CHARS + 1];
    sl_sha256(body, strlen(body), d);
    sl_sha256_hex(d, hash);
    cr_assert_str_eq(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    struct sl__s3_kv headers[] = {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                                  {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
    struct sl__s3_request req = {
        .method = "PUT",
        .host = "examplebucket.s3.amazonaws.com",
        .path = "/test$file.text",
        .headers = headers,
        .n_headers = 2,
        .payload_hash = hash,
        .region = "us-east-1",
        .time = S3_DOC_TIME,
    };
    const char *canonical = "PUT\n"
                            "/test%24file.text\n"
                            "\n"
                            "date:Fri, 24 May 2013 00:00:00 GMT\n"
                            "host:examplebucket.s3.amazonaws.com\n"
                            "x-amz-content-sha256:"
                            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072\n"
                            "x-amz-date:20130524T000000Z\n"
                            "x-amz-storage-class:REDUCED_REDUNDANCY\n"
                            "\n"
                            "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n"
                            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072";
    const char *to_sign = "AWS4-HMAC-SHA256\n"
                          "20130524T000000Z\n"
                          "20130524/us-east-1/s3/aws4_request\n"
                          "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d";
    const char *signature = "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd";
    expect_signature(&req, &s3_doc_creds, "PUT Object (raw path)", canonical, to_sign, signature);
    /* The same path given encoded signs the same. */
    req.path = "/test%24file.text";
    req.path_encoded = true;
    expect_signature(&req, &s3_doc_creds, "PUT Object (encoded path)", canonical, to_sign,
                     signature);
}

Test(io_s3_sign, s3_example_get_bucket_lifecycle_has_a_parameter_without_value)
{
    const char *canonical = "GET\n"
                            "/\n"
                            "lifecycle=\n"
                            "host:examplebucket.s3.amazonaws.com\n"
                            "x-amz-content-sha256:" SL__S3_EMPTY_SHA256 "\n"
                            "x-amz-date:20130524T000000Z\n"
                            "\n"
                            "host;x-amz-content-sha256;x-amz-date\n" SL__S3_EMPTY_SHA256;
    const char *to_sign = "AWS4-HMAC-SHA256\n"
                          "20130524T000000Z\n"
                          "20130524/us-east-1/s3/aws4_request\n"
                          "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca";
    const char *signature = "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543";
    /* A NULL value and an empty one both sign as "name=". */
    const char *values[] = {NULL, ""};
    for (int i = 0; i < 2; i++) {
        struct sl__s3_kv params[] = {{"lifecycle", values[i]}};
        struct sl__s3_request req = {
            .method = "GET",
            .host = "examplebucket.s3.amazonaws.com",
            .path = "/",
            .params = params,
            .n_params = 1,
            .payload_hash = SL__S3_EMPTY_SHA256,
            .region = "us-east-1",
            .service = "s3",
            .time = S3_DOC_TIME,
        };
        expect_signature(&req, &s3_doc_creds, "GET Bucket Lifecycle", canonical, to_sign,
                         signature);
    }
}

Test(io_s3_sign, s3_example_list_objects_sorts_the_query)
{
    /* Given out of order: signing sorts them. */
    struct sl__s3_kv params[] = {{"prefix", "J"}, {"max-keys", "2"}};
    struct sl__s3_request req = {
        .method = "GET",
        .host = "examplebucket.s3.amazonaws.com",
        .params = params,
        .n_params = 2,
        .region = "us-east-1",
        .time = S3_DOC_TIME,
    };
    expect_signature(&req, &s3_doc_creds, "Get Bucket (List Objects)",
                     "GET\n"
                     "/\n"
                     "max-keys=2&prefix=J\n"
                     "host:examplebucket.s3.amazonaws.com\n"
                     "x-amz-content-sha256:" SL__S3_EMPTY_SHA256 "\n"
                     "x-amz-date:20130524T000000Z\n"
                     "\n"
                     "host;x-amz-content-sha256;x-amz-date\n" SL__S3_EMPTY_SHA256,
                     "AWS4-HMAC-SHA256\n"
                     "20130524T000000Z\n"
                     "20130524/us-east-1/s3/aws4_request\n"
                     "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7",
                     "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

/* ---- the parts ------------------------------------------------------------------------------- */

static void
hex_of(const uint8_t *d, char hex[SL_SHA256_HEX_CHARS + 1])
{
    sl_sha256_hex(d, hex);
}

Test(io_s3_sign, signing_key_of_the_iam_guide_example)
{
    const char *secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    uint8_t k[SL_SHA256_BYTES], step[SL_SHA256_BYTES];
    char hex[SL_SHA256_HEX_CHARS + 1];
    cr_assert(sl__s3_signing_key(secret, "20120215", "us-east-1", "iam", k));
    hex_of(k, hex);
    cr_assert_str_eq(hex, "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
    /* The guide's intermediate keys, so a failure says which link broke. */
    char first[64];
    snprintf(first, sizeof(first), "AWS4%s", secret);
    sl_hmac_sha256(first, strlen(first), "20120215", 8, step);
    hex_of(step, hex);
    cr_assert_str_eq(hex, "969fbb94feb542b71ede6f87fe4d5fa29c789342b0f407474670f0c2489e0a0d");
    sl_hmac_sha256(step, sizeof(step), "us-east-1", 9, k);
    hex_of(k, hex);
    cr_assert_str_eq(hex, "69daa0209cd9c5ff5c8ced464a696fd4252e981430b10e3d3fd8e2f197d7a70c");
    sl_hmac_sha256(k, sizeof(k), "iam", 3, step);
    hex_of(step, hex);
    cr_assert_str_eq(hex, "f72cfd46f26bc4643f06a11eabb6c0ba18780c19a8da0c31ace671265e3c87fa");
    /* Too long a secret is refused, not cut. */
    char longer[SL__S3_SECRET_MAX + 2];
    memset(longer, 'k', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    cr_assert_not(sl__s3_signing_key(longer, "20120215", "us-east-1", "iam", k));
}

static void
expect_encoded(const char *raw, size_t n, bool keep_slash, const char *want)
{
    struct sl_buf b = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_uri_encode(&b, raw, n, keep_slash, &err), SL_OK, "%s", err.text);
    cr_assert_eq(b.size, strlen(want), "\"%s\": %zu bytes, expected \"%s\"", raw, b.size, want);
    cr_assert(b.size == 0 || memcmp(b.data, want, b.size) == 0, "\"%s\" -> \"%.*s\", expected %s",
              raw, (int)b.size, (const char *)b.data, want);
    sl_buf_fini(&b);
}

Test(io_s3_sign, uri_encoding_keeps_unreserved_characters_and_slash_in_paths_only)
{
    expect_encoded("a b/c~d*", 8, false, "a%20b%2Fc~d%2A");
    expect_encoded("a b/c~d*", 8, true, "a%20b/c~d%2A");
    expect_encoded("test$file.text", 14, true, "test%24file.text");
    expect_encoded("caf\xc3\xa9+=&?#%", 11, false, "caf%C3%A9%2B%3D%26%3F%23%25");
    expect_encoded("", 0, true, "");
    expect_encoded("a\0b", 3, true, "a%00b");
    /* Every byte: unreserved as it is, anything else %XX, uppercase. */
    for (int c = 0; c < 256; c++) {
        char in = (char)c, want[4];
        bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_' || c == '~';
        if (keep)
            snprintf(want, sizeof(want), "%c", c);
        else
            snprintf(want, sizeof(want), "%%%02X", c);
        expect_encoded(&in, 1, false, want);
    }
}

Test(io_s3_sign, amz_dates_are_utc_with_four_digit_years)
{
    char d[SL__S3_AMZ_DATE_CHARS + 1];
    cr_assert(sl__s3_amz_date(0, d));
    cr_assert_str_eq(d, "19700101T000000Z");
    cr_assert(sl__s3_amz_date(951782400, d)); /* a leap day */
    cr_assert_str_eq(d, "20000229T000000Z");
    cr_assert(sl__s3_amz_date(SUITE_TIME, d));
    cr_assert_str_eq(d, "20150830T123600Z");
    cr_assert(sl__s3_amz_date(INT64_C(253402300799), d));
    cr_assert_str_eq(d, "99991231T235959Z");
    cr_assert_not(sl__s3_amz_date(INT64_C(253402300800), d));
    cr_assert_not(sl__s3_amz_date(-1, d));
}

/* Sign a plain GET of "/k" with `params`, returning the canonical query line. */
static void
expect_query(const struct sl__s3_kv *params, size_t n, const char *want)
{
    struct sl__s3_signature sig = SL__S3_SIGNATURE_INIT;
    struct sl_error err = SL_ERROR_INIT;
    struct sl__s3_request req = {.method = "GET",
                                 .host = "h",
                                 .path = "/k",
                                 .params = params,
                                 .n_params = n,
                                 .region = "us-east-1",
                                 .time = S3_DOC_TIME};
    cr_assert_eq(sl__s3_sign(&req, &s3_doc_creds, &sig, &err), SL_OK, "%s", err.text);
    const char *q = strchr(strchr((const char *)sig.canonical.data, '\n') + 1, '\n') + 1;
    cr_assert(strncmp(q, want, strlen(want)) == 0 && q[strlen(want)] == '\n',
              "query line \"%.*s\", expected \"%s\"", (int)(strchr(q, '\n') - q), q, want);
    sl__s3_signature_fini(&sig);
}

Test(io_s3_sign, query_is_sorted_by_encoded_name_then_value)
{
    /* '[' sorts after 'A' raw but its escape "%5B" sorts before. */
    struct sl__s3_kv a[] = {{"Ax", "2"}, {"[x", "1"}};
    expect_query(a, 2, "%5Bx=1&Ax=2");
    /* The same name twice: by value. */
    struct sl__s3_kv b[] = {{"k", "b"}, {"k", "a"}, {"j", ""}};
    expect_query(b, 3, "j=&k=a&k=b");
    /* A name that is a prefix of another sorts first, whatever follows. */
    struct sl__s3_kv c[] = {{"a-b", "1"}, {"a", "2"}};
    expect_query(c, 2, "a=2&a-b=1");
    /* ListObjectsV2's continuation token and a prefix with '/' and a space. */
    struct sl__s3_kv d[] = {
        {"list-type", "2"},
        {"prefix", "data/x y.zarr/"},
        {"continuation-token", "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="}};
    expect_query(d, 3,
                 "continuation-token=1ueGcxLPRx1Tr%2FXYExHnhbYLgveDs2J%2Fwm36Hy4vbOwM%3D&"
                 "list-type=2&prefix=data%2Fx%20y.zarr%2F");
}

Test(io_s3_sign, session_token_and_unsigned_payload_are_signed_headers)
{
    struct sl__s3_signature sig = SL__S3_SIGNATURE_INIT, plain = SL__S3_SIGNATURE_INIT;
    struct sl_error err = SL_ERROR_INIT;
    struct sl__s3_kv headers[] = {{"If-None-Match", "*"},
                                  {"Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg=="}};
    struct sl__s3_request req = {.method = "PUT",
                                 .host = "b.s3.eu-west-1.amazonaws.com",
                                 .path = "/x.zarr/c/0/0",
                                 .headers = headers,
                                 .n_headers = 2,
                                 .payload_hash = SL__S3_UNSIGNED_PAYLOAD,
                                 .region = "eu-west-1",
                                 .time = S3_DOC_TIME};
    struct sl__s3_creds creds = s3_doc_creds;
    cr_assert_eq(sl__s3_sign(&req, &creds, &plain, &err), SL_OK, "%s", err.text);
    creds.session_token = "FQoGZXIvYXdzEXAMPLETOKEN";
    cr_assert_eq(sl__s3_sign(&req, &creds, &sig, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq((const char *)sig.canonical.data,
                     "PUT\n"
                     "/x.zarr/c/0/0\n"
                     "\n"
                     "content-md5:1B2M2Y8AsgTpgAmY7PhCfg==\n"
                     "host:b.s3.eu-west-1.amazonaws.com\n"
                     "if-none-match:*\n"
                     "x-amz-content-sha256:UNSIGNED-PAYLOAD\n"
                     "x-amz-date:20130524T000000Z\n"
                     "x-amz-security-token:FQoGZXIvYXdzEXAMPLETOKEN\n"
                     "\n"
                     "content-md5;host;if-none-match;x-amz-content-sha256;x-amz-date;"
                     "x-amz-security-token\n"
                     "UNSIGNED-PAYLOAD");
    cr_assert(strstr(sig.authorization, "Credential=AKIAIOSFODNN7EXAMPLE/20130524/eu-west-1/s3/"
                                        "aws4_request, ") != NULL,
              "%s", sig.authorization);
    cr_assert_str_neq(sig.signature, plain.signature);
    /* Neither secret nor token is in what is sent besides the token header. */
    cr_assert_null(strstr(sig.authorization, "FQoGZXIvYXdz"));
    cr_assert_null(strstr(sig.authorization, creds.secret_key));
    /* Reusing the signature's buffers signs the same again. */
    char again[SL_SHA256_HEX_CHARS + 1];
    snprintf(again, sizeof(again), "%s", sig.signature);
    cr_assert_eq(sl__s3_sign(&req, &creds, &sig, &err), SL_OK, "%s", err.text);
    cr_assert_str_eq(sig.signature, again);
    sl__s3_signature_fini(&sig);
    sl__s3_signature_fini(&plain);
    cr_assert_null(sig.canonical.data);
}

/* Signing `req` fails with `code`, its message holding `words`, never the
 * secret or the token, and leaves the signature empty. */
static void
expect_refused(const struct sl__s3_request *req, const struct sl__s3_creds *creds, sl_status code,
               const char *words)
{
    struct sl__s3_signature sig = SL__S3_SIGNATURE_INIT;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl__s3_sign(req, creds, &sig, &err), code, "%s: %s", words, err.text);
    cr_assert_eq(err.code, code);
    cr_assert_not_null(strstr(err.text, words), "\"%s\" lacks \"%s\"", err.text, words);
    if (creds->secret_key != NULL && creds->secret_key[0] != '\0')
        cr_assert_null(strstr(err.text, creds->secret_key), "%s", err.text);
    if (creds->session_token != NULL)
        cr_assert_null(strstr(err.text, creds->session_token), "%s", err.text);
    cr_assert_str_eq(sig.authorization, "");
    cr_assert_str_eq(sig.signature, "");
    cr_assert_eq(sig.canonical.size, 0);
    sl__s3_signature_fini(&sig);
}

Test(io_s3_sign, bad_requests_are_refused_naming_the_problem)
{
    const struct sl__s3_request good = {
        .method = "GET", .host = "h", .path = "/k", .region = "us-east-1", .time = S3_DOC_TIME};
    struct sl__s3_request r = good;
    r.method = "get";
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "method");
    r = good;
    r.host = "a b";
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "host");
    r = good;
    r.region = "us east";
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "region \"us east\"");
    r = good;
    r.time = -5;
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "time -5");
    r = good;
    r.payload_hash = "abc";
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "payload hash \"abc\"");
    r = good;
    r.path = "k";
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "does not start with '/'");
    r = good;
    r.path = "/a%2fb"; /* lowercase escape: S3 would not match it */
    r.path_encoded = true;
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "byte 2");
    r.path = "/a b";
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "byte 2");

    struct sl__s3_kv host[] = {{"Host", "evil"}};
    r = good;
    r.headers = host;
    r.n_headers = 1;
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "\"Host\" is set by signing");
    struct sl__s3_kv crlf[] = {{"x-amz-meta-a", "1\r\nx-amz-acl: public-read"}};
    r.headers = crlf;
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "control character");
    struct sl__s3_kv space[] = {{"bad name", "1"}};
    r.headers = space;
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "header name \"bad name\"");
    struct sl__s3_kv many[SL__S3_MAX_HEADERS + 1];
    for (size_t i = 0; i < SL_ARRAY_LEN(many); i++)
        many[i] = (struct sl__s3_kv){"x-amz-meta-a", "1"};
    r.headers = many;
    r.n_headers = SL_ARRAY_LEN(many);
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "33 headers");
    r = good;
    struct sl__s3_kv noname[] = {{"", "1"}};
    r.params = noname;
    r.n_params = 1;
    expect_refused(&r, &s3_doc_creds, SL_EINVAL, "parameter 0 has no name");

    struct sl__s3_creds c = s3_doc_creds;
    c.access_key = "AKIA/X";
    expect_refused(&good, &c, SL_EINVAL, "access key");
    c = s3_doc_creds;
    c.secret_key = "";
    expect_refused(&good, &c, SL_EINVAL, "secret access key is missing");
    c = s3_doc_creds;
    c.session_token = "tok\nen-SECRET";
    expect_refused(&good, &c, SL_EINVAL, "session token");
    char longer[SL__S3_SECRET_MAX + 2];
    memset(longer, 's', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    c = s3_doc_creds;
    c.secret_key = longer;
    expect_refused(&good, &c, SL_EINVAL, "257 bytes");
}

Test(io_s3_sign, signed_header_names_that_do_not_fit_are_refused)
{
    struct sl__s3_kv headers[SL__S3_MAX_HEADERS];
    char names[SL__S3_MAX_HEADERS][40];
    for (int i = 0; i < SL__S3_MAX_HEADERS; i++) {
        snprintf(names[i], sizeof(names[i]), "x-amz-meta-a-rather-long-name-%02d", i);
        headers[i] = (struct sl__s3_kv){names[i], "v"};
    }
    struct sl__s3_request r = {.method = "GET",
                               .host = "h",
                               .headers = headers,
                               .n_headers = SL__S3_MAX_HEADERS,
                               .region = "us-east-1",
                               .time = S3_DOC_TIME};
    expect_refused(&r, &s3_doc_creds, SL_EOVERFLOW, "signed header names exceed");
}
