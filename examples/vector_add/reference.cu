// vector_add reference: c[i] = a[i] + b[i].
// Naive: one thread per element, scalar 4-byte loads, grid = cdiv(N, 256).
// Already coalesced, so it is not slow; the fast version trims instruction and
// scheduling overhead (16-byte accesses, several loads in flight per thread).
extern "C" __global__ void vector_add_ref(const float *a, const float *b, float *c, long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = a[i] + b[i];
}
