/* SPDX-License-Identifier: MIT */
/*
 * The serial fallback of the "parallel for" seam: io calls
 * sl_parallel_run with whatever executor its caller gave it, or none.
 */
#include <sluice/parallel.h>

sl_status
sl_parallel_run(const struct sl_parallel *par, size_t n, sl_parallel_body *body, void *arg)
{
    if (body == NULL)
        return SL_EINVAL;
    if (par != NULL && par->run != NULL)
        return par->run(par->ctx, n, body, arg);
    for (size_t i = 0; i < n; i++)
        body(arg, i, 0);
    return SL_OK;
}

/* A range body run one index at a time, for executors without ranges. */
struct range_one {
    sl_parallel_range_body *body;
    void *arg;
};

static void
range_one_body(void *arg, size_t index, unsigned worker)
{
    const struct range_one *r = arg;
    r->body(r->arg, index, index + 1, worker);
}

sl_status
sl_parallel_run_ranges(const struct sl_parallel *par, size_t n, sl_parallel_range_body *body,
                       void *arg)
{
    if (body == NULL)
        return SL_EINVAL;
    if (par != NULL && par->run_ranges != NULL)
        return par->run_ranges(par->ctx, n, body, arg);
    if (par != NULL && par->run != NULL) {
        struct range_one r = {body, arg};
        return par->run(par->ctx, n, range_one_body, &r);
    }
    if (n > 0)
        body(arg, 0, n, 0);
    return SL_OK;
}

unsigned
sl_parallel_workers(const struct sl_parallel *par)
{
    if (par == NULL || par->run == NULL || par->n_workers == 0)
        return 1;
    return par->n_workers;
}
