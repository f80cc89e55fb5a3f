/* kopt eval PROBLEM [CANDIDATE]: verify and time a candidate (or the reference alone), as
 * one run of the run API (kopt/run.h), which stores the result. */
#include "cli.h"
#include "kopt/serve.h"

#include <errno.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt eval PROBLEM [CANDIDATE.cu|CANDIDATE.py] [options]\n"
        "\n"
        "Compile CANDIDATE for this GPU, check every output element against the problem's\n"
        "reference on fresh random inputs (several trials, at the problem's sizes and at its\n"
        "check_sizes), time it with CUDA events (L2 flushed before each run), and place it on\n"
        "the device's measured roofline. Without CANDIDATE the reference is timed alone.\n"
        "Without a GPU it compiles, reports resources and says what it skipped.\n"
        "\n"
        "What makes a result untrusted (docs/integrity.md): a median at or below zero once\n"
        "the timer's cost is subtracted, or below the speed-of-light bound, is SUSPECT; a\n"
        "candidate right at the problem's sizes but not at its check_sizes is SHAPE_SPECIFIC.\n"
        "A PyTorch-reference problem's candidate (ModelNew or host mode) is timed by\n"
        "libkopt's CUDA events, bound before it is imported (TAMPER if it replaces what the\n"
        "timing and checks use), on inputs refreshed between rounds of runs, and its last\n"
        "call, on inputs never seen in its buffers, is compared with the reference's; its\n"
        "kernels are counted (CUPTI: its own, the libraries', the lowest precision).\n"
        "\n"
        "A PyTorch reference is timed twice, as eager and as torch.compile (default mode, in a\n"
        "worker of its own, its outputs checked against eager's), and every speedup is given\n"
        "against each and against the faster of the two (KernelBench v3's baseline). The\n"
        "torch.compile time is kept in the store, keyed by problem, device, torch version,\n"
        "sizes and timing options, and a later run takes it from there (\"cached\") instead of\n"
        "compiling again, when the reference reports the same torch version and eager's\n"
        "time is within 1.5x of what it was then (docs/kernelbench.md). --no-store: always\n"
        "timed.\n"
        "\n"
        "options:\n"
        "  --size K=V        override a size (repeatable)\n"
        "  --trials N        verification trials per size set (default 3)\n"
        "  --seed S          input seed (default: fresh each run; printed)\n"
        "  --no-check-sizes  skip the problem's second size set\n"
        "  --no-time         verify only\n"
        "  --budget-ms MS    GPU time for timed runs at most (default 100)\n"
        "  --precision PCT   stop timing once the median is known to +-PCT%% (95%%; default\n"
        "                    0.5, after at least 50 runs); 0: spend the whole budget\n"
        "  --reps MIN:MAX    timed repetitions (default 10:1000)\n"
        "  --no-flush        do not flush the L2 before timed runs\n"
        "  --timeout S       seconds without progress before a worker is killed (default 10)\n"
        "  --device N        GPU ordinal (default 0)\n"
        "  --arch sm_XX      compile target (default: from the GPU; sm_90a without one)\n"
        "  --db PATH         store (default ./kopt.db or $KOPT_DB); --no-store to skip\n"
        "  --cache-dir DIR   compile cache (default ~/.cache/kopt or $KOPT_CACHE_DIR)\n"
        "  --sanitize[=TOOLS] also run compute-sanitizer once at the smallest sizes:\n"
        "                    memcheck,racecheck,initcheck (default: all three)\n"
        "  --limits L        sandbox limits of host-mode and ModelNew candidates, e.g.\n"
        "                    cpu=120,fsize=64,as=65536 (CPU seconds, MB per file, MB of\n"
        "                    address space beyond CUDA's: host mode only)\n"
        "  --no-sandbox      run host-mode and ModelNew candidates without the sandbox\n"
        "                    (trusted code only)\n"
        "  --energy[=S]      also measure energy per run: S seconds (default 1) of back-to-back\n"
        "                    runs between NVML energy-counter updates\n"
        "  --no-compile      PyTorch reference: do not time torch.compile (it is timed, or\n"
        "                    taken from the store, by default; --compile, the default, is\n"
        "                    still accepted)\n"
        "  --json            print the result as JSON\n"
        "  --server[=PATH]   run it in `kopt serve` (workers started ahead; $KOPT_SERVER)\n"
        "  --session[=NAME]  with --server: evaluate in the server's session NAME (default\n"
        "                    \"default\"), opened by the first such request with this problem\n"
        "                    and these options: the reference runs once, at one seed fixed\n"
        "                    for the session, and its outputs, time and torch.compile\n"
        "                    baseline serve every later candidate (for a search loop, not a\n"
        "                    final verdict: that is a one-shot kopt eval, on fresh inputs)\n"
        "  -v, --verbose     log progress to stderr\n"
        "\n"
        "exit codes: 0 OK (or SKIPPED: no GPU), 1 WRONG, 2 usage, 3 COMPILE_ERROR, 4 CRASH,\n"
        "5 TIMEOUT, 6 OOM, 7 SUSPECT, 8 LAUNCH_ERROR, 9 invalid input file, 10 kopt error,\n"
        "11 RACE, 12 INPUT_MUTATED, 13 STATEFUL, 14 OFF_STREAM, 15 TAMPER, 16 FORBIDDEN_LIBRARY,\n"
        "17 SANITIZER, 18 SHAPE_SPECIFIC\n");
}

/* "memcheck,racecheck" -> KOPT_SANITIZE_* bits; NULL = all three. */
static int parse_sanitize(const char *arg, unsigned *out)
{
    static const char *const names[3] = {"memcheck", "racecheck", "initcheck"};
    char buf[128], *save = NULL;

    if (!arg) {
        *out = KOPT_SANITIZE_MEMCHECK | KOPT_SANITIZE_RACECHECK | KOPT_SANITIZE_INITCHECK;
        return 0;
    }
    snprintf(buf, sizeof(buf), "%s", arg);
    *out = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(t, names[i]) == 0)
                k = i;
        if (k < 0)
            return -1;
        *out |= 1u << k;
    }
    return *out ? 0 : -1;
}

/* "cpu=120,fsize=64,as=65536" */
static int parse_limits(const char *arg, kopt_eval_opts *eo)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", arg);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '='), *end;
        double v;
        if (!eq)
            return -1;
        *eq = '\0';
        v = strtod(eq + 1, &end);
        if (*end || v <= 0)
            return -1;
        if (strcmp(t, "cpu") == 0)
            eo->sandbox_cpu_s = v;
        else if (strcmp(t, "fsize") == 0)
            eo->sandbox_fsize_mb = v;
        else if (strcmp(t, "as") == 0)
            eo->sandbox_as_extra_mb = v;
        else
            return -1;
    }
    return 0;
}

kopt_eval_pool *cli_eval_pool;
double cli_eval_steps[CLI_EVAL_NSTEPS];

/* The time since *t into cli_eval_steps[k]; *t becomes now. 0, to sit in a condition. */
static int step(int k, double *t)
{
    double now = kopt_now_ms();

    cli_eval_steps[k] += now - *t;
    *t = now;
    return 0;
}

/* --server[=PATH] (or $KOPT_SERVER): send this evaluation to `kopt serve`. 1 with *code set
 * when it was served there; 0: evaluate here. */
static int forward_to_server(int argc, char **argv, int *code)
{
    const char *path = NULL, *env = getenv("KOPT_SERVER");
    char **rest = calloc((size_t)argc + 1, sizeof(*rest));
    int n = 0, asked = 0;

    if (!rest || cli_eval_pool)         /* inside the server itself: evaluate */
        return free(rest), 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--server") == 0 || strncmp(argv[i], "--server=", 9) == 0) {
            asked = 1;
            path = argv[i][8] == '=' ? argv[i] + 9 : NULL;
            continue;
        }
        rest[n++] = argv[i];
    }
    if (!asked && !(env && env[0] && strcmp(env, "0") != 0)) {
        free(rest);
        return 0;
    }
    if (!path)
        path = kopt_serve_default_socket();
    if (kopt_serve_forward(path, n, rest, (const int[2]){1, 2}, code) == 0) {
        free(rest);
        return 1;
    }
    free(rest);
    if (asked) {                       /* asked for by name: no silent fallback */
        fprintf(stderr, "kopt eval: no kopt serve answers on %s (%s): start one with "
                        "`kopt serve`\n", path, strerror(errno));
        *code = KOPT_EXIT_ERROR;
        return 1;
    }
    return 0;                          /* $KOPT_SERVER with no server: evaluate here */
}

int cmd_eval(int argc, char **argv)
{
    static const struct option opts[] = {
        {"size", required_argument, NULL, 's'}, {"seed", required_argument, NULL, 'S'},
        CLI_EVAL_LONG_OPTIONS,
        {"no-time", no_argument, NULL, 'T'},
        {"db", required_argument, NULL, 'D'},
        {"no-store", no_argument, NULL, 'N'},
        {"json", no_argument, NULL, 'j'}, {"verbose", no_argument, NULL, 'v'},
        {"sanitize", optional_argument, NULL, 'Z'}, {"limits", required_argument, NULL, 'L'},
        {"no-sandbox", no_argument, NULL, 'B'}, {"energy", optional_argument, NULL, 'E'},
        {"compile", no_argument, NULL, 'C'}, {"no-compile", no_argument, NULL, 'c'},
        {"session", optional_argument, NULL, 'Q'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    kopt_eval_opts eo = KOPT_EVAL_OPTS_INIT;
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL;
    kopt_vars sizes = KOPT_VARS_INIT;
    kopt_problem *prob = NULL;
    kopt_candidate *cand = NULL;
    kopt_eval_result *res = NULL;
    const char *cand_path = NULL, *session_name = NULL;
    serve_session *session = NULL;      /* --session: the server's session it ran in */
    const kopt_problem *P;              /* the problem evaluated: prob, or the session's */
    char *session_key = NULL;
    int json = 0, verbose = 0, no_store = 0, c, li = 0, code = 0;
    double t = 0;
    kopt_ctx *ctx = cli_ctx(0);
    char *end;

    if (forward_to_server(argc, argv, &code)) {
        kopt_ctx_free(ctx);
        return code;
    }
    eo.pool = cli_eval_pool;
    eo.torch_compile = 1;              /* a PyTorch reference: torch.compile too (--no-compile) */
    ro.db_path = cli_default_db();
    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", opts, &li)) != -1) {
        switch (c) {
        case 's':
            if (cli_parse_size(ctx, "eval", optarg, &sizes) != 0) {
                code = KOPT_EXIT_USAGE;
                goto done;
            }
            break;
        case 'S': eo.seed = strtoull(optarg, &end, 0);
            if (*end || !eo.seed) goto bad_number;
            break;
        case 'T': eo.no_timing = 1; break;
        case CLI_EVAL_OPTION:
            if (cli_eval_option(opts[li].name, optarg, &eo) != 0)
                goto bad_number;
            break;
        case 'D': ro.db_path = optarg; break;
        case 'N': no_store = 1; break;
        case 'Z':
            if (parse_sanitize(optarg, &eo.sanitize) != 0)
                goto bad_number;
            break;
        case 'L':
            if (parse_limits(optarg, &eo) != 0)
                goto bad_number;
            break;
        case 'B': eo.no_sandbox = 1; break;
        case 'C': eo.torch_compile = 1; break;     /* the default; kept for old scripts */
        case 'c': eo.torch_compile = 0; break;
        case 'E': eo.energy_s = optarg ? strtod(optarg, &end) : 1.0;
            if ((optarg && *end) || eo.energy_s <= 0 || eo.energy_s > 60) goto bad_number;
            break;
        case 'Q':
            session_name = optarg ? optarg : "default";
            if (!session_name[0] || strlen(session_name) > 64 ||
                strspn(session_name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789._-") != strlen(session_name)) {
                fprintf(stderr, "kopt eval: bad session name '%s' (letters, digits, '.', '_', "
                                "'-'; 64 at most)\n", session_name);
                code = KOPT_EXIT_USAGE;
                goto done;
            }
            break;
        case 'j': json = 1; break;
        case 'v': verbose = 1; break;
        case 'h': help(stdout); goto done;
        default: help(stderr); code = KOPT_EXIT_USAGE; goto done;
        }
        continue;
bad_number:
        fprintf(stderr, "kopt eval: bad value '%s' (see kopt eval --help)\n", optarg);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (no_store)
        ro.db_path = NULL;
    if (verbose)
        kopt_log_set(ctx, NULL, NULL, KOPT_LOG_INFO);
    if (optind >= argc || argc - optind > 2) {
        help(stderr);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (session_name && !cli_eval_sessions) {
        fprintf(stderr, "kopt eval: --session evaluates in a session that `kopt serve` keeps "
                        "between requests: give --server[=PATH] (or $KOPT_SERVER) with a "
                        "kopt serve running; a one-shot kopt eval has no session to keep\n");
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (session_name && argc - optind < 2) {
        fprintf(stderr, "kopt eval: --session evaluates candidates: give one after the "
                        "problem (the session runs the reference with the first)\n");
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    memset(cli_eval_steps, 0, sizeof(cli_eval_steps));
    t = kopt_now_ms();
    if (kopt_problem_load(&prob, ctx, argv[optind]) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_INVALID;
        goto done;
    }
    eo.sizes = sizes.n ? &sizes : NULL;
    if (session_name) {                 /* the session of this name and plan, if open */
        if (!(session_key = cli_serve_session_key(prob, &eo, ro.db_path))) {
            fprintf(stderr, "kopt eval: out of memory\n");
            code = KOPT_EXIT_ERROR;
            goto done;
        }
        if ((session = cli_serve_session_find(cli_eval_sessions, session_name, session_key))) {
            kopt_problem_free(prob);    /* the session's own copy is the one it evaluates */
            prob = NULL;
        }
    }
    P = session ? cli_serve_session_problem(session) : prob;
    if (optind + 1 < argc) {
        cand_path = argv[optind + 1];
        if (kopt_candidate_load(&cand, ctx, cand_path, P) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_INVALID;
            goto done;
        }
    }
    /* the run: its store (a store that cannot be opened only warns), the environment */
    ro.kind = KOPT_RUN_EVAL;
    ro.db_optional = 1;
    cli_run_command(&ro);
    ro.device = eo.device;
    ro.cache_dir = eo.cache_dir;
    step(CLI_EVAL_STEP_LOAD, &t);
    if (kopt_run_open(&run, ctx, &ro) != KOPT_OK || step(CLI_EVAL_STEP_OPEN, &t) ||
        (session_name && !session &&
         cli_serve_session_open(cli_eval_sessions, ctx, run, session_name, &session_key, &prob,
                                &eo, &session) != KOPT_OK) ||
        (session ? cli_serve_session_eval(cli_eval_sessions, session, ctx, run, cand, &res)
                 : kopt_run_eval(run, ctx, prob, cand, &eo, NULL, &res)) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    step(CLI_EVAL_STEP_STORE, &t);
    cli_eval_steps[CLI_EVAL_STEP_EVAL] = res->total_ms;
    cli_eval_steps[CLI_EVAL_STEP_STORE] -= res->total_ms;
    kopt_run_finish(run, ctx, res->verdict == KOPT_VERDICT_SKIPPED ? KOPT_RUN_SKIPPED
                                                                    : KOPT_RUN_OK, NULL);
    step(CLI_EVAL_STEP_FINISH, &t);
    kopt_run_eval_print(stdout, P, cand_path, res, session ? cli_serve_session_name(session) : NULL,
                        session ? cli_serve_session_evaluations(session) : 0, json);
    code = kopt_verdict_exit_code(res->verdict);
    fflush(stdout);
    step(CLI_EVAL_STEP_PRINT, &t);
done:
    free(session_key);
    kopt_eval_result_free(res);
    kopt_run_close(run);
    kopt_candidate_free(cand);
    kopt_problem_free(prob);
    kopt_vars_free(&sizes);
    kopt_ctx_free(ctx);
    return code;
}
