/*@kopt
{
  "launches": [{"kernel": "sgemm_spills", "grid": ["cdiv(N,128)", "cdiv(M,128)"], "block": [256],
                "args": ["A", "B", "C", "M", "N", "K"]}],
  "options": ["--maxrregcount=32"]
}
*/
// problem: examples/sgemm
// plants: register_spills
//
// Planted defect: a 128x128 block tile where each thread accumulates an 8x8 register block
// (64 accumulators plus 16 operands), compiled with --maxrregcount=32, so ptxas spills most
// of the block to local memory (STL/LDL in the inner loop). The arithmetic is plain FFMA in
// k order, which is right for sgemm (fp32, no tensor cores asked). No __launch_bounds__:
// ptxas would let it override --maxrregcount.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8

extern "C" __global__ void sgemm_spills(const float *__restrict__ A, const float *__restrict__ B,
                                        float *__restrict__ C, int M, int N, int K)
{
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tr = tid / 16, tc = tid % 16;   // 16 x 16 threads, 8 x 8 outputs each
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[TM][TN];

#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += 256) {
            const int r = e / BK, kk = e % BK;
            const int gm = m0 + r, gk = k0 + kk;
            As[kk][r] = (gm < M && gk < K) ? A[(long long)gm * K + gk] : 0.f;
        }
        for (int e = tid; e < BK * BN; e += 256) {
            const int kk = e / BN, col = e % BN;
            const int gk = k0 + kk, gn = n0 + col;
            Bs[kk][col] = (gk < K && gn < N) ? B[(long long)gk * N + gn] : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float av[TM], bv[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                av[i] = As[kk][tr * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                bv[j] = Bs[kk][tc * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += av[i] * bv[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int m = m0 + tr * TM + i, n = n0 + tc * TN + j;
            if (m < M && n < N)
                C[(long long)m * N + n] = acc[i][j];
        }
}
