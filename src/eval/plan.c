/*
 * Plan and bind: what an evaluation asks its workers to do. The phases (one per size set:
 * "main", then "check"), their layout in the shared output buffer, and the jobs that
 * carry them (subject_job's "run" job, one per worker); the seed, the device's ceilings,
 * the compiled kernels' resources, and the parent's trace of where the wall time went.
 * Called by the CUDA path (eval.c), the PyTorch path (torch_eval.c, which reshapes the
 * phases into its own jobs), the guards (guards.c) and kopt__eval_job's callers (the
 * profiler); it hands on JSON jobs that kopt__worker_start (spawn.c) sends to a worker.
 */
#include "eval_int.h"
#include "worker_int.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Add the wall time from *t to now to step `step` of the parent's trace, and keep when it
 * ran in trace["parent_at"] ([first start, last end], kopt_now_ms: the monotonic clock the
 * workers' trace_at uses too); *t becomes now. */
void kopt__trace_step(json_t *trace, const char *step, double *t)
{
    double now = kopt_now_ms();
    json_t *parent = json_object_get(trace, "parent"), *at = json_object_get(trace, "parent_at");
    json_t *v, *was;

    if (!parent)
        json_object_set_new(trace, "parent", parent = json_object());
    if (!at)
        json_object_set_new(trace, "parent_at", at = json_object());
    v = json_object_get(parent, step);
    json_object_set_new(parent, step, json_real(now - *t + (v ? json_number_value(v) : 0)));
    was = json_array_get(json_object_get(at, step), 0);
    json_object_set_new(at, step, json_pack("[ff]", was ? json_number_value(was) : *t, now));
    *t = now;
}

/* The trace as text, its numbers with 9 significant digits. Its WHO_at objects ([start,
 * end] per step, on the monotonic clock) become offsets from trace["at_base_ms"] (an
 * integer: the earliest start, whole ms): 1 us apart up to 1000 s after it, where a clock
 * reading would keep only whole ms. */
static int is_at(const char *who, const json_t *at)   /* a WHO_at object */
{
    size_t n = strlen(who);
    return n > 3 && strcmp(who + n - 3, "_at") == 0 && json_is_object(at);
}

char *kopt__trace_dump(json_t *trace)
{
    const char *who, *step;
    json_t *at, *se;
    double base = -1;

    json_object_foreach(trace, who, at) {
        if (!is_at(who, at))
            continue;
        json_object_foreach(at, step, se) {
            double a = json_number_value(json_array_get(se, 0));
            if (json_array_size(se) == 2 && (base < 0 || a < base))
                base = a;
        }
    }
    if (base >= 0) {
        base = floor(base);
        json_object_foreach(trace, who, at) {
            if (!is_at(who, at))
                continue;
            json_object_foreach(at, step, se)
                for (size_t i = 0; i < 2 && json_array_size(se) == 2; i++)
                    json_array_set_new(se, i, json_real(json_number_value(json_array_get(se, i)) -
                                                        base));
        }
        json_object_set_new(trace, "at_base_ms", json_integer((json_int_t)base));
    }
    return json_dumps(trace, JSON_COMPACT | JSON_REAL_PRECISION(9));
}

/* Bytes of one run's outputs: the compared tensors in order, back to back, as the worker's
 * copy_outputs() writes them. */
size_t kopt__slot_bytes(const kopt_bound *b)
{
    size_t n = 0;
    for (int i = 0; i < b->ntensors; i++)
        if (b->tensors[i].role == KOPT_ROLE_OUTPUT || b->tensors[i].role == KOPT_ROLE_INOUT)
            n += b->tensors[i].bytes;
    return n;
}

/* Layout of a phase in the output buffer: the output slots of trial 0..n-1, of the repeat
 * of trial 0 (same inputs: the determinism check), and of the last timed run. */
size_t kopt__out_at(const phase_plan *ph, int run)   /* run: trial, n = repeat, n+1 = timed */
{
    if (ph->stream)
        return run == 0 ? 0 : ph->slot;
    return ph->base + (size_t)run * ph->slot;
}

json_t *kopt__phase_json(const phase_plan *ph, const kopt_bound *b, const kopt_compiled *comp,
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
                              (json_int_t)kopt__out_at(ph, t), "check_inputs", t == 0));
    obj = json_pack("{s:s, s:o, s:o, s:o, s:o}", "label", ph->label, "sizes", sz, "tensors", ts,
                    "launches", ls, "trials", tr);
    if (ph->timed)
        json_object_set_new(obj, "timing", json_pack("{s:I, s:I, s:b, s:f, s:f, s:i, s:i, s:b, s:f}",
                            "seed", (json_int_t)ph->timing_seed, "offset",
                            (json_int_t)kopt__out_at(ph, ph->ntrials + 1), "check_inputs", 1,
                            "warmup_ms", o->warmup_ms, "budget_ms", o->budget_ms,
                            "min_reps", o->min_reps, "max_reps", o->max_reps, "flush_l2",
                            !o->no_flush, "precision", o->precision > 0 ? o->precision : 0.0));
    return obj;
}

size_t kopt__phase_size(const phase_plan *ph)
{
    return ph->slot * (size_t)(ph->ntrials + 2);
}

/* Streaming (the PyTorch path's comparison on the GPU): every phase in the same two
 * slots of the largest run's outputs; their size (the subjects' export buffer). */
size_t kopt__stream_bytes(const phase_plan *phases, int nphases)
{
    size_t slot = 0;
    for (int p = 0; p < nphases; p++)
        if (phases[p].slot > slot)
            slot = phases[p].slot;
    return 2 * slot;
}

/* Lay the phases out for streaming; returns stream_bytes. */
size_t kopt__layout_stream(phase_plan *phases, int nphases)
{
    for (int p = 0; p < nphases; p++) {
        phases[p].stream = 1;
        phases[p].base = 0;
    }
    return kopt__stream_bytes(phases, nphases);
}

/* Lay out the phases in the output buffer; return its size. */
size_t kopt__layout(phase_plan *phases, int nphases)
{
    size_t total = 0;
    for (int p = 0; p < nphases; p++) {
        phases[p].base = total;
        total += kopt__phase_size(&phases[p]);
    }
    return total;
}

/* The "run" job of a subject. `measured`: this worker's time is the one reported (the
 * candidate, or the reference evaluated alone): only it measures energy; the other
 * reference's timed run is cut to one run with opts.no_ref_timing. */
json_t *kopt__subject_job(int is_ref, int measured, const phase_plan *phases, int nphases,
                          const kopt_compiled *comp, const kopt_compiled *rt,
                          const kopt_eval_opts *o, json_t *extra)
{
    json_t *job, *arr = json_array();

    for (int p = 0; p < nphases; p++) {
        json_t *ph = kopt__phase_json(&phases[p], is_ref ? phases[p].ref : phases[p].cand, comp, o);
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

/* Start a worker for kopt__subject_job(); `serve`: it stays up for further candidates. */
kopt_status kopt__start_subject(kopt_ctx *ctx, int is_ref, int measured, int serve,
                                const phase_plan *phases, int nphases, size_t total,
                                const kopt_compiled *comp, const kopt_compiled *rt,
                                const kopt_eval_opts *o, json_t *extra,
                                kopt__worker_proc **proc)
{
    json_t *job = kopt__subject_job(is_ref, measured, phases, nphases, comp, rt, o, extra);
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
    json_t *job, *extra = comp->host_mode ? kopt__host_job_fields(prob, o, 1) : NULL;

    memset(&ph, 0, sizeof(ph));
    ph.label = "main";
    ph.ref = ph.cand = (kopt_bound *)b;
    ph.ntrials = 1;
    ph.seeds[0] = seed;
    ph.slot = kopt__slot_bytes(b);
    *shm_size = kopt__layout(&ph, 1);
    job = kopt__subject_job(0, 1, &ph, 1, comp, rt, o, extra);   /* untimed: `measured` moot */
    json_decref(extra);
    return job;
}

/* A worker's start, step by step, from its "device" object (worker.c: run_job). */
void kopt__setup_from_device(json_t *dev, kopt_worker_setup *out)
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

uint64_t kopt__fresh_seed(void)
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

void kopt__add_kernels(kopt_eval_result *r, const kopt_compiled *c)
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

/* The sizes of the run: r->sizes from the caller's, and the problem's check sizes over
 * them (unless o->skip_check_sizes). */
kopt_status kopt__plan_sizes(kopt_eval_result *r, kopt_ctx *ctx, const kopt_problem *prob,
                             const kopt_eval_opts *o)
{
    kopt_vars merged = KOPT_VARS_INIT;
    kopt_status rc = kopt_sizes_resolve(&r->sizes, ctx, prob, o->sizes);

    if (rc != KOPT_OK || !prob->has_check_sizes || o->skip_check_sizes)
        return rc;
    kopt_vars_copy(&merged, o->sizes);
    kopt_vars_copy(&merged, &prob->check_sizes);
    rc = kopt_sizes_resolve(&r->check_sizes, ctx, prob, &merged);
    kopt_vars_free(&merged);
    return rc;
}

/* The compile target into r->arch: the caller's, else the device's (r->has_device), else
 * sm_90a (no GPU: compile for a Hopper). */
void kopt__plan_arch(kopt_eval_result *r, const char *arch, const kopt_device_info *nvml)
{
    if (arch)
        snprintf(r->arch, sizeof(r->arch), "%s", arch);
    else if (r->has_device)
        kopt_arch_for_cc(nvml->cc_major, nvml->cc_minor, r->arch);
    else
        snprintf(r->arch, sizeof(r->arch), "sm_90a");
}

/* The phases of r's size sets: "main" (timed unless no_timing), then "check" where the
 * problem has check sizes; returns how many. */
int kopt__plan_phases(phase_plan *phases, const kopt_eval_result *r, int no_timing)
{
    phases[0].label = "main";
    phases[0].timed = !no_timing;
    if (!r->check_sizes.n)
        return 1;
    phases[1].label = "check";
    return 2;
}

int kopt__checks_capacity(int trials, int ntensors)
{
    return 2 * (trials + 3) * (ntensors + 1) + 1;
}

/* Seeds: r->seed (the caller's, else fresh); every trial's inputs differ, and so do the
 * timed inputs; and room in r->checks for every comparison the phases make. */
kopt_status kopt__plan_seeds(kopt_eval_result *r, kopt_ctx *ctx, phase_plan *phases, int nphases,
                             const kopt_eval_opts *o, const kopt_problem *prob)
{
    r->seed = o->seed ? o->seed : kopt__fresh_seed();
    for (int p = 0; p < nphases; p++) {
        phases[p].ntrials = o->trials;
        for (int t = 0; t < o->trials; t++)
            phases[p].seeds[t] = r->seed + (uint64_t)p * 1000 + (uint64_t)t + 1;
        phases[p].timing_seed = r->seed + 999;
    }
    r->checks = calloc((size_t)kopt__checks_capacity(o->trials, prob->ntensors),
                       sizeof(*r->checks));
    return r->checks ? KOPT_OK : kopt_seterr(ctx, KOPT_E_NOMEM, "the checks of the result");
}

/* The device's ceilings into r: the session's once it asked, else the caller's
 * (opts->ceilings: the run API looks them up in its store and stores what was measured
 * here), else measured now (a warning when they cannot be); a session asks once, measured
 * or not. */
void kopt__plan_ceilings(kopt_ctx *ctx, kopt_eval_result *r, const kopt_eval_opts *o,
                         kopt_eval_session *S)
{
    kopt_device_info dev;

    if (S && S->asked_ceilings)
        r->ceilings = S->ceilings;
    else if (o->ceilings && o->ceilings->valid)
        r->ceilings = *o->ceilings;
    else if (kopt_device_measure(ctx, o->device, o->cache_dir, &dev, &r->ceilings) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "device ceilings not measured: %s", kopt_errmsg(ctx));
    if (S && !S->asked_ceilings) {
        S->ceilings = r->ceilings;
        S->asked_ceilings = 1;
    }
}

/* Job fields for host-mode code: the sandbox (unless turned off) and, where the problem
 * forbids libraries, CUPTI records of the kernels that ran. */
json_t *kopt__host_job_fields(const kopt_problem *prob, const kopt_eval_opts *o, int wrapped)
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
