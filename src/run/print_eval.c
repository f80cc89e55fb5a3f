/* An evaluation as kopt eval prints it, as text or JSON (and for any other caller of the run
 * API): the problem, device and sizes, the compile and each kernel's resources, the checks,
 * energy, the sandbox and the kernels that ran, the sanitizers, the times, speedups and
 * baselines, the roofline with the ceilings, the wall time, and the verdict; and the kopt
 * serve session it ran in, when it did. */
#include "run_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_vars(FILE *f, const kopt_vars *v)
{
    for (int i = 0; i < v->n; i++)
        fprintf(f, "%s%s=%lld", i ? " " : "", v->names[i], (long long)v->values[i]);
}

static void print_timing(FILE *f, const char *label, const kopt_timing *t)
{
    fprintf(f, "%-10s median %.4f ms  (min %.4f, p10 %.4f, p90 %.4f; %d reps after %d warm-up; "
            "event overhead %.4f ms removed)\n", label, t->median_ms, t->min_ms, t->p10_ms,
            t->p90_ms, t->n, t->warmup_runs, t->overhead_ms);
}

static void print_text(FILE *f, const kopt_problem *p, const char *cand_path,
                       const kopt_eval_result *r, const char *session_line)
{
    fprintf(f, "problem    %s (%s)\n", p->name, p->path);
    fprintf(f, "candidate  %s\n", cand_path ? cand_path : "(the reference)");
    if (r->has_device && r->device.name[0])
        fprintf(f, "device     %s, %s, %d SMs\n", r->device.name, r->arch, r->device.sm_count);
    else
        fprintf(f, "device     none (compiled for %s)\n", r->arch);
    fprintf(f, "sizes      ");
    print_vars(f, &r->sizes);
    if (r->check_sizes.n) {
        fprintf(f, "; check: ");
        print_vars(f, &r->check_sizes);
    }
    fprintf(f, "\n");
    if (r->verdict != KOPT_VERDICT_COMPILE_ERROR) {
        fprintf(f, "compile    %s (%.0f ms)\n", r->compile_cache_hit ? "cached" : "compiled",
                r->compile_ms);
        for (int i = 0; i < r->nkernels; i++) {
            const kopt_kernel_resources *k = &r->kernels[i];
            fprintf(f, "  kernel   %s: %d registers, %d B static smem, %d B stack%s", k->name,
                    k->registers, k->static_smem, k->stack_frame,
                    k->spill_stores || k->spill_loads ? "" : ", no spills\n");
            if (k->spill_stores || k->spill_loads)
                fprintf(f, ", SPILLS %d B stored / %d B loaded\n", k->spill_stores, k->spill_loads);
        }
    } else if (r->compile_log) {
        fprintf(f, "compile    FAILED\n%s", r->compile_log);
    }
    if (r->nchecks) {
        int failing = 0;
        for (int i = 0; i < r->nchecks; i++)
            failing += r->checks[i].mismatches > 0;
        fprintf(f, "verify     %d checks (seed %llu), %d failing\n", r->nchecks,
                (unsigned long long)r->seed, failing);
        if (!failing) {   /* one line says enough */
            double worst_abs = 0, worst_rel = 0;
            for (int i = 0; i < r->nchecks; i++) {
                worst_abs = fmax(worst_abs, r->checks[i].max_abs_err);
                worst_rel = fmax(worst_rel, r->checks[i].max_rel_err);
            }
            fprintf(f, "  all pass max abs err %.3g, max rel err %.3g (atol %g, rtol %g)\n",
                    worst_abs, worst_rel, r->checks[0].atol, r->checks[0].rtol);
        }
        for (int i = 0; i < r->nchecks; i++) {
            const kopt_check *c = &r->checks[i];
            if (!c->mismatches)
                continue;
            fprintf(f, "  FAIL     %s at %s sizes, %s: %lld/%lld wrong; first at [", c->tensor,
                    c->sizes_label, c->run, (long long)c->mismatches, (long long)c->count);
            for (int d = 0; d < c->ndim; d++)
                fprintf(f, "%s%lld", d ? "," : "", (long long)c->first_coord[d]);
            fprintf(f, "] got %.9g expected %.9g\n", c->first_got, c->first_want);
        }
    }
    if (r->has_energy)
        fprintf(f, "energy     %.4g mJ per run at %.1f W (%d back-to-back runs, %.2f s window)\n",
                r->energy_mj, r->power_w, r->energy_runs, r->energy_window_s);
    if (r->sandbox[0])
        fprintf(f, "sandbox    %s\n", r->sandbox);
    if (r->census > 0)
        fprintf(f, "kernels    %d launched in the checked call, %d of its own%s%s%s%s%s\n",
                r->kernels_launched, r->own_kernels, r->own_kernels ? " (" : "",
                r->own_kernels ? r->own_kernel_names : "", r->own_kernels ? ")" : "",
                r->precision[0] ? "; a library kernel ran at " : "", r->precision);
    else if (r->census < 0)
        fprintf(f, "kernels    not counted: %s\n", r->census_note);
    if (r->own_precision[0])
        fprintf(f, "precision  its own SASS computes or rounds values at %s (tensor-core, "
                "packed-half or narrowing conversion instructions)\n", r->own_precision);
    if (r->ngpu_kernels) {
        fprintf(f, "ran        ");
        for (int i = 0; i < r->ngpu_kernels; i++)
            fprintf(f, "%s%s", i ? ", " : "", r->gpu_kernels[i]);
        fprintf(f, "\n");
    }
    for (int i = 0; i < r->nsanitizer; i++) {
        const kopt_sanitizer_report *s = &r->sanitizer[i];
        if (!s->ran)
            fprintf(f, "sanitize   %s: not run: %s\n", s->tool, s->summary);
        else
            fprintf(f, "sanitize   %s: %d error(s)\n", s->tool, s->errors);
        if (s->ran && s->errors) {
            const char *line = s->summary;
            while (line && *line) {
                const char *eol = strchr(line, '\n');
                fprintf(f, "  %.*s\n", (int)(eol ? eol - line : (long)strlen(line)), line);
                line = eol ? eol + 1 : NULL;
            }
        }
    }
    if (r->timing.n && !r->is_reference)
        print_timing(f, "time", &r->timing);
    if (r->ref_timing.n)
        print_timing(f, "reference", &r->ref_timing);
    if (r->speedup > 0)
        fprintf(f, "speedup    %.2fx over the reference%s\n", r->speedup,
                r->torch_ref ? " (PyTorch eager)" : "");
    if (r->has_compile)
        print_timing(f, "compile", &r->compile_timing);
    if (r->compile_cached)
        fprintf(f, "compile    cached: measured %s with torch %s (eager %.4f ms then), not timed "
                "again\n", r->compile_baseline.measured_at, r->compile_baseline.torch_version,
                r->compile_baseline.eager_ms);
    if (r->compile_speedup > 0)
        fprintf(f, "speedup    %.2fx over torch.compile (default mode)\n", r->compile_speedup);
    if (r->compile_note[0])
        fprintf(f, "compile    %s\n", r->compile_note);
    if (r->baseline_ms > 0)
        fprintf(f, "baseline   %.4f ms: the faster of eager and torch.compile (%s)\n",
                r->baseline_ms, r->baseline_is_compile ? "torch.compile" : "eager");
    if (r->speedup_best > 0)
        fprintf(f, "speedup    %.2fx over the faster baseline (KernelBench v3's)\n",
                r->speedup_best);
    if (r->roofline.valid) {
        fprintf(f, "roofline   %.0f GB/s, %.1f GFLOP/s: %.1f%% of the %s-bound limit (%.4f ms)\n",
                r->roofline.achieved_gbs, r->roofline.achieved_gflops, r->roofline.pct_of_bound,
                r->roofline.limiter, r->roofline.bound_ms);
        fprintf(f, "ceilings   DRAM %.0f GB/s (copy %.0f, read %.0f, write %.0f; measured %s), "
                "%s %.0f GFLOP/s (%s)\n",
                fmax(r->ceilings.dram_copy_gbs, fmax(r->ceilings.dram_read_gbs,
                                                     r->ceilings.dram_write_gbs)),
                r->ceilings.dram_copy_gbs, r->ceilings.dram_read_gbs, r->ceilings.dram_write_gbs,
                r->ceilings.measured_at, kopt_compute_name(p->compute),
                r->ceilings.gflops[p->compute],
                r->roofline.compute_source);
    }
    fprintf(f, "wall       compile %.0f ms, verify %.0f ms, time %.0f ms, total %.0f ms\n",
            r->compile_ms, r->verify_ms, r->time_ms, r->total_ms);
    if (r->worker_log && r->worker_log[0] && r->verdict != KOPT_VERDICT_OK)
        fprintf(f, "worker log (tail):\n%s\n", r->worker_log);
    if (r->eval_id)
        fprintf(f, "stored     evaluation #%lld\n", (long long)r->eval_id);
    if (session_line)
        fprintf(f, "session    %s\n", session_line);
    fprintf(f, "verdict    %s: %s\n", kopt_verdict_name(r->verdict), r->message);
}

/* --json in a session: the evaluation's JSON with "session" {name, evaluations,
 * reference_reused}. */
static void print_session_json(FILE *f, const kopt_eval_result *r, const char *name, int k)
{
    char *text = kopt_eval_result_json(r);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;

    free(text);
    json_object_set_new(doc, "session", json_pack("{s:s, s:i, s:b}", "name", name,
                                                  "evaluations", k, "reference_reused",
                                                  r->ref_reused));
    kopt__run_print_text(f, doc ? json_dumps(doc, JSON_INDENT(2)) : NULL);
    json_decref(doc);
}

void kopt_run_eval_print(FILE *f, const kopt_problem *p, const char *cand_path,
                         const kopt_eval_result *r, const char *session, int evaluations,
                         int json)
{
    char line[256];

    if (json && session) {
        print_session_json(f, r, session, evaluations);
        return;
    }
    if (json) {
        kopt__run_print_text(f, kopt_eval_result_json(r));
        return;
    }
    if (session && r->ref_reused)      /* which session, and what it reused */
        snprintf(line, sizeof(line), "%s, evaluation %d: the reference's outputs and time from "
                 "its first run, seed %llu fixed for the session", session, evaluations,
                 (unsigned long long)r->seed);
    else if (session)
        snprintf(line, sizeof(line), "%s, evaluation %d: the reference ran, seed %llu fixed for "
                 "the session", session, evaluations, (unsigned long long)r->seed);
    print_text(f, p, cand_path, r, session ? line : NULL);
}
