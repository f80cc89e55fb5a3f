/* kopt bench's suite (kopt/kb.h): the problem folders and candidates it finds, one row per
 * problem (its stored form: verdict, times, speedups, the speed-of-light guard, the check at
 * other sizes), the rows stored and counted as they finish, the suite's metrics as JSON
 * (stored with the suite) and every line kopt bench prints as text. The verb only parses
 * options, evaluates and chooses text or JSON. */
#include "kopt/kb.h"
#include "kopt/run.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int is_problem(const char *dir)
{
    struct stat st;
    char *p = kopt_path_join(dir, "problem.json");
    int ok = p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
    return ok;
}

static int by_version(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* The problem folders under `root` (or root itself), in natural order. */
int kopt_kb_list_problems(const char *root, char ***out)
{
    DIR *d;
    struct dirent *e;
    char **v = NULL;
    int n = 0;

    *out = NULL;
    if (is_problem(root)) {
        v = malloc(sizeof(char *));
        v[n++] = strdup(root);
        *out = v;
        return n;
    }
    if (!(d = opendir(root)))
        return -1;
    while ((e = readdir(d))) {
        char *p;
        if (e->d_name[0] == '.')
            continue;
        p = kopt_path_join(root, e->d_name);
        if (p && is_problem(p)) {
            char **g = realloc(v, (size_t)(n + 1) * sizeof(char *));
            if (!g) {
                free(p);
                break;
            }
            v = g;
            v[n++] = p;
        } else {
            free(p);
        }
    }
    closedir(d);
    if (n)
        qsort(v, (size_t)n, sizeof(char *), by_version);
    *out = v;
    return n;
}

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The candidate file of `prob` for `kind` (malloc'd), or NULL. */
char *kopt_kb_find_candidate(const kopt_problem *prob, const char *dir, const char *kind)
{
    char name[512], *p;

    if (strcmp(kind, "reference") == 0)
        return strdup(prob->ref_path);
    if (!dir)
        return NULL;
    for (int k = 0; k < 2; k++) {
        const char *ext = k == 0 ? ".cu" : ".py";
        if ((strcmp(kind, "cu") == 0 && k == 1) || (strcmp(kind, "py") == 0 && k == 0))
            continue;
        snprintf(name, sizeof(name), "%s%s", prob->name, ext);
        if ((p = kopt_path_join(dir, name)) && exists(p))
            return p;
        free(p);
    }
    return NULL;
}

static json_t *num_or_null(double v)
{
    return v > 0 && isfinite(v) ? json_real(v) : json_null();
}

static const char *const time_keys[3] = {"time_ms", "eager_ms", "compile_ms"};
static const char *const time_names[3] = {"candidate", "eager", "compile"};

/* The speed-of-light guard (kopt/kb.h): the row's bound, and the times below it, whose
 * speedups are then not used (a flagged candidate: both; a flagged baseline: its own). */
static void sol_guard(json_t *o, const kopt_eval_result *r)
{
    double peak = r ? kopt_kb_peak_gbs(&r->device, &r->ceilings) : 0;
    double bound = r && r->has_work ? kopt_kb_sol_bound_ms(r->work_bytes, peak) : 0, t[3];
    json_t *names = json_array();
    unsigned f;

    for (int i = 0; i < 3; i++) {
        json_t *v = json_object_get(o, time_keys[i]);
        t[i] = json_is_number(v) ? json_number_value(v) : 0;
    }
    f = kopt_kb_sol_flags(t, 3, bound);
    for (int i = 0; i < 3; i++)
        if (f & (1u << i))
            json_array_append_new(names, json_string(time_names[i]));
    if (f & 3u)
        json_object_set_new(o, "speedup_eager", json_null());
    if (f & 5u)
        json_object_set_new(o, "speedup_compile", json_null());
    if (f)       /* the faster baseline is flagged whenever either is (it is the lower time) */
        json_object_set_new(o, "speedup_best", json_null());
    json_object_set_new(o, "sol_bound_ms", num_or_null(bound));
    json_object_set_new(o, "peak_gbs", num_or_null(peak));
    json_object_set_new(o, "work_bytes", num_or_null(r && r->has_work ? r->work_bytes : 0));
    json_object_set_new(o, "sol_flags", names);
}

/* The row's check at the problem's check_sizes: "ok", "failed", "none" (the problem has
 * none), "skipped" (--no-check-sizes), or "not_run" (the evaluation stopped before them or
 * there was none). */
const char *kopt_kb_shape_check(const kopt_problem *prob, const kopt_eval_result *r, int skip)
{
    int ran = 0, bad = 0;

    if (!prob)
        return "not_run";
    if (!prob->has_check_sizes || prob->check_sizes.n == 0)
        return "none";
    if (skip)
        return "skipped";
    if (r && r->verdict == KOPT_VERDICT_SHAPE_SPECIFIC)
        return "failed";
    for (int i = 0; r && i < r->nchecks; i++)
        if (strcmp(r->checks[i].sizes_label, "check") == 0) {
            ran = 1;
            bad |= r->checks[i].mismatches > 0;
        }
    return !ran ? "not_run" : bad ? "failed" : "ok";
}

/* One row's fields (kopt bench's stored form). */
json_t *kopt_kb_bench_row(const char *problem, const char *cand_path, const char *kind,
                          const char *verdict, const char *message,
                          const kopt_eval_result *r, const char *shapes)
{
    json_t *o = json_pack("{s:s, s:s?, s:s, s:s, s:s, s:s}", "problem", problem, "candidate",
                          cand_path, "kind", kind, "verdict", verdict, "message", message,
                          "shape_check", shapes);
    json_object_set_new(o, "time_ms", num_or_null(r && r->timing.n && !r->is_reference
                                                  ? r->timing.median_ms : 0));
    json_object_set_new(o, "eager_ms", num_or_null(r && r->ref_timing.n
                                                   ? r->ref_timing.median_ms : 0));
    json_object_set_new(o, "compile_ms", num_or_null(r && r->has_compile
                                                     ? r->compile_timing.median_ms : 0));
    json_object_set_new(o, "speedup_eager", num_or_null(r ? r->speedup : 0));
    json_object_set_new(o, "speedup_compile", num_or_null(r ? r->compile_speedup : 0));
    /* KernelBench v3's baseline: the faster of eager and torch.compile (kopt eval's) */
    json_object_set_new(o, "baseline_ms", num_or_null(r ? r->baseline_ms : 0));
    json_object_set_new(o, "speedup_best", num_or_null(r ? r->speedup_best : 0));
    json_object_set_new(o, "compile_cached", json_boolean(r && r->compile_cached));
    sol_guard(o, r);
    json_object_set_new(o, "compile_note", json_string(r ? r->compile_note : ""));
    if (r) {    /* how each was bracketed: the host's issue time the hold hid, exposed runs */
        static const char *const who[3] = {"candidate", "eager", "compile"};
        json_t *br = json_object();
        for (int i = 0; i < 3; i++)
            if (r->bracket[i].timed)
                json_object_set_new(br, who[i], json_pack("{s:f, s:f, s:i}", "issue_ms",
                                    r->bracket[i].issue_ms, "hold_ms", r->bracket[i].hold_ms,
                                    "exposed_runs", r->bracket[i].exposed_runs));
        json_object_set_new(o, "brackets", br);
    }
    /* KernelBench v3's "write a kernel" and the precision a tolerance let through: the
     * kernels the candidate's checked call launched (CUPTI), as facts beside the verdict */
    json_object_set_new(o, "own_kernels", r && r->census > 0 ? json_integer(r->own_kernels)
                                                             : json_null());
    json_object_set_new(o, "kernels_launched", r && r->census > 0
                        ? json_integer(r->kernels_launched) : json_null());
    json_object_set_new(o, "lowest_precision", r && (r->precision[0] || r->own_precision[0])
                        ? json_string(r->own_precision[0] ? r->own_precision : r->precision)
                        : json_null());
    json_object_set_new(o, "eval_id", json_integer(r ? r->eval_id : 0));
    return o;
}

json_t *kopt_kb_unrun_row(const kopt_problem *prob, const char *cand_path, const char *kind,
                          const char *verdict, const char *message, int skip)
{
    return kopt_kb_bench_row(prob->name, cand_path, kind, verdict, message, NULL,
                             kopt_kb_shape_check(prob, NULL, skip));
}

json_t *kopt_kb_missing_row(const kopt_problem *prob, const char *dir, const char *kind, int skip)
{
    char msg[512];

    snprintf(msg, sizeof(msg), "no candidate for %s in %s (looked for %s.%s)", prob->name,
             dir ? dir : "(no --candidates)", prob->name,
             strcmp(kind, "auto") == 0 ? "cu and .py" : kind);
    return kopt_kb_unrun_row(prob, NULL, kind, "MISSING", msg, skip);
}

static double jnum(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* The times of a row below its speed-of-light bound, said under it. */
static void print_sol(FILE *f, json_t *row)
{
    json_t *flags = json_object_get(row, "sol_flags"), *g;
    size_t i;

    json_array_foreach(flags, i, g) {
        const char *who = json_string_value(g);
        for (int k = 0; k < 3; k++)
            if (who && strcmp(who, time_names[k]) == 0)
                fprintf(f, "  ! speed of light: %s %.4f ms is below %.4f ms, the least time to "
                        "move its %.1f MB at %.0f GB/s (peak): not trusted, its speedup not "
                        "used\n", who, jnum(row, time_keys[k]), jnum(row, "sol_bound_ms"),
                        jnum(row, "work_bytes") / 1e6, jnum(row, "peak_gbs"));
    }
}

/* A row as kopt bench prints it under its table head. */
static void print_row(FILE *f, json_t *row)
{
    char t[3][16], s[2][16];
    const char *keys[3] = {"time_ms", "eager_ms", "compile_ms"};
    const char *sk[2] = {"speedup_eager", "speedup_compile"};

    for (int i = 0; i < 3; i++) {
        double v = jnum(row, keys[i]);
        snprintf(t[i], sizeof(t[i]), v > 0 ? "%.4f" : "-", v);
    }
    for (int i = 0; i < 2; i++) {
        double v = jnum(row, sk[i]);
        snprintf(s[i], sizeof(s[i]), v > 0 ? "%.2fx" : "-", v);
    }
    {
        const char *sc = json_string_value(json_object_get(row, "shape_check"));
        const char *prec = json_string_value(json_object_get(row, "lowest_precision"));
        json_t *own = json_object_get(row, "own_kernels");
        char owns[16];
        snprintf(owns, sizeof(owns), json_is_integer(own) ? "%lld" : "-",
                 (long long)json_integer_value(own));
        fprintf(f, "%-34.34s %-14s %-7s %10s %10s %10s %9s %9s %4s %5s\n",
                json_string_value(json_object_get(row, "problem")),
                json_string_value(json_object_get(row, "verdict")),
                !sc || strcmp(sc, "not_run") == 0 ? "-" : strcmp(sc, "failed") == 0 ? "FAILED"
                                                                                 : sc,
                t[0], t[1], t[2], s[0], s[1], owns, prec ? prec : "-");
    }
    if (strcmp(json_string_value(json_object_get(row, "verdict")), "OK") != 0)
        fprintf(f, "  %s\n", json_string_value(json_object_get(row, "message")));
    print_sol(f, row);
}

static json_t *summary_json(const kopt_kb_summary *s)
{
    json_t *fast = json_object();
    for (int p = 0; p < KOPT_KB_NFAST; p++) {
        char key[32];
        snprintf(key, sizeof(key), "fast_%g", kopt_kb_fast_p[p]);
        json_object_set_new(fast, key, json_real(s->fast[p]));
    }
    return json_pack("{s:i, s:i, s:f, s:o, s:i, s:o, s:f}", "problems", s->n, "correct",
                     s->ncorrect, "correct_rate", s->correct_rate, "fast_p", fast, "timed",
                     s->ntimed, "geomean_speedup_correct", s->ntimed
                     ? json_real(s->geomean_correct) : json_null(),
                     "geomean_speedup_all_failures_as_1", s->geomean_all);
}

static void print_summary(FILE *f, const char *label, const kopt_kb_summary *s)
{
    fprintf(f, "%-11s fast_0 %.3f  fast_1 %.3f  fast_1.5 %.3f  fast_2 %.3f\n", label, s->fast[0],
           s->fast[1], s->fast[2], s->fast[3]);
    if (s->ntimed)
        fprintf(f, "%-11s geomean speedup %.3fx over the %d correct and timed problem(s); %.3fx "
               "over all %d (a failure counts as 1.0x)\n", "", s->geomean_correct, s->ntimed,
               s->geomean_all, s->n);
    else
        fprintf(f, "%-11s geomean speedup: no correct problem was timed; %.3fx over all %d (a "
               "failure counts as 1.0x)\n", "", s->geomean_all, s->n);
}

struct json_t *kopt_kb_suite_options(const kopt_kb_suite_opts *o)
{
    json_t *j = json_pack("{s:s, s:b, s:b}", "kind", o->optimize ? "optimize" : o->kind,
                          "no_compile", o->no_compile, "no_check_sizes", o->no_check_sizes);
    if (o->optimize)    /* kopt optimize per problem: the budget */
        json_object_set_new(j, "optimize", json_pack("{s:i, s:f, s:s, s:f}", "iterations",
                            o->iterations, "max_wall_s", o->max_wall_s, "evaluator",
                            o->evaluator[0] ? o->evaluator : "live", "fake_ref_ms",
                            o->fake_ref_ms));
    return j;
}

kopt_status kopt_kb_suite_resume(kopt_kb_suite *s, int64_t id, char **root, char **cands,
                                 kopt_kb_suite_opts *o)
{
    char *text = NULL, **stored = NULL;
    int nstored = 0;
    json_t *j;
    kopt_status rc;

    if ((rc = kopt_store_bench_suite_get(s->store, s->ctx, id, root, cands, &text)) != KOPT_OK ||
        (rc = kopt_store_bench_rows(s->store, s->ctx, id, &stored, &nstored)) != KOPT_OK) {
        free(text);
        return rc;
    }
    if ((j = json_loads(text ? text : "{}", 0, NULL))) {
        json_t *op = json_object_get(j, "optimize");
        snprintf(o->kind, sizeof(o->kind), "%s",
                 json_string_value(json_object_get(j, "kind")) ?: "auto");
        o->no_compile = json_is_true(json_object_get(j, "no_compile"));
        if (json_is_true(json_object_get(j, "no_check_sizes")))
            o->no_check_sizes = 1;
        if (json_is_object(op)) {   /* the search's budget */
            o->optimize = 1;
            o->iterations = (int)json_integer_value(json_object_get(op, "iterations"));
            o->max_wall_s = json_number_value(json_object_get(op, "max_wall_s"));
            o->fake_ref_ms = json_number_value(json_object_get(op, "fake_ref_ms"));
            snprintf(o->evaluator, sizeof(o->evaluator), "%s",
                     json_string_value(json_object_get(op, "evaluator")) ?: "live");
        }
        json_decref(j);
    }
    for (int i = 0; i < nstored; i++) {
        json_t *r = json_loads(stored[i], 0, NULL);
        const char *p = json_string_value(json_object_get(r, "problem"));
        if (p)
            json_object_set(s->done_rows, p, r);
        json_decref(r);
        free(stored[i]);
    }
    free(stored);
    free(text);
    return KOPT_OK;
}

void kopt_kb_suite_init(kopt_kb_suite *s, kopt_run *run, kopt_ctx *ctx)
{
    memset(s, 0, sizeof(*s));
    s->run = run;
    s->store = kopt_run_store(run);
    s->ctx = ctx;
    s->rows = json_array();
    s->done_rows = json_object();
}

kopt_status kopt_kb_suite_begin(kopt_kb_suite *s, const char *root, const char *cand_dir,
                                json_t *options)
{
    char *ot;
    kopt_status rc;

    if (!s->store)
        return KOPT_OK;
    ot = json_dumps(options, JSON_COMPACT);
    rc = kopt_store_bench_suite_put(s->store, s->ctx, s->suite, root, cand_dir, ot, NULL);
    free(ot);
    return rc;
}

void kopt_kb_suite_clear(kopt_kb_suite *s)
{
    json_decref(s->rows);
    json_decref(s->done_rows);
    s->rows = s->done_rows = NULL;
    free(s->eager);
    free(s->compiled);
    free(s->best);
    s->eager = s->compiled = s->best = NULL;
    s->nrows = s->cap = 0;
}

static int grow(kopt_kb_row **v, int cap)
{
    kopt_kb_row *g = realloc(*v, (size_t)cap * sizeof(*g));
    return g ? (*v = g, 1) : 0;
}

json_t *kopt_kb_eval_row(const kopt_kb_suite *s, const kopt_problem *prob,
                         const kopt_candidate *cand, const char *cand_path, int optimized,
                         kopt_status rc, const kopt_eval_result *r, kopt_ctx *ctx)
{
    if (rc != KOPT_OK)
        return kopt_kb_unrun_row(prob, cand_path, s->kind, "ERROR", kopt_errmsg(ctx),
                                 s->skip_check);
    return kopt_kb_bench_row(prob->name, cand_path, optimized ? "optimize" : cand->torch_module
                             ? "py" : "cu", kopt_verdict_name(r->verdict), r->message, r,
                             kopt_kb_shape_check(prob, r, s->skip_check));
}

void kopt_kb_suite_add(kopt_kb_suite *b, const char *name, json_t *row)
{
    if (b->nrows == b->cap) {   /* room for the row's metrics */
        int cap = b->cap ? 2 * b->cap : 16;
        if (!grow(&b->eager, cap) || !grow(&b->compiled, cap) || !grow(&b->best, cap)) {
            json_decref(row);
            return;
        }
        b->cap = cap;
    }
    if (b->store && !json_object_get(b->done_rows, name)) {
        char *t = json_dumps(row, JSON_COMPACT);
        if (kopt_store_bench_row_put(b->store, b->ctx, b->suite, name, kopt_run_id(b->run),
                                     json_string_value(json_object_get(row, "verdict")), t) !=
            KOPT_OK)
            kopt_log(b->ctx, KOPT_LOG_WARN, "bench row not stored: %s", kopt_errmsg(b->ctx));
        free(t);
    }
    b->eager[b->nrows].correct = b->compiled[b->nrows].correct = b->best[b->nrows].correct =
        strcmp(json_string_value(json_object_get(row, "verdict")), "OK") == 0;
    b->eager[b->nrows].speedup = jnum(row, "speedup_eager");
    b->compiled[b->nrows].speedup = jnum(row, "speedup_compile");
    b->best[b->nrows].speedup = jnum(row, "speedup_best");
    b->nsol += (int)json_array_size(json_object_get(row, "sol_flags"));
    b->nshape += strcmp(json_string_value(json_object_get(row, "verdict")), "SHAPE_SPECIFIC") == 0;
    b->nbound += jnum(row, "sol_bound_ms") > 0;
    b->ncached += json_is_true(json_object_get(row, "compile_cached"));
    b->nrows++;
    if (b->out) {
        print_row(b->out, row);
        fflush(b->out);
    }
    json_array_append_new(b->rows, row);
}

void kopt_kb_suite_print_head(FILE *f, const kopt_kb_suite *b, int np, const char *root,
                              int resumed, const char *cand_dir, int no_compile,
                              int iterations, const char *evaluator)
{
    if (b->suite && iterations >= 0)
        fprintf(f, "suite %lld: %d problem(s) from %s%s; candidates: kopt optimize's best per "
                "problem (%d iteration(s)%s)%s\n", (long long)b->suite, np, root,
                resumed ? " (resumed)" : "", iterations, evaluator &&
                strcmp(evaluator, "fake") == 0 ? ", scripted evaluator" : "",
                no_compile ? "" : "; baselines: eager, torch.compile");
    else if (b->suite)
        fprintf(f, "suite %lld: %d problem(s) from %s%s; candidates: %s%s\n",
                (long long)b->suite, np, root, resumed ? " (resumed)" : "",
                strcmp(b->kind, "reference") == 0 ? "each problem's reference"
                : cand_dir ? cand_dir : "(none)",
                no_compile ? "" : "; baselines: eager, torch.compile");
    if (b->skip_check)
        fprintf(f, "--no-check-sizes: candidates are checked at the benchmark's sizes only "
                "(KernelBench's rule)\n");
    fprintf(f, "%-34s %-14s %-7s %10s %10s %10s %9s %9s %4s %5s\n", "problem", "verdict",
            "shapes", "cand ms", "eager ms", "compile ms", "vs eager", "vs compile", "own",
            "prec");
}

json_t *kopt_kb_suite_summary(const kopt_kb_suite *b, const char *root, const char *cand_dir,
                              json_t *options, int no_compile)
{
    kopt_kb_summary se, sc, sb;
    json_t *sum;
    char *st;

    kopt_kb_summarize(b->eager, b->nrows, &se);
    kopt_kb_summarize(b->compiled, b->nrows, &sc);
    kopt_kb_summarize(b->best, b->nrows, &sb);
    sum = json_pack("{s:I, s:s, s:s?, s:O, s:o, s:o, s:o}", "suite", (json_int_t)b->suite,
                    "problems_dir", root, "candidates", cand_dir, "options", options,
                    "vs_eager", summary_json(&se), "vs_compile", no_compile ? json_null()
                                                                            : summary_json(&sc),
                    "vs_best", no_compile ? json_null() : summary_json(&sb));
    json_object_set_new(sum, "speed_of_light", json_pack("{s:i, s:i}", "rows_with_bound",
                        b->nbound, "times_below_bound", b->nsol));
    json_object_set_new(sum, "shape_specific", json_integer(b->nshape));
    json_object_set_new(sum, "compile_cached", json_integer(b->ncached));
    st = json_dumps(sum, JSON_COMPACT);
    if (b->store && kopt_store_bench_suite_put(b->store, b->ctx, b->suite, root, cand_dir, NULL,
                                               st) != KOPT_OK)
        kopt_log(b->ctx, KOPT_LOG_WARN, "bench summary not stored: %s", kopt_errmsg(b->ctx));
    free(st);
    return sum;
}

void kopt_kb_suite_print_summary(FILE *f, const kopt_kb_suite *b, int no_compile)
{
    kopt_kb_summary se, sc, sb;

    kopt_kb_summarize(b->eager, b->nrows, &se);
    kopt_kb_summarize(b->compiled, b->nrows, &sc);
    kopt_kb_summarize(b->best, b->nrows, &sb);
    fprintf(f, "\nsuite       %d problem(s), %d correct (correctness rate %.1f%%)\n", se.n,
            se.ncorrect, 100 * se.correct_rate);
    if (b->nshape)
        fprintf(f, "%-11s %d row(s) correct at the benchmark's sizes but wrong at the "
                "problem's check sizes (SHAPE_SPECIFIC, counted as failures)\n", "shapes",
                b->nshape);
    print_summary(f, "vs eager", &se);
    if (!no_compile) {
        print_summary(f, "vs compile", &sc);
        print_summary(f, "vs best", &sb);   /* the faster of the two, row by row */
        if (b->ncached)
            fprintf(f, "%-11s %d of the torch.compile times were taken from the store "
                    "(measured by earlier runs: same problem, device, torch version, "
                    "sizes, timing options)\n", "compile", b->ncached);
    }
    if (b->nsol)
        fprintf(f, "speed of light: %d time(s) below the problem's bytes / peak bandwidth "
                "(marked ! above): not trusted, their speedups not used\n", b->nsol);
    else
        fprintf(f, "speed of light: no time below its bound (%d of %d row(s) have one: "
                "bytes / peak bandwidth)\n", b->nbound, se.n);
}
