/* SPDX-License-Identifier: MIT */
/*
 * Multiscale pyramids: one graph call that writes N resolution levels of an
 * image into a Zarr group with OME-Zarr `multiscales` metadata (version 0.5
 * in a Zarr v3 group, 0.4 in a v2 group).  Level 0 is the input itself, stored
 * as asked (rechunked, resharded, recompressed); level k + 1 is level k read
 * back from storage and downsampled by the factors, so every level is
 * computed chunk by chunk from stored chunks, in the memory budget of the
 * run.  graph/README.md ("Pyramids") gives the metadata in full and the
 * coordinate convention.
 */
#ifndef SL_PYRAMID_H
#define SL_PYRAMID_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <sluice/array.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/graph.h>
#include <sluice/ops.h>
#include <sluice/plan.h>
#include <sluice/status.h>
#include <sluice/store.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most levels a pyramid may have (a factor of 2 halves a 2^64 extent
 * to 1 in 64 steps). */
#define SL_PYRAMID_MAX_LEVELS 64

/* The default percentiles of the OME "omero" window's start and end. */
#define SL_PYRAMID_OMERO_START 0.1
#define SL_PYRAMID_OMERO_END 99.9

/* One OME-Zarr axis.  NULL fields take the defaults sl_graph_add_pyramid
 * documents. */
struct sl_pyramid_axis {
    const char *name; /* unique, e.g. "x"; copied into the metadata */
    const char *type; /* "time", "channel", "space" or a custom type */
    const char *unit; /* e.g. "micrometer", "second"; NULL: none written */
};

/* What to build. */
/* How a level is smoothed before it is reduced to the next. */
typedef enum sl_pyramid_smooth {
    SL_PYRAMID_SMOOTH_NONE,    /* reduce level k as it is */
    SL_PYRAMID_SMOOTH_GAUSSIAN /* a Gaussian first, so the next level does not alias: per
                                  dimension of factor f, sigma = sqrt((f^2 - 1) / (8 ln 2))
                                  pixels (0 for f = 1: the axis is left alone), truncate 4,
                                  boundary "nearest" (ngff-zarr's choice, after ITK); the
                                  Gaussian and the reduction run in one pass over level k */
} sl_pyramid_smooth;

struct sl_pyramid_opts {
    uint32_t n_levels;            /* levels "0" .. n_levels - 1, >= 1 */
    uint64_t factor[SL_MAX_RANK]; /* per dimension, from one level to the next, >= 1 */
    sl_downsample_method method;  /* how a block of level k becomes a pixel of level k + 1 */
    sl_pyramid_smooth smooth;     /* smoothing before each reduction; with a Gaussian, method
                                     stride samples the smoothed level as ngff-zarr and
                                     scikit-image's pyramid_reduce do */
    /* How each level is stored: zarr_format (3: OME-Zarr 0.5, 2: 0.4),
     * chunk_shape (all zero: the input's chunk shape), shard_shape (all zero:
     * unsharded), codec, checksum, endian, order_f, index_at_start,
     * fill_value, separator and overwrite.  The builder sets rank, shape and
     * dtype per level, sets dimension_names to the axis names and
     * attributes_json to NULL, and clips chunk and shard shapes to each
     * level's shape. */
    struct sl_array_spec level;
    const char *name;                         /* multiscales "name"; NULL: none */
    struct sl_pyramid_axis axes[SL_MAX_RANK]; /* per dimension; see the defaults */
    double scale[SL_MAX_RANK];                /* level 0's pixel size; 0: 1.0 */
    double translation[SL_MAX_RANK];          /* level 0's offset (pixel 0's centre) */
    bool open_existing;           /* open the level arrays another process of the run created
                                     (with the same options) instead of creating them and the
                                     group's metadata: ranks other than 0 of a split run */
    const char *group_attributes; /* a JSON object of user attributes the group
                                     keeps beside its OME metadata (e.g. the
                                     source array's), less the keys that metadata
                                     owns: "ome", "multiscales" and
                                     "_ARRAY_DIMENSIONS"; NULL: none */
    bool into_group;              /* write the levels into the existing group at
                                     `group` (an OME container holding "labels",
                                     say) instead of creating it: its other members
                                     stay, its attributes are kept (beside them
                                     group_attributes' keys it lacks), its OME
                                     metadata gets this image's multiscales (an
                                     older "multiscales" is replaced; v3's other
                                     "ome" keys, such as "omero", stay); the levels
                                     must take its Zarr format.  Its consolidated
                                     metadata is not rewritten: call
                                     sl_group_consolidate after the run */
    bool omero;                   /* also write OME "omero" channel metadata, from a
                                     stats node over the input (see sl_graph_add_pyramid) */
    double omero_percentiles[2];  /* with omero: the percentiles (0 <= lo < hi <= 100) of
                                     each channel's values that become its window's start
                                     and end; SL_PYRAMID_OPTS_DEFAULT sets 0.1 and 99.9 */
};
/* clang-format off */
/**
 * SL_PYRAMID_OPTS_DEFAULT's value (the defaults) as a function, for C and C++ alike: every
 * field not named below is zero.
 * Thread-safety: any thread.
 */
static inline struct sl_pyramid_opts
sl_pyramid_opts_default(void)
{
    struct sl_pyramid_opts o;
    memset(&o, 0, sizeof o);
    o.n_levels = 1;
    o.method = SL_DOWNSAMPLE_MEAN;
    o.level = SL_ARRAY_SPEC_DEFAULT;
    o.omero_percentiles[0] = SL_PYRAMID_OMERO_START;
    o.omero_percentiles[1] = SL_PYRAMID_OMERO_END;
    return o;
}
#define SL_PYRAMID_OPTS_DEFAULT (sl_pyramid_opts_default())
/* clang-format on */

/**
 * Add the nodes that write a pyramid of `input` into the group `group`
 * ("" for the store's root) of `store`, create that group and its level
 * arrays "0" .. "N-1" (`group`/0, ...), and write the group's OME-Zarr
 * metadata.  Nothing runs until the sealed graph's plan runs; level k + 1
 * then reads level k back after every chunk of it is written (a later
 * phase of the same run), and a chunk of level k that failed makes the
 * chunks of level k + 1 that read it fail as upstream.
 *
 * Level shapes follow TensorStore's edge rule: extent ceil(n / f) per
 * level.  A level in which no dimension would shrink any more (every
 * dimension with a factor above 1 is already 1) is refused, as is an input
 * with an empty dimension; N is never clamped silently.
 *
 * Axes (OME-Zarr images have 2 to 5): a NULL name defaults by position to
 * t, c, z, y, x (rank 5), c, z, y, x (4), z, y, x (3) or y, x (2); a NULL
 * type is "time" for a name "t" or "time", "channel" for "c" or
 * "channel", "space" for "x", "y" or "z", and otherwise the type of that
 * position in the default axes.  The axes must follow OME-Zarr's rules:
 * 2 or 3 of type "space", at most one "time", first, at most one other
 * (channel or custom) before the space axes, unique names.
 *
 * Coordinates: level k has scale s0 · F_k (F_k the product of the first k
 * factors) and translation t_k, where t_{k+1} = t_k + (f − 1)/2 · s_k for
 * every method but stride (the centre of a block of f pixels) and t_{k+1}
 * = t_k for stride (a block's first pixel).
 *
 * OME "omero" metadata (opts->omero): the pyramid adds a stats node
 * "<name>.omero" over `input`, with one set per index of the channel axis
 * (the axis of type "channel"; without one, a single channel over the
 * whole image) and the two percentiles of opts->omero_percentiles.  It
 * shares the read of each input chunk with level 0's put, so the input is
 * read once.  When a run of the plan succeeds, every chunk included, the
 * plan writes the group's metadata again with an "omero" block (0.5:
 * inside "ome"; 0.4: beside "multiscales"): per channel "window" {"min",
 * "max", "start", "end"} = the channel's min, max and the two percentiles
 * (sl_stats_result: exact for integers up to 16 bits, within its
 * rank_error otherwise), "active": true, "coefficient": 1, "family":
 * "linear", "inverted": false, "label" "channel K", "color" "FFFFFF" for
 * one channel, else red, green, blue, magenta, cyan, yellow in turn; and
 * "rdefs" {"model": "greyscale" or "color"}.  A run that failed or left
 * a chunk out writes no omero block; sl_plan_pyramid_omero says why.
 *
 * @param name        prefix of the node names: "<name>.0" is level 0's put,
 *                    "<name>.K.get", "<name>.K.downsample" and "<name>.K"
 *                    level K's nodes; at most 48 characters.
 * @param input       the full-resolution image; its chunk grid must be
 *                    regular unless opts->level.chunk_shape is given.
 * @param store       retained by the level arrays, which the graph retains.
 * @param level_puts  receives the put node of each level (n_levels
 *                    entries), or NULL.
 * @return SL_OK; SL_EINVAL (a bad option, naming it, the dimension and the
 * values: rank outside 2..5, a factor of 0, too many levels, axes against
 * the rules, a non-finite or negative scale, group_attributes not a JSON
 * object, omero percentiles outside 0 <= lo < hi <= 100); SL_EUNSUPPORTED (the method
 * is not defined for the input's dtype, sharding in Zarr v2); SL_EEXIST
 * (something is at `group` or at a level's path and overwrite is false;
 * with into_group only a level's path counts, and overwrite deletes the
 * node there first); SL_ENOTFOUND (into_group: no group at `group`);
 * SL_EINVAL also for into_group over an array, or over a group of another
 * Zarr format than opts->level.zarr_format;
 * SL_ESTATE (sealed graph); SL_ENOMEM; or the store's error (SL_EACCES,
 * SL_ENOSPC, SL_EIO).  On failure
 * the graph is unchanged; arrays and metadata already written stay in the
 * store.
 * Thread-safety: one thread per graph, as every sl_graph_add_*.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_pyramid(sl_graph *g, const char *name, uint32_t input,
                                                   sl_store *store, const char *group,
                                                   const struct sl_pyramid_opts *opts,
                                                   uint32_t *level_puts, struct sl_error *err);

/**
 * Whether the last run of `plan` wrote the OME "omero" metadata of the
 * pyramid whose stats node is `node` (find it with sl_graph_find as
 * "<name>.omero"; sl_plan_stats gives its sets, one per channel).
 * @return SL_OK (written); SL_EINVAL (NULL plan, or `node` is no pyramid's
 * omero node); SL_ESTATE (the plan has not run); otherwise why not, in
 * `err`: SL_EUPSTREAM (an input chunk failed or did not run, named),
 * SL_EUNSUPPORTED (a run split across processes), the code of the run's
 * first failure (another chunk failed), SL_EINVAL (a channel whose min,
 * max or window is not finite: only NaN values, or infinities), SL_EPARSE
 * (the group's attributes are unreadable) or the store's error writing
 * the group's metadata.
 * Thread-safety: any thread, not while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_pyramid_omero(const sl_plan *plan, uint32_t node,
                                                    struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_PYRAMID_H */
