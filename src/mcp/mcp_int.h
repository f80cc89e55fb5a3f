/* Internal: the MCP server's state, a call in flight, and the tool table (src/mcp). */
#ifndef KOPT_MCP_INT_H
#define KOPT_MCP_INT_H

#include "kopt/mcp.h"

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>

typedef struct kopt__mcp_server kopt__mcp_server;
typedef struct kopt__mcp_stream kopt__mcp_stream;

/* One tools/call: its request id, progress token, arguments and cancellation flag. */
typedef struct kopt__mcp_call {
    kopt__mcp_server *srv;
    json_t *id;                      /* the request's id */
    json_t *token;                   /* params._meta.progressToken; NULL: none */
    json_t *args;                    /* params.arguments (an object) */
    const struct kopt__mcp_tool *tool;
    volatile sig_atomic_t cancelled; /* notifications/cancelled named it */
    kopt__mcp_stream *stream;        /* HTTP: its progress and result go there (else out_fd) */
    struct kopt__mcp_call *next;
} kopt__mcp_call;

/* A tool: its input schema (JSON text) and handler. The handler fills *out (structured
 * content, an object) and `text` (a short summary for the model) and returns KOPT_OK, or
 * an error with the message on ctx (a tool error the model sees, isError: true). Arguments
 * were checked against the schema's types and required fields first. */
typedef struct kopt__mcp_tool {
    const char *name;
    const char *title;
    const char *description;
    const char *schema;
    kopt_status (*run)(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *text);
} kopt__mcp_tool;

/* server.c: `args` checked against a tool's schema (required fields, property types); 0
 * when they fit, else the message names the field ("arguments.problem: ..."). */
int kopt__mcp_check_args(const char *schema_text, json_t *args, char *msg, size_t n);

/* tools.c: what eval and profile share (and call.c's sessions): the problem, the candidate
 * (candidate_path, or candidate_source written to a private folder, tmpdir), the sizes,
 * trials, seed and device from the call's arguments, and a run of `kind` in the store. */
typedef struct subject {
    kopt_problem *prob;
    kopt_candidate *cand;
    kopt_vars sizes;
    kopt_run *run;
    char tmpdir[4096];
} subject;
kopt_status kopt__mcp_subject_open(subject *s, kopt__mcp_call *c, kopt_ctx *ctx,
                                   kopt_run_kind kind, kopt_eval_opts *eo);
void kopt__mcp_subject_close(subject *s);
kopt_status kopt__mcp_load_candidate(kopt__mcp_call *c, kopt_ctx *ctx,
                                     const kopt_problem *prob, kopt_candidate **out,
                                     char *tmpdir, size_t n);
void kopt__mcp_remove_tmp(const char *tmpdir);   /* the folder load_candidate made, if any */

/* tools.c: the table */
const kopt__mcp_tool *kopt__mcp_tools(int *n);
const kopt__mcp_tool *kopt__mcp_tool_find(const char *name);

/* tools_optimize.c: optimize_start, optimize_step, optimize_prompts, optimize_reply,
 * optimize_tree, cute_search (their schemas are in tools.c's table) */
kopt_status kopt__mcp_t_optimize_start(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                       kopt_buf *t);
kopt_status kopt__mcp_t_optimize_step(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                      kopt_buf *t);
kopt_status kopt__mcp_t_optimize_prompts(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                         kopt_buf *t);
kopt_status kopt__mcp_t_optimize_reply(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                       kopt_buf *t);
kopt_status kopt__mcp_t_optimize_tree(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                      kopt_buf *t);
kopt_status kopt__mcp_t_cute_search(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out,
                                    kopt_buf *t);

/* tools_bench.c: bench (kopt bench in-process; its schema is in tools.c's table) */
kopt_status kopt__mcp_t_bench(kopt__mcp_call *c, kopt_ctx *ctx, json_t **out, kopt_buf *t);

/* The server (server.c makes and ends it; send.c writes to out_fd). */
struct kopt__mcp_server {
    kopt_ctx *ctx;                   /* the caller's: logs */
    int out_fd;
    int write_failed;
    kopt_mcp_opts o;
    pthread_mutex_t out_lock;        /* one message at a time on out_fd */
    pthread_mutex_t run_lock;        /* one tool call at a time */
    pthread_mutex_t calls_lock;      /* the list of calls in flight */
    pthread_cond_t calls_done;
    kopt__mcp_call *calls;
    int ncalls;
};

/* server.c: a server writing to out_fd (-1: none, every message is routed), one message
 * handled (a JSON-RPC text), the end (waits for the calls in flight). */
kopt__mcp_server *kopt__mcp_server_new(kopt_ctx *ctx, int out_fd, const kopt_mcp_opts *opts);
void kopt__mcp_handle(kopt__mcp_server *s, const char *text);
void kopt__mcp_server_free(kopt__mcp_server *s);

/* Where the messages of the handling thread go (http.c sets it around kopt__mcp_handle): a
 * reply is kept in `reply` (owned), and a tools/call takes `stream` (call_started set). */
typedef struct kopt__mcp_route {
    json_t *reply;
    kopt__mcp_stream *stream;
    int call_started;
} kopt__mcp_route;
extern _Thread_local kopt__mcp_route *kopt__mcp_route_cur;

/* stream.c: a call's stream of messages (text/event-stream): pushed by the call's thread,
 * read by the HTTP response; ended after the call's last message. `stopping` (the daemon's
 * flag) makes a waiting reader give up. */
kopt__mcp_stream *kopt__mcp_stream_new(volatile int *stopping);
/* Up to max bytes of the next SSE event, waiting for one; -1 at the end of the stream. */
ssize_t kopt__mcp_stream_read(kopt__mcp_stream *st, char *buf, size_t max);
void kopt__mcp_stream_push(kopt__mcp_stream *st, char *text);   /* takes text */
void kopt__mcp_stream_end(kopt__mcp_stream *st);
kopt__mcp_stream *kopt__mcp_stream_ref(kopt__mcp_stream *st);
void kopt__mcp_stream_unref(kopt__mcp_stream *st);

/* send.c: a message (taken) to where it goes: the call's stream, the handling thread's route
 * (when c is NULL), or s's out_fd. */
void kopt__mcp_emit(kopt__mcp_server *s, kopt__mcp_call *c, json_t *msg);
const kopt_mcp_opts *kopt__mcp_opts(kopt__mcp_call *c);
/* Send notifications/progress for the call (nothing without a progress token). */
void kopt__mcp_progress(kopt__mcp_call *c, double progress, double total, const char *msg);

/* args.c: a call's arguments: a string (NULL when absent or not one), an integer or a
 * boolean (dflt when absent or not one); a library JSON text parsed and freed (NULL or bad
 * JSON: an empty object); whether p is a folder; arguments.gpus ("all" or "0,2,5", as
 * --gpus; count: the GPUs to check the indices against, < 0 not checked) into gpus[0..*n)
 * (absent: *n = 0), its error naming the field. */
const char *kopt__mcp_arg_str(kopt__mcp_call *c, const char *k);
json_int_t kopt__mcp_arg_int(kopt__mcp_call *c, const char *k, json_int_t dflt);
int kopt__mcp_arg_bool(kopt__mcp_call *c, const char *k, int dflt);
json_t *kopt__mcp_parsed(char *text);
int kopt__mcp_is_dir(const char *p);
kopt_status kopt__mcp_gpus_arg(kopt__mcp_call *c, kopt_ctx *ctx, int count, int *gpus,
                               int max, int *n);

#endif
