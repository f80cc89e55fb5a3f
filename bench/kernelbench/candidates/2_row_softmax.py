# KernelBench-native candidate for 2_row_softmax: ModelNew with an inline CUDA kernel
# (torch.utils.cpp_extension.load_inline), as KernelBench's own harness takes it.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void softmax_rows(const float *x, float *y, int cols)
{
    __shared__ float red[32];
    const float *in = x + (long long)blockIdx.x * cols;
    float *out = y + (long long)blockIdx.x * cols;
    float m = -INFINITY, s = 0.f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, in[i]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = red[0];
    for (int i = 1; i < (int)(blockDim.x >> 5); i++) m = fmaxf(m, red[i]);
    __syncthreads();
    for (int i = threadIdx.x; i < cols; i += blockDim.x) s += __expf(in[i] - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
    __syncthreads();
    s = 0.f;
    for (int i = 0; i < (int)(blockDim.x >> 5); i++) s += red[i];
    float inv = 1.f / s;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) out[i] = __expf(in[i] - m) * inv;
}

torch::Tensor softmax_rows_cuda(torch::Tensor x)
{
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    softmax_rows<<<xc.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), (int)xc.size(1));
    return y;
}
"""

cpp_src = "torch::Tensor softmax_rows_cuda(torch::Tensor x);"

softmax_ext = load_inline(name="kopt_kb_softmax_rows", cpp_sources=cpp_src,
                          cuda_sources=cuda_src, functions=["softmax_rows_cuda"],
                          verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return softmax_ext.softmax_rows_cuda(x)
