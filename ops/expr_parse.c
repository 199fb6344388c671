/* SPDX-License-Identifier: MIT */
/*
 * The expression parser: text to syntax tree, by recursive descent with
 * one token of lookahead, reporting the first error with its 1-based byte
 * column.  Also the language's names: the operator table, functions and
 * keywords.
 *
 * DESIGN: precedence from lowest to highest is or, and, not, comparisons
 * (which do not chain), + -, * / %, unary - +, ** (right-associative, its
 * right side a unary: 2**-1, and -2**2 is -(2**2)), as in Python.  Each
 * token makes at most one node, so a tree of strlen(text) + 1 nodes always
 * has room, and recursion is bounded by SL__EXPR_MAX_DEPTH.  Numbers are
 * read by strtod (the C locale's "." is checked) and rounded once more to
 * the working type, as numpy rounds a Python float to float32.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr_internal.h"

const struct sl__expr_op_info sl__expr_ops[SL__EXPR_OP_COUNT_] = {
#define SL__EXPR_OP_INFO_(NAME, text, arity, syntax) \
    [SL__EXPR_##NAME] = {text, arity, SL__EXPR_##syntax},
    SL__EXPR_OP_MAP(SL__EXPR_OP_INFO_) /* [SL__EXPR_ADD] = {"+", 2, SL__EXPR_INFIX}, ... */
#undef SL__EXPR_OP_INFO_
};

/* Words that are neither functions nor inputs. */
static const char *const expr_keywords[] = {"and", "or", "not", "nan", "inf"};

/* True when the `n` bytes at `s` spell `word`. */
static bool
expr_word_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

bool
sl__expr_function_find(const char *s, size_t n, enum sl__expr_op *op, sl_dtype *dtype)
{
    for (int i = 0; i < SL__EXPR_OP_COUNT_; i++) {
        if (sl__expr_ops[i].syntax == SL__EXPR_CALL && sl__expr_ops[i].text[0] != '\0' &&
            expr_word_is(s, n, sl__expr_ops[i].text)) {
            *op = (enum sl__expr_op)i;
            return true;
        }
    }
    for (int d = 0; d < SL_DTYPE_COUNT_; d++) {
        if (sl__ops_dtype_is_kernel((sl_dtype)d) &&
            expr_word_is(s, n, sl_dtype_name((sl_dtype)d))) {
            *op = SL__EXPR_CAST;
            *dtype = (sl_dtype)d;
            return true;
        }
    }
    return false;
}

bool
sl__expr_is_reserved(const char *s, size_t n)
{
    enum sl__expr_op op;
    sl_dtype dt;
    for (size_t i = 0; i < sizeof expr_keywords / sizeof expr_keywords[0]; i++)
        if (expr_word_is(s, n, expr_keywords[i]))
            return true;
    return sl__expr_function_find(s, n, &op, &dt);
}

size_t
sl__expr_parse_cap(const char *text)
{
    return strlen(text) + 1;
}

/* ---- tokens ---------------------------------------------------------------- */

enum tok_kind { TOK_END, TOK_NUM, TOK_NAME, TOK_SYM, TOK_BAD };

struct tok {
    enum tok_kind kind;
    size_t start; /* byte offset in the text */
    size_t len;   /* bytes */
};

struct parser {
    const char *text;           /* the whole expression */
    struct tok cur;             /* the next token, not yet consumed */
    size_t n_inputs;            /* names of the inputs */
    const char *const *names;   /* borrowed */
    sl_dtype compute;           /* working type of constants */
    unsigned depth;             /* current nesting */
    struct sl__expr_tree *tree; /* nodes being made */
    struct sl_error *err;       /* where the first error goes */
};

/* Two-byte symbols first, so "**" is not read as two "*". */
static const char *const expr_symbols[] = {"**", "<=", ">=", "==", "!=", "+", "-", "*",
                                           "/",  "%",  "<",  ">",  "(",  ")", ","};

static bool
is_name_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool
is_name_char(char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9');
}

static bool
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Bytes of the decimal number at s (digits, ".", exponent), 0 if none;
 * *bad when an exponent has no digits or a name character follows. */
static size_t
scan_number(const char *s, bool *bad)
{
    size_t i = 0, digits = 0;
    while (is_digit(s[i]))
        i++, digits++;
    if (s[i] == '.')
        for (i++; is_digit(s[i]); i++)
            digits++;
    if (digits == 0)
        return 0;
    *bad = false;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        if (!is_digit(s[j]))
            *bad = true;
        while (is_digit(s[j]))
            j++;
        i = j;
    }
    if (is_name_char(s[i]) || s[i] == '.')
        *bad = true;
    while (is_name_char(s[i]) || s[i] == '.')
        i++;
    return i;
}

/* Read the token at byte `pos`. */
static struct tok
lex_at(const char *text, size_t pos)
{
    while (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')
        pos++;
    struct tok t = {.kind = TOK_END, .start = pos, .len = 0};
    const char *s = text + pos;
    bool bad = false;
    if (*s == '\0')
        return t;
    if ((t.len = scan_number(s, &bad)) > 0) {
        t.kind = bad ? TOK_BAD : TOK_NUM;
        return t;
    }
    if (is_name_start(*s)) {
        while (is_name_char(s[t.len]))
            t.len++;
        t.kind = TOK_NAME;
        return t;
    }
    for (size_t i = 0; i < sizeof expr_symbols / sizeof expr_symbols[0]; i++) {
        const size_t n = strlen(expr_symbols[i]);
        if (strncmp(s, expr_symbols[i], n) == 0) {
            t.kind = TOK_SYM;
            t.len = n;
            return t;
        }
    }
    t.kind = TOK_BAD;
    t.len = 1;
    return t;
}

static void
advance(struct parser *p)
{
    p->cur = lex_at(p->text, p->cur.start + p->cur.len);
}

static int
tok_column(const struct tok *t)
{
    return (int)t->start + 1;
}

/* True when the current token is symbol `sym` (or the word `sym`). */
static bool
at(const struct parser *p, const char *sym)
{
    return (p->cur.kind == TOK_SYM || p->cur.kind == TOK_NAME) &&
           expr_word_is(p->text + p->cur.start, p->cur.len, sym);
}

/* ---- errors ------------------------------------------------------------------ */

/* EPARSE at `column`: "column N: " then the message. */
static sl_status fail_at(struct parser *p, int column, const char *fmt, ...) SL_PRINTF(3, 4);

static sl_status
fail_at(struct parser *p, int column, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sl_error_set_at(p->err, SL_EPARSE, 1, column, (size_t)column - 1, "column %d: %s",
                           column, msg);
}

/* How the current token reads in a message: "\"x\"" or "the end of the text". */
static void
tok_describe(const struct parser *p, char *buf, size_t size)
{
    const struct tok *t = &p->cur;
    const unsigned char c = (unsigned char)p->text[t->start];
    if (t->kind == TOK_END)
        snprintf(buf, size, "the end of the text");
    else if (t->kind == TOK_BAD && t->len == 1 && (c < 0x20 || c >= 0x7f))
        snprintf(buf, size, "byte 0x%02x", c);
    else
        snprintf(buf, size, "\"%.*s\"", (int)(t->len > 40 ? 40 : t->len), p->text + t->start);
}

/* The error for a token that cannot start an operand. */
static sl_status
fail_operand(struct parser *p)
{
    char what[64];
    tok_describe(p, what, sizeof what);
    const char c = p->text[p->cur.start];
    if (p->cur.kind == TOK_BAD && p->cur.len > 1)
        return fail_at(p, tok_column(&p->cur), "malformed number %s", what);
    if (p->cur.kind == TOK_BAD)
        return fail_at(p, tok_column(&p->cur), "unexpected %s%s", what,
                       c == '&'   ? " (use \"and\")"
                       : c == '|' ? " (use \"or\")"
                       : c == '!' ? " (use \"not\" or \"!=\")"
                       : c == '=' ? " (use \"==\")"
                                  : "");
    return fail_at(p, tok_column(&p->cur), "expected an operand, found %s", what);
}

/* "inputs: a, b" into buf. */
static void
list_inputs(const struct parser *p, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    sl__strbuf_append(buf, size, &len, "%s", p->n_inputs == 0 ? "no inputs" : "inputs: ");
    for (size_t i = 0; i < p->n_inputs; i++)
        sl__strbuf_append(buf, size, &len, "%s%s", i > 0 ? ", " : "", p->names[i]);
}

/* "functions: abs, sqrt, ..." into buf. */
static void
list_functions(char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    sl__strbuf_append(buf, size, &len, "functions: ");
    const char *sep = "";
    for (int i = 0; i < SL__EXPR_OP_COUNT_; i++) {
        if (sl__expr_ops[i].syntax == SL__EXPR_CALL && sl__expr_ops[i].text[0] != '\0') {
            sl__strbuf_append(buf, size, &len, "%s%s", sep, sl__expr_ops[i].text);
            sep = ", ";
        }
    }
    sl__strbuf_append(buf, size, &len, ", or a dtype name to convert");
}

/* ---- nodes ------------------------------------------------------------------------ */

static int32_t
node_new(struct parser *p, enum sl__expr_kind kind, int column)
{
    struct sl__expr_tree *t = p->tree;
    assert(t->n_nodes < t->cap);
    const int32_t i = (int32_t)t->n_nodes++;
    t->node[i] = (struct sl__expr_node){.kind = (uint8_t)kind, .column = column};
    return i;
}

static int32_t
node_apply(struct parser *p, enum sl__expr_op op, int column, int32_t a, int32_t b)
{
    const int32_t i = node_new(p, SL__EXPR_APPLY, column);
    p->tree->node[i].op = (uint8_t)op;
    p->tree->node[i].arg[0] = a;
    p->tree->node[i].arg[1] = b;
    return i;
}

/* ---- grammar ---------------------------------------------------------------------- */

static sl_status parse_or(struct parser *p, int32_t *out);
static sl_status parse_unary(struct parser *p, int32_t *out);

/* Enter one level of nesting at the current token. */
static sl_status
nest(struct parser *p)
{
    if (++p->depth > SL__EXPR_MAX_DEPTH)
        return fail_at(p, tok_column(&p->cur), "expression nests deeper than %d levels",
                       SL__EXPR_MAX_DEPTH);
    return SL_OK;
}

/* ")" closing the "(" at column `open`. */
static sl_status
expect_close(struct parser *p, int open)
{
    if (!at(p, ")")) {
        char what[64];
        tok_describe(p, what, sizeof what);
        return fail_at(p, tok_column(&p->cur),
                       "expected \")\" to close \"(\" at column %d, found %s", open, what);
    }
    advance(p);
    return SL_OK;
}

/* A number token into a constant of the working type. */
static sl_status
parse_number(struct parser *p, int32_t *out)
{
    const char *s = p->text + p->cur.start;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end != s + p->cur.len)
        return fail_at(p, tok_column(&p->cur),
                       "number \"%.*s\" not read whole (is the C library's locale \"C\"?)",
                       (int)p->cur.len, s);
    if (p->compute == SL_DTYPE_F32)
        v = (float)v;
    *out = node_new(p, SL__EXPR_NUM, tok_column(&p->cur));
    p->tree->node[*out].value = v;
    advance(p);
    return SL_OK;
}

/* The arguments of a call whose name is the current token, then checks
 * their count. */
static sl_status
parse_call(struct parser *p, enum sl__expr_op op, sl_dtype dtype, int32_t *out)
{
    const struct tok name = p->cur;
    advance(p);
    const int open = tok_column(&p->cur);
    advance(p);
    int32_t args[3] = {-1, -1, -1};
    unsigned n = 0;
    if (!at(p, ")")) {
        for (;;) {
            int32_t a;
            SL_TRY(parse_or(p, &a));
            if (n < 3)
                args[n] = a;
            n++;
            if (!at(p, ","))
                break;
            advance(p);
        }
    }
    SL_TRY(expect_close(p, open));
    const unsigned arity = sl__expr_ops[op].arity;
    if (n != arity)
        return fail_at(p, tok_column(&name), "%.*s() takes %u argument%s, got %u", (int)name.len,
                       p->text + name.start, arity, arity == 1 ? "" : "s", n);
    *out = node_apply(p, op, tok_column(&name), args[0], args[1]);
    p->tree->node[*out].arg[2] = args[2];
    p->tree->node[*out].dtype = (uint8_t)dtype;
    return SL_OK;
}

/* A name: an input, nan, inf, or a call. */
static sl_status
parse_name(struct parser *p, int32_t *out)
{
    const char *s = p->text + p->cur.start;
    const size_t n = p->cur.len;
    const int col = tok_column(&p->cur);
    const struct tok next = lex_at(p->text, p->cur.start + n);
    const bool call = next.kind == TOK_SYM && p->text[next.start] == '(';
    enum sl__expr_op op;
    sl_dtype dtype = SL_DTYPE_COUNT_;
    if (sl__expr_function_find(s, n, &op, &dtype)) {
        if (!call)
            return fail_at(p, col, "function \"%.*s\" needs its arguments in parentheses", (int)n,
                           s);
        return parse_call(p, op, dtype, out);
    }
    if (expr_word_is(s, n, "nan") || expr_word_is(s, n, "inf")) {
        *out = node_new(p, SL__EXPR_NUM, col);
        p->tree->node[*out].value = s[0] == 'n' ? (double)NAN : (double)INFINITY;
        advance(p);
        return SL_OK;
    }
    for (size_t i = 0; i < p->n_inputs; i++) {
        if (expr_word_is(s, n, p->names[i])) {
            if (call)
                return fail_at(p, col, "\"%.*s\" is an input, not a function", (int)n, s);
            *out = node_new(p, SL__EXPR_INPUT, col);
            p->tree->node[*out].input = (uint8_t)i;
            advance(p);
            return SL_OK;
        }
    }
    char list[256];
    if (call) {
        list_functions(list, sizeof list);
        return fail_at(p, col, "unknown function \"%.*s\" (%s)", (int)n, s, list);
    }
    list_inputs(p, list, sizeof list);
    if (expr_word_is(s, n, "and") || expr_word_is(s, n, "or"))
        return fail_at(p, col, "expected an operand, found \"%.*s\"", (int)n, s);
    return fail_at(p, col, "unknown name \"%.*s\" (%s)", (int)n, s, list);
}

static sl_status
parse_primary(struct parser *p, int32_t *out)
{
    if (p->cur.kind == TOK_NUM)
        return parse_number(p, out);
    if (p->cur.kind == TOK_NAME && !at(p, "not"))
        return parse_name(p, out);
    if (at(p, "(")) {
        const int open = tok_column(&p->cur);
        advance(p);
        SL_TRY(parse_or(p, out));
        return expect_close(p, open);
    }
    return fail_operand(p);
}

/* primary ["**" unary] */
static sl_status
parse_power(struct parser *p, int32_t *out)
{
    SL_TRY(parse_primary(p, out));
    if (!at(p, "**"))
        return SL_OK;
    const int col = tok_column(&p->cur);
    advance(p);
    int32_t rhs;
    SL_TRY(parse_unary(p, &rhs));
    *out = node_apply(p, SL__EXPR_POW, col, *out, rhs);
    return SL_OK;
}

/* ("-" | "+") unary | power */
static sl_status
parse_unary(struct parser *p, int32_t *out)
{
    if (!at(p, "-") && !at(p, "+"))
        return parse_power(p, out);
    const bool neg = at(p, "-");
    const int col = tok_column(&p->cur);
    SL_TRY(nest(p));
    advance(p);
    SL_TRY(parse_unary(p, out));
    p->depth--;
    if (neg)
        *out = node_apply(p, SL__EXPR_NEG, col, *out, -1);
    return SL_OK;
}

/* One left-associative level: operand (op operand)*, ops[i] becoming codes[i]. */
static sl_status
parse_left(struct parser *p, sl_status (*operand)(struct parser *, int32_t *),
           const char *const *ops, const enum sl__expr_op *codes, size_t n_ops, int32_t *out)
{
    SL_TRY(operand(p, out));
    for (;;) {
        size_t i = 0;
        while (i < n_ops && !at(p, ops[i]))
            i++;
        if (i == n_ops)
            return SL_OK;
        const int col = tok_column(&p->cur);
        advance(p);
        int32_t rhs;
        SL_TRY(operand(p, &rhs));
        *out = node_apply(p, codes[i], col, *out, rhs);
    }
}

static sl_status
parse_mul(struct parser *p, int32_t *out)
{
    static const char *const ops[] = {"*", "/", "%"};
    static const enum sl__expr_op codes[] = {SL__EXPR_MUL, SL__EXPR_DIV, SL__EXPR_MOD};
    return parse_left(p, parse_unary, ops, codes, 3, out);
}

static sl_status
parse_add(struct parser *p, int32_t *out)
{
    static const char *const ops[] = {"+", "-"};
    static const enum sl__expr_op codes[] = {SL__EXPR_ADD, SL__EXPR_SUB};
    return parse_left(p, parse_mul, ops, codes, 2, out);
}

/* add [cmp add], refusing a second comparison. */
static sl_status
parse_cmp(struct parser *p, int32_t *out)
{
    static const char *const ops[] = {"<=", ">=", "==", "!=", "<", ">"};
    static const enum sl__expr_op codes[] = {SL__EXPR_LE, SL__EXPR_GE, SL__EXPR_EQ,
                                             SL__EXPR_NE, SL__EXPR_LT, SL__EXPR_GT};
    SL_TRY(parse_add(p, out));
    for (int round = 0;; round++) {
        size_t i = 0;
        while (i < 6 && !at(p, ops[i]))
            i++;
        if (i == 6)
            return SL_OK;
        const int col = tok_column(&p->cur);
        if (round > 0)
            return fail_at(p, col,
                           "comparisons do not chain: write (a < b) and (b < c), not a < b < c");
        advance(p);
        int32_t rhs;
        SL_TRY(parse_add(p, &rhs));
        *out = node_apply(p, codes[i], col, *out, rhs);
    }
}

/* "not" not | cmp */
static sl_status
parse_not(struct parser *p, int32_t *out)
{
    if (!at(p, "not"))
        return parse_cmp(p, out);
    const int col = tok_column(&p->cur);
    SL_TRY(nest(p));
    advance(p);
    SL_TRY(parse_not(p, out));
    p->depth--;
    *out = node_apply(p, SL__EXPR_NOT, col, *out, -1);
    return SL_OK;
}

static sl_status
parse_and(struct parser *p, int32_t *out)
{
    static const char *const ops[] = {"and"};
    static const enum sl__expr_op codes[] = {SL__EXPR_AND};
    return parse_left(p, parse_not, ops, codes, 1, out);
}

static sl_status
parse_or(struct parser *p, int32_t *out)
{
    static const char *const ops[] = {"or"};
    static const enum sl__expr_op codes[] = {SL__EXPR_OR};
    SL_TRY(nest(p));
    SL_TRY(parse_left(p, parse_and, ops, codes, 1, out));
    p->depth--;
    return SL_OK;
}

sl_status
sl__expr_parse(const char *text, size_t n_inputs, const char *const *names, sl_dtype compute,
               struct sl__expr_tree *tree, struct sl_error *err)
{
    struct parser p = {.text = text,
                       .n_inputs = n_inputs,
                       .names = names,
                       .compute = compute,
                       .tree = tree,
                       .err = err};
    tree->n_nodes = 0;
    tree->root = -1;
    p.cur = lex_at(text, 0);
    if (p.cur.kind == TOK_END)
        return fail_at(&p, tok_column(&p.cur), "empty expression");
    SL_TRY(parse_or(&p, &tree->root));
    if (p.cur.kind != TOK_END) {
        char what[64];
        tok_describe(&p, what, sizeof what);
        if (at(&p, ")"))
            return fail_at(&p, tok_column(&p.cur), "unmatched \")\"");
        if (p.cur.kind == TOK_BAD)
            return fail_operand(&p);
        return fail_at(&p, tok_column(&p.cur), "expected an operator, found %s", what);
    }
    return SL_OK;
}
