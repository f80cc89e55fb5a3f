/*
 * Evaluation, in the calling process (which holds no CUDA context): compile, bind sizes,
 * run the reference and the candidate in separate workers on the same seeded inputs,
 * compare every output, time, place on the roofline, give a verdict. Nothing is stored
 * here: the run API (src/run) stores results and the device's ceilings.
 */
#include "eval_int.h"
#include "worker_int.h"
#include "sandbox_int.h"
#include "kopt/proc.h"
#include "kopt/worker.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const verdict_names[KOPT_VERDICT_COUNT] = {
    "OK", "WRONG", "COMPILE_ERROR", "CRASH", "TIMEOUT", "OOM", "SUSPECT", "LAUNCH_ERROR",
    "SKIPPED", "ERROR", "RACE", "INPUT_MUTATED", "STATEFUL", "OFF_STREAM", "TAMPER",
    "FORBIDDEN_LIBRARY", "SANITIZER", "SHAPE_SPECIFIC",
};
static const int verdict_codes[KOPT_VERDICT_COUNT] = {0, 1, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12,
                                                      13, 14, 15, 16, 17, 18};

const char *kopt_verdict_name(kopt_verdict v)
{
    return v >= 0 && v < KOPT_VERDICT_COUNT ? verdict_names[v] : "?";
}

int kopt_verdict_exit_code(kopt_verdict v)
{
    return v >= 0 && v < KOPT_VERDICT_COUNT ? verdict_codes[v] : 10;
}

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

/* Add the wall time from *t to now to step `step` of the parent's trace; *t becomes now. */
static void trace_step(json_t *trace, const char *step, double *t)
{
    double now = kopt_now_ms();
    json_t *parent = json_object_get(trace, "parent"), *v;

    if (!parent)
        json_object_set_new(trace, "parent", parent = json_object());
    v = json_object_get(parent, step);
    json_object_set_new(parent, step, json_real(now - *t + (v ? json_number_value(v) : 0)));
    *t = now;
}

#define set_verdict kopt__set_verdict

/* ---- job building ----------------------------------------------------------------------- */

static json_t *host_job_fields(const kopt_problem *prob, const kopt_eval_opts *o, int wrapped);

/* Bytes of one run's outputs: the compared tensors in order, back to back, as the worker's
 * copy_outputs() writes them. */
static size_t slot_bytes(const kopt_bound *b)
{
    size_t n = 0;
    for (int i = 0; i < b->ntensors; i++)
        if (b->tensors[i].role == KOPT_ROLE_OUTPUT || b->tensors[i].role == KOPT_ROLE_INOUT)
            n += b->tensors[i].bytes;
    return n;
}

typedef struct phase_plan {
    const char *label;
    kopt_bound *ref, *cand;
    int ntrials;
    uint64_t seeds[16];
    int timed;
    uint64_t timing_seed;
    size_t slot;               /* bytes of the compared tensors of one run */
    size_t base;               /* offset of this phase in shm */
    int stream;                /* its runs handed over one at a time (torch_stream.c): two
                                * slots, trial 0's kept for the repeat */
} phase_plan;

/* Layout of a phase in the output buffer: the output slots of trial 0..n-1, of the repeat
 * of trial 0 (same inputs: the determinism check), and of the last timed run. */
static size_t out_at(const phase_plan *ph, int run)   /* run: trial, n = repeat, n+1 = timed */
{
    if (ph->stream)
        return run == 0 ? 0 : ph->slot;
    return ph->base + (size_t)run * ph->slot;
}

static json_t *phase_json(const phase_plan *ph, const kopt_bound *b, const kopt_compiled *comp,
                          const kopt_eval_opts *o)
{
    json_t *ts = json_array(), *ls = json_array(), *tr = json_array(), *sz = json_object();
    json_t *obj;

    for (int i = 0; i < b->sizes.n; i++)
        json_object_set_new(sz, b->sizes.names[i], json_integer(b->sizes.values[i]));
    for (int i = 0; i < b->ntensors; i++) {
        const kopt_btensor *t = &b->tensors[i];
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++)
            json_array_append_new(shape, json_integer(t->shape[d]));
        json_array_append_new(ts, json_pack("{s:s, s:i, s:i, s:I, s:I, s:i, s:f, s:f, s:o}",
                              "name", t->name, "dtype", (int)t->dtype, "role", (int)t->role,
                              "count", (json_int_t)t->count, "bytes", (json_int_t)t->bytes,
                              "dist", (int)t->init.dist, "a", t->init.a, "b", t->init.b,
                              "shape", shape));
    }
    for (int i = 0; i < b->nlaunches; i++) {
        const kopt_blaunch *l = &b->launches[i];
        const kopt_kernel_info *ki;
        json_t *args;
        if (l->is_memset) {
            json_array_append_new(ls, json_pack("{s:i, s:f}", "memset", l->tensor, "value",
                                                l->value));
            continue;
        }
        ki = kopt_compiled_kernel(comp, l->kernel);
        args = json_array();
        for (int a = 0; a < l->nargs; a++)
            json_array_append_new(args, json_pack("{s:i, s:i, s:I, s:f}", "k",
                                  (int)l->args[a].kind, "t", l->args[a].tensor, "i",
                                  (json_int_t)l->args[a].ival, "f", l->args[a].fval));
        json_array_append_new(ls, json_pack("{s:s, s:s, s:[I,I,I], s:[I,I,I], s:I, s:o}",
                              "name", l->kernel, "lowered", ki ? ki->lowered : l->kernel,
                              "grid", (json_int_t)l->grid[0], (json_int_t)l->grid[1],
                              (json_int_t)l->grid[2], "block", (json_int_t)l->block[0],
                              (json_int_t)l->block[1], (json_int_t)l->block[2], "smem",
                              (json_int_t)l->smem, "args", args));
    }
    for (int t = 0; t <= ph->ntrials; t++)   /* the last one repeats trial 0 */
        json_array_append_new(tr, json_pack("{s:I, s:I, s:b}", "seed",
                              (json_int_t)ph->seeds[t < ph->ntrials ? t : 0], "offset",
                              (json_int_t)out_at(ph, t), "check_inputs", t == 0));
    obj = json_pack("{s:s, s:o, s:o, s:o, s:o}", "label", ph->label, "sizes", sz, "tensors", ts,
                    "launches", ls, "trials", tr);
    if (ph->timed)
        json_object_set_new(obj, "timing", json_pack("{s:I, s:I, s:b, s:f, s:f, s:i, s:i, s:b, s:f}",
                            "seed", (json_int_t)ph->timing_seed, "offset",
                            (json_int_t)out_at(ph, ph->ntrials + 1), "check_inputs", 1,
                            "warmup_ms", o->warmup_ms, "budget_ms", o->budget_ms,
                            "min_reps", o->min_reps, "max_reps", o->max_reps, "flush_l2",
                            !o->no_flush, "precision", o->precision > 0 ? o->precision : 0.0));
    return obj;
}

static size_t phase_size(const phase_plan *ph)
{
    return ph->slot * (size_t)(ph->ntrials + 2);
}

/* Streaming (the PyTorch path's comparison on the GPU): every phase in the same two
 * slots of the largest run's outputs; their size (the subjects' export buffer). */
static size_t stream_bytes(const phase_plan *phases, int nphases)
{
    size_t slot = 0;
    for (int p = 0; p < nphases; p++)
        if (phases[p].slot > slot)
            slot = phases[p].slot;
    return 2 * slot;
}

/* Lay the phases out for streaming; returns stream_bytes. */
static size_t layout_stream(phase_plan *phases, int nphases)
{
    for (int p = 0; p < nphases; p++) {
        phases[p].stream = 1;
        phases[p].base = 0;
    }
    return stream_bytes(phases, nphases);
}

/* Lay out the phases in the output buffer; return its size. */
static size_t layout(phase_plan *phases, int nphases)
{
    size_t total = 0;
    for (int p = 0; p < nphases; p++) {
        phases[p].base = total;
        total += phase_size(&phases[p]);
    }
    return total;
}

/* The "run" job of a subject. `measured`: this worker's time is the one reported (the
 * candidate, or the reference evaluated alone): only it measures energy; the other
 * reference's timed run is cut to one run with opts.no_ref_timing. */
static json_t *subject_job(int is_ref, int measured, const phase_plan *phases, int nphases,
                           const kopt_compiled *comp, const kopt_compiled *rt,
                           const kopt_eval_opts *o, json_t *extra)
{
    json_t *job, *arr = json_array();

    for (int p = 0; p < nphases; p++) {
        json_t *ph = phase_json(&phases[p], is_ref ? phases[p].ref : phases[p].cand, comp, o);
        json_t *tm = json_object_get(ph, "timing");
        if (!measured && o->no_ref_timing && json_is_object(tm)) {
            /* one run of the timed inputs: its outputs still check the candidate's */
            json_object_set_new(tm, "warmup_ms", json_real(0));
            json_object_set_new(tm, "min_warmup", json_integer(1));
            json_object_set_new(tm, "min_reps", json_integer(1));
            json_object_set_new(tm, "max_reps", json_integer(1));
            json_object_set_new(tm, "budget_ms", json_real(0));
        }
        if (measured && o->energy_s > 0 && json_is_object(tm))
            json_object_set_new(tm, "energy_s", json_real(o->energy_s));
        json_array_append_new(arr, ph);
    }
    job = json_pack("{s:s, s:i, s:s, s:s, s:s, s:o}", "op", "run", "device", o->device,
                    "runtime", rt->binary_path, "mode", comp->host_mode ? "host" : "device",
                    "binary", comp->binary_path, "phases", arr);
    if (job && extra)
        json_object_update(job, extra);
    return job;
}

/* Start a worker for subject_job(); `serve`: it stays up for further candidates. */
static kopt_status start_subject(kopt_ctx *ctx, int is_ref, int measured, int serve,
                                 const phase_plan *phases, int nphases, size_t total,
                                 const kopt_compiled *comp, const kopt_compiled *rt,
                                 const kopt_eval_opts *o, json_t *extra,
                                 kopt__worker_proc **proc)
{
    json_t *job = subject_job(is_ref, measured, phases, nphases, comp, rt, o, extra);
    kopt_status rc;

    if (!job)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "job");
    if (serve)
        json_object_set_new(job, "serve", json_true());
    json_object_set_new(job, "spawned_ms", json_real(kopt_now_ms()));
    if (*proc)                         /* prestarted: its context is being made */
        rc = kopt__worker_send(ctx, *proc, job, total);
    else
        rc = kopt__worker_start(ctx, job, total, proc);
    json_decref(job);
    return rc;
}

/* A one-phase job running `comp` at the bound sizes `b` on one trial's inputs (`seed`),
 * untimed, shaped as "run" (eval_int.h); host-mode fields as for a wrapped worker. */
json_t *kopt__eval_job(const kopt_problem *prob, const kopt_bound *b, const kopt_compiled *comp,
                       const kopt_compiled *rt, const kopt_eval_opts *o, uint64_t seed,
                       size_t *shm_size)
{
    phase_plan ph;
    json_t *job, *extra = comp->host_mode ? host_job_fields(prob, o, 1) : NULL;

    memset(&ph, 0, sizeof(ph));
    ph.label = "main";
    ph.ref = ph.cand = (kopt_bound *)b;
    ph.ntrials = 1;
    ph.seeds[0] = seed;
    ph.slot = slot_bytes(b);
    *shm_size = layout(&ph, 1);
    job = subject_job(0, 1, &ph, 1, comp, rt, o, extra);   /* untimed: `measured` moot */
    json_decref(extra);
    return job;
}

/* A worker's start, step by step, from its "device" object (worker.c: run_job). */
static void setup_from_device(json_t *dev, kopt_worker_setup *out)
{
#define F(field, key) out->field = json_number_value(json_object_get(dev, key))
    F(exec_ms, "exec_ms");
    F(context_ms, "context_ms");
    F(module_ms, "module_ms");
    F(curand_ms, "curand_ms");
    F(buffers_ms, "buffers_ms");
    F(pin_ms, "pin_ms");
    F(candidate_ms, "candidate_ms");
    F(total_ms, "setup_ms");
#undef F
    out->context_early = json_is_true(json_object_get(dev, "context_early"));
}

/* Verdict for a worker that did not finish with "result". */
static void worker_failure(kopt_eval_result *r, const kopt__worker_run *run, const char *who,
                           const kopt_eval_opts *o, int host_mode)
{
    const char *kind = run->error ? json_string_value(json_object_get(run->error, "kind")) : NULL;
    const char *msg = run->error ? json_string_value(json_object_get(run->error, "message")) : NULL;
    const char *phase = run->error ? json_string_value(json_object_get(run->error, "phase")) : NULL;
    char where[96] = "";

    if (phase)
        snprintf(where, sizeof(where), " (at the %s sizes)", phase);
    if (run->log && run->log[0]) {
        free(r->worker_log);
        r->worker_log = strdup(run->log);
    }
    if (run->timed_out) {
        set_verdict(r, KOPT_VERDICT_TIMEOUT, "the %s made no progress for %.1f s (last step: %s); "
                    "its worker was killed", who, o->timeout_s,
                    run->last_progress[0] ? run->last_progress : "starting");
    } else if (kind && strcmp(kind, "oom") == 0) {
        set_verdict(r, KOPT_VERDICT_OOM, "the %s ran out of device memory%s: %s", who, where, msg);
    } else if (kind && strcmp(kind, "launch") == 0) {
        set_verdict(r, KOPT_VERDICT_LAUNCH_ERROR, "the %s could not be launched%s: %s", who, where,
                    msg);
    } else if (kind && strcmp(kind, "timeout") == 0) {
        set_verdict(r, KOPT_VERDICT_TIMEOUT, "the %s hit the driver's watchdog%s: %s", who, where,
                    msg);
    } else if (kind && strcmp(kind, "nodevice") == 0) {
        set_verdict(r, KOPT_VERDICT_SKIPPED, "no usable GPU: %s", msg);
    } else if (kind && strcmp(kind, "tamper") == 0) {
        set_verdict(r, KOPT_VERDICT_TAMPER, "%s", msg);
    } else if (run->signal == SIGSYS) {
        set_verdict(r, KOPT_VERDICT_TAMPER, "the %s's worker was stopped by the sandbox (SIGSYS): "
                    "it made a forbidden system call", who);
    } else if (run->signal == SIGXFSZ) {
        set_verdict(r, KOPT_VERDICT_TAMPER, "the %s wrote a file larger than the sandbox allows "
                    "(%.0f MB)", who, o->sandbox_fsize_mb);
    } else if (run->signal == SIGXCPU) {
        set_verdict(r, KOPT_VERDICT_TIMEOUT, "the %s used up its CPU time limit (%.0f s)", who,
                    o->sandbox_cpu_s);
    } else if (kind && strcmp(kind, "off_stream") == 0) {
        set_verdict(r, KOPT_VERDICT_OFF_STREAM, "%s", msg);
    } else if (kind && strcmp(kind, "crash") == 0) {
        set_verdict(r, KOPT_VERDICT_CRASH, "the %s crashed%s: %s", who, where, msg);
    } else if (kind) {
        set_verdict(r, KOPT_VERDICT_ERROR, "kopt's worker failed while running the %s%s: %s", who,
                    where, msg);
    } else if (run->signal) {
        set_verdict(r, KOPT_VERDICT_CRASH, "the %s's worker died with signal %d (%s)", who,
                    run->signal, strsignal(run->signal));
    } else if (host_mode) {
        /* kopt's worker always reports before it exits: a silent exit is the host code's */
        set_verdict(r, KOPT_VERDICT_TAMPER, "the %s's host code ended the worker process (exit "
                    "code %d, last step: %s): it must not call exit()", who, run->exit_code,
                    run->last_progress[0] ? run->last_progress : "starting");
    } else {
        set_verdict(r, KOPT_VERDICT_CRASH, "the %s's worker exited (code %d) without a result "
                    "(last step: %s)", who, run->exit_code,
                    run->last_progress[0] ? run->last_progress : "starting");
    }
}

/* The reference's worker gave no result: nothing can be checked (an ERROR naming why,
 * unless it was SKIPPED: no GPU). `what`: "reference", "PyTorch reference". */
static void reference_failed(kopt_eval_result *r, const kopt__worker_run *run,
                             const kopt_eval_opts *o, const char *what)
{
    char msg[sizeof(r->message)];

    worker_failure(r, run, "reference", o, 0);
    if (r->verdict == KOPT_VERDICT_SKIPPED)
        return;
    snprintf(msg, sizeof(msg), "%s", r->message);
    set_verdict(r, KOPT_VERDICT_ERROR, "the problem's %s failed, so nothing can be checked: %s",
                what, msg);
}

/* The run's event-bracket cost in `phase` (0 when it did not measure one). */
static double run_overhead(const kopt__worker_run *run, int phase)
{
    json_t *ph = json_array_get(json_object_get(run->result, "phases"), (size_t)phase);

    return json_number_value(json_object_get(ph, "event_overhead_ms"));
}

/* The timing of `phase` of a run, its samples less `overhead` (the bracket's own cost; < 0:
 * the run's own measurement of it). */
static void timing_less(const kopt__worker_run *run, int phase, double overhead, kopt_timing *t)
{
    json_t *ph = json_array_get(json_object_get(run->result, "phases"), (size_t)phase);
    json_t *s = json_object_get(ph, "samples_ms");
    size_t n = json_array_size(s);
    double *v = calloc(n + 1, sizeof(double)), raw;

    if (overhead < 0)
        overhead = run_overhead(run, phase);

    for (size_t i = 0; v && i < n; i++)
        v[i] = json_number_value(json_array_get(s, i));
    kopt__timing_from_samples(v, (int)n, (int)json_integer_value(json_object_get(ph, "warmup_runs")), t);
    raw = t->median_ms;
    for (size_t i = 0; v && i < n; i++)
        v[i] = v[i] > overhead ? v[i] - overhead : 0;
    kopt__timing_from_samples(v, (int)n, t->warmup_runs, t);
    t->raw_median_ms = raw;
    t->overhead_ms = overhead;
    free(v);
}


static void timing_from_run(const kopt__worker_run *run, int phase, kopt_timing *t)
{
    timing_less(run, phase, -1, t);
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

/* Compare every run's outputs with the reference's; append checks to r. Returns the
 * number of failing checks. */
static int compare_phase(kopt_eval_result *r, const phase_plan *ph, const unsigned char *got,
                         const unsigned char *want, const kopt__stream_phase *sp)
{
    int failing = 0;

    for (int run = 0; run < ph->ntrials + 2; run++) {
        size_t off;
        if (run == ph->ntrials || (run == ph->ntrials + 1 && !ph->timed))
            continue;   /* the repeat is compared with trial 0 (check_repeat) */
        if (sp) {       /* compared by the reference's worker as it came */
            for (int k = 0; k < sp->nout; k++) {
                r->checks[r->nchecks] = sp->checks[run * sp->nout + k];
                failing += r->checks[r->nchecks++].mismatches > 0;
            }
            continue;
        }
        off = out_at(ph, run);
        for (int i = 0; i < ph->ref->ntensors; i++) {
            const kopt_btensor *t = &ph->ref->tensors[i];
            kopt_check *c;
            if (t->role != KOPT_ROLE_OUTPUT && t->role != KOPT_ROLE_INOUT)
                continue;
            c = &r->checks[r->nchecks++];
            memset(c, 0, sizeof(*c));
            snprintf(c->tensor, sizeof(c->tensor), "%s", t->name);
            snprintf(c->sizes_label, sizeof(c->sizes_label), "%s", ph->label);
            if (run < ph->ntrials)
                snprintf(c->run, sizeof(c->run), "trial %d", run);
            else
                snprintf(c->run, sizeof(c->run), "timed");
            c->seed = run < ph->ntrials ? ph->seeds[run] : ph->timing_seed;
            kopt__compare(t, got + off, want + off, c);
            failing += c->mismatches > 0;
            off += t->bytes;
        }
    }
    return failing;
}


/* Two runs of the candidate on the same inputs must agree within tolerance (RACE).
 * Returns 1 and fills *c with the first differing tensor when they do not. */
static int check_repeat(const phase_plan *ph, const unsigned char *got, kopt_check *c,
                        const kopt__stream_phase *sp)
{
    size_t a = out_at(ph, 0), b = out_at(ph, ph->ntrials);

    if (sp) {
        for (int k = 0; k < sp->nout; k++)
            if (sp->checks[ph->ntrials * sp->nout + k].mismatches) {
                *c = sp->checks[ph->ntrials * sp->nout + k];
                return 1;
            }
        return 0;
    }

    for (int i = 0; i < ph->ref->ntensors; i++) {
        const kopt_btensor *t = &ph->ref->tensors[i];
        if (t->role != KOPT_ROLE_OUTPUT && t->role != KOPT_ROLE_INOUT)
            continue;
        memset(c, 0, sizeof(*c));
        snprintf(c->tensor, sizeof(c->tensor), "%s", t->name);
        snprintf(c->sizes_label, sizeof(c->sizes_label), "%s", ph->label);
        snprintf(c->run, sizeof(c->run), "repeat of trial 0");
        c->seed = ph->seeds[0];
        kopt__compare(t, got + b, got + a, c);
        if (c->mismatches)
            return 1;
        a += t->bytes;
        b += t->bytes;
    }
    return 0;
}

/* The candidate's inputs after a run must be what they were: their checksums (taken on
 * the GPU after trial 0 and after the timed runs) must equal the reference worker's, which
 * saw the same generated inputs. Returns 1 and says which input changed. */
static int check_inputs(int phase, const char *label, const kopt__worker_run *cand,
                        const kopt__worker_run *ref, char *msg, size_t n)
{
    json_t *cs = json_object_get(json_array_get(json_object_get(cand->result, "phases"),
                                                (size_t)phase), "input_sums");
    json_t *rs = json_object_get(json_array_get(json_object_get(ref->result, "phases"),
                                                (size_t)phase), "input_sums");
    const char *key;
    json_t *carr;

    json_object_foreach(cs, key, carr) {
        json_t *rarr = json_object_get(rs, key), *c;
        size_t i;
        json_array_foreach(carr, i, c) {
            const char *a = json_string_value(json_object_get(c, "sum"));
            const char *b = json_string_value(json_object_get(json_array_get(rarr, i), "sum"));
            if (a && b && strcmp(a, b) != 0) {
                snprintf(msg, n, "the candidate changed its input '%s' (at the %s sizes, seen "
                         "after %s): inputs are read-only",
                         json_string_value(json_object_get(c, "tensor")), label,
                         strcmp(key, "timed") == 0 ? "the timed runs" : key);
                return 1;
            }
        }
    }
    return 0;
}

/* Wall time a worker spent in its timed loops (warm-up included). */
static double timing_wall(const kopt__worker_run *run)
{
    json_t *phs = json_object_get(run->result, "phases"), *ph;
    size_t i;
    double ms = 0;

    json_array_foreach(phs, i, ph)
        ms += json_number_value(json_object_get(ph, "timing_wall_ms"));
    return ms;
}

static uint64_t fresh_seed(void)
{
    uint64_t s = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
        if (read(fd, &s, sizeof(s)) != (ssize_t)sizeof(s))
            s = 0;
        close(fd);
    }
    if (!s)
        s = (uint64_t)kopt_now_ms() * 2654435761u;
    return s & 0x7fffffffffffffffULL;   /* fits the store's signed integer */
}

static void add_kernels(kopt_eval_result *r, const kopt_compiled *c)
{
    if (!c)
        return;
    r->kernels = calloc((size_t)c->nkernels + 1, sizeof(*r->kernels));
    for (int i = 0; r->kernels && i < c->nkernels; i++) {
        kopt_kernel_resources *k = &r->kernels[r->nkernels++];
        snprintf(k->name, sizeof(k->name), "%s", c->kernels[i].name);
        k->registers = c->kernels[i].registers;
        k->static_smem = c->kernels[i].static_smem;
        k->stack_frame = c->kernels[i].stack_frame;
        k->spill_stores = c->kernels[i].spill_stores;
        k->spill_loads = c->kernels[i].spill_loads;
    }
}

/* The device's ceilings, measured now (the caller passes them in opts->ceilings when it has
 * them: the run API looks them up in its store and stores what was measured here). */
static kopt_status get_ceilings(kopt_ctx *ctx, kopt_eval_result *r, const kopt_eval_opts *o)
{
    kopt_device_info dev;

    return kopt_device_measure(ctx, o->device, o->cache_dir, &dev, &r->ceilings);
}

/* Job fields for host-mode code: the sandbox (unless turned off) and, where the problem
 * forbids libraries, CUPTI records of the kernels that ran. */
static json_t *host_job_fields(const kopt_problem *prob, const kopt_eval_opts *o, int wrapped)
{
    json_t *f = json_object();

    if (!o->no_sandbox)
        json_object_set_new(f, "sandbox", json_pack("{s:f, s:f, s:f, s:b}", "cpu_s",
                            o->sandbox_cpu_s, "fsize_mb", o->sandbox_fsize_mb, "as_extra_mb",
                            o->sandbox_as_extra_mb, "no_network", !wrapped));
    if (!prob->allow_libraries && !wrapped)
        json_object_set_new(f, "kernel_records", json_true());
    return f;
}

/* 1 when `name` is a NUL-terminated string inside `data` (a kernel the host code registers
 * itself: its mangled name is in the shared object). */
static int has_string(const char *data, size_t len, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = data; p && (size_t)(p - data) + n < len;) {
        const char *hit = memmem(p, len - (size_t)(p - data), name, n + 1);
        if (!hit)
            break;
        if (hit == data || hit[-1] == '\0')
            return 1;
        p = hit + 1;
    }
    return 0;
}

/* "allow_libraries": false: every kernel that ran during the trials must be the
 * candidate's own. 1 when the verdict was set. */
static int check_libraries(kopt_ctx *ctx, kopt_eval_result *r, const kopt__worker_run *run,
                           const kopt_compiled *comp)
{
    json_t *ks = json_object_get(run->result, "gpu_kernels"), *k;
    char foreign[1024] = "", *so = NULL;
    size_t i, at = 0, so_len = 0;
    int nforeign = 0;

    if (!json_is_array(ks)) {
        set_verdict(r, KOPT_VERDICT_ERROR, "the problem forbids libraries, but the worker did not "
                    "report which kernels ran");
        return 1;
    }
    if (kopt_file_read(ctx, comp->binary_path, &so, &so_len) != KOPT_OK) {
        set_verdict(r, KOPT_VERDICT_ERROR, "cannot list the candidate's own kernels: %s",
                    kopt_errmsg(ctx));
        return 1;
    }
    json_array_foreach(ks, i, k) {
        const char *name = json_string_value(k);
        if (!name)
            continue;
        if (r->ngpu_kernels < 16)
            snprintf(r->gpu_kernels[r->ngpu_kernels++], sizeof(r->gpu_kernels[0]), "%s", name);
        if (has_string(so, so_len, name))
            continue;
        if (nforeign++ < 3 && at < sizeof(foreign))
            at += (size_t)snprintf(foreign + at, sizeof(foreign) - at, "%s%s",
                                   nforeign > 1 ? ", " : "", name);
    }
    free(so);
    if (!nforeign)
        return 0;
    set_verdict(r, KOPT_VERDICT_FORBIDDEN_LIBRARY, "the problem sets \"allow_libraries\": false, "
                "but %d kernel(s) that the candidate does not define ran on the GPU (CUPTI "
                "kernel records): %s", nforeign, foreign);
    return 1;
}

static int sanitizable(kopt_verdict v)
{
    return v == KOPT_VERDICT_OK || v == KOPT_VERDICT_WRONG || v == KOPT_VERDICT_SUSPECT ||
           v == KOPT_VERDICT_RACE || v == KOPT_VERDICT_STATEFUL ||
           v == KOPT_VERDICT_INPUT_MUTATED || v == KOPT_VERDICT_CRASH;
}

/* Read compute-sanitizer's log: the error count and the first findings. */
static void parse_sanitizer_log(const char *log, kopt_sanitizer_report *rep)
{
    const char *line = log;
    size_t at = 0;
    int shown = 0;

    rep->errors = -1;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *summary = memmem(line, len, "ERROR SUMMARY:", 14);
        const char *race = memmem(line, len, "RACECHECK SUMMARY:", 18);
        if (summary) {
            rep->errors = atoi(summary + 14);
        } else if (race) {
            /* "RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)": every hazard
             * is a finding */
            rep->errors = atoi(race + 18);
        } else if (len > 10 && strncmp(line, "========= ", 10) == 0 && shown < 6 &&
                   at + len + 2 < sizeof(rep->summary)) {
            const char *t = line + 10;
            size_t tl = len - 10;
            while (tl && *t == ' ')
                t++, tl--;
            /* the headline of each finding and where it happened */
            if (tl && (strncmp(t, "Invalid", 7) == 0 || strncmp(t, "Uninitialized", 13) == 0 ||
                       strncmp(t, "Race", 4) == 0 || strncmp(t, "Error", 5) == 0 ||
                       strncmp(t, "Program hit", 11) == 0 || strncmp(t, "at ", 3) == 0 ||
                       strncmp(t, "Warning", 7) == 0 || memmem(t, tl, "hazard", 6))) {
                memcpy(rep->summary + at, t, tl);
                at += tl;
                rep->summary[at++] = '\n';
                rep->summary[at] = '\0';
                shown += strncmp(t, "at ", 3) != 0;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
}

/* --sanitize: run the subject once at the smallest size set under each compute-sanitizer
 * tool, and fold the findings into the verdict. */
static void run_sanitizers(kopt_ctx *ctx, kopt_eval_result *r, const kopt_problem *prob,
                           const phase_plan *phases, int nphases, const kopt_compiled *comp,
                           const kopt_compiled *rt, const kopt_eval_opts *o, int is_ref)
{
    static const char *const tools[3] = {"memcheck", "racecheck", "initcheck"};
    char *sanitizer = kopt_find_program("KOPT_COMPUTE_SANITIZER", "compute-sanitizer");
    phase_plan ph = phases[nphases > 1 ? 1 : 0];
    int total_errors = 0;
    char found[1024] = "";
    size_t at = 0;

    ph.timed = 0;
    ph.ntrials = 1;
    for (int t = 0; t < 3; t++) {
        kopt_sanitizer_report *rep;
        char logpath[] = "/tmp/kopt-sanitizer-XXXXXX";
        kopt__worker_proc *proc = NULL;
        kopt__worker_run run;
        json_t *extra;
        char *log = NULL;
        size_t len = 0;
        int fd;
        if (!(o->sanitize & (1u << t)))
            continue;
        rep = &r->sanitizer[r->nsanitizer++];
        snprintf(rep->tool, sizeof(rep->tool), "%s", tools[t]);
        if (!sanitizer) {
            snprintf(rep->summary, sizeof(rep->summary), "compute-sanitizer not found (set "
                     "KOPT_COMPUTE_SANITIZER or put it on PATH)");
            continue;
        }
        if ((fd = mkstemp(logpath)) < 0)
            continue;
        close(fd);
        extra = comp->host_mode ? host_job_fields(prob, o, 1) : json_object();
        /* only the device code's errors: kopt's own probing API calls fail on purpose */
        json_object_set_new(extra, "wrap", json_pack("[s, s, s, s, s, s, s, s, s, s, s]",
                            sanitizer, "--tool", tools[t], "--print-limit", "20", "--log-file",
                            logpath, "--error-exitcode", "86", "--report-api-errors", "no"));
        /* initcheck must see what the candidate leaves unwritten: no poisoning */
        if (t == 2)
            json_object_set_new(extra, "no_poison", json_true());
        memset(&run, 0, sizeof(run));
        if (start_subject(ctx, is_ref, 0, 0, &ph, 1, layout(&ph, 1), comp, rt, o, extra, &proc) ==
                KOPT_OK &&
            kopt__worker_ready(ctx, proc) == KOPT_OK &&
            kopt__worker_finish(ctx, proc, o->timeout_s * 30, &run) == KOPT_OK) {
            proc = NULL;
            if (kopt_file_read(ctx, logpath, &log, &len) == KOPT_OK)
                parse_sanitizer_log(log, rep);
            rep->ran = rep->errors >= 0;
            if (!rep->ran)
                snprintf(rep->summary, sizeof(rep->summary), "compute-sanitizer gave no error "
                         "summary (worker exit %d%s)", run.exit_code,
                         run.timed_out ? ", timed out" : "");
        }
        kopt__worker_proc_free(proc);
        kopt__worker_run_free(&run);
        json_decref(extra);
        free(log);
        unlink(logpath);
        if (rep->ran && rep->errors > 0) {
            const char *first = rep->summary;
            size_t fl = strcspn(first, "\n");
            total_errors += rep->errors;
            if (at < sizeof(found))
                at += (size_t)snprintf(found + at, sizeof(found) - at, "%s%s: %d error(s), first: "
                                       "%.*s", at ? "; " : "", rep->tool, rep->errors, (int)fl,
                                       first);
        }
    }
    free(sanitizer);
    if (!total_errors)
        return;
    if (r->verdict == KOPT_VERDICT_OK || r->verdict == KOPT_VERDICT_SUSPECT) {
        set_verdict(r, KOPT_VERDICT_SANITIZER, "correct on its checks, but compute-sanitizer "
                    "found errors: %s", found);
    } else {
        size_t ml = strlen(r->message);
        snprintf(r->message + ml, sizeof(r->message) - ml, " (compute-sanitizer: %s)", found);
    }
}

/* ---- the evaluation -------------------------------------------------------------------- */

struct kopt_eval_session {
    const kopt_problem *prob;       /* borrowed */
    kopt_eval_opts opts;            /* the caller's, with the seed fixed */
    kopt_ceilings ceilings;         /* as the first evaluation found them */
    int asked_ceilings;
    kopt_device_info nvml;          /* NVML's answer, once there was one */
    int has_nvml;
    kopt__worker_run ref_run;       /* the reference's outputs at the seed (result != NULL) */
    size_t ref_total;               /* the output layout they fill */
    kopt__worker_proc *ref_proc;    /* a streaming PyTorch reference's worker, kept up to
                                     * compare the session's candidates (torch_stream.c) */
    int ref_stream;                 /* ref_run is a streaming reference's (no outputs) */
    kopt__worker_proc *cand;        /* the serving candidate worker, or NULL */
    size_t cand_total;
    int runs, workers;
    /* a PyTorch reference's torch.compile baseline, once measured at the seed */
    int cmp_cached, cmp_has;
    kopt_timing cmp_timing;
    char cmp_note[512];
    __typeof__(((kopt_eval_result *)0)->bracket[2]) cmp_bracket;
    int cmp_base_cached;            /* it came from opts.torch_baselines (an earlier run) */
    kopt_torch_baseline cmp_base;   /* its key and numbers (kopt_eval_result's) */
    /* the next candidate's PyTorch worker, started (torch importing) once the last
     * evaluation's timing was over, and the subject it was started for */
    /* how many: two, one more each time a candidate's worker taken from them was not ready
     * yet (back to back, evaluations faster than a worker's start), up to ahead_cap() */
#define KOPT_AHEAD_MAX 6
    kopt__worker_proc *ahead[KOPT_AHEAD_MAX];   /* oldest first: the next candidate takes [0] */
    char ahead_subject[KOPT_AHEAD_MAX][16];
    int ahead_want;
    /* workers started by kopt_eval_session_warm, each making its CUDA context: the first
     * run's reference and serving candidate workers */
    kopt__worker_proc *pre_ref, *pre_cand;
    /* the PyTorch workers' zygote (zygote.c): started at the first PyTorch evaluation, it
     * forks the later ones' workers with torch imported ($KOPT_TORCH_ZYGOTE=0: none) */
    kopt__zygote *zygote;
};

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

/* ---- problems with a PyTorch reference (docs/kernelbench.md) ----------------------------- */

/* The session's zygote, started at its first PyTorch evaluation (it imports while that one's
 * workers start by exec) and again when the one it had cannot serve any more (it ended, or
 * the environment changed: kopt serve applies each client's). */
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

/* The job of one PyTorch-worker subject: "reference" (the Model, eager), "compile"
 * (torch.compile of it), "modelnew" (a KernelBench-native candidate) or "host" (a kopt-native
 * host-mode shared object, called through ctypes). Shaped as subject_job()'s, with the
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
        json_t *ph = phase_json(&phases[p], b, NULL, o);
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
    worker_failure(r, run, who, o, 0);
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

/* Whether the PyTorch path compares on the GPU (torch_stream.c): on a GPU, unless the two
 * export slots would take over a quarter of its memory; $KOPT_TORCH_COMPARE "host" or
 * "stream" decides (tests: "stream" with the CPU build of PyTorch, through the subjects'
 * shared buffers). */
static int torch_stream_mode(int cpu, int has_device, const kopt_device_info *nvml,
                             size_t export_bytes)
{
    const char *e = getenv("KOPT_TORCH_COMPARE");

    if (e && strcmp(e, "host") == 0)
        return 0;
    if (e && strcmp(e, "stream") == 0)
        return 1;
    if (cpu || !has_device)
        return 0;
    return !(nvml->total_mem > 0 && (double)export_bytes > 0.25 * (double)nvml->total_mem);
}

/* A worker job of the PyTorch path, streaming: the reference compares, a subject exports
 * `export` bytes on the GPU (0: through its shared buffer). Takes `job`. */
static json_t *torch_streaming(json_t *job, int stream, int is_ref, size_t export)
{
    if (job && stream)
        json_object_set_new(job, "stream", is_ref ? json_pack("{s:b}", "reference", 1)
                                                  : json_pack("{s:I}", "export",
                                                              (json_int_t)export));
    return job;
}

/* The streamed checks of a subject, one per phase, backed by one allocation. */
static kopt__stream_phase *stream_phases(const phase_plan *phases, int nphases)
{
    kopt__stream_phase *sp = calloc((size_t)nphases, sizeof(*sp));

    if (!sp)
        return NULL;
    for (int p = 0; p < nphases; p++) {
        sp[p].b = phases[p].ref;
        sp[p].label = phases[p].label;
        sp[p].ntrials = phases[p].ntrials;
        sp[p].timed = phases[p].timed;
        sp[p].seeds = phases[p].seeds;
        sp[p].timing_seed = phases[p].timing_seed;
        sp[p].slot = phases[p].slot;
        for (int i = 0; i < phases[p].ref->ntensors; i++)
            sp[p].nout += phases[p].ref->tensors[i].role == KOPT_ROLE_OUTPUT ||
                          phases[p].ref->tensors[i].role == KOPT_ROLE_INOUT;
        if (!(sp[p].checks = calloc((size_t)(sp[p].ntrials + 2) * (size_t)(sp[p].nout + 1),
                                    sizeof(kopt_check)))) {
            for (int q = 0; q < p; q++)
                free(sp[q].checks);
            free(sp);
            return NULL;
        }
    }
    return sp;
}

static void stream_phases_free(kopt__stream_phase *sp, int nphases)
{
    for (int p = 0; sp && p < nphases; p++)
        free(sp[p].checks);
    free(sp);
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

static kopt_status eval_torch(kopt_eval_result **out, kopt_ctx *ctx, const kopt_problem *prob,
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
    if ((rc = kopt_sizes_resolve(&r->sizes, ctx, prob, o.sizes)) != KOPT_OK)
        goto fail;
    if (prob->has_check_sizes && !o.skip_check_sizes) {
        kopt_vars merged = KOPT_VARS_INIT;
        kopt_vars_copy(&merged, o.sizes);
        kopt_vars_copy(&merged, &prob->check_sizes);
        rc = kopt_sizes_resolve(&r->check_sizes, ctx, prob, &merged);
        kopt_vars_free(&merged);
        if (rc != KOPT_OK)
            goto fail;
    }
    trace_step(trace, "sizes", &ts);
    cpu = devenv && strcmp(devenv, "cpu") == 0;   /* tests: the CPU build of PyTorch */
    r->has_device = kopt_device_nvml(ctx, o.device, &nvml, NULL) == KOPT_OK;
    trace_step(trace, "device_query", &ts);
    if (o.arch)
        snprintf(r->arch, sizeof(r->arch), "%s", o.arch);
    else if (r->has_device)
        kopt_arch_for_cc(nvml.cc_major, nvml.cc_minor, r->arch);
    else
        snprintf(r->arch, sizeof(r->arch), "sm_90a");
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
        add_kernels(r, comp);
        if (r->has_device)
            kopt__binary_precision_start(&prec_job, comp->binary_path);
    }
    r->compile_ms = kopt_now_ms() - t1;
    trace_step(trace, "compile_candidate", &ts);
    phases[0].label = "main";
    phases[nphases++].timed = !o.no_timing;
    if (r->check_sizes.n) {
        phases[1].label = "check";
        nphases++;
    }
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
        phases[p].slot = slot_bytes(phases[p].ref);
    }
    trace_step(trace, "bind", &ts);
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
    r->seed = o.seed ? o.seed : fresh_seed();
    for (int p = 0; p < nphases; p++) {
        phases[p].ntrials = o.trials;
        for (int t = 0; t < o.trials; t++)
            phases[p].seeds[t] = r->seed + (uint64_t)p * 1000 + (uint64_t)t + 1;
        phases[p].timing_seed = r->seed + 999;
    }
    r->checks = calloc((size_t)(2 * (o.trials + 3) * (prob->ntensors + 1)) + 1, sizeof(*r->checks));
    /* the GPU's ceilings bound GPU times only: a run on the CPU build of PyTorch gets no
       roofline and no speed-of-light verdict */
    if (!cpu && r->has_device) {
        if (S && S->asked_ceilings)    /* asked once a session, as on the CUDA path */
            r->ceilings = S->ceilings;
        else if (o.ceilings && o.ceilings->valid)
            r->ceilings = *o.ceilings;
        else if (get_ceilings(ctx, r, &o) != KOPT_OK)
            kopt_log(ctx, KOPT_LOG_WARN, "device ceilings not measured: %s", kopt_errmsg(ctx));
        if (S && !S->asked_ceilings) {
            S->ceilings = r->ceilings;
            S->asked_ceilings = 1;
        }
    }
    trace_step(trace, "ceilings", &ts);
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
    trace_step(trace, "guard", &ts);

    /* the workers start together (importing torch is the slow part); then each runs alone */
    cand_subject = cand && cand->torch_module ? "modelnew" : "host";
    t1 = kopt_now_ms();
    total = layout(phases, nphases);
    /* GB-scale outputs stay on the GPU: each subject's runs are compared there, one at a
     * time, by the reference's worker (torch_stream.c) */
    stream = torch_stream_mode(cpu, r->has_device, &nvml, stream_bytes(phases, nphases));
    if (stream) {
        total = layout_stream(phases, nphases);
        cmp_total = stream_bytes(phases, 1);
        cand_shm = cpu ? total : 0;    /* the CPU build: the subject's shared buffer */
        cmp_shm = cpu ? cmp_total : 0;
        if (!(cand_sp = stream_phases(phases, nphases)) || !(cmp_sp = stream_phases(phases, 1))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "checks");
            goto fail;
        }
    } else {
        cand_shm = total;
        cmp_shm = cmp_total = phase_size(&phases[0]);   /* the first phase, at offset 0 */
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
    if (!reuse && (rc = torch_start(ctx, S, torch_streaming(torch_job(ctx, "reference", prob, phases,
                                                                   nphases, 1, NULL, NULL, &o,
                                                                   script), stream, 1, 0),
                                    stream ? 0 : total, &ref_proc)) != KOPT_OK)
        goto fail;
    if (cand && S && S->ahead[0] && strcmp(S->ahead_subject[0], cand_subject) == 0 &&
        kopt__worker_alive(S->ahead[0])) {
        /* the worker the last evaluation started for this one: torch imported already */
        json_t *job = torch_streaming(torch_job(ctx, cand_subject, prob, phases, nphases, 0, cand,
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
    } else if (cand && (rc = torch_start(ctx, S, torch_streaming(torch_job(ctx, cand_subject, prob,
                                                                        phases, nphases, 0, cand,
                                                                        comp, &o, script),
                                                              stream, 0, cpu ? 0 : total),
                                         cand_shm, &cand_proc)) != KOPT_OK) {
        goto fail;
    }
    if (o.torch_compile && !o.no_timing && !cmp_reuse && !cmp_defer &&
        (rc = torch_start(ctx, S, torch_streaming(torch_job(ctx, "compile", prob, phases, 1, 1, NULL,
                                                         NULL, &o, script), stream, 0,
                                               cpu ? 0 : cmp_total),
                          cmp_shm, &cmp_proc)) != KOPT_OK)
        goto fail;
    /* a session on a host with cores to spare: the next candidates' workers import torch
     * now, beside these, on other cores (their import may still run during the first timed
     * runs: the timed loop's hold kernel keeps the GPU's queue ahead of the host); on a
     * smaller host they start after this evaluation's timing */
    if (S && cand && kopt_cpus_usable() >= 8)
        fill_ahead(ctx, S, cand_subject, prob, phases, nphases, cand, comp, &o, script);
    trace_step(trace, "spawn", &ts);
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
    trace_step(trace, "workers_ready", &ts);
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
            reference_failed(r, &ref_run, &o, "PyTorch reference");
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
    trace_step(trace, "reference_run", &ts);
    kopt__device_from_json(refp->device, &r->device);
    setup_from_device(refp->device, &r->ref_setup);
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
        timing_from_run(refp, 0, &r->ref_timing);
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
            if ((rc = torch_start(ctx, S, torch_streaming(torch_job(ctx, "compile", prob, phases, 1,
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
        } else if (tmp.checks && (bad = compare_phase(&tmp, &phases[0], cmp_run.shm,
                                                      refp->shm, stream ? cmp_sp : NULL)) != 0) {
            snprintf(r->compile_note, sizeof(r->compile_note), "torch.compile's outputs differ "
                     "from eager's beyond the tolerance (%d check(s)): its time is not used",
                     bad);
        } else {
            timing_less(&cmp_run, 0, r->ref_timing.n ? r->ref_timing.overhead_ms : -1,
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

    trace_step(trace, "compile_baseline", &ts);
    if (!cand) {
        r->timing = r->ref_timing;
        r->time_ms = reuse ? 0 : timing_wall(refp);
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
    trace_step(trace, "candidate_run", &ts);
    if (rc != KOPT_OK)
        goto fail;
    setup_from_device(cand_run.device, &r->cand_setup);
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
                      compare_phase(r, &phases[0], NULL, NULL, cand_sp) == 0
                    : cand_run.shm && refp->shm &&
                      compare_phase(r, &phases[0], cand_run.shm, refp->shm, NULL) == 0)) {
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
        if (check_inputs(p, phases[p].label, &cand_run, refp, msg, sizeof(msg))) {
            set_verdict(r, KOPT_VERDICT_INPUT_MUTATED, "%s", msg);
            goto done;
        }
        if (check_repeat(&phases[p], cand_run.shm, &rep, stream ? &cand_sp[p] : NULL)) {
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
    trace_step(trace, "integrity_checks", &ts);
    {
        double c0 = kopt_now_ms();
        for (int p = 0; p < nphases; p++)
            ncompared += compare_phase(r, &phases[p], cand_run.shm, refp->shm,
                                       stream ? &cand_sp[p] : NULL);
        if (!stream)                   /* streamed: the reference's worker's time in it */
            r->compare_ms = kopt_now_ms() - c0;
    }
    trace_step(trace, "compare", &ts);
    r->time_ms = (reuse ? 0 : timing_wall(refp)) + timing_wall(&cand_run);
    r->verify_ms = kopt_now_ms() - t1 - r->time_ms;
    if (ncompared) {
        kopt__wrong_verdict(r, "the PyTorch reference");
        goto done;
    }
    if (phases[0].timed) {
        /* the event bracket's cost is the device's: the reference's measurement of it is
         * subtracted from every subject's samples, so the three differ by their runs only */
        timing_less(&cand_run, 0, r->ref_timing.n ? r->ref_timing.overhead_ms : -1, &r->timing);
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
    kopt__binary_precision_wait(&prec_job);
    trace_step(trace, "verdict", &ts);
    /* a session's next candidate will want a worker like this one's: start it now, after
     * every timing of this evaluation, so torch imports while the search works */
    if (S && cand && script && cand_subject && phases[0].ref) {
        fill_ahead(ctx, S, cand_subject, prob, phases, nphases, cand, comp, &o, script);
        trace_step(trace, "start_next_worker", &ts);
    }
    /* the workers' own steps (their clocks: they overlap the parent's waits) */
    if (refp->result && json_object_get(refp->result, "trace"))
        json_object_set(trace, r->ref_reused ? "reference_first_run" : "reference",
                        json_object_get(refp->result, "trace"));
    if (cand_run.result && json_object_get(cand_run.result, "trace"))
        json_object_set(trace, "candidate", json_object_get(cand_run.result, "trace"));
    if (cmp_run.result && json_object_get(cmp_run.result, "trace"))
        json_object_set(trace, "compile", json_object_get(cmp_run.result, "trace"));
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
    stream_phases_free(cand_sp, nphases);
    stream_phases_free(cmp_sp, 1);
    kopt_compiled_free(comp);
    free(script);
    if (notes[0]) {      /* said with the verdict, whatever it is */
        size_t n = strlen(r->message);
        snprintf(r->message + n, sizeof(r->message) - n, " [%s]", notes);
    }
    trace_step(trace, "cleanup", &ts);
    r->total_ms = ts - t0;        /* the parent's steps sum to it */
    r->trace = json_dumps(trace, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(trace);
    *out = r;
    return KOPT_OK;
}

/* One evaluation; with a session S: its seed and ceilings, its reference outputs once they
 * exist, and its serving worker for device-code candidates. */
static kopt_status eval_core(kopt_eval_result **out, kopt_ctx *ctx, const kopt_problem *prob,
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
    int nphases = 0, ncompared = 0;
    kopt_device_info nvml;
    double t0 = kopt_now_ms(), t1, ts = t0;
    kopt_status rc = KOPT_OK;
    const kopt_candidate *subject = NULL;
    json_t *trace = NULL;

    memset(&ref_run, 0, sizeof(ref_run));
    memset(&cand_run, 0, sizeof(cand_run));
    memset(phases, 0, sizeof(phases));
    *out = NULL;
    if (!r)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "result");
    if (prob->ref_torch)
        return free(r), json_decref(trace), eval_torch(out, ctx, prob, cand, opts, S);
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
    if ((rc = kopt_sizes_resolve(&r->sizes, ctx, prob, o.sizes)) != KOPT_OK)
        goto fail;
    if (prob->has_check_sizes && !o.skip_check_sizes) {
        kopt_vars merged = KOPT_VARS_INIT;
        kopt_vars_copy(&merged, o.sizes);
        kopt_vars_copy(&merged, &prob->check_sizes);
        rc = kopt_sizes_resolve(&r->check_sizes, ctx, prob, &merged);
        kopt_vars_free(&merged);
        if (rc != KOPT_OK)
            goto fail;
    }

    trace_step(trace, "sizes", &ts);
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
    if (o.arch)
        snprintf(r->arch, sizeof(r->arch), "%s", o.arch);
    else if (r->has_device)
        kopt_arch_for_cc(nvml.cc_major, nvml.cc_minor, r->arch);
    else
        snprintf(r->arch, sizeof(r->arch), "sm_90a");
    co.arch = r->arch;
    co.cache_dir = o.cache_dir;
    trace_step(trace, "device_query", &ts);

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
            ((!ref_proc && kopt__worker_prestart(ctx, o.device, &ref_proc) != KOPT_OK) ||
             (cand && !cand_proc && kopt__worker_prestart(ctx, o.device, &cand_proc) != KOPT_OK)))
            goto fail;
    }
    trace_step(trace, "prestart", &ts);
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
    trace_step(trace, "compile_candidate", &ts);
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
    add_kernels(r, cand_comp);
    trace_step(trace, "compile_reference", &ts);
    if (r->has_device && (rc = kopt_compile_runtime(&rt, ctx, &co)) != KOPT_OK)
        goto fail;
    r->compile_ms = kopt_now_ms() - t1;
    trace_step(trace, "runtime_module", &ts);

    /* bind every size set to both */
    phases[0].label = "main";
    phases[nphases++].timed = !o.no_timing;
    if (r->check_sizes.n) {
        phases[1].label = "check";
        nphases++;
    }
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
        phases[p].slot = slot_bytes(phases[p].ref);
    }
    trace_step(trace, "bind", &ts);

    if (!r->has_device) {
        set_verdict(r, KOPT_VERDICT_SKIPPED, "no GPU here (%s): compiled for %s and bound the "
                    "launch plan at every size set; verification, timing and the roofline were "
                    "skipped", kopt_errmsg(ctx), r->arch);
        goto done;
    }

    /* seeds: fresh unless given; every trial differs, and so do the timed inputs */
    r->seed = o.seed ? o.seed : fresh_seed();
    for (int p = 0; p < nphases; p++) {
        phases[p].ntrials = o.trials;
        for (int t = 0; t < o.trials; t++)
            phases[p].seeds[t] = r->seed + (uint64_t)p * 1000 + (uint64_t)t + 1;
        phases[p].timing_seed = r->seed + 999;
    }
    r->checks = calloc((size_t)(2 * (o.trials + 3) * (prob->ntensors + 1)) + 1, sizeof(*r->checks));

    if (S && S->asked_ceilings)
        r->ceilings = S->ceilings;
    else if (o.ceilings && o.ceilings->valid)
        r->ceilings = *o.ceilings;
    else if (get_ceilings(ctx, r, &o) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "device ceilings not measured: %s", kopt_errmsg(ctx));
    if (S && !S->asked_ceilings) {     /* measured or not, asked once a session */
        S->ceilings = r->ceilings;
        S->asked_ceilings = 1;
    }
    trace_step(trace, "ceilings", &ts);
    if (cand && cand_comp->host_mode) {
        const char *guarded[] = {prob->path, prob->ref_path, cand->path, cand_comp->binary_path,
                                 ref_comp ? ref_comp->binary_path : NULL, rt->binary_path};
        cand_extra = host_job_fields(prob, &o, 0);
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
    trace_step(trace, "guard", &ts);
    t1 = kopt_now_ms();
    {
        size_t total = layout(phases, nphases);
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
            if (!(ref_job = subject_job(1, 0, phases, nphases, ref_comp, rt, &o, NULL))) {
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
            if ((rc = start_subject(ctx, 1, !cand, ref_serving, phases, nphases, total,
                                    cand ? ref_comp : cand_comp, rt, &o, NULL,
                                    &ref_proc)) != KOPT_OK)
                goto fail;
        }
        if (served_before) {
            if (!(next_job = subject_job(0, 1, phases, nphases, cand_comp, rt, &o, NULL))) {
                rc = kopt_seterr(ctx, KOPT_E_NOMEM, "job");
                goto fail;
            }
        } else if (cand) {
            if (serve)
                cand_proc = take_warm(&S->pre_cand);
            if ((rc = start_subject(ctx, 0, 1, serve, phases, nphases, total, cand_comp, rt, &o,
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
    trace_step(trace, "spawn", &ts);
    if (ref_proc)
        kopt__worker_ready(ctx, ref_proc);
    if (cand_proc)
        kopt__worker_ready(ctx, cand_proc);
    else if (serve && !served_before)
        kopt__worker_ready(ctx, S->cand);
    kopt__eval_pool_replace(o.pool, ctx);   /* the taken workers' replacements, now */
    trace_step(trace, "workers_ready", &ts);
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
    trace_step(trace, "reference_run", &ts);
    if (!refp->result) {
        reference_failed(r, refp, &o, "reference");
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
        setup_from_device(refp->device, &r->ref_setup);
        r->ref_setup_ms = r->ref_setup.total_ms;
    }
    r->device.ordinal = o.device;
    if (phases[0].timed)
        timing_from_run(refp, 0, &r->ref_timing);
    if (r->ceilings.valid)
        kopt_ceilings_fill_spec(&r->ceilings, &r->device);

    if (!cand) {
        r->timing = r->ref_timing;
        energy_from_run(ctx, refp, 0, r);
        r->time_ms = timing_wall(refp);
        r->verify_ms = kopt_now_ms() - t1 - r->time_ms;
        if (phases[0].ref->has_work && r->timing.n)
            kopt__roofline(&r->roofline, phases[0].ref->flops, phases[0].ref->bytes,
                           (int)prob->compute, &r->ceilings, r->timing.median_ms);
        r->ref_roofline = r->roofline;
        set_verdict(r, KOPT_VERDICT_OK, "reference timed (no candidate given)");
        goto done;
    }

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
    trace_step(trace, "candidate_run", &ts);
    if (!served_before)
        setup_from_device(cand_run.device, &r->cand_setup);
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
        worker_failure(r, &cand_run, "candidate", &o, cand_comp->host_mode);
        goto done;
    }
    if (cand_comp->host_mode && !prob->allow_libraries &&
        check_libraries(ctx, r, &cand_run, cand_comp))
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
        if (check_inputs(p, phases[p].label, &cand_run, refp, msg, sizeof(msg))) {
            set_verdict(r, KOPT_VERDICT_INPUT_MUTATED, "%s", msg);
            goto done;
        }
        if (check_repeat(&phases[p], cand_run.shm, &rep, NULL)) {
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
    trace_step(trace, "integrity_checks", &ts);
    r->compare_ms = kopt_now_ms();
    for (int p = 0; p < nphases; p++)
        ncompared += compare_phase(r, &phases[p], cand_run.shm, refp->shm, NULL);
    r->compare_ms = kopt_now_ms() - r->compare_ms;
    trace_step(trace, "compare", &ts);
    /* wall time split: everything the workers did except their timed loops is verification */
    r->time_ms = (ref_ran ? timing_wall(refp) : 0) + timing_wall(&cand_run);
    r->verify_ms = kopt_now_ms() - t1 - r->time_ms;
    if (ncompared) {
        kopt__wrong_verdict(r, "the reference");
        goto done;
    }
    if (phases[0].timed) {
        timing_from_run(&cand_run, 0, &r->timing);
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
    if (o.sanitize && r->has_device && rt && sanitizable(r->verdict))
        run_sanitizers(ctx, r, prob, phases, nphases, cand_comp, rt, &o,
                       cand == NULL);
    trace_step(trace, "verdict", &ts);
    for (int p = 0; p < 2; p++) {
        kopt_bound_free(phases[p].ref);
        kopt_bound_free(phases[p].cand);
    }
    kopt__guard_free(guard);
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
    trace_step(trace, "cleanup", &ts);
    r->total_ms = kopt_now_ms() - t0;
    r->trace = json_dumps(trace, JSON_COMPACT | JSON_REAL_PRECISION(6));
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
    return eval_core(out, ctx, prob, cand, opts, NULL);
}

/* ---- sessions ---------------------------------------------------------------------------- */

kopt_status kopt_eval_session_open(kopt_eval_session **out, kopt_ctx *ctx,
                                   const kopt_problem *prob, const kopt_eval_opts *opts)
{
    kopt_eval_opts dflt = KOPT_EVAL_OPTS_INIT;
    kopt_eval_session *s;

    *out = NULL;
    if (!prob)
        return kopt_seterr(ctx, KOPT_E_INVALID, "evaluation session: no problem");
    if (!(s = calloc(1, sizeof(*s))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "evaluation session");
    s->prob = prob;
    s->opts = opts ? *opts : dflt;
    if (!s->opts.seed)
        s->opts.seed = fresh_seed();
    if (s->opts.ceilings && s->opts.ceilings->valid) {
        s->ceilings = *s->opts.ceilings;
        s->asked_ceilings = 1;
    }
    *out = s;
    return KOPT_OK;
}

kopt_status kopt_eval_session_run(kopt_eval_session *s, kopt_ctx *ctx,
                                  const kopt_candidate *cand, kopt_eval_result **out)
{
    *out = NULL;
    if (!s || !cand)
        return kopt_seterr(ctx, KOPT_E_INVALID, "evaluation session: no candidate");
    return eval_core(out, ctx, s->prob, cand, &s->opts, s);
}

/* The session's options after the run it was opened with is gone (kopt_run_session_attach):
 * the store its host-mode candidates may not touch, and the device's ceilings (the
 * session's own copy once it has them, else `ceilings`, borrowed like the open's). */
void kopt__eval_session_rebind(kopt_eval_session *s, const char *db_path,
                               const kopt_ceilings *ceilings)
{
    if (!s)
        return;
    s->opts.db_path = db_path;
    if (s->asked_ceilings)
        s->opts.ceilings = s->ceilings.valid ? &s->ceilings : NULL;
    else
        s->opts.ceilings = ceilings && ceilings->valid ? ceilings : NULL;
}

void kopt_eval_session_counts(const kopt_eval_session *s, int *runs, int *workers)
{
    if (runs)
        *runs = s ? s->runs : 0;
    if (workers)
        *workers = s ? s->workers : 0;
}

kopt_status kopt_eval_session_warm(kopt_eval_session *s, kopt_ctx *ctx)
{
    kopt_device_info nvml;
    kopt_status rc;

    if (!s)
        return kopt_seterr(ctx, KOPT_E_INVALID, "evaluation session: none to warm");
    if (s->runs > 0 || s->prob->ref_torch || s->opts.no_prestart ||
        kopt_device_nvml(NULL, s->opts.device, &nvml, NULL) != KOPT_OK)
        return KOPT_OK;                /* nothing to start ahead, or no GPU to start it on */
    if (!s->pre_ref && (rc = kopt__worker_prestart(ctx, s->opts.device, &s->pre_ref)) != KOPT_OK)
        return rc;
    if (!s->pre_cand &&
        (rc = kopt__worker_prestart(ctx, s->opts.device, &s->pre_cand)) != KOPT_OK)
        return rc;
    return KOPT_OK;
}

void kopt_eval_session_close(kopt_eval_session *s)
{
    if (!s)
        return;
    kopt__worker_proc_release(s->pre_ref);
    kopt__worker_proc_release(s->pre_cand);
    kopt__worker_proc_free(s->cand);
    for (int a = 0; a < KOPT_AHEAD_MAX; a++)
        kopt__worker_proc_release(s->ahead[a]);
    kopt__worker_proc_release(s->ref_proc);
    kopt__worker_run_free(&s->ref_run);
    kopt__zygote_free(s->zygote);      /* after its workers: their ends were its to report */
    free(s);
}
