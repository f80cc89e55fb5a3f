/*
 * GPU checks of the run API (kopt/run.h) on a temporary store: an evaluation through a run
 * is stored linked to it, the ceilings it measured are stored once and a later run reads
 * them back instead of measuring, the worker's device properties (driver, clocks) reach
 * the run's row, and a session's evaluations are stored too. Skips ("skipped: no GPU")
 * without a driver or device. The test binary is its own worker (`__worker`).
 */
#include "ktest.h"

#include "kopt/run.h"

#define CANDIDATES KOPT_TEST_DATA_DIR "/../gpu/candidates"

static kopt_ctx *ctx;
static char *tmp;
static int have_gpu = -1;

static int gpu(void)
{
    kopt_device_info d;

    if (have_gpu < 0)
        have_gpu = kopt_device_nvml(ctx, 0, &d, NULL) == KOPT_OK;
    if (!have_gpu)
        KTEST_SKIP("no GPU");
    return have_gpu;
}

static kopt_eval_result *eval(kopt_run *run, kopt_run_session *s, const kopt_problem *p,
                              const char *path)
{
    kopt_candidate *c = NULL;
    kopt_eval_result *r = NULL;
    kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;

    if (!CHECK_EQ_INT(kopt_candidate_load(&c, ctx, path, p), KOPT_OK))
        return NULL;
    if (s)
        CHECK_EQ_INT(kopt_run_session_eval(s, ctx, c, "node", &r), KOPT_OK);
    else
        CHECK_EQ_INT(kopt_run_eval(run, ctx, p, c, &o, NULL, &r), KOPT_OK);
    kopt_candidate_free(c);
    if (r)
        printf("  %-32s %s %.4f ms, stored #%lld\n", strrchr(path, '/') + 1,
               kopt_verdict_name(r->verdict), r->timing.median_ms, (long long)r->eval_id);
    return r;
}

static void test_run_on_gpu(void)
{
    char *db = kopt_path_join(tmp, "gpu.db");
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL, *later = NULL;
    kopt_run_session *s = NULL;
    kopt_problem *p = NULL;
    kopt_eval_result *r = NULL;
    kopt_eval_opts so = KOPT_EVAL_OPTS_INIT;
    kopt_ceilings stored, again;
    kopt_store_run got;
    int found = 0;
    double t0;

    if (!gpu() || !CHECK_EQ_INT(kopt_problem_load(&p, ctx, KOPT_EXAMPLES_DIR "/vector_add"),
                                KOPT_OK))
        goto cleanup;
    ro.kind = KOPT_RUN_OPTIMIZE;
    ro.db_path = db;
    if (!CHECK_EQ_INT(kopt_run_open(&run, ctx, &ro), KOPT_OK))
        goto cleanup;
    CHECK(kopt_run_env(run)->device_uuid[0] != '\0');    /* NVML, at open */

    /* one-shot: measured ceilings stored, the device's properties noted */
    r = eval(run, NULL, p, CANDIDATES "/vector_add_correct_nofm.cu");
    if (!r || !CHECK_EQ_INT(r->verdict, KOPT_VERDICT_OK))
        goto cleanup;
    CHECK(r->eval_id > 0);
    CHECK(r->ceilings.valid);
    CHECK(kopt_run_env(run)->driver_version > 0);
    CHECK(kopt_run_env(run)->clock_khz > 0);
    CHECK_EQ_INT(kopt_store_get_ceilings(kopt_run_store(run), ctx, r->device.uuid, &stored,
                                         &found), KOPT_OK);
    CHECK_EQ_INT(found, 1);
    CHECK_NEAR(stored.dram_copy_gbs, r->ceilings.dram_copy_gbs, 1e-6);
    kopt_eval_result_free(r);
    r = NULL;

    /* a session through the run, each evaluation stored */
    if (!CHECK_EQ_INT(kopt_run_session_open(&s, run, ctx, p, &so, 1), KOPT_OK))
        goto cleanup;
    r = eval(run, s, p, CANDIDATES "/vector_add_correct_nofm.cu");
    CHECK(r && r->verdict == KOPT_VERDICT_OK && r->eval_id > 0);
    kopt_eval_result_free(r);
    r = eval(run, s, p, CANDIDATES "/vector_add_off_by_one.cu");
    CHECK(r && r->verdict == KOPT_VERDICT_WRONG && r->eval_id > 0);
    kopt_eval_result_free(r);
    r = NULL;
    kopt_run_session_close(s);
    s = NULL;
    kopt_run_finish(run, ctx, KOPT_RUN_OK, NULL);
    if (CHECK_EQ_INT(kopt_run_get(ctx, db, kopt_run_id(run), &got), KOPT_OK)) {
        CHECK_EQ_INT(got.nevals, 3);
        CHECK_EQ_STR(got.kind, "optimize");
        CHECK(got.driver_version > 0);
    }

    /* a later run reads the ceilings from the store instead of measuring (fast) */
    if (!CHECK_EQ_INT(kopt_run_open(&later, ctx, &ro), KOPT_OK))
        goto cleanup;
    t0 = kopt_now_ms();
    CHECK_EQ_INT(kopt_run_ceilings(later, ctx, 0, &again), KOPT_OK);
    CHECK(kopt_now_ms() - t0 < 500);
    CHECK(again.valid);
    CHECK_NEAR(again.dram_copy_gbs, stored.dram_copy_gbs, 1e-6);
cleanup:
    kopt_eval_result_free(r);
    kopt_run_session_close(s);
    kopt_run_close(later);
    kopt_run_close(run);
    kopt_problem_free(p);
    free(db);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_run_on_gpu),
    };
    int rc;

    if (argc > 1 && strcmp(argv[1], "__worker") == 0)
        return kopt_worker_main();
    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("run_gpu");
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    if (tmp)
        ktest_rmtree(tmp);
    free(tmp);
    kopt_ctx_free(ctx);
    /* nothing ran without a GPU: tell CTest (SKIP_RETURN_CODE 77) rather than pass */
    return rc == 0 && have_gpu == 0 ? 77 : rc;
}
