/*
 * compile_cubin: compile one candidate (or a problem's reference, given as "-") with kopt's
 * own compiler path (kopt_compile, NVRTC, sm_90a, -lineinfo) and print the cubin's path.
 * Used by make_fixtures.sh to record the SASS fixtures; not part of the build.
 *     compile_cubin PROBLEM_DIR CANDIDATE.cu|- CACHE_DIR
 */
#include "kopt/compile.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_problem *p = NULL;
    kopt_candidate *c = NULL;
    kopt_compiled *cc = NULL;
    kopt_compile_opts o = KOPT_COMPILE_OPTS_INIT;
    kopt_status st;
    int rc = 1;

    if (argc != 4 || !ctx) {
        fprintf(stderr, "usage: compile_cubin PROBLEM_DIR CANDIDATE.cu|- CACHE_DIR\n");
        return 2;
    }
    o.arch = "sm_90a";
    o.cache_dir = argv[3];
    o.no_cache = 1;
    if ((st = kopt_problem_load(&p, ctx, argv[1])) != KOPT_OK)
        goto cleanup;
    st = argv[2][0] == '-' && !argv[2][1] ? kopt_candidate_from_reference(&c, ctx, p)
                                          : kopt_candidate_load(&c, ctx, argv[2], p);
    if (st != KOPT_OK || (st = kopt_compile(&cc, ctx, c, &o)) != KOPT_OK)
        goto cleanup;
    printf("%s\n", cc->binary_path);
    fprintf(stderr, "%s:", cc->compiler);
    for (int i = 0; i < cc->nkernels; i++)
        fprintf(stderr, " %s (%d registers, %d B stack, %d B spill stores)", cc->kernels[i].lowered,
                cc->kernels[i].registers, cc->kernels[i].stack_frame, cc->kernels[i].spill_stores);
    fprintf(stderr, "\n");
    rc = 0;
cleanup:
    if (rc)
        fprintf(stderr, "compile_cubin: %s\n%s\n", kopt_errmsg(ctx), kopt_errdetail(ctx));
    kopt_compiled_free(cc);
    kopt_candidate_free(c);
    kopt_problem_free(p);
    kopt_ctx_free(ctx);
    return rc;
}
