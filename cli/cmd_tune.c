/* kopt tune PROBLEM TEMPLATE.cu | --replay RUN_ID|CACHE.json: search a template's params
 * with one of the strategies, live on the GPU or against recorded measurements, one size set
 * (shape) after another; every outcome is cached in the store so an interrupted run resumes
 * without re-evaluating anything. docs/tuning.md is the guide. The work is the run API's
 * (kopt_run_tune_open, kopt_run_tune_go; its text, JSON and progress display,
 * src/run/print_tune.c); this file parses options and stops on Ctrl-C. */
#include "cli.h"

#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHAPES KOPT_RUN_TUNE_MAX_SHAPES

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

typedef struct tune_args {
    kopt_run_tune_opts o;           /* what the run API needs (strings point into argv) */
    kopt_vars shapes[MAX_SHAPES];   /* --sizes sets */
    kopt_vars overrides;            /* --size */
    const char *problem_path, *template_path;   /* --problem, --template */
    const char *db_path;
    const char *gpus_spec;          /* --gpus */
    int gpus[KOPT_SCALE_MAX_SLOTS];
    int db_given, no_store, space_only, list, runs, json, progress;
} tune_args;

static volatile sig_atomic_t g_stop;

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

/* "42": --replay names a stored run (anything else is a cache file). */
static int run_id_arg(const char *s)
{
    return s && *s && strspn(s, "0123456789") == strlen(s);
}

int cmd_tune(int argc, char **argv)
{
    tune_args a;
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL;
    kopt_run_tune *t = NULL;
    kopt_scale_mpi *mpi = NULL;
    kopt_ctx *ctx = cli_ctx(0);
    kopt_run_tune_meter ps;
    int code = 0, interrupted = 0, rank = 0;
    struct sigaction old_sa;
    const char *delay = getenv("KOPT_TUNE_REPLAY_DELAY_MS");

    memset(&a, 0, sizeof(a));
    kopt_run_tune_meter_init(&ps, NULL, stderr, 0);
    kopt_run_tune_opts_default(&a.o);   /* tuning's evaluation defaults */
    a.progress = 1;
    a.db_path = cli_default_db();
    g_stop = 0;

    if (parse_args(&a, ctx, argc, argv, &code) != 0)
        goto done;
    if (a.list) {               /* --list-strategies */
        kopt_run_tune_strategies_print(stdout, a.json);
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
        } else if (kopt_run_tune_runs_print(stdout, ctx, a.db_path, a.json) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_ERROR;
        }
        goto done;
    }
    if (a.gpus_spec) {
        int count = kopt_scale_gpus_here();
        if (cli_gpus(ctx, "tune", a.gpus_spec, count, a.gpus, &a.o.ngpus) != 0) {
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
    if (!a.space_only && (rank = kopt_run_tune_mpi(&a.o, ctx, &mpi)) < 0) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    if (rank > 0) {                     /* rank 0 owns the store and the output */
        a.db_path = NULL;
        a.progress = 0;
    }
    if ((a.o.resume || run_id_arg(a.o.replay)) && !a.db_path &&
        rank == 0) {
        fprintf(stderr, "kopt tune: %s needs a store (--db PATH)\n",
                a.o.resume ? "--resume" : "--replay RUN_ID");
        code = KOPT_EXIT_USAGE;
        goto done;
    }

    /* the run (its store unless --space) and the tuning set up: problem, template, device,
     * shapes with their spaces */
    ro.kind = KOPT_RUN_TUNE;
    ro.db_path = a.space_only ? NULL : a.db_path;
    if (cli_run_open(ctx, &ro, &a.o.eval, &run) != 0) {
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    if (!a.o.replay)        /* live: PROBLEM TEMPLATE.cu; a replay: --problem and --template,
                             * else those, else the recording's */
        a.problem_path = a.template_path = NULL;
    a.o.problem_path = a.problem_path ? a.problem_path : optind < argc ? argv[optind] : NULL;
    a.o.template_path = a.template_path ? a.template_path
                        : optind + 1 < argc ? argv[optind + 1] : NULL;
    a.o.shapes = a.shapes;
    a.o.overrides = &a.overrides;
    a.o.progress = kopt_run_tune_meter_show;
    a.o.progress_user = &ps;
    a.o.stop = &g_stop;
    a.o.replay_delay_ms = delay ? strtod(delay, NULL) : 0;
    if (kopt_run_tune_open(&t, run, ctx, &a.o) != KOPT_OK) {
        cli_error(ctx);
        code = cli_fault_code(run);
        goto done;
    }

    /* --space, or no GPU: the space summary */
    if (a.space_only || (!t->replay && !t->has_device)) {
        if (!a.space_only)
            fprintf(stderr, "kopt tune: tuning needs a GPU (%s); printing the space only "
                    "(kopt tune --replay runs on recorded measurements without one)\n",
                    t->why_no_device);
        kopt_run_tune_space_print(stdout, t, !a.space_only, a.json);
        kopt_run_finish(run, ctx, KOPT_RUN_SKIPPED, NULL);
        goto done;
    }

    /* tune each shape in turn; Ctrl-C stops the current one and skips the rest */
    cli_sigint_stop(&g_stop, "\nkopt tune: stopping after the current evaluation (Ctrl-C again "
                    "to quit now; everything evaluated is stored)\n", &old_sa);
    kopt_run_tune_meter_init(&ps, t, stderr, a.progress);
    if (kopt_run_tune_go(t, ctx) != KOPT_OK) {
        cli_error(ctx);
        code = cli_fault_code(run);
    }
    sigaction(SIGINT, &old_sa, NULL);
    if (t->mpi_rank > 0) {              /* served rank 0: it prints and stores */
        if (!code)
            kopt_run_finish(run, ctx, KOPT_RUN_OK, NULL);
        goto done;
    }
    if (t->nrun > 0 && t->shapes[0].res)
        kopt_run_tune_print(stdout, t, a.json);
    if ((interrupted = t->interrupted || g_stop)) {
        kopt_run_tune_print_stopped(stderr, t, argc, argv);
        code = code ? code : 130;
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
