/* SPDX-License-Identifier: MIT */
/*
 * Expressions: parsing and precedence as in Python, every error message
 * with its column, numpy's semantics on special values, both working
 * types, every output cast, broadcast (stride 0), reversed and permuted
 * views against a per-element reference, in-place use, composition,
 * canonical text round trips, the register, nesting and length limits,
 * NULL arguments and allocation failures.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sluice.h>

#include "ops_reference.h"

TestSuite(ops_expr, .timeout = 30.0);

static const char *const abc[] = {"a", "b", "c"};
static const sl_dtype f64x3[] = {SL_DTYPE_F64, SL_DTYPE_F64, SL_DTYPE_F64};

/* Compile over float64 inputs a, b, c; the test fails when it does not. */
static sl_expr *
compile_abc(const char *text, sl_dtype compute)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_expr *e = NULL;
    cr_assert_eq(sl_expr_compile(text, 3, abc, f64x3, compute, NULL, &e, &err), SL_OK, "\"%s\": %s",
                 text, err.text);
    return e;
}

/* The value of `text` at a, b, c (float64 in and out). */
static double
eval3(const char *text, sl_dtype compute, double a, double b, double c)
{
    sl_expr *e = compile_abc(text, compute);
    double in[3] = {a, b, c}, out = -12345;
    struct sl_view v[3], o;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(sl_view_init(&v[i], SL_DTYPE_F64, 0, NULL, &in[i], NULL), SL_OK);
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_F64, 0, NULL, &out, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_OK, "%s", err.text);
    sl_expr_free(e);
    return out;
}

static double
eval1(const char *text, double a)
{
    return eval3(text, SL_DTYPE_F64, a, 0, 0);
}

/* The canonical text of `text` over a, b, c. */
static void
format_of(const char *text, char *buf, size_t size)
{
    sl_expr *e = compile_abc(text, SL_DTYPE_F64);
    cr_assert_lt(sl_expr_format(e, buf, size), size);
    sl_expr_free(e);
}

/* Compile `text` over raw, dark, flat and expect EPARSE at `column` with `msg`. */
static void
expect_parse_error(const char *text, int column, const char *msg)
{
    static const char *const names[] = {"raw", "dark", "flat"};
    struct sl_error err = SL_ERROR_INIT;
    sl_expr *e = (sl_expr *)1;
    cr_assert_eq(sl_expr_compile(text, 3, names, f64x3, SL_DTYPE_F64, NULL, &e, &err), SL_EPARSE,
                 "\"%s\" compiled", text);
    cr_assert_null(e);
    cr_assert_eq(err.code, SL_EPARSE);
    cr_assert_eq(err.column, column, "\"%s\": column %d, not %d (%s)", text, err.column, column,
                 err.text);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "column %d: ", column);
    cr_assert_eq(strncmp(err.text, prefix, strlen(prefix)), 0, "\"%s\": %s", text, err.text);
    cr_assert_not_null(strstr(err.text, msg), "\"%s\": \"%s\" lacks \"%s\"", text, err.text, msg);
}

static bool
same_bits(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0;
}

/* ---- parsing and precedence ---------------------------------------------------- */

Test(ops_expr, precedence_follows_python)
{
    cr_assert_eq(eval1("-2**2", 0), -4);
    cr_assert_eq(eval1("2**-1", 0), 0.5);
    cr_assert_eq(eval1("2**3**2", 0), 512);
    cr_assert_eq(eval1("-a**2", 3), -9);
    cr_assert_eq(eval1("1 + 2 * a", 3), 7);
    cr_assert_eq(eval1("(1 + 2) * a", 3), 9);
    cr_assert_eq(eval3("a - b - c", SL_DTYPE_F64, 10, 3, 2), 5);
    cr_assert_eq(eval3("a / b / c", SL_DTYPE_F64, 12, 3, 2), 2);
    cr_assert_eq(eval3("a - b * c % 4", SL_DTYPE_F64, 10, 3, 3), 9);
    cr_assert_eq(eval3("not a == b", SL_DTYPE_F64, 1, 0, 0), 1);
    cr_assert_eq(eval3("a or b and c", SL_DTYPE_F64, 1, 0, 0), 1);
    cr_assert_eq(eval3("(a or b) and c", SL_DTYPE_F64, 1, 0, 0), 0);
    cr_assert_eq(eval3("not a or b", SL_DTYPE_F64, 0, 0, 0), 1);
    cr_assert_eq(eval3("a < b + 1", SL_DTYPE_F64, 1, 0.5, 0), 1);
    cr_assert_eq(eval1("+-+a", 2), -2);
    cr_assert_eq(eval1(" 1e-3 * .5 + 2. + 1E2 ", 0), 102.0005);
}

Test(ops_expr, format_parenthesises_fully)
{
    char buf[256];
    static const char *const cases[][2] = {
        {"(a - b) / max(c, 1)", "((a - b) / max(c, 1))"},
        {"-a**2", "(-(a ** 2))"},
        {"a < b and not c", "((a < b) and (not c))"},
        {"clip(a, 0, 1) + where(b, c, -1)", "(clip(a, 0, 1) + where(b, c, (-1)))"},
        {"2 * 3 + a * (1 / 4)", "(6 + (a * 0.25))"},
        {"+a", "a"},
        {"clip(2, 0, 1) + where(0, 1, 2) * a", "(1 + (2 * a))"},
        {"a * nan + inf", "((a * nan) + inf)"},
        {"uint8(a) - float32(b)", "(uint8(a) - float32(b))"},
        {"a * 0.1", "(a * 0.1)"},
        {"a * 1e300 * -0.0", "((a * 1e+300) * (-0))"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        format_of(cases[i][0], buf, sizeof buf);
        cr_assert_str_eq(buf, cases[i][1], "\"%s\"", cases[i][0]);
    }
}

Test(ops_expr, format_round_trip_gives_the_same_text)
{
    static const char *const cases[] = {"(a - b) / max(c, 1)",
                                        "-2**2 * a",
                                        "a % -3.25 ** b",
                                        "not a < b or c >= 0.1",
                                        "where(isnan(a), 0, sqrt(abs(a)))",
                                        "clip(a, -1e-7, 1/3)",
                                        "2 ** -a ** -b",
                                        "int16(a * 300) + bool(b) + float32(c)",
                                        "a - -b - (-c)",
                                        "sign(floor(a) - ceil(b))",
                                        "1/3 + a",
                                        "0.1 * a"};
    for (int t = 0; t < 2; t++) {
        const sl_dtype compute = t == 0 ? SL_DTYPE_F64 : SL_DTYPE_F32;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char once[512], twice[512];
            sl_expr *e = compile_abc(cases[i], compute);
            const size_t n = sl_expr_format(e, once, sizeof once);
            cr_assert_eq(n, strlen(once));
            sl_expr *f = compile_abc(once, compute);
            sl_expr_format(f, twice, sizeof twice);
            cr_assert_str_eq(once, twice, "\"%s\"", cases[i]);
            sl_expr_free(e);
            sl_expr_free(f);
        }
    }
}

Test(ops_expr, format_reports_the_length_it_needs)
{
    sl_expr *e = compile_abc("(a - b) / max(c, 1)", SL_DTYPE_F64);
    char small[8];
    const size_t need = strlen("((a - b) / max(c, 1))");
    cr_assert_eq(sl_expr_format(e, NULL, 0), need);
    cr_assert_eq(sl_expr_format(e, small, sizeof small), need);
    cr_assert_str_eq(small, "((a - b");
    cr_assert_eq(sl_expr_format(NULL, small, sizeof small), 0);
    cr_assert_str_eq(small, "");
    sl_expr_free(e);
}

/* ---- errors -------------------------------------------------------------------------- */

Test(ops_expr, unknown_name_reports_column_and_inputs)
{
    expect_parse_error("(raw - drak) / flat", 8, "unknown name \"drak\" (inputs: raw, dark, flat)");
}

Test(ops_expr, unclosed_parenthesis_reports_both_columns)
{
    expect_parse_error("(raw - dark", 12, "expected \")\" to close \"(\" at column 1");
    expect_parse_error("max(raw, dark", 14, "expected \")\" to close \"(\" at column 4");
}

Test(ops_expr, wrong_argument_count_names_the_function)
{
    expect_parse_error("raw+where(raw, dark)", 5, "where() takes 3 arguments, got 2");
    expect_parse_error("sqrt()", 1, "sqrt() takes 1 argument, got 0");
    expect_parse_error("max(raw, dark, flat, 1)", 1, "max() takes 2 arguments, got 4");
}

Test(ops_expr, unknown_function_lists_the_functions)
{
    expect_parse_error("sqr(raw)", 1, "unknown function \"sqr\" (functions: min, max, abs, sqrt");
    expect_parse_error("raw(1)", 1, "\"raw\" is an input, not a function");
    expect_parse_error("1 + sqrt", 5, "function \"sqrt\" needs its arguments in parentheses");
}

Test(ops_expr, chained_comparison_is_refused)
{
    expect_parse_error("raw < dark < flat", 12, "comparisons do not chain");
}

Test(ops_expr, stray_characters_report_their_column)
{
    expect_parse_error("raw $ 2", 5, "unexpected \"$\"");
    expect_parse_error("raw && dark", 5, "unexpected \"&\" (use \"and\")");
    expect_parse_error("raw = dark", 5, "(use \"==\")");
    expect_parse_error("raw\x01", 4, "unexpected byte 0x01");
    expect_parse_error("raw dark", 5, "expected an operator, found \"dark\"");
    expect_parse_error("raw)", 4, "unmatched \")\"");
}

Test(ops_expr, missing_operands_report_what_was_found)
{
    expect_parse_error("raw +", 6, "expected an operand, found the end of the text");
    expect_parse_error("raw * )", 7, "expected an operand, found \")\"");
    expect_parse_error("raw + and", 7, "expected an operand, found \"and\"");
    expect_parse_error("   ", 4, "empty expression");
    expect_parse_error("", 1, "empty expression");
}

Test(ops_expr, malformed_numbers_are_refused)
{
    expect_parse_error("raw * 1e", 7, "malformed number \"1e\"");
    expect_parse_error("2raw", 1, "malformed number \"2raw\"");
    expect_parse_error("1.2.3", 1, "malformed number \"1.2.3\"");
}

Test(ops_expr, text_too_long_is_refused)
{
    static char text[SL_EXPR_TEXT_MAX + 2];
    for (size_t i = 0; i < SL_EXPR_TEXT_MAX; i += 2)
        memcpy(text + i, "a+", 2);
    text[SL_EXPR_TEXT_MAX - 1] = ' '; /* "a+a+...+a ": exactly the limit, accepted */
    sl_expr *e = compile_abc(text, SL_DTYPE_F64);
    sl_expr_free(e);
    text[SL_EXPR_TEXT_MAX] = ' ';
    expect_parse_error(text, SL_EXPR_TEXT_MAX + 1, "longer than 4096 bytes");
}

Test(ops_expr, deep_nesting_is_refused)
{
    char text[512] = "";
    for (int i = 0; i < 120; i++)
        strcat(text, "(");
    strcat(text, "raw");
    for (int i = 0; i < 120; i++)
        strcat(text, ")");
    expect_parse_error(text, 101, "nests deeper than 100 levels");
    memset(text, 0, sizeof text);
    for (int i = 0; i < 120; i++)
        strcat(text, "-");
    strcat(text, "raw");
    expect_parse_error(text, 100, "nests deeper than 100 levels");
}

/* A balanced sum of depth `depth` over the 8 inputs a .. h. */
static void
balanced(char *buf, int depth, int *leaf)
{
    if (depth == 0) {
        const char s[2] = {(char)('a' + (*leaf)++ % 8), '\0'};
        strcat(buf, s);
        return;
    }
    strcat(buf, "(");
    balanced(buf, depth - 1, leaf);
    strcat(buf, "+");
    balanced(buf, depth - 1, leaf);
    strcat(buf, ")");
}

Test(ops_expr, max_register_depth_is_refused)
{
    static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    const sl_dtype dt[8] = {SL_DTYPE_F32, SL_DTYPE_F32, SL_DTYPE_F32, SL_DTYPE_F32,
                            SL_DTYPE_F32, SL_DTYPE_F32, SL_DTYPE_F32, SL_DTYPE_F32};
    static char text[SL_EXPR_TEXT_MAX];
    int leaf = 0;
    /* Depth 7 needs 8 temporaries beside the 8 inputs: exactly the limit
     * (each instruction writes a register it does not read). */
    text[0] = '\0';
    balanced(text, 7, &leaf);
    struct sl_error err = SL_ERROR_INIT;
    sl_expr *e = NULL;
    cr_assert_eq(sl_expr_compile(text, 8, names, dt, SL_DTYPE_F64, NULL, &e, &err), SL_OK, "%s",
                 err.text);
    sl_expr_free(e);
    text[0] = '\0';
    leaf = 0;
    balanced(text, 8, &leaf);
    cr_assert_lt(strlen(text), SL_EXPR_TEXT_MAX);
    cr_assert_eq(sl_expr_compile(text, 8, names, dt, SL_DTYPE_F64, NULL, &e, &err), SL_EPARSE);
    cr_assert_gt(err.column, 0);
    cr_assert_not_null(strstr(err.text, "needs more than 16 tile registers (8 of them for inputs)"),
                       "%s", err.text);
}

Test(ops_expr, bad_inputs_are_refused_naming_them)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_expr *e = NULL;
    const char *names[9] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
    sl_dtype dt[9] = {SL_DTYPE_F64, SL_DTYPE_F64, SL_DTYPE_F64, SL_DTYPE_F64, SL_DTYPE_F64,
                      SL_DTYPE_F64, SL_DTYPE_F64, SL_DTYPE_F64, SL_DTYPE_F64};
    cr_assert_eq(sl_expr_compile("a", 9, names, dt, SL_DTYPE_F64, NULL, &e, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "9 inputs (at most 8)"), "%s", err.text);
    static const char *const bad[][2] = {
        {"min", "is a function or keyword"},   {"nan", "is a function or keyword"},
        {"uint8", "is a function or keyword"}, {"1a", "is not an identifier"},
        {"a-b", "is not an identifier"},       {"a", "inputs 0 and 1 are both \"a\""}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *two[2] = {"a", bad[i][0]};
        err = SL_ERROR_INIT;
        cr_assert_eq(sl_expr_compile("a", 2, two, dt, SL_DTYPE_F64, NULL, &e, &err), SL_EINVAL);
        cr_assert_not_null(strstr(err.text, bad[i][1]), "%s", err.text);
    }
    const sl_dtype half[2] = {SL_DTYPE_F64, SL_DTYPE_F16};
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_compile("a", 2, names, half, SL_DTYPE_F64, NULL, &e, &err),
                 SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(err.text, "input 1 (\"b\") has dtype float16"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_compile("a", 1, names, dt, SL_DTYPE_I32, NULL, &e, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "working type int32"), "%s", err.text);
}

Test(ops_expr, null_arguments_are_einval)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_expr *e = NULL;
    cr_assert_eq(sl_expr_compile(NULL, 0, NULL, NULL, SL_DTYPE_F64, NULL, &e, &err), SL_EINVAL);
    cr_assert_eq(sl_expr_compile("1", 0, NULL, NULL, SL_DTYPE_F64, NULL, NULL, NULL), SL_EINVAL);
    cr_assert_eq(sl_expr_compile("a", 1, NULL, f64x3, SL_DTYPE_F64, NULL, &e, NULL), SL_EINVAL);
    cr_assert_eq(sl_expr_compile("a", 1, abc, NULL, SL_DTYPE_F64, NULL, &e, NULL), SL_EINVAL);
    const char *nul[1] = {NULL};
    cr_assert_eq(sl_expr_compile("a", 1, nul, f64x3, SL_DTYPE_F64, NULL, &e, NULL), SL_EINVAL);
    e = compile_abc("a + b", SL_DTYPE_F64);
    double x = 0;
    struct sl_view o;
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_F64, 0, NULL, &x, NULL), SL_OK);
    cr_assert_eq(sl_expr_eval(NULL, &o, &o, NULL), SL_EINVAL);
    cr_assert_eq(sl_expr_eval(e, NULL, &o, NULL), SL_EINVAL);
    cr_assert_eq(sl_expr_eval(e, &o, NULL, NULL), SL_EINVAL);
    sl_expr *c = NULL;
    cr_assert_eq(sl_expr_compose(NULL, 0, e, SL_DTYPE_F64, NULL, &c, NULL), SL_EINVAL);
    cr_assert_eq(sl_expr_compose(e, 0, NULL, SL_DTYPE_F64, NULL, &c, NULL), SL_EINVAL);
    cr_assert_eq(sl_expr_compose(e, 0, e, SL_DTYPE_F64, NULL, NULL, NULL), SL_EINVAL);
    cr_assert_eq(sl_expr_n_inputs(NULL), 0);
    cr_assert_not(sl_expr_uses_input(NULL, 0));
    sl_expr_free(NULL);
    sl_expr_free(e);
}

Test(ops_expr, accessors_describe_the_program)
{
    sl_expr *e = compile_abc("where(1, a, b) * c * 0", SL_DTYPE_F32);
    cr_assert_eq(sl_expr_n_inputs(e), 3);
    cr_assert(sl_expr_uses_input(e, 0));
    cr_assert_not(sl_expr_uses_input(e, 1), "where(1, a, b) folds to a");
    cr_assert(sl_expr_uses_input(e, 2), "c * 0 is not folded: it is NaN for inf");
    cr_assert_not(sl_expr_uses_input(e, 3));
    cr_assert_eq(sl_expr_compute_dtype(e), SL_DTYPE_F32);
    cr_assert_eq(sl_expr_input_dtype(e, 1), SL_DTYPE_F64);
    cr_assert_str_eq(sl_expr_input_name(e, 2), "c");
    cr_assert_null(sl_expr_input_name(e, 3));
    sl_expr_free(e);
}

/* ---- semantics ------------------------------------------------------------------------- */

Test(ops_expr, special_values_follow_numpy)
{
    const double nan = NAN, inf = INFINITY;
    cr_assert(isnan(eval3("min(a, b)", SL_DTYPE_F64, nan, 1, 0)));
    cr_assert(isnan(eval3("min(a, b)", SL_DTYPE_F64, 1, nan, 0)));
    cr_assert(isnan(eval3("max(a, b)", SL_DTYPE_F64, 1, nan, 0)));
    cr_assert(same_bits(eval3("max(a, b)", SL_DTYPE_F64, 0.0, -0.0, 0), -0.0), "ties: the second");
    cr_assert(same_bits(eval3("min(a, b)", SL_DTYPE_F64, -0.0, 0.0, 0), 0.0), "ties: the second");
    cr_assert(isnan(eval3("clip(a, b, c)", SL_DTYPE_F64, 1, nan, 2)));
    cr_assert_eq(eval3("clip(a, b, c)", SL_DTYPE_F64, 5, 0, 2), 2);
    cr_assert_eq(eval3("a % b", SL_DTYPE_F64, 7, -3, 0), -2);
    cr_assert_eq(eval3("a % b", SL_DTYPE_F64, -7, 3, 0), 2);
    cr_assert(same_bits(eval3("a % b", SL_DTYPE_F64, 3, -3, 0), -0.0));
    cr_assert(same_bits(eval3("a % b", SL_DTYPE_F64, -0.0, 2, 0), 0.0));
    cr_assert_eq(eval3("a % b", SL_DTYPE_F64, -1, inf, 0), inf);
    cr_assert(isnan(eval3("a % b", SL_DTYPE_F64, 5, 0, 0)));
    cr_assert(isnan(eval3("a % b", SL_DTYPE_F64, inf, 2, 0)));
    cr_assert_eq(eval3("a / b", SL_DTYPE_F64, 1, 0, 0), inf);
    cr_assert_eq(eval3("a / b", SL_DTYPE_F64, -1, 0, 0), -inf);
    cr_assert(isnan(eval3("a / b", SL_DTYPE_F64, 0, 0, 0)));
    cr_assert(same_bits(eval1("sign(a)", -0.0), 0.0));
    cr_assert(isnan(eval1("sign(a)", nan)));
    cr_assert_eq(eval1("sign(a)", -3), -1);
    cr_assert_eq(eval1("round(a)", 2.5), 2);
    cr_assert_eq(eval1("round(a)", -1.5), -2);
    cr_assert_eq(eval1("round(a)", 0.5), 0);
    cr_assert_eq(eval1("where(a, 1, 2)", nan), 1, "NaN is true");
    cr_assert_eq(eval1("not a", nan), 0);
    cr_assert_eq(eval1("a and 1", nan), 1);
    cr_assert_eq(eval1("a == a", nan), 0);
    cr_assert_eq(eval1("a != a", nan), 1);
    cr_assert_eq(eval1("isfinite(a)", inf), 0);
    cr_assert_eq(eval1("isfinite(a)", nan), 0);
    cr_assert_eq(eval1("isnan(a)", nan), 1);
    cr_assert_eq(eval1("abs(a)", -inf), inf);
    cr_assert_eq(eval1("sqrt(a)", 2), sqrt(2.0));
    cr_assert(isnan(eval1("sqrt(a)", -1)));
    cr_assert_eq(eval1("a ** 0", nan), 1);
    cr_assert_eq(eval1("trunc(a) + floor(a) + ceil(a)", -2.5), -2 - 3 - 2);
}

Test(ops_expr, functions_compute_what_libm_does)
{
    const double x = 0.7;
    cr_assert_eq(eval1("exp(a)", x), exp(x));
    cr_assert_eq(eval1("log(a)", x), log(x));
    cr_assert_eq(eval1("log1p(a)", x), log1p(x));
    cr_assert_eq(eval1("expm1(a)", x), expm1(x));
    cr_assert_eq(eval1("log10(a)", x), log10(x));
    cr_assert_eq(eval1("log2(a)", x), log2(x));
    cr_assert_eq(eval1("sin(a) + cos(a)", x), sin(x) + cos(x));
    cr_assert_eq(eval1("tan(a)", x), tan(x));
    cr_assert_eq(eval1("a ** 1.5", x), pow(x, 1.5));
    cr_assert_eq(eval3("sin(a)", SL_DTYPE_F32, x, 0, 0), (double)sinf((float)x));
}

Test(ops_expr, float32_and_float64_working_types_differ)
{
    cr_assert_eq(eval3("a + 1e-8", SL_DTYPE_F32, 1, 0, 0), 1);
    cr_assert_eq(eval3("a + 1e-8", SL_DTYPE_F64, 1, 0, 0), 1 + 1e-8);
    cr_assert_eq(eval3("0.1 * 3", SL_DTYPE_F32, 0, 0, 0), (double)(0.1f * 3.0f));
    cr_assert_eq(eval3("0.1 * 3", SL_DTYPE_F64, 0, 0, 0), 0.1 * 3.0);
    cr_assert_eq(eval3("a", SL_DTYPE_F32, 0.1, 0, 0), (double)0.1f);
    /* An int64 input rounds once into float32 (numpy's astype), from the
     * exact integer: 2^60 + 2^36 + 1 -> 2^60 + 2^37. */
    static const char *const n1[] = {"a"};
    const sl_dtype i64 = SL_DTYPE_I64;
    int64_t in = ((int64_t)1 << 60) + ((int64_t)1 << 36) + 1;
    double out;
    struct sl_view vi, vo;
    cr_assert_eq(sl_view_init(&vi, SL_DTYPE_I64, 0, NULL, &in, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, SL_DTYPE_F64, 0, NULL, &out, NULL), SL_OK);
    for (int t = 0; t < 2; t++) {
        sl_expr *e = NULL;
        const sl_dtype compute = t == 0 ? SL_DTYPE_F32 : SL_DTYPE_F64;
        cr_assert_eq(sl_expr_compile("a", 1, n1, &i64, compute, NULL, &e, NULL), SL_OK);
        cr_assert_eq(sl_expr_eval(e, &vi, &vo, NULL), SL_OK);
        cr_assert_eq(out, t == 0 ? 0x1p60 + 0x1p37 : 0x1p60 + 0x1p36);
        sl_expr_free(e);
    }
}

/* Evaluate "a" (float64 in, working float64) into one element of `to`. */
static long double
store_as(double v, sl_dtype to)
{
    static const char *const n1[] = {"a"};
    const sl_dtype f64 = SL_DTYPE_F64;
    sl_expr *e = NULL;
    cr_assert_eq(sl_expr_compile("a * 1", 1, n1, &f64, SL_DTYPE_F64, NULL, &e, NULL), SL_OK);
    unsigned char out[16] = {0};
    struct sl_view vi, vo;
    cr_assert_eq(sl_view_init(&vi, SL_DTYPE_F64, 0, NULL, &v, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&vo, to, 0, NULL, out, NULL), SL_OK);
    cr_assert_eq(sl_expr_eval(e, &vi, &vo, NULL), SL_OK);
    sl_expr_free(e);
    if (to == SL_DTYPE_BOOL)
        cr_assert(out[0] <= 1);
    return ref_get(to, out, 0);
}

Test(ops_expr, every_output_dtype_follows_the_cast_rules)
{
    const double v[] = {2.5, -1.5, 300.7, -300, NAN, INFINITY, -INFINITY, 0.5, 1e20, -0.0};
    /* clang-format off */
    const struct { sl_dtype to; long double want[10]; } rows[] = {
        {SL_DTYPE_BOOL, {1, 1, 1, 1, 1, 1, 1, 1, 1, 0}},
        {SL_DTYPE_U8,   {2, 0, 255, 0, 0, 255, 0, 0, 255, 0}},
        {SL_DTYPE_I8,   {2, -2, 127, -128, 0, 127, -128, 0, 127, 0}},
        {SL_DTYPE_U16,  {2, 0, 301, 0, 0, 65535, 0, 0, 65535, 0}},
        {SL_DTYPE_I16,  {2, -2, 301, -300, 0, 32767, -32768, 0, 32767, 0}},
        {SL_DTYPE_U32,  {2, 0, 301, 0, 0, 4294967295.0L, 0, 0, 4294967295.0L, 0}},
        {SL_DTYPE_I32,  {2, -2, 301, -300, 0, 2147483647, -2147483648.0L, 0, 2147483647, 0}},
        {SL_DTYPE_U64,  {2, 0, 301, 0, 0, 18446744073709551615.0L, 0, 0, 1e20L > 18446744073709551615.0L ? 18446744073709551615.0L : 0, 0}},
        {SL_DTYPE_I64,  {2, -2, 301, -300, 0, 9223372036854775807.0L, -9223372036854775808.0L, 0, 9223372036854775807.0L, 0}},
        {SL_DTYPE_F32,  {2.5, -1.5, (float)300.7, -300, NAN, INFINITY, -INFINITY, 0.5, (float)1e20, -0.0}},
        {SL_DTYPE_F64,  {2.5, -1.5, 300.7, -300, NAN, INFINITY, -INFINITY, 0.5, 1e20, -0.0}},
    };
    /* clang-format on */
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        for (size_t i = 0; i < 10; i++) {
            const long double got = store_as(v[i], rows[r].to), want = rows[r].want[i];
            cr_assert((isnan(got) && isnan(want)) || got == want, "%g into %s: %Lg, not %Lg", v[i],
                      sl_dtype_name(rows[r].to), got, want);
        }
    }
}

/* ---- views ------------------------------------------------------------------------------ */

Test(ops_expr, broadcast_views_with_stride_zero)
{
    /* a: 4x5 contiguous; b: one row broadcast down (stride 0); c: one
     * column broadcast across; the constant 0.5 everywhere. */
    double a[20], b[5], c[4], out[20];
    for (int i = 0; i < 20; i++)
        a[i] = i;
    for (int j = 0; j < 5; j++)
        b[j] = 100 * j;
    for (int i = 0; i < 4; i++)
        c[i] = -i;
    const uint64_t shape[2] = {4, 5};
    struct sl_view v[3], o;
    cr_assert_eq(sl_view_init(&v[0], SL_DTYPE_F64, 2, shape, a, NULL), SL_OK);
    v[1] = v[0];
    v[1].data = b;
    v[1].stride[0] = 0;
    v[1].stride[1] = 1;
    v[2] = v[0];
    v[2].data = c;
    v[2].stride[0] = 1;
    v[2].stride[1] = 0;
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_F64, 2, shape, out, NULL), SL_OK);
    sl_expr *e = compile_abc("a + b * c + 0.5", SL_DTYPE_F64);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_OK, "%s", err.text);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            cr_assert_eq(out[5 * i + j], 5 * i + j + 100.0 * j * -i + 0.5, "at %d, %d", i, j);
    /* All of them stride 0: one value everywhere. */
    for (int k = 0; k < 3; k++)
        v[k].stride[0] = v[k].stride[1] = 0;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_OK, "%s", err.text);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(out[i], 0.5);
    sl_expr_free(e);
}

/* Random strided, reversed, permuted views of `shape` against the
 * per-element value of `want`. */
static void
check_strided(const char *text, uint32_t rank, const uint64_t *shape, sl_dtype in_dt,
              sl_dtype out_dt, sl_dtype compute, double (*want)(double, double), uint64_t seed)
{
    static const char *const ab[] = {"a", "b"};
    const sl_dtype dts[2] = {in_dt, SL_DTYPE_F32};
    sl_expr *e = NULL;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_compile(text, 2, ab, dts, compute, NULL, &e, &err), SL_OK, "%s", err.text);
    uint64_t s = seed;
    struct ref_buf in[2], out;
    ref_buf_make(&in[0], in_dt, rank, shape, false, &s);
    ref_buf_make(&in[1], SL_DTYPE_F32, rank, shape, false, &s);
    ref_buf_make(&out, out_dt, rank, shape, seed % 2 == 0, &s);
    ref_fill(&in[0].view, &s, false);
    ref_fill(&in[1].view, &s, false);
    const struct sl_view views[2] = {in[0].view, in[1].view};
    cr_assert_eq(sl_expr_eval(e, views, &out.view, &err), SL_OK, "%s", err.text);
    uint64_t idx[SL_MAX_RANK] = {0};
    do {
        const double x = (double)ref_get(in_dt, in[0].view.data, ref_offset(&in[0].view, idx));
        const double y =
            (double)ref_get(SL_DTYPE_F32, in[1].view.data, ref_offset(&in[1].view, idx));
        const long double w = ref_cast_value(want(x, y), out_dt);
        const long double g = ref_get(out_dt, out.view.data, ref_offset(&out.view, idx));
        cr_assert((isnan(g) && isnan(w)) || g == w, "%s at x=%g y=%g: %Lg, not %Lg", text, x, y, g,
                  w);
    } while (ref_next(idx, shape, rank));
    for (int i = 0; i < 2; i++)
        ref_buf_free(&in[i]);
    ref_buf_free(&out);
    sl_expr_free(e);
}

static double
want_flat(double x, double y)
{
    return (x - y) / fmax(y, 1) - 0.25;
}

Test(ops_expr, strided_and_reversed_views_match_the_reference)
{
    /* Long rows (several tiles), short rows (several rows per tile), rank 4. */
    static const uint64_t shapes[][4] = {
        {3, 1000, 1, 1}, {200, 3, 1, 1}, {5, 4, 3, 7}, {1, 1, 1, 1}};
    static const uint32_t ranks[] = {2, 2, 4, 1};
    for (uint64_t k = 0; k < 4; k++)
        check_strided("(a - b) / max(b, 1) - 0.25", ranks[k], shapes[k], SL_DTYPE_F64, SL_DTYPE_F64,
                      SL_DTYPE_F64, want_flat, 11 + k);
}

static double
want_u16(double x, double y)
{
    const float r = (float)x * 2.0f + (float)y;
    return r;
}

Test(ops_expr, integer_inputs_and_outputs_through_strided_views)
{
    static const uint64_t shape[3] = {6, 7, 130};
    check_strided("a * 2 + b", 3, shape, SL_DTYPE_U16, SL_DTYPE_F32, SL_DTYPE_F32, want_u16, 5);
    check_strided("a * 2 + b", 3, shape, SL_DTYPE_U16, SL_DTYPE_U8, SL_DTYPE_F32, want_u16, 6);
}

Test(ops_expr, in_place_evaluation_is_allowed)
{
    double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60};
    const uint64_t shape[1] = {6};
    struct sl_view v[3];
    cr_assert_eq(sl_view_init(&v[0], SL_DTYPE_F64, 1, shape, a, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&v[1], SL_DTYPE_F64, 1, shape, b, NULL), SL_OK);
    v[2] = v[1];
    sl_expr *e = compile_abc("a * 2 + b - c", SL_DTYPE_F64);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_eval(e, v, &v[0], &err), SL_OK, "%s", err.text);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(a[i], 2.0 * (i + 1));
    sl_expr_free(e);
}

Test(ops_expr, overlapping_output_is_refused)
{
    double a[7] = {0};
    const uint64_t shape[1] = {6};
    struct sl_view v[3], o;
    cr_assert_eq(sl_view_init(&v[0], SL_DTYPE_F64, 1, shape, a, NULL), SL_OK);
    v[1] = v[2] = v[0];
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_F64, 1, shape, a + 1, NULL), SL_OK);
    sl_expr *e = compile_abc("a + 1", SL_DTYPE_F64);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "overlaps input 0 (\"a\")"), "%s", err.text);
    sl_expr_free(e);
}

Test(ops_expr, mismatched_inputs_name_index_dimension_and_extents)
{
    double a[30] = {0}, out[30];
    const uint64_t shape[2] = {5, 6}, other[2] = {5, 5};
    struct sl_view v[3], o;
    cr_assert_eq(sl_view_init(&v[0], SL_DTYPE_F64, 2, shape, a, NULL), SL_OK);
    cr_assert_eq(sl_view_init(&v[1], SL_DTYPE_F64, 2, other, a, NULL), SL_OK);
    v[2] = v[0];
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_F64, 2, shape, out, NULL), SL_OK);
    sl_expr *e = compile_abc("a + b + c", SL_DTYPE_F64);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_EINVAL);
    cr_assert_not_null(
        strstr(err.text, "input 1 (\"b\") has extent 5 in dimension 1, the output 6"), "%s",
        err.text);
    v[1] = v[0];
    v[1].dtype = SL_DTYPE_F32;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "input 1 (\"b\") is float32, but the program was compiled "
                                        "for float64"),
                       "%s", err.text);
    v[1].dtype = SL_DTYPE_F64;
    v[1].rank = 1;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "has rank 1, the output rank 2"), "%s", err.text);
    o.dtype = SL_DTYPE_F16;
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_EUNSUPPORTED);
    sl_expr_free(e);
}

Test(ops_expr, unused_inputs_may_have_no_data)
{
    double a[3] = {1, 2, 3}, out[3];
    const uint64_t shape[1] = {3};
    struct sl_view v[3], o;
    cr_assert_eq(sl_view_init(&v[0], SL_DTYPE_F64, 1, shape, a, NULL), SL_OK);
    memset(&v[1], 0, sizeof v[1]);
    memset(&v[2], 0, sizeof v[2]);
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_F64, 1, shape, out, NULL), SL_OK);
    sl_expr *e = compile_abc("where(0, b, a) + 1", SL_DTYPE_F64);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_OK, "%s", err.text);
    cr_assert_eq(out[2], 4);
    /* An empty output needs nothing but matching shapes. */
    const uint64_t none[1] = {0};
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_F64, 1, none, NULL, NULL), SL_OK);
    v[0].shape[0] = 0;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_OK, "%s", err.text);
    sl_expr_free(e);
}

/* ---- composition ----------------------------------------------------------------------------- */

/* Evaluate e on 1-element float64 inputs x[0 .. n) (dtype dts[i]) into float64. */
static double
eval_n(const sl_expr *e, const double *x, const sl_dtype *dts, size_t n)
{
    unsigned char mem[8][8];
    struct sl_view v[8], o;
    double out = 0;
    for (size_t i = 0; i < n; i++) {
        ref_put(dts[i], mem[i], 0, x[i]);
        cr_assert_eq(sl_view_init(&v[i], dts[i], 0, NULL, mem[i], NULL), SL_OK);
    }
    cr_assert_eq(sl_view_init(&o, SL_DTYPE_F64, 0, NULL, &out, NULL), SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_eval(e, v, &o, &err), SL_OK, "%s", err.text);
    return out;
}

Test(ops_expr, compose_feeds_the_converted_result_to_the_outer_input)
{
    static const char *const in_names[] = {"a"}, *const out_names[] = {"x", "y"};
    const sl_dtype in_dt[] = {SL_DTYPE_F64}, out_dt[] = {SL_DTYPE_U8, SL_DTYPE_F64};
    sl_expr *inner = NULL, *outer = NULL, *c = NULL, *again = NULL;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_compile("a * 100", 1, in_names, in_dt, SL_DTYPE_F64, NULL, &inner, &err),
                 SL_OK);
    cr_assert_eq(sl_expr_compile("x + y", 2, out_names, out_dt, SL_DTYPE_F64, NULL, &outer, &err),
                 SL_OK);
    cr_assert_eq(sl_expr_compose(outer, 0, inner, SL_DTYPE_U8, NULL, &c, &err), SL_OK, "%s",
                 err.text);
    /* Inputs: inner's a, then outer's y. */
    cr_assert_eq(sl_expr_n_inputs(c), 2);
    cr_assert_str_eq(sl_expr_input_name(c, 0), "a");
    cr_assert_str_eq(sl_expr_input_name(c, 1), "y");
    char text[128];
    sl_expr_format(c, text, sizeof text);
    cr_assert_str_eq(text, "(uint8((a * 100)) + y)");
    const sl_dtype dts[2] = {SL_DTYPE_F64, SL_DTYPE_F64};
    const double x1[2] = {3.7, 0.25}, x2[2] = {0.025, 1}, x3[2] = {-1, 0};
    cr_assert_eq(eval_n(c, x1, dts, 2), 255.25);
    cr_assert_eq(eval_n(c, x2, dts, 2), 3, "2.5 rounds to even");
    cr_assert_eq(eval_n(c, x3, dts, 2), 0);
    /* The text compiles to the same program. */
    static const char *const c_names[] = {"a", "y"};
    cr_assert_eq(sl_expr_compile(text, 2, c_names, dts, SL_DTYPE_F64, NULL, &again, &err), SL_OK);
    char text2[128];
    sl_expr_format(again, text2, sizeof text2);
    cr_assert_str_eq(text, text2);
    cr_assert_eq(eval_n(again, x1, dts, 2), 255.25);
    sl_expr_free(again);
    sl_expr_free(c);
    sl_expr_free(inner);
    sl_expr_free(outer);
}

Test(ops_expr, compose_through_floats_rounds_only_to_that_dtype)
{
    static const char *const n1[] = {"a"};
    const sl_dtype f64 = SL_DTYPE_F64, f32 = SL_DTYPE_F32;
    sl_expr *inner = NULL, *outer = NULL, *c = NULL;
    cr_assert_eq(sl_expr_compile("a / 3", 1, n1, &f64, SL_DTYPE_F64, NULL, &inner, NULL), SL_OK);
    cr_assert_eq(sl_expr_compile("a * 3", 1, n1, &f32, SL_DTYPE_F64, NULL, &outer, NULL), SL_OK);
    cr_assert_eq(sl_expr_compose(outer, 0, inner, SL_DTYPE_F32, NULL, &c, NULL), SL_OK);
    const double x = 1;
    cr_assert_eq(eval_n(c, &x, &f64, 1), (double)(float)(1.0 / 3) * 3);
    sl_expr_free(c);
    sl_expr_free(outer);
    /* Through float64 in a float64 program: nothing changes. */
    cr_assert_eq(sl_expr_compile("a * 3", 1, n1, &f64, SL_DTYPE_F64, NULL, &outer, NULL), SL_OK);
    cr_assert_eq(sl_expr_compose(outer, 0, inner, SL_DTYPE_F64, NULL, &c, NULL), SL_OK);
    cr_assert_eq(eval_n(c, &x, &f64, 1), 1.0 / 3 * 3);
    sl_expr_free(c);
    sl_expr_free(outer);
    sl_expr_free(inner);
}

Test(ops_expr, compose_renames_clashing_inputs_and_checks_its_arguments)
{
    static const char *const n_in[] = {"a", "b"}, *const n_out[] = {"a", "x", "b"};
    const sl_dtype dt[3] = {SL_DTYPE_F64, SL_DTYPE_I16, SL_DTYPE_F64};
    sl_expr *inner = NULL, *outer = NULL, *c = NULL;
    cr_assert_eq(sl_expr_compile("a - b", 2, n_in, f64x3, SL_DTYPE_F64, NULL, &inner, NULL), SL_OK);
    cr_assert_eq(sl_expr_compile("a * x + b", 3, n_out, dt, SL_DTYPE_F64, NULL, &outer, NULL),
                 SL_OK);
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_compose(outer, 1, inner, SL_DTYPE_I16, NULL, &c, &err), SL_OK, "%s",
                 err.text);
    cr_assert_eq(sl_expr_n_inputs(c), 4);
    cr_assert_str_eq(sl_expr_input_name(c, 2), "a_2");
    cr_assert_str_eq(sl_expr_input_name(c, 3), "b_2");
    char text[128];
    sl_expr_format(c, text, sizeof text);
    cr_assert_str_eq(text, "((a_2 * int16((a - b))) + b_2)");
    const double x[4] = {1000, 0.5, 2, 7};
    const sl_dtype dts[4] = {SL_DTYPE_F64, SL_DTYPE_F64, SL_DTYPE_F64, SL_DTYPE_F64};
    cr_assert_eq(eval_n(c, x, dts, 4), 2 * 1000 + 7, "999.5 rounds to 1000");
    sl_expr_free(c);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_compose(outer, 3, inner, SL_DTYPE_I16, NULL, &c, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "slot 3"), "%s", err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_compose(outer, 1, inner, SL_DTYPE_U8, NULL, &c, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "outer input 1 (\"x\") is int16, not the uint8"), "%s",
                       err.text);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_compose(outer, 1, inner, SL_DTYPE_F16, NULL, &c, &err), SL_EINVAL);
    sl_expr *f32 = NULL;
    cr_assert_eq(sl_expr_compile("a", 2, n_in, dt, SL_DTYPE_F32, NULL, &f32, NULL), SL_OK);
    err = SL_ERROR_INIT;
    cr_assert_eq(sl_expr_compose(outer, 1, f32, SL_DTYPE_I16, NULL, &c, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "computes in float64, the inner in float32"), "%s",
                       err.text);
    sl_expr_free(f32);
    sl_expr_free(inner);
    sl_expr_free(outer);
}

Test(ops_expr, compose_of_a_constant_folds)
{
    static const char *const n1[] = {"a"};
    const sl_dtype u8 = SL_DTYPE_U8, f64 = SL_DTYPE_F64;
    sl_expr *inner = NULL, *outer = NULL, *c = NULL;
    cr_assert_eq(sl_expr_compile("300", 0, NULL, NULL, SL_DTYPE_F64, NULL, &inner, NULL), SL_OK);
    cr_assert_eq(sl_expr_compile("a + 1", 1, n1, &u8, SL_DTYPE_F64, NULL, &outer, NULL), SL_OK);
    cr_assert_eq(sl_expr_compose(outer, 0, inner, SL_DTYPE_U8, NULL, &c, NULL), SL_OK);
    cr_assert_eq(sl_expr_n_inputs(c), 0);
    char text[32];
    sl_expr_format(c, text, sizeof text);
    cr_assert_str_eq(text, "256");
    cr_assert_eq(eval_n(c, NULL, &f64, 0), 256);
    sl_expr_free(c);
    sl_expr_free(inner);
    sl_expr_free(outer);
}

/* ---- allocation failures -----------------------------------------------------------------------
 */

/* An allocator that fails allocation number `fail_at` (0-based) and counts
 * what is outstanding. */
struct failing {
    int n_calls, fail_at;
    size_t outstanding;
};

static void *
failing_alloc(void *ctx, size_t n, size_t align)
{
    struct failing *f = ctx;
    if (f->n_calls++ == f->fail_at)
        return NULL;
    f->outstanding += n;
    return aligned_alloc(align < sizeof(void *) ? sizeof(void *) : align,
                         (n + align - 1) / align * align);
}

static void
failing_free(void *ctx, void *p, size_t n)
{
    struct failing *f = ctx;
    if (p != NULL)
        f->outstanding -= n;
    free(p);
}

Test(ops_expr, allocation_failures_give_enomem_and_leak_nothing)
{
    static const char *const n1[] = {"a"};
    const sl_dtype u8 = SL_DTYPE_U8;
    for (int k = 0;; k++) {
        struct failing f = {.fail_at = k};
        const struct sl_allocator a = {.ctx = &f, .alloc = failing_alloc, .free = failing_free};
        struct sl_error err = SL_ERROR_INIT;
        sl_expr *inner = NULL, *outer = NULL, *c = NULL;
        sl_status st =
            sl_expr_compile("(a - 1) / max(a, 2)", 1, n1, &u8, SL_DTYPE_F64, &a, &inner, &err);
        if (st == SL_OK)
            st = sl_expr_compile("a * 2", 1, n1, &u8, SL_DTYPE_F64, &a, &outer, &err);
        if (st == SL_OK)
            st = sl_expr_compose(outer, 0, inner, SL_DTYPE_U8, &a, &c, &err);
        sl_expr_free(c);
        sl_expr_free(inner);
        sl_expr_free(outer);
        cr_assert_eq(f.outstanding, 0, "failing allocation %d leaks %zu bytes", k, f.outstanding);
        if (st == SL_OK) {
            cr_assert_gt(k, 4);
            break;
        }
        cr_assert_eq(st, SL_ENOMEM, "allocation %d: %s", k, err.text);
        cr_assert_eq(err.code, SL_ENOMEM);
    }
}
