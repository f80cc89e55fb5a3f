/*
 * Unit tests of KernelBench support that need no GPU and no PyTorch: the suite metrics
 * (fast_p, the two geometric means, against hand-computed values), the speed-of-light
 * guard (peak bandwidth from the device's attributes, the bound, the flags), the bench tables of the
 * store (rows replaced by problem, read back in order, a suite's summary updated), the
 * problem parser's PyTorch reference form and its errors, and ModelNew candidate loading.
 */
#include "ktest.h"

#include <math.h>

#include "kopt/kopt.h"

static void test_metrics_hand_computed(void)
{
    /* 5 problems: speedups 4, 1, 0.5 (correct), one wrong, one correct but untimed */
    kopt_kb_row rows[5] = {{1, 4.0}, {1, 1.0}, {1, 0.5}, {0, 9.0}, {1, 0}};
    kopt_kb_summary s;

    kopt_kb_summarize(rows, 5, &s);
    CHECK_EQ_INT(s.n, 5);
    CHECK_EQ_INT(s.ncorrect, 4);
    CHECK_EQ_INT(s.ntimed, 3);
    CHECK_NEAR(s.correct_rate, 0.8, 1e-12);
    CHECK_NEAR(s.fast[0], 0.8, 1e-12);     /* correct */
    CHECK_NEAR(s.fast[1], 0.2, 1e-12);     /* strictly > 1: only the 4x one */
    CHECK_NEAR(s.fast[2], 0.2, 1e-12);
    CHECK_NEAR(s.fast[3], 0.2, 1e-12);
    /* over the correct, timed ones: (4 * 1 * 0.5)^(1/3) */
    CHECK_NEAR(s.geomean_correct, cbrt(2.0), 1e-12);
    /* over all five, the wrong one (whatever its speedup) and the untimed one as 1.0 */
    CHECK_NEAR(s.geomean_all, pow(2.0, 1.0 / 5), 1e-12);
}

static void test_metrics_edges(void)
{
    kopt_kb_row none[1] = {{0, 0}}, fast[2] = {{1, 2.0}, {1, 1.5}};
    kopt_kb_summary s;

    kopt_kb_summarize(NULL, 0, &s);
    CHECK_EQ_INT(s.n, 0);
    CHECK_NEAR(s.correct_rate, 0, 0);
    CHECK_NEAR(s.geomean_correct, 0, 0);
    kopt_kb_summarize(none, 1, &s);
    CHECK_NEAR(s.geomean_all, 1.0, 1e-12);
    CHECK_EQ_INT(s.ntimed, 0);
    kopt_kb_summarize(fast, 2, &s);
    CHECK_NEAR(s.fast[2], 0.5, 1e-12);     /* 1.5 is not faster than 1.5x */
    CHECK_NEAR(s.fast[3], 0.0, 1e-12);     /* 2.0 is not faster than 2x */
    CHECK_NEAR(s.geomean_all, sqrt(3.0), 1e-12);
}

static void test_speed_of_light_guard(void)
{
    /* H100 SXM: HBM3 at 2619 MHz on a 5120-bit bus = 3352 GB/s */
    kopt_device_info dev;
    kopt_ceilings c;
    double bound, t[3];

    memset(&dev, 0, sizeof(dev));
    memset(&c, 0, sizeof(c));
    dev.mem_clock_khz = 2619000;
    dev.mem_bus_width = 5120;
    CHECK_NEAR(kopt_kb_peak_gbs(&dev, NULL), 3352.32, 1e-6);
    /* measured ceilings below the spec do not lower the peak; above it, they raise it */
    c.valid = 1;
    c.dram_copy_gbs = 3000;
    CHECK_NEAR(kopt_kb_peak_gbs(&dev, &c), 3352.32, 1e-6);
    c.dram_read_gbs = 3400;
    CHECK_NEAR(kopt_kb_peak_gbs(&dev, &c), 3400, 1e-9);
    c.valid = 0;
    CHECK_NEAR(kopt_kb_peak_gbs(NULL, &c), 0, 0);
    /* the H100 row_sum of the first run: 33.5 MB read in 0.0048 ms is 7 TB/s: flagged; the
     * 0.0129 ms of another run and an unknown (0) compile time are not */
    bound = kopt_kb_sol_bound_ms(33587200, 3352.32);
    CHECK_NEAR(bound, 33587200 / 3352.32e6, 1e-12);
    t[0] = 0.0129;
    t[1] = 0.0048;
    t[2] = 0;
    CHECK_EQ_INT((int)kopt_kb_sol_flags(t, 3, bound), 2);
    t[0] = bound * 0.999;                      /* just below: flagged too */
    CHECK_EQ_INT((int)kopt_kb_sol_flags(t, 3, bound), 3);
    t[0] = bound;                              /* at the bound: possible */
    CHECK_EQ_INT((int)kopt_kb_sol_flags(t, 3, bound), 2);
    /* an unknown bound flags nothing */
    CHECK_NEAR(kopt_kb_sol_bound_ms(0, 3352), 0, 0);
    CHECK_NEAR(kopt_kb_sol_bound_ms(1e6, 0), 0, 0);
    CHECK_EQ_INT((int)kopt_kb_sol_flags(t, 3, 0), 0);
}

static void test_store_bench_tables(void)
{
    char *dir = ktest_tmpdir("kb"), *db = dir ? kopt_path_join(dir, "k.db") : NULL;
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_store *s = NULL;
    char **rows = NULL, *pd = NULL, *cd = NULL, *op = NULL;
    int n = 0;

    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, db), KOPT_OK))
        goto done;
    CHECK_EQ_INT(kopt_store_schema_version(s), KOPT_STORE_SCHEMA_VERSION);
    CHECK_EQ_INT(kopt_store_bench_suite_put(s, ctx, 7, "probs", "cands", "{\"kind\":\"cu\"}",
                                            NULL), KOPT_OK);
    CHECK_EQ_INT(kopt_store_bench_row_put(s, ctx, 7, "b", 8, "OK", "{\"problem\":\"b\"}"), KOPT_OK);
    CHECK_EQ_INT(kopt_store_bench_row_put(s, ctx, 7, "a", 8, "WRONG", "{\"problem\":\"a\"}"),
                 KOPT_OK);
    /* the same problem again (a resumed suite) replaces its row */
    CHECK_EQ_INT(kopt_store_bench_row_put(s, ctx, 7, "a", 9, "OK", "{\"problem\":\"a\",\"x\":1}"),
                 KOPT_OK);
    CHECK_EQ_INT(kopt_store_bench_row_put(s, ctx, 8, "c", 10, "OK", "{}"), KOPT_OK);
    CHECK_EQ_INT(kopt_store_bench_rows(s, ctx, 7, &rows, &n), KOPT_OK);
    if (CHECK_EQ_INT(n, 2)) {
        CHECK_EQ_STR(rows[0], "{\"problem\":\"a\",\"x\":1}");
        CHECK_EQ_STR(rows[1], "{\"problem\":\"b\"}");
    }
    /* a summary added later keeps the options */
    CHECK_EQ_INT(kopt_store_bench_suite_put(s, ctx, 7, "probs", "cands", NULL, "{\"n\":2}"),
                 KOPT_OK);
    CHECK_EQ_INT(kopt_store_bench_suite_get(s, ctx, 7, &pd, &cd, &op), KOPT_OK);
    CHECK_EQ_STR(pd, "probs");
    CHECK_EQ_STR(op, "{\"kind\":\"cu\"}");
    CHECK_EQ_INT(kopt_store_bench_suite_get(s, ctx, 99, &pd, &cd, &op), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "no bench suite 99");
done:
    for (int i = 0; i < n; i++)
        free(rows[i]);
    free(rows);
    free(pd);
    free(cd);
    free(op);
    kopt_store_close(s);
    kopt_ctx_free(ctx);
    if (dir)
        ktest_rmtree(dir);
    free(db);
    free(dir);
}

static const char *torch_problem =
    "{\"name\": \"t\", \"sizes\": {\"N\": 8},\n"
    " \"tensors\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"input\","
    " \"pytorch\": \"input:0\"},\n"
    "  {\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"input\","
    " \"pytorch\": \"param:lin.weight\"},\n"
    "  {\"name\": \"out\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"%s}],\n"
    " \"reference\": {\"pytorch\": \"model.py\"%s}}";

static void test_problem_pytorch_reference(void)
{
    char *dir = ktest_tmpdir("kbp"), text[2048];
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_problem *p = NULL;
    kopt_candidate *c = NULL;
    char *py = dir ? kopt_path_join(dir, "model.py") : NULL;
    char *cand = dir ? kopt_path_join(dir, "new.py") : NULL;
    char *bad = dir ? kopt_path_join(dir, "bad.py") : NULL;
    FILE *f;

    if (!dir)
        goto done;
    f = fopen(py, "w");
    fputs("class Model: pass\n", f);
    fclose(f);
    snprintf(text, sizeof(text), torch_problem, ", \"pytorch\": \"output:0\"", "");
    if (CHECK_EQ_INT(kopt_problem_parse(&p, ctx, text, "t/problem.json", dir), KOPT_OK)) {
        CHECK(p->ref_torch);
        CHECK_EQ_INT(p->ref_plan.n, 0);
        CHECK_EQ_STR(p->tensors[1].pytorch, "param:lin.weight");
        CHECK_STR_CONTAINS(p->ref_source, "class Model");
    }
    /* a tensor without its "pytorch" field is named */
    kopt_problem_free(p);
    p = NULL;
    snprintf(text, sizeof(text), torch_problem, "", "");
    CHECK_EQ_INT(kopt_problem_parse(&p, ctx, text, "t/problem.json", dir), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "tensors[2] ('out')");
    /* the torch form takes no launches */
    snprintf(text, sizeof(text), torch_problem, ", \"pytorch\": \"output:0\"",
             ", \"launches\": []");
    CHECK_EQ_INT(kopt_problem_parse(&p, ctx, text, "t/problem.json", dir), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "launches");
    /* a missing model file */
    snprintf(text, sizeof(text), torch_problem, ", \"pytorch\": \"output:0\"", "");
    {
        char *other = kopt_path_join(dir, "none");
        CHECK_EQ_INT(kopt_problem_parse(&p, ctx, text, "t/problem.json", other), KOPT_E_INVALID);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "cannot read the PyTorch reference");
        free(other);
    }
    /* ModelNew candidates: loaded as Python, refused without the class */
    CHECK_EQ_INT(kopt_problem_parse(&p, ctx, text, "t/problem.json", dir), KOPT_OK);
    f = fopen(cand, "w");
    fputs("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n", f);
    fclose(f);
    f = fopen(bad, "w");
    fputs("def forward(x):\n    return x\n", f);
    fclose(f);
    if (p && CHECK_EQ_INT(kopt_candidate_load(&c, ctx, cand, p), KOPT_OK)) {
        CHECK(c->torch_module);
        CHECK_EQ_INT(strlen(c->hash), 64);
    }
    kopt_candidate_free(c);
    c = NULL;
    if (p) {
        CHECK_EQ_INT(kopt_candidate_load(&c, ctx, bad, p), KOPT_E_INVALID);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "defines no class ModelNew");
    }
done:
    kopt_candidate_free(c);
    kopt_problem_free(p);
    kopt_ctx_free(ctx);
    if (dir)
        ktest_rmtree(dir);
    free(py);
    free(cand);
    free(bad);
    free(dir);
}

static void test_modelnew_needs_torch_problem(void)
{
    char *dir = ktest_tmpdir("kbq");
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_problem *p = NULL;
    kopt_candidate *c = NULL;
    char *cand = dir ? kopt_path_join(dir, "new.py") : NULL;
    FILE *f;

    if (!dir)
        goto done;
    if (!CHECK_EQ_INT(kopt_problem_load(&p, ctx, KOPT_EXAMPLES_DIR "/softmax"), KOPT_OK))
        goto done;
    f = fopen(cand, "w");
    fputs("class ModelNew: pass\n", f);
    fclose(f);
    CHECK_EQ_INT(kopt_candidate_load(&c, ctx, cand, p), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "needs a problem with a PyTorch reference");
done:
    kopt_candidate_free(c);
    kopt_problem_free(p);
    kopt_ctx_free(ctx);
    if (dir)
        ktest_rmtree(dir);
    free(cand);
    free(dir);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_metrics_hand_computed), KTEST(test_metrics_edges),
        KTEST(test_speed_of_light_guard),
        KTEST(test_store_bench_tables), KTEST(test_problem_pytorch_reference),
        KTEST(test_modelnew_needs_torch_problem),
    };
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
