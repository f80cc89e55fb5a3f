/* A whole kopt bench suite (kopt/kb.h, kopt_kb_bench): the problems listed, each with its
 * candidate (from the candidates folder, or kopt optimize's best kernel) evaluated through
 * the run, one at a time or spread over GPUs, each row stored as it finishes; a stored suite
 * resumed; the metrics. kopt bench (cli/cmd_bench.c), the MCP tool bench and Python's
 * kopt.bench all run this. docs/kernelbench.md. */
#include "kopt/kb.h"
#include "kopt/search.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kopt_kb_bench_opts_default(kopt_kb_bench_opts *o)
{
    kopt_eval_opts eo = KOPT_EVAL_OPTS_INIT;

    memset(o, 0, sizeof(*o));
    o->eval = eo;
    o->iterations = 4;
}

/* The suite and, with gpus, the problems waiting for an evaluation. */
typedef struct bench {
    kopt_kb_suite s;
    kopt_problem **probs;
    kopt_candidate **cands;
    char **cpaths;
    int npending;
} bench;

/* gpus: an evaluation finished (on the caller's thread, stored by the run already). */
static void gpu_done(void *user, int index, int gpu, kopt_status rc, kopt_eval_result *res,
                     kopt_ctx *ctx)
{
    bench *b = user;
    json_t *row = kopt_kb_eval_row(&b->s, b->probs[index], b->cands[index], b->cpaths[index], 0,
                                   rc, res, ctx);

    json_object_set_new(row, "gpu", json_integer(gpu));
    kopt_kb_suite_add(&b->s, b->probs[index]->name, row);
    kopt_eval_result_free(res);
}

/* kopt optimize on one problem under the suite's budget: *best_path (malloc'd) its best
 * kernel, written beside the search's other files as NAME.cu, or NULL when no node beat the
 * reference (the row is then the reference against itself); *info the tree's summary. */
static kopt_status optimize_one(kopt_ctx *ctx, const kopt_kb_bench_opts *o,
                                const kopt_eval_opts *eo, kopt_llm_client *llm,
                                const char *problem_dir, const char *name, char **best_path,
                                json_t **info)
{
    kopt_optimize_opts oo = KOPT_OPTIMIZE_OPTS_INIT;
    kopt_optimize *op = NULL;
    kopt_search *search;
    const kopt_search_node *best, *root;
    kopt_search_stats st;
    char file[512], *path = NULL;
    int vcode = 0;
    kopt_status rc;

    *best_path = NULL;
    *info = NULL;
    oo.search.iterations = o->iterations;
    oo.search.max_wall_s = o->max_wall_s;
    oo.search.stop = o->stop;
    oo.search.overlap = o->overlap;
    oo.live.eval = *eo;
    oo.live.energy_s = 0.0;
    oo.db_path = o->db_path;
    oo.argc = o->argc;
    oo.argv = o->argv;
    oo.problem = problem_dir;
    oo.keep_iterations = 1;
    oo.llm = llm;
    oo.evaluator = o->evaluator;
    oo.fake_ref_ms = o->fake_ref_ms;
    oo.gpus = o->gpus;                 /* the search spreads over the suite's GPUs */
    oo.ngpus = o->ngpus;
    if ((rc = kopt_optimize_open(&op, ctx, &oo)) != KOPT_OK ||
        (rc = kopt_optimize_go(op, ctx, &vcode)) != KOPT_OK)
        goto done;
    search = kopt_optimize_search(op);
    kopt_search_get_stats(search, &st);
    best = kopt_search_best(search);
    root = kopt_search_node_at(search, 0);
    *info = json_pack("{s:I, s:I, s:i, s:i, s:s, s:i}", "tree",
                      (json_int_t)kopt_optimize_tree_id(op), "run",
                      (json_int_t)kopt_optimize_run_id(op), "nodes", kopt_search_count(search),
                      "expansions", st.expansions, "stop", st.stop_reason, "best_node",
                      best ? best->id : -1);
    if (best && root && best != root && best->source) {
        /* the best kernel beside the run's other files: the candidate of the suite's row */
        snprintf(file, sizeof(file), "%s.cu", name);
        if (!(path = kopt_path_join(kopt_optimize_workdir(op), file))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "bench: the optimized kernel's path");
            goto done;
        }
        if ((rc = kopt_file_write(ctx, path, best->source, strlen(best->source))) != KOPT_OK)
            goto done;
        json_object_set_new(*info, "best_ms", json_real(best->time_ms));
        json_object_set_new(*info, "root_ms", json_real(root->time_ms));
        *best_path = path;
        path = NULL;
    }
done:
    free(path);
    kopt_optimize_close(op);
    return rc;
}

/* The model of an optimize suite, when its first search is due. */
static kopt_status open_llm(kopt_ctx *ctx, const kopt_kb_bench_opts *o, int64_t suite,
                            kopt_llm_client **llm)
{
    if (!o->llm_open)
        return kopt_seterr(ctx, KOPT_E_INVALID, "bench: suite %lld runs kopt optimize per "
                           "problem: it needs a model", (long long)suite);
    return o->llm_open(o->llm_user, ctx, llm);
}

/* A suite's options over o's when resumed (o->resume), else o's; the folders in *root and
 * *cands (s_root and s_cands: the stored copies, the caller's to free). */
static kopt_status resolve(bench *b, kopt_ctx *ctx, const kopt_kb_bench_opts *o,
                           kopt_kb_suite_opts *so, const char **root, const char **cands,
                           char **s_root, char **s_cands)
{
    char msg[1024];

    memset(so, 0, sizeof(*so));
    snprintf(so->kind, sizeof(so->kind), "%s", o->kind ? o->kind : "auto");
    snprintf(so->evaluator, sizeof(so->evaluator), "%s", o->evaluator ? o->evaluator : "");
    so->no_compile = o->no_compile;
    so->no_check_sizes = o->eval.skip_check_sizes;
    so->optimize = o->optimize;
    so->iterations = o->iterations;
    so->max_wall_s = o->max_wall_s;
    so->fake_ref_ms = o->fake_ref_ms;
    *root = o->problems;
    *cands = o->candidates;
    if (!o->resume) {
        b->s.suite = kopt_run_id(b->s.run);
        return *root ? KOPT_OK : kopt_seterr(ctx, KOPT_E_INVALID, "bench: no problems folder");
    }
    if (!b->s.store)
        return kopt_seterr(ctx, KOPT_E_INVALID, "bench: resuming suite %lld needs the store",
                           (long long)o->resume);
    if (kopt_kb_suite_resume(&b->s, o->resume, s_root, s_cands, so) != KOPT_OK) {
        snprintf(msg, sizeof(msg), "%s", kopt_errmsg(ctx));   /* an input error */
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s", msg);
    }
    b->s.suite = o->resume;
    *root = *s_root;
    *cands = *s_cands;
    return KOPT_OK;
}

kopt_status kopt_kb_bench(kopt_run *run, kopt_ctx *ctx, const kopt_kb_bench_opts *o,
                          struct json_t **doc)
{
    bench b;
    kopt_kb_suite_opts so;
    kopt_eval_opts eo = o->eval;
    kopt_run_eval_job *pending = NULL;
    kopt_llm_client *llm = NULL;
    const char *root = NULL, *cand_dir = NULL, *kind, *evaluator;
    char *s_root = NULL, *s_cands = NULL, **probs = NULL;
    json_t *options = NULL;
    int np = 0, stopped = 0;
    kopt_status rc;

    *doc = NULL;
    memset(&b, 0, sizeof(b));
    kopt_kb_suite_init(&b.s, run, ctx);
    if ((rc = resolve(&b, ctx, o, &so, &root, &cand_dir, &s_root, &s_cands)) != KOPT_OK)
        goto done;
    kind = so.kind;
    evaluator = so.evaluator[0] ? so.evaluator : NULL;
    eo.skip_check_sizes = so.no_check_sizes;
    eo.torch_compile = !so.no_compile;
    options = kopt_kb_suite_options(&so);
    if (!o->resume && (rc = kopt_kb_suite_begin(&b.s, root, cand_dir, options)) != KOPT_OK)
        goto done;
    if ((np = kopt_kb_list_problems(root, &probs)) <= 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s: %s", root, np < 0 ? "cannot read the folder"
                                                                     : "no problem folders in it");
        np = 0;
        goto done;
    }
    b.s.out = o->text;
    b.s.kind = kind;
    b.s.skip_check = eo.skip_check_sizes;
    if (o->text)
        kopt_kb_suite_print_head(o->text, &b.s, np, root, o->resume != 0, cand_dir,
                                 so.no_compile, so.optimize ? so.iterations : -1, evaluator);
    if (o->ngpus && (!(pending = calloc((size_t)np, sizeof(*pending))) ||
                     !(b.probs = calloc((size_t)np, sizeof(*b.probs))) ||
                     !(b.cands = calloc((size_t)np, sizeof(*b.cands))) ||
                     !(b.cpaths = calloc((size_t)np, sizeof(*b.cpaths))))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "bench: the pending evaluations");
        goto done;
    }
    for (int i = 0; i < np && !stopped; i++) {
        kopt_problem *prob = NULL;
        kopt_candidate *cand = NULL;
        kopt_eval_result *res = NULL;
        char *cpath = NULL;
        const char *base = strrchr(probs[i], '/') ? strrchr(probs[i], '/') + 1 : probs[i];
        json_t *row = NULL, *prev, *opt_info = NULL;

        if (o->stop && *o->stop) {   /* what was done stays stored; resume for the rest */
            stopped = 1;
            break;
        }
        if (kopt_problem_load(&prob, ctx, probs[i]) != KOPT_OK) {
            row = kopt_kb_bench_row(base, NULL, kind, "INVALID", kopt_errmsg(ctx), NULL, "not_run");
        } else if ((prev = json_object_get(b.s.done_rows, prob->name))) {
            row = json_incref(prev);
        } else if (so.optimize && !llm && (rc = open_llm(ctx, o, b.s.suite, &llm)) != KOPT_OK) {
            kopt_problem_free(prob);   /* the model is opened when a search is first due */
            goto done;
        } else if (so.optimize && optimize_one(ctx, o, &eo, llm, probs[i], prob->name, &cpath,
                                               &opt_info) != KOPT_OK) {
            row = kopt_kb_unrun_row(prob, NULL, "optimize", "ERROR", kopt_errmsg(ctx),
                                    b.s.skip_check);
        } else if (so.optimize && !cpath && !(cpath = strdup(prob->ref_path))) {
            row = kopt_kb_unrun_row(prob, NULL, "optimize", "ERROR", "out of memory",
                                    b.s.skip_check);
        } else if (!so.optimize && !(cpath = kopt_kb_find_candidate(prob, cand_dir, kind))) {
            row = kopt_kb_missing_row(prob, cand_dir, kind, b.s.skip_check);
        } else if (kopt_candidate_load(&cand, ctx, cpath, prob) != KOPT_OK) {
            row = kopt_kb_unrun_row(prob, cpath, kind, "INVALID", kopt_errmsg(ctx),
                                    b.s.skip_check);
        } else if (o->ngpus) {         /* evaluated below, spread over the GPUs */
            pending[b.npending].prob = b.probs[b.npending] = prob;
            pending[b.npending].cand = b.cands[b.npending] = cand;
            b.cpaths[b.npending++] = cpath;
            continue;
        } else {
            kopt_status erc = kopt_run_eval(run, ctx, prob, cand, &eo, "bench", &res);
            row = kopt_kb_eval_row(&b.s, prob, cand, cpath, so.optimize, erc, res, ctx);
        }
        if (opt_info) {     /* the search behind an optimize row */
            json_object_set_new(row, "optimize", opt_info);
            opt_info = NULL;
        }
        kopt_kb_suite_add(&b.s, prob ? prob->name : base, row);
        kopt_eval_result_free(res);
        kopt_candidate_free(cand);
        kopt_problem_free(prob);
        free(cpath);
    }
    rc = KOPT_OK;
    if (b.npending && o->stop && *o->stop)
        stopped = 1;                   /* none of them evaluated: a resume does them */
    if (b.npending && !stopped &&
        (rc = kopt_run_eval_many(run, ctx, pending, b.npending, &eo, o->gpus, o->ngpus, "bench",
                                 gpu_done, &b)) != KOPT_OK)
        goto done;
    *doc = kopt_kb_suite_summary(&b.s, root, cand_dir, options, so.no_compile);
    json_object_set(*doc, "rows", b.s.rows);
    if (stopped)
        json_object_set_new(*doc, "interrupted", json_true());
    if (o->text)
        kopt_kb_suite_print_summary(o->text, &b.s, so.no_compile);
done:
    for (int i = 0; i < b.npending; i++) {
        kopt_candidate_free(b.cands[i]);
        kopt_problem_free(b.probs[i]);
        free(b.cpaths[i]);
    }
    free(b.probs);
    free(b.cands);
    free(b.cpaths);
    free(pending);
    for (int i = 0; i < np; i++)
        free(probs[i]);
    free(probs);
    free(s_root);
    free(s_cands);
    kopt_kb_suite_clear(&b.s);
    json_decref(options);
    return rc;
}
