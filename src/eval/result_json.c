/* An evaluation result as JSON: the CLI's --json output and the copy kept in the store. */
#include "eval_int.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>

static const char *cc_major_str(int v)
{
    static const char *digits[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
                                   "11", "12"};
    return v >= 0 && v <= 12 ? digits[v] : "?";
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *timing_json(const kopt_timing *t)
{
    if (!t->n)
        return json_null();
    return json_pack("{s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "reps", t->n,
                     "warmup_runs", t->warmup_runs, "median_ms", num(t->median_ms), "mean_ms",
                     num(t->mean_ms), "min_ms", num(t->min_ms), "max_ms", num(t->max_ms),
                     "p10_ms", num(t->p10_ms), "p90_ms", num(t->p90_ms), "raw_median_ms",
                     num(t->raw_median_ms), "event_overhead_ms", num(t->overhead_ms));
}

static json_t *roofline_json(const kopt_roofline *r)
{
    if (!r->valid)
        return json_null();
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:s}", "flops", num(r->flops), "bytes",
                     num(r->bytes), "achieved_gbs", num(r->achieved_gbs), "achieved_gflops",
                     num(r->achieved_gflops), "bound_ms", num(r->bound_ms), "pct_of_bound",
                     num(r->pct_of_bound), "limiter", r->limiter, "compute_ceiling",
                     r->compute_source);
}

static json_t *vars_json(const kopt_vars *v)
{
    json_t *o = json_object();
    for (int i = 0; i < v->n; i++)
        json_object_set_new(o, v->names[i], json_integer(v->values[i]));
    return o;
}

static json_t *setup_json(const kopt_worker_setup *s)
{
    if (s->total_ms <= 0)
        return json_null();
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "exec", num(s->exec_ms),
                     "context", num(s->context_ms), "module", num(s->module_ms), "curand",
                     num(s->curand_ms), "buffers", num(s->buffers_ms), "pin", num(s->pin_ms),
                     "candidate", num(s->candidate_ms), "total", num(s->total_ms));
}

char *kopt_eval_result_json(const kopt_eval_result *r)
{
    json_t *root = json_object(), *checks = json_array(), *kernels = json_array();
    char *text;

    json_object_set_new(root, "verdict", json_string(kopt_verdict_name(r->verdict)));
    json_object_set_new(root, "message", json_string(r->message));
    json_object_set_new(root, "reference_only", json_boolean(r->is_reference));
    json_object_set_new(root, "problem_hash", json_string(r->problem_hash));
    json_object_set_new(root, "candidate_hash", json_string(r->candidate_hash));
    json_object_set_new(root, "arch", json_string(r->arch));
    json_object_set_new(root, "seed", json_integer((json_int_t)r->seed));
    json_object_set_new(root, "sizes", vars_json(&r->sizes));
    json_object_set_new(root, "check_sizes", r->check_sizes.n ? vars_json(&r->check_sizes)
                                                              : json_null());
    if (r->has_device && r->device.name[0])
        json_object_set_new(root, "device", json_pack("{s:s, s:s, s:s++, s:i, s:i, s:i}", "name",
                            r->device.name, "uuid", r->device.uuid, "cc",
                            cc_major_str(r->device.cc_major), ".",
                            cc_major_str(r->device.cc_minor), "sm_count", r->device.sm_count,
                            "l2_bytes", r->device.l2_bytes, "clock_khz", r->device.clock_khz));
    else
        json_object_set_new(root, "device", json_null());
    if (r->ceilings.valid)
        json_object_set_new(root, "ceilings", json_pack("{s:o, s:o, s:o, s:o, s:b, s:s}",
                            "dram_copy_gbs", num(r->ceilings.dram_copy_gbs), "dram_read_gbs",
                            num(r->ceilings.dram_read_gbs), "dram_write_gbs",
                            num(r->ceilings.dram_write_gbs), "fp32_gflops",
                            num(r->ceilings.gflops[0]), "fp32_measured", r->ceilings.measured[0],
                            "measured_at", r->ceilings.measured_at));
    for (int i = 0; i < r->nchecks; i++) {
        const kopt_check *c = &r->checks[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:o, s:f, s:f}", "tensor",
                              c->tensor, "sizes", c->sizes_label, "run", c->run, "seed",
                              (json_int_t)c->seed, "elements", (json_int_t)c->count,
                              "mismatches", (json_int_t)c->mismatches, "max_abs_err",
                              num(c->max_abs_err), "max_rel_err", num(c->max_rel_err), "atol",
                              c->atol, "rtol", c->rtol);
        if (c->first_index >= 0) {
            json_t *coord = json_array();
            for (int d = 0; d < c->ndim; d++)
                json_array_append_new(coord, json_integer(c->first_coord[d]));
            json_object_set_new(o, "first_mismatch", json_pack("{s:I, s:o, s:o, s:o}", "index",
                                (json_int_t)c->first_index, "coord", coord, "got",
                                num(c->first_got), "expected", num(c->first_want)));
        }
        json_array_append_new(checks, o);
    }
    json_object_set_new(root, "checks", checks);
    for (int i = 0; i < r->nkernels; i++) {
        const kopt_kernel_resources *k = &r->kernels[i];
        json_array_append_new(kernels, json_pack("{s:s, s:i, s:i, s:i, s:i, s:i}", "name",
                              k->name, "registers", k->registers, "static_smem", k->static_smem,
                              "stack_frame", k->stack_frame, "spill_stores", k->spill_stores,
                              "spill_loads", k->spill_loads));
    }
    json_object_set_new(root, "kernels", kernels);
    json_object_set_new(root, "timing", timing_json(&r->timing));
    json_object_set_new(root, "reference_timing", timing_json(&r->ref_timing));
    json_object_set_new(root, "speedup", r->speedup > 0 ? num(r->speedup) : json_null());
    json_object_set_new(root, "reference_reused", json_boolean(r->ref_reused));
    json_object_set_new(root, "worker_ahead", json_boolean(r->worker_ahead));
    json_object_set_new(root, "worker_forked", json_boolean(r->worker_forked));
    json_object_set_new(root, "reference_served", json_boolean(r->ref_served));
    if (r->torch_ref)
        json_object_set_new(root, "pytorch", json_pack("{s:o, s:o, s:o, s:o, s:o, s:s}",
                            "eager_ms", r->ref_timing.n ? num(r->ref_timing.median_ms)
                                                        : json_null(),
                            "compile_ms", r->has_compile ? num(r->compile_timing.median_ms)
                                                         : json_null(),
                            "speedup_eager", r->speedup > 0 ? num(r->speedup) : json_null(),
                            "speedup_compile", r->compile_speedup > 0 ? num(r->compile_speedup)
                                                                      : json_null(),
                            "compile_timing", timing_json(&r->compile_timing),
                            "compile_note", r->compile_note));
    if (r->torch_ref) {         /* where the compile baseline came from; the faster of the two */
        json_t *pt = json_object_get(root, "pytorch");
        const kopt_torch_baseline *b = &r->compile_baseline;
        json_object_set_new(pt, "compile_cached", json_boolean(r->compile_cached));
        json_object_set_new(pt, "compile_measured_at", r->has_compile && b->measured_at[0]
                            ? json_string(b->measured_at) : json_null());
        json_object_set_new(pt, "torch_version", b->torch_version[0]
                            ? json_string(b->torch_version) : json_null());
        json_object_set_new(pt, "baseline_ms", r->baseline_ms > 0 ? num(r->baseline_ms)
                                                                  : json_null());
        json_object_set_new(pt, "baseline", r->baseline_ms > 0
                            ? json_string(r->baseline_is_compile ? "compile" : "eager")
                            : json_null());
        json_object_set_new(pt, "speedup_best", r->speedup_best > 0 ? num(r->speedup_best)
                                                                    : json_null());
    }
    if (r->torch_ref) {
        static const char *const who[3] = {"candidate", "eager", "compile"};
        json_t *br = json_object();
        for (int i = 0; i < 3; i++)
            if (r->bracket[i].timed)
                json_object_set_new(br, who[i], json_pack("{s:o, s:o, s:i}", "issue_ms",
                                    num(r->bracket[i].issue_ms), "hold_ms",
                                    num(r->bracket[i].hold_ms), "exposed_runs",
                                    r->bracket[i].exposed_runs));
        json_object_set_new(json_object_get(root, "pytorch"), "brackets", br);
        json_object_set_new(json_object_get(root, "pytorch"), "timer",
                            r->timer[0] ? json_string(r->timer) : json_null());
    }
    if (r->census > 0)          /* the candidate's checked call, counted by CUPTI */
        json_object_set_new(root, "census", json_pack("{s:i, s:i, s:b, s:s, s:o, s:o}",
                            "kernels_launched", r->kernels_launched, "own_kernels",
                            r->own_kernels, "launched_none", r->kernels_launched == 0,
                            "own_kernel_names", r->own_kernel_names, "lowest_precision",
                            r->precision[0] ? json_string(r->precision) : json_null(),
                            "own_sass_precision", r->own_precision[0]
                            ? json_string(r->own_precision) : json_null()));
    else if (r->census < 0)
        json_object_set_new(root, "census", json_pack("{s:n, s:s}", "kernels_launched",
                                                      "note", r->census_note));
    if (r->has_energy)
        json_object_set_new(root, "energy", json_pack("{s:o, s:o, s:i, s:o}", "mj_per_run",
                            num(r->energy_mj), "power_w", num(r->power_w), "runs",
                            r->energy_runs, "window_s", num(r->energy_window_s)));
    json_object_set_new(root, "roofline", roofline_json(&r->roofline));
    json_object_set_new(root, "reference_roofline", roofline_json(&r->ref_roofline));
    if (r->fast_roofline.valid) {
        json_t *f = roofline_json(&r->fast_roofline);
        json_object_set_new(f, "compute", json_string(kopt_compute_name(r->fast_compute)));
        json_object_set_new(root, "fast_roofline", f);
    }
    json_object_set_new(root, "wall_ms", json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                        "compile", num(r->compile_ms), "verify", num(r->verify_ms), "time",
                        num(r->time_ms), "total", num(r->total_ms), "reference_worker_setup",
                        num(r->ref_setup_ms), "candidate_worker_setup",
                        num(r->cand_setup_ms), "compare", num(r->compare_ms),
                        "reference_setup_steps", setup_json(&r->ref_setup),
                        "candidate_setup_steps", setup_json(&r->cand_setup)));
    json_object_set_new(root, "trace", r->trace ? json_loads(r->trace, 0, NULL) : json_null());
    json_object_set_new(root, "compile_cache_hit", json_boolean(r->compile_cache_hit));
    json_object_set_new(root, "compile_log", r->compile_log ? json_string(r->compile_log)
                                                            : json_null());
    json_object_set_new(root, "worker_log", r->worker_log ? json_string(r->worker_log)
                                                          : json_null());
    json_object_set_new(root, "sandbox", r->sandbox[0] ? json_loads(r->sandbox, 0, NULL)
                                                        : json_null());
    if (r->ngpu_kernels) {
        json_t *ks = json_array();
        for (int i = 0; i < r->ngpu_kernels; i++)
            json_array_append_new(ks, json_string(r->gpu_kernels[i]));
        json_object_set_new(root, "gpu_kernels", ks);
    }
    if (r->nsanitizer) {
        json_t *ss = json_array();
        for (int i = 0; i < r->nsanitizer; i++)
            json_array_append_new(ss, json_pack("{s:s, s:b, s:i, s:s}", "tool",
                                  r->sanitizer[i].tool, "ran", r->sanitizer[i].ran, "errors",
                                  r->sanitizer[i].errors, "findings", r->sanitizer[i].summary));
        json_object_set_new(root, "sanitizer", ss);
    }
    text = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    return text;
}
