/* One kopt optimize invocation as a library call (kopt/search.h: kopt_optimize_*): the run,
 * the stored tree and its options, the model, the evaluator, the search, the run's end.
 * The CLI (cli/cmd_optimize.c) and the MCP optimize tools (src/mcp) are thin layers on it.
 * Also the stored options as JSON and read-only views of a stored tree (the manual prompts
 * still waiting for a reply: kopt_optimize_waiting, ask.c). Above search.c in the folder's
 * call order (search_int.h). */
#include "search_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- stored options ------------------------------------------------------------------------ */

char *kopt_search_opts_json(const kopt_search_opts *o)
{
    json_t *j = json_pack("{s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:i,s:i,s:f,s:i,s:i,s:s,s:b,s:b,s:b,"
                          "s:i,s:i,s:i,s:i,s:i,s:b,s:b}",
        "search", kopt_search_policy_name(o->policy), "iterations", o->iterations,
        "proposals", o->proposals, "uct_c", o->uct_c, "widen_c", o->widen_c,
        "widen_alpha", o->widen_alpha, "top_quantile", o->top_quantile,
        "top_extra", o->top_extra, "prune_m", o->prune_m, "prune_eps", o->prune_eps,
        "debug_attempts", o->debug_attempts, "beam_width", o->beam_width,
        "objective", kopt_run_tune_objective_name(o->objective), "no_tools", o->no_tools,
        "no_memory", o->no_memory, "no_tune", o->no_tune, "tune_budget", o->tune_budget,
        "tune_after", o->tune_after, "cute", o->cute, "max_searches", o->max_searches,
        "width", o->width > 1 ? o->width : 1, "rounds", o->rounds, "overlap", o->overlap);
    char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return t;
}

static void get_int(json_t *j, const char *k, int *v)
{
    if (json_is_integer(json_object_get(j, k)))
        *v = (int)json_integer_value(json_object_get(j, k));
}

static void get_num(json_t *j, const char *k, double *v)
{
    if (json_is_number(json_object_get(j, k)))
        *v = json_number_value(json_object_get(j, k));
}

static void get_bool(json_t *j, const char *k, int *v)
{
    if (json_is_boolean(json_object_get(j, k)))
        *v = json_is_true(json_object_get(j, k));
}

void kopt_search_opts_load(kopt_search_opts *o, const char *text, int keep_iterations)
{
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    const char *str;

    if (!j)
        return;
    if ((str = json_string_value(json_object_get(j, "search"))))
        kopt_search_policy_parse(str, &o->policy);
    if (!keep_iterations)
        get_int(j, "iterations", &o->iterations);
    get_int(j, "proposals", &o->proposals);
    get_num(j, "uct_c", &o->uct_c);
    get_num(j, "widen_c", &o->widen_c);
    get_num(j, "widen_alpha", &o->widen_alpha);
    get_num(j, "top_quantile", &o->top_quantile);
    get_int(j, "top_extra", &o->top_extra);
    get_int(j, "prune_m", &o->prune_m);
    get_num(j, "prune_eps", &o->prune_eps);
    get_int(j, "debug_attempts", &o->debug_attempts);
    get_int(j, "beam_width", &o->beam_width);
    if ((str = json_string_value(json_object_get(j, "objective"))))
        kopt_run_tune_objective_parse(str, &o->objective);
    get_bool(j, "no_tools", &o->no_tools);
    get_bool(j, "no_memory", &o->no_memory);
    get_bool(j, "no_tune", &o->no_tune);
    get_int(j, "tune_budget", &o->tune_budget);
    get_int(j, "tune_after", &o->tune_after);
    get_int(j, "cute", &o->cute);
    get_int(j, "max_searches", &o->max_searches);
    get_int(j, "width", &o->width);
    get_bool(j, "rounds", &o->rounds);
    get_bool(j, "overlap", &o->overlap);
    json_decref(j);
}

/* ---- a read-only view ------------------------------------------------------------------------ */

kopt_status kopt_search_view(kopt_search **out, kopt_ctx *ctx, kopt_store *store,
                             int64_t tree_id)
{
    kopt_search *s;
    kopt_search_opts o = KOPT_SEARCH_OPTS_INIT;
    kopt_problem *prob = NULL;
    char *path = NULL, *opts = NULL;
    kopt_status rc;

    *out = NULL;
    if (!store)
        return kopt_seterr(ctx, KOPT_E_INVALID, "optimize tree %lld: no store",
                           (long long)tree_id);
    if ((rc = kopt_store_opt_tree_get(store, ctx, tree_id, &path, &opts)) != KOPT_OK)
        return rc;
    if (!(s = calloc(1, sizeof(*s)))) {
        free(path);
        free(opts);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "search view");
    }
    kopt_search_opts_load(&o, opts, 0);
    s->store = store;
    s->tree_id = tree_id;
    s->o = o;
    s->best = -1;
    /* the problem's name when its folder is still there, else the folder's name */
    if (path && kopt_problem_load(&prob, ctx, path) == KOPT_OK && prob->name)
        s->view_problem = strdup(prob->name);
    else if (path)
        s->view_problem = strdup(strrchr(path, '/') && strrchr(path, '/')[1] ?
                                 strrchr(path, '/') + 1 : path);
    kopt_problem_free(prob);
    free(path);
    free(opts);
    if ((rc = kopt__search_load_tree(s, ctx)) != KOPT_OK) {
        kopt_search_close(s);
        return rc;
    }
    if (s->n == 0) {
        kopt_search_close(s);
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "optimize tree %lld has no nodes",
                           (long long)tree_id);
    }
    kopt__search_derive(s);
    for (int i = 0; i < s->n; i++)
        s->st.pending += s->nodes[i].state == KOPT_SEARCH_PENDING;
    *out = s;
    return KOPT_OK;
}

/* ---- one invocation ----------------------------------------------------------------------- */

struct kopt_optimize {
    kopt_optimize_opts o;
    kopt_run *run;
    kopt_problem *prob;
    kopt_search *search;
    kopt_search_evaluator ev;
    int have_ev;
    int64_t tree_id;
    char workdir[4096];
    char evaluator[16];
    double fake_ref_ms;
    kopt_llm_client *replay_llm;   /* a replay's model when the caller gave none */
    char *start_source;            /* --start: the checked kernel */
};

/* The stored options with what the optimize layer adds (evaluator, workdir). */
static char *tree_options(const kopt_optimize *op)
{
    char *t = kopt_search_opts_json(&op->o.search);
    json_t *j = t ? json_loads(t, 0, NULL) : NULL;
    char *out;

    free(t);
    if (!j)
        return NULL;
    json_object_set_new(j, "evaluator", json_string(op->evaluator));
    json_object_set_new(j, "fake_ref_ms", json_real(op->fake_ref_ms));
    json_object_set_new(j, "workdir", json_string(op->workdir));
    out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return out;
}

/* --gpus: an evaluator per GPU, each with its own session (CPU stand-ins with the scripted
 * evaluator or $KOPT_SCALE_STANDIN=MS; $KOPT_SCALE_STANDIN_STAGGER=MS2 makes the i-th of the
 * list take MS + i * MS2, so that a test sees outcomes arrive apart), spread over them. */
static kopt_status open_spread(kopt_optimize *op, kopt_ctx *ctx)
{
    /* --overlap on one GPU: spread over it alone, whose thread evaluates while this one asks */
    const int n = op->o.ngpus > 0 ? op->o.ngpus : 1, *gpus = op->o.ngpus > 0 ? op->o.gpus
                                                                             : &op->o.live.eval.device;
    const double ms = kopt_scale_standin_env();
    const char *stagger_env = getenv("KOPT_SCALE_STANDIN_STAGGER");
    const double stagger = stagger_env ? strtod(stagger_env, NULL) : 0.0;
    const int standin = ms >= 0 || strcmp(op->evaluator, "fake") == 0;
    kopt_search_evaluator *evs = calloc((size_t)n, sizeof(*evs));
    kopt_tune_where *where = calloc((size_t)n, sizeof(*where));
    kopt_status rc = KOPT_OK;
    int i;

    if (!evs || !where) {
        free(evs);
        free(where);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "optimize --gpus");
    }
    if (!standin && n > 1) {   /* every GPU's ceilings at once; the evaluators find them */
        kopt_ceilings *c = calloc((size_t)n, sizeof(*c));
        if (c && kopt_run_ceilings_many(op->run, ctx, gpus, n, c) != KOPT_OK)
            kopt_log(ctx, KOPT_LOG_INFO, "optimize: the GPUs' ceilings at once: %s",
                     kopt_errmsg(ctx));
        free(c);
    }
    for (i = 0; i < n && rc == KOPT_OK; i++) {
        const int dev = gpus[i];
        char model[64];
        kopt_device_info info;
        where[i].known = 1;
        where[i].device = dev;
        gethostname(where[i].host, sizeof(where[i].host) - 1);
        if (standin) {
            const char *m = kopt_scale_standin_model(dev, model, sizeof(model));
            snprintf(where[i].name, sizeof(where[i].name), "%s", m ? m : "kopt stand-in");
            rc = kopt_search_evaluator_standin(&evs[i], ctx, op->fake_ref_ms, dev,
                                               (ms > 0 ? ms : 0) + i * (stagger > 0 ? stagger : 0),
                                               m);
        } else {
            kopt_search_live_opts lo = op->o.live;
            lo.eval.device = dev;
            lo.spread = 1;
            if (kopt_device_nvml(NULL, dev, &info, NULL) == KOPT_OK)
                snprintf(where[i].name, sizeof(where[i].name), "%.63s", info.name);
            rc = kopt_search_evaluator_live(&evs[i], ctx, op->run, op->prob, &lo);
        }
    }
    if (rc != KOPT_OK) {
        for (int k = 0; k < i; k++)
            kopt_search_evaluator_close(&evs[k]);
    } else {
        rc = kopt_search_evaluator_spread(&op->ev, ctx, evs, where, n);
        if (rc == KOPT_OK)
            kopt_log(ctx, KOPT_LOG_INFO, "optimize: %d %s evaluate, width %d", n,
                     standin ? "stand-in(s)" : "GPU(s)", op->o.search.width);
    }
    free(evs);
    free(where);
    return rc;
}

kopt_status kopt_optimize_open(kopt_optimize **out, kopt_ctx *ctx, const kopt_optimize_opts *o)
{
    kopt_optimize *op = calloc(1, sizeof(*op));
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_store *store;
    char *stored_problem = NULL, *stored_opts = NULL, *opts_text = NULL;
    const char *problem = o->problem, *ev_name = o->evaluator, *wd = o->workdir;
    json_t *sj = NULL;
    kopt_status rc;

    *out = NULL;
    if (!op)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "optimize");
    op->o = *o;
    op->fake_ref_ms = o->fake_ref_ms;
    if (!o->db_path) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "optimize: a store is required (the tree lives "
                         "there)");
        goto fail;
    }
    if ((o->resume && o->replay) || (o->propose_only && o->evaluate_only) ||
        ((o->propose_only || o->evaluate_only) && o->replay) ||
        (!o->resume && !o->replay && !problem)) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "optimize: give a problem, a tree to resume or "
                         "one to replay; propose and evaluate are steps of a resumable tree");
        goto fail;
    }
    if (ev_name && strcmp(ev_name, "live") != 0 && strcmp(ev_name, "fake") != 0) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "optimize: evaluator '%s': want live or fake",
                         ev_name);
        goto fail;
    }
    ro.kind = KOPT_RUN_OPTIMIZE;
    ro.db_path = o->db_path;
    ro.parent_id = o->resume ? o->resume : o->replay;
    ro.device = o->live.eval.device;
    ro.cache_dir = o->live.eval.cache_dir;
    ro.argc = o->argc;
    ro.argv = o->argv;
    if ((rc = kopt_run_open(&op->run, ctx, &ro)) != KOPT_OK)
        goto fail;
    store = kopt_run_store(op->run);
    op->tree_id = o->resume ? o->resume : kopt_run_id(op->run);
    if (o->resume || o->replay) {
        if ((rc = kopt_store_opt_tree_get(store, ctx, o->resume ? o->resume : o->replay,
                                          &stored_problem, &stored_opts)) != KOPT_OK)
            goto fail;
        op->o.search.width = 1;   /* a tree stored before the width was: the plain search */
        op->o.search.overlap = 0; /* as the tree began (so that it grows as it would have) */
        kopt_search_opts_load(&op->o.search, stored_opts, o->keep_iterations);
        if (o->resume && o->search.overlap && !op->o.search.overlap)
            kopt_log(ctx, KOPT_LOG_WARN, "tree %lld began without --overlap and goes on "
                     "without it (each step sees the outcomes of the one before)",
                     (long long)o->resume);
        if (o->resume && o->ngpus > 0 && o->ngpus != op->o.search.width)
            kopt_log(ctx, KOPT_LOG_WARN, "tree %lld searches %d wide, as it began (its width "
                     "is kept so that it grows as it would have); its evaluations go to the "
                     "%d GPU(s) of --gpus", (long long)o->resume, op->o.search.width,
                     o->ngpus);
        sj = stored_opts ? json_loads(stored_opts, 0, NULL) : NULL;
        if (!problem)
            problem = stored_problem;
        if (!ev_name && o->resume)
            ev_name = json_string_value(json_object_get(sj, "evaluator"));
        if (!wd && o->resume)
            wd = json_string_value(json_object_get(sj, "workdir"));
        if (op->fake_ref_ms <= 0 && json_is_number(json_object_get(sj, "fake_ref_ms")))
            op->fake_ref_ms = json_number_value(json_object_get(sj, "fake_ref_ms"));
    } else {
        /* a new tree: as wide as the GPUs it is given (a library caller may set the width) */
        op->o.search.width = o->ngpus > 0 ? o->ngpus : o->search.width > 1 ? o->search.width : 1;
        if (op->o.search.width > KOPT_SEARCH_MAX_WIDTH)
            op->o.search.width = KOPT_SEARCH_MAX_WIDTH;
    }
    if (op->fake_ref_ms <= 0)
        op->fake_ref_ms = 1.0;
    snprintf(op->evaluator, sizeof(op->evaluator), "%s", ev_name ? ev_name : "live");
    if (wd && wd[0])
        snprintf(op->workdir, sizeof(op->workdir), "%s", wd);
    else
        snprintf(op->workdir, sizeof(op->workdir), "kopt-optimize/%lld",
                 (long long)op->tree_id);
    if ((rc = kopt_problem_load(&op->prob, ctx, problem)) != KOPT_OK)
        goto fail;
    if (o->start) {   /* checked before anything is stored: a bad file is an error at once */
        kopt_compile_opts co = KOPT_COMPILE_OPTS_INIT;
        co.arch = op->o.live.eval.arch;
        co.cache_dir = op->o.live.eval.cache_dir;
        if ((rc = kopt_search_start_check(ctx, op->prob, o->start, &co, &op->start_source)) !=
            KOPT_OK)
            goto fail;
        op->o.search.start_source = op->start_source;
        op->o.search.start_name = o->start;
    }
    /* a tree driven by --propose/--evaluate grows in rounds (kept with it for its replay);
     * the caller's rounds (kopt optimize --rounds) are kept too */
    if (o->propose_only || o->evaluate_only || o->search.rounds)
        op->o.search.rounds = 1;
    /* the model is asked while candidates are evaluated, in this invocation: a tree that
     * grows so is not driven by steps of files or of propose and evaluate (its replay would
     * not grow it as they did) */
    if (op->o.search.overlap && (o->manual || o->propose_only || o->evaluate_only)) {
        const char *with = o->manual ? "manual replies (--llm manual)" :
                           o->propose_only ? "--propose" : "--evaluate";
        if (o->resume)
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "optimize: tree %lld grows with --overlap (the "
                             "next step asked while this one is evaluated, in one invocation): "
                             "not with %s", (long long)o->resume, with);
        else
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "optimize: --overlap asks the next step while "
                             "this one is evaluated, in one invocation: not with %s", with);
        goto fail;
    }
    opts_text = tree_options(op);
    if ((rc = kopt_store_opt_tree_put(store, ctx, op->tree_id, op->prob->hash, op->prob->path,
                                      opts_text)) != KOPT_OK ||
        (rc = kopt_mkdirs(ctx, op->workdir)) != KOPT_OK)
        goto fail;
    op->o.live.workdir = op->workdir;
    if (op->o.search.objective != KOPT_TUNE_TIME && op->o.live.energy_s <= 0)
        op->o.live.energy_s = 1.0;
    op->o.live.objective = op->o.search.objective;

    /* the model: none (evaluate), manual files, the caller's, or the recorded replies */
    op->o.search.manual_dir = NULL;
    if (o->evaluate_only || o->create_only) {
        op->o.llm = NULL;
    } else if (o->manual) {
        op->o.search.manual_dir = op->workdir;
        op->o.llm = NULL;
    } else if (!o->llm && o->replay) {
        char spec[64];
        kopt_llm_options lo = KOPT_LLM_OPTIONS_INIT;
        snprintf(spec, sizeof(spec), "replay:%lld", (long long)o->replay);
        lo.load_run = kopt_store_llm_load_run;
        lo.load_user = store;
        if ((rc = kopt_llm_open(&op->replay_llm, ctx, spec, &lo)) != KOPT_OK)
            goto fail;
        op->o.llm = op->replay_llm;
    }
    /* the evaluator: none (propose), the recorded outcomes (replay), scripted, live */
    if (!o->propose_only && !o->create_only) {
        if (o->replay)
            rc = kopt_search_evaluator_replay(&op->ev, ctx, store, o->replay);
        else if (o->ngpus > 0 || (op->o.search.overlap && strcmp(op->evaluator, "live") == 0 &&
                                  !(op->o.live.eval.server && op->o.live.eval.server[0])))
            rc = open_spread(op, ctx);
        else if (strcmp(op->evaluator, "fake") == 0)
            rc = kopt_search_evaluator_fake(&op->ev, ctx, op->fake_ref_ms);
        else
            rc = kopt_search_evaluator_live(&op->ev, ctx, op->run, op->prob, &op->o.live);
        if (rc != KOPT_OK)
            goto fail;
        op->have_ev = 1;
    }
    op->o.search.propose_only = o->propose_only;
    op->o.search.memory_as_of = o->replay ? o->replay : 0;
    op->o.search.replay_of = o->replay;
    op->o.search.cache_dir = op->o.live.eval.cache_dir;
    if ((rc = kopt_search_open(&op->search, ctx, op->prob, store, op->tree_id,
                               &op->o.search)) != KOPT_OK)
        goto fail;
    json_decref(sj);
    free(stored_problem);
    free(stored_opts);
    free(opts_text);
    *out = op;
    return KOPT_OK;
fail:
    json_decref(sj);
    free(stored_problem);
    free(stored_opts);
    free(opts_text);
    if (op->run) {   /* the run records why; the caller still gets the message and detail */
        char why[1024], *detail = strdup(kopt_errdetail(ctx));
        snprintf(why, sizeof(why), "%s", kopt_errmsg(ctx));
        kopt_run_finish(op->run, ctx, KOPT_RUN_FAILED, why);
        kopt_seterr(ctx, rc, "%s", why);
        if (detail)
            kopt_set_errdetail(ctx, detail);
        free(detail);
    }
    kopt_optimize_close(op);
    return rc;
}

kopt_status kopt_optimize_go(kopt_optimize *op, kopt_ctx *ctx, int *exit_code)
{
    const kopt_search_node *b, *root;
    kopt_search_stats st;
    char summary[512];
    int stopped = op->o.search.stop && *op->o.search.stop;

    if (exit_code)
        *exit_code = 0;
    if (!op->o.create_only &&
        kopt_search_go(op->search, ctx, op->o.llm, op->have_ev ? &op->ev : NULL) != KOPT_OK) {
        char why[512];
        snprintf(why, sizeof(why), "%s", kopt_errmsg(ctx));
        kopt_run_finish(op->run, ctx, KOPT_RUN_FAILED, why);
        kopt_seterr(ctx, KOPT_E_ERROR, "%s", why);
        if (exit_code)
            *exit_code = 1;
        return KOPT_E_ERROR;
    }
    stopped = op->o.search.stop && *op->o.search.stop;
    kopt_search_get_stats(op->search, &st);
    b = kopt_search_best(op->search);
    root = kopt_search_node_at(op->search, 0);
    if (op->o.create_only)
        snprintf(summary, sizeof(summary), "tree %lld: started (%s evaluator)",
                 (long long)op->tree_id, op->evaluator);
    else
        snprintf(summary, sizeof(summary), "tree %lld: %d nodes, best %s; %s",
                 (long long)op->tree_id, kopt_search_count(op->search), b ? b->hash : "none",
                 st.stop_reason);
    if (root->state == KOPT_SEARCH_DONE && !root->ok) {
        /* no GPU (SKIPPED), or a reference that does not run: nothing to search from */
        kopt_run_finish(op->run, ctx, root->verdict == KOPT_VERDICT_SKIPPED ? KOPT_RUN_SKIPPED
                        : KOPT_RUN_FAILED, summary);
        if (exit_code)
            *exit_code = kopt_verdict_exit_code(root->failure[0] ? KOPT_VERDICT_ERROR
                                                                 : root->verdict);
        return KOPT_OK;
    }
    kopt_run_finish(op->run, ctx, stopped ? KOPT_RUN_INTERRUPTED : KOPT_RUN_OK, summary);
    return KOPT_OK;
}

void kopt_optimize_close(kopt_optimize *op)
{
    if (!op)
        return;
    kopt_search_close(op->search);
    kopt_search_evaluator_close(op->have_ev ? &op->ev : NULL);
    kopt_llm_close(op->replay_llm);
    kopt_problem_free(op->prob);
    kopt_run_close(op->run);
    free(op->start_source);
    free(op);
}

kopt_search *kopt_optimize_search(kopt_optimize *op) { return op->search; }
const kopt_problem *kopt_optimize_problem(const kopt_optimize *op) { return op->prob; }
int64_t kopt_optimize_tree_id(const kopt_optimize *op) { return op->tree_id; }
int64_t kopt_optimize_run_id(const kopt_optimize *op) { return kopt_run_id(op->run); }
const char *kopt_optimize_workdir(const kopt_optimize *op) { return op->workdir; }
const char *kopt_optimize_evaluator(const kopt_optimize *op) { return op->evaluator; }

kopt_status kopt_search_stored_json(kopt_ctx *ctx, const char *db_path, int64_t tree_id,
                                    int full, char **out)
{
    kopt_store *store = NULL;
    kopt_search *s = NULL;
    char *text = NULL, *path = NULL, *opts = NULL, **names = NULL;
    json_t *doc = NULL, *o, *nodes, *w;
    const char *wd;
    int nw = 0;
    kopt_status rc;

    *out = NULL;
    if (!db_path)
        return kopt_seterr(ctx, KOPT_E_INVALID, "optimize tree %lld: no store",
                           (long long)tree_id);
    if ((rc = kopt_store_open(&store, ctx, db_path)) != KOPT_OK ||
        (rc = kopt_store_opt_tree_get(store, ctx, tree_id, &path, &opts)) != KOPT_OK ||
        (rc = kopt_search_view(&s, ctx, store, tree_id)) != KOPT_OK)
        goto done;
    if (!(text = kopt_search_json(s)) || !(doc = json_loads(text, 0, NULL))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "optimize tree %lld as JSON", (long long)tree_id);
        goto done;
    }
    o = opts ? json_loads(opts, 0, NULL) : NULL;
    json_object_set_new(doc, "options", o ? o : json_object());
    json_object_set_new(doc, "problem_path", json_string(path ? path : ""));
    wd = json_string_value(json_object_get(o, "workdir"));
    w = json_array();
    if (wd && kopt_optimize_waiting(ctx, wd, &names, &nw) == KOPT_OK)
        for (int i = 0; i < nw; i++)
            json_array_append_new(w, json_string(names[i]));
    for (int i = 0; i < nw; i++)
        free(names[i]);
    free(names);
    json_object_set_new(doc, "waiting", w);
    json_object_set_new(json_object_get(doc, "stats"), "waiting",
                        json_integer((json_int_t)json_array_size(w)));
    nodes = json_object_get(doc, "nodes");
    for (int i = 0; full && i < s->n && i < (int)json_array_size(nodes); i++) {
        const kopt_search_node *n = &s->nodes[i];
        json_t *j = json_array_get(nodes, (size_t)i);
        json_object_set_new(j, "source", json_string(n->source ? n->source : ""));
        if (n->log)
            json_object_set_new(j, "log", json_string(n->log));
        if (n->findings)
            json_object_set_new(j, "findings", json_string(n->findings));
        if (n->facts)
            json_object_set_new(j, "facts", json_string(n->facts));
    }
    if (!(*out = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(9))))
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "optimize tree %lld as JSON", (long long)tree_id);
done:
    json_decref(doc);
    free(text);
    free(path);
    free(opts);
    kopt_search_close(s);
    kopt_store_close(store);
    return rc;
}
