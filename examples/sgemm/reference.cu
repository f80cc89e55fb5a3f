// sgemm reference: C[m,n] = sum_k A[m,k] * B[k,n], one thread per output element.
// Naive: no shared-memory tiling or register blocking; every thread streams a full row
// of A and a full column of B from L1/L2 (2 loads per FMA), accumulating in fp32 in k order.

extern "C" __global__ void sgemm_ref(const float *A, const float *B, float *C, int M, int N, int K)
{
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    const float *a = A + (long long)m * K;
    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += a[k] * B[(long long)k * N + n];
    C[(long long)m * N + n] = acc;
}
