/*@kopt
{
  "launches": [{"kernel": "vector_add_oom", "grid": ["cdiv(N,256)"], "block": [256],
                "args": ["a", "b", "c", "huge", "N"]}],
  "scratch": [{"name": "huge", "dtype": "f32", "shape": [274877906944]}]
}
*/
// problem: vector_add
// Asks for a 1 TiB scratch buffer, more than any GPU has: kopt must answer OOM.
extern "C" __global__ void vector_add_oom(const float *a, const float *b, float *c, float *huge,
                                          long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = a[i] + b[i] + 0.f * huge[0];
}
