/* kopt profile PROBLEM [CANDIDATE]: correct first, then compile info, SASS, metrics (CUPTI
 * or ncu), the roofline class and the micro-tools' ranked findings; --tool-stats scores the
 * tools against later candidates (store). The work is the run API's (kopt_run_profile_
 * candidate; its text and JSON, src/run/print_profile.c); this file parses options. */
#include "cli.h"
#include "kopt/run.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt profile PROBLEM [CANDIDATE.cu] [options]\n"
        "       kopt profile --list-tools | --tool-stats [--db PATH]\n"
        "\n"
        "Correct first: verify and time CANDIDATE (as kopt eval; without it, the reference)\n"
        "and stop with the verdict unless it is OK. Then: compile info (registers, shared\n"
        "memory, spills), SASS counts (nvdisasm), hardware metrics (CUPTI in a worker by\n"
        "default; ncu with --ncu), the roofline class with its reasoning, and the micro-tools'\n"
        "findings ranked by estimated gain. Without a GPU, or with --static: compile, SASS and\n"
        "resources only, with the tools that were skipped and why.\n"
        "\n"
        "The problem counts as matmul-like (for the tensor-core tools) when its compute type\n"
        "is a tensor-core type (fp16, bf16, tf32, fp8) or its name or description contains\n"
        "\"gemm\" or \"matmul\" (any case).\n"
        "\n"
        "options:\n"
        "  (tool needs: a,b = all of them; (a,b) = at least one)\n"
        "  --static          no GPU work: compile, SASS and resources only\n"
        "  --ncu             collect metrics with Nsight Compute instead of CUPTI\n"
        "  --ncu-rules       with --ncu: also run ncu's detailed sections and show its rules\n"
        "  --lock-clocks     with --ncu: --clock-control base (default none, as kopt times)\n"
        "  --import FILE     analyze a saved ncu report (.ncu-rep) instead of profiling\n"
        "  --metrics LIST    collect these metrics (comma-separated ncu names) instead of\n"
        "                    the roofline and rules sets\n"
        "  --set NAME        collect only the roofline or the rules set\n"
        "  --repeat N        CUPTI: N brackets per set; the later ones give the cost of a set\n"
        "                    once the profiler is set up (benchmarks)\n"
        "  --all-tools       run every tool whatever the class\n"
        "  --tool NAME       run only this tool\n"
        "  --list-tools      list the micro-tools and exit\n"
        "  --parent CAND     the candidate this one was derived from (a .cu file, or\n"
        "                    \"reference\"): its findings that no longer fire here are\n"
        "                    recorded as resolved (default: the problem's last profiled one)\n"
        "  --tool-stats      per tool: times fired, resolved by a later candidate, mean\n"
        "                    predicted vs realized gain, precision; then exit\n"
        "  --size K=V        override a size (repeatable)\n"
        "  --device N        GPU ordinal (default 0)\n"
        "  --arch sm_XX      compile target (default: from the GPU; sm_90a without one)\n"
        "  --timeout S       seconds without progress before a worker is killed\n"
        "  --db PATH         store (default ./kopt.db or $KOPT_DB); --no-store to skip\n"
        "  --cache-dir DIR   compile cache\n"
        "  --json            print the same content as JSON\n"
        "  -v, --verbose     log progress to stderr\n"
        "\n"
        "exit codes: as kopt eval (0 OK or SKIPPED, 1 WRONG, 3 COMPILE_ERROR, ...; see\n"
        "kopt eval --help), 2 usage, 9 invalid input file, 10 kopt error.\n");
}

/* "a,b,c" split in place into a NULL-terminated array (caller frees the array). */
static char **split_commas(char *text)
{
    size_t n = 2;
    char **out, *save = NULL;
    for (const char *p = text; p && *p; p++)
        n += *p == ',';
    if (!text || !(out = calloc(n, sizeof(*out))))
        return NULL;
    n = 0;
    for (char *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        out[n++] = tok;
    return out;
}

/* ---- the verb ------------------------------------------------------------------------------ */

int cmd_profile(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"ncu", no_argument, NULL, 'n'},
        {"ncu-rules", no_argument, NULL, 'R'}, {"lock-clocks", no_argument, NULL, 'L'},
        {"static", no_argument, NULL, 'S'}, {"all-tools", no_argument, NULL, 'A'},
        {"tool", required_argument, NULL, 't'}, {"list-tools", no_argument, NULL, 'l'},
        {"tool-stats", no_argument, NULL, 'T'}, {"import", required_argument, NULL, 'i'},
        {"size", required_argument, NULL, 's'}, {"db", required_argument, NULL, 'D'},
        {"no-store", no_argument, NULL, 'N'}, {"device", required_argument, NULL, 'd'},
        {"arch", required_argument, NULL, 'a'}, {"timeout", required_argument, NULL, 'o'},
        {"cache-dir", required_argument, NULL, 'c'}, {"verbose", no_argument, NULL, 'v'},
        {"parent", required_argument, NULL, 'P'}, {"metrics", required_argument, NULL, 'M'},
        {"set", required_argument, NULL, 'E'}, {"repeat", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    kopt_run_profile_opts o = KOPT_RUN_PROFILE_OPTS_INIT;
    kopt_eval_opts *eo = &o.eval;
    kopt_profile_opts *po = &o.profile;
    kopt_run_opts ro = KOPT_RUN_OPTS_INIT;
    kopt_run *run = NULL;
    kopt_run_profile *s = NULL;
    kopt_vars sizes = KOPT_VARS_INIT;
    kopt_problem *prob = NULL;
    kopt_candidate *cand = NULL, *parent = NULL;
    const char *only = NULL, *db_path = cli_default_db(), *parent_path = NULL;
    const char *cand_path = NULL;
    int json = 0, list = 0, stats = 0, no_store = 0, c, code = 0;
    kopt_ctx *ctx = cli_ctx(0);
    char *end, *metric_text = NULL, **metric_list = NULL;

    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'n': po->ncu = 1; break;
        case 'R': po->ncu = po->ncu_rules = 1; break;
        case 'L': po->ncu_lock_clocks = 1; break;
        case 'S': o.static_only = 1; break;
        case 'A': o.all_tools = 1; break;
        case 't': only = optarg; break;
        case 'l': list = 1; break;
        case 'T': stats = 1; break;
        case 'i': o.import = optarg; break;
        case 'P': parent_path = optarg; break;
        case 'M':
            free(metric_list);
            free(metric_text);
            metric_text = strdup(optarg);
            metric_list = split_commas(metric_text);
            po->metrics = (const char *const *)metric_list;
            break;
        case 'E':
            if (strcmp(optarg, "roofline") == 0)
                po->sets = KOPT_PROFILE_SET_ROOFLINE;
            else if (strcmp(optarg, "rules") == 0)
                po->sets = KOPT_PROFILE_SET_RULES;
            else
                goto bad_number;
            break;
        case 'r': po->repeat = (int)strtol(optarg, &end, 10);
            if (*end || po->repeat < 1 || po->repeat > 100) goto bad_number;
            break;
        case 's':
            if (cli_parse_size(ctx, "profile", optarg, &sizes) != 0) {
                code = KOPT_EXIT_USAGE;
                goto done;
            }
            break;
        case 'D': db_path = optarg; break;
        case 'N': no_store = 1; break;
        case 'd': eo->device = po->device = (int)strtol(optarg, &end, 10);
            if (*end || eo->device < 0) goto bad_number;
            break;
        case 'a': eo->arch = po->arch = optarg; break;
        case 'o': eo->timeout_s = po->timeout_s = strtod(optarg, &end);
            if (*end || eo->timeout_s <= 0) goto bad_number;
            break;
        case 'c': eo->cache_dir = po->cache_dir = optarg; break;
        case 'v': kopt_log_set(ctx, NULL, NULL, KOPT_LOG_INFO); break;
        case 'h': help(stdout); goto done;
        default: help(stderr); code = KOPT_EXIT_USAGE; goto done;
        }
        continue;
bad_number:
        fprintf(stderr, "kopt profile: bad value '%s' (see kopt profile --help)\n", optarg);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (no_store)
        db_path = NULL;
    if (only && !kopt_tool_find(only)) {
        fprintf(stderr, "kopt profile: unknown tool '%s' (kopt profile --list-tools)\n", only);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (list) {
        kopt_run_tools_print(stdout, json);
        goto done;
    }
    if (stats && !db_path) {
        fprintf(stderr, "kopt profile: --tool-stats needs a store (--db PATH)\n");
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (stats) {
        if (kopt_run_tool_stats_print(stdout, ctx, db_path, json) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_ERROR;
        }
        goto done;
    }
    if (optind >= argc || argc - optind > 2) {
        help(stderr);
        code = KOPT_EXIT_USAGE;
        goto done;
    }
    if (kopt_problem_load(&prob, ctx, argv[optind]) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_INVALID;
        goto done;
    }
    if (optind + 1 < argc) {
        cand_path = argv[optind + 1];
        if (kopt_candidate_load(&cand, ctx, cand_path, prob) != KOPT_OK) {
            cli_error(ctx);
            code = KOPT_EXIT_INVALID;
            goto done;
        }
    }
    if (parent_path && strcmp(parent_path, "reference") != 0 &&
        kopt_candidate_load(&parent, ctx, parent_path, prob) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_INVALID;
        goto done;
    }
    o.parent = parent;
    o.parent_is_reference = parent_path && !parent;
    o.only_tool = only;
    eo->sizes = sizes.n ? &sizes : NULL;

    /* the run: correct first, then compile info, SASS, metrics, analysis, the store */
    ro.kind = KOPT_RUN_PROFILE;
    ro.db_path = db_path;
    ro.db_optional = 1;
    if (cli_run_open(ctx, &ro, eo, &run) != 0) {
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    if (prob->ref_torch && !o.static_only) {   /* a PyTorch program: kernel by kernel */
        code = cli_profile_program(ctx, run, prob, cand, cand_path, eo, json, 1);
        goto done;
    }
    if (kopt_run_profile_candidate(run, ctx, prob, cand, &o, &s) != KOPT_OK) {
        cli_error(ctx);
        code = cli_fault_code(run);
        goto done;
    }
    kopt_run_profile_print(stdout, s, cand_path, only, json);
    code = s->eval ? kopt_verdict_exit_code(s->eval->verdict) : 0;
    kopt_run_finish(run, ctx, s->static_only ? KOPT_RUN_SKIPPED : KOPT_RUN_OK, NULL);
done:
    kopt_run_profile_free(s);
    kopt_run_close(run);
    kopt_candidate_free(cand);
    kopt_candidate_free(parent);
    free(metric_list);
    free(metric_text);
    kopt_problem_free(prob);
    kopt_vars_free(&sizes);
    kopt_ctx_free(ctx);
    return code;
}
