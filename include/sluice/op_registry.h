/* SPDX-License-Identifier: MIT */
/*
 * The registry of operations: the kernels of <sluice/ops.h> named for graph
 * files ("downsample", "cast", "scale", "clip", "threshold"), with their
 * parameters, bound to an input dtype and rank as a plain value (struct
 * sl_op) that graph nodes hold, and applied to blocks.  Built-in operations
 * are a static table; a program adds its own with sl_op_register, and
 * plugins (<sluice/plugin.h>) add theirs with the same descriptor.
 */
#ifndef SL_OP_REGISTRY_H
#define SL_OP_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/filter.h>
#include <sluice/ops.h>
#include <sluice/region.h>
#include <sluice/status.h>
#include <sluice/view.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Registry of operations                                                   */
/* ------------------------------------------------------------------------ */

/* How an operation maps input blocks to output blocks. */
typedef enum sl_op_kind {
    SL_OP_KIND_MAP,    /* elementwise: an output block needs the same region of the input */
    SL_OP_KIND_REGRID, /* an output block needs a larger input region (downsample) */
    SL_OP_KIND_HALO    /* an output block needs its own region of the input grown by a margin
                          (op->halo_lo, op->halo_hi), elements beyond the edges made up by
                          op->boundary: the neighbourhood filters */
} sl_op_kind;

/* What a parameter holds, and how a graph file writes it. */
typedef enum sl_op_param_type {
    SL_OP_PARAM_NUMBER,  /* a real number: 2, -0.5 */
    SL_OP_PARAM_DTYPE,   /* a data type name: "uint16" */
    SL_OP_PARAM_METHOD,  /* a downsample method name: "mean" */
    SL_OP_PARAM_FACTORS, /* one positive integer per dimension: [1, 2, 2] */
    SL_OP_PARAM_NUMBERS, /* one real number per dimension, or one for all: [0, 2, 2] or 2 */
    SL_OP_PARAM_MODE     /* a boundary mode name: "reflect", "nearest", "mirror", "constant",
                            "wrap" */
} sl_op_param_type;

/* One parameter of an operation. */
struct sl_op_param {
    const char *name;      /* as written in graph files */
    sl_op_param_type type; /* what it holds */
    bool required;         /* must be given; otherwise `doc` says the default */
    const char *doc;       /* one line: meaning and default */
};

/* The most parameters any operation has. */
#define SL_OP_MAX_PARAMS 8

/* The longest operation or parameter name, in bytes. */
#define SL_OP_NAME_MAX 32

/* The most operations sl_op_register adds to a process's registry. */
#define SL_OP_MAX_ADDED 256

/* Bytes of struct sl_op's `u.state`, where an added operation's bind keeps
 * what it computes from the parameters. */
#define SL_OP_STATE_BYTES 256

/* A parameter's value; the field that `type` names is the one that counts. */
struct sl_op_value {
    bool set;                      /* given; unset parameters take their default */
    double number;                 /* SL_OP_PARAM_NUMBER */
    sl_dtype dtype;                /* SL_OP_PARAM_DTYPE */
    sl_downsample_method method;   /* SL_OP_PARAM_METHOD */
    uint32_t n_factors;            /* SL_OP_PARAM_FACTORS: how many */
    uint64_t factors[SL_MAX_RANK]; /* SL_OP_PARAM_FACTORS: the values */
    uint32_t n_numbers;            /* SL_OP_PARAM_NUMBERS: how many (1: the same for every
                                      dimension) */
    double numbers[SL_MAX_RANK];   /* SL_OP_PARAM_NUMBERS: the values */
    sl_boundary mode;              /* SL_OP_PARAM_MODE */
};

/* Values of one operation's parameters, indexed like its `params`; zero it
 * to start with every parameter unset. */
struct sl_op_args {
    struct sl_op_value value[SL_OP_MAX_PARAMS]; /* value[i] is for params[i] */
};

/* Parameters of the map operations, in the form the kernels take them. */
struct sl_op_scale {
    double scale;  /* multiplier */
    double offset; /* added after multiplying */
};
struct sl_op_clip {
    double lo; /* lower bound; -inf for none */
    double hi; /* upper bound; +inf for none */
};
struct sl_op_threshold {
    double threshold; /* strictly above it gives `value` */
    double value;     /* the output for elements above the threshold */
};

struct sl_op_desc;

/*
 * An operation bound to its parameters, input dtype and rank: what a graph
 * node holds.  A plain value: copy it freely; it owns nothing.
 */
struct sl_op {
    const struct sl_op_desc *desc; /* static; never NULL once bound */
    sl_dtype in_dtype;             /* dtype of input blocks */
    sl_dtype out_dtype;            /* dtype of output blocks */
    uint32_t rank;                 /* rank of both */
    struct sl_op_args args;        /* the parameters as given, for describing the op */
    /* SL_OP_KIND_HALO: the margin an output block needs per dimension,
     * before and after it, and how elements beyond the edges are made up
     * (set by bind; zero for other kinds). */
    uint64_t halo_lo[SL_MAX_RANK];
    uint64_t halo_hi[SL_MAX_RANK];
    sl_boundary boundary;
    /* The parameters, checked, defaults applied; the member for desc's
     * operation counts. */
    union {
        struct sl_downsample_params downsample; /* "downsample" */
        struct sl_op_scale scale;               /* "scale" */
        struct sl_op_clip clip;                 /* "clip" */
        struct sl_op_threshold threshold;       /* "threshold" */
        struct sl_filter_params filter;         /* the neighbourhood filters */
        /* Operations added with sl_op_register (plugins): their own
         * struct of at most SL_OP_STATE_BYTES, copied with the op (so
         * plain values, no pointers to free), cast from `state`. */
        uint64_t state[SL_OP_STATE_BYTES / sizeof(uint64_t)];
    } u;
};

/*
 * An operation: one row of the registry.  Built-in rows are static; added
 * ones (sl_op_register, plugins) are copied into the registry, and what
 * they point to (names, summary, params, functions) is retained: it must
 * stay valid for the rest of the process.
 *
 * What each kind's bind must fill besides `op->out_dtype` (sl_op_bind
 * checks it):
 * - SL_OP_KIND_MAP: nothing; `apply` gets blocks of equal shape.
 * - SL_OP_KIND_REGRID: `op->u.downsample.rank` (= rank) and `.factor[d]`
 *   (>= 1): each output element is computed from its block of factor[d]
 *   input elements (clipped at the end) and from nothing else, so the
 *   executor may apply the op to each input chunk's part of an output
 *   block in turn; `apply` gets an input block and the output block of
 *   ceil(in / factor) elements.  Added regrid ops get no scratch.
 * - SL_OP_KIND_HALO: `op->halo_lo`, `op->halo_hi` and `op->boundary`;
 *   `apply_at` does the work (`apply` may be NULL), with `scratch_bytes`
 *   (may be NULL) sizing its scratch.
 * Kernels report failures through `err` (sl_error_set); in a graph run that
 * fails the chunk with SL_EFUNC and the kernel's message.
 */
struct sl_op_desc {
    const char *name;                 /* "downsample", "cast", ...: 1 to SL_OP_NAME_MAX
                                         letters, digits and '_', a letter first */
    sl_op_kind kind;                  /* map, regrid or halo */
    const char *summary;              /* one line for listings */
    uint32_t n_params;                /* entries in `params`, <= SL_OP_MAX_PARAMS */
    const struct sl_op_param *params; /* the parameters, in a fixed order */
    /* Check `args` for inputs of `in_dtype` and `rank` and fill `op`
     * (sl_op_bind calls this after the generic checks). */
    sl_status (*bind)(struct sl_op *op, const struct sl_op_args *args, sl_dtype in_dtype,
                      uint32_t rank, struct sl_error *err);
    /* Apply a bound op to a block (sl_op_apply calls this after checking
     * the views against the op). */
    sl_status (*apply)(const struct sl_op *op, const struct sl_view *in, const struct sl_view *out,
                       void *scratch, size_t scratch_bytes, struct sl_error *err);
    /* SL_OP_KIND_HALO: scratch bytes apply_at needs for output blocks no
     * larger than `out_shape` (NULL: none). */
    sl_status (*scratch_bytes)(const struct sl_op *op, const uint64_t *out_shape, size_t *bytes,
                               struct sl_error *err);
    /* SL_OP_KIND_HALO (NULL for other kinds): compute `out`, the part of the
     * result for an input array of `shape` that starts at `out_start`, from
     * `in`, the part of the input that starts at `in_start` and holds
     * sl_op_input_region's region (sl_op_apply_at calls this after checking
     * the views). */
    sl_status (*apply_at)(const struct sl_op *op, const uint64_t *shape, const struct sl_view *in,
                          const uint64_t *in_start, const struct sl_view *out,
                          const uint64_t *out_start, void *scratch, size_t scratch_bytes,
                          struct sl_error *err);
};

/**
 * Number of operations: the built-in ones and those added so far.
 * Thread-safety: any thread.
 */
SL_API uint32_t sl_op_count(void);

/**
 * The `i`-th operation: the built-in ones in name order, then the added
 * ones in the order they were added; NULL when `i` >= sl_op_count().
 * Thread-safety: any thread.
 */
SL_API const struct sl_op_desc *sl_op_at(uint32_t i);

/**
 * True when `d` is one of the built-in operations (not added).
 * Thread-safety: any thread.
 */
SL_API bool sl_op_is_builtin(const struct sl_op_desc *d);

/**
 * Look up an operation, built-in or added, by name.
 * @return SL_OK, or SL_ENOTFOUND with `unknown op "dwnsample"; known:
 * cast, clip, downsample, scale, threshold`.
 * Thread-safety: any thread, also while another thread adds operations.
 */
SL_API SL_NODISCARD sl_status sl_op_lookup(const char *name, const struct sl_op_desc **out,
                                           struct sl_error *err);

/**
 * Check descriptor `d` as sl_op_register does, without adding it: a name of
 * 1 to SL_OP_NAME_MAX letters, digits and '_' (a letter first) that is no
 * other kind of graph file node ("get", "expr", ...); a known kind; a
 * summary; at most SL_OP_MAX_PARAMS parameters, each with a known type, a
 * doc and a name like an op's that is neither repeated nor a field every
 * op node has ("op", "id", "input", "chunks", "comment"); `bind`; `apply`
 * for map and regrid ops, `apply_at` for halo ops, and `scratch_bytes`
 * only with them.
 * @return SL_OK, or SL_EINVAL saying what is wrong (naming the op, and the
 * parameter by index and name).
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_op_desc_check(const struct sl_op_desc *d, struct sl_error *err);

/**
 * Add operation `d` to the process's registry, so that sl_op_lookup, and
 * so graph files and sl_graph_add_op, find it by name.  `*d` is copied;
 * what it points to is retained for the rest of the process (static
 * storage).  Operations are never removed.  Add them before loading the
 * graphs that name them.
 * @return SL_OK; SL_EINVAL (sl_op_desc_check's refusals); SL_EEXIST (a
 * built-in or added operation has that name: "op \"cast\" exists: a
 * built-in operation"); SL_EOVERFLOW (SL_OP_MAX_ADDED already added).  On
 * failure the registry is unchanged.
 * Thread-safety: any thread; concurrent calls are serialized, and lookups
 * on other threads see an op only once it is complete.
 */
SL_API SL_NODISCARD sl_status sl_op_register(const struct sl_op_desc *d, struct sl_error *err);

/**
 * Write the operation names, comma separated, into `buf`.
 * @return the length the full text needs, as snprintf does.
 * Thread-safety: any thread.
 */
SL_API size_t sl_op_names(char *buf, size_t size);

/**
 * Index of parameter `name` of `d`, or -1 when it has none by that name.
 * Thread-safety: any thread.
 */
SL_API int sl_op_param_index(const struct sl_op_desc *d, const char *name);

/**
 * Set parameter `name` of `d` in `args` from a number, a string (dtype,
 * method and boundary mode names), a list of numbers (1 entry: the same
 * for every dimension) or a list of factors, as a graph loader reads them.
 * @return SL_OK; SL_EINVAL naming the operation and parameter when `d` has
 * no such parameter (listing those it has), when the parameter takes
 * another kind of value, or when a name does not parse (listing valid
 * names); SL_EUNSUPPORTED for too many factors.
 * Thread-safety: one thread per `args` at a time.
 */
SL_API SL_NODISCARD sl_status sl_op_args_set_number(struct sl_op_args *args,
                                                    const struct sl_op_desc *d, const char *name,
                                                    double value, struct sl_error *err);
SL_API SL_NODISCARD sl_status sl_op_args_set_string(struct sl_op_args *args,
                                                    const struct sl_op_desc *d, const char *name,
                                                    const char *value, struct sl_error *err);
SL_API SL_NODISCARD sl_status sl_op_args_set_numbers(struct sl_op_args *args,
                                                     const struct sl_op_desc *d, const char *name,
                                                     uint32_t n, const double *values,
                                                     struct sl_error *err);
SL_API SL_NODISCARD sl_status sl_op_args_set_factors(struct sl_op_args *args,
                                                     const struct sl_op_desc *d, const char *name,
                                                     uint32_t n, const uint64_t *factors,
                                                     struct sl_error *err);

/**
 * Bind `d` to `args` for input blocks of `in_dtype` and `rank`: check every
 * parameter against the input and compute the output dtype.
 * @return SL_OK; SL_EINVAL (a required parameter missing, a value out of
 * range) or SL_EUNSUPPORTED (dtype), naming the operation, parameter and
 * value.  On failure `op` is untouched.
 * Thread-safety: any thread; one at a time per `op`.
 */
SL_API SL_NODISCARD sl_status sl_op_bind(struct sl_op *op, const struct sl_op_desc *d,
                                         const struct sl_op_args *args, sl_dtype in_dtype,
                                         uint32_t rank, struct sl_error *err);

/**
 * Output block shape for an input block of `in_shape` (op->rank entries).
 * Thread-safety: any thread.
 */
SL_API void sl_op_out_shape(const struct sl_op *op, const uint64_t *in_shape, uint64_t *out_shape);

/**
 * The input region (of an array of `in_shape`) that output region
 * `out_region` depends on: the same region for map ops, the scaled and
 * clipped one for regrid ops, for halo ops the region grown by the op's
 * halo, per dimension as sl_op_halo_interval says.  @return SL_OK, or
 * SL_EBOUNDS when
 * `out_region` leaves the output shape (naming both), SL_EINVAL on a rank
 * mismatch, as sl_downsample_input_region.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_op_input_region(const struct sl_op *op, const uint64_t *in_shape,
                                                 const struct sl_region *out_region,
                                                 struct sl_region *in_region, struct sl_error *err);

/**
 * Scratch bytes sl_op_apply needs for input blocks no larger than
 * `in_shape` (NULL: any block); for halo ops, sl_op_apply_at's need for
 * output blocks no larger than `in_shape` (NULL refused).  @return SL_OK or SL_EOVERFLOW.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_op_scratch_bytes(const struct sl_op *op, const uint64_t *in_shape,
                                                  size_t *bytes, struct sl_error *err);

/**
 * Apply `op` to block `in`, writing `out`.  Checks that the views have the
 * op's dtypes and rank and matching shapes, then runs the kernel.
 * @return SL_OK; SL_EINVAL naming the operation and the mismatch; or what
 * the kernel returns: SL_EINVAL, SL_EUNSUPPORTED or SL_EOVERFLOW.
 * Thread-safety: any thread, on distinct output views and scratch.
 */
SL_API SL_NODISCARD sl_status sl_op_apply(const struct sl_op *op, const struct sl_view *in,
                                          const struct sl_view *out, void *scratch,
                                          size_t scratch_bytes, struct sl_error *err);

/** Largest extent and halo sl_op_halo_interval maps through the boundary mode. */
#define SL_OP_HALO_EXTENT_MAX ((uint64_t)1 << 62)

/**
 * The input interval halo op `op` needs along dimension `d` (of `extent`)
 * for output interval [a, b): the smallest interval that holds every
 * element the op's boundary maps the grown interval [a - lo, b + hi) to.
 * Inside the array that is the grown interval, clipped; beyond an edge,
 * `nearest` adds the edge element, `reflect` and `mirror` the elements the
 * edge mirrors (for `mirror`, one further: its edge is not repeated; an
 * axis shorter than the margin is taken whole), `wrap` the elements at the
 * opposite edge, `constant` nothing.  Extents or halos above
 * SL_OP_HALO_EXTENT_MAX (which no halo op accepts) give the grown interval
 * clipped.
 * Thread-safety: any thread.
 */
SL_API void sl_op_halo_interval(const struct sl_op *op, uint32_t d, uint64_t extent, uint64_t a,
                                uint64_t b, uint64_t *in_a, uint64_t *in_b);

/**
 * Apply halo op `op` (SL_OP_KIND_HALO) for an input array of `shape`:
 * write `out`, the result's part starting at `out_start`, from `in`, the
 * input's part starting at `in_start`, which must hold the region
 * sl_op_input_region gives for `out`'s region (more is fine).  Checks the
 * views as sl_op_apply does.
 * @return SL_OK; SL_EINVAL naming the operation and the mismatch (an op of
 * another kind, an input region that misses what the output needs); or
 * what the kernel returns.
 * Thread-safety: any thread, on distinct output views and scratch.
 */
SL_API SL_NODISCARD sl_status sl_op_apply_at(const struct sl_op *op, const uint64_t *shape,
                                             const struct sl_view *in, const uint64_t *in_start,
                                             const struct sl_view *out, const uint64_t *out_start,
                                             void *scratch, size_t scratch_bytes,
                                             struct sl_error *err);

/**
 * Describe a bound op as `downsample(method=mean, factors=[1, 2, 2]) uint16 -> uint16`
 * for plans and error messages.  @return the length the full text needs.
 * Thread-safety: any thread.
 */
SL_API size_t sl_op_format(const struct sl_op *op, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* SL_OP_REGISTRY_H */
