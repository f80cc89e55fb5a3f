/* kopt profile PROBLEM [CANDIDATE]: correct first, then compile info, SASS, metrics (CUPTI
 * or ncu), the roofline class and the micro-tools' ranked findings; --tool-stats scores the
 * tools against later candidates (store). The work is the run API's (kopt_run_profile_
 * candidate); this file parses options and prints. */
#include "cli.h"
#include "kopt/run.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt profile PROBLEM [CANDIDATE.cu] [options]\n"
        "       kopt profile --list-tools | --tool-stats [--db PATH]\n"
        "\n"
        "Correct first: verify and time CANDIDATE (as kopt eval; without it, the reference)\n"
        "and stop with the verdict unless it is OK. Then: compile info (registers, shared\n"
        "memory, spills), SASS counts (nvdisasm), hardware metrics (CUPTI in a worker by\n"
        "default; ncu with --ncu), the roofline class with its reasoning, and the micro-tools'\n"
        "findings ranked by estimated gain. Without a GPU, or with --static: compile, SASS and\n"
        "resources only, with the tools that were skipped and why.\n"
        "\n"
        "The problem counts as matmul-like (for the tensor-core tools) when its compute type\n"
        "is a tensor-core type (fp16, bf16, tf32, fp8) or its name or description contains\n"
        "\"gemm\" or \"matmul\" (any case).\n"
        "\n"
        "options:\n"
        "  (tool needs: a,b = all of them; (a,b) = at least one)\n"
        "  --static          no GPU work: compile, SASS and resources only\n"
        "  --ncu             collect metrics with Nsight Compute instead of CUPTI\n"
        "  --ncu-rules       with --ncu: also run ncu's detailed sections and show its rules\n"
        "  --lock-clocks     with --ncu: --clock-control base (default none, as kopt times)\n"
        "  --import FILE     analyze a saved ncu report (.ncu-rep) instead of profiling\n"
        "  --metrics LIST    collect these metrics (comma-separated ncu names) instead of\n"
        "                    the roofline and rules sets\n"
        "  --set NAME        collect only the roofline or the rules set\n"
        "  --repeat N        CUPTI: N brackets per set; the later ones give the cost of a set\n"
        "                    once the profiler is set up (benchmarks)\n"
        "  --all-tools       run every tool whatever the class\n"
        "  --tool NAME       run only this tool\n"
        "  --list-tools      list the micro-tools and exit\n"
        "  --parent CAND     the candidate this one was derived from (a .cu file, or\n"
        "                    \"reference\"): its findings that no longer fire here are\n"
        "                    recorded as resolved (default: the problem's last profiled one)\n"
        "  --tool-stats      per tool: times fired, resolved by a later candidate, mean\n"
        "                    predicted vs realized gain, precision; then exit\n"
        "  --size K=V        override a size (repeatable)\n"
        "  --device N        GPU ordinal (default 0)\n"
        "  --arch sm_XX      compile target (default: from the GPU; sm_90a without one)\n"
        "  --timeout S       seconds without progress before a worker is killed\n"
        "  --db PATH         store (default ./kopt.db or $KOPT_DB); --no-store to skip\n"
        "  --cache-dir DIR   compile cache\n"
        "  --json            print the same content as JSON\n"
        "  -v, --verbose     log progress to stderr\n"
        "\n"
        "exit codes: as kopt eval (0 OK or SKIPPED, 1 WRONG, 3 COMPILE_ERROR, ...; see\n"
        "kopt eval --help), 2 usage, 9 invalid input file, 10 kopt error.\n");
}

/* ---- small helpers ------------------------------------------------------------------------ */

/* "a,b,c" split in place into a NULL-terminated array (caller frees the array). */
static char **split_commas(char *text)
{
    size_t n = 2;
    char **out, *save = NULL;
    for (const char *p = text; p && *p; p++)
        n += *p == ',';
    if (!text || !(out = calloc(n, sizeof(*out))))
        return NULL;
    n = 0;
    for (char *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        out[n++] = tok;
    return out;
}

static const char *class_list(unsigned c, char *buf, size_t n)
{
    static const kopt_class all[] = {KOPT_CLASS_COMPUTE, KOPT_CLASS_MEMORY, KOPT_CLASS_LATENCY,
                                     KOPT_CLASS_MIXED};
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (c & (unsigned)all[i])
            at += (size_t)snprintf(buf + at, at < n ? n - at : 0, "%s%s", at ? "," : "",
                                   kopt_class_name(all[i]));
    return buf;
}

static const char *needs_list(unsigned needs, char *buf, size_t n)
{
    static const char *const names[] = {"sass", "resources", "metrics", "timing", "device",
                                        "host"};
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < 6; i++)
        if (needs & (1u << i))
            at += (size_t)snprintf(buf + at, at < n ? n - at : 0, "%s%s", at ? "," : "",
                                   names[i]);
    if (!at)
        snprintf(buf, n, "-");
    return buf;
}

/* 1 when `tool` is among the analysis' skipped entries ("tool: why"). */
static const char *skipped_why(const kopt_analysis *a, const char *tool)
{
    size_t n = strlen(tool);
    for (int i = 0; a && i < a->nskipped; i++)
        if (strncmp(a->skipped[i], tool, n) == 0 && a->skipped[i][n] == ':')
            return a->skipped[i] + n + 2;
    return NULL;
}

/* Tools that ran: the selection minus the skipped ones. */
static int tool_ran(const kopt_analysis *a, const kopt_tool *t, const char *only)
{
    if (!a || (only && strcmp(only, t->name) != 0))
        return 0;
    return skipped_why(a, t->name) == NULL;
}

/* ---- output ----------------------------------------------------------------------------- */

/* The per-kernel metrics (the library's text, as the store keeps it). */
static json_t *metrics_json(const kopt_profile *p)
{
    char *text = kopt_run_profile_metrics_json(p);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;

    free(text);
    return j ? j : json_array();
}

static json_t *report_json(const kopt_run_profile *s, const char *cand_path, const char *only)
{
    json_t *o = json_object(), *ks = json_array(), *fs = json_array(), *sk = json_array();
    json_t *ran = json_array(), *rules = json_array(), *sets = json_array(), *tm;
    const kopt_tool *const *tools;
    int nt = 0;

    json_object_set_new(o, "problem", json_string(s->prob->name));
    json_object_set_new(o, "candidate", cand_path ? json_string(cand_path) : json_null());
    json_object_set_new(o, "mode", json_string(s->static_only ? "static" : "profile"));
    if (s->static_note[0])
        json_object_set_new(o, "static_reason", json_string(s->static_note));
    json_object_set_new(o, "matmul_like", json_boolean(s->matmul_like));
    if (s->eval) {
        json_object_set_new(o, "verdict", json_string(kopt_verdict_name(s->eval->verdict)));
        json_object_set_new(o, "message", json_string(s->eval->message));
        if (s->eval->timing.n)
            json_object_set_new(o, "median_ms", json_real(s->eval->timing.median_ms));
        if (s->eval->roofline.valid)
            json_object_set_new(o, "roofline", json_pack("{s:f, s:f, s:f, s:f, s:s}",
                                "achieved_gbs", s->eval->roofline.achieved_gbs,
                                "achieved_gflops", s->eval->roofline.achieved_gflops,
                                "bound_ms", s->eval->roofline.bound_ms, "pct_of_bound",
                                s->eval->roofline.pct_of_bound, "limiter",
                                s->eval->roofline.limiter));
    }
    json_object_set_new(o, "arch", json_string(s->comp->arch));
    json_object_set_new(o, "host_mode", json_boolean(s->comp->host_mode));
    for (int i = 0; i < s->nviews; i++) {
        const kopt_kernel_view *v = &s->views[i];
        json_t *k = json_pack("{s:s, s:[i,i,i], s:[i,i,i], s:i}", "name", v->name, "grid",
                              v->grid[0], v->grid[1], v->grid[2], "block", v->block[0],
                              v->block[1], v->block[2], "dyn_smem", v->dyn_smem);
        if (v->res)
            json_object_set_new(k, "resources", json_pack("{s:s, s:i, s:i, s:i, s:i, s:i}",
                                "lowered", v->res->lowered, "registers", v->res->registers,
                                "static_smem", v->res->static_smem, "stack_frame",
                                v->res->stack_frame, "spill_stores", v->res->spill_stores,
                                "spill_loads", v->res->spill_loads));
        if (v->sass)
            json_object_set_new(k, "sass", json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i}",
                                "instructions", v->sass->instructions, "ffma", v->sass->ffma,
                                "hmma", v->sass->hmma, "hgmma", v->sass->hgmma, "ldl",
                                v->sass->ldl, "stl", v->sass->stl, "barriers",
                                v->sass->barriers));
        json_object_set_new(k, "profiled", json_boolean(v->metrics != NULL));
        if (v->ms > 0)
            json_object_set_new(k, "ms", json_real(v->ms));
        json_array_append_new(ks, k);
    }
    json_object_set_new(o, "kernels", ks);
    json_object_set_new(o, "sass", json_string(s->sass ? "ok" : s->sass_note));
    json_object_set_new(o, "metrics_source", s->prof ? json_string(s->prof->source) : json_null());
    if (s->metrics_note[0])
        json_object_set_new(o, "metrics_note", json_string(s->metrics_note));
    if (s->prof) {
        for (int i = 0; i < s->prof->nsets; i++)
            json_array_append_new(sets, json_pack("{s:s, s:i, s:f, s:f, s:[f,f,f,f,f], s:o}",
                                  "name", s->prof->sets[i].name, "passes",
                                  s->prof->sets[i].passes, "collect_ms",
                                  s->prof->sets[i].collect_ms, "setup_ms",
                                  s->prof->sets[i].setup_ms, "steps_ms",
                                  s->prof->sets[i].steps_ms[0], s->prof->sets[i].steps_ms[1],
                                  s->prof->sets[i].steps_ms[2], s->prof->sets[i].steps_ms[3],
                                  s->prof->sets[i].steps_ms[4], "repeat_ms",
                                  s->prof->sets[i].repeat_ms > 0
                                      ? json_real(s->prof->sets[i].repeat_ms) : json_null()));
        json_object_set_new(o, "metrics", metrics_json(s->prof));
        for (int i = 0; i < s->prof->nrules; i++) {
            const kopt_ncu_rule *r = &s->prof->rules[i];
            json_array_append_new(rules, json_pack("{s:s, s:s, s:s, s:s, s:s, s:f}", "kernel",
                                  r->kernel, "section", r->section, "rule", r->rule, "type",
                                  r->type, "description", r->description ? r->description : "",
                                  "speedup_pct", r->speedup_pct));
        }
    }
    json_object_set_new(o, "metric_sets", sets);
    json_object_set_new(o, "ncu_rules", rules);
    if (s->an) {
        const kopt_classification *c = &s->an->cls;
        json_object_set_new(o, "class", json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:s}",
                            "final", kopt_class_name(c->final), "analytic",
                            kopt_class_name(c->analytic), "measured",
                            kopt_class_name(c->measured), "intensity", c->intensity, "ridge",
                            c->ridge, "pct_of_bound", c->pct_of_bound, "reasoning",
                            c->reasoning));
        for (int i = 0; i < s->an->findings.n; i++) {
            const kopt_finding *f = &s->an->findings.f[i];
            json_t *ev = json_array();
            for (int e = 0; e < f->nevidence; e++)
                json_array_append_new(ev, json_pack("{s:s, s:f, s:s, s:f, s:s}", "metric",
                                      f->evidence[e].metric, "value", f->evidence[e].value,
                                      "op", f->evidence[e].op, "threshold",
                                      f->evidence[e].threshold, "threshold_name",
                                      f->evidence[e].threshold_name));
            json_array_append_new(fs, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:s, s:f, "
                                  "s:o}", "tool", f->tool, "kernel", f->kernel, "title",
                                  f->title, "seen", f->seen ? f->seen : "", "why",
                                  f->why ? f->why : "", "change", f->change ? f->change : "",
                                  "gain", f->gain, "gain_how", f->gain_how ? f->gain_how : "",
                                  "confidence", f->confidence, "evidence", ev));
        }
        for (int i = 0; i < s->an->nskipped; i++)
            json_array_append_new(sk, json_string(s->an->skipped[i]));
    }
    tools = kopt_tools(&nt);
    for (int i = 0; i < nt; i++)
        if (tool_ran(s->an, tools[i], only))
            json_array_append_new(ran, json_string(tools[i]->name));
    json_object_set_new(o, "findings", fs);
    json_object_set_new(o, "tools_run", ran);
    json_object_set_new(o, "tools_skipped", sk);
    tm = json_pack("{s:f, s:f, s:f, s:f, s:f}", "eval_ms", s->eval_ms, "compile_ms",
                   s->compile_ms, "sass_ms", s->sass_ms, "metrics_ms", s->metrics_ms,
                   "analyze_ms", s->analyze_ms);
    if (s->prof)
        json_object_set_new(tm, "collect_ms", json_real(s->prof->collect_ms));
    json_object_set_new(o, "timing", tm);
    if (s->profile_id)
        json_object_set_new(o, "stored", json_pack("{s:I, s:i}", "profile_id",
                            (json_int_t)s->profile_id, "resolutions", s->nresolved));
    return o;
}

static void print_wrapped(const char *label, const char *text)
{
    printf("    %-7s %s\n", label, text && text[0] ? text : "-");
}

static void print_text(const kopt_run_profile *s, const char *cand_path, const char *only)
{
    const kopt_tool *const *tools;
    int nt = 0, first = 1;

    printf("problem    %s (%s)\n", s->prob->name, s->prob->path);
    printf("candidate  %s\n", cand_path ? cand_path : "(the reference)");
    if (s->static_only)
        printf("mode       static (%s)\n", s->static_note);
    if (s->eval && s->eval->has_device && s->eval->device.name[0])
        printf("device     %s, %s, %d SMs\n", s->eval->device.name, s->eval->arch,
               s->eval->device.sm_count);
    if (s->eval && !s->static_only)
        printf("verdict    %s: %s\n", kopt_verdict_name(s->eval->verdict), s->eval->message);
    if (s->eval && s->eval->timing.n)
        printf("time       median %.4f ms (%d reps)\n", s->eval->timing.median_ms,
               s->eval->timing.n);
    if (s->eval && s->eval->roofline.valid)
        printf("roofline   %.0f GB/s, %.1f GFLOP/s: %.1f%% of the %s-bound limit (%.4f ms)\n",
               s->eval->roofline.achieved_gbs, s->eval->roofline.achieved_gflops,
               s->eval->roofline.pct_of_bound, s->eval->roofline.limiter,
               s->eval->roofline.bound_ms);
    printf("compile    %s, %s (%.0f ms)%s\n", s->comp->arch, s->comp->compiler,
           s->compile_ms, s->comp->cache_hit ? ", cached" : "");
    for (int i = 0; i < s->nviews; i++) {
        const kopt_kernel_view *v = &s->views[i];
        printf("  kernel   %s grid %dx%dx%d block %dx%dx%d", v->name, v->grid[0], v->grid[1],
               v->grid[2], v->block[0], v->block[1], v->block[2]);
        if (v->res)
            printf(": %d registers, %d B smem, %d B stack, spills %d/%d B", v->res->registers,
                   v->res->static_smem + v->dyn_smem, v->res->stack_frame,
                   v->res->spill_stores, v->res->spill_loads);
        printf("\n");
        if (v->sass)
            printf("    sass   %d instructions: FFMA %d, HMMA %d, HGMMA %d, LDL/STL %d/%d, "
                   "BAR %d\n", v->sass->instructions, v->sass->ffma, v->sass->hmma,
                   v->sass->hgmma, v->sass->ldl, v->sass->stl, v->sass->barriers);
        if (v->ms > 0)
            printf("    time   %.4f ms (profiled duration)\n", v->ms);
    }
    printf("sass       %s\n", s->sass ? "nvdisasm: counted" : s->sass_note);
    if (s->prof) {
        printf("metrics    %s: %d kernel(s), %d pass(es), collect %.1f ms\n", s->prof->source,
               s->prof->nkernels, s->prof->passes, s->prof->collect_ms);
        for (int i = 0; i < s->prof->nsets; i++)
            printf("  set      %-10s %d pass(es), collect %.1f ms (setup %.1f ms)%s\n",
                   s->prof->sets[i].name, s->prof->sets[i].passes, s->prof->sets[i].collect_ms,
                   s->prof->sets[i].setup_ms,
                   strcmp(s->prof->sets[i].name, "roofline") == 0
                       ? (s->prof->sets[i].collect_ms < 100 ? " (goal < 100 ms: met)"
                                                            : " (goal < 100 ms: NOT met)")
                       : "");
    } else {
        printf("metrics    %s\n", s->metrics_note[0] ? s->metrics_note : "none");
    }
    if (s->an) {
        const kopt_classification *c = &s->an->cls;
        printf("class      %s (analytic %s, measured %s; intensity %.2f FLOP/B, ridge %.2f",
               kopt_class_name(c->final), kopt_class_name(c->analytic),
               kopt_class_name(c->measured), c->intensity, c->ridge);
        if (c->pct_of_bound > 0)
            printf(", %.1f%% of bound", c->pct_of_bound);
        printf(")\n  why      %s\n", c->reasoning);
        printf("findings   %d\n", s->an->findings.n);
        for (int i = 0; i < s->an->findings.n; i++) {
            const kopt_finding *f = &s->an->findings.f[i];
            char gain[64];
            snprintf(gain, sizeof(gain), "%.1f%%", f->gain * 100);
            printf("  %d. [%s] %s (kernel %s; gain %s, confidence %.2f)\n", i + 1, f->tool,
                   f->title, f->kernel, gain, f->confidence);
            print_wrapped("seen", f->seen);
            print_wrapped("why", f->why);
            print_wrapped("change", f->change);
            print_wrapped("gain", f->gain_how);
        }
    }
    if (s->prof && s->prof->nrules) {
        printf("ncu rules  %d (Nsight Compute's own, beside ours)\n", s->prof->nrules);
        for (int i = 0; i < s->prof->nrules; i++) {
            const kopt_ncu_rule *r = &s->prof->rules[i];
            printf("  %s %s/%s", r->type, r->section, r->rule);
            if (r->speedup_pct > 0)
                printf(" (est. %s speedup %.1f%%)", r->speedup_type, r->speedup_pct);
            printf(": %.300s\n", r->description ? r->description : "");
        }
    }
    tools = kopt_tools(&nt);
    printf("tools run ");
    for (int i = 0; i < nt; i++)
        if (tool_ran(s->an, tools[i], only)) {
            printf("%s%s", first ? " " : ", ", tools[i]->name);
            first = 0;
        }
    printf("%s\n", first ? " none" : "");
    if (s->an && s->an->nskipped) {
        printf("skipped    %d tool(s)\n", s->an->nskipped);
        for (int i = 0; i < s->an->nskipped; i++)
            printf("  %s\n", s->an->skipped[i]);
    }
    printf("wall       eval %.0f ms, compile %.0f ms, sass %.0f ms, metrics %.0f ms",
           s->eval_ms, s->compile_ms, s->sass_ms, s->metrics_ms);
    if (s->prof)
        printf(" (collect %.1f ms)", s->prof->collect_ms);
    printf(", analyze %.1f ms\n", s->analyze_ms);
    if (s->profile_id)
        printf("stored     profile #%lld, %d resolution(s) of earlier findings\n",
               (long long)s->profile_id, s->nresolved);
}

/* ---- the other modes ---------------------------------------------------------------------- */

static int list_tools(int json)
{
    const kopt_tool *const *tools;
    int nt = 0;
    char cb[128], nb[128];
    json_t *arr = json ? json_array() : NULL;

    tools = kopt_tools(&nt);
    for (int i = 0; i < nt; i++) {
        class_list(tools[i]->classes, cb, sizeof(cb));
        needs_list(tools[i]->needs, nb, sizeof(nb));
        if (tools[i]->needs_any) {
            char ab[96];
            size_t at = strlen(nb);
            needs_list(tools[i]->needs_any, ab, sizeof(ab));
            if (strcmp(nb, "-") == 0)
                at = 0;
            snprintf(nb + at, sizeof(nb) - at, "%s(%s)", at ? "+" : "", ab);
        }
        if (arr)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s}", "name", tools[i]->name,
                                  "classes", cb, "needs", nb, "summary", tools[i]->summary));
        else
            printf("%-22s %-45s needs %-28s %s\n", tools[i]->name, cb, nb, tools[i]->summary);
    }
    if (arr)
        cli_print_json(arr);
    return 0;
}

static int tool_stats(kopt_ctx *ctx, const char *db_path, int json)
{
    kopt_tool_stats *v = NULL;
    int n = 0, code = 0;

    if (!db_path) {
        fprintf(stderr, "kopt profile: --tool-stats needs a store (--db PATH)\n");
        return KOPT_EXIT_USAGE;
    }
    if (kopt_run_tool_stats(ctx, db_path, &v, &n) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, json_pack("{s:s, s:i, s:i, s:i, s:i, s:f, s:f, s:o}",
                                  "tool", v[i].tool, "fired", v[i].fired, "resolved",
                                  v[i].resolved, "resolved_timed", v[i].resolved_timed,
                                  "improved", v[i].improved, "mean_predicted_gain",
                                  v[i].mean_predicted, "mean_realized_gain", v[i].mean_realized,
                                  "precision", v[i].precision >= 0 ? json_real(v[i].precision)
                                                                   : json_null()));
        cli_print_json(arr);
        goto done;
    }
    printf("%-22s %6s %8s %10s %10s %9s\n", "tool", "fired", "resolved", "predicted",
           "realized", "precision");
    for (int i = 0; i < n; i++) {
        char prec[16] = "-", pred[16] = "-", real[16] = "-";
        if (v[i].precision >= 0)
            snprintf(prec, sizeof(prec), "%.0f%%", v[i].precision * 100);
        if (v[i].resolved)
            snprintf(pred, sizeof(pred), "%.1f%%", v[i].mean_predicted * 100);
        if (v[i].resolved_timed)
            snprintf(real, sizeof(real), "%.1f%%", v[i].mean_realized * 100);
        printf("%-22s %6d %8d %10s %10s %9s\n", v[i].tool, v[i].fired, v[i].resolved, pred,
               real, prec);
    }
    if (!n)
        printf("(no findings stored in %s yet: run kopt profile on candidates first)\n", db_path);
    else
        printf("\nresolved: a later candidate of the same problem no longer shows the finding; "
               "realized gain = 1 - later median / earlier median; precision = resolutions "
               "with a realized gain > 0 / resolutions with a realized gain.\n");
done:
    free(v);
    return code;
}

/* ---- the verb ------------------------------------------------------------------------------ */

int cmd_profile(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"ncu", no_argument, NULL, 'n'},
        {"ncu-rules", no_argument, NULL, 'R'}, {"lock-clocks", no_argument, NULL, 'L'},
        {"static", no_argument, NULL, 'S'}, {"all-tools", no_argument, NULL, 'A'},
        {"tool", required_argument, NULL, 't'}, {"list-tools", no_argument, NULL, 'l'},
        {"tool-stats", no_argument, NULL, 'T'}, {"import", required_argument, NULL, 'i'},
        {"size", required_argument, NULL, 's'}, {"db", required_argument, NULL, 'D'},
        {"no-store", no_argument, NULL, 'N'}, {"device", required_argument, NULL, 'd'},
        {"arch", required_argument, NULL, 'a'}, {"timeout", required_argument, NULL, 'o'},
        {"cache-dir", required_argument, NULL, 'c'}, {"verbose", no_argument, NULL, 'v'},
        {"parent", required_argument, NULL, 'P'}, {"metrics", required_argument, NULL, 'M'},
        {"set", required_argument, NULL, 'E'}, {"repeat", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    kopt_run_profile_opts o = KOPT_RUN_PROFILE_OPTS_INIT;
    kopt_eval_opts *eo = &o.eval;
    kopt_profile_opts *po = &o.profile;
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL;
    kopt_run_profile *s = NULL;
    kopt_vars sizes = KOPT_VARS_INIT;
    kopt_problem *prob = NULL;
    kopt_candidate *cand = NULL, *parent = NULL;
    const char *only = NULL, *db_path = cli_default_db(), *parent_path = NULL;
    const char *cand_path = NULL;
    int json = 0, list = 0, stats = 0, no_store = 0, c, code = 0;
    kopt_ctx *ctx = cli_ctx(0);
    char *end, *metric_text = NULL, **metric_list = NULL;

    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'n': po->ncu = 1; break;
        case 'R': po->ncu = po->ncu_rules = 1; break;
        case 'L': po->ncu_lock_clocks = 1; break;
        case 'S': o.static_only = 1; break;
        case 'A': o.all_tools = 1; break;
        case 't': only = optarg; break;
        case 'l': list = 1; break;
        case 'T': stats = 1; break;
        case 'i': o.import = optarg; break;
        case 'P': parent_path = optarg; break;
        case 'M':
            free(metric_list);
            free(metric_text);
            metric_text = strdup(optarg);
            metric_list = split_commas(metric_text);
            po->metrics = (const char *const *)metric_list;
            break;
        case 'E':
            if (strcmp(optarg, "roofline") == 0)
                po->sets = KOPT_PROFILE_SET_ROOFLINE;
            else if (strcmp(optarg, "rules") == 0)
                po->sets = KOPT_PROFILE_SET_RULES;
            else
                goto bad_number;
            break;
        case 'r': po->repeat = (int)strtol(optarg, &end, 10);
            if (*end || po->repeat < 1 || po->repeat > 100) goto bad_number;
            break;
        case 's':
            if (cli_parse_size(ctx, "profile", optarg, &sizes) != 0) {
                code = KOPT_EXIT_USAGE;
                goto done;
            }
            break;
        case 'D': db_path = optarg; break;
        case 'N': no_store = 1; break;
        case 'd': eo->device = po->device = (int)strtol(optarg, &end, 10);
            if (*end || eo->device < 0) goto bad_number;
            break;
        case 'a': eo->arch = po->arch = optarg; break;
        case 'o': eo->timeout_s = po->timeout_s = strtod(optarg, &end);
            if (*end || eo->timeout_s <= 0) goto bad_number;
            break;
        case 'c': eo->cache_dir = po->cache_dir = optarg; break;
        case 'v': kopt_log_set(ctx, NULL, NULL, KOPT_LOG_INFO); break;
        case 'h': help(stdout); goto done;
        default: help(stderr); code = KOPT_EXIT_USAGE; goto done;
        }
        continue;
bad_number:
        fprintf(stderr, "kopt profile: bad value '%s' (see kopt profile --help)\n", optarg);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (no_store)
        db_path = NULL;
    if (only && !kopt_tool_find(only)) {
        fprintf(stderr, "kopt profile: unknown tool '%s' (kopt profile --list-tools)\n", only);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (list) {
        code = list_tools(json);
        goto done;
    }
    if (stats) {
        code = tool_stats(ctx, db_path, json);
        goto done;
    }
    if (optind >= argc || argc - optind > 2) {
        help(stderr);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (kopt_problem_load(&prob, ctx, argv[optind]) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_INVALID;
        goto done;
    }
    if (optind + 1 < argc) {
        cand_path = argv[optind + 1];
        if (kopt_candidate_load(&cand, ctx, cand_path, prob) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_INVALID;
            goto done;
        }
    }
    if (parent_path && strcmp(parent_path, "reference") != 0 &&
        kopt_candidate_load(&parent, ctx, parent_path, prob) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_INVALID;
        goto done;
    }
    o.parent = parent;
    o.parent_is_reference = parent_path && !parent;
    o.only_tool = only;
    eo->sizes = sizes.n ? &sizes : NULL;

    /* the run: correct first, then compile info, SASS, metrics, analysis, the store */
    ro.kind = KOPT_RUN_PROFILE;
    ro.db_path = db_path;
    ro.db_optional = 1;
    cli_run_command(&ro);
    ro.device = eo->device;
    ro.cache_dir = eo->cache_dir;
    if (kopt_run_open(&run, ctx, &ro) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    if (prob->ref_torch && !o.static_only) {   /* a PyTorch program: kernel by kernel */
        code = cli_profile_program(ctx, run, prob, cand, cand_path, eo, json, 1);
        goto done;
    }
    if (kopt_run_profile_candidate(run, ctx, prob, cand, &o, &s) != KOPT_OK) {
        kopt_run_fault f = kopt_run_last_fault(run);
        cli_error(ctx);
        code = f == KOPT_RUN_FAULT_INPUT ? KOPT_EXIT_INVALID
             : f == KOPT_RUN_FAULT_COMPILE ? kopt_verdict_exit_code(KOPT_VERDICT_COMPILE_ERROR)
             : f == KOPT_RUN_FAULT_LAUNCH ? kopt_verdict_exit_code(KOPT_VERDICT_LAUNCH_ERROR)
                                          : KOPT_EXIT_ERROR;
        goto done;
    }
    if (s->stopped) {
        if (json) {
            cli_print_text(kopt_eval_result_json(s->eval));
        } else {
            printf("verdict    %s: %s\n", kopt_verdict_name(s->eval->verdict),
                   s->eval->message);
            printf("profile    not run: a profile is only taken of a correct candidate\n");
        }
        code = kopt_verdict_exit_code(s->eval->verdict);
    } else {
        if (json)
            cli_print_json(report_json(s, cand_path, only));
        else
            print_text(s, cand_path, only);
        code = s->eval ? kopt_verdict_exit_code(s->eval->verdict) : 0;
    }
    kopt_run_finish(run, ctx, s->static_only ? KOPT_RUN_SKIPPED : KOPT_RUN_OK, NULL);
done:
    kopt_run_profile_free(s);
    kopt_run_close(run);
    kopt_candidate_free(cand);
    kopt_candidate_free(parent);
    free(metric_list);
    free(metric_text);
    kopt_problem_free(prob);
    kopt_vars_free(&sizes);
    kopt_ctx_free(ctx);
    return code;
}
