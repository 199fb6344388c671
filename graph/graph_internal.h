/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the graph module: the node IR, the per-dimension
 * mappings from output chunks to input regions, and the fusion plan.
 * Shared by the graph sources and the graph tests.
 */
#ifndef SL_GRAPH_INTERNAL_H
#define SL_GRAPH_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <sluice/array.h>
#include <sluice/array_iter.h>
#include <sluice/expr.h>
#include <sluice/graph.h>
#include <sluice/graph_node.h>
#include <sluice/journal.h>
#include <sluice/op_registry.h>
#include <sluice/ops.h>
#include <sluice/plan.h>
#include <sluice/reduce.h>
#include <sluice/stats.h>
#include <sluice/store.h>

#define SL__NODE_NAME_MAX 63

/* How one input of a node maps output coordinates to input coordinates, per
 * dimension: out [a, b) needs in [floor(a·num/den) − lo + off, ceil(b·num/den)
 * + hi + off) clipped to [0, in_extent).  Selects use `off` (and, along a
 * concatenation axis, one mapping per slice). */
struct sl__dim_map {
    uint64_t num;     /* scale numerator, >= 1 */
    uint64_t den;     /* scale denominator, >= 1 */
    uint64_t halo_lo; /* extra input before */
    uint64_t halo_hi; /* extra input after */
    bool wrap;        /* halos wrap around (for explain); the intervals of a halo op's
                         input come from sl_op_halo_interval */
};

/* One slice of a select along its concatenation axis. */
struct sl__select_piece {
    uint64_t out_start; /* first output coordinate of this slice */
    uint64_t in_start;  /* its input coordinate */
    uint64_t extent;    /* its length */
};

/* The steps of a reduction (graph_reduce.c). */
enum sl__reduce_step {
    SL__REDUCE_NONE,    /* not a reduction */
    SL__REDUCE_DIRECT,  /* one input chunk along every reduced axis: reduced straight */
    SL__REDUCE_PARTIAL, /* one partial state per input chunk */
    SL__REDUCE_COMBINE, /* partial states merged, split_every per axis */
    SL__REDUCE_FINISH,  /* the last partial states merged into the result */
};

/* Where a pyramid's omero stats node writes its sets, as OME "omero"
 * channel windows, after a successful run (pyramid_omero.c).  Exists so
 * that a stats node can carry a write to storage that only the end of a
 * run may make. */
struct sl__omero_target {
    sl_store *store;              /* retained: the pyramid's store */
    char group[SL_STORE_KEY_MAX]; /* the group's path in it ("" for the root) */
    int zarr_format;              /* 3: inside "ome" (OME-Zarr 0.5); 2: top level (0.4) */
};

/* What a stats node computes (graph_stats.c). */
struct sl__stats_spec {
    struct sl_stats_opts opts;        /* histogram and percentiles */
    uint32_t n_per;                   /* axes with one set of statistics per index */
    uint32_t per[SL_MAX_RANK];        /* those axes, ascending */
    uint64_t per_extent[SL_MAX_RANK]; /* the input's extent along each */
    uint64_t n_sets;                  /* product of their extents (1 without) */
    struct sl__omero_target *omero;   /* a pyramid's omero node: where its sets go after a
                                         run (owned); else NULL */
};

/* A node of the graph IR. */
struct sl__node {
    sl_node_kind kind; /* what the node does */
    char name[SL__NODE_NAME_MAX + 1];
    char op_name[32];                    /* shown by explain */
    uint32_t id;                         /* index in the graph's node array */
    uint32_t n_inputs;                   /* number of inputs */
    uint32_t *inputs;                    /* input node ids, owned */
    uint32_t n_consumers;                /* edges leaving this node */
    bool fusable;                        /* false when marked unfusable */
    sl_dtype dtype;                      /* output element type */
    struct sl_grid grid;                 /* output chunk grid, owned */
    struct sl__dim_map map[SL_MAX_RANK]; /* input coordinates of an output region */
    uint64_t shard_chunks[SL_MAX_RANK];  /* puts: chunks per shard and dimension, 0 if unsharded */
    bool has_op;                         /* maps and regrids: a built-in op instead of `u` */
    struct sl_op op;                     /* the bound op when has_op */
    bool op_piecewise; /* regrid op whose input chunk boundaries are multiples of its factors:
                          applied chunk by chunk, never assembled */
    bool rechunk;      /* a rechunk (sl_graph_add_rechunk): its chunk is its input's region
                          as evaluated, relabelled, never copied again */
    /* Which output dimension each input dimension follows, per input:
     * in_axis[i][d] for dimension d of input i, or SL__AXIS_WHOLE when no
     * output dimension does (the input's whole extent is read: a reduced
     * axis, a size-1 axis broadcast).  Only when axes_mapped; otherwise
     * input dimension d follows output dimension d.  Output dimensions no
     * input dimension follows read the same input chunks for every output
     * chunk along them (broadcasting). */
    bool axes_mapped;
    int8_t in_axis[SL_MAP_MAX_INPUTS][SL_MAX_RANK];
    /* Views stacking or concatenating: input i is read only for output
     * coordinates [win_lo[i], win_hi[i]) along output dimension win_axis
     * (-1: none), shifted to start at 0. */
    int8_t win_axis;
    uint64_t win_lo[SL_MAP_MAX_INPUTS];
    uint64_t win_hi[SL_MAP_MAX_INPUTS];
    bool by_region; /* maps: inputs read by region through map[] (1/1), so their chunk grids
                       may differ from the output's; else chunk k reads chunk k */
    sl_expr *expr;  /* expr maps: the compiled program (owned), evaluated over broadcast
                       views of the inputs */
    struct sl__stats_spec *stats;  /* stats putters: what they compute (owned), else NULL */
    enum sl__reduce_step red_step; /* reductions: which step of the tree this map is */
    struct sl_reduce_params red;   /* reductions: what is reduced (dimensions of the input
                                      of the whole reduction) */
    union {
        struct {
            char *array_name; /* owned */
            sl_getter_fn *fn;
            void *ctx;
            unsigned char fill[16]; /* the fill value of absent chunks, one element */
        } getter;
        struct {
            uint32_t axis;                   /* concatenation axis */
            size_t n_pieces;                 /* slices along the axis */
            struct sl__select_piece *pieces; /* owned, ascending out_start */
            uint64_t offset[SL_MAX_RANK];    /* input start outside the axis */
        } select;
        struct {
            sl_map_fn *fn;
            void *ctx;
        } map;
        struct {
            sl_regrid_fn *fn;
            void *ctx;
        } regrid;
        struct {
            sl_putter_fn *fn;
            void *ctx;
        } putter;
        struct {
            sl_array *array; /* retained */
        } io;                /* get and put nodes */
    } u;
};

struct sl_graph {
    _Atomic uint32_t refs;     /* references; sealed graphs are shared */
    struct sl_allocator alloc; /* everything the graph owns */
    bool sealed;               /* immutable once true */
    uint32_t n_nodes;          /* nodes in use */
    uint32_t cap_nodes;        /* nodes allocated */
    struct sl__node *nodes;    /* owned, indexed by id */
};

/* in_axis value of an input dimension that no output dimension follows. */
#define SL__AXIS_WHOLE ((int8_t)-1)

/* The output dimension input dimension `dim` of `node`'s input `input`
 * follows, or SL__AXIS_WHOLE. */
int sl__node_out_dim(const struct sl__node *node, uint32_t input, uint32_t dim);

/* Node `id`, or NULL when out of range. */
struct sl__node *sl__graph_node(const sl_graph *g, uint32_t id);

/* Building blocks of the sl_graph_add_* functions (graph.c). */
sl_status sl__graph_check_new_node(const sl_graph *g, const char *name, struct sl_error *err);
sl_status sl__graph_check_input(const sl_graph *g, const char *name, uint32_t input,
                                struct sl_error *err);
sl_status sl__graph_reserve(sl_graph *g, struct sl_error *err);
void sl__node_start(struct sl__node *tmp, sl_node_kind kind, const char *name, const char *op_name);
sl_status sl__node_set_inputs(sl_graph *g, struct sl__node *tmp, size_t n, const uint32_t *inputs,
                              struct sl_error *err);
void sl__graph_commit_node(sl_graph *g, struct sl__node *tmp, uint32_t *id);
void sl__node_fini(sl_graph *g, struct sl__node *n);
void sl__graph_pop_node(sl_graph *g);
/* The node a writer with chunks `chunk_shape` reads: `input`, or a rechunk
 * "<name>.rechunk" of it added when its grid differs. */
sl_status sl__graph_input_with_chunks(sl_graph *g, const char *name, uint32_t input,
                                      const uint64_t *chunk_shape, uint32_t *out,
                                      struct sl_error *err);
/* Where an output dimension's chunk boundaries come from (graph_view.c). */
struct sl__grid_dim {
    int src;          /* dimension of the source grid whose boundaries it keeps, or -1 */
    uint64_t extent;  /* src < 0: the extent ... */
    bool per_element; /* ... in chunks of 1 element when true, else one chunk */
};

/* A grid of `rank` dimensions from `in` as `dims` say; `concat` (or NULL,
 * `concat_n` + 1 boundaries) overrides dimension `axis`.  Boundaries are
 * copied; @return SL_OK, SL_ENOMEM, SL_EOVERFLOW. */
sl_status sl__grid_from_dims(sl_graph *g, const struct sl_grid *in, uint32_t rank,
                             const struct sl__grid_dim *dims, const uint64_t *concat,
                             uint64_t concat_n, uint32_t axis, struct sl_grid *out,
                             struct sl_error *err);

/* Prefix the recorded message with `node "name": ` and return `st`. */
sl_status sl__node_fail(struct sl_error *err, const char *name, sl_status st);

/*
 * The input interval of `node`'s input `input` along the input's dimension
 * `dim` needed for output coordinates [a, b) (a < b) along the output
 * dimension it follows (sl__node_out_dim), clipped to the input's extent;
 * the whole extent when it follows none (a and b unused).  For a select's
 * concatenation axis, [a, b) must lie inside one slice (chunk boundaries
 * guarantee it).
 */
void sl__node_input_interval(const sl_graph *g, const struct sl__node *node, uint32_t input,
                             uint32_t dim, uint64_t a, uint64_t b, uint64_t *in_a, uint64_t *in_b);

/* The input region of `node`'s input `input` needed for output region `out`
 * (of the input's rank). */
void sl__node_input_region(const sl_graph *g, const struct sl__node *node, uint32_t input,
                           const struct sl_region *out, struct sl_region *in);

/* Why an edge was not fused. */
enum sl__fuse_reason {
    SL__FUSED,            /* fused */
    SL__NOFUSE_CONSUMERS, /* the producer has other consumers */
    SL__NOFUSE_MARKED,    /* a node is marked unfusable */
    SL__NOFUSE_MANY,      /* an output chunk needs several producer chunks */
    SL__NOFUSE_SHARED,    /* a producer chunk is needed by several output chunks */
    SL__NOFUSE_PUT,       /* puts produce nothing to fuse */
    SL__NOFUSE_HALO       /* a halo op's output chunk needs a margin from neighbouring chunks */
};

/* One edge of the graph and the planner's verdict on it. */
struct sl__edge {
    uint32_t producer;           /* node id */
    uint32_t consumer;           /* node id */
    uint32_t input;              /* which input of the consumer */
    enum sl__fuse_reason reason; /* SL__FUSED or why not */
    char detail[160];            /* the numbers behind the verdict */
    bool composed;               /* the producer's program is part of the consumer's
                                    (compose.c); implies fused */
    char compose_why[128];       /* between two elementwise nodes, not composed: why */
    /* Unfused edges: per dimension d, uses[d][k] counts the chunks of the
     * consumer's stage root whose evaluation reads producer chunks with
     * index k along d; a producer chunk is read prod_d uses[d][k_d] times.
     * Owned; NULL for fused edges. */
    uint64_t *uses[SL_MAX_RANK];
    /* Unfused edges: the product, over the stage root's dimensions that no
     * producer dimension follows, of the root's chunks along them (each of
     * those reads the same producer chunks); 1 when there are none. */
    uint64_t fan;
};

/*
 * A stage: nodes fused into one task per output chunk of `root`.  The fused
 * producers of a stage form a tree under its root; its unfused inputs come
 * from other stages' chunks.
 */
struct sl__stage {
    uint32_t root;             /* node whose chunks the stage's tasks produce */
    uint32_t n_nodes;          /* nodes in the stage */
    uint32_t *nodes;           /* their ids, producers before consumers; owned */
    uint32_t n_consumers;      /* unfused edges reading the root's chunks */
    uint32_t n_unfused_inputs; /* unfused edges into the stage's nodes */
    size_t task_bytes;         /* chunk buffers one task holds at once (full chunks) */
    uint32_t phase;            /* execution phase (puts whose inputs are written earlier) */
};

/* One input of a composed program: input `input` of chain member `node`,
 * read as the unfused evaluation of that member would read it. */
struct sl__program_input {
    uint32_t node;  /* the member reading it */
    uint32_t input; /* which of its inputs */
    uint32_t slot;  /* the program's input it feeds */
};

/*
 * A node's program form (compose.c): an elementwise node (expr, cast,
 * scale, clip, threshold) as one expr program computing in float64, with
 * the programs of the producers composed into it.
 */
struct sl__program {
    const sl_expr *expr; /* the program; NULL when the node has no exact program form */
    sl_expr *owned;      /* `expr` when the plan made it (op forms, compositions), else NULL */
    uint32_t n_members;  /* nodes it computes: itself and those composed into it */
    uint32_t n_inputs;   /* program inputs (sl_expr_n_inputs) */
    /* Those inputs in the order the unfused nodes would evaluate them, so
     * the first failure is the same one. */
    struct sl__program_input in[SL_EXPR_MAX_INPUTS];
    char why[96]; /* no program form (expr NULL) for an elementwise node: why */
};

/* The fusion plan of a sealed graph: a pure function of the graph. */
struct sl__fusion {
    const sl_graph *graph;    /* the graph planned (borrowed) */
    uint32_t n_nodes;         /* nodes of the graph planned */
    uint32_t n_edges;         /* every edge of the graph */
    struct sl__edge *edges;   /* owned */
    uint32_t n_stages;        /* stages, producers before consumers */
    struct sl__stage *stages; /* owned */
    uint32_t *stage_of;       /* node id -> stage index; owned */
    uint32_t *fused_to;       /* node id -> the consumer it is fused into, or UINT32_MAX; owned */
    uint32_t *fused_input;    /* node id -> which input of that consumer it is; owned */
    struct sl__program *programs; /* node id -> its program form; owned (compose.c) */
    uint32_t *composed_to;        /* node id -> the consumer whose program computes it, or
                                     UINT32_MAX; owned */
    struct sl_allocator alloc;    /* frees the arrays */
};

/* Plan `g` (sealed).  @return SL_OK, SL_ENOMEM. */
sl_status sl__fusion_plan(const sl_graph *g, const struct sl_allocator *alloc,
                          struct sl__fusion *out, struct sl_error *err);

/* How many reads chunk `coords` of stage root `producer` gets from the
 * unfused edges leaving it (its consumers' chunks that need it). */
uint64_t sl__fusion_chunk_uses(const sl_graph *g, const struct sl__fusion *f, uint32_t producer,
                               const uint64_t *coords);

/* Release a fusion plan. */
void sl__fusion_fini(struct sl__fusion *f);

/*
 * Compose chains of fused elementwise nodes of `f` into single programs
 * (compose.c): fills f->programs, f->composed_to and the edges' `composed`
 * and `compose_why`.  The stages stay as they are.  @return SL_OK,
 * SL_ENOMEM.
 */
sl_status sl__compose_plan(const sl_graph *g, struct sl__fusion *f, struct sl_error *err);

/* Release what sl__compose_plan made (safe on a zeroed plan). */
void sl__compose_fini(struct sl__fusion *f);

/* True when node `id` evaluates a composed program (it has members besides itself). */
bool sl__compose_is_top(const struct sl__fusion *f, uint32_t id);

/* Write "a + b + c" (the members of top `id`'s program, producers first) into buf. */
void sl__compose_members(const sl_graph *g, const struct sl__fusion *f, uint32_t id, char *buf,
                         size_t size);

/* One-line text of an edge verdict, e.g. "fused" or "not fused: ...". */
const char *sl__fuse_reason_text(enum sl__fuse_reason reason);

/* Write the fusion plan as text: nodes, stages, and every unfused edge with its reason. */
void sl__fusion_explain(const sl_graph *g, const struct sl__fusion *f, FILE *out);

/* Write the plan as Graphviz DOT: one cluster per stage, unfused edges dashed. */
void sl__fusion_write_dot(const sl_graph *g, const struct sl__fusion *f, FILE *out);

/* True when `a` and `b` are the same stored array (same store and path). */
bool sl__array_same(const sl_array *a, const sl_array *b);

/* Room for an array's name in messages: a store root plus a key. */
struct sl__array_name {
    char text[SL_STORE_KEY_MAX + 4096];
};

/* Array `a` as the user would name it (sl_store_name of its store and path,
 * e.g. `"in.zarr"` rather than the key ""), written into `out`; returns
 * out->text. */
const char *sl__array_name(const sl_array *a, struct sl__array_name *out);

/* ---- plans (plan.c, plan_status.c, plan_merge.c) ------------------------ */

/* Code of a chunk that has not finished in the current run. */
#define SL__CODE_PENDING 0xffu

/* The status array of one put or putter node. */
struct sl__put_state {
    uint32_t node;               /* node id */
    uint64_t n_chunks;           /* chunks of its grid */
    _Atomic uint8_t *codes;      /* sl_status per chunk (C-order linear index); owned.  Settled
                                    during a run only by sl__exec_chunk_settle (graph/exec/) */
    uint64_t n_resumed;          /* of the last run's ok chunks, those an earlier run wrote (the
                                    plan's journal held their units); the driver writes it */
    _Atomic uint64_t n_retries;  /* the last run's retried store operations of this put:
                                    reads of the chunks its stage computes, its unit
                                    writes (sl_plan_opts.retries) */
    struct sl__stats_run *stats; /* stats nodes: the accumulators of the runs; owned */
    struct sl_error *omero;      /* omero stats nodes: whether the last run wrote the group's
                                    omero metadata (code SL_OK) or why not; owned, else NULL */
};
/* The public sl_put_status shows `codes` as plain bytes once no run writes them. */
_Static_assert(sizeof(_Atomic uint8_t) == sizeof(uint8_t) &&
                   _Alignof(_Atomic uint8_t) == _Alignof(uint8_t),
               "status bytes are not plain bytes");

/*
 * Chunk `k`'s code in `ps`.  Relaxed: a status byte publishes nothing else,
 * and its readers are ordered after its writers by the run itself (results
 * are read after sl_plan_run waited for every task and writer thread; a
 * get reads a put's codes in a later phase, after that put's tasks ended).
 */
static inline uint8_t
sl__put_state_code(const struct sl__put_state *ps, uint64_t k)
{
    return atomic_load_explicit(&ps->codes[k], memory_order_relaxed);
}

/* Lists the chunks of unit `unit` (shard grid coordinates) of `a`, as
 * sl_array_iter_shard_chunks does. */
typedef sl_status sl__unit_chunks_fn(const sl_array *a, const uint64_t *unit,
                                     struct sl_array_iter *it, struct sl_error *err);

struct sl_plan {
    sl_graph *graph;               /* retained */
    struct sl_allocator alloc;     /* the graph's */
    struct sl__fusion fusion;      /* stages */
    struct sl_plan_opts opts;      /* copied; trace_path points at trace_path below */
    char *trace_path;              /* owned copy, or NULL */
    uint32_t n_puts;               /* put and putter nodes */
    struct sl__put_state *puts;    /* owned, by ascending node id */
    size_t min_budget;             /* bytes the most demanding task needs */
    uint32_t min_budget_stage;     /* ... its stage */
    struct sl_chunk_error *errors; /* owned, opts.max_errors slots */
    size_t cap_errors;             /* records in `errors`: min(max_errors, output chunks) */
    _Atomic size_t n_errors;       /* slots claimed (may pass max_errors) */
    struct sl_run_summary summary; /* of the last run */
    /* How a run lists the chunks of a put's shard that failed to be written
     * (sl_array_iter_shard_chunks).  A seam for faults, as struct
     * sl_io_table is for stores: tests replace it to make the listing fail. */
    sl__unit_chunks_fn *unit_chunks;
    sl_journal *journal; /* attached by sl_journal_open (borrowed); NULL: none */
};

/* The put state of node `node`, or NULL when it is not a put. */
struct sl__put_state *sl__plan_put(const sl_plan *plan, uint32_t node);

/*
 * Keep the message of failed chunk `linear` of `ps`: claim an error slot
 * with one atomic increment and fill it; past max_errors only the count
 * grows.  Never allocates.  Thread-safety: any thread.
 */
void sl__plan_error_add(sl_plan *plan, const struct sl__put_state *ps, uint64_t linear,
                        sl_status code, const char *text);

/* Reset every status array to pending and forget the last run's errors
 * (no run in progress). */
void sl__plan_reset(sl_plan *plan);

/* Fill plan->summary's chunk counts from the status arrays (after a run). */
void sl__plan_count(sl_plan *plan);

/* ---- statistics (plan_stats.c) ---------------------------------------------------- */

/* Make the accumulators of stats node `ps->node` (at plan creation). */
sl_status sl__plan_stats_init(sl_plan *plan, struct sl__put_state *ps, struct sl_error *err);

/* Empty them (before a run). */
void sl__plan_stats_reset(struct sl__put_state *ps);

/* Release them. */
void sl__plan_stats_fini(sl_plan *plan, struct sl__put_state *ps);

/* Fold chunk `block` into the sets it meets.  No allocation once as many
 * local accumulators exist as tasks fold at once.  Thread-safety: any. */
sl_status sl__plan_stats_fold(struct sl__put_state *ps, const struct sl_block *block,
                              struct sl_error *err);

/* ---- the end of a run (pyramid_omero.c) ------------------------------------------- */

/*
 * After a run of `plan` that ended with `run`: write the OME omero metadata
 * of every pyramid of the plan that asked for it (only when `run` is SL_OK),
 * recording each outcome for sl_plan_pyramid_omero.  Called by sl_plan_run
 * before it returns.
 * @return `run` when it failed; else SL_OK or the first write's failure,
 * in `err`.
 */
sl_status sl__pyramid_omero_commit(sl_plan *plan, sl_status run, struct sl_error *err);

/* ---- run journals (journal.c) ---------------------------------------------------- */

/* Nanoseconds on the monotonic clock. */
uint64_t sl__journal_now_ns(void);

/* The unit grid of the plan's put `put` (index in plan->puts): its shard
 * grid, its chunk grid when unsharded; n_total 0 for putters. */
const struct sl_grid *sl__journal_units(const sl_journal *j, uint32_t put);

/* Whether unit `unit` (C-order index) of put `put` was done by an earlier
 * run and is trusted.  Thread-safety: any thread (read-only during runs). */
bool sl__journal_done(const sl_journal *j, uint32_t put, uint64_t unit);

/* Record that unit `unit` of put `put` is written, every chunk of it ok.
 * Thread-safety: any thread. */
void sl__journal_record(sl_journal *j, uint32_t put, uint64_t unit);

#endif /* SL_GRAPH_INTERNAL_H */
