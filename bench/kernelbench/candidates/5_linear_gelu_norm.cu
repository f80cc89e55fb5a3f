/*@kopt
{"mode": "host",
 "scratch": [{"name": "h", "dtype": "f32", "shape": ["tokens", "out_features"]}]}
*/
// kopt-native candidate for 5_linear_gelu_norm (level-2 style, with parameters): a tiled
// x @ W^T + b with the exact (erf) GELU fused into its store, into scratch; then one block
// per row applies LayerNorm with the module's weight and bias (eps 1e-5).
#include <cuda_runtime.h>

#include "kopt/candidate.h"

#define TILE 32

__global__ void linear_gelu(const float *X, const float *W, const float *bias, float *H, int T,
                            int O, int I)
{
    __shared__ float Xs[TILE][TILE + 1], Ws[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    float acc[2][2] = {{0.f, 0.f}, {0.f, 0.f}};

    for (int k0 = 0; k0 < I; k0 += TILE) {
        for (int i = ty; i < TILE; i += 16)
            for (int j = tx; j < TILE; j += 16) {
                int r = row0 + i, c = k0 + j;
                Xs[i][j] = r < T && c < I ? X[(long long)r * I + c] : 0.f;
                r = col0 + i;                   /* W is O x I: row = output feature */
                Ws[i][j] = r < O && c < I ? W[(long long)r * I + c] : 0.f;
            }
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++)
                    acc[a][b] += Xs[ty + 16 * a][k] * Ws[tx + 16 * b][k];
        __syncthreads();
    }
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            int r = row0 + ty + 16 * a, c = col0 + tx + 16 * b;
            if (r < T && c < O) {
                float v = acc[a][b] + bias[c];
                H[(long long)r * O + c] = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
            }
        }
}

__device__ float block_sum(float v, float *s)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0)
        s[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0.f;
    for (int i = 0; i < (int)(blockDim.x >> 5); i++)
        v += s[i];
    __syncthreads();
    return v;
}

__global__ void layer_norm(const float *H, const float *g, const float *b, float *Y, int O)
{
    __shared__ float s[32];
    const float *h = H + (long long)blockIdx.x * O;
    float *y = Y + (long long)blockIdx.x * O;
    float a = 0.f, q = 0.f;

    for (int i = threadIdx.x; i < O; i += blockDim.x)
        a += h[i];
    float mean = block_sum(a, s) / O;
    for (int i = threadIdx.x; i < O; i += blockDim.x)
        q += (h[i] - mean) * (h[i] - mean);
    float rstd = rsqrtf(block_sum(q, s) / O + 1e-5f);
    for (int i = threadIdx.x; i < O; i += blockDim.x)
        y[i] = (h[i] - mean) * rstd * g[i] + b[i];
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const kopt_candidate_tensor *x = &io->tensors[0], *w = &io->tensors[1];
    int T = (int)x->shape[0], I = (int)x->shape[1], O = (int)w->shape[0];
    cudaStream_t st = (cudaStream_t)io->stream;
    float *h = (float *)kopt_tensor(io, "h");
    dim3 block(16, 16), grid((O + TILE - 1) / TILE, (T + TILE - 1) / TILE);

    linear_gelu<<<grid, block, 0, st>>>((const float *)x->data, (const float *)w->data,
                                        (const float *)kopt_tensor(io, "p_fc_bias"), h, T, O, I);
    layer_norm<<<T, 256, 0, st>>>(h, (const float *)kopt_tensor(io, "p_norm_weight"),
                                  (const float *)kopt_tensor(io, "p_norm_bias"),
                                  (float *)kopt_tensor(io, "out"), O);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
