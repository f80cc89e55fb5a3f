/*@kopt
{"mode": "host"}
*/
// kopt-native candidate for KernelBench level 1 problem 9 (tall-skinny matmul), imported
// as 1_9_Tall_skinny_matrix_multiplication_: out (R x C) = A (R x K) @ B (K x C) with K
// small (32): the 4.3 GB output is the cost, not the 69 GFLOP. 128 x 128 output tiles,
// 256 threads, each an 8 x 8 block of outputs in registers (rows ty + 16 i, columns
// 4 tx + 64 h + q, so that a warp's float4 stores cover whole 256-byte row segments);
// the tile's A (transposed) and B chunks of 32 along K in shared memory. Edges guarded:
// any R, C, K.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

#define BM 128
#define BN 128
#define BK 32

__global__ void __launch_bounds__(256) skinny(const float *__restrict__ A,
                                              const float *__restrict__ B,
                                              float *__restrict__ C, int R, int K, int N)
{
    __shared__ __align__(16) float As[BK][BM + 4];   /* As[k][r] = A[r0 + r][k0 + k] */
    __shared__ __align__(16) float Bs[BK][BN + 4];   /* Bs[k][c] = B[k0 + k][c0 + c] */
    int t = threadIdx.x, tx = t & 15, ty = t >> 4;
    int r0 = blockIdx.y * BM, c0 = blockIdx.x * BN;
    float acc[8][8];

    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            acc[i][j] = 0.f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = t; e < BM * BK; e += 256) {     /* A: 32 consecutive k per row */
            int r = e / BK, k = e % BK;
            As[k][r] = r0 + r < R && k0 + k < K ? A[(long long)(r0 + r) * K + k0 + k] : 0.f;
        }
        for (int e = t; e < BK * BN; e += 256) {     /* B: 128 consecutive columns per k */
            int k = e / BN, c = e % BN;
            Bs[k][c] = k0 + k < K && c0 + c < N ? B[(long long)(k0 + k) * N + c0 + c] : 0.f;
        }
        __syncthreads();
#pragma unroll 4
        for (int k = 0; k < BK; k++) {
            float a[8], b[8];
            for (int i = 0; i < 8; i++)
                a[i] = As[k][ty + 16 * i];
            float4 b0 = *(const float4 *)&Bs[k][4 * tx], b1 = *(const float4 *)&Bs[k][64 + 4 * tx];
            b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w;
            b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < 8; i++) {
        int r = r0 + ty + 16 * i;
        if (r >= R)
            continue;
        for (int h = 0; h < 2; h++) {
            int c = c0 + 64 * h + 4 * tx;
            float *dst = C + (long long)r * N + c;
            if (c + 3 < N && (N & 3) == 0) {
                __stcs((float4 *)dst, make_float4(acc[i][4 * h], acc[i][4 * h + 1],
                                                  acc[i][4 * h + 2], acc[i][4 * h + 3]));
            } else {
                for (int q = 0; q < 4; q++)
                    if (c + q < N)
                        dst[q] = acc[i][4 * h + q];
            }
        }
    }
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const kopt_candidate_tensor *A = &io->tensors[0], *B = &io->tensors[1];
    float *C = (float *)kopt_tensor(io, "out");
    int R = (int)A->shape[0], K = (int)A->shape[1], N = (int)B->shape[1];
    dim3 grid((N + BN - 1) / BN, (R + BM - 1) / BM);

    if (!C || A->ndim != 2 || B->ndim != 2 || B->shape[0] != K || grid.y > 65535)
        return 1;
    skinny<<<grid, 256, 0, (cudaStream_t)io->stream>>>((const float *)A->data,
                                                      (const float *)B->data, C, R, K, N);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
