/* SPDX-License-Identifier: MIT */
/* Tests of SHA-256 against the FIPS 180-4 / NIST example vectors. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <sluice.h>

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
