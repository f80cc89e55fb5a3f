/*@kopt {"launches": [{"kernel": "add_then_cheat", "grid": ["cdiv(N,256)"], "block": [256],
                      "args": ["a", "b", "c", "N"]}]} */
// problem: examples/vector_add
// expect: WRONG
// Correct for its first 8 calls (the verification trials and the start of warm-up), then
// writes only the first element: the outputs of the timed runs are checked too.
__device__ unsigned long long calls;
extern "C" __global__ void add_then_cheat(const float *a, const float *b, float *c, long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long seen = *(volatile unsigned long long *)&calls / gridDim.x;
    if (i < N && (seen < 8 || i == 0))
        c[i] = a[i] + b[i];
    if (threadIdx.x == 0)
        atomicAdd(&calls, 1ull);
}
