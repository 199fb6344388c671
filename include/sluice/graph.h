/* SPDX-License-Identifier: MIT */
/*
 * Dataflow graphs over chunked arrays.  A graph is built from nodes —
 * get/getter (stored chunks), select (slices), map (blockwise functions),
 * regrid (an output chunk needs a region of the input: downsampling,
 * rechunking, halos) and put/putter (write chunks, per-chunk status) — then
 * sealed, after which it is immutable and can be planned and run many
 * times.  Nodes are named by plain strings; nothing is ever hashed.
 *
 * The getter contract is structural: a get or getter node is only ever
 * asked for whole stored chunks.  Selections and regrids happen after it,
 * and fusion never changes what a getter is asked for.
 *
 * Lifecycle: sl_graph_create → sl_graph_add_* → sl_graph_seal →
 * sl_plan_create (plan: fusion, sizing) → sl_plan_run (any number of times).
 * <sluice/graph_node.h> declares the node kinds and descriptors,
 * <sluice/plan.h> the plans and runs.
 */
#ifndef SL_GRAPH_H
#define SL_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/alloc.h>
#include <sluice/array.h>
#include <sluice/common.h>
#include <sluice/error.h>
#include <sluice/graph_node.h>
#include <sluice/op_registry.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A graph under construction, or sealed (immutable, shareable). */
typedef struct sl_graph sl_graph;

/**
 * Make an empty graph that allocates with `alloc` (NULL for the default).
 * @return the graph (refcount 1), or NULL with SL_ENOMEM in `err`.
 * Thread-safety: any thread.
 */
SL_API sl_graph *sl_graph_create(const struct sl_allocator *alloc, struct sl_error *err);

/** Take a reference.  Thread-safety: any thread, once sealed. */
SL_API sl_graph *sl_graph_ref(sl_graph *g);

/**
 * Drop a reference; the last one frees the graph.  NULL is a no-op.
 * Thread-safety: any thread once sealed; before, the thread building it.
 */
SL_API void sl_graph_unref(sl_graph *g);

/*
 * Adding nodes.  Every sl_graph_add_* call copies what it is given (except
 * user contexts, which are borrowed), checks it against its inputs, and on
 * success stores the new node's id in `*id` (may be NULL).  Names must be
 * unique, 1..63 characters.  Failures leave the graph unchanged and return
 * SL_EINVAL (with the node name and the numbers: shapes, ranks, dtypes),
 * SL_EEXIST (duplicate name), SL_ESTATE (graph sealed), SL_ENOMEM; those
 * that derive an output grid also SL_EOVERFLOW or SL_EUNSUPPORTED (a grid
 * beyond the limits, naming the numbers).
 * Thread-safety: one thread per graph until sealed.
 */

/**
 * A node reading the stored chunks of `array` (inner chunks when sharded),
 * in its chunk grid.  Absent chunks read as the fill value unless the plan
 * says missing_is_error.  `array` is retained.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE or SL_ENOMEM (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_get(sl_graph *g, const char *name, sl_array *array,
                                               uint32_t *id, struct sl_error *err);

/**
 * A node writing `input` into `array` chunk by chunk (shard by shard when
 * sharded) and recording each chunk's status.  `input` must have the
 * array's dtype and shape (SL_EINVAL naming both otherwise; cast with an
 * op first); when its chunk grid differs from the array's, a rechunk node
 * "<name>.rechunk" is added in front.  `array` is retained.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_put(sl_graph *g, const char *name, uint32_t input,
                                               sl_array *array, uint32_t *id, struct sl_error *err);

/**
 * A node reading a user getter's stored chunks.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_getter(sl_graph *g, const char *name,
                                                  const struct sl_getter_desc *desc, uint32_t *id,
                                                  struct sl_error *err);

/**
 * A node selecting slices of `input`; its chunk grid is the slices' intersection
 * with the input's grid (every output chunk lies inside one input chunk).
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW,
 * SL_EUNSUPPORTED (see above) or SL_EBOUNDS (a slice outside the input).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_select(sl_graph *g, const char *name, uint32_t input,
                                                  const struct sl_select_desc *desc, uint32_t *id,
                                                  struct sl_error *err);

/**
 * A blockwise node over `n_inputs` inputs (1 to SL_MAP_MAX_INPUTS, 8) that
 * share one chunk grid.
 * @return SL_OK, SL_EINVAL (see above; also more than SL_MAP_MAX_INPUTS
 * inputs: `map "name": 9 inputs, at most 8`), SL_EEXIST, SL_ESTATE, SL_ENOMEM,
 * SL_EOVERFLOW or SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_map(sl_graph *g, const char *name, size_t n_inputs,
                                               const uint32_t *inputs,
                                               const struct sl_map_desc *desc, uint32_t *id,
                                               struct sl_error *err);

/**
 * A regrid node: see struct sl_regrid_desc.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_regrid(sl_graph *g, const char *name, uint32_t input,
                                                  const struct sl_regrid_desc *desc, uint32_t *id,
                                                  struct sl_error *err);

/**
 * A regrid that only changes the chunk shape (copying elements).
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_rechunk(sl_graph *g, const char *name, uint32_t input,
                                                   const uint64_t *chunk_shape, uint32_t *id,
                                                   struct sl_error *err);

/**
 * A node applying the built-in operation `op` (bound with sl_op_bind to the
 * input's dtype and rank) to `input`: a map for elementwise ops (same chunk
 * grid), a regrid for downsample, whose output chunks are `chunk_shape`
 * (NULL: the input's chunk shape, which must then be regular).  The op is
 * copied.  Besides the errors of every add: SL_EINVAL when the op was bound
 * for another dtype or rank, naming both.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_op(sl_graph *g, const char *name, uint32_t input,
                                              const struct sl_op *op, const uint64_t *chunk_shape,
                                              uint32_t *id, struct sl_error *err);

/**
 * An expr node over `n_inputs` inputs (1 to SL_MAP_MAX_INPUTS), see struct
 * sl_expr_desc.  The expression is compiled here, once; each task evaluates
 * it over tiles of its chunk.  Edges from inputs whose chunks match the
 * output's fuse; the others are read by region (`sl_plan_explain` says why).
 * Besides the errors of every add: SL_EPARSE (the expression: the message
 * starts `node "ff": column 8: ` and err->column is set), SL_EINVAL
 * (shapes that do not broadcast, naming both inputs, the dimension and the
 * extents; a name missing or given twice; an input the expression never
 * uses; a compute type other than float32 or float64), SL_EUNSUPPORTED (an
 * input or output of float16 or complex type).
 * @return SL_OK, SL_EPARSE, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM,
 * SL_EOVERFLOW or SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_expr(sl_graph *g, const char *name, size_t n_inputs,
                                                const uint32_t *inputs,
                                                const struct sl_expr_desc *desc, uint32_t *id,
                                                struct sl_error *err);

/**
 * A reduce node over `input`, see struct sl_reduce_desc.  Its steps, when
 * the reduction crosses chunks, are nodes "<name>.partial" and
 * "<name>.combine<k>" (explain lists them); the node `name` is the result.
 * Besides the errors of every add: SL_EINVAL (an axis out of range or
 * given twice, naming it and the rank; sl_reduce_check's refusals),
 * SL_EUNSUPPORTED (float16 or complex input).
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_reduce(sl_graph *g, const char *name, uint32_t input,
                                                  const struct sl_reduce_desc *desc, uint32_t *id,
                                                  struct sl_error *err);

/**
 * A stats node reading `input`, see struct sl_stats_desc: a sink with a
 * status array like a put (a failed input chunk fails the chunks that read
 * it); after a run, sl_plan_stats gives each set's statistics.  Besides the
 * errors of every add: SL_EINVAL (a "per" axis out of range or twice; more
 * than 2^20 sets; the options sl_stats_create refuses, with its message),
 * SL_EUNSUPPORTED (float16 or complex input).
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_stats(sl_graph *g, const char *name, uint32_t input,
                                                 const struct sl_stats_desc *desc, uint32_t *id,
                                                 struct sl_error *err);

/*
 * Views: nodes whose chunks are a region of an input seen with other axes
 * (strides rearranged, nothing copied by the node; a consumer that needs
 * contiguous memory copies, as a put does).  Their chunk boundaries are
 * the inputs', so edges between equal grids fuse.  Besides the errors of
 * every add: SL_EINVAL naming the axis and the numbers.
 */

/**
 * Drop axes of extent 1: the `n_axes` in `axes` (each of extent 1), or all
 * of them when `n_axes` is 0.  A TCZYX array reduced to a size-1 z becomes
 * TCYX.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_squeeze(sl_graph *g, const char *name, uint32_t input,
                                                   size_t n_axes, const uint32_t *axes,
                                                   uint32_t *id, struct sl_error *err);

/**
 * Insert axes of extent 1 at the output positions `axes` (`n_axes` >= 1,
 * each in 0..rank + n_axes - 1, none twice), as numpy.expand_dims does.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_expand_dims(sl_graph *g, const char *name,
                                                       uint32_t input, size_t n_axes,
                                                       const uint32_t *axes, uint32_t *id,
                                                       struct sl_error *err);

/**
 * Permute axes: output axis o is input axis perm[o] (`perm` has one entry
 * per dimension, a permutation), as numpy.transpose(x, perm) does.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_transpose(sl_graph *g, const char *name, uint32_t input,
                                                     const uint32_t *perm, uint32_t *id,
                                                     struct sl_error *err);

/**
 * Stack `n_inputs` inputs (1 to SL_MAP_MAX_INPUTS) of one shape and dtype
 * along a new axis at position `axis` (0..rank), as numpy.stack does: two
 * ZYX channels give a CZYX array.  The new axis has one chunk per input.
 * @return SL_OK, SL_EINVAL (shapes or dtypes differ: both named), SL_EEXIST,
 * SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_stack(sl_graph *g, const char *name, size_t n_inputs,
                                                 const uint32_t *inputs, uint32_t axis,
                                                 uint32_t *id, struct sl_error *err);

/**
 * Join `n_inputs` inputs (1 to SL_MAP_MAX_INPUTS) of one dtype and rank,
 * equal in shape outside `axis`, along `axis`, as numpy.concatenate does.
 * Chunks along the axis are each input's, so none straddles two inputs.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_concat(sl_graph *g, const char *name, size_t n_inputs,
                                                  const uint32_t *inputs, uint32_t axis,
                                                  uint32_t *id, struct sl_error *err);

/**
 * A node handing every chunk of `input` to a user putter.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_add_putter(sl_graph *g, const char *name, uint32_t input,
                                                  const struct sl_putter_desc *desc, uint32_t *id,
                                                  struct sl_error *err);

/**
 * Mark node `id` as never fused with its producers or consumers (e.g. to see
 * its chunks in a trace).  @return SL_OK, SL_EINVAL (no such node, naming
 * the id and the node count) or SL_ESTATE (sealed).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_set_fusable(sl_graph *g, uint32_t id, bool fusable,
                                                   struct sl_error *err);

/**
 * Seal the graph: check it is complete (at least one put, every node's
 * output used) and make it immutable.  Sealing twice is allowed.
 * @return SL_OK, or SL_EINVAL naming the first unused node (or saying that
 * there is no put).
 * Thread-safety: one thread per graph until sealed.
 */
SL_API SL_NODISCARD sl_status sl_graph_seal(sl_graph *g, struct sl_error *err);

/** True once sealed.  Thread-safety: any thread once sealed; before, the thread building it. */
SL_API bool sl_graph_is_sealed(const sl_graph *g);

/**
 * Number of nodes; ids are 0 .. count-1 in the order they were added.
 * Thread-safety: any thread once sealed; before, the thread building it.
 */
SL_API uint32_t sl_graph_node_count(const sl_graph *g);

/**
 * Find a node by name.  @return SL_OK or SL_ENOTFOUND naming it.
 * Thread-safety: any thread once sealed; before, the thread building it.
 */
SL_API SL_NODISCARD sl_status sl_graph_find(const sl_graph *g, const char *name, uint32_t *id,
                                            struct sl_error *err);

/**
 * Describe node `id`; pointers stay valid while the graph lives.
 * @return SL_OK or SL_EINVAL (no such node, naming the id and the node count).
 * Thread-safety: any thread once sealed; before, the thread building it.
 */
SL_API SL_NODISCARD sl_status sl_graph_node_info(const sl_graph *g, uint32_t id,
                                                 struct sl_node_info *out, struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_GRAPH_H */
