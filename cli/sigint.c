/* Ctrl-C for the long verbs (tune, optimize): the first asks the library to stop after its
 * current step, the second quits at once. */
#include "cli.h"

#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t *g_flag;
static const char *g_msg;

static void on_sigint(int sig)
{
    (void)sig;
    if (*g_flag)
        _exit(130);
    *g_flag = 1;
    if (write(STDERR_FILENO, g_msg, strlen(g_msg)) < 0)
        *g_flag = 1;
}

void cli_sigint_stop(volatile sig_atomic_t *flag, const char *msg, struct sigaction *old)
{
    struct sigaction sa;

    g_flag = flag;
    g_msg = msg;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, old);
}
