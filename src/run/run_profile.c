/*
 * Profiling through a run (kopt profile): correct first, then compile info, SASS, metrics
 * (CUPTI, ncu or an imported report), the roofline class and the micro-tools' findings,
 * and the profile with its findings and resolutions into the store. A detached profile
 * (one GPU of several, on a thread of its own) touches neither the run nor the store: it
 * is committed later on the run's thread.
 */
#include "run_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void disassemble(kopt_run_profile *s, kopt_ctx *ctx)
{
    double t0 = kopt_now_ms();
    kopt_status rc;

    if (s->comp->host_mode) {
        snprintf(s->sass_note, sizeof(s->sass_note), "skipped: host-mode candidate (a shared "
                 "object, no cubin to disassemble)");
        return;
    }
    rc = kopt_sass_from_cubin(&s->sass, ctx, s->comp->binary_path);
    s->sass_ms = kopt_now_ms() - t0;
    if (rc == KOPT_E_NOT_FOUND)
        snprintf(s->sass_note, sizeof(s->sass_note), "skipped: nvdisasm not found (%s)",
                 kopt_errmsg(ctx));
    else if (rc != KOPT_OK)
        snprintf(s->sass_note, sizeof(s->sass_note), "failed: %s", kopt_errmsg(ctx));
}

static kopt_status analyze(kopt_run_profile *s, kopt_ctx *ctx, int all_tools, const char *only)
{
    kopt_analysis_input in;
    kopt_analyze_opts ao = KOPT_ANALYZE_OPTS_INIT;
    double t0 = kopt_now_ms();
    kopt_status rc;

    if ((rc = kopt_analyze_views(&s->views, &s->nviews, ctx, s->comp, s->bound, s->sass,
                                 s->prof)) != KOPT_OK)
        return rc;
    memset(&in, 0, sizeof(in));
    if (s->eval && s->eval->has_device && !s->static_only) {
        in.dev = &s->eval->device;
        in.ceil = s->eval->ceilings.valid ? &s->eval->ceilings : NULL;
        in.median_ms = s->eval->timing.median_ms;
    }
    in.problem = s->prob->name;
    if (s->bound && s->bound->has_work) {
        in.flops = s->bound->flops;
        in.bytes = s->bound->bytes;
    }
    in.compute = (int)s->prob->compute;
    in.matmul_like = s->matmul_like;
    in.host_mode = s->comp->host_mode;
    in.launches_per_call = s->comp->host_mode && s->prof ? s->prof->nkernels : 0;
    in.nkernels = s->nviews;
    in.kernels = s->views;
    ao.all_tools = all_tools;
    ao.only_tool = only;
    rc = kopt_analyze_run(&s->an, ctx, &in, &ao);
    s->analyze_ms = kopt_now_ms() - t0;
    return rc;
}

/* A step failed: its fault recorded on the run, unless detached (the run is another
 * thread's then). */
static kopt_status failed(kopt_run *run, const kopt_run_profile *s, kopt_run_fault f,
                          kopt_status rc)
{
    return s->detached ? rc : kopt__run_fail(run, f, rc);
}

/* The correctness check first: through the run, or detached with the caller's ceilings. */
static kopt_status check(kopt_run *run, kopt_ctx *ctx, kopt_run_profile *s,
                         const kopt_candidate *cand, const kopt_eval_opts *eo)
{
    kopt_eval_opts o;

    if (!s->detached)
        return kopt_run_eval(run, ctx, s->prob, cand, eo, NULL, &s->eval);
    o = *eo;
    o.db_path = run->db_path;   /* set when the run was opened: read only */
    return kopt_eval_run(&s->eval, ctx, s->prob, cand, &o);
}

void kopt_run_profile_commit(kopt_run *run, kopt_ctx *ctx, kopt_run_profile *p)
{
    if (!p || !p->detached)
        return;
    p->detached = 0;
    if (p->eval) {
        kopt__run_note_result(run, ctx, p->device, p->eval);
        kopt__run_store_eval(run, ctx, p->prob, p->subject, p->eval, NULL);
    }
    kopt__run_profile_store(run, p, ctx);
}

kopt_status kopt_run_profile_candidate(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                                       const kopt_candidate *cand,
                                       const kopt_run_profile_opts *opts,
                                       kopt_run_profile **out)
{
    kopt_run_profile_opts o = KOPT_RUN_PROFILE_OPTS_INIT;
    kopt_compile_opts co = KOPT_COMPILE_OPTS_INIT;
    kopt_vars bound_sizes = KOPT_VARS_INIT;
    const char *parent_hash = NULL;
    kopt_run_profile *s;
    kopt_status rc;
    double t0;

    *out = NULL;
    if (opts)
        o = *opts;
    if (!(s = calloc(1, sizeof(*s))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "profile");
    *out = s;
    s->detached = o.detached;
    s->device = o.eval.device;
    if ((rc = kopt_candidate_from_reference(&s->ref, ctx, prob)) != KOPT_OK)
        return failed(run, s, KOPT_RUN_FAULT_INPUT, rc);
    if (o.parent_is_reference || o.parent)
        parent_hash = o.parent ? o.parent->hash : s->ref->hash;
    if (parent_hash)
        snprintf(s->baseline_hash, sizeof(s->baseline_hash), "%s", parent_hash);
    s->prob = prob;
    s->subject = cand ? cand : s->ref;
    s->matmul_like = kopt_analyze_matmul_like(prob);
    s->static_only = o.static_only;
    if (o.static_only)
        snprintf(s->static_note, sizeof(s->static_note), "--static given: no GPU work");
    /* a PyTorch program is not a CUDA source: its profile is a path of its own */
    if (s->subject->torch_module)
        return kopt__run_profile_program(run, ctx, s, &o);

    /* 1. correct first */
    if (!o.static_only) {
        t0 = kopt_now_ms();
        if ((rc = check(run, ctx, s, cand, &o.eval)) != KOPT_OK)
            return rc;
        s->eval_ms = kopt_now_ms() - t0;
        if (s->eval->verdict == KOPT_VERDICT_SKIPPED) {
            s->static_only = 1;
            snprintf(s->static_note, sizeof(s->static_note), "%s", s->eval->message);
        } else if (s->eval->verdict != KOPT_VERDICT_OK) {
            s->stopped = 1;
            return KOPT_OK;
        }
    }

    /* 2. compile info and SASS */
    co.arch = s->eval && s->eval->arch[0] ? s->eval->arch : o.eval.arch ? o.eval.arch
                                                                          : "sm_90a";
    co.cache_dir = o.eval.cache_dir;
    t0 = kopt_now_ms();
    if ((rc = kopt_compile(&s->comp, ctx, s->subject, &co)) != KOPT_OK)
        return failed(run, s, KOPT_RUN_FAULT_COMPILE, rc);
    s->compile_ms = kopt_now_ms() - t0;
    rc = kopt_sizes_resolve(&bound_sizes, ctx, prob, o.eval.sizes);
    if (rc == KOPT_OK)
        rc = kopt_bind(&s->bound, ctx, prob, s->subject, &bound_sizes);
    kopt_vars_free(&bound_sizes);
    if (rc != KOPT_OK)
        return failed(run, s, KOPT_RUN_FAULT_LAUNCH, rc);
    disassemble(s, ctx);

    /* 3. metrics */
    t0 = kopt_now_ms();
    if (o.import) {
        if (kopt_profile_import(&s->prof, ctx, o.import, 1) != KOPT_OK &&
            kopt_profile_import(&s->prof, ctx, o.import, 0) != KOPT_OK)
            snprintf(s->metrics_note, sizeof(s->metrics_note), "import of %s failed: %s",
                     o.import, kopt_errmsg(ctx));
    } else if (s->static_only) {
        snprintf(s->metrics_note, sizeof(s->metrics_note), "skipped (static: %s)",
                 s->static_note);
    } else {
        o.profile.sizes = o.eval.sizes;
        o.profile.arch = co.arch;
        o.profile.seed = s->eval->seed;
        if (kopt_profile_run(&s->prof, ctx, prob, cand, &o.profile) != KOPT_OK)
            snprintf(s->metrics_note, sizeof(s->metrics_note), "skipped: %s%s",
                     kopt_errmsg(ctx), o.profile.ncu ? "" : " (try --ncu)");
    }
    s->metrics_ms = kopt_now_ms() - t0;

    /* 4. analysis, stored */
    if ((rc = analyze(s, ctx, o.all_tools, o.only_tool)) != KOPT_OK)
        return failed(run, s, KOPT_RUN_FAULT_KOPT, rc);
    if (!s->detached)
        kopt__run_profile_store(run, s, ctx);
    return KOPT_OK;
}

void kopt_run_profile_free(kopt_run_profile *p)
{
    if (!p)
        return;
    kopt_analysis_free(p->an);
    free(p->program);
    free(p->program_json);
    free(p->views);
    kopt_profile_free(p->prof);
    kopt_sass_free(p->sass);
    kopt_bound_free(p->bound);
    kopt_compiled_free(p->comp);
    kopt_eval_result_free(p->eval);
    kopt_candidate_free(p->ref);
    free(p);
}
