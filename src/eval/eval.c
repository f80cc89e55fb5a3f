/*
 * src/eval: evaluation. A candidate and the problem's reference are compiled, bound at
 * every size set, run in separate worker processes on the same seeded inputs, compared
 * output by output, timed and placed on the roofline, and given a verdict. Nothing is
 * stored here: the run API (src/run) stores results and the device's ceilings. Map of the
 * folder (docs/internals/eval.md):
 *   the parent, in the calling process (which holds no CUDA context):
 *     eval.c         the entry points (kopt_eval_run, kopt_eval_torch_program) and the
 *                    CUDA path (device code and host-mode .cu against a CUDA reference)
 *     plan.c         plan and bind: the phases, the output layout, the workers' jobs
 *     torch_eval.c   the PyTorch path (a problem with a PyTorch reference) and
 *                    torch_*.c its pieces (baseline, checks, clock, sandbox, stream)
 *     verify.c       verify and time: outputs against the reference's, timings from runs
 *     verdicts.c     the verdicts (failed workers, WRONG, SUSPECT); guards.c the guards
 *                    beside them (forbidden libraries, compute-sanitizer)
 *     session.c      sessions (many candidates, one problem); pool.c the worker pool
 *     spawn.c, zygote.c, pin.c, sandbox.c, file_guard.c, nvml.c, device.c, result_*.c
 *                    workers' processes (each on its GPU), the sandbox, file guards, the
 *                    device, results as JSON
 *   the worker process (worker_*.c, worker_priv.h): see worker.c.
 *
 * This file: kopt_eval_run and kopt_eval_session_run (session.c) enter kopt__eval_core,
 * which hands a problem with a PyTorch reference to kopt__eval_torch (torch_eval.c) and
 * runs every other one here: sizes, device, compile, bind (plan.c), the workers, the
 * integrity checks and the comparison (verify.c), the verdict (verdicts.c, guards.c).
 */
#include "eval_int.h"
#include "worker_int.h"
#include "sandbox_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kopt_eval_result_free(kopt_eval_result *r)
{
    if (!r)
        return;
    free(r->compile_log);
    free(r->worker_log);
    free(r->program);
    free(r->trace);
    kopt_vars_free(&r->sizes);
    kopt_vars_free(&r->check_sizes);
    free(r->checks);
    free(r->kernels);
    free(r);
}

/* A worker kopt_eval_session_warm started, when it is still up (else NULL, dropped). */
static kopt__worker_proc *take_warm(kopt__worker_proc **slot)
{
    kopt__worker_proc *w = *slot;

    *slot = NULL;
    if (w && !kopt__worker_alive(w)) {
        kopt__worker_proc_release(w);
        w = NULL;
    }
    return w;
}

/* The energy the worker measured in `phase` (opts.energy_s), if any. */
static void energy_from_run(kopt_ctx *ctx, const kopt__worker_run *run, int phase,
                            kopt_eval_result *r)
{
    json_t *ph = json_array_get(json_object_get(run->result, "phases"), (size_t)phase);
    json_t *e = json_object_get(ph, "energy");
    const char *err = json_string_value(json_object_get(ph, "energy_error"));

    if (json_is_object(e)) {
        r->has_energy = 1;
        r->energy_mj = json_number_value(json_object_get(e, "mj_per_run"));
        r->power_w = json_number_value(json_object_get(e, "power_w"));
        r->energy_runs = (int)json_integer_value(json_object_get(e, "runs"));
        r->energy_window_s = json_number_value(json_object_get(e, "window_s"));
    } else if (err) {
        kopt_log(ctx, KOPT_LOG_WARN, "energy not measured: %s", err);
    }
}

/* One evaluation; with a session S: its seed and ceilings, its reference outputs once they
 * exist, and its serving worker for device-code candidates. */
kopt_status kopt__eval_core(kopt_eval_result **out, kopt_ctx *ctx, const kopt_problem *prob,
                            const kopt_candidate *cand, const kopt_eval_opts *opts,
                            kopt_eval_session *S)
{
    kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;
    kopt_eval_result *r = calloc(1, sizeof(*r));
    kopt_candidate *ref = NULL;
    kopt_compiled *ref_comp = NULL, *cand_comp = NULL, *rt = NULL;
    kopt_compile_opts co = KOPT_COMPILE_OPTS_INIT;
    kopt__worker_run ref_run, cand_run, *refp = &ref_run;
    kopt__worker_proc *ref_proc = NULL, *cand_proc = NULL;
    int serve = 0, served_before = 0, served = 0, ref_ran = 0, ref_comp_host = 0;
    kopt__worker_proc *pool_ref = NULL;   /* the pool's serving reference worker (borrowed) */
    int ref_serving = 0;                  /* ref_proc started to serve, for the pool after */
    json_t *ref_job = NULL;               /* pool_ref's job */
    size_t ref_total_kept = 0;            /* the output size the serving worker has */
    json_t *next_job = NULL;
    kopt__file_guard *guard = NULL;
    json_t *cand_extra = NULL;
    phase_plan phases[2];
    kopt__early_checks early;             /* the trials checked while the candidate times */
    int nphases = 0, ncompared = 0;
    kopt_device_info nvml;
    double t0 = kopt_now_ms(), t1, ts = t0;
    kopt_status rc = KOPT_OK;
    const kopt_candidate *subject = NULL;
    json_t *trace = NULL;

    memset(&ref_run, 0, sizeof(ref_run));
    memset(&cand_run, 0, sizeof(cand_run));
    memset(phases, 0, sizeof(phases));
    memset(&early, 0, sizeof(early));
    *out = NULL;
    if (!r)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "result");
    if (prob->ref_torch)
        return free(r), json_decref(trace), kopt__eval_torch(out, ctx, prob, cand, opts, S);
    if ((rc = kopt_candidate_check_concrete(ctx, cand)) != KOPT_OK)
        return free(r), rc;
    if (opts)
        o = *opts;
    trace = json_object();
    if (o.trials < 1)
        o.trials = 1;
    if (o.trials > 16)
        o.trials = 16;
    r->is_reference = cand == NULL;
    snprintf(r->problem_hash, sizeof(r->problem_hash), "%s", prob->hash);

    /* sizes */
    if ((rc = kopt__plan_sizes(r, ctx, prob, &o)) != KOPT_OK)
        goto fail;

    kopt__trace_step(trace, "sizes", &ts);
    /* device and compile target, without a CUDA context */
    if (S && S->has_nvml) {            /* asked once a session */
        nvml = S->nvml;
        r->has_device = 1;
    } else {
        r->has_device = kopt_device_nvml(ctx, o.device, &nvml, NULL) == KOPT_OK;
        if (S && r->has_device) {
            S->nvml = nvml;
            S->has_nvml = 1;
        }
    }
    kopt__plan_arch(r, o.arch, &nvml);
    co.arch = r->arch;
    co.cache_dir = o.cache_dir;
    kopt__trace_step(trace, "device_query", &ts);

    if ((rc = kopt_candidate_from_reference(&ref, ctx, prob)) != KOPT_OK)
        goto fail;
    /* A one-shot evaluation of device code starts its workers now: each makes its CUDA
     * context (the slow part of its start) while the candidates compile and bind here. */
    if (r->has_device && !S && !ref->host_mode && (!cand || !cand->host_mode)) {
        /* with a candidate, the reference runs in the pool's serving worker when it is up
         * (pool_ref; checked against the output size once it is known) */
        pool_ref = cand ? kopt__eval_pool_serving_ref(o.pool, o.device) : NULL;
        ref_proc = pool_ref ? NULL : kopt__eval_pool_take(o.pool, ctx, o.device);
        cand_proc = cand ? kopt__eval_pool_take(o.pool, ctx, o.device) : NULL;
        if (!o.no_prestart &&
            ((!ref_proc && !pool_ref &&
              kopt__worker_prestart(ctx, o.device, &ref_proc) != KOPT_OK) ||
             (cand && !cand_proc && kopt__worker_prestart(ctx, o.device, &cand_proc) != KOPT_OK)))
            goto fail;
    }
    kopt__trace_step(trace, "prestart", &ts);
    subject = cand ? cand : ref;
    snprintf(r->candidate_hash, sizeof(r->candidate_hash), "%s", subject->hash);
    t1 = kopt_now_ms();
    if (cand) {
        rc = kopt_compile(&cand_comp, ctx, cand, &co);
        if (rc == KOPT_E_COMPILE) {
            r->compile_log = strdup(kopt_errdetail(ctx));
            r->compile_ms = kopt_now_ms() - t1;
            set_verdict(r, KOPT_VERDICT_COMPILE_ERROR, "%s", kopt_errmsg(ctx));
            rc = KOPT_OK;
            goto done;
        }
        if (rc != KOPT_OK)
            goto fail;
    }
    kopt__trace_step(trace, "compile_candidate", &ts);
    if ((rc = kopt_compile(&ref_comp, ctx, ref, &co)) != KOPT_OK) {
        kopt_adderr(ctx, rc, "the problem's reference does not compile");
        goto fail;
    }
    if (!cand_comp) {
        cand_comp = ref_comp;
        ref_comp = NULL;
    }
    ref_comp_host = (cand ? ref_comp : cand_comp)->host_mode;
    r->compile_cache_hit = cand_comp->cache_hit;
    r->compile_log = strdup(cand_comp->log ? cand_comp->log : "");
    kopt__add_kernels(r, cand_comp);
    kopt__trace_step(trace, "compile_reference", &ts);
    if (r->has_device && (rc = kopt_compile_runtime(&rt, ctx, &co)) != KOPT_OK)
        goto fail;
    r->compile_ms = kopt_now_ms() - t1;
    kopt__trace_step(trace, "runtime_module", &ts);

    /* bind every size set to both */
    nphases = kopt__plan_phases(phases, r, o.no_timing);
    for (int p = 0; p < nphases; p++) {
        const kopt_vars *sz = p == 0 ? &r->sizes : &r->check_sizes;
        if ((rc = kopt_bind(&phases[p].ref, ctx, prob, ref, sz)) != KOPT_OK) {
            kopt_adderr(ctx, rc, "the reference at the %s sizes", phases[p].label);
            goto fail;
        }
        if (cand && (rc = kopt_bind(&phases[p].cand, ctx, prob, cand, sz)) != KOPT_OK) {
            set_verdict(r, KOPT_VERDICT_LAUNCH_ERROR, "the candidate's launch plan does not hold "
                        "at the %s sizes: %s", phases[p].label, kopt_errmsg(ctx));
            rc = KOPT_OK;
            goto done;
        }
        phases[p].slot = kopt__slot_bytes(phases[p].ref);
    }
    kopt__trace_step(trace, "bind", &ts);

    if (!r->has_device) {
        set_verdict(r, KOPT_VERDICT_SKIPPED, "no GPU here (%s): compiled for %s and bound the "
                    "launch plan at every size set; verification, timing and the roofline were "
                    "skipped", kopt_errmsg(ctx), r->arch);
        goto done;
    }

    /* seeds: fresh unless given; every trial differs, and so do the timed inputs */
    if ((rc = kopt__plan_seeds(r, ctx, phases, nphases, &o, prob)) != KOPT_OK)
        goto fail;

    kopt__plan_ceilings(ctx, r, &o, S);
    kopt__trace_step(trace, "ceilings", &ts);
    if (cand && cand_comp->host_mode) {
        const char *guarded[] = {prob->path, prob->ref_path, cand->path, cand_comp->binary_path,
                                 ref_comp ? ref_comp->binary_path : NULL, rt->binary_path};
        cand_extra = kopt__host_job_fields(prob, &o, 0);
        if (!o.no_sandbox &&
            ((rc = kopt__guard_begin(&guard, ctx, guarded, (int)(sizeof(guarded) /
                                                                   sizeof(guarded[0])))) != KOPT_OK ||
             (rc = kopt__guard_store(guard, ctx, o.db_path)) != KOPT_OK))
            goto fail;
    }

    /* Both workers start together and set up side by side (process, context, modules);
     * then the reference runs alone on the GPU (outputs of every trial, its time), then the
     * candidate, in a process that never sees the reference's outputs. In a session the
     * reference's outputs at the session's seed are kept, and a device-code candidate goes
     * to the serving worker when one is up. */
    kopt__trace_step(trace, "guard", &ts);
    t1 = kopt_now_ms();
    {
        size_t total = kopt__layout(phases, nphases);
        ref_total_kept = total;
        kopt__eval_pool_note_size(o.pool, total);
        int reuse_ref = S && cand && S->ref_run.result && S->ref_total == total;
        serve = S && cand && !cand_comp->host_mode;
        if (serve && S->cand && (S->cand_total != total || !kopt__worker_alive(S->cand))) {
            kopt__worker_proc_free(S->cand);
            S->cand = NULL;
        }
        served_before = serve && S->cand;
        if (reuse_ref) {
            refp = &S->ref_run;
            r->ref_reused = 1;
        }
        else if (pool_ref && !ref_comp_host &&
                 kopt__eval_pool_serving_total(o.pool) == total) {
            if (!(ref_job = kopt__subject_job(1, 0, phases, nphases, ref_comp, rt, &o, NULL))) {
                rc = kopt_seterr(ctx, KOPT_E_NOMEM, "job");
                goto fail;
            }
        } else {
            if (pool_ref) {            /* of another size (or host code): a fresh one */
                kopt__eval_pool_drop_ref(o.pool);
                pool_ref = NULL;
                ref_proc = kopt__eval_pool_take(o.pool, ctx, o.device);
            }
            if (S && !ref_comp_host)
                ref_proc = take_warm(&S->pre_ref);
            ref_serving = o.pool && !S && cand && !ref_comp_host;
            if ((rc = kopt__start_subject(ctx, 1, !cand, ref_serving, phases, nphases, total,
                                          cand ? ref_comp : cand_comp, rt, &o, NULL,
                                          &ref_proc)) != KOPT_OK)
                goto fail;
        }
        if (served_before) {
            if (!(next_job = kopt__subject_job(0, 1, phases, nphases, cand_comp, rt, &o, NULL))) {
                rc = kopt_seterr(ctx, KOPT_E_NOMEM, "job");
                goto fail;
            }
        } else if (cand) {
            if (serve)
                cand_proc = take_warm(&S->pre_cand);
            if ((rc = kopt__start_subject(ctx, 0, 1, serve, phases, nphases, total, cand_comp, rt, &o,
                                          cand_extra, &cand_proc)) != KOPT_OK)
                goto fail;
            if (serve) {
                S->cand = cand_proc;
                S->cand_total = total;
                S->workers++;
                cand_proc = NULL;
            }
        }
        if (S && cand) {
            S->runs++;
            if (!reuse_ref)
                S->ref_total = total;
        }
    }
    kopt__trace_step(trace, "spawn", &ts);
    if (ref_proc)
        kopt__worker_ready(ctx, ref_proc);
    if (cand_proc)
        kopt__worker_ready(ctx, cand_proc);
    else if (serve && !served_before)
        kopt__worker_ready(ctx, S->cand);
    kopt__eval_pool_replace(o.pool, ctx);   /* the taken workers' replacements, now */
    kopt__trace_step(trace, "workers_ready", &ts);
    if (pool_ref || ref_serving) {
        /* the pool's serving worker (its outputs stay in its buffer: borrowed); one started
         * to serve goes to the pool after this evaluation */
        if ((rc = kopt__worker_serve(ctx, pool_ref ? pool_ref : ref_proc, ref_job, o.timeout_s,
                                     &ref_run)) != KOPT_OK)
            goto fail;
        r->ref_served = 1;
        if (pool_ref && !kopt__worker_alive(pool_ref)) {
            kopt__eval_pool_drop_ref(o.pool);
            pool_ref = NULL;
        }
    } else if (ref_proc && !ref_comp_host) {
        /* kept (idle, holding its outputs) until the end: see kopt__worker_collect */
        if ((rc = kopt__worker_collect(ctx, ref_proc, o.timeout_s, &ref_run)) != KOPT_OK)
            goto fail;
    } else if (ref_proc) {
        rc = kopt__worker_finish(ctx, ref_proc, o.timeout_s, &ref_run);
        ref_proc = NULL;
        if (rc != KOPT_OK)
            goto fail;
    }
    kopt__trace_step(trace, "reference_run", &ts);
    if (!refp->result) {
        kopt__reference_failed(r, refp, &o, "reference");
        goto done;
    }
    ref_ran = refp == &ref_run;
    if (S && cand && ref_ran) {        /* keep the reference's outputs for the session */
        kopt__worker_run_free(&S->ref_run);
        S->ref_run = ref_run;
        memset(&ref_run, 0, sizeof(ref_run));
        refp = &S->ref_run;
    }
    kopt__device_from_json(refp->device, &r->device);
    if (ref_ran) {
        kopt__setup_from_device(refp->device, &r->ref_setup);
        r->ref_setup_ms = r->ref_setup.total_ms;
    }
    r->device.ordinal = o.device;
    if (phases[0].timed)
        kopt__timing_from_run(refp, 0, &r->ref_timing);
    if (r->ceilings.valid)
        kopt_ceilings_fill_spec(&r->ceilings, &r->device);

    if (!cand) {
        r->timing = r->ref_timing;
        energy_from_run(ctx, refp, 0, r);
        r->time_ms = kopt__timing_wall(refp);
        r->verify_ms = kopt_now_ms() - t1 - r->time_ms;
        if (phases[0].ref->has_work && r->timing.n)
            kopt__roofline(&r->roofline, phases[0].ref->flops, phases[0].ref->bytes,
                           (int)prob->compute, &r->ceilings, r->timing.median_ms);
        r->ref_roofline = r->roofline;
        set_verdict(r, KOPT_VERDICT_OK, "reference timed (no candidate given)");
        goto done;
    }

    if ((serve || !cand_comp->host_mode) &&
        kopt__early_checks_init(&early, phases, nphases, refp->shm,
                                kopt__checks_capacity(o.trials, prob->ntensors)))
        kopt__worker_on_trials(serve ? S->cand : cand_proc, kopt__early_checks_on_trials, &early);
    if (serve) {
        rc = kopt__worker_serve(ctx, S->cand, next_job, o.timeout_s, &cand_run);
        served = rc == KOPT_OK && kopt__worker_alive(S->cand);
    } else if (!cand_comp->host_mode) {
        /* its exit goes on while the outputs are compared (released at the end) */
        rc = kopt__worker_collect(ctx, cand_proc, o.timeout_s, &cand_run);
    } else {
        rc = kopt__worker_finish(ctx, cand_proc, o.timeout_s, &cand_run);
        cand_proc = NULL;
    }
    if (rc != KOPT_OK)
        goto fail;
    kopt__trace_step(trace, "candidate_run", &ts);
    if (!served_before)
        kopt__setup_from_device(cand_run.device, &r->cand_setup);
    r->cand_setup_ms = r->cand_setup.total_ms;
    if (json_is_object(json_object_get(cand_run.device, "sandbox"))) {
        char *js = json_dumps(json_object_get(cand_run.device, "sandbox"), JSON_COMPACT);
        snprintf(r->sandbox, sizeof(r->sandbox), "%s", js ? js : "");
        free(js);
    }
    if (guard) {
        char changed[1024];
        int n = kopt__guard_end(guard, changed, sizeof(changed));
        if (n) {
            set_verdict(r, KOPT_VERDICT_TAMPER, "the candidate changed %d file(s) kopt relies on "
                        "while it ran: %s", n, changed);
            goto done;
        }
    }
    if (!cand_run.result) {
        kopt__worker_failure(r, &cand_run, "candidate", &o, cand_comp->host_mode);
        goto done;
    }
    if (cand_comp->host_mode && !prob->allow_libraries &&
        kopt__check_libraries(ctx, r, &cand_run, cand_comp))
        goto done;
    {
        json_t *ks = json_object_get(cand_run.result, "kernels"), *k;
        size_t i;
        json_array_foreach(ks, i, k)
            for (int j = 0; j < r->nkernels; j++)
                if (strcmp(r->kernels[j].name, json_string_value(json_object_get(k, "name")) ?: "") == 0)
                    r->kernels[j].max_threads_per_block =
                        (int)json_integer_value(json_object_get(k, "max_threads_per_block"));
    }
    /* integrity first: inputs untouched, two runs on the same inputs agree; then values */
    for (int p = 0; p < nphases; p++) {
        char msg[1024];
        kopt_check rep;
        if (kopt__check_inputs(p, phases[p].label, &cand_run, refp, msg, sizeof(msg))) {
            set_verdict(r, KOPT_VERDICT_INPUT_MUTATED, "%s", msg);
            goto done;
        }
        if (kopt__early_repeat(&early, p, &phases[p], cand_run.shm, &rep)) {
            r->checks[r->nchecks++] = rep;
            if (isnan(rep.first_got) && !isnan(rep.first_want))
                set_verdict(r, KOPT_VERDICT_STATEFUL, "a second run on the same inputs left "
                            "outputs unwritten (%s at the %s sizes: %lld of %lld elements; first "
                            "at index %lld): the candidate keeps state between calls (a cached "
                            "result, a call counter) or finishes after its stream",
                            rep.tensor, rep.sizes_label, (long long)rep.mismatches,
                            (long long)rep.count, (long long)rep.first_index);
            else
            set_verdict(r, KOPT_VERDICT_RACE, "two runs on the same inputs disagree (%s at the %s "
                        "sizes: %lld of %lld elements differ beyond atol=%g rtol=%g; first at "
                        "index %lld: %.9g then %.9g): a race or a read of uninitialized memory",
                        rep.tensor, rep.sizes_label, (long long)rep.mismatches,
                        (long long)rep.count, rep.atol, rep.rtol, (long long)rep.first_index,
                        rep.first_want, rep.first_got);
            goto done;
        }
    }
    kopt__trace_step(trace, "integrity_checks", &ts);
    r->compare_ms = kopt_now_ms();
    for (int p = 0; p < nphases; p++)
        ncompared += kopt__early_compare(r, &early, p, &phases[p], cand_run.shm, refp->shm);
    r->compare_ms = kopt_now_ms() - r->compare_ms;
    kopt__trace_step(trace, "compare", &ts);
    /* wall time split: everything the workers did except their timed loops is verification */
    r->time_ms = (ref_ran ? kopt__timing_wall(refp) : 0) + kopt__timing_wall(&cand_run);
    r->verify_ms = kopt_now_ms() - t1 - r->time_ms;
    if (ncompared) {
        kopt__wrong_verdict(r, "the reference");
        goto done;
    }
    if (phases[0].timed) {
        kopt__timing_from_run(&cand_run, 0, &r->timing);
        energy_from_run(ctx, &cand_run, 0, r);
        if (o.no_ref_timing)
            memset(&r->ref_timing, 0, sizeof(r->ref_timing));
        if (r->timing.median_ms > 0 && r->ref_timing.median_ms > 0)
            r->speedup = r->ref_timing.median_ms / r->timing.median_ms;
        if (kopt__speed_of_light(r, phases[0].cand, prob, o.suspect_margin))
            goto done;
    }
    set_verdict(r, KOPT_VERDICT_OK, "correct on %d trial(s) at %d size set(s)%s", o.trials, nphases,
                phases[0].timed ? " and in the timed runs" : "");
    goto done;

fail:
    set_verdict(r, KOPT_VERDICT_ERROR, "%s", kopt_errmsg(ctx));
done:
    if (o.sanitize && r->has_device && rt && kopt__sanitizable(r->verdict))
        kopt__run_sanitizers(ctx, r, prob, phases, nphases, cand_comp, rt, &o,
                             cand == NULL);
    kopt__trace_step(trace, "verdict", &ts);
    for (int p = 0; p < 2; p++) {
        kopt_bound_free(phases[p].ref);
        kopt_bound_free(phases[p].cand);
    }
    kopt__guard_free(guard);
    if (early.done[0])   /* beside the parent's steps: it overlapped the candidate's run */
        json_object_set_new(trace, "during_candidate_run",
                            json_pack("{s:f}", "early_checks", early.ms));
    kopt__early_checks_free(&early);
    if (ref_ran && refp->result && json_object_get(refp->result, "trace"))
        json_object_set(trace, "reference", json_object_get(refp->result, "trace"));
    if (cand_run.result && json_object_get(cand_run.result, "trace"))
        json_object_set(trace, "candidate", json_object_get(cand_run.result, "trace"));
    json_decref(cand_extra);
    json_decref(next_job);
    /* the worker that served the reference, if it gave a result: the pool's for the next
     * evaluations (one started to serve here is handed over; counted either way) */
    if (r->ref_served && refp->result &&
        kopt__eval_pool_keep_ref(o.pool, pool_ref ? pool_ref : ref_proc, ref_total_kept) &&
        !pool_ref)
        ref_proc = NULL;
    kopt__worker_run_free(&ref_run);
    kopt__worker_run_free(&cand_run);   /* a served run's buffer stays with the worker */
    json_decref(ref_job);
    /* after our mappings are gone, so a worker still exiting frees its buffer's pages */
    kopt__worker_proc_release(ref_proc);
    kopt__worker_proc_release(cand_proc);
    kopt__trace_step(trace, "cleanup", &ts);
    r->total_ms = kopt_now_ms() - t0;
    r->trace = kopt__trace_dump(trace);
    json_decref(trace);
    if (serve && S->cand && !served) {  /* ended, or left waiting for a "go" it never got */
        kopt__worker_proc_free(S->cand);
        S->cand = NULL;
    }
    kopt_compiled_free(ref_comp);
    kopt_compiled_free(cand_comp);
    kopt_compiled_free(rt);
    kopt_candidate_free(ref);
    *out = r;
    return KOPT_OK;
}

kopt_status kopt_eval_run(kopt_eval_result **out, kopt_ctx *ctx, const kopt_problem *prob,
                          const kopt_candidate *cand, const kopt_eval_opts *opts)
{
    return kopt__eval_core(out, ctx, prob, cand, opts, NULL);
}

kopt_status kopt_eval_torch_program(kopt_ctx *ctx, const kopt_problem *prob,
                                    const kopt_candidate *cand, const kopt_eval_opts *opts,
                                    char *const *wrap, char **program)
{
    kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;
    kopt_eval_result *r = NULL;
    kopt_status rc;

    *program = NULL;
    if (opts)
        o = *opts;
    if (!prob->ref_torch)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: not a problem with a PyTorch reference",
                           prob->path);
    o.program_profile = 1;
    o.program_wrap = wrap;
    o.skip_check_sizes = 1;
    o.no_timing = 1;
    o.torch_compile = 0;
    if ((rc = kopt_eval_run(&r, ctx, prob, cand, &o)) != KOPT_OK)
        return rc;
    if (r->program) {
        *program = r->program;
        r->program = NULL;
    } else {
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "%s: %s", kopt_verdict_name(r->verdict), r->message);
    }
    kopt_eval_result_free(r);
    return rc;
}
