/*@kopt {"mode": "host"} */
// problem: examples/vector_add
// expect: TAMPER
// Host mode: computes the right answer, then ends the process with exit(0), hoping a
// harness that runs in the same process reads "exit 0" as success.
#include <stdlib.h>
#include "host_common.cuh"

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    int rc = adv_vector_add(io);
    cudaStreamSynchronize((cudaStream_t)io->stream);
    exit(rc);
}
