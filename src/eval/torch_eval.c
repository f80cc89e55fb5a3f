/*
 * The PyTorch path: a problem whose reference is a PyTorch Model (docs/kernelbench.md).
 * kopt__eval_core (eval.c) hands it kopt__eval_torch, which resolves the sizes, compiles a
 * host-mode candidate, binds the phases (plan.c), starts the PyTorch workers (the
 * reference, the candidate, the torch.compile baseline; in a session by the zygote and
 * ahead of time), compares their outputs (verify.c, or on the GPU: torch_stream.c), times
 * them and gives the verdict (verdicts.c). The result goes back to kopt__eval_core's
 * caller. kopt_eval_torch_program's runs (the kernels only) end here too, in program_run.
 */
#include "eval_int.h"
#include "worker_int.h"
#include "sandbox_int.h"
#include "kopt/worker.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The session's zygote, started at its warm (kopt_eval_session_warm) or its first PyTorch
 * evaluation (it imports while that one's workers start by exec), and again when the one
 * it had cannot serve any more (it ended, or the environment changed: kopt serve applies
 * each client's). */
static void session_zygote(kopt_ctx *ctx, kopt_eval_session *S, const char *script)
{
    const char *e = getenv("KOPT_TORCH_ZYGOTE");

    if (e && strcmp(e, "0") == 0)
        return;
    if (S->zygote && !kopt__zygote_usable(S->zygote)) {
        kopt__zygote_free(S->zygote);
        S->zygote = NULL;
    }
    if (!S->zygote && kopt__zygote_start(ctx, kopt_torch_python(), script, &S->zygote) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_INFO, "PyTorch zygote not started: %s (workers start by exec)",
                 kopt_errmsg(ctx));
}

kopt_status kopt__torch_session_warm(kopt_ctx *ctx, kopt_eval_session *S)
{
    const char *devenv = getenv("KOPT_TORCH_DEVICE");
    kopt_device_info nvml;
    char *script = NULL;
    kopt_status rc;

    /* where the evaluations would run: a GPU, or the CPU build of PyTorch (the tests) */
    if (!(devenv && strcmp(devenv, "cpu") == 0) &&
        kopt_device_nvml(NULL, S->opts.device, &nvml, NULL) != KOPT_OK)
        return KOPT_OK;
    if ((rc = kopt_torch_worker_find(ctx, &script)) == KOPT_OK)
        session_zygote(ctx, S, script);
    free(script);
    return rc;
}

/* The job of one PyTorch-worker subject: "reference" (the Model, eager), "compile"
 * (torch.compile of it), "modelnew" (a KernelBench-native candidate) or "host" (a kopt-native
 * host-mode shared object, called through ctypes). Shaped as kopt__subject_job()'s, with the
 * problem's "pytorch" field on each tensor and a "torch" object naming what to run. */
/* A path as JSON, absolute (a sandboxed worker runs in a folder of its own). */
static json_t *abs_path(const char *p)
{
    char *r = realpath(p, NULL);
    json_t *j = json_string(r ? r : p);

    free(r);
    return j;
}

static json_t *torch_job(kopt_ctx *ctx, const char *subject, const kopt_problem *prob,
                         const phase_plan *phases, int nphases, int is_ref,
                         const kopt_candidate *cand, const kopt_compiled *comp,
                         const kopt_eval_opts *o, const char *script)
{
    json_t *arr = json_array(), *tj, *job, *sb;
    const char *dev = getenv("KOPT_TORCH_DEVICE");
    char devbuf[32];

    for (int p = 0; p < nphases; p++) {
        const kopt_bound *b = is_ref ? phases[p].ref : phases[p].cand;
        json_t *ph = kopt__phase_json(&phases[p], b, NULL, o);
        json_t *ts = json_object_get(ph, "tensors"), *t;
        size_t i;
        json_array_foreach(ts, i, t)
            if ((int)i < prob->ntensors && prob->tensors[i].pytorch)
                json_object_set_new(t, "pytorch", json_string(prob->tensors[i].pytorch));
        json_object_del(ph, "launches");
        json_array_append_new(arr, ph);
    }
    if (!dev || !dev[0]) {
        snprintf(devbuf, sizeof(devbuf), "cuda:%d", o->device);
        dev = devbuf;
    }
    tj = json_pack("{s:s, s:o, s:I, s:s}", "subject", subject, "model", abs_path(prob->ref_path),
                   "init_seed", (json_int_t)prob->seed, "device", dev);
    {   /* libkopt's clock times every subject (include/kopt/clock.h) */
        char *lib = NULL;
        if (kopt_lib_find(ctx, &lib) == KOPT_OK)
            json_object_set_new(tj, "libkopt", json_string(lib));
        free(lib);
    }
    if (cand && cand->torch_module)
        json_object_set_new(tj, "file", abs_path(cand->path));
    if (comp && comp->host_mode)
        json_object_set_new(tj, "so", abs_path(comp->binary_path));
    job = json_pack("{s:s, s:o, s:o, s:[s, s, s]}", "op", "run", "torch", tj, "phases", arr,
                    "program", kopt_torch_python(), script, "worker");
    if (job && (sb = kopt__torch_sandbox_job(ctx, subject, o)))
        json_object_set_new(job, "sandbox", sb);
    json_object_set_new(job, "spawned_ms", json_real(kopt_now_ms()));
    return job;
}

/* Start one PyTorch-worker subject (forked by the session's zygote when it is ready). */
static kopt_status torch_start(kopt_ctx *ctx, kopt_eval_session *S, json_t *job, size_t total,
                               kopt__worker_proc **proc)
{
    kopt_status rc;

    if (!job)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "job");
    rc = kopt__worker_start_via(ctx, S ? S->zygote : NULL, job, total, proc);
    json_decref(job);
    return rc;
}

/* A PyTorch worker that could not page-lock its output buffer copied through pageable
 * memory (GB-scale outputs: several times slower): said, not silent. */
static void pin_warning(kopt_ctx *ctx, json_t *dev, const char *who)
{
    const char *e = json_string_value(json_object_get(dev, "pin_error"));

    if (e && e[0])
        kopt_log(ctx, KOPT_LOG_WARN, "the %s worker's output buffer was not page-locked "
                 "(%s): its outputs were copied through pageable memory", who, e);
}

/* The verdict of a subject whose worker did not give a result. */
static void torch_failure(kopt_eval_result *r, const kopt__worker_run *run, const char *who,
                          const kopt_eval_opts *o)
{
    const char *kind = run->error ? json_string_value(json_object_get(run->error, "kind")) : NULL;
    const char *msg = run->error ? json_string_value(json_object_get(run->error, "message")) : NULL;

    if (kind && strcmp(kind, "wrong") == 0) {
        set_verdict(r, KOPT_VERDICT_WRONG, "the %s's outputs do not match the problem's: %s", who,
                    msg ? msg : "");
        return;
    }
    kopt__worker_failure(r, run, who, o, 0);
}

/* Append a note ("NOT SANDBOXED: ...", "HOST-BOUND: ...") to `notes`, "; " between two. */
static void note_add(char *notes, size_t cap, const char *fmt, ...) KOPT_PRINTF(3, 4);
static void note_add(char *notes, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(notes);
    va_list ap;

    if (n && n + 2 < cap) {
        memcpy(notes + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    vsnprintf(notes + n, cap - n, fmt, ap);
    va_end(ap);
}

/* The most candidate workers a session keeps started ahead: $KOPT_AHEAD (1 to 6), else a
 * third of the usable CPUs, 2 to 6 (each imports torch on a core of its own, then holds a
 * CUDA context: about half a GB of GPU memory). */
static int ahead_cap(void)
{
    const char *env = getenv("KOPT_AHEAD");
    int n = env && env[0] ? atoi(env) : kopt_cpus_usable() / 3;

    return n < 1 ? (env && env[0] ? 1 : 2) : n > KOPT_AHEAD_MAX ? KOPT_AHEAD_MAX : n;
}

/* A worker's trace (its steps' ms) as trace[who], and its trace_at (when each step ran) as
 * trace[who + "_at"]. */
static void worker_trace(json_t *trace, const kopt__worker_run *run, const char *who)
{
    char key[64];

    if (!run->result)
        return;
    if (json_object_get(run->result, "trace"))
        json_object_set(trace, who, json_object_get(run->result, "trace"));
    snprintf(key, sizeof(key), "%s_at", who);
    if (json_is_object(json_object_get(run->result, "trace_at")))
        json_object_set(trace, key, json_object_get(run->result, "trace_at"));
}

/* The session's next candidates' workers, started ahead (torch imports, then the CUDA
 * context is made, meanwhile) where missing: S->ahead_want of them, so that back to back
 * the next one was started evaluations ago. */
static void fill_ahead(kopt_ctx *ctx, kopt_eval_session *S, const char *subject,
                       const kopt_problem *prob, const phase_plan *phases, int nphases,
                       const kopt_candidate *cand, const kopt_compiled *comp,
                       const kopt_eval_opts *o, const char *script)
{
    if (!S->ahead_want)
        S->ahead_want = ahead_cap() < 2 ? ahead_cap() : 2;
    for (int a = 0; a < S->ahead_want; a++) {
        json_t *job;
        if (S->ahead[a] && (!kopt__worker_alive(S->ahead[a]) ||
                            strcmp(S->ahead_subject[a], subject) != 0)) {
            kopt__worker_proc_free(S->ahead[a]);   /* ended, or for another subject */
            S->ahead[a] = NULL;
        }
        if (S->ahead[a])
            continue;
        job = torch_job(ctx, subject, prob, phases, nphases, 0, cand, comp, o, script);
        if (job && kopt__worker_start_ahead(ctx, S->zygote, job, &S->ahead[a]) == KOPT_OK)
            snprintf(S->ahead_subject[a], sizeof(S->ahead_subject[a]), "%s", subject);
        json_decref(job);
    }
}

/* The subject of the session's next candidates, for its workers started ahead: this one's,
 * except after the reference evaluated as a candidate (a search's root), when they are
 * host-mode candidates, what kopt optimize asks the model for (a ModelNew after it starts
 * its own worker, as without workers ahead). */
static const char *next_subject(const kopt_candidate *cand, const char *subject)
{
    return cand && cand->is_reference && cand->torch_module ? "host" : subject;
}

/* kopt_eval_torch_program's worker: the subject's kernels at the main sizes, into
 * r->program (verdict OK), or the verdict of its failure. */
static kopt_status program_run(kopt_ctx *ctx, kopt_eval_result *r, const kopt_problem *prob,
                               const kopt_candidate *cand, const kopt_compiled *comp,
                               const phase_plan *phases, const kopt_eval_opts *o,
                               const char *script, double tmo)
{
    const char *subject = !cand ? "reference" : cand->torch_module ? "modelnew" : "host";
    json_t *job = torch_job(ctx, subject, prob, phases, 1, !cand, cand, comp, o, script);
    kopt__worker_run run;
    kopt_status rc;

    memset(&run, 0, sizeof(run));
    if (!job)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "job");
    json_object_set_new(job, "program_profile", json_true());
    if (o->program_wrap && o->program_wrap[0]) {    /* ncu ... python worker.py worker */
        json_t *argv = json_array(), *prog = json_object_get(job, "program");
        for (int i = 0; o->program_wrap[i]; i++)
            json_array_append_new(argv, json_string(o->program_wrap[i]));
        json_array_extend(argv, prog);
        json_object_set_new(job, "program", argv);
    }
    rc = kopt__worker_spawn(ctx, job, 0, tmo, &run);
    json_decref(job);
    if (rc != KOPT_OK)
        return rc;
    if (run.result && json_is_object(json_object_get(run.result, "program"))) {
        json_t *p = json_deep_copy(json_object_get(run.result, "program"));
        const kopt_bound *b = phases[0].ref;
        double bytes = 0;
        if (b->has_work)               /* the problem's own count, as the roofline's */
            bytes = b->bytes;
        else                           /* else its tensors, each moved once */
            for (int i = 0; i < b->ntensors; i++)
                bytes += (double)b->tensors[i].bytes;
        json_object_set_new(p, "compulsory_bytes", json_real(bytes));
        r->program = json_dumps(p, JSON_COMPACT);
        json_decref(p);
        set_verdict(r, KOPT_VERDICT_OK, "the %s's kernels recorded", subject);
    } else {
        torch_failure(r, &run, strcmp(subject, "reference") == 0 ? "reference" : "candidate", o);
    }
    kopt__worker_run_free(&run);
    return KOPT_OK;
}

/* The PyTorch worker's account of its bracket in phase 0 into r->bracket[which]. */
static void bracket_from_run(kopt_eval_result *r, int which, const kopt__worker_run *run)
{
    json_t *ph = json_array_get(json_object_get(run->result, "phases"), 0);

    if (!json_is_number(json_object_get(ph, "issue_ms")))
        return;
    r->bracket[which].timed = 1;
    r->bracket[which].issue_ms = json_number_value(json_object_get(ph, "issue_ms"));
    r->bracket[which].hold_ms = json_number_value(json_object_get(ph, "hold_ms"));
    r->bracket[which].exposed_runs = (int)json_integer_value(json_object_get(ph, "exposed_runs"));
}

kopt_status kopt__eval_torch(kopt_eval_result **out, kopt_ctx *ctx, const kopt_problem *prob,
                             const kopt_candidate *cand, const kopt_eval_opts *opts,
                             kopt_eval_session *S)
{
    kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;
    kopt_eval_result *r = calloc(1, sizeof(*r));
    kopt_candidate ref;                      /* binds the problem's tensors, nothing else */
    kopt_compiled *comp = NULL;
    kopt_compile_opts co = KOPT_COMPILE_OPTS_INIT;
    kopt__worker_run ref_run, cand_run, cmp_run, *refp = &ref_run;
    kopt__worker_proc *ref_proc = NULL, *cand_proc = NULL, *cmp_proc = NULL;
    kopt__file_guard *guard = NULL;
    phase_plan phases[2];
    int nphases = 0, ncompared = 0, cpu = 0;
    char *script = NULL;
    kopt_device_info nvml;
    double t0 = kopt_now_ms(), t1, tmo, ts = t0;
    kopt_status rc = KOPT_OK;
    const char *devenv = getenv("KOPT_TORCH_DEVICE"), *cand_subject = NULL;
    json_t *trace = json_object();     /* where the wall time went, step by step */
    char notes[sizeof(r->message) / 4] = "";   /* said with the verdict, whatever it is */
    size_t total;
    int reuse = 0, cmp_reuse = 0;
    kopt__precision_job prec_job;      /* its own kernels' SASS, read while the workers run */
    kopt_torch_baseline bkey;          /* the key of this evaluation's torch.compile baseline */
    int cmp_defer = 0;                 /* its worker waits for the reference's torch version */
    int stream = 0;                    /* compared on the GPU by the reference's worker */
    kopt__stream_phase *cand_sp = NULL, *cmp_sp = NULL;   /* the streamed checks */
    kopt__worker_proc *refw = NULL;    /* the streaming reference's worker (borrowed) */
    size_t cand_shm = 0, cmp_total = 0, cmp_shm = 0;

    memset(&prec_job, 0, sizeof(prec_job));
    memset(&bkey, 0, sizeof(bkey));
    memset(&ref, 0, sizeof(ref));
    memset(&ref_run, 0, sizeof(ref_run));
    memset(&cand_run, 0, sizeof(cand_run));
    memset(&cmp_run, 0, sizeof(cmp_run));
    memset(phases, 0, sizeof(phases));
    *out = NULL;
    if (!r || !trace)
        return free(r), json_decref(trace), kopt_seterr(ctx, KOPT_E_NOMEM, "result");
    if (opts)
        o = *opts;
    o.trials = o.trials < 1 ? 1 : o.trials > 16 ? 16 : o.trials;
    /* importing torch, torch.compile and load_inline take far longer than a kernel step */
    tmo = o.timeout_s > 300 ? o.timeout_s : 300;
    r->torch_ref = 1;
    r->is_reference = cand == NULL;
    ref.host_mode = 1;
    ref.is_reference = 1;
    snprintf(r->problem_hash, sizeof(r->problem_hash), "%s", prob->hash);
    kopt_sha256_hex(prob->ref_source, strlen(prob->ref_source), r->candidate_hash);
    if (cand)
        snprintf(r->candidate_hash, sizeof(r->candidate_hash), "%s", cand->hash);
    if (cand && !cand->torch_module && !cand->host_mode) {
        set_verdict(r, KOPT_VERDICT_ERROR, "%s: a problem with a PyTorch reference takes a "
                    "host-mode .cu (\"mode\": \"host\": it receives the inputs, parameters and "
                    "outputs) or a Python file with class ModelNew", cand->path);
        goto done;
    }
    if ((rc = kopt__plan_sizes(r, ctx, prob, &o)) != KOPT_OK)
        goto fail;
    kopt__trace_step(trace, "sizes", &ts);
    cpu = devenv && strcmp(devenv, "cpu") == 0;   /* tests: the CPU build of PyTorch */
    r->has_device = kopt_device_nvml(ctx, o.device, &nvml, NULL) == KOPT_OK;
    kopt__trace_step(trace, "device_query", &ts);
    kopt__plan_arch(r, o.arch, &nvml);
    co.arch = r->arch;
    co.cache_dir = o.cache_dir;
    t1 = kopt_now_ms();
    if (cand && cand->host_mode) {
        rc = kopt_compile(&comp, ctx, cand, &co);
        if (rc == KOPT_E_COMPILE) {
            r->compile_log = strdup(kopt_errdetail(ctx));
            r->compile_ms = kopt_now_ms() - t1;
            set_verdict(r, KOPT_VERDICT_COMPILE_ERROR, "%s", kopt_errmsg(ctx));
            rc = KOPT_OK;
            goto done;
        }
        if (rc != KOPT_OK)
            goto fail;
        r->compile_cache_hit = comp->cache_hit;
        r->compile_log = strdup(comp->log ? comp->log : "");
        kopt__add_kernels(r, comp);
        if (r->has_device)
            kopt__binary_precision_start(&prec_job, comp->binary_path);
    }
    r->compile_ms = kopt_now_ms() - t1;
    kopt__trace_step(trace, "compile_candidate", &ts);
    nphases = kopt__plan_phases(phases, r, o.no_timing);
    for (int p = 0; p < nphases; p++) {
        const kopt_vars *sz = p == 0 ? &r->sizes : &r->check_sizes;
        if ((rc = kopt_bind(&phases[p].ref, ctx, prob, &ref, sz)) != KOPT_OK)
            goto fail;
        if (cand && (rc = kopt_bind(&phases[p].cand, ctx, prob, cand->torch_module ? &ref : cand,
                                    sz)) != KOPT_OK) {
            set_verdict(r, KOPT_VERDICT_LAUNCH_ERROR, "the candidate does not bind at the %s "
                        "sizes: %s", phases[p].label, kopt_errmsg(ctx));
            rc = KOPT_OK;
            goto done;
        }
        phases[p].slot = kopt__slot_bytes(phases[p].ref);
    }
    kopt__trace_step(trace, "bind", &ts);
    if (!r->has_device && (!cpu || (cand && cand->host_mode))) {
        set_verdict(r, KOPT_VERDICT_SKIPPED, "no GPU here (%s): %s; the PyTorch reference, the "
                    "candidate and the baselines were not run", kopt_errmsg(ctx),
                    comp ? "the candidate compiled" : "nothing compiled");
        goto done;
    }
    if ((rc = kopt_torch_worker_find(ctx, &script)) != KOPT_OK)
        goto fail;
    if (S)
        session_zygote(ctx, S, script);
    if ((rc = kopt__plan_seeds(r, ctx, phases, nphases, &o, prob)) != KOPT_OK)
        goto fail;
    /* the GPU's ceilings bound GPU times only: a run on the CPU build of PyTorch gets no
       roofline and no speed-of-light verdict */
    if (!cpu && r->has_device)
        kopt__plan_ceilings(ctx, r, &o, S);
    kopt__trace_step(trace, "ceilings", &ts);
    if (o.program_profile) {           /* kopt_eval_torch_program: the kernels, no checks */
        rc = program_run(ctx, r, prob, cand, comp, phases, &o, script, tmo);
        if (rc != KOPT_OK)
            goto fail;
        goto done;
    }
    if (cand && !o.no_sandbox) {
        /* the store only for host-mode code, as before (never rolled back; kopt's own
         * commits excused): another process's WAL checkpoint can still change the file */
        const char *guarded[] = {prob->path, prob->ref_path, cand->path,
                                 comp ? comp->binary_path : NULL};
        if ((rc = kopt__guard_begin(&guard, ctx, guarded, 4)) != KOPT_OK ||
            (cand->host_mode && (rc = kopt__guard_store(guard, ctx, o.db_path)) != KOPT_OK))
            goto fail;
    }
    kopt__trace_step(trace, "guard", &ts);

    /* the workers start together (importing torch is the slow part); then each runs alone */
    cand_subject = cand && cand->torch_module ? "modelnew" : "host";
    t1 = kopt_now_ms();
    total = kopt__layout(phases, nphases);
    /* GB-scale outputs stay on the GPU: each subject's runs are compared there, one at a
     * time, by the reference's worker (torch_stream.c) */
    stream = kopt__torch_stream_mode(cpu, r->has_device, &nvml, kopt__stream_bytes(phases, nphases));
    if (stream) {
        total = kopt__layout_stream(phases, nphases);
        cmp_total = kopt__stream_bytes(phases, 1);
        cand_shm = cpu ? total : 0;    /* the CPU build: the subject's shared buffer */
        cmp_shm = cpu ? cmp_total : 0;
        if (!(cand_sp = kopt__stream_phases(phases, nphases)) || !(cmp_sp = kopt__stream_phases(phases, 1))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "checks");
            goto fail;
        }
    } else {
        cand_shm = total;
        cmp_shm = cmp_total = kopt__phase_size(&phases[0]);   /* the first phase, at offset 0 */
    }
    /* in a session (tuning, optimize) the seed is the same every time: the reference's
     * outputs and times from its first run serve every later candidate, as for CUDA
     * references, and only the candidate's worker starts (a streaming reference's worker
     * stays up to compare them) */
    reuse = S && cand && S->ref_run.result && S->ref_total == total && S->ref_stream == stream &&
            (!stream || kopt__worker_alive(S->ref_proc));
    cmp_reuse = reuse && S->cmp_cached;
    if (stream && !cpu) {
        /* the outputs never reach this host: its memory bounds nothing */
    } else {   /* every worker's output buffer lives in host memory until the comparison */
        size_t avail = kopt__host_available_bytes(), two = (reuse ? 0 : total) + (cand ? total : 0);
        size_t three = two + (o.torch_compile && !o.no_timing && !cmp_reuse ? cmp_total : 0);
        if (avail && three > two && (double)three > 0.8 * (double)avail) {
            snprintf(r->compile_note, sizeof(r->compile_note), "torch.compile baseline not "
                     "timed: its output buffer beside the other workers' would take %.3g GB of "
                     "the host's %.3g GB available", (double)three / 1e9, (double)avail / 1e9);
            o.torch_compile = 0;
        }
        if (avail && (double)two > 0.9 * (double)avail)
            kopt_log(ctx, KOPT_LOG_WARN, "the workers' output buffers need %.3g GB of host "
                     "memory and %.3g GB are available: the evaluation may be killed for memory",
                     (double)two / 1e9, (double)avail / 1e9);
    }
    /* a torch.compile baseline an earlier run measured with this key (opts.torch_baselines,
     * the store's): whether it is of this reference's torch version is known once the
     * reference has run, so its worker is started then, only if none fits */
    if (o.torch_compile && !o.no_timing && !cmp_reuse) {
        kopt__torch_baseline_key(&bkey, prob, &r->sizes, &o, cpu, r->has_device ? &nvml : NULL);
        cmp_defer = kopt__torch_baseline_candidates(&o, &bkey) > 0;
    }
    if (!reuse && (rc = torch_start(ctx, S, kopt__torch_streaming(torch_job(ctx, "reference", prob, phases,
                                                                   nphases, 1, NULL, NULL, &o,
                                                                   script), stream, 1, 0),
                                    stream ? 0 : total, &ref_proc)) != KOPT_OK)
        goto fail;
    if (cand && S && S->ahead[0] && strcmp(S->ahead_subject[0], cand_subject) == 0 &&
        kopt__worker_alive(S->ahead[0])) {
        /* the worker the last evaluation started for this one: torch imported already */
        json_t *job = kopt__torch_streaming(torch_job(ctx, cand_subject, prob, phases, nphases, 0, cand,
                                                      comp, &o, script), stream, 0,
                                            cpu ? 0 : total);
        cand_proc = S->ahead[0];
        memmove(&S->ahead[0], &S->ahead[1], sizeof(S->ahead[0]) * (KOPT_AHEAD_MAX - 1));
        memmove(&S->ahead_subject[0], &S->ahead_subject[1],
                sizeof(S->ahead_subject[0]) * (KOPT_AHEAD_MAX - 1));
        S->ahead[KOPT_AHEAD_MAX - 1] = NULL;
        r->worker_ahead = 1;
        rc = job ? kopt__worker_give(ctx, cand_proc, job, cand_shm)
                 : kopt_seterr(ctx, KOPT_E_NOMEM, "job");
        json_decref(job);
        if (rc != KOPT_OK)
            goto fail;
    } else if (cand && (rc = torch_start(ctx, S, kopt__torch_streaming(torch_job(ctx, cand_subject, prob,
                                                                        phases, nphases, 0, cand,
                                                                        comp, &o, script),
                                                              stream, 0, cpu ? 0 : total),
                                         cand_shm, &cand_proc)) != KOPT_OK) {
        goto fail;
    }
    if (S && cand)                     /* kopt_eval_session_counts: a candidate run */
        S->runs++;
    if (o.torch_compile && !o.no_timing && !cmp_reuse && !cmp_defer &&
        (rc = torch_start(ctx, S, kopt__torch_streaming(torch_job(ctx, "compile", prob, phases, 1, 1, NULL,
                                                         NULL, &o, script), stream, 0,
                                               cpu ? 0 : cmp_total),
                          cmp_shm, &cmp_proc)) != KOPT_OK)
        goto fail;
    /* a session on a host with cores to spare: the next candidates' workers import torch
     * now, beside these, on other cores (their import may still run during the first timed
     * runs: the timed loop's hold kernel keeps the GPU's queue ahead of the host); on a
     * smaller host they start after this evaluation's timing */
    if (S && cand && kopt_cpus_usable() >= 8)
        fill_ahead(ctx, S, next_subject(cand, cand_subject), prob, phases, nphases, cand, comp,
                   &o, script);
    kopt__trace_step(trace, "spawn", &ts);
    /* every worker set up (torch imported, context made, candidate loaded and load_inline
     * compiled) before the first is told to go: none is timed while another starts */
    if (ref_proc)
        kopt__worker_ready(ctx, ref_proc);
    if (cmp_proc)
        kopt__worker_ready(ctx, cmp_proc);
    if (cand_proc)
        kopt__worker_ready(ctx, cand_proc);
    /* a worker started ahead that was not ready yet: the next evaluations want one more */
    if (S && r->worker_ahead && kopt_now_ms() - ts > 150 && S->ahead_want < ahead_cap())
        S->ahead_want++;
    kopt__trace_step(trace, "workers_ready", &ts);
    if (reuse) {
        refp = &S->ref_run;
        r->ref_reused = 1;
        refw = S->ref_proc;
    } else {
        /* a streaming reference stays up after its result, to compare */
        if ((rc = stream ? kopt__worker_collect(ctx, ref_proc, tmo, &ref_run)
                         : kopt__worker_finish(ctx, ref_proc, tmo, &ref_run)) != KOPT_OK)
            goto fail;
        if (!stream)
            ref_proc = NULL;
        kopt__torch_clock_apply(&ref_run, NULL, 0);
        if (!ref_run.result) {
            kopt__reference_failed(r, &ref_run, &o, "PyTorch reference");
            goto done;
        }
        refw = ref_proc;
        if (S) {                       /* kept for the session's next candidates */
            kopt__worker_run_free(&S->ref_run);
            S->ref_run = ref_run;
            S->ref_total = total;
            S->ref_stream = stream;
            kopt__worker_proc_release(S->ref_proc);
            S->ref_proc = ref_proc;    /* NULL when not streaming */
            ref_proc = NULL;
            S->cmp_cached = 0;
            memset(&ref_run, 0, sizeof(ref_run));
            refp = &S->ref_run;
        }
    }
    kopt__trace_step(trace, "reference_run", &ts);
    kopt__device_from_json(refp->device, &r->device);
    kopt__setup_from_device(refp->device, &r->ref_setup);
    if (!reuse)
        pin_warning(ctx, refp->device, "reference");
    r->ref_setup_ms = r->ref_setup.total_ms;
    if (phases[0].ref->has_work) {
        r->has_work = 1;
        r->work_bytes = phases[0].ref->bytes;
        r->work_flops = phases[0].ref->flops;
    }
    r->device.ordinal = o.device;
    if (phases[0].timed) {
        kopt__timing_from_run(refp, 0, &r->ref_timing);
        bracket_from_run(r, 1, refp);
    }
    if (r->ceilings.valid)
        kopt_ceilings_fill_spec(&r->ceilings, &r->device);

    snprintf(r->compile_baseline.torch_version, sizeof(r->compile_baseline.torch_version), "%s",
             json_string_value(json_object_get(refp->device, "torch")) ?: "");
    if (cmp_defer) {    /* cached: taken if of this torch version, else measured now */
        char why[512];
        const kopt_torch_baseline *b =
            kopt__torch_baseline_pick(&o, &bkey, r->compile_baseline.torch_version,
                                      r->ref_timing.n ? r->ref_timing.median_ms : 0, why,
                                      sizeof(why));
        if (b) {
            r->compile_cached = 1;
            r->compile_baseline = *b;
            r->compile_timing = b->timing;
            r->has_compile = 1;
            r->bracket[2].issue_ms = b->issue_ms;
            r->bracket[2].hold_ms = b->hold_ms;
            r->bracket[2].exposed_runs = b->exposed_runs;
            r->bracket[2].timed = 1;
            snprintf(r->compile_note, sizeof(r->compile_note), "%s", b->note);
            if (S) {
                S->cmp_cached = S->cmp_has = S->cmp_base_cached = 1;
                S->cmp_timing = r->compile_timing;
                S->cmp_bracket = r->bracket[2];
                S->cmp_base = *b;
                snprintf(S->cmp_note, sizeof(S->cmp_note), "%s", r->compile_note);
            }
        } else {
            /* the reference is done and the candidate waits: nothing is timed while this
             * worker starts */
            kopt_log(ctx, KOPT_LOG_INFO, "torch.compile baseline: the cached one is not used "
                     "(%s): timing it", why);
            if ((rc = torch_start(ctx, S, kopt__torch_streaming(torch_job(ctx, "compile", prob, phases, 1,
                                                                 1, NULL, NULL, &o, script),
                                                       stream, 0, cpu ? 0 : cmp_total),
                                  cmp_shm, &cmp_proc)) != KOPT_OK)
                goto fail;
        }
    }
    if (cmp_proc) {     /* the torch.compile baseline: checked against eager, then timed */
        kopt_eval_result tmp;
        int bad = 0;
        memset(&tmp, 0, sizeof(tmp));
        tmp.checks = calloc((size_t)(o.trials + 3) * (size_t)(prob->ntensors + 1) + 1,
                            sizeof(*tmp.checks));
        double cmp_ms = 0;
        char why[256];
        kopt__worker_ready(ctx, cmp_proc);
        if (stream)
            rc = kopt__torch_stream(ctx, refw, cmp_proc, cmp_sp, 1, cmp_total, tmo, &cmp_run,
                                    &cmp_ms);
        else
            rc = kopt__worker_finish(ctx, cmp_proc, tmo, &cmp_run);
        cmp_proc = NULL;
        if (rc != KOPT_OK)
            goto fail;
        kopt__torch_clock_apply(&cmp_run, NULL, 0);
        if (!cmp_run.result) {
            torch_failure(&tmp, &cmp_run, "torch.compile baseline", &o);
            snprintf(r->compile_note, sizeof(r->compile_note), "%.500s", tmp.message);
        } else if (stream && !kopt__stream_complete(cmp_sp, 1, why, sizeof(why))) {
            snprintf(r->compile_note, sizeof(r->compile_note), "torch.compile baseline not "
                     "used: %s", why);
        } else if (tmp.checks && (bad = kopt__compare_phase(&tmp, &phases[0], cmp_run.shm,
                                                            refp->shm, stream ? cmp_sp : NULL)) != 0) {
            snprintf(r->compile_note, sizeof(r->compile_note), "torch.compile's outputs differ "
                     "from eager's beyond the tolerance (%d check(s)): its time is not used",
                     bad);
        } else {
            kopt__timing_less(&cmp_run, 0, r->ref_timing.n ? r->ref_timing.overhead_ms : -1,
                              &r->compile_timing);
            bracket_from_run(r, 2, &cmp_run);
            r->has_compile = r->compile_timing.n > 0;
        }
        free(tmp.checks);
        r->compile_fresh = 1;
        if (r->has_compile) {          /* under its key, as the run stores it */
            kopt_torch_baseline *b = &r->compile_baseline;
            snprintf(bkey.torch_version, sizeof(bkey.torch_version), "%s", b->torch_version);
            *b = bkey;
            b->timing = r->compile_timing;
            b->eager_ms = r->ref_timing.n ? r->ref_timing.median_ms : 0;
            b->issue_ms = r->bracket[2].issue_ms;
            b->hold_ms = r->bracket[2].hold_ms;
            b->exposed_runs = r->bracket[2].exposed_runs;
            snprintf(b->note, sizeof(b->note), "%s", r->compile_note);
            kopt__utc_now(b->measured_at, sizeof(b->measured_at));
        }
        if (S) {                       /* the same for the session's next candidates */
            S->cmp_cached = 1;
            S->cmp_has = r->has_compile;
            S->cmp_timing = r->compile_timing;
            S->cmp_bracket = r->bracket[2];
            S->cmp_base_cached = 0;
            S->cmp_base = r->compile_baseline;
            snprintf(S->cmp_note, sizeof(S->cmp_note), "%s", r->compile_note);
        }
    } else if (cmp_reuse && o.torch_compile && !o.no_timing) {
        r->has_compile = S->cmp_has;
        r->compile_timing = S->cmp_timing;
        r->bracket[2] = S->cmp_bracket;
        r->compile_cached = S->cmp_base_cached;
        r->compile_baseline = S->cmp_base;
        snprintf(r->compile_note, sizeof(r->compile_note), "%s", S->cmp_note);
    }

    kopt__trace_step(trace, "compile_baseline", &ts);
    if (!cand) {
        r->timing = r->ref_timing;
        r->time_ms = reuse ? 0 : kopt__timing_wall(refp);
        r->verify_ms = kopt_now_ms() - t1 - r->time_ms;
        if (phases[0].ref->has_work && r->timing.n && r->ceilings.valid)
            kopt__roofline(&r->roofline, phases[0].ref->flops, phases[0].ref->bytes,
                           (int)prob->compute, &r->ceilings, r->timing.median_ms);
        r->ref_roofline = r->roofline;
        if (r->has_compile && r->timing.median_ms > 0)
            r->compile_speedup = r->compile_timing.median_ms / r->timing.median_ms;
        kopt__torch_best_baseline(r);
        set_verdict(r, KOPT_VERDICT_OK, "PyTorch reference timed (no candidate given)");
        goto done;
    }
    kopt__worker_ready(ctx, cand_proc);
    if (stream) {
        double ms = 0;
        rc = kopt__torch_stream(ctx, refw, cand_proc, cand_sp, nphases, total, tmo, &cand_run,
                                &ms);
        r->compare_ms = ms;
    } else {
        rc = kopt__worker_finish(ctx, cand_proc, tmo, &cand_run);
    }
    cand_proc = NULL;
    kopt__trace_step(trace, "candidate_run", &ts);
    if (rc != KOPT_OK)
        goto fail;
    kopt__setup_from_device(cand_run.device, &r->cand_setup);
    r->worker_forked = json_is_true(json_object_get(cand_run.device, "forked"));
    pin_warning(ctx, cand_run.device, "candidate");
    r->cand_setup_ms = r->cand_setup.total_ms;
    kopt__torch_sandbox_report(&cand_run, !o.no_sandbox, r->sandbox, sizeof(r->sandbox),
                               notes, sizeof(notes));
    if (notes[0])
        kopt_log(ctx, KOPT_LOG_WARN, "%s", notes);
    if (guard) {
        char changed[1024];
        if (kopt__guard_end(guard, changed, sizeof(changed))) {
            set_verdict(r, KOPT_VERDICT_TAMPER, "the candidate changed file(s) kopt relies on "
                        "while it ran: %s", changed);
            goto done;
        }
    }
    if (!cand_run.result) {
        const char *at = json_string_value(json_object_get(cand_run.error, "phase"));
        /* failed at the check sizes after passing at the benchmark's: written for one shape */
        if (at && strcmp(at, "check") == 0 && nphases > 1 &&
            (stream ? kopt__stream_complete(cand_sp, 1, NULL, 0) &&
                      kopt__compare_phase(r, &phases[0], NULL, NULL, cand_sp) == 0
                    : cand_run.shm && refp->shm &&
                      kopt__compare_phase(r, &phases[0], cand_run.shm, refp->shm, NULL) == 0)) {
            const char *msg = json_string_value(json_object_get(cand_run.error, "message"));
            set_verdict(r, KOPT_VERDICT_SHAPE_SPECIFIC, "correct at the benchmark sizes, but at "
                        "the check sizes the candidate failed (%s): %.700s",
                        json_string_value(json_object_get(cand_run.error, "kind")) ?: "error",
                        msg ? msg : "");
            goto done;
        }
        torch_failure(r, &cand_run, "candidate", &o);
        goto done;
    }
    {
        char msg[512];
        if (kopt__torch_clock_apply(&cand_run, msg, sizeof(msg)) ||
            (stream && !kopt__stream_complete(cand_sp, nphases, msg, sizeof(msg)))) {
            set_verdict(r, KOPT_VERDICT_TAMPER, "%s", msg);
            goto done;
        }
    }
    kopt__torch_census(r, &cand_run);
    if (prec_job.started || prec_job.cached) {   /* its own kernels' SASS */
        kopt__binary_precision_wait(&prec_job);
        snprintf(r->own_precision, sizeof(r->own_precision), "%s", prec_job.out);
        if (prec_job.note[0])
            kopt_log(ctx, KOPT_LOG_INFO, "%s", prec_job.note);
    }
    if (r->timer[0] && strncmp(r->timer, "libkopt", 7) != 0) {   /* said with the verdict */
        note_add(notes, sizeof(notes), "TIMER NOT PROTECTED: %s", r->timer);
    }
    if (r->census > 0 && r->kernels_launched == 0) {
        note_add(notes, sizeof(notes), "NO KERNEL: the checked call launched no kernel on the "
                 "GPU");
    }
    for (int p = 0; p < nphases; p++) {
        char msg[1024];
        kopt_check rep;
        if (kopt__check_inputs(p, phases[p].label, &cand_run, refp, msg, sizeof(msg))) {
            set_verdict(r, KOPT_VERDICT_INPUT_MUTATED, "%s", msg);
            goto done;
        }
        if (kopt__check_repeat(&phases[p], cand_run.shm, &rep, stream ? &cand_sp[p] : NULL)) {
            r->checks[r->nchecks++] = rep;
            set_verdict(r, isnan(rep.first_got) && !isnan(rep.first_want) ? KOPT_VERDICT_STATEFUL
                                                                          : KOPT_VERDICT_RACE,
                        "two runs on the same inputs disagree (%s at the %s sizes: %lld of %lld "
                        "elements; first at index %lld: %.9g then %.9g)", rep.tensor,
                        rep.sizes_label, (long long)rep.mismatches, (long long)rep.count,
                        (long long)rep.first_index, rep.first_want, rep.first_got);
            goto done;
        }
    }
    kopt__trace_step(trace, "integrity_checks", &ts);
    {
        double c0 = kopt_now_ms();
        for (int p = 0; p < nphases; p++)
            ncompared += kopt__compare_phase(r, &phases[p], cand_run.shm, refp->shm,
                                             stream ? &cand_sp[p] : NULL);
        if (!stream)                   /* streamed: the reference's worker's time in it */
            r->compare_ms = kopt_now_ms() - c0;
    }
    kopt__trace_step(trace, "compare", &ts);
    r->time_ms = (reuse ? 0 : kopt__timing_wall(refp)) + kopt__timing_wall(&cand_run);
    r->verify_ms = kopt_now_ms() - t1 - r->time_ms;
    if (ncompared) {
        kopt__wrong_verdict(r, "the PyTorch reference");
        goto done;
    }
    if (phases[0].timed) {
        /* the event bracket's cost is the device's: the reference's measurement of it is
         * subtracted from every subject's samples, so the three differ by their runs only */
        kopt__timing_less(&cand_run, 0, r->ref_timing.n ? r->ref_timing.overhead_ms : -1, &r->timing);
        bracket_from_run(r, 0, &cand_run);
        if (r->timing.median_ms > 0 && r->ref_timing.median_ms > 0)
            r->speedup = r->ref_timing.median_ms / r->timing.median_ms;
        if (r->timing.median_ms > 0 && r->has_compile)
            r->compile_speedup = r->compile_timing.median_ms / r->timing.median_ms;
        kopt__torch_best_baseline(r);
        if (r->bracket[0].timed && 2 * r->bracket[0].exposed_runs > r->timing.n) {
            note_add(notes, sizeof(notes), "HOST-BOUND: %d of %d timed runs waited for the "
                     "host (a synchronization in forward?): the time is the host's round "
                     "trip, not the GPU's work", r->bracket[0].exposed_runs, r->timing.n);
        }
        if (kopt__speed_of_light(r, phases[0].cand, prob, o.suspect_margin))
            goto done;
    }
    set_verdict(r, KOPT_VERDICT_OK, "correct against the PyTorch reference on %d trial(s) at %d "
                "size set(s)%s", o.trials, nphases, phases[0].timed ? " and in the timed runs" : "");
    goto done;

fail:
    set_verdict(r, KOPT_VERDICT_ERROR, "%s", kopt_errmsg(ctx));
done:
    kopt__binary_precision_end(&prec_job);
    kopt__trace_step(trace, "verdict", &ts);
    /* a session's next candidate will want a worker like this one's: start it now, after
     * every timing of this evaluation, so torch imports while the search works */
    if (S && cand && script && cand_subject && phases[0].ref) {
        fill_ahead(ctx, S, next_subject(cand, cand_subject), prob, phases, nphases, cand, comp,
                   &o, script);
        kopt__trace_step(trace, "start_next_worker", &ts);
    }
    /* the workers' own steps (their clocks: they overlap the parent's waits), and when each
     * ran (WHO_at: [start, end] on the monotonic clock, as the parent's parent_at) */
    worker_trace(trace, refp, r->ref_reused ? "reference_first_run" : "reference");
    worker_trace(trace, &cand_run, "candidate");
    worker_trace(trace, &cmp_run, "compile");
    for (int p = 0; p < 2; p++) {
        kopt_bound_free(phases[p].ref);
        kopt_bound_free(phases[p].cand);
    }
    kopt__guard_free(guard);
    if (!r->worker_log && cand_run.log && cand_run.log[0] && r->verdict != KOPT_VERDICT_OK)
        r->worker_log = strdup(cand_run.log);
    kopt__worker_proc_release(ref_proc);   /* a streaming one that compared: not waited for */
    kopt__worker_proc_free(cand_proc);
    kopt__worker_proc_free(cmp_proc);
    kopt__worker_run_free(&ref_run);
    kopt__worker_run_free(&cand_run);
    kopt__worker_run_free(&cmp_run);
    kopt__stream_phases_free(cand_sp, nphases);
    kopt__stream_phases_free(cmp_sp, 1);
    kopt_compiled_free(comp);
    free(script);
    if (notes[0]) {      /* said with the verdict, whatever it is */
        size_t n = strlen(r->message);
        snprintf(r->message + n, sizeof(r->message) - n, " [%s]", notes);
    }
    kopt__trace_step(trace, "cleanup", &ts);
    r->total_ms = ts - t0;        /* the parent's steps sum to it */
    r->trace = kopt__trace_dump(trace);
    json_decref(trace);
    *out = r;
    return KOPT_OK;
}
