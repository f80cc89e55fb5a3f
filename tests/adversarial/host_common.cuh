// Shared by the host-mode adversarial candidates: a correct vector add on kopt's stream,
// so that the only thing wrong with each candidate is the cheat it plants.
#pragma once
#include <cuda_runtime.h>
#include "kopt/candidate.h"

__global__ void adv_add(const float *a, const float *b, float *c, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static int adv_vector_add(const kopt_candidate_io *io)
{
    long long n = kopt_size(io, "N");
    adv_add<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)io->stream>>>(
        (const float *)kopt_tensor(io, "a"), (const float *)kopt_tensor(io, "b"),
        (float *)kopt_tensor(io, "c"), n);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
