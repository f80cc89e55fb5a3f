/* The profile of a PyTorch program (a problem's PyTorch reference, or a ModelNew .py
 * candidate) through a run: the one place where it plugs into kopt_run_profile_candidate
 * (kopt optimize's live evaluator profiles each correct node, the root included). The
 * program's kernels are recorded (kopt_profile_program: one forward traced, ncu's metrics
 * joined) and analyzed (kopt_program_analyze): the analysis's class (the time-weighted class
 * of the program) and findings become the profile's, and its text (the kernel table, host
 * gaps, fusion bytes) is kept in `program` for the planner, and the record with its analysis
 * is stored as a profile of source "program" (timed by the record's forward: the caller
 * evaluated the node, the profile has no evaluation of its own). */
#include "run_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kopt_status kopt_run_program_analyze(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                                     int device, const kopt_ceilings *ceil, const char *record,
                                     kopt_program **prog, kopt_program_analysis **out)
{
    kopt_program_analyze_opts po = KOPT_PROGRAM_ANALYZE_OPTS_INIT;
    kopt_ceilings known;
    kopt_status rc;

    *out = NULL;
    if ((rc = kopt_program_from_json(prog, ctx, record, "the program profile")) != KOPT_OK)
        return rc;
    if (ceil && ceil->valid)
        po.ceil = ceil;
    else if (run && kopt_run_ceilings(run, ctx, device, &known) == KOPT_OK)
        po.ceil = &known;
    po.problem = prob->name;
    po.compute = prob->compute;
    po.matmul_like = kopt_analyze_matmul_like(prob);
    po.rtol = kopt_problem_outputs_rtol(prob);
    return kopt_program_analyze(out, ctx, *prog, &po);
}

char *kopt_run_program_document(const char *record, const kopt_program_analysis *a)
{
    json_t *doc = json_loads(record, 0, NULL);
    char *aj = a ? kopt_program_json(a) : NULL, *out;

    if (!doc) {
        free(aj);
        return NULL;
    }
    json_object_set_new(doc, "analysis", aj ? json_loads(aj, 0, NULL) : json_null());
    free(aj);
    out = json_dumps(doc, JSON_INDENT(1));
    json_decref(doc);
    return out;
}

kopt_status kopt_run_program_store(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                                   const kopt_candidate *subject, kopt_program_analysis *a,
                                   const char *record, int64_t *profile_id, int *nresolved)
{
    kopt_run_profile s;
    kopt_candidate *ref = NULL;
    kopt_status rc = KOPT_OK;

    memset(&s, 0, sizeof(s));
    if (!subject && (rc = kopt_candidate_from_reference(&ref, ctx, prob)) != KOPT_OK)
        return rc;
    s.prob = prob;
    s.subject = subject ? subject : ref;
    s.an = a->an;                                   /* borrowed */
    s.program_ms = a->prog->forward_ms;
    if (!(s.program_json = kopt_run_program_document(record, a)))
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "the program profile is not JSON");
    else
        kopt__run_profile_store(run, &s, ctx);
    if (profile_id)
        *profile_id = s.profile_id;
    if (nresolved)
        *nresolved = s.nresolved;
    free(s.program_json);
    kopt_candidate_free(ref);
    return rc;
}

kopt_status kopt__run_profile_program(kopt_run *run, kopt_ctx *ctx, kopt_run_profile *s,
                                      const kopt_run_profile_opts *o)
{
    const char *path = s->subject->path ? strrchr(s->subject->path, '/') : NULL;
    const kopt_candidate *cand = s->subject == s->ref || s->subject->is_reference ? NULL
                                                                          : s->subject;
    kopt_program_analysis *a = NULL;
    kopt_program *prog = NULL;
    char *text = NULL;
    kopt_status rc;

    path = path ? path + 1 : s->subject->path ? s->subject->path : "(the program)";
    if (s->static_only) {
        rc = kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "%s: the PyTorch program %s has no static "
                         "profile (its kernels are known only once it runs)", s->prob->name,
                         path);
        return s->detached ? rc : kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
    }
    /* detached (one GPU of several, on a thread of its own): the run is not touched */
    if ((rc = kopt_profile_program(ctx, s->prob, cand, &o->eval, 1, &text)) != KOPT_OK ||
        (rc = kopt_run_program_analyze(s->detached ? NULL : run, ctx, s->prob, s->device,
                                       o->eval.ceilings, text, &prog, &a)) != KOPT_OK) {
        rc = kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "%s: the PyTorch program %s was not "
                         "profiled: %s", s->prob->name, path, kopt_errmsg(ctx));
    } else {
        s->an = a->an;                 /* self-contained: its findings own their text */
        a->an = NULL;
        s->an->cls.final = a->cls;     /* the program's class: where its time goes */
        s->program = kopt_program_text(a);
        s->program_json = kopt_run_program_document(text, a);
        s->program_ms = prog->forward_ms;
        if (!s->detached)
            kopt__run_profile_store(run, s, ctx);
    }
    free(text);
    kopt_program_analysis_free(a);
    kopt_program_free(prog);
    return rc == KOPT_OK || s->detached ? rc : kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
}
