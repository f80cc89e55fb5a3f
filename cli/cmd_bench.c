/* kopt bench PROBLEMS --candidates DIR: evaluate a suite of problems, one candidate each,
 * against PyTorch eager and torch.compile, and give KernelBench's metrics (fast_p, the
 * geometric-mean speedups); every row is stored as it finishes, so a killed suite resumes
 * (--resume). With --optimize each candidate is kopt optimize's best kernel for its problem
 * (bench_optimize.c). docs/kernelbench.md. */
#include "cli.h"

#include <dirent.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt bench PROBLEMS [--candidates DIR] [options]\n"
        "\n"
        "Evaluate every problem folder under PROBLEMS with its candidate from DIR (NAME.cu, a\n"
        "kopt-native host-mode candidate, or NAME.py, a KernelBench ModelNew), each as `kopt\n"
        "eval` would, timing PyTorch eager and torch.compile (default mode) the same way in the\n"
        "same run. Prints per problem: verdict, the check at other sizes, times, speedups;\n"
        "then for the suite: the correctness rate, fast_0, fast_1, fast_1.5, fast_2 (correct\n"
        "and faster than p times the baseline), and the geometric-mean speedup over the\n"
        "correct problems and over all of them (failures counted as 1.0x: falling back to\n"
        "the reference); each against eager, torch.compile, and the faster of the two per\n"
        "problem (\"vs best\": KernelBench v3's baseline). torch.compile's time is taken from\n"
        "the store when an earlier run measured it (same problem, device, torch version,\n"
        "sizes and timing options; kopt eval --help).\n"
        "\n"
        "Other sizes: a problem with \"check_sizes\" (kopt kb import writes them where the\n"
        "shapes allow) has every candidate run there too; one correct at the benchmark's\n"
        "sizes but wrong there is SHAPE_SPECIFIC, a failure like WRONG. The \"shapes\" column\n"
        "(\"shape_check\" in --json) says: ok, failed, none (the problem has no check sizes),\n"
        "skipped (--no-check-sizes) or - (the evaluation stopped before them).\n"
        "--no-check-sizes checks at the benchmark's sizes only: KernelBench's own rule, for\n"
        "comparison with its published numbers.\n"
        "\n"
        "What ran: \"own\" counts the kernels of the candidate's own (not PyTorch's aten,\n"
        "cuBLAS, cuDNN, CUTLASS or cub/thrust) in its checked call, by CUPTI's kernel names\n"
        "(KernelBench v3's rule: a candidate must launch a kernel it wrote); \"prec\" is the\n"
        "precision below FP32 it computed at (tf32, bf16, fp16, fp8: a shortcut the tolerance\n"
        "let through), from a host-mode candidate's own SASS (cuobjdump), else from a library\n"
        "kernel's name; --json: own_kernels, kernels_launched, lowest_precision.\n"
        "\n"
        "options:\n"
        "  --candidates DIR  the candidates' folder\n"
        "  --kind K          which candidate: auto (NAME.cu, else NAME.py; default), cu, py,\n"
        "                    or reference (each problem's own reference against itself)\n"
        "  --no-compile      do not time torch.compile\n"
        "  --optimize        no candidates folder: run kopt optimize on each problem (its\n"
        "                    tree in the store) and evaluate its best kernel as the\n"
        "                    candidate (the reference itself when nothing beat it)\n"
        "  --iterations N    each search's expansions (4); --optimize-wall S: each\n"
        "                    problem's wall-time budget in seconds (none)\n"
        "  --llm SPEC        the model (and the other --llm-* options of kopt llm);\n"
        "                    --evaluator live|fake, --fake-ref-ms MS as for kopt optimize\n"
        "  --resume SUITE    continue a stored suite (its id is printed first): problems\n"
        "                    already done are not evaluated again\n"
        "  --no-check-sizes  do not run candidates at the problems' check sizes\n"
        "                    (KernelBench's original behaviour; \"shapes\" says skipped)\n"
        "  --trials N, --budget-ms MS, --precision PCT, --reps MIN:MAX, --no-flush,\n"
        "  --timeout S, --device N, --arch sm_XX, --cache-dir DIR   as for kopt eval\n"
        "  --gpus all|0,2,5  evaluate on these GPUs at once, each problem on the first free\n"
        "                    one (rows print as they finish); with --optimize each search\n"
        "                    also spreads over them (docs/scale.md)\n"
        "  --server[=PATH]   evaluate in a running `kopt serve` (default $KOPT_SERVER or\n"
        "                    /tmp/kopt-serve-UID.sock), each problem in the session the\n"
        "                    server keeps for it: a later bench of the same problems reuses\n"
        "                    the references' outputs, times and torch.compile baselines;\n"
        "                    results are stored here\n"
        "  --db PATH         store (default ./kopt.db or $KOPT_DB); --no-store to skip\n"
        "  --json            print the suite as JSON\n"
        "  -v, --verbose     log progress to stderr\n"
        "\n"
        "exit codes: 0 the suite ran (whatever the verdicts), 2 usage, 9 invalid input,\n"
        "10 kopt error\n");
}

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
static int list_problems(const char *root, char ***out)
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
static char *find_candidate(const kopt_problem *prob, const char *dir, const char *kind)
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
static const char *shape_check(const kopt_problem *prob, const kopt_eval_result *r, int skip)
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
static json_t *row_json(const char *problem, const char *cand_path, const char *kind,
                        const char *verdict, const char *message, const kopt_eval_result *r,
                        const char *shapes)
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

static double jnum(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* The times of a row below its speed-of-light bound, said under it. */
static void print_sol(json_t *row)
{
    json_t *flags = json_object_get(row, "sol_flags"), *f;
    size_t i;

    json_array_foreach(flags, i, f) {
        const char *who = json_string_value(f);
        for (int k = 0; k < 3; k++)
            if (who && strcmp(who, time_names[k]) == 0)
                printf("  ! speed of light: %s %.4f ms is below %.4f ms, the least time to move "
                       "its %.1f MB at %.0f GB/s (peak): not trusted, its speedup not used\n",
                       who, jnum(row, time_keys[k]), jnum(row, "sol_bound_ms"),
                       jnum(row, "work_bytes") / 1e6, jnum(row, "peak_gbs"));
    }
}

static void print_row(json_t *row)
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
        printf("%-34.34s %-14s %-7s %10s %10s %10s %9s %9s %4s %5s\n",
               json_string_value(json_object_get(row, "problem")),
               json_string_value(json_object_get(row, "verdict")),
               !sc || strcmp(sc, "not_run") == 0 ? "-" : strcmp(sc, "failed") == 0 ? "FAILED"
                                                                                : sc,
               t[0], t[1], t[2], s[0], s[1], owns, prec ? prec : "-");
    }
    if (strcmp(json_string_value(json_object_get(row, "verdict")), "OK") != 0)
        printf("  %s\n", json_string_value(json_object_get(row, "message")));
    print_sol(row);
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

static void print_summary(const char *label, const kopt_kb_summary *s)
{
    printf("%-11s fast_0 %.3f  fast_1 %.3f  fast_1.5 %.3f  fast_2 %.3f\n", label, s->fast[0],
           s->fast[1], s->fast[2], s->fast[3]);
    if (s->ntimed)
        printf("%-11s geomean speedup %.3fx over the %d correct and timed problem(s); %.3fx "
               "over all %d (a failure counts as 1.0x)\n", "", s->geomean_correct, s->ntimed,
               s->geomean_all, s->n);
    else
        printf("%-11s geomean speedup: no correct problem was timed; %.3fx over all %d (a "
               "failure counts as 1.0x)\n", "", s->geomean_all, s->n);
}

/* What finishing a row needs: the store, the suite, the running metrics, the output. */
typedef struct bench_state {
    kopt_run *run;
    kopt_store *store;
    kopt_ctx *ctx;
    int64_t suite;
    json_t *done_rows, *rows;
    kopt_kb_row *eager, *compiled, *best;
    int nrows, json;
    int skip_check;             /* --no-check-sizes */
    int nshape;                 /* SHAPE_SPECIFIC rows (failures, as any verdict but OK) */
    int nsol, nbound;           /* speed-of-light: times flagged, rows with a bound */
    int ncached;                /* rows whose torch.compile time came from the store */
    const char *kind;
    /* --gpus: the problems waiting for an evaluation */
    kopt_problem **probs;
    kopt_candidate **cands;
    char **cpaths;
} bench_state;

/* Store a problem's row (unless it was done before), count it, print it; takes `row`. */
static void finish_row(bench_state *b, const char *name, json_t *row)
{
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
    if (!b->json) {
        print_row(row);
        fflush(stdout);
    }
    json_array_append_new(b->rows, row);
}

/* --gpus: an evaluation finished (on the caller's thread, stored by the run already). */
static void gpu_done(void *user, int index, int gpu, kopt_status rc, kopt_eval_result *res,
                     kopt_ctx *ctx)
{
    bench_state *b = user;
    const kopt_problem *prob = b->probs[index];
    const kopt_candidate *cand = b->cands[index];
    json_t *row;

    if (rc != KOPT_OK)
        row = row_json(prob->name, b->cpaths[index], b->kind, "ERROR", kopt_errmsg(ctx), NULL,
                       shape_check(prob, NULL, b->skip_check));
    else
        row = row_json(prob->name, b->cpaths[index], cand->torch_module ? "py" : "cu",
                       kopt_verdict_name(res->verdict), res->message, res,
                       shape_check(prob, res, b->skip_check));
    json_object_set_new(row, "gpu", json_integer(gpu));
    finish_row(b, prob->name, row);
    kopt_eval_result_free(res);
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"candidates", required_argument, NULL, 'c'}, {"kind", required_argument, NULL, 'k'},
        {"no-compile", no_argument, NULL, 'C'}, {"resume", required_argument, NULL, 'R'},
        {"optimize", no_argument, NULL, 'O'}, {"iterations", required_argument, NULL, 'I'},
        {"optimize-wall", required_argument, NULL, 'W'},
        {"evaluator", required_argument, NULL, 'E'},
        {"fake-ref-ms", required_argument, NULL, 'F'},
        CLI_EVAL_LONG_OPTIONS, CLI_LLM_LONG_OPTIONS,
        {"db", required_argument, NULL, 'D'}, {"no-store", no_argument, NULL, 'N'},
        {"json", no_argument, NULL, 'j'}, {"verbose", no_argument, NULL, 'v'},
        {"gpus", required_argument, NULL, 'G'},
        {"server", optional_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    bench_state b;
    kopt_run_eval_job *pending = NULL;
    int gpus[KOPT_SCALE_MAX_SLOTS], ngpus = 0, npending = 0;
    const char *gpus_spec = NULL, *server_path = NULL;
    int server_asked = 0;
    kopt_eval_opts eo = KOPT_EVAL_OPTS_INIT;
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL;
    kopt_store *store;
    const char *cand_dir = NULL, *kind = "auto", *root = NULL;
    char *s_root = NULL, *s_cands = NULL, *s_opts = NULL, **probs = NULL, **stored = NULL;
    int json = 0, verbose = 0, no_store = 0, no_compile = 0, c, li = 0, code = 0, np = 0;
    int nstored = 0, nrows = 0;
    int64_t resume = 0, suite = 0;
    kopt_kb_row *eager = NULL, *compiled = NULL, *best = NULL;
    cli_bench_opt bo = {4, 0, NULL, 0, NULL, NULL, NULL, 0, NULL, NULL, NULL, 0};
    cli_llm llm;
    int optimize = 0;
    static volatile sig_atomic_t stop;
    json_t *rows = json_array(), *done_rows = json_object(), *options = NULL;
    kopt_ctx *ctx = cli_ctx(0);
    char *end;

    memset(&b, 0, sizeof(b));
    ro.db_path = cli_default_db();
    cli_llm_init(&llm);
    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", opts, &li)) != -1) {
        switch (c) {
        case 'c': cand_dir = optarg; break;
        case 'k': kind = optarg;
            if (strcmp(kind, "auto") && strcmp(kind, "cu") && strcmp(kind, "py") &&
                strcmp(kind, "reference"))
                goto bad_value;
            break;
        case 'C': no_compile = 1; break;
        case 'R': resume = strtoll(optarg, &end, 10);
            if (*end || resume <= 0) goto bad_value;
            break;
        case CLI_EVAL_OPTION:
            if (cli_eval_option(opts[li].name, optarg, &eo) != 0)
                goto bad_value;
            break;
        case 'O': optimize = 1; break;
        case 'I': bo.iterations = (int)strtol(optarg, &end, 10);
            if (*end || bo.iterations < 0) goto bad_value;
            break;
        case 'W': bo.max_wall_s = strtod(optarg, &end);
            if (*end || bo.max_wall_s < 0) goto bad_value;
            break;
        case 'E': bo.evaluator = optarg;
            if (strcmp(optarg, "live") && strcmp(optarg, "fake")) goto bad_value;
            break;
        case 'F': bo.fake_ref_ms = strtod(optarg, &end);
            if (*end || bo.fake_ref_ms <= 0) goto bad_value;
            break;
        case 'D': ro.db_path = optarg; break;
        case 'N': no_store = 1; break;
        case 'G': gpus_spec = optarg; break;
        case 'P': server_asked = 1; server_path = optarg; break;
        case 'j': json = 1; break;
        case 'v': verbose = 1; break;
        case 'h': help(stdout); goto done;
        default: {
            int r = cli_llm_option(&llm, "bench", c, optarg);
            if (r < 0) {
                code = KOPT_EXIT_USAGE;
                goto done;
            }
            if (r == 0) {
                help(stderr);
                code = KOPT_EXIT_USAGE;
                goto done;
            }
        }
        }
        continue;
bad_value:
        fprintf(stderr, "kopt bench: bad value '%s' (see kopt bench --help)\n", optarg);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (no_store)
        ro.db_path = NULL;
    if (server_asked && gpus_spec) {
        fprintf(stderr, "kopt bench: --server with --gpus: a kopt serve evaluates on its GPU, "
                        "one candidate at a time; give one or the other\n");
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (!gpus_spec && cli_server_socket("bench", server_asked, server_path, &eo.server) != 0) {
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    if (gpus_spec) {
        int count = kopt_scale_gpus_here();
        if (kopt_scale_devices_parse(ctx, gpus_spec, count, gpus, KOPT_SCALE_MAX_SLOTS,
                                     &ngpus) != KOPT_OK) {
            fprintf(stderr, "kopt bench: %s\n", kopt_errmsg(ctx));
            code = KOPT_EXIT_USAGE;
            goto done;
        }
        eo.device = gpus[0];
    }
    if (verbose)
        kopt_log_set(ctx, NULL, NULL, KOPT_LOG_INFO);
    if ((resume && optind != argc) || (!resume && optind + 1 != argc) || (resume && no_store) ||
        (optimize && (no_store || cand_dir))) {
        help(stderr);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    ro.kind = KOPT_RUN_BENCH;
    ro.parent_id = resume;
    cli_run_command(&ro);
    ro.device = eo.device;
    ro.cache_dir = eo.cache_dir;
    if (kopt_run_open(&run, ctx, &ro) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    store = kopt_run_store(run);
    if (resume) {
        json_t *o;
        if (kopt_store_bench_suite_get(store, ctx, resume, &s_root, &s_cands, &s_opts) !=
                KOPT_OK ||
            kopt_store_bench_rows(store, ctx, resume, &stored, &nstored) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_INVALID;
            goto done;
        }
        root = s_root;
        cand_dir = s_cands;
        if ((o = json_loads(s_opts ? s_opts : "{}", 0, NULL))) {
            static char kind_buf[16];
            snprintf(kind_buf, sizeof(kind_buf), "%s",
                     json_string_value(json_object_get(o, "kind")) ?: "auto");
            kind = kind_buf;
            no_compile = json_is_true(json_object_get(o, "no_compile"));
            if (json_is_true(json_object_get(o, "no_check_sizes")))
                eo.skip_check_sizes = 1;
            if (json_is_object(json_object_get(o, "optimize"))) {  /* the search's budget */
                json_t *op = json_object_get(o, "optimize");
                static char ev_buf[16];
                optimize = 1;
                bo.iterations = (int)json_integer_value(json_object_get(op, "iterations"));
                bo.max_wall_s = json_number_value(json_object_get(op, "max_wall_s"));
                bo.fake_ref_ms = json_number_value(json_object_get(op, "fake_ref_ms"));
                snprintf(ev_buf, sizeof(ev_buf), "%s",
                         json_string_value(json_object_get(op, "evaluator")) ?: "live");
                bo.evaluator = ev_buf;
            }
            json_decref(o);
        }
        for (int i = 0; i < nstored; i++) {
            json_t *r = json_loads(stored[i], 0, NULL);
            const char *p = json_string_value(json_object_get(r, "problem"));
            if (p)
                json_object_set(done_rows, p, r);
            json_decref(r);
        }
        suite = resume;
    } else {
        root = argv[optind];
        suite = kopt_run_id(run);
    }
    eo.torch_compile = !no_compile;
    options = json_pack("{s:s, s:b, s:b}", "kind", optimize ? "optimize" : kind, "no_compile",
                        no_compile, "no_check_sizes", eo.skip_check_sizes);
    if (optimize) {     /* kopt optimize per problem: the model, the budget */
        kopt_run_opts rc0 = KOPT_RUN_OPTS_INIT;
        if (strcmp(llm.spec ? llm.spec : "", "manual") == 0) {
            fprintf(stderr, "kopt bench: --optimize takes a model (--llm SPEC), not manual\n");
            code = KOPT_EXIT_USAGE;
            goto done;
        }
        cli_run_command(&rc0);
        bo.eval = &eo;
        bo.db_path = ro.db_path;
        bo.argc = rc0.argc;
        bo.argv = rc0.argv;
        bo.stop = &stop;
        bo.gpus = ngpus ? gpus : NULL;
        bo.ngpus = ngpus;
        json_object_set_new(options, "optimize", json_pack("{s:i, s:f, s:s, s:f}", "iterations",
                            bo.iterations, "max_wall_s", bo.max_wall_s, "evaluator",
                            bo.evaluator ? bo.evaluator : "live", "fake_ref_ms",
                            bo.fake_ref_ms));
    }
    if (store && !resume) {
        char *ot = json_dumps(options, JSON_COMPACT);
        kopt_status rc = kopt_store_bench_suite_put(store, ctx, suite, root, cand_dir, ot, NULL);
        free(ot);
        if (rc != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_ERROR;
            goto done;
        }
    }
    if ((np = list_problems(root, &probs)) <= 0) {
        fprintf(stderr, "kopt bench: %s: %s\n", root, np < 0 ? "cannot read the folder"
                                                            : "no problem folders in it");
        code = KOPT_EXIT_INVALID;
        goto done;
    }
    if (!json) {
        if (suite && optimize)
            printf("suite %lld: %d problem(s) from %s%s; candidates: kopt optimize's best per "
                   "problem (%d iteration(s)%s)%s\n", (long long)suite, np, root,
                   resume ? " (resumed)" : "", bo.iterations, bo.evaluator &&
                   strcmp(bo.evaluator, "fake") == 0 ? ", scripted evaluator" : "",
                   no_compile ? "" : "; baselines: eager, torch.compile");
        else if (suite)
            printf("suite %lld: %d problem(s) from %s%s; candidates: %s%s\n", (long long)suite,
                   np, root, resume ? " (resumed)" : "", strcmp(kind, "reference") == 0
                   ? "each problem's reference" : cand_dir ? cand_dir : "(none)",
                   no_compile ? "" : "; baselines: eager, torch.compile");
        if (eo.skip_check_sizes)
            printf("--no-check-sizes: candidates are checked at the benchmark's sizes only "
                   "(KernelBench's rule)\n");
        printf("%-34s %-14s %-7s %10s %10s %10s %9s %9s %4s %5s\n", "problem", "verdict",
               "shapes", "cand ms", "eager ms", "compile ms", "vs eager", "vs compile", "own",
               "prec");
    }
    eager = calloc((size_t)np, sizeof(*eager));
    compiled = calloc((size_t)np, sizeof(*compiled));
    best = calloc((size_t)np, sizeof(*best));
    memset(&b, 0, sizeof(b));
    b.run = run;
    b.store = store;
    b.ctx = ctx;
    b.suite = suite;
    b.done_rows = done_rows;
    b.rows = rows;
    b.eager = eager;
    b.compiled = compiled;
    b.best = best;
    b.json = json;
    b.kind = kind;
    b.skip_check = eo.skip_check_sizes;
    if (ngpus && (!(pending = calloc((size_t)np, sizeof(*pending))) ||
                  !(b.probs = calloc((size_t)np, sizeof(*b.probs))) ||
                  !(b.cands = calloc((size_t)np, sizeof(*b.cands))) ||
                  !(b.cpaths = calloc((size_t)np, sizeof(*b.cpaths))))) {
        fprintf(stderr, "kopt bench: out of memory\n");
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    for (int i = 0; i < np; i++) {
        kopt_problem *prob = NULL;
        kopt_candidate *cand = NULL;
        kopt_eval_result *res = NULL;
        char *cpath = NULL;
        const char *base = strrchr(probs[i], '/') ? strrchr(probs[i], '/') + 1 : probs[i];
        json_t *row = NULL, *prev, *opt_info = NULL;
        if (kopt_problem_load(&prob, ctx, probs[i]) != KOPT_OK) {
            row = row_json(base, NULL, kind, "INVALID", kopt_errmsg(ctx), NULL, "not_run");
        } else if ((prev = json_object_get(done_rows, prob->name))) {
            row = json_incref(prev);
        } else if (optimize && !bo.llm && (cli_llm_open(&llm, ctx, ro.db_path) != 0 ||
                                           !(bo.llm = llm.client))) {
            code = KOPT_EXIT_ERROR;     /* the model is opened when a search is first due */
            kopt_problem_free(prob);
            goto done;
        } else if (optimize && cli_bench_optimize(ctx, &bo, probs[i], prob->name, &cpath,
                                                  &opt_info) != 0) {
            row = row_json(prob->name, NULL, "optimize", "ERROR", kopt_errmsg(ctx), NULL,
                           shape_check(prob, NULL, b.skip_check));
        } else if (optimize && !cpath && !(cpath = strdup(prob->ref_path))) {
            row = row_json(prob->name, NULL, "optimize", "ERROR", "out of memory", NULL,
                           shape_check(prob, NULL, b.skip_check));
        } else if (!optimize && !(cpath = find_candidate(prob, cand_dir, kind))) {
            char msg[512];
            snprintf(msg, sizeof(msg), "no candidate for %s in %s (looked for %s.%s)",
                     prob->name, cand_dir ? cand_dir : "(no --candidates)", prob->name,
                     strcmp(kind, "auto") == 0 ? "cu and .py" : kind);
            row = row_json(prob->name, NULL, kind, "MISSING", msg, NULL,
                           shape_check(prob, NULL, b.skip_check));
        } else if (kopt_candidate_load(&cand, ctx, cpath, prob) != KOPT_OK) {
            row = row_json(prob->name, cpath, kind, "INVALID", kopt_errmsg(ctx), NULL,
                           shape_check(prob, NULL, b.skip_check));
        } else if (ngpus) {            /* --gpus: evaluated below, spread over the GPUs */
            pending[npending].prob = b.probs[npending] = prob;
            pending[npending].cand = b.cands[npending] = cand;
            b.cpaths[npending++] = cpath;
            continue;
        } else if (kopt_run_eval(run, ctx, prob, cand, &eo, "bench", &res) != KOPT_OK) {
            row = row_json(prob->name, cpath, kind, "ERROR", kopt_errmsg(ctx), NULL,
                           shape_check(prob, NULL, b.skip_check));
        } else {
            row = row_json(prob->name, cpath, optimize ? "optimize" : cand->torch_module
                           ? "py" : "cu", kopt_verdict_name(res->verdict), res->message, res,
                           shape_check(prob, res, b.skip_check));
        }
        if (opt_info) {     /* the search behind an --optimize row */
            json_object_set_new(row, "optimize", opt_info);
            opt_info = NULL;
        }
        finish_row(&b, prob ? prob->name : base, row);
        kopt_eval_result_free(res);
        kopt_candidate_free(cand);
        kopt_problem_free(prob);
        free(cpath);
    }
    if (npending && kopt_run_eval_many(run, ctx, pending, npending, &eo, gpus, ngpus, "bench",
                                       gpu_done, &b) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    nrows = b.nrows;
    {
        kopt_kb_summary se, sc, sb;
        json_t *sum;
        char *st;
        kopt_kb_summarize(eager, nrows, &se);
        kopt_kb_summarize(compiled, nrows, &sc);
        kopt_kb_summarize(best, nrows, &sb);
        sum = json_pack("{s:I, s:s, s:s?, s:O, s:o, s:o, s:o}", "suite", (json_int_t)suite,
                        "problems_dir", root, "candidates", cand_dir, "options", options,
                        "vs_eager", summary_json(&se), "vs_compile", no_compile ? json_null()
                                                                                : summary_json(&sc),
                        "vs_best", no_compile ? json_null() : summary_json(&sb));
        json_object_set_new(sum, "speed_of_light", json_pack("{s:i, s:i}", "rows_with_bound",
                            b.nbound, "times_below_bound", b.nsol));
        json_object_set_new(sum, "shape_specific", json_integer(b.nshape));
        json_object_set_new(sum, "compile_cached", json_integer(b.ncached));
        st = json_dumps(sum, JSON_COMPACT);
        if (store && kopt_store_bench_suite_put(store, ctx, suite, root, cand_dir, NULL, st) !=
                KOPT_OK)
            kopt_log(ctx, KOPT_LOG_WARN, "bench summary not stored: %s", kopt_errmsg(ctx));
        free(st);
        if (json) {
            json_object_set(sum, "rows", rows);
            cli_print_json(sum);
        } else {
            printf("\nsuite       %d problem(s), %d correct (correctness rate %.1f%%)\n", se.n,
                   se.ncorrect, 100 * se.correct_rate);
            if (b.nshape)
                printf("%-11s %d row(s) correct at the benchmark's sizes but wrong at the "
                       "problem's check sizes (SHAPE_SPECIFIC, counted as failures)\n", "shapes",
                       b.nshape);
            print_summary("vs eager", &se);
            if (!no_compile) {
                print_summary("vs compile", &sc);
                print_summary("vs best", &sb);   /* the faster of the two, row by row */
                if (b.ncached)
                    printf("%-11s %d of the torch.compile times were taken from the store "
                           "(measured by earlier runs: same problem, device, torch version, "
                           "sizes, timing options)\n", "compile", b.ncached);
            }
            if (b.nsol)
                printf("speed of light: %d time(s) below the problem's bytes / peak bandwidth "
                       "(marked ! above): not trusted, their speedups not used\n", b.nsol);
            else
                printf("speed of light: no time below its bound (%d of %d row(s) have one: "
                       "bytes / peak bandwidth)\n", b.nbound, se.n);
            json_decref(sum);
        }
        kopt_run_finish(run, ctx, KOPT_RUN_OK, NULL);
    }
done:
    for (int i = 0; i < npending; i++) {
        kopt_candidate_free(b.cands[i]);
        kopt_problem_free(b.probs[i]);
        free(b.cpaths[i]);
    }
    if (ngpus) {
        free(b.probs);
        free(b.cands);
        free(b.cpaths);
    }
    free(pending);
    for (int i = 0; i < np; i++)
        free(probs[i]);
    free(probs);
    for (int i = 0; i < nstored; i++)
        free(stored[i]);
    free(stored);
    free(s_root);
    free(s_cands);
    free(s_opts);
    free(eager);
    free(compiled);
    free(best);
    json_decref(rows);
    json_decref(done_rows);
    json_decref(options);
    kopt_run_close(run);
    cli_llm_close(&llm);
    kopt_ctx_free(ctx);
    return code;
}
