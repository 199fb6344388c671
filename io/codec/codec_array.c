/* SPDX-License-Identifier: MIT */
/*
 * The array-level codecs: "transpose" (a permutation of dimensions; also how
 * v2 order "F" is read and written) and the byte swapping of the "bytes"
 * codec when the stored order is not this machine's.
 */
#include <string.h>

#include "codec_internal.h"

/* d[i] = s[i * step] for `n` elements of `es` bytes. */
static void
gather(uint8_t *d, const uint8_t *s, uint64_t n, uint64_t step, size_t es)
{
    switch (es) {
    case 1:
        for (uint64_t i = 0; i < n; i++)
            d[i] = s[i * step];
        break;
    case 2:
        for (uint64_t i = 0; i < n; i++)
            memcpy(d + 2 * i, s + 2 * i * step, 2);
        break;
    case 4:
        for (uint64_t i = 0; i < n; i++)
            memcpy(d + 4 * i, s + 4 * i * step, 4);
        break;
    case 8:
        for (uint64_t i = 0; i < n; i++)
            memcpy(d + 8 * i, s + 8 * i * step, 8);
        break;
    default:
        for (uint64_t i = 0; i < n; i++)
            memcpy(d + es * i, s + es * i * step, es);
        break;
    }
}

void
sl__transpose(void *dst, const void *src, uint32_t rank, const uint64_t *src_shape,
              const uint32_t *perm, size_t es)
{
    uint64_t src_stride[SL_MAX_RANK], shape[SL_MAX_RANK], step[SL_MAX_RANK];
    uint64_t total = 1;
    for (uint32_t d = rank; d-- > 0;) {
        src_stride[d] = total;
        total *= src_shape[d];
    }
    if (rank == 0 || total == 0) {
        if (total > 0)
            memcpy(dst, src, es);
        return;
    }
    for (uint32_t k = 0; k < rank; k++) {
        shape[k] = src_shape[perm[k]];
        step[k] = src_stride[perm[k]];
    }
    uint64_t idx[SL_MAX_RANK] = {0};
    uint64_t inner = shape[rank - 1], src_off = 0;
    uint8_t *d = dst;
    const uint8_t *s = src;
    for (uint64_t done = 0; done < total; done += inner) {
        gather(d + done * es, s + src_off * es, inner, step[rank - 1], es);
        /* Advance the odometer over the outer dimensions. */
        for (uint32_t k = rank - 1; k-- > 0;) {
            src_off += step[k];
            if (++idx[k] < shape[k])
                break;
            src_off -= step[k] * shape[k];
            idx[k] = 0;
        }
    }
}

void
sl__byteswap(void *data, size_t n, size_t width)
{
    uint8_t *p = data;
    switch (width) {
    case 2:
        for (size_t i = 0; i + 2 <= n; i += 2) {
            uint16_t v;
            memcpy(&v, p + i, 2);
            v = __builtin_bswap16(v);
            memcpy(p + i, &v, 2);
        }
        break;
    case 4:
        for (size_t i = 0; i + 4 <= n; i += 4) {
            uint32_t v;
            memcpy(&v, p + i, 4);
            v = __builtin_bswap32(v);
            memcpy(p + i, &v, 4);
        }
        break;
    case 8:
        for (size_t i = 0; i + 8 <= n; i += 8) {
            uint64_t v;
            memcpy(&v, p + i, 8);
            v = __builtin_bswap64(v);
            memcpy(p + i, &v, 8);
        }
        break;
    default:
        break;
    }
}
