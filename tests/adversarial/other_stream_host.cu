/*@kopt {"mode": "host"} */
// problem: examples/vector_add
// expect: OFF_STREAM
// Host mode: does its work on a stream of its own, behind a slow kernel, so nothing is left
// on the stream kopt times. kopt copies the outputs as soon as its stream is done, so they
// are incomplete (and the time would have been a lie).
#include <cuda_runtime.h>
#include "kopt/candidate.h"

__global__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
}

__global__ void add(const float *a, const float *b, float *c, long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = a[i] + b[i];
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    static cudaStream_t side;
    long long N = kopt_size(io, "N");
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess)
        return 1;
    spin<<<1, 1, 0, side>>>(50LL * 1000 * 1000);   /* about 25 ms */
    add<<<(unsigned)((N + 255) / 256), 256, 0, side>>>((const float *)kopt_tensor(io, "a"),
        (const float *)kopt_tensor(io, "b"), (float *)kopt_tensor(io, "c"), N);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
