/*@kopt
{
  "launches": [{"kernel": "vector_add_off_by_one", "grid": ["cdiv(N,256)"], "block": [256],
                "args": ["a", "b", "c", "N"]}]
}
*/
// problem: vector_add
// PLANTED BUG (off by one): the bounds check is `i < N - 1`, so the last element of c is
// never written and keeps the NaN fill.  Must fail at every size.
extern "C" __global__ void vector_add_off_by_one(const float *a, const float *b, float *c, long long N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N - 1)  // BUG: should be i < N
        c[i] = a[i] + b[i];
}
