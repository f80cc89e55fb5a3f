/*@kopt {"launches": [{"kernel": "add_racy", "grid": ["cdiv(N,256)"], "block": [256],
                       "args": ["a", "b", "c", "N"]}]} */
// problem: examples/vector_add
// options: --sanitize=racecheck
// expect: SANITIZER
// Right answers, but each thread stores its input in shared memory and reads another
// warp's slot with no barrier in between: a read-after-write hazard across warps that
// output checks cannot see (the value read only matters if it equals 1234.5) and that
// compute-sanitizer's racecheck reports.
extern "C" __global__ void add_racy(const float *a, const float *b, float *c, long long n)
{
    __shared__ float slot[256];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? a[i] + b[i] : 0.f;
    slot[threadIdx.x] = v;
    if (slot[(threadIdx.x + 32) % 256] == 1234.5f)   /* another warp's slot, unsynchronized */
        v += 1.0f;
    if (i < n)
        c[i] = v;
}
