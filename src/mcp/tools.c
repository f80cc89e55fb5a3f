/*
 * The MCP server's tools, each through the run API as the CLI's verb would do it: a run
 * recorded in the server's store per call, the same evaluation options and checks. The
 * optimize tools and CuTe search are in tools_optimize.c, bench in tools_bench.c; their
 * schemas are here.
 */
#include "mcp_int.h"

#include "kopt/search.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEXT_MAX 240   /* a summary line's message part */

/* ---- helpers ------------------------------------------------------------------------------ */

/* "sizes": {"N": 1024} into *v; the message names the field. */
static kopt_status sizes_arg(kopt__mcp_call *c, kopt_ctx *ctx, kopt_vars *v)
{
    json_t *o = json_object_get(c->args, "sizes"), *x;
    const char *k;

    json_object_foreach(o, k, x) {
        if (!json_is_integer(x))
            return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.sizes.%s: expected an integer",
                               k);
        kopt_vars_set(v, k, (int64_t)json_integer_value(x));
    }
    return KOPT_OK;
}

/* Open a run of `kind` in the server's store, recorded with the command "mcp TOOL ...". */
static kopt_status open_run(kopt__mcp_call *c, kopt_ctx *ctx, kopt_run_kind kind,
                            const char *a1, const char *a2, kopt_run **run)
{
    const kopt_mcp_opts *o = kopt__mcp_opts(c);
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    char *argv[4] = {"mcp", (char *)c->tool->name, (char *)a1, (char *)a2};

    ro.kind = kind;
    ro.db_path = o->db_path;
    ro.db_optional = 1;
    ro.argc = 2 + (a1 != NULL) + (a1 && a2);
    ro.argv = argv;
    ro.cache_dir = o->cache_dir;
    ro.device = (int)kopt__mcp_arg_int(c, "device", 0);
    return kopt_run_open(run, ctx, &ro);
}

/* The candidate of an eval or profile call: candidate_path, or candidate_source written to
 * a private temporary folder (*tmpdir, removed by the caller); neither: NULL (the
 * reference). */
kopt_status kopt__mcp_load_candidate(kopt__mcp_call *c, kopt_ctx *ctx,
                                     const kopt_problem *prob, kopt_candidate **out,
                                     char *tmpdir, size_t n)
{
    const char *path = kopt__mcp_arg_str(c, "candidate_path");
    const char *src = kopt__mcp_arg_str(c, "candidate_source");
    char file[4200];
    const char *base = getenv("TMPDIR");
    kopt_status rc;

    *out = NULL;
    tmpdir[0] = '\0';
    if (path && src)
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments: give candidate_path or "
                           "candidate_source, not both");
    if (path)
        return kopt_candidate_load(out, ctx, path, prob);
    if (!src)
        return KOPT_OK;
    snprintf(tmpdir, n, "%s/kopt-mcp-XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {   /* mode 0700: the source stays private */
        tmpdir[0] = '\0';
        return kopt_seterr(ctx, KOPT_E_IO, "a temporary folder for the candidate source");
    }
    snprintf(file, sizeof(file), "%s/candidate.cu", tmpdir);
    if ((rc = kopt_file_write(ctx, file, src, strlen(src))) != KOPT_OK)
        return rc;
    return kopt_candidate_load(out, ctx, file, prob);
}

void kopt__mcp_remove_tmp(const char *tmpdir)
{
    char file[4200];

    if (!tmpdir[0])
        return;
    snprintf(file, sizeof(file), "%s/candidate.cu", tmpdir);
    unlink(file);
    rmdir(tmpdir);
}

/* The verdict line of an evaluation. */
static void eval_summary(kopt_buf *t, const kopt_eval_result *r)
{
    kopt_buf_printf(t, "%s: %.*s", kopt_verdict_name(r->verdict), TEXT_MAX, r->message);
    if (r->timing.n)
        kopt_buf_printf(t, "; median %.4f ms", r->timing.median_ms);
    if (r->speedup > 0)
        kopt_buf_printf(t, ", %.2fx the reference", r->speedup);
    if (r->roofline.valid)
        kopt_buf_printf(t, ", %.1f%% of the %s-bound limit", r->roofline.pct_of_bound,
                        r->roofline.limiter);
}

/* ---- list_problems ------------------------------------------------------------------------ */

static json_t *problem_json(kopt_ctx *ctx, const char *dir)
{
    kopt_problem *p = NULL;
    json_t *o = json_pack("{s:s}", "path", dir), *cands = json_array(), *tmpls = json_array(),
           *sizes = json_object();
    DIR *d;
    struct dirent *e;

    if (kopt_problem_load(&p, ctx, dir) != KOPT_OK) {
        json_object_set_new(o, "error", json_string(kopt_errmsg(ctx)));
        json_decref(cands);
        json_decref(tmpls);
        json_decref(sizes);
        return o;
    }
    json_object_set_new(o, "name", json_string(p->name));
    json_object_set_new(o, "description", json_string(p->description ? p->description : ""));
    for (int i = 0; i < p->sizes.n; i++)
        json_object_set_new(sizes, p->sizes.names[i], json_integer(p->sizes.values[i]));
    json_object_set_new(o, "sizes", sizes);
    json_object_set_new(o, "reference", json_string(p->ref_path));
    if ((d = opendir(dir)) != NULL) {
        while ((e = readdir(d)) != NULL) {
            size_t len = strlen(e->d_name);
            char *path;
            kopt_candidate *cand = NULL;
            if (len < 4 || strcmp(e->d_name + len - 3, ".cu") != 0)
                continue;
            path = kopt_path_join(dir, e->d_name);
            if (path && strcmp(path, p->ref_path) != 0 &&
                kopt_candidate_load(&cand, ctx, path, p) == KOPT_OK)
                json_array_append_new(cand->ntemplate_params ? tmpls : cands,
                                      json_string(path));
            kopt_candidate_free(cand);
            free(path);
        }
        closedir(d);
    }
    json_object_set_new(o, "candidates", cands);
    json_object_set_new(o, "templates", tmpls);
    kopt_problem_free(p);
    return o;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "path")),
                  json_string_value(json_object_get(*(json_t *const *)b, "path")));
}

static kopt_status t_list_problems(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *t)
{
    const char *dir = kopt__mcp_arg_str(c, "dir");
    json_t *arr = json_array(), **items = NULL;
    DIR *d;
    struct dirent *e;
    size_t n = 0, cap = 0;

    if (!dir)
        dir = kopt__mcp_opts(c)->examples_dir ? kopt__mcp_opts(c)->examples_dir : "examples";
    if (!(d = opendir(dir))) {
        json_decref(arr);
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "arguments.dir: cannot open folder '%s'",
                           dir);
    }
    while ((e = readdir(d)) != NULL) {
        char *sub = kopt_path_join(dir, e->d_name), *pj = sub ? kopt_path_join(sub, "problem.json")
                                                              : NULL;
        if (e->d_name[0] != '.' && sub && kopt__mcp_is_dir(sub) && pj && access(pj, R_OK) == 0) {
            if (n == cap) {
                json_t **grown = realloc(items, (cap = cap ? 2 * cap : 16) * sizeof(*items));
                if (!grown)
                    break;
                items = grown;
            }
            items[n++] = problem_json(ctx, sub);
        }
        free(sub);
        free(pj);
    }
    closedir(d);
    if (n)
        qsort(items, n, sizeof(*items), by_path);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, items[i]);
    free(items);
    kopt_buf_printf(t, "%zu problem(s) in %s:", n, dir);
    for (size_t i = 0; i < json_array_size(arr); i++)
        kopt_buf_printf(t, " %s", json_string_value(json_object_get(json_array_get(arr, i),
                                                                    "name")));
    *out = json_pack("{s:s, s:o}", "dir", dir, "problems", arr);
    return KOPT_OK;
}

/* ---- eval and profile --------------------------------------------------------------------- */

kopt_status kopt__mcp_subject_open(subject *s, kopt__mcp_call *c, kopt_ctx *ctx,
                                   kopt_run_kind kind, kopt_eval_opts *eo)
{
    const char *cand_name = kopt__mcp_arg_str(c, "candidate_path");
    json_t *seed = json_object_get(c->args, "seed");
    kopt_status rc;

    if (!cand_name && kopt__mcp_arg_str(c, "candidate_source"))
        cand_name = "(source text)";
    memset(s, 0, sizeof(*s));
    if ((rc = kopt_problem_load(&s->prob, ctx, kopt__mcp_arg_str(c, "problem"))) != KOPT_OK ||
        (rc = kopt__mcp_load_candidate(c, ctx, s->prob, &s->cand, s->tmpdir,
                                       sizeof(s->tmpdir))) != KOPT_OK || (rc = sizes_arg(c, ctx, &s->sizes)) != KOPT_OK)
        return rc;
    eo->sizes = s->sizes.n ? &s->sizes : NULL;
    eo->trials = (int)kopt__mcp_arg_int(c, "trials", eo->trials);
    if (eo->trials < 1 || eo->trials > 16)
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.trials: 1 to 16");
    if (json_is_integer(seed))
        eo->seed = (uint64_t)json_integer_value(seed);
    eo->device = (int)kopt__mcp_arg_int(c, "device", 0);
    eo->cache_dir = kopt__mcp_opts(c)->cache_dir;
    return open_run(c, ctx, kind, kopt__mcp_arg_str(c, "problem"), cand_name, &s->run);
}

void kopt__mcp_subject_close(subject *s)
{
    kopt_run_close(s->run);
    kopt__mcp_remove_tmp(s->tmpdir);
    kopt_candidate_free(s->cand);
    kopt_problem_free(s->prob);
    kopt_vars_free(&s->sizes);
}

static kopt_status t_eval(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *t)
{
    kopt_eval_opts eo = KOPT_EVAL_OPTS_INIT;
    kopt_eval_result *r = NULL;
    subject s;
    kopt_status rc;

    eo.no_timing = json_is_true(json_object_get(c->args, "no_timing"));
    if ((rc = kopt__mcp_subject_open(&s, c, ctx, KOPT_RUN_EVAL, &eo)) != KOPT_OK)
        goto done;
    kopt__mcp_progress(c, 0, 1, "compiling, checking and timing");
    if ((rc = kopt_run_eval(s.run, ctx, s.prob, s.cand, &eo, NULL, &r)) != KOPT_OK)
        goto done;
    kopt_run_finish(s.run, ctx, r->verdict == KOPT_VERDICT_SKIPPED ? KOPT_RUN_SKIPPED
                                                                     : KOPT_RUN_OK, NULL);
    kopt__mcp_progress(c, 1, 1, kopt_verdict_name(r->verdict));
    *out = kopt__mcp_parsed(kopt_eval_result_json(r));
    json_object_set_new(*out, "run_id", json_integer((json_int_t)kopt_run_id(s.run)));
    eval_summary(t, r);
    if (kopt_run_id(s.run))
        kopt_buf_printf(t, " (run %lld: kopt://run/%lld)", (long long)kopt_run_id(s.run),
                        (long long)kopt_run_id(s.run));
done:
    kopt_eval_result_free(r);
    kopt__mcp_subject_close(&s);
    return rc;
}

static json_t *findings_json(const kopt_analysis *an)
{
    json_t *arr = json_array();

    for (int i = 0; an && i < an->findings.n; i++) {
        const kopt_finding *f = &an->findings.f[i];
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:f, s:s?, "
                              "s:f}", "tool", f->tool, "kernel", f->kernel, "title", f->title,
                              "seen", f->seen, "why", f->why, "change", f->change, "gain",
                              f->gain, "gain_how", f->gain_how, "confidence", f->confidence));
    }
    return arr;
}

static kopt_status t_profile(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *t)
{
    kopt_run_profile_opts po = KOPT_RUN_PROFILE_OPTS_INIT;
    kopt_run_profile *p = NULL;
    kopt_candidate *parent = NULL;
    const char *par = kopt__mcp_arg_str(c, "parent");
    subject s;
    kopt_status rc;

    po.static_only = json_is_true(json_object_get(c->args, "static"));
    if ((rc = kopt__mcp_subject_open(&s, c, ctx, KOPT_RUN_PROFILE, &po.eval)) != KOPT_OK)
        goto done;
    if (par && strcmp(par, "reference") == 0)
        po.parent_is_reference = 1;
    else if (par && (rc = kopt_candidate_load(&parent, ctx, par, s.prob)) != KOPT_OK)
        goto done;
    po.parent = parent;
    kopt__mcp_progress(c, 0, 1, "checking, then profiling");
    rc = kopt_run_profile_candidate(s.run, ctx, s.prob, s.cand, &po, &p);
    if (rc != KOPT_OK)
        goto done;
    kopt_run_finish(s.run, ctx, p->eval && p->eval->verdict == KOPT_VERDICT_SKIPPED ?
                    KOPT_RUN_SKIPPED : KOPT_RUN_OK, NULL);
    kopt__mcp_progress(c, 1, 1, "analyzed");
    *out = json_pack("{s:I, s:I, s:b, s:b, s:s, s:s, s:s}", "run_id",
                     (json_int_t)kopt_run_id(s.run), "profile_id", (json_int_t)p->profile_id,
                     "stopped", p->stopped, "static_only", p->static_only, "sass_note",
                     p->sass_note, "metrics_note", p->metrics_note, "static_note",
                     p->static_note);
    json_object_set_new(*out, "evaluation",
                        p->eval ? kopt__mcp_parsed(kopt_eval_result_json(p->eval)) : json_null());
    json_object_set_new(*out, "metrics",
                        p->prof ? kopt__mcp_parsed(kopt_run_profile_metrics_json(p->prof))
                                : json_null());
    json_object_set_new(*out, "findings", findings_json(p->an));
    if (p->eval)
        eval_summary(t, p->eval);
    else
        kopt_buf_printf(t, "static profile");
    kopt_buf_printf(t, "; %d finding(s)", p->an ? p->an->findings.n : 0);
    for (int i = 0; p->an && i < p->an->findings.n && i < 3; i++)
        kopt_buf_printf(t, "%s %s (%.0f%%: %s)", i ? "," : ":", p->an->findings.f[i].tool,
                        p->an->findings.f[i].gain * 100, p->an->findings.f[i].title);
done:
    kopt_run_profile_free(p);
    kopt_candidate_free(parent);
    kopt__mcp_subject_close(&s);
    return rc;
}

/* ---- tune --------------------------------------------------------------------------------- */

typedef struct tune_progress {
    kopt__mcp_call *c;
    const kopt_run_tune *t;
} tune_progress;

static void on_tune_progress(void *user, int shape, int nshapes, const kopt_tune_space *space,
                             const kopt_tune_progress *p)
{
    tune_progress *tp = user;
    char line[512];

    (void)nshapes;
    if (!p || !tp->t)
        return;
    kopt_run_tune_progress_text(tp->t, shape, space, p, line, sizeof(line));
    kopt__mcp_progress(tp->c, (double)(p->evaluated + p->cached), (double)p->budget, line);
}

static kopt_status t_tune(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *t)
{
    const kopt_mcp_opts *mo = kopt__mcp_opts(c);
    kopt_run_tune_opts o;
    kopt_run_tune *tr = NULL;
    kopt_run *run = NULL;
    kopt_vars sizes = KOPT_VARS_INIT;
    tune_progress tp = {c, NULL};
    const char *replay = kopt__mcp_arg_str(c, "replay");
    json_int_t budget = kopt__mcp_arg_int(c, "budget", 50), seed = kopt__mcp_arg_int(c, "seed", 1);
    kopt_status rc;

    kopt_run_tune_opts_default(&o);
    if (budget < 1 || budget > mo->max_tune_budget) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "arguments.budget: 1 to %d evaluations (this "
                         "server's bound)", mo->max_tune_budget);
        goto done;
    }
    if (!replay && (!kopt__mcp_arg_str(c, "problem") || !kopt__mcp_arg_str(c, "template"))) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "arguments: a live tune needs problem and "
                         "template (or give replay)");
        goto done;
    }
    if ((rc = sizes_arg(c, ctx, &sizes)) != KOPT_OK)
        goto done;
    o.problem_path = kopt__mcp_arg_str(c, "problem");
    o.template_path = kopt__mcp_arg_str(c, "template");
    o.replay = replay;
    o.strategy = kopt__mcp_arg_str(c, "strategy") ? kopt__mcp_arg_str(c, "strategy") : o.strategy;
    if (!kopt_tune_strategy_find(o.strategy)) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "arguments.strategy: unknown strategy '%s'",
                         o.strategy);
        goto done;
    }
    o.seed = (uint64_t)seed;
    o.budget = (int)budget;
    o.overrides = &sizes;
    o.eval.device = (int)kopt__mcp_arg_int(c, "device", 0);
    o.eval.cache_dir = mo->cache_dir;
    o.progress = on_tune_progress;
    o.progress_user = &tp;
    o.stop = &c->cancelled;
    o.replay_delay_ms = mo->replay_delay_ms;
    if ((rc = open_run(c, ctx, KOPT_RUN_TUNE, replay ? replay : o.problem_path,
                       replay ? NULL : o.template_path, &run)) != KOPT_OK ||
        (rc = kopt_run_tune_open(&tr, run, ctx, &o)) != KOPT_OK)
        goto done;
    tp.t = tr;
    if (!tr->replay && !tr->has_device) {   /* no GPU: the space, and why */
        *out = kopt__mcp_parsed(kopt_run_tune_space_json(tr, 1));
        json_object_set_new(*out, "skipped", json_true());
        json_object_set_new(*out, "reason", json_string(tr->why_no_device));
        kopt_run_finish(run, ctx, KOPT_RUN_SKIPPED, NULL);
        kopt_buf_printf(t, "skipped: no GPU (%.*s); the search space is in the result",
                        TEXT_MAX, tr->why_no_device);
        goto done;
    }
    if ((rc = kopt_run_tune_go(tr, ctx)) != KOPT_OK)
        goto done;
    kopt_run_finish(run, ctx, tr->interrupted ? KOPT_RUN_INTERRUPTED : KOPT_RUN_OK, NULL);
    *out = kopt__mcp_parsed(kopt_run_tune_json(tr));
    json_object_set_new(*out, "run_id", json_integer((json_int_t)kopt_run_id(run)));
    json_object_set_new(*out, "interrupted", json_boolean(tr->interrupted));
    if (tr->nrun > 0 && tr->shapes[0].res && tr->shapes[0].res->has_best) {
        char *label = kopt_tune_space_label(tr->shapes[0].space, tr->shapes[0].res->best_point);
        kopt_buf_printf(t, "best %.4g %s with %s after %zu evaluations%s",
                        kopt_tune_outcome_objective(&tr->shapes[0].res->best, tr->objective),
                        tr->objective == KOPT_TUNE_ENERGY ? "mJ" : "ms", label ? label : "?",
                        tr->shapes[0].res->evaluated + tr->shapes[0].res->cached,
                        tr->replay ? " (replayed)" : "");
        free(label);
    } else {
        kopt_buf_printf(t, "no correct configuration found");
    }
    kopt_buf_printf(t, " (run %lld)", (long long)kopt_run_id(run));
done:
    kopt_run_tune_free(tr);
    kopt_run_close(run);
    kopt_vars_free(&sizes);
    return rc;
}

/* ---- stored runs and the device ------------------------------------------------------------- */

static kopt_status need_store(kopt__mcp_call *c, kopt_ctx *ctx)
{
    return kopt__mcp_opts(c)->db_path ? KOPT_OK
         : kopt_seterr(ctx, KOPT_E_INVALID, "this server has no store (kopt mcp --no-store)");
}

static kopt_status t_list_runs(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *t)
{
    char *text = NULL;
    kopt_status rc;
    json_t *arr;

    if ((rc = need_store(c, ctx)) != KOPT_OK ||
        (rc = kopt_run_list_json(ctx, kopt__mcp_opts(c)->db_path, kopt__mcp_arg_str(c, "kind"),
                                 (int)kopt__mcp_arg_int(c, "limit", 20), &text)) != KOPT_OK)
        return rc;
    arr = json_loads(text, 0, NULL);
    free(text);
    kopt_buf_printf(t, "%zu run(s), newest first", json_array_size(arr));
    for (size_t i = 0; i < json_array_size(arr) && i < 5; i++) {
        json_t *r = json_array_get(arr, i);
        kopt_buf_printf(t, "%s %lld %s %s", i ? ";" : ":",
                        (long long)json_integer_value(json_object_get(r, "id")),
                        json_string_value(json_object_get(r, "kind")),
                        json_string_value(json_object_get(r, "status")));
    }
    *out = json_pack("{s:o}", "runs", arr ? arr : json_array());
    return KOPT_OK;
}

static kopt_status t_get_run(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *t)
{
    const char *what = kopt__mcp_arg_str(c, "what") ? kopt__mcp_arg_str(c, "what") : "run";
    json_int_t id = kopt__mcp_arg_int(c, "id", 0);
    char *text = NULL;
    kopt_status rc;

    if ((rc = need_store(c, ctx)) != KOPT_OK)
        return rc;
    rc = strcmp(what, "run") == 0 ? kopt_run_document_json(ctx, kopt__mcp_opts(c)->db_path, id,
                                                           &text)
       : strcmp(what, "optimize_tree") == 0 ? kopt_search_stored_json(ctx,
                                                  kopt__mcp_opts(c)->db_path, id, 1, &text)
       : kopt_run_item_json(ctx, kopt__mcp_opts(c)->db_path, what, id, &text);
    if (rc)
        return rc;
    *out = kopt__mcp_parsed(text);
    kopt_buf_printf(t, "%s %lld (also the resource kopt://%s/%lld)", what, (long long)id, what,
                    (long long)id);
    if (strcmp(what, "run") == 0)
        kopt_buf_printf(t, ": %zu evaluation(s), %zu profile(s), %zu tuning run(s)",
                        json_array_size(json_object_get(*out, "evaluations")),
                        json_array_size(json_object_get(*out, "profiles")),
                        json_array_size(json_object_get(*out, "tune_runs")));
    return KOPT_OK;
}

static kopt_status t_device(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *t)
{
    const kopt_mcp_opts *mo = kopt__mcp_opts(c);
    int ordinal = (int)kopt__mcp_arg_int(c, "device", 0), count = 0;
    kopt_device_info dev;
    kopt_ceilings ceil;
    kopt_run *run = NULL;
    char *stored = NULL;
    kopt_status rc;

    memset(&dev, 0, sizeof(dev));
    *out = json_object();
    if (kopt_device_nvml(ctx, ordinal, &dev, &count) != KOPT_OK || ordinal >= count) {
        json_object_set_new(*out, "available", json_false());
        json_object_set_new(*out, "reason", json_string(count ? "no such GPU ordinal"
                                                              : kopt_errmsg(ctx)));
        kopt_buf_printf(t, "no GPU here: %.*s", TEXT_MAX, count ? "no such ordinal"
                                                                : kopt_errmsg(ctx));
    } else {
        json_object_set_new(*out, "available", json_true());
        json_object_set_new(*out, "device", json_pack("{s:i, s:s, s:s, s:i, s:i, s:i}",
                            "ordinal", ordinal, "name", dev.name, "uuid", dev.uuid, "cc_major",
                            dev.cc_major, "cc_minor", dev.cc_minor, "count", count));
        kopt_buf_printf(t, "%s (cc %d.%d), %d GPU(s)", dev.name, dev.cc_major, dev.cc_minor,
                        count);
        /* the ceilings: stored, or measured once now (a worker, about a second) */
        if ((rc = open_run(c, ctx, KOPT_RUN_MCP, "device", NULL, &run)) == KOPT_OK &&
            kopt_run_ceilings(run, ctx, ordinal, &ceil) == KOPT_OK && ceil.valid)
            kopt_buf_printf(t, "; DRAM %.0f GB/s, fp32 %.0f GFLOP/s", ceil.dram_copy_gbs,
                            ceil.gflops[0]);
        if (run)
            kopt_run_finish(run, ctx, KOPT_RUN_OK, NULL);
        kopt_run_close(run);
        run = NULL;
    }
    /* what the store knows of every device, with measured ceilings */
    if (mo->db_path) {
        kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
        ro.db_path = mo->db_path;
        ro.no_record = 1;
        if (kopt_run_open(&run, ctx, &ro) == KOPT_OK && kopt_run_store(run) &&
            kopt_store_devices_json(kopt_run_store(run), ctx, NULL, &stored) == KOPT_OK)
            json_object_set_new(*out, "stored_devices", kopt__mcp_parsed(stored));
        kopt_run_close(run);
    }
    return KOPT_OK;
}

/* ---- the table ------------------------------------------------------------------------------ */

#define PROBLEM_PROP "\"problem\": {\"type\": \"string\", \"description\": \"a problem folder " \
    "(problem.json and its reference), as list_problems gives\"}"
#define GPUS_PROP "\"gpus\": {\"type\": \"string\", \"description\": \"spread over these " \
    "GPUs, as kopt optimize --gpus: all or 0,2,5 (a new tree is as wide as its GPUs; a step " \
    "evaluates on them)\"}"
#define CANDIDATE_PROPS                                                                      \
    "\"candidate_path\": {\"type\": \"string\", \"description\": \"a candidate .cu file\"},"  \
    "\"candidate_source\": {\"type\": \"string\", \"description\": \"the candidate's source " \
    "text (written to a private temporary file; #include paths resolve from there)\"},"        \
    "\"sizes\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"integer\"},"    \
    "\"description\": \"size overrides, e.g. {\\\"N\\\": 4096}\"},"                             \
    "\"trials\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 16, \"description\": "  \
    "\"verification trials per size set (default 3)\"},"                                       \
    "\"seed\": {\"type\": \"integer\", \"description\": \"input seed (default: fresh)\"},"     \
    "\"device\": {\"type\": \"integer\", \"minimum\": 0, \"description\": \"GPU ordinal\"}"

static const kopt__mcp_tool tools[] = {
    {"list_problems", "List problems and candidates",
     "The problems in a folder (default: the server's examples): name, description, sizes, "
     "reference, candidate files and tunable templates.",
     "{\"type\": \"object\", \"properties\": {\"dir\": {\"type\": \"string\", \"description\": "
     "\"a folder of problem folders\"}}}", t_list_problems},
    {"eval", "Evaluate a candidate kernel",
     "Compile a candidate (a .cu path or its source text), check every output against the "
     "problem's reference on fresh random inputs, time it and place it on the device's "
     "roofline: exactly kopt eval, sandbox included. Without a candidate the reference is "
     "timed. Without a GPU the verdict is SKIPPED (compiled, resources reported).",
     "{\"type\": \"object\", \"properties\": {" PROBLEM_PROP ", " CANDIDATE_PROPS ", "
     "\"no_timing\": {\"type\": \"boolean\", \"description\": \"verify only\"}}, "
     "\"required\": [\"problem\"]}", t_eval},
    {"profile", "Profile a candidate with advice",
     "Correct first (as eval), then compile info, SASS, hardware metrics (CUPTI), the roofline "
     "class and the micro-tools' findings ranked by estimated gain, each with what was seen, "
     "why it matters and what to change. static: no GPU work (compile, SASS, resources).",
     "{\"type\": \"object\", \"properties\": {" PROBLEM_PROP ", " CANDIDATE_PROPS ", "
     "\"static\": {\"type\": \"boolean\"}, \"parent\": {\"type\": \"string\", \"description\": "
     "\"the candidate this one came from (a .cu path or \\\"reference\\\"): its findings that "
     "no longer fire are recorded as resolved\"}}, \"required\": [\"problem\"]}", t_profile},
    {"tune", "Tune a template's parameters",
     "Search a template candidate's params for the fastest correct configuration within a "
     "bounded budget (live on the GPU), or replay recorded measurements without one (replay: "
     "a kopt tune cache file or a stored tuning run's id). Reports progress; cancel to stop "
     "after the current evaluation (outcomes so far stay stored).",
     "{\"type\": \"object\", \"properties\": {" PROBLEM_PROP ", \"template\": {\"type\": "
     "\"string\", \"description\": \"the template .cu (front matter params)\"}, \"replay\": "
     "{\"type\": \"string\", \"description\": \"a cache file or a stored tuning run id\"}, "
     "\"strategy\": {\"type\": \"string\", \"description\": \"default annealing\"}, "
     "\"budget\": {\"type\": \"integer\", \"minimum\": 1, \"description\": \"evaluations "
     "(default 50; the server bounds it)\"}, \"seed\": {\"type\": \"integer\"}, \"sizes\": "
     "{\"type\": \"object\", \"additionalProperties\": {\"type\": \"integer\"}}, \"device\": "
     "{\"type\": \"integer\", \"minimum\": 0}}}", t_tune},
    {"bench", "Benchmark a suite (KernelBench)",
     "kopt bench: every problem folder under problems (kopt kb import's output, or one "
     "problem) evaluated with its candidate from candidates (NAME.cu or a NAME.py ModelNew) "
     "as eval would, against PyTorch eager and torch.compile; per problem the verdict, the "
     "check at other sizes, times and speedups, then fast_p and geometric-mean speedups. "
     "The result is kopt bench --json's document (plus run_id); rows are stored as they "
     "finish. Cancel to stop after the current evaluation; resume continues a stored suite.",
     "{\"type\": \"object\", \"properties\": {\"problems\": {\"type\": \"string\", "
     "\"description\": \"a folder of problem folders, or one problem folder\"}, "
     "\"candidates\": {\"type\": \"string\", \"description\": \"the candidates' folder "
     "(NAME.cu or NAME.py per problem)\"}, \"kind\": {\"type\": \"string\", \"enum\": "
     "[\"auto\", \"cu\", \"py\", \"reference\"], \"description\": \"which candidate: "
     "auto (NAME.cu, else NAME.py; default), cu, py, or reference (each problem's own)\"}, "
     "\"no_compile\": {\"type\": \"boolean\", \"description\": \"do not time "
     "torch.compile\"}, \"no_check_sizes\": {\"type\": \"boolean\", \"description\": "
     "\"do not run candidates at the problems' check sizes\"}, \"resume\": {\"type\": "
     "\"integer\", \"minimum\": 1, \"description\": \"continue this stored suite (its "
     "folders and options are stored; give neither folder)\"}, \"trials\": {\"type\": "
     "\"integer\", \"minimum\": 1, \"maximum\": 16}, \"budget_ms\": {\"type\": "
     "\"number\", \"exclusiveMinimum\": 0}, \"precision\": {\"type\": \"number\", "
     "\"minimum\": 0, \"exclusiveMaximum\": 100, \"description\": \"percent of the "
     "median\"}, \"reps\": {\"type\": \"string\", \"description\": \"MIN:MAX timed "
     "repetitions\"}, \"no_flush\": {\"type\": \"boolean\"}, \"timeout\": {\"type\": "
     "\"number\", \"exclusiveMinimum\": 0, \"description\": \"seconds\"}, \"device\": "
     "{\"type\": \"integer\", \"minimum\": 0}, \"arch\": {\"type\": \"string\", "
     "\"description\": \"sm_XX\"}, \"gpus\": {\"type\": \"string\", \"description\": "
     "\"evaluate on these GPUs at once (all or 0,2,5), each problem on the first free one\"}}}",
     kopt__mcp_t_bench},
    {"list_runs", "List stored runs",
     "Runs recorded in the store, newest first: id, kind, status, command, environment.",
     "{\"type\": \"object\", \"properties\": {\"kind\": {\"type\": \"string\", \"enum\": "
     "[\"eval\", \"profile\", \"tune\", \"optimize\", \"bench\", \"mcp\"]}, \"limit\": "
     "{\"type\": \"integer\", \"minimum\": 1, \"description\": \"default 20\"}}}", t_list_runs},
    {"get_run", "Read a stored run or item",
     "A stored run with everything linked to it (evaluations, profiles with findings, tuning "
     "runs with every outcome, device ceilings), or one evaluation, profile or tuning run.",
     "{\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"integer\", \"minimum\": 1}, "
     "\"what\": {\"type\": \"string\", \"enum\": [\"run\", \"evaluation\", \"profile\", "
     "\"tune_run\", \"optimize_tree\"], \"description\": \"default run\"}}, \"required\": [\"id\"]}", t_get_run},
    {"device", "GPU and its ceilings",
     "The GPU (NVML: name, UUID, compute capability), its measured ceilings (measured once "
     "and stored), and every device the store knows with its ceilings.",
     "{\"type\": \"object\", \"properties\": {\"device\": {\"type\": \"integer\", \"minimum\": "
     "0}}}", t_device},
    {"optimize_start", "Start an optimize tree",
     "Begin a kopt optimize search tree for a problem, with you as its model: nothing is asked "
     "of any LLM. The root is the reference. Then call optimize_step: it evaluates what is "
     "pending and writes the planner/coder/debugger prompts; answer them with "
     "optimize_prompts and optimize_reply; repeat. evaluator fake: outcomes scripted in the "
     "sources (tests, no GPU).",
     "{\"type\": \"object\", \"properties\": {" PROBLEM_PROP ", \"search\": {\"type\": "
     "\"string\", \"enum\": [\"mcts\", \"greedy\", \"beam\", \"best-of-n\"]}, \"iterations\": "
     "{\"type\": \"integer\", \"minimum\": 0, \"description\": \"expansions (default 10)\"}, "
     "\"proposals\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 16, \"description\": "
     "\"children per expansion (default 2; greedy 1)\"}, \"debug_attempts\": {\"type\": "
     "\"integer\", \"minimum\": 0}, \"no_tune\": {\"type\": \"boolean\"}, \"tune_budget\": "
     "{\"type\": \"integer\", \"minimum\": 1}, \"no_memory\": {\"type\": \"boolean\"}, "
     "\"objective\": {\"type\": \"string\", \"enum\": [\"time\", \"energy\", \"time-energy\"]}, "
     "\"evaluator\": {\"type\": \"string\", \"enum\": [\"live\", \"fake\"], \"description\": "
     "\"live (the GPU, default) or fake (scripted outcomes)\"}, \"fake_ref_ms\": {\"type\": "
     "\"number\", \"exclusiveMinimum\": 0}, \"workdir\": {\"type\": \"string\", "
     "\"description\": \"the tree's folder (default kopt-optimize/TREE)\"}, \"device\": "
     "{\"type\": \"integer\", \"minimum\": 0}, " GPUS_PROP ", \"start\": {\"type\": \"string\", "
     "\"description\": \"a kernel file to begin from instead of the reference (checked "
     "first: a correct candidate, not a template)\"}}, \"required\": [\"problem\"]}",
     kopt__mcp_t_optimize_start},
    {"optimize_step", "Step an optimize tree",
     "One step of the tree, as kopt optimize --resume TREE --llm manual: action evaluate "
     "checks and times every pending candidate (GPU, or the fake evaluator); propose reads "
     "your replies and turns them into pending candidates, then writes the next prompts (one "
     "round); auto (default) does both. Reports progress; cancel to stop after the current "
     "evaluation (the tree is stored).",
     "{\"type\": \"object\", \"properties\": {\"tree\": {\"type\": \"integer\", \"minimum\": 1}, "
     "\"action\": {\"type\": \"string\", \"enum\": [\"auto\", \"propose\", \"evaluate\"]}, "
     "\"iterations\": {\"type\": \"integer\", \"minimum\": 0, \"description\": \"raise the "
     "tree's expansion budget\"}, \"device\": {\"type\": \"integer\", \"minimum\": 0}, "
     GPUS_PROP ", \"server\": {\"type\": [\"boolean\", \"string\"], \"description\": "
     "\"evaluate in a running kopt serve, as kopt optimize --server: true (its default "
     "socket), a socket path, or false (here); not given: $KOPT_SERVER when a server answers "
     "there. The server keeps the reference's workers and run between steps\"}, "
     "\"no_profile\": {\"type\": \"boolean\", \"description\": \"do not profile correct "
     "candidates (kopt optimize --no-profile: no class, no advice for the planner)\"}}, "
     "\"required\": [\"tree\"]}", kopt__mcp_t_optimize_step},
    {"optimize_prompts", "Prompts waiting for you",
     "The prompts of a tree still waiting for a reply: name, role (planner, coder, debugger, "
     "templatizer) and text. Each prompt ends with its role's reply contract.",
     "{\"type\": \"object\", \"properties\": {\"tree\": {\"type\": \"integer\", \"minimum\": 1}, "
     "\"text\": {\"type\": \"boolean\", \"description\": \"include the prompt texts (default "
     "true)\"}}, \"required\": [\"tree\"]}", kopt__mcp_t_optimize_prompts},
    {"optimize_reply", "Answer a prompt",
     "Your reply to one waiting prompt, written as the model's reply (manual mode's "
     "NAME.reply.md; stored as an exchange, so the tree can be replayed). Final once given.",
     "{\"type\": \"object\", \"properties\": {\"tree\": {\"type\": \"integer\", \"minimum\": 1}, "
     "\"name\": {\"type\": \"string\", \"description\": \"the prompt's name\"}, \"text\": "
     "{\"type\": \"string\", \"description\": \"the reply, following the prompt's contract\"}}, "
     "\"required\": [\"tree\", \"name\", \"text\"]}", kopt__mcp_t_optimize_reply},
    {"optimize_tree", "Inspect an optimize tree",
     "A tree's nodes (kind, plan, verdict, time, reward, visits, closed), the best node, the "
     "path to it with predicted and realized gains, the waiting prompts; with node: that "
     "node's source, log, findings and its parent's source.",
     "{\"type\": \"object\", \"properties\": {\"tree\": {\"type\": \"integer\", \"minimum\": 1}, "
     "\"node\": {\"type\": \"integer\", \"minimum\": 0}}, \"required\": [\"tree\"]}",
     kopt__mcp_t_optimize_tree},
    {"cute_search", "Search CUTLASS/CuTe",
     "Search the CUTLASS and CuTe headers (and CUTLASS's examples) by identifier or words, "
     "as kopt cute search: ranked snippets with file and lines. Needs the CUTLASS headers "
     "(python3 -m pip install nvidia-cutlass, or CUTLASS_PATH).",
     "{\"type\": \"object\", \"properties\": {\"query\": {\"type\": \"string\"}, \"limit\": "
     "{\"type\": \"integer\", \"minimum\": 1, \"maximum\": 50, \"description\": \"default 5\"}, "
     "\"headers_only\": {\"type\": \"boolean\"}, \"cutlass\": {\"type\": \"string\", "
     "\"description\": \"a CUTLASS folder (default: CUTLASS_PATH, then the Python package)\"}}, "
     "\"required\": [\"query\"]}", kopt__mcp_t_cute_search},
};

const kopt__mcp_tool *kopt__mcp_tools(int *n)
{
    *n = (int)(sizeof(tools) / sizeof(tools[0]));
    return tools;
}

const kopt__mcp_tool *kopt__mcp_tool_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof(tools) / sizeof(tools[0]); i++)
        if (strcmp(tools[i].name, name) == 0)
            return &tools[i];
    return NULL;
}
