// reduce_sum reference: y = sum(x[0..N)), deterministic two-launch plan.
// Naive: scalar strided loads, double-precision accumulation, a plain shared-memory
// tree per block (1024 fixed blocks -> partial[]), then one block sums the partials.
// Double accumulation makes it accurate for any input, not just the integer test data.

#define REF_THREADS 256

extern "C" __global__ void reduce_sum_partial(const float *x, double *partial, long long N)
{
    __shared__ double s[REF_THREADS];
    const long long stride = (long long)gridDim.x * blockDim.x;
    double acc = 0.0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < N; i += stride)
        acc += (double)x[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int h = REF_THREADS / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h)
            s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s[0];
}

extern "C" __global__ void reduce_sum_final(const double *partial, float *y, int P)
{
    __shared__ double s[REF_THREADS];
    double acc = 0.0;
    for (int i = threadIdx.x; i < P; i += blockDim.x)
        acc += partial[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int h = REF_THREADS / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h)
            s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        y[0] = (float)s[0];
}
