/* A program of its own built against an installed libkopt (tests/install/test_install.sh
 * builds it with pkg-config and with find_package(kopt)): names the worker program the
 * library found, evaluates a candidate with kopt_eval_run, and prints the verdict.
 * Usage: eval_example PROBLEM_DIR CANDIDATE.cu   (exit 0 when a verdict was reached) */
#include <kopt/kopt.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    kopt_eval_opts opts = KOPT_EVAL_OPTS_INIT;
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_problem *prob = NULL;
    kopt_candidate *cand = NULL;
    kopt_eval_result *res = NULL;
    const char *source = NULL;
    char *worker = NULL;
    int rc = 1;

    if (argc != 3 || !ctx) {
        fprintf(stderr, "usage: eval_example PROBLEM_DIR CANDIDATE.cu\n");
        kopt_ctx_free(ctx);
        return 2;
    }
    kopt_log_set(ctx, NULL, NULL, KOPT_LOG_INFO);   /* stderr: where things were found */
    if (kopt_worker_find(ctx, &worker, &source) == KOPT_OK)
        printf("worker %s (%s)\n", worker, source);
    else
        printf("worker none: %s\n", kopt_errmsg(ctx));
    if (kopt_problem_load(&prob, ctx, argv[1]) != KOPT_OK ||
        kopt_candidate_load(&cand, ctx, argv[2], prob) != KOPT_OK ||
        kopt_eval_run(&res, ctx, prob, cand, &opts) != KOPT_OK) {
        fprintf(stderr, "eval_example: %s\n", kopt_errmsg(ctx));
        goto done;
    }
    printf("verdict %s\n", kopt_verdict_name(res->verdict));
    printf("message %s\n", res->message);
    rc = 0;
done:
    kopt_eval_result_free(res);
    kopt_candidate_free(cand);
    kopt_problem_free(prob);
    free(worker);
    kopt_ctx_free(ctx);
    return rc;
}
