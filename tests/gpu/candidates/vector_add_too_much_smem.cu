/*@kopt
{
  "launches": [{"kernel": "vector_add_smem", "grid": ["cdiv(N,256)"], "block": [256],
                "smem": 300000, "args": ["a", "b", "c", "N"]}]
}
*/
// problem: vector_add
// Asks for 300000 bytes of dynamic shared memory per block, more than Hopper's 227 KiB:
// the launch cannot happen, and kopt must say so (LAUNCH_ERROR), not time nothing.
extern "C" __global__ void vector_add_smem(const float *a, const float *b, float *c, long long N)
{
    extern __shared__ float buf[];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < N ? a[i] : 0.f;
    __syncthreads();
    if (i < N)
        c[i] = buf[threadIdx.x] + b[i];
}
