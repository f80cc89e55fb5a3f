/*
 * Unit tests of CUPTI's host API through kopt (src/profile/cupti.c), which needs
 * libcupti.so.13 (and the libnvperf_host.so it loads) but no GPU: pass counts of kopt's
 * metric sets on GH100 (H100/H200), the naming of metric names a chip does not know, and
 * the argument checks of the range profiler and activity calls that fail before touching
 * a device. Skips visibly ("skipped: no libcupti host API") when the library cannot load.
 */
#include "ktest.h"

#include "../../src/profile/cupti_int.h"

static kopt_ctx *ctx;

/* Passes of `metrics` on GH100; -1 (and a failed check) on error; -2 when CUPTI is not
 * loadable here. */
static int passes(const char *const *metrics)
{
    int n = -1;
    kopt_status rc = kopt__cupti_host_passes(ctx, "GH100", metrics, &n);

    if (rc == KOPT_E_NO_DEVICE || rc == KOPT_E_UNSUPPORTED)
        return -2;
    if (!CHECK_EQ_INT(rc, KOPT_OK)) {
        printf("  %s\n", kopt_errmsg(ctx));
        return -1;
    }
    return n;
}

static int have_host_api(void)
{
    static const char *const one[] = {"gpu__time_duration.sum", NULL};
    int n = -1;
    kopt_status rc = kopt__cupti_host_passes(ctx, "GH100", one, &n);

    if (rc == KOPT_OK)
        return 1;
    if (rc == KOPT_E_NO_DEVICE || rc == KOPT_E_UNSUPPORTED) {
        KTEST_SKIP("no libcupti host API");
        printf("  (%s)\n", kopt_errmsg(ctx));
        return 0;
    }
    KTEST_FAIL("host API: %s", kopt_errmsg(ctx));
    return 0;
}

/* The roofline set is meant for the tuning loop: one or two passes. The rules set is
 * larger and costs more passes; both must be valid metric names on GH100. */
static void test_metric_sets_gh100(void)
{
    int roof, rules, one, sol_sm, sol_mem, sol_both;
    static const char *const time_only[] = {"gpu__time_duration.sum", NULL};
    static const char *const sm_sol[] = {"sm__throughput.avg.pct_of_peak_sustained_elapsed", NULL};
    static const char *const mem_sol[] = {
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", NULL};
    static const char *const both_sol[] = {
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", NULL};

    if (!have_host_api())
        return;
    roof = passes(kopt_metrics_roofline);
    rules = passes(kopt_metrics_rules);
    one = passes(time_only);
    sol_sm = passes(sm_sol);
    sol_mem = passes(mem_sol);
    sol_both = passes(both_sol);
    printf("  GH100 passes: roofline %d, rules %d, duration %d, SM SOL%% %d, memory SOL%% %d, "
           "both SOL%% %d\n", roof, rules, one, sol_sm, sol_mem, sol_both);
    CHECK(roof >= 1 && roof <= 2);
    CHECK_EQ_INT(one, 1);
    /* A superset never needs fewer passes than its parts. */
    CHECK(rules >= roof);
    CHECK(rules >= sol_both);
    CHECK(sol_both >= sol_sm && sol_both >= sol_mem);
    CHECK(sol_sm > 1);      /* the SOL percentages are the expensive part of the rules set */
}

/* Every name in kopt's sets is known on GH100 (a bad one makes the config fail). */
static void test_metric_names_valid_gh100(void)
{
    const char *const *sets[] = {kopt_metrics_roofline, kopt_metrics_rules};

    if (!have_host_api())
        return;
    for (int s = 0; s < 2; s++)
        for (int i = 0; sets[s][i]; i++) {
            const char *one[2] = {sets[s][i], NULL};
            int n = -1;
            kopt_status rc = kopt__cupti_host_passes(ctx, "GH100", one, &n);
            if (!CHECK_EQ_INT(rc, KOPT_OK))
                printf("  %s: %s\n", sets[s][i], kopt_errmsg(ctx));
            CHECK(n >= 1);
        }
}

static void test_bad_names(void)
{
    static const char *const mixed[] = {"dram__bytes_read.sum", "kopt__no_such_metric.sum",
                                        "gpu__time_duration.sum", "sm__nonsense.avg", NULL};
    static const char *const empty[] = {NULL};
    int n = -7;

    if (!have_host_api())
        return;
    CHECK_EQ_INT(kopt__cupti_host_passes(ctx, "GH100", mixed, &n), KOPT_E_INVALID);
    CHECK_EQ_INT(n, -7);                                   /* untouched on failure */
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "\"kopt__no_such_metric.sum\"");
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "\"sm__nonsense.avg\"");
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "GH100");
    CHECK(!strstr(kopt_errmsg(ctx), "dram__bytes_read"));  /* only the bad ones are named */
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "CUPTI");         /* CUPTI's own result string */

    CHECK_EQ_INT(kopt__cupti_host_passes(ctx, "NOT_A_CHIP", kopt_metrics_roofline, &n),
                 KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "NOT_A_CHIP");
    CHECK_EQ_INT(kopt__cupti_host_passes(ctx, "GH100", empty, &n), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt__cupti_host_passes(ctx, "", kopt_metrics_roofline, &n), KOPT_E_INVALID);
}

/* Calls that fail on their arguments or state, before any device work. */
static void test_argument_checks(void)
{
    kopt__cupti_rp *rp = (kopt__cupti_rp *)&ctx;
    char **names = (char **)&ctx;
    int n = -1;
    kopt_status rc;

    rc = kopt__cupti_rp_open(&rp, ctx, NULL, 0, kopt_metrics_roofline, 1, NULL);
    CHECK(rc == KOPT_E_INVALID || rc == KOPT_E_UNSUPPORTED);
    CHECK(rp == NULL);
    rp = (kopt__cupti_rp *)&ctx;
    rc = kopt__cupti_rp_open(&rp, ctx, (void *)&n, 0, kopt_metrics_roofline, 0, NULL);
    CHECK(rc == KOPT_E_INVALID || rc == KOPT_E_UNSUPPORTED);
    CHECK(rp == NULL);
    kopt__cupti_rp_close(NULL);

    rc = kopt__cupti_activity_end(ctx, &names, &n);       /* never begun */
    CHECK(rc != KOPT_OK);
    CHECK(names == NULL);
    CHECK_EQ_INT(n, 0);

    /* Without a driver, tracing says so (not CUPTI's "unknown error"); with one, an empty
     * bracket (no context, nothing launched) lists no kernel. */
    rc = kopt__cupti_activity_begin(ctx);
    if (rc == KOPT_OK) {
        CHECK_EQ_INT(kopt__cupti_activity_begin(ctx), KOPT_E_INVALID);   /* one at a time */
        if (CHECK_EQ_INT(kopt__cupti_activity_end(ctx, &names, &n), KOPT_OK))
            CHECK_EQ_INT(n, 0);
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(names);
    } else {
        CHECK(rc == KOPT_E_NO_DEVICE || rc == KOPT_E_UNSUPPORTED);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "kernel activity tracing");
        printf("  activity tracing here: %s\n", kopt_errmsg(ctx));
    }
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_metric_sets_gh100),
        KTEST(test_metric_names_valid_gh100),
        KTEST(test_bad_names),
        KTEST(test_argument_checks),
    };
    int rc;

    ctx = kopt_ctx_new();
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    kopt_ctx_free(ctx);
    return rc;
}
