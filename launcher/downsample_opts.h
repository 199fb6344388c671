/* SPDX-License-Identifier: MIT */
/*
 * Options that say how to downsample (--factors, --method), shared by
 * `sluice downsample` and `sluice pyramid`, and the op they bind to.
 */
#ifndef SL_LAUNCHER_DOWNSAMPLE_OPTS_H
#define SL_LAUNCHER_DOWNSAMPLE_OPTS_H

#include <stdint.h>

#include <sluice.h>

#include "commands.h"

/* Downsampling options. */
struct downsample_opts {
    uint32_t n_factors;            /* entries in factors; 0: not given */
    uint64_t factors[SL_MAX_RANK]; /* --factors F1,F2,... */
    const char *method;            /* --method M; NULL: mean */
};

#define DOWNSAMPLE_OPTS_HELP                                         \
    "  --factors F1,F2,...  factor per dimension, >= 1 (required)\n" \
    "  --method M           mean (default), stride, min, max, median or mode\n"

/*
 * Consume --factors or --method at argv[*i] (and its value).
 * @return 1 consumed, 0 not one of these, 2 after a usage error.
 */
int downsample_opts_parse(const struct cmd *c, struct downsample_opts *o, int argc, char **argv,
                          int *i);

/*
 * Bind the downsample op for `src`'s dtype and rank.  @return 0, or 2 after
 * a usage error naming what does not fit (factor count, method, dtype).
 */
int downsample_opts_bind(const struct cmd *c, const struct downsample_opts *o, const sl_array *src,
                         struct sl_op *op);

#endif /* SL_LAUNCHER_DOWNSAMPLE_OPTS_H */
