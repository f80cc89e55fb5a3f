/* A profile into the run's store (called by run_profile.c and run_profile_program.c; calls
 * neither): its metrics as JSON, its findings, resolutions against the baseline. */
#include "run_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

char *kopt_run_profile_metrics_json(const kopt_profile *p)
{
    json_t *ks = json_array();
    char *text;

    if (!p) {
        json_decref(ks);
        return NULL;
    }
    for (int k = 0; k < p->nkernels; k++) {
        json_t *m = json_object();
        for (int i = 0; i < p->kernels[k].metrics.n; i++)
            json_object_set_new(m, p->kernels[k].metrics.m[i].name,
                                json_real(p->kernels[k].metrics.m[i].value));
        json_array_append_new(ks, json_pack("{s:s, s:[i,i,i], s:[i,i,i], s:o}", "kernel",
                              p->kernels[k].kernel, "grid", p->kernels[k].grid[0],
                              p->kernels[k].grid[1], p->kernels[k].grid[2], "block",
                              p->kernels[k].block[0], p->kernels[k].block[1],
                              p->kernels[k].block[2], "metrics", m));
    }
    text = json_dumps(ks, JSON_COMPACT);
    json_decref(ks);
    return text;
}

/* The profile and findings into the store; resolutions against the baseline (the
 * profile's own, else the candidate profiled most recently). A PyTorch program's: its
 * record with the analysis, timed by its forward. */
void kopt__run_profile_store(kopt_run *run, kopt_run_profile *s, kopt_ctx *ctx)
{
    kopt_store_profile sp;
    kopt_store_finding *f = NULL;
    int nf = s->an ? s->an->findings.n : 0, program = s->program_json != NULL;
    char *mjs;

    if (!run->store || s->static_only ||
        (!program && (!s->eval || s->eval->verdict != KOPT_VERDICT_OK)))
        return;
    mjs = program ? NULL : kopt_run_profile_metrics_json(s->prof);
    memset(&sp, 0, sizeof(sp));
    sp.problem_hash = s->prob->hash;
    sp.candidate_hash = s->subject->hash;
    sp.eval_id = s->eval ? s->eval->eval_id : 0;
    sp.source = program ? "program" : s->prof ? s->prof->source : "static";
    sp.median_ms = s->eval ? s->eval->timing.median_ms : s->program_ms;
    sp.collect_ms = s->prof ? s->prof->collect_ms : 0;
    sp.passes = s->prof ? s->prof->passes : 0;
    sp.metrics_json = program ? s->program_json : mjs;
    sp.baseline_hash = s->baseline_hash[0] ? s->baseline_hash : NULL;
    sp.run_id = run->id;
    f = calloc((size_t)nf + 1, sizeof(*f));
    for (int i = 0; f && i < nf; i++) {
        const kopt_finding *x = &s->an->findings.f[i];
        f[i].tool = x->tool;
        f[i].kernel = x->kernel;
        f[i].title = x->title;
        f[i].gain = x->gain;
        f[i].confidence = x->confidence;
    }
    if (!f || kopt_store_put_profile(run->store, ctx, &sp, f, nf, &s->profile_id,
                                     &s->nresolved) != KOPT_OK)
        kopt_log(ctx, KOPT_LOG_WARN, "profile not stored: %s", kopt_errmsg(ctx));
    free(f);
    free(mjs);
}
