/* SPDX-License-Identifier: MIT */
/*
 * Fill-value parsing, implemented in io/zarr/fill.c: the one part of io's
 * internals that graph/ uses (graph files spell fill values as zarr.json
 * does).  It sits at the top of io/, the only io include path graph/ is
 * given, so graph/ cannot reach the sub-libraries' headers.
 */
#ifndef SL_IO_FILL_H
#define SL_IO_FILL_H

#include <stdbool.h>
#include <stdint.h>

#include <sluice/dtype.h>
#include <sluice/error.h>

typedef struct json_t json_t;

/* Parse fill value `v` of a `zarr_format` array of `dt` into native bytes;
 * `*is_null` reports a v2 null.  @return SL_OK or SL_EPARSE at `path`. */
sl_status sl__fill_parse(const json_t *v, sl_dtype dt, int zarr_format, uint8_t out[16],
                         bool *is_null, const char *path, struct sl_error *err);

#endif /* SL_IO_FILL_H */
