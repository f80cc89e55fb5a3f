/*@kopt
{
  "launches": [{"kernel": "vector_add_half", "grid": ["max(1, cdiv(N/2,256))"], "block": [256],
                "args": ["a", "b", "c", "N"]}]
}
*/
// problem: vector_add
// PLANTED BUG (half output): only the first N/2 elements of c are computed; the second half
// keeps the NaN fill.  Must fail at every size.
extern "C" __global__ void vector_add_half(const float *a, const float *b, float *c, long long N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N / 2)  // BUG: covers half of the vector
        c[i] = a[i] + b[i];
}
