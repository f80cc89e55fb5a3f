/* `kopt profile` of a problem with a PyTorch reference: the program's kernels, one forward
 * (kopt_profile_program), analyzed (kopt_program_analyze: classes, host gaps, fusion, the
 * program tools). A candidate is evaluated first (stored as any evaluation): only a correct
 * one is profiled. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The record analyzed (classes, fusion, host gaps, the program tools), on the device's
 * ceilings from the run when it has or can measure them. NULL when it cannot be read. */
static kopt_program_analysis *analyze(kopt_ctx *ctx, kopt_run *run, const kopt_problem *prob,
                                      const kopt_eval_opts *eo, const char *text,
                                      kopt_program **prog, kopt_ceilings *ceil)
{
    kopt_program_analyze_opts po = KOPT_PROGRAM_ANALYZE_OPTS_INIT;
    kopt_program_analysis *a = NULL;

    if (kopt_program_from_json(prog, ctx, text, "the program profile") != KOPT_OK)
        return NULL;
    memset(ceil, 0, sizeof(*ceil));
    if ((*prog)->nkernels && kopt_run_ceilings(run, ctx, eo->device, ceil) == KOPT_OK)
        po.ceil = ceil;
    po.problem = prob->name;
    po.compute = prob->compute;
    po.matmul_like = kopt_analyze_matmul_like(prob);
    po.rtol = kopt_problem_outputs_rtol(prob);
    if (kopt_program_analyze(&a, ctx, *prog, &po) != KOPT_OK)
        return NULL;
    return a;
}

int cli_profile_program(kopt_ctx *ctx, kopt_run *run, const kopt_problem *prob,
                        const kopt_candidate *cand, const char *cand_path,
                        const kopt_eval_opts *eo, int json, int with_ncu)
{
    char *text = NULL;
    json_t *doc;
    kopt_program *prog = NULL;
    kopt_program_analysis *a = NULL;
    kopt_ceilings ceil;
    int code;

    if (cand) {                        /* correct first */
        kopt_eval_result *r = NULL;
        if (kopt_run_eval(run, ctx, prob, cand, eo, "profile", &r) != KOPT_OK) {
            cli_error(ctx);
            return KOPT_EXIT_ERROR;
        }
        if (r->verdict != KOPT_VERDICT_OK) {
            if (json) {
                cli_print_text(kopt_eval_result_json(r));
            } else {
                printf("verdict    %s: %s\n", kopt_verdict_name(r->verdict), r->message);
                printf("profile    not run: a profile is only taken of a correct candidate\n");
            }
            code = kopt_verdict_exit_code(r->verdict);
            kopt_eval_result_free(r);
            return code;
        }
        kopt_eval_result_free(r);
    }
    if (kopt_profile_program(ctx, prob, cand, eo, with_ncu, &text) != KOPT_OK) {
        cli_error(ctx);
        return KOPT_EXIT_ERROR;
    }
    doc = json_loads(text, 0, NULL);
    if (json_array_size(json_object_get(doc, "kernels")) &&   /* none on the CPU build */
        !(a = analyze(ctx, run, prob, eo, text, &prog, &ceil)))
        kopt_log(ctx, KOPT_LOG_WARN, "the program profile was not analyzed: %s",
                 kopt_errmsg(ctx));
    if (json) {                        /* the record, and its analysis under "analysis" */
        char *aj = a ? kopt_program_json(a) : NULL;
        json_object_set_new(doc, "analysis", aj ? json_loads(aj, 0, NULL) : json_null());
        free(aj);
        cli_print_text(json_dumps(doc, JSON_INDENT(1)));
    } else {
        printf("program    %s: %zu kernel(s) in one forward\n",
               cand_path ? cand_path : "the PyTorch reference",
               json_array_size(json_object_get(doc, "kernels")));
        if (a)
            kopt_program_print(stdout, ctx, a);
        if (json_object_get(doc, "metrics_note"))
            printf("metrics    %s\n", json_string_value(json_object_get(doc, "metrics_note")));
    }
    kopt_program_analysis_free(a);
    kopt_program_free(prog);
    json_decref(doc);
    free(text);
    return 0;
}
