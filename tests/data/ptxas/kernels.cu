// Source of the recorded ptxas reports in this folder (see README.md).
extern "C" __global__ void plain_copy(const float *a, float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}

extern "C" __global__ void smem_reduce(const float *a, float *out, int n)
{
    __shared__ float buf[1024];
    int t = threadIdx.x;
    buf[t] = t < n ? a[t] : 0.f;
    __syncthreads();
    for (int s = 512; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) *out = buf[0];
}

// 128 live floats per thread under a 64-register cap: spills
template <int N>
__global__ void __launch_bounds__(1024, 1) spiller(const float *a, float *b, int k)
{
    float v[N];
#pragma unroll
    for (int i = 0; i < N; i++) v[i] = a[threadIdx.x * N + i];
    for (int j = 0; j < k; j++) {
        float t = v[(j * 7) % N];
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = v[i] * t + v[(i + j) % N];
    }
    float s = 0;
#pragma unroll
    for (int i = 0; i < N; i++) s += v[i];
    b[threadIdx.x] = s;
}

// a non-inlined device function: ptxas reports its own "Function properties" block
__device__ __noinline__ float helper(float *p, int n)
{
    float loc[64];
    for (int i = 0; i < 64; i++) loc[i] = p[i * n];
    float s = 0;
    for (int i = 0; i < n; i++) s += loc[(i * 13) & 63];
    return s;
}

extern "C" __global__ void uses_helper(float *p, int n)
{
    p[threadIdx.x] = helper(p, n);
}
