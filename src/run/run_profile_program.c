/* The profile of a PyTorch program (a problem's PyTorch reference, or a ModelNew .py
 * candidate) through a run: the one place where it plugs into kopt_run_profile_candidate
 * (kopt optimize's live evaluator profiles each correct node, the root included). The
 * program's kernels are recorded (kopt_profile_program: one forward traced, ncu's metrics
 * joined) and analyzed (kopt_program_analyze): the analysis's class (the time-weighted class
 * of the program) and findings become the profile's, and its text (the kernel table, host
 * gaps, fusion bytes) is kept in `program` for the planner. Not stored yet: the profile has
 * no evaluation of its own here (its caller evaluated the node). */
#include "run_int.h"

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
    }
    free(text);
    kopt_program_analysis_free(a);
    kopt_program_free(prog);
    return rc == KOPT_OK || s->detached ? rc : kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
}
