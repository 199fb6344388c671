/* SPDX-License-Identifier: MIT */
/* The linked library's version string. */
#include <sluice/version.h>

const char *
sl_version(void)
{
    return SL_VERSION_STRING;
}
