/* The profile of a PyTorch program (a problem's PyTorch reference, or a ModelNew .py
 * candidate) through a run: the one place where it plugs into kopt_run_profile_candidate.
 * Not available yet (issue 28, item 1: CUPTI activity over the worker's forward, per kernel
 * and per program); until then it says so plainly instead of handing the Python file to a
 * CUDA compiler. */
#include "run_int.h"

#include <stdio.h>
#include <string.h>

kopt_status kopt__run_profile_program(kopt_run *run, kopt_ctx *ctx, kopt_run_profile *s,
                                      const kopt_run_profile_opts *o)
{
    const char *path = s->subject->path ? strrchr(s->subject->path, '/') : NULL;
    kopt_status rc;

    (void)o;
    path = path ? path + 1 : s->subject->path ? s->subject->path : "(the program)";
    rc = kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "%s: %s is a PyTorch program, and a PyTorch "
                     "program's profile is not available yet (kopt profiles CUDA kernels: "
                     "device-mode and host-mode .cu candidates); no roofline class or advice "
                     "for it", s->prob->name, path);
    return s->detached ? rc : kopt__run_fail(run, KOPT_RUN_FAULT_KOPT, rc);
}
