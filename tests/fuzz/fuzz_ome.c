/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: OME-Zarr multiscales (io/zarr/ome.c,
 * sl_ome_multiscale_parse) read from a group's attributes.  The input is
 * the attributes' JSON text (a NUL ends it early).  Every image index the
 * attributes claim is read: each is either refused with a status and a
 * message (a JSON pointer for malformed fields), or read with 1 to
 * SL_MAX_RANK axes, each named, 1 to SL_OME_MAX_LEVELS levels, each with a
 * non-empty path that is a valid key, every string NUL-terminated inside
 * its field.  An index past the count is SL_ENOTFOUND.
 */
#include <stdbool.h>

#include <sluice/ome.h>

#include "fuzz.h"

/* Whether `path` stays inside the group: relative, no "." or ".."
 * component, no empty one. */
static bool
inside(const char *path)
{
    if (path[0] == '/')
        return false;
    for (const char *p = path;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash != NULL ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (slash == NULL)
            return true;
        p = slash + 1;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct sl_ome_multiscale *m = malloc(sizeof(*m));
    uint32_t n = 0;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = m != NULL ? sl_ome_multiscale_parse(text, "zarr.json", 0, m, &n, &err) : SL_OK;
    for (uint32_t i = 0; m != NULL && i <= n && i < 8; i++) {
        if (i > 0) {
            err = SL_ERROR_INIT;
            st = sl_ome_multiscale_parse(text, "zarr.json", i, m, NULL, &err);
        }
        if (st != SL_OK) {
            FUZZ_CHECK(err.code == st && err.text[0] != '\0', "refusal %s without a message",
                       sl_status_name(st));
            FUZZ_CHECK(i < n || st != SL_OK, "index %u of %u", i, n);
            continue;
        }
        FUZZ_CHECK(i < n, "image %u read past the count %u", i, n);
        FUZZ_CHECK(m->rank >= 1 && m->rank <= SL_MAX_RANK, "rank %u", m->rank);
        FUZZ_CHECK(m->n_levels >= 1 && m->n_levels <= SL_OME_MAX_LEVELS, "%u levels", m->n_levels);
        FUZZ_CHECK(memchr(m->version, '\0', sizeof(m->version)) != NULL, "version");
        FUZZ_CHECK(memchr(m->name, '\0', sizeof(m->name)) != NULL, "name");
        FUZZ_CHECK(memchr(m->type, '\0', sizeof(m->type)) != NULL, "type");
        for (uint32_t d = 0; d < m->rank; d++) {
            const struct sl_ome_axis *a = &m->axes[d];
            FUZZ_CHECK(memchr(a->name, '\0', sizeof(a->name)) != NULL &&
                           memchr(a->type, '\0', sizeof(a->type)) != NULL &&
                           memchr(a->unit, '\0', sizeof(a->unit)) != NULL,
                       "axis %u strings", d);
        }
        for (uint32_t k = 0; k < m->n_levels; k++) {
            const struct sl_ome_level *l = &m->levels[k];
            size_t len = strnlen(l->path, sizeof(l->path));
            FUZZ_CHECK(len >= 1 && len < sizeof(l->path), "level %u path of %zu bytes", k, len);
            FUZZ_CHECK(inside(l->path), "level %u path \"%s\" leaves the group", k, l->path);
        }
    }
    if (n == 0 && st != SL_OK)
        FUZZ_CHECK(err.text[0] != '\0', "refusal without a message");
    free(m);
    free(text);
    return 0;
}
