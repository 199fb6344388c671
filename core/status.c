/* SPDX-License-Identifier: MIT */
/*
 * Names and messages of status codes, generated from SL_STATUS_MAP.
 */
#include <string.h>

#include <sluice/error.h>
#include <sluice/status.h>

#include "core_internal.h"

static const char *const status_names[SL_STATUS_COUNT_] = {
#define SL_STATUS_NAME_(name, msg) [SL_##name] = #name,
    SL_STATUS_MAP(SL_STATUS_NAME_)
#undef SL_STATUS_NAME_
};

static const char *const status_messages[SL_STATUS_COUNT_] = {
#define SL_STATUS_MSG_(name, msg) [SL_##name] = msg,
    SL_STATUS_MAP(SL_STATUS_MSG_)
#undef SL_STATUS_MSG_
};

const char *
sl_status_name(sl_status code)
{
    if ((unsigned)code >= SL_STATUS_COUNT_)
        return "EUNKNOWN";
    return status_names[code];
}

const char *
sl_status_message(sl_status code)
{
    if ((unsigned)code >= SL_STATUS_COUNT_)
        return "unknown status";
    return status_messages[code];
}

bool
sl__status_find(const char *name, sl_status *out)
{
    if (strncmp(name, "SL_", 3) == 0)
        name += 3;
    for (unsigned i = 0; i < SL_STATUS_COUNT_; i++) {
        if (strcmp(name, status_names[i]) == 0) {
            *out = (sl_status)i;
            return true;
        }
    }
    return false;
}
