/* SPDX-License-Identifier: MIT */
/*
 * Pool options from the environment: the one place that reads SLUICE_*
 * variables, as cheetah reads its rts_options in one place.  Each variable
 * is listed once in `env_opts` with its field and parser.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/checked.h>

#include "runtime_internal.h"

/* Parse a whole decimal number in [min, max]. */
static sl_status
parse_u64(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out,
          struct sl_error *err)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text || text[0] == '-' || *end != '\0' || v < min || v > max)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "%s=\"%.40s\": expected a whole number in [%" PRIu64 ", %" PRIu64 "]",
                            name, text, min, max);
    *out = v;
    return SL_OK;
}

/* Parse a byte size ("64M", "1.5G": sl_size_parse) that fits in size_t. */
static sl_status
parse_bytes(const char *name, const char *text, size_t *out, struct sl_error *err)
{
    struct sl_error size_err = SL_ERROR_INIT;
    uint64_t v;
    if (sl_size_parse(text, &v, &size_err) != SL_OK)
        return sl_error_set(err, SL_EINVAL, NULL, "%s: %s", name, size_err.text);
    if (v > SIZE_MAX)
        return sl_error_set(err, SL_EINVAL, NULL, "%s=\"%.40s\": exceeds %zu bytes", name, text,
                            (size_t)SIZE_MAX);
    *out = (size_t)v;
    return SL_OK;
}

static sl_status
parse_unsigned(const char *name, const char *text, uint64_t min, uint64_t max, unsigned *out,
               struct sl_error *err)
{
    uint64_t v;
    SL_TRY(parse_u64(name, text, min, max, &v, err));
    *out = (unsigned)v;
    return SL_OK;
}

static sl_status
parse_pow2(const char *name, const char *text, uint64_t min, uint64_t max, unsigned *out,
           struct sl_error *err)
{
    uint64_t v;
    SL_TRY(parse_u64(name, text, min, max, &v, err));
    if ((v & (v - 1)) != 0)
        return sl_error_set(err, SL_EINVAL, NULL, "%s=%" PRIu64 ": must be a power of two", name,
                            v);
    *out = (unsigned)v;
    return SL_OK;
}

static sl_status
parse_pin(const char *name, const char *text, sl_pin *out, struct sl_error *err)
{
    static const sl_pin pins[] = {SL_PIN_COMPACT, SL_PIN_SPREAD, SL_PIN_NONE};
    for (size_t i = 0; i < SL_ARRAY_LEN(pins); i++) {
        if (strcmp(text, sl_pin_name(pins[i])) == 0) {
            *out = pins[i];
            return SL_OK;
        }
    }
    return sl_error_set(err, SL_EINVAL, NULL, "%s=\"%.40s\": expected compact, spread or none",
                        name, text);
}

sl_status
sl_pool_opts_from_env(struct sl_pool_opts *opts, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (opts == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "sl_pool_opts_from_env: opts is NULL");
    const char *v;
    if ((v = getenv("SLUICE_THREADS")) != NULL && v[0] != '\0')
        SL_TRY(parse_unsigned("SLUICE_THREADS", v, 0, SL_POOL_MAX_WORKERS, &opts->n_workers, err));
    if ((v = getenv("SLUICE_TOPOLOGY")) != NULL && v[0] != '\0')
        opts->topology = v;
    if ((v = getenv("SLUICE_PIN")) != NULL && v[0] != '\0')
        SL_TRY(parse_pin("SLUICE_PIN", v, &opts->pin, err));
    if ((v = getenv("SLUICE_DEQUE_CAPACITY")) != NULL && v[0] != '\0')
        SL_TRY(parse_pow2("SLUICE_DEQUE_CAPACITY", v, SL_POOL_MIN_DEQUE, SL_POOL_MAX_DEQUE,
                          &opts->deque_capacity, err));
    if ((v = getenv("SLUICE_INJECT_CAPACITY")) != NULL && v[0] != '\0')
        SL_TRY(parse_pow2("SLUICE_INJECT_CAPACITY", v, SL_POOL_MIN_INJECT, SL_POOL_MAX_INJECT,
                          &opts->inject_capacity, err));
    if ((v = getenv("SLUICE_SPIN_ROUNDS")) != NULL && v[0] != '\0')
        SL_TRY(parse_unsigned("SLUICE_SPIN_ROUNDS", v, 0, 1u << 20, &opts->spin_rounds, err));
    if ((v = getenv("SLUICE_BUF_CACHE_BYTES")) != NULL && v[0] != '\0')
        SL_TRY(parse_bytes("SLUICE_BUF_CACHE_BYTES", v, &opts->buf_cache_bytes, err));
    return SL_OK;
}

sl_status
sl__pool_opts_check(const struct sl_pool_opts *o, struct sl_error *err)
{
    if (o->n_workers > SL_POOL_MAX_WORKERS)
        return sl_error_set(err, SL_EINVAL, NULL, "n_workers %u exceeds the limit of %u",
                            o->n_workers, SL_POOL_MAX_WORKERS);
    if (o->deque_capacity < SL_POOL_MIN_DEQUE || o->deque_capacity > SL_POOL_MAX_DEQUE ||
        (o->deque_capacity & (o->deque_capacity - 1)) != 0)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "deque_capacity %u: expected a power of two in [%u, %u]",
                            o->deque_capacity, SL_POOL_MIN_DEQUE, SL_POOL_MAX_DEQUE);
    if (o->inject_capacity < SL_POOL_MIN_INJECT || o->inject_capacity > SL_POOL_MAX_INJECT ||
        (o->inject_capacity & (o->inject_capacity - 1)) != 0)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "inject_capacity %u: expected a power of two in [%u, %u]",
                            o->inject_capacity, SL_POOL_MIN_INJECT, SL_POOL_MAX_INJECT);
    if (o->pin != SL_PIN_COMPACT && o->pin != SL_PIN_SPREAD && o->pin != SL_PIN_NONE)
        return sl_error_set(err, SL_EINVAL, NULL, "unknown pin policy %d", (int)o->pin);
    return SL_OK;
}
