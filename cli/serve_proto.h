/* The `kopt serve` protocol (cli/serve_proto.c): one request a connection, a JSON line
 * {"argv": ["eval", ...], "cwd": ..., "env": {KOPT_* settings}} sent with the client's
 * stdout and stderr as SCM_RIGHTS; one answer line {"exit": CODE}. */
#ifndef KOPT_CLI_SERVE_PROTO_H
#define KOPT_CLI_SERVE_PROTO_H

#include <jansson.h>

/* The socket `kopt serve` listens on by default: $KOPT_SERVER when it names a path, else
 * /tmp/kopt-serve-UID.sock. */
const char *cli_serve_default_socket(void);
/* Receive a request and its two descriptors (stdout, stderr); 0 on success. */
int cli_serve_recv(int conn, json_t **req, int fds[2]);
/* Send `kopt ARGV...` (argv[0] is the verb) to the server at `path` with this process's
 * stdout and stderr; *code is its exit code. -1 (errno kept) when no server answers. */
int cli_serve_forward(const char *path, int argc, char **argv, int *code);

#endif
