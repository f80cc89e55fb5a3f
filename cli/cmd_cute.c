/* kopt cute info|search|summarize: which CUTLASS kopt uses, a ranked code search over its
 * CuTe/CUTLASS headers and examples, and the short form of a compile log from inside them. */
#include "cli.h"
#include "kopt/cute.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt cute info [--json] [--cutlass DIR]\n"
        "       kopt cute search QUERY [--json] [--limit N] [--headers-only] [--chars N]\n"
        "                             [--cutlass DIR] [--cache-dir DIR] [--rebuild]\n"
        "       kopt cute summarize LOG   (an nvcc/NVRTC log file, '-' for stdin)\n\n"
        "CUTLASS is found by --cutlass DIR, then $CUTLASS_PATH, then the Python package\n"
        "nvidia-cutlass (pip install nvidia-cutlass). QUERY is an identifier\n"
        "(make_tma_copy, SM90_64x128x16_F32BF16BF16_SS) or words (\"TMA load multicast\").\n"
        "The index is built once per CUTLASS version in the cache (docs/cute.md).\n\n"
        "  --limit N         hits to show (default 5)\n"
        "  --chars N         characters per snippet at most (default 1200)\n"
        "  --headers-only    leave CUTLASS's examples out\n"
        "  --json            hits as JSON (file, path, line_start, line_end, score, snippet)\n");
}

static int summarize(const char *path)
{
    kopt_ctx *ctx = cli_ctx(0);
    kopt_buf in = KOPT_BUF_INIT;
    char *text = NULL, *sum;
    size_t len = 0;

    if (strcmp(path, "-") == 0) {
        char chunk[65536];
        size_t n;
        while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
            kopt_buf_append(&in, chunk, n);
        text = kopt_buf_detach(&in);
    } else if (kopt_file_read(ctx, path, &text, &len) != KOPT_OK) {
        cli_error(ctx);
        kopt_ctx_free(ctx);
        return KOPT_EXIT_ERROR;
    }
    sum = kopt_cute_summarize_errors(text ? text : "");
    printf("%s", sum ? sum : "");
    free(sum);
    free(text);
    kopt_ctx_free(ctx);
    return 0;
}

int cmd_cute(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"limit", required_argument, NULL, 'n'},
        {"chars", required_argument, NULL, 'c'}, {"headers-only", no_argument, NULL, 'H'},
        {"cutlass", required_argument, NULL, 'C'}, {"cache-dir", required_argument, NULL, 'd'},
        {"rebuild", no_argument, NULL, 'r'}, {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    kopt_cute_index_opts io = KOPT_CUTE_INDEX_OPTS_INIT;
    kopt_cute_search_opts so = KOPT_CUTE_SEARCH_OPTS_INIT;
    const char *cutlass = NULL, *sub;
    int json = 0, verbose = 0, c, code = 0;
    kopt_ctx *ctx;
    kopt_cutlass cl;
    kopt_cute_index *ix = NULL;
    kopt_cute_hits *hits = NULL;
    char *end;

    optind = 1;
    while ((c = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'n': so.limit = (int)strtol(optarg, &end, 10);
                  if (*end || so.limit < 1 || so.limit > 100) goto usage;
                  break;
        case 'c': so.max_snippet_chars = (int)strtol(optarg, &end, 10);
                  if (*end || so.max_snippet_chars < 80) goto usage;
                  break;
        case 'H': so.headers_only = 1; break;
        case 'C': cutlass = optarg; break;
        case 'd': io.cache_dir = optarg; break;
        case 'r': io.rebuild = 1; break;
        case 'v': verbose = 1; break;
        case 'h': help(stdout); return 0;
        default: goto usage;
        }
    }
    if (optind >= argc)
        goto usage;
    sub = argv[optind];
    if (strcmp(sub, "summarize") == 0)
        return optind + 2 == argc ? summarize(argv[optind + 1]) : (help(stderr), KOPT_EXIT_USAGE);
    if (strcmp(sub, "info") != 0 && !(strcmp(sub, "search") == 0 && optind + 2 == argc))
        goto usage;
    ctx = cli_ctx(verbose);
    if (kopt_cutlass_find(&cl, ctx, cutlass) != KOPT_OK) {
        cli_error(ctx);
        kopt_ctx_free(ctx);
        return KOPT_EXIT_ERROR;
    }
    if (strcmp(sub, "info") == 0) {
        if (json)
            cli_print_json(json_pack("{s:s, s:s, s:s, s:s}", "version", cl.version,
                                     "include_dir", cl.include_dir, "examples_dir",
                                     cl.examples_dir, "source", cl.source));
        else
            printf("CUTLASS %s\ninclude   %s\nexamples  %s\nfrom      %s\n", cl.version,
                   cl.include_dir, cl.examples_dir[0] ? cl.examples_dir : "(none)", cl.source);
        kopt_ctx_free(ctx);
        return 0;
    }
    if (kopt_cute_index_open(&ix, ctx, &cl, &io) != KOPT_OK ||
        kopt_cute_search(&hits, ctx, ix, argv[optind + 1], &so) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
    } else if (json) {
        cli_print_text(kopt_cute_hits_json(hits, argv[optind + 1]));
    } else {
        kopt_cute_index_info info;
        kopt_cute_index_get_info(ix, &info);
        if (info.built)
            fprintf(stderr, "kopt cute: indexed CUTLASS %s (%d files, %d chunks) in %.0f ms\n",
                    info.version, info.files, info.chunks, info.build_ms);
        char *text = kopt_cute_hits_text(hits);
        printf("%s", text ? text : "");
        free(text);
        fprintf(stderr, "kopt cute: %d hits in %.1f ms\n", hits->n, hits->query_ms);
    }
    kopt_cute_hits_free(hits);
    kopt_cute_index_free(ix);
    kopt_ctx_free(ctx);
    return code;
usage:
    help(stderr);
    return KOPT_EXIT_USAGE;
}
