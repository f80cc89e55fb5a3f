/* What the verbs share: the context and its error message, the store's default path, JSON
 * on stdout, the run opened with the command line and a failed step's exit code, and the
 * options several verbs take (evaluation options, --size, --server, --gpus). main.c's verb
 * table calls the verbs; the verbs and main.c call these, so the CLI's files call one way. */
#include "cli.h"
#include "kopt/serve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The verb's arguments as given (getopt_long reorders argv while parsing). */
static int g_argc;
static char **g_argv;

void cli_command_set(int argc, char **argv)
{
    free(g_argv);
    g_argc = argc;
    g_argv = NULL;
    if (argc > 0 && (g_argv = calloc((size_t)argc + 1, sizeof(*g_argv))) != NULL)
        memcpy(g_argv, argv, (size_t)argc * sizeof(*g_argv));
}

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
    kopt_ctx *ctx = cli_ctx(0);
    int rc = 0;

    if (kopt_serve_socket_for(ctx, asked, path, out) != KOPT_OK) {
        fprintf(stderr, "kopt %s: --server: %s\n", verb_name, kopt_errmsg(ctx));
        rc = -1;
    }
    kopt_ctx_free(ctx);
    return rc;
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

int cli_gpus(kopt_ctx *ctx, const char *verb_name, const char *spec, int count, int *gpus,
             int *n)
{
    if (kopt_scale_devices_parse(ctx, spec, count, gpus, KOPT_SCALE_MAX_SLOTS, n) == KOPT_OK)
        return 0;
    fprintf(stderr, "kopt %s: %s\n", verb_name, kopt_errmsg(ctx));
    return -1;
}

int cli_run_open(kopt_ctx *ctx, kopt_run_opts *ro, const kopt_eval_opts *eo, kopt_run **run)
{
    cli_run_command(ro);
    ro->device = eo->device;
    ro->cache_dir = eo->cache_dir;
    if (kopt_run_open(run, ctx, ro) == KOPT_OK)
        return 0;
    cli_error(ctx);
    return -1;
}

int cli_fault_code(const kopt_run *run)
{
    switch (kopt_run_last_fault(run)) {
    case KOPT_RUN_FAULT_USAGE: return KOPT_EXIT_USAGE;
    case KOPT_RUN_FAULT_INPUT: return KOPT_EXIT_INVALID;
    case KOPT_RUN_FAULT_COMPILE: return kopt_verdict_exit_code(KOPT_VERDICT_COMPILE_ERROR);
    case KOPT_RUN_FAULT_LAUNCH: return kopt_verdict_exit_code(KOPT_VERDICT_LAUNCH_ERROR);
    default: return KOPT_EXIT_ERROR;
    }
}
