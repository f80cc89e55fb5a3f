// softmax reference: one block of 256 threads per row.
// Naive: three scalar passes over the row in global memory (max, sum of exp, write),
// each followed by a plain shared-memory tree reduction; accurate expf and division.

#define REF_THREADS 256

extern "C" __global__ void softmax_ref(const float *x, float *y, int B, int N)
{
    __shared__ float s[REF_THREADS];
    const int row = blockIdx.x;
    if (row >= B)
        return;
    const float *xr = x + (long long)row * N;
    float *yr = y + (long long)row * N;
    const int t = threadIdx.x;

    // 1) row max
    float m = __int_as_float(0xff800000);  // -inf
    for (int i = t; i < N; i += REF_THREADS)
        m = fmaxf(m, xr[i]);
    s[t] = m;
    __syncthreads();
    for (int h = REF_THREADS / 2; h > 0; h >>= 1) {
        if (t < h)
            s[t] = fmaxf(s[t], s[t + h]);
        __syncthreads();
    }
    m = s[0];
    __syncthreads();  // everyone has read s[0] before s is reused

    // 2) sum of exp(x - max)
    float sum = 0.f;
    for (int i = t; i < N; i += REF_THREADS)
        sum += expf(xr[i] - m);
    s[t] = sum;
    __syncthreads();
    for (int h = REF_THREADS / 2; h > 0; h >>= 1) {
        if (t < h)
            s[t] += s[t + h];
        __syncthreads();
    }
    sum = s[0];

    // 3) normalize
    for (int i = t; i < N; i += REF_THREADS)
        yr[i] = expf(xr[i] - m) / sum;
}
