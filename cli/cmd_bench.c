/* kopt bench PROBLEMS --candidates DIR: evaluate a suite of problems, one candidate each,
 * against PyTorch eager and torch.compile, and give KernelBench's metrics (fast_p, the
 * geometric-mean speedups); every row is stored as it finishes, so a killed suite resumes
 * (--resume). With --optimize each candidate is kopt optimize's best kernel for its problem.
 * The verb parses options and prints; the suite runs in libkopt (kopt_kb_bench, kopt/kb.h,
 * src/kb/bench_run.c), as for the MCP tool bench and Python's kopt.bench.
 * docs/kernelbench.md. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        "                    problem's wall-time budget in seconds (none); --overlap:\n"
        "                    each search asks its next step while a step is evaluated\n"
        "                    (kopt optimize --overlap)\n"
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

/* The model of an --optimize suite, opened by the library when its first search is due. */
typedef struct bench_llm {
    cli_llm *llm;
    const char *db_path;
    int said;                    /* the failure is on stderr already */
} bench_llm;

static kopt_status open_llm(void *user, kopt_ctx *ctx, kopt_llm_client **out)
{
    bench_llm *bl = user;

    if (strcmp(bl->llm->spec ? bl->llm->spec : "", "manual") == 0) {   /* a resumed suite */
        fprintf(stderr, "kopt bench: --optimize takes a model (--llm SPEC), not manual\n");
        bl->said = KOPT_EXIT_USAGE;
        return kopt_seterr(ctx, KOPT_E_INVALID, "--optimize takes a model, not manual");
    }
    if (cli_llm_open(bl->llm, ctx, bl->db_path) != 0 || !(*out = bl->llm->client)) {
        bl->said = KOPT_EXIT_ERROR;
        return kopt_seterr(ctx, KOPT_E_ERROR, "the model");
    }
    return KOPT_OK;
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"candidates", required_argument, NULL, 'c'}, {"kind", required_argument, NULL, 'k'},
        {"no-compile", no_argument, NULL, 'C'}, {"resume", required_argument, NULL, 'R'},
        {"optimize", no_argument, NULL, 'O'}, {"iterations", required_argument, NULL, 'I'},
        {"optimize-wall", required_argument, NULL, 'W'},
        {"overlap", no_argument, NULL, 'V'},
        {"evaluator", required_argument, NULL, 'E'},
        {"fake-ref-ms", required_argument, NULL, 'F'},
        CLI_EVAL_LONG_OPTIONS, CLI_LLM_LONG_OPTIONS,
        {"db", required_argument, NULL, 'D'}, {"no-store", no_argument, NULL, 'N'},
        {"json", no_argument, NULL, 'j'}, {"verbose", no_argument, NULL, 'v'},
        {"gpus", required_argument, NULL, 'G'},
        {"server", optional_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    kopt_kb_bench_opts bo;
    int gpus[KOPT_SCALE_MAX_SLOTS], ngpus = 0;
    const char *gpus_spec = NULL, *server_path = NULL;
    int server_asked = 0;
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT, rc0 = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL;
    int json = 0, verbose = 0, no_store = 0, c, li = 0, code = 0;
    cli_llm llm;
    bench_llm bl = {&llm, NULL, 0};
    static volatile sig_atomic_t stop;
    json_t *doc = NULL;
    kopt_ctx *ctx = cli_ctx(0);
    kopt_status rc;
    char *end;

    kopt_kb_bench_opts_default(&bo);
    ro.db_path = cli_default_db();
    cli_llm_init(&llm);
    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", opts, &li)) != -1) {
        switch (c) {
        case 'c': bo.candidates = optarg; break;
        case 'k': bo.kind = optarg;
            if (strcmp(optarg, "auto") && strcmp(optarg, "cu") && strcmp(optarg, "py") &&
                strcmp(optarg, "reference"))
                goto bad_value;
            break;
        case 'C': bo.no_compile = 1; break;
        case 'R': bo.resume = strtoll(optarg, &end, 10);
            if (*end || bo.resume <= 0) goto bad_value;
            break;
        case CLI_EVAL_OPTION:
            if (cli_eval_option(opts[li].name, optarg, &bo.eval) != 0)
                goto bad_value;
            break;
        case 'O': bo.optimize = 1; break;
        case 'I': bo.iterations = (int)strtol(optarg, &end, 10);
            if (*end || bo.iterations < 0) goto bad_value;
            break;
        case 'W': bo.max_wall_s = strtod(optarg, &end);
            if (*end || bo.max_wall_s < 0) goto bad_value;
            break;
        case 'V': bo.overlap = 1; break;
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
    if (!gpus_spec && cli_server_socket("bench", server_asked, server_path, &bo.eval.server) != 0) {
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    if (gpus_spec) {
        int count = kopt_scale_gpus_here();
        if (cli_gpus(ctx, "bench", gpus_spec, count, gpus, &ngpus) != 0) {
            code = KOPT_EXIT_USAGE;
            goto done;
        }
        bo.eval.device = gpus[0];
        bo.gpus = gpus;
        bo.ngpus = ngpus;
    }
    if (verbose)
        kopt_log_set(ctx, NULL, NULL, KOPT_LOG_INFO);
    if ((bo.resume && optind != argc) || (!bo.resume && optind + 1 != argc) ||
        (bo.resume && no_store) || (bo.optimize && (no_store || bo.candidates))) {
        help(stderr);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    ro.kind = KOPT_RUN_BENCH;
    ro.parent_id = bo.resume;
    if (cli_run_open(ctx, &ro, &bo.eval, &run) != 0) {
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    if (bo.optimize && strcmp(llm.spec ? llm.spec : "", "manual") == 0) {
        fprintf(stderr, "kopt bench: --optimize takes a model (--llm SPEC), not manual\n");
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    /* kopt optimize per problem (--optimize, or a resumed suite that ran so): the model,
     * the trees' store and command */
    cli_run_command(&rc0);
    bl.db_path = ro.db_path;
    bo.llm_open = open_llm;
    bo.llm_user = &bl;
    bo.db_path = ro.db_path;
    bo.argc = rc0.argc;
    bo.argv = rc0.argv;
    bo.stop = &stop;
    bo.problems = bo.resume ? NULL : argv[optind];
    bo.text = json ? NULL : stdout;
    if ((rc = kopt_kb_bench(run, ctx, &bo, &doc)) != KOPT_OK) {
        if (rc == KOPT_E_NOT_FOUND)    /* the problems folder */
            fprintf(stderr, "kopt bench: %s\n", kopt_errmsg(ctx));
        else if (!bl.said)
            cli_error(ctx);
        code = bl.said ? bl.said : rc == KOPT_E_INVALID || rc == KOPT_E_NOT_FOUND ?
               KOPT_EXIT_INVALID : KOPT_EXIT_ERROR;
        goto done;
    }
    kopt_run_finish(run, ctx, json_is_true(json_object_get(doc, "interrupted")) ?
                    KOPT_RUN_INTERRUPTED : KOPT_RUN_OK, NULL);
    if (json) {
        cli_print_json(doc);
        doc = NULL;
    }
done:
    json_decref(doc);
    kopt_run_close(run);
    cli_llm_close(&llm);
    kopt_ctx_free(ctx);
    return code;
}
