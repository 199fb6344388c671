/* SPDX-License-Identifier: MIT */
/* Tests of SHA-256 against the FIPS 180-4 / NIST example vectors, and of
 * HMAC-SHA256 against the test cases of RFC 4231, section 4. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

#include "core_internal.h"

TestSuite(core_sha256, .timeout = 10.0);

static void
expect_hex(const void *data, size_t n, const char *want)
{
    uint8_t d[SL_SHA256_BYTES];
    char hex[SL_SHA256_HEX_CHARS + 1];
    sl_sha256(data, n, d);
    sl_sha256_hex(d, hex);
    cr_assert_str_eq(hex, want);
}

Test(core_sha256, empty_message)
{
    expect_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

Test(core_sha256, abc)
{
    expect_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

Test(core_sha256, two_block_message)
{
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    expect_hex(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

Test(core_sha256, padding_boundaries_55_56_64_bytes)
{
    /* 55 bytes fit the length in the same block, 56 need a second one. */
    char m[64];
    memset(m, 'a', sizeof(m));
    expect_hex(m, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    expect_hex(m, 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    expect_hex(m, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

Test(core_sha256, million_a_in_uneven_pieces_matches_one_shot)
{
    const size_t n = 1000000;
    char *m = malloc(n);
    cr_assert_not_null(m);
    memset(m, 'a', n);
    expect_hex(m, n, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    struct sl_sha256 s;
    sl_sha256_init(&s);
    size_t off = 0;
    for (size_t step = 1; off < n; step = step * 3 % 97 + 1) {
        size_t take = step < n - off ? step : n - off;
        sl_sha256_update(&s, m + off, take);
        off += take;
    }
    uint8_t d[SL_SHA256_BYTES];
    char hex[SL_SHA256_HEX_CHARS + 1];
    sl_sha256_final(&s, d);
    sl_sha256_hex(d, hex);
    cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(m);
}

/* ---- HMAC-SHA256: RFC 4231, section 4 (test cases 1 to 7) ---- */

static void
expect_hmac(const void *key, size_t key_len, const void *data, size_t n, const char *want)
{
    uint8_t mac[SL_SHA256_BYTES];
    char hex[SL_SHA256_HEX_CHARS + 1];
    sl_hmac_sha256(key, key_len, data, n, mac);
    sl_sha256_hex(mac, hex);
    /* Test case 5 gives only the first 128 bits. */
    cr_assert(strncmp(hex, want, strlen(want)) == 0, "HMAC %s, expected %s", hex, want);
}

Test(core_sha256, hmac_rfc4231_case_1_short_key)
{
    uint8_t key[20];
    memset(key, 0x0b, sizeof(key));
    expect_hmac(key, sizeof(key), "Hi There", 8,
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

Test(core_sha256, hmac_rfc4231_case_2_key_shorter_than_the_digest)
{
    const char *data = "what do ya want for nothing?";
    expect_hmac("Jefe", 4, data, strlen(data),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

Test(core_sha256, hmac_rfc4231_case_3_and_4_fifty_byte_data)
{
    uint8_t key[25], data[50];
    memset(key, 0xaa, 20);
    memset(data, 0xdd, sizeof(data));
    expect_hmac(key, 20, data, sizeof(data),
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    for (int i = 0; i < 25; i++)
        key[i] = (uint8_t)(i + 1);
    memset(data, 0xcd, sizeof(data));
    expect_hmac(key, sizeof(key), data, sizeof(data),
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
}

Test(core_sha256, hmac_rfc4231_case_5_truncated_to_128_bits)
{
    uint8_t key[20];
    memset(key, 0x0c, sizeof(key));
    expect_hmac(key, sizeof(key), "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b");
}

Test(core_sha256, hmac_rfc4231_case_6_and_7_keys_longer_than_a_block_are_hashed)
{
    uint8_t key[131];
    memset(key, 0xaa, sizeof(key));
    const char *d6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    expect_hmac(key, sizeof(key), d6, strlen(d6),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    const char *d7 = "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the HMAC "
                     "algorithm.";
    expect_hmac(key, sizeof(key), d7, strlen(d7),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

Test(core_sha256, hmac_key_of_exactly_one_block_is_used_as_it_is)
{
    /* A 64-byte key is padded, not hashed: it differs from the same key
     * hashed first (which is what a 65-byte key would get). */
    uint8_t key[64], hashed[SL_SHA256_BYTES], a[SL_SHA256_BYTES], b[SL_SHA256_BYTES];
    memset(key, 0x5a, sizeof(key));
    sl_sha256(key, sizeof(key), hashed);
    sl_hmac_sha256(key, sizeof(key), "x", 1, a);
    sl_hmac_sha256(hashed, sizeof(hashed), "x", 1, b);
    cr_assert(memcmp(a, b, sizeof(a)) != 0);
    /* And a key longer than a block is the same as its digest. */
    uint8_t long_key[65];
    memset(long_key, 0x5a, sizeof(long_key));
    sl_sha256(long_key, sizeof(long_key), hashed);
    sl_hmac_sha256(long_key, sizeof(long_key), "x", 1, a);
    sl_hmac_sha256(hashed, sizeof(hashed), "x", 1, b);
    cr_assert(memcmp(a, b, sizeof(a)) == 0);
}

Test(core_sha256, hmac_empty_key_and_empty_data)
{
    uint8_t a[SL_SHA256_BYTES], b[SL_SHA256_BYTES];
    sl_hmac_sha256(NULL, 0, NULL, 0, a);
    sl_hmac_sha256("", 0, "", 0, b);
    cr_assert(memcmp(a, b, sizeof(a)) == 0);
}

/* The SHA extensions' blocks (where the CPU has them) hash as the portable
 * code does: every length from 0 to 1100 bytes at odd offsets, one shot
 * and in uneven pieces, and 1 MiB; the vectors above pass with both. */
Test(core_sha256, cpu_extensions_hash_as_the_portable_code)
{
    if (!sl__sha256_use_hw(true)) {
        cr_log_warn("this CPU has no SHA extensions: only the portable code is tested");
        return;
    }
    size_t big = 1u << 20;
    uint8_t *buf = malloc(big + 3);
    cr_assert_not_null(buf);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < big + 3; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        buf[i] = (uint8_t)x;
    }
    uint8_t hw[SL_SHA256_BYTES], sw[SL_SHA256_BYTES], pieces[SL_SHA256_BYTES];
    for (size_t n = 0; n <= 1100; n++) {
        const uint8_t *p = buf + (n % 3);
        sl__sha256_use_hw(true);
        sl_sha256(p, n, hw);
        struct sl_sha256 s;
        sl_sha256_init(&s);
        for (size_t at = 0, step = 1; at < n; at += step, step = step * 2 + 1)
            sl_sha256_update(&s, p + at, step < n - at ? step : n - at);
        sl_sha256_final(&s, pieces);
        sl__sha256_use_hw(false);
        sl_sha256(p, n, sw);
        cr_assert_arr_eq(hw, sw, sizeof(hw), "%zu bytes at offset %zu", n, n % 3);
        cr_assert_arr_eq(pieces, sw, sizeof(hw), "%zu bytes in pieces", n);
    }
    sl__sha256_use_hw(true);
    sl_sha256(buf + 1, big, hw);
    sl__sha256_use_hw(false);
    sl_sha256(buf + 1, big, sw);
    cr_assert_arr_eq(hw, sw, sizeof(hw));
    /* The known vectors through the portable code too. */
    expect_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    expect_hex(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    sl__sha256_use_hw(true);
    free(buf);
}
