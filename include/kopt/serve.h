/* The `kopt serve` protocol (src/run/serve_proto.c): one request a connection, a JSON line
 * {"argv": ["eval", ...], "cwd": ..., "env": {KOPT_* settings}} sent with two descriptors
 * (SCM_RIGHTS) where the server writes the command's stdout and stderr; one answer line
 * {"exit": CODE}. Used by `kopt eval --server`, and by the run's served evaluations
 * (kopt_eval_opts.server: kopt optimize and kopt bench with --server). */
#ifndef KOPT_SERVE_H
#define KOPT_SERVE_H

#include "kopt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The socket `kopt serve` listens on by default: $KOPT_SERVER when it names a path, else
 * /tmp/kopt-serve-UID.sock. */
const char *kopt_serve_default_socket(void);
/* Whether a server accepts connections at `path` (1) or not (0, errno kept). */
int kopt_serve_alive(const char *path);
/* Which server a run's evaluations go to (kopt optimize and kopt bench --server, the MCP
 * tool optimize_step's `server`); *out is NULL for none (evaluate in this process). When
 * `asked`, `path` (NULL or "": the default socket) must answer, else KOPT_E_IO naming the
 * socket. When not asked, $KOPT_SERVER (a path, or anything but "" and "0" for the default
 * socket) is used if a server answers there, else none. */
kopt_status kopt_serve_socket_for(kopt_ctx *ctx, int asked, const char *path,
                                  const char **out);
/* Server side: receive a request (its JSON text, malloc'd) and its two descriptors; 0 on
 * success, 1 for a connection closed before it sent anything (kopt_serve_alive), else -1. */
int kopt_serve_recv(int conn, char **request, int fds[2]);
/* Send `kopt ARGV...` (argv[0] is the verb) to the server at `path`, its output going to
 * fds[0] (stdout) and fds[1] (stderr); *code is its exit code. -1 (errno kept) when no
 * server answers. */
int kopt_serve_forward(const char *path, int argc, char *const *argv, const int fds[2],
                       int *code);
/* The same, with what the command printed returned: *out its stdout, *err its stderr (both
 * malloc'd, NUL-terminated). KOPT_E_IO (saying why) when no server answers. */
kopt_status kopt_serve_call(kopt_ctx *ctx, const char *path, int argc, char *const *argv,
                            int *code, char **out, char **err);

#ifdef __cplusplus
}
#endif
#endif
