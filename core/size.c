/* SPDX-License-Identifier: MIT */
/*
 * Byte sizes written as text ("4096", "64K", "1.5G", "2TiB"): the one parser
 * behind the launcher's --memory, a graph file's "run"/"memory" and
 * SLUICE_BUF_CACHE_BYTES.  The grammar is in <sluice/checked.h>.
 *
 * DESIGN
 * Integer arithmetic only, so "1.5G" is exact and no size near 2^64 is
 * rounded through a double: the whole part is accumulated with checked
 * multiplications, and the fraction 0.d1 d2 ... dn times the unit is taken
 * from the last digit back, x = (d * unit + x) / 10, which floors at every
 * step without changing the final floor (floor((a + floor(y)) / 10) =
 * floor((a + y) / 10) for a whole a).  Every intermediate stays below
 * 10 x 2^40.
 */
#include <stdbool.h>
#include <string.h>

#include <sluice/checked.h>

#include "core_internal.h"

/* Quoted in messages: the text up to this many characters. */
#define SIZE_TEXT_MAX 40

static bool
size_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* log2 of unit letter `c`, or -1 when `c` is no unit. */
static int
size_unit_shift(char c)
{
    switch (c) {
    case 'K':
    case 'k':
        return 10;
    case 'M':
    case 'm':
        return 20;
    case 'G':
    case 'g':
        return 30;
    case 'T':
    case 't':
        return 40;
    default:
        return -1;
    }
}

/* Accumulate the digits at *p into *v, advancing *p; *overflow once *v
 * would pass 2^64 - 1. */
static void
size_digits(const char **p, uint64_t *v, bool *overflow)
{
    for (; size_is_digit(**p); (*p)++)
        if (!*overflow &&
            (!sl_u64_mul_fits(*v, 10, v) || !sl_u64_add_fits(*v, (uint64_t)(**p - '0'), v)))
            *overflow = true;
}

/* floor(0.d1 d2 ... dn x unit) for the digits in [begin, end); unit <= 2^40. */
static uint64_t
size_fraction(const char *begin, const char *end, uint64_t unit)
{
    uint64_t x = 0;
    while (end > begin) {
        end--;
        x = ((uint64_t)(*end - '0') * unit + x) / 10;
    }
    return x;
}

sl_status
sl_size_parse(const char *text, uint64_t *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (text == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "sl_size_parse: text or out is NULL");
    if (text[0] == '\0')
        return sl_error_set(err, SL_EINVAL, NULL,
                            "empty size: expected one such as 4096, 64K, 1.5G or 2TiB");
    if (text[0] == '-')
        return sl_error_set(err, SL_EINVAL, NULL, "\"%.*s\": a size cannot be negative",
                            SIZE_TEXT_MAX, text);
    const char *p = text;
    uint64_t whole = 0;
    bool overflow = false;
    size_digits(&p, &whole, &overflow);
    size_t n_digits = (size_t)(p - text);
    const char *frac = p, *frac_end = p;
    if (*p == '.') {
        frac = ++p;
        while (size_is_digit(*p))
            p++;
        frac_end = p;
        n_digits += (size_t)(frac_end - frac);
    }
    int shift = size_unit_shift(*p);
    if (n_digits > 0 && shift >= 0) {
        p++;
        if (strcmp(p, "B") == 0 || strcmp(p, "iB") == 0)
            p += strlen(p);
    }
    if (n_digits == 0 || *p != '\0')
        return sl_error_set(err, SL_EINVAL, NULL,
                            "\"%.*s\" is not a size such as 4096, 64K, 1.5G or 2TiB", SIZE_TEXT_MAX,
                            text);
    uint64_t unit = (uint64_t)1 << (shift >= 0 ? shift : 0), bytes = 0;
    if (overflow || !sl_u64_mul_fits(whole, unit, &bytes) ||
        !sl_u64_add_fits(bytes, size_fraction(frac, frac_end, unit), &bytes))
        return sl_error_set(err, SL_EINVAL, NULL, "\"%.*s\" exceeds 2^64 - 1 bytes", SIZE_TEXT_MAX,
                            text);
    *out = bytes;
    return SL_OK;
}
