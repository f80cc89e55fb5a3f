/* Where a server's messages go (server.c, tools.c and tools_optimize.c send through here;
 * it calls only stream.c): a call's HTTP stream, the handling thread's route (an HTTP
 * request's reply), or the server's out_fd; a call's progress notifications and options. */
#include "mcp_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const kopt_mcp_opts *kopt__mcp_opts(kopt__mcp_call *c)
{
    return &c->srv->o;
}

_Thread_local kopt__mcp_route *kopt__mcp_route_cur;

/* A message to its destination: the call's HTTP stream, the handling thread's route (an
 * HTTP request's reply), or out_fd. */
void kopt__mcp_emit(kopt__mcp_server *s, kopt__mcp_call *c, json_t *msg)
{
    char *text;
    size_t len, at = 0;

    if (!c && kopt__mcp_route_cur) {
        if (!kopt__mcp_route_cur->reply)
            kopt__mcp_route_cur->reply = msg;
        else
            json_decref(msg);
        return;
    }
    text = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(msg);
    if (!text)
        return;
    if (c && c->stream) {
        kopt__mcp_stream_push(c->stream, text);
        return;
    }
    if (s->out_fd < 0) {
        free(text);
        return;
    }
    len = strlen(text);
    text[len++] = '\n';   /* json_dumps leaves room: the NUL becomes the newline */
    pthread_mutex_lock(&s->out_lock);
    while (at < len && !s->write_failed) {
        ssize_t w = write(s->out_fd, text + at, len - at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            s->write_failed = 1;
        else
            at += (size_t)w;
    }
    pthread_mutex_unlock(&s->out_lock);
    free(text);
}

void kopt__mcp_progress(kopt__mcp_call *c, double progress, double total, const char *msg)
{
    json_t *p;

    if (c->cancelled)
        return;
    if (!c->token) {                   /* in-process (kopt_mcp_call): the caller's callback */
        if (c->srv->o.progress)
            c->srv->o.progress(c->srv->o.progress_user, progress, total, msg);
        return;
    }
    p = json_pack("{s:O, s:f}", "progressToken", c->token, "progress", progress);
    if (total > 0)
        json_object_set_new(p, "total", json_real(total));
    if (msg)
        json_object_set_new(p, "message", json_string(msg));
    kopt__mcp_emit(c->srv, c, json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method",
                              "notifications/progress", "params", p));
}
