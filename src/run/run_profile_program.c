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

kopt_status kopt__run_profile_program(kopt_run *run, kopt_ctx *ctx, kopt_run_profile *s,
                                      const kopt_run_profile_opts *o)
{
    const char *path = s->subject->path ? strrchr(s->subject->path, '/') : NULL;
    const kopt_candidate *cand = s->subject == s->ref || s->subject->is_reference ? NULL
                                                                          : s->subject;
    kopt_program_analyze_opts po = KOPT_PROGRAM_ANALYZE_OPTS_INIT;
    kopt_program_analysis *a = NULL;
    kopt_program *prog = NULL;
    kopt_ceilings ceil;
    char *text = NULL;
    kopt_status rc;

    path = path ? path + 1 : s->subject->path ? s->subject->path : "(the program)";
    if (s->static_only) {
        rc = kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "%s: the PyTorch program %s has no static "
                         "profile (its kernels are known only once it runs)", s->prob->name,
                         path);
        return s->detached ? rc : kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
    }
    if ((rc = kopt_profile_program(ctx, s->prob, cand, &o->eval, 1, &text)) != KOPT_OK ||
        (rc = kopt_program_from_json(&prog, ctx, text, "the program profile")) != KOPT_OK) {
        rc = kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "%s: the PyTorch program %s was not "
                         "profiled: %s", s->prob->name, path, kopt_errmsg(ctx));
        free(text);
        return s->detached ? rc : kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
    }
    free(text);
    memset(&ceil, 0, sizeof(ceil));
    if (o->eval.ceilings && o->eval.ceilings->valid)
        po.ceil = o->eval.ceilings;
    else if (!s->detached && kopt_run_ceilings(run, ctx, s->device, &ceil) == KOPT_OK)
        po.ceil = &ceil;
    po.problem = s->prob->name;
    po.compute = s->prob->compute;
    po.matmul_like = s->matmul_like;
    po.rtol = kopt_problem_outputs_rtol(s->prob);
    if ((rc = kopt_program_analyze(&a, ctx, prog, &po)) == KOPT_OK) {
        s->an = a->an;                 /* self-contained: its findings own their text */
        a->an = NULL;
        s->an->cls.final = a->cls;     /* the program's class: where its time goes */
        s->program = kopt_program_text(a);
    }
    kopt_program_analysis_free(a);
    kopt_program_free(prog);
    return rc == KOPT_OK || s->detached ? rc : kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
}
