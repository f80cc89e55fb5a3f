// layernorm reference: one block of 256 threads per row, exact two-pass statistics.
// Naive: three scalar passes over the row in global memory (mean, variance of
// deviations, write), each reduction a plain shared-memory tree.

#define REF_THREADS 256

__device__ float block_tree_sum(float v, float *s)
{
    const int t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    for (int h = REF_THREADS / 2; h > 0; h >>= 1) {
        if (t < h)
            s[t] += s[t + h];
        __syncthreads();
    }
    v = s[0];
    __syncthreads();  // s may be reused right after
    return v;
}

extern "C" __global__ void layernorm_ref(const float *x, const float *gamma, const float *beta,
                                         float *y, int B, int N, float eps)
{
    __shared__ float s[REF_THREADS];
    const int row = blockIdx.x;
    if (row >= B)
        return;
    const float *xr = x + (long long)row * N;
    float *yr = y + (long long)row * N;
    const int t = threadIdx.x;

    float acc = 0.f;
    for (int i = t; i < N; i += REF_THREADS)
        acc += xr[i];
    const float mean = block_tree_sum(acc, s) / N;

    acc = 0.f;
    for (int i = t; i < N; i += REF_THREADS) {
        const float d = xr[i] - mean;
        acc += d * d;
    }
    const float var = block_tree_sum(acc, s) / N;
    const float rstd = 1.f / sqrtf(var + eps);

    for (int i = t; i < N; i += REF_THREADS)
        yr[i] = (xr[i] - mean) * rstd * gamma[i] + beta[i];
}
