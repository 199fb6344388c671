/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: key and path validation.  The input is a key (NUL bytes
 * included).  sl__key_check and sl__key_prefix_check must agree with an
 * independent statement of the rules (README: empty keys, absolute paths,
 * empty, "." or ".." components, backslashes, NUL bytes, components over
 * 255 bytes, keys over 1024 bytes and ".sluice-tmp." names are refused),
 * so an accepted key never names a path outside the store; array paths go
 * through the same rules; and a string that parses as a chunk key of some
 * array must be exactly the key that array writes for those coordinates, so
 * no two stored objects count as the same chunk.
 */
#include <sluice/array.h>

#include "fuzz.h"
#include "store_internal.h"
#include "zarr_internal.h"

/* The rules, written from the documentation rather than from store.c. */
static bool
oracle_accepts(const uint8_t *key, size_t len, bool prefix)
{
    if (len == 0)
        return prefix;
    if (len > 1024 || key[0] == '/' || memchr(key, '\0', len) != NULL ||
        memchr(key, '\\', len) != NULL)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && key[i] != '/')
            continue;
        const uint8_t *c = key + start;
        size_t n = i - start;
        start = i + 1;
        if (n == 0 && !(prefix && i == len))
            return false;
        if (n > 255 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        if (n >= 12 && memcmp(c, ".sluice-tmp.", 12) == 0)
            return false;
    }
    return true;
}

static void
check_store_keys(const uint8_t *data, size_t size)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl__key_check((const char *)data, size, &err);
    fuzz_check_error(st, &err, "sl__key_check");
    FUZZ_CHECK(st == SL_OK || st == SL_EACCES, "status %s", sl_status_name(st));
    FUZZ_CHECK((st == SL_OK) == oracle_accepts(data, size, false), "key of %zu bytes %s", size,
               st == SL_OK ? "accepted against the rules" : "refused against the rules");

    /* Prefixes and array paths are C strings: up to the first NUL. */
    char *s = fuzz_strndup(data, size);
    size_t len = strlen(s);
    err = SL_ERROR_INIT;
    st = sl__key_prefix_check(s, &err);
    fuzz_check_error(st, &err, "sl__key_prefix_check");
    FUZZ_CHECK((st == SL_OK) == oracle_accepts((const uint8_t *)s, len, true), "prefix \"%s\" %s",
               s, st == SL_OK ? "accepted wrongly" : "refused wrongly");

    sl_store *store = sl_store_create_memory(NULL, NULL);
    FUZZ_CHECK(store != NULL, "no memory store");
    err = SL_ERROR_INIT;
    sl_array *a = sl_array_open(store, s, NULL, &err);
    FUZZ_CHECK(a == NULL, "an array opened in an empty store");
    FUZZ_CHECK(err.code != SL_OK && err.text[0] != '\0', "refusal without a message");
    /* A valid path short enough for "/zarr.json" after it finds nothing. */
    bool path_ok = len == 0 || oracle_accepts((const uint8_t *)s, len, false);
    if (!path_ok)
        FUZZ_CHECK(err.code == SL_EACCES || err.code == SL_EINVAL, "array path \"%s\": %s", s,
                   sl_status_name(err.code));
    else if (len <= SL_STORE_KEY_MAX - 16)
        FUZZ_CHECK(err.code == SL_ENOTFOUND, "array path \"%s\": %s (%s)", s,
                   sl_status_name(err.code), err.text);
    sl_store_unref(store);
    free(s);
}

/* Parse the key as a chunk key of arrays of rank 0..3 in each encoding. */
static void
check_chunk_keys(const uint8_t *data, size_t size)
{
    char *s = fuzz_strndup(data, size);
    for (uint32_t rank = 0; rank <= 3; rank++) {
        for (int enc = 0; enc < 4; enc++) {
            struct sl__meta m;
            sl__meta_init(&m, NULL);
            m.rank = rank;
            m.keys = enc < 2 ? SL__KEYS_DEFAULT : SL__KEYS_V2;
            m.sep = enc % 2 == 0 ? '/' : '.';
            uint64_t coords[SL_MAX_RANK];
            if (sl__meta_parse_chunk_key(&m, s, coords)) {
                char again[SL_STORE_KEY_MAX + 64];
                sl__meta_chunk_key(&m, coords, again, sizeof(again));
                FUZZ_CHECK(strcmp(again, s) == 0,
                           "\"%s\" parses as the chunk key \"%s\" (rank %u, encoding %d)", s, again,
                           rank, enc);
            }
            sl__meta_fini(&m);
        }
    }
    free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_store_keys(data, size);
    check_chunk_keys(data, size);
    return 0;
}
