/*
 * The worker's "profile" op: set up the job's first phase as "run" does, generate its
 * inputs from the phase's first trial seed, run the candidate once to warm up, then for
 * each requested metric set bracket one more run with CUPTI's range profiler (one range per
 * kernel launch) and report every kernel's metrics, the set's replay passes and its
 * collection wall time. Job fields (beside those of "run"):
 *   "profile": {"sets": [{"name": "roofline"} | {"name": "rules"} |
 *                        {"name": "custom", "metrics": ["ncu.name", ...]}],
 *               "warmup": true}
 * With no sets (the job runs under ncu) the candidate just runs once after the warm-up, or
 * once alone with "warmup": false. Result: "profile": {"sets": [{"name", "passes",
 * "collect_ms", "kernels": [{"name", "grid", "block", "smem", "metrics": {name: value}}]}]}.
 * kopt's own kernels (input generation, memset steps: "kopt_*") are left out. A CUPTI
 * failure (no permission to read counters, another profiler attached) is an error event of
 * kind "profile" carrying CUPTI's message.
 */
#include "worker_priv.h"
#include "../profile/cupti_int.h"
#include "eval_int.h"

#include <stdlib.h>
#include <string.h>

#define MAX_CUSTOM_METRICS 256

/* The metric names of one set; *owned (free()) holds a custom list's array. */
static const char *const *set_metrics(json_t *set, const char ***owned)
{
    const char *name = json_string_value(json_object_get(set, "name"));
    json_t *list = json_object_get(set, "metrics"), *v;
    size_t i, n = json_array_size(list);
    const char **m;

    *owned = NULL;
    if (name && strcmp(name, "roofline") == 0)
        return kopt_metrics_roofline;
    if (name && strcmp(name, "rules") == 0)
        return kopt_metrics_rules;
    if (!n || n > MAX_CUSTOM_METRICS || !(m = calloc(n + 1, sizeof(*m))))
        return NULL;
    json_array_foreach(list, i, v)
        m[i] = json_string_value(v) ? json_string_value(v) : "";
    *owned = m;
    return m;
}

/* The candidate's own kernels of one set as JSON, with launch dims from the plan (device
 * mode: the n-th non-kopt range is the n-th kernel launch of the plan). */
static json_t *kernels_json(worker *w, const kopt_profile *p)
{
    json_t *arr = json_array();
    int li = 0;

    for (int k = 0; k < p->nkernels; k++) {
        const kopt_kernel_profile *kp = &p->kernels[k];
        json_t *ms = json_object(), *kj;
        const wlaunch *l = NULL;
        if (strncmp(kp->kernel, "kopt_", 5) == 0)
            continue;
        while (!w->host_run && li < w->nlaunches && w->launches[li].is_memset)
            li++;
        if (!w->host_run && li < w->nlaunches)
            l = &w->launches[li++];
        for (int i = 0; i < kp->metrics.n; i++)
            json_object_set_new(ms, kp->metrics.m[i].name, json_real(kp->metrics.m[i].value));
        kj = json_pack("{s:s, s:o}", "name", kp->kernel, "metrics", ms);
        if (l) {
            json_object_set_new(kj, "plan_name", json_string(l->name));
            json_object_set_new(kj, "grid", json_pack("[i,i,i]", (int)l->grid[0],
                                (int)l->grid[1], (int)l->grid[2]));
            json_object_set_new(kj, "block", json_pack("[i,i,i]", (int)l->block[0],
                                (int)l->block[1], (int)l->block[2]));
            json_object_set_new(kj, "smem", json_integer((json_int_t)l->smem));
        }
        json_array_append_new(arr, kj);
    }
    return arr;
}

/* One more bracket of the set on the open profiler, inputs restored first; *ms gets its
 * begin-to-end wall time. */
static kopt_status one_bracket(worker *w, kopt__cupti_rp *rp, double *ms)
{
    kopt_profile *scratch = calloc(1, sizeof(*scratch));
    double t0;
    kopt_status rc;

    if (!scratch)
        return kopt_seterr(w->ctx, KOPT_E_NOMEM, "profile");
    if ((rc = wk_restore(w)) != KOPT_OK)
        goto done;
    {
        CUresult r = w->cu->cuStreamSynchronize(w->stream);
        if (r != CUDA_SUCCESS) {
            rc = wk_cufail(w, r, "restore inputs");
            goto done;
        }
    }
    t0 = kopt_now_ms();
    if ((rc = kopt__cupti_rp_begin(rp, w->ctx)) != KOPT_OK || (rc = wk_run_once(w)) != KOPT_OK ||
        (rc = kopt__cupti_rp_end(rp, w->ctx, scratch)) != KOPT_OK)
        goto done;
    *ms = kopt_now_ms() - t0;
done:
    kopt_profile_free(scratch);
    return rc;
}

/* `n` more brackets of the same set: "repeat_ms" gets their median wall time, the cost of
 * the set once the profiler is set up. */
static kopt_status repeat_brackets(worker *w, kopt__cupti_rp *rp, int n, json_t *out)
{
    double *ms = calloc((size_t)n, sizeof(double));
    kopt_timing t;
    kopt_status rc = KOPT_OK;

    if (!ms)
        return kopt_seterr(w->ctx, KOPT_E_NOMEM, "profile");
    for (int i = 0; i < n && rc == KOPT_OK; i++)
        rc = one_bracket(w, rp, &ms[i]);
    if (rc == KOPT_OK) {
        kopt__timing_from_samples(ms, n, 0, &t);
        json_object_set_new(out, "repeat_ms", json_real(t.median_ms));
    }
    free(ms);
    return rc;
}

/* One metric set: open the range profiler, bracket one run, decode, close. */
static kopt_status profile_set(worker *w, json_t *set, json_t *out, int repeat)
{
    const char **owned = NULL;
    const char *const *metrics = set_metrics(set, &owned);
    const char *name = json_string_value(json_object_get(set, "name"));
    kopt__cupti_rp *rp = NULL;
    kopt_profile *p = calloc(1, sizeof(*p));
    int passes = 0, max_launches = w->host_run ? 256 : w->nlaunches + 8;
    double t0 = kopt_now_ms(), t_open, t_begin;
    kopt_status rc;

    if (!p) {
        free(owned);
        return kopt_seterr(w->ctx, KOPT_E_NOMEM, "profile");
    }
    if (!metrics) {
        w->fail_kind = "harness";
        rc = kopt_seterr(w->ctx, KOPT_E_INVALID, "profile set \"%s\": no metrics (1 to %d "
                         "names)", name ? name : "?", MAX_CUSTOM_METRICS);
        goto cleanup;
    }
    if ((rc = wk_restore(w)) != KOPT_OK)
        goto cleanup;
    CU(cuStreamSynchronize(w->stream), "restore inputs");
    if ((rc = kopt__cupti_rp_open(&rp, w->ctx, (void *)w->pctx, (int)w->dev, metrics,
                                  max_launches, &passes)) != KOPT_OK) {
        w->fail_kind = "profile";
        goto cleanup;
    }
    t_open = kopt_now_ms() - t0;
    t_begin = kopt_now_ms();
    if ((rc = kopt__cupti_rp_begin(rp, w->ctx)) != KOPT_OK) {
        w->fail_kind = "profile";
        goto cleanup;
    }
    t_begin = kopt_now_ms() - t_begin;
    if ((rc = wk_run_once(w)) != KOPT_OK)
        goto cleanup;
    if ((rc = kopt__cupti_rp_end(rp, w->ctx, p)) != KOPT_OK) {
        if (!w->fail_kind)
            w->fail_kind = "profile";
        goto cleanup;
    }
    json_object_set_new(out, "name", json_string(name ? name : "custom"));
    json_object_set_new(out, "passes", json_integer(p->passes ? p->passes : passes));
    json_object_set_new(out, "collect_ms", json_real(p->collect_ms));
    json_object_set_new(out, "setup_ms", json_real(t_open));
    {
        double st[4];
        kopt__cupti_rp_steps(rp, st);
        json_object_set_new(out, "steps_ms", json_pack("{s:f, s:f, s:f, s:f, s:f}", "begin",
                            t_begin, "launches_and_sync", st[0], "stop", st[1], "decode", st[2],
                            "evaluate", st[3]));
    }
    json_object_set_new(out, "kernels", kernels_json(w, p));
    /* after the first bracket's steps are recorded: the later brackets overwrite them */
    if (repeat > 1 && (rc = repeat_brackets(w, rp, repeat - 1, out)) != KOPT_OK)
        goto cleanup;
cleanup:
    kopt__cupti_rp_close(rp);
    kopt_profile_free(p);
    free(owned);
    return rc;
}

kopt_status wk_profile(worker *w, json_t *job, json_t *result)
{
    json_t *ph = json_array_get(json_object_get(job, "phases"), 0);
    json_t *trial = json_array_get(json_object_get(ph, "trials"), 0);
    json_t *spec = json_object_get(job, "profile"), *sets = json_object_get(spec, "sets"), *s;
    json_t *out = json_object(), *sets_out = json_array(), *kernels = json_array();
    int warmup = !json_is_false(json_object_get(spec, "warmup"));
    size_t i;
    kopt_status rc;

    json_object_set_new(out, "sets", sets_out);
    json_object_set_new(result, "profile", out);
    json_object_set_new(result, "kernels", kernels);
    if (!ph) {
        w->fail_kind = "harness";
        return kopt_seterr(w->ctx, KOPT_E_INVALID, "profile job without a phase");
    }
    if ((rc = wk_setup_phase(w, ph, kernels)) != KOPT_OK)
        return rc;
    wk_progress(w, 0, "setup");
    if ((rc = wk_prepare_inputs(w, (uint64_t)json_integer_value(json_object_get(trial,
                                                                                "seed")))) !=
        KOPT_OK)
        goto done;
    if ((rc = wk_run_once(w)) != KOPT_OK)
        goto done;
    CU(cuCtxSynchronize(), warmup ? "warm-up run" : "run");
    wk_progress(w, 0, warmup ? "warm-up" : "run");
    if (warmup && json_array_size(sets) == 0) {   /* under ncu: the profiled run */
        if ((rc = wk_restore(w)) != KOPT_OK || (rc = wk_run_once(w)) != KOPT_OK)
            goto done;
        CU(cuCtxSynchronize(), "run");
        wk_progress(w, 0, "run");
    }
    json_array_foreach(sets, i, s) {
        json_t *so = json_object();
        json_array_append_new(sets_out, so);
        if ((rc = profile_set(w, s, so, (int)json_integer_value(json_object_get(spec,
                                                                                "repeat")))) !=
            KOPT_OK)
            goto done;
        wk_progress(w, 0, json_string_value(json_object_get(so, "name")));
    }
done:
    wk_free_phase(w);
    return rc;
}
