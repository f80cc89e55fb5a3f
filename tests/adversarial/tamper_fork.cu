/*@kopt {"mode": "host"} */
// problem: examples/vector_add
// expect: TAMPER
// Host mode: forks a helper process (which could outlive the evaluation, or keep working
// after the timed window closes).
#include <unistd.h>
#include "host_common.cuh"

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    return adv_vector_add(io);
}
