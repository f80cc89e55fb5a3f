/*@kopt
{
  "launches": [{"memset": "y", "value": 0},
               {"kernel": "reduce_sum_race", "grid": ["max(1, cdiv(N,1024))"], "block": [256],
                "args": ["x", "y", "N"]}]
}
*/
// problem: examples/reduce_sum
// expect: RACE
// PLANTED BUG (race): each block reduces 1024 elements correctly in shared memory, but then
// thread 0 adds the block sum into y with a plain, non-atomic read-modify-write.  Blocks that
// finish together overwrite each other's updates, so the total loses partial sums (the test
// data are integers, so any lost update is a visible error).  Should fail at both sizes
// (977 or 65536 blocks, finishing concurrently), though a race is never guaranteed.
extern "C" __global__ void reduce_sum_race(const float *x, float *y, long long N)
{
    __shared__ float s[256];
    const long long base = (long long)blockIdx.x * 1024;
    float acc = 0.f;
    for (int k = 0; k < 4; ++k) {
        const long long i = base + k * 256 + threadIdx.x;
        if (i < N)
            acc += x[i];
    }
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h)
            s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        y[0] += s[0];  // BUG: should be atomicAdd(y, s[0])
}
