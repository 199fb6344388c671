/* SPDX-License-Identifier: MIT */
/*
 * CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected as 0x82F63B78), the
 * checksum of the Zarr v3 crc32c codec and of shard indexes.  Portable
 * slicing-by-8 tables, and the SSE4.2 crc32 instruction on x86-64 when the
 * processor has it (checked once at run time).
 */
#include <pthread.h>
#include <string.h>

#include "codec_internal.h"

static uint32_t crc32c_table[8][256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void
crc32c_init_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc32c_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc32c_table[t][i] =
                (crc32c_table[t - 1][i] >> 8) ^ crc32c_table[0][crc32c_table[t - 1][i] & 0xff];
}

/* Process with the tables; `c` is the running (inverted) register. */
static uint32_t
crc32c_sw(uint32_t c, const uint8_t *p, size_t n)
{
    while (n > 0 && ((uintptr_t)p & 7) != 0) {
        c = (c >> 8) ^ crc32c_table[0][(c ^ *p++) & 0xff];
        n--;
    }
    for (; n >= 8; p += 8, n -= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        uint32_t hi =
            (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        c = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
            crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
            crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
            crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
    }
    while (n-- > 0)
        c = (c >> 8) ^ crc32c_table[0][(c ^ *p++) & 0xff];
    return c;
}

uint32_t
sl__crc32c_portable(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&crc32c_once, crc32c_init_tables);
    return ~crc32c_sw(~crc, data, n);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SL_CRC32C_HW 1

__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t c, const uint8_t *p, size_t n)
{
    while (n > 0 && ((uintptr_t)p & 7) != 0) {
        c = __builtin_ia32_crc32qi(c, *p++);
        n--;
    }
    uint64_t c64 = c;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
    }
    c = (uint32_t)c64;
    while (n-- > 0)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}

static bool crc32c_has_hw;

static void
crc32c_init(void)
{
    __builtin_cpu_init();
    crc32c_has_hw = __builtin_cpu_supports("sse4.2");
}

static pthread_once_t crc32c_hw_once = PTHREAD_ONCE_INIT;
#endif

uint32_t
sl__crc32c(uint32_t crc, const void *data, size_t n)
{
#ifdef SL_CRC32C_HW
    pthread_once(&crc32c_hw_once, crc32c_init);
    if (crc32c_has_hw)
        return ~crc32c_hw(~crc, data, n);
#endif
    return sl__crc32c_portable(crc, data, n);
}
