/*@kopt {"launches": [{"kernel": "add", "grid": ["cdiv(N,256)"], "block": [256],
                      "args": ["a", "b", "c", "N"]}]} */
// problem: tests/adversarial/inflated_work
// expect: SUSPECT
// A correct kernel for a problem whose work counts claim far more bytes than it moves: the
// measured time is below the physical bound, which kopt must flag instead of reporting.
extern "C" __global__ void add(const float *a, const float *b, float *c, long long N)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = a[i] + b[i];
}
