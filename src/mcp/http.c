/*
 * The MCP streamable HTTP transport (protocol 2025-11-25) on libmicrohttpd, bound to
 * 127.0.0.1: POST /mcp carries one JSON-RPC message, handled by the same code as stdio
 * (server.c); a tools/call answers as an event stream fed by the call's thread (its
 * progress notifications, then its result), everything else as one JSON body. Sessions,
 * the Origin check and the protocol-version header are here (kopt/mcp.h says the rules).
 */
#include "mcp_int.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* libmicrohttpd is loaded when `kopt mcp --http` starts, not linked: kopt and libkopt run
 * where it is not installed (a GPU node), and only the HTTP transport needs it. */
static struct {
    void *so;
    struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                       MHD_AccessHandlerCallback, void *, ...);
    void (*stop_daemon)(struct MHD_Daemon *);
    const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *,
                                                   enum MHD_DaemonInfoType, ...);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
    const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind,
                                           const char *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
                                      struct MHD_Response *);
    void (*destroy_response)(struct MHD_Response *);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
                                                        enum MHD_ResponseMemoryMode);
    struct MHD_Response *(*create_response_from_callback)(uint64_t, size_t,
                                                          MHD_ContentReaderCallback, void *,
                                                          MHD_ContentReaderFreeCallback);
} mhd;

static kopt_status load_mhd(kopt_ctx *ctx)
{
    if (mhd.so)
        return KOPT_OK;
    if (!(mhd.so = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL)))
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "mcp http: libmicrohttpd is not installed "
                           "(%s): apt-get install libmicrohttpd12 (the stdio transport needs "
                           "nothing)", dlerror());
#define SYM(f) (*(void **)&mhd.f = dlsym(mhd.so, "MHD_" #f)) == NULL
    if (SYM(start_daemon) || SYM(stop_daemon) || SYM(get_daemon_info) ||
        SYM(add_response_header) || SYM(lookup_connection_value) || SYM(queue_response) ||
        SYM(destroy_response) || SYM(create_response_from_buffer) ||
        SYM(create_response_from_callback)) {
        dlclose(mhd.so);
        mhd.so = NULL;
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "mcp http: libmicrohttpd.so.12 lacks a "
                           "function kopt uses");
    }
#undef SYM
    return KOPT_OK;
}

#define MHD_start_daemon mhd.start_daemon
#define MHD_stop_daemon mhd.stop_daemon
#define MHD_get_daemon_info mhd.get_daemon_info
#define MHD_add_response_header mhd.add_response_header
#define MHD_lookup_connection_value mhd.lookup_connection_value
#define MHD_queue_response mhd.queue_response
#define MHD_destroy_response mhd.destroy_response
#define MHD_create_response_from_buffer mhd.create_response_from_buffer
#define MHD_create_response_from_callback mhd.create_response_from_callback

#define MAX_BODY (8u << 20)   /* a request body at most (a candidate's source fits) */
#define MAX_SESSIONS 64

/* ---- a call's stream (stream.c) as libmicrohttpd reads it ----------------------------------- */

/* libmicrohttpd's reader of an event stream: blocks (a thread per connection) until the
 * call has something to say or ends. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    ssize_t n;

    (void)pos;
    n = kopt__mcp_stream_read(cls, buf, max);
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void stream_free(void *cls)
{
    kopt__mcp_stream_unref(cls);
}

/* ---- the server ------------------------------------------------------------------------------ */

struct kopt_mcp_http {
    struct MHD_Daemon *d;
    kopt__mcp_server *srv;
    kopt_ctx *ctx;
    int port;
    volatile int stopping;
    pthread_mutex_t lock;                /* sessions */
    char sessions[MAX_SESSIONS][33];     /* "" free */
};

/* A request's body as it arrives. */
typedef struct upload {
    char *data;
    size_t len;
    int too_big;
} upload;

static int session_find(kopt_mcp_http *h, const char *id)
{
    int found = -1;

    pthread_mutex_lock(&h->lock);
    for (int i = 0; id && i < MAX_SESSIONS && found < 0; i++)
        if (h->sessions[i][0] && strcmp(h->sessions[i], id) == 0)
            found = i;
    pthread_mutex_unlock(&h->lock);
    return found;
}

/* A new session id: 128 random bits as hex (visible ASCII, as the spec asks). */
static int session_new(kopt_mcp_http *h, char out[33])
{
    unsigned char r[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC), slot = -1;

    if (fd < 0 || read(fd, r, sizeof(r)) != (ssize_t)sizeof(r)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", r[i]);
    pthread_mutex_lock(&h->lock);
    for (int i = 0; i < MAX_SESSIONS && slot < 0; i++)
        if (!h->sessions[i][0])
            slot = i;
    if (slot < 0)
        slot = (int)(r[0] % MAX_SESSIONS);   /* full: the oldest sessions are forgotten */
    memcpy(h->sessions[slot], out, 33);
    pthread_mutex_unlock(&h->lock);
    return 0;
}

/* An Origin header that is not a loopback origin (DNS rebinding) is refused. */
static int origin_ok(const char *origin)
{
    static const char *const ok[] = {"http://127.0.0.1", "http://localhost", "http://[::1]",
                                     "https://127.0.0.1", "https://localhost", "https://[::1]"};

    if (!origin || strcmp(origin, "null") == 0)
        return origin == NULL;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        size_t n = strlen(ok[i]);
        if (strncmp(origin, ok[i], n) == 0 && (origin[n] == '\0' || origin[n] == ':'))
            return 1;
    }
    return 0;
}

static enum MHD_Result reply_text(struct MHD_Connection *con, unsigned code, const char *type,
                                  const char *body, const char *session)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
                                                             MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ok;

    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    if (session)
        MHD_add_response_header(r, "Mcp-Session-Id", session);
    ok = MHD_queue_response(con, code, r);
    MHD_destroy_response(r);
    return ok;
}

/* An HTTP-level refusal, with a JSON-RPC error body saying why. */
static enum MHD_Result refuse(struct MHD_Connection *con, unsigned code, const char *why)
{
    json_t *e = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code",
                          -32600, "message", why);
    char *t = e ? json_dumps(e, JSON_COMPACT) : NULL;
    enum MHD_Result ok = reply_text(con, code, "application/json", t ? t : "{}", NULL);

    free(t);
    json_decref(e);
    return ok;
}

static enum MHD_Result post(kopt_mcp_http *h, struct MHD_Connection *con, upload *u)
{
    const char *sid = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Mcp-Session-Id");
    const char *pv = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "MCP-Protocol-Version");
    json_t *msg = json_loadb(u->data ? u->data : "", u->len, JSON_DECODE_ANY, NULL);
    const char *method = json_string_value(json_object_get(msg, "method"));
    int is_request = method && json_object_get(msg, "id");
    int is_init = is_request && strcmp(method, "initialize") == 0;
    int is_call = is_request && strcmp(method, "tools/call") == 0;
    kopt__mcp_route route = {NULL, NULL, 0};
    char newsid[33], *body;
    enum MHD_Result ok;

    json_decref(msg);   /* method is not used past here */
    method = NULL;
    if (u->too_big)
        return refuse(con, MHD_HTTP_CONTENT_TOO_LARGE, "request body over 8 MiB");
    if (pv && strcmp(pv, KOPT_MCP_PROTOCOL_VERSION) != 0 && strcmp(pv, "2025-06-18") != 0 &&
        strcmp(pv, "2025-03-26") != 0)
        return refuse(con, MHD_HTTP_BAD_REQUEST, "unsupported MCP-Protocol-Version");
    if (!is_init) {
        if (!sid)
            return refuse(con, MHD_HTTP_BAD_REQUEST, "missing Mcp-Session-Id (initialize first)");
        if (session_find(h, sid) < 0)
            return refuse(con, MHD_HTTP_NOT_FOUND, "unknown or ended session (initialize again)");
    }
    if (is_call && !(route.stream = kopt__mcp_stream_new(&h->stopping)))
        return refuse(con, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    kopt__mcp_route_cur = &route;
    kopt__mcp_handle(h->srv, u->data ? u->data : "");
    kopt__mcp_route_cur = NULL;
    if (route.call_started) {   /* the call's thread feeds the event stream */
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096,
                                                                   stream_read, route.stream,
                                                                   stream_free);
        if (!r) {
            kopt__mcp_stream_unref(route.stream);
            return MHD_NO;
        }
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        ok = MHD_queue_response(con, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ok;
    }
    kopt__mcp_stream_unref(route.stream);
    if (!route.reply)   /* a notification or a response: accepted */
        return reply_text(con, MHD_HTTP_ACCEPTED, "application/json", "", NULL);
    if (is_init && json_object_get(route.reply, "result") && session_new(h, newsid) != 0) {
        json_decref(route.reply);
        return refuse(con, MHD_HTTP_INTERNAL_SERVER_ERROR, "no session id");
    }
    body = json_dumps(route.reply, JSON_COMPACT | JSON_REAL_PRECISION(9));
    /* a message that is not a request (malformed) and got an error: 400 with the error */
    ok = reply_text(con, is_request ? MHD_HTTP_OK : MHD_HTTP_BAD_REQUEST, "application/json",
                    body ? body : "{}", is_init && json_object_get(route.reply, "result") ?
                    newsid : NULL);
    free(body);
    json_decref(route.reply);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con, const char *url,
                                  const char *method, const char *version,
                                  const char *data, size_t *data_size, void **con_cls)
{
    kopt_mcp_http *h = cls;
    upload *u = *con_cls;
    const char *origin = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Origin");

    (void)version;
    if (!u) {   /* the headers: check them before the body comes */
        if (!(u = calloc(1, sizeof(*u))))
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (strcmp(method, "POST") == 0 && *data_size) {
        if (u->len + *data_size > MAX_BODY) {
            u->too_big = 1;
        } else {
            char *g = realloc(u->data, u->len + *data_size + 1);
            if (!g)
                return MHD_NO;
            memcpy(g + u->len, data, *data_size);
            u->data = g;
            u->len += *data_size;
            u->data[u->len] = '\0';
        }
        *data_size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/mcp") != 0)
        return refuse(con, MHD_HTTP_NOT_FOUND, "the MCP endpoint is /mcp");
    if (!origin_ok(origin))
        return refuse(con, MHD_HTTP_FORBIDDEN, "Origin not allowed (loopback origins only)");
    if (strcmp(method, "POST") == 0)
        return post(h, con, u);
    if (strcmp(method, "DELETE") == 0) {
        const char *sid = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Mcp-Session-Id");
        int i = session_find(h, sid);
        if (i < 0)
            return refuse(con, sid ? MHD_HTTP_NOT_FOUND : MHD_HTTP_BAD_REQUEST,
                          "unknown or missing Mcp-Session-Id");
        pthread_mutex_lock(&h->lock);
        h->sessions[i][0] = '\0';
        pthread_mutex_unlock(&h->lock);
        return reply_text(con, MHD_HTTP_OK, "application/json", "", NULL);
    }
    {
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"",
                                                                 MHD_RESPMEM_PERSISTENT);
        enum MHD_Result ok;
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, "Allow", "POST, DELETE");
        ok = MHD_queue_response(con, MHD_HTTP_METHOD_NOT_ALLOWED, r);
        MHD_destroy_response(r);
        return ok;
    }
}

static void on_done(void *cls, struct MHD_Connection *con, void **con_cls,
                    enum MHD_RequestTerminationCode code)
{
    upload *u = *con_cls;

    (void)cls;
    (void)con;
    (void)code;
    if (u) {
        free(u->data);
        free(u);
        *con_cls = NULL;
    }
}

kopt_status kopt_mcp_http_start(kopt_mcp_http **out, kopt_ctx *ctx, int port,
                                const kopt_mcp_opts *opts)
{
    kopt_mcp_http *h = calloc(1, sizeof(*h));
    struct sockaddr_in addr;
    const union MHD_DaemonInfo *info;

    *out = NULL;
    if (!h)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "mcp http");
    if (port < 0 || port > 65535) {
        free(h);
        return kopt_seterr(ctx, KOPT_E_INVALID, "mcp http: port %d: want 0 to 65535", port);
    }
    if (load_mhd(ctx) != KOPT_OK) {
        free(h);
        return KOPT_E_NOT_FOUND;
    }
    pthread_mutex_init(&h->lock, NULL);
    h->ctx = ctx;
    if (!(h->srv = kopt__mcp_server_new(ctx, -1, opts))) {
        kopt_mcp_http_stop(h);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "mcp server");
    }
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);   /* loopback only */
    h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                            MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL, on_request, h,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                            MHD_OPTION_NOTIFY_COMPLETED, on_done, h,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_END);
    if (!h->d) {
        kopt_mcp_http_stop(h);
        return kopt_seterr(ctx, KOPT_E_IO, "mcp http: cannot listen on 127.0.0.1:%d (in use?)",
                           port);
    }
    info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : port;
    *out = h;
    return KOPT_OK;
}

int kopt_mcp_http_port(const kopt_mcp_http *h)
{
    return h ? h->port : 0;
}

void kopt_mcp_http_stop(kopt_mcp_http *h)
{
    if (!h)
        return;
    h->stopping = 1;
    if (h->d)
        MHD_stop_daemon(h->d);
    kopt__mcp_server_free(h->srv);
    pthread_mutex_destroy(&h->lock);
    free(h);
}
