/* `kopt profile` of a problem with a PyTorch reference: the program's kernels, one forward
 * (kopt_profile_program). A candidate is evaluated first (stored as any evaluation): only a
 * correct one is profiled. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A kernel's name without its template arguments and parameters, for the table. */
static void short_name(const char *name, char *out, size_t n)
{
    const char *p = name, *end;
    size_t len;

    if (strncmp(p, "void ", 5) == 0)
        p += 5;
    for (const char *a; (a = strstr(p, "(anonymous namespace)::")) && a < p + strcspn(p, "<");)
        p = a + strlen("(anonymous namespace)::");   /* at::native::(anonymous ...)::f -> f */
    end = p + strcspn(p, "<(");
    len = (size_t)(end - p);
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), p);
}

static void print_table(json_t *doc, const char *what)
{
    json_t *ks = json_object_get(doc, "kernels"), *k;
    double gpu = 0, fwd = json_number_value(json_object_get(doc, "forward_ms"));
    size_t i;

    json_array_foreach(ks, i, k)
        gpu += json_number_value(json_object_get(k, "dur_us")) / 1000.0;
    printf("program    %s: %zu kernel(s) in one forward\n", what, json_array_size(ks));
    printf("  #  kernel                                          op                      "
           "grid            block        regs   time ms  share\n");
    json_array_foreach(ks, i, k) {
        char nm[48];
        json_t *g = json_object_get(k, "grid"), *b = json_object_get(k, "block");
        double ms = json_number_value(json_object_get(k, "dur_us")) / 1000.0;
        short_name(json_string_value(json_object_get(k, "name")) ?: "?", nm, sizeof(nm));
        printf("%3zu  %-46s  %-22.22s  %4lld,%4lld,%3lld  %4lld,%3lld,%2lld  %4lld  %8.4f  %4.1f%%\n",
               i, nm, json_string_value(json_object_get(k, "op")) ?: "",
               json_integer_value(json_array_get(g, 0)), json_integer_value(json_array_get(g, 1)),
               json_integer_value(json_array_get(g, 2)), json_integer_value(json_array_get(b, 0)),
               json_integer_value(json_array_get(b, 1)), json_integer_value(json_array_get(b, 2)),
               json_integer_value(json_object_get(k, "registers")), ms,
               gpu > 0 ? 100.0 * ms / gpu : 0.0);
    }
    if (fwd > 0)
        printf("forward    %.4f ms wall; kernels %.4f ms (%.0f%%); the rest is the host's\n", fwd,
               gpu, 100.0 * gpu / fwd);
    if (json_object_get(doc, "metrics_note"))
        printf("metrics    %s\n", json_string_value(json_object_get(doc, "metrics_note")));
}

int cli_profile_program(kopt_ctx *ctx, kopt_run *run, const kopt_problem *prob,
                        const kopt_candidate *cand, const char *cand_path,
                        const kopt_eval_opts *eo, int json, int with_ncu)
{
    char *text = NULL;
    json_t *doc;
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
    if (json) {
        printf("%s\n", text);
    } else if ((doc = json_loads(text, 0, NULL))) {
        print_table(doc, cand_path ? cand_path : "the PyTorch reference");
        json_decref(doc);
    }
    free(text);
    return 0;
}
