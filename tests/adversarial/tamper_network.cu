/*@kopt {"mode": "host"} */
// problem: examples/vector_add
// expect: TAMPER
// Host mode: opens a network socket (to fetch an answer, or to report the inputs).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include "host_common.cuh"

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s >= 0)
        close(s);
    return adv_vector_add(io);
}
