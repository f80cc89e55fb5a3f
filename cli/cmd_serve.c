/* `kopt serve`: a long-lived kopt that keeps workers started ahead (their CUDA contexts
 * made) and runs the `kopt eval` commands sent to it on a Unix socket, with the client's
 * stdout and stderr, working folder and KOPT_* settings. Each evaluation is the ordinary
 * one-shot evaluation (a fresh worker process for the candidate, fresh seeds, every
 * check); only the workers' start is done ahead, and the reference runs in the pool's
 * serving worker. The pool (src/eval/pool.c) keeps two evaluations' workers
 * by default; an evaluation takes the ready ones and each is replaced once the
 * evaluation's workers are set up, so requests sent back to back find theirs ready. `kopt eval --server` (or
 * $KOPT_SERVER) sends an evaluation there. */
#include "cli.h"
#include "kopt/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define SERVE_WORKERS 4   /* two evaluations: one runs while the next one's get ready */
#define SERVE_SESSIONS 2  /* evaluation sessions kept open (kopt eval --session) */
#define SERVE_SESSION_IDLE 600.0

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void help(FILE *f)
{
    fprintf(f, "usage: kopt serve [--socket PATH] [--workers N] [--device N] [--idle-exit S]\n"
               "                  [--sessions N] [--session-idle S]\n"
               "Serve `kopt eval` commands (sent with `kopt eval --server` or $KOPT_SERVER) with\n"
               "workers started ahead, so an evaluation does not wait for CUDA contexts.\n"
               "  --socket PATH     the Unix socket (default %s)\n"
               "  --workers N       workers kept in the pool, 1 to 8 (default %d: two evaluations'\n"
               "                    reference and candidate workers)\n"
               "  --device N        the GPU the workers use (default 0)\n"
               "  --idle-exit S     end after S seconds without a request (default: never)\n"
               "  --sessions N      evaluation sessions kept open, 1 to %d (default %d)\n"
               "  --session-idle S  close a session unused for S seconds (default %.0f)\n"
               "The pool: each worker is a fresh process that makes its CUDA context, then its\n"
               "output buffer (at the last evaluation's size), and waits. An evaluation takes\n"
               "the ready ones first (oldest first), one still starting only when none is\n"
               "ready. Each worker taken is replaced once the evaluation's workers are set up,\n"
               "and the replacement gets ready while that evaluation runs, so requests sent\n"
               "back to back find ready workers.\n"
               "The reference's worker serves: an evaluation with a candidate runs its reference\n"
               "(kopt's code and the problem's, never a candidate's) in the pool's serving\n"
               "worker, kept while the output size and the client's settings stay the same, and\n"
               "takes one worker, the candidate's: a candidate's worker is used once, in a fresh\n"
               "process, and every evaluation has fresh seeds and every check. Each idle worker\n"
               "holds a CUDA context (GPU memory) and its pinned buffer. Each request's line on\n"
               "stderr says how ready the workers it took were, and the pool's state after it.\n"
               "Sessions (`kopt eval --server --session[=NAME]`): the first request of a name\n"
               "opens an evaluation session (as kopt tune and kopt optimize use): one seed for\n"
               "the session, the reference run once, its outputs, time and torch.compile\n"
               "baseline reused by every later candidate, the next candidate's worker started\n"
               "ahead, every check still made on each candidate. A session serves the requests\n"
               "with its name and its plan: the same problem file (hash and path), options\n"
               "(sizes, check sizes, trials, seed, timing, --no-compile, ...), store and KOPT_*\n"
               "settings; a request that differs opens a session of its own. Each open session\n"
               "holds its workers and the reference's outputs: past --sessions the least\n"
               "recently used is closed, and one idle --session-idle seconds is closed.\n"
               "Requests without --session are the one-shot evaluations above.\n",
            kopt_serve_default_socket(), SERVE_WORKERS, CLI_SERVE_MAX_SESSIONS, SERVE_SESSIONS,
            SERVE_SESSION_IDLE);
}

/* Apply the client's KOPT_* / CUTLASS_PATH settings; the previous values go to `saved`. */
static void apply_env(json_t *env, json_t *saved)
{
    const char *k;
    json_t *v;

    json_object_foreach(env, k, v) {
        const char *old = getenv(k);
        json_object_set_new(saved, k, old ? json_string(old) : json_null());
        if (json_is_string(v))
            setenv(k, json_string_value(v), 1);
        else
            unsetenv(k);
    }
}

/* One request: run `kopt eval ARGS` as the client would have, answer its exit code. */
static void handle(int conn, kopt_eval_pool *pool, cli_serve_sessions *sessions)
{
    int fds[2] = {-1, -1}, saved_out = -1, saved_err = -1, cwd = -1, code = KOPT_EXIT_ERROR;
    json_t *req = NULL, *saved = json_object(), *args;
    char **argv = NULL, *text = NULL;
    size_t n = 0;
    int got = kopt_serve_recv(conn, &text, fds);

    if (got == 1) {                    /* a client seeing whether a server is there */
        json_decref(saved);
        return;
    }
    if (got == 0)
        req = json_loads(text, JSON_DISABLE_EOF_CHECK, NULL);
    free(text);
    if (!req || fds[0] < 0 || fds[1] < 0 || !json_is_array(args = json_object_get(req, "argv")) ||
        json_array_size(args) < 1 ||
        strcmp(json_string_value(json_array_get(args, 0)) ?: "", "eval") != 0) {
        const char *msg = "kopt serve: a request is `eval` and its arguments\n";
        if (fds[1] >= 0 && write(fds[1], msg, strlen(msg)) < 0)
            code = KOPT_EXIT_ERROR;
        code = KOPT_EXIT_USAGE;
        goto reply;
    }
    n = json_array_size(args);
    argv = calloc(n + 1, sizeof(*argv));
    for (size_t i = 0; argv && i < n; i++)
        argv[i] = (char *)json_string_value(json_array_get(args, i));
    cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!argv || cwd < 0 || chdir(json_string_value(json_object_get(req, "cwd")) ?: ".") != 0) {
        code = KOPT_EXIT_ERROR;
        goto reply;
    }
    {   /* the client's settings, and none of the server's own it does not have */
        json_t *env = json_object_get(req, "env");
        for (char **e = environ; json_is_object(env) && *e; e++) {
            const char *eq = strchr(*e, '=');
            char key[256];
            if (!eq || strncmp(*e, "KOPT_", 5) != 0 || (size_t)(eq - *e) >= sizeof(key))
                continue;
            snprintf(key, sizeof(key), "%.*s", (int)(eq - *e), *e);
            if (strcmp(key, "KOPT_SERVER") != 0 && !json_object_get(env, key))
                json_object_set_new(env, key, json_null());
        }
        apply_env(env, saved);
    }
    fflush(stdout);
    fflush(stderr);
    saved_out = dup(1);
    saved_err = dup(2);
    dup2(fds[0], 1);
    dup2(fds[1], 2);
    cli_eval_pool = pool;
    cli_eval_sessions = sessions;
    cli_serve_sessions_note_clear(sessions);
    {
        struct timespec a, b;
        kopt_eval_pool_stats s0, s1;
        kopt_eval_pool_stats_get(pool, &s0);
        clock_gettime(CLOCK_MONOTONIC, &a);
        code = cmd_eval((int)n, argv);
        clock_gettime(CLOCK_MONOTONIC, &b);
        kopt_eval_pool_stats_get(pool, &s1);
        fflush(stdout);
        fflush(stderr);
        dup2(saved_out, 1);
        dup2(saved_err, 2);
        fprintf(stderr, "kopt serve: eval (%zu arguments) exit %d in %.0f ms; workers taken: "
                        "%ld (%ld ready, %ld context only, %ld starting); pool: %d idle, %d "
                        "ready, %ld started in all%s%s; ms: load %.0f, run open %.0f, "
                        "evaluation %.0f, store %.0f, run finish %.0f, print %.0f\n", n - 1, code,
                (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6,
                s1.taken - s0.taken, s1.taken_ready - s0.taken_ready,
                s1.taken_context - s0.taken_context, s1.taken_starting - s0.taken_starting,
                s1.idle, s1.ready, s1.started,
                s1.ref_served > s0.ref_served ? "; reference in the serving worker" : "",
                cli_serve_sessions_note(sessions),
                cli_eval_steps[CLI_EVAL_STEP_LOAD], cli_eval_steps[CLI_EVAL_STEP_OPEN],
                cli_eval_steps[CLI_EVAL_STEP_EVAL], cli_eval_steps[CLI_EVAL_STEP_STORE],
                cli_eval_steps[CLI_EVAL_STEP_FINISH],
                cli_eval_steps[CLI_EVAL_STEP_PRINT]);
    }
    cli_eval_pool = NULL;
    cli_eval_sessions = NULL;
    apply_env(saved, json_object());   /* back to the server's own settings */
    if (fchdir(cwd) != 0)
        perror("kopt serve: fchdir");
reply:
    {
        char line[64];
        int len = snprintf(line, sizeof(line), "{\"exit\": %d}\n", code);
        if (write(conn, line, (size_t)len) < 0)
            perror("kopt serve: reply");
    }
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (saved_out >= 0)
        close(saved_out);
    if (saved_err >= 0)
        close(saved_err);
    if (cwd >= 0)
        close(cwd);
    free(argv);
    json_decref(req);
    json_decref(saved);
}

int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'}, {"workers", required_argument, NULL, 'w'},
        {"device", required_argument, NULL, 'd'}, {"idle-exit", required_argument, NULL, 'i'},
        {"sessions", required_argument, NULL, 'S'},
        {"session-idle", required_argument, NULL, 'I'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    const char *path = kopt_serve_default_socket();
    int workers = SERVE_WORKERS, device = 0, c, lfd = -1, code = 0, nsessions = SERVE_SESSIONS;
    double idle_exit = 0, session_idle = SERVE_SESSION_IDLE;
    cli_serve_sessions *sessions = NULL;
    char *end;
    kopt_ctx *ctx = cli_ctx(0);
    kopt_eval_pool *pool = NULL;
    struct sockaddr_un addr;
    struct timespec last;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': path = optarg; break;
        case 'w': workers = atoi(optarg); break;
        case 'd': device = atoi(optarg); break;
        case 'i': idle_exit = atof(optarg); break;
        case 'S':
            nsessions = (int)strtol(optarg, &end, 10);
            if (*end || nsessions < 1 || nsessions > CLI_SERVE_MAX_SESSIONS) {
                fprintf(stderr, "kopt serve: --sessions %s: 1 to %d sessions\n", optarg,
                        CLI_SERVE_MAX_SESSIONS);
                kopt_ctx_free(ctx);
                return KOPT_EXIT_USAGE;
            }
            break;
        case 'I':
            session_idle = strtod(optarg, &end);
            if (*end || !(session_idle > 0)) {
                fprintf(stderr, "kopt serve: --session-idle %s: seconds, more than 0\n", optarg);
                kopt_ctx_free(ctx);
                return KOPT_EXIT_USAGE;
            }
            break;
        case 'h': help(stdout); kopt_ctx_free(ctx); return 0;
        default: help(stderr); kopt_ctx_free(ctx); return KOPT_EXIT_USAGE;
        }
    }
    if (strlen(path) >= sizeof(addr.sun_path)) {
        fprintf(stderr, "kopt serve: socket path too long: %s\n", path);
        kopt_ctx_free(ctx);
        return KOPT_EXIT_USAGE;
    }
    if (!(sessions = cli_serve_sessions_new(nsessions, session_idle))) {
        fprintf(stderr, "kopt serve: out of memory\n");
        kopt_ctx_free(ctx);
        return KOPT_EXIT_ERROR;
    }
    if (kopt_eval_pool_open(&pool, ctx, device, workers) != KOPT_OK) {
        cli_serve_sessions_free(sessions);
        cli_error(ctx);
        kopt_ctx_free(ctx);
        return KOPT_EXIT_USAGE;
    }
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    {
        /* a socket file no server answers on is stale: replace it; a live one: refuse */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
            fprintf(stderr, "kopt serve: another kopt serve answers on %s\n", path);
            close(probe);
            code = KOPT_EXIT_ERROR;
            goto done;
        }
        if (probe >= 0)
            close(probe);
        unlink(path);
    }
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        chmod(path, 0600) != 0 || listen(lfd, 8) != 0) {
        fprintf(stderr, "kopt serve: cannot listen on %s: %s\n", path, strerror(errno));
        code = KOPT_EXIT_ERROR;
        goto done;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    if (kopt_eval_pool_fill(pool, ctx) != KOPT_OK)
        cli_error(ctx);
    fprintf(stderr, "kopt serve: listening on %s (%d workers started ahead on device %d)\n",
            path, workers, device);
    clock_gettime(CLOCK_MONOTONIC, &last);
    while (!stop) {
        struct pollfd p = {lfd, POLLIN, 0};
        struct timespec now;
        int r = poll(&p, 1, 1000), conn;
        clock_gettime(CLOCK_MONOTONIC, &now);
        cli_serve_sessions_expire(sessions, stderr);   /* idle sessions end their workers */
        if (r <= 0) {
            if (idle_exit > 0 && (double)(now.tv_sec - last.tv_sec) >= idle_exit)
                break;
            continue;
        }
        if ((conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
            continue;
        handle(conn, pool, sessions);
        close(conn);
        /* the evaluation started its workers' replacements when it took them; here, after
         * the client has its answer: any that ended or failed to start, and every idle
         * worker's buffer at this evaluation's size */
        if (kopt_eval_pool_fill(pool, ctx) != KOPT_OK)
            cli_error(ctx);
        clock_gettime(CLOCK_MONOTONIC, &last);
    }
    fprintf(stderr, "kopt serve: stopped\n");
done:
    if (lfd >= 0)
        close(lfd);
    unlink(path);
    cli_serve_sessions_free(sessions);   /* their workers end before the pool's */
    kopt_eval_pool_close(pool);
    kopt_ctx_free(ctx);
    return code;
}
