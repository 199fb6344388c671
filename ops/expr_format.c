/* SPDX-License-Identifier: MIT */
/*
 * The canonical text of a program: its folded tree written fully
 * parenthesised, so that it reads back to the same tree.
 *
 * DESIGN: every infix operator gets its own parentheses, prefix operators
 * too ("(-x)", "(not x)"), calls are "name(a, b)" and a conversion through
 * a dtype is a call of the dtype's name.  A constant is written in the
 * fewest significant digits (up to 17) that read back, through the
 * parser's own conversion, to the same working-type value; negative ones
 * in parentheses, "(-2)", so that "(-2) ** x" keeps its meaning.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "expr_internal.h"

/* Append constant v (a value of `compute`). */
static void
format_number(double v, sl_dtype compute, char *buf, size_t size, size_t *len)
{
    if (isnan(v)) {
        sl__strbuf_append(buf, size, len, "nan");
        return;
    }
    if (signbit(v)) {
        sl__strbuf_append(buf, size, len, "(-");
        format_number(-v, compute, buf, size, len);
        sl__strbuf_append(buf, size, len, ")");
        return;
    }
    if (isinf(v)) {
        sl__strbuf_append(buf, size, len, "inf");
        return;
    }
    char text[40];
    if (v == floor(v) && v < 1e15) { /* integers as integers, not 1e+02 */
        sl__strbuf_append(buf, size, len, "%.0f", v);
        return;
    }
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, v);
        double back = strtod(text, NULL);
        if (compute == SL_DTYPE_F32)
            back = (float)back;
        if (back == v)
            break;
    }
    sl__strbuf_append(buf, size, len, "%s", text);
}

static void
format_node(const sl_expr *e, int32_t i, char *buf, size_t size, size_t *len)
{
    const struct sl__expr_node *n = &e->tree.node[i];
    if (n->kind == SL__EXPR_NUM) {
        format_number(n->value, e->compute, buf, size, len);
        return;
    }
    if (n->kind == SL__EXPR_INPUT) {
        sl__strbuf_append(buf, size, len, "%s", e->name[n->input]);
        return;
    }
    const struct sl__expr_op_info *op = &sl__expr_ops[n->op];
    if (op->syntax == SL__EXPR_INFIX) {
        sl__strbuf_append(buf, size, len, "(");
        format_node(e, n->arg[0], buf, size, len);
        sl__strbuf_append(buf, size, len, " %s ", op->text);
        format_node(e, n->arg[1], buf, size, len);
        sl__strbuf_append(buf, size, len, ")");
    } else if (op->syntax == SL__EXPR_PREFIX) {
        sl__strbuf_append(buf, size, len, "%s", n->op == SL__EXPR_NOT ? "(not " : "(-");
        format_node(e, n->arg[0], buf, size, len);
        sl__strbuf_append(buf, size, len, ")");
    } else {
        const char *name = n->op == SL__EXPR_CAST ? sl_dtype_name((sl_dtype)n->dtype) : op->text;
        sl__strbuf_append(buf, size, len, "%s(", name);
        for (unsigned a = 0; a < op->arity; a++) {
            sl__strbuf_append(buf, size, len, "%s", a > 0 ? ", " : "");
            format_node(e, n->arg[a], buf, size, len);
        }
        sl__strbuf_append(buf, size, len, ")");
    }
}

size_t
sl_expr_format(const sl_expr *e, char *buf, size_t size)
{
    size_t len = 0;
    if (buf != NULL && size > 0)
        buf[0] = '\0';
    if (e == NULL)
        return 0;
    format_node(e, e->tree.root, size > 0 ? buf : NULL, size, &len);
    return len;
}
