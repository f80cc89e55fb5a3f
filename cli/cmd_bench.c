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

/* The suite (kopt/kb.h) and, with --gpus, the problems waiting for an evaluation. */
typedef struct bench_state {
    kopt_kb_suite s;
    kopt_problem **probs;
    kopt_candidate **cands;
    char **cpaths;
} bench_state;

/* --gpus: an evaluation finished (on the caller's thread, stored by the run already). */
static void gpu_done(void *user, int index, int gpu, kopt_status rc, kopt_eval_result *res,
                     kopt_ctx *ctx)
{
    bench_state *b = user;
    json_t *row = kopt_kb_eval_row(&b->s, b->probs[index], b->cands[index], b->cpaths[index], 0,
                                   rc, res, ctx);

    json_object_set_new(row, "gpu", json_integer(gpu));
    kopt_kb_suite_add(&b->s, b->probs[index]->name, row);
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
    const char *cand_dir = NULL, *kind = "auto", *root = NULL;
    char *s_root = NULL, *s_cands = NULL, **probs = NULL;
    int json = 0, verbose = 0, no_store = 0, no_compile = 0, c, li = 0, code = 0, np = 0;
    int64_t resume = 0, suite = 0;
    kopt_kb_suite_opts so;
    cli_bench_opt bo = {4, 0, NULL, 0, NULL, NULL, NULL, 0, NULL, NULL, NULL, 0};
    cli_llm llm;
    int optimize = 0;
    static volatile sig_atomic_t stop;
    json_t *options = NULL;
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
        if (cli_gpus(ctx, "bench", gpus_spec, count, gpus, &ngpus) != 0) {
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
    if (cli_run_open(ctx, &ro, &eo, &run) != 0) {
        code = KOPT_EXIT_ERROR;
        goto done;
    }

    kopt_kb_suite_init(&b.s, run, ctx);
    snprintf(so.kind, sizeof(so.kind), "%s", kind);
    snprintf(so.evaluator, sizeof(so.evaluator), "%s", bo.evaluator ? bo.evaluator : "");
    so.no_compile = no_compile;
    so.no_check_sizes = eo.skip_check_sizes;
    so.optimize = optimize;
    so.iterations = bo.iterations;
    so.max_wall_s = bo.max_wall_s;
    so.fake_ref_ms = bo.fake_ref_ms;
    if (resume) {
        if (kopt_kb_suite_resume(&b.s, resume, &s_root, &s_cands, &so) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_INVALID;
            goto done;
        }
        root = s_root;
        cand_dir = s_cands;
        kind = so.kind;
        no_compile = so.no_compile;
        eo.skip_check_sizes = so.no_check_sizes;
        optimize = so.optimize;
        bo.iterations = so.iterations;
        bo.max_wall_s = so.max_wall_s;
        bo.fake_ref_ms = so.fake_ref_ms;
        bo.evaluator = so.evaluator[0] ? so.evaluator : NULL;
        suite = resume;
    } else {
        root = argv[optind];
        suite = kopt_run_id(run);
    }
    eo.torch_compile = !no_compile;
    options = kopt_kb_suite_options(&so);
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
    }
    b.s.suite = suite;
    if (!resume && kopt_kb_suite_begin(&b.s, root, cand_dir, options) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    if ((np = kopt_kb_list_problems(root, &probs)) <= 0) {
        fprintf(stderr, "kopt bench: %s: %s\n", root, np < 0 ? "cannot read the folder"
                                                            : "no problem folders in it");
        code = KOPT_EXIT_INVALID;
        goto done;
    }
    b.s.out = json ? NULL : stdout;
    b.s.kind = kind;
    b.s.skip_check = eo.skip_check_sizes;
    if (!json)
        kopt_kb_suite_print_head(stdout, &b.s, np, root, resume != 0, cand_dir, no_compile,
                                 optimize ? bo.iterations : -1, bo.evaluator);
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
            row = kopt_kb_bench_row(base, NULL, kind, "INVALID", kopt_errmsg(ctx), NULL, "not_run");
        } else if ((prev = json_object_get(b.s.done_rows, prob->name))) {
            row = json_incref(prev);
        } else if (optimize && !bo.llm && (cli_llm_open(&llm, ctx, ro.db_path) != 0 ||
                                           !(bo.llm = llm.client))) {
            code = KOPT_EXIT_ERROR;     /* the model is opened when a search is first due */
            kopt_problem_free(prob);
            goto done;
        } else if (optimize && cli_bench_optimize(ctx, &bo, probs[i], prob->name, &cpath,
                                                  &opt_info) != 0) {
            row = kopt_kb_unrun_row(prob, NULL, "optimize", "ERROR", kopt_errmsg(ctx),
                                    b.s.skip_check);
        } else if (optimize && !cpath && !(cpath = strdup(prob->ref_path))) {
            row = kopt_kb_unrun_row(prob, NULL, "optimize", "ERROR", "out of memory",
                                    b.s.skip_check);
        } else if (!optimize && !(cpath = kopt_kb_find_candidate(prob, cand_dir, kind))) {
            row = kopt_kb_missing_row(prob, cand_dir, kind, b.s.skip_check);
        } else if (kopt_candidate_load(&cand, ctx, cpath, prob) != KOPT_OK) {
            row = kopt_kb_unrun_row(prob, cpath, kind, "INVALID", kopt_errmsg(ctx),
                                    b.s.skip_check);
        } else if (ngpus) {            /* --gpus: evaluated below, spread over the GPUs */
            pending[npending].prob = b.probs[npending] = prob;
            pending[npending].cand = b.cands[npending] = cand;
            b.cpaths[npending++] = cpath;
            continue;
        } else {
            kopt_status rc = kopt_run_eval(run, ctx, prob, cand, &eo, "bench", &res);
            row = kopt_kb_eval_row(&b.s, prob, cand, cpath, optimize, rc, res, ctx);
        }
        if (opt_info) {     /* the search behind an --optimize row */
            json_object_set_new(row, "optimize", opt_info);
            opt_info = NULL;
        }
        kopt_kb_suite_add(&b.s, prob ? prob->name : base, row);
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
    {
        json_t *sum = kopt_kb_suite_summary(&b.s, root, cand_dir, options, no_compile);
        if (json) {
            json_object_set(sum, "rows", b.s.rows);
            cli_print_json(sum);
        } else {
            kopt_kb_suite_print_summary(stdout, &b.s, no_compile);
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
    free(s_root);
    free(s_cands);
    kopt_kb_suite_clear(&b.s);
    json_decref(options);
    kopt_run_close(run);
    cli_llm_close(&llm);
    kopt_ctx_free(ctx);
    return code;
}
