/* A profile as kopt profile prints it, as text or JSON (and for any other caller of the run
 * API): the correctness check, compile info, kernels with resources and SASS counts, metrics,
 * the class and the ranked findings, ncu's rules, the tools run and skipped, the wall time;
 * also a check that stopped it, the micro-tools' list and their stored scores. */
#include "run_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void print_wrapped(FILE *out, const char *label, const char *text)
{
    fprintf(out, "    %-7s %s\n", label, text && text[0] ? text : "-");
}

static void print_text(FILE *out, const kopt_run_profile *s, const char *cand_path,
                       const char *only)
{
    const kopt_tool *const *tools;
    int nt = 0, first = 1;

    fprintf(out, "problem    %s (%s)\n", s->prob->name, s->prob->path);
    fprintf(out, "candidate  %s\n", cand_path ? cand_path : "(the reference)");
    if (s->static_only)
        fprintf(out, "mode       static (%s)\n", s->static_note);
    if (s->eval && s->eval->has_device && s->eval->device.name[0])
        fprintf(out, "device     %s, %s, %d SMs\n", s->eval->device.name, s->eval->arch,
                s->eval->device.sm_count);
    if (s->eval && !s->static_only)
        fprintf(out, "verdict    %s: %s\n", kopt_verdict_name(s->eval->verdict), s->eval->message);
    if (s->eval && s->eval->timing.n)
        fprintf(out, "time       median %.4f ms (%d reps)\n", s->eval->timing.median_ms,
                s->eval->timing.n);
    if (s->eval && s->eval->roofline.valid)
        fprintf(out, "roofline   %.0f GB/s, %.1f GFLOP/s: %.1f%% of the %s-bound limit (%.4f ms)\n",
                s->eval->roofline.achieved_gbs, s->eval->roofline.achieved_gflops,
                s->eval->roofline.pct_of_bound, s->eval->roofline.limiter,
                s->eval->roofline.bound_ms);
    fprintf(out, "compile    %s, %s (%.0f ms)%s\n", s->comp->arch, s->comp->compiler,
            s->compile_ms, s->comp->cache_hit ? ", cached" : "");
    for (int i = 0; i < s->nviews; i++) {
        const kopt_kernel_view *v = &s->views[i];
        fprintf(out, "  kernel   %s grid %dx%dx%d block %dx%dx%d", v->name, v->grid[0], v->grid[1],
                v->grid[2], v->block[0], v->block[1], v->block[2]);
        if (v->res)
            fprintf(out, ": %d registers, %d B smem, %d B stack, spills %d/%d B", v->res->registers,
                    v->res->static_smem + v->dyn_smem, v->res->stack_frame,
                    v->res->spill_stores, v->res->spill_loads);
        fprintf(out, "\n");
        if (v->sass)
            fprintf(out, "    sass   %d instructions: FFMA %d, HMMA %d, HGMMA %d, LDL/STL %d/%d, "
                    "BAR %d\n", v->sass->instructions, v->sass->ffma, v->sass->hmma,
                    v->sass->hgmma, v->sass->ldl, v->sass->stl, v->sass->barriers);
        if (v->ms > 0)
            fprintf(out, "    time   %.4f ms (profiled duration)\n", v->ms);
    }
    fprintf(out, "sass       %s\n", s->sass ? "nvdisasm: counted" : s->sass_note);
    if (s->prof) {
        fprintf(out, "metrics    %s: %d kernel(s), %d pass(es), collect %.1f ms\n",
                s->prof->source, s->prof->nkernels, s->prof->passes, s->prof->collect_ms);
        for (int i = 0; i < s->prof->nsets; i++)
            fprintf(out, "  set      %-10s %d pass(es), collect %.1f ms (setup %.1f ms)%s\n",
                    s->prof->sets[i].name, s->prof->sets[i].passes, s->prof->sets[i].collect_ms,
                    s->prof->sets[i].setup_ms,
                    strcmp(s->prof->sets[i].name, "roofline") == 0
                        ? (s->prof->sets[i].collect_ms < 100 ? " (goal < 100 ms: met)"
                                                             : " (goal < 100 ms: NOT met)")
                        : "");
    } else {
        fprintf(out, "metrics    %s\n", s->metrics_note[0] ? s->metrics_note : "none");
    }
    if (s->an) {
        const kopt_classification *c = &s->an->cls;
        fprintf(out, "class      %s (analytic %s, measured %s; intensity %.2f FLOP/B, ridge %.2f",
                kopt_class_name(c->final), kopt_class_name(c->analytic),
                kopt_class_name(c->measured), c->intensity, c->ridge);
        if (c->pct_of_bound > 0)
            fprintf(out, ", %.1f%% of bound", c->pct_of_bound);
        fprintf(out, ")\n  why      %s\n", c->reasoning);
        fprintf(out, "findings   %d\n", s->an->findings.n);
        for (int i = 0; i < s->an->findings.n; i++) {
            const kopt_finding *f = &s->an->findings.f[i];
            char gain[64];
            snprintf(gain, sizeof(gain), "%.1f%%", f->gain * 100);
            fprintf(out, "  %d. [%s] %s (kernel %s; gain %s, confidence %.2f)\n", i + 1, f->tool,
                    f->title, f->kernel, gain, f->confidence);
            print_wrapped(out, "seen", f->seen);
            print_wrapped(out, "why", f->why);
            print_wrapped(out, "change", f->change);
            print_wrapped(out, "gain", f->gain_how);
        }
    }
    if (s->prof && s->prof->nrules) {
        fprintf(out, "ncu rules  %d (Nsight Compute's own, beside ours)\n", s->prof->nrules);
        for (int i = 0; i < s->prof->nrules; i++) {
            const kopt_ncu_rule *r = &s->prof->rules[i];
            fprintf(out, "  %s %s/%s", r->type, r->section, r->rule);
            if (r->speedup_pct > 0)
                fprintf(out, " (est. %s speedup %.1f%%)", r->speedup_type, r->speedup_pct);
            fprintf(out, ": %.300s\n", r->description ? r->description : "");
        }
    }
    tools = kopt_tools(&nt);
    fprintf(out, "tools run ");
    for (int i = 0; i < nt; i++)
        if (tool_ran(s->an, tools[i], only)) {
            fprintf(out, "%s%s", first ? " " : ", ", tools[i]->name);
            first = 0;
        }
    fprintf(out, "%s\n", first ? " none" : "");
    if (s->an && s->an->nskipped) {
        fprintf(out, "skipped    %d tool(s)\n", s->an->nskipped);
        for (int i = 0; i < s->an->nskipped; i++)
            fprintf(out, "  %s\n", s->an->skipped[i]);
    }
    fprintf(out, "wall       eval %.0f ms, compile %.0f ms, sass %.0f ms, metrics %.0f ms",
            s->eval_ms, s->compile_ms, s->sass_ms, s->metrics_ms);
    if (s->prof)
        fprintf(out, " (collect %.1f ms)", s->prof->collect_ms);
    fprintf(out, ", analyze %.1f ms\n", s->analyze_ms);
    if (s->profile_id)
        fprintf(out, "stored     profile #%lld, %d resolution(s) of earlier findings\n",
                (long long)s->profile_id, s->nresolved);
}

/* ---- the other modes ---------------------------------------------------------------------- */

void kopt_run_profile_print_stopped(FILE *out, const kopt_eval_result *r, int json)
{
    if (json) {
        kopt__run_print_text(out, kopt_eval_result_json(r));
        return;
    }
    fprintf(out, "verdict    %s: %s\n", kopt_verdict_name(r->verdict), r->message);
    fprintf(out, "profile    not run: a profile is only taken of a correct candidate\n");
}

void kopt_run_profile_print(FILE *out, const kopt_run_profile *s, const char *cand_path,
                            const char *only, int json)
{
    if (s->stopped)
        kopt_run_profile_print_stopped(out, s->eval, json);
    else if (json)
        kopt__run_print_json(out, report_json(s, cand_path, only));
    else
        print_text(out, s, cand_path, only);
}

void kopt_run_tools_print(FILE *out, int json)
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
            fprintf(out, "%-22s %-45s needs %-28s %s\n", tools[i]->name, cb, nb, tools[i]->summary);
    }
    if (arr)
        kopt__run_print_json(out, arr);
}

kopt_status kopt_run_tool_stats_print(FILE *out, kopt_ctx *ctx, const char *db_path, int json)
{
    kopt_tool_stats *v = NULL;
    int n = 0;
    kopt_status rc = kopt_run_tool_stats(ctx, db_path, &v, &n);

    if (rc != KOPT_OK)
        goto done;
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
        kopt__run_print_json(out, arr);
        goto done;
    }
    fprintf(out, "%-22s %6s %8s %10s %10s %9s\n", "tool", "fired", "resolved", "predicted",
            "realized", "precision");
    for (int i = 0; i < n; i++) {
        char prec[16] = "-", pred[16] = "-", real[16] = "-";
        if (v[i].precision >= 0)
            snprintf(prec, sizeof(prec), "%.0f%%", v[i].precision * 100);
        if (v[i].resolved)
            snprintf(pred, sizeof(pred), "%.1f%%", v[i].mean_predicted * 100);
        if (v[i].resolved_timed)
            snprintf(real, sizeof(real), "%.1f%%", v[i].mean_realized * 100);
        fprintf(out, "%-22s %6d %8d %10s %10s %9s\n", v[i].tool, v[i].fired, v[i].resolved, pred,
                real, prec);
    }
    if (!n)
        fprintf(out, "(no findings stored in %s yet: run kopt profile on candidates first)\n",
                db_path);
    else
        fprintf(out, "\nresolved: a later candidate of the same problem no longer shows the "
                "finding; realized gain = 1 - later median / earlier median; precision = "
                "resolutions with a realized gain > 0 / resolutions with a realized gain.\n");
done:
    free(v);
    return rc;
}
