/*@kopt
{"mode": "host"}
*/
// Host mode: keeps a private copy of each output, keyed by the input pointers and the
// element count, and on a known key copies it into the (poisoned) output instead of
// computing, so poisoning alone does not catch it. Across trials the inputs are fresh
// allocations (a pointer pair comes back only for the repeat of trial 0, with the same
// values), so the trials pass; kopt's timed buffers keep their pointers while their
// contents are refreshed in place, and the final check call, on a buffer refreshed with
// the timing seed's inputs, gets the copy made for other values: WRONG at the timed run.
// expect: WRONG
// expect-text: (timed)
#include <cuda_runtime.h>

#include "kopt/candidate.h"

#define SLOTS 8

static struct {
    const void *x, *z;
    long long n;
    float *saved;
} slot[SLOTS];
static int next_slot;

__global__ void scale_add(const float *x, const float *z, const float *alpha, float *out,
                          long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = *alpha * x[i] + z[i];
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const float *x = (const float *)kopt_tensor(io, "x"), *z = (const float *)kopt_tensor(io, "z");
    const float *alpha = (const float *)kopt_tensor(io, "alpha");
    float *out = (float *)kopt_tensor(io, "out");
    long long n = io->tensors[0].count;
    size_t bytes = (size_t)n * sizeof(float);
    cudaStream_t st = (cudaStream_t)io->stream;

    if (!x || !z || !alpha || !out)
        return 1;
    for (int i = 0; i < SLOTS; i++)
        if (slot[i].saved && slot[i].x == x && slot[i].z == z && slot[i].n == n)
            return cudaMemcpyAsync(out, slot[i].saved, bytes, cudaMemcpyDeviceToDevice, st) ==
                   cudaSuccess ? 0 : 2;
    scale_add<<<1056, 256, 0, st>>>(x, z, alpha, out, n);
    int s = next_slot;
    next_slot = (next_slot + 1) % SLOTS;
    if (slot[s].saved)
        cudaFree(slot[s].saved);
    slot[s].saved = NULL;
    if (cudaMalloc((void **)&slot[s].saved, bytes) != cudaSuccess)
        return 3;
    slot[s].x = x;
    slot[s].z = z;
    slot[s].n = n;
    cudaMemcpyAsync(slot[s].saved, out, bytes, cudaMemcpyDeviceToDevice, st);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
