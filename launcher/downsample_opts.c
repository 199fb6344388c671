/* SPDX-License-Identifier: MIT */
/*
 * --factors and --method of downsample and pyramid, and the downsample op
 * they bind to for a source array.
 */
#include <string.h>

#include "downsample_opts.h"
#include "runner.h"

int
downsample_opts_parse(const struct cmd *c, struct downsample_opts *o, int argc, char **argv, int *i)
{
    bool factors = strcmp(argv[*i], "--factors") == 0;
    if (!factors && strcmp(argv[*i], "--method") != 0)
        return 0;
    if (*i + 1 >= argc)
        return cmd_usage_error(c, "%s needs a value", argv[*i]);
    const char *v = argv[++*i];
    if (!factors) {
        o->method = v;
        return 1;
    }
    if (!parse_u64_list(v, o->factors, SL_MAX_RANK, &o->n_factors))
        return cmd_usage_error(c, "--factors: \"%s\" is not a list of positive integers", v);
    return 1;
}

int
downsample_opts_bind(const struct cmd *c, const struct downsample_opts *o, const sl_array *src,
                     struct sl_op *op)
{
    const struct sl_op_desc *d = NULL;
    struct sl_op_args args;
    memset(&args, 0, sizeof(args));
    struct sl_error err = SL_ERROR_INIT;
    if (sl_op_lookup("downsample", &d, &err) != SL_OK ||
        sl_op_args_set_factors(&args, d, "factors", o->n_factors, o->factors, &err) != SL_OK ||
        (o->method != NULL &&
         sl_op_args_set_string(&args, d, "method", o->method, &err) != SL_OK) ||
        sl_op_bind(op, d, &args, sl_array_dtype(src), sl_array_rank(src), &err) != SL_OK)
        return cmd_usage_error(c, "%s", err.text);
    return 0;
}
