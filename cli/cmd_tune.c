/* kopt tune PROBLEM TEMPLATE.cu | --replay RUN_ID|CACHE.json: search a template's params
 * with one of the strategies, live on the GPU or against recorded measurements, one size set
 * (shape) after another; every outcome is cached in the store so an interrupted run resumes
 * without re-evaluating anything. docs/tuning.md is the guide. The work is the run API's
 * (kopt_run_tune_open, kopt_run_tune_go); this file parses options, shows progress, stops
 * on Ctrl-C and prints. */
#include "cli.h"

#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SHAPES KOPT_RUN_TUNE_MAX_SHAPES
#define SPACE_SCAN_LIMIT 1000000   /* points scanned when counting valid points */
#define SPACE_REASONS 5            /* pruning reasons shown */

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt tune PROBLEM TEMPLATE.cu [options]\n"
        "       kopt tune --replay RUN_ID|CACHE.json [PROBLEM [TEMPLATE.cu]] [options]\n"
        "       kopt tune PROBLEM TEMPLATE.cu --space\n"
        "       kopt tune --list-strategies\n"
        "\n"
        "Search the params of a template candidate (front matter \"params\" with lists, ranges\n"
        "or powers of two, and \"constraints\") for the fastest correct configuration: each\n"
        "point is compiled (ahead, on CPU threads), verified and timed as by kopt eval. Every\n"
        "outcome is stored (--db) as soon as it is known and reused by later runs with the same\n"
        "problem, sizes, template source and device; --resume continues an interrupted run\n"
        "with its strategy, seed and options. --replay runs a strategy on recorded measurements\n"
        "without a GPU. Without a GPU (and without --replay) the space is printed and the run\n"
        "is skipped (exit 0). Guide: docs/tuning.md.\n"
        "\n"
        "search:\n"
        "  --strategy NAME       default annealing (--list-strategies)\n"
        "  --options k=v,...     strategy hyper-parameters\n"
        "  --budget N            evaluations (new + cached; default 200, 0: unbounded)\n"
        "  --time SECONDS        wall-time budget per shape (default: none)\n"
        "  --seed N              strategy seed (default 1)\n"
        "  --objective O         time (default), energy, or time-energy (time first, then\n"
        "                        the least energy within --energy-slack of the best time)\n"
        "  --energy-window S     seconds of back-to-back runs per energy reading (default 1)\n"
        "  --energy-slack F      time-energy: fraction of the best time (default 0.05)\n"
        "  --compile-threads N   CPU threads compiling ahead, each with an NVRTC helper\n"
        "                        process (default: the usable CPUs less one per GPU, shared\n"
        "                        over the GPUs, 2 to 16 per GPU, at most 64; 0: no pipeline)\n"
        "  --lookahead N         points asked ahead for compiling (default: twice the compile\n"
        "                        threads; at least 8 per GPU, also when given with --gpus)\n"
        "scale-out (docs/scale.md):\n"
        "  --gpus all|0,2,5      evaluate on these GPUs at once, one session each, each round's\n"
        "                        points to the first free GPU (use a strategy that proposes\n"
        "                        several points a round: random, genetic, pso, diff_evolution,\n"
        "                        exhaustive, or annealing with --options batch=N)\n"
        "  under mpirun/srun     rank 0 searches and stores, the other ranks evaluate (one\n"
        "                        per GPU); libmpi.so.40 is loaded at run time\n"
        "shapes:\n"
        "  --sizes K=V,K=V       one size set to tune for (repeatable: each is tuned in turn)\n"
        "  --size K=V            override a size in every set (repeatable)\n"
        "cache and store:\n"
        "  --db PATH             store (default ./kopt.db or $KOPT_DB; with --replay: none\n"
        "                        unless given); --no-store to skip\n"
        "  --resume              continue the unfinished run of this key (its strategy, seed,\n"
        "                        options and budget, unless given again)\n"
        "  --fresh               ignore stored outcomes (everything is evaluated again)\n"
        "  --replay RUN|FILE     outcomes from a kopt cache file or a stored run (no GPU)\n"
        "  --template FILE       with --replay: the template (default: the path in the cache,\n"
        "                        relative to the cache file's folders or the working folder)\n"
        "  --problem DIR         with --replay: the problem (default: the template's folder)\n"
        "output:\n"
        "  --space               print the search space and exit (no GPU needed)\n"
        "  --out FILE.cu         write the winner with its params fixed (several shapes:\n"
        "                        FILE-1.cu, FILE-2.cu, ... in --sizes order)\n"
        "  --record FILE.json    write the run's complete cache (kopt's format; several\n"
        "                        shapes: FILE-1.json, ...)\n"
        "  --export-kt FILE      the cache in Kernel Tuner's cache format\n"
        "  --export-t4 FILE      the results in T4 format\n"
        "  --json                print the result as JSON\n"
        "  --no-progress         no progress display on stderr\n"
        "  -v, --verbose         log progress to stderr\n"
        "evaluation (as kopt eval):\n"
        "  --trials N (default 1), --budget-ms MS (default 30), --precision PCT (default 0.5),\n"
        "  --reps MIN:MAX (default 5:1000),\n"
        "  --no-flush, --no-check-sizes,\n"
        "  --timeout S, --device N, --arch sm_XX, --cache-dir DIR, --allow-spills\n"
        "  --findings            static micro-tool findings for every point (stored and\n"
        "                        recorded, for profile_guided replays; costs nvdisasm time)\n"
        "  --one-shot            evaluate each point as kopt eval does (fresh inputs, new\n"
        "                        workers); default: one session (one seed, the reference run\n"
        "                        once, one long-lived worker; the winner's final check is\n"
        "                        on fresh inputs either way)\n"
        "\n"
        "exit codes: 0 done (or skipped: no GPU), 2 usage, 9 invalid input file (problem,\n"
        "template, cache), 10 kopt error, 130 interrupted (the best so far is printed).\n");
}


/* ---- options ------------------------------------------------------------------------------ */

typedef struct tune_args {
    kopt_run_tune_opts o;           /* what the run API needs (strings point into argv) */
    kopt_vars shapes[MAX_SHAPES];   /* --sizes sets */
    kopt_vars overrides;            /* --size */
    const char *problem_path, *template_path;   /* --problem, --template */
    const char *db_path;
    const char *gpus_spec;          /* --gpus */
    int gpus[KOPT_SCALE_MAX_SLOTS];
    int db_given, no_store, space_only, list, runs, json, progress;
    int argc;
    char **argv;
} tune_args;

/* The command that resumes this run: the original arguments plus --resume. */
static void resume_command(const tune_args *a, char *buf, size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "kopt tune");
    int has_resume = 0;

    for (int i = 1; i < a->argc && at < n; i++) {
        const char *s = a->argv[i];
        int plain = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              "0123456789_-=,./:+") == strlen(s);
        has_resume |= strcmp(s, "--resume") == 0;
        if (strcmp(s, "--fresh") == 0)
            continue;
        at += (size_t)snprintf(buf + at, n - at, plain ? " %s" : " '%s'", s);
    }
    if (!has_resume && at < n)
        snprintf(buf + at, n - at, " --resume");
}

/* ---- Ctrl-C --------------------------------------------------------------------------------- */

static volatile sig_atomic_t g_stop;

static const char stop_msg[] = "\nkopt tune: stopping after the current evaluation "
                               "(Ctrl-C again to quit now; everything evaluated is stored)\n";

/* ---- progress ------------------------------------------------------------------------------- */

typedef struct progress_state {
    const kopt_run_tune *t;
    int tty, enabled, shape;
    double max_seconds;
    int last_tenth;            /* non-terminal: the last 10% step printed */
    size_t last_count;
    int drew;                  /* terminal: a line is on screen */
} progress_state;

static void on_progress(void *user, int shape, int nshapes, const kopt_tune_space *space,
                        const kopt_tune_progress *p)
{
    progress_state *ps = user;
    char line[512];
    size_t done;
    int tenth = -1;

    (void)nshapes;
    if (!ps->enabled)
        return;
    if (!p) {                  /* the shape ended */
        if (ps->drew)
            fprintf(stderr, "\n");
        ps->drew = 0;
        return;
    }
    if (shape != ps->shape) {
        ps->shape = shape;
        ps->last_tenth = 0;
        ps->last_count = 0;
    }
    done = p->evaluated + p->cached;
    if (ps->tty) {
        int width = 24, fill;
        double frac = p->budget ? (double)done / (double)p->budget
                    : ps->max_seconds > 0 ? p->elapsed_s / ps->max_seconds : 0;
        char bar[32];
        if (frac > 1)
            frac = 1;
        fill = (int)(frac * width + 0.5);
        for (int i = 0; i < width; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[width] = '\0';
        kopt_run_tune_progress_text(ps->t, shape, space, p, line, sizeof(line));
        fprintf(stderr, "\r\033[K[%s] %.*s", bar, 150, line);
        fflush(stderr);
        ps->drew = 1;
        return;
    }
    /* a log, not a terminal: one line per 10% of the budget (or every 50 evaluations) */
    if (p->budget)
        tenth = (int)(10 * done / p->budget);
    else if (ps->max_seconds > 0)
        tenth = (int)(10 * p->elapsed_s / ps->max_seconds);
    if (tenth >= 0 ? tenth <= ps->last_tenth : done < ps->last_count + 50)
        return;
    ps->last_tenth = tenth;
    ps->last_count = done;
    kopt_run_tune_progress_text(ps->t, shape, space, p, line, sizeof(line));
    fprintf(stderr, "kopt tune: %s\n", line);
}

/* ---- the space -------------------------------------------------------------------------- */

static void print_space(const kopt_tune_space *s, const kopt_tune_space_summary *sum,
                        const char *limits)
{
    printf("space      %d params, %llu points; %s%llu valid%s\n", s->nparams,
           (unsigned long long)s->npoints, sum->exact ? "" : "at least ",
           (unsigned long long)sum->valid,
           sum->exact ? "" : " (counted among the first points only)");
    if (!sum->exact)
        printf("           (scanned %llu of %llu points)\n", (unsigned long long)sum->scanned,
               (unsigned long long)s->npoints);
    for (int i = 0; i < s->nparams; i++) {
        const kopt_param_spec *p = &s->params[i];
        printf("  param    %-12s", p->name);
        for (int v = 0; v < p->nvalues; v++)
            printf("%s%lld", v ? "," : " ", (long long)p->values[v]);
        printf("  (%d value%s%s%s)\n", p->nvalues, p->nvalues == 1 ? "" : "s",
               p->role[0] ? ", role " : "", p->role);
    }
    for (int i = 0; i < s->nconstraints; i++)
        printf("  require  %s\n", s->constraints[i]);
    printf("limits     %s\n", limits);
    for (int i = 0; i < sum->nreasons && i < SPACE_REASONS; i++)
        printf("  pruned   %llu: %s\n", (unsigned long long)sum->reasons[i].n,
               sum->reasons[i].text);
    if (sum->nreasons > SPACE_REASONS || sum->other_reasons)
        printf("  pruned   ... and %d more reason(s)\n",
               sum->nreasons - SPACE_REASONS > 0 ? sum->nreasons - SPACE_REASONS : 1);
}

/* ---- results ------------------------------------------------------------------------------ */

/* Scale-out: what each slot evaluated. */
static void print_scale(const kopt_run_tune *t)
{
    for (int i = 0; i < t->nslots; i++) {
        const kopt_scale_slot_stats *s = &t->slots[i];
        char where[160];
        if (strcmp(s->kind, "mpi") == 0)
            snprintf(where, sizeof(where), "rank %d (%s %d on %s)", s->where.rank,
                     s->where.name[0] ? s->where.name : "GPU", s->where.device, s->where.host);
        else
            snprintf(where, sizeof(where), "%s %d (%s)", s->kind, s->where.device,
                     s->where.name[0] ? s->where.name : "?");
        printf("%s %-40s %4d evaluations, busy %.1f s%s\n", i ? "          " : "slots     ",
               where, s->jobs, s->busy_s, s->lost ? "; LOST (its evaluation went back to the "
               "queue)" : "");
    }
    if (t->mixed[0])
        printf("  mixed    the GPUs differ (%s): times compared within one model only; %d "
               "finalist(s) re-timed on slot 0\n", t->mixed, t->retimed);
}

static void print_text(const kopt_run_tune *t, const tune_args *a, int n, const char *mode)
{
    const kopt_run_tune_shape *runs = t->shapes;

    printf("problem    %s (%s)\n", t->prob->name, t->prob->path);
    printf("template   %s: %d params\n", t->tmpl_path, t->tmpl->ntemplate_params);
    printf("device     %s%s\n", runs[0].key.device[0] ? runs[0].key.device : "unknown",
           strcmp(mode, "replay") == 0 ? " (replayed: no GPU used)" : "");
    printf("strategy   %s%s%s (seed %llu), objective %s, budget ", runs[0].strategy,
           runs[0].options[0] ? " " : "", runs[0].options,
           (unsigned long long)runs[0].seed, kopt_run_tune_objective_name(t->objective));
    if (runs[0].budget)
        printf("%d evaluations", runs[0].budget);
    else
        printf("unbounded");
    if (a->o.seconds > 0)
        printf(", %.0f s", a->o.seconds);
    printf("\n");
    if (strcmp(mode, "live") == 0)
        printf("compile    %d thread(s)%s, %d point(s) asked ahead (%s; %d usable CPU(s))\n",
               t->compile_threads, t->compile_helpers > 0 ? " with helper processes" : "",
               t->lookahead, (a->o.given & KOPT_RUN_TUNE_GIVEN_COMPILE_THREADS) ? "as given"
               : "by default", t->cpus_usable);
    for (int i = 0; i < n; i++) {
        const kopt_run_tune_shape *sr = &runs[i];
        const kopt_tune_result *r = sr->res;
        if (!r)
            continue;
        printf("shape %-4d %s: stopped (%s) after %zu evaluations (%zu new, %zu cached, "
               "%zu failed) in %.1f s%s\n", i + 1, sr->key.sizes, kopt_tune_stop_name(r->stop),
               r->evaluated + r->cached, r->evaluated, r->cached, r->failed, r->elapsed_s,
               sr->resumed ? "; resumed" : "");
        if (sr->loaded)
            printf("  store    %zu outcomes known before the run, %zu evaluated again\n",
                   sr->loaded, sr->reevaluated);
        if (r->nimprovements)
            printf("  converge %zu improvements; the last after %zu evaluations\n",
                   r->nimprovements, r->best_after[r->nimprovements - 1]);
        if (r->npareto > 1) {
            printf("  pareto   %zu points (time vs energy):", r->npareto);
            for (size_t p = 0; p < r->npareto && p < 6; p++) {
                const kopt_tune_outcome *o = kopt_tune_cache_get(sr->cache, r->pareto[p]);
                if (o)
                    printf(" %.4f ms/%.3f mJ", o->time_ms, o->energy_mj);
            }
            printf("%s\n", r->npareto > 6 ? " ..." : "");
        }
        if (sr->final && sr->final->verdict == KOPT_VERDICT_OK)
            printf("  checked  the winner as kopt eval would: OK, median %.4f ms, %.2fx the "
                   "reference%s%.1f%% of the roofline bound\n", sr->final->timing.median_ms,
                   sr->final->speedup, sr->final->roofline.valid ? ", " : "",
                   sr->final->roofline.valid ? sr->final->roofline.pct_of_bound : 0.0);
        else if (sr->final)
            printf("  checked  the winner as kopt eval would: %s: %s\n",
                   kopt_verdict_name(sr->final->verdict), sr->final->message);
        if (sr->out_path[0])
            printf("  wrote    %s\n", sr->out_path);
        if (sr->record_path[0])
            printf("  recorded %s\n", sr->record_path);
        if (sr->kt_path[0])
            printf("  exported %s (Kernel Tuner cache)\n", sr->kt_path);
        if (sr->t4_path[0])
            printf("  exported %s (T4)\n", sr->t4_path);
    }
    print_scale(t);
    if (t->held_back[0])
        printf("held back %s\n", t->held_back);
    printf("\nbest per shape:\n  %-3s %-28s %12s %12s  %s\n", "#", "sizes",
           t->objective == KOPT_TUNE_ENERGY ? "energy mJ" : "time ms", "1st/best", "params");
    for (int i = 0; i < n; i++) {
        const kopt_run_tune_shape *sr = &runs[i];
        const kopt_tune_result *r = sr->res;
        char *label;
        double first = INFINITY, best;
        if (!r || !r->has_best) {
            printf("  %-3d %-28s %12s %12s  (no correct configuration)\n", i + 1, sr->key.sizes,
                   "-", "-");
            continue;
        }
        best = kopt_tune_outcome_objective(&r->best, t->objective);
        for (size_t k = 0; k < r->n && !isfinite(first); k++)
            first = kopt_tune_outcome_objective(&r->outcomes[k], t->objective);
        label = kopt_tune_space_label(sr->space, r->best_point);
        printf("  %-3d %-28s %12.4f %11.2fx  %s\n", i + 1, sr->key.sizes, best,
               isfinite(first) && best > 0 ? first / best : 1.0, label ? label : "?");
        free(label);
    }
}

/* ---- setup -------------------------------------------------------------------------------- */

static int list_strategies(int json)
{
    json_t *arr = json ? json_array() : NULL;

    for (int i = 0; kopt_tune_strategies[i]; i++) {
        const kopt_tune_strategy *s = kopt_tune_strategies[i];
        if (arr)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:b}", "name", s->name, "summary",
                                                 s->summary, "wants_findings",
                                                 s->wants_findings));
        else
            printf("%-16s %s\n", s->name, s->summary);
    }
    if (arr)
        cli_print_json(arr);
    return 0;
}

/* Options; returns -1 (and the exit code in *code) to stop. */
static int parse_args(tune_args *a, kopt_ctx *ctx, int argc, char **argv, int *code)
{
    static const struct option opts[] = {
        {"strategy", required_argument, NULL, 'y'}, {"options", required_argument, NULL, 'O'},
        {"list-strategies", no_argument, NULL, 'l'}, {"budget", required_argument, NULL, 'n'},
        {"time", required_argument, NULL, 'W'}, {"seed", required_argument, NULL, 'S'},
        {"objective", required_argument, NULL, 'o'},
        {"energy-window", required_argument, NULL, 'E'},
        {"energy-slack", required_argument, NULL, 'K'},
        {"compile-threads", required_argument, NULL, 'P'},
        {"lookahead", required_argument, NULL, 'A'}, {"sizes", required_argument, NULL, 'Z'},
        {"size", required_argument, NULL, 's'}, {"out", required_argument, NULL, 'u'},
        {"space", no_argument, NULL, 'x'}, {"resume", no_argument, NULL, 'r'},
        {"fresh", no_argument, NULL, 'f'}, {"replay", required_argument, NULL, 'R'},
        {"template", required_argument, NULL, 'M'}, {"problem", required_argument, NULL, 'Q'},
        {"record", required_argument, NULL, 'w'}, {"export-kt", required_argument, NULL, 'k'},
        {"export-t4", required_argument, NULL, '4'}, {"json", no_argument, NULL, 'j'},
        {"no-progress", no_argument, NULL, 'G'}, {"db", required_argument, NULL, 'D'},
        {"no-store", no_argument, NULL, 'N'},
        CLI_EVAL_LONG_OPTIONS,
        {"allow-spills", no_argument, NULL, 'B'}, {"verbose", no_argument, NULL, 'v'},
        {"runs", no_argument, NULL, 'U'}, {"one-shot", no_argument, NULL, 1001},
        {"findings", no_argument, NULL, 1002}, {"gpus", required_argument, NULL, 1003},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    char *end;
    long v;
    int c, li = 0;

    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", opts, &li)) != -1) {
        switch (c) {
        case 'y': a->o.strategy = optarg; a->o.given |= KOPT_RUN_TUNE_GIVEN_STRATEGY; break;
        case 'O': a->o.options = optarg; a->o.given |= KOPT_RUN_TUNE_GIVEN_OPTIONS; break;
        case 'l': a->list = 1; break;
        case 'n': v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > INT_MAX) goto bad_number;
            a->o.budget = (int)v;
            a->o.given |= KOPT_RUN_TUNE_GIVEN_BUDGET;
            break;
        case 'W': a->o.seconds = strtod(optarg, &end);
            if (*end || a->o.seconds < 0) goto bad_number;
            break;
        case 'S': a->o.seed = strtoull(optarg, &end, 0);
            if (*end) goto bad_number;
            a->o.given |= KOPT_RUN_TUNE_GIVEN_SEED;
            break;
        case 'o':
            a->o.given |= KOPT_RUN_TUNE_GIVEN_OBJECTIVE;
            if (kopt_run_tune_objective_parse(optarg, &a->o.objective) != 0) {
                fprintf(stderr, "kopt tune: --objective '%s': use time, energy or "
                        "time-energy\n", optarg);
                goto usage;
            }
            break;
        case 'E': a->o.energy_s = strtod(optarg, &end);
            if (*end || a->o.energy_s <= 0) goto bad_number;
            break;
        case 'K': a->o.energy_slack = strtod(optarg, &end);
            if (*end || a->o.energy_slack < 0) goto bad_number;
            break;
        case 'P': v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > 256) goto bad_number;
            a->o.compile_threads = (int)v;
            a->o.given |= KOPT_RUN_TUNE_GIVEN_COMPILE_THREADS;
            break;
        case 'A': v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 4096) goto bad_number;
            a->o.lookahead = (int)v;
            a->o.given |= KOPT_RUN_TUNE_GIVEN_LOOKAHEAD;
            break;
        case 'Z':
            if (a->o.nshapes == MAX_SHAPES) {
                fprintf(stderr, "kopt tune: at most %d --sizes sets\n", MAX_SHAPES);
                goto usage;
            }
            if (kopt_vars_parse_list(ctx, optarg, &a->shapes[a->o.nshapes]) != KOPT_OK) {
                fprintf(stderr, "kopt tune: --sizes %s\n", kopt_errmsg(ctx));
                kopt_vars_free(&a->shapes[a->o.nshapes]);
                goto usage;
            }
            a->o.nshapes++;
            break;
        case 's':
            if (cli_parse_size(ctx, "tune", optarg, &a->overrides) != 0)
                goto usage;
            break;
        case 'u': a->o.out = optarg; break;
        case 'x': a->space_only = 1; break;
        case 'r': a->o.resume = 1; break;
        case 'f': a->o.fresh = 1; break;
        case 'R': a->o.replay = optarg; break;
        case 'M': a->template_path = optarg; break;
        case 'Q': a->problem_path = optarg; break;
        case 'w': a->o.record = optarg; break;
        case 'k': a->o.export_kt = optarg; break;
        case '4': a->o.export_t4 = optarg; break;
        case 'j': a->json = 1; break;
        case 'G': a->progress = 0; break;
        case 'D': a->db_path = optarg; a->db_given = 1; break;
        case 'N': a->no_store = 1; break;
        case CLI_EVAL_OPTION:
            if (cli_eval_option(opts[li].name, optarg, &a->o.eval) != 0)
                goto bad_number;
            break;
        case 'B': a->o.allow_spills = 1; break;
        case 1001: a->o.one_shot = 1; break;
        case 1002: a->o.findings = 1; break;
        case 1003: a->gpus_spec = optarg; break;
        case 'U': a->runs = 1; break;
        case 'v': kopt_log_set(ctx, NULL, NULL, KOPT_LOG_INFO); break;
        case 'h': help(stdout); *code = 0; return -1;
        default: goto usage;
        }
        continue;
bad_number:
        fprintf(stderr, "kopt tune: bad value '%s' (see kopt tune --help)\n", optarg);
        *code = KOPT_EXIT_USAGE;
        return -1;
    }
    if (a->o.resume && a->o.fresh) {
        fprintf(stderr, "kopt tune: --resume and --fresh contradict each other\n");
        goto usage_quiet;
    }
    if (a->list || a->runs)
        return 0;
    if (a->o.replay ? argc - optind > 2 : argc - optind != 2) {
        if (!a->o.replay && argc - optind < 2)
            fprintf(stderr, "kopt tune: needs PROBLEM and TEMPLATE.cu (or --replay)\n");
        goto usage;
    }
    return 0;
usage:
    help(stderr);
usage_quiet:
    *code = KOPT_EXIT_USAGE;
    return -1;
}

/* --runs: the stored tuning runs, newest first. */
static int list_runs(kopt_ctx *ctx, const tune_args *a)
{
    kopt_store_tune_run *v = NULL;
    int n = 0;

    if (kopt_run_tune_list(ctx, a->db_path, &v, &n) != KOPT_OK) {
        cli_error(ctx);
        return KOPT_EXIT_ERROR;
    }
    if (a->json) {
        cli_print_text(kopt_run_tune_runs_json(v, n));
    } else {
        printf("%-5s %-20s %-12s %-24s %-12s %-11s %6s  %s\n", "run", "created", "problem",
               "sizes", "strategy", "stop", "evals", "best");
        for (int i = 0; i < n; i++)
            printf("%-5lld %-20.20s %-12.12s %-24.24s %-12.12s %-11s %6lld  %s\n",
                   (long long)v[i].id, v[i].created_at, v[i].key.problem, v[i].key.sizes,
                   v[i].strategy, v[i].finished ? v[i].stop : "unfinished",
                   (long long)v[i].nevals, v[i].best_label);
        if (!n)
            printf("(no tuning runs in %s)\n", a->db_path);
    }
    free(v);
    return 0;
}

/* --space, or no GPU: the space of each shape. */
static void print_spaces(const kopt_run_tune *t, const tune_args *a)
{
    if (!a->space_only)
        fprintf(stderr, "kopt tune: tuning needs a GPU (%s); printing the space only "
                "(kopt tune --replay runs on recorded measurements without one)\n",
                t->why_no_device);
    if (a->json) {
        cli_print_text(kopt_run_tune_space_json(t, !a->space_only));
        return;
    }
    printf("problem    %s (%s)\n", t->prob->name, t->prob->path);
    printf("template   %s\n", t->tmpl_path);
    for (int i = 0; i < t->nshapes; i++) {
        kopt_tune_space_summary sum;
        kopt_tune_space_summarize(t->shapes[i].space, SPACE_SCAN_LIMIT, &sum);
        printf("sizes      %s\n", t->shapes[i].key.sizes);
        print_space(t->shapes[i].space, &sum, t->limits_text);
    }
    if (!a->space_only)
        printf("verdict    SKIPPED: no GPU here; nothing was tuned\n");
}

/* "42": --replay names a stored run (anything else is a cache file). */
static int run_id_arg(const char *s)
{
    return s && *s && strspn(s, "0123456789") == strlen(s);
}

/* A failed step's exit code. */
static int fault_code(const kopt_run *run)
{
    switch (kopt_run_last_fault(run)) {
    case KOPT_RUN_FAULT_USAGE: return KOPT_EXIT_USAGE;
    case KOPT_RUN_FAULT_INPUT: return KOPT_EXIT_INVALID;
    default: return KOPT_EXIT_ERROR;
    }
}

int cmd_tune(int argc, char **argv)
{
    tune_args a;
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL;
    kopt_run_tune *t = NULL;
    kopt_scale_mpi *mpi = NULL;
    kopt_ctx *ctx = cli_ctx(0);
    progress_state ps;
    int code = 0, npos, interrupted = 0;
    struct sigaction old_sa;
    const char *delay = getenv("KOPT_TUNE_REPLAY_DELAY_MS");

    memset(&a, 0, sizeof(a));
    memset(&ps, 0, sizeof(ps));
    kopt_run_tune_opts_default(&a.o);   /* tuning's evaluation defaults */
    a.progress = 1;
    a.argc = argc;
    a.argv = argv;
    a.db_path = cli_default_db();
    g_stop = 0;

    if (parse_args(&a, ctx, argc, argv, &code) != 0)
        goto done;
    if (a.list) {
        code = list_strategies(a.json);
        goto done;
    }
    if (!kopt_tune_strategy_find(a.o.strategy)) {
        fprintf(stderr, "kopt tune: unknown strategy '%s' (kopt tune --list-strategies)\n",
                a.o.strategy);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (a.no_store || (a.o.replay && !a.db_given && !run_id_arg(a.o.replay)))
        a.db_path = NULL;
    if (a.runs) {
        if (!a.db_path) {
            fprintf(stderr, "kopt tune: --runs needs a store (--db PATH)\n");
            code = KOPT_EXIT_USAGE;
        } else {
            code = list_runs(ctx, &a);
        }
        goto done;
    }
    if (a.gpus_spec) {
        int count = kopt_scale_gpus_here();
        if (kopt_scale_devices_parse(ctx, a.gpus_spec, count, a.gpus, KOPT_SCALE_MAX_SLOTS,
                                     &a.o.ngpus) != KOPT_OK) {
            fprintf(stderr, "kopt tune: %s\n", kopt_errmsg(ctx));
            if (count != 0) {
                code = KOPT_EXIT_USAGE;
                goto done;
            }
            a.o.ngpus = 0;              /* no GPU: as without --gpus (the space only) */
        }
        a.o.gpus = a.gpus;
        if (a.o.ngpus > 0)
            a.o.eval.device = a.gpus[0];  /* the final check and the run's record */
    }
    if (!a.space_only && !a.o.replay && kopt_scale_mpi_launched()) {
        if (kopt_scale_mpi_open(&mpi, ctx) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_ERROR;
            goto done;
        }
        a.o.mpi = mpi;
        if (kopt_scale_mpi_rank(mpi) > 0) {   /* rank 0 owns the store and the output */
            a.db_path = NULL;
            a.progress = 0;
        }
    }
    if ((a.o.resume || run_id_arg(a.o.replay)) && !a.db_path &&
        kopt_scale_mpi_rank(mpi) == 0) {
        fprintf(stderr, "kopt tune: %s needs a store (--db PATH)\n",
                a.o.resume ? "--resume" : "--replay RUN_ID");
        code = KOPT_EXIT_USAGE;
        goto done;
    }

    /* the run (its store unless --space) and the tuning set up: problem, template, device,
     * shapes with their spaces */
    ro.kind = KOPT_RUN_TUNE;
    ro.db_path = a.space_only ? NULL : a.db_path;
    cli_run_command(&ro);
    ro.device = a.o.eval.device;
    ro.cache_dir = a.o.eval.cache_dir;
    if (kopt_run_open(&run, ctx, &ro) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    npos = argc - optind;
    a.o.problem_path = a.o.replay ? (a.problem_path ? a.problem_path
                                                    : npos >= 1 ? argv[optind] : NULL)
                                  : argv[optind];
    a.o.template_path = a.o.replay ? (a.template_path ? a.template_path
                                                      : npos >= 2 ? argv[optind + 1] : NULL)
                                   : argv[optind + 1];
    a.o.shapes = a.shapes;
    a.o.overrides = &a.overrides;
    a.o.progress = on_progress;
    a.o.progress_user = &ps;
    a.o.stop = &g_stop;
    a.o.replay_delay_ms = delay ? strtod(delay, NULL) : 0;
    if (kopt_run_tune_open(&t, run, ctx, &a.o) != KOPT_OK) {
        cli_error(ctx);
        code = fault_code(run);
        goto done;
    }

    /* --space, or no GPU: the space summary */
    if (a.space_only || (!t->replay && !t->has_device)) {
        print_spaces(t, &a);
        kopt_run_finish(run, ctx, KOPT_RUN_SKIPPED, NULL);
        goto done;
    }

    /* tune each shape in turn; Ctrl-C stops the current one and skips the rest */
    cli_sigint_stop(&g_stop, stop_msg, &old_sa);
    ps.t = t;
    ps.enabled = a.progress;
    ps.tty = isatty(STDERR_FILENO);
    ps.max_seconds = a.o.seconds;
    if (kopt_run_tune_go(t, ctx) != KOPT_OK) {
        cli_error(ctx);
        code = fault_code(run);
    }
    sigaction(SIGINT, &old_sa, NULL);
    if (t->mpi_rank > 0) {              /* served rank 0: it prints and stores */
        if (!code)
            kopt_run_finish(run, ctx, KOPT_RUN_OK, NULL);
        goto done;
    }
    if (t->nrun > 0 && t->shapes[0].res) {
        if (a.json)
            cli_print_text(kopt_run_tune_json(t));
        else
            print_text(t, &a, t->nrun, t->replay ? "replay" : "live");
    }
    interrupted = t->interrupted || g_stop;
    if (interrupted) {
        char cmd[4096];
        resume_command(&a, cmd, sizeof(cmd));
        fprintf(stderr, "kopt tune: interrupted; the best so far is above%s. Continue with:\n"
                "  %s\n", kopt_run_store(run) ? " and every outcome is stored" : " (no store: "
                "nothing was kept)", cmd);
        if (!code)
            code = 130;
    }
    if (!code || interrupted)
        kopt_run_finish(run, ctx, interrupted ? KOPT_RUN_INTERRUPTED : KOPT_RUN_OK, NULL);
done:
    kopt_run_tune_free(t);
    kopt_run_close(run);
    kopt_scale_mpi_close(mpi);
    for (int i = 0; i < MAX_SHAPES; i++)
        kopt_vars_free(&a.shapes[i]);
    kopt_vars_free(&a.overrides);
    kopt_ctx_free(ctx);
    return code;
}
