/*
 * Where an evaluation's time goes when several GPUs evaluate at once (issue 17: a tuning run
 * on 4 GPUs spent ~150 ms per evaluation against ~78 ms on one). Opens one evaluation session
 * per GPU 0..NSLOTS-1 with kopt tune's evaluation options (one trial, 30 ms timing budget,
 * the reference's timed inputs run once), then evaluates CANDIDATE M times on every GPU at
 * once, one thread per session, and prints per GPU the mean wall time per evaluation and the
 * mean of every step of its trace (parent, reference, candidate), the first evaluation left
 * out; then the first evaluation of each session (the session's start: its workers, the
 * reference's run) with its steps of 20 ms or more. Run it with NSLOTS=1 and then the GPU count: the steps that grow are what the slots
 * share.
 * Build: cc -O2 -Iinclude -o build/slots_cost bench/probe/slots_cost.c -Lbuild -lkopt
 *          -ljansson -lpthread -Wl,-rpath,'$ORIGIN'
 * Usage: slots_cost PROBLEM CANDIDATE[,CANDIDATE...] NSLOTS M [NAME=VALUE sizes...]
 * With several candidates, evaluation i runs candidate i modulo their number (a new module
 * in the worker each time, as in a tuning run).
 */
#include "kopt/kopt.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 64

typedef struct slot {
    int device, m;
    kopt_eval_session *s;
    const kopt_problem *p;
    kopt_candidate **c;
    int nc;
    double wall;                         /* summed over evaluations 2..M */
    double first_wall;                   /* the first evaluation (the session's start) */
    char first_steps[2048];              /* its trace steps of 20 ms or more */
    kopt_worker_setup ref_setup, cand_setup;
    int n, bad;
    char names[MAX_STEPS][48];
    double sums[MAX_STEPS];
    int nsteps;
} slot;

static void add_step(slot *sl, const char *who, const char *step, double ms)
{
    char name[48];
    snprintf(name, sizeof(name), "%s.%s", who, step);
    for (int i = 0; i < sl->nsteps; i++)
        if (strcmp(sl->names[i], name) == 0) {
            sl->sums[i] += ms;
            return;
        }
    if (sl->nsteps < MAX_STEPS) {
        snprintf(sl->names[sl->nsteps], sizeof(sl->names[0]), "%s", name);
        sl->sums[sl->nsteps++] = ms;
    }
}

static void *run_slot(void *arg)
{
    slot *sl = arg;
    kopt_ctx *ctx = kopt_ctx_new();

    for (int i = 0; i < sl->m; i++) {
        kopt_eval_result *r = NULL;
        double t0 = kopt_now_ms();
        if (kopt_eval_session_run(sl->s, ctx, sl->c[i % sl->nc], &r) != KOPT_OK) {
            fprintf(stderr, "gpu %d: %s\n", sl->device, kopt_errmsg(ctx));
            sl->bad = 1;
            break;
        }
        if (r->verdict != KOPT_VERDICT_OK)
            sl->bad = 1;
        if (i == 0) {
            json_t *t = r->trace ? json_loads(r->trace, 0, NULL) : NULL;
            const char *who;
            json_t *steps;
            size_t used = 0;
            sl->first_wall = kopt_now_ms() - t0;
            sl->ref_setup = r->ref_setup;
            sl->cand_setup = r->cand_setup;
            json_object_foreach(t, who, steps) {
                const char *step;
                json_t *v;
                json_object_foreach(steps, step, v)
                    if (json_is_number(v) && json_number_value(v) >= 20 &&
                        used < sizeof(sl->first_steps) - 80)
                        used += (size_t)snprintf(sl->first_steps + used,
                                                 sizeof(sl->first_steps) - used, " %s.%s=%.0f",
                                                 who, step, json_number_value(v));
            }
            json_decref(t);
        }
        if (i > 0) {
            json_t *t = r->trace ? json_loads(r->trace, 0, NULL) : NULL;
            const char *who;
            json_t *steps;
            sl->wall += kopt_now_ms() - t0;
            sl->n++;
            json_object_foreach(t, who, steps) {
                const char *step;
                json_t *v;
                json_object_foreach(steps, step, v)
                    if (json_is_number(v))
                        add_step(sl, who, step, json_number_value(v));
            }
            json_decref(t);
        }
        kopt_eval_result_free(r);
    }
    kopt_ctx_free(ctx);
    return NULL;
}

int main(int argc, char **argv)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_problem *p = NULL;
    kopt_candidate *c[8];
    int nc = 0;
    kopt_vars sizes = KOPT_VARS_INIT;
    slot sl[16];
    pthread_t th[16];
    int nslots, m, bad = 0;
    double t0;

    if (argc < 5) {
        fprintf(stderr, "usage: slots_cost PROBLEM CANDIDATE NSLOTS M [NAME=VALUE...]\n");
        return 2;
    }
    nslots = atoi(argv[3]);
    m = atoi(argv[4]);
    if (nslots < 1 || nslots > 16 || m < 2)
        return 2;
    for (int i = 5; i < argc; i++) {
        char *name = NULL;
        int64_t value;
        if (kopt_vars_parse_assign(ctx, argv[i], &name, &value) != KOPT_OK ||
            kopt_vars_set(&sizes, name, value) != KOPT_OK) {
            fprintf(stderr, "slots_cost: %s: %s\n", argv[i], kopt_errmsg(ctx));
            return 2;
        }
        free(name);
    }
    if (kopt_problem_load(&p, ctx, argv[1]) != KOPT_OK) {
        fprintf(stderr, "slots_cost: %s\n", kopt_errmsg(ctx));
        return 1;
    }
    for (char *path = strtok(argv[2], ","); path && nc < 8; path = strtok(NULL, ","))
        if (kopt_candidate_load(&c[nc++], ctx, path, p) != KOPT_OK) {
            fprintf(stderr, "slots_cost: %s\n", kopt_errmsg(ctx));
            return 1;
        }
    memset(sl, 0, sizeof(sl));
    for (int i = 0; i < nslots; i++) {
        kopt_eval_opts o = KOPT_EVAL_OPTS_INIT;
        o.trials = 1;
        o.budget_ms = 30;
        o.warmup_ms = 10;
        o.min_reps = 5;
        o.no_ref_timing = 1;
        o.device = i;
        o.sizes = sizes.n ? &sizes : NULL;
        o.skip_check_sizes = 1;
        sl[i].device = i;
        sl[i].m = m;
        sl[i].p = p;
        sl[i].c = c;
        sl[i].nc = nc;
        if (kopt_eval_session_open(&sl[i].s, ctx, p, &o) != KOPT_OK) {
            fprintf(stderr, "slots_cost: gpu %d: %s\n", i, kopt_errmsg(ctx));
            return 1;
        }
    }
    t0 = kopt_now_ms();
    for (int i = 0; i < nslots; i++)
        pthread_create(&th[i], NULL, run_slot, &sl[i]);
    for (int i = 0; i < nslots; i++)
        pthread_join(th[i], NULL);
    printf("%d GPU(s) at once, %d evaluations each: %.0f ms in all\n", nslots, m,
           kopt_now_ms() - t0);
    for (int i = 0; i < nslots; i++) {
        bad |= sl[i].bad;
        printf("gpu %d: %.1f ms per evaluation (evaluations 2-%d)%s\n", i,
               sl[i].n ? sl[i].wall / sl[i].n : 0, m, sl[i].bad ? ", NOT ALL OK" : "");
        printf("  first: %.0f ms;%s\n", sl[i].first_wall, sl[i].first_steps);
        printf("  first: workers' start (ms): reference context %.0f exec %.0f total %.0f; "
               "candidate context %.0f exec %.0f total %.0f\n", sl[i].ref_setup.context_ms,
               sl[i].ref_setup.exec_ms, sl[i].ref_setup.total_ms, sl[i].cand_setup.context_ms,
               sl[i].cand_setup.exec_ms, sl[i].cand_setup.total_ms);
    }
    /* the steps, averaged over every slot */
    for (int k = 0; k < sl[0].nsteps; k++) {
        double sum = 0;
        int n = 0;
        for (int i = 0; i < nslots; i++)
            for (int j = 0; j < sl[i].nsteps; j++)
                if (strcmp(sl[i].names[j], sl[0].names[k]) == 0) {
                    sum += sl[i].sums[j] / (sl[i].n ? sl[i].n : 1);
                    n++;
                }
        if (n && sum / n >= 0.2)
            printf("  %-34s %7.1f ms\n", sl[0].names[k], sum / n);
    }
    for (int i = 0; i < nslots; i++)
        kopt_eval_session_close(sl[i].s);
    for (int i = 0; i < nc; i++)
        kopt_candidate_free(c[i]);
    kopt_problem_free(p);
    kopt_vars_free(&sizes);
    kopt_ctx_free(ctx);
    return bad;
}
