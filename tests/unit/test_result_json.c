/*
 * Evaluation results read back from their JSON (src/eval/result_read.c,
 * kopt_eval_result_from_json): real results recorded on an H100, an H200 and the CPU
 * (tests/data/results/) read and written again give every field the writer emits with the
 * same value; text that is not a result is refused with a reason.
 */
#include "ktest.h"

#include "kopt/kopt.h"

#include <jansson.h>

/* Every key of `again` (the writer's) has the same value in `orig`, objects compared key by
 * key. The CLI may add keys of its own, which the writer does not emit; a key an older
 * writer did not emit yet (the H200 fixture's) must come back as its default: null, false,
 * "" or an empty object. */
static int is_default(const json_t *v)
{
    return json_is_null(v) || json_is_false(v) ||
           (json_is_string(v) && !json_string_value(v)[0]) ||
           (json_is_object(v) && json_object_size(v) == 0);
}

static int same_fields(const char *name, json_t *orig, json_t *again)
{
    const char *k;
    json_t *v;
    int bad = 0;

    json_object_foreach(again, k, v) {
        json_t *o = json_object_get(orig, k);
        if (!o && is_default(v))
            continue;
        if (json_is_object(v) && json_is_object(o)) {
            bad += same_fields(name, o, v);
            continue;
        }
        if (!json_equal(v, o)) {
            char *a = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            char *b = o ? json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            fprintf(stderr, "%s: field %s: written again as %.300s, was %.300s\n", name, k,
                    a ? a : "?", b ? b : "(missing)");
            free(a);
            free(b);
            bad++;
        }
    }
    return bad;
}

static void roundtrip(const char *file, const char *verdict, int nchecks)
{
    char path[4096], *text = NULL, *again = NULL;
    size_t len;
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_eval_result *r = NULL;
    json_t *orig, *back;

    snprintf(path, sizeof(path), "%s/results/%s", KOPT_TEST_DATA_DIR, file);
    if (!CHECK_EQ_INT(kopt_file_read(ctx, path, &text, &len), KOPT_OK))
        goto out;
    if (!CHECK_EQ_INT(kopt_eval_result_from_json(&r, ctx, text), KOPT_OK))
        goto out;
    CHECK_EQ_STR(kopt_verdict_name(r->verdict), verdict);
    CHECK_EQ_INT(r->nchecks, nchecks);
    again = kopt_eval_result_json(r);
    orig = json_loads(text, 0, NULL);
    back = json_loads(again ? again : "", 0, NULL);
    if (CHECK(orig && back))
        CHECK_EQ_INT(same_fields(file, orig, back), 0);
    CHECK(json_object_size(back) >= 20);
    json_decref(orig);
    json_decref(back);
out:
    free(again);
    free(text);
    kopt_eval_result_free(r);
    kopt_ctx_free(ctx);
}

static void test_h100_pytorch_ok_reads_back(void)
{
    roundtrip("h100_torch_big_softmax_ok.json", "OK", 7);
}

static void test_h200_host_mode_wrong_reads_back(void)
{
    roundtrip("h200_host_bf16_wrong.json", "WRONG", 3);
}

static void test_cpu_wrong_at_two_size_sets_reads_back(void)
{
    roundtrip("cpu_torch_wrong.json", "WRONG", 5);
}

static void test_fields_land_where_they_belong(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_eval_result *r = NULL;
    char path[4096], *text = NULL;
    size_t len;

    snprintf(path, sizeof(path), "%s/results/cpu_torch_wrong.json", KOPT_TEST_DATA_DIR);
    if (CHECK_EQ_INT(kopt_file_read(ctx, path, &text, &len), KOPT_OK) &&
        CHECK_EQ_INT(kopt_eval_result_from_json(&r, ctx, text), KOPT_OK)) {
        CHECK(r->torch_ref);
        CHECK(r->checks[0].mismatches > 0 && r->checks[0].first_index >= 0);
        CHECK_EQ_STR(r->checks[0].run, "trial 0");
        CHECK_EQ_STR(r->checks[3].sizes_label, "check");
        CHECK(r->check_sizes.n == 2 && r->sizes.n == 2);
        CHECK(r->total_ms > 0 && r->trace != NULL);
    }
    free(text);
    kopt_eval_result_free(r);
    kopt_ctx_free(ctx);
}

/* The roofline at the faster rate the tolerance admits reads back and is written again. */
static void test_fast_roofline_reads_back(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_eval_result *r = NULL;
    char path[4096], *text = NULL, *with = NULL, *again = NULL;
    json_t *j = NULL, *k = NULL;
    size_t len;

    snprintf(path, sizeof(path), "%s/results/cpu_torch_wrong.json", KOPT_TEST_DATA_DIR);
    if (!CHECK_EQ_INT(kopt_file_read(ctx, path, &text, &len), KOPT_OK) ||
        !CHECK((j = json_loads(text, 0, NULL)) != NULL))
        goto done;
    json_object_set_new(j, "fast_roofline", json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:s, "
                        "s:s}", "flops", 1.374e11, "bytes", 2e8, "achieved_gbs", 200.0,
                        "achieved_gflops", 137400.0, "bound_ms", 0.3436, "pct_of_bound", 34.36,
                        "limiter", "compute", "compute_ceiling", "measured", "compute", "tf32"));
    with = json_dumps(j, 0);
    if (!CHECK_EQ_INT(kopt_eval_result_from_json(&r, ctx, with), KOPT_OK))
        goto done;
    CHECK(r->fast_roofline.valid);
    CHECK_EQ_INT(r->fast_compute, KOPT_COMPUTE_TF32);
    CHECK_NEAR(r->fast_roofline.pct_of_bound, 34.36, 1e-9);
    again = kopt_eval_result_json(r);
    CHECK(again && (k = json_loads(again, 0, NULL)) != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(k, "fast_roofline"),
                 "compute")), "tf32");
done:
    json_decref(k);
    json_decref(j);
    free(again);
    free(with);
    free(text);
    kopt_eval_result_free(r);
    kopt_ctx_free(ctx);
}

static void test_not_a_result_is_refused(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_eval_result *r = NULL;

    CHECK_EQ_INT(kopt_eval_result_from_json(&r, ctx, "{\"verdict\": \"OK\""), KOPT_E_INVALID);
    CHECK(strstr(kopt_errmsg(ctx), "line 1") != NULL);
    CHECK(r == NULL);
    CHECK_EQ_INT(kopt_eval_result_from_json(&r, ctx, "{\"verdict\": \"FASTEST\"}"),
                 KOPT_E_INVALID);
    CHECK(strstr(kopt_errmsg(ctx), "\"FASTEST\" unknown") != NULL);
    CHECK_EQ_INT(kopt_eval_result_from_json(&r, ctx, "{\"message\": \"x\"}"), KOPT_E_INVALID);
    CHECK(strstr(kopt_errmsg(ctx), "verdict missing") != NULL);
    kopt_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_h100_pytorch_ok_reads_back),
        KTEST(test_h200_host_mode_wrong_reads_back),
        KTEST(test_cpu_wrong_at_two_size_sets_reads_back),
        KTEST(test_fields_land_where_they_belong), KTEST(test_fast_roofline_reads_back),
        KTEST(test_not_a_result_is_refused),
    };
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
