/*
 * src/mcp: kopt's MCP server over the run API, on stdio or streamable HTTP. Calls go one
 * way: http.c -> server.c -> tools.c -> tools_optimize.c, every one of them -> send.c ->
 * stream.c (http.c also -> stream.c).
 * This file: the MCP server: JSON-RPC 2.0 over newline-delimited messages (the stdio
 * transport). The reader (the caller's thread) parses each line and answers initialize,
 * ping, tools/list, the resources methods at once; a tools/call gets a worker thread, and
 * the calls run one at a time (the run API is used by one caller at a time; SQLite sees one
 * writer), while the reader goes on reading, so ping and notifications/cancelled arrive
 * during a long call.
 */
#include "mcp_int.h"

#include "kopt/search.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* JSON-RPC error codes (and MCP's resource-not-found) */
enum {
    RPC_PARSE = -32700, RPC_INVALID_REQUEST = -32600, RPC_NO_METHOD = -32601,
    RPC_INVALID_PARAMS = -32602, RPC_INTERNAL = -32603, MCP_NO_RESOURCE = -32002
};

static const char *const versions[] = {KOPT_MCP_PROTOCOL_VERSION, "2025-06-18", "2025-03-26"};


/* ---- sending ------------------------------------------------------------------------------ */

static void send_json(kopt__mcp_server *s, json_t *msg)
{
    kopt__mcp_emit(s, NULL, msg);
}

static void send_result(kopt__mcp_server *s, json_t *id, json_t *result)
{
    send_json(s, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static void send_error(kopt__mcp_server *s, json_t *id, int code, const char *fmt, ...)
    KOPT_PRINTF(4, 5);
static void send_error(kopt__mcp_server *s, json_t *id, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    send_json(s, json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                           id ? id : json_null(), "error", "code", code, "message", msg));
}


/* ---- tool calls ------------------------------------------------------------------------- */

/* Check `args` against the schema's required fields and property types; the message names
 * the field ("arguments.problem: ..."). 0 when they fit. */
int kopt__mcp_check_args(const char *schema_text, json_t *args, char *msg, size_t n)
{
    json_t *schema = json_loads(schema_text, 0, NULL), *props, *req, *v, *p;
    const char *key;
    size_t i;
    int bad = 0;

    props = json_object_get(schema, "properties");
    req = json_object_get(schema, "required");
    json_array_foreach(req, i, v)
        if (!bad && !json_object_get(args, json_string_value(v))) {
            snprintf(msg, n, "arguments.%s: required", json_string_value(v));
            bad = 1;
        }
    json_object_foreach(args, key, v) {
        const char *type;
        int fits;
        if (bad)
            break;
        if (!(p = json_object_get(props, key))) {
            snprintf(msg, n, "arguments.%s: unknown argument", key);
            bad = 1;
            break;
        }
        type = json_string_value(json_object_get(p, "type"));
        fits = !type || (strcmp(type, "string") == 0 && json_is_string(v)) ||
               (strcmp(type, "integer") == 0 && json_is_integer(v)) ||
               (strcmp(type, "number") == 0 && json_is_number(v)) ||
               (strcmp(type, "boolean") == 0 && json_is_boolean(v)) ||
               (strcmp(type, "object") == 0 && json_is_object(v)) ||
               (strcmp(type, "array") == 0 && json_is_array(v));
        if (!fits) {
            snprintf(msg, n, "arguments.%s: expected %s %s", key,
                     strchr("aeiou", type[0]) ? "an" : "a", type);
            bad = 1;
        }
    }
    json_decref(schema);
    return bad;
}

static void call_free(kopt__mcp_call *c)
{
    if (!c)
        return;
    json_decref(c->id);
    json_decref(c->token);
    json_decref(c->args);
    free(c);
}

static void *call_main(void *arg)
{
    kopt__mcp_call *c = arg, **pp;
    kopt__mcp_server *s = c->srv;
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_buf text = KOPT_BUF_INIT;
    json_t *out = NULL, *result;
    kopt_status rc;

    pthread_mutex_lock(&s->run_lock);
    if (c->cancelled || !ctx) {
        rc = KOPT_E_ERROR;
    } else {
        kopt_log_set(ctx, NULL, NULL, KOPT_LOG_WARN);   /* stderr: never the protocol */
        rc = c->tool->run(c, ctx, &out, &text);
    }
    pthread_mutex_unlock(&s->run_lock);
    if (!c->cancelled) {   /* a cancelled call gets no response */
        if (rc == KOPT_OK) {
            result = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text",
                               kopt_buf_cstr(&text), "structuredContent",
                               out ? out : json_object(), "isError", 0);
            out = NULL;
        } else {
            result = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                               ctx ? kopt_errmsg(ctx) : "out of memory", "isError", 1);
        }
        kopt__mcp_emit(s, c, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", c->id,
                                       "result", result));
    }
    if (c->stream) {   /* HTTP: the stream ends (a cancelled call's with no result) */
        kopt__mcp_stream_end(c->stream);
        kopt__mcp_stream_unref(c->stream);
        c->stream = NULL;
    }
    json_decref(out);
    kopt_buf_free(&text);
    kopt_ctx_free(ctx);
    pthread_mutex_lock(&s->calls_lock);
    for (pp = &s->calls; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    s->ncalls--;
    pthread_cond_broadcast(&s->calls_done);
    pthread_mutex_unlock(&s->calls_lock);
    call_free(c);
    return NULL;
}

static void tools_call(kopt__mcp_server *s, json_t *id, json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    const kopt__mcp_tool *tool;
    kopt__mcp_call *c;
    pthread_t th;
    pthread_attr_t attr;
    char msg[512];

    if (!name) {
        send_error(s, id, RPC_INVALID_PARAMS, "params.name: expected the tool's name (a string)");
        return;
    }
    if (!(tool = kopt__mcp_tool_find(name))) {
        send_error(s, id, RPC_INVALID_PARAMS, "params.name: unknown tool '%s' (tools/list)",
                   name);
        return;
    }
    if (args && !json_is_object(args)) {
        send_error(s, id, RPC_INVALID_PARAMS, "params.arguments: expected an object");
        return;
    }
    if (kopt__mcp_check_args(tool->schema, args, msg, sizeof(msg))) {
        send_error(s, id, RPC_INVALID_PARAMS, "%s (tool %s)", msg, name);
        return;
    }
    if (!(c = calloc(1, sizeof(*c)))) {
        send_error(s, id, RPC_INTERNAL, "out of memory");
        return;
    }
    c->srv = s;
    c->tool = tool;
    c->id = json_incref(id);
    c->args = args ? json_incref(args) : json_object();
    c->token = json_incref(json_object_get(json_object_get(params, "_meta"), "progressToken"));
    if (kopt__mcp_route_cur && kopt__mcp_route_cur->stream) {
        c->stream = kopt__mcp_stream_ref(kopt__mcp_route_cur->stream);
        kopt__mcp_route_cur->call_started = 1;
    }
    pthread_mutex_lock(&s->calls_lock);
    c->next = s->calls;
    s->calls = c;
    s->ncalls++;
    pthread_mutex_unlock(&s->calls_lock);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, call_main, c) != 0) {
        pthread_mutex_lock(&s->calls_lock);
        s->calls = c->next;
        s->ncalls--;
        pthread_mutex_unlock(&s->calls_lock);
        if (c->stream) {
            kopt__mcp_stream_unref(c->stream);
            c->stream = NULL;
            kopt__mcp_route_cur->call_started = 0;
        }
        send_error(s, id, RPC_INTERNAL, "no thread for the call");
        call_free(c);
    }
    pthread_attr_destroy(&attr);
}

static void cancel(kopt__mcp_server *s, json_t *params)
{
    json_t *rid = json_object_get(params, "requestId");

    pthread_mutex_lock(&s->calls_lock);
    for (kopt__mcp_call *c = s->calls; c; c = c->next)
        if (rid && json_equal(c->id, rid)) {
            c->cancelled = 1;
            kopt_log(s->ctx, KOPT_LOG_INFO, "mcp: call cancelled");
        }
    pthread_mutex_unlock(&s->calls_lock);
}

/* ---- the other methods ------------------------------------------------------------------ */

static void initialize(kopt__mcp_server *s, json_t *id, json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *v = versions[0];

    if (!asked) {
        send_error(s, id, RPC_INVALID_PARAMS, "params.protocolVersion: expected a string");
        return;
    }
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
        if (strcmp(asked, versions[i]) == 0)
            v = versions[i];
    send_result(s, id, json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}}, s:{s:s, s:s, s:s}, s:s}",
        "protocolVersion", v, "capabilities", "tools", "listChanged", 0, "resources",
        "subscribe", 0, "listChanged", 0, "serverInfo", "name", "kopt", "title",
        "kopt: CUDA kernel workbench", "version",
#ifdef KOPT_VERSION
        KOPT_VERSION,
#else
        "",
#endif
        "instructions", "kopt checks, times, profiles and tunes CUDA kernels. Start with "
        "list_problems; eval a candidate (a .cu path or its source text) before profiling it; "
        "every result is stored and readable as kopt://run/ID. bench runs a KernelBench suite "
        "(kopt bench). To optimize a kernel with you as "
        "the model: optimize_start, then optimize_step / optimize_prompts / optimize_reply in "
        "turn; optimize_tree shows the search."));
}

static void tools_list(kopt__mcp_server *s, json_t *id)
{
    int n;
    const kopt__mcp_tool *t = kopt__mcp_tools(&n);
    json_t *arr = json_array();

    for (int i = 0; i < n; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:o}", "name", t[i].name,
                              "title", t[i].title, "description", t[i].description,
                              "inputSchema", json_loads(t[i].schema, 0, NULL)));
    send_result(s, id, json_pack("{s:o}", "tools", arr));
}

static void resources_list(kopt__mcp_server *s, json_t *id)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_store_run *runs = NULL;
    kopt_store *store = NULL;
    json_t *arr = json_array();
    int n = 0;

    if (s->o.db_path && ctx && kopt_run_list(ctx, s->o.db_path, NULL, 100, &runs, &n) != KOPT_OK)
        n = 0;   /* no store yet: no resources */
    if (s->o.db_path && n > 0 && kopt_store_open(&store, ctx, s->o.db_path) != KOPT_OK)
        store = NULL;
    for (int i = 0; i < n; i++) {
        char uri[64], name[96], desc[700], *path = NULL, *opts = NULL;
        snprintf(uri, sizeof(uri), "kopt://run/%lld", (long long)runs[i].id);
        snprintf(name, sizeof(name), "run %lld (%s, %s)", (long long)runs[i].id, runs[i].kind,
                 runs[i].status);
        snprintf(desc, sizeof(desc), "kopt %.300s; started %s%s%.300s", runs[i].command,
                 runs[i].started_at, runs[i].summary[0] ? "; " : "", runs[i].summary);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s}", "uri", uri, "name", name,
                                             "description", desc, "mimeType",
                                             "application/json"));
        /* an optimize run that began a tree (not a resume of one): the tree too */
        if (store && strcmp(runs[i].kind, "optimize") == 0 &&
            kopt_store_opt_tree_get(store, ctx, runs[i].id, &path, &opts) == KOPT_OK) {
            snprintf(uri, sizeof(uri), "kopt://optimize_tree/%lld", (long long)runs[i].id);
            snprintf(name, sizeof(name), "optimize tree %lld", (long long)runs[i].id);
            snprintf(desc, sizeof(desc), "the search tree of %.300s: nodes with plans, "
                     "verdicts, sources; the best node and the path to it", path ? path : "?");
            json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s}", "uri", uri, "name",
                                                 name, "description", desc, "mimeType",
                                                 "application/json"));
        }
        free(path);
        free(opts);
    }
    kopt_store_close(store);
    free(runs);
    kopt_ctx_free(ctx);
    send_result(s, id, json_pack("{s:o}", "resources", arr));
}

static void resource_templates(kopt__mcp_server *s, json_t *id)
{
    static const char *const kinds[] = {"run", "evaluation", "profile", "tune_run",
                                        "optimize_tree"};
    json_t *arr = json_array();

    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        char uri[64], name[64];
        snprintf(uri, sizeof(uri), "kopt://%s/{id}", kinds[i]);
        snprintf(name, sizeof(name), "stored %s", kinds[i]);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "uriTemplate", uri, "name",
                                             name, "mimeType", "application/json"));
    }
    send_result(s, id, json_pack("{s:o}", "resourceTemplates", arr));
}

static void resources_read(kopt__mcp_server *s, json_t *id, json_t *params)
{
    const char *uri = json_string_value(json_object_get(params, "uri"));
    char what[32], *text = NULL, *end = NULL;
    const char *slash;
    long long rid;
    kopt_ctx *ctx;
    kopt_status rc;

    if (!uri) {
        send_error(s, id, RPC_INVALID_PARAMS, "params.uri: expected a string");
        return;
    }
    if (strncmp(uri, "kopt://", 7) != 0 || !(slash = strchr(uri + 7, '/')) ||
        (size_t)(slash - uri - 7) >= sizeof(what) ||
        (rid = strtoll(slash + 1, &end, 10)) <= 0 || *end) {
        send_error(s, id, RPC_INVALID_PARAMS, "params.uri: '%s' is not kopt://KIND/ID "
                   "(KIND: run, evaluation, profile, tune_run, optimize_tree)", uri);
        return;
    }
    snprintf(what, sizeof(what), "%.*s", (int)(slash - uri - 7), uri + 7);
    if (!s->o.db_path || !(ctx = kopt_ctx_new())) {
        send_error(s, id, MCP_NO_RESOURCE, "resource not found: %s (no store)", uri);
        return;
    }
    rc = strcmp(what, "run") == 0 ? kopt_run_document_json(ctx, s->o.db_path, rid, &text)
       : strcmp(what, "optimize_tree") == 0 ? kopt_search_stored_json(ctx, s->o.db_path, rid, 1,
                                                                      &text)
       : kopt_run_item_json(ctx, s->o.db_path, what, rid, &text);
    if (rc == KOPT_OK)
        send_result(s, id, json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri,
                                     "mimeType", "application/json", "text", text));
    else if (rc == KOPT_E_NOT_FOUND || rc == KOPT_E_INVALID)
        send_error(s, id, MCP_NO_RESOURCE, "resource not found: %s (%s)", uri,
                   kopt_errmsg(ctx));
    else
        send_error(s, id, RPC_INTERNAL, "%s: %s", uri, kopt_errmsg(ctx));
    free(text);
    kopt_ctx_free(ctx);
}

/* ---- the reader ------------------------------------------------------------------------- */

void kopt__mcp_handle(kopt__mcp_server *s, const char *line)
{
    json_error_t err;
    json_t *msg = json_loads(line, JSON_DECODE_ANY, &err), *id, *params;
    const char *method;

    if (!msg) {
        send_error(s, NULL, RPC_PARSE, "parse error: %s (column %d)", err.text, err.column);
        return;
    }
    if (!json_is_object(msg)) {
        send_error(s, NULL, RPC_INVALID_REQUEST, "invalid request: a JSON-RPC message is an "
                   "object%s", json_is_array(msg) ? " (batches are not part of MCP since "
                   "2025-06-18)" : "");
        goto done;
    }
    id = json_object_get(msg, "id");
    params = json_object_get(msg, "params");
    method = json_string_value(json_object_get(msg, "method"));
    if (id && !json_is_string(id) && !json_is_integer(id)) {
        send_error(s, NULL, RPC_INVALID_REQUEST, "invalid request: id: expected a string or "
                   "an integer");
        goto done;
    }
    if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
        strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0) {
        send_error(s, id, RPC_INVALID_REQUEST, "invalid request: jsonrpc: expected \"2.0\"");
        goto done;
    }
    if (!method) {
        if (!id || (!json_object_get(msg, "result") && !json_object_get(msg, "error")))
            send_error(s, id, RPC_INVALID_REQUEST, "invalid request: method: expected a "
                       "string");
        goto done;   /* a response to us (we send no requests): ignored */
    }
    if (params && !json_is_object(params)) {
        if (id)
            send_error(s, id, RPC_INVALID_PARAMS, "params: expected an object");
        goto done;
    }
    if (!id) {   /* notifications */
        if (strcmp(method, "notifications/cancelled") == 0)
            cancel(s, params);
        goto done;
    }
    if (strcmp(method, "initialize") == 0)
        initialize(s, id, params);
    else if (strcmp(method, "ping") == 0)
        send_result(s, id, json_object());
    else if (strcmp(method, "tools/list") == 0)
        tools_list(s, id);
    else if (strcmp(method, "tools/call") == 0)
        tools_call(s, id, params ? params : json_object());
    else if (strcmp(method, "resources/list") == 0)
        resources_list(s, id);
    else if (strcmp(method, "resources/templates/list") == 0)
        resource_templates(s, id);
    else if (strcmp(method, "resources/read") == 0)
        resources_read(s, id, params);
    else
        send_error(s, id, RPC_NO_METHOD, "method not found: %s", method);
done:
    json_decref(msg);
}

kopt__mcp_server *kopt__mcp_server_new(kopt_ctx *ctx, int out_fd, const kopt_mcp_opts *opts)
{
    kopt__mcp_server *s = calloc(1, sizeof(*s));
    kopt_mcp_opts defaults = KOPT_MCP_OPTS_INIT;

    if (!s)
        return NULL;
    s->ctx = ctx;
    s->out_fd = out_fd;
    s->o = defaults;
    if (opts && opts->version >= 2)
        s->o = *opts;
    else if (opts)                     /* version 1: the fields before progress */
        memcpy(&s->o, opts, offsetof(kopt_mcp_opts, progress));
    if (s->o.max_tune_budget <= 0)
        s->o.max_tune_budget = defaults.max_tune_budget;
    pthread_mutex_init(&s->out_lock, NULL);
    pthread_mutex_init(&s->run_lock, NULL);
    pthread_mutex_init(&s->calls_lock, NULL);
    pthread_cond_init(&s->calls_done, NULL);
    return s;
}

void kopt__mcp_server_free(kopt__mcp_server *s)
{
    if (!s)
        return;
    /* the calls in flight end (each is bounded) and answer */
    pthread_mutex_lock(&s->calls_lock);
    while (s->ncalls > 0)
        pthread_cond_wait(&s->calls_done, &s->calls_lock);
    pthread_mutex_unlock(&s->calls_lock);
    pthread_cond_destroy(&s->calls_done);
    pthread_mutex_destroy(&s->calls_lock);
    pthread_mutex_destroy(&s->run_lock);
    pthread_mutex_destroy(&s->out_lock);
    free(s);
}

kopt_status kopt_mcp_serve(kopt_ctx *ctx, int in_fd, int out_fd, const kopt_mcp_opts *opts)
{
    kopt__mcp_server *s;
    FILE *in;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int fd = dup(in_fd), failed;

    if (fd < 0 || !(in = fdopen(fd, "r"))) {
        if (fd >= 0)
            close(fd);
        return kopt_seterr(ctx, KOPT_E_IO, "mcp: cannot read the input descriptor");
    }
    if (!(s = kopt__mcp_server_new(ctx, out_fd, opts))) {
        fclose(in);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "mcp server");
    }
    while (!s->write_failed && (len = getline(&line, &cap, in)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len > 0)
            kopt__mcp_handle(s, line);
    }
    failed = s->write_failed;
    kopt__mcp_server_free(s);
    free(line);
    fclose(in);
    return failed ? kopt_seterr(ctx, KOPT_E_IO, "mcp: the output closed") : KOPT_OK;
}
