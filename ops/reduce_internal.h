/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the reductions (include/sluice/reduce.h), open to
 * their tests: the normalized plan of one call, the typed steps of one
 * method and dtype, and the two drivers that walk a plan with them.
 *
 * reduce.c checks calls and builds plans; reduce_drive.c walks them;
 * reduce_kernels.c generates the typed steps from SL_DTYPE_MAP.
 */
#ifndef SL_REDUCE_INTERNAL_H
#define SL_REDUCE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <sluice/reduce.h>

#include "ops_internal.h"

/* Bytes of accumulators per tile, and wide results finished at once: a
 * tile holds 12 KiB / sizeof(accumulator) outputs (6144 for uint16 max,
 * whose input rows are then 12 KiB long, which the prefetcher follows;
 * 512 for means), finished 512 at a time. */
#define SL__RD_TILE_BYTES 12288
#define SL__RD_TILE 512

/* Largest accumulator and state record, in bytes. */
#define SL__RD_ACC_MAX 24

/*
 * One call after checking and normalization.  Dimensions of extent 1 are
 * dropped, the rest are ordered by input stride (largest first) and merged
 * where contiguous, then split by role: kept dimensions walked one output
 * at a time (`outer`), the innermost kept one walked in tiles (`j`),
 * reduced ones walked row by row (`red`) and, when the innermost dimension
 * of all is reduced, that one inside each row step (`i`).  Steps are in
 * bytes; `out` is the result or state view (its words dimension apart).
 */
struct sl__rd_plan {
    uint32_t n_outer;                  /* kept dimensions other than j */
    uint64_t outer_ext[SL_MAX_RANK];   /* their extents */
    ptrdiff_t outer_in[SL_MAX_RANK];   /* their input steps */
    ptrdiff_t outer_out[SL_MAX_RANK];  /* their output steps */
    uint64_t j_ext;                    /* the tiled kept dimension; 1 when none */
    ptrdiff_t j_in, j_out;             /* its input and output steps */
    uint32_t n_red;                    /* reduced dimensions walked row by row */
    uint64_t red_ext[SL_MAX_RANK + 1]; /* their extents (one spare for the box walk) */
    ptrdiff_t red_in[SL_MAX_RANK + 1]; /* their input steps */
    uint64_t i_ext;                    /* reduced inside a row step; 1 when none */
    ptrdiff_t i_in;                    /* its input step */
    uint64_t count;                    /* inputs per output: the reduced extents' product */
    const unsigned char *in;           /* input (or partial states) at index 0 */
    unsigned char *out;                /* output (or state) at index 0 */
};

/* What finishing needs beyond the state: numpy's ddof, and std or var. */
struct sl__rd_ctx {
    double ddof; /* var, std: the divisor is max(count - ddof, 0) */
    bool sqrt;   /* std: the square root of var */
};

/* Set the first n accumulators of a tile to the empty reduction. */
typedef void sl__rd_init_fn(void *acc, size_t n);
/* Fold inputs into accumulators j < n_j: element (j, i) at
 * x + j * js + i * is, for i < n_i. */
typedef void sl__rd_row_fn(void *acc, const unsigned char *x, ptrdiff_t js, size_t n_j,
                           ptrdiff_t is, uint64_t n_i);
/* The results of n accumulators that each folded `count` inputs, into a
 * tile of the kernel's wide type. */
typedef void sl__rd_final_fn(void *wide, const void *acc, size_t n, uint64_t count,
                             const struct sl__rd_ctx *ctx);
/* Merge (fold) or write (save) n accumulators that each folded `count`
 * inputs into state records `step` bytes apart. */
typedef void sl__rd_state_fn(unsigned char *state, ptrdiff_t step, const void *acc, size_t n,
                             uint64_t count);
/* Merge n state records `step` bytes apart into a tile of records. */
typedef void sl__rd_merge_fn(void *tile, const unsigned char *from, ptrdiff_t step, size_t n);
/* The results of a tile of n state records, into a tile of the wide type. */
typedef void sl__rd_result_fn(void *wide, const void *tile, size_t n, const struct sl__rd_ctx *ctx);
/* Index of the first of n records that saw no input, n when none. */
typedef size_t sl__rd_unseen_fn(const void *tile, size_t n);

/* The typed steps of one method on one input dtype. */
struct sl__rd_kernel {
    enum sl__ew_kind kind;    /* wide type of the results (before the cast rules) */
    uint32_t words;           /* uint64 words per state record */
    uint32_t acc_bytes;       /* bytes per accumulator */
    sl__rd_init_fn *init;     /* empty accumulators */
    sl__rd_row_fn *row;       /* fold input rows */
    sl__rd_final_fn *final;   /* direct results */
    sl__rd_state_fn *fold;    /* accumulators merged into states */
    sl__rd_state_fn *save;    /* accumulators written as states */
    sl__rd_merge_fn *merge;   /* states merged */
    sl__rd_result_fn *result; /* results of states */
    sl__rd_unseen_fn *unseen; /* min and max: records that saw nothing; NULL otherwise */
};

/* The kernel of method `m` on dtype `dt`; NULL when there is none (float16,
 * complex, invalid values). */
const struct sl__rd_kernel *sl__rd_kernel_for(sl_reduce_method m, sl_dtype dt);

/* What the drivers do with a plan. */
enum sl__rd_mode {
    SL__RD_DIRECT, /* inputs -> results stored into out (dtype `out_dtype`) */
    SL__RD_ADD,    /* inputs -> folded into the states at out */
    SL__RD_MERGE,  /* states -> merged and written as states at out */
    SL__RD_FINISH, /* states -> merged, results stored into out */
    SL__RD_CHECK,  /* states -> merged; fails when a record saw nothing */
};

/*
 * Walk plan `pl` with kernel `k`.  DIRECT and ADD read input elements;
 * MERGE, FINISH and CHECK read state records (the plan then has i_ext 1).
 * @return true, or false for CHECK when some output saw no input.
 */
bool sl__rd_drive(const struct sl__rd_plan *pl, const struct sl__rd_kernel *k,
                  enum sl__rd_mode mode, sl_dtype out_dtype, const struct sl__rd_ctx *ctx);

#endif /* SL_REDUCE_INTERNAL_H */
