/* SPDX-License-Identifier: MIT */
/*
 * Composition of programs: one program's result, converted through a
 * dtype, fed to an input of another, as a single new program.
 *
 * DESIGN: the new tree is inner's nodes, one conversion node over inner's
 * root, then outer's nodes with every use of input `slot` pointing at the
 * conversion node and outer's other inputs renumbered after inner's.  The
 * result is folded (inner may be constant) and goes through the same code
 * generator as a compiled text, so composed and written-out programs
 * behave the same.
 */
#include <stdio.h>
#include <string.h>

#include "expr_internal.h"

/* Every check of sl_expr_compose's arguments. */
static sl_status
compose_check(const sl_expr *outer, size_t slot, const sl_expr *inner, sl_dtype via, sl_expr **out,
              struct sl_error *err)
{
    if (outer == NULL || inner == NULL || out == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "expr compose: NULL %s",
                            outer == NULL   ? "outer"
                            : inner == NULL ? "inner"
                                            : "out");
    if (slot >= outer->n_inputs)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr compose: slot %zu, but the outer program has %u inputs", slot,
                            outer->n_inputs);
    if ((unsigned)via >= SL_DTYPE_COUNT_ || !sl__ops_dtype_is_kernel(via))
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr compose: cannot convert through dtype %s (bool, integers, "
                            "float32, float64 only)",
                            sl_dtype_name(via));
    if (via != outer->in_dtype[slot])
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr compose: outer input %zu (\"%s\") is %s, not the %s it is fed",
                            slot, outer->name[slot], sl_dtype_name(outer->in_dtype[slot]),
                            sl_dtype_name(via));
    if (outer->compute != inner->compute)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr compose: the outer program computes in %s, the inner in %s",
                            sl_dtype_name(outer->compute), sl_dtype_name(inner->compute));
    if (inner->n_inputs + outer->n_inputs - 1 > SL_EXPR_MAX_INPUTS)
        return sl_error_set(err, SL_EINVAL, NULL,
                            "expr compose: %u + %u - 1 inputs together (at most %d)",
                            inner->n_inputs, outer->n_inputs, SL_EXPR_MAX_INPUTS);
    return SL_OK;
}

/* The composed program's inputs: names (renamed to stay distinct, into
 * `room`) and dtypes. */
static size_t
compose_inputs(const sl_expr *outer, size_t slot, const sl_expr *inner,
               char room[][SL_EXPR_NAME_MAX], const char **names, sl_dtype *dtypes)
{
    size_t n = 0;
    for (uint32_t i = 0; i < inner->n_inputs; i++) {
        names[n] = inner->name[i];
        dtypes[n++] = inner->in_dtype[i];
    }
    for (uint32_t j = 0; j < outer->n_inputs; j++) {
        if (j == slot)
            continue;
        const char *name = outer->name[j];
        for (int k = 2;; k++) {
            bool taken = false;
            for (size_t i = 0; i < n && !taken; i++)
                taken = strcmp(names[i], name) == 0;
            if (!taken)
                break;
            snprintf(room[n], SL_EXPR_NAME_MAX, "%.*s_%d", SL_EXPR_NAME_MAX - 4, outer->name[j], k);
            name = room[n];
        }
        names[n] = name;
        dtypes[n++] = outer->in_dtype[j];
    }
    return n;
}

/* The composed tree into t (room for both trees and one node). */
static void
compose_tree(const sl_expr *outer, size_t slot, const sl_expr *inner, sl_dtype via, int32_t *map,
             struct sl__expr_tree *t)
{
    const uint32_t ni = inner->tree.n_nodes;
    memcpy(t->node, inner->tree.node, ni * sizeof *t->node);
    const int32_t cast = (int32_t)ni;
    t->node[cast] = (struct sl__expr_node){.kind = SL__EXPR_APPLY,
                                           .op = SL__EXPR_CAST,
                                           .dtype = (uint8_t)via,
                                           .arg = {inner->tree.root, -1, -1}};
    t->n_nodes = ni + 1;
    for (uint32_t i = 0; i < outer->tree.n_nodes; i++) {
        struct sl__expr_node n = outer->tree.node[i];
        if (n.kind == SL__EXPR_INPUT && n.input == slot) {
            map[i] = cast;
            continue;
        }
        if (n.kind == SL__EXPR_INPUT)
            n.input = (uint8_t)(inner->n_inputs + n.input - (n.input > slot));
        if (n.kind == SL__EXPR_APPLY)
            for (unsigned a = 0; a < sl__expr_ops[n.op].arity; a++)
                n.arg[a] = map[n.arg[a]];
        map[i] = (int32_t)t->n_nodes;
        t->node[t->n_nodes++] = n;
    }
    t->root = map[outer->tree.root];
}

sl_status
sl_expr_compose(const sl_expr *outer, size_t slot, const sl_expr *inner, sl_dtype via,
                const struct sl_allocator *alloc, sl_expr **out, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (out != NULL)
        *out = NULL;
    SL_TRY(compose_check(outer, slot, inner, via, out, err));
    char room[SL_EXPR_MAX_INPUTS][SL_EXPR_NAME_MAX];
    const char *names[SL_EXPR_MAX_INPUTS];
    sl_dtype dtypes[SL_EXPR_MAX_INPUTS];
    const size_t n_inputs = compose_inputs(outer, slot, inner, room, names, dtypes);
    const size_t cap = (size_t)inner->tree.n_nodes + outer->tree.n_nodes + 1;
    const size_t bytes = cap * sizeof(struct sl__expr_node) + outer->tree.n_nodes * sizeof(int32_t);
    unsigned char *scratch = sl_alloc(alloc, bytes, 0);
    if (scratch == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "expr compose: no memory for %zu nodes", cap);
    struct sl__expr_tree t = {.node = (struct sl__expr_node *)(void *)scratch,
                              .cap = (uint32_t)cap};
    int32_t *map = (int32_t *)(void *)(scratch + cap * sizeof(struct sl__expr_node));
    compose_tree(outer, slot, inner, via, map, &t);
    sl__expr_fold(&t, outer->compute);
    const sl_status st =
        sl__expr_build(&t, n_inputs, names, dtypes, outer->compute, true, alloc, out, err);
    sl_free(alloc, scratch, bytes);
    return st;
}
