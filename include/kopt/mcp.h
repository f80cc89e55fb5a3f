/*
 * kopt/mcp.h: kopt as a Model Context Protocol server (protocol version 2025-11-25, the
 * official SDKs' default; 2025-06-18 and 2025-03-26 are accepted when a client asks for
 * them). JSON-RPC 2.0, one message per line, on a pair of file descriptors (stdio). Tools
 * (list_problems, eval, profile, tune, list_runs, get_run, device) go through the run API
 * exactly as the CLI's verbs do, so a candidate sent through MCP gets the same checks and
 * sandbox; stored runs, evaluations, profiles and tuning runs are resources
 * (kopt://run/ID, kopt://evaluation/ID, kopt://profile/ID, kopt://tune_run/ID). A reader
 * thread keeps reading while one tool call at a time runs on a worker thread, so ping and
 * notifications/cancelled are handled during a long call; a cancelled tune stops after its
 * current evaluation and a cancelled call sends no result. docs/mcp.md is the guide.
 *
 * Ownership: options are borrowed for the life of the server call. The library never
 * writes to any descriptor but out_fd (protocol messages) and its log callback.
 */
#ifndef KOPT_MCP_H
#define KOPT_MCP_H

#include "kopt/run.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KOPT_MCP_PROTOCOL_VERSION "2025-11-25"

typedef struct kopt_mcp_opts {
    int version;
    const char *db_path;          /* the store every call records into; NULL: none */
    const char *examples_dir;     /* list_problems' default folder (NULL: "examples") */
    const char *cache_dir;        /* compile cache (NULL: the default) */
    int max_tune_budget;          /* a tune call's budget at most (default 500) */
    double replay_delay_ms;       /* tune replays: sleep before each evaluation (tests) */
} kopt_mcp_opts;
#define KOPT_MCP_OPTS_INIT {1, NULL, NULL, NULL, 500, 0.0}

/* Serve until in_fd reaches end of file: read requests from in_fd, write responses and
 * notifications to out_fd. Returns KOPT_OK at end of input (after running calls end),
 * KOPT_E_IO when out_fd cannot be written. */
kopt_status kopt_mcp_serve(kopt_ctx *ctx, int in_fd, int out_fd, const kopt_mcp_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
