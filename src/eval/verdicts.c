/*
 * The verdicts: their names and exit codes; what a worker that gave no result gets
 * (kopt__worker_failure: TIMEOUT, OOM, CRASH, TAMPER, ...; kopt__reference_failed); and
 * what a correct-looking candidate can still get from its numbers: WRONG or
 * SHAPE_SPECIFIC from the failing output checks, and SUSPECT from its time (no measurable
 * work, or faster than the device's physical bound). One place for the CUDA, host-mode and
 * PyTorch paths (eval.c, torch_eval.c; docs/integrity.md), called once a worker has
 * ended or its outputs have been compared (verify.c); the result then goes to the caller.
 */
#include "eval_int.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kopt__set_verdict(kopt_eval_result *r, kopt_verdict v, const char *fmt, ...)
{
    va_list ap;
    r->verdict = v;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof(r->message), fmt, ap);
    va_end(ap);
}

/* The verdict of a candidate some of whose compared outputs differ from `ref_name`'s:
 * WRONG, naming the first failing check; SHAPE_SPECIFIC when every failing check is at
 * the problem's check_sizes (correct at the sizes it was written for, wrong at others). */
void kopt__wrong_verdict(kopt_eval_result *r, const char *ref_name)
{
    const kopt_check *c = NULL;
    int at_main = 0;

    for (int i = 0; i < r->nchecks; i++) {
        if (!r->checks[i].mismatches)
            continue;
        if (!c)
            c = &r->checks[i];
        at_main += strcmp(r->checks[i].sizes_label, "check") != 0;
    }
    if (!c)
        return;
    kopt__set_verdict(r, at_main ? KOPT_VERDICT_WRONG : KOPT_VERDICT_SHAPE_SPECIFIC,
                      "%s differs from %s at the %s sizes (%s): %lld of %lld elements "
                      "outside atol=%g rtol=%g; first at index %lld: got %.9g, expected %.9g; "
                      "max abs error %.3g%s", c->tensor, ref_name, c->sizes_label, c->run,
                      (long long)c->mismatches, (long long)c->count, c->atol, c->rtol,
                      (long long)c->first_index, c->first_got, c->first_want, c->max_abs_err,
                      at_main ? "" : " (correct at the benchmark sizes: written for one shape)");
}

/* The ceilings the speed-of-light guard holds a time to: the measured ones, each raised to
 * KOPT_GUARD_SPEC_FLOOR of the device's spec-derived rate where it measured lower (DRAM: the
 * memory clock x bus width x 2; compute: the architecture's per-SM rates x the clock). A
 * ceiling measured while other work shared the GPU comes out low, and a correct kernel
 * timed alone later would then look faster than the device allows (gpu_serve on the H100,
 * 2026-11-27: examples/softmax fast.cu SUSPECT once in seven). With the floor at 0.9 and
 * the guard's margin of 1.1, only a time faster than about the spec rate itself is flagged
 * where the measurement was low. */
void kopt__guard_ceilings(kopt_ceilings *g, const kopt_ceilings *c, const kopt_device_info *d)
{
    kopt_ceilings spec;
    double dram = kopt_dram_spec_gbs(d), f = KOPT_GUARD_SPEC_FLOOR;

    *g = *c;
    if (dram > 0 && kopt_ceilings_dram_gbs(c) < f * dram)
        g->dram_copy_gbs = f * dram;
    memset(&spec, 0, sizeof(spec));
    kopt_ceilings_fill_spec(&spec, d);
    for (int k = 0; k < KOPT_NCOMPUTE; k++)
        if (g->gflops[k] < f * spec.gflops[k])
            g->gflops[k] = f * spec.gflops[k];
}

/* The candidate's and the reference's roofline from the timed phase's work counts (none
 * without valid ceilings), and the speed-of-light verdict: a median at or below zero once
 * the timer's own cost is subtracted (no measurable work), or faster than the device
 * allows, is SUSPECT, on every path. 1 when it was. */
int kopt__speed_of_light(kopt_eval_result *r, const kopt_bound *b, const kopt_problem *prob,
                         double margin)
{
    kopt_roofline guard;
    const kopt_roofline *measured = &r->roofline;   /* the guard's bound at the measured ceilings */
    kopt_ceilings held;
    char floor_note[64] = "";
    int fast;

    if (r->timing.n > 0 && !(r->timing.median_ms > 0)) {
        kopt__set_verdict(r, KOPT_VERDICT_SUSPECT, "correct, but no measurable work in the "
                          "timed runs: its median %.4f ms is at or below the timer's own "
                          "cost (%.4f ms, subtracted): the timing is not trusted",
                          r->timing.raw_median_ms, r->timing.overhead_ms);
        return 1;
    }
    if (b->has_work) {
        kopt__roofline(&r->roofline, b->flops, b->bytes, (int)prob->compute, &r->ceilings,
                       r->timing.median_ms);
        kopt__roofline(&r->ref_roofline, b->flops, b->bytes, (int)prob->compute, &r->ceilings,
                       r->ref_timing.median_ms);
    }
    if (!r->roofline.valid || r->roofline.bound_ms <= 0)
        return 0;
    fast = kopt__guard_compute((int)prob->compute, b);
    if (fast != (int)prob->compute && r->ceilings.gflops[fast] > r->ceilings.gflops[prob->compute]) {
        kopt__roofline(&r->fast_roofline, b->flops, b->bytes, fast, &r->ceilings,
                       r->timing.median_ms);
        r->fast_compute = fast;
        measured = &r->fast_roofline;
    } else {
        fast = (int)prob->compute;   /* the problem's own rate holds it */
    }
    kopt__guard_ceilings(&held, &r->ceilings, &r->device);
    kopt__roofline(&guard, b->flops, b->bytes, fast, &held, r->timing.median_ms);
    if (r->timing.median_ms * margin >= guard.bound_ms)
        return 0;
    if (guard.bound_ms < measured->bound_ms)   /* the floor, not the measurement, decided */
        snprintf(floor_note, sizeof(floor_note), ", none below %.0f%% of the spec rate",
                 100 * KOPT_GUARD_SPEC_FLOOR);
    kopt__set_verdict(r, KOPT_VERDICT_SUSPECT, "correct, but its median %.4f ms is faster "
                      "than the device allows for this problem's work (%.4f ms at the "
                      "measured ceilings%s, %s-bound%s): the timing is not trusted",
                      r->timing.median_ms, guard.bound_ms,
                      floor_note,
                      guard.limiter,
                      fast == KOPT_COMPUTE_TF32 ? ", FP32 work at the TF32 tensor-core rate" : "");
    return 1;
}

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

/* Verdict for a worker that did not finish with "result". */
void kopt__worker_failure(kopt_eval_result *r, const kopt__worker_run *run, const char *who,
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
void kopt__reference_failed(kopt_eval_result *r, const kopt__worker_run *run,
                            const kopt_eval_opts *o, const char *what)
{
    char msg[sizeof(r->message)];

    kopt__worker_failure(r, run, "reference", o, 0);
    if (r->verdict == KOPT_VERDICT_SKIPPED)
        return;
    snprintf(msg, sizeof(msg), "%s", r->message);
    set_verdict(r, KOPT_VERDICT_ERROR, "the problem's %s failed, so nothing can be checked: %s",
                what, msg);
}
