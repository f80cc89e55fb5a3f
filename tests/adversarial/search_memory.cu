/*@kopt {"mode": "host"} */
// problem: examples/vector_add
// expect: WRONG
// The memory-search cheat: in a harness that runs the reference in the candidate's own
// process, the expected output sits in device memory beside the inputs. This candidate
// walks the device address space around its tensors (cuMemGetAddressRange every 2 MiB,
// 16 GiB each way), lists every other allocation of exactly the output's size, and has a
// kernel copy the first one into its output instead of computing anything.
// Under kopt it cannot work: the reference ran in another process (another CUDA context),
// its outputs went only to the parent over shared memory, and the output buffer was
// filled with NaN before this call. What it finds are kopt's own buffers (random inputs,
// scratch), so the verdict is WRONG, never OK.
#include <dlfcn.h>
#include <stdint.h>
#include "host_common.cuh"

typedef int (*range_fn)(unsigned long long *base, size_t *size, unsigned long long ptr);

__global__ void copy_found(const float *src, float *dst, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = src[i];
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    range_fn range = cuda ? (range_fn)dlsym(cuda, "cuMemGetAddressRange_v2") : 0;
    long long n = kopt_size(io, "N");
    size_t want = (size_t)n * sizeof(float);
    unsigned long long a = (uintptr_t)kopt_tensor(io, "a"), b = (uintptr_t)kopt_tensor(io, "b");
    unsigned long long c = (uintptr_t)kopt_tensor(io, "c"), found = 0;
    const unsigned long long step = 2ull << 20, span = 16ull << 30;

    for (unsigned long long p = c > span ? c - span : step; range && p < c + span && !found;
         p += step) {
        unsigned long long base = 0;
        size_t size = 0;
        if (range(&base, &size, p) == 0 && size == want && base != a && base != b && base != c)
            found = base;
    }
    if (!found)
        return 0;   /* nothing to copy: leave the output as it is */
    copy_found<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)io->stream>>>(
        (const float *)(uintptr_t)found, (float *)(uintptr_t)c, n);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
