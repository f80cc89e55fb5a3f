/*
 * Builds a store of recorded work for the report and MCP tests, without a GPU: an eval run
 * (the evaluation of every H200 CUPTI recording in tests/data/cupti/h200, reference and
 * fast candidate of each example) and a profile run (sgemm and softmax: the reference's
 * profile, then the fast candidate's against it, so resolutions carry predicted and
 * realized gains), both on the recorded H200's measured ceilings
 * (tests/data/ceilings/worker_result_h200.json). Prints "eval RUN_ID" and "profile RUN_ID".
 * usage: make_store DB REPO_ROOT
 */
#include "kopt/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const examples[] = {"gemm_bf16", "layernorm", "reduce_sum", "sgemm",
                                       "softmax", "stencil2d", "transpose", "vector_add"};

static int fail(kopt_ctx *ctx, const char *what)
{
    fprintf(stderr, "make_store: %s: %s\n", what, kopt_errmsg(ctx));
    return 1;
}

/* Import examples/NAME's reference and fast.cu recordings: evaluations or profiles. */
static int import(kopt_run *run, kopt_ctx *ctx, const char *root, const char *name, int profile)
{
    char dir[2048], cand_path[4096], rec[2][4096];
    kopt_problem *prob = NULL;
    kopt_candidate *cand = NULL, *ref = NULL;
    int rc = 1;

    snprintf(dir, sizeof(dir), "%s/examples/%s", root, name);
    snprintf(cand_path, sizeof(cand_path), "%s/fast.cu", dir);
    snprintf(rec[0], sizeof(rec[0]), "%s/tests/data/cupti/h200/%s_reference.json", root, name);
    snprintf(rec[1], sizeof(rec[1]), "%s/tests/data/cupti/h200/%s_fast.json", root, name);
    if (kopt_problem_load(&prob, ctx, dir) != KOPT_OK ||
        kopt_candidate_load(&cand, ctx, cand_path, prob) != KOPT_OK ||
        kopt_candidate_from_reference(&ref, ctx, prob) != KOPT_OK)
        goto done;
    if (profile ? kopt_run_import_profile(run, ctx, prob, NULL, NULL, rec[0], NULL) ||
                  kopt_run_import_profile(run, ctx, prob, cand, ref, rec[1], NULL)
                : kopt_run_import_eval(run, ctx, prob, NULL, rec[0], NULL) ||
                  kopt_run_import_eval(run, ctx, prob, cand, rec[1], NULL))
        goto done;
    rc = 0;
done:
    if (rc)
        fail(ctx, name);
    kopt_candidate_free(ref);
    kopt_candidate_free(cand);
    kopt_problem_free(prob);
    return rc;
}

int main(int argc, char **argv)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char dev[4096];
    int rc = 0;

    if (argc != 3) {
        fprintf(stderr, "usage: make_store DB REPO_ROOT\n");
        return 2;
    }
    snprintf(dev, sizeof(dev), "%s/tests/data/ceilings/worker_result_h200.json", argv[2]);
    for (int profile = 0; profile < 2 && !rc; profile++) {
        kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
        char *cmd[] = {profile ? "profile" : "eval", "(recorded on an H200, imported)"};
        kopt_run *run = NULL;
        ro.kind = profile ? KOPT_RUN_PROFILE : KOPT_RUN_EVAL;
        ro.db_path = argv[1];
        ro.argc = 2;
        ro.argv = cmd;
        if (kopt_run_open(&run, ctx, &ro) != KOPT_OK || kopt_run_import_device(run, ctx, dev))
            rc = fail(ctx, "open");
        for (size_t i = 0; !rc && i < sizeof(examples) / sizeof(examples[0]); i++)
            if (!profile || strcmp(examples[i], "sgemm") == 0 ||
                strcmp(examples[i], "softmax") == 0)
                rc = import(run, ctx, argv[2], examples[i], profile);
        if (!rc) {
            kopt_run_finish(run, ctx, KOPT_RUN_OK, "recorded H200 work imported");
            printf("%s %lld\n", cmd[0], (long long)kopt_run_id(run));
        }
        kopt_run_close(run);
    }
    kopt_ctx_free(ctx);
    return rc;
}
