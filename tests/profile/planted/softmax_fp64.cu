/*@kopt
{
  "launches": [{"kernel": "softmax_fp64", "grid": ["B"], "block": [256],
                "args": ["x", "y", "B", "N"]}]
}
*/
// problem: examples/softmax
// plants: fp64_in_fp32
//
// Planted defect: an fp32 problem computed in double: the row max, the exponentials and the
// sum are all fp64 (DADD/DMUL/DFMA and the double exp), which runs at a fraction of the fp32
// rate. More accurate than needed, and correct. One block per row, shuffle + shared reductions.

#define THREADS 256

__device__ double block_reduce(double v, bool is_max, double *red)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o >>= 1) {
        const double w = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmax(v, w) : v + w;
    }
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < THREADS / 32 ? red[lane] : (is_max ? red[0] : 0.0);
        for (int o = 16; o > 0; o >>= 1) {
            const double w = __shfl_xor_sync(0xffffffffu, v, o);
            v = is_max ? fmax(v, w) : v + w;
        }
        if (lane == 0)
            red[THREADS / 32] = v;
    }
    __syncthreads();
    v = red[THREADS / 32];
    __syncthreads();   // red is reused by the next reduction
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_fp64(const float *__restrict__ x, float *__restrict__ y, int B, int N)
{
    __shared__ double red[THREADS / 32 + 1];
    const float *xr = x + (long long)blockIdx.x * N;
    float *yr = y + (long long)blockIdx.x * N;
    double m = (double)xr[0];
    for (int j = threadIdx.x; j < N; j += THREADS)
        m = fmax(m, (double)xr[j]);
    m = block_reduce(m, true, red);
    double s = 0.0;
    for (int j = threadIdx.x; j < N; j += THREADS)
        s += exp((double)xr[j] - m);
    s = block_reduce(s, false, red);
    const double inv = 1.0 / s;
    for (int j = threadIdx.x; j < N; j += THREADS)
        yr[j] = (float)(exp((double)xr[j] - m) * inv);
}
