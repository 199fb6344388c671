/* SPDX-License-Identifier: MIT */
/* Tests of MD5 against the test suite of RFC 1321 (appendix A.5), fed
 * whole and in pieces of every size. */
#include <criterion/criterion.h>
#include <string.h>

#include <sluice.h>

TestSuite(core_md5, .timeout = 10.0);

static const struct {
    const char *text, *md5;
} rfc1321[] = {
    {"", "d41d8cd98f00b204e9800998ecf8427e"},
    {"a", "0cc175b9c0f1b6a831c399e269772661"},
    {"abc", "900150983cd24fb0d6963f7d28e17f72"},
    {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
    {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
    {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
     "d174ab98d277d9f5a5611c2c9f419d9f"},
    {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
     "57edf4a22be3c955ac49da2e2107b67a"},
};

Test(core_md5, the_test_suite_of_rfc_1321)
{
    for (size_t i = 0; i < sizeof(rfc1321) / sizeof(rfc1321[0]); i++) {
        uint8_t d[SL_MD5_BYTES];
        char hex[SL_MD5_HEX_CHARS + 1];
        sl_md5(rfc1321[i].text, strlen(rfc1321[i].text), d);
        sl_md5_hex(d, hex);
        cr_assert_str_eq(hex, rfc1321[i].md5, "MD5(\"%s\")", rfc1321[i].text);
    }
}

Test(core_md5, pieces_of_any_size_give_the_one_shot_digest)
{
    const char *text = rfc1321[6].text; /* 80 bytes: padding spills into a second block */
    size_t n = strlen(text);
    for (size_t piece = 1; piece <= n; piece++) {
        struct sl_md5 s;
        sl_md5_init(&s);
        for (size_t at = 0; at < n; at += piece)
            sl_md5_update(&s, text + at, n - at < piece ? n - at : piece);
        uint8_t d[SL_MD5_BYTES];
        char hex[SL_MD5_HEX_CHARS + 1];
        sl_md5_final(&s, d);
        sl_md5_hex(d, hex);
        cr_assert_str_eq(hex, rfc1321[6].md5, "pieces of %zu bytes", piece);
    }
    /* Lengths around the padding's boundary (55, 56, 63, 64 bytes). */
    static const struct {
        size_t n;
        const char *md5;
    } as[] = {{55, "ef1772b6dff9a122358552954ad0df65"},
              {56, "3b0c8ac703f828b04c6c197006d17218"},
              {63, "b06521f39153d618550606be297466d5"},
              {64, "014842d480b571495a4a0363793f7367"}};
    char buf[64];
    memset(buf, 'a', sizeof(buf));
    for (size_t i = 0; i < 4; i++) {
        uint8_t d[SL_MD5_BYTES];
        char hex[SL_MD5_HEX_CHARS + 1];
        sl_md5(buf, as[i].n, d);
        sl_md5_hex(d, hex);
        cr_assert_str_eq(hex, as[i].md5, "%zu 'a's", as[i].n);
    }
}
