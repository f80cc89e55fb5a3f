/*
 * What one evaluation costs inside an evaluation session (kopt_eval_session: what kopt tune
 * and kopt optimize use), against a one-shot evaluation of the same candidate: opens a
 * session on PROBLEM, evaluates CANDIDATE N times in it, then N times one-shot, and prints
 * each evaluation's wall time, verdict, whether the reference's run was reused and whether
 * the candidate's worker was started ahead (and, on a line of its own, its trace). GAP_MS (default 0) waits between evaluations,
 * as a search does while its model answers or its compiler works.
 * Build (bench/kb_session.sh evalcost does): cc -O2 -Iinclude -o build/session_cost
 *   bench/probe/session_cost.c -Lbuild -lkopt -Wl,-rpath,$PWD/build
 * Usage: session_cost PROBLEM CANDIDATE [N [GAP_MS [ONESHOT]]]  (ONESHOT: the one-shot
 * evaluations, default N)
 */
#include "kopt/kopt.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int one(kopt_ctx *ctx, kopt_eval_session *s, const kopt_problem *p,
               const kopt_candidate *c, const char *label, int i)
{
    kopt_eval_result *r = NULL;
    double t0 = kopt_now_ms();
    kopt_status rc = s ? kopt_eval_session_run(s, ctx, c, &r) : kopt_eval_run(&r, ctx, p, c, NULL);

    if (rc != KOPT_OK) {
        fprintf(stderr, "%s %d: %s\n", label, i, kopt_errmsg(ctx));
        return 1;
    }
    printf("%s %d: %.0f ms, %s, reference %s, worker %s%s\n", label, i, kopt_now_ms() - t0,
           kopt_verdict_name(r->verdict), r->ref_reused ? "reused" : "run",
           r->worker_ahead ? "started ahead" : "started now",
           r->worker_forked ? " (forked by the zygote)" : "");
    if (r->verdict != KOPT_VERDICT_OK)  /* what went wrong, in its own words */
        printf("  message %s %d: %s\n", label, i, r->message);
    if (r->trace)                      /* where it went, step by step (kept in the log) */
        printf("  trace %s %d %s\n", label, i, r->trace);
    kopt_eval_result_free(r);
    return 0;
}

int main(int argc, char **argv)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_problem *p = NULL;
    kopt_candidate *c = NULL;
    kopt_eval_session *s = NULL;
    int n = argc > 3 ? atoi(argv[3]) : 5, gap_ms = argc > 4 ? atoi(argv[4]) : 0, bad = 0;
    int oneshot = argc > 5 ? atoi(argv[5]) : n;

    if (argc < 3) {
        fprintf(stderr, "usage: session_cost PROBLEM CANDIDATE [N [GAP_MS [ONESHOT]]]\n");
        return 2;
    }
    if (kopt_problem_load(&p, ctx, argv[1]) != KOPT_OK ||
        kopt_candidate_load(&c, ctx, argv[2], p) != KOPT_OK ||
        kopt_eval_session_open(&s, ctx, p, NULL) != KOPT_OK) {
        fprintf(stderr, "session_cost: %s\n", kopt_errmsg(ctx));
        return 1;
    }
    for (int i = 1; i <= n; i++) {
        bad |= one(ctx, s, p, c, "session", i);
        usleep((useconds_t)gap_ms * 1000);
    }
    for (int i = 1; i <= oneshot; i++) {
        bad |= one(ctx, NULL, p, c, "one-shot", i);
        usleep((useconds_t)gap_ms * 1000);
    }
    kopt_eval_session_close(s);
    kopt_candidate_free(c);
    kopt_problem_free(p);
    kopt_ctx_free(ctx);
    return bad;
}
