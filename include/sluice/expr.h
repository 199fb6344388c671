/* SPDX-License-Identifier: MIT */
/*
 * Arithmetic expressions over a block's inputs: `(raw - dark) / max(flat, 1)`
 * compiled once into a program of tile instructions, then evaluated on any
 * number of blocks, element by element with numpy's semantics in a working
 * type (float64 or float32), the result stored by sluice's cast rules.
 * ops/README.md ("Expressions") gives the grammar, the functions, the
 * semantics of every operator (NaN, signed zeros, division by zero) and the
 * error messages.
 *
 * A program is immutable once compiled: any number of threads may evaluate
 * it at once.  Evaluation is pure: no threads, no I/O, no allocation, no
 * scratch; it uses at most SL_EXPR_STACK_BYTES of stack.
 */
#ifndef SL_EXPR_H
#define SL_EXPR_H

#include <stdbool.h>
#include <stddef.h>

#include <sluice/alloc.h>
#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/status.h>
#include <sluice/view.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL_EXPR_MAX_INPUTS 8            /* inputs a program may have */
#define SL_EXPR_TEXT_MAX 4096           /* longest expression text accepted, in bytes */
#define SL_EXPR_NAME_MAX 64             /* input names have fewer bytes than this */
#define SL_EXPR_MAX_REGS 16             /* tile registers a program may use (inputs included) */
#define SL_EXPR_STACK_BYTES (48 * 1024) /* most stack one evaluation uses */

/* A compiled program: immutable, shareable across threads. */
typedef struct sl_expr sl_expr;

/**
 * Compile `text` (NUL-terminated, at most SL_EXPR_TEXT_MAX bytes) over
 * `n_inputs` inputs named `names[i]` of dtypes `in_dtypes[i]`, computing in
 * `compute`.  Names are identifiers ([A-Za-z_][A-Za-z0-9_]*) shorter than
 * SL_EXPR_NAME_MAX bytes, distinct, and neither a function name (dtype
 * names included) nor a keyword (and, or, not, nan, inf).
 *
 * @param text      borrowed for the call.
 * @param names     borrowed; the program keeps copies.  May be NULL when
 *                  `n_inputs` is 0.
 * @param in_dtypes borrowed: bool, integers, float32 or float64.
 * @param compute   SL_DTYPE_F64 or SL_DTYPE_F32: the working type.
 * @param alloc     copied; the program's memory comes from it (NULL:
 *                  sl_allocator_default()) and must outlive the program.
 * @param out       receives the program, freed with sl_expr_free; set to
 *                  NULL on failure.
 * @return SL_OK; SL_EPARSE for a syntax or name error in `text`, with
 * `err->column` (1-based byte column) and a message starting "column N: ",
 * e.g. `column 8: unknown name "drak" (inputs: raw, dark, flat)`, and for
 * text longer than SL_EXPR_TEXT_MAX or needing more than SL_EXPR_MAX_REGS
 * registers; SL_EINVAL (NULL `text` or `out`, more than
 * SL_EXPR_MAX_INPUTS inputs, a bad or repeated name, naming the input, a
 * `compute` other than float32/float64, an invalid dtype);
 * SL_EUNSUPPORTED (an input of dtype float16 or complex, naming it);
 * SL_ENOMEM.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_expr_compile(const char *text, size_t n_inputs,
                                              const char *const *names, const sl_dtype *in_dtypes,
                                              sl_dtype compute, const struct sl_allocator *alloc,
                                              sl_expr **out, struct sl_error *err);

/**
 * Free a program and everything it owns, through its allocator.  NULL is a
 * no-op.
 * Thread-safety: any thread, once no other thread uses the program.
 */
SL_API void sl_expr_free(sl_expr *e);

/** The number of inputs of `e` (0 for NULL).  Thread-safety: any thread. */
SL_API size_t sl_expr_n_inputs(const sl_expr *e);

/**
 * Whether input `i` appears in the program after constant folding (false
 * for `i` out of range or `e` NULL).  Unused inputs may be passed with
 * data NULL to sl_expr_eval.
 * Thread-safety: any thread.
 */
SL_API bool sl_expr_uses_input(const sl_expr *e, size_t i);

/**
 * The dtype input `i` was compiled for (SL_DTYPE_COUNT_ when out of range).
 * Thread-safety: any thread.
 */
SL_API sl_dtype sl_expr_input_dtype(const sl_expr *e, size_t i);

/**
 * The name of input `i`, owned by the program (NULL when out of range).
 * Thread-safety: any thread.
 */
SL_API const char *sl_expr_input_name(const sl_expr *e, size_t i);

/** The working type of `e`: SL_DTYPE_F64 or SL_DTYPE_F32.  Thread-safety: any thread. */
SL_API sl_dtype sl_expr_compute_dtype(const sl_expr *e);

/**
 * Write the canonical text of the program: fully parenthesised, constants
 * folded and printed in the shortest form that reads back to the same
 * working-type value, e.g. "((raw - dark) / max(flat, 1))".  Compiling the
 * text again with the same inputs and working type gives a program with the
 * same text, which computes the same thing: equal texts, input dtypes and
 * working types mean equal results.  (The parentheses can take the text of
 * a long chain such as a+b+c+... past SL_EXPR_TEXT_MAX or the nesting
 * limit; such a text identifies its program but does not compile.)
 * A composed program's text shows its shared inner part at every use.
 * At most `size` bytes are written,
 * NUL-terminated when `size` > 0 (`buf` may be NULL when `size` is 0).
 * @return the length of the whole text, excluding the NUL (as snprintf).
 * Thread-safety: any thread.
 */
SL_API size_t sl_expr_format(const sl_expr *e, char *buf, size_t size);

/**
 * Evaluate `e` into every element of `out`.  `inputs[i]` (n_inputs views)
 * has the dtype input i was compiled for and exactly `out`'s rank and shape;
 * strides are arbitrary (0 broadcasts, negative reverses).  Inputs the
 * program does not use may have data NULL (their dtype and shape are not
 * checked).  `out` may be any of bool, integers, float32, float64; the
 * working-type result is stored by the cast rules (ops/README.md: integers
 * round half to even then saturate, NaN gives 0; bool is nonzero, NaN
 * true).  `out` may be the very same view as an input (in place), but must
 * not otherwise overlap a used input.
 *
 * No allocation and no scratch: evaluation runs over tiles on the stack
 * (at most SL_EXPR_STACK_BYTES).
 * @param inputs borrowed, read only; may be NULL when the program has no inputs.
 * @param out    borrowed; only its elements are written.
 * @return SL_OK; SL_EINVAL (NULL arguments, an input whose dtype or shape
 * differs, naming the input's index and name, the dimension and both
 * extents; overlap); SL_EUNSUPPORTED (an output of dtype float16 or
 * complex); or what sl_view_check returns for a bad view.  On failure
 * `out` is untouched.
 * Thread-safety: any number of threads may evaluate one program at once,
 * on distinct outputs.
 */
SL_API SL_NODISCARD sl_status sl_expr_eval(const sl_expr *e, const struct sl_view *inputs,
                                           struct sl_view *out, struct sl_error *err);

/**
 * A new program computing `outer` with its input `slot` fed by `inner`'s
 * result converted to dtype `via` by the cast rules, exactly as storing
 * inner's result to a `via` array and loading it back would (through a
 * float dtype the result is rounded to that dtype only: through the working
 * type's own dtype nothing changes).  This fuses a chain such as
 * expr -> cast(uint8) -> expr into one program.
 *
 * Inputs of the result, in order: inner's inputs 0 .. n_i - 1, then outer's
 * inputs other than `slot`, in their order (outer input j lands at
 * n_i + j for j < slot and n_i + j - 1 for j > slot).  Names are kept; an
 * outer name equal to an earlier one gets "_2" appended (then "_3", ...) so
 * the names stay distinct.  The canonical text shows the conversion as a
 * call of the dtype's name, e.g. "uint8((a * 2))".
 *
 * @param outer, inner borrowed, not modified; neither may be NULL.
 * @param via    a kernel dtype (bool, integers, float32, float64) equal to
 *               the dtype outer's input `slot` was compiled for.
 * @param alloc  as sl_expr_compile.
 * @param out    receives the new program (sl_expr_free); NULL on failure.
 * @return SL_OK; SL_EINVAL (NULL arguments, `slot` out of range, `via`
 * differing from that input's dtype or not a kernel dtype, different
 * working types, more than SL_EXPR_MAX_INPUTS inputs together, or more
 * than SL_EXPR_MAX_REGS registers needed); SL_ENOMEM.
 * Thread-safety: any thread.
 */
SL_API SL_NODISCARD sl_status sl_expr_compose(const sl_expr *outer, size_t slot,
                                              const sl_expr *inner, sl_dtype via,
                                              const struct sl_allocator *alloc, sl_expr **out,
                                              struct sl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SL_EXPR_H */
