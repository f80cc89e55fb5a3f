/*@kopt {"mode": "host"} */
// problem: examples/vector_add
// expect: TAMPER
// Host mode: installs its own SIGSEGV and SIGALRM handlers, which would let it swallow its
// own crashes or a harness's timer.
#include <signal.h>
#include <string.h>
#include "host_common.cuh"

static void ignore(int sig) { (void)sig; }

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = ignore;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    return adv_vector_add(io);
}
