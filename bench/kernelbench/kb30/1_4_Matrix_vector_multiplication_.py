# KernelBench-native candidate (ModelNew, inline CUDA through load_inline) for level 1
# problem 4, imported as 1_4_Matrix_vector_multiplication_: out (M x 1) = A (M x K) @ B
# (K x 1), one 512-thread block per row, float4 loads, four partial sums a thread, warp
# shuffles and one shared-memory step.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define THREADS 512

__device__ float block_sum(float v)
{
    __shared__ float part[THREADS / 32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0.f;
    if (threadIdx.x < 32) {
        v = threadIdx.x < THREADS / 32 ? part[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

__global__ void __launch_bounds__(THREADS) matvec4(const float4 *a, const float4 *b, float *out,
                                                   long long k4)
{
    const float4 *row = a + (long long)blockIdx.x * k4;
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    for (long long j = threadIdx.x; j < k4; j += THREADS) {
        float4 x = row[j], y = b[j];
        s0 = fmaf(x.x, y.x, s0); s1 = fmaf(x.y, y.y, s1);
        s2 = fmaf(x.z, y.z, s2); s3 = fmaf(x.w, y.w, s3);
    }
    float s = block_sum((s0 + s1) + (s2 + s3));
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

__global__ void __launch_bounds__(THREADS) matvec1(const float *a, const float *b, float *out,
                                                   long long k)
{
    const float *row = a + (long long)blockIdx.x * k;
    float s = 0.f;
    for (long long j = threadIdx.x; j < k; j += THREADS) s = fmaf(row[j], b[j], s);
    s = block_sum(s);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

torch::Tensor matvec(torch::Tensor a, torch::Tensor b)
{
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.dim() == 2 && b.numel() == a.size(1),
                "matvec: A (M, K), B (K, 1) on the GPU");
    auto ac = a.contiguous().to(torch::kFloat32);
    auto bc = b.contiguous().to(torch::kFloat32);
    long long m = ac.size(0), k = ac.size(1);
    auto out = torch::empty({m, 1}, ac.options());
    auto stream = at::cuda::getCurrentCUDAStream();
    if (k % 4 == 0)
        matvec4<<<(unsigned)m, THREADS, 0, stream>>>((const float4 *)ac.data_ptr<float>(),
            (const float4 *)bc.data_ptr<float>(), out.data_ptr<float>(), k / 4);
    else
        matvec1<<<(unsigned)m, THREADS, 0, stream>>>(ac.data_ptr<float>(), bc.data_ptr<float>(),
                                                    out.data_ptr<float>(), k);
    return out;
}
"""

cpp_src = "torch::Tensor matvec(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="kopt_kb30_matvec", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["matvec"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.matvec(A, B)
