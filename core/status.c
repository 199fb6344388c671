/* SPDX-License-Identifier: MIT */
/*
 * Names and messages of status codes, generated from SL_STATUS_MAP.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

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
sl_status_transient(sl_status code)
{
    return code == SL_EIO || code == SL_ETIMEDOUT || code == SL_ENETWORK;
}

double
sl__retry_delay_s(unsigned attempt, double first_s, double cap_s)
{
    double d = first_s;
    for (unsigned k = 1; k < attempt && d < cap_s; k++)
        d *= 2;
    if (d > cap_s)
        d = cap_s;
    /* Jitter: somewhere in [d/2, d], so writers that failed together do
     * not all come back together.  A per-thread xorshift: no lock. */
    static _Thread_local uint64_t state;
    if (state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        state = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)(uintptr_t)&state ^ 0x9e3779b97f4a7c15u;
    }
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return d * (0.5 + 0.5 * (double)(state >> 11) / (double)(UINT64_C(1) << 53));
}

void
sl__retry_sleep(unsigned attempt, double first_s, double cap_s)
{
    double d = sl__retry_delay_s(attempt, first_s, cap_s);
    struct timespec ts = {.tv_sec = (time_t)d, .tv_nsec = (long)((d - (double)(time_t)d) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
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
