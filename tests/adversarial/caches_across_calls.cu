/*@kopt {"launches": [{"kernel": "add_once", "grid": ["cdiv(N,256)"], "block": [256],
                      "args": ["a", "b", "c", "N"]}]} */
// problem: examples/vector_add
// expect: STATEFUL
// Computes on the first call only and does nothing afterwards, as if its result were cached
// (by pointer or size: both stay the same across kopt's trials, the inputs do not).
__device__ int calls;
extern "C" __global__ void add_once(const float *a, const float *b, float *c, long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int first = *(volatile int *)&calls == 0;
    if (first && i < N)
        c[i] = a[i] + b[i];
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
        atomicAdd(&calls, 1);
}
