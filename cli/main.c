/* kopt: the command-line entry point and verb table. */
#include "cli.h"

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
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kopt <verb> [options]   (kopt <verb> --help for each)\n\nverbs:\n");
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "\nkopt %s. Exit codes: docs/cli.md.\n", KOPT_VERSION);
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

/* `kopt --version`: the version and the worker program evaluations will start */
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
    kopt_ctx_free(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "__worker") == 0)
        return kopt_worker_main();
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return argc < 2 ? KOPT_EXIT_USAGE : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)
        return version();
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (strcmp(argv[1], verbs[i].name) == 0)
            return verbs[i].run(argc - 1, argv + 1);
    fprintf(stderr, "kopt: unknown verb '%s'\n", argv[1]);
    usage(stderr);
    return KOPT_EXIT_USAGE;
}
