/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the pyramid builder: the layout it derives from
 * the input and the options before it touches the store or the graph, and
 * the OME-Zarr metadata written from that layout and, after a run, from
 * the channels' statistics.  Shared by pyramid.c, pyramid_ome.c,
 * pyramid_omero.c and the graph tests.
 */
#ifndef SL_PYRAMID_INTERNAL_H
#define SL_PYRAMID_INTERNAL_H

#include <stdint.h>

#include <sluice/op_registry.h>
#include <sluice/ops.h>
#include <sluice/pyramid.h>

/* Everything about the levels, checked; built by sl__pyramid_layout. */
struct sl__pyramid_layout {
    uint32_t rank;                                          /* 2..5 */
    uint32_t n_levels;                                      /* 1..SL_PYRAMID_MAX_LEVELS */
    int zarr_format;                                        /* 3 (OME-Zarr 0.5) or 2 (0.4) */
    struct sl_op op;                                        /* the bound downsample */
    bool smooth;                                            /* a Gaussian before each reduction */
    struct sl_op smooth_op;                                 /* with smooth: the bound Gaussian */
    struct sl_pyramid_axis axes[SL_MAX_RANK];               /* resolved; strings borrowed */
    uint64_t shape[SL_PYRAMID_MAX_LEVELS][SL_MAX_RANK];     /* per level */
    uint64_t chunk[SL_PYRAMID_MAX_LEVELS][SL_MAX_RANK];     /* (inner) chunk shape per level */
    uint64_t shard[SL_PYRAMID_MAX_LEVELS][SL_MAX_RANK];     /* shard shape, all 0 if unsharded */
    double scale[SL_PYRAMID_MAX_LEVELS][SL_MAX_RANK];       /* OME scale per level */
    double translation[SL_PYRAMID_MAX_LEVELS][SL_MAX_RANK]; /* OME translation per level */
    uint32_t channel_axis; /* the axis of type "channel", or UINT32_MAX when none */
};

/*
 * Derive and check the layout of a pyramid of an image of `dtype`, `rank`
 * and `shape` whose chunks are `in_chunk` (NULL when irregular) under
 * `opts`.  Pure: touches no store and no graph.
 * @return SL_OK, SL_EINVAL or SL_EUNSUPPORTED naming the option and values.
 */
sl_status sl__pyramid_layout(struct sl__pyramid_layout *l, sl_dtype dtype, uint32_t rank,
                             const uint64_t *shape, const uint64_t *in_chunk,
                             const struct sl_pyramid_opts *opts, struct sl_error *err);

/*
 * The group attributes of layout `l` as compact JSON text: {"ome": {...}}
 * for OME-Zarr 0.5, {"multiscales": [...]} for 0.4, beside the keys of
 * `base` (an existing group's attributes the levels are written into, or
 * NULL), then those of `user` (the source's, or NULL) that `base` lacks,
 * but those the OME metadata owns ("ome", "multiscales",
 * "_ARRAY_DIMENSIONS"; of `base`'s "ome" object only "version" and
 * "multiscales" are replaced).  `name` may be NULL.
 * @return SL_OK with the text in `*out` (release with free()); SL_ENOMEM;
 * SL_EINVAL when `user` or `base` is not a JSON object.
 */
sl_status sl__pyramid_ome_json(const struct sl__pyramid_layout *l, const char *name,
                               const char *user, const char *base, char **out,
                               struct sl_error *err);

/* One channel's OME "omero" window. */
struct sl__omero_window {
    double min, max;   /* the channel's smallest and largest value */
    double start, end; /* the window shown: the two percentiles */
};

/*
 * Group attributes `attrs` (JSON object text) with an "omero" block of
 * `n` channels (`w`, n >= 1) in place of any older one: inside "ome" for
 * Zarr v3 (`zarr_format` 3, OME-Zarr 0.5), at the top for v2 (0.4).
 * @return SL_OK with compact JSON text in `*out` (release with free());
 * SL_EPARSE (`attrs` is no JSON object, or v3 without an "ome" object);
 * SL_EINVAL (a window value that is not finite, naming the channel);
 * SL_ENOMEM.
 */
sl_status sl__pyramid_omero_json(const char *attrs, int zarr_format,
                                 const struct sl__omero_window *w, uint64_t n, char **out,
                                 struct sl_error *err);

#endif /* SL_PYRAMID_INTERNAL_H */
