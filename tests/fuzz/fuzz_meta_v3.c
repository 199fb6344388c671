/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: Zarr v3 zarr.json of arrays and groups.  The input is the
 * document.  Beyond "no crash": a refusal records its status and a message;
 * parsed metadata satisfies sluice's caps, has a valid codec chain and chunk
 * keys that parse back; and writing it out and reading that back gives the
 * same array.
 */
#include <jansson.h>

#include "fuzz.h"
#include "fuzz_meta_check.h"
#include "zarr_internal.h"

/* Write `m` as zarr.json, read it back, compare. */
static void
round_trip(const struct sl__meta *m)
{
    struct sl_buf doc = SL_BUF_INIT;
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl__meta_write_v3(m, &doc, &err);
    fuzz_check_error(st, &err, "sl__meta_write_v3");
    FUZZ_CHECK(st == SL_OK, "parsed metadata cannot be written: %s", err.text);
    struct sl__meta back;
    sl__meta_init(&back, NULL);
    err = SL_ERROR_INIT;
    st = sl__meta_parse_v3((const char *)doc.data, doc.size, "written", &back, &err);
    FUZZ_CHECK(st == SL_OK, "written zarr.json does not parse: %s\n%.*s", err.text, (int)doc.size,
               (const char *)doc.data);
    fuzz_meta_check_same(m, &back);
    sl__meta_fini(&back);
    sl_buf_fini(&doc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl__meta m;
    sl__meta_init(&m, NULL);
    struct sl_error err = SL_ERROR_INIT;
    sl_status st = sl__meta_parse_v3((const char *)data, size, "zarr.json", &m, &err);
    fuzz_check_error(st, &err, "sl__meta_parse_v3");
    if (st == SL_OK) {
        fuzz_meta_check_parsed(&m);
        round_trip(&m);
    }
    sl__meta_fini(&m);

    struct sl_buf attrs = SL_BUF_INIT;
    err = SL_ERROR_INIT;
    st = sl__group_parse_v3((const char *)data, size, "zarr.json", &attrs, &err);
    fuzz_check_error(st, &err, "sl__group_parse_v3");
    if (st == SL_OK) {
        json_t *obj = json_loadb((const char *)attrs.data, attrs.size, 0, NULL);
        FUZZ_CHECK(json_is_object(obj), "group attributes are not an object: %.*s", (int)attrs.size,
                   (const char *)attrs.data);
        json_decref(obj);
    }
    sl_buf_fini(&attrs);
    return 0;
}
