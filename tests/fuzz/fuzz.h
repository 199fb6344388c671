/* SPDX-License-Identifier: MIT */
/*
 * What every fuzz target shares: the libFuzzer entry point, a reader that
 * takes typed values off the front of the input (running dry yields zeros,
 * never a failure), and the checks a target makes beyond "no crash": a
 * failing call must record its status and a message, and round trips must
 * give back what went in.  A broken check prints what broke and aborts, so
 * libFuzzer and the replay driver both report it with the input.
 */
#ifndef SL_FUZZ_H
#define SL_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/error.h>
#include <sluice/status.h>

/* The libFuzzer contract: called once per input; returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Abort with a message when `cond` is false: a finding, not a rejection. */
#define FUZZ_CHECK(cond, ...)                                                             \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: fuzz check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* True when SL_FUZZ_VERBOSE is set: targets then print every refusal, to
 * see what a seed reaches. */
static inline int
fuzz_verbose(void)
{
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("SL_FUZZ_VERBOSE") != NULL;
    return verbose;
}

/* A failed call must say so: its status recorded in `err` with a message. */
static inline void
fuzz_check_error(sl_status st, const struct sl_error *err, const char *what)
{
    if (fuzz_verbose())
        fprintf(stderr, "  %s: %s%s%s\n", what, sl_status_name(st), st != SL_OK ? ": " : "",
                st != SL_OK ? err->text : "");
    if (st == SL_OK)
        return;
    FUZZ_CHECK(err->code == st, "%s returned %s but recorded %s (\"%s\")", what, sl_status_name(st),
               sl_status_name(err->code), err->text);
    FUZZ_CHECK(err->text[0] != '\0', "%s returned %s with no message", what, sl_status_name(st));
}

/* The unread rest of an input, consumed from the front. */
struct fuzz_input {
    const uint8_t *p; /* next byte */
    size_t n;         /* bytes left */
};

static inline uint8_t
fuzz_u8(struct fuzz_input *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

/* A little-endian integer of `bytes` bytes (1..8). */
static inline uint64_t
fuzz_uint(struct fuzz_input *in, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint64_t)fuzz_u8(in) << (8 * i);
    return v;
}

/* A value in [0, n) (n > 0) from one byte, or two when n > 256. */
static inline uint32_t
fuzz_below(struct fuzz_input *in, uint32_t n)
{
    return (uint32_t)(fuzz_uint(in, n > 256 ? 2 : 1) % n);
}

/* The next `want` bytes, or fewer when the input runs out. */
static inline const uint8_t *
fuzz_take(struct fuzz_input *in, size_t want, size_t *got)
{
    const uint8_t *p = in->p;
    *got = want < in->n ? want : in->n;
    in->p += *got;
    in->n -= *got;
    return p;
}

/* A malloc'd, NUL-terminated copy of `n` bytes (the fuzzer's data is not
 * terminated).  Aborts when memory runs out: that is the harness's own. */
static inline char *
fuzz_strndup(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    FUZZ_CHECK(s != NULL, "out of memory copying %zu bytes", n);
    if (n > 0)
        memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

#endif /* SL_FUZZ_H */
