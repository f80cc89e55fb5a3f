/*
 * Unit tests of kopt_profile_from_json (src/profile/profile_json.c): a recorded `kopt
 * profile --json` report (tests/data/cupti/h200/) read whole and as its bare "metrics"
 * array, every entry compared with the JSON read independently; the optional dyn_smem; and
 * malformed input: not JSON, the report cut short at every length, missing and mistyped
 * fields (each error naming the file and the field), an empty array.
 */
#include "ktest.h"

#include "kopt/profile.h"

#include <jansson.h>

#define REPORT KOPT_TEST_DATA_DIR "/cupti/h200/reduce_sum_fast.json"
#define SMALL_REPORT KOPT_TEST_DATA_DIR "/cupti/h200/vector_add_reference.json"

static kopt_ctx *ctx;

/* The profile from `text` must hold exactly the entries of the JSON array `arr`. */
static void check_same(const kopt_profile *p, json_t *arr)
{
    if (!CHECK(p != NULL) || !CHECK_EQ_INT(p->nkernels, (int)json_array_size(arr)))
        return;
    CHECK_EQ_STR(p->source, "fixture");
    for (int k = 0; k < p->nkernels; k++) {
        json_t *e = json_array_get(arr, (size_t)k), *ms = json_object_get(e, "metrics"), *v;
        const kopt_kernel_profile *kp = &p->kernels[k];
        const char *key;
        double got;

        CHECK_EQ_STR(kp->kernel, json_string_value(json_object_get(e, "kernel")));
        for (int d = 0; d < 3; d++) {
            CHECK_EQ_INT(kp->grid[d], json_integer_value(json_array_get(
                                          json_object_get(e, "grid"), (size_t)d)));
            CHECK_EQ_INT(kp->block[d], json_integer_value(json_array_get(
                                           json_object_get(e, "block"), (size_t)d)));
        }
        CHECK_EQ_INT(kp->metrics.n, (int)json_object_size(ms));
        json_object_foreach(ms, key, v) {
            if (!CHECK(kopt_metrics_get(&kp->metrics, key, &got)) ||
                !CHECK_NEAR(got, json_number_value(v), 0))
                printf("  metric %s of kernel %d\n", key, k);
        }
    }
}

static void test_recorded_report(void)
{
    char *text = ktest_read_file(REPORT), *bare = NULL;
    json_t *rep = text ? json_loads(text, 0, NULL) : NULL, *arr = json_object_get(rep, "metrics");
    kopt_profile *p = NULL;

    if (!CHECK(json_array_size(arr) == 2))   /* two kernels: blocks, then finish */
        goto done;
    CHECK_EQ_INT(kopt_profile_from_json(&p, ctx, text, REPORT), KOPT_OK);
    check_same(p, arr);
    CHECK_NEAR(kopt_metrics_value(&p->kernels[1].metrics, "gpu__time_duration.sum", -1),
               json_number_value(json_object_get(json_object_get(json_array_get(arr, 1),
                                 "metrics"), "gpu__time_duration.sum")), 0);
    kopt_profile_free(p);
    p = NULL;
    bare = json_dumps(arr, JSON_COMPACT);    /* the array alone, as the store keeps it */
    CHECK_EQ_INT(kopt_profile_from_json(&p, ctx, bare, "metrics_json"), KOPT_OK);
    check_same(p, arr);
done:
    kopt_profile_free(p);
    free(bare);
    json_decref(rep);
    free(text);
}

static void test_dyn_smem_and_integers(void)
{
    kopt_profile *p = NULL;
    const char *text = "[{\"kernel\": \"k<64>\", \"grid\": [4, 2, 1], \"block\": [64, 1, 1], "
                       "\"dyn_smem\": 4096, \"metrics\": {\"gpu__time_duration.sum\": 1500, "
                       "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\": 12.5}}]";

    if (!CHECK_EQ_INT(kopt_profile_from_json(&p, ctx, text, "t.json"), KOPT_OK))
        return;
    CHECK_EQ_INT(p->nkernels, 1);
    CHECK_EQ_STR(p->kernels[0].kernel, "k<64>");
    CHECK_EQ_INT(p->kernels[0].dyn_smem, 4096);
    CHECK_EQ_INT(p->kernels[0].grid[1], 2);
    CHECK_NEAR(kopt_metrics_value(&p->kernels[0].metrics, "gpu__time_duration.sum", 0), 1500,
               0);
    CHECK_NEAR(kopt_metrics_value(&p->kernels[0].metrics,
               "sm__throughput.avg.pct_of_peak_sustained_elapsed", 0), 12.5, 0);
    kopt_profile_free(p);
}

/* `text` must be refused with `want`, *out left NULL, the message containing `says`. */
static void refused(const char *text, kopt_status want, const char *says)
{
    static kopt_profile sentinel;
    kopt_profile *p = &sentinel;             /* not NULL: the call must reset it */

    if (!CHECK_EQ_INT(kopt_profile_from_json(&p, ctx, text, "bad.json"), want))
        printf("  accepted: %s\n", text ? text : "(NULL)");
    CHECK(p == NULL);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "bad.json");
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), says);
}

static void test_malformed(void)
{
    static const char ok_entry[] = "\"kernel\": \"k\", \"grid\": [1,1,1], \"block\": [32,1,1]";
    char buf[512];

    refused(NULL, KOPT_E_INVALID, "no text");
    refused("", KOPT_E_INVALID, "bad.json:");
    refused("[{\"kernel\": \"k\",\n \"grid\": [1,1,1],,}]", KOPT_E_INVALID, "bad.json:2:");
    refused("42", KOPT_E_INVALID, "bad.json:1:");
    refused("{\"problem\": \"x\"}", KOPT_E_INVALID, "\"metrics\" array");
    refused("{\"metrics\": {}}", KOPT_E_INVALID, "\"metrics\" array");
    refused("[]", KOPT_E_NOT_FOUND, "no profiled kernel");
    refused("[7]", KOPT_E_INVALID, "metrics[0]: expected an object");
    snprintf(buf, sizeof(buf), "[{%s, \"metrics\": {}}, {\"grid\": [1,1,1]}]", ok_entry);
    refused(buf, KOPT_E_INVALID, "metrics[1].kernel");
    refused("[{\"kernel\": 3, \"grid\": [1,1,1], \"block\": [1,1,1], \"metrics\": {}}]",
            KOPT_E_INVALID, "metrics[0].kernel");
    refused("[{\"kernel\": \"k\", \"grid\": [1,1], \"block\": [1,1,1], \"metrics\": {}}]",
            KOPT_E_INVALID, "metrics[0].grid");
    refused("[{\"kernel\": \"k\", \"grid\": [1,1,1], \"block\": [1,-1,1], \"metrics\": {}}]",
            KOPT_E_INVALID, "metrics[0].block[1]");
    refused("[{\"kernel\": \"k\", \"grid\": [1,1.5,1], \"block\": [1,1,1], \"metrics\": {}}]",
            KOPT_E_INVALID, "metrics[0].grid[1]");
    snprintf(buf, sizeof(buf), "[{%s}]", ok_entry);
    refused(buf, KOPT_E_INVALID, "metrics[0].metrics");
    snprintf(buf, sizeof(buf), "[{%s, \"metrics\": {\"a.sum\": 1, \"b.sum\": \"2\"}}]",
             ok_entry);
    refused(buf, KOPT_E_INVALID, "metrics[0].metrics.b.sum: expected a number");
    snprintf(buf, sizeof(buf), "[{%s, \"metrics\": {\"a.sum\": null}}]", ok_entry);
    refused(buf, KOPT_E_INVALID, "metrics[0].metrics.a.sum");
    snprintf(buf, sizeof(buf), "[{%s, \"dyn_smem\": -4, \"metrics\": {}}]", ok_entry);
    refused(buf, KOPT_E_INVALID, "metrics[0].dyn_smem");
}

static void test_name_too_long(void)
{
    char name[600], text[800];

    memset(name, 'k', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    snprintf(text, sizeof(text), "[{\"kernel\": \"%s\", \"grid\": [1,1,1], \"block\": [1,1,1], "
             "\"metrics\": {}}]", name);
    refused(text, KOPT_E_INVALID, "metrics[0].kernel");
}

/* The report cut short at every length: never accepted, never a crash or a leak (ASan). */
static void test_truncated(void)
{
    char *text = ktest_read_file(SMALL_REPORT);
    size_t n = text ? strlen(text) : 0;
    int accepted = 0;

    if (!CHECK(n > 100))
        goto done;
    for (size_t cut = 0; cut < n - 2; cut++) {
        char saved = text[cut];
        kopt_profile *p = NULL;
        text[cut] = '\0';
        if (kopt_profile_from_json(&p, ctx, text, "cut.json") == KOPT_OK)
            accepted++;
        else
            CHECK(p == NULL);
        kopt_profile_free(p);
        text[cut] = saved;
    }
    CHECK_EQ_INT(accepted, 0);
done:
    free(text);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_recorded_report),
        KTEST(test_dyn_smem_and_integers),
        KTEST(test_malformed),
        KTEST(test_name_too_long),
        KTEST(test_truncated),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
