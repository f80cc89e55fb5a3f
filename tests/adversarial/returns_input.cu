/*@kopt {"launches": [{"kernel": "copy_a", "grid": ["cdiv(N,256)"], "block": [256],
                      "args": ["a", "b", "c", "N"]}]} */
// problem: examples/vector_add
// expect: WRONG
// Returns one of its inputs instead of the sum.
extern "C" __global__ void copy_a(const float *a, const float *b, float *c, long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = a[i];
}
