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

/* `kopt --version`: the version, the worker program evaluations will start, the PyTorch
 * worker, the libkopt that PyTorch-path lockdowns load, the prebuilt runtime kernels and
 * the NVRTC that compiles */
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
    if (kopt_runtime_prebuilt_dir(ctx, &worker) == KOPT_OK)
        printf("runtime kernels %s\n", worker);
    else
        printf("runtime kernels: none prebuilt (NVRTC compiles them when first needed)\n");
    free(worker);
    {   /* the run-time compiler: a toolkit's, or NVIDIA's pip package beside a wheel */
        char path[1024];
        int major, minor;
        if (kopt_compile_nvrtc_version(ctx, &major, &minor) == KOPT_OK &&
            kopt_compile_nvrtc_path(ctx, path, sizeof(path)) == KOPT_OK)
            printf("nvrtc %d.%d %s\n", major, minor, path[0] ? path : "(file not known)");
        else
            printf("nvrtc: none (%s)\n", kopt_errmsg(ctx));
    }
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
            cli_command_set(argc - 1, argv + 1);
            code = verbs[i].run(argc - 1, argv + 1);
            cli_command_set(0, NULL);
            return code;
        }
    fprintf(stderr, "kopt: unknown verb '%s'\n", argv[1]);
    usage(stderr);
    return KOPT_EXIT_USAGE;
}
