/* SPDX-License-Identifier: MIT */
/*
 * Status codes.  One list yields the enum, the names and the messages, so the
 * three cannot disagree.  Codes are only ever appended: their values are part
 * of the ABI and of the JSON reports the launcher writes.
 */
#ifndef SL_STATUS_H
#define SL_STATUS_H

#include <stdbool.h>

#include <sluice/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* clang-format off */
#define SL_STATUS_MAP(X)                                          \
    X(OK,           "success")                                    \
    X(ENOMEM,       "out of memory")                              \
    X(EINVAL,       "invalid argument")                           \
    X(EPARSE,       "malformed input")                            \
    X(ECORRUPT,     "stored data failed validation")              \
    X(ENOTFOUND,    "key or chunk not found")                     \
    X(EIO,          "storage i/o error")                          \
    X(ECANCELED,    "operation canceled")                         \
    X(EOVERFLOW,    "size or count overflows")                    \
    X(EUNSUPPORTED, "feature not supported")                      \
    X(EEXIST,       "already exists")                             \
    X(ENOSPC,       "no space left on storage")                   \
    X(EACCES,       "path or key refused")                        \
    X(EFUNC,        "user or kernel function failed")             \
    X(EUPSTREAM,    "an input chunk failed upstream")             \
    X(EBUDGET,      "memory budget too small")                    \
    X(ESTATE,       "operation not valid in this state")          \
    X(EBOUNDS,      "selection outside the array")                \
    X(EREMOTE,      "another process of the run failed")          \
    X(ESKIPPED,     "left to another process of the run")         \
    X(ENETWORK,     "network transfer failed")                    \
    X(ETIMEDOUT,    "remote request timed out")                   \
    X(EHTTP,        "server answered with an error")             \
    X(ECONFLICT,    "changed by another writer")                  \
    X(EABSENT,      "chunk absent: the fill value stands for it")
/* clang-format on */

typedef enum sl_status {
#define SL_STATUS_ENUM_(name, msg) SL_##name,
    SL_STATUS_MAP(SL_STATUS_ENUM_) /* SL_OK, SL_ENOMEM, ... */
#undef SL_STATUS_ENUM_
    SL_STATUS_COUNT_
} sl_status;

/**
 * The code's name without prefix, e.g. "ECORRUPT"; "EUNKNOWN" for a value
 * outside the list.  Never NULL; the string is static.
 * Thread-safety: any thread.
 */
SL_API const char *sl_status_name(sl_status code);

/**
 * A short English message for the code, e.g. "stored data failed
 * validation"; "unknown status" for a value outside the list.  Never NULL.
 * Thread-safety: any thread.
 */
SL_API const char *sl_status_message(sl_status code);

/**
 * Whether a failure with `code` may go away when the same operation is
 * tried again: SL_EIO, SL_ETIMEDOUT and SL_ENETWORK.  Never corrupt or
 * malformed data, usage errors, absent objects, or SL_EHTTP (a server's
 * final answer: the HTTP engine already retried its 5xx answers).
 * Thread-safety: any thread.
 */
SL_API bool sl_status_transient(sl_status code);

/* Defined in <sluice/error.h>, which includes this header. */
struct sl_error;

/**
 * Parse a name as printed by sl_status_name ("ECORRUPT" or "SL_ECORRUPT").
 * @return SL_OK and the code in `*out`, or SL_EINVAL when the name is
 * unknown (naming it) or an argument is NULL.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_status_from_name(const char *name, sl_status *out,
                                                  struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_STATUS_H */
