/* SPDX-License-Identifier: MIT */
/*
 * OME-Zarr multiscale images read from a group's attributes: the
 * "multiscales" list of OME-Zarr 0.4 (at the top of the attributes) or
 * 0.5 (inside "ome"), its axes and its levels with their scales, so a
 * program can describe an image pyramid or pick a level without parsing
 * JSON itself.
 */
#ifndef SL_OME_H
#define SL_OME_H

#include <stdint.h>

#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/status.h>
#include <sluice/store.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Levels kept of one multiscale image (a longer list is refused). */
#define SL_OME_MAX_LEVELS 64

/* One axis: name, type ("space", "time", "channel" or another) and unit
 * ("" when absent).  Longer strings are refused, not cut. */
struct sl_ome_axis {
    char name[64];
    char type[32];
    char unit[64];
};

/* One level (a "dataset"): its array's path relative to the group, and
 * the scale and translation of its coordinate transformations (1 and 0
 * where the metadata gives none). */
struct sl_ome_level {
    char path[256];
    double scale[SL_MAX_RANK];
    double translation[SL_MAX_RANK];
};

/* One multiscale image of a group. */
struct sl_ome_multiscale {
    char version[16]; /* "0.4", "0.5" ... ("" when the metadata gives none) */
    char name[128];   /* "" when absent */
    char type[64];    /* how levels were made, e.g. "mean" ("" when absent) */
    uint32_t rank;    /* number of axes */
    struct sl_ome_axis axes[SL_MAX_RANK];
    uint32_t n_levels; /* highest resolution first, as stored */
    struct sl_ome_level levels[SL_OME_MAX_LEVELS];
};

/**
 * Read multiscale image `index` of the group at `path` into `out`, and the
 * number of images the group describes into `*n_images` (may be NULL).  A
 * group with no "multiscales" gives SL_ENOTFOUND with *n_images 0.
 * @return SL_OK; SL_ENOTFOUND (no such image, or nothing at `path`);
 * SL_EINVAL (an array at `path`, or arguments missing); SL_EPARSE for
 * metadata that is not OME-Zarr as the specification writes it (the
 * attributes' key in the source, a JSON pointer to the bad entry);
 * SL_EUNSUPPORTED for a rank above SL_MAX_RANK or more than
 * SL_OME_MAX_LEVELS levels; a store error.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_ome_multiscale_read(sl_store *store, const char *path,
                                                     uint32_t index, struct sl_ome_multiscale *out,
                                                     uint32_t *n_images, struct sl_error *err);

/**
 * sl_ome_multiscale_read on attributes already read: `attributes_json`, a
 * JSON object as sl_group_attributes gives it; `source` names it in
 * errors (NULL: "attributes").
 * @return SL_OK; SL_ENOTFOUND (no such image); SL_EINVAL (arguments
 * missing); SL_EPARSE (not JSON, or not OME-Zarr as written); SL_EUNSUPPORTED
 * (too many axes or levels): as sl_ome_multiscale_read, without the
 * store's errors.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_ome_multiscale_parse(const char *attributes_json,
                                                      const char *source, uint32_t index,
                                                      struct sl_ome_multiscale *out,
                                                      uint32_t *n_images, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_OME_H */
