/*@kopt
{
  "launches": [{"kernel": "vector_add_crash", "grid": ["cdiv(N,256)"], "block": [256],
                "args": ["a", "b", "c", "N"]}]
}
*/
// problem: vector_add
// PLANTED BUG (illegal address): every thread stores 4 TiB past its element, far outside
// any allocation, so the launch must fail with an illegal-address error (sticky context
// error); kopt must report it and not crash or hang.
extern "C" __global__ void vector_add_crash(const float *a, const float *b, float *c, long long N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i + (1LL << 40)] = a[i] + b[i];  // BUG: out-of-bounds store
}
