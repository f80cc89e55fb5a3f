/* An evaluation result read back from the JSON kopt_eval_result_json wrote (an answer of
 * `kopt serve`, the store's copy): every field that JSON has, so that writing the result
 * again gives the same JSON. What it does not carry (the store's row id, the work counts,
 * the per-kernel thread limits) stays zero. */
#include "eval_int.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double dnum(const json_t *o, const char *k)   /* null: not finite when written */
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static double pos(const json_t *o, const char *k)    /* written only when > 0 */
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0;
}

static int inum(const json_t *o, const char *k)
{
    return (int)json_integer_value(json_object_get(o, k));
}

static void str(char *dst, size_t n, const json_t *o, const char *k)
{
    snprintf(dst, n, "%s", json_string_value(json_object_get(o, k)) ?: "");
}

static char *dup_or_null(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? strdup(s) : NULL;
}

static void timing(kopt_timing *t, const json_t *j)
{
    memset(t, 0, sizeof(*t));
    if (!json_is_object(j))
        return;
    t->n = inum(j, "reps");
    t->warmup_runs = inum(j, "warmup_runs");
    t->median_ms = dnum(j, "median_ms");
    t->mean_ms = dnum(j, "mean_ms");
    t->min_ms = dnum(j, "min_ms");
    t->max_ms = dnum(j, "max_ms");
    t->p10_ms = dnum(j, "p10_ms");
    t->p90_ms = dnum(j, "p90_ms");
    t->raw_median_ms = dnum(j, "raw_median_ms");
    t->overhead_ms = dnum(j, "event_overhead_ms");
}

static const char *literal(const char *s, const char *const *known)
{
    for (; s && *known; known++)
        if (strcmp(s, *known) == 0)
            return *known;
    return "";
}

static void roofline(kopt_roofline *r, const json_t *j)
{
    static const char *const limiters[] = {"memory", "compute", NULL};
    static const char *const sources[] = {"measured", "spec", NULL};

    memset(r, 0, sizeof(*r));
    if (!json_is_object(j))
        return;
    r->valid = 1;
    r->flops = dnum(j, "flops");
    r->bytes = dnum(j, "bytes");
    r->achieved_gbs = dnum(j, "achieved_gbs");
    r->achieved_gflops = dnum(j, "achieved_gflops");
    r->bound_ms = dnum(j, "bound_ms");
    r->pct_of_bound = dnum(j, "pct_of_bound");
    r->limiter = literal(json_string_value(json_object_get(j, "limiter")), limiters);
    r->compute_source = literal(json_string_value(json_object_get(j, "compute_ceiling")),
                                sources);
}

static void setup(kopt_worker_setup *s, const json_t *j)
{
    memset(s, 0, sizeof(*s));
    if (!json_is_object(j))
        return;
    s->exec_ms = dnum(j, "exec");
    s->context_ms = dnum(j, "context");
    s->module_ms = dnum(j, "module");
    s->curand_ms = dnum(j, "curand");
    s->buffers_ms = dnum(j, "buffers");
    s->pin_ms = dnum(j, "pin");
    s->candidate_ms = dnum(j, "candidate");
    s->total_ms = dnum(j, "total");
}

static int vars(kopt_vars *v, const json_t *j)
{
    const char *k;
    json_t *x;

    json_object_foreach((json_t *)j, k, x)
        if (kopt_vars_set(v, k, json_integer_value(x)) != KOPT_OK)
            return -1;
    return 0;
}

static char *dumped(const json_t *j)   /* an embedded object back to its compact text */
{
    return json_is_object(j) ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
}

static void device(kopt_eval_result *r, const json_t *d)
{
    const char *cc = json_string_value(json_object_get(d, "cc"));

    r->has_device = 1;
    str(r->device.name, sizeof(r->device.name), d, "name");
    str(r->device.uuid, sizeof(r->device.uuid), d, "uuid");
    if (cc && sscanf(cc, "%d.%d", &r->device.cc_major, &r->device.cc_minor) != 2)
        r->device.cc_major = r->device.cc_minor = 0;
    r->device.sm_count = inum(d, "sm_count");
    r->device.l2_bytes = inum(d, "l2_bytes");
    r->device.clock_khz = inum(d, "clock_khz");
}

static int checks(kopt_eval_result *r, const json_t *a)
{
    size_t i;
    json_t *c;

    r->checks = calloc(json_array_size(a) + 1, sizeof(*r->checks));
    if (!r->checks)
        return -1;
    json_array_foreach(a, i, c) {
        kopt_check *k = &r->checks[r->nchecks++];
        const json_t *m = json_object_get(c, "first_mismatch"), *coord;
        str(k->tensor, sizeof(k->tensor), c, "tensor");
        str(k->sizes_label, sizeof(k->sizes_label), c, "sizes");
        str(k->run, sizeof(k->run), c, "run");
        k->seed = (uint64_t)json_integer_value(json_object_get(c, "seed"));
        k->count = json_integer_value(json_object_get(c, "elements"));
        k->mismatches = json_integer_value(json_object_get(c, "mismatches"));
        k->max_abs_err = dnum(c, "max_abs_err");
        k->max_rel_err = dnum(c, "max_rel_err");
        k->atol = dnum(c, "atol");
        k->rtol = dnum(c, "rtol");
        k->first_index = -1;
        if (json_is_object(m)) {
            k->first_index = json_integer_value(json_object_get(m, "index"));
            coord = json_object_get(m, "coord");
            k->ndim = (int)json_array_size(coord) < KOPT_MAX_DIMS ? (int)json_array_size(coord)
                                                                 : KOPT_MAX_DIMS;
            for (int d = 0; d < k->ndim; d++)
                k->first_coord[d] = json_integer_value(json_array_get(coord, (size_t)d));
            k->first_got = dnum(m, "got");
            k->first_want = dnum(m, "expected");
        }
    }
    return 0;
}

static void pytorch(kopt_eval_result *r, const json_t *pt)
{
    static const char *const who[3] = {"candidate", "eager", "compile"};
    const json_t *br = json_object_get(pt, "brackets");

    r->torch_ref = 1;
    r->has_compile = json_is_number(json_object_get(pt, "compile_ms"));
    timing(&r->compile_timing, json_object_get(pt, "compile_timing"));
    r->compile_speedup = pos(pt, "speedup_compile");
    str(r->compile_note, sizeof(r->compile_note), pt, "compile_note");
    r->compile_cached = json_is_true(json_object_get(pt, "compile_cached"));
    str(r->compile_baseline.measured_at, sizeof(r->compile_baseline.measured_at), pt,
        "compile_measured_at");
    str(r->compile_baseline.torch_version, sizeof(r->compile_baseline.torch_version), pt,
        "torch_version");
    r->baseline_ms = pos(pt, "baseline_ms");
    r->baseline_is_compile = strcmp(json_string_value(json_object_get(pt, "baseline")) ?: "",
                                    "compile") == 0;
    r->speedup_best = pos(pt, "speedup_best");
    for (int i = 0; i < 3; i++) {
        const json_t *b = json_object_get(br, who[i]);
        if (!json_is_object(b))
            continue;
        r->bracket[i].timed = 1;
        r->bracket[i].issue_ms = dnum(b, "issue_ms");
        r->bracket[i].hold_ms = dnum(b, "hold_ms");
        r->bracket[i].exposed_runs = inum(b, "exposed_runs");
    }
    str(r->timer, sizeof(r->timer), pt, "timer");
}

static void census(kopt_eval_result *r, const json_t *c)
{
    if (!json_is_object(c))
        return;
    if (!json_is_integer(json_object_get(c, "kernels_launched"))) {
        r->census = -1;
        str(r->census_note, sizeof(r->census_note), c, "note");
        return;
    }
    r->census = 1;
    r->kernels_launched = inum(c, "kernels_launched");
    r->own_kernels = inum(c, "own_kernels");
    str(r->own_kernel_names, sizeof(r->own_kernel_names), c, "own_kernel_names");
    str(r->precision, sizeof(r->precision), c, "lowest_precision");
    str(r->own_precision, sizeof(r->own_precision), c, "own_sass_precision");
}

kopt_status kopt_eval_result_from_json(kopt_eval_result **out, kopt_ctx *ctx, const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text ? text : "", 0, &err), *v, *x;
    kopt_eval_result *r = calloc(1, sizeof(*r));
    const char *verdict = json_string_value(json_object_get(j, "verdict"));
    kopt_status rc = KOPT_OK;
    size_t i;
    int known = 0;

    *out = NULL;
    if (!r || !j) {
        free(r);
        json_decref(j);
        return j ? kopt_seterr(ctx, KOPT_E_NOMEM, "result")
                 : kopt_seterr(ctx, KOPT_E_INVALID, "evaluation result: line %d: %s", err.line,
                               err.text);
    }
    for (int k = 0; verdict && k < KOPT_VERDICT_COUNT; k++)
        if (strcmp(kopt_verdict_name((kopt_verdict)k), verdict) == 0) {
            r->verdict = (kopt_verdict)k;
            known = 1;
        }
    if (!known) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "evaluation result: verdict %s%s%s",
                         verdict ? "\"" : "", verdict ? verdict : "missing", verdict ? "\" unknown" : "");
        goto done;
    }
    str(r->message, sizeof(r->message), j, "message");
    r->is_reference = json_is_true(json_object_get(j, "reference_only"));
    str(r->problem_hash, sizeof(r->problem_hash), j, "problem_hash");
    str(r->candidate_hash, sizeof(r->candidate_hash), j, "candidate_hash");
    str(r->arch, sizeof(r->arch), j, "arch");
    r->seed = (uint64_t)json_integer_value(json_object_get(j, "seed"));
    if (vars(&r->sizes, json_object_get(j, "sizes")) != 0 ||
        vars(&r->check_sizes, json_object_get(j, "check_sizes")) != 0 ||
        checks(r, json_object_get(j, "checks")) != 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "result");
        goto done;
    }
    if (json_is_object(v = json_object_get(j, "device")))
        device(r, v);
    if (json_is_object(v = json_object_get(j, "ceilings"))) {
        r->ceilings.valid = 1;
        r->ceilings.dram_copy_gbs = dnum(v, "dram_copy_gbs");
        r->ceilings.dram_read_gbs = dnum(v, "dram_read_gbs");
        r->ceilings.dram_write_gbs = dnum(v, "dram_write_gbs");
        r->ceilings.gflops[0] = dnum(v, "fp32_gflops");
        r->ceilings.measured[0] = json_is_true(json_object_get(v, "fp32_measured"));
        str(r->ceilings.measured_at, sizeof(r->ceilings.measured_at), v, "measured_at");
    }
    v = json_object_get(j, "kernels");
    r->kernels = calloc(json_array_size(v) + 1, sizeof(*r->kernels));
    json_array_foreach(v, i, x) {
        kopt_kernel_resources *k = &r->kernels[r->nkernels++];
        str(k->name, sizeof(k->name), x, "name");
        k->registers = inum(x, "registers");
        k->static_smem = inum(x, "static_smem");
        k->stack_frame = inum(x, "stack_frame");
        k->spill_stores = inum(x, "spill_stores");
        k->spill_loads = inum(x, "spill_loads");
    }
    timing(&r->timing, json_object_get(j, "timing"));
    timing(&r->ref_timing, json_object_get(j, "reference_timing"));
    r->speedup = pos(j, "speedup");
    r->ref_reused = json_is_true(json_object_get(j, "reference_reused"));
    r->worker_ahead = json_is_true(json_object_get(j, "worker_ahead"));
    r->worker_forked = json_is_true(json_object_get(j, "worker_forked"));
    r->ref_served = json_is_true(json_object_get(j, "reference_served"));
    if (json_is_object(v = json_object_get(j, "pytorch")))
        pytorch(r, v);
    census(r, json_object_get(j, "census"));
    if (json_is_object(v = json_object_get(j, "energy"))) {
        r->has_energy = 1;
        r->energy_mj = dnum(v, "mj_per_run");
        r->power_w = dnum(v, "power_w");
        r->energy_runs = inum(v, "runs");
        r->energy_window_s = dnum(v, "window_s");
    }
    roofline(&r->roofline, json_object_get(j, "roofline"));
    roofline(&r->ref_roofline, json_object_get(j, "reference_roofline"));
    roofline(&r->fast_roofline, json_object_get(j, "fast_roofline"));
    for (int c = 0; r->fast_roofline.valid && c < KOPT_NCOMPUTE; c++)
        if (strcmp(kopt_compute_name((kopt_compute)c), json_string_value(json_object_get(
                json_object_get(j, "fast_roofline"), "compute")) ?: "") == 0)
            r->fast_compute = c;
    v = json_object_get(j, "wall_ms");
    r->compile_ms = dnum(v, "compile");
    r->verify_ms = dnum(v, "verify");
    r->time_ms = dnum(v, "time");
    r->total_ms = dnum(v, "total");
    r->ref_setup_ms = dnum(v, "reference_worker_setup");
    r->cand_setup_ms = dnum(v, "candidate_worker_setup");
    r->compare_ms = dnum(v, "compare");
    setup(&r->ref_setup, json_object_get(v, "reference_setup_steps"));
    setup(&r->cand_setup, json_object_get(v, "candidate_setup_steps"));
    r->trace = dumped(json_object_get(j, "trace"));
    r->compile_cache_hit = json_is_true(json_object_get(j, "compile_cache_hit"));
    r->compile_log = dup_or_null(j, "compile_log");
    r->worker_log = dup_or_null(j, "worker_log");
    {
        char *sb = dumped(json_object_get(j, "sandbox"));
        snprintf(r->sandbox, sizeof(r->sandbox), "%s", sb ? sb : "");
        free(sb);
    }
    json_array_foreach(json_object_get(j, "gpu_kernels"), i, x)
        if (r->ngpu_kernels < (int)(sizeof(r->gpu_kernels) / sizeof(r->gpu_kernels[0])))
            snprintf(r->gpu_kernels[r->ngpu_kernels++], sizeof(r->gpu_kernels[0]), "%s",
                     json_string_value(x) ?: "");
    json_array_foreach(json_object_get(j, "sanitizer"), i, x)
        if (r->nsanitizer < (int)(sizeof(r->sanitizer) / sizeof(r->sanitizer[0]))) {
            kopt_sanitizer_report *s = &r->sanitizer[r->nsanitizer++];
            str(s->tool, sizeof(s->tool), x, "tool");
            s->ran = json_is_true(json_object_get(x, "ran"));
            s->errors = inum(x, "errors");
            str(s->summary, sizeof(s->summary), x, "findings");
        }
done:
    json_decref(j);
    if (rc != KOPT_OK) {
        kopt_eval_result_free(r);
        return rc;
    }
    *out = r;
    return KOPT_OK;
}
