/* SPDX-License-Identifier: MIT */
/*
 * Compressor specs for new arrays: parsing the launcher's `--codec` syntax
 * (`zstd:1`, `gzip:6`, `blosc:lz4:5:shuffle`, `none`, each optionally
 * followed by `,crc32c`), writing it back, and
 * which Zarr codecs this build has.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"

/* Parse a whole decimal integer in [lo, hi]. */
static bool
parse_int(const char *s, size_t n, long lo, long hi, int *out)
{
    char tmp[24];
    if (n == 0 || n >= sizeof(tmp))
        return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    errno = 0;
    long v = strtol(tmp, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

/* Split `text` at ':' into at most `max` fields. */
static size_t
split_fields(const char *text, const char **start, size_t *len, size_t max)
{
    size_t n = 0;
    const char *p = text;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t l = colon != NULL ? (size_t)(colon - p) : strlen(p);
        if (n < max) {
            start[n] = p;
            len[n] = l;
        }
        n++;
        if (colon == NULL)
            return n;
        p = colon + 1;
    }
}

static bool
field_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

static sl_status
spec_parse_blosc(const char *text, const char **f, size_t *l, size_t n, struct sl_codec_spec *out,
                 struct sl_error *err)
{
    if (n < 3 || n > 4 || l[1] == 0 || l[1] >= sizeof(out->blosc_cname))
        return sl_error_set(err, SL_EPARSE, NULL,
                            "codec \"%s\": expected blosc:CNAME:CLEVEL[:shuffle|noshuffle|"
                            "bitshuffle]",
                            text);
    memcpy(out->blosc_cname, f[1], l[1]);
    out->blosc_cname[l[1]] = '\0';
    if (!parse_int(f[2], l[2], 0, 9, &out->level))
        return sl_error_set(err, SL_EPARSE, NULL,
                            "codec \"%s\": blosc clevel must be an integer 0..9", text);
    out->blosc_shuffle = SL_BLOSC_SHUFFLE;
    if (n == 4) {
        if (field_is(f[3], l[3], "noshuffle"))
            out->blosc_shuffle = SL_BLOSC_NOSHUFFLE;
        else if (field_is(f[3], l[3], "bitshuffle"))
            out->blosc_shuffle = SL_BLOSC_BITSHUFFLE;
        else if (!field_is(f[3], l[3], "shuffle"))
            return sl_error_set(err, SL_EPARSE, NULL,
                                "codec \"%s\": blosc shuffle must be shuffle, noshuffle or "
                                "bitshuffle",
                                text);
    }
    if (!sl__codec_built(SL__CODEC_BLOSC))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "codec \"%s\": this build has no libblosc",
                            text);
    if (!sl__blosc_cname_known(out->blosc_cname))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "codec \"%s\": blosc has no compressor \"%s\" (try lz4, lz4hc, "
                            "blosclz, zstd, zlib)",
                            text, out->blosc_cname);
    out->compressor = SL_COMPRESSOR_BLOSC;
    return SL_OK;
}

/* The compressor item of a chain: `text` (NUL-terminated, no ','). */
static sl_status
spec_parse_compressor(const char *text, struct sl_codec_spec *out, struct sl_error *err)
{
    const char *f[5];
    size_t l[5];
    size_t n = split_fields(text, f, l, 5);
    struct sl_codec_spec spec = SL_CODEC_SPEC_DEFAULT;
    if (n == 1 && field_is(f[0], l[0], "none")) {
        spec.compressor = SL_COMPRESSOR_NONE;
        spec.level = 0;
    } else if (n <= 2 && field_is(f[0], l[0], "zstd")) {
        if (n == 2 && !parse_int(f[1], l[1], -131072, 22, &spec.level))
            return sl_error_set(err, SL_EPARSE, NULL,
                                "codec \"%s\": zstd level must be an integer -131072..22", text);
        spec.compressor = SL_COMPRESSOR_ZSTD;
    } else if (n <= 2 && field_is(f[0], l[0], "gzip")) {
        spec.level = 6;
        if (n == 2 && !parse_int(f[1], l[1], 0, 9, &spec.level))
            return sl_error_set(err, SL_EPARSE, NULL,
                                "codec \"%s\": gzip level must be an integer 0..9", text);
        if (!sl__codec_built(SL__CODEC_GZIP))
            return sl_error_set(err, SL_EUNSUPPORTED, NULL, "codec \"%s\": this build has no zlib",
                                text);
        spec.compressor = SL_COMPRESSOR_GZIP;
    } else if (field_is(f[0], l[0], "blosc")) {
        SL_TRY(spec_parse_blosc(text, f, l, n, &spec, err));
    } else {
        return sl_error_set(err, SL_EPARSE, NULL,
                            "codec \"%s\": expected none, zstd:LEVEL, gzip:LEVEL or "
                            "blosc:CNAME:CLEVEL[:SHUFFLE], optionally followed by ,crc32c",
                            text);
    }
    *out = spec;
    return SL_OK;
}

sl_status
sl_codec_spec_parse(const char *text, struct sl_codec_spec *out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (text == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "codec text is missing");
    const char *comma = strchr(text, ',');
    size_t head = comma != NULL ? (size_t)(comma - text) : strlen(text);
    char first[64];
    if (head >= sizeof(first))
        return sl_error_set(err, SL_EPARSE, NULL, "codec \"%.80s\": the compressor is too long",
                            text);
    memcpy(first, text, head);
    first[head] = '\0';
    struct sl_codec_spec spec = SL_CODEC_SPEC_DEFAULT;
    if (strcmp(first, "crc32c") == 0 && comma == NULL) {
        spec.compressor = SL_COMPRESSOR_NONE;
        spec.level = 0;
        spec.crc32c = true;
        *out = spec;
        return SL_OK;
    }
    SL_TRY(spec_parse_compressor(first, &spec, err));
    if (comma != NULL) {
        if (strcmp(comma + 1, "crc32c") != 0)
            return sl_error_set(err, SL_EPARSE, NULL,
                                "codec \"%s\": after the compressor only \",crc32c\" may follow, "
                                "found \"%s\"",
                                text, comma + 1);
        spec.crc32c = true;
    }
    *out = spec;
    return SL_OK;
}

size_t
sl_codec_spec_format(const struct sl_codec_spec *spec, char *buf, size_t size)
{
    static const char *const shuffles[] = {"noshuffle", "shuffle", "bitshuffle"};
    int n;
    switch (spec->compressor) {
    case SL_COMPRESSOR_ZSTD:
        n = snprintf(buf, size, "zstd:%d", spec->level);
        break;
    case SL_COMPRESSOR_GZIP:
        n = snprintf(buf, size, "gzip:%d", spec->level);
        break;
    case SL_COMPRESSOR_BLOSC:
        n = snprintf(buf, size, "blosc:%s:%d:%s", spec->blosc_cname, spec->level,
                     shuffles[(unsigned)spec->blosc_shuffle <= 2 ? spec->blosc_shuffle : 1]);
        break;
    default:
        n = spec->crc32c ? 0 : snprintf(buf, size, "none");
        break;
    }
    if (spec->crc32c) {
        size_t at = n > 0 ? (size_t)n : 0;
        int m = snprintf(at < size ? buf + at : NULL, at < size ? size - at : 0, "%scrc32c",
                         at > 0 ? "," : "");
        n = m > 0 ? (int)at + m : n;
    }
    return n > 0 ? (size_t)n : 0;
}

bool
sl_codec_available(const char *name)
{
    if (name == NULL)
        return false;
    if (strcmp(name, "sharding_indexed") == 0)
        return true;
    for (int id = 0; id < SL__CODEC_COUNT_; id++)
        if (strcmp(name, sl__codec_name((sl__codec_id)id)) == 0)
            return sl__codec_built((sl__codec_id)id);
    return false;
}
