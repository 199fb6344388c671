/* SPDX-License-Identifier: MIT */
/*
 * The status map of a run (--status-map FILE.png): every put's chunk grid
 * as a picture, each chunk in its outcome's colour, with a legend.
 */
#ifndef SL_LAUNCHER_STATUS_MAP_H
#define SL_LAUNCHER_STATUS_MAP_H

#include <sluice.h>

/* Write the status map of `plan` (after its run) to PNG file `path` and
 * print each panel's geometry on stderr.  0, or 1 after a message. */
int status_map_write(const sl_plan *plan, const char *path);

#endif /* SL_LAUNCHER_STATUS_MAP_H */
