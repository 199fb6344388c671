/* SPDX-License-Identifier: MIT */
/*
 * Making room for a new Zarr node written in place, where a store cannot
 * write a node beside the old one and rename it over (object stores: S3
 * has no rename of a prefix).  Nothing there is room; an old Zarr node is
 * room only when the writer may overwrite it, and is then deleted key by
 * key; objects that are no Zarr node are never deleted, since sluice cannot
 * tell what they are.
 */
#include <string.h>

#include "zarr_internal.h"

/* Count the first key listed, then stop. */
static sl_status
room_first_key(void *arg, const char *key, uint64_t bytes)
{
    (void)key, (void)bytes;
    *(bool *)arg = true;
    return SL_ECANCELED;
}

sl_status
sl_zarr_make_room(sl_store *store, const char *path, bool overwrite, bool clear, bool *existed,
                  struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    sl_zarr_kind kind = SL_ZARR_NONE;
    int format = 0;
    if (existed != NULL)
        *existed = false;
    SL_TRY(sl_zarr_probe(store, path, &kind, &format, err));
    if (kind == SL_ZARR_NONE) {
        bool any = false;
        sl_status st = sl_store_list(store, path, room_first_key, &any, err);
        if (st != SL_OK && st != SL_ECANCELED)
            return st;
        if (!any)
            return SL_OK;
        return sl_error_set(err, SL_EEXIST, NULL,
                            "holds objects that are not a Zarr node, and only Zarr nodes are "
                            "replaced: write to another prefix");
    }
    if (existed != NULL)
        *existed = true;
    if (!overwrite)
        return sl_error_set(err, SL_EEXIST, NULL,
                            "already holds a Zarr v%d %s; replacing it needs the overwrite "
                            "option",
                            format, kind == SL_ZARR_GROUP ? "group" : "array");
    return clear ? sl_store_delete_tree(store, path, err) : SL_OK;
}
