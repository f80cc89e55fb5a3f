/* The "command" backend: runs a program per request, the request (kopt_llm_request_json) on
 * its standard input, the reply on its standard output: plain text, or a JSON object
 * {"text", "finish_reason", "model", "usage": {"prompt_tokens", "completion_tokens",
 * "cached_tokens"}} (or {"error": "..."}). Any CLI model, or a script, plugs in here.
 * Spec: command:PROGRAM [ARGS] (words split on spaces; '...' and "..." quote). */
#include "llm_int.h"
#include "kopt/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct cmd_state {
    char **argv;                   /* NULL-terminated */
    char *line;                    /* the command as given, for messages */
    double timeout_s;
    size_t max_out;
} cmd_state;

static void free_argv(char **argv)
{
    for (int i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

/* Split `s` into words (spaces separate; '...' and "..." quote). NULL on an open quote. */
static char **split_words(const char *s)
{
    char **argv = calloc(strlen(s) / 2 + 2, sizeof(*argv));
    int n = 0;

    if (!argv)
        return NULL;
    while (*s) {
        kopt_buf w = KOPT_BUF_INIT;
        char q = 0;
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        for (; *s && (q || (*s != ' ' && *s != '\t')); s++) {
            if (!q && (*s == '\'' || *s == '"'))
                q = *s;
            else if (q && *s == q)
                q = 0;
            else
                kopt_buf_append(&w, s, 1);
        }
        if (q) {
            kopt_buf_free(&w);
            free_argv(argv);
            return NULL;
        }
        argv[n++] = w.ptr ? kopt_buf_detach(&w) : strdup("");
    }
    return argv;
}

static void close_cmd(void *state)
{
    cmd_state *s = state;

    if (!s)
        return;
    free_argv(s->argv);
    free(s->line);
    free(s);
}

static kopt_status open_cmd(void **state, kopt_ctx *ctx, const char *arg,
                            const kopt_llm_options *o, char **model)
{
    cmd_state *s = calloc(1, sizeof(*s));
    kopt_status rc = KOPT_OK;
    char *found = NULL;
    const char *base;

    *state = NULL;
    if (!s)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "command");
    s->timeout_s = o->timeout_s;
    s->max_out = o->max_reply_bytes;
    if (!(s->line = strdup(arg)) || !(s->argv = split_words(arg))) {
        rc = s->line ? kopt_seterr(ctx, KOPT_E_INVALID, "command: unclosed quote in '%s'", arg)
                     : kopt_seterr(ctx, KOPT_E_NOMEM, "command");
        goto cleanup;
    }
    if (!s->argv[0]) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "command: no program given (command:PROGRAM "
                         "[ARGS])");
        goto cleanup;
    }
    if (strchr(s->argv[0], '/') ? access(s->argv[0], X_OK) != 0
                                : !(found = kopt_find_program(NULL, s->argv[0]))) {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "command: cannot run '%s': %s", s->argv[0],
                         strchr(s->argv[0], '/') ? strerror(errno) : "not found on PATH");
        goto cleanup;
    }
    base = strrchr(s->argv[0], '/') ? strrchr(s->argv[0], '/') + 1 : s->argv[0];
    if (!(*model = strdup(base))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "command");
        goto cleanup;
    }
    *state = s;
    s = NULL;
cleanup:
    free(found);
    close_cmd(s);
    return rc;
}

/* The child's output streams while it runs. */
typedef struct io {
    int in, out, err;              /* our ends; -1 once closed */
    const char *input;
    size_t input_len, input_off;
    kopt_buf out_buf, err_buf;
    size_t max_out;
    int too_large;
} io;

/* Read what is there on fd into b (stderr keeps its first 64 KiB). 0 at end of stream. */
static int drain(int fd, kopt_buf *b, size_t max, int *over)
{
    char buf[8192];
    ssize_t n = read(fd, buf, sizeof(buf));

    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : 0;
    if (n == 0)
        return 0;
    if (b->len + (size_t)n > max) {
        if (over)
            *over = 1;
        return 0;
    }
    kopt_buf_append(b, buf, (size_t)n);
    return 1;
}

/* Feed stdin and collect stdout/stderr until both close or the deadline. 1 on time. */
static int pump(io *x, double deadline_ms)
{
    while (x->out >= 0 || x->err >= 0) {
        struct pollfd p[3];
        int np = 0, wait_ms = (int)(deadline_ms - kopt_now_ms()), r;
        if (wait_ms <= 0)
            return 0;
        if (x->in >= 0)
            p[np++] = (struct pollfd){x->in, POLLOUT, 0};
        if (x->out >= 0)
            p[np++] = (struct pollfd){x->out, POLLIN, 0};
        if (x->err >= 0)
            p[np++] = (struct pollfd){x->err, POLLIN, 0};
        r = poll(p, (nfds_t)np, wait_ms);
        if (r < 0 && errno != EINTR)
            return 1;
        for (int i = 0; r > 0 && i < np; i++) {
            if (!p[i].revents)
                continue;
            if (p[i].fd == x->in) {
                ssize_t n = send(x->in, x->input + x->input_off, x->input_len - x->input_off,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n > 0)
                    x->input_off += (size_t)n;
                if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
                    x->input_off >= x->input_len) {
                    close(x->in);             /* the program has all of it, or left */
                    x->in = -1;
                }
            } else if (p[i].fd == x->out) {
                if (!drain(x->out, &x->out_buf, x->max_out, &x->too_large)) {
                    close(x->out);
                    x->out = -1;
                }
            } else if (!drain(x->err, &x->err_buf, 65536, NULL)) {
                close(x->err);
                x->err = -1;
            }
        }
    }
    return 1;
}

/* The last non-empty line of a program's stderr, for the message. */
static void last_line(const char *s, char *out, size_t cap)
{
    const char *end = s + strlen(s), *start;

    while (end > s && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    start = end;
    while (start > s && start[-1] != '\n')
        start--;
    snprintf(out, cap, "%.*s", (int)(end - start), start);
}

static void call_cmd(void *state, const kopt_llm_request *rq, const char *request_json,
                     kopt_llm_reply *out)
{
    cmd_state *s = state;
    posix_spawn_file_actions_t fa;
    int sin[2] = {-1, -1}, sout[2] = {-1, -1}, serr[2] = {-1, -1}, status = 0, on_time;
    io x = {-1, -1, -1, request_json, strlen(request_json), 0, KOPT_BUF_INIT, KOPT_BUF_INIT,
            s->max_out, 0};
    pid_t pid;
    char tail[512];

    (void)rq;
    out->attempts = 1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sin) != 0 ||
        pipe2(sout, O_CLOEXEC) != 0 || pipe2(serr, O_CLOEXEC) != 0) {
        kopt__llm_fail(out, KOPT_LLM_COMMAND_FAILED, "command: pipe: %s", strerror(errno));
        goto cleanup;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sin[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sout[1], 1);
    posix_spawn_file_actions_adddup2(&fa, serr[1], 2);
    errno = posix_spawnp(&pid, s->argv[0], &fa, NULL, s->argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (errno != 0) {
        kopt__llm_fail(out, KOPT_LLM_COMMAND_FAILED, "command: cannot run %s: %s", s->argv[0],
                       strerror(errno));
        goto cleanup;
    }
    close(sin[1]);
    close(sout[1]);
    close(serr[1]);
    sin[1] = sout[1] = serr[1] = -1;
    x.in = sin[0];
    x.out = sout[0];
    x.err = serr[0];
    sin[0] = sout[0] = serr[0] = -1;
    on_time = pump(&x, kopt_now_ms() + s->timeout_s * 1e3);
    if (!on_time || x.too_large)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    last_line(kopt_buf_cstr(&x.err_buf), tail, sizeof(tail));
    if (!on_time)
        kopt__llm_fail(out, KOPT_LLM_TIMEOUT, "command: %s did not answer in %.0f s", s->line,
                       s->timeout_s);
    else if (x.too_large)
        kopt__llm_fail(out, KOPT_LLM_TOO_LARGE, "command: %s wrote more than %zu bytes",
                       s->line, s->max_out);
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        kopt__llm_fail(out, KOPT_LLM_COMMAND_FAILED, "command: %s %s %d%s%s", s->line,
                       WIFEXITED(status) ? "exited with status" : "was killed by signal",
                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                       tail[0] ? ": " : "", tail);
    else
        kopt__llm_command_parse(kopt_buf_cstr(&x.out_buf), x.out_buf.len, out);
cleanup:
    for (int i = 0; i < 2; i++) {
        if (sin[i] >= 0) close(sin[i]);
        if (sout[i] >= 0) close(sout[i]);
        if (serr[i] >= 0) close(serr[i]);
    }
    if (x.in >= 0) close(x.in);
    if (x.out >= 0) close(x.out);
    if (x.err >= 0) close(x.err);
    kopt_buf_free(&x.out_buf);
    kopt_buf_free(&x.err_buf);
}

void kopt__llm_command_parse(const char *text, size_t len, kopt_llm_reply *out)
{
    json_t *j = NULL, *u;
    const char *t, *fr, *err;
    size_t i = 0;

    if (!kopt__llm_utf8_valid(text, len)) {
        kopt__llm_fail(out, KOPT_LLM_BAD_UTF8, "command: the output is not valid UTF-8");
        return;
    }
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
        i++;
    if (i < len && text[i] == '{')
        j = json_loadb(text, len, 0, NULL);
    if (!json_is_object(j)) {      /* plain text */
        json_decref(j);
        kopt__llm_set_str(&out->text, text);
        if (i == len)
            kopt__llm_fail(out, KOPT_LLM_EMPTY, "command: the program wrote nothing");
        else
            out->outcome = KOPT_LLM_OK;
        return;
    }
    if ((err = json_string_value(json_object_get(j, "error")))) {
        kopt__llm_fail(out, KOPT_LLM_COMMAND_FAILED, "command: %s", err);
        json_decref(j);
        return;
    }
    t = json_string_value(json_object_get(j, "text"));
    fr = json_string_value(json_object_get(j, "finish_reason"));
    kopt__llm_set_str(&out->text, t ? t : "");
    kopt__llm_set_str(&out->finish_reason, fr);
    kopt__llm_set_str(&out->model, json_string_value(json_object_get(j, "model")));
    u = json_object_get(j, "usage");
    out->usage.prompt_tokens = kopt__llm_count(u, "prompt_tokens");
    out->usage.completion_tokens = kopt__llm_count(u, "completion_tokens");
    out->usage.cached_tokens = kopt__llm_count(u, "cached_tokens");
    if (!t)
        kopt__llm_fail(out, KOPT_LLM_MALFORMED, "command: the JSON output has no \"text\" "
                       "string");
    else if (fr && strcmp(fr, "length") == 0)
        kopt__llm_fail(out, KOPT_LLM_LENGTH, "command: the reply was cut at max_tokens");
    else if (fr && strcmp(fr, "refusal") == 0)
        kopt__llm_fail(out, KOPT_LLM_REFUSAL, "command: the model refused");
    else if (!t[0])
        kopt__llm_fail(out, KOPT_LLM_EMPTY, "command: the reply has no text");
    else
        out->outcome = KOPT_LLM_OK;
    json_decref(j);
}

const kopt__llm_backend_i kopt__llm_command = {
    "command", KOPT_LLM_API_VERSION, open_cmd, call_cmd, close_cmd,
};
