/* SPDX-License-Identifier: MIT */
/*
 * Library version.  The macros describe the headers compiled against;
 * sl_version() the library linked, so a program can tell them apart.
 */
#ifndef SL_VERSION_H
#define SL_VERSION_H

#include <sluice/common.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL_VERSION_MAJOR 0
#define SL_VERSION_MINOR 1
#define SL_VERSION_PATCH 0
#define SL_VERSION_STRING "0.1.0"

/** The linked library's version, e.g. "0.1.0".  Thread-safety: any thread. */
SL_API const char *sl_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SL_VERSION_H */
