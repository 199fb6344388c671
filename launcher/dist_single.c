/* SPDX-License-Identifier: MIT */
/*
 * Runs in one process: the build without the `mpi` feature.  Every put's
 * chunks run here; nothing is exchanged.
 */
#include "dist.h"

void
dist_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
}

void
dist_finish(int rc)
{
    (void)rc;
}

int
dist_rank(void)
{
    return 0;
}

int
dist_size(void)
{
    return 1;
}

void
dist_plan_opts(struct sl_plan_opts *o, sl_progress_fn *show, void *show_ctx)
{
    o->progress = show;
    o->progress_ctx = show_ctx;
}

void
dist_set_plan(sl_plan *plan)
{
    (void)plan;
}

sl_status
dist_gather(sl_plan *plan, sl_status local_status)
{
    (void)plan;
    return local_status;
}

sl_array *
dist_create_array(sl_store *store, const char *path, const struct sl_array_spec *spec,
                  struct sl_error *err)
{
    return sl_array_create(store, path, spec, NULL, err);
}

sl_status
dist_share(sl_status status, struct sl_error *err)
{
    (void)err;
    return status;
}

void
dist_share_text(char *buf, size_t size)
{
    (void)buf;
    (void)size;
}

int
dist_exit_status(int rc)
{
    return rc;
}

int
dist_worst(int rc)
{
    return rc;
}

bool
dist_share_flag(bool flag)
{
    return flag;
}
