/* kopt mcp: serve kopt's tools over the Model Context Protocol on stdin/stdout, or with
 * --http PORT on http://127.0.0.1:PORT/mcp (kopt/mcp.h, docs/mcp.md). stdout carries only
 * protocol messages: it is kept for them and descriptor 1 is pointed at stderr, so nothing
 * else (a child's output) can reach it. */
#include "cli.h"
#include "kopt/mcp.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt mcp [options]\n"
        "\n"
        "Serve kopt to coding agents as a Model Context Protocol server (protocol %s) on\n"
        "standard input and output: tools list_problems, eval, profile, tune, list_runs,\n"
        "get_run, device, optimize_start/step/prompts/reply/tree, cute_search; stored runs\n"
        "and optimize trees as resources (kopt://run/ID, ...). Guide: docs/mcp.md.\n"
        "\n"
        "options:\n"
        "  --http PORT         streamable HTTP on http://127.0.0.1:PORT/mcp instead (0: a\n"
        "                      free port; the address is printed on stderr); until SIGINT/TERM\n"
        "  --db PATH           store (default ./kopt.db or $KOPT_DB); --no-store: none\n"
        "  --examples DIR      list_problems' folder (default ./examples)\n"
        "  --cache-dir DIR     compile cache\n"
        "  --max-budget N      a tune call's budget at most (default 500)\n"
        "  -v, --verbose       log to stderr\n", KOPT_MCP_PROTOCOL_VERSION);
}

/* --http: listen until SIGINT or SIGTERM (blocked here, taken with sigwait). */
static int serve_http(const kopt_mcp_opts *mo, int port, int verbose)
{
    kopt_ctx *ctx = cli_ctx(verbose);
    kopt_mcp_http *h = NULL;
    sigset_t set;
    int sig = 0;

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);   /* before any thread starts: all inherit it */
    if (kopt_mcp_http_start(&h, ctx, port, mo) != KOPT_OK) {
        cli_error(ctx);
        kopt_ctx_free(ctx);
        return KOPT_EXIT_ERROR;
    }
    fprintf(stderr, "kopt mcp: listening on http://127.0.0.1:%d/mcp (protocol %s)\n",
            kopt_mcp_http_port(h), KOPT_MCP_PROTOCOL_VERSION);
    sigwait(&set, &sig);
    fprintf(stderr, "kopt mcp: stopping (calls in flight end first)\n");
    kopt_mcp_http_stop(h);
    kopt_ctx_free(ctx);
    return 0;
}

int cmd_mcp(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'D'}, {"no-store", no_argument, NULL, 'N'},
        {"examples", required_argument, NULL, 'e'}, {"cache-dir", required_argument, NULL, 'c'},
        {"max-budget", required_argument, NULL, 'b'}, {"verbose", no_argument, NULL, 'v'},
        {"http", required_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    kopt_mcp_opts mo = KOPT_MCP_OPTS_INIT;
    const char *delay = getenv("KOPT_TUNE_REPLAY_DELAY_MS");
    int c, verbose = 0, out_fd, code = 0, http_port = -1;
    char *end;
    kopt_ctx *ctx;

    mo.db_path = cli_default_db();
    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        switch (c) {
        case 'D': mo.db_path = optarg; break;
        case 'N': mo.db_path = NULL; break;
        case 'e': mo.examples_dir = optarg; break;
        case 'c': mo.cache_dir = optarg; break;
        case 'b':
            mo.max_tune_budget = (int)strtol(optarg, &end, 10);
            if (*end || mo.max_tune_budget < 1) {
                fprintf(stderr, "kopt mcp: bad value '%s' for --max-budget\n", optarg);
                return KOPT_EXIT_USAGE;
            }
            break;
        case 'v': verbose = 1; break;
        case 'H':
            http_port = (int)strtol(optarg, &end, 10);
            if (*end || !optarg[0] || http_port < 0 || http_port > 65535) {
                fprintf(stderr, "kopt mcp: bad value '%s' for --http (a port, 0 to 65535)\n",
                        optarg);
                return KOPT_EXIT_USAGE;
            }
            break;
        case 'h': help(stdout); return 0;
        default: help(stderr); return KOPT_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        help(stderr);
        return KOPT_EXIT_USAGE;
    }
    mo.replay_delay_ms = delay ? strtod(delay, NULL) : 0;
    if (http_port >= 0)
        return serve_http(&mo, http_port, verbose);
    fflush(stdout);
    if ((out_fd = dup(STDOUT_FILENO)) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        fprintf(stderr, "kopt mcp: cannot set up the output\n");
        return KOPT_EXIT_ERROR;
    }
    ctx = cli_ctx(verbose);
    if (kopt_mcp_serve(ctx, STDIN_FILENO, out_fd, &mo) != KOPT_OK) {
        cli_error(ctx);
        code = KOPT_EXIT_ERROR;
    }
    close(out_fd);
    kopt_ctx_free(ctx);
    return code;
}
