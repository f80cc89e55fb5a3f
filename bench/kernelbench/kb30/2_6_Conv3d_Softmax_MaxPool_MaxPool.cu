/*@kopt
{"mode": "host"}
*/
// kopt-native candidate for KernelBench level 2 problem 6, imported as
// 2_6_Conv3d_Softmax_MaxPool_MaxPool: Conv3d (no padding, stride 1), softmax over the
// channels, then MaxPool3d(p) twice (p = pool_kernel_size, floor mode). Two floor-mode
// pools of p are one max over a (p*p)^3 window of conv positions, so one fused kernel:
// a block per output position (batch, d, h, w), a thread per conv position of its window
// (64 for p = 2); each thread computes every channel's convolution there (the weights and
// biases in shared memory), their softmax, and the block takes each channel's maximum.
// Nothing but the output is written: no conv or softmax tensor in between.
#include <cuda_runtime.h>

#include "kopt/candidate.h"

#define MAX_WARPS 32

/* CO, the channel count, is a template argument: the per-channel sums stay in registers */
template <int CO>
__global__ void conv_softmax_pool(const float *__restrict__ x, const float *__restrict__ w,
                                  const float *__restrict__ cb, float *__restrict__ out,
                                  int Ci, int D, int H, int W, int K, int win, int Pd,
                                  int Ph, int Pw)
{
    const int Co = CO;
    extern __shared__ float sm[];                  /* weights [Co][Ci][K][K][K], bias [Co] */
    __shared__ float part[MAX_WARPS][CO];
    int nw = Co * Ci * K * K * K;
    int pos = blockIdx.x;                          /* (b, pd, ph, pw) */
    int pw = pos % Pw, ph = (pos / Pw) % Ph, pd = (pos / (Pw * Ph)) % Pd;
    int b = pos / (Pw * Ph * Pd);
    float best[CO];

    for (int i = threadIdx.x; i < nw; i += blockDim.x)
        sm[i] = w[i];
    for (int i = threadIdx.x; i < Co; i += blockDim.x)
        sm[nw + i] = cb[i];
    __syncthreads();
    #pragma unroll
    for (int c = 0; c < Co; c++)
        best[c] = -INFINITY;
    for (int p = threadIdx.x; p < win * win * win; p += blockDim.x) {
        int od = pd * win + p / (win * win), oh = ph * win + (p / win) % win;
        int ow = pw * win + p % win;
        float v[CO];
        #pragma unroll
        for (int c = 0; c < Co; c++)
            v[c] = sm[nw + c];
        for (int ci = 0; ci < Ci; ci++)
            for (int kd = 0; kd < K; kd++)
                for (int kh = 0; kh < K; kh++) {
                    const float *xr = x + ((((long long)b * Ci + ci) * D + od + kd) * H + oh + kh) * W + ow;
                    const float *wr = sm + ((ci * K + kd) * K + kh) * K;
                    for (int kw = 0; kw < K; kw++) {
                        float xv = __ldg(xr + kw);
                        #pragma unroll
                        for (int c = 0; c < Co; c++)
                            v[c] = fmaf(xv, wr[c * Ci * K * K * K + kw], v[c]);
                    }
                }
        float m = -INFINITY, s = 0.f;
        #pragma unroll
        for (int c = 0; c < Co; c++)
            m = fmaxf(m, v[c]);
        #pragma unroll
        for (int c = 0; c < Co; c++) {
            v[c] = expf(v[c] - m);
            s += v[c];
        }
        #pragma unroll
        for (int c = 0; c < Co; c++)
            best[c] = fmaxf(best[c], v[c] / s);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    #pragma unroll
    for (int c = 0; c < Co; c++) {
        float v = best[c];
        for (int o = 16; o > 0; o >>= 1)
            v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (lane == 0)
            part[warp][c] = v;
    }
    __syncthreads();
    if (threadIdx.x < Co) {
        int c = threadIdx.x;
        float v = part[0][c];
        for (int i = 1; i < nwarps; i++)
            v = fmaxf(v, part[i][c]);
        out[((((long long)b * Co + c) * Pd + pd) * Ph + ph) * Pw + pw] = v;
    }
}

extern "C" int kopt_candidate_run(const kopt_candidate_io *io)
{
    const kopt_candidate_tensor *X = &io->tensors[0], *Wt = NULL, *O = NULL;
    const float *cb = (const float *)kopt_tensor(io, "p_conv_bias");
    long long pk = kopt_size(io, "pool_kernel_size");
    int B, Ci, D, H, W, Co, K, win, Pd, Ph, Pw, threads, nw;
    size_t smem;

    for (int i = 0; i < io->ntensors; i++) {
        if (strcmp(io->tensors[i].name, "p_conv_weight") == 0)
            Wt = &io->tensors[i];
        if (strcmp(io->tensors[i].name, "out") == 0)
            O = &io->tensors[i];
    }
    if (!Wt || !O || !cb || X->ndim != 5 || Wt->ndim != 5 || O->ndim != 5)
        return 1;
    B = (int)X->shape[0];
    Ci = (int)X->shape[1];
    D = (int)X->shape[2];
    H = (int)X->shape[3];
    W = (int)X->shape[4];
    Co = (int)Wt->shape[0];
    K = (int)Wt->shape[2];
    win = (int)(pk > 0 ? pk : 2) * (int)(pk > 0 ? pk : 2);
    Pd = (int)O->shape[2];
    Ph = (int)O->shape[3];
    Pw = (int)O->shape[4];
    /* the window of every output must lie inside the convolution's output */
    if (Wt->shape[1] != Ci || Wt->shape[3] != K || Wt->shape[4] != K ||
        O->shape[1] != Co || Pd * win > D - K + 1 || Ph * win > H - K + 1 ||
        Pw * win > W - K + 1 || (long long)B * Pd * Ph * Pw > 0x7fffffffLL)
        return 2;
    threads = win * win * win < 1024 ? win * win * win : 1024;
    threads = (threads + 31) / 32 * 32;
    nw = Co * Ci * K * K * K;
    smem = (size_t)(nw + Co) * sizeof(float);
    if (smem > 48 * 1024)
        return 3;
    if (B * Pd * Ph * Pw == 0)
        return 0;
#define LAUNCH(n)                                                                              \
    conv_softmax_pool<n><<<B * Pd * Ph * Pw, threads, smem, (cudaStream_t)io->stream>>>(       \
        (const float *)X->data, (const float *)Wt->data, cb, (float *)O->data, Ci, D, H, W, K, \
        win, Pd, Ph, Pw)
    switch (Co) {
    case 8: LAUNCH(8); break;
    case 16: LAUNCH(16); break;
    case 32: LAUNCH(32); break;
    default: return 5;         /* a channel count this candidate was not built for */
    }
#undef LAUNCH
    return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
