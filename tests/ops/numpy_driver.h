/* SPDX-License-Identifier: MIT */
/*
 * What the drivers the check_*_numpy.py scripts run (expr_numpy,
 * reduce_numpy, stats_numpy) share: dying with a message, shapes as the
 * scripts write them ("3x4x5", "-" for rank 0), raw little-endian files,
 * views of data stored with some axes reversed, and a clock.  Each driver
 * defines `driver_name`, the prefix of its messages.  A driver's failures
 * are the script's to report, so every helper exits 2 instead of
 * returning an error.
 */
#ifndef SL_NUMPY_DRIVER_H
#define SL_NUMPY_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/view.h>

/* The driver's name, defined by each driver: "expr_numpy: ..." on stderr. */
extern const char driver_name[];

/* Print "<driver_name>: what: err's text" on stderr and exit 2; `err` may be NULL. */
_Noreturn void driver_die(const char *what, const struct sl_error *err);

/* Parse shape `s` into `shape` (SL_MAX_RANK entries); its rank. Dies if malformed. */
uint32_t driver_shape_parse(const char *s, uint64_t *shape);

/* The number of elements of a shape. */
uint64_t driver_shape_count(uint32_t rank, const uint64_t *shape);

/* `n` zeroed bytes (at least one), owned by the caller (free). */
void *driver_calloc(size_t n);

/* The contents of file `path`, which must hold exactly `bytes` bytes; the
 * caller frees them. */
void *driver_file_read(const char *path, size_t bytes);

/* Write `n` bytes of `data` to file `path`, replacing it. */
void driver_file_write(const char *path, const void *data, size_t n);

/* The view of C-order `data` (borrowed) of `dt` and `shape`, with the
 * axes in bitmask `flips` read reversed (negative strides). */
void driver_view_flipped(struct sl_view *v, sl_dtype dt, uint32_t rank, const uint64_t *shape,
                         unsigned flips, void *data);

/* "--repeat N" at argv[1]: N, and *first_arg set past it; else 1 and 1. */
int driver_repeat_opt(int argc, char **argv, int *first_arg);

/* Seconds on the monotonic clock. */
double driver_now_s(void);

#endif /* SL_NUMPY_DRIVER_H */
