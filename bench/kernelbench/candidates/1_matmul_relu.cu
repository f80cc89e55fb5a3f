/*@kopt
{"mode": "host"}
*/
// kopt-native candidate for 1_matmul_relu: C = relu(A @ B), a 32x32 shared-memory tiled
// matrix multiply (each thread computes a 2x2 block of outputs) with the ReLU fused into
// the store. Shapes come from the tensors kopt passes.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

#define TILE 32

__global__ void matmul_relu(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE + 1], Bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;          /* 16 x 16 threads, 2 x 2 outputs each */
    int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    float acc[2][2] = {{0.f, 0.f}, {0.f, 0.f}};

    for (int k0 = 0; k0 < K; k0 += TILE) {
        for (int i = ty; i < TILE; i += 16)
            for (int j = tx; j < TILE; j += 16) {
                int r = row0 + i, c = k0 + j;
                As[i][j] = r < M && c < K ? A[(long long)r * K + c] : 0.f;
                r = k0 + i;
                c = col0 + j;
                Bs[i][j] = r < K && c < N ? B[(long long)r * N + c] : 0.f;
            }
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++)
                    acc[a][b] += As[ty + 16 * a][k] * Bs[k][tx + 16 * b];
        __syncthreads();
    }
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            int r = row0 + ty + 16 * a, c = col0 + tx + 16 * b;
            if (r < M && c < N)
                C[(long long)r * N + c] = fmaxf(acc[a][b], 0.f);
        }
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const kopt_candidate_tensor *A = &io->tensors[0], *B = &io->tensors[1];
    int M = (int)A->shape[0], K = (int)A->shape[1], N = (int)B->shape[1];
    dim3 block(16, 16), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);

    matmul_relu<<<grid, block, 0, (cudaStream_t)io->stream>>>(
        (const float *)A->data, (const float *)B->data, (float *)kopt_tensor(io, "out"), M, N, K);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
