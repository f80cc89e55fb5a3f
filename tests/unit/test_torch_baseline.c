/*
 * torch.compile baselines kept across runs (src/eval/torch_baseline.c, src/store/baselines.c;
 * docs/kernelbench.md): the key an evaluation's baseline is stored under (device, sizes,
 * timing settings, torch.compile's environment), which stored baseline an evaluation may
 * take (its key, the torch version its reference reports, eager then and now within the
 * drift factor), the store's round trip (numbers exact, a key measured again replaces its
 * row, newest first), and the faster-of-the-two baseline. No process is started: the CLI
 * side is tests/cli/test_kb_baseline.sh.
 */
#include "ktest.h"

#include "kopt/store.h"
#include "../../src/eval/eval_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kopt_ctx *ctx;

static kopt_problem *problem(void)
{
    kopt_problem *p = calloc(1, sizeof(*p));
    if (p) {
        snprintf(p->hash, sizeof(p->hash), "%064d", 7);
        p->ref_torch = 1;
    }
    return p;
}

static kopt_device_info gpu(const char *uuid)
{
    kopt_device_info d;
    memset(&d, 0, sizeof(d));
    snprintf(d.name, sizeof(d.name), "NVIDIA H100 80GB HBM3");
    snprintf(d.uuid, sizeof(d.uuid), "%s", uuid);
    d.cc_major = 9;
    return d;
}

/* A baseline under `key` of torch `version`, compile median `ms`, eager then `eager_ms`. */
static kopt_torch_baseline measured(const kopt_torch_baseline *key, const char *version,
                                    double ms, double eager_ms)
{
    kopt_torch_baseline b = *key;
    snprintf(b.torch_version, sizeof(b.torch_version), "%s", version);
    b.timing.n = 50;
    b.timing.warmup_runs = 7;
    b.timing.median_ms = ms;
    b.timing.mean_ms = ms * 1.01;
    b.timing.min_ms = ms * 0.9;
    b.timing.max_ms = ms * 1.3;
    b.timing.p10_ms = ms * 0.95;
    b.timing.p90_ms = ms * 1.1;
    b.timing.raw_median_ms = ms + 0.0021;
    b.timing.overhead_ms = 0.0021;
    b.eager_ms = eager_ms;
    b.issue_ms = 0.013;
    b.hold_ms = 0.04;
    b.exposed_runs = 1;
    snprintf(b.measured_at, sizeof(b.measured_at), "2026-11-27T06:00:00Z");
    return b;
}

static void test_key(void)
{
    kopt_problem *p = problem();
    kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;
    kopt_vars sz = KOPT_VARS_INIT, sz2 = KOPT_VARS_INIT;
    kopt_device_info d = gpu("GPU-1234"), nouuid = gpu("");
    kopt_torch_baseline a, b;

    if (!CHECK(p != NULL))
        return;
    kopt_vars_set(&sz, "M", 1024);
    kopt_vars_set(&sz, "N", 768);
    kopt_vars_set(&sz2, "M", 1024);
    kopt_vars_set(&sz2, "N", 512);
    unsetenv("TORCHINDUCTOR_TEST_KNOB");
    kopt__torch_baseline_key(&a, p, &sz, &o, 0, &d);
    CHECK_EQ_STR(a.problem_hash, p->hash);
    CHECK_EQ_STR(a.device, "GPU-1234");
    CHECK_EQ_STR(a.sizes, "M=1024,N=768");
    CHECK_EQ_STR(a.torch_version, "");           /* the reference's worker says it */
    CHECK_STR_CONTAINS(a.settings, "budget_ms 100");
    CHECK_STR_CONTAINS(a.settings, "reps 10:1000");
    CHECK_STR_CONTAINS(a.settings, "flush_l2 1");
    CHECK_STR_CONTAINS(a.settings, "torch.compile mode default");
    kopt__torch_baseline_key(&b, p, &sz, &o, 1, &d);
    CHECK_EQ_STR(b.device, "cpu");
    kopt__torch_baseline_key(&b, p, &sz, &o, 0, &nouuid);
    CHECK_EQ_STR(b.device, "NVIDIA H100 80GB HBM3 cc 9.0");
    kopt__torch_baseline_key(&b, p, &sz2, &o, 0, &d);
    CHECK_EQ_STR(b.sizes, "M=1024,N=512");
    /* what changes the number changes the key */
    o.budget_ms = 50;
    kopt__torch_baseline_key(&b, p, &sz, &o, 0, &d);
    CHECK(strcmp(a.settings, b.settings) != 0);
    o.budget_ms = 100;
    o.no_flush = 1;
    kopt__torch_baseline_key(&b, p, &sz, &o, 0, &d);
    CHECK(strcmp(a.settings, b.settings) != 0);
    o.no_flush = 0;
    setenv("TORCHINDUCTOR_TEST_KNOB", "1", 1);
    kopt__torch_baseline_key(&b, p, &sz, &o, 0, &d);
    CHECK(strcmp(a.settings, b.settings) != 0);
    unsetenv("TORCHINDUCTOR_TEST_KNOB");
    kopt__torch_baseline_key(&b, p, &sz, &o, 0, &d);
    CHECK_EQ_STR(a.settings, b.settings);
    /* what does not, does not (trials, seed, check sizes: the baseline runs the main ones) */
    o.trials = 7;
    o.seed = 99;
    o.skip_check_sizes = 1;
    kopt__torch_baseline_key(&b, p, &sz, &o, 0, &d);
    CHECK_EQ_STR(a.settings, b.settings);
    kopt_vars_free(&sz);
    kopt_vars_free(&sz2);
    free(p);
}

static void test_pick(void)
{
    kopt_problem *p = problem();
    kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;
    kopt_vars sz = KOPT_VARS_INIT, sz2 = KOPT_VARS_INIT;
    kopt_device_info d = gpu("GPU-1234"), other = gpu("GPU-5678");
    kopt_torch_baseline key, key_other_dev, key_other_size, key_cpu, v[4];
    const kopt_torch_baseline *b;
    char why[512];

    if (!CHECK(p != NULL))
        return;
    kopt_vars_set(&sz, "M", 1024);
    kopt_vars_set(&sz2, "M", 2048);
    kopt__torch_baseline_key(&key, p, &sz, &o, 0, &d);
    kopt__torch_baseline_key(&key_other_dev, p, &sz, &o, 0, &other);
    kopt__torch_baseline_key(&key_other_size, p, &sz2, &o, 0, &d);
    kopt__torch_baseline_key(&key_cpu, p, &sz, &o, 1, NULL);
    /* none given, or none with this key: the worker starts with the others */
    CHECK_EQ_INT(kopt__torch_baseline_candidates(&o, &key), 0);
    v[0] = measured(&key_other_dev, "2.15.0", 0.5, 1.0);
    v[1] = measured(&key_other_size, "2.15.0", 0.5, 1.0);
    o.torch_baselines = v;
    o.ntorch_baselines = 2;
    CHECK_EQ_INT(kopt__torch_baseline_candidates(&o, &key), 0);
    CHECK(kopt__torch_baseline_pick(&o, &key, "2.15.0", 1.0, why, sizeof(why)) == NULL);
    /* newest first: another version's, then this version's */
    v[0] = measured(&key, "2.16.0", 0.4, 1.0);
    v[1] = measured(&key, "2.15.0", 0.5, 1.0);
    v[2] = measured(&key, "2.15.0", 0.6, 1.0);
    v[3] = measured(&key_other_dev, "2.15.0", 0.7, 1.0);
    o.ntorch_baselines = 4;
    CHECK_EQ_INT(kopt__torch_baseline_candidates(&o, &key), 3);
    b = kopt__torch_baseline_pick(&o, &key, "2.15.0", 1.1, why, sizeof(why));
    CHECK(b == &v[1]);
    b = kopt__torch_baseline_pick(&o, &key, "2.16.0", 1.1, why, sizeof(why));
    CHECK(b == &v[0]);
    /* never another torch version's */
    b = kopt__torch_baseline_pick(&o, &key, "2.17.0", 1.0, why, sizeof(why));
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(why, "the reference runs 2.17.0");
    b = kopt__torch_baseline_pick(&o, &key, "", 1.0, why, sizeof(why));
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(why, "did not report its torch version");
    /* eager now and then apart by more than the factor: measured again (the newest of the
     * version decides; an older one of it is not tried) */
    b = kopt__torch_baseline_pick(&o, &key, "2.15.0", 1.0 * KOPT_BASELINE_EAGER_DRIFT * 1.01,
                                  why, sizeof(why));
    CHECK(b == NULL);
    CHECK_STR_CONTAINS(why, "more than 1.5x apart");
    b = kopt__torch_baseline_pick(&o, &key, "2.15.0", 1.0 / KOPT_BASELINE_EAGER_DRIFT / 1.01,
                                  why, sizeof(why));
    CHECK(b == NULL);
    b = kopt__torch_baseline_pick(&o, &key, "2.15.0", 1.0 * KOPT_BASELINE_EAGER_DRIFT * 0.99,
                                  why, sizeof(why));
    CHECK(b == &v[1]);
    b = kopt__torch_baseline_pick(&o, &key, "2.15.0", 0, why, sizeof(why));   /* not timed */
    CHECK(b == NULL);
    /* the CPU build's times are not compared (they move with the machine's load), but
     * eager must still have been timed */
    v[0] = measured(&key_cpu, "2.15.0", 0.5, 1.0);
    o.ntorch_baselines = 1;
    CHECK(kopt__torch_baseline_pick(&o, &key_cpu, "2.15.0", 300.0, why, sizeof(why)) == &v[0]);
    CHECK(kopt__torch_baseline_pick(&o, &key_cpu, "2.15.0", 0, why, sizeof(why)) == NULL);
    CHECK(kopt__torch_baseline_pick(&o, &key_cpu, "2.16.0", 1.0, why, sizeof(why)) == NULL);
    /* a row without a time never counts */
    v[0].timing.n = 0;
    CHECK_EQ_INT(kopt__torch_baseline_candidates(&o, &key_cpu), 0);
    kopt_vars_free(&sz);
    kopt_vars_free(&sz2);
    free(p);
}

static void test_store_round_trip(void)
{
    char *dir = ktest_tmpdir("baseline"), path[4200];
    kopt_store *s = NULL;
    kopt_problem *p = problem();
    kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;
    kopt_vars sz = KOPT_VARS_INIT;
    kopt_device_info d = gpu("GPU-1234");
    kopt_torch_baseline key, a, b, c, *out = NULL;
    int64_t id = 0;
    int n = -1;

    if (!CHECK(dir && p))
        goto cleanup;
    snprintf(path, sizeof(path), "%s/kopt.db", dir);
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, path), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(kopt_store_schema_version(s), KOPT_STORE_SCHEMA_VERSION);
    kopt_vars_set(&sz, "M", 1024);
    kopt__torch_baseline_key(&key, p, &sz, &o, 0, &d);
    CHECK_EQ_INT(kopt_store_torch_baselines(s, ctx, p->hash, 8, &out, &n), KOPT_OK);
    CHECK_EQ_INT(n, 0);
    CHECK(out == NULL);
    a = measured(&key, "2.15.0", 0.123456789012345, 0.2345678901234);
    CHECK_EQ_INT(kopt_store_torch_baseline_put(s, ctx, &a, 3, 4, &id), KOPT_OK);
    CHECK(id > 0);
    CHECK_EQ_INT(kopt_store_torch_baselines(s, ctx, p->hash, 8, &out, &n), KOPT_OK);
    if (CHECK_EQ_INT(n, 1)) {
        CHECK_EQ_STR(out[0].device, a.device);
        CHECK_EQ_STR(out[0].torch_version, "2.15.0");
        CHECK_EQ_STR(out[0].sizes, a.sizes);
        CHECK_EQ_STR(out[0].settings, a.settings);
        CHECK_EQ_STR(out[0].measured_at, a.measured_at);
        CHECK(out[0].timing.median_ms == a.timing.median_ms);   /* exact: the same number */
        CHECK(out[0].timing.p90_ms == a.timing.p90_ms);
        CHECK(out[0].timing.overhead_ms == a.timing.overhead_ms);
        CHECK(out[0].eager_ms == a.eager_ms);
        CHECK_EQ_INT(out[0].timing.n, 50);
        CHECK_EQ_INT(out[0].timing.warmup_runs, 7);
        CHECK(out[0].issue_ms == a.issue_ms && out[0].hold_ms == a.hold_ms);
        CHECK_EQ_INT(out[0].exposed_runs, 1);
        CHECK_EQ_INT(out[0].id, id);
    }
    free(out);
    out = NULL;
    /* the same key measured again replaces it; another torch version is a row of its own,
     * and the newest comes first */
    b = measured(&key, "2.15.0", 0.2, 0.3);
    c = measured(&key, "2.16.0", 0.1, 0.3);
    CHECK_EQ_INT(kopt_store_torch_baseline_put(s, ctx, &b, 0, 0, NULL), KOPT_OK);
    CHECK_EQ_INT(kopt_store_torch_baseline_put(s, ctx, &c, 0, 0, NULL), KOPT_OK);
    CHECK_EQ_INT(kopt_store_torch_baselines(s, ctx, p->hash, 8, &out, &n), KOPT_OK);
    if (CHECK_EQ_INT(n, 2)) {
        CHECK_EQ_STR(out[0].torch_version, "2.16.0");
        CHECK_EQ_STR(out[1].torch_version, "2.15.0");
        CHECK(out[1].timing.median_ms == 0.2);
    }
    free(out);
    out = NULL;
    CHECK_EQ_INT(kopt_store_torch_baselines(s, ctx, p->hash, 1, &out, &n), KOPT_OK);
    CHECK_EQ_INT(n, 1);
    free(out);
    out = NULL;
    CHECK_EQ_INT(kopt_store_torch_baselines(s, ctx, "other", 8, &out, &n), KOPT_OK);
    CHECK_EQ_INT(n, 0);
cleanup:
    free(out);
    kopt_store_close(s);
    kopt_vars_free(&sz);
    free(p);
    if (dir)
        ktest_rmtree(dir);
    free(dir);
}

static void test_best_baseline(void)
{
    kopt_eval_result r;

    memset(&r, 0, sizeof(r));
    r.ref_timing.n = r.timing.n = r.compile_timing.n = 10;
    r.ref_timing.median_ms = 2.0;
    r.compile_timing.median_ms = 1.0;
    r.timing.median_ms = 0.5;
    r.has_compile = 1;
    kopt__torch_best_baseline(&r);
    CHECK(r.baseline_ms == 1.0 && r.baseline_is_compile == 1);
    CHECK_NEAR(r.speedup_best, 2.0, 1e-12);
    r.compile_timing.median_ms = 3.0;
    kopt__torch_best_baseline(&r);
    CHECK(r.baseline_ms == 2.0 && r.baseline_is_compile == 0);
    CHECK_NEAR(r.speedup_best, 4.0, 1e-12);
    r.has_compile = 0;                       /* torch.compile not timed: unknown */
    kopt__torch_best_baseline(&r);
    CHECK(r.baseline_ms == 0 && r.speedup_best == 0);
    r.has_compile = 1;
    r.timing.n = 0;                          /* the candidate not timed */
    kopt__torch_best_baseline(&r);
    CHECK(r.baseline_ms == 2.0 && r.speedup_best == 0);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_key), KTEST(test_pick), KTEST(test_store_round_trip),
        KTEST(test_best_baseline),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
