/* `kopt profile` of a problem with a PyTorch reference: the program's kernels, one forward
 * (kopt_profile_program), analyzed (kopt_program_analyze: classes, host gaps, fusion, the
 * program tools). A candidate is evaluated first (stored as any evaluation): only a correct
 * one is profiled. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_profile_program(kopt_ctx *ctx, kopt_run *run, const kopt_problem *prob,
                        const kopt_candidate *cand, const char *cand_path,
                        const kopt_eval_opts *eo, int json, int with_ncu)
{
    char *text = NULL;
    json_t *doc;
    kopt_program *prog = NULL;
    kopt_program_analysis *a = NULL;
    int64_t profile_id = 0;
    int code, nresolved = 0;

    if (cand) {                        /* correct first */
        kopt_eval_result *r = NULL;
        if (kopt_run_eval(run, ctx, prob, cand, eo, "profile", &r) != KOPT_OK) {
            cli_error(ctx);
            return KOPT_EXIT_ERROR;
        }
        if (r->verdict != KOPT_VERDICT_OK) {
            kopt_run_profile_print_stopped(stdout, r, json);
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
        kopt_run_program_analyze(run, ctx, prob, eo->device, NULL, text, &prog, &a) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "the program profile was not analyzed: %s",
                 kopt_errmsg(ctx));
    if (a && kopt_run_program_store(run, ctx, prob, cand, a, text, &profile_id,
                                    &nresolved) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "the program profile was not stored: %s",
                 kopt_errmsg(ctx));
    if (json) {                        /* the record, and its analysis under "analysis" */
        char *docs = kopt_run_program_document(text, a);
        json_t *out = docs ? json_loads(docs, 0, NULL) : NULL;
        free(docs);
        if (!out) {
            fprintf(stderr, "kopt profile: the program profile is not JSON\n");
            code = KOPT_EXIT_ERROR;
            goto done;
        }
        if (profile_id)
            json_object_set_new(out, "stored", json_pack("{s:I, s:i}", "profile_id",
                                (json_int_t)profile_id, "resolutions", nresolved));
        cli_print_text(json_dumps(out, JSON_INDENT(1)));
        json_decref(out);
    } else {
        printf("program    %s: %zu kernel(s) in one forward\n",
               cand_path ? cand_path : "the PyTorch reference",
               json_array_size(json_object_get(doc, "kernels")));
        if (a)
            kopt_program_print(stdout, ctx, a);
        if (json_object_get(doc, "metrics_note"))
            printf("metrics    %s\n", json_string_value(json_object_get(doc, "metrics_note")));
        if (profile_id)
            printf("stored     profile #%lld, %d resolution(s) of earlier findings\n",
                   (long long)profile_id, nresolved);
    }
    code = 0;
done:
    kopt_program_analysis_free(a);
    kopt_program_free(prog);
    json_decref(doc);
    free(text);
    return code;
}
