/* SPDX-License-Identifier: MIT */
/*
 * The expression compiler: argument checks, constant folding, and code
 * generation from a folded tree into a linear program over tile registers;
 * also freeing programs and their accessors.
 *
 * DESIGN: folding evaluates a constant node with the evaluator's own
 * kernels on one element (sl__expr_eval_one), so a folded constant is
 * bit for bit what evaluating it per element would give.  Code generation
 * walks the tree recursively, arguments needing the most registers first
 * (Sethi-Ullman order), with constants as immediate operands of binary
 * operators and where().  Registers 0 .. u-1 hold the u used inputs (each
 * loaded once per tile); temporaries follow, each instruction writing a
 * fresh one, so no instruction reads the register it writes.  A node is
 * generated once and its register freed after its last use (composed
 * trees share the conversion node).  The last instruction writes the
 * result.
 */
#include <string.h>

#include "expr_internal.h"

/* ---- folding ------------------------------------------------------------------ */

/* The value of constant node `n` as the instruction computing it gives. */
static double
fold_apply(const struct sl__expr_tree *t, const struct sl__expr_node *n, sl_dtype compute)
{
    double args[3] = {0, 0, 0};
    for (unsigned i = 0; i < sl__expr_ops[n->op].arity; i++)
        args[i] = t->node[n->arg[i]].value;
    struct sl__expr_ins ins = {.op = n->op, .dtype = n->dtype, .arg = {0, 1, 2}};
    if (n->op != SL__EXPR_CLIP)
        return sl__expr_eval_one(compute, &ins, args);
    ins.op = SL__EXPR_MAX;
    const double lo = sl__expr_eval_one(compute, &ins, args);
    ins.op = SL__EXPR_MIN;
    const double two[3] = {lo, args[2], 0};
    return sl__expr_eval_one(compute, &ins, two);
}

void
sl__expr_fold(struct sl__expr_tree *t, sl_dtype compute)
{
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        struct sl__expr_node *n = &t->node[i];
        if (n->kind != SL__EXPR_APPLY)
            continue;
        if (n->op == SL__EXPR_WHERE && t->node[n->arg[0]].kind == SL__EXPR_NUM) {
            /* A constant condition picks an argument (NaN is true). */
            const double c = t->node[n->arg[0]].value;
            *n = t->node[c != 0 ? n->arg[1] : n->arg[2]];
            continue;
        }
        bool all_const = true;
        for (unsigned a = 0; a < sl__expr_ops[n->op].arity; a++)
            all_const = all_const && t->node[n->arg[a]].kind == SL__EXPR_NUM;
        if (!all_const)
            continue;
        const double v = fold_apply(t, n, compute);
        *n = (struct sl__expr_node){.kind = SL__EXPR_NUM, .column = n->column, .value = v};
    }
}

/* ---- code generation ------------------------------------------------------------ */

/* A computed value: a register or a constant. */
struct operand {
    bool is_const; /* the value is k */
    bool is_temp;  /* reg is a temporary, freed after the node's last use */
    uint8_t reg;   /* register, when not a constant */
    double k;      /* the constant */
};

/* What code generation knows of one node.  A composed tree is a DAG (every
 * use of the outer input is the one conversion node), so a node is
 * generated once and its register kept until its last use. */
struct gen_slot {
    struct operand result; /* once generated */
    uint32_t uses;         /* users not yet generated (+1 for the root) */
    uint8_t need;          /* estimated temporaries its subtree needs */
    bool done;             /* result is set */
};

/* Code generation of one program. */
struct gen {
    const struct sl__expr_tree *tree; /* folded, compact */
    struct gen_slot *slot;            /* one per node */
    sl_dtype compute;                 /* working type */
    const uint8_t *input_reg;         /* register of each used input */
    uint32_t n_fixed;                 /* registers holding inputs */
    uint32_t busy;                    /* bit r: temporary register r is live */
    uint32_t n_regs;                  /* registers used so far */
    struct sl__expr_ins *ins;         /* room for every instruction */
    uint32_t n_ins;                   /* emitted */
    bool composed;                    /* the tree came from sl_expr_compose */
    struct sl_error *err;
};

/* True when node n converts through a dtype whose values the working type
 * already has exactly, so the conversion changes nothing. */
static bool
node_is_identity_cast(const struct sl__expr_node *n, sl_dtype compute)
{
    return n->kind == SL__EXPR_APPLY && n->op == SL__EXPR_CAST &&
           (n->dtype == SL_DTYPE_F64 || n->dtype == compute);
}

/* Use counts and estimated temporaries of every node, arguments in order
 * of need. */
static void
gen_init_slots(struct gen *g)
{
    const struct sl__expr_tree *t = g->tree;
    memset(g->slot, 0, t->n_nodes * sizeof *g->slot);
    g->slot[t->root].uses = 1;
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        const struct sl__expr_node *n = &t->node[i];
        if (n->kind != SL__EXPR_APPLY)
            continue;
        const unsigned arity = sl__expr_ops[n->op].arity;
        unsigned held = 0, best = 0;
        for (unsigned a = 0; a < arity; a++) {
            g->slot[n->arg[a]].uses++;
            const unsigned na = g->slot[n->arg[a]].need;
            best = na > best ? na : best;
            held += t->node[n->arg[a]].kind == SL__EXPR_APPLY;
        }
        unsigned need = best + (arity > 1 ? arity - 1 : 0);
        need = need > held + 1 ? need : held + 1;
        if (node_is_identity_cast(n, g->compute))
            need = best;
        g->slot[i].need = (uint8_t)(need > 255 ? 255 : need);
    }
}

static sl_status
gen_alloc(struct gen *g, int column, uint8_t *reg)
{
    for (uint32_t r = g->n_fixed; r < SL_EXPR_MAX_REGS; r++) {
        if (!(g->busy & (1u << r))) {
            g->busy |= 1u << r;
            *reg = (uint8_t)r;
            if (r + 1 > g->n_regs)
                g->n_regs = r + 1;
            return SL_OK;
        }
    }
    if (g->composed)
        return sl_error_set(g->err, SL_EINVAL, NULL,
                            "expr compose: the program would need more than %d tile registers "
                            "(%u of them for inputs)",
                            SL_EXPR_MAX_REGS, g->n_fixed);
    return sl_error_set_at(g->err, SL_EPARSE, 1, column, (size_t)column - 1,
                           "column %d: expression needs more than %d tile registers (%u of them "
                           "for inputs); nest it less deeply",
                           column, SL_EXPR_MAX_REGS, g->n_fixed);
}

/* One use of node i's result is over; the last frees its register (an
 * identity conversion passes the release on to its argument). */
static void
gen_release(struct gen *g, int32_t i)
{
    struct gen_slot *s = &g->slot[i];
    if (SL_NEVER(s->uses == 0) || --s->uses > 0)
        return;
    if (node_is_identity_cast(&g->tree->node[i], g->compute))
        gen_release(g, g->tree->node[i].arg[0]);
    else if (s->result.is_temp)
        g->busy &= ~(1u << s->result.reg);
}

/* Append dst = op(args) with constant arguments as immediates. */
static void
gen_emit(struct gen *g, enum sl__expr_op op, uint8_t dtype, uint8_t dst, const struct operand *a,
         unsigned n_args)
{
    struct sl__expr_ins *in = &g->ins[g->n_ins++];
    *in = (struct sl__expr_ins){.op = (uint8_t)op, .dst = dst, .dtype = dtype};
    for (unsigned i = 0; i < n_args; i++) {
        if (a[i].is_const) {
            in->konst |= (uint8_t)(1u << i);
            in->k[i] = a[i].k;
        } else {
            in->arg[i] = a[i].reg;
        }
    }
}

static sl_status gen_node(struct gen *g, int32_t i, struct operand *out);

/* The arguments of node n, the neediest first, into args[0 .. arity). */
static sl_status
gen_args(struct gen *g, const struct sl__expr_node *n, struct operand *args)
{
    const unsigned arity = sl__expr_ops[n->op].arity;
    bool done[3] = {false, false, false};
    for (unsigned k = 0; k < arity; k++) {
        unsigned pick = 3;
        for (unsigned a = 0; a < arity; a++)
            if (!done[a] && (pick == 3 || g->slot[n->arg[a]].need > g->slot[n->arg[pick]].need))
                pick = a;
        done[pick] = true;
        SL_TRY(gen_node(g, n->arg[pick], &args[pick]));
    }
    return SL_OK;
}

/* clip(x, lo, hi) as min(max(x, lo), hi), as numpy defines it. */
static sl_status
gen_clip(struct gen *g, const struct sl__expr_node *n, struct operand *args, struct operand *out)
{
    struct operand lo = {.is_temp = true};
    SL_TRY(gen_alloc(g, n->column, &lo.reg));
    gen_emit(g, SL__EXPR_MAX, 0, lo.reg, args, 2);
    gen_release(g, n->arg[0]);
    gen_release(g, n->arg[1]);
    const struct operand second[2] = {lo, args[2]};
    *out = (struct operand){.is_temp = true};
    SL_TRY(gen_alloc(g, n->column, &out->reg));
    gen_emit(g, SL__EXPR_MIN, 0, out->reg, second, 2);
    g->busy &= ~(1u << lo.reg);
    gen_release(g, n->arg[2]);
    return SL_OK;
}

/* Node i's value, generated on its first use. */
static sl_status
gen_node(struct gen *g, int32_t i, struct operand *out)
{
    const struct sl__expr_node *n = &g->tree->node[i];
    struct gen_slot *s = &g->slot[i];
    if (s->done) {
        *out = s->result;
        return SL_OK;
    }
    if (n->kind == SL__EXPR_NUM) {
        s->result = (struct operand){.is_const = true, .k = n->value};
    } else if (n->kind == SL__EXPR_INPUT) {
        s->result = (struct operand){.reg = g->input_reg[n->input]};
    } else if (node_is_identity_cast(n, g->compute)) {
        SL_TRY(gen_node(g, n->arg[0], &s->result));
    } else {
        struct operand args[3];
        SL_TRY(gen_args(g, n, args));
        if (n->op == SL__EXPR_CLIP) {
            SL_TRY(gen_clip(g, n, args, &s->result));
        } else {
            s->result = (struct operand){.is_temp = true};
            SL_TRY(gen_alloc(g, n->column, &s->result.reg));
            gen_emit(g, (enum sl__expr_op)n->op, n->dtype, s->result.reg, args,
                     sl__expr_ops[n->op].arity);
            for (unsigned a = 0; a < sl__expr_ops[n->op].arity; a++)
                gen_release(g, n->arg[a]);
        }
    }
    s->done = true;
    *out = s->result;
    return SL_OK;
}

/* The whole program; a root that is no instruction's result gets one. */
static sl_status
gen_program(struct gen *g)
{
    struct operand r;
    SL_TRY(gen_node(g, g->tree->root, &r));
    if (g->n_ins > 0 && r.is_temp && g->ins[g->n_ins - 1].dst == r.reg)
        return SL_OK;
    struct operand dst = {.is_temp = true};
    SL_TRY(gen_alloc(g, g->tree->node[g->tree->root].column, &dst.reg));
    gen_emit(g, r.is_const ? SL__EXPR_FILL : SL__EXPR_COPY, 0, dst.reg, &r, 1);
    return SL_OK;
}

/* ---- the program block ------------------------------------------------------------ */

/* Mark the nodes reachable from the root; count them and the instructions
 * they may make (clip makes two), in *n_nodes and *n_ins. */
static void
tree_mark(const struct sl__expr_tree *t, bool *keep, uint32_t *n_nodes, uint32_t *n_ins)
{
    memset(keep, 0, t->n_nodes);
    keep[t->root] = true;
    *n_nodes = 0;
    *n_ins = 1;
    for (uint32_t i = t->n_nodes; i-- > 0;) {
        if (!keep[i])
            continue;
        (*n_nodes)++;
        const struct sl__expr_node *n = &t->node[i];
        if (n->kind != SL__EXPR_APPLY)
            continue;
        *n_ins += n->op == SL__EXPR_CLIP ? 2 : 1;
        for (unsigned a = 0; a < sl__expr_ops[n->op].arity; a++)
            keep[n->arg[a]] = true;
    }
}

/* Copy the kept nodes of `t` into `dst` (compact, order kept); `map`
 * receives each old index's new one. */
static void
tree_compact(const struct sl__expr_tree *t, const bool *keep, int32_t *map,
             struct sl__expr_tree *dst)
{
    dst->n_nodes = 0;
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        if (!keep[i])
            continue;
        struct sl__expr_node n = t->node[i];
        if (n.kind == SL__EXPR_APPLY)
            for (unsigned a = 0; a < sl__expr_ops[n.op].arity; a++)
                n.arg[a] = map[n.arg[a]];
        map[i] = (int32_t)dst->n_nodes;
        dst->node[dst->n_nodes++] = n;
    }
    dst->cap = dst->n_nodes;
    dst->root = map[t->root];
}

/* Bytes of the block for a program of these sizes, names at the end. */
static size_t
block_bytes(uint32_t n_nodes, uint32_t n_ins, size_t n_inputs, const char *const *names)
{
    size_t b = sizeof(struct sl_expr) + n_nodes * sizeof(struct sl__expr_node) +
               n_ins * sizeof(struct sl__expr_ins);
    for (size_t i = 0; i < n_inputs; i++)
        b += strlen(names[i]) + 1;
    return b;
}

/* Fill the block's header, names and inputs. */
static void
block_init(sl_expr *e, size_t n_inputs, const char *const *names, const sl_dtype *in_dtypes,
           sl_dtype compute, char *strings)
{
    e->compute = compute;
    e->n_inputs = (uint32_t)n_inputs;
    for (size_t i = 0; i < n_inputs; i++) {
        const size_t len = strlen(names[i]) + 1;
        memcpy(strings, names[i], len);
        e->name[i] = strings;
        e->in_dtype[i] = in_dtypes[i];
        strings += len;
    }
    e->used = 0;
    for (uint32_t i = 0; i < e->tree.n_nodes; i++)
        if (e->tree.node[i].kind == SL__EXPR_INPUT)
            e->used |= 1u << e->tree.node[i].input;
}

/* Generate the block's code; registers of used inputs first. */
static sl_status
block_generate(sl_expr *e, struct sl__expr_ins *ins, struct gen_slot *slot, bool composed,
               struct sl_error *err)
{
    struct gen g = {.tree = &e->tree,
                    .slot = slot,
                    .compute = e->compute,
                    .ins = ins,
                    .input_reg = e->input_reg,
                    .composed = composed,
                    .err = err};
    for (uint32_t i = 0; i < e->n_inputs; i++)
        if (e->used & (1u << i))
            e->input_reg[i] = (uint8_t)g.n_fixed++;
    g.n_regs = g.n_fixed;
    gen_init_slots(&g);
    SL_TRY(gen_program(&g));
    e->ins = ins;
    e->n_ins = g.n_ins;
    e->n_regs = g.n_regs;
    return SL_OK;
}

sl_status
sl__expr_build(const struct sl__expr_tree *tree, size_t n_inputs, const char *const *names,
               const sl_dtype *in_dtypes, sl_dtype compute, bool composed,
               const struct sl_allocator *alloc, sl_expr **out, struct sl_error *err)
{
    /* slot[], map[] and keep[] per node of the (uncompacted) tree. */
    const size_t scratch_bytes =
        tree->n_nodes * (sizeof(struct gen_slot) + sizeof(int32_t) + sizeof(bool));
    unsigned char *scratch = sl_alloc(alloc, scratch_bytes, 0);
    if (scratch == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "expr: no memory for %u nodes", tree->n_nodes);
    struct gen_slot *slot = (struct gen_slot *)(void *)scratch;
    int32_t *map = (int32_t *)(void *)(slot + tree->n_nodes);
    bool *keep = (bool *)(map + tree->n_nodes);
    uint32_t n_nodes, n_ins;
    tree_mark(tree, keep, &n_nodes, &n_ins);
    const size_t bytes = block_bytes(n_nodes, n_ins, n_inputs, names);
    sl_expr *e = sl_alloc(alloc, bytes, 0);
    sl_status st = SL_ENOMEM;
    if (e == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "expr: no memory for a program of %zu bytes", bytes);
        goto out_free_scratch;
    }
    memset(e, 0, sizeof *e);
    e->alloc = alloc != NULL ? *alloc : sl_allocator_default();
    e->bytes = bytes;
    e->tree.node = (struct sl__expr_node *)(void *)(e + 1);
    tree_compact(tree, keep, map, &e->tree);
    struct sl__expr_ins *ins = (struct sl__expr_ins *)(void *)(e->tree.node + n_nodes);
    block_init(e, n_inputs, names, in_dtypes, compute, (char *)(ins + n_ins));
    st = block_generate(e, ins, slot, composed, err);
    if (st != SL_OK) {
        sl_expr_free(e);
        goto out_free_scratch;
    }
    *out = e;
out_free_scratch:
    sl_free(alloc, scratch, scratch_bytes);
    return st;
}

/* ---- compile -------------------------------------------------------------------------- */

/* True when `s` is an identifier. */
static bool
name_is_identifier(const char *s)
{
    if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return false;
    for (size_t i = 1; s[i] != '\0'; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || s[i] == '_' ||
              (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

/* Input i's name and dtype, checked against the earlier inputs. */
static sl_status
check_input(size_t i, const char *const *names, const sl_dtype *in_dtypes, struct sl_error *err)
{
    const char *s = names[i];
    if (s == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "expr: input %zu has no name", i);
    if (strlen(s) >= SL_EXPR_NAME_MAX)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr: input %zu name \"%.20s...\" has %zu bytes (at most %d)", i, s,
                            strlen(s), SL_EXPR_NAME_MAX - 1);
    if (!name_is_identifier(s))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr: input %zu name \"%.40s\" is not an identifier "
                            "([A-Za-z_][A-Za-z0-9_]*)",
                            i, s);
    if (sl__expr_is_reserved(s, strlen(s)))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr: input %zu name \"%s\" is a function or keyword; rename it", i,
                            s);
    for (size_t j = 0; j < i; j++)
        if (strcmp(names[j], s) == 0)
            return sl_error_set(err, SL_EINVAL, NULL, "expr: inputs %zu and %zu are both \"%s\"", j,
                                i, s);
    const sl_dtype dt = in_dtypes[i];
    if ((unsigned)dt >= SL_DTYPE_COUNT_)
        return sl_error_set(err, SL_EINVAL, NULL, "expr: input %zu (\"%s\") has invalid dtype %d",
                            i, s, (int)dt);
    if (!sl__ops_dtype_is_kernel(dt))
        return sl_error_set(err, SL_EUNSUPPORTED, NULL,
                            "expr: input %zu (\"%s\") has dtype %s; expressions take bool, "
                            "integers, float32 and float64",
                            i, s, sl_dtype_name(dt));
    return SL_OK;
}

/* Every check of sl_expr_compile's arguments but the text's syntax. */
static sl_status
compile_check(const char *text, size_t n_inputs, const char *const *names,
              const sl_dtype *in_dtypes, sl_dtype compute, sl_expr **out, struct sl_error *err)
{
    if (text == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "expr: NULL %s", text == NULL ? "text" : "out");
    if (n_inputs > SL_EXPR_MAX_INPUTS)
        return sl_error_set(err, SL_EINVAL, NULL, "expr: %zu inputs (at most %d)", n_inputs,
                            SL_EXPR_MAX_INPUTS);
    if (n_inputs > 0 && (names == NULL || in_dtypes == NULL))
        return sl_error_set(err, SL_EINVAL, NULL, "expr: %zu inputs but NULL %s", n_inputs,
                            names == NULL ? "names" : "dtypes");
    if (compute != SL_DTYPE_F32 && compute != SL_DTYPE_F64)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr: working type %s (it must be float32 or float64)",
                            sl_dtype_name(compute));
    for (size_t i = 0; i < n_inputs; i++)
        SL_TRY(check_input(i, names, in_dtypes, err));
    const size_t len = strnlen(text, SL_EXPR_TEXT_MAX + 1);
    if (len > SL_EXPR_TEXT_MAX)
        return sl_error_set_at(err, SL_EPARSE, 1, SL_EXPR_TEXT_MAX + 1, SL_EXPR_TEXT_MAX,
                               "column %d: expression is longer than %d bytes",
                               SL_EXPR_TEXT_MAX + 1, SL_EXPR_TEXT_MAX);
    return SL_OK;
}

sl_status
sl_expr_compile(const char *text, size_t n_inputs, const char *const *names,
                const sl_dtype *in_dtypes, sl_dtype compute, const struct sl_allocator *alloc,
                sl_expr **out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (out != NULL)
        *out = NULL;
    SL_TRY(compile_check(text, n_inputs, names, in_dtypes, compute, out, err));
    const size_t cap = sl__expr_parse_cap(text);
    struct sl__expr_tree tree = {.cap = (uint32_t)cap};
    tree.node = sl_alloc(alloc, cap * sizeof *tree.node, 0);
    if (tree.node == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "expr: no memory to parse %zu bytes", cap - 1);
    sl_status st = sl__expr_parse(text, n_inputs, names, compute, &tree, err);
    if (st == SL_OK) {
        sl__expr_fold(&tree, compute);
        st = sl__expr_build(&tree, n_inputs, names, in_dtypes, compute, false, alloc, out, err);
    }
    sl_free(alloc, tree.node, cap * sizeof *tree.node);
    return st;
}

void
sl_expr_free(sl_expr *e)
{
    if (e == NULL)
        return;
    const struct sl_allocator a = e->alloc;
    sl_free(&a, e, e->bytes);
}

size_t
sl_expr_n_inputs(const sl_expr *e)
{
    return e == NULL ? 0 : e->n_inputs;
}

bool
sl_expr_uses_input(const sl_expr *e, size_t i)
{
    return e != NULL && i < e->n_inputs && (e->used & (1u << i)) != 0;
}

sl_dtype
sl_expr_input_dtype(const sl_expr *e, size_t i)
{
    return e == NULL || i >= e->n_inputs ? SL_DTYPE_COUNT_ : e->in_dtype[i];
}

const char *
sl_expr_input_name(const sl_expr *e, size_t i)
{
    return e == NULL || i >= e->n_inputs ? NULL : e->name[i];
}

sl_dtype
sl_expr_compute_dtype(const sl_expr *e)
{
    return e == NULL ? SL_DTYPE_COUNT_ : e->compute;
}
