/* SPDX-License-Identifier: MIT */
/*
 * The nodes of a dataflow graph: their kinds, the user functions that get,
 * map, regrid and put nodes call, the descriptors the sl_graph_add_* calls
 * of <sluice/graph.h> take, and what sl_graph_node_info reports of a node.
 */
#ifndef SL_GRAPH_NODE_H
#define SL_GRAPH_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/array.h>
#include <sluice/block.h>
#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/grid.h>
#include <sluice/reduce.h>
#include <sluice/region.h>
#include <sluice/stats.h>
#include <sluice/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds of node. */
typedef enum sl_node_kind {
    SL_NODE_GET,    /* whole stored chunks of an io array */
    SL_NODE_GETTER, /* whole stored chunks from a user function */
    SL_NODE_SELECT, /* a slice, or disjoint slices concatenated along an axis */
    SL_NODE_MAP,    /* blockwise function of inputs on one chunk grid */
    SL_NODE_REGRID, /* output chunk needs a mapped region of the input */
    SL_NODE_PUT,    /* write chunks to an io array */
    SL_NODE_PUTTER, /* hand chunks to a user function */
    SL_NODE_VIEW,   /* an input's region seen with other axes: squeeze, expand_dims,
                       transpose, stack, concat */
    SL_NODE_KIND_COUNT_
} sl_node_kind;

/** Lower-case name of a node kind ("get", "select", ...).  Thread-safety: any thread. */
SL_API const char *sl_node_kind_name(sl_node_kind kind);

/**
 * A getter: fill `out` with the stored chunk covering `region` of array
 * `array_name`.  `out` is C-order contiguous, with `out->region == *region`
 * and `out->chunk` its chunk coordinates.  Return SL_OK; SL_EABSENT when
 * the chunk does not exist (a lost dump, say), as a `get` node treats an
 * absent stored chunk: the executor fills it with the getter's fill value,
 * or, with sl_plan_opts.missing_is_error, fails it with SL_ENOTFOUND (the
 * getter need not touch `out`); or a failure status (recorded for the
 * chunk; use `err` for the message).  Called concurrently from several
 * workers for different chunks.
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
    const void *fill_value;      /* one element (native order) for the chunks `fn` says are
                                    absent (SL_EABSENT); copied; NULL: zero */
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
 * A blockwise function: compute `out` from `inputs[0..n_inputs)` (strided
 * views).  Each block carries its chunk coordinates and array region (dask's
 * block_info / ArraySliceDep).  `out` is C-order contiguous and not
 * initialized.
 */
typedef sl_status sl_map_fn(void *ctx, struct sl_block *out, size_t n_inputs,
                            const struct sl_block *inputs, struct sl_error *err);

/* Most inputs a map node takes (sl_graph_add_map refuses more). */
#define SL_MAP_MAX_INPUTS 8

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
 * mapping gives for `out->region` (a view into one input chunk, or assembled
 * from the several it meets; strided either way).
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

/*
 * An expr node: blockwise arithmetic over named inputs (<sluice/expr.h>
 * gives the language).  Inputs broadcast as numpy's do: trailing axes
 * aligned, an axis of extent 1 stretched, missing leading axes added; the
 * output's shape is the broadcast shape.  Inputs may have different chunk
 * grids: each is read by the output chunk's region.
 */
struct sl_expr_desc {
    const char *text;         /* the expression; copied (compiled once) */
    const char *const *names; /* the name of each input in `text`, one per input */
    sl_dtype out_dtype;       /* result type: the working type's value stored by the cast rules */
    sl_dtype compute;         /* working type: SL_DTYPE_F64 or SL_DTYPE_F32 */
    const uint64_t *chunks;   /* output chunk shape; NULL: the grid of the first input of the
                                 output's shape, else per dimension the chunk extent of the
                                 first input that spans it */
};

/*
 * A reduce node: `method` along axes, as numpy's reductions compute it.
 * Where the input has one chunk along every reduced axis each chunk is
 * reduced straight (fused with its read); otherwise partial results per
 * input chunk are merged in a tree, `split_every` at a time, so memory
 * holds a fan-in of partials whatever the extent reduced.
 */
struct sl_reduce_desc {
    sl_reduce_method method; /* sum, mean, max, ... (<sluice/reduce.h>) */
    size_t n_axes;           /* axes reduced; 0: all of them (a 0-d result) */
    const uint32_t *axes;    /* `n_axes` distinct input axes */
    bool keepdims;           /* keep reduced axes with extent 1 (numpy's keepdims) */
    sl_dtype out_dtype;      /* SL_DTYPE_COUNT_: numpy's (sl_reduce_default_dtype) */
    double ddof;             /* std, var: delta degrees of freedom (numpy's, 0) */
    const uint64_t *chunks;  /* the result's chunk shape; NULL: the input's along the
                                axes kept */
    uint32_t split_every;    /* partials merged at once, in all (per axis its k-th root for
                                k axes, at least 2, as dask's); 0: 8 */
};

/*
 * A stats node: count, NaN count, min, max, sum, mean, std, a histogram and
 * percentiles of its input (<sluice/stats.h>), in one pass, over the whole
 * array or one set per index along the `per` axes (per channel).  It is a
 * sink, like a put; the plan holds the results (sl_plan_stats).
 */
struct sl_stats_desc {
    struct sl_stats_opts opts; /* histogram and percentiles; moments always */
    size_t n_per;              /* axes with one set per index; 0: one set */
    const uint32_t *per;       /* `n_per` distinct input axes */
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
    const sl_array *array;      /* get and put nodes: the array read or written;
                                   else NULL */
};

#ifdef __cplusplus
}
#endif

#endif /* SL_GRAPH_NODE_H */
