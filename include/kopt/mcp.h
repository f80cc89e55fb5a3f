/*
 * kopt/mcp.h: kopt as a Model Context Protocol server (protocol version 2025-11-25, the
 * official SDKs' default; 2025-06-18 and 2025-03-26 are accepted when a client asks for
 * them). JSON-RPC 2.0, one message per line, on a pair of file descriptors (stdio), or the
 * streamable HTTP transport on 127.0.0.1. Tools (list_problems, eval, profile, tune,
 * bench, list_runs, get_run, device, optimize_start/step/prompts/reply/tree, cute_search) go
 * through the run API
 * exactly as the CLI's verbs do, so a candidate sent through MCP gets the same checks and
 * sandbox; stored runs, evaluations, profiles and tuning runs are resources
 * (kopt://run/ID, kopt://evaluation/ID, kopt://profile/ID, kopt://tune_run/ID), and so are
 * optimize trees (kopt://optimize_tree/ID). A reader
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
    /* version 2: kopt_mcp_call's progress, each message as a tools/call's progress
     * notification would carry it (progress so far, total or 0, message), on a thread of
     * the call (it may be another than the caller's); NULL: none. A version 1 struct ends
     * before these. */
    void (*progress)(void *user, double progress, double total, const char *message);
    void *progress_user;
} kopt_mcp_opts;
#define KOPT_MCP_OPTS_INIT {2, NULL, NULL, NULL, 500, 0.0, NULL, NULL}

/* The streamable HTTP transport (MCP 2025-11-25), on libmicrohttpd: one endpoint, /mcp, on
 * 127.0.0.1 only. A POST carries one JSON-RPC message: a notification or a response gets
 * 202; a request gets its response as application/json, or, for tools/call, a
 * text/event-stream with the call's progress notifications and then its result. initialize
 * gives an Mcp-Session-Id that later requests must send (400 without it, 404 for an
 * unknown or ended one); DELETE ends a session; GET (a server-initiated stream) is 405. A
 * request whose Origin is not a loopback origin is refused (403: DNS rebinding), as is an
 * MCP-Protocol-Version this server does not speak (400). Start returns once listening
 * (port 0: a free port, kopt_mcp_http_port says which); stop waits for calls in flight. */
typedef struct kopt_mcp_http kopt_mcp_http;
kopt_status kopt_mcp_http_start(kopt_mcp_http **out, kopt_ctx *ctx, int port,
                                const kopt_mcp_opts *opts);
int kopt_mcp_http_port(const kopt_mcp_http *h);
void kopt_mcp_http_stop(kopt_mcp_http *h);   /* NULL-safe */

/* Serve until in_fd reaches end of file: read requests from in_fd, write responses and
 * notifications to out_fd. Returns KOPT_OK at end of input (after running calls end),
 * KOPT_E_IO when out_fd cannot be written. */
kopt_status kopt_mcp_serve(kopt_ctx *ctx, int in_fd, int out_fd, const kopt_mcp_opts *opts);

/* ---- the tools in-process (src/mcp/call.c; the Python package python/kopt binds these) ---
 * kopt_mcp_call runs one tool on the calling thread, as a tools/call would (its arguments
 * checked against the tool's schema first, a run recorded in opts->db_path), and gives its
 * structured content as JSON text (*out, caller frees; eval's is kopt eval --json's
 * document plus "run_id") and, when `summary` is not NULL, the one-line summary a model
 * would see (caller frees). An error status leaves the message on ctx (the field named:
 * "arguments.trials: 1 to 16"). `stop` (NULL: none): set it non-zero from another thread
 * (or a signal handler) to cancel, as notifications/cancelled does: a tune or an optimize
 * step or a bench stops after its current evaluation, what was done stays stored. */
kopt_status kopt_mcp_call(kopt_ctx *ctx, const kopt_mcp_opts *opts, const char *tool,
                          const char *args_json, volatile sig_atomic_t *stop, char **out,
                          char **summary);

/* An evaluation session in-process (kopt_run_session: one seed, the reference run once,
 * one long-lived worker for device code): opened with the eval tool's arguments less the
 * candidate (problem, sizes, seed, trials, device, no_timing), each evaluation with
 * {"candidate_path" or "candidate_source", "tag"}; *out as kopt_mcp_call's eval gives
 * (plus "session": {"evaluations": n}). Every evaluation is stored in opts->db_path under
 * one run. Workers end with the thread that started them: use a session from one thread.
 * kopt_mcp_session_close (NULL-safe) finishes the run. */
typedef struct kopt_mcp_session kopt_mcp_session;
kopt_status kopt_mcp_session_open(kopt_mcp_session **out, kopt_ctx *ctx,
                                  const kopt_mcp_opts *opts, const char *args_json);
kopt_status kopt_mcp_session_eval(kopt_mcp_session *s, kopt_ctx *ctx, const char *args_json,
                                  char **out);
void kopt_mcp_session_close(kopt_mcp_session *s);

#ifdef __cplusplus
}
#endif
#endif
