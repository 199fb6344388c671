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
 */
#ifndef SL_GRAPH_H
#define SL_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sluice/alloc.h>
#include <sluice/array.h>
#include <sluice/block.h>
#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/grid.h>
#include <sluice/ops.h>
#include <sluice/pool.h>
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

/** Lower-case name of a node kind ("get", "select", ...).  Thread-safety: any thread. */
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
 * A blockwise function: compute `out` from `inputs[0..n_inputs)` (strided
 * views).  Each block carries its chunk coordinates and array region (dask's
 * block_info / ArraySliceDep).  `out` is C-order contiguous and not
 * initialized.
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
 * A blockwise node over inputs that share one chunk grid.
 * @return SL_OK, SL_EINVAL, SL_EEXIST, SL_ESTATE, SL_ENOMEM, SL_EOVERFLOW or
 * SL_EUNSUPPORTED (see above).
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

/* ---- plans and runs ------------------------------------------------------- */

/* A prepared plan: the fusion stages of a sealed graph, sized for running. */
typedef struct sl_plan sl_plan;

/* What a run does when a chunk fails. */
typedef enum sl_error_policy {
    SL_POLICY_COLLECT,  /* record it, mark its dependents upstream-failed, go on */
    SL_POLICY_FAIL_FAST /* record it and cancel every chunk not yet started */
} sl_error_policy;

/* Progress of a run, as handed to a progress callback. */
struct sl_progress {
    uint64_t chunks_done;   /* output chunks of puts finished (ok or not) */
    uint64_t chunks_total;  /* output chunks of every put */
    uint64_t chunks_failed; /* ... of which failed, upstream-failed or were cancelled */
    uint64_t bytes_done;    /* decoded bytes of the finished output chunks */
    uint64_t bytes_total;   /* decoded bytes of every output chunk */
    double elapsed_s;       /* since the run started */
    double bytes_per_s;     /* average rate so far */
    double eta_s;           /* estimated seconds left; negative when unknown */
    bool final;             /* the last call of the run */
};

/* Called from the thread that runs sl_plan_run, never concurrently. */
typedef void sl_progress_fn(void *ctx, const struct sl_progress *progress);

/*
 * Called from the thread that runs sl_plan_run when phase `phase` (of
 * `n_phases`) has finished, before the next starts: puts whose inputs are
 * arrays written by earlier puts run in later phases.  Runs across
 * processes wait here for every process (a barrier).  Returning anything
 * but SL_OK stops the run with that status.
 */
typedef sl_status sl_phase_fn(void *ctx, uint32_t phase, uint32_t n_phases);

/* How to prepare and run a plan. */
struct sl_plan_opts {
    size_t memory_budget;       /* bytes of chunk buffers alive at once; 0: no limit */
    sl_error_policy policy;     /* default SL_POLICY_COLLECT */
    bool missing_is_error;      /* a stored chunk that is absent fails (SL_ENOTFOUND)
                                   instead of reading as the fill value */
    size_t max_errors;          /* failed chunks whose messages are kept (the codes of
                                   all are kept); more are counted as dropped */
    sl_progress_fn *progress;   /* NULL: none */
    void *progress_ctx;         /* passed to `progress` */
    double progress_interval_s; /* seconds between progress calls */
    const char *trace_path;     /* write a Chrome trace (JSON) of every task here after
                                   each run; NULL: none.  Copied. */
    uint32_t n_parts;           /* split every put's chunks into this many parts along
                                   shard boundaries, balanced by chunk count; 1: one part */
    uint32_t part;              /* the part this plan runs (< n_parts); the others' chunks
                                   get SL_ESKIPPED */
    sl_phase_fn *phase_done;    /* NULL: none */
    void *phase_ctx;            /* passed to `phase_done` */
};
/* clang-format off */
#define SL_PLAN_OPTS_DEFAULT                                                   \
    ((struct sl_plan_opts){.memory_budget = 0,                                 \
                           .policy = SL_POLICY_COLLECT,                        \
                           .missing_is_error = false,                          \
                           .max_errors = 10000,                                \
                           .progress = NULL,                                   \
                           .progress_ctx = NULL,                               \
                           .progress_interval_s = 0.5,                         \
                           .trace_path = NULL,                                 \
                           .n_parts = 1,                                       \
                           .part = 0,                                          \
                           .phase_done = NULL,                                 \
                           .phase_ctx = NULL})
/* clang-format on */

/* One failed chunk of a put, with its message. */
struct sl_chunk_error {
    uint32_t node;           /* the put or putter node */
    struct sl_chunk_key key; /* the chunk, in the node's grid */
    sl_status code;          /* why */
    char text[128];          /* the message, naming the chunk and the cause */
};

/* Counts of the last run. */
struct sl_run_summary {
    uint64_t n_chunks;        /* output chunks of every put */
    uint64_t n_ok;            /* written (or handed to the putter) without error */
    uint64_t n_failed;        /* failed themselves */
    uint64_t n_upstream;      /* not run because an input chunk failed */
    uint64_t n_canceled;      /* not run because the run stopped (fail_fast) */
    uint64_t n_skipped;       /* left to other parts of a split run (SL_ESKIPPED) */
    uint64_t n_tasks;         /* tasks run, intermediate chunks included */
    uint64_t bytes_read;      /* encoded bytes read from stores */
    uint64_t bytes_written;   /* encoded bytes written to stores */
    uint64_t objects_written; /* objects (chunks, shards) written to stores */
    size_t peak_bytes;        /* most chunk-buffer bytes accounted alive at once */
    size_t budget_bytes;      /* the budget (0: none) */
    size_t errors_dropped;    /* failed chunks beyond max_errors (codes kept, no message) */
    double elapsed_s;         /* wall time of the run */
    sl_status first_error;    /* the first failure's code, or SL_OK */
};

/* A put's per-chunk status array. */
struct sl_put_status {
    const char *name;           /* the node's name */
    const struct sl_grid *grid; /* its chunk grid */
    const uint8_t *codes;       /* sl_status of each chunk by C-order linear index;
                                   SL_OK, or why it failed */
    uint64_t n_ok;              /* chunks with SL_OK */
    uint64_t n_failed;          /* chunks with any other code but SL_ESKIPPED */
};

/**
 * Plan the sealed graph `g` (retained by the plan): fuse, size the status
 * arrays and check the budget.  Free the plan with sl_plan_destroy.
 * @return the plan, or NULL with SL_ESTATE (graph not sealed), SL_EBUDGET
 * (the budget is smaller than what one task needs, with both numbers and
 * the stage), SL_EINVAL (bad options), SL_ENOMEM.
 * Thread-safety: any thread; plans of one sealed graph may be made at once.
 */
SL_API sl_plan *sl_plan_create(sl_graph *g, const struct sl_plan_opts *opts, struct sl_error *err);

/**
 * The sealed graph a plan runs (borrowed from the plan).
 * Thread-safety: any thread, even while the plan runs.
 */
SL_API const sl_graph *sl_plan_graph(const sl_plan *plan);

/**
 * Free a plan (not while it runs).  NULL is a no-op.
 * Thread-safety: one thread, once no other thread uses the plan and it does
 * not run.
 */
SL_API void sl_plan_destroy(sl_plan *plan);

/**
 * Write the plan for people: nodes, stages with their task counts and
 * bytes, and every edge with "fused" or why not.  @return SL_OK or SL_EIO
 * (the stream's error flag is set).
 * Thread-safety: any thread, even while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_explain(const sl_plan *plan, FILE *out, struct sl_error *err);

/**
 * Write the plan as Graphviz DOT.  @return SL_OK or SL_EIO (the stream's error flag is set).
 * Thread-safety: any thread, even while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_write_dot(const sl_plan *plan, FILE *out,
                                                struct sl_error *err);

/**
 * The counts of the last run (zeros before the first).
 * Thread-safety: any thread, not while the plan runs.
 */
SL_API void sl_plan_summary(const sl_plan *plan, struct sl_run_summary *out);

/**
 * Run the plan on `pool`: walk every put's output chunks (shard by shard),
 * generating tasks lazily within the memory budget, and record every
 * chunk's status.  A plan can run any number of times, one run at a time;
 * each run starts from fresh status arrays.
 * @return SL_OK when every chunk succeeded; otherwise the first failure's
 * code, with its message in `err` (the status arrays and sl_plan_errors
 * hold every failure).  SL_EBUDGET when the budget cannot hold what must
 * be alive to go on; SL_ENOMEM when the run's own structures do not fit.
 * Thread-safety: one run per plan at a time; the pool may run other work.
 */
SL_API SL_NODISCARD sl_status sl_plan_run(sl_plan *plan, sl_pool *pool, struct sl_error *err);

/**
 * The status array of put (or putter) node `node` from the last run.
 * @return SL_OK, or SL_EINVAL when `node` is not a put of the plan's graph
 * (naming it and the number of puts).
 * Thread-safety: any thread, not while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_put_status(const sl_plan *plan, uint32_t node,
                                                 struct sl_put_status *out, struct sl_error *err);

/**
 * The failed chunks of the last run that kept their message, in the order
 * they failed; `*count` receives how many.
 * Thread-safety: any thread, not while the plan runs.
 */
SL_API const struct sl_chunk_error *sl_plan_errors(const sl_plan *plan, size_t *count);

/*
 * Runs split across processes (sl_plan_opts.n_parts > 1): each process runs
 * its part, then one of them folds in the others' results before reporting.
 */

/**
 * Take the codes another part recorded for put `node` (`n_codes` = its
 * chunk count) where this plan has SL_ESKIPPED; codes equal to this plan's
 * are accepted (a part merged twice).  Allowed between phases, from the
 * phase callback, so that gets of later phases see which chunks failed in
 * other parts.
 * @return SL_OK; SL_EINVAL when `node` is not a put, the count differs, or
 * a chunk has different codes in both (naming it and the codes).
 * Thread-safety: the thread running the plan, from its phase callback, or one
 * thread between runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_merge_codes(sl_plan *plan, uint32_t node,
                                                  const uint8_t *codes, uint64_t n_codes,
                                                  struct sl_error *err);

/**
 * Append another part's failed-chunk records (as sl_plan_errors returns
 * them); those beyond max_errors are counted as dropped.
 * Thread-safety: one thread, not while the plan runs.
 */
SL_API void sl_plan_merge_errors(sl_plan *plan, const struct sl_chunk_error *errors, size_t n);

/**
 * Add another part's summary: bytes and tasks add, peak and elapsed time
 * take the larger, the first error is kept if this plan has none; the chunk
 * counts are recounted from the merged status arrays.
 * Thread-safety: one thread, not while the plan runs.
 */
SL_API void sl_plan_merge_summary(sl_plan *plan, const struct sl_run_summary *other);

/**
 * Write the last run's report as JSON: the summary, and per put its counts
 * and each failed chunk with coordinates, code and message.
 * @return SL_OK, SL_ENOMEM (no memory to sort the failed chunks; nothing
 * written) or SL_EIO (the stream's error flag is set).
 * Thread-safety: any thread, not while the plan runs.
 */
SL_API SL_NODISCARD sl_status sl_plan_write_report(const sl_plan *plan, FILE *out,
                                                   struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_GRAPH_H */
