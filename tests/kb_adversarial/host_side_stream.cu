/*@kopt
{"mode": "host"}
*/
// Host mode: does its (correct) work on a non-blocking stream of its own, ordered after
// kopt's stream (an event recorded there, waited for), and returns without making kopt's
// stream wait: the timed bracket on io->stream holds nothing. The worker synchronizes the
// device before it copies outputs, so the trials are right and agree; the timed median is
// about zero: SUSPECT. (kopt's C worker names this OFF_STREAM, by checking the outputs as
// soon as its own stream is done; the PyTorch worker may do the same: either verdict.)
// expect: SUSPECT|OFF_STREAM
#include <cuda_runtime.h>

#include "kopt/candidate.h"

__global__ void scale_add(const float *x, const float *z, const float *alpha, float *out,
                          long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = *alpha * x[i] + z[i];
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    static cudaStream_t side;
    static cudaEvent_t ready;
    cudaStream_t st = (cudaStream_t)io->stream;

    if (!side && (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess ||
                  cudaEventCreateWithFlags(&ready, cudaEventDisableTiming) != cudaSuccess))
        return 1;
    cudaEventRecord(ready, st);          /* the inputs and the poisoned outputs are ready */
    cudaStreamWaitEvent(side, ready, 0);
    scale_add<<<1056, 256, 0, side>>>((const float *)kopt_tensor(io, "x"),
                                      (const float *)kopt_tensor(io, "z"),
                                      (const float *)kopt_tensor(io, "alpha"),
                                      (float *)kopt_tensor(io, "out"), io->tensors[0].count);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
