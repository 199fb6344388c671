/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the expression compiler (expr_parse.c,
 * expr_compile.c, expr_format.c, expr_compose.c) and its tile evaluator
 * (expr_eval.c), open to the tests: the operator list, the syntax tree the
 * parser builds and the program keeps, and the instructions the evaluator
 * runs.
 *
 * DESIGN: text -> tree (parse) -> folded tree -> linear program (compile).
 * The tree stays in the program, so formatting and composing work on trees
 * and every program, composed or not, comes from the one code generator.
 * Nodes are stored children first: a node's arguments have lower indices,
 * so one pass in index order sees arguments before their users.
 * Instructions write a register distinct from the ones they read, so every
 * kernel loop can take its pointers `restrict`.
 */
#ifndef SL_EXPR_INTERNAL_H
#define SL_EXPR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sluice/expr.h>

#include "ops_internal.h"

/* Elements of T per tile register: 2 KiB per register. */
#define SL__EXPR_TILE_BYTES 2048
/* Parentheses and operators nested deeper than this are refused, which
 * bounds the parser's recursion. */
#define SL__EXPR_MAX_DEPTH 100

/* How an operator is written. */
enum sl__expr_syntax {
    SL__EXPR_INFIX,  /* "(a op b)" */
    SL__EXPR_PREFIX, /* "(op a)" */
    SL__EXPR_CALL,   /* "name(a, b, c)" */
    SL__EXPR_HIDDEN  /* instructions only, never in a tree */
};

/* Every operator, function and instruction: enum, text, arguments, syntax. */
/* clang-format off */
#define SL__EXPR_OP_MAP(X)                 \
    X(ADD,      "+",        2, INFIX)      \
    X(SUB,      "-",        2, INFIX)      \
    X(MUL,      "*",        2, INFIX)      \
    X(DIV,      "/",        2, INFIX)      \
    X(MOD,      "%",        2, INFIX)      \
    X(POW,      "**",       2, INFIX)      \
    X(LT,       "<",        2, INFIX)      \
    X(LE,       "<=",       2, INFIX)      \
    X(GT,       ">",        2, INFIX)      \
    X(GE,       ">=",       2, INFIX)      \
    X(EQ,       "==",       2, INFIX)      \
    X(NE,       "!=",       2, INFIX)      \
    X(AND,      "and",      2, INFIX)      \
    X(OR,       "or",       2, INFIX)      \
    X(MIN,      "min",      2, CALL)       \
    X(MAX,      "max",      2, CALL)       \
    X(NEG,      "-",        1, PREFIX)     \
    X(NOT,      "not",      1, PREFIX)     \
    X(ABS,      "abs",      1, CALL)       \
    X(SQRT,     "sqrt",     1, CALL)       \
    X(EXP,      "exp",      1, CALL)       \
    X(EXPM1,    "expm1",    1, CALL)       \
    X(LOG,      "log",      1, CALL)       \
    X(LOG1P,    "log1p",    1, CALL)       \
    X(LOG10,    "log10",    1, CALL)       \
    X(LOG2,     "log2",     1, CALL)       \
    X(SIN,      "sin",      1, CALL)       \
    X(COS,      "cos",      1, CALL)       \
    X(TAN,      "tan",      1, CALL)       \
    X(FLOOR,    "floor",    1, CALL)       \
    X(CEIL,     "ceil",     1, CALL)       \
    X(ROUND,    "round",    1, CALL)       \
    X(TRUNC,    "trunc",    1, CALL)       \
    X(SIGN,     "sign",     1, CALL)       \
    X(ISNAN,    "isnan",    1, CALL)       \
    X(ISFINITE, "isfinite", 1, CALL)       \
    X(CLIP,     "clip",     3, CALL)       \
    X(WHERE,    "where",    3, CALL)       \
    X(CAST,     "",         1, CALL)       \
    X(FILL,     "",         1, HIDDEN)     \
    X(COPY,     "",         1, HIDDEN)
/* clang-format on */

enum sl__expr_op {
#define SL__EXPR_OP_ENUM_(NAME, text, arity, syntax) SL__EXPR_##NAME,
    SL__EXPR_OP_MAP(SL__EXPR_OP_ENUM_) /* SL__EXPR_ADD, ... */
#undef SL__EXPR_OP_ENUM_
    SL__EXPR_OP_COUNT_
};

/* What an operator is, from SL__EXPR_OP_MAP. */
struct sl__expr_op_info {
    const char *text;            /* symbol or function name ("" for CAST: the dtype's name) */
    uint8_t arity;               /* arguments */
    enum sl__expr_syntax syntax; /* how it is written */
};
extern const struct sl__expr_op_info sl__expr_ops[SL__EXPR_OP_COUNT_];

/* What a tree node is. */
enum sl__expr_kind {
    SL__EXPR_NUM,   /* a constant */
    SL__EXPR_INPUT, /* input `input` */
    SL__EXPR_APPLY  /* operator `op` applied to `arg[0 .. arity)` */
};

/* One node of a syntax tree. */
struct sl__expr_node {
    uint8_t kind;   /* enum sl__expr_kind */
    uint8_t op;     /* enum sl__expr_op, for SL__EXPR_APPLY */
    uint8_t dtype;  /* CAST: the dtype converted through */
    uint8_t input;  /* SL__EXPR_INPUT: the input's index */
    int32_t column; /* 1-based column of the token it came from (0: none) */
    int32_t arg[3]; /* indices of the arguments, all below this node's */
    double value;   /* SL__EXPR_NUM: the value, already in the working type */
};

/* A tree under construction: nodes in a caller-sized array. */
struct sl__expr_tree {
    struct sl__expr_node *node; /* `cap` nodes */
    uint32_t n_nodes;           /* nodes in use */
    uint32_t cap;               /* room */
    int32_t root;               /* index of the result's node */
};

/* One instruction: dst = op(arg...), an argument being register arg[i] or,
 * when bit i of `konst` is set, the constant k[i]. */
struct sl__expr_ins {
    uint8_t op;     /* enum sl__expr_op (never CLIP, which becomes MAX then MIN) */
    uint8_t konst;  /* bit i: argument i is the constant k[i] */
    uint8_t dst;    /* register written; never one of the registers read */
    uint8_t dtype;  /* CAST: the dtype converted through */
    uint8_t arg[3]; /* registers read */
    double k[3];    /* constants, exact values of the working type */
};

/* A compiled program, one allocation. */
struct sl_expr {
    struct sl_allocator alloc;             /* where this block came from */
    size_t bytes;                          /* its size */
    sl_dtype compute;                      /* SL_DTYPE_F32 or SL_DTYPE_F64 */
    uint32_t n_inputs;                     /* <= SL_EXPR_MAX_INPUTS */
    uint32_t used;                         /* bit i: input i is read */
    sl_dtype in_dtype[SL_EXPR_MAX_INPUTS]; /* dtype of each input */
    const char *name[SL_EXPR_MAX_INPUTS];  /* names, inside this block */
    uint8_t input_reg[SL_EXPR_MAX_INPUTS]; /* register of each used input */
    uint32_t n_regs;                       /* registers the program uses */
    uint32_t n_ins;                        /* instructions, >= 1 */
    const struct sl__expr_ins *ins;        /* inside this block */
    struct sl__expr_tree tree;             /* the folded tree, inside this block */
};

/* Parse `text` (checked: at most SL_EXPR_TEXT_MAX bytes) over `n_inputs`
 * names into `tree`, whose `cap` is at least sl__expr_parse_cap(text).
 * Numbers are converted to `compute`.  EPARSE with the column. */
sl_status sl__expr_parse(const char *text, size_t n_inputs, const char *const *names,
                         sl_dtype compute, struct sl__expr_tree *tree, struct sl_error *err);

/* Nodes sl__expr_parse may need for `text`. */
size_t sl__expr_parse_cap(const char *text);

/* True when `s` (n bytes) is a keyword or a function name of the language. */
bool sl__expr_is_reserved(const char *s, size_t n);

/* The function called `s` (n bytes) into *op (and, for dtype names, *dtype
 * with *op = SL__EXPR_CAST); false when there is none. */
bool sl__expr_function_find(const char *s, size_t n, enum sl__expr_op *op, sl_dtype *dtype);

/* Fold constant subtrees of `tree` in place (results in `compute`). */
void sl__expr_fold(struct sl__expr_tree *tree, sl_dtype compute);

/*
 * Make the program for folded `tree` (copied in) over inputs `names`,
 * `in_dtypes`: code generation, register allocation, one allocation from
 * `alloc`.  EPARSE (with the node's column) or, when `composed`, EINVAL
 * when it needs more than SL_EXPR_MAX_REGS registers; ENOMEM.
 */
sl_status sl__expr_build(const struct sl__expr_tree *tree, size_t n_inputs,
                         const char *const *names, const sl_dtype *in_dtypes, sl_dtype compute,
                         bool composed, const struct sl_allocator *alloc, sl_expr **out,
                         struct sl_error *err);

/* Evaluate instruction `ins` on one element: args[i] are the values of its
 * register arguments; the result, a value of `compute`, is returned. */
double sl__expr_eval_one(sl_dtype compute, const struct sl__expr_ins *ins, const double *args);

#endif /* SL_EXPR_INTERNAL_H */
