/*
 * Unit tests of template candidates and their search spaces: every form of a tunable
 * param in the front matter and every error it can have; refusing a template where a
 * concrete candidate is needed; instantiating a template and writing it out with fixed
 * params; the space's point ids, validity by constraints and device limits, lazy
 * enumeration of a million points, random valid points, neighbours, labels; and the
 * tuner's random numbers.
 */
#include "ktest.h"
#include "tune_fixture.h"

#include "kopt/device.h"
#include "kopt/eval.h"
#include "kopt/problem.h"
#include "kopt/profile.h"
#include "kopt/tune.h"

#include <math.h>

static kopt_ctx *ctx;
static char *tmp;
static kopt_problem *prob;

static const char *const CODE =
    "template <int T> __global__ void k(const float *x, float *y, int n) {}\n"
    "// the end of the kernel file\n";

/* A template candidate text: `params` and `constraints` are JSON fragments; the launch uses
 * T (threads) and SM (shared memory bytes) when `launch` is set. */
static char *template_text(const char *params, const char *constraints, const char *launch)
{
    kopt_buf b = KOPT_BUF_INIT;

    kopt_buf_printf(&b, "/*@kopt\n{\"params\": {%s}", params);
    if (constraints)
        kopt_buf_printf(&b, ", \"constraints\": [%s]", constraints);
    if (launch)
        kopt_buf_printf(&b, ", \"launches\": [%s]", launch);
    kopt_buf_printf(&b, ", \"options\": [\"--use_fast_math\"]}\n*/\n%s", CODE);
    return kopt_buf_detach(&b);
}

static kopt_candidate *parse_template(const char *params, const char *constraints,
                                      const char *launch)
{
    char *text = template_text(params, constraints, launch);
    kopt_candidate *c = NULL;

    if (kopt_candidate_parse(&c, ctx, text, "t.cu", prob) != KOPT_OK)
        KTEST_FAIL("template does not parse: %s", kopt_errmsg(ctx));
    free(text);
    return c;
}

static kopt_tune_space *make_space(const kopt_candidate *c, const kopt_tune_limits *lim)
{
    kopt_tune_space *s = NULL;

    if (!c)
        return NULL;
    if (kopt_tune_space_create(&s, ctx, c, &prob->sizes, lim) != KOPT_OK)
        KTEST_FAIL("space: %s", kopt_errmsg(ctx));
    return s;
}

static int values_are(const kopt_param_spec *p, const int64_t *want, int n)
{
    if (p->nvalues != n)
        return 0;
    for (int i = 0; i < n; i++)
        if (p->values[i] != want[i])
            return 0;
    return 1;
}

/* ---- param forms ------------------------------------------------------------------------ */

static void test_param_forms(void)
{
    kopt_candidate *c = parse_template(
        "\"BM\": [128, 32, 64], \"BN\": {\"range\": [1, 8]}, \"BK\": {\"range\": [0, 64, 16]},"
        " \"T\": {\"pow2\": [32, 256], \"role\": \"threads\"},"
        " \"V\": {\"values\": [1, 2, 4], \"role\": \"vector\"},"
        " \"S\": {\"range\": [2, 9, 3], \"role\": \"stages\"},"
        " \"F\": 7, \"ONE\": [5], \"ONE2\": {\"pow2\": [8, 8], \"role\": \"tile\"},"
        " \"BIG\": {\"range\": [1, 1000000]}",
        "\"BM % 32 == 0\"", NULL);
    static const int64_t bm[] = {128, 32, 64}, bn[] = {1, 2, 3, 4, 5, 6, 7, 8},
                         bk[] = {0, 16, 32, 48, 64}, t[] = {32, 64, 128, 256}, v[] = {1, 2, 4},
                         st[] = {2, 5, 8};

    if (!c)
        return;
    if (CHECK_EQ_INT(c->ntemplate_params, 7)) {
        const kopt_param_spec *p = c->template_params;
        CHECK_EQ_STR(p[0].name, "BM");
        CHECK(values_are(&p[0], bm, 3));           /* listed order is kept */
        CHECK_EQ_STR(p[0].role, "");
        CHECK_EQ_STR(p[1].name, "BN");
        CHECK(values_are(&p[1], bn, 8));
        CHECK_EQ_STR(p[2].name, "BK");
        CHECK(values_are(&p[2], bk, 5));
        CHECK_EQ_STR(p[3].name, "T");
        CHECK(values_are(&p[3], t, 4));
        CHECK_EQ_STR(p[3].role, "threads");
        CHECK_EQ_STR(p[4].name, "V");
        CHECK(values_are(&p[4], v, 3));
        CHECK_EQ_STR(p[4].role, "vector");
        CHECK_EQ_STR(p[5].name, "S");
        CHECK(values_are(&p[5], st, 3));            /* 9 is not reached by step 3 */
        CHECK_EQ_STR(p[5].role, "stages");
        CHECK_EQ_STR(p[6].name, "BIG");
        CHECK_EQ_INT(p[6].nvalues, 1000000);        /* the largest range allowed */
        CHECK_EQ_INT(p[6].values[999999], 1000000);
    }
    /* single integers and single-valued lists are fixed params */
    CHECK_EQ_INT(c->params.n, 3);
    CHECK_EQ_INT(c->params.values[kopt_vars_find(&c->params, "F")], 7);
    CHECK_EQ_INT(c->params.values[kopt_vars_find(&c->params, "ONE")], 5);
    CHECK_EQ_INT(c->params.values[kopt_vars_find(&c->params, "ONE2")], 8);
    CHECK_EQ_INT(kopt_vars_find(&c->params, "BM"), -1);
    CHECK_EQ_INT(c->nconstraints, 1);
    kopt_candidate_free(c);

    /* only fixed params: a concrete candidate */
    c = parse_template("\"A\": 1, \"B1\": [2]", NULL, NULL);
    if (c) {
        CHECK_EQ_INT(c->ntemplate_params, 0);
        CHECK_EQ_INT(c->params.n, 2);
        CHECK_EQ_INT(kopt_candidate_check_concrete(ctx, c), KOPT_OK);
    }
    kopt_candidate_free(c);
}

static const struct bad_param {
    const char *params;
    const char *constraints;
    const char *msg;       /* the error contains this (file and field path) */
    const char *msg2;      /* and this, or NULL */
} bad_params[] = {
    {"\"BM\": []", NULL, "t.cu: params.BM: empty list", NULL},
    {"\"BM\": {\"values\": []}", NULL, "t.cu: params.BM.values: empty list", NULL},
    {"\"BM\": [32, \"64\"]", NULL, "t.cu: params.BM[1]: expected an integer", NULL},
    {"\"BM\": [32, 1.5]", NULL, "t.cu: params.BM[1]: expected an integer", NULL},
    {"\"BM\": {\"values\": [1, [2]]}", NULL, "t.cu: params.BM.values[1]: expected an integer",
     NULL},
    {"\"BM\": [32, 64, 16, 64]", NULL, "t.cu: params.BM: value 64 is listed more than once",
     NULL},
    {"\"BM\": {\"range\": [8, 1]}", NULL, "t.cu: params.BM.range: lo 8 is greater than hi 1",
     NULL},
    {"\"BM\": {\"range\": [1, 8, 0]}", NULL, "t.cu: params.BM.range: step must be positive",
     "got 0"},
    {"\"BM\": {\"range\": [1, 8, -2]}", NULL, "t.cu: params.BM.range: step must be positive",
     "got -2"},
    {"\"BM\": {\"range\": [1]}", NULL, "t.cu: params.BM.range: expected [lo, hi] or", NULL},
    {"\"BM\": {\"range\": [1, 2, 3, 4]}", NULL, "t.cu: params.BM.range: expected [lo, hi]", NULL},
    {"\"BM\": {\"range\": [1, \"8\"]}", NULL, "t.cu: params.BM.range[1]: expected an integer",
     NULL},
    {"\"BM\": {\"range\": 8}", NULL, "t.cu: params.BM.range: expected [lo, hi]", NULL},
    {"\"BM\": {\"range\": [0, 1000000]}", NULL, "t.cu: params.BM.range: 1000001 values",
     "more than 1000000"},
    {"\"BM\": {\"range\": [-9000000000000000000, 9000000000000000000, 1]}", NULL,
     "t.cu: params.BM.range:", "more than 1000000"},
    {"\"BM\": {\"pow2\": [16, 100]}", NULL, "t.cu: params.BM.pow2[1]: 100 is not a power of two",
     NULL},
    {"\"BM\": {\"pow2\": [0, 8]}", NULL, "t.cu: params.BM.pow2[0]: 0 is not a power of two",
     NULL},
    {"\"BM\": {\"pow2\": [-4, 8]}", NULL, "t.cu: params.BM.pow2[0]: -4 is not a power of two",
     NULL},
    {"\"BM\": {\"pow2\": [64, 16]}", NULL, "t.cu: params.BM.pow2: lo 64 is greater than hi 16",
     NULL},
    {"\"BM\": {\"pow2\": [1, 2, 4]}", NULL, "t.cu: params.BM.pow2: expected [lo, hi]", NULL},
    {"\"BM\": {\"values\": [1, 2], \"role\": \"warps\"}", NULL,
     "t.cu: params.BM.role: unknown role 'warps'", "threads, vector, tile"},
    {"\"BM\": {\"values\": [1, 2], \"role\": 3}", NULL, "t.cu: params.BM.role: expected a string",
     NULL},
    {"\"BM\": {\"range\": [1, 4], \"step\": 2}", NULL, "t.cu: params.BM: unknown field 'step'",
     NULL},
    {"\"BM\": {\"role\": \"tile\"}", NULL, "t.cu: params.BM: expected \"values\", \"range\"",
     NULL},
    {"\"BM\": {\"range\": [1, 4], \"pow2\": [1, 4]}", NULL,
     "t.cu: params.BM: give only one of \"range\" and \"pow2\"", NULL},
    {"\"BM\": \"64\"", NULL, "t.cu: params.BM: expected an integer, a list of integers", NULL},
    {"\"BM\": 1.5", NULL, "t.cu: params.BM: expected an integer", NULL},
    {"\"N\": [1, 2]", NULL, "t.cu: params.N: 'N' is already a size name", NULL},
    {"\"2X\": [1, 2]", NULL, "t.cu: params.2X: '2X' is not a valid macro name", NULL},
    {"\"BM\": [1, 2]", "\"BM * Q <= 4\"", "t.cu: constraints[0]", "unknown name 'Q'"},
};

static void test_param_errors(void)
{
    for (int i = 0; i < KTEST_COUNT(bad_params); i++) {
        const struct bad_param *b = &bad_params[i];
        char *text = template_text(b->params, b->constraints, NULL);
        kopt_candidate *c = NULL;
        int ok = CHECK_EQ_INT(kopt_candidate_parse(&c, ctx, text, "t.cu", prob), KOPT_E_INVALID);
        ok &= CHECK(c == NULL);
        ok &= CHECK_STR_CONTAINS(kopt_errmsg(ctx), b->msg);
        if (b->msg2)
            ok &= CHECK_STR_CONTAINS(kopt_errmsg(ctx), b->msg2);
        if (!ok)
            fprintf(stderr, "  ^ case %d: %s\n", i, b->params);
        kopt_candidate_free(c);
        free(text);
    }
}

/* ---- templates are refused where a concrete candidate is needed ------------------------ */

static void test_template_refused(void)
{
    kopt_candidate *c = parse_template("\"BM\": [32, 64], \"F\": 3, \"BN\": {\"range\": [1, 2]}",
                                       NULL, NULL);
    kopt_bound *b = NULL;
    kopt_eval_result *er = NULL;
    kopt_profile *pr = NULL;
    kopt_profile_opts po = KOPT_PROFILE_OPTS_INIT;

    if (!c)
        return;
    CHECK_EQ_INT(kopt_candidate_check_concrete(ctx, NULL), KOPT_OK);
    CHECK_EQ_INT(kopt_candidate_check_concrete(ctx, c), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "t.cu is a template (params BM, BN): tune it with "
                                         "`kopt tune`, or fix the params");

    CHECK_EQ_INT(kopt_bind(&b, ctx, prob, c, &prob->sizes), KOPT_E_INVALID);
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "t.cu is a template (params BM, BN)");

    kopt_seterr(ctx, KOPT_OK, "%s", "");
    CHECK_EQ_INT(kopt_eval_run(&er, ctx, prob, c, NULL), KOPT_E_INVALID);
    CHECK(er == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "t.cu is a template (params BM, BN)");

    kopt_seterr(ctx, KOPT_OK, "%s", "");
    CHECK_EQ_INT(kopt_profile_run(&pr, ctx, prob, c, &po), KOPT_E_INVALID);
    CHECK(pr == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "t.cu is a template (params BM, BN)");
    kopt_candidate_free(c);
}

/* ---- instantiate and write_fixed -------------------------------------------------------- */

static const char *const INST_PARAMS =
    "\"BM\": [32, 64, 128], \"F\": 3, \"T\": {\"pow2\": [64, 256], \"role\": \"threads\"}";
static const char *const INST_LAUNCH =
    "{\"kernel\": \"k<T>\", \"grid\": [\"cdiv(N, BM)\", \"B\"], \"block\": [\"T\"],"
    " \"smem\": \"BM * F * 4\", \"args\": [\"x\", \"y\", \"N\"]}";

static void test_instantiate(void)
{
    kopt_candidate *t = parse_template(INST_PARAMS, "\"BM * F <= 384\"", INST_LAUNCH);
    kopt_candidate *c = NULL;
    kopt_vars vals = KOPT_VARS_INIT;
    kopt_bound *b = NULL;

    if (!t)
        return;
    kopt_vars_set(&vals, "BM", 64);
    kopt_vars_set(&vals, "T", 128);
    if (!CHECK_EQ_INT(kopt_candidate_instantiate(&c, ctx, t, &vals), KOPT_OK)) {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
    } else {
        CHECK_EQ_INT(c->ntemplate_params, 0);
        CHECK_EQ_INT(kopt_candidate_check_concrete(ctx, c), KOPT_OK);
        CHECK_EQ_INT(c->params.n, 3);
        CHECK_EQ_INT(c->params.values[kopt_vars_find(&c->params, "BM")], 64);
        CHECK_EQ_INT(c->params.values[kopt_vars_find(&c->params, "T")], 128);
        CHECK_EQ_INT(c->params.values[kopt_vars_find(&c->params, "F")], 3);
        CHECK_EQ_STR(c->hash, t->hash);
        CHECK_EQ_STR(c->source, t->source);
        CHECK(c->source != t->source);
        CHECK_EQ_INT(c->nconstraints, 1);
        CHECK_EQ_INT(c->noptions, 1);
        CHECK_EQ_INT(c->plan.n, 1);
        /* it binds: launch dims see the fixed values */
        if (CHECK_EQ_INT(kopt_bind(&b, ctx, prob, c, &prob->sizes), KOPT_OK)) {
            CHECK_EQ_INT(b->launches[0].grid[0], 1024 / 64);
            CHECK_EQ_INT(b->launches[0].block[0], 128);
            CHECK_EQ_INT(b->launches[0].smem, 64 * 3 * 4);
        } else {
            fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
        }
        kopt_bound_free(b);
    }
    kopt_candidate_free(c);
    c = NULL;

    /* a value not in the list, a missing param, a name that is not a template param */
    kopt_vars_set(&vals, "BM", 48);
    CHECK_EQ_INT(kopt_candidate_instantiate(&c, ctx, t, &vals), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "t.cu: BM=48 is not one of its values (32, 64, 128)");
    kopt_vars_free(&vals);
    kopt_vars_set(&vals, "BM", 32);
    CHECK_EQ_INT(kopt_candidate_instantiate(&c, ctx, t, &vals), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "no value given for template param 'T'");
    kopt_vars_set(&vals, "T", 64);
    kopt_vars_set(&vals, "F", 3);
    CHECK_EQ_INT(kopt_candidate_instantiate(&c, ctx, t, &vals), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "'F' is not a template param");
    CHECK(c == NULL);
    kopt_vars_free(&vals);
    kopt_candidate_free(t);
}

static void test_write_fixed_round_trip(void)
{
    kopt_candidate *t = parse_template(INST_PARAMS, "\"BM * F <= 384\"", INST_LAUNCH);
    kopt_candidate *c = NULL;
    kopt_vars vals = KOPT_VARS_INIT;
    char *path = kopt_path_join(tmp, "fixed.cu"), *text = NULL, *body;

    if (!t)
        goto done;
    kopt_vars_set(&vals, "T", 256);
    kopt_vars_set(&vals, "BM", 128);
    if (!CHECK_EQ_INT(kopt_candidate_write_fixed(ctx, t, &vals, path,
                                                 "tuned by kopt on a test: 0.5 ms\nsecond line"),
                      KOPT_OK)) {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
        goto done;
    }
    text = ktest_read_file(path);
    if (!CHECK(text != NULL))
        goto done;
    /* the note right after the block, one comment line per line; the code untouched */
    CHECK_STR_CONTAINS(text, "*/\n// tuned by kopt on a test: 0.5 ms\n// second line\n");
    body = strstr(text, "// second line\n");
    if (body)
        CHECK_EQ_STR(body + strlen("// second line\n"), CODE);
    CHECK(strncmp(text, "/*@kopt", 7) == 0);
    CHECK(strstr(text, "\"range\"") == NULL && strstr(text, "\"pow2\"") == NULL);

    if (!CHECK_EQ_INT(kopt_candidate_load(&c, ctx, path, prob), KOPT_OK)) {
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
        goto done;
    }
    CHECK_EQ_INT(c->ntemplate_params, 0);
    CHECK_EQ_INT(c->params.n, 3);
    CHECK_EQ_INT(c->params.values[kopt_vars_find(&c->params, "BM")], 128);
    CHECK_EQ_INT(c->params.values[kopt_vars_find(&c->params, "T")], 256);
    CHECK_EQ_INT(c->params.values[kopt_vars_find(&c->params, "F")], 3);
    /* everything else in the block survived */
    if (CHECK_EQ_INT(c->nconstraints, 1))
        CHECK_EQ_STR(c->constraints[0], "BM * F <= 384");
    if (CHECK_EQ_INT(c->noptions, 1))
        CHECK_EQ_STR(c->options[0], "--use_fast_math");
    if (CHECK_EQ_INT(c->plan.n, 1)) {
        CHECK_EQ_STR(c->plan.steps[0].kernel, "k<T>");
        CHECK_EQ_STR(c->plan.steps[0].smem, "BM * F * 4");
    }
    kopt_candidate_free(c);
    c = NULL;

    /* without a note the text after the block is byte for byte the template's */
    free(text);
    text = NULL;
    if (CHECK_EQ_INT(kopt_candidate_write_fixed(ctx, t, &vals, path, NULL), KOPT_OK)) {
        text = ktest_read_file(path);
        body = text ? strstr(text, "*/") : NULL;
        if (CHECK(body != NULL))
            CHECK_EQ_STR(body, strstr(t->source, "*/"));
    }
    /* bad values are refused before anything is written */
    kopt_vars_set(&vals, "BM", 33);
    CHECK_EQ_INT(kopt_candidate_write_fixed(ctx, t, &vals, path, NULL), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "BM=33 is not one of its values");
done:
    kopt_candidate_free(c);
    kopt_candidate_free(t);
    kopt_vars_free(&vals);
    free(text);
    free(path);
}

/* ---- the space --------------------------------------------------------------------------- */

static void test_encode_decode(void)
{
    kopt_candidate *t = parse_template(
        "\"A\": [3, 1, 2], \"BB\": {\"range\": [0, 7]}, \"C\": {\"pow2\": [1, 16]}", NULL, NULL);
    kopt_tune_space *s = make_space(t, NULL);
    int idx[KOPT_TUNE_MAX_PARAMS], seen_last = 0;
    kopt_vars v = KOPT_VARS_INIT;

    if (!s)
        goto done;
    CHECK_EQ_INT(s->nparams, 3);
    CHECK_EQ_INT(s->npoints, 3 * 8 * 5);
    CHECK_EQ_INT(s->radix[2], 1);
    CHECK_EQ_INT(s->radix[1], 5);
    CHECK_EQ_INT(s->radix[0], 40);
    for (uint64_t p = 0; p < s->npoints; p++) {
        kopt_tune_space_decode(s, p, idx);
        if (!CHECK_EQ_INT(kopt_tune_space_encode(s, idx), p))
            break;
        if (!CHECK(idx[0] >= 0 && idx[0] < 3 && idx[1] >= 0 && idx[1] < 8 && idx[2] >= 0 &&
                   idx[2] < 5))
            break;
        /* the last param varies fastest */
        if (!CHECK_EQ_INT(idx[2], (int)(p % 5)) || !CHECK_EQ_INT(idx[0], (int)(p / 40)))
            break;
        seen_last += idx[2] == 4;
    }
    CHECK_EQ_INT(seen_last, 24);
    if (CHECK_EQ_INT(kopt_tune_space_values(s, 2 * 40 + 3 * 5 + 4, &v), KOPT_OK) &&
        CHECK_EQ_INT(v.n, 3)) {
        CHECK_EQ_INT(v.values[kopt_vars_find(&v, "A")], 2);
        CHECK_EQ_INT(v.values[kopt_vars_find(&v, "BB")], 3);
        CHECK_EQ_INT(v.values[kopt_vars_find(&v, "C")], 16);
    }
done:
    kopt_vars_free(&v);
    kopt_tune_space_free(s);
    kopt_candidate_free(t);
}

static void test_valid_by_constraint(void)
{
    /* W is a fixed param: constraints see it too */
    kopt_candidate *t = parse_template(
        "\"A\": {\"range\": [0, 4]}, \"C\": {\"range\": [1, 6]}, \"W\": 2",
        "\"A * C <= 8\", \"N % A == 0\", \"C % W == 0\"", NULL);
    kopt_tune_space *s = make_space(t, NULL);
    int idx[2], count = 0;
    char why[256];

    if (!s)
        goto done;
    for (uint64_t p = 0; p < s->npoints; p++) {
        int64_t a, c;
        int want;
        kopt_tune_space_decode(s, p, idx);
        a = idx[0];
        c = idx[1] + 1;
        want = a != 0 && a * c <= 8 && 1024 % a == 0 && c % 2 == 0;
        if (!CHECK_EQ_INT(kopt_tune_space_valid(s, p, why, sizeof(why)), want))
            fprintf(stderr, "  A=%lld C=%lld: %s\n", (long long)a, (long long)c, why);
        if (want)
            CHECK_EQ_STR(why, "");
        count += want;
    }
    CHECK_EQ_INT(kopt_tune_space_count_valid(s, 0, NULL), count);
    /* the reasons */
    idx[0] = 0;
    idx[1] = 1;                                     /* A=0: N % 0 */
    CHECK_EQ_INT(kopt_tune_space_valid(s, kopt_tune_space_encode(s, idx), why, sizeof(why)), 0);
    CHECK_STR_CONTAINS(why, "constraint cannot be evaluated");
    CHECK_STR_CONTAINS(why, "N % A == 0");
    idx[0] = 3;
    idx[1] = 5;                                     /* A=3, C=6 */
    CHECK_EQ_INT(kopt_tune_space_valid(s, kopt_tune_space_encode(s, idx), why, sizeof(why)), 0);
    CHECK_EQ_STR(why, "constraint 'A * C <= 8' fails");
    idx[0] = 1;
    idx[1] = 2;                                     /* A=1, C=3 */
    CHECK_EQ_INT(kopt_tune_space_valid(s, kopt_tune_space_encode(s, idx), why, sizeof(why)), 0);
    CHECK_EQ_STR(why, "constraint 'C % W == 0' fails");
    CHECK_EQ_INT(kopt_tune_space_valid(s, s->npoints, why, sizeof(why)), 0);
    CHECK_STR_CONTAINS(why, "outside the space");
done:
    kopt_tune_space_free(s);
    kopt_candidate_free(t);
}

static const char *const LIMIT_LAUNCH =
    "{\"kernel\": \"k<T>\", \"grid\": [\"B\"], \"block\": [\"T\", 2], \"smem\": \"S * 1024\","
    " \"args\": [\"x\", \"y\", \"N\"]}";

/* Valid points of the limits test space (T in 32..1024, S in 1..64) under `lim`. */
static int count_limit(const kopt_tune_limits *lim, char *why_first_bad, size_t len)
{
    kopt_candidate *t = parse_template(
        "\"T\": {\"pow2\": [32, 1024]}, \"S\": {\"pow2\": [1, 64]}", NULL, LIMIT_LAUNCH);
    kopt_tune_space *s = make_space(t, lim);
    int n = 0, found_bad = 0;

    if (s) {
        for (uint64_t p = 0; p < s->npoints; p++) {
            int ok = kopt_tune_space_valid(s, p, found_bad ? NULL : why_first_bad, len);
            n += ok;
            found_bad |= !ok;
        }
        CHECK_EQ_INT(kopt_tune_space_count_valid(s, 0, NULL), n);
    }
    kopt_tune_space_free(s);
    kopt_candidate_free(t);
    return n;
}

static void test_valid_by_limits(void)
{
    kopt_tune_limits lim;
    kopt_device_info dev;
    char why[256] = "";

    /* 6 values of T x 7 values of S; threads = 2 T, smem = S KiB */
    memset(&lim, 0, sizeof(lim));
    CHECK_EQ_INT(count_limit(&lim, why, sizeof(why)), 42);      /* 0: not known, no pruning */
    lim.max_threads_per_block = 512;                              /* T <= 256: 4 of 6 */
    CHECK_EQ_INT(count_limit(&lim, why, sizeof(why)), 4 * 7);
    CHECK_STR_CONTAINS(why, "1024 threads per block exceed 512");
    memset(&lim, 0, sizeof(lim));
    lim.max_smem_per_block = 16 * 1024;                           /* S <= 16: 5 of 7 */
    CHECK_EQ_INT(count_limit(&lim, why, sizeof(why)), 6 * 5);
    CHECK_STR_CONTAINS(why, "32768 bytes of shared memory per block exceed 16384");
    memset(&lim, 0, sizeof(lim));
    lim.regs_per_sm = 8192;
    lim.min_regs_per_thread = 32;                                 /* 2T * 32 <= 8192: T <= 128 */
    CHECK_EQ_INT(count_limit(&lim, why, sizeof(why)), 3 * 7);
    CHECK_STR_CONTAINS(why, "512 threads per block x 32 registers exceed the 8192 registers");
    memset(&lim, 0, sizeof(lim));
    lim.max_threads_per_sm = 256;                                 /* 2T <= 256: T <= 128 */
    CHECK_EQ_INT(count_limit(&lim, why, sizeof(why)), 3 * 7);
    CHECK_STR_CONTAINS(why, "threads of an SM");

    /* from a device */
    memset(&dev, 0, sizeof(dev));
    dev.max_threads_per_block = 1024;
    dev.max_smem_per_block_optin = 232448;
    dev.regs_per_sm = 65536;
    dev.max_threads_per_sm = 2048;
    kopt_tune_limits_from_device(&lim, &dev);
    CHECK_EQ_INT(lim.max_threads_per_block, 1024);
    CHECK_EQ_INT(lim.max_smem_per_block, 232448);
    CHECK_EQ_INT(lim.regs_per_sm, 65536);
    CHECK_EQ_INT(lim.max_threads_per_sm, 2048);
    CHECK_EQ_INT(lim.min_regs_per_thread, 16);
    /* 2T <= 1024 (T <= 512: 5 of 6), S KiB <= 227 KiB (S <= 64: all) */
    CHECK_EQ_INT(count_limit(&lim, why, sizeof(why)), 5 * 7);

    /* a launch dimension that cannot be evaluated makes the point invalid, saying why */
    {
        kopt_candidate *t = parse_template(
            "\"T\": [32, 64]", NULL,
            "{\"kernel\": \"k<T>\", \"grid\": [1], \"block\": [\"2048 / (T - 32)\"],"
            " \"smem\": \"1024 / (T - 64)\", \"args\": [\"x\", \"y\", \"N\"]}");
        kopt_tune_space *s = make_space(t, &lim);
        if (s) {
            CHECK_EQ_INT(kopt_tune_space_valid(s, 0, why, sizeof(why)), 0);
            CHECK_STR_CONTAINS(why, "launch 0 (k<T>) block[0] cannot be evaluated");
            CHECK_STR_CONTAINS(why, "division by zero");
            CHECK_EQ_INT(kopt_tune_space_valid(s, 1, why, sizeof(why)), 0);
            CHECK_STR_CONTAINS(why, "launch 0 (k<T>) smem cannot be evaluated");
        }
        kopt_tune_space_free(s);
        kopt_candidate_free(t);
    }
}

/* 1,048,576 points: A, B in 1..64, C in {1, 2, 4, ..., 128}, D in 0..31; two constraints
 * and a threads-per-block limit. */
static void test_million_points_lazily(void)
{
    static const char *const launch =
        "{\"kernel\": \"k<8>\", \"grid\": [\"B\"], \"block\": [\"C * 8\"],"
        " \"args\": [\"x\", \"y\", \"N\"]}";
    kopt_candidate *t = parse_template(
        "\"A\": {\"range\": [1, 64]}, \"PB\": {\"range\": [1, 64]}, \"C\": {\"pow2\": [1, 128]},"
        " \"D\": {\"range\": [0, 31]}",
        "\"A * PB <= 1024\", \"(C + D) % 4 == 0\"", launch);
    kopt_tune_limits lim;
    kopt_tune_space *s;
    uint64_t want_ab = 0, want_cd = 0, want, got, point, brute = 0;
    double t0, ms;
    int exact = -1;

    memset(&lim, 0, sizeof(lim));
    lim.max_threads_per_block = 512;
    s = make_space(t, &lim);
    if (!s)
        goto done;
    CHECK_EQ_INT(s->npoints, 1048576);
    /* closed form: pairs a*b <= 1024 times pairs (c, d) with c*8 <= 512 and 4 | c + d */
    for (int a = 1; a <= 64; a++)
        want_ab += (uint64_t)(1024 / a < 64 ? 1024 / a : 64);
    for (int c = 1; c <= 64; c *= 2)
        want_cd += 32 / 4;            /* d in 0..31 covers every residue mod 4 eight times */
    want = want_ab * want_cd;
    t0 = kopt_now_ms();
    got = kopt_tune_space_count_valid(s, 0, &exact);
    ms = kopt_now_ms() - t0;
    printf("  counted %llu valid of %llu points in %.0f ms\n", (unsigned long long)got,
           (unsigned long long)s->npoints, ms);
    CHECK_EQ_INT(got, want);
    CHECK_EQ_INT(exact, 1);
#if !defined(__SANITIZE_ADDRESS__)
    CHECK(ms < 60000.0);   /* reported above; judged only against a blow-up */
#endif
    /* a limited count stops early and says so */
    got = kopt_tune_space_count_valid(s, 5000, &exact);
    CHECK_EQ_INT(exact, 0);
    for (uint64_t p = 0; p < 5000; p++)
        brute += (uint64_t)kopt_tune_space_valid(s, p, NULL, 0);
    CHECK_EQ_INT(got, brute);
    /* next_valid from A=64, PB=17 (1088 > 1024): every later point has A=64 and PB >= 17,
     * so the search wraps to the start; compare with a plain scan */
    {
        int idx[4] = {63, 16, 0, 0};
        uint64_t from = kopt_tune_space_encode(s, idx), scan = from;
        while (!kopt_tune_space_valid(s, scan % s->npoints, NULL, 0))
            scan++;
        CHECK_EQ_INT(kopt_tune_space_next_valid(s, from, &point), 0);
        CHECK_EQ_INT(point, scan % s->npoints);
        CHECK(scan >= s->npoints);    /* A=64 allows PB <= 16 only: it wraps to the start */
    }
    /* the same, as one constraint over all four params (parenthesized, so it is not split
     * into its parts): too many combinations to table, so it is evaluated at every point */
    kopt_tune_space_free(s);
    kopt_candidate_free(t);
    t = parse_template(
        "\"A\": {\"range\": [1, 64]}, \"PB\": {\"range\": [1, 64]}, \"C\": {\"pow2\": [1, 128]},"
        " \"D\": {\"range\": [0, 31]}",
        "\"(A * PB <= 1024 && (C + D) % 4 == 0)\"", launch);
    s = make_space(t, &lim);
    if (!s)
        goto done;
    t0 = kopt_now_ms();
    got = kopt_tune_space_count_valid(s, 0, &exact);
    ms = kopt_now_ms() - t0;
    printf("  untabled: counted %llu valid in %.0f ms\n", (unsigned long long)got, ms);
    CHECK_EQ_INT(got, want);
    /* the time is reported, not judged (a loaded machine is slower); only an evaluation
     * that stopped being linear in the points (minutes) fails */
    CHECK(ms < 60000.0);
done:
    kopt_tune_space_free(s);
    kopt_candidate_free(t);
}

static void test_random_valid(void)
{
    kopt_candidate *t = parse_template("\"A\": {\"range\": [0, 3]}, \"C\": {\"range\": [0, 3]}",
                                       "\"A <= C\"", NULL);
    kopt_candidate *rare = parse_template(
        "\"A\": {\"range\": [0, 63]}, \"C\": {\"range\": [0, 63]}", "\"A == 17 && C == 42\"",
        NULL);
    kopt_candidate *none = parse_template("\"A\": [1, 2]", "\"A > 5\"", NULL);
    kopt_tune_space *s = make_space(t, NULL), *sr = make_space(rare, NULL),
                    *sn = make_space(none, NULL);
    int hits[16] = {0}, bad = 0, covered = 0;
    kopt_rng rng, rng2;
    uint64_t p = 0;

    if (!s || !sr || !sn)
        goto done;
    kopt_rng_seed(&rng, 42);
    for (int i = 0; i < 4000; i++) {
        if (!CHECK_EQ_INT(kopt_tune_space_random_valid(s, &rng, &p), 0))
            break;
        bad += !kopt_tune_space_valid(s, p, NULL, 0) || p >= 16;
        if (p < 16)
            hits[p]++;
    }
    CHECK_EQ_INT(bad, 0);
    for (int i = 0; i < 16; i++) {
        int valid = i / 4 <= i % 4;
        covered += valid && hits[i] > 0;
        if (valid)
            CHECK(hits[i] > 4000 / 10 / 2);   /* 10 valid points, each about 400 times */
    }
    CHECK_EQ_INT(covered, 10);
    /* one valid point in 4096: the rejection sampler gives up, the scan finds it */
    for (int i = 0; i < 20; i++) {
        p = 0;
        CHECK_EQ_INT(kopt_tune_space_random_valid(sr, &rng, &p), 0);
        CHECK_EQ_INT(p, 17 * 64 + 42);
    }
    CHECK_EQ_INT(kopt_tune_space_count_valid(sr, 0, NULL), 1);
    CHECK_EQ_INT(kopt_tune_space_random_valid(sn, &rng, &p), -1);
    CHECK_EQ_INT(kopt_tune_space_next_valid(sn, 0, &p), -1);
    /* the same seed gives the same points */
    kopt_rng_seed(&rng, 7);
    kopt_rng_seed(&rng2, 7);
    for (int i = 0; i < 50; i++) {
        uint64_t a = 0, b = 1;
        kopt_tune_space_random_valid(s, &rng, &a);
        kopt_tune_space_random_valid(s, &rng2, &b);
        if (!CHECK_EQ_INT(a, b))
            break;
    }
done:
    kopt_tune_space_free(s);
    kopt_tune_space_free(sr);
    kopt_tune_space_free(sn);
    kopt_candidate_free(t);
    kopt_candidate_free(rare);
    kopt_candidate_free(none);
}

static void test_neighbors(void)
{
    kopt_candidate *t = parse_template(
        "\"A\": [8, 16, 32], \"C\": [1, 2, 3, 4], \"E\": [5, 6]", "\"A * C <= 64\"", NULL);
    kopt_tune_space *s = make_space(t, NULL);
    uint64_t out[16];
    int idx[3] = {1, 1, 0}, n, nid[3];

    if (!s)
        goto done;
    /* A=16, C=2, E=5: A +-1 (8, 32), C +-1 (1, 3), E +1 (6) */
    n = kopt_tune_space_neighbors(s, kopt_tune_space_encode(s, idx), out, 16);
    CHECK_EQ_INT(n, 5);
    for (int i = 0; i < n; i++) {
        int diff = 0;
        kopt_tune_space_decode(s, out[i], nid);
        for (int k = 0; k < 3; k++)
            diff += abs(nid[k] - idx[k]);
        CHECK_EQ_INT(diff, 1);
        CHECK(kopt_tune_space_valid(s, out[i], NULL, 0));
    }
    /* A=16, C=4 (64): A=32 would give 128, so it is left out; C=3 and E=6 and A=8 remain */
    idx[1] = 3;
    n = kopt_tune_space_neighbors(s, kopt_tune_space_encode(s, idx), out, 16);
    CHECK_EQ_INT(n, 3);
    /* at most `max` */
    CHECK_EQ_INT(kopt_tune_space_neighbors(s, kopt_tune_space_encode(s, idx), out, 2), 2);
done:
    kopt_tune_space_free(s);
    kopt_candidate_free(t);
}

static void test_label_and_find(void)
{
    kopt_candidate *t = parse_template(
        "\"BM\": [32, 64, 128], \"BN\": {\"range\": [1, 4]}, \"V\": {\"pow2\": [1, 8]}", NULL,
        NULL);
    kopt_tune_space *s = make_space(t, NULL);
    kopt_vars v = KOPT_VARS_INIT;
    uint64_t p = 0;
    char *label = NULL;

    if (!s)
        goto done;
    label = kopt_tune_space_label(s, 1 * 16 + 2 * 4 + 3);
    CHECK_EQ_STR(label, "BM=64,BN=3,V=8");
    free(label);
    label = kopt_tune_space_label(s, 0);
    CHECK_EQ_STR(label, "BM=32,BN=1,V=1");
    /* every point: values -> find gives it back */
    for (uint64_t q = 0; q < s->npoints; q++) {
        kopt_tune_space_values(s, q, &v);
        if (!CHECK_EQ_INT(kopt_tune_space_find(s, ctx, &v, &p), KOPT_OK) || !CHECK_EQ_INT(p, q))
            break;
    }
    kopt_vars_free(&v);
    kopt_vars_set(&v, "V", 2);
    kopt_vars_set(&v, "BM", 128);
    kopt_vars_set(&v, "BN", 4);
    kopt_vars_set(&v, "N", 1024);     /* other names are ignored */
    CHECK_EQ_INT(kopt_tune_space_find(s, ctx, &v, &p), KOPT_OK);
    CHECK_EQ_INT(p, 2 * 16 + 3 * 4 + 1);
    kopt_vars_set(&v, "V", 3);
    CHECK_EQ_INT(kopt_tune_space_find(s, ctx, &v, &p), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "param 'V': 3 is not one of its values");
    kopt_vars_free(&v);
    kopt_vars_set(&v, "BM", 128);
    CHECK_EQ_INT(kopt_tune_space_find(s, ctx, &v, &p), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "no value for param 'BN'");
done:
    free(label);
    kopt_vars_free(&v);
    kopt_tune_space_free(s);
    kopt_candidate_free(t);
}

static void test_space_errors(void)
{
    kopt_candidate *c = parse_template("\"A\": 4", NULL, NULL);
    kopt_candidate *t = parse_template("\"BM\": [32, 64]", "\"BM <= N\"", NULL);
    kopt_tune_space *s = NULL;
    kopt_vars few = KOPT_VARS_INIT;
    kopt_buf many = KOPT_BUF_INIT;
    char *text;

    /* not a template */
    if (c) {
        CHECK_EQ_INT(kopt_tune_space_create(&s, ctx, c, &prob->sizes, NULL), KOPT_E_INVALID);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "t.cu is not a template");
        CHECK(s == NULL);
    }
    if (t) {
        /* a constraint naming something that is neither a param nor a size */
        kopt_vars_set(&few, "B", 4);
        CHECK_EQ_INT(kopt_tune_space_create(&s, ctx, t, &few, NULL), KOPT_E_INVALID);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "t.cu: constraints[0] 'BM <= N'");
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "unknown name 'N'");
        CHECK(s == NULL);
        /* a constraint that does not parse */
        free(t->constraints[0]);
        t->constraints[0] = strdup("BM <= (N");
        CHECK_EQ_INT(kopt_tune_space_create(&s, ctx, t, &prob->sizes, NULL), KOPT_E_INVALID);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "t.cu: constraints[0] 'BM <= (N'");
        CHECK(s == NULL);
    }
    kopt_candidate_free(c);
    kopt_candidate_free(t);

    /* more than 32 params */
    for (int i = 0; i < 33; i++)
        kopt_buf_printf(&many, "%s\"P%d\": [1, 2]", i ? ", " : "", i);
    text = template_text(kopt_buf_cstr(&many), NULL, NULL);
    if (CHECK_EQ_INT(kopt_candidate_parse(&c, ctx, text, "t.cu", prob), KOPT_OK)) {
        CHECK_EQ_INT(kopt_tune_space_create(&s, ctx, c, &prob->sizes, NULL), KOPT_E_INVALID);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "33 template params, at most 32");
    }
    kopt_candidate_free(c);
    c = NULL;
    free(text);
    kopt_buf_free(&many);
    /* 2^62 points or more: 21^15 > 2^62 */
    for (int i = 0; i < 15; i++)
        kopt_buf_printf(&many, "%s\"P%d\": {\"pow2\": [1, 1048576]}", i ? ", " : "", i);
    text = template_text(kopt_buf_cstr(&many), NULL, NULL);
    if (CHECK_EQ_INT(kopt_candidate_parse(&c, ctx, text, "t.cu", prob), KOPT_OK)) {
        CHECK_EQ_INT(kopt_tune_space_create(&s, ctx, c, &prob->sizes, NULL), KOPT_E_INVALID);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "2^62 points or more");
    }
    kopt_candidate_free(c);
    free(text);
    kopt_buf_free(&many);
    /* 14 such params: 21^14 < 2^62 is fine */
    for (int i = 0; i < 14; i++)
        kopt_buf_printf(&many, "%s\"P%d\": {\"pow2\": [1, 1048576]}", i ? ", " : "", i);
    text = template_text(kopt_buf_cstr(&many), NULL, NULL);
    c = NULL;
    if (CHECK_EQ_INT(kopt_candidate_parse(&c, ctx, text, "t.cu", prob), KOPT_OK) &&
        CHECK_EQ_INT(kopt_tune_space_create(&s, ctx, c, &prob->sizes, NULL), KOPT_OK)) {
        uint64_t n = 1;
        for (int i = 0; i < 14; i++)
            n *= 21;
        CHECK_EQ_INT(s->npoints, n);
    }
    kopt_tune_space_free(s);
    kopt_candidate_free(c);
    free(text);
    kopt_buf_free(&many);
    kopt_vars_free(&few);
}

/* ---- random numbers ---------------------------------------------------------------------- */

static void test_rng(void)
{
    kopt_rng r, r2;
    double sum = 0, sum2 = 0, nsum = 0, nsum2 = 0;
    int counts[7] = {0}, n = 200000, differ = 0;

    /* published reference values: splitmix64 from 0, xoshiro256** from {1, 2, 3, 4} */
    kopt_rng_seed(&r, 0);
    CHECK(r.s[0] == 0xe220a8397b1dcdafULL);
    CHECK(r.s[1] == 0x6e789e6aa1b965f4ULL);
    CHECK(r.s[2] == 0x06c45d188009454fULL);
    CHECK(r.s[3] == 0xf88bb8a8724c81ecULL);
    r.s[0] = 1;
    r.s[1] = 2;
    r.s[2] = 3;
    r.s[3] = 4;
    CHECK(kopt_rng_next(&r) == 11520ULL);
    CHECK(kopt_rng_next(&r) == 0ULL);
    CHECK(kopt_rng_next(&r) == 1509978240ULL);
    CHECK(kopt_rng_next(&r) == 1215971899390074240ULL);

    kopt_rng_seed(&r, 1);
    kopt_rng_seed(&r2, 2);
    for (int i = 0; i < 16; i++)
        differ += kopt_rng_next(&r) != kopt_rng_next(&r2);
    CHECK(differ >= 15);
    CHECK_EQ_INT(kopt_rng_below(&r, 1), 0);
    for (int i = 0; i < n; i++) {
        uint64_t b = kopt_rng_below(&r, 7);
        double u = kopt_rng_unit(&r), z = kopt_rng_normal(&r);
        if (!CHECK(b < 7) || !CHECK(u >= 0.0 && u < 1.0) || !CHECK(isfinite(z)))
            return;
        counts[b]++;
        sum += u;
        sum2 += u * u;
        nsum += z;
        nsum2 += z * z;
    }
    for (int i = 0; i < 7; i++)   /* n/7 = 28571, sd about 156 */
        CHECK(fabs(counts[i] - n / 7.0) < 1000);
    CHECK_NEAR(sum / n, 0.5, 0.01);
    CHECK_NEAR(sum2 / n - (sum / n) * (sum / n), 1.0 / 12, 0.005);
    CHECK_NEAR(nsum / n, 0.0, 0.02);
    CHECK_NEAR(nsum2 / n, 1.0, 0.02);
    /* a bound just above 2^63 (where rejection matters most): values spread over it */
    {
        uint64_t big = (1ULL << 63) + 12345, hi = 0;
        for (int i = 0; i < 64; i++) {
            uint64_t b = kopt_rng_below(&r, big);
            if (!CHECK(b < big))
                break;
            hi += b >= (1ULL << 62);
        }
        CHECK(hi > 16 && hi < 64);
    }
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_param_forms),
        KTEST(test_param_errors),
        KTEST(test_template_refused),
        KTEST(test_instantiate),
        KTEST(test_write_fixed_round_trip),
        KTEST(test_encode_decode),
        KTEST(test_valid_by_constraint),
        KTEST(test_valid_by_limits),
        KTEST(test_million_points_lazily),
        KTEST(test_random_valid),
        KTEST(test_neighbors),
        KTEST(test_label_and_find),
        KTEST(test_space_errors),
        KTEST(test_rng),
    };
    int rc = 1;

    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("tune_space");
    if (!ctx || !tmp)
        return 1;
    if (!(prob = tune_fixture_problem(ctx, tmp, "tsp", 1)))
        rc = 1;               /* said why on stderr */
    else
        rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_problem_free(prob);
    ktest_rmtree(tmp);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
