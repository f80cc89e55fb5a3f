/* kopt optimize: LLM agents inside a tree search (kopt/search.h). The tree lives in the
 * store: --resume goes on after a kill, --propose / --evaluate split the LLM and GPU
 * steps, --llm manual talks through files in the run's folder, --replay rebuilds a
 * recorded tree with neither GPU nor LLM, --gpus spreads the search over GPUs.
 * docs/optimize.md, docs/scale.md. */
#include "cli.h"

#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt optimize PROBLEM_DIR [options]\n"
        "       kopt optimize --resume RUN [--propose | --evaluate] [options]\n"
        "       kopt optimize --replay RUN [--json]\n"
        "Find a faster kernel for PROBLEM_DIR: a planner, a coder, a debugger and a\n"
        "templatizer (prompts/*.md) inside a tree search; every node in the store.\n\n"
        "search:\n"
        "  --search mcts|greedy|beam|best-of-n   selection policy (mcts)\n"
        "  --iterations N        expansions of the tree (10)\n"
        "  --proposals K         candidates per expansion (2; greedy 1)\n"
        "  --uct-c C             UCT exploration constant (1.0)\n"
        "  --widen-c C, --widen-alpha A   progressive widening ceil(C*n^A) (1.0, 0.5)\n"
        "  --top-quantile Q, --top-extra K  asymmetric branching (0.25, 1)\n"
        "  --prune-m M, --prune-eps E       dead ends: last M children failed or < E (3, 0.02)\n"
        "  --debug-attempts N    repairs of one failed candidate, in a chain (2)\n"
        "  --beam-width W        beam: the best W nodes (2)\n"
        "  --objective time|energy|time-energy  (time); --energy-s S: energy window (1)\n"
        "  --no-tools            raw metrics instead of micro-tool advice in prompts\n"
        "  --no-memory           no search memory in prompts\n"
        "  --no-tune             no templatizer; --tune-budget N evaluations per tune (16)\n"
        "  --tune-after N        templatize the best node once it has N plan children (2)\n"
        "  --no-profile          do not profile correct candidates (no class, no advice)\n"
        "  --start FILE          begin from this kernel instead of the reference (checked:\n"
        "                        a candidate of the problem that compiles; the root's first\n"
        "                        child, the reference still times the speedups)\n"
        "  --gpus all|0,2,5      spread over these GPUs: each step selects as many expansions\n"
        "                        as GPUs (virtual visits make them differ) and evaluates as\n"
        "                        many candidates at once, one per GPU, each GPU with its own\n"
        "                        session; the tree's width is fixed when it begins (a resume\n"
        "                        keeps it). With --evaluator fake or $KOPT_SCALE_STANDIN=MS\n"
        "                        the GPUs are CPU stand-ins (docs/scale.md)\n"
        "tools (coder and debugger):\n"
        "  --cute                describe the CUTLASS/CuTe code search in the prompts even\n"
        "                        when no CUTLASS is found (default: when it is found)\n"
        "  --no-cute             no code search at all\n"
        "  --max-searches N      code searches per node (3; 0: none)\n"
        "  --cutlass DIR         the CUTLASS to search and compile with\n"
        "runs:\n"
        "  --resume RUN          go on with the tree of run RUN\n"
        "  --propose             LLM only: one round of proposals, left pending; on a tree\n"
        "                        whose root (the reference) was never evaluated nothing is\n"
        "                        proposed and kopt exits 19: --evaluate it first\n"
        "  --evaluate            GPU only: evaluate what is pending (proposes nothing)\n"
        "  --server[=PATH]       evaluate in a running `kopt serve` (its socket; default\n"
        "                        $KOPT_SERVER or /tmp/kopt-serve-UID.sock), in the session\n"
        "                        it keeps for this problem: each --resume / --evaluate step\n"
        "                        reuses the reference's outputs, time and torch.compile\n"
        "                        baseline, and the workers it started ahead; results are\n"
        "                        stored here. $KOPT_SERVER alone: used when a server answers\n"
        "  --replay RUN          re-run RUN's search from its recorded replies and outcomes\n"
        "  --rounds              grow in rounds: a step's repairs and expansion, then every\n"
        "                        pending node evaluated (as --propose/--evaluate do; kept with\n"
        "                        the tree; a replay of such a tree grown before it: give it)\n"
        "  --overlap             ask the model for the next step while this step's\n"
        "                        candidates are evaluated, and compile them meanwhile: each\n"
        "                        step is planned without the outcomes of the one before it\n"
        "                        (kept with the tree; docs/optimize.md, \"Overlap\")\n"
        "  --llm manual          prompts written as files in the run's folder, replies read\n"
        "                        from there (NAME.prompt.md -> NAME.reply.md)\n"
        "  --workdir DIR         the run's folder (kopt-optimize/RUN)\n"
        "  --prompts DIR         prompt templates (default: found; $KOPT_PROMPTS)\n"
        "  --max-reply-tokens N  max_tokens of each request (8192)\n"
        "  --evaluator live|fake  fake: outcomes scripted in the sources (tests)\n"
        "  --fake-ref-ms MS      the fake evaluator's reference time (1.0)\n"
        "  --max-wall S          wall-time budget in seconds\n"
        "  --max-llm-calls N, --max-tokens-total N, --max-cost USD   LLM budgets\n"
        "  --out FILE            write the best kernel there\n"
        "  --db PATH, --json, -v, and the evaluation and --llm options of kopt eval / llm\n"
        "exit: 0 (also waiting for manual replies, or SKIPPED without a GPU), 19 --propose on\n"
        "a root never evaluated, 2 usage, 9 a problem or tree that cannot be read, 10 kopt\n"
        "failed, or the reference's verdict code when it does not run OK\n");
}

enum {
    O_SEARCH = 0x2000, O_ITER, O_PROPOSALS, O_UCT, O_WIDEN_C, O_WIDEN_A, O_TOPQ, O_TOPX,
    O_PRUNE_M, O_PRUNE_EPS, O_DEBUG, O_BEAM, O_OBJECTIVE, O_ENERGY_S, O_NO_TOOLS, O_NO_MEMORY,
    O_NO_TUNE, O_TUNE_BUDGET, O_TUNE_AFTER, O_NO_PROFILE, O_RESUME, O_PROPOSE, O_EVALUATE, O_REPLAY,
    O_WORKDIR, O_PROMPTS, O_MAX_REPLY, O_EVALUATOR, O_FAKE_REF, O_MAX_WALL, O_OUT, O_DB, O_JSON, O_HELP,
    O_START, O_CUTE, O_NO_CUTE, O_MAX_SEARCHES, O_GPUS, O_SERVER, O_ROUNDS, O_OVERLAP
};

/* A number option into `then` (which sees it as v); a bad value ends the command. */
#define NUM(name, min, then)                                                                   \
    do {                                                                                       \
        if (num(name, optarg, min, &v))                                                        \
            return KOPT_EXIT_USAGE;                                                            \
        then;                                                                                  \
    } while (0)

static volatile sig_atomic_t g_stop;

static void on_progress(void *user, const char *line)
{
    int tty = *(int *)user;

    if (tty)
        fprintf(stderr, "\r\033[K%s", line);
    else
        fprintf(stderr, "%s\n", line);
}

static int num(const char *name, const char *arg, double min, double *out)
{
    char *end;
    double v = strtod(arg, &end);

    if (end == arg || *end || !(v >= min)) {
        fprintf(stderr, "kopt optimize: --%s %s: want a number >= %g\n", name, arg, min);
        return -1;
    }
    *out = v;
    return 0;
}

int cmd_optimize(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"search", required_argument, NULL, O_SEARCH},
        {"iterations", required_argument, NULL, O_ITER},
        {"proposals", required_argument, NULL, O_PROPOSALS},
        {"uct-c", required_argument, NULL, O_UCT},
        {"widen-c", required_argument, NULL, O_WIDEN_C},
        {"widen-alpha", required_argument, NULL, O_WIDEN_A},
        {"top-quantile", required_argument, NULL, O_TOPQ},
        {"top-extra", required_argument, NULL, O_TOPX},
        {"prune-m", required_argument, NULL, O_PRUNE_M},
        {"prune-eps", required_argument, NULL, O_PRUNE_EPS},
        {"debug-attempts", required_argument, NULL, O_DEBUG},
        {"beam-width", required_argument, NULL, O_BEAM},
        {"objective", required_argument, NULL, O_OBJECTIVE},
        {"energy-s", required_argument, NULL, O_ENERGY_S},
        {"no-tools", no_argument, NULL, O_NO_TOOLS},
        {"no-memory", no_argument, NULL, O_NO_MEMORY},
        {"no-tune", no_argument, NULL, O_NO_TUNE},
        {"tune-budget", required_argument, NULL, O_TUNE_BUDGET},
        {"tune-after", required_argument, NULL, O_TUNE_AFTER},
        {"no-profile", no_argument, NULL, O_NO_PROFILE},
        {"start", required_argument, NULL, O_START},
        {"cute", no_argument, NULL, O_CUTE},
        {"no-cute", no_argument, NULL, O_NO_CUTE},
        {"max-searches", required_argument, NULL, O_MAX_SEARCHES},
        {"gpus", required_argument, NULL, O_GPUS},
        {"server", optional_argument, NULL, O_SERVER},
        {"resume", required_argument, NULL, O_RESUME},
        {"propose", no_argument, NULL, O_PROPOSE},
        {"evaluate", no_argument, NULL, O_EVALUATE},
        {"replay", required_argument, NULL, O_REPLAY},
        {"rounds", no_argument, NULL, O_ROUNDS},
        {"overlap", no_argument, NULL, O_OVERLAP},
        {"workdir", required_argument, NULL, O_WORKDIR},
        {"prompts", required_argument, NULL, O_PROMPTS},
        {"max-reply-tokens", required_argument, NULL, O_MAX_REPLY},
        {"evaluator", required_argument, NULL, O_EVALUATOR},
        {"fake-ref-ms", required_argument, NULL, O_FAKE_REF},
        {"max-wall", required_argument, NULL, O_MAX_WALL},
        {"out", required_argument, NULL, O_OUT},
        {"db", required_argument, NULL, O_DB},
        {"json", no_argument, NULL, O_JSON},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, O_HELP},
        CLI_EVAL_LONG_OPTIONS,
        CLI_LLM_LONG_OPTIONS,
        {NULL, 0, NULL, 0}};
    kopt_optimize_opts oo = KOPT_OPTIMIZE_OPTS_INIT;
    kopt_search_opts so = KOPT_SEARCH_OPTS_INIT;
    kopt_search_live_opts lo = KOPT_SEARCH_LIVE_OPTS_INIT;
    kopt_optimize *op = NULL;
    kopt_search *search;
    kopt_ctx *ctx = NULL;
    cli_llm llm;
    const char *db_path = cli_default_db(), *workdir = NULL, *evaluator = NULL, *out = NULL;
    const char *problem_arg = NULL, *start = NULL, *gpus_spec = NULL, *server_path = NULL;
    int server_asked = 0;
    int gpus[KOPT_SCALE_MAX_SLOTS], ngpus = 0;
    char spec[64];
    long long resume = 0, replay = 0;
    int json = 0, verbose = 0, propose = 0, evaluate_only = 0, iterations_given = 0, c, idx;
    int code = KOPT_EXIT_ERROR, tty = isatty(STDERR_FILENO), manual = 0, vcode = 0;
    double v, fake_ref = 0;
    int64_t tree_id;
    kopt_status rc;

    cli_llm_init(&llm);
    lo.energy_s = 0.0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "v", longopts, &idx)) != -1) {
        int r;
        switch (c) {
        case O_SEARCH:
            if (kopt_search_policy_parse(optarg, &so.policy)) {
                fprintf(stderr, "kopt optimize: --search %s: want mcts, greedy, beam or "
                        "best-of-n\n", optarg);
                return KOPT_EXIT_USAGE;
            }
            break;
        case O_ITER: NUM("iterations", 0, so.iterations = (int)v; iterations_given = 1); break;
        case O_PROPOSALS: NUM("proposals", 1, so.proposals = (int)(v > 16 ? 16 : v)); break;
        case O_UCT: NUM("uct-c", 0, so.uct_c = v); break;
        case O_WIDEN_C: NUM("widen-c", 0.01, so.widen_c = v); break;
        case O_WIDEN_A: NUM("widen-alpha", 0, so.widen_alpha = v); break;
        case O_TOPQ: NUM("top-quantile", 0, so.top_quantile = v); break;
        case O_TOPX: NUM("top-extra", 0, so.top_extra = (int)v); break;
        case O_PRUNE_M: NUM("prune-m", 0, so.prune_m = (int)v); break;
        case O_PRUNE_EPS: NUM("prune-eps", 0, so.prune_eps = v); break;
        case O_DEBUG: NUM("debug-attempts", 0, so.debug_attempts = (int)v); break;
        case O_BEAM: NUM("beam-width", 1, so.beam_width = (int)v); break;
        case O_OBJECTIVE:
            if (kopt_run_tune_objective_parse(optarg, &so.objective) < 0) {
                fprintf(stderr, "kopt optimize: --objective %s: want time, energy or "
                        "time-energy\n", optarg);
                return KOPT_EXIT_USAGE;
            }
            break;
        case O_ENERGY_S: NUM("energy-s", 0, lo.energy_s = v); break;
        case O_NO_TOOLS: so.no_tools = lo.no_tools = 1; break;
        case O_NO_MEMORY: so.no_memory = 1; break;
        case O_NO_TUNE: so.no_tune = 1; break;
        case O_TUNE_BUDGET: NUM("tune-budget", 1, so.tune_budget = (int)v); break;
        case O_TUNE_AFTER: NUM("tune-after", 0, so.tune_after = (int)v); break;
        case O_NO_PROFILE: lo.no_profile = 1; break;
        case O_START: start = optarg; break;
        case O_CUTE: so.cute = 1; break;
        case O_NO_CUTE: so.cute = -1; break;
        case O_MAX_SEARCHES: NUM("max-searches", 0, so.max_searches = v > 0 ? (int)v : -1); break;
        case O_GPUS: gpus_spec = optarg; break;
        case O_SERVER: server_asked = 1; server_path = optarg; break;
        case O_RESUME: resume = atoll(optarg); break;
        case O_PROPOSE: propose = 1; break;
        case O_EVALUATE: evaluate_only = 1; break;
        case O_REPLAY: replay = atoll(optarg); break;
        case O_ROUNDS: so.rounds = 1; break;
        case O_OVERLAP: so.overlap = 1; break;
        case O_WORKDIR: workdir = optarg; break;
        case O_PROMPTS: so.prompts_dir = optarg; break;
        case O_MAX_REPLY: NUM("max-reply-tokens", 16, so.max_tokens = (int)v); break;
        case O_EVALUATOR: evaluator = optarg; break;
        case O_FAKE_REF: NUM("fake-ref-ms", 0.000001, fake_ref = v); break;
        case O_MAX_WALL: NUM("max-wall", 0, so.max_wall_s = v); break;
        case O_OUT: out = optarg; break;
        case O_DB: db_path = optarg; break;
        case O_JSON: json = 1; break;
        case 'v': verbose = 1; break;
        case O_HELP: help(stdout); return 0;
        case CLI_EVAL_OPTION:
            if (cli_eval_option(longopts[idx].name, optarg, &lo.eval) < 0)
                return KOPT_EXIT_USAGE;
            break;
        default:
            if ((r = cli_llm_option(&llm, "optimize", c, optarg)) < 0)
                return KOPT_EXIT_USAGE;
            if (r == 0) {
                help(stderr);
                return KOPT_EXIT_USAGE;
            }
        }
    }
    if (optind < argc)
        problem_arg = argv[optind];
    if ((resume && replay) || (propose && evaluate_only) || (!resume && !replay && !problem_arg) ||
        (evaluator && strcmp(evaluator, "live") != 0 && strcmp(evaluator, "fake") != 0) ||
        ((propose || evaluate_only) && replay) || (start && (resume || replay))) {
        help(stderr);
        return KOPT_EXIT_USAGE;
    }
    manual = llm.spec && strcmp(llm.spec, "manual") == 0;
    if (server_asked && gpus_spec) {
        fprintf(stderr, "kopt optimize: --server with --gpus: a kopt serve evaluates on its "
                        "GPU, one candidate at a time; give one or the other\n");
        return KOPT_EXIT_USAGE;
    }
    if (!propose && !replay && !gpus_spec &&
        cli_server_socket("optimize", server_asked, server_path, &lo.eval.server) != 0)
        return KOPT_EXIT_ERROR;
    ctx = cli_ctx(verbose);
    if (gpus_spec) {
        /* checked against the GPUs here, unless none is needed now: stand-ins (the scripted
         * evaluator, $KOPT_SCALE_STANDIN) or --propose (the width only) */
        int count;
        if (replay) {
            fprintf(stderr, "kopt optimize: --gpus with --replay: a replay evaluates nothing "
                    "(it rebuilds the tree at the width it was searched with)\n");
            code = KOPT_EXIT_USAGE;
            goto done;
        }
        count = (evaluator && strcmp(evaluator, "fake") == 0) || propose ? -1
                                                                         : kopt_scale_gpus_here();
        if (cli_gpus(ctx, "optimize", gpus_spec, count, gpus, &ngpus) != 0) {
            code = KOPT_EXIT_USAGE;
            goto done;
        }
        if (ngpus > KOPT_SEARCH_MAX_WIDTH) {
            fprintf(stderr, "kopt optimize: --gpus %s: at most %d GPUs\n", gpus_spec,
                    KOPT_SEARCH_MAX_WIDTH);
            code = KOPT_EXIT_USAGE;
            goto done;
        }
        lo.eval.device = gpus[0];   /* the run's record; single evaluations */
    }
    /* the model: none (--evaluate), manual files, the recorded replies (--replay), or --llm */
    if (!manual && !evaluate_only) {
        if (replay && !llm.spec) {
            snprintf(spec, sizeof(spec), "replay:%lld", replay);
            llm.spec = spec;
        }
        if (cli_llm_open(&llm, ctx, db_path) != 0)
            goto done;
    }
    so.stop = &g_stop;
    if (tty || verbose) {
        so.progress = on_progress;
        so.progress_user = &tty;
    }
    oo.search = so;
    oo.live = lo;
    oo.db_path = db_path;
    {
        kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
        cli_run_command(&ro);
        oo.argc = ro.argc;
        oo.argv = ro.argv;
    }
    oo.problem = problem_arg;
    oo.resume = resume;
    oo.replay = replay;
    oo.keep_iterations = iterations_given;
    oo.propose_only = propose;
    oo.evaluate_only = evaluate_only;
    oo.manual = manual;
    oo.llm = llm.client;
    oo.evaluator = evaluator;
    oo.fake_ref_ms = fake_ref;
    oo.workdir = workdir;
    oo.start = start;
    oo.gpus = ngpus ? gpus : NULL;
    oo.ngpus = ngpus;
    cli_sigint_stop(&g_stop, "\nkopt optimize: stopping after the current step (the tree is "
                    "stored; --resume goes on; Ctrl-C again to quit now)\n", NULL);
    if ((rc = kopt_optimize_open(&op, ctx, &oo)) != KOPT_OK) {
        cli_error(ctx);
        code = rc == KOPT_E_DB || rc == KOPT_E_IO || rc == KOPT_E_NOMEM ? KOPT_EXIT_ERROR
                                                                       : KOPT_EXIT_INVALID;
        goto done;
    }
    search = kopt_optimize_search(op);
    tree_id = kopt_optimize_tree_id(op);
    if (kopt_optimize_go(op, ctx, &vcode) != KOPT_OK) {
        cli_error(ctx);
        if (tty)
            fprintf(stderr, "\n");
        goto done;
    }
    if (tty && so.progress)
        fprintf(stderr, "\n");
    {
        const kopt_search_node *b = kopt_search_best(search);
        kopt_search_stats st;
        kopt_search_get_stats(search, &st);
        if (out && b && kopt_file_write(ctx, out, b->source, strlen(b->source)) != KOPT_OK)
            cli_error(ctx);
        kopt_optimize_print(stdout, op, propose, json);
        if (st.root_unevaluated) {
            fprintf(stderr, "kopt optimize: tree %lld: its root, the reference, has not been "
                    "evaluated, so a planner would have no time, device or profile to plan "
                    "from: nothing was proposed. Evaluate it first: kopt optimize --resume "
                    "%lld --evaluate (where the GPU is), or a run without --propose.\n",
                    (long long)tree_id, (long long)tree_id);
            vcode = KOPT_EXIT_NOT_EVALUATED;
        }
    }
    code = vcode;
done:
    kopt_optimize_close(op);
    cli_llm_close(&llm);
    kopt_ctx_free(ctx);
    return code;
}
