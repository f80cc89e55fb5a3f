/* kopt: the command-line entry point and verb table. */
#include "cli.h"
#include "kopt/serve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct verb {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} verb;

static const verb verbs[] = {
    {"eval", cmd_eval, "check a candidate kernel against its problem and time it"},
    {"devices", cmd_devices, "list GPUs, their properties and measured ceilings"},
    {"profile", cmd_profile, "profile a correct candidate and rank what to change (micro-tools)"},
    {"tune", cmd_tune, "search a template's params for the fastest configuration (or replay)"},
    {"llm", cmd_llm, "check a language-model setup (ping) or ask it one prompt"},
    {"optimize", cmd_optimize, "find a faster kernel: LLM agents inside a tree search"},
    {"report", cmd_report, "write a stored run as one self-contained HTML page"},
    {"mcp", cmd_mcp, "serve kopt's tools to coding agents (Model Context Protocol, stdio)"},
    {"cute", cmd_cute, "which CUTLASS kopt uses; search its CuTe/CUTLASS code (info, search)"},
    {"kb", cmd_kb, "KernelBench: import its problem files as kopt problems (kb import)"},
    {"bench", cmd_bench, "evaluate a suite: fast_p and geomean speedups vs eager and compile"},
    {"serve", cmd_serve, "keep workers started ahead and run `kopt eval --server` commands"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kopt <verb> [options]   (kopt <verb> --help for each)\n\nverbs:\n");
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "\nkopt %s. Exit codes: docs/cli.md.\n", KOPT_VERSION);
}

/* The verb's arguments as given (getopt_long reorders argv while parsing). */
static int g_argc;
static char **g_argv;

void cli_run_command(kopt_run_opts *ro)
{
    ro->argc = g_argc;
    ro->argv = g_argv;
}

kopt_ctx *cli_ctx(int verbose)
{
    kopt_ctx *ctx = kopt_ctx_new();
    if (!ctx) {
        fprintf(stderr, "kopt: out of memory\n");
        exit(KOPT_EXIT_ERROR);
    }
    kopt_log_set(ctx, NULL, NULL, verbose ? KOPT_LOG_INFO : KOPT_LOG_WARN);
    return ctx;
}

void cli_error(kopt_ctx *ctx)
{
    fprintf(stderr, "kopt: %s\n", kopt_errmsg(ctx));
    if (kopt_errdetail(ctx)[0])
        fprintf(stderr, "%s", kopt_errdetail(ctx));
}

const char *cli_default_db(void)
{
    const char *v = getenv("KOPT_DB");
    return v && v[0] ? v : "kopt.db";
}

void cli_print_json(json_t *j)
{
    char *t = j ? json_dumps(j, JSON_INDENT(2)) : NULL;

    printf("%s\n", t ? t : json_is_array(j) ? "[]" : "{}");
    free(t);
    json_decref(j);
}

void cli_print_text(char *text)
{
    printf("%s\n", text ? text : "{}");
    free(text);
}

int cli_server_socket(const char *verb_name, int asked, const char *path, const char **out)
{
    const char *env = getenv("KOPT_SERVER");

    *out = NULL;
    if (!asked && !(env && env[0] && strcmp(env, "0") != 0))
        return 0;
    if (!path || !path[0])
        path = kopt_serve_default_socket();
    if (kopt_serve_alive(path)) {
        *out = path;
        return 0;
    }
    if (!asked)                        /* $KOPT_SERVER with no server: evaluate here */
        return 0;
    fprintf(stderr, "kopt %s: --server: no kopt serve answers on %s (%s): start one with "
                    "`kopt serve`\n", verb_name, path, strerror(errno));
    return -1;
}

int cli_eval_option(const char *name, const char *arg, kopt_eval_opts *eo)
{
    char *end = NULL;
    long v;

    if (strcmp(name, "trials") == 0) {
        v = strtol(arg, &end, 10);
        if (*end || v < 1 || v > 16)
            return -1;
        eo->trials = (int)v;
    } else if (strcmp(name, "budget-ms") == 0) {
        eo->budget_ms = strtod(arg, &end);
        return *end || eo->budget_ms <= 0 ? -1 : 0;
    } else if (strcmp(name, "precision") == 0) {   /* percent of the median */
        eo->precision = strtod(arg, &end) / 100.0;
        return *end || eo->precision < 0 || eo->precision >= 1 ? -1 : 0;
    } else if (strcmp(name, "reps") == 0) {
        return sscanf(arg, "%d:%d", &eo->min_reps, &eo->max_reps) != 2 || eo->min_reps < 1 ||
               eo->max_reps < eo->min_reps ? -1 : 0;
    } else if (strcmp(name, "no-flush") == 0) {
        eo->no_flush = 1;
    } else if (strcmp(name, "no-check-sizes") == 0) {
        eo->skip_check_sizes = 1;
    } else if (strcmp(name, "timeout") == 0) {
        eo->timeout_s = strtod(arg, &end);
        return *end || eo->timeout_s <= 0 ? -1 : 0;
    } else if (strcmp(name, "device") == 0) {
        v = strtol(arg, &end, 10);
        if (*end || v < 0 || v > 64)
            return -1;
        eo->device = (int)v;
    } else if (strcmp(name, "arch") == 0) {
        eo->arch = arg;
    } else if (strcmp(name, "cache-dir") == 0) {
        eo->cache_dir = arg;
    } else if (strcmp(name, "cutlass") == 0) {   /* the compile finds it there first */
        return setenv("CUTLASS_PATH", arg, 1);
    } else {
        return -1;
    }
    return 0;
}

int cli_parse_size(kopt_ctx *ctx, const char *verb_name, const char *arg, kopt_vars *sizes)
{
    char *name = NULL;
    int64_t v;

    if (kopt_vars_parse_assign(ctx, arg, &name, &v) != KOPT_OK) {
        fprintf(stderr, "kopt %s: --size %s\n", verb_name, kopt_errmsg(ctx));
        return -1;
    }
    kopt_vars_set(sizes, name, v);
    free(name);
    return 0;
}

/* `kopt --version`: the version, the worker program evaluations will start, the PyTorch
 * worker and the libkopt that PyTorch-path lockdowns load */
static int version(void)
{
    kopt_ctx *ctx = cli_ctx(0);
    const char *source = NULL;
    char *worker = NULL;
    int rc = 0;

    printf("kopt %s\n", KOPT_VERSION);
    if (kopt_worker_find(ctx, &worker, &source) == KOPT_OK) {
        printf("worker %s (%s)\n", worker, source);
    } else {
        cli_error(ctx);
        rc = KOPT_EXIT_ERROR;
    }
    free(worker);
    /* the PyTorch worker and the libkopt a ModelNew's lockdown loads: optional parts */
    if (kopt_torch_worker_find(ctx, &worker) == KOPT_OK)
        printf("torch worker %s\n", worker);
    else
        printf("torch worker: none (%s)\n", kopt_errmsg(ctx));
    free(worker);
    if (kopt_lib_find(ctx, &worker) == KOPT_OK)
        printf("libkopt %s\n", worker);
    else
        printf("libkopt: none (%s)\n", kopt_errmsg(ctx));
    free(worker);
    kopt_ctx_free(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "__worker") == 0)
        return kopt_worker_main_args(argc - 1, argv + 1);
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return argc < 2 ? KOPT_EXIT_USAGE : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)
        return version();
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (strcmp(argv[1], verbs[i].name) == 0) {
            int code;
            g_argc = argc - 1;
            if ((g_argv = calloc((size_t)argc, sizeof(*g_argv))) != NULL)
                memcpy(g_argv, argv + 1, (size_t)g_argc * sizeof(*g_argv));
            code = verbs[i].run(argc - 1, argv + 1);
            free(g_argv);
            return code;
        }
    fprintf(stderr, "kopt: unknown verb '%s'\n", argv[1]);
    usage(stderr);
    return KOPT_EXIT_USAGE;
}
