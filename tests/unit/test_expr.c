/*
 * Unit tests of the integer expression evaluator (kopt_expr_eval / kopt_expr_check over a
 * kopt_env of kopt_vars tables) and of the kopt_vars helpers, including every documented
 * error with its message and column.
 */
#include "ktest.h"

#include "kopt/expr.h"

static kopt_ctx *ctx;
static kopt_vars sizes = KOPT_VARS_INIT, params = KOPT_VARS_INIT;
static kopt_env env;   /* {sizes, params}: sizes win */

static void setup(void)
{
    ctx = kopt_ctx_new();
    kopt_vars_set(&sizes, "N", 1000);
    kopt_vars_set(&sizes, "M", 7);
    kopt_vars_set(&sizes, "K", 0);
    kopt_vars_set(&sizes, "BIG", INT64_MAX);
    kopt_vars_set(&sizes, "_u1", 3);
    kopt_vars_set(&params, "T", 256);
    kopt_vars_set(&params, "N", 5);          /* shadowed by sizes.N */
    kopt_vars_set(&params, "NEG", -9);
    env.n = 2;
    env.tables[0] = &sizes;
    env.tables[1] = &params;
}

static void teardown(void)
{
    kopt_vars_free(&sizes);
    kopt_vars_free(&params);
    kopt_ctx_free(ctx);
}

/* text evaluates to want under env */
#define EXPECT_VAL(text, want)                                                        \
    do {                                                                              \
        int64_t v_ = INT64_C(-77777);                                                 \
        kopt_status st_ = kopt_expr_eval(ctx, (text), &env, &v_);                     \
        if (!CHECK_EQ_INT(st_, KOPT_OK))                                              \
            fprintf(stderr, "  '%s': %s\n", (text), kopt_errmsg(ctx));                \
        else if (!CHECK_EQ_INT(v_, (want)))                                           \
            fprintf(stderr, "  '%s'\n", (text));                                      \
    } while (0)

/* text fails with KOPT_E_INVALID; the message names the expression and contains what;
 * the output is left alone */
#define EXPECT_ERR(text, what)                                                        \
    do {                                                                              \
        int64_t v_ = INT64_C(-77777);                                                 \
        kopt_status st_ = kopt_expr_eval(ctx, (text), &env, &v_);                     \
        CHECK_EQ_INT(st_, KOPT_E_INVALID);                                            \
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), (what));                                 \
        CHECK_EQ_INT(v_, INT64_C(-77777));                                            \
    } while (0)

static void test_literals(void)
{
    EXPECT_VAL("42", 42);
    EXPECT_VAL("0", 0);
    EXPECT_VAL("  7  ", 7);
    EXPECT_VAL("0x10", 16);
    EXPECT_VAL("9223372036854775807", INT64_MAX);
    EXPECT_VAL("1000000000000", INT64_C(1000000000000));
}

static void test_precedence(void)
{
    EXPECT_VAL("2+3*4", 14);
    EXPECT_VAL("2*3+4", 10);
    EXPECT_VAL("10-4-3", 3);          /* left associative */
    EXPECT_VAL("100/10/5", 2);
    EXPECT_VAL("7%4*2", 6);
    EXPECT_VAL("2+3*4-5/2", 12);
    EXPECT_VAL("1+2*3==7", 1);        /* arithmetic above comparison */
    EXPECT_VAL("2<3==1", 1);
    EXPECT_VAL("1 || 0 && 0", 1);     /* && above || */
    EXPECT_VAL("0 && 0 || 1", 1);
    EXPECT_VAL("1 < 2 && 3 > 4", 0);  /* comparison above && */
    EXPECT_VAL("1 + 1 ? 10 : 20", 10); /* ternary lowest */
    EXPECT_VAL("0 || 0 ? 10 : 20", 20);
}

static void test_parentheses(void)
{
    EXPECT_VAL("(2+3)*4", 20);
    EXPECT_VAL("((((1))))", 1);
    EXPECT_VAL("2*(3+(4-1))", 12);
    EXPECT_VAL("( N - M ) * 2", 1986);
    EXPECT_VAL("100/(10/5)", 50);
}

static void test_unary(void)
{
    EXPECT_VAL("-5", -5);
    EXPECT_VAL("--5", 5);
    EXPECT_VAL("- -5", 5);
    EXPECT_VAL("-(3-5)", 2);
    EXPECT_VAL("+4", 4);
    EXPECT_VAL("2*-3", -6);
    EXPECT_VAL("-2*-3", 6);
    EXPECT_VAL("-N", -1000);
    EXPECT_VAL("-NEG", 9);
    EXPECT_VAL("!0", 1);
    EXPECT_VAL("!7", 0);
    EXPECT_VAL("!!5", 1);
    EXPECT_VAL("!K", 1);
    EXPECT_VAL("-BIG", -INT64_MAX);
    EXPECT_VAL("-BIG-1", INT64_MIN);
}

static void test_division(void)
{
    EXPECT_VAL("7/2", 3);
    EXPECT_VAL("-7/2", -3);           /* truncates toward zero */
    EXPECT_VAL("7/-2", -3);
    EXPECT_VAL("7%3", 1);
    EXPECT_VAL("-7%3", -1);
    EXPECT_VAL("K/5", 0);
}

static void test_comparisons(void)
{
    EXPECT_VAL("3==3", 1);
    EXPECT_VAL("3==4", 0);
    EXPECT_VAL("3!=4", 1);
    EXPECT_VAL("3!=3", 0);
    EXPECT_VAL("3<4", 1);
    EXPECT_VAL("4<4", 0);
    EXPECT_VAL("4<=4", 1);
    EXPECT_VAL("5<=4", 0);
    EXPECT_VAL("5>4", 1);
    EXPECT_VAL("4>4", 0);
    EXPECT_VAL("4>=4", 1);
    EXPECT_VAL("3>=4", 0);
    EXPECT_VAL("N % 8 == 0", 1);
    EXPECT_VAL("NEG < 0", 1);
    EXPECT_VAL("1<2<3", 1);           /* (1<2)<3 */
    EXPECT_VAL("3>2>1", 0);           /* (3>2)>1 */
}

static void test_logic(void)
{
    EXPECT_VAL("1&&1", 1);
    EXPECT_VAL("1&&0", 0);
    EXPECT_VAL("0&&1", 0);
    EXPECT_VAL("5&&7", 1);            /* normalized to 0/1 */
    EXPECT_VAL("0||0", 0);
    EXPECT_VAL("0||2", 1);
    EXPECT_VAL("!(1&&0)", 1);
    EXPECT_VAL("T % 32 == 0 && T <= 1024", 1);
}

static void test_ternary(void)
{
    EXPECT_VAL("1?2:3", 2);
    EXPECT_VAL("0?2:3", 3);
    EXPECT_VAL("N>100?1:2", 1);
    EXPECT_VAL("0?1:0?2:3", 3);       /* right associative */
    EXPECT_VAL("1?0?4:5:6", 5);
    EXPECT_VAL("(M > 5 ? M : 5) * 2", 14);
    EXPECT_VAL("K ? 1 : -1", -1);
}

static void test_functions(void)
{
    EXPECT_VAL("min(3,-2)", -2);
    EXPECT_VAL("min(-2,3)", -2);
    EXPECT_VAL("max(3,-2)", 3);
    EXPECT_VAL("max(-2,3)", 3);
    EXPECT_VAL("cdiv(10,3)", 4);
    EXPECT_VAL("cdiv(9,3)", 3);
    EXPECT_VAL("cdiv(0,5)", 0);
    EXPECT_VAL("cdiv(1,5)", 1);
    EXPECT_VAL("cdiv(-7,2)", -3);     /* ceiling of -3.5 */
    EXPECT_VAL("cdiv(N, T)", 4);
    EXPECT_VAL("pow2(64)", 1);
    EXPECT_VAL("pow2(1)", 1);
    EXPECT_VAL("pow2(96)", 0);
    EXPECT_VAL("pow2(0)", 0);
    EXPECT_VAL("pow2(-4)", 0);
    EXPECT_VAL("log2(1)", 0);
    EXPECT_VAL("log2(2)", 1);
    EXPECT_VAL("log2(1023)", 9);      /* floor */
    EXPECT_VAL("log2(1024)", 10);
    EXPECT_VAL("log2(BIG)", 62);
    EXPECT_VAL("abs(-5)", 5);
    EXPECT_VAL("abs(5)", 5);
    EXPECT_VAL("abs(0)", 0);
    EXPECT_VAL("abs(NEG)", 9);
    EXPECT_VAL("align(10,8)", 16);
    EXPECT_VAL("align(16,8)", 16);
    EXPECT_VAL("align(0,8)", 0);
    EXPECT_VAL("align(1,1)", 1);
    EXPECT_VAL("min(max(1,2),3)", 2);
    EXPECT_VAL("max( min(N, 64) , cdiv(T , 2) )", 128);
    EXPECT_VAL("cdiv(N, 256) * 256 == align(N, 256)", 1);
    EXPECT_VAL("2 * min(3, 4) + 1", 7);
}

static void test_names_and_tables(void)
{
    kopt_vars third = KOPT_VARS_INIT;
    kopt_env rev = {2, {&params, &sizes}};
    kopt_env three = {3, {&sizes, &params, &third}};
    kopt_env empty = {0, {NULL}};
    int64_t v = 0;

    EXPECT_VAL("N", 1000);            /* sizes (first table) win over params */
    EXPECT_VAL("T", 256);             /* only in the second table */
    EXPECT_VAL("N + T", 1256);
    EXPECT_VAL("_u1 * M", 21);
    CHECK_EQ_INT(kopt_expr_eval(ctx, "N", &rev, &v), KOPT_OK);
    CHECK_EQ_INT(v, 5);               /* params first now */
    kopt_vars_set(&third, "ONLY3", 33);
    kopt_vars_set(&third, "T", 1);
    CHECK_EQ_INT(kopt_expr_eval(ctx, "ONLY3 + T", &three, &v), KOPT_OK);
    CHECK_EQ_INT(v, 289);
    /* a name is matched whole, not as a prefix of a longer one */
    CHECK_EQ_INT(kopt_expr_eval(ctx, "NN", &env, &v), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt_expr_eval(ctx, "T1", &env, &v), KOPT_E_INVALID);
    /* no tables, or no env at all: literals only */
    CHECK_EQ_INT(kopt_expr_eval(ctx, "1+1", &empty, &v), KOPT_OK);
    CHECK_EQ_INT(v, 2);
    CHECK_EQ_INT(kopt_expr_eval(ctx, "3*3", NULL, &v), KOPT_OK);
    CHECK_EQ_INT(v, 9);
    CHECK_EQ_INT(kopt_expr_eval(ctx, "N", &empty, &v), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "unknown name 'N'");
    CHECK_EQ_INT(kopt_expr_eval(ctx, "N", NULL, &v), KOPT_E_INVALID);
    kopt_vars_free(&third);
}

static void test_error_unknown_name(void)
{
    EXPECT_ERR("N + foo", "expression 'N + foo': unknown name 'foo' at column 5");
    EXPECT_ERR("foo", "unknown name 'foo' at column 1");
    EXPECT_ERR("min(N, bar)", "unknown name 'bar' at column 8");
}

static void test_error_unknown_function(void)
{
    EXPECT_ERR("foo(1)", "unknown function");
    EXPECT_ERR("N + sqrt(4)", "expression 'N + sqrt(4)': unknown function");
    /* a name that is a function, used without a call, is just an unknown name */
    EXPECT_ERR("min", "unknown name 'min'");
}

static void test_error_division_by_zero(void)
{
    EXPECT_ERR("5 / K", "expression '5 / K': division by zero at column 6");
    EXPECT_ERR("5 % 0", "division by zero");
    EXPECT_ERR("N / (M - 7)", "division by zero");
}

static void test_error_overflow(void)
{
    EXPECT_ERR("BIG * 2", "expression 'BIG * 2': integer overflow");
    EXPECT_ERR("N * N * N * N * N * N * N", "integer overflow");
    EXPECT_ERR("BIG + 1", "integer overflow");
    EXPECT_ERR("-BIG - 2", "integer overflow");
    EXPECT_ERR("1 - BIG - 3", "integer overflow");
    EXPECT_ERR("-(-BIG-1)", "integer overflow");
    EXPECT_ERR("(-BIG-1) / -1", "integer overflow");
    EXPECT_ERR("abs(-BIG-1)", "integer overflow");
    EXPECT_ERR("align(BIG, 2)", "integer overflow");
    EXPECT_ERR("9223372036854775808", "integer literal too large at column 1");
    EXPECT_ERR("99999999999999999999999", "integer literal too large");
    /* the largest values themselves are fine */
    EXPECT_VAL("BIG - 1 + 1", INT64_MAX);
    EXPECT_VAL("(BIG / 2) * 2 + 1", INT64_MAX);
}

static void test_error_trailing_junk(void)
{
    EXPECT_ERR("1 2", "expression '1 2': unexpected text at column 3");
    EXPECT_ERR("N)", "unexpected text at column 2");
    EXPECT_ERR("1 $ 2", "unexpected text at column 3");
    EXPECT_ERR("3 = 3", "unexpected text at column 3");
    EXPECT_ERR("1 & 1", "unexpected text at column 3");
    EXPECT_ERR("12abc", "not an integer");
    EXPECT_ERR("1.5", "not an integer");
}

static void test_error_empty(void)
{
    int64_t v = 5;

    EXPECT_ERR("", "unexpected end, expected a value at column 1");
    EXPECT_ERR("   ", "unexpected end, expected a value at column 4");
    EXPECT_ERR("1 +", "unexpected end, expected a value at column 4");
    EXPECT_ERR("*3", "expected a value at column 1");
    CHECK_EQ_INT(kopt_expr_eval(ctx, NULL, &env, &v), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "missing expression");
    CHECK_EQ_INT(v, 5);
}

static void test_error_missing_paren(void)
{
    EXPECT_ERR("(1+2", "expression '(1+2': expected ')' at column 5");
    EXPECT_ERR("((1)", "expected ')' at column 5");
    EXPECT_ERR("min(1,2", "expected ')' at column 8");
    EXPECT_ERR("abs(1,2)", "expected ')' at column 6");   /* abs takes one argument */
    EXPECT_ERR("min(1)", "expected ','");                 /* min takes two */
    EXPECT_ERR("1 ? 2", "expected ':'");
}

static void test_error_cdiv_log2_align(void)
{
    EXPECT_ERR("cdiv(4, 0)", "expression 'cdiv(4, 0)': cdiv by a value <= 0");
    EXPECT_ERR("cdiv(4, NEG)", "cdiv by a value <= 0");
    EXPECT_ERR("log2(0)", "expression 'log2(0)': log2 of a value <= 0");
    EXPECT_ERR("log2(K)", "log2 of a value <= 0");
    EXPECT_ERR("log2(-8)", "log2 of a value <= 0");
    EXPECT_ERR("align(5, 0)", "align to a value <= 0");
}

static void test_error_message_is_one_line_and_replaced(void)
{
    int64_t v;

    CHECK_EQ_INT(kopt_expr_eval(ctx, "foo", &env, &v), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt_expr_eval(ctx, "1/0", &env, &v), KOPT_E_INVALID);
    CHECK(strstr(kopt_errmsg(ctx), "foo") == NULL);   /* the newest error only */
    CHECK(strchr(kopt_errmsg(ctx), '\n') == NULL);
    CHECK_EQ_INT(kopt_expr_eval(ctx, "1/1", &env, &v), KOPT_OK);
    CHECK_EQ_INT(v, 1);
}

static void test_check_syntax_and_names(void)
{
    CHECK_EQ_INT(kopt_expr_check(ctx, "N * T + cdiv(M, 2)", &env), KOPT_OK);
    CHECK_EQ_INT(kopt_expr_check(ctx, "T % 32 == 0 && T <= 1024", &env), KOPT_OK);
    /* values do not matter to a check: no arithmetic errors */
    CHECK_EQ_INT(kopt_expr_check(ctx, "N / K", &env), KOPT_OK);
    CHECK_EQ_INT(kopt_expr_check(ctx, "N % K", &env), KOPT_OK);
    CHECK_EQ_INT(kopt_expr_check(ctx, "log2(K)", &env), KOPT_OK);
    CHECK_EQ_INT(kopt_expr_check(ctx, "cdiv(N, K)", &env), KOPT_OK);
    /* names and syntax do */
    CHECK_EQ_INT(kopt_expr_check(ctx, "N + WHAT", &env), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "unknown name 'WHAT' at column 5");
    CHECK_EQ_INT(kopt_expr_check(ctx, "N +", &env), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "unexpected end");
    CHECK_EQ_INT(kopt_expr_check(ctx, "(N", &env), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "expected ')'");
    CHECK_EQ_INT(kopt_expr_check(ctx, "nope(N)", &env), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "unknown function");
    CHECK_EQ_INT(kopt_expr_check(ctx, "N N", &env), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "unexpected text");
    CHECK_EQ_INT(kopt_expr_check(ctx, "", &env), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt_expr_check(ctx, NULL, &env), KOPT_E_INVALID);
}

static void test_vars_table(void)
{
    kopt_vars a = KOPT_VARS_INIT, b = KOPT_VARS_INIT;

    CHECK_EQ_INT(kopt_vars_find(&a, "X"), -1);
    CHECK_EQ_INT(kopt_vars_find(NULL, "X"), -1);
    CHECK_EQ_INT(kopt_vars_set(&a, "X", 1), KOPT_OK);
    CHECK_EQ_INT(kopt_vars_set(&a, "Y", 2), KOPT_OK);
    CHECK_EQ_INT(kopt_vars_set(&a, "X", 10), KOPT_OK);   /* replace keeps the order */
    CHECK_EQ_INT(a.n, 2);
    CHECK_EQ_STR(a.names[0], "X");
    CHECK_EQ_INT(a.values[0], 10);
    CHECK_EQ_INT(kopt_vars_find(&a, "Y"), 1);
    kopt_vars_set(&b, "Y", 5);
    kopt_vars_set(&b, "Z", 6);
    CHECK_EQ_INT(kopt_vars_copy(&a, &b), KOPT_OK);        /* copy = set each (overrides) */
    CHECK_EQ_INT(a.n, 3);
    CHECK_EQ_INT(a.values[kopt_vars_find(&a, "Y")], 5);
    CHECK_EQ_INT(a.values[kopt_vars_find(&a, "Z")], 6);
    CHECK_EQ_INT(kopt_vars_copy(&a, NULL), KOPT_OK);
    kopt_vars_free(&a);
    CHECK_EQ_INT(a.n, 0);
    CHECK(a.names == NULL && a.values == NULL);
    kopt_vars_free(&a);                                  /* twice is harmless */
    kopt_vars_free(NULL);
    kopt_vars_free(&b);
}

#define EXPECT_ASSIGN(text, want_name, want_value)                                  \
    do {                                                                            \
        char *n_ = NULL;                                                            \
        int64_t v_ = -1;                                                            \
        if (CHECK_EQ_INT(kopt_vars_parse_assign(ctx, (text), &n_, &v_), KOPT_OK)) { \
            CHECK_EQ_STR(n_, (want_name));                                          \
            CHECK_EQ_INT(v_, (want_value));                                         \
        } else {                                                                    \
            fprintf(stderr, "  '%s': %s\n", (text), kopt_errmsg(ctx));              \
        }                                                                           \
        free(n_);                                                                   \
    } while (0)

#define EXPECT_ASSIGN_BAD(text, what)                                               \
    do {                                                                            \
        char *n_ = (char *)"untouched";                                             \
        int64_t v_ = 1234;                                                          \
        CHECK_EQ_INT(kopt_vars_parse_assign(ctx, (text), &n_, &v_), KOPT_E_INVALID); \
        CHECK(n_ == NULL);                                                          \
        CHECK_EQ_INT(v_, 1234);                                                     \
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), (what));                               \
    } while (0)

static void test_parse_assign_good(void)
{
    EXPECT_ASSIGN("N=5", "N", 5);
    EXPECT_ASSIGN("BLOCK_M=128", "BLOCK_M", 128);
    EXPECT_ASSIGN("_x1=0", "_x1", 0);
    EXPECT_ASSIGN("x=-3", "x", -3);
    EXPECT_ASSIGN("N=0x20", "N", 32);
    EXPECT_ASSIGN("N=9223372036854775807", "N", INT64_MAX);
}

static void test_parse_assign_bad(void)
{
    EXPECT_ASSIGN_BAD("N", "'N': expected NAME=INTEGER");
    EXPECT_ASSIGN_BAD("", "expected NAME=INTEGER");
    EXPECT_ASSIGN_BAD("=5", "'=5': expected NAME=INTEGER");
    EXPECT_ASSIGN_BAD("1N=5", "expected NAME=INTEGER");
    EXPECT_ASSIGN_BAD("N-1=5", "expected NAME=INTEGER");
    EXPECT_ASSIGN_BAD("N =5", "expected NAME=INTEGER");
    EXPECT_ASSIGN_BAD("N=", "'N=': the value is not an integer");
    EXPECT_ASSIGN_BAD("N=abc", "the value is not an integer");
    EXPECT_ASSIGN_BAD("N=5x", "the value is not an integer");
    EXPECT_ASSIGN_BAD("N=1.5", "the value is not an integer");
    EXPECT_ASSIGN_BAD("N=2*3", "the value is not an integer");
    EXPECT_ASSIGN_BAD("N=99999999999999999999", "the value is not an integer");
}

/* ---- regressions: library bugs found by these tests, fixed since ---- */

/* expr.h promises C precedence: == and != bind more loosely than < <= > >=. */
static void regression_equality_binds_looser_than_relational(void)
{
    EXPECT_VAL("0 == 1 < 0", 1);      /* C: 0 == (1 < 0) */
    EXPECT_VAL("1 != 2 > 3", 1);      /* C: 1 != (2 > 3) */
}

/* The column of an unknown function should point at its name, as for unknown names. */
static void regression_unknown_function_column(void)
{
    EXPECT_ERR("foo(1)", "unknown function at column 1");
    EXPECT_ERR("1 + foo(2)", "unknown function at column 5");
}

/* C semantics (which expr.h promises) evaluate only the branch a guard selects, so the
 * usual guards against a zero size work. */
static void regression_guards_evaluate_untaken_branch(void)
{
    EXPECT_VAL("K > 0 ? 100 / K : 0", 0);
    EXPECT_VAL("K == 0 || 100 % K == 0", 1);
    EXPECT_VAL("K != 0 && 100 / K > 1", 0);
}

/* expr.h: kopt_expr_check checks syntax and names only (division by zero, log2(0) and
 * abs(INT64_MIN) already pass a check); overflow is an arithmetic error too. */
static void regression_check_reports_overflow(void)
{
    CHECK_EQ_INT(kopt_expr_check(ctx, "abs(-BIG-1)", &env), KOPT_OK);   /* passes today */
    CHECK_EQ_INT(kopt_expr_check(ctx, "BIG * 2", &env), KOPT_OK);
    CHECK_EQ_INT(kopt_expr_check(ctx, "BIG + 1", &env), KOPT_OK);
    CHECK_EQ_INT(kopt_expr_check(ctx, "(-BIG-1) / -1", &env), KOPT_OK);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_literals),
        KTEST(test_precedence),
        KTEST(test_parentheses),
        KTEST(test_unary),
        KTEST(test_division),
        KTEST(test_comparisons),
        KTEST(test_logic),
        KTEST(test_ternary),
        KTEST(test_functions),
        KTEST(test_names_and_tables),
        KTEST(test_error_unknown_name),
        KTEST(test_error_unknown_function),
        KTEST(test_error_division_by_zero),
        KTEST(test_error_overflow),
        KTEST(test_error_trailing_junk),
        KTEST(test_error_empty),
        KTEST(test_error_missing_paren),
        KTEST(test_error_cdiv_log2_align),
        KTEST(test_error_message_is_one_line_and_replaced),
        KTEST(test_check_syntax_and_names),
        KTEST(test_vars_table),
        KTEST(test_parse_assign_good),
        KTEST(test_parse_assign_bad),
        KTEST(regression_equality_binds_looser_than_relational),
        KTEST(regression_unknown_function_column),
        KTEST(regression_guards_evaluate_untaken_branch),
        KTEST(regression_check_reports_overflow),
    };
    int rc;

    setup();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    teardown();
    return rc;
}
