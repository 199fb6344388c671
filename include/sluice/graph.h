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
 * sl_graph_prepare (plan: fusion, sizing) → sl_plan_run (any number of times).
 */
#ifndef SL_GRAPH_H
#define SL_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sluice/alloc.h>
#include <sluice/block.h>
#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/grid.h>
#include <sluice/region.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A graph under construction, or sealed (immutable, shareable). */
typedef struct sl_graph sl_graph;

/* The kinds of node. */
typedef enum sl_node_kind {
    SL_NODE_GET,    /* whole stored chunks of an io array */
    SL_NODE_GETTER, /* whole stored chunks from a user function */
    SL_NODE_SELECT, /* a slice, or disjoint slices concatenated along an axis */
    SL_NODE_MAP,    /* blockwise function of inputs on one chunk grid */
    SL_NODE_REGRID, /* output chunk needs a mapped region of the input */
    SL_NODE_PUT,    /* write chunks to an io array */
    SL_NODE_PUTTER, /* hand chunks to a user function */
    SL_NODE_KIND_COUNT_
} sl_node_kind;

/** Lower-case name of a node kind ("get", "select", ...). */
SL_API const char *sl_node_kind_name(sl_node_kind kind);

/**
 * A getter: fill `out` with the stored chunk covering `region` of array
 * `array_name`.  `out` is C-order contiguous, with `out->region == *region`
 * and `out->chunk` its chunk coordinates.  Return SL_OK or a failure status
 * (recorded for the chunk; use `err` for the message).  Called concurrently
 * from several workers for different chunks.
 */
typedef sl_status sl_getter_fn(void *ctx, const char *array_name, const struct sl_region *region,
                               struct sl_block *out, struct sl_error *err);

/* A getter node: a virtual array whose stored chunks a user function reads. */
struct sl_getter_desc {
    const char *array_name;      /* passed to `fn`; copied */
    sl_dtype dtype;              /* element type */
    uint32_t rank;               /* number of dimensions */
    const uint64_t *shape;       /* array shape, `rank` entries */
    const uint64_t *chunk_shape; /* stored chunk shape, `rank` entries */
    sl_getter_fn *fn;            /* the reader */
    void *ctx;                   /* borrowed; must outlive every run */
};

/* A select node: slices of the input, concatenated along `axis`. */
struct sl_select_desc {
    size_t n_slices;                /* >= 1 */
    const struct sl_region *slices; /* input coordinates; copied.  With several
                                       slices, all must agree outside `axis`
                                       and must not overlap. */
    uint32_t axis;                  /* concatenation axis (ignored for one slice) */
};

/**
 * A blockwise function: compute `out` from `inputs[0..n_inputs)`.  Each
 * block carries its chunk coordinates and array region (dask's block_info /
 * ArraySliceDep).  `out` is C-order contiguous and not initialized.
 */
typedef sl_status sl_map_fn(void *ctx, struct sl_block *out, size_t n_inputs,
                            const struct sl_block *inputs, struct sl_error *err);

/* A map node. */
struct sl_map_desc {
    const char *op_name; /* shown by explain, e.g. "scale"; copied; may be NULL */
    sl_map_fn *fn;       /* the function */
    void *ctx;           /* borrowed; must outlive every run */
    sl_dtype out_dtype;  /* element type of the output */
    /* Output chunk extent = ceil(input extent × num / den) per dimension;
     * NULL means 1/1 (the output has the input's chunk grid). */
    const uint64_t *chunk_num; /* `rank` entries, >= 1 */
    const uint64_t *chunk_den; /* `rank` entries, >= 1 */
};

/**
 * A regrid function: compute `out` from `in`, the input region the node's
 * mapping gives for `out->region` (assembled from however many input chunks
 * it meets, C-order contiguous).
 */
typedef sl_status sl_regrid_fn(void *ctx, struct sl_block *out, const struct sl_block *in,
                               struct sl_error *err);

/*
 * A regrid node.  Per dimension d, output coordinates [a, b) need input
 * coordinates [floor(a·num/den) − halo_lo, ceil(b·num/den) + halo_hi),
 * clipped to the input: num/den = f/1 downsamples by f, 1/1 with halos
 * gives overlap, 1/1 without is a rechunk.
 */
struct sl_regrid_desc {
    const char *op_name;         /* shown by explain; copied; may be NULL */
    sl_regrid_fn *fn;            /* the function */
    void *ctx;                   /* borrowed; must outlive every run */
    sl_dtype out_dtype;          /* element type of the output */
    const uint64_t *chunk_shape; /* output chunk shape, `rank` entries */
    const uint64_t *shape;       /* output shape; NULL derives ceil(in·den/num) */
    const uint64_t *scale_num;   /* NULL: all 1 */
    const uint64_t *scale_den;   /* NULL: all 1 */
    const uint64_t *halo_lo;     /* NULL: all 0 */
    const uint64_t *halo_hi;     /* NULL: all 0 */
};

/**
 * A putter: consume the chunk `block` (its region and chunk coordinates set)
 * for output `name`.  Return SL_OK, or a failure that is recorded for the
 * chunk in the node's status array.  Called concurrently for different chunks.
 */
typedef sl_status sl_putter_fn(void *ctx, const char *name, const struct sl_block *block,
                               struct sl_error *err);

/* A putter node. */
struct sl_putter_desc {
    sl_putter_fn *fn;            /* the consumer */
    void *ctx;                   /* borrowed; must outlive every run */
    const uint64_t *chunk_shape; /* chunks handed to `fn`; NULL keeps the input's grid
                                    (otherwise a rechunk is inserted) */
};

/* What one node is, as sl_graph_node_info reports it. */
struct sl_node_info {
    const char *name;           /* unique in the graph */
    sl_node_kind kind;          /* what it does */
    const char *op_name;        /* operation shown by explain, or "" */
    sl_dtype dtype;             /* output element type (puts: the written type) */
    const struct sl_grid *grid; /* output chunk grid (puts: the written grid) */
    uint32_t n_inputs;          /* number of inputs */
    const uint32_t *inputs;     /* their node ids */
    uint32_t n_consumers;       /* nodes reading this one */
    bool fusable;               /* false when marked unfusable */
};

/**
 * Make an empty graph that allocates with `alloc` (NULL for the default).
 * @return the graph (refcount 1), or NULL with SL_ENOMEM in `err`.
 */
SL_API sl_graph *sl_graph_create(const struct sl_allocator *alloc, struct sl_error *err);

/** Take a reference.  Thread-safety: any thread, once sealed. */
SL_API sl_graph *sl_graph_ref(sl_graph *g);

/** Drop a reference; the last one frees the graph.  NULL is a no-op. */
SL_API void sl_graph_unref(sl_graph *g);

/*
 * Adding nodes.  Every sl_graph_add_* call copies what it is given (except
 * user contexts, which are borrowed), checks it against its inputs, and on
 * success stores the new node's id in `*id` (may be NULL).  Names must be
 * unique, 1..63 characters.  Failures leave the graph unchanged and return
 * SL_EINVAL (with the node name and the numbers: shapes, ranks, dtypes),
 * SL_EEXIST (duplicate name), SL_ESTATE (graph sealed), SL_ENOMEM.
 * Thread-safety: one thread per graph until sealed.
 */

/** A node reading a user getter's stored chunks. */
SL_API SL_NODISCARD sl_status sl_graph_add_getter(sl_graph *g, const char *name,
                                                  const struct sl_getter_desc *desc, uint32_t *id,
                                                  struct sl_error *err);

/** A node selecting slices of `input`; its chunk grid is the slices' intersection
 *  with the input's grid (every output chunk lies inside one input chunk). */
SL_API SL_NODISCARD sl_status sl_graph_add_select(sl_graph *g, const char *name, uint32_t input,
                                                  const struct sl_select_desc *desc, uint32_t *id,
                                                  struct sl_error *err);

/** A blockwise node over inputs that share one chunk grid. */
SL_API SL_NODISCARD sl_status sl_graph_add_map(sl_graph *g, const char *name, size_t n_inputs,
                                               const uint32_t *inputs,
                                               const struct sl_map_desc *desc, uint32_t *id,
                                               struct sl_error *err);

/** A regrid node: see struct sl_regrid_desc. */
SL_API SL_NODISCARD sl_status sl_graph_add_regrid(sl_graph *g, const char *name, uint32_t input,
                                                  const struct sl_regrid_desc *desc, uint32_t *id,
                                                  struct sl_error *err);

/** A regrid that only changes the chunk shape (copying elements). */
SL_API SL_NODISCARD sl_status sl_graph_add_rechunk(sl_graph *g, const char *name, uint32_t input,
                                                   const uint64_t *chunk_shape, uint32_t *id,
                                                   struct sl_error *err);

/** A node handing every chunk of `input` to a user putter. */
SL_API SL_NODISCARD sl_status sl_graph_add_putter(sl_graph *g, const char *name, uint32_t input,
                                                  const struct sl_putter_desc *desc, uint32_t *id,
                                                  struct sl_error *err);

/**
 * Mark node `id` as never fused with its producers or consumers (e.g. to see
 * its chunks in a trace).  @return SL_OK, SL_EINVAL (no such node) or
 * SL_ESTATE (sealed).
 */
SL_API SL_NODISCARD sl_status sl_graph_set_fusable(sl_graph *g, uint32_t id, bool fusable);

/**
 * Seal the graph: check it is complete (at least one put, every node's
 * output used; SL_EINVAL naming the first unused node otherwise) and make it
 * immutable.  Sealing twice is allowed.
 */
SL_API SL_NODISCARD sl_status sl_graph_seal(sl_graph *g, struct sl_error *err);

/** True once sealed. */
SL_API bool sl_graph_is_sealed(const sl_graph *g);

/** Number of nodes; ids are 0 .. count-1 in the order they were added. */
SL_API uint32_t sl_graph_node_count(const sl_graph *g);

/** Find a node by name.  @return SL_OK or SL_ENOTFOUND naming it. */
SL_API SL_NODISCARD sl_status sl_graph_find(const sl_graph *g, const char *name, uint32_t *id,
                                            struct sl_error *err);

/** Describe node `id`; pointers stay valid while the graph lives.
 *  @return SL_OK or SL_EINVAL (no such node). */
SL_API SL_NODISCARD sl_status sl_graph_node_info(const sl_graph *g, uint32_t id,
                                                 struct sl_node_info *out);

#ifdef __cplusplus
}
#endif

#endif /* SL_GRAPH_H */
